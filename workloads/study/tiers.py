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

from study.common import (Claim, Log, StudyError, bench_module, claim, finish, gain_within2, geomean, plot,  # noqa: E402
                          study_args, write_csv, yn)

SOURCE = ("Jackson, \"Evaluating the latest Optane memory: a glorious swansong?\" (seed 003, slides: STREAM "
          "tables by memory location and persistence horizon, application porting)")
OPS = ["copy", "scale", "add", "triad"]
# The seed's STREAM table with the persistence horizon (3rd generation, GB/s: copy, scale, add, triad).
SEED = {"All in DRAM": (172, 172, 187, 186), "All in Optane (no persist)": (23, 24, 28, 28),
        "All in Optane (persist at end)": (23, 23, 28, 28), "All in Optane (persist each write)": (3, 3, 4, 4)}
QUICK = {"dpus": 12, "mib": 8, "reps": 1, "rounds": 1, "big": (16, 64, "256M")}
FULL = {"dpus": 32, "mib": 8, "reps": 2, "rounds": 2, "big": (64, 64, "512M")}


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


def bw(r: dict) -> float:
    """A store's STREAM bandwidth through host transfers: the geomean of copy, scale, add and
    triad (GB/s of MRAM traffic, wall time), the counterpart of the seed's tables."""
    return geomean([r[f"{o}_host_gbps"] for o in OPS])


def seed_ratio(a: str, b: str) -> float:
    """How many times the seed's bandwidth in row A exceeds row B (geomean over the ops)."""
    return geomean([x / y for x, y in zip(SEED[a], SEED[b])])


def build_claims(rows: list[dict], persistence: list[dict], budget: list[dict], big: dict, working: int) -> list[Claim]:
    by = {r["store"]: r for r in rows}
    dram, never = rows[0], by["file, persist=never"]
    end, launch, each = by["file, persist=end"], by["file, persist=launch"], by["file, persist=transfer"]
    fits, third = rows[5], rows[6]  # bench/memory's store_configs order
    share = third["store"].split("(")[1].split(")")[0]
    out = []
    slow, paper = bw(dram) / bw(never), seed_ratio("All in DRAM", "All in Optane (no persist)")
    out.append(claim("T1", "STREAM with all data in the slower tier is several times slower than in DRAM",
                     f"{paper:.1f}x (DRAM 172-187 GB/s, Optane 23-28)", lambda: (
                         f"{slow:.2f}x: {bw(dram):.2f} GB/s in DRAM, {bw(never):.2f} in a file (persist=never); "
                         f"whole runs {never['wall_s'] / dram['wall_s']:.2f}x", yn(gain_within2(slow, paper)),
                         "the slowdown is within a factor of two of the seed's" if gain_within2(slow, paper) else
                         "a file store's pages live in the page cache (DRAM) until written back: without persistence "
                         "the 'slower tier' is read and written at DRAM speed; the disk is only reached on write-back")))
    e = bw(never) / bw(end)
    out.append(claim("T2", "persisting at the end costs almost nothing", "1.0x (23 vs 23 GB/s)", lambda: (
        f"{e:.2f}x (persist=end against never; whole runs {end['wall_s'] / never['wall_s']:.2f}x)", yn(e <= 1.25),
        "one msync at the end, outside the STREAM loops" if e <= 1.25 else "the final write-back slowed the loops")))
    t, paper3 = bw(never) / bw(each), seed_ratio("All in Optane (no persist)", "All in Optane (persist each write)")
    out.append(claim("T3", "persisting every write is several times slower", f"{paper3:.1f}x (23-28 vs 3-4 GB/s)",
                     lambda: (f"{t:.2f}x (persist=transfer against never; {each['written_mib']} MiB written; whole runs "
                              f"{each['wall_s'] / never['wall_s']:.2f}x)", yn(gain_within2(t, paper3)),
                              "each transfer's pages are flushed to the disk before the call returns; the slowdown is "
                              "within a factor of two of the seed's" if gain_within2(t, paper3) else
                              "each transfer's pages are flushed before the call returns; this machine's disk and "
                              "page cache set the cost, not Optane's")))
    la = bw(never) / bw(launch)
    out.append(claim("T4", "partial persistence costs between none and full", "cfd: 9.64 s none, 10.67 partial, 41.84 full",
                     lambda: (f"never 1.00x, launch {la:.2f}x, transfer {t:.2f}x (STREAM bandwidth lost)",
                              yn(0.9 <= la <= t * 1.1), "a launch persists what the DPUs wrote, once per launch")))
    cost, paper5 = bw(fits) / bw(third), 146 / 12
    out.append(claim("T5", "data larger than the fast tier's capacity runs several times slower (Memory mode, large)",
                     f"{paper5:.1f}x (146 vs 12 GB/s)", lambda: (
                         f"{cost:.2f}x: a cache with a budget of {share} of the working set against one that holds it "
                         f"(whole runs {third['wall_s'] / fits['wall_s']:.2f}x)", yn(gain_within2(cost, paper5)),
                         "within a factor of two of the seed's" if gain_within2(cost, paper5) else
                         ("slower than the seed's Memory mode: the cache evicts and reloads whole pages through the "
                          "file, where Optane's memory mode misses per cache line" if cost > paper5 else
                          "the evicted pages stay in the kernel's page cache, so reading them back is a copy"))))
    rss_third, rss_dram = third["peak_rss_mib"], dram["peak_rss_mib"]
    out.append(claim("T6", "moving data to the slower tier shrinks the volatile memory needed, at some time cost",
                     "sharpen 285 -> 170 GB DRAM for 56 -> 63 s", lambda: (
                         f"peak RSS {rss_dram} MiB (DRAM store) -> {rss_third} MiB (budget of {share}), time "
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
