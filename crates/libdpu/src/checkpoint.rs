//! `<dpu_checkpoint.h>` (the SDK's single-DPU checkpoint API, source-compatible) and
//! `<openpim_checkpoint.h>` (a whole set to and from one file), over
//! `openpim_runtime::checkpoint`.
//!
//! Memory rules, as in the SDK: `dpu_checkpoint_save` fills a context the caller zeroed and
//! allocates (with `malloc`) what it holds; `dpu_checkpoint_free` frees it;
//! `dpu_checkpoint_serialize` allocates the buffer with `malloc` when `*serialized_context` is
//! NULL (the caller frees it) and otherwise needs exactly the size
//! `dpu_checkpoint_get_serialized_context_size` gives; `dpu_checkpoint_deserialize` allocates
//! like `save`.

use std::ffi::c_char;
use std::path::Path;

use openpim_machine::{crc32, map};
use openpim_runtime::checkpoint::{DpuSnapshot, Parts};
use openpim_runtime::sdk::checkpoint;

use crate::errors::{entry, entry_value, fail, Fail};
use crate::types::{err::*, DpuError, DpuSetT};

/// Hardware characteristics in a context (`info` of `struct dpu_context_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextInfo {
    pub nr_threads: u32,
    pub nr_registers: u32,
    pub nr_atomic_bits: u32,
    /// In instructions (8 bytes).
    pub iram_size: u16,
    /// In bytes.
    pub mram_size: u32,
    /// In 32-bit words.
    pub wram_size: u32,
}

/// `struct dpu_context_t` (layout of the SDK's `dpu_types.h`). The internal state is
/// OpenPIM's: a DPU at rest (between launches or stopped by a fault) has no running tasklet;
/// its registers, PCs and flags are the boot values; the fault flags say whether the last
/// launch faulted (OpenPIM does not tell the SDK's three fault kinds apart: `mem_fault`).
#[repr(C)]
#[derive(Debug)]
pub struct DpuContext {
    pub info: ContextInfo,
    pub iram: *mut u64,
    pub mram: *mut u8,
    pub wram: *mut u32,
    pub registers: *mut u32,
    pub pcs: *mut u16,
    pub atomic_register: *mut bool,
    pub zero_flags: *mut bool,
    pub carry_flags: *mut bool,
    pub nr_of_running_threads: u8,
    pub scheduling: *mut u8,
    pub bkp_fault: bool,
    pub dma_fault: bool,
    pub mem_fault: bool,
    pub bkp_fault_thread_index: u8,
    pub dma_fault_thread_index: u8,
    pub mem_fault_thread_index: u8,
    pub bkp_fault_id: u32,
}

/// Registers per tasklet of the emulated DPU (RV32I's 32).
const NR_REGISTERS: u32 = 32;
/// Tasklets (hardware threads).
const NR_THREADS: u32 = 24;

fn info() -> ContextInfo {
    ContextInfo {
        nr_threads: NR_THREADS,
        nr_registers: NR_REGISTERS,
        nr_atomic_bits: 256,
        iram_size: (map::IRAM_SIZE / 8) as u16,
        mram_size: map::MRAM_SIZE,
        wram_size: map::WRAM_SIZE / 4,
    }
}

/// A malloc'd copy of `bytes` (the caller frees it with `free`).
fn malloc_copy<T>(bytes: &[u8]) -> Result<*mut T, Fail> {
    // SAFETY: plain malloc of at least one byte; checked below.
    let p = unsafe { libc::malloc(bytes.len().max(1)) }.cast::<u8>();
    if p.is_null() {
        return Err(fail(
            DPU_ERR_SYSTEM,
            format!("cannot allocate {} bytes for the checkpoint", bytes.len()),
        ));
    }
    // SAFETY: p has bytes.len() writable bytes; the regions do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    Ok(p.cast())
}

