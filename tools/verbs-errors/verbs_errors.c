// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_errors: drives an RDMA device into the error completions an RC QP must report, and
 * checks the statuses, the flushes that follow and the QP states. One process, loopback: both QPs
 * of every case sit on the same port and are connected to each other by LID and QPN.
 *
 * Cases, each on a fresh pair of RC QPs (requester and responder, each with its own send and
 * receive CQ):
 *   good-send          SEND 4096 bytes, received and compared
 *   good-write         RDMA WRITE 4096 bytes, compared at the target
 *   good-read          RDMA READ 4096 bytes, compared locally
 *   bad-lkey           SEND with an lkey that does not exist, then two valid SENDs:
 *                      LOC_PROT_ERR, WR_FLUSH_ERR, WR_FLUSH_ERR; requester in ERR
 *   bad-rkey           RDMA WRITE with an rkey that is no MR, then two valid WRITEs:
 *                      REM_ACCESS_ERR, WR_FLUSH_ERR, WR_FLUSH_ERR; requester in ERR
 *   recv-too-small     SEND 4096 bytes into a 64-byte receive: LOC_LEN_ERR on the responder
 *                      (its next receive flushed), REM_INV_REQ_ERR on the requester; both in ERR
 *   write-past-mr-end  RDMA WRITE 4096 bytes at offset 1024 of a 4096-byte MR, then two valid
 *                      WRITEs: REM_ACCESS_ERR and flushes; requester in ERR; no byte written
 *   large-mr           RDMA WRITE and READ 4096 bytes at 60 MiB into a 64 MiB MR (its page list
 *                      is larger than a small command's mailboxes), data verified
 *   cq-resize          the requester's send CQ resized to 64 (a size past the device's refused
 *                      with EINVAL), then SENDs complete on it
 *   rereg-mr           the target MR moved to another buffer (IBV_REREG_MR_CHANGE_TRANSLATION):
 *                      an RDMA WRITE with its key lands there, not in the old one
 *   rereg-access       the target MR's rights cut to local write (IBV_REREG_MR_CHANGE_ACCESS):
 *                      an RDMA WRITE is REM_ACCESS_ERR, requester in ERR, nothing written
 *   memlock            a child without CAP_IPC_LOCK and with RLIMIT_MEMLOCK 64 KiB registers
 *                      32 KiB, then 1 MiB more: ENOMEM (pinned memory is charged to the
 *                      process, as C's ib_umem_get charges it); once the first is deregistered,
 *                      32 KiB again succeeds
 *   grh-path           both QPs connected with a GRH (the port's GID 0, hop limit 64, traffic
 *                      class 0x20, flow label 0x12345) and SL 2: ibv_query_qp reads the path
 *                      back as set, and a SEND goes through
 *   srq-limit          the responder receives from an SRQ: its sizes as made, a resize refused
 *                      (EINVAL), a limit at or past its size refused (EINVAL), a limit of 4 armed
 *                      with 8 receives posted; 5 SENDs consume 5 of them and the async event
 *                      SRQ_LIMIT_REACHED names the SRQ; the limit reads 0 afterwards; the SRQ
 *                      cannot be destroyed while its QP exists (EBUSY)
 *
 * Prints one line per completion and per QP state, then `PASS <case>` or
 * `FAIL <case>: <reasons>`. Exits 0 only if every case passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG_SIZE 4096
#define SMALL_RECV 64
#define POLL_TIMEOUT_MS 5000 /* for each expected completion */
#define QUIET_MS 200         /* no further completion may arrive in this time */
#define CQ_DEPTH 16
#define QP_DEPTH 8
#define MAX_BUFS 4
#define SRQ_DEPTH 16
#define SRQ_POSTED 8
#define SRQ_LIMIT 4

struct device {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint8_t port;
	uint16_t lid;
	int qp_access; /* remote access the QPs allow */
	union ibv_gid gid0; /* the port's GID 0 */
};

/* One side of a connection: a QP with its own send and receive CQ. */
struct endpoint {
	const char *role;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
};

/* Memory for a case, `len` bytes, of which the first `mr_len` are registered. */
struct buffer {
	uint8_t *mem;
	size_t len;
	struct ibv_mr *mr;
};

struct test_case {
	const char *name;
	struct device *dev;
	struct endpoint req;
	struct endpoint resp;
	/* The SRQ the responder receives from (cases that ask for one). */
	struct ibv_srq *srq;
	/* Connect with a GRH and SL 2 (cases that ask for it). */
	int grh;
	struct buffer bufs[MAX_BUFS];
	int nbufs;
	int failed;
	char why[2048];
};

/* A completion a CQ must deliver next; opcode and length count only on success. */
struct want {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	int check_len;
	uint32_t byte_len;
};

static const char *status_name(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
	case IBV_WC_LOC_LEN_ERR: return "IBV_WC_LOC_LEN_ERR";
	case IBV_WC_LOC_QP_OP_ERR: return "IBV_WC_LOC_QP_OP_ERR";
	case IBV_WC_LOC_EEC_OP_ERR: return "IBV_WC_LOC_EEC_OP_ERR";
	case IBV_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
	case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
	case IBV_WC_MW_BIND_ERR: return "IBV_WC_MW_BIND_ERR";
	case IBV_WC_BAD_RESP_ERR: return "IBV_WC_BAD_RESP_ERR";
	case IBV_WC_LOC_ACCESS_ERR: return "IBV_WC_LOC_ACCESS_ERR";
	case IBV_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
	case IBV_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
	case IBV_WC_REM_OP_ERR: return "IBV_WC_REM_OP_ERR";
	case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
	case IBV_WC_LOC_RDD_VIOL_ERR: return "IBV_WC_LOC_RDD_VIOL_ERR";
	case IBV_WC_REM_INV_RD_REQ_ERR: return "IBV_WC_REM_INV_RD_REQ_ERR";
	case IBV_WC_REM_ABORT_ERR: return "IBV_WC_REM_ABORT_ERR";
	case IBV_WC_INV_EECN_ERR: return "IBV_WC_INV_EECN_ERR";
	case IBV_WC_INV_EEC_STATE_ERR: return "IBV_WC_INV_EEC_STATE_ERR";
	case IBV_WC_FATAL_ERR: return "IBV_WC_FATAL_ERR";
	case IBV_WC_RESP_TIMEOUT_ERR: return "IBV_WC_RESP_TIMEOUT_ERR";
	case IBV_WC_GENERAL_ERR: return "IBV_WC_GENERAL_ERR";
	default: return "IBV_WC_(unknown)";
	}
}

