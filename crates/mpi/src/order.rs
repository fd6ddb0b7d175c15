//! The order of one rank's requests on a worker.
//!
//! A worker answers each request on a thread of its own, so that different ranks' queues
//! proceed together. But one rank's requests must run in the order they arrived: the
//! program sends a full batch of small writes without waiting for it, and the rank's next
//! operation may arrive before the batch has been applied. So each request takes a [`Turn`]
//! when it arrives (on the worker's MPI thread, in arrival order): it runs once every earlier
//! request on any of its ranks has finished. Requests on different ranks never wait for one
//! another; a request on several ranks waits for each of them.

use crate::lock;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

use openpim_runtime::exec::mpi::wire::ToWorker;
use openpim_runtime::exec::remote::protocol::Request;

/// Set once a request has finished (or was dropped: a thread that panicked still ends its
/// turn, or the rank's later requests would wait forever).
#[derive(Default)]
struct Done {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Done {
    fn wait(&self) {
        let mut d = lock(&self.done);
        while !*d {
            d = self.cv.wait(d).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn set(&self) {
        *lock(&self.done) = true;
        self.cv.notify_all();
    }
}

/// A request's place in its ranks' order: [`Turn::wait`] before running it; dropping it lets
/// the ranks' next requests run.
pub struct Turn {
    before: Vec<Arc<Done>>,
    mine: Arc<Done>,
}

impl Turn {
    /// Waits until every earlier request on the same ranks has finished.
    pub fn wait(&mut self) {
        for d in self.before.drain(..) {
            d.wait();
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.mine.set();
    }
}

/// The last request of each rank slot (its end is what the slot's next request waits for).
#[derive(Default)]
pub struct RankOrder {
    last: HashMap<u32, Arc<Done>>,
}

impl RankOrder {
    /// The turn of a request on `slots`, which arrives now.
    pub fn admit(&mut self, slots: &[u32]) -> Turn {
        let mine = Arc::new(Done::default());
        let mut before = Vec::new();
        for s in slots {
            if let Some(d) = self.last.insert(*s, Arc::clone(&mine)) {
                before.push(d);
            }
        }
        // Slots whose last request has finished need no entry (a run that opens and closes
        // many ranks keeps the table small).
        self.last.retain(|_, d| !*lock(&d.done));
        Turn { before, mine }
    }
}

/// The rank slots a request to a worker reads or changes, in no particular order (requests
/// on no rank, the buffers' and the heartbeat's, return none).
pub fn slots_of(msg: &ToWorker) -> Vec<u32> {
    match msg {
        ToWorker::Open { slot, .. } | ToWorker::Close { slot } => vec![*slot],
        ToWorker::Call(req) => match req {
            Request::Exec { ops } => ops.iter().map(|(s, _)| *s).collect(),
            Request::Queue { rank, .. }
            | Request::Log { rank, .. }
            | Request::RunStats { rank, .. }
            | Request::Status { rank } => vec![*rank],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A rank's later request waits for the earlier one, however long it takes; another
    /// rank's request does not; a request on both ranks waits for both.
    #[test]
    fn one_rank_in_order_others_beside() {
        let mut order = RankOrder::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let first = order.admit(&[0]);
        let later = |mut t: Turn, name: &'static str| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                t.wait();
                lock(&log).push(name);
            })
        };
        let second = later(order.admit(&[0]), "slot 0 second");
        // Slot 1 runs while slot 0's first request is still running.
        let mut other = order.admit(&[1]);
        other.wait();
        drop(other);
        let both = later(order.admit(&[0, 1]), "slots 0 and 1");
        std::thread::sleep(Duration::from_millis(50));
        lock(&log).push("slot 0 first");
        drop(first);
        second.join().unwrap();
        both.join().unwrap();
        assert_eq!(
            *lock(&log),
            ["slot 0 first", "slot 0 second", "slots 0 and 1"]
        );
    }

    /// A turn dropped without running (its thread failed) still lets the next one run.
    #[test]
    fn a_dropped_turn_releases_the_next() {
        let mut order = RankOrder::default();
        let first = order.admit(&[3]);
        let mut second = order.admit(&[3]);
        drop(first);
        second.wait();
    }

    #[test]
    fn slots_of_requests() {
        assert_eq!(slots_of(&ToWorker::Close { slot: 5 }), vec![5]);
        assert_eq!(
            slots_of(&ToWorker::Call(Request::Queue {
                rank: 2,
                ops: Vec::new()
            })),
            vec![2]
        );
        assert!(slots_of(&ToWorker::Ping).is_empty());
    }
}
