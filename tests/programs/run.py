#!/usr/bin/env python3
"""Published UPMEM programs, unmodified, on OpenPIM.

Each program is copied from ../shared/third_party (never edited there), built by its own
Makefile with OpenPIM's SDK commands on PATH, run, and judged by its own check (PrIM's
"[OK]" line and mismatch messages, SimplePIM's comparison with its CPU result, dpu_demo's
checksum comparison).

    tests/programs/run.py                 the CI subset (a few minutes)
    tests/programs/run.py --all           every program: PrIM 16 x {1, 4, 64} DPUs, PID-Comm's tutorial,
                                          SimplePIM 6, dpu_demo C and Python
    tests/programs/run.py --list          the names, one a line
    tests/programs/run.py NAME...         only these (e.g. prim/VA@64 simplepim/red)
    tests/programs/run.py --check         PrIM 16 at 4 DPUs, SimplePIM, dpu_demo under both checkers
                                          (OPENPIM_CHECK=memory,races; built with -g): each passes its
                                          own check and reports only the findings judged in
                                          docs/checking.md (tests/programs/check_known.json)

Every program runs on both DPU engines (the translating engine, OPENPIM_ENGINE=jit, with its code
translated at once, OPENPIM_JIT_HOT_SLOTS=0, then the interpreter, interp), each judged by the program's own check, and the two runs' reports must
agree launch by launch (cycles, instructions, DMA bytes and requests, faults, per-rank cycles and
instructions); --one-engine runs the default engine only.

Environment: PROGRAMS_TIMEOUT (seconds per program, default 600), PROGRAMS_VERBOSE=1
(print every program's output), PROGRAMS_KEEP=1 (keep the build folder), THIRD_PARTY
(default ../shared/third_party beside the repository).
Prints one PASS/FAIL line per program with its wall time, then "N passed, M failed".
A program whose own host code corrupts its heap (SimplePIM linear_reg: SIMPLEPIM_OWN_CRASH) is
run again when glibc kills it (SIGSEGV, SIGABRT), up to CRASH_RETRIES times, with a note line
for each retry; any other crash fails the program.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("OPENPIM_SHARED", ROOT.parent / "shared"))
THIRD_PARTY = Path(os.environ.get("THIRD_PARTY", SHARED / "third_party"))
INPUTS = SHARED / "calibration" / "inputs"

# PrIM at 64 DPUs: exactly the runs of shared/calibration/prim-64dpu-runs.md.
# (make variables, host arguments; {inputs} is the generated-inputs folder)
PRIM_64 = {
    "BFS": ("", "./bin/host_code -v 1 -f {inputs}/bfs_synth_64k.txt"),
    "BS": ("", "./bin/bs_host -w 0 -e 1 -i 262144"),
    "GEMV": ("", "./bin/gemv_host -w 0 -e 1 -m 8192 -n 1024"),
    "HST-L": ("", "./bin/host_code -w 0 -e 1 -b 256 -x 1"),
    "HST-S": ("", "./bin/host_code -w 0 -e 1 -b 256 -x 1"),
    "MLP": ("", "./bin/mlp_host -w 0 -e 1 -m 8192 -n 1024"),
    "NW": ("BL=40 BL_IN=2", "./bin/nw_host -w 0 -e 1 -n 2560"),
    "RED": ("VERSION=SINGLE", "./bin/host_code -w 0 -e 1 -i 6553600 -x 1"),
    "SCAN-RSS": ("", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "SCAN-SSA": ("", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "SEL": ("", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "SpMV": ("", "./bin/host_code -v 1 -f {inputs}/spmv_synth_16k.mtx"),
    "TRNS": ("", "./bin/host_code -w 0 -e 1 -p 64 -o 12288 -x 1"),
    "TS": ("", "./bin/ts_host -w 0 -e 1 -n 524288"),
    "UNI": ("", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "VA": ("", "./bin/host_code -w 0 -e 1 -i 2621440 -x 1"),
}

# PrIM at 1 and 4 DPUs: the same programs with smaller, PrIM-style sizes (a 1-DPU run of the
# 64-DPU sizes would take minutes of emulation for nothing new). Sizes are multiples of what
# each benchmark's partitioning needs at 1 and 4 DPUs.
PRIM_SMALL = {
    "BFS": ("", "./bin/host_code -v 1 -f {inputs}/bfs_synth_64k.txt"),
    "BS": ("", "./bin/bs_host -w 0 -e 1 -i 32768"),
    "GEMV": ("", "./bin/gemv_host -w 0 -e 1 -m 1024 -n 256"),
    "HST-L": ("", "./bin/host_code -w 0 -e 1 -b 256 -x 1 -i 262144"),
    "HST-S": ("", "./bin/host_code -w 0 -e 1 -b 256 -x 1 -i 262144"),
    "MLP": ("", "./bin/mlp_host -w 0 -e 1 -m 1024 -n 256"),
    "NW": ("BL=40 BL_IN=2", "./bin/nw_host -w 0 -e 1 -n 640"),
    "RED": ("VERSION=SINGLE", "./bin/host_code -w 0 -e 1 -i 262144 -x 1"),
    "SCAN-RSS": ("", "./bin/host_code -w 0 -e 1 -i 262144 -x 1"),
    "SCAN-SSA": ("", "./bin/host_code -w 0 -e 1 -i 262144 -x 1"),
    "SEL": ("", "./bin/host_code -w 0 -e 1 -i 262144 -x 1"),
    "SpMV": ("", "./bin/host_code -v 1 -f {inputs}/spmv_synth_16k.mtx"),
    "TRNS": ("", "./bin/host_code -w 0 -e 1 -p 16 -o 1024 -x 1"),
    "TS": ("", "./bin/ts_host -w 0 -e 1 -n 65536"),
    "UNI": ("", "./bin/host_code -w 0 -e 1 -i 262144 -x 1"),
    "VA": ("", "./bin/host_code -w 0 -e 1 -i 262144 -x 1"),
}

# SimplePIM examples. Their inputs and the checks they lack are in simplepim.py (their own
# data scripts need torch/sklearn; simplepim.py follows the scripts' recipes instead).
SIMPLEPIM = ["va", "red", "hist", "linear_reg", "log_reg", "kmeans"]

# The CI subset: one program of each kind and each corner case the DMA rules exist for.
CI_SUBSET = [
    "prim/VA@4",
    "prim/BS@4",
    "prim/TRNS@4",
    "prim/BFS@4",
    "prim/GEMV@4",
    "prim/HST-S@1",
    "prim/SEL@64",
    "simplepim/red",
    "simplepim/va",
    "simplepim/hist",
    "simplepim/kmeans",
    "dpu_demo/c",
    "dpu_demo/python",
    "pidcomm/tutorial",
]

FAIL_PATTERNS = [
    re.compile(r"\[.*ERROR.*\]"),
    re.compile(r"Mismatch at"),
    re.compile(r"results differ", re.I),
]


@dataclasses.dataclass
class Program:
    name: str
    src: Path  # folder to copy
    work_sub: str  # folder inside the copy to build and run in
    make_args: list[str]
    run: list[str]
    ok_pattern: re.Pattern[str] | None  # must appear in the output
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    # Called with the build folder before make (input generation).
    prepare: Callable[[Path], None] | None = None
    # Called with the build folder and the output after a clean exit: None or why it failed.
    check: Callable[[Path, str], str | None] | None = None
    # Built by `make` (False: the run command builds, as a script that compiles and runs).
    make: bool = True
    # Why the program's own host code may crash now and then (heap corruption it does itself):
    # a run killed by SIGSEGV or SIGABRT is then run again, up to CRASH_RETRIES times, and each
    # retry is reported. None: any crash fails the program.
    own_crash: str | None = None


# Runs after the first of a program whose host code is known to corrupt its own heap.
CRASH_RETRIES = 5


def prim(bench: str, ndpus: int) -> Program:
    table = PRIM_64 if ndpus == 64 else PRIM_SMALL
    make_vars, args = table[bench]
    run = args.format(inputs=INPUTS).split()
    # BFS and SpMV print only mismatches: success is a clean exit without one.
    ok = None if bench in ("BFS", "SpMV") else re.compile(r"\[.*OK.*\]")
    return Program(
        name=f"prim/{bench}@{ndpus}",
        src=THIRD_PARTY / "prim-benchmarks" / bench,
        work_sub=".",
        make_args=[f"NR_DPUS={ndpus}", "NR_TASKLETS=16", *make_vars.split()],
        run=run,
        ok_pattern=ok,
    )


def simplepim(example: str) -> Program:
    def prepare(d: Path) -> None:
        import simplepim as sp

        sp.prepare(example, d)

    def check(d: Path, out: str) -> str | None:
        import simplepim as sp

        return sp.judge(example, d, out)

    return Program(
        name=f"simplepim/{example}",
        # The examples include ../../lib: copy the whole framework.
        src=THIRD_PARTY / "SimplePIM",
        work_sub=f"benchmarks/{example}",
        make_args=[],
        run=["./bin/host"],
        ok_pattern=None,
        prepare=prepare,
        check=check,
        own_crash=SIMPLEPIM_OWN_CRASH.get(example),
    )


# linear_reg's host.c allocates its DPU gradients as `malloc(dim*sizeof(T))` (T = int, 40
# bytes) and stores dim int64 (80 bytes) into it: the 40 bytes past the block overwrite the
# heap's bookkeeping, and a later malloc of the process (at exit: OpenPIM writing the run
# report) sometimes crashes in glibc (SIGSEGV in _int_malloc, or an abort on a corrupted
# size). Measured: 6 crashes in 60 runs as published, none in 60 with that one line
# allocating dim*sizeof(int64_t) (in a scratch copy).
SIMPLEPIM_OWN_CRASH = {
    "linear_reg": "its host overflows gradients_dpu (dim int64 in dim*sizeof(int) bytes)",
}


def dpu_demo(kind: str) -> Program:
    if kind == "c":
        run = ["./build/checksum_host"]
    else:
        run = [sys.executable, "host/host.py", "1", "16"]
    return Program(
        name=f"dpu_demo/{kind}",
        src=THIRD_PARTY / "dpu_demo" / "checksum",
        work_sub=".",
        make_args=[] if kind == "c" else ["build/checksum_dpu"],
        run=run,
        ok_pattern=None,
    )


def pidcomm_tutorial() -> Program:
    """PID-Comm's tutorial: its own script builds the DPU and host programs (with OpenPIM's
    <pidcomm.h> and libdpu) and runs AllReduce on 1,024 DPUs. The published folder ships
    prebuilt binaries in bin/, left out of the copy here: the script needs the folder."""
    return Program(
        name="pidcomm/tutorial",
        src=THIRD_PARTY / "PID-Comm" / "tutorial",
        work_sub=".",
        make_args=[],
        run=["bash", "AllReduce_demo.sh"],
        ok_pattern=re.compile(r"^Functionality check success$", re.M),
        prepare=lambda d: (d / "bin").mkdir(exist_ok=True),
        make=False,
    )


def all_programs() -> dict[str, Program]:
    progs: list[Program] = []
    for ndpus in (1, 4, 64):
        progs += [prim(b, ndpus) for b in PRIM_64]
    progs += [simplepim(e) for e in SIMPLEPIM]
    progs += [dpu_demo("c"), dpu_demo("python")]
    progs += [pidcomm_tutorial()]
    return {p.name: p for p in progs}


def sdk_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{ROOT}/sdk/bin:{ROOT}/target/release:{env.get('PATH', '')}"
    ld = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{ROOT}/target/release" + (f":{ld}" if ld else "")
    py = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{ROOT}/python" + (f":{py}" if py else "")
    env["OPENPIM_ROOT"] = str(ROOT)
    return env


def judge(p: Program, rc: int, out: str) -> str | None:
    """None when the program passed, else why it failed."""
    if rc != 0:
        return f"exit code {rc}"
    for pat in FAIL_PATTERNS:
        m = pat.search(out)
        if m:
            return f"its check failed: {m.group(0)!r}"
    if p.ok_pattern is not None and not p.ok_pattern.search(out):
        return f"no {p.ok_pattern.pattern!r} line"
    return None


# What must be identical between the engines, per launch of the run report.
LAUNCH_KEYS = ("cycles", "instructions", "dma_bytes", "dma_requests", "faults", "dpus", "tasklets",
               "tasklet_utilisation", "sync_wait_fraction")


def launches_of(report: Path) -> list | None:
    """The engine-determined fields of a run report's launches (None: no report)."""
    try:
        launches = json.loads(report.read_text())["launches"]
    except (OSError, ValueError, KeyError):
        return None
    return [{k: l.get(k) for k in LAUNCH_KEYS}
            | {"per_rank": [(r["cycles"], r["instructions"]) for r in l.get("per_rank", [])]}
            for l in launches]