static const char *opcode_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "(other)";
	}
}

static const char *state_name(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "UNKNOWN";
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Prints a line about the case. */
static void note(struct test_case *tc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct test_case *tc, const char *fmt, ...)
{
	va_list ap;

	printf("case %s: ", tc->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Records a reason the case failed; the reasons are joined on the FAIL line. */
static void fail(struct test_case *tc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct test_case *tc, const char *fmt, ...)
{
	size_t used = strlen(tc->why);
	va_list ap;

	if (used && used + 2 < sizeof(tc->why)) {
		strcat(tc->why, "; ");
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(tc->why + used, sizeof(tc->why) - used, fmt, ap);
	va_end(ap);
	tc->failed = 1;
}

static void fill_pattern(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

/* Index of the first byte that differs, or -1. */
static long first_difference(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

/* Index of the first non-zero byte, or -1. */
static long first_nonzero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return (long)i;
	return -1;
}

/*
 * Allocates `len` bytes (zeroed, or filled with a pattern when seed != 0) and registers the first
 * `mr_len` of them with `access`.
 */
static struct buffer *add_buffer(struct test_case *tc, size_t len, size_t mr_len, int access,
				 unsigned int seed)
{
	struct buffer *b;
	void *mem;

	if (tc->nbufs == MAX_BUFS) {
		fail(tc, "internal: more than %d buffers", MAX_BUFS);
		return NULL;
	}
	if (posix_memalign(&mem, 4096, len)) {
		fail(tc, "cannot allocate %zu bytes", len);
		return NULL;
	}
	memset(mem, 0, len);
	if (seed)
		fill_pattern(mem, mr_len, seed);
	b = &tc->bufs[tc->nbufs];
	b->mem = mem;
	b->len = len;
	b->mr = ibv_reg_mr(tc->dev->pd, mem, mr_len, access);
	if (!b->mr) {
		fail(tc, "ibv_reg_mr(%zu bytes): %s", mr_len, strerror(errno));
		free(mem);
		return NULL;
	}
	tc->nbufs++;
	return b;
}

/* A key no MR of this case has: the MR index bits of a real key, scrambled. */
static uint32_t bogus_key(const struct test_case *tc, uint32_t real)
{
	uint32_t k = real ^ 0x00c0de00;

	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; i < tc->nbufs; i++) {
			if (tc->bufs[i].mr->lkey == k || tc->bufs[i].mr->rkey == k) {
				k += 0x100;
				again = 1;
			}
		}
	}
	return k;
}

static int create_endpoint(struct test_case *tc, struct endpoint *ep, const char *role)
{
	struct ibv_qp_init_attr attr;

	ep->role = role;
	ep->scq = ibv_create_cq(tc->dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!ep->scq) {
		fail(tc, "%s: ibv_create_cq: %s", role, strerror(errno));
		return -1;
	}
	ep->rcq = ibv_create_cq(tc->dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!ep->rcq) {
		fail(tc, "%s: ibv_create_cq: %s", role, strerror(errno));
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = ep->scq;
	attr.recv_cq = ep->rcq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = QP_DEPTH;
	attr.cap.max_recv_wr = QP_DEPTH;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (tc->srq && ep == &tc->resp) {
		attr.srq = tc->srq;
		attr.cap.max_recv_wr = 0;
		attr.cap.max_recv_sge = 0;
	}
	ep->qp = ibv_create_qp(tc->dev->pd, &attr);
	if (!ep->qp) {
		fail(tc, "%s: ibv_create_qp: %s", role, strerror(errno));
		return -1;
	}
	return 0;
}

/* RST -> INIT -> RTR -> RTS, with `ep`'s QP connected to `peer_qpn` on this port's LID. */
static int connect_endpoint(struct test_case *tc, struct endpoint *ep, uint32_t peer_qpn)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = tc->dev->port;
	a.qp_access_flags = tc->dev->qp_access;
	rc = ibv_modify_qp(ep->qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc) {
		fail(tc, "%s: ibv_modify_qp(INIT): %s", ep->role, strerror(rc));
		return -1;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 0;
	a.ah_attr.dlid = tc->dev->lid;
	a.ah_attr.sl = 0;
	if (tc->grh) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = tc->dev->gid0;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = 0x20;
		a.ah_attr.grh.flow_label = 0x12345;
		a.ah_attr.sl = 2;
	}
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = tc->dev->port;
	rc = ibv_modify_qp(ep->qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc) {
		fail(tc, "%s: ibv_modify_qp(RTR): %s", ep->role, strerror(rc));
		return -1;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(ep->qp, &a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc) {
		fail(tc, "%s: ibv_modify_qp(RTS): %s", ep->role, strerror(rc));
		return -1;
	}
	return 0;
}

static int setup_case(struct test_case *tc)
{
	if (create_endpoint(tc, &tc->req, "requester") || create_endpoint(tc, &tc->resp, "responder"))
		return -1;
	if (connect_endpoint(tc, &tc->req, tc->resp.qp->qp_num) ||
	    connect_endpoint(tc, &tc->resp, tc->req.qp->qp_num))
		return -1;
	note(tc, "requester QP %#x, responder QP %#x, LID %#x, port %u", tc->req.qp->qp_num,
	     tc->resp.qp->qp_num, tc->dev->lid, tc->dev->port);
	return 0;
}

static void destroy_endpoint(struct test_case *tc, struct endpoint *ep)
{
	int rc;

	if (ep->qp && (rc = ibv_destroy_qp(ep->qp)))
		fail(tc, "%s: ibv_destroy_qp: %s", ep->role, strerror(rc));
	if (ep->scq && (rc = ibv_destroy_cq(ep->scq)))
		fail(tc, "%s: ibv_destroy_cq: %s", ep->role, strerror(rc));
	if (ep->rcq && (rc = ibv_destroy_cq(ep->rcq)))
		fail(tc, "%s: ibv_destroy_cq: %s", ep->role, strerror(rc));
	ep->qp = NULL;
	ep->scq = NULL;
	ep->rcq = NULL;
}

static void teardown_case(struct test_case *tc)
{
	int rc;

	destroy_endpoint(tc, &tc->req);
	destroy_endpoint(tc, &tc->resp);
	if (tc->srq && (rc = ibv_destroy_srq(tc->srq)))
		fail(tc, "ibv_destroy_srq: %s", strerror(rc));
	tc->srq = NULL;
	for (int i = 0; i < tc->nbufs; i++) {
		if ((rc = ibv_dereg_mr(tc->bufs[i].mr)))
			fail(tc, "ibv_dereg_mr: %s", strerror(rc));
		free(tc->bufs[i].mem);
	}
	tc->nbufs = 0;
}

static int post_recv(struct test_case *tc, uint64_t wr_id, struct buffer *b, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)b->mem, .length = len, .lkey = b->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(tc->resp.qp, &wr, &bad);

	if (rc)
		fail(tc, "ibv_post_recv(wr_id %llu): %s", (unsigned long long)wr_id, strerror(rc));
	return rc ? -1 : 0;
}

/* A signalled send-queue WR of `len` bytes from `local`; rkey/raddr for RDMA. */
struct send_req {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	struct buffer *local;
	uint32_t len;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
};

/* Posts the WRs as one list (one doorbell), so they are queued together whatever happens. */
static int post_sends(struct test_case *tc, const struct send_req *r, int n)
{
	struct ibv_sge sge[QP_DEPTH];
	struct ibv_send_wr wr[QP_DEPTH];
	struct ibv_send_wr *bad = NULL;
	int rc;

	if (n > QP_DEPTH) {
		fail(tc, "internal: more than %d WRs", QP_DEPTH);
		return -1;
	}
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)r[i].local->mem;
		sge[i].length = r[i].len;
		sge[i].lkey = r[i].lkey;
		wr[i].wr_id = r[i].wr_id;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = r[i].opcode;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = r[i].raddr;
		wr[i].wr.rdma.rkey = r[i].rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	rc = ibv_post_send(tc->req.qp, wr, &bad);
	if (rc) {
		fail(tc, "ibv_post_send(wr_id %llu): %s",
		     (unsigned long long)(bad ? bad->wr_id : 0), strerror(rc));
		return -1;
	}
	return 0;
}

static void print_wc(struct test_case *tc, const char *what, const struct ibv_wc *wc)
{
	if (wc->status == IBV_WC_SUCCESS)
		note(tc, "%s wc status=%s opcode=%s wr_id=%llu byte_len=%u", what,
		     ibv_wc_status_str(wc->status), opcode_name(wc->opcode),
		     (unsigned long long)wc->wr_id, wc->byte_len);
	else
		/* On error only wr_id, status, qp_num and vendor_err are defined. */
		note(tc, "%s wc status=%s opcode=- wr_id=%llu vendor_err=%#x", what,
		     ibv_wc_status_str(wc->status), (unsigned long long)wc->wr_id, wc->vendor_err);
}

/* Polls one completion within `ms`; 1 if one came, 0 if none, -1 on a poll error. */
static int poll_one(struct test_case *tc, struct ibv_cq *cq, struct ibv_wc *wc, unsigned int ms)
{
	uint64_t deadline = now_ms() + ms;

	for (;;) {
		int n;

		memset(wc, 0, sizeof(*wc));
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0) {
			fail(tc, "ibv_poll_cq failed (%d)", n);
			return -1;
		}
		if (n == 1)
			return 1;
		if (now_ms() >= deadline)
			return 0;
		usleep(1000);
	}
}

/*
 * Expects exactly the completions `w[0..n)` on `ep`'s send (send != 0) or receive CQ, in order,
 * each within POLL_TIMEOUT_MS, and nothing more within QUIET_MS.
 */
static void expect_wcs(struct test_case *tc, struct endpoint *ep, int send, const struct want *w,
		       int n)
{
	struct ibv_cq *cq = send ? ep->scq : ep->rcq;
	char what[64];
	struct ibv_wc wc;
	int got;

	snprintf(what, sizeof(what), "%s %s-cq", ep->role, send ? "send" : "recv");
	for (int i = 0; i < n; i++) {
		got = poll_one(tc, cq, &wc, POLL_TIMEOUT_MS);
		if (got < 0)
			return;
		if (!got) {
			note(tc, "%s: no completion within %d ms", what, POLL_TIMEOUT_MS);
			fail(tc, "%s: expected %s wr_id=%llu got no completion within %d ms", what,
			     status_name(w[i].status), (unsigned long long)w[i].wr_id, POLL_TIMEOUT_MS);
			return;
		}
		print_wc(tc, what, &wc);
		if (wc.status != w[i].status || wc.wr_id != w[i].wr_id) {
			fail(tc, "%s: expected %s wr_id=%llu got %s wr_id=%llu", what,
			     status_name(w[i].status), (unsigned long long)w[i].wr_id,
			     status_name(wc.status), (unsigned long long)wc.wr_id);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			continue;
		if (wc.opcode != w[i].opcode)
			fail(tc, "%s: wr_id=%llu expected opcode %s got %s", what,
			     (unsigned long long)wc.wr_id, opcode_name(w[i].opcode),
			     opcode_name(wc.opcode));
		if (w[i].check_len && wc.byte_len != w[i].byte_len)
			fail(tc, "%s: wr_id=%llu expected byte_len %u got %u", what,
			     (unsigned long long)wc.wr_id, w[i].byte_len, wc.byte_len);
	}
	while ((got = poll_one(tc, cq, &wc, QUIET_MS)) == 1) {
		print_wc(tc, what, &wc);
		fail(tc, "%s: expected no further completion got %s wr_id=%llu", what,
		     status_name(wc.status), (unsigned long long)wc.wr_id);
	}
}

/* Prints whatever completions arrive on `ep`'s receive CQ within QUIET_MS, judging none. */
static void show_recv_wcs(struct test_case *tc, struct endpoint *ep)
{
	char what[64];
	struct ibv_wc wc;

	snprintf(what, sizeof(what), "%s recv-cq (not judged)", ep->role);
	while (poll_one(tc, ep->rcq, &wc, QUIET_MS) == 1)
		print_wc(tc, what, &wc);
}

static int query_state(struct test_case *tc, struct endpoint *ep, enum ibv_qp_state *state)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int rc = ibv_query_qp(ep->qp, &a, IBV_QP_STATE, &init);

	if (rc) {
		note(tc, "%s qp state: ibv_query_qp: %s", ep->role, strerror(rc));
		fail(tc, "%s: ibv_query_qp: %s", ep->role, strerror(rc));
		return -1;
	}
	*state = a.qp_state;
	return 0;
}

static void expect_state(struct test_case *tc, struct endpoint *ep, enum ibv_qp_state want)
{
	enum ibv_qp_state s;

	if (query_state(tc, ep, &s))
		return;
	note(tc, "%s qp state=%s", ep->role, state_name(s));
	if (s != want)
		fail(tc, "%s QP: expected state %s got %s", ep->role, state_name(want), state_name(s));
}

static void show_state(struct test_case *tc, struct endpoint *ep)
{
	enum ibv_qp_state s;

	if (!query_state(tc, ep, &s))
		note(tc, "%s qp state=%s (not judged)", ep->role, state_name(s));
}

static void expect_same(struct test_case *tc, const char *what, const uint8_t *got,
			const uint8_t *want, size_t len)
{
	long at = first_difference(got, want, len);

	if (at >= 0)
		fail(tc, "%s: expected byte %ld = %#04x got %#04x", what, at, want[at], got[at]);
	else
		note(tc, "%s: %zu bytes verified", what, len);
}

static void expect_zero(struct test_case *tc, const char *what, const uint8_t *p, size_t len)
{
	long at = first_nonzero(p, len);

	if (at >= 0)
		fail(tc, "%s: expected untouched (zero) got byte %ld = %#04x", what, at, p[at]);
	else
		note(tc, "%s: untouched", what);
}

#define LOCAL IBV_ACCESS_LOCAL_WRITE
#define REMOTE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static void case_good_send(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x11);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0);

	if (!src || !dst || post_recv(tc, 100, dst, MSG_SIZE))
		return;
	struct send_req s = { 1, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 };
	if (post_sends(tc, &s, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_SEND, 0, 0 }, 1);
	expect_wcs(tc, &tc->resp, 0, &(struct want){ 100, IBV_WC_SUCCESS, IBV_WC_RECV, 1, MSG_SIZE }, 1);
	expect_same(tc, "received data", dst->mem, src->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_RTS);
	expect_state(tc, &tc->resp, IBV_QPS_RTS);
}

