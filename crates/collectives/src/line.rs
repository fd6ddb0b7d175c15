//! The host step of the optimized path, on the physical layout of a rank's memory window.
//!
//! A rank's 8 chips share the 64-bit DDR bus: one 64-byte line of the window holds one 64-bit
//! word of each DPU of an entangled group, byte-interleaved — lane `l` (a 64-bit word of the
//! line) holds byte `l` of every chip's word, chip `c` in its byte `c`. A [`Window`] is a
//! region of every DPU of the set in that layout: line `(e, w)` = word `w` of the region on
//! the 8 DPUs of entangled group `e`.
//!
//! The host step is a list of [`Op`]s, one per destination chunk of an entangled group,
//! executed a line at a time straight from the source window to the destination window:
//!
//! - in-register modulation (IM): a line is loaded, modulated and stored; nothing is staged in
//!   host memory. Off: the source is first copied to a host buffer in the DPUs' domain (the
//!   byte transpose), modulated there and copied back, as a host-memory program would;
//! - cross-domain modulation (CM): moving a word from chip `c` to chip `c + k` of the line is
//!   a rotation of every lane by `8k` bits, and int8 elements (one per byte) reduce lane-wise,
//!   without the transpose. Off, or for wider elements (which straddle chips), the line is
//!   transposed to the DPUs' domain, modulated, and transposed back;
//! - PIM-assisted reordering makes the plan uniform (every chip of a destination line takes
//!   the same source line with the same rotation: [`Body::Copy`], [`Body::Reduce`]); without
//!   it the host gathers each chip's word from its own source line ([`Body::Gather`]).

use crate::elem::{reduce_word, ElemType, ReduceOp};

/// Lines of 8 lanes, line `i` at `[8i, 8i + 8)`.
pub type Window = Vec<u64>;

/// One line: 8 lanes.
pub type Line = [u64; 8];

/// One destination chunk (`words` consecutive lines from each line of `dst` on: the same
/// result stored to several destinations, as a reduction replicated to a group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub dst: Vec<usize>,
    pub words: usize,
    pub body: Body,
}

/// Where a destination chunk's lines come from (source line indices of its first word).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Body {
    /// Every chip `c` takes chip `c - rot` of one source line.
    Copy { src: usize, rot: u8 },
    /// The same, reduced over several source lines: each term a source line and the set of
    /// rotations it is taken with (bit `k`: rotated by `k` chips).
    Reduce { terms: Vec<(usize, u8)> },
    /// Each chip its own sources: `(source line, source chip)`, reduced when several.
    Gather { chips: [Vec<(usize, u8)>; 8] },
}

/// Switches of the host step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulation {
    pub in_register: bool,
    pub cross_domain: bool,
    pub ty: ElemType,
    pub op: ReduceOp,
}

/// The 8x8 byte transpose: lanes <-> chips' words (its own inverse).
#[inline]
pub fn transpose(mut r: Line) -> Line {
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

/// Chip `c`'s word of a line.
#[inline]
fn extract(x: &Line, c: u8) -> u64 {
    let mut w = 0u64;
    for (l, lane) in x.iter().enumerate() {
        w |= ((lane >> (8 * c)) & 0xff) << (8 * l);
    }
    w
}

/// Moves chip `c`'s byte to chip `c + k` in every lane.
#[inline]
fn rotate(x: Line, k: u8) -> Line {
    x.map(|v| v.rotate_left(8 * u32::from(k)))
}

#[inline]
fn load(win: &[u64], line: usize) -> Line {
    win[8 * line..8 * line + 8].try_into().unwrap()
}

#[inline]
fn store(win: &mut [u64], line: usize, x: Line) {
    win[8 * line..8 * line + 8].copy_from_slice(&x);
}

/// Chips' words rotated: word of chip `c` to chip `c + k`.
#[inline]
fn rotate_words(w: Line, k: u8) -> Line {
    let mut out = [0u64; 8];
    for (c, v) in w.iter().enumerate() {
        out[(c + usize::from(k)) % 8] = *v;
    }
    out
}

/// Lane-wise int8 reduction of two lines in the interleaved domain (one element per byte).
#[inline]
fn reduce_bytes(acc: &mut Line, x: &Line, op: ReduceOp) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a = reduce_word(*a, *b, ElemType::I8, op);
    }
}

