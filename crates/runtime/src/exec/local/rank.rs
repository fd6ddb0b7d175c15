//! A rank of the local backend: the unit of allocation and of asynchronous execution.
//!
//! A rank owns the memories of its DPUs (behind one mutex, held while it executes an
//! operation), light bookkeeping (the DPUs' programs; a second mutex, never held long), and
//! a FIFO of asynchronous operations run in order by a per-rank worker thread spawned on
//! first use. It reports each operation to the virtual clock as plain facts
//! ([`OpDone`]: what moved, how long the host-side interleaving took) once it has run.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use openpim_engine::{DmaQuirk, Timing, WaitingTasklets};
use openpim_machine::memory::dedup::{self, SharedBuffer, DEDUP_MIN_BYTES};
use openpim_machine::{Access, Bytes, DpuMemories, MachineConfig, MramAddr, MramStore, Persist};
use rayon::prelude::*;

use openpim_machine::{Direction, XferKind};

use crate::clock::stats::{self, DpuRunStats, LaunchRecord};
use crate::clock::timeline::{self, OpDone};
use crate::error::panic_message;
use crate::error::{quiet, Error, FaultInfo, Result};
use crate::exec::local::logs::{DpuLog, LaunchLog, LogAccount};
use crate::exec::local::slots::SlotGuard;
use crate::exec::local::threads::pool;
use crate::exec::queue::{RankQueue, RunsOps};
use crate::exec::{CallbackJob, OpFacts, RankOp, XferItem};
use crate::program::Program;
use crate::xfer::Place;

/// One DPU's state.
pub(crate) struct DpuState {
    pub mem: DpuMemories,
    /// printf output of the last launch.
    pub log: DpuLog,
    /// Statistics of the last launch.
    pub stats: Option<DpuRunStats>,
    /// Fault of the last launch.
    pub fault: Option<FaultInfo>,
    /// The first tolerated-but-suspicious DMA request of the last launch, described.
    pub dma_quirk: Option<String>,
    /// The DPU's last launch ended with every tasklet waiting (described for the report).
    pub waiting: Option<String>,
}

/// Heavy state: memories. Locked while an operation executes.
pub(crate) struct RankState {
    pub dpus: Vec<DpuState>,
}

/// Light bookkeeping: the DPUs' programs. Never held while waiting for anything.
pub(crate) struct RankMeta {
    pub programs: Vec<Option<Arc<Program>>>,
}

/// Whether a running launch should stop now (asked every few milliseconds of simulation).
pub type StopCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// A rank of DPUs.
pub(crate) struct LocalRank {
    id: u32,
    nr_dpus: u32,
    machine: Arc<MachineConfig>,
    timing: Timing,
    /// Where the DPUs' MRAM lives (the process's store).
    store: Arc<dyn MramStore>,
    state: Mutex<RankState>,
    meta: Mutex<RankMeta>,
    queue: RankQueue,
    faulted: AtomicBool,
    /// Where the rank reports what its operations did: the clock, or the caller.
    reporting: Reporting,
    /// The budget its DPUs' printf output is charged to ([`LogAccount`]).
    logs: Mutex<Arc<LogAccount>>,
    /// While set, a launch asks it every few milliseconds of simulation whether to stop
    /// (a rank served for a program that is gone: [`crate::exec::local::served`]).
    stop: Mutex<Option<StopCheck>>,
    /// Cycles simulated so far by the DPU that has got furthest in the launch running now (a
    /// lower bound of the launch's cycles, in steps of the engine's progress reports; 0 while
    /// no launch runs): how far a polled launch has got.
    progress: AtomicU64,
    /// The rank's DPU number of this rank's DPU 0: 0, except on an MPI worker holding a part
    /// of a rank split over several workers. Only what is told to people (faults, advice)
    /// uses it; the DPUs are indexed from 0 here.
    dpu_base: u32,
    /// Whether a transfer's host-side interleaving is performed and measured here (not on
    /// an MPI worker: the program's process measures it on its own buffers).
    measures_host: bool,
    _slot: SlotGuard,
}

impl Drop for LocalRank {
    /// The slot's memories go back, cleared, for its next allocation (`memories`); the slot
    /// itself is released after this, when `_slot` drops.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        let dpus = std::mem::take(&mut state.dpus);
        super::memories::give_back(self.id, dpus.into_iter().map(|d| d.mem));
    }
}

/// What an operation is, captured before it runs.
pub(crate) enum Pending {
    Load {
        bytes: u64,
        dpus: u32,
    },
    Xfer {
        dir: Direction,
        len: usize,
        items: Vec<XferItem>,
    },
    Launch,
    Other,
}

