//! The host-side share of a transfer, performed for real: the byte interleaving that spreads
//! every 64-bit word of a DPU over the 8 chips of its rank.
//!
//! A rank's 64-bit DDR bus word carries one byte lane per chip. The DPUs with the same index
//! in each of the 8 chips form an "entangled group": the SDK writes a group with bus words
//! whose lane `c` belongs to the group's DPU on chip `c`. So the host transposes, for every
//! word offset, the 8x8 byte matrix (8 DPUs x 8 bytes) into 8 bus words; a DPU absent from
//! the transfer contributes zero bytes, so even one DPU costs the full transposition (the
//! reason why serial transfers are slow). The real SDK does this on the CPU (with AVX2 /
//! AVX-512); OpenPIM does the same work, with SIMD kernels chosen at run time ([`Kernel`]),
//! chunk by chunk into a per-thread buffer that stays in the L1 cache, and measures it,
//! because that time is host time on the real system too (the calling thread's own work:
//! [`Stopwatch`]). (The emulated memories are written separately, by plain copies that are
//! emulator work and are not counted.)

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::Instant;

use crate::clock::cpu::thread_cpu_ns;
use crate::exec::XferItem;

/// Measures the work of the calling thread between [`Stopwatch::start`] and
/// [`Stopwatch::stop`]: the smaller of two measurements, each less the cost of the
/// measurement itself ([`Overhead`]):
///
/// - the thread's CPU time, so that other threads of the emulator (simulating DPUs, copying
///   into emulated memories) competing for the host's cores never inflate it: if the thread
///   is preempted, this is the smaller one;
/// - the wall time inside it, tighter: `CLOCK_THREAD_CPUTIME_ID` is not served by the vDSO,
///   each read is a system call (0.2-0.3 µs on the development machine, varying with what
///   the kernel does on entry and exit), while the monotonic clock is read in user space
///   (about 25 ns). Without it a tiny transfer (8 B: one 8x8 block, tens of ns of work) is
///   charged the emulator's own clock reads (it was: ~1.2-3 µs per call with the allocations
///   of the time).
///
/// The wall interval lies inside the CPU interval, and the thread's CPU time in an interval
/// never exceeds the interval: the minimum never takes off real work.
struct Stopwatch {
    cpu: u64,
    wall: Instant,
}

/// The cost of a measurement with no work in it, ns: the minimum over a few tries (the
/// minimum, so that no real work is ever taken off).
#[derive(Debug, Clone, Copy)]
struct Overhead {
    cpu: u64,
    wall: u64,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        let cpu = thread_cpu_ns();
        Stopwatch {
            cpu,
            wall: Instant::now(),
        }
    }

    /// The raw (wall, CPU) durations so far, ns.
    fn raw(&self) -> (u64, u64) {
        let wall = self.wall.elapsed().as_nanos() as u64;
        (wall, thread_cpu_ns().saturating_sub(self.cpu))
    }

    fn overhead() -> Overhead {
        static OVERHEAD: OnceLock<Overhead> = OnceLock::new();
        *OVERHEAD.get_or_init(|| {
            let mut o = Overhead {
                cpu: u64::MAX,
                wall: u64::MAX,
            };
            for _ in 0..64 {
                let (wall, cpu) = Stopwatch::start().raw();
                o.cpu = o.cpu.min(cpu);
                o.wall = o.wall.min(wall);
            }
            o
        })
    }

    /// The work's duration, ns (at least 1).
    fn stop(self) -> u64 {
        let (wall, cpu) = self.raw();
        let o = Stopwatch::overhead();
        wall.saturating_sub(o.wall)
            .min(cpu.saturating_sub(o.cpu))
            .max(1)
    }
}

/// The 8 bus words of one 64-bit word offset of an entangled group: bus word `j` carries
/// byte `j` of that word of the group's 8 DPUs (byte lane `c` from the DPU on chip `c`).
/// One cache line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Line(pub [u64; 8]);

/// 64-bit words per DPU transposed per chunk: the chunk's bus words (one [`Line`] per word,
/// 16 KiB) stay in the L1 cache, where the SDK's block would wait to be written out.
const CHUNK_WORDS: usize = 256;

/// The largest step of a tail kernel ([`Kernel::tail`]).
const MAX_TAIL_STEP: usize = 2;

/// What an absent DPU of a group contributes: zero bytes (read like a present DPU's buffer,
/// so the kernels always transpose full 8x8 matrices, as the SDK does).
#[repr(C, align(64))]
struct ZeroRow([u8; CHUNK_WORDS * 8]);
static ZEROS: ZeroRow = ZeroRow([0; CHUNK_WORDS * 8]);

/// The host CPU's vector units, detected at run time: what host-side kernels (this
/// transposition, the collectives' line kernels) may use. Each level includes the ones
/// before it; `Portable` is plain 64-bit code, the reference the others are tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum VectorUnit {
    Portable,
    /// x86-64 SSE2 (every x86-64 CPU).
    Sse2,
    /// x86-64 AVX2.
    Avx2,
    /// x86-64 AVX-512 F and BW.
    Avx512,
}

impl VectorUnit {
    /// The widest unit this CPU supports (runtime detection; cached by the standard library).
    pub fn best() -> VectorUnit {
        *VectorUnit::available()
            .last()
            .expect("Portable is always available")
    }