static void case_good_write(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x22);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, REMOTE, 0);

	if (!src || !dst)
		return;
	struct send_req s = { 1, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey,
			      (uintptr_t)dst->mem, dst->mr->rkey };
	if (post_sends(tc, &s, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, 0 }, 1);
	expect_wcs(tc, &tc->resp, 0, NULL, 0);
	expect_same(tc, "written data at the target", dst->mem, src->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_RTS);
	expect_state(tc, &tc->resp, IBV_QPS_RTS);
}

static void case_good_read(struct test_case *tc)
{
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0);
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, REMOTE, 0x33);

	if (!src || !dst)
		return;
	struct send_req s = { 1, IBV_WR_RDMA_READ, dst, MSG_SIZE, dst->mr->lkey,
			      (uintptr_t)src->mem, src->mr->rkey };
	if (post_sends(tc, &s, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0, 0 }, 1);
	expect_wcs(tc, &tc->resp, 0, NULL, 0);
	expect_same(tc, "read data", dst->mem, src->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_RTS);
	expect_state(tc, &tc->resp, IBV_QPS_RTS);
}

/* The failing WR is followed by two valid ones: the error, then both flushed. */
static const struct want error_then_flushes[3] = {
	{ 1, 0, 0, 0, 0 }, /* status set by the case */
	{ 2, IBV_WC_WR_FLUSH_ERR, 0, 0, 0 },
	{ 3, IBV_WC_WR_FLUSH_ERR, 0, 0, 0 },
};

