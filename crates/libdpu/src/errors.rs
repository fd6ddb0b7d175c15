//! The one place runtime errors become `dpu_error_t` codes, and the messages on stderr.

use std::panic::{catch_unwind, AssertUnwindSafe};

use openpim_runtime::Error;

use crate::types::{err::*, DpuError};

/// Why an entry point failed.
pub enum Fail {
    /// A runtime error.
    Rt(Error),
    /// A C-level misuse: code and message (cause and fix).
    Code(DpuError, String),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Rt(e)
    }
}

/// Shorthand for C-level failures.
pub fn fail(code: DpuError, msg: impl Into<String>) -> Fail {
    Fail::Code(code, msg.into())
}

/// Maps a runtime error to its SDK code.
pub fn code_of(e: &Error) -> DpuError {
    match e {
        Error::Profile(_) => DPU_ERR_INVALID_PROFILE,
        Error::Allocation { .. } => DPU_ERR_ALLOCATION,
        Error::System(_) => DPU_ERR_SYSTEM,
        Error::Memory(_) => DPU_ERR_SYSTEM,
        Error::Checkpoint(_) => DPU_ERR_SYSTEM,
        Error::InvalidDpuSet(_) => DPU_ERR_INVALID_DPU_SET,
        Error::ElfNoSuchFile { .. } => DPU_ERR_ELF_NO_SUCH_FILE,
        Error::ElfInvalidFile { .. } => DPU_ERR_ELF_INVALID_FILE,
        // The SDK's loader range-checks every segment against its memory, so a program that
        // does not fit fails as an invalid IRAM/WRAM access.
        Error::IramOverflow { .. } => DPU_ERR_INVALID_IRAM_ACCESS,
        Error::WramOverflow { .. } => DPU_ERR_INVALID_WRAM_ACCESS,
        Error::TooManyTasklets { .. } => DPU_ERR_TOO_MANY_TASKLETS,
        Error::NoProgramLoaded(_) => DPU_ERR_NO_PROGRAM_LOADED,
        Error::UnknownSymbol { .. } => DPU_ERR_UNKNOWN_SYMBOL,
        Error::InvalidSymbolAccess { .. } => DPU_ERR_INVALID_SYMBOL_ACCESS,
        Error::InvalidWramAccess { .. } => DPU_ERR_INVALID_WRAM_ACCESS,
        Error::InvalidIramAccess { .. } => DPU_ERR_INVALID_IRAM_ACCESS,
        Error::InvalidMramAccess { .. } => DPU_ERR_INVALID_MRAM_ACCESS,
        Error::DpuFault { .. } => DPU_ERR_DPU_FAULT,
        Error::CallbackFailed { code } => *code,
        Error::NonblockingSyncCallback => DPU_ERR_NONBLOCKING_SYNC_CALLBACK,
        Error::Internal(_) => DPU_ERR_INTERNAL,
        Error::LogBufferTooSmall { .. } => DPU_ERR_LOG_BUFFER_TOO_SMALL,
    }
}

/// Prints `openpim: FUNC: MSG` on stderr (unless `OPENPIM_QUIET`): how entry points explain
/// an error, also those that return no `dpu_error_t` (a NULL or 0 result comes with it).
pub fn report(func: &str, msg: &str) {
    remember_last_error(func, msg);
    if !openpim_runtime::quiet() {
        eprintln!("openpim: {func}: {msg}");
    }
}

/// What an entry point says about a DPU fault that the runtime has already described.
pub fn fault_summary(count: usize) -> String {
    let dpus = if count == 1 {
        "1 DPU".to_string()
    } else {
        format!("{count} DPUs")
    };
    format!(
        "{dpus} faulted (see the fault above: DPU, tasklet, pc, function and cause); \
         the DPU's printf output up to the fault can be read with dpu_log_read"
    )
}

/// Replaces Rust's panic message (with its backtrace hint) by one `openpim:` line, once per
/// process: an internal error is caught at the entry point and returned as
/// `DPU_ERR_INTERNAL`, and the program's user should see a short explanation, not Rust
/// internals. With `RUST_BACKTRACE` set, Rust's own message (and backtrace) is kept, for
/// debugging OpenPIM.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        openpim_runtime::install_one_line_panic_hook("the SDK call returns DPU_ERR_INTERNAL", true);
    });
}

/// Runs an entry point: no panic crosses the FFI boundary, every error is reported once.
pub fn entry(func: &'static str, f: impl FnOnce() -> Result<(), Fail>) -> DpuError {
    // Virtual time: the host code since the previous SDK call ends here.
    install_panic_hook();
    crate::exit::ensure_registered();
    let _call = openpim_runtime::timeline::SdkCall::enter();
    openpim_runtime::host_clock::sdk_call();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => DPU_OK,
        Ok(Err(Fail::Rt(e))) => {
            let code = code_of(&e);
            match &e {
                // Errors returned by user callbacks are theirs to report.
                Error::CallbackFailed { .. } => {}
                // The runtime already printed each faulting rank's first fault (DPU, tasklet,
                // pc, function, cause) when the launch ran: do not print it twice.
                Error::DpuFault { count, .. } => report(func, &fault_summary(*count)),
                _ => report(func, &e.to_string()),
            }
            code
        }
        Ok(Err(Fail::Code(code, msg))) => {
            report(func, &msg);
            code
        }
        Err(p) => {
            let msg = openpim_runtime::panic_message(&*p);
            report(
                func,
                &format!("internal error (a bug in OpenPIM, please report it): {msg}"),
            );
            DPU_ERR_INTERNAL
        }
    }
}

