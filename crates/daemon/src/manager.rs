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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openpim_machine::MachineConfig;
use openpim_runtime::exec::local::served::ServedRank;
use openpim_runtime::exec::remote::protocol::PoolRank;
use openpim_runtime::{Error, Result};

use crate::config::Config;

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
}

/// What an allocation got.
pub struct Granted {
    pub rank: u32,
    pub served: Arc<ServedRank>,
    pub usage: Arc<Usage>,
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
            }),
            changed: Condvar::new(),
            config,
            nr_ranks: machine.nr_ranks,
            dpus_per_rank: machine.dpus_per_rank,
            started: now,
            wipe_stats: Mutex::new((0, 0, 0)),
            alloc_stats: Mutex::new((0, 0, 0)),
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
        let mut g = lock(&self.inner);
        // Quota: ranks the user holds (all its processes) plus these.
        if let Some(q) = self.config.quota(tenant.uid) {
            let held = g
                .ranks
                .iter()
                .filter(|e| {
                    e.state == State::Allo && e.owner.as_ref().is_some_and(|o| o.uid == tenant.uid)
                })
                .count() as u32;
            let asked = want.unwrap_or(1);
            if held + asked > q {
                return Err(refuse(format!(
                    "user {} may hold {q} ranks at once (daemon quota) and holds {held}; free ranks first or ask the daemon's operator for a larger quota",
                    tenant.uid
                )));
            }
        }
        let ticket = g.next_ticket;
        g.next_ticket += 1;
        g.queue.push_back(ticket);
        let asked_at = Instant::now();
        let deadline = asked_at + self.config.alloc_timeout;
        let mut waited = false;
        loop {
            if g.closed {
                g.queue.retain(|t| *t != ticket);
                self.changed.notify_all();
                return Err(refuse("the daemon is shutting down".into()));
            }
            if g.queue.front() == Some(&ticket) {
                if let Some(picked) = self.pick(&mut g, tenant.id, want, machine.nr_ranks as usize)
                {
                    g.queue.pop_front();
                    let granted = self.grant(&mut g, tenant, picked, dpus, machine);
                    self.changed.notify_all();
                    if !waited && granted.is_ok() {
                        let ns = asked_at.elapsed().as_nanos() as u64;
                        let mut a = lock(&self.alloc_stats);
                        a.0 += 1;
                        a.1 += ns;
                        a.2 = a.2.max(ns);
                    }
                    return granted;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                g.queue.retain(|t| *t != ticket);
                self.changed.notify_all();
                let busy = g.ranks.iter().filter(|e| e.state != State::Naav).count();
                return Err(refuse(format!(
                    "{busy} of the daemon's {} ranks are held by other programs or being wiped, and none came free within {:.1} s (alloc_timeout_s); try again later or ask for fewer",
                    self.nr_ranks,
                    self.config.alloc_timeout.as_secs_f64()
                )));
            }
            waited = true;
            // Released ranks are wiped after the reuse time: wake up for that too.
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
                            }
                            return Err(err);
                        }
                    }
                }
            };
            e.state = State::Allo;
            e.owner = Some(tenant.clone());
            e.previous = None;
            e.since = Instant::now();
            e.usage = Arc::default();
            e.served = Some(Arc::clone(&served));
            out.push(Granted {
                rank: i as u32,
                served,
                usage: Arc::clone(&e.usage),
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
        g.ranks
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let held = now.saturating_duration_since(e.since);
                let busy = Duration::from_nanos(e.usage.busy_ns.load(Ordering::Relaxed));
                PoolRank {
                    rank: i as u32,
                    state: match e.state {
                        State::Naav => "NAAV",
                        State::Allo => "ALLO",
                        State::Released | State::Wiping => "NANA",
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
            })
            .collect()
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
