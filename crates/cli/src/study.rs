//! `openpim study`: studies built from the emulator's run reports, one per seed paper, each run
//! by its Python driver in `workloads/study/`: `scalability` (seed 004: the workloads of
//! `workloads/` at up to 2,048 DPUs, their CPU baselines, the seed's figures), `collectives`
//! (seed 002, PID-Comm), `sharing` (seed 001, vPIM), `tiers` (seed 003, memory tiers),
//! `allocation` (seed 000), and `all` of them with an index. Each writes CSVs, PNGs, runs.log
//! and a REPORT.md of the paper's claims against OpenPIM's figures.

use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

/// The options every study takes.
#[derive(Args)]
pub struct StudyOpts {
    /// Reduced sizes (what `make test` runs).
    #[arg(long)]
    quick: bool,
    /// The output folder (created if needed; other files in it are kept). Default: study-NAME.
    #[arg(long, value_name = "DIR")]
    out: Option<String>,
    /// Hardware profile of the emulated machine: a name from profiles/ or a file path.
    #[arg(long, value_name = "H")]
    hardware: Option<String>,
}

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
    /// Seed 002 (PID-Comm): the eight collectives against the host-mediated baseline by size
    /// and ranks, the ablation of each technique, the workloads' exchanges.
    Collectives(StudyOpts),
    /// Seed 001 (vPIM): programs in process against the same through the rank-manager daemon,
    /// each optimisation's contribution, allocation and wipe latency, oversubscription.
    Sharing(StudyOpts),
    /// Seed 003 (memory tiers): MRAM bandwidth per backing store, the persistence horizon,
    /// data bigger than the memory budget.
    Tiers(StudyOpts),
    /// Seed 000 (allocation side effects): what holding ranks idle costs, and the advice.
    Allocation(StudyOpts),
    /// Every study (the four above and scalability), each into DIR/<name>/, and an index
    /// DIR/REPORT.md; exits non-zero naming any study that failed.
    All(StudyOpts),
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
        StudyCmd::Collectives(o) => seed_study(install, "collectives", o),
        StudyCmd::Sharing(o) => seed_study(install, "sharing", o),
        StudyCmd::Tiers(o) => seed_study(install, "tiers", o),
        StudyCmd::Allocation(o) => seed_study(install, "allocation", o),
        StudyCmd::All(o) => seed_study(install, "all", o),
    }
}

/// Runs `workloads/study/NAME.py` with the common options.
fn seed_study(install: &Install, name: &str, o: StudyOpts) -> Result<ExitCode> {
    let script = install.root.join(format!("workloads/study/{name}.py"));
    let mut cmd = install.command("python3");
    let out = o.out.unwrap_or_else(|| format!("study-{name}"));
    cmd.arg(&script).arg("--out").arg(out);
    if o.quick {
        cmd.arg("--quick");
    }
    if let Some(h) = o.hardware {
        cmd.arg("--hardware").arg(h);
    }
    run_python(&mut cmd)
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
