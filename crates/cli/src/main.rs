//! `openpim`: the command-line front end of the emulated PIM server.
//!
//! - `openpim env` prints shell exports that put the SDK commands and libdpu on the paths;
//! - `openpim info` describes the emulated machine of a profile;
//! - `openpim run -- CMD` runs a host program on the emulator with a chosen profile, with an
//!   optional run report (`--report`, `--report=FILE.json`) and trace (`--trace=FILE.json`);
//! - `openpim demo` builds and runs the bundled demo program;
//! - `openpim plot REPORT.json` draws the phase breakdown of a JSON report.

mod install;

use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use install::Install;

#[derive(Parser)]
#[command(
    name = "openpim",
    version,
    about = "OpenPIM: an emulated UPMEM PIM server"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// Options that choose the emulated machine, shared by `info`, `run` and `demo`.
#[derive(clap::Args, Clone, Default)]
struct MachineOpts {
    /// Profile string (`key=value,...`, as `dpu_alloc`'s), added to UPMEM_PROFILE_BASE.
    #[arg(long)]
    profile: Option<String>,
    /// Hardware profile: a name from profiles/ (upmem-v1a, upmem-v1b) or a file path.
    #[arg(long)]
    hardware: Option<String>,
    /// Number of ranks of the emulated server (default: the hardware profile's, 40).
    #[arg(long)]
    ranks: Option<u32>,
}

impl MachineOpts {
    /// The profile string these options stand for, on top of `UPMEM_PROFILE_BASE`.
    fn profile_string(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Ok(base) = std::env::var("UPMEM_PROFILE_BASE") {
            if !base.trim().is_empty() {
                parts.push(base);
            }
        }
        if let Some(hw) = &self.hardware {
            parts.push(format!("hardware={hw}"));
        }
        if let Some(r) = self.ranks {
            parts.push(format!("nrRanks={r}"));
        }
        if let Some(p) = &self.profile {
            if !p.trim().is_empty() {
                parts.push(p.clone());
            }
        }
        parts.join(",")
    }
}

/// Options that ask for the run report and trace (they set OPENPIM_REPORT / OPENPIM_TRACE).
#[derive(clap::Args, Clone, Default)]
struct ReportOpts {
    /// Print the run report (phases, ranks, launches, advice) on stderr at exit; with
    /// `=FILE.json`, write it as JSON instead (docs/report-schema.md).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "1", value_name = "FILE.json")]
    report: Option<String>,
    /// Write a Chrome/Perfetto trace of the virtual timeline (one track for the host, one per rank).
    #[arg(long, value_name = "FILE.json")]
    trace: Option<String>,
}

impl ReportOpts {
    /// The environment the options stand for (paths made absolute).
    fn env(&self) -> Vec<(&'static str, String)> {
        let abs = |p: &str| {
            let path = std::path::Path::new(p);
            if path.is_absolute() {
                p.to_string()
            } else {
                std::env::current_dir()
                    .map(|d| d.join(path).to_string_lossy().into_owned())
                    .unwrap_or_else(|_| p.to_string())
            }
        };
        let mut v = Vec::new();
        if let Some(r) = &self.report {
            let value = if r == "1" { r.clone() } else { abs(r) };
            v.push(("OPENPIM_REPORT", value));
        }
        if let Some(t) = &self.trace {
            v.push(("OPENPIM_TRACE", abs(t)));
        }
        v
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Print shell exports for the SDK commands: eval "$(openpim env)".
    Env,
    /// Describe the emulated machine (profile, ranks, DPUs, memories, timing).
    Info {
        #[command(flatten)]
        machine: MachineOpts,
    },
    /// Run a host program on the emulated server: openpim run [options] -- CMD [ARGS...].
    Run {
        #[command(flatten)]
        machine: MachineOpts,
        #[command(flatten)]
        report: ReportOpts,
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// Build and run the bundled demo (vector addition on 256 DPUs, checked against the CPU).
    Demo {
        #[command(flatten)]
        machine: MachineOpts,
        #[command(flatten)]
        report: ReportOpts,
    },
    /// Draw the stacked phase breakdown of a JSON run report (needs python3 and matplotlib).
    Plot {
        /// A report written by `openpim run --report=FILE.json`.
        report: String,
        /// The image to write (default: the report's name with .png).
        #[arg(short = 'o', long = "output")]
        output: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("openpim: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cmd: Cmd) -> Result<ExitCode> {
    let install = Install::locate()?;
    match cmd {
        Cmd::Env => {
            print!("{}", install.shell_exports());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Info { machine } => {
            let text = openpim_runtime::machine_description(&machine.profile_string())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run {
            machine,
            report,
            command,
        } => run_command(&install, &machine, &report, &command, None),
        Cmd::Plot { report, output } => {
            let script = install.root.join("scripts/plot_phases.py");
            let mut cmd = Command::new("python3");
            cmd.arg(&script).arg(&report);
            if let Some(o) = output {
                cmd.arg("-o").arg(o);
            }
            let status = cmd.status().context(
                "could not start python3 (install it, with matplotlib: scripts/setup.sh)",
            )?;
            Ok(if status.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Demo { machine, report } => {
            let dir = install.root.join("examples/demo");
            let status = install
                .command("make")
                .arg("-s")
                .arg("-C")
                .arg(&dir)
                .status()
                .context("running make for the demo")?;
            if !status.success() {
                bail!("building the demo in {} failed", dir.display());
            }
            run_command(
                &install,
                &machine,
                &report,
                &["./bin/host".to_string()],
                Some(&dir),
            )
        }
    }
}

/// Runs `command` with the SDK on the paths and the machine options in UPMEM_PROFILE_BASE.
fn run_command(
    install: &Install,
    machine: &MachineOpts,
    report: &ReportOpts,
    command: &[String],
    dir: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let (program, args) = command.split_first().context("no command given after --")?;
    let mut cmd: Command = install.command(program);
    cmd.args(args);
    let profile = machine.profile_string();
    if !profile.is_empty() {
        // Fail early, with the emulator's own message, on a profile no launch would accept.
        openpim_runtime::machine_description(&profile).map_err(|e| anyhow::anyhow!("{e}"))?;
        cmd.env("UPMEM_PROFILE_BASE", profile);
    }
    for (k, v) in report.env() {
        cmd.env(k, v);
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{program}`"))?;
    Ok(match status.code() {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => {
            eprintln!("openpim: `{program}` was killed by a signal");
            ExitCode::from(1)
        }
    })
}