    /// Every unit this CPU supports, narrowest first.
    pub fn available() -> Vec<VectorUnit> {
        let mut v = vec![VectorUnit::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            v.push(VectorUnit::Sse2);
            if std::arch::is_x86_feature_detected!("avx2") {
                v.push(VectorUnit::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
            {
                v.push(VectorUnit::Avx512);
            }
        }
        v
    }
}

/// An implementation of the transposition. All produce the same bus words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Kernel {
    /// Plain 64-bit code: the 8x8 transposition by masked shifts ([`transpose8x8`]). (Every
    /// x86-64 CPU has SSE2: there it serves the tests and the benchmark.)
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    Portable,
    /// x86-64 SSE2 byte unpacking, two words per step (every x86-64 CPU has SSE2).
    Sse2,
    /// x86-64 AVX2 byte unpacking, four words per step.
    Avx2,
    /// x86-64 AVX-512 (BW) byte unpacking, eight words per step.
    Avx512,
}

impl Kernel {
    /// The fastest kernel this CPU supports ([`VectorUnit::best`]).
    pub(crate) fn best() -> Kernel {
        Kernel::of(VectorUnit::best())
    }

    /// Every kernel this CPU supports.
    pub(crate) fn available() -> Vec<Kernel> {
        VectorUnit::available()
            .into_iter()
            .map(Kernel::of)
            .collect()
    }

    fn of(unit: VectorUnit) -> Kernel {
        match unit {
            VectorUnit::Portable => Kernel::Portable,
            VectorUnit::Sse2 => Kernel::Sse2,
            VectorUnit::Avx2 => Kernel::Avx2,
            VectorUnit::Avx512 => Kernel::Avx512,
        }
    }

    /// Words per step: a kernel is called on a multiple of it.
    fn step(self) -> usize {
        match self {
            Kernel::Portable => 1,
            Kernel::Sse2 => 2,
            Kernel::Avx2 => 4,
            Kernel::Avx512 => 8,
        }
    }

    /// The kernel for the words after the last whole step: smaller steps, fewer bytes of
    /// padding. Its step divides this kernel's.
    fn tail(self) -> Kernel {
        match self {
            Kernel::Portable => Kernel::Portable,
            Kernel::Sse2 | Kernel::Avx2 | Kernel::Avx512 => Kernel::Sse2,
        }
    }

