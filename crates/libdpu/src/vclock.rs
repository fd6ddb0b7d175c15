//! The host program's virtual clock, for `libopenpim_vclock.so` (`sdk/host/vclock.c`): the
//! clock functions the program calls ask here first (`openpim_runtime::host_clock`).

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Writes the virtual reading of `clock` to `*ts` and returns 1; returns 0 (and writes
/// nothing) where the program gets the real clock: clocks that are not virtual (CPU-time
/// clocks, dynamic clocks), `OPENPIM_CLOCK=real` / `clock=real`, before the first SDK call.
/// `CLOCK_PROCESS_CPUTIME_ID` asks for what `clock()` returns (the process CPU time at the
/// first SDK call plus the host time since); `clock_gettime` passes it through as real.
///
/// # Safety
/// `ts` is NULL or valid for writing one `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn openpim_virtual_clock(
    clock: libc::clockid_t,
    ts: *mut libc::timespec,
) -> c_int {
    if ts.is_null() {
        return 0;
    }
    match catch_unwind(AssertUnwindSafe(|| {
        openpim_runtime::host_clock::read(clock)
    })) {
        Ok(Some(t)) => {
            // SAFETY: `ts` is valid for writing (the caller's contract), checked non-null.
            unsafe { ts.write(t) };
            1
        }
        _ => 0,
    }
}