impl Pending {
    pub(crate) fn of(op: &RankOp) -> Pending {
        match op {
            RankOp::Load { program, dpus } => Pending::Load {
                bytes: program.image_bytes(),
                dpus: dpus.len() as u32,
            },
            RankOp::Write { len, items } => Pending::Xfer {
                dir: Direction::ToDpu,
                len: *len,
                items: items.clone(),
            },
            RankOp::Read { len, items } => Pending::Xfer {
                dir: Direction::FromDpu,
                len: *len,
                items: items.clone(),
            },
            RankOp::Launch { .. } => Pending::Launch,
            RankOp::Callback(_) => Pending::Other,
        }
    }
}

impl Pending {
    /// What the operation tells the clock once it has run, its host-side interleaving
    /// having taken `host_ns` (transfers; ignored otherwise).
    pub(crate) fn done_after(self, host_ns: u64) -> OpDone {
        match self {
            Pending::Other => OpDone::Other,
            Pending::Launch => OpDone::Launch,
            Pending::Load { bytes, dpus } => OpDone::Load { bytes, dpus },
            Pending::Xfer { dir, len, items } => OpDone::Xfer {
                dir,
                kind: classify(&items),
                len,
                dpus: items.len() as u32,
                host_ns,
                mram: items.iter().any(|i| matches!(i.place, Place::Mram(_))),
            },
        }
    }
}

/// Where a rank reports what its operations did.
pub(crate) enum Reporting {
    /// To this process's virtual clock (the in-process backend).
    Clock,
    /// To the caller, who takes them after each operation ([`LocalRank::take_facts`]): a
    /// daemon serving the rank to a tenant, whose clock is in the tenant's process.
    Caller(Mutex<OpFacts>),
}

/// How a transfer's items use the bus.
pub(crate) fn classify(items: &[XferItem]) -> XferKind {
    if items.len() <= 1 {
        XferKind::Serial
    } else if items.iter().all(|i| i.buf == items[0].buf) {
        XferKind::Broadcast
    } else {
        XferKind::Parallel
    }
}

impl std::fmt::Debug for LocalRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rank({}, {} DPUs)", self.id, self.nr_dpus)
    }
}

/// Transfers at least this big (bytes, all DPUs together) are spread over the pool.
const PARALLEL_XFER_BYTES: usize = 1 << 20;

impl LocalRank {
    pub(crate) fn new(
        slot: SlotGuard,
        nr_dpus: u32,
        machine: Arc<MachineConfig>,
    ) -> Result<LocalRank> {
        LocalRank::with_reporting(slot, nr_dpus, machine, Reporting::Clock)
    }

    /// A rank that reports what its operations did to its caller, not to the clock.
    pub(crate) fn reporting_to_caller(
        slot: SlotGuard,
        nr_dpus: u32,
        machine: Arc<MachineConfig>,
    ) -> Result<LocalRank> {
        let facts = Reporting::Caller(Mutex::new(OpFacts::default()));
        LocalRank::with_reporting(slot, nr_dpus, machine, facts)
    }

    fn with_reporting(
        slot: SlotGuard,
        nr_dpus: u32,
        machine: Arc<MachineConfig>,
        reporting: Reporting,
    ) -> Result<LocalRank> {
        let mut dpus = Vec::with_capacity(nr_dpus as usize);
        let store = super::memories::store(&machine)?;
        for mem in super::memories::take(slot.0, nr_dpus, &machine)? {
            dpus.push(DpuState {
                mem,
                log: DpuLog::default(),
                stats: None,
                fault: None,
                dma_quirk: None,
                waiting: None,
            });
        }
        let mut timing = machine.hardware.timing(machine.config.max_cycles);
        timing.strict_dma = machine.config.strict_dma;
        // (A bad `OPENPIM_ENGINE` failed the allocation already: `engine_use::configure`.)
        timing.engine = machine.engine().unwrap_or_default();
        timing.strict_sync = machine.config.strict_sync;
        Ok(LocalRank {
            id: slot.0,
            nr_dpus,
            machine,
            timing,
            store,
            state: Mutex::new(RankState { dpus }),
            meta: Mutex::new(RankMeta {
                programs: vec![None; nr_dpus as usize],
            }),
            queue: RankQueue::new(slot.0),
            faulted: AtomicBool::new(false),
            reporting,
            logs: Mutex::new(LogAccount::process()),
            stop: Mutex::new(None),
            progress: AtomicU64::new(0),
            dpu_base: 0,
            measures_host: true,
            _slot: slot,
        })
    }

    /// This rank as DPUs `base..` of its slot (a part of a rank split over MPI workers):
    /// faults and advice name the rank's DPUs as the whole rank numbers them.
    pub(crate) fn numbered_from(mut self, base: u32) -> LocalRank {
        self.dpu_base = base;
        self
    }