/// The reduction of a line's 8 rotations in the interleaved domain (every chip gets the
/// reduction of all 8 chips' bytes): 3 rotate-and-reduce steps.
#[inline]
fn all_rotations_bytes(mut x: Line, op: ReduceOp) -> Line {
    for k in [1, 2, 4] {
        let r = rotate(x, k);
        reduce_bytes(&mut x, &r, op);
    }
    x
}

/// The reduction of a line's chips' words, given to every chip (DPUs' domain).
#[inline]
fn all_rotations_words(w: Line, m: &Modulation) -> Line {
    let mut h = w[0];
    for v in &w[1..] {
        h = reduce_word(h, *v, m.ty, m.op);
    }
    [h; 8]
}

/// One term of a reduction: a line (interleaved domain) with its rotation set.
#[inline]
fn term_bytes(x: Line, rots: u8, op: ReduceOp, acc: &mut Option<Line>) {
    let mut add = |v: Line| match acc {
        Some(a) => reduce_bytes(a, &v, op),
        None => *acc = Some(v),
    };
    if rots == 0xff {
        add(all_rotations_bytes(x, op));
    } else {
        for k in 0..8 {
            if rots >> k & 1 == 1 {
                add(rotate(x, k));
            }
        }
    }
}

/// One term of a reduction in the DPUs' domain.
#[inline]
fn term_words(w: Line, rots: u8, m: &Modulation, acc: &mut Option<Line>) {
    let mut add = |v: Line| match acc {
        Some(a) => reduce_words(a, &v, m),
        None => *acc = Some(v),
    };
    if rots == 0xff {
        add(all_rotations_words(w, m));
    } else {
        for k in 0..8 {
            if rots >> k & 1 == 1 {
                add(rotate_words(w, k));
            }
        }
    }
}

#[inline]
fn reduce_words(acc: &mut Line, x: &Line, m: &Modulation) {
    for c in 0..8 {
        acc[c] = reduce_word(acc[c], x[c], m.ty, m.op);
    }
}

/// A sum of lines of 2-, 4- or 8-byte elements kept in the interleaved domain: every byte
/// lane of every chip is added into a 16-bit field with no carry between bytes (the lines
/// only need rotating, no transpose); each element's carries are resolved once, when the sum
/// is complete (or before a 16-bit field could overflow).
struct WideSum {
    ty: ElemType,
    /// Lane `l`: bytes 0, 2, 4, 6 (`even`) and 1, 3, 5, 7 (`odd`) as 16-bit fields.
    even: [u64; 8],
    odd: [u64; 8],
    /// Lines added since the fields were last folded into `words`.
    pending: u32,
    /// The resolved sum so far: each chip's word.
    words: Option<Line>,
}

impl WideSum {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;

    fn new(ty: ElemType) -> WideSum {
        WideSum {
            ty,
            even: [0; 8],
            odd: [0; 8],
            pending: 0,
            words: None,
        }
    }

    #[inline]
    fn add(&mut self, x: &Line) {
        // 257 lines of bytes <= 255 fill a 16-bit field exactly.
        if self.pending == 257 {
            self.fold();
        }
        for ((e, o), v) in self.even.iter_mut().zip(self.odd.iter_mut()).zip(x) {
            *e += v & Self::LOW_BYTES;
            *o += (v >> 8) & Self::LOW_BYTES;
        }
        self.pending += 1;
    }

    /// Adds the unresolved sum `part` (no folded words) rotated by every `k` of `rots`:
    /// chip `c`'s fields to chip `c + k`. The fields of even and odd chips trade places for an
    /// odd `k`; all 8 rotations give every chip the sum of a lane's 8 fields (3 steps).
    fn add_rotated(&mut self, part: &WideSum, rots: u8) {
        let lines = part.pending * rots.count_ones();
        if self.pending + lines > 257 {
            self.fold();
        }
        let fields = self.even.iter_mut().zip(self.odd.iter_mut());
        for (l, (e, o)) in fields.enumerate() {
            let (pe, po) = (part.even[l], part.odd[l]);
            if rots == 0xff {
                let mut t = pe + po;
                t += t.rotate_left(16);
                t += t.rotate_left(32);
                *e += t;
                *o += t;
                continue;
            }
            for k in 0..8u32 {
                if rots >> k & 1 == 1 {
                    if k % 2 == 0 {
                        *e += pe.rotate_left(8 * k);
                        *o += po.rotate_left(8 * k);
                    } else {
                        *e += po.rotate_left(8 * (k + 1));
                        *o += pe.rotate_left(8 * (k - 1));
                    }
                }
            }
        }
        self.pending += lines;
    }

