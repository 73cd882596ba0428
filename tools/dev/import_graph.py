#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints the `use crate::...` import graph of a Rust crate directory and its cycles.

Usage: import_graph.py <dir>

Every `*.rs` file directly in <dir> is a module named after the file (a file `foo/bar.rs` below
it belongs to module `foo`). For each module the script lists the crate modules it imports
(`use crate::a::...`, `use crate::{a, b::c}`, and `crate::a::` paths in the code), then the
strongly connected components with more than one module (import cycles). Exit status: 0 without
cycles, 1 with cycles, 2 on a usage error.
"""

import os
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def strip_tests(text):
    """Drops `#[cfg(test)]`/`#[kunit_tests(...)]` modules: test-only imports are not layering."""
    out = []
    i = 0
    pat = re.compile(r"#\[(?:kernel::macros::)?(?:kunit_tests\([^)]*\)|cfg\(test\))\]\s*mod\s+\w+\s*\{")
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    return "".join(out)


def use_targets(text):
    """First path segments imported from `crate` by `use` items and `crate::` paths."""
    targets = set()
    for m in re.finditer(r"\buse\s+crate::(\{[^;]*\}|[A-Za-z_]\w*)", text, flags=re.S):
        group = m.group(1)
        if group.startswith("{"):
            depth, cur, parts = 0, "", []
            for ch in group[1:-1]:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                if ch == "," and depth == 0:
                    parts.append(cur)
                    cur = ""
                else:
                    cur += ch
            parts.append(cur)
            for p in parts:
                name = re.match(r"\s*([A-Za-z_]\w*)", p)
                if name:
                    targets.add(name.group(1))
        else:
            targets.add(group)
    for m in re.finditer(r"(?<![\w:])crate::([A-Za-z_]\w*)::", text):
        targets.add(m.group(1))
    return targets


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = sys.argv[1]
    graph = {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            module = rel.split(os.sep)[0].removesuffix(".rs")
            with open(path, encoding="utf-8") as fh:
                text = strip_tests(strip_comments(fh.read()))
            deps = graph.setdefault(module, set())
            deps.update(t for t in use_targets(text) if t != module)
    modules = set(graph)
    for m in sorted(graph):
        deps = sorted(d for d in graph[m] if d in modules)
        print(f"{m} -> {', '.join(deps) if deps else '(none)'}")
    cycles = [c for c in sccs({m: {d for d in ds if d in modules} for m, ds in graph.items()}) if len(c) > 1]
    if cycles:
        for c in cycles:
            print("cycle: {" + ", ".join(c) + "}")
        return 1
    print("no cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
