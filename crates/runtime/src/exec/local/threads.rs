//! The host threads DPUs are simulated on: `OPENPIM_THREADS` and the thread pool.
//!
//! `OPENPIM_THREADS` unset or empty means one thread per host core. A positive integer is
//! the number of threads; more than [`THREADS_PER_CORE`] threads per host core are clamped
//! (with a one-line warning), because simulation threads beyond the cores only cost memory
//! and start-up time (tens of thousands of them take minutes to start). Anything else (`0`,
//! a negative number, a word) is an error that names the variable, the value and the valid
//! range: `dpu_alloc` fails with it, `openpim run` refuses to start the program.
//!
//! Results and cycle counts never depend on the number of threads.

use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The environment variable choosing the number of simulation threads.
pub const THREADS_ENV: &str = "OPENPIM_THREADS";

/// At most this many simulation threads per host core (more are clamped).
pub const THREADS_PER_CORE: usize = 4;

/// What `OPENPIM_THREADS` resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSetting {
    /// Threads of the pool (at least 1).
    pub threads: usize,
    /// A warning to print once (the value was clamped), if any.
    pub warning: Option<String>,
}

/// Host cores this process may run on (at least 1).
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Resolves a value of `OPENPIM_THREADS` (`None`: unset) on a host with `cores` cores.
///
/// ```
/// use openpim_runtime::parse_threads;
/// assert_eq!(parse_threads(None, 8).unwrap().threads, 8);
/// assert_eq!(parse_threads(Some("3"), 8).unwrap().threads, 3);
/// assert_eq!(parse_threads(Some("99999"), 2).unwrap().threads, 8);
/// assert!(parse_threads(Some("0"), 8).is_err());
/// ```
pub fn parse_threads(
    value: Option<&str>,
    cores: usize,
) -> std::result::Result<ThreadSetting, String> {
    let cores = cores.max(1);
    let cap = cores.saturating_mul(THREADS_PER_CORE);
    let Some(raw) = value else {
        return Ok(ThreadSetting {
            threads: cores,
            warning: None,
        });
    };
    let v = raw.trim();
    if v.is_empty() {
        return Ok(ThreadSetting {
            threads: cores,
            warning: None,
        });
    }
    let range = format!(
        "use an integer from 1 to {cap} ({THREADS_PER_CORE} per host core, {cores} cores; larger values are clamped to {cap}), or unset it to use one thread per core"
    );
    let digits = v.strip_prefix('+').unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        let negative = v
            .strip_prefix('-')
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
        let what = if negative {
            "is negative"
        } else {
            "is not a whole number"
        };
        return Err(format!("{THREADS_ENV}='{raw}' {what}: {range}"));
    }
    // All digits: a number too large for usize is simply "more than the cap".
    let n = digits.parse::<usize>().unwrap_or(usize::MAX);
    if n == 0 {
        return Err(format!(
            "{THREADS_ENV}='{raw}' asks for no simulation thread: {range}"
        ));
    }
    if n > cap {
        return Ok(ThreadSetting {
            threads: cap,
            warning: Some(format!(
                "{THREADS_ENV}={v} is more than {THREADS_PER_CORE} threads per host core; using {cap} ({cores} cores)"
            )),
        });
    }
    Ok(ThreadSetting {
        threads: n,
        warning: None,
    })
}

/// `OPENPIM_THREADS` of this process, resolved once (the warning, if any, is printed then,
/// unless `OPENPIM_QUIET`).
pub fn thread_setting() -> Result<&'static ThreadSetting> {
    static SETTING: OnceLock<std::result::Result<ThreadSetting, String>> = OnceLock::new();
    let r = SETTING.get_or_init(|| {
        let value = std::env::var_os(THREADS_ENV).map(|v| v.to_string_lossy().into_owned());
        let r = parse_threads(value.as_deref(), host_cores());
        if let Ok(ThreadSetting {
            warning: Some(w), ..
        }) = &r
        {
            if !crate::error::quiet() {
                eprintln!("openpim: warning: {w}");
            }
        }
        r
    });
    r.as_ref().map_err(|e| Error::System(e.clone()))
}

