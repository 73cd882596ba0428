#!/usr/bin/env python3
"""Fails when a function in our modules has a stack frame larger than the limit.

The kernel stack is 16 KiB on x86-64 and a device probe nests deep: PCI bind -> mlx5_core probe
-> auxiliary device add -> mlx5_ib probe -> ib_core registration -> every client's `add`, which
may create a CQ -> a completion EQ made on demand -> the command queue. Rust gives no
-Wframe-larger-than warning, and a by-value layout copied per builder step once made
mlx5_ib's create_cq 3656 bytes and overflowed that stack. This reads each function's frame from
its prologue (`sub $N, %rsp`) in the built .ko files.

Usage: check-frames.py LIMIT MODULE.ko...
"""

import re
import shutil
import subprocess
import sys

FUNC = re.compile(r"^[0-9a-f]+ <(.*)>:$")
SUB_RSP = re.compile(r"\bsub\w*\s+\$0x([0-9a-f]+),\s*%rsp")


def frames(ko: str):
    objdump = shutil.which("llvm-objdump-19") or shutil.which("llvm-objdump") or "objdump"
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", ko], capture_output=True,
                         text=True, check=True).stdout
    fn = None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            fn = m.group(1)
            continue
        m = SUB_RSP.search(line)
        if m and fn:
            yield int(m.group(1), 16), fn
            fn = None  # the prologue's only


def main() -> int:
    limit = int(sys.argv[1])
    over = []
    for ko in sys.argv[2:]:
        for size, fn in frames(ko):
            if size > limit:
                over.append((size, ko, fn))
    for size, ko, fn in sorted(over, reverse=True):
        print(f"check-frames: {ko}: {fn}: {size}-byte stack frame (limit {limit})", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