    /// Resolves the carries element by element (each wrapped at its width).
    fn fold(&mut self) {
        let size = self.ty.bytes();
        let mask = if size == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * size)) - 1
        };
        let mut words = [0u64; 8];
        for (c, word) in words.iter_mut().enumerate() {
            let fields = if c % 2 == 0 { &self.even } else { &self.odd };
            let shift = 16 * (c / 2);
            for e in 0..8 / size {
                let mut v = 0u64;
                for b in 0..size {
                    let byte_sum = (fields[e * size + b] >> shift) & 0xffff;
                    v = v.wrapping_add(byte_sum << (8 * b));
                }
                *word |= (v & mask) << (8 * e * size);
            }
        }
        let ty = self.ty;
        self.words = Some(match self.words {
            None => words,
            Some(w) => std::array::from_fn(|c| reduce_word(w[c], words[c], ty, ReduceOp::Sum)),
        });
        self.even = [0; 8];
        self.odd = [0; 8];
        self.pending = 0;
    }

    /// The sum as a line.
    fn finish(mut self) -> Line {
        self.fold();
        transpose(self.words.unwrap_or_default())
    }
}

/// The runs of consecutive terms with the same rotations.
fn same_rotations(terms: &[(usize, u8)]) -> impl Iterator<Item = &[(usize, u8)]> {
    terms.chunk_by(|a, b| a.1 == b.1)
}

/// Runs the host step: `ops` from `src` into `dst`.
/// Runs the host step, `ops` from `src` into `dst`; returns the measured host work, ns.
///
/// With in-register modulation, the windows stand for the ranks' memory: every load and store
/// on them is a bus access, which the bus model charges (`engine::charge_host_step`). What is
/// measured is the work in registers: the lines an op needs are fetched into a small buffer
/// (the emulator's work, not timed), modulated (timed: thread CPU time), and stored (not
/// timed). Without it, the staging in host memory is real host work, and is measured whole.
pub fn run(ops: &[Op], src: &[u64], dst: &mut [u64], m: &Modulation) -> u64 {
    if !m.in_register {
        let start = cpu_now();
        // The host-memory program: the source to host memory in the DPUs' domain, modulated
        // there, back to the destination window.
        let staged: Vec<u64> = src
            .chunks_exact(8)
            .flat_map(|l| transpose(l.try_into().unwrap()))
            .collect();
        let mut out = vec![0u64; dst.len()];
        run_domain(ops, &staged, &mut out, m);
        for (d, o) in dst.chunks_exact_mut(8).zip(out.chunks_exact(8)) {
            d.copy_from_slice(&transpose(o.try_into().unwrap()));
        }
        return cpu_now().saturating_sub(start);
    }
    let mut work = 0;
    let mut local_src: Vec<u64> = Vec::new();
    let mut local_dst: Vec<u64> = Vec::new();
    for op in ops {
        let sources = op.body.sources();
        // Up to 4,096 lines (256 KiB) fetched at a time.
        let block = (4096 / sources.len().max(1)).clamp(8, 1024);
        let local = op
            .body
            .remap(|s| sources.iter().position(|x| *x == s).unwrap_or(0) * block);
        let mut w0 = 0;
        while w0 < op.words {
            let n = block.min(op.words - w0);
            local_src.clear();
            local_src.resize(8 * block * sources.len(), 0);
            for (i, s) in sources.iter().enumerate() {
                local_src[8 * i * block..8 * (i * block + n)]
                    .copy_from_slice(&src[8 * (s + w0)..8 * (s + w0 + n)]);
            }
            local_dst.clear();
            local_dst.resize(8 * n, 0);
            let start = cpu_now();
            modulate(&local, n, &local_src, &mut local_dst, m);
            work += cpu_now()
                .saturating_sub(start)
                .saturating_sub(clock_pair_ns());
            for d in &op.dst {
                dst[8 * (d + w0)..8 * (d + w0 + n)].copy_from_slice(&local_dst);
            }
            w0 += n;
        }
    }
    work
}

