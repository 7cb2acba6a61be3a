#!/usr/bin/env python3
"""The core's module graph and its knots: every top-level module of
``core/src`` (a file or a directory) with the modules it names
(``crate::x``, ``use crate::{x, ...}``; unit tests left out), then every
strongly connected set larger than one (modules that all reach each
other). Comments, doc links included, do not count. ``-v`` prints the
edges too. Issue #29 measures the largest set.

    python3 scripts/module-knot.py [-v] [core/src of another checkout]
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


def main() -> int:
    graph = edges(modules())
    if "-v" in sys.argv:
        for name in sorted(graph):
            print(f"{name} -> {', '.join(sorted(graph[name])) or '-'}")
    sets = knots(graph)
    print(f"{len(graph)} modules; largest strongly connected set: {len(sets[0]) if sets else 1}")
    for component in sets:
        print(f"  {len(component)}: {' '.join(component)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
