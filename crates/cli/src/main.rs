//! `openpim`: the command-line front end of the emulated PIM server.
//!
//! - `openpim env` prints shell exports that put the SDK commands and libdpu on the paths;
//! - `openpim info` describes the emulated machine of a profile;
//! - `openpim run -- CMD` runs a host program on the emulator with a chosen profile;
//! - `openpim demo` builds and runs the bundled demo program.

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
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// Build and run the bundled demo (vector addition on 256 DPUs, checked against the CPU).
    Demo {
        #[command(flatten)]
        machine: MachineOpts,
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
        Cmd::Run { machine, command } => run_command(&install, &machine, &command, None),
        Cmd::Demo { machine } => {
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
            run_command(&install, &machine, &["./bin/host".to_string()], Some(&dir))
        }
    }
}

/// Runs `command` with the SDK on the paths and the machine options in UPMEM_PROFILE_BASE.
fn run_command(
    install: &Install,
    machine: &MachineOpts,
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
