//! How an MPI process's one MPI thread waits for work.
//!
//! Only that thread calls MPI (`MPI_THREAD_FUNNELED`), so it cannot block in MPI and in a
//! channel at once: it polls both. Work comes from two sides. From MPI (another process's
//! message) it can only be polled: the loop yields a few turns, then sleeps briefly while
//! traffic is recent, longer the longer it has been idle, up to a millisecond, so that a process waiting for
//! work leaves the cores to the others ([`sleep_after`]). From this process's own threads (the gateway's socket
//! readers with the program's requests, a worker's request threads with their replies) it need
//! not be: they [`Waking::send`], which wakes the sleeping loop at once. Before, a reply
//! finished on a worker waited for the end of the MPI thread's sleep — up to a millisecond
//! after a long launch — and so did every request the program sent.

use crate::lock;
use std::sync::mpsc::{SendError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A flag the MPI thread sleeps on: set by a thread that gave it work.
#[derive(Default)]
pub struct Wakeup {
    due: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    /// There is work: the sleeping loop wakes (or does not sleep on its next turn).
    pub fn notify(&self) {
        *lock(&self.due) = true;
        self.cv.notify_one();
    }

    /// Sleeps up to `d`, less if [`Wakeup::notify`] was called meanwhile or since the last
    /// wait.
    fn wait(&self, d: Duration) {
        let mut due = lock(&self.due);
        if !*due {
            due = self
                .cv
                .wait_timeout(due, d)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *due = false;
    }
}

/// A channel's sender that wakes the MPI thread reading the channel.
pub struct Waking<T> {
    tx: Sender<T>,
    wake: Arc<Wakeup>,
}

impl<T> Clone for Waking<T> {
    fn clone(&self) -> Self {
        Waking {
            tx: self.tx.clone(),
            wake: Arc::clone(&self.wake),
        }
    }
}

impl<T> Waking<T> {
    pub fn new(tx: Sender<T>, wake: Arc<Wakeup>) -> Waking<T> {
        Waking { tx, wake }
    }

    /// Sends `v` and wakes the reader.
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        let r = self.tx.send(v);
        self.wake.notify();
        r
    }
}

/// How many idle turns the loop yields before it sleeps.
const YIELDS: u32 = 50;

/// How long the loop sleeps once it has been idle for `idle`: a tenth of it, between 20 us
/// and 1 ms. So a message that arrives after a wait of any length is found within about
/// 10 % of that wait (20 us while traffic flows), and a loop idle for long wakes 1,000 times a
/// second, not 50,000 (each wake-up is a few microseconds of a core the workers need; the
/// loops of the gateway and every worker woke every 20 us for 200 ms after each message).
fn sleep_after(idle: Duration) -> Duration {
    (idle / 10).clamp(Duration::from_micros(20), Duration::from_millis(1))
}

/// The MPI thread's wait when it found nothing to do (see the module's comment).
pub struct Backoff {
    idle_turns: u32,
    last_busy: Instant,
    wake: Arc<Wakeup>,
}

impl Backoff {
    /// The calling thread's waits: it is the one that will wait.
    pub fn new(wake: Arc<Wakeup>) -> Backoff {
        // Linux lets a sleep of a normal thread end up to 50 us late (its timer slack), which
        // made each 20 us wait of a polling loop 70 us and more; a round trip through the
        // gateway meets two of them. 1 us is what a real-time thread gets.
        // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer and changes only the
        // calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong) };
        Backoff {
            idle_turns: 0,
            last_busy: Instant::now(),
            wake,
        }
    }

    /// The loop did something this turn.
    pub fn busy(&mut self) {
        self.idle_turns = 0;
        self.last_busy = Instant::now();
    }

    /// The loop found nothing to do this turn.
    pub fn idle(&mut self) {
        self.idle_turns = self.idle_turns.saturating_add(1);
        if self.idle_turns < YIELDS {
            std::thread::yield_now();
        } else {
            self.wake.wait(sleep_after(self.last_busy.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn sleeps_grow_with_the_idle_time() {
        assert_eq!(sleep_after(Duration::ZERO), Duration::from_micros(20));
        assert_eq!(
            sleep_after(Duration::from_millis(3)),
            Duration::from_micros(300)
        );
        assert_eq!(
            sleep_after(Duration::from_secs(5)),
            Duration::from_millis(1)
        );
    }

    /// A send from another thread ends the MPI thread's sleep at once, and one sent before
    /// the sleep is not lost (the sleep does not start).
    #[test]
    fn a_send_wakes_the_sleeping_loop() {
        let wake = Arc::new(Wakeup::default());
        let (tx, rx) = channel::<u32>();
        let waking = Waking::new(tx, Arc::clone(&wake));
        let sender = {
            let waking = waking.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                waking.send(7).unwrap();
            })
        };
        let start = Instant::now();
        wake.wait(Duration::from_secs(30));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the send did not wake it"
        );
        sender.join().unwrap();
        assert_eq!(rx.try_recv(), Ok(7));
        waking.send(8).unwrap();
        let start = Instant::now();
        wake.wait(Duration::from_secs(30));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "an earlier send was lost"
        );
    }
}
