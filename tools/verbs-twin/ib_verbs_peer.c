// SPDX-License-Identifier: GPL-2.0
/*
 * The C twin of samples/ib_verbs_peer.rs: kernel verbs traffic with a peer host, written against
 * the upstream C ib_core, with the same debugfs interface, the same sequence of verbs and the
 * same lines. A test tool, not part of the product; see tools/verbs-twin/README.md.
 *
 * On every device it makes a PD, one CQ, a DMA MR, an RC QP (at RESET) and a UD QP (at RTS),
 * and the debugfs file ib_verbs_peer/<device>/ctl:
 *   - read: "lid L rc_qpn Q ud_qpn U rkey K addr A", what the peer needs;
 *   - "connect L Q U K A": connects the RC QP to the peer's, makes an AH to the peer's LID and
 *     posts 1000 receives on each QP;
 *   - "traffic": 1000 RC SENDs of 512 bytes and 1000 UD SENDs of 256 bytes each way, then an
 *     RDMA write of 4096 bytes into the peer's buffer and a read back;
 *   - "verify": the peer's RDMA write is in this side's buffer.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include "twin_common.h"

#define MANY 1000
#define RC_LEN 512
#define UD_LEN 256
#define GRH 40
#define SLOT 512
#define TX_SLOTS 64
#define WINDOW 32
#define RDMA_LEN 4096
#define QKEY 0x11111111
#define CQE 2048
#define RQ_WR (MANY + 24)

/* What a work request was, in the top half of its wr_id (the bottom half is its index). */
enum kind { RC_RECV, UD_RECV, RC_SEND, UD_SEND, RDMA, KINDS };

struct remote {
	u16 lid;
	u32 rc_qpn, ud_qpn, rkey;
	u64 addr;
};

/* Completions counted by kind: all of them, the good ones, the failed ones; the last RDMA one. */
struct counts {
	int done[KINDS], good[KINDS], failed[KINDS];
	struct ib_wc rdma;
};

/* A coherent buffer. */
struct buf {
	u8 *cpu;
	dma_addr_t dma;
	size_t size;
};

/* One device's objects and the state of the exchange. */
struct peer {
	struct ib_device *dev;
	u16 lid;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	atomic_t events;
	wait_queue_head_t wake;
	struct ib_qp *rc, *ud;
	struct buf tx, rx, ud_rx, target, own;
	struct mutex lock;
	bool connected;
	struct remote remote;
	struct ib_ah *ah;
	struct dentry *dir;
	struct flow_ctl *flow;
};

static struct ib_client client;
static struct dentry *top;

static void comp_handler(struct ib_cq *cq, void *ctx)
{
	struct peer *p = ctx;

	atomic_inc(&p->events);
	wake_up_all(&p->wake);
}

static int buf_alloc_dev(struct ib_device *dev, struct buf *b, size_t size)
{
	b->cpu = dma_alloc_coherent(dev->dma_device, size, &b->dma, GFP_KERNEL);
	if (!b->cpu)
		return -ENOMEM;
	b->size = size;
	return 0;
}

static void buf_free_dev(struct ib_device *dev, struct buf *b)
{
	if (b->cpu)
		dma_free_coherent(dev->dma_device, b->size, b->cpu, b->dma);
}

static int buf_alloc(struct peer *p, struct buf *b, size_t size)
{
	return buf_alloc_dev(p->dev, b, size);
}

static void buf_free(struct peer *p, struct buf *b)
{
	buf_free_dev(p->dev, b);
}

static void peer_free(struct peer *p)
{
	debugfs_remove_recursive(p->dir);
	kfree(p->flow);
	if (p->ah)
		rdma_destroy_ah(p->ah, 0);
	if (p->ud)
		ib_destroy_qp(p->ud);
	if (p->rc)
		ib_destroy_qp(p->rc);
	buf_free(p, &p->own);
	buf_free(p, &p->target);
	buf_free(p, &p->ud_rx);
	buf_free(p, &p->rx);
	buf_free(p, &p->tx);
	if (p->mr)
		ib_dereg_mr(p->mr);
	if (p->cq)
		ib_destroy_cq(p->cq);
	if (p->pd)
		ib_dealloc_pd(p->pd);
	kfree(p);
}

