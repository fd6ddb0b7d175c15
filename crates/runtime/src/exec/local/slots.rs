//! The process-wide pool of rank slots.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Rank slots currently allocated by this process.
static USED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Returns the rank slot to the pool when dropped.
pub(crate) struct SlotGuard(pub u32);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        crate::clock::timeline::rank_released(self.0);
        USED.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// Number of rank slots currently allocated in this process.
pub(crate) fn in_use() -> usize {
    USED.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// Takes slot `slot` (a daemon's rank manager chooses the slot), if it is free.
pub(crate) fn take_exact(slot: u32) -> Result<SlotGuard> {
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    if !used.insert(slot) {
        return Err(Error::Allocation {
            requested: format!("rank {slot}"),
            reason: "the rank is already allocated in this process".into(),
        });
    }
    Ok(SlotGuard(slot))
}

/// Takes `count` free slots among `0..nr_ranks` (all free ones when `None`).
pub(crate) fn take(nr_ranks: u32, count: Option<u32>, what: &str) -> Result<Vec<SlotGuard>> {
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    let free: Vec<u32> = (0..nr_ranks).filter(|i| !used.contains(i)).collect();
    let want = count.unwrap_or(free.len() as u32) as usize;
    if want == 0 || free.len() < want {
        return Err(crate::exec::ranks_exhausted(
            what,
            nr_ranks,
            free.len() as u32,
        ));
    }
    Ok(free[..want]
        .iter()
        .map(|id| {
            used.insert(*id);
            SlotGuard(*id)
        })
        .collect())
}
