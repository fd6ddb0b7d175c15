//! `openpim`: the command-line front end of the emulated PIM server.
//!
//! - `openpim env` prints shell exports that put the SDK commands and libdpu on the paths;
//! - `openpim info` describes the emulated machine of a profile;
//! - `openpim run -- CMD` runs a host program on the emulator with a chosen profile, with an
//!   optional run report (`--report`, `--report=FILE.json`) and trace (`--trace=FILE.json`);
//! - `openpim profile -- CMD` runs it with the exact DPU profiler (docs/profiling.md);
//! - `openpim demo` builds and runs the bundled demo program;
//! - `openpim plot REPORT.json` draws the phase breakdown of a JSON report;
//! - `openpim study scalability|collectives|sharing|tiers|allocation|all` runs the seeds' studies
//!   (workloads, baselines, figures, a REPORT.md of the papers' claims against OpenPIM's).

mod checkpoint;
mod daemon_cmd;
mod debug_cmd;
mod install;
mod profile_cmd;
mod study;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser, Subcommand};

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
    #[arg(long, value_name = "S")]
    profile: Option<String>,
    /// Hardware profile: a name from profiles/ (upmem-v1a, upmem-v1b) or a file path.
    #[arg(long, value_name = "H")]
    hardware: Option<String>,
    /// Number of ranks of the emulated server (default: the hardware profile's, 40).
    #[arg(long, value_name = "N")]
    ranks: Option<u32>,
    /// Where MRAM lives: anon (host memory, the default), file:DIR (sparse files, kept),
    /// cached:DIR (files behind --memory-budget). See docs/memory.md.
    #[arg(long, value_name = "STORE")]
    memory: Option<String>,
    /// DRAM budget of --memory cached:DIR (e.g. 2G).
    #[arg(long, value_name = "SIZE")]
    memory_budget: Option<String>,
    /// When file-backed MRAM is made durable: never, end (default), launch, transfer.
    #[arg(long, value_name = "WHEN")]
    persist: Option<String>,
}

/// Where the DPU work runs (`run`, `demo`).
#[derive(clap::Args, Clone, Default)]
struct ServerOpts {
    /// Run the DPU work on the rank-manager daemon listening on PATH (`openpim daemon`;
    /// sets OPENPIM_SERVER); --ranks must fit the daemon's machine.
    #[arg(long, value_name = "PATH")]
    server: Option<String>,
    /// Run the DPU work on N MPI worker processes (docs/scale-out.md): the machine's ranks
    /// spread over them; all on this machine unless --hostfile names others.
    #[arg(long, value_name = "N")]
    mpi: Option<u32>,
    /// OpenMPI hostfile of the machines for --mpi (this machine first: the gateway runs here).
    #[arg(long, value_name = "F")]
    hostfile: Option<String>,
}

/// The value `key` has in a profile string (its last occurrence, as the parser applies them).
fn profile_value<'a>(profile: &'a str, key: &str) -> Option<&'a str> {
    profile
        .rsplit(',')
        .filter_map(|item| item.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
}

impl MachineOpts {
    /// Checks that the options do not contradict each other: `--ranks N` with `--profile`
    /// holding another `nrRanks`, or `--hardware H` with another `hardware=`. Options that
    /// agree, or that set different keys, are merged.
    fn check_conflicts(&self) -> Result<()> {
        let Some(p) = &self.profile else {
            return Ok(());
        };
        if let (Some(r), Some(v)) = (self.ranks, profile_value(p, "nrRanks")) {
            if v.parse::<u32>().ok() != Some(r) {
                bail!(
                    "--ranks {r} and --profile nrRanks={v} both set the number of ranks: give one of them (or the same value)"
                );
            }
        }
        if let (Some(h), Some(v)) = (&self.hardware, profile_value(p, "hardware")) {
            if h != v {
                bail!(
                    "--hardware {h} and --profile hardware={v} both choose the hardware profile: give one of them (or the same value)"
                );
            }
        }
        for (flag, key, value) in self.memory_keys() {
            if let Some(v) = profile_value(p, key).filter(|v| *v != value) {
                bail!(
                    "{flag} {value} and --profile {key}={v} both set {key}: give one of them (or the same value)"
                );
            }
        }
        Ok(())
    }

    /// The MRAM store options given: (option, profile key, value).
    fn memory_keys(&self) -> Vec<(&'static str, &'static str, &str)> {
        [
            ("--memory", "memory", &self.memory),
            ("--memory-budget", "memoryBudget", &self.memory_budget),
            ("--persist", "persist", &self.persist),
        ]
        .into_iter()
        .filter_map(|(f, k, v)| v.as_deref().map(|v| (f, k, v)))
        .collect()
    }

