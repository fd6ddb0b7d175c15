#!/usr/bin/env python3
"""Draws flame graphs (PNG) of folded stacks: `frame;frame;...;leaf COUNT` lines.

Usage: flamegraph.py DIR|FILE.folded [-o OUT.png]. With a directory, every *.folded file in it
becomes the PNG of the same name (openpim profile calls it on its output directory).
Outermost frames at the bottom; a frame's width is its share of the cycles; colours by
function name (wait frames grey)."""

import argparse
import hashlib
import pathlib
import sys


MAX_LAUNCH_GRAPHS = 32


def read_folded(path):
    stacks = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        frames, _, count = line.rpartition(" ")
        if not frames or not count.isdigit():
            raise ValueError(f"{path}:{n}: not a folded stack line (`frame;...;leaf COUNT`): {line!r}")
        stacks.append((frames.split(";"), int(count)))
    return stacks


def build_tree(stacks):
    """Nested dict: name -> [count, children]."""
    root = [0, {}]
    for frames, count in stacks:
        root[0] += count
        node = root
        for f in frames:
            child = node[1].setdefault(f, [0, {}])
            child[0] += count
            node = child
    return root


def colour(name):
    if name.startswith("[wait"):
        return (0.75, 0.75, 0.75)
    h = hashlib.md5(name.encode()).digest()
    return (0.85 + h[0] / 2550, 0.35 + h[1] / 600, 0.1 + h[2] / 1300)


def draw(path, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    tree = build_tree(read_folded(path))
    total = tree[0]
    rects = []

    def walk(node, x, depth):
        for name, child in sorted(node[1].items()):
            rects.append((x, depth, child[0], name))
            walk(child, x, depth + 1)
            x += child[0]

    walk(tree, 0, 0)
    depth = max((r[1] for r in rects), default=0) + 1
    fig, ax = plt.subplots(figsize=(14, 1.2 + 0.28 * depth))
    width_px = 14 * fig.dpi
    for x, d, w, name in rects:
        ax.add_patch(Rectangle((x, d), w, 0.95, facecolor=colour(name), edgecolor="white", linewidth=0.3))
        frac = w / total if total else 0
        chars = int(frac * width_px / 6.5)
        if chars >= 4:
            label = name if len(name) <= chars else name[: chars - 2] + ".."
            ax.text(x + total * 0.002, d + 0.45, label, va="center", fontsize=7, clip_on=True)
    ax.set_xlim(0, max(total, 1))
    ax.set_ylim(0, depth)
    ax.set_yticks([])
    ax.set_xlabel("DPU cycles")
    ax.set_title(f"{path.stem}: {total} cycles (OpenPIM exact profile)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", type=pathlib.Path)
    ap.add_argument("-o", "--output", type=pathlib.Path)
    a = ap.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("flamegraph.py: matplotlib is missing: run scripts/setup.sh (or pip install matplotlib)", file=sys.stderr)
        return 1
    if a.input.is_dir():
        files = sorted(a.input.glob("*.folded"))
        if not files:
            print(f"flamegraph.py: no .folded file in {a.input}", file=sys.stderr)
            return 1
        # A program with hundreds of launches: the run and the first launches are drawn (the
        # folded files of the others are there for flamegraph.pl, inferno or speedscope).
        launches = [f for f in files if f.stem.startswith("launch-")]
        skipped = [f for f in launches if not f.stem[7:].isdigit() or int(f.stem[7:]) > MAX_LAUNCH_GRAPHS]
        for f in files:
            if f not in skipped:
                draw(f, f.with_suffix(".png"))
        if skipped:
            print(f"flamegraph.py: drew launches 1..{MAX_LAUNCH_GRAPHS} only; {len(skipped)} more launch-N.folded"
                  f" files in {a.input} (draw one with: flamegraph.py FILE.folded)", file=sys.stderr)
    else:
        draw(a.input, a.output or a.input.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
