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

// Layers (docs/internals/runtime.md): `sdk` (what the SDK sees) calls `exec` (the ranks that
// run it, behind the `exec::Backend` seam); both report to `clock`, which calls neither; all
// three use the shared low-level modules `error`, `program`, `xfer` and `context`.
// `scripts/module_graph.py` checks that no module depends on one that depends on it.
pub mod checkpoint;
pub mod clock;
mod context;
mod error;
pub mod exec;
pub mod observe;
mod program;
pub mod sdk;
mod xfer;

#[cfg(test)]
mod testutil;

pub use clock::stats::{launch_history, launch_totals, DpuRunStats, LaunchRecord, LaunchTotals};
pub use clock::{host_clock, inter_dpu, report, timeline};
pub use error::{install_one_line_panic_hook, panic_message, quiet, Error, FaultInfo, Result};
pub use exec::local::interleave::VectorUnit;
pub use exec::local::threads::{
    host_cores, parse_threads, thread_setting, ThreadSetting, THREADS_ENV, THREADS_PER_CORE,
};
pub use exec::{Backend, HostPtr, RankOp, XferItem};
pub use program::{Program, Symbol, CLOCKS_PER_SEC_SYMBOL, MRAM_HEAP_SYMBOL};
pub use sdk::rank::Rank;
pub use sdk::set::{
    get_symbol, Callback, CallbackFlags, CallbackScope, DpuSet, LaunchPolicy, XferDirection,
    XferFlags,
};
pub use sdk::system::{alloc, alloc_ranks, machine_description, ranks_in_use};
pub use xfer::{check_access, Place, SymbolRef};

pub use openpim_machine as machine;
