"""The virtual clock in Python hosts: time.perf_counter / time.monotonic / time.time show a
synchronous launch as the kernel's modeled time (cycles at the DPU's frequency plus the
launch's cost), not the emulation's; OPENPIM_CLOCK=real gives the real clocks."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KERNEL = ROOT / "tests" / "conformance" / "virtual_clock" / "task.c"

SCRIPT = r"""
import json, struct, sys, time
from dpu import DpuSet
from dpu import vclock
with DpuSet(nr_dpus=64, c_source=open(sys.argv[1]).read()) as dpus:
    dpus.iterations = struct.pack("<I", 16000)
    raw0 = vclock.REAL["perf_counter"]()
    p0, m0, t0 = time.perf_counter(), time.monotonic(), time.time()
    pn0 = time.perf_counter_ns()
    dpus.exec()
    pn1 = time.perf_counter_ns()
    p1, m1, t1 = time.perf_counter(), time.monotonic(), time.time()
    raw1 = vclock.REAL["perf_counter"]()
    cycles = struct.unpack("<Q", bytes(dpus.dpus()[0].cycles.data()))[0]
    cps = struct.unpack("<I", bytes(dpus.dpus()[0].clocks_per_sec.data()))[0]
print(json.dumps({"perf_counter": p1 - p0, "monotonic": m1 - m0, "time": t1 - t0,
                  "perf_counter_ns": (pn1 - pn0) / 1e9, "real": raw1 - raw0,
                  "modeled": cycles / cps + 85.5e-6 + 5.8e-6}))
"""


def _run(extra_env):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra_env)
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(KERNEL)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _near(got, want):
    return abs(got - want) <= want * 0.03 + 0.0003


def test_time_module_shows_the_virtual_time():
    r = _run({"OPENPIM_CLOCK": "virtual"})
    assert not _near(r["real"], r["modeled"]), r  # the emulation takes another time
    for name in ("perf_counter", "monotonic", "time", "perf_counter_ns"):
        assert _near(r[name], r["modeled"]), (name, r)


def test_openpim_clock_real_gives_the_real_clocks():
    r = _run({"OPENPIM_CLOCK": "real"})
    for name in ("perf_counter", "monotonic", "time"):
        assert abs(r[name] - r["real"]) <= 0.002 + 0.02 * r["real"], (name, r)
