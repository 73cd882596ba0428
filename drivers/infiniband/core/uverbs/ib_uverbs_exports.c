// SPDX-License-Identifier: GPL-2.0
/*
 * ib_uverbs' C ABI: the functions of marshall.rs (Rust, with C's names and signatures),
 * exported as C's ib_uverbs exports them, for C modules that answer user space themselves
 * (rdma_ucm). The contract they come from: ../c_abi/imports.txt.
 */
#include <linux/export.h>

#define EXPORT_C_ABI(sym) extern int sym; EXPORT_SYMBOL(sym)

EXPORT_C_ABI(ib_copy_ah_attr_to_user);
EXPORT_C_ABI(ib_copy_qp_attr_to_user);
EXPORT_C_ABI(ib_copy_path_rec_to_user);
