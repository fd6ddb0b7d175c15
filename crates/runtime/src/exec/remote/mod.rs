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
pub mod inplace;
pub mod peer;
pub mod protocol;
pub mod ring;
pub mod staging;

use std::sync::{Arc, Mutex, OnceLock};

use openpim_machine::{MachineConfig, SystemConfig};

use crate::clock::stats::DpuRunStats;
use crate::clock::timeline;
use crate::error::{merge, Error, Result};
use crate::exec::local::rank::{print_fault_line, Pending};
use crate::exec::queued::{
    connected, lock, run_in_chunks, HostSide, Mirror, QueuedRank, RankTable,
};
use crate::exec::{
    effective_profile, AllocRequest, Backend, CallbackJob, RankInfo, RankOp, RankStatus, XferItem,
};
use crate::program::Program;
use conn::{unexpected, Conn};
use fastpath::{batchable, in_place_bytes, switches, Batch, ReadCache, ReadPlan};
use protocol::{
    wire_items_of, write_items_of, InlineBufs, RankOutcome, Reply, Request, WireOp, WriteBufs,
};
use ring::path_cpu_ns as thread_cpu_ns;
use staging::{grown_size, Region, MAX_STAGING};

/// How long `dpu_status` waits, at most, for a rank's queued operations through a daemon
/// before answering that the rank is busy (real time, not counted: see
/// [`crate::exec::Backend::polled_status`]).
const REMOTE_STATUS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// The environment variable naming the daemon's socket (the profile key `server=` does the
/// same for one allocation).
pub const SERVER_ENV: &str = "OPENPIM_SERVER";

/// The ranks of a daemon (one per process and socket: [`RemoteBackend::shared`]).
pub struct RemoteBackend {
    path: String,
    conn: OnceLock<std::result::Result<Arc<Conn>, String>>,
    ranks: RankTable<RemoteRank>,
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
            ranks: RankTable::new("remote"),
        });
        all.push(Arc::clone(&b));
        b
    }

    fn conn(&self) -> Result<Arc<Conn>> {
        connected(&self.conn, || Conn::connect(&self.path))
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
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

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
        let held = self.ranks.lock().len() as u32;
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
        let mut table = self.ranks.lock();
        Ok(got
            .into_iter()
            .map(|(slot, nr_dpus)| {
                let id = (0..)
                    .find(|i| !table.contains_key(i))
                    .expect("a free number");
                timeline::rank_allocated(id, nr_dpus, hw);
                let rank = Arc::new(RemoteRank {
                    host: HostSide::new(id, nr_dpus),
                    slot,
                    machine: Arc::clone(&req.machine),
                    conn: Arc::clone(&conn),
                    nr_dpus,
                    batch: Mutex::default(),
                    cache: Mutex::default(),
                    staging: Mutex::default(),
                });
                table.insert(id, rank);
                RankInfo { id, nr_dpus }
            })
            .collect())
    }

    fn free(&self, rank: u32) {
        self.ranks.free(rank);
    }

    fn execute(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        self.ranks.execute(ops, |mut ops, issue| {
            if ops.len() == 1 {
                // One rank: as a queued operation runs (the batch, the read-ahead cache).
                let (r, op) = ops.pop().expect("one operation");
                return timeline::with_sync_issue(issue, || r.run_one(op));
            }
            if ops.iter().all(|(r, op)| batchable(op, r.conn.in_place)) {
                let results = ops
                    .into_iter()
                    .map(|(r, op)| timeline::with_sync_issue(issue, || r.add_to_batch(op)))
                    .collect();
                return merge(results);
            }
            for (r, op) in &ops {
                // Each rank's batch rides along with its operation, unless the operation's
                // bytes need the staging region's room.
                if !r.batch_has_room(op.xfer_bytes() as usize) {
                    r.flush()?;
                }
                if !matches!(op, RankOp::Read { .. }) {
                    lock(&r.cache).invalidate();
                }
            }
            let conn = Arc::clone(&ops[0].0.conn);
            let mut wires = Vec::with_capacity(ops.len());
            let prepared: Vec<(Arc<RemoteRank>, Prepared)> = ops
                .into_iter()
                .map(|(r, op)| {
                    let (wire, mut p) = r.prepare(op, thread_cpu_ns());
                    let batch = std::mem::take(&mut *lock(&r.batch));
                    let wire = if batch.ops.is_empty() {
                        wire
                    } else {
                        p.carried_ns += batch.copy_ns;
                        let mut ops = batch.ops;
                        ops.push(wire);
                        WireOp::Batch(ops)
                    };
                    wires.push((r.slot, wire));
                    (r, p)
                })
                .collect();
            let request = Request::Exec { ops: wires };
            let called = conn.call(&request);
            for (r, _) in &prepared {
                lock(&r.staging).used = 0;
            }
            let reply = called?;
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
            let results = prepared
                .into_iter()
                .zip(outcomes)
                .map(|((r, p), o)| timeline::with_sync_issue(issue, || r.complete(p, o, ipc_ns)))
                .collect();
            merge(results)
        })
    }

    fn enqueue(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        self.ranks.enqueue(ops)
    }

    fn spawn_detached(&self, rank: u32, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.ranks.spawn_detached(rank, job, ranks)
    }

    fn wait_idle(&self, rank: u32) {
        self.ranks.wait_idle(rank);
    }

    fn sync(&self, rank: u32) -> Result<()> {
        self.ranks.sync(rank)
    }

    fn status(&self, rank: u32) -> RankStatus {
        self.ranks.status(rank)
    }

    fn polled_status(&self, rank: u32, _ran_past: &dyn Fn(u64) -> bool) -> RankStatus {
        // The daemon does not report a launch's progress while it runs: the wait for the
        // rank's queued operations is bounded in real time instead.
        self.ranks.polled_status(rank, REMOTE_STATUS_PATIENCE)
    }

    fn programs(&self, rank: u32, first: u32, count: u32) -> Vec<Option<Arc<Program>>> {
        self.ranks.programs(rank, first, count)
    }

    fn log(&self, rank: u32, dpu: u32) -> Result<Vec<u8>> {
        self.ranks.flushed(rank, |r| {
            match r.conn.call(&Request::Log { rank: r.slot, dpu }) {
                Ok(Reply::Bytes(b)) => Ok(b),
                Err(e @ Error::LogBufferTooSmall { .. }) => Err(e),
                // (A daemon gone away reports itself at the next operation.)
                _ => Ok(Vec::new()),
            }
        })
    }

    fn run_stats(&self, rank: u32, first: u32, count: u32) -> Vec<Option<DpuRunStats>> {
        self.ranks.flushed(rank, |r| {
            match r.conn.call(&Request::RunStats {
                rank: r.slot,
                first,
                count,
            }) {
                Ok(Reply::Stats(s)) if s.len() == count as usize => s,
                _ => vec![None; count as usize],
            }
        })
    }
}

