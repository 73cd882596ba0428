// SPDX-License-Identifier: GPL-2.0

#include <linux/xarray.h>

/* Whether an entry an xarray store returned is an error (an inline function in C). */
__rust_helper bool rust_helper_rdma_rs_xa_is_err(const void *entry)
{
	return xa_is_err(entry);
}
