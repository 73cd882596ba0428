#!/usr/bin/env bash
# The in-tree route: turn the repository into a patch series for a pristine Linux 7.3.4 tree.
#
#   0001 rust: the kernel-crate abstractions the stack needs (rust/ of this repository, placed as
#        tools/kernel/overlay.sh places them for the external build: the same files, the same
#        `pub mod` and #include lines).
#   0002 RDMA: the stack itself, in its kernel places: drivers/infiniband/core (ib_core,
#        ib_uverbs, ib_umad), drivers/infiniband/hw/mlx5 (mlx5_ib), drivers/net/mlx5_core (mlx5_core);
#        drivers/Makefile.rdma-rs (how they build) included by drivers/Makefile, and
#        drivers/Kconfig.rdma-rs (the repository's Kconfig down to its in-tree marker) sourced by
#        drivers/Kconfig. The symbols show only while C's INFINIBAND and MLX5_CORE are n (the
#        modules carry the C modules' names).
#
# Samples and test-only modules stay in the repository's external build (they use the stack's
# crates, and Kbuild cannot order crates across directories: samples/ would be another one).
#
# Apply with `git apply` (or `patch -p1`) in the kernel tree, set the symbols (they default to m
# once C's stack is off), and build the kernel: the modules come out as drivers/{ib_core,
# ib_uverbs,ib_umad,mlx5_core,mlx5_ib}.ko. The series is generated, never committed: it follows the
# repository. Deterministic output (fixed author and dates), so an unchanged repository gives a
# byte-identical series.
# Usage: intree-series.sh <repo> <pristine tree> <output dir>
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
pristine=$(cd "${2:?pristine tree}" && pwd)
outdir=${3:?output dir}
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=$tmp/tree
mkdir -p "$t/drivers"
# Only what the series touches: rust/ (the overlay's targets) and the two files of drivers/ that
# gain a line.
cp -a "$pristine/rust" "$t/rust"
cp "$pristine/drivers/Makefile" "$pristine/drivers/Kconfig" "$t/drivers/"

export GIT_AUTHOR_NAME="rdma-rs" GIT_AUTHOR_EMAIL="rdma-rs@localhost" \
	GIT_COMMITTER_NAME="rdma-rs" GIT_COMMITTER_EMAIL="rdma-rs@localhost" \
	GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
g() { git -C "$t" -c core.autocrlf=false -c commit.gpgsign=false "$@"; }
g init -q
echo ".rdma-rs-overlay" >"$t/.git/info/exclude"
g add -A
g commit -q -m "Linux 7.3.4 (the files the series touches)"

"$here/overlay.sh" "$repo" "$t" >/dev/null
g add -A
g commit -q -F - <<'EOF'
rust: kernel-crate abstractions for the RDMA stack

The pieces the Rust RDMA stack (ib_core, ib_uverbs, ib_umad, mlx5_core, mlx5_ib) needs that the kernel
crate of 7.3 lacks: new modules under rust/kernel/ declared in their parents, C helpers under
rust/helpers/ and the bindings header rust/bindings/rdma_rs_helper.h.
EOF

# The stack's files: those the repository tracks (a work tree's build output is not part of it).
if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git -C "$repo" ls-files -- drivers)
else
	files=$(cd "$repo" && find drivers -type f | sort)
fi
for f in $files; do
	case "$f" in drivers/Makefile.rdma-rs | drivers/infiniband/* | drivers/net/mlx5_core/*) ;; *)
		echo "intree-series: $f has no place in the series" >&2; exit 1 ;;
	esac
	if [ -e "$pristine/$f" ]; then
		echo "intree-series: $f would replace the kernel's own file" >&2; exit 1
	fi
	mkdir -p "$t/$(dirname "$f")"
	cp "$repo/$f" "$t/$f"
done

# The repository's Kconfig from its menu down to the marker, closed, shown only with C's stack off.
marker='^# ---- in-tree series: ends here'
grep -q "$marker" "$repo/Kconfig" || { echo "intree-series: no in-tree marker in Kconfig" >&2; exit 1; }
{
	echo "# SPDX-License-Identifier: GPL-2.0"
	echo "# The RDMA stack in Rust (generated from the rdma-rs repository's Kconfig)."
	echo "# Its modules carry the names of C's ib_core, ib_uverbs, ib_umad, mlx5_core and mlx5_ib, so it is"
	echo "# offered only with C's stack off. Modules only; its symbols select what C's select, so the"
	echo "# built-in kernel is the same with either stack."
	echo
	echo 'if INFINIBAND=n && MLX5_CORE=n'
	echo
	sed -n "/^menu /,/$marker/p" "$repo/Kconfig" | sed '$d'
	echo "endmenu"
	echo
	echo "endif"
	echo
	echo 'comment "rdma-rs (the RDMA stack in Rust) needs INFINIBAND and MLX5_CORE off"'
	echo '	depends on RUST && !(INFINIBAND=n && MLX5_CORE=n)'
} >"$t/drivers/Kconfig.rdma-rs"
sed -i 's|^source "drivers/infiniband/Kconfig"$|&\nsource "drivers/Kconfig.rdma-rs"|' "$t/drivers/Kconfig"
grep -q 'Kconfig.rdma-rs' "$t/drivers/Kconfig" || { echo "intree-series: drivers/Kconfig changed upstream" >&2; exit 1; }
sed -i 's|^obj-$(CONFIG_INFINIBAND)\t+= infiniband/$|&\n# The RDMA stack in Rust: its four modules from one Makefile (see the file).\ninclude $(srctree)/drivers/Makefile.rdma-rs|' "$t/drivers/Makefile"
grep -q 'Makefile.rdma-rs' "$t/drivers/Makefile" || { echo "intree-series: drivers/Makefile changed upstream" >&2; exit 1; }

g add -A
g commit -q -F - <<'EOF'
RDMA: ib_core, ib_uverbs, ib_umad, mlx5_core and mlx5_ib in Rust

The RDMA stack in Rust, in the kernel's places: the core (drivers/infiniband/core, modules
ib_core, ib_uverbs and ib_umad), the ConnectX core driver (drivers/net/mlx5_core, module mlx5_core) and
its RDMA driver (drivers/infiniband/hw/mlx5, module mlx5_ib). The modules carry the names of the
C modules they replace, so their symbols (drivers/Kconfig.rdma-rs) show only while INFINIBAND and
MLX5_CORE are off. One Makefile (drivers/Makefile.rdma-rs, included by drivers/Makefile) builds
the four, because two of them compile against the crates of the other two.
EOF

rm -rf "$outdir"
mkdir -p "$outdir"
g format-patch -q --no-signature --zero-commit -o "$(cd "$outdir" && pwd)" HEAD~2..HEAD
ls "$outdir"
