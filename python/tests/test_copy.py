"""copy(): both directions, every buffer type, size and offset, errors."""

import array
import random
import struct

import numpy as np
import pytest

from dpu import DpuError, DpuSet, ErrorCode

N = 1000  # elements per DPU (not a multiple of the DPU program's block)


def _run_vadd(dpus, a_list, b_common, n=N):
    dpus.copy("a", a_list)
    dpus.copy("b", b_common)
    dpus.copy("n", struct.pack("<I", n))
    dpus.exec()


def test_vector_add_numpy(programs):
    with DpuSet(nr_dpus=4, binary=programs.vadd) as dpus:
        rng = np.random.default_rng(1)
        a = [rng.integers(0, 2**31, N, dtype=np.uint32) for _ in dpus]
        b = rng.integers(0, 2**31, N, dtype=np.uint32)
        _run_vadd(dpus, a, b)
        c = [np.zeros(N, dtype=np.uint32) for _ in dpus]
        dpus.copy(c, "c")
        for ai, ci in zip(a, c):
            np.testing.assert_array_equal(ci, ai + b)
        expected = [int((ai + b).sum(dtype=np.uint64)) & 0xFFFFFFFF for ai in a]
        assert dpus.sum.uint32() == expected
        assert dpus.nr_tasklets.uint32() == [4, 4, 4, 4]


def test_vector_add_bytes_types(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1) as dpus:
        a0 = [random.Random(i).randrange(2**32) for i in range(N)]
        a1 = [(3 * i) & 0xFFFFFFFF for i in range(N)]
        b = [i * 7 for i in range(N)]
        a_bufs = [
            struct.pack(f"<{N}I", *a0),  # bytes
            memoryview(array.array("I", a1)),  # memoryview of an array
        ]
        _run_vadd(dpus, a_bufs, bytearray(struct.pack(f"<{N}I", *b)))
        outs = [bytearray(4 * N), array.array("I", bytes(4 * N))]
        dpus.copy(outs, "c")
        assert list(struct.unpack(f"<{N}I", outs[0])) == [(x + y) & 0xFFFFFFFF for x, y in zip(a0, b)]
        assert list(outs[1]) == [(x + y) & 0xFFFFFFFF for x, y in zip(a1, b)]


def test_broadcast_and_read_back_each_dpu(programs):
    with DpuSet(nr_dpus=3, binary=programs.vadd1) as dpus:
        data = bytes(range(256)) * 4
        dpus.copy("a", data)
        for dpu in dpus:
            out = bytearray(len(data))
            dpu.copy(out, "a")
            assert out == data
        # One buffer, read from a one-DPU set given as a one-element list.
        single = dpus.dpus()[2]
        out = bytearray(16)
        single.copy([out], "a", size=16, offset=32)
        assert out == data[32:48]


def test_size_and_offset(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1) as dpus:
        dpus.copy("a", bytes(64))
        dpus.copy("a", b"\x01\x02\x03\x04\x05\x06\x07\x08", size=4, offset=8)
        out = [bytearray(16), bytearray(16)]
        dpus.copy(out, "a", size=16)
        assert out[0] == bytes(8) + b"\x01\x02\x03\x04" + bytes(4)
        assert out[1] == out[0]
        # Larger host buffers with an explicit size; offset on the way back.
        big = [bytearray(b"\xff" * 32), bytearray(b"\xff" * 32)]
        dpus.copy(big, "a", size=8, offset=4)
        assert big[0][:8] == bytes(4) + b"\x01\x02\x03\x04"
        assert big[0][8:] == b"\xff" * 24
        # MRAM symbols take any alignment.
        dpus.copy("a", b"xyz", offset=3)
        out3 = bytearray(3)
        dpus.dpus()[1].copy(out3, "a", offset=3)
        assert out3 == b"xyz"
        # size 0 is a no-op.
        dpus.copy("a", b"", size=0)


def test_per_dpu_none_skips(programs):
    with DpuSet(nr_dpus=3, binary=programs.vadd1) as dpus:
        dpus.copy("a", bytes(8))
        dpus.copy("a", [b"AAAAAAAA", None, b"CCCCCCCC"])
        outs = [bytearray(8), None, bytearray(8)]
        dpus.copy(outs, "a")
        assert outs[0] == b"AAAAAAAA" and outs[2] == b"CCCCCCCC"
        middle = bytearray(8)
        dpus.dpus()[1].copy(middle, "a")
        assert middle == bytes(8)
        dpus.copy([None, None, None], "a")  # nothing to do


def test_symbol_object_as_device(programs):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        sym = dpus.program.get_symbol("input")
        dpus.copy(sym, struct.pack("<I", 11))
        out = [bytearray(4), bytearray(4)]
        dpus.copy(out, sym)
        assert [struct.unpack("<I", o)[0] for o in out] == [11, 11]
        dpus.exec()
        got = [bytearray(4), bytearray(4)]
        dpus.copy(got, dpus.program.get_symbol("output"))
        assert [struct.unpack("<I", g)[0] for g in got] == [33, 33]


