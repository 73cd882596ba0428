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
A scenario with a `# vms: 2` header runs in two guests at once, each with its own cx-model: the
guests are linked by a virtio-net NIC pair (QEMU stream netdev on a unix socket, static addresses
10.23.0.1 and 10.23.0.2), the two models by a wire socket, and the scenario branches on $VM_INDEX;
with `# vm-stacks: rust c` VM 0 runs the Rust stack and VM 1 the C stack.

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
    "rust": ["ib_core", "ib_uverbs", "ib_umad", "mlx5_core", "mlx5_ib"],
    "c": ["dimlib", "ib_core", "ib_uverbs_support", "ib_uverbs", "ib_umad", "mlx5_core", "mlx5_ib"],
}
# Test-only modules of a stack, put next to its modules but not loaded by load_stack (scenarios
# insmod them). The C stack's ib_verbs_client is the C twin of the Rust sample (tools/verbs-twin,
# given with --verbs-twin), so that a scenario insmods $stack_dir/ib_verbs_client.ko on both; so
# is its ib_verbs_bench (the data-path micro-benchmark of `make bench`, next to it).
# ib_c_clients, ib_c_verbs, ib_c_mad, ib_c_cm, ib_c_sa and ib_c_rdmacm (tools/verbs-twin too) are C
# modules for both stacks: C ib_core clients, a C kernel verbs consumer, a MAD agent API user, a
# user of ib_cm, a user of the SA client and a user of rdma_cm, that load on the Rust core through
# its C ABI; ib_cm, iw_cm, rdma_cm and rdma_ucm are C's connection managers from the kernel tree
# (configfs, which rdma_cm needs, with them), and ib_ipoib C's IPoIB, the same files on both
# stacks; so are C's software drivers rdma_rxe and siw (and the UDP tunnels rxe needs), and
# ib_c_roce (tools/verbs-twin) uses rxe. On the Rust
# stack, ib_verbs_client_c.ko and ib_verbs_peer_c.ko are the C twins themselves (the modules are
# still named ib_verbs_client and ib_verbs_peer), for the twins on the Rust core (scenarios
# c-abi-twin, c-abi-peer-2vm).
STACK_EXTRAS = {
    "rust": ["mlx5_test_interface", "ib_test_provider", "ib_verbs_client", "ib_mad_agent", "ib_verbs_bench",
             "ib_verbs_peer", "ib_c_clients", "ib_c_verbs", "ib_c_mad", "ib_c_cm", "ib_c_sa", "ib_c_rdmacm",
             "ib_cm", "iw_cm", "configfs", "rdma_cm", "rdma_ucm", "ib_ipoib", "ib_verbs_client_c",
             "ib_verbs_peer_c", "udp_tunnel", "ip6_udp_tunnel", "rdma_rxe", "siw", "ib_c_roce"],
    "c": ["ib_verbs_client", "ib_verbs_bench", "ib_verbs_peer", "ib_c_clients", "ib_c_verbs", "ib_c_mad",
          "ib_c_cm", "ib_c_sa", "ib_c_rdmacm", "ib_cm", "iw_cm", "configfs", "rdma_cm", "rdma_ucm",
          "ib_ipoib", "udp_tunnel", "ip6_udp_tunnel", "rdma_rxe", "siw", "ib_c_roce"],
}
# NVMe over RDMA: C's host and target drivers, what they depend on, and null_blk (the target's
# namespace), from the kernel tree; installed for the scenarios that name them.
NVME_MODULES = {
    "null_blk": "drivers/block/null_blk/null_blk.ko",
    "nvme-core": "drivers/nvme/host/nvme-core.ko",
    "nvme-fabrics": "drivers/nvme/host/nvme-fabrics.ko",
    "nvme-rdma": "drivers/nvme/host/nvme-rdma.ko",
    "nvmet": "drivers/nvme/target/nvmet.ko",
    "nvmet-rdma": "drivers/nvme/target/nvmet-rdma.ko",
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
    "/usr/bin/rping", "/usr/bin/ucmatose", "/usr/bin/udaddy", "/usr/bin/cmtime",
    "/usr/bin/ib_write_bw", "/usr/bin/ib_read_bw", "/usr/bin/ib_send_bw",
    "/usr/bin/ib_send_lat", "/usr/bin/ib_write_lat", "/usr/bin/ib_read_lat",
    "/usr/bin/ib_atomic_bw",
    "/usr/bin/lspci",
    "/usr/sbin/ibstat", "/usr/sbin/ibstatus", "/usr/sbin/perfquery", "/usr/sbin/smpquery",
    # the managed fabric (fabric-*.sh): a subnet manager, its test client and the SA/SM diagnostics
    "/usr/sbin/opensm", "/usr/sbin/osmtest", "/usr/sbin/sminfo", "/usr/sbin/saquery",
    "/usr/sbin/ibnetdiscover", "/usr/sbin/ibroute", "/usr/sbin/ibaddr", "/usr/sbin/ibportstate",
    "/usr/sbin/smpdump",
]
# Programs built from this repository (--guest-tool), put in the guest's /usr/bin with their libraries.
REPO_TOOLS: list[Path] = []
# Data files the tools read.
# `# guest-python: yes` (see `add_python`): Debian's interpreter (python3-pyverbs is built for it;
# the host's `python3` on PATH may be another one), its standard library without what rdma-core's
# tests cannot need, pyverbs, and the tests, which Debian installs as documentation with several
# files gzip-compressed (unpacked into the guest at the same path).
PYTHON = Path("/usr/bin/python3")
PYVERBS = Path("/usr/lib/python3/dist-packages/pyverbs")
RDMA_CORE_TESTS = Path("/usr/share/doc/rdma-core/tests")
PYTHON_STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "__pycache__",
                      "distutils", "pydoc_data", "venv", "site-packages", "dist-packages", "turtle.py",
                      "sqlite3", "curses", "dbm", "EXTERNALLY-MANAGED", "LICENSE.txt"}
# Extension modules left out: test modules, and those of databases, terminals, TLS and OpenSSL's
# hashes (hashlib falls back to the built-in ones), NIS, crypt(3), audio, the CJK codecs: with
# their libraries (libcrypto, libssl, libdb, libsqlite3, Kerberos, ncurses, ...) about 12 MiB.
PYTHON_DYNLOAD_SKIP = re.compile(r"^(_test|_ctypes_test|xxlimited|_xxtestfuzz|_xxsubinterpreters|_tkinter"
                                 r"|_crypt|_curses|_dbm|_gdbm|_hashlib|_sqlite3|_ssl|nis|readline|_codecs_"
                                 r"|_multibytecodec|audioop|ossaudiodev|_lsprof)")
