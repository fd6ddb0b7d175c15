#!/usr/bin/env python3
"""The fixed cost of a kernel launch on one rank, derived from published warm launch timings.

Source: GitHub yongwonshin/atim (ATiM, ISCA 2025), the GEMV_SAMSUNG baseline's results pasted
in its tuning script (find it by its host code, pim_test/upmem/baseline/GEMV_SAMSUNG/host/app.c,
commit d01771a): real hardware, 10 warm-up and 100 timed repetitions per configuration, its
"DPU Kernel Time" = host time of one synchronous `dpu_launch` (timer 5 of app.c), for a
512 x 512 32-bit GEMV on 128 to 2,048 DPUs (2 to 32 ranks) with N column blocks. Each DPU runs
512 / N columns of 512 N / DPUs rows, so the kernels are small (tens to a few hundred µs) and
the launch's host-side cost is most of the time.

The model charges a launch on R ranks its cycles / f + `fixed_ns` + R x `per_rank_ns`. For each
published run the model gives the kernel's cycles (dpu/gemv_launch.c, a kernel of the same
shape, on one DPU with the run's rows, columns and tasklets); what remains of the published
time after the kernel and R x `per_rank_ns` is the launch's fixed cost per call (`fixed_ns`;
on one rank a launch costs `fixed_ns` + `per_rank_ns` beyond its cycles). The DPU clock of
that server is not published: both clocks UPMEM DPUs run at (350 and 400 MHz) are shown.
Also printed: a least-squares line of (published time - kernel) against the ranks, whose slope
checks `per_rank_ns` independently of the source it was taken from.

Nothing here reads the PrIM calibration rows. docs/fidelity.md ("Kernel launch, allocation and
loading") gives the rule that turned these figures into the profiles' `[launch] fixed_ns`.

Usage: bench/fidelity/launch_cost.py [--hardware NAME]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import ROOT, build, sdk_env  # noqa: E402

# (DPUs, N column blocks, tasklets, published synchronous launch time in ms), m = n = 512.
PUBLISHED = [
    (2048, 8, 1, 0.359523), (2048, 16, 2, 0.335575), (2048, 32, 4, 0.322144),
    (2048, 64, 8, 0.320015), (2048, 128, 16, 0.325968), (2048, 256, 16, 0.332299),
    (1024, 16, 4, 0.233172), (1024, 32, 8, 0.227868), (1024, 64, 16, 0.232473),
    (1024, 128, 16, 0.239081), (1024, 256, 16, 0.246852),
    (512, 16, 8, 0.180247), (512, 32, 16, 0.191658), (512, 64, 16, 0.190427),
    (512, 128, 16, 0.201118), (512, 256, 16, 0.217427),
    (256, 32, 16, 0.214077), (256, 64, 16, 0.219244), (256, 128, 16, 0.23935),
    (256, 256, 16, 0.273987),
    (128, 64, 16, 0.274046), (128, 128, 16, 0.31029),
]
SIZE = 512
CLOCKS_MHZ = (350.0, 400.0)
RANK_DPUS = 64


def kernel_cycles(env: dict[str, str], cols: int, rows: int, tasklets: int) -> int:
    """The model's cycles for the kernel with `rows` x `cols` on one DPU (the second launch)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run_env = dict(env, OPENPIM_REPORT=str(report))
        subprocess.run([str(HERE / "bin" / "gemv_launch_host"),
                        str(HERE / "bin" / f"gemv_launch_dpu_{tasklets}"), str(cols), str(rows)],
                       check=True, env=run_env, cwd=HERE)
        return int(json.loads(report.read_text())["launches"][-1]["cycles"])


def line_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares intercept and slope of ys against xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hardware", default="upmem-v1a", help="profile whose [launch] per_rank_ns is used")
    args = ap.parse_args()
    profile = Path(args.hardware)
    if not profile.exists():
        profile = ROOT / "profiles" / f"{args.hardware}.toml"
    if not profile.exists():
        sys.exit(f"hardware profile {args.hardware!r} not found (a name in profiles/ or a file)")
    per_rank_us = tomllib.loads(profile.read_text())["launch"]["per_rank_ns"] / 1000.0

    env = sdk_env()
    build(env)
    print(f"published warm synchronous launches (yongwonshin/atim GEMV_SAMSUNG, {SIZE} x {SIZE});")
    print(f"per_rank_ns {per_rank_us:.1f} us per rank launched ({profile.name})\n")
    print("  DPUs    N  tasklets  rows x cols  cycles | published us | fixed cost per call, us at"
          + "".join(f" {f:5.0f} MHz" for f in CLOCKS_MHZ))
    per_call: dict[float, list[float]] = {f: [] for f in CLOCKS_MHZ}
    ranks_of: list[float] = []
    rest_of: dict[float, list[float]] = {f: [] for f in CLOCKS_MHZ}
    for dpus, n_blocks, tasklets, ms in PUBLISHED:
        cols, rows = SIZE // n_blocks, SIZE * n_blocks // dpus
        cycles = kernel_cycles(env, cols, rows, tasklets)
        ranks = dpus // RANK_DPUS
        ranks_of.append(ranks)
        cells = []
        for f in CLOCKS_MHZ:
            rest = ms * 1000.0 - cycles / f
            rest_of[f].append(rest)
            fixed = rest - per_rank_us * ranks
            per_call[f].append(fixed)
            cells.append(f"{fixed:9.1f}")
        print(f"  {dpus:4d} {n_blocks:4d} {tasklets:9d} {rows:5d} x {cols:3d} {cycles:7d} | "
              f"{ms * 1000:12.1f} |                       " + " ".join(cells))
    print()
    for f in CLOCKS_MHZ:
        values = per_call[f]
        intercept, slope = line_fit(ranks_of, rest_of[f])
        print(f"at {f:.0f} MHz: fixed cost per call, median {statistics.median(values):.1f} us "
              f"(range {min(values):.1f}-{max(values):.1f}); free line through the runs: "
              f"{intercept:.1f} us + {slope:.2f} us per rank")
    mid = statistics.fmean(statistics.median(per_call[f]) for f in CLOCKS_MHZ)
    print(f"mean of the two medians: {mid:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
