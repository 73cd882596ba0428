#!/usr/bin/env bash
# Overlay the project's kernel-crate abstractions (rust/) onto a kernel tree.
#
# Never commits a copy of an upstream file: our files are new files under rust/kernel/ and
# rust/helpers/, and the few edits to upstream files are appended here, guarded so that running
# the script twice changes nothing.
#   rust/kernel/<m>.rs (and rust/kernel/<m>/)  -> tree/rust/kernel/, plus `pub mod <m>;` in lib.rs
#   rust/kernel/<dir>/<m>.rs, <dir> upstream's   -> plus `pub mod <m>;` in upstream's <dir>/mod.rs
#   rust/bindings/rdma_rs_helper.h             -> tree/rust/bindings/, included by bindings_helper.h
#   rust/uapi/rdma_rs_uapi_helper.h            -> tree/rust/uapi/, included by uapi_helper.h
#   rust/helpers/rdma_rs_*.c                   -> tree/rust/helpers/, included by helpers.c
# Files overlaid earlier and since deleted from the repo are removed (tracked in a manifest).
# Usage: overlay.sh <repo> <tree>
set -euo pipefail
repo=$(cd "${1:?repo}" && pwd)
tree=$(cd "${2:?tree}" && pwd)
manifest="$tree/.rdma-rs-overlay"
touch "$manifest"

new_manifest=$(mktemp)
copy() { # src dst: copy only if different, so make sees no spurious change
  mkdir -p "$(dirname "$2")"
  cmp -s "$1" "$2" || cp "$1" "$2"
  echo "${2#"$tree"/}" >>"$new_manifest"
}
append_once() { # file line
  grep -qxF "$2" "$1" || printf '%s\n' "$2" >>"$1"
}

# The file that declares the submodules of rust/kernel/<dir>/ upstream (mod.rs or <dir>.rs).
parent_of() { # dir (relative to rust/kernel, empty for the crate root)
  if [ -z "$1" ]; then echo "$tree/rust/kernel/lib.rs"
  elif [ -f "$tree/rust/kernel/$1/mod.rs" ] && ! grep -qxF "rust/kernel/$1/mod.rs" "$manifest"; then
    echo "$tree/rust/kernel/$1/mod.rs"
  else echo "$tree/rust/kernel/$1.rs"; fi
}

# Modules we add: `m` at the crate root (rust/kernel/m.rs) or `dir/m` inside an upstream module
# (rust/kernel/dir/m.rs, e.g. net/), each declared by a `pub mod` line in its parent.
mods=()
if [ -d "$repo/rust/kernel" ]; then
  while IFS= read -r -d '' f; do
    rel=${f#"$repo"/rust/kernel/}
    copy "$f" "$tree/rust/kernel/$rel"
    case "$rel" in */*/*) ;; *.rs) mods+=("${rel%.rs}") ;; esac
  done < <(find "$repo/rust/kernel" -type f -name '*.rs' -print0 | sort -z)
fi
# A top-level file with a directory of the same name (ours) declares its own submodules.
declared=()
for m in "${mods[@]}"; do
  case "$m" in */*) dir=${m%/*} ;; *) dir= ;; esac
  [ -n "$dir" ] && [ -f "$repo/rust/kernel/$dir.rs" ] && continue
  parent=$(parent_of "$dir")
  append_once "$parent" "pub mod ${m##*/}; // rdma-rs overlay"
  declared+=("$parent:${m##*/}")
done
# Drop `mod` lines for modules no longer in the repo.
for parent in "$tree"/rust/kernel/*/mod.rs "$tree"/rust/kernel/*.rs; do
  [ -f "$parent" ] || continue
  while IFS= read -r line; do
    m=${line#pub mod }; m=${m%%;*}
    # (No `printf | grep -q` here: with pipefail, grep quitting at the first match can make
    # printf die of SIGPIPE, and the line of a module still in the repo would be removed.)
    keep=0
    for k in "${declared[@]}"; do [ "$k" = "$parent:$m" ] && keep=1; done
    [ "$keep" = 1 ] || sed -i "\|^pub mod $m; // rdma-rs overlay\$|d" "$parent"
  done < <(grep '// rdma-rs overlay$' "$parent" || true)
done

if [ -f "$repo/rust/bindings/rdma_rs_helper.h" ]; then
  copy "$repo/rust/bindings/rdma_rs_helper.h" "$tree/rust/bindings/rdma_rs_helper.h"
  append_once "$tree/rust/bindings/bindings_helper.h" '#include "rdma_rs_helper.h"'
fi
if [ -f "$repo/rust/uapi/rdma_rs_uapi_helper.h" ]; then
  copy "$repo/rust/uapi/rdma_rs_uapi_helper.h" "$tree/rust/uapi/rdma_rs_uapi_helper.h"
  append_once "$tree/rust/uapi/uapi_helper.h" '#include "rdma_rs_uapi_helper.h"'
fi
for f in "$repo"/rust/helpers/rdma_rs_*.c; do
  [ -e "$f" ] || continue
  copy "$f" "$tree/rust/helpers/$(basename "$f")"
  append_once "$tree/rust/helpers/helpers.c" "#include \"$(basename "$f")\""
done

# Remove files we overlaid before that the repo no longer has.
while IFS= read -r old; do
  [ -n "$old" ] || continue
  grep -qxF "$old" "$new_manifest" && continue
  rm -f "$tree/$old"
  base=$(basename "$old")
  case "$base" in rdma_rs_*.c) sed -i "\|^#include \"$base\"\$|d" "$tree/rust/helpers/helpers.c" ;; esac
done <"$manifest"
sort -u "$new_manifest" >"$manifest"
rm -f "$new_manifest"
echo "overlay: ${#mods[@]} kernel-crate module(s) overlaid"
