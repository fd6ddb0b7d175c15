"""DpuSet.checkpoint()/restore(), the program's symbol list from libdpu
(openpim_program_symbols), and DpuError.cause (openpim_last_error)."""

import ctypes
import struct

import pytest

from dpu import DpuError, DpuSet, ErrorCode
from dpu import ffi

KERNEL = r"""
#include <defs.h>
#include <mram.h>
#include <stdint.h>
__host uint32_t counter;
__host uint32_t factor;
__mram_noinit uint64_t big[4];
__mram uint32_t table[2] = {7, 9};
int main(void) {
    if (me() == 0) {
        counter += factor;
        uint64_t v = counter;
        mram_write(&v, &big[0], 8);
    }
    return 0;
}
"""


def _counter(dpus):
    return [struct.unpack("<I", bytes(d.counter.data()))[0] for d in dpus.dpus()]


def test_checkpoint_and_restore_every_dpu():
    with DpuSet(nr_dpus=3, c_source=KERNEL) as dpus:
        dpus.copy("factor", [struct.pack("<I", 10 + i) for i in range(3)])
        dpus.exec()
        assert _counter(dpus) == [10, 11, 12]
        saved = dpus.checkpoint()
        assert len(saved) == 3 and all(isinstance(b, bytes) and b for b in saved)
        dpus.exec()
        dpus.exec()
        assert _counter(dpus) == [30, 33, 36]
        dpus.restore(saved)
        assert _counter(dpus) == [10, 11, 12]
        big = [struct.unpack("<Q", bytes(d.big.data()[:8]))[0] for d in dpus.dpus()]
        assert big == [10, 11, 12]  # MRAM restored too
        dpus.exec()
        assert _counter(dpus) == [20, 22, 24]
        # Into another set of the same size (another allocation).
        with DpuSet(nr_dpus=3, c_source=KERNEL) as other:
            other.restore(saved)
            assert _counter(other) == [10, 11, 12]
        with pytest.raises(DpuError) as e:
            dpus.restore(saved[:2])
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET


def test_symbol_list_comes_from_libdpu():
    with DpuSet(nr_dpus=1, c_source=KERNEL) as dpus:
        program = dpus.load(c_source=KERNEL)
        names = program.symbol_names()
        for n in ("counter", "factor", "big", "table", "__sys_used_mram_end", "CLOCKS_PER_SEC"):
            assert n in names, (n, names)
        assert names == sorted(names)
        # The C call itself.
        lib = ffi.lib()
        block, count = ctypes.c_void_p(), ctypes.c_uint32()
        assert lib.openpim_program_symbols(program.c_program, ctypes.byref(block), ctypes.byref(count)) == 0
        assert count.value == len(names)
        ffi.libc().free(block)
        assert program.get_symbol("counter").size() == 4


def test_error_carries_libdpus_cause():
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, profile="nrRank=2")
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_PROFILE
    assert e.value.cause is not None
    assert e.value.cause.startswith("dpu_alloc: invalid profile: unknown profile key 'nrRank'"), e.value.cause
    with DpuSet(nr_dpus=1, c_source=KERNEL) as dpus:
        with pytest.raises(DpuError) as e:
            dpus.copy("no_such_symbol", b"\0" * 4)
        # (the Python layer checks symbols itself: no libdpu cause, none attached)
        assert e.value.cause is None or "no_such_symbol" in e.value.cause
        with pytest.raises(DpuError) as e:
            dpus.load("/nonexistent/program.elf")
        assert e.value.cause is not None and "/nonexistent/program.elf" in e.value.cause