    /// The profile string these options stand for, on top of `UPMEM_PROFILE_BASE`.
    fn profile_string(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Ok(base) = std::env::var("UPMEM_PROFILE_BASE") {
            if !base.trim().is_empty() {
                parts.push(base);
            }
        }
        // A key the profile also sets (to the same value: check_conflicts) is left to it.
        let in_profile = |key: &str| {
            self.profile
                .as_deref()
                .is_some_and(|p| profile_value(p, key).is_some())
        };
        if let Some(hw) = self.hardware.as_ref().filter(|_| !in_profile("hardware")) {
            parts.push(format!("hardware={hw}"));
        }
        if let Some(r) = self.ranks.filter(|_| !in_profile("nrRanks")) {
            parts.push(format!("nrRanks={r}"));
        }
        for (_, key, value) in self.memory_keys() {
            if !in_profile(key) {
                parts.push(format!("{key}={value}"));
            }
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
    /// Run the checkers on the DPU programs: `memory` (uninitialised reads, overruns of symbols
    /// and heap blocks, stack overflows, stack report), `races` (unordered accesses of
    /// tasklets), or `memory,races` (docs/checking.md). Findings go to stderr and the report.
    #[arg(long, value_name = "memory|races|memory,races", value_parser = parse_check)]
    check: Option<String>,
}

/// A `--check` value: the checkers it names, as OPENPIM_CHECK takes them.
fn parse_check(v: &str) -> std::result::Result<String, String> {
    openpim_check::parse(v)
        .map(|m| m.name().to_string())
        .map_err(|_| format!("accepted values are {}", openpim_check::ACCEPTED))
}

/// A file `openpim run` was asked to write (`--report=FILE.json`, `--trace=FILE.json`), and
/// what it looked like before the run (to tell afterwards whether the run wrote it).
struct Output {
    /// The option, for messages.
    option: &'static str,
    path: PathBuf,
    before: Option<(std::time::SystemTime, u64)>,
}

fn file_state(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl Output {
    /// Checks that `path` can be written, before the program runs (so that no run is lost to
    /// a typo in a path); the file is not changed (and not left behind if it did not exist).
    fn check(option: &'static str, path: &str) -> Result<Output> {
        let p = PathBuf::from(path);
        let fail = |why: String| {
            anyhow::anyhow!(
                "{option}: cannot write '{}': {why}; choose a file in an existing, writable directory",
                p.display()
            )
        };
        if p.is_dir() {
            return Err(fail("it is a directory".into()));
        }
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(fail(format!(
                    "the directory '{}' does not exist",
                    dir.display()
                )));
            }
        }
        let existed = p.exists();
        let before = file_state(&p);
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&p)
            .map_err(|e| fail(e.to_string()))?;
        if !existed {
            let _ = std::fs::remove_file(&p);
        }
        Ok(Output {
            option,
            path: p,
            before,
        })
    }

    /// True when the run wrote the file (it exists and is not what it was before).
    fn written(&self) -> bool {
        match (file_state(&self.path), self.before) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(after), Some(before)) => after != before,
        }
    }
}

impl ReportOpts {
    /// The files the options ask for, checked for writing.
    fn outputs(&self) -> Result<Vec<Output>> {
        let mut v = Vec::new();
        if let Some(r) = &self.report {
            if !is_text_report(r) {
                v.push(Output::check("--report", &absolute(r))?);
            }
        }
        if let Some(t) = &self.trace {
            v.push(Output::check("--trace", &absolute(t))?);
        }
        Ok(v)
    }

    /// The environment the options stand for (paths made absolute).
    fn env(&self) -> Vec<(&'static str, String)> {
        let abs = absolute;
        let mut v = Vec::new();
        if let Some(r) = &self.report {
            let value = if is_text_report(r) { r.clone() } else { abs(r) };
            v.push(("OPENPIM_REPORT", value));
        }
        if let Some(t) = &self.trace {
            v.push(("OPENPIM_TRACE", abs(t)));
        }
        if let Some(c) = &self.check {
            v.push((openpim_check::CHECK_ENV, c.clone()));
        }
        v
    }
}

/// `--report` values that mean the text table on stderr (as `OPENPIM_REPORT`), not a file.
fn is_text_report(v: &str) -> bool {
    matches!(v, "1" | "text" | "-")
}