/// A rank the daemon runs for this process.
struct RemoteRank {
    /// The queue, the program mirror (the loads and IRAM writes sent to the daemon), the
    /// operation lock; its id is the rank as this process names it: ranks are numbered per
    /// process from 0, as the ranks of an in-process machine (vPIM's guests see their own
    /// rank devices the same way).
    ///
    /// The operation lock is held by each remote operation on the rank from its preparation
    /// to its completion: they share the batch and the staging region (threads of a program
    /// may call on DPUs of one rank at once; the daemon runs a rank's operations one at a
    /// time anyway). The methods below the entry points (`run_op`, `execute`, `log`,
    /// `run_stats`, drop) expect it held.
    host: HostSide,
    /// The rank in the daemon's server.
    slot: u32,
    machine: Arc<MachineConfig>,
    conn: Arc<Conn>,
    nr_dpus: u32,
    /// Writes not sent yet ([`fastpath`]).
    batch: Mutex<Batch>,
    /// Read-ahead segments ([`fastpath`]).
    cache: Mutex<ReadCache>,
    /// The zero-copy staging region ([`staging`]).
    staging: Mutex<Staged>,
}

/// A rank's staging region and how much of it is in use (by the batch, or by the one
/// operation in flight).
#[derive(Default)]
struct Staged {
    region: Option<Region>,
    used: usize,
    /// No region could be made (or the daemon refused it): transfers travel in messages.
    failed: bool,
}

impl Drop for RemoteRank {
    fn drop(&mut self) {
        // The daemon wipes the rank and gives it to the next tenant; a daemon that is gone has
        // released it already.
        let _op = lock(&self.host.op);
        let _ = self.flush();
        let _ = self.conn.call(&Request::Free { rank: self.slot });
        timeline::rank_released(self.host.id);
    }
}