static void case_bad_lkey(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x44);
	struct buffer *dst = add_buffer(tc, 3 * MSG_SIZE, 3 * MSG_SIZE, LOCAL, 0);
	struct want w[3];

	if (!src || !dst)
		return;
	/* Receives for all three SENDs: a SEND that wrongly goes through shows up as a RECV. */
	for (int i = 0; i < 3; i++) {
		struct buffer slot = *dst;

		slot.mem += i * MSG_SIZE;
		if (post_recv(tc, 100 + i, &slot, MSG_SIZE))
			return;
	}
	uint32_t bad = bogus_key(tc, src->mr->lkey);
	note(tc, "lkey %#x, bogus lkey %#x", src->mr->lkey, bad);
	struct send_req s[3] = {
		{ 1, IBV_WR_SEND, src, MSG_SIZE, bad, 0, 0 },
		{ 2, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 },
		{ 3, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 },
	};
	if (post_sends(tc, s, 3))
		return;
	memcpy(w, error_then_flushes, sizeof(w));
	w[0].status = IBV_WC_LOC_PROT_ERR;
	expect_wcs(tc, &tc->req, 1, w, 3);
	/* The error is local: nothing reaches the responder, which stays usable. */
	expect_wcs(tc, &tc->resp, 0, NULL, 0);
	expect_zero(tc, "responder receive buffers", dst->mem, dst->len);
	expect_state(tc, &tc->req, IBV_QPS_ERR);
	expect_state(tc, &tc->resp, IBV_QPS_RTS);
}

static void case_bad_rkey(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x55);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, REMOTE, 0);
	struct want w[3];

	if (!src || !dst)
		return;
	uint32_t bad = bogus_key(tc, dst->mr->rkey);
	note(tc, "rkey %#x, bogus rkey %#x", dst->mr->rkey, bad);
	struct send_req s[3] = {
		{ 1, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey, (uintptr_t)dst->mem, bad },
		{ 2, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey, (uintptr_t)dst->mem, dst->mr->rkey },
		{ 3, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey, (uintptr_t)dst->mem, dst->mr->rkey },
	};
	if (post_sends(tc, s, 3))
		return;
	memcpy(w, error_then_flushes, sizeof(w));
	w[0].status = IBV_WC_REM_ACCESS_ERR;
	expect_wcs(tc, &tc->req, 1, w, 3);
	/* Neither the refused WRITE nor the flushed ones may have landed. */
	expect_zero(tc, "target MR", dst->mem, dst->len);
	expect_state(tc, &tc->req, IBV_QPS_ERR);
	show_recv_wcs(tc, &tc->resp);
	show_state(tc, &tc->resp);
}

