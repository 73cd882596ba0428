// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_rdmacm: a kernel user of C's RDMA connection manager (rdma_cm.ko, unmodified) with AF_IB
 * addresses (GIDs and service IDs, no IP: no IPoIB is needed), built once against
 * include/rdma/rdma_cm.h and loaded unchanged on either stack (scenario fabric-sm-2vm, with an
 * SM running): on C's ib_core it is the oracle, on the Rust core it shows rdma_cm running on
 * the C ABI (its client and devices, the P_Key and GID caches, restrack names, the SA client's
 * path query, ib_cm below it). Test tool.
 *
 * role=passive: an id bound to the service (the TCP port space's service ID of port 7471, any
 * GID) listens; the connection request's event (the path ib_cm took from the REQ, the private
 * data, the resources asked for), a QP made on the new id with rdma_create_qp, a receive posted
 * and the request accepted from the handler; the connection established; the peer's SEND and
 * its data; the peer's disconnect. role=active with peer_gid= (the other host's port GID): an
 * id resolves the AF_IB address (the device, port and own GID rdma_cm picks), then the route
 * (a PathRecord query to the SA: every field of the record), makes its QP, connects (the
 * accept's private data), sends 64 bytes, disconnects. Each step is waited for (30 s) before
 * its line is printed; everything is destroyed at the end, and init returns only then. The
 * lines must be the C stack's (the scenario names GIDs and LIDs).
 */
#include <linux/ctype.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <rdma/ib.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define PORT 7471
#define MSG 64
#define WAIT (30 * HZ)

static char *role = "passive";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "passive (listen and accept) or active (connect to peer_gid)");

static char *peer_gid = "";
module_param(peer_gid, charp, 0444);
MODULE_PARM_DESC(peer_gid, "the GID of the peer's port (active), as sysfs prints it");

static DECLARE_WAIT_QUEUE_HEAD(wake);

/* What the handler saw: bits of the events (1 << type), the last status, and per step a line. */
static struct {
	unsigned long seen;
	int status[RDMA_CM_EVENT_USER + 1];
	struct rdma_cm_id *child;
	char req[320];
	char accept[160];
	char established[160];
	int disconnected_on_child;
} ev;

static struct ib_pd *pd;
static struct ib_cq *cq;
static u8 *buf;
static u64 dma;

/* The private data: two zero bytes, then text. With AF_IB rdma_cm puts no header of its own in
 * a REQ, but writes its version over the first byte, and the passive side reads the second as
 * the header's IP version: a 4 or 6 in its upper half would make the REQ an IP one (and,
 * without IPoIB, rejected).
 */
#define HEAD 2
static const char accept_data[] = "\0\0ib_c_rdmacm accept";
static const char connect_data[] = "\0\0ib_c_rdmacm connect";

/* The private data of an event as text (after the two head bytes, up to the first zero byte,
 * printable only), with the head bytes in hex.
 */
static void private_text(char *out, size_t n, const struct rdma_conn_param *p)
{
	const u8 *d = p->private_data;
	size_t i, o, len = p->private_data_len;

	if (!d || len < HEAD) {
		snprintf(out, n, "%u byte(s)", p->private_data_len);
		return;
	}
	o = snprintf(out, n, "%02x%02x ", d[0], d[1]);
	for (i = HEAD; i < len && d[i] && o < n - 1; i++)
		out[o++] = isprint(d[i]) ? d[i] : '.';
	out[o] = 0;
}

/* On a step that failed: the events seen so far. */
static const char *seen_text(int err)
{
	static char text[48];

	if (!err)
		return "";
	snprintf(text, sizeof(text), " (events seen %#lx)", ev.seen);
	return text;
}