    /// Transposes `out.len()` words (a multiple of [`Kernel::step`]) of the 8 rows into
    /// `out`.
    ///
    /// # Safety
    /// Every row must be valid for reads of `8 * out.len()` bytes, and the CPU must support
    /// the kernel (it is one of [`Kernel::best`]'s candidates for this CPU).
    unsafe fn run(self, rows: &[*const u8; 8], out: &mut [Line]) {
        debug_assert_eq!(out.len() % self.step(), 0);
        match self {
            // SAFETY: the caller's contract.
            Kernel::Portable => unsafe { words_portable(rows, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's contract (SSE2 is part of x86-64).
            Kernel::Sse2 => unsafe { words_sse2(rows, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's contract, which includes AVX2 support.
            Kernel::Avx2 => unsafe { words_avx2(rows, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's contract, which includes AVX-512 BW support.
            Kernel::Avx512 => unsafe { words_avx512(rows, out) },
            #[cfg(not(target_arch = "x86_64"))]
            // SAFETY: the caller's contract.
            _ => unsafe { words_portable(rows, out) },
        }
    }
}

/// Transposes the 8x8 byte matrix held in `r` (row `i` = 8 bytes, little-endian): afterwards
/// byte `j` of row `i` is the former byte `i` of row `j`.
#[inline]
pub(crate) fn transpose8x8(r: &mut [u64; 8]) {
    // Swap the off-diagonal 4x4, then 2x2, then 1x1 blocks.
    for i in 0..4 {
        let t = ((r[i] >> 32) ^ r[i + 4]) & 0x0000_0000_FFFF_FFFF;
        r[i] ^= t << 32;
        r[i + 4] ^= t;
    }
    for i in [0, 1, 4, 5] {
        let t = ((r[i] >> 16) ^ r[i + 2]) & 0x0000_FFFF_0000_FFFF;
        r[i] ^= t << 16;
        r[i + 2] ^= t;
    }
    for i in [0, 2, 4, 6] {
        let t = ((r[i] >> 8) ^ r[i + 1]) & 0x00FF_00FF_00FF_00FF;
        r[i] ^= t << 8;
        r[i + 1] ^= t;
    }
}

/// [`Kernel::Portable`]: gathers word `k` of the 8 rows and transposes it.
///
/// # Safety
/// As [`Kernel::run`].
unsafe fn words_portable(rows: &[*const u8; 8], out: &mut [Line]) {
    for (k, line) in out.iter_mut().enumerate() {
        let mut m = [0u64; 8];
        for (row, src) in m.iter_mut().zip(rows) {
            // SAFETY: the row holds 8 * out.len() readable bytes (the caller's contract).
            *row = u64::from_le(unsafe { src.add(k * 8).cast::<u64>().read_unaligned() });
        }
        transpose8x8(&mut m);
        line.0 = m;
    }
}

/// The three unpacking rounds of the SIMD kernels, for one vector width (the unpack
/// intrinsics of that width as arguments): bytes of row pairs (0,1), (2,3), ...; then 16-bit
/// pairs (rows 0-3 and 4-7); then 32-bit pairs. Returns the 8 result vectors, the bus words
/// (0,1), (2,3), (4,5), (6,7) of the even words of each 128-bit lane, then of the odd ones.
#[cfg(target_arch = "x86_64")]
macro_rules! unpack_rounds {
    ($r:expr, $lo8:ident, $hi8:ident, $lo16:ident, $hi16:ident, $lo32:ident, $hi32:ident) => {{
        let r = $r;
        let (a0, a1) = ($lo8(r[0], r[1]), $hi8(r[0], r[1]));
        let (a2, a3) = ($lo8(r[2], r[3]), $hi8(r[2], r[3]));
        let (a4, a5) = ($lo8(r[4], r[5]), $hi8(r[4], r[5]));
        let (a6, a7) = ($lo8(r[6], r[7]), $hi8(r[6], r[7]));
        let (b0, b1) = ($lo16(a0, a2), $hi16(a0, a2));
        let (b2, b3) = ($lo16(a1, a3), $hi16(a1, a3));
        let (b4, b5) = ($lo16(a4, a6), $hi16(a4, a6));
        let (b6, b7) = ($lo16(a5, a7), $hi16(a5, a7));
        [
            $lo32(b0, b4),
            $hi32(b0, b4),
            $lo32(b1, b5),
            $hi32(b1, b5),
            $lo32(b2, b6),
            $hi32(b2, b6),
            $lo32(b3, b7),
            $hi32(b3, b7),
        ]
    }};
}

/// [`Kernel::Sse2`]: the 8x8 byte transposition as three rounds of unpacking (bytes of row
/// pairs, then 16-bit pairs, then 32-bit pairs), two words per step.
///
/// # Safety
/// As [`Kernel::run`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn words_sse2(rows: &[*const u8; 8], out: &mut [Line]) {
    use std::arch::x86_64::*;
    let dst = out.as_mut_ptr().cast::<__m128i>();
    for k in (0..out.len()).step_by(2) {
        // SAFETY: 16 bytes at word k of each row are readable (k + 2 <= out.len()).
        let r: [__m128i; 8] =
            std::array::from_fn(|c| unsafe { _mm_loadu_si128(rows[c].add(k * 8).cast()) });
        // Bus words (0,1), (2,3), (4,5), (6,7) of word k, then of word k + 1.
        let c = unpack_rounds!(
            r,
            _mm_unpacklo_epi8,
            _mm_unpackhi_epi8,
            _mm_unpacklo_epi16,
            _mm_unpackhi_epi16,
            _mm_unpacklo_epi32,
            _mm_unpackhi_epi32
        );
        for (i, v) in c.into_iter().enumerate() {
            // SAFETY: lines k and k + 1 of `out` are 8 vectors from dst + 4k.
            unsafe { _mm_storeu_si128(dst.add(k * 4 + i), v) };
        }
    }
}

/// [`Kernel::Avx2`]: [`words_sse2`]'s rounds on 256-bit vectors (the unpacking works within
/// each 128-bit half: words k, k + 1 in the low half, k + 2, k + 3 in the high one), four
/// words per step; the halves are regrouped into whole lines when stored.
///
/// # Safety
/// As [`Kernel::run`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn words_avx2(rows: &[*const u8; 8], out: &mut [Line]) {
    use std::arch::x86_64::*;
    let dst = out.as_mut_ptr().cast::<__m256i>();
    for k in (0..out.len()).step_by(4) {
        // SAFETY: 32 bytes at word k of each row are readable (k + 4 <= out.len()).
        let r: [__m256i; 8] =
            std::array::from_fn(|c| unsafe { _mm256_loadu_si256(rows[c].add(k * 8).cast()) });
        // Low halves: bus words of word k (c0-c3) and k + 1 (c4-c7); high halves: k + 2, k + 3.
        let [c0, c1, c2, c3, c4, c5, c6, c7] = unpack_rounds!(
            r,
            _mm256_unpacklo_epi8,
            _mm256_unpackhi_epi8,
            _mm256_unpacklo_epi16,
            _mm256_unpackhi_epi16,
            _mm256_unpacklo_epi32,
            _mm256_unpackhi_epi32
        );
        let v = [
            _mm256_permute2x128_si256::<0x20>(c0, c1),
            _mm256_permute2x128_si256::<0x20>(c2, c3),
            _mm256_permute2x128_si256::<0x20>(c4, c5),
            _mm256_permute2x128_si256::<0x20>(c6, c7),
            _mm256_permute2x128_si256::<0x31>(c0, c1),
            _mm256_permute2x128_si256::<0x31>(c2, c3),
            _mm256_permute2x128_si256::<0x31>(c4, c5),
            _mm256_permute2x128_si256::<0x31>(c6, c7),
        ];
        for (i, x) in v.into_iter().enumerate() {
            // SAFETY: lines k..k + 4 of `out` are 8 vectors from dst + 2k.
            unsafe { _mm256_storeu_si256(dst.add(k * 2 + i), x) };
        }
    }
}

/// [`Kernel::Avx512`]: [`words_sse2`]'s rounds on 512-bit vectors (within each 128-bit
/// quarter `q`: words k + 2q, k + 2q + 1), eight words per step; the quarters are regrouped
/// into whole lines (a 4x4 transposition of 128-bit blocks) when stored.
///
/// # Safety
/// As [`Kernel::run`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn words_avx512(rows: &[*const u8; 8], out: &mut [Line]) {
    use std::arch::x86_64::*;
    let dst = out.as_mut_ptr().cast::<__m512i>();
    for k in (0..out.len()).step_by(8) {
        // SAFETY: 64 bytes at word k of each row are readable (k + 8 <= out.len()).
        let r: [__m512i; 8] =
            std::array::from_fn(|c| unsafe { _mm512_loadu_si512(rows[c].add(k * 8).cast()) });
        // Quarter q: bus words of word k + 2q (c[0..4]) and k + 2q + 1 (c[4..8]).
        let c = unpack_rounds!(
            r,
            _mm512_unpacklo_epi8,
            _mm512_unpackhi_epi8,
            _mm512_unpacklo_epi16,
            _mm512_unpackhi_epi16,
            _mm512_unpacklo_epi32,
            _mm512_unpackhi_epi32
        );
        for (odd, c) in [(0, &c[..4]), (1, &c[4..])] {
            // Quarters 0, 1 of (c0, c1) and (c2, c3), then quarters 2, 3.
            let t0 = _mm512_shuffle_i64x2::<0x44>(c[0], c[1]);
            let t1 = _mm512_shuffle_i64x2::<0xee>(c[0], c[1]);
            let t2 = _mm512_shuffle_i64x2::<0x44>(c[2], c[3]);
            let t3 = _mm512_shuffle_i64x2::<0xee>(c[2], c[3]);
            let lines = [
                _mm512_shuffle_i64x2::<0x88>(t0, t2),
                _mm512_shuffle_i64x2::<0xdd>(t0, t2),
                _mm512_shuffle_i64x2::<0x88>(t1, t3),
                _mm512_shuffle_i64x2::<0xdd>(t1, t3),
            ];
            for (q, x) in lines.into_iter().enumerate() {
                // SAFETY: line k + 2q + odd of `out` (k + 8 <= out.len()).
                unsafe { _mm512_storeu_si512(dst.add(k + 2 * q + odd).cast(), x) };
            }
        }
    }
}

/// Transposes one entangled group: `rows[c]` is the buffer of the group's DPU on chip `c`
/// (`None`: no DPU, zero bytes), `len` bytes each. Hands `sink` each chunk's bus words with
/// the chunk's first word offset.
///
/// # Safety
/// Every row must be valid for reads of `len` bytes; `kernel` supported by the CPU;
/// `scratch` at least [`CHUNK_WORDS`] lines.
unsafe fn transpose_group(
    kernel: Kernel,
    rows: &[Option<*const u8>; 8],
    len: usize,
    scratch: &mut [Line],
    sink: &mut impl FnMut(usize, &[Line]),
) {
    let words = len.div_ceil(8);
    let mut w0 = 0;
    while w0 < words {
        let n = CHUNK_WORDS.min(words - w0);
        let base = w0 * 8;
        let avail = len - base;
        let bytes = avail.min(n * 8);
        // Whole steps of whole words with the kernel, then with its tail kernel, then the rest
        // (less than a tail step, the last word maybe partial) from a zero-padded copy.
        let mut done = 0;
        for k in [kernel, kernel.tail()] {
            let s = k.step();
            let m = (bytes - done * 8) / (8 * s) * s;
            if m == 0 {
                continue;
            }
            let mut ptrs = [ZEROS.0.as_ptr(); 8];
            for (p, row) in ptrs.iter_mut().zip(rows) {
                if let Some(r) = row {
                    // SAFETY: base + 8 * done < len: inside the row.
                    *p = unsafe { r.add(base + done * 8) };
                }
            }
            // SAFETY: present rows hold `bytes - 8 * done >= 8 * m` bytes from there; ZEROS
            // holds CHUNK_WORDS * 8 >= 8 * m; done + m <= n <= CHUNK_WORDS.
            unsafe { k.run(&ptrs, &mut scratch[done..done + m]) };
            done += m;
        }
        if done < n {
            let k = kernel.tail();
            let s = k.step();
            let tail = bytes - done * 8;
            let mut pad = [[0u8; 8 * MAX_TAIL_STEP]; 8];
            for (p, row) in pad.iter_mut().zip(rows) {
                if let Some(r) = row {
                    // SAFETY: the row's last `tail` bytes (tail < 8 * s <= 8 * MAX_TAIL_STEP).
                    let src = unsafe { std::slice::from_raw_parts(r.add(base + done * 8), tail) };
                    p[..tail].copy_from_slice(src);
                }
            }
            let ptrs: [*const u8; 8] = std::array::from_fn(|c| pad[c].as_ptr());
            // SAFETY: each padded row holds 8 * MAX_TAIL_STEP >= 8 * s bytes; done < n, both
            // done and CHUNK_WORDS multiples of s (every step is a multiple of its tail
            // kernel's), n <= CHUNK_WORDS: done + s <= CHUNK_WORDS.
            unsafe { k.run(&ptrs, &mut scratch[done..done + s]) };
        }
        sink(w0, &scratch[..n]);
        w0 += n;
    }
}

thread_local! {
    /// This thread's chunk buffer, kept from call to call.
    static SCRATCH: RefCell<Vec<Line>> = const { RefCell::new(Vec::new()) };
}

/// A chunk buffer with its pages already mapped (a fresh allocation would take its page
/// faults during the measured work).
fn new_scratch() -> Vec<Line> {
    let mut v = vec![Line([u64::MAX; 8]); CHUNK_WORDS];
    std::hint::black_box(&mut v);
    // SAFETY: reading the first and last bytes of a static.
    unsafe {
        std::ptr::read_volatile(ZEROS.0.as_ptr());
        std::ptr::read_volatile(ZEROS.0.as_ptr().add(ZEROS.0.len() - 1));
    }
    v
}

/// Runs `f` with this thread's chunk buffer (a fresh one when it is in use or gone).
fn with_scratch<T>(f: impl FnOnce(&mut [Line]) -> T) -> T {
    let mut f = Some(f);
    let r = SCRATCH.try_with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        if s.len() < CHUNK_WORDS {
            *s = new_scratch();
        }
        Some((f.take()?)(&mut s))
    });
    match (r, f) {
        (Ok(Some(v)), _) => v,
        (_, Some(f)) => f(&mut new_scratch()),
        (_, None) => unreachable!("the closure ran and returned"),
    }
}

/// Interleaves `len` bytes per item into bus words, for real; returns the nanoseconds it
/// took. `chips` is the number of chips of the rank (8 on UPMEM); DPU `d` sits on chip
/// `d / (dpus_per_chip)` at index `d % dpus_per_chip`. With `broadcast`, the one buffer is
/// interleaved once for a group (every DPU receives the same bus words).
///
/// Both directions do this work: to the DPUs the SDK transposes the buffers into bus words,
/// from the DPUs it transposes bus words back into the buffers; the transposition is its own
/// inverse and moves the same bytes, so the one is measured for both. Only the transposition
/// is measured (with the fastest kernel this CPU has, as the SDK uses AVX2/AVX-512): the
/// grouping of the items and the buffer are bookkeeping, and the clocks' own cost is taken
/// off ([`Stopwatch`]).
///
/// # Safety
/// Every item's buffer must be valid for reads of `len` bytes (the transfer's contract).
pub(crate) unsafe fn interleave(
    len: usize,
    items: &[XferItem],
    dpus_per_rank: u32,
    chips: u32,
    broadcast: bool,
) -> u64 {
    let mut sink = |_: usize, _: usize, block: &[Line]| {
        // What the SDK would now write to the rank's memory window.
        std::hint::black_box(block);
    };
    // SAFETY: the caller's contract; `best` is supported by this CPU.
    unsafe {
        interleave_with(
            Kernel::best(),
            len,
            items,
            dpus_per_rank,
            chips,
            broadcast,
            &mut sink,
        )
    }
}

/// How many times a transfer's interleaving is measured, at most, before a time above the
/// bus model is believed.
const TRIES: u32 = 3;

/// The host-side interleaving of a transfer, performed and measured as the time the clock
/// charges it when it exceeds the transfer's modeled bus time `bus_ns`: measured again (up to
/// [`TRIES`] times, the smallest kept) while it exceeds it. A measurement can only be
/// inflated — by an interrupt, a hypervisor taking the virtual CPU, the caches and TLB
/// refilled after another process ran on the core (4 KiB that take 0.2 us took 20-34 us a few
/// times per 16,000 transfers on the development machine, in process and on MPI workers
/// alike) — and one such outlier above the bus time would change the run's timing fields
/// (the transfer takes the longer of the two). A host really slower than the bus is slower
/// on every try; an outlier does not repeat. Below `bus_ns` the time does not count, so one
/// measurement is enough.
///
/// # Safety
/// As [`interleave`].
pub(crate) unsafe fn measured_for(
    bus_ns: u64,
    len: usize,
    items: &[XferItem],
    dpus_per_rank: u32,
    chips: u32,
    broadcast: bool,
) -> u64 {
    // SAFETY: the caller's contract, for every measurement.
    least_above(bus_ns, || unsafe {
        interleave(len, items, dpus_per_rank, chips, broadcast)
    })
}

/// `measure()` once, then again while the smallest so far exceeds `bound` ([`TRIES`] in all
/// at most): the smallest.
fn least_above(bound: u64, mut measure: impl FnMut() -> u64) -> u64 {
    let mut best = measure();
    for _ in 1..TRIES {
        if best <= bound {
            break;
        }
        best = best.min(measure());
    }
    best
}

/// [`interleave`] with a given kernel, handing each chunk of bus words to `sink` (the
/// group's index in its chip, the chunk's first word offset, its lines).
///
/// # Safety
/// As [`interleave`], and `kernel` must be supported by the CPU.
pub(crate) unsafe fn interleave_with(
    kernel: Kernel,
    len: usize,
    items: &[XferItem],
    dpus_per_rank: u32,
    chips: u32,
    broadcast: bool,
    sink: &mut impl FnMut(usize, usize, &[Line]),
) -> u64 {
    if len == 0 || items.is_empty() {
        return 0;
    }
    Stopwatch::overhead();
    let chips = chips.clamp(1, 8) as usize;
    let per_chip = (dpus_per_rank as usize).div_ceil(chips).max(1);
    // Group the items by entangled group (index in the chip), one slot per chip.
    let mut groups: Vec<Option<[Option<*const u8>; 8]>> = vec![None; per_chip];
    let take = if broadcast { 1 } else { items.len() };
    for item in &items[..take] {
        let src = item.buf.0.cast_const();
        let d = item.dpu as usize;
        let (chip, index) = ((d / per_chip).min(chips - 1), d % per_chip);
        let g = groups[index].get_or_insert([None; 8]);
        if broadcast {
            *g = [Some(src); 8];
        } else {
            g[chip] = Some(src);
        }
    }
    with_scratch(|scratch| {
        let watch = Stopwatch::start();
        for (g, rows) in groups.iter().enumerate() {
            if let Some(rows) = rows {
                // SAFETY: every row is an item's buffer, valid for `len` bytes (the caller's
                // contract); the scratch has CHUNK_WORDS lines.
                unsafe { transpose_group(kernel, rows, len, scratch, &mut |w0, b| sink(g, w0, b)) };
            }
        }
        watch.stop()
    })
}

/// Checks of the kernels against the definition, for the unit tests and the `xfer_kernels`
/// fuzz target ([`crate::exec::local::check_interleave_kernels`]).
pub(crate) mod check {
    use super::*;
    use crate::exec::HostPtr;
    use crate::xfer::Place;
    use openpim_machine::MramAddr;