static struct ib_qp *create_qp(struct peer *p, enum ib_qp_type type)
{
	struct ib_qp_init_attr ia = {
		.qp_type = type,
		.send_cq = p->cq,
		.recv_cq = p->cq,
		.cap = { .max_send_wr = 64, .max_recv_wr = RQ_WR, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
	};

	return ib_create_qp(p->pd, &ia);
}

/* The objects, in the Rust sample's order; the UD QP at RTS. */
static int peer_setup(struct peer *p)
{
	struct ib_cq_init_attr ca = { .cqe = CQE };
	struct ib_port_attr pa;
	struct ib_qp_attr a = {};
	int err;

	err = ib_query_port(p->dev, 1, &pa);
	if (err)
		return err;
	p->lid = pa.lid;
	p->pd = ib_alloc_pd(p->dev, 0);
	if (IS_ERR(p->pd)) {
		err = PTR_ERR(p->pd);
		p->pd = NULL;
		return err;
	}
	p->cq = ib_create_cq(p->dev, comp_handler, NULL, p, &ca);
	if (IS_ERR(p->cq)) {
		err = PTR_ERR(p->cq);
		p->cq = NULL;
		return err;
	}
	p->mr = get_dma_mr(p->pd, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_READ);
	if (IS_ERR(p->mr)) {
		err = PTR_ERR(p->mr);
		p->mr = NULL;
		return err;
	}
	err = buf_alloc(p, &p->tx, MANY * SLOT) ?: buf_alloc(p, &p->rx, MANY * SLOT);
	if (err)
		return err;
	p->rc = create_qp(p, IB_QPT_RC);
	if (IS_ERR(p->rc)) {
		err = PTR_ERR(p->rc);
		p->rc = NULL;
		return err;
	}
	p->ud = create_qp(p, IB_QPT_UD);
	if (IS_ERR(p->ud)) {
		err = PTR_ERR(p->ud);
		p->ud = NULL;
		return err;
	}
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	err = ib_modify_qp(p->ud, &a, IB_QP_STATE | IB_QP_PORT | IB_QP_PKEY_INDEX | IB_QP_QKEY);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	err = ib_modify_qp(p->ud, &a, IB_QP_STATE);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0x1234;
	err = ib_modify_qp(p->ud, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	if (err)
		return err;
	return buf_alloc(p, &p->ud_rx, MANY * SLOT) ?: buf_alloc(p, &p->target, RDMA_LEN) ?:
	       buf_alloc(p, &p->own, RDMA_LEN);
}

/* RESET to RTS, connected to QP `dqpn` behind `dlid`, as the Rust sample's env::connect_rc. */
static int connect_qp(struct ib_qp *qp, u16 dlid, u32 dqpn, int access)
{
	return twin_connect_rc(qp, dlid, dqpn, access, 7, NULL);
}

static int connect_rc(struct peer *p)
{
	return connect_qp(p->rc, p->remote.lid, p->remote.rc_qpn,
			  IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ);
}

static int post_recv(struct ib_qp *qp, u64 wr_id, u64 addr, u32 len, u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

static u64 wr_id(enum kind k, int i)
{
	return ((u64)k << 32) | (u32)i;
}

static int do_connect(struct peer *p, const struct remote *r)
{
	const char *name = dev_name(&p->dev->dev);
	struct rdma_ah_attr aa = {};
	int i, err;

	if (p->connected)
		return -EISCONN;
	p->remote = *r;
	aa.type = rdma_ah_find_type(p->dev, 1);
	rdma_ah_set_port_num(&aa, 1);
	rdma_ah_set_dlid(&aa, r->lid);
	p->ah = rdma_create_ah(p->pd, &aa, 0);
	if (IS_ERR(p->ah)) {
		err = PTR_ERR(p->ah);
		p->ah = NULL;
		return err;
	}
	err = connect_rc(p);
	if (err)
		goto fail;
	for (i = 0; i < MANY; i++) {
		err = post_recv(p->rc, wr_id(RC_RECV, i), p->rx.dma + i * SLOT, RC_LEN,
				p->mr->lkey);
		if (err)
			goto fail;
		err = post_recv(p->ud, wr_id(UD_RECV, i), p->ud_rx.dma + i * SLOT, GRH + UD_LEN,
				p->mr->lkey);
		if (err)
			goto fail;
	}
	pr_info("%s: connected: rc qp 0x%x to lid %u qp 0x%x, ud qp 0x%x to qp 0x%x through an AH; %d receives posted on each\n",
		name, p->rc->qp_num, r->lid, r->rc_qpn, p->ud->qp_num, r->ud_qpn, MANY);
	p->connected = true;
	return 0;
fail:
	/* As the Rust sample: the AH is dropped, the QPs stay as they are. */
	rdma_destroy_ah(p->ah, 0);
	p->ah = NULL;
	return err;
}

/* Whether completion `wc` of `k`, index `i` is what the peer (or this side) should have made. */
static bool check(struct peer *p, enum kind k, u32 i, const struct ib_wc *wc)
{
	const struct remote *r = &p->remote;

	switch (k) {
	case RC_RECV:
		return i < MANY && wc->byte_len == RC_LEN && wc->src_qp == r->rc_qpn &&
		       holds(p->rx.cpu + i * SLOT, RC_LEN, (u8)i);
	case UD_RECV:
		return i < MANY && wc->byte_len == GRH + UD_LEN && wc->src_qp == r->ud_qpn &&
		       wc->slid == r->lid && holds(p->ud_rx.cpu + i * SLOT + GRH, UD_LEN, (u8)i);
	default:
		return true;
	}
}

/* Until the condition: what pump() waits for. */
struct until {
	enum kind k1, k2;
	int n1, n2;
};

static bool reached(const struct counts *c, const struct until *u)
{
	return c->done[u->k1] >= u->n1 && c->done[u->k2] >= u->n2;
}

/*
 * Polls (waiting for completion events in between) until `u` holds; -ETIMEDOUT after 30 s
 * without a completion.
 */
static int pump(struct peer *p, struct counts *c, const struct until *u)
{
	struct ib_wc wc[16];
	int idle = 0, n, i, seen;

	while (!reached(c, u)) {
		n = ib_poll_cq(p->cq, ARRAY_SIZE(wc), wc);
		if (n < 0)
			return n;
		if (!n) {
			seen = atomic_read(&p->events);
			n = ib_req_notify_cq(p->cq, IB_CQ_NEXT_COMP);
			if (n < 0)
				return n;
			n = ib_poll_cq(p->cq, ARRAY_SIZE(wc), wc);
			if (n < 0)
				return n;
			if (!n) {
				if (!wait_event_timeout(p->wake, atomic_read(&p->events) != seen,
							msecs_to_jiffies(5000)) && ++idle == 6)
					return -ETIMEDOUT;
				continue;
			}
		}
		idle = 0;
		for (i = 0; i < n; i++) {
			u64 k = wc[i].wr_id >> 32;
			u32 idx = (u32)wc[i].wr_id;

			if (k >= KINDS)
				continue;
			c->done[k]++;
			if (wc[i].status != IB_WC_SUCCESS)
				c->failed[k]++;
			else if (check(p, k, idx, &wc[i]))
				c->good[k]++;
			if (k == RDMA)
				c->rdma = wc[i];
		}
	}
	return 0;
}

/* MANY messages on the RC (or UD) QP, at most WINDOW outstanding; then waits for the peer's. */
static int stream(struct peer *p, struct counts *c, bool ud, enum kind send, enum kind recv)
{
	size_t len = ud ? UD_LEN : RC_LEN;
	int i, err;

	for (i = 0; i < MANY; i++) {
		struct until w = { send, send, i - WINDOW + 1, i - WINDOW + 1 };
		struct ib_sge sge;
		struct ib_ud_wr wr = {};
		size_t o = (i % TX_SLOTS) * SLOT;

		err = pump(p, c, &w);
		if (err)
			return err;
		fill(p->tx.cpu + o, len, (u8)i);
		sge.addr = p->tx.dma + o;
		sge.length = len;
		sge.lkey = p->mr->lkey;
		wr.wr.wr_id = wr_id(send, i);
		wr.wr.opcode = IB_WR_SEND;
		wr.wr.sg_list = &sge;
		wr.wr.num_sge = 1;
		wr.wr.send_flags = IB_SEND_SIGNALED;
		if (ud) {
			wr.ah = p->ah;
			wr.remote_qpn = p->remote.ud_qpn;
			wr.remote_qkey = QKEY;
		}
		err = ib_post_send(ud ? p->ud : p->rc, &wr.wr, NULL);
		if (err)
			return err;
	}
	{
		struct until all = { send, recv, MANY, MANY };

		return pump(p, c, &all);
	}
}

/* One signalled RDMA operation of RDMA_LEN bytes between `own` and the peer's buffer. */
static int rdma(struct peer *p, struct counts *c, enum ib_wr_opcode op, struct ib_wc *out)
{
	int before = c->done[RDMA], err;
	struct until u = { RDMA, RDMA, before + 1, before + 1 };
	struct ib_sge sge = { .addr = p->own.dma, .length = RDMA_LEN, .lkey = p->mr->lkey };
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = wr_id(RDMA, before), .opcode = op, .sg_list = &sge, .num_sge = 1,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = p->remote.addr,
		.rkey = p->remote.rkey,
	};

	err = ib_post_send(p->rc, &wr.wr, NULL);
	if (err)
		return err;
	err = pump(p, c, &u);
	if (err)
		return err;
	*out = c->rdma;
	return 0;
}

static int do_traffic(struct peer *p)
{
	const char *name = dev_name(&p->dev->dev);
	struct ib_wc write, read;
	struct counts *c;
	int err;

	if (!p->connected)
		return -ENOTCONN;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	err = stream(p, c, false, RC_SEND, RC_RECV);
	pr_info("%s: rc: %d messages of %d bytes each way: %d sends completed, %d received intact from the peer's qp, %d failed completion(s)\n",
		name, MANY, RC_LEN, c->good[RC_SEND], c->good[RC_RECV],
		c->failed[RC_SEND] + c->failed[RC_RECV]);
	if (err)
		goto out;
	err = stream(p, c, true, UD_SEND, UD_RECV);
	pr_info("%s: ud: %d messages of %d bytes each way through an AH: %d sends completed, %d received intact from the peer's qp and lid (byte_len %d), %d failed completion(s)\n",
		name, MANY, UD_LEN, c->good[UD_SEND], c->good[UD_RECV], GRH + UD_LEN,
		c->failed[UD_SEND] + c->failed[UD_RECV]);
	if (err)
		goto out;
	fill(p->own.cpu, RDMA_LEN, (u8)p->lid);
	err = rdma(p, c, IB_WR_RDMA_WRITE, &write);
	if (err)
		goto out;
	fill(p->own.cpu, RDMA_LEN, 0);
	err = rdma(p, c, IB_WR_RDMA_READ, &read);
	if (err)
		goto out;
	pr_info("%s: rdma: write of %d bytes into the peer's buffer %s %s; read back %s %s %u bytes, data %s\n",
		name, RDMA_LEN, opcode_name(write.opcode), status_name(write.status),
		opcode_name(read.opcode), status_name(read.status), read.byte_len,
		intact(holds(p->own.cpu, RDMA_LEN, (u8)p->lid)));
out:
	kfree(c);
	return err;
}

static int command(struct peer *p, char *line)
{
	struct remote r;
	char extra;

	line = strim(line);
	if (sscanf(line, "connect %hu %x %x %x %llx %c", &r.lid, &r.rc_qpn, &r.ud_qpn, &r.rkey,
		   &r.addr, &extra) == 5)
		return do_connect(p, &r);
	if (!strcmp(line, "traffic"))
		return do_traffic(p);
	if (!strcmp(line, "verify")) {
		if (!p->connected)
			return -ENOTCONN;
		pr_info("%s: verify: the peer's rdma write in our buffer: %d bytes %s\n",
			dev_name(&p->dev->dev), RDMA_LEN,
			intact(holds(p->target.cpu, RDMA_LEN, (u8)p->remote.lid)));
		return 0;
	}
	return -EINVAL;
}

/*
 * The flow (samples/ib_verbs_peer/flow.rs): an RC QP looped back to itself with FLOW_SLOTS sends
 * and FLOW_SLOTS receives of FLOW_LEN bytes always posted, re-posted from the CQ's completion
 * handler; for faults while messages flow. debugfs ib_verbs_peer/<device>/flow: write "start" or
 * "stop"; read "flow: <state>; messages N".
 */
#define FLOW_SLOTS 16
#define FLOW_LEN 64
#define FLOW_RECV (1ULL << 32)
/* Completions the handler takes at most; past that a work item continues (see flow.rs). */
#define FLOW_IRQ_BUDGET 64
#define FLOW_WORK_BUDGET 256

enum flow_pass { FLOW_ARMED, FLOW_MORE, FLOW_IDLE };

struct flow_counts {
	u64 messages;
	int flushed[2], refused[2], left[2], outstanding[2];
	int other, err;
};

/* What the handler works with, under `lock` (irqsave). */
struct flow {
	spinlock_t lock;
	bool live;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_pd *pd;
	struct ib_mr *mr;
	struct buf buf;
	struct flow_counts c;
	bool failed, stopping, reported;
	struct ib_event_handler fatal;
	struct work_struct work;
	const char *name;
};

/* The flow file's data. */
struct flow_ctl {
	struct ib_device *dev;
	struct mutex lock;
	struct flow *running;
};

static int flow_post(struct flow *f, int q, int slot)
{
	struct ib_sge sge = { .length = FLOW_LEN, .lkey = f->mr->lkey };

	if (q) {
		struct ib_recv_wr wr = { .wr_id = FLOW_RECV + slot, .sg_list = &sge, .num_sge = 1 };

		sge.addr = f->buf.dma + (FLOW_SLOTS + slot) * FLOW_LEN;
		return ib_post_recv(f->qp, &wr, NULL);
	} else {
		struct ib_send_wr wr = { .wr_id = slot, .opcode = IB_WR_SEND, .sg_list = &sge,
					 .num_sge = 1, .send_flags = IB_SEND_SIGNALED };

		sge.addr = f->buf.dma + slot * FLOW_LEN;
		return ib_post_send(f->qp, &wr, NULL);
	}
}

static void flow_complete(struct flow *f, const struct ib_wc *w)
{
	int q = w->wr_id >= FLOW_RECV;
	u64 slot = w->wr_id & 0xffffffff;
	int err;

	if (slot >= FLOW_SLOTS || !f->c.outstanding[q]) {
		f->c.other++;
		return;
	}
	f->c.outstanding[q]--;
	if (w->status == IB_WC_WR_FLUSH_ERR) {
		f->c.flushed[q]++;
		f->failed = true;
		return;
	}
	if (w->status != IB_WC_SUCCESS || (q && w->byte_len != FLOW_LEN)) {
		f->c.other++;
		f->failed = true;
		return;
	}
	if (q)
		f->c.messages++;
	if (f->failed || f->stopping) {
		f->c.left[q]++;
		return;
	}
	err = flow_post(f, q, slot);
	if (!err) {
		f->c.outstanding[q]++;
		return;
	}
	f->c.refused[q]++;
	if (!f->failed)
		f->c.err = err;
	f->failed = true;
}

static void flow_report_end(struct flow *f)
{
	struct flow_counts *c = &f->c;
	bool once = true;
	int q, err;

	if (f->reported || !(f->failed || f->stopping) || c->outstanding[0] || c->outstanding[1])
		return;
	f->reported = true;
	for (q = 0; q < 2; q++)
		once &= c->flushed[q] + c->refused[q] + c->left[q] == FLOW_SLOTS;
	pr_info("%s: flow: %s after %llu messages: %s, %d other error(s)\n", f->name,
		f->stopping ? "stopped" : "ended", c->messages,
		once ? "each of the 16 send and 16 receive slots ended exactly once (flushed, refused or left)" :
		       "MISMATCH: a slot did not end exactly once",
		c->other);
	pr_info("%s: flow: slots: sends %d flushed %d refused %d left; receives %d flushed %d refused %d left; first refusal err %d\n",
		f->name, c->flushed[0], c->refused[0], c->left[0], c->flushed[1], c->refused[1],
		c->left[1], c->err);
	if (!f->stopping) {
		err = flow_post(f, 0, 0);
		if (!err)
			c->outstanding[0]++;
		pr_info("%s: flow: a new send after the failure: err %d\n", f->name, err);
	}
}

/* One pass of at most `budget` completions: counts, re-posts, re-arms once the CQ is empty. */
static enum flow_pass flow_pass(struct flow *f, int budget)
{
	enum flow_pass r = FLOW_IDLE;
	struct ib_wc wc[16];
	unsigned long flags;
	int taken = 0, n, i;

	spin_lock_irqsave(&f->lock, flags);
	if (!f->live)
		goto out;
	for (;;) {
		if (taken >= budget) {
			r = FLOW_MORE;
			break;
		}
		n = ib_poll_cq(f->cq, ARRAY_SIZE(wc), wc);
		if (n == 0) {
			if (ib_req_notify_cq(f->cq, IB_CQ_NEXT_COMP) < 0)
				break;
			n = ib_poll_cq(f->cq, ARRAY_SIZE(wc), wc);
			if (n == 0) {
				r = FLOW_ARMED;
				break;
			}
		}
		if (n < 0)
			break;
		taken += n;
		for (i = 0; i < n; i++)
			flow_complete(f, &wc[i]);
	}
	flow_report_end(f);
out:
	spin_unlock_irqrestore(&f->lock, flags);
	return r;
}

/* Passes in process context, with a short sleep in between, until the CQ is armed again. */
static void flow_poll_until_armed(struct flow *f)
{
	while (flow_pass(f, FLOW_WORK_BUDGET) == FLOW_MORE)
		usleep_range(100, 200);
}

static void flow_work(struct work_struct *w)
{
	flow_poll_until_armed(container_of(w, struct flow, work));
}

/* The completion handler: a pass; past its budget the work item continues. */
static void flow_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct flow *f = ctx;

	if (flow_pass(f, FLOW_IRQ_BUDGET) == FLOW_MORE)
		queue_work(system_unbound_wq, &f->work);
}

static void flow_fatal_event(struct ib_event_handler *h, struct ib_event *ev)
{
	struct flow *f = container_of(h, struct flow, fatal);

	if (ev->event == IB_EVENT_DEVICE_FATAL)
		pr_info("%s: flow: event DEVICE_FATAL on port %u\n", f->name, ev->element.port_num);
}

static void flow_free(struct flow_ctl *fc, struct flow *f)
{
	/* The QP first, then the buffer it used, as the Rust sample's drop order. */
	if (f->qp)
		ib_destroy_qp(f->qp);
	if (f->mr)
		ib_dereg_mr(f->mr);
	buf_free_dev(fc->dev, &f->buf);
	if (f->fatal.device)
		ib_unregister_event_handler(&f->fatal);
	if (f->cq)
		ib_destroy_cq(f->cq);
	if (f->pd)
		ib_dealloc_pd(f->pd);
	kfree(f);
}

/* Stops the flow, if any: the QP to the error state, all back (5 s at most), then freed. */
static void flow_stop(struct flow_ctl *fc)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	struct flow *f = fc->running;
	unsigned long flags;
	bool done;
	int i;

