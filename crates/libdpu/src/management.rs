//! `dpu_management.h`: ranks and DPUs as objects (`struct dpu_rank_t *`, `struct dpu_t *`),
//! their ids, NUMA node, descriptions, locks and iterators.
//!
//! Ids follow the SDK: a rank id (`dpu_rank_id_t`, 16 bits) holds the backend type in its top
//! 4 bits (`DPU_TARGET_SHIFT` = 12, `dpu_target_macros.h`) and the rank's index in the
//! machine below (`dpu_get_rank_id(rank) & DPU_TARGET_MASK`); a DPU is named by its control
//! interface (slice, 8 DPUs each on a 64-DPU rank) and its member index in that slice;
//! `dpu_get_id` = rank id << 16 | slice << 8 | member. Emulated ranks are all on NUMA node 0.
//!
//! Functions without a `dpu_error_t` result answer NULL, `false`, 0 or -1 for a pointer that
//! is not a live rank or DPU, and say so on stderr.

use std::ffi::{c_char, c_int, CString};
use std::sync::Arc;

use openpim_runtime::machine::{BackendKind, MachineConfig};
use openpim_runtime::Rank;

use crate::errors::{entry, entry_value, fail, report};
use crate::handles::{dpu_ref, rank_ref, register, unregister_single_rank};
use crate::objects::CDescription;
use crate::objects::{CDpu, CRank};
use crate::types::{err::*, DpuError, DpuSetT};

/// `dpu_type_t` (`dpu_target.h`).
pub const FUNCTIONAL_SIMULATOR: u32 = 0;
/// `dpu_type_t` (`dpu_target.h`).
pub const HW: u32 = 3;
/// `DPU_TARGET_SHIFT` of `dpu_target_macros.h`: 16-bit rank ids, 4 bits of target type.
pub const DPU_TARGET_SHIFT: u32 = 12;
/// `DPU_TARGET_MASK`.
pub const DPU_TARGET_MASK: u32 = (1 << DPU_TARGET_SHIFT) - 1;

/// DPUs per control interface (slice) of a rank of `machine`.
fn dpus_per_slice(machine: &MachineConfig) -> u32 {
    let t = &machine.hardware.topology;
    (t.dpus_per_rank / t.chips_per_rank.max(1)).max(1)
}

/// The SDK's rank id: the backend type in the top 4 bits, the rank's index below.
fn rank_id_of(crank: &CRank) -> u32 {
    sdk_rank_id(&crank.rank)
}

fn sdk_rank_id(rank: &Rank) -> u32 {
    let target = match rank.machine().config.backend {
        BackendKind::Simulator => FUNCTIONAL_SIMULATOR,
        BackendKind::Hardware | BackendKind::OpenPim => HW,
    };
    (target << DPU_TARGET_SHIFT) | (rank.id() & DPU_TARGET_MASK)
}

/// The SDK's DPU id (`dpu_get_id`, and the `=== DPU#0x<id> ===` header of `dpu_log_read`):
/// rank id << 16 | slice << 8 | member.
pub(crate) fn sdk_dpu_id(rank: &Rank, index: u32) -> u32 {
    let per = dpus_per_slice(rank.machine());
    (sdk_rank_id(rank) << 16) | ((index / per) << 8) | (index % per)
}

fn bad_rank(func: &str) {
    report(
        func,
        "the struct dpu_rank_t * is not a rank of a live DPU set (NULL, freed with dpu_free, or not from dpu_rank_from_set / dpu_get_rank)",
    );
}

fn bad_dpu(func: &str) {
    report(
        func,
        "the struct dpu_t * is not a DPU of a live DPU set (NULL, freed with dpu_free, or not from dpu_from_set / DPU_FOREACH / dpu_get)",
    );
}

fn checked_rank(func: &str, rank: *mut CRank) -> Option<&'static CRank> {
    let r = rank_ref(rank).ok();
    if r.is_none() {
        bad_rank(func);
    }
    r
}

fn checked_dpu(func: &str, dpu: *mut CDpu) -> Option<(&'static CDpu, &'static CRank)> {
    let r = dpu_ref(dpu)
        .ok()
        .and_then(|d| rank_ref(d.crank).ok().map(|r| (d, r)));
    if r.is_none() {
        bad_dpu(func);
    }
    r
}

/// Slice and member of DPU `index` of a rank.
fn slice_member(crank: &CRank, index: u32) -> (u8, u8) {
    let per = dpus_per_slice(crank.rank.machine());
    ((index / per) as u8, (index % per) as u8)
}

#[no_mangle]
pub extern "C" fn dpu_get_rank(dpu: *mut CDpu) -> *mut CRank {
    entry_value("dpu_get_rank", std::ptr::null_mut(), || {
        checked_dpu("dpu_get_rank", dpu).map_or(std::ptr::null_mut(), |(d, _)| d.crank.cast_mut())
    })
}

#[no_mangle]
pub extern "C" fn dpu_get_rank_id(rank: *mut CRank) -> u32 {
    entry_value("dpu_get_rank_id", u32::MAX, || {
        checked_rank("dpu_get_rank_id", rank).map_or(u32::MAX, rank_id_of)
    })
}

