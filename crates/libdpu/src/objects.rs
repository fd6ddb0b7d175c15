//! The objects C pointers point to: `struct dpu_rank_t *` is a [`CRank`], `struct dpu_t *`
//! a [`CDpu`] inside its rank's boxed array, `dpu_description_t` a [`CDescription`]. Which
//! pointers are valid is [`crate::handles`]' business.

use std::ffi::CString;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::ThreadId;

use openpim_runtime::machine::MachineConfig;
use openpim_runtime::Rank;

/// The object behind `struct dpu_rank_t *`.
pub struct CRank {
    pub rank: Arc<Rank>,
    pub dpus: Box<[CDpu]>,
    /// The rank's lock of `dpu_lock_rank` / `dpu_unlock_rank` (recursive, as the SDK's).
    pub lock: RankLock,
    /// What `dpu_get_description` returns (made at the first call, freed with the rank).
    pub description: OnceLock<Box<CDescription>>,
}

/// A recursive lock taken and released by separate C calls (`dpu_lock_rank`,
/// `dpu_trylock_rank`, `dpu_unlock_rank`): the owning thread and its depth.
#[derive(Default)]
pub struct RankLock {
    state: Mutex<(Option<ThreadId>, u32)>,
    released: Condvar,
}

impl RankLock {
    /// Takes the lock, waiting for another thread to release it; recursive.
    pub fn lock(&self) {
        let me = std::thread::current().id();
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match g.0 {
                None => {
                    *g = (Some(me), 1);
                    return;
                }
                Some(t) if t == me => {
                    g.1 += 1;
                    return;
                }
                Some(_) => g = self.released.wait(g).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Takes the lock if no other thread holds it.
    pub fn try_lock(&self) -> bool {
        let me = std::thread::current().id();
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match g.0 {
            None => {
                *g = (Some(me), 1);
                true
            }
            Some(t) if t == me => {
                g.1 += 1;
                true
            }
            Some(_) => false,
        }
    }

    /// Releases one level of the lock; false when the calling thread does not hold it.
    pub fn unlock(&self) -> bool {
        let me = std::thread::current().id();
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 != Some(me) {
            return false;
        }
        g.1 -= 1;
        if g.1 == 0 {
            g.0 = None;
            self.released.notify_all();
        }
        true
    }
}

/// The object behind `struct dpu_t *`.
pub struct CDpu {
    pub crank: *const CRank,
    pub index: u32,
}

// SAFETY: a CDpu's `crank` points to the CRank that owns it (immutable once built); it is
// only read, from any thread, while the owning set is alive.
unsafe impl Send for CDpu {}
// SAFETY: see Send; CDpu is immutable after construction.
unsafe impl Sync for CDpu {}

/// What `dpu_description_t` points to.
pub struct CDescription {
    pub machine: MachineConfig,
    pub text: CString,
}
