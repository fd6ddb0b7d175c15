#!/usr/bin/env python3
"""Checks one profile directory written by `openpim profile` (tests/profile/run.sh).

check.py DIR KIND [REPORT.json] [BASELINE_REPORT.json]: KIND is `lines` (the kernel built with
-g) or `functions` (without). Prints one PASS/FAIL line per check; exits 1 on a failure."""

import json
import pathlib
import re
import sys

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f"\n    {detail}"))
    if not ok:
        failed += 1


def function_cycles(profile, name):
    return sum(f["cycles"] for f in profile["functions"] if f["function"] == name)


def main():
    d = pathlib.Path(sys.argv[1])
    kind = sys.argv[2]
    report = json.loads(pathlib.Path(sys.argv[3]).read_text()) if len(sys.argv) > 3 else None
    baseline = json.loads(pathlib.Path(sys.argv[4]).read_text()) if len(sys.argv) > 4 else None
    tag = f"[{d.name}]"
    p = json.loads((d / "profile.json").read_text())
    run = p["run"]

    # The split by construction: light does 15 of every 100 loop iterations, heavy 85.
    light, heavy = function_cycles(run, "light"), function_cycles(run, "heavy")
    share = light / (light + heavy) if light + heavy else 0
    check(f"{tag} light/heavy split is 15 % within 1 % (got {share:.4f})", abs(share - 0.15) <= 0.01,
          f"light {light}, heavy {heavy}")

    # Exactness: each DPU run's lines (wait frames included) sum to its cycles.
    runs = run["dpu_runs"]
    check(f"{tag} every DPU run charged exactly its cycles ({len(runs)} runs)",
          runs and all(r["charged_cycles"] == r["cycles"] for r in runs),
          [r for r in runs if r["charged_cycles"] != r["cycles"]][:3])
    check(f"{tag} every DPU run listed, none inexact",
          run["dpu_run_count"] == len(runs) and run["inexact_runs"] == 0,
          (run["dpu_run_count"], run["inexact_runs"]))
    lines_sum = sum(l["cycles"] for l in run["lines"])
    check(f"{tag} the run's lines sum to the DPUs' cycles", lines_sum == run["cycles"],
          f"{lines_sum} != {run['cycles']}")
    slots = sum(l["instructions"] for l in run["lines"])
    check(f"{tag} the run's lines' instructions sum to the DPUs' instructions",
          slots == run["instructions"], f"{slots} != {run['instructions']}")
    check(f"{tag} two launches profiled", len(p["launches"]) == 2, len(p["launches"]))
    for l in p["launches"]:
        s = sum(x["cycles"] for x in l["lines"])
        check(f"{tag} launch {l['launch']}: lines sum to its cycles", s == l["cycles"], f"{s} != {l['cycles']}")
        if report is not None and len(l["dpu_runs"]) == 1:
            # One DPU: its per-line cycles are its launch's cycles in the run report (the
            # DPUs run the same work, so the slowest DPU's cycles are every DPU's).
            rc = report["launches"][l["launch"] - 1]["cycles"]
            check(f"{tag} launch {l['launch']}: one DPU's per-line cycles = the report's launch cycles ({rc})",
                  s == rc, f"{s} != {rc}")

    # Wait frames and tasklet-cycles.
    check(f"{tag} DMA waits charged to [wait: dma]", run["waits"]["dma"] > 0, run["waits"])
    barrier = [t["barrier"] for t in run["tasklets"] if t["tasklet"] != 0]
    check(f"{tag} tasklets 1..15 wait at the barrier while tasklet 0 runs extra()",
          len(barrier) == 15 and min(barrier) > 0 and run["tasklets"][0]["barrier"] == 0,
          run["tasklets"][:2])
    for t in run["tasklets"]:
        total = t["issue"] + sum(t[k] for k in ("dma", "revolver", "mutex", "barrier", "semaphore", "handshake", "sleep", "end"))
        if total > run["cycles"]:
            check(f"{tag} tasklet {t['tasklet']}'s cycles fit in the run", False, f"{total} > {run['cycles']}")

    # Lines (with -g) or functions only.
    heavy_lines = [l for l in run["lines"] if l["function"] == "heavy" and l["location"]]
    if kind == "lines":
        check(f"{tag} DWARF lines: heavy's loop at split.c", run["has_lines"] and any(
            l["location"].startswith("split.c:") for l in heavy_lines), heavy_lines[:2])
    else:
        check(f"{tag} without -g: functions only (no line)", not run["has_lines"] and not heavy_lines
              and heavy > 0 and light > 0, run["lines"][:3])
        table = (d / "profile.txt").read_text()
        check(f"{tag} the table says functions only", "functions only" in table)

    # Folded stacks: `frame;...;leaf COUNT`, function names only, counts sum to the cycles.
    folded = (d / "run.folded").read_text().splitlines()
    form = re.compile(r"^[^;\s][^;]*(;[^;]+)* [0-9]+$")
    bad = [l for l in folded if not form.match(l) or re.search(r"\.c:[0-9]|0x[0-9a-f]|;;", l)]
    check(f"{tag} folded stacks well formed ({len(folded)} lines)", folded and not bad, bad[:3])
    count = sum(int(l.rsplit(" ", 1)[1]) for l in folded)
    check(f"{tag} folded counts sum to the cycles", count == run["cycles"], f"{count} != {run['cycles']}")
    stacks = {l.rsplit(" ", 1)[0] for l in folded}
    want = {"_start;main;heavy", "_start;main;light", "_start;main;barrier_wait", "[wait: dma]"}
    check(f"{tag} folded stacks follow the calls (main calls light, heavy, barrier_wait)",
          want <= stacks, sorted(stacks))

    # speedscope: one profile per launch and the run; weights sum to the cycles.
    sp = json.loads((d / "profile.speedscope.json").read_text())
    w = sum(sp["profiles"][0]["weights"])
    check(f"{tag} speedscope: {len(sp['profiles'])} profiles, the run's weights sum to its cycles",
          len(sp["profiles"]) == 3 and w == run["cycles"], f"{w} != {run['cycles']}")
    if kind == "lines":
        check(f"{tag} speedscope frames carry lines", any(
            f.get("line") and f["name"].startswith("heavy ") for f in sp["shared"]["frames"]))

    # The run report's top functions, and the cycles are those of a run without the profiler.
    if report is not None:
        schema_path = pathlib.Path(__file__).resolve().parent.parent.parent / "docs" / "report.schema.json"
        schema = json.loads(schema_path.read_text())
        try:
            import jsonschema  # type: ignore[import-untyped]

            jsonschema.validate(report, schema)
            err = ""
        except ImportError:
            # Without jsonschema: the profile section's own schema, checked by hand.
            prof = report.get("profile") or {}
            top = prof.get("top_functions") or [{}]
            keys = set(schema["properties"]["profile"]["properties"]["top_functions"]["items"]["properties"])
            err = "" if set(prof) == {"dpu_runs", "cycles", "top_functions"} and all(
                set(t) == keys for t in top) else f"profile section {prof}"
        except jsonschema.ValidationError as e:
            err = e.message
        check(f"{tag} report with the profile follows docs/report.schema.json", not err, err)
        top = (report.get("profile") or {}).get("top_functions") or []
        check(f"{tag} report: top function is heavy", top and top[0]["function"] == "heavy", top[:2])
    if baseline is not None and report is not None:
        a = [l["cycles"] for l in report["launches"]]
        b = [l["cycles"] for l in baseline["launches"]]
        check(f"{tag} profiled launches take the cycles of unprofiled ones", a == b, f"{a} != {b}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
