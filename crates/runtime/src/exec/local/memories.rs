//! The DPU memories of each rank slot, kept across allocations.
//!
//! A real server's ranks are always there: freeing a rank does not take its DIMM away. Here a
//! rank's WRAM and MRAM are lazily backed mappings (`openpim_machine::DpuMemories`); mapping
//! them anew at every allocation and unmapping them at every `dpu_free` would (1) churn
//! 64 x 64 MiB of mappings per rank in programs that free and allocate in a loop (PrIM NW's
//! dynamic mode does it once per anti-diagonal) and (2) leave holes in the process's address
//! space right next to the host program's own large allocations, which the kernel places
//! beside them. Published programs that read a little past the end of a large buffer (PrIM
//! NW's traceback reads past `reference`) then fault or not depending on where the holes
//! fell. So a freed rank's memories are cleared (their pages dropped, reading as zero, as a
//! fresh allocation's) and kept mapped for the next allocation of the same slot.

use std::collections::HashMap;
use std::sync::Mutex;

use openpim_machine::DpuMemories;

use crate::error::{Error, Result};

/// Cleared memories by rank slot.
static KEPT: Mutex<Option<HashMap<u32, Vec<DpuMemories>>>> = Mutex::new(None);

/// Memories for `count` DPUs of rank slot `slot`: the slot's kept ones first (already
/// cleared), new ones for the rest.
pub(crate) fn take(slot: u32, count: u32) -> Result<Vec<DpuMemories>> {
    let mut mems = {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        let list = kept
            .get_or_insert_with(HashMap::new)
            .entry(slot)
            .or_default();
        let n = list.len().min(count as usize);
        list.split_off(list.len() - n)
    };
    while mems.len() < count as usize {
        mems.push(
            DpuMemories::new()
                .map_err(|e| Error::System(format!("cannot reserve DPU memory: {e}")))?,
        );
    }
    Ok(mems)
}

/// Gives back the memories of a freed rank of slot `slot`, cleared.
pub(crate) fn give_back(slot: u32, mems: impl IntoIterator<Item = DpuMemories>) {
    let mut cleared: Vec<DpuMemories> = mems
        .into_iter()
        .map(|mut m| {
            m.clear_wram();
            m.clear_mram();
            m
        })
        .collect();
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    kept.get_or_insert_with(HashMap::new)
        .entry(slot)
        .or_default()
        .append(&mut cleared);
}

#[cfg(test)]
mod tests {
    use super::*;
    use openpim_machine::{Bytes, MramAddr, WramAddr};

    #[test]
    fn memories_come_back_cleared_and_at_the_same_addresses() {
        let slot = 1_000_001; // not a real slot: no other test uses it
        let mut mems = take(slot, 2).unwrap();
        mems[0].write(WramAddr(64), &[7; 8]).unwrap();
        mems[1].write(MramAddr(1 << 20), &[9; 8]).unwrap();
        let addrs: Vec<*const u8> = mems.iter().map(|m| m.mram().as_ptr()).collect();
        give_back(slot, mems);
        let again = take(slot, 3).unwrap();
        assert_eq!(again.len(), 3);
        let reused: Vec<*const u8> = again[..2].iter().map(|m| m.mram().as_ptr()).collect();
        assert!(
            addrs.iter().all(|a| reused.contains(a)),
            "the kept mappings are reused"
        );
        for m in &again {
            let (mut w, mut r) = ([1u8; 8], [1u8; 8]);
            m.read(WramAddr(64), &mut w).unwrap();
            m.read(MramAddr(1 << 20), &mut r).unwrap();
            assert_eq!((w, r), ([0; 8], [0; 8]), "cleared");
        }
    }
}
