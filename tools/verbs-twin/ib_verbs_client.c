// SPDX-License-Identifier: GPL-2.0
/*
 * The C twin of samples/ib_verbs_client.rs: the same kernel verbs consumer, written against the
 * upstream C ib_core, so that the upstream C stack (the oracle) prints the lines the Rust sample
 * prints on the Rust stack. A test tool, not part of the product; see tools/verbs-twin/README.md.
 *
 * On every device it gets a PD, a CQ with a completion handler, a DMA MR and an RC QP connected
 * to itself, runs phase 1 (the Rust sample's sequence, line for line), then the further phases
 * (UD, SRQ, RC ring wrap-around, inline, atomics, errors, polled CQs with draining), each with
 * its own objects and one result line per part. Phase 1's objects stay until the device or the module goes away, so that
 * `rdma res show` can list them.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
/* Also the core-private restrack.h (struct rdma_restrack_root). */
#include "twin_common.h"

/* Bytes per phase 1 message. */
#define MSG 4096
/* Immediate data of phase 1's SEND. */
#define IMM 0x1234
/* Messages of the 1000-message phases. */
#define MANY 1000

/* Completion events of a CQ, counted by its handler. */
struct events {
	atomic_t count;
	wait_queue_head_t wake;
};

/* A PD, a CQ, a DMA MR and two coherent buffers (tx, rx): what every phase works with. */
struct env {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	struct events ev;
	size_t size;
	u8 *tx, *rx;
	dma_addr_t tx_dma, rx_dma;
};

/* A QP and the state of its last successful modify (what the Rust core keeps as its state). */
struct tqp {
	struct ib_qp *qp;
	enum ib_qp_state state;
};

/* What is kept per device: phase 1's objects, and the handler of the device's fatal error. */
struct per_dev {
	struct env *env;
	struct tqp qp;
	struct ib_event_handler fatal;
	bool watching;
};

static struct ib_client client;

static const char *const state_names[] = {
	"Reset", "Init", "Rtr", "Rts", "Sqd", "Sqe", "Err",
};

/* The Rust names (Debug) of QP states (statuses and opcodes: twin_common.h). */
static const char *state_name(unsigned int s)
{
	return s < ARRAY_SIZE(state_names) ? state_names[s] : "Unknown";
}

/*
 * Live objects of this module on `dev` of one type, from resource tracking: the kernel entries
 * whose owner name is this module (what `rdma res show` prints as `comm [ib_verbs_client]`).
 * The device's own count also holds mlx5_ib's internal objects, so it is filtered.
 */
static u32 live(struct ib_device *dev, enum rdma_restrack_type type)
{
	struct rdma_restrack_root *rt = &dev->res[type];
	struct rdma_restrack_entry *e;
	XA_STATE(xas, &rt->xa, 0);
	u32 n = 0;

	xa_lock(&rt->xa);
	xas_for_each(&xas, e, U32_MAX) {
		if (xa_is_zero(e) || e->user || !e->kern_name)
			continue;
		if (!strcmp(e->kern_name, KBUILD_MODNAME))
			n++;
	}
	xa_unlock(&rt->xa);
	return n;
}

static void comp_handler(struct ib_cq *cq, void *ctx)
{
	struct events *ev = ctx;

	atomic_inc(&ev->count);
	wake_up_all(&ev->wake);
}

static void env_destroy(struct env *e)
{
	if (!e)
		return;
	if (e->rx)
		dma_free_coherent(e->dev->dma_device, e->size, e->rx, e->rx_dma);
	if (e->tx)
		dma_free_coherent(e->dev->dma_device, e->size, e->tx, e->tx_dma);
	if (e->mr)
		ib_dereg_mr(e->mr);
	if (e->cq)
		ib_destroy_cq(e->cq);
	if (e->pd)
		ib_dealloc_pd(e->pd);
	kfree(e);
}

/* A PD, a CQ of `cqe` entries, a DMA MR with `access` and two buffers of `size` bytes. */
static struct env *env_create(struct ib_device *dev, int cqe, size_t size, int access)
{
	struct ib_cq_init_attr ca = { .cqe = cqe };
	struct env *e;
	int err;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->dev = dev;
	e->size = size;
	atomic_set(&e->ev.count, 0);
	init_waitqueue_head(&e->ev.wake);
	e->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(e->pd)) {
		err = PTR_ERR(e->pd);
		e->pd = NULL;
		goto fail;
	}
	e->cq = ib_create_cq(dev, comp_handler, NULL, &e->ev, &ca);
	if (IS_ERR(e->cq)) {
		err = PTR_ERR(e->cq);
		e->cq = NULL;
		goto fail;
	}
	e->mr = get_dma_mr(e->pd, access);
	if (IS_ERR(e->mr)) {
		err = PTR_ERR(e->mr);
		e->mr = NULL;
		goto fail;
	}
	err = -ENOMEM;
	e->tx = dma_alloc_coherent(dev->dma_device, size, &e->tx_dma, GFP_KERNEL);
	if (!e->tx)
		goto fail;
	e->rx = dma_alloc_coherent(dev->dma_device, size, &e->rx_dma, GFP_KERNEL);
	if (!e->rx)
		goto fail;
	return e;
fail:
	env_destroy(e);
	return ERR_PTR(err);
}

/*
 * Polls until `n` completions are in `out`, waiting for events in between (-ETIMEDOUT after
 * 50 rounds without them); as the Rust sample's collect.
 */
static int collect(struct env *e, struct ib_wc *out, int n)
{
	int got = 0, round, k, seen;

	for (round = 0; round < 50; round++) {
		while (got < n) {
			k = ib_poll_cq(e->cq, n - got, out + got);
			if (k < 0)
				return k;
			if (!k)
				break;
			got += k;
		}
		if (got >= n)
			return got;
		/* Arm, then poll once more before sleeping: a completion may have come in between. */
		seen = atomic_read(&e->ev.count);
		k = ib_req_notify_cq(e->cq, IB_CQ_NEXT_COMP);
		if (k < 0)
			return k;
		k = ib_poll_cq(e->cq, 1, out + got);
		if (k < 0)
			return k;
		if (k) {
			got += k;
			round--;
			continue;
		}
		wait_event_timeout(e->ev.wake, atomic_read(&e->ev.count) != seen,
				   msecs_to_jiffies(100));
	}
	return -ETIMEDOUT;
}

