//! A tenant's hold on one rank (a lease): resident on a slot of the server, or, when the
//! daemon oversubscribes its ranks (`suspend_dir`), suspended to a file while another tenant
//! uses the slot, and brought back on any free slot when its tenant uses it again.
//!
//! The tenant knows the rank by the number it was first given; the lease maps that number to
//! wherever the rank is now, so that suspension is invisible to the program.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openpim_runtime::exec::local::served::ServedRank;
use openpim_runtime::exec::local::suspend::SuspendedRank;

use crate::manager::{Tenant, Usage};

/// Where a lease's rank is.
pub(crate) enum Place {
    /// On slot `slot`, served.
    Resident { slot: u32, served: Arc<ServedRank> },
    /// In a file of the suspend directory.
    Suspended(SuspendedRank),
    /// Freed by its tenant (or the tenant is gone).
    Released,
}

/// One tenant's hold on one rank.
pub struct Lease {
    pub tenant: Tenant,
    /// The rank number the tenant was given (the slot of its first grant); its requests name
    /// the rank by it wherever the rank is now.
    pub number: u32,
    pub usage: Arc<Usage>,
    /// Where the rank is. Lock order: a lease's place before the manager's table.
    pub(crate) place: Mutex<Place>,
    /// Operations in progress on it (an operation in progress keeps it resident).
    running: AtomicU32,
    /// When the last operation ended, when it last became resident, when it was suspended
    /// (+1; 0 while resident): ns since `epoch`. Atomics, so that the manager reads them
    /// without the place's lock.
    last_end: AtomicU64,
    resident_since: AtomicU64,
    suspended_at: AtomicU64,
    /// Bytes of its suspension file while suspended.
    pub(crate) suspended_bytes: AtomicU64,
    epoch: Instant,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lease(tenant {}, rank {})", self.tenant.id, self.number)
    }
}

fn ns_since(epoch: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(epoch).as_nanos() as u64
}

impl Lease {
    pub(crate) fn new(
        tenant: Tenant,
        number: u32,
        usage: Arc<Usage>,
        slot: u32,
        served: Arc<ServedRank>,
        epoch: Instant,
    ) -> Lease {
        let now = ns_since(epoch, Instant::now());
        Lease {
            tenant,
            number,
            usage,
            place: Mutex::new(Place::Resident { slot, served }),
            running: AtomicU32::new(0),
            last_end: AtomicU64::new(now),
            resident_since: AtomicU64::new(now),
            suspended_at: AtomicU64::new(0),
            suspended_bytes: AtomicU64::new(0),
            epoch,
        }
    }

    pub(crate) fn lock_place(&self) -> MutexGuard<'_, Place> {
        self.place.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rank as served now, if resident (for inspection; operations use
    /// `Manager::enter`).
    pub fn resident(&self) -> Option<Arc<ServedRank>> {
        match &*self.lock_place() {
            Place::Resident { served, .. } => Some(Arc::clone(served)),
            _ => None,
        }
    }

    /// True while suspended.
    pub fn is_suspended(&self) -> bool {
        self.suspended_at.load(Ordering::Acquire) != 0
    }

    /// How long it has been suspended (zero while resident).
    pub fn suspended_for(&self) -> Duration {
        match self.suspended_at.load(Ordering::Acquire) {
            0 => Duration::ZERO,
            at => self.elapsed_since(at - 1),
        }
    }

    fn elapsed_since(&self, ns: u64) -> Duration {
        Duration::from_nanos(ns_since(self.epoch, Instant::now()).saturating_sub(ns))
    }

    /// Time since its last operation ended (zero while one runs).
    pub fn idle_for(&self) -> Duration {
        if self.running.load(Ordering::Acquire) > 0 {
            return Duration::ZERO;
        }
        self.elapsed_since(self.last_end.load(Ordering::Acquire))
    }

    /// Time since it last became resident.
    pub fn resident_for(&self) -> Duration {
        self.elapsed_since(self.resident_since.load(Ordering::Acquire))
    }

    /// The oversubscription policy: a resident lease may be suspended once it has been idle
    /// for `idle` and resident for `min_run`.
    pub(crate) fn suspendable(&self, idle: Duration, min_run: Duration) -> bool {
        !self.is_suspended() && self.idle_for() >= idle && self.resident_for() >= min_run
    }

    /// An operation starts (the caller holds the place's lock and found it resident).
    pub(crate) fn start_op(&self) {
        self.running.fetch_add(1, Ordering::AcqRel);
    }

    fn end_op(&self) {
        self.last_end
            .store(ns_since(self.epoch, Instant::now()), Ordering::Release);
        self.running.fetch_sub(1, Ordering::AcqRel);
    }

    /// Operations running now.
    pub(crate) fn running(&self) -> u32 {
        self.running.load(Ordering::Acquire)
    }

    pub(crate) fn mark_suspended(&self, file_bytes: u64) {
        self.suspended_bytes.store(file_bytes, Ordering::Relaxed);
        self.suspended_at
            .store(ns_since(self.epoch, Instant::now()) + 1, Ordering::Release);
    }

    pub(crate) fn mark_resident(&self) {
        let now = ns_since(self.epoch, Instant::now());
        self.resident_since.store(now, Ordering::Release);
        self.last_end.store(now, Ordering::Release);
        self.suspended_bytes.store(0, Ordering::Relaxed);
        self.suspended_at.store(0, Ordering::Release);
    }

    /// A failed suspension: not tried again before `min_run` has passed.
    pub(crate) fn postpone_suspension(&self) {
        self.resident_since
            .store(ns_since(self.epoch, Instant::now()), Ordering::Release);
    }
}

/// An operation's hold on a resident lease: the rank stays resident until it is dropped.
pub struct Active {
    pub served: Arc<ServedRank>,
    lease: Arc<Lease>,
}

impl Active {
    pub(crate) fn new(served: Arc<ServedRank>, lease: Arc<Lease>) -> Active {
        Active { served, lease }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.lease.end_op();
    }
}
