"""Tenants of the rank manager, for the sharing and allocation studies: a daemon (bench/remote's)
and programs that hold ranks idle between launches (tests/memory's `ckpt` program: STEPS
launches over 1 MiB per DPU, a pause of STEP_PAUSE_MS after each, a faulting launch after
step K). Every tenant's result is checked: its per-DPU digests, cycle counts and fault equal
those of the same program run alone in process."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from study.common import ROOT, Log, StudyError, bench_module, sdk_env

MEMORY = ROOT / "tests" / "memory"


@dataclass
class Tenant:
    seed: int
    out: str
    wall_s: float
    first_step_s: float  # from the tenant's start to its first launch's output
    report: dict[str, Any]


def results(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if re.match(r"^(step|fault)", ln)]


class Tenants:
    def __init__(self, log: Log, dpus: int, steps: int, fault_after: int):
        self.log, self.dpus, self.steps, self.k = log, dpus, steps, fault_after
        bench_module("memory").build()
        self.refs: dict[int, list[str]] = {}

    def argv(self, seed: int) -> list[str]:
        return ["./bin/host", "ckpt", str(seed), str(self.dpus), str(self.steps), str(self.k), "-", "run"]

    def reference(self, seed: int) -> list[str]:
        """The tenant's output alone, in process."""
        if seed not in self.refs:
            self.log(f"  run reference: {' '.join(self.argv(seed))} (in process)")
            r = subprocess.run(self.argv(seed), cwd=MEMORY, env=sdk_env(), capture_output=True, text=True)
            if r.returncode != 0 or not results(r.stdout):
                raise StudyError(f"tenant {seed} alone exited {r.returncode}:\n{r.stdout[-1500:]}{r.stderr[-800:]}")
            self.refs[seed] = results(r.stdout)
        return self.refs[seed]

    def start(self, seed: int, server: str, pause_ms: int, tmp: Path) -> tuple[subprocess.Popen, float, Path, Path]:
        env = sdk_env({"OPENPIM_SERVER": server, "STEP_PAUSE_MS": str(pause_ms),
                       "OPENPIM_REPORT": str(tmp / f"t{seed}.json")})
        out = tmp / f"t{seed}.out"
        self.log(f"  run tenant {seed}: {' '.join(self.argv(seed))} (OPENPIM_SERVER={server} STEP_PAUSE_MS={pause_ms})")
        p = subprocess.Popen(self.argv(seed), cwd=MEMORY, env=env, stdout=out.open("w"), stderr=subprocess.STDOUT)
        return p, time.monotonic(), out, tmp / f"t{seed}.json"

    def finish(self, seed: int, proc: tuple[subprocess.Popen, float, Path, Path], first: float) -> Tenant:
        p, t0, out, rep = proc
        p.wait(timeout=600)
        wall = time.monotonic() - t0
        text = out.read_text()
        if p.returncode != 0:
            raise StudyError(f"tenant {seed} exited {p.returncode}:\n{text[-1500:]}")
        if results(text) != self.reference(seed):
            raise StudyError(f"tenant {seed}: its results through the daemon differ from the same program alone")
        return Tenant(seed, text, wall, first - t0, json.loads(rep.read_text()))

    def two(self, daemon_args: list[str], pause_a: int, pause_b: int, config: str = "") -> dict[str, Any]:
        """Tenant A starts on a one-rank daemon; once it has launched once, tenant B asks for the
        rank. Returns both tenants, B's wait for its first launch, and the daemon's metrics."""
        bench = bench_module("remote")
        with tempfile.TemporaryDirectory() as t:
            tmp = Path(t)
            args = list(daemon_args)
            if config:
                (tmp / "daemon.toml").write_text(config)
                args += ["--config", str(tmp / "daemon.toml")]
            if "--suspend-dir" in args:
                args[args.index("--suspend-dir") + 1] = str(tmp / "suspended")
            self.log(f"  daemon: openpim daemon --ranks 1 {' '.join(args)}")
            d = bench.Daemon(tmp, "tenants", *args, ranks=1)
            # The idle-held gauge counts the current (or last) allocation of each rank: its
            # largest value over the run is the longest a holder kept a rank idle.
            idle = [0.0]
            stop = threading.Event()

            def watch() -> None:
                while not stop.wait(0.25):
                    idle[0] = max(idle[0], idle_held(Path(d.metrics)))

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            try:
                a = self.start(1, d.sock, pause_a, tmp)
                a_first = wait_for_step(a[2], a[0])
                b = self.start(2, d.sock, pause_b, tmp)
                b_first = wait_for_step(b[2], b[0])
                ta = self.finish(1, a, a_first)
                tb = self.finish(2, b, b_first)
                suspended = d.metric("openpim_suspend_seconds_count")
            finally:
                stop.set()
                watcher.join()
                d.stop()
        return {"a": ta, "b": tb, "b_wait_s": tb.first_step_s, "idle_held_s": idle[0], "suspensions": suspended}


def idle_held(metrics: Path) -> float:
    """The daemon's idle-held seconds summed over its ranks, now (0 while the file is missing)."""
    try:
        text = metrics.read_text()
    except OSError:
        return 0.0
    total = 0.0
    for line in text.splitlines():
        if line.startswith("openpim_rank_idle_held_seconds{"):
            try:
                total += float(line.split()[-1])
            except ValueError:
                pass
    return total


def wait_for_step(out: Path, p: subprocess.Popen, timeout: float = 300) -> float:
    """Waits until the program has printed its first step; returns that moment."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if out.exists() and re.search(r"^step 1", out.read_text(), re.M):
            return time.monotonic()
        if p.poll() is not None:
            raise StudyError(f"a tenant ended before its first step:\n{out.read_text()[-1500:]}")
        time.sleep(0.02)
    raise StudyError("a tenant did not launch within its timeout")
