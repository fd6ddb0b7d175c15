#!/usr/bin/env python3
"""OpenPIM fidelity suite, two parts:

1. the PrIM calibration table: the real-hardware rows of shared/calibration/prim-calibration.csv
   (PrIM GEMV, HST-S, SCAN-RSS, SEL, TRNS, UNI at 1-64 DPUs) against the model: each benchmark
   built once per configuration from a copy of its PrIM folder with its own Makefile, run with
   the row's host command, the model's kernel / CPU-DPU / DPU-CPU times read from the run
   report (prim_calibration.py); per-row errors, per-benchmark and overall kernel MAE, the
   worst row, transfer MAE each direction; writes out/prim_calibration.{csv,json};
2. the microbenchmarks: the project's own programs (ordinary UPMEM SDK programs in
   bench/fidelity) compared with the published characterisation of real UPMEM hardware (PrIM,
   Gomez-Luna et al., IEEE Access 2022, arXiv 2105.03814): one table (emulated vs published
   value and relative error per point) and the worst and median errors; writes
   out/results.csv, out/results.json and, when matplotlib is installed, PNG plots to out/.

docs/fidelity.md explains every benchmark and value.

Usage: bench/fidelity/run.py [--prim-only | --micro-only] [--table calibration|vpim]
                             [--bench GEMV,SEL,...] [--jobs N]
                             [--compiler gcc|clang] [--quick] [--no-plots] [--groups abcde]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "out"

FREQ_MHZ = 350.0  # profile upmem-v1a (the default); read back from the reports where possible

# --------------------------------------------------------------------------- published values
# Status strings (also explained in docs/fidelity.md):
MODEL_INPUT = "model input: DESIGN.md s3 (PrIM alpha/beta)"
RECALLED = "recalled, unverified (PrIM)"
CONFIRMED = "confirmed: public secondary summary"
SECONDARY_THEORY = "secondary: lecture notes, theoretical"
PREDICTION = "prediction (no published value)"

ALPHA_READ, ALPHA_WRITE, BETA = 77.0, 61.0, 0.5  # DESIGN.md s3, cycles and cycles/byte

# Arithmetic throughput, MOPS at 350 MHz, saturated (>= 11 tasklets). Recalled by the lead
# from the PrIM paper; not verifiable here (the ADD values agree with the logs below).
ARITH_PUBLISHED: dict[tuple[str, str], float] = {
    ("int32", "add"): 58.56, ("int32", "sub"): 58.45, ("int32", "mul"): 10.27, ("int32", "div"): 11.27,
    ("int64", "add"): 50.16, ("int64", "sub"): 50.16, ("int64", "mul"): 2.56, ("int64", "div"): 1.40,
    ("float", "add"): 4.91, ("float", "sub"): 4.59, ("float", "mul"): 1.91, ("float", "div"): 0.34,
    ("double", "add"): 3.32, ("double", "sub"): 3.11, ("double", "mul"): 0.53, ("double", "div"): 0.16,
}
ARITH_PUBLISHED_TASKLETS = 16  # the recalled values are compared at this point of the sweep
# The published microbenchmark's operands (CMU-SAFARI/prim-benchmarks,
# Microbenchmarks/Arithmetic-Throughput): elements rand() (31-bit), scalar = the input size per
# DPU, 1,048,576 for the logged runs (-i 1048576, 1 DPU). dpu/arith.c uses the same.
ARITH_SCALAR = 1 << 20

# Real-hardware logs of the PrIM arithmetic-throughput microbenchmark, ADD only (GitHub
# CMU-SAFARI/prim-benchmarks, Microbenchmarks/Arithmetic-Throughput/profile/ADD_<TYPE>_tl<N>.txt):
# "DPU cycles" (the largest per-tasklet sum of timed cycles) for 1,048,576 elements on one DPU.
# MOPS = elements x 350 / cycles. These replace the recalled ADD values where they exist.
LOGS = "verified: PrIM real-hardware logs"
# The same logs also time the benchmark's one host->DPU and one DPU->host transfer of the
# whole array (1 DPU, dpu_copy_to/from, 4 MiB for INT32 and 8 MiB for INT64, timer around
# one call). These are first, cold transfers in a single run (the paper's transfer benchmark
# warms up 5 times and averages 20), so they are shown but kept out of the target figures.
LOGS_COLD = "logs: one cold transfer"
XFER_LOG_MS: dict[tuple[str, int], float] = {("to", 4 << 20): 23.263, ("to", 8 << 20): 42.364,
                                             ("from", 4 << 20): 39.591, ("from", 8 << 20): 79.295}
# Real-hardware transfers on another UPMEM server (GitHub Loremkang/upmem-sdk-light,
# results/UPMEM_{1,2,3}.txt: UPMEM SDK 2023.2.0, 32 ranks = 2,048 DPUs, one dpu_push_xfer to or
# from every DPU with n bytes each, time per call averaged over 1-2 s of repetitions; mean of
# the 6 runs of the 3 files). ms per call, by (direction, bytes per DPU). The 0-byte intercept
# of the 1 and 2 KiB points is one of the 32-rank fixed costs from which the bus model's cost
# per further rank of a call is derived (with two other servers' for reads: docs/fidelity.md),
# so they are partly model inputs; the others are checks of the model on another server.
OTHER_SERVER = "published: other server (32 ranks, SDK 2023.2)"
XFER_32RANKS_MS: dict[tuple[str, int], float] = {
    ("to", 1 << 10): 0.5552, ("to", 2 << 10): 0.7751, ("to", 16 << 10): 2.6997,
    ("to", 64 << 10): 8.7443, ("to", 512 << 10): 44.1976,
    ("from", 1 << 10): 1.0401, ("from", 2 << 10): 1.3974, ("from", 16 << 10): 5.9955,
    ("from", 64 << 10): 15.2130, ("from", 512 << 10): 92.349,
}
ARITH_LOG_ELEMENTS = 1_048_576
ARITH_LOG_CYCLES: dict[str, dict[int, float]] = {
    "int32": {1: 6.92941e7, 2: 3.46475e7, 3: 2.31122e7, 4: 1.73262e7, 5: 1.38744e7,
              6: 1.15581e7, 7: 9.91675e6, 8: 8.66466e6, 9: 7.71637e6, 10: 6.93822e6,
              11: 6.31261e6, 12: 6.3089e6, 16: 6.28186e6, 24: 6.28288e6},
    "int64": {1: 8.07993e7, 11: 7.35358e6, 16: 7.31051e6, 24: 7.28016e6},
    "float": {1: 8.20807e8, 11: 7.47428e7, 16: 7.45888e7, 24: 7.47102e7},
    "double": {1: 1.21396e9, 11: 1.10409e8, 16: 1.10299e8, 24: 1.10467e8},
}


def arith_published(ty: str, op: str, tasklets: int) -> tuple[Optional[float], str]:
    """The published MOPS for a point of the arithmetic sweep, with its status."""
    if op == "add" and tasklets in ARITH_LOG_CYCLES[ty]:
        return ARITH_LOG_ELEMENTS * FREQ_MHZ / ARITH_LOG_CYCLES[ty][tasklets], LOGS
    if op != "add" and tasklets == ARITH_PUBLISHED_TASKLETS:
        return ARITH_PUBLISHED[(ty, op)], RECALLED
    return None, PREDICTION


MRAM_BW_2048_PUBLISHED = {"read": 628.23, "write": 633.22}  # MB/s, recalled, unverified
WRAM_COPY_THEORY = 2800.0  # MB/s, 2 instructions per 16 bytes at 350 MHz (lecture notes)
# WRAM STREAM ADD / SCALE / TRIAD, MB/s, >= 11 tasklets: recalled by the lead from the PrIM
# paper's WRAM bandwidth figure; not verifiable here.
WRAM_RECALLED = {"ADD": 1682.46, "SCALE": 42.03, "TRIAD": 61.66}

# GB/s (1e9 B/s), 32 MB per DPU.
XFER_PUBLISHED: dict[tuple[str, str, int], tuple[float, str]] = {
    ("serial", "to", 1): (0.33, CONFIRMED),
    ("serial", "from", 1): (0.12, RECALLED),
    ("parallel", "to", 64): (6.68, CONFIRMED),
    ("parallel", "from", 64): (4.74, RECALLED),
    ("broadcast", "to", 64): (16.88, RECALLED),
}

TYPES = ["int32", "int64", "float", "double"]
OPS = ["add", "sub", "mul", "div"]
STREAMS = ["COPY-DMA", "COPY", "ADD", "SCALE", "TRIAD"]


@dataclass
class Row:
    group: str
    bench: str
    point: str
    emulated: float
    unit: str
    published: Optional[float] = None
    status: str = PREDICTION
    note: str = ""
    x: float = 0.0  # for plots
    series: str = ""  # for plots

    @property
    def error(self) -> Optional[float]:
        if self.published is None or self.published == 0:
            return None
        return (self.emulated - self.published) / self.published


@dataclass
class Suite:
    quick: bool
    rows: list[Row] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows.append(row)


# --------------------------------------------------------------------------- running things
def sdk_env(compiler: Optional[str] = None) -> dict[str, str]:
    """The environment after `eval "$(openpim env)"` (SDK commands on PATH, libdpu found), with
    OPENPIM_DPU_COMPILER set to `compiler`, or unset (the shim's default) when None."""
    openpim = ROOT / "target" / "release" / "openpim"
    if not openpim.exists():
        sys.exit(f"{openpim} not found: run `make build` first")
    out = subprocess.run(["bash", "-c", 'eval "$("$0" env)" && env -0', str(openpim)],
                         check=True, capture_output=True).stdout
    env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    env.pop("OPENPIM_REPORT", None)
    env.pop("OPENPIM_TRACE", None)
    env.pop("OPENPIM_DPU_CC", None)
    env.pop("OPENPIM_DPU_COMPILER", None)
    if compiler:
        env["OPENPIM_DPU_COMPILER"] = compiler
    return env


def build(env: dict[str, str]) -> None:
    jobs = str(max(1, os.cpu_count() or 1))
    # (Programs built with another DPU toolchain, or another compiler, are rebuilt.)
    subprocess.run([str(ROOT / "scripts/dpu-toolchain.sh"), "fresh", str(HERE)], check=True, env=env)
    subprocess.run(["make", "-s", "-j", jobs, "-C", str(HERE)], check=True, env=env)


def dpu_host(env: dict[str, str], binary: str, configs: list[tuple[int, int, int, int, int]]) -> list[int]:
    """Runs bin/dpu_host on one DPU; returns the perfcounter cycles of each configuration."""
    argv = [str(HERE / "bin" / "dpu_host"), str(HERE / "bin" / binary)]
    for cfg in configs:
        argv += [str(v) for v in cfg]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env, cwd=HERE).stdout
    cycles = []
    for line in out.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split())
        cycles.append(int(fields["cycles"]))
    if len(cycles) != len(configs):
        raise RuntimeError(f"{binary}: expected {len(configs)} results, got {len(cycles)}")
    return cycles


