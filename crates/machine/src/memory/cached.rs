//! `memory=cached:DIR,memoryBudget=SIZE`: the file store with a bounded DRAM cache in front
//! (Memory Mode): resident MRAM stays within the budget whatever the program writes.
//!
//! Design: admission control over whole DPUs. Before an operation touches a DPU's MRAM it
//! asks for room: a host transfer for the bytes it moves, a launch for the DPU's whole MRAM
//! (a DPU program may touch any of it and runs without asking again). Room is the budget
//! minus what is resident (measured per DPU with `mincore` when it was last released) minus
//! what is admitted and running. When there is not enough, the least recently used DPUs
//! that nothing is using are written back (`msync`) and dropped from memory (`MADV_DONTNEED`
//! on the mapping, `POSIX_FADV_DONTNEED` on the file); when every resident DPU is in use, the
//! request waits for one to be released. Since a DPU's residency only grows while it is
//! admitted, and admissions never exceed the room, resident MRAM never exceeds the budget
//! (the kernel may keep a few pages of read-ahead beyond it; the mappings ask for random
//! access to avoid that).
//!
//! Measuring costs `mincore` over what was measured (one byte per page, and a page-cache
//! lookup for each page not mapped). A launch re-measures the DPU's whole MRAM; a host
//! transfer only the pages it touches, before and after, and adds the difference to the
//! DPU's figure: measuring all 64 MiB after every 512 KiB transfer made such transfers
//! several times slower than with the plain file store.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::file::FileStore;
use super::region::MramRegion;
use super::store::{
    Access, Admission, MramStore, Persist, StoreCounters, StoreError, StoreSpec, StoreStats,
};

#[derive(Default)]
struct Entry {
    /// Resident bytes when last measured (0 after an eviction).
    resident: u64,
    /// Admissions in progress.
    in_use: u32,
    /// Use clock of the last admission (least recently used goes first).
    last: u64,
    /// The region's address and length, to evict it (regions live as long as the store:
    /// views of the rank files' mappings, which the file store keeps).
    ptr: usize,
}

#[derive(Default)]
struct Budget {
    entries: HashMap<(u32, u32), Entry>,
    /// Sum of the entries' `resident`.
    resident: u64,
    /// Bytes admitted and not yet settled.
    reserved: u64,
    clock: u64,
    peak: u64,
}

/// How much of a region is resident after an admission.
enum Residency {
    /// All of it was measured.
    Whole(u64),
    /// A transfer's pages were measured before and after it.
    Changed {
        before: u64,
        after: u64,
        region_len: u64,
    },
}

/// File-backed MRAM under a DRAM budget.
pub struct CachedStore {
    file: FileStore,
    budget: u64,
    state: Mutex<Budget>,
    released: Condvar,
}

