"""Loading programs: binaries, C and assembly sources, programs and symbols."""

import io
from pathlib import Path

import pytest

from conftest import ANSWER_S, TYPES_C
from dpu import DpuError, DpuProgram, DpuSet, DpuSymbol, ErrorCode, compiler

SQUARE_C = r"""
#include <attributes.h>
#include <stdint.h>
__host uint32_t x;
__host uint32_t y;
int main() { y = x * x; return 0; }
"""


def _square(dpus):
    dpus.x = (7).to_bytes(4, "little")
    dpus.exec()
    return dpus.y.uint32()


def test_binary_path_at_construction(programs):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        assert isinstance(dpus.program, DpuProgram)
        assert dpus.v_i32.int32() == [-123456, -123456]


def test_binary_pathlike_and_bytes(programs):
    with DpuSet(nr_dpus=1, binary=Path(programs.types)) as dpus:
        assert dpus.v_i32.int32() == -123456
    image = Path(programs.types).read_bytes()
    with DpuSet(nr_dpus=1, binary=image) as dpus:
        assert dpus.v_i32.int32() == -123456
    with DpuSet(nr_dpus=1, binary=bytearray(image)) as dpus:
        assert dpus.v_i8.int8() == -5


def test_c_source_text():
    with DpuSet(nr_dpus=2, c_source=SQUARE_C) as dpus:
        assert _square(dpus) == [49, 49]


def test_c_source_path_file_object_and_list(tmp_path):
    src = tmp_path / "square.c"
    src.write_text(SQUARE_C)
    with DpuSet(nr_dpus=1, c_source=str(src)) as dpus:
        assert _square(dpus) == 49
    with DpuSet(nr_dpus=1, c_source=src) as dpus:
        assert _square(dpus) == 49
    with DpuSet(nr_dpus=1, c_source=io.StringIO(SQUARE_C)) as dpus:
        assert _square(dpus) == 49
    with src.open() as f, DpuSet(nr_dpus=1, c_source=f) as dpus:
        assert _square(dpus) == 49
    # Two translation units.
    helper = tmp_path / "helper.c"
    helper.write_text("#include <stdint.h>\nuint32_t twice(uint32_t v) { return 2 * v; }\n")
    main = (
        "#include <attributes.h>\n#include <stdint.h>\nuint32_t twice(uint32_t);\n"
        "__host uint32_t x;\n__host uint32_t y;\nint main() { y = twice(x); return 0; }\n"
    )
    with DpuSet(nr_dpus=1, c_source=[main, str(helper)]) as dpus:
        assert _square(dpus) == 14


def test_asm_source():
    with DpuSet(nr_dpus=2, asm_source=ANSWER_S) as dpus:
        dpus.exec()
        assert dpus.answer.uint32() == [42, 42]


def test_load_method_returns_program_with_symbols(programs):
    with DpuSet(nr_dpus=1) as dpus:
        assert dpus.program is None
        program = dpus.load(programs.types)
        assert isinstance(program, DpuProgram)
        assert dpus.program is program
        names = program.symbol_names()
        for name in ("v_i8", "v_u64", "load", "input", "output", "m_bytes", "__sys_used_mram_end"):
            assert name in names
        assert "main" in names  # IRAM symbols are reachable too
        sym = program.get_symbol("v_u32")
        assert isinstance(sym, DpuSymbol)
        assert sym.name == "v_u32"
        assert sym.size() == 8
        assert sym.value() & 0x08000000 == 0  # WRAM
        assert program.get_symbol("m_bytes").value() & 0x08000000  # MRAM
        assert program.get_symbol("m_bytes").size() == 24
        assert program.get_symbol("no_such_symbol") is None
        assert "v_u32" in repr(sym)
        assert "host-reachable symbols" in repr(program)
        every = program.fetch_all_symbols()
        assert set(every) == set(names)
        assert every["v_u32"].size() == 8


