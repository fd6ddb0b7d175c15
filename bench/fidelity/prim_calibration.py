"""PrIM calibration table: real-hardware timings of whole PrIM benchmarks against the model.

The rows are shared/calibration/prim-calibration.csv (GEMV, HST-S, SCAN-RSS, SEL, TRNS, UNI
at 1-64 DPUs, measured on a real UPMEM server and published with uPIMulator; see
shared/calibration/README.md). For every row, the benchmark is built once per configuration
from a copy of shared/third_party/prim-benchmarks/<benchmark> with its own Makefile and the
row's make command (OpenPIM's SDK commands on PATH), then the row's host command runs with
OPENPIM_REPORT=<file.json>; the run report's virtual time by phase gives the model's figures:

    kernel   phases.dpu_kernel_ns   (every launch of the timed iteration: SCAN-RSS's reduction
                                     and scan kernels, TRNS's step 2 and step 3 of every round)
    CPU-DPU  phases.cpu_dpu_ns
    DPU-CPU  phases.dpu_cpu_ns

PrIM times each phase with gettimeofday around the SDK calls and prints the average over its -e
timed iterations; the report adds up the whole run, warm-up iterations (-w) included, and every
iteration of the model is identical, so the model's per-iteration figure is the total divided
by (-w + -e). Program loading and allocation are outside PrIM's timers and outside these
phases (the report's alloc_load_ns). Small differences in what is timed, listed in
docs/fidelity.md: SCAN-RSS's inter-DPU step (a small DPU-CPU and CPU-DPU transfer, the
hardware's hw_inter_dpu_ms) lands in the model's DPU-CPU and CPU-DPU phases; TRNS's reset and
argument transfers outside its step-1 timer land in the model's CPU-DPU phase. Both are a few
small transfers against hundreds or thousands of timed ones.

Nothing here is fitted: the rows judge the model.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHARED = Path(os.environ.get("OPENPIM_SHARED", ROOT.parent / "shared"))
CSV_PATH = SHARED / "calibration" / "prim-calibration.csv"


@dataclass(frozen=True)
class Table:
    """A set of real-hardware PrIM rows in the calibration CSV's columns."""

    csv: Path
    title: str  # what the rows are, printed above the table
    stem: str  # out/<stem>.{csv,json}


# `calibration`: the rows (uPIMulator's server). `vpim`: PrIM's own default runs on
# another server, published with vPIM (docs/fidelity.md, "A second server: vPIM's native PrIM
# runs"); a check on rows nothing in the model was derived from or compared with before.
TABLES = {
    "calibration": Table(CSV_PATH, "PrIM calibration rows (real hardware: prim-calibration.csv)",
                         "prim_calibration"),
    "vpim": Table(HERE / "data" / "vpim-native.csv",
                  "PrIM default runs on vPIM's server (real hardware: data/vpim-native.csv)",
                  "prim_vpim"),
}
PRIM_SRC = SHARED / "third_party" / "prim-benchmarks"
CACHE = HERE / "bin" / "prim"  # build cache (gitignored: bench/**/bin/)

OK_RE = re.compile(r"\[.*OK.*\]")
ERR_RE = re.compile(r"\[.*ERROR.*\]|Mismatch at")


@dataclass
class CalRow:
    bench: str
    dpus: int
    tasklets: int
    size: str  # the row's problem size (data_prep_param), total over all DPUs
    size_desc: str
    make_cmd: str
    host_cmd: str
    hw_kernel: float  # ms
    hw_c2d: float
    hw_d2c: float
    hw_inter: float
    model_kernel: Optional[float] = None  # ms per iteration
    model_c2d: Optional[float] = None
    model_d2c: Optional[float] = None
    model_inter: Optional[float] = None
    launches: int = 0
    # per iteration, from the report's `transfers`: SDK calls and bytes by direction (the
    # decomposition of a transfer row into fixed costs and bytes; docs/fidelity.md)
    c2d_calls: float = 0.0
    d2c_calls: float = 0.0
    c2d_bytes: float = 0.0
    d2c_bytes: float = 0.0
    # transfers that were a rank's first MRAM access after a launch (each paid the MRAM mux
    # switch back to the host), per iteration
    c2d_mux: float = 0.0
    d2c_mux: float = 0.0
    cycles: int = 0  # slowest DPU, summed over the launches
    verified: str = ""  # the program's own check: OK / ERROR / -
    failure: str = ""
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.bench}@{self.dpus}/{self.size}"

    @staticmethod
    def rel(model: Optional[float], hw: float) -> Optional[float]:
        if model is None or hw <= 0:
            return None
        return (model - hw) / hw

    @property
    def err_kernel(self) -> Optional[float]:
        return self.rel(self.model_kernel, self.hw_kernel)

    @property
    def err_c2d(self) -> Optional[float]:
        return self.rel(self.model_c2d, self.hw_c2d)

    @property
    def err_d2c(self) -> Optional[float]:
        return self.rel(self.model_d2c, self.hw_d2c)


