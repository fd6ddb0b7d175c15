#!/usr/bin/env python3
"""The MPI backend's cost and reach (docs/scale-out.md): one command, tables on stdout.

    bench/mpi/run.py [--only VA,RED,...] [--dpus 256]

1. One machine: each PrIM benchmark (copied from ../shared/third_party, built by its own
   Makefile, run with the inputs of tests/programs at 64 DPUs) at 256 DPUs, in process with 2
   simulation threads (OPENPIM_THREADS=2) and on 2 MPI workers of 1 thread each; the wall-time
   ratio (MPI / local; the issue's target is <= 1.15) and whether the virtual times agree.
2. The messages over MPI per kind of request (the report's mpi_traffic, summed over the
   programs), and the wall time of the same runs with OpenMPI's TCP transport forced
   (OMPI_MCA_btl=tcp,self) against shared memory.
3. A strong-scaling projection for PrIM VA at 2,560 DPUs on 1-64 hosts of 16 cores, from the
   engine speed measured here (instructions simulated per second and core) and the traffic
   measured here, scaled to 2,560 DPUs (see the model's assumptions printed with the table).
Needs `make build` (with OpenMPI).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "programs"))
import run as programs  # noqa: E402  (PrIM's table, the SDK environment)

OPENPIM = ROOT / "target" / "release" / "openpim"


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    e = programs.sdk_env()
    for k in ("OPENPIM_SERVER", "OPENPIM_MPI", "OPENPIM_REPORT", "OPENPIM_TRACE"):
        e.pop(k, None)
    e.update(extra or {})
    return e


def timed(cmd: list[str], cwd: Path, extra: dict[str, str]) -> tuple[float, int, str]:
    start = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace", timeout=1800)
    return time.monotonic() - start, r.returncode, r.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated PrIM benchmarks (default: all 16)")
    ap.add_argument("--dpus", type=int, default=256)
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(programs.PRIM_64)
    ranks = (args.dpus + 63) // 64
    work = Path(tempfile.mkdtemp(prefix="openpim-bench-mpi-"))
    rows = []
    traffic: dict[str, list[int]] = {}
    tcp_rows = []
    va = None
    try:
        for bench in names:
            make_vars, run_args = programs.PRIM_64[bench]
            dest = work / bench
            shutil.copytree(programs.THIRD_PARTY / "prim-benchmarks" / bench, dest, symlinks=True)
            r = subprocess.run(["make", "-j2", f"NR_DPUS={args.dpus}", "NR_TASKLETS=16",
                                *make_vars.split()], cwd=dest, env=env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                print(f"{bench}: build failed", file=sys.stderr)
                continue
            cmd = run_args.format(inputs=programs.INPUTS).split()
            res = {}
            for name, opts, extra in (
                ("local", [], {"OPENPIM_THREADS": "2"}),
                ("mpi", ["--mpi", "2"], {"OPENPIM_THREADS": "1"}),
                ("tcp", ["--mpi", "2"], {"OPENPIM_THREADS": "1", "OMPI_MCA_btl": "tcp,self"}),
            ):
                rep = dest / f"{name}.json"
                wall, rc, out = timed([str(OPENPIM), "run", "--ranks", str(ranks),
                                       f"--report={rep}", *opts, "--", *cmd], dest, extra)
                if rc != 0:
                    print(f"{bench} ({name}): exit {rc}\n{out[-2000:]}", file=sys.stderr)
                    break
                res[name] = (wall, json.loads(rep.read_text()))
            if len(res) < 3:
                continue
            (wl, rl), (wm, rm), (wt, _) = res["local"], res["mpi"], res["tcp"]
            same = all(rl["phases"][k] == rm["phases"][k]
                       for k in ("dpu_kernel_ns", "cpu_dpu_ns", "dpu_cpu_ns", "inter_dpu_ns"))
            rows.append((bench, wl, wm, wm / wl, same))
            tcp_rows.append((bench, wm, wt))
            for t in rm.get("mpi_traffic", []):
                acc = traffic.setdefault(t["kind"], [0, 0, 0])
                acc[0] += t["messages"]
                acc[1] += t["bytes_to_workers"]
                acc[2] += t["bytes_from_workers"]
            if bench == "VA":
                va = (rl, rm, wl)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # The fixed cost of a distributed run: mpirun, MPI_Init, the workers' greetings, the stop.
    starts = [timed([str(OPENPIM), "run", "--ranks", str(ranks), "--mpi", "2", "--", "true"],
                    ROOT, {})[0] for _ in range(3)]
    start_cost = sorted(starts)[1]
    cores = os.cpu_count() or 1
    print(f"## One machine ({cores} cores): PrIM at {args.dpus} DPUs, local x 2 threads vs "
          "2 MPI workers x 1 thread\n")
    print(f"Starting and stopping the MPI job (mpirun, MPI_Init, the workers' greetings, the "
          f"stop; median of 3 empty runs): {start_cost:.2f} s, in every MPI wall time below; "
          "'ratio w/o start' subtracts it.\n")
    print("| program | local wall s | MPI wall s | ratio | ratio w/o start | DPU kernel, CPU-DPU, DPU-CPU, inter-DPU times equal |")
    print("|---|---:|---:|---:|---:|---|")
    for b, wl, wm, ratio, same in rows:
        print(f"| {b} | {wl:.2f} | {wm:.2f} | {ratio:.2f} | "
              f"{max(wm - start_cost, 0) / wl:.2f} | {'yes' if same else 'NO'} |")
    if rows:
        tl = sum(r[1] for r in rows)
        tm = sum(r[2] for r in rows)
        net = max(tm - start_cost * len(rows), 0)
        print(f"| **all** | {tl:.2f} | {tm:.2f} | **{tm / tl:.2f}** | **{net / tl:.2f}** | "
              f"{sum(r[4] for r in rows)}/{len(rows)} |")

    print("\n## Messages over MPI per kind of request (summed over the programs)\n")
    print("| kind | messages | MiB to workers | MiB from workers | bytes per message |")
    print("|---|---:|---:|---:|---:|")
    for kind, (m, o, b) in sorted(traffic.items(), key=lambda kv: -kv[1][1] - kv[1][2]):
        print(f"| {kind} | {m} | {o / 2**20:.2f} | {b / 2**20:.2f} | {(o + b) / max(m, 1):.0f} |")

    print("\n## Shared memory vs TCP (OMPI_MCA_btl=tcp,self), 2 workers\n")
    print("| program | shared memory wall s | TCP wall s | TCP / shared memory |")
    print("|---|---:|---:|---:|")
    for b, wm, wt in tcp_rows:
        print(f"| {b} | {wm:.2f} | {wt:.2f} | {wt / wm:.2f} |")

    if va:
        project(*va, args.dpus)
    return 0


def project(local: dict, dist: dict, wall_local: float, dpus: int) -> None:
    """Strong scaling of PrIM VA at 2,560 DPUs on hosts of 16 cores."""
    instr = sum(r["instructions"] for l in local["launches"] for r in l.get("per_rank", []))
    kernel_ns = local["phases"]["dpu_kernel_ns"]
    # Engine speed: instructions per second and core, from the local run's whole wall time on
    # its 2 threads (an upper bound of the engine's cost: transfers and start-up included).
    ips_core = instr / max(wall_local, 1e-9) / 2
    scale = 2560 / dpus
    instr_full = instr * scale
    traffic = dist.get("mpi_traffic", [])
    data_bytes = sum(t["bytes_to_workers"] + t["bytes_from_workers"] for t in traffic) * scale
    msgs_per_worker_call = sum(t["messages"] for t in traffic) / 2  # measured on 2 workers
    net_bw = 1.25e9  # 10 GbE at the gateway's link, bytes/s
    latency = 50e-6  # per message round trip, s
    print("\n## Strong-scaling projection: PrIM VA at 2,560 DPUs (40 ranks), hosts of 16 cores\n")
    print(f"Measured here: {instr:.3e} DPU instructions at {dpus} DPUs, "
          f"{ips_core / 1e6:.0f} M instructions/s per core (whole-run upper bound), "
          f"{sum(t['bytes_to_workers'] + t['bytes_from_workers'] for t in traffic) / 2**20:.0f} MiB "
          f"over MPI; modeled kernel {kernel_ns / 1e6:.2f} ms. Model: engine time = instructions "
          f"/ (16 x hosts x per-core speed); data through the gateway's 10 GbE link "
          f"({net_bw / 1e9:.2f} GB/s, the same bytes whatever the hosts); {latency * 1e6:.0f} us "
          "per message, messages per call growing with the workers.\n")
    # The same traffic with a kernel of 10 ms of modeled time (the bar): the engine
    # work scales with the modeled kernel time.
    heavy = 10e6 / max(kernel_ns, 1)
    print("| hosts | engine s | network s | total s | speed-up | parallel efficiency | "
          "efficiency, 10 ms kernel |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    base = base_heavy = None
    for h in (1, 2, 4, 8, 16, 32, 64):
        engine = instr_full / (16 * h * ips_core)
        network = (data_bytes / net_bw if h > 1 else 0.0) + msgs_per_worker_call * h * latency
        total = engine + network
        base = base or total
        total_heavy = engine * heavy + network
        base_heavy = base_heavy or total_heavy
        print(f"| {h} | {engine:.2f} | {network:.2f} | {total:.2f} | {base / total:.1f} | "
              f"{100 * base / total / h:.0f} % | {100 * base_heavy / total_heavy / h:.0f} % |")
    print("\nWhere it breaks down: VA moves 12 bytes per element over the bus for 1 element "
          "added on the DPU, so its data crosses the gateway's link at every run whatever the "
          "hosts, while its engine time shrinks with them: past a few hosts the network term "
          "dominates. The last column keeps VA's traffic with 20 times the engine work (a "
          "10 ms kernel): the same single link bounds it too, later.")

if __name__ == "__main__":
    sys.exit(main())
