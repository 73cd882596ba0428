#!/usr/bin/env python3
"""VM test harness: boot the test kernel with one RDMA stack against cx-model and run a scenario.

For one run it
  1. builds an initramfs: busybox, the chosen stack's modules, rdma-core/iproute2 binaries with
     their libraries and libibverbs provider files, the guest scripts and the scenario;
  2. starts cx-model on a vfio-user socket, then QEMU (TCG, shared memfd RAM, vfio-user-pci behind
     a pcie-root-port);
  3. reads the serial console, stops everything when the guest powers off, when cx-model or QEMU
     dies, or when the hard timeout expires (no process outlives the run);
  4. parses the scenario's KTAP and reports pass/fail.

Usage: harness.py run --scenario NAME --stack rust|c [options]   (see --help)
       harness.py shell --stack rust|c [options]
       harness.py list
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
GUEST = HERE / "guest"

# Module load order of each stack, as file names relative to the directory given for the stack.
STACK_MODULES = {
    "rust": ["ib_core", "mlx5_core", "mlx5_ib"],
    "c": ["dimlib", "ib_core", "ib_uverbs_support", "ib_uverbs", "ib_umad", "mlx5_core", "mlx5_ib"],
}
# Test-only modules of a stack, put next to its modules but not loaded by load_stack (scenarios
# insmod them).
STACK_EXTRAS = {
    "rust": ["mlx5_test_interface"],
    "c": [],
}
# Where the C modules sit in the kernel build tree.
C_MODULE_PATHS = {
    "dimlib": "lib/dim/dimlib.ko",
    "ib_uverbs_support": "drivers/infiniband/core/ib_uverbs_support.ko",
    "ib_core": "drivers/infiniband/core/ib_core.ko",
    "ib_uverbs": "drivers/infiniband/core/ib_uverbs.ko",
    "ib_umad": "drivers/infiniband/core/ib_umad.ko",
    "mlx5_core": "drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko",
    "mlx5_ib": "drivers/infiniband/hw/mlx5/mlx5_ib.ko",
}
# User-space tools copied into the guest, with their shared libraries.
GUEST_TOOLS = [
    "/usr/bin/rdma",
    "/usr/bin/ibv_devices", "/usr/bin/ibv_devinfo", "/usr/bin/ibv_rc_pingpong", "/usr/bin/ibv_asyncwatch",
    "/usr/bin/ibv_ud_pingpong", "/usr/bin/ibv_srq_pingpong", "/usr/bin/ibv_uc_pingpong",
    "/usr/bin/ibv_xsrq_pingpong",
    "/usr/bin/rping", "/usr/bin/ucmatose", "/usr/bin/udaddy",
    "/usr/bin/ib_write_bw", "/usr/bin/ib_read_bw", "/usr/bin/ib_send_bw",
    "/usr/bin/ib_send_lat", "/usr/bin/ib_write_lat", "/usr/bin/ib_read_lat",
    "/usr/bin/ib_atomic_bw",
    "/usr/bin/lspci",
]
# Programs built from this repository (--guest-tool), put in the guest's /usr/bin with their libraries.
REPO_TOOLS: list[Path] = []
# Data files the tools read.
GUEST_DATA = ["/usr/share/misc/pci.ids"]
LIBIBVERBS_PROVIDERS = Path("/usr/lib/x86_64-linux-gnu/libibverbs")
LIBIBVERBS_DRIVERS = Path("/etc/libibverbs.d")
DEFAULT_FW = "16.35.2000"
DEFAULT_TIMEOUT = 300


class HarnessError(Exception):
    """A failure of the run itself (not of a check inside the guest)."""


@dataclass
class KtapResult:
    """One `ok`/`not ok` line, with the diagnostics that followed it and its nesting depth."""
    ok: bool
    number: int
    name: str
    depth: int
    diagnostics: list[str] = field(default_factory=list)


def parse_ktap(lines: list[str]) -> tuple[list[KtapResult], int | None]:
    """Parses KTAP (nested subtests indented by 4 spaces). Returns the results and the top-level
    plan count if one was seen. Lines that are not KTAP are ignored."""
    results: list[KtapResult] = []
    plan = None
    result_re = re.compile(r"^( *)(ok|not ok) (\d+)(?: -)? ?([^#]*?)\s*(#.*)?$")
    plan_re = re.compile(r"^1\.\.(\d+)$")
    for raw in lines:
        line = raw.rstrip("\r\n")
        m = result_re.match(line)
        if m:
            depth = len(m.group(1)) // 4
            name = m.group(4).strip()
            directive = (m.group(5) or "").strip()
            ok = m.group(2) == "ok" or directive.upper().startswith("# SKIP")
            results.append(KtapResult(ok, int(m.group(3)), name, depth))
            continue
        pm = plan_re.match(line)
        if pm:
            plan = int(pm.group(1))
            continue
        if line.startswith("# ") and results and results[-1].depth == 0 and not results[-1].ok:
            results[-1].diagnostics.append(line[2:])
    return results, plan


def scenario_stacks(path: Path) -> list[str]:
    """Stacks a scenario runs on, from a `# stacks: rust c` header line (default: both)."""
    for line in path.read_text().splitlines()[:10]:
        m = re.match(r"#\s*stacks:\s*(.+)", line)
        if m:
            return m.group(1).split()
    return ["rust", "c"]


def scenario_timeout(path: Path) -> int:
    """Per-scenario hard timeout from a `# timeout: N` header line."""
    for line in path.read_text().splitlines()[:10]:
        m = re.match(r"#\s*timeout:\s*(\d+)", line)
        if m:
            return int(m.group(1))
    return DEFAULT_TIMEOUT


def scenario_model_args(path: Path) -> list[str]:
    """Extra cx-model arguments from `# cx-model: ...` header lines (e.g. fault rules)."""
    args: list[str] = []
    for line in path.read_text().splitlines()[:20]:
        m = re.match(r"#\s*cx-model:\s*(.+)", line)
        if m:
            args += m.group(1).split()
    return args


def scenario_host_checks(path: Path) -> list[str]:
    """Regexes from `# host-check: ...` lines that cx-model's report (commands.txt) must match."""
    return [m.group(1).strip() for line in path.read_text().splitlines()[:20]
            if (m := re.match(r"#\s*host-check:\s*(.+)", line))]


