#!/usr/bin/env bash
# Rust pieces the kernel build needs: rust-src for the pinned rustc, and bindgen-cli 0.73.2.
# Usage: rust-toolchain.sh <cache-dir>  -> prints the bindgen path last.
set -euo pipefail
cache=${1:?cache dir}
toolchain=1.95.0
rustup toolchain list | grep -q "^$toolchain" || rustup toolchain install --profile minimal "$toolchain"
rustup component list --toolchain "$toolchain" --installed | grep -q '^rust-src' \
  || rustup component add --toolchain "$toolchain" rust-src
bg="$cache/bindgen-0.73.2/bin/bindgen"
if [ ! -x "$bg" ]; then
  echo "rust-toolchain: cargo install bindgen-cli 0.73.2"
  cargo install -q --locked --root "$cache/bindgen-0.73.2" bindgen-cli@0.73.2
fi
echo "$bg"
