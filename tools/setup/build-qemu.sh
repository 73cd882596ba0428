#!/usr/bin/env bash
# Build QEMU 10.2.2 (x86_64-softmmu only, with the vfio-user client) from Debian's source package.
# Sources: ../shared/cache/qemu (checked against its SHA256SUMS), else Debian's archive through a
# private apt list. meson and pycotap come from PyPI into a private venv (bookworm's meson is too old).
# Usage: build-qemu.sh <cache-dir> <shared-qemu-dir>  -> prints the qemu-system-x86_64 path last.
set -euo pipefail
cache=${1:?cache dir}
shared=${2:-}
ver="10.2.2+ds-1"
up="10.2.2"
root="$cache/qemu-$ver"
bin="$root/build/qemu-system-x86_64"
# Only the machine and the devices the harness starts guests with (q35, a PCIe root port, the
# vfio-user client, virtio-net for two-VM runs; the serial port, RTC and PIT come with the PC
# machine; the HPET as the guests had it before; CXL, its memory device and the PCI expander it
# depends on, because q35's ACPI tables link against them): two thirds of the default set.
# No debug info (nobody debugs QEMU here; it costs compile and link time).
devices="CONFIG_Q35=y CONFIG_HPET=y CONFIG_PXB=y CONFIG_CXL=y CONFIG_CXL_MEM_DEVICE=y CONFIG_PCIE_PORT=y CONFIG_VFIO_PCI=y CONFIG_VFIO_USER=y CONFIG_VIRTIO_PCI=y CONFIG_VIRTIO_NET=y"
conf=(--target-list=x86_64-softmmu --without-default-features --without-default-devices
      --with-devices-x86_64=rdma-rs --disable-debug-info
      --disable-download --disable-install-blobs --enable-kvm --enable-pixman --enable-plugins)
# The stamp names the build: a change of the options or the devices rebuilds QEMU.
stamp="$ver ${conf[*]} $devices"
if [ -x "$bin" ] && [ "$(cat "$root/.build-done" 2>/dev/null)" = "$stamp" ]; then
  echo "$bin"
  exit 0
fi
rm -f "$root/.build-done"
mkdir -p "$root/dl"
files=("qemu_${up}+ds-1.dsc" "qemu_${up}+ds.orig.tar.xz" "qemu_${up}+ds-1.debian.tar.xz")

if [ -n "$shared" ] && [ -f "$shared/SHA256SUMS" ]; then
  echo "build-qemu: using cached sources from $shared"
  (cd "$shared" && sha256sum -c --quiet SHA256SUMS)
  for f in "${files[@]}"; do cp -f "$shared/$f" "$root/dl/"; done
else
  echo "build-qemu: fetching qemu $ver source from Debian's archive"
  apt_dir="$cache/apt-src"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
  cat > "$apt_dir/sources.list" <<SRC
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian forky main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
SRC
  opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir" -o APT::Sandbox::User=root
        -o Acquire::Retries=3)
  apt-get "${opts[@]}" update -qq
  (cd "$root/dl" && apt-get "${opts[@]}" source --download-only -qq "qemu=1:$ver")
fi

echo "build-qemu: unpacking"
rm -rf "$root/src"
(cd "$root/dl" && dpkg-source --no-check -x "qemu_${up}+ds-1.dsc" "$root/src" >/dev/null)
printf '%s\n' $devices >"$root/src/configs/devices/x86_64-softmmu/rdma-rs.mak"

echo "build-qemu: python venv with meson and pycotap"
python=/usr/bin/python3
[ -x "$root/venv/bin/python3" ] || "$python" -m venv "$root/venv"
"$root/venv/bin/pip" install -q --disable-pip-version-check 'meson==1.9.0' 'pycotap==1.3.1'

echo "build-qemu: configure"
rm -rf "$root/build"
mkdir -p "$root/build"
cd "$root/build"
"$root/src/configure" "${conf[@]}" --python="$root/venv/bin/python3" >"$root/configure.log" 2>&1 || { tail -n 40 "$root/configure.log" >&2; exit 1; }
echo "build-qemu: ninja (a few minutes)"
ninja qemu-system-x86_64 >"$root/ninja.log" 2>&1 || { tail -n 40 "$root/ninja.log" >&2; exit 1; }
for dev in vfio-user-pci pcie-root-port virtio-net-pci; do
  "$bin" -device help 2>/dev/null | grep -q "\"$dev\"" || { echo "build-qemu: no $dev device in the build" >&2; exit 1; }
done
echo "$stamp" >"$root/.build-done"
echo "$bin"