static int post_recv(struct ib_qp *qp, u64 wr_id, u64 addr, u32 len, u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

static int post_send(struct ib_qp *qp, u64 wr_id, enum ib_wr_opcode op, u64 addr, u32 len,
		     u32 lkey, int flags, u32 imm)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = flags,
		.ex.imm_data = cpu_to_be32(imm),
	};

	return ib_post_send(qp, &wr, NULL);
}

static int post_rdma(struct ib_qp *qp, u64 wr_id, enum ib_wr_opcode op, u64 addr, u32 len,
		     u32 lkey, u64 remote, u32 rkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = remote, .rkey = rkey,
	};

	return ib_post_send(qp, &wr.wr, NULL);
}

static int modify(struct tqp *t, struct ib_qp_attr *attr, int mask)
{
	int err = ib_modify_qp(t->qp, attr, mask);

	if (!err && (mask & IB_QP_STATE))
		t->state = attr->qp_state;
	return err;
}

static int to_state(struct tqp *t, enum ib_qp_state s)
{
	struct ib_qp_attr attr = { .qp_state = s };

	return modify(t, &attr, IB_QP_STATE);
}

/* The port's LID (the address of a QP looped back to itself). */
static u16 port_lid(struct ib_device *dev)
{
	struct ib_port_attr pa;

	if (ib_query_port(dev, 1, &pa))
		return 0;
	return pa.lid;
}

/* Moves an RC QP to RTS, connected to `dqpn` on the same port, as the Rust sample's connect. */
static int connect_rc(struct tqp *t, u32 dqpn, int access, u8 rnr_retry)
{
	return twin_connect_rc(t->qp, port_lid(t->qp->device), dqpn, access, rnr_retry, &t->state);
}

/* RESET, then RTS again. */
static int reconnect(struct tqp *t, int access, u8 rnr_retry)
{
	int err = to_state(t, IB_QPS_RESET);

	return err ? err : connect_rc(t, t->qp->qp_num, access, rnr_retry);
}

/* How many of the two wrong modifies the Rust sample tries are refused with -EINVAL. */
static int wrong_transitions_refused(struct tqp *t)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_RTR };
	int refused = 0;

	/* RESET to RTR skips INIT. */
	if (modify(t, &a, IB_QP_STATE) == -EINVAL)
		refused++;
	/* RESET to INIT without the port. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_INIT;
	if (modify(t, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_ACCESS_FLAGS) == -EINVAL)
		refused++;
	return refused;
}

/* An RC (or, with `srq`, SRQ-fed RC) QP on `e` with the given queue sizes. */
static int create_rc(struct env *e, struct tqp *t, u32 sq, u32 rq, u32 inl, struct ib_srq *srq)
{
	struct ib_qp_init_attr ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .srq = srq,
		.cap = { .max_send_wr = sq, .max_recv_wr = srq ? 0 : rq, .max_send_sge = 1,
			 .max_recv_sge = srq ? 0 : 1, .max_inline_data = inl },
		.sq_sig_type = IB_SIGNAL_REQ_WR, .qp_type = IB_QPT_RC,
	};

	t->qp = ib_create_qp(e->pd, &ia);
	if (IS_ERR(t->qp)) {
		int err = PTR_ERR(t->qp);

		t->qp = NULL;
		return err;
	}
	t->state = IB_QPS_RESET;
	return 0;
}

static const int RW = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;

/* Phase 1, part 1: the setup line. */
static int phase1_setup(struct ib_device *dev, struct per_dev *pd)
{
	struct ib_qp_init_attr ia;
	struct ib_qp_attr attr;
	struct env *e;
	int refused, err;

	e = env_create(dev, 64, MSG, IB_ACCESS_LOCAL_WRITE | RW);
	if (IS_ERR(e)) {
		pr_info("%s: no kernel verbs (err %ld)\n", dev_name(&dev->dev), PTR_ERR(e));
		return PTR_ERR(e);
	}
	pd->env = e;
	err = create_rc(e, &pd->qp, 16, 16, 0, NULL);
	if (err)
		return err;
	refused = wrong_transitions_refused(&pd->qp);
	err = connect_rc(&pd->qp, pd->qp.qp->qp_num, RW, 7);
	if (err)
		return err;
	err = ib_query_qp(pd->qp.qp, &attr, IB_QP_STATE | IB_QP_DEST_QPN, &ia);
	if (err)
		return err;
	pr_info("%s: qp 0x%x in state %s (driver says %s, dest qp 0x%x), %d wrong transition(s) refused, mr lkey 0x%x; live: pd %u cq %u qp %u mr %u\n",
		dev_name(&dev->dev), pd->qp.qp->qp_num, state_name(pd->qp.state),
		state_name(attr.qp_state), attr.dest_qp_num, refused, e->mr->lkey,
		live(dev, RDMA_RESTRACK_PD), live(dev, RDMA_RESTRACK_CQ),
		live(dev, RDMA_RESTRACK_QP), live(dev, RDMA_RESTRACK_MR));
	return 0;
}

/* A receive of `rx_len` bytes and a SEND with immediate data of all of tx; both completions. */
static int send_recv(struct env *e, struct tqp *t, u32 rx_len, struct ib_wc *send,
		     struct ib_wc *recv)
{
	struct ib_wc wc[2];
	int err, i;

	err = post_recv(t->qp, 1, e->rx_dma, rx_len, e->mr->lkey);
	if (err)
		return err;
	err = post_send(t->qp, 2, IB_WR_SEND_WITH_IMM, e->tx_dma, MSG, e->mr->lkey,
			IB_SEND_SIGNALED, IMM);
	if (err)
		return err;
	err = collect(e, wc, 2);
	if (err < 0)
		return err;
	send->wr_id = recv->wr_id = 0;
	for (i = 0; i < 2; i++) {
		if (wc[i].wr_id == 2)
			*send = wc[i];
		else if (wc[i].wr_id == 1)
			*recv = wc[i];
	}
	return send->wr_id == 2 && recv->wr_id == 1 ? 0 : -EIO;
}