def test_numpy_shapes_and_dtypes(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1) as dpus:
        m = np.arange(64, dtype=np.float64).reshape(8, 8)
        dpus.copy("a", m)  # 2-D, C-contiguous
        back = np.empty((8, 8), dtype=np.float64)
        dpus.dpus()[0].copy(back, "a")
        np.testing.assert_array_equal(back, m)
        # Non-contiguous source: copied in logical order.
        dpus.copy("a", m[:, 0])
        col = np.empty(8, dtype=np.float64)
        dpus.dpus()[1].copy(col, "a")
        np.testing.assert_array_equal(col, m[:, 0])
        # Fortran-ordered source.
        f = np.asfortranarray(m)
        dpus.copy("a", f)
        dpus.dpus()[0].copy(back, "a")
        np.testing.assert_array_equal(back, m)
        # Read-only NumPy source.
        ro = np.arange(16, dtype=np.int16)
        ro.setflags(write=False)
        dpus.copy("a", ro)
        out = np.zeros(16, dtype=np.int16)
        dpus.dpus()[1].copy(out, "a")
        np.testing.assert_array_equal(out, ro)
        # Writing into a slice of a bigger array.
        whole = np.zeros((2, 16), dtype=np.int16)
        dpus.copy([whole[0], whole[1]], "a")
        np.testing.assert_array_equal(whole, np.stack([ro, ro]))


def test_errors_unknown_symbol(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1) as dpus:
        for action in (
            lambda: dpus.copy("no_such_symbol", bytes(4)),
            lambda: dpus.copy([bytearray(4)] * 2, "no_such_symbol"),
            lambda: dpus.dpus()[0].copy(bytearray(4), "no_such_symbol"),
        ):
            with pytest.raises(DpuError) as e:
                action()
            assert e.value.code == ErrorCode.DPU_ERR_UNKNOWN_SYMBOL
            assert "unknown symbol" in str(e.value)
            assert "DPU_ERR_UNKNOWN_SYMBOL" in str(e.value)


def test_errors_bad_size_and_offset(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1) as dpus:
        with pytest.raises(DpuError) as e:  # past the symbol's end
            dpus.copy("n", bytes(8))
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_SYMBOL_ACCESS
        with pytest.raises(DpuError) as e:
            dpus.copy([bytearray(4)] * 2, "n", offset=4)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_SYMBOL_ACCESS
        with pytest.raises(DpuError) as e:  # size larger than the host buffer
            dpus.copy("a", bytes(4), size=8)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_BUFFER_SIZE
        with pytest.raises(DpuError) as e:
            dpus.copy([bytearray(4), bytearray(2)], "a", size=4)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_BUFFER_SIZE
        with pytest.raises(DpuError) as e:  # per-DPU buffers of different sizes, no size
            dpus.copy("a", [bytes(4), bytes(8)])
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_BUFFER_SIZE
        dpus.copy("a", [bytes(4), bytes(8)], size=4)  # fine with an explicit size
        with pytest.raises(DpuError) as e:
            dpus.copy("a", bytes(4), size=-1)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_BUFFER_SIZE
        with pytest.raises(DpuError) as e:
            dpus.copy("a", bytes(4), offset=-4)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_SYMBOL_ACCESS
        with pytest.raises(DpuError) as e:  # WRAM transfers are 4-byte aligned
            dpus.copy("n", bytes(2))
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_WRAM_ACCESS


def test_errors_buffers(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1) as dpus:
        with pytest.raises(DpuError) as e:  # one buffer per DPU
            dpus.copy("a", [bytes(4)] * 3)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
        with pytest.raises(DpuError) as e:  # read-only destination
            dpus.dpus()[0].copy(bytes(4), "a")
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_MEMORY_TRANSFER
        with pytest.raises(DpuError) as e:  # not a buffer
            dpus.copy("a", 1234)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_MEMORY_TRANSFER
        with pytest.raises(DpuError) as e:  # host to host
            dpus.copy(bytearray(4), bytes(4))
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_MEMORY_TRANSFER
        with pytest.raises(DpuError) as e:  # DPU to DPU
            dpus.copy("a", "b")
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_MEMORY_TRANSFER
        with pytest.raises(DpuError) as e:  # non-contiguous destination
            dpus.dpus()[0].copy(np.zeros((4, 4), dtype=np.uint32)[:, 0], "a")
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_MEMORY_TRANSFER
        # A failed transfer leaves the set usable.
        out = [bytearray(4), bytearray(4)]
        dpus.copy("a", b"okok")
        dpus.copy(out, "a")
        assert out == [bytearray(b"okok")] * 2
