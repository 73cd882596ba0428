// SPDX-License-Identifier: GPL-2.0
/*
 * Static inlines of the route, dst and neighbour headers, as functions for the rdma-rs
 * `net::route` abstraction.
 */

#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>
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

/*
 * The device's IPv4 addresses (`ifa_address`, network order), in its list's order, into `out`
 * (at most `max`); returns how many the device has.
 */
__rust_helper int rust_helper_rdma_rs_netdev_ipv4_addrs(struct net_device *dev, __be32 *out,
							 int max)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	int n = 0;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(dev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n < max)
				out[n] = ifa->ifa_address;
			n++;
		}
	}
	rcu_read_unlock();
	return n;
}

#if IS_ENABLED(CONFIG_IPV6)
/*
 * The device's IPv6 addresses, in its list's order, into `out` (at most `max`); returns how
 * many the device has.
 */
__rust_helper int rust_helper_rdma_rs_netdev_ipv6_addrs(struct net_device *dev,
							 struct in6_addr *out, int max)
{
	struct inet6_ifaddr *ifp;
	struct inet6_dev *in6_dev;
	int n = 0;

	in6_dev = in6_dev_get(dev);
	if (!in6_dev)
		return 0;
	read_lock_bh(&in6_dev->lock);
	list_for_each_entry(ifp, &in6_dev->addr_list, if_list) {
		if (n < max)
			out[n] = ifp->addr;
		n++;
	}
	read_unlock_bh(&in6_dev->lock);
	in6_dev_put(in6_dev);
	return n;
}
#endif

#endif