# The guest-side runner of the tests (copied next to them).
PYVERBS_RUNNER = "rdma_core_tests.py"
GUEST_DATA = ["/usr/share/misc/pci.ids",
              # glibc loads it when a thread is cancelled (osmtest and opensm cancel theirs)
              "/lib/x86_64-linux-gnu/libgcc_s.so.1", "/etc/rdma/modules/rdma.conf", "/etc/rdma/modules/infiniband.conf"]
LIBIBVERBS_PROVIDERS = Path("/usr/lib/x86_64-linux-gnu/libibverbs")
LIBIBVERBS_DRIVERS = Path("/etc/libibverbs.d")
DEFAULT_FW = "16.35.2000"
DEFAULT_TIMEOUT = 300
# Two-VM runs: the guests' NIC driver and the modules it needs, in load order, as paths in the kernel
# build tree (guest/net.sh loads them from /lib/modules/net/).
NET_MODULES = {
    "failover": "net/core/failover.ko",
    "net_failover": "drivers/net/net_failover.ko",
    "dimlib": "lib/dim/dimlib.ko",
    "virtio_net": "drivers/net/virtio_net.ko",
}
MAX_VMS = 2
# CPUs a guest may have: the test kernel's CONFIG_NR_CPUS (tools/kernel/config.fragment).
MAX_CPUS = 4


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


# A kernel log line (timestamped) that is a report of the kernel's bug detectors: a warning, a
# BUG or oops, lockdep, RCU, UBSAN, KASAN, kmemleak, a hung task, a soft or hard lockup, an RCU
# stall. Any such line fails the run (the host check below), whether or not the scenario ends
# with dmesg_clean.
KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\] ")
KERNEL_REPORT = re.compile(
    r"WARNING:|BUG:|Oops|Call Trace:|general protection|possible (circular|recursive) locking"
    r"|suspicious RCU|UBSAN|KASAN|kmemleak: \d+ new suspected|blocked for more than \d+ seconds"
    r"|soft lockup|hard LOCKUP|detected stall")


def kernel_reports(lines: list[str]) -> list[str]:
    """The guest kernel's bug-detector reports in a console log (see KERNEL_REPORT)."""
    return [l for l in lines if KERNEL_LINE.match(l) and KERNEL_REPORT.search(l)]


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


def header_lines(path: Path) -> list[str]:
    """The scenario's header: the comment block it starts with, where `# key: value` lines live."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def scenario_stacks(path: Path) -> list[str]:
    """Stacks a scenario runs on, from a `# stacks: rust c` header line (default: both). A
    scenario whose VMs run different stacks (`# vm-stacks:`) runs once, under its first VM's
    stack."""
    vm_stacks = scenario_vm_stacks(path)
    if vm_stacks:
        return vm_stacks[:1]
    for line in header_lines(path):
        m = re.match(r"#\s*stacks:\s*(.+)", line)
        if m:
            return m.group(1).split()
    return ["rust", "c"]


def scenario_vm_stacks(path: Path) -> list[str] | None:
    """The stack of each VM, from a `# vm-stacks: rust c` header line (VM 0 on the Rust stack, VM 1
    on the C stack: traffic between the two stacks), or None when every VM runs the run's stack."""
    for line in header_lines(path):
        m = re.match(r"#\s*vm-stacks:\s*(.+)", line)
        if m:
            stacks = m.group(1).split()
            bad = [s for s in stacks if s not in STACK_MODULES]
            if bad:
                raise HarnessError(f"{path.name}: `# vm-stacks:`: unknown stack {bad[0]!r}")
            return stacks
    return None


def scenario_timeout(path: Path) -> int:
    """Per-scenario hard timeout from a `# timeout: N` header line."""
    for line in header_lines(path):
        m = re.match(r"#\s*timeout:\s*(\d+)", line)
        if m:
            return int(m.group(1))
    return DEFAULT_TIMEOUT


def scenario_model_args(path: Path) -> list[str]:
    """Extra cx-model arguments from `# cx-model: ...` header lines (e.g. fault rules)."""
    args: list[str] = []
    for line in header_lines(path):
        m = re.match(r"#\s*cx-model:\s*(.+)", line)
        if m:
            args += m.group(1).split()
    return args


def scenario_kernel_args(path: Path) -> list[str]:
    """Extra guest kernel parameters from `# kernel-args: ...` header lines."""
    args: list[str] = []
    for line in header_lines(path):
        m = re.match(r"#\s*kernel-args:\s*(.+)", line)
        if m:
            args += m.group(1).split()
    return args


def scenario_runs_kunit(path: Path) -> bool:
    """Whether the KUnit suites in our modules run when they load, from a `# kunit: yes` header
    line. By default they do not (`kunit.enable=0`): only the `kunit` scenario reports them, and
    under TCG running every suite at every load of the stack cost more CPU than many scenarios'
    own work (docs/testing.md)."""
    return any(re.match(r"#\s*kunit:\s*yes\s*$", line) for line in header_lines(path))


def scenario_host_scripts(path: Path) -> list[str]:
    """Scripts from `# host-trace: <script>` lines: run on the host with the model's command
    trace (trace.txt) as argument; the check passes when the script exits 0."""
    return [m.group(1).strip() for line in header_lines(path)
            if (m := re.match(r"#\s*host-trace:\s*(.+)", line))]


def scenario_vms(path: Path) -> int:
    """How many VMs the scenario runs in, from a `# vms: N` header line (default 1)."""
    for line in header_lines(path):
        m = re.match(r"#\s*vms:\s*(\d+)", line)
        if m:
            n = int(m.group(1))
            if not 1 <= n <= MAX_VMS:
                raise HarnessError(f"{path.name}: `# vms: {n}`: a scenario runs in 1 to {MAX_VMS} VMs")
            return n
    return 1


def scenario_cpus(path: Path) -> int:
    """How many CPUs each guest has, from a `# cpus: N` header line (default 1). Two where a
    scenario is about work on several CPUs at once (a completion vector per CPU, commands issued
    from several CPUs, readers racing a reload): on a host with fewer cores than busy guest CPUs,
    a guest CPU spinning for a lock held by its preempted sibling burns host CPU, and a run with
    two CPUs took a third more CPU time than with one (docs/testing.md)."""
    for line in header_lines(path):
        m = re.match(r"#\s*cpus:\s*(\d+)\s*$", line)
        if m:
            n = int(m.group(1))
            if not 1 <= n <= MAX_CPUS:
                raise HarnessError(f"{path.name}: `# cpus: {n}`: a guest has 1 to {MAX_CPUS} CPUs")
            return n
    return 1


