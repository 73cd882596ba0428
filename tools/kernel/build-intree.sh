#!/usr/bin/env bash
# Build the in-tree route: the repository as a patch series (intree-series.sh) applied to Linux
# 7.3.4 and built by the kernel's own build, with the stack's Kconfig symbols at m and C's stack
# off. What the `intree` scenario boots.
#
# Steps:
#  1. The series is made and checked to apply to the pristine tree (`git apply --check`, which
#     writes nothing).
#  2. The build tree starts as a copy of the test kernel's work tree (made again whenever that
#     kernel changes), so the kernel's objects are reused (the absolute paths in their recorded
#     commands rewritten to the copy's). Every file the series touches (and
#     every file the external build's overlay put there) is set back to its pristine state and the
#     series applied on top: the tree's sources are then pristine 7.3.4 + the series. A file that
#     comes out with the content it had keeps its time stamp, so make rebuilds only what differs.
#  3. The configuration is the test kernel's with INFINIBAND and MLX5_CORE off, which makes the
#     stack's symbols appear at their default, m. The stack's symbols select what C's select, so
#     the built-in part of the kernel must come out the same: the script fails if it does not.
#  4. `make bzImage modules`: the stack's modules are drivers/{ib_core,ib_uverbs,ib_umad,mlx5_core,
#     mlx5_ib}.ko.
# Usage: build-intree.sh <repo> <pristine tree> <test kernel tree> <in-tree build tree> <bindgen>
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
pristine=$(cd "${2:?pristine tree}" && pwd)
main=$(cd "${3:?test kernel tree}" && pwd)
work=${4:?in-tree build tree}
bindgen=${5:?bindgen}
here=$(cd "$(dirname "$0")" && pwd)
series=$work.series

"$here/intree-series.sh" "$repo" "$pristine" "$series" >/dev/null
patches=("$series"/*.patch)
(cd "$pristine" && GIT_CEILING_DIRECTORIES=$(dirname "$pristine") git apply --check "${patches[@]}")
echo "build-intree: the series (${#patches[@]} patches) applies to $pristine"

# 2. The tree: a copy of the test kernel's, made again when that kernel changed.
seed=$(stat -c '%Y' "$main/.config" "$main/vmlinux" | tr '\n' ' ')
if [ ! -f "$work/.intree-seed" ] || [ "$(cat "$work/.intree-seed")" != "$seed" ]; then
	echo "build-intree: copying the test kernel's tree to $work"
	rm -rf "$work"
	mkdir -p "$(dirname "$work")"
	cp -a "$main" "$work"
	# Kbuild records each target's command, and some commands (objtool's build, the Rust crates')
	# hold the tree's absolute path: rewritten to the copy's, they match what make will run
	# there, so their targets (and everything objtool processed) are not rebuilt.
	grep -rlF --include='.*.cmd' "$main/" "$work" | xargs -r sed -i "s|$main/|$work/|g"
	echo "$seed" >"$work/.intree-seed"
	# What the external build's overlay placed (its own files and the upstream files it edits)
	# is undone below with the rest.
	cp "$main/.rdma-rs-overlay" "$work/.intree-files" 2>/dev/null || : >"$work/.intree-files"
	rm -f "$work/.rdma-rs-overlay" "$work/.intree-config-stamp"
fi
# The files the series touches now, and those it (or the overlay) touched before.
now=$(grep -h '^diff --git a/' "${patches[@]}" | sed 's|^diff --git a/\([^ ]*\) b/.*|\1|' | sort -u)
touched=$({ printf '%s\n' "$now"; cat "$work/.intree-files"; } | sed '/^$/d' | sort -u)
save=$(mktemp -d)
trap 'rm -rf "$save"' EXIT
while IFS= read -r f; do
	if [ -e "$work/$f" ]; then
		mkdir -p "$save/$(dirname "$f")"
		cp -p "$work/$f" "$save/$f"
	fi
	if [ -e "$pristine/$f" ]; then cp -p "$pristine/$f" "$work/$f"; else rm -f "$work/$f"; fi
done <<<"$touched"
(cd "$work" && GIT_CEILING_DIRECTORIES=$(dirname "$work") git apply "${patches[@]}")
kept=0
while IFS= read -r f; do
	if [ -e "$save/$f" ] && [ -e "$work/$f" ] && cmp -s "$save/$f" "$work/$f"; then
		touch -r "$save/$f" "$work/$f"
		kept=$((kept + 1))
	fi
done <<<"$touched"
printf '%s\n' "$now" >"$work/.intree-files"
echo "build-intree: series applied ($(wc -l <<<"$now") files; $kept unchanged since the last build)"

# 3. The configuration (only when what it is made from changed: olddefconfig rewrites it).
kmake=(env -u MAKEFLAGS -u MFLAGS make -C "$work" -s "LLVM=${KERNEL_LLVM:--22}" "BINDGEN=$bindgen" -j"$(nproc)")
stamp=$(cat "$main/.config" "$work/drivers/Kconfig.rdma-rs" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$work/.intree-config-stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "build-intree: configuring (the test kernel's, with INFINIBAND and MLX5_CORE off)"
	sed -e 's/^CONFIG_INFINIBAND=.*/# CONFIG_INFINIBAND is not set/' \
		-e 's/^CONFIG_MLX5_CORE=.*/# CONFIG_MLX5_CORE is not set/' "$main/.config" >"$work/.config"
	"${kmake[@]}" olddefconfig
	for sym in IB_CORE IB_UVERBS MLX5_CORE MLX5_IB; do
		grep -qx "CONFIG_RDMA_RS_$sym=m" "$work/.config" || {
			echo "build-intree: CONFIG_RDMA_RS_$sym is not m" >&2; exit 1; }
	done
	# The built-in part must not change (the C stack's own bool options aside, and the library
	# options only the C modules above and beside C's core select here, which this route does not
	# build: SG_POOL for NVMe over RDMA, DST_CACHE and GRO_CELLS for rxe's UDP tunnel,
	# NET_CRC32C for siw).
	builtin() { grep -E '^CONFIG_[A-Z0-9_]+=y$' "$1" |
		grep -v -E '^CONFIG_(INFINIBAND_[A-Z0-9_]+|SG_POOL|DST_CACHE|GRO_CELLS|NET_CRC32C)=' | sort; }
	if ! diff <(builtin "$main/.config") <(builtin "$work/.config") >&2; then
		echo "build-intree: the kernel's built-in options changed (above: < test kernel, > in-tree)" >&2
		exit 1
	fi
	echo "$stamp" >"$work/.intree-config-stamp"
fi

echo "build-intree: make bzImage modules"
"${kmake[@]}" bzImage modules
for m in ib_core ib_uverbs ib_umad mlx5_core mlx5_ib; do
	[ -f "$work/drivers/$m.ko" ] || { echo "build-intree: drivers/$m.ko was not built" >&2; exit 1; }
done
echo "build-intree: done: $work/arch/x86/boot/bzImage, drivers/{ib_core,ib_uverbs,ib_umad,mlx5_core,mlx5_ib}.ko"