static void case_recv_too_small(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x66);
	struct buffer *small = add_buffer(tc, MSG_SIZE, SMALL_RECV, LOCAL, 0);
	struct buffer *big = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0);

	if (!src || !small || !big)
		return;
	if (post_recv(tc, 100, small, SMALL_RECV) || post_recv(tc, 101, big, MSG_SIZE))
		return;
	struct send_req s = { 1, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 };
	if (post_sends(tc, &s, 1))
		return;
	expect_wcs(tc, &tc->resp, 0,
		   (struct want[]){ { 100, IBV_WC_LOC_LEN_ERR, 0, 0, 0 },
				    { 101, IBV_WC_WR_FLUSH_ERR, 0, 0, 0 } },
		   2);
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_REM_INV_REQ_ERR, 0, 0, 0 }, 1);
	/* Nothing may be written past the 64 registered bytes, nor into the flushed receive. */
	expect_zero(tc, "memory after the 64-byte receive", small->mem + SMALL_RECV,
		    small->len - SMALL_RECV);
	expect_zero(tc, "second receive buffer", big->mem, big->len);
	expect_state(tc, &tc->req, IBV_QPS_ERR);
	expect_state(tc, &tc->resp, IBV_QPS_ERR);
}

static void case_write_past_mr_end(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x77);
	/* Two pages of memory, the first registered: the second shows a write past the end. */
	struct buffer *dst = add_buffer(tc, 2 * MSG_SIZE, MSG_SIZE, LOCAL | IBV_ACCESS_REMOTE_WRITE, 0);
	struct want w[3];

	if (!src || !dst)
		return;
	uint64_t base = (uintptr_t)dst->mem;
	struct send_req s[3] = {
		{ 1, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey, base + 1024, dst->mr->rkey },
		{ 2, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey, base, dst->mr->rkey },
		{ 3, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey, base, dst->mr->rkey },
	};
	if (post_sends(tc, s, 3))
		return;
	memcpy(w, error_then_flushes, sizeof(w));
	w[0].status = IBV_WC_REM_ACCESS_ERR;
	expect_wcs(tc, &tc->req, 1, w, 3);
	/* The responder checks the whole range before writing: no byte lands, in or past the MR. */
	expect_zero(tc, "target MR", dst->mem, MSG_SIZE);
	expect_zero(tc, "memory past the MR end", dst->mem + MSG_SIZE, dst->len - MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_ERR);
	show_recv_wcs(tc, &tc->resp);
	show_state(tc, &tc->resp);
}

static void case_cq_resize(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x77);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0);
	struct ibv_device_attr da;
	struct send_req s[4];
	struct want w[4];
	int rc;

	if (!src || !dst)
		return;
	rc = ibv_query_device(tc->dev->ctx, &da);
	if (rc) {
		fail(tc, "ibv_query_device: %s", strerror(rc));
		return;
	}
	rc = ibv_resize_cq(tc->req.scq, da.max_cqe + 1);
	note(tc, "ibv_resize_cq(max_cqe + 1 = %d): %s", da.max_cqe + 1, rc ? strerror(rc) : "ok");
	if (rc != EINVAL)
		fail(tc, "a size past max_cqe: expected EINVAL, got %s", rc ? strerror(rc) : "success");
	rc = ibv_resize_cq(tc->req.scq, 64);
	if (rc) {
		fail(tc, "ibv_resize_cq(64): %s", strerror(rc));
		return;
	}
	note(tc, "resized send CQ: cqe %d", tc->req.scq->cqe);
	if (tc->req.scq->cqe < 64)
		fail(tc, "resized to %d entries, fewer than the 64 asked", tc->req.scq->cqe);
	for (int i = 0; i < 4; i++) {
		s[i] = (struct send_req){ 1 + i, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 };
		w[i] = (struct want){ 1 + i, IBV_WC_SUCCESS, IBV_WC_SEND, 0, 0 };
		if (post_recv(tc, 100 + i, dst, MSG_SIZE))
			return;
	}
	if (post_sends(tc, s, 4))
		return;
	expect_wcs(tc, &tc->req, 1, w, 4);
	for (int i = 0; i < 4; i++)
		w[i] = (struct want){ 100 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 1, MSG_SIZE };
	expect_wcs(tc, &tc->resp, 0, w, 4);
	expect_same(tc, "received data", dst->mem, src->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_RTS);
}

static void case_rereg_mr(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x88);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, REMOTE, 0);
	struct buffer *other = add_buffer(tc, MSG_SIZE, 64, LOCAL, 0);
	uint32_t old_rkey;
	int rc;

	if (!src || !dst || !other)
		return;
	old_rkey = dst->mr->rkey;
	/* `other` is registered for 64 bytes only: its memory is what `dst`'s MR moves to. */
	/* Access 0: libibverbs takes access bits only with IBV_REREG_MR_CHANGE_ACCESS. */
	rc = ibv_rereg_mr(dst->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other->mem, MSG_SIZE, 0);
	if (rc) {
		fail(tc, "ibv_rereg_mr(CHANGE_TRANSLATION): %d (%s)", rc, strerror(errno));
		return;
	}
	note(tc, "moved MR: keys %s", dst->mr->rkey == old_rkey ? "kept" : "new");
	struct send_req w = { 1, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey,
			      (uintptr_t)other->mem, dst->mr->rkey };
	if (post_sends(tc, &w, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, 0 }, 1);
	expect_same(tc, "written at the new place", other->mem, src->mem, MSG_SIZE);
	expect_zero(tc, "the old place", dst->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_RTS);
}

static void case_rereg_access(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x89);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, REMOTE, 0);
	int rc;

	if (!src || !dst)
		return;
	struct send_req w = { 1, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey,
			      (uintptr_t)dst->mem, dst->mr->rkey };
	if (post_sends(tc, &w, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, 0 }, 1);
	expect_same(tc, "written with remote write", dst->mem, src->mem, MSG_SIZE);
	rc = ibv_rereg_mr(dst->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LOCAL);
	if (rc) {
		fail(tc, "ibv_rereg_mr(CHANGE_ACCESS): %d (%s)", rc, strerror(errno));
		return;
	}
	memset(dst->mem, 0, MSG_SIZE);
	w.wr_id = 2;
	w.rkey = dst->mr->rkey;
	if (post_sends(tc, &w, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 2, IBV_WC_REM_ACCESS_ERR, 0, 0, 0 }, 1);
	expect_zero(tc, "the MR without remote write", dst->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_ERR);
}

