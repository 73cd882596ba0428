#!/usr/bin/env bash
# Fetch the pinned Linux source (Debian's linux-source-7.3) through a private apt list and state
# directory, check its sha256, and unpack a pristine tree into the cache.
# Usage: fetch-kernel.sh <cache-dir>   -> prints the path of the pristine tree on the last line.
set -euo pipefail
cache=${1:?cache dir}
pin_ver="7.3.4-1~bpo13+1"
pin_sha="703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3"
pkg=linux-source-7.3

apt_dir="$cache/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/etc/preferences.d" "$apt_dir/debs"
cat > "$apt_dir/etc/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
SRC
apt_opts=(
  -o Dir::Etc::SourceList="$apt_dir/etc/sources.list"
  -o Dir::Etc::SourceParts=/dev/null
  -o Dir::Etc::PreferencesParts="$apt_dir/etc/preferences.d"
  -o Dir::State::Lists="$apt_dir/lists"
  -o Dir::Cache="$apt_dir"
  -o Dir::Cache::Archives="$apt_dir/archives"
  -o Acquire::Retries=3
  -o APT::Sandbox::User=root
  -o APT::Get::List-Cleanup=0
)

have_deb() { ls "$apt_dir/debs/${pkg}_"*.deb >/dev/null 2>&1; }

if ! have_deb; then
  echo "fetch-kernel: updating private apt lists (trixie-backports)"
  apt-get "${apt_opts[@]}" update -qq
  cd "$apt_dir/debs"
  if apt-get "${apt_opts[@]}" download -qq "$pkg=$pin_ver" 2>/dev/null; then
    :
  else
    newest=$(apt-cache "${apt_opts[@]}" madison "$pkg" | awk '{print $3}' | sort -V | tail -n 1)
    [ -n "$newest" ] || { echo "fetch-kernel: no $pkg in trixie-backports" >&2; exit 1; }
    echo "fetch-kernel: WARNING: pinned $pkg $pin_ver is gone; falling back to $newest" >&2
    apt-get "${apt_opts[@]}" download -qq "$pkg=$newest"
  fi
  cd - >/dev/null
fi

deb=$(ls "$apt_dir/debs/${pkg}_"*.deb | sort -V | tail -n 1)
ver=$(dpkg-deb -f "$deb" Version)
if [ "$ver" = "$pin_ver" ]; then
  echo "$pin_sha  $deb" | sha256sum -c --quiet - || { echo "fetch-kernel: sha256 mismatch for $deb" >&2; exit 1; }
else
  echo "fetch-kernel: WARNING: using $pkg $ver instead of the pinned $pin_ver (sha256 not pinned)" >&2
fi

src="$cache/linux-$ver"
if [ ! -f "$src/.pristine-done" ]; then
  echo "fetch-kernel: unpacking $deb"
  rm -rf "$src" "$cache/deb-x"
  mkdir -p "$cache/deb-x"
  dpkg-deb -x "$deb" "$cache/deb-x"
  tarball=$(ls "$cache"/deb-x/usr/src/linux-source-*.tar.* | head -n 1)
  mkdir -p "$src"
  tar -xf "$tarball" -C "$src" --strip-components=1
  rm -rf "$cache/deb-x"
  touch "$src/.pristine-done"
fi
echo "$src"
