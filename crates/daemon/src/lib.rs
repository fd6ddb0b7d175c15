//! The OpenPIM rank-manager daemon: one emulated PIM server shared by tenants.
//!
//! `openpim daemon` owns the server's ranks; unmodified SDK programs whose profile or
//! environment names the daemon's socket (`OPENPIM_SERVER`, `server=`) run their DPU work
//! here through the runtime's remote backend (`openpim_runtime::exec::remote`). The
//! [`manager`] hands ranks out and wipes them between tenants; the [`server`] checks and
//! serves requests; [`metrics`] exports the rank table. `docs/sharing.md` is the user guide.

pub mod config;
pub mod lease;
pub mod manager;
pub mod metrics;
pub mod server;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::Arc;

use openpim_machine::{MachineConfig, SystemConfig};

pub use config::Config;

/// A line of the daemon's log on stderr, with the time.
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::log_line(&format!($($arg)*))
    };
}

#[doc(hidden)]
pub fn log_line(msg: &str) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = t.as_secs();
    eprintln!(
        "openpim daemon [{:02}:{:02}:{:02}.{:03}] {msg}",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
        t.subsec_millis()
    );
}

/// What can stop the daemon from starting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("invalid machine for the daemon: {0}")]
    Machine(#[from] openpim_machine::ConfigError),
    #[error("another daemon is serving {0}; stop it first, or choose another --socket")]
    InUse(String),
    #[error("cannot create the socket {path}: {source}")]
    Socket {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Runtime(#[from] openpim_runtime::Error),
    #[error("cannot use the suspend directory {path}: {source}; give a writable directory (suspend_dir / --suspend-dir)")]
    SuspendDir {
        path: String,
        source: std::io::Error,
    },
}

/// Creates the suspend directory (private to the daemon's user) and removes what an earlier
/// daemon left there: a suspended rank lives only as long as the daemon that holds its
/// tenant's connection.
fn prepare_suspend_dir(dir: &std::path::Path) -> Result<(), StartError> {
    let err = |source| StartError::SuspendDir {
        path: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    for entry in std::fs::read_dir(dir).map_err(err)?.flatten() {
        let p = entry.path();
        let stale = p
            .extension()
            .is_some_and(|e| e == "suspended" || e == "partial");
        if stale {
            let _ = std::fs::remove_file(&p);
        }
    }
    // Writable: the first suspension would fail much later otherwise.
    let probe = dir.join(".openpim-write-test");
    std::fs::write(&probe, b"").map_err(err)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Runs the daemon until SIGTERM/SIGINT.
pub fn run(mut config: Config) -> Result<(), StartError> {
    config.check()?;
    let machine = Arc::new(machine_of(&config)?);
    // Tenants are told the machine in full (hardware and ranks).
    config.ranks = Some(machine.nr_ranks);
    if config.hardware.is_none() {
        config.hardware = Some(machine.hardware.name.clone());
    }
    if let Some(dir) = &config.suspend_dir {
        prepare_suspend_dir(dir)?;
    }
    let listener = bind(&config)?;
    let manager = manager::Manager::new(config.clone(), &machine);
    log!(
        "serving {} ranks of {} DPUs ({}) on {} (mode {:o}{})",
        machine.nr_ranks,
        machine.dpus_per_rank,
        machine.hardware.name,
        config.socket,
        config.socket_mode,
        match &config.allow_uids {
            Some(u) => format!(", uids {u:?}"),
            None => String::new(),
        }
    );
    if let Some(dir) = &config.suspend_dir {
        log!(
            "oversubscribing: ranks idle for {} ms (after {} ms resident) may be suspended to {}",
            config.suspend_idle.as_millis(),
            config.suspend_min_run.as_millis(),
            dir.display()
        );
    }
    let served = server::serve(listener, Arc::clone(&manager));
    let _ = std::fs::remove_file(&config.socket);
    if let Some(m) = &config.metrics_file {
        metrics::write_file(m, &manager);
    }
    log!("stopped");
    served.map_err(StartError::from)
}

/// Creates the socket (its directory too, private to the user), with the configured mode.
fn bind(config: &Config) -> Result<UnixListener, StartError> {
    let path = &config.socket;
    let err = |source| StartError::Socket {
        path: path.clone(),
        source,
    };
    if let Some(dir) = std::path::Path::new(path).parent() {
        if !dir.as_os_str().is_empty() && !dir.exists() {
            std::fs::create_dir_all(dir).map_err(err)?;
            let _ = std::fs::set_permissions(
                dir,
                std::fs::Permissions::from_mode(0o700 | (config.socket_mode & 0o055)),
            );
        }
    }
    if std::path::Path::new(path).exists() {
        // A live daemon answers; a stale socket file is replaced.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(StartError::InUse(path.clone()));
        }
        std::fs::remove_file(path).map_err(err)?;
    }
    // Bound and given its mode under a temporary name beside it, then renamed into place:
    // the socket appears at `path` only once it listens with its final permissions, so a
    // tenant started as soon as the file exists is never refused, and no one connects through
    // a wider mode in between. (Where the temporary name cannot be bound — a path near the
    // 107-byte limit — the socket is bound in place, as before.)
    let dir = std::path::Path::new(path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let tmp = dir.join(format!(".openpim-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mode = std::fs::Permissions::from_mode(config.socket_mode);
    let listener = match UnixListener::bind(&tmp) {
        Ok(listener) => {
            let placed =
                std::fs::set_permissions(&tmp, mode).and_then(|()| std::fs::rename(&tmp, path));
            if let Err(e) = placed {
                let _ = std::fs::remove_file(&tmp);
                return Err(err(e));
            }
            listener
        }
        Err(_) => {
            let listener = UnixListener::bind(path).map_err(err)?;
            std::fs::set_permissions(path, mode).map_err(err)?;
            listener
        }
    };
    Ok(listener)
}

/// The machine the daemon would serve (for `openpim daemon --check`).
pub fn machine_of(config: &Config) -> Result<MachineConfig, StartError> {
    let mut sys = SystemConfig::parse_with_base(None, &config.machine_keys())?;
    sys.server = None;
    Ok(sys.resolve()?)
}
