"""The bus model of bench/fidelity/transfer_floor.py: crates/machine/src/bus.rs in Python, replayed
over the transfers a fidelity table's runs made.

`run.py --prim-only` runs every row with OPENPIM_XFER_LOG, so out/xfer/<table>/<row>.log holds
each rank operation of each transfer as the bus model saw it (direction, kind, bytes per DPU,
DPUs of the rank, ranks and bytes of the whole call, whether it paid the MRAM mux switch, the
measured host interleaving). A program's calls do not depend on the transfer model, so these
logs give what any constants of the model would charge on the row; the replay of the profile's
own constants reproduces the run's CPU-DPU and DPU-CPU phases (checked by `--check`).
"""
from __future__ import annotations

import collections
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

D = 64  # DPUs per rank

# Constants a fit may change, with the profile section each lives in.
FITTED = {"cpu_dpu_rank_fraction": "bus", "cpu_dpu_cached_speedup": "bus",
          "cpu_dpu_call_dpu_ns": "bus", "dpu_cpu_call_dpu_ns": "bus", "mux_switch_ns": "launch"}


@dataclass(frozen=True)
class Bus:
    """The `[bus]` figures and `[launch] mux_switch_ns` the replay needs (a profile's)."""
    cpu_dpu_call_ns: float
    dpu_cpu_call_ns: float
    cpu_dpu_call_rank_ns: float
    dpu_cpu_call_rank_ns: float
    cpu_dpu_serial_gbps: float
    dpu_cpu_serial_gbps: float
    cpu_dpu_rank_gbps: float
    dpu_cpu_rank_gbps: float
    broadcast_rank_gbps: float
    rank_scaling_base_gbps: float
    rank_scaling_step_gbps: float
    rank_scaling_max_ranks: float
    host_channels: float
    channel_gbps: float
    cpu_dpu_call_dpu_ns: float = 0.0
    dpu_cpu_call_dpu_ns: float = 0.0
    cpu_dpu_rank_fraction: float = 1.0
    dpu_cpu_rank_fraction: float = 1.0
    host_cache_bytes: float = 0.0
    cpu_dpu_cached_speedup: float = 1.0
    mux_switch_ns: float = 0.0

    @staticmethod
    def load(profile: Path) -> "Bus":
        t = tomllib.loads(profile.read_text())
        names = Bus.__dataclass_fields__.keys()
        kw = {k: float(v) for k, v in t["bus"].items() if k in names}
        kw["mux_switch_ns"] = float(t.get("launch", {}).get("mux_switch_ns", 0))
        return Bus(**kw)

    def with_(self, **kw: float) -> "Bus":
        return replace(self, **kw)


@dataclass
class Op:
    rank: int
    kind: str  # serial / parallel / broadcast
    to_dpu: bool
    n: int  # bytes per DPU
    k: int  # DPUs of the rank
    ranks: int  # ranks of the call
    call_bytes: int
    mux: bool
    host_ns: int  # measured host interleaving


@dataclass
class LoggedRow:
    """One table row's transfers, grouped: (count, the rank operations of one call)."""
    calls: dict[bool, list[tuple[int, tuple[Op, ...]]]] = field(default_factory=dict)
    charged: dict[bool, float] = field(default_factory=dict)  # ns the run charged


def read_log(path: Path) -> LoggedRow:
    """Reads an OPENPIM_XFER_LOG file: the rank operations of each call (same process, same
    issue time and direction), identical calls counted once."""
    groups: dict[tuple, list[Op]] = collections.defaultdict(list)
    charged = {True: 0.0, False: 0.0}
    per_call: dict[tuple, dict[int, int]] = collections.defaultdict(lambda: collections.defaultdict(int))
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split()
        pid, rank, at, direction, kind = f[0], int(f[1]), int(f[2]), f[3], f[4]
        n, k, ranks, call_bytes, mux, _inter, mod, host, d = (int(x) for x in f[5:14])
        to = direction == "to"
        # The interleaving only matters when it was longer than the model's time; dropping it
        # otherwise lets identical calls be counted once.
        groups[(pid, at, to)].append(Op(rank, kind, to, n, k, ranks, call_bytes, bool(mux),
                                        host if host >= mod else 0))
        per_call[(pid, at, to)][rank] += d
    for key, ranks_ns in per_call.items():
        charged[key[2]] += max(ranks_ns.values())
    sig: collections.Counter = collections.Counter()
    for key, ops in groups.items():
        sig[(key[2], tuple(sorted((o.rank, o.kind, o.n, o.k, o.ranks, o.call_bytes, o.mux, o.host_ns)
                                  for o in ops)))] += 1
    row = LoggedRow(calls={True: [], False: []}, charged=charged)
    for (to, ops), count in sig.items():
        row.calls[to].append((count, tuple(Op(r, kd, to, n, k, R, cb, mx, h)
                                           for r, kd, n, k, R, cb, mx, h in ops)))
    return row


