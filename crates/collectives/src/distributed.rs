//! The host step of an exchange in the MPI workers that hold the set's ranks
//! (`openpim run --mpi N`, docs/scale-out.md).
//!
//! In process, the host step reads the source window of every rank, runs the line
//! arithmetic and writes the destination window back. On MPI workers that would bring every
//! byte of the exchange to the program's process and send it out again, twice over the
//! gateway's link. Instead the program's process sends one request ([`Step`]: the
//! exchange's parameters) to each worker holding a rank of the set; each worker plans its own
//! ranks' destinations with the same plan code as a local run ([`plan::build_for`]: a
//! worker's share, so the plan's cost is spread too), asks every other worker of the set for
//! the source lines those destinations read (runs of line numbers), reads its own ranks'
//! source lines, sends the others what they asked for, runs the same line code as a local
//! run ([`line::run`]) and writes its ranks' destinations. The measured work of each rank's
//! piece comes back, and the program charges the step as a local run does.

use crate::cube::{dpu_of, Comm, Hypercube, RANK_DPUS};
use crate::elem::{ElemType, ReduceOp};
use crate::line::{self, Modulation, Work};
use crate::plan::{self, Exchange, Layout};

/// Where a distributed run's host steps run: `workers` (the default) or `program` (the
/// program's process, every byte of the exchange through the gateway twice: for comparison).
pub const HOST_STEP_ENV: &str = "OPENPIM_MPI_HOST_STEP";

/// Whether host steps run in the workers ([`HOST_STEP_ENV`]).
pub(crate) fn in_workers() -> crate::Result<bool> {
    match std::env::var(HOST_STEP_ENV).as_deref() {
        Err(_) | Ok("") | Ok("workers") => Ok(true),
        Ok("program") => Ok(false),
        Ok(other) => Err(crate::Error::invalid(
            HOST_STEP_ENV,
            format!("'{other}': 'workers' (the default: beside the ranks) or 'program' (in the program's process, through the gateway)"),
        )),
    }
}

/// A worker's ranks' memory: a region of every DPU of a rank slot.
pub trait RankMemory {
    /// `len` bytes at MRAM address `addr` of each of the 64 DPUs of rank slot `slot`, by the
    /// rank's DPU index.
    fn read(&self, slot: u32, addr: u32, len: u32) -> Result<Vec<Vec<u8>>, String>;
    /// Writes `bufs[i]` (each `len` bytes) at MRAM address `addr` of the rank's DPU `i`.
    fn write(&self, slot: u32, addr: u32, len: u32, bufs: &[Vec<u8>]) -> Result<(), String>;
}

/// The other workers of the run, reached directly (not through the gateway).
pub trait Peers {
    /// This worker's index (0-based: MPI rank - 1).
    fn me(&self) -> u32;
    /// Sends `bytes` to worker `to` for step `step`.
    fn send(&self, to: u32, step: u64, bytes: Vec<u8>);
    /// The bytes worker `from` sent for step `step` (waits for them, within a bound).
    fn recv(&self, from: u32, step: u64) -> Result<Vec<u8>, String>;
}

/// One host step, as the program's process sends it to the workers.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Unique in the run (the program's pid and a counter): tags the workers' messages.
    pub id: u64,
    pub x: Exchange,
    pub cube: Hypercube,
    pub comm: Comm,
    pub total: u32,
    pub layout: Layout,
    pub m: Modulation,
    /// The source and destination regions: absolute MRAM address and bytes per DPU.
    pub src: (u32, u32),
    pub dst: (u32, u32),
    /// The set's rank slots in set order, and how many workers the run has (slot `s` is on
    /// worker `s mod nr_workers`).
    pub slots: Vec<u32>,
    pub nr_workers: u32,
}

