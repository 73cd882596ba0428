/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers and constants the rdma-rs kernel-crate abstractions need beyond the kernel's own
 * bindings_helper.h. Appended to it by tools/kernel/overlay.sh.
 */

#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/kmod.h>
#include <linux/ipv6_route.h>
#include <linux/netlink.h>
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>
#include <net/dst.h>
#include <net/ip6_fib.h>
#include <net/ip6_route.h>
#include <net/neighbour.h>
#include <net/net_namespace.h>
#include <net/netevent.h>
#include <net/netlink.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/sock.h>
#include <rdma/ib.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_marshall.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_sysfs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_netlink.h>
#include <rdma/rw.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/rdma_netlink.h>
/* rdma_cm's private ID (`struct rdma_id_private`, whose restrack entry the core lists and whose
 * fields `rdma res show cm_id` shows, as C's nldev.c reads them). */
#include "../../drivers/infiniband/core/cma_priv.h"

const gfp_t RUST_CONST_HELPER___GFP_DIRECT_RECLAIM = __GFP_DIRECT_RECLAIM;
const size_t RUST_CONST_HELPER_NLMSG_DEFAULT_SIZE = NLMSG_DEFAULT_SIZE;
const size_t RUST_CONST_HELPER_NLMSG_GOODSIZE = NLMSG_GOODSIZE;
