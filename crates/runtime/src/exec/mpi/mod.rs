//! The distributed backend: the machine's ranks live in MPI worker processes, possibly on
//! other machines (`openpim run --mpi N`, docs/scale-out.md).
//!
//! The host program's process holds no DPU memory. It keeps what the SDK needs on its side,
//! as the remote backend does — each rank's queue (callbacks run here), a mirror of the
//! DPUs' programs (symbols resolve without a round trip) — and, unlike the remote backend,
//! the whole virtual clock: every operation is issued, placed and joined on this process's
//! timeline exactly as the in-process backend places it, from the same facts (a transfer's
//! shape and the measured time of its host-side byte interleaving, which runs here on the
//! program's buffers as in process; a launch's statistics, which the worker's engine
//! computes as the in-process engine does). No message or worker time enters the clock.
//!
//! Requests go to the run's gateway (an MPI process on this machine, reached over a UNIX
//! socket named by `OPENPIM_MPI`), which relays them over MPI to the worker holding the rank
//! (slot `s` is held by worker `s mod N`: [`wire::worker_of_slot`]). A call on several
//! ranks sends one message per worker at once and joins the replies, so the workers run
//! their parts in parallel.

mod link;
pub mod parts;
mod read_ahead;
mod shared;
pub mod wire;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::clock::stats::DpuRunStats;
use crate::clock::timeline;
use crate::error::{merge, Error, Result};
use crate::exec::local::rank::{print_fault_line, Pending};
use crate::exec::queued::{
    connected, lock, run_in_chunks, HostSide, Mirror, QueuedRank, RankTable,
};
use crate::exec::remote::fastpath::ReadCache;
use crate::exec::remote::protocol::{
    wire_items_of, write_items_of, InlineBufs, RankOutcome, Reply, Request, WireError, WireOp,
    WriteBufs,
};
use crate::exec::{
    effective_profile, AllocRequest, Backend, CallbackJob, RankInfo, RankOp, RankStatus, XferItem,
};
use crate::program::Program;
use crate::xfer::Place;
use link::{Delivery, Link};
use parts::Part;
use read_ahead::{Fetching, Route};
use wire::{worker_of_slot, ToWorker, BATCH_BYTES_PER_DPU};

/// The environment variable naming the gateway's socket (set by `openpim run --mpi N`).
pub const MPI_ENV: &str = "OPENPIM_MPI";

/// How long `dpu_status` waits, at most, for a rank's queued operations before answering
/// that the rank is busy (real time, not counted).
const STATUS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// The gateway socket of this process's distributed run, if it is one.
pub fn gateway_of_env() -> Option<String> {
    std::env::var(MPI_ENV).ok().filter(|s| !s.is_empty())
}

static SHARED: OnceLock<Arc<MpiBackend>> = OnceLock::new();

/// The ranks of a distributed run (one per process: [`MpiBackend::shared`]).
pub struct MpiBackend {
    path: String,
    link: OnceLock<std::result::Result<Arc<Link>, String>>,
    ranks: RankTable<MpiRank>,
    /// The broadcast buffers the workers hold.
    shared: Arc<shared::SharedBuffers>,
    /// Every part of a split rank opened so far, by worker (the report's `rank_parts`).
    split_parts: Mutex<Vec<(u32, crate::clock::report::RankPartReport)>>,
}

impl MpiBackend {
    /// The process's backend for the gateway at `path` (the first one named wins).
    pub fn shared(path: &str) -> Arc<MpiBackend> {
        Arc::clone(SHARED.get_or_init(|| {
            Arc::new(MpiBackend {
                path: path.to_string(),
                link: OnceLock::new(),
                ranks: RankTable::new("MPI"),
                shared: Arc::default(),
                split_parts: Mutex::default(),
            })
        }))
    }

    fn link(&self) -> Result<Arc<Link>> {
        connected(&self.link, || Link::connect(&self.path))
    }

    fn rank(&self, id: u32) -> Arc<MpiRank> {
        self.ranks.get(id)
    }
}

impl MpiBackend {
    /// The report's `workers`: each worker's rank slots (slot `s` on worker `s mod N`) and
    /// the parts of split ranks it held.
    fn report_workers(&self, link: &Link, nr_ranks: u32) {
        let nr_workers = link.workers.len() as u32;
        let split = lock(&self.split_parts);
        crate::clock::report::set_workers(
            link.workers
                .iter()
                .enumerate()
                .map(|(w, info)| crate::clock::report::WorkerReport {
                    mpi_rank: info.mpi_rank,
                    host: info.host.clone(),
                    pid: info.pid,
                    rank_slots: (0..nr_ranks)
                        .filter(|s| worker_of_slot(*s, nr_workers) == w as u32)
                        .collect(),
                    rank_parts: split
                        .iter()
                        .filter(|(pw, _)| *pw == w as u32)
                        .map(|(_, p)| p.clone())
                        .collect(),
                })
                .collect(),
        );
    }

