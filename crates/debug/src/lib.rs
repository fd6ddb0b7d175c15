//! Debugging DPU programs: what the UPMEM SDK's `dpu-lldb`, DPU core dumps and `dputrace`
//! give, built on the engine's observation seam (`openpim_engine::probe`) and the runtime's
//! observers (`openpim_runtime::observe`).
//!
//! - [`gdb`]: a GDB Remote Serial Protocol server for one DPU at a time (tasklets as
//!   threads), `OPENPIM_GDB`.
//! - [`core`]: an ELF core file per faulting DPU, `OPENPIM_CORE_DIR`.
//! - [`trace`]: one line per issue slot, `OPENPIM_DPU_TRACE`.
//!
//! Each tool is installed once per process by [`install_from_env`] (libdpu calls it at the
//! first `dpu_alloc`); the `openpim run` options set the variables.

pub mod core;
pub mod error;
pub mod filter;
pub mod gdb;
pub mod trace;

use std::sync::OnceLock;

pub use error::Error;

/// Installs the tools the environment asks for (once per process; later calls return the
/// first call's result). An invalid variable is an error naming it and the fix.
/// `profile_core_dir` is the profile key `coreDir=` of the first allocation, if any
/// (`OPENPIM_CORE_DIR` wins).
pub fn install_from_env(profile_core_dir: Option<&str>) -> Result<(), Error> {
    static DONE: OnceLock<Result<(), Error>> = OnceLock::new();
    DONE.get_or_init(|| {
        let gdb = gdb::Config::from_env()?;
        let trace = trace::Config::from_env()?;
        let core = core::Config::from_env()?.or_else(|| {
            profile_core_dir.map(|d| core::Config {
                dir: std::path::PathBuf::from(d),
            })
        });
        if let Some(c) = gdb {
            gdb::start(c)?;
        }
        if let Some(c) = trace {
            trace::start(c);
        }
        if let Some(c) = core {
            core::start(c);
        }
        Ok(())
    })
    .clone()
}

/// What the tools say at the program's exit (a DPU to debug that never launched, traces
/// cut short, ...): one line each.
pub fn exit_messages() -> Vec<String> {
    let mut lines = Vec::new();
    lines.extend(gdb::exit_message());
    lines.extend(trace::exit_message());
    lines
}