    pub(crate) fn items_of(bufs: &mut [(u32, Vec<u8>)]) -> Vec<XferItem> {
        bufs.iter_mut()
            .map(|(d, b)| XferItem {
                dpu: *d,
                place: Place::Mram(MramAddr(0)),
                buf: HostPtr(b.as_mut_ptr()),
            })
            .collect()
    }

    /// Bus words by entangled group.
    pub(crate) type Groups = std::collections::BTreeMap<usize, Vec<Line>>;

    /// The bus words by definition, byte by byte: lane `c` of bus word `j` of word `w` of
    /// group `g` is byte `8w + j` of the DPU at index `g` of chip `c` (0 when absent or past
    /// the end); a broadcast fills every lane from its one buffer.
    pub(crate) fn reference(
        len: usize,
        bufs: &[(u32, Vec<u8>)],
        dpr: u32,
        chips: u32,
        bc: bool,
    ) -> Groups {
        let chips = chips.clamp(1, 8) as usize;
        let per_chip = (dpr as usize).div_ceil(chips).max(1);
        let mut out = Groups::new();
        for (d, buf) in bufs.iter().take(if bc { 1 } else { bufs.len() }) {
            let d = *d as usize;
            let (chip, g) = ((d / per_chip).min(chips - 1), d % per_chip);
            let lines = out
                .entry(g)
                .or_insert_with(|| vec![Line::default(); len.div_ceil(8)]);
            for (w, line) in lines.iter_mut().enumerate() {
                for (j, bus) in line.0.iter_mut().enumerate() {
                    let byte = u64::from(buf.get(w * 8 + j).copied().unwrap_or(0));
                    for c in 0..8 {
                        if bc || c == chip {
                            *bus = (*bus & !(0xff << (8 * c))) | (byte << (8 * c));
                        }
                    }
                }
            }
        }
        out
    }

