//! `openpim study`: studies built from the emulator's run reports. `openpim study scalability`
//! runs the scalability study of seed 004 (the workloads of `workloads/` at up to 2,048 DPUs,
//! their CPU baselines, the seed's figures and REPORT.md) through its Python driver,
//! `workloads/study/scalability.py`.

use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::install::Install;

/// The studies `openpim study` runs.
#[derive(Subcommand)]
pub enum StudyCmd {
    /// The scalability study: embedding lookup and NTT from 1 to 2,048 DPUs, CPU baselines,
    /// one CSV and one PNG per figure of the seed, and REPORT.md (needs python3 + matplotlib).
    Scalability {
        /// Reduced sizes (a few minutes; what CI runs).
        #[arg(long)]
        quick: bool,
        /// The output folder (created if needed; other files in it are kept).
        #[arg(long, value_name = "DIR", default_value = "study-scalability")]
        out: String,
        /// Hardware profile of the emulated machine: a name from profiles/ or a file path.
        #[arg(long, value_name = "H")]
        hardware: Option<String>,
        /// Only these figures, comma-separated (fig05 .. fig16, fig18).
        #[arg(long, value_name = "FIGS")]
        only: Option<String>,
    },
}

/// Runs a study; its exit status is the driver's.
pub fn run(install: &Install, cmd: StudyCmd) -> Result<ExitCode> {
    match cmd {
        StudyCmd::Scalability {
            quick,
            out,
            hardware,
            only,
        } => {
            let script = install.root.join("workloads/study/scalability.py");
            let mut cmd = install.command("python3");
            cmd.arg(&script).arg("--out").arg(&out);
            if quick {
                cmd.arg("--quick");
            }
            if let Some(h) = hardware {
                cmd.arg("--hardware").arg(h);
            }
            if let Some(o) = only {
                cmd.arg("--only").arg(o);
            }
            run_python(&mut cmd)
        }
    }
}

/// Runs a Python script's command: exit status 0 if it succeeded, 1 if not, an error if
/// python3 could not start.
pub fn run_python(cmd: &mut Command) -> Result<ExitCode> {
    let status = cmd
        .status()
        .context("could not start python3 (install it, with matplotlib: scripts/setup.sh)")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
