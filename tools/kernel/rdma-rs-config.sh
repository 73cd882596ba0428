#!/usr/bin/env bash
# Evaluates the repository's Kconfig together with the test kernel's own Kconfig and .config (so
# that the dependencies of our symbols are checked against the kernel we build for) and writes
# the CONFIG_RDMA_RS_* lines Kbuild reads. Choices already in the output file are kept (edit it and
# run `make modules` again), and SET adds more ("CONFIG_RDMA_RS_SAMPLES=n ..."). The kernel's own
# symbols must come out unchanged: a module that needs an option the kernel lacks fails here.
# Skipped when nothing it reads changed.
# Usage: rdma-rs-config.sh <repo> <kernel tree> <output file> <bindgen> [SET...]
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
ktree=${2:?kernel tree}
out=${3:?output file}
bindgen=${4:?bindgen}
shift 4
dir=$(dirname "$out")/kconfig
mkdir -p "$dir"

# A digest of everything this script reads.
inputs_digest() {
	{ cat "$repo/Kconfig" "$ktree/.config" "$0"; if [ -f "$out" ]; then cat "$out"; fi
	  printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1
}
stamp=$(inputs_digest "$@")
if [ -f "$out" ] && [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

# The kernel's top-level Kconfig with ours sourced at the end (paths in it are relative to the
# kernel tree, where kconfig runs).
{ cat "$ktree/Kconfig"; echo "source \"$repo/Kconfig\""; } >"$dir/Kconfig"
{ cat "$ktree/.config"; if [ -f "$out" ]; then grep -E '^(# )?CONFIG_RDMA_RS_' "$out" || true; fi
  printf '%s\n' "$@"; } >"$dir/.config"
LIBCLANG_PATH=/usr/lib/llvm${KERNEL_LLVM:--22}/lib \
make -C "$ktree" -s "LLVM=${KERNEL_LLVM:--22}" "BINDGEN=$bindgen" KCONFIG_CONFIG="$dir/.config" \
	KBUILD_KCONFIG="$dir/Kconfig" olddefconfig

changed=$(diff <(grep -v 'RDMA_RS' "$ktree/.config" | grep '^CONFIG_' | sort) \
	<(grep -v 'RDMA_RS' "$dir/.config" | grep '^CONFIG_' | sort) || true)
if [ -n "$changed" ]; then
	echo "rdma-rs-config: our Kconfig needs kernel options the test kernel does not have:" >&2
	echo "$changed" >&2
	exit 1
fi
{
	echo "# What \`make modules\` builds: the symbols of Kconfig, as evaluated against the test kernel."
	echo "# Edit and run \`make modules\` again (the dependencies are checked then)."
	grep -E '^(# )?CONFIG_RDMA_RS_' "$dir/.config"
} >"$out.tmp"
mv "$out.tmp" "$out"
# What was read, with the new output: unchanged inputs skip the next run.
inputs_digest "$@" >"$dir/stamp"
