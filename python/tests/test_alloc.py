"""Allocation, structure (len, iteration, dpus, ranks), freeing."""

import gc

import pytest

from dpu import ALLOCATE_ALL, DpuError, DpuSet, ErrorCode

SMALL = "nrDpusPerRank=4"  # small ranks keep multi-rank tests cheap


def test_allocate_all_constant():
    assert ALLOCATE_ALL == 0xFFFFFFFF


def test_nr_dpus_len_iteration_and_structure():
    with DpuSet(nr_dpus=3) as dpus:
        assert len(dpus) == 3
        members = list(dpus)
        assert len(members) == 3
        assert members == dpus.dpus()
        for dpu in members:
            assert isinstance(dpu, DpuSet)
            assert len(dpu) == 1
            assert list(dpu) == [dpu]
            assert dpu.dpus() == [dpu]
        assert len(dpus.ranks()) == 1
        rank = dpus.ranks()[0]
        assert rank.dpus() == members
        assert rank.ranks() == [rank]
        assert members[2].ranks() == [rank]


def test_nr_ranks_with_profile():
    with DpuSet(nr_ranks=3, profile=SMALL) as dpus:
        assert len(dpus) == 12
        ranks = dpus.ranks()
        assert [len(r) for r in ranks] == [4, 4, 4]
        # DPUs come in rank order, and every DPU belongs to its rank.
        flat = [d for r in ranks for d in r]
        assert flat == dpus.dpus()
        for r in ranks:
            for d in r.dpus():
                assert d.ranks() == [r]


def test_nr_dpus_spanning_ranks():
    with DpuSet(nr_dpus=6, profile=SMALL) as dpus:
        assert len(dpus) == 6
        assert sum(len(r) for r in dpus.ranks()) == 6
        assert len(dpus.ranks()) == 2


def test_allocate_all_default_and_explicit():
    with DpuSet(profile="nrRanks=2," + SMALL) as every:
        assert len(every) == 8
    with DpuSet(nr_dpus=ALLOCATE_ALL, profile="nrRanks=2," + SMALL) as every:
        assert len(every) == 8
    with DpuSet(nr_ranks=ALLOCATE_ALL, profile="nrRanks=2," + SMALL) as every:
        assert len(every.ranks()) == 2


def test_positional_nr_dpus():
    with DpuSet(2) as dpus:
        assert len(dpus) == 2


def test_context_manager_frees():
    with DpuSet(nr_dpus=1) as dpus:
        pass
    with pytest.raises(DpuError) as e:
        dpus.exec()
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
    assert "freed" in repr(dpus)


def test_free_twice_and_free_subset():
    dpus = DpuSet(nr_dpus=2)
    with pytest.raises(DpuError) as e:
        dpus.dpus()[0].free()
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
    with pytest.raises(DpuError) as e:
        dpus.ranks()[0].free()
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
    dpus.free()
    with pytest.raises(DpuError) as e:
        dpus.free()
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
    dpus.__exit__(None, None, None)  # a with-block's end after free() is fine


def test_freed_set_rejects_everything(programs):
    dpus = DpuSet(nr_dpus=2, binary=programs.vadd)
    dpu = dpus.dpus()[1]
    dpus.free()
    for action in (
        lambda: dpus.copy("n", bytes(4)),
        lambda: dpu.copy(bytearray(4), "n"),
        lambda: dpus.exec(),
        lambda: dpus.load(programs.vadd),
        lambda: dpus.sync(),
        lambda: dpus.log(),
        lambda: dpus.call(lambda s, i, a: None),
        lambda: dpus.n,
    ):
        with pytest.raises(DpuError) as e:
            action()
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
    assert len(dpus) == 2  # structure stays readable


def test_unreferenced_set_is_freed():
    profile = "nrRanks=1," + SMALL
    DpuSet(nr_dpus=ALLOCATE_ALL, profile=profile)  # dropped at once
    gc.collect()
    with DpuSet(nr_dpus=4, profile=profile) as again:
        assert len(again) == 4


def test_failed_construction_gives_the_dpus_back():
    profile = "nrRanks=1," + SMALL
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=ALLOCATE_ALL, profile=profile, binary="/no/such/program.dpu")
    assert e.value.code == ErrorCode.DPU_ERR_ELF_NO_SUCH_FILE
    with DpuSet(nr_dpus=ALLOCATE_ALL, profile=profile) as every:
        assert len(every) == 4
        with pytest.raises(DpuError) as e:  # allocations are exclusive
            DpuSet(nr_dpus=1, profile=profile)
        assert e.value.code == ErrorCode.DPU_ERR_ALLOCATION
        assert "ALLOCATE_ALL" not in str(e.value)


def test_allocation_errors():
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, nr_ranks=1)
    assert e.value.code is None
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=100000)
    assert e.value.code == ErrorCode.DPU_ERR_ALLOCATION
    assert "allocation" in str(e.value)
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=-1)
    assert e.value.code == ErrorCode.DPU_ERR_ALLOCATION
    with pytest.raises(DpuError) as e:
        DpuSet(nr_ranks=41)
    assert e.value.code == ErrorCode.DPU_ERR_ALLOCATION


def test_profile_errors():
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, profile="noSuchKey=1")
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_PROFILE
    assert e.value.name == "DPU_ERR_INVALID_PROFILE"
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, profile=3)
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_PROFILE
    with DpuSet(nr_dpus=1, profile=None) as dpus:  # None is the default profile
        assert len(dpus) == 1


def test_repr():
    with DpuSet(nr_dpus=2) as dpus:
        assert "2 DPUs" in repr(dpus)
        assert "rank 0" in repr(dpus.ranks()[0])
        assert "DPU 1" in repr(dpus.dpus()[1])

