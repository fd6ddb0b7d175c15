//! The log of exchanges between DPUs that the timeline keeps (data only; the API that opens
//! and closes them is [`super::inter_dpu`]).

use openpim_machine::{Nanos, Phase};

/// What an exchange is, as the caller describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterDpuCall {
    /// The primitive: `region` for a program-marked host-mediated exchange, or a collective's
    /// name (`all_reduce`, `alltoall`, ...).
    pub primitive: String,
    /// Free text (the program's label for a region; empty when none).
    pub label: String,
    /// The communicating axes as the caller names them (a PID-Comm `comm` string such as
    /// `"100"`; empty for a region).
    pub axes: String,
    /// Bytes the exchange moves as the caller counts them (0: count the transfers made in the
    /// region instead).
    pub bytes: u64,
    /// How the data moves: `host` (program-marked, through the host), or the library's path
    /// name (`optimized`, `baseline`, `interconnect ...`).
    pub path: String,
    /// The exchange owns the kernels launched and the programs loaded inside it (a
    /// collective's relocation programs): they count as inter-DPU time too.
    pub owns_kernels: bool,
}

/// One exchange on the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterDpuEntry {
    pub call: InterDpuCall,
    /// Host clock when it began.
    pub start_ns: Nanos,
    /// Host clock when it ended (`None` while open).
    pub end_ns: Option<Nanos>,
    /// Bytes of the transfers issued inside it (both directions, all DPUs).
    pub xfer_bytes: u64,
    /// Modeled link time charged inside it ([`link_ops`]), summed over ranks.
    pub link_ns: Nanos,
}

impl InterDpuEntry {
    /// The bytes to report: the caller's count, else the transfers'.
    pub fn bytes(&self) -> u64 {
        if self.call.bytes > 0 {
            self.call.bytes
        } else {
            self.xfer_bytes
        }
    }
}

/// The exchanges of the run.
#[derive(Debug, Clone, Default)]
pub struct InterDpuLog {
    pub entries: Vec<InterDpuEntry>,
    /// Indices of the open entries, innermost last.
    pub(crate) open: Vec<usize>,
}

impl InterDpuLog {
    /// The innermost open exchange (an index into [`InterDpuLog::entries`]).
    pub fn current(&self) -> Option<u32> {
        self.open.last().map(|i| *i as u32)
    }

    /// Whether an exchange is open: host code and transfers are inter-DPU time.
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// Whether exchange `id` owns its kernels ([`InterDpuCall::owns_kernels`]).
    pub(crate) fn owns_kernels(&self, id: u32) -> bool {
        self.entries
            .get(id as usize)
            .is_some_and(|e| e.call.owns_kernels)
    }

    /// Transfer bytes issued in exchange `id`.
    pub(crate) fn add_xfer_bytes(&mut self, id: u32, bytes: u64) {
        if let Some(e) = self.entries.get_mut(id as usize) {
            e.xfer_bytes += bytes;
        }
    }

    /// The phase of host code now: inter-DPU inside an exchange.
    pub(crate) fn host_phase(&self) -> Phase {
        if self.is_open() {
            Phase::InterDpu
        } else {
            Phase::Host
        }
    }
}