/// An operation turned into its request ([`RemoteRank::prepare`] returns the two), with
/// what its reply needs.
struct Prepared {
    pending: Pending,
    /// A read's place in the staging region, when the daemon puts its bytes there.
    staged: Option<u64>,
    /// A read's destinations, in the items' order.
    read_into: Vec<XferItem>,
    read_len: usize,
    /// This thread's CPU clock when the preparation began: the remote path's cost on the
    /// program's side is this thread's CPU time from here to the end of the completion's
    /// copies (one pair of clock reads per operation: each read is a system call).
    start_cpu: u64,
    /// Remote-path CPU time measured elsewhere that this operation's message carries (the
    /// copies of the batched writes riding along).
    carried_ns: u64,
    /// A load's program, or IRAM writes' (DPU, place, bytes), for the program mirror.
    mirror: Mirror,
}

/// What an operation's preparation makes: its request, and what its reply needs.
type PreparedOp = (WireOp, Prepared);

impl RemoteRank {
    /// Reserves `bytes` of the staging region (creating or growing it when nothing is in
    /// it); `None` when the bytes travel in the message (zero-copy off, a transfer of less
    /// than a page or larger than any region, no region possible, or the room taken by a
    /// batch). Less than a page costs less to copy through the message than the region's
    /// first touches, and a program that moves only small data never makes a region.
    fn reserve(&self, st: &mut Staged, bytes: usize) -> Option<usize> {
        if !switches().zero_copy || st.failed || !(fastpath::PAGE..=MAX_STAGING).contains(&bytes) {
            return None;
        }
        let cap = st.region.as_ref().map_or(0, Region::len);
        if st.used + bytes > cap {
            if st.used > 0 {
                return None;
            }
            // Room for a full batch of writes from the start.
            let want = bytes.max(Batch::capacity(self.nr_dpus));
            let made = Region::create(grown_size(cap, want)).and_then(|region| {
                let req = Request::Staging {
                    rank: self.slot,
                    size: region.len() as u64,
                };
                self.conn.call_with_fd(&req, region.fd())?;
                Ok(region)
            });
            match made {
                Ok(region) => st.region = Some(region),
                Err(_) => {
                    st.failed = true;
                    return None;
                }
            }
        }
        let at = st.used;
        st.used += bytes;
        Some(at)
    }

    /// Whether a write of `bytes` more fits the staging region beside the batch.
    fn batch_has_room(&self, bytes: usize) -> bool {
        let st = lock(&self.staging);
        let cap = st.region.as_ref().map_or(0, Region::len);
        st.used == 0 || st.used + bytes <= cap
    }

    /// An operation as its request: a write's bytes copied into the staging region (or the
    /// message), a read's destination in the region (or the reply); after the batch's
    /// bytes, if any (the region's room is free again once a request is answered).
    /// `start_cpu`: this thread's CPU clock when the operation's remote-path cost began.
    fn prepare(&self, op: RankOp, start_cpu: u64) -> PreparedOp {
        let pending = Pending::of(&op);
        let mut read_into = Vec::new();
        let mut read_len = 0;
        let mut mirror = Mirror::None;
        let mut st = lock(&self.staging);
        let wire = match op {
            RankOp::Load { program, dpus } => {
                let wire = WireOp::load(&program, &dpus);
                mirror = Mirror::Load(program, dpus);
                wire
            }
            RankOp::Write { len, items } => {
                // DPUs given the same host buffer share one (a broadcast is sent once).
                let (wire_items, srcs) = write_items_of(&items);
                // SAFETY: the unsafe API that accepted the items' buffers requires them to be
                // valid for reads of `len` bytes until this transfer has run.
                mirror = unsafe { Mirror::of_write(len, &items) };
                // SAFETY: as above, for every distinct buffer.
                let src = |p: *mut u8| unsafe { std::slice::from_raw_parts(p.cast_const(), len) };
                let in_place = self.conn.in_place && in_place_bytes(len, &items);
                let at = if in_place {
                    None
                } else {
                    self.reserve(&mut st, len * srcs.len())
                };
                let bufs = match at {
                    // The daemon reads the buffers themselves (valid until the transfer
                    // has run, as above).
                    _ if in_place => {
                        WriteBufs::InPlace(srcs.iter().map(|p| *p as usize as u64).collect())
                    }
                    Some(at) => {
                        let region = st.region.as_ref().expect("reserved");
                        let offsets = srcs
                            .iter()
                            .enumerate()
                            .map(|(k, p)| {
                                region.put(at + k * len, src(*p));
                                (at + k * len) as u64
                            })
                            .collect();
                        WriteBufs::Staged(offsets)
                    }
                    // SAFETY: as above.
                    None => WriteBufs::Inline(unsafe { InlineBufs::copied(len, &srcs) }),
                };
                WireOp::Write {
                    len: len as u32,
                    items: wire_items,
                    bufs,
                }
            }
            RankOp::Read { len, items } if self.conn.in_place && in_place_bytes(len, &items) => {
                // The daemon writes the buffers themselves: nothing to copy here.
                WireOp::ReadInPlace {
                    len: len as u32,
                    items: wire_items_of(&items),
                    addrs: items.iter().map(|i| i.buf.0 as usize as u64).collect(),
                }
            }
            RankOp::Read { len, items } => {
                let staged = self.reserve(&mut st, len * items.len()).map(|at| at as u64);
                read_into = items;
                read_len = len;
                WireOp::Read {
                    len: len as u32,
                    items: wire_items_of(&read_into),
                    staged,
                }
            }
            RankOp::Launch { dpus } => WireOp::Launch {
                dpus: dpus.into_iter().map(|(d, _)| d).collect(),
            },
            RankOp::Callback(_) => unreachable!("callbacks run in the tenant"),
        };
        let staged = match wire {
            WireOp::Read { staged, .. } => staged,
            _ => None,
        };
        let p = Prepared {
            pending,
            staged,
            read_into,
            read_len,
            start_cpu,
            carried_ns: 0,
            mirror,
        };
        (wire, p)
    }

