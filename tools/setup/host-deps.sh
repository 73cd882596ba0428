#!/usr/bin/env bash
# Install the host packages the build needs, from the machine's own (bookworm) apt sources.
# Idempotent: packages already present are not touched. Never adds suites to the system's sources.
# Arguments: more packages, for a target that needs them.
set -euo pipefail

pkgs=(
  # kernel build
  build-essential flex bison bc kmod cpio rsync libelf-dev libssl-dev dwarves xz-utils zstd
  clang-22 lld-22 llvm-22 libclang-22-dev
  # QEMU build (meson comes from PyPI into a private venv, see build-qemu.sh)
  ninja-build libglib2.0-dev libpixman-1-dev zlib1g-dev python3-venv pkg-config
  seabios qemu-system-data
  # guest userland (copied into the initramfs with their libraries)
  busybox-static pciutils rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest iproute2
  infiniband-diags
  # a subnet manager for the managed fabric (scenario fabric-sm-2vm; its service is never started here)
  opensm
  # rdma-core's own test suite in the guest (scenario rdma-core-tests): pyverbs with the tests in
  # /usr/share/doc/rdma-core/tests, and Debian's python3 it is built for
  python3-pyverbs
  # guest-side test programs built here (tools/verbs-errors)
  libibverbs-dev
  # dpkg -x of the kernel source package, harness
  dpkg-dev
  "$@"
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "host-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "host-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing or stale on a fresh machine.
apt-get -o Acquire::Retries=3 update -qq
log=$(mktemp)
install() { apt-get -o Acquire::Retries=3 install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; }
# A package's maintainer script can fail once on a fresh container (seen with udev's); finish the
# half-configured packages and try once more before giving up.
if ! install; then
  echo "host-deps: first install attempt failed; configuring and retrying" >&2
  tail -n 5 "$log" >&2
  dpkg --configure -a >/dev/null 2>&1 || true
  install || { tail -n 30 "$log" >&2; rm -f "$log"; exit 1; }
fi
rm -f "$log"
echo "host-deps: done"