#[no_mangle]
pub extern "C" fn dpu_get_rank_numa_node(rank: *mut CRank) -> c_int {
    entry_value("dpu_get_rank_numa_node", -1, || {
        // Every emulated rank is on the host's first NUMA node, which always exists (a program
        // may allocate its buffers there, e.g. with numa_alloc_onnode).
        checked_rank("dpu_get_rank_numa_node", rank).map_or(-1, |_| 0)
    })
}

#[no_mangle]
pub extern "C" fn dpu_get_id(dpu: *mut CDpu) -> u32 {
    entry_value("dpu_get_id", u32::MAX, || {
        checked_dpu("dpu_get_id", dpu).map_or(u32::MAX, |(d, r)| sdk_dpu_id(&r.rank, d.index))
    })
}

#[no_mangle]
pub extern "C" fn dpu_get_slice_id(dpu: *mut CDpu) -> u8 {
    entry_value("dpu_get_slice_id", u8::MAX, || {
        checked_dpu("dpu_get_slice_id", dpu).map_or(u8::MAX, |(d, r)| slice_member(r, d.index).0)
    })
}

#[no_mangle]
pub extern "C" fn dpu_get_member_id(dpu: *mut CDpu) -> u8 {
    entry_value("dpu_get_member_id", u8::MAX, || {
        checked_dpu("dpu_get_member_id", dpu).map_or(u8::MAX, |(d, r)| slice_member(r, d.index).1)
    })
}

#[no_mangle]
pub extern "C" fn dpu_is_enabled(dpu: *mut CDpu) -> bool {
    entry_value("dpu_is_enabled", false, || {
        checked_dpu("dpu_is_enabled", dpu).is_some()
    })
}

#[no_mangle]
pub extern "C" fn dpu_get(rank: *mut CRank, slice_id: u8, dpu_id: u8) -> *mut CDpu {
    entry_value("dpu_get", std::ptr::null_mut(), || {
        let Some(r) = checked_rank("dpu_get", rank) else {
            return std::ptr::null_mut();
        };
        let per = dpus_per_slice(r.rank.machine());
        let index = u32::from(slice_id) * per + u32::from(dpu_id);
        if u32::from(dpu_id) >= per {
            return std::ptr::null_mut();
        }
        r.dpus
            .get(index as usize)
            .map_or(std::ptr::null_mut(), |d| (d as *const CDpu).cast_mut())
    })
}

#[no_mangle]
pub extern "C" fn dpu_get_description(rank: *mut CRank) -> *mut CDescription {
    entry_value("dpu_get_description", std::ptr::null_mut(), || {
        let Some(r) = checked_rank("dpu_get_description", rank) else {
            return std::ptr::null_mut();
        };
        let d = r.description.get_or_init(|| {
            let machine: MachineConfig = (**r.rank.machine()).clone();
            let text = CString::new(machine.describe()).unwrap_or_default();
            Box::new(CDescription { machine, text })
        });
        (&**d as *const CDescription).cast_mut()
    })
}

#[no_mangle]
pub extern "C" fn dpu_set_from_rank(rank: *mut *mut CRank) -> DpuSetT {
    // As in the SDK, only a constructor: the set is checked where it is used.
    DpuSetT::ranks(1, rank)
}

#[no_mangle]
pub extern "C" fn dpu_set_from_dpu(dpu: *mut CDpu) -> DpuSetT {
    DpuSetT::dpu(dpu)
}

#[no_mangle]
pub extern "C" fn dpu_lock_rank(rank: *mut CRank) {
    // Not an SDK call for the timeline: waiting here is the program's own synchronisation.
    if let Some(r) = checked_rank("dpu_lock_rank", rank) {
        r.lock.lock();
    }
}

#[no_mangle]
pub extern "C" fn dpu_trylock_rank(rank: *mut CRank) -> c_int {
    match checked_rank("dpu_trylock_rank", rank) {
        Some(r) if r.lock.try_lock() => 0,
        Some(_) => libc::EBUSY,
        None => libc::EINVAL,
    }
}

