//! A rank's queue of asynchronous operations, shared by every backend.
//!
//! Operations queued on a rank run in order on the rank's own worker thread (spawned on first
//! use); user callbacks run in the host process in that order, NONBLOCKING ones on their own
//! thread. The queue counts what is pending so that `wait_idle` and `sync` can wait, keeps
//! the first asynchronous error for the next `sync`, and knows when its worker is inside a
//! blocking callback (a synchronous call made by that callback must not wait for it). How an
//! operation runs is the backend's business ([`RunsOps`]): on this process's DPU memories
//! (`exec::local`) or through a daemon (`exec::remote`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::clock::timeline;
use crate::context::{as_callback_of, inside_any_callback, inside_callback_of};
use crate::error::{panic_message, Error, Result};
use crate::exec::{CallbackJob, RankOp};

/// A rank as its queue's worker sees it: something that runs one operation now.
pub(crate) trait RunsOps: Send + Sync + 'static {
    /// Runs `op` (a callback through [`RankQueue::run_callback`]).
    fn run_op(&self, op: RankOp) -> Result<()>;

    /// Runs operations queued one after the other (no callback among them), in order, each
    /// whatever the outcome of the ones before; their results in order. A backend that can
    /// start them together does (the remote backend sends them in one message).
    fn run_ops(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
        ops.into_iter().map(|op| self.run_op(op)).collect()
    }

    /// Whether `op` may wait in the queue until the program synchronizes with the rank (or
    /// an operation that may not wait is queued after it), so that it runs together with
    /// what follows it. Nothing can observe a queued transfer before then.
    fn may_wait(&self, _op: &RankOp) -> bool {
        false
    }
}

/// At most this many queued operations are handed to the rank at once.
const MAX_GROUP: usize = 256;

/// A queued operation with the rank it runs on.
type Job = (Arc<dyn RunsOps>, RankOp);

#[derive(Default)]
struct QueueState {
    /// Queued or running operations.
    pending: usize,
    /// Running NONBLOCKING callbacks.
    detached: usize,
    /// Blocking callbacks the worker is executing now (0 or 1): while one runs, everything
    /// queued before it is done and nothing queued after it can start.
    in_callback: usize,
    /// First error of an asynchronous operation, reported by the next sync.
    error: Option<Error>,
    /// Threads waiting for the queue (`wait_idle`, `sync`): operations that may wait do not.
    waiters: usize,
    /// Set by `is_idle` (a program polling `dpu_status`) and `flush`: operations waiting in
    /// the queue run now.
    flush: bool,
    /// The worker is holding operations that may wait ([`Counts::hold`]).
    holding: bool,
    /// Blocking callbacks queued and not finished, among `pending` (user code:
    /// [`Counts::settle`] does not wait for them).
    callbacks: usize,
}

/// What the rank's queue holds, shared with its worker thread.
pub(crate) struct Counts {
    id: u32,
    state: Mutex<QueueState>,
    changed: Condvar,
}

/// The queue of one rank (slot `id`), owned by the rank: dropping it ends the worker thread
/// once the operations queued so far have run.
pub(crate) struct RankQueue {
    counts: Arc<Counts>,
    sender: Mutex<Option<mpsc::Sender<Job>>>,
}

impl std::ops::Deref for RankQueue {
    type Target = Counts;
    fn deref(&self) -> &Counts {
        &self.counts
    }
}

impl RankQueue {
    pub(crate) fn new(id: u32) -> RankQueue {
        RankQueue {
            counts: Arc::new(Counts {
                id,
                state: Mutex::default(),
                changed: Condvar::new(),
            }),
            sender: Mutex::new(None),
        }
    }
}

impl Counts {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn finish(&self, result: Result<()>, detached: bool) {
        timeline::background_finished();
        let mut q = self.lock();
        if detached {
            q.detached -= 1;
        } else {
            q.pending -= 1;
        }
        if let Err(e) = result {
            q.error.get_or_insert(e);
        }
        self.changed.notify_all();
    }