def scenario_host_cpus(path: Path) -> set[int] | None:
    """The host CPUs that QEMU and cx-model run on, from a `# host-cpus: 0 1` header line (every
    CPU when absent). For the message-rate benchmarks: a doorbell is a handoff from QEMU's vCPU
    thread to cx-model, and where the host's scheduler places the two threads (one CPU: a context
    switch per doorbell; two: a cross-CPU wakeup) moved the rates up to five times from load to
    load; on one CPU they held to a few per cent (docs/testing.md, make bench)."""
    for line in header_lines(path):
        m = re.match(r"#\s*host-cpus:\s*([0-9 ]+)$", line)
        if m:
            cpus = {int(c) for c in m.group(1).split()}
            usable = os.sched_getaffinity(0)
            if not cpus or not cpus <= usable:
                raise HarnessError(f"{path.name}: `# host-cpus:` names CPUs outside {sorted(usable)}")
            return cpus
    return None


def scenario_installs_modules(path: Path) -> list[str] | None:
    """Whether the stack's modules are installed in the guest's module tree, from an
    `# install-modules: yes [NAME ...]` header line (see `install_modules`): None when not,
    else the names of the other modules to install with them (C's modules above the core,
    such as iw_cm, which a host's module tree has too)."""
    for line in header_lines(path):
        m = re.match(r"#\s*install-modules:\s*yes((?:\s+[\w-]+)*)\s*$", line)
        if m:
            return m.group(1).split()
    return None


def scenario_kernel(path: Path) -> str:
    """Which kernel build the scenario boots, from a `# kernel: intree` header line: the in-tree
    route's (tools/kernel/build-intree.sh, given with --intree-tree), whose Rust modules were
    built by the kernel's own build; by default the test kernel with the external modules."""
    for line in header_lines(path):
        m = re.match(r"#\s*kernel:\s*(\S+)\s*$", line)
        if m:
            if m.group(1) != "intree":
                raise HarnessError(f"{path.name}: `# kernel: {m.group(1)}`: only `intree` is known")
            return "intree"
    return "test"


def use_intree_build(args) -> None:
    """Points the run at the in-tree build: its kernel, its tree (the NIC modules, the release)
    and its Rust modules (drivers/*.ko; it has no samples or test-only modules)."""
    if not args.intree_tree:
        raise HarnessError("this scenario boots the in-tree build: give --intree-tree (make intree)")
    tree = Path(args.intree_tree)
    args.kernel = str(tree / "arch/x86/boot/bzImage")
    args.kernel_tree = str(tree)
    args.rust_modules = None
    for m in STACK_MODULES["rust"]:
        if not (tree / "drivers" / f"{m}.ko").exists():
            raise HarnessError(f"the in-tree build has no drivers/{m}.ko (run make intree)")