static int rdma_op(struct env *e, struct tqp *t, enum ib_wr_opcode op, u64 local, u64 remote,
		   u32 rkey, struct ib_wc *wc)
{
	int err = post_rdma(t->qp, 3, op, local, MSG, e->mr->lkey, remote, rkey);

	if (err)
		return err;
	err = collect(e, wc, 1);
	return err < 0 ? err : 0;
}

/* Phase 1, the data path: one line per part, as the Rust sample's exercise. */
static int phase1_exercise(const char *name, struct env *e, struct tqp *t)
{
	struct ib_wc send, recv, wr, rd, fl;
	struct ib_qp_init_attr ia;
	struct ib_qp_attr attr;
	int before, events, err;
	bool written;

	fill(e->tx, MSG, 0x11);
	before = atomic_read(&e->ev.count);
	err = ib_req_notify_cq(e->cq, IB_CQ_NEXT_COMP);
	if (err)
		return err;
	err = send_recv(e, t, MSG, &send, &recv);
	if (err)
		return err;
	/*
	 * The completions can be polled before the interrupt of the event is handled: wait (at most
	 * 1 s) for the event the arm promised, so that the count does not depend on timing.
	 */
	wait_event_timeout(e->ev.wake, atomic_read(&e->ev.count) != before, msecs_to_jiffies(1000));
	events = atomic_read(&e->ev.count) - before;
	pr_info("%s: send %s %s; recv %s %s %u bytes imm 0x%x from qp 0x%x; data %s; %d completion event(s)\n",
		name, opcode_name(send.opcode), status_name(send.status), opcode_name(recv.opcode),
		status_name(recv.status), recv.byte_len,
		recv.wc_flags & IB_WC_WITH_IMM ? be32_to_cpu(recv.ex.imm_data) : 0,
		recv.src_qp, intact(holds(e->rx, MSG, 0x11)), events);

	fill(e->tx, MSG, 0x22);
	err = rdma_op(e, t, IB_WR_RDMA_WRITE, e->tx_dma, e->rx_dma, e->mr->rkey, &wr);
	if (err)
		return err;
	written = holds(e->rx, MSG, 0x22);
	fill(e->tx, MSG, 0);
	err = rdma_op(e, t, IB_WR_RDMA_READ, e->tx_dma, e->rx_dma, e->mr->rkey, &rd);
	if (err)
		return err;
	pr_info("%s: rdma write %s %s data %s; rdma read %s %s %u bytes data %s\n", name,
		opcode_name(wr.opcode), status_name(wr.status), intact(written),
		opcode_name(rd.opcode), status_name(rd.status), rd.byte_len,
		intact(holds(e->tx, MSG, 0x22)));

	fill(e->tx, MSG, 0x33);
	err = send_recv(e, t, 1024, &send, &recv);
	if (err)
		return err;
	err = post_recv(t->qp, 4, e->rx_dma, MSG, e->mr->lkey);
	if (err)
		return err;
	err = collect(e, &fl, 1);
	if (err < 0)
		return err;
	err = ib_query_qp(t->qp, &attr, IB_QP_STATE, &ia);
	if (err)
		return err;
	pr_info("%s: short receive: recv %s, send %s, next recv Some(%s); core says %s, driver says %s\n",
		name, status_name(recv.status), status_name(send.status), status_name(fl.status),
		state_name(t->state), state_name(attr.qp_state));

	err = reconnect(t, RW, 7);
	if (err)
		return err;
	err = rdma_op(e, t, IB_WR_RDMA_WRITE, e->tx_dma, e->rx_dma, e->mr->rkey ^ 0x8000, &wr);
	if (err)
		return err;
	err = reconnect(t, RW, 7);
	if (err)
		return err;
	fill(e->tx, MSG, 0x44);
	err = send_recv(e, t, MSG, &send, &recv);
	if (err)
		return err;
	pr_info("%s: bad rkey: %s; after reset and reconnect: send %s, recv %s, data %s\n", name,
		status_name(wr.status), status_name(send.status), status_name(recv.status),
		intact(holds(e->rx, MSG, 0x44)));
	return 0;
}

/* Completions of a batch, for the many-message phases. */
#define BATCH 8

/*
 * Tallies of a many-message phase: messages whose receive completed with the expected length,
 * source and data; failed completions; send completions.
 */
struct tally {
	int intact, failed, sends, recvs;
};

/*
 * Checks the receive completions among `wc[0..n)`: slot `wr_id % BATCH` of rx at `off` holds
 * `len` bytes of the message made with seed `wr_id`; the expected byte_len is `blen`, the source
 * QP `src` (UD only, 0 to skip).
 */
static void tally_wcs(struct tally *ty, struct env *e, struct ib_wc *wc, int n, u32 slot,
		      u32 off, u32 len, u32 blen, u32 src)
{
	int i;

	for (i = 0; i < n; i++) {
		u64 id = wc[i].wr_id;

		if (wc[i].status != IB_WC_SUCCESS) {
			ty->failed++;
			continue;
		}
		if (!(wc[i].opcode & IB_WC_RECV)) {
			ty->sends++;
			continue;
		}
		ty->recvs++;
		if (wc[i].byte_len == blen && (!src || wc[i].src_qp == src) &&
		    holds(e->rx + (id % BATCH) * slot + off, len, (u8)id))
			ty->intact++;
	}
}

