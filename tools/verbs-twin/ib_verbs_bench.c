// SPDX-License-Identifier: GPL-2.0
/*
 * The C twin of samples/ib_verbs_bench.rs: the same data-path micro-benchmark written against the
 * upstream C ib_core, so that `make bench` can compare the upstream C stack (the oracle) with the
 * Rust one on the same emulated device. A test tool, not part of the product.
 *
 * On every mlx5_* device: a PD, a CQ, an RC QP connected to itself, a DMA MR (the PD's local
 * DMA lkey) and two coherent buffers; then, timed with ktime in nanoseconds, exactly what the
 * Rust module times (post_send of 1 and of 16 WRs, poll per CQE with room for 1 and 16, SEND
 * message rate at 64 and 4096 bytes), printed as `# bench <name> <value>` lines. Everything is
 * freed before the client's add returns.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/dma-mapping.h>
#include <rdma/ib_verbs.h>

#include "twin_common.h"

/*
 * Instruction-count markers (tools/bench/insn_marks.c, `make bench`): an 8-byte no-op,
 * `nopl MARK(%rax,%rax,1)`, with MARK = 0x52444d00 | end << 7 | id. The ids and what each
 * interval holds are the Rust module's (samples/ib_verbs_bench.rs, `mod mark`).
 */
#define MARK_POST1 1
#define MARK_POST16 2
#define MARK_POLL1 3
#define MARK_POLL16 4
#define MARK(code) asm volatile(".byte 0x0f, 0x1f, 0x84, 0x00\n\t.long %c0" : : "i"(code) : "memory")
#define MARK_BEGIN(id) MARK(0x52444d00 | (id))
#define MARK_END(id) MARK(0x52444d80 | (id))

static unsigned int rounds = 64;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "Rounds of each per-call measurement (1 to 4096)");
static unsigned int rate_ms = 1000;
module_param(rate_ms, uint, 0444);
MODULE_PARM_DESC(rate_ms, "Milliseconds of each message-rate measurement (1 to 10000)");
static unsigned int window = 32;
module_param(window, uint, 0444);
MODULE_PARM_DESC(window, "Outstanding SENDs in the message-rate measurement (1 to 64)");

/* Work requests per timed batch (and the signalling interval). */
#define BATCH 16
#define SQ 64
#define RQ 256
#define CQE 1024
#define MSG 4096
/* Receives kept posted in the message-rate loop. */
#define RATE_RX 128
#define DRAIN_TIMEOUT_NS 5000000000LL

/* The objects and the work arrays (on the heap: too large for the kernel stack together). */
struct bench {
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct ib_sge tx, tx64, rx;
	struct ib_wc wc[BATCH];
	struct ib_send_wr wrs[BATCH];
	struct ib_recv_wr rwrs[BATCH];
};

static int cmp_s64(const void *a, const void *b)
{
	s64 x = *(const s64 *)a, y = *(const s64 *)b;

	return x < y ? -1 : x > y;
}

static s64 median(s64 *v, size_t n)
{
	if (!n)
		return 0;
	sort(v, n, sizeof(*v), cmp_s64, NULL);
	return v[n / 2];
}

/* Posts `n` receives of the whole rx buffer, up to BATCH per call. */
static int post_recvs(struct bench *b, int n)
{
	struct ib_recv_wr *wrs = b->rwrs;
	int i, k, err;

	for (i = 0; i < BATCH; i++)
		wrs[i] = (struct ib_recv_wr){ .wr_id = 0, .sg_list = &b->rx, .num_sge = 1,
					      .next = i + 1 < BATCH ? &wrs[i + 1] : NULL };
	while (n > 0) {
		k = min(n, BATCH);
		wrs[k - 1].next = NULL;
		err = ib_post_recv(b->qp, wrs, NULL);
		wrs[k - 1].next = k < BATCH ? &wrs[k] : NULL;
		if (err)
			return err;
		n -= k;
	}
	return 0;
}

static void send_wr(struct ib_send_wr *wr, struct ib_sge *sg, bool signaled)
{
	*wr = (struct ib_send_wr){ .wr_id = 1, .opcode = IB_WR_SEND, .sg_list = sg, .num_sge = 1,
				   .send_flags = signaled ? IB_SEND_SIGNALED : 0 };
}

