//! OpenPIM's checkers of DPU programs (`openpim run --check=memory|races|memory,races`, or
//! `OPENPIM_CHECK` for programs run directly): a happens-before race detector
//! ([`races`]) and a memory checker ([`memory`]: uninitialised reads, overruns of symbols
//! and heap blocks, stack overflows and a stack report), over the engine's probe seam.
//!
//! Findings go to stderr as they are found (each distinct one once) and into the JSON run
//! report's `check` section; a finding is not a fault (the program's results and exit status
//! are those of a run without the checkers). See docs/checking.md.

pub mod findings;
pub mod init;
pub mod memory;
pub mod program;
pub mod races;
pub mod tool;
pub mod vclock;

use std::sync::{Arc, Mutex, Once};

use thiserror::Error;

/// The environment variable naming the checkers to run.
pub const CHECK_ENV: &str = "OPENPIM_CHECK";

/// The values `OPENPIM_CHECK` and `--check` accept.
pub const ACCEPTED: &str = "memory, races, memory,races (or races,memory)";

/// Which checkers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Modes {
    pub memory: bool,
    pub races: bool,
}

impl Modes {
    /// `memory`, `races`, or both, as the report names them.
    pub fn name(self) -> &'static str {
        match (self.memory, self.races) {
            (true, true) => "memory,races",
            (true, false) => "memory",
            (false, true) => "races",
            (false, false) => "none",
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CheckError {
    #[error("{var}={value:?} names no checker: accepted values are {ACCEPTED}")]
    BadValue { var: &'static str, value: String },
}

/// Parses a list of checkers (`memory`, `races`, comma-separated, at least one).
pub fn parse(value: &str) -> Result<Modes, CheckError> {
    let bad = || CheckError::BadValue {
        var: CHECK_ENV,
        value: value.to_string(),
    };
    let mut m = Modes::default();
    for part in value.split(',') {
        match part.trim() {
            "memory" => m.memory = true,
            "races" => m.races = true,
            _ => return Err(bad()),
        }
    }
    if !m.memory && !m.races {
        return Err(bad());
    }
    Ok(m)
}

static INSTALLED: Mutex<Option<Modes>> = Mutex::new(None);

/// Reads `OPENPIM_CHECK` and installs the checkers it names (once per process; later calls
/// only repeat the first answer). Unset or empty: nothing. A bad value: the error, naming
/// the accepted values.
pub fn install_from_env() -> Result<(), CheckError> {
    let mut g = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    let value = std::env::var(CHECK_ENV).unwrap_or_default();
    if value.trim().is_empty() {
        return Ok(());
    }
    let modes = parse(&value)?;
    if g.is_some() {
        return Ok(());
    }
    *g = Some(modes);
    install(modes);
    Ok(())
}

/// Installs the checkers `modes` for the rest of the process: findings on stderr, the report
/// section, the summary at exit.
pub fn install(modes: Modes) {
    openpim_runtime::observe::install(Arc::new(tool::CheckTool::new(modes)));
    openpim_runtime::report::set_check_section(report_section);
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registering a plain `extern "C" fn()` with the C library's atexit; it only
        // reads process-wide state that outlives it.
        unsafe {
            libc::atexit(summary_at_exit);
        }
    });
}

fn installed_modes() -> Modes {
    INSTALLED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or(Modes {
            memory: true,
            races: true,
        })
}

fn report_section() -> serde_json::Value {
    findings::report_section(installed_modes().name())
}

extern "C" fn summary_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = std::panic::catch_unwind(|| {
        if let Some(line) = findings::summary_line(installed_modes().name()) {
            eprintln!("{line}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_accepted_values() {
        assert_eq!(
            parse("memory").unwrap(),
            Modes {
                memory: true,
                races: false
            }
        );
        assert_eq!(parse("races, memory").unwrap().name(), "memory,races");
        let e = parse("race").unwrap_err().to_string();
        assert!(
            e.contains("OPENPIM_CHECK=\"race\"") && e.contains("memory, races"),
            "{e}"
        );
        assert!(parse(",").is_err());
    }
}
