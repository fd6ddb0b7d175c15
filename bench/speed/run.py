#!/usr/bin/env python3
"""Simulation speed of the DPU engine on four compute-bound kernels (docs/performance.md).

Each kernel runs on 64 DPUs x 16 tasklets with every host core busy (OPENPIM_THREADS = cores):
  alu  bench/speed/dpu/ips.c  integer mixing loop in registers (no DMA)
  mul  bench/speed/dpu/mul.c  32-bit multiplications (the runtime's __mulsi3: environment call
                              plus the DPU's mul_step issue slots)
  dma  bench/speed/dpu/dma.c  PrIM TRNS step 3's shape: tiles from a mutex-protected counter,
                              32..256-byte mram_read/mram_write, a mutex-protected 8-byte flag
                              read-modify-write in MRAM, a barrier per round
  stream  bench/speed/dpu/stream.c  PrIM VA's shape: 1 KiB blocks of two MRAM arrays read,
                              added in WRAM, written back; no locks
Speed = the engine's instructions (the run report's launches[].instructions) / host wall time
of the launch / host cores: millions of DPU instructions per second per host core.

Every kernel runs on both engines of this build (OPENPIM_ENGINE=jit, the translating engine,
and interp, the interpreter), interleaved, with a check that they produce the same cycles,
instructions and results, and the ratio; then what translation cost (regions, host code, time).
With a baseline (--baseline REV or BENCH_BASELINE=REV: a git revision, built once into
/tmp/openpim-bench-baseline-<rev>; or a directory holding a libdpu.so), the baseline's
interpreter runs too and this build's interpreter is compared with it. Medians over --repeats
runs (default 3; BENCH_REPEATS).

Then the ALU kernel on one host thread (scaling). Exit status 0 unless a run fails.

Usage: bench/speed/run.py [--baseline REV|DIR] [--repeats N] [--kernels alu,mul,dma,stream] [--threads N]
Run from anywhere after `make build`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DPUS = 64
# kernel name -> (program, argument: iterations or rounds), sized for about 1 s per run today.
KERNELS = {
    "alu": ("ips", 40000),
    "mul": ("mul", 8000),
    "dma": ("dma", 8),
    "stream": ("stream", 6),
}


def base_env() -> dict:
    """This process's environment with `openpim env` applied (the SDK commands, libdpu)."""
    out = subprocess.run(
        ["bash", "-c", f'eval "$("{ROOT}/target/release/openpim" env)" && env -0'],
        capture_output=True, text=True, check=True,
    ).stdout
    return dict(kv.split("=", 1) for kv in out.split("\0") if "=" in kv)


BASE_ENV: dict = {}


def env_of(lib_dir: Path | None, threads: int, report: str, engine: str | None = None) -> dict:
    if not BASE_ENV:
        BASE_ENV.update(base_env())
    env = dict(BASE_ENV)
    env.pop("OPENPIM_ENGINE", None)
    if engine:
        env["OPENPIM_ENGINE"] = engine
    if lib_dir is not None:
        env["LD_LIBRARY_PATH"] = f"{lib_dir}:{env.get('LD_LIBRARY_PATH', '')}"
    env["OPENPIM_THREADS"] = str(threads)
    env["OPENPIM_REPORT"] = report
    return env


def build_baseline(spec: str) -> Path:
    """A directory with the baseline's libdpu.so: `spec` itself, or git revision `spec` built."""
    p = Path(spec)
    if (p / "libdpu.so").is_file():
        return p
    rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", spec],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    src = Path(f"/tmp/openpim-bench-baseline-{rev}")
    lib = src / "target/release"
    if not (lib / "libdpu.so").is_file():
        print(f"building baseline {rev} in {src} ...", file=sys.stderr)
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", rev], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(src)], stdin=archive.stdout, check=True)
        archive.wait()
        subprocess.run(
            ["cargo", "build", "--release", "-q", "-p", "openpim-libdpu"], cwd=src, check=True
        )
    return lib


