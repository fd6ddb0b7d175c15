//! The remote backend: ranks run by the rank-manager daemon (`openpim daemon`), reached over
//! a UNIX socket.
//!
//! The tenant keeps what the SDK needs on its side: each rank's queue (asynchronous
//! operations in order, callbacks run here, in the tenant: [`crate::exec::queue`]) and a
//! mirror of the DPUs' programs (the loads and IRAM writes it sent), from which symbols are
//! resolved without a round trip. Everything that touches DPU memories or runs DPUs is a
//! request ([`protocol`]). The virtual clock gets the same facts as in process (the daemon
//! reports a transfer's interleaving time and a launch's statistics), plus the real cost of
//! the remote path: the round trip's time less the daemon's own work, placed on the rank's
//! timeline before the operation.

mod conn;
pub mod fastpath;
pub mod protocol;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use openpim_machine::{MachineConfig, SystemConfig};

use crate::clock::stats::{self, DpuRunStats};
use crate::clock::timeline;
use crate::error::{merge, Error, Result};
use crate::exec::local::rank::{print_fault_line, Pending};
use crate::exec::queue::{RankQueue, RunsOps};
use crate::exec::{
    call_shape, AllocRequest, Backend, CallbackJob, RankInfo, RankOp, RankStatus, XferItem,
};
use crate::program::Program;
use crate::xfer::Place;
use conn::{unexpected, Conn};
use fastpath::{batchable, Batch, ReadCache, ReadPlan};
use protocol::{RankOutcome, Reply, Request, WireItem, WireOp};

/// The environment variable naming the daemon's socket (the profile key `server=` does the
/// same for one allocation).
pub const SERVER_ENV: &str = "OPENPIM_SERVER";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ranks of a daemon (one per process and socket: [`RemoteBackend::shared`]).
pub struct RemoteBackend {
    path: String,
    conn: OnceLock<std::result::Result<Arc<Conn>, String>>,
    ranks: Mutex<HashMap<u32, Arc<RemoteRank>>>,
}

impl std::fmt::Debug for RemoteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteBackend({})", self.path)
    }
}

impl RemoteBackend {
    /// The process's backend for the daemon at `path`.
    pub fn shared(path: &str) -> Arc<RemoteBackend> {
        static SHARED: Mutex<Vec<Arc<RemoteBackend>>> = Mutex::new(Vec::new());
        let mut all = lock(&SHARED);
        if let Some(b) = all.iter().find(|b| b.path == path) {
            return Arc::clone(b);
        }
        let b = Arc::new(RemoteBackend {
            path: path.to_string(),
            conn: OnceLock::new(),
            ranks: Mutex::new(HashMap::new()),
        });
        all.push(Arc::clone(&b));
        b
    }

    fn conn(&self) -> Result<Arc<Conn>> {
        match self.conn.get_or_init(|| {
            Conn::connect(&self.path)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        }) {
            Ok(c) => Ok(Arc::clone(c)),
            Err(e) => Err(Error::System(
                e.strip_prefix("system error: ").unwrap_or(e).to_string(),
            )),
        }
    }

    fn rank(&self, id: u32) -> Arc<RemoteRank> {
        match lock(&self.ranks).get(&id) {
            Some(r) => Arc::clone(r),
            None => panic!("rank {id} is not allocated by the remote backend"),
        }
    }

    /// The daemon's rank table (for `openpim pool`).
    pub fn pool(&self) -> Result<Vec<protocol::PoolRank>> {
        match self.conn()?.call(&Request::Pool)? {
            Reply::Pool(p) => Ok(p),
            other => Err(unexpected(&other)),
        }
    }
}

/// The daemon socket a profile selects: its `server=` key, else `OPENPIM_SERVER`, else none
/// (in process).
pub fn server_of(config: &SystemConfig) -> Option<String> {
    config
        .server
        .clone()
        .or_else(|| std::env::var(SERVER_ENV).ok().filter(|s| !s.is_empty()))
}

