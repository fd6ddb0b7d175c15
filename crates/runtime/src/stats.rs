//! Launch statistics, kept for the run report.

use std::sync::Mutex;

/// What one DPU's last launch cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DpuRunStats {
    pub cycles: u64,
    pub instructions: u64,
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
}

static HISTORY: Mutex<Vec<LaunchRecord>> = Mutex::new(Vec::new());

pub(crate) fn record_launch(r: LaunchRecord) {
    HISTORY.lock().unwrap_or_else(|e| e.into_inner()).push(r);
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
