//! Checkpoint and restore of the DPUs of a set, through the ordinary transfer paths (so they
//! cost the bus time the hardware would): one DPU as the SDK's `dpu_checkpoint_save` /
//! `dpu_checkpoint_restore` do, and a whole set to and from a checkpoint file. What is saved
//! and the file's format are the lower layer's ([`crate::checkpoint`]); this is the part that
//! needs a [`DpuSet`], kept in the SDK layer so that the format stays below the execution
//! layer (which writes the same files when the daemon suspends a rank).

use std::path::Path;

use openpim_machine::map;

use crate::checkpoint::file::{self, Summary};
use crate::checkpoint::{DpuSnapshot, Parts};
use crate::error::{Error, Result};
use crate::program::Symbol;
use crate::sdk::set::DpuSet;
use crate::xfer::SymbolRef;

fn whole(base: u32, size: u32) -> SymbolRef<'static> {
    SymbolRef::Symbol(Symbol {
        address: base,
        size,
    })
}

/// The whole of IRAM, WRAM and MRAM as raw symbols.
fn iram_symbol() -> SymbolRef<'static> {
    whole(map::IRAM_BASE, map::IRAM_SIZE)
}
fn wram_symbol() -> SymbolRef<'static> {
    whole(map::WRAM_BASE, map::WRAM_SIZE)
}
fn mram_symbol() -> SymbolRef<'static> {
    whole(map::MRAM_BASE, map::MRAM_SIZE)
}

fn one_dpu(set: &DpuSet, what: &str) -> Result<()> {
    if set.nr_dpus() != 1 {
        return Err(Error::InvalidDpuSet(format!(
            "{what} works on one DPU, but the set has {} DPUs; use DPU_FOREACH (or openpim_checkpoint_save_file for a whole set)",
            set.nr_dpus()
        )));
    }
    Ok(())
}

/// Saves the parts of one DPU's state (waits for the DPU's queued work first).
pub fn snapshot(set: &DpuSet, parts: Parts) -> Result<DpuSnapshot> {
    one_dpu(set, "dpu_checkpoint_save")?;
    set.sync()?;
    let mut s = DpuSnapshot::default();
    if parts.iram {
        let mut iram = vec![0u8; map::IRAM_SIZE as usize];
        if set.program().is_some() {
            set.copy_from(iram_symbol(), 0, &mut iram)?;
        }
        s.iram = Some(iram);
    }
    if parts.wram {
        let mut wram = vec![0u8; map::WRAM_SIZE as usize];
        set.copy_from(wram_symbol(), 0, &mut wram)?;
        s.wram = Some(wram);
    }
    if parts.mram {
        let mut mram = vec![0u8; map::MRAM_SIZE as usize];
        set.copy_from(mram_symbol(), 0, &mut mram)?;
        s.mram = Some(mram);
    }
    if parts.internal {
        s.faulted = Some(set.status().1);
    }
    Ok(s)
}

/// Puts the parts of a snapshot back into one DPU. IRAM needs the program loaded (the code
/// is checked against it and patched where it differs); MRAM is written only where it differs
/// from what the DPU holds, so pages that are zero on both sides stay unwritten.
pub fn restore(set: &DpuSet, parts: Parts, s: &DpuSnapshot) -> Result<()> {
    one_dpu(set, "dpu_checkpoint_restore")?;
    set.sync()?;
    if parts.iram {
        if let Some(iram) = &s.iram {
            restore_iram(set, iram)?;
        }
    }
    if parts.wram {
        if let Some(wram) = &s.wram {
            set.copy_to(wram_symbol(), 0, wram)?;
        }
    }
    if parts.mram {
        if let Some(mram) = &s.mram {
            write_differences(set, mram)?;
        }
    }
    Ok(())
}

