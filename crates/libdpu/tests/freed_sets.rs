//! Calls on freed and forged sets are errors, never reads of freed memory (found by the c_api
//! fuzz target: DPU_FOREACH and the set calls read a freed set's rank array; the input that
//! found it is replayed under AddressSanitizer by `make fuzz-smoke`, fuzz/regressions/c_api).

use std::ffi::CString;

use dpu::types::{err::*, DpuSetT};

/// `dpu_get_nr_dpus`: the code and the count.
fn nr_dpus(s: DpuSetT) -> (u32, u32) {
    let mut n = 0;
    // SAFETY: a valid output pointer; the set is checked by the call.
    let rc = unsafe { dpu::dpu_get_nr_dpus(s, &mut n) };
    (rc, n)
}

#[test]
fn freed_and_forged_sets_are_invalid() {
    std::env::set_var("OPENPIM_QUIET", "1");
    let profile = CString::new("nrRanks=2,nrDpusPerRank=4").unwrap();
    let mut set = DpuSetT::empty();
    // SAFETY: a valid profile string and output pointer.
    let rc = unsafe { dpu::dpu_alloc(8, profile.as_ptr(), &mut set) };
    assert_eq!(rc, DPU_OK);

    // DPU_FOREACH on the live set: 8 DPUs; one-rank sets from DPU_RANK_FOREACH.
    let count = |mut s: DpuSetT| {
        let mut n = 0;
        // SAFETY: the iterator functions take the address of a set value.
        unsafe {
            let mut it = dpu::dpu_set_dpu_iterator_from(&mut s);
            while it.has_next {
                n += 1;
                dpu::dpu_set_dpu_iterator_next(&mut it);
            }
        }
        n
    };
    assert_eq!(count(set), 8);
    // SAFETY: as above.
    let second_rank = unsafe {
        let mut it = dpu::dpu_set_rank_iterator_from(&mut set);
        dpu::dpu_set_rank_iterator_next(&mut it);
        assert!(it.has_next);
        it.next
    };
    assert_eq!(nr_dpus(second_rank), (DPU_OK, 4));

    // A forged set claiming more ranks than its array holds.
    // SAFETY: kind RANKS: the list member is active.
    let forged = DpuSetT::ranks(3, unsafe { set.u.list.ranks });
    assert_eq!(nr_dpus(forged).0, DPU_ERR_INVALID_DPU_SET);
    // The second rank's one-rank set with a count past the end of the array.
    // SAFETY: as above.
    let past = DpuSetT::ranks(2, unsafe { second_rank.u.list.ranks });
    assert_eq!(nr_dpus(past).0, DPU_ERR_INVALID_DPU_SET);

    assert_eq!(dpu::dpu_free(set), DPU_OK);
    // After dpu_free: no DPU to iterate, every call is DPU_ERR_INVALID_DPU_SET.
    assert_eq!(count(set), 0);
    assert_eq!(count(second_rank), 0);
    for s in [set, second_rank] {
        assert_eq!(nr_dpus(s).0, DPU_ERR_INVALID_DPU_SET);
        assert_eq!(dpu::dpu_launch(s, 1), DPU_ERR_INVALID_DPU_SET);
        assert_eq!(dpu::dpu_sync(s), DPU_ERR_INVALID_DPU_SET);
    }
    assert_eq!(dpu::dpu_free(set), DPU_ERR_INVALID_DPU_SET);
}
