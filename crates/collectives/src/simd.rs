//! The line kernels of the host step ([`line`](mod@crate::line)), one implementation per
//! vector unit of the host: the portable one (plain 64-bit code, the reference), SSE2 (a
//! 64-byte line in four 128-bit registers; every x86-64 CPU) and AVX2 (two 256-bit registers),
//! chosen at run time by the runtime's detection ([`openpim_runtime::VectorUnit`]). Every
//! kernel gives the same bytes as the portable one (tests below, on random lines); the host
//! step's code is written once, generic over `Kernels`, and compiled once per implementation.
//!
//! AVX-512 CPUs run the AVX2 kernels (a 512-bit version, one register per line as PID-Comm's,
//! is not written yet).

use crate::line::Line;

/// The operations on whole lines the host step is made of.
pub(crate) trait Kernels {
    /// Every lane rotated left by `8 * bytes` bits (chip `c`'s byte to chip `c + bytes`).
    fn rotate(x: Line, bytes: u32) -> Line;
    /// The 8x8 byte transpose (lanes <-> chips' words).
    fn transpose(x: Line) -> Line;
    /// Byte-wise wrapping sum.
    fn add_bytes(a: Line, b: Line) -> Line;
    /// Byte-wise signed maximum.
    fn max_bytes(a: Line, b: Line) -> Line;
    /// Lane-wise 64-bit wrapping sum.
    fn add_lanes(a: Line, b: Line) -> Line;
    /// `even += x & 0x00ff..00ff`, `odd += (x >> 8) & 0x00ff..00ff`, lane by lane (64-bit
    /// sums): a line's bytes added into 16-bit fields.
    fn add_fields(even: &mut Line, odd: &mut Line, x: &Line);
}

/// Which implementation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Portable,
    Sse2,
    Avx2,
}

impl Kernel {
    /// The fastest implementation this CPU supports.
    pub fn best() -> Kernel {
        *Kernel::available()
            .last()
            .expect("Portable is always there")
    }

    /// Every implementation this CPU supports (the portable one first).
    pub fn available() -> Vec<Kernel> {
        use openpim_runtime::VectorUnit;
        let mut v = vec![Kernel::Portable];
        let best = VectorUnit::best();
        if cfg!(target_arch = "x86_64") && best >= VectorUnit::Sse2 {
            v.push(Kernel::Sse2);
        }
        if cfg!(target_arch = "x86_64") && best >= VectorUnit::Avx2 {
            v.push(Kernel::Avx2);
        }
        v
    }
}

/// Plain 64-bit code.
pub(crate) struct Portable;

const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;

impl Kernels for Portable {
    #[inline(always)]
    fn rotate(x: Line, bytes: u32) -> Line {
        x.map(|v| v.rotate_left(8 * (bytes % 8)))
    }

    #[inline(always)]
    fn transpose(mut r: Line) -> Line {
        // Swaps of 4x4, 2x2 and 1x1 byte blocks (row i = lane i, column j = byte j).
        for i in 0..4 {
            let t = ((r[i] >> 32) ^ r[i + 4]) & 0x0000_0000_ffff_ffff;
            r[i] ^= t << 32;
            r[i + 4] ^= t;
        }
        for i in [0, 1, 4, 5] {
            let t = ((r[i] >> 16) ^ r[i + 2]) & 0x0000_ffff_0000_ffff;
            r[i] ^= t << 16;
            r[i + 2] ^= t;
        }
        for i in [0, 2, 4, 6] {
            let t = ((r[i] >> 8) ^ r[i + 1]) & 0x00ff_00ff_00ff_00ff;
            r[i] ^= t << 8;
            r[i + 1] ^= t;
        }
        r
    }

    #[inline(always)]
    fn add_bytes(a: Line, b: Line) -> Line {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        std::array::from_fn(|l| {
            ((a[l] & !HIGH).wrapping_add(b[l] & !HIGH)) ^ ((a[l] ^ b[l]) & HIGH)
        })
    }

    #[inline(always)]
    fn max_bytes(a: Line, b: Line) -> Line {
        std::array::from_fn(|l| {
            let (x, y) = (a[l].to_le_bytes(), b[l].to_le_bytes());
            u64::from_le_bytes(std::array::from_fn(|i| (x[i] as i8).max(y[i] as i8) as u8))
        })
    }

