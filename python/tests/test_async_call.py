"""Asynchronous mode, sync() and call() (dpu_callback)."""

import io
import struct
import threading

import numpy as np
import pytest

from dpu import DpuError, DpuSet, ErrorCode

PROFILE = "nrDpusPerRank=2"


def test_async_mode_pipeline(programs):
    n = 512
    with DpuSet(nr_ranks=2, profile=PROFILE, binary=programs.vadd, async_mode=True) as dpus:
        a = [np.arange(n, dtype=np.uint32) * (i + 1) for i in range(len(dpus))]
        b = np.full(n, 5, dtype=np.uint32)
        dpus.copy("a", a)
        dpus.copy("b", b)
        dpus.copy("n", np.array([n], dtype=np.uint32))
        dpus.exec(log=io.StringIO())  # queued; the log is not written in async mode
        c = [np.zeros(n, dtype=np.uint32) for _ in dpus]
        dpus.copy(c, "c")
        dpus.sync()
        for ai, ci in zip(a, c):
            np.testing.assert_array_equal(ci, ai + b)
        log = io.StringIO()
        dpus.log(log)
        assert log.getvalue().count("=== DPU#") == 4
        assert f"n={n} sum={int((a[3] + b).sum())}" in log.getvalue()


def test_async_overrides(programs):
    with DpuSet(nr_dpus=2, binary=programs.types) as dpus:
        dpus.copy("input", struct.pack("<I", 4), async_mode=True)
        dpus.exec(async_mode=True)
        dpus.sync()
        assert dpus.output.uint32() == [12, 12]
    with DpuSet(nr_dpus=2, binary=programs.types, async_mode=True) as dpus:
        dpus.copy("input", struct.pack("<I", 5), async_mode=False)
        out = io.StringIO()
        dpus.exec(log=out, async_mode=False)  # synchronous: logs written
        assert "input=5" in out.getvalue()
        # Symbol attributes are always synchronous.
        assert dpus.output.uint32() == [15, 15]


def test_async_fault_reported_by_sync(programs):
    with DpuSet(nr_dpus=1, binary=programs.fault, async_mode=True) as dpus:
        dpus.exec()
        with pytest.raises(DpuError) as e:
            dpus.sync()
        assert e.value.code == ErrorCode.DPU_ERR_DPU_FAULT


def test_async_keeps_temporary_buffers(programs):
    with DpuSet(nr_dpus=2, binary=programs.vadd1, async_mode=True) as dpus:
        for i in range(4):  # temporaries dropped at once by the caller
            dpus.copy("a", bytes([i]) * 64, offset=64 * i)
        dpus.sync()
        out = bytearray(256)
        dpus.dpus()[1].copy(out, "a", async_mode=False)
        assert out == b"".join(bytes([i]) * 64 for i in range(4))


def test_call_per_rank(programs):
    with DpuSet(nr_ranks=3, profile=PROFILE, binary=programs.types) as dpus:
        dpus.input = [struct.pack("<I", i) for i in range(len(dpus))]
        seen = []
        lock = threading.Lock()

        def fn(rank, index, arg):
            # A callback may use the API on the set it is given.
            values = rank.input.uint32()
            with lock:
                seen.append((index, rank, values, arg))

        dpus.call(fn, "arg")
        seen.sort(key=lambda s: s[0])
        assert [s[0] for s in seen] == [0, 1, 2]
        assert [s[1] for s in seen] == dpus.ranks()
        assert [s[2] for s in seen] == [[0, 1], [2, 3], [4, 5]]
        assert all(s[3] == "arg" for s in seen)


def test_call_single_and_on_dpu(programs):
    with DpuSet(nr_ranks=2, profile=PROFILE, binary=programs.types) as dpus:
        seen = []
        dpus.call(lambda s, i, a: seen.append((s, i, a)), 7, single_call=True)
        assert seen == [(dpus, 0, 7)]
        seen.clear()
        dpu = dpus.dpus()[3]
        dpu.call(lambda s, i, a: seen.append((s, a)), None)
        assert seen == [(dpu, None)]
        seen.clear()
        rank = dpus.ranks()[1]
        rank.call(lambda s, i, a: seen.append((s, i)))
        assert seen == [(rank, 0)]


def test_call_async_ordering(programs):
    with DpuSet(nr_dpus=2, binary=programs.types, async_mode=True) as dpus:
        dpus.copy("input", struct.pack("<I", 3))
        dpus.exec()
        results = []
        # Queued after the run: sees its results.
        dpus.call(lambda s, i, a: results.append(s.output.uint32()), None)
        dpus.sync()
        assert results == [[9, 9]]
        # Non-blocking asynchronous callback.
        done = []
        dpus.call(lambda s, i, a: done.append(a), 1, is_blocking=False)
        dpus.sync()
        assert done == [1]


def test_call_errors(programs):
    with DpuSet(nr_dpus=1, binary=programs.types) as dpus:
        with pytest.raises(DpuError) as e:
            dpus.call(lambda s, i, a: None, None, is_blocking=False)  # synchronous
        assert e.value.code == ErrorCode.DPU_ERR_NONBLOCKING_SYNC_CALLBACK
        with pytest.raises(DpuError):
            dpus.call("not callable")

        def boom(s, i, a):
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            dpus.call(boom)
        dpus.call(boom, async_mode=True)
        with pytest.raises(ValueError, match="boom"):
            dpus.sync()
        dpus.sync()  # reported once
