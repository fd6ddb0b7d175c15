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
            // SAFETY: registering a plain `extern "C" fn()` with the C library's atexit; the
            // handler only touches process-wide state that outlives it.
            unsafe {
                libc::atexit(write_outputs_at_exit);
            }
        }
    });
}
