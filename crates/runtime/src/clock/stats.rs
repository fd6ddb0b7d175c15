//! Launch statistics, kept for the run report.

use std::collections::HashMap;
use std::sync::Mutex;

use openpim_engine::RunOutcome;

/// What one DPU's last launch cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DpuRunStats {
    pub cycles: u64,
    pub instructions: u64,
    /// Tasklets booted.
    pub tasklets: u32,
    /// Bytes moved by DMA (MRAM->WRAM plus WRAM->MRAM).
    pub dma_bytes: u64,
    /// DMA requests (direct MRAM loads/stores count as 8-byte requests).
    pub dma_requests: u64,
    /// Cycles the DMA engine was busy.
    pub dma_busy_cycles: u64,
    /// Cycles tasklets slept (waiting on a barrier, mutex, semaphore, handshake), summed.
    pub sleep_cycles: u64,
    /// Cycles tasklets waited for their DMA, summed.
    pub dma_wait_cycles: u64,
    /// Cycles tasklets were runnable (alive, not asleep, not waiting for DMA), summed.
    pub runnable_cycles: u64,
    /// DMA requests the DPU performed although almost certainly bugs (engine `DmaQuirk`).
    pub dma_quirks: u64,
    /// A debugger froze tasklets (stepping with scheduler-locking): the schedule, and so the
    /// cycles, differ from a run without it.
    pub stepped: bool,
}

impl DpuRunStats {
    /// The statistics of an engine run.
    pub fn from_outcome(out: &RunOutcome) -> DpuRunStats {
        let s = &out.stats;
        let mut st = DpuRunStats {
            cycles: out.cycles,
            instructions: out.instructions,
            tasklets: s.tasklets.len() as u32,
            dma_bytes: s.dma_bytes_read + s.dma_bytes_written,
            dma_requests: s.dma_requests,
            dma_busy_cycles: s.dma_busy_cycles,
            dma_quirks: s.dma_quirks,
            ..DpuRunStats::default()
        };
        for t in &s.tasklets {
            st.sleep_cycles += t.sleep_cycles;
            st.dma_wait_cycles += t.dma_wait_cycles;
            st.runnable_cycles += t
                .end_cycle
                .min(out.cycles)
                .saturating_sub(t.sleep_cycles + t.dma_wait_cycles);
        }
        st
    }
}

/// One launch of one rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchRecord {
    /// Rank slot.
    pub rank: u32,
    /// DPUs launched.
    pub dpus: u32,
    /// Cycles of the slowest DPU (the rank's launch time).
    pub max_cycles: u64,
    /// Cycles summed over the DPUs.
    pub total_cycles: u64,
    /// Instructions summed over the DPUs.
    pub total_instructions: u64,
    /// DPUs that faulted.
    pub faults: u32,
    /// `max_cycles` at the profile's DPU frequency.
    pub modeled_seconds: f64,
    /// Most tasklets of a DPU of the launch.
    pub tasklets: u32,
    /// Tasklets summed over the DPUs.
    pub total_tasklets: u64,
    /// DMA bytes summed over the DPUs.
    pub dma_bytes: u64,
    /// DMA requests summed over the DPUs.
    pub dma_requests: u64,
    /// DMA busy cycles summed over the DPUs.
    pub dma_busy_cycles: u64,
    /// Sleep cycles summed over the DPUs' tasklets.
    pub sleep_cycles: u64,
    /// DMA wait cycles summed over the DPUs' tasklets.
    pub dma_wait_cycles: u64,
    /// Runnable cycles summed over the DPUs' tasklets.
    pub runnable_cycles: u64,
    /// Tasklet-cycles available (tasklets x cycles, summed over the DPUs).
    pub tasklet_cycles: u64,
    /// Tolerated-but-suspicious DMA requests summed over the DPUs.
    pub dma_quirks: u64,
    /// The first of them, described for an advice line (DPU, pc, what was asked, what
    /// happened).
    pub dma_quirk_example: Option<String>,
    /// DPUs whose launch ended with every tasklet waiting (nobody left to wake them).
    pub waiting_dpus: u64,
    /// The first of them, described for an advice line (DPU, tasklets, where they wait).
    pub waiting_example: Option<String>,
    /// DPUs whose schedule a debugger changed ([`DpuRunStats::stepped`]).
    pub stepped_dpus: u64,
}