    /// What [`interleave_with`] hands its sink, in order.
    pub(crate) fn collect(
        k: Kernel,
        len: usize,
        bufs: &mut [(u32, Vec<u8>)],
        dpr: u32,
        chips: u32,
        bc: bool,
    ) -> Groups {
        let items = items_of(bufs);
        let mut got = Groups::new();
        // SAFETY: every buffer holds `len` bytes; `k` is available on this CPU.
        let t = unsafe {
            interleave_with(k, len, &items, dpr, chips, bc, &mut |g, w0, b| {
                let v = got.entry(g).or_default();
                assert_eq!(v.len(), w0, "chunks in order");
                assert!(b.len() <= CHUNK_WORDS);
                v.extend_from_slice(b);
            })
        };
        assert!(t > 0);
        got
    }

    /// Every kernel this CPU has gives the bus words of the definition for these buffers
    /// (`Err` names the first one that does not).
    pub(crate) fn kernels_agree(
        len: usize,
        bufs: &mut [(u32, Vec<u8>)],
        dpr: u32,
        chips: u32,
        bc: bool,
    ) -> std::result::Result<(), String> {
        let want = reference(len, bufs, dpr, chips, bc);
        for k in Kernel::available() {
            if collect(k, len, bufs, dpr, chips, bc) != want {
                return Err(format!(
                    "{k:?} differs from the definition: {len} bytes, DPUs {:?} of {dpr}, {chips} chips, broadcast {bc}",
                    bufs.iter().map(|b| b.0).collect::<Vec<_>>()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::check::{collect, items_of, reference};
    use super::*;
    use crate::exec::HostPtr;
    use crate::xfer::Place;
    use openpim_machine::MramAddr;

    #[test]
    fn transpose_matches_the_definition() {
        let mut m = [0u64; 8];
        for (i, row) in m.iter_mut().enumerate() {
            let bytes: [u8; 8] = std::array::from_fn(|j| (i * 8 + j) as u8);
            *row = u64::from_le_bytes(bytes);
        }
        let orig = m;
        transpose8x8(&mut m);
        for (i, row) in m.iter().enumerate() {
            for (j, other) in orig.iter().enumerate() {
                assert_eq!(row.to_le_bytes()[j], other.to_le_bytes()[i]);
            }
        }
        transpose8x8(&mut m);
        assert_eq!(m, orig, "a transpose is its own inverse");
    }

    /// `len` bytes of made-up data for DPU `dpu` (distinct per DPU and offset).
    fn data(dpu: u32, len: usize) -> Vec<u8> {
        let mut x = u64::from(dpu).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn every_kernel_gives_the_bus_words_of_the_definition() {
        let c = CHUNK_WORDS * 8;
        let lens = [
            1,
            3,
            7,
            8,
            9,
            15,
            16,
            17,
            24,
            31,
            32,
            33,
            40,
            63,
            64,
            65,
            100,
            c - 1,
            c,
            c + 1,
            3 * c + 13,
        ];
        // (DPUs per rank, DPUs of the transfer, broadcast)
        let cases: Vec<(u32, Vec<u32>, bool)> = vec![
            (64, vec![0], false),
            (64, vec![37], false),
            (64, vec![63], false),
            (64, (0..64).collect(), false),
            (64, (0..64).step_by(3).collect(), false),
            (64, (0..64).step_by(8).collect(), false),
            (64, (0..64).rev().collect(), false),
            (64, (0..64).collect(), true),
            (64, vec![5, 9], true),
            (16, (0..16).collect(), false),
            (60, (0..60).collect(), false),
        ];
        let kernels = Kernel::available();
        assert!(kernels.contains(&Kernel::best()));
        for len in lens {
            for (dpr, dpus, bc) in &cases {
                let mut bufs: Vec<(u32, Vec<u8>)> =
                    dpus.iter().map(|&d| (d, data(d, len))).collect();
                if *bc {
                    // A broadcast's items all name the same buffer.
                    let one = bufs[0].1.clone();
                    bufs.iter_mut().for_each(|(_, b)| b.clone_from(&one));
                }
                let want = reference(len, &bufs, *dpr, 8, *bc);
                for &k in &kernels {
                    let got = collect(k, len, &mut bufs, *dpr, 8, *bc);
                    assert!(
                        got == want,
                        "{k:?}, {len} bytes, {} DPUs of {dpr}, broadcast {bc}",
                        dpus.len()
                    );
                }
            }
        }
    }

    #[test]
    fn a_tiny_transfer_is_charged_its_transposition_only() {
        // One DPU, 8 bytes: one 8x8 block, a few ns of work. Before, the scratch allocation
        // and zeroing and the clock reads made it about 2 us.
        let mut bufs = vec![(5, data(5, 8))];
        let items = items_of(&mut bufs);
        let mut t: Vec<u64> = (0..1001)
            // SAFETY: the buffer holds 8 bytes.
            .map(|_| unsafe { interleave(8, &items, 64, 8, false) })
            .collect();
        t.sort_unstable();
        assert!(t[0] >= 1);
        assert!(t[500] < 500, "median {} ns per 8-byte call", t[500]);
    }

    /// The implementation before the SIMD kernels (for the benchmark's "before" column).
    /// # Safety
    /// As [`interleave`].
    pub(super) unsafe fn old_interleave(
        len: usize,
        items: &[XferItem],
        dpus_per_rank: u32,
        chips: u32,
        broadcast: bool,
    ) -> u64 {
        if len == 0 || items.is_empty() {
            return 0;
        }
        let start = thread_cpu_ns();
        let chips = chips.clamp(1, 8) as usize;
        let per_chip = (dpus_per_rank as usize).div_ceil(chips).max(1);
        // Group the items by entangled group (index in the chip), one slot per chip.
        let mut groups: Vec<[Option<&[u8]>; 8]> = vec![[None; 8]; per_chip];
        let mut used = vec![false; per_chip];
        let take = if broadcast { 1 } else { items.len() };
        for item in &items[..take] {
            // SAFETY: the caller guarantees `len` readable bytes at every item's buffer.
            let src = unsafe { std::slice::from_raw_parts(item.buf.0.cast_const(), len) };
            let d = item.dpu as usize;
            let (chip, index) = ((d / per_chip).min(chips - 1), d % per_chip);
            if broadcast {
                groups[index] = [Some(src); 8];
            } else {
                groups[index][chip] = Some(src);
            }
            used[index] = true;
        }
        let words = len.div_ceil(8);
        let mut scratch = vec![0u64; OLD_CHUNK_WORDS * 8];
        let mut checksum = 0u64;
        for (g, rows) in groups.iter().enumerate() {
            if !used[g] {
                continue;
            }
            let present: Vec<(usize, &[u8])> = rows
                .iter()
                .enumerate()
                .filter_map(|(c, r)| r.map(|s| (c, s)))
                .collect();
            let mut w0 = 0;
            while w0 < words {
                let n = OLD_CHUNK_WORDS.min(words - w0);
                let block = &mut scratch[..n * 8];
                if present.len() < 8 {
                    block.fill(0);
                }
                // Gather: row c of the k-th 8x8 matrix is word w0 + k of the DPU on chip c.
                for (c, src) in &present {
                    let lo = w0 * 8;
                    let hi = ((w0 + n) * 8).min(len);
                    let bytes = &src[lo..hi];
                    let mut chunks = bytes.chunks_exact(8);
                    for (k, ch) in chunks.by_ref().enumerate() {
                        block[k * 8 + c] = u64::from_le_bytes(ch.try_into().expect("8 bytes"));
                    }
                    let rest = chunks.remainder();
                    if !rest.is_empty() {
                        let mut b = [0u8; 8];
                        b[..rest.len()].copy_from_slice(rest);
                        block[(bytes.len() / 8) * 8 + c] = u64::from_le_bytes(b);
                    }
                }
                // Transpose each matrix in place: bus word j carries byte j of every chip's word.
                for m in block.chunks_exact_mut(8) {
                    let m: &mut [u64; 8] = m.try_into().expect("8 words");
                    transpose8x8(m);
                }
                // What the SDK would now write to the rank's memory window.
                checksum ^= std::hint::black_box(&scratch[..n * 8])
                    .iter()
                    .fold(0u64, |a, x| a.wrapping_add(*x));
                w0 += n;
            }
        }
        std::hint::black_box(checksum);
        thread_cpu_ns().saturating_sub(start).max(1)
    }
    const OLD_CHUNK_WORDS: usize = 512;

    /// The interleaving benchmark (bench/interleave/run.sh): GB/s per rank, i.e. bytes of all
    /// the transfer's DPUs / the charged time (thread CPU time), median of 3, for the old
    /// implementation and each kernel; and the per-call charge of a tiny transfer.
    #[test]
    #[ignore]
    fn bench_table() {
        fn median(mut v: Vec<u64>) -> u64 {
            v.sort_unstable();
            v[v.len() / 2]
        }
        let max_len = 32 << 20;
        let mut bufs: Vec<(u32, Vec<u8>)> =
            (0..64).map(|d| (d, vec![d as u8 + 1; max_len])).collect();
        let items = items_of(&mut bufs);
        let kernels = Kernel::available();
        let gbps = |t: u64, bytes: usize| bytes as f64 / t.max(1) as f64;
        print!("{:<28} {:>8}", "transfer (one rank)", "before");
        for k in &kernels {
            print!(" {:>9}", format!("{k:?}").to_lowercase());
        }
        println!("   (GB/s per rank; in use: {:?})", Kernel::best());
        let mut sink = |_: usize, _: usize, b: &[Line]| {
            std::hint::black_box(b);
        };
        for (n, len, bc) in [
            (1, 1 << 20, false),
            (8, 1 << 20, false),
            (64, 1 << 20, false),
            (1, 32 << 20, false),
            (8, 32 << 20, false),
            (64, 32 << 20, false),
            (64, 1 << 20, true),
            (64, 32 << 20, true),
        ] {
            let label = format!(
                "{n:>2} DPU{} x {:>2} MiB{}",
                if n > 1 { "s" } else { " " },
                len >> 20,
                if bc { " broadcast" } else { "" }
            );
            let items: Vec<XferItem> = if bc {
                (0..n).map(|d| XferItem { dpu: d, ..items[0] }).collect()
            } else {
                items[..n as usize].to_vec()
            };
            let bytes = len * n as usize;
            // SAFETY: every buffer holds max_len >= len bytes.
            let old = median(
                (0..3)
                    .map(|_| unsafe { old_interleave(len, &items, 64, 8, bc) })
                    .collect(),
            );
            print!("{label:<28} {:>8.2}", gbps(old, bytes));
            for &k in &kernels {
                let t = median(
                    (0..3)
                        // SAFETY: as above; `k` is available.
                        .map(|_| unsafe { interleave_with(k, len, &items, 64, 8, bc, &mut sink) })
                        .collect(),
                );
                print!(" {:>9.2}", gbps(t, bytes));
            }
            println!();
        }
        let one = &items[..1];
        // SAFETY: the buffer holds 8 bytes.
        let old = median(
            (0..10001)
                .map(|_| unsafe { old_interleave(8, one, 64, 8, false) })
                .collect(),
        );
        // SAFETY: as above.
        let new = median(
            (0..10001)
                .map(|_| unsafe { interleave(8, one, 64, 8, false) })
                .collect(),
        );
        let o = Stopwatch::overhead();
        println!(
            "8 B to 1 DPU, charged per call (median): before {old} ns, now {new} ns (the clock \
             reads' own cost, subtracted: {} ns thread CPU clock, {} ns wall clock)",
            o.cpu, o.wall
        );
    }

    #[test]
    fn an_outlier_above_the_bus_time_is_measured_again() {
        let scripted = |times: &[u64], bound: u64| {
            let mut it = times.iter();
            let mut calls = 0;
            let got = least_above(bound, || {
                calls += 1;
                *it.next().expect("no more measurements than scripted")
            });
            (got, calls)
        };
        // Below the bus time: one measurement, whatever it is.
        assert_eq!(scripted(&[500], 1_000), (500, 1));
        // One outlier above it: measured again, the outlier gone.
        assert_eq!(scripted(&[90_000, 200], 72_000), (200, 2));
        // A host really slower than the bus: slower every time, the smallest counts.
        assert_eq!(scripted(&[9_000, 8_000, 8_500], 1_000), (8_000, 3));
    }

    #[test]
    fn interleave_reads_every_buffer_and_reports_time() {
        let mut bufs: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4099]).collect();
        let items: Vec<XferItem> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| XferItem {
                dpu: i as u32,
                place: Place::Mram(MramAddr(0)),
                buf: HostPtr(b.as_mut_ptr()),
            })
            .collect();
        // SAFETY: every buffer holds 4099 bytes.
        let t = unsafe { interleave(4099, &items, 64, 8, false) };
        assert!(t > 0);
        // SAFETY: as above.
        assert_eq!(unsafe { interleave(0, &items, 64, 8, false) }, 0);
        // SAFETY: as above.
        let b = unsafe { interleave(4099, &items, 64, 8, true) };
        assert!(b > 0);
    }
}