def report_run(env: dict[str, str], argv: list[str]) -> dict:
    """Runs a host program with OPENPIM_REPORT=file.json and returns the parsed report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        e = dict(env)
        e["OPENPIM_REPORT"] = str(path)
        subprocess.run(argv, check=True, capture_output=True, text=True, env=e, cwd=HERE)
        return json.loads(path.read_text())


def fmt_size(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------------- (a) MRAM latency
def bench_mram_latency(s: Suite) -> None:
    sizes = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    reps = 16
    cfgs = []
    for size in sizes:
        cfgs += [(0, size, 0, reps, 0), (1, size, 0, reps, 0)]
    cfgs.append((2, 8, 0, reps, 0))
    cycles = dpu_host(s.env, "mram_lat_dpu", cfgs)
    empty = cycles[-1]  # perfcounter_get() twice with nothing between: the instrument's cost
    for i, size in enumerate(sizes):
        for j, kind in enumerate(("read", "write")):
            lat = cycles[2 * i + j] - empty
            alpha = ALPHA_READ if kind == "read" else ALPHA_WRITE
            s.add(Row("a", f"MRAM {kind} latency", f"{size} B", float(lat), "cycles",
                      alpha + BETA * size, MODEL_INPUT,
                      note=f"raw {cycles[2 * i + j]} - instrument {empty}", x=size, series=kind))
            if size == 2048:
                bw = size * FREQ_MHZ / lat
                s.add(Row("a", f"MRAM {kind} bandwidth", "2048 B, 1 tasklet", bw, "MB/s",
                          MRAM_BW_2048_PUBLISHED[kind], RECALLED, note="size x f / latency",
                          x=size, series=f"{kind} bw"))


# --------------------------------------------------------------------------- (b) MRAM STREAM
def bench_mram_stream(s: Suite) -> None:
    tasklets = [1, 2, 4, 8, 11, 16, 24]
    n = 528 * 1024  # bytes per array: a whole number of blocks for every tasklet count
    if s.quick:
        n //= 4
    for t in tasklets:
        cfgs, keys = [], []
        for size in (1024, 2048):
            if size == 2048 and t > 11:
                continue  # two 2 KiB WRAM blocks per tasklet do not fit with more tasklets
            if size == 2048 and t not in (1, 4, 11):
                continue
            for op, name in enumerate(STREAMS):
                cfgs.append((op, size, n, 1, 3))
                keys.append((size, name))
        for (size, name), cyc in zip(keys, dpu_host(s.env, f"mram_bw_dpu_{t}", cfgs)):
            arrays = 3 if name in ("ADD", "TRIAD") else 2
            mbps = arrays * n * FREQ_MHZ / cyc
            s.add(Row("b", f"MRAM {name} {size} B", f"{t} tasklets", mbps, "MB/s",
                      x=t, series=f"{name} {size}"))


# --------------------------------------------------------------------------- (c) WRAM STREAM
def bench_wram_stream(s: Suite) -> None:
    tasklets = [1, 4, 11, 16, 24]
    n, reps = 64, 16
    for t in tasklets:
        names = ["COPY", "ADD", "SCALE", "TRIAD"]
        cfgs = [(op, 0, n, reps, 3) for op in (1, 2, 3, 4)]
        for name, cyc in zip(names, dpu_host(s.env, f"wram_bw_dpu_{t}", cfgs)):
            per_elem = 24 if name in ("ADD", "TRIAD") else 16  # bytes loaded + stored
            mbps = t * n * reps * per_elem * FREQ_MHZ / cyc
            pub, status = (None, PREDICTION)
            if name == "COPY" and t == 16:
                pub, status = WRAM_COPY_THEORY, SECONDARY_THEORY
            elif name in WRAM_RECALLED and t == 16:
                pub, status = WRAM_RECALLED[name], RECALLED
            s.add(Row("c", f"WRAM {name}", f"{t} tasklets", mbps, "MB/s", pub, status,
                      x=t, series=name))


# --------------------------------------------------------------------------- (d) arithmetic
def bench_arith(s: Suite) -> None:
    tasklets = [1, 4, 11, 16, 24] if s.quick else [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 24]
    reps = 2 if s.quick else 4
    for t in tasklets:
        # The published benchmark's scalar: its input size per DPU, 1,048,576 = 2^20.
        cfgs = [(4 * ti + oi, 0, 0, reps, ARITH_SCALAR) for ti in range(4) for oi in range(4)]
        cycles = dpu_host(s.env, f"arith_dpu_{t}", cfgs)
        for k, cyc in enumerate(cycles):
            ty, op = TYPES[k // 4], OPS[k % 4]
            elems = 256 if ty in ("int32", "float") else 128
            mops = t * elems * reps * FREQ_MHZ / cyc
            pub, status = arith_published(ty, op, t)
            s.add(Row("d", f"{ty} {op.upper()}", f"{t} tasklets", mops, "MOPS", pub, status,
                      x=t, series=f"{ty} {op}"))


# --------------------------------------------------------------------------- (e) transfers
def xfer(s: Suite, mode: str, direction: str, dpus: int, size: int, reps: int) -> tuple[float, str]:
    rep = report_run(s.env, [str(HERE / "bin" / "xfer_host"), mode, direction, str(dpus), str(size), str(reps)])
    phase = "cpu_dpu_ns" if direction == "to" else "dpu_cpu_ns"
    ns = rep["phases"][phase] / reps
    tr = rep["transfers"]
    bus = (tr["bus_to_dpu_ns"] if direction == "to" else tr["bus_from_dpu_ns"]) / reps
    inter = tr["host_interleave_ns"] / reps
    total_bytes = size * dpus
    gbps = total_bytes / ns
    # Bus and interleave times are summed over the ranks of a call (which run in parallel), so
    # these rates are per rank.
    ranks = max(1, dpus // 64)
    per = "/rank" if ranks > 1 else ""
    note = f"bus {total_bytes / bus:.3g} GB/s{per}" if bus > 0 else ""
    if inter > 0:
        note += f", interleave {total_bytes / inter:.3g} GB/s{per}"
        if inter >= bus:
            note += " (host-bound)"
    return gbps, note


def bench_xfer(s: Suite) -> None:
    big = 32 << 20
    # Single DPU, transfer size sweep (serial = dpu_copy_to / dpu_copy_from).
    sizes = [8, 64, 512, 4 << 10, 32 << 10, 1 << 20, big]
    if s.quick:
        sizes = [8, 512, 32 << 10, 1 << 20]
    for direction in ("to", "from"):
        label = "CPU-DPU" if direction == "to" else "DPU-CPU"
        for size in sizes:
            reps = 64 if size <= 4096 else (8 if size <= (1 << 20) else 1)
            gbps, note = xfer(s, "serial", direction, 1, size, reps)
            pub, status = XFER_PUBLISHED.get(("serial", direction, 1), (None, PREDICTION)) if size == big else (None, PREDICTION)
            if pub is not None:
                note += "; model input"
            s.add(Row("e", f"{label} 1 DPU", fmt_size(size), gbps, "GB/s", pub, status, note,
                      x=size, series=f"{label}"))
    # The cold single transfers of the arithmetic logs, at their sizes.
    if not s.quick:
        for (direction, size), ms in XFER_LOG_MS.items():
            label = "CPU-DPU" if direction == "to" else "DPU-CPU"
            gbps, note = xfer(s, "serial", direction, 1, size, 2)
            s.add(Row("e", f"{label} 1 DPU", fmt_size(size), gbps, "GB/s", size / ms / 1e6,
                      LOGS_COLD, note, x=size, series=f"{label} cold"))
    # DPU-count sweep in one rank and several ranks, 1 MiB per DPU (bandwidth is saturated
    # at this size; the 32 MB points the paper reports are run separately below).
    mid = 1 << 20
    counts = [1, 4, 16, 64, 256, 1024] if not s.quick else [1, 16, 64, 256]
    for mode, direction in (("serial", "to"), ("serial", "from"), ("parallel", "to"),
                            ("parallel", "from"), ("broadcast", "to")):
        label = ("CPU-DPU" if direction == "to" else "DPU-CPU") + f" {mode}"
        for k in counts:
            if mode == "serial" and k > 64:
                continue  # one DPU at a time: the rank count changes nothing
            size = mid if k <= 256 else mid // 4
            reps = 2 if k < 64 else 1
            gbps, note = xfer(s, mode, direction, k, size, reps)
            point = f"{k} DPUs ({max(1, k // 64)} rank{'s' if k > 64 else ''}), {fmt_size(size)}"
            s.add(Row("e", label, point, gbps, "GB/s", None, PREDICTION, note, x=k, series=label))
    if not s.quick:
        for mode, direction in (("parallel", "to"), ("parallel", "from"), ("broadcast", "to")):
            label = ("CPU-DPU" if direction == "to" else "DPU-CPU") + f" {mode}"
            gbps, note = xfer(s, mode, direction, 64, big, 1)
            pub, status = XFER_PUBLISHED[(mode, direction, 64)]
            note += "; model input"
            s.add(Row("e", label, "64 DPUs (1 rank), 32 MiB", gbps, "GB/s", pub, status, note,
                      x=64, series=f"{label} 32MiB"))
        # 32 ranks, the published points of another server (shown, counted apart).
        for (direction, size), ms in XFER_32RANKS_MS.items():
            label = ("CPU-DPU" if direction == "to" else "DPU-CPU") + " parallel"
            reps = 4 if size <= (64 << 10) else 1
            gbps, note = xfer(s, "parallel", direction, 2048, size, reps)
            if size <= (2 << 10):
                note += "; partly a model input (the 32-rank fixed cost)"
            s.add(Row("e", label, f"2048 DPUs (32 ranks), {fmt_size(size)}", gbps, "GB/s",
                      2048 * size / ms / 1e6, OTHER_SERVER, note, x=size,
                      series=f"{label} 32 ranks"))


# --------------------------------------------------------------------------- output
GROUP_NAMES = {
    "a": "(a) MRAM latency",
    "b": "(b) MRAM bandwidth (STREAM)",
    "c": "(c) WRAM bandwidth (STREAM)",
    "d": "(d) arithmetic throughput",
    "e": "(e) CPU-DPU / DPU-CPU transfers",
}
STATUS_SHORT = {MODEL_INPUT: "model-input", RECALLED: "recalled", CONFIRMED: "confirmed",
                LOGS: "logs", LOGS_COLD: "logs-cold", SECONDARY_THEORY: "secondary", PREDICTION: "prediction",
                OTHER_SERVER: "other-server"}


def num(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def summary(rows: list[Row]) -> str:
    errs = [abs(r.error) for r in rows if r.error is not None]
    if not errs:
        return "no published points"
    worst = max((r for r in rows if r.error is not None), key=lambda r: abs(r.error or 0))
    return (f"{len(errs)} points: worst {100 * max(errs):.1f}% ({worst.bench}, {worst.point}), "
            f"median {100 * statistics.median(errs):.1f}%")


def print_table(rows: list[Row]) -> None:
    w_b = max(len(r.bench) for r in rows)
    w_p = max(len(r.point) for r in rows)
    head = (f"{'benchmark':<{w_b}}  {'point':<{w_p}}  {'emulated':>9} {'published':>9} "
            f"{'unit':<6} {'error':>7}  {'status':<11}  note")
    print(head)
    print("-" * len(head))
    group = None
    for r in rows:
        if r.group != group:
            group = r.group
            print(f"{GROUP_NAMES[group]}")
        err = f"{100 * r.error:+.1f}%" if r.error is not None else "-"
        print(f"{r.bench:<{w_b}}  {r.point:<{w_p}}  {num(r.emulated):>9} {num(r.published):>9} "
              f"{r.unit:<6} {err:>7}  {STATUS_SHORT[r.status]:<11}  {r.note}")
    print()
    print("status: model-input = " + MODEL_INPUT + "; recalled = " + RECALLED +
          "; confirmed = " + CONFIRMED + "; logs = " + LOGS + "; logs-cold = " + LOGS_COLD +
          " (not in the target figures); other-server = " + OTHER_SERVER +
          " (not in the target figures); secondary = " + SECONDARY_THEORY +
          "; prediction = " + PREDICTION)
    print()
    print("relative error |emulated - published| / published, over points with a published value:")
    cold = [r for r in rows if r.status == LOGS_COLD]
    other = [r for r in rows if r.status == OTHER_SERVER]
    rows = [r for r in rows if r.status not in (LOGS_COLD, OTHER_SERVER)]
    for g in GROUP_NAMES:
        grows = [r for r in rows if r.group == g]
        if grows:
            print(f"  {GROUP_NAMES[g]:<34} {summary(grows)}")
    print(f"  {'all':<34} {summary(rows)}")
    verified = [r for r in rows if r.status in (MODEL_INPUT, CONFIRMED, LOGS)]
    print(f"  {'all, verified sources only':<34} {summary(verified)}")
    recalled = [r for r in rows if r.status == RECALLED]
    print(f"  {'all, recalled values only':<34} {summary(recalled)}")
    if cold:
        print(f"  {'(cold single transfers, not counted)':<34} {summary(cold)}")
    if other:
        print(f"  {'(other server, 32 ranks, not counted)':<34} {summary(other)}")


def write_files(rows: list[Row]) -> None:
    OUT.mkdir(exist_ok=True)
    with open(OUT / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "benchmark", "point", "emulated", "unit", "published", "rel_error", "status", "note"])
        for r in rows:
            w.writerow([r.group, r.bench, r.point, f"{r.emulated:.6g}", r.unit,
                        "" if r.published is None else r.published,
                        "" if r.error is None else f"{r.error:.4f}", r.status, r.note])
    with open(OUT / "results.json", "w") as f:
        json.dump([dict(asdict(r), error=r.error) for r in rows], f, indent=1)


def plot(rows: list[Row]) -> list[Path]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots")
        return []
    OUT.mkdir(exist_ok=True)
    written: list[Path] = []

    def series(group: str) -> dict[str, list[Row]]:
        d: dict[str, list[Row]] = {}
        for r in rows:
            if r.group == group:
                d.setdefault(r.series, []).append(r)
        return d

    def published_marks(ax, rs: list[Row], color) -> None:
        pts = [(r.x, r.published) for r in rs if r.published is not None]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker="x", s=70, color=color,
                       zorder=5, linewidths=2)

    # (a) latency
    a = series("a")
    if a:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name in ("read", "write"):
            rs = a.get(name, [])
            if not rs:
                continue
            line, = ax.plot([r.x for r in rs], [r.emulated for r in rs], "o-", label=f"{name}, emulated")
            ax.plot([r.x for r in rs], [r.published for r in rs], "--", color=line.get_color(),
                    label=f"{name}, alpha + beta n (DESIGN.md)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("transfer size (bytes)")
        ax.set_ylabel("latency (cycles)")
        ax.set_title("(a) MRAM DMA latency, 1 tasklet")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        p = OUT / "a_mram_latency.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)

    # (b), (c) bandwidth vs tasklets
    for g, title, fname in (("b", "(b) sustained MRAM bandwidth (STREAM, 64-bit)", "b_mram_bandwidth.png"),
                            ("c", "(c) WRAM bandwidth (STREAM, 64-bit)", "c_wram_bandwidth.png")):
        ss = series(g)
        if not ss:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name, rs in ss.items():
            style = "o--" if name.endswith("2048") else "o-"
            line, = ax.plot([r.x for r in rs], [r.emulated for r in rs], style, label=name)
            published_marks(ax, rs, line.get_color())
        ax.set_xlabel("tasklets")
        ax.set_ylabel("MB/s (bytes read + written)")
        ax.set_title(title + ("; x = published" if any(r.published for r in rows if r.group == g) else ""))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        fig.tight_layout()
        p = OUT / fname
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)

    # (d) arithmetic: one panel per type
    d = series("d")
    if d:
        fig, axes = plt.subplots(2, 2, figsize=(10, 7))
        for ax, ty in zip(axes.flat, TYPES):
            for op in OPS:
                rs = d.get(f"{ty} {op}", [])
                if not rs:
                    continue
                line, = ax.plot([r.x for r in rs], [r.emulated for r in rs], "o-", label=op.upper())
                published_marks(ax, rs, line.get_color())
            ax.set_title(ty)
            ax.set_xlabel("tasklets")
            ax.set_ylabel("MOPS")
            ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle("(d) arithmetic throughput (lines: emulated, x: published (PrIM logs; others recalled))")
        fig.tight_layout()
        p = OUT / "d_arithmetic.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)

    # (e) transfers
    e = series("e")
    if e:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        for name in ("CPU-DPU", "DPU-CPU"):
            rs = e.get(name, [])
            if rs:
                line, = ax1.plot([r.x for r in rs], [r.emulated for r in rs], "o-", label=name)
                published_marks(ax1, rs, line.get_color())
        ax1.set_xscale("log", base=2)
        ax1.set_yscale("log")
        ax1.set_xlabel("bytes per transfer")
        ax1.set_ylabel("GB/s")
        ax1.set_title("1 DPU, serial transfers vs size")
        ax1.grid(True, alpha=0.3)
        ax1.legend()
        for name, rs in e.items():
            if name in ("CPU-DPU", "DPU-CPU") or name.endswith("32 ranks"):
                continue  # 32 ranks: x is the size, printed in the table only
            style = "x" if name.endswith("32MiB") else "o-"
            if name.endswith("32MiB"):
                ax2.scatter([r.x for r in rs], [r.emulated for r in rs], marker="s", s=40,
                            label=name.replace(" 32MiB", ", 32 MiB emulated"))
                ax2.scatter([r.x for r in rs], [r.published for r in rs], marker="x", s=80,
                            color="black", zorder=5)
            else:
                ax2.plot([r.x for r in rs], [r.emulated for r in rs], style, label=name)
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ax2.set_xlabel("DPUs (64 per rank)")
        ax2.set_ylabel("GB/s (all DPUs together)")
        ax2.set_title("1 MiB per DPU (1024 DPUs: 256 KiB) vs DPU count; x = published (32 MB)", fontsize=10)
        ax2.grid(True, alpha=0.3)
        ax2.legend(fontsize=7)
        fig.suptitle("(e) host <-> DPU transfers (virtual time from the run report)")
        fig.tight_layout()
        p = OUT / "e_transfers.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    part = ap.add_mutually_exclusive_group()
    part.add_argument("--prim-only", action="store_true", help="only the PrIM calibration table")
    part.add_argument("--micro-only", action="store_true", help="only the microbenchmarks")
    ap.add_argument("--bench", default="", help="PrIM benchmarks of the calibration table, "
                    "comma-separated (default: all of the CSV's)")
    ap.add_argument("--table", choices=["calibration", "vpim"], default="calibration",
                    help="the PrIM rows: calibration (the issue's, default) or vpim (PrIM's default "
                    "runs on another server, a check; docs/fidelity.md)")
    ap.add_argument("--jobs", type=int, default=1, help="calibration rows run side by side "
                    "(default 1: transfer times include measured host work, so a loaded "
                    "machine can change them)")
    ap.add_argument("--compiler", choices=["gcc", "clang"], default=None,
                    help="DPU compiler (OPENPIM_DPU_COMPILER); default: the shim's default")
    ap.add_argument("--hardware", default=None, help="hardware profile (a name in profiles/ or a "
                    "TOML file) for every run, through UPMEM_PROFILE_BASE=hardware=...; "
                    "default: the default profile (upmem-v1a)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per calibration row")
    ap.add_argument("--quick", action="store_true", help="microbenchmarks: fewer points and smaller sizes")
    ap.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    ap.add_argument("--groups", default="abcde", help="which microbenchmark groups to run (default abcde)")
    args = ap.parse_args()

    t0 = time.monotonic()
    env = sdk_env(args.compiler)
    if args.hardware:
        hw = args.hardware
        if Path(hw).is_file():
            hw = str(Path(hw).resolve())
        env["UPMEM_PROFILE_BASE"] = f"hardware={hw}"
    if not args.micro_only:
        import prim_calibration as pc

        benches = {b.strip() for b in args.bench.split(",") if b.strip()} or None
        table = pc.TABLES[args.table]
        rows = pc.load_rows(benches, table)
        if benches and not rows:
            sys.exit(f"no rows for {args.bench!r} in {table.csv}")
        tp = time.monotonic()
        print(f"PrIM table {args.table}: {len(rows)} rows", file=sys.stderr)
        pc.run_all(rows, env, args.compiler, args.jobs, args.timeout,
                   OUT / "xfer" / table.stem)
        print()
        who = pc.compiler_identity(env)
        pc.print_table(rows, time.monotonic() - tp, f"{args.compiler or 'shim default'}, {who}",
                       args.hardware or "upmem-v1a", table)
        print(f"wrote {pc.write_files(rows, OUT, table)}")
    if not args.prim_only:
        s = Suite(quick=args.quick, env=env)
        build(s.env)
        steps = {"a": bench_mram_latency, "b": bench_mram_stream, "c": bench_wram_stream,
                 "d": bench_arith, "e": bench_xfer}
        for g in args.groups:
            if g not in steps:
                sys.exit(f"unknown group {g!r}")
            tg = time.monotonic()
            steps[g](s)
            print(f"{GROUP_NAMES[g]}: {time.monotonic() - tg:.1f} s", file=sys.stderr)
        print()
        print_table(s.rows)
        write_files(s.rows)
        pngs = [] if args.no_plots else plot(s.rows)
        print()
        print(f"wrote {OUT / 'results.csv'}" + (", " + ", ".join(p.name for p in pngs) if pngs else ""))
    print(f"run time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
