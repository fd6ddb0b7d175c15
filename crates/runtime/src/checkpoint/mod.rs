//! What a DPU holds between launches (IRAM, WRAM, MRAM and whether its last launch faulted),
//! and the checkpoint file that holds a whole set of them.
//!
//! A DPU of OpenPIM has no state between launches beyond its memories: every launch boots its
//! tasklets from the program's entry point, so the registers, program counters and tasklet
//! states of the SDK's `dpu_context_t` are those of a DPU at rest, and restoring memories is
//! enough for the next launch to run exactly as it would have (same results, same cycles).
//!
//! - [`Parts`] / [`DpuSnapshot`]: what the SDK's `dpu_checkpoint_save` /
//!   `dpu_checkpoint_restore` save and put back for one DPU;
//! - [`file`]: a whole set in one file (pages never written are not stored, pages equal to
//!   the same page of an earlier DPU are stored once), with checksums.
//!
//! Taking and restoring them through a set's transfers is the SDK layer's part
//! (`sdk::checkpoint`); this module needs no set, so the execution layer can write the same
//! files (the daemon suspending a rank) without depending on the SDK layer.

pub mod file;

use crate::error::{Error, Result};

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
