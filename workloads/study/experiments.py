"""The study's experiments: each runs the workloads for one of the seed's figures and returns
its rows (one dict per measured point; the CSV columns). Sizes come from `Sizes` (quick or
full); PIM results are checked against the CPU baseline of the same configuration."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

from .runner import PHASES, CpuRun, PimRun, Runner

Row = dict[str, Any]


@dataclass(frozen=True)
class Sizes:
    """Problem sizes and sweeps. `full` follows the seed's configurations (the production
    models scaled by ROW_SCALE); `quick` keeps every experiment but shrinks it for CI."""

    name: str
    batch: int
    # Fig. 5: one DPU, dim 64, H 1k (each sweep varies one of them)
    tasklets: tuple[int, ...]
    dims_1dpu: tuple[int, ...]
    heights_1dpu: tuple[int, ...]
    poolings_1dpu: tuple[int, ...]
    # Figs. 6-9: one table, dim 64, H rows, pooling 32
    rows: int
    col_dpus: tuple[int, ...]
    row_dpus: tuple[int, ...]
    skews: tuple[int, ...]
    poolings_64: tuple[int, ...]
    intfp_dpus: tuple[int, ...]
    # Fig. 10: a table of big_rows x 64 (128 MB in full), 4 .. max DPUs
    big_rows: int
    big_dpus: tuple[int, ...]
    big_hybrid_dpus: tuple[int, ...]
    # Fig. 11: RM1-RM3 with rows / row_scale, batch 16
    row_scale: int
    rm_dpus: int
    rm2_batches: tuple[int, ...]
    # Figs. 12-16: NTT
    ntt_tasklets: tuple[int, ...]
    ntt_n: int  # points per step of the 2D NTT (N = n^2)
    ntt_radix: int
    ntt_4d_n: int
    ntt_4d_radix: int
    ntt_dpus: tuple[int, ...]
    ntt_2d_dpus: int
    ntt_4d_dpus: int
    # Fig. 13b: step sizes of the 2D NTT (same N, same DPUs as 13a's 2D), first step first
    ntt_2d_sizes: tuple[tuple[int, int], ...]
    ntt_2d_sizes_radix: int
    limbs: tuple[int, ...]
    limb_dpus: tuple[int, ...]
    ckks_limbs: int
    ckks_ext_limbs: int
    ckks_dpus: int
    # Fig. 18: scopes of the interconnect model (DPUs)
    scopes: tuple[int, ...]
    # exchange paths of the 2D NTT (host, PID-Comm collective, what-if links)
    exchange_dpus: tuple[int, ...]


FULL = Sizes(
    name="full", batch=512,
    tasklets=(1, 2, 4, 6, 8, 10, 11, 12, 14, 16, 20, 24), dims_1dpu=(4, 8, 16, 32, 64, 128),
    heights_1dpu=(1024, 4096, 16384, 65536, 131072), poolings_1dpu=(1, 2, 4, 8, 16, 32, 64, 128),
    rows=131072, col_dpus=(1, 2, 4, 8, 16, 32, 64), row_dpus=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    skews=(0, 16, 32, 48, 64), poolings_64=(1, 4, 16, 32, 64, 128), intfp_dpus=(1, 2, 4, 8, 16, 32, 64),
    big_rows=524288, big_dpus=(4, 8, 16, 32, 64, 128), big_hybrid_dpus=(256, 512, 1024, 2048),
    row_scale=1024, rm_dpus=1024, rm2_batches=(16, 32, 64, 128, 256),
    ntt_tasklets=tuple(range(1, 25)), ntt_n=256, ntt_radix=16, ntt_4d_n=16, ntt_4d_radix=16,
    ntt_dpus=(32, 64, 128, 256, 512, 1024, 2048), ntt_2d_dpus=256, ntt_4d_dpus=2048,
    ntt_2d_sizes=((256, 256), (64, 1024), (1024, 64), (16, 4096), (4096, 16)), ntt_2d_sizes_radix=4,
    limbs=(8, 16, 24, 32), limb_dpus=(256, 512, 1024, 2048),
    ckks_limbs=24, ckks_ext_limbs=8, ckks_dpus=2048, scopes=(8, 64, 256),
    exchange_dpus=(256, 512, 1024, 2048),
)

QUICK = Sizes(
    name="quick", batch=128,
    tasklets=(1, 4, 8, 11, 16, 24), dims_1dpu=(16, 64, 128), heights_1dpu=(1024, 16384),
    poolings_1dpu=(1, 4, 16, 64),
    rows=16384, col_dpus=(1, 4, 16, 64), row_dpus=(1, 4, 16, 64, 256),
    skews=(0, 32, 64), poolings_64=(4, 32, 128), intfp_dpus=(1, 8, 64),
    big_rows=32768, big_dpus=(4, 16, 64), big_hybrid_dpus=(256,),
    row_scale=16384, rm_dpus=64, rm2_batches=(16, 64),
    ntt_tasklets=(1, 4, 8, 11, 16, 24), ntt_n=64, ntt_radix=4, ntt_4d_n=8, ntt_4d_radix=2,
    ntt_dpus=(8, 64, 512), ntt_2d_dpus=64, ntt_4d_dpus=512,
    ntt_2d_sizes=((64, 64), (16, 256), (256, 16)), ntt_2d_sizes_radix=4,
    limbs=(8, 16), limb_dpus=(64, 512),
    ckks_limbs=8, ckks_ext_limbs=8, ckks_dpus=512, scopes=(8, 64, 256),
    exchange_dpus=(64, 512),
)

DIM = 64
POOLING = 32


def phase_cols(run: PimRun) -> Row:
    row: Row = {f"{p}_ns": run.phases[p] for p in PHASES}
    row["total_ns"] = run.total
    row["ipc"] = round(run.ipc, 4)
    return row


class Study:
    """Runs the experiments with one runner, caching the CPU baselines by configuration."""

    def __init__(self, runner: Runner, sizes: Sizes, log: Callable[[str], None]):
        self.r = runner
        self.s = sizes
        self.log = log
        self._cpu: dict[tuple[str, ...], CpuRun] = {}

    # -- embedding --------------------------------------------------------------------------

    def emb_args(self, **kw: Any) -> list[str]:
        cfg = {"tables": 1, "rows": 1024, "dim": DIM, "batch": self.s.batch, "pooling": 16, "part": "row",
               "dpus": 1, "type": "int"}
        cfg.update({k.replace("_", "-"): v for k, v in kw.items()})
        args: list[str] = []
        for k, v in cfg.items():
            args += [f"--{k}"] if v is True else [f"--{k}", str(v)]
        return args

    def emb_cpu(self, args: list[str]) -> CpuRun:
        key = ("embedding", *[a for i, a in enumerate(args) if not _dpu_only(args, i)])
        if key not in self._cpu:
            self._cpu[key] = self.r.cpu("embedding", list(key[1:]))
        return self._cpu[key]

    def emb(self, tasklets: int = 24, **kw: Any) -> tuple[PimRun, CpuRun]:
        args = self.emb_args(**kw)
        cpu = self.emb_cpu(args)
        t0 = time.monotonic()
        run = self.r.pim_checked("embedding", args, tasklets, cpu)
        self.log(f"  embedding {' '.join(args)} --tasklets {tasklets}: total {run.total / 1e6:.3f} ms "
                 f"(CPU {cpu.ns / 1e6:.3f} ms) [{time.monotonic() - t0:.1f} s]")
        return run, cpu

    def fig05(self) -> list[Row]:
        """One DPU, one table: the seed's defaults (dim 64, H 1k, T 24, P 16) with one of
        tasklets, dim, height, pooling varied. The MRAM bandwidth is estimated as the seed does:
        bytes the DMA engine moved / kernel time; kernel_norm is relative to the sweep's first
        (leftmost) point."""
        rows: list[Row] = []
        sweeps = (("tasklets", self.s.tasklets), ("dim", self.s.dims_1dpu), ("height", self.s.heights_1dpu),
                  ("pooling", self.s.poolings_1dpu))
        for sweep, values in sweeps:
            first = 0
            for v in values:
                cfg = {"tasklets": 24, "dim": DIM, "rows": 1024, "pooling": 16}
                cfg["rows" if sweep == "height" else sweep] = v
                run, _ = self.emb(tasklets=cfg["tasklets"], dim=cfg["dim"], rows=cfg["rows"], pooling=cfg["pooling"])
                first = first or run.phases["kernel"]
                rows.append({"sweep": sweep, "tasklets": cfg["tasklets"], "dim": cfg["dim"], "rows": cfg["rows"],
                             "pooling": cfg["pooling"], **phase_cols(run),
                             "kernel_norm": round(run.phases["kernel"] / first, 4),
                             "mram_gbps": round(run.dma_bytes / max(run.phases["kernel"], 1), 4)})
        return rows

    def _scaling(self, parts: dict[str, tuple[int, ...]], rows_: int, **kw: Any) -> list[Row]:
        out: list[Row] = []
        for part, dpus in parts.items():
            for d in dpus:
                extra = {"col_blocks": DIM} if part == "cr" else {}
                run, cpu = self.emb(part=part, dpus=d, rows=rows_, **extra, **kw)
                out.append({"part": part, "dpus": d, **kw, **phase_cols(run), "cpu_ns": cpu.ns,
                            "cpu_threads": cpu.threads})
        return out

    def fig06(self) -> list[Row]:
        return self._scaling({"col": self.s.col_dpus, "row": self.s.row_dpus}, self.s.rows, pooling=POOLING)

    def fig07(self) -> list[Row]:
        out: list[Row] = []
        for x in self.s.skews:
            for row in self._scaling({"col": (64,), "row": (64,)}, self.s.rows, pooling=64, biased=x):
                out.append(row)
        return out

    def fig08(self) -> list[Row]:
        out: list[Row] = []
        for p in self.s.poolings_64:
            out += self._scaling({"col": (64,), "row": (64,)}, self.s.rows, pooling=p)
        return out

    def fig09(self) -> list[Row]:
        out: list[Row] = []
        for typ in ("int", "fp"):
            out += self._scaling({"row": self.s.intfp_dpus}, self.s.rows, pooling=POOLING, type=typ)
        return out

    def fig10(self) -> list[Row]:
        parts = {"row": self.s.big_dpus + self.s.big_hybrid_dpus,
                 "col": tuple(d for d in self.s.big_dpus if d <= DIM),
                 "cr": tuple(d for d in self.s.big_dpus + self.s.big_hybrid_dpus if d > DIM)}
        return self._scaling(parts, self.s.big_rows, pooling=POOLING)

    RM = {"RM1": (10, 16 * 2**20, 80), "RM2": (40, 16 * 2**20, 80), "RM3": (5, 160 * 2**20, 20)}

    def rm_args(self, model: str, part: str, batch: int) -> dict[str, Any]:
        tables, rows_, pooling = self.RM[model]
        d = self.s.rm_dpus
        kw: dict[str, Any] = {"tables": tables, "rows": rows_ // self.s.row_scale, "dim": 32, "pooling": pooling,
                              "batch": batch, "part": part, "dpus": d}
        if part == "cr":
            kw["col_blocks"] = 32
        if part == "tr":
            kw["table_groups"] = math.gcd(tables, d)
        return kw

    def fig11(self) -> list[Row]:
        out: list[Row] = []
        for model in self.RM:
            for part in ("row", "cr", "tr"):
                for mlp in (False, True):
                    kw = self.rm_args(model, part, 16)
                    if mlp:
                        kw["mlp"] = True
                    run, cpu = self.emb(**kw)
                    out.append({"experiment": "models", "model": model, "part": part,
                                "end_to_end": int(mlp), "batch": 16, "dpus": kw["dpus"], **phase_cols(run),
                                "cpu_ns": cpu.ns, "speedup_vs_cpu": round(cpu.ns / run.total, 4)})
        for b in self.s.rm2_batches:
            for part in ("row", "cr", "tr"):
                run, cpu = self.emb(**self.rm_args("RM2", part, b))
                out.append({"experiment": "rm2_batch", "model": "RM2", "part": part, "end_to_end": 0,
                            "batch": b, "dpus": self.s.rm_dpus, **phase_cols(run), "cpu_ns": cpu.ns,
                            "speedup_vs_cpu": round(cpu.ns / run.total, 4)})
        return out

    # -- NTT --------------------------------------------------------------------------------

    def ntt(self, tasklets: int = 16, trace: bool = True, profile: str = "", **kw: Any) -> tuple[PimRun, CpuRun]:
        cfg: dict[str, Any] = {"n": 256, "steps": 1, "instances": 1, "dpus": 1, "radix": 16, "op": "ntt"}
        if "sizes" in kw:  # --sizes gives every step's size instead of --n and --steps
            del cfg["n"], cfg["steps"]
        cfg.update(kw)
        args = [x for k, v in cfg.items() for x in (f"--{k}", str(v))]
        key = ("ntt", *[a for i, a in enumerate(args) if not _dpu_only(args, i)])
        if key not in self._cpu:
            self._cpu[key] = self.r.cpu("ntt", list(key[1:]))
        t0 = time.monotonic()
        run = self.r.pim_checked("ntt", [*args, "--verify", "fast"], tasklets, self._cpu[key], trace, profile)
        self.log(f"  ntt {' '.join(args)} --tasklets {tasklets}: total {run.total / 1e6:.3f} ms "
                 f"(CPU {self._cpu[key].ns / 1e6:.3f} ms) [{time.monotonic() - t0:.1f} s]")
        return run, self._cpu[key]

    def fig12(self) -> list[Row]:
        out: list[Row] = []
        for radix in (2, 4, 16):
            for t in self.s.ntt_tasklets:
                run, _ = self.ntt(tasklets=t, radix=radix, trace=False)
                groups = 256 // radix
                out.append({"radix": radix, "tasklets": t, "fragmentation": groups % t, **phase_cols(run)})
        return out

    def fig13(self) -> list[Row]:
        """(a) one NTT of N points as 2D and 4D; (b) the 2D NTT with other step sizes for its two
        steps (same N, same DPUs; radix ntt_2d_sizes_radix, which divides every size). kernel1_ns
        is the first step's launch (from the report's launches), kernel2_ns the rest of the
        kernel time (the second step of a 2D NTT); kernel_steps_ns lists every launch."""
        s = self.s
        out: list[Row] = []
        N = s.ntt_n ** 2
        dims4 = round(math.log(N, s.ntt_4d_n))
        runs: list[tuple[str, tuple[int, ...], int, int, dict[str, Any]]] = [
            ("a", (s.ntt_n,) * 2, s.ntt_radix, s.ntt_2d_dpus, {"n": s.ntt_n, "steps": 2}),
            ("a", (s.ntt_4d_n,) * dims4, s.ntt_4d_radix, s.ntt_4d_dpus, {"n": s.ntt_4d_n, "steps": dims4}),
        ]
        for sizes in s.ntt_2d_sizes:
            runs.append(("b", sizes, s.ntt_2d_sizes_radix, s.ntt_2d_dpus, {"sizes": "x".join(map(str, sizes))}))
        for panel, sizes, radix, d, shape in runs:
            run, cpu = self.ntt(**shape, radix=radix, dpus=d)
            steps = run.launch_ns()
            k1 = min(steps[0], run.phases["kernel"]) if steps else 0
            out.append({"panel": panel, "dims": len(sizes), "sizes": "x".join(map(str, sizes)),
                        "step_points": sizes[0], "N": N, "radix": radix, "dpus": d, **phase_cols(run),
                        "kernel1_ns": k1, "kernel2_ns": run.phases["kernel"] - k1,
                        "kernel_steps_ns": ";".join(map(str, steps)),
                        "inter_from_trace": int(run.inter_from_trace), "cpu_ns": cpu.ns})
        return out

    def fig14(self) -> list[Row]:
        s = self.s
        out: list[Row] = []
        v = s.ntt_n  # vectors per instance per step of a 2D NTT
        for d in s.ntt_dpus:
            run, cpu = self.ntt(n=s.ntt_n, steps=2, radix=s.ntt_radix, instances=8, dpus=d)
            out.append({"dpus": d, "parallelism": "model" if d <= v else "hybrid", "instances": 8,
                        **phase_cols(run), "inter_from_trace": int(run.inter_from_trace), "cpu_ns": cpu.ns})
        return out

    def fig15(self) -> list[Row]:
        s = self.s
        out: list[Row] = []
        for limbs in s.limbs:
            for d in s.limb_dpus:
                run, cpu = self.ntt(n=s.ntt_n, steps=2, radix=s.ntt_radix, instances=limbs, dpus=d)
                out.append({"limbs": limbs, "log_q_bits": 31 * limbs, "dpus": d, **phase_cols(run),
                            "inter_from_trace": int(run.inter_from_trace), "cpu_ns": cpu.ns})
        return out

    def fig16(self) -> list[Row]:
        s = self.s
        out: list[Row] = []
        ext = s.ckks_limbs + s.ckks_ext_limbs
        for op, limbs in (("add", s.ckks_limbs), ("mul", s.ckks_limbs), ("intt", s.ckks_limbs), ("ntt", ext)):
            run, cpu = self.ntt(op=op, n=s.ntt_n, steps=2, radix=s.ntt_radix, instances=limbs, dpus=s.ckks_dpus)
            out.append({"primitive": op, "limbs": limbs, "N": s.ntt_n ** 2, "dpus": s.ckks_dpus, **phase_cols(run),
                        "cpu_ns": cpu.ns, "speedup_vs_cpu": round(cpu.ns / run.total, 4)})
        return out

    def exchange(self) -> list[Row]:
        """Beyond the seed, both patterns through each exchange path. NTT (all-to-all): the 2D
        transpose through the host (as the seed), as a PID-Comm all-to-all (the DPUs pack and
        unpack, the library moves the chunks), and the same call over what-if DPU-to-DPU links.
        Embedding (reduction): the row blocks' partial sums read back and summed by the host
        (as the seed), reduced by PID-Comm's Reduce to the host, and reduce-scattered among the
        DPUs over the links, each DPU's share then read back. The links: a copy of the hardware
        profile with [links], groups of 4 ranks, 2.8 GB/s per DPU (the seed's Sec. 6)."""
        s = self.s
        links = self.r.links_profile()
        out: list[Row] = []
        ntt_size = f"16 NTTs of {s.ntt_n ** 2} points"
        emb_size = f"batch {s.batch}, {s.rows} x {DIM} int table, pooling {POOLING}"
        for d in s.exchange_dpus:
            for path in ("host", "pidcomm", "interconnect"):
                profile = links if path == "interconnect" else ""
                run, cpu = self.ntt(n=s.ntt_n, steps=2, radix=s.ntt_radix, instances=16, dpus=d, exchange=path,
                                    profile=profile)
                out.append({"workload": "ntt", "dpus": d, "exchange": path, "size": ntt_size,
                            "moved_by": "; ".join(run.collective_paths) or "host", **phase_cols(run), "cpu_ns": cpu.ns})
                args = self.emb_args(part="row", dpus=d, rows=s.rows, pooling=POOLING, exchange=path)
                cpu = self.emb_cpu(args)
                run = self.r.pim_checked("embedding", args, 24, cpu, profile=profile)
                self.log(f"  embedding {' '.join(args)}: total {run.total / 1e6:.3f} ms")
                out.append({"workload": "embedding", "dpus": d, "exchange": path, "size": emb_size,
                            "moved_by": "; ".join(run.collective_paths) or "host", **phase_cols(run), "cpu_ns": cpu.ns})
        return out

    # -- interconnect model (Fig. 18) ---------------------------------------------------------

    def fig18(self) -> tuple[list[Row], list[Row]]:
        """The seed's Sec. 6 model, fed with OpenPIM's measurements: row-partitioned lookups on
        S DPUs (every partial sum needs a global reduction). Host path: the partial sums cross
        the bus (the measured DPU-CPU time). Interconnect path: a reduction tree of log2(S)
        point-to-point hops at the link bandwidth, then 1/S of the bytes to the host. A
        fraction `ratio` of the reduction is global; host reduction compute is ignored, as in
        the seed."""
        inputs: list[Row] = []
        for scope in self.s.scopes:
            run, _ = self.emb(part="row", dpus=scope, rows=self.s.rows, pooling=POOLING)
            inputs.append({"scope_dpus": scope, **phase_cols(run),
                           "partial_bytes_per_dpu": self.s.batch * DIM * 4})
        curves: list[Row] = []
        for inp in inputs:
            for ratio in (0.0, 0.1, 0.25, 0.5, 0.75, 1.0):
                curves.append({"sweep": "ratio", "scope_dpus": inp["scope_dpus"], "ratio": ratio,
                               "link_gbps": 2.8, **interconnect_model(inp, ratio, 2.8)})
            for bw in (0.35, 0.7, 1.4, 2.1, 2.8, 3.5):
                curves.append({"sweep": "bandwidth", "scope_dpus": inp["scope_dpus"], "ratio": 0.5,
                               "link_gbps": bw, **interconnect_model(inp, 0.5, bw)})
        return inputs, curves


def interconnect_model(inp: Row, ratio: float, link_gbps: float) -> Row:
    """Performance (1 / time) of host communication and of the interconnect at `ratio`,
    normalised to host communication at ratio 1, and the interconnect's benefit."""
    s = inp["scope_dpus"]
    base = inp["kernel_ns"] + inp["cpu_dpu_ns"]
    host_xfer = inp["dpu_cpu_ns"]
    tree = math.log2(s) * inp["partial_bytes_per_dpu"] / link_gbps  # bytes / (GB/s) = ns
    t_host = base + ratio * host_xfer
    t_ic = base + ratio * (tree + host_xfer / s)
    ref = base + host_xfer
    return {"perf_host": round(ref / t_host, 4), "perf_interconnect": round(ref / t_ic, 4),
            "benefit": round(t_host / t_ic, 4)}


def _dpu_only(args: list[str], i: int) -> bool:
    """Whether args[i] is a PIM-only option or its value (the CPU baseline ignores them)."""
    pim_only = {"--dpus", "--part", "--col-blocks", "--table-groups", "--tasklets", "--exchange"}
    return args[i] in pim_only or (i > 0 and args[i - 1] in pim_only)