    /// Copies a read's `len` bytes per item (`data`, or the staging region from `staged`)
    /// into the items' buffers.
    fn copy_out(
        &self,
        len: usize,
        items: &[XferItem],
        staged: Option<u64>,
        data: &[u8],
    ) -> Result<()> {
        let st = lock(&self.staging);
        let need = len * items.len();
        let src: &[u8] = match (staged, &st.region) {
            (Some(at), Some(region)) if region.at(at, need as u64).is_some() => {
                // SAFETY: inside the mapping (checked); the daemon wrote it before replying
                // and nothing writes it until this rank's next operation.
                unsafe { std::slice::from_raw_parts(region.at(at, 0).expect("inside"), need) }
            }
            _ => data,
        };
        if src.len() != need {
            return Err(Error::Internal(format!(
                "the daemon returned {} bytes for a read of {need}",
                src.len()
            )));
        }
        for (item, chunk) in items.iter().zip(src.chunks(len.max(1))) {
            // SAFETY: the unsafe API that accepted `item.buf` requires it to be valid for
            // writes of `len` bytes until this transfer has run, which is now.
            let dst = unsafe { std::slice::from_raw_parts_mut(item.buf.0, len) };
            dst.copy_from_slice(chunk);
        }
        Ok(())
    }
}

impl QueuedRank for RemoteRank {
    fn host(&self) -> &HostSide {
        &self.host
    }

    /// Sends the batched writes; their remote-path cost goes on the rank's timeline now.
    fn flush(&self) -> Result<()> {
        let batch = std::mem::take(&mut *lock(&self.batch));
        if batch.ops.is_empty() {
            return Ok(());
        }
        let cpu0 = thread_cpu_ns();
        let (o, ipc) = self.send(WireOp::Batch(batch.ops))?;
        let ns = thread_cpu_ns().saturating_sub(cpu0) + ipc + batch.copy_ns;
        timeline::remote_overhead(self.host.id, openpim_machine::Phase::CpuDpu, ns);
        o.result.map_err(|w| w.to_error())
    }

