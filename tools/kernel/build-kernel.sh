#!/usr/bin/env bash
# Build the test kernel (bzImage + the upstream C RDMA modules) in a work copy of the pristine tree,
# with the project's rust/ overlaid and the config from config.fragment. Incremental: a second run
# rebuilds only what changed.
# Usage: build-kernel.sh <repo> <pristine-tree> <work-tree> <bindgen>
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
pristine=${2:?pristine tree}
work=${3:?work tree}
bindgen=${4:?bindgen}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -f "$work/.work-copy-done" ]; then
  echo "build-kernel: making the work tree $work"
  rm -rf "$work"
  mkdir -p "$(dirname "$work")"
  cp -a "$pristine" "$work"
  touch "$work/.work-copy-done"
fi

"$here/overlay.sh" "$repo" "$work"

# Its own -j, not a parent make's job slots (`make build` runs this beside the QEMU build).
# KERNEL_LLVM: the LLVM toolchain's version suffix: -22, rustc's LLVM, for
# CONFIG_RUST_INLINE_HELPERS.
kmake=(env -u MAKEFLAGS -u MFLAGS make -C "$work" -s "LLVM=${KERNEL_LLVM:--22}" "BINDGEN=$bindgen" -j"$(nproc)")
# bindgen loads the newest libclang it finds unless told: the one of the same LLVM as clang.
export LIBCLANG_PATH=/usr/lib/llvm${KERNEL_LLVM:--22}/lib

# EXTRA_FRAGMENT (a path): more options on top, for a second kernel such as `make kasan`'s.
frag="$here/config.fragment"
# A later assignment of an option replaces an earlier one (`make bench`'s kernel turns the test
# kernel's debug options off), so only the last is kept and checked.
if [ -n "${EXTRA_FRAGMENT:-}" ]; then
  cat "$frag" "$EXTRA_FRAGMENT" | awk -F= '
    { line[NR] = $0; if ($0 ~ /^CONFIG_/) last[$1] = NR }
    END { for (i = 1; i <= NR; i++) { split(line[i], kv, "=")
      if (line[i] !~ /^CONFIG_/ || last[kv[1]] == i) print line[i] } }' \
    >"$work/.config-fragment-combined"
  frag="$work/.config-fragment-combined"
fi
if [ ! -f "$work/.config" ] || ! cmp -s "$frag" "$work/.config-fragment"; then
  echo "build-kernel: configuring (allnoconfig + config.fragment)"
  "${kmake[@]}" KCONFIG_ALLCONFIG="$frag" allnoconfig
  # Every option the fragment asks for must have stuck; a silently dropped one (unmet dependency,
  # rust not available) would give a kernel that cannot run the tests.
  bad=0
  while IFS= read -r line; do
    case "$line" in CONFIG_*=*) ;; *) continue ;; esac
    sym=${line%%=*}; val=${line#*=}
    if [ "$val" = n ]; then
      grep -q "^$sym=" "$work/.config" && { echo "build-kernel: $sym should be off" >&2; bad=1; }
    else
      grep -qx "$line" "$work/.config" || { echo "build-kernel: $line did not stick: $(grep "^$sym=\|^# $sym " "$work/.config" || echo unset)" >&2; bad=1; }
    fi
  done <"$frag"
  if [ "$bad" != 0 ]; then
    "${kmake[@]}" rustavailable >&2 || true
    exit 1
  fi
  cp "$frag" "$work/.config-fragment.new" && mv "$work/.config-fragment.new" "$work/.config-fragment"
fi

echo "build-kernel: make bzImage modules"
"${kmake[@]}" bzImage modules
echo "build-kernel: done: $work/arch/x86/boot/bzImage"
