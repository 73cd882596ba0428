// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_hostile: what an unprivileged process (or, for MADs, a node on the fabric) can do to the
 * stack through libibverbs, each case checking that the stack stays whole (issue "Hardening II").
 * One process, the first RDMA device, port 1, loopback.
 *
 *   events N       a CQ on a completion channel, armed and completed N times (an RC QP connected
 *                  to itself, one signalled RDMA WRITE per round), its N completion events never
 *                  read; then the QP and the CQ are destroyed. Prints `events queued N` and
 *                  `destroy_cq us T`: the destroy drops every unread event of the CQ (C's
 *                  ib_uverbs_release_ucq), which must be linear in N, with interrupts on.
 *   mad-short      a UD QP with the GSI Q_Key (0x80010000) sends management datagrams to QP1
 *                  (and, as a node without the fabric's VL15 check could, to QP0) of its own
 *                  port: first NFULL full 256-byte Get()s of a vendor class nobody serves, each
 *                  filled with a pattern past its 24-byte header, then NSHORT 24-byte Get()s
 *                  (header only). The stack answers every unserved Get with "unsupported" by
 *                  echoing the MAD (C's generate_unmatched_resp). Prints `replies full F short S`
 *                  and `short replies with bytes past the 24 sent: L`: a reply to a short MAD
 *                  may carry nothing the sender did not send (a receive buffer's earlier MAD).
 *                  The same for Get(SMInfo) to QP0 (LID-routed SMP, answered through the
 *                  driver's MAD_IFC).
 *   rereg-pd       PD1, an MR on PD1, PD2, the MR moved to PD2 (ibv_rereg_mr CHANGE_PD), then
 *                  the device closed with everything still alive: the file's cleanup must free
 *                  the MR before PD2 (C retries busy objects). Prints `rereg to PD2: ok`.
 *
 * Exit status 0 when the case ran (the scenario judges the figures), 1 on a setup failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;

static int die(const char *what, int err)
{
	printf("verbs_hostile: %s: %s\n", what, strerror(err ? err : errno));
	exit(1);
}

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void open_dev(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;

	if (!l || !l[0])
		die("no RDMA device", ENODEV);
	ctx = ibv_open_device(l[0]);
	if (!ctx)
		die("ibv_open_device", 0);
	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port", 0);
	lid = pa.lid;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", 0);
}

static int events(long n)
{
	static uint64_t buf[64];
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_wc wc;
	uint64_t t0, t1;
	long i;
	int rc;

	if (!ch || !mr)
		die("channel or MR", 0);
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	if (!cq)
		die("ibv_create_cq", 0);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("ibv_create_qp", 0);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS)))
		die("INIT", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.ah_attr.dlid = lid;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER)))
		die("RTR", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)))
		die("RTS", rc);
	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
		struct ibv_send_wr wr = { 0 }, *bad;

		if ((rc = ibv_req_notify_cq(cq, 0)))
			die("ibv_req_notify_cq", rc);
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)(buf + 8);
		wr.wr.rdma.rkey = mr->rkey;
		if ((rc = ibv_post_send(qp, &wr, &bad)))
			die("ibv_post_send", rc);
		do
			rc = ibv_poll_cq(cq, 1, &wc);
		while (rc == 0);
		if (rc < 0 || wc.status != IBV_WC_SUCCESS) {
			printf("verbs_hostile: completion %ld: %s\n", i,
			       rc < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
			return 1;
		}
	}
	/* The last completion's event may still be on its way from the interrupt. */
	usleep(200000);
	printf("events queued %ld\n", n);
	if ((rc = ibv_destroy_qp(qp)))
		die("ibv_destroy_qp", rc);
	t0 = now_us();
	rc = ibv_destroy_cq(cq);
	t1 = now_us();
	if (rc)
		die("ibv_destroy_cq", rc);
	printf("destroy_cq us %llu\n", (unsigned long long)(t1 - t0));
	ibv_dereg_mr(mr);
	ibv_destroy_comp_channel(ch);
	return 0;
}