def available_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.sh"))


def shared_libraries(binary: str) -> set[str]:
    """The shared libraries `binary` loads, as absolute paths (via ldd)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False).stdout
    libs = set()
    for line in out.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.add(m.group(1))
    return libs


def copy_into(root: Path, src: str | Path) -> None:
    """Copies `src` to the same absolute path under `root`, following symlinks."""
    src = Path(src)
    dst = root / str(src).lstrip("/")
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists():
        shutil.copy2(src.resolve(), dst)


def build_initramfs(out: Path, stack: str, modules: dict[str, Path], conf: dict[str, str],
                    scenario: str | None) -> None:
    """Writes a newc cpio archive for one run to `out`."""
    with tempfile.TemporaryDirectory(prefix="rdma-rs-initramfs-") as tmp:
        root = Path(tmp)
        for d in ["bin", "sbin", "etc", "proc", "sys", "dev", "tmp", "root", "lib/rdma-rs",
                  "scenarios", f"lib/modules/{stack}"]:
            (root / d).mkdir(parents=True, exist_ok=True)
        busybox = shutil.which("busybox")
        if not busybox:
            raise HarnessError("busybox-static is not installed (run make setup)")
        shutil.copy2(busybox, root / "bin/busybox")
        shutil.copy2(GUEST / "init", root / "init")
        (root / "init").chmod(0o755)
        for f in ["ktap.sh", "stack.sh", "net.sh"]:
            shutil.copy2(GUEST / f, root / "lib/rdma-rs" / f)
        for s in SCENARIOS.glob("*.sh"):
            shutil.copy2(s, root / "scenarios" / s.name)
        libs: set[str] = set()
        for tool in GUEST_TOOLS:
            if not Path(tool).exists():
                raise HarnessError(f"{tool} is missing on the host (run make setup)")
            copy_into(root, tool)
            libs |= shared_libraries(tool)
        for tool in REPO_TOOLS:
            if not tool.exists():
                raise HarnessError(f"{tool} is missing (run make build)")
            (root / "usr/bin").mkdir(parents=True, exist_ok=True)
            shutil.copy2(tool, root / "usr/bin" / tool.name)
            libs |= shared_libraries(str(tool))
        for p in list(LIBIBVERBS_PROVIDERS.glob("*.so")):
            copy_into(root, p)
            libs |= shared_libraries(str(p))
        for p in GUEST_DATA:
            copy_into(root, p)
        for p in LIBIBVERBS_DRIVERS.glob("*.driver"):
            copy_into(root, p)
        for lib in sorted(libs):
            copy_into(root, lib)
        order = []
        for name in STACK_MODULES[stack]:
            src = modules[name]
            if not src.exists():
                raise HarnessError(f"module {name} for stack {stack} not found at {src} (run make build)")
            shutil.copy2(src, root / f"lib/modules/{stack}/{name}.ko")
            order.append(name)
        (root / f"lib/modules/{stack}/order").write_text("\n".join(order) + "\n")
        for name in STACK_EXTRAS[stack]:
            src = modules[name]
            if not src.exists():
                raise HarnessError(f"test module {name} not found at {src} (run make build)")
            shutil.copy2(src, root / f"lib/modules/{stack}/{name}.ko")
        (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
        (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
        (root / "etc/hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
        (root / "etc/rdma-rs.conf").write_text("".join(f"{k}='{v}'\n" for k, v in conf.items()))
        with open(out, "wb") as f:
            files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=root, input=files, stdout=f,
                           check=True)


def module_paths(args) -> dict[str, Path]:
    if args.stack == "rust":
        return {m: Path(args.rust_modules) / f"{m}.ko" for m in STACK_MODULES["rust"] + STACK_EXTRAS["rust"]}
    return {m: Path(args.kernel_tree) / C_MODULE_PATHS[m] for m in STACK_MODULES["c"]}


class Run:
    """Processes of one VM run; `stop()` leaves nothing behind."""

    def __init__(self, args, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.model: subprocess.Popen | None = None
        self.qemu: subprocess.Popen | None = None
        self.model_log = workdir / "cx-model.log"
        self.console_log = workdir / "console.log"
        self.socket = workdir / "cx.sock"
        self.control_socket = workdir / "control.sock"

    def control(self, command: str) -> str:
        """Sends one control command to cx-model; returns its reply line."""
        import socket
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.settimeout(10)
                c.connect(str(self.control_socket))
                c.sendall(command.encode() + b"\n")
                reply = b""
                while not reply.endswith(b"\n"):
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
        except OSError as e:
            return f"error control channel: {e}"
        with open(self.workdir / "control.log", "a") as log:
            log.write(f"{command} -> {reply.decode(errors='replace').strip()}\n")
        return reply.decode(errors="replace").strip()

    def start_model(self, extra: list[str] | None = None) -> None:
        if self.socket.exists():
            self.socket.unlink()
        env = dict(os.environ, RUST_LOG=os.environ.get("CX_MODEL_LOG", "debug"))
        self.model = subprocess.Popen(
            [self.args.cx_model, "--socket", str(self.socket), "--fw-version", self.args.fw_version,
             "--command-log", str(self.workdir / "commands.txt"),
             "--command-trace", str(self.workdir / "trace.txt"),
             "--control", str(self.control_socket), *(extra or [])],
            stdout=open(self.model_log, "wb"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        deadline = time.monotonic() + 20
        while not self.socket.exists():
            if self.model.poll() is not None:
                raise HarnessError(f"cx-model exited at start (code {self.model.returncode}); "
                                   f"see {self.model_log}")
            if time.monotonic() > deadline:
                raise HarnessError("cx-model did not create its socket within 20 s")
            time.sleep(0.05)

    def qemu_argv(self, initrd: Path, interactive: bool) -> list[str]:
        args = self.args
        dev = ('{"driver":"vfio-user-pci","socket":{"type":"unix","path":"%s"},"bus":"rp1"}'
               % self.socket)
        cmdline = "console=ttyS0 panic=-1 oops=panic" if not interactive else "console=ttyS0 panic=-1"
        if not interactive:
            cmdline += " loglevel=4"
        argv = [args.qemu, "-machine", "q35,accel=tcg,memory-backend=mem0", "-cpu", "max",
                "-smp", "2", "-m", "1G",
                "-object", "memory-backend-memfd,id=mem0,size=1G,share=on",
                "-device", "pcie-root-port,id=rp1,chassis=1,slot=1",
                "-device", dev,
                "-kernel", args.kernel, "-initrd", str(initrd), "-append", cmdline,
                "-nodefaults", "-no-reboot", "-display", "none", "-vga", "none"]
        for d in args.firmware_dirs:
            argv += ["-L", d]
        argv += ["-serial", "stdio"] if interactive else ["-serial", "stdio", "-monitor", "none"]
        return argv

    def stop(self) -> None:
        for p in (self.qemu, self.model):
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in (self.qemu, self.model):
            if p is None:
                continue
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def run_guest(self, initrd: Path, timeout: int, kill_model_after: float | None) -> list[str]:
        """Boots the guest and returns its console lines; raises HarnessError on timeout or when a
        process dies under it."""
        self.qemu = subprocess.Popen(self.qemu_argv(initrd, False), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        assert self.qemu.stdout is not None
        os.set_blocking(self.qemu.stdout.fileno(), False)
        start = time.monotonic()
        buf = b""
        scanned = 0
        with open(self.console_log, "wb") as log:
            while True:
                chunk = self.qemu.stdout.read()
                if chunk:
                    buf += chunk
                    log.write(chunk)
                    log.flush()
                    # Requests from the guest to the device (see guest/stack.sh: model_ctl): run
                    # them on cx-model's control channel and type the reply into the console.
                    while (nl := buf.find(b"\n", scanned)) >= 0:
                        line = buf[scanned:nl].decode(errors="replace").strip()
                        scanned = nl + 1
                        m = re.match(r"rdma-rs: host-request: (.+)$", line)
                        if m and self.qemu.stdin is not None:
                            reply = self.control(m.group(1).strip())
                            self.qemu.stdin.write(f"rdma-rs-reply {reply}\n".encode())
                            self.qemu.stdin.flush()
                if self.qemu.poll() is not None:
                    rest = self.qemu.stdout.read() or b""
                    buf += rest
                    log.write(rest)
                    break
                elapsed = time.monotonic() - start
                if kill_model_after is not None and elapsed > kill_model_after and self.model.poll() is None:
                    os.killpg(self.model.pid, signal.SIGKILL)
                if self.model.poll() is not None:
                    raise HarnessError(
                        f"cx-model died during the run (exit {self.model.returncode}) after "
                        f"{elapsed:.1f} s; stopping QEMU. Logs: {self.model_log}, {self.console_log}")
                if elapsed > timeout:
                    raise HarnessError(f"timeout: the guest did not finish within {timeout} s; "
                                       f"console in {self.console_log}")
                time.sleep(0.05)
        # QEMU is gone; the model sees the disconnect, prints its command report and exits.
        try:
            self.model.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        return buf.decode(errors="replace").splitlines()


def common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", choices=sorted(STACK_MODULES), default="rust")
    p.add_argument("--kernel", required=True, help="bzImage")
    p.add_argument("--kernel-tree", required=True, help="kernel build tree (C modules)")
    p.add_argument("--rust-modules", required=True, help="directory with our .ko files")
    p.add_argument("--qemu", required=True)
    p.add_argument("--firmware-dirs", nargs="+", default=["/usr/share/qemu", "/usr/share/seabios"])
    p.add_argument("--cx-model", required=True)
    p.add_argument("--fw-version", default=DEFAULT_FW)
    p.add_argument("--workdir", required=True, help="directory for logs and the initramfs")
    p.add_argument("--guest-tool", action="append", type=Path, default=[], dest="guest_tools",
                   help="a program built here, copied to the guest's /usr/bin (repeatable)")


def cmd_run(args) -> int:
    path = SCENARIOS / f"{args.scenario}.sh"
    if not path.exists():
        print(f"harness: no scenario named {args.scenario!r}; available: "
              f"{', '.join(available_scenarios())}", file=sys.stderr)
        return 2
    if args.stack not in scenario_stacks(path):
        print(f"harness: scenario {args.scenario} does not run on STACK={args.stack} "
              f"(it runs on: {' '.join(scenario_stacks(path))})", file=sys.stderr)
        return 2
    workdir = Path(args.workdir) / f"{args.scenario}-{args.stack}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    timeout = args.timeout or scenario_timeout(path)
    label = f"{args.scenario} ({args.stack})"
    started = time.monotonic()
    run = Run(args, workdir)
    try:
        initrd = workdir / "initramfs.cpio"
        build_initramfs(initrd, args.stack, module_paths(args),
                        {"SCENARIO": args.scenario, "STACK": args.stack, "EXPECT_FW": args.fw_version},
                        args.scenario)
        run.start_model(scenario_model_args(path))
        lines = run.run_guest(initrd, timeout, args.kill_model_after)
    except HarnessError as e:
        run.stop()
        print(f"harness: {label}: FAILED: {e}", file=sys.stderr)
        print(f"RESULT {label}: 0 passed, 1 failed (harness)")
        return 1
    finally:
        run.stop()
    elapsed = time.monotonic() - started
    if args.show_console:
        shown = False
        for line in lines:
            if "rdma-rs: guest up" in line:
                shown = True
            if shown:
                print(f"  guest| {line.rstrip()}")
            if "rdma-rs: ktap end" in line:
                break
    results, plan = parse_ktap(lines)
    top = [r for r in results if r.depth == 0]
    # Nested results are KUnit output; in KTAP a parent's line follows its children, so a nested
    # result is a test case (a leaf) when the result before it is not deeper.
    cases = [r for i, r in enumerate(results)
             if r.depth > 0 and (i == 0 or results[i - 1].depth <= r.depth)]
    leaves = cases + top
    finished = any("rdma-rs: ktap end" in l for l in lines)
    problems = []
    if not finished:
        problems.append("the guest did not finish the scenario (panic or early power-off?); "
                        f"see {run.console_log}")
    if plan is not None and plan != len(top):
        problems.append(f"plan says {plan} checks but {len(top)} ran")
    if not top:
        problems.append("no KTAP results")
    for r in top:
        mark = "ok" if r.ok else "FAIL"
        print(f"  [{mark:>4}] {label}: {r.name}")
        for d in r.diagnostics[:30]:
            print(f"         | {d}")
    for r in cases:
        print(f"  [{'ok' if r.ok else 'FAIL':>4}]   {label}: kunit case {r.name}")
    commands = workdir / "commands.txt"
    report = commands.read_text() if commands.exists() else ""
    for pattern in scenario_host_checks(path):
        ok = re.search(pattern, report, re.M) is not None
        top.append(KtapResult(ok, len(top) + 1, f"host: cx-model report matches /{pattern}/", 0))
        leaves.append(top[-1])
        print(f"  [{'ok' if ok else 'FAIL':>4}] {label}: host: cx-model report matches /{pattern}/")
    if report.strip():
        print(f"  cx-model: commands the driver issued ({label}):")
        for line in commands.read_text().splitlines():
            print(f"    {line}")
    for p in problems:
        print(f"  [FAIL] {label}: {p}")
    passed = sum(r.ok for r in leaves)
    failed = sum(not r.ok for r in leaves) + len(problems)
    print(f"RESULT {label}: {passed} passed, {failed} failed ({elapsed:.0f} s; logs in {workdir})")
    return 0 if failed == 0 else 1


def cmd_shell(args) -> int:
    workdir = Path(args.workdir) / f"shell-{args.stack}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    run = Run(args, workdir)
    try:
        initrd = workdir / "initramfs.cpio"
        build_initramfs(initrd, args.stack, module_paths(args),
                        {"SCENARIO": "shell", "STACK": args.stack, "EXPECT_FW": args.fw_version}, None)
        run.start_model()
        print(f"harness: cx-model log in {run.model_log}; Ctrl-A X quits QEMU", file=sys.stderr)
        qemu = subprocess.Popen(run.qemu_argv(initrd, True))
        run.qemu = qemu
        qemu.wait()
    except HarnessError as e:
        print(f"harness: shell: {e}", file=sys.stderr)
        return 1
    finally:
        run.stop()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run one scenario")
    r.add_argument("--scenario", required=True)
    r.add_argument("--timeout", type=int, default=0, help="hard timeout in seconds")
    r.add_argument("--show-console", action="store_true",
                   help="print the guest's console output of the scenario")
    r.add_argument("--kill-model-after", type=float, default=None,
                   help="kill cx-model this many seconds into the run (tests the harness)")
    common_args(r)
    s = sub.add_parser("shell", help="interactive guest")
    common_args(s)
    sub.add_parser("list", help="list scenarios and their stacks")
    args = ap.parse_args()
    REPO_TOOLS.extend(getattr(args, "guest_tools", []))
    if args.cmd == "list":
        for name in available_scenarios():
            print(f"{name}: {' '.join(scenario_stacks(SCENARIOS / f'{name}.sh'))}")
        return 0
    if args.cmd == "run":
        args.show_console = getattr(args, "show_console", False)
        return cmd_run(args)
    return cmd_shell(args)


if __name__ == "__main__":
    sys.exit(main())
