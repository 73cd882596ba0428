#!/usr/bin/env python3
"""Runs every test of the project and ends with the line `N passed, N failed`.

  0. style: rustfmt (kernel configuration) and cargo fmt; no import cycle in any crate
     (`make layers`); a from-scratch build of our modules with clippy, which must print no warning; cargo clippy of cx-model with warnings denied;
  1. host: `cargo test` of cx-model (each test case counts);
  2. VM scenarios, each on every stack it supports (each KTAP check and KUnit case counts);
     KUnit suites run inside the `kunit` scenario; three guests at once (TEST_JOBS; a two-VM
     run counts two), except a scenario with `# exclusive: yes`, which runs alone;
  3. harness self-checks: an unknown scenario is refused with a clear message, and a run whose
     cx-model is killed fails fast with a clear message.

Usage: run_all.py --cargo-target DIR --ktree DIR --bindgen PATH -- <harness arguments>
       run_all.py ... --only a,b,c [--stack rust] -- <harness arguments>   (those VM scenarios only)
Exits non-zero if anything failed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "tools/vm/harness.py"


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lines = []
        # Why each failed run failed (its failing checks and the end of its guest console),
        # printed with the summary: CI keeps only the summary of a run.
        self.why = []

    def add(self, name, passed, failed, failing=()):
        """Counts a step's checks; `failing` names its failed checks, listed under its summary
        line (CI shows the summary's failing lines, not always the digests after it)."""
        self.passed += passed
        self.failed += failed
        self.lines.append(f"{'PASS' if failed == 0 else 'FAIL'}  {name}: {passed} passed, {failed} failed")
        self.lines += [f"        failed: {f}" for f in list(failing)[:6]]


def cargo_tests(tally, crate_dir, target):
    header(f"cargo test ({crate_dir.relative_to(REPO)})")
    p = subprocess.run(["cargo", "test", "--release", "-q"], cwd=crate_dir, capture_output=True, text=True,
                       env=dict(os.environ, CARGO_TARGET_DIR=str(target)))
    print(p.stdout[-3000:] + p.stderr[-3000:], flush=True)
    passed = sum(int(m) for m in re.findall(r"test result: \w+\. (\d+) passed", p.stdout))
    failed = sum(int(m) for m in re.findall(r"(\d+) failed;", p.stdout))
    if p.returncode != 0 and failed == 0:
        failed = 1  # did not build or crashed
    tally.add(f"host: cargo test {crate_dir.name}", passed, failed)


def style_checks(tally, args, during=()):
    """rustfmt; our modules built from scratch with clippy, in the background while `during`
    runs (each a function of the tally: the rebuild is mostly single-threaded rustc, so other
    checks use the second core meanwhile); clippy on cx-model."""
    env = dict(os.environ, CARGO_TARGET_DIR=args.cargo_target)
    header("style: rustfmt")
    p = subprocess.run(["make", "-s", "--no-print-directory", "fmt-check"], cwd=REPO, capture_output=True,
                       text=True)
    print((p.stdout + p.stderr)[-4000:], flush=True)
    tally.add("style: rustfmt", int(p.returncode == 0), int(p.returncode != 0))

    header("style: layers (no import cycle in any crate)")
    p = subprocess.run(["make", "-s", "--no-print-directory", "layers"], cwd=REPO, capture_output=True,
                       text=True)
    print((p.stdout + p.stderr)[-4000:], flush=True)
    tally.add("style: no import cycle in any crate", int(p.returncode == 0), int(p.returncode != 0))

    # The C ABI's contract (docs/c-abi.md): the list of C ib_core's exports that the C modules
    # meant to load on the Rust core import must be what this build's C modules import; then how
    # much of it our modules export (a figure, not a check: the work is under way).
    header("style: the C ABI's contract is current")
    abi = [sys.executable, str(REPO / "tools/dev/c_abi_imports.py")]
    contract = REPO / "drivers/infiniband/core/c_abi/imports.txt"
    p = subprocess.run([*abi, "check", args.ktree, str(REPO / "out/verbs-twin")], cwd=REPO,
                       capture_output=True, text=True)
    cover = subprocess.run([*abi, "cover", str(contract), str(REPO / "out/modules/ib_core.ko"),
                            str(REPO / "out/modules/ib_uverbs.ko")], cwd=REPO, capture_output=True, text=True)
    # The figure only (the list of what is missing is long while little is done).
    figure = cover.stdout.splitlines()[:1] or [cover.stderr.strip()]
    print((p.stdout + p.stderr)[-4000:] + figure[0], flush=True)
    tally.add("style: the C ABI's contract is current", int(p.returncode == 0), int(p.returncode != 0))

    # The warnings of a build of every module: `make modules`' own when it built everything
    # (a fresh clone, as CI's), else a rebuild from scratch in the background.
    kind = REPO / "out/modules-build.kind"
    full_log = REPO / "out/modules-build.log"
    rebuild = None
    if kind.exists() and kind.read_text().strip() == "full" and full_log.exists():
        reused = full_log.read_text(errors="replace")
    else:
        reused = None
        mo = REPO / "out/clippy"
        shutil.rmtree(mo, ignore_errors=True)
        mo.mkdir(parents=True)
        log = tempfile.TemporaryFile(mode="w+")
        rebuild = subprocess.Popen(["make", "-C", args.ktree, f"-j{os.cpu_count() or 1}",
                                    f"LLVM={os.environ.get('KERNEL_LLVM', '-22')}", f"BINDGEN={args.bindgen}",
                                    f"M={REPO}", f"MO={mo}", f"RDMA_RS_CONFIG={REPO / 'out/rdma-rs.config'}",
                                    "CLIPPY=1", "modules"],
                                   stdout=log, stderr=subprocess.STDOUT, text=True)

    header("style: cargo clippy (cx-model)")
    p = subprocess.run(["cargo", "clippy", "-q", "--release", "--all-targets", "--", "-D", "warnings"],
                       cwd=REPO / "tools/cx-model", capture_output=True, text=True, env=env)
    print((p.stdout + p.stderr)[-4000:], flush=True)
    tally.add("style: cargo clippy cx-model", int(p.returncode == 0), int(p.returncode != 0))
    for check in during:
        check(tally)

    if rebuild is None:
        out, rc = reused, 0
        header("style: clippy and rustc warnings, our modules built from scratch (make modules' build)")
    else:
        rebuild.wait()
        log.seek(0)
        out, rc = log.read(), rebuild.returncode
        log.close()
        header("style: clippy and rustc warnings, our modules built from scratch")
    warnings = [l for l in out.splitlines() if re.match(r"^(warning|error)(\[|:)", l)]
    print("\n".join(warnings[:40]) or "no warnings", flush=True)
    ok = rc == 0 and not warnings
    if rc != 0:
        print(out[-4000:], flush=True)
    tally.add("style: clippy on kernel modules, no warnings", int(ok), int(not ok))


def kconfig_checks(tally, args):
    """The Kconfig symbols decide what is built, with C's dependencies: without mlx5_core there is
    no mlx5_ib and no mlx5 test driver, and ib_core stays."""
    header("kconfig: dependencies, evaluated against the test kernel")
    with tempfile.TemporaryDirectory(prefix="rdma-rs-kconfig-") as tmp:
        out = Path(tmp) / "rdma-rs.config"
        p = subprocess.run([str(REPO / "tools/kernel/rdma-rs-config.sh"), str(REPO), args.ktree, str(out),
                            args.bindgen, "CONFIG_RDMA_RS_MLX5_CORE=n"], capture_output=True, text=True)
        text = out.read_text() if out.exists() else ""
    print((p.stdout + p.stderr)[-2000:] + text, flush=True)
    lines = text.splitlines()
    want = ["CONFIG_RDMA_RS_IB_CORE=m", "# CONFIG_RDMA_RS_MLX5_CORE is not set", "CONFIG_RDMA_RS_TEST_PROVIDER=m"]
    # Symbols whose dependencies are not met are left out of the file (kconfig's way).
    off = ["CONFIG_RDMA_RS_MLX5_IB", "CONFIG_RDMA_RS_MLX5_TEST_INTERFACE"]
    ok = (p.returncode == 0 and all(w in lines for w in want)
          and not any(l.startswith(f"{o}=") for o in off for l in lines))
    tally.add("kconfig: mlx5_core=n leaves out mlx5_ib and the mlx5 test driver, keeps ib_core",
              int(ok), int(not ok))


def header_value(name, key):
    """The value of the scenario's `# key: value` header line, or None."""
    path = HARNESS.parent / "scenarios" / f"{name}.sh"
    try:
        head = path.read_text().splitlines()
    except OSError:
        return None
    # The header is every comment line before the first other line (the harness reads it so).
    for line in head:
        if not line.startswith("#"):
            break
        m = re.match(rf"#\s*{re.escape(key)}:\s*(\S+)", line)
        if m:
            return m.group(1)
    return None


def skipped_by_header(name):
    """Whether the scenario's header says `# make-test: no`."""
    return header_value(name, "make-test") == "no"


@dataclass
class VmRun:
    """One scenario on one stack, as make test runs it."""
    name: str
    stack: str
    # Runs with no other scenario beside it: `# exclusive: yes` (timing that another guest's load
    # could upset).
    exclusive: bool
    # The scenario's `# timeout:`, the scheduler's guess of how long it runs (longest first).
    weight: int
    # Guests the run boots (`# vms:`): each takes one of the `jobs` places.
    guests: int = 1
    # Boots the in-tree build (`# kernel: intree`), which `--deferred-build` may still be making.
    needs_deferred: bool = False
    # When it started (time.monotonic()), for the section header.
    started: float = 0.0
    # CPU seconds (user + system) the run used: the harness and every process it waited for
    # (QEMU, cx-model), from wait4().
    cpu: float = 0.0


def scenarios():
    out = subprocess.run([sys.executable, str(HARNESS), "list"], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        name, stacks = line.split(":", 1)
        name = name.strip()
        if name.startswith("bench-"):
            continue  # benchmarks run under `make bench`, not as tests
        if name.startswith("selfcheck-"):
            continue  # runs that must fail, run by harness_selfcheck
        if name == "showcase":
            continue  # the main job's walk-through, run by `make run`
        if skipped_by_header(name):
            continue  # `# make-test: no`: long variants, run by hand
        exclusive = header_value(name, "exclusive") == "yes"
        weight = int(header_value(name, "timeout") or 300)
        guests = int(header_value(name, "vms") or 1)
        deferred = header_value(name, "kernel") == "intree"
        for stack in stacks.split():
            yield VmRun(name, stack, exclusive, weight, guests, deferred)


# When the run began: section headers say how far into it they are, so a slow run shows where
# the time went (the build before it is not counted).
T0 = time.monotonic()


def header(text):
    """Prints a section header with the seconds since the test run began."""
    print(f"== [{time.monotonic() - T0:.0f} s] {text}", flush=True)


def vm_tally(tally, run, returncode, output):
    """Prints one finished run's output and counts its checks."""
    header(f"vm: {run.name} ({run.stack}), started at {run.started - T0:.0f} s, {run.cpu:.0f} CPU-s")
    print(output, flush=True)
    m = re.search(r"^RESULT .*: (\d+) passed, (\d+) failed", output, re.M)
    passed, failed = (int(m.group(1)), int(m.group(2))) if m else (0, 1)
    if returncode != 0 and failed == 0:
        failed = 1
    failing = [re.sub(r"^\s*\[FAIL\]\s*", "", l)[:160] for l in output.splitlines()
               if "[FAIL]" in l or "FAILED" in l]
    tally.add(f"vm: {run.name} ({run.stack})", passed, failed, failing)
    if failed:
        tally.why.append(failure_digest(f"vm: {run.name} ({run.stack})", output))


def failure_digest(name, output):
    """A failed run's failing checks with their diagnostics, and the last lines of each guest
    console it names (where a panic or a hang shows)."""
    lines = output.splitlines()
    keep = []
    for i, line in enumerate(lines):
        if "[FAIL]" in line or "FAILED" in line:
            keep.append(line)
            keep += [d for d in lines[i + 1:i + 12] if d.lstrip().startswith("|")][:10]
    for d in dict.fromkeys(re.findall(r"logs in (\S+?)\)", output)):
        for log in sorted(Path(d).glob("**/console.log")):
            try:
                tail = log.read_text(errors="replace").splitlines()[-25:]
            except OSError:
                continue
            keep.append(f"  console tail ({log}):")
            keep += [f"    {t}" for t in tail]
    return [f"-- {name}"] + keep[:80]


def cpu_times():
    """The host's CPU time so far, in clock ticks: (busy, total) over all CPUs (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]  # guest time is counted in user
    idle = ticks[3] + ticks[4]  # idle, iowait
    return sum(ticks) - idle, sum(ticks)


class DeferredBuild:
    """A build the VM runs do not wait for (the in-tree kernel, `--deferred-build`): started
    niced once the exclusive runs are done, it takes the CPU time the guests leave idle (they
    wait on timers and each other); the runs that boot what it makes wait for it."""

    def __init__(self, command):
        self.command = command
        self.proc = None
        self.out = None
        self.started = 0.0
        self.ok = None  # None while not started or running; then whether it succeeded

    def start(self):
        """Starts the build (once)."""
        if self.command and self.proc is None:
            self.out = tempfile.TemporaryFile(mode="w+")
            self.started = time.monotonic()
            self.proc = subprocess.Popen(["nice", "-n", "19", "sh", "-c", self.command], stdout=self.out,
                                         stderr=subprocess.STDOUT, text=True)

    def done(self):
        """Whether runs that need it may start (it ended, or there is none)."""
        if not self.command:
            return True
        if self.proc is None or self.proc.poll() is None:
            return False
        if self.ok is None:
            self.ok = self.proc.returncode == 0
            self.out.seek(0)
            self.log = self.out.read()
            self.out.close()
            header(f"deferred build, started at {self.started - T0:.0f} s, "
                   f"{time.monotonic() - self.started:.0f} s: {self.command}")
            print(self.log[-4000:], flush=True)
        return True


def vm_scenarios(tally, runs, harness_args, jobs, deferred=None):
    """Runs the VM scenarios, up to `jobs` guests at once (each run has its own work directory,
    sockets and cx-model, so runs do not share anything; a two-VM run counts two). Exclusive
    runs go first, one at a time, then the rest longest first (the longest that fits beside the
    ones running). Each run's output is printed when it ends. A `deferred` build starts after
    the exclusive runs; the runs that need it start once it has ended (failed: they fail)."""
    deferred = deferred or DeferredBuild(None)
    pending = sorted(runs, key=lambda r: (not r.exclusive, -r.weight))
    running = []  # (run, Popen, output file)
    busy0, total0 = cpu_times()
    cpu_runs = 0.0
    while pending or running:
        if not any(r.exclusive for r in pending) and not any(r.exclusive for r, _, _ in running):
            deferred.start()
        built = deferred.done()
        if built and deferred.ok is False:
            for r in [r for r in pending if r.needs_deferred]:
                pending.remove(r)
                tally.add(f"vm: {r.name} ({r.stack})", 0, 1)
                tally.why.append([f"vm: {r.name} ({r.stack}): the deferred build failed: {deferred.command}",
                                  *deferred.log.splitlines()[-20:]])
        while pending and not any(r.exclusive for r, _, _ in running):
            busy = sum(r.guests for r, _, _ in running)
            nxt = None
            for r in pending:
                if r.exclusive:
                    # Exclusive runs come first, alone: nothing starts while one waits.
                    nxt = None if running else r
                    break
                if r.needs_deferred and not built:
                    continue
                if not running or busy + r.guests <= jobs:
                    nxt = r  # the longest run that fits beside the ones running
                    break
            if nxt is None:
                break
            pending.remove(nxt)
            nxt.started = time.monotonic()
            out = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen([sys.executable, str(HARNESS), "run", "--scenario", nxt.name, "--stack",
                                     nxt.stack, *harness_args], stdout=out, stderr=subprocess.STDOUT, text=True)
            running.append((nxt, proc, out))
        time.sleep(0.5)
        for entry in list(running):
            run, proc, out = entry
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == 0:
                continue
            proc.returncode = os.waitstatus_to_exitcode(status)
            run.cpu = usage.ru_utime + usage.ru_stime
            running.remove(entry)
            out.seek(0)
            vm_tally(tally, run, proc.returncode, out.read())
            out.close()
            cpu_runs += run.cpu
    if deferred.proc is not None:
        # Nothing needed it (or it ended already): it still finishes before the summary.
        deferred.proc.wait()
        deferred.done()
        if deferred.ok is False:
            tally.add("deferred build", 0, 1)
    busy1, total1 = cpu_times()
    if total1 > total0:
        print(f"vm runs: the host's CPUs were busy {100 * (busy1 - busy0) / (total1 - total0):.0f}% of the time; "
              f"the runs used {cpu_runs:.0f} CPU-s", flush=True)


def harness_selfcheck(tally, harness_args):
    header("harness: scenario header keys")
    sys.path.insert(0, str(HARNESS.parent))
    import harness  # noqa: E402 (the harness is a script beside this one)
    stray = []
    for script in sorted((HARNESS.parent / "scenarios").glob("*.sh")):
        lines = set(harness.header_lines(script))
        keyed = [line for line in script.read_text().splitlines()
                 if re.match(r"#\s*(stacks|timeout|cx-model|kernel-args|host-trace|host-check|vms|vm-stacks|install-modules|exclusive|make-test|kernel|kunit|cpus|guest-python)\s*:", line)]
        stray += [f"{script.name}: {line}" for line in keyed if line not in lines]
    for line in stray:
        print(f"  outside the header, ignored: {line}", flush=True)
    tally.add("harness: every scenario key line is in the header it is read from", int(not stray),
              int(bool(stray)))

    header("harness: a planted kernel warning fails the run")
    p = subprocess.run([sys.executable, str(HARNESS), "run", "--scenario", "selfcheck-planted-report",
                        "--stack", "rust", *harness_args], capture_output=True, text=True)
    out = p.stdout + p.stderr
    failed_line = [l for l in out.splitlines() if "[FAIL]" in l and "guest kernel log has no warning" in l]
    ok = (p.returncode != 0 and len(failed_line) == 1 and "planted/by/the/harness-selfcheck" in out
          and re.search(r"RESULT selfcheck-planted-report \(rust\): \d+ passed, 1 failed", out) is not None)
    print("\n".join(l for l in out.splitlines() if "[" in l or "RESULT" in l)[-3000:], flush=True)
    tally.add("harness: a warning planted in the guest kernel log fails the run", int(ok), int(not ok))

    header("harness: unknown scenario is refused")
    p = subprocess.run([sys.executable, str(HARNESS), "run", "--scenario", "nonexistent", *harness_args],
                       capture_output=True, text=True)
    ok = p.returncode != 0 and "no scenario named 'nonexistent'" in p.stderr
    print(p.stderr.strip(), flush=True)
    tally.add("harness: unknown scenario is refused with a clear message", int(ok), int(not ok))

    header("harness: cx-model killed mid-run")
    # `modules` uses the device for half a minute, so the model dies mid-run (`boot` can finish
    # within the three seconds).
    start = time.monotonic()
    p = subprocess.run([sys.executable, str(HARNESS), "run", "--scenario", "modules", "--stack", "rust",
                        "--kill-model-after", "3", *harness_args], capture_output=True, text=True)
    took = time.monotonic() - start
    print(p.stderr.strip(), f"({took:.0f} s)", flush=True)
    ok = p.returncode != 0 and "cx-model died during the run" in p.stderr and took < 60
    tally.add("harness: a killed cx-model fails the run fast with a clear message", int(ok), int(not ok))

    header("harness: no process outlives the runs")
    workdir = next((a.split("=", 1)[1] for a in harness_args if a.startswith("--workdir=")), None)
    if workdir is None and "--workdir" in harness_args:
        workdir = harness_args[harness_args.index("--workdir") + 1]
    p = subprocess.run(["pgrep", "-af", f"{workdir}/"], capture_output=True, text=True)
    strays = [l for l in p.stdout.splitlines() if "pgrep" not in l]
    print("\n".join(strays) or "none", flush=True)
    tally.add("harness: no stray QEMU or cx-model processes", int(not strays), int(bool(strays)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cargo-target", required=True)
    ap.add_argument("--ktree", required=True, help="kernel build tree")
    ap.add_argument("--bindgen", required=True)
    # Three at once on two cores: with two, the cores were idle 18% of the time (guests waiting
    # out command timeouts and sleeps); docs/testing.md.
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("TEST_JOBS", "3")),
                    help="VM scenarios run at once (TEST_JOBS; default 3)")
    ap.add_argument("--only", help="VM scenarios only: these (comma-separated), on --stack")
    ap.add_argument("--deferred-build", help="a shell command making what `# kernel: intree` runs boot, "
                    "run niced beside the VM runs (after the exclusive ones); those runs wait for it")
    ap.add_argument("--stack", default="rust", help="the stack --only runs them on")
    ap.add_argument("harness_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    harness_args = [a for a in args.harness_args if a != "--"]
    started = time.monotonic()
    tally = Tally()
    if args.only:
        runs = [VmRun(n, args.stack, header_value(n, "exclusive") == "yes",
                      int(header_value(n, "timeout") or 300), int(header_value(n, "vms") or 1),
                      header_value(n, "kernel") == "intree")
                for n in args.only.split(",") if n]
        vm_scenarios(tally, runs, harness_args, args.jobs, DeferredBuild(args.deferred_build))
    else:
        # The deferred build from the start, niced: it takes what the style checks and the
        # exclusive runs leave idle (a core for most of the first two minutes).
        deferred = DeferredBuild(args.deferred_build)
        deferred.start()
        # cx-model's tests (cargo only) while the modules rebuild; the Kconfig check runs make
        # in the kernel tree, so after it.
        style_checks(tally, args, during=(
            lambda t: cargo_tests(t, REPO / "tools/cx-model", args.cargo_target),
        ))
        kconfig_checks(tally, args)
        vm_scenarios(tally, list(scenarios()), harness_args, args.jobs, deferred)
        harness_selfcheck(tally, harness_args)
    print("\n== summary", flush=True)
    for line in tally.lines:
        print(line)
    for digest in tally.why:
        print("\n".join(digest))
    print(f"test time: {time.monotonic() - started:.0f} s")
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