def load_rows(benches: Optional[set[str]] = None, table: Table = TABLES["calibration"]) -> list[CalRow]:
    rows = []
    with open(table.csv, newline="") as f:
        for r in csv.DictReader(row for row in f if not row.startswith("#")):
            if benches and r["benchmark"] not in benches:
                continue
            rows.append(CalRow(
                bench=r["benchmark"], dpus=int(r["nr_dpus"]), tasklets=int(r["nr_tasklets"]),
                size=r["data_prep_param"], size_desc=r["size_params"], make_cmd=r["make_cmd"],
                host_cmd=r["host_cmd"], hw_kernel=float(r["hw_kernel_ms"]),
                hw_c2d=float(r["hw_cpu_to_dpu_ms"]), hw_d2c=float(r["hw_dpu_to_cpu_ms"]),
                hw_inter=float(r["hw_inter_dpu_ms"] or 0.0)))
    return rows


def iterations(host_cmd: str) -> tuple[int, int]:
    """(-w, -e) of a PrIM host command; PrIM's defaults (1, 3) when absent."""
    argv = shlex.split(host_cmd)
    w, e = 1, 3
    for i, a in enumerate(argv[:-1]):
        if a == "-w":
            w = int(argv[i + 1])
        elif a == "-e":
            e = int(argv[i + 1])
    return w, e


