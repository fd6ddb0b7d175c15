//! The OpenPIM host runtime: DPU sets, allocation, program loading, symbols, transfers,
//! launches, callbacks and logs, with the UPMEM SDK's semantics.
//!
//! ```no_run
//! use openpim_runtime::{alloc, LaunchPolicy, SymbolRef};
//! let set = alloc(Some(64), "").unwrap();
//! set.load_file("kernel.dpu").unwrap();
//! set.copy_to(SymbolRef::Name("input"), 0, &[0u8; 64]).unwrap();
//! set.launch(LaunchPolicy::Synchronous).unwrap();
//! ```
//!
//! Every function is safe to call from several host threads at once: each rank has its own
//! locks and no global lock is held while DPUs run.

mod error;
pub mod host_clock;
mod interleave;
mod program;
mod rank;
pub mod report;
mod set;
mod stats;
mod system;
mod threads;
pub mod timeline;
mod xfer;

#[cfg(test)]
mod testutil;

pub use error::{Error, FaultInfo, Result};
pub use program::{Program, Symbol, CLOCKS_PER_SEC_SYMBOL, MRAM_HEAP_SYMBOL};
pub use rank::{quiet, HostPtr, Rank, RankOp, XferItem};
pub use set::{
    get_symbol, Callback, CallbackFlags, CallbackScope, DpuSet, LaunchPolicy, XferDirection,
    XferFlags,
};
pub use stats::{launch_history, launch_totals, DpuRunStats, LaunchRecord, LaunchTotals};
pub use system::{alloc, alloc_ranks, machine_description, ranks_in_use};
pub use threads::{
    host_cores, parse_threads, thread_setting, ThreadSetting, THREADS_ENV, THREADS_PER_CORE,
};
pub use xfer::{check_access, Place, SymbolRef};

pub use openpim_machine as machine;
