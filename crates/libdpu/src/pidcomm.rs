//! `<pidcomm.h>`: PID-Comm's host API over `openpim-collectives` — the hypercube manager, the
//! eight primitives, `dpu_alloc_comm` / `dpu_alloc_custom` and the entangled-group iterator —
//! and OpenPIM's error-mode extension (`openpim_pidcomm_error_mode`,
//! `openpim_pidcomm_last_error`).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use openpim_collectives::{self as coll, Hypercube};
use openpim_runtime::DpuSet;

use crate::errors::{entry, entry_value, fail, Fail};
use crate::types::{err::*, DpuError, DpuIterator, DpuSetT, DPU_SET_RANKS};

/// `hypercube_manager` (PID-Comm's field order).
#[repr(C)]
pub struct HypercubeManager {
    pub dpu_set: DpuSetT,
    pub dimension: u32,
    pub axis_len: *mut u32,
}

/// `OPENPIM_PIDCOMM_EXIT_ON_ERROR` (default: as DPU_ASSERT) or `OPENPIM_PIDCOMM_RETURN_ERRORS`.
static MODE: AtomicI32 = AtomicI32::new(0);
static LAST: AtomicU32 = AtomicU32::new(DPU_OK);

/// Chooses what a failing `pidcomm_*` call does: 0 ends the program (as DPU_ASSERT, the
/// default), 1 returns (the code is then `openpim_pidcomm_last_error()`). Returns the old mode.
#[no_mangle]
pub extern "C" fn openpim_pidcomm_error_mode(mode: c_int) -> c_int {
    MODE.swap(i32::from(mode != 0), Ordering::AcqRel)
}

/// The code of the last `pidcomm_*` call (`DPU_OK` when it succeeded).
#[no_mangle]
pub extern "C" fn openpim_pidcomm_last_error() -> DpuError {
    LAST.load(Ordering::Acquire)
}

fn to_fail(e: coll::Error) -> Fail {
    match e {
        coll::Error::Runtime(e) => Fail::Rt(e),
        coll::Error::Invalid { param, problem } => {
            let code = match param {
                "dpu_set" | "axis_len" | "dimension" | "manager" => DPU_ERR_INVALID_DPU_SET,
                _ => DPU_ERR_INVALID_MEMORY_TRANSFER,
            };
            fail(code, format!("{param}: {problem}"))
        }
        e @ coll::Error::Relocation { .. } => fail(DPU_ERR_ELF_NO_SUCH_FILE, e.to_string()),
        e @ coll::Error::Worker { .. } => fail(DPU_ERR_SYSTEM, e.to_string()),
    }
}

/// Runs a primitive on the manager's set and cube, then applies the error mode.
///
/// # Safety
/// `mgr` is NULL or a manager from `init_hypercube_manager` whose `axis_len` holds
/// `dimension` lengths.
unsafe fn call(
    func: &'static str,
    mgr: *const HypercubeManager,
    f: impl FnOnce(&DpuSet, &Hypercube) -> coll::Result<()>,
) {
    let code = entry(func, || {
        if mgr.is_null() {
            return Err(fail(
                DPU_ERR_INVALID_DPU_SET,
                "manager: NULL; pass what init_hypercube_manager returned",
            ));
        }
        // SAFETY: non-null, the caller's manager.
        let m = unsafe { &*mgr };
        if m.axis_len.is_null() || m.dimension == 0 || m.dimension > 3 {
            return Err(fail(
                DPU_ERR_INVALID_DPU_SET,
                format!("manager: dimension {} with axis_len {:?}; 1 to 3 axes, axis_len an array of that many lengths", m.dimension, m.axis_len),
            ));
        }
        // SAFETY: `dimension` (1..=3) lengths (the caller's contract).
        let axes = unsafe { std::slice::from_raw_parts(m.axis_len, m.dimension as usize) };
        let set = crate::set_of(&m.dpu_set)?;
        let full = m.dpu_set.kind == DPU_SET_RANKS && set.ranks().iter().all(|r| r.nr_dpus() == 64);
        let cube = Hypercube::new(axes, set.nr_dpus(), full).map_err(to_fail)?;
        f(&set, &cube).map_err(to_fail)
    });
    LAST.store(code, Ordering::Release);
    if code != DPU_OK && MODE.load(Ordering::Acquire) == 0 {
        // As DPU_ASSERT: the message is printed (by `entry`), the program ends.
        std::process::exit(1);
    }
}

/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn comm_str<'a>(p: *const c_char) -> coll::Result<&'a str> {
    if p.is_null() {
        return Err(coll::Error::Invalid {
            param: "comm",
            problem: "NULL; one '0' or '1' per axis, x first, e.g. \"100\"".into(),
        });
    }
    // SAFETY: non-null C string (the caller's contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| coll::Error::Invalid {
            param: "comm",
            problem: "not valid text; one '0' or '1' per axis".into(),
        })
}