def toolchain_fingerprint(compiler: Optional[str]) -> str:
    """The DPU toolchain's fingerprint (scripts/dpu-toolchain.sh) with DPU compiler `compiler`."""
    env = {k: v for k, v in os.environ.items() if k != "OPENPIM_DPU_COMPILER"}
    if compiler:
        env["OPENPIM_DPU_COMPILER"] = compiler
    out = subprocess.run([str(ROOT / "scripts/dpu-toolchain.sh"), "hash"], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def make_args(make_cmd: str) -> list[str]:
    argv = shlex.split(make_cmd)
    if not argv or argv[0] != "make":
        raise ValueError(f"unexpected make command {make_cmd!r}")
    return argv[1:]


class Builder:
    """Builds each (benchmark, make arguments, compiler) once, in a cached copy."""

    def __init__(self, env: dict[str, str], compiler: Optional[str], log=print):
        self.env = env
        self.compiler = compiler
        self.fingerprint = toolchain_fingerprint(compiler)
        self.log = log
        self.root = CACHE / (compiler or "default")

    def folder(self, row: CalRow) -> Path:
        tag = "_".join(a.replace("=", "-") for a in make_args(row.make_cmd))
        return self.root / f"{row.bench}__{tag}"

    def build(self, row: CalRow) -> Path:
        dest = self.folder(row)
        stamp = dest / ".openpim-build"
        want = f"{self.fingerprint} {row.make_cmd}\n"
        if stamp.is_file() and stamp.read_text() == want:
            return dest
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(PRIM_SRC / row.bench, dest, symlinks=True)
        for d, _, files in os.walk(dest):  # the shared tree is read-only
            os.chmod(d, 0o755)
            for f in files:
                p = os.path.join(d, f)
                if not os.path.islink(p):
                    os.chmod(p, os.stat(p).st_mode | 0o200)
        t0 = time.monotonic()
        r = subprocess.run(["make", *make_args(row.make_cmd)], cwd=dest, env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace")
        if r.returncode != 0:
            raise RuntimeError(f"build of {row.bench} ({row.make_cmd}) failed:\n{r.stdout[-3000:]}")
        stamp.write_text(want)
        self.log(f"  built {row.bench} {' '.join(make_args(row.make_cmd))} "
                 f"({time.monotonic() - t0:.1f} s)")
        return dest


def xfer_log_name(row: CalRow) -> str:
    """The file name of a row's transfer log (OPENPIM_XFER_LOG) under a table's log folder."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", row.key) + ".log"


def run_row(row: CalRow, folder: Path, env: dict[str, str], timeout: int,
            xfer_logs: Optional[Path] = None) -> None:
    """Runs the row's host command on the emulator and fills in the model's figures."""
    w, e = iterations(row.host_cmd)
    iters = w + e
    if (w, e) != (0, 1):
        row.notes.append(f"-w {w} -e {e}: report totals divided by {iters}")
    with tempfile.TemporaryDirectory(prefix="openpim-cal-") as tmp:
        report = Path(tmp) / "report.json"
        e2 = dict(env)
        e2["OPENPIM_REPORT"] = str(report)
        if xfer_logs is not None:
            # Every transfer's shape, for replaying other transfer models on this row
            # (transfer_floor.py); a new run of the row replaces its log.
            xfer_logs.mkdir(parents=True, exist_ok=True)
            log = xfer_logs / xfer_log_name(row)
            log.unlink(missing_ok=True)
            e2["OPENPIM_XFER_LOG"] = str(log)
        t0 = time.monotonic()
        try:
            r = subprocess.run(shlex.split(row.host_cmd), cwd=folder, env=e2,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            row.failure = f"timed out after {timeout} s"
            row.wall_s = time.monotonic() - t0
            return
        row.wall_s = time.monotonic() - t0
        out = r.stdout
        row.verified = "ERROR" if ERR_RE.search(out) else ("OK" if OK_RE.search(out) else "-")
        if r.returncode != 0:
            row.failure = f"exit code {r.returncode}: {out.strip().splitlines()[-1:] or ''}"
            return
        if not report.is_file():
            row.failure = "no run report written"
            return
        rep = json.loads(report.read_text())
    ph = rep["phases"]
    row.model_kernel = ph["dpu_kernel_ns"] / iters / 1e6
    row.model_c2d = ph["cpu_dpu_ns"] / iters / 1e6
    row.model_d2c = ph["dpu_cpu_ns"] / iters / 1e6
    row.model_inter = ph["inter_dpu_ns"] / iters / 1e6
    row.launches = len(rep.get("launches", []))
    xf = rep.get("transfers", {})
    row.c2d_calls = sum(xf.get(k, 0) for k in ("serial_to_dpu", "parallel_to_dpu",
                                                "broadcast_to_dpu")) / iters
    row.d2c_calls = sum(xf.get(k, 0) for k in ("serial_from_dpu", "parallel_from_dpu")) / iters
    row.c2d_bytes = xf.get("bytes_to_dpus", 0) / iters
    row.d2c_bytes = xf.get("bytes_from_dpus", 0) / iters
    row.c2d_mux = xf.get("mux_switches_to_dpu", 0) / iters
    row.d2c_mux = xf.get("mux_switches_from_dpu", 0) / iters
    row.cycles = sum(int(la.get("cycles", 0)) for la in rep.get("launches", []))


def run_all(rows: list[CalRow], env: dict[str, str], compiler: Optional[str], jobs: int,
            timeout: int, xfer_logs: Optional[Path] = None) -> None:
    builder = Builder(env, compiler, log=lambda s: print(s, file=sys.stderr, flush=True))
    # Build serially (each build is short; make itself is not the bottleneck), then run.
    folders: dict[str, Path] = {}
    for row in rows:
        try:
            folders[row.key] = builder.build(row)
        except Exception as ex:  # noqa: BLE001 - a failed build is reported on its rows
            row.failure = str(ex).splitlines()[0]

    def one(row: CalRow) -> CalRow:
        if row.key in folders:
            run_row(row, folders[row.key], env, timeout, xfer_logs)
        status = row.failure or f"{row.wall_s:.1f} s"
        print(f"  {row.bench:<8} {row.dpus:>2} DPUs  {row.size:>8}  {status}", file=sys.stderr,
              flush=True)
        return row

    if jobs <= 1:
        for row in rows:
            one(row)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, rows))


# --------------------------------------------------------------------------- output
def fmt_ms(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.1f}"
    if v >= 10:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_err(e: Optional[float]) -> str:
    return "-" if e is None else f"{100 * e:+.1f}%"


def mae(errs: list[Optional[float]]) -> Optional[float]:
    vals = [abs(e) for e in errs if e is not None]
    return sum(vals) / len(vals) if vals else None


def fmt_mae(v: Optional[float]) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def compiler_identity(env: dict[str, str]) -> str:
    """The DPU compiler the shim resolves to (first line of its --version)."""
    try:
        r = subprocess.run(["dpu-upmem-dpurte-clang", "--version"], env=env, capture_output=True,
                           text=True, timeout=60)
        line = r.stdout.strip().splitlines()[0] if r.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        line = ""
    return line.split(": ", 1)[-1] if line else "unknown"


def print_table(rows: list[CalRow], elapsed: float, compiler: str, hardware: str = "upmem-v1a",
                table: Table = TABLES["calibration"]) -> None:
    head = (f"{'benchmark':<9} {'DPUs':>4} {'size':>8} | {'kernel hw':>10} {'model':>9} {'err':>8} | "
            f"{'CPU-DPU hw':>10} {'model':>9} {'err':>8} | {'DPU-CPU hw':>10} {'model':>9} {'err':>8} | chk")
    print(f"{table.title}; model: OpenPIM run report; ms per iteration; hardware profile "
          f"{hardware}; DPU compiler: {compiler}")
    print(head)
    print("-" * len(head))
    for r in rows:
        line = (f"{r.bench:<9} {r.dpus:>4} {r.size:>8} | {fmt_ms(r.hw_kernel):>10} {fmt_ms(r.model_kernel):>9} "
                f"{fmt_err(r.err_kernel):>8} | {fmt_ms(r.hw_c2d):>10} {fmt_ms(r.model_c2d):>9} "
                f"{fmt_err(r.err_c2d):>8} | {fmt_ms(r.hw_d2c):>10} {fmt_ms(r.model_d2c):>9} "
                f"{fmt_err(r.err_d2c):>8} | {r.verified or '-'}")
        if r.failure:
            line += f"  FAILED: {r.failure}"
        print(line)
    print()
    print("mean absolute error |model - hw| / hw:")
    benches = list(dict.fromkeys(r.bench for r in rows))
    print(f"  {'benchmark':<9} {'rows':>4} {'kernel':>8} {'CPU-DPU':>8} {'DPU-CPU':>8}  worst kernel row")
    for b in benches + ["all"]:
        rs = [r for r in rows if b == "all" or r.bench == b]
        done = [r for r in rs if r.err_kernel is not None]
        worst = max(done, key=lambda r: abs(r.err_kernel or 0), default=None)
        w = (f"{worst.bench} {worst.dpus} DPUs {worst.size}: {fmt_err(worst.err_kernel)}"
             if worst else "-")
        print(f"  {b:<9} {len(done):>4} {fmt_mae(mae([r.err_kernel for r in rs])):>8} "
              f"{fmt_mae(mae([r.err_c2d for r in rs])):>8} {fmt_mae(mae([r.err_d2c for r in rs])):>8}  {w}")
    failed = [r for r in rows if r.failure or r.model_kernel is None]
    if failed:
        print(f"  {len(failed)} row(s) without a model figure: "
              + ", ".join(f"{r.bench}@{r.dpus}/{r.size}" for r in failed))
    bad = [r for r in rows if r.verified == "ERROR"]
    if bad:
        print(f"  {len(bad)} row(s) whose own check failed: " + ", ".join(r.key for r in bad))
    print_targets(rows)
    print(f"PrIM table ({table.stem}): {len(rows)} rows in {elapsed:.0f} s of wall time")


# The fidelity targets every PrIM table is judged on (docs/fidelity.md, "The targets"): the kernel
# within 5 % on average and no row beyond 20 %; each transfer direction within 20 % on average and
# no benchmark's mean beyond 30 %.
KERNEL_MAE_TARGET = 0.05
KERNEL_ROW_TARGET = 0.20
XFER_MAE_TARGET = 0.20
XFER_BENCH_TARGET = 0.30


def print_targets(rows: list[CalRow]) -> None:
    """One line per target: the figure, the bound, met or missed, and where it is missed."""
    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    ran = [r for r in rows if r.err_kernel is not None]
    verified = [r for r in ran if r.verified == "OK"]
    print(f"targets ({len(ran)} of {len(rows)} rows ran, {len(verified)} verified by their own check):")
    k = mae([r.err_kernel for r in rows])
    if k is not None:
        print(f"  kernel MAE {fmt_mae(k)} (<= {KERNEL_MAE_TARGET:.0%}): {verdict(k <= KERNEL_MAE_TARGET)}")
        beyond = [r for r in ran if abs(r.err_kernel or 0) > KERNEL_ROW_TARGET]
        worst = max(ran, key=lambda r: abs(r.err_kernel or 0))
        print(f"  kernel rows beyond +-{KERNEL_ROW_TARGET:.0%}: {len(beyond)} (worst {worst.bench} "
              f"{worst.dpus} DPUs {worst.size}: {fmt_err(worst.err_kernel)}): {verdict(not beyond)}")
    benches = list(dict.fromkeys(r.bench for r in rows))
    for name, attr in (("CPU-DPU", "err_c2d"), ("DPU-CPU", "err_d2c")):
        m = mae([getattr(r, attr) for r in rows])
        if m is None:
            print(f"  {name}: no row with a hardware figure")
            continue
        per = {b: mae([getattr(r, attr) for r in rows if r.bench == b]) for b in benches}
        per = {b: v for b, v in per.items() if v is not None}
        over = {b: v for b, v in per.items() if v > XFER_BENCH_TARGET}
        worst_b = max(per, key=lambda b: per[b])
        print(f"  {name} MAE {fmt_mae(m)} (<= {XFER_MAE_TARGET:.0%}): {verdict(m <= XFER_MAE_TARGET)}; "
              f"benchmarks above {XFER_BENCH_TARGET:.0%}: {len(over)} of {len(per)} "
              f"(worst {worst_b} {fmt_mae(per[worst_b])}): {verdict(not over)}")


def write_files(rows: list[CalRow], out: Path, table: Table = TABLES["calibration"]) -> Path:
    out.mkdir(exist_ok=True)
    path = out / f"{table.stem}.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "dpus", "size", "hw_kernel_ms", "model_kernel_ms", "err_kernel",
                    "hw_cpu_dpu_ms", "model_cpu_dpu_ms", "err_cpu_dpu", "hw_dpu_cpu_ms",
                    "model_dpu_cpu_ms", "err_dpu_cpu", "hw_inter_dpu_ms", "launches",
                    "cycles", "cpu_dpu_calls", "cpu_dpu_bytes", "dpu_cpu_calls", "dpu_cpu_bytes",
                    "cpu_dpu_mux", "dpu_cpu_mux", "check", "failure", "wall_s"])
        for r in rows:
            def g(v):
                return "" if v is None else f"{v:.6g}"
            w.writerow([r.bench, r.dpus, r.size, r.hw_kernel, g(r.model_kernel), g(r.err_kernel),
                        r.hw_c2d, g(r.model_c2d), g(r.err_c2d), r.hw_d2c, g(r.model_d2c),
                        g(r.err_d2c), r.hw_inter, r.launches, r.cycles, g(r.c2d_calls),
                        g(r.c2d_bytes), g(r.d2c_calls), g(r.d2c_bytes), g(r.c2d_mux),
                        g(r.d2c_mux), r.verified, r.failure,
                        f"{r.wall_s:.1f}"])
    with open(out / f"{table.stem}.json", "w") as f:
        json.dump([dict(asdict(r), err_kernel=r.err_kernel, err_cpu_dpu=r.err_c2d,
                        err_dpu_cpu=r.err_d2c) for r in rows], f, indent=1)
    return path
