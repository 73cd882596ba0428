/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers and constants the rdma-rs kernel-crate abstractions need beyond the kernel's own
 * bindings_helper.h. Appended to it by tools/kernel/overlay.sh.
 */

#include <net/neighbour.h>
#include <net/netevent.h>