    /// Whether every rank of `slots` lives whole on one worker (a collective's host step runs
    /// in the workers only then: its plan gives each worker whole ranks).
    pub fn ranks_whole(&self, slots: &[u32]) -> bool {
        slots.iter().all(|s| self.rank(*s).parts.len() == 1)
    }

    /// The run's workers (their number is what [`wire::worker_of_slot`] divides by).
    pub fn nr_workers(&self) -> Result<u32> {
        Ok(self.link()?.workers.len() as u32)
    }

    /// Runs a collective's host step in the workers that hold rank slots `slots`: `body` (the
    /// collectives library's request, opaque here) goes to each of them at once, and their
    /// answers come back in the order of their worker index. The ranks' queues are drained
    /// and their batched writes sent first (the step reads what the program wrote), and no
    /// other operation runs on them meanwhile. Nothing is placed on the clock: the caller
    /// charges the step as a local run does. What the workers sent each other for it is
    /// counted in the report's `mpi_traffic` as `collective: between workers`.
    pub fn collective(&self, slots: &[u32], body: &[u8]) -> Result<Vec<(u32, Vec<u8>)>> {
        let mut ranks: Vec<Arc<MpiRank>> = slots.iter().map(|s| self.rank(*s)).collect();
        ranks.sort_by_key(|r| r.host.id);
        ranks.dedup_by_key(|r| r.host.id);
        for r in &ranks {
            r.host.queue.wait_idle();
        }
        let _ops: Vec<MutexGuard<'_, ()>> = ranks.iter().map(|r| lock(&r.host.op)).collect();
        for r in &ranks {
            // (The step changes the ranks' memories.)
            lock(&r.cache).invalidate();
        }
        merge(ranks.iter().map(|r| r.flush()).collect())?;
        let link = self.link()?;
        if ranks.iter().any(|r| r.parts.len() > 1) {
            return Err(Error::Internal(
                "a collective's host step on the workers needs whole ranks".into(),
            ));
        }
        let mut workers: Vec<u32> = ranks.iter().map(|r| r.parts[0].worker).collect();
        workers.sort_unstable();
        workers.dedup();
        let msg = ToWorker::Collective {
            body: body.to_vec(),
        };
        let sent: Vec<(u32, Result<link::Pending>)> =
            workers.iter().map(|w| (*w, link.send(*w, &msg))).collect();
        let mut out = Vec::with_capacity(sent.len());
        let mut first_err = None;
        for (w, pending) in sent {
            match pending.and_then(link::Pending::wait) {
                Ok(Reply::Bytes(b)) => match wire::CollectiveReply::decode(&b) {
                    Some(r) => {
                        crate::clock::report::count_mpi_traffic(
                            "collective: between workers",
                            r.peer_messages,
                            r.peer_bytes,
                            0,
                        );
                        out.push((w, r.body));
                    }
                    None => {
                        first_err = first_err.or(Some(Error::Internal(
                            "malformed collective reply from an MPI worker".into(),
                        )))
                    }
                },
                Ok(other) => first_err = first_err.or(Some(unexpected(&other))),
                // A dead worker's error names it: it wins over the others' (who waited for
                // its lines in vain).
                Err(e) => {
                    if first_err.is_none() || matches!(e, Error::System(_)) {
                        first_err = Some(e);
                    }
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

/// Where a read's bytes go, for each part of `cut`: the program's buffers of the items the
/// part's outcome carries, in its order; the link delivers them there as they arrive, so `p`
/// keeps no destinations (nothing is copied out) and the cut joins no data.
fn into_program(cut: &mut parts::Cut, p: &mut Prepared) -> Delivery {
    match cut.take_read() {
        Some((len, order)) if !p.read_into.is_empty() => {
            let bufs = std::mem::take(&mut p.read_into);
            order
                .iter()
                .map(|items| {
                    (!items.is_empty())
                        .then(|| items.iter().map(|at| (bufs[*at].buf, len)).collect())
                })
                .collect()
        }
        _ => vec![None; cut.ops.len()],
    }
}

fn unexpected(r: &Reply) -> Error {
    Error::Internal(format!("unexpected reply from an MPI worker: {r:?}"))
}

/// Which part of which job each operation of a worker's message is: (job, part).
type Keys = Vec<(usize, usize)>;
/// A worker's message being put together: the worker, its operations' keys, the operations.
type Message = (u32, Keys, Vec<(u32, WireOp)>);

/// Runs one operation on each of `jobs`' ranks: each cut along its rank's parts, one message
/// per worker (`Exec` of every part it holds), all sent before any reply is awaited; each
/// job's outcome, its parts' joined ([`parts::join`]). A failed message is the error of each
/// job it carried a part of (a dead worker's, variant and message kept).
fn exchange(
    link: &Link,
    jobs: Vec<(&MpiRank, WireOp, &mut Prepared)>,
) -> Vec<std::result::Result<RankOutcome, Error>> {
    let mut cuts: Vec<(u32, parts::Cut)> = Vec::with_capacity(jobs.len());
    let mut into: Vec<Delivery> = Vec::with_capacity(jobs.len());
    for (r, wire, p) in jobs {
        let mut cut = parts::split(wire, &r.parts);
        into.push(into_program(&mut cut, p));
        cuts.push((r.host.id, cut));
    }
    // (job, part) of each operation, grouped by worker, and where its read data goes.
    let mut by_worker: Vec<Message> = Vec::new();
    let mut delivery: Vec<Delivery> = Vec::new();
    for (j, (slot, cut)) in cuts.iter_mut().enumerate() {
        for (k, op) in cut.ops.iter_mut().enumerate() {
            let Some(op) = op.take() else { continue };
            let w = cut.workers[k];
            let at = match by_worker.iter().position(|(bw, _, _)| *bw == w) {
                Some(at) => at,
                None => {
                    by_worker.push((w, Vec::new(), Vec::new()));
                    delivery.push(Vec::new());
                    by_worker.len() - 1
                }
            };
            by_worker[at].1.push((j, k));
            by_worker[at].2.push((*slot, op));
            delivery[at].push(into[j][k].take());
        }
    }
    let sent: Vec<(Keys, Result<link::Pending>)> = by_worker
        .into_iter()
        .zip(delivery)
        .map(|((w, keys, ops), into)| {
            let msg = ToWorker::Call(Request::Exec { ops });
            // SAFETY: the buffers are the program's read destinations, valid for their
            // length until the transfer has run (the transfer API's contract); every reply
            // is waited for below before this returns.
            (keys, unsafe { link.send_into(w, &msg, into) })
        })
        .collect();
    let mut got: Vec<Vec<Option<RankOutcome>>> = cuts
        .iter()
        .map(|(_, c)| (0..c.ops.len()).map(|_| None).collect())
        .collect();
    let mut failed: Vec<Option<Error>> = (0..cuts.len()).map(|_| None).collect();
    for (keys, pending) in sent {
        match pending.and_then(link::Pending::wait) {
            Ok(Reply::Exec { outcomes, .. }) if outcomes.len() == keys.len() => {
                for ((j, k), o) in keys.into_iter().zip(outcomes) {
                    got[j][k] = Some(o);
                }
            }
            other => {
                let e = match other {
                    Ok(r) => unexpected(&r),
                    Err(e) => e,
                };
                let w = WireError::from_error(&e);
                for (j, _) in keys {
                    failed[j] = failed[j].take().or(Some(w.to_error()));
                }
            }
        }
    }
    got.into_iter()
        .zip(failed)
        .map(|(got, failed)| match failed {
            Some(e) => Err(e),
            None => Ok(parts::join(got)),
        })
        .collect()
}

impl Backend for MpiBackend {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn start(&self) -> Result<()> {
        crate::exec::local::threads::thread_setting()?;
        self.link().map(|_| ())
    }

    fn alloc(&self, req: &AllocRequest) -> Result<Vec<RankInfo>> {
        let link = self.link()?;
        let machine = &req.machine;
        let nr_workers = link.workers.len() as u32;
        let mut table = self.ranks.lock();
        let free: Vec<u32> = (0..machine.nr_ranks)
            .filter(|s| !table.contains_key(s))
            .collect();
        let want = req.ranks.unwrap_or(free.len() as u32);
        if want == 0 || want as usize > free.len() {
            return Err(crate::exec::ranks_exhausted(
                &req.what,
                machine.nr_ranks,
                free.len() as u32,
            ));
        }
        let per_rank = machine.dpus_per_rank;
        let profile = effective_profile(&req.profile);
        let split =
            parts::splitting_allowed()? && crate::exec::local::served::parts_allowed(machine);
        // Every worker opens its ranks (or parts of ranks) at once.
        type Opening = (u32, u32, Vec<(Part, Result<link::Pending>)>);
        let opened: Vec<Opening> = free[..want as usize]
            .iter()
            .enumerate()
            .map(|(r, &slot)| {
                let n = match req.dpus {
                    Some(n) => per_rank.min(n - r as u32 * per_rank),
                    None => per_rank,
                };
                let home = worker_of_slot(slot, nr_workers);
                let sent = parts::parts_of(home, n, want, nr_workers, split)
                    .into_iter()
                    .map(|part| {
                        let msg = ToWorker::Open {
                            slot,
                            first_dpu: part.first,
                            nr_dpus: part.count,
                            log_budget: crate::exec::local::logs::process_budget(),
                            profile: profile.clone(),
                        };
                        (part, link.send(part.worker, &msg))
                    })
                    .collect();
                (slot, n, sent)
            })
            .collect();
        let mut infos = Vec::new();
        let mut first_err = None;
        for (slot, n, sent) in opened {
            let mut parts = Vec::with_capacity(sent.len());
            let mut failed = None;
            for (part, pending) in sent {
                match pending.and_then(link::Pending::wait) {
                    Ok(_) => parts.push(part),
                    Err(e) => failed = failed.or(Some(e)),
                }
            }
            if let Some(e) = failed {
                // The parts that did open are closed again.
                for part in parts {
                    let _ = link.call(part.worker, &ToWorker::Close { slot });
                }
                first_err = first_err.or(Some(e));
                continue;
            }
            if parts.len() > 1 {
                // Each part once, however often an allocation of its shape was made.
                let mut held = lock(&self.split_parts);
                for p in &parts {
                    let part = (
                        p.worker,
                        crate::clock::report::RankPartReport {
                            slot,
                            first_dpu: p.first,
                            dpus: p.count,
                        },
                    );
                    if !held.contains(&part) {
                        held.push(part);
                    }
                }
            }
            timeline::rank_allocated(slot, n, &machine.hardware);
            table.insert(
                slot,
                Arc::new(MpiRank {
                    parts,
                    machine: Arc::clone(machine),
                    link: Arc::clone(&link),
                    shared: Arc::clone(&self.shared),
                    host: HostSide::new(slot, n),
                    batch: Mutex::default(),
                    in_flight: Mutex::default(),
                    cache: Mutex::default(),
                }),
            );
            infos.push(RankInfo {
                id: slot,
                nr_dpus: n,
            });
        }
        self.report_workers(&link, machine.nr_ranks);
        if let Some(e) = first_err {
            // The ranks that did open are closed again.
            for i in &infos {
                table.remove(&i.id);
            }
            return Err(e);
        }
        Ok(infos)
    }

    fn free(&self, rank: u32) {
        self.ranks.free(rank);
    }

    fn execute(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        // Virtual time: the ranks' operations are issued now; the host waits for them.
        self.ranks.execute(ops, |ops, issue| {
            if ops.iter().all(|(_, op)| batchable(op)) {
                let results = ops
                    .into_iter()
                    .map(|(r, op)| timeline::with_sync_issue(issue, || r.add_to_batch(op)))
                    .collect();
                return merge(results);
            }
            // One message per worker, all sent before any reply is awaited; reads the ranks'
            // read-ahead caches hold take none.
            let link = Arc::clone(&ops[0].0.link);
            let mut wires: Vec<WireOp> = Vec::with_capacity(ops.len());
            let mut jobs: Vec<Job> = Vec::with_capacity(ops.len());
            for (r, op) in ops {
                let route = read_ahead::route(&mut lock(&r.cache), op, r.nr_dpus());
                let (op, fetching) = match route {
                    Route::Hit(op) => {
                        jobs.push(Job::Hit(r, op));
                        continue;
                    }
                    Route::Send(op) => (op, None),
                    Route::Fetch(f) => (f.op(), Some(f)),
                };
                let (wire, mut p) = r.prepare(op, false);
                if let Some(f) = &fetching {
                    // The clock charges the program's read, not the fetch.
                    p.pending = f.pending();
                }
                wires.push(r.after_batch(wire));
                jobs.push(Job::Sent(r, p, fetching));
            }
            let sent = jobs
                .iter_mut()
                .filter_map(|j| match j {
                    Job::Sent(r, p, _) => Some((&**r, p)),
                    Job::Hit(..) => None,
                })
                .zip(wires)
                .map(|((r, p), wire)| (r, wire, p))
                .collect::<Vec<_>>();
            let mut outcomes = if sent.is_empty() {
                Vec::new()
            } else {
                exchange(&link, sent)
            }
            .into_iter();
            let results = jobs
                .into_iter()
                .map(|job| {
                    let (r, done) = match job {
                        Job::Hit(r, op) => {
                            let done = timeline::with_sync_issue(issue, || r.serve_hit(op));
                            (r, done)
                        }
                        Job::Sent(r, p, fetching) => {
                            let o = outcomes.next().expect("one outcome per message");
                            if let (Some(f), Ok(o)) = (fetching, &o) {
                                if o.result.is_ok() {
                                    // SAFETY: the read's contract: its buffers are valid for
                                    // writes until it has run, which is now.
                                    unsafe { f.land(&mut lock(&r.cache)) };
                                }
                            }
                            let done = timeline::with_sync_issue(issue, || r.complete(p, o));
                            (r, done)
                        }
                    };
                    // A batch sent before this operation failed: its error is this one's.
                    merge(vec![r.settle(), done])
                })
                .collect();
            merge(results)
        })
    }

    fn enqueue(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        self.ranks.enqueue(ops)
    }

    fn spawn_detached(&self, rank: u32, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.ranks.spawn_detached(rank, job, ranks)
    }

    fn wait_idle(&self, rank: u32) {
        self.ranks.wait_idle(rank);
    }

    fn sync(&self, rank: u32) -> Result<()> {
        self.ranks.sync(rank)
    }

    fn status(&self, rank: u32) -> RankStatus {
        self.ranks.status(rank)
    }

    fn polled_status(&self, rank: u32, _ran_past: &dyn Fn(u64) -> bool) -> RankStatus {
        // A worker does not report a launch's progress while it runs: the wait is bounded
        // in real time instead, as through a daemon.
        self.ranks.polled_status(rank, STATUS_PATIENCE)
    }

    fn programs(&self, rank: u32, first: u32, count: u32) -> Vec<Option<Arc<Program>>> {
        self.ranks.programs(rank, first, count)
    }

    fn log(&self, rank: u32, dpu: u32) -> Result<Vec<u8>> {
        self.ranks.flushed(rank, |r| {
            let Some(part) = r.parts.iter().find(|p| p.holds(dpu)) else {
                return Err(Error::Internal(format!(
                    "no DPU {dpu} in rank {}",
                    r.host.id
                )));
            };
            let msg = ToWorker::Call(Request::Log {
                rank: r.host.id,
                dpu: dpu - part.first,
            });
            match r.link.call(part.worker, &msg) {
                Ok(Reply::Bytes(b)) => Ok(b),
                Ok(other) => Err(unexpected(&other)),
                Err(e) => Err(e),
            }
        })
    }

    fn run_stats(&self, rank: u32, first: u32, count: u32) -> Vec<Option<DpuRunStats>> {
        self.ranks.flushed(rank, |r| {
            // Each part's DPUs of the range, asked of all parts at once, in DPU order.
            let end = first.saturating_add(count);
            let asked: Vec<(u32, Result<link::Pending>)> = r
                .parts
                .iter()
                .filter_map(|p| {
                    let (lo, hi) = (first.max(p.first), end.min(p.first + p.count));
                    (lo < hi).then(|| {
                        let msg = ToWorker::Call(Request::RunStats {
                            rank: r.host.id,
                            first: lo - p.first,
                            count: hi - lo,
                        });
                        (hi - lo, r.link.send(p.worker, &msg))
                    })
                })
                .collect();
            let mut out = Vec::with_capacity(count as usize);
            for (n, pending) in asked {
                match pending.and_then(link::Pending::wait) {
                    Ok(Reply::Stats(s)) if s.len() == n as usize => out.extend(s),
                    _ => out.extend(std::iter::repeat_n(None, n as usize)),
                }
            }
            out.resize(count as usize, None);
            out
        })
    }
}

/// An operation of a synchronous call: a read its rank's read-ahead cache serves, or one sent
/// (with its preparation, and the fetch it became, if it did).
enum Job {
    Hit(Arc<MpiRank>, RankOp),
    Sent(Arc<MpiRank>, Prepared, Option<Box<Fetching>>),
}

/// A rank the workers run for this process.
struct MpiRank {
    /// The workers holding it (indices in the worker table) and their DPUs: one part for a
    /// whole rank, or a part per worker of a rank split over several ([`parts`]).
    parts: Vec<Part>,
    machine: Arc<openpim_machine::MachineConfig>,
    link: Arc<Link>,
    /// The run's broadcast buffers (the backend's).
    shared: Arc<shared::SharedBuffers>,
    /// The queue, the program mirror (the loads and IRAM writes sent to the worker), the
    /// operation lock; its id is the rank's slot (this process's name for it, and the
    /// worker's).
    host: HostSide,
    /// Small writes placed on the clock but not sent yet: they travel with the rank's next
    /// operation (nothing can observe a DPU's memory before it), as the remote backend's.
    batch: Mutex<(Vec<WireOp>, usize)>,
    /// A full batch sent without waiting for it (at most one: the next full batch waits for
    /// it first; one message per part). The worker applies it before the rank's later
    /// requests (it runs one rank's requests in arrival order); its error is reported by the
    /// rank's next operation.
    in_flight: Mutex<Vec<link::Pending>>,
    /// The bytes of the rank's latest synchronous reads and of what they fetched ahead
    /// ([`read_ahead`]).
    cache: Mutex<ReadCache>,
}

/// A batch is sent once it holds this many bytes.
const BATCH_BYTES: usize = 16 << 20;

/// Whether `op` may wait in the rank's batch: a small write, not to IRAM (the program mirror
/// follows IRAM writes once they have run).
fn batchable(op: &RankOp) -> bool {
    match op {
        RankOp::Write { len, items } => {
            *len <= BATCH_BYTES_PER_DPU && !items.iter().any(|i| matches!(i.place, Place::Iram(_)))
        }
        _ => false,
    }
}

impl Drop for MpiRank {
    fn drop(&mut self) {
        let _ = self.flush();
        // The workers wipe the rank; a worker that is gone has nothing left to wipe.
        let close = ToWorker::Close { slot: self.host.id };
        let sent: Vec<_> = self
            .parts
            .iter()
            .map(|p| self.link.send(p.worker, &close))
            .collect();
        for pending in sent {
            let _ = pending.and_then(link::Pending::wait);
        }
        timeline::rank_released(self.host.id);
    }
}

/// An operation turned into its message, with what its reply needs.
struct Prepared {
    pending: Pending,
    /// A write's use of a broadcast buffer, until its reply is here.
    _shared: Option<shared::Use>,
    /// A read's destinations, in the items' order.
    read_into: Vec<XferItem>,
    read_len: usize,
    mirror: Mirror,
}

impl MpiRank {
    /// An operation as its message: a write's distinct buffers in it (a broadcast travels
    /// once per worker), copied now when `copy_writes` (the message outlives the call: a
    /// batch), read where they are when the message is encoded otherwise; a read's
    /// destinations kept for the reply.
    fn prepare(&self, op: RankOp, copy_writes: bool) -> (WireOp, Prepared) {
        let pending = Pending::of(&op);
        let mut shared_use = None;
        let mut read_into = Vec::new();
        let mut read_len = 0;
        let mut mirror = Mirror::None;
        let wire = match op {
            RankOp::Load { program, dpus } => {
                let wire = WireOp::load(&program, &dpus);
                mirror = Mirror::Load(program, dpus);
                wire
            }
            RankOp::Write { len, items } => {
                let (wire_items, srcs) = write_items_of(&items);
                // SAFETY: the unsafe API that accepted the items' buffers requires them to be
                // valid for reads of `len` bytes until this transfer has run.
                mirror = unsafe { Mirror::of_write(len, &items) };
                // SAFETY: as above, for every distinct buffer.
                let src = |p: *mut u8| unsafe { std::slice::from_raw_parts(p.cast_const(), len) };
                // One buffer for several DPUs: broadcast to every worker once, named here.
                if srcs.len() == 1 && items.len() > 1 && matches!(mirror, Mirror::None) {
                    shared_use = self.shared.take(&self.link, src(srcs[0]));
                }
                let bufs = match &shared_use {
                    Some(u) => WriteBufs::Shared(vec![u.key]),
                    None if copy_writes => {
                        // SAFETY: as above.
                        WriteBufs::Inline(unsafe { InlineBufs::copied(len, &srcs) })
                    }
                    // SAFETY: as above; a message that is not a batch is encoded and sent
                    // before the transfer is reported done (`run_one`, `send_queue`,
                    // `execute`), and dropped by then.
                    None => WriteBufs::Inline(unsafe { InlineBufs::borrowed(len, &srcs) }),
                };
                WireOp::Write {
                    len: len as u32,
                    items: wire_items,
                    bufs,
                }
            }
            RankOp::Read { len, items } => {
                let wire_items = wire_items_of(&items);
                read_into = items;
                read_len = len;
                WireOp::Read {
                    len: len as u32,
                    items: wire_items,
                    staged: None,
                }
            }
            RankOp::Launch { dpus } => WireOp::Launch {
                dpus: dpus.into_iter().map(|(d, _)| d).collect(),
            },
            RankOp::Callback(_) => unreachable!("callbacks run in the host program"),
        };
        let p = Prepared {
            pending,
            _shared: shared_use,
            read_into,
            read_len,
            mirror,
        };
        (wire, p)
    }

    /// Applies a worker's outcome: a read's bytes into the program's buffers, the program
    /// mirror, the launch's statistics; then the operation on the virtual clock, with the
    /// host-side interleaving of its bytes performed here, on the program's buffers, as the
    /// in-process backend performs it.
    fn complete(&self, p: Prepared, o: std::result::Result<RankOutcome, Error>) -> Result<()> {
        let hw = &self.machine.hardware;
        let o = match o {
            Ok(o) => o,
            Err(e) => {
                // Keep the clock's bookkeeping of the issued operation straight.
                timeline::finish(self.host.id, hw, timeline::OpDone::Other);
                return Err(e);
            }
        };
        let mut result = o.result.map_err(|w| w.to_error());
        if result.is_ok() && p.read_len > 0 && !p.read_into.is_empty() {
            // (The link delivers every read's bytes into its buffers: `into_program`.)
            result = Err(Error::Internal(
                "a read's bytes from an MPI worker were not delivered".into(),
            ));
        }
        if let (Err(e), Pending::Launch) = (&result, &p.pending) {
            print_fault_line(e);
        }
        if result.is_ok() {
            if let Err(e) = self.host.mirror(p.mirror) {
                timeline::finish(self.host.id, hw, timeline::OpDone::Other);
                return Err(e);
            }
        }
        self.host.record_launch(o.facts.launch);
        let host_ns = match &p.pending {
            Pending::Xfer { dir, len, items } => {
                let topology = &hw.topology;
                let kind = crate::exec::local::rank::classify(items);
                let bus_ns = timeline::modeled_xfer_ns(
                    self.host.id,
                    hw,
                    *dir,
                    kind,
                    *len,
                    items.len() as u32,
                );
                // SAFETY: the transfer's contract: every item's buffer is valid for `len`
                // bytes until the transfer has run, which is now.
                unsafe {
                    crate::exec::local::interleave::measured_for(
                        bus_ns,
                        *len,
                        items,
                        topology.dpus_per_rank,
                        topology.chips_per_rank,
                        kind == openpim_machine::XferKind::Broadcast,
                    )
                }
            }
            _ => 0,
        };
        timeline::finish(self.host.id, hw, p.pending.done_after(host_ns));
        result
    }

    /// A small write into the batch: on the clock now, as the in-process backend places it
    /// (its interleaving performed here, on the program's buffers), its bytes copied; sent
    /// with the rank's next operation, or now if the batch is full.
    fn add_to_batch(&self, op: RankOp) -> Result<()> {
        lock(&self.cache).invalidate();
        let bytes = op.xfer_bytes() as usize;
        let (wire, p) = self.prepare(op, true);
        let outcome = RankOutcome {
            result: Ok(()),
            facts: crate::exec::OpFacts::default(),
            data: Vec::new(),
        };
        self.complete(p, Ok(outcome))?;
        let full = {
            let mut b = lock(&self.batch);
            b.0.push(wire);
            b.1 += bytes;
            b.1 >= BATCH_BYTES
        };
        if full {
            // The worker applies it while the program fills the next one.
            self.send_batch()
        } else {
            Ok(())
        }
    }

    /// Sends the batched writes without waiting for them, after the batch in flight has been
    /// answered (one in flight per rank: the program's memory for batches stays bounded);
    /// that batch's error, if any.
    fn send_batch(&self) -> Result<()> {
        let ops = {
            let mut b = lock(&self.batch);
            b.1 = 0;
            std::mem::take(&mut b.0)
        };
        let before = self.settle();
        if ops.is_empty() {
            return before;
        }
        let cut = parts::split(WireOp::Batch(ops), &self.parts);
        let mut results = vec![before];
        let mut in_flight = lock(&self.in_flight);
        for (op, worker) in cut.ops.into_iter().zip(cut.workers) {
            let Some(op) = op else { continue };
            let msg = ToWorker::Call(Request::Exec {
                ops: vec![(self.host.id, op)],
            });
            match self.link.send(worker, &msg) {
                Ok(p) => in_flight.push(p),
                Err(e) => results.push(Err(e)),
            }
        }
        merge(results)
    }

    /// The rank's DPUs, over all its parts.
    fn nr_dpus(&self) -> u32 {
        self.parts.iter().map(|p| p.count).sum()
    }

    /// A read whose bytes the read-ahead cache holds: copied into the program's buffers, and
    /// on the clock as the in-process backend places it.
    fn serve_hit(&self, op: RankOp) -> Result<()> {
        if let RankOp::Read { len, items } = &op {
            // SAFETY: the read's contract: its buffers are valid for writes until it has
            // run, which is now.
            unsafe { lock(&self.cache).serve(*len, items) };
        }
        let p = Prepared {
            pending: Pending::of(&op),
            _shared: None,
            read_into: Vec::new(),
            read_len: 0,
            mirror: Mirror::None,
        };
        let outcome = RankOutcome {
            result: Ok(()),
            facts: crate::exec::OpFacts::default(),
            data: Vec::new(),
        };
        self.complete(p, Ok(outcome))
    }

    /// Waits for the batch in flight, if any (each part's): its error.
    fn settle(&self) -> Result<()> {
        let pending = std::mem::take(&mut *lock(&self.in_flight));
        let results = pending
            .into_iter()
            .map(|p| match p.wait()? {
                Reply::Exec { mut outcomes, .. } if outcomes.len() == 1 => outcomes
                    .pop()
                    .expect("one")
                    .result
                    .map_err(|w| w.to_error()),
                other => Err(unexpected(&other)),
            })
            .collect();
        merge(results)
    }

    /// `wire` after the batched writes, if any (one message).
    fn after_batch(&self, wire: WireOp) -> WireOp {
        let mut b = lock(&self.batch);
        if b.0.is_empty() {
            return wire;
        }
        let mut ops = std::mem::take(&mut b.0);
        b.1 = 0;
        ops.push(wire);
        WireOp::Batch(ops)
    }
}

impl QueuedRank for MpiRank {
    fn host(&self) -> &HostSide {
        &self.host
    }

    /// Sends the batched writes now and waits until the worker has applied every batch;
    /// the first error among them.
    fn flush(&self) -> Result<()> {
        let sent = self.send_batch();
        merge(vec![sent, self.settle()])
    }
    /// Runs one operation on the worker and waits for it (from the rank's queue).
    fn run_one(&self, op: RankOp) -> Result<()> {
        lock(&self.cache).invalidate();
        if batchable(&op) {
            return self.add_to_batch(op);
        }
        let (wire, mut p) = self.prepare(op, false);
        let wire = self.after_batch(wire);
        let outcome = exchange(&self.link, vec![(self, wire, &mut p)])
            .pop()
            .expect("one job, one outcome");
        let done = self.complete(p, outcome);
        // The batch in flight was applied before this operation (its reply came first).
        merge(vec![self.settle(), done])
    }

    /// Small writes at the head of the operations join the batch; the others travel in one
    /// message per [`crate::exec::queued::MAX_QUEUE_BYTES`] (the worker runs them in
    /// order), instead of one round trip each.
    fn run_queued(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
        run_in_chunks(
            ops,
            batchable,
            |op| self.add_to_batch(op),
            |chunk| self.send_queue(chunk),
        )
    }
}

impl MpiRank {
    /// Sends operations in one message and completes each, in order.
    fn send_queue(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
        lock(&self.cache).invalidate();
        match ops.len() {
            0 => return Vec::new(),
            1 => return ops.into_iter().map(|op| self.run_one(op)).collect(),
            _ => {}
        }
        let n = ops.len();
        let (wires, mut prepared): (Vec<WireOp>, Vec<Prepared>) =
            ops.into_iter().map(|op| self.prepare(op, false)).unzip();
        let mut wires = wires;
        let first = wires.remove(0);
        wires.insert(0, self.after_batch(first));
        // Each part gets the queue's operations cut to its DPUs, in order (an empty batch,
        // which does nothing, where an operation has nothing for it), in one message.
        let mut cuts: Vec<parts::Cut> = wires
            .into_iter()
            .map(|w| parts::split(w, &self.parts))
            .collect();
        let mut into: Vec<Delivery> = cuts
            .iter_mut()
            .zip(&mut prepared)
            .map(|(c, p)| into_program(c, p))
            .collect();
        let sent: Vec<Option<Result<link::Pending>>> = (0..self.parts.len())
            .map(|k| {
                if cuts.iter().all(|c| c.ops[k].is_none()) {
                    return None;
                }
                let ops = cuts
                    .iter_mut()
                    .map(|c| c.ops[k].take().unwrap_or(WireOp::Batch(Vec::new())))
                    .collect();
                let msg = ToWorker::Call(Request::Queue {
                    rank: self.host.id,
                    ops,
                });
                let delivery = into.iter_mut().map(|d| d[k].take()).collect();
                // SAFETY: as in `exchange`: the program's read destinations, and every reply
                // is waited for below.
                Some(unsafe { self.link.send_into(self.parts[k].worker, &msg, delivery) })
            })
            .collect();
        let mut got: Vec<Vec<Option<RankOutcome>>> = (0..n)
            .map(|_| (0..self.parts.len()).map(|_| None).collect())
            .collect();
        let mut failed: Option<WireError> = None;
        for (k, pending) in sent.into_iter().enumerate() {
            let Some(pending) = pending else { continue };
            match pending.and_then(link::Pending::wait) {
                Ok(Reply::Exec { outcomes, .. }) if outcomes.len() == n => {
                    for (i, o) in outcomes.into_iter().enumerate() {
                        got[i][k] = Some(o);
                    }
                }
                Ok(other) => failed = failed.or(Some(WireError::from_error(&unexpected(&other)))),
                Err(e) => failed = failed.or(Some(WireError::from_error(&e))),
            }
        }
        let outcomes: Vec<std::result::Result<RankOutcome, Error>> = got
            .into_iter()
            .map(|got| match &failed {
                Some(w) => Err(w.to_error()),
                None => Ok(parts::join(got)),
            })
            .collect();
        let mut results: Vec<Result<()>> = prepared
            .into_iter()
            .zip(outcomes)
            .map(|(p, o)| self.complete(p, o))
            .collect();
        // A batch in flight before them failed: the first operation reports it.
        if let Err(e) = self.settle() {
            results[0] = merge(vec![Err(e), std::mem::replace(&mut results[0], Ok(()))]);
        }
        results
    }
}