def install_modules(root: Path, stack: str, modules: dict[str, Path], release: str,
                    kernel_tree: Path, also: list[str]) -> None:
    """Installs the stack's modules (not the test-only ones) in the guest's module tree
    `/lib/modules/<release>/` as `make modules_install` and an out-of-tree install would (a
    module built in the kernel tree under `kernel/` at its path there, an external one under
    `extra/`) and runs `depmod` on it, so that `modprobe` resolves names, aliases and
    dependencies in the guest. `also` names more of `modules` to install the same way."""
    base = root / "lib/modules" / release
    for name in STACK_MODULES[stack] + also:
        if name not in modules:
            raise HarnessError(f"`# install-modules:` names {name}, which this run does not have")
        src = modules[name].resolve()
        if src.is_relative_to(kernel_tree.resolve()):
            rel = Path("kernel") / src.relative_to(kernel_tree.resolve())
        else:
            rel = Path("extra") / f"{name}.ko"
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(modules[name], base / rel)
    depmod = shutil.which("depmod") or "/usr/sbin/depmod"
    p = subprocess.run([depmod, "-b", str(root), release], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise HarnessError(f"depmod of the guest's module tree failed: {p.stderr.strip()}")


def scenario_guest_python(path: Path) -> bool:
    """Whether the guest gets Python, pyverbs and rdma-core's own tests, from a `# guest-python:
    yes` header line (see `add_python`): only for the scenarios that ask, so that the other
    scenarios' initramfs do not grow by about 29 MiB."""
    return any(re.match(r"#\s*guest-python:\s*yes\s*$", line) for line in header_lines(path))


def kernel_release(args) -> str:
    """The test kernel's release string (`uname -r` in the guest)."""
    return (Path(args.kernel_tree) / "include/config/kernel.release").read_text().strip()


def scenario_host_checks(path: Path) -> list[str]:
    """Regexes from `# host-check: ...` lines that cx-model's report (commands.txt) must match."""
    return [m.group(1).strip() for line in header_lines(path)
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


def add_python(root: Path) -> set[str]:
    """Puts Debian's Python 3 in the guest (`# guest-python: yes`): the interpreter as
    /usr/bin/python3, its standard library (/usr/lib/python3.X, without PYTHON_STDLIB_SKIP: the
    test suite, IDLE, Tk, ensurepip, lib2to3, distutils, the static library in config-*, the
    byte-code caches; the interpreter compiles what it imports), pyverbs from python3-pyverbs
    with its extension modules, and rdma-core's tests from /usr/share/doc/rdma-core/tests, the
    *.py.gz unpacked, with the guest runner `guest/rdma_core_tests.py` beside them. Returns the
    shared libraries the interpreter and the extension modules load (via ldd)."""
    import gzip
    if not PYVERBS.is_dir():
        raise HarnessError(f"{PYVERBS} is missing: python3-pyverbs is not installed (run make setup)")
    if not (RDMA_CORE_TESTS / "run_tests.py").exists():
        raise HarnessError(f"{RDMA_CORE_TESTS} is missing though python3-pyverbs is installed: "
                           f"dpkg may leave out /usr/share/doc (a path-exclude in "
                           f"/etc/dpkg/dpkg.cfg.d/, as slim container images have); remove it and "
                           f"reinstall python3-pyverbs")
    python = PYTHON.resolve()
    if not python.exists():
        raise HarnessError(f"{PYTHON} is missing (python3-pyverbs brings it; run make setup)")
    stdlib = Path("/usr/lib") / python.name
    if not (stdlib / "os.py").exists():
        raise HarnessError(f"{python}'s standard library is not at {stdlib}")
    libs = shared_libraries(str(python))
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(python, root / "usr/bin" / python.name)
    (root / "usr/bin/python3").symlink_to(python.name)

    def ignore(d: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n in PYTHON_STDLIB_SKIP or n.startswith("config-")}
        if Path(d).name == "lib-dynload":
            skip |= {n for n in names if PYTHON_DYNLOAD_SKIP.match(n)}
        # Links out of the tree (Debian's sitecustomize.py -> /etc/python3.X/) are left out.
        return skip | {n for n in names if (Path(d) / n).is_symlink()
                       and not (Path(d) / n).resolve().is_relative_to(stdlib)}
    shutil.copytree(stdlib, root / str(stdlib).lstrip("/"), ignore=ignore, symlinks=False)
    shutil.copytree(PYVERBS, root / str(PYVERBS).lstrip("/"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for so in list((root / str(stdlib).lstrip("/") / "lib-dynload").glob("*.so")) + \
            list((root / str(PYVERBS).lstrip("/")).rglob("*.so")):
        libs |= shared_libraries(str(so))
    tests = root / str(RDMA_CORE_TESTS).lstrip("/")
    tests.mkdir(parents=True)
    for f in sorted(RDMA_CORE_TESTS.iterdir()):
        if f.name.endswith(".py.gz"):
            (tests / f.name[:-3]).write_bytes(gzip.decompress(f.read_bytes()))
        elif f.is_file():
            shutil.copy2(f, tests / f.name)
    shutil.copy2(GUEST / PYVERBS_RUNNER, tests / PYVERBS_RUNNER)
    return libs


def build_initramfs(out: Path, stack: str, modules: dict[str, Path], conf: dict[str, str],
                    scenario: str | None, net_modules: dict[str, Path] | None = None,
                    install: tuple[str, Path, list[str]] | None = None,
                    python: bool = False) -> None:
    """Writes a newc cpio archive for one run (one guest) to `out`; `net_modules` (the NIC driver,
    for two-VM runs) go to /lib/modules/net/ with their load order; with `install` (the kernel's
    release and build tree), the stack's modules are also installed in /lib/modules/<release>/
    (`install_modules`); with `python`, Python, pyverbs and rdma-core's tests (`add_python`).
    Test-only modules missing from `modules` (the in-tree build has none) are left out."""
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
        for f in ["ktap.sh", "stack.sh", "net.sh", "hotplug.sh"]:
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
        if python:
            libs |= add_python(root)
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
            if name not in modules:
                continue
            src = modules[name]
            if not src.exists():
                raise HarnessError(f"test module {name} not found at {src} (run make build)")
            shutil.copy2(src, root / f"lib/modules/{stack}/{name}.ko")
        if install is not None:
            install_modules(root, stack, modules, *install)
        if net_modules:
            (root / "lib/modules/net").mkdir(parents=True)
            for name, src in net_modules.items():
                if not src.exists():
                    raise HarnessError(f"NIC module {name} not found at {src} (run make kernel)")
                shutil.copy2(src, root / f"lib/modules/net/{name}.ko")
            (root / "lib/modules/net/order").write_text("\n".join(net_modules) + "\n")
        (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
        (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
        (root / "etc/hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
        (root / "etc/rdma-rs.conf").write_text("".join(f"{k}='{v}'\n" for k, v in conf.items()))
        with open(out, "wb") as f:
            files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=root, input=files, stdout=f,
                           check=True)


def module_paths(args, stack: str) -> dict[str, Path]:
    if stack == "rust" and args.rust_modules is None:  # the in-tree build (`use_intree_build`)
        return {m: Path(args.kernel_tree) / "drivers" / f"{m}.ko" for m in STACK_MODULES["rust"]}
    # C modules built once against include/rdma/ (tools/verbs-twin) that load on either stack.
    c_abi = {}
    if args.verbs_twin:
        for name in ("ib_c_clients", "ib_c_verbs", "ib_c_mad", "ib_c_cm", "ib_c_sa", "ib_c_rdmacm", "ib_c_roce"):
            c_abi[name] = Path(args.verbs_twin).with_name(f"{name}.ko")
    # C's own modules above ib_core, from the kernel tree: the same file on both stacks.
    if args.kernel_tree:
        for name in ("ib_cm", "iw_cm", "rdma_cm", "rdma_ucm"):
            c_abi[name] = Path(args.kernel_tree) / f"drivers/infiniband/core/{name}.ko"
        c_abi["ib_ipoib"] = Path(args.kernel_tree) / "drivers/infiniband/ulp/ipoib/ib_ipoib.ko"
        # rdma_cm's configuration directory needs configfs (a module in the test kernel).
        c_abi["configfs"] = Path(args.kernel_tree) / "fs/configfs/configfs.ko"
        # The software drivers (C's, on both stacks) and the UDP tunnels rxe sends RoCE v2 with.
        c_abi["udp_tunnel"] = Path(args.kernel_tree) / "net/ipv4/udp_tunnel.ko"
        c_abi["ip6_udp_tunnel"] = Path(args.kernel_tree) / "net/ipv6/ip6_udp_tunnel.ko"
        c_abi["rdma_rxe"] = Path(args.kernel_tree) / "drivers/infiniband/sw/rxe/rdma_rxe.ko"
        c_abi["siw"] = Path(args.kernel_tree) / "drivers/infiniband/sw/siw/siw.ko"
        # NVMe over RDMA (C's host and target, on both stacks) and the memory-backed block
        # device the target exports.
        for name, rel in NVME_MODULES.items():
            c_abi[name] = Path(args.kernel_tree) / rel
    if stack == "rust":
        paths = {m: Path(args.rust_modules) / f"{m}.ko" for m in STACK_MODULES["rust"] + STACK_EXTRAS["rust"]}
        for name in ("ib_verbs_client", "ib_verbs_peer"):
            if args.verbs_twin:
                c_abi[f"{name}_c"] = Path(args.verbs_twin).with_name(f"{name}.ko")
            else:
                paths.pop(f"{name}_c")
        return paths | c_abi
    paths = {m: Path(args.kernel_tree) / C_MODULE_PATHS[m] for m in STACK_MODULES["c"]} | c_abi
    paths["ib_verbs_client"] = Path(args.verbs_twin or "verbs-twin-not-given/ib_verbs_client.ko")
    paths["ib_verbs_bench"] = paths["ib_verbs_client"].with_name("ib_verbs_bench.ko")
    paths["ib_verbs_peer"] = paths["ib_verbs_client"].with_name("ib_verbs_peer.ko")
    return paths


def net_module_paths(args) -> dict[str, Path]:
    return {m: Path(args.kernel_tree) / p for m, p in NET_MODULES.items()}


class Vm:
    """One guest and its cx-model: their processes, their files in `workdir`, the console. A run
    has one, or two for a `# vms: 2` scenario (`name` is then "vm0"/"vm1", prefixed to everything
    reported about this guest). `stop()` leaves nothing behind."""

    def __init__(self, args, workdir: Path, index: int = 0, name: str = ""):
        self.args = args
        self.workdir = workdir
        self.index = index
        self.name = name
        self.model: subprocess.Popen | None = None
        self.qemu: subprocess.Popen | None = None
        self.model_log = workdir / "cx-model.log"
        self.console_log = workdir / "console.log"
        self.socket = workdir / "cx.sock"
        self.control_socket = workdir / "control.sock"
        # Added to QEMU's arguments (the NIC of a two-VM run) and, when set, a path QEMU creates
        # that must exist before the next VM starts (its end of the link).
        self.qemu_extra: list[str] = []
        # Added to the guest kernel's command line (`# kernel-args:`).
        self.kernel_args: list[str] = []
        # The guest's CPUs (`# cpus:`; the interactive shell has two).
        self.cpus = 2
        # The host CPUs QEMU and cx-model are kept on (`# host-cpus:`; None: any).
        self.host_cpus: set[int] | None = None
        self.qemu_ready_path: Path | None = None
        # Console state while the guest runs.
        self.buf = b""
        self.scanned = 0
        self.log = None
        self.gone = False  # QEMU has exited
        self.ktap_ended = False  # the guest printed the end of its KTAP
        self.stopped_by: str | None = None  # why the harness stopped this guest early

    @property
    def tag(self) -> str:
        """Prefix for messages about this guest: "vm0: " in two-VM runs, "" otherwise."""
        return f"{self.name}: " if self.name else ""

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
        self.log_request(command, reply.decode(errors="replace").strip())
        return reply.decode(errors="replace").strip()

    def log_request(self, request: str, reply: str) -> None:
        with open(self.workdir / "control.log", "a") as log:
            log.write(f"{request} -> {reply}\n")

    def spawn_model(self, extra: list[str] | None = None) -> None:
        """Starts cx-model; `wait_model()` waits for its vfio-user socket."""
        if self.socket.exists():
            self.socket.unlink()
        env = dict(os.environ, RUST_LOG=os.environ.get("CX_MODEL_LOG", "debug"))
        self.model = subprocess.Popen(
            [self.args.cx_model, "--socket", str(self.socket), "--fw-version", self.args.fw_version,
             "--command-log", str(self.workdir / "commands.txt"),
             "--command-trace", str(self.workdir / "trace.txt"),
             "--control", str(self.control_socket), *(extra or [])],
            stdout=open(self.model_log, "wb"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True, preexec_fn=self.pin_to_host_cpus)

    def pin_to_host_cpus(self) -> None:
        """In a child before exec: keeps it (and every thread it starts) on `host_cpus`."""
        if self.host_cpus is not None:
            os.sched_setaffinity(0, self.host_cpus)

    def wait_model(self) -> None:
        wait_for_path(self.socket, self.model, 20, f"{self.tag}cx-model", self.model_log)

    def start_model(self, extra: list[str] | None = None) -> None:
        self.spawn_model(extra)
        self.wait_model()

    def qemu_argv(self, initrd: Path, interactive: bool) -> list[str]:
        args = self.args
        dev = ('{"driver":"vfio-user-pci","socket":{"type":"unix","path":"%s"},"bus":"rp1"}'
               % self.socket)
        # A 4 MiB kernel log: scenarios read it back with dmesg, and every load of a module with
        # KUnit suites logs their results, so the default ring loses a load/unload loop's start.
        # watchdog_thresh=60: the soft-lockup detector reports a CPU that does not schedule for
        # 120 s, so a host overloaded by TCG guests does not fake a lockup.
        cmdline = "console=ttyS0 panic=-1 log_buf_len=4M watchdog_thresh=60"
        if not interactive:
            cmdline += " oops=panic"
        if self.kernel_args:
            cmdline += " " + " ".join(self.kernel_args)
        if not interactive:
            cmdline += " loglevel=4"
        argv = [args.qemu, "-machine", "q35,accel=tcg,memory-backend=mem0", "-cpu", "max",
                "-smp", str(self.cpus), "-m", "1G",
                "-object", "memory-backend-memfd,id=mem0,size=1G,share=on",
                "-device", "pcie-root-port,id=rp1,chassis=1,slot=1",
                "-device", dev, *self.qemu_extra,
                "-kernel", args.kernel, "-initrd", str(initrd), "-append", cmdline,
                "-nodefaults", "-no-reboot", "-display", "none", "-vga", "none"]
        if args.qemu_plugin:
            argv += ["-plugin", args.qemu_plugin]
        for d in args.firmware_dirs:
            argv += ["-L", d]
        argv += ["-serial", "stdio"] if interactive else ["-serial", "stdio", "-monitor", "none"]
        return argv

    def start_guest(self, initrd: Path) -> None:
        """Starts QEMU with the console on a pipe (read with `read_console()`)."""
        self.qemu = subprocess.Popen(self.qemu_argv(initrd, False), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=self.pin_to_host_cpus)
        assert self.qemu.stdout is not None
        os.set_blocking(self.qemu.stdout.fileno(), False)
        self.log = open(self.console_log, "wb")
        if self.qemu_ready_path is not None:
            wait_for_path(self.qemu_ready_path, self.qemu, 20, f"{self.tag}QEMU", self.console_log)

    def read_console(self) -> list[str]:
        """What the guest printed since the last call, as complete lines (also logged)."""
        assert self.qemu is not None and self.qemu.stdout is not None and self.log is not None
        chunk = self.qemu.stdout.read()
        if not chunk:
            return []
        self.buf += chunk
        self.log.write(chunk)
        self.log.flush()
        lines = []
        while (nl := self.buf.find(b"\n", self.scanned)) >= 0:
            line = self.buf[self.scanned:nl].decode(errors="replace").strip()
            self.scanned = nl + 1
            if "rdma-rs: ktap end" in line:
                self.ktap_ended = True
            lines.append(line)
        return lines

    def close_console(self) -> None:
        """After QEMU exited: the rest of its output, then the log is closed."""
        assert self.qemu is not None and self.qemu.stdout is not None
        if self.log is None:
            return
        rest = self.qemu.stdout.read() or b""
        self.buf += rest
        self.log.write(rest)
        self.log.close()
        self.log = None
        self.ktap_ended = self.ktap_ended or b"rdma-rs: ktap end" in self.buf[self.scanned:]
        self.gone = True

    def console_lines(self) -> list[str]:
        return self.buf.decode(errors="replace").splitlines()

    def reply(self, text: str) -> None:
        """Types a reply to a host request into the guest's console (see guest/stack.sh)."""
        if self.qemu is None or self.qemu.stdin is None or self.qemu.poll() is not None:
            return
        try:
            self.qemu.stdin.write(f"rdma-rs-reply {text}\n".encode())
            self.qemu.stdin.flush()
        except BrokenPipeError:
            pass

    def stop_guest(self, why: str) -> None:
        """Stops QEMU early (another guest of the run failed); `why` goes into the report."""
        if self.qemu is not None and self.qemu.poll() is None:
            self.stopped_by = why
            try:
                os.killpg(self.qemu.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

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
        if self.log is not None:
            self.log.close()
            self.log = None


def wait_for_path(path: Path, proc: subprocess.Popen | None, secs: float, what: str, log: Path) -> None:
    """Waits until `proc` has created `path` (a socket); raises HarnessError if it exits first or
    takes longer than `secs`."""
    assert proc is not None
    deadline = time.monotonic() + secs
    while not path.exists():
        if proc.poll() is not None:
            raise HarnessError(f"{what} exited at start (code {proc.returncode}); see {log}")
        if time.monotonic() > deadline:
            raise HarnessError(f"{what} did not create {path.name} within {secs:.0f} s; see {log}")
        time.sleep(0.05)


class Link:
    """The network of a two-VM run: each guest has a virtio-net NIC, the two NICs are joined by a
    QEMU stream netdev on a unix socket (VM 0 listens, VM 1 connects; no host networking), and
    the guests get static addresses 10.23.0.1/24 and 10.23.0.2/24 (guest/net.sh sets them from
    /etc/rdma-rs.conf). The two cx-models are joined by their own wire socket."""

    SUBNET = "10.23.0"

    def __init__(self, workdir: Path):
        self.socket = workdir / "net.sock"
        self.wire = workdir / "wire.sock"

    def mac(self, index: int) -> str:
        return f"52:54:00:23:00:{index + 1:02x}"

    def ip(self, index: int) -> str:
        return f"{self.SUBNET}.{index + 1}"

    def attach(self, vm: Vm) -> None:
        """Gives `vm` its NIC, and VM 0 the listening end of the link."""
        server = "on" if vm.index == 0 else "off"
        vm.qemu_extra = [
            "-netdev", f"stream,id=n0,server={server},addr.type=unix,addr.path={self.socket}",
            "-device", f"virtio-net-pci,netdev=n0,mac={self.mac(vm.index)},disable-legacy=on,romfile="]
        if vm.index == 0:
            if self.socket.exists():
                self.socket.unlink()
            vm.qemu_ready_path = self.socket

    def conf(self, vm: Vm) -> dict[str, str]:
        """The guest's network settings, for /etc/rdma-rs.conf."""
        peer = 1 - vm.index
        return {"VMS": "2", "VM_INDEX": str(vm.index), "NET_MAC": self.mac(vm.index),
                "NET_IP": f"{self.ip(vm.index)}/24", "PEER_IP": self.ip(peer)}

    def model_args(self, vm: Vm) -> list[str]:
        """cx-model arguments: a GUID seed per HCA (cx-model derives the port LIDs from it too, so
        the two ports get different LIDs) and its end of the wire."""
        return ["--guid-seed", str(vm.index + 1),
                "--wire-listen" if vm.index == 0 else "--wire-connect", str(self.wire)]


def start_models(vms: list[Vm], link: Link | None, extra: list[str]) -> None:
    """Starts every guest's cx-model (model 0 first: it listens on the wire; model 1 would retry
    its connection until then anyway) and waits for their vfio-user sockets."""
    for vm in vms:
        vm.spawn_model((link.model_args(vm) if link else []) + extra)
        if link is not None and vm.index == 0:
            wait_for_path(link.wire, vm.model, 20, f"{vm.tag}cx-model", vm.model_log)
    for vm in vms:
        vm.wait_model()


class Barriers:
    """The host side of the guests' `barrier NAME` (guest/stack.sh). A guest's request is answered
    `ok barrier NAME` when every guest of the run waits at NAME, and `error barrier NAME: ...` as
    soon as that cannot happen (a guest has stopped, or the guests wait at different barriers), so
    no guest waits forever. With one guest every barrier passes at once."""

    def __init__(self, vms: list[Vm]):
        self.vms = vms
        self.waiting: dict[int, str] = {}  # guest index -> barrier it waits at

    def arrive(self, vm: Vm, name: str) -> None:
        self.waiting[vm.index] = name
        self.settle()

    def settle(self) -> None:
        if not self.waiting:
            return
        gone = [v for v in self.vms if v.gone]
        names = set(self.waiting.values())
        if gone:
            reason = f"{', '.join(v.name or 'the guest' for v in gone)} stopped"
        elif len(self.waiting) < len(self.vms):
            return
        elif len(names) == 1:
            reason = None
        else:
            reason = "the guests wait at different barriers: " + ", ".join(
                f"{self.vms[i].name} at {n}" for i, n in sorted(self.waiting.items()))
        for i, name in sorted(self.waiting.items()):
            answer = f"ok barrier {name}" if reason is None else f"error barrier {name}: {reason}"
            self.vms[i].log_request(f"barrier {name}", answer)
            self.vms[i].reply(answer)
        self.waiting.clear()


# A guest whose init has not said "rdma-rs: guest up" (nor its kernel printed a line) this long
# after QEMU started did not start at all (seen once in about a thousand runs on a loaded host:
# QEMU stalled before the kernel, the console empty); the run is then made again, once
# (`BootStall`). A KASAN kernel boots in well under a minute under TCG.
BOOT_STALL_SECS = 240
GUEST_UP = re.compile(r"rdma-rs: guest up|^\[ *\d+\.\d+\] ")


class BootStall(HarnessError):
    """A guest's kernel printed nothing within BOOT_STALL_SECS."""


def run_guests(vms: list[Vm], initrds: list[Path], timeout: int, kill_model_after: float | None) -> None:
    """Boots the guests and reads their consoles until every guest has powered off. Requests from
    a guest (see guest/stack.sh: model_ctl, barrier) go to its own cx-model's control channel or
    to the barriers; the reply is typed into its console. Raises HarnessError on timeout or when a
    cx-model dies under a running guest; a guest that stops before finishing its scenario stops
    the others (the report then says which guests did not finish, and why)."""
    barriers = Barriers(vms)
    for vm, initrd in zip(vms, initrds):
        vm.start_guest(initrd)
    start = time.monotonic()
    printed = {id(vm): False for vm in vms}
    while True:
        for vm in vms:
            if vm.gone:
                continue
            for line in vm.read_console():
                printed[id(vm)] = printed[id(vm)] or GUEST_UP.search(line) is not None
                m = re.match(r"rdma-rs: host-request: (.+)$", line)
                if not m:
                    continue
                request = m.group(1).strip()
                if b := re.fullmatch(r"barrier (\S+)", request):
                    barriers.arrive(vm, b.group(1))
                elif request == "host-clock":
                    # The host's monotonic clock in ms: under TCG a guest's own clock can run
                    # many times faster than real time (seen once: 1391 guest seconds in a 35 s
                    # run), so durations a scenario checks are measured with this one.
                    answer = f"ok host-clock {int(time.monotonic() * 1000)}"
                    vm.log_request(request, answer)
                    vm.reply(answer)
                else:
                    vm.reply(vm.control(request))
            if vm.qemu.poll() is not None:
                vm.close_console()
                barriers.settle()
                if not vm.ktap_ended:
                    for other in vms:
                        if not other.gone:
                            other.stop_guest(f"stopped because {vm.name} stopped before finishing")
        elapsed = time.monotonic() - start
        for vm in vms:
            if kill_model_after is not None and elapsed > kill_model_after and vm.model.poll() is None:
                os.killpg(vm.model.pid, signal.SIGKILL)
            # A model that died while its QEMU ran, or was killed and took QEMU down with it
            # before the guest finished (QEMU's vfio-user client can abort when its server goes
            # mid-access), is the run's cause of failure.
            # The model also exits (status 0) when QEMU disconnects at the end of a run: QEMU
            # may have gone between this loop's poll of it and this one (seen in CI), so it is
            # polled again here, and a guest that printed its KTAP's end and powers off may
            # close the device before its QEMU exits: a status-0 exit after the KTAP's end is
            # that disconnect, not a death.
            rc = vm.model.poll()
            qemu_running = not vm.gone and vm.qemu.poll() is None
            normal_end = rc == 0 and vm.ktap_ended
            if rc is not None and not normal_end and (qemu_running or (rc != 0 and not vm.ktap_ended)):
                raise HarnessError(
                    f"{vm.tag}cx-model died during the run (exit {rc}) after "
                    f"{elapsed:.1f} s; stopping QEMU. Logs: {vm.model_log}, {vm.console_log}")
        if all(vm.gone for vm in vms):
            break
        if elapsed > BOOT_STALL_SECS and not all(printed[id(vm)] or vm.gone for vm in vms):
            raise BootStall(f"a guest did not come up in {BOOT_STALL_SECS} s (QEMU stalled "
                            f"before the kernel); console in "
                            f"{', '.join(str(vm.console_log) for vm in vms)}")
        if elapsed > timeout:
            what = "the guest did not" if len(vms) == 1 else (
                " and ".join(vm.name for vm in vms if not vm.gone) + " did not")
            raise HarnessError(f"timeout: {what} finish within {timeout} s; console in "
                               f"{', '.join(str(vm.console_log) for vm in vms)}")
        time.sleep(0.05)
    # QEMU is gone; each model sees the disconnect, prints its command report and exits.
    for vm in vms:
        try:
            vm.model.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", choices=sorted(STACK_MODULES), default="rust")
    p.add_argument("--kernel", required=True, help="bzImage")
    p.add_argument("--kernel-tree", required=True, help="kernel build tree (C modules)")
    p.add_argument("--rust-modules", required=True, help="directory with our .ko files")
    p.add_argument("--intree-tree", help="the in-tree build's kernel tree (`# kernel: intree`)")
    p.add_argument("--qemu", required=True)
    p.add_argument("--qemu-plugin", default=None,
                   help="a TCG plugin and its arguments for QEMU's -plugin (make bench's instruction counts)")
    p.add_argument("--firmware-dirs", nargs="+", default=["/usr/share/qemu", "/usr/share/seabios"])
    p.add_argument("--cx-model", required=True)
    p.add_argument("--fw-version", default=DEFAULT_FW)
    p.add_argument("--workdir", required=True, help="directory for logs and the initramfs")
    p.add_argument("--verbs-twin", help="the C twin of ib_verbs_client (tools/verbs-twin), for STACK=c")
    p.add_argument("--guest-tool", action="append", type=Path, default=[], dest="guest_tools",
                   help="a program built here, copied to the guest's /usr/bin (repeatable)")


def cmd_run(args) -> int:
    path = SCENARIOS / f"{args.scenario}.sh"
    if not path.exists():
        print(f"harness: no scenario named {args.scenario!r}; available: "
              f"{', '.join(available_scenarios())}", file=sys.stderr)
        return 2
    if args.vm_stacks is None and args.stack not in scenario_stacks(path):
        print(f"harness: scenario {args.scenario} does not run on STACK={args.stack} "
              f"(it runs on: {' '.join(scenario_stacks(path))})", file=sys.stderr)
        return 2
    try:
        nvms = scenario_vms(path)
        cpus = scenario_cpus(path)
        host_cpus = scenario_host_cpus(path)
        vm_stacks = scenario_vm_stacks(path)
        if args.vm_stacks is not None:
            if vm_stacks is None:
                raise HarnessError(f"{path.name}: --vm-stacks is for scenarios with `# vm-stacks:`")
            vm_stacks = args.vm_stacks.split()
            bad = [s for s in vm_stacks if s not in STACK_MODULES]
            if bad:
                raise HarnessError(f"--vm-stacks: unknown stack {bad[0]!r}")
        if scenario_kernel(path) == "intree":
            use_intree_build(args)
        if vm_stacks is not None and len(vm_stacks) != nvms:
            raise HarnessError(f"{path.name}: `# vm-stacks:` names {len(vm_stacks)} stack(s) "
                               f"for {nvms} VM(s)")
    except HarnessError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    run_name = "-".join(vm_stacks) if args.vm_stacks is not None else args.stack
    workdir = Path(args.workdir) / f"{args.scenario}-{run_name}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    timeout = args.timeout or scenario_timeout(path)
    label = f"{args.scenario} ({'+'.join(vm_stacks) if vm_stacks else args.stack})"
    started = time.monotonic()
    # One guest keeps its files in the run's directory; two guests each have a subdirectory.
    if nvms == 1:
        vms = [Vm(args, workdir)]
        link = None
    else:
        vms = [Vm(args, workdir / f"vm{i}", i, f"vm{i}") for i in range(nvms)]
        link = Link(workdir)
    try:
        initrds = []
        for vm in vms:
            vm.workdir.mkdir(parents=True, exist_ok=True)
            stack = vm_stacks[vm.index] if vm_stacks else args.stack
            conf = {"SCENARIO": args.scenario, "STACK": stack, "EXPECT_FW": args.fw_version}
            if link is not None:
                link.attach(vm)
                conf.update(link.conf(vm))
            initrds.append(vm.workdir / "initramfs.cpio")
            build_initramfs(initrds[-1], stack, module_paths(args, stack), conf, args.scenario,
                            net_module_paths(args) if link is not None else None,
                            (kernel_release(args), Path(args.kernel_tree), installs)
                            if (installs := scenario_installs_modules(path)) is not None else None,
                            scenario_guest_python(path))
        for vm in vms:
            vm.cpus = cpus
            vm.host_cpus = host_cpus
            vm.kernel_args = scenario_kernel_args(path)
            if not scenario_runs_kunit(path):
                vm.kernel_args.append("kunit.enable=0")
        start_models(vms, link, scenario_model_args(path))
        run_guests(vms, initrds, timeout, args.kill_model_after)
    except BootStall as e:
        for vm in vms:
            vm.stop()
        if not getattr(args, "boot_retried", False):
            print(f"harness: {label}: {e}; running it again, once", file=sys.stderr)
            args.boot_retried = True
            return cmd_run(args)
        print(f"harness: {label}: FAILED: {e} (twice)", file=sys.stderr)
        print(f"RESULT {label}: 0 passed, 1 failed (harness)")
        return 1
    except HarnessError as e:
        for vm in vms:
            vm.stop()
        print(f"harness: {label}: FAILED: {e}", file=sys.stderr)
        print(f"RESULT {label}: 0 passed, 1 failed (harness)")
        return 1
    finally:
        for vm in vms:
            vm.stop()
    elapsed = time.monotonic() - started
    passed = failed = 0
    for vm in vms:
        if args.show_console:
            show_console(vm)
        p, f = report_vm(vm, label, path)
        passed += p
        failed += f
    print(f"RESULT {label}: {passed} passed, {failed} failed ({elapsed:.0f} s; logs in {workdir})")
    return 0 if failed == 0 else 1


def show_console(vm: Vm) -> None:
    """Prints the guest's console from the scenario's start to the end of its KTAP."""
    shown = False
    for line in vm.console_lines():
        if "rdma-rs: guest up" in line:
            shown = True
        if shown:
            print(f"  {vm.name + ' ' if vm.name else ''}guest| {line.rstrip()}")
        if "rdma-rs: ktap end" in line:
            break


def report_vm(vm: Vm, label: str, path: Path) -> tuple[int, int]:
    """Prints one guest's results (its KTAP, the host checks on its cx-model's report, what went
    wrong with the run) and returns how many passed and failed."""
    who = f"{label}: {vm.tag}"
    lines = vm.console_lines()
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
        why = vm.stopped_by or "panic or early power-off?"
        problems.append(f"the guest did not finish the scenario ({why}); see {vm.console_log}")
    if plan is not None and plan != len(top):
        problems.append(f"plan says {plan} checks but {len(top)} ran")
    if not top:
        problems.append("no KTAP results")
    for r in top:
        mark = "ok" if r.ok else "FAIL"
        print(f"  [{mark:>4}] {who}{r.name}")
        for d in r.diagnostics[:30]:
            print(f"         | {d}")
    for r in cases:
        print(f"  [{'ok' if r.ok else 'FAIL':>4}]   {who}kunit case {r.name}")
    reports = kernel_reports(lines)
    name = "host: the guest kernel log has no warning, oops, lockdep, KASAN, kmemleak, hung-task or lockup report"
    top.append(KtapResult(not reports, len(top) + 1, name, 0, reports[:20]))
    leaves.append(top[-1])
    print(f"  [{'ok' if not reports else 'FAIL':>4}] {who}{name}")
    for d in reports[:20]:
        print(f"         | {d}")
    commands = vm.workdir / "commands.txt"
    report = commands.read_text() if commands.exists() else ""
    for pattern in scenario_host_checks(path):
        ok = re.search(pattern, report, re.M) is not None
        top.append(KtapResult(ok, len(top) + 1, f"host: cx-model report matches /{pattern}/", 0))
        leaves.append(top[-1])
        print(f"  [{'ok' if ok else 'FAIL':>4}] {who}host: cx-model report matches /{pattern}/")
    for script in scenario_host_scripts(path):
        p = subprocess.run([sys.executable, str(HERE.parents[1] / script), str(vm.workdir / "trace.txt")],
                           capture_output=True, text=True)
        ok = p.returncode == 0
        name = f"host: {script} accepts the command trace"
        top.append(KtapResult(ok, len(top) + 1, name, 0, (p.stdout + p.stderr).splitlines()))
        leaves.append(top[-1])
        print(f"  [{'ok' if ok else 'FAIL':>4}] {who}{name}")
        for d in (p.stdout + p.stderr).splitlines()[:40]:
            print(f"         | {d}")
    if report.strip():
        print(f"  cx-model: commands the driver issued ({label}{', ' + vm.name if vm.name else ''}):")
        for line in report.splitlines():
            print(f"    {line}")
    for p in problems:
        print(f"  [FAIL] {who}{p}")
    return sum(r.ok for r in leaves), sum(not r.ok for r in leaves) + len(problems)


def cmd_shell(args) -> int:
    workdir = Path(args.workdir) / f"shell-{args.stack}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    run = Vm(args, workdir)
    try:
        initrd = workdir / "initramfs.cpio"
        build_initramfs(initrd, args.stack, module_paths(args, args.stack),
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
    r.add_argument("--vm-stacks", default=None,
                   help="the stack of each VM, overriding the scenario's `# vm-stacks:` "
                        "(e.g. 'rust rust')")
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