	if (!f)
		return;
	fc->running = NULL;
	spin_lock_irqsave(&f->lock, flags);
	f->stopping = true;
	spin_unlock_irqrestore(&f->lock, flags);
	/* On a dead device this may fail: the driver then flushes in software. */
	ib_modify_qp(f->qp, &a, IB_QP_STATE);
	for (i = 0; i < 50; i++) {
		flow_poll_until_armed(f);
		spin_lock_irqsave(&f->lock, flags);
		done = f->reported;
		spin_unlock_irqrestore(&f->lock, flags);
		if (done)
			break;
		msleep(100);
	}
	spin_lock_irqsave(&f->lock, flags);
	f->live = false;
	spin_unlock_irqrestore(&f->lock, flags);
	cancel_work_sync(&f->work);
	if (!f->reported)
		pr_info("%s: flow: stopped with %d send(s) and %d receive(s) still outstanding after 5 s\n",
			f->name, f->c.outstanding[0], f->c.outstanding[1]);
	flow_free(fc, f);
}

static int flow_start(struct flow_ctl *fc)
{
	struct ib_device *dev = fc->dev;
	struct ib_cq_init_attr ca = { .cqe = 2 * FLOW_SLOTS + 8 };
	struct ib_qp_init_attr ia = {
		.qp_type = IB_QPT_RC,
		.cap = { .max_send_wr = FLOW_SLOTS + 1, .max_recv_wr = FLOW_SLOTS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
	};
	struct ib_port_attr pa;
	unsigned long flags;
	struct flow *f;
	int err, q, slot, out[2];

	if (fc->running)
		return -EBUSY;
	err = ib_query_port(dev, 1, &pa);
	if (err)
		return err;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	spin_lock_init(&f->lock);
	INIT_WORK(&f->work, flow_work);
	f->name = dev_name(&dev->dev);
	f->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(f->pd)) {
		err = PTR_ERR(f->pd);
		f->pd = NULL;
		goto fail;
	}
	f->cq = ib_create_cq(dev, flow_comp_handler, NULL, f, &ca);
	if (IS_ERR(f->cq)) {
		err = PTR_ERR(f->cq);
		f->cq = NULL;
		goto fail;
	}
	ia.send_cq = f->cq;
	ia.recv_cq = f->cq;
	f->qp = ib_create_qp(f->pd, &ia);
	if (IS_ERR(f->qp)) {
		err = PTR_ERR(f->qp);
		f->qp = NULL;
		goto fail;
	}
	f->mr = get_dma_mr(f->pd, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(f->mr)) {
		err = PTR_ERR(f->mr);
		f->mr = NULL;
		goto fail;
	}
	err = buf_alloc_dev(dev, &f->buf, 2 * FLOW_SLOTS * FLOW_LEN);
	if (err)
		goto fail;
	err = connect_qp(f->qp, pa.lid, f->qp->qp_num, IB_ACCESS_LOCAL_WRITE);
	if (err)
		goto fail;
	INIT_IB_EVENT_HANDLER(&f->fatal, dev, flow_fatal_event);
	ib_register_event_handler(&f->fatal);
	/* Receives first, then the sends; the handler sees the flow only once all are posted. */
	for (q = 1; q >= 0 && !err; q--)
		for (slot = 0; slot < FLOW_SLOTS; slot++) {
			err = flow_post(f, q, slot);
			if (err)
				break;
			f->c.outstanding[q]++;
		}
	out[0] = f->c.outstanding[0];
	out[1] = f->c.outstanding[1];
	spin_lock_irqsave(&f->lock, flags);
	f->live = true;
	spin_unlock_irqrestore(&f->lock, flags);
	fc->running = f;
	/* A completion may have come before the handler could see the flow. */
	flow_poll_until_armed(f);
	if (err) {
		flow_stop(fc);
		return err;
	}
	pr_info("%s: flow: started on rc qp 0x%x looped back: %d sends and %d receives of %d bytes kept posted, re-posted from the completion handler\n",
		f->name, f->qp->qp_num, out[0], out[1], FLOW_LEN);
	return 0;
fail:
	flow_free(fc, f);
	return err;
}