/// Builds a pool of `threads` simulation threads; `spawn` starts each thread (the standard
/// library's by default; tests pass one that fails).
pub(crate) fn build_pool<S>(threads: usize, spawn: S) -> Result<rayon::ThreadPool>
where
    S: FnMut(rayon::ThreadBuilder) -> std::io::Result<()>,
{
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("openpim-dpu-{i}"))
        .spawn_handler(spawn)
        .build()
        .map_err(|e| {
            Error::System(format!(
                "cannot start {threads} DPU simulation threads: {e} (lower {THREADS_ENV}, or raise the process/thread limit: ulimit -u)"
            ))
        })
}

/// Starts a pool thread with the standard library (what rayon does by default).
fn std_spawn(thread: rayon::ThreadBuilder) -> std::io::Result<()> {
    let mut b = std::thread::Builder::new();
    if let Some(name) = thread.name() {
        b = b.name(name.to_owned());
    }
    if let Some(size) = thread.stack_size() {
        b = b.stack_size(size);
    }
    b.spawn(|| thread.run())?;
    Ok(())
}

/// The thread pool DPUs are simulated on, built at first use. A pool that cannot be built
/// is an error of the operation that needed it (it is tried again next time).
pub(crate) fn pool() -> Result<&'static rayon::ThreadPool> {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    if let Some(p) = POOL.get() {
        return Ok(p);
    }
    let threads = thread_setting()?.threads;
    let built = build_pool(threads, std_spawn)?;
    // Two threads may build one at the same time: the first one stored wins.
    Ok(POOL.get_or_init(|| built))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_means_one_thread_per_core() {
        assert_eq!(
            parse_threads(None, 6),
            Ok(ThreadSetting {
                threads: 6,
                warning: None
            })
        );
        assert_eq!(parse_threads(Some(""), 6).unwrap().threads, 6);
        assert_eq!(parse_threads(Some("  "), 6).unwrap().threads, 6);
        assert_eq!(parse_threads(None, 0).unwrap().threads, 1);
    }

    #[test]
    fn valid_counts_are_taken_as_they_are() {
        for (v, n) in [("1", 1), ("2", 2), (" 5 ", 5), ("+3", 3), ("16", 16)] {
            let s = parse_threads(Some(v), 4).unwrap();
            assert_eq!(s.threads, n, "{v}");
            assert_eq!(s.warning, None, "{v}");
        }
    }

    #[test]
    fn too_many_are_clamped_with_a_warning() {
        let s = parse_threads(Some("99999"), 2).unwrap();
        assert_eq!(s.threads, 8);
        let w = s.warning.unwrap();
        assert!(
            w.contains("OPENPIM_THREADS=99999") && w.contains("using 8"),
            "{w}"
        );
        let s = parse_threads(Some("123456789012345678901234567890"), 3).unwrap();
        assert_eq!(s.threads, 12);
        assert!(s.warning.is_some());
        // Exactly the cap is fine.
        assert_eq!(parse_threads(Some("8"), 2).unwrap().warning, None);
    }

    #[test]
    fn zero_negative_and_words_are_errors_naming_variable_value_and_range() {
        for (v, what) in [
            ("0", "no simulation thread"),
            ("000", "no simulation thread"),
            ("-3", "negative"),
            ("abc", "not a whole number"),
            ("1.5", "not a whole number"),
            ("4x", "not a whole number"),
            ("-", "not a whole number"),
            ("+", "not a whole number"),
        ] {
            let e = parse_threads(Some(v), 2).unwrap_err();
            assert!(e.contains(&format!("OPENPIM_THREADS='{v}'")), "{e}");
            assert!(e.contains(what), "{v}: {e}");
            assert!(e.contains("from 1 to 8"), "{e}");
        }
    }

    #[test]
    fn a_pool_that_cannot_start_is_an_error_not_a_panic() {
        let failing = |_t: rayon::ThreadBuilder| -> std::io::Result<()> {
            Err(std::io::Error::other("no more threads"))
        };
        let e = build_pool(3, failing).unwrap_err();
        assert!(matches!(e, Error::System(_)), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("cannot start 3 DPU simulation threads")
                && msg.contains("OPENPIM_THREADS"),
            "{msg}"
        );
        let ok = build_pool(2, std_spawn).unwrap();
        assert_eq!(ok.current_num_threads(), 2);
        assert_eq!(ok.install(|| 21 * 2), 42);
    }
}
