//! The daemon's configuration: command-line options over an optional TOML file.
//!
//! ```toml
//! ranks = 8                  # ranks of the emulated server
//! hardware = "upmem-v1a"     # hardware profile
//! socket = "/run/openpim/daemon.sock"
//! socket_mode = "0660"       # who may connect (file permissions of the socket)
//! allow_uids = [1000, 1001]  # and an allow-list of user ids (absent: anyone the mode admits)
//! alloc_timeout_s = 30       # how long an allocation waits for ranks before failing
//! reuse_ms = 200             # a freed rank waits this long for its process before its wipe
//! default_quota = 4          # ranks per user at once (absent: no limit)
//! suspend_dir = "/var/lib/openpim/suspended"  # oversubscription: idle ranks go here
//! suspend_idle_ms = 500      # a rank idle this long may be suspended for a waiting tenant
//! suspend_min_run_ms = 2000  # not before it has been resident this long
//! [quotas]                   # per-user quotas by uid
//! 1001 = 2
//! ```

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;

/// What is wrong with the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the daemon configuration {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid daemon configuration {path}: {message}")]
    Invalid { path: String, message: String },
}

/// The file's fields (all optional; the command line wins).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    ranks: Option<u32>,
    hardware: Option<String>,
    socket: Option<String>,
    socket_mode: Option<String>,
    allow_uids: Option<Vec<u32>>,
    alloc_timeout_s: Option<f64>,
    reuse_ms: Option<u64>,
    default_quota: Option<u32>,
    #[serde(default)]
    quotas: HashMap<String, u32>,
    metrics_file: Option<String>,
    parallel: Option<bool>,
    suspend_dir: Option<String>,
    suspend_idle_ms: Option<u64>,
    suspend_min_run_ms: Option<u64>,
}

/// The daemon's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub socket: String,
    /// Permissions of the socket file.
    pub socket_mode: u32,
    /// Users allowed to connect (`None`: anyone the socket's permissions admit).
    pub allow_uids: Option<Vec<u32>>,
    /// Ranks of the server.
    pub ranks: Option<u32>,
    pub hardware: Option<String>,
    /// How long an allocation waits for ranks.
    pub alloc_timeout: Duration,
    /// How long a freed rank stays for the process that freed it before it is wiped.
    pub reuse: Duration,
    pub default_quota: Option<u32>,
    pub quotas: HashMap<u32, u32>,
    /// Where to write Prometheus-text metrics (rewritten every second).
    pub metrics_file: Option<String>,
    /// Serve requests for different ranks in parallel (per-rank worker threads).
    pub parallel: bool,
    /// Oversubscription: where idle tenants' ranks are suspended to (`None`: never).
    pub suspend_dir: Option<std::path::PathBuf>,
    /// A rank with no operation for this long may be suspended for a waiting request.
    pub suspend_idle: Duration,
    /// A rank granted or resumed is not suspended before it has been resident this long.
    pub suspend_min_run: Duration,
}

/// The default socket of the calling user: `$XDG_RUNTIME_DIR/openpim/daemon.sock`, else
/// `/tmp/openpim-UID/daemon.sock`.
pub fn default_socket() -> String {
    match std::env::var("XDG_RUNTIME_DIR") {
        Ok(d) if !d.is_empty() => format!("{d}/openpim/daemon.sock"),
        // SAFETY: getuid has no preconditions.
        _ => format!("/tmp/openpim-{}/daemon.sock", unsafe { libc::getuid() }),
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            socket: default_socket(),
            socket_mode: 0o600,
            allow_uids: None,
            ranks: None,
            hardware: None,
            alloc_timeout: Duration::from_secs(30),
            reuse: Duration::from_millis(200),
            default_quota: None,
            quotas: HashMap::new(),
            metrics_file: None,
            parallel: true,
            suspend_dir: None,
            suspend_idle: Duration::from_millis(500),
            suspend_min_run: Duration::from_millis(2000),
        }
    }
}

