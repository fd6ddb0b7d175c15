//! `<openpim.h>`: the program marks its own host-mediated exchanges between DPUs, whose
//! transfers and host code then count as inter-DPU time (`openpim_runtime::inter_dpu`).

use std::ffi::{c_char, CStr};

use openpim_runtime::inter_dpu::{self, InterDpuCall};

use crate::errors::{entry_value, report};

fn begin(label: String) {
    inter_dpu::begin(InterDpuCall {
        primitive: "region".into(),
        label,
        axes: String::new(),
        bytes: 0,
        path: "host".into(),
        owns_kernels: false,
    });
}

/// Opens a host-mediated exchange between DPUs (regions nest).
#[no_mangle]
pub extern "C" fn openpim_interdpu_begin() {
    entry_value("openpim_interdpu_begin", (), || begin(String::new()))
}

/// Opens a host-mediated exchange between DPUs with a label shown in the report and trace
/// (NULL: no label).
///
/// # Safety
/// `label` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn openpim_interdpu_begin_named(label: *const c_char) {
    entry_value("openpim_interdpu_begin_named", (), || {
        let label = if label.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated string (the caller's contract), checked non-null.
            unsafe { CStr::from_ptr(label) }
                .to_string_lossy()
                .into_owned()
        };
        begin(label)
    })
}

/// Closes the innermost open exchange. Without one, says so on stderr and does nothing.
#[no_mangle]
pub extern "C" fn openpim_interdpu_end() {
    entry_value("openpim_interdpu_end", (), || {
        if inter_dpu::end().is_none() {
            report(
                "openpim_interdpu_end",
                "no inter-DPU region is open (call openpim_interdpu_begin first); nothing done",
            );
        }
    })
}
