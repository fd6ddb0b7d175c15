#!/usr/bin/env python3
"""The profiler's cost (docs/profiling.md): PrIM programs at 64 DPUs (sizes of
tests/programs/run.py's PRIM_64) run without the profiler (the default engine, then the
interpreter) and under `OPENPIM_PROFILE` (every DPU profiled, on the probed interpreter);
prints each one's wall time and the slowdowns, and checks that the profiled run verified, took
the same cycles and charged each DPU run exactly its cycles.

Usage: bench/profile/run.py [NAME...]   (default: VA RED GEMV)
Environment: OPENPIM_THREADS (default: one per core), PRIM_PROFILE_DIR (build folder, default
/tmp/openpim-prim-profile)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench" / "speed"))
import prim_compare  # noqa: E402  (its loader, and the builds of bench/speed/prim_compare.py)

speed = prim_compare.speed
DEFAULT = ["VA", "RED", "GEMV"]


def run(cmd, cwd, report, extra):
    env = speed.env_of(None, int(os.environ.get("OPENPIM_THREADS", os.cpu_count() or 1)), report)
    env.update(extra)
    if os.path.exists(report):
        os.remove(report)
    t0 = time.time()
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    try:
        launches = json.load(open(report))["launches"]
    except (OSError, ValueError, KeyError):
        launches = None
    return p, wall, launches


def main() -> int:
    names = sys.argv[1:] or DEFAULT
    progs = prim_compare.load("programs_run", ROOT / "tests" / "programs" / "run.py")
    fidelity = prim_compare.load("prim_calibration", ROOT / "bench" / "fidelity" / "prim_calibration.py")
    want = fidelity.toolchain_fingerprint(os.environ.get("OPENPIM_DPU_COMPILER")) + "\n"
    work = Path(os.environ.get("PRIM_PROFILE_DIR", "/tmp/openpim-prim-profile"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'program':<7} {'launches':>8} {'instructions':>14} {'default':>9} {'interp':>9} {'profiled':>9}"
          f" {'slowdown':>9} {'vs interp':>9}  checked")
    all_ok = True
    tot = [0.0, 0.0, 0.0]
    for name in names:
        d, cmd = prim_compare.build_prim64(progs, work, name, want)
        rep = str(work / f"{name}.json")
        base, t_base, l_base = run(cmd, str(d), rep, {})
        c_base = [l["cycles"] for l in l_base] if l_base else None
        instr = sum(l["instructions"] for l in l_base) if l_base else 0
        # (A launch may run some DPUs of the set only: NW's diagonals.)
        dpu_runs = sum(l["dpus"] for l in l_base) if l_base else 0
        _, t_interp, _ = run(cmd, str(d), rep, {"OPENPIM_ENGINE": "interp"})
        with tempfile.TemporaryDirectory() as out:
            prof, t_prof, l_prof = run(cmd, str(d), rep, {"OPENPIM_PROFILE": out})
            c_prof = [l["cycles"] for l in l_prof] if l_prof else None
            problems = []
            if prof.returncode != 0 or any(p.search(prof.stdout + prof.stderr) for p in progs.FAIL_PATTERNS):
                problems.append(f"did not verify (exit {prof.returncode})")
            if c_prof != c_base:
                problems.append("cycles differ")
            try:
                whole = json.load(open(Path(out) / "profile.json"))["run"]
                if whole["dpu_run_count"] != dpu_runs:
                    problems.append(f"{whole['dpu_run_count']} DPU runs profiled, {dpu_runs} ran")
                if whole["inexact_runs"] or any(r["charged_cycles"] != r["cycles"] for r in whole["dpu_runs"]):
                    problems.append("a DPU run's charged cycles differ from its cycles")
            except (OSError, ValueError, KeyError, TypeError):
                problems.append("no profile.json")
        ok = not problems
        all_ok &= ok
        tot[0] += t_base
        tot[1] += t_interp
        tot[2] += t_prof
        print(f"{name:<7} {len(c_base or []):>8} {instr:>14,} {t_base:>8.2f}s {t_interp:>8.2f}s {t_prof:>8.2f}s"
              f" {t_prof / t_base:>8.1f}x {t_prof / t_interp:>8.1f}x  {'yes' if ok else 'NO: ' + ', '.join(problems)}",
              flush=True)
    threads = int(os.environ.get("OPENPIM_THREADS", os.cpu_count() or 1))
    print(f"{'total':<7} {'':>8} {'':>14} {tot[0]:>8.2f}s {tot[1]:>8.2f}s {tot[2]:>8.2f}s"
          f" {tot[2] / tot[0]:>8.1f}x {tot[2] / tot[1]:>8.1f}x  ({len(names)} programs at 64 DPUs,"
          f" OPENPIM_THREADS={threads}; profiled: every DPU, OPENPIM_PROFILE)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
