#!/usr/bin/env python3
"""make bench: probe-to-ready time of the Rust and the C mlx5_core on the same cx-model.

Runs the `bench-probe` scenario on each stack (one VM per stack, same kernel, same model), reads
the `# bench probe_us N` lines each run printed, and reports the median per stack and the ratio
Rust / C. Under TCG the absolute numbers say little about hardware; the ratio compares the two
drivers' bring-up on equal terms (the C driver issues more commands: it also sets up the command
EQ, flow steering, health and more; see docs/c-bringup-commands.md).

Usage: probe.py [--label TEXT] -- <harness arguments> (TEXT names the kernel in the output)
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "tools/vm/harness.py"


def run(stack: str, harness_args: list[str]) -> list[int]:
    # The model at `info`, as in verbs.py (its `debug` lines cost the host file writes).
    env = dict(os.environ, CX_MODEL_LOG=os.environ.get("CX_MODEL_LOG", "info"))
    p = subprocess.run([sys.executable, str(HARNESS), "run", "--scenario", "bench-probe", "--stack", stack,
                        *harness_args], capture_output=True, text=True, env=env)
    result = [l for l in p.stdout.splitlines() if l.startswith("RESULT")]
    print(result[-1] if result else p.stdout[-2000:] + p.stderr[-2000:], flush=True)
    if p.returncode != 0:
        raise SystemExit(f"bench-probe failed on the {stack} stack")
    workdir = Path(harness_args[harness_args.index("--workdir") + 1]) / f"bench-probe-{stack}"
    console = (workdir / "console.log").read_text(errors="replace")
    times = [int(m) for m in re.findall(r"^# bench probe_us (\d+)", console, re.M)]
    if not times:
        raise SystemExit(f"no timings in {workdir}/console.log")
    return times


def main() -> int:
    args = sys.argv[1:]
    label = ""
    if args[:1] == ["--label"] and len(args) > 1:
        label, args = f"[{args[1]}] ", args[2:]
    if args and args[0] == "--":
        args = args[1:]
    medians = {}
    for stack in ("c", "rust"):
        t = run(stack, args)
        medians[stack] = statistics.median(t)
        print(f"{label}{stack:5} probe-to-ready over {len(t)} loads: median {medians[stack] / 1000:.1f} ms "
              f"(min {min(t) / 1000:.1f}, max {max(t) / 1000:.1f})", flush=True)
    ratio = medians["rust"] / medians["c"]
    print(f"{label}ratio rust/c (median probe-to-ready): {ratio:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
