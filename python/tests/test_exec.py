"""exec() and log(): runs, printf output to any writable object, faults."""

import io
import struct
import sys

import pytest

from dpu import DpuError, DpuSet, ErrorCode


def _sdk_dpu_id(index):
    """The SDK's DPU id (dpu_get_id) of DPU `index` of the first rank: rank id 0x3000 (hw
    target << 12 | rank 0) << 16 | slice << 8 | member, 8 DPUs a slice."""
    return 0x3000_0000 | (index // 8) << 8 | index % 8


def _expected_log(dpu_index, value, tasklets=2):
    lines = [f"=== DPU#0x{_sdk_dpu_id(dpu_index):x} ==="]
    lines += [f"tasklet {t}: input={value}" for t in range(tasklets)]
    return "\n".join(lines) + "\n"


def _prepare(dpus):
    dpus.input = [struct.pack("<I", 10 * i) for i in range(len(dpus))]


def test_exec_log_to_stdout(programs, capsys):
    with DpuSet(nr_dpus=2, binary=programs.types, log=sys.stdout) as dpus:
        _prepare(dpus)
        print("before")
        dpus.exec()
        print("after")
    out = capsys.readouterr().out
    assert out == "before\n" + _expected_log(0, 0) + _expected_log(1, 10) + "after\n"


def test_exec_without_log_writes_nothing(programs, capsys):
    with DpuSet(nr_dpus=1, binary=programs.types) as dpus:
        dpus.exec()
        assert dpus.output.uint32() == 0
    assert capsys.readouterr().out == ""


def test_exec_log_argument_overrides(programs):
    ctor = io.StringIO()
    with DpuSet(nr_dpus=2, binary=programs.types, log=ctor) as dpus:
        _prepare(dpus)
        dpus.exec()
        assert ctor.getvalue() == _expected_log(0, 0) + _expected_log(1, 10)
        other = io.StringIO()
        dpus.exec(log=other)
        assert other.getvalue() == _expected_log(0, 0) + _expected_log(1, 10)
        assert ctor.getvalue().count("=== DPU#") == 2  # not written again


def test_exec_log_list_and_dict(programs):
    with DpuSet(nr_dpus=3, binary=programs.types) as dpus:
        _prepare(dpus)
        logs = [io.StringIO(), None, io.StringIO()]
        dpus.exec(log=logs)
        assert logs[0].getvalue() == _expected_log(0, 0)
        assert logs[2].getvalue() == _expected_log(2, 20)
        only = io.StringIO()
        dpus.exec(log={dpus.dpus()[1]: only})
        assert only.getvalue() == _expected_log(1, 10)
        with pytest.raises(DpuError):
            dpus.exec(log=[io.StringIO()])  # one per DPU
        with DpuSet(nr_dpus=1) as stranger:
            with pytest.raises(DpuError):
                dpus.exec(log={stranger: io.StringIO()})


def test_constructor_log_list(programs):
    logs = [io.StringIO(), io.StringIO()]
    with DpuSet(nr_dpus=2, binary=programs.types, log=logs) as dpus:
        _prepare(dpus)
        dpus.exec()
    assert [l.getvalue() for l in logs] == [_expected_log(0, 0), _expected_log(1, 10)]
    with pytest.raises(DpuError):
        DpuSet(nr_dpus=2, log=[io.StringIO()])


def test_log_to_files(programs, tmp_path):
    text_path = tmp_path / "log.txt"
    bin_path = tmp_path / "log.bin"
    with DpuSet(nr_dpus=1, binary=programs.types) as dpus:
        with open(text_path, "w") as text, open(bin_path, "wb") as binary:
            dpus.exec(log=text)
            dpus.log(binary)
    assert text_path.read_text() == _expected_log(0, 0)
    assert bin_path.read_bytes() == _expected_log(0, 0).encode()


def test_log_method(programs, capsys):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        _prepare(dpus)
        dpus.exec()
        dpus.log()  # default: sys.stdout
        assert capsys.readouterr().out == _expected_log(0, 0) + _expected_log(1, 10)
        dpus.dpus()[1].log()
        assert capsys.readouterr().out == _expected_log(1, 10)
        buf = io.StringIO()
        dpus.log([None, buf])
        assert buf.getvalue() == _expected_log(1, 10)
        assert capsys.readouterr().out == _expected_log(0, 0)  # None: the default


def test_log_object_without_write(programs):
    with pytest.raises(DpuError):
        DpuSet(nr_dpus=1, log=42)
    with DpuSet(nr_dpus=1, binary=programs.types) as dpus:
        with pytest.raises(DpuError):
            dpus.exec(log=object())
        with pytest.raises(DpuError):
            dpus.log(3)


def test_fault(programs):
    with DpuSet(nr_dpus=2, binary=programs.fault) as dpus:
        with pytest.raises(DpuError) as e:
            dpus.exec(log=io.StringIO())
        assert e.value.code == ErrorCode.DPU_ERR_DPU_FAULT
        assert "fault" in str(e.value)
        out = io.StringIO()
        dpus.dpus()[0].log(out)  # the output up to the fault
        assert out.getvalue() == "=== DPU#0x30000000 ===\nbefore the fault\n"


def test_fault_with_max_cycles():
    src = "int main() { for (;;) {} return 0; }\n"
    with DpuSet(nr_dpus=1, profile="maxCycles=20000", c_source=src) as dpus:
        with pytest.raises(DpuError) as e:
            dpus.exec()
        assert e.value.code == ErrorCode.DPU_ERR_DPU_FAULT


def test_exec_on_rank_and_dpu_subsets(programs):
    with DpuSet(nr_ranks=2, profile="nrDpusPerRank=2", binary=programs.types) as dpus:
        dpus.input = struct.pack("<I", 1)
        dpus.ranks()[1].exec()
        assert dpus.output.uint32() == [0, 0, 3, 3]
        dpus.input = struct.pack("<I", 2)
        dpus.dpus()[0].exec()
        assert dpus.output.uint32() == [6, 0, 3, 3]


def test_repeated_runs_keep_state(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd) as dpus:
        n = 128
        a = struct.pack(f"<{n}I", *range(n))
        dpus.copy("a", a)
        dpus.copy("b", bytes(4 * n))
        dpus.copy("n", struct.pack("<I", n))
        for _ in range(3):  # c = a + b, then b = c: b grows by a each run
            dpus.exec()
            c = bytearray(4 * n)
            dpus.dpus()[0].copy(c, "c")
            dpus.copy("b", c)
        assert list(struct.unpack(f"<{n}I", c)) == [3 * i for i in range(n)]