/// The lines of a rank's window for `words` 64-bit words per DPU.
fn rank_lines(words: usize) -> usize {
    (RANK_DPUS / 8) as usize * words
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u32(&mut self) -> Result<u32, String> {
        let (h, t) = self
            .0
            .split_at_checked(4)
            .ok_or("truncated collective step")?;
        self.0 = t;
        Ok(u32::from_le_bytes(h.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from(self.u32()?) | (u64::from(self.u32()?) << 32))
    }
}

impl Step {
    /// The step's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v: Vec<u32> = vec![
            self.id as u32,
            (self.id >> 32) as u32,
            match self.x {
                Exchange::AlltoAll => 0,
                Exchange::AllGather => 1,
                Exchange::ReduceScatter => 2,
                Exchange::AllReduce => 3,
            },
            self.cube.axes[0],
            self.cube.axes[1],
            self.cube.axes[2],
            self.cube.dims,
            u32::from(self.comm[0]) | u32::from(self.comm[1]) << 1 | u32::from(self.comm[2]) << 2,
            self.total,
            u32::from(self.layout.rotated_source) | u32::from(self.layout.rotated_dest) << 1,
            u32::from(self.m.in_register) | u32::from(self.m.cross_domain) << 1,
            self.m.ty.bytes() as u32,
            match self.m.op {
                ReduceOp::Sum => 0,
                ReduceOp::Max => 1,
            },
            self.src.0,
            self.src.1,
            self.dst.0,
            self.dst.1,
            self.nr_workers,
            self.slots.len() as u32,
        ];
        v.extend_from_slice(&self.slots);
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// A step from its bytes.
    pub fn decode(b: &[u8]) -> Result<Step, String> {
        let mut r = Reader(b);
        let id = r.u64()?;
        let x = match r.u32()? {
            0 => Exchange::AlltoAll,
            1 => Exchange::AllGather,
            2 => Exchange::ReduceScatter,
            3 => Exchange::AllReduce,
            k => return Err(format!("unknown exchange {k} in a collective step")),
        };
        let axes = [r.u32()?, r.u32()?, r.u32()?];
        let dims = r.u32()?;
        let c = r.u32()?;
        let total = r.u32()?;
        let l = r.u32()?;
        let mm = r.u32()?;
        let ty = ElemType::from_size(r.u32()?).map_err(|e| e.to_string())?;
        let op = ReduceOp::from_code(r.u32()?).map_err(|e| e.to_string())?;
        let src = (r.u32()?, r.u32()?);
        let dst = (r.u32()?, r.u32()?);
        let nr_workers = r.u32()?;
        let n = r.u32()? as usize;
        let slots = (0..n).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
        let nr_dpus: u64 = axes.iter().map(|a| u64::from(*a)).product();
        if nr_dpus != n as u64 * u64::from(RANK_DPUS)
            || nr_workers == 0
            || !src.1.is_multiple_of(8)
            || !dst.1.is_multiple_of(8)
        {
            return Err("inconsistent collective step (axes, ranks, workers, regions)".into());
        }
        Ok(Step {
            id,
            x,
            cube: Hypercube { axes, dims },
            comm: [c & 1 != 0, c & 2 != 0, c & 4 != 0],
            total,
            layout: Layout {
                rotated_source: l & 1 != 0,
                rotated_dest: l & 2 != 0,
            },
            m: Modulation {
                in_register: mm & 1 != 0,
                cross_domain: mm & 2 != 0,
                ty,
                op,
            },
            src,
            dst,
            slots,
            nr_workers,
        })
    }

    /// The worker holding the set's rank `r`.
    fn owner(&self, r: usize) -> u32 {
        self.slots[r] % self.nr_workers
    }
}

/// The measured work of the pieces a worker ran: per phase, (piece, ns).
fn encode_work(phases: &[Vec<(u32, u64)>]) -> Vec<u8> {
    let mut out = (phases.len() as u32).to_le_bytes().to_vec();
    for p in phases {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        for (k, ns) in p {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&ns.to_le_bytes());
        }
    }
    out
}

/// Adds a worker's pieces (its answer's bytes) into `work`.
pub(crate) fn merge_work(work: &mut Work, b: &[u8]) -> Result<(), String> {
    let mut r = Reader(b);
    let phases = r.u32()? as usize;
    if work.phases.len() < phases {
        work.phases.resize(phases, Vec::new());
    }
    for phase in work.phases.iter_mut().take(phases) {
        for _ in 0..r.u32()? {
            let k = r.u32()? as usize;
            let ns = r.u64()?;
            if k >= 1 << 20 {
                return Err(format!("piece {k} in a worker's collective answer"));
            }
            if phase.len() <= k {
                phase.resize(k + 1, 0);
            }
            phase[k] = phase[k].max(ns);
        }
    }
    Ok(())
}

/// The first byte of a message between workers: which lines the sender reads of the
/// receiver's ranks, the lines asked for, or why there are none (the sender could not read
/// its ranks).
const REQUEST: u8 = 2;
const LINES: u8 = 0;
const FAILED: u8 = 1;