/* Removes CAP_IPC_LOCK from this process's effective and permitted sets (raw capset). */
static int drop_ipc_lock(void)
{
	struct {
		uint32_t version;
		int pid;
	} h = { 0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0 };
	struct {
		uint32_t effective, permitted, inheritable;
	} d[2];
	const uint32_t ipc_lock = 1u << 14; /* CAP_IPC_LOCK */

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	d[0].effective &= ~ipc_lock;
	d[0].permitted &= ~ipc_lock;
	if (syscall(SYS_capset, &h, d) < 0)
		return -1;
	return 0;
}

/* The memlock child: its own context and PD; exit status 0 when every step went as expected,
 * else the step that did not (1..6). */
static int memlock_child(const char *name)
{
	static uint8_t mem[(1 << 20) + (32 << 10)] __attribute__((aligned(4096)));
	struct rlimit r = { 64 << 10, 64 << 10 };
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_mr *a, *b;
	int n;

	if (drop_ipc_lock() || setrlimit(RLIMIT_MEMLOCK, &r))
		return 1;
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return 2;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return 2;
	memset(mem, 1, sizeof(mem));
	a = ibv_reg_mr(pd, mem, 32 << 10, IBV_ACCESS_LOCAL_WRITE);
	if (!a)
		return 3;
	b = ibv_reg_mr(pd, mem + (32 << 10), 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	printf("case memlock: child: 1 MiB past a 64 KiB RLIMIT_MEMLOCK: %s\n",
	       b ? "registered" : strerror(errno));
	if (b || errno != ENOMEM)
		return 4;
	if (ibv_dereg_mr(a))
		return 5;
	a = ibv_reg_mr(pd, mem, 32 << 10, IBV_ACCESS_LOCAL_WRITE);
	if (!a || ibv_dereg_mr(a) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		return 6;
	return 0;
}

static void case_memlock(struct test_case *tc)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fail(tc, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0)
		_exit(memlock_child(ibv_get_device_name(tc->dev->ctx->device)));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		fail(tc, "the child did not exit normally");
		return;
	}
	switch (WEXITSTATUS(status)) {
	case 0:
		note(tc, "32 KiB registered, 1 MiB more refused with ENOMEM, 32 KiB again after a release");
		break;
	case 1:
		fail(tc, "the child could not drop CAP_IPC_LOCK or set its RLIMIT_MEMLOCK");
		break;
	case 2:
		fail(tc, "the child could not open the device or allocate a PD");
		break;
	case 3:
		fail(tc, "32 KiB under a 64 KiB RLIMIT_MEMLOCK: not registered");
		break;
	case 4:
		fail(tc, "1 MiB past a 64 KiB RLIMIT_MEMLOCK: not refused with ENOMEM");
		break;
	default:
		fail(tc, "the charge was not given back: 32 KiB after a release failed (step %d)",
		     WEXITSTATUS(status));
		break;
	}
}

static void case_grh_path(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x99);
	struct buffer *dst = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	const struct ibv_global_route *g = &a.ah_attr.grh;
	int rc;

	if (!src || !dst)
		return;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_qp(tc->req.qp, &a, IBV_QP_AV | IBV_QP_PORT | IBV_QP_STATE, &ia);
	if (rc) {
		fail(tc, "ibv_query_qp: %s", strerror(rc));
		return;
	}
	note(tc, "path: dlid %#x sl %u path bits %u rate %u port %u global %u sgid %u hop %u tclass %#x flow %#x dgid %s",
	     a.ah_attr.dlid, a.ah_attr.sl, a.ah_attr.src_path_bits, a.ah_attr.static_rate,
	     a.ah_attr.port_num, a.ah_attr.is_global, g->sgid_index, g->hop_limit, g->traffic_class,
	     g->flow_label, memcmp(g->dgid.raw, tc->dev->gid0.raw, 16) ? "other" : "the port's GID 0");
	if (a.ah_attr.dlid != tc->dev->lid || a.ah_attr.sl != 2 || a.ah_attr.port_num != tc->dev->port ||
	    !a.ah_attr.is_global || g->sgid_index != 0 || g->hop_limit != 64 ||
	    g->traffic_class != 0x20 || g->flow_label != 0x12345 ||
	    memcmp(g->dgid.raw, tc->dev->gid0.raw, 16))
		fail(tc, "the path read back is not the one set");
	if (post_recv(tc, 100, dst, MSG_SIZE))
		return;
	struct send_req s = { 1, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 };
	if (post_sends(tc, &s, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_SEND, 0, 0 }, 1);
	expect_wcs(tc, &tc->resp, 0, &(struct want){ 100, IBV_WC_SUCCESS, IBV_WC_RECV, 1, MSG_SIZE }, 1);
	expect_same(tc, "received data", dst->mem, src->mem, MSG_SIZE);
}

#define LARGE_MR (64UL << 20)
#define LARGE_OFF (60UL << 20)

static void case_large_mr(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x66);
	struct buffer *back = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0);
	struct buffer *dst = add_buffer(tc, LARGE_MR, LARGE_MR, REMOTE, 0);

	if (!src || !back || !dst)
		return;
	note(tc, "64 MiB MR: lkey %#x rkey %#x", dst->mr->lkey, dst->mr->rkey);
	struct send_req w = { 1, IBV_WR_RDMA_WRITE, src, MSG_SIZE, src->mr->lkey,
			      (uintptr_t)dst->mem + LARGE_OFF, dst->mr->rkey };
	if (post_sends(tc, &w, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, 0 }, 1);
	expect_same(tc, "written at 60 MiB", dst->mem + LARGE_OFF, src->mem, MSG_SIZE);
	expect_zero(tc, "the page before", dst->mem + LARGE_OFF - MSG_SIZE, MSG_SIZE);
	struct send_req r = { 2, IBV_WR_RDMA_READ, back, MSG_SIZE, back->mr->lkey,
			      (uintptr_t)dst->mem + LARGE_OFF, dst->mr->rkey };
	if (post_sends(tc, &r, 1))
		return;
	expect_wcs(tc, &tc->req, 1, &(struct want){ 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0, 0 }, 1);
	expect_same(tc, "read back from 60 MiB", back->mem, src->mem, MSG_SIZE);
	expect_state(tc, &tc->req, IBV_QPS_RTS);
}