/* UD: 1000 messages of 256 bytes to the QP itself through an address handle. */
static int phase_ud(struct ib_device *dev, const char *name)
{
	const u32 len = 256, slot = 512, qkey = 0x11111111;
	struct ib_qp_init_attr ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR, .qp_type = IB_QPT_UD,
	};
	struct rdma_ah_attr ah_attr = {};
	struct ib_qp_attr a = {};
	struct tally ty = {};
	struct ib_wc *wc = NULL;
	struct ib_ah *ah = NULL;
	struct tqp t = {};
	struct env *e;
	int err, i, j;

	e = env_create(dev, 64, BATCH * slot, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(e))
		return PTR_ERR(e);
	err = -ENOMEM;
	wc = kcalloc(2 * BATCH, sizeof(*wc), GFP_KERNEL);
	if (!wc)
		goto out;
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	t.qp = ib_create_qp(e->pd, &ia);
	if (IS_ERR(t.qp)) {
		err = PTR_ERR(t.qp);
		t.qp = NULL;
		goto out;
	}
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	err = modify(&t, &a, IB_QP_STATE | IB_QP_PORT | IB_QP_PKEY_INDEX | IB_QP_QKEY);
	if (!err)
		err = to_state(&t, IB_QPS_RTR);
	if (!err) {
		a.qp_state = IB_QPS_RTS;
		a.sq_psn = 0x1234;
		err = modify(&t, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	}
	if (err)
		goto out;
	ah_attr.type = rdma_ah_find_type(dev, 1);
	rdma_ah_set_port_num(&ah_attr, 1);
	rdma_ah_set_dlid(&ah_attr, port_lid(dev));
	ah = rdma_create_ah(e->pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		err = PTR_ERR(ah);
		ah = NULL;
		goto out;
	}
	for (i = 0; i < MANY; i += BATCH) {
		for (j = i; j < i + BATCH; j++) {
			u32 o = (j % BATCH) * slot;
			struct ib_sge sge = { .addr = e->tx_dma + o, .length = len,
					      .lkey = e->mr->lkey };
			struct ib_ud_wr wr = {
				.wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1,
					.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED },
				.ah = ah, .remote_qpn = t.qp->qp_num, .remote_qkey = qkey,
			};

			fill(e->tx + o, len, j);
			memset(e->rx + o, 0, slot);
			err = post_recv(t.qp, j, e->rx_dma + o, 40 + len, e->mr->lkey);
			if (!err)
				err = ib_post_send(t.qp, &wr.wr, NULL);
			if (err)
				goto out;
		}
		err = collect(e, wc, 2 * BATCH);
		if (err < 0)
			goto out;
		tally_wcs(&ty, e, wc, err, slot, 40, len, 40 + len, t.qp->qp_num);
	}
	pr_info("%s: ud: %d messages of %u bytes to own qp through an AH: %d sends completed, %d received intact with byte_len %u (40-byte GRH area first), %d failed completion(s)\n",
		name, MANY, len, ty.sends, ty.intact, 40 + len, ty.failed);
	err = 0;
out:
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (t.qp)
		ib_destroy_qp(t.qp);
	kfree(wc);
	env_destroy(e);
	return err;
}

/*
 * RC, 1000 messages of `len` bytes to itself in batches of BATCH, only the last send of each
 * batch signalled; receives from the QP's RQ or from `srq`; sends inline when `inl`.
 */
static int rc_many(struct env *e, struct tqp *t, struct ib_srq *srq, u32 len, bool inl,
		   struct tally *ty)
{
	const u32 slot = 1024;
	struct ib_wc *wc;
	u8 *src = NULL;
	int err = 0, i, j;

	wc = kcalloc(BATCH + 1, sizeof(*wc), GFP_KERNEL);
	if (!wc)
		return -ENOMEM;
	/* Inline data is copied from a virtual address: a kmalloc'ed buffer, never mapped. */
	if (inl) {
		src = kmalloc(len, GFP_KERNEL);
		if (!src) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < MANY; i += BATCH) {
		for (j = i; j < i + BATCH; j++) {
			u32 o = (j % BATCH) * slot;
			struct ib_sge rs = { .addr = e->rx_dma + o, .length = slot,
					     .lkey = e->mr->lkey };
			struct ib_recv_wr rwr = { .wr_id = j, .sg_list = &rs, .num_sge = 1 };
			int flags = j == i + BATCH - 1 ? IB_SEND_SIGNALED : 0;

			memset(e->rx + o, 0, slot);
			err = srq ? ib_post_srq_recv(srq, &rwr, NULL) :
				    ib_post_recv(t->qp, &rwr, NULL);
			if (err)
				goto out;
			if (inl) {
				fill(src, len, j);
				err = post_send(t->qp, j, IB_WR_SEND, (uintptr_t)src, len, 0,
						flags | IB_SEND_INLINE, 0);
			} else {
				fill(e->tx + o, len, j);
				err = post_send(t->qp, j, IB_WR_SEND, e->tx_dma + o, len,
						e->mr->lkey, flags, 0);
			}
			if (err)
				goto out;
		}
		err = collect(e, wc, BATCH + 1);
		if (err < 0)
			goto out;
		tally_wcs(ty, e, wc, err, slot, 0, len, len, 0);
		err = 0;
	}
out:
	kfree(src);
	kfree(wc);
	return err;
}

/* SRQ limit events, counted by the SRQ's event handler (atomic context). */
static void srq_event(struct ib_event *ev, void *ctx)
{
	struct events *limits = ctx;

	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED) {
		atomic_inc(&limits->count);
		wake_up_all(&limits->wake);
	}
}

/*
 * SRQ: 1000 messages into an RC QP whose receives come from an SRQ of 16, armed once with limit
 * 4 before the first receive is posted (one limit event: arming again is the consumer's job).
 */