/// Runs an entry point that returns a value; on panic returns `default`.
pub fn entry_value<T>(func: &'static str, default: T, f: impl FnOnce() -> T) -> T {
    // Iterators and small queries are SDK calls too: the emulator's handle checks in them
    // are not the program's host time.
    install_panic_hook();
    crate::exit::ensure_registered();
    let _call = openpim_runtime::timeline::SdkCall::enter();
    openpim_runtime::host_clock::sdk_call();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            report(func, "internal error (a bug in OpenPIM, please report it)");
            default
        }
    }
}

/// The SDK's description of each code.
pub fn describe(code: DpuError) -> &'static str {
    match code {
        DPU_OK => "success",
        DPU_ERR_INTERNAL => "internal error",
        DPU_ERR_SYSTEM => "system error",
        DPU_ERR_DRIVER => "driver error",
        DPU_ERR_ALLOCATION => "allocation error",
        DPU_ERR_INVALID_DPU_SET => "invalid DPU set",
        DPU_ERR_INVALID_THREAD_ID => "invalid thread id",
        DPU_ERR_INVALID_NOTIFY_ID => "invalid notify id",
        DPU_ERR_INVALID_WRAM_ACCESS => "invalid WRAM access",
        DPU_ERR_INVALID_IRAM_ACCESS => "invalid IRAM access",
        DPU_ERR_INVALID_MRAM_ACCESS => "invalid MRAM access",
        DPU_ERR_INVALID_SYMBOL_ACCESS => "invalid symbol access",
        DPU_ERR_MRAM_BUSY => "MRAM busy",
        DPU_ERR_TRANSFER_ALREADY_SET => "transfer already set",
        DPU_ERR_NO_PROGRAM_LOADED => "no program loaded",
        DPU_ERR_DIFFERENT_DPU_PROGRAMS => "different DPU programs",
        DPU_ERR_CORRUPTED_MEMORY => "corrupted memory",
        DPU_ERR_DPU_DISABLED => "DPU disabled",
        DPU_ERR_DPU_ALREADY_RUNNING => "DPU already running",
        DPU_ERR_INVALID_MEMORY_TRANSFER => "invalid memory transfer",
        DPU_ERR_INVALID_LAUNCH_POLICY => "invalid launch policy",
        DPU_ERR_DPU_FAULT => "DPU is in fault",
        DPU_ERR_ELF_INVALID_FILE => "invalid ELF file",
        DPU_ERR_ELF_NO_SUCH_FILE => "no such ELF file",
        DPU_ERR_ELF_NO_SUCH_SECTION => "no such ELF section",
        DPU_ERR_TIMEOUT => "timeout",
        DPU_ERR_INVALID_PROFILE => "invalid profile",
        DPU_ERR_UNKNOWN_SYMBOL => "unknown symbol",
        DPU_ERR_LOG_FORMAT => "invalid log format",
        DPU_ERR_LOG_CONTEXT_MISSING => "log context missing",
        DPU_ERR_LOG_BUFFER_TOO_SMALL => "log buffer too small",
        DPU_ERR_VPD_INVALID_FILE => "invalid VPD file",
        DPU_ERR_VPD_NO_REPAIR => "no repair in VPD",
        DPU_ERR_NO_THREAD_PER_RANK => "no thread per rank",
        DPU_ERR_INVALID_BUFFER_SIZE => "invalid buffer size",
        DPU_ERR_NONBLOCKING_SYNC_CALLBACK => "non-blocking synchronous callback",
        DPU_ERR_TOO_MANY_TASKLETS => "too many tasklets",
        DPU_ERR_SG_TOO_MANY_BLOCKS => "too many scatter-gather blocks",
        DPU_ERR_SG_LENGTH_MISMATCH => "scatter-gather length mismatch",
        DPU_ERR_SG_NOT_ACTIVATED => "scatter-gather not activated",
        DPU_ERR_SG_NOT_MRAM_SYMBOL => "scatter-gather transfer to a non-MRAM symbol",
        DPU_ERR_ASYNC_JOBS => "cannot run: asynchronous jobs are pending",
        _ => "unknown error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_entry_points_are_sdk_calls() {
        // Iterators, dpu_error_to_string and the like run emulator code (handle checks): the
        // time in them is not the program's host time, so they mark an SDK call like the rest.
        let calls = || openpim_runtime::timeline::with_state(|s| s.sdk_calls);
        let before = calls();
        let n = entry_value("dpu_test_value", 0u32, || 7);
        assert_eq!(n, 7);
        assert!(calls() > before, "entry_value did not mark an SDK call");
    }
}

thread_local! {
    /// This thread's last error explanation (`FUNC: MSG`), for `openpim_last_error`.
    static LAST_ERROR: std::cell::RefCell<Option<std::ffi::CString>> =
        const { std::cell::RefCell::new(None) };
}

fn remember_last_error(func: &str, msg: &str) {
    let line = format!("{func}: {msg}").replace('\0', " ");
    if let Ok(c) = std::ffi::CString::new(line) {
        LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
    }
}

/// `openpim_last_error`: the calling thread's last error explanation (what `openpim: ...`
/// says on stderr, also under `OPENPIM_QUIET`), or NULL; valid until its next error.
#[no_mangle]
pub extern "C" fn openpim_last_error() -> *const std::ffi::c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}