/* The async event of the device within `ms` (acknowledged); 1 if one came, 0 if none. */
static int next_async_event(struct test_case *tc, struct ibv_async_event *ev, unsigned int ms)
{
	struct pollfd p = { .fd = tc->dev->ctx->async_fd, .events = POLLIN };
	int flags = fcntl(p.fd, F_GETFL);

	if (flags < 0 || fcntl(p.fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		fail(tc, "async fd: fcntl: %s", strerror(errno));
		return 0;
	}
	if (poll(&p, 1, (int)ms) != 1)
		return 0;
	if (ibv_get_async_event(tc->dev->ctx, ev)) {
		fail(tc, "ibv_get_async_event: %s", strerror(errno));
		return 0;
	}
	ibv_ack_async_event(ev);
	return 1;
}

static void expect_srq_attr(struct test_case *tc, const char *when, uint32_t limit)
{
	struct ibv_srq_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = ibv_query_srq(tc->srq, &a);
	if (rc) {
		fail(tc, "ibv_query_srq (%s): %s", when, strerror(rc));
		return;
	}
	note(tc, "srq %s: max_wr=%u max_sge=%u srq_limit=%u", when, a.max_wr, a.max_sge,
	     a.srq_limit);
	if (a.max_wr < SRQ_DEPTH || a.max_sge != 1 || a.srq_limit != limit)
		fail(tc, "srq %s: max_wr=%u max_sge=%u srq_limit=%u, expected max_wr >= %d, "
			 "max_sge 1, srq_limit %u",
		     when, a.max_wr, a.max_sge, a.srq_limit, SRQ_DEPTH, limit);
}

static void case_srq_limit(struct test_case *tc)
{
	struct buffer *src = add_buffer(tc, MSG_SIZE, MSG_SIZE, LOCAL, 0x55);
	struct buffer *dst = add_buffer(tc, MSG_SIZE * SRQ_POSTED, MSG_SIZE * SRQ_POSTED, LOCAL, 0);
	struct ibv_srq_attr a;
	struct ibv_async_event ev;
	struct send_req s[5];
	struct want w[5];
	int rc;

	if (!src || !dst)
		return;
	expect_srq_attr(tc, "as made", 0);
	for (int i = 0; i < SRQ_POSTED; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)dst->mem + (size_t)i * MSG_SIZE,
				       .length = MSG_SIZE,
				       .lkey = dst->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 200 + i, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		rc = ibv_post_srq_recv(tc->srq, &wr, &bad);
		if (rc) {
			fail(tc, "ibv_post_srq_recv(%d): %s", i, strerror(rc));
			return;
		}
	}
	memset(&a, 0, sizeof(a));
	a.max_wr = 4 * SRQ_DEPTH;
	rc = ibv_modify_srq(tc->srq, &a, IBV_SRQ_MAX_WR);
	note(tc, "ibv_modify_srq(max_wr %u): %s", a.max_wr, rc ? strerror(rc) : "ok");
	if (rc != EINVAL)
		fail(tc, "resizing the SRQ: expected EINVAL, got %s", rc ? strerror(rc) : "success");
	a.srq_limit = 100000;
	rc = ibv_modify_srq(tc->srq, &a, IBV_SRQ_LIMIT);
	note(tc, "ibv_modify_srq(srq_limit %u): %s", a.srq_limit, rc ? strerror(rc) : "ok");
	if (rc != EINVAL)
		fail(tc, "a limit past the SRQ's size: expected EINVAL, got %s",
		     rc ? strerror(rc) : "success");
	a.srq_limit = SRQ_LIMIT;
	rc = ibv_modify_srq(tc->srq, &a, IBV_SRQ_LIMIT);
	if (rc) {
		fail(tc, "ibv_modify_srq(srq_limit %d): %s", SRQ_LIMIT, strerror(rc));
		return;
	}
	expect_srq_attr(tc, "armed", SRQ_LIMIT);
	if (next_async_event(tc, &ev, 0)) {
		fail(tc, "an async event (%s) before any receive was consumed",
		     ibv_event_type_str(ev.event_type));
		return;
	}
	for (int i = 0; i < 5; i++) {
		s[i] = (struct send_req){ 1 + i, IBV_WR_SEND, src, MSG_SIZE, src->mr->lkey, 0, 0 };
		w[i] = (struct want){ 200 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 1, MSG_SIZE };
	}
	if (post_sends(tc, s, 5))
		return;
	expect_wcs(tc, &tc->resp, 0, w, 5);
	for (int i = 0; i < 5; i++)
		w[i] = (struct want){ 1 + i, IBV_WC_SUCCESS, IBV_WC_SEND, 0, 0 };
	expect_wcs(tc, &tc->req, 1, w, 5);
	for (int i = 0; i < 5; i++)
		expect_same(tc, "received data", dst->mem + (size_t)i * MSG_SIZE, src->mem, MSG_SIZE);
	if (!next_async_event(tc, &ev, POLL_TIMEOUT_MS)) {
		fail(tc, "no async event within %d ms after 5 of %d receives were consumed",
		     POLL_TIMEOUT_MS, SRQ_POSTED);
		return;
	}
	note(tc, "async event %s%s", ibv_event_type_str(ev.event_type),
	     ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == tc->srq ?
		     " on the SRQ" :
		     "");
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED || ev.element.srq != tc->srq)
		fail(tc, "expected SRQ_LIMIT_REACHED on the SRQ, got %s",
		     ibv_event_type_str(ev.event_type));
	expect_srq_attr(tc, "after the event", 0);
	rc = ibv_destroy_srq(tc->srq);
	note(tc, "ibv_destroy_srq while its QP exists: %s", rc ? strerror(rc) : "ok");
	if (rc != EBUSY) {
		fail(tc, "destroying the SRQ under its QP: expected EBUSY, got %s",
		     rc ? strerror(rc) : "success");
		if (!rc)
			tc->srq = NULL;
	}
	expect_state(tc, &tc->req, IBV_QPS_RTS);
	expect_state(tc, &tc->resp, IBV_QPS_RTS);
}

