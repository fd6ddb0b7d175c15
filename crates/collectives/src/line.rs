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
//!
//! The step runs one piece per destination rank on worker threads, each piece's work measured
//! on its own thread and charged as the host would run the pieces on its cores ([`Work`]),
//! with the line kernels of the host's vector units ([`crate::simd`]).

use crate::elem::{reduce_word, ElemType, ReduceOp};
use crate::simd::{Kernel, Kernels, Portable};

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
pub fn transpose(r: Line) -> Line {
    Portable::transpose(r)
}

/// Between the window's lines and host memory, each line transposed (the kernels of
/// `kernel`, one of [`Kernel::available`]): `bytes` holds 64 bytes per line, the line's 8
/// chips' words in chip order, little-endian. `to_bytes`: from `lines` to `bytes` (a gather),
/// else back (a scatter).
pub fn transpose_lines(kernel: Kernel, lines: &mut [u64], bytes: &mut [u8], to_bytes: bool) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Kernel::available lists Avx2 only on CPUs with AVX2.
        Kernel::Avx2 => unsafe { transpose_lines_avx2(lines, bytes, to_bytes) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2 => transpose_lines_k::<crate::simd::Sse2>(lines, bytes, to_bytes),
        _ => transpose_lines_k::<Portable>(lines, bytes, to_bytes),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn transpose_lines_avx2(lines: &mut [u64], bytes: &mut [u8], to_bytes: bool) {
    transpose_lines_k::<crate::simd::Avx2>(lines, bytes, to_bytes)
}

#[inline(always)]
fn transpose_lines_k<K: Kernels>(lines: &mut [u64], bytes: &mut [u8], to_bytes: bool) {
    for (l, b) in lines.chunks_exact_mut(8).zip(bytes.chunks_exact_mut(64)) {
        if to_bytes {
            let t = K::transpose(l.try_into().unwrap());
            for (c, v) in t.iter().enumerate() {
                b[8 * c..8 * c + 8].copy_from_slice(&v.to_le_bytes());
            }
        } else {
            let w: Line = std::array::from_fn(|c| {
                u64::from_le_bytes(b[8 * c..8 * c + 8].try_into().unwrap())
            });
            l.copy_from_slice(&K::transpose(w));
        }
    }
}

/// Every line of `from` transposed into `to`, with the kernels of `kernel`.
pub fn transpose_all(kernel: Kernel, from: &[u64], to: &mut [u64]) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Kernel::available lists Avx2 only on CPUs with AVX2.
        Kernel::Avx2 => unsafe { transpose_all_avx2(from, to) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2 => transpose_all_k::<crate::simd::Sse2>(from, to),
        _ => transpose_all_k::<Portable>(from, to),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn transpose_all_avx2(from: &[u64], to: &mut [u64]) {
    transpose_all_k::<crate::simd::Avx2>(from, to)
}

#[inline(always)]
fn transpose_all_k<K: Kernels>(from: &[u64], to: &mut [u64]) {
    for (t, l) in to.chunks_exact_mut(8).zip(from.chunks_exact(8)) {
        t.copy_from_slice(&K::transpose(l.try_into().unwrap()));
    }
}

/// Chip `c`'s word of every line of `lines` into `out` (8 bytes a line, little-endian), with
/// the kernels of `kernel`.
pub fn chip_words(kernel: Kernel, lines: &[u64], c: usize, out: &mut [u8]) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Kernel::available lists Avx2 only on CPUs with AVX2.
        Kernel::Avx2 => unsafe { chip_words_avx2(lines, c, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2 => chip_words_k::<crate::simd::Sse2>(lines, c, out),
        _ => chip_words_k::<Portable>(lines, c, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn chip_words_avx2(lines: &[u64], c: usize, out: &mut [u8]) {
    chip_words_k::<crate::simd::Avx2>(lines, c, out)
}

#[inline(always)]
fn chip_words_k<K: Kernels>(lines: &[u64], c: usize, out: &mut [u8]) {
    for (l, o) in lines.chunks_exact(8).zip(out.chunks_exact_mut(8)) {
        o.copy_from_slice(&K::transpose(l.try_into().unwrap())[c].to_le_bytes());
    }
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
#[inline(always)]
fn rotate<K: Kernels>(x: Line, k: u8) -> Line {
    K::rotate(x, u32::from(k))
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
#[inline(always)]
fn reduce_bytes<K: Kernels>(acc: &mut Line, x: &Line, op: ReduceOp) {
    *acc = match op {
        ReduceOp::Sum => K::add_bytes(*acc, *x),
        ReduceOp::Max => K::max_bytes(*acc, *x),
    };
}

/// The reduction of a line's 8 rotations in the interleaved domain (every chip gets the
/// reduction of all 8 chips' bytes): 3 rotate-and-reduce steps.
#[inline(always)]
fn all_rotations_bytes<K: Kernels>(mut x: Line, op: ReduceOp) -> Line {
    for k in [1, 2, 4] {
        let r = rotate::<K>(x, k);
        reduce_bytes::<K>(&mut x, &r, op);
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
#[inline(always)]
fn term_bytes<K: Kernels>(x: Line, rots: u8, op: ReduceOp, acc: &mut Option<Line>) {
    let mut add = |v: Line| match acc {
        Some(a) => reduce_bytes::<K>(a, &v, op),
        None => *acc = Some(v),
    };
    if rots == 0xff {
        add(all_rotations_bytes::<K>(x, op));
    } else {
        for k in 0..8 {
            if rots >> k & 1 == 1 {
                add(rotate::<K>(x, k));
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
    fn new(ty: ElemType) -> WideSum {
        WideSum {
            ty,
            even: [0; 8],
            odd: [0; 8],
            pending: 0,
            words: None,
        }
    }

    #[inline(always)]
    fn add<K: Kernels>(&mut self, x: &Line) {
        // 257 lines of bytes <= 255 fill a 16-bit field exactly.
        if self.pending == 257 {
            self.fold();
        }
        K::add_fields(&mut self.even, &mut self.odd, x);
        self.pending += 1;
    }

    /// Adds the unresolved sum `part` (no folded words) rotated by every `k` of `rots`:
    /// chip `c`'s fields to chip `c + k`. The fields of even and odd chips trade places for an
    /// odd `k`; all 8 rotations give every chip the sum of a lane's 8 fields (3 steps).
    #[inline(always)]
    fn add_rotated<K: Kernels>(&mut self, part: &WideSum, rots: u8) {
        let lines = part.pending * rots.count_ones();
        if self.pending + lines > 257 {
            self.fold();
        }
        let (pe, po) = (part.even, part.odd);
        if rots == 0xff {
            let mut t = K::add_lanes(pe, po);
            t = K::add_lanes(t, K::rotate(t, 2));
            t = K::add_lanes(t, K::rotate(t, 4));
            self.even = K::add_lanes(self.even, t);
            self.odd = K::add_lanes(self.odd, t);
        } else {
            for k in 0..8u32 {
                if rots >> k & 1 == 1 {
                    let (e, o) = if k % 2 == 0 {
                        (K::rotate(pe, k), K::rotate(po, k))
                    } else {
                        (K::rotate(po, k + 1), K::rotate(pe, k - 1))
                    };
                    self.even = K::add_lanes(self.even, e);
                    self.odd = K::add_lanes(self.odd, o);
                }
            }
        }
        self.pending += lines;
    }

    /// Resolves the carries element by element (each wrapped at its width): a chip's byte
    /// sums at even byte positions are whole 16-bit fields of its word (`x`), those at odd
    /// positions too once shifted by a byte (`y`), less what the last byte of an element
    /// carries into the next one; the two add element-wise.
    #[inline(always)]
    fn fold(&mut self) {
        let size = self.ty.bytes();
        // The first byte of every element but the first: where `y`'s fields spill.
        let keep = (size..8)
            .step_by(size)
            .fold(u64::MAX, |k, p| k & !(0xff << (8 * p)));
        let mut words = [0u64; 8];
        for (c, word) in words.iter_mut().enumerate() {
            let fields = if c % 2 == 0 { &self.even } else { &self.odd };
            let shift = 16 * (c / 2);
            let field = |l: usize| (fields[l] >> shift) & 0xffff;
            let x = field(0) | field(2) << 16 | field(4) << 32 | field(6) << 48;
            let y = field(1) | field(3) << 16 | field(5) << 32 | field(7) << 48;
            *word = reduce_word(x, (y << 8) & keep, self.ty, ReduceOp::Sum);
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
    #[inline(always)]
    fn finish<K: Kernels>(mut self) -> Line {
        self.fold();
        K::transpose(self.words.unwrap_or_default())
    }
}

/// The runs of consecutive terms with the same rotations.
fn same_rotations(terms: &[(usize, u8)]) -> impl Iterator<Item = &[(usize, u8)]> {
    terms.chunk_by(|a, b| a.1 == b.1)
}

/// Source lines fetched per measured batch: the lines of several ops (or part of one) are
/// fetched together, so that a host step is measured in few, large pieces (each measurement
/// costs two CPU-clock reads, system calls).
const BATCH_LINES: usize = 4096;

/// The measured host work of a host step, ns: phases one after the other, each a list of
/// pieces that may run at once (one per rank), each piece's work on one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Work {
    pub phases: Vec<Vec<u64>>,
}

impl Work {
    /// One piece.
    pub fn single(ns: u64) -> Work {
        Work {
            phases: vec![vec![ns]],
        }
    }

    /// The pieces' work, ns, summed (one thread doing everything).
    pub fn total(&self) -> u64 {
        self.phases.iter().flatten().sum()
    }

    /// The time of the work on `threads` host cores: each phase's pieces on their own cores,
    /// longest first on the least loaded core when there are more pieces than cores; the
    /// phases one after the other.
    pub fn on_cores(&self, threads: u32) -> u64 {
        let threads = threads.max(1) as usize;
        self.phases
            .iter()
            .map(|pieces| {
                if pieces.len() <= threads {
                    return pieces.iter().copied().max().unwrap_or(0);
                }
                let mut sorted = pieces.clone();
                sorted.sort_unstable_by(|a, b| b.cmp(a));
                let mut cores = vec![0u64; threads];
                for p in sorted {
                    let least = cores.iter_mut().min().expect("threads >= 1");
                    *least += p;
                }
                cores.into_iter().max().unwrap_or(0)
            })
            .sum()
    }

    /// Appends the phases of `other` after this work's.
    pub fn then(mut self, other: Work) -> Work {
        self.phases.extend(other.phases);
        self
    }
}

/// Runs `f` on every item, the items spread over worker threads (at most the host's
/// available cores); returns each item's measured work (its thread CPU time, as `f` measures
/// it), in the items' order. What `f` computes does not depend on the thread it runs on.
pub fn in_parallel<T: Send>(items: Vec<T>, f: impl Fn(T) -> u64 + Sync) -> Vec<u64> {
    let n = items.len();
    let workers = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .min(n);
    if workers <= 1 {
        return items.into_iter().map(f).collect();
    }
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let out = std::sync::Mutex::new(vec![0u64; n]);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                let Some((i, item)) = next else { break };
                let ns = f(item);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = ns;
            });
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The ops of each destination rank (a rank's window holds `rank_lines` lines of `dst`), with
/// their destination lines relative to the rank's: an op replicated to several ranks (a
/// reduction given to a group across ranks) is computed by each, as each rank's thread does.
fn by_rank(ops: &[Op], rank_lines: usize, ranks: usize) -> Vec<Vec<Op>> {
    let mut out: Vec<Vec<Op>> = vec![Vec::new(); ranks];
    for op in ops {
        // (rank, index of this op's copy in the rank's list)
        let mut copies: Vec<(usize, usize)> = Vec::new();
        for d in &op.dst {
            let r = d / rank_lines;
            let rel = d - r * rank_lines;
            debug_assert!(rel + op.words <= rank_lines, "a chunk across ranks");
            match copies.iter().find(|(cr, _)| *cr == r) {
                Some(&(_, k)) => out[r][k].dst.push(rel),
                None => {
                    copies.push((r, out[r].len()));
                    out[r].push(Op {
                        dst: vec![rel],
                        words: op.words,
                        body: op.body.clone(),
                    });
                }
            }
        }
    }
    out
}

/// Runs the host step, `ops` from `src` into `dst`, one piece per destination rank (`dst` holds
/// `rank_lines` lines per rank), on worker threads; returns each piece's measured host work.
///
/// With in-register modulation, the windows stand for the ranks' memory: every load and store
/// on them is a bus access, which the bus model charges (`engine::charge_host_step`). What is
/// measured is the work in registers: the lines of a batch of ops are fetched into a small
/// buffer (the emulator's work, not timed), modulated (timed: thread CPU time), and stored (not
/// timed). Without it, the staging in host memory is real host work, and is measured whole:
/// the source ranks' lines to host memory in the DPUs' domain (a phase, one piece per source
/// rank), then each destination rank's lines computed there and transposed back.
///
/// The bytes written do not depend on the threads: each piece writes only its rank's lines.
pub fn run(ops: &[Op], src: &[u64], dst: &mut [u64], m: &Modulation, rank_lines: usize) -> Work {
    run_with(Kernel::best(), ops, src, dst, m, rank_lines)
}

/// [`run`] with the line kernels of `kernel` (one of [`Kernel::available`]).
pub fn run_with(
    kernel: Kernel,
    ops: &[Op],
    src: &[u64],
    dst: &mut [u64],
    m: &Modulation,
    rank_lines: usize,
) -> Work {
    let rank_lines = rank_lines.max(1);
    let ranks = (dst.len() / 8).div_ceil(rank_lines);
    let pieces = by_rank(ops, rank_lines, ranks);
    let dst_ranks: Vec<&mut [u64]> = dst.chunks_mut(8 * rank_lines).collect();
    if !m.in_register {
        // The host-memory program: the source to host memory in the DPUs' domain, modulated
        // there, back to the destination window.
        // The source in as many pieces of whole lines as there are ranks.
        let src_rank = 8 * (src.len() / 8).div_ceil(ranks.max(1)).max(1);
        let mut staged = vec![0u64; src.len()];
        let stage: Vec<(&[u64], &mut [u64])> = src
            .chunks(src_rank)
            .zip(staged.chunks_mut(src_rank))
            .collect();
        let staging = in_parallel(stage, |(from, to)| {
            let start = cpu_now();
            transpose_all(kernel, from, to);
            cpu_now().saturating_sub(start)
        });
        let staged = &staged;
        let compute = in_parallel(pieces.into_iter().zip(dst_ranks).collect(), |(ops, d)| {
            let start = cpu_now();
            let mut out = vec![0u64; d.len()];
            run_domain(&ops, staged, &mut out, m);
            transpose_all(kernel, &out, d);
            cpu_now().saturating_sub(start)
        });
        return Work {
            phases: vec![staging, compute],
        };
    }
    let work = in_parallel(pieces.into_iter().zip(dst_ranks).collect(), |(ops, d)| {
        run_rank(&ops, src, d, m, kernel)
    });
    Work { phases: vec![work] }
}

/// One part of an op in a batch: lines `w0 .. w0 + n` of op `op`, its sources renamed to the
/// batch's buffer, its result at line `out` of the batch's output.
struct Job {
    op: usize,
    w0: usize,
    n: usize,
    body: Body,
    out: usize,
}

/// The in-register host step of one rank's ops into `dst` (the rank's lines); returns the
/// measured work, ns.
fn run_rank(ops: &[Op], src: &[u64], dst: &mut [u64], m: &Modulation, kernel: Kernel) -> u64 {
    let sources: Vec<Vec<usize>> = ops.iter().map(|o| o.body.sources()).collect();
    let mut work = 0;
    let mut local_src: Vec<u64> = Vec::with_capacity(8 * BATCH_LINES);
    let mut local_dst: Vec<u64> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let (mut i, mut w0) = (0, 0);
    while i < ops.len() {
        local_src.clear();
        local_dst.clear();
        jobs.clear();
        // Fetch (emulator work): whole ops, or parts of a long one, up to a batch of lines.
        while i < ops.len() && local_src.len() < 8 * BATCH_LINES {
            let op = &ops[i];
            let srcs = &sources[i];
            let room = (BATCH_LINES - local_src.len() / 8) / srcs.len().max(1);
            let n = room.max(8).min(op.words - w0);
            let base = local_src.len() / 8;
            for s in srcs {
                local_src.extend_from_slice(&src[8 * (s + w0)..8 * (s + w0 + n)]);
            }
            let body = op
                .body
                .remap(|s| base + srcs.iter().position(|x| *x == s).unwrap_or(0) * n);
            let out = local_dst.len() / 8;
            local_dst.resize(local_dst.len() + 8 * n, 0);
            jobs.push(Job {
                op: i,
                w0,
                n,
                body,
                out,
            });
            w0 += n;
            if w0 == op.words {
                i += 1;
                w0 = 0;
            }
        }
        let start = cpu_now();
        for j in &jobs {
            modulate_with(
                kernel,
                &j.body,
                j.n,
                &local_src,
                &mut local_dst[8 * j.out..8 * (j.out + j.n)],
                m,
            );
        }
        work += cpu_now()
            .saturating_sub(start)
            .saturating_sub(clock_pair_ns());
        // Store (bus accesses, charged by the bus model).
        for j in &jobs {
            let lines = &local_dst[8 * j.out..8 * (j.out + j.n)];
            for d in &ops[j.op].dst {
                dst[8 * (d + j.w0)..8 * (d + j.w0 + j.n)].copy_from_slice(lines);
            }
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
    /// The body's work per destination line, in the unit of its kind (the host step's cost
    /// model, `crate::choice`, counts work this way and prices each kind's unit by measuring
    /// it): a line loaded and rotated for a copy, a source line for a reduction, a chip's
    /// word extracted for a gather.
    pub fn work_units(&self) -> u64 {
        match self {
            Body::Copy { .. } => 1,
            Body::Reduce { terms } => terms.len() as u64,
            Body::Gather { chips } => chips.iter().map(|l| l.len() as u64).sum(),
        }
    }

    /// The distinct source lines (first word) the body reads, in order.
    pub(crate) fn sources(&self) -> Vec<usize> {
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

/// [`modulate`] with the kernels of `kernel` (one of [`Kernel::available`]).
fn modulate_with(
    kernel: Kernel,
    body: &Body,
    words: usize,
    src: &[u64],
    dst: &mut [u64],
    m: &Modulation,
) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Kernel::available lists Avx2 only on CPUs with AVX2.
        Kernel::Avx2 => unsafe { modulate_avx2(body, words, src, dst, m) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2 => modulate::<crate::simd::Sse2>(body, words, src, dst, m),
        _ => modulate::<Portable>(body, words, src, dst, m),
    }
}

/// [`modulate`] compiled for AVX2, with its kernels.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn modulate_avx2(body: &Body, words: usize, src: &[u64], dst: &mut [u64], m: &Modulation) {
    modulate::<crate::simd::Avx2>(body, words, src, dst, m)
}

/// Modulates `words` lines of one destination: line `w` of `dst` from lines `s + w` of `src`.
#[inline(always)]
fn modulate<K: Kernels>(body: &Body, words: usize, src: &[u64], dst: &mut [u64], m: &Modulation) {
    let interleaved_reduce = m.cross_domain && m.ty == ElemType::I8;
    // Wider sums in the interleaved domain: bytes added without carries, resolved once.
    let interleaved_wide_sum = m.cross_domain && m.ty != ElemType::I8 && m.op == ReduceOp::Sum;
    for w in 0..words {
        let out = match body {
            Body::Copy { src: s, rot } => {
                let x = load(src, s + w);
                if m.cross_domain {
                    rotate::<K>(x, *rot)
                } else {
                    K::transpose(rotate_words(K::transpose(x), *rot))
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
                            reduce_bytes::<K>(&mut part, &load(src, s + w), m.op);
                        }
                        term_bytes::<K>(part, run[0].1, m.op, &mut acc);
                    }
                    acc.unwrap_or_default()
                } else if interleaved_wide_sum {
                    let mut wide = WideSum::new(m.ty);
                    for run in same_rotations(terms) {
                        // At most 32 lines at once: 32 x 8 rotations fit the 16-bit fields.
                        for piece in run.chunks(32) {
                            let mut part = WideSum::new(m.ty);
                            for (s, _) in piece {
                                part.add::<K>(&load(src, s + w));
                            }
                            wide.add_rotated::<K>(&part, piece[0].1);
                        }
                    }
                    wide.finish::<K>()
                } else {
                    for run in same_rotations(terms) {
                        let mut part = K::transpose(load(src, run[0].0 + w));
                        for (s, _) in &run[1..] {
                            reduce_words(&mut part, &K::transpose(load(src, s + w)), m);
                        }
                        term_words(part, run[0].1, m, &mut acc);
                    }
                    K::transpose(acc.unwrap_or_default())
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
                K::transpose(words)
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
        let r = transpose(rotate::<Portable>(lanes, 3));
        assert_eq!(r[3], words[0]);
        assert_eq!(r, rotate_words(words, 3));
    }

    #[test]
    fn work_is_charged_as_the_host_runs_its_pieces() {
        let w = Work {
            phases: vec![vec![5, 9, 3, 7], vec![4]],
        };
        assert_eq!(w.total(), 28);
        // Enough cores: the longest piece of each phase.
        assert_eq!(w.on_cores(16), 9 + 4);
        assert_eq!(w.on_cores(4), 9 + 4);
        // Two cores: 9 + 3 and 7 + 5, longest first on the least loaded core.
        assert_eq!(w.on_cores(2), 12 + 4);
        assert_eq!(w.on_cores(1), 24 + 4);
        assert_eq!(Work::default().on_cores(16), 0);
    }

    #[test]
    fn pieces_run_on_threads_in_order() {
        let got = in_parallel((0..37u64).collect(), |i| i * i);
        assert_eq!(got, (0..37u64).map(|i| i * i).collect::<Vec<_>>());
    }

    #[test]
    fn fold_resolves_every_elements_carries() {
        // Random 16-bit byte sums, resolved element by element from the definition: chip c's
        // element e is the sum of its bytes' sums, each shifted to its byte, wrapped.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for ty in [ElemType::I16, ElemType::I32, ElemType::I64] {
            for _ in 0..200 {
                let mut w = WideSum::new(ty);
                w.even = std::array::from_fn(|_| next());
                w.odd = std::array::from_fn(|_| next());
                let (even, odd) = (w.even, w.odd);
                w.fold();
                let size = ty.bytes();
                for c in 0..8 {
                    let fields = if c % 2 == 0 { &even } else { &odd };
                    let sum = |l: usize| (fields[l] >> (16 * (c / 2))) & 0xffff;
                    let mut want = 0u64;
                    for e in 0..8 / size {
                        let v = (0..size)
                            .fold(0u64, |v, b| v.wrapping_add(sum(e * size + b) << (8 * b)));
                        let mask = if size == 8 {
                            u64::MAX
                        } else {
                            (1 << (8 * size)) - 1
                        };
                        want |= (v & mask) << (8 * e * size);
                    }
                    assert_eq!(w.words.unwrap()[c], want, "{ty:?} chip {c}");
                }
            }
        }
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
                for kernel in Kernel::available() {
                    let mut dst = vec![0u64; 8];
                    run_with(kernel, &ops, &src, &mut dst, &m, 1);
                    got.push(dst);
                }
            }
            assert!(got.windows(2).all(|w| w[0] == w[1]), "{ty:?}");
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
                    for kernel in Kernel::available() {
                        let mut dst = vec![0u64; 64];
                        run_with(kernel, &ops, &src, &mut dst, &m, 2);
                        results.push(dst);
                    }
                }
            }
            assert!(results.windows(2).all(|w| w[0] == w[1]));
        }
    }
}
