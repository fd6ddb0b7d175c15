#!/usr/bin/env python3
"""C++ and Python host programs on MPI workers (docs/scale-out.md): the issue's "any SDK
program (C, C++ and Python hosts) runs unmodified" on `openpim run --mpi 2`, each against the
same program in process with tests/mpi/run.py's comparison (its own check passes in both runs;
every launch's statistics and the transfers equal; workers[] holds both workers; phases equal,
except those that hold measured host time — both programs make asynchronous calls whose
overlap with their host code is measured, so two local runs differ there too — which must be
within tests/mpi/run.py's `measured_bound` of two local runs' mean).

    tests/mpi/hosts.py        (in `make test` and `make test-mpi`; about half a minute)

Cases:
- C++: tests/conformance/cpp_host (the SDK's C++ API, dpu.hpp, mixed with the C API: sets of
  1 and 2 ranks, symbols, broadcasts and per-DPU copies, synchronous and asynchronous launches,
  callbacks, DPU logs, the C++ exceptions of failed calls) built with g++, on 2 ranks.
- Python: the `dpu` package (python/dpu, ctypes over libdpu.so) from a Python host on 128 DPUs
  of 2 ranks, one on each worker: its DPU program compiled from C source at run time, per-DPU
  and broadcast copies, symbol reads, a synchronous and an asynchronous run, each DPU's result
  checked against the CPU.

Prints PASS/FAIL lines and "N passed, M failed"; exit status 1 if any failed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from cluster import load_mpi_tests  # noqa: E402  (tests/mpi/run.py as a module)


# The Python host: every DPU adds its tag to its own input; the host checks each DPU's output
# against the CPU, then runs again asynchronously with one input broadcast to every DPU.
PY_HOST = r'''
import sys
import numpy as np
from dpu import DpuSet

SOURCE = r"""
#include <defs.h>
#include <mram.h>
#include <stdint.h>
#include <stdio.h>
#define N 2048
__mram_noinit uint32_t in[N], out[N];
__host uint32_t tag;
__dma_aligned uint32_t buf[NR_TASKLETS][64];
int main() {
    for (uint32_t i = me() * 64; i < N; i += NR_TASKLETS * 64) {
        mram_read(&in[i], buf[me()], sizeof(buf[0]));
        for (int j = 0; j < 64; j++) { buf[me()][j] += tag; }
        mram_write(buf[me()], &out[i], sizeof(buf[0]));
    }
    return 0;
}
"""

N = 2048
with DpuSet(nr_dpus=128, c_source=SOURCE) as dpus:
    assert len(dpus) == 128 and len(list(dpus.ranks())) == 2, "expected 128 DPUs in 2 ranks"
    inputs = [np.arange(N, dtype=np.uint32) * (d + 1) for d in range(len(dpus))]
    dpus.copy("in", inputs)
    for d, dpu in enumerate(dpus):
        dpu.tag = np.array([d * 7 + 1], dtype=np.uint32)
    dpus.exec()
    outs = [np.empty(N, dtype=np.uint32) for _ in dpus]
    dpus.copy(outs, "out")
    bad = [d for d in range(len(dpus)) if not (outs[d] == inputs[d] + np.uint32(d * 7 + 1)).all()]
    assert not bad, f"DPUs {bad[:5]} computed wrong outputs"
    # Again, asynchronously, with one input broadcast to every DPU and one tag for all.
    shared = np.full(N, 5, dtype=np.uint32)
    dpus.copy("in", shared, async_mode=True)
    dpus.tag = np.array([3], dtype=np.uint32)
    dpus.exec(async_mode=True)
    dpus.copy(outs, "out", async_mode=True)
    dpus.sync()
    assert all((o == 8).all() for o in outs), "the asynchronous run computed wrong outputs"
    print("OK python host on", len(dpus), "DPUs")
'''


def cpp_case(mpi, work: Path) -> None:
    label = "C++ host (dpu.hpp, g++) at 128 DPUs on 2 workers"
    folder = work / "cpp_host"
    shutil.copytree(ROOT / "tests" / "conformance" / "cpp_host", folder,
                    ignore=shutil.ignore_patterns("bin"))
    r = mpi.run(["make", "-s", "bin/host_gxx", "bin/dpu_task"], folder)
    if r.returncode != 0:
        return mpi.result(False, label, "building tests/conformance/cpp_host failed",
                          r.stdout + r.stderr)
    # Its sets of 4 DPUs (one rank) and 8 DPUs (one rank) are split over the 2 workers.
    mpi.compare("C++ host", folder, ["./bin/host_gxx"], 2, 2, "OK C++ host API", label=label,
                measured=True, parts=[[(0, 0, 2), (1, 4, 4)], [(0, 2, 2), (1, 0, 4)]])


def python_case(mpi, work: Path) -> None:
    folder = work / "py_host"
    folder.mkdir()
    (folder / "host.py").write_text(PY_HOST)
    mpi.compare("Python host", folder, [sys.executable, "host.py"], 2, 2,
                "OK python host on 128 DPUs",
                label="Python host (the dpu package) at 128 DPUs on 2 workers", measured=True)


def main() -> int:
    mpi = load_mpi_tests()
    probe = mpi.run([str(mpi.OPENPIM), "worker", "--socket", "/nonexistent/x"], HERE)
    if "built without MPI" in probe.stderr:
        print("FAIL this openpim has no MPI backend (make build with OpenMPI installed)")
        print("0 passed, 1 failed")
        return 1
    work = Path(tempfile.mkdtemp(prefix="openpim-mpi-hosts-"))
    try:
        cpp_case(mpi, work)
        python_case(mpi, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{mpi.passed} passed, {mpi.failed} failed")
    return 0 if mpi.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
