//! The profiler (`OPENPIM_PROFILE=DIR`, `openpim profile`): installed at the first
//! `dpu_alloc`, its files written at the program's exit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use crate::errors::{fail, Fail};
use crate::types::err::DPU_ERR_SYSTEM;

extern "C" fn write_profile_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = catch_unwind(AssertUnwindSafe(openpim_profile::write_outputs));
}

/// Starts the profiler when the environment asks for it; a bad value fails the allocation.
pub(crate) fn start() -> Result<(), Fail> {
    match openpim_profile::install_from_env() {
        Ok(true) => {
            static ONCE: Once = Once::new();
            // SAFETY: registering a plain `extern "C" fn()` with the C library's atexit; the
            // handler only touches process-wide state that outlives it.
            ONCE.call_once(|| unsafe {
                libc::atexit(write_profile_at_exit);
            });
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(msg) => Err(fail(DPU_ERR_SYSTEM, msg)),
    }
}
