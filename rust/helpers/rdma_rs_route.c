// SPDX-License-Identifier: GPL-2.0
/*
 * Static inlines of the route, dst and neighbour headers, as functions for the rdma-rs
 * `net::route` abstraction.
 */

#include <linux/netdevice.h>
#include <net/dst.h>
#include <net/neighbour.h>
#include <net/route.h>

#ifdef CONFIG_INET

__rust_helper struct neighbour *rust_helper_dst_neigh_lookup(const struct dst_entry *dst,
							     const void *daddr)
{
	return dst_neigh_lookup(dst, daddr);
}

__rust_helper int rust_helper_neigh_event_send(struct neighbour *neigh, struct sk_buff *skb)
{
	return neigh_event_send(neigh, skb);
}

__rust_helper void rust_helper_neigh_ha_snapshot(char *dst, const struct neighbour *n,
						 const struct net_device *dev)
{
	neigh_ha_snapshot(dst, n, dev);
}

__rust_helper void rust_helper_neigh_release(struct neighbour *neigh)
{
	neigh_release(neigh);
}

/* The neighbour's state lock (`n->lock`), read side, softirqs off. */
__rust_helper void rust_helper_rdma_rs_neigh_read_lock_bh(struct neighbour *neigh)
{
	read_lock_bh(&neigh->lock);
}

__rust_helper void rust_helper_rdma_rs_neigh_read_unlock_bh(struct neighbour *neigh)
{
	read_unlock_bh(&neigh->lock);
}

__rust_helper int rust_helper_ip4_dst_hoplimit(const struct dst_entry *dst)
{
	return ip4_dst_hoplimit(dst);
}

__rust_helper struct net *rust_helper_rdma_rs_dev_net(const struct net_device *dev)
{
	return dev_net(dev);
}

#endif
