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
        while q.pending > 0 && !(from_callback && q.in_callback > 0) {
            q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
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
        while if from_callback {
            q.pending > 0 && q.in_callback == 0
        } else {
            q.pending > 0 || q.detached > 0
        } {
            q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        match q.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// True when nothing is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        let q = self.lock();
        q.pending == 0 && q.detached == 0
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
        self.lock().pending += 1;
        timeline::background_started();
        let tx = sender.as_ref().expect("sender was just set");
        timeline::on_enqueue(self.id);
        if tx.send((rank, op)).is_err() {
            timeline::cancel_enqueue(self.id);
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
        while jobs.len() < MAX_GROUP && !matches!(jobs.last(), Some((_, RankOp::Callback(_)))) {
            match rx.try_recv() {
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
            queue.finish(r, false);
        }
    }
}
