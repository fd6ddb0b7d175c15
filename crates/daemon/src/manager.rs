//! The rank manager: which tenant holds which rank, and the wipe between tenants.
//!
//! Every rank is in one of vPIM's three states:
//!
//! - `NAAV` (not allocated, available): wiped, free for anyone;
//! - `ALLO` (allocated): held by one tenant (one client process);
//! - `NANA` (not allocated, not available): released, waiting for its process to take it
//!   back (`reuse` time) or being wiped (MRAM, WRAM, IRAM, programs and symbols, logs: the
//!   served rank is dropped and its memories cleared) on a background thread.
//!
//! Allocation policy: the tenant's own released ranks first (same process: no wipe), then
//! `NAAV` ranks round-robin; requests are served first come, first served; a request that
//! cannot be served waits (ranks being wiped or released count as coming free) up to the
//! configured timeout, then fails with the SDK's allocation error. Per-user quotas cap the
//! ranks a user holds at once.
//!
//! Oversubscription (only with `suspend_dir`): when the request at the head of the queue
//! finds too few ranks, the manager suspends another tenant's rank that is idle — no
//! operation on it for `suspend_idle_ms`, and resident for at least `suspend_min_run_ms` —
//! to a file (its [`Lease`] keeps it), wipes the slot and hands it out. When that tenant
//! uses the rank again, its request queues like an allocation of one rank and the rank is
//! resumed on whichever slot it gets. Requests are served in arrival order and a rank just
//! granted or resumed runs at least `suspend_min_run_ms` before it can be suspended again,
//! so no tenant starves another: a waiting request gets a rank once a holder is idle long
//! enough (docs/sharing.md gives the bound).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openpim_machine::MachineConfig;
use openpim_runtime::exec::local::logs::LogAccount;
use openpim_runtime::exec::local::served::ServedRank;
use openpim_runtime::exec::remote::protocol::PoolRank;
use openpim_runtime::{Error, Result};

use crate::config::Config;
use crate::lease::{Active, Lease, Place};
use crate::log;

/// Wipes a served rank: once the last operation still running on it (its worker's) is done,
/// dropping it clears its memories and programs and gives its slot back.
fn wipe(served: Arc<ServedRank>) {
    while Arc::strong_count(&served) > 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(served);
}

/// Who a tenant is (from the socket's peer credentials).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tenant {
    /// The connection's id (one per client process).
    pub id: u64,
    pub uid: u32,
    pub pid: u32,
    pub program: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Naav,
    Allo,
    /// Released by `previous`, not wiped yet.
    Released,
    Wiping,
    /// Its tenant's rank is being written to the suspend directory.
    Suspending,
    /// A suspended rank is being brought back on it (for `owner`).
    Resuming,
}

/// Counters of one rank while held.
#[derive(Debug, Default)]
pub struct Usage {
    pub bytes: AtomicU64,
    pub launches: AtomicU64,
    /// Time operations ran on it (ns).
    pub busy_ns: AtomicU64,
}

struct Entry {
    state: State,
    /// The rank as it is served (present in ALLO and Released).
    served: Option<Arc<ServedRank>>,
    owner: Option<Tenant>,
    /// The tenant that released it (Released), for the same-process reuse.
    previous: Option<u64>,
    /// The lease that holds it (ALLO).
    lease: Option<Arc<Lease>>,
    since: Instant,
    usage: Arc<Usage>,
    wipes: u64,
}

struct Inner {
    ranks: Vec<Entry>,
    /// Where the next round-robin scan starts.
    next: usize,
    /// Allocation requests waiting, in arrival order (tickets).
    queue: VecDeque<u64>,
    next_ticket: u64,
    /// Set at shutdown: waiting allocations fail.
    closed: bool,
    /// Leases suspended now (the pool view lists them).
    suspended: Vec<Arc<Lease>>,
    /// Each connected tenant's printf log budget (`OPENPIM_LOG_BUDGET` of the daemon, per
    /// tenant): its ranks' DPU output is charged to it, so that one tenant's output never
    /// cuts another's.
    log_accounts: HashMap<u64, Arc<LogAccount>>,
}