    /// Runs one operation through the daemon (from the rank's queue, or a synchronous call
    /// of one rank): a small write into the batch, a small read through the read-ahead
    /// cache, anything else after the batch.
    fn run_one(&self, op: RankOp) -> Result<()> {
        if batchable(&op, self.conn.in_place) {
            return self.add_to_batch(op);
        }
        let hw = &self.machine.hardware;
        if let RankOp::Read { len, items } = &op {
            let mut cache = lock(&self.cache);
            match cache.plan(*len, items, self.nr_dpus) {
                // A read that fetches only its own bytes takes the usual path (the staging
                // region, or in place: nothing copied through the messages), and so does a
                // large one (in place, without reading ahead).
                Some(ReadPlan::Fetch { len: fetch })
                    if fetch == *len || (self.conn.in_place && in_place_bytes(*len, items)) =>
                {
                    cache.note(*len, items);
                }
                Some(plan) => {
                    drop(cache);
                    return self.read_through_cache(*len, items.clone(), plan);
                }
                None => {}
            }
        } else {
            lock(&self.cache).invalidate();
        }
        // The batch rides along with the operation, unless the operation's bytes need the
        // staging region's room.
        if !self.batch_has_room(op.xfer_bytes() as usize) {
            if let Err(e) = self.flush() {
                // Keep the clock's bookkeeping of the queued operation straight.
                timeline::finish_remote(self.host.id, hw, timeline::OpDone::Other, 0);
                return Err(e);
            }
        }
        let (wire, p) = self.prepare(op, thread_cpu_ns());
        let (o, ipc) = match self.send_after_batch(wire) {
            Ok(r) => r,
            Err(e) => {
                timeline::finish_remote(self.host.id, hw, timeline::OpDone::Other, 0);
                return Err(e);
            }
        };
        self.complete(p, o, ipc)
    }

    /// Runs operations queued on the rank one after the other (no callback among them): the
    /// small writes at their head join the batch as usual; the others go to the daemon in
    /// one message ([`Request::Queue`]), each run whatever the outcome of the ones before,
    /// as the rank's queue runs them in process.
    fn run_queued(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
        if !switches().queue {
            return ops.into_iter().map(|op| self.run_one(op)).collect();
        }
        run_in_chunks(
            ops,
            |op| batchable(op, self.conn.in_place),
            |op| self.add_to_batch(op),
            |chunk| match chunk.len() {
                1 => chunk.into_iter().map(|op| self.run_one(op)).collect(),
                _ => self.send_queue(chunk),
            },
        )
    }

    fn may_wait(&self, op: &RankOp) -> bool {
        switches().queue && matches!(op, RankOp::Read { .. } | RankOp::Write { .. })
    }
}

impl RemoteRank {
    /// Sends one operation with the batched writes before it (one message); its outcome
    /// (or a batched write's error), the daemon's remote-path CPU time plus the batch's
    /// copies.
    fn send_after_batch(&self, wire: WireOp) -> Result<(RankOutcome, u64)> {
        let batch = std::mem::take(&mut *lock(&self.batch));
        if batch.ops.is_empty() {
            return self.send(wire);
        }
        let mut ops = batch.ops;
        ops.push(wire);
        let (o, ipc) = self.send(WireOp::Batch(ops))?;
        Ok((o, ipc + batch.copy_ns))
    }

    /// Sends one operation; its outcome and the daemon's remote-path CPU time.
    fn send(&self, wire: WireOp) -> Result<(RankOutcome, u64)> {
        let called = self.conn.call(&Request::Exec {
            ops: vec![(self.slot, wire)],
        });
        // The staging region's room is free again once the daemon has answered.
        lock(&self.staging).used = 0;
        let reply = called?;
        let Reply::Exec {
            mut outcomes,
            ipc_ns,
            ..
        } = reply
        else {
            return Err(unexpected(&reply));
        };
        match outcomes.pop().filter(|_| outcomes.is_empty()) {
            Some(o) => Ok((o, ipc_ns)),
            None => Err(Error::Internal("the daemon answered no operation".into())),
        }
    }