/// The bytes behind a context pointer (NULL: None).
///
/// # Safety
/// A non-NULL `p` points to `len` readable bytes.
unsafe fn view<'a, T>(p: *const T, len: usize) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// Byte lengths of the context's arrays, from its `info`.
struct Lengths {
    iram: usize,
    mram: usize,
    wram: usize,
    registers: usize,
    pcs: usize,
    atomic: usize,
    threads: usize,
}

fn lengths(i: &ContextInfo) -> Lengths {
    Lengths {
        iram: usize::from(i.iram_size) * 8,
        mram: i.mram_size as usize,
        wram: i.wram_size as usize * 4,
        registers: (i.nr_threads * i.nr_registers) as usize * 4,
        pcs: i.nr_threads as usize * 2,
        atomic: i.nr_atomic_bits as usize,
        threads: i.nr_threads as usize,
    }
}

fn context_mut<'a>(context: *mut DpuContext) -> Result<&'a mut DpuContext, Fail> {
    if context.is_null() {
        return Err(fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            "context is NULL: pass the address of a zeroed struct dpu_context_t",
        ));
    }
    // SAFETY: non-null, and the caller passes a valid struct dpu_context_t (SDK contract).
    Ok(unsafe { &mut *context })
}

fn check_geometry(i: &ContextInfo) -> Result<(), Fail> {
    if *i != info() {
        return Err(fail(
            DPU_ERR_INVALID_MEMORY_TRANSFER,
            format!("the context describes another DPU ({i:?}); this one is {:?}: use a context saved from an OpenPIM DPU", info()),
        ));
    }
    Ok(())
}

/// Fills the internal-state arrays of a DPU at rest.
fn fill_internal(c: &mut DpuContext, faulted: bool) -> Result<(), Fail> {
    let l = lengths(&c.info);
    c.registers = malloc_copy(&vec![0u8; l.registers])?;
    c.pcs = malloc_copy(&vec![0u8; l.pcs])?;
    c.atomic_register = malloc_copy(&vec![0u8; l.atomic])?;
    c.zero_flags = malloc_copy(&vec![0u8; l.threads])?;
    c.carry_flags = malloc_copy(&vec![0u8; l.threads])?;
    c.scheduling = malloc_copy(&vec![0xffu8; l.threads])?;
    c.nr_of_running_threads = 0;
    c.bkp_fault = false;
    c.dma_fault = false;
    c.mem_fault = faulted;
    c.bkp_fault_thread_index = 0;
    c.dma_fault_thread_index = 0;
    c.mem_fault_thread_index = 0;
    c.bkp_fault_id = 0;
    Ok(())
}

/// `dpu_checkpoint_save`: the state of one DPU into a zeroed context.
///
/// # Safety
/// `context` points to a zeroed `struct dpu_context_t`.
#[no_mangle]
pub unsafe extern "C" fn dpu_checkpoint_save(
    set: DpuSetT,
    flags: u32,
    context: *mut DpuContext,
) -> DpuError {
    entry("dpu_checkpoint_save", || {
        let c = context_mut(context)?;
        let parts = Parts::from_flags(flags)?;
        let s = checkpoint::snapshot(&crate::set_of(&set)?, parts)?;
        c.info = info();
        if let Some(iram) = &s.iram {
            c.iram = malloc_copy(iram)?;
        }
        if let Some(mram) = &s.mram {
            c.mram = malloc_copy(mram)?;
        }
        if let Some(wram) = &s.wram {
            c.wram = malloc_copy(wram)?;
        }
        if let Some(faulted) = s.faulted {
            fill_internal(c, faulted)?;
        }
        Ok(())
    })
}