/// Writes the IRAM image where it differs from the loaded program's code.
fn restore_iram(set: &DpuSet, iram: &[u8]) -> Result<()> {
    if iram.iter().all(|b| *b == 0) {
        return Ok(()); // saved without a program
    }
    if set.program().is_none() {
        return Err(Error::NoProgramLoaded(
            "restoring a checkpoint's IRAM: load the DPU program (dpu_load) first, then restore"
                .into(),
        ));
    }
    let mut now = vec![0u8; iram.len()];
    set.copy_from(iram_symbol(), 0, &mut now)?;
    // Patch only the instructions that differ (8-byte aligned, as IRAM transfers must be),
    // so the program's code keeps its length.
    let first = now.iter().zip(iram).position(|(a, b)| a != b);
    let last = now.iter().zip(iram).rposition(|(a, b)| a != b);
    if let (Some(first), Some(last)) = (first, last) {
        let (a, b) = (first / 8 * 8, (last / 8 + 1) * 8);
        set.copy_to(iram_symbol(), a as u32, &iram[a..b])?;
    }
    Ok(())
}

/// Makes the DPU's MRAM equal to `want`, writing only the runs of pages that differ.
fn write_differences(set: &DpuSet, want: &[u8]) -> Result<()> {
    let page = openpim_machine::memory::region::page_size();
    let mut now = vec![0u8; want.len()];
    set.copy_from(mram_symbol(), 0, &mut now)?;
    let pages = want.len().div_ceil(page);
    let differs = |p: usize| {
        let r = p * page..((p + 1) * page).min(want.len());
        now[r.clone()] != want[r]
    };
    let mut p = 0;
    while p < pages {
        if !differs(p) {
            p += 1;
            continue;
        }
        let start = p;
        while p < pages && differs(p) {
            p += 1;
        }
        let (a, b) = (start * page, (p * page).min(want.len()));
        set.copy_to(mram_symbol(), a as u32, &want[a..b])?;
    }
    Ok(())
}

/// Saves every DPU of the set (IRAM, WRAM, MRAM, fault flag) to `path`.
pub fn save_file(set: &DpuSet, path: &Path) -> Result<Summary> {
    set.sync()?;
    let hardware = set
        .machine()
        .map(|m| m.hardware.name.clone())
        .unwrap_or_default();
    let mut w = file::Writer::create(path, set.nr_dpus(), &hardware)?;
    let mut mram = vec![0u8; map::MRAM_SIZE as usize];
    let mut iram = vec![0u8; map::IRAM_SIZE as usize];
    let mut wram = vec![0u8; map::WRAM_SIZE as usize];
    for dpu in set.dpus() {
        iram.fill(0);
        if dpu.program().is_some() {
            dpu.copy_from(iram_symbol(), 0, &mut iram)?;
        }
        dpu.copy_from(wram_symbol(), 0, &mut wram)?;
        dpu.copy_from(mram_symbol(), 0, &mut mram)?;
        w.dpu(dpu.status().1, &wram, &iram, &mram)?;
    }
    w.finish()
}

/// Restores every DPU of the set from `path` (same number of DPUs; any ranks). The whole
/// file is checked first: a damaged file changes nothing.
pub fn restore_file(set: &DpuSet, path: &Path) -> Result<Summary> {
    let summary = file::inspect(path)?;
    if summary.dpus != set.nr_dpus() {
        return Err(Error::Checkpoint(format!(
            "checkpoint file {} holds {} DPUs, the set has {}: restore into a set of the same size",
            path.display(),
            summary.dpus,
            set.nr_dpus()
        )));
    }
    set.sync()?;
    let dpus = set.dpus();
    let mut want = vec![0u8; map::MRAM_SIZE as usize];
    file::read(path, |k, rec| {
        let dpu = &dpus[k as usize];
        if !rec.iram.is_empty() {
            let mut iram = rec.iram;
            iram.resize(map::IRAM_SIZE as usize, 0);
            restore_iram(dpu, &iram)?;
        }
        let mut wram = rec.wram;
        wram.resize(map::WRAM_SIZE as usize, 0);
        dpu.copy_to(wram_symbol(), 0, &wram)?;
        want.fill(0);
        for (p, bytes) in &rec.pages {
            let at = *p as usize * file::PAGE;
            want[at..at + file::PAGE].copy_from_slice(bytes);
        }
        write_differences(dpu, &want)
    })?;
    Ok(summary)
}
