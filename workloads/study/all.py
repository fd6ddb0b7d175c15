#!/usr/bin/env python3
"""Every seed's study in one command: collectives, sharing, tiers, allocation and scalability,
each into DIR/<name>/, and an index DIR/REPORT.md linking each report with its headline figure
and its count of rows per verdict.

    openpim study all [--quick] [--out DIR] [--hardware H]

Exits 0 when every study ran and every result checked (whatever the verdicts); otherwise 1,
naming the studies that failed (each study's runs.log says why). A failed study does not stop
the others.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "study"  # noqa: A001

from study import allocation, collectives, scalability, sharing, tiers  # noqa: E402
from study.common import study_args  # noqa: E402

# (name, driver, seed, headline figure)
STUDIES = [
    ("collectives", collectives.main, "002 PID-Comm", "primitives.png"),
    ("sharing", sharing.main, "001 vPIM", "overhead.png"),
    ("tiers", tiers.main, "003 Optane tiers", "stream.png"),
    ("allocation", allocation.main, "000 allocation side effects", "tenants.png"),
    ("scalability", scalability.main, "004 scalability", "fig14.png"),
]


def verdicts(report: Path) -> str:
    """The header's count of rows per verdict."""
    text = report.read_text() if report.exists() else ""
    m = re.search(r"(\d+) yes, (\d+) no, (\d+) context", text)
    return f"{m.group(1)} yes, {m.group(2)} no, {m.group(3)} context" if m else "?"


def main(argv: list[str] | None = None) -> int:
    a = study_args("all", __doc__ or "", argv)
    out: Path = a.out
    start = time.monotonic()
    rows, failed = [], []
    for name, driver, seed, fig in STUDIES:
        sub = out / name
        args = ["--out", str(sub)] + (["--quick"] if a.quick else []) + (["--hardware", a.hardware] if a.hardware else [])
        print(f"== study {name} ({seed}) into {sub}", flush=True)
        t0 = time.monotonic()
        try:
            rc = driver(args)
        except Exception as e:  # noqa: BLE001 - a study's crash is its failure, the others go on
            print(f"study {name} crashed: {e!r}", flush=True)
            rc = 1
        wall = time.monotonic() - t0
        ok = rc == 0 and (sub / "REPORT.md").exists()
        if not ok:
            failed.append(name)
        rows.append(f"| [{name}]({name}/REPORT.md) | {seed} | {'ran, results checked' if ok else 'FAILED (see ' + name + '/runs.log)'} "
                    f"| {verdicts(sub / 'REPORT.md') if ok else '-'} | {wall:.0f} s | "
                    + (f"![{name}]({name}/{fig})" if ok and (sub / fig).exists() else "-") + " |")
    wall = time.monotonic() - start
    text = ["# OpenPIM studies: every seed's headline results", "",
            f"`openpim study all{' --quick' if a.quick else ''}`; wall time {wall:.0f} s. "
            f"{len(STUDIES) - len(failed)} of {len(STUDIES)} studies ran with every result checked"
            + (f"; failed: {', '.join(failed)}" if failed else "") + ".", "",
            "| study | seed | status | claims | wall time | headline figure |", "|---|---|---|---|---|---|", *rows, "",
            "Each study's REPORT.md holds the paper's claims against OpenPIM's figures (`holds`: yes, no or "
            "context, with the reason); docs/study.md describes them.", ""]
    (out / "REPORT.md").write_text("\n".join(text))
    if failed:
        print(f"openpim study all: failed: {', '.join(failed)} (see {out}/<name>/runs.log)", file=sys.stderr)
        return 1
    print(f"openpim study all: {len(STUDIES)} studies in {wall:.0f} s -> {out / 'REPORT.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