#define NFULL 600
#define NSHORT 600
#define GRH 40
#define MAD 256

/* What came back from one MAD section. */
struct tally {
	int full, shrt, leaks, late;
};

/* One completion of the MAD QP: a send's (1), an answer (counted in `t`, 2 if it answers MAD
 * `sent` of `phase`), or a failed receive (0); a receive slot is cleared and posted again. */
static int take(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *ring, const struct ibv_wc *wc,
		uint32_t dqpn, int phase, int sent, struct tally *t)
{
	uint8_t *slot = ring + wc->wr_id * (GRH + MAD), *m = slot + GRH;
	struct ibv_sge rs = { (uintptr_t)slot, GRH + MAD, mr->lkey };
	struct ibv_recv_wr rw = { 0 }, *rbad;
	int j, dirty = 0, answer = 0, rc;

	if (wc->wr_id >> 63)
		return 1;
	if (wc->status == IBV_WC_SUCCESS) {
		answer = m[9] == dqpn + 1 && m[8] == phase &&
			 ((uint32_t)m[12] << 24 | (uint32_t)m[13] << 16 | (uint32_t)m[14] << 8 |
			  m[15]) == (uint32_t)sent;
		if (m[9] != dqpn + 1) {
			t->late++;
		} else if (m[8] == 1) {
			t->shrt++;
			for (j = 24; j < MAD; j++)
				dirty |= m[j];
			t->leaks += dirty != 0;
		} else {
			t->full++;
		}
	}
	rw.wr_id = wc->wr_id;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	memset(slot, 0, GRH + MAD);
	if ((rc = ibv_post_recv(qp, &rw, &rbad)))
		die("ibv_post_recv", rc);
	return answer ? 2 : 0;
}

/* Sends NFULL full and NSHORT short MADs of class `cls`, attribute `attr` to QP `dqpn`, and
 * counts the answers; a short answer with a non-zero byte past 24 is a leak. */
static int mad_short_to(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_ah *ah,
			struct ibv_mr *mr, uint8_t *ring, int slots, uint32_t dqpn, uint8_t cls,
			uint16_t attr, const char *what)
{
	uint8_t *out = ring + (size_t)slots * (GRH + MAD);
	struct tally t = { 0 };
	int sent = 0, outstanding = 0, phase, i;
	struct ibv_wc wc[8];

	for (phase = 0; phase < 2; phase++) {
		int count = phase ? NSHORT : NFULL;
		uint64_t deadline;

		for (i = 0; i < count; i++) {
			struct ibv_sge sge = { (uintptr_t)out, phase ? 24 : MAD, mr->lkey };
			struct ibv_send_wr wr = { 0 }, *bad;
			/* The TID's first byte says which phase a reply answers, the second which
			 * QP the MAD went to (a late answer is not counted for another). */
			uint64_t tid = ((uint64_t)phase << 56) | ((uint64_t)(dqpn + 1) << 48) |
				       (uint32_t)(sent + 1);
			int rc, n, k;

			memset(out, phase ? 0 : 0xa5, MAD);
			out[0] = 1;	/* base version */
			out[1] = cls;
			out[2] = 1;	/* class version */
			out[3] = 1;	/* Get() */
			memset(out + 4, 0, 4);
			for (k = 0; k < 8; k++)
				out[8 + k] = tid >> (56 - 8 * k);
			out[16] = attr >> 8;
			out[17] = attr & 0xff;
			memset(out + 18, 0, 6);
			wr.wr_id = 1ull << 63;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = dqpn;
			wr.wr.ud.remote_qkey = dqpn ? 0x80010000u : 0;
			if ((rc = ibv_post_send(qp, &wr, &bad)))
				die("ibv_post_send (MAD)", rc);
			sent++;
			/* QP1 answers; QP0 never sees a datagram from this QP (the fabric drops it). */
			outstanding = dqpn ? 2 : 1;
			/* One at a time: wait for the send's completion and for its answer (at most
			 * 2 s: a datagram the stack could not take, its receive queue full while it was
			 * busy, would otherwise be counted as unanswered), take what came back. */
			deadline = now_us() + 2000000;
			while (outstanding && now_us() < deadline) {
				n = ibv_poll_cq(cq, 8, wc);
				for (k = 0; k < n; k++)
					if (take(qp, mr, ring, &wc[k], dqpn, phase, sent, &t))
						outstanding--;
			}
		}
		/* Late answers: until none came for a second. */
		deadline = now_us() + 1000000;
		while (now_us() < deadline) {
			int n = ibv_poll_cq(cq, 8, wc), k;

			if (n > 0)
				deadline = now_us() + 1000000;
			for (k = 0; k < n; k++)
				take(qp, mr, ring, &wc[k], dqpn, phase, -1, &t);
		}
	}
	printf("%s: replies full %d short %d (and %d late answers to earlier MADs)\n", what, t.full,
	       t.shrt, t.late);
	printf("%s: short replies with bytes past the 24 sent: %d\n", what, t.leaks);
	return 0;
}

