// SPDX-License-Identifier: GPL-2.0

#include <linux/refcount.h>

/* Takes a reference unless the count is already zero (an inline function in C). */
__rust_helper bool rust_helper_rdma_rs_refcount_inc_not_zero(refcount_t *r)
{
	return refcount_inc_not_zero(r);
}

/* The count's value (an inline function in C). */
__rust_helper unsigned int rust_helper_rdma_rs_refcount_read(const refcount_t *r)
{
	return refcount_read(r);
}
