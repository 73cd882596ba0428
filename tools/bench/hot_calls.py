#!/usr/bin/env python3
"""The out-of-line calls of the kernel data path, from the built modules' disassembly.

For each hot entry point (post_send, post_recv, poll_cq: ib_core's wrapper, the dyn-dispatched
`Typed` shim and mlx5_ib's `DeviceOps` method), walks the calls reachable from it through the
functions defined in the given modules (a call into ib_core or mlx5_core from mlx5_ib is
followed) and counts the call sites by kind: `rust_helper_*` (atomics, barriers, locks, MMIO
that did not inline), locks, memcpy, RCU/Devres, cross-crate calls into our own modules, other
kernel calls, indirect calls. Cold sites (printk, panics, WARN) are counted apart. The counts
are static (call sites reachable, each counted once), not executions.

A root with no symbol in the module (an `#[inline]` wrapper inlined into every caller, e.g.
ib_core's `Cq::poll` into the consumer) has no call of its own.

Usage: hot_calls.py MODULES_DIR [--tree]
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

MODULES = ["ib_core.ko", "mlx5_core.ko", "mlx5_ib.ko"]

# name, regex over the symbol (the first match is the root; its callees are walked)
ROOTS = [
    ("post_send", [r"ib_core5verbsNtB5_2Qp9post_send$",
                   r"Mlx5IbDevice.*QpObject9post_send",
                   r"Mlx5IbDevice.*DeviceOps9post_send$"]),
    ("post_recv", [r"ib_core5verbsNtB5_2Qp9post_recv$",
                   r"Mlx5IbDevice.*QpObject9post_recv",
                   r"Mlx5IbDevice.*DeviceOps9post_recv$"]),
    ("poll_cq", [r"ib_core5verbsNtB5_2Cq4poll$",
                 r"Mlx5IbDevice.*CqObject4poll",
                 r"Mlx5IbDevice.*DeviceOps7poll_cq$"]),
]

COLD = re.compile(r"call_printk|panic|_printk|warn|__ubsan|bug|report|fmt", re.I)


def kind(target: str) -> str:
    if target.startswith("*"):
        return "indirect"
    if COLD.search(target):
        return "cold"
    if "memcpy" in target or "memset" in target or "memmove" in target:
        return "memcpy/memset"
    if re.search(r"spin_|_lock|lock_|mutex", target):
        return "lock"
    if re.search(r"rcu|devres|Revocable|try_access", target, re.I):
        return "rcu/devres"
    if target.startswith("rust_helper_"):
        return "rust_helper (atomic/barrier/io)"
    if target.startswith("_R"):
        return "rust (own crates/kernel crate)"
    return "other kernel"


def disasm(ko: Path) -> dict[str, list[str]]:
    """Symbol -> call targets in order (relocation names, or local symbols, or '*indirect')."""
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", str(ko)], capture_output=True,
                         text=True, check=True).stdout
    funcs: dict[str, list[str]] = {}
    cur = None
    pending_call = False
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            pending_call = False
            continue
        if cur is None:
            continue
        r = re.search(r"R_X86_64_(?:PLT32|PC32)\s+(\S+?)(?:[-+]0x[0-9a-f]+)?$", line)
        if r and pending_call:
            funcs[cur][-1] = r.group(1)
            pending_call = False
            continue
        c = re.search(r"\scall\s+(.*)$", line)
        if c:
            arg = c.group(1).strip()
            if arg.startswith("*"):
                if "__x86_indirect_thunk" in arg:
                    funcs[cur].append("*indirect")
                else:
                    funcs[cur].append("*indirect")
                pending_call = False
            else:
                lm = re.search(r"<([^>+]+)(\+0x[0-9a-f]+)?>", arg)
                # A call with a relocation names its target on the next line; a local one here.
                funcs[cur].append(lm.group(1) if lm else arg)
                pending_call = bool(lm and lm.group(2))
            continue
        j = re.search(r"\sjmp\s+[0-9a-f]+ <([^>+]+)>$", line)
        if j and j.group(1) != cur:
            # A tail call to another function.
            funcs[cur].append(j.group(1))
    for f, calls in funcs.items():
        funcs[f] = ["*indirect" if "indirect_thunk" in c else c for c in calls]
    return funcs


def main() -> int:
    d = Path(sys.argv[1])
    tree = "--tree" in sys.argv
    funcs: dict[str, list[str]] = {}
    for ko in MODULES:
        funcs.update(disasm(d / ko))
    names = list(funcs)
    kinds = ["rust_helper (atomic/barrier/io)", "lock", "memcpy/memset", "rcu/devres",
             "rust (own crates/kernel crate)", "other kernel", "indirect", "cold"]
    print(f"{'path':10} " + " ".join(f"{k.split(' ')[0][:11]:>11}" for k in kinds) + "  hot total")
    for name, pats in ROOTS:
        seen: set[str] = set()
        counts: Counter[str] = Counter()
        lines = []

        def walk(fn: str, depth: int) -> None:
            if fn in seen:
                return
            seen.add(fn)
            for t in funcs.get(fn, []):
                k = kind(t)
                if t in funcs and not t.startswith("rust_helper_") and k != "cold":
                    lines.append("  " * depth + f"-> {t}")
                    counts["rust (own crates/kernel crate)"] += 1
                    walk(t, depth + 1)
                else:
                    counts[k] += 1
                    if k != "cold":
                        lines.append("  " * depth + f"   {t}")

        for p in pats:
            root = next((n for n in names if re.search(p, n)), None)
            if root is None:
                # No out-of-line copy: inlined into every caller (ib_core's #[inline] wrappers).
                lines.append(f"({p}: inlined into its callers)")
                continue
            lines.append(f"{root}")
            walk(root, 1)
        hot = sum(v for k, v in counts.items() if k != "cold")
        print(f"{name:10} " + " ".join(f"{counts[k]:>11}" for k in kinds) + f"  {hot:>9}")
        if tree:
            print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
