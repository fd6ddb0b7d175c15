//! The debugging options of `openpim run` (`--gdb`, `--gdb-dpu`, `--gdb-on-fault`,
//! `--core-dir`, `--dpu-trace`: they set the variables `openpim-debug` reads) and
//! `openpim core inspect`.

use std::process::Command;

use anyhow::{bail, Result};

/// Debugging options of `openpim run` (docs/debugging.md).
#[derive(clap::Args, Clone, Default)]
pub struct DebugOpts {
    /// Serve a DPU to GDB on ADDR:PORT (default 127.0.0.1:1234): with no --gdb-dpu, the first
    /// DPU launched stops before its first instruction and waits (no timeout) for a debugger.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = openpim_debug::gdb::DEFAULT_ADDR, value_name = "ADDR:PORT")]
    gdb: Option<String>,
    /// The DPU --gdb stops: RANK.DPU (rank slot as in the report's ranks[], DPU index in it)
    /// or first.
    #[arg(long, value_name = "RANK.DPU|first")]
    gdb_dpu: Option<String>,
    /// With --gdb: a faulting DPU stops at the fault and waits for a debugger.
    #[arg(long)]
    gdb_on_fault: bool,
    /// Write an ELF core file (core.RANK.DPU) of each faulting DPU into DIR.
    #[arg(long, value_name = "DIR")]
    core_dir: Option<String>,
    /// Write an instruction trace (one line per issue slot) of each DPU run into DIR.
    #[arg(long, value_name = "DIR")]
    dpu_trace: Option<String>,
}

impl DebugOpts {
    /// Sets the variables for the program; `Err` for options that cannot be combined. An
    /// address GDB cannot be served on ends `openpim` with status 2 before the program starts.
    pub fn apply(&self, cmd: &mut Command, server: bool, mpi: bool) -> Result<()> {
        if self.gdb.is_none() && (self.gdb_dpu.is_some() || self.gdb_on_fault) {
            bail!("--gdb-dpu and --gdb-on-fault choose what --gdb serves: add --gdb[=ADDR:PORT]");
        }
        if let Some(addr) = &self.gdb {
            if server || mpi {
                let via = if server { "--server" } else { "--mpi" };
                bail!("--gdb and {via} cannot be combined: the debugger serves DPUs run by this program's own process; drop one of them");
            }
            let config = openpim_debug::gdb::Config::from_values(
                Some(addr.clone()),
                self.gdb_dpu.clone(),
                self.gdb_on_fault.then(|| "1".to_string()),
            )
            // The library names its variables; here the options stand for them.
            .map_err(|e| {
                anyhow::anyhow!(
                    "{}",
                    e.to_string()
                        .replacen("OPENPIM_GDB_DPU=", "--gdb-dpu ", 1)
                        .replacen("OPENPIM_GDB=", "--gdb=", 1)
                )
            })?;
            if let Some(c) = &config {
                if let Err(e) = std::net::TcpListener::bind(&c.addr) {
                    eprintln!("openpim: --gdb={}: cannot listen there ({e}): choose a free port, e.g. --gdb=127.0.0.1:2345", c.addr);
                    std::process::exit(2);
                }
            }
            cmd.env(openpim_debug::gdb::GDB_ENV, addr);
            if let Some(d) = &self.gdb_dpu {
                cmd.env(openpim_debug::gdb::GDB_DPU_ENV, d);
            }
            if self.gdb_on_fault {
                cmd.env(openpim_debug::gdb::GDB_ON_FAULT_ENV, "1");
            }
        }
        if let Some(d) = &self.core_dir {
            cmd.env(openpim_debug::core::CORE_DIR_ENV, crate::absolute(d));
        }
        if let Some(d) = &self.dpu_trace {
            cmd.env(openpim_debug::trace::TRACE_ENV, crate::absolute(d));
        }
        Ok(())
    }
}

/// `openpim core inspect FILE`: what a core file holds.
pub fn inspect(file: &str) -> Result<()> {
    let summary = openpim_debug::core::inspect(std::path::Path::new(file))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{summary}");
    Ok(())
}

/// The subcommands of `openpim core`.
#[derive(clap::Subcommand)]
pub enum CoreCmd {
    /// Describe a DPU core file: the fault, each tasklet's pc and line, the memories it holds.
    Inspect {
        /// A core.RANK.DPU file written under OPENPIM_CORE_DIR (or --core-dir).
        file: String,
    },
}