/// What a `cpu_now` pair reads with nothing between the two reads (the median of 1,001
/// pairs, measured once per process): each read is a system call, and a host step measured in
/// many short pieces (one per block of lines) must not count the clock's own cost as work
/// (65,536 pieces at about 0.5 us each were 26 ms of an all-to-all on 2,048 DPUs).
pub fn clock_pair_ns() -> u64 {
    static PAIR: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PAIR.get_or_init(|| {
        let mut d: Vec<u64> = (0..1001)
            .map(|_| {
                let a = cpu_now();
                cpu_now().saturating_sub(a)
            })
            .collect();
        d.sort_unstable();
        d[d.len() / 2]
    })
}

/// CPU time of the calling thread, ns: host work measured as the work itself (the real time
/// of a thread on a shared machine includes its waits for a core).
pub fn cpu_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Body {
    /// The distinct source lines (first word) the body reads, in order.
    fn sources(&self) -> Vec<usize> {
        let mut v: Vec<usize> = match self {
            Body::Copy { src, .. } => vec![*src],
            Body::Reduce { terms } => terms.iter().map(|t| t.0).collect(),
            Body::Gather { chips } => chips.iter().flatten().map(|t| t.0).collect(),
        };
        let mut seen = std::collections::HashSet::new();
        v.retain(|s| seen.insert(*s));
        v
    }

    /// The same body with its source lines renamed.
    fn remap(&self, f: impl Fn(usize) -> usize) -> Body {
        match self {
            Body::Copy { src, rot } => Body::Copy {
                src: f(*src),
                rot: *rot,
            },
            Body::Reduce { terms } => Body::Reduce {
                terms: terms.iter().map(|(s, r)| (f(*s), *r)).collect(),
            },
            Body::Gather { chips } => Body::Gather {
                chips: std::array::from_fn(|c| {
                    chips[c].iter().map(|(s, sc)| (f(*s), *sc)).collect()
                }),
            },
        }
    }
}

/// Modulates `words` lines of one destination: line `w` of `dst` from lines `s + w` of `src`.
fn modulate(body: &Body, words: usize, src: &[u64], dst: &mut [u64], m: &Modulation) {
    let interleaved_reduce = m.cross_domain && m.ty == ElemType::I8;
    // Wider sums in the interleaved domain: bytes added without carries, resolved once.
    let interleaved_wide_sum = m.cross_domain && m.ty != ElemType::I8 && m.op == ReduceOp::Sum;
    for w in 0..words {
        let out = match body {
            Body::Copy { src: s, rot } => {
                let x = load(src, s + w);
                if m.cross_domain {
                    rotate(x, *rot)
                } else {
                    transpose(rotate_words(transpose(x), *rot))
                }
            }
            Body::Reduce { terms } => {
                // Rotation distributes over the element-wise operator: the lines of a run
                // of terms with the same rotations are reduced first, then rotated once.
                let mut acc = None;
                if interleaved_reduce {
                    for run in same_rotations(terms) {
                        let mut part = load(src, run[0].0 + w);
                        for (s, _) in &run[1..] {
                            reduce_bytes(&mut part, &load(src, s + w), m.op);
                        }
                        term_bytes(part, run[0].1, m.op, &mut acc);
                    }
                    acc.unwrap_or_default()
                } else if interleaved_wide_sum {
                    let mut wide = WideSum::new(m.ty);
                    for run in same_rotations(terms) {
                        // At most 32 lines at once: 32 x 8 rotations fit the 16-bit fields.
                        for piece in run.chunks(32) {
                            let mut part = WideSum::new(m.ty);
                            for (s, _) in piece {
                                part.add(&load(src, s + w));
                            }
                            wide.add_rotated(&part, piece[0].1);
                        }
                    }
                    wide.finish()
                } else {
                    for run in same_rotations(terms) {
                        let mut part = transpose(load(src, run[0].0 + w));
                        for (s, _) in &run[1..] {
                            reduce_words(&mut part, &transpose(load(src, s + w)), m);
                        }
                        term_words(part, run[0].1, m, &mut acc);
                    }
                    transpose(acc.unwrap_or_default())
                }
            }
            Body::Gather { chips } => {
                let mut words = [0u64; 8];
                for (c, list) in chips.iter().enumerate() {
                    let mut acc = extract(&load(src, list[0].0 + w), list[0].1);
                    for (s, sc) in &list[1..] {
                        acc = reduce_word(acc, extract(&load(src, s + w), *sc), m.ty, m.op);
                    }
                    words[c] = acc;
                }
                transpose(words)
            }
        };
        store(dst, w, out);
    }
}