    /// This rank without the host-side interleaving of its transfers (their facts say 0 ns
    /// of host time): for a caller that performs and measures it itself.
    pub(crate) fn without_host_timing(mut self) -> LocalRank {
        self.measures_host = false;
        self
    }

    /// The rank's slot in the machine (0-based).
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// The machine the rank belongs to (hardware, run options).
    pub(crate) fn machine(&self) -> &MachineConfig {
        &self.machine
    }

    /// The same, shared.
    /// Runs `f` with launches stopping when `stop` says so (their DPUs then end with the
    /// engine's `Stopped` fault).
    pub(crate) fn with_stop_check<T>(&self, stop: StopCheck, f: impl FnOnce() -> T) -> T {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = Some(stop);
        struct Clear<'a>(&'a Mutex<Option<StopCheck>>);
        impl Drop for Clear<'_> {
            fn drop(&mut self) {
                *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
        }
        let _clear = Clear(&self.stop);
        f()
    }

    /// The account its DPUs' printf output is charged to.
    pub(crate) fn log_account(&self) -> Arc<LogAccount> {
        Arc::clone(&self.logs.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Charges its DPUs' printf output from now on to `account` (what they hold already
    /// stays where it was charged until it is replaced or dropped).
    pub(crate) fn charge_logs_to(&self, account: Arc<LogAccount>) {
        *self.logs.lock().unwrap_or_else(|e| e.into_inner()) = account;
    }

    pub(crate) fn machine_arc(&self) -> &Arc<MachineConfig> {
        &self.machine
    }

    /// DPUs in this rank.
    pub(crate) fn nr_dpus(&self) -> u32 {
        self.nr_dpus
    }

    /// The rank's DPU number of this rank's DPU 0 ([`LocalRank::numbered_from`]).
    pub(crate) fn dpu_base(&self) -> u32 {
        self.dpu_base
    }

    /// The DPU frequency in Hz: what the loader writes into a program's `CLOCKS_PER_SEC`.
    pub(crate) fn clocks_per_sec(&self) -> u32 {
        self.machine
            .hardware
            .dpu
            .frequency_mhz
            .saturating_mul(1_000_000)
    }

    /// True when the last launch on this rank faulted.
    pub(crate) fn faulted(&self) -> bool {
        self.faulted.load(Ordering::Acquire)
    }

    /// Sets what [`LocalRank::faulted`] says (a rank restored from a suspension).
    pub(crate) fn set_faulted(&self, faulted: bool) {
        self.faulted.store(faulted, Ordering::Release);
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, RankState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn lock_meta(&self) -> MutexGuard<'_, RankMeta> {
        self.meta.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until no queued operation is left (not counting NONBLOCKING callbacks).
    pub(crate) fn wait_idle(&self) {
        self.queue.wait_idle();
    }

    /// Waits for every queued operation and callback; returns (and clears) the first error
    /// of an asynchronous operation.
    pub(crate) fn sync(&self) -> Result<()> {
        self.queue.sync()
    }

    /// True when nothing is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        self.queue.is_idle()
    }

    /// [`crate::exec::Backend::polled_status`]'s wait: whether the rank is idle, once its
    /// queued operations are done or the running launch has passed what `ran_past` asks.
    pub(crate) fn settle(&self, ran_past: &dyn Fn(u64) -> bool) -> bool {
        self.queue
            .settle(&|| ran_past(self.progress.load(Ordering::Acquire)), None)
    }

    /// Queues an operation for the rank's worker thread.
    pub(crate) fn enqueue(self: &Arc<Self>, op: RankOp) -> Result<()> {
        self.queue.enqueue(Arc::clone(self) as Arc<dyn RunsOps>, op)
    }

    /// Starts a NONBLOCKING callback on its own thread; `sync` waits for it.
    pub(crate) fn spawn_detached(&self, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.queue.spawn_detached(job, ranks)
    }

    /// Executes an operation, locking the rank's state unless it is a callback.
    pub(crate) fn execute(&self, op: RankOp) -> Result<()> {
        match op {
            RankOp::Callback(job) => self.queue.run_callback(job),
            op => {
                let mut state = self.lock_state();
                self.execute_locked(&mut state, op)
            }
        }
    }

    /// Executes a non-callback operation on already locked state, then places it on the
    /// virtual timeline.
    pub(crate) fn execute_locked(&self, state: &mut RankState, op: RankOp) -> Result<()> {
        let name = op.name();
        let pending = Pending::of(&op);
        let r = catch_unwind(AssertUnwindSafe(|| match op {
            RankOp::Load { program, dpus } => self.exec_load(state, program, &dpus),
            RankOp::Write { len, items } => self.exec_write(state, len, &items),
            RankOp::Read { len, items } => self.exec_read(state, len, &items),
            RankOp::Launch { dpus } => self.exec_launch(state, dpus),
            RankOp::Callback(job) => job(),
        }))
        .unwrap_or_else(|p| {
            Err(Error::Internal(format!(
                "{name} on rank {} panicked: {}",
                self.id,
                panic_message(&*p)
            )))
        });
        // Virtual time of the operation (modeled; the host-side interleaving is real).
        let done = self.done(pending);
        match &self.reporting {
            Reporting::Clock => timeline::finish(self.id, &self.machine.hardware, done),
            Reporting::Caller(facts) => {
                if let OpDone::Xfer { host_ns, .. } = done {
                    lock(facts).host_ns = host_ns;
                }
            }
        }
        r
    }

    /// What the last operation did (a rank reporting to its caller; nothing otherwise).
    pub(crate) fn take_facts(&self) -> OpFacts {
        match &self.reporting {
            Reporting::Clock => OpFacts::default(),
            Reporting::Caller(facts) => std::mem::take(&mut *lock(facts)),
        }
    }

    /// What an operation that just ran tells the clock. For a transfer, the host-side byte
    /// interleaving the real SDK performs is performed (and measured) now.
    fn done(&self, pending: Pending) -> OpDone {
        let host_ns = match &pending {
            Pending::Xfer { dir, len, items } if self.measures_host => {
                let hw = &self.machine.hardware;
                let kind = classify(items);
                let bus_ns = crate::clock::timeline::modeled_xfer_ns(
                    self.id,
                    hw,
                    *dir,
                    kind,
                    *len,
                    items.len() as u32,
                );
                // SAFETY: the operation that just ran had the same contract: every item's
                // buffer is valid for `len` bytes until the transfer has run, which is now.
                unsafe {
                    super::interleave::measured_for(
                        bus_ns,
                        *len,
                        items,
                        hw.topology.dpus_per_rank,
                        hw.topology.chips_per_rank,
                        kind == XferKind::Broadcast,
                    )
                }
            }
            _ => 0,
        };
        pending.done_after(host_ns)
    }

    fn exec_load(&self, state: &mut RankState, program: Arc<Program>, dpus: &[u32]) -> Result<()> {
        let mut selected = vec![false; self.nr_dpus as usize];
        for d in dpus {
            selected[*d as usize] = true;
        }
        let prog = &program;
        let clocks_per_sec = self.clocks_per_sec();
        // MRAM segments loaded on several DPUs are stored once (deduplication).
        let shared: Vec<Option<Arc<SharedBuffer>>> = prog
            .mram_segments()
            .iter()
            .map(|(off, bytes)| self.shareable(dpus.len(), *off, bytes))
            .collect::<Result<_>>()?;
        pool()?.install(|| {
            state
                .dpus
                .par_iter_mut()
                .enumerate()
                .filter(|(i, _)| selected[*i])
                .try_for_each(|(_, dpu)| -> Result<()> {
                    dpu.mem.clear_wram();
                    dpu.mem
                        .write(openpim_machine::WramAddr(0), prog.wram_image())
                        .map_err(|e| Error::Internal(e.to_string()))?;
                    if let Some(addr) = prog.clocks_per_sec_address() {
                        dpu.mem
                            .write(
                                openpim_machine::WramAddr(addr),
                                &clocks_per_sec.to_le_bytes(),
                            )
                            .map_err(|e| Error::Internal(e.to_string()))?;
                    }
                    for ((off, bytes), shared) in prog.mram_segments().iter().zip(&shared) {
                        self.write_mram(&mut dpu.mem, *off, bytes, shared.as_deref())?;
                    }
                    dpu.log.clear();
                    dpu.fault = None;
                    dpu.stats = None;
                    Ok(())
                })
        })?;
        let mut meta = self.lock_meta();
        for d in dpus {
            meta.programs[*d as usize] = Some(Arc::clone(&program));
        }
        drop(meta);
        for d in dpus {
            crate::observe::host_wrote(self.id, *d, &crate::observe::HostWrite::Load(&program));
        }
        if !prog.mram_segments().is_empty() {
            self.persist(state, Persist::Transfer, dpus.iter().copied())?;
        }
        Ok(())
    }

    /// The shared copy of `src` when writing it at MRAM `offset` of `dpus` DPUs is worth
    /// deduplicating (several DPUs, at least a few pages, a store that shares pages).
    fn shareable(&self, dpus: usize, offset: u32, src: &[u8]) -> Result<Option<Arc<SharedBuffer>>> {
        if dpus < 2 || src.len() < DEDUP_MIN_BYTES || !self.store.deduplicates() {
            return Ok(None);
        }
        let page = openpim_machine::memory::region::page_size();
        dedup::shared_buffer(src, offset as usize % page)
            .map(Some)
            .map_err(|e| Error::System(format!("cannot share a broadcast buffer: {e}")))
    }

    /// Writes `src` at MRAM `offset` of one DPU: admitted by the store first (host memory,
    /// budget, disk), mapped from `shared` when given.
    pub(crate) fn write_mram(
        &self,
        mem: &mut DpuMemories,
        offset: u32,
        src: &[u8],
        shared: Option<&SharedBuffer>,
    ) -> Result<()> {
        let fits = (offset as usize)
            .checked_add(src.len())
            .is_some_and(|end| end <= mem.mram_region().len());
        if !fits {
            // Out of range: the memory's own check names it.
            return mem
                .write(MramAddr(offset), src)
                .map_err(|e| Error::Internal(e.to_string()));
        }
        let access = Access::Write {
            offset: offset as usize,
            len: src.len(),
        };
        let _admitted = self.store.admit(mem.mram_region(), access)?;
        match shared {
            Some(b) => {
                let n = match dedup::write_shared(mem.mram_region_mut(), offset as usize, src, b) {
                    Ok(n) => n,
                    Err(e) => {
                        // The kernel refused even fresh pages over the range: map the whole
                        // MRAM anew (it reads as zero) rather than leave a hole in it.
                        let _ = mem.clear_mram();
                        return Err(Error::System(format!(
                            "cannot map MRAM pages (the DPU's MRAM was cleared): {e}"
                        )));
                    }
                };
                self.store
                    .counters()
                    .dedup_bytes
                    .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            None => mem
                .write(MramAddr(offset), src)
                .map_err(|e| Error::Internal(e.to_string())),
        }
    }

    /// Makes the MRAM of `dpus` durable if the store's horizon says so at `point`.
    pub(crate) fn persist(
        &self,
        state: &RankState,
        point: Persist,
        dpus: impl Iterator<Item = u32>,
    ) -> Result<()> {
        if !self.store.keeps_contents() {
            return Ok(());
        }
        let regions: Vec<_> = dpus
            .map(|d| state.dpus[d as usize].mem.mram_region())
            .collect();
        Ok(self.store.persist(point, &regions)?)
    }

    fn exec_write(&self, state: &mut RankState, len: usize, items: &[XferItem]) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        // A broadcast to MRAM (one buffer, one place, several DPUs) is stored once.
        let shared = match items.first() {
            Some(
                first @ XferItem {
                    place: Place::Mram(a),
                    ..
                },
            ) if items
                .iter()
                .all(|i| i.buf == first.buf && i.place == first.place) =>
            {
                // SAFETY: as in write_one below.
                let src = unsafe { std::slice::from_raw_parts(first.buf.0.cast_const(), len) };
                self.shareable(items.len(), a.0, src)?
            }
            _ => None,
        };
        let write_one = |dpu: &mut DpuState, item: &XferItem| -> Result<()> {
            // SAFETY: the unsafe API that accepted `item.buf` requires it to be valid for
            // reads of `len` bytes until this transfer has run; we only read.
            let src = unsafe { std::slice::from_raw_parts(item.buf.0.cast_const(), len) };
            match item.place {
                Place::Wram(a) => dpu
                    .mem
                    .write(a, src)
                    .map_err(|e| Error::Internal(e.to_string())),
                Place::Mram(a) => self.write_mram(&mut dpu.mem, a.0, src, shared.as_deref()),
                Place::Iram(_) => unreachable!("IRAM writes are handled by the caller"),
            }
        };
        // IRAM writes replace the DPU's program with a patched copy.
        if items.iter().any(|i| matches!(i.place, Place::Iram(_))) {
            let mut meta = self.lock_meta();
            let mut patched: Vec<(*const Program, Arc<Program>)> = Vec::new();
            for item in items {
                let Place::Iram(a) = item.place else {
                    write_one(&mut state.dpus[item.dpu as usize], item)?;
                    continue;
                };
                let old = meta.programs[item.dpu as usize].clone().ok_or_else(|| {
                    Error::NoProgramLoaded(format!(
                        "DPU {} of rank {}",
                        item.dpu + self.dpu_base,
                        self.id
                    ))
                })?;
                let key = Arc::as_ptr(&old);
                let new = match patched.iter().find(|(k, _)| *k == key) {
                    Some((_, p)) => Arc::clone(p),
                    None => {
                        // SAFETY: as in write_one.
                        let src =
                            unsafe { std::slice::from_raw_parts(item.buf.0.cast_const(), len) };
                        let p = old.with_patched_text(a.0, src)?;
                        patched.push((key, Arc::clone(&p)));
                        p
                    }
                };
                meta.programs[item.dpu as usize] = Some(new);
            }
            return Ok(());
        }
        let mut by_dpu: Vec<Option<&XferItem>> = vec![None; self.nr_dpus as usize];
        for item in items {
            by_dpu[item.dpu as usize] = Some(item);
        }
        if len.saturating_mul(items.len()) >= PARALLEL_XFER_BYTES && items.len() > 1 {
            pool()?.install(|| {
                state
                    .dpus
                    .par_iter_mut()
                    .zip(by_dpu.par_iter())
                    .filter_map(|(d, i)| i.map(|i| (d, i)))
                    .try_for_each(|(d, i)| write_one(d, i))
            })?;
        } else {
            for item in items {
                write_one(&mut state.dpus[item.dpu as usize], item)?;
            }
        }
        // The developer tools (the memory checker) learn what the host initialised.
        for item in items {
            let write = match item.place {
                Place::Wram(a) => crate::observe::HostWrite::Wram {
                    offset: a.0,
                    len: len as u32,
                },
                Place::Mram(a) => crate::observe::HostWrite::Mram {
                    offset: a.0,
                    len: len as u32,
                },
                Place::Iram(_) => continue,
            };
            crate::observe::host_wrote(self.id, item.dpu, &write);
        }
        if items.iter().any(|i| matches!(i.place, Place::Mram(_))) {
            self.persist(state, Persist::Transfer, items.iter().map(|i| i.dpu))?;
        }
        Ok(())
    }

    fn exec_read(&self, state: &mut RankState, len: usize, items: &[XferItem]) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let meta_programs: Option<Vec<Option<Arc<Program>>>> =
            if items.iter().any(|i| matches!(i.place, Place::Iram(_))) {
                Some(self.lock_meta().programs.clone())
            } else {
                None
            };
        let read_one = |dpu: &DpuState, item: &XferItem| -> Result<()> {
            // SAFETY: the unsafe API that accepted `item.buf` requires it to be valid for
            // writes of `len` bytes until this transfer has run; destinations of items run in
            // parallel do not overlap (checked below).
            let dst = unsafe { std::slice::from_raw_parts_mut(item.buf.0, len) };
            match item.place {
                Place::Wram(a) => dpu
                    .mem
                    .read(a, dst)
                    .map_err(|e| Error::Internal(e.to_string())),
                Place::Mram(a) => {
                    let access = Access::Read {
                        offset: a.0 as usize,
                        len,
                    };
                    let _admitted = self.store.admit(dpu.mem.mram_region(), access)?;
                    dpu.mem
                        .read(a, dst)
                        .map_err(|e| Error::Internal(e.to_string()))
                }
                Place::Iram(a) => {
                    let programs = meta_programs.as_ref().expect("computed for IRAM reads");
                    let prog = programs[item.dpu as usize].as_ref().ok_or_else(|| {
                        Error::NoProgramLoaded(format!(
                            "DPU {} of rank {}",
                            item.dpu + self.dpu_base,
                            self.id
                        ))
                    })?;
                    dst.fill(0);
                    let base = prog.text_base() - openpim_machine::map::IRAM_BASE;
                    let text = prog.text();
                    for (k, byte) in dst.iter_mut().enumerate() {
                        let off = a.0 as usize + k;
                        if off >= base as usize {
                            if let Some(b) = text.get(off - base as usize) {
                                *byte = *b;
                            }
                        }
                    }
                    Ok(())
                }
            }
        };
        let disjoint = {
            let mut starts: Vec<usize> = items.iter().map(|i| i.buf.0 as usize).collect();
            starts.sort_unstable();
            starts.windows(2).all(|w| w[1] - w[0] >= len)
        };
        if disjoint && len.saturating_mul(items.len()) >= PARALLEL_XFER_BYTES && items.len() > 1 {
            let dpus = &state.dpus;
            pool()?.install(|| {
                items
                    .par_iter()
                    .try_for_each(|i| read_one(&dpus[i.dpu as usize], i))
            })
        } else {
            for item in items {
                read_one(&state.dpus[item.dpu as usize], item)?;
            }
            Ok(())
        }
    }

    fn exec_launch(&self, state: &mut RankState, dpus: Vec<(u32, Arc<Program>)>) -> Result<()> {
        let mut by_dpu: Vec<Option<&Arc<Program>>> = vec![None; self.nr_dpus as usize];
        for (d, p) in &dpus {
            by_dpu[*d as usize] = Some(p);
        }
        let timing = &self.timing;
        let rank_id = self.id;
        let dpu_base = self.dpu_base;
        let store = &*self.store;
        let stop = self.stop.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let progress = &self.progress;
        progress.store(0, Ordering::Release);
        // Each DPU is admitted by the store before it runs (it may touch all of its MRAM).
        // Each DPU's new printf output comes back from the parallel part and is charged to
        // the process's log budget afterwards, in DPU order: which DPU's output is cut when
        // the budget runs out does not depend on which thread finished first.
        let outcomes: Vec<Result<(u32, RunOutcome)>> = pool()?.install(|| {
            state
                .dpus
                .par_iter_mut()
                .zip(by_dpu.par_iter())
                .enumerate()
                .filter_map(|(i, (d, p))| p.map(|p| (i as u32, d, p)))
                .map(|(i, dpu, prog)| {
                    let _admitted = store.admit(dpu.mem.mram_region(), Access::Launch)?;
                    // The engine asks at the start and every STOP_CHECK_CYCLES simulated
                    // cycles: each question after the first is that many more cycles run.
                    let asked = AtomicU64::new(0);
                    let check = || {
                        let n = asked.fetch_add(1, Ordering::Relaxed);
                        progress.fetch_max(n * openpim_engine::STOP_CHECK_CYCLES, Ordering::AcqRel);
                        stop.as_deref().is_some_and(|stop| stop())
                    };
                    let named = i + dpu_base;
                    Ok((i, run_one(rank_id, named, dpu, prog, timing, &check)))
                })
                .collect()
        });
        // No launch runs now: a poll must not take this one's progress for the next one's.
        progress.store(0, Ordering::Release);
        let logs = self.log_account();
        let mut panics: Vec<String> = Vec::new();
        let mut refused = None;
        for o in outcomes {
            match o {
                Ok((i, outcome)) => {
                    state.dpus[i as usize].log.replace(outcome.log, &logs);
                    panics.extend(outcome.panic);
                }
                Err(e) => refused = refused.or(Some(e)),
            }
        }
        if let Some(e) = refused {
            return Err(e);
        }
        self.persist(state, Persist::Launch, dpus.iter().map(|(d, _)| *d))?;
        // Statistics and faults.
        let mut record = LaunchRecord {
            rank: self.id,
            dpus: dpus.len() as u32,
            ..LaunchRecord::default()
        };
        let mut faults: Vec<&FaultInfo> = Vec::new();
        for (d, _) in &dpus {
            let dpu = &state.dpus[*d as usize];
            if let Some(s) = dpu.stats {
                record.absorb(&s);
            }
            if record.dma_quirk_example.is_none() {
                record.dma_quirk_example.clone_from(&dpu.dma_quirk);
            }
            if dpu.waiting.is_some() {
                record.waiting_dpus += 1;
                if record.waiting_example.is_none() {
                    record.waiting_example.clone_from(&dpu.waiting);
                }
            }
            if let Some(f) = &dpu.fault {
                faults.push(f);
            }
        }
        record.faults = faults.len() as u32;
        record.modeled_seconds = self.machine.hardware.cycles_to_seconds(record.max_cycles);
        match &self.reporting {
            Reporting::Clock => stats::record_launch(record),
            Reporting::Caller(facts) => lock(facts).launch = Some(record),
        }
        self.faulted.store(!faults.is_empty(), Ordering::Release);
        if let Some(p) = panics.first() {
            return Err(Error::Internal(format!(
                "the DPU engine panicked on rank {}: {p}",
                self.id
            )));
        }
        if faults.is_empty() {
            return Ok(());
        }
        let e = Error::DpuFault {
            first: Box::new(faults[0].clone()),
            count: faults.len(),
        };
        // The tenant of a served rank prints it (its stderr is the user's).
        if let Reporting::Clock = self.reporting {
            print_fault_line(&e);
        }
        Err(e)
    }

    /// The log of one DPU's last launch: its text, or the error of a printf buffer that
    /// wrapped.
    pub(crate) fn log_of(&self, dpu: u32) -> Result<Vec<u8>> {
        match self.lock_state().dpus[dpu as usize].log.get() {
            LaunchLog::Text(bytes) => Ok(bytes),
            LaunchLog::Wrapped { written, capacity } => Err(Error::LogBufferTooSmall {
                rank: self.id(),
                dpu,
                written,
                capacity,
            }),
        }
    }
}

