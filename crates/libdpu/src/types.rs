//! `repr(C)` mirrors of the SDK's public types (`sdk/include/dpu_types.h`, `dpu.h`,
//! `dpu_error.h`). C enums are passed as `u32` so that no value coming from C can be an
//! invalid Rust enum.

use std::ffi::c_char;

use crate::objects::{CDpu, CRank};

/// `dpu_error_t`.
pub type DpuError = u32;

/// The `dpu_error_t` values, sequential from 0 as in `dpu_error.h`.
#[allow(missing_docs)]
pub mod err {
    use super::DpuError;
    pub const DPU_OK: DpuError = 0;
    pub const DPU_ERR_INTERNAL: DpuError = 1;
    pub const DPU_ERR_SYSTEM: DpuError = 2;
    pub const DPU_ERR_DRIVER: DpuError = 3;
    pub const DPU_ERR_ALLOCATION: DpuError = 4;
    pub const DPU_ERR_INVALID_DPU_SET: DpuError = 5;
    pub const DPU_ERR_INVALID_THREAD_ID: DpuError = 6;
    pub const DPU_ERR_INVALID_NOTIFY_ID: DpuError = 7;
    pub const DPU_ERR_INVALID_WRAM_ACCESS: DpuError = 8;
    pub const DPU_ERR_INVALID_IRAM_ACCESS: DpuError = 9;
    pub const DPU_ERR_INVALID_MRAM_ACCESS: DpuError = 10;
    pub const DPU_ERR_INVALID_SYMBOL_ACCESS: DpuError = 11;
    pub const DPU_ERR_MRAM_BUSY: DpuError = 12;
    pub const DPU_ERR_TRANSFER_ALREADY_SET: DpuError = 13;
    pub const DPU_ERR_NO_PROGRAM_LOADED: DpuError = 14;
    pub const DPU_ERR_DIFFERENT_DPU_PROGRAMS: DpuError = 15;
    pub const DPU_ERR_CORRUPTED_MEMORY: DpuError = 16;
    pub const DPU_ERR_DPU_DISABLED: DpuError = 17;
    pub const DPU_ERR_DPU_ALREADY_RUNNING: DpuError = 18;
    pub const DPU_ERR_INVALID_MEMORY_TRANSFER: DpuError = 19;
    pub const DPU_ERR_INVALID_LAUNCH_POLICY: DpuError = 20;
    pub const DPU_ERR_DPU_FAULT: DpuError = 21;
    pub const DPU_ERR_ELF_INVALID_FILE: DpuError = 22;
    pub const DPU_ERR_ELF_NO_SUCH_FILE: DpuError = 23;
    pub const DPU_ERR_ELF_NO_SUCH_SECTION: DpuError = 24;
    pub const DPU_ERR_TIMEOUT: DpuError = 25;
    pub const DPU_ERR_INVALID_PROFILE: DpuError = 26;
    pub const DPU_ERR_UNKNOWN_SYMBOL: DpuError = 27;
    pub const DPU_ERR_LOG_FORMAT: DpuError = 28;
    pub const DPU_ERR_LOG_CONTEXT_MISSING: DpuError = 29;
    pub const DPU_ERR_LOG_BUFFER_TOO_SMALL: DpuError = 30;
    pub const DPU_ERR_VPD_INVALID_FILE: DpuError = 31;
    pub const DPU_ERR_VPD_NO_REPAIR: DpuError = 32;
    pub const DPU_ERR_NO_THREAD_PER_RANK: DpuError = 33;
    pub const DPU_ERR_INVALID_BUFFER_SIZE: DpuError = 34;
    pub const DPU_ERR_NONBLOCKING_SYNC_CALLBACK: DpuError = 35;
    pub const DPU_ERR_TOO_MANY_TASKLETS: DpuError = 36;
    pub const DPU_ERR_SG_TOO_MANY_BLOCKS: DpuError = 37;
    pub const DPU_ERR_SG_LENGTH_MISMATCH: DpuError = 38;
    pub const DPU_ERR_SG_NOT_ACTIVATED: DpuError = 39;
    pub const DPU_ERR_SG_NOT_MRAM_SYMBOL: DpuError = 40;
    pub const DPU_ERR_ASYNC_JOBS: DpuError = 1 << 31;
}