static int phase_srq(struct ib_device *dev, const char *name)
{
	struct ib_srq_init_attr sa = {
		.event_handler = srq_event,
		.attr = { .max_wr = 16, .max_sge = 1 }, .srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq_attr limit = { .srq_limit = 4 };
	struct ib_srq *srq = NULL;
	struct events limits;
	struct tally ty = {};
	struct tqp t = {};
	struct env *e;
	int err;

	atomic_set(&limits.count, 0);
	init_waitqueue_head(&limits.wake);
	sa.srq_context = &limits;
	e = env_create(dev, 64, BATCH * 1024, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(e))
		return PTR_ERR(e);
	srq = ib_create_srq(e->pd, &sa);
	if (IS_ERR(srq)) {
		err = PTR_ERR(srq);
		srq = NULL;
		goto out;
	}
	err = create_rc(e, &t, 16, 0, 0, srq);
	if (!err)
		err = connect_rc(&t, t.qp->qp_num, 0, 7);
	if (!err)
		err = ib_modify_srq(srq, &limit, IB_SRQ_LIMIT);
	if (!err)
		err = rc_many(e, &t, srq, 512, false, &ty);
	if (err)
		goto out;
	/* The event may be handled after the completions were polled. */
	wait_event_timeout(limits.wake, atomic_read(&limits.count), msecs_to_jiffies(1000));
	pr_info("%s: srq: %d messages of 512 bytes through an SRQ of 16 asked (driver: %u): %d received intact, %d send completion(s) (1 in %d signalled), %d failed completion(s); limit 4 armed once: %d limit event(s)\n",
		name, MANY, sa.attr.max_wr, ty.intact, ty.sends, BATCH, ty.failed,
		atomic_read(&limits.count));
out:
	if (t.qp)
		ib_destroy_qp(t.qp);
	if (srq)
		ib_destroy_srq(srq);
	env_destroy(e);
	return err;
}

/*
 * RC ring wrap-around: 1000 messages through an SQ and an RQ of 8 and a CQ of 16 (as asked;
 * the line says what the driver made of them), then the same with inline sends.
 */
static int phase_wrap(struct ib_device *dev, const char *name, bool inl)
{
	struct ib_qp_init_attr ia;
	struct ib_qp_attr attr;
	struct tally ty = {};
	struct tqp t = {};
	u32 len = inl ? 64 : 512;
	struct env *e;
	int err;

	e = env_create(dev, 16, BATCH * 1024, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(e))
		return PTR_ERR(e);
	err = create_rc(e, &t, 8, 8, inl ? 64 : 0, NULL);
	if (!err)
		err = connect_rc(&t, t.qp->qp_num, 0, 7);
	if (!err)
		err = rc_many(e, &t, NULL, len, inl, &ty);
	if (!err)
		err = ib_query_qp(t.qp, &attr, IB_QP_CAP, &ia);
	if (err)
		goto out;
	if (inl)
		pr_info("%s: inline: %d sends of %u bytes inline (max_inline_data %u): %d received intact, %d send completion(s), %d failed completion(s)\n",
			name, MANY, len, ia.cap.max_inline_data, ty.intact, ty.sends, ty.failed);
	else
		pr_info("%s: rc wrap: %d messages of %u bytes, sq 8 rq 8 cq 16 asked (driver: sq %u rq %u cq %d): %d received intact, %d send completion(s) (1 in %d signalled), %d failed completion(s)\n",
			name, MANY, len, ia.cap.max_send_wr, ia.cap.max_recv_wr, e->cq->cqe,
			ty.intact, ty.sends, BATCH, ty.failed);
out:
	if (t.qp)
		ib_destroy_qp(t.qp);
	env_destroy(e);
	return err;
}

/* One atomic on the u64 at rx[0]; the old value lands in tx[0]. */
static int atomic_op(struct env *e, struct tqp *t, enum ib_wr_opcode op, u64 cmp_add, u64 swap,
		     int flags, struct ib_wc *wc)
{
	struct ib_sge sge = { .addr = e->tx_dma, .length = 8, .lkey = e->mr->lkey };
	struct ib_atomic_wr wr = {
		.wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = op,
			.send_flags = flags },
		.remote_addr = e->rx_dma, .compare_add = cmp_add, .swap = swap,
		.rkey = e->mr->rkey,
	};
	int err = ib_post_send(t->qp, &wr.wr, NULL);

	if (err || !(flags & IB_SEND_SIGNALED))
		return err;
	err = collect(e, wc, 1);
	return err < 0 ? err : 0;
}

/* Both atomics, signalled and unsignalled; old values and memory checked. */
static int phase_atomics(struct ib_device *dev, const char *name)
{
	const int acc = IB_ACCESS_REMOTE_ATOMIC | RW;
	u64 *mem, *old;
	struct ib_wc w[4], extra;
	struct tqp t = {};
	struct env *e;
	u64 o[4], m[4];
	int err, more;

	if (dev->attrs.atomic_cap == IB_ATOMIC_NONE) {
		pr_info("%s: atomics: not supported (atomic_cap none)\n", name);
		return 0;
	}
	e = env_create(dev, 64, 64, IB_ACCESS_LOCAL_WRITE | acc);
	if (IS_ERR(e))
		return PTR_ERR(e);
	mem = (u64 *)e->rx;
	old = (u64 *)e->tx;
	err = create_rc(e, &t, 16, 16, 0, NULL);
	if (!err)
		err = connect_rc(&t, t.qp->qp_num, acc, 7);
	if (err)
		goto out;
	*mem = 0x1111;
	/* Compare-and-swap that matches. */
	err = atomic_op(e, &t, IB_WR_ATOMIC_CMP_AND_SWP, 0x1111, 0x2222, IB_SEND_SIGNALED, &w[0]);
	if (err == -EOPNOTSUPP) {
		/* The driver may refuse atomics from kernel consumers (C mlx5_ib does). */
		more = atomic_op(e, &t, IB_WR_ATOMIC_FETCH_AND_ADD, 0x10, 0, IB_SEND_SIGNALED,
				 &w[2]);
		pr_info("%s: atomics: post_send refuses compare-and-swap (err %d) and fetch-and-add (err %d) on a kernel QP; memory 0x%llx untouched\n",
			name, err, more, *mem);
		err = 0;
		goto out;
	}
	o[0] = *old;
	m[0] = *mem;
	/* Compare-and-swap that does not: memory stays. */
	if (!err)
		err = atomic_op(e, &t, IB_WR_ATOMIC_CMP_AND_SWP, 0x1111, 0x3333,
				IB_SEND_SIGNALED, &w[1]);
	o[1] = *old;
	m[1] = *mem;
	if (!err)
		err = atomic_op(e, &t, IB_WR_ATOMIC_FETCH_AND_ADD, 0x10, 0, IB_SEND_SIGNALED,
				&w[2]);
	o[2] = *old;
	m[2] = *mem;
	/* An unsignalled fetch-and-add, then a signalled one: one completion for both. */
	if (!err)
		err = atomic_op(e, &t, IB_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 0, NULL);
	if (!err)
		err = atomic_op(e, &t, IB_WR_ATOMIC_FETCH_AND_ADD, 1, 0, IB_SEND_SIGNALED, &w[3]);
	if (err)
		goto out;
	o[3] = *old;
	m[3] = *mem;
	more = ib_poll_cq(e->cq, 1, &extra);
	pr_info("%s: atomics: cas 0x1111->0x2222 %s %s old 0x%llx mem 0x%llx; cas 0x1111->0x3333 %s old 0x%llx mem 0x%llx; fetch-add 0x10 %s %s old 0x%llx mem 0x%llx; unsignalled fetch-add 1 then signalled fetch-add 1: %s old 0x%llx mem 0x%llx, %d more completion(s)\n",
		name, opcode_name(w[0].opcode), status_name(w[0].status), o[0], m[0],
		status_name(w[1].status), o[1], m[1], opcode_name(w[2].opcode),
		status_name(w[2].status), o[2], m[2], status_name(w[3].status), o[3], m[3],
		more);
out:
	if (t.qp)
		ib_destroy_qp(t.qp);
	env_destroy(e);
	return err;
}