/// `p` made absolute against the current directory.
fn absolute(p: &str) -> String {
    let path = Path::new(p);
    if path.is_absolute() {
        p.to_string()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path).to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.to_string())
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
        /// Also show how the ranks would be assigned to N MPI workers (`run --mpi N`).
        #[arg(long, value_name = "N")]
        mpi: Option<u32>,
    },
    /// Run a host program on the emulated server: openpim run [options] -- CMD [ARGS...].
    Run {
        #[command(flatten)]
        machine: MachineOpts,
        #[command(flatten)]
        server: ServerOpts,
        #[command(flatten)]
        report: ReportOpts,
        #[command(flatten)]
        debug: debug_cmd::DebugOpts,
        /// The command and its arguments: what follows `--`, or everything from the first word
        /// that is not an option of `openpim run`.
        #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Build and run the bundled demo (vector addition on 256 DPUs, checked against the CPU).
    Demo {
        #[command(flatten)]
        machine: MachineOpts,
        #[command(flatten)]
        server: ServerOpts,
        #[command(flatten)]
        report: ReportOpts,
    },
    /// Serve the emulated server's ranks to other programs (the rank-manager daemon).
    Daemon(daemon_cmd::DaemonOpts),
    /// Show the rank table of a running daemon (state, owner, bytes, launches, idle time).
    Pool(daemon_cmd::PoolOpts),
    /// Draw the stacked phase breakdown of a JSON run report (needs python3 and matplotlib).
    Plot {
        /// A report written by `openpim run --report=FILE.json`.
        report: String,
        /// The image to write (default: the report's name with .png).
        #[arg(short = 'o', long = "output")]
        output: Option<String>,
    },
    /// Run a host program with the exact DPU profiler: openpim profile [--dpu RANK.DPU|all]
    /// [--out DIR] -- CMD [ARGS...] (docs/profiling.md).
    Profile {
        #[command(flatten)]
        machine: MachineOpts,
        #[command(flatten)]
        report: ReportOpts,
        #[command(flatten)]
        profile: profile_cmd::ProfileOpts,
        /// The command and its arguments (what follows `--`).
        #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Run a study on the emulator: `openpim study scalability|collectives|sharing|tiers|allocation|all
    /// [--quick] [--out DIR]`.
    Study {
        #[command(subcommand)]
        study: study::StudyCmd,
    },
    /// DPU core files (OPENPIM_CORE_DIR): `openpim core inspect FILE`.
    Core {
        #[command(subcommand)]
        command: debug_cmd::CoreCmd,
    },
    /// Checkpoint files of DPU sets: `openpim checkpoint inspect FILE`.
    Checkpoint {
        #[command(subcommand)]
        command: checkpoint::CheckpointCmd,
    },
    /// A process of an MPI run (started by `openpim run --mpi N` through mpirun, or by your
    /// own mpirun: docs/scale-out.md): the gateway as MPI rank 0, a worker otherwise.
    Worker {
        /// Where the gateway listens for the host program.
        #[arg(long, value_name = "PATH")]
        socket: String,
    },
}

/// The options of `openpim SUBCOMMAND` (or the subcommands, with none), for error messages.
fn valid_options(sub: Option<&str>) -> String {
    let cmd = Cli::command();
    let Some(sc) = sub.and_then(|s| cmd.find_subcommand(s)) else {
        let subs: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        return format!("valid commands: {}", subs.join(", "));
    };
    let mut opts: Vec<String> = sc
        .get_arguments()
        .filter(|a| !a.is_positional())
        .filter_map(|a| {
            let long = a.get_long()?;
            let takes_value = a.get_action().takes_values();
            let value = a
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string())
                .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
            Some(if !takes_value {
                format!("--{long}")
            } else if a.is_require_equals_set() {
                format!("--{long}[={value}]")
            } else {
                format!("--{long} {value}")
            })
        })
        .collect();
    opts.push("--help".into());
    let mut s = format!(
        "valid options of `openpim {}`: {}",
        sc.get_name(),
        opts.join(", ")
    );
    if matches!(sc.get_name(), "run" | "profile") {
        s.push_str(
            "; the command to run follows `--` (or is the first word that is not an option)",
        );
    }
    s
}

/// Mistakes clap would accept with another meaning: `--report FILE.json` (the report option
/// takes its file after `=`; the file name would become the command to run).
fn check_raw_args(args: &[String]) -> Result<()> {
    for w in args.windows(2) {
        if w[0] == "--" {
            break;
        }
        if w[0] == "--report" && !w[1].starts_with('-') && w[1].ends_with(".json") {
            bail!(
                "--report takes its file after '=': write --report={} (as written, '{}' would be run as the command)",
                w[1],
                w[1]
            );
        }
    }
    Ok(())
}

