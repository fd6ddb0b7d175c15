#!/usr/bin/env python3
"""MRAM backing stores, measured: seed 003's STREAM experiment on the emulated MRAM.

STREAM copy / scale / add / triad (uint32) run by DPU kernels and through host transfers
(read the operands from every DPU, compute on the host, write the result back), with MRAM in
each backing store and each persistence horizon; then the deduplicated broadcast and the
big-data run (4 GiB of MRAM under a 512 MiB budget). Wall time (the emulator's real time:
this is what the store changes; virtual time does not move), peak resident memory of the
process, bytes it wrote to disk.

    bench/memory/run.py [--dpus N] [--mib M] [--reps R] [--quick] [--plot FILE.png]

Prints a table (markdown); writes the plot (default build/bench/memory.png) when matplotlib
is there. Run after `make build`. Uses $TMPDIR for the stores.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "memory"
OPS = ["copy", "scale", "add", "triad"]
# Bytes each op moves per DPU, in arrays of M MiB: copy/scale 2 (read + write), add/triad 3.
ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PATH"] = f"{ROOT / 'sdk' / 'bin'}:{e.get('PATH', '')}"
    lib = ROOT / "target" / "release"
    e["LD_LIBRARY_PATH"] = f"{lib}:{e['LD_LIBRARY_PATH']}" if e.get("LD_LIBRARY_PATH") else str(lib)
    e.pop("OPENPIM_REPORT", None)
    # Wall clock in the host program's own timings (its phases), not the virtual timeline.
    e["OPENPIM_CLOCK"] = "real"
    return e


def build() -> None:
    """Builds tests/memory (host and kernel) with the project's DPU toolchain."""
    subprocess.run([str(ROOT / "scripts/dpu-toolchain.sh"), "fresh", str(TESTS)], check=True)
    subprocess.run(["make", "-s", "-C", str(TESTS)], env=env(), check=True, capture_output=True)


def host(profile: str, *args: str, report: str = "") -> tuple[str, float]:
    """Runs the test host; returns its output and wall seconds (REPORT: its JSON run report)."""
    e = env()
    e["UPMEM_PROFILE_BASE"] = profile
    if report:
        e["OPENPIM_REPORT"] = report
    start = time.monotonic()
    p = subprocess.Popen(
        ["./bin/host", *args], cwd=TESTS, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    out, _ = p.communicate()
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"bench/memory: host {' '.join(args)} with '{profile}' failed:\n{out}")
    return out, wall


def cpu_children() -> float:
    """CPU seconds (user + system) of the children reaped so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def stream(name: str, profile: str, dpus: int, mib: int, reps: int, report: str = "") -> dict:
    cpu0 = cpu_children()
    out, wall = host(profile, "stream", str(dpus), str(mib), str(reps), report=report)
    row: dict = {"config": name, "profile": profile or "(default)", "wall": wall, "cpu": cpu_children() - cpu0,
                 "checked": "stream check OK" in out}
    for line in out.splitlines():
        m = re.match(r"(\w+) dpu ([\d.]+) host ([\d.]+)", line)
        if m:
            row[m.group(1)] = (float(m.group(2)), float(m.group(3)))
        m = re.match(r"(peak_rss_mib|io_write_mib) (-?\d+)", line)
        if m:
            row[m.group(1)] = int(m.group(2))
        m = re.match(r"init ([\d.]+)", line)
        if m:
            row["init"] = float(m.group(1))
    return row


def best(runs: list[dict]) -> dict:
    """One row from several runs of a configuration: for each time, the fastest run's (the
    machine is shared: slower runs were slowed by others' work, not by the store)."""
    row = dict(runs[0])
    row["wall"] = min(r["wall"] for r in runs)
    row["cpu"] = min(r["cpu"] for r in runs)
    for o in OPS:
        row[o] = (min(r[o][0] for r in runs), min(r[o][1] for r in runs))
    return row