/*
 * Errors and recovery through RESET: a SEND with no receive and rnr_retry 0 (RNR retries
 * exhausted, the next SEND flushed), a SEND from a wrong lkey (local protection), an RDMA read
 * with a wrong rkey (remote access); after each, RESET and reconnect, and a SEND works.
 */
static int phase_errors(struct ib_device *dev, const char *name)
{
	struct ib_wc rnr, flush, prot, rd, send, recv, wc[2];
	struct tqp t = {};
	struct env *e;
	int err;

	e = env_create(dev, 64, MSG, IB_ACCESS_LOCAL_WRITE | RW);
	if (IS_ERR(e))
		return PTR_ERR(e);
	err = create_rc(e, &t, 16, 16, 0, NULL);
	if (!err)
		err = connect_rc(&t, t.qp->qp_num, RW, 0);
	if (err)
		goto out;
	fill(e->tx, MSG, 0x55);
	err = post_send(t.qp, 6, IB_WR_SEND, e->tx_dma, MSG, e->mr->lkey, IB_SEND_SIGNALED, 0);
	if (!err)
		err = collect(e, &rnr, 1);
	if (err >= 0)
		err = post_send(t.qp, 7, IB_WR_SEND, e->tx_dma, MSG, e->mr->lkey,
				IB_SEND_SIGNALED, 0);
	if (!err)
		err = collect(e, &flush, 1);
	if (err >= 0)
		err = reconnect(&t, RW, 7);
	if (!err)
		err = post_send(t.qp, 8, IB_WR_SEND, e->tx_dma, MSG, e->mr->lkey ^ 0x8000,
				IB_SEND_SIGNALED, 0);
	if (!err)
		err = collect(e, &prot, 1);
	if (err >= 0)
		err = reconnect(&t, RW, 7);
	if (!err)
		err = post_rdma(t.qp, 9, IB_WR_RDMA_READ, e->tx_dma, MSG, e->mr->lkey, e->rx_dma,
				e->mr->rkey ^ 0x8000);
	if (!err)
		err = collect(e, &rd, 1);
	if (err >= 0)
		err = reconnect(&t, RW, 7);
	if (err)
		goto out;
	fill(e->tx, MSG, 0x66);
	err = post_recv(t.qp, 10, e->rx_dma, MSG, e->mr->lkey);
	if (!err)
		err = post_send(t.qp, 11, IB_WR_SEND, e->tx_dma, MSG, e->mr->lkey,
				IB_SEND_SIGNALED, 0);
	if (!err)
		err = collect(e, wc, 2);
	if (err < 0)
		goto out;
	send = wc[0].wr_id == 11 ? wc[0] : wc[1];
	recv = wc[0].wr_id == 10 ? wc[0] : wc[1];
	err = 0;
	pr_info("%s: errors: send without receive, rnr_retry 0: %s, next send %s; wrong lkey: %s; rdma read with wrong rkey: %s; after reset and reconnect: send %s, recv %s, data %s\n",
		name, status_name(rnr.status), status_name(flush.status), status_name(prot.status),
		status_name(rd.status), status_name(send.status), status_name(recv.status),
		intact(holds(e->rx, MSG, 0x66)));
out:
	if (t.qp)
		ib_destroy_qp(t.qp);
	env_destroy(e);
	return err;
}

/*
 * Polled CQs (ib_alloc_cq) and draining, as the Rust sample's polled_cq.rs: each work request
 * carries `cqe` of a `struct seen`, whose done callback counts successful, flushed and other
 * completions (the drain's own markers carry ib_core's cqe, so they are not counted).
 */
struct seen {
	struct ib_cqe cqe;
	atomic_t ok, flushed, other;
};

static void seen_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct seen *s = container_of(wc->wr_cqe, struct seen, cqe);

	if (wc->status == IB_WC_SUCCESS)
		atomic_inc(&s->ok);
	else if (wc->status == IB_WC_WR_FLUSH_ERR)
		atomic_inc(&s->flushed);
	else
		atomic_inc(&s->other);
}

static void seen_init(struct seen *s)
{
	s->cqe.done = seen_done;
	atomic_set(&s->ok, 0);
	atomic_set(&s->flushed, 0);
	atomic_set(&s->other, 0);
}

static int seen_total(struct seen *s)
{
	return atomic_read(&s->ok) + atomic_read(&s->flushed) + atomic_read(&s->other);
}

/* Waits (about 2 s at most) until done saw `n` completions. */
static bool seen_wait(struct seen *s, int n)
{
	int i;

	for (i = 0; i < 200; i++) {
		if (seen_total(s) >= n)
			return true;
		msleep(10);
	}
	return false;
}

/* Counts the last-WQE-reached events of a QP (atomic context). */
static void last_wqe_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED)
		atomic_inc((atomic_t *)ctx);
}

/*
 * An RC QP of SQ/RQ 8 on `cq` (receiving from `srq` if given, its last-WQE-reached events
 * counted in `last_wqe`), connected to itself.
 */
