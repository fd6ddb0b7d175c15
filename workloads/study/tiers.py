#!/usr/bin/env python3
"""The tiers study of seed 003 (Jackson, "Evaluating the latest Optane memory") on OpenPIM: the
emulated MRAM in each backing store (DRAM, a file with each persistence horizon, a cache under a
memory budget), measured with the STREAM kernels of bench/memory, and data bigger than the
budget.

    openpim study tiers [--quick] [--out DIR] [--hardware H]

Writes into DIR: stream.csv/png (GB/s of copy, scale, add, triad per store, DPU kernels and
host transfers, the seed's STREAM tables), persistence.csv/png (the cost of
persist=never|end|launch|transfer), budget.csv/png (a budget that holds the working set, one
of a third of it, and the big-data run: time and peak resident memory), runs.log and
REPORT.md. What a store changes is the emulator's wall time (the seed measures real bandwidth);
the programs' virtual times come from their JSON run reports and must not change with the store.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "study"  # noqa: A001

from study.common import (Claim, Log, StudyError, bench_module, claim, finish, plot, study_args,  # noqa: E402
                          write_csv, yn)

SOURCE = ("Jackson, \"Evaluating the latest Optane memory: a glorious swansong?\" (seed 003, slides: STREAM "
          "tables by memory location and persistence horizon, application porting)")
OPS = ["copy", "scale", "add", "triad"]
# The seed's STREAM table with the persistence horizon (3rd generation, GB/s: copy, scale, add, triad).
SEED = {"All in DRAM": (172, 172, 187, 186), "All in Optane (no persist)": (23, 24, 28, 28),
        "All in Optane (persist at end)": (23, 23, 28, 28), "All in Optane (persist each write)": (3, 3, 4, 4)}
QUICK = {"dpus": 16, "mib": 8, "reps": 1, "rounds": 1, "big": (16, 64, "256M")}
FULL = {"dpus": 32, "mib": 8, "reps": 2, "rounds": 3, "big": (64, 64, "512M")}


def main(argv: list[str] | None = None) -> int:
    a = study_args("tiers", __doc__ or "", argv)
    out: Path = a.out
    s = QUICK if a.quick else FULL
    log = Log(out)
    start = time.monotonic()
    mem = bench_module("memory")
    log(f"tiers study ({'quick' if a.quick else 'full'}) into {out}")
    tmp = Path(tempfile.mkdtemp(prefix="openpim-study-tiers."))
    rows: list[dict[str, Any]] = []
    try:
        mem.build()
        working = 3 * s["dpus"] * s["mib"]
        configs = mem.store_configs(tmp, working)
        if a.profile:
            configs = [(n, f"{a.profile},{p}" if p else a.profile) for n, p in configs]
        runs: dict[str, list[dict]] = {n: [] for n, _ in configs}
        for _ in range(s["rounds"]):
            for name, profile in configs:
                rep = tmp / "run.json"
                log(f"  run {name}: tests/memory/bin/host stream {s['dpus']} {s['mib']} {s['reps']} "
                    f"(UPMEM_PROFILE_BASE={profile} OPENPIM_CLOCK=real OPENPIM_REPORT={rep})")
                r = mem.stream(name, profile, s["dpus"], s["mib"], s["reps"], report=str(rep))
                if not r["checked"]:
                    raise StudyError(f"{name}: the STREAM arrays differ from the host's replay")
                import json

                r["report"] = json.loads(rep.read_text())
                runs[name].append(r)
                for d in tmp.iterdir():
                    if d.is_dir():
                        shutil.rmtree(d, ignore_errors=True)
        for name, _ in configs:
            b = mem.best(runs[name])
            rep = runs[name][0]["report"]["phases"]
            row = {"store": name, "profile": b["profile"], "wall_s": b["wall"], "cpu_s": b["cpu"],
                   "peak_rss_mib": b.get("peak_rss_mib", -1), "written_mib": b.get("io_write_mib", -1),
                   "virtual_kernel_ns": rep["dpu_kernel_ns"], "virtual_bus_ns": rep["cpu_dpu_ns"] + rep["dpu_cpu_ns"]}
            for o in OPS:
                row[f"{o}_dpu_gbps"] = mem.gbps(b[o][0], o, s["dpus"], s["mib"])
                row[f"{o}_host_gbps"] = mem.gbps(b[o][1], o, s["dpus"], s["mib"])
            rows.append(row)
        seed_, dpus, mib = 3, s["big"][0], s["big"][1]
        profile = f"memory=cached:{tmp}/big,memoryBudget={s['big'][2]}" + (f",{a.profile}" if a.profile else "")
        log(f"  run big data: tests/memory/bin/host big {seed_} {dpus} {mib} (UPMEM_PROFILE_BASE={profile})")
        text, wall = mem.host(profile, "big", str(seed_), str(dpus), str(mib))
        if "OK" not in text:
            raise StudyError(f"big data: no OK line:\n{text[-1500:]}")
        import re

        rss = re.search(r"peak RSS (\d+) MiB", text)
        big = {"store": f"cached {s['big'][2]} (big data, {dpus * mib} MiB of MRAM)", "wall_s": wall,
               "peak_rss_mib": int(rss.group(1)) if rss else -1, "data_mib": dpus * mib,
               "budget_mib": int(s["big"][2][:-1]), "mib_per_s": dpus * mib / wall}
    except (StudyError, SystemExit, subprocess.CalledProcessError) as e:
        log(f"error: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = rows[0]
    persistence = [{"horizon": r["store"].split("persist=")[1], "wall_s": r["wall_s"],
                    "vs_never": r["wall_s"] / rows[1]["wall_s"], "written_mib": r["written_mib"],
                    "triad_host_gbps": r["triad_host_gbps"]} for r in rows if "persist=" in r["store"]]
    budget = [{"store": r["store"], "wall_s": r["wall_s"], "vs_dram": r["wall_s"] / base["wall_s"],
               "peak_rss_mib": r["peak_rss_mib"], "data_mib": working} for r in rows
              if r["store"].startswith(("anon", "cached"))] + [{**big, "vs_dram": ""}]
    write_csv(out / "stream.csv", rows)
    write_csv(out / "persistence.csv", persistence)
    write_csv(out / "budget.csv", budget)
    figures(out, rows, persistence, budget)
    claims = build_claims(rows, persistence, budget, big, working)
    return finish(out, log, "Tiers study (seed 003, memory tiers and the persistence horizon)", SOURCE, start, claims,
                  [f"Sizes: `{'quick' if a.quick else 'full'}`: STREAM on {s['dpus']} DPUs x 3 arrays x {s['mib']} MiB "
                   f"= {working} MiB of MRAM, {s['reps']} repetition(s), best of {s['rounds']} round(s) made in turn "
                   f"over the stores; big data: {dpus} DPUs x {mib} MiB under memoryBudget={s['big'][2]}. GB/s are of "
                   "emulated MRAM traffic in wall time (DPU kernels: the emulator's interpretation dominates; host: "
                   "transfers and host arithmetic). Every run's arrays were checked against a host replay; virtual "
                   "times come from the JSON run reports.", ""],
                  seed_table())


def seed_table() -> list[str]:
    out = ["## The seed's STREAM table (3rd generation Optane, GB/s)", "", "| memory location | copy | scale | add | triad |",
           "|---|---|---|---|---|"]
    out += [f"| {k} | " + " | ".join(str(x) for x in v) + " |" for k, v in SEED.items()]
    return out + ["", "OpenPIM's counterpart is `stream.csv`: a DRAM store (`anon`) against a file (the slower, "
                  "persistent tier) with each horizon, and a DRAM cache in front of the file under a budget "
                  "(the seed's Memory mode).", ""]


def figures(out: Path, rows: list[dict], persistence: list[dict], budget: list[dict]) -> None:
    plt = plot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(rows)
    for ax, kind in zip(axes, ("dpu", "host")):
        for k, r in enumerate(rows):
            ax.bar([i + k * width for i in range(len(OPS))], [r[f"{o}_{kind}_gbps"] for o in OPS], width,
                   label=r["store"])
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(OPS))])
        ax.set_xticklabels(OPS)
        ax.set_ylabel("GB/s of MRAM traffic (wall time)")
        ax.set_title(f"STREAM by {'DPU kernels' if kind == 'dpu' else 'host transfers'}")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "stream.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar([p["horizon"] for p in persistence], [p["vs_never"] for p in persistence], label="OpenPIM (wall time)")
    ax.scatter(["never", "end", "transfer"], [1.0, 23 / 23, 23 / 3], color="k", zorder=3,
               label="seed: copy GB/s no persist / horizon")
    ax.set_ylabel("time relative to persist=never")
    ax.set_title("The persistence horizon")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "persistence.png", dpi=110)
    plt.close(fig)

    fig, ax1 = plt.subplots(figsize=(8, 4))
    xs = range(len(budget))
    ax1.bar([x - 0.2 for x in xs], [b["peak_rss_mib"] for b in budget], 0.4, label="peak RSS MiB")
    ax1.bar([x + 0.2 for x in xs], [b["data_mib"] for b in budget], 0.4, label="MRAM data MiB")
    ax1.set_xticks(list(xs))
    ax1.set_xticklabels([b["store"] for b in budget], fontsize=7, rotation=15)
    ax1.set_yscale("log")
    ax1.set_ylabel("MiB")
    ax1.legend(fontsize=8)
    ax1.set_title("Data under a memory budget: resident memory against data")
    fig.tight_layout()
    fig.savefig(out / "budget.png", dpi=110)
    plt.close(fig)


def build_claims(rows: list[dict], persistence: list[dict], budget: list[dict], big: dict, working: int) -> list[Claim]:
    by = {r["store"]: r for r in rows}
    dram, never = rows[0], by["file, persist=never"]
    hz = {p["horizon"]: p for p in persistence}
    out = []
    slow = never["wall_s"] / dram["wall_s"]
    out.append(claim("T1", "the slower tier costs bandwidth: all data in it is at least twice as slow as in DRAM",
                     "15-28 GB/s in Optane vs 136-187 in DRAM (5-9x)", lambda: (
                         f"file store (persist=never) {slow:.2f}x the DRAM store's wall time; triad by host "
                         f"{never['triad_host_gbps']:.2f} vs {dram['triad_host_gbps']:.2f} GB/s", yn(slow >= 2),
                         "the file's pages are written back by the kernel" if slow >= 2 else
                         "the file store's pages live in the page cache (DRAM) until written back, so reads and "
                         "writes run at DRAM speed; and the emulator's own work, not memory, bounds its bandwidth")))
    e = hz["end"]["vs_never"]
    out.append(claim("T2", "persisting at the end costs almost nothing", "23 vs 23 GB/s (persist at end vs none)",
                     lambda: (f"persist=end {e:.2f}x persist=never", yn(e <= 1.25),
                              "one msync at the end" if e <= 1.25 else "the final write-back is a large part of a "
                              "short run")))
    t = hz["transfer"]["vs_never"]
    out.append(claim("T3", "persisting every write is at least twice as slow", "3-4 vs 23-28 GB/s (~7x)", lambda: (
        f"persist=transfer {t:.2f}x persist=never ({hz['transfer']['written_mib']} MiB written)", yn(t >= 2),
        "each transfer's pages are flushed to the disk before the call returns" if t >= 2 else
        "the flushes of this working set are absorbed by the disk's cache on this machine")))
    la = hz["launch"]["vs_never"]
    out.append(claim("T4", "partial persistence costs between none and full", "cfd: 9.64 s none, 10.67 partial, 41.84 full",
                     lambda: (f"never 1.00x, launch {la:.2f}x, transfer {t:.2f}x",
                              yn(0.9 <= la <= t * 1.1), "a launch persists what the DPUs wrote, once per launch")))
    fits = next(r for r in rows if "(fits)" in r["store"])
    third = next(r for r in rows if "(1/3)" in r["store"])
    cost = third["wall_s"] / fits["wall_s"]
    out.append(claim("T5", "data larger than the fast tier's capacity runs at least twice as slow (Memory mode, large)",
                     "12 vs 146 GB/s", lambda: (
                         f"cache with a budget of 1/3 of the working set: {cost:.2f}x the time of one that holds it",
                         yn(cost >= 2), "pages evicted to the file and read back" if cost >= 2 else
                         "the evicted pages stay in the kernel's page cache, so reading them back is a copy")))
    rss_third, rss_dram = third["peak_rss_mib"], dram["peak_rss_mib"]
    out.append(claim("T6", "moving data to the slower tier shrinks the volatile memory needed, at some time cost",
                     "sharpen 285 -> 170 GB DRAM for 56 -> 63 s", lambda: (
                         f"peak RSS {rss_dram} MiB (DRAM store) -> {rss_third} MiB (budget 1/3), time "
                         f"{third['wall_s'] / dram['wall_s']:.2f}x", yn(rss_third < rss_dram),
                         "the budget bounds the resident MRAM pages" if rss_third < rss_dram else
                         "the host program's own buffers dominate its resident memory")))
    out.append(claim("T7", "out-of-(volatile)-memory data: more data than memory, through the slower tier",
                     "DNS state 4 TB / 40 TB on nodes of 256 GB DRAM", lambda: (
                         f"{big['data_mib']} MiB of MRAM under a {big['budget_mib']} MiB budget: peak RSS "
                         f"{big['peak_rss_mib']} MiB, {big['mib_per_s']:.0f} MiB/s, data checked",
                         yn(0 < big["peak_rss_mib"] < big["data_mib"]), "the cache holds the budget; the rest lives "
                         "in the file")))
    kern = {r["virtual_kernel_ns"] for r in rows}
    bus = {r["virtual_bus_ns"] for r in rows}
    out.append(claim("T8", "the store changes real time only: the programs' virtual times are equal in every store",
                     "— (OpenPIM's design)", lambda: (
                         f"kernel time {len(kern)} value(s), bus time {len(bus)} value(s) over {len(rows)} stores",
                         yn(len(kern) == 1 and len(bus) == 1), "the timing model does not see where MRAM lives")))
    out.append(claim("T9", "DRAM STREAM bandwidth of the seed's machine", "136-187 GB/s", lambda: (
        f"{max(dram[f'{o}_host_gbps'] for o in OPS):.2f} GB/s by host transfers, "
        f"{max(dram[f'{o}_dpu_gbps'] for o in OPS):.2f} by DPU kernels (wall time)", "context",
        "these are the emulator's rates on this machine (interpreting DPU code, modeling the bus), not memory's")))
    return out


if __name__ == "__main__":
    sys.exit(main())