def _rate(b1: float, full: float, k: int) -> float:
    """A rank's rate with k DPUs: one DPU at b1, each further one adding the shared cost that
    makes a full rank reach `full` (bus.rs)."""
    c = max((D / full - 1.0 / b1) / (D - 1), 0.0)
    return k / (1.0 / b1 + (k - 1) * c)


def op_ns(b: Bus, o: Op) -> float:
    """What the bus model charges one rank operation (bus.rs `rank_in_call_ns`, with the mux
    switch and the measured interleaving as timeline.rs adds them)."""
    if o.n == 0 or o.k == 0:
        return 0.0
    ranks = max(o.ranks, 1)
    if o.to_dpu:
        call_fixed = b.cpu_dpu_call_ns + (ranks - 1) * b.cpu_dpu_call_rank_ns
        b1 = b.cpu_dpu_serial_gbps
        full = b.broadcast_rank_gbps if o.kind == "broadcast" else b.cpu_dpu_rank_gbps * b.cpu_dpu_rank_fraction
        per_dpu = b.cpu_dpu_call_dpu_ns
    else:
        call_fixed = b.dpu_cpu_call_ns + (ranks - 1) * b.dpu_cpu_call_rank_ns
        b1, per_dpu = b.dpu_cpu_serial_gbps, b.dpu_cpu_call_dpu_ns
        full = b.dpu_cpu_rank_gbps * b.dpu_cpu_rank_fraction
    serial = o.kind == "serial"
    counted = 1 if serial else o.k
    host_bytes = max(o.call_bytes, o.n) if o.kind == "parallel" else o.n
    cached = o.to_dpu and b.host_cache_bytes > 0 and host_bytes <= b.host_cache_bytes
    speedup = b.cpu_dpu_cached_speedup if cached else 1.0
    c = max((D / full - 1.0 / b1) / (D - 1), 0.0)
    t = o.n / b1 + o.n * (0 if serial else o.k - 1) * c
    own = call_fixed + counted * per_dpu + math.ceil(t / speedup)
    g = lambda r: b.rank_scaling_base_gbps + b.rank_scaling_step_gbps * min(r, b.rank_scaling_max_ranks)
    limit = min(full * g(ranks) / g(1), b.host_channels * b.channel_gbps) * speedup
    bound = call_fixed + math.ceil(o.call_bytes / limit) if o.call_bytes else 0.0
    return (b.mux_switch_ns if o.mux else 0.0) + max(own, bound, o.host_ns)


def row_ns(b: Bus, row: LoggedRow, to_dpu: bool) -> float:
    """A row's phase (CPU-DPU when `to_dpu`), ns over the whole run: each call takes its
    slowest rank, calls one after the other."""
    total = 0.0
    for count, ops in row.calls[to_dpu]:
        per_rank: dict[int, float] = collections.defaultdict(float)
        for o in ops:
            per_rank[o.rank] += op_ns(b, o)
        total += count * max(per_rank.values())
    return total


def nelder_mead(f, x0: list[float], iters: int = 300, step: float = 0.3) -> tuple[list[float], float]:
    """Minimises f from x0 (a small Nelder-Mead: no SciPy needed)."""
    pts = [list(x0)] + [[v + (step if j == i else 0.0) for j, v in enumerate(x0)] for i in range(len(x0))]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(len(pts)), key=lambda i: vals[i])
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        cen = [sum(p[j] for p in pts[:-1]) / (len(pts) - 1) for j in range(len(x0))]
        refl = [c + (c - w) for c, w in zip(cen, pts[-1])]
        fr = f(refl)
        if fr < vals[0]:
            exp = [c + 2 * (c - w) for c, w in zip(cen, pts[-1])]
            fe = f(exp)
            pts[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(cen, pts[-1])]
            fc = f(con)
            if fc < vals[-1]:
                pts[-1], vals[-1] = con, fc
            else:
                pts = [pts[0]] + [[a + 0.5 * (p - a) for a, p in zip(pts[0], q)] for q in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    i = min(range(len(pts)), key=lambda i: vals[i])
    return pts[i], vals[i]


def self_check(bus: Bus) -> None:
    """The hand-computed figures of bus.rs's documentation example (32 MB and 1 MB copied to one
    DPU with the default profile), so that this copy cannot drift from the Rust model unseen."""
    big = op_ns(bus, Op(0, "serial", True, 32_000_000, 1, 1, 32_000_000, False, 0))
    small = op_ns(bus, Op(0, "serial", True, 1_000_000, 1, 1, 1_000_000, False, 0))
    assert (big, small) == (72_000 + 96_969_697, 72_000 + 1_538_225), (big, small)