/// The step id of the lines' messages (the requests' is the step's own: a worker sends each
/// other worker both, and the receiver takes each by its id). Step ids leave bit 63 clear
/// (a pid and a counter).
fn lines_id(step: u64) -> u64 {
    step | 1 << 63
}

/// The lines `line` of `win` as bytes, appended to `out`.
fn put_line(out: &mut Vec<u8>, win: &[u64], line: usize) {
    for w in &win[8 * line..8 * line + 8] {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// The runs `(first, count)` of the lines `need` marks in `range`.
fn runs(need: &[bool], range: std::ops::Range<usize>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for line in range.filter(|l| need[*l]) {
        match out.last_mut() {
            Some((first, count)) if (*first + *count) as usize == line => *count += 1,
            _ => out.push((line as u32, 1)),
        }
    }
    out
}

/// Checks a message from worker `v` and returns its body, or the failure it reports.
fn expect(got: &[u8], kind: u8, v: u32) -> Result<&[u8], String> {
    match got.first() {
        Some(&k) if k == kind => Ok(&got[1..]),
        Some(&FAILED) => Err(format!(
            "MPI worker {} could not read its ranks: {}",
            v + 1,
            String::from_utf8_lossy(&got[1..])
        )),
        _ => Err(format!("MPI worker {} sent a malformed message", v + 1)),
    }
}

/// Runs this worker's part of a host step (`body`: a [`Step`]'s bytes) on its ranks `mem`;
/// returns its answer (the measured work of its pieces) and the messages and bytes it sent
/// the other workers.
///
/// Each worker plans only its own ranks' destinations ([`plan::build_for`]), tells every
/// other worker of the set which of that worker's source lines they read (runs of lines),
/// reads its own ranks' source lines, sends each other worker the lines it asked for, and
/// then runs the line arithmetic on its ranks' destinations.
pub fn serve(
    body: &[u8],
    mem: &dyn RankMemory,
    peers: &dyn Peers,
) -> Result<(Vec<u8>, u64, u64), String> {
    let s = Step::decode(body)?;
    let me = peers.me();
    let nr_ranks = s.slots.len();
    let (src_words, dst_words) = ((s.src.1 / 8) as usize, (s.dst.1 / 8) as usize);
    let (src_rl, dst_rl) = (rank_lines(src_words), rank_lines(dst_words));
    let mut workers: Vec<u32> = (0..nr_ranks).map(|r| s.owner(r)).collect();
    workers.sort_unstable();
    workers.dedup();
    if !workers.contains(&me) {
        return Err(format!(
            "asked for a host step on rank slots {:?}, none of which it holds",
            s.slots
        ));
    }
    let others: Vec<u32> = workers.iter().copied().filter(|w| *w != me).collect();
    let egs_per_rank = (RANK_DPUS / 8) as usize;
    let ops = plan::build_for(
        s.x,
        &s.cube,
        s.comm,
        s.total,
        s.layout,
        src_words,
        dst_words,
        |eg| s.owner(eg as usize / egs_per_rank) == me,
    );
    // The source lines this worker's destinations read.
    let total_src = nr_ranks * src_rl;
    let mut need = vec![false; total_src];
    for op in &ops {
        for sl in op.body.sources() {
            for line in need.iter_mut().skip(sl).take(op.words) {
                *line = true;
            }
        }
    }
    let owners: Vec<u32> = (0..nr_ranks).map(|r| s.owner(r)).collect();
    let ranks_of = |w: u32| -> Vec<usize> { (0..nr_ranks).filter(|r| owners[*r] == w).collect() };
    let (mut messages, mut bytes) = (0u64, 0u64);
    let mut asked: Vec<(u32, Vec<(u32, u32)>)> = Vec::new();
    for &v in &others {
        let wanted: Vec<(u32, u32)> = ranks_of(v)
            .into_iter()
            .flat_map(|r| runs(&need, r * src_rl..(r + 1) * src_rl))
            .collect();
        let mut out = vec![REQUEST];
        for (first, count) in &wanted {
            out.extend_from_slice(&first.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        messages += 1;
        bytes += out.len() as u64;
        peers.send(v, s.id, out);
        asked.push((v, wanted));
    }
    // This worker's ranks' source lines. (Untouched pages of the windows, the other workers'
    // ranks', cost no memory.)
    let logical: Vec<usize> = (0..RANK_DPUS).map(|l| dpu_of(l).1 as usize).collect();
    let mut src = vec![0u64; 8 * total_src];
    let my_ranks: Vec<usize> = ranks_of(me);
    let read = my_ranks.iter().try_for_each(|&r| {
        let bufs = mem.read(s.slots[r], s.src.0, s.src.1)?;
        if bufs.len() != RANK_DPUS as usize {
            return Err(format!("rank slot {} has {} DPUs", s.slots[r], bufs.len()));
        }
        let ordered: Vec<Vec<u8>> = logical.iter().map(|i| bufs[*i].clone()).collect();
        let win = crate::engine::to_window(&ordered, s.src.1 as usize);
        src[8 * r * src_rl..8 * (r + 1) * src_rl].copy_from_slice(&win);
        Ok(())
    });
    if let Err(why) = read {
        // The other workers wait for this one's lines: they learn at once that none come.
        for &v in &others {
            let mut out = vec![FAILED];
            out.extend_from_slice(why.as_bytes());
            peers.send(v, lines_id(s.id), out);
        }
        return Err(why);
    }
    // The lines each other worker asked for, from this worker's ranks only.
    let mine = |line: usize| line < total_src && owners[line / src_rl] == me;
    for &v in &others {
        let got = peers.recv(v, s.id)?;
        let req = expect(&got, REQUEST, v)?;
        if !req.len().is_multiple_of(8) {
            return Err(format!("MPI worker {} sent a malformed request", v + 1));
        }
        let mut out = vec![LINES];
        for run in req.chunks(8) {
            let first = u32::from_le_bytes(run[..4].try_into().expect("4")) as usize;
            let count = u32::from_le_bytes(run[4..].try_into().expect("4")) as usize;
            let last = first + count.max(1) - 1;
            if !mine(first) || !mine(last) || s.owner(first / src_rl) != s.owner(last / src_rl) {
                return Err(format!(
                    "MPI worker {} asked for lines {first}..{} this worker does not hold",
                    v + 1,
                    first + count
                ));
            }
            for line in first..first + count {
                put_line(&mut out, &src, line);
            }
        }
        messages += 1;
        bytes += out.len() as u64;
        peers.send(v, lines_id(s.id), out);
    }
    for (v, wanted) in &asked {
        let got = peers.recv(*v, lines_id(s.id))?;
        let got = expect(&got, LINES, *v)?;
        let expected: usize = wanted.iter().map(|(_, c)| 64 * *c as usize).sum();
        if got.len() != expected {
            return Err(format!(
                "MPI worker {} sent {} bytes of source lines, {expected} expected",
                v + 1,
                got.len()
            ));
        }
        let mut at = 0;
        for &(first, count) in wanted {
            for line in first as usize..(first + count) as usize {
                for (k, w) in src[8 * line..8 * line + 8].iter_mut().enumerate() {
                    *w = u64::from_le_bytes(got[at + 8 * k..at + 8 * k + 8].try_into().expect("8"));
                }
                at += 64;
            }
        }
    }
    // The same line arithmetic as in process, for this worker's destination lines.
    let mut dst = vec![0u64; 8 * nr_ranks * dst_rl];
    let work = line::run(&ops, &src, &mut dst, &s.m, dst_rl);
    for &r in &my_ranks {
        let by_logical = crate::engine::from_window(
            &dst[8 * r * dst_rl..8 * (r + 1) * dst_rl].to_vec(),
            RANK_DPUS as usize,
            s.dst.1 as usize,
        );
        let mut bufs = vec![Vec::new(); RANK_DPUS as usize];
        for (l, b) in by_logical.into_iter().enumerate() {
            bufs[logical[l]] = b;
        }
        mem.write(s.slots[r], s.dst.0, s.dst.1, &bufs)?;
    }
    // Each phase's pieces are per rank (the staging phase's, per share of the source: piece
    // k is rank k's): this worker answers for its ranks'.
    let phases: Vec<Vec<(u32, u64)>> = work
        .phases
        .iter()
        .map(|p| {
            p.iter()
                .enumerate()
                .filter(|(k, _)| s.owner(k % nr_ranks) == me)
                .map(|(k, ns)| (k as u32, *ns))
                .collect()
        })
        .collect();
    Ok((encode_work(&phases), messages, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip_and_refuse_garbage() {
        let s = Step {
            id: (77 << 32) | 5,
            x: Exchange::ReduceScatter,
            cube: Hypercube {
                axes: [64, 4, 1],
                dims: 2,
            },
            comm: [true, false, true],
            total: 4096,
            layout: Layout {
                rotated_source: true,
                rotated_dest: false,
            },
            m: Modulation {
                in_register: true,
                cross_domain: false,
                ty: ElemType::I32,
                op: ReduceOp::Max,
            },
            src: (1 << 20, 4096),
            dst: (2 << 20, 1024),
            slots: vec![0, 1, 2, 3],
            nr_workers: 2,
        };
        assert_eq!(Step::decode(&s.encode()).unwrap(), s);
        assert!(Step::decode(&s.encode()[..20]).is_err());
        let mut bad = s.clone();
        bad.slots.pop();
        assert!(
            Step::decode(&bad.encode()).is_err(),
            "axes and ranks disagree"
        );
    }

    use std::collections::HashMap;
    use std::sync::{Arc, Condvar, Mutex};

    /// Rank memory: regions by (slot, address), 64 DPUs each.
    #[derive(Default)]
    struct Mem(Mutex<HashMap<(u32, u32), Region>>);

    /// A region of a rank's 64 DPUs.
    type Region = Vec<Vec<u8>>;

    impl RankMemory for Mem {
        fn read(&self, slot: u32, addr: u32, len: u32) -> Result<Vec<Vec<u8>>, String> {
            let m = self.0.lock().unwrap();
            let r = m.get(&(slot, addr)).ok_or("no such region")?;
            Ok(r.iter().map(|b| b[..len as usize].to_vec()).collect())
        }
        fn write(&self, slot: u32, addr: u32, _len: u32, bufs: &[Vec<u8>]) -> Result<(), String> {
            self.0.lock().unwrap().insert((slot, addr), bufs.to_vec());
            Ok(())
        }
    }

    /// Messages between simulated workers: (step, from, to) -> bytes.
    type Post = Arc<(Mutex<HashMap<(u64, u32, u32), Vec<u8>>>, Condvar)>;

    struct Net {
        me: u32,
        post: Post,
    }

    impl Peers for Net {
        fn me(&self) -> u32 {
            self.me
        }
        fn send(&self, to: u32, step: u64, bytes: Vec<u8>) {
            self.post
                .0
                .lock()
                .unwrap()
                .insert((step, self.me, to), bytes);
            self.post.1.notify_all();
        }
        fn recv(&self, from: u32, step: u64) -> Result<Vec<u8>, String> {
            let mut m = self.post.0.lock().unwrap();
            loop {
                if let Some(b) = m.remove(&(step, from, self.me)) {
                    return Ok(b);
                }
                m = self.post.1.wait(m).unwrap();
            }
        }
    }

    /// Runs `step` on `workers` simulated workers holding its ranks (slot `s` on worker
    /// `s mod workers`), and the same step in one window as a local run does; the
    /// destination regions must be equal.
    fn same_as_local(step: &Step) {
        const SRC: u32 = 0x0800_0000;
        let nr_ranks = step.slots.len();
        let mem = Arc::new(Mem::default());
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut all: Vec<Vec<u8>> = Vec::new();
        for r in 0..nr_ranks {
            let bufs: Vec<Vec<u8>> = (0..64)
                .map(|_| {
                    (0..step.src.1)
                        .map(|_| {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            seed as u8
                        })
                        .collect()
                })
                .collect();
            all.extend((0..64).map(|l| bufs[dpu_of(l).1 as usize].clone()));
            mem.0.lock().unwrap().insert((step.slots[r], SRC), bufs);
        }
        // The local run: one window of every rank, the whole plan.
        let ops = plan::build(
            step.x,
            &step.cube,
            step.comm,
            step.total,
            step.layout,
            (step.src.1 / 8) as usize,
            (step.dst.1 / 8) as usize,
        );
        let src = crate::engine::to_window(&all, step.src.1 as usize);
        let dst_rl = rank_lines((step.dst.1 / 8) as usize);
        let mut dst = vec![0u64; 8 * nr_ranks * dst_rl];
        line::run(&ops, &src, &mut dst, &step.m, dst_rl);
        let want = crate::engine::from_window(&dst, 64 * nr_ranks, step.dst.1 as usize);
        // The workers.
        let post: Post = Arc::default();
        let threads: Vec<_> = (0..step.nr_workers)
            .map(|me| {
                let (mem, post, body) = (Arc::clone(&mem), Arc::clone(&post), step.encode());
                std::thread::spawn(move || serve(&body, &*mem, &Net { me, post }))
            })
            .collect();
        let mut work = Work::default();
        let mut between = 0;
        for t in threads {
            let (answer, _, bytes) = t.join().unwrap().unwrap();
            merge_work(&mut work, &answer).unwrap();
            between += bytes;
        }
        assert_eq!(work.phases.len(), 1);
        assert_eq!(work.phases[0].len(), nr_ranks, "a piece per rank");
        if step.nr_workers > 1 {
            assert!(between > 0, "lines crossed between the workers");
        }
        let m = mem.0.lock().unwrap();
        for l in 0..64 * nr_ranks as u32 {
            let (r, i) = dpu_of(l);
            let got = &m[&(step.slots[r as usize], step.dst.0)][i as usize];
            assert_eq!(got, &want[l as usize], "DPU {l} (rank {r}, DPU {i})");
        }
    }

    fn step(x: Exchange, axes: [u32; 3], comm: Comm, total: u32, lens: (u32, u32)) -> Step {
        Step {
            id: 1,
            x,
            cube: Hypercube { axes, dims: 3 },
            comm,
            total,
            layout: Layout::default(),
            m: Modulation {
                in_register: true,
                cross_domain: true,
                ty: ElemType::I32,
                op: ReduceOp::Sum,
            },
            src: (0x0800_0000, lens.0),
            dst: (0x0810_0000, lens.1),
            slots: vec![0, 1, 2, 3],
            nr_workers: 2,
        }
    }

    #[test]
    fn workers_compute_what_one_window_computes() {
        // An all-to-all across the ranks' DPUs, a reduction across ranks, and a gather.
        let (x, y, xy) = (
            [true, false, false],
            [false, true, false],
            [true, true, false],
        );
        same_as_local(&step(
            Exchange::AlltoAll,
            [256, 1, 1],
            x,
            2048,
            (2048, 2048),
        ));
        same_as_local(&step(Exchange::AllReduce, [64, 4, 1], y, 64, (64, 64)));
        same_as_local(&step(Exchange::AllGather, [8, 32, 1], y, 256, (8, 256)));
        let mut four = step(Exchange::ReduceScatter, [16, 16, 1], xy, 2048, (2048, 8));
        four.nr_workers = 4;
        same_as_local(&four);
        let mut alone = step(Exchange::AlltoAll, [64, 4, 1], y, 256, (256, 256));
        alone.nr_workers = 1;
        same_as_local(&alone);
    }

    #[test]
    fn a_worker_that_cannot_read_fails_the_others_at_once() {
        // Worker 1's ranks have no source region: it fails, and worker 0 learns it from its
        // message instead of waiting.
        let st = step(
            Exchange::AllReduce,
            [64, 4, 1],
            [false, true, false],
            64,
            (64, 64),
        );
        let mem = Arc::new(Mem::default());
        for slot in [0, 2] {
            mem.0
                .lock()
                .unwrap()
                .insert((slot, 0x0800_0000), vec![vec![0u8; 64]; 64]);
        }
        let post: Post = Arc::default();
        let threads: Vec<_> = (0..2)
            .map(|me| {
                let (mem, post, body) = (Arc::clone(&mem), Arc::clone(&post), st.encode());
                std::thread::spawn(move || serve(&body, &*mem, &Net { me, post }))
            })
            .collect();
        let out: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(out[1].as_ref().unwrap_err(), "no such region");
        let e = out[0].as_ref().unwrap_err();
        assert!(
            e.contains("MPI worker 2 could not read") && e.contains("no such region"),
            "{e}"
        );
        // A worker asked about ranks it does not hold refuses.
        let mut other = st.clone();
        other.slots = vec![0, 2, 4, 6];
        let e = serve(
            &other.encode(),
            &*mem,
            &Net {
                me: 1,
                post: Arc::default(),
            },
        )
        .unwrap_err();
        assert!(e.contains("none of which it holds"), "{e}");
    }

    #[test]
    fn work_pieces_merge_by_rank() {
        let mut w = Work::default();
        merge_work(&mut w, &encode_work(&[vec![(0, 5), (2, 7)]])).unwrap();
        merge_work(&mut w, &encode_work(&[vec![(1, 3), (3, 9)]])).unwrap();
        assert_eq!(w.phases, vec![vec![5, 3, 7, 9]]);
        assert!(merge_work(&mut w, &[1, 0, 0, 0, 1]).is_err());
    }
}
