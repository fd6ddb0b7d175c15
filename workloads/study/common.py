"""What every `openpim study` shares: the claims table and its verdicts, REPORT.md's header
(wall time, rows per verdict), the CSV writer, runs.log, the program run that returns its JSON
run report, and the imports of the benchmarks the studies are built on (bench/remote,
bench/memory), so that a study reuses their code instead of copying it.

A claim's verdict is one of VERDICTS: `yes` (OpenPIM's figure agrees with the paper's trend
or number), `no` (it does not; the reason says why), `context` (the row states a fact of the
setup or something the emulator cannot measure: not a comparison)."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
OPENPIM = ROOT / "target" / "release" / "openpim"
VERDICTS = ("yes", "no", "context")


class StudyError(Exception):
    """A program failed, or a result differs from its reference: the study stops."""


@dataclass
class Claim:
    key: str
    claim: str
    paper: str
    openpim: str
    holds: str  # one of VERDICTS
    reason: str

    def __post_init__(self) -> None:
        if self.holds not in VERDICTS:
            raise ValueError(f"claim {self.key}: verdict {self.holds!r} is not one of {VERDICTS}")


def yn(ok: bool) -> str:
    return "yes" if ok else "no"


def within2(openpim: float, paper: float) -> bool:
    """The studies' rule for a number (a share, a time): OpenPIM's figure holds when it is within
    a factor of two of the paper's (the same for every such number of every study; docs/study.md)."""
    return paper / 2 <= openpim <= paper * 2


def gain_within2(openpim: float, paper: float) -> bool:
    """The rule for a speed-up: OpenPIM's gain (speed-up - 1) is within a factor of two of the
    paper's, so that a speed-up of 1.0x never holds against a paper's 1.42x."""
    return openpim > 1 and (paper - 1) / 2 <= openpim - 1 <= 2 * (paper - 1)


def claim(key: str, text: str, paper: str, measure: Callable[[], tuple[str, str, str]]) -> Claim:
    """A claim row whose OpenPIM cell, verdict and reason come from `measure`; a measurement
    that cannot be made (a missing point) is an error of the study, not a verdict."""
    openpim, holds, reason = measure()
    return Claim(key, text, paper, openpim, holds, reason)


def verdict_counts(claims: list[Claim]) -> dict[str, int]:
    return {v: sum(1 for c in claims if c.holds == v) for v in VERDICTS}


def header(title: str, source: str, wall_s: float, claims: list[Claim], extra: list[str]) -> list[str]:
    n = verdict_counts(claims)
    return [
        f"# {title}",
        "",
        f"Paper: {source}.",
        "",
        f"Wall time of the study: {wall_s:.0f} s. Claims: {len(claims)} rows, "
        f"{n['yes']} yes, {n['no']} no, {n['context']} context.",
        "",
        *extra,
    ]


def claims_table(claims: list[Claim]) -> list[str]:
    out = ["| id | claim | paper | OpenPIM | holds | reason |", "|---|---|---|---|---|---|"]
    for c in claims:
        cells = [c.key, c.claim, c.paper, c.openpim, c.holds, c.reason]
        out.append("| " + " | ".join(x.replace("|", "/").replace("\n", " ") for x in cells) + " |")
    return out


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        raise StudyError(f"{path.name}: no rows to write")
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


class Log:
    """runs.log: every program run with its options, and the study's progress (also printed)."""

    def __init__(self, out: Path):
        self.file = (out / "runs.log").open("w")

    def __call__(self, msg: str) -> None:
        print(msg, flush=True)
        self.file.write(msg + "\n")
        self.file.flush()


def sdk_env(extra: dict[str, str] | None = None, profile: str = "") -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / 'sdk' / 'bin'}:{ROOT / 'target' / 'release'}:{env.get('PATH', '')}"
    ld = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{ROOT / 'target' / 'release'}" + (f":{ld}" if ld else "")
    for k in ("OPENPIM_REPORT", "OPENPIM_TRACE", "OPENPIM_CLOCK", "OPENPIM_SERVER"):
        env.pop(k, None)
    if profile:
        base = env.get("UPMEM_PROFILE_BASE", "")
        env["UPMEM_PROFILE_BASE"] = f"{base},{profile}" if base else profile
    env.update(extra or {})
    return env


def run_reported(argv: list[str], cwd: Path, log: Log, env: dict[str, str], ok: Callable[[str], bool],
                 what: str, timeout: int = 3600) -> tuple[dict[str, Any], str, float]:
    """Runs a program with a JSON run report; returns (report, stdout, wall seconds). A failed
    run, or one whose output `ok` rejects (its own check against a CPU reference), stops the
    study."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(env)
        env["OPENPIM_REPORT"] = f"{tmp}/run.json"
        extra = {k: env[k] for k in env if k.startswith(("OPENPIM_", "UPMEM_PROFILE"))}
        log(f"  run {what}: {' '.join(argv)} (in {cwd}; {' '.join(f'{k}={v}' for k, v in sorted(extra.items()))})")
        t0 = time.monotonic()
        r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        wall = time.monotonic() - t0
        if r.returncode != 0:
            raise StudyError(f"{what}: {' '.join(argv)} exited {r.returncode}:\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
        if not ok(r.stdout):
            raise StudyError(f"{what}: {' '.join(argv)}: its result check failed:\n{r.stdout[-1500:]}")
        try:
            report = json.loads(Path(f"{tmp}/run.json").read_text())
        except (OSError, ValueError) as e:
            raise StudyError(f"{what}: no JSON run report ({e})") from e
    return report, r.stdout, wall


def load_module(rel: str, key: str) -> ModuleType:
    """A script of the repository (REL from its root) as a module: the studies reuse the
    benchmarks' and tests' functions instead of copying them."""
    if key in sys.modules:
        return sys.modules[key]
    path = ROOT / rel
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None:
        raise StudyError(f"{rel} not found")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def bench_module(name: str) -> ModuleType:
    """bench/NAME/run.py as a module (its functions are the studies' building blocks)."""
    return load_module(f"bench/{name}/run.py", f"openpim_bench_{name}")


def plot() -> Any:
    """matplotlib.pyplot with the file backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def study_args(name: str, doc: str, argv: list[str] | None) -> Any:
    import argparse

    ap = argparse.ArgumentParser(prog=f"openpim study {name}", description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced sizes (what `make test` runs)")
    ap.add_argument("--out", default=f"study-{name}", help="output folder (default: %(default)s)")
    ap.add_argument("--hardware", default="", help="hardware profile of the emulated machine (name or file)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    a.out = out
    a.profile = f"hardware={a.hardware}" if a.hardware else ""
    return a


def finish(out: Path, log: Log, title: str, source: str, start: float, claims: list[Claim],
           extra: list[str], body: list[str]) -> int:
    """Writes REPORT.md: header, the claims table, then the study's own sections."""
    wall = time.monotonic() - start
    text = header(title, source, wall, claims, extra) + ["## Claims", ""] + claims_table(claims) + [""] + body
    (out / "REPORT.md").write_text("\n".join(text) + "\n")
    n = verdict_counts(claims)
    log(f"done in {wall:.0f} s: {len(claims)} claims ({n['yes']} yes, {n['no']} no, {n['context']} context) "
        f"-> {out / 'REPORT.md'}")
    return 0