/* Polls until `n` completions came, all successful. */
static int drain(struct bench *b, int n)
{
	struct ib_wc *wc = b->wc;
	ktime_t t0 = ktime_get();
	int got = 0, k, i;

	while (got < n) {
		k = ib_poll_cq(b->cq, BATCH, wc);
		if (k < 0)
			return k;
		for (i = 0; i < k; i++)
			if (wc[i].status != IB_WC_SUCCESS)
				return -EIO;
		got += k;
		if (!k && ktime_to_ns(ktime_sub(ktime_get(), t0)) > DRAIN_TIMEOUT_NS)
			return -ETIMEDOUT;
	}
	return 0;
}

static int post1(struct bench *b, int n, s64 *samples, s64 *out)
{
	struct ib_send_wr wr;
	ktime_t t0;
	s64 dt;
	int r, i, err;

	for (r = 0; r < n; r++) {
		err = post_recvs(b, BATCH);
		if (err)
			return err;
		t0 = ktime_get();
		for (i = 0; i < BATCH; i++) {
			send_wr(&wr, &b->tx64, i == BATCH - 1);
			MARK_BEGIN(MARK_POST1);
			err = ib_post_send(b->qp, &wr, NULL);
			MARK_END(MARK_POST1);
			if (err)
				return err;
		}
		dt = ktime_to_ns(ktime_sub(ktime_get(), t0));
		err = drain(b, BATCH + 1);
		if (err)
			return err;
		samples[r] = dt / BATCH;
	}
	*out = median(samples, n);
	return 0;
}

static void send_list(struct ib_send_wr *wrs, struct ib_sge *sg, bool all_signaled)
{
	int i;

	for (i = 0; i < BATCH; i++) {
		send_wr(&wrs[i], sg, all_signaled || i == BATCH - 1);
		wrs[i].next = i + 1 < BATCH ? &wrs[i + 1] : NULL;
	}
}

static int post16(struct bench *b, int n, s64 *samples, s64 *out)
{
	struct ib_send_wr *wrs = b->wrs;
	ktime_t t0;
	s64 dt;
	int r, err;

	send_list(wrs, &b->tx64, false);
	for (r = 0; r < n; r++) {
		err = post_recvs(b, BATCH);
		if (err)
			return err;
		t0 = ktime_get();
		MARK_BEGIN(MARK_POST16);
		err = ib_post_send(b->qp, wrs, NULL);
		MARK_END(MARK_POST16);
		dt = ktime_to_ns(ktime_sub(ktime_get(), t0));
		if (err)
			return err;
		err = drain(b, BATCH + 1);
		if (err)
			return err;
		samples[r] = dt;
	}
	*out = median(samples, n);
	return 0;
}

/* Per CQE, polling `room` at a time the 32 completions of 16 signalled SENDs in the CQ. */
static int poll_bench(struct bench *b, int n, int room, s64 *samples, s64 *out, int *dropped)
{
	struct ib_send_wr *wrs = b->wrs;
	struct ib_wc *wc = b->wc;
	int r, k, i, got, ns = 0, err;
	bool ok;
	ktime_t t0;
	s64 dt;

	send_list(wrs, &b->tx64, true);
	room = clamp(room, 1, BATCH);
	for (r = 0; r < n; r++) {
		err = post_recvs(b, BATCH);
		if (err)
			return err;
		err = ib_post_send(b->qp, wrs, NULL);
		if (err)
			return err;
		/* Let the device finish: the timed polls should find every completion there. */
		fsleep(2000);
		got = 0;
		ok = true;
		t0 = ktime_get();
		if (room == 1)
			MARK_BEGIN(MARK_POLL1);
		else
			MARK_BEGIN(MARK_POLL16);
		for (;;) {
			k = ib_poll_cq(b->cq, room, wc);
			if (k <= 0)
				break;
			for (i = 0; i < k; i++)
				ok &= wc[i].status == IB_WC_SUCCESS;
			got += k;
		}
		if (room == 1)
			MARK_END(MARK_POLL1);
		else
			MARK_END(MARK_POLL16);
		dt = ktime_to_ns(ktime_sub(ktime_get(), t0));
		if (k < 0)
			return k;
		if (!ok)
			return -EIO;
		if (got < 2 * BATCH) {
			(*dropped)++;
			err = drain(b, 2 * BATCH - got);
			if (err)
				return err;
		} else {
			samples[ns++] = dt / got;
		}
	}
	*out = median(samples, ns);
	return 0;
}