/// `UPMEM_PROFILE_BASE` then `profile`: the whole profile of an allocation, as the tenant
/// reads it (the daemon does not see the tenant's environment).
fn effective_profile(profile: &str) -> String {
    let base = std::env::var(openpim_machine::PROFILE_BASE_ENV).unwrap_or_default();
    [base.as_str(), profile]
        .iter()
        .filter(|p| !p.trim().is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

/// The machine a tenant's profile gets on a daemon whose machine `daemon_keys` fix
/// (`hardware=..,nrRanks=..`): the tenant's run options, the daemon's hardware unless the
/// tenant names one with ranks of the same shape, and the tenant's `nrRanks` /
/// `nrDpusPerRank` when they fit the daemon's (a smaller machine, as a program may ask for in
/// process). Both the tenant and the daemon compute it.
pub fn tenant_machine(profile: &str, daemon_keys: &str) -> Result<MachineConfig> {
    let mut tenant = SystemConfig::parse_with_base(None, profile)?;
    let daemon = SystemConfig::parse_with_base(None, daemon_keys)?.resolve()?;
    // Another hardware profile (a what-if study on a shared daemon) is the tenant's choice
    // when its ranks have the same shape as the daemon's.
    if let Some(h) = &tenant.hardware {
        let asked =
            openpim_machine::HardwareProfile::load(h).map_err(|e| Error::Profile(e.into()))?;
        if asked.topology.dpus_per_rank != daemon.hardware.topology.dpus_per_rank
            || asked.topology.chips_per_rank != daemon.hardware.topology.chips_per_rank
        {
            return Err(Error::Allocation {
                requested: format!("hardware '{h}'"),
                reason: format!(
                    "its ranks ({} DPUs in {} chips) are not the daemon's ('{}': {} DPUs in {} chips); leave hardware= out of the profile, or use a daemon started with --hardware {h}",
                    asked.topology.dpus_per_rank,
                    asked.topology.chips_per_rank,
                    daemon.hardware.name,
                    daemon.hardware.topology.dpus_per_rank,
                    daemon.hardware.topology.chips_per_rank
                ),
            });
        }
    } else {
        tenant.hardware = daemon.config.hardware.clone();
    }
    match tenant.nr_ranks {
        Some(n) if n > daemon.nr_ranks => {
            return Err(Error::Allocation {
                requested: format!("nrRanks={n}"),
                reason: format!(
                "the OpenPIM daemon serves {} ranks; ask for fewer, or start it with --ranks {n}",
                daemon.nr_ranks
            ),
            })
        }
        Some(_) => {}
        None => tenant.nr_ranks = Some(daemon.nr_ranks),
    }
    tenant.server = None;
    Ok(tenant.resolve()?)
}

impl Backend for RemoteBackend {
    fn start(&self) -> Result<()> {
        // The DPUs are simulated in the daemon, but a bad OPENPIM_THREADS is the same error
        // (and a doubtful one the same warning) as in process.
        crate::exec::local::threads::thread_setting()?;
        self.conn().map(|_| ())
    }

    fn machine(&self, profile: &str) -> Result<MachineConfig> {
        tenant_machine(&effective_profile(profile), &self.conn()?.machine)
    }

    fn alloc(&self, req: &AllocRequest) -> Result<Vec<RankInfo>> {
        let conn = self.conn()?;
        // The program's machine holds its ranks' number at most, as in process.
        let held = lock(&self.ranks).len() as u32;
        let free = req.machine.nr_ranks.saturating_sub(held);
        let want = req.ranks.unwrap_or(free);
        if want == 0 || want > free {
            return Err(crate::exec::ranks_exhausted(
                &req.what,
                req.machine.nr_ranks,
                free,
            ));
        }
        let reply = conn.call(&Request::Alloc {
            profile: effective_profile(&req.profile),
            ranks: Some(want),
            dpus: req.dpus,
            what: req.what.clone(),
        })?;
        let Reply::Ranks(got) = reply else {
            return Err(unexpected(&reply));
        };
        let hw = &req.machine.hardware;
        let mut table = lock(&self.ranks);
        Ok(got
            .into_iter()
            .map(|(slot, nr_dpus)| {
                let id = (0..)
                    .find(|i| !table.contains_key(i))
                    .expect("a free number");
                timeline::rank_allocated(id, nr_dpus, hw);
                let rank = Arc::new(RemoteRank {
                    id,
                    slot,
                    machine: Arc::clone(&req.machine),
                    conn: Arc::clone(&conn),
                    queue: RankQueue::new(id),
                    programs: Mutex::new(vec![None; nr_dpus as usize]),
                    faulted: AtomicBool::new(false),
                    nr_dpus,
                    batch: Mutex::default(),
                    cache: Mutex::default(),
                });
                table.insert(id, rank);
                RankInfo { id, nr_dpus }
            })
            .collect())
    }

    fn free(&self, rank: u32) {
        // The rank is released (on the daemon too) when its last queued operation is done.
        let r = lock(&self.ranks).remove(&rank);
        drop(r);
    }

    fn execute(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let mut ops: Vec<(Arc<RemoteRank>, RankOp)> = ops
            .into_iter()
            .map(|(id, op)| (self.rank(id), op))
            .collect();
        for (r, _) in &ops {
            r.queue.wait_idle();
        }
        ops.sort_by_key(|(r, _)| r.id);
        let issue = timeline::issue_now(call_shape_of(&ops));
        let ids: Vec<u32> = ops.iter().map(|(r, _)| r.id).collect();
        let _join = timeline::JoinOnDrop(ids);
        if ops.iter().all(|(_, op)| batchable(op)) {
            let results = ops
                .into_iter()
                .map(|(r, op)| timeline::with_sync_issue(issue, || r.add_to_batch(op)))
                .collect();
            return merge(results);
        }
        for (r, op) in &ops {
            r.flush()?;
            if !matches!(op, RankOp::Read { .. }) {
                lock(&r.cache).invalidate();
            }
        }
        let conn = Arc::clone(&ops[0].0.conn);
        let prepared: Vec<(Arc<RemoteRank>, Prepared)> = ops
            .into_iter()
            .map(|(r, op)| {
                let p = Prepared::of(op);
                (r, p)
            })
            .collect();
        let request = Request::Exec {
            ops: prepared
                .iter()
                .map(|(r, p)| (r.slot, p.wire.clone()))
                .collect(),
        };
        let (reply, tenant_ns) = conn.call_timed(&request)?;
        let Reply::Exec {
            outcomes, ipc_ns, ..
        } = reply
        else {
            return Err(unexpected(&reply));
        };
        if outcomes.len() != prepared.len() {
            return Err(Error::Internal(format!(
                "the daemon answered {} operations for {}",
                outcomes.len(),
                prepared.len()
            )));
        }
        let ipc = tenant_ns + ipc_ns;
        let results = prepared
            .into_iter()
            .zip(outcomes)
            .map(|((r, p), o)| timeline::with_sync_issue(issue, || r.complete(p, o, ipc)))
            .collect();
        merge(results)
    }

    fn enqueue(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        timeline::set_call_shape(call_shape(&ops));
        let queued = ops.into_iter().try_for_each(|(id, op)| {
            let r = self.rank(id);
            r.queue.enqueue(Arc::clone(&r) as Arc<dyn RunsOps>, op)
        });
        timeline::set_call_shape(Default::default());
        queued
    }

    fn spawn_detached(&self, rank: u32, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.rank(rank).queue.spawn_detached(job, ranks)
    }

    fn wait_idle(&self, rank: u32) {
        self.rank(rank).queue.wait_idle();
    }

    fn sync(&self, rank: u32) -> Result<()> {
        self.rank(rank).queue.sync()
    }

    fn status(&self, rank: u32) -> RankStatus {
        let r = self.rank(rank);
        RankStatus {
            idle: r.queue.is_idle(),
            faulted: r.faulted.load(Ordering::Acquire),
        }
    }

    fn programs(&self, rank: u32, first: u32, count: u32) -> Vec<Option<Arc<Program>>> {
        let r = self.rank(rank);
        let p = lock(&r.programs);
        p[first as usize..(first + count) as usize].to_vec()
    }

    fn log(&self, rank: u32, dpu: u32) -> Vec<u8> {
        let r = self.rank(rank);
        let _ = r.flush();
        match r.conn.call(&Request::Log { rank: r.slot, dpu }) {
            Ok(Reply::Bytes(b)) => b,
            _ => Vec::new(),
        }
    }

    fn run_stats(&self, rank: u32, first: u32, count: u32) -> Vec<Option<DpuRunStats>> {
        let r = self.rank(rank);
        let _ = r.flush();
        match r.conn.call(&Request::RunStats {
            rank: r.slot,
            first,
            count,
        }) {
            Ok(Reply::Stats(s)) if s.len() == count as usize => s,
            _ => vec![None; count as usize],
        }
    }
}

fn call_shape_of(ops: &[(Arc<RemoteRank>, RankOp)]) -> openpim_machine::CallShape {
    openpim_machine::CallShape {
        ranks: ops.len() as u32,
        bytes: ops.iter().map(|(_, op)| op.xfer_bytes()).sum(),
    }
}

/// A rank the daemon runs for this process.
struct RemoteRank {
    /// The rank as this process names it: ranks are numbered per process from 0, as the
    /// ranks of an in-process machine (vPIM's guests see their own rank devices the same way).
    id: u32,
    /// The rank in the daemon's server.
    slot: u32,
    machine: Arc<MachineConfig>,
    conn: Arc<Conn>,
    queue: RankQueue,
    /// The DPUs' programs as the daemon has them (the loads and IRAM writes sent).
    programs: Mutex<Vec<Option<Arc<Program>>>>,
    faulted: AtomicBool,
    nr_dpus: u32,
    /// Writes not sent yet ([`fastpath`]).
    batch: Mutex<Batch>,
    /// Read-ahead segments ([`fastpath`]).
    cache: Mutex<ReadCache>,
}

impl Drop for RemoteRank {
    fn drop(&mut self) {
        // The daemon wipes the rank and gives it to the next tenant; a daemon that is gone has
        // released it already.
        let _ = self.flush();
        let _ = self.conn.call(&Request::Free { rank: self.slot });
        timeline::rank_released(self.id);
    }
}

/// An operation turned into its request, with what its reply needs.
struct Prepared {
    wire: WireOp,
    pending: Pending,
    /// A read's destinations, in the items' order.
    read_into: Vec<XferItem>,
    read_len: usize,
    /// A load's program, or IRAM writes' (DPU, place, bytes), for the program mirror.
    mirror: Mirror,
}

enum Mirror {
    None,
    Load(Arc<Program>, Vec<u32>),
    Iram(Vec<(u32, u32, Vec<u8>)>),
}

impl Prepared {
    fn of(op: RankOp) -> Prepared {
        let pending = Pending::of(&op);
        let mut read_into = Vec::new();
        let mut read_len = 0;
        let mut mirror = Mirror::None;
        let wire = match op {
            RankOp::Load { program, dpus } => {
                let wire = WireOp::Load {
                    elf: program.elf().to_vec(),
                    origin: program.origin().map(str::to_string),
                    dpus: dpus.clone(),
                };
                mirror = Mirror::Load(program, dpus);
                wire
            }
            RankOp::Write { len, items } => {
                let mut bufs: Vec<Vec<u8>> = Vec::new();
                let mut seen: Vec<*mut u8> = Vec::new();
                let mut iram = Vec::new();
                let wire_items = items
                    .iter()
                    .map(|i| {
                        let buf = match seen.iter().position(|p| *p == i.buf.0) {
                            Some(k) => k,
                            None => {
                                // SAFETY: the unsafe API that accepted `i.buf` requires it to be
                                // valid for reads of `len` bytes until this transfer has run.
                                let src = unsafe {
                                    std::slice::from_raw_parts(i.buf.0.cast_const(), len)
                                };
                                bufs.push(src.to_vec());
                                seen.push(i.buf.0);
                                bufs.len() - 1
                            }
                        };
                        if let Place::Iram(a) = i.place {
                            iram.push((i.dpu, a.0, bufs[buf].clone()));
                        }
                        WireItem {
                            dpu: i.dpu,
                            place: i.place,
                            buf: buf as u32,
                        }
                    })
                    .collect();
                if !iram.is_empty() {
                    mirror = Mirror::Iram(iram);
                }
                WireOp::Write {
                    len: len as u32,
                    items: wire_items,
                    bufs,
                }
            }
            RankOp::Read { len, items } => {
                let wire_items = items
                    .iter()
                    .enumerate()
                    .map(|(k, i)| WireItem {
                        dpu: i.dpu,
                        place: i.place,
                        buf: k as u32,
                    })
                    .collect();
                read_into = items;
                read_len = len;
                WireOp::Read {
                    len: len as u32,
                    items: wire_items,
                }
            }
            RankOp::Launch { dpus } => WireOp::Launch {
                dpus: dpus.into_iter().map(|(d, _)| d).collect(),
            },
            RankOp::Callback(_) => unreachable!("callbacks run in the tenant"),
        };
        Prepared {
            wire,
            pending,
            read_into,
            read_len,
            mirror,
        }
    }
}

impl RemoteRank {
    /// Runs one operation through the daemon (from the rank's queue, or a synchronous call
    /// of one rank): a small write into the batch, a small read through the read-ahead
    /// cache, anything else after the batch.
    fn run_one(&self, op: RankOp) -> Result<()> {
        if batchable(&op) {
            return self.add_to_batch(op);
        }
        let hw = &self.machine.hardware;
        if let Err(e) = self.flush() {
            // Keep the clock's bookkeeping of the queued operation straight.
            timeline::finish_remote(self.id, hw, timeline::OpDone::Other, 0);
            return Err(e);
        }
        if let RankOp::Read { len, items } = &op {
            let plan = lock(&self.cache).plan(*len, items);
            if let Some(plan) = plan {
                return self.read_through_cache(*len, items.clone(), plan);
            }
        } else {
            lock(&self.cache).invalidate();
        }
        let p = Prepared::of(op);
        let (o, ipc) = match self.send(p.wire.clone()) {
            Ok(r) => r,
            Err(e) => {
                timeline::finish_remote(self.id, hw, timeline::OpDone::Other, 0);
                return Err(e);
            }
        };
        self.complete(p, o, ipc)
    }

    /// Sends one operation; its outcome and the remote path's CPU time.
    fn send(&self, wire: WireOp) -> Result<(RankOutcome, u64)> {
        let (reply, tenant_ns) = self.conn.call_timed(&Request::Exec {
            ops: vec![(self.slot, wire)],
        })?;
        let Reply::Exec {
            mut outcomes,
            ipc_ns,
            ..
        } = reply
        else {
            return Err(unexpected(&reply));
        };
        match outcomes.pop().filter(|_| outcomes.is_empty()) {
            Some(o) => Ok((o, tenant_ns + ipc_ns)),
            None => Err(Error::Internal("the daemon answered no operation".into())),
        }
    }

    /// Puts a small write in the batch: on the clock now, sent with the rank's next other
    /// operation (or now, if the batch is full).
    fn add_to_batch(&self, op: RankOp) -> Result<()> {
        lock(&self.cache).invalidate();
        let bytes = op.xfer_bytes() as usize;
        let p = Prepared::of(op);
        timeline::finish_remote(self.id, &self.machine.hardware, p.pending.done_after(0), 0);
        let full = {
            let mut b = lock(&self.batch);
            b.ops.push(p.wire);
            b.bytes += bytes;
            b.full(self.nr_dpus)
        };
        if full {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// Sends the batched writes; their remote-path cost goes on the rank's timeline now.
    fn flush(&self) -> Result<()> {
        let ops = std::mem::take(&mut *lock(&self.batch)).ops;
        if ops.is_empty() {
            return Ok(());
        }
        let (o, ipc) = self.send(WireOp::Batch(ops))?;
        timeline::remote_overhead(self.id, openpim_machine::Phase::CpuDpu, ipc);
        o.result.map_err(|w| w.to_error())
    }

    /// A small MRAM read through the read-ahead cache.
    fn read_through_cache(&self, len: usize, items: Vec<XferItem>, plan: ReadPlan) -> Result<()> {
        let hw = &self.machine.hardware;
        let fetch = match plan {
            ReadPlan::Hit => {
                let cpu = protocol::thread_cpu_ns();
                // SAFETY: the unsafe API that accepted the items' buffers requires them to be
                // valid for writes of `len` bytes until this transfer has run, which is now.
                unsafe { lock(&self.cache).serve(len, &items) };
                // Nothing moves on the bus (the fetch that brought the bytes was charged):
                // the copy from the cache is the read's whole cost.
                let ns = protocol::thread_cpu_ns().saturating_sub(cpu);
                timeline::finish_remote(self.id, hw, timeline::OpDone::Other, 0);
                timeline::remote_overhead(self.id, openpim_machine::Phase::DpuCpu, ns);
                return Ok(());
            }
            ReadPlan::Fetch { len } => len,
        };
        let wire = WireOp::Read {
            len: fetch as u32,
            items: items
                .iter()
                .enumerate()
                .map(|(k, i)| WireItem {
                    dpu: i.dpu,
                    place: i.place,
                    buf: k as u32,
                })
                .collect(),
        };
        let (mut o, ipc) = match self.send(wire.clone()) {
            Ok(r) => r,
            Err(e) => {
                timeline::finish_remote(self.id, hw, timeline::OpDone::Other, 0);
                return Err(e);
            }
        };
        let data = std::mem::take(&mut o.data);
        // The bytes the rank really sends are the fetched ones: the bus model charges them.
        let p = Prepared {
            wire,
            pending: Pending::Xfer {
                dir: openpim_machine::Direction::FromDpu,
                len: fetch,
                items: items.clone(),
            },
            read_into: Vec::new(),
            read_len: 0,
            mirror: Mirror::None,
        };
        self.complete(p, o, ipc)?;
        if data.len() != fetch * items.len() {
            return Err(Error::Internal(format!(
                "the daemon returned {} bytes for a read of {}",
                data.len(),
                fetch * items.len()
            )));
        }
        for (i, chunk) in items.iter().zip(data.chunks(fetch.max(1))) {
            // SAFETY: as above.
            let dst = unsafe { std::slice::from_raw_parts_mut(i.buf.0, len) };
            dst.copy_from_slice(&chunk[..len]);
        }
        lock(&self.cache).keep(len, fetch, &items, &data);
        Ok(())
    }

    /// Applies the daemon's outcome of an operation: read data into the host buffers, the
    /// program mirror, the launch's statistics, and the operation on the virtual clock
    /// after `ipc_ns` of remote-path overhead.
    fn complete(&self, p: Prepared, o: RankOutcome, ipc_ns: u64) -> Result<()> {
        // The daemon names its own rank; the program knows it by its number.
        let result = o.result.map_err(|w| match w.to_error() {
            Error::DpuFault { mut first, count } => {
                first.rank = self.id;
                Error::DpuFault { first, count }
            }
            e => e,
        });
        if let (Err(e), Pending::Launch) = (&result, &p.pending) {
            print_fault_line(e);
        }
        if result.is_ok() && !p.read_into.is_empty() {
            let need = p.read_len * p.read_into.len();
            if o.data.len() != need {
                return Err(Error::Internal(format!(
                    "the daemon returned {} bytes for a read of {need}",
                    o.data.len()
                )));
            }
            for (item, chunk) in p.read_into.iter().zip(o.data.chunks(p.read_len.max(1))) {
                // SAFETY: the unsafe API that accepted `item.buf` requires it to be valid for
                // writes of `len` bytes until this transfer has run, which is now.
                let dst = unsafe { std::slice::from_raw_parts_mut(item.buf.0, p.read_len) };
                dst.copy_from_slice(chunk);
            }
        }
        if result.is_ok() {
            let mut programs = lock(&self.programs);
            match p.mirror {
                Mirror::None => {}
                Mirror::Load(program, dpus) => {
                    for d in dpus {
                        if let Some(slot) = programs.get_mut(d as usize) {
                            *slot = Some(Arc::clone(&program));
                        }
                    }
                }
                Mirror::Iram(writes) => {
                    for (dpu, offset, bytes) in writes {
                        if let Some(Some(old)) = programs.get(dpu as usize) {
                            let new = old.with_patched_text(offset, &bytes)?;
                            programs[dpu as usize] = Some(new);
                        }
                    }
                }
            }
        }
        if let Some(mut record) = o.facts.launch {
            record.rank = self.id;
            self.faulted.store(record.faults > 0, Ordering::Release);
            stats::record_launch(record);
        }
        let done = p.pending.done_after(o.facts.host_ns);
        timeline::finish_remote(self.id, &self.machine.hardware, done, ipc_ns);
        result
    }
}

impl RunsOps for RemoteRank {
    fn run_op(&self, op: RankOp) -> Result<()> {
        match op {
            RankOp::Callback(job) => self.queue.run_callback(job),
            op => self.run_one(op),
        }
    }
}