static ssize_t flow_read(struct file *file, char __user *ubuf, size_t count, loff_t *pos)
{
	struct flow_ctl *fc = file->private_data;
	const char *state = "idle";
	unsigned long flags;
	u64 messages = 0;
	char line[64];
	struct flow *f;
	int n;

	mutex_lock(&fc->lock);
	f = fc->running;
	if (f) {
		spin_lock_irqsave(&f->lock, flags);
		if (f->live) {
			state = f->reported ? "ended" :
				(f->failed || f->stopping) ? "ending" : "running";
			messages = f->c.messages;
		}
		spin_unlock_irqrestore(&f->lock, flags);
	}
	mutex_unlock(&fc->lock);
	if (!strcmp(state, "idle"))
		n = scnprintf(line, sizeof(line), "flow: idle\n");
	else
		n = scnprintf(line, sizeof(line), "flow: %s; messages %llu\n", state, messages);
	return simple_read_from_buffer(ubuf, count, pos, line, n);
}

static ssize_t flow_write(struct file *file, const char __user *ubuf, size_t count, loff_t *pos)
{
	struct flow_ctl *fc = file->private_data;
	char line[16];
	int err = 0;

	if (count >= sizeof(line))
		err = -EINVAL;
	else if (copy_from_user(line, ubuf, count))
		return -EFAULT;
	if (!err) {
		line[count] = 0;
		mutex_lock(&fc->lock);
		if (!strcmp(strim(line), "start"))
			err = flow_start(fc);
		else if (!strcmp(strim(line), "stop"))
			flow_stop(fc);
		else
			err = -EINVAL;
		mutex_unlock(&fc->lock);
	}
	if (err) {
		pr_info("%s: flow: command failed: err %d\n", dev_name(&fc->dev->dev), err);
		return err;
	}
	return count;
}