static struct ib_qp *polled_qp(struct ib_pd *pd, struct ib_cq *cq, struct ib_srq *srq,
			       atomic_t *last_wqe)
{
	struct ib_qp_init_attr ia = {
		.event_handler = last_wqe_event, .qp_context = last_wqe,
		.send_cq = cq, .recv_cq = cq, .srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = srq ? 0 : 8, .max_send_sge = 1,
			 .max_recv_sge = srq ? 0 : 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR, .qp_type = IB_QPT_RC,
	};
	struct tqp t;
	int err;

	t.qp = ib_create_qp(pd, &ia);
	if (IS_ERR(t.qp))
		return t.qp;
	t.state = IB_QPS_RESET;
	err = connect_rc(&t, t.qp->qp_num, IB_ACCESS_REMOTE_WRITE, 7);
	if (err) {
		ib_destroy_qp(t.qp);
		return ERR_PTR(err);
	}
	return t.qp;
}

/* Receives of 64 bytes at 1024 + 64 i on the QP (or `srq`), `wr_id` 100 + i. */
static int polled_recvs(struct ib_qp *qp, struct ib_srq *srq, struct seen *s, u64 dma, u32 lkey,
			int n)
{
	int i, err;

	for (i = 0; i < n; i++) {
		struct ib_sge sge = { .addr = dma + 1024 + i * 64, .length = 64, .lkey = lkey };
		struct ib_recv_wr wr = { .wr_cqe = &s->cqe, .sg_list = &sge, .num_sge = 1 };

		err = srq ? ib_post_srq_recv(srq, &wr, NULL) : ib_post_recv(qp, &wr, NULL);
		if (err)
			return err;
	}
	return 0;
}

/* One signalled SEND of 64 bytes from the start of the buffer. */
static int polled_send(struct ib_qp *qp, struct seen *s, u64 dma, u32 lkey)
{
	struct ib_sge sge = { .addr = dma, .length = 64, .lkey = lkey };
	struct ib_send_wr wr = {
		.wr_cqe = &s->cqe, .sg_list = &sge, .num_sge = 1, .opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(qp, &wr, NULL);
}

/*
 * A CQ polled from a workqueue (done per completion, the drain flushes the outstanding
 * receive), one polled directly (nothing until the consumer asks; the drain polls it itself),
 * and a QP on an SRQ (its drain waits for last-WQE-reached; the SRQ keeps its other receive).
 */
static int phase_polled(struct ib_device *dev, const char *name)
{
	struct ib_srq_init_attr sa = {
		.attr = { .max_wr = 8, .max_sge = 1 }, .srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq *srq = NULL;
	struct ib_qp *qp = NULL;
	struct ib_cq *cq = NULL;
	struct env *e;
	struct seen *s;
	atomic_t last_wqe;
	int err, before, untouched, processed, i;
	bool flushed_ok;

	/* The env's own CQ and tx buffer are not used: only its PD, MR and rx buffer. */
	e = env_create(dev, 1, MSG, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	if (IS_ERR(e))
		return PTR_ERR(e);
	err = -ENOMEM;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		goto out;

	atomic_set(&last_wqe, 0);
	seen_init(s);
	cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(cq)) {
		err = PTR_ERR(cq);
		cq = NULL;
		goto out;
	}
	qp = polled_qp(e->pd, cq, NULL, &last_wqe);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		qp = NULL;
		goto out;
	}
	err = polled_recvs(qp, NULL, s, e->rx_dma, e->mr->lkey, 2);
	if (!err)
		err = polled_send(qp, s, e->rx_dma, e->mr->lkey);
	if (err)
		goto out;
	before = seen_wait(s, 2) ? atomic_read(&s->ok) : 0;
	ib_drain_qp(qp);
	flushed_ok = seen_wait(s, 3);
	pr_info("%s: polled cq Workqueue (poll-ctx %d): %d done before drain; drained; then %d flushed to done%s, %d other\n",
		name, cq->poll_ctx, before, atomic_read(&s->flushed),
		flushed_ok ? "" : " (timed out)", atomic_read(&s->other));
	ib_destroy_qp(qp);
	qp = NULL;
	ib_free_cq(cq);
	cq = NULL;

	seen_init(s);
	cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq)) {
		err = PTR_ERR(cq);
		cq = NULL;
		goto out;
	}
	qp = polled_qp(e->pd, cq, NULL, &last_wqe);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		qp = NULL;
		goto out;
	}
	err = polled_recvs(qp, NULL, s, e->rx_dma, e->mr->lkey, 1);
	if (!err)
		err = polled_send(qp, s, e->rx_dma, e->mr->lkey);
	if (err)
		goto out;
	/* Give the device time to complete, then check nothing called done unasked. */
	msleep(50);
	untouched = seen_total(s);
	processed = 0;
	for (i = 0; i < 200; i++) {
		processed += ib_process_cq_direct(cq, -1);
		if (seen_total(s) >= 2)
			break;
		msleep(10);
	}
	ib_drain_qp(qp);
	pr_info("%s: direct cq: %d done before asked, process_direct %d (%d done), drained, %d flushed\n",
		name, untouched, processed, atomic_read(&s->ok), atomic_read(&s->flushed));
	ib_destroy_qp(qp);
	qp = NULL;
	ib_free_cq(cq);
	cq = NULL;

	seen_init(s);
	cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(cq)) {
		err = PTR_ERR(cq);
		cq = NULL;
		goto out;
	}
	srq = ib_create_srq(e->pd, &sa);
	if (IS_ERR(srq)) {
		err = PTR_ERR(srq);
		srq = NULL;
		goto out;
	}
	qp = polled_qp(e->pd, cq, srq, &last_wqe);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		qp = NULL;
		goto out;
	}
	err = polled_recvs(qp, srq, s, e->rx_dma, e->mr->lkey, 2);
	if (!err)
		err = polled_send(qp, s, e->rx_dma, e->mr->lkey);
	if (err)
		goto out;
	before = seen_wait(s, 2) ? atomic_read(&s->ok) : 0;
	ib_drain_qp(qp);
	/*
	 * The drain waits (60 s at most) for last-WQE-reached; it returns nothing, so the line
	 * says whether the event came. C's core completes the drain's wait before it calls this
	 * QP's handler (__ib_qp_event_handler), so the count may lag the drain's return: give the
	 * handler a second.
	 */
	for (i = 0; i < 100 && !atomic_read(&last_wqe); i++)
		msleep(10);
	pr_info("%s: polled cq, qp on an srq: %d done before drain; drained, %d last wqe reached event(s); %d flushed\n",
		name, before, atomic_read(&last_wqe), atomic_read(&s->flushed));
	err = 0;
