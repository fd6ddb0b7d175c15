#!/usr/bin/env python3
"""How near any transfer model can get to the calibration rows: the rows' own scatter.

The calibration rows (shared/calibration/prim-calibration.csv) give each PrIM run's CPU-DPU and
DPU-CPU time on the real server. A transfer model of the usual kind charges a direction's time
as a fixed cost per SDK call plus a cost per byte. This script fits that form to the hardware
rows themselves, in-sample — a fit no model may do (it judges the model on the very rows it
would be fitted to) — and reports the mean absolute error that even the fitted form leaves:

  - per DPU count (each direction: 4 fits, 2 parameters each), pooling the benchmarks;
  - per DPU count and benchmark (24 fits), each benchmark's rows with their own two constants.

What is left after the second is scatter the form cannot follow (rows where twice the bytes
take the same time, or where the time per byte changes by 2x between neighbouring sizes), i.e.
a floor under the MAE of any model of that form, fitted or not. The calls and bytes of each row
are the program's own (the run report's `transfers`), read from the table that
`bench/fidelity/run.py --prim-only` writes (bench/fidelity/out/prim_calibration.csv).

The fit minimises the mean of |a x calls + b x bytes - hw| / hw over a log grid of a (0.1 µs to
10 ms per call, and 0) and b (1 ps to 100 ns per byte, and 0), then over a finer grid (±10 %)
around the best point.

Usage: bench/fidelity/transfer_floor.py [--table FILE]
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TABLE = HERE / "out" / "prim_calibration.csv"
DIRECTIONS = {
    "CPU-DPU": ("hw_cpu_dpu_ms", "model_cpu_dpu_ms", "cpu_dpu_calls", "cpu_dpu_bytes"),
    "DPU-CPU": ("hw_dpu_cpu_ms", "model_dpu_cpu_ms", "dpu_cpu_calls", "dpu_cpu_bytes"),
}
PER_CALL_MS = np.concatenate([[0.0], np.logspace(-4, 1, 301)])
PER_BYTE_MS = np.concatenate([[0.0], np.logspace(-9, -4, 301)])


def best_on_grid(calls: np.ndarray, nbytes: np.ndarray, hw: np.ndarray,
                 per_call: np.ndarray, per_byte: np.ndarray) -> tuple[float, float, np.ndarray]:
    """The a, b of the grid with the least mean relative error, and its errors."""
    pred = per_call[:, None, None] * calls + per_byte[None, :, None] * nbytes
    err = np.abs(pred - hw) / hw
    i, j = np.unravel_index(np.argmin(err.mean(axis=2)), err.shape[:2])
    return float(per_call[i]), float(per_byte[j]), err[i, j]


def fitted_errors(calls: np.ndarray, nbytes: np.ndarray, hw: np.ndarray) -> np.ndarray:
    """Relative errors of the best a x calls + b x bytes on these rows: a log grid, then a
    finer one around its best point."""
    a, b, _ = best_on_grid(calls, nbytes, hw, PER_CALL_MS, PER_BYTE_MS)
    fine = np.linspace(0.9, 1.1, 81)
    return best_on_grid(calls, nbytes, hw, np.append(a * fine, 0.0), np.append(b * fine, 0.0))[2]


def floor(rows: list[dict[str, str]], direction: str, key: Callable[[dict[str, str]], object]) -> tuple[float, int]:
    hw_col, _, calls_col, bytes_col = DIRECTIONS[direction]
    groups: dict[object, list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    errs = []
    for g in groups.values():
        col = lambda c: np.array([float(r[c]) for r in g])  # noqa: E731
        errs.append(fitted_errors(col(calls_col), col(bytes_col), col(hw_col)))
    return float(np.concatenate(errs).mean()), len(groups)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", type=Path, default=TABLE)
    a = ap.parse_args()
    if not a.table.is_file():
        sys.exit(f"{a.table} is missing: run bench/fidelity/run.py --prim-only first")
    rows = [r for r in csv.DictReader(a.table.open()) if r.get("check") == "OK"]
    if not rows:
        sys.exit(f"{a.table} has no verified row")
    print(f"transfer MAE on the {len(rows)} calibration rows: the model against the form fixed cost per call +")
    print("cost per byte fitted to the rows themselves (in-sample; a floor under any model of that form)")
    print(f"{'direction':<9} {'model':>7} {'fit per DPU count':>19} {'fit per DPU count and benchmark':>33}")
    for d, (hw_col, model_col, _, _) in DIRECTIONS.items():
        model = np.mean([abs(float(r[model_col]) - float(r[hw_col])) / float(r[hw_col]) for r in rows])
        per_dpus, n1 = floor(rows, d, lambda r: r["dpus"])
        per_bench, n2 = floor(rows, d, lambda r: (r["dpus"], r["benchmark"]))
        print(f"{d:<9} {model * 100:>6.1f}% {per_dpus * 100:>8.1f}% ({n1} fits) {per_bench * 100:>21.1f}% ({n2} fits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