impl Config {
    /// Reads `path` over the defaults.
    pub fn from_file(path: &str) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        Config::from_toml(path, &text)
    }

    /// Parses a configuration text (`path` names it in errors).
    pub fn from_toml(path: &str, text: &str) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.into(),
            message,
        };
        let f: FileConfig = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let mut c = Config::default();
        if let Some(s) = f.socket {
            c.socket = s;
        }
        if let Some(m) = f.socket_mode {
            c.socket_mode = u32::from_str_radix(m.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    invalid(format!(
                        "socket_mode '{m}' is not an octal mode like \"0660\""
                    ))
                })?;
        }
        c.allow_uids = f.allow_uids;
        c.ranks = f.ranks;
        c.hardware = f.hardware;
        if let Some(t) = f.alloc_timeout_s {
            if !(0.0..=86_400.0).contains(&t) {
                return Err(invalid(format!(
                    "alloc_timeout_s = {t}: give a number of seconds between 0 and 86400"
                )));
            }
            c.alloc_timeout = Duration::from_secs_f64(t);
        }
        if let Some(r) = f.reuse_ms {
            c.reuse = Duration::from_millis(r);
        }
        c.default_quota = f.default_quota;
        for (k, v) in f.quotas {
            let uid = k
                .parse::<u32>()
                .map_err(|_| invalid(format!("quotas: '{k}' is not a numeric user id")))?;
            c.quotas.insert(uid, v);
        }
        c.metrics_file = f.metrics_file;
        if let Some(p) = f.parallel {
            c.parallel = p;
        }
        c.suspend_dir = f.suspend_dir.map(Into::into);
        if let Some(ms) = f.suspend_idle_ms {
            c.suspend_idle = Duration::from_millis(ms);
        }
        if let Some(ms) = f.suspend_min_run_ms {
            c.suspend_min_run = Duration::from_millis(ms);
        }
        Ok(c)
    }

    /// Checks what only the whole configuration (file and options together) can tell.
    pub fn check(&self) -> Result<(), ConfigError> {
        let d = Config::default();
        if self.suspend_dir.is_none()
            && (self.suspend_idle != d.suspend_idle || self.suspend_min_run != d.suspend_min_run)
        {
            return Err(ConfigError::Invalid {
                path: "(file and options)".into(),
                message: "suspend_idle_ms and suspend_min_run_ms need suspend_dir (or --suspend-dir): the directory idle ranks are suspended to".into(),
            });
        }
        Ok(())
    }

    /// The rank quota of user `uid` (`None`: no limit).
    pub fn quota(&self, uid: u32) -> Option<u32> {
        self.quotas.get(&uid).copied().or(self.default_quota)
    }

    /// The profile keys that fix the daemon's machine.
    pub fn machine_keys(&self) -> String {
        let mut keys = Vec::new();
        if let Some(h) = &self.hardware {
            keys.push(format!("hardware={h}"));
        }
        if let Some(r) = self.ranks {
            keys.push(format!("nrRanks={r}"));
        }
        keys.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_fields_and_errors() {
        let c = Config::from_toml(
            "t.toml",
            "ranks = 4\nsocket_mode = \"0660\"\nalloc_timeout_s = 2.5\ndefault_quota = 2\n[quotas]\n1001 = 1\n",
        )
        .unwrap();
        assert_eq!(c.ranks, Some(4));
        assert_eq!(c.socket_mode, 0o660);
        assert_eq!(c.alloc_timeout, Duration::from_millis(2500));
        assert_eq!((c.quota(1001), c.quota(5)), (Some(1), Some(2)));
        assert_eq!(c.machine_keys(), "nrRanks=4");
        let e = Config::from_toml("t.toml", "rank = 4")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.toml") && e.contains("rank"), "{e}");
        let e = Config::from_toml("t.toml", "socket_mode = \"rw\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("octal"), "{e}");
        let c = Config::from_toml(
            "t.toml",
            "suspend_dir = \"/tmp/s\"\nsuspend_idle_ms = 100\nsuspend_min_run_ms = 300\n",
        )
        .unwrap();
        assert_eq!(c.suspend_dir, Some("/tmp/s".into()));
        assert_eq!(c.suspend_idle, Duration::from_millis(100));
        assert_eq!(c.suspend_min_run, Duration::from_millis(300));
        let c = Config::from_toml("t.toml", "suspend_idle_ms = 100").unwrap();
        let e = c.check().unwrap_err().to_string();
        assert!(e.contains("suspend_dir"), "{e}");
        assert!(Config::default().check().is_ok());
    }
}