/// `dpu_checkpoint_restore`: puts the flagged parts of a context back into one DPU.
///
/// # Safety
/// `context` points to a `struct dpu_context_t` filled by `save` or `deserialize`.
#[no_mangle]
pub unsafe extern "C" fn dpu_checkpoint_restore(
    set: DpuSetT,
    flags: u32,
    context: *mut DpuContext,
) -> DpuError {
    entry("dpu_checkpoint_restore", || {
        let c = context_mut(context)?;
        let parts = Parts::from_flags(flags)?;
        check_geometry(&c.info)?;
        let l = lengths(&c.info);
        let need = |present: bool, what: &str| {
            if present {
                Ok(())
            } else {
                Err(fail(
                    DPU_ERR_INVALID_MEMORY_TRANSFER,
                    format!("DPU_CHECKPOINT_{what} is asked for but the context holds no {what} (save it with that flag)"),
                ))
            }
        };
        // SAFETY: the context's arrays have the lengths its info gives (SDK contract).
        let (iram, mram, wram) = unsafe {
            (
                view(c.iram, l.iram),
                view(c.mram, l.mram),
                view(c.wram, l.wram),
            )
        };
        if parts.iram {
            need(iram.is_some(), "IRAM")?;
        }
        if parts.mram {
            need(mram.is_some(), "MRAM")?;
        }
        if parts.wram {
            need(wram.is_some(), "WRAM")?;
        }
        let s = DpuSnapshot {
            iram: iram.map(<[u8]>::to_vec),
            wram: wram.map(<[u8]>::to_vec),
            mram: mram.map(<[u8]>::to_vec),
            faulted: None,
        };
        checkpoint::restore(&crate::set_of(&set)?, parts, &s)?;
        Ok(())
    })
}

const SERIAL_MAGIC: &[u8; 8] = b"OPIMCTX1";

/// What a serialized context holds, in order: magic, info (6 x u32), presence bits (u8),
/// the present arrays, the scalar internal state, CRC-32 of everything before it.
fn serialized_size(c: &DpuContext) -> usize {
    let l = lengths(&c.info);
    let mut n = SERIAL_MAGIC.len() + 6 * 4 + 1;
    if !c.iram.is_null() {
        n += l.iram;
    }
    if !c.mram.is_null() {
        n += l.mram;
    }
    if !c.wram.is_null() {
        n += l.wram;
    }
    if !c.registers.is_null() {
        n += l.registers + l.pcs + l.atomic + 3 * l.threads + 1 + 6 + 4;
    }
    n + 4
}

/// `dpu_checkpoint_get_serialized_context_size`.
///
/// # Safety
/// `context` is NULL or points to a `struct dpu_context_t`.
#[no_mangle]
pub unsafe extern "C" fn dpu_checkpoint_get_serialized_context_size(
    context: *mut DpuContext,
) -> u32 {
    entry_value("dpu_checkpoint_get_serialized_context_size", 0, || {
        if context.is_null() {
            return 0;
        }
        // SAFETY: non-null, a valid context (SDK contract).
        serialized_size(unsafe { &*context }) as u32
    })
}

