// SPDX-License-Identifier: GPL-2.0
/*
 * Exports the Rust symbols of the mlx5_core crate that mlx5_ib references. The list is
 * generated at build time; see the Kbuild file at the repository root.
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

#include "exports_mlx5_core_generated.h"