def run_once(kernel: str, lib_dir: Path | None, threads: int, dpus: int = DPUS,
             engine: str | None = None) -> dict:
    prog, n = KERNELS[kernel]
    with tempfile.NamedTemporaryFile(suffix=".json") as rep:
        out = subprocess.run(
            [str(HERE / "bin/speed_host"), prog, str(dpus), str(n)],
            cwd=HERE, env=env_of(lib_dir, threads, rep.name, engine),
            capture_output=True, text=True, check=True,
        ).stdout
        fields = dict(kv.split("=", 1) for kv in out.split())
        report = json.load(open(rep.name))
        launch = report["launches"][0]
    return {
        "engine": report.get("engine") or {},
        "seconds": float(fields["seconds"]),
        "cpu": float(fields["cpu_seconds"]),
        "digest": fields["digest"],
        "instructions": int(launch["instructions"]),
        "cycles": int(launch["cycles"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default=os.environ.get("BENCH_BASELINE"))
    ap.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", "3")))
    ap.add_argument("--kernels", default="alu,mul,dma,stream")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    kernels = [k for k in a.kernels.split(",") if k]
    subprocess.run([str(ROOT / "scripts/dpu-toolchain.sh"), "fresh", str(HERE)], check=True)
    subprocess.run(["make", "-s", "-C", str(HERE)], check=True, stdout=subprocess.DEVNULL,
                   env=env_of(None, a.threads, ""))
    base = build_baseline(a.baseline) if a.baseline else None
    # (name, libdpu directory, OPENPIM_ENGINE): both engines of this build, and the baseline
    # revision's interpreter when asked for (a revision without the translating engine ignores
    # OPENPIM_ENGINE and runs its interpreter).
    engines = [("jit", None, "jit"), ("interp", None, "interp")]
    if base:
        engines.append(("base", base, "interp"))
    runs = {(k, e): [] for k in kernels for e, _, _ in engines}
    for rep in range(a.repeats):
        for k in kernels:
            order = engines if rep % 2 == 0 else engines[::-1]
            for e, lib, eng in order:
                runs[(k, e)].append(run_once(k, lib, a.threads, engine=eng))

    cores = a.threads
    med = statistics.median
    wall_rate = lambda r: r["instructions"] / r["seconds"] / cores / 1e6
    cpu_rate = lambda r: r["instructions"] / r["cpu"] / 1e6
    wall_rate1 = lambda r: r["instructions"] / r["seconds"] / 1e6
    same_as = lambda xs, ys: all(
        (x["instructions"], x["cycles"], x["digest"]) == (y["instructions"], y["cycles"], y["digest"])
        for x, y in zip(xs, ys)
    )
    print(f"\nengine speed: {DPUS} DPUs x 16 tasklets, {cores} host threads, median of {a.repeats} runs")
    print("M/s/core = million DPU instructions per second of wall time per host core;"
          " per CPU-s = per second of the process's CPU time; jit = the translating engine,"
          " interp = the interpreter (OPENPIM_ENGINE), both in this build, interleaved")
    hdr = (f"{'kernel':<7} {'instructions':>13} | {'jit M/s/core':>12} {'per CPU-s':>10} |"
           f" {'interp M/s/core':>15} {'per CPU-s':>10} | {'jit/interp':>10} {'(CPU)':>6}  same")
    if base:
        hdr += f" | {'baseline':>9} {'interp/base':>11}  same"
    print(hdr)
    print("-" * len(hdr))
    ok = True
    for k in kernels:
        jit, interp = runs[(k, "jit")], runs[(k, "interp")]
        same = same_as(jit, interp)
        ok &= same
        line = (f"{k:<7} {jit[0]['instructions']:>13,} |"
                f" {med(wall_rate(r) for r in jit):>12.1f} {med(cpu_rate(r) for r in jit):>10.1f} |"
                f" {med(wall_rate(r) for r in interp):>15.1f} {med(cpu_rate(r) for r in interp):>10.1f} |"
                f" {med(i['seconds'] / j['seconds'] for j, i in zip(jit, interp)):>9.2f}x"
                f" {med(i['cpu'] / j['cpu'] for j, i in zip(jit, interp)):>5.2f}x"
                f"  {'yes' if same else 'NO'}")
        if base:
            old = runs[(k, "base")]
            line += (f" | {med(wall_rate(r) for r in old):>9.1f}"
                     f" {med(o['seconds'] / n['seconds'] for n, o in zip(interp, old)):>10.2f}x"
                     f"  {'yes' if same_as(interp, old) else 'NO'}")
        print(line)
    # Translation: what the translating engine spent making code for each kernel's program.
    print(f"\n{'kernel':<7} {'regions':>8} {'host code KiB':>14} {'translate ms':>13} {'slots translated':>17}")
    for k in kernels:
        e = runs[(k, "jit")][0]["engine"]
        share = 100.0 * e.get("translated_slots", 0) / max(1, e.get("instructions", 1))
        print(f"{k:<7} {e.get('regions', 0):>8} {e.get('code_bytes', 0) / 1024:>14.1f}"
              f" {e.get('translate_ns', 0) / 1e6:>13.2f} {share:>16.1f}%")
    # Scaling: the ALU kernel on one host thread.
    one = {e: [run_once("alu", lib, 1, engine=eng) for _ in range(a.repeats)] for e, lib, eng in engines}
    line = (f"alu on 1 host thread: jit {med(wall_rate1(r) for r in one['jit']):.1f} M/s,"
            f" interp {med(wall_rate1(r) for r in one['interp']):.1f} M/s")
    if base:
        line += f" (baseline {med(wall_rate1(r) for r in one['base']):.1f} M/s)"
    print(line)
    if not ok:
        print("error: the engines' cycles, instructions or results differ: a bug")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