static const struct file_operations flow_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = flow_read,
	.write = flow_write,
};

static ssize_t ctl_read(struct file *f, char __user *ubuf, size_t count, loff_t *pos)
{
	struct peer *p = f->private_data;
	char line[128];
	int n;

	n = scnprintf(line, sizeof(line), "lid %u rc_qpn 0x%x ud_qpn 0x%x rkey 0x%x addr 0x%llx\n",
		      p->lid, p->rc->qp_num, p->ud->qp_num, p->mr->rkey, (u64)p->target.dma);
	return simple_read_from_buffer(ubuf, count, pos, line, n);
}

static ssize_t ctl_write(struct file *f, const char __user *ubuf, size_t count, loff_t *pos)
{
	struct peer *p = f->private_data;
	char line[128];
	int err;

	if (count >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, ubuf, count))
		return -EFAULT;
	line[count] = 0;
	mutex_lock(&p->lock);
	err = command(p, line);
	mutex_unlock(&p->lock);
	if (err) {
		pr_info("%s: command \"%s\" failed: err %d\n", dev_name(&p->dev->dev), strim(line),
			err);
		return err;
	}
	return count;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = ctl_read,
	.write = ctl_write,
};

static int client_add(struct ib_device *dev)
{
	const char *name = dev_name(&dev->dev);
	struct peer *p;
	int err;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->dev = dev;
	atomic_set(&p->events, 0);
	init_waitqueue_head(&p->wake);
	mutex_init(&p->lock);
	err = peer_setup(p);
	if (err) {
		pr_err("%s: setup failed: err %d\n", name, err);
		peer_free(p);
		return err;
	}
	p->flow = kzalloc(sizeof(*p->flow), GFP_KERNEL);
	if (!p->flow) {
		peer_free(p);
		return -ENOMEM;
	}
	p->flow->dev = dev;
	mutex_init(&p->flow->lock);
	p->dir = debugfs_create_dir(name, top);
	debugfs_create_file("ctl", 0600, p->dir, p, &ctl_fops);
	debugfs_create_file("flow", 0600, p->dir, p->flow, &flow_fops);
	pr_info("%s: ready: debugfs ib_verbs_peer/%s/ctl\n", name, name);
	ib_set_client_data(dev, &client, p);
	return 0;
}

static void client_remove(struct ib_device *dev, void *data)
{
	struct peer *p = data;

	/* No file operation runs after this; then the flow stops, then the rest goes. */
	debugfs_remove_recursive(p->dir);
	p->dir = NULL;
	mutex_lock(&p->flow->lock);
	flow_stop(p->flow);
	mutex_unlock(&p->flow->lock);
	peer_free(p);
	pr_info("%s: released\n", dev_name(&dev->dev));
}

static struct ib_client client = {
	.name = "ib_verbs_peer",
	.add = client_add,
	.remove = client_remove,
};

static int __init peer_init(void)
{
	int err;

	top = debugfs_create_dir("ib_verbs_peer", NULL);
	err = ib_register_client(&client);
	if (err)
		debugfs_remove_recursive(top);
	return err;
}

static void __exit peer_exit(void)
{
	ib_unregister_client(&client);
	debugfs_remove_recursive(top);
}

module_init(peer_init);
module_exit(peer_exit);

MODULE_DESCRIPTION("C twin of the kernel verbs peer-traffic sample (test tool)");
MODULE_LICENSE("GPL");
