"""Symbol attributes: typed reads (DpuVariable), writes, lookup rules."""

import array
import struct

import numpy as np
import pytest

from dpu import DpuError, DpuSet, DpuVariable, ErrorCode


def test_typed_reads_single_dpu(programs):
    with DpuSet(nr_dpus=1, binary=programs.types) as dpu:
        assert isinstance(dpu.v_i8, DpuVariable)
        assert dpu.v_i8.int8() == -5  # 1-byte WRAM symbol: read through its word
        assert list(dpu.v_u8.uint8()) == [1, 2, 3, 4, 5, 6, 7, 8]
        assert list(dpu.v_i16.int16()) == [-1, 2, -3, 4]
        assert list(dpu.v_u16.uint16()) == [65535, 1, 2, 3]
        assert dpu.v_i32.int32() == -123456
        assert list(dpu.v_u32.uint32()) == [4000000000, 7]
        assert dpu.v_i64.int64() == -9000000000
        assert dpu.v_u64.uint64() == 18000000000000000000
        assert list(dpu.v_f32.float()) == [1.5, -2.25]
        assert dpu.v_f64.double() == 3.140625
        assert bytes(dpu.v_u8.data()) == bytes(range(1, 9))
        assert bytes(dpu.v_u64.data()) == struct.pack("<Q", 18000000000000000000)
        assert "1 DPU(s) x 8 bytes" in repr(dpu.v_u64)


def test_typed_reads_many_dpus(programs):
    with DpuSet(nr_dpus=3, binary=programs.types) as dpus:
        assert dpus.v_i32.int32() == [-123456] * 3
        assert [list(v) for v in dpus.v_u32.uint32()] == [[4000000000, 7]] * 3
        assert len(dpus.v_u8.data()) == 3
        assert dpus.v_i8.int8() == [-5, -5, -5]
        # A rank and a DPU of the set have the symbols too.
        assert dpus.ranks()[0].v_i32.int32() == [-123456] * 3
        assert dpus.dpus()[1].v_f64.double() == 3.140625


def test_attribute_writes(programs):
    with DpuSet(nr_dpus=3, binary=programs.types) as dpus:
        dpus.input = struct.pack("<I", 10)  # one buffer for every DPU
        assert dpus.input.uint32() == [10, 10, 10]
        dpus.input = [struct.pack("<I", 20 + i) for i in range(3)]  # one per DPU
        assert dpus.input.uint32() == [20, 21, 22]
        dpus.dpus()[2].input = array.array("I", [99])
        assert dpus.input.uint32() == [20, 21, 99]
        dpus.v_f32 = np.array([0.5, 4.0], dtype=np.float32)
        assert [list(v) for v in dpus.v_f32.float()] == [[0.5, 4.0]] * 3
        # Sub-word WRAM symbols are patched in place; their neighbours keep their values.
        dpus.v_i8 = struct.pack("<b", -100)
        assert dpus.v_i8.int8() == [-100] * 3
        dpus.v_u16 = [struct.pack("<H", 7), None, struct.pack("<H", 9)]
        assert [v[0] for v in dpus.v_u16.uint16()] == [7, 65535, 9]
        assert [list(v)[1:] for v in dpus.v_u16.uint16()] == [[1, 2, 3]] * 3
        with pytest.raises(DpuError) as e:
            dpus.v_i8 = bytes(2)
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_SYMBOL_ACCESS
        dpus.exec()
        assert dpus.output.uint32() == [60, 63, 297]


def test_mram_symbol_attribute(programs):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        dpus.m_bytes = bytes(range(24))
        assert [bytes(v) for v in dpus.m_bytes.data()] == [bytes(range(24))] * 2
        assert [list(v) for v in dpus.m_bytes.uint64()] == [list(struct.unpack("<3Q", bytes(range(24))))] * 2
        assert [list(v) for v in dpus.m_bytes.uint16()][0][:2] == [0x0100, 0x0302]


def test_bad_cast():
    with DpuSet(nr_dpus=1, c_source="#include <attributes.h>\n__host char c3[12];\nint main(){return 0;}\n") as dpu:
        assert list(dpu.c3.uint32()) == [0, 0, 0]
        with pytest.raises(DpuError) as e:
            dpu.c3.uint64()
        assert e.value.code == ErrorCode.DPU_ERR_INVALID_BUFFER_SIZE


def test_methods_win_over_symbols(programs):
    with DpuSet(nr_dpus=1, binary=programs.types) as dpu:
        assert callable(dpu.load)  # the DPU variable `load` does not hide the method
        dpu.copy("load", struct.pack("<I", 5))
        out = bytearray(4)
        dpu.copy(out, "load")
        assert out == struct.pack("<I", 5)
        assert dpu.program.get_symbol("load").size() == 4


def test_unknown_attribute(programs):
    with DpuSet(nr_dpus=1, binary=programs.types) as dpu:
        with pytest.raises(AttributeError):
            dpu.no_such_symbol
        assert not hasattr(dpu, "no_such_symbol")
        dpu.plain_attribute = 3  # not a symbol: an ordinary attribute
        assert dpu.plain_attribute == 3
        names = dir(dpu)
        assert "v_u64" in names and "copy" in names
    with DpuSet(nr_dpus=1) as empty:
        with pytest.raises(AttributeError) as e:
            empty.v_u64
        assert "no single program" in str(e.value)


def test_freed_set_symbol_access(programs):
    dpus = DpuSet(nr_dpus=1, binary=programs.types)
    dpus.free()
    with pytest.raises(DpuError) as e:
        dpus.v_i32
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET
    with pytest.raises(DpuError) as e:
        dpus.input = bytes(4)
    assert e.value.code == ErrorCode.DPU_ERR_INVALID_DPU_SET


def test_mram_heap_pointer(programs):
    with DpuSet(nr_dpus=1, binary=programs.types) as dpu:
        heap = dpu.program.get_symbol("__sys_used_mram_end")
        assert heap.value() & 0x08000000
        assert heap.value() + heap.size() == 0x08000000 + 64 * 1024 * 1024
        dpu.copy(heap, b"heap data", offset=1000)
        out = bytearray(9)
        dpu.copy(out, "__sys_used_mram_end", offset=1000)
        assert out == b"heap data"