# The programs run under the checkers (`--check`).
CHECK_SET = [f"prim/{b}@4" for b in PRIM_64] + [f"simplepim/{e}" for e in SIMPLEPIM] + [
    "dpu_demo/c", "dpu_demo/python"]

# Findings judged in docs/checking.md: program -> ["KIND LOCATION[ LOCATION]", ...].
CHECK_KNOWN = Path(__file__).resolve().parent / "check_known.json"


def with_debug_info(workdir: Path, env: dict[str, str]) -> None:
    """Puts first on PATH a DPU compiler that adds -g (findings name source lines)."""
    bindir = workdir / "check-bin"
    bindir.mkdir(exist_ok=True)
    cc = bindir / "dpu-upmem-dpurte-clang"
    cc.write_text(f'#!/usr/bin/env bash\nexec "{ROOT}/sdk/bin/dpu-upmem-dpurte-clang" -g "$@"\n')
    cc.chmod(0o755)
    env["PATH"] = f"{bindir}:{env['PATH']}"


def check_findings(name: str, report: Path) -> tuple[str | None, list[str]]:
    """(why the findings fail, the findings as "KIND LOCATION..." lines)."""
    try:
        section = json.loads(report.read_text())["check"]
    except (OSError, ValueError, KeyError) as e:
        return f"no check section in the report: {e}", []
    got = sorted({" ".join([f["kind"], *sorted(a["location"] for a in f["accesses"])]) for f in section["findings"]})
    known = set(json.loads(CHECK_KNOWN.read_text()).get(name, [])) if CHECK_KNOWN.exists() else set()
    new = [g for g in got if g not in known]
    if new:
        return f"{len(new)} finding(s) not judged in docs/checking.md: {'; '.join(new)}", got
    return None, got


