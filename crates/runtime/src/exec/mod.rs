//! The execution layer: the ranks that run a DPU set's operations, behind one seam.
//!
//! The SDK layer ([`crate::sdk`]) turns what a program asks for (sets, symbols, prepared
//! buffers) into requests on ranks named by their slot: [`RankOp`] values and the calls of
//! [`Backend`]. A backend runs them: [`local`] in this process (a worker thread per rank,
//! DPUs simulated on a thread pool); [`remote`] (a daemon that owns the ranks, over a UNIX
//! socket) and [`mpi`] (ranks in MPI worker processes on several machines) implement the same
//! trait.
//! Backends report what ran to the virtual clock ([`crate::clock`]) as plain values (rank
//! slots, byte counts, durations, launch records); the clock never calls back.
//!
//! Every request names ranks by slot and carries its data by value (programs, places,
//! lengths); the only pointers are the host buffers of transfers ([`HostPtr`]), which a
//! remote backend copies into or out of its messages on the host side, and callbacks
//! ([`CallbackJob`]), which always run in the host process, in the order of the rank's queue.

pub mod local;
pub mod mpi;
pub(crate) mod queue;
pub(crate) mod queued;
pub mod remote;

use std::sync::Arc;

use openpim_machine::{CallShape, MachineConfig};

use crate::clock::stats::{DpuRunStats, LaunchRecord};
use crate::error::Result;
use crate::program::Program;
use crate::xfer::Place;

/// A host memory address handed over by the C API (prepared transfer buffers, async
/// transfer sources). The caller of the unsafe API that stores it guarantees it is valid
/// for the transfer's length until the transfer has run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPtr(pub *mut u8);

// SAFETY: a HostPtr is only dereferenced by the transfer it was given for, under the
// contract of the unsafe function that accepted it (valid, and not used concurrently by the
// caller, until the transfer completes), exactly as the SDK requires of its callers.
unsafe impl Send for HostPtr {}
// SAFETY: see Send; the pointer value itself is plain data.
unsafe impl Sync for HostPtr {}

/// One DPU's part of a transfer.
#[derive(Debug, Clone, Copy)]
pub struct XferItem {
    /// DPU index in the rank.
    pub dpu: u32,
    pub place: Place,
    pub buf: HostPtr,
}

/// A user callback as an operation (runs on the host, in the rank's queue order).
pub type CallbackJob = Box<dyn FnOnce() -> Result<()> + Send>;

/// An operation on one rank.
pub enum RankOp {
    /// Load `program` on the DPUs (indices in the rank). Always synchronous.
    Load {
        program: Arc<Program>,
        dpus: Vec<u32>,
    },
    /// Host -> DPU: copy `len` bytes from each item's buffer.
    Write { len: usize, items: Vec<XferItem> },
    /// DPU -> host: copy `len` bytes into each item's buffer.
    Read { len: usize, items: Vec<XferItem> },
    /// Run the DPUs with their programs.
    Launch { dpus: Vec<(u32, Arc<Program>)> },
    /// Call user code (no rank lock held).
    Callback(CallbackJob),
}

impl RankOp {
    /// The operation's name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            RankOp::Load { .. } => "load",
            RankOp::Write { .. } => "transfer to DPUs",
            RankOp::Read { .. } => "transfer from DPUs",
            RankOp::Launch { .. } => "launch",
            RankOp::Callback(_) => "callback",
        }
    }

    /// Bytes the operation moves between the host and the rank (transfers; 0 otherwise).
    pub fn xfer_bytes(&self) -> u64 {
        match self {
            RankOp::Write { len, items } | RankOp::Read { len, items } => {
                *len as u64 * items.len() as u64
            }
            _ => 0,
        }
    }
}

/// The shape of a call made of these rank operations (one per rank): its ranks, and the
/// bytes they move all together.
pub fn call_shape(ops: &[(u32, RankOp)]) -> CallShape {
    CallShape {
        ranks: ops.len() as u32,
        bytes: ops.iter().map(|(_, op)| op.xfer_bytes()).sum(),
    }
}

/// What a rank operation run for another process did, as that process's clock needs it
/// (the daemon reports it to its tenant; the in-process backend reports to the clock
/// directly).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpFacts {
    /// Real time of the transfer's host-side byte interleaving, ns (transfers).
    pub host_ns: u64,
    /// The launch's statistics (launches).
    pub launch: Option<LaunchRecord>,
}

/// An allocation: `dpu_alloc` (`dpus`: the DPUs wanted, on whole ranks but the last) or
/// `dpu_alloc_ranks` (`dpus: None`: whole ranks).
#[derive(Debug, Clone)]
pub struct AllocRequest {
    /// The machine (profile) the ranks belong to.
    pub machine: Arc<MachineConfig>,
    /// Ranks wanted (`None`: every free rank).
    pub ranks: Option<u32>,
    /// DPUs wanted in all (`None`: every DPU of the ranks).
    pub dpus: Option<u32>,
    /// What was asked for, as error messages name it ("4 DPUs", "all ranks").
    pub what: String,
    /// The profile string the machine was made from (a daemon re-reads its run options).
    pub profile: String,
}

/// The allocation error of a process whose machine (`nr_ranks` ranks) has only `free` of
/// them left: every backend says it the same way.
pub(crate) fn ranks_exhausted(what: &str, nr_ranks: u32, free: u32) -> crate::error::Error {
    let reason = if free == 0 {
        format!("all {nr_ranks} ranks of the machine are already allocated by this process; dpu_free a set first")
    } else {
        format!(
            "only {free} of the machine's {nr_ranks} ranks are free (the others are allocated by this process); dpu_free a set first or ask for fewer"
        )
    };
    crate::error::Error::Allocation {
        requested: what.to_string(),
        reason,
    }
}