#[no_mangle]
pub extern "C" fn dpu_unlock_rank(rank: *mut CRank) {
    if let Some(r) = checked_rank("dpu_unlock_rank", rank) {
        if !r.lock.unlock() {
            report(
                "dpu_unlock_rank",
                "the calling thread does not hold this rank's lock (take it with dpu_lock_rank first)",
            );
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dpu_get_rank_of_type(
    profile: *const c_char,
    rank: *mut *mut CRank,
) -> DpuError {
    entry("dpu_get_rank_of_type", || {
        if rank.is_null() {
            return Err(fail(
                DPU_ERR_INVALID_DPU_SET,
                "the rank argument is NULL: pass the address of a struct dpu_rank_t * to receive the rank",
            ));
        }
        let profile = if profile.is_null() {
            ""
        } else {
            // SAFETY: non-null C string from the caller.
            unsafe { std::ffi::CStr::from_ptr(profile) }
                .to_str()
                .map_err(|_| fail(DPU_ERR_INVALID_PROFILE, "the profile is not valid UTF-8"))?
        };
        let set = openpim_runtime::alloc_ranks(Some(1), profile)?;
        let c = register(&set);
        // SAFETY: `register` made a one-rank set: its rank array has one element.
        let r = unsafe { *c.u.list.ranks };
        // SAFETY: `rank` is non-null and points to the caller's storage.
        unsafe { rank.write(r) };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn dpu_free_rank(rank: *mut CRank) -> DpuError {
    entry("dpu_free_rank", || {
        rank_ref(rank).map_err(|c| {
            fail(
                c,
                "the struct dpu_rank_t * is not a rank of a live DPU set (NULL or already freed)",
            )
        })?;
        let owned = unregister_single_rank(rank).ok_or_else(|| {
            fail(
                DPU_ERR_INVALID_DPU_SET,
                "dpu_free_rank frees a rank from dpu_get_rank_of_type (or a one-rank set); free a set from dpu_alloc with dpu_free",
            )
        })?;
        let set = openpim_runtime::DpuSet::from_ranks(
            owned.ranks.iter().map(|r| Arc::clone(&r.rank)).collect(),
        );
        // As dpu_free: the rank's queued work is waited for; its errors go with it.
        let _ = set.sync();
        drop(set);
        drop(owned);
        Ok(())
    })
}

/// `struct dpu_iterator_t` (`dpu_management.h`): the DPUs of one rank.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct StructDpuIterator {
    pub rank: *mut CRank,
    pub count: u32,
    pub next_idx: u32,
    pub has_next: bool,
    pub next: *mut CDpu,
}

fn advance(it: &mut StructDpuIterator) {
    let dpus = rank_ref(it.rank).map(|r| &r.dpus[..]).unwrap_or(&[]);
    match dpus.get(it.next_idx as usize) {
        Some(d) => {
            it.next = (d as *const CDpu).cast_mut();
            it.next_idx += 1;
            it.has_next = true;
        }
        None => {
            it.next = std::ptr::null_mut();
            it.has_next = false;
        }
    }
}

#[no_mangle]
pub extern "C" fn dpu_iterator_from(rank: *mut CRank) -> StructDpuIterator {
    let mut it = StructDpuIterator {
        rank,
        count: 0,
        next_idx: 0,
        has_next: false,
        next: std::ptr::null_mut(),
    };
    entry_value("dpu_iterator_from", it, || {
        if checked_rank("dpu_iterator_from", rank).is_some() {
            advance(&mut it);
        }
        it
    })
}

#[no_mangle]
pub unsafe extern "C" fn dpu_iterator_next(iterator: *mut StructDpuIterator) {
    entry_value("dpu_iterator_next", (), || {
        if iterator.is_null() {
            return;
        }
        // SAFETY: non-null pointer to the caller's iterator.
        let it = unsafe { &mut *iterator };
        if !it.has_next {
            return;
        }
        it.count += 1;
        advance(it);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn iterator_layout_matches_the_header() {
        assert_eq!(offset_of!(StructDpuIterator, count), 8);
        assert_eq!(offset_of!(StructDpuIterator, next_idx), 12);
        assert_eq!(offset_of!(StructDpuIterator, has_next), 16);
        assert_eq!(offset_of!(StructDpuIterator, next), 24);
        assert_eq!(size_of::<StructDpuIterator>(), 32);
    }

    #[test]
    fn target_macros() {
        assert_eq!(DPU_TARGET_MASK, 0xfff);
        assert_eq!((HW << DPU_TARGET_SHIFT | 5) & DPU_TARGET_MASK, 5);
    }

    #[test]
    fn invalid_pointers_give_neutral_answers() {
        assert!(dpu_get_rank(std::ptr::null_mut()).is_null());
        assert_eq!(dpu_get_rank_numa_node(std::ptr::null_mut()), -1);
        assert_eq!(dpu_get_rank_id(std::ptr::null_mut()), u32::MAX);
        assert!(!dpu_is_enabled(std::ptr::null_mut()));
        assert!(dpu_get(std::ptr::null_mut(), 0, 0).is_null());
        assert_eq!(dpu_trylock_rank(std::ptr::null_mut()), libc::EINVAL);
        assert_eq!(dpu_free_rank(std::ptr::null_mut()), DPU_ERR_INVALID_DPU_SET);
        let it = dpu_iterator_from(std::ptr::null_mut());
        assert!(!it.has_next);
    }

    #[test]
    fn rank_lock_is_recursive_and_exclusive() {
        let l = Arc::new(crate::objects::RankLock::default());
        l.lock();
        assert!(l.try_lock());
        let other = Arc::clone(&l);
        let t = std::thread::spawn(move || {
            let busy = !other.try_lock();
            other.lock(); // waits for the main thread
            assert!(other.unlock());
            busy
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(l.unlock());
        assert!(l.unlock());
        assert!(!l.unlock(), "not held any more");
        assert!(t.join().unwrap(), "the other thread saw the lock taken");
    }
}