out:
	if (qp)
		ib_destroy_qp(qp);
	if (srq)
		ib_destroy_srq(srq);
	if (cq)
		ib_free_cq(cq);
	kfree(s);
	env_destroy(e);
	return err;
}

/*
 * The device's fatal error (the Rust sample's fatal.rs): phase 1's QP is left with receives
 * posted, and a device event handler waits for IB_EVENT_DEVICE_FATAL. When it comes (process
 * context: the core's event work), it polls the QP's CQ, which gives the receives back flushed
 * (the driver completes them in software), and posts a send, which the driver refuses (-EIO).
 */
#define LEFT_POSTED 4
#define FIRST_WR_ID 100

static int post_left_receives(struct per_dev *pd)
{
	struct env *e = pd->env;
	int i, err;

	for (i = 0; i < LEFT_POSTED; i++) {
		err = post_recv(pd->qp.qp, FIRST_WR_ID + i, e->rx_dma, MSG, e->mr->lkey);
		if (err)
			return err;
	}
	return 0;
}

static void fatal_event(struct ib_event_handler *h, struct ib_event *ev)
{
	struct per_dev *pd = container_of(h, struct per_dev, fatal);
	struct env *e = pd->env;
	const char *name = dev_name(&ev->device->dev);
	struct ib_sge sge = { .addr = e->tx_dma, .length = 64, .lkey = e->mr->lkey };
	struct ib_send_wr wr = {
		.wr_id = 200, .opcode = IB_WR_SEND, .sg_list = &sge, .num_sge = 1,
	};
	const struct ib_send_wr *bad;
	u32 flushed = 0, other = 0;
	u64 first = U64_MAX, last = 0;
	struct ib_wc wc[8];
	int round, n, i, err;

	if (ev->event != IB_EVENT_DEVICE_FATAL)
		return;
	pr_info("%s: event DEVICE_FATAL on port %u\n", name, ev->element.port_num);
	/* Bounded: a CQ gives back at most what was posted. */
	for (round = 0; round < 64; round++) {
		n = ib_poll_cq(e->cq, ARRAY_SIZE(wc), wc);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (wc[i].status == IB_WC_WR_FLUSH_ERR) {
				flushed++;
				first = min(first, wc[i].wr_id);
				last = max(last, wc[i].wr_id);
			} else {
				other++;
			}
		}
	}
	err = ib_post_send(pd->qp.qp, &wr, &bad);
	if (!flushed)
		first = 0;
	pr_info("%s: after the fatal error: %u completion(s) flushed (WrFlushErr, wr_id %llu..%llu), %u other; a send fails with err %d\n",
		name, flushed, first, last, other, err);
}

static int watch_fatal(struct ib_device *dev, struct per_dev *pd)
{
	int err = post_left_receives(pd);

	if (err)
		return err;
	INIT_IB_EVENT_HANDLER(&pd->fatal, dev, fatal_event);
	ib_register_event_handler(&pd->fatal);
	pd->watching = true;
	pr_info("%s: %d receive(s) left posted on qp 0x%x for a fatal error to flush\n",
		dev_name(&dev->dev), LEFT_POSTED, pd->qp.qp->qp_num);
	return 0;
}

static void per_dev_free(struct per_dev *pd)
{
	if (pd->watching)
		ib_unregister_event_handler(&pd->fatal);
	if (pd->qp.qp)
		ib_destroy_qp(pd->qp.qp);
	env_destroy(pd->env);
	kfree(pd);
}

static int client_add(struct ib_device *dev)
{
	const char *name = dev_name(&dev->dev);
	struct per_dev *pd;
	int err;

	pd = kzalloc(sizeof(*pd), GFP_KERNEL);
	if (!pd)
		return -ENOMEM;
	err = phase1_setup(dev, pd);
	if (err) {
		pr_err("%s: setup failed: err %d\n", name, err);
		per_dev_free(pd);
		return err;
	}
	err = phase1_exercise(name, pd->env, &pd->qp);
	if (err)
		pr_err("%s: data path failed: err %d\n", name, err);
	err = phase_ud(dev, name);
	if (err)
		pr_err("%s: ud phase failed: err %d\n", name, err);
	err = phase_srq(dev, name);
	if (err)
		pr_err("%s: srq phase failed: err %d\n", name, err);
	err = phase_wrap(dev, name, false);
	if (err)
		pr_err("%s: rc wrap phase failed: err %d\n", name, err);
	err = phase_wrap(dev, name, true);
	if (err)
		pr_err("%s: inline phase failed: err %d\n", name, err);
	err = phase_atomics(dev, name);
	if (err)
		pr_err("%s: atomics phase failed: err %d\n", name, err);
	err = phase_errors(dev, name);
	if (err)
		pr_err("%s: errors phase failed: err %d\n", name, err);
	err = phase_polled(dev, name);
	if (err)
		pr_err("%s: polled cq phase failed: err %d\n", name, err);
	err = watch_fatal(dev, pd);
	if (err) {
		pr_err("%s: setup failed: err %d\n", name, err);
		per_dev_free(pd);
		return err;
	}
	ib_set_client_data(dev, &client, pd);
	return 0;
}

static void client_remove(struct ib_device *dev, void *data)
{
	struct per_dev *pd = data;
	u32 qpn = pd->qp.qp->qp_num;

	per_dev_free(pd);
	pr_info("%s: released qp 0x%x; live: pd %u cq %u qp %u mr %u\n", dev_name(&dev->dev), qpn,
		live(dev, RDMA_RESTRACK_PD), live(dev, RDMA_RESTRACK_CQ),
		live(dev, RDMA_RESTRACK_QP), live(dev, RDMA_RESTRACK_MR));
}

static struct ib_client client = {
	.name = "ib_verbs_client",
	.add = client_add,
	.remove = client_remove,
};

static int __init twin_init(void)
{
	return ib_register_client(&client);
}

static void __exit twin_exit(void)
{
	ib_unregister_client(&client);
}

module_init(twin_init);
module_exit(twin_exit);

MODULE_DESCRIPTION("C twin of the sample kernel verbs consumer (test tool)");
MODULE_LICENSE("GPL");