fn serialize(c: &DpuContext) -> Vec<u8> {
    let l = lengths(&c.info);
    let mut out = Vec::with_capacity(serialized_size(c));
    out.extend_from_slice(SERIAL_MAGIC);
    let i = c.info;
    for v in [
        i.nr_threads,
        i.nr_registers,
        i.nr_atomic_bits,
        u32::from(i.iram_size),
        i.mram_size,
        i.wram_size,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let present = u8::from(!c.iram.is_null())
        | u8::from(!c.mram.is_null()) << 1
        | u8::from(!c.wram.is_null()) << 2
        | u8::from(!c.registers.is_null()) << 3;
    out.push(present);
    // SAFETY: every non-NULL array has the length the info gives (SDK contract).
    unsafe {
        for (p, len) in [
            (c.iram.cast::<u8>(), l.iram),
            (c.mram, l.mram),
            (c.wram.cast::<u8>(), l.wram),
        ] {
            if let Some(b) = view(p, len) {
                out.extend_from_slice(b);
            }
        }
        if !c.registers.is_null() {
            for (p, len) in [
                (c.registers.cast::<u8>(), l.registers),
                (c.pcs.cast::<u8>(), l.pcs),
                (c.atomic_register.cast::<u8>(), l.atomic),
                (c.zero_flags.cast::<u8>(), l.threads),
                (c.carry_flags.cast::<u8>(), l.threads),
                (c.scheduling, l.threads),
            ] {
                match view(p, len) {
                    Some(b) => out.extend_from_slice(b),
                    None => out.resize(out.len() + len, 0),
                }
            }
        }
    }
    if !c.registers.is_null() {
        out.push(c.nr_of_running_threads);
        out.extend_from_slice(&[
            u8::from(c.bkp_fault),
            u8::from(c.dma_fault),
            u8::from(c.mem_fault),
            c.bkp_fault_thread_index,
            c.dma_fault_thread_index,
            c.mem_fault_thread_index,
        ]);
        out.extend_from_slice(&c.bkp_fault_id.to_le_bytes());
    }
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// `dpu_checkpoint_serialize`.
///
/// # Safety
/// `context` points to a valid context; `serialized_context` and `serialized_context_size`
/// are valid pointers; a non-NULL `*serialized_context` has `*serialized_context_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn dpu_checkpoint_serialize(
    context: *mut DpuContext,
    serialized_context: *mut *mut u8,
    serialized_context_size: *mut u32,
) -> DpuError {
    entry("dpu_checkpoint_serialize", || {
        let c = context_mut(context)?;
        crate::out_ptr(serialized_context, "serialized_context (a uint8_t **)")?;
        crate::out_ptr(
            serialized_context_size,
            "serialized_context_size (a uint32_t *)",
        )?;
        let bytes = serialize(c);
        // SAFETY: both checked non-null, caller-owned.
        unsafe {
            let dst = *serialized_context;
            if dst.is_null() {
                *serialized_context = malloc_copy(&bytes)?;
            } else {
                let have = *serialized_context_size as usize;
                if have != bytes.len() {
                    return Err(fail(
                        DPU_ERR_INVALID_BUFFER_SIZE,
                        format!("the buffer has {have} bytes, the serialized context needs {} (dpu_checkpoint_get_serialized_context_size); or pass *serialized_context = NULL to have it allocated", bytes.len()),
                    ));
                }
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
            }
            *serialized_context_size = bytes.len() as u32;
        }
        Ok(())
    })
}

/// Reads what `serialize` wrote.
fn deserialize(bytes: &[u8], c: &mut DpuContext) -> Result<(), Fail> {
    let corrupt = |what: &str| {
        fail(
            DPU_ERR_INVALID_BUFFER_SIZE,
            format!("the serialized context is damaged or not one: {what}"),
        )
    };
    if bytes.len() < SERIAL_MAGIC.len() + 6 * 4 + 1 + 4 || &bytes[..8] != SERIAL_MAGIC {
        return Err(corrupt("no OPIMCTX1 header"));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 4);
    if crc32(body) != u32::from_le_bytes(sum.try_into().expect("4 bytes")) {
        return Err(corrupt("its checksum does not match"));
    }
    let u = |k: usize| {
        let at = 8 + 4 * k;
        u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"))
    };
    let i = ContextInfo {
        nr_threads: u(0),
        nr_registers: u(1),
        nr_atomic_bits: u(2),
        iram_size: u(3) as u16,
        mram_size: u(4),
        wram_size: u(5),
    };
    if i != info() {
        return Err(corrupt("it describes another DPU"));
    }
    let present = body[32];
    let l = lengths(&i);
    let mut at = 33;
    let mut next = |len: usize| -> Result<&[u8], Fail> {
        let s = body.get(at..at + len).ok_or_else(|| corrupt("truncated"))?;
        at += len;
        Ok(s)
    };
    c.info = i;
    if present & 1 != 0 {
        c.iram = malloc_copy(next(l.iram)?)?;
    }
    if present & 2 != 0 {
        c.mram = malloc_copy(next(l.mram)?)?;
    }
    if present & 4 != 0 {
        c.wram = malloc_copy(next(l.wram)?)?;
    }
    if present & 8 != 0 {
        c.registers = malloc_copy(next(l.registers)?)?;
        c.pcs = malloc_copy(next(l.pcs)?)?;
        c.atomic_register = malloc_copy(next(l.atomic)?)?;
        c.zero_flags = malloc_copy(next(l.threads)?)?;
        c.carry_flags = malloc_copy(next(l.threads)?)?;
        c.scheduling = malloc_copy(next(l.threads)?)?;
        let s = next(11)?;
        c.nr_of_running_threads = s[0];
        c.bkp_fault = s[1] != 0;
        c.dma_fault = s[2] != 0;
        c.mem_fault = s[3] != 0;
        c.bkp_fault_thread_index = s[4];
        c.dma_fault_thread_index = s[5];
        c.mem_fault_thread_index = s[6];
        c.bkp_fault_id = u32::from_le_bytes(s[7..11].try_into().expect("4 bytes"));
    }
    if at != body.len() {
        return Err(corrupt("bytes left over"));
    }
    Ok(())
}

/// `dpu_checkpoint_deserialize`.
///
/// # Safety
/// `serialized_context` has `serialized_context_size` readable bytes; `context` points to a
/// zeroed `struct dpu_context_t`.
#[no_mangle]
pub unsafe extern "C" fn dpu_checkpoint_deserialize(
    serialized_context: *const u8,
    serialized_context_size: u32,
    context: *mut DpuContext,
) -> DpuError {
    entry("dpu_checkpoint_deserialize", || {
        let c = context_mut(context)?;
        // SAFETY: the caller's contract (checked non-null).
        let bytes = unsafe { view(serialized_context, serialized_context_size as usize) }
            .ok_or_else(|| {
                fail(
                    DPU_ERR_INVALID_MEMORY_TRANSFER,
                    "serialized_context is NULL",
                )
            })?;
        deserialize(bytes, c)
    })
}

/// `dpu_checkpoint_free`: frees what a context holds and sets its pointers to NULL.
///
/// # Safety
/// `context` points to a context whose non-NULL pointers were allocated by this library.
#[no_mangle]
pub unsafe extern "C" fn dpu_checkpoint_free(context: *mut DpuContext) -> DpuError {
    entry("dpu_checkpoint_free", || {
        let c = context_mut(context)?;
        fn release<T>(p: &mut *mut T) {
            // SAFETY: allocated with malloc by this library (the function's contract), or NULL.
            unsafe { libc::free(p.cast()) };
            *p = std::ptr::null_mut();
        }
        release(&mut c.iram);
        release(&mut c.mram);
        release(&mut c.wram);
        release(&mut c.registers);
        release(&mut c.pcs);
        release(&mut c.atomic_register);
        release(&mut c.zero_flags);
        release(&mut c.carry_flags);
        release(&mut c.scheduling);
        Ok(())
    })
}

/// `openpim_checkpoint_save_file`: every DPU of the set into one file.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn openpim_checkpoint_save_file(
    set: DpuSetT,
    path: *const c_char,
) -> DpuError {
    entry("openpim_checkpoint_save_file", || {
        // SAFETY: the caller's contract.
        let path = unsafe { crate::c_str(path, DPU_ERR_INVALID_MEMORY_TRANSFER, "path") }?;
        checkpoint::save_file(&crate::set_of(&set)?, Path::new(path))?;
        Ok(())
    })
}

/// `openpim_checkpoint_restore_file`: every DPU of the set from one file (same DPU count).
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn openpim_checkpoint_restore_file(
    set: DpuSetT,
    path: *const c_char,
) -> DpuError {
    entry("openpim_checkpoint_restore_file", || {
        // SAFETY: the caller's contract.
        let path = unsafe { crate::c_str(path, DPU_ERR_INVALID_MEMORY_TRANSFER, "path") }?;
        checkpoint::restore_file(&crate::set_of(&set)?, Path::new(path))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn context_layout_is_the_sdk_headers() {
        // The same figures tests/headers/layout.c checks on the C side.
        assert_eq!(size_of::<DpuContext>(), 120);
        assert_eq!(offset_of!(DpuContext, iram), 24);
        assert_eq!(offset_of!(DpuContext, scheduling), 96);
        assert_eq!(offset_of!(DpuContext, mem_fault), 106);
        assert_eq!(offset_of!(DpuContext, bkp_fault_id), 112);
    }
}
