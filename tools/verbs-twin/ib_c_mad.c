// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_mad: a C user of the MAD agent API (what ib_cm and the SA client use), built once against
 * include/rdma/ib_mad.h and loaded unchanged on either stack (scenario c-abi-mad): on C's
 * ib_core it is the oracle, on the Rust core it exercises the C ABI's MAD agent API
 * (docs/c-abi.md). Test tool.
 *
 * On each device's port 1 (client add) it registers GSI agents of vendor classes 0x0b and 0x0c
 * and a sender without a class, then, one step at a time, each waited for before its line is
 * printed: registrations the MAD layer refuses; a GET from the sender to the port's own LID
 * answered by the 0x0b agent (its receive as the responder sees it, the response as the
 * sender sees it with its request's send buffer, the send completions); a SET of a method no
 * agent registered, answered by the MAD layer itself; a GET to the 0x0c agent, which never
 * answers, sent with one retry (two receives, then a response timeout); a waiting send's
 * timeout shortened (ib_modify_mad), one cancelled; GIDs (rdma_query_gid, rdma_find_gid) and
 * the port's CM capability bit set and cleared (ib_modify_port); a send still waiting when
 * its agent unregisters (flushed); sends the API refuses. The responder's AH comes from
 * ib_create_ah_from_wc, as ib_cm makes it. The AHs are made in the agent's
 * `qp->pd`, as ib_cm makes them. Everything is unregistered and freed in the add.
 *
 * The receive's P_Key index is not printed: C's mlx5 looks the P_Key of a QP1 completion up in
 * the P_Key cache, and cx-model writes no P_Key into the CQE (0), which C's lookup turns into
 * index 127 (the last limited entry of the table) where hardware would give the packet's
 * 0xffff, index 0, what the Rust mlx5_ib reports (docs/c-abi.md, differences noticed).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

/* Vendor classes of range 1 that mlx5 does not hand to its firmware (0x09 and 0x0a are Mellanox's). */
#define CLASS_A 0x0b
#define CLASS_B 0x0c
#define TID_LOW 0x1234

/* What the handlers saw, read by the add once it has waited for it. */
struct seen {
	atomic_t recvs, sends;
	wait_queue_head_t wake;
	/* The last receive: class, method, status, TID, source, P_Key index, flags. */
	u8 cls, method;
	u16 status;
	u64 tid;
	u32 src_qp;
	u16 slid, pkey_index;
	int grh, send_buf_given;
	/* The last send completion. */
	int wc_status;
};

static struct seen seen_a, seen_b, seen_s;
static struct ib_mad_agent *agent_a;
static u16 port_lid;
static struct ib_client client;

static void wake(struct seen *s)
{
	wake_up_all(&s->wake);
}

static struct ib_ah *ah_to(struct ib_mad_agent *agent, u16 dlid)
{
	struct rdma_ah_attr attr = {};

	attr.type = rdma_ah_find_type(agent->device, agent->port_num);
	rdma_ah_set_port_num(&attr, agent->port_num);
	rdma_ah_set_dlid(&attr, dlid);
	return rdma_create_ah(agent->qp->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
}

static void record_recv(struct seen *s, struct ib_mad_send_buf *send_buf,
			struct ib_mad_recv_wc *wc)
{
	struct ib_mad_hdr *h = &wc->recv_buf.mad->mad_hdr;

	s->cls = h->mgmt_class;
	s->method = h->method;
	s->status = be16_to_cpu(h->status);
	s->tid = be64_to_cpu(h->tid);
	s->src_qp = wc->wc->src_qp;
	s->slid = wc->wc->slid;
	s->pkey_index = wc->wc->pkey_index;
	s->grh = !!(wc->wc->wc_flags & IB_WC_GRH);
	s->send_buf_given = send_buf != NULL;
}

/* Agent A (class 0x09) answers every GET with a GET response to its sender. */
static void a_recv(struct ib_mad_agent *agent, struct ib_mad_send_buf *send_buf,
		   struct ib_mad_recv_wc *wc)
{
	struct ib_mad_send_buf *resp;
	struct ib_ah *ah;

	record_recv(&seen_a, send_buf, wc);
	resp = ib_create_send_mad(agent, wc->wc->src_qp, wc->wc->pkey_index, 0, IB_MGMT_MAD_HDR,
				  IB_MGMT_MAD_DATA, GFP_KERNEL, IB_MGMT_BASE_VERSION);
	/* The AH that answers the request, as ib_cm makes it. */
	ah = IS_ERR(resp) ? NULL : ib_create_ah_from_wc(agent->qp->pd, wc->wc, wc->recv_buf.grh,
							 agent->port_num);
	if (!IS_ERR_OR_NULL(ah)) {
		memcpy(resp->mad, wc->recv_buf.mad, sizeof(struct ib_mad));
		((struct ib_mad_hdr *)resp->mad)->method = IB_MGMT_METHOD_GET_RESP;
		resp->ah = ah;
		if (ib_post_send_mad(resp, NULL)) {
			rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
			ib_free_send_mad(resp);
		}
	} else if (!IS_ERR(resp)) {
		ib_free_send_mad(resp);
	}
	ib_free_recv_mad(wc);
	atomic_inc(&seen_a.recvs);
	wake(&seen_a);
}

static void a_send(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc)
{
	seen_a.wc_status = wc->status;
	rdma_destroy_ah(wc->send_buf->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_free_send_mad(wc->send_buf);
	atomic_inc(&seen_a.sends);
	wake(&seen_a);
}

/* Agent B (class 0x0a) never answers. */
static void b_recv(struct ib_mad_agent *agent, struct ib_mad_send_buf *send_buf,
		   struct ib_mad_recv_wc *wc)
{
	record_recv(&seen_b, send_buf, wc);
	ib_free_recv_mad(wc);
	atomic_inc(&seen_b.recvs);
	wake(&seen_b);
}

static void b_send(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc)
{
}

/* The sender S: responses to its requests, and its send completions. */
static void s_recv(struct ib_mad_agent *agent, struct ib_mad_send_buf *send_buf,
		   struct ib_mad_recv_wc *wc)
{
	record_recv(&seen_s, send_buf, wc);
	ib_free_recv_mad(wc);
	atomic_inc(&seen_s.recvs);
	wake(&seen_s);
}

static void s_send(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc)
{
	seen_s.wc_status = wc->status;
	rdma_destroy_ah(wc->send_buf->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_free_send_mad(wc->send_buf);
	atomic_inc(&seen_s.sends);
	wake(&seen_s);
}

static struct ib_mad_agent *reg(struct ib_device *dev, u32 port, enum ib_qp_type qpt, u8 cls,
				u8 method, ib_mad_send_handler sh, ib_mad_recv_handler rh)
{
	struct ib_mad_reg_req req = { .mgmt_class = cls, .mgmt_class_version = 1 };

	if (!cls)
		return ib_register_mad_agent(dev, port, qpt, NULL, 0, sh, rh, NULL, 0);
	set_bit(method, req.method_mask);
	return ib_register_mad_agent(dev, port, qpt, &req, 0, sh, rh, NULL, 0);
}

/*
 * Sends a request of `cls`/`method` from `s` to the port's own QP1; 0 or the error. `posted`,
 * when not NULL, gets the send buffer (the sender's until its send_handler runs).
 */
static int request_buf(struct ib_mad_agent *s, u8 cls, u8 method, u32 tid_low, int timeout_ms,
		       int retries, struct ib_mad_send_buf **posted)
{
	struct ib_mad_send_buf *buf;
	struct ib_mad_hdr *h;
	struct ib_ah *ah;
	int err;

	buf = ib_create_send_mad(s, 1, 0, 0, IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA, GFP_KERNEL,
				 IB_MGMT_BASE_VERSION);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ah = ah_to(s, port_lid);
	if (IS_ERR(ah)) {
		ib_free_send_mad(buf);
		return PTR_ERR(ah);
	}
	h = buf->mad;
	h->base_version = IB_MGMT_BASE_VERSION;
	h->mgmt_class = cls;
	h->class_version = 1;
	h->method = method;
	h->tid = cpu_to_be64(((u64)s->hi_tid << 32) | tid_low);
	h->attr_id = cpu_to_be16(0x10);
	buf->ah = ah;
	buf->timeout_ms = timeout_ms;
	buf->retries = retries;
	if (posted)
		*posted = buf;
	err = ib_post_send_mad(buf, NULL);
	if (err) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		ib_free_send_mad(buf);
	}
	return err;
}

static int request(struct ib_mad_agent *s, u8 cls, u8 method, u32 tid_low, int timeout_ms,
		   int retries)
{
	return request_buf(s, cls, method, tid_low, timeout_ms, retries, NULL);
}

static bool wait_count(struct seen *s, atomic_t *c, int n)
{
	return wait_event_timeout(s->wake, atomic_read(c) >= n, 10 * HZ) > 0;
}

static void reset(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	atomic_set(&s->recvs, 0);
	atomic_set(&s->sends, 0);
	init_waitqueue_head(&s->wake);
}

static int add(struct ib_device *dev)
{
	struct ib_mad_agent *b, *s, *refused[3];
	struct ib_port_attr pa = {};
	unsigned int i;
	int err;

	if (!rdma_cap_ib_mad(dev, 1) || ib_query_port(dev, 1, &pa))
		return -EOPNOTSUPP;
	port_lid = pa.lid;
	reset(&seen_a);
	reset(&seen_b);
	reset(&seen_s);
	agent_a = reg(dev, 1, IB_QPT_GSI, CLASS_A, IB_MGMT_METHOD_GET, a_send, a_recv);
	b = reg(dev, 1, IB_QPT_GSI, CLASS_B, IB_MGMT_METHOD_GET, b_send, b_recv);
	s = reg(dev, 1, IB_QPT_GSI, 0, 0, s_send, s_recv);
	if (IS_ERR(agent_a) || IS_ERR(b) || IS_ERR(s)) {
		pr_info("ib_c_mad: %s: registration failed: %d %d %d\n", dev_name(&dev->dev),
			PTR_ERR_OR_ZERO(agent_a), PTR_ERR_OR_ZERO(b), PTR_ERR_OR_ZERO(s));
		goto out;
	}
	pr_info("ib_c_mad: %s: agents on port %u: qp %u type %d, device ours %d, pd device ours %d, hi_tids distinct %d, rmpp %u\n",
		dev_name(&dev->dev), agent_a->port_num, agent_a->qp->qp_num, agent_a->qp->qp_type,
		agent_a->device == dev, agent_a->qp->pd->device == dev,
		agent_a->hi_tid != b->hi_tid && b->hi_tid != s->hi_tid, agent_a->rmpp_version);
	refused[0] = reg(dev, 1, IB_QPT_GSI, CLASS_A, IB_MGMT_METHOD_GET, a_send, a_recv);
	refused[1] = reg(dev, 1, IB_QPT_SMI, CLASS_A, IB_MGMT_METHOD_GET, a_send, a_recv);
	refused[2] = reg(dev, 1, IB_QPT_UD, CLASS_A, IB_MGMT_METHOD_GET, a_send, a_recv);
	pr_info("ib_c_mad: refused: the same method again %d, a vendor class on the SMI %d, a UD QP type %d\n",
		PTR_ERR_OR_ZERO(refused[0]), PTR_ERR_OR_ZERO(refused[1]),
		PTR_ERR_OR_ZERO(refused[2]));
	for (i = 0; i < ARRAY_SIZE(refused); i++)
		if (!IS_ERR(refused[i]))
			ib_unregister_mad_agent(refused[i]);

	/* A GET answered by agent A. */
	err = request(s, CLASS_A, IB_MGMT_METHOD_GET, TID_LOW, 2000, 0);
	wait_count(&seen_s, &seen_s.sends, 1);
	wait_count(&seen_a, &seen_a.sends, 1);
	pr_info("ib_c_mad: get: post %d; A got class 0x%x method 0x%x tid ours %d from lid ours %d qp %u grh %d send_buf %d; its response went %d\n",
		err, seen_a.cls, seen_a.method, seen_a.tid == (((u64)s->hi_tid << 32) | TID_LOW),
		seen_a.slid == port_lid, seen_a.src_qp, seen_a.grh,
		seen_a.send_buf_given, seen_a.wc_status);
	pr_info("ib_c_mad: get: the sender got method 0x%x status 0x%x tid ours %d with its request's send_buf %d; its send ended %d\n",
		seen_s.method, seen_s.status, seen_s.tid == (((u64)s->hi_tid << 32) | TID_LOW),
		seen_s.send_buf_given, seen_s.wc_status);

	/* A SET nobody registered: the MAD layer answers. */
	reset(&seen_s);
	err = request(s, CLASS_A, IB_MGMT_METHOD_SET, TID_LOW + 1, 2000, 0);
	wait_count(&seen_s, &seen_s.sends, 1);
	pr_info("ib_c_mad: set nobody registered: post %d; answered with method 0x%x status 0x%x; send ended %d\n",
		err, seen_s.method, seen_s.status, seen_s.wc_status);

	/* A GET to B, which never answers: sent twice, then a timeout. */
	reset(&seen_s);
	err = request(s, CLASS_B, IB_MGMT_METHOD_GET, TID_LOW + 2, 300, 1);
	wait_count(&seen_s, &seen_s.sends, 1);
	pr_info("ib_c_mad: unanswered get with one retry: post %d; B got it %d time(s); send ended %d, %d response(s)\n",
		err, atomic_read(&seen_b.recvs), seen_s.wc_status, atomic_read(&seen_s.recvs));

	/* A send's timeout shortened, then one cancelled, while they wait for a response. */
	{
		struct ib_mad_send_buf *sb = NULL;
		int shortened, cancelled;

		reset(&seen_s);
		err = request_buf(s, CLASS_B, IB_MGMT_METHOD_GET, TID_LOW + 4, 20000, 0, &sb);
		wait_count(&seen_b, &seen_b.recvs, 3);
		shortened = err ? err : ib_modify_mad(sb, 100);
		wait_count(&seen_s, &seen_s.sends, 1);
		pr_info("ib_c_mad: timeout shortened to 100 ms: post %d, modify %d; send ended %d\n",
			err, shortened, seen_s.wc_status);
		reset(&seen_s);
		err = request_buf(s, CLASS_B, IB_MGMT_METHOD_GET, TID_LOW + 5, 20000, 0, &sb);
		wait_count(&seen_b, &seen_b.recvs, 4);
		cancelled = err ? err : ib_modify_mad(sb, 0);
		wait_count(&seen_s, &seen_s.sends, 1);
		pr_info("ib_c_mad: cancelled: post %d, cancel %d; send ended %d\n", err, cancelled,
			seen_s.wc_status);
	}

	/* GIDs and the port's capability bits. */
	{
		union ib_gid g0 = {}, g1 = {}, gx = {};
		const struct ib_gid_attr *attr;
		struct ib_port_attr before = {}, set = {}, after = {};
		struct ib_port_modify pm = { .set_port_cap_mask = IB_PORT_CM_SUP };
		int q0, q1, qx, m1, m2;

		q0 = rdma_query_gid(dev, 1, 0, &g0);
		q1 = rdma_query_gid(dev, 1, 1, &g1);
		qx = rdma_query_gid(dev, 1, pa.gid_tbl_len, &gx);
		attr = rdma_find_gid(dev, &g0, IB_GID_TYPE_IB, NULL);
		pr_info("ib_c_mad: gids: index 0 %d (prefix 0x%llx), index 1 %d, index %d %d; found at port %u index %u type %d device ours %d (%d)\n",
			q0, be64_to_cpu(g0.global.subnet_prefix), q1, pa.gid_tbl_len, qx,
			IS_ERR(attr) ? 0 : attr->port_num, IS_ERR(attr) ? 0 : attr->index,
			IS_ERR(attr) ? -1 : attr->gid_type, !IS_ERR(attr) && attr->device == dev,
			PTR_ERR_OR_ZERO(attr));
		if (!IS_ERR(attr))
			rdma_put_gid_attr(attr);
		/* Port 1's first GID with its last byte changed: no port has it. */
		gx = g0;
		gx.raw[15] ^= 0xff;
		attr = rdma_find_gid(dev, &gx, IB_GID_TYPE_IB, NULL);
		pr_info("ib_c_mad: gids: a GID no port has: %d\n", PTR_ERR_OR_ZERO(attr));
		if (!IS_ERR(attr))
			rdma_put_gid_attr(attr);
		ib_query_port(dev, 1, &before);
		m1 = ib_modify_port(dev, 1, 0, &pm);
		ib_query_port(dev, 1, &set);
		pm.set_port_cap_mask = 0;
		pm.clr_port_cap_mask = IB_PORT_CM_SUP;
		m2 = ib_modify_port(dev, 1, 0, &pm);
		ib_query_port(dev, 1, &after);
		pr_info("ib_c_mad: port caps: cm_sup %d; set %d -> %d; cleared %d -> %d; port 2 %d\n",
			!!(before.port_cap_flags & IB_PORT_CM_SUP), m1,
			!!(set.port_cap_flags & IB_PORT_CM_SUP), m2,
			!!(after.port_cap_flags & IB_PORT_CM_SUP), ib_modify_port(dev, 2, 0, &pm));
	}

	/* What the API refuses. */
	{
		struct ib_mad_send_buf *big, *rmpp;

		big = ib_create_send_mad(s, 1, 0, 0, IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA + 1,
					 GFP_KERNEL, IB_MGMT_BASE_VERSION);
		rmpp = ib_create_send_mad(s, 1, 0, 1, IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA, GFP_KERNEL,
					  IB_MGMT_BASE_VERSION);
		pr_info("ib_c_mad: refused sends: 257 bytes %d, rmpp on an agent without it %d\n",
			PTR_ERR_OR_ZERO(big), PTR_ERR_OR_ZERO(rmpp));
		if (!IS_ERR(big))
			ib_free_send_mad(big);
		if (!IS_ERR(rmpp))
			ib_free_send_mad(rmpp);
	}

	/* A send still waiting for its response when its agent unregisters. */
	reset(&seen_s);
	err = request(s, CLASS_B, IB_MGMT_METHOD_GET, TID_LOW + 3, 10000, 0);
	wait_count(&seen_b, &seen_b.recvs, 5);
	ib_unregister_mad_agent(s);
	s = NULL;
	pr_info("ib_c_mad: unregistered with a send waiting: post %d; it ended %d (%d send completion(s))\n",
		err, seen_s.wc_status, atomic_read(&seen_s.sends));
out:
	if (!IS_ERR_OR_NULL(s))
		ib_unregister_mad_agent(s);
	if (!IS_ERR_OR_NULL(b))
		ib_unregister_mad_agent(b);
	if (!IS_ERR_OR_NULL(agent_a))
		ib_unregister_mad_agent(agent_a);
	agent_a = NULL;
	pr_info("ib_c_mad: %s: done\n", dev_name(&dev->dev));
	return 0;
}

static void remove(struct ib_device *dev, void *data)
{
}

static struct ib_client client = {
	.name = "ib_c_mad",
	.add = add,
	.remove = remove,
};

static int __init ib_c_mad_init(void)
{
	return ib_register_client(&client);
}

static void __exit ib_c_mad_exit(void)
{
	ib_unregister_client(&client);
}

module_init(ib_c_mad_init);
module_exit(ib_c_mad_exit);
MODULE_DESCRIPTION("C MAD agent API user loaded on either stack (test tool)");
MODULE_LICENSE("GPL");
