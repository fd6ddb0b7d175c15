//! `openpim daemon` and `openpim pool`: the rank-manager daemon and its rank table.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use openpim_daemon::Config;
use openpim_runtime::exec::remote::RemoteBackend;

/// Options of `openpim daemon`.
#[derive(clap::Args)]
pub struct DaemonOpts {
    /// The UNIX socket to serve (default: $XDG_RUNTIME_DIR/openpim/daemon.sock, else
    /// /tmp/openpim-UID/daemon.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<String>,
    /// Ranks of the served machine (default: the hardware profile's, 40).
    #[arg(long, value_name = "N")]
    ranks: Option<u32>,
    /// Hardware profile: a name from profiles/ or a file path.
    #[arg(long, value_name = "H")]
    hardware: Option<String>,
    /// A TOML configuration file: socket mode, allow-list, quotas, timeouts, metrics
    /// (docs/sharing.md); the options above win over it.
    #[arg(long, value_name = "FILE")]
    config: Option<String>,
    /// Seconds an allocation waits for ranks before failing (default 30).
    #[arg(long, value_name = "S")]
    alloc_timeout: Option<f64>,
    /// Write Prometheus-text metrics to FILE (rewritten every second).
    #[arg(long, value_name = "FILE")]
    metrics: Option<String>,
    /// Serve every request on its connection's thread (no per-rank parallel handling; for
    /// the ablation).
    #[arg(long)]
    serial: bool,
    /// Oversubscribe: suspend idle tenants' ranks to DIR for waiting tenants, resume them
    /// when used (docs/sharing.md; the idle and minimum-run times are configuration keys).
    #[arg(long, value_name = "DIR")]
    suspend_dir: Option<String>,
}

/// Options of `openpim pool`.
#[derive(clap::Args)]
pub struct PoolOpts {
    /// The daemon's socket (default: OPENPIM_SERVER, else the daemon's default).
    #[arg(long, value_name = "PATH")]
    socket: Option<String>,
}

pub fn daemon(o: DaemonOpts) -> Result<ExitCode> {
    let mut c = match &o.config {
        Some(f) => Config::from_file(f)?,
        None => Config::default(),
    };
    if let Some(s) = o.socket {
        c.socket = s;
    }
    if o.ranks.is_some() {
        c.ranks = o.ranks;
    }
    if o.hardware.is_some() {
        c.hardware = o.hardware;
    }
    if let Some(t) = o.alloc_timeout {
        if !(0.0..=86_400.0).contains(&t) {
            return Err(anyhow!(
                "--alloc-timeout {t}: give a number of seconds between 0 and 86400"
            ));
        }
        c.alloc_timeout = Duration::from_secs_f64(t);
    }
    if o.metrics.is_some() {
        c.metrics_file = o.metrics;
    }
    if o.serial {
        c.parallel = false;
    }
    if let Some(d) = o.suspend_dir {
        c.suspend_dir = Some(d.into());
    }
    openpim_daemon::run(c)?;
    Ok(ExitCode::SUCCESS)
}

pub fn pool(o: PoolOpts) -> Result<ExitCode> {
    let socket = o
        .socket
        .or_else(|| std::env::var(openpim_runtime::exec::remote::SERVER_ENV).ok())
        .unwrap_or_else(openpim_daemon::config::default_socket);
    let table = RemoteBackend::shared(&socket)
        .pool()
        .map_err(|e| anyhow!("{e}"))?;
    println!(
        "{:>4}  {:<5} {:>6} {:>8}  {:<16} {:>10} {:>12} {:>8} {:>10} {:>5}",
        "rank",
        "state",
        "uid",
        "pid",
        "program",
        "since",
        "bytes",
        "launches",
        "idle held",
        "wipes"
    );
    for r in table {
        let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
        println!(
            "{:>4}  {:<5} {:>6} {:>8}  {:<16} {:>9.1}s {:>12} {:>8} {:>9.1}s {:>5}",
            r.rank,
            r.state,
            opt(r.uid),
            opt(r.pid),
            if r.program.is_empty() {
                "-"
            } else {
                &r.program
            },
            r.since_ms as f64 / 1000.0,
            r.bytes_moved,
            r.launches,
            r.idle_ms as f64 / 1000.0,
            r.wipes
        );
    }
    Ok(ExitCode::SUCCESS)
}