static int mad_short(void)
{
	const int slots = 64;
	size_t len = (size_t)(slots + 1) * (GRH + MAD);
	uint8_t *ring = aligned_alloc(4096, (len + 4095) & ~4095ul);
	struct ibv_mr *mr;
	struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_ah_attr aa = { 0 };
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	int i, rc;

	if (!ring || !cq)
		die("ring or CQ", 0);
	memset(ring, 0, len);
	mr = ibv_reg_mr(pd, ring, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr", 0);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = slots;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("ibv_create_qp (UD)", 0);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x80010000u;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)))
		die("UD INIT", rc);
	a.qp_state = IBV_QPS_RTR;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE)))
		die("UD RTR", rc);
	a.qp_state = IBV_QPS_RTS;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)))
		die("UD RTS", rc);
	for (i = 0; i < slots; i++) {
		struct ibv_sge rs = { (uintptr_t)(ring + i * (GRH + MAD)), GRH + MAD, mr->lkey };
		struct ibv_recv_wr rw = { 0 }, *rbad;

		rw.wr_id = i;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		if ((rc = ibv_post_recv(qp, &rw, &rbad)))
			die("ibv_post_recv", rc);
	}
	aa.dlid = lid;
	aa.port_num = 1;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah", 0);
	/* Vendor class 0x0a (nobody serves it): answered "unsupported" with the MAD echoed. */
	mad_short_to(qp, cq, ah, mr, ring, slots, 1, 0x0a, 0x10, "QP1 vendor class");
	/* Get(SMInfo) to QP0: answered by the driver's MAD_IFC or echoed. */
	mad_short_to(qp, cq, ah, mr, ring, slots, 0, 0x01, 0x20, "QP0 Get(SMInfo)");
	return 0;
}

static int rereg_pd(void)
{
	static uint8_t buf[8192] __attribute__((aligned(4096)));
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	int rc;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr", 0);
	pd2 = ibv_alloc_pd(ctx);
	if (!pd2)
		die("ibv_alloc_pd (PD2)", 0);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	printf("rereg to PD2: %s\n", rc ? strerror(errno) : "ok");
	/* Everything is left for the device file's close. */
	if (ibv_close_device(ctx))
		die("ibv_close_device", 0);
	printf("closed\n");
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		printf("usage: verbs_hostile events N | mad-short | rereg-pd\n");
		return 2;
	}
	open_dev();
	if (!strcmp(argv[1], "events") && argc > 2)
		return events(strtol(argv[2], NULL, 0));
	if (!strcmp(argv[1], "mad-short"))
		return mad_short();
	if (!strcmp(argv[1], "rereg-pd"))
		return rereg_pd();
	printf("verbs_hostile: unknown case %s\n", argv[1]);
	return 2;
}
