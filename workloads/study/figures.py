"""One PNG per figure of the seed (Figs. 5-16 and 18), drawn from the experiments' rows
(which come from the JSON run reports). Times are shown in ms of virtual time for PIM and of
real time for the CPU baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .runner import PHASES  # noqa: E402

Row = dict[str, Any]
LABELS = {"cpu_dpu": "CPU-DPU", "kernel": "Kernel", "inter_dpu": "Inter-DPU", "dpu_cpu": "DPU-CPU",
          "host": "Host"}
COLORS = {"cpu_dpu": "#4e79a7", "kernel": "#f28e2b", "inter_dpu": "#e15759", "dpu_cpu": "#76b7b2",
          "host": "#9c9c9c"}


def ms(ns: float) -> float:
    return ns / 1e6


def stacked(ax: Any, rows: list[Row], labels: list[str], title: str, cpu_ns: float | None = None) -> None:
    """Stacked phase bars, one per row."""
    bottom = [0.0] * len(rows)
    x = range(len(rows))
    for p in PHASES:
        vals = [ms(r[f"{p}_ns"]) for r in rows]
        ax.bar(x, vals, bottom=bottom, label=LABELS[p], color=COLORS[p])
        bottom = [b + v for b, v in zip(bottom, vals)]
    if cpu_ns is not None:
        ax.axhline(ms(cpu_ns), color="k", ls="--", lw=1, label="CPU")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("time (ms)")
    ax.set_title(title, fontsize=9)


def save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sel(rows: Iterable[Row], **kw: Any) -> list[Row]:
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def fig05(rows: list[Row], path: Path) -> None:
    """The seed's Fig. 5: kernel time normalised to the sweep's leftmost point, with the DPU's
    IPC and the estimated MRAM bandwidth, for each of the four sweeps."""
    fig, axes = plt.subplots(1, 4, figsize=(19, 3.8))
    panels = (("a", "tasklets", "tasklets", "tasklets (T)"), ("b", "dim", "dim", "table dimension (dim)"),
              ("c", "height", "rows", "table height (H, rows)"), ("d", "pooling", "pooling", "pooling factor (P)"))
    for ax, (letter, sweep, key, label) in zip(axes, panels):
        rs = sorted(sel(rows, sweep=sweep), key=lambda r: r[key])
        xs = [r[key] for r in rs]
        ax.plot(xs, [r["kernel_norm"] for r in rs], "o-", color=COLORS["kernel"], label="kernel time (norm.)")
        ax.set_ylim(0, max(r["kernel_norm"] for r in rs) * 1.1 if rs else 1)
        ax.set_xlabel(label)
        ax.set_ylabel("kernel time (norm. to leftmost)")
        if sweep != "tasklets":
            ax.set_xscale("log", base=2)
        ax2 = ax.twinx()
        ax2.plot(xs, [r["ipc"] for r in rs], "s--", color="#59a14f", label="IPC")
        ax2.set_ylim(0, 1.05)
        ax2.set_ylabel("IPC (green) / MRAM GB/s (purple)", fontsize=8)
        ax3 = ax.twinx()
        ax3.spines["right"].set_position(("axes", 1.18))
        ax3.plot(xs, [r["mram_gbps"] for r in rs], "^:", color="#b07aa1", label="MRAM bandwidth")
        ax3.set_ylim(0, max([r["mram_gbps"] for r in rs] + [0.1]) * 1.1)
        ax3.tick_params(axis="y", colors="#b07aa1", labelsize=7)
        fixed = {"tasklets": "dim 64, H 1k, P 16", "dim": "T 24, H 1k, P 16", "height": "T 24, dim 64, P 16",
                 "pooling": "T 24, dim 64, H 1k"}[sweep]
        ax.set_title(f"Fig. 5{letter}: one DPU, {sweep} sweep ({fixed})", fontsize=8)
        if letter == "a":
            handles = [h for a_ in (ax, ax2, ax3) for h in a_.get_legend_handles_labels()[0]]
            ax.legend(handles, [str(h.get_label()) for h in handles], fontsize=6, loc="center right")
    save(fig, path)


def _norm_lines(ax: Any, rows: list[Row], key: str, parts: list[str], metric: str, title: str) -> None:
    for part in parts:
        rs = sorted(sel(rows, part=part), key=lambda r: r[key])
        if not rs:
            continue
        ax.plot([r[key] for r in rs], [ms(r[metric]) for r in rs], "o-", label=part)
    cpu = rows[0].get("cpu_ns") if rows else None
    if cpu and metric == "total_ns":
        ax.axhline(ms(cpu), color="k", ls="--", lw=1, label="CPU")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(key)
    ax.set_ylabel(f"{metric.replace('_ns', '')} time (ms)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def fig06(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    _norm_lines(axes[0], rows, "dpus", ["col", "row"], "kernel_ns", "Fig. 6a: kernel time")
    _norm_lines(axes[1], rows, "dpus", ["col", "row"], "total_ns", "Fig. 6b: total time (CPU dashed)")
    rs = sorted(rows, key=lambda r: (r["part"], r["dpus"]))
    stacked(axes[2], rs, [f"{r['part']} {r['dpus']}" for r in rs], "Fig. 6c: breakdown")
    axes[2].legend(fontsize=6)
    save(fig, path)


def _pair_bars(rows: list[Row], key: str, path: Path, title: str) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, metric in zip(axes, ("kernel_ns", "total_ns")):
        for i, part in enumerate(("col", "row")):
            rs = sorted(sel(rows, part=part), key=lambda r: r[key])
            xs = [j + (i - 0.5) * 0.4 for j in range(len(rs))]
            ax.bar(xs, [ms(r[metric]) for r in rs], width=0.4, label=part)
            ax.set_xticks(range(len(rs)))
            ax.set_xticklabels([str(r[key]) for r in rs])
        ax.set_xlabel(key)
        ax.set_ylabel(f"{metric.replace('_ns', '')} time (ms)")
        ax.set_title(f"{title}: {metric.replace('_ns', '')}", fontsize=9)
        ax.legend(fontsize=7)
    save(fig, path)


def fig07(rows: list[Row], path: Path) -> None:
    for r in rows:
        r["skew"] = f"{r['biased']}:{64 - r['biased']}"
    _pair_bars(rows, "biased", path, "Fig. 7: skew x:y (x of 64 lookups on one DPU), 64 DPUs")


def fig08(rows: list[Row], path: Path) -> None:
    _pair_bars(rows, "pooling", path, "Fig. 8: pooling factor, 64 DPUs")


def fig09(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, metric in zip(axes, ("kernel_ns", "total_ns")):
        for typ in ("int", "fp"):
            rs = sorted(sel(rows, type=typ), key=lambda r: r["dpus"])
            ax.plot([r["dpus"] for r in rs], [ms(r[metric]) for r in rs], "o-", label=f"PIM {typ.upper()}")
            if metric == "total_ns" and rs:
                ax.axhline(ms(rs[0]["cpu_ns"]), ls="--", lw=1, color="k" if typ == "int" else "grey",
                           label=f"CPU {typ.upper()}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("DPUs")
        ax.set_ylabel(f"{metric.replace('_ns', '')} time (ms)")
        ax.set_title(f"Fig. 9: INT vs FP, row-wise: {metric.replace('_ns', '')}", fontsize=9)
        ax.legend(fontsize=7)
    save(fig, path)


def fig10(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    rs = sorted([r for r in rows if r["part"] in ("row", "col") and r["dpus"] <= 128],
                key=lambda r: (r["part"], r["dpus"]))
    stacked(axes[0], rs, [f"{r['part']} {r['dpus']}" for r in rs], "Fig. 10a: breakdown, 4 .. 128 DPUs",
            rows[0]["cpu_ns"] if rows else None)
    axes[0].legend(fontsize=6)
    _norm_lines(axes[1], rows, "dpus", ["row", "col", "cr"], "total_ns",
                "Fig. 10b: total time; C-R (64 column blocks) beyond 64 DPUs")
    save(fig, path)


def fig11(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ms_rows = sel(rows, experiment="models")
    labels, vals = [], []
    for r in ms_rows:
        labels.append(f"{r['model']} {r['part']}{' e2e' if r['end_to_end'] else ''}")
        vals.append(r["speedup_vs_cpu"])
    axes[0].bar(range(len(vals)), vals, color=["#4e79a7" if "e2e" not in l else "#f28e2b" for l in labels])
    axes[0].axhline(1, color="k", lw=1, ls="--")
    axes[0].set_xticks(range(len(vals)))
    axes[0].set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
    axes[0].set_ylabel("speedup over CPU")
    axes[0].set_yscale("log")
    axes[0].set_title("Fig. 11a: lookup only (blue), end-to-end (orange)", fontsize=9)
    br = [r for r in ms_rows if not r["end_to_end"]]
    stacked(axes[1], br, [f"{r['model']} {r['part']}" for r in br], "Fig. 11b: breakdown (lookup only)")
    axes[1].legend(fontsize=6)
    for part in ("row", "cr", "tr"):
        rs = sorted(sel(rows, experiment="rm2_batch", part=part), key=lambda r: r["batch"])
        axes[2].plot([r["batch"] for r in rs], [r["speedup_vs_cpu"] for r in rs], "o-", label=part)
    axes[2].set_xscale("log", base=2)
    axes[2].set_xlabel("batch")
    axes[2].set_ylabel("speedup over CPU")
    axes[2].set_title("Fig. 11c: RM2, batch scaling", fontsize=9)
    axes[2].legend(fontsize=7)
    save(fig, path)


def fig12(rows: list[Row], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax2 = ax.twinx()
    for radix in (2, 4, 16):
        rs = sorted(sel(rows, radix=radix), key=lambda r: r["tasklets"])
        line = ax.plot([r["tasklets"] for r in rs], [ms(r["kernel_ns"]) for r in rs], "o-", label=f"radix {radix}")
        ax2.plot([r["tasklets"] for r in rs], [r["ipc"] for r in rs], "--", color=line[0].get_color(), alpha=0.6)
    ax.set_xlabel("tasklets")
    ax.set_ylabel("kernel time (ms), solid")
    ax2.set_ylabel("pipeline utilisation (IPC), dashed")
    ax2.set_ylim(0, 1.05)
    ax.set_yscale("log")
    ax.set_title("Fig. 12: one 256-point NTT on one DPU", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, path)


def fig13(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    ra = sel(rows, panel="a")
    stacked(axes[0], ra, [f"{r['dims']}D ({r['sizes']}, {r['dpus']} DPUs)" for r in ra],
            f"Fig. 13a: hierarchical NTT of {rows[0]['N'] if rows else '?'} points")
    axes[0].legend(fontsize=7)
    # 13b: the two steps' kernels apart, as the seed draws them
    rb = sel(rows, panel="b")
    parts = (("cpu_dpu_ns", "CPU-DPU", COLORS["cpu_dpu"]), ("kernel1_ns", "Kernel1", COLORS["kernel"]),
             ("inter_dpu_ns", "Inter-DPU", COLORS["inter_dpu"]), ("kernel2_ns", "Kernel2", "#edc948"),
             ("dpu_cpu_ns", "DPU-CPU", COLORS["dpu_cpu"]), ("host_ns", "Host", COLORS["host"]))
    bottom = [0.0] * len(rb)
    for key, label, color in parts:
        vals = [ms(r[key]) for r in rb]
        axes[1].bar(range(len(rb)), vals, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    axes[1].set_xticks(range(len(rb)))
    axes[1].set_xticklabels([f"{r['sizes']}" for r in rb], fontsize=8)
    axes[1].set_xlabel("step sizes (first x second)")
    axes[1].set_ylabel("time (ms)")
    radix = rb[0]["radix"] if rb else "?"
    dpus = rb[0]["dpus"] if rb else "?"
    axes[1].set_title(f"Fig. 13b: 2D NTT step sizes ({dpus} DPUs, radix {radix})", fontsize=9)
    axes[1].legend(fontsize=7)
    save(fig, path)


def fig14(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    stacked(axes[0], rows, [f"{r['dpus']} ({r['parallelism']})" for r in rows],
            "Fig. 14a: 8 NTTs, strong scaling", rows[0]["cpu_ns"] if rows else None)
    axes[0].legend(fontsize=6)
    shares = [100.0 * r["inter_dpu_ns"] / r["total_ns"] for r in rows]
    axes[1].bar(range(len(rows)), shares, color=COLORS["inter_dpu"])
    axes[1].set_xticks(range(len(rows)))
    axes[1].set_xticklabels([str(r["dpus"]) for r in rows])
    axes[1].set_xlabel("DPUs")
    axes[1].set_ylabel("inter-DPU share of total (%)")
    axes[1].set_title("Fig. 14b: inter-DPU share", fontsize=9)
    save(fig, path)


def fig15(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    dpus = sorted({r["dpus"] for r in rows})
    for d in dpus:
        rs = sorted(sel(rows, dpus=d), key=lambda r: r["limbs"])
        axes[0].plot([r["log_q_bits"] for r in rs], [ms(r["total_ns"]) for r in rs], "o-", label=f"{d} DPUs")
    rs = sorted(sel(rows, dpus=dpus[0]), key=lambda r: r["limbs"]) if dpus else []
    axes[0].plot([r["log_q_bits"] for r in rs], [ms(r["cpu_ns"]) for r in rs], "k--", label="CPU")
    axes[0].set_xlabel("log Q (bits; 31-bit limbs)")
    axes[0].set_ylabel("total time (ms)")
    axes[0].set_title("Fig. 15a: limbs sweep", fontsize=9)
    axes[0].legend(fontsize=7)
    ext = [r for r in rows if r["limbs"] in (min(r2["limbs"] for r2 in rows), max(r2["limbs"] for r2 in rows))]
    ext.sort(key=lambda r: (r["limbs"], r["dpus"]))
    stacked(axes[1], ext, [f"{r['log_q_bits']}b {r['dpus']}" for r in ext], "Fig. 15b: breakdown, smallest/largest log Q")
    axes[1].legend(fontsize=6)
    save(fig, path)


def fig16(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    stacked(axes[0], rows, [f"{r['primitive']} ({r['limbs']} limbs)" for r in rows],
            f"Fig. 16: CKKS HMult primitives on {rows[0]['dpus'] if rows else '?'} DPUs")
    axes[0].legend(fontsize=6)
    x = range(len(rows))
    axes[1].bar([i - 0.2 for i in x], [ms(r["total_ns"]) for r in rows], width=0.4, label="PIM total")
    axes[1].bar([i + 0.2 for i in x], [ms(r["cpu_ns"]) for r in rows], width=0.4, label="CPU")
    axes[1].bar([i - 0.2 for i in x], [ms(r["kernel_ns"]) for r in rows], width=0.2, label="PIM kernel")
    axes[1].set_xticks(list(x))
    axes[1].set_xticklabels([r["primitive"] for r in rows])
    axes[1].set_yscale("log")
    axes[1].set_ylabel("time (ms)")
    axes[1].set_title("PIM vs CPU per primitive", fontsize=9)
    axes[1].legend(fontsize=7)
    save(fig, path)


def fig18(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    scopes = sorted({r["scope_dpus"] for r in rows})
    names = {8: "bank-wise (8)", 64: "chip-wise (64)", 256: "rank-wise (256)"}
    for s in scopes:
        rs = sorted(sel(rows, sweep="ratio", scope_dpus=s), key=lambda r: r["ratio"])
        axes[0].plot([r["ratio"] for r in rs], [r["perf_interconnect"] for r in rs], "o-", label=names.get(s, str(s)))
    rs = sorted(sel(rows, sweep="ratio", scope_dpus=scopes[0]), key=lambda r: r["ratio"]) if scopes else []
    axes[0].plot([r["ratio"] for r in rs], [r["perf_host"] for r in rs], "k--", label="host communication")
    axes[0].set_xlabel("global reduction ratio")
    axes[0].set_ylabel("performance (norm. to host at ratio 1)")
    axes[0].set_title("Fig. 18a: interconnect vs host, 2.8 GB/s links (model)", fontsize=9)
    axes[0].legend(fontsize=7)
    for s in scopes:
        rs = sorted(sel(rows, sweep="bandwidth", scope_dpus=s), key=lambda r: r["link_gbps"])
        axes[1].plot([r["link_gbps"] for r in rs], [r["benefit"] for r in rs], "o-", label=names.get(s, str(s)))
    axes[1].set_xlabel("inter-bank link bandwidth (GB/s)")
    axes[1].set_ylabel("benefit over host communication (x)")
    axes[1].set_title("Fig. 18b: ratio 0.5 (model)", fontsize=9)
    axes[1].legend(fontsize=7)
    save(fig, path)


def exchange(rows: list[Row], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(14, 4))
    titles = {
        "ntt": "2D NTT (16 instances): transpose through the host, as a PID-Comm all-to-all, over what-if links",
        "embedding": "Embedding, row-wise: sums reduced by the host, by PID-Comm's Reduce, reduce-scattered over links",
    }
    for ax, workload in zip(axes, ("ntt", "embedding")):
        rs = sorted(sel(rows, workload=workload),
                    key=lambda r: (r["dpus"], ["host", "pidcomm", "interconnect"].index(r["exchange"])))
        stacked(ax, rs, [f"{r['dpus']} {r['exchange']}" for r in rs], titles[workload],
                rs[0]["cpu_ns"] if rs else None)
        ax.legend(fontsize=6)
    save(fig, path)
