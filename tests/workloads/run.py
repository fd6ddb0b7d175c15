#!/usr/bin/env python3
"""Tests of the scalability-study workloads (workloads/): every workload against its CPU
reference at small sizes, run on the emulator as built by their own Makefiles.

- embedding lookup: every partitioning (row, col, table, cr, tr), INT32 and FP32, skewed
  lookups, uneven row blocks, the end-to-end run with the MLPs: the PIM output against NumPy
  (the tables and lookups regenerated here from the same generator), the host program's own
  check, and the checksum of the OpenMP CPU baseline;
- NTT: radix 2, 4 and 16 at several tasklet counts against the naive O(N^2) transform;
  2-, 3- and 4-step hierarchical NTTs over DPUs (model and hybrid parallelism), steps of
  different sizes (--sizes, up to 4,096-point vectors), the inverse
  NTT, polynomial add and multiply, against the O(N^2) transform or the fast CPU NTT, and the
  CPU baseline's checksum;
- the exchange switch and bad options: exact error messages and exit status 2.

    tests/workloads/run.py            prints PASS/FAIL per case, exits 1 on any failure
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EMB = ROOT / "workloads" / "embedding"
NTT = ROOT / "workloads" / "ntt"
ENV = dict(os.environ)
ENV["PATH"] = f"{ROOT / 'sdk' / 'bin'}:{ENV.get('PATH', '')}"
for k in ("OPENPIM_REPORT", "OPENPIM_TRACE"):
    ENV.pop(k, None)

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function (workloads/common/study.h, study_next)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def hash3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    a, b, c = (np.asarray(x, dtype=np.uint64) for x in (a, b, c))
    with np.errstate(over="ignore"):
        s = (a * np.uint64(0x100000001B3)) ^ (b << np.uint64(21)) ^ (c << np.uint64(42)) ^ c
        return _mix(s + GOLDEN)


def lookups(tables: int, batch: int, pooling: int, biased: int, rows: int, seed: int) -> np.ndarray:
    """emb_lookups: the k-th draw of the generator is mix(seed + (k + 1) * golden)."""
    n = tables * batch * pooling
    k = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        draws = _mix(np.uint64(seed) + k * GOLDEN)
    hot = max(1, rows // 64)
    bound = np.where(np.arange(n) % pooling < biased, hot, rows).astype(np.uint64)
    idx = ((draws >> np.uint64(32)) * bound) >> np.uint64(32)
    return idx.reshape(tables, batch, pooling)


def numpy_embedding(cfg: dict[str, int | str]) -> np.ndarray:
    """The pooled output (tables x batch x dim), as the 32-bit words the program dumps."""
    t, b, p, d = (int(cfg[k]) for k in ("tables", "batch", "pooling", "dim"))
    idx = lookups(t, b, p, int(cfg.get("biased", 0)), int(cfg["rows"]), int(cfg.get("seed", 1)))
    tt = np.arange(t)[:, None, None, None]
    cols = np.arange(d)[None, None, None, :]
    vals = (hash3(tt, idx[..., None], cols) % np.uint64(33)).astype(np.int64) - 16
    if cfg.get("type") == "fp":
        out = (vals.astype(np.float32) / np.float32(8)).sum(axis=2, dtype=np.float32)
        return out.astype(np.float32).view(np.uint32)
    return vals.sum(axis=2).astype(np.int32).view(np.uint32)


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600)


def checksum(out: str) -> str:
    for line in out.splitlines():
        if line.startswith("checksum "):
            return line.split()[1]
    return "missing"


FAILED: list[str] = []


def report(name: str, ok: bool, detail: str = "") -> None:
    print(f"{'PASS' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}")
    if not ok:
        FAILED.append(name)


def embedding_case(name: str, cfg: dict[str, int | str]) -> None:
    args = [x for k, v in cfg.items() for x in ((f"--{k}",) if v == "" else (f"--{k}", str(v)))]
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "out.bin"
        pim = run(["./bin/host", *args, "--dump", str(dump)], EMB)
        if pim.returncode != 0 or "OK embedding" not in pim.stdout:
            report(name, False, f"host exit {pim.returncode}: {pim.stdout[-400:]} {pim.stderr[-400:]}")
            return
        got = np.fromfile(dump, dtype=np.uint32)
    want = numpy_embedding(cfg).ravel()
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = int(np.sum(got != want)) if got.shape == want.shape else -1
        report(name, False, f"{bad} values differ from NumPy")
        return
    cpu = run(["./bin/cpu", *args, "--reps", "1"], EMB)
    if cpu.returncode != 0 or checksum(cpu.stdout) != checksum(pim.stdout):
        report(name, False, f"CPU baseline checksum {checksum(cpu.stdout)} != PIM {checksum(pim.stdout)}")
        return
    if "mlp" in cfg and _score(cpu.stdout) != _score(pim.stdout):
        report(name, False, f"MLP scores differ: CPU {_score(cpu.stdout)} PIM {_score(pim.stdout)}")
        return
    report(name, True)


def _score(out: str) -> str:
    for line in out.splitlines():
        if "score sum" in line:
            return line.rsplit(" ", 1)[1]
    return "missing"


def ntt_case(name: str, args: list[str], verify: str = "fast") -> None:
    pim = run(["./bin/host", *args, "--verify", verify], NTT)
    if pim.returncode != 0 or "OK ntt" not in pim.stdout:
        report(name, False, f"host exit {pim.returncode}: {pim.stdout[-400:]} {pim.stderr[-400:]}")
        return
    cpu = run(["./bin/cpu", *args, "--reps", "1"], NTT)
    if cpu.returncode != 0 or checksum(cpu.stdout) != checksum(pim.stdout):
        report(name, False, f"CPU baseline checksum {checksum(cpu.stdout)} != PIM {checksum(pim.stdout)}")
        return
    report(name, True)


def exchange_case(name: str, args: list[str], exchanges: int) -> None:
    """The host-mediated transposes are reported as inter-DPU regions (<openpim.h>)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(ENV, OPENPIM_REPORT=f"{tmp}/run.json")
        r = subprocess.run(["./bin/host", *args], cwd=NTT, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            report(name, False, f"host exit {r.returncode}: {r.stderr[-400:]}")
            return
        rep = json.loads(Path(f"{tmp}/run.json").read_text())
    regions = rep.get("inter_dpu", [])
    ok = (len(regions) == exchanges and all(x["path"] == "host" for x in regions)
          and rep["phases"]["inter_dpu_ns"] > 0 and len(rep["launches"]) == exchanges + 1)
    report(name, ok, f"{len(regions)} inter-DPU regions (wanted {exchanges}), inter_dpu_ns "
           f"{rep['phases']['inter_dpu_ns']}, {len(rep['launches'])} launches")


def links_case(name: str, args: list[str], cwd: Path = NTT, primitive: str = "alltoall") -> None:
    """--exchange interconnect on a profile with what-if links: the collective goes over them."""
    with tempfile.TemporaryDirectory() as tmp:
        prof = Path(tmp) / "links.toml"
        prof.write_text((ROOT / "profiles" / "upmem-v1a.toml").read_text()
                        + '\n[links]\nscope = "ranks"\nranks_per_group = 4\nlink_gbps = 2.8\n')
        env = dict(ENV, OPENPIM_REPORT=f"{tmp}/run.json", UPMEM_PROFILE_BASE=f"hardware={prof}")
        r = subprocess.run(["./bin/host", *args, "--exchange", "interconnect"], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or f"OK {cwd.name}" not in r.stdout:
            report(name, False, f"host exit {r.returncode}: {r.stdout[-300:]} {r.stderr[-300:]}")
            return
        rep = json.loads(Path(f"{tmp}/run.json").read_text())
    paths = [x["path"] for x in rep.get("inter_dpu", []) if x["primitive"] == primitive]
    ok = len(paths) == 1 and paths[0].startswith("links") and rep["inter_dpu"][-1]["link_ns"] > 0
    report(name, ok, f"{primitive} paths {paths}")


def error_case(name: str, cwd: Path, args: list[str], message: str) -> None:
    r = run(["./bin/host", *args], cwd)
    ok = r.returncode == 2 and message in r.stderr
    report(name, ok, f"exit {r.returncode}, stderr {r.stderr.strip()!r}, wanted {message!r}")


def main() -> int:
    tasklets = [1, 7, 16, 24]
    for d in (EMB, NTT):
        subprocess.run([str(ROOT / "scripts/dpu-toolchain.sh"), "fresh", str(d)], check=True)
        r = run(["make", "-s"], d)
        if r.returncode != 0:
            print(f"FAIL build {d.name}: {r.stdout}{r.stderr}")
            return 1
    r = run(["make", "-s", *[f"bin/ntt_dpu_{t}" for t in tasklets]], NTT)
    r2 = run(["make", "-s", "bin/emb_dpu_11"], EMB)
    if r.returncode or r2.returncode:
        print(f"FAIL build tasklet variants: {r.stderr}{r2.stderr}")
        return 1

    base: dict[str, int | str] = {"tables": 4, "rows": 1000, "dim": 12, "batch": 24, "pooling": 9}
    for part, dpus, extra in [
        ("row", 6, {}),
        ("col", 4, {}),
        ("table", 4, {}),
        ("cr", 12, {"col-blocks": 3}),
        ("tr", 8, {"table-groups": 2}),
    ]:
        for typ in ("int", "fp"):
            cfg = {**base, "part": part, "dpus": dpus, "type": typ, **extra}
            embedding_case(f"embedding {part} {typ} ({dpus} DPUs)", cfg)
    embedding_case(
        "embedding row fp skewed 48:16, 11 tasklets",
        {**base, "tables": 1, "rows": 4096, "pooling": 64, "biased": 48, "part": "row",
         "dpus": 64, "type": "fp", "tasklets": 11},
    )
    embedding_case(
        "embedding cr odd column blocks (dim 6 / 6)",
        {**base, "dim": 6, "part": "cr", "dpus": 12, "col-blocks": 6, "type": "int"},
    )
    # The row blocks' partial sums reduced by PID-Comm's Reduce instead of by the host.
    for part, dpus, extra in [("row", 64, {}), ("cr", 64, {"col-blocks": 4}), ("tr", 128, {"table-groups": 2})]:
        embedding_case(f"embedding {part} int, PID-Comm reduce on {dpus} DPUs",
                       {**base, "rows": 4096, "dim": 16, "part": part, "dpus": dpus, "type": "int",
                        "exchange": "pidcomm", **extra})
    embedding_case(
        "embedding end-to-end with MLPs (tr)",
        {**base, "part": "tr", "dpus": 4, "type": "int", "mlp": ""},
    )

    for radix in (2, 4, 16):
        for t in tasklets:
            ntt_case(f"ntt 256-point radix {radix}, {t} tasklets",
                     ["--n", "256", "--radix", str(radix), "--tasklets", str(t)], "naive")
    ntt_case("ntt 2D 16x16 on 4 DPUs", ["--n", "16", "--steps", "2", "--dpus", "4"], "naive")
    ntt_case("ntt 3D 8^3 radix 2, 3 limbs, 8 DPUs",
             ["--n", "8", "--steps", "3", "--radix", "2", "--instances", "3", "--dpus", "8"], "naive")
    ntt_case("ntt 4D 4^4 radix 4, hybrid 2 limbs on 128 DPUs",
             ["--n", "4", "--steps", "4", "--radix", "4", "--instances", "2", "--dpus", "128"], "naive")
    ntt_case("intt 2D 16x16, 2 limbs on 32 DPUs (hybrid)",
             ["--op", "intt", "--n", "16", "--steps", "2", "--instances", "2", "--dpus", "32"], "naive")
    ntt_case("ntt 2D 256x256 (65,536 points) on 64 DPUs",
             ["--n", "256", "--steps", "2", "--dpus", "64"])
    ntt_case("ntt 2D 64x64, 8 limbs, PID-Comm all-to-all on 64 DPUs",
             ["--n", "64", "--steps", "2", "--radix", "4", "--instances", "8", "--dpus", "64", "--exchange", "pidcomm"])
    ntt_case("ntt 2D 16x16, 16 limbs, PID-Comm all-to-all in 8 groups of 16 (hybrid, 128 DPUs)",
             ["--n", "16", "--steps", "2", "--instances", "16", "--dpus", "128", "--exchange", "pidcomm"], "naive")
    ntt_case("intt 2D 64x64, 2 limbs, PID-Comm all-to-all on 64 DPUs",
             ["--op", "intt", "--n", "64", "--steps", "2", "--radix", "2", "--instances", "2", "--dpus", "64",
              "--exchange", "pidcomm"])
    # --sizes: a size per step (Fig. 13b), against the naive transform where N allows it
    ntt_case("ntt 2D 16x64 (unequal steps) radix 4 on 4 DPUs",
             ["--sizes", "16x64", "--radix", "4", "--dpus", "4"], "naive")
    ntt_case("intt 2D 64x16 radix 2, 2 limbs on 32 DPUs (hybrid in the first step only)",
             ["--op", "intt", "--sizes", "64x16", "--radix", "2", "--instances", "2", "--dpus", "32"], "naive")
    ntt_case("ntt 3D 4x8x16 radix 2, 3 limbs on 8 DPUs",
             ["--sizes", "4x8x16", "--radix", "2", "--instances", "3", "--dpus", "8", "--tasklets", "7"], "naive")
    ntt_case("ntt 2D 16x256 on 64 DPUs (the 256-point step keeps 16 DPUs busy, 48 idle)",
             ["--sizes", "16x256", "--radix", "4", "--dpus", "64"], "naive")
    ntt_case("ntt one 4,096-point step radix 16 on 1 DPU (the largest vector in WRAM)",
             ["--n", "4096", "--radix", "16", "--tasklets", "24"], "naive")
    ntt_case("intt 2D 4096x16 (65,536 points) radix 4 on 256 DPUs, 24 tasklets (output twiddles streamed)",
             ["--op", "intt", "--sizes", "4096x16", "--radix", "4", "--dpus", "256", "--tasklets", "24"])
    ntt_case("ntt 2D 64x1024, 2 limbs, radix 4 on 128 DPUs",
             ["--sizes", "64x1024", "--radix", "4", "--instances", "2", "--dpus", "128"])
    links_case("ntt 2D over what-if links (interconnect profile)",
               ["--n", "64", "--steps", "2", "--radix", "4", "--instances", "8", "--dpus", "128"])
    ntt_case("poly add, 3 limbs of 4,096", ["--op", "add", "--n", "64", "--steps", "2", "--instances", "3", "--dpus", "16"])
    ntt_case("poly mul, 3 limbs of 4,096, hybrid on 192 DPUs",
             ["--op", "mul", "--n", "64", "--steps", "2", "--instances", "3", "--dpus", "192"])

    exchange_case("ntt 2D: one host transpose reported as inter-DPU time", ["--n", "16", "--steps", "2", "--dpus", "4"], 1)
    exchange_case("ntt 4D: three host transposes reported as inter-DPU time",
                  ["--n", "4", "--steps", "4", "--radix", "4", "--dpus", "16"], 3)
    exchange_case("ntt 2D 16x64: one host transpose reported as inter-DPU time",
                  ["--sizes", "16x64", "--radix", "4", "--dpus", "4"], 1)
    links_case("embedding row-wise --exchange interconnect: the reduce-scatter goes over the links",
               ["--part", "row", "--dpus", "256", "--rows", "4096", "--batch", "16"], EMB, "reduce_scatter")
    error_case("embedding --exchange pidcomm with fp", EMB, ["--exchange", "pidcomm", "--dpus", "64", "--type", "fp"],
               "error: --exchange pidcomm reduces integers (--type int): PID-Comm has no float sum")
    error_case("embedding --exchange pidcomm column-wise", EMB, ["--exchange", "pidcomm", "--dpus", "64", "--part", "col"],
               "error: --exchange pidcomm reduces the partial sums of row blocks (--part row, cr or tr)")
    error_case("embedding --exchange pidcomm on part of a rank", EMB, ["--exchange", "pidcomm", "--dpus", "32"],
               "error: --exchange pidcomm needs whole ranks (--dpus a multiple of 64)")
    error_case("embedding --exchange pidcomm, 4 row blocks per table group", EMB,
               ["--exchange", "pidcomm", "--dpus", "64", "--part", "tr", "--tables", "16", "--table-groups", "16"],
               "error: --exchange pidcomm needs row blocks a multiple of 8, or 2 or 4 with row x column blocks >= 8")
    error_case("embedding --exchange bogus", EMB, ["--exchange", "bogus"],
               "error: --exchange must be host, pidcomm or interconnect, got 'bogus'")
    error_case("ntt --exchange pidcomm on a 4D NTT", NTT, ["--exchange", "pidcomm", "--n", "4", "--steps", "4", "--radix", "4", "--dpus", "64"],
               "error: --exchange pidcomm is the transpose of a 2-step NTT (--op ntt|intt --steps 2)")
    error_case("ntt --exchange pidcomm on part of a rank", NTT, ["--exchange", "pidcomm", "--n", "16", "--steps", "2", "--dpus", "16"],
               "error: --exchange pidcomm needs whole ranks (--dpus a multiple of 64)")
    error_case("ntt --exchange bogus", NTT, ["--exchange", "bogus"],
               "error: --exchange must be host, pidcomm or interconnect, got 'bogus'")
    error_case("embedding unknown option", EMB, ["--bogus", "1"],
               "error: unknown option '--bogus'; valid options: --help, --tables")
    error_case("embedding col beyond dim", EMB, ["--part", "col", "--dim", "8", "--dpus", "16"],
               "error: --part col: dim 8 cannot be split into 16 column blocks")
    error_case("ntt radix 16 on 64 points", NTT, ["--n", "64", "--radix", "16"],
               "error: a 64-point step is not a power of radix 16")
    error_case("ntt DPUs that do not fit the vectors", NTT, ["--n", "16", "--steps", "2", "--dpus", "3"],
               "error: 3 DPUs for 1 instance(s) of 16 vectors per step")
    error_case("ntt --sizes with a step that is not a power of the radix", NTT, ["--sizes", "64x1024", "--radix", "16"],
               "error: a 64-point step is not a power of radix 16")
    error_case("ntt --sizes with a step larger than WRAM holds", NTT, ["--sizes", "8x8192", "--radix", "2"],
               "error: --sizes: step 2 has 8192 points; each step must be a power of two from 2 to 4096")
    error_case("ntt --sizes with --n", NTT, ["--sizes", "16x16", "--n", "16"],
               "error: --sizes gives every step's size: do not combine it with --n or --steps")
    error_case("ntt --sizes beyond 2^17 points", NTT, ["--sizes", "256x1024", "--radix", "4"],
               "error: --sizes 256x1024: N = 256x1024 = 2^18 points; at most 2^17")
    error_case("ntt --sizes malformed", NTT, ["--sizes", "16x"],
               "error: --sizes wants step sizes separated by 'x' (e.g. 64x1024), got '16x'")
    error_case("ntt --sizes with --op add", NTT, ["--op", "add", "--sizes", "64x64"],
               "error: --sizes is for --op ntt|intt")
    error_case("ntt --exchange pidcomm with unequal steps", NTT,
               ["--exchange", "pidcomm", "--sizes", "16x256", "--radix", "4", "--dpus", "64"],
               "error: --exchange pidcomm needs two steps of the same size (--n and --steps 2, not --sizes)")
    print(f"{'FAIL' if FAILED else 'OK'}: {len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
