#!/usr/bin/env python3
"""Prints the fuzz/README.md record table from fuzz/stats/TARGET.tsv (written by run.sh):
per target, the runs, the wall and CPU hours summed over them, the last coverage, crashes."""
import pathlib
import re

here = pathlib.Path(__file__).resolve().parent
print("| target | runs | wall hours | CPU hours | coverage (edges, last run) | crashes (inputs saved) |")
print("| --- | --- | --- | --- | --- | --- |")
for tsv in sorted((here / "stats").glob("*.tsv")):
    rows = [line.split("\t") for line in tsv.read_text().splitlines() if line.strip()]
    fields = [dict(f.split("=", 1) for f in r[2:]) for r in rows]
    wall = sum(int(f["wall_s"]) for f in fields) / 3600
    cpu = sum(int(f["cpu_s"]) for f in fields) / 3600
    cov = fields[-1].get("cov", "?")
    crashes = sum(int(f.get("crashes", 0) or 0) for f in fields)
    print(f"| `{tsv.stem}` | {len(rows)} | {wall:.2f} | {cpu:.2f} | {cov} | {crashes} |")