/// One `openpim: internal error` line instead of Rust's panic message and backtrace hint
/// (kept with `RUST_BACKTRACE` set, for debugging).
fn install_panic_hook() {
    openpim_runtime::install_one_line_panic_hook("", false);
}

fn main() -> ExitCode {
    install_panic_hook();
    let args: Vec<String> = std::env::args().collect();
    if let Err(e) = check_raw_args(&args) {
        eprintln!("openpim: error: {e:#}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand
            ) {
                let _ = e.print();
                let sub = args
                    .iter()
                    .skip(1)
                    .find(|a| !a.starts_with('-'))
                    .map(String::as_str);
                eprintln!("{}", valid_options(sub));
                return ExitCode::from(2);
            }
            e.exit();
        }
    };
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
        Cmd::Info { machine, mpi } => {
            machine.check_conflicts()?;
            let text = openpim_runtime::machine_description(&machine.profile_string())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            print!("{text}");
            if let Some(n) = mpi {
                let ranks = machine_ranks(&machine.profile_string())?;
                openpim_mpi::launch::check(n, ranks).map_err(|e| anyhow::anyhow!("{e}"))?;
                print!("{}", openpim_mpi::launch::assignment(n, ranks));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Worker { socket } => {
            openpim_mpi::run_node(&socket).map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run {
            machine,
            server,
            report,
            debug,
            command,
        } => run_command(&install, &machine, &server, &report, &debug, &command, None),
        Cmd::Core {
            command: debug_cmd::CoreCmd::Inspect { file },
        } => {
            debug_cmd::inspect(&file)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Profile {
            machine,
            report,
            profile,
            command,
        } => {
            let dir = profile.prepare()?;
            let code = run_command(
                &install,
                &machine,
                &ServerOpts::default(),
                &report,
                &debug_cmd::DebugOpts::default(),
                &command,
                None,
            )?;
            profile_cmd::finish(&install, &dir, code)
        }
        Cmd::Checkpoint { command } => {
            print!("{}", checkpoint::run(command)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Daemon(opts) => daemon_cmd::daemon(opts),
        Cmd::Pool(opts) => daemon_cmd::pool(opts),
        Cmd::Plot { report, output } => {
            let script = install.root.join("scripts/plot_phases.py");
            let mut cmd = Command::new("python3");
            cmd.arg(&script).arg(&report);
            if let Some(o) = output {
                cmd.arg("-o").arg(o);
            }
            study::run_python(&mut cmd)
        }
        Cmd::Study { study } => study::run(&install, study),
        Cmd::Demo {
            machine,
            server,
            report,
        } => {
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
                &server,
                &report,
                &debug_cmd::DebugOpts::default(),
                &["./bin/host".to_string()],
                Some(&dir),
            )
        }
    }
}

/// The number of ranks of the machine `profile` (after UPMEM_PROFILE_BASE) selects.
fn machine_ranks(profile: &str) -> Result<u32> {
    let m = openpim_runtime::machine::MachineConfig::from_profile_string(profile)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(m.nr_ranks)
}

/// Starts the MPI job of `run --mpi n` (checked first: no process starts for a request that
/// cannot run); the job, the gateway's socket and the job's private directory.
fn start_mpi(
    n: u32,
    server: &ServerOpts,
    profile: &str,
) -> Result<(
    openpim_mpi::launch::Job,
    std::path::PathBuf,
    std::path::PathBuf,
)> {
    let env_server = std::env::var(openpim_runtime::exec::remote::SERVER_ENV)
        .ok()
        .filter(|s| !s.is_empty());
    if let Some(s) = server.server.as_ref().or(env_server.as_ref()) {
        let via = if server.server.is_some() {
            "--server"
        } else {
            "OPENPIM_SERVER"
        };
        bail!("--mpi {n} and {via} {s} cannot be combined: the ranks live either in MPI workers or in a daemon; drop one of them");
    }
    openpim_mpi::launch::check(n, machine_ranks(profile)?).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !openpim_mpi::AVAILABLE {
        bail!("--mpi: {}", openpim_mpi::NO_MPI_FIX);
    }
    let patience = openpim_mpi::timeout().map_err(|e| anyhow::anyhow!("{e}"))?;
    let dir = std::env::temp_dir().join(format!("openpim-mpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let socket = dir.join("gateway.sock");
    if !profile.is_empty() {
        // The workers read the machine options as the program does.
        std::env::set_var("UPMEM_PROFILE_BASE", profile);
    }
    let plan = openpim_mpi::launch::Plan {
        workers: n,
        hostfile: server.hostfile.as_deref().map(|f| absolute(f).into()),
        exe: std::env::current_exe().context("locating the openpim executable")?,
        socket: socket.clone(),
        threads: openpim_mpi::launch::shared_threads(n, server.hostfile.is_some()),
    };
    let job = openpim_mpi::launch::Job::start(&plan, patience).map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        anyhow::anyhow!("{e}")
    })?;
    Ok((job, socket, dir))
}

/// The program a distributed run waits for (0: none yet), for the signal handler.
static PROGRAM_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = PROGRAM_PID.load(std::sync::atomic::Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; the pid is our child's.
        unsafe { libc::kill(pid, sig) };
    }
}

/// From now on SIGINT, SIGTERM and SIGHUP to this process go to the program `pid` instead.
fn forward_signals_to(pid: u32) {
    PROGRAM_PID.store(pid as i32, std::sync::atomic::Ordering::Relaxed);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only loads an atomic and calls kill.
        unsafe { libc::signal(sig, forward_signal as *const () as libc::sighandler_t) };
    }
}

/// Runs `command` with the SDK on the paths and the machine options in UPMEM_PROFILE_BASE.
fn run_command(
    install: &Install,
    machine: &MachineOpts,
    server: &ServerOpts,
    report: &ReportOpts,
    debug: &debug_cmd::DebugOpts,
    command: &[String],
    dir: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let (program, args) = command.split_first().context("no command given after --")?;
    machine.check_conflicts()?;
    // A bad OPENPIM_THREADS would fail the program's first dpu_alloc: say it now.
    if let Err(e) = openpim_runtime::parse_threads(
        std::env::var(openpim_runtime::THREADS_ENV).ok().as_deref(),
        openpim_runtime::host_cores(),
    ) {
        bail!("{e}");
    }
    if report.check.is_some() && (server.server.is_some() || server.mpi.is_some()) {
        bail!("--check watches the DPUs this process runs: it cannot be used with --server or --mpi (run without them)");
    }
    let outputs = report.outputs()?;
    let mut cmd: Command = install.command(program);
    cmd.args(args);
    let profile = machine.profile_string();
    if !profile.is_empty() {
        // Fail early, with the emulator's own message, on a profile no launch would accept.
        openpim_runtime::machine_description(&profile).map_err(|e| anyhow::anyhow!("{e}"))?;
        cmd.env("UPMEM_PROFILE_BASE", &profile);
    }
    for (k, v) in report.env() {
        cmd.env(k, v);
    }
    if let Some(server) = &server.server {
        cmd.env(openpim_runtime::exec::remote::SERVER_ENV, absolute(server));
    }
    debug.apply(&mut cmd, server.server.is_some(), server.mpi.is_some())?;
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let job = match server.mpi {
        Some(n) => {
            let job = start_mpi(n, server, &profile)?;
            cmd.env(openpim_runtime::exec::mpi::MPI_ENV, &job.1);
            Some(job)
        }
        None if server.hostfile.is_some() => bail!("--hostfile is for --mpi N; add --mpi N"),
        None => None,
    };
    let status = if job.is_some() {
        // The MPI job outlives nothing: a signal to the launcher goes to the program, whose
        // end stops the job below.
        cmd.spawn().and_then(|mut child| {
            forward_signals_to(child.id());
            child.wait()
        })
    } else {
        cmd.status()
    };
    if let Some((job, _, dir)) = job {
        job.stop(std::time::Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(dir);
    }
    let status = status.with_context(|| format!("could not start `{program}`"))?;
    let code = match status.code() {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => {
            eprintln!("openpim: `{program}` was killed by a signal");
            return Ok(ExitCode::from(1));
        }
    };
    // The program writes the report and trace when it exits; a file it could not write (or
    // never wrote: no SDK call) is an error of the run, even when the program succeeded.
    if status.success() {
        let missing: Vec<String> = outputs
            .iter()
            .filter(|o| !o.written())
            .map(|o| format!("{} '{}'", o.option, o.path.display()))
            .collect();
        if !missing.is_empty() {
            bail!(
                "the run did not write {} (it could not be written, see above, or `{program}` made no SDK call)",
                missing.join(" and ")
            );
        }
    }
    Ok(code)
}
