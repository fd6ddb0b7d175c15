#!/usr/bin/env python3
"""Engine builds compared on the speed kernels, precise enough for changes of a few percent
(docs/performance.md).

`bench/speed/run.py` measures the issue's figure (64 DPUs, every core, wall time); on a shared
machine its runs move by 10 % or more. This script compares engines by the CPU time of one
host thread instead: each kernel of run.py on `--dpus` DPUs (default 16, about a quarter of a
second per run), CPU nanoseconds of the launch per DPU instruction, every engine run in turn
`--repeats` times (default 9, the order alternating), minimum and median per engine, and the
minimum relative to this checkout's. It checks that every engine gives the same instructions,
cycles and results (the kernel's digest) in every run.

ENGINE is a git revision (built once like run.py's baseline) or a directory holding a
libdpu.so; this checkout's library always comes first. --control adds a copy of this
checkout's library as one more engine: how far two identical engines differ is the noise of
the measurement at the time. Code placement moves these figures too: the same source built in
another folder (a git revision is built under /tmp) can differ by 5 % or so. For small
differences, compare libraries built in this same folder (copy target/release/libdpu.so
aside, change the code, build again, and pass the copy's folder).

Usage: bench/speed/compare.py [--dpus N] [--repeats N] [--kernels alu,mul,dma,stream] [--control]
                              [--engine jit|interp] [ENGINE...]
Run from anywhere after `make build`.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def load_run_py():
    """bench/speed/run.py as a module (kernels, environment, baseline builds)."""
    spec = importlib.util.spec_from_file_location("speed_run", HERE / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["speed_run"] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("engines", nargs="*", metavar="ENGINE")
    ap.add_argument("--dpus", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--kernels", default="alu,mul,dma,stream")
    ap.add_argument("--control", action="store_true")
    ap.add_argument("--engine", choices=["jit", "interp"], default=None,
                    help="the DPU engine every build runs (OPENPIM_ENGINE; builds from before "
                         "the translating engine have only the interpreter); default: each "
                         "build's default")
    a = ap.parse_args()
    if a.dpus < 1 or a.repeats < 1:
        ap.error("--dpus and --repeats must be at least 1")
    speed = load_run_py()
    kernels = [k for k in a.kernels.split(",") if k]
    unknown = [k for k in kernels if k not in speed.KERNELS]
    if unknown:
        ap.error(f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(speed.KERNELS)}")
    this_lib = ROOT / "target/release/libdpu.so"
    if not this_lib.is_file():
        sys.exit(f"{this_lib} is missing: run `make build` first")
    subprocess.run([str(ROOT / "scripts/dpu-toolchain.sh"), "fresh", str(HERE)], check=True)
    subprocess.run(["make", "-s", "-C", str(HERE)], check=True, stdout=subprocess.DEVNULL,
                   env=speed.env_of(None, 1, ""))
    engines: list[tuple[str, Path | None]] = [("this", None)]
    with tempfile.TemporaryDirectory() as tmp:
        if a.control:
            copy = Path(tmp) / "control"
            copy.mkdir()
            shutil.copy2(this_lib, copy / "libdpu.so")
            engines.append(("control", copy))
        for spec in a.engines:
            try:
                engines.append((spec, speed.build_baseline(spec)))
            except subprocess.CalledProcessError:
                ap.error(f"engine {spec!r} is neither a directory holding a libdpu.so nor a git"
                         " revision that builds")
        runs: dict[tuple[str, str], list[dict]] = {(k, e): [] for k in kernels for e, _ in engines}
        for rep in range(a.repeats):
            for k in kernels:
                order = engines if rep % 2 == 0 else engines[::-1]
                for name, lib in order:
                    runs[(k, name)].append(speed.run_once(k, lib, 1, a.dpus, a.engine))
    ns = lambda r: r["cpu"] * 1e9 / r["instructions"]
    print(f"\nCPU ns per DPU instruction: {a.dpus} DPUs x 16 tasklets, 1 host thread, "
          f"{a.repeats} runs per engine, interleaved; min (median), and min relative to 'this'")
    width = max(len(name) for name, _ in engines)
    ok = True
    for k in kernels:
        base = min(ns(r) for r in runs[(k, "this")])
        print(f"{k} ({runs[(k, 'this')][0]['instructions']:,} instructions)")
        outcomes = set()
        for name, _ in engines:
            rs = runs[(k, name)]
            outcomes.update((r["instructions"], r["cycles"], r["digest"]) for r in rs)
            lo = min(ns(r) for r in rs)
            med = statistics.median(ns(r) for r in rs)
            print(f"  {name:<{width}}  {lo:7.2f} ({med:7.2f})  {lo / base - 1:+7.1%}")
        same = len(outcomes) == 1
        ok &= same
        print(f"  same instructions, cycles and results: {'yes' if same else 'NO'}")
    if not ok:
        print("note: engines that differ in instructions, cycles or results model different DPUs"
              " (or one has a bug); their speeds are not comparable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
