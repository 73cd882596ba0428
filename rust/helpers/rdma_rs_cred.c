// SPDX-License-Identifier: GPL-2.0

#include <linux/cred.h>

/* The calling task's credentials (a macro in C). */
__rust_helper const struct cred *rust_helper_rdma_rs_current_cred(void)
{
	return current_cred();
}