/* Messages per second of `sg`'s size for `ms` milliseconds, at most `win` outstanding. */
static int rate(struct bench *b, struct ib_sge *sg, unsigned int ms, int win, s64 *out)
{
	struct ib_send_wr wr;
	struct ib_wc *wc = b->wc;
	int outstanding = 0, received = 0, recvs, k, i, err;
	s64 done = 0, elapsed, limit = (s64)ms * NSEC_PER_MSEC;
	ktime_t t0;

	send_wr(&wr, sg, true);
	err = post_recvs(b, RATE_RX);
	if (err)
		return err;
	t0 = ktime_get();
	for (;;) {
		elapsed = ktime_to_ns(ktime_sub(ktime_get(), t0));
		if (elapsed >= limit)
			break;
		while (outstanding < win) {
			err = ib_post_send(b->qp, &wr, NULL);
			if (err)
				return err;
			outstanding++;
		}
		k = ib_poll_cq(b->cq, BATCH, wc);
		if (k < 0)
			return k;
		recvs = 0;
		for (i = 0; i < k; i++) {
			if (wc[i].status != IB_WC_SUCCESS)
				return -EIO;
			if (wc[i].opcode == IB_WC_RECV) {
				if (wc[i].byte_len != sg->length)
					return -EIO;
				recvs++;
			} else {
				if (outstanding > 0)
					outstanding--;
				done++;
			}
		}
		if (recvs) {
			received += recvs;
			err = post_recvs(b, recvs);
			if (err)
				return err;
		}
	}
	/* What is still in flight: the outstanding SENDs and the receives not yet seen. */
	err = drain(b, outstanding + max_t(int, (int)done + outstanding - received, 0));
	if (err)
		return err;
	*out = div64_s64(done * NSEC_PER_SEC, max_t(s64, elapsed, 1));
	return 0;
}

/* lock_ns: ns per spin_lock_irqsave/spin_unlock_irqrestore of an uncontended lock (what
 * mlx5_ib's post and poll paths take), median over `n` rounds of BATCH pairs. */
static DEFINE_SPINLOCK(bench_lock);

static s64 lock_cost(int n, s64 *samples)
{
	unsigned long flags;
	u64 counter = 0;
	ktime_t t0;
	int r, i;

	for (r = 0; r < n; r++) {
		t0 = ktime_get();
		for (i = 0; i < BATCH; i++) {
			spin_lock_irqsave(&bench_lock, flags);
			counter++;
			spin_unlock_irqrestore(&bench_lock, flags);
		}
		samples[r] = ktime_to_ns(ktime_sub(ktime_get(), t0)) / BATCH;
	}
	WRITE_ONCE(counter, counter);
	return median(samples, n);
}

/* RTS, looped back to itself through the port's LID. */
static int connect_rc(struct ib_qp *qp)
{
	struct ib_port_attr pa;
	int err;

	err = ib_query_port(qp->device, 1, &pa);
	return err ?: twin_connect_rc(qp, pa.lid, qp->qp_num, 0, 7, NULL);
}

