#!/usr/bin/env python3
"""Test of `openpim study scalability --quick`: into an output folder that already holds
another file, it must write every figure (a PNG per figure of the seed: 5-16 and 18), a CSV
with data for each, and a REPORT.md whose observation rows are 1..10 (bare numbers in the first
cell) and which has a row for every number of SCALABILITY-NOTES.md, every cell filled and every
number measured; the other file must be left alone. Fig. 5 must have its four sweeps (5a-5d)
normalised to their first points with a bandwidth estimate, and Fig. 13b a balanced and an
unbalanced step-size pair whose two kernels are the run report's two launches.

    tests/study/run.py [--keep DIR]      (--keep: write there and keep it)
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGS = ["fig05", "fig06", "fig07", "fig08", "fig09", "fig10", "fig11", "fig12", "fig13", "fig14",
        "fig15", "fig16", "fig18", "exchange"]
NUMBER_IDS = ([f"A{i}" for i in range(1, 9)] + ["B1", "B2", "B3", "B3a", "B3b"] + [f"B{i}" for i in range(4, 11)]
              + ["B11a", "B11b", "B11c", "B11d"] + [f"B{i}" for i in range(12, 21)]
              + ["C1", "C2", "C3", "C4", "C5", "C5a"] + [f"C{i}" for i in range(6, 14)]
              + [f"D{i}" for i in range(1, 7)])


def check(out: Path) -> list[str]:
    errors: list[str] = []
    if (out / "keep.txt").read_text() != "not the study's\n":
        errors.append("the study changed a file it does not own (keep.txt)")
    for fig in FIGS:
        png = out / f"{fig}.png"
        if not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n" or png.stat().st_size < 5000:
            errors.append(f"{png.name}: missing or not a PNG with content")
        with (out / f"{fig}.csv").open() as f:
            rows = list(csv.DictReader(f))
        if not rows:
            errors.append(f"{fig}.csv: no data rows")
        for r in rows:
            if any(v == "" for v in r.values()) and fig not in ("fig11",):
                errors.append(f"{fig}.csv: empty cell in {r}")
                break
    # Fig. 5: the seed's four sweeps (5a-5d), each normalised to its leftmost point.
    with (out / "fig05.csv").open() as f:
        f5 = list(csv.DictReader(f))
    if {r["sweep"] for r in f5} != {"tasklets", "dim", "height", "pooling"}:
        errors.append(f"fig05.csv: sweeps {sorted({r['sweep'] for r in f5})}, not tasklets, dim, height, pooling")
    for sweep in ("tasklets", "dim", "height", "pooling"):
        mine = [r for r in f5 if r["sweep"] == sweep]
        if len(mine) < 2 or float(mine[0]["kernel_norm"]) != 1.0 or not all(float(r["mram_gbps"]) > 0 for r in mine):
            errors.append(f"fig05.csv: the {sweep} sweep is not normalised to its first point or lacks bandwidth")
    # Fig. 13b: a balanced and at least one unbalanced step-size pair; Kernel1 and Kernel2 are
    # the two launches of the run report, which account for its whole kernel time.
    with (out / "fig13.csv").open() as f:
        f13 = list(csv.DictReader(f))
    b = [r for r in f13 if r["panel"] == "b"]
    if not any(len(set(r["sizes"].split("x"))) == 1 for r in b) or not any(len(set(r["sizes"].split("x"))) == 2
                                                                            for r in b):
        errors.append(f"fig13.csv: panel b lacks a balanced or an unbalanced pair: {[r['sizes'] for r in b]}")
    for r in b:
        steps = [int(x) for x in r["kernel_steps_ns"].split(";")]
        if (len(steps) != 2 or int(r["kernel1_ns"]) != steps[0]
                or int(r["kernel1_ns"]) + int(r["kernel2_ns"]) != int(r["kernel_ns"])
                or abs(int(r["kernel2_ns"]) - steps[1]) > 0.01 * int(r["kernel_ns"])):
            errors.append(f"fig13.csv: {r['sizes']}: kernels {r['kernel1_ns']} + {r['kernel2_ns']} vs "
                          f"kernel {r['kernel_ns']}, launches {r['kernel_steps_ns']}")
    # Both workloads through each exchange path; at the smallest size every group fits the
    # what-if links' scope, so the interconnect runs must have gone over them.
    with (out / "exchange.csv").open() as f:
        ex = list(csv.DictReader(f))
    for w in ("ntt", "embedding"):
        mine = [r for r in ex if r["workload"] == w]
        if {r["exchange"] for r in mine} != {"host", "pidcomm", "interconnect"}:
            errors.append(f"exchange.csv: {w} does not have the three paths: {mine}")
            continue
        small = min(int(r["dpus"]) for r in mine)
        links = [r for r in mine if r["exchange"] == "interconnect" and int(r["dpus"]) == small]
        if not links or not links[0]["moved_by"].startswith("links"):
            errors.append(f"exchange.csv: {w} on {small} DPUs over the interconnect did not use the links: {links}")
    text = (out / "REPORT.md").read_text()
    main_tables = text.split("## Exchange paths")[0]
    table_rows = [ln for ln in main_tables.splitlines() if ln.startswith("| ") and not ln.startswith("| #")
                  and not ln.startswith("| id")]
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table_rows]
    obs = [c for c in cells if re.fullmatch(r"\d+", c[0])]
    if [c[0] for c in obs] != [str(i) for i in range(1, 11)]:
        errors.append(f"observation rows are {[c[0] for c in obs]}, not 1..10")
    ids = [c[0] for c in cells if not re.fullmatch(r"\d+", c[0])]
    if ids != NUMBER_IDS:
        errors.append(f"number rows {ids} != {NUMBER_IDS}")
    for c in cells:
        if any(x == "" for x in c) or "not measured" in " ".join(c):
            errors.append(f"row {c[0]} is not filled: {c}")
        if c[-2] not in ("yes", "no", "context"):
            errors.append(f"row {c[0]}: holds is {c[-2]!r}")
    if "## Exchange paths" not in text:
        errors.append("REPORT.md has no exchange-paths section")
    if "Wall time of the study" not in text:
        errors.append("REPORT.md does not give the study's wall time")
    return errors


def main() -> int:
    keep = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--keep" else None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(keep) if keep else Path(tmp) / "existing"
        out.mkdir(parents=True, exist_ok=True)
        (out / "keep.txt").write_text("not the study's\n")
        r = subprocess.run([str(ROOT / "target" / "release" / "openpim"), "study", "scalability", "--quick",
                            "--out", str(out)], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL openpim study scalability --quick exited {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
            return 1
        errors = check(out)
        bad = subprocess.run([str(ROOT / "target" / "release" / "openpim"), "study", "scalability", "--quick",
                              "--only", "fig99", "--out", str(out)], capture_output=True, text=True)
        if bad.returncode == 0 or "unknown figure(s) fig99" not in bad.stderr:
            errors.append(f"--only fig99: exit {bad.returncode}, stderr {bad.stderr.strip()!r}")
    for e in errors:
        print(f"FAIL {e}")
    print("PASS quick study: every figure, CSV and REPORT.md row" if not errors else f"{len(errors)} failure(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
