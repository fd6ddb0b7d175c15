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
//!
//! MRAM comes from the process's backing store ([`store`], chosen by the first allocation's
//! `memory=` key). A file-backed store keeps MRAM contents across `dpu_free` (that is its
//! point); it is made durable there if the persistence horizon says so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use openpim_machine::{DpuMemories, MachineConfig, MramStore, Persist};

use crate::error::{Error, Result};

/// Cleared memories by rank slot.
static KEPT: Mutex<Option<HashMap<u32, Vec<DpuMemories>>>> = Mutex::new(None);

/// The process's store, opened for `machine` on first use (`openpim_machine`'s process
/// store); a file-backed one is made durable at exit as its horizon says.
pub(crate) fn store(machine: &MachineConfig) -> Result<Arc<dyn MramStore>> {
    let (store, opened) = openpim_machine::open_process_store(machine)?;
    if opened && store.keeps_contents() {
        register_exit_flush();
    }
    Ok(store)
}

extern "C" fn flush_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = std::panic::catch_unwind(|| {
        if let Some(s) = openpim_machine::process_store() {
            if let Err(e) = s.persist_all() {
                eprintln!("openpim: at exit: {e}");
            }
        }
    });
}

fn register_exit_flush() {
    // SAFETY: registering a plain extern "C" fn with the C library's atexit; it only touches
    // the process-wide store, which outlives it.
    unsafe {
        libc::atexit(flush_at_exit);
    }
}

/// Memories for `count` DPUs of rank slot `slot`: the slot's kept ones first (already
/// cleared), new ones for the rest.
pub(crate) fn take(slot: u32, count: u32, machine: &MachineConfig) -> Result<Vec<DpuMemories>> {
    let store = store(machine)?;
    let wrap = |mram| {
        DpuMemories::with_mram(mram)
            .map_err(|e| Error::System(format!("cannot reserve DPU memory: {e}")))
    };
    if store.keeps_contents() {
        // File-backed: DPU d of the slot is always the file's region d (views of the rank's
        // mapping, which the store keeps), so nothing is kept here.
        return store.map_rank(slot, count)?.into_iter().map(wrap).collect();
    }
    let mut mems = {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        let list = kept
            .get_or_insert_with(HashMap::new)
            .entry(slot)
            .or_default();
        let n = list.len().min(count as usize);
        list.split_off(list.len() - n)
    };
    let missing = count - mems.len() as u32;
    if missing > 0 {
        for mram in store.map_rank(slot, missing)? {
            mems.push(wrap(mram)?);
        }
    }
    Ok(mems)
}

/// Gives back the memories of a freed rank of slot `slot`: WRAM cleared; MRAM cleared, or
/// kept (and made durable if the horizon says so at the end) by a file-backed store.
pub(crate) fn give_back(slot: u32, mems: impl IntoIterator<Item = DpuMemories>) {
    let store = openpim_machine::process_store();
    let keep = store.as_ref().is_some_and(|s| s.keeps_contents());
    let mut cleared: Vec<DpuMemories> = mems
        .into_iter()
        .map(|mut m| {
            m.clear_wram();
            if !keep {
                if let Err(e) = m.clear_mram() {
                    eprintln!("openpim: cannot clear a freed rank's MRAM: {e}");
                }
            }
            m
        })
        .collect();
    if let Some(s) = store.filter(|_| keep) {
        let regions: Vec<_> = cleared.iter().map(|m| m.mram_region()).collect();
        if let Err(e) = s.persist(Persist::End, &regions) {
            eprintln!("openpim: dpu_free: {e}");
        }
        return; // views of the store's mapping: nothing to keep here
    }
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
        let machine = MachineConfig::from_profile_string("").unwrap();
        let mut mems = take(slot, 2, &machine).unwrap();
        mems[0].write(WramAddr(64), &[7; 8]).unwrap();
        mems[1].write(MramAddr(1 << 20), &[9; 8]).unwrap();
        let addrs: Vec<*const u8> = mems.iter().map(|m| m.mram().as_ptr()).collect();
        give_back(slot, mems);
        let again = take(slot, 3, &machine).unwrap();
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
