// SPDX-License-Identifier: GPL-2.0
/*
 * Static inlines and macros of the netlink and network-namespace headers, as functions for the
 * rdma-rs `netlink` and `net_namespace` abstractions.
 */

#include <linux/netdevice.h>
#include <linux/netlink.h>
#include <net/net_namespace.h>
#include <net/netlink.h>
#include <net/netns/generic.h>
#include <net/sock.h>

#ifdef CONFIG_NET

__rust_helper struct sk_buff *rust_helper_nlmsg_new(size_t payload, gfp_t flags)
{
	return nlmsg_new(payload, flags);
}

__rust_helper struct nlmsghdr *rust_helper_nlmsg_put(struct sk_buff *skb, u32 portid, u32 seq,
						     int type, int payload, int flags)
{
	return nlmsg_put(skb, portid, seq, type, payload, flags);
}

__rust_helper void rust_helper_nlmsg_end(struct sk_buff *skb, struct nlmsghdr *nlh)
{
	nlmsg_end(skb, nlh);
}

__rust_helper void rust_helper_nlmsg_cancel(struct sk_buff *skb, struct nlmsghdr *nlh)
{
	nlmsg_cancel(skb, nlh);
}

__rust_helper int rust_helper_nlmsg_multicast(struct sock *sk, struct sk_buff *skb, u32 portid,
					      unsigned int group, gfp_t flags)
{
	return nlmsg_multicast(sk, skb, portid, group, flags);
}

__rust_helper int rust_helper___nlmsg_parse(const struct nlmsghdr *nlh, int hdrlen,
					    struct nlattr *tb[], int maxtype,
					    const struct nla_policy *policy, unsigned int validate,
					    struct netlink_ext_ack *extack)
{
	return __nlmsg_parse(nlh, hdrlen, tb, maxtype, policy, validate, extack);
}

__rust_helper struct nlattr *rust_helper_nla_nest_start_noflag(struct sk_buff *skb, int attrtype)
{
	return nla_nest_start_noflag(skb, attrtype);
}

__rust_helper struct nlattr *rust_helper_nla_nest_start(struct sk_buff *skb, int attrtype)
{
	return nla_nest_start(skb, attrtype);
}

__rust_helper int rust_helper_nla_nest_end(struct sk_buff *skb, struct nlattr *start)
{
	return nla_nest_end(skb, start);
}

__rust_helper void rust_helper_nla_nest_cancel(struct sk_buff *skb, struct nlattr *start)
{
	nla_nest_cancel(skb, start);
}

__rust_helper u32 rust_helper_rdma_rs_netlink_cb_portid(const struct sk_buff *skb)
{
	return NETLINK_CB(skb).portid;
}

__rust_helper struct net *rust_helper_sock_net(const struct sock *sk)
{
	return sock_net(sk);
}

__rust_helper void *rust_helper_net_generic(const struct net *net, unsigned int id)
{
	return net_generic(net, id);
}

__rust_helper int rust_helper_net_eq(const struct net *net1, const struct net *net2)
{
	return net_eq(net1, net2);
}

__rust_helper void rust_helper_put_net(struct net *net)
{
	put_net(net);
}

__rust_helper void rust_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

__rust_helper void rust_helper_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

/* Whether the device is up with its carrier on (C's `ib_get_curr_port_state` asks this). */
__rust_helper bool rust_helper_rdma_rs_netif_running_with_carrier(const struct net_device *dev)
{
	return netif_running(dev) && netif_carrier_ok(dev);
}

#endif
