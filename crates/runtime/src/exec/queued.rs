//! The host side of ranks run out of process, shared by the backends that hold their ranks
//! elsewhere ([`crate::exec::remote`]: a daemon; [`crate::exec::mpi`]: MPI workers).
//!
//! Such a backend keeps in the host program's process what the SDK needs without a round
//! trip: each rank's queue (callbacks run here: [`crate::exec::queue`]), a mirror of its
//! DPUs' programs (the loads and IRAM writes sent), whether its last launch faulted, and the
//! lock its operations take. That state ([`HostSide`]), the table of a backend's ranks
//! ([`RankTable`]) and the [`crate::exec::Backend`] calls answered from them alone are the
//! same for both backends, and live here; how an operation reaches the rank is each
//! backend's own ([`QueuedRank`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::clock::stats::{self, LaunchRecord};
use crate::clock::timeline;
use crate::error::{Error, Result};
use crate::exec::queue::{RankQueue, RunsOps};
use crate::exec::{call_shape, CallbackJob, RankOp, RankStatus, XferItem};
use crate::program::Program;
use crate::xfer::Place;

/// Transfers' bytes in one message of queued operations at most (beyond, the queue's
/// operations go in several: their bytes may travel in the message).
pub(crate) const MAX_QUEUE_BYTES: usize = 64 << 20;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connection to the ranks' holder (the daemon's socket, the MPI gateway's) in `cell`:
/// made by `connect` on first use, then kept, and so is a failure (every later call reports
/// it again, as the system error it was).
pub(crate) fn connected<T>(
    cell: &OnceLock<std::result::Result<Arc<T>, String>>,
    connect: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    match cell.get_or_init(|| connect().map(Arc::new).map_err(|e| e.to_string())) {
        Ok(c) => Ok(Arc::clone(c)),
        Err(e) => Err(Error::System(
            e.strip_prefix("system error: ").unwrap_or(e).to_string(),
        )),
    }
}

/// What the host program's process keeps of a rank run elsewhere.
pub(crate) struct HostSide {
    /// The rank as this process names it.
    pub(crate) id: u32,
    pub(crate) queue: RankQueue,
    /// The DPUs' programs as the rank's holder has them (the loads and IRAM writes sent).
    programs: Mutex<Vec<Option<Arc<Program>>>>,
    faulted: AtomicBool,
    /// Held by each operation on the rank from its preparation to its completion (they
    /// share what the backend keeps per rank beside this, e.g. its batch of writes).
    pub(crate) op: Mutex<()>,
}

/// A load's program, or IRAM writes' (DPU, place, bytes), for the program mirror.
pub(crate) enum Mirror {
    None,
    Load(Arc<Program>, Vec<u32>),
    Iram(Vec<(u32, u32, Vec<u8>)>),
}

impl Mirror {
    /// What a write does to the mirror: its IRAM writes' bytes (`Mirror::None` when it
    /// writes no IRAM), copied now, as they are sent.
    ///
    /// # Safety
    ///
    /// Every item's buffer is valid for reads of `len` bytes.
    pub(crate) unsafe fn of_write(len: usize, items: &[XferItem]) -> Mirror {
        let iram: Vec<(u32, u32, Vec<u8>)> = items
            .iter()
            .filter_map(|i| match i.place {
                Place::Iram(a) => {
                    // SAFETY: the caller's contract.
                    let src = unsafe { std::slice::from_raw_parts(i.buf.0.cast_const(), len) };
                    Some((i.dpu, a.0, src.to_vec()))
                }
                _ => None,
            })
            .collect();
        if iram.is_empty() {
            Mirror::None
        } else {
            Mirror::Iram(iram)
        }
    }
}

impl HostSide {
    /// Rank `id`, with `nr_dpus` DPUs and no program loaded.
    pub(crate) fn new(id: u32, nr_dpus: u32) -> HostSide {
        HostSide {
            id,
            queue: RankQueue::new(id),
            programs: Mutex::new(vec![None; nr_dpus as usize]),
            faulted: AtomicBool::new(false),
            op: Mutex::default(),
        }
    }

    /// The program mirror after a load or IRAM writes (that have run).
    pub(crate) fn mirror(&self, m: Mirror) -> Result<()> {
        let mut programs = lock(&self.programs);
        match m {
            Mirror::None => {}
            Mirror::Load(program, dpus) => {
                for d in dpus {
                    if let Some(slot) = programs.get_mut(d as usize) {
                        *slot = Some(Arc::clone(&program));
                    }
                }
            }
            Mirror::Iram(writes) => {
                for (dpu, offset, bytes) in writes {
                    if let Some(Some(old)) = programs.get(dpu as usize) {
                        programs[dpu as usize] = Some(old.with_patched_text(offset, &bytes)?);
                    }
                }
            }
        }
        Ok(())
    }