    /// Puts a small write in the batch: on the clock now, sent with the rank's next other
    /// operation (or now, if the batch is full).
    fn add_to_batch(&self, op: RankOp) -> Result<()> {
        lock(&self.cache).invalidate();
        let bytes = op.xfer_bytes() as usize;
        // The batch's writes share the staging region: one that does not fit beside them
        // sends them first.
        if !self.batch_has_room(bytes) {
            self.flush()?;
        }
        let (wire, p) = self.prepare(op, thread_cpu_ns());
        timeline::finish_remote(
            self.host.id,
            &self.machine.hardware,
            p.pending.done_after(0),
            0,
        );
        let full = {
            let mut b = lock(&self.batch);
            b.ops.push(wire);
            b.bytes += bytes;
            b.copy_ns += thread_cpu_ns().saturating_sub(p.start_cpu);
            b.full(self.nr_dpus)
        };
        if full {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// A small MRAM read through the read-ahead cache.
    fn read_through_cache(&self, len: usize, items: Vec<XferItem>, plan: ReadPlan) -> Result<()> {
        let hw = &self.machine.hardware;
        let fetch = match plan {
            ReadPlan::Hit => {
                let cpu = thread_cpu_ns();
                // SAFETY: the unsafe API that accepted the items' buffers requires them to be
                // valid for writes of `len` bytes until this transfer has run, which is now.
                unsafe { lock(&self.cache).serve(len, &items) };
                // Nothing moves on the bus (the fetch that brought the bytes was charged):
                // the copy from the cache is the read's whole cost.
                let ns = thread_cpu_ns().saturating_sub(cpu);
                timeline::finish_remote(self.host.id, hw, timeline::OpDone::Other, 0);
                timeline::remote_overhead(self.host.id, openpim_machine::Phase::DpuCpu, ns);
                return Ok(());
            }
            ReadPlan::Fetch { len } => len,
            ReadPlan::Across => len,
        };
        let across = matches!(plan, ReadPlan::Across).then(|| items[0].place);
        // What the rank sends: the items, or the place on every DPU of the rank (their
        // buffers are the cache's: the pointers only tell the bus model the DPUs' buffers
        // are distinct, and are never used).
        let fetched_items: Vec<XferItem> = match across {
            Some(place) => (0..self.nr_dpus)
                .map(|dpu| XferItem {
                    dpu,
                    place,
                    buf: crate::exec::HostPtr(items[0].buf.0.wrapping_add(dpu as usize)),
                })
                .collect(),
            None => items.clone(),
        };
        let cpu0 = thread_cpu_ns();
        // Small reads: in the reply (the segment is kept in the cache anyway).
        let wire = WireOp::Read {
            len: fetch as u32,
            items: wire_items_of(&fetched_items),
            staged: None,
        };
        let (mut o, ipc) = match self.send_after_batch(wire) {
            Ok(r) => r,
            Err(e) => {
                timeline::finish_remote(self.host.id, hw, timeline::OpDone::Other, 0);
                return Err(e);
            }
        };
        let data = std::mem::take(&mut o.data);
        // The bytes the rank really sends are the fetched ones: the bus model charges them.
        let p = Prepared {
            staged: None,
            pending: Pending::Xfer {
                dir: openpim_machine::Direction::FromDpu,
                len: fetch,
                items: fetched_items.clone(),
            },
            read_into: Vec::new(),
            read_len: 0,
            start_cpu: cpu0,
            carried_ns: 0,
            mirror: Mirror::None,
        };
        if o.result.is_ok() {
            if data.len() != fetch * fetched_items.len() {
                return Err(Error::Internal(format!(
                    "the daemon returned {} bytes for a read of {}",
                    data.len(),
                    fetch * fetched_items.len()
                )));
            }
            match across {
                Some(place) => {
                    let mut cache = lock(&self.cache);
                    cache.keep_across(len, place, &data);
                    // SAFETY: as above; the item's DPU's bytes are in the cache now.
                    unsafe { cache.serve(len, &items) };
                }
                None => {
                    for (i, chunk) in items.iter().zip(data.chunks(fetch.max(1))) {
                        // SAFETY: as above.
                        let dst = unsafe { std::slice::from_raw_parts_mut(i.buf.0, len) };
                        dst.copy_from_slice(&chunk[..len]);
                    }
                    lock(&self.cache).keep(len, fetch, &items, &data);
                }
            }
        }
        self.complete(p, o, ipc)
    }

    /// Applies the daemon's outcome of an operation: read data into the host buffers, the
    /// program mirror, the launch's statistics, and the operation on the virtual clock
    /// after its remote-path overhead: `daemon_ns` (the daemon's part, and what the message
    /// carried) and this thread's CPU time since the preparation.
    fn complete(&self, p: Prepared, o: RankOutcome, daemon_ns: u64) -> Result<()> {
        let landed = self.land(&p, &o);
        let ipc_ns = daemon_ns + p.carried_ns + thread_cpu_ns().saturating_sub(p.start_cpu);
        self.account(p, o, landed, ipc_ns)
    }

    /// A read's bytes into the program's buffers (copying them in and out of the program's
    /// buffers is the remote path's cost too).
    fn land(&self, p: &Prepared, o: &RankOutcome) -> Result<()> {
        if o.result.is_ok() && !p.read_into.is_empty() {
            self.copy_out(p.read_len, &p.read_into, p.staged, &o.data)
        } else {
            Ok(())
        }
    }

    /// The rest of [`RemoteRank::complete`] once the bytes have landed (`landed`): the
    /// program mirror, the launch's statistics, the operation on the clock after `ipc_ns`
    /// of remote path.
    fn account(&self, p: Prepared, o: RankOutcome, landed: Result<()>, ipc_ns: u64) -> Result<()> {
        // The daemon names its own rank; the program knows it by its number.
        let result = o
            .result
            .map_err(|w| match w.to_error() {
                Error::DpuFault { mut first, count } => {
                    first.rank = self.host.id;
                    Error::DpuFault { first, count }
                }
                e => e,
            })
            .and(landed);
        if let (Err(e), Pending::Launch) = (&result, &p.pending) {
            print_fault_line(e);
        }
        if result.is_ok() {
            if let Err(e) = self.host.mirror(p.mirror) {
                timeline::finish_remote(
                    self.host.id,
                    &self.machine.hardware,
                    timeline::OpDone::Other,
                    ipc_ns,
                );
                return Err(e);
            }
        }
        self.host.record_launch(o.facts.launch);
        let done = p.pending.done_after(o.facts.host_ns);
        timeline::finish_remote(self.host.id, &self.machine.hardware, done, ipc_ns);
        result
    }

    /// Sends operations in one message and completes each. The message's remote-path cost
    /// (this thread's CPU time from the first preparation to the last copy out, the
    /// daemon's part, the batch's copies) is shared equally by the operations, each share
    /// on the clock before its operation, in its phase.
    fn send_queue(&self, ops: Vec<RankOp>) -> Vec<Result<()>> {
        let n = ops.len();
        let hw = &self.machine.hardware;
        let all_failed = |e: &Error| -> Vec<Result<()>> {
            // The same error for each (a dead daemon, say), variant and message kept.
            let w = protocol::WireError::from_error(e);
            (0..n)
                .map(|_| {
                    timeline::finish_remote(self.host.id, hw, timeline::OpDone::Other, 0);
                    Err(w.to_error())
                })
                .collect()
        };
        // A read may be served by a cached segment that an earlier operation of the message
        // makes stale: the message's reads go to the daemon, and the segments are dropped.
        if ops.iter().any(|op| !matches!(op, RankOp::Read { .. })) {
            lock(&self.cache).invalidate();
        }
        let cpu0 = thread_cpu_ns();
        let (mut wires, prepared): (Vec<WireOp>, Vec<Prepared>) =
            ops.into_iter().map(|op| self.prepare(op, cpu0)).unzip();
        let batch = std::mem::take(&mut *lock(&self.batch));
        let carried = batch.copy_ns;
        if !batch.ops.is_empty() {
            let mut with = batch.ops;
            with.push(wires.remove(0));
            wires.insert(0, WireOp::Batch(with));
        }
        let called = self.conn.call(&Request::Queue {
            rank: self.slot,
            ops: wires,
        });
        // The staging region's room is free again once the daemon has answered.
        lock(&self.staging).used = 0;
        let (outcomes, ipc_ns) = match called {
            Ok(Reply::Exec {
                outcomes, ipc_ns, ..
            }) if outcomes.len() == n => (outcomes, ipc_ns),
            Ok(Reply::Exec { outcomes, .. }) => {
                return all_failed(&Error::Internal(format!(
                    "the daemon answered {} operations for {n}",
                    outcomes.len()
                )))
            }
            Ok(other) => return all_failed(&unexpected(&other)),
            Err(e) => return all_failed(&e),
        };
        let landed: Vec<Result<()>> = prepared
            .iter()
            .zip(&outcomes)
            .map(|(p, o)| self.land(p, o))
            .collect();
        let total = thread_cpu_ns().saturating_sub(cpu0) + ipc_ns + carried;
        let share = total / n as u64;
        prepared
            .into_iter()
            .zip(outcomes)
            .zip(landed)
            .enumerate()
            .map(|(k, ((p, o), landed))| {
                // The division's remainder goes with the first.
                let ns = if k == 0 {
                    total - share * (n as u64 - 1)
                } else {
                    share
                };
                self.account(p, o, landed, ns)
            })
            .collect()
    }
}
