"""Running the study's programs: the PIM host programs on the emulator with a JSON run report
(and a trace when an exchange has to be found in it), the CPU baselines for real.

Every PIM measurement comes from the run report (docs/report-schema.md), never from the
programs' own timers:

- one-time setup (allocation, program loading, tables or twiddles into MRAM) is removed by
  subtracting the report of the same program run with --setup-only;
- inter-DPU time is the report's `inter_dpu_ns` (regions the program marks with
  <openpim.h>); when the report has none but the program launched several kernels, the
  exchange is what the host timeline did between the kernels (from the trace).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PHASES = ("cpu_dpu", "kernel", "inter_dpu", "dpu_cpu", "host")
REPORT_KEYS = {
    "cpu_dpu": "cpu_dpu_ns",
    "kernel": "dpu_kernel_ns",
    "inter_dpu": "inter_dpu_ns",
    "dpu_cpu": "dpu_cpu_ns",
    "host": "host_ns",
}


class StudyError(Exception):
    """A program failed, or a PIM result differs from its CPU baseline."""


@dataclass
class PimRun:
    """One PIM run: phase times in ns (setup removed), launches, the program's output."""

    phases: dict[str, int]
    launches: list[dict[str, Any]]
    stdout: str
    checksum: str
    inter_from_trace: bool = False
    # How the collectives moved the data (the report's inter-DPU records, e.g. "optimized",
    # "links (ranks, 2.8 GB/s)"), in order, without repeats; empty when no collective ran.
    collective_paths: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.phases[p] for p in PHASES)

    @property
    def dma_bytes(self) -> int:
        """Bytes the DPUs' DMA engines moved between MRAM and WRAM in the launches."""
        return sum(int(l.get("dma_bytes", 0)) for l in self.launches)

    def launch_ns(self) -> list[int]:
        """Each launch's duration on the rank timelines (ns), in launch order."""
        return [int(l["end_ns"] - l["start_ns"]) for l in sorted(self.launches, key=lambda l: l["start_ns"])]

    @property
    def ipc(self) -> float:
        """Instructions per cycle of the launches, weighted by their cycles."""
        cycles = sum(l["cycles"] for l in self.launches)
        return sum(l["ipc"] * l["cycles"] for l in self.launches) / cycles if cycles else 0.0


@dataclass
class CpuRun:
    ns: int
    threads: int
    checksum: str