static int make_qp(struct rdma_cm_id *id)
{
	struct ib_qp_init_attr init = { .qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_ALL_WR,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1 } };

	if (!pd) {
		pd = ib_alloc_pd(id->device, 0);
		if (IS_ERR(pd)) {
			int err = PTR_ERR(pd);

			pd = NULL;
			return err;
		}
		cq = ib_create_cq(id->device, NULL, NULL, NULL, &(struct ib_cq_init_attr){ .cqe = 16 });
		if (IS_ERR(cq)) {
			int err = PTR_ERR(cq);

			cq = NULL;
			return err;
		}
		buf = dma_alloc_coherent(id->device->dma_device, 2 * MSG, &dma, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	return rdma_create_qp(id, pd, &init);
}

static int post_recv(struct ib_qp *qp)
{
	struct ib_sge sge = { .addr = dma + MSG, .length = MSG, .lkey = pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };

	memset(buf + MSG, 0, MSG);
	return ib_post_recv(qp, &wr, NULL);
}

/* The passive side's answer to a connection request, from the handler (rdma_accept needs the
 * handler's lock, which the handler holds).
 */
static void answer_request(struct rdma_cm_id *id, struct rdma_cm_event *e)
{
	struct rdma_conn_param accept = { .private_data = accept_data,
					  .private_data_len = sizeof(accept_data),
					  .responder_resources = 1, .initiator_depth = 1,
					  .rnr_retry_count = 7 };
	struct sa_path_rec *path = id->route.path_rec;
	struct sockaddr_ib *src = (struct sockaddr_ib *)&id->route.addr.src_addr;
	struct sockaddr_ib *dst = (struct sockaddr_ib *)&id->route.addr.dst_addr;
	char priv[64];
	int qp, posted = -1, accepted = -1;

	private_text(priv, sizeof(priv), &e->param.conn);
	qp = make_qp(id);
	if (!qp)
		posted = post_recv(id->qp);
	if (!posted)
		accepted = rdma_accept(id, &accept);
	snprintf(ev.req, sizeof(ev.req),
		 "request: %s port %u, private \"%s\", resources %u depth %u rnr %u; src %pI6 sid %#llx, dst %pI6 sid %#llx; path dlid %u slid %u pkey %#x mtu %u; qp %d, recv %d, accept %d",
		 dev_name(&id->device->dev), id->port_num, priv, e->param.conn.responder_resources,
		 e->param.conn.initiator_depth, e->param.conn.rnr_retry_count,
		 &src->sib_addr, be64_to_cpu(src->sib_sid), &dst->sib_addr,
		 be64_to_cpu(dst->sib_sid), path ? be16_to_cpu(path->ib.dlid) : 0,
		 path ? be16_to_cpu(path->ib.slid) : 0, path ? be16_to_cpu(path->pkey) : 0,
		 path ? path->mtu : 0, qp, posted, accepted);
}

static int handler(struct rdma_cm_id *id, struct rdma_cm_event *e)
{
	if (e->event > RDMA_CM_EVENT_USER)
		return 0;
	ev.status[e->event] = e->status;
	switch (e->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (ev.child) /* one connection only: a non-zero return refuses (and destroys) others */
			return -ECONNREFUSED;
		ev.child = id;
		answer_request(id, e);
		break;
	case RDMA_CM_EVENT_ESTABLISHED: {
		char priv[64];

		private_text(priv, sizeof(priv), &e->param.conn);
		snprintf(ev.established, sizeof(ev.established), "private \"%s\"", priv);
		break;
	}
	case RDMA_CM_EVENT_DISCONNECTED:
		ev.disconnected_on_child = id == ev.child;
		break;
	default:
		break;
	}
	set_bit(e->event, &ev.seen);
	wake_up(&wake);
	return 0;
}

/* Waits for event `type` (30 s); 0, or -ETIME. */
static int wait_event_type(int type)
{
	return wait_event_timeout(wake, test_bit(type, &ev.seen), WAIT) ? 0 : -ETIME;
}

/* Polls `n` completions (5 s at most). */
static int poll_n(struct ib_wc *wc, int n)
{
	int got = 0, tries;

	for (tries = 0; tries < 500 && got < n; tries++) {
		int r = ib_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			msleep(10);
	}
	return got;
}

static struct sockaddr_ib service_addr(const union ib_gid *gid)
{
	struct sockaddr_ib a = { .sib_family = AF_IB, .sib_pkey = cpu_to_be16(0xffff),
				 .sib_sid = cpu_to_be64(RDMA_IB_IP_PS_TCP | PORT),
				 .sib_sid_mask = cpu_to_be64(~0ULL) };

	if (gid)
		memcpy(&a.sib_addr, gid, sizeof(*gid));
	return a;
}

static void run_passive(void)
{
	struct sockaddr_ib any = service_addr(NULL);
	struct rdma_cm_id *id;
	struct ib_wc wc = {};
	int err, n, i, intact = 1;

	id = rdma_create_id(&init_net, handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		pr_info("ib_c_rdmacm: create id: %ld\n", PTR_ERR(id));
		return;
	}
	err = rdma_bind_addr(id, (struct sockaddr *)&any);
	pr_info("ib_c_rdmacm: passive: bind to the service (any GID): %d, sid %#llx\n", err,
		be64_to_cpu(rdma_get_service_id(id, (struct sockaddr *)&any)));
	err = err ?: rdma_listen(id, 1);
	pr_info("ib_c_rdmacm: passive: listening: %d\n", err);
	if (err)
		goto out;
	err = wait_event_type(RDMA_CM_EVENT_CONNECT_REQUEST);
	pr_info("ib_c_rdmacm: passive: connect request %d, status %d%s; %s\n", err,
		ev.status[RDMA_CM_EVENT_CONNECT_REQUEST], seen_text(err), ev.req);
	if (err)
		goto out;
	err = wait_event_type(RDMA_CM_EVENT_ESTABLISHED);
	pr_info("ib_c_rdmacm: passive: established %d, status %d\n", err,
		ev.status[RDMA_CM_EVENT_ESTABLISHED]);
	n = err ? 0 : poll_n(&wc, 1);
	for (i = 0; i < MSG; i++)
		if (buf[MSG + i] != (u8)(i * 5 + 1))
			intact = 0;
	pr_info("ib_c_rdmacm: passive: the peer's send: %d completion(s): status %d, opcode %d, %u bytes; data %s\n",
		n, wc.status, wc.opcode, wc.byte_len, n == 1 && intact ? "intact" : "wrong");
	err = wait_event_type(RDMA_CM_EVENT_DISCONNECTED);
	pr_info("ib_c_rdmacm: passive: disconnected %d, on the connection's id %d\n", err,
		ev.disconnected_on_child);
out:
	if (ev.child) {
		if (ev.child->qp)
			rdma_destroy_qp(ev.child);
		rdma_destroy_id(ev.child);
	}
	rdma_destroy_id(id);
}

static void run_active(void)
{
	struct rdma_conn_param conn = { .private_data = connect_data,
					.private_data_len = sizeof(connect_data),
					.responder_resources = 1, .initiator_depth = 1,
					.retry_count = 7, .rnr_retry_count = 7 };
	struct ib_sge sge = { .length = MSG };
	struct ib_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct sockaddr_ib dst, *src;
	struct sa_path_rec *p;
	union ib_gid gid;
	struct rdma_cm_id *id;
	struct ib_wc wc = {};
	int err, n, i;

	if (!in6_pton(peer_gid, -1, gid.raw, -1, NULL)) {
		pr_info("ib_c_rdmacm: peer_gid %s: not a GID\n", peer_gid);
		return;
	}
	dst = service_addr(&gid);
	id = rdma_create_id(&init_net, handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		pr_info("ib_c_rdmacm: create id: %ld\n", PTR_ERR(id));
		return;
	}
	err = rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000);
	err = err ?: wait_event_type(RDMA_CM_EVENT_ADDR_RESOLVED);
	src = (struct sockaddr_ib *)&id->route.addr.src_addr;
	pr_info("ib_c_rdmacm: active: address resolved %d, status %d: %s port %u, src %pI6 family %u pkey %#x\n",
		err, ev.status[RDMA_CM_EVENT_ADDR_RESOLVED],
		id->device ? dev_name(&id->device->dev) : "none", id->port_num, &src->sib_addr,
		src->sib_family, be16_to_cpu(src->sib_pkey));
	if (err)
		goto out;
	err = rdma_resolve_route(id, 2000);
	err = err ?: wait_event_type(RDMA_CM_EVENT_ROUTE_RESOLVED);
	p = id->route.path_rec;
	if (err || !p) {
		pr_info("ib_c_rdmacm: active: route resolved %d, status %d, no path\n", err,
			ev.status[RDMA_CM_EVENT_ROUTE_RESOLVED]);
		goto out;
	}
	pr_info("ib_c_rdmacm: active: route resolved %d, %d path(s): dgid %pI6 sgid %pI6 dlid %u slid %u sid %#llx pkey %#x sl %u mtu %u/%u rate %u/%u life %u/%u reversible %u hop %u tclass %u numb %u pref %u type %d\n",
		err, id->route.num_pri_alt_paths, p->dgid.raw, p->sgid.raw, be16_to_cpu(p->ib.dlid),
		be16_to_cpu(p->ib.slid), be64_to_cpu(p->service_id), be16_to_cpu(p->pkey), p->sl,
		p->mtu_selector, p->mtu, p->rate_selector, p->rate, p->packet_life_time_selector,
		p->packet_life_time, p->reversible, p->hop_limit, p->traffic_class, p->numb_path,
		p->preference, p->rec_type);
	err = make_qp(id);
	pr_info("ib_c_rdmacm: active: qp %d\n", err);
	if (err)
		goto out;
	err = rdma_connect(id, &conn);
	err = err ?: wait_event_type(RDMA_CM_EVENT_ESTABLISHED);
	pr_info("ib_c_rdmacm: active: established %d, status %d%s, accept's %s\n", err,
		ev.status[RDMA_CM_EVENT_ESTABLISHED], seen_text(err), ev.established);
	if (err)
		goto out;
	for (i = 0; i < MSG; i++)
		buf[i] = (u8)(i * 5 + 1);
	sge.addr = dma;
	sge.lkey = pd->local_dma_lkey;
	err = ib_post_send(id->qp, &wr, NULL);
	n = err ? 0 : poll_n(&wc, 1);
	pr_info("ib_c_rdmacm: active: send: post %d; %d completion(s): status %d, opcode %d\n", err,
		n, wc.status, wc.opcode);
	/* The peer checks the data before the disconnect reaches it. */
	msleep(500);
	err = rdma_disconnect(id);
	err = err ?: wait_event_type(RDMA_CM_EVENT_DISCONNECTED);
	pr_info("ib_c_rdmacm: active: disconnected %d\n", err);
out:
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static int __init ib_c_rdmacm_init(void)
{
	if (!strcmp(role, "active"))
		run_active();
	else
		run_passive();
	if (buf)
		dma_free_coherent(pd->device->dma_device, 2 * MSG, buf, dma);
	if (cq)
		ib_destroy_cq(cq);
	if (pd)
		ib_dealloc_pd(pd);
	pr_info("ib_c_rdmacm: %s: done\n", role);
	return 0;
}

static void __exit ib_c_rdmacm_exit(void)
{
}

module_init(ib_c_rdmacm_init);
module_exit(ib_c_rdmacm_exit);
MODULE_DESCRIPTION("A C user of rdma_cm with AF_IB addresses, loaded unchanged on either stack (test tool)");
MODULE_LICENSE("GPL");
