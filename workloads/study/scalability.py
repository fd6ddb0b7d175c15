#!/usr/bin/env python3
"""The scalability study of seed 004 (Jonatan et al., SIGMETRICS 2024) on OpenPIM.

    openpim study scalability [--quick] [--out DIR] [--hardware H] [--only fig06,fig14,...]
    python3 workloads/study/scalability.py ...        (the same, without the CLI)

Writes into DIR (created if needed; other files in it are left alone): one CSV per figure
(figNN.csv), one PNG per figure (figNN.png), runs.log (every program run) and REPORT.md
(the seed's observations and numbers against OpenPIM's), and exchange.csv/png: the 2D NTT's
transpose through the host, as a PID-Comm all-to-all and over what-if links (beyond the seed;
links-profile.toml is the profile used). --quick runs reduced sizes (CI);
the full study follows the seed's configurations. --hardware chooses the hardware profile of
the emulated machine (a name from profiles/ or a file), e.g. one with a faster bus.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "study"  # noqa: A001

from study import figures, report  # noqa: E402
from study.experiments import FULL, QUICK, Study  # noqa: E402
from study.runner import Runner, StudyError, host_description  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIGS = ["fig05", "fig06", "fig07", "fig08", "fig09", "fig10", "fig11", "fig12", "fig13", "fig14",
        "fig15", "fig16", "fig18", "exchange"]


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def hardware(profile: str) -> dict[str, str]:
    """The emulated machine as `openpim info` describes it."""
    cmd = [str(ROOT / "target" / "release" / "openpim"), "info"] + (["--profile", profile] if profile else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    info: dict[str, str] = {"chips_per_rank": "8"}
    for line in r.stdout.splitlines():
        key, _, val = line.partition(": ")
        if key == "topology":
            info["topology"] = val
        elif key == "memory per DPU":
            info["memories"] = val
        elif key == "DPU":
            info["dpu"] = val
        elif key == "hardware profile":
            info["profile"] = val
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="openpim study scalability", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced sizes (a few minutes; CI)")
    ap.add_argument("--out", default="study-scalability", help="output folder (default: %(default)s)")
    ap.add_argument("--hardware", default="", help="hardware profile of the emulated machine (name or file)")
    ap.add_argument("--only", default="", help="comma-separated figures to run (default: all): " + ",".join(FIGS))
    args = ap.parse_args(argv)
    only = [f.strip() for f in args.only.split(",") if f.strip()] or FIGS
    unknown = [f for f in only if f not in FIGS]
    if unknown:
        ap.error(f"unknown figure(s) {', '.join(unknown)}; valid: {', '.join(FIGS)}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    sizes = QUICK if args.quick else FULL
    profile = f"hardware={args.hardware}" if args.hardware else ""
    runner = Runner(ROOT, out, profile=profile, cpu_reps=3 if args.quick else 20)
    log_file = (out / "runs.log").open("w")

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    study = Study(runner, sizes, log)
    host = host_description()
    res: dict[str, Any] = {"sizes": sizes, "hardware": hardware(profile), "host_short": host.split(",")[0]}
    start = time.monotonic()
    log(f"scalability study ({sizes.name}) into {out}; CPU baselines on {host}")
    try:
        for fig in only:
            t0 = time.monotonic()
            log(f"{fig}:")
            if fig == "fig18":
                inputs, curves = study.fig18()
                write_csv(out / "fig18_inputs.csv", inputs)
                rows = curves
            else:
                rows = getattr(study, fig)()
            res[fig] = rows
            write_csv(out / f"{fig}.csv", rows)
            getattr(figures, fig)(rows, out / f"{fig}.png")
            log(f"{fig}: {len(rows)} points in {time.monotonic() - t0:.0f} s -> {fig}.csv, {fig}.png")
    except StudyError as e:
        log(f"error: {e}")
        return 1
    wall = time.monotonic() - start
    (out / "REPORT.md").write_text(report.build(res, host, sizes.name, wall))
    log(f"done in {wall:.0f} s ({runner.runs} PIM runs): {out / 'REPORT.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