impl CachedStore {
    pub fn new(file: FileStore, budget: u64) -> CachedStore {
        CachedStore {
            file,
            budget,
            state: Mutex::new(Budget::default()),
            released: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Budget> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Evicts the least recently used idle region; false when none is left.
    fn evict_one(&self, st: &mut Budget, len: usize) -> Result<bool, StoreError> {
        let victim = st
            .entries
            .iter()
            .filter(|(_, e)| e.in_use == 0 && e.resident > 0)
            .min_by_key(|(_, e)| e.last)
            .map(|(k, _)| *k);
        let Some(key) = victim else {
            return Ok(false);
        };
        let start = Instant::now();
        let e = st.entries.get_mut(&key).expect("victim exists");
        // A view rebuilt from the recorded address: the mapping is the file store's, alive
        // for the store's life; the region may be in use by nobody (in_use == 0).
        self.file
            .evict(key.0, e.ptr as *mut u8, len)
            .map_err(|source| StoreError::Flush {
                path: self.file.rank_path(key.0),
                source,
            })?;
        st.resident -= e.resident;
        e.resident = 0;
        StoreCounters::add(&self.file.counters.evictions, 1);
        StoreCounters::add(
            &self.file.counters.evict_ns,
            start.elapsed().as_nanos() as u64,
        );
        Ok(true)
    }

    /// Ends an admission. `measured` is the DPU's resident bytes: the whole region's, or,
    /// after a transfer, its recorded figure changed by `(before, after)`, what the touched
    /// pages held before and after the transfer.
    fn settle(&self, key: (u32, u32), bytes: u64, measured: Residency) {
        let mut st = self.lock();
        let e = st.entries.entry(key).or_default();
        let old = e.resident;
        let resident_now = match measured {
            Residency::Whole(now) => now,
            // The region's figure can be stale high (the kernel may have reclaimed pages
            // on its own): that only makes the budget stricter.
            Residency::Changed {
                before,
                after,
                region_len,
            } => (old + after).saturating_sub(before).min(region_len),
        };
        e.resident = resident_now;
        e.in_use -= 1;
        st.resident = st.resident - old + resident_now;
        st.reserved -= bytes;
        drop(st);
        self.released.notify_all();
    }
}

impl MramStore for CachedStore {
    fn spec(&self) -> StoreSpec {
        StoreSpec::Cached(self.file.dir().to_path_buf())
    }

    fn map_rank(&self, rank: u32, nr_dpus: u32) -> Result<Vec<MramRegion>, StoreError> {
        let regions = self.file.map_rank(rank, nr_dpus)?;
        let mut st = self.lock();
        for r in &regions {
            let resident = r.resident();
            let e = st.entries.entry(r.key).or_default();
            let old = e.resident;
            e.ptr = r.as_slice().as_ptr() as usize;
            e.resident = resident;
            st.resident = st.resident - old + resident;
        }
        Ok(regions)
    }

    fn keeps_contents(&self) -> bool {
        true
    }

    fn deduplicates(&self) -> bool {
        false
    }

    fn admit(&self, region: &MramRegion, access: Access) -> Result<Admission<'_>, StoreError> {
        self.file.reserve_disk(region, access)?;
        let bytes = access.bytes(region.len()).min(self.budget);
        let key = region.key;
        let mut st = self.lock();
        loop {
            if st.resident + st.reserved + bytes <= self.budget {
                break;
            }
            if !self.evict_one(&mut st, region.len())? {
                st = self.released.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        st.reserved += bytes;
        st.clock += 1;
        let clock = st.clock;
        let peak = st.resident + st.reserved;
        st.peak = st.peak.max(peak);
        let e = st.entries.entry(key).or_default();
        e.in_use += 1;
        e.last = clock;
        e.ptr = region.as_slice().as_ptr() as usize;
        drop(st);
        let ptr = region.as_slice().as_ptr() as usize;
        let len = region.len();
        // Measured now that the region is in use (no eviction can drop its pages until the
        // admission ends).
        let touched = access.pages(len).map(|(start, end)| {
            let before = super::region::resident_in((ptr + start) as *mut u8, end - start);
            (start, end, before)
        });
        Ok(Admission::with(move || {
            let measured = match touched {
                None => Residency::Whole(super::region::resident_in(ptr as *mut u8, len)),
                Some((start, end, before)) => Residency::Changed {
                    before,
                    after: super::region::resident_in((ptr + start) as *mut u8, end - start),
                    region_len: len as u64,
                },
            };
            self.settle(key, bytes, measured);
        }))
    }

    fn persist(&self, point: Persist, regions: &[&MramRegion]) -> Result<(), StoreError> {
        self.file.persist(point, regions)
    }

    fn persist_all(&self) -> Result<(), StoreError> {
        self.file.persist_all()
    }

    fn stats(&self) -> StoreStats {
        let mut s = self.file.stats_base(self.spec().to_string());
        s.budget = Some(self.budget);
        s.peak_resident = self.lock().peak;
        s
    }

    fn counters(&self) -> &StoreCounters {
        &self.file.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::file::Geometry;

    #[test]
    fn resident_stays_within_the_budget_and_data_survives_eviction() {
        let dir = std::env::temp_dir().join(format!("openpim-cached-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let g = Geometry {
            mram_bytes: 1 << 20,
            dpus_per_rank: 8,
            ranks: 1,
            hardware: "test".into(),
        };
        let file = FileStore::open(&dir, &g, Persist::Never).unwrap();
        let store = CachedStore::new(file, 3 << 20);
        let mut regions = store.map_rank(0, 8).unwrap();
        for (d, r) in regions.iter_mut().enumerate() {
            let a = store
                .admit(
                    r,
                    Access::Write {
                        offset: 0,
                        len: 1 << 20,
                    },
                )
                .unwrap();
            r.as_mut_slice().fill(d as u8 + 1);
            drop(a);
            let st = store.lock();
            assert!(
                st.resident <= 3 << 20,
                "resident {} after DPU {d}",
                st.resident
            );
        }
        let measured: u64 = regions.iter().map(|r| r.resident()).sum();
        assert!(measured <= 3 << 20, "measured resident {measured}");
        assert!(store.stats().evictions >= 5);
        for (d, r) in regions.iter().enumerate() {
            let _a = store
                .admit(
                    r,
                    Access::Read {
                        offset: 0,
                        len: 1 << 20,
                    },
                )
                .unwrap();
            assert!(r.as_slice().iter().all(|b| *b == d as u8 + 1), "DPU {d}");
        }
        drop(regions);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
    #[test]
    fn a_transfer_measures_its_own_pages_and_the_figure_matches_the_region() {
        let dir = std::env::temp_dir().join(format!("openpim-cached-t-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let g = Geometry {
            mram_bytes: 4 << 20,
            dpus_per_rank: 2,
            ranks: 1,
            hardware: "test".into(),
        };
        let file = FileStore::open(&dir, &g, Persist::Never).unwrap();
        let store = CachedStore::new(file, 64 << 20);
        let mut regions = store.map_rank(0, 2).unwrap();
        let r = &mut regions[1];
        // Unaligned writes, one overlapping another, then a read over written and unwritten
        // pages: after each, the store's figure is what mincore says of the whole region.
        let accesses = [
            Access::Write {
                offset: 100,
                len: 10_000,
            },
            Access::Write {
                offset: 1 << 20,
                len: 256 << 10,
            },
            Access::Write {
                offset: (1 << 20) + 4000,
                len: 300 << 10,
            },
            Access::Read {
                offset: (1 << 20) + (128 << 10),
                len: 1 << 20,
            },
        ];
        for access in accesses {
            let a = store.admit(r, access).unwrap();
            match access {
                Access::Write { offset, len } => r.as_mut_slice()[offset..offset + len].fill(7),
                Access::Read { offset, len } => {
                    let sum: u64 = r.as_slice()[offset..offset + len]
                        .iter()
                        .map(|b| u64::from(*b))
                        .sum();
                    assert!(sum > 0);
                }
                Access::Launch => unreachable!(),
            }
            drop(a);
            let recorded = store.lock().entries[&(0, 1)].resident;
            assert_eq!(recorded, r.resident(), "after {access:?}");
            assert!(recorded > 0);
        }
        drop(regions);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
