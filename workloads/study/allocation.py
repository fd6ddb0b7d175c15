#!/usr/bin/env python3
"""The allocation study of seed 000 ("Side effects of allocating UPMEM processing units"): what
holding ranks costs, and what OpenPIM's advice says about it.

    openpim study allocation [--quick] [--out DIR] [--hardware H]

Writes into DIR: disk.csv/png (reading and writing a file with and without a rank allocated and
idle in another process: the seed's experiment), tenants.csv/png (on a one-rank daemon, how long
a second tenant waits when the first holds the rank idle between launches or frees it promptly;
the daemon's idle-held rank-seconds; the advice in each holder's run report), runs.log and
REPORT.md with the seed's observation, what the emulator reproduces of it and what it cannot.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "study"  # noqa: A001

from study.common import Claim, Log, StudyError, claim, finish, plot, sdk_env, study_args, yn  # noqa: E402
from study.common import write_csv  # noqa: E402
from study.tenants import MEMORY, Tenants, wait_for_step  # noqa: E402

SOURCE = ("\"Side effects of allocating UPMEM processing units\" (seed 000: reading a file 1.5-2.7x slower "
          "while a rank is allocated and idle, writing unaffected; recommendation: free DPUs early)")
# The holder launches once, then keeps its rank allocated and idle for pause_ms before it ends
# (the seed's scenario: a rank allocated and not used).
QUICK = {"file_mib": 256, "reps": 5, "pause_ms": 3000}
FULL = {"file_mib": 1024, "reps": 15, "pause_ms": 8000}
BLOCK = 1 << 20


def read_mibs(path: Path, mib: int, reps: int) -> float:
    """Best read rate (MiB/s) of the whole file with a warm page cache (the seed's setup)."""
    best = 0.0
    with path.open("rb", buffering=0) as f:
        for k in range(reps + 1):  # the first read warms the cache and is not counted
            f.seek(0)
            t0 = time.perf_counter()
            while f.read(BLOCK):
                pass
            if k:
                best = max(best, mib / (time.perf_counter() - t0))
    return best


def write_mibs(path: Path, mib: int, reps: int) -> float:
    """Best write rate (MiB/s) of blocks of text to a file (the seed's lorem ipsum)."""
    block = (b"Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * (BLOCK // 57 + 1))[:BLOCK]
    best = 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        with path.open("wb") as f:
            for _ in range(mib):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        best = max(best, mib / (time.perf_counter() - t0))
    return best


def disk(s: dict, log: Log, profile: str) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        data = tmp / "reads.bin"
        with data.open("wb") as f:
            for k in range(s["file_mib"]):
                f.write(bytes([k % 251]) * BLOCK)
        for state in ("no rank allocated", "a rank allocated, idle", "no rank allocated (again)"):
            holder = None
            if "idle" in state:
                # A whole rank (64 DPUs), allocated and loaded in another process, then idle:
                # one launch, then a pause that outlasts the measurement.
                argv = ["./bin/host", "ckpt", "5", "64", "1", "9", "-", "run"]
                env = sdk_env({"STEP_PAUSE_MS": "600000", "OPENPIM_REPORT": str(tmp / "holder.json")}, profile)
                log(f"  run holder: {' '.join(argv)} (in {MEMORY}; STEP_PAUSE_MS=600000, stopped after the measurement)")
                out = tmp / "holder.out"
                holder = subprocess.Popen(argv, cwd=MEMORY, env=env, stdout=out.open("w"), stderr=subprocess.STDOUT)
                wait_for_step(out, holder)
            log(f"  measure disk ({state}): read {s['file_mib']} MiB x {s['reps']}, write {s['file_mib']} MiB "
                f"x {max(2, s['reps'] // 3)}")
            r = read_mibs(data, s["file_mib"], s["reps"])
            w = write_mibs(tmp / "writes.txt", s["file_mib"], max(2, s["reps"] // 3))
            if holder is not None:
                holder.terminate()
                holder.wait(timeout=30)
            rows.append({"state": state, "read_mib_s": r, "write_mib_s": w, "file_mib": s["file_mib"]})
        # The data read back must be what was written.
        with data.open("rb") as f:
            for k in range(s["file_mib"]):
                if f.read(BLOCK) != bytes([k % 251]) * BLOCK:
                    raise StudyError(f"the file read back differs from what was written (block {k})")
    return rows


def main(argv: list[str] | None = None) -> int:
    a = study_args("allocation", __doc__ or "", argv)
    out: Path = a.out
    s = QUICK if a.quick else FULL
    log = Log(out)
    start = time.monotonic()
    log(f"allocation study ({'quick' if a.quick else 'full'}) into {out}")
    if a.profile:
        os.environ["UPMEM_PROFILE_BASE"] = a.profile
    try:
        tenants = Tenants(log, 8, 1, 2)
        log("disk with and without a rank allocated (the seed's experiment):")
        dk = disk(s, log, a.profile)
        log("tenants on a one-rank daemon: the first holds the rank idle, or frees it promptly:")
        idle = tenants.two([], s["pause_ms"], 0, "alloc_timeout_s = 120\n")
        prompt = tenants.two([], 0, 0, "alloc_timeout_s = 120\n")
    except (StudyError, subprocess.CalledProcessError) as e:
        log(f"error: {e}")
        return 1

    def advice(t: Any) -> str:
        return "; ".join(x["id"] for x in t.report.get("advice", [])) or "none"

    def idle_msg(t: Any) -> str:
        return next((x["message"] for x in t.report.get("advice", []) if x["id"] == "idle_ranks"), "")

    ten = [{"holder": name, "holder_pause_ms": pause, "holder_wall_s": r["a"].wall_s,
            "waiter_wait_s": r["b_wait_s"], "waiter_wall_s": r["b"].wall_s, "idle_held_rank_s": r["idle_held_s"],
            "holder_advice": advice(r["a"]), "waiter_advice": advice(r["b"]), "results_equal_alone": "yes"}
           for name, pause, r in (("holds idle", s["pause_ms"], idle), ("frees promptly", 0, prompt))]
    write_csv(out / "disk.csv", dk)
    write_csv(out / "tenants.csv", ten)
    figures(out, dk, ten)
    claims = build_claims(dk, ten, s, idle_msg(idle["a"]))
    return finish(out, log, "Allocation study (seed 000, side effects of allocating DPUs)", SOURCE, start, claims,
                  [f"Sizes: `{'quick' if a.quick else 'full'}`: a {s['file_mib']} MiB file read {s['reps']} times (best "
                   f"rate, warm cache) while another process holds a 64-DPU rank idle; two tenants of "
                   f"one launch on 8 DPUs on a one-rank daemon, the first keeping its rank {s['pause_ms']} ms after "
                   "its launch or freeing it at once. Every tenant's digests and cycle counts equal its run alone in "
                   "process; the file read back equals what was written.", ""],
                  ["## What the emulator can and cannot reproduce", "",
                   "The seed's effect is the real machine's: with a rank allocated, the host's disk reads slowed "
                   "1.5-2.7x (the seed supposes the driver's allocation affects the system's virtual pages). An "
                   "emulated rank is ordinary memory of the emulator's process (MRAM mapped lazily), so the "
                   "emulator cannot show that effect, and the study measures that it does not (A1). What it can show "
                   "is the other cost of holding ranks idle on a shared server: other tenants of the rank manager "
                   "wait for them (A3), the daemon counts the idle-held rank-seconds (A4), and the run report's "
                   "`idle_ranks` advice names the holder and repeats the seed's recommendation (A5).", ""])


def figures(out: Path, dk: list[dict], ten: list[dict]) -> None:
    plt = plot()
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(dk))
    ax.bar([x - 0.2 for x in xs], [r["read_mib_s"] for r in dk], 0.4, label="read (warm cache)")
    ax.bar([x + 0.2 for x in xs], [r["write_mib_s"] for r in dk], 0.4, label="write + fsync")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["state"] for r in dk], fontsize=8)
    ax.set_ylabel("MiB/s")
    ax.set_title("Disk with and without an idle rank allocated (seed: reads 1.5-2.7x slower)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "disk.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.barh(range(len(ten)), [r["waiter_wait_s"] for r in ten], color="C3", label="second tenant's wait")
    ax.barh(range(len(ten)), [r["idle_held_rank_s"] for r in ten], height=0.3, color="C7",
            label="idle-held rank-seconds (daemon)")
    ax.set_yticks(range(len(ten)))
    ax.set_yticklabels([f"first tenant {r['holder']}" for r in ten])
    ax.set_xlabel("seconds")
    ax.set_title("What holding a rank idle costs another tenant (one-rank daemon)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "tenants.png", dpi=110)
    plt.close(fig)


def build_claims(dk: list[dict], ten: list[dict], s: dict, idle_msg: str) -> list[Claim]:
    without = max(dk[0]["read_mib_s"], dk[2]["read_mib_s"])
    slow = without / dk[1]["read_mib_s"]
    wslow = max(dk[0]["write_mib_s"], dk[2]["write_mib_s"]) / dk[1]["write_mib_s"]
    held, prompt = ten[0], ten[1]
    pauses = s["pause_ms"] / 1000
    return [
        claim("A1", "reading a file is slower while a rank is allocated, even idle", "1.5-2.7x slower", lambda: (
            f"{slow:.2f}x ({dk[1]['read_mib_s']:.0f} MiB/s with the rank; without: {dk[0]['read_mib_s']:.0f} before, "
            f"{dk[2]['read_mib_s']:.0f} after)", yn(slow >= 1.5),
            "reproduced" if slow >= 1.5 else
            "below the seed's 1.5x: an emulated rank is the emulator's lazily mapped memory, not a device mapping, "
            "so the driver's effect on the host's pages the seed supposes is not there; what remains is this shared "
            "machine's spread (compare the two runs without a rank)")),
        claim("A2", "writing a file is not affected", "no difference", lambda: (
            f"{wslow:.2f}x", yn(0.8 <= wslow <= 1.25),
            "no difference within this machine's noise" if 0.8 <= wslow <= 1.25 else
            "the write rate moved by more than the noise band (disk shared with other jobs)")),
        claim("A3", "holding a rank idle costs the other tenants (the recommendation's reason on a shared server)",
              "free the DPUs as soon as possible", lambda: (
                  f"second tenant waited {held['waiter_wait_s']:.1f} s behind an idle holder, "
                  f"{prompt['waiter_wait_s']:.1f} s behind a prompt one", yn(held["waiter_wait_s"] >= prompt["waiter_wait_s"] + 0.5 * pauses),
                  "the manager serves ranks first come, first served; an allocated rank is nobody else's")),
        claim("A4", "the idle holding is visible: rank-seconds held idle (daemon metrics)", "— (OpenPIM)", lambda: (
            f"{held['idle_held_rank_s']:.1f} rank-s with the idle holder (its pauses: {pauses:.1f} s), "
            f"{prompt['idle_held_rank_s']:.1f} with the prompt one", yn(held["idle_held_rank_s"] >= 0.5 * pauses > prompt["idle_held_rank_s"]),
            "`openpim_rank_idle_held_seconds` counts allocated time with nothing running or moving")),
        claim("A5", "the advice recommends freeing ranks early to a program that keeps its rank idle after its work",
              "free early; load files before allocating", lambda: (
                  f"holder's report: {held['holder_advice']}; prompt holder's: {prompt['holder_advice']}"
                  + (f" (\"{idle_msg[:160]}\")" if idle_msg else ""),
                  yn("idle_ranks" in held["holder_advice"] and "idle_ranks" not in prompt["holder_advice"]),
                  "the `idle_ranks` rule: idle at least 1 ms and half of the run")),
        claim("A6", "the seed's setup", "Xeon Silver 4215, 20 DIMMs (40 ranks), SDK 2023.2.0, one rank allocated",
              lambda: ("this machine's disk and page cache; an emulated 64-DPU rank", "context",
                       "the effect depends on the real driver, which the emulator replaces")),
    ]


if __name__ == "__main__":
    sys.exit(main())
