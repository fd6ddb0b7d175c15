#!/usr/bin/env python3
"""The module dependency graph of the runtime and libdpu crates; fails on a cycle.

    scripts/module_graph.py               print each crate's graph (module -> modules it uses)
    scripts/module_graph.py --mermaid     the same as mermaid flowcharts (docs/internals/runtime.md)
    scripts/module_graph.py crates/x/src  other crates

A module is a file (`lib.rs` is the crate root, `a/mod.rs` is `a`, `a/b.rs` is `a::b`). Module
A depends on B when A's code names a path into B: `crate::b::...`, `super::...`, `self::...`,
or, as Rust 2018 allows, a child module by its bare name (`child::item`); a path resolves to
the longest module it names (`crate::exec::local::rank::X` is `exec::local::rank`). Comments
and `#[cfg(test)]` code (`mod tests` at the end of a file, the `testutil` module) are not
read: tests may use any layer. Declaring a child (`mod b;`) is not a dependency. Exits 1
and names the cycle when some module depends, directly or not, on a module that depends on it,
and also when the crate's top-level folders do (`exec::local::suspend -> checkpoint::file` and
`checkpoint::file -> sdk::set` make `exec -> checkpoint -> sdk -> exec` among the folders, the
layers, with no cycle among the modules).
"""

import os
import re
import sys

DEFAULT = ["crates/runtime/src", "crates/libdpu/src"]
TEST_ONLY = {"testutil"}


def module_name(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel == ["lib"] or rel == ["main"]:
        return "crate"
    return "::".join(rel)


def strip(code):
    """Code without comments, string literals' contents, and trailing #[cfg(test)] code."""
    out = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and i + 2 < n and (code[i + 2] == "'" or code[i + 1] == "\\"):
            # A char literal ('"', '\n'); lifetimes ('a) are left alone.
            j = code.find("'", i + 2)
            out.append("' '")
            i = j + 1
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    return text


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def paths(text, start):
    """Paths starting at `start` (just after `crate::` etc.): `a::b::{c, d::e}` gives
    [a::b::c, a::b::d::e] (as lists of segments)."""
    result = []

    def parse(i, prefix):
        segs = list(prefix)
        while True:
            m = re.compile(r"\s*(" + IDENT + r"|\{)").match(text, i)
            if not m:
                result.append(segs)
                return i
            if m.group(1) == "{":
                i = m.end()
                while True:
                    i = parse(i, segs)
                    m2 = re.compile(r"\s*([,}])").match(text, i)
                    if not m2:
                        return i
                    i = m2.end()
                    if m2.group(1) == "}":
                        return i
                    if re.compile(r"\s*\}").match(text, i):
                        return re.compile(r"\s*\}").match(text, i).end()
            segs = segs + [m.group(1)]
            i = m.end()
            m3 = re.compile(r"\s*::").match(text, i)
            if not m3:
                result.append(segs)
                return i
            i = m3.end()

    parse(start, [])
    return result


def graph(src):
    modules = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(root, f)
                name = module_name(src, path)
                if name.split("::")[0] in TEST_ONLY:
                    continue
                modules[name] = path
    names = set(modules)

    def resolve(segs):
        """The longest module named by an absolute path (segments after `crate`)."""
        best = "crate"
        for k in range(1, len(segs) + 1):
            cand = "::".join(segs[:k])
            if cand in names:
                best = cand
        return best

    def parent(mod):
        return "crate" if "::" not in mod else mod.rsplit("::", 1)[0]

    edges = {m: set() for m in modules}
    for mod, path in modules.items():
        with open(path, encoding="utf-8") as fh:
            text = strip(fh.read())
        base = [] if mod == "crate" else mod.split("::")
        inline = inline_modules(text)
        for m in re.finditer(r"(?<![A-Za-z0-9_:])(crate|super|self)::", text):
            kind = m.group(1)
            # Inline modules (`mod err { use super::X; }`) around the path: `self` and
            # `super` are relative to them (they count as their file's module).
            here = base + [name for (a, b, name) in inline if a <= m.start() < b]
            if kind == "crate":
                prefix = []
            elif kind == "self":
                prefix = here
            else:
                prefix = here[:-1]
            for segs in paths(text, m.end()):
                target = resolve(prefix + segs)
                if target != mod:
                    edges[mod].add(target)
        # Child modules by their bare name (`child::item`, `use child::{..}`).
        children = {c.split("::")[-1] for c in names if parent(c) == mod}
        for child in children:
            if re.search(r"(?<![A-Za-z0-9_:])" + child + r"\s*::", text):
                target = child if mod == "crate" else mod + "::" + child
                edges[mod].add(target)
    return edges


def inline_modules(text):
    """(start, end, name) of each inline `mod name { ... }` block."""
    found = []
    for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        found.append((m.end(), i, m.group(1)))
    return found


def find_cycle(edges):
    state = {}
    stack = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                c = visit(w)
                if c:
                    return c
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(edges):
        if v not in state:
            c = visit(v)
            if c:
                return c
    return None


def folders(edges):
    """The graph among the top-level modules (the folders: `exec::local::rank` is `exec`)."""
    top = {}
    for v, ws in edges.items():
        a = v.split("::")[0]
        top.setdefault(a, set()).update(w.split("::")[0] for w in ws if w.split("::")[0] != a)
    return top


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    mermaid = "--mermaid" in sys.argv
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    failed = False
    for src in args or DEFAULT:
        src = os.path.join(root, src)
        edges = graph(src)
        crate = os.path.basename(os.path.dirname(src))
        if mermaid:
            print(f"%% {crate}")
            print("flowchart TD")
            for v in sorted(edges):
                for w in sorted(edges[v]):
                    a, b = (x.replace("::", "/") for x in (v, w))
                    print(f"    {a.replace('/', '_')}[{a}] --> {b.replace('/', '_')}[{b}]")
        else:
            print(f"{crate}:")
            for v in sorted(edges):
                print(f"  {v} -> {', '.join(sorted(edges[v])) or '(nothing)'}")
        cycle = find_cycle(edges)
        if cycle:
            print(f"error: {crate}: import cycle: {' -> '.join(cycle)}", file=sys.stderr)
            failed = True
        cycle = find_cycle(folders(edges))
        if cycle:
            print(
                f"error: {crate}: import cycle among the folders: {' -> '.join(cycle)}",
                file=sys.stderr,
            )
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