static const struct {
	const char *name;
	void (*run)(struct test_case *tc);
	/* The responder receives from an SRQ. */
	int srq;
	/* The QPs are connected with a GRH and SL 2. */
	int grh;
} cases[] = {
	/* The good cases first: they show the path works before errors are judged. */
	{ "good-send", case_good_send, 0, 0 },
	{ "good-write", case_good_write, 0, 0 },
	{ "good-read", case_good_read, 0, 0 },
	{ "bad-lkey", case_bad_lkey, 0, 0 },
	{ "bad-rkey", case_bad_rkey, 0, 0 },
	{ "recv-too-small", case_recv_too_small, 0, 0 },
	{ "write-past-mr-end", case_write_past_mr_end, 0, 0 },
	{ "large-mr", case_large_mr, 0, 0 },
	{ "cq-resize", case_cq_resize, 0, 0 },
	{ "rereg-mr", case_rereg_mr, 0, 0 },
	{ "rereg-access", case_rereg_access, 0, 0 },
	{ "memlock", case_memlock, 0, 0 },
	{ "grh-path", case_grh_path, 0, 1 },
	{ "srq-limit", case_srq_limit, 1, 0 },
};

/* Runs one case on fresh QPs and CQs; 0 if it passed. */
static int run_case(struct device *dev, int i)
{
	struct test_case *tc = calloc(1, sizeof(*tc));
	int failed;

	if (!tc) {
		printf("FAIL %s: out of memory\n", cases[i].name);
		return 1;
	}
	tc->name = cases[i].name;
	tc->dev = dev;
	tc->grh = cases[i].grh;
	if (cases[i].srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = SRQ_DEPTH, .max_sge = 1 } };

		tc->srq = ibv_create_srq(dev->pd, &sa);
		if (!tc->srq)
			fail(tc, "ibv_create_srq: %s", strerror(errno));
		else
			note(tc, "srq made: max_wr=%u max_sge=%u", sa.attr.max_wr, sa.attr.max_sge);
	}
	if (!tc->failed && !setup_case(tc))
		cases[i].run(tc);
	teardown_case(tc);
	if (tc->failed)
		printf("FAIL %s: %s\n", tc->name, tc->why);
	else
		printf("PASS %s\n", tc->name);
	fflush(stdout);
	failed = tc->failed;
	free(tc);
	return failed;
}

static int open_device(struct device *dev, const char *name)
{
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int n, rc;

	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "verbs_errors: ibv_get_device_list: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			dev->ctx = ibv_open_device(list[i]);
			if (!dev->ctx)
				fprintf(stderr, "verbs_errors: ibv_open_device(%s): %s\n", name,
					strerror(errno));
			break;
		}
	}
	if (!dev->ctx && n >= 0)
		fprintf(stderr, "verbs_errors: no usable device %s (%d devices)\n", name, n);
	ibv_free_device_list(list);
	if (!dev->ctx)
		return -1;

	rc = ibv_query_port(dev->ctx, dev->port, &pa);
	if (rc) {
		fprintf(stderr, "verbs_errors: ibv_query_port(%s, %u): %s\n", name, dev->port,
			strerror(rc));
		return -1;
	}
	printf("device %s port %u: state %s, link layer %s, LID %#x\n", name, dev->port,
	       ibv_port_state_str(pa.state),
	       pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "not InfiniBand", pa.lid);
	if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND || pa.state != IBV_PORT_ACTIVE || !pa.lid) {
		fprintf(stderr, "verbs_errors: %s port %u is not an ACTIVE InfiniBand port with a LID\n",
			name, dev->port);
		return -1;
	}
	dev->lid = pa.lid;
	rc = ibv_query_gid(dev->ctx, dev->port, 0, &dev->gid0);
	if (rc) {
		fprintf(stderr, "verbs_errors: ibv_query_gid(%s, %u, 0): %s\n", name, dev->port,
			strerror(rc));
		return -1;
	}
	rc = ibv_query_device(dev->ctx, &da);
	if (rc) {
		fprintf(stderr, "verbs_errors: ibv_query_device(%s): %s\n", name, strerror(rc));
		return -1;
	}
	/* mlx5 refuses remote atomic access on a QP when the device has no atomics. */
	dev->qp_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (da.atomic_cap != IBV_ATOMIC_NONE)
		dev->qp_access |= IBV_ACCESS_REMOTE_ATOMIC;
	printf("device %s: atomics %s; QPs allow remote read, write%s\n", name,
	       da.atomic_cap == IBV_ATOMIC_NONE ? "not supported" : "supported",
	       da.atomic_cap == IBV_ATOMIC_NONE ? "" : ", atomic");
	dev->pd = ibv_alloc_pd(dev->ctx);
	if (!dev->pd) {
		fprintf(stderr, "verbs_errors: ibv_alloc_pd: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int close_device(struct device *dev)
{
	int bad = 0, rc;

	if (dev->pd && (rc = ibv_dealloc_pd(dev->pd))) {
		fprintf(stderr, "verbs_errors: ibv_dealloc_pd: %s\n", strerror(rc));
		bad = 1;
	}
	if (dev->ctx && ibv_close_device(dev->ctx)) {
		fprintf(stderr, "verbs_errors: ibv_close_device failed\n");
		bad = 1;
	}
	return bad;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: verbs_errors [-d <device>] [-i <port>] [-s <case>]\n"
		   "  -d  RDMA device (default mlx5_0)\n"
		   "  -i  port number (default 1)\n"
		   "  -s  a case to skip\n"
		   "Runs RC error-completion cases in loopback; exits 0 if all pass.\n");
}

int main(int argc, char **argv)
{
	struct device dev = { .port = 1 };
	const char *name = "mlx5_0";
	int opt, failed = 0, closed_bad, ncases = sizeof(cases) / sizeof(cases[0]), run = 0;
	const char *skip = NULL;

	while ((opt = getopt(argc, argv, "d:i:s:h")) != -1) {
		switch (opt) {
		case 's':
			skip = optarg;
			break;
		case 'd':
			name = optarg;
			break;
		case 'i': {
			char *end;
			long p = strtol(optarg, &end, 10);

			if (*end || p < 1 || p > 255) {
				fprintf(stderr, "verbs_errors: bad port %s\n", optarg);
				return 2;
			}
			dev.port = (uint8_t)p;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (open_device(&dev, name)) {
		close_device(&dev);
		return 1;
	}
	for (int i = 0; i < ncases; i++) {
		if (skip && !strcmp(skip, cases[i].name)) {
			printf("SKIP %s\n", cases[i].name);
			continue;
		}
		failed += run_case(&dev, i);
		run++;
	}
	closed_bad = close_device(&dev);
	printf("verbs_errors: %d of %d cases passed\n", run - failed, run);
	return failed || closed_bad ? 1 : 0;
}