/// Count, total and longest of some timed event (ns).
#[derive(Debug, Default, Clone, Copy)]
pub struct Timed {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

impl Timed {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }
}

/// The rank table and its policy.
pub struct Manager {
    inner: Mutex<Inner>,
    changed: Condvar,
    config: Config,
    nr_ranks: u32,
    pub dpus_per_rank: u32,
    started: Instant,
    /// Wipe times, ns (for metrics and the benchmark): count, sum, max.
    wipe_stats: Mutex<(u64, u64, u64)>,
    /// Allocation times of requests served without waiting (request to grant), ns: count,
    /// sum, max.
    alloc_stats: Mutex<(u64, u64, u64)>,
    /// Suspensions and resumptions (oversubscription).
    suspends: Mutex<Timed>,
    resumes: Mutex<Timed>,
}

/// What an allocation got.
pub struct Granted {
    pub rank: u32,
    /// DPUs of the rank in use.
    pub nr_dpus: u32,
    pub lease: Arc<Lease>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Manager {
    pub fn new(config: Config, machine: &MachineConfig) -> Arc<Manager> {
        let now = Instant::now();
        let ranks = (0..machine.nr_ranks)
            .map(|_| Entry {
                state: State::Naav,
                served: None,
                owner: None,
                previous: None,
                lease: None,
                since: now,
                usage: Arc::default(),
                wipes: 0,
            })
            .collect();
        Arc::new(Manager {
            inner: Mutex::new(Inner {
                ranks,
                next: 0,
                queue: VecDeque::new(),
                next_ticket: 0,
                closed: false,
                suspended: Vec::new(),
                log_accounts: HashMap::new(),
            }),
            changed: Condvar::new(),
            config,
            nr_ranks: machine.nr_ranks,
            dpus_per_rank: machine.dpus_per_rank,
            started: now,
            wipe_stats: Mutex::new((0, 0, 0)),
            alloc_stats: Mutex::new((0, 0, 0)),
            suspends: Mutex::default(),
            resumes: Mutex::default(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Allocates `want` ranks (`None`: every rank free now, at least one) for `tenant`, with
    /// DPU counts from `dpus` (all DPUs: `None`), on `machine` (the tenant's run options).
    pub fn alloc(
        self: &Arc<Self>,
        tenant: &Tenant,
        want: Option<u32>,
        dpus: Option<u32>,
        what: &str,
        machine: &Arc<MachineConfig>,
    ) -> Result<Vec<Granted>> {
        let refuse = |reason: String| Error::Allocation {
            requested: what.to_string(),
            reason,
        };
        if let Some(n) = want {
            if n == 0 || n > self.nr_ranks {
                return Err(refuse(format!(
                    "the daemon's server has {} ranks; ask for fewer",
                    self.nr_ranks
                )));
            }
        }
        let g = lock(&self.inner);
        // Quota: ranks the user holds (all its processes; suspended ones too, which come
        // back) plus these.
        if let Some(q) = self.config.quota(tenant.uid) {
            let resident = g
                .ranks
                .iter()
                .filter(|e| {
                    matches!(e.state, State::Allo | State::Resuming | State::Suspending)
                        && e.owner.as_ref().is_some_and(|o| o.uid == tenant.uid)
                })
                .count();
            let suspended = g
                .suspended
                .iter()
                .filter(|l| l.tenant.uid == tenant.uid)
                .count();
            let held = (resident + suspended) as u32;
            let asked = want.unwrap_or(1);
            if held + asked > q {
                return Err(refuse(format!(
                    "user {} may hold {q} ranks at once (daemon quota) and holds {held}; free ranks first or ask the daemon's operator for a larger quota",
                    tenant.uid
                )));
            }
        }
        let asked_at = Instant::now();
        let limit = machine.nr_ranks as usize;
        let (mut g, picked, waited) = self.wait_turn(g, tenant, want, limit, what)?;
        let granted = self.grant(&mut g, tenant, picked, dpus, machine);
        self.changed.notify_all();
        if !waited && granted.is_ok() {
            let ns = asked_at.elapsed().as_nanos() as u64;
            let mut a = lock(&self.alloc_stats);
            a.0 += 1;
            a.1 += ns;
            a.2 = a.2.max(ns);
        }
        granted
    }

    /// Queues a request for `want` ranks (first come, first served) until it is at the head
    /// of the queue and ranks are there for it, suspending idle tenants' ranks if the daemon
    /// oversubscribes; returns the table's lock, the ranks picked and whether it waited. Fails
    /// (with the reason, as an allocation error) after `alloc_timeout` or at shutdown.
    fn wait_turn<'a>(
        self: &'a Arc<Self>,
        mut g: MutexGuard<'a, Inner>,
        tenant: &Tenant,
        want: Option<u32>,
        limit: usize,
        what: &str,
    ) -> Result<(MutexGuard<'a, Inner>, Vec<usize>, bool)> {
        let refuse = |reason: String| Error::Allocation {
            requested: what.to_string(),
            reason,
        };
        let ticket = g.next_ticket;
        g.next_ticket += 1;
        g.queue.push_back(ticket);
        let deadline = Instant::now() + self.config.alloc_timeout;
        let mut waited = false;
        loop {
            if g.closed {
                g.queue.retain(|t| *t != ticket);
                self.changed.notify_all();
                return Err(refuse("the daemon is shutting down".into()));
            }
            if g.queue.front() == Some(&ticket) {
                if let Some(picked) = self.pick(&mut g, tenant.id, want, limit) {
                    g.queue.pop_front();
                    return Ok((g, picked, waited));
                }
                if let Some(victim) = self.choose_victim(&mut g, tenant.id) {
                    drop(g);
                    self.suspend(victim);
                    g = lock(&self.inner);
                    continue;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                g.queue.retain(|t| *t != ticket);
                self.changed.notify_all();
                let busy = g.ranks.iter().filter(|e| e.state != State::Naav).count();
                let oversubscribed = match &self.config.suspend_dir {
                    Some(_) => format!(
                        " (none of them idle for {} ms after running {} ms, which suspending needs)",
                        self.config.suspend_idle.as_millis(),
                        self.config.suspend_min_run.as_millis()
                    ),
                    None => String::new(),
                };
                return Err(refuse(format!(
                    "{busy} of the daemon's {} ranks are held by other programs or being wiped{oversubscribed}, and none came free within {:.1} s (alloc_timeout_s); try again later or ask for fewer",
                    self.nr_ranks,
                    self.config.alloc_timeout.as_secs_f64()
                )));
            }
            waited = true;
            // Released ranks are wiped after the reuse time, idle ranks become suspendable:
            // wake up for those too.
            let wait = (deadline - now).min(Duration::from_millis(50));
            g = self
                .changed
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Ranks for `tenant`: its released ones first, then NAAV round-robin; `None` if not
    /// enough now.
    fn pick(
        &self,
        g: &mut Inner,
        tenant: u64,
        want: Option<u32>,
        limit: usize,
    ) -> Option<Vec<usize>> {
        let n = g.ranks.len();
        let mut picked: Vec<usize> = (0..n)
            .filter(|&i| g.ranks[i].state == State::Released && g.ranks[i].previous == Some(tenant))
            .collect();
        for k in 0..n {
            let i = (g.next + k) % n;
            if g.ranks[i].state == State::Naav {
                picked.push(i);
            }
        }
        let take = match want {
            Some(w) => w as usize,
            None => picked.len().min(limit),
        };
        if take == 0 || picked.len() < take {
            return None;
        }
        picked.truncate(take);
        Some(picked)
    }

    fn grant(
        &self,
        g: &mut Inner,
        tenant: &Tenant,
        picked: Vec<usize>,
        dpus: Option<u32>,
        machine: &Arc<MachineConfig>,
    ) -> Result<Vec<Granted>> {
        let per_rank = machine.dpus_per_rank;
        let mut out = Vec::new();
        for (k, &i) in picked.iter().enumerate() {
            let nr = match dpus {
                Some(d) => per_rank.min(d.saturating_sub(k as u32 * per_rank)).max(1),
                None => per_rank,
            };
            let e = &mut g.ranks[i];
            let served = match (e.state, e.served.take()) {
                // Its own released rank, with the same DPUs and options: no wipe.
                (State::Released, Some(s)) if s.nr_dpus() == nr && s.machine() == &**machine => s,
                (_, old) => {
                    if let Some(old) = old {
                        wipe(old);
                    }
                    match ServedRank::new(i as u32, nr, Arc::clone(machine)) {
                        Ok(s) => Arc::new(s),
                        Err(err) => {
                            // Undo what this allocation took.
                            for (_, &j) in picked.iter().enumerate().take(k) {
                                let e = &mut g.ranks[j];
                                e.state = State::Naav;
                                e.served = None;
                                e.owner = None;
                                e.lease = None;
                            }
                            return Err(err);
                        }
                    }
                }
            };
            e.state = State::Allo;
            e.owner = Some(tenant.clone());
            let logs = Arc::clone(g.log_accounts.entry(tenant.id).or_default());
            served.charge_logs_to(logs);
            let e = &mut g.ranks[i];
            e.previous = None;
            e.since = Instant::now();
            e.usage = Arc::default();
            e.served = Some(Arc::clone(&served));
            let nr_dpus = served.nr_dpus();
            let lease = Arc::new(Lease::new(
                tenant.clone(),
                i as u32,
                Arc::clone(&e.usage),
                i as u32,
                served,
                self.started,
            ));
            e.lease = Some(Arc::clone(&lease));
            out.push(Granted {
                rank: i as u32,
                nr_dpus,
                lease,
            });
            g.next = (i + 1) % g.ranks.len();
        }
        Ok(out)
    }

    /// True when `tenant` holds `rank`.
    pub fn holds(&self, tenant: u64, rank: u32) -> bool {
        let g = lock(&self.inner);
        g.ranks.get(rank as usize).is_some_and(|e| {
            e.state == State::Allo && e.owner.as_ref().is_some_and(|o| o.id == tenant)
        })
    }

    /// `tenant` releases `rank` (dpu_free): it waits `reuse` for the same process, then is
    /// wiped. `dead`: the tenant is gone, wipe now.
    pub fn release(self: &Arc<Self>, tenant: u64, rank: u32, dead: bool) {
        let mut g = lock(&self.inner);
        let Some(e) = g.ranks.get_mut(rank as usize) else {
            return;
        };
        if e.state != State::Allo || e.owner.as_ref().map(|o| o.id) != Some(tenant) {
            return;
        }
        e.owner = None;
        e.lease = None;
        e.since = Instant::now();
        if dead || self.config.reuse.is_zero() {
            self.start_wipe(e, rank);
        } else {
            e.state = State::Released;
            e.previous = Some(tenant);
            let me = Arc::clone(self);
            let reuse = self.config.reuse;
            let since = e.since;
            std::thread::spawn(move || {
                std::thread::sleep(reuse);
                let mut g = lock(&me.inner);
                let e = &mut g.ranks[rank as usize];
                if e.state == State::Released && e.since == since {
                    me.start_wipe(e, rank);
                }
            });
        }
        self.changed.notify_all();
    }

    /// NANA: wipes the rank on a background thread, then NAAV.
    fn start_wipe(self: &Arc<Self>, e: &mut Entry, rank: u32) {
        e.state = State::Wiping;
        e.previous = None;
        let served = e.served.take();
        let me = Arc::clone(self);
        std::thread::spawn(move || {
            let t = Instant::now();
            // The wipe: the last handle of the served rank drops (an operation still running
            // on it holds one until it ends), clearing its memories and programs.
            if let Some(s) = served {
                wipe(s);
            }
            let ns = t.elapsed().as_nanos() as u64;
            {
                let mut w = lock(&me.wipe_stats);
                w.0 += 1;
                w.1 += ns;
                w.2 = w.2.max(ns);
            }
            let mut g = lock(&me.inner);
            let e = &mut g.ranks[rank as usize];
            e.state = State::Naav;
            e.since = Instant::now();
            e.wipes += 1;
            drop(g);
            me.changed.notify_all();
        });
    }

    /// Releases every rank of a tenant that is gone.
    pub fn release_all(self: &Arc<Self>, tenant: u64) {
        let ranks: Vec<u32> = {
            let g = lock(&self.inner);
            (0..g.ranks.len() as u32)
                .filter(|&i| {
                    g.ranks[i as usize]
                        .owner
                        .as_ref()
                        .is_some_and(|o| o.id == tenant)
                })
                .collect()
        };
        for r in ranks {
            self.release(tenant, r, true);
        }
        // Its released ranks waiting for reuse are wiped now.
        let mut g = lock(&self.inner);
        g.log_accounts.remove(&tenant);
        for i in 0..g.ranks.len() {
            if g.ranks[i].state == State::Released && g.ranks[i].previous == Some(tenant) {
                let e = &mut g.ranks[i];
                self.start_wipe(e, i as u32);
            }
        }
        self.changed.notify_all();
    }

    /// Fails waiting allocations (shutdown).
    pub fn close(&self) {
        lock(&self.inner).closed = true;
        self.changed.notify_all();
    }

    /// True when every rank is NAAV.
    pub fn all_free(&self) -> bool {
        lock(&self.inner)
            .ranks
            .iter()
            .all(|e| e.state == State::Naav)
    }

    /// The rank table.
    pub fn table(&self) -> Vec<PoolRank> {
        let g = lock(&self.inner);
        let now = Instant::now();
        let ranks = g.ranks.iter().enumerate().map(|(i, e)| {
            let held = now.saturating_duration_since(e.since);
            let busy = Duration::from_nanos(e.usage.busy_ns.load(Ordering::Relaxed));
            PoolRank {
                rank: i as u32,
                state: match e.state {
                    State::Naav => "NAAV",
                    State::Allo | State::Resuming => "ALLO",
                    State::Released | State::Wiping | State::Suspending => "NANA",
                }
                .into(),
                uid: e.owner.as_ref().map(|o| o.uid),
                pid: e.owner.as_ref().map(|o| o.pid),
                program: e
                    .owner
                    .as_ref()
                    .map(|o| o.program.clone())
                    .unwrap_or_default(),
                since_ms: held.as_millis() as u64,
                bytes_moved: e.usage.bytes.load(Ordering::Relaxed),
                launches: e.usage.launches.load(Ordering::Relaxed),
                idle_ms: if e.state == State::Allo {
                    held.saturating_sub(busy).as_millis() as u64
                } else {
                    0
                },
                wipes: e.wipes,
            }
        });
        // Suspended ranks: by the number their tenant knows them by.
        let suspended = g.suspended.iter().map(|l| {
            let away = l.suspended_for();
            PoolRank {
                rank: l.number,
                state: "SUSP".into(),
                uid: Some(l.tenant.uid),
                pid: Some(l.tenant.pid),
                program: l.tenant.program.clone(),
                since_ms: away.as_millis() as u64,
                bytes_moved: l.usage.bytes.load(Ordering::Relaxed),
                launches: l.usage.launches.load(Ordering::Relaxed),
                idle_ms: l.idle_for().as_millis() as u64,
                wipes: 0,
            }
        });
        ranks.chain(suspended).collect()
    }

    /// Wipes so far: (count, total ns, longest ns).
    pub fn wipe_stats(&self) -> (u64, u64, u64) {
        *lock(&self.wipe_stats)
    }

    /// Allocations served without waiting so far: (count, total ns, longest ns).
    pub fn alloc_stats(&self) -> (u64, u64, u64) {
        *lock(&self.alloc_stats)
    }

    /// Seconds since the daemon started.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Allocations waiting now.
    pub fn waiting(&self) -> usize {
        lock(&self.inner).queue.len()
    }
}

/// A rank chosen for suspension: its slot, its lease, and the table's handle on it.
pub(crate) struct Victim {
    slot: usize,
    lease: Arc<Lease>,
    served: Option<Arc<ServedRank>>,
}

/// Oversubscription: suspending idle ranks, resuming them, and operations on leases.
impl Manager {
    /// The rank to suspend for `requester`'s request, if the daemon oversubscribes and one is
    /// suspendable (another tenant's, idle and run long enough; the longest idle first). Its
    /// slot is marked as being suspended.
    fn choose_victim(&self, g: &mut Inner, requester: u64) -> Option<Victim> {
        self.config.suspend_dir.as_ref()?;
        let (idle, min_run) = (self.config.suspend_idle, self.config.suspend_min_run);
        let slot = g
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, e)| e.state == State::Allo)
            .filter_map(|(i, e)| e.lease.as_ref().map(|l| (i, l)))
            .filter(|(_, l)| l.tenant.id != requester && l.suspendable(idle, min_run))
            .max_by_key(|(_, l)| l.idle_for())
            .map(|(i, _)| i)?;
        let e = &mut g.ranks[slot];
        e.state = State::Suspending;
        Some(Victim {
            slot,
            lease: Arc::clone(e.lease.as_ref().expect("chosen for its lease")),
            served: e.served.take(),
        })
    }

    /// Suspends a chosen rank to the suspend directory and frees its slot; if it is in use
    /// again by now, or the file cannot be written, the rank stays where it is.
    fn suspend(self: &Arc<Self>, v: Victim) {
        let t = Instant::now();
        let Victim {
            slot,
            lease,
            served,
        } = v;
        let dir = self.config.suspend_dir.clone().unwrap_or_default();
        let (idle, min_run) = (self.config.suspend_idle, self.config.suspend_min_run);
        let mut place = lease.lock_place();
        let still = matches!(&*place, Place::Resident { slot: s, .. } if *s as usize == slot)
            && lease.running() == 0
            && lease.suspendable(idle, min_run);
        let undo = |served: Option<Arc<ServedRank>>| {
            let mut g = lock(&self.inner);
            let e = &mut g.ranks[slot];
            e.state = State::Allo;
            e.served = served;
            drop(g);
            self.changed.notify_all();
        };
        if !still {
            drop(place);
            undo(served);
            return;
        }
        let path = suspend_path(&dir, &lease);
        let saved = match &*place {
            Place::Resident { served: s, .. } => s.suspend(&path),
            _ => unreachable!("checked resident"),
        };
        match saved {
            Ok(rank) => {
                let bytes = rank.file_bytes();
                lease.mark_suspended(bytes);
                // The rank's last handles: the lease's (replaced here) and the table's.
                let old = std::mem::replace(&mut *place, Place::Suspended(rank));
                drop(place);
                drop(old);
                if let Some(s) = served {
                    wipe(s);
                }
                let ns = t.elapsed().as_nanos() as u64;
                lock(&self.suspends).add(ns);
                let mut g = lock(&self.inner);
                let e = &mut g.ranks[slot];
                e.state = State::Naav;
                e.owner = None;
                e.lease = None;
                e.previous = None;
                e.since = Instant::now();
                e.wipes += 1;
                g.suspended.push(Arc::clone(&lease));
                drop(g);
                self.changed.notify_all();
                log!(
                    "suspended rank {} of tenant {} (pid {}) from slot {slot} to {} ({} KiB) in {:.1} ms",
                    lease.number,
                    lease.tenant.id,
                    lease.tenant.pid,
                    path.display(),
                    bytes >> 10,
                    ns as f64 / 1e6
                );
            }
            Err(e) => {
                log!(
                    "cannot suspend rank {} of tenant {} to {}: {e}; it stays resident",
                    lease.number,
                    lease.tenant.id,
                    dir.display()
                );
                lease.postpone_suspension();
                drop(place);
                undo(served);
            }
        }
    }

    /// Starts an operation on a lease: its rank, resumed first if it was suspended (the
    /// request queues like an allocation of one rank). The rank stays resident until the
    /// returned hold is dropped.
    pub fn enter(self: &Arc<Self>, lease: &Arc<Lease>) -> Result<Active> {
        let mut place = lease.lock_place();
        if let Place::Suspended(_) = &*place {
            self.resume(lease, &mut place)?;
        }
        match &*place {
            Place::Resident { served, .. } => {
                lease.start_op();
                Ok(Active::new(Arc::clone(served), Arc::clone(lease)))
            }
            Place::Released => Err(Error::InvalidDpuSet(format!(
                "rank {} was freed by this program",
                lease.number
            ))),
            Place::Suspended(_) => unreachable!("resumed above"),
        }
    }

    /// Brings a suspended lease back on a slot (called with its place locked).
    fn resume(self: &Arc<Self>, lease: &Arc<Lease>, place: &mut Place) -> Result<()> {
        let t = Instant::now();
        let Place::Suspended(rank) = &*place else {
            return Ok(());
        };
        let what = format!("rank {} (suspended by the daemon)", lease.number);
        let g = lock(&self.inner);
        let (mut g, picked, _) = self
            .wait_turn(g, &lease.tenant, Some(1), self.nr_ranks as usize, &what)
            .map_err(|e| match e {
                Error::Allocation { requested, reason } => Error::Allocation {
                    requested,
                    reason: format!("it cannot be resumed: {reason}"),
                },
                e => e,
            })?;
        let slot = picked[0];
        let e = &mut g.ranks[slot];
        let old = e.served.take();
        e.state = State::Resuming;
        e.owner = Some(lease.tenant.clone());
        e.previous = None;
        drop(g);
        if let Some(old) = old {
            wipe(old);
        }
        let resumed = rank.resume(slot as u32);
        let mut g = lock(&self.inner);
        let e = &mut g.ranks[slot];
        e.since = Instant::now();
        let out = match resumed {
            Ok(served) => {
                let served = Arc::new(served);
                e.state = State::Allo;
                e.served = Some(Arc::clone(&served));
                e.lease = Some(Arc::clone(lease));
                e.usage = Arc::clone(&lease.usage);
                g.suspended.retain(|l| !Arc::ptr_eq(l, lease));
                lease.mark_resident();
                // Dropping the suspended rank removes its file.
                *place = Place::Resident {
                    slot: slot as u32,
                    served,
                };
                Ok(())
            }
            Err(err) => {
                e.state = State::Naav;
                e.owner = None;
                Err(err)
            }
        };
        drop(g);
        self.changed.notify_all();
        let ns = t.elapsed().as_nanos() as u64;
        match &out {
            Ok(()) => {
                lock(&self.resumes).add(ns);
                log!(
                    "resumed rank {} of tenant {} (pid {}) on slot {slot} in {:.1} ms",
                    lease.number,
                    lease.tenant.id,
                    lease.tenant.pid,
                    ns as f64 / 1e6
                );
            }
            Err(err) => log!(
                "cannot resume rank {} of tenant {}: {err}",
                lease.number,
                lease.tenant.id
            ),
        }
        out
    }

    /// The tenant frees a lease (`dpu_free`, or `dead`: it is gone): a resident rank is
    /// released, a suspended one's file removed.
    pub fn free(self: &Arc<Self>, lease: &Arc<Lease>, dead: bool) {
        let mut place = lease.lock_place();
        match std::mem::replace(&mut *place, Place::Released) {
            Place::Resident { slot, served } => {
                drop(served);
                drop(place);
                self.release(lease.tenant.id, slot, dead);
            }
            Place::Suspended(rank) => {
                drop(place);
                drop(rank);
                lock(&self.inner)
                    .suspended
                    .retain(|l| !Arc::ptr_eq(l, lease));
            }
            Place::Released => {}
        }
    }

    /// Suspensions so far.
    pub fn suspend_stats(&self) -> Timed {
        *lock(&self.suspends)
    }

    /// Resumptions so far.
    pub fn resume_stats(&self) -> Timed {
        *lock(&self.resumes)
    }

    /// Ranks suspended now and the bytes of their files.
    pub fn suspended_now(&self) -> (u64, u64) {
        let g = lock(&self.inner);
        let bytes = g
            .suspended
            .iter()
            .map(|l| l.suspended_bytes.load(Ordering::Relaxed))
            .sum();
        (g.suspended.len() as u64, bytes)
    }
}

/// The file a lease is suspended to.
fn suspend_path(dir: &std::path::Path, lease: &Lease) -> PathBuf {
    dir.join(format!(
        "tenant-{}-pid-{}-rank-{}.suspended",
        lease.tenant.id, lease.tenant.pid, lease.number
    ))
}
