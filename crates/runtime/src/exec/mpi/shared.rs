//! Broadcast buffers: a buffer written to the DPUs of several ranks (`dpu_broadcast_to`,
//! a push of one buffer) crosses the gateway's link once and reaches every worker in one
//! `MPI_Bcast`; the ranks' writes then name it by its content (XXH3-128 of its bytes) instead
//! of carrying it.
//!
//! The program's process keeps the list of buffers the workers hold: the first write of a
//! buffer asks the gateway to broadcast it ([`ToWorker::Share`]) while writes of the same
//! buffer on other ranks wait for that, then every write names it (`WriteBufs::Shared`).
//! Buffers no write in flight uses are forgotten, oldest first, once they hold more than
//! [`KEPT_BYTES`] ([`ToWorker::Unshare`], sent in order with the shares, so a worker never
//! loses a buffer a later write names). When a share fails (a worker died), writes carry
//! their buffers again, for the rest of the run.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::link::Link;
use super::wire::ToWorker;

/// Writes of at least this many bytes per DPU go as broadcast buffers (smaller ones travel
/// batched with the rank's next operation).
pub(crate) const SHARE_MIN_BYTES: usize = super::wire::BATCH_BYTES_PER_DPU + 1;
/// And at most this many (an MPI count is 32-bit).
const SHARE_MAX_BYTES: usize = 1 << 30;
/// The workers keep at most about this many bytes of buffers no write uses.
const KEPT_BYTES: u64 = 512 << 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Being broadcast by the write that first needed it.
    Sending,
    /// Held by every worker.
    Held,
}

struct Entry {
    state: State,
    /// Writes in flight that name it.
    users: u32,
    len: u64,
    /// When a write last took it (for forgetting the oldest first).
    last_use: u64,
}

#[derive(Default)]
struct Table {
    entries: HashMap<u128, Entry>,
    /// Bytes of the held buffers.
    held: u64,
    tick: u64,
    /// Why buffers are no longer shared (a share failed).
    off: Option<String>,
}

/// The buffers the workers hold, as this process knows them.
#[derive(Default)]
pub(crate) struct SharedBuffers {
    table: Mutex<Table>,
    changed: Condvar,
}

/// A write's use of a held buffer: it is not forgotten while the write is in flight.
pub(crate) struct Use {
    buffers: Arc<SharedBuffers>,
    pub(crate) key: u128,
}

impl Drop for Use {
    fn drop(&mut self) {
        let mut t = lock(&self.buffers.table);
        t.tick += 1;
        let tick = t.tick;
        if let Some(e) = t.entries.get_mut(&self.key) {
            e.users = e.users.saturating_sub(1);
            e.last_use = tick;
        }
    }
}

impl SharedBuffers {
    /// The buffer `bytes` held by every worker, for a write that names it; `None` when the
    /// write should carry it (too small or too large, or sharing is off).
    pub(crate) fn take(self: &Arc<Self>, link: &Link, bytes: &[u8]) -> Option<Use> {
        if !(SHARE_MIN_BYTES..=SHARE_MAX_BYTES).contains(&bytes.len()) {
            return None;
        }
        let key = twox_hash::XxHash3_128::oneshot(bytes);
        let mut t = lock(&self.table);
        loop {
            if t.off.is_some() {
                return None;
            }
            t.tick += 1;
            let tick = t.tick;
            match t.entries.get_mut(&key) {
                Some(e) if e.state == State::Held => {
                    e.users += 1;
                    e.last_use = tick;
                    return Some(self.use_of(key));
                }
                Some(_) => t = self.changed.wait(t).unwrap_or_else(|e| e.into_inner()),
                None => {
                    t.entries.insert(
                        key,
                        Entry {
                            state: State::Sending,
                            users: 0,
                            len: bytes.len() as u64,
                            last_use: tick,
                        },
                    );
                    break;
                }
            }
        }
        drop(t);
        let shared = link.send_share(key, bytes).and_then(|p| p.wait());
        let mut t = lock(&self.table);
        let taken = match shared {
            Ok(_) => {
                if let Some(e) = t.entries.get_mut(&key) {
                    e.state = State::Held;
                    e.users += 1;
                }
                t.held += bytes.len() as u64;
                self.forget_old(&mut t, link, key);
                Some(self.use_of(key))
            }
            Err(e) => {
                t.entries.remove(&key);
                t.off = Some(e.to_string());
                None
            }
        };
        self.changed.notify_all();
        taken
    }

    fn use_of(self: &Arc<Self>, key: u128) -> Use {
        Use {
            buffers: Arc::clone(self),
            key,
        }
    }

    /// Forgets the oldest buffers no write uses (not `keep`) while more than [`KEPT_BYTES`]
    /// are held; tells every worker (under the table's lock: before any later share).
    fn forget_old(&self, t: &mut Table, link: &Link, keep: u128) {
        let mut gone = Vec::new();
        while t.held > KEPT_BYTES {
            let oldest = t
                .entries
                .iter()
                .filter(|(k, e)| **k != keep && e.state == State::Held && e.users == 0)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(k, _)| *k);
            let Some(k) = oldest else { break };
            if let Some(e) = t.entries.remove(&k) {
                t.held -= e.len;
            }
            gone.push(k);
        }
        if gone.is_empty() {
            return;
        }
        let msg = ToWorker::Unshare { keys: gone };
        for w in 0..link.workers.len() as u32 {
            // (Fire and forget: the reply only says it was done.)
            let _ = link.send(w, &msg);
        }
    }
}

// (One MPI broadcast carries a buffer: its count is 32-bit.)
const _: () = assert!(SHARE_MIN_BYTES < SHARE_MAX_BYTES && SHARE_MAX_BYTES < i32::MAX as usize);