/// `UPMEM_PROFILE_BASE` then `profile`: the whole profile of an allocation, as this process
/// reads it, for a backend whose ranks are held by another process (a daemon or an MPI
/// worker does not see this process's environment).
pub(crate) fn effective_profile(profile: &str) -> String {
    let base = std::env::var(openpim_machine::PROFILE_BASE_ENV).unwrap_or_default();
    [base.as_str(), profile]
        .iter()
        .filter(|p| !p.trim().is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

/// An allocated rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankInfo {
    /// Slot in the machine (0-based): how every later request names the rank.
    pub id: u32,
    /// DPUs of the rank in use.
    pub nr_dpus: u32,
}

/// A rank's state, as `dpu_status` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankStatus {
    /// Nothing queued or running.
    pub idle: bool,
    /// The last launch faulted.
    pub faulted: bool,
}

/// The ranks that run a DPU set: the seam between the SDK layer and execution.
///
/// Ranks are named by slot ([`RankInfo::id`]). Synchronous requests return when done;
/// queued ones run in order per rank, ranks in parallel, and report their first error at
/// the next [`Backend::sync`]. Every implementation reports its operations to the virtual
/// clock ([`crate::clock::timeline`]) the same way, so the report does not depend on the
/// backend.
///
/// ```
/// use std::sync::Arc;
/// use openpim_runtime::exec::{local::LocalBackend, AllocRequest, Backend};
/// use openpim_runtime::machine::MachineConfig;
///
/// let backend = LocalBackend::shared();
/// backend.start().unwrap();
/// let machine = Arc::new(MachineConfig::from_profile_string("nrRanks=2,nrDpusPerRank=4").unwrap());
/// let req = AllocRequest {
///     machine, ranks: Some(2), dpus: Some(6), what: "6 DPUs".into(), profile: String::new(),
/// };
/// let ranks = backend.alloc(&req).unwrap();
/// assert_eq!(ranks.iter().map(|r| r.nr_dpus).collect::<Vec<_>>(), [4, 2]);
/// assert!(backend.status(ranks[0].id).idle);
/// assert!(backend.programs(ranks[1].id, 0, 2).iter().all(Option::is_none));
/// for r in ranks {
///     backend.free(r.id);
/// }
/// assert_eq!(openpim_runtime::ranks_in_use(), 0);
/// ```
pub trait Backend: Send + Sync {
    /// The backend as `Any`, for the layers above that have a use for one kind of backend (the
    /// collectives' host step runs in the MPI backend's workers: `sdk::rank`). A downcast
    /// rather than a method naming each kind, so that this trait depends on no backend.
    fn as_any(&self) -> &dyn std::any::Any;

    /// Checks that the backend can run (the local one: its simulation threads start); an
    /// allocation fails with this error first.
    fn start(&self) -> Result<()>;

    /// The machine a profile string selects on this backend (the in-process one: the
    /// profile's own; a daemon's: its machine, with the profile's run options).
    fn machine(&self, profile: &str) -> Result<MachineConfig> {
        Ok(MachineConfig::from_profile_string(profile)?)
    }

    /// Allocates ranks; the caller has checked the request against the machine's size.
    fn alloc(&self, req: &AllocRequest) -> Result<Vec<RankInfo>>;

    /// Releases a rank: once its queued operations have run, its slot is free again.
    fn free(&self, rank: u32);

    /// Runs one operation per rank (distinct ranks) now: waits for the ranks' queued work,
    /// runs the ranks in parallel, returns when all are done (the host joins them).
    fn execute(&self, ops: Vec<(u32, RankOp)>) -> Result<()>;

    /// Queues one operation per rank (one call of the program: `ops` is its shape).
    fn enqueue(&self, ops: Vec<(u32, RankOp)>) -> Result<()>;

    /// Starts a NONBLOCKING callback on its own thread, counted as work of `rank` (which
    /// [`Backend::sync`] waits for); `ranks` are the ranks it runs for.
    fn spawn_detached(&self, rank: u32, job: CallbackJob, ranks: Vec<u32>) -> Result<()>;

    /// Waits until no queued operation of the rank is left (NONBLOCKING callbacks aside).
    fn wait_idle(&self, rank: u32);

    /// Waits for the rank's queued operations and callbacks; returns (and clears) the first
    /// error of an asynchronous one.
    fn sync(&self, rank: u32) -> Result<()>;

    /// The rank's state.
    fn status(&self, rank: u32) -> RankStatus;

    /// The rank's state for a program polling it (`dpu_status`): waits, as the emulator's
    /// time, while only rank operations are queued or running, until they are done or
    /// `ran_past(cycles)` says that the launch running now, having simulated `cycles` cycles
    /// on its slowest DPU so far, ends after the program's present (see
    /// [`crate::exec::queue::Counts::settle`]). A backend that cannot see a launch's progress
    /// bounds the wait in real time instead.
    fn polled_status(&self, rank: u32, ran_past: &dyn Fn(u64) -> bool) -> RankStatus;

    /// The programs of the rank's DPUs `first..first + count` (as loaded, or patched by IRAM
    /// writes), as of the operations run so far.
    fn programs(&self, rank: u32, first: u32, count: u32) -> Vec<Option<Arc<Program>>>;

    /// The log (printf output) of one DPU's last launch (`Error::LogBufferTooSmall` when its
    /// printf buffer wrapped).
    fn log(&self, rank: u32, dpu: u32) -> Result<Vec<u8>>;

    /// Statistics of the last launch of the rank's DPUs `first..first + count`.
    fn run_stats(&self, rank: u32, first: u32, count: u32) -> Vec<Option<DpuRunStats>>;
}