/// The host buffers of gather/scatter/reduce: `count` pointers of `len` bytes each.
///
/// # Safety
/// `p` is NULL or an array of `count` pointers, each NULL or valid for `len` bytes.
unsafe fn host_buffers<'a>(
    p: *mut *mut c_void,
    count: usize,
    len: usize,
) -> coll::Result<Vec<&'a mut [u8]>> {
    let bad = |why: String| coll::Error::Invalid {
        param: "host_buffer",
        problem: why,
    };
    if p.is_null() {
        return Err(bad(format!(
            "NULL; an array of {count} pointers to {len} bytes each"
        )));
    }
    // SAFETY: `count` pointers (the caller's contract).
    let ptrs = unsafe { std::slice::from_raw_parts(p, count) };
    ptrs.iter()
        .enumerate()
        .map(|(i, b)| {
            if b.is_null() {
                Err(bad(format!(
                    "host_buffer[{i}] is NULL; {count} buffers of {len} bytes are needed"
                )))
            } else {
                // SAFETY: valid for `len` bytes (the caller's contract), distinct buffers.
                Ok(unsafe { std::slice::from_raw_parts_mut(b.cast::<u8>(), len) })
            }
        })
        .collect()
}

/// # Safety
/// `axis_len` must outlive the manager (it is not copied, as in PID-Comm).
#[no_mangle]
pub unsafe extern "C" fn init_hypercube_manager(
    dpu_set: DpuSetT,
    dimension: u32,
    axis_len: *mut u32,
) -> *mut HypercubeManager {
    entry_value("init_hypercube_manager", std::ptr::null_mut(), || {
        // SAFETY: malloc has no preconditions; the caller frees it with free().
        let p = unsafe { libc::malloc(std::mem::size_of::<HypercubeManager>()) }
            .cast::<HypercubeManager>();
        if !p.is_null() {
            // SAFETY: freshly allocated, large enough, aligned by malloc.
            unsafe {
                p.write(HypercubeManager {
                    dpu_set,
                    dimension,
                    axis_len,
                })
            };
        }
        p
    })
}

/// # Safety
/// `manager` from `init_hypercube_manager`; `data` valid for `total_data_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn pidcomm_broadcast(
    manager: *mut HypercubeManager,
    total_data_size: u32,
    target_offset: u32,
    data: *mut c_void,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call("pidcomm_broadcast", manager, |set, cube| {
            if data.is_null() {
                return Err(coll::Error::Invalid {
                    param: "data",
                    problem: "NULL; the bytes to broadcast".into(),
                });
            }
            // SAFETY: `total_data_size` readable bytes (the caller's contract).
            let d = std::slice::from_raw_parts(data.cast::<u8>(), total_data_size as usize);
            coll::broadcast(set, cube, target_offset, d)
        })
    }
}

/// # Safety
/// `manager` from `init_hypercube_manager`; `comm` a C string.
#[no_mangle]
pub unsafe extern "C" fn pidcomm_alltoall(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    target_offset: u32,
    buffer_offset: u32,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call("pidcomm_alltoall", manager, |set, cube| {
            coll::alltoall(
                set,
                cube,
                comm_str(comm)?,
                total_data_size,
                start_offset,
                target_offset,
                buffer_offset,
            )
        })
    }
}

/// # Safety
/// As [`pidcomm_alltoall`].
#[no_mangle]
pub unsafe extern "C" fn pidcomm_reduce_scatter(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    target_offset: u32,
    buffer_offset: u32,
    size: u32,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call("pidcomm_reduce_scatter", manager, |set, cube| {
            coll::reduce_scatter(
                set,
                cube,
                comm_str(comm)?,
                total_data_size,
                start_offset,
                target_offset,
                buffer_offset,
                size,
            )
        })
    }
}

/// # Safety
/// As [`pidcomm_alltoall`].
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn pidcomm_all_reduce(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    target_offset: u32,
    buffer_offset: u32,
    size: u32,
    reduce_type: u32,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call("pidcomm_all_reduce", manager, |set, cube| {
            coll::all_reduce(
                set,
                cube,
                comm_str(comm)?,
                total_data_size,
                start_offset,
                target_offset,
                buffer_offset,
                size,
                reduce_type,
            )
        })
    }
}

/// # Safety
/// As [`pidcomm_alltoall`].
#[no_mangle]
pub unsafe extern "C" fn pidcomm_allgather(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    target_offset: u32,
    buffer_offset: u32,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call("pidcomm_allgather", manager, |set, cube| {
            coll::allgather(
                set,
                cube,
                comm_str(comm)?,
                total_data_size,
                start_offset,
                target_offset,
                buffer_offset,
            )
        })
    }
}

