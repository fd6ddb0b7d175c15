#!/usr/bin/env python3
"""The checkers' cost: PrIM programs at 64 DPUs (their sizes of tests/programs/run.py, built as
bench/speed/prim_compare.py builds them) run plain (default engine), on the interpreter, and
under `--check=memory`, `--check=races` and `--check=memory,races` (docs/checking.md).

Prints one row per program: each mode's wall time and its slowdown against the interpreter
(the engine a checked run uses: a probed run is the interpreter without shortcuts) and against
the default engine, whether every run verified by the program's own check, and the findings.

Usage: bench/check/run.py [NAME...]   (default: VA GEMV SEL)
Environment: OPENPIM_THREADS (default: one per core), PRIM_COMPARE_DIR (build folder, shared
with bench/speed/prim_compare.py; default /tmp/openpim-prim-compare).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ["VA", "GEMV", "SEL"]
MODES = [("plain", None, None), ("interp", "interp", None), ("memory", None, "memory"),
         ("races", None, "races"), ("both", None, "memory,races")]


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    names = sys.argv[1:] or DEFAULT
    sys.path.insert(0, str(ROOT / "tests" / "programs"))
    speed = load("speed_run", ROOT / "bench" / "speed" / "run.py")
    progs = load("programs_run", ROOT / "tests" / "programs" / "run.py")
    fidelity = load("prim_calibration", ROOT / "bench" / "fidelity" / "prim_calibration.py")
    prim_compare = load("prim_compare", ROOT / "bench" / "speed" / "prim_compare.py")
    want = fidelity.toolchain_fingerprint(os.environ.get("OPENPIM_DPU_COMPILER")) + "\n"
    work = Path(os.environ.get("PRIM_COMPARE_DIR", "/tmp/openpim-prim-compare"))
    work.mkdir(parents=True, exist_ok=True)
    threads = int(os.environ.get("OPENPIM_THREADS", os.cpu_count() or 1))
    print("Checkers' cost on PrIM at 64 DPUs (wall seconds; slowdown vs the interpreter / vs the default engine)")
    head = f"{'program':<9} {'plain':>8} {'interp':>8}"
    for m in ("memory", "races", "both"):
        head += f" {m:>24}"
    print(head + "  verified  findings")
    failed = False
    for name in names:
        d, cmd = prim_compare.build_prim64(progs, work, name, want)
        wall: dict[str, float] = {}
        ok = True
        findings = 0
        for label, engine, check in MODES:
            report = str(work / f"{name}-check-{label}.json")
            env = speed.env_of(None, threads, report, engine)
            env.pop("OPENPIM_CHECK", None)
            if check:
                env["OPENPIM_CHECK"] = check
            t0 = time.time()
            p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True)
            wall[label] = time.time() - t0
            out = p.stdout + p.stderr
            ok &= p.returncode == 0 and not any(pat.search(out) for pat in progs.FAIL_PATTERNS)
            if check == "memory,races":
                try:
                    findings = len(json.load(open(report))["check"]["findings"])
                except (OSError, ValueError, KeyError):
                    ok = False
        failed |= not ok
        row = f"{name:<9} {wall['plain']:>7.2f}s {wall['interp']:>7.2f}s"
        for m in ("memory", "races", "both"):
            cell = f"{wall[m]:.2f}s {wall[m] / wall['interp']:.1f}x/{wall[m] / wall['plain']:.1f}x"
            row += f" {cell:>24}"
        print(row + f"  {'yes' if ok else 'NO':>8}  {findings:>8}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