def test_reload_replaces_program(programs):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        assert "v_i8" in dir(dpus)
        dpus.load(c_source=SQUARE_C)
        assert "v_i8" not in dir(dpus)
        with pytest.raises(AttributeError):
            dpus.v_i8
        assert _square(dpus) == [49, 49]


def test_load_on_one_dpu(programs):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        first, second = dpus.dpus()
        first.load(c_source=SQUARE_C)
        assert dpus.program is None  # the DPUs now run different programs
        assert dpus.ranks()[0].program is None
        assert second.v_i32.int32() == -123456
        assert _square(first) == 49
        with pytest.raises(AttributeError):
            dpus.v_i32


def test_compiler_defines(tmp_path):
    src = tmp_path / "tasklets.c"
    src.write_text(
        "#include <attributes.h>\n#include <stdint.h>\n__host uint32_t count;\n"
        "int main() { count = NR_TASKLETS; return 0; }\n"
    )
    out = tmp_path / "tasklets.dpu"
    cmd = compiler.DEFAULT_DPU_COMPILER.command([str(src)], output=str(out), defines={"NR_TASKLETS": 11})
    assert "-DNR_TASKLETS=11" in cmd and cmd[-2:] == ["-o", str(out)]
    compiler.DEFAULT_DPU_COMPILER.compile(str(src), output=str(out), defines={"NR_TASKLETS": 11})
    with DpuSet(nr_dpus=1, binary=str(out)) as dpus:
        dpus.exec()
        assert dpus.count.uint32() == 11


def test_missing_binary():
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, binary="/no/such/program.dpu")
    assert e.value.code == ErrorCode.DPU_ERR_ELF_NO_SUCH_FILE
    with DpuSet(nr_dpus=1) as dpus:
        with pytest.raises(DpuError) as e:
            dpus.load("/no/such/program.dpu")
        assert e.value.code == ErrorCode.DPU_ERR_ELF_NO_SUCH_FILE


def test_invalid_binary(tmp_path):
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, binary=b"not an ELF file")
    assert e.value.code == ErrorCode.DPU_ERR_ELF_INVALID_FILE
    junk = tmp_path / "junk.dpu"
    junk.write_bytes(b"\x7fELF garbage")
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, binary=str(junk))
    assert e.value.code == ErrorCode.DPU_ERR_ELF_INVALID_FILE
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, binary=12)
    assert e.value.code == ErrorCode.DPU_ERR_ELF_INVALID_FILE


def test_too_many_tasklets(programs):
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, binary=programs.too_many)
    assert e.value.code == ErrorCode.DPU_ERR_TOO_MANY_TASKLETS


def test_compile_error():
    with pytest.raises(DpuError) as e:
        DpuSet(nr_dpus=1, c_source="int main( {\n")
    assert "compiling the DPU source failed" in str(e.value)
    assert "error" in str(e.value)
    with pytest.raises(DpuError):
        DpuSet(nr_dpus=1, c_source="/no/such/source.c")
    with pytest.raises(DpuError):
        DpuSet(nr_dpus=1, c_source=42)


def test_load_arguments():
    with DpuSet(nr_dpus=1) as dpus:
        with pytest.raises(DpuError):
            dpus.load()
        with pytest.raises(DpuError):
            dpus.load(binary="x.dpu", c_source=SQUARE_C)


def test_exec_without_program():
    with DpuSet(nr_dpus=1) as dpus:
        with pytest.raises(DpuError) as e:
            dpus.exec()
        assert e.value.code == ErrorCode.DPU_ERR_NO_PROGRAM_LOADED
        with pytest.raises(DpuError) as e:
            dpus.copy("x", bytes(4))
        assert e.value.code == ErrorCode.DPU_ERR_NO_PROGRAM_LOADED


def test_types_source_compiles_with_c_source():
    # The same source through c_source= (1 tasklet).
    with DpuSet(nr_dpus=1, c_source=TYPES_C) as dpus:
        dpus.input = (5).to_bytes(4, "little")
        dpus.exec()
        assert dpus.output.uint32() == 15
