// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_bench: the control-path costs of user verbs that perftest does not time, for
 * `make bench` (tools/bench/verbs.py compares them between the Rust and the C stack):
 *
 *   mr64m_reg_us    microseconds to register 64 MiB of touched anonymous memory
 *                   (ibv_reg_mr: pin, map, page list, CREATE_MKEY), median of ROUNDS
 *   mr64m_dereg_us  microseconds to deregister it (ibv_dereg_mr), median of ROUNDS
 *   qp_per_s        RC QPs created and destroyed per second (ibv_create_qp + ibv_destroy_qp
 *                   in a loop of QP_LOOPS, CQs made once)
 *
 * Prints `# bench <name> <value>` lines (integers); exits non-zero if a verb fails.
 *
 * The registration and the deregistration are between instruction-count markers (an 8-byte
 * no-op, `nopl MARK(%rax,%rax,1)`, MARK = 0x52444d00 | end << 7 | id; ids 6 and 7): under
 * `make bench`'s QEMU plugin (tools/bench/insn_marks.c) they count the instructions each call
 * executes on its CPU, the kernel's work included (samples/ib_verbs_bench.rs has the others).
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MARK(code) asm volatile(".byte 0x0f, 0x1f, 0x84, 0x00\n\t.long %c0" : : "i"(code) : "memory")
#define MARK_REG 6
#define MARK_DEREG 7

#define MR_LEN (64UL << 20)
#define ROUNDS 5
#define QP_LOOPS 200

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static int bench_mr(struct ibv_pd *pd)
{
	uint64_t reg[ROUNDS], dereg[ROUNDS];
	uint8_t *mem = mmap(NULL, MR_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			    0);

	if (mem == MAP_FAILED) {
		fprintf(stderr, "uverbs_bench: mmap %lu bytes: %s\n", MR_LEN, strerror(errno));
		return -1;
	}
	memset(mem, 0x5a, MR_LEN);
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t0 = now_ns();
		struct ibv_mr *mr;
		uint64_t t1;
		int rc;

		MARK(0x52444d00 | MARK_REG);
		mr = ibv_reg_mr(pd, mem, MR_LEN,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		MARK(0x52444d80 | MARK_REG);
		t1 = now_ns();

		if (!mr) {
			fprintf(stderr, "uverbs_bench: ibv_reg_mr(64 MiB): %s\n", strerror(errno));
			return -1;
		}
		MARK(0x52444d00 | MARK_DEREG);
		rc = ibv_dereg_mr(mr);
		MARK(0x52444d80 | MARK_DEREG);
		if (rc) {
			fprintf(stderr, "uverbs_bench: ibv_dereg_mr: %s\n", strerror(rc));
			return -1;
		}
		reg[i] = t1 - t0;
		dereg[i] = now_ns() - t1;
	}
	munmap(mem, MR_LEN);
	printf("# bench mr64m_reg_us %llu\n", (unsigned long long)(median(reg, ROUNDS) / 1000));
	printf("# bench mr64m_dereg_us %llu\n",
	       (unsigned long long)(median(dereg, ROUNDS) / 1000));
	return 0;
}

static int bench_qp(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr attr;
	uint64_t t0;
	int rc;

	if (!cq) {
		fprintf(stderr, "uverbs_bench: ibv_create_cq: %s\n", strerror(errno));
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 16;
	attr.cap.max_recv_wr = 16;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	t0 = now_ns();
	for (int i = 0; i < QP_LOOPS; i++) {
		struct ibv_qp *qp = ibv_create_qp(pd, &attr);

		if (!qp) {
			fprintf(stderr, "uverbs_bench: ibv_create_qp #%d: %s\n", i, strerror(errno));
			return -1;
		}
		rc = ibv_destroy_qp(qp);
		if (rc) {
			fprintf(stderr, "uverbs_bench: ibv_destroy_qp #%d: %s\n", i, strerror(rc));
			return -1;
		}
	}
	printf("# bench qp_per_s %llu\n",
	       (unsigned long long)(QP_LOOPS * 1000000000ULL / (now_ns() - t0 + 1)));
	rc = ibv_destroy_cq(cq);
	if (rc) {
		fprintf(stderr, "uverbs_bench: ibv_destroy_cq: %s\n", strerror(rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "mlx5_0";
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	int n, bad;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "uverbs_bench: cannot open %s\n", name);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fprintf(stderr, "uverbs_bench: ibv_alloc_pd: %s\n", strerror(errno));
		return 1;
	}
	bad = bench_mr(pd) || bench_qp(ctx, pd);
	if (ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		bad = 1;
	return bad;
}
