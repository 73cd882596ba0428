#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints the module import graph of a Rust crate directory and its cycles.

Usage: import_graph.py DIR [--tests] [--docs]

Every `NAME.rs` directly in DIR is a module. An edge A -> B means that A.rs names `crate::B`
(in a `use` item or in a path such as `crate::B::f()`; `use crate::{B, C::x}` counts both).
KUnit suites (`#[kunit_tests(...)] mod tests { ... }`, compiled only with CONFIG_KUNIT) and the
modules only they use are left out unless `--tests` is given: they sit above the modules they
test. Links in doc comments (`[`crate::x::Y`]`) count only with `--docs`. The crate root (the file with `module!`/`mod` lines only) is left out.

Output: one line per module, `module -> deps`, then the strongly connected components with more
than one module (the cycles), or `no cycles`.
"""

import os
import re
import sys


def strip_comments(src, docs):
    src = re.sub(r"(?<![/])//(?![/!])[^\n]*" if docs else r"//[^\n]*", "", src)
    return re.sub(r"/\*.*?\*/", "", src, flags=re.S)


def strip_tests(src):
    """Removes `mod tests { ... }` blocks preceded by a kunit_tests attribute."""
    out = []
    i = 0
    pat = re.compile(r"#\[\s*(?:kernel::)?(?:macros::)?kunit_tests\b[^\]]*\]\s*mod\s+\w+\s*\{")
    while True:
        m = pat.search(src, i)
        if not m:
            out.append(src[i:])
            break
        out.append(src[i:m.start()])
        depth = 1
        j = m.end()
        while j < len(src) and depth:
            if src[j] == "{":
                depth += 1
            elif src[j] == "}":
                depth -= 1
            j += 1
        i = j
    return "".join(out)


def crate_refs(src):
    """Top-level module names a file reaches through `crate::`."""
    refs = set()
    # `crate::{a, b::c, d::{e}}`: the first path segment of each item at the first level.
    for m in re.finditer(r"\bcrate::\{", src):
        depth = 1
        j = m.end()
        start = j
        items = []
        while j < len(src) and depth:
            c = src[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    items.append(src[start:j])
            elif c == "," and depth == 1:
                items.append(src[start:j])
                start = j + 1
            j += 1
        for it in items:
            name = re.match(r"\s*(\w+)", it)
            if name:
                refs.add(name.group(1))
    for m in re.finditer(r"\bcrate::(\w+)", src):
        refs.add(m.group(1))
    return refs


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tests = "--tests" in sys.argv[1:]
    docs = "--docs" in sys.argv[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    d = args[0]
    files = sorted(f for f in os.listdir(d) if f.endswith(".rs"))
    mods = {f[:-3] for f in files}
    graph = {}
    for f in files:
        src = strip_comments(open(os.path.join(d, f)).read(), docs)
        if re.search(r"^\s*(kernel::prelude::)?module!\s*\{", src, re.M):
            continue
        if not tests:
            src = strip_tests(src)
        graph[f[:-3]] = {r for r in crate_refs(src) if r in mods and r != f[:-3]}
    if not tests:
        # Modules compiled only for KUnit (`#[cfg(CONFIG_KUNIT...)] mod x;` in the crate root).
        for f in files:
            root = open(os.path.join(d, f)).read()
            for m in re.finditer(r"#\[cfg\(CONFIG_KUNIT[^\]]*\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)", root):
                graph.pop(m.group(1), None)
        for v in graph:
            graph[v] &= set(graph)
    for v in sorted(graph):
        print(f"{v} -> {', '.join(sorted(graph[v])) or '(none)'}")
    cycles = [c for c in sccs(graph) if len(c) > 1]
    print()
    if cycles:
        for c in cycles:
            print(f"cycle ({len(c)} modules): {', '.join(c)}")
    else:
        print("no cycles")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
