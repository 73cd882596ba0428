/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user ABI of the RDMA stack, for the kernel's `uapi` crate (bindgen): uverbs' write and
 * ioctl interfaces, mlx5's driver data, umad. Appended to rust/uapi/uapi_helper.h by
 * tools/kernel/overlay.sh.
 */

#include <uapi/rdma/ib_user_ioctl_cmds.h>
#include <uapi/rdma/ib_user_ioctl_verbs.h>
#include <uapi/rdma/ib_user_mad.h>
#include <uapi/rdma/ib_user_verbs.h>
#include <uapi/rdma/mlx5-abi.h>
#include <uapi/rdma/mlx5_user_ioctl_cmds.h>