/// # Safety
/// As [`pidcomm_alltoall`]; `host_buffer` one pointer per group, `total_data_size` bytes each.
#[no_mangle]
pub unsafe extern "C" fn pidcomm_reduce(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    buffer_offset: u32,
    size: u32,
    host_buffer: *mut *mut c_void,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call("pidcomm_reduce", manager, |set, cube| {
            let comm = comm_str(comm)?;
            let c = cube.parse_comm(comm)?;
            let groups = (cube.nr_dpus() / cube.group_size(c)) as usize;
            let mut host = host_buffers(host_buffer, groups, total_data_size as usize)?;
            coll::reduce(
                set,
                cube,
                comm,
                total_data_size,
                start_offset,
                buffer_offset,
                size,
                &mut host,
            )
        })
    }
}

/// Gather or scatter (`to_host`) between the DPUs and one host buffer per 8 DPUs.
///
/// # Safety
/// As [`pidcomm_gather`].
unsafe fn gather_scatter(
    func: &'static str,
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    host_buffer: *mut *mut c_void,
    to_host: bool,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        call(func, manager, |set, cube| {
            let mut host = host_buffers(
                host_buffer,
                (cube.nr_dpus() / 8) as usize,
                8 * total_data_size as usize,
            )?;
            let comm = comm_str(comm)?;
            if to_host {
                coll::gather(set, cube, comm, total_data_size, start_offset, &mut host)
            } else {
                coll::scatter(set, cube, comm, total_data_size, start_offset, &mut host)
            }
        })
    }
}

/// # Safety
/// As [`pidcomm_alltoall`]; `host_buffer` one pointer per 8 DPUs, `8 * total_data_size`
/// bytes each.
#[no_mangle]
pub unsafe extern "C" fn pidcomm_gather(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    _buffer_offset: u32,
    host_buffer: *mut *mut c_void,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        gather_scatter(
            "pidcomm_gather",
            manager,
            comm,
            total_data_size,
            start_offset,
            host_buffer,
            true,
        )
    }
}

/// # Safety
/// As [`pidcomm_gather`].
#[no_mangle]
pub unsafe extern "C" fn pidcomm_scatter(
    manager: *mut HypercubeManager,
    comm: *mut c_char,
    total_data_size: u32,
    start_offset: u32,
    _buffer_offset: u32,
    host_buffer: *mut *mut c_void,
) {
    // SAFETY: forwarded caller contract.
    unsafe {
        gather_scatter(
            "pidcomm_scatter",
            manager,
            comm,
            total_data_size,
            start_offset,
            host_buffer,
            false,
        )
    }
}

/// Allocates whole ranks for the collectives (`nr_dpus` a multiple of 64), in order.
///
/// # Safety
/// As `dpu_alloc`.
#[no_mangle]
pub unsafe extern "C" fn dpu_alloc_comm(
    nr_dpus: u32,
    profile: *const c_char,
    dpu_set: *mut DpuSetT,
    _type: c_int,
) -> DpuError {
    if !nr_dpus.is_multiple_of(64) {
        return entry("dpu_alloc_comm", || {
            Err(fail(
                DPU_ERR_ALLOCATION,
                format!("nr_dpus {nr_dpus}: dpu_alloc_comm allocates whole ranks; ask for a multiple of 64 DPUs"),
            ))
        });
    }
    // SAFETY: forwarded caller contract.
    unsafe { crate::alloc_common("dpu_alloc_comm", nr_dpus / 64, profile, dpu_set, true) }
}

/// Allocates `nr_dpus` DPUs and tells how many are enabled.
///
/// # Safety
/// As `dpu_alloc`; `enabled_dpus` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dpu_alloc_custom(
    nr_dpus: u32,
    profile: *const c_char,
    dpu_set: *mut DpuSetT,
    enabled_dpus: *mut c_int,
) -> DpuError {
    // SAFETY: forwarded caller contract.
    let r = unsafe { crate::alloc_common("dpu_alloc_custom", nr_dpus, profile, dpu_set, false) };
    if r == DPU_OK && !enabled_dpus.is_null() {
        // SAFETY: `dpu_set` was written by the allocation; `enabled_dpus` writable.
        let n = crate::set_of(unsafe { &*dpu_set }).map_or(0, |s| s.nr_dpus());
        // SAFETY: non-null, the caller's int.
        unsafe { enabled_dpus.write(n as c_int) };
    }
    r
}

/// The next DPU in entangled order: in a full rank, logical position `j` is the DPU of chip
/// `j % 8` and line `j / 8` (the rank's DPU `8·(j % 8) + j / 8`); other ranks in their order.
///
/// # Safety
/// `iterator` is NULL or an iterator from `dpu_set_dpu_iterator_from`.
#[no_mangle]
pub unsafe extern "C" fn dpu_set_dpu_iterator_next_entangled_group(
    iterator: *mut DpuIterator,
    _cube_size: u32,
) {
    entry_value("dpu_set_dpu_iterator_next_entangled_group", (), || {
        // SAFETY: forwarded caller contract.
        unsafe {
            crate::step_dpu_iterator(iterator, |i, n| {
                if n != 64 {
                    return Some(i + 1);
                }
                let j = 8 * (i % 8) + i / 8 + 1;
                (j < 64).then(|| (j % 8) * 8 + j / 8)
            })
        }
    })
}
