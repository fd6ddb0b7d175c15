//! Messages between workers for a collective's host step (`collectives::distributed`): the
//! lines that cross between workers go straight from one to the other over MPI, never
//! through the gateway.
//!
//! Only the worker's MPI thread calls MPI. A step's thread hands what it sends to that
//! thread (a channel of `(MPI rank, message)`), and the MPI thread drops what other workers
//! sent into the [`Mailbox`], where the step's thread takes it. A message may arrive before
//! the step that takes it has started here (the other worker got its request first): it
//! waits in the mailbox.

use crate::lock;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use openpim_collectives::distributed::Peers;

use crate::wake::Waking;
use crate::Outgoing;

/// Messages from other workers, by (step, sender's worker index), and the workers known dead.
#[derive(Default)]
pub struct Mailbox {
    inner: Mutex<Inner>,
    arrived: Condvar,
}

#[derive(Default)]
struct Inner {
    waiting: HashMap<(u64, u32), Vec<u8>>,
    dead: HashSet<u32>,
}

/// Why no message came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoMessage {
    /// The sender died (the gateway said so).
    Died,
    /// Nothing within the bound.
    Timeout,
}

impl Mailbox {
    /// Keeps what worker `from` sent for `step`.
    pub fn deposit(&self, from: u32, step: u64, bytes: Vec<u8>) {
        lock(&self.inner).waiting.insert((step, from), bytes);
        self.arrived.notify_all();
    }

    /// Worker `w` died: whoever waits for it stops waiting.
    pub fn mark_dead(&self, w: u32) {
        lock(&self.inner).dead.insert(w);
        self.arrived.notify_all();
    }

    /// Whether any worker is known dead.
    pub fn any_dead(&self) -> bool {
        !lock(&self.inner).dead.is_empty()
    }

    /// Takes what worker `from` sent for `step`, waiting at most `bound` for it.
    pub fn take(&self, from: u32, step: u64, bound: Duration) -> Result<Vec<u8>, NoMessage> {
        let end = Instant::now() + bound;
        let mut inner = lock(&self.inner);
        loop {
            if let Some(b) = inner.waiting.remove(&(step, from)) {
                return Ok(b);
            }
            if inner.dead.contains(&from) {
                return Err(NoMessage::Died);
            }
            let now = Instant::now();
            if now >= end {
                return Err(NoMessage::Timeout);
            }
            inner = self
                .arrived
                .wait_timeout(inner, end - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// One worker's view of the others, for a step's thread.
pub struct WorkerPeers {
    /// This worker's index (MPI rank - 1).
    pub me: u32,
    /// To the MPI thread: (destination MPI rank, message).
    pub out: Waking<(i32, Outgoing)>,
    pub mailbox: Arc<Mailbox>,
    /// How long a step waits for another worker's lines (the heartbeat's bound: a worker
    /// that sends nothing for that long is dead, and the gateway fails the request).
    pub bound: Duration,
}

/// A message between workers: `[u64 step][bytes]`.
pub fn peer_message(step: u64, bytes: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + bytes.len());
    m.extend_from_slice(&step.to_le_bytes());
    m.extend_from_slice(bytes);
    m
}

impl Peers for WorkerPeers {
    fn me(&self) -> u32 {
        self.me
    }

    fn send(&self, to: u32, step: u64, bytes: Vec<u8>) {
        let _ = self
            .out
            .send((to as i32 + 1, peer_message(step, &bytes).into()));
    }

    fn recv(&self, from: u32, step: u64) -> Result<Vec<u8>, String> {
        self.mailbox
            .take(from, step, self.bound)
            .map_err(|why| match why {
                NoMessage::Died => format!("MPI worker {} died during the collective", from + 1),
                NoMessage::Timeout => format!(
                    "MPI worker {} sent no lines for the collective within {:.0} s",
                    from + 1,
                    self.bound.as_secs_f64()
                ),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_waits_for_its_step_and_a_missing_one_times_out() {
        let m = Arc::new(Mailbox::default());
        m.deposit(2, 7, vec![1, 2, 3]);
        assert_eq!(
            m.take(2, 8, Duration::from_millis(10)),
            Err(NoMessage::Timeout)
        );
        assert_eq!(m.take(2, 7, Duration::ZERO), Ok(vec![1, 2, 3]));
        let later = Arc::clone(&m);
        let t = std::thread::spawn(move || later.take(1, 9, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        m.deposit(1, 9, vec![4]);
        assert_eq!(t.join().unwrap(), Ok(vec![4]));
        // A dead sender ends the wait at once.
        let later = Arc::clone(&m);
        let start = Instant::now();
        let t = std::thread::spawn(move || later.take(3, 9, Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        m.mark_dead(3);
        assert_eq!(t.join().unwrap(), Err(NoMessage::Died));
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
