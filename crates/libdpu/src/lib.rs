//! libdpu: the UPMEM SDK's C ABI (`libdpu.so`) over `openpim-runtime`.
//!
//! Thin glue only: convert C arguments (checking every pointer that can be checked), call
//! the runtime, map its errors to `dpu_error_t` once ([`errors::code_of`]). No panic crosses
//! the boundary (every entry point runs under `catch_unwind` and returns
//! `DPU_ERR_INTERNAL`), and every error is explained on stderr (cause and fix) unless
//! `OPENPIM_QUIET=1`.

#![allow(clippy::missing_safety_doc)] // Each entry point's contract is the SDK's documentation.

mod checkpoint;
mod debug_tools;
pub mod errors;
mod exit;
pub mod handles;
mod interdpu;
pub mod management;
pub mod objects;
mod pidcomm;
mod profile;
pub mod types;
mod vclock;

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::{Arc, Mutex};

use openpim_runtime::{
    Callback, CallbackFlags, CallbackScope, DpuSet, LaunchPolicy, Program, Symbol, SymbolRef,
    XferDirection, XferFlags,
};

use errors::{entry, entry_value, fail, Fail};
use handles::{
    c_ranks, dpu_ref, program_from_handle, program_handle, rank_ref, register, to_runtime,
};
use objects::{CDescription, CDpu, CRank};
use types::{err::*, *};

type R = Result<(), Fail>;

pub(crate) fn set_of(set: &DpuSetT) -> Result<DpuSet, Fail> {
    to_runtime(set).map_err(|c| {
        fail(
            c,
            "the DPU set is not valid (already freed with dpu_free, uninitialised, or not made by dpu_alloc / DPU_FOREACH / DPU_RANK_FOREACH)",
        )
    })
}

unsafe fn c_str<'a>(p: *const c_char, code: DpuError, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(fail(code, format!("{what} is NULL")));
    }
    // SAFETY: the caller passes a NUL-terminated C string (SDK contract), checked non-null.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| fail(code, format!("{what} is not valid UTF-8")))
}

/// Checks an output pointer: NULL is `DPU_ERR_INVALID_MEMORY_TRANSFER` (the host memory the
/// result goes to is invalid), with `what` naming the argument and its type.
fn out_ptr<T>(p: *mut T, what: &str) -> Result<(), Fail> {
    if p.is_null() {
        Err(fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            format!("{what} is NULL: pass the address of a variable to store the result in"),
        ))
    } else {
        Ok(())
    }
}

fn symbol_of(s: DpuSymbolT) -> Symbol {
    Symbol {
        address: s.address,
        size: s.size,
    }
}

/// The bits of `dpu_xfer_flags_t`.
const XFER_FLAG_BITS: u32 = 1 | 2 | 4;
/// The bits of `dpu_sg_xfer_flags_t`.
const SG_XFER_FLAG_BITS: u32 = 2 | 4;
/// The bits of `dpu_callback_flags_t`.
const CALLBACK_FLAG_BITS: u32 = 1 | 2 | 4 | 8;

/// Checks a flags argument: bits outside `valid` are refused with `code` (the SDK ignores
/// them silently; they are always a bug, typically an argument passed in the wrong place).
fn check_flags(flags: u32, valid: u32, code: DpuError, what: &str, names: &str) -> R {
    if flags & !valid != 0 {
        return Err(fail(
            code,
            format!(
                "{what} {flags} ({flags:#x}) has bits no flag has ({:#x}): use {names}, combined with |",
                flags & !valid
            ),
        ));
    }
    Ok(())
}

fn xfer_flags(flags: u32) -> Result<XferFlags, Fail> {
    check_flags(
        flags,
        XFER_FLAG_BITS,
        DPU_ERR_INVALID_MEMORY_TRANSFER,
        "the transfer flags",
        "DPU_XFER_DEFAULT (0), DPU_XFER_NO_RESET (1), DPU_XFER_ASYNC (2), DPU_XFER_PARALLEL (4)",
    )?;
    Ok(XferFlags {
        no_reset: flags & 1 != 0,
        asynchronous: flags & 2 != 0,
        parallel: flags & 4 != 0,
    })
}

/// A `dpu_xfer_t` argument.
fn xfer_direction(xfer: u32) -> Result<XferDirection, Fail> {
    match xfer {
        0 => Ok(XferDirection::ToDpu),
        1 => Ok(XferDirection::FromDpu),
        x => Err(fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            format!(
                "transfer direction {x} is neither DPU_XFER_TO_DPU (0) nor DPU_XFER_FROM_DPU (1)"
            ),
        )),
    }
}

fn null_buffer(len: usize) -> Fail {
    fail(
        DPU_ERR_INVALID_MEMORY_TRANSFER,
        format!("the host buffer is NULL for a transfer of {len} bytes"),
    )
}

// ----- allocation -------------------------------------------------------------------------

