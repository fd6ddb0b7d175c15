//! The threads a worker answers requests on, kept for the next request.
//!
//! Each request runs on a thread of its own (different ranks' requests proceed together; one
//! rank's wait for their turn: [`crate::order`]). Starting a thread per request cost tens of
//! microseconds of a round trip that takes a few hundred (a program reading one DPU at a time
//! makes thousands of them: PrIM NW), so a finished thread waits for the next request instead
//! of ending, and ends after [`IDLE_END`] without one.

use crate::lock;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a thread without a request waits before it ends.
const IDLE_END: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

/// The waiting threads, each by its id and the sender of its next job.
#[derive(Default)]
pub struct Threads {
    idle: Mutex<Vec<(u64, Sender<Job>)>>,
    next_id: Mutex<u64>,
}

impl Threads {
    /// Runs `job` on a waiting thread, or on a new one if none waits.
    pub fn run(self: &Arc<Self>, job: impl FnOnce() + Send + 'static) {
        let mut job: Job = Box::new(job);
        while let Some((_, tx)) = lock(&self.idle).pop() {
            match tx.send(job) {
                Ok(()) => return,
                // That thread ended meanwhile (its timeout): the next one.
                Err(e) => job = e.0,
            }
        }
        let id = {
            let mut n = lock(&self.next_id);
            *n += 1;
            *n
        };
        let (tx, rx) = channel::<Job>();
        let pool = Arc::clone(self);
        std::thread::spawn(move || {
            let mut job = Some(job);
            while let Some(j) = job.take() {
                j();
                lock(&pool.idle).push((id, tx.clone()));
                job = match rx.recv_timeout(IDLE_END) {
                    Ok(j) => Some(j),
                    Err(RecvTimeoutError::Disconnected) => None,
                    Err(RecvTimeoutError::Timeout) => {
                        let mut idle = lock(&pool.idle);
                        match idle.iter().position(|(i, _)| *i == id) {
                            // Not taken: this thread leaves the list and ends.
                            Some(k) => {
                                idle.swap_remove(k);
                                None
                            }
                            // Taken just now: its job is on the way.
                            None => {
                                drop(idle);
                                rx.recv().ok()
                            }
                        }
                    }
                };
            }
        });
    }

    /// Threads waiting for a request now.
    pub fn waiting(&self) -> usize {
        lock(&self.idle).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    /// Requests one after another reuse one thread; requests at once get one each.
    #[test]
    fn a_finished_thread_takes_the_next_request() {
        let pool = Arc::new(Threads::default());
        let (tx, rx) = channel();
        for k in 0..5 {
            let tx = tx.clone();
            pool.run(move || tx.send((k, std::thread::current().id())).unwrap());
            let got = rx.recv().unwrap();
            assert_eq!(got.0, k);
            // (The thread is back in the list right after its job.)
            while pool.waiting() == 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(pool.waiting(), 1);
        // Two at once: the second does not wait for the first.
        let (block_tx, block_rx) = channel::<()>();
        let (done_tx, done_rx) = channel();
        pool.run(move || {
            block_rx.recv().unwrap();
        });
        pool.run(move || done_tx.send(()).unwrap());
        done_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        block_tx.send(()).unwrap();
    }
}