@dataclass
class Runner:
    root: Path
    out: Path
    profile: str = ""
    runs: int = 0
    cpu_reps: int = 5
    built: set[str] = field(default_factory=set)

    def env(self, profile: str = "") -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{self.root / 'sdk' / 'bin'}:{env.get('PATH', '')}"
        for k in ("OPENPIM_REPORT", "OPENPIM_TRACE", "OPENPIM_CLOCK"):
            env.pop(k, None)
        # OpenMP threads that spin at barriers lose whole time slices on a loaded machine
        # (a 60 us loop measured 20 ms); sleeping waits keep the baselines' times honest.
        env.setdefault("OMP_WAIT_POLICY", "passive")
        for p in (self.profile, profile):
            if p:
                base = env.get("UPMEM_PROFILE_BASE", "")
                env["UPMEM_PROFILE_BASE"] = f"{base},{p}" if base else p
        return env

    def workload(self, name: str) -> Path:
        return self.root / "workloads" / name

    def build(self, name: str, target: str = "") -> None:
        key = f"{name}:{target}"
        if key in self.built:
            return
        if not any(k.startswith(f"{name}:") for k in self.built):
            # (Programs built with another DPU toolchain are rebuilt.)
            fresh = [str(self.root / "scripts/dpu-toolchain.sh"), "fresh", str(self.workload(name))]
            subprocess.run(fresh, env=self.env(), check=True)
        cmd = ["make", "-s", "-C", str(self.workload(name))] + ([target] if target else [])
        r = subprocess.run(cmd, env=self.env(), capture_output=True, text=True)
        if r.returncode != 0:
            raise StudyError(f"building {name} {target} failed:\n{r.stdout}{r.stderr}")
        self.built.add(key)

    def _exec(self, argv: list[str], env: dict[str, str]) -> str:
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise StudyError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        return r.stdout

    def links_profile(self) -> str:
        """A copy of the hardware profile (upmem-v1a, or --hardware's) with what-if links: groups
        of 4 ranks, 2.8 GB/s per DPU (the seed's Sec. 6 assumption), written into the output
        folder; returns the profile string that selects it."""
        hw = self.profile.split("=", 1)[1] if self.profile.startswith("hardware=") else "upmem-v1a"
        src = Path(hw) if "/" in hw or hw.endswith(".toml") else self.root / "profiles" / f"{hw}.toml"
        text = src.read_text()
        # A [links] table of its own (a comment naming it does not count).
        if not re.search(r"^\s*\[links\]", text, re.M):
            text += '\n[links]\nscope = "ranks"\nranks_per_group = 4\nlink_gbps = 2.8\n'
        dst = self.out / "links-profile.toml"
        dst.write_text(text)
        return f"hardware={dst.resolve()}"

    def pim(self, name: str, args: list[str], tasklets: int, exchange_from_trace: bool = False,
            profile: str = "") -> PimRun:
        """Runs workloads/NAME/bin/host ARGS; returns its phases with the setup removed."""
        dpu_prefix = "emb_dpu" if name == "embedding" else "ntt_dpu"
        self.build(name)
        self.build(name, f"bin/{dpu_prefix}_{tasklets}")
        host = str(self.workload(name) / "bin" / "host")
        argv = [host, *args, "--tasklets", str(tasklets)]
        with tempfile.TemporaryDirectory() as tmp:
            env = self.env(profile)
            env["OPENPIM_REPORT"] = f"{tmp}/run.json"
            if exchange_from_trace:
                env["OPENPIM_TRACE"] = f"{tmp}/trace.json"
            stdout = self._exec(argv, env)
            if not re.search(r"^OK ", stdout, re.M):
                raise StudyError(f"{' '.join(argv)}: no OK line:\n{stdout[-2000:]}")
            report = json.loads(Path(f"{tmp}/run.json").read_text())
            trace = json.loads(Path(f"{tmp}/trace.json").read_text()) if exchange_from_trace else None
            env = self.env(profile)
            env["OPENPIM_REPORT"] = f"{tmp}/setup.json"
            self._exec([*argv, "--setup-only"], env)
            setup = json.loads(Path(f"{tmp}/setup.json").read_text())
        self.runs += 2
        phases = {p: int(report["phases"][REPORT_KEYS[p]]) for p in PHASES}
        for p in PHASES:
            phases[p] = max(0, phases[p] - int(setup["phases"][REPORT_KEYS[p]]))
        from_trace = False
        if trace is not None and phases["inter_dpu"] == 0 and len(report["launches"]) > 1:
            moved = exchange_in_trace(report, trace)
            for p, ns in moved.items():
                take = min(ns, phases[p])
                phases[p] -= take
                phases["inter_dpu"] += take
            from_trace = True
        m = re.search(r"^checksum (\S+)", stdout, re.M)
        paths = tuple(dict.fromkeys(x["path"] for x in report.get("inter_dpu", []) if x["primitive"] != "region"))
        return PimRun(phases, report["launches"], stdout, m.group(1) if m else "", from_trace, paths)

    def cpu(self, name: str, args: list[str]) -> CpuRun:
        """Runs workloads/NAME/bin/cpu ARGS (real time, best of the repetitions)."""
        self.build(name)
        out = self._exec([str(self.workload(name) / "bin" / "cpu"), *args, "--reps", str(self.cpu_reps)], self.env())
        ns = re.search(r"^cpu_ns (\d+)", out, re.M)
        th = re.search(r"^threads (\d+)", out, re.M)
        cs = re.search(r"^checksum (\S+)", out, re.M)
        if not (ns and th and cs):
            raise StudyError(f"unexpected CPU baseline output:\n{out}")
        return CpuRun(int(ns.group(1)), int(th.group(1)), cs.group(1))

    def pim_checked(self, name: str, args: list[str], tasklets: int, cpu: CpuRun | None,
                    exchange_from_trace: bool = False, profile: str = "") -> PimRun:
        """A PIM run whose result must equal the CPU baseline's (by checksum)."""
        run = self.pim(name, args, tasklets, exchange_from_trace, profile)
        if cpu is not None and run.checksum != cpu.checksum:
            raise StudyError(f"{name} {' '.join(args)}: PIM checksum {run.checksum} != CPU {cpu.checksum}")
        return run


_CATS = {"cpu_dpu": "cpu_dpu", "dpu_cpu": "dpu_cpu", "host": "host"}


def exchange_in_trace(report: dict[str, Any], trace: Any) -> dict[str, int]:
    """Host-timeline time by phase between consecutive kernel launches (ns)."""
    launches = sorted(report["launches"], key=lambda l: l["start_ns"])
    windows = [(a["end_ns"], b["start_ns"]) for a, b in zip(launches, launches[1:])]
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    moved = {p: 0 for p in _CATS}
    for e in events:
        if e.get("ph") != "X" or e.get("tid") != 0 or e.get("cat") not in _CATS:
            continue
        start = e["ts"] * 1000.0
        end = start + e["dur"] * 1000.0
        for lo, hi in windows:
            overlap = min(end, hi) - max(start, lo)
            if overlap > 0:
                moved[_CATS[e["cat"]]] += int(round(overlap))
    return moved


def host_description() -> str:
    """The machine the CPU baselines ran on: CPU model and count (from /proc/cpuinfo)."""
    model, count = "unknown CPU", 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            if line.startswith("processor"):
                count += 1
    except OSError:
        pass
    return f"{model}, {count} logical CPU(s) visible, {os.cpu_count()} usable"