static int measure(struct ib_device *dev, struct bench *b, const char *name)
{
	int n = clamp(rounds, 1U, 4096U), win = clamp(window, 1U, (unsigned int)SQ);
	unsigned int ms = clamp(rate_ms, 1U, 10000U);
	s64 post1_ns, post16_ns, poll1_ns, poll16_ns, rate64, rate4096, lock_ns = 0;
	int dropped = 0, err;
	s64 *samples;

	samples = kcalloc(n, sizeof(*samples), GFP_KERNEL);
	if (!samples)
		return -ENOMEM;
	pr_info("%s: bench: rounds %d, rate %u ms, window %d; qp 0x%x\n", name, n, ms, win,
		b->qp->qp_num);
	err = post1(b, n, samples, &post1_ns);
	if (!err)
		err = post16(b, n, samples, &post16_ns);
	if (!err)
		err = poll_bench(b, n, 1, samples, &poll1_ns, &dropped);
	if (!err)
		err = poll_bench(b, n, BATCH, samples, &poll16_ns, &dropped);
	if (!err)
		err = rate(b, &b->tx64, ms, win, &rate64);
	if (!err)
		err = rate(b, &b->tx, ms, win, &rate4096);
	if (!err)
		lock_ns = lock_cost(n, samples);
	kfree(samples);
	if (err)
		return err;
	pr_info("%s: # bench post1_ns %lld\n", name, post1_ns);
	pr_info("%s: # bench post16_ns %lld\n", name, post16_ns);
	pr_info("%s: # bench poll1_ns %lld\n", name, poll1_ns);
	pr_info("%s: # bench poll16_ns %lld\n", name, poll16_ns);
	pr_info("%s: # bench rate64 %lld\n", name, rate64);
	pr_info("%s: # bench rate4096 %lld\n", name, rate4096);
	pr_info("%s: # bench lock_ns %lld\n", name, lock_ns);
	pr_info("%s: bench done (%d poll round(s) dropped: completions late)\n", name, dropped);
	return 0;
}

static int run(struct ib_device *dev, const char *name)
{
	struct ib_cq_init_attr ca = { .cqe = CQE };
	struct ib_qp_init_attr ia = {
		.cap = { .max_send_wr = SQ, .max_recv_wr = RQ, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR, .qp_type = IB_QPT_RC,
	};
	struct bench *b;
	struct ib_pd *pd;
	dma_addr_t tx_dma, rx_dma;
	void *tx, *rx;
	int err;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd)) {
		err = PTR_ERR(pd);
		goto out_b;
	}
	err = -ENOMEM;
	tx = dma_alloc_coherent(dev->dma_device, MSG, &tx_dma, GFP_KERNEL);
	if (!tx)
		goto out_pd;
	rx = dma_alloc_coherent(dev->dma_device, MSG, &rx_dma, GFP_KERNEL);
	if (!rx)
		goto out_tx;
	b->cq = ib_create_cq(dev, NULL, NULL, NULL, &ca);
	if (IS_ERR(b->cq)) {
		err = PTR_ERR(b->cq);
		goto out_rx;
	}
	ia.send_cq = b->cq;
	ia.recv_cq = b->cq;
	b->qp = ib_create_qp(pd, &ia);
	if (IS_ERR(b->qp)) {
		err = PTR_ERR(b->qp);
		goto out_cq;
	}
	err = connect_rc(b->qp);
	if (err)
		goto out_qp;
	b->tx = (struct ib_sge){ .addr = tx_dma, .length = MSG, .lkey = pd->local_dma_lkey };
	b->tx64 = (struct ib_sge){ .addr = tx_dma, .length = 64, .lkey = pd->local_dma_lkey };
	b->rx = (struct ib_sge){ .addr = rx_dma, .length = MSG, .lkey = pd->local_dma_lkey };
	err = measure(dev, b, name);
out_qp:
	ib_destroy_qp(b->qp);
out_cq:
	ib_destroy_cq(b->cq);
out_rx:
	dma_free_coherent(dev->dma_device, MSG, rx, rx_dma);
out_tx:
	dma_free_coherent(dev->dma_device, MSG, tx, tx_dma);
out_pd:
	ib_dealloc_pd(pd);
out_b:
	kfree(b);
	return err;
}

static int bench_add(struct ib_device *dev)
{
	const char *name = dev_name(&dev->dev);
	int err;

	if (strncmp(name, "mlx5_", 5))
		return 0;
	err = run(dev, name);
	if (err)
		pr_err("%s: bench failed: err %d\n", name, err);
	return 0;
}

static void bench_remove(struct ib_device *dev, void *data)
{
}

static struct ib_client client = {
	.name = "ib_verbs_bench",
	.add = bench_add,
	.remove = bench_remove,
};

static int __init bench_init(void)
{
	return ib_register_client(&client);
}

static void __exit bench_exit(void)
{
	ib_unregister_client(&client);
}

module_init(bench_init);
module_exit(bench_exit);

MODULE_DESCRIPTION("C twin of the kernel verbs data-path micro-benchmark (test tool)");
MODULE_LICENSE("GPL");
