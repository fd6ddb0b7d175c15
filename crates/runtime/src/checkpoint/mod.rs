//! Checkpoint and restore of DPUs: what a DPU holds between launches (IRAM, WRAM, MRAM and
//! whether its last launch faulted), taken through the ordinary transfer paths (so it costs
//! the bus time the hardware would) and put back the same way.
//!
//! A DPU of OpenPIM has no state between launches beyond its memories: every launch boots its
//! tasklets from the program's entry point, so the registers, program counters and tasklet
//! states of the SDK's `dpu_context_t` are those of a DPU at rest, and restoring memories is
//! enough for the next launch to run exactly as it would have (same results, same cycles).
//!
//! - [`snapshot`] / [`restore`]: one DPU, what the SDK's `dpu_checkpoint_save` /
//!   `dpu_checkpoint_restore` do;
//! - [`file`]: a whole set in one file (pages never written are not stored, pages equal to
//!   the same page of an earlier DPU are stored once), with checksums.

pub mod file;

use openpim_machine::map;

use crate::error::{Error, Result};
use crate::program::Symbol;
use crate::sdk::set::DpuSet;
use crate::xfer::SymbolRef;

/// What to save or restore (the SDK's `dpu_checkpoint_flags_t` bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    pub internal: bool,
    pub iram: bool,
    pub mram: bool,
    pub wram: bool,
}

impl Parts {
    /// Everything.
    pub const ALL: Parts = Parts {
        internal: true,
        iram: true,
        mram: true,
        wram: true,
    };

    /// From the SDK's flag bits (INTERNAL 0x1, IRAM 0x2, MRAM 0x8, WRAM 0x10); other bits are
    /// an error naming them.
    pub fn from_flags(flags: u32) -> Result<Parts> {
        const KNOWN: u32 = 0x1 | 0x2 | 0x8 | 0x10;
        if flags & !KNOWN != 0 {
            return Err(Error::InvalidDpuSet(format!(
                "unknown checkpoint flags {:#x}: use DPU_CHECKPOINT_INTERNAL, _IRAM, _MRAM, _WRAM or DPU_CHECKPOINT_ALL",
                flags & !KNOWN
            )));
        }
        Ok(Parts {
            internal: flags & 0x1 != 0,
            iram: flags & 0x2 != 0,
            mram: flags & 0x8 != 0,
            wram: flags & 0x10 != 0,
        })
    }
}

/// One DPU at rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DpuSnapshot {
    /// The program's code as IRAM holds it (`IRAM_SIZE` bytes; zero past the code).
    pub iram: Option<Vec<u8>>,
    /// All of WRAM.
    pub wram: Option<Vec<u8>>,
    /// All of MRAM.
    pub mram: Option<Vec<u8>>,
    /// Internal state: whether the last launch faulted (nothing else survives a launch).
    pub faulted: Option<bool>,
}

fn whole(base: u32, size: u32) -> SymbolRef<'static> {
    SymbolRef::Symbol(Symbol {
        address: base,
        size,
    })
}

/// The whole of IRAM, WRAM and MRAM as raw symbols.
pub(crate) fn iram_symbol() -> SymbolRef<'static> {
    whole(map::IRAM_BASE, map::IRAM_SIZE)
}
pub(crate) fn wram_symbol() -> SymbolRef<'static> {
    whole(map::WRAM_BASE, map::WRAM_SIZE)
}
pub(crate) fn mram_symbol() -> SymbolRef<'static> {
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
pub(crate) fn restore_iram(set: &DpuSet, iram: &[u8]) -> Result<()> {
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
pub(crate) fn write_differences(set: &DpuSet, want: &[u8]) -> Result<()> {
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
