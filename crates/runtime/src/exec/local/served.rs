//! Ranks this process runs for another process (the rank-manager daemon, for its tenants).
//!
//! A served rank is a local rank with two differences: its slot is the one the caller's
//! rank manager chose, and it reports what each operation did ([`OpFacts`]: the interleaving
//! time of a transfer, a launch's statistics) to the caller instead of this process's clock,
//! because the virtual timeline that counts them is the tenant's. Operations run
//! synchronously on the calling thread (the tenant's own queue orders asynchronous ones);
//! callbacks never reach it (they run in the tenant).

use std::sync::Arc;

use openpim_machine::{MachineConfig, StoreSpec};

use crate::clock::stats::DpuRunStats;
use crate::error::{Error, Result};
use crate::exec::local::logs::LogAccount;
use crate::exec::local::rank::LocalRank;
pub use crate::exec::local::rank::StopCheck;
use crate::exec::local::slots;
use crate::exec::{OpFacts, RankOp};
use crate::program::Program;

/// A rank run for another process (see the module's documentation). Dropping it wipes the
/// rank: its DPUs' WRAM and MRAM are cleared, its programs (IRAM, symbols) and logs dropped.
pub struct ServedRank {
    rank: LocalRank,
}

impl std::fmt::Debug for ServedRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Served{:?}", self.rank)
    }
}

/// Whether `machine`'s ranks may be served in parts ([`ServedRank::part`]): only with MRAM in
/// host memory (a file-backed store maps a slot's DPUs from its file's start, which two parts
/// would share).
pub(crate) fn parts_allowed(machine: &MachineConfig) -> bool {
    matches!(machine.config.memory, None | Some(StoreSpec::Anon))
}

impl ServedRank {
    /// Rank `slot` (of the caller's server) with its first `nr_dpus` DPUs, cleared; `machine`
    /// gives its hardware and run options.
    pub fn new(slot: u32, nr_dpus: u32, machine: Arc<MachineConfig>) -> Result<ServedRank> {
        ServedRank::part(slot, 0, nr_dpus, machine)
    }

    /// DPUs `first..first + nr_dpus` of rank `slot`, as their own rank (an MPI worker's part
    /// of a rank split over several workers): indexed from 0 here, named as the whole rank
    /// numbers them in faults and advice. Only with MRAM in host memory: a file-backed store
    /// maps a slot's DPUs from the file's start, which two parts would share.
    pub fn part(
        slot: u32,
        first: u32,
        nr_dpus: u32,
        machine: Arc<MachineConfig>,
    ) -> Result<ServedRank> {
        if nr_dpus == 0 || first.saturating_add(nr_dpus) > machine.dpus_per_rank {
            return Err(Error::Internal(format!(
                "DPUs {first}..{} do not fit the machine's ranks of {} DPUs",
                first.saturating_add(nr_dpus),
                machine.dpus_per_rank
            )));
        }
        if first > 0 && !parts_allowed(&machine) {
            return Err(Error::Internal(format!(
                "a part of a rank (from its DPU {first}) needs MRAM in host memory"
            )));
        }
        let guard = slots::take_exact(slot)?;
        Ok(ServedRank {
            rank: LocalRank::reporting_to_caller(guard, nr_dpus, machine)?.numbered_from(first),
        })
    }

    /// Charges the DPUs' printf output from now on to `account` (the daemon: the budget of
    /// the tenant holding the rank).
    pub fn charge_logs_to(&self, account: Arc<LogAccount>) {
        self.rank.charge_logs_to(account);
    }

    /// This rank without the host-side interleaving of its transfers (their facts' `host_ns`
    /// is 0): an MPI worker's, whose program performs and measures it on its own buffers.
    pub fn without_host_timing(self) -> ServedRank {
        ServedRank {
            rank: self.rank.without_host_timing(),
        }
    }

    /// The account the DPUs' printf output is charged to.
    pub fn log_account(&self) -> Arc<LogAccount> {
        self.rank.log_account()
    }

    /// The rank itself (suspending and resuming it).
    pub(crate) fn local(&self) -> &LocalRank {
        &self.rank
    }

    /// The machine (hardware, run options) the rank was made for.
    pub fn machine(&self) -> &MachineConfig {
        self.rank.machine()
    }

    /// DPUs of the rank in use.
    pub fn nr_dpus(&self) -> u32 {
        self.rank.nr_dpus()
    }

    /// The rank's DPU number of this one's DPU 0 (0 unless it is a part: [`ServedRank::part`]).
    pub fn first_dpu(&self) -> u32 {
        self.rank.dpu_base()
    }

    /// Runs one operation now (not a callback); returns its result and what it did.
    pub fn run(&self, op: RankOp) -> (Result<()>, OpFacts) {
        if let RankOp::Callback(_) = op {
            let e = Error::Internal("callbacks run in the tenant, not in the daemon".into());
            return (Err(e), OpFacts::default());
        }
        let r = self.rank.execute(op);
        (r, self.rank.take_facts())
    }

    /// [`ServedRank::run`], a launch stopping when `stop` says so (asked every few
    /// milliseconds of simulation): the daemon's launch for a program that is gone ends
    /// there, its DPUs with the engine's `Stopped` fault, instead of running to its end.
    pub fn run_stoppable(&self, op: RankOp, stop: StopCheck) -> (Result<()>, OpFacts) {
        self.rank.with_stop_check(stop, || self.run(op))
    }

    /// True when the rank's last launch faulted.
    pub fn faulted(&self) -> bool {
        self.rank.faulted()
    }

    /// The programs of DPUs `first..first + count` (clamped to the rank).
    pub fn programs(&self, first: u32, count: u32) -> Vec<Option<Arc<Program>>> {
        let meta = self.rank.lock_meta();
        let (a, b) = clamp(first, count, meta.programs.len());
        meta.programs[a..b].to_vec()
    }

    /// The log of one DPU's last launch (empty for a DPU outside the rank;
    /// `Error::LogBufferTooSmall` when its printf buffer wrapped).
    pub fn log(&self, dpu: u32) -> Result<Vec<u8>> {
        if dpu >= self.nr_dpus() {
            return Ok(Vec::new());
        }
        self.rank.log_of(dpu)
    }

    /// Statistics of the last launch of DPUs `first..first + count` (clamped to the rank).
    pub fn run_stats(&self, first: u32, count: u32) -> Vec<Option<DpuRunStats>> {
        let st = self.rank.lock_state();
        let (a, b) = clamp(first, count, st.dpus.len());
        st.dpus[a..b].iter().map(|d| d.stats).collect()
    }
}

/// `first..first + count` within `0..len`.
fn clamp(first: u32, count: u32, len: usize) -> (usize, usize) {
    let a = (first as usize).min(len);
    let b = (first as usize).saturating_add(count as usize).min(len);
    (a, b)
}

/// Maps `f` over `items` in parallel on the DPU simulation pool (a request on several ranks:
/// each rank's operation in parallel, as the in-process backend runs a call).
pub fn par_map<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync + Send,
) -> Result<Vec<R>> {
    use rayon::prelude::*;
    let pool = crate::exec::local::threads::pool()?;
    Ok(pool.install(|| items.into_par_iter().map(f).collect()))
}
