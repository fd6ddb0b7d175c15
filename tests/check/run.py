#!/usr/bin/env python3
"""The checkers' tests (`openpim run --check`, OPENPIM_CHECK): seeded-bug DPU programs, each
caught with the right kind at the right lines and nothing else, and a correct program that
reports nothing.

Each program's source marks the lines a finding must name with `// check: KIND`. A program
runs under both checkers with a JSON report; every finding in the report's `check` section
must name only marked lines of its kind, every marked line must be named by a finding, and the
program's result and exit status must be those of a run without the checkers (a finding is not
a fault). Then the option and variable's errors: `--check=bogus` (exit status 2), a bad
OPENPIM_CHECK (dpu_alloc fails naming the accepted values).

Prints one PASS/FAIL line per check, then "N passed, M failed"; exits non-zero on a failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OPENPIM = ROOT / "target" / "release" / "openpim"

# program -> (exit status, the result it prints; None: no result line)
PROGRAMS = {
    "missing_barrier": (0, None),
    "lockfree_counter": (0, None),
    "stack_overflow": (1, None),
    "uninit_read": (0, None),
    "alloc_overrun": (0, None),
    "buddy_overrun": (0, None),
    "symbol_overrun": (0, None),
    # 4 tasklets: sum over t of (8 * 7 + 28 + 8 t) = 4 * 84 + 48 = 384, plus 32 increments
    "correct": (0, 416),
    # bins: 4 tasklets x 16 adds of 7 = 448; the chain: 21 handed on, + 1 + 2 + 3
    "correct_sync": (0, 475),
}

MARK = re.compile(r"//\s*check:\s*([a-z-]+)")

passed = 0
failed = 0


def ok(name: str) -> None:
    global passed
    print(f"PASS {name}")
    passed += 1


def ko(name: str, why: str) -> None:
    global failed
    print(f"FAIL {name}")
    for line in why.splitlines():
        print(f"    {line}")
    failed += 1


def marks(source: Path) -> set[tuple[str, str]]:
    """(kind, FILE:LINE) of each marked line."""
    out = set()
    for n, line in enumerate(source.read_text().splitlines(), 1):
        m = MARK.search(line)
        if m:
            out.add((m.group(1), f"{source.name}:{n}"))
    return out


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PATH"] = f"{ROOT / 'sdk' / 'bin'}:{e.get('PATH', '')}"
    e["LD_LIBRARY_PATH"] = f"{ROOT / 'target' / 'release'}:{e.get('LD_LIBRARY_PATH', '')}"
    for k in ("OPENPIM_CHECK", "OPENPIM_REPORT", "OPENPIM_TRACE"):
        e.pop(k, None)
    return e


def run(args: list[str], extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    e = env()
    e.update(extra or {})
    return subprocess.run(args, cwd=HERE, env=e, capture_output=True, text=True, timeout=120)


def check_program(name: str, tmp: Path) -> None:
    status, result = PROGRAMS[name]
    expected = marks(HERE / f"{name}.c")
    report = tmp / f"{name}.json"
    p = run([str(OPENPIM), "run", "--check=memory,races", f"--report={report}", "--",
             "./bin/host", f"bin/{name}"])
    plain = run(["./bin/host", f"bin/{name}"])
    why = []
    if p.returncode != status or plain.returncode != status:
        why.append(f"exit status {p.returncode} checked, {plain.returncode} plain; expected {status}")
    if p.stdout != plain.stdout:
        why.append(f"output differs: checked {p.stdout!r}, plain {plain.stdout!r}")
    if result is not None and f"result={result}" not in p.stdout:
        why.append(f"expected result={result}, got {p.stdout!r}")
    if "openpim: check" in plain.stderr:
        why.append("a run without --check printed checker output")
    try:
        section = json.loads(report.read_text())["check"]
    except (OSError, KeyError, ValueError) as e:
        ko(name, f"no check section in the report: {e}\n{p.stderr}")
        return
    try:
        import jsonschema  # noqa: PLC0415 (optional: installed by scripts/setup.sh)

        schema = json.loads((ROOT / "docs" / "report.schema.json").read_text())
        jsonschema.validate(json.loads(report.read_text()), schema)
    except ImportError:
        pass
    except Exception as e:  # jsonschema.ValidationError
        why.append(f"the report does not follow docs/report.schema.json: {e}")
    findings = section["findings"]
    named = set()
    for f in findings:
        for a in f["accesses"]:
            named.add((f["kind"], a["location"]))
            if (f["kind"], a["location"]) not in expected:
                why.append(f"unexpected {f['kind']} at {a['location']}: {f}")
        line = next((l for l in p.stderr.splitlines() if l.startswith(f"openpim: check: {f['kind']}")), None)
        if line is None:
            why.append(f"no stderr line for the {f['kind']} finding")
        else:
            for a in f["accesses"]:
                if a["location"] not in line or f"tasklet {a['tasklet']} {a['access']}" not in line:
                    why.append(f"the stderr line does not name {a}: {line}")
            if "DPU 0 of rank 0" not in line:
                why.append(f"the stderr line does not name the DPU: {line}")
    for kind, loc in sorted(expected - named):
        why.append(f"missed: {kind} at {loc}")
    summaries = [l for l in p.stderr.splitlines() if l.startswith("openpim: check (")]
    if len(summaries) != 1:
        why.append(f"expected one summary line, got {summaries}")
    elif not findings and ("no finding" not in summaries[0] or re.search(r"\.c:\d", summaries[0])):
        why.append(f"the summary of a clean run: {summaries[0]}")
    stacks = section.get("stacks") or []
    if not stacks or not all(t["size"] > 0 for s in stacks for t in s["tasklets"]):
        why.append(f"no stack report: {stacks}")
    if why:
        ko(name, "\n".join(why) + "\n--- stderr\n" + p.stderr)
    else:
        kinds = ", ".join(sorted({f["kind"] for f in findings})) or "nothing"
        ok(f"{name} ({kinds})")


def check_errors() -> None:
    p = run([str(OPENPIM), "run", "--check=bogus", "--", "./bin/host", "bin/correct"])
    if p.returncode == 2 and "memory, races" in p.stderr:
        ok("--check=bogus refused (exit status 2)")
    else:
        ko("--check=bogus", f"exit {p.returncode}\n{p.stderr}")
    p = run(["./bin/host", "bin/correct"], {"OPENPIM_CHECK": "memroy"})
    if p.returncode != 0 and "OPENPIM_CHECK" in p.stderr and "memory, races" in p.stderr:
        ok("a bad OPENPIM_CHECK fails dpu_alloc")
    else:
        ko("bad OPENPIM_CHECK", f"exit {p.returncode}\n{p.stderr}")
    # One checker at a time: races alone does not report the uninitialised read, memory alone
    # not the race.
    for mode, program, kind in (("races", "uninit_read", None), ("memory", "lockfree_counter", None),
                                ("races", "lockfree_counter", "race"),
                                ("memory", "uninit_read", "uninitialised-read")):
        p = run(["./bin/host", f"bin/{program}"], {"OPENPIM_CHECK": mode})
        got = sorted(set(re.findall(r"^openpim: check: ([a-z-]+)", p.stderr, re.M)))
        want = [kind] if kind else []
        if got == want:
            ok(f"OPENPIM_CHECK={mode} on {program} ({', '.join(got) or 'nothing'})")
        else:
            ko(f"OPENPIM_CHECK={mode} on {program}", f"got {got}, expected {want}\n{p.stderr}")


def main() -> int:
    # (Rebuilt when the DPU toolchain or runtime changed: the Makefile names the sources only.)
    subprocess.run([str(ROOT / "scripts" / "dpu-toolchain.sh"), "fresh", str(HERE)], check=True)
    b = subprocess.run(["make", "-s", "-C", str(HERE)], env=env(), capture_output=True, text=True)
    if b.returncode != 0:
        ko("build", b.stdout + b.stderr)
        print(f"{passed} passed, {failed} failed")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in PROGRAMS:
            check_program(name, Path(tmp))
    check_errors()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
