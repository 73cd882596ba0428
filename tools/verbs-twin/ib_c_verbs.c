// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_verbs: a C kernel verbs consumer built once against include/rdma/ib_verbs.h and loaded
 * unchanged on either stack (scenario c-abi-verbs): on C's ib_core it is the oracle, on the Rust
 * core it exercises the C ABI's kernel verbs (docs/c-abi.md, step 3): ib_alloc_pd,
 * ib_create_cq, ib_create_qp, ib_modify_qp, ib_query_qp, rdma_create_ah, the destroys, and the
 * data path C's inline functions reach through the device's ops table (ib_post_send,
 * ib_post_recv, ib_poll_cq, ib_req_notify_cq). Test tool.
 *
 * On each device with kernel verbs (client add) it makes a PD with the unsafe global rkey, a CQ
 * of 16 with a completion handler and an RC QP connected to itself, then prints one line per
 * step: what the objects say (driver sizes, use counts), a refused transition, the QP's
 * attributes as ib_query_qp returns them, a SEND with immediate data (completion event, both
 * completions, the bytes), an RDMA WRITE and READ through the PD's global rkey, chains of 16
 * receives and 16 sends posted in one call each, an inline SEND, a chain whose second request
 * has too many scatter entries (the error and bad_wr), a receive flushed by the move to the
 * error state, ib_destroy_cq refused while the QP uses the CQ, and a UD datagram to itself
 * through an AH. (The destroys are called as ib_destroy_cq_user and rdma_destroy_ah_user, whose
 * results the inline ib_destroy_cq and rdma_destroy_ah only warn about.) The PD, CQ and RC QP stay until the device or the module goes away (so that
 * `rdma res` lists them under this module's name); remove prints what each destroy returned.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include "twin_common.h"

#define MSG 4096
#define CHAIN 16
#define UD_MSG 256
#define GRH 40
#define IMM 0x1234
#define QKEY 0x11111111

struct events {
	atomic_t count;
	wait_queue_head_t wake;
};

/* What is kept per device until it goes. */
struct kept {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct events ev;
	u8 *buf;
	dma_addr_t dma;
};

static struct ib_client client;

static void comp_handler(struct ib_cq *cq, void *ctx)
{
	struct events *ev = ctx;

	atomic_inc(&ev->count);
	wake_up_all(&ev->wake);
}

static void cq_event(struct ib_event *e, void *ctx)
{
	pr_info("ib_c_verbs: cq event %d\n", e->event);
}

static void qp_event(struct ib_event *e, void *ctx)
{
	pr_info("ib_c_verbs: qp event %d (qp is ours %d)\n", e->event, e->element.qp->qp_context == ctx);
}

/* Polls `cq` until `n` completions are in `wc` or 10 s passed; how many. */
static int poll_n(struct ib_cq *cq, struct ib_wc *wc, int n)
{
	int got = 0, i;

	for (i = 0; i < 10000 && got < n; i++) {
		int r = ib_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep_range(1000, 2000);
	}
	return got;
}

static u16 port_lid(struct ib_device *dev)
{
	struct ib_port_attr pa = {};

	return ib_query_port(dev, 1, &pa) ? 0 : pa.lid;
}

static struct ib_sge sge(u64 addr, u32 len, u32 lkey)
{
	return (struct ib_sge){ .addr = addr, .length = len, .lkey = lkey };
}

/* Phase: SEND with immediate data, the completion event, both completions. */
static void send_imm(struct kept *k)
{
	struct ib_sge rs = sge(k->dma + MSG, MSG, k->pd->local_dma_lkey);
	struct ib_sge ss = sge(k->dma, MSG, k->pd->local_dma_lkey);
	struct ib_recv_wr r = { .wr_id = 11, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr s = { .wr_id = 12, .sg_list = &ss, .num_sge = 1,
				.opcode = IB_WR_SEND_WITH_IMM, .send_flags = IB_SEND_SIGNALED,
				.ex.imm_data = cpu_to_be32(IMM) };
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	struct ib_wc wc[2] = {};
	int err, n, ev;

	fill(k->buf, MSG, 1);
	memset(k->buf + MSG, 0, MSG);
	err = ib_post_recv(k->qp, &r, &rbad);
	if (!err)
		err = ib_req_notify_cq(k->cq, IB_CQ_NEXT_COMP);
	if (!err)
		err = ib_post_send(k->qp, &s, &sbad);
	if (err) {
		pr_info("ib_c_verbs: send failed: err %d\n", err);
		return;
	}
	ev = wait_event_timeout(k->ev.wake, atomic_read(&k->ev.count) > 0, 10 * HZ) ? 1 : 0;
	n = poll_n(k->cq, wc, 2);
	if (n != 2) {
		pr_info("ib_c_verbs: send: %d completion(s)\n", n);
		return;
	}
	if (wc[0].opcode != IB_WC_SEND)
		swap(wc[0], wc[1]);
	pr_info("ib_c_verbs: send: %s %s id %llu; recv %s %s id %llu, %u bytes, imm %d 0x%x, qp ours %d, src_qp self %d, slid the port's %d; data %s; completion event %d\n",
		opcode_name(wc[0].opcode), status_name(wc[0].status), wc[0].wr_id,
		opcode_name(wc[1].opcode), status_name(wc[1].status), wc[1].wr_id, wc[1].byte_len,
		!!(wc[1].wc_flags & IB_WC_WITH_IMM), be32_to_cpu(wc[1].ex.imm_data),
		wc[1].qp == k->qp && wc[0].qp == k->qp, wc[1].src_qp == k->qp->qp_num,
		wc[1].slid == port_lid(k->qp->device), intact(holds(k->buf + MSG, MSG, 1)), ev);
}

/* Phase: RDMA WRITE, then READ, through the PD's global rkey. */
static void rdma(struct kept *k)
{
	struct ib_sge s1 = sge(k->dma, MSG, k->pd->local_dma_lkey);
	struct ib_sge s2 = sge(k->dma + 2 * MSG, MSG, k->pd->local_dma_lkey);
	struct ib_rdma_wr w = { .wr = { .wr_id = 21, .sg_list = &s1, .num_sge = 1,
					.opcode = IB_WR_RDMA_WRITE, .send_flags = IB_SEND_SIGNALED },
				.remote_addr = k->dma + MSG, .rkey = k->pd->unsafe_global_rkey };
	struct ib_rdma_wr rd = { .wr = { .wr_id = 22, .sg_list = &s2, .num_sge = 1,
					 .opcode = IB_WR_RDMA_READ, .send_flags = IB_SEND_SIGNALED },
				 .remote_addr = k->dma + MSG, .rkey = k->pd->unsafe_global_rkey };
	const struct ib_send_wr *bad = NULL;
	struct ib_wc wc[2] = {};
	bool wrote;
	int err;

	fill(k->buf, MSG, 2);
	memset(k->buf + MSG, 0, 2 * MSG);
	err = ib_post_send(k->qp, &w.wr, &bad);
	if (err || poll_n(k->cq, wc, 1) != 1) {
		pr_info("ib_c_verbs: rdma write failed: err %d\n", err);
		return;
	}
	wrote = holds(k->buf + MSG, MSG, 2);
	err = ib_post_send(k->qp, &rd.wr, &bad);
	if (err || poll_n(k->cq, wc + 1, 1) != 1) {
		pr_info("ib_c_verbs: rdma read failed: err %d\n", err);
		return;
	}
	pr_info("ib_c_verbs: rdma: write %s %s, data %s; read %s %s %u bytes, data %s\n",
		opcode_name(wc[0].opcode), status_name(wc[0].status), intact(wrote),
		opcode_name(wc[1].opcode), status_name(wc[1].status), wc[1].byte_len,
		intact(holds(k->buf + 2 * MSG, MSG, 2)));
}

/* Phase: 16 receives and 16 SENDs, each list posted with one call (only the last signalled). */
static void chain(struct kept *k)
{
	struct lists {
		struct ib_sge rs[CHAIN], ss[CHAIN];
		struct ib_recv_wr r[CHAIN];
		struct ib_send_wr s[CHAIN];
		struct ib_wc wc[CHAIN + 1];
	} *l = kzalloc(sizeof(*l), GFP_KERNEL);
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	int i, err_r, err_s, n, ok = 0, sends = 0;
	const int len = 128;

	if (!l)
		return;
	memset(k->buf + MSG, 0, CHAIN * len);
	for (i = 0; i < CHAIN; i++) {
		fill(k->buf + i * len, len, 10 + i);
		l->rs[i] = sge(k->dma + MSG + i * len, len, k->pd->local_dma_lkey);
		l->ss[i] = sge(k->dma + i * len, len, k->pd->local_dma_lkey);
		l->r[i] = (struct ib_recv_wr){ .wr_id = 100 + i, .sg_list = &l->rs[i], .num_sge = 1,
					       .next = i + 1 < CHAIN ? &l->r[i + 1] : NULL };
		l->s[i] = (struct ib_send_wr){ .wr_id = 200 + i, .sg_list = &l->ss[i], .num_sge = 1,
					       .opcode = IB_WR_SEND,
					       .send_flags = i + 1 == CHAIN ? IB_SEND_SIGNALED : 0,
					       .next = i + 1 < CHAIN ? &l->s[i + 1] : NULL };
	}
	err_r = ib_post_recv(k->qp, l->r, &rbad);
	err_s = err_r ? -1 : ib_post_send(k->qp, l->s, &sbad);
	n = (err_r || err_s) ? 0 : poll_n(k->cq, l->wc, CHAIN + 1);
	for (i = 0; i < n; i++) {
		struct ib_wc *wc = &l->wc[i];

		if (wc->status != IB_WC_SUCCESS)
			continue;
		if (wc->opcode == IB_WC_RECV) {
			u64 j = wc->wr_id - 100;

			if (j < CHAIN && wc->byte_len == len &&
			    holds(k->buf + MSG + j * len, len, 10 + j) && j == ok)
				ok++;
		} else if (wc->opcode == IB_WC_SEND && wc->wr_id == 200 + CHAIN - 1) {
			sends++;
		}
	}
	pr_info("ib_c_verbs: chain: %d receives posted in one call (%d), %d sends in one call (%d): %d received in order and intact, %d send completion(s)\n",
		CHAIN, err_r, CHAIN, err_s, ok, sends);
	kfree(l);
}

/* Phase: an inline SEND (the bytes copied at post time). */
static void inline_send(struct kept *k)
{
	u8 *bytes = kmalloc(64, GFP_KERNEL);
	struct ib_sge rs = sge(k->dma + MSG, 64, k->pd->local_dma_lkey);
	struct ib_sge ss;
	struct ib_recv_wr r = { .wr_id = 31, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr s = { .wr_id = 32, .sg_list = &ss, .num_sge = 1, .opcode = IB_WR_SEND,
				.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE };
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	struct ib_wc wc[2] = {};
	int err, n;

	if (!bytes)
		return;
	fill(bytes, 64, 3);
	ss = sge((u64)(uintptr_t)bytes, 64, 0);
	memset(k->buf + MSG, 0, 64);
	err = ib_post_recv(k->qp, &r, &rbad);
	if (!err)
		err = ib_post_send(k->qp, &s, &sbad);
	/* The bytes were copied: overwriting them now must not show at the receiver. */
	memset(bytes, 0, 64);
	n = err ? 0 : poll_n(k->cq, wc, 2);
	pr_info("ib_c_verbs: inline: post %d, %d completion(s) %s %s, received %s\n", err, n,
		status_name(wc[0].status), status_name(wc[1].status),
		intact(holds(k->buf + MSG, 64, 3)));
	kfree(bytes);
}

/* Phase: a chain whose second request has more scatter entries than the QP takes. */
static void bad_chain(struct kept *k)
{
	int many = k->qp->device->attrs.max_send_sge + 1;
	struct ib_sge *list = kcalloc(many, sizeof(*list), GFP_KERNEL);
	struct ib_sge rs = sge(k->dma + MSG, MSG, k->pd->local_dma_lkey);
	struct ib_sge ss = sge(k->dma, 64, k->pd->local_dma_lkey);
	struct ib_recv_wr r = { .wr_id = 41, .sg_list = &rs, .num_sge = 1 };
	struct ib_send_wr s[2] = {};
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	struct ib_wc wc[2] = {};
	int i, err, n;

	if (!list)
		return;
	for (i = 0; i < many; i++)
		list[i] = sge(k->dma, 8, k->pd->local_dma_lkey);
	s[0] = (struct ib_send_wr){ .wr_id = 42, .sg_list = &ss, .num_sge = 1, .opcode = IB_WR_SEND,
				    .send_flags = IB_SEND_SIGNALED, .next = &s[1] };
	s[1] = (struct ib_send_wr){ .wr_id = 43, .sg_list = list, .num_sge = many,
				    .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	ib_post_recv(k->qp, &r, &rbad);
	err = ib_post_send(k->qp, s, &sbad);
	n = poll_n(k->cq, wc, 2);
	pr_info("ib_c_verbs: bad chain: err %d, bad_wr is the second %d; %d completion(s): %s %s\n",
		err, sbad == &s[1], n, status_name(wc[0].status), status_name(wc[1].status));
	kfree(list);
}

/* Phase: a receive flushed by the move to the error state. */
static void flush(struct kept *k)
{
	struct ib_sge rs = sge(k->dma + MSG, MSG, k->pd->local_dma_lkey);
	struct ib_recv_wr r = { .wr_id = 51, .sg_list = &rs, .num_sge = 1 };
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	const struct ib_recv_wr *rbad = NULL;
	struct ib_wc wc = {};
	int err, n;

	err = ib_post_recv(k->qp, &r, &rbad);
	if (!err)
		err = ib_modify_qp(k->qp, &a, IB_QP_STATE);
	n = err ? 0 : poll_n(k->cq, &wc, 1);
	pr_info("ib_c_verbs: flush: modify %d, %d completion(s): id %llu %s, qp ours %d\n", err, n,
		wc.wr_id, status_name(wc.status), wc.qp == k->qp);
}

/* Phase: a UD datagram to the QP itself through an AH. */
static void ud(struct kept *k)
{
	struct ib_device *dev = k->pd->device;
	struct ib_cq *cq = ib_create_cq(dev, NULL, NULL, NULL, &(struct ib_cq_init_attr){ .cqe = 8 });
	struct ib_qp_init_attr init = { .qp_type = IB_QPT_UD, .sq_sig_type = IB_SIGNAL_ALL_WR,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_ah_attr aa = {};
	struct ib_qp_attr a = {};
	struct ib_sge rs = sge(k->dma + MSG, GRH + UD_MSG, k->pd->local_dma_lkey);
	struct ib_sge ss = sge(k->dma, UD_MSG, k->pd->local_dma_lkey);
	struct ib_recv_wr r = { .wr_id = 61, .sg_list = &rs, .num_sge = 1 };
	struct ib_ud_wr s = { .wr = { .wr_id = 62, .sg_list = &ss, .num_sge = 1, .opcode = IB_WR_SEND },
			      .remote_qkey = QKEY };
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	struct ib_wc wc[2] = {};
	struct ib_qp *qp = NULL;
	struct ib_ah *ah = NULL;
	int err = 0, n = 0, d_ah = 0, d_qp = 0, d_cq, usecnt = 0;

	if (IS_ERR(cq)) {
		pr_info("ib_c_verbs: ud: cq failed: err %ld\n", PTR_ERR(cq));
		return;
	}
	init.send_cq = init.recv_cq = cq;
	qp = ib_create_qp(k->pd, &init);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		qp = NULL;
		goto out;
	}
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qkey = QKEY;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PORT | IB_QP_PKEY_INDEX | IB_QP_QKEY);
	a.qp_state = IB_QPS_RTR;
	if (!err)
		err = ib_modify_qp(qp, &a, IB_QP_STATE);
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0x42;
	if (!err)
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	if (err)
		goto out;
	aa.type = rdma_ah_find_type(dev, 1);
	rdma_ah_set_port_num(&aa, 1);
	rdma_ah_set_dlid(&aa, port_lid(dev));
	ah = rdma_create_ah(k->pd, &aa, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		err = PTR_ERR(ah);
		ah = NULL;
		goto out;
	}
	usecnt = atomic_read(&k->pd->usecnt);
	fill(k->buf, UD_MSG, 4);
	memset(k->buf + MSG, 0, GRH + UD_MSG);
	s.ah = ah;
	s.remote_qpn = qp->qp_num;
	err = ib_post_recv(qp, &r, &rbad);
	if (!err)
		err = ib_post_send(qp, &s.wr, &sbad);
	n = err ? 0 : poll_n(cq, wc, 2);
	if (n == 2 && wc[0].opcode != IB_WC_SEND)
		swap(wc[0], wc[1]);
out:
	if (ah)
		d_ah = rdma_destroy_ah_user(ah, RDMA_DESTROY_AH_SLEEPABLE, NULL);
	if (qp)
		d_qp = ib_destroy_qp(qp);
	d_cq = ib_destroy_cq_user(cq, NULL);
	pr_info("ib_c_verbs: ud: err %d, pd usecnt with the ah %d; %d completion(s): send %s, recv %s %u bytes, src_qp self %d, grh %d, qp ours %d; data %s; destroyed ah %d qp %d cq %d\n",
		err, usecnt, n, status_name(wc[0].status), status_name(wc[1].status),
		wc[1].byte_len, qp && wc[1].src_qp == qp->qp_num, !!(wc[1].wc_flags & IB_WC_GRH),
		qp && wc[1].qp == qp, intact(holds(k->buf + MSG + GRH, UD_MSG, 4)), d_ah, d_qp, d_cq);
}

static int add_one(struct ib_device *dev)
{
	struct ib_qp_init_attr init = { .qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
					.event_handler = qp_event,
					.cap = { .max_send_wr = 32, .max_recv_wr = 32,
						 .max_send_sge = 2, .max_recv_sge = 1,
						 .max_inline_data = 64 } };
	struct ib_qp_init_attr qinit = {};
	struct ib_qp_attr a = {};
	struct kept *k;
	int err;

	if (!dev->kverbs_provider)
		return -EOPNOTSUPP;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	atomic_set(&k->ev.count, 0);
	init_waitqueue_head(&k->ev.wake);
	k->buf = dma_alloc_coherent(dev->dma_device, 4 * MSG, &k->dma, GFP_KERNEL);
	if (!k->buf) {
		kfree(k);
		return -ENOMEM;
	}
	ib_set_client_data(dev, &client, k);
	k->pd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(k->pd)) {
		pr_info("ib_c_verbs: %s: pd failed: err %ld\n", dev_name(&dev->dev), PTR_ERR(k->pd));
		k->pd = NULL;
		return 0;
	}
	pr_info("ib_c_verbs: %s: pd: device ours %d, local_dma_lkey the device's %d, unsafe global rkey set %d, flags %u, usecnt %d\n",
		dev_name(&dev->dev), k->pd->device == dev, k->pd->local_dma_lkey == dev->local_dma_lkey,
		k->pd->unsafe_global_rkey != 0, k->pd->flags, atomic_read(&k->pd->usecnt));
	k->cq = ib_create_cq(dev, comp_handler, cq_event, &k->ev,
			     &(struct ib_cq_init_attr){ .cqe = 16 });
	if (IS_ERR(k->cq)) {
		pr_info("ib_c_verbs: cq failed: err %ld\n", PTR_ERR(k->cq));
		k->cq = NULL;
		return 0;
	}
	pr_info("ib_c_verbs: cq: cqe %d (16 asked), device ours %d, context ours %d, usecnt %d\n",
		k->cq->cqe, k->cq->device == dev, k->cq->cq_context == &k->ev,
		atomic_read(&k->cq->usecnt));
	pr_info("ib_c_verbs: bad size: cq of max_cqe + 2: %ld\n",
		PTR_ERR(ib_create_cq(dev, NULL, NULL, NULL,
				     &(struct ib_cq_init_attr){ .cqe = dev->attrs.max_cqe + 2 })));
	init.send_cq = init.recv_cq = k->cq;
	init.qp_context = k;
	k->qp = ib_create_qp(k->pd, &init);
	if (IS_ERR(k->qp)) {
		pr_info("ib_c_verbs: qp failed: err %ld\n", PTR_ERR(k->qp));
		k->qp = NULL;
		return 0;
	}
	pr_info("ib_c_verbs: qp: type %d, cap %u/%u/%u/%u/%u, pd ours %d, cqs ours %d, usecnt pd %d cq %d, port %u\n",
		k->qp->qp_type, init.cap.max_send_wr, init.cap.max_recv_wr, init.cap.max_send_sge,
		init.cap.max_recv_sge, init.cap.max_inline_data, k->qp->pd == k->pd,
		k->qp->send_cq == k->cq && k->qp->recv_cq == k->cq, atomic_read(&k->pd->usecnt),
		atomic_read(&k->cq->usecnt), k->qp->port);
	a.qp_state = IB_QPS_RTS;
	pr_info("ib_c_verbs: reset to rts: %d; unsupported mask bit: %d\n",
		ib_modify_qp(k->qp, &a, IB_QP_STATE),
		ib_modify_qp(k->qp, &a, IB_QP_STATE | IB_QP_ALT_PATH));
	err = twin_connect_rc(k->qp, port_lid(dev), k->qp->qp_num,
			      IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ, 7,
			      NULL);
	memset(&a, 0, sizeof(a));
	if (!err)
		err = ib_query_qp(k->qp, &a, IB_QP_STATE, &qinit);
	if (err) {
		pr_info("ib_c_verbs: connect failed: err %d\n", err);
		return 0;
	}
	pr_info("ib_c_verbs: query: state %d/%d, mtu %d, dest self %d, psn 0x%x/0x%x, timeout %u retry %u rnr %u, rd_atomic %u/%u, min_rnr %u, access 0x%x, port %u (qp->port %u), pkey %u, path type %d dlid the port's %d\n",
		a.qp_state, a.cur_qp_state, a.path_mtu, a.dest_qp_num == k->qp->qp_num, a.sq_psn,
		a.rq_psn, a.timeout, a.retry_cnt, a.rnr_retry, a.max_rd_atomic, a.max_dest_rd_atomic,
		a.min_rnr_timer, a.qp_access_flags, a.port_num, k->qp->port, a.pkey_index,
		a.ah_attr.type, rdma_ah_get_dlid(&a.ah_attr) == port_lid(dev));
	pr_info("ib_c_verbs: query init: type %d, cqs ours %d, srq %d, context ours %d, sig %d, cap %u/%u/%u/%u/%u\n",
		qinit.qp_type, qinit.send_cq == k->cq && qinit.recv_cq == k->cq, qinit.srq != NULL,
		qinit.qp_context == k, qinit.sq_sig_type, qinit.cap.max_send_wr,
		qinit.cap.max_recv_wr, qinit.cap.max_send_sge, qinit.cap.max_recv_sge,
		qinit.cap.max_inline_data);
	send_imm(k);
	rdma(k);
	chain(k);
	inline_send(k);
	bad_chain(k);
	flush(k);
	pr_info("ib_c_verbs: destroy cq in use: %d\n", ib_destroy_cq_user(k->cq, NULL));
	ud(k);
	return 0;
}

static int add(struct ib_device *dev)
{
	return add_one(dev);
}

static void remove(struct ib_device *dev, void *data)
{
	struct kept *k = data;
	int qp = 0, cq = 0;

	if (!k)
		return;
	if (k->qp)
		qp = ib_destroy_qp(k->qp);
	if (k->cq)
		cq = ib_destroy_cq_user(k->cq, NULL);
	if (k->pd)
		ib_dealloc_pd(k->pd);
	dma_free_coherent(dev->dma_device, 4 * MSG, k->buf, k->dma);
	pr_info("ib_c_verbs: %s: released: qp %d cq %d\n", dev_name(&dev->dev), qp, cq);
	kfree(k);
}

static struct ib_client client = {
	.name = "ib_c_verbs",
	.add = add,
	.remove = remove,
};

static int __init ib_c_verbs_init(void)
{
	return ib_register_client(&client);
}

static void __exit ib_c_verbs_exit(void)
{
	ib_unregister_client(&client);
}

module_init(ib_c_verbs_init);
module_exit(ib_c_verbs_exit);
MODULE_DESCRIPTION("C kernel verbs consumer loaded on either stack (test tool)");
MODULE_LICENSE("GPL");
