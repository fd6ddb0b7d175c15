//! Scatter-gather transfers are bounded before anything is allocated for their blocks: a
//! block function that never ends, or that claims gigabytes, gets an SDK error, not an
//! out-of-memory kill of the host program (docs/security.md, "Limits").

use std::ffi::{c_void, CString};

use dpu::types::{err::*, DpuSetT, GetBlockT, SgBlockInfo};

static KERNEL: &[u8] = include_bytes!("../../../fuzz/programs/api_kernel.dpu");

/// Endless 8-byte blocks from one static buffer.
unsafe extern "C" fn endless(
    info: *mut SgBlockInfo,
    _dpu: u32,
    _block: u32,
    args: *mut c_void,
) -> bool {
    // SAFETY: the runtime passes a valid block info; `args` is the harness's 8-byte buffer.
    unsafe {
        (*info).addr = args.cast();
        (*info).length = 8;
    }
    true
}

/// Blocks of 4 GiB - 1 bytes (never read: the total is refused first).
unsafe extern "C" fn huge(
    info: *mut SgBlockInfo,
    _dpu: u32,
    block: u32,
    args: *mut c_void,
) -> bool {
    // SAFETY: as above.
    unsafe {
        (*info).addr = args.cast();
        (*info).length = u32::MAX;
    }
    block < 4
}

#[test]
fn endless_and_huge_block_lists_are_errors() {
    std::env::set_var("OPENPIM_QUIET", "1");
    let profile = CString::new("nrRanks=1,nrDpusPerRank=2,sgXferEnable=true").unwrap();
    let mut set = DpuSetT::empty();
    // SAFETY: a valid profile string and output pointer.
    let rc = unsafe { dpu::dpu_alloc(2, profile.as_ptr(), &mut set) };
    assert_eq!(rc, DPU_OK);
    let mut bytes = KERNEL.to_vec();
    // SAFETY: a buffer of bytes.len() bytes; no program handle wanted.
    let rc = unsafe {
        dpu::dpu_load_from_memory(set, bytes.as_mut_ptr(), bytes.len(), std::ptr::null_mut())
    };
    assert_eq!(rc, DPU_OK);
    let name = CString::new("min").unwrap();
    let mut buf = [0u8; 8];
    for (f, code) in [
        (
            endless as unsafe extern "C" fn(_, _, _, _) -> bool,
            DPU_ERR_SG_TOO_MANY_BLOCKS,
        ),
        (huge, DPU_ERR_INVALID_MEMORY_TRANSFER),
    ] {
        let mut gb = GetBlockT {
            f: Some(f),
            args: buf.as_mut_ptr().cast(),
            args_size: 8,
        };
        for xfer in [0, 1] {
            // SAFETY: a valid get_block_t whose blocks point to `buf` (never past it: the
            // transfer is refused before any block is copied).
            let rc =
                unsafe { dpu::dpu_push_sg_xfer(set, xfer, name.as_ptr(), 0, 2048, &mut gb, 4) };
            assert_eq!(rc, code);
        }
    }
    assert_eq!(dpu::dpu_free(set), DPU_OK);
}