/// `dpu_set_kind_t`.
pub const DPU_SET_RANKS: u32 = 0;
/// `dpu_set_kind_t`.
pub const DPU_SET_DPU: u32 = 1;

/// The `list` member of `struct dpu_set_t`'s union.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RankList {
    pub nr_ranks: u32,
    pub ranks: *mut *mut CRank,
}

/// The union of `struct dpu_set_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union SetUnion {
    pub list: RankList,
    pub dpu: *mut CDpu,
}

/// `struct dpu_set_t` (24 bytes, passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DpuSetT {
    pub kind: u32,
    pub u: SetUnion,
}

impl DpuSetT {
    /// A set of ranks.
    pub fn ranks(nr_ranks: u32, ranks: *mut *mut CRank) -> DpuSetT {
        DpuSetT {
            kind: DPU_SET_RANKS,
            u: SetUnion {
                list: RankList { nr_ranks, ranks },
            },
        }
    }

    /// A single DPU.
    pub fn dpu(dpu: *mut CDpu) -> DpuSetT {
        DpuSetT {
            kind: DPU_SET_DPU,
            u: SetUnion { dpu },
        }
    }

    /// The empty set (zeroed).
    pub fn empty() -> DpuSetT {
        DpuSetT::ranks(0, std::ptr::null_mut())
    }
}

/// `struct dpu_symbol_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DpuSymbolT {
    pub address: u32,
    pub size: u32,
}

/// `struct dpu_incbin_t`.
#[repr(C)]
pub struct DpuIncbinT {
    pub buffer: *mut u8,
    pub size: usize,
    pub path: *const c_char,
}

/// `struct dpu_set_rank_iterator_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RankIterator {
    pub set: DpuSetT,
    pub count: u32,
    pub has_next: bool,
    pub next: DpuSetT,
}

/// `struct dpu_set_dpu_iterator_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DpuIterator {
    pub rank_iterator: RankIterator,
    pub rank: DpuSetT,
    pub count: u32,
    pub has_next: bool,
    pub next: DpuSetT,
}

/// `struct sg_block_info`.
#[repr(C)]
pub struct SgBlockInfo {
    pub addr: *mut u8,
    pub length: u32,
}

/// `get_block_func_t`.
pub type GetBlockFn =
    Option<unsafe extern "C" fn(*mut SgBlockInfo, u32, u32, *mut std::ffi::c_void) -> bool>;

/// `get_block_t`.
#[repr(C)]
pub struct GetBlockT {
    pub f: GetBlockFn,
    pub args: *mut std::ffi::c_void,
    pub args_size: usize,
}

/// The callback type of `dpu_callback`.
pub type CallbackFn = Option<unsafe extern "C" fn(DpuSetT, u32, *mut std::ffi::c_void) -> DpuError>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn layouts_match_the_headers() {
        assert_eq!(size_of::<DpuSetT>(), 24);
        assert_eq!(align_of::<DpuSetT>(), 8);
        assert_eq!(offset_of!(DpuSetT, u), 8);
        assert_eq!(offset_of!(RankList, ranks), 8);
        assert_eq!(size_of::<DpuSymbolT>(), 8);
        assert_eq!(size_of::<DpuIncbinT>(), 24);
        assert_eq!(offset_of!(RankIterator, count), 24);
        assert_eq!(offset_of!(RankIterator, has_next), 28);
        assert_eq!(offset_of!(RankIterator, next), 32);
        assert_eq!(size_of::<RankIterator>(), 56);
        assert_eq!(offset_of!(DpuIterator, rank), 56);
        assert_eq!(offset_of!(DpuIterator, count), 80);
        assert_eq!(offset_of!(DpuIterator, has_next), 84);
        assert_eq!(offset_of!(DpuIterator, next), 88);
        assert_eq!(size_of::<DpuIterator>(), 112);
    }
}