    /// A launch's statistics as the rank's holder reported them (if the operation was one):
    /// recorded under this process's name for the rank, and its faults kept for `status`.
    pub(crate) fn record_launch(&self, launch: Option<LaunchRecord>) {
        if let Some(mut record) = launch {
            record.rank = self.id;
            self.faulted.store(record.faults > 0, Ordering::Release);
            stats::record_launch(record);
        }
    }
}

/// A rank run out of process, as the shared code sees it: its host side, and how its
/// operations reach it (the backend's own). Every such rank runs its queue's operations
/// under its operation lock.
pub(crate) trait QueuedRank: Send + Sync + 'static {
    fn host(&self) -> &HostSide;

    /// Sends the rank's batched writes (small writes placed on the clock but not sent yet:
    /// they travel with the rank's next operation) now; the first error among them. The
    /// operation lock is held.
    fn flush(&self) -> Result<()>;

    /// Runs one operation (not a callback) and waits for it; the operation lock is held.
    fn run_one(&self, op: RankOp) -> Result<()>;

    /// Runs operations queued one after the other (no callback among them), as
    /// [`RunsOps::run_ops`]; the operation lock is held.
    fn run_queued(&self, ops: Vec<RankOp>) -> Vec<Result<()>>;

    /// As [`RunsOps::may_wait`].
    fn may_wait(&self, _op: &RankOp) -> bool {
        false
    }
}

impl<R: QueuedRank> RunsOps for R {
    fn run_op(&self, op: RankOp) -> Result<()> {
        match op {
            RankOp::Callback(job) => self.host().queue.run_callback(job),
            op => {
                let _op = lock(&self.host().op);
                self.run_one(op)
            }
        }
    }

    fn run_ops(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
        let _op = lock(&self.host().op);
        self.run_queued(ops)
    }

    fn may_wait(&self, op: &RankOp) -> bool {
        QueuedRank::may_wait(self, op)
    }
}

/// Operations queued on a rank, in order, each whatever the outcome of the ones before: the
/// small writes at their head (`batchable`) join the rank's batch (`add_to_batch`); the
/// others go to `send` in chunks of at most [`MAX_QUEUE_BYTES`] of transfers (a chunk of one
/// operation too: `send` runs it alone if it likes), instead of one round trip each.
pub(crate) fn run_in_chunks(
    ops: Vec<RankOp>,
    batchable: impl Fn(&RankOp) -> bool,
    mut add_to_batch: impl FnMut(RankOp) -> Result<()>,
    mut send: impl FnMut(Vec<RankOp>) -> Vec<Result<()>>,
) -> Vec<Result<()>> {
    let mut results = Vec::with_capacity(ops.len());
    let mut chunk: Vec<RankOp> = Vec::new();
    let mut bytes = 0;
    for op in ops {
        if chunk.is_empty() && batchable(&op) {
            results.push(add_to_batch(op));
            continue;
        }
        let b = op.xfer_bytes() as usize;
        if !chunk.is_empty() && bytes + b > MAX_QUEUE_BYTES {
            results.extend(send(std::mem::take(&mut chunk)));
            bytes = 0;
        }
        bytes += b;
        chunk.push(op);
    }
    if !chunk.is_empty() {
        results.extend(send(chunk));
    }
    results
}

/// A backend's ranks, by the number this process knows them by.
pub(crate) struct RankTable<R> {
    ranks: Mutex<HashMap<u32, Arc<R>>>,
    /// The backend, as a missing rank's panic names it ("remote", "MPI").
    kind: &'static str,
}

impl<R: QueuedRank> RankTable<R> {
    pub(crate) fn new(kind: &'static str) -> RankTable<R> {
        RankTable {
            ranks: Mutex::new(HashMap::new()),
            kind,
        }
    }

    /// The table, for an allocation (held while it is decided which numbers are free).
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<u32, Arc<R>>> {
        lock(&self.ranks)
    }

    /// An allocated rank (the SDK layer names only those).
    pub(crate) fn get(&self, id: u32) -> Arc<R> {
        match self.lock().get(&id) {
            Some(r) => Arc::clone(r),
            None => panic!("rank {id} is not allocated by the {} backend", self.kind),
        }
    }

