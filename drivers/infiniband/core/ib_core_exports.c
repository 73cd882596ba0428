// SPDX-License-Identifier: GPL-2.0
/*
 * Exports the Rust symbols of the ib_core crate that other modules of this tree (mlx5_ib,
 * samples) reference. The list is generated at build time from what those modules need; see
 * the Kbuild file at the repository root.
 */
#include <linux/export.h>

#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)

#include "exports_ib_core_generated.h"

#include "c_abi/exports.h"
