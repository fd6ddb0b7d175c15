#!/usr/bin/env python3
"""Runs PrIM programs at 64 DPUs with two engines and compares them (docs/performance.md).

Without --baseline, runs this checkout alone and prints each program's wall time, whether it
verified (exit status 0 and none of tests/programs/run.py's failure patterns in its output) and
the total: the issue's "PrIM-16 at 64 DPUs" figure (`make bench` prints it).

Each program is copied from the third-party folder and built once (its own Makefile,
NR_DPUS=64 NR_TASKLETS=16 and the make variables and host command of tests/programs/run.py),
then run with this checkout's libdpu.so and with a baseline's (--baseline REV: a git revision,
built as bench/speed/run.py builds it; or a directory holding a libdpu.so). For each program:
whether every launch of the run report has the same cycles, instructions, DMA bytes and
requests, utilisation figures and per-rank cycles and instructions, whether the program's
output is the same (numbers masked: it prints its own timings), and both wall times.

With --engines, the two engines of this checkout are compared the same way: the translating
engine (OPENPIM_ENGINE=jit) against the interpreter (interp), with their wall and CPU times.

Usage: bench/speed/prim_compare.py [--baseline REV|DIR | --engines] [NAME...]   (default: all 16)
Environment: OPENPIM_THREADS (default: one per core), PRIM_COMPARE_DIR (build folder,
default /tmp/openpim-prim-compare).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

KEYS = ["cycles", "instructions", "dma_bytes", "dma_requests", "tasklet_utilisation",
        "sync_wait_fraction", "faults", "dpus", "tasklets"]


def load(name: str, path: Path):
    """A Python file as a module."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# bench/speed/run.py (environment, baseline builds) and tests/programs/run.py (the PrIM runs).
speed = load("speed_run", HERE / "run.py")


def run_one(cmd: list[str], cwd: str, lib: Path | None, report: str, engine: str | None = None) -> dict:
    env = speed.env_of(lib, int(os.environ.get("OPENPIM_THREADS", os.cpu_count() or 1)), report, engine)
    if os.path.exists(report):
        os.remove(report)
    t0 = time.time()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    try:
        launches = json.load(open(report))["launches"]
    except (OSError, ValueError):
        launches = None
    if launches is not None:
        launches = [{k: l.get(k) for k in KEYS}
                    | {"per_rank": [(r["cycles"], r["instructions"]) for r in l.get("per_rank", [])]}
                    for l in launches]
    return {"launches": launches, "output": re.sub(r"[0-9.]+", "#", p.stdout), "raw": p.stdout + p.stderr,
            "rc": p.returncode, "wall": wall, "cpu": cpu}


