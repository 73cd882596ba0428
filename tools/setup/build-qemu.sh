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
if [ -x "$bin" ] && [ -f "$root/.build-done" ]; then
  echo "$bin"
  exit 0
fi
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

echo "build-qemu: python venv with meson and pycotap"
python=/usr/bin/python3
[ -x "$root/venv/bin/python3" ] || "$python" -m venv "$root/venv"
"$root/venv/bin/pip" install -q --disable-pip-version-check 'meson==1.9.0' 'pycotap==1.3.1'

echo "build-qemu: configure"
rm -rf "$root/build"
mkdir -p "$root/build"
cd "$root/build"
"$root/src/configure" --target-list=x86_64-softmmu --without-default-features \
  --disable-download --disable-install-blobs --enable-kvm --enable-pixman \
  --python="$root/venv/bin/python3" >"$root/configure.log" 2>&1 || { tail -n 40 "$root/configure.log" >&2; exit 1; }
echo "build-qemu: ninja (a few minutes)"
ninja qemu-system-x86_64 >"$root/ninja.log" 2>&1 || { tail -n 40 "$root/ninja.log" >&2; exit 1; }
"$bin" -device help 2>/dev/null | grep -q vfio-user-pci || { echo "build-qemu: no vfio-user-pci device in the build" >&2; exit 1; }
touch "$root/.build-done"
echo "$bin"