def run_program(p: Program, workdir: Path, timeout: int, verbose: bool,
                engines: bool = True, check: bool = False) -> tuple[bool, float, str]:
    dest = workdir / p.name.replace("/", "_").replace("@", "_")
    shutil.copytree(p.src, dest, symlinks=True)
    cwd = dest / p.work_sub
    env = sdk_env()
    env.update(p.env)
    if check:
        engines = False
        with_debug_info(workdir, env)
        env["OPENPIM_CHECK"] = "memory,races"
        env["OPENPIM_REPORT"] = str(dest / "report-check.json")
    if engines:
        env["OPENPIM_ENGINE"] = "jit"
        # (Translated at once, not only once hot: the test sizes are small.)
        env["OPENPIM_JIT_HOT_SLOTS"] = "0"
        env["OPENPIM_REPORT"] = str(dest / "report-jit.json")
    log: list[str] = []
    start = time.monotonic()

    def step(cmd: list[str], what: str) -> tuple[int, str]:
        try:
            r = subprocess.run(
                cmd,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                text=True,
                errors="replace",
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
            log.append(f"$ {' '.join(cmd)}\n{out}\n(timed out after {timeout} s)")
            return -1, out
        log.append(f"$ {' '.join(cmd)}\n{r.stdout}")
        return r.returncode, r.stdout

    why = None
    if p.prepare:
        try:
            p.prepare(cwd)
        except Exception as e:  # noqa: BLE001 - any failure of input generation is reported
            why = f"input generation failed: {e}"
    if why is None and p.make:
        # Clean first: a copied tree may carry stale build outputs.
        rc, _ = step(["make", "-j2", *p.make_args], "build")
        if rc != 0:
            why = f"build failed (exit {rc})"

    def run_once(what: str) -> tuple[int, str]:
        rc, out = step(p.run, what)
        for _ in range(CRASH_RETRIES if p.own_crash else 0):
            if rc not in (-signal.SIGSEGV, -signal.SIGABRT):
                break
            print(f"     {p.name}: {what} killed by {signal.Signals(-rc).name}, run again "
                  f"({p.own_crash})")
            rc, out = step(p.run, f"{what} (again)")
        return rc, out

    if why is None:
        rc, out = run_once("run")
        why = "timed out" if rc == -1 else judge(p, rc, out)
        if why is None and p.check is not None:
            why = p.check(cwd, out)
    if why is None and check:
        why, got = check_findings(p.name, dest / "report-check.json")
        if why is None:
            print(f"     {p.name}: {len(got)} known finding(s)" + "".join(f"\n       {g}" for g in got))
    if why is None and engines:
        # The same binary on the interpreter: its own check, and the same launches.
        env["OPENPIM_ENGINE"] = "interp"
        env.pop("OPENPIM_JIT_HOT_SLOTS", None)
        env["OPENPIM_REPORT"] = str(dest / "report-interp.json")
        rc, out = run_once("run on the interpreter")
        why = "timed out on the interpreter" if rc == -1 else judge(p, rc, out)
        if why is None and p.check is not None:
            why = p.check(cwd, out)
        if why is not None:
            why = f"on the interpreter: {why}"
        else:
            jit, interp = launches_of(dest / "report-jit.json"), launches_of(dest / "report-interp.json")
            if jit is None or interp is None:
                why = "no run report to compare the engines"
            elif (e := json.loads((dest / "report-jit.json").read_text()).get("engine") or {}).get(
                    "name") == "jit" and sum(l["instructions"] or 0 for l in jit) > 0 and not e.get("translated_slots"):
                why = "no issue slot ran as translated code on the translating engine"
            elif jit != interp:
                diff = next((i for i, (a, b) in enumerate(zip(jit, interp)) if a != b), min(len(jit), len(interp)))
                why = (f"the engines differ at launch {diff} of {len(jit)}/{len(interp)}: "
                       f"jit {jit[diff] if diff < len(jit) else None}, interp {interp[diff] if diff < len(interp) else None}")
    elapsed = time.monotonic() - start
    text = "\n".join(log)
    if verbose or why is not None:
        tail = text if verbose else "\n".join(text.splitlines()[-40:])
        print(tail, file=sys.stderr)
    return why is None, elapsed, why or ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="programs to run (default: the CI subset)")
    ap.add_argument("--all", action="store_true", help="every program")
    ap.add_argument("--list", action="store_true", help="list the programs")
    ap.add_argument("--one-engine", action="store_true",
                    help="run the default DPU engine only (no comparison of the engines)")
    ap.add_argument("--check", action="store_true",
                    help="run under both checkers (default: PrIM at 4 DPUs, SimplePIM, dpu_demo)")
    args = ap.parse_args()

    progs = all_programs()
    if args.list:
        for n in progs:
            print(n + ("   (CI)" if n in CI_SUBSET else ""))
        return 0
    if not THIRD_PARTY.is_dir():
        print(f"error: {THIRD_PARTY} not found (set THIRD_PARTY to the third_party folder)", file=sys.stderr)
        return 2
    default = CHECK_SET if args.check else CI_SUBSET
    names = list(progs) if args.all else (args.names or default)
    unknown = [n for n in names if n not in progs]
    if unknown:
        print(f"error: unknown program(s) {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2

    timeout = int(os.environ.get("PROGRAMS_TIMEOUT", "600"))
    verbose = os.environ.get("PROGRAMS_VERBOSE") == "1"
    keep = os.environ.get("PROGRAMS_KEEP") == "1"
    workdir = Path(tempfile.mkdtemp(prefix="openpim-programs-"))
    passed = failed = 0
    total_start = time.monotonic()
    try:
        for n in names:
            ok, secs, why = run_program(progs[n], workdir, timeout, verbose, not args.one_engine,
                                        args.check)
            if ok:
                passed += 1
                print(f"PASS {n:24s} {secs:7.1f} s", flush=True)
            else:
                failed += 1
                print(f"FAIL {n:24s} {secs:7.1f} s  {why}", flush=True)
    finally:
        if keep:
            print(f"(build folder kept: {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"programs: {time.monotonic() - total_start:.0f} s of wall time")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
