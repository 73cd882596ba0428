#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks docs/architecture.md's crate diagrams against the code.

Usage: check_arch_diagrams.py DOC CRATE_DIR...

For each crate directory, the section of DOC whose heading names it (``### `name` (`DIR/`)``)
holds a layer diagram: its first ``` block. A diagram row is a line starting with one space
and a module name (nested ones by their path, `mad::agent`); the module names at the start of
the row, one or two spaces apart, are that row's modules (three spaces or more start the text
that describes them). Every module of the crate, as `import_graph.py` lists them, must be drawn
exactly once, and every module must be drawn above (on an earlier row than) each
module it imports, as `import_graph.py` finds the imports. Prints what is wrong and exits 1,
or prints a summary and exits 0.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def crate_graph(d):
    """The crate's import graph: {module: {imported modules}} (crate root left out)."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "import_graph.py"), d],
                         capture_output=True, text=True).stdout
    graph = {}
    for line in out.splitlines():
        m = re.match(r"^([\w:]+) -> (.*)$", line)
        if m:
            deps = m.group(2).strip()
            graph[m.group(1)] = set() if deps == "(none)" else {x.strip() for x in deps.split(",")}
    return graph


def diagram_rows(doc, d):
    """The rows of the diagram in the section about crate directory `d`: [[module, ...], ...]."""
    head = re.search(r"^### `[^`]+` \(`" + re.escape(d.rstrip("/")) + r"/`\)\s*$", doc, re.M)
    if not head:
        return None
    rest = doc[head.end():]
    nxt = re.search(r"^##", rest, re.M)
    section = rest[:nxt.start()] if nxt else rest
    block = re.search(r"^```\n(.*?)^```", section, re.M | re.S)
    if not block:
        return None
    return [line for line in block.group(1).splitlines()]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    doc = open(sys.argv[1]).read()
    problems = []
    checked = 0
    for d in sys.argv[2:]:
        graph = crate_graph(d)
        lines = diagram_rows(doc, d)
        if lines is None:
            problems.append(f"{d}: no section with a diagram in {sys.argv[1]}")
            continue
        row_of = {}
        row = 0
        for line in lines:
            if not re.match(r"^ [\w:]", line):
                continue
            row += 1
            # The row's modules come first, one or two spaces apart; three or more spaces
            # start the description.
            for tok in re.split(r"\s{3,}", line.strip(), maxsplit=1)[0].split():
                if tok not in graph:
                    break
                if tok in row_of:
                    problems.append(f"{d}: `{tok}` drawn twice")
                row_of[tok] = row
        for m in sorted(set(graph) - set(row_of)):
            problems.append(f"{d}: module `{m}` is not in the diagram")
        for a in sorted(graph):
            for b in sorted(graph[a]):
                if a in row_of and b in row_of and row_of[a] >= row_of[b]:
                    problems.append(f"{d}: `{a}` imports `{b}` but is not drawn above it")
        checked += 1
    if problems:
        print("\n".join(problems))
        return 1
    print(f"the diagrams of {checked} crates match their import graphs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