pub(crate) unsafe fn alloc_common(
    func: &'static str,
    n: u32,
    profile: *const c_char,
    out: *mut DpuSetT,
    ranks: bool,
) -> DpuError {
    entry(func, || {
        if out.is_null() {
            return Err(fail(
                DPU_ERR_INVALID_DPU_SET,
                "the dpu_set argument is NULL: pass the address of a struct dpu_set_t to receive the new set (struct dpu_set_t set; dpu_alloc(n, NULL, &set))",
            ));
        }
        let profile = if profile.is_null() {
            ""
        } else {
            // SAFETY: non-null C string from the caller.
            unsafe { c_str(profile, DPU_ERR_INVALID_PROFILE, "the profile") }?
        };
        let count = (n != u32::MAX).then_some(n);
        // The debugging tools the environment asks for (GDB server, traces, core dumps).
        debug_tools::install(profile)?;
        profile::start()?;
        // The checkers (`OPENPIM_CHECK`) attach before the first DPU runs.
        openpim_check::install_from_env().map_err(|e| fail(DPU_ERR_SYSTEM, e.to_string()))?;
        let set = if ranks {
            openpim_runtime::alloc_ranks(count, profile)?
        } else {
            openpim_runtime::alloc(count, profile)?
        };
        let c = register(&set);
        // SAFETY: `out` is non-null and points to caller-owned storage for a dpu_set_t.
        unsafe { out.write(c) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_alloc(
    nr_dpus: u32,
    profile: *const c_char,
    dpu_set: *mut DpuSetT,
) -> DpuError {
    // SAFETY: forwarded caller contract.
    unsafe { alloc_common("dpu_alloc", nr_dpus, profile, dpu_set, false) }
}

#[no_mangle]
pub unsafe extern "C" fn dpu_alloc_ranks(
    nr_ranks: u32,
    profile: *const c_char,
    dpu_set: *mut DpuSetT,
) -> DpuError {
    // SAFETY: forwarded caller contract.
    unsafe { alloc_common("dpu_alloc_ranks", nr_ranks, profile, dpu_set, true) }
}

#[no_mangle]
pub extern "C" fn dpu_free(dpu_set: DpuSetT) -> DpuError {
    entry("dpu_free", || {
        let not_owned = || {
            fail(
                DPU_ERR_INVALID_DPU_SET,
                "dpu_free takes the set returned by dpu_alloc/dpu_alloc_ranks (not a rank or DPU of it), once",
            )
        };
        if dpu_set.kind != DPU_SET_RANKS {
            return Err(not_owned());
        }
        // SAFETY: kind RANKS: `list` is the active member.
        let list = unsafe { dpu_set.u.list };
        let owned = handles::unregister(list.ranks, list.nr_ranks).ok_or_else(not_owned)?;
        let set = DpuSet::from_ranks(owned.ranks.iter().map(|r| Arc::clone(&r.rank)).collect());
        // Errors of unsynchronised asynchronous work are dropped with the set, as in the SDK.
        let _ = set.sync();
        drop(set);
        drop(owned);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_get_nr_dpus(dpu_set: DpuSetT, nr_dpus: *mut u32) -> DpuError {
    entry("dpu_get_nr_dpus", || {
        out_ptr(nr_dpus, "nr_dpus (a uint32_t *)")?;
        let n = set_of(&dpu_set)?.nr_dpus();
        // SAFETY: checked non-null, caller-owned.
        unsafe { nr_dpus.write(n) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_get_nr_ranks(dpu_set: DpuSetT, nr_ranks: *mut u32) -> DpuError {
    entry("dpu_get_nr_ranks", || {
        out_ptr(nr_ranks, "nr_ranks (a uint32_t *)")?;
        let n = set_of(&dpu_set)?.nr_ranks();
        // SAFETY: checked non-null, caller-owned.
        unsafe { nr_ranks.write(n) };
        Ok(())
    })
}

// ----- programs ---------------------------------------------------------------------------

fn give_program(p: &Arc<Program>, out: *mut *mut c_void) {
    if !out.is_null() {
        // SAFETY: non-null output pointer from the caller.
        unsafe { out.write(program_handle(p)) };
    }
}

#[no_mangle]
pub unsafe extern "C" fn dpu_load(
    dpu_set: DpuSetT,
    binary_path: *const c_char,
    program: *mut *mut c_void,
) -> DpuError {
    entry("dpu_load", || {
        let set = set_of(&dpu_set)?;
        // SAFETY: C string from the caller.
        let path = unsafe { c_str(binary_path, DPU_ERR_ELF_NO_SUCH_FILE, "the program path") }?;
        let p = set.load_file(path)?;
        give_program(&p, program);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_load_from_memory(
    dpu_set: DpuSetT,
    buffer: *mut u8,
    buffer_size: usize,
    program: *mut *mut c_void,
) -> DpuError {
    entry("dpu_load_from_memory", || {
        let set = set_of(&dpu_set)?;
        if buffer.is_null() {
            return Err(fail(DPU_ERR_ELF_INVALID_FILE, "the program buffer is NULL"));
        }
        // SAFETY: the caller passes a buffer of `buffer_size` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buffer, buffer_size) };
        let p = set.load_bytes(bytes)?;
        give_program(&p, program);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_load_from_incbin(
    dpu_set: DpuSetT,
    incbin: *mut DpuIncbinT,
    program: *mut *mut c_void,
) -> DpuError {
    entry("dpu_load_from_incbin", || {
        let set = set_of(&dpu_set)?;
        if incbin.is_null() {
            return Err(fail(
                DPU_ERR_ELF_INVALID_FILE,
                "the incbin descriptor is NULL",
            ));
        }
        // SAFETY: non-null pointer to a dpu_incbin_t made by DPU_INCBIN.
        let inc = unsafe { &*incbin };
        if inc.buffer.is_null() {
            return Err(fail(DPU_ERR_ELF_INVALID_FILE, "the incbin buffer is NULL"));
        }
        // SAFETY: DPU_INCBIN provides `size` bytes at `buffer`.
        let bytes = unsafe { std::slice::from_raw_parts(inc.buffer, inc.size) };
        let origin = if inc.path.is_null() {
            None
        } else {
            // SAFETY: DPU_INCBIN stores a NUL-terminated path.
            Some(
                unsafe { CStr::from_ptr(inc.path) }
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        let p = Arc::new(Program::parse(origin, bytes)?);
        set.load(Arc::clone(&p))?;
        give_program(&p, program);
        Ok(())
    })
}

/// `openpim_program_symbols`: the names of the program's host-reachable symbols (sorted), as
/// one malloc'd block of NUL-terminated names (`*names`, to free()) and their number (`*count`).
///
/// # Safety
/// `names` and `count` are NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn openpim_program_symbols(
    program: *mut c_void,
    names: *mut *mut c_char,
    count: *mut u32,
) -> DpuError {
    entry("openpim_program_symbols", || {
        out_ptr(names, "names (a char **)")?;
        out_ptr(count, "count (a uint32_t *)")?;
        let p = program_from_handle(program).ok_or_else(|| {
            fail(
                DPU_ERR_NO_PROGRAM_LOADED,
                "the dpu_program_t is not a program loaded by dpu_load (or its DPUs were freed or reloaded)",
            )
        })?;
        let mut list: Vec<&str> = p.symbols().map(|(name, _)| name).collect();
        list.sort_unstable();
        let mut block = Vec::new();
        for name in &list {
            block.extend_from_slice(name.as_bytes());
            block.push(0);
        }
        // SAFETY: a fresh allocation of block.len() (at least 1) bytes, filled below.
        let out = unsafe { libc::malloc(block.len().max(1)) }.cast::<u8>();
        if out.is_null() {
            return Err(fail(DPU_ERR_SYSTEM, "out of memory for the symbol names"));
        }
        // SAFETY: `out` holds block.len() bytes; `names`/`count` checked non-null.
        unsafe {
            std::ptr::copy_nonoverlapping(block.as_ptr(), out, block.len());
            names.write(out.cast());
            count.write(list.len() as u32);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_get_symbol(
    program: *mut c_void,
    symbol_name: *const c_char,
    symbol: *mut DpuSymbolT,
) -> DpuError {
    entry("dpu_get_symbol", || {
        out_ptr(symbol, "symbol (a struct dpu_symbol_t *)")?;
        // SAFETY: C string from the caller.
        let name = unsafe { c_str(symbol_name, DPU_ERR_UNKNOWN_SYMBOL, "the symbol name") }?;
        let p = program_from_handle(program).ok_or_else(|| {
            fail(
                DPU_ERR_NO_PROGRAM_LOADED,
                "the dpu_program_t is not a program loaded by dpu_load (or its DPUs were freed or reloaded)",
            )
        })?;
        let s = p.symbol(name)?;
        // SAFETY: checked non-null, caller-owned.
        unsafe {
            symbol.write(DpuSymbolT {
                address: s.address,
                size: s.size,
            })
        };
        Ok(())
    })
}

// ----- execution --------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn dpu_launch(dpu_set: DpuSetT, policy: u32) -> DpuError {
    entry("dpu_launch", || {
        let set = set_of(&dpu_set)?;
        let policy = match policy {
            0 => LaunchPolicy::Asynchronous,
            1 => LaunchPolicy::Synchronous,
            p => {
                return Err(fail(
                    DPU_ERR_INVALID_LAUNCH_POLICY,
                    format!(
                        "launch policy {p} is neither DPU_ASYNCHRONOUS (0) nor DPU_SYNCHRONOUS (1)"
                    ),
                ))
            }
        };
        set.launch(policy)?;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn dpu_sync(dpu_set: DpuSetT) -> DpuError {
    entry("dpu_sync", || {
        set_of(&dpu_set)?.sync()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_status(
    dpu_set: DpuSetT,
    done: *mut bool,
    fault: *mut bool,
) -> DpuError {
    entry("dpu_status", || {
        out_ptr(done, "done (a bool *)")?;
        out_ptr(fault, "fault (a bool *)")?;
        let (d, f) = set_of(&dpu_set)?.polled_status();
        // SAFETY: both checked non-null, caller-owned.
        unsafe {
            done.write(d);
            fault.write(f);
        }
        Ok(())
    })
}

// ----- transfers --------------------------------------------------------------------------

unsafe fn copy_to_common(
    func: &'static str,
    dpu_set: DpuSetT,
    sym: SymbolRef<'_>,
    off: u32,
    src: *const c_void,
    len: usize,
) -> R {
    let set = set_of(&dpu_set)?;
    if src.is_null() && len > 0 {
        return Err(null_buffer(len));
    }
    let _ = func;
    // SAFETY: the caller passes `len` readable bytes at `src`; the call is synchronous.
    unsafe { set.broadcast_raw(sym, off, src.cast(), len, false) }?;
    Ok(())
}

unsafe fn copy_from_common(
    dpu_set: DpuSetT,
    sym: SymbolRef<'_>,
    off: u32,
    dst: *mut c_void,
    len: usize,
) -> R {
    let set = set_of(&dpu_set)?;
    if dst.is_null() && len > 0 {
        return Err(null_buffer(len));
    }
    let out: &mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: the caller passes `len` writable bytes at `dst`, not used during the call.
        unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) }
    };
    set.copy_from(sym, off, out)?;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dpu_copy_to(
    dpu_set: DpuSetT,
    symbol_name: *const c_char,
    symbol_offset: u32,
    src: *const c_void,
    length: usize,
) -> DpuError {
    entry("dpu_copy_to", || {
        // SAFETY: C string from the caller.
        let name = unsafe { c_str(symbol_name, DPU_ERR_UNKNOWN_SYMBOL, "the symbol name") }?;
        // SAFETY: forwarded caller contract.
        unsafe {
            copy_to_common(
                "dpu_copy_to",
                dpu_set,
                SymbolRef::Name(name),
                symbol_offset,
                src,
                length,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_copy_from(
    dpu_set: DpuSetT,
    symbol_name: *const c_char,
    symbol_offset: u32,
    dst: *mut c_void,
    length: usize,
) -> DpuError {
    entry("dpu_copy_from", || {
        // SAFETY: C string from the caller.
        let name = unsafe { c_str(symbol_name, DPU_ERR_UNKNOWN_SYMBOL, "the symbol name") }?;
        // SAFETY: forwarded caller contract.
        unsafe { copy_from_common(dpu_set, SymbolRef::Name(name), symbol_offset, dst, length) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_copy_to_symbol(
    dpu_set: DpuSetT,
    symbol: DpuSymbolT,
    symbol_offset: u32,
    src: *const c_void,
    length: usize,
) -> DpuError {
    entry("dpu_copy_to_symbol", || {
        let sym = SymbolRef::Symbol(symbol_of(symbol));
        // SAFETY: forwarded caller contract.
        unsafe {
            copy_to_common(
                "dpu_copy_to_symbol",
                dpu_set,
                sym,
                symbol_offset,
                src,
                length,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_copy_from_symbol(
    dpu_set: DpuSetT,
    symbol: DpuSymbolT,
    symbol_offset: u32,
    dst: *mut c_void,
    length: usize,
) -> DpuError {
    entry("dpu_copy_from_symbol", || {
        // SAFETY: forwarded caller contract.
        unsafe {
            copy_from_common(
                dpu_set,
                SymbolRef::Symbol(symbol_of(symbol)),
                symbol_offset,
                dst,
                length,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_prepare_xfer(dpu_set: DpuSetT, buffer: *mut c_void) -> DpuError {
    entry("dpu_prepare_xfer", || {
        let set = set_of(&dpu_set)?;
        // SAFETY: the SDK contract: the buffer stays valid until the push that uses it.
        unsafe { set.prepare_xfer(buffer.cast()) };
        Ok(())
    })
}

unsafe fn push_common(
    dpu_set: DpuSetT,
    xfer: u32,
    sym: SymbolRef<'_>,
    off: u32,
    len: usize,
    flags: u32,
) -> R {
    let set = set_of(&dpu_set)?;
    let dir = xfer_direction(xfer)?;
    let flags = xfer_flags(flags)?;
    // SAFETY: the SDK contract: prepared buffers hold `len` bytes until the transfer ran.
    unsafe { set.push_xfer(dir, sym, off, len, flags) }?;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dpu_push_xfer(
    dpu_set: DpuSetT,
    xfer: u32,
    symbol_name: *const c_char,
    symbol_offset: u32,
    length: usize,
    flags: u32,
) -> DpuError {
    entry("dpu_push_xfer", || {
        // SAFETY: C string from the caller.
        let name = unsafe { c_str(symbol_name, DPU_ERR_UNKNOWN_SYMBOL, "the symbol name") }?;
        // SAFETY: forwarded caller contract.
        unsafe {
            push_common(
                dpu_set,
                xfer,
                SymbolRef::Name(name),
                symbol_offset,
                length,
                flags,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_push_xfer_symbol(
    dpu_set: DpuSetT,
    xfer: u32,
    symbol: DpuSymbolT,
    symbol_offset: u32,
    length: usize,
    flags: u32,
) -> DpuError {
    entry("dpu_push_xfer_symbol", || {
        // SAFETY: forwarded caller contract.
        unsafe {
            push_common(
                dpu_set,
                xfer,
                SymbolRef::Symbol(symbol_of(symbol)),
                symbol_offset,
                length,
                flags,
            )
        }
    })
}

unsafe fn broadcast_common(
    dpu_set: DpuSetT,
    sym: SymbolRef<'_>,
    off: u32,
    src: *const c_void,
    len: usize,
    flags: u32,
) -> R {
    let set = set_of(&dpu_set)?;
    let flags = xfer_flags(flags)?;
    if src.is_null() && len > 0 {
        return Err(null_buffer(len));
    }
    // SAFETY: the caller passes `len` readable bytes, valid until the transfer ran (for
    // DPU_XFER_ASYNC: until dpu_sync), as the SDK requires.
    unsafe { set.broadcast_raw(sym, off, src.cast(), len, flags.asynchronous) }?;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dpu_broadcast_to(
    dpu_set: DpuSetT,
    symbol_name: *const c_char,
    symbol_offset: u32,
    src: *const c_void,
    length: usize,
    flags: u32,
) -> DpuError {
    entry("dpu_broadcast_to", || {
        // SAFETY: C string from the caller.
        let name = unsafe { c_str(symbol_name, DPU_ERR_UNKNOWN_SYMBOL, "the symbol name") }?;
        // SAFETY: forwarded caller contract.
        unsafe {
            broadcast_common(
                dpu_set,
                SymbolRef::Name(name),
                symbol_offset,
                src,
                length,
                flags,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_broadcast_to_symbol(
    dpu_set: DpuSetT,
    symbol: DpuSymbolT,
    symbol_offset: u32,
    src: *const c_void,
    length: usize,
    flags: u32,
) -> DpuError {
    entry("dpu_broadcast_to_symbol", || {
        // SAFETY: forwarded caller contract.
        unsafe {
            broadcast_common(
                dpu_set,
                SymbolRef::Symbol(symbol_of(symbol)),
                symbol_offset,
                src,
                length,
                flags,
            )
        }
    })
}

/// Most bytes a scatter-gather transfer moves per DPU: its MRAM.
const SG_MAX_BYTES: usize = openpim_runtime::machine::map::MRAM_SIZE as usize;
/// Most blocks of one DPU in a scatter-gather transfer.
pub const SG_MAX_BLOCKS: usize = 1 << 20;

/// Scatter-gather transfer, executed synchronously: each DPU's blocks are gathered (or
/// scattered) around one contiguous transfer.
unsafe fn sg_common(
    dpu_set: DpuSetT,
    xfer: u32,
    sym: SymbolRef<'_>,
    off: u32,
    len: usize,
    get_block: *mut GetBlockT,
    flags: u32,
) -> R {
    let set = set_of(&dpu_set)?;
    xfer_direction(xfer)?;
    check_flags(
        flags,
        SG_XFER_FLAG_BITS,
        DPU_ERR_INVALID_MEMORY_TRANSFER,
        "the scatter-gather flags",
        "DPU_SG_XFER_DEFAULT (0), DPU_SG_XFER_ASYNC (2), DPU_SG_XFER_DISABLE_LENGTH_CHECK (4)",
    )?;
    if get_block.is_null() {
        return Err(fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            "get_block_info is NULL: pass the address of a get_block_t holding the block function",
        ));
    }
    // SAFETY: non-null pointer to the caller's get_block_t.
    let gb = unsafe { &*get_block };
    let f = gb.f.ok_or_else(|| {
        fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            "get_block_info->f (the block function) is NULL",
        )
    })?;
    let address = match sym {
        SymbolRef::Symbol(s) => s.address,
        SymbolRef::Name(n) => {
            set.program()
                .ok_or_else(|| openpim_runtime::Error::NoProgramLoaded("the set".into()))?
                .symbol(n)?
                .address
        }
    };
    if address & 0x8000_0000 != 0 || address & 0x0800_0000 == 0 {
        return Err(fail(
            DPU_ERR_SG_NOT_MRAM_SYMBOL,
            "scatter-gather transfers target MRAM symbols only",
        ));
    }
    let check_length = flags & 4 == 0;
    for (i, d) in set.dpus().into_iter().enumerate() {
        let mut blocks = Vec::new();
        let mut total = 0usize;
        for b in 0u32.. {
            let mut info = SgBlockInfo {
                addr: std::ptr::null_mut(),
                length: 0,
            };
            // SAFETY: calling the user's block function as the SDK does.
            if !unsafe { f(&mut info, i as u32, b, gb.args) } {
                break;
            }
            if info.addr.is_null() && info.length > 0 {
                return Err(null_buffer(info.length as usize));
            }
            total += info.length as usize;
            // Bounded before anything is allocated for them: a block function that never
            // says "no more" (or claims gigabytes) is an error, not an out-of-memory kill.
            if total > SG_MAX_BYTES {
                return Err(fail(
                    DPU_ERR_INVALID_MEMORY_TRANSFER,
                    format!("the blocks of DPU {i} hold more than {SG_MAX_BYTES} bytes (a DPU's MRAM): check the block function's lengths and the end of its blocks (return false)"),
                ));
            }
            if blocks.len() >= SG_MAX_BLOCKS {
                return Err(fail(
                    DPU_ERR_SG_TOO_MANY_BLOCKS,
                    format!("the block function gave more than {SG_MAX_BLOCKS} blocks for DPU {i}: it must return false after the last block"),
                ));
            }
            blocks.push(info);
        }
        if check_length && total != len {
            return Err(fail(
                DPU_ERR_SG_LENGTH_MISMATCH,
                format!("the blocks of DPU {i} hold {total} bytes, but the transfer length is {len} (or pass DPU_SG_XFER_DISABLE_LENGTH_CHECK)"),
            ));
        }
        let mut buf = vec![0u8; total];
        if xfer == 0 {
            let mut at = 0;
            for b in &blocks {
                // SAFETY: the block function promised `length` readable bytes at `addr`.
                let src = unsafe { std::slice::from_raw_parts(b.addr, b.length as usize) };
                buf[at..at + src.len()].copy_from_slice(src);
                at += src.len();
            }
            d.copy_to(sym, off, &buf)?;
        } else {
            d.copy_from(sym, off, &mut buf)?;
            let mut at = 0;
            for b in &blocks {
                // SAFETY: the block function promised `length` writable bytes at `addr`.
                let dst = unsafe { std::slice::from_raw_parts_mut(b.addr, b.length as usize) };
                dst.copy_from_slice(&buf[at..at + dst.len()]);
                at += dst.len();
            }
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dpu_push_sg_xfer(
    dpu_set: DpuSetT,
    xfer: u32,
    symbol_name: *const c_char,
    symbol_offset: u32,
    length: usize,
    get_block_info: *mut GetBlockT,
    flags: u32,
) -> DpuError {
    entry("dpu_push_sg_xfer", || {
        // SAFETY: C string from the caller.
        let name = unsafe { c_str(symbol_name, DPU_ERR_UNKNOWN_SYMBOL, "the symbol name") }?;
        // SAFETY: forwarded caller contract.
        unsafe {
            sg_common(
                dpu_set,
                xfer,
                SymbolRef::Name(name),
                symbol_offset,
                length,
                get_block_info,
                flags,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_push_sg_xfer_symbol(
    dpu_set: DpuSetT,
    xfer: u32,
    symbol: DpuSymbolT,
    symbol_offset: u32,
    length: usize,
    get_block_info: *mut GetBlockT,
    flags: u32,
) -> DpuError {
    entry("dpu_push_sg_xfer_symbol", || {
        let sym = SymbolRef::Symbol(symbol_of(symbol));
        // SAFETY: forwarded caller contract.
        unsafe {
            sg_common(
                dpu_set,
                xfer,
                sym,
                symbol_offset,
                length,
                get_block_info,
                flags,
            )
        }
    })
}

// ----- callbacks and logs -----------------------------------------------------------------

/// The C set and user data a callback closes over.
#[derive(Clone, Copy)]
struct CallbackEnv {
    set: DpuSetT,
    args: *mut c_void,
}

// SAFETY: the set's pointers and the user's args are only passed back to the user's
// callback; the SDK lets callbacks run on other threads.
unsafe impl Send for CallbackEnv {}
// SAFETY: see Send; the environment is read-only.
unsafe impl Sync for CallbackEnv {}

impl CallbackEnv {
    fn scope_set(&self, scope: CallbackScope) -> (DpuSetT, u32) {
        match scope {
            CallbackScope::Whole => (self.set, 0),
            CallbackScope::Rank(i) if self.set.kind == DPU_SET_RANKS => {
                // SAFETY: kind RANKS: `list` is active; `i` < nr_ranks (the runtime calls once
                // per rank of this set).
                let ranks = unsafe { self.set.u.list.ranks.add(i as usize) };
                (DpuSetT::ranks(1, ranks), i)
            }
            CallbackScope::Rank(i) => (self.set, i),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dpu_callback(
    dpu_set: DpuSetT,
    callback: CallbackFn,
    args: *mut c_void,
    flags: u32,
) -> DpuError {
    entry("dpu_callback", || {
        let set = set_of(&dpu_set)?;
        let cb = callback.ok_or_else(|| {
            fail(
                DPU_ERR_INVALID_LAUNCH_POLICY,
                "the callback function is NULL: pass the function dpu_callback should run",
            )
        })?;
        check_flags(
            flags,
            CALLBACK_FLAG_BITS,
            DPU_ERR_INVALID_LAUNCH_POLICY,
            "the callback flags",
            "DPU_CALLBACK_DEFAULT (0), DPU_CALLBACK_ASYNC (1), DPU_CALLBACK_NONBLOCKING (2), DPU_CALLBACK_SINGLE_CALL (4), DPU_CALLBACK_PARALLEL (8)",
        )?;
        let env = CallbackEnv { set: dpu_set, args };
        let closure: Callback = Arc::new(move |scope| {
            let (s, i) = env.scope_set(scope);
            // SAFETY: calling the user's callback with the set it registered for.
            let rc = unsafe { cb(s, i, env.args) };
            if rc == DPU_OK {
                Ok(())
            } else {
                Err(rc)
            }
        });
        let flags = CallbackFlags {
            asynchronous: flags & 1 != 0,
            nonblocking: flags & 2 != 0,
            single_call: flags & 4 != 0,
            parallel: flags & 8 != 0,
        };
        set.callback(closure, flags)?;
        Ok(())
    })
}

/// Writes a DPU's printf output of its last launch to `stream`; `dpu_log_read` (not
/// `dpulog_read_for_dpu`) puts the SDK's `=== DPU#0x<id> ===` header line before it.
unsafe fn write_log(set: &DpuSet, stream: *mut libc::FILE, header: bool) -> R {
    if stream.is_null() {
        return Err(fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            "the FILE * stream is NULL: pass an open stream (stdout, or one from fopen)",
        ));
    }
    let mut log = Vec::new();
    if header {
        let (rank, index) = set.single_dpu()?;
        let id = management::sdk_dpu_id(rank, index);
        log.extend_from_slice(format!("=== DPU#0x{id:x} ===\n").as_bytes());
    }
    // (A log that cannot be shown fails after the header, as the SDK's does.)
    let text = set.log();
    if let Ok(text) = &text {
        log.extend_from_slice(text);
    }
    if !log.is_empty() {
        // SAFETY: `stream` is the caller's open FILE*; we write `log.len()` bytes of `log`.
        let n = unsafe { libc::fwrite(log.as_ptr().cast(), 1, log.len(), stream) };
        if n != log.len() {
            return Err(fail(
                DPU_ERR_SYSTEM,
                "writing the DPU log to the stream failed",
            ));
        }
    }
    text?;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dpu_log_read(set: DpuSetT, stream: *mut libc::FILE) -> DpuError {
    entry("dpu_log_read", || {
        let set = set_of(&set)?;
        // SAFETY: forwarded caller contract.
        unsafe { write_log(&set, stream, true) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpulog_read_for_dpu(dpu: *mut CDpu, output: *mut libc::FILE) -> DpuError {
    entry("dpulog_read_for_dpu", || {
        let set = set_of(&DpuSetT::dpu(dpu))?;
        // SAFETY: forwarded caller contract.
        unsafe { write_log(&set, output, false) }
    })
}

// ----- errors, profiles, handles ------------------------------------------------------------

#[no_mangle]
pub extern "C" fn dpu_error_to_string(status: DpuError) -> *mut c_char {
    entry_value("dpu_error_to_string", std::ptr::null_mut(), || {
        let s = errors::describe(status);
        // SAFETY: malloc of len+1 bytes (checked for NULL), filled with the string and a NUL;
        // the caller frees it with free().
        unsafe {
            let p = libc::malloc(s.len() + 1).cast::<u8>();
            if p.is_null() {
                return std::ptr::null_mut();
            }
            std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
            *p.add(s.len()) = 0;
            p.cast()
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_get_profile_description(
    profile: *const c_char,
    description: *mut *mut CDescription,
) -> DpuError {
    entry("dpu_get_profile_description", || {
        out_ptr(description, "description (a dpu_description_t *)")?;
        let profile = if profile.is_null() {
            ""
        } else {
            // SAFETY: C string from the caller.
            unsafe { c_str(profile, DPU_ERR_INVALID_PROFILE, "the profile") }?
        };
        let machine = openpim_runtime::machine::MachineConfig::from_profile_string(profile)
            .map_err(openpim_runtime::Error::from)?;
        // The SDK has no function to free a description: it lives as long as the process,
        // one per distinct profile (kept here, so a program asking again and again does not
        // grow the process, and leak checkers see it reachable: tests/sanitizers/run.sh).
        static DESCRIPTIONS: Mutex<Vec<(String, Box<CDescription>)>> = Mutex::new(Vec::new());
        let mut known = DESCRIPTIONS.lock().unwrap_or_else(|e| e.into_inner());
        let d = match known.iter().find(|(p, _)| p == profile) {
            Some((_, d)) => &**d as *const CDescription,
            None => {
                let text = CString::new(machine.describe()).unwrap_or_default();
                let d = Box::new(CDescription { machine, text });
                let p = &*d as *const CDescription;
                known.push((profile.to_string(), d));
                p
            }
        };
        // SAFETY: checked non-null, caller-owned.
        unsafe { description.write(d.cast_mut()) };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn dpu_from_set(dpu_set: DpuSetT) -> *mut CDpu {
    entry_value("dpu_from_set", std::ptr::null_mut(), || {
        if dpu_set.kind != DPU_SET_DPU {
            return std::ptr::null_mut();
        }
        // SAFETY: kind DPU: `dpu` is the active member; validated below.
        let p = unsafe { dpu_set.u.dpu };
        dpu_ref(p).map(|_| p).unwrap_or(std::ptr::null_mut())
    })
}

#[no_mangle]
pub extern "C" fn dpu_rank_from_set(dpu_set: DpuSetT) -> *mut CRank {
    entry_value(
        "dpu_rank_from_set",
        std::ptr::null_mut(),
        || match c_ranks(&dpu_set) {
            Ok((ranks, dpu)) if ranks.len() == 1 || dpu.is_some() => {
                (ranks[0] as *const CRank).cast_mut()
            }
            _ => std::ptr::null_mut(),
        },
    )
}

// ----- iterators --------------------------------------------------------------------------

fn rank_at(set: &DpuSetT, i: u32) -> Option<DpuSetT> {
    if set.kind != DPU_SET_RANKS {
        return None;
    }
    // SAFETY: kind RANKS: `list` is active.
    let list = unsafe { set.u.list };
    if i >= list.nr_ranks || list.ranks.is_null() {
        return None;
    }
    // SAFETY: i < nr_ranks: inside the caller's rank pointer array.
    Some(DpuSetT::ranks(1, unsafe { list.ranks.add(i as usize) }))
}

#[no_mangle]
pub unsafe extern "C" fn dpu_set_rank_iterator_from(set: *mut DpuSetT) -> RankIterator {
    entry_value(
        "dpu_set_rank_iterator_from",
        RankIterator {
            set: DpuSetT::empty(),
            count: 0,
            has_next: false,
            next: DpuSetT::empty(),
        },
        || {
            let set = if set.is_null() {
                DpuSetT::empty()
            } else {
                // SAFETY: non-null pointer to the caller's set.
                unsafe { *set }
            };
            let (has_next, next) = match set.kind {
                DPU_SET_DPU => (true, set),
                _ => match rank_at(&set, 0) {
                    Some(r) => (true, r),
                    None => (false, DpuSetT::empty()),
                },
            };
            RankIterator {
                set,
                count: 0,
                has_next,
                next,
            }
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn dpu_set_rank_iterator_next(iterator: *mut RankIterator) {
    entry_value("dpu_set_rank_iterator_next", (), || {
        if iterator.is_null() {
            return;
        }
        // SAFETY: non-null pointer to the caller's iterator.
        let it = unsafe { &mut *iterator };
        if !it.has_next {
            return;
        }
        it.count += 1;
        match rank_at(&it.set, it.count) {
            Some(r) => it.next = r,
            None => it.has_next = false,
        }
    })
}

/// Moves a DPU iterator to the first DPU of the current or a later rank.
fn settle_on_rank(it: &mut DpuIterator) {
    while it.rank_iterator.has_next {
        let rank_set = it.rank_iterator.next;
        // Checked against the registry: the set may have been freed.
        if let Ok((ranks, None)) = c_ranks(&rank_set) {
            let Some(crank) = ranks.first() else { break };
            if let Some(first) = crank.dpus.first() {
                it.rank = rank_set;
                it.next = DpuSetT::dpu((first as *const CDpu).cast_mut());
                it.has_next = true;
                return;
            }
        } else {
            break;
        }
        // SAFETY: a valid pointer to our own iterator.
        unsafe { dpu_set_rank_iterator_next(&mut it.rank_iterator) };
    }
    it.has_next = false;
}

#[no_mangle]
pub unsafe extern "C" fn dpu_set_dpu_iterator_from(set: *mut DpuSetT) -> DpuIterator {
    let empty = DpuIterator {
        rank_iterator: RankIterator {
            set: DpuSetT::empty(),
            count: 0,
            has_next: false,
            next: DpuSetT::empty(),
        },
        rank: DpuSetT::empty(),
        count: 0,
        has_next: false,
        next: DpuSetT::empty(),
    };
    entry_value("dpu_set_dpu_iterator_from", empty, || {
        // SAFETY: forwarded caller contract.
        let ri = unsafe { dpu_set_rank_iterator_from(set) };
        let mut it = DpuIterator {
            rank_iterator: ri,
            ..empty
        };
        if ri.set.kind == DPU_SET_DPU {
            // SAFETY: kind DPU: `dpu` is active.
            let ok = dpu_ref(unsafe { ri.set.u.dpu }).is_ok();
            it.rank = ri.set;
            it.next = ri.set;
            it.has_next = ok;
        } else {
            settle_on_rank(&mut it);
        }
        it
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_set_dpu_iterator_next(iterator: *mut DpuIterator) {
    entry_value("dpu_set_dpu_iterator_next", (), || {
        // SAFETY: forwarded caller contract.
        unsafe { step_dpu_iterator(iterator, |i, _| Some(i + 1)) }
    })
}

/// Advances a DPU iterator: to the DPU `next(index, DPUs of the rank)` of the current rank
/// when there is one, else to the next rank's first DPU.
///
/// # Safety
/// `iterator` is NULL or an iterator from `dpu_set_dpu_iterator_from`.
pub(crate) unsafe fn step_dpu_iterator(
    iterator: *mut DpuIterator,
    next: impl FnOnce(usize, usize) -> Option<usize>,
) {
    if iterator.is_null() {
        return;
    }
    // SAFETY: non-null pointer to the caller's iterator.
    let it = unsafe { &mut *iterator };
    if !it.has_next {
        return;
    }
    it.count += 1;
    if it.rank_iterator.set.kind == DPU_SET_DPU {
        it.has_next = false;
        return;
    }
    // SAFETY: `next` is a DPU set made by this iterator; validated.
    let Ok(d) = dpu_ref(unsafe { it.next.u.dpu }) else {
        it.has_next = false;
        return;
    };
    let Ok(crank) = rank_ref(d.crank) else {
        it.has_next = false;
        return;
    };
    if let Some(n) = next(d.index as usize, crank.dpus.len()).and_then(|n| crank.dpus.get(n)) {
        it.next = DpuSetT::dpu((n as *const CDpu).cast_mut());
        return;
    }
    // SAFETY: a valid pointer to our own iterator.
    unsafe { dpu_set_rank_iterator_next(&mut it.rank_iterator) };
    settle_on_rank(it);
}