def build_prim64(progs, work: Path, name: str, want: str) -> tuple[Path, list[str]]:
    """PrIM `name` copied into `work` and built by its own Makefile for 64 DPUs x 16 tasklets
    (with tests/programs/run.py's make variables), unless the build there was made by the same
    DPU toolchain and runtime (`want`, the fidelity suite's fingerprint) for this checkout; its
    folder and the host command of tests/programs/run.py."""
    make_vars, args = progs.PRIM_64[name]
    d = work / name
    stamp = d / ".openpim-build"
    # (The host binary's rpath names this checkout's libdpu: a build of another checkout, or
    # of a worktree since removed, is not this one's.)
    want = f"{want}root={ROOT}\n"
    if not (stamp.is_file() and stamp.read_text() == want):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(progs.THIRD_PARTY / "prim-benchmarks" / name, d)
        subprocess.run(["make", "-j2", "NR_DPUS=64", "NR_TASKLETS=16", *make_vars.split()],
                       cwd=d, env=speed.env_of(None, 1, ""), check=True, capture_output=True)
        stamp.write_text(want)
    return d, args.format(inputs=progs.INPUTS).split()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="git revision or directory with a libdpu.so to compare with")
    ap.add_argument("--engines", action="store_true",
                    help="compare this checkout's translating engine with its interpreter")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "programs"))
    progs = load("programs_run", ROOT / "tests" / "programs" / "run.py")
    names = a.names or list(progs.PRIM_64)
    base = speed.build_baseline(a.baseline) if a.baseline else None
    # (--engines: "new" is the translating engine, the baseline the interpreter, one library.)
    new_engine, base_engine = ("jit", "interp") if a.engines else (None, None)
    compare = base is not None or a.engines
    work = Path(os.environ.get("PRIM_COMPARE_DIR", "/tmp/openpim-prim-compare"))
    work.mkdir(parents=True, exist_ok=True)
    fidelity = load("prim_calibration", ROOT / "bench" / "fidelity" / "prim_calibration.py")
    want = fidelity.toolchain_fingerprint(os.environ.get("OPENPIM_DPU_COMPILER")) + "\n"
    all_same = True
    total = total_cpu = total_base = 0.0
    total_base_cpu = 0.0
    if not compare:
        print(f"{'program':<9} {'launches':>8} {'instructions':>15} {'wall':>9} {'CPU':>9}  verified")
    elif a.engines:
        print(f"{'program':<9} {'launches':>8} {'instructions':>15} {'jit wall':>9} {'interp':>9} {'speed-up':>8}"
              f" {'jit CPU':>9} {'interp':>9} {'speed-up':>8}  same")
    else:
        print(f"{'program':<9} {'launches':>8} {'instructions':>15} {'wall new':>9} {'baseline':>9} {'speed-up':>8}  same")
    for name in names:
        d, cmd = build_prim64(progs, work, name, want)
        new = run_one(cmd, str(d), None, str(work / f"{name}-new.json"), new_engine)
        total += new["wall"]
        total_cpu += new["cpu"]
        n = len(new["launches"] or [])
        instr = sum(l["instructions"] for l in new["launches"] or [])
        if not compare:
            ok = new["rc"] == 0 and not any(pat.search(new["raw"]) for pat in progs.FAIL_PATTERNS)
            all_same &= ok
            print(f"{name:<9} {n:>8} {instr:>15,} {new['wall']:>8.2f}s {new['cpu']:>8.2f}s  {'yes' if ok else 'NO'}"
                  + ("" if new["rc"] == 0 else f" (exit status {new['rc']})"), flush=True)
            continue
        old = run_one(cmd, str(d), base, str(work / f"{name}-base.json"), base_engine)
        total_base += old["wall"]
        total_base_cpu += old["cpu"]
        same = new["launches"] is not None and all(new[k] == old[k] for k in ("launches", "output", "rc"))
        all_same &= same
        if a.engines:
            print(f"{name:<9} {n:>8} {instr:>15,} {new['wall']:>8.2f}s {old['wall']:>8.2f}s"
                  f" {old['wall'] / new['wall']:>7.2f}x {new['cpu']:>8.2f}s {old['cpu']:>8.2f}s"
                  f" {old['cpu'] / max(new['cpu'], 1e-9):>7.2f}x  {'yes' if same else 'NO'}"
                  + ("" if new["rc"] == 0 else f" (exit status {new['rc']}, interp {old['rc']})"), flush=True)
            continue
        print(f"{name:<9} {n:>8} {instr:>15,} {new['wall']:>8.2f}s {old['wall']:>8.2f}s"
              f" {old['wall'] / new['wall']:>7.2f}x  {'yes' if same else 'NO'}"
              + ("" if new["rc"] == 0 else f" (exit status {new['rc']}, baseline {old['rc']})"), flush=True)
    threads = int(os.environ.get("OPENPIM_THREADS", os.cpu_count() or 1))
    if a.engines:
        print(f"{'total':<9} {'':>8} {'':>15} {total:>8.2f}s {total_base:>8.2f}s {total_base / total:>7.2f}x"
              f" {total_cpu:>8.2f}s {total_base_cpu:>8.2f}s {total_base_cpu / max(total_cpu, 1e-9):>7.2f}x"
              f"  ({len(names)} programs, OPENPIM_THREADS={threads})")
    elif not compare:
        print(f"{'total':<9} {'':>8} {'':>15} {total:>8.2f}s {total_cpu:>8.2f}s"
              f"  ({len(names)} programs, OPENPIM_THREADS={threads}; CPU: user + system time of"
              f" the programs, which a loaded machine inflates less than the wall time)")
    else:
        print(f"{'total':<9} {'':>8} {'':>15} {total:>8.2f}s {total_base:>8.2f}s"
              f" {total_base / total:>7.2f}x  ({len(names)} programs, OPENPIM_THREADS={threads})")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
