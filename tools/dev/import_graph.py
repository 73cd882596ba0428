#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints the module import graph of a Rust crate directory and its cycles.

Usage: import_graph.py DIR [--tests] [--docs]

The modules are those the crate root (the file in DIR with `module!`) declares with `mod`
lines, and theirs in turn (`a.rs` declares `a/b.rs`, the module `a::b`), as nova-core nests
them. An edge A -> B means that A's file names module B: `crate::B::..`, `super::..` or
`self::..` paths (in `use` items, groups such as `use crate::{B, C::{x, D}}` included, or in
expressions; a path counts for the longest module it starts with), a child by its bare name,
or a module imported by name (`use crate::a::b;`) through the paths that start with that name.
KUnit suites (`#[kunit_tests(...)] mod tests { ... }`, compiled only with CONFIG_KUNIT) and the
modules declared under `#[cfg(CONFIG_KUNIT...)]` are left out unless `--tests` is given: they
sit above the modules they test. Links in doc comments (`[`crate::x::Y`]`) count only with `--docs`. The crate root and
folder roots made of `mod` lines only are left out.

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


def parse_paths(src, i):
    """The paths of a use tree or path starting at src[i]: [[segment, ...], ...] (`self` in a
    group stands for the group's prefix)."""
    out = []

    def tree(i, prefix):
        while True:
            while i < len(src) and src[i].isspace():
                i += 1
            if i < len(src) and src[i] == "{":
                i += 1
                while True:
                    while i < len(src) and (src[i].isspace() or src[i] == ","):
                        i += 1
                    if i >= len(src) or src[i] == "}":
                        return i + 1
                    i = tree(i, prefix)
            if i < len(src) and src[i] == "*":
                # A glob (`a::*`, also inside a group): the prefix, and past the star.
                out.append(prefix)
                return i + 1
            m = re.compile(r"\w+").match(src, i)
            if not m:
                out.append(prefix)
                return i
            word = m.group(0)
            i = m.end()
            seg = prefix if word == "self" else prefix + [word]
            rest = re.compile(r"\s*::\s*").match(src, i)
            if not rest:
                out.append(seg)
                return i
            i = rest.end()
            prefix = seg

    tree(i, [])
    return out


def module_refs(src, path, mods, children):
    """The modules (paths) a module's source names, `path` being the module's own path."""
    refs = set()

    def resolve(segs):
        for n in range(len(segs), 0, -1):
            if tuple(segs[:n]) in mods:
                refs.add(tuple(segs[:n]))
                return

    inline = inline_modules(src)
    # Modules imported by name (`use crate::a::b;` then `b::f()`): their local names.
    aliases = {}
    for m in re.finditer(r"(?<![\w:$])(crate|super|self)\s*::\s*", src):
        # Inside `mod x { .. }` blocks of the file, `self` and `super` are relative to them.
        depth = sum(1 for a, b in inline if a < m.start() < b)
        here = list(path) + ["<inline>"] * depth
        base = [] if m.group(1) == "crate" else here[:-1] if m.group(1) == "super" else here
        for segs in parse_paths(src, m.end()):
            b = list(base)
            while segs and segs[0] == "super":
                b = b[:-1]
                segs = segs[1:]
            if segs and tuple(b + segs) in mods:
                # A module imported by name counts through the paths that use the name.
                aliases[segs[-1]] = tuple(b + segs)
            else:
                resolve(b + segs)
    for name, target in aliases.items():
        for m in re.finditer(r"(?<![\w:])" + re.escape(name) + r"\s*::\s*", src):
            for segs in parse_paths(src, m.end()):
                resolve(list(target) + segs)
    # A module's children by their bare names (`child::item`, `use child::{..}`).
    for child in children.get(path, ()):
        if re.search(r"(?<![\w:])" + re.escape(child) + r"\s*::", src):
            refs.add(path + (child,))
    refs.discard(path)
    return refs


def inline_modules(src):
    """The spans of `mod name { .. }` blocks in a file's source."""
    spans = []
    for m in re.finditer(r"\bmod\s+\w+\s*\{", src):
        depth, j = 1, m.end()
        while j < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[j], 0)
            j += 1
        spans.append((m.start(), j))
    return spans


def only_mod_lines(src):
    """Whether a module file only names its parts (`mod` lines and attributes, no items)."""
    rest = re.sub(r"#!?\[[^\]]*\]|(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*;", "", src)
    return not rest.strip()


def crate_modules(d, tests):
    """The crate's modules: {path tuple: file}, its crate root, and {path: [child names]}."""
    roots = [f for f in sorted(os.listdir(d)) if f.endswith(".rs") and
             re.search(r"^\s*(kernel::prelude::)?module!\s*\{", open(os.path.join(d, f)).read(), re.M)]
    if len(roots) != 1:
        sys.exit(f"{d}: expected one crate root (a file with `module!`), found {roots}")
    mods, children = {}, {}
    todo = [((), os.path.join(d, roots[0]), d)]
    decl = re.compile(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
    while todo:
        path, f, subdir = todo.pop()
        src = strip_comments(open(f).read(), False)
        for m in decl.finditer(src):
            if not tests and "CONFIG_KUNIT" in m.group(1):
                continue
            name = m.group(2)
            child = os.path.join(subdir, name + ".rs")
            if not os.path.exists(child):
                continue
            children.setdefault(path, []).append(name)
            mods[path + (name,)] = child
            todo.append((path + (name,), child, os.path.join(subdir, name)))
    return mods, children


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
    mods, children = crate_modules(args[0], tests)
    graph = {}
    for path, f in mods.items():
        src = strip_comments(open(f).read(), docs)
        if only_mod_lines(strip_comments(src, False)):
            continue
        if not tests:
            src = strip_tests(src)
        graph["::".join(path)] = {"::".join(r) for r in module_refs(src, path, mods, children)}
    # Folder roots of `mod` lines only are no nodes: a path naming only them names nothing.
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
