#!/usr/bin/env python3
"""Draw the stacked phase breakdown of an OpenPIM run report (the papers' standard figure).

    python3 scripts/plot_phases.py REPORT.json [-o OUT.png]
    openpim plot REPORT.json [-o OUT.png]

REPORT.json is written by `openpim run --report=REPORT.json -- CMD` (schema:
docs/report-schema.md). Several reports may be given: one bar each, side by side, labelled
with the file names (e.g. the same program on 1, 4 and 16 ranks).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Report keys of the phases, in stacking order, with their labels and colours.
PHASES: list[tuple[str, str, str]] = [
    ("cpu_dpu_ns", "CPU-DPU", "#4e79a7"),
    ("dpu_kernel_ns", "DPU kernel", "#f28e2b"),
    ("inter_dpu_ns", "Inter-DPU", "#e15759"),
    ("dpu_cpu_ns", "DPU-CPU", "#76b7b2"),
    ("host_ns", "Host", "#9c9c9c"),
    ("alloc_load_ns", "Alloc/load", "#b07aa1"),
]


def load_report(path: Path) -> dict[str, Any]:
    """Reads a report and checks the fields the figure needs."""
    with path.open() as f:
        report: dict[str, Any] = json.load(f)
    phases = report.get("phases")
    if not isinstance(phases, dict) or any(k not in phases for k, _, _ in PHASES):
        raise ValueError(f"{path}: not an OpenPIM run report (no 'phases' with every phase)")
    return report


def choose_unit(max_ns: float) -> tuple[str, float]:
    """A readable time unit for the y axis: (name, nanoseconds per unit)."""
    if max_ns >= 1e9:
        return "s", 1e9
    if max_ns >= 1e6:
        return "ms", 1e6
    if max_ns >= 1e3:
        return "µs", 1e3
    return "ns", 1.0


def _stack(ax: Any, reports: list[tuple[str, dict[str, Any]]], keys: list[str], title: str) -> None:
    """One panel: a stacked bar per report over the phases in `keys`."""
    totals = [sum(float(r["phases"][k]) for k in keys) for _, r in reports]
    unit, scale = choose_unit(max(totals) if totals else 0.0)
    xs = list(range(len(reports)))
    bottoms = [0.0] * len(reports)
    for key, label, colour in PHASES:
        if key not in keys:
            continue
        values = [float(r["phases"][key]) / scale for _, r in reports]
        ax.bar(xs, values, 0.55, bottom=bottoms, label=label, color=colour, edgecolor="white")
        for i, v in enumerate(values):
            total = totals[i] / scale
            if total > 0 and v / total >= 0.06:
                ax.text(xs[i], bottoms[i] + v / 2, f"{100 * v / total:.0f}%", ha="center",
                        va="center", fontsize=8, color="white")
        bottoms = [b + v for b, v in zip(bottoms, values)]
    for i, t in enumerate(totals):
        ax.text(xs[i], t / scale, f"{t / scale:.3g} {unit}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(xs)
    ax.set_xticklabels([label for label, _ in reports])
    ax.set_xlim(-0.75, len(reports) - 0.25)
    ax.set_ylabel(f"virtual time ({unit})")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(0, max(bottoms + [1e-9]) * 1.12)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def plot(reports: list[tuple[str, dict[str, Any]]], out: Path) -> None:
    """Writes the stacked bars of `reports` (label, report) to `out`: all phases, and the
    PIM phases alone (host time often dwarfs them)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = max(8.0, 2.2 * len(reports) + 5.0)
    fig, (left, right) = plt.subplots(1, 2, figsize=(width, 4.8))
    every = [k for k, _, _ in PHASES]
    pim = [k for k in every if k != "host_ns"]
    _stack(left, reports, every, "all phases")
    _stack(right, reports, pim, "without host code")
    hw = reports[0][1].get("hardware", {}) if reports else {}
    profile = hw.get("profile") or "?"
    fig.suptitle(f"OpenPIM phase breakdown — {profile}, {hw.get('frequency_mhz', '?')} MHz DPUs")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, _, c in PHASES]
    fig.legend(handles, [label for _, label, _ in PHASES], loc="lower center", ncol=len(PHASES),
               frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out, dpi=150)
    plt.close(fig)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JSON run report(s)")
    parser.add_argument("-o", "--output", type=Path, help="PNG to write (default: REPORT.png)")
    args = parser.parse_args(argv)
    try:
        reports = [(p.stem, load_report(p)) for p in args.reports]
    except (OSError, ValueError, json.JSONDecodeError) as e:
        print(f"plot_phases: {e}", file=sys.stderr)
        return 2
    out: Path = args.output or args.reports[0].with_suffix(".png")
    try:
        plot(reports, out)
    except ImportError:
        print(
            "plot_phases: matplotlib is missing: python3 -m pip install matplotlib "
            "(scripts/setup.sh does it)",
            file=sys.stderr,
        )
        return 3
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