/// One line on stderr for a launch's faults on one rank (unless quiet): the first fault and
/// how many more DPUs of the rank faulted.
pub(crate) fn print_fault_line(e: &Error) {
    let Error::DpuFault { first, count } = e else {
        return;
    };
    if quiet() {
        return;
    }
    let more = if *count > 1 {
        format!(
            " (and {} more DPUs of rank {} faulted)",
            count - 1,
            first.rank
        )
    } else {
        String::new()
    };
    eprintln!("openpim: {first}{more}");
}

/// What running one DPU leaves to its caller.
struct RunOutcome {
    /// The engine's panic message, if it panicked.
    panic: Option<String>,
    /// The launch's printf output, not yet charged to the log budget.
    log: LaunchLog,
}

/// Runs one DPU (its previous output is dropped first: the budget it held is free).
fn run_one(
    rank: u32,
    index: u32,
    dpu: &mut DpuState,
    prog: &Arc<Program>,
    timing: &Timing,
    check: &(dyn Fn() -> bool + Sync),
) -> RunOutcome {
    dpu.log.clear();
    // The developer tools that want this run see it on the probed interpreter.
    let site = crate::observe::any_installed().then(|| crate::observe::RunSite {
        rank,
        dpu: index,
        program: Arc::clone(prog),
    });
    let mut observers = site.as_ref().and_then(crate::observe::observers_for);
    let outcome = catch_unwind(AssertUnwindSafe(|| match observers.as_mut() {
        Some(probe) => openpim_engine::run_probed(
            prog.decoded(),
            prog.boot_info(),
            dpu.mem.engine_view(),
            timing,
            Some(check),
            probe,
        ),
        None => openpim_engine::run_stoppable(
            prog.decoded(),
            prog.boot_info(),
            dpu.mem.engine_view(),
            timing,
            check,
        ),
    }));
    let mut stepped = false;
    if let (Some(site), Some(observers), Ok(out)) = (&site, observers, &outcome) {
        stepped = observers.finish(site, out);
    }
    match outcome {
        Ok(out) => {
            crate::clock::engine_use::record(&out, prog.decoded());
            dpu.stats = Some(DpuRunStats {
                stepped,
                ..DpuRunStats::from_outcome(&out)
            });
            dpu.dma_quirk = out
                .dma_quirks
                .first()
                .map(|q| describe_dma_quirk(rank, index, q, prog));
            dpu.waiting = out
                .waiting
                .as_ref()
                .map(|w| describe_waiting(rank, index, w, prog));
            dpu.fault = out.fault.map(|f| FaultInfo {
                rank,
                dpu: index,
                tasklet: f.tasklet,
                pc: f.pc,
                function: prog.function_at(f.pc),
                message: f.fault.to_string(),
            });
            RunOutcome {
                panic: None,
                log: if out.log_wrapped {
                    LaunchLog::Wrapped {
                        written: out.stats.printf_bytes,
                        capacity: prog.boot_info().printf_capacity,
                    }
                } else {
                    LaunchLog::Text(out.log)
                },
            }
        }
        Err(p) => {
            let msg = panic_message(&*p);
            dpu.stats = None;
            dpu.dma_quirk = None;
            dpu.waiting = None;
            dpu.fault = Some(FaultInfo {
                rank,
                dpu: index,
                tasklet: 0,
                pc: 0,
                function: None,
                message: format!("internal error of the DPU engine: {msg}"),
            });
            RunOutcome {
                panic: Some(msg),
                log: LaunchLog::default(),
            }
        }
    }
}