    /// [`crate::exec::Backend::free`]: the rank is released (by its holder too) when its
    /// last queued operation is done; transfers waiting in its queue run now.
    pub(crate) fn free(&self, rank: u32) {
        let r = self.lock().remove(&rank);
        if let Some(r) = &r {
            r.host().queue.flush();
        }
        drop(r);
    }

    /// [`crate::exec::Backend::execute`] up to what goes over the wire: the ranks' queued
    /// work done, their operation locks taken (in the ranks' order, so that two calls on
    /// overlapping ranks cannot deadlock), the operations issued now on the virtual clock
    /// (the host joins the ranks once `run` returns); `run` gets the operations in the
    /// ranks' order and their issue.
    pub(crate) fn execute(
        &self,
        ops: Vec<(u32, RankOp)>,
        run: impl FnOnce(Vec<(Arc<R>, RankOp)>, timeline::Issue) -> Result<()>,
    ) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let shape = call_shape(&ops);
        let mut ops: Vec<(Arc<R>, RankOp)> =
            ops.into_iter().map(|(id, op)| (self.get(id), op)).collect();
        for (r, _) in &ops {
            r.host().queue.wait_idle();
        }
        ops.sort_by_key(|(r, _)| r.host().id);
        let held: Vec<Arc<R>> = ops.iter().map(|(r, _)| Arc::clone(r)).collect();
        let _ops: Vec<MutexGuard<'_, ()>> = held.iter().map(|r| lock(&r.host().op)).collect();
        let issue = timeline::issue_now(shape);
        let _join = timeline::JoinOnDrop(held.iter().map(|r| r.host().id).collect());
        run(ops, issue)
    }

    /// Runs `f` on the rank for a request about its DPUs' state (a launch's log or
    /// statistics): with its operation lock held, after its batched writes (whose error is
    /// reported by the rank's next operation), so that it sees what the program did.
    pub(crate) fn flushed<T>(&self, rank: u32, f: impl FnOnce(&R) -> T) -> T {
        let r = self.get(rank);
        let _op = lock(&r.host().op);
        let _ = r.flush();
        f(&r)
    }

    /// [`crate::exec::Backend::enqueue`].
    pub(crate) fn enqueue(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        timeline::set_call_shape(call_shape(&ops));
        let queued = ops.into_iter().try_for_each(|(id, op)| {
            let r = self.get(id);
            r.host()
                .queue
                .enqueue(Arc::clone(&r) as Arc<dyn RunsOps>, op)
        });
        timeline::set_call_shape(Default::default());
        queued
    }

    /// [`crate::exec::Backend::spawn_detached`].
    pub(crate) fn spawn_detached(
        &self,
        rank: u32,
        job: CallbackJob,
        ranks: Vec<u32>,
    ) -> Result<()> {
        self.get(rank).host().queue.spawn_detached(job, ranks)
    }

    /// [`crate::exec::Backend::wait_idle`].
    pub(crate) fn wait_idle(&self, rank: u32) {
        self.get(rank).host().queue.wait_idle();
    }

    /// [`crate::exec::Backend::sync`].
    pub(crate) fn sync(&self, rank: u32) -> Result<()> {
        self.get(rank).host().queue.sync()
    }

    /// [`crate::exec::Backend::status`].
    pub(crate) fn status(&self, rank: u32) -> RankStatus {
        let r = self.get(rank);
        RankStatus {
            idle: r.host().queue.is_idle(),
            faulted: r.host().faulted.load(Ordering::Acquire),
        }
    }

    /// [`crate::exec::Backend::polled_status`] for a backend whose ranks' holder does not
    /// report a launch's progress while it runs: the wait for the rank's queued operations
    /// is bounded in real time (`patience`) instead.
    pub(crate) fn polled_status(&self, rank: u32, patience: Duration) -> RankStatus {
        let r = self.get(rank);
        RankStatus {
            idle: r.host().queue.settle(&|| false, Some(patience)),
            faulted: r.host().faulted.load(Ordering::Acquire),
        }
    }

    /// [`crate::exec::Backend::programs`], from the mirror.
    pub(crate) fn programs(&self, rank: u32, first: u32, count: u32) -> Vec<Option<Arc<Program>>> {
        let r = self.get(rank);
        let p = lock(&r.host().programs);
        p[first as usize..(first + count) as usize].to_vec()
    }
}
