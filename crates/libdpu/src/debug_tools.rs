//! The debugging tools (`openpim-debug`: GDB server, instruction traces, core dumps), installed
//! at the first allocation when their environment variables ask for them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use crate::errors::{fail, Fail};
use crate::types::err::DPU_ERR_SYSTEM;

extern "C" fn say_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        for line in openpim_debug::exit_messages() {
            eprintln!("{line}");
        }
    }));
}

/// Installs the tools (once); a bad variable fails the allocation with its message. `profile`
/// is the allocation's profile string (its `coreDir=` key; a profile the machine refuses is
/// reported by the allocation itself).
pub fn install(profile: &str) -> Result<(), Fail> {
    let core_dir = openpim_machine::SystemConfig::from_profile_string(profile)
        .ok()
        .and_then(|c| c.core_dir);
    openpim_debug::install_from_env(core_dir.as_deref())
        .map_err(|e| fail(DPU_ERR_SYSTEM, e.to_string()))?;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registering a plain `extern "C" fn()` with the C library's atexit; the
        // handler only reads process-wide state that outlives it.
        unsafe {
            libc::atexit(say_at_exit);
        }
    });
    Ok(())
}