/// One line on a DMA request the DPU performed although it is almost certainly a bug.
fn describe_dma_quirk(rank: u32, dpu: u32, q: &DmaQuirk, prog: &Program) -> String {
    let call = if q.read { "mram_read" } else { "mram_write" };
    let what: Vec<&str> = q.kinds.iter().map(|k| k.describe()).collect();
    format!(
        "DPU {dpu} of rank {rank}, tasklet {} at pc {:#010x} in {}: {call}(WRAM {:#x}, MRAM {:#x}, {} bytes): {}; {} bytes moved",
        q.tasklet,
        q.pc,
        prog.function_at(q.pc).as_deref().unwrap_or("<unknown function>"),
        q.wram,
        q.mram,
        q.size,
        what.join("; "),
        q.moved
    )
}

/// One line on a launch that ended with every tasklet waiting: which tasklets wait in which
/// synchronisation primitive (the runtime function of the wait: `barrier_wait`, `sem_take`,
/// `handshake_wait_for`, ...).
fn describe_waiting(rank: u32, dpu: u32, w: &WaitingTasklets, prog: &Program) -> String {
    let mut by_function: Vec<(String, Vec<u32>)> = Vec::new();
    for &(tasklet, pc) in &w.pcs {
        let f = prog
            .function_at(pc)
            .unwrap_or_else(|| format!("pc {pc:#010x}"));
        match by_function.iter_mut().find(|(name, _)| *name == f) {
            Some((_, ts)) => ts.push(tasklet),
            None => by_function.push((f, vec![tasklet])),
        }
    }
    let parts: Vec<String> = by_function
        .iter()
        .map(|(f, ts)| {
            let list: Vec<String> = ts.iter().map(u32::to_string).collect();
            format!("tasklet(s) {} in {f}", list.join(", "))
        })
        .collect();
    format!("DPU {dpu} of rank {rank}: {}", parts.join("; "))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RunsOps for LocalRank {
    fn run_op(&self, op: RankOp) -> Result<()> {
        self.execute(op)
    }
}