    /// Waits until no queued operation is left (not counting NONBLOCKING callbacks).
    ///
    /// From inside a callback (of any rank), a rank whose worker is itself blocked in a
    /// callback counts as idle: that callback may be waiting for the caller's own rank, so
    /// waiting for it would deadlock (two per-rank callbacks that each make a synchronous
    /// call on the whole set). Nothing else can run on that rank meanwhile, and callbacks
    /// hold no rank lock, so the caller's operation runs safely in between.
    pub(crate) fn wait_idle(&self) {
        if inside_callback_of(self.id) {
            return;
        }
        let from_callback = inside_any_callback();
        let mut q = self.lock();
        q.waiters += 1;
        if q.holding {
            self.changed.notify_all();
        }
        while q.pending > 0 && !(from_callback && q.in_callback > 0) {
            q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        q.waiters -= 1;
    }

    /// Waits for every queued operation and callback; returns (and clears) the first error
    /// of an asynchronous operation.
    ///
    /// From inside a callback, callbacks of other ranks are not waited for (see
    /// [`Counts::wait_idle`]).
    pub(crate) fn sync(&self) -> Result<()> {
        if inside_callback_of(self.id) {
            return Ok(());
        }
        let from_callback = inside_any_callback();
        let mut q = self.lock();
        q.waiters += 1;
        if q.holding {
            self.changed.notify_all();
        }
        while if from_callback {
            q.pending > 0 && q.in_callback == 0
        } else {
            q.pending > 0 || q.detached > 0
        } {
            q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        q.waiters -= 1;
        match q.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// True when nothing is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        let mut q = self.lock();
        if q.pending > 0 && !q.flush {
            // Polled: what waits in the queue runs now.
            q.flush = true;
            if q.holding {
                self.changed.notify_all();
            }
        }
        q.pending == 0 && q.detached == 0
    }

    /// Whether the queue is idle, for a program polling the rank (`dpu_status`) whose answer
    /// must not depend on how fast the emulator runs: while rank operations are queued or
    /// running ahead of any user callback, waits for them to be done, or until `ran_past`
    /// says the one running now ends after the program's present (a polled rank is then busy
    /// whatever the emulator does next), or until `patience` (real time) has passed. Waiting
    /// here is the emulator's time, never the program's. User code is never waited for (it
    /// may be waiting for the poller): with a callback running (or a NONBLOCKING one), or
    /// from inside a callback, answers at once, as [`Counts::is_idle`].
    pub(crate) fn settle(&self, ran_past: &dyn Fn() -> bool, patience: Option<Duration>) -> bool {
        if inside_any_callback() {
            return self.is_idle();
        }
        let start = Instant::now();
        // Often enough that a launch whose simulation has passed the present is seen soon:
        // the engine reports progress every 2^20 simulated cycles.
        let poll = Duration::from_micros(200);
        loop {
            {
                let mut q = self.lock();
                if q.pending == 0 && q.detached == 0 {
                    return true;
                }
                if q.pending <= q.callbacks || q.in_callback > 0 || q.detached > 0 {
                    // Only callbacks left, or one running: no rank operation to wait for
                    // ahead of user code.
                    drop(q);
                    return self.is_idle();
                }
                if !q.flush {
                    // What waits in the queue runs now, as when polled.
                    q.flush = true;
                    if q.holding {
                        self.changed.notify_all();
                    }
                }
            }
            // Outside the queue's lock: the predicate reads the timeline.
            if ran_past() || patience.is_some_and(|p| start.elapsed() >= p) {
                return false;
            }
            let q = self.lock();
            if q.pending == 0 && q.detached == 0 {
                return true;
            }
            drop(
                self.changed
                    .wait_timeout(q, poll)
                    .unwrap_or_else(|e| e.into_inner()),
            );
        }
    }

    /// Operations waiting in the queue run now (the rank is freed).
    pub(crate) fn flush(&self) {
        let mut q = self.lock();
        if q.pending > 0 {
            q.flush = true;
            if q.holding {
                self.changed.notify_all();
            }
        }
    }

    /// The worker's wait while every operation it holds (`held`) may wait: until the
    /// program synchronizes or polls, or more is queued. True when it is to run them now.
    fn hold(&self, held: usize) -> bool {
        let mut q = self.lock();
        let run = loop {
            if q.flush || q.waiters > 0 {
                q.flush = false;
                break true;
            }
            if q.pending > held {
                break false;
            }
            q.holding = true;
            q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        };
        q.holding = false;
        run
    }
}

impl RankQueue {
    /// Queues `op` for the worker thread, which runs it on `rank`.
    pub(crate) fn enqueue(&self, rank: Arc<dyn RunsOps>, op: RankOp) -> Result<()> {
        let mut sender = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        if sender.is_none() {
            let (tx, rx) = mpsc::channel::<Job>();
            let queue = Arc::clone(&self.counts);
            std::thread::Builder::new()
                .name(format!("openpim-rank-{}", self.id))
                .spawn(move || worker(rx, queue))
                .map_err(|e| {
                    Error::System(format!("cannot start the rank's worker thread: {e}"))
                })?;
            *sender = Some(tx);
        }
        let is_callback = matches!(op, RankOp::Callback(_));
        {
            let mut q = self.lock();
            q.pending += 1;
            if is_callback {
                q.callbacks += 1;
            }
            if q.holding {
                // The worker holds operations until more is queued: this is.
                self.changed.notify_all();
            }
        }
        timeline::background_started();
        let tx = sender.as_ref().expect("sender was just set");
        timeline::on_enqueue(self.id);
        if tx.send((rank, op)).is_err() {
            timeline::cancel_enqueue(self.id);
            if is_callback {
                self.lock().callbacks -= 1;
            }
            self.finish(Ok(()), false);
            return Err(Error::Internal("the rank's worker thread is gone".into()));
        }
        Ok(())
    }

    /// Starts a NONBLOCKING callback on its own thread; `sync` waits for it.
    pub(crate) fn spawn_detached(&self, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.lock().detached += 1;
        timeline::background_started();
        let queue = Arc::clone(&self.counts);
        let spawned = std::thread::Builder::new()
            .name(format!("openpim-callback-{}", self.id))
            .spawn(move || {
                // A non-blocking callback holds neither the host nor its ranks: its time is on
                // no timeline.
                let (r, _) = timeline::in_queued_callback(|| {
                    catch_unwind(AssertUnwindSafe(|| as_callback_of(&ranks, job)))
                });
                let r = r.unwrap_or_else(|p| {
                    Err(Error::Internal(format!(
                        "callback panicked: {}",
                        panic_message(&*p)
                    )))
                });
                queue.finish(r, true);
            });
        if let Err(e) = spawned {
            self.finish(Ok(()), true);
            return Err(Error::System(format!(
                "cannot start a callback thread: {e}"
            )));
        }
        Ok(())
    }
}

impl Counts {
    /// Runs a blocking callback of the rank now (on the worker thread, in queue order): the
    /// rank's timeline is held for the user code's time.
    pub(crate) fn run_callback(&self, job: CallbackJob) -> Result<()> {
        self.lock().in_callback += 1;
        let (r, ns) = timeline::in_queued_callback(|| {
            catch_unwind(AssertUnwindSafe(|| as_callback_of(&[self.id], job)))
        });
        timeline::queued_callback(self.id, ns);
        let mut q = self.lock();
        q.in_callback -= 1;
        self.changed.notify_all();
        drop(q);
        r.unwrap_or_else(|p| {
            Err(Error::Internal(format!(
                "callback panicked: {}",
                panic_message(&*p)
            )))
        })
    }
}

fn worker(rx: mpsc::Receiver<Job>, queue: Arc<Counts>) {
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        format!("asynchronous job panicked: {}", panic_message(&*p))
    };
    while let Ok(first) = rx.recv() {
        // What the queue holds now, up to and including the next callback: the operations
        // before a callback run together (one message through a daemon), the callback
        // after them (it may read what they did).
        let mut jobs = vec![first];
        loop {
            while jobs.len() < MAX_GROUP && !matches!(jobs.last(), Some((_, RankOp::Callback(_)))) {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
            // Operations that may wait (the remote backend's transfers) wait for the
            // program to synchronize with the rank, or for one that may not wait (a
            // launch, a callback), so that they travel together.
            let all_wait = jobs.len() < MAX_GROUP && jobs.iter().all(|(r, op)| r.may_wait(op));
            if !all_wait || queue.hold(jobs.len()) {
                break;
            }
            // More was queued: it is on its way.
            match rx.recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let callback = match jobs.last() {
            Some((_, RankOp::Callback(_))) => jobs.pop(),
            _ => None,
        };
        if let Some((rank, _)) = jobs.first() {
            let rank = Arc::clone(rank);
            let n = jobs.len();
            let ops: Vec<RankOp> = jobs.into_iter().map(|(_, op)| op).collect();
            let results =
                catch_unwind(AssertUnwindSafe(|| rank.run_ops(ops))).unwrap_or_else(|p| {
                    let why = panicked(p);
                    (0..n).map(|_| Err(Error::Internal(why.clone()))).collect()
                });
            // Drop the rank before reporting, so that a sync+free sees it released.
            drop(rank);
            let mut results = results.into_iter();
            for _ in 0..n {
                let r = results.next().unwrap_or_else(|| {
                    Err(Error::Internal("a queued operation has no result".into()))
                });
                queue.finish(r, false);
            }
        }
        if let Some((rank, op)) = callback {
            let r = catch_unwind(AssertUnwindSafe(|| rank.run_op(op)))
                .unwrap_or_else(|p| Err(Error::Internal(panicked(p))));
            drop(rank);
            queue.lock().callbacks -= 1;
            queue.finish(r, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank that records the groups of operations it is handed (by kind) and may let
    /// transfers wait.
    struct Recorder {
        groups: Mutex<Vec<Vec<&'static str>>>,
        wait: bool,
    }

    impl RunsOps for Recorder {
        fn run_op(&self, op: RankOp) -> Result<()> {
            self.run_ops(vec![op]).pop().expect("one result")
        }
        fn run_ops(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
            let names: Vec<&'static str> = ops.iter().map(RankOp::name).collect();
            self.groups.lock().unwrap().push(names);
            ops.iter()
                .map(|op| match op {
                    // A failing read: the first error is the sync's.
                    RankOp::Read { len: 13, .. } => Err(Error::InvalidDpuSet("read 13".into())),
                    _ => Ok(()),
                })
                .collect()
        }
        fn may_wait(&self, op: &RankOp) -> bool {
            self.wait && matches!(op, RankOp::Read { .. } | RankOp::Write { .. })
        }
    }

    fn read(len: usize) -> RankOp {
        RankOp::Read { len, items: vec![] }
    }

    #[test]
    fn transfers_that_may_wait_run_together_at_the_sync() {
        let q = RankQueue::new(901);
        let rank = Arc::new(Recorder {
            groups: Mutex::default(),
            wait: true,
        });
        for len in [8, 13, 8] {
            q.enqueue(Arc::clone(&rank) as Arc<dyn RunsOps>, read(len))
                .unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            rank.groups.lock().unwrap().is_empty(),
            "nothing ran before the sync"
        );
        let e = q.sync().unwrap_err();
        assert_eq!(
            e.to_string(),
            Error::InvalidDpuSet("read 13".into()).to_string()
        );
        assert_eq!(
            *rank.groups.lock().unwrap(),
            vec![vec!["transfer from DPUs"; 3]],
            "one group, after which the first error is the sync's"
        );
        // A launch does not wait, and takes the transfers before it along.
        q.enqueue(Arc::clone(&rank) as Arc<dyn RunsOps>, read(8))
            .unwrap();
        q.enqueue(
            Arc::clone(&rank) as Arc<dyn RunsOps>,
            RankOp::Launch { dpus: vec![] },
        )
        .unwrap();
        q.wait_idle();
        assert_eq!(
            rank.groups.lock().unwrap()[1..].concat(),
            vec!["transfer from DPUs", "launch"]
        );
        // Polling the status runs what waits.
        q.enqueue(Arc::clone(&rank) as Arc<dyn RunsOps>, read(8))
            .unwrap();
        let start = std::time::Instant::now();
        while !q.is_idle() {
            assert!(start.elapsed().as_secs() < 10, "polling never ran the read");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(q.sync().is_ok());
    }

    #[test]
    fn without_waiting_every_operation_runs_as_queued() {
        let q = RankQueue::new(902);
        let rank = Arc::new(Recorder {
            groups: Mutex::default(),
            wait: false,
        });
        q.enqueue(Arc::clone(&rank) as Arc<dyn RunsOps>, read(8))
            .unwrap();
        // Runs without any sync.
        let start = std::time::Instant::now();
        while rank.groups.lock().unwrap().is_empty() {
            assert!(start.elapsed().as_secs() < 10, "the read never ran");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(q.sync().is_ok());
    }
}