def store_configs(tmp: Path, working_mib: int) -> list[tuple[str, str]]:
    """The backing stores and persistence horizons compared, as (name, profile), for a working
    set of WORKING_MIB MiB, in this order: DRAM, a file with each horizon (never, end, launch,
    transfer), a cache with a budget that holds the working set and one of a third of it (at
    least 128 MiB: the name says the fraction)."""
    fits = max(1024, 2 * working_mib)
    small = max(128, working_mib // 3)
    return [
        ("anon (DRAM)", ""),
        ("file, persist=never", f"memory=file:{tmp}/f1,persist=never"),
        ("file, persist=end", f"memory=file:{tmp}/f2,persist=end"),
        ("file, persist=launch", f"memory=file:{tmp}/f3,persist=launch"),
        ("file, persist=transfer", f"memory=file:{tmp}/f4,persist=transfer"),
        (f"cached {fits}M (fits), end", f"memory=cached:{tmp}/c1,memoryBudget={fits}M"),
        (f"cached {small}M ({'1/3' if small == working_mib // 3 else f'{100 * small // working_mib} %'}), end",
         f"memory=cached:{tmp}/c2,memoryBudget={small}M"),
    ]


def gbps(seconds: float, op: str, dpus: int, mib: int) -> float:
    return ARRAYS[op] * dpus * mib * (1 << 20) / seconds / 1e9 if seconds > 0 else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dpus", type=int, default=32)
    ap.add_argument("--mib", type=int, default=4, help="MiB per array per DPU (3 arrays)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="runs of every configuration, interleaved")
    ap.add_argument("--quick", action="store_true", help="skip the big-data run")
    ap.add_argument("--plot", default=str(ROOT / "build" / "bench" / "memory.png"))
    a = ap.parse_args()

    build()
    tmp = Path(tempfile.mkdtemp(prefix="openpim-bench-memory."))
    working = 3 * a.dpus * a.mib
    configs = store_configs(tmp, working)
    runs: dict[str, list[dict]] = {name: [] for name, _ in configs}
    try:
        # Round-robin, so that the machine's load changes hit every configuration alike.
        for _ in range(max(1, a.rounds)):
            for name, profile in configs:
                runs[name].append(stream(name, profile, a.dpus, a.mib, a.reps))
                for d in tmp.iterdir():
                    shutil.rmtree(d, ignore_errors=True)
        rows = [best(runs[name]) for name, _ in configs]
        print(
            f"STREAM on MRAM: {a.dpus} DPUs x 3 arrays x {a.mib} MiB = {working} MiB working set, "
            f"{a.reps} repetitions; wall-time GB/s of emulated MRAM traffic (DPU kernels: the "
            "emulator's interpretation dominates; host: transfers + host arithmetic); each figure "
            f"the best of {max(1, a.rounds)} runs made in turn with the other stores\n"
        )
        head = "| store | " + " | ".join(f"{o} DPU" for o in OPS) + " | " + " | ".join(
            f"{o} host" for o in OPS
        ) + " | process wall s | vs anon | CPU s | vs anon | peak RSS MiB | written MiB |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        base, base_cpu = rows[0]["wall"], rows[0]["cpu"]
        for r in rows:
            cells = [f"{gbps(r[o][0], o, a.dpus, a.mib):.2f}" for o in OPS]
            cells += [f"{gbps(r[o][1], o, a.dpus, a.mib):.2f}" for o in OPS]
            print(
                f"| {r['config']} | "
                + " | ".join(cells)
                + f" | {r['wall']:.1f} | {r['wall'] / base:.2f}x | {r['cpu']:.1f} | {r['cpu'] / base_cpu:.2f}x"
                + f" | {r.get('peak_rss_mib', -1)} | {r.get('io_write_mib', -1)} |"
            )

        print()
        out, wall = host("", "bcast", "2560", "8")
        m = re.search(r"bcast_pss_kib=(-?\d+) read_pss_kib=(-?\d+) buffer_kib=(\d+)", out)
        pte = re.search(r"page tables (\d+) MiB", out)
        if m:
            b, r2, buf = (int(x) for x in m.groups())
            print(
                f"dedup: 8 MiB broadcast to 2,560 DPUs: +{b / 1024:.1f} MiB (PSS) after the broadcast "
                f"({b / buf:.2f}x the buffer), +{r2 / 1024:.1f} MiB after reading every DPU back "
                f"({r2 / buf:.2f}x; page tables {pte.group(1) if pte else '?'} MiB); {wall:.1f} s"
            )
        if not a.quick:
            d = tmp / "big"
            out, wall = host(f"memory=cached:{d},memoryBudget=512M", "big", "3", "64", "64")
            print(f"big data: 64 DPUs x 64 MiB = 4 GiB of MRAM under memoryBudget=512M: {out.splitlines()[0]}; "
                  f"{4096 / wall:.0f} MiB/s end to end ({wall:.1f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: matplotlib is not installed)")
        return
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(rows)
    for k, r in enumerate(rows):
        xs = [i + k * width for i in range(len(OPS) * 2)]
        ys = [gbps(r[o][0], o, a.dpus, a.mib) for o in OPS] + [gbps(r[o][1], o, a.dpus, a.mib) for o in OPS]
        ax.bar(xs, ys, width, label=r["config"])
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(OPS) * 2)])
    ax.set_xticklabels([f"{o}\nDPU" for o in OPS] + [f"{o}\nhost" for o in OPS])
    ax.set_ylabel("GB/s (wall time)")
    ax.set_title(f"STREAM on emulated MRAM by backing store ({a.dpus} DPUs, {working} MiB)")
    ax.legend(fontsize=7)
    Path(a.plot).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(a.plot, dpi=120)
    print(f"plot: {a.plot}")


if __name__ == "__main__":
    main()
