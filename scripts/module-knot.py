#!/usr/bin/env python3
"""The core's module graph and its knots: every top-level module of
``core/src`` (a file or a directory) with the modules it names
(``crate::x``, ``use crate::{x, ...}``; unit tests left out), then every
strongly connected set larger than one (modules that all reach each
other). Comments, doc links included, do not count. ``-v`` prints the
edges too; ``--layers`` the modules by layer (each above everything it
uses); ``--check`` fails (exit 1) on a set larger than two or a module
outside ``host`` that uses it, or on an item named through the crate root
(``crate::Error``: a use of the root, which re-exports every module), as
the lint stage of ``scripts/test`` does.

    python3 scripts/module-knot.py [-v] [--layers] [--check] [core/src of another checkout]
"""

from __future__ import annotations

import os
import re
import sys

ROOT = next(
    (a for a in sys.argv[1:] if not a.startswith("-")),
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "src"),
)


def modules() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            found.setdefault(parts[0] if parts else "lib", []).append(path)
    return found


def edges(found: dict[str, list[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, paths in found.items():
        for path in paths:
            with open(path) as f:
                text = re.split(r"#\[cfg\(test\)\]\s*mod tests", f.read())[0]
            # Comments (doc links included) name modules without using them.
            text = re.sub(r"//[^\n]*", "", text)
            named = set(re.findall(r"crate::([a-z_]+)", text))
            for block in re.findall(r"use crate::\{([^;]*)\};", text, re.S):
                named.update(re.findall(r"(?:^|[\s,{])([a-z_]+)(?=::|\s*[,}])", block))
            graph[name].update(m for m in named if m in found and m != name)
            # An item named through the crate root (`crate::Error`) is a use
            # of the root, which re-exports everything: an arrow back up.
            if name != "lib" and re.search(r"crate::[A-Z]", text):
                graph[name].add("lib")
    return graph


def knots(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, larger than one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=len, reverse=True)


def layers(graph: dict[str, set[str]], sets: list[list[str]]) -> list[list[str]]:
    """Modules by layer: 0 uses no other module; each module sits one
    above the highest it uses (the modules of a knot share one layer)."""
    knot_of = {m: tuple(c) for c in sets for m in c}
    level: dict[str, int] = {}

    def depth(m: str) -> int:
        if m not in level:
            members = knot_of.get(m, (m,))
            for member in members:
                level[member] = 0  # a knot's own edges do not lift it
            below = {w for member in members for w in graph[member]} - set(members)
            height = max((depth(w) + 1 for w in below), default=0)
            for member in members:
                level[member] = height
        return level[m]

    for m in graph:
        depth(m)
    found: list[list[str]] = [[] for _ in range(max(level.values()) + 1)]
    for m, n in level.items():
        found[n].append(m)
    return [sorted(names) for names in found]


MAX_KNOT = 2


def main() -> int:
    graph = edges(modules())
    if "-v" in sys.argv:
        for name in sorted(graph):
            print(f"{name} -> {', '.join(sorted(graph[name])) or '-'}")
    sets = knots(graph)
    print(f"{len(graph)} modules; largest strongly connected set: {len(sets[0]) if sets else 1}")
    for component in sets:
        print(f"  {len(component)}: {' '.join(component)}")
    if "--layers" in sys.argv:
        for n, names in enumerate(layers(graph, sets)):
            print(f"layer {n}: {' '.join(names)}")
    if "--check" in sys.argv:
        failed = False
        if sets and len(sets[0]) > MAX_KNOT:
            largest = len(sets[0])
            print(f"module-knot: a strongly connected set of {largest} (at most {MAX_KNOT})", file=sys.stderr)
            failed = True
        for name in sorted(graph):
            if name != "host" and "host" in graph[name]:
                print(f"module-knot: {name} uses host (nothing below the host protocol may)", file=sys.stderr)
                failed = True
            if "lib" in graph[name]:
                print(
                    f"module-knot: {name} names an item through the crate root (crate::Error): "
                    "name it by its home module (crate::error::Error)",
                    file=sys.stderr,
                )
                failed = True
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