/// The plan on windows already in the DPUs' domain (host memory).
fn run_domain(ops: &[Op], src: &[u64], dst: &mut [u64], m: &Modulation) {
    for op in ops {
        for w in 0..op.words {
            let out = match &op.body {
                Body::Copy { src: s, rot } => rotate_words(load(src, s + w), *rot),
                Body::Reduce { terms } => {
                    let mut acc = None;
                    for (s, rots) in terms {
                        term_words(load(src, s + w), *rots, m, &mut acc);
                    }
                    acc.unwrap_or_default()
                }
                Body::Gather { chips } => {
                    let mut words = [0u64; 8];
                    for (c, list) in chips.iter().enumerate() {
                        let mut acc = load(src, list[0].0 + w)[usize::from(list[0].1)];
                        for (s, sc) in &list[1..] {
                            acc = reduce_word(acc, load(src, s + w)[usize::from(*sc)], m.ty, m.op);
                        }
                        words[c] = acc;
                    }
                    words
                }
            };
            for d in &op.dst {
                store(dst, d + w, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_moves_chips() {
        let words: Line = std::array::from_fn(|c| 0x0101_0101_0101_0101 * (c as u64 + 1));
        let lanes = transpose(words);
        assert_eq!(transpose(lanes), words);
        assert_eq!(extract(&lanes, 3), words[3]);
        let r = transpose(rotate(lanes, 3));
        assert_eq!(r[3], words[0]);
        assert_eq!(r, rotate_words(words, 3));
    }

    #[test]
    fn wide_sums_fold_before_overflow() {
        // 600 lines of 0xff bytes (more than a 16-bit field holds): as int16, int32, int64.
        let src: Window = vec![u64::MAX; 8];
        let ops = vec![Op {
            dst: vec![0],
            words: 1,
            body: Body::Reduce {
                terms: (0..75).map(|_| (0, 0xff)).collect(),
            },
        }];
        for ty in [ElemType::I16, ElemType::I32, ElemType::I64] {
            let mut got = Vec::new();
            for cm in [false, true] {
                let m = Modulation {
                    in_register: true,
                    cross_domain: cm,
                    ty,
                    op: ReduceOp::Sum,
                };
                let mut dst = vec![0u64; 8];
                run(&ops, &src, &mut dst, &m);
                got.push(dst);
            }
            assert_eq!(got[0], got[1], "{ty:?}");
            // Every element is -1 summed 600 times.
            let words = transpose(got[0][..8].try_into().unwrap());
            let want = match ty {
                ElemType::I16 => {
                    u64::from_le_bytes([(-600i16).to_le_bytes(); 4].concat().try_into().unwrap())
                }
                ElemType::I32 => {
                    u64::from_le_bytes([(-600i32).to_le_bytes(); 2].concat().try_into().unwrap())
                }
                _ => (-600i64) as u64,
            };
            assert!(words.iter().all(|w| *w == want), "{ty:?}: {words:x?}");
        }
    }

    #[test]
    fn every_switch_gives_the_same_bytes() {
        // Two source entangled groups of 2 words; a reduce over both with rotations, a copy,
        // and a gather, under every combination of switches.
        let src: Window = (0..32u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let ops = vec![
            Op {
                dst: vec![0],
                words: 2,
                body: Body::Reduce {
                    terms: vec![(0, 0b10), (2, 0b10), (2, 0b10_0001), (0, 0xff), (2, 0xff)],
                },
            },
            Op {
                dst: vec![2, 6],
                words: 2,
                body: Body::Copy { src: 2, rot: 7 },
            },
            Op {
                dst: vec![4],
                words: 2,
                body: Body::Gather {
                    chips: std::array::from_fn(|c| vec![((c % 2) * 2, c as u8), (0, 0)]),
                },
            },
        ];
        for (ty, op) in [
            (ElemType::I8, ReduceOp::Sum),
            (ElemType::I32, ReduceOp::Sum),
            (ElemType::I8, ReduceOp::Max),
            (ElemType::I16, ReduceOp::Max),
            (ElemType::I16, ReduceOp::Sum),
            (ElemType::I64, ReduceOp::Sum),
        ] {
            let mut results = Vec::new();
            for im in [false, true] {
                for cm in [false, true] {
                    let m = Modulation {
                        in_register: im,
                        cross_domain: cm,
                        ty,
                        op,
                    };
                    let mut dst = vec![0u64; 64];
                    run(&ops, &src, &mut dst, &m);
                    results.push(dst);
                }
            }
            assert!(results.windows(2).all(|w| w[0] == w[1]));
        }
    }
}
