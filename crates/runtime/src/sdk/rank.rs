//! A rank as the SDK layer holds it: its slot, its DPUs, its machine, the backend that runs
//! it, and the host-side state of the SDK (the DPUs' prepared transfer buffers).

use std::sync::{Arc, Mutex, MutexGuard};

use openpim_machine::MachineConfig;

use crate::clock::stats::DpuRunStats;
use crate::error::Result;
use crate::exec::{Backend, CallbackJob, HostPtr, RankInfo, RankOp};
use crate::program::Program;

/// A rank of DPUs (a handle: the backend runs it; dropping the last handle frees it).
pub struct Rank {
    id: u32,
    nr_dpus: u32,
    machine: Arc<MachineConfig>,
    backend: Arc<dyn Backend>,
    /// `dpu_prepare_xfer` buffers, per DPU.
    prepared: Mutex<Vec<Option<HostPtr>>>,
}

impl std::fmt::Debug for Rank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rank({}, {} DPUs)", self.id, self.nr_dpus)
    }
}

impl Rank {
    /// The handle of a rank the backend allocated.
    pub(crate) fn new(
        info: RankInfo,
        machine: Arc<MachineConfig>,
        backend: Arc<dyn Backend>,
    ) -> Rank {
        Rank {
            id: info.id,
            nr_dpus: info.nr_dpus,
            machine,
            backend,
            prepared: Mutex::new(vec![None; info.nr_dpus as usize]),
        }
    }

    /// The rank's slot in the machine (0-based).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// DPUs in this rank.
    pub fn nr_dpus(&self) -> u32 {
        self.nr_dpus
    }

    /// The machine this rank belongs to.
    pub fn machine(&self) -> &Arc<MachineConfig> {
        &self.machine
    }

    /// The DPU frequency in Hz: what the loader writes into a program's `CLOCKS_PER_SEC`.
    pub fn clocks_per_sec(&self) -> u32 {
        self.machine
            .hardware
            .dpu
            .frequency_mhz
            .saturating_mul(1_000_000)
    }

    /// True when the last launch on this rank faulted.
    pub fn faulted(&self) -> bool {
        self.backend.status(self.id).faulted
    }

    /// The backend that runs the rank.
    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The MPI backend that runs the rank, in a distributed run (`openpim run --mpi N`).
    pub fn mpi_backend(&self) -> Option<&crate::exec::mpi::MpiBackend> {
        self.backend.as_any().downcast_ref()
    }

    /// The programs of DPUs `range` (see [`Backend::programs`]).
    pub(crate) fn programs(&self, range: std::ops::Range<u32>) -> Vec<Option<Arc<Program>>> {
        self.backend
            .programs(self.id, range.start, range.end - range.start)
    }

    pub(crate) fn wait_idle(&self) {
        self.backend.wait_idle(self.id);
    }

    pub(crate) fn sync(&self) -> Result<()> {
        self.backend.sync(self.id)
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.backend.status(self.id).idle
    }

    pub(crate) fn log_of(&self, dpu: u32) -> Result<Vec<u8>> {
        self.backend.log(self.id, dpu)
    }

    pub(crate) fn run_stats(&self, range: std::ops::Range<u32>) -> Vec<Option<DpuRunStats>> {
        self.backend
            .run_stats(self.id, range.start, range.end - range.start)
    }

    /// Queues one operation on the rank alone.
    pub(crate) fn enqueue(&self, op: RankOp) -> Result<()> {
        self.backend.enqueue(vec![(self.id, op)])
    }

    /// Starts a NONBLOCKING callback (see [`Backend::spawn_detached`]).
    pub(crate) fn spawn_detached(&self, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.backend.spawn_detached(self.id, job, ranks)
    }

    pub(crate) fn lock_prepared(&self) -> MutexGuard<'_, Vec<Option<HostPtr>>> {
        self.prepared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        self.backend.free(self.id);
    }
}
