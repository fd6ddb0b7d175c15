//! The run report at the program's exit (`OPENPIM_REPORT`, `OPENPIM_TRACE`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

extern "C" fn write_outputs_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = catch_unwind(AssertUnwindSafe(
        openpim_runtime::report::write_requested_outputs,
    ));
}

/// Registers the exit handler (once, at the first SDK call) when a report or trace is asked
/// for.
pub fn ensure_registered() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let wanted = [
            openpim_runtime::report::REPORT_ENV,
            openpim_runtime::report::TRACE_ENV,
        ]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty() && v != "0"));
        if wanted {
            check_outputs_writable();
            // SAFETY: registering a plain `extern "C" fn()` with the C library's atexit; the
            // handler only touches process-wide state that outlives it.
            unsafe {
                libc::atexit(write_outputs_at_exit);
            }
        }
    });
}

/// Says at the first SDK call, not only at exit, when the report or trace file cannot be
/// written (the program runs on; `openpim run` refuses such a path before starting it).
fn check_outputs_writable() {
    let report = std::env::var(openpim_runtime::report::REPORT_ENV)
        .ok()
        .filter(|v| !matches!(v.as_str(), "" | "0" | "1" | "text" | "-"));
    let trace = std::env::var(openpim_runtime::report::TRACE_ENV)
        .ok()
        .filter(|v| !v.is_empty());
    for (var, path) in [
        (openpim_runtime::report::REPORT_ENV, report),
        (openpim_runtime::report::TRACE_ENV, trace),
    ] {
        let Some(path) = path else { continue };
        let p = std::path::Path::new(&path);
        let existed = p.exists();
        match std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
        {
            Ok(_) => {
                if !existed {
                    let _ = std::fs::remove_file(p);
                }
            }
            Err(e) => {
                if !openpim_runtime::quiet() {
                    eprintln!(
                        "openpim: {var}={path}: cannot write this file ({e}); it will not be written at exit: choose a file in an existing, writable directory"
                    );
                }
            }
        }
    }
}