impl LaunchRecord {
    /// Adds one DPU's statistics.
    pub fn absorb(&mut self, s: &DpuRunStats) {
        self.max_cycles = self.max_cycles.max(s.cycles);
        self.total_cycles += s.cycles;
        self.total_instructions += s.instructions;
        self.tasklets = self.tasklets.max(s.tasklets);
        self.total_tasklets += u64::from(s.tasklets);
        self.dma_bytes += s.dma_bytes;
        self.dma_requests += s.dma_requests;
        self.dma_busy_cycles += s.dma_busy_cycles;
        self.sleep_cycles += s.sleep_cycles;
        self.dma_wait_cycles += s.dma_wait_cycles;
        self.runnable_cycles += s.runnable_cycles;
        self.tasklet_cycles += u64::from(s.tasklets) * s.cycles;
        self.dma_quirks += s.dma_quirks;
        self.stepped_dpus += u64::from(s.stepped);
    }

    /// Adds the record of the same launch on more DPUs of the rank (an MPI worker's part of
    /// a split rank; `other`'s DPUs after this one's): what one record of all of them holds.
    pub fn join(&mut self, other: &LaunchRecord) {
        // Every field named: a field added to the record must say how parts join.
        let LaunchRecord {
            rank: _,
            dpus,
            max_cycles,
            total_cycles,
            total_instructions,
            faults,
            modeled_seconds,
            tasklets,
            total_tasklets,
            dma_bytes,
            dma_requests,
            dma_busy_cycles,
            sleep_cycles,
            dma_wait_cycles,
            runnable_cycles,
            tasklet_cycles,
            dma_quirks,
            dma_quirk_example,
            waiting_dpus,
            waiting_example,
            stepped_dpus,
        } = other;
        self.dpus += dpus;
        self.max_cycles = self.max_cycles.max(*max_cycles);
        self.total_cycles += total_cycles;
        self.total_instructions += total_instructions;
        self.faults += faults;
        self.modeled_seconds = self.modeled_seconds.max(*modeled_seconds);
        self.tasklets = self.tasklets.max(*tasklets);
        self.total_tasklets += total_tasklets;
        self.dma_bytes += dma_bytes;
        self.dma_requests += dma_requests;
        self.dma_busy_cycles += dma_busy_cycles;
        self.sleep_cycles += sleep_cycles;
        self.dma_wait_cycles += dma_wait_cycles;
        self.runnable_cycles += runnable_cycles;
        self.tasklet_cycles += tasklet_cycles;
        self.dma_quirks += dma_quirks;
        if self.dma_quirk_example.is_none() {
            self.dma_quirk_example.clone_from(dma_quirk_example);
        }
        self.waiting_dpus += waiting_dpus;
        if self.waiting_example.is_none() {
            self.waiting_example.clone_from(waiting_example);
        }
        self.stepped_dpus += stepped_dpus;
    }
}

static HISTORY: Mutex<Vec<LaunchRecord>> = Mutex::new(Vec::new());

/// The last launch of each rank not yet placed on the virtual timeline.
static UNTIMED: Mutex<Option<HashMap<u32, LaunchRecord>>> = Mutex::new(None);

pub(crate) fn record_launch(r: LaunchRecord) {
    UNTIMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(r.rank, r.clone());
    HISTORY.lock().unwrap_or_else(|e| e.into_inner()).push(r);
}

/// Takes the launch `rank` just recorded (for the timeline).
pub(crate) fn take_launch(rank: u32) -> Option<LaunchRecord> {
    UNTIMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&rank))
}

/// Every rank launch of this process so far, in completion order.
pub fn launch_history() -> Vec<LaunchRecord> {
    HISTORY.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Totals over the history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchTotals {
    pub rank_launches: u64,
    pub dpu_launches: u64,
    pub total_cycles: u64,
    pub total_instructions: u64,
    pub faults: u64,
    /// Sum over rank launches of their modeled time (an upper bound of DPU time when ranks
    /// overlap).
    pub modeled_seconds: f64,
}

/// Sums the launch history.
pub fn launch_totals() -> LaunchTotals {
    let h = HISTORY.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = LaunchTotals::default();
    for r in h.iter() {
        t.rank_launches += 1;
        t.dpu_launches += u64::from(r.dpus);
        t.total_cycles += r.total_cycles;
        t.total_instructions += r.total_instructions;
        t.faults += u64::from(r.faults);
        t.modeled_seconds += r.modeled_seconds;
    }
    t
}
