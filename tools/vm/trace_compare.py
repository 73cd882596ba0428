#!/usr/bin/env python3
"""Compares the Rust mlx5_core's bring-up with the C driver's, command by command.

The C bring-up is the `## Order` section of docs/c-bringup-commands.md (recorded from cx-model
by `make record-c-bringup`), up to the first CREATE_EQ run: what mlx5_core issues before
mlx5_ib starts. The Rust bring-up is the same stretch of a trace cx-model wrote. Known,
justified differences are the rows of the table in docs/rust-bringup-differences.md: each maps a
C line to the Rust line that replaces it (`-` for none). Exit 0 when the traces agree after
those substitutions; otherwise print both and exit 1.

Usage: trace_compare.py <trace.txt>
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
C_RECORD = REPO / "docs/c-bringup-commands.md"
DIFFERENCES = REPO / "docs/rust-bringup-differences.md"


def bring_up(lines: list[str]) -> list[str]:
    """The lines up to and including the first CREATE_EQ run."""
    out = []
    for line in lines:
        out.append(line)
        if line.startswith("CREATE_EQ"):
            break
    return out


def c_order() -> list[str]:
    text = C_RECORD.read_text()
    section = text.split("## Order", 1)[1]
    body = section.split("```", 2)[1]
    return [l.strip() for l in body.splitlines() if l.strip()]


def differences() -> dict[str, str]:
    rows = {}
    for line in DIFFERENCES.read_text().splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|\s*(?:`([^`]+)`|-)\s*\|", line)
        if m:
            rows[m.group(1)] = m.group(2) or ""
    return rows


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    rust = bring_up([l.strip() for l in Path(sys.argv[1]).read_text().splitlines() if l.strip()])
    subst = differences()
    expected = [subst.get(l, l) for l in bring_up(c_order())]
    expected = [l for l in expected if l]
    if rust == expected:
        print(f"bring-up matches the C driver's: {len(rust)} command lines, "
              f"{len(subst)} documented difference(s) applied")
        return 0
    print("bring-up differs from the C driver's (after the documented differences):")
    width = max(len(l) for l in expected + rust + ["expected"])
    print(f"  {'expected (C, adjusted)':<{width}}   got (Rust)")
    for i in range(max(len(expected), len(rust))):
        e = expected[i] if i < len(expected) else ""
        g = rust[i] if i < len(rust) else ""
        print(f"{' ' if e == g else '!'} {e:<{width}}   {g}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
