#!/usr/bin/env python3
"""Test of the seeds' studies, `openpim study collectives|sharing|tiers|allocation --quick`:
each must exit 0 (every program ran and every result checked), write every figure (a PNG with
content) and its CSV (data rows, no empty cell where a value belongs), runs.log, and a
REPORT.md whose claims table has exactly the study's claim ids (docs/study.md lists them),
every cell filled, `holds` exactly yes, no or context, and a header giving the wall time and
the count of rows per verdict that the table has. Then `openpim study all` with a hardware
profile that does not exist must exit non-zero naming every failed study, and `--out` naming
a file must be refused.

    tests/study/seeds.py [--keep DIR]      (--keep: write there and keep it)
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPENPIM = str(ROOT / "target" / "release" / "openpim")
# study -> (figures, claim ids, CSV columns that may be empty)
STUDIES = {
    "collectives": (["primitives", "ablation", "scaling", "applications"], [f"P{i}" for i in range(1, 18)], set()),
    "sharing": (["overhead", "ablation", "latency", "oversubscription"], [f"S{i}" for i in range(1, 16)],
                {"overhead_no_prefetch"}),
    "tiers": (["stream", "persistence", "budget"], [f"T{i}" for i in range(1, 10)],
              {"vs_dram", "data_mib", "budget_mib", "mib_per_s"}),
    "allocation": (["disk", "tenants"], [f"A{i}" for i in range(1, 7)], set()),
}
VERDICTS = ("yes", "no", "context")


def check(name: str, out: Path) -> list[str]:
    figs, ids, may_be_empty = STUDIES[name]
    errors: list[str] = []
    for fig in figs:
        png = out / f"{fig}.png"
        if not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n" or png.stat().st_size < 5000:
            errors.append(f"{name}/{fig}.png: missing or not a PNG with content")
        path = out / f"{fig}.csv"
        if not path.is_file():
            errors.append(f"{name}/{fig}.csv: missing")
            continue
        with path.open() as f:
            rows = list(csv.DictReader(f))
        if not rows:
            errors.append(f"{name}/{fig}.csv: no data rows")
        for r in rows:
            empty = [k for k, v in r.items() if v == "" and k not in may_be_empty]
            if empty:
                errors.append(f"{name}/{fig}.csv: empty {empty} in {r}")
                break
    log = out / "runs.log"
    if not log.is_file() or "  run " not in log.read_text() or "error:" in log.read_text():
        errors.append(f"{name}/runs.log: missing, lists no run, or reports an error")
    report = out / "REPORT.md"
    if not report.is_file():
        return errors + [f"{name}/REPORT.md: missing"]
    text = report.read_text()
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in text.split("## Claims")[-1].splitlines()
             if ln.startswith("| ") and not ln.startswith("| id ")]
    cells = [c for c in cells if len(c) == 6]
    if [c[0] for c in cells] != ids:
        errors.append(f"{name}/REPORT.md: claim ids {[c[0] for c in cells]}, not {ids}")
    for c in cells:
        if any(x == "" for x in c):
            errors.append(f"{name}/REPORT.md: row {c[0]} has an empty cell: {c}")
        if c[4] not in VERDICTS:
            errors.append(f"{name}/REPORT.md: row {c[0]}: holds is {c[4]!r}")
    m = re.search(r"Wall time of the study: (\d+) s\. Claims: (\d+) rows, (\d+) yes, (\d+) no, (\d+) context", text)
    if not m:
        errors.append(f"{name}/REPORT.md: the header lacks the wall time and the rows per verdict")
    else:
        want = [len(cells)] + [sum(1 for c in cells if c[4] == v) for v in VERDICTS]
        if [int(x) for x in m.groups()[1:]] != want:
            errors.append(f"{name}/REPORT.md: header counts {m.groups()[1:]} but the table has {want}")
    return errors


def main() -> int:
    keep = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--keep" else None
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(keep) if keep else Path(tmp)
        for name in STUDIES:
            out = base / name
            t0 = time.monotonic()
            r = subprocess.run([OPENPIM, "study", name, "--quick", "--out", str(out)], capture_output=True, text=True)
            wall = time.monotonic() - t0
            if r.returncode != 0:
                errors.append(f"openpim study {name} --quick exited {r.returncode}:\n{r.stdout[-2500:]}{r.stderr[-2500:]}")
                continue
            mine = check(name, out)
            errors += mine
            print(f"{'PASS' if not mine else 'FAIL'} study {name} --quick ({wall:.0f} s)", flush=True)
        # A study that cannot run: `all` goes on with the others, then names every failure.
        bad = base / "bad"
        r = subprocess.run([OPENPIM, "study", "all", "--quick", "--hardware", str(base / "no-such-profile.toml"),
                            "--out", str(bad)], capture_output=True, text=True, timeout=900)
        named = re.search(r"failed: (.*)", r.stderr)
        if r.returncode == 0 or not named or set(named.group(1).split(" (")[0].split(", ")) != {
                "collectives", "sharing", "tiers", "allocation", "scalability"}:
            errors.append(f"study all with a missing profile: exit {r.returncode}, stderr {r.stderr[-600:]!r}")
        elif "FAILED" not in (bad / "REPORT.md").read_text():
            errors.append("study all with a missing profile: the index does not mark the failed studies")
        afile = base / "a-file"
        afile.write_text("x")
        r = subprocess.run([OPENPIM, "study", "tiers", "--quick", "--out", str(afile)], capture_output=True, text=True)
        if r.returncode == 0 or "is not a folder" not in r.stderr:
            errors.append(f"--out naming a file: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    for e in errors:
        print(f"FAIL {e}")
    print("PASS seeds' quick studies: every figure, CSV and REPORT.md row, results checked" if not errors
          else f"{len(errors)} failure(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