    #[inline(always)]
    fn add_lanes(a: Line, b: Line) -> Line {
        std::array::from_fn(|l| a[l].wrapping_add(b[l]))
    }

    #[inline(always)]
    fn add_fields(even: &mut Line, odd: &mut Line, x: &Line) {
        for ((e, o), v) in even.iter_mut().zip(odd.iter_mut()).zip(x) {
            *e = e.wrapping_add(v & LOW_BYTES);
            *o = o.wrapping_add((v >> 8) & LOW_BYTES);
        }
    }
}

/// SSE2: a line is four 128-bit registers (lanes 0-1, 2-3, 4-5, 6-7).
#[cfg(target_arch = "x86_64")]
pub(crate) struct Sse2;

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    use super::Line;

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(x: &Line) -> [__m128i; 4] {
        let p = x.as_ptr().cast::<__m128i>();
        // SAFETY: a line is 64 readable bytes; unaligned loads.
        std::array::from_fn(|i| unsafe { _mm_loadu_si128(p.add(i)) })
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn store(v: [__m128i; 4]) -> Line {
        let mut out = [0u64; 8];
        let p = out.as_mut_ptr().cast::<__m128i>();
        for (i, x) in v.into_iter().enumerate() {
            // SAFETY: a line is 64 writable bytes; unaligned stores.
            unsafe { _mm_storeu_si128(p.add(i), x) };
        }
        out
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn rotate(x: Line, bytes: u32) -> Line {
        // No byte shuffle in SSE2: each 64-bit lane shifted both ways (a shift by 64 gives 0).
        let b = (8 * (bytes % 8)) as i32;
        let (left, right) = (_mm_cvtsi32_si128(b), _mm_cvtsi32_si128(64 - b));
        store(load(&x).map(|v| _mm_or_si128(_mm_sll_epi64(v, left), _mm_srl_epi64(v, right))))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn transpose(x: Line) -> Line {
        let r = load(&x);
        // Bytes of each pair of rows interleaved: 16-bit pairs, byte position j at field j.
        let p = r.map(|v| _mm_unpacklo_epi8(v, _mm_srli_si128::<8>(v)));
        // 32-bit quads of rows 0-3 and 4-7, positions 0-3 then 4-7.
        let (a_lo, a_hi) = (
            _mm_unpacklo_epi16(p[0], p[1]),
            _mm_unpackhi_epi16(p[0], p[1]),
        );
        let (b_lo, b_hi) = (
            _mm_unpacklo_epi16(p[2], p[3]),
            _mm_unpackhi_epi16(p[2], p[3]),
        );
        store([
            _mm_unpacklo_epi32(a_lo, b_lo),
            _mm_unpackhi_epi32(a_lo, b_lo),
            _mm_unpacklo_epi32(a_hi, b_hi),
            _mm_unpackhi_epi32(a_hi, b_hi),
        ])
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn add_bytes(a: Line, b: Line) -> Line {
        let (a, b) = (load(&a), load(&b));
        store(std::array::from_fn(|i| _mm_add_epi8(a[i], b[i])))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn max_bytes(a: Line, b: Line) -> Line {
        // No signed byte maximum in SSE2: the unsigned one on bytes with the sign bit flipped.
        let flip = _mm_set1_epi8(i8::MIN);
        let (a, b) = (load(&a), load(&b));
        store(std::array::from_fn(|i| {
            let m = _mm_max_epu8(_mm_xor_si128(a[i], flip), _mm_xor_si128(b[i], flip));
            _mm_xor_si128(m, flip)
        }))
    }
}

#[cfg(target_arch = "x86_64")]
impl Kernels for Sse2 {
    #[inline(always)]
    fn rotate(x: Line, bytes: u32) -> Line {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { sse2::rotate(x, bytes) }
    }

    #[inline(always)]
    fn transpose(x: Line) -> Line {
        // SAFETY: as above.
        unsafe { sse2::transpose(x) }
    }

    #[inline(always)]
    fn add_bytes(a: Line, b: Line) -> Line {
        // SAFETY: as above.
        unsafe { sse2::add_bytes(a, b) }
    }

    #[inline(always)]
    fn max_bytes(a: Line, b: Line) -> Line {
        // SAFETY: as above.
        unsafe { sse2::max_bytes(a, b) }
    }

    #[inline(always)]
    fn add_lanes(a: Line, b: Line) -> Line {
        Portable::add_lanes(a, b)
    }

    #[inline(always)]
    fn add_fields(even: &mut Line, odd: &mut Line, x: &Line) {
        Portable::add_fields(even, odd, x)
    }
}

/// AVX2: a line is two 256-bit registers (lanes 0-3, 4-7).
#[cfg(target_arch = "x86_64")]
pub(crate) struct Avx2;

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::Line;

    /// The byte shuffles that rotate every 64-bit lane by `k` bytes (`k` = 0..8): byte `j` of
    /// a lane takes byte `(j - k) mod 8`.
    const ROTATIONS: [[u8; 32]; 8] = {
        let mut t = [[0u8; 32]; 8];
        let mut k = 0;
        while k < 8 {
            let mut i = 0;
            while i < 32 {
                let base = i - i % 8;
                t[k][i] = (base + (i % 8 + 8 - k) % 8) as u8;
                i += 1;
            }
            k += 1;
        }
        t
    };

    /// Within each 128-bit half (two lanes `a`, `b`): `a0 b0 a1 b1 ... a7 b7`.
    const PAIRS: [u8; 32] = [
        0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5,
        13, 6, 14, 7, 15,
    ];

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn load(x: &Line) -> (__m256i, __m256i) {
        let p = x.as_ptr().cast::<__m256i>();
        // SAFETY: a line is 64 readable bytes; unaligned loads.
        unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn store(lo: __m256i, hi: __m256i) -> Line {
        let mut out = [0u64; 8];
        let p = out.as_mut_ptr().cast::<__m256i>();
        // SAFETY: a line is 64 writable bytes; unaligned stores.
        unsafe {
            _mm256_storeu_si256(p, lo);
            _mm256_storeu_si256(p.add(1), hi);
        }
        out
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn rotate(x: Line, bytes: u32) -> Line {
        let (lo, hi) = load(&x);
        // SAFETY: 32 readable bytes.
        let m = unsafe { _mm256_loadu_si256(ROTATIONS[(bytes % 8) as usize].as_ptr().cast()) };
        store(_mm256_shuffle_epi8(lo, m), _mm256_shuffle_epi8(hi, m))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn transpose(x: Line) -> Line {
        let (lo, hi) = load(&x);
        // SAFETY: 32 readable bytes.
        let pairs = unsafe { _mm256_loadu_si256(PAIRS.as_ptr().cast()) };
        // 16-bit pairs of rows (0,1), (2,3) | (4,5), (6,7), byte position j at field j.
        let (p0123, p4567) = (
            _mm256_shuffle_epi8(lo, pairs),
            _mm256_shuffle_epi8(hi, pairs),
        );
        let p01_45 = _mm256_permute2x128_si256::<0x20>(p0123, p4567);
        let p23_67 = _mm256_permute2x128_si256::<0x31>(p0123, p4567);
        // 32-bit quads of rows 0-3 | 4-7: positions 0-3 (u), 4-7 (w).
        let u = _mm256_unpacklo_epi16(p01_45, p23_67);
        let w = _mm256_unpackhi_epi16(p01_45, p23_67);
        let q0123 = _mm256_permute2x128_si256::<0x20>(u, w);
        let q4567 = _mm256_permute2x128_si256::<0x31>(u, w);
        // Output rows (0,1 | 4,5) and (2,3 | 6,7).
        let r01_45 = _mm256_unpacklo_epi32(q0123, q4567);
        let r23_67 = _mm256_unpackhi_epi32(q0123, q4567);
        store(
            _mm256_permute2x128_si256::<0x20>(r01_45, r23_67),
            _mm256_permute2x128_si256::<0x31>(r01_45, r23_67),
        )
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn add_bytes(a: Line, b: Line) -> Line {
        let ((a0, a1), (b0, b1)) = (load(&a), load(&b));
        store(_mm256_add_epi8(a0, b0), _mm256_add_epi8(a1, b1))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn max_bytes(a: Line, b: Line) -> Line {
        let ((a0, a1), (b0, b1)) = (load(&a), load(&b));
        store(_mm256_max_epi8(a0, b0), _mm256_max_epi8(a1, b1))
    }
}

// The methods run only inside code compiled for AVX2 (`crate::line`'s dispatch checks the
// CPU first): they are inlined there, into one AVX2 function.
#[cfg(target_arch = "x86_64")]
impl Kernels for Avx2 {
    #[inline(always)]
    fn rotate(x: Line, bytes: u32) -> Line {
        // SAFETY: only called on CPUs with AVX2 (Kernel::available).
        unsafe { avx2::rotate(x, bytes) }
    }

    #[inline(always)]
    fn transpose(x: Line) -> Line {
        // SAFETY: as above.
        unsafe { avx2::transpose(x) }
    }

    #[inline(always)]
    fn add_bytes(a: Line, b: Line) -> Line {
        // SAFETY: as above.
        unsafe { avx2::add_bytes(a, b) }
    }

    #[inline(always)]
    fn max_bytes(a: Line, b: Line) -> Line {
        // SAFETY: as above.
        unsafe { avx2::max_bytes(a, b) }
    }

    // The 64-bit sums: the portable code, which the compiler vectorizes for AVX2 where it is
    // inlined (explicit intrinsics measured slower here: they kept the sums in memory).
    #[inline(always)]
    fn add_lanes(a: Line, b: Line) -> Line {
        Portable::add_lanes(a, b)
    }

    #[inline(always)]
    fn add_fields(even: &mut Line, odd: &mut Line, x: &Line) {
        Portable::add_fields(even, odd, x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines from a simple generator (xorshift), fixed seed.
    fn random_lines(n: usize) -> Vec<Line> {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|_| {
                std::array::from_fn(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s
                })
            })
            .collect()
    }

    /// Every kernel of `K` against the portable one, on random lines.
    fn same_bytes_as_portable<K: Kernels>(name: &str) {
        let lines = random_lines(1000);
        for pair in lines.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            for k in 0..9 {
                assert_eq!(K::rotate(a, k), Portable::rotate(a, k), "{name} rotate {k}");
            }
            assert_eq!(K::transpose(a), Portable::transpose(a), "{name} transpose");
            assert_eq!(K::add_bytes(a, b), Portable::add_bytes(a, b), "{name} add");
            assert_eq!(K::max_bytes(a, b), Portable::max_bytes(a, b), "{name} max");
            assert_eq!(
                K::add_lanes(a, b),
                Portable::add_lanes(a, b),
                "{name} lanes"
            );
            let (mut e1, mut o1, mut e2, mut o2) = (a, b, a, b);
            K::add_fields(&mut e1, &mut o1, &pair[1]);
            Portable::add_fields(&mut e2, &mut o2, &pair[1]);
            assert_eq!((e1, o1), (e2, o2), "{name} fields");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_kernels_give_the_portable_bytes() {
        same_bytes_as_portable::<Sse2>("sse2");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_kernels_give_the_portable_bytes() {
        if !Kernel::available().contains(&Kernel::Avx2) {
            eprintln!("no AVX2 on this CPU: nothing to compare");
            return;
        }
        same_bytes_as_portable::<Avx2>("avx2");
    }

    #[test]
    fn portable_kernels_do_what_they_say() {
        let a: Line =
            std::array::from_fn(|l| 0x0706_0504_0302_0100 + 0x0808_0808_0808_0808 * l as u64);
        // Byte j of lane l is 8l + j: the transpose swaps l and j.
        let t = Portable::transpose(a);
        for (l, lane) in t.iter().enumerate() {
            for j in 0..8 {
                assert_eq!((lane >> (8 * j)) & 0xff, (8 * j + l) as u64);
            }
        }
        assert_eq!(Portable::rotate(a, 1)[0], 0x0605_0403_0201_0007);
        let m = Portable::max_bytes([0x7f80_01ff; 8], [0x8001_ff00; 8]);
        assert_eq!(m[0], 0x7f01_0100);
        let s = Portable::add_bytes([0xff01; 8], [0x01ff; 8]);
        assert_eq!(s[0], 0x0000);
    }
}
