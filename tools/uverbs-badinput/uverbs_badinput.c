// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_badinput: malformed requests on a uverbs character device (/dev/infiniband/uverbsN),
 * each checked against the errno the upstream C ib_uverbs of Linux 7.3.4 returns
 * (drivers/infiniband/core/uverbs_ioctl.c: ib_uverbs_ioctl, ib_uverbs_cmd_verbs; the VFS turns
 * -ENOIOCTLCMD into ENOTTY; uverbs_main.c: ib_uverbs_write, verify_hdr; uverbs_std_types_device.c
 * and mlx5_ib's alloc_ucontext and query_device for what the methods check). Every case's answer
 * is the C stack's; a case is only here once both stacks implement what it reaches:
 *   - the ioctl header's checks, unknown objects and methods;
 *   - write(): the command header of every command C has (lengths, word counts, the extended
 *     header, holes and numbers past the tables), and commands that need a context before there
 *     is one;
 *   - the attributes of the device's methods (INVOKE_WRITE, GET_CONTEXT, QUERY_PORT,
 *     QUERY_GID_ENTRY) and ASYNC_EVENT_ALLOC: unknown mandatory and optional ones, duplicates,
 *     every wrong length, reserved bits, missing mandatory ones, out-of-range constants;
 *   - mlx5's GET_CONTEXT request (length, flags, comp_mask, reserved fields, DEVX, bfregs), then
 *     with a context: a second GET_CONTEXT, ports and GID indices that do not exist, empty GID
 *     entries, EX_QUERY_DEVICE's request and mlx5's part, non-zero tails of core requests;
 *   - PDs and MRs: handles, access rights, addresses, PDs in use, destruction by write() and
 *     ioctl, objects left for close to destroy;
 *   - CQs (ioctl CQ_CREATE/DESTROY, write CREATE_CQ, EX_CREATE_CQ, DESTROY_CQ): sizes,
 *     vectors, flags, channel and event fds of the wrong kind, mlx5's request (length, tail,
 *     CQE size, flags, UAR, buffer address and alignment, compression, padding), the answers,
 *     destruction and its event counts;
 *   - QPs (ioctl QP_CREATE/DESTROY, write QUERY_QP, MODIFY_QP): types, handles, flags, mlx5's
 *     request (flags, user index, SQ count, receive queue shape), the answers (caps echoed,
 *     mlx5's invalid bfreg, query sizes), transitions and ports, CQs in use;
 *   - mlx5's UAR object and mmap(): types, attribute lengths, the offsets answered (lowest free
 *     from 0x900000, held while mapped), the legacy offsets of a context with dynamic UARs,
 *     the clock pages, shared and exact-size mappings, destruction.
 * The same expectations run on both stacks (the scenario uverbs-devices).
 *
 * Usage: uverbs_badinput [/dev/infiniband/uverbs0] [DRIVER_ID]   (defaults: uverbs0, 1 = mlx5)
 *        uverbs_badinput --hostile rust|c   (see hostile() below: hardening-user runs it)
 *        uverbs_badinput --fuzz SEED COUNT   (see fuzz() below: uverbs-fuzz runs it)
 * Output: `ok N - name` or `not ok N - name: expected E, got G` per case, then
 * `uverbs_badinput: P passed, F failed`. Exit status 0 only if every case passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

/* RDMA_VERBS_IOCTL: _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr) */
#define VERBS_IOCTL 0xc0181b01u

/* struct ib_uverbs_ioctl_hdr and struct ib_uverbs_attr (include/uapi/rdma/rdma_user_ioctl_cmds.h) */
struct hdr {
	uint16_t length;
	uint16_t object_id;
	uint16_t method_id;
	uint16_t num_attrs;
	uint64_t reserved1;
	uint32_t driver_id;
	uint32_t reserved2;
	uint8_t attrs[255 * 16];
};

static int fd, passed, failed, n;

/* The errno of one write (0 if it succeeded). */
static int wr(const void *buf, size_t len)
{
	return write(fd, buf, len) < 0 ? errno : 0;
}

/* The errno of one read of `n` bytes from `cfd` (0 if it succeeded). */
static int rd(int cfd, size_t n)
{
	char b[16];

	return read(cfd, b, n) < 0 ? errno : 0;
}

/* A completion channel left open past the device file's close. */
static int kept_channel = -1;

/* The errno of one ioctl (0 if it succeeded). */
static int call(unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

static void expect(const char *name, int want, int got)
{
	n++;
	if (want == got) {
		printf("ok %d - %s\n", n, name);
		passed++;
	} else {
		printf("not ok %d - %s: expected %s, got %s\n", n, name, strerrorname_np(want) ?: "0",
		       got ? strerrorname_np(got) ?: "E?" : "success");
		failed++;
	}
}

/* A header with `num_attrs` zeroed attributes and the length that goes with them. */
static struct hdr header(uint32_t driver_id, uint16_t object, uint16_t method, uint16_t num_attrs)
{
	struct hdr h;

	memset(&h, 0, sizeof(h));
	h.length = 24 + 16 * num_attrs;
	h.object_id = object;
	h.method_id = method;
	h.num_attrs = num_attrs;
	h.driver_id = driver_id;
	return h;
}

/* Sets attribute i of h. */
static void attr(struct hdr *h, int i, uint16_t id, uint16_t len, uint16_t flags, uint16_t attr_data,
		 uint64_t data)
{
	uint8_t *a = h->attrs + 16 * i;

	memcpy(a, &id, 2);
	memcpy(a + 2, &len, 2);
	memcpy(a + 4, &flags, 2);
	memcpy(a + 6, &attr_data, 2);
	memcpy(a + 8, &data, 8);
}

#define MAND 1	/* UVERBS_ATTR_F_MANDATORY */

/* A legacy command: header, payload of `count - 8` bytes (zeroed unless given). */
struct cmd {
	uint32_t command;
	uint16_t in_words;
	uint16_t out_words;
	uint8_t payload[512];
};

static int send_cmd(uint32_t command, uint16_t in_words, uint16_t out_words, const void *payload,
		    size_t payload_len, size_t count)
{
	struct cmd c;

	memset(&c, 0, sizeof(c));
	c.command = command;
	c.in_words = in_words;
	c.out_words = out_words;
	if (payload)
		memcpy(c.payload, payload, payload_len);
	return wr(&c, count);
}

/* The extended header's fields, after the 8-byte header. */
static int send_ex(uint32_t command, uint16_t in_words, uint16_t out_words, uint64_t response,
		   uint16_t pin, uint16_t pout, uint32_t reserved, size_t count)
{
	uint8_t p[16 + 64];

	memset(p, 0, sizeof(p));
	memcpy(p, &response, 8);
	memcpy(p + 8, &pin, 2);
	memcpy(p + 10, &pout, 2);
	memcpy(p + 12, &reserved, 4);
	return send_cmd(command | 0x80000000u, in_words, out_words, p, sizeof(p), count);
}

/* C's write() commands: request and response sizes of each (0: a hole of the table). */
static const struct { int req, resp; } write_cmds[41] = {
	[0] = { 8, 8 }, [1] = { 8, 176 }, [2] = { 16, 40 }, [3] = { 8, 4 }, [4] = { 4, 0 },
	[5] = { 56, 4 }, [8] = { 4, 0 }, [9] = { 40, 12 }, [11] = { 48, 8 }, [13] = { 4, 0 },
	[17] = { 8, 4 }, [18] = { 32, 8 }, [19] = { 16, 8 },
	[20] = { 16, 8 }, [24] = { 56, 32 }, [25] = { 16, 128 },
	[26] = { 112, 0 }, [27] = { 16, 4 }, [30] = { 24, 0 },
	[31] = { 24, 0 }, [32] = { 32, 16 }, [33] = { 16, 0 }, [34] = { 16, 16 }, [35] = { 16, 4 },
	[37] = { 16, 4 }, [38] = { 4, 0 }, [39] = { 48, 16 }, [40] = { 32, 32 },
};
/* Holes of C's table for mlx5 on an InfiniBand function without memory windows (imaicl 0):
 * the commands C does not have, the memory-window ones, and the data-path ones C's default
 * command mask leaves out (POLL_CQ, REQ_NOTIFY_CQ, POST_SEND, POST_RECV, POST_SRQ_RECV). */
static const int holes[] = { 6, 7, 10, 12, 14, 15, 16, 21, 22, 23, 28, 29, 36 };
static const int ex_cmds[] = { 1, 18, 24, 26, 50, 51, 57 };
/* Extended holes: the work queue and indirection table commands (mlx5 has them on Ethernet
 * only), and numbers C never had. They are checked as legacy commands. */
static const int ex_holes[] = { 0, 2, 17, 25, 49, 52, 53, 54, 55, 56 };

static char name[256];
#define NAME(...) (snprintf(name, sizeof(name), __VA_ARGS__), name)

/* write(): the command header (no context needed: every one fails before its handler). */
static void write_headers(void)
{
	uint8_t zero[64] = { 0 };
	unsigned int i, k;

	for (k = 1; k < 8; k++)
		expect(NAME("write of %u bytes (shorter than the header): EINVAL", k), EINVAL,
		       send_cmd(1, 2, 44, NULL, 0, k));
	{
		const void *volatile unmapped = (const void *)8;

		expect("write from address 8: EFAULT", EFAULT, wr(unmapped, 8));
	}
	expect("command with bit 8 set: EINVAL", EINVAL, send_cmd(0x100, 4, 44, zero, 8, 16));
	expect("command with bit 30 set: EINVAL", EINVAL, send_cmd(0x40000001u, 4, 44, zero, 8, 16));
	expect("extended command with bit 8 set: EINVAL", EINVAL, send_cmd(0x80000101u, 4, 0, zero, 8, 16));
	for (k = 41; k < 256; k += 107)
		expect(NAME("command %u, past the table: EOPNOTSUPP", k), EOPNOTSUPP,
		       send_cmd(k, 4, 0, zero, 8, 16));
	for (k = 58; k < 256; k += 98)
		expect(NAME("extended command %u, past the table: EOPNOTSUPP", k), EOPNOTSUPP,
		       send_ex(k, 1, 1, 0x10000, 0, 0, 0, 32));
	for (i = 0; i < 41; i++) {
		int req = write_cmds[i].req, resp = write_cmds[i].resp;

		expect(NAME("command %u: in_words*4 is not the length: EINVAL", i), EINVAL,
		       send_cmd(i, (req + 8) / 4 + 1, resp / 4 + 1, zero, 8, req + 8));
		if (req >= 4)
			expect(NAME("command %u: a request 4 bytes short of %d: ENOSPC", i, req),
			       (i == 20 && req + 4 == 16) ? 0 : ENOSPC,
			       send_cmd(i, (req + 4) / 4, resp / 4, zero, 8, req + 4));
		if (resp >= 4)
			expect(NAME("command %u: a response 4 bytes short of %d: ENOSPC", i, resp), ENOSPC,
			       send_cmd(i, (req + 8) / 4, (resp - 4) / 4, zero, 8, req + 8));
	}
	for (i = 0; i < sizeof(holes) / sizeof(holes[0]); i++) {
		expect(NAME("command %d (a hole of C's table): EOPNOTSUPP", holes[i]), EOPNOTSUPP,
		       send_cmd(holes[i], 4, 0, zero, 8, 16));
		expect(NAME("command %d (a hole): in_words*4 is not the length: EINVAL", holes[i]), EINVAL,
		       send_cmd(holes[i], 5, 0, zero, 8, 16));
	}
	for (i = 0; i < sizeof(ex_holes) / sizeof(ex_holes[0]); i++) {
		int c = ex_holes[i];

		expect(NAME("extended command %d (a hole, checked as a legacy one): EOPNOTSUPP", c),
		       EOPNOTSUPP, send_cmd(c | 0x80000000u, 4, 0, zero, 8, 16));
		expect(NAME("extended command %d (a hole) with an extended header: EINVAL", c), EINVAL,
		       send_ex(c, 1, 1, 0x10000, 0, 0, 0, 32));
		expect(NAME("extended command %d (a hole) with a kernel response address: EINVAL", c),
		       EINVAL, send_ex(c, 1, 1, 0xffff888000000000ull, 0, 0, 0, 32));
	}
	for (i = 0; i < sizeof(ex_cmds) / sizeof(ex_cmds[0]); i++) {
		int c = ex_cmds[i];

		expect(NAME("extended command %d: 16 bytes (no extended header): EINVAL", c), EINVAL,
		       send_cmd(c | 0x80000000u, 2, 0, zero, 8, 16));
		expect(NAME("extended command %d: word counts that are not the length: EINVAL", c), EINVAL,
		       send_ex(c, 2, 1, 0x10000, 0, 0, 0, 32));
		expect(NAME("extended command %d: provider words that are not the length: EINVAL", c),
		       EINVAL, send_ex(c, 1, 1, 0x10000, 1, 0, 0, 32));
		expect(NAME("extended command %d: reserved header word set: EINVAL", c), EINVAL,
		       send_ex(c, 1, 1, 0x10000, 0, 0, 1, 32));
		expect(NAME("extended command %d: no response address, response words: EINVAL", c), EINVAL,
		       send_ex(c, 1, 1, 0, 0, 0, 0, 32));
		expect(NAME("extended command %d: no response address, provider response words: EINVAL", c),
		       EINVAL, send_ex(c, 1, 0, 0, 0, 1, 0, 32));
		expect(NAME("extended command %d: a response address, no response words: EINVAL", c), EINVAL,
		       send_ex(c, 1, 0, 0x10000, 0, 0, 0, 32));
		expect(NAME("extended command %d: a kernel response address: EFAULT", c), EFAULT,
		       send_ex(c, 1, 1, 0xffff888000000000ull, 0, 0, 0, 32));
	}
}

/* Buffers commands answer into. */
static uint8_t resp_buf[4096];

/* Commands that need a context, before there is one: EINVAL. */
/* mlx5's UAR object (MLX5_IB_OBJECT_UAR 0x1008): ALLOC (0x1000) of `type`, answers through
 * *handle and *offset (each may be NULL). */
static uint32_t uar_page_id, uar_len;
static int uar_alloc(uint32_t id, uint64_t type, uint32_t *handle, uint64_t *offset)
{
	uint64_t off = ~0ull;
	struct hdr h;
	int rc;

	h = header(id, 0x1008, 0x1000, 5);
	attr(&h, 0, 0x1000, 0, MAND, 0, 0);
	attr(&h, 1, 0x1001, 8, MAND, 0, type);
	attr(&h, 2, 0x1004, 4, MAND, 0, (uintptr_t)&uar_page_id);
	attr(&h, 3, 0x1003, 4, MAND, 0, (uintptr_t)&uar_len);
	attr(&h, 4, 0x1002, 8, MAND, 0, (uintptr_t)&off);
	rc = call(VERBS_IOCTL, &h);
	if (handle)
		memcpy(handle, h.attrs + 8, 4);
	if (offset)
		*offset = off;
	return rc;
}

/* UAR_OBJ_DESTROY (0x1001) of `handle`. */
static int uar_destroy(uint32_t id, uint64_t handle)
{
	struct hdr h = header(id, 0x1008, 0x1001, 1);

	attr(&h, 0, 0x1000, 0, MAND, 0, handle);
	return call(VERBS_IOCTL, &h);
}

/* The errno of an mmap of the device file (0 if it succeeded); the mapping is removed again
 * unless `unmap` is 0, when it goes to *kept. */
static void *kept;
static int map(uint64_t offset, size_t len, int prot, int flags, int unmap)
{
	void *p = mmap(NULL, len, prot, flags, fd, offset);

	if (p == MAP_FAILED)
		return errno;
	if (unmap)
		munmap(p, len);
	else
		kept = p;
	return 0;
}

static void without_context(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[64];
	struct hdr h;

	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	expect("write QUERY_DEVICE before GET_CONTEXT: EINVAL", EINVAL, send_cmd(1, 4, 44, p, 8, 16));
	p[8] = 1;
	expect("write QUERY_PORT before GET_CONTEXT: EINVAL", EINVAL, send_cmd(2, 6, 10, p, 16, 24));
	expect("write EX_QUERY_DEVICE before GET_CONTEXT: EINVAL", EINVAL,
	       send_ex(1, 1, 38, resp, 0, 0, 0, 32));
	h = header(id, 0, 2, 2);
	attr(&h, 0, 0, 8, MAND, 0, 1);
	attr(&h, 1, 1, 48, MAND, 0, resp);
	expect("ioctl QUERY_PORT before GET_CONTEXT: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0, 6, 4);
	attr(&h, 0, 0, 8, MAND, 0, 1);
	attr(&h, 1, 1, 8, MAND, 0, 0);
	attr(&h, 2, 2, 4, MAND, 0, 0);
	attr(&h, 3, 3, 32, MAND, 0, resp);
	expect("ioctl QUERY_GID_ENTRY before GET_CONTEXT: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 16, 0, 1);
	attr(&h, 0, 0, 0, MAND, 0, 0);
	expect("ioctl ASYNC_EVENT_ALLOC before GET_CONTEXT: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	expect("write ALLOC_PD before GET_CONTEXT: EINVAL", EINVAL, send_cmd(3, 4, 2, p, 8, 16));
	expect("write CREATE_COMP_CHANNEL before GET_CONTEXT: EINVAL", EINVAL, send_cmd(17, 4, 1, p, 8, 16));
	expect("write DEALLOC_PD before GET_CONTEXT (no objects): ENOENT", ENOENT,
	       send_cmd(4, 3, 0, p + 8, 4, 12));
	h = header(id, 1, 0, 1);
	attr(&h, 0, 0, 0, MAND, 0, 0);
	expect("ioctl PD DESTROY before GET_CONTEXT (no objects): ENOENT", ENOENT, call(VERBS_IOCTL, &h));
	h = header(id, 0, 0, 3);
	attr(&h, 0, 2, 8, MAND, 0, 1);
	attr(&h, 1, 0, 8, MAND, 0, resp);
	attr(&h, 2, 1, 176, MAND, 0, resp);
	expect("INVOKE_WRITE QUERY_DEVICE before GET_CONTEXT: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	expect("mlx5 UAR_OBJ_ALLOC before GET_CONTEXT: EINVAL", EINVAL, uar_alloc(id, 1, NULL, NULL));
	h = header(id, 3, 0, 1);
	attr(&h, 0, 0, 0, MAND, 0, 0);
	expect("CQ_CREATE before GET_CONTEXT: EINVAL (its handle needs the context)", EINVAL,
	       call(VERBS_IOCTL, &h));
	expect("mmap before GET_CONTEXT: EINVAL", EINVAL, map(0x900000, 4096, PROT_WRITE, MAP_SHARED, 1));
}

/* One attribute spec of a method, for the sweeps below. */
struct spec {
	const char *name;
	uint16_t id;
	int min, max;	/* lengths accepted; max -1: any above min */
	int mandatory;	/* missing: EINVAL */
};

/* The attributes' checks (C's uverbs_set_attr, uverbs_process_attr, the mandatory check) on one
 * method, whose valid request is `valid` (n attributes). Each case breaks one attribute. */
static void attr_sweep(uint32_t id, const char *method, uint16_t object, uint16_t meth,
		       const struct hdr *valid, int n, const struct spec *specs, int nspecs,
		       int tail_errno)
{
	struct hdr h;
	int i, len;

	for (i = 0; i < nspecs; i++) {
		const struct spec *s = &specs[i];
		int slot = -1, k;

		for (k = 0; k < n; k++) {
			uint16_t aid;

			memcpy(&aid, valid->attrs + 16 * k, 2);
			if (aid == s->id)
				slot = k;
		}
		if (slot < 0)
			continue;
		for (len = 0; len <= 64; len++) {
			if (len >= s->min && (s->max < 0 || len <= s->max))
				continue;
			if (len > 16 && len != 33 && len != 64 && len != s->min - 1)
				continue;
			h = *valid;
			memcpy(h.attrs + 16 * slot + 2, &(uint16_t){ len }, 2);
			expect(NAME("%s: %s of %d bytes: EINVAL", method, s->name, len), EINVAL,
			       call(VERBS_IOCTL, &h));
		}
		h = *valid;
		memcpy(h.attrs + 16 * slot + 6, &(uint16_t){ 1 }, 2);
		expect(NAME("%s: %s with attr_data set: EINVAL", method, s->name), EINVAL,
		       call(VERBS_IOCTL, &h));
		if (s->mandatory) {
			h = header(id, object, meth, n - 1);
			for (k = 0, len = 0; k < n; k++)
				if (k != slot)
					memcpy(h.attrs + 16 * len++, valid->attrs + 16 * k, 16);
			expect(NAME("%s: %s missing: EINVAL", method, s->name), EINVAL,
			       call(VERBS_IOCTL, &h));
		}
		/* Given twice. */
		h = header(id, object, meth, n + 1);
		memcpy(h.attrs, valid->attrs, 16 * n);
		memcpy(h.attrs + 16 * n, valid->attrs + 16 * slot, 16);
		expect(NAME("%s: %s given twice: EINVAL", method, s->name), EINVAL, call(VERBS_IOCTL, &h));
	}
	/* Unknown attributes: mandatory ones stop the request; optional ones are ignored, so the
	 * request still fails as it would without them (no context: EINVAL). After the valid
	 * ones, an unknown mandatory attribute is only reached if they pass (`tail_errno`: an fd
	 * attribute needs the context, and fails first). */
	h = header(id, object, meth, n + 1);
	memcpy(h.attrs, valid->attrs, 16 * n);
	attr(&h, n, 29, 8, MAND, 0, 0);
	expect(NAME("%s: unknown mandatory attribute 29 last: %s", method, strerrorname_np(tail_errno)),
	       tail_errno, call(VERBS_IOCTL, &h));
	attr(&h, n, 0x1005, 8, MAND, 0, 0);
	expect(NAME("%s: unknown mandatory driver attribute 0x1005 last: %s", method,
		    strerrorname_np(tail_errno)), tail_errno, call(VERBS_IOCTL, &h));
	attr(&h, n, 29, 8, 0, 0, 0);
	expect(NAME("%s: unknown optional attribute 29, ignored (no context): EINVAL", method), EINVAL,
	       call(VERBS_IOCTL, &h));
	/* Array order: the first failing attribute decides. */
	h = header(id, object, meth, n + 1);
	attr(&h, 0, 29, 8, MAND, 0, 0);
	memcpy(h.attrs + 16, valid->attrs, 16 * n);
	expect(NAME("%s: unknown mandatory attribute first: EPROTONOSUPPORT", method), EPROTONOSUPPORT,
	       call(VERBS_IOCTL, &h));
	h = header(id, object, meth, n + 1);
	memcpy(h.attrs, valid->attrs, 16 * n);
	memcpy(h.attrs + 2, &(uint16_t){ 3 }, 2);
	attr(&h, n, 29, 8, MAND, 0, 0);
	expect(NAME("%s: a bad length before an unknown mandatory attribute: EINVAL", method), EINVAL,
	       call(VERBS_IOCTL, &h));
}

/* The device's methods' attribute checks, before there is a context. */
static void method_attrs(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf;
	struct hdr v;

	v = header(id, 0, 2, 2);
	attr(&v, 0, 0, 8, MAND, 0, 1);
	attr(&v, 1, 1, 48, MAND, 0, resp);
	attr_sweep(id, "QUERY_PORT", 0, 2, &v, 2,
		   (const struct spec[]){ { "PORT_NUM", 0, 8, 8, 1 }, { "RESP", 1, 48, -1, 1 } }, 2, EPROTONOSUPPORT);

	v = header(id, 0, 6, 4);
	attr(&v, 0, 0, 8, MAND, 0, 1);
	attr(&v, 1, 1, 8, MAND, 0, 0);
	attr(&v, 2, 2, 4, MAND, 0, 0);
	attr(&v, 3, 3, 32, MAND, 0, resp);
	attr_sweep(id, "QUERY_GID_ENTRY", 0, 6, &v, 4,
		   (const struct spec[]){ { "PORT", 0, 8, 8, 1 }, { "GID_INDEX", 1, 8, 8, 1 },
					  { "FLAGS", 2, 4, 8, 1 }, { "RESP_ENTRY", 3, 32, -1, 1 } }, 4,
		   EPROTONOSUPPORT);

	v = header(id, 0, 0, 3);
	attr(&v, 0, 2, 8, MAND, 0, 1);
	attr(&v, 1, 0, 8, MAND, 0, resp);
	attr(&v, 2, 1, 176, MAND, 0, resp);
	attr_sweep(id, "INVOKE_WRITE", 0, 0, &v, 3,
		   (const struct spec[]){ { "WRITE_CMD", 2, 8, 8, 1 }, { "CORE_IN", 0, 4, -1, 0 } }, 2,
		   EPROTONOSUPPORT);

	v = header(id, 16, 0, 1);
	attr(&v, 0, 0, 0, MAND, 0, 0);
	attr_sweep(id, "ASYNC_EVENT_ALLOC", 16, 0, &v, 1,
		   (const struct spec[]){ { "FD_HANDLE", 0, 0, 0, 1 } }, 1, EINVAL);

	/* INVOKE_WRITE's command: C's write-table lookup and sizes. */
	v = header(id, 0, 0, 1);
	attr(&v, 0, 2, 8, MAND, 0, 1ull << 32);
	expect("INVOKE_WRITE: a command above 32 bits: EINVAL", EINVAL, call(VERBS_IOCTL, &v));
	attr(&v, 0, 2, 8, MAND, 0, 0x100);
	expect("INVOKE_WRITE: command with bit 8 set: EINVAL", EINVAL, call(VERBS_IOCTL, &v));
	attr(&v, 0, 2, 8, MAND, 0, 41);
	expect("INVOKE_WRITE: command 41, past the table: EOPNOTSUPP", EOPNOTSUPP, call(VERBS_IOCTL, &v));
	attr(&v, 0, 2, 8, MAND, 0, 7);
	expect("INVOKE_WRITE: command 7, a hole: EOPNOTSUPP", EOPNOTSUPP, call(VERBS_IOCTL, &v));
	attr(&v, 0, 2, 8, MAND, 0, 1);
	expect("INVOKE_WRITE: QUERY_DEVICE without CORE_IN: ENOSPC", ENOSPC, call(VERBS_IOCTL, &v));
	v = header(id, 0, 0, 3);
	attr(&v, 0, 2, 8, MAND, 0, 1);
	attr(&v, 1, 0, 8, MAND, 0, resp);
	attr(&v, 2, 1, 175, MAND, 0, resp);
	expect("INVOKE_WRITE: QUERY_DEVICE with a 175-byte CORE_OUT: ENOSPC", ENOSPC,
	       call(VERBS_IOCTL, &v));
	attr(&v, 1, 0, 4, MAND, 0, resp);
	attr(&v, 2, 1, 176, MAND, 0, resp);
	expect("INVOKE_WRITE: QUERY_DEVICE with a 4-byte CORE_IN: ENOSPC", ENOSPC,
	       call(VERBS_IOCTL, &v));
	attr(&v, 0, 2, 8, MAND, 0, 0x80000001u);
	expect("INVOKE_WRITE: EX_QUERY_DEVICE (no sizes checked) without a context: EINVAL", EINVAL,
	       call(VERBS_IOCTL, &v));
}

/* mlx5's GET_CONTEXT request (struct mlx5_ib_alloc_ucontext_req_v2). */
struct uctx_req {
	uint32_t total_num_bfregs, num_low_latency_bfregs, flags, comp_mask;
	uint8_t max_cqe_version, reserved0;
	uint16_t reserved1;
	uint32_t reserved2;
	uint64_t lib_caps;
};

/* GET_CONTEXT by ioctl with `req` of `len` bytes (inline when 8 or fewer). */
static int get_context(uint32_t id, const struct uctx_req *req, uint16_t len)
{
	struct hdr h = header(id, 0, 3, 4);
	uint64_t inline_req = 0;

	memcpy(&inline_req, req, len < 8 ? len : 8);
	attr(&h, 0, 0, 4, MAND, 0, (uintptr_t)resp_buf);
	attr(&h, 1, 1, 8, MAND, 0, (uintptr_t)resp_buf + 8);
	attr(&h, 2, 0x1000, len, MAND, 0, len <= 8 ? inline_req : (uintptr_t)req);
	attr(&h, 3, 0x1001, 72, MAND, 0, (uintptr_t)resp_buf + 64);
	return call(VERBS_IOCTL, &h);
}

/* Completion channels: a new fd each, empty until a CQ completes. */
static void channels(void)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[8];
	int32_t cfd;
	int rc;

	memcpy(p, &resp, 8);
	memset(resp_buf, 0xff, 4);
	rc = send_cmd(17, 4, 1, p, 8, 16);
	memcpy(&cfd, resp_buf, 4);
	if (!rc && (cfd < 0 || fcntl(cfd, F_SETFL, O_NONBLOCK)))
		rc = EBADMSG;
	expect("CREATE_COMP_CHANNEL: a new fd", 0, rc);
	expect("completion channel: a non-blocking read of an empty one: EAGAIN", EAGAIN, rd(cfd, 8));
	expect("completion channel: a 4-byte read of an empty one: EAGAIN", EAGAIN, rd(cfd, 4));
	expect("completion channel: closing it", 0, close(cfd) ? errno : 0);
	rc = send_cmd(17, 4, 1, p, 8, 16);
	memcpy(&kept_channel, resp_buf, 4);
	if (!rc && (kept_channel < 0 || fcntl(kept_channel, F_SETFL, O_NONBLOCK)))
		rc = EBADMSG;
	expect("CREATE_COMP_CHANNEL: another, kept past the device file's close", 0, rc);
	expect("CREATE_COMP_CHANNEL: a 3-word response buffer (zero-filled): success", 0,
	       (rc = send_cmd(17, 4, 3, p, 8, 16)) ? rc : (close(*(int32_t *)resp_buf) ? errno : 0));
}

/* Memory the MR cases register. */
static uint8_t mr_buf[65536] __attribute__((aligned(4096)));

/* REG_MR by write(): `struct ib_uverbs_reg_mr`; the handle answered goes to *handle. */
static int reg_mr(uint64_t start, uint64_t len, uint64_t va, uint32_t pd, uint32_t access,
		  uint32_t *handle)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[40];
	int rc;

	memcpy(p, &resp, 8);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, &va, 8);
	memcpy(p + 32, &pd, 4);
	memcpy(p + 36, &access, 4);
	memset(resp_buf, 0xff, 12);
	rc = send_cmd(9, 12, 3, p, 40, 48);
	if (handle)
		memcpy(handle, resp_buf, 4);
	return rc;
}

/* Memory regions (PD 0 is alive): access rights, addresses, PDs, destruction. */
static void mrs(uint32_t id)
{
	const uint32_t rw = 1 | 2 | 4;	/* local write, remote write, remote read */
	uint64_t buf = (uintptr_t)mr_buf;
	uint32_t mr0 = ~0u, mr1 = ~0u, h;
	uint8_t p[8];
	struct hdr hd;

	memset(mr_buf, 0x5a, sizeof(mr_buf));
	expect("REG_MR of 64 KiB in PD 0: success", 0, reg_mr(buf, sizeof(mr_buf), buf, 0, rw, &mr0));
	expect("REG_MR of 100 bytes at offset 100, remote read: success", 0,
	       reg_mr(buf + 100, 100, 0x10064, 0, 4, &mr1));
	expect("REG_MR: start and hca_va differ within a page: EINVAL", EINVAL,
	       reg_mr(buf + 1, 4096, buf, 0, rw, NULL));
	expect("REG_MR: remote write without local write: EINVAL", EINVAL,
	       reg_mr(buf, 4096, buf, 0, 2, NULL));
	expect("REG_MR: remote atomic without local write: EINVAL", EINVAL,
	       reg_mr(buf, 4096, buf, 0, 8, NULL));
	expect("REG_MR: access bit 10 (unknown): EINVAL", EINVAL, reg_mr(buf, 4096, buf, 0, 1u << 10, NULL));
	expect("REG_MR: access bit 30 (unknown): EINVAL", EINVAL, reg_mr(buf, 4096, buf, 0, 1u << 30, NULL));
	expect("REG_MR: on-demand paging (none here): EOPNOTSUPP", EOPNOTSUPP,
	       reg_mr(buf, 4096, buf, 0, 1 | 64, NULL));
	expect("REG_MR: flush global (not supported): EOPNOTSUPP", EOPNOTSUPP,
	       reg_mr(buf, 4096, buf, 0, 1 | 256, NULL));
	expect("REG_MR: flush persistent (not supported): EOPNOTSUPP", EOPNOTSUPP,
	       reg_mr(buf, 4096, buf, 0, 1 | 512, NULL));
	expect("REG_MR: PD handle 99 (none): ENOENT", ENOENT, reg_mr(buf, 4096, buf, 99, rw, NULL));
	expect("REG_MR: the PD handle of an MR: EINVAL", EINVAL, reg_mr(buf, 4096, buf, mr0, rw, NULL));
	expect("REG_MR: memory at address 0 (unmapped): EFAULT", EFAULT, reg_mr(0, 4096, 0, 0, rw, NULL));
	expect("REG_MR: a range that wraps: EINVAL", EINVAL,
	       reg_mr(0xfffffffffffff000ull, 0x2000, 0xfffffffffffff000ull, 0, rw, NULL));

	memset(p, 0, sizeof(p));
	expect("DEALLOC_PD of PD 0, which has MRs: EBUSY", EBUSY, send_cmd(4, 3, 0, p, 4, 12));
	hd = header(id, 1, 0, 1);
	attr(&hd, 0, 0, 0, MAND, 0, 0);
	expect("ioctl PD DESTROY of PD 0, which has MRs: EBUSY", EBUSY, call(VERBS_IOCTL, &hd));
	memcpy(p, &mr0, 4);
	expect("DEREG_MR of the 64 KiB MR: success", 0, send_cmd(13, 3, 0, p, 4, 12));
	expect("DEREG_MR of it again: ENOENT", ENOENT, send_cmd(13, 3, 0, p, 4, 12));
	h = 0;
	memcpy(p, &h, 4);
	expect("DEREG_MR of a PD's handle: EINVAL", EINVAL, send_cmd(13, 3, 0, p, 4, 12));
	hd = header(id, 7, 1, 1);
	attr(&hd, 0, 0, 0, MAND, 0, 0);
	expect("ioctl MR DESTROY of a PD's handle: EINVAL", EINVAL, call(VERBS_IOCTL, &hd));
	attr(&hd, 0, 0, 0, MAND, 0, mr1);
	expect("ioctl MR DESTROY of the small MR: success", 0, call(VERBS_IOCTL, &hd));
	expect("ioctl MR DESTROY of it again: ENOENT", ENOENT, call(VERBS_IOCTL, &hd));
	/* An MR left for close to destroy (before its PD). */
	expect("REG_MR in PD 0, left for close: success", 0, reg_mr(buf, 8192, buf, 0, 1, NULL));
}

/* Protection domains: handles (the lowest free number), destruction by write() and ioctl. */
/* mlx5's UAR object and what mmap() maps, with a context (dynamic UARs). */
static void uars(uint32_t id)
{
	uint64_t off = 0, off2 = 0;
	uint32_t a = ~0u, b = ~0u, c = ~0u;
	struct hdr h;
	void *m;

	expect("UAR_OBJ_ALLOC of type 2: EOPNOTSUPP", EOPNOTSUPP, uar_alloc(id, 2, NULL, NULL));
	expect("UAR_OBJ_ALLOC of type 2^32 (past the enum's u32): EINVAL", EINVAL,
	       uar_alloc(id, 1ull << 32, NULL, NULL));
	expect("UAR_OBJ_ALLOC of a blue-flame UAR (no write-combining here): EOPNOTSUPP", EOPNOTSUPP,
	       uar_alloc(id, 0, NULL, NULL));
	h = header(id, 0x1008, 0x1000, 4);
	attr(&h, 0, 0x1000, 0, MAND, 0, 0);
	attr(&h, 1, 0x1001, 8, MAND, 0, 1);
	attr(&h, 2, 0x1004, 4, MAND, 0, (uintptr_t)&uar_page_id);
	attr(&h, 3, 0x1003, 4, MAND, 0, (uintptr_t)&uar_len);
	expect("UAR_OBJ_ALLOC without MMAP_OFFSET: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 3, 0x1002, 8, MAND, 0, (uintptr_t)&off);
	expect("UAR_OBJ_ALLOC without MMAP_LENGTH: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0x1008, 0x1000, 5);
	attr(&h, 0, 0x1000, 8, MAND, 0, 0);
	attr(&h, 1, 0x1001, 8, MAND, 0, 1);
	attr(&h, 2, 0x1004, 4, MAND, 0, (uintptr_t)&uar_page_id);
	attr(&h, 3, 0x1003, 4, MAND, 0, (uintptr_t)&uar_len);
	attr(&h, 4, 0x1002, 8, MAND, 0, (uintptr_t)&off);
	expect("UAR_OBJ_ALLOC with a handle of length 8: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0x1000, 0, MAND, 0, 0);
	attr(&h, 2, 0x1004, 8, MAND, 0, (uintptr_t)&uar_page_id);
	expect("UAR_OBJ_ALLOC with an 8-byte PAGE_ID: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 2, 0x1004, 4, MAND, 0, (uintptr_t)&uar_page_id);
	attr(&h, 4, 0x1002, 4, MAND, 0, (uintptr_t)&off);
	expect("UAR_OBJ_ALLOC with a 4-byte MMAP_OFFSET: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 1, 0x1001, 4, MAND, 0, 1);
	attr(&h, 4, 0x1002, 8, MAND, 0, (uintptr_t)&off);
	expect("UAR_OBJ_ALLOC with a 4-byte TYPE: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0x1008, 0x1002, 0);
	expect("the UAR object's unknown method 0x1002: EPROTONOSUPPORT", EPROTONOSUPPORT,
	       call(VERBS_IOCTL, &h));

	off = 0;
	expect("UAR_OBJ_ALLOC non-cached: success", 0, uar_alloc(id, 1, &a, &off));
	expect(NAME("the first UAR maps at 0x900000, one page (got %#llx, %u)",
		    (unsigned long long)off, uar_len), 0, off == 0x900000 && uar_len == 4096 ? 0 : EBADMSG);
	expect("UAR_OBJ_ALLOC non-cached again: success", 0, uar_alloc(id, 1, &b, &off2));
	expect(NAME("the second maps at 0x901000 (got %#llx)", (unsigned long long)off2), 0,
	       off2 == 0x901000 ? 0 : EBADMSG);
	expect("mmap of the first UAR, shared, writable: success", 0,
	       map(0x900000, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of the first UAR, private: EINVAL", EINVAL,
	       map(0x900000, 4096, PROT_WRITE, MAP_PRIVATE, 1));
	expect("mmap of the first UAR, two pages: EINVAL", EINVAL,
	       map(0x900000, 8192, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap at 0x902000 (no UAR there): EINVAL", EINVAL,
	       map(0x902000, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of static UAR page 0 (dynamic UARs only): EINVAL", EINVAL,
	       map(0, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of a non-cached static UAR page: EINVAL", EINVAL,
	       map(0x300000, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of a write-combined page (no write-combining): EPERM", EPERM,
	       map(0x200000, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of an allocated write-combined page: EPERM", EPERM,
	       map(0x600000, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of contiguous pages: ENOSYS", ENOSYS, map(0x100000, 4096, PROT_READ, MAP_SHARED, 1));
	expect("mmap of the core clock, read-only: success", 0,
	       map(0x500000, 4096, PROT_READ, MAP_SHARED, 0));
	expect("the core clock's mapping cannot be made writable: EACCES", EACCES,
	       mprotect(kept, 4096, PROT_READ | PROT_WRITE) ? errno : 0);
	munmap(kept, 4096);
	expect("mmap of the core clock, writable: EPERM", EPERM,
	       map(0x500000, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of the core clock, two pages: EINVAL", EINVAL,
	       map(0x500000, 8192, PROT_READ, MAP_SHARED, 1));
	expect("mmap of clock info index 2 (only 0, version 1, exists): EOPNOTSUPP", EOPNOTSUPP,
	       map(0x702000, 4096, PROT_READ, MAP_SHARED, 1));
	expect("mmap of clock info, private: EINVAL", EINVAL, map(0x700000, 4096, PROT_READ, MAP_PRIVATE, 1));
	expect("mmap of clock info, writable: EPERM", EPERM,
	       map(0x700000, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 1));
	expect("mmap of clock info: EOPNOTSUPP", EOPNOTSUPP, map(0x700000, 4096, PROT_READ, MAP_SHARED, 1));

	/* A mapping keeps its UAR (and offset) past the object's destruction. */
	expect("mmap of the second UAR, kept: success", 0, map(0x901000, 4096, PROT_WRITE, MAP_SHARED, 0));
	m = kept;
	expect("UAR_OBJ_DESTROY of the second UAR: success", 0, uar_destroy(id, b));
	expect("UAR_OBJ_DESTROY of it again: ENOENT", ENOENT, uar_destroy(id, b));
	expect("mmap of its offset after the destruction: EINVAL", EINVAL,
	       map(0x901000, 4096, PROT_WRITE, MAP_SHARED, 1));
	expect("UAR_OBJ_ALLOC while the destroyed one is mapped: success", 0, uar_alloc(id, 1, &c, &off));
	expect(NAME("its offset is past the mapped one: 0x902000 (got %#llx)", (unsigned long long)off),
	       0, off == 0x902000 ? 0 : EBADMSG);
	munmap(m, 4096);
	expect("UAR_OBJ_DESTROY of the third: success", 0, uar_destroy(id, c));
	expect("UAR_OBJ_ALLOC once the mapping went: success", 0, uar_alloc(id, 1, &c, &off));
	expect(NAME("its offset is the freed 0x901000 (got %#llx)", (unsigned long long)off), 0,
	       off == 0x901000 ? 0 : EBADMSG);
	expect("UAR_OBJ_DESTROY of a PD's handle: EINVAL", EINVAL, uar_destroy(id, 0));
	expect("UAR_OBJ_DESTROY of handle 99 (none): ENOENT", ENOENT, uar_destroy(id, 99));
	h = header(id, 1, 0, 1);
	attr(&h, 0, 0, 0, MAND, 0, a);
	expect("PD DESTROY of a UAR's handle: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	/* The first and the last UAR stay for close to destroy. */
}

/* CQ memory for the CQ cases: rings of 64 CQEs of 64 bytes, doorbell records. */
static uint8_t cq_buf[4][4096] __attribute__((aligned(4096)));
static uint64_t cq_db[4][8] __attribute__((aligned(64)));

/* struct mlx5_ib_create_cq */
struct mlx5_create_cq {
	uint64_t buf_addr, db_addr;
	uint32_t cqe_size;
	uint8_t cqe_comp_en, cqe_comp_res_format;
	uint16_t flags, uar_page_index, reserved0;
	uint32_t reserved1;
};

/* libmlx5's request for CQ memory `k` on UAR page `uar`. */
static struct mlx5_create_cq cq_req(int k, uint32_t uar)
{
	return (struct mlx5_create_cq){
		.buf_addr = (uintptr_t)cq_buf[k], .db_addr = (uintptr_t)cq_db[k], .cqe_size = 64,
		.flags = 2 /* MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX */, .uar_page_index = uar,
	};
}

/* ioctl CQ_CREATE (object 3, method 0) as libibverbs sends it; channel/event_fd < -1: not sent;
 * flags ~0u: not sent. Answers through *handle, *cqe and *cqn (mlx5's answer). */
static int cq_create(uint32_t id, uint32_t cqe, uint32_t vector, int64_t channel, int64_t event_fd,
		     uint32_t flags, const void *uhw, uint16_t uhw_len, uint32_t *handle,
		     uint32_t *resp_cqe, uint32_t *cqn)
{
	static uint8_t in[64];
	uint32_t rcqe = ~0u, out[2] = { ~0u, ~0u };
	struct hdr h;
	int n = 0, rc;

	memcpy(in, uhw, uhw_len);
	h = header(id, 3, 0, 0);
	attr(&h, n++, 0, 0, MAND, 0, 0);
	attr(&h, n++, 1, 4, MAND, 0, cqe);
	attr(&h, n++, 2, 8, MAND, 0, 0x1234);
	attr(&h, n++, 4, 4, MAND, 0, vector);
	attr(&h, n++, 6, 4, MAND, 0, (uintptr_t)&rcqe);
	if (channel >= -1)
		attr(&h, n++, 3, 0, MAND, 0, channel);
	if (event_fd >= -1)
		attr(&h, n++, 7, 0, MAND, 0, event_fd);
	if (flags != ~0u)
		attr(&h, n++, 5, 4, MAND, 0, flags);
	attr(&h, n++, 0x1000, uhw_len, MAND, 0, uhw_len <= 8 ? *(uint64_t *)in : (uintptr_t)in);
	attr(&h, n++, 0x1001, 8, MAND, 0, (uintptr_t)out);
	h.num_attrs = n;
	h.length = 24 + 16 * n;
	rc = call(VERBS_IOCTL, &h);
	if (handle)
		memcpy(handle, h.attrs + 8, 4);
	if (resp_cqe)
		*resp_cqe = rcqe;
	if (cqn)
		*cqn = out[0];
	return rc;
}

/* ioctl CQ_DESTROY (object 3, method 1); the counts answered go to resp[2]. */
static int cq_destroy(uint32_t id, uint64_t handle, uint32_t *resp)
{
	struct hdr h = header(id, 3, 1, 2);

	attr(&h, 0, 0, 0, MAND, 0, handle);
	attr(&h, 1, 1, 8, MAND, 0, (uintptr_t)resp);
	return call(VERBS_IOCTL, &h);
}

static void qps(uint32_t id, uint32_t uar, uint32_t cq);
static void srqs(uint32_t id, uint32_t uar, uint32_t cq);

/* CQs, with a context and a UAR page (`uar`) to name. */
static void cqs(uint32_t id, uint32_t uar)
{
	struct mlx5_create_cq r = cq_req(0, uar);
	uint32_t h0 = ~0u, h1 = ~0u, cqe = 0, cqn = ~0u, counts[2] = { ~0u, ~0u };
	uint8_t big[40], p[64];
	uint64_t resp = (uintptr_t)resp_buf;

	expect("CQ_CREATE of 0 entries: EINVAL", EINVAL, cq_create(id, 0, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE on vector 99: EINVAL", EINVAL, cq_create(id, 60, 99, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE with flag bit 2: EINVAL", EINVAL, cq_create(id, 60, 0, -2, -2, 4, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE with a channel fd -1: EBADF", EBADF, cq_create(id, 60, 0, -1, -2, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE with a channel fd past an int: EINVAL", EINVAL,
	       cq_create(id, 60, 0, 1ll << 31, -2, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE with the device file as its channel: EBADF", EBADF,
	       cq_create(id, 60, 0, fd, -2, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE with a channel as its async event file: EBADF", EBADF,
	       cq_create(id, 60, 0, -2, kept_channel, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE of 2^31 entries: EINVAL", EINVAL,
	       cq_create(id, 0x7fffffff, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	expect("CQ_CREATE with a 16-byte mlx5 request: EINVAL", EINVAL,
	       cq_create(id, 60, 0, -2, -2, ~0u, &r, 16, NULL, NULL, NULL));
	memset(big, 0, sizeof(big));
	memcpy(big, &r, 32);
	big[39] = 1;
	expect("CQ_CREATE with a 40-byte mlx5 request, non-zero past 32: EOPNOTSUPP", EOPNOTSUPP,
	       cq_create(id, 60, 0, -2, -2, ~0u, big, 40, NULL, NULL, NULL));
	r.cqe_size = 32;
	expect("CQ_CREATE with 32-byte CQEs: EINVAL", EINVAL, cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.flags |= 8;
	expect("CQ_CREATE with mlx5 flag bit 3: EINVAL", EINVAL, cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.reserved1 = 1;
	expect("CQ_CREATE with mlx5's reserved1 set: EINVAL", EINVAL, cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.flags = 0;
	expect("CQ_CREATE without a UAR page (dynamic UARs): EINVAL", EINVAL,
	       cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.buf_addr = 0;
	expect("CQ_CREATE with its ring at address 0: EFAULT", EFAULT, cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.db_addr = 0;
	expect("CQ_CREATE with its doorbell record at address 0: EFAULT", EFAULT,
	       cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.cqe_comp_en = 1;
	r.cqe_comp_res_format = 1;
	expect("CQ_CREATE with CQE compression (none here): EOPNOTSUPP", EOPNOTSUPP,
	       cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));
	r = cq_req(0, uar);
	r.flags |= 1;
	expect("CQ_CREATE with 64-byte CQEs padded to 128: EOPNOTSUPP", EOPNOTSUPP,
	       cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, NULL, NULL, NULL));

	r = cq_req(0, uar);
	expect("CQ_CREATE of 60 entries with the kept channel: success", 0,
	       cq_create(id, 60, 0, kept_channel, -2, 1, &r, 32, &h0, &cqe, &cqn));
	expect(NAME("its size is 63 and mlx5 answered a CQ number (%u, %#x)", cqe, cqn), 0,
	       cqe == 63 && cqn != ~0u ? 0 : EBADMSG);
	r = cq_req(1, uar);
	expect("CQ_CREATE of 1 entry: success", 0, cq_create(id, 1, 0, -2, -2, ~0u, &r, 32, &h1, &cqe, NULL));
	expect(NAME("its size is 1 (%u)", cqe), 0, cqe == 1 ? 0 : EBADMSG);
	expect("CQ_DESTROY of a PD's handle: EINVAL", EINVAL, cq_destroy(id, 0, counts));
	expect("CQ_DESTROY of the first: success", 0, cq_destroy(id, h0, counts));
	expect(NAME("it reported no events (%u, %u)", counts[0], counts[1]), 0,
	       counts[0] == 0 && counts[1] == 0 ? 0 : EBADMSG);
	expect("CQ_DESTROY of it again: ENOENT", ENOENT, cq_destroy(id, h0, counts));

	/* write(): CREATE_CQ with mlx5's request after the core's, EX_CREATE_CQ, DESTROY_CQ. */
	r = cq_req(2, uar);
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &(uint64_t){ 0x99 }, 8);
	memcpy(p + 16, &(uint32_t){ 10 }, 4);
	memcpy(p + 24, &(int32_t){ -1 }, 4);
	memcpy(p + 32, &r, 32);
	memset(resp_buf, 0xff, 16);
	expect("write CREATE_CQ of 10 entries, mlx5's request after: success", 0,
	       send_cmd(18, 18, 4, p, 64, 72));
	memcpy(&h0, resp_buf, 4);
	memcpy(&cqe, resp_buf + 4, 4);
	expect(NAME("it answered its handle and size 15 (%u)", cqe), 0, cqe == 15 ? 0 : EBADMSG);
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &h0, 4);
	memset(resp_buf, 0xff, 8);
	expect("write DESTROY_CQ of it: success", 0, send_cmd(20, 6, 2, p, 16, 24));
	expect("it reported no events", 0, memcmp(resp_buf, "\0\0\0\0\0\0\0\0", 8) ? EBADMSG : 0);
	expect("write DESTROY_CQ of it again: ENOENT", ENOENT, send_cmd(20, 6, 2, p, 16, 24));
	expect("write CREATE_CQ with channel fd 0 (not a channel): EBADF", EBADF,
	       send_cmd(18, 18, 4, (memset(p, 0, sizeof(p)), memcpy(p, &resp, 8), memcpy(p + 16, &(uint32_t){ 10 }, 4),
				    memcpy(p + 32, &r, 32), p), 64, 72));
	/* EX_CREATE_CQ: a comp_mask set. */
	{
		struct {
			uint32_t command;
			uint16_t in_words, out_words;
			uint64_t response;
			uint16_t pin, pout;
			uint32_t reserved;
			uint64_t user_handle;
			uint32_t cqe, comp_vector;
			int32_t comp_channel;
			uint32_t comp_mask, flags, reserved2;
			struct mlx5_create_cq drv;
		} __attribute__((packed)) x;

		memset(&x, 0, sizeof(x));
		x.command = 0x80000000u | 18;
		x.in_words = 4;
		x.out_words = 2;
		x.response = resp;
		x.pin = 4;
		x.pout = 1;
		x.cqe = 10;
		x.comp_channel = -1;
		x.comp_mask = 1;
		x.drv = r;
		expect("write EX_CREATE_CQ with a comp_mask: EINVAL", EINVAL, wr(&x, sizeof(x)));
		x.comp_mask = 0;
		x.reserved2 = 1;
		expect("write EX_CREATE_CQ with its reserved word set: EINVAL", EINVAL, wr(&x, sizeof(x)));
		x.reserved2 = 0;
		memset(resp_buf, 0xff, 16);
		expect("write EX_CREATE_CQ of 10 entries: success", 0, wr(&x, sizeof(x)));
		memcpy(&cqe, resp_buf + 4, 4);
		expect(NAME("it answered size 15 and response_length 16 (%u, %u)", cqe, *(uint32_t *)(resp_buf + 12)),
		       0, cqe == 15 && *(uint32_t *)(resp_buf + 12) == 16 ? 0 : EBADMSG);
	}
	qps(id, uar, h1);
	srqs(id, uar, h1);
	/* The 1-entry CQ (with QPs on it) and the EX one stay for close to destroy. */
}

/* QP memory: receive ring of 16 x 32 bytes, then send ring of 64 x 64 bytes. */
static uint8_t qp_buf[8192] __attribute__((aligned(4096)));
static uint64_t qp_db[8] __attribute__((aligned(64)));

/* struct mlx5_ib_create_qp */
struct mlx5_create_qp {
	uint64_t buf_addr, db_addr;
	uint32_t sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx, bfreg_index;
	uint64_t sq_buf_addr;
	uint32_t ece_options;
	uint16_t dci_streams, reserved;
};

static struct mlx5_create_qp qp_req(uint32_t uar)
{
	return (struct mlx5_create_qp){
		.buf_addr = (uintptr_t)qp_buf, .db_addr = (uintptr_t)qp_db, .sq_wqe_count = 64,
		.rq_wqe_count = 16, .rq_wqe_shift = 5, .flags = 1u << 10 /* UAR_PAGE_INDEX */,
		.uidx = 1, .bfreg_index = uar,
	};
}

/* ioctl QP_CREATE (object 4, method 0) of `type` in PD `pd` with CQ `cq` for both queues;
 * pd/cq ~0u: not sent; flags ~0u: not sent. Answers the handle, the caps and mlx5's bfreg. */
/* When set, QP_CREATE's mlx5 attribute points here, with this length, instead of at `drv`. */
static uint64_t qp_drv_addr;
static uint16_t qp_drv_len;

static int qp_create(uint32_t id, uint64_t type, uint32_t pd, uint32_t cq, uint32_t flags,
		     const struct mlx5_create_qp *drv, uint32_t *handle, uint32_t *caps,
		     uint32_t *bfreg)
{
	static uint32_t cap[5], rcap[5], qpn, out[10];
	struct hdr h;
	int n = 0, rc;

	cap[0] = 64; cap[1] = 16; cap[2] = 1; cap[3] = 1; cap[4] = 0;
	memset(rcap, 0xff, sizeof(rcap));
	memset(out, 0xff, sizeof(out));
	h = header(id, 4, 0, 0);
	attr(&h, n++, 0, 0, MAND, 0, 0);
	if (pd != ~0u)
		attr(&h, n++, 2, 0, MAND, 0, pd);
	if (cq != ~0u) {
		attr(&h, n++, 4, 0, MAND, 0, cq);
		attr(&h, n++, 5, 0, MAND, 0, cq);
	}
	attr(&h, n++, 7, 8, MAND, 0, 0x5678);
	attr(&h, n++, 8, 20, MAND, 0, (uintptr_t)cap);
	attr(&h, n++, 9, 8, MAND, 0, type);
	if (flags != ~0u)
		attr(&h, n++, 10, 4, MAND, 0, flags);
	attr(&h, n++, 13, 20, MAND, 0, (uintptr_t)rcap);
	attr(&h, n++, 14, 4, MAND, 0, (uintptr_t)&qpn);
	if (qp_drv_len)
		attr(&h, n++, 0x1000, qp_drv_len, MAND, 0, qp_drv_addr);
	else
		attr(&h, n++, 0x1000, sizeof(*drv), MAND, 0, (uintptr_t)drv);
	attr(&h, n++, 0x1001, 40, MAND, 0, (uintptr_t)out);
	h.num_attrs = n;
	h.length = 24 + 16 * n;
	rc = call(VERBS_IOCTL, &h);
	if (handle)
		memcpy(handle, h.attrs + 8, 4);
	if (caps)
		memcpy(caps, rcap, sizeof(rcap));
	if (bfreg)
		*bfreg = out[0];
	return rc;
}

/* Values the next MODIFY_QP sends for the P_Key index and max_dest_rd_atomic (0: none). */
static uint16_t qp_modify_pkey;
static uint8_t qp_modify_rd_atomic;

/* write MODIFY_QP (26) of QP `qp`: `mask`, state, port, and the path's port (with a path, the
 * destination LID is 1 and the path MTU 1024). */
static int qp_modify(uint32_t qp, uint32_t mask, uint8_t state, uint8_t port, uint8_t dest_port)
{
	uint8_t p[112];

	memset(p, 0, sizeof(p));
	p[31] = dest_port;
	if (dest_port) {
		p[20] = 1;
		p[98] = 3; /* IB_MTU_1024 */
	}
	memcpy(p + 92, &qp_modify_pkey, 2);
	p[102] = qp_modify_rd_atomic;
	memcpy(p + 64, &qp, 4);
	memcpy(p + 68, &mask, 4);
	p[96] = state;
	p[104] = port;
	return send_cmd(26, 30, 0, p, 112, 120);
}

/* QPs, with PD 0 alive, CQ `cq` and UAR page `uar`. */
static void qps(uint32_t id, uint32_t uar, uint32_t cq)
{
	struct mlx5_create_qp r = qp_req(uar);
	uint32_t h = ~0u, caps[5], bfreg = 0, ev = ~0u;
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[16];
	struct hdr hd;

	expect("QP_CREATE of type 99: EINVAL", EINVAL, qp_create(id, 99, 0, cq, ~0u, &r, NULL, NULL, NULL));
	expect("QP_CREATE without a PD: ENOENT", ENOENT, qp_create(id, 2, ~0u, cq, ~0u, &r, NULL, NULL, NULL));
	expect("QP_CREATE without CQs: ENOENT", ENOENT, qp_create(id, 2, 0, ~0u, ~0u, &r, NULL, NULL, NULL));
	expect("QP_CREATE with a CQ's handle as its PD: EINVAL", EINVAL,
	       qp_create(id, 2, cq, cq, ~0u, &r, NULL, NULL, NULL));
	expect("QP_CREATE of an RC QP blocking multicast loopback: EINVAL", EINVAL,
	       qp_create(id, 2, 0, cq, 1u << 1, &r, NULL, NULL, NULL));
	expect("QP_CREATE with create flag bit 0: EINVAL", EINVAL, qp_create(id, 2, 0, cq, 1, &r, NULL, NULL, NULL));
	r.flags |= 1u << 12;
	expect("QP_CREATE with mlx5 flag bit 12: EINVAL", EINVAL, qp_create(id, 2, 0, cq, ~0u, &r, NULL, NULL, NULL));
	r = qp_req(uar);
	r.flags = 1u << 3;
	expect("QP_CREATE naming a blue-flame register (dynamic UARs): EINVAL", EINVAL,
	       qp_create(id, 2, 0, cq, ~0u, &r, NULL, NULL, NULL));
	r = qp_req(uar);
	r.uidx = 0xffffff;
	expect("QP_CREATE with the default user index (CQE version 1): EINVAL", EINVAL,
	       qp_create(id, 2, 0, cq, ~0u, &r, NULL, NULL, NULL));
	r = qp_req(uar);
	r.sq_wqe_count = 48;
	expect("QP_CREATE with 48 send blocks (not a power of two): EINVAL", EINVAL,
	       qp_create(id, 2, 0, cq, ~0u, &r, NULL, NULL, NULL));
	r = qp_req(uar);
	r.buf_addr = 0;
	expect("QP_CREATE with its rings at address 0: EFAULT", EFAULT,
	       qp_create(id, 2, 0, cq, ~0u, &r, NULL, NULL, NULL));

	/* The request at the very top of the address space, longer than mlx5's structure: the
	 * address of its tail (past byte 54) wraps around 2^64, as C's pointer arithmetic wraps
	 * (no overflow may panic the kernel); the tail cannot be read, so it is not "cleared"
	 * (C's ib_is_udata_cleared: false, EINVAL). */
	qp_drv_addr = ~0ull - 7;
	qp_drv_len = 64;
	expect("QP_CREATE with mlx5's request at 2^64-8 (64 bytes): EINVAL", EINVAL,
	       qp_create(id, 2, 0, cq, ~0u, &r, NULL, NULL, NULL));
	qp_drv_len = 0;

	r = qp_req(uar);
	expect("QP_CREATE of an RC QP signalling every send: success", 0,
	       qp_create(id, 2, 0, cq, 1u << 12, &r, &h, caps, &bfreg));
	expect(NAME("its caps are the request's (%u %u %u %u %u) and mlx5 answers no bfreg (%#x)", caps[0],
		    caps[1], caps[2], caps[3], caps[4], bfreg), 0,
	       caps[0] == 64 && caps[1] == 16 && caps[2] == 1 && caps[3] == 1 && caps[4] == 0 &&
	       bfreg == 0x80000000u ? 0 : EBADMSG);
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &h, 4);
	memset(resp_buf, 0xff, 128);
	expect("write QUERY_QP: success", 0, send_cmd(25, 6, 32, p, 16, 24));
	expect(NAME("it reports RESET, the receive queue (16, 2 SGEs) and no send sizes (%u %u %u %u %u, state %u)",
		    *(uint32_t *)(resp_buf + 64), *(uint32_t *)(resp_buf + 68), *(uint32_t *)(resp_buf + 72),
		    *(uint32_t *)(resp_buf + 76), *(uint32_t *)(resp_buf + 80), resp_buf[108]), 0,
	       *(uint32_t *)(resp_buf + 64) == 0 && *(uint32_t *)(resp_buf + 68) == 16 &&
	       *(uint32_t *)(resp_buf + 72) == 0 && *(uint32_t *)(resp_buf + 76) == 2 &&
	       *(uint32_t *)(resp_buf + 80) == 0 && resp_buf[108] == 0 && resp_buf[122] == 1 ? 0 : EBADMSG);
	expect("MODIFY_QP RESET to RTR: EINVAL", EINVAL, qp_modify(h, 1, 2, 0, 0));
	expect("MODIFY_QP to INIT on port 9: EINVAL", EINVAL, qp_modify(h, 1 | 16 | 32 | 8, 1, 9, 0));
	expect("MODIFY_QP to state 7: EINVAL", EINVAL, qp_modify(h, 1, 7, 0, 0));
	expect("MODIFY_QP with mask bit 21: EOPNOTSUPP", EOPNOTSUPP, qp_modify(h, 1u << 21, 0, 0, 0));
	qp_modify_pkey = 0xffff;
	expect("MODIFY_QP to INIT with P_Key index 0xffff (past the table): EINVAL", EINVAL,
	       qp_modify(h, 1 | 16 | 32 | 8, 1, 1, 0));
	qp_modify_pkey = 0;
	expect("MODIFY_QP to INIT on port 1: success", 0, qp_modify(h, 1 | 16 | 32 | 8, 1, 1, 0));
	qp_modify_rd_atomic = 255;
	expect("MODIFY_QP to RTR answering 255 RDMA reads at once (past the device's): EINVAL", EINVAL,
	       qp_modify(h, 1 | 128 | 256 | 1048576 | 4096 | 131072 | 32768, 2, 0, 1));
	qp_modify_rd_atomic = 0;
	expect("MODIFY_QP to RTR with a path on port 2 (INIT set 1): EINVAL", EINVAL,
	       qp_modify(h, 1 | 128 | 256 | 1048576 | 4096 | 131072 | 32768, 2, 0, 2));
	expect("MODIFY_QP of handle 99: ENOENT", ENOENT, qp_modify(99, 1, 1, 0, 0));
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &cq, 4);
	expect("DESTROY_CQ of the QP's CQ: EBUSY", EBUSY, send_cmd(20, 6, 2, p, 16, 24));
	hd = header(id, 4, 1, 2);
	attr(&hd, 0, 0, 0, MAND, 0, h);
	attr(&hd, 1, 1, 4, MAND, 0, (uintptr_t)&ev);
	expect("QP_DESTROY: success", 0, call(VERBS_IOCTL, &hd));
	expect(NAME("it reported no events (%u)", ev), 0, ev == 0 ? 0 : EBADMSG);
	expect("QP_DESTROY again: ENOENT", ENOENT, call(VERBS_IOCTL, &hd));
	r = qp_req(uar);
	expect("QP_CREATE of a UD QP, left for close: success", 0,
	       qp_create(id, 4, 0, cq, ~0u, &r, NULL, NULL, NULL));
}

/* SRQ memory: 64 WQEs of 32 bytes, and a doorbell record. */
static uint8_t srq_buf[2][4096] __attribute__((aligned(4096)));
static uint64_t srq_db[2][8] __attribute__((aligned(64)));

/* struct mlx5_ib_create_srq */
struct mlx5_create_srq {
	uint64_t buf_addr, db_addr;
	uint32_t flags, reserved0, uidx, reserved1;
};

static struct mlx5_create_srq srq_req(int k)
{
	return (struct mlx5_create_srq){ .buf_addr = (uintptr_t)srq_buf[k],
					 .db_addr = (uintptr_t)srq_db[k], .uidx = 0xffffff };
}

/* write CREATE_SRQ (32) of `max_wr` x `max_sge` in PD `pd`, mlx5's request `drv` of
 * `drv_len` bytes; the answer (handle, max_wr, max_sge, srqn) goes to resp_buf. */
static int srq_create_write(uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit,
			    const struct mlx5_create_srq *drv, size_t drv_len)
{
	uint64_t resp = (uintptr_t)resp_buf, uh = 0x1234;
	uint8_t p[32 + sizeof(*drv)];

	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &uh, 8);
	memcpy(p + 16, &pd, 4);
	memcpy(p + 20, &max_wr, 4);
	memcpy(p + 24, &max_sge, 4);
	memcpy(p + 28, &limit, 4);
	memcpy(p + 32, drv, drv_len);
	memset(resp_buf, 0xff, 24);
	/* Response: 16 core bytes and mlx5's 8 (srqn, reserved). */
	return send_cmd(32, (uint16_t)((8 + 32 + drv_len) / 4), 6, p, 32 + drv_len, 8 + 32 + drv_len);
}

/* ioctl SRQ_CREATE (object 5, method 0) of `type`; cq ~0u: no CQ attribute. */
static int srq_create_ioctl(uint32_t id, uint64_t type, uint32_t pd, uint32_t cq, uint32_t *handle)
{
	static uint32_t max_wr, max_sge, out[2];
	struct mlx5_create_srq r = srq_req(1);
	struct hdr h;
	int n = 0, rc;

	h = header(id, 5, 0, 0);
	attr(&h, n++, 0, 0, MAND, 0, 0);
	attr(&h, n++, 1, 0, MAND, 0, pd);
	if (cq != ~0u)
		attr(&h, n++, 3, 0, MAND, 0, cq);
	attr(&h, n++, 4, 8, MAND, 0, 0x4321);
	attr(&h, n++, 5, 4, MAND, 0, 16);
	attr(&h, n++, 6, 4, MAND, 0, 1);
	attr(&h, n++, 7, 4, MAND, 0, 0);
	attr(&h, n++, 9, 8, MAND, 0, type);
	attr(&h, n++, 11, 4, MAND, 0, (uintptr_t)&max_wr);
	attr(&h, n++, 12, 4, MAND, 0, (uintptr_t)&max_sge);
	attr(&h, n++, 0x1000, sizeof(r), MAND, 0, (uintptr_t)&r);
	attr(&h, n++, 0x1001, 8, MAND, 0, (uintptr_t)out);
	h.num_attrs = n;
	h.length = 24 + 16 * n;
	rc = call(VERBS_IOCTL, &h);
	if (handle)
		memcpy(handle, h.attrs + 8, 4);
	return rc;
}

/* SRQs, with PD 0 alive and CQ `cq`: sizes, mlx5's request, types, modify, query, QPs on
 * them, destruction. */
static void srqs(uint32_t id, uint32_t uar, uint32_t cq)
{
	struct mlx5_create_srq r = srq_req(0);
	uint64_t resp = (uintptr_t)resp_buf;
	uint32_t h = ~0u, h2 = ~0u, ev = ~0u, mw, mg, lim;
	uint8_t p[16];
	struct hdr hd;

	expect("CREATE_SRQ of 1 << 20 WRs (past log_max_srq_sz): EINVAL", EINVAL,
	       srq_create_write(0, 1u << 20, 1, 0, &r, sizeof(r)));
	expect("CREATE_SRQ of 1000 SGEs: EINVAL", EINVAL, srq_create_write(0, 16, 1000, 0, &r, sizeof(r)));
	expect("CREATE_SRQ with a 16-byte mlx5 request: EINVAL", EINVAL,
	       srq_create_write(0, 16, 1, 0, &r, 16));
	r.reserved0 = 1;
	expect("CREATE_SRQ with mlx5's reserved0 set: EINVAL", EINVAL, srq_create_write(0, 16, 1, 0, &r, sizeof(r)));
	r = srq_req(0);
	r.reserved1 = 1;
	expect("CREATE_SRQ with mlx5's reserved1 set: EINVAL", EINVAL, srq_create_write(0, 16, 1, 0, &r, sizeof(r)));
	r = srq_req(0);
	r.buf_addr = 0;
	expect("CREATE_SRQ with its ring at address 0: EFAULT", EFAULT,
	       srq_create_write(0, 16, 1, 0, &r, sizeof(r)));
	r = srq_req(0);
	r.buf_addr += 8;
	expect("CREATE_SRQ with its ring 8 bytes into a page: EINVAL", EINVAL,
	       srq_create_write(0, 16, 1, 0, &r, sizeof(r)));
	r = srq_req(0);
	expect("CREATE_SRQ in a CQ's handle as PD: EINVAL", EINVAL, srq_create_write(cq, 16, 1, 0, &r, sizeof(r)));
	expect("CREATE_SRQ in PD handle 99: ENOENT", ENOENT, srq_create_write(99, 16, 1, 0, &r, sizeof(r)));
	expect("CREATE_SRQ of 16 x 1 in PD 0: success", 0, srq_create_write(0, 16, 1, 0, &r, sizeof(r)));
	memcpy(&h, resp_buf, 4);
	memcpy(&mw, resp_buf + 4, 4);
	memcpy(&mg, resp_buf + 8, 4);
	expect(NAME("it holds 31 WRs of 1 SGE, srqn 0 in the core answer (%u, %u, %u)", mw, mg,
		    *(uint32_t *)(resp_buf + 12)),
	       0, mw == 31 && mg == 1 && *(uint32_t *)(resp_buf + 12) == 0 ? 0 : EBADMSG);

	expect("SRQ_CREATE of type 7: EINVAL", EINVAL, srq_create_ioctl(id, 7, 0, ~0u, NULL));
	expect("SRQ_CREATE of an XRC SRQ without a CQ: ENOENT", ENOENT, srq_create_ioctl(id, 1, 0, ~0u, NULL));
	expect("SRQ_CREATE of an XRC SRQ without an XRC domain: ENOENT", ENOENT,
	       srq_create_ioctl(id, 1, 0, cq, NULL));
	expect("SRQ_CREATE of a tag-matching SRQ without a tag count: ENOENT", ENOENT,
	       srq_create_ioctl(id, 2, 0, cq, NULL));
	expect("SRQ_CREATE with a CQ's handle as PD: EINVAL", EINVAL, srq_create_ioctl(id, 0, cq, ~0u, NULL));
	expect("SRQ_CREATE of a basic SRQ: success", 0, srq_create_ioctl(id, 0, 0, ~0u, &h2));

	/* MODIFY_SRQ: handle, attr_mask, max_wr, srq_limit. */
	memset(p, 0, sizeof(p));
	memcpy(p, &h, 4);
	mw = 1;		/* IB_SRQ_MAX_WR */
	memcpy(p + 4, &mw, 4);
	mw = 64;
	memcpy(p + 8, &mw, 4);
	expect("MODIFY_SRQ resizing: EINVAL", EINVAL, send_cmd(33, 6, 0, p, 16, 24));
	mw = 2;		/* IB_SRQ_LIMIT */
	memcpy(p + 4, &mw, 4);
	lim = 32;
	memcpy(p + 12, &lim, 4);
	expect("MODIFY_SRQ with a limit of 32 (the ring holds 32 WQEs): EINVAL", EINVAL,
	       send_cmd(33, 6, 0, p, 16, 24));
	lim = 5;
	memcpy(p + 12, &lim, 4);
	expect("MODIFY_SRQ with a limit of 5: success", 0, send_cmd(33, 6, 0, p, 16, 24));
	mw = 1u << 2;
	memcpy(p + 4, &mw, 4);
	expect("MODIFY_SRQ with an unknown mask bit only: success (ignored, as C)", 0,
	       send_cmd(33, 6, 0, p, 16, 24));
	memcpy(p, &cq, 4);
	expect("MODIFY_SRQ of a CQ's handle: EINVAL", EINVAL, send_cmd(33, 6, 0, p, 16, 24));
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &h, 4);
	memset(resp_buf, 0xff, 16);
	expect("QUERY_SRQ: success", 0, send_cmd(34, 6, 4, p, 16, 24));
	expect(NAME("it reports 31 WRs, 1 SGE, limit 5 (%u, %u, %u)", *(uint32_t *)resp_buf,
		    *(uint32_t *)(resp_buf + 4), *(uint32_t *)(resp_buf + 8)),
	       0, *(uint32_t *)resp_buf == 31 && *(uint32_t *)(resp_buf + 4) == 1 &&
	       *(uint32_t *)(resp_buf + 8) == 5 && *(uint32_t *)(resp_buf + 12) == 0 ? 0 : EBADMSG);
	memcpy(p + 8, &cq, 4);
	expect("QUERY_SRQ of a CQ's handle: EINVAL", EINVAL, send_cmd(34, 6, 4, p, 16, 24));

	/* A QP receiving from the SRQ keeps it. */
	{
		struct mlx5_create_qp q = qp_req(uar);
		static uint32_t cap[5], rcap[5], qpn, out[10];
		uint32_t qh;
		int n = 0;

		q.rq_wqe_count = 0;
		q.rq_wqe_shift = 0;
		cap[0] = 64; cap[1] = 0; cap[2] = 1; cap[3] = 0; cap[4] = 0;
		hd = header(id, 4, 0, 0);
		attr(&hd, n++, 0, 0, MAND, 0, 0);
		attr(&hd, n++, 2, 0, MAND, 0, 0);
		attr(&hd, n++, 3, 0, MAND, 0, h);
		attr(&hd, n++, 4, 0, MAND, 0, cq);
		attr(&hd, n++, 5, 0, MAND, 0, cq);
		attr(&hd, n++, 7, 8, MAND, 0, 0x5679);
		attr(&hd, n++, 8, 20, MAND, 0, (uintptr_t)cap);
		attr(&hd, n++, 9, 8, MAND, 0, 2);
		attr(&hd, n++, 13, 20, MAND, 0, (uintptr_t)rcap);
		attr(&hd, n++, 14, 4, MAND, 0, (uintptr_t)&qpn);
		attr(&hd, n++, 0x1000, sizeof(q), MAND, 0, (uintptr_t)&q);
		attr(&hd, n++, 0x1001, 40, MAND, 0, (uintptr_t)out);
		hd.num_attrs = n;
		hd.length = 24 + 16 * n;
		expect("QP_CREATE of an RC QP on the SRQ: success", 0, call(VERBS_IOCTL, &hd));
		memcpy(&qh, hd.attrs + 8, 4);
		(void)qh;
		attr(&hd, 2, 3, 0, MAND, 0, cq);
		expect("QP_CREATE with a CQ's handle as its SRQ: EINVAL", EINVAL, call(VERBS_IOCTL, &hd));
	}
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &h, 4);
	expect("DESTROY_SRQ of the QP's SRQ: EBUSY", EBUSY, send_cmd(35, 6, 1, p, 16, 24));
	hd = header(id, 5, 1, 2);
	attr(&hd, 0, 0, 0, MAND, 0, h2);
	attr(&hd, 1, 1, 4, MAND, 0, (uintptr_t)&ev);
	expect("SRQ_DESTROY of the other SRQ: success", 0, call(VERBS_IOCTL, &hd));
	expect(NAME("it reported no events (%u)", ev), 0, ev == 0 ? 0 : EBADMSG);
	expect("SRQ_DESTROY again: ENOENT", ENOENT, call(VERBS_IOCTL, &hd));
	memcpy(p + 8, &h2, 4);
	expect("DESTROY_SRQ of the destroyed one: ENOENT", ENOENT, send_cmd(35, 6, 1, p, 16, 24));
	/* The SRQ with its QP stays for close to destroy, in dependency order. */
}

static void pds(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint32_t handle;
	uint8_t p[16];
	struct hdr h;
	int k, rc;

	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	for (k = 0; k < 3; k++) {
		memset(resp_buf, 0xff, 8);
		rc = send_cmd(3, 4, 2, p, 8, 16);
		memcpy(&handle, resp_buf, 4);
		if (!rc && handle != (uint32_t)k)
			rc = EBADMSG;
		expect(NAME("write ALLOC_PD: handle %d", k), 0, rc);
	}
	expect("write ALLOC_PD without room for mlx5's answer: success (the answer is dropped)", 0,
	       send_cmd(3, 4, 1, p, 8, 16));
	memset(p, 0, sizeof(p));
	memcpy(p, &(uint32_t){ 7 }, 4);
	expect("write DEALLOC_PD of handle 7 (none): ENOENT", ENOENT, send_cmd(4, 3, 0, p, 4, 12));
	memcpy(p, &(uint32_t){ 1 }, 4);
	expect("write DEALLOC_PD of handle 1: success", 0, send_cmd(4, 3, 0, p, 4, 12));
	expect("write DEALLOC_PD of handle 1 again: ENOENT", ENOENT, send_cmd(4, 3, 0, p, 4, 12));
	memcpy(p, &resp, 8);
	memset(resp_buf, 0xff, 8);
	rc = send_cmd(3, 4, 2, p, 8, 16);
	memcpy(&handle, resp_buf, 4);
	if (!rc && handle != 1)
		rc = EBADMSG;
	expect("write ALLOC_PD after handle 1 was freed: handle 1 again", 0, rc);

	h = header(id, 1, 0, 1);
	attr(&h, 0, 0, 0, MAND, 0, 2);
	expect("ioctl PD DESTROY of handle 2: success", 0, call(VERBS_IOCTL, &h));
	expect("ioctl PD DESTROY of handle 2 again: ENOENT", ENOENT, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 0, MAND, 0, 1ull << 40);
	expect("ioctl PD DESTROY of handle 2^40: ENOENT", ENOENT, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 0, MAND, 0, (uint64_t)-1);
	expect("ioctl PD DESTROY of handle -1: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 0);
	expect("ioctl PD DESTROY with a handle of length 8: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 0, MAND, 1, 0);
	expect("ioctl PD DESTROY with attr_data set: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 1, 0, 0);
	expect("ioctl PD DESTROY without a handle: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 1, 1, 0);
	expect("the PD object's unknown method 1: EPROTONOSUPPORT", EPROTONOSUPPORT, call(VERBS_IOCTL, &h));
	mrs(id);
	/* Handles 0, 1 and 3 stay: closing the file destroys them. */
}

static void contexts(uint32_t id)
{
	const struct uctx_req good = { 16, 4, 0, 0, 1, 0, 0, 0, 3 };
	uint64_t resp = (uintptr_t)resp_buf;
	struct uctx_req r;
	struct hdr h;
	uint8_t p[64];
	unsigned int k;

	for (k = 1; k < 16; k++) {
		if (k == 8)
			continue;
		expect(NAME("GET_CONTEXT: mlx5 request of %u bytes: EINVAL", k), EINVAL,
		       get_context(id, &good, k));
	}
	r = good;
	r.flags = 2;
	expect("GET_CONTEXT: an unknown mlx5 flag: EOPNOTSUPP", EOPNOTSUPP, get_context(id, &r, 32));
	r = good;
	r.comp_mask = 1;
	expect("GET_CONTEXT: mlx5 comp_mask set: EOPNOTSUPP", EOPNOTSUPP, get_context(id, &r, 32));
	r = good;
	r.reserved0 = 1;
	expect("GET_CONTEXT: mlx5 reserved0 set: EOPNOTSUPP", EOPNOTSUPP, get_context(id, &r, 32));
	r = good;
	r.reserved1 = 1;
	expect("GET_CONTEXT: mlx5 reserved1 set: EOPNOTSUPP", EOPNOTSUPP, get_context(id, &r, 32));
	r = good;
	r.reserved2 = 1;
	expect("GET_CONTEXT: mlx5 reserved2 set: EOPNOTSUPP", EOPNOTSUPP, get_context(id, &r, 32));
	r = good;
	r.total_num_bfregs = 3;
	r.num_low_latency_bfregs = 4;
	expect("GET_CONTEXT: more low-latency bfregs than bfregs: EINVAL", EINVAL, get_context(id, &r, 32));
	r = good;
	r.flags = 1;
	expect("GET_CONTEXT: DEVX on a function without DEVX contexts: EINVAL", EINVAL,
	       get_context(id, &r, 32));
	h = header(id, 0, 3, 1);
	attr(&h, 0, 0, 2, MAND, 0, resp);
	expect("GET_CONTEXT: NUM_COMP_VECTORS of 2 bytes: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 1, 4, MAND, 0, resp);
	expect("GET_CONTEXT: CORE_SUPPORT of 4 bytes: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 2, 3, MAND, 0, resp);
	expect("GET_CONTEXT: FD_ARR of 3 bytes: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0x1000, 32, MAND, 1, resp);
	expect("GET_CONTEXT: UHW_IN with attr_data set: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0x1001, 72, MAND, 1, resp);
	expect("GET_CONTEXT: UHW_OUT with attr_data set: EINVAL", EINVAL, call(VERBS_IOCTL, &h));

	expect("GET_CONTEXT: libmlx5's request: success", 0, get_context(id, &good, 32));
	expect("GET_CONTEXT again on the same file: EINVAL", EINVAL, get_context(id, &good, 32));

	/* QUERY_PORT's port number. */
	h = header(id, 0, 2, 2);
	attr(&h, 1, 1, 48, MAND, 0, resp);
	attr(&h, 0, 0, 8, MAND, 0, 0);
	expect("QUERY_PORT: port 0: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 2);
	expect("QUERY_PORT: port 2 (one port): EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 257);
	expect("QUERY_PORT: port 257 (above u8): EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 1);
	expect("QUERY_PORT: port 1: success", 0, call(VERBS_IOCTL, &h));
	attr(&h, 1, 1, 64, MAND, 0, resp);
	expect("QUERY_PORT: a 64-byte response buffer (zero-filled past 48): success", 0,
	       call(VERBS_IOCTL, &h));

	/* QUERY_GID_ENTRY. */
	h = header(id, 0, 6, 4);
	attr(&h, 0, 0, 8, MAND, 0, 1);
	attr(&h, 1, 1, 8, MAND, 0, 0);
	attr(&h, 2, 2, 4, MAND, 0, 0);
	attr(&h, 3, 3, 32, MAND, 0, resp);
	expect("QUERY_GID_ENTRY: port 1 index 0: success", 0, call(VERBS_IOCTL, &h));
	attr(&h, 2, 2, 4, MAND, 0, 1);
	expect("QUERY_GID_ENTRY: flags 1: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 2, 2, 8, MAND, 0, 1ull << 32);
	expect("QUERY_GID_ENTRY: 8-byte flags with bit 32: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 2, 2, 8, MAND, 0, 0);
	attr(&h, 0, 0, 8, MAND, 0, 0);
	expect("QUERY_GID_ENTRY: port 0: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 2);
	expect("QUERY_GID_ENTRY: port 2: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 1ull << 32);
	expect("QUERY_GID_ENTRY: port above u32: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 0, 0, 8, MAND, 0, 1);
	for (k = 1; k < 8; k++) {
		uint8_t want[32] = { 0 };
		int rc;

		/* The subnet prefix and a zero interface id, as the port's GUIDInfo gives. */
		want[0] = 0xfe;
		want[1] = 0x80;
		want[16] = k;
		want[20] = 1;
		attr(&h, 1, 1, 8, MAND, 0, k);
		memset(resp_buf, 0xa5, 32);
		rc = call(VERBS_IOCTL, &h);
		if (!rc && memcmp(resp_buf, want, 32)) {
			int b;

			printf("# entry %u:", k);
			for (b = 0; b < 32; b++)
				printf(" %02x", resp_buf[b]);
			printf("\n");
			rc = EBADMSG;
		}
		expect(NAME("QUERY_GID_ENTRY: index %u: fe80::, its index, port 1, type IB", k), 0, rc);
	}
	attr(&h, 1, 1, 8, MAND, 0, 8);
	expect("QUERY_GID_ENTRY: index 8 (past the table): EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 1, 1, 8, MAND, 0, 0xffffffffu);
	expect("QUERY_GID_ENTRY: index 0xffffffff: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 1, 1, 8, MAND, 0, 1ull << 32);
	expect("QUERY_GID_ENTRY: index above u32: EINVAL", EINVAL, call(VERBS_IOCTL, &h));

	/* EX_QUERY_DEVICE: the core request and mlx5's part. */
	h = header(id, 0, 0, 3);
	attr(&h, 0, 2, 8, MAND, 0, 0x80000001u);
	attr(&h, 1, 0, 8, MAND, 0, 0);
	attr(&h, 2, 1, 304, MAND, 0, resp);
	expect("EX_QUERY_DEVICE: success", 0, call(VERBS_IOCTL, &h));
	attr(&h, 1, 0, 8, MAND, 0, 1);
	expect("EX_QUERY_DEVICE: comp_mask set: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	attr(&h, 1, 0, 8, MAND, 0, 1ull << 32);
	expect("EX_QUERY_DEVICE: reserved set: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	memset(p, 0, sizeof(p));
	p[12] = 1;
	attr(&h, 1, 0, 16, MAND, 0, (uintptr_t)p);
	expect("EX_QUERY_DEVICE: a 16-byte request with a non-zero tail: EOPNOTSUPP", EOPNOTSUPP,
	       call(VERBS_IOCTL, &h));
	p[12] = 0;
	expect("EX_QUERY_DEVICE: a 16-byte request with a zero tail: success", 0, call(VERBS_IOCTL, &h));
	h = header(id, 0, 0, 4);
	attr(&h, 0, 2, 8, MAND, 0, 0x80000001u);
	attr(&h, 1, 0, 8, MAND, 0, 0);
	attr(&h, 2, 1, 304, MAND, 0, resp);
	for (k = 1; k < 8; k++) {
		attr(&h, 3, 0x1001, k, MAND, 0, resp + 512);
		expect(NAME("EX_QUERY_DEVICE: mlx5 response buffer of %u bytes: EINVAL", k), EINVAL,
		       call(VERBS_IOCTL, &h));
	}
	attr(&h, 3, 0x1001, 104, MAND, 0, resp + 512);
	expect("EX_QUERY_DEVICE: mlx5 response of 104 bytes (rdma-core 44): success", 0,
	       call(VERBS_IOCTL, &h));
	attr(&h, 3, 0x1000, 8, MAND, 0, 1);
	expect("EX_QUERY_DEVICE: a non-zero mlx5 request: EOPNOTSUPP", EOPNOTSUPP, call(VERBS_IOCTL, &h));
	attr(&h, 3, 0x1000, 8, MAND, 0, 0);
	expect("EX_QUERY_DEVICE: a zero mlx5 request: success", 0, call(VERBS_IOCTL, &h));

	/* write() with a context: non-zero tails and ports. */
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	expect("write QUERY_DEVICE: success", 0, send_cmd(1, 4, 44, p, 8, 16));
	p[12] = 1;
	expect("write QUERY_DEVICE: a longer request with a non-zero tail: EOPNOTSUPP", EOPNOTSUPP,
	       send_cmd(1, 6, 44, p, 16, 24));
	memset(p + 8, 0, 8);
	for (k = 0; k < 4; k++) {
		p[8] = k;
		expect(NAME("write QUERY_PORT: port %u: %s", k, k == 1 ? "success" : "EINVAL"),
		       k == 1 ? 0 : EINVAL, send_cmd(2, 6, 10, p, 16, 24));
	}
	h = header(id, 16, 0, 1);
	attr(&h, 0, 0, 0, MAND, 0, 0);
	expect("ASYNC_EVENT_ALLOC with a context: success", 0, call(VERBS_IOCTL, &h));
	channels();
	pds(id);
	uars(id);
	cqs(id, uar_page_id);
}

/*
 * --hostile STACK: cases where the stacks answer differently on purpose, and every command path
 * under failing allocations. Needs FAILSLAB/FAIL_PAGE_ALLOC armed for fail-nth (the scenario
 * does it).
 *   - an RC QP whose receive WQEs are 8 bytes (rq_wqe_shift 3): rust refuses it (EINVAL: the
 *     device would be told of a ring 16 times the pinned memory), C 7.3.4 makes it;
 *   - each command below with its N-th kernel allocation failing (fail-nth armed by this
 *     thread just before the command), N = 1, 2, ... until a run does not reach its N-th: each
 *     fails cleanly or works (what it made is destroyed again, what it should have destroyed is
 *     destroyed without a fault); prints `sweep <command>: R runs, F failed`. Afterwards
 *     resource tracking lists none of this process's QPs (a freed QP listed would be read), and
 *     the scenario checks that every firmware object is back.
 */
static int fnth_fd = -1;
static uint32_t sw_uar, sw_cq, sw_made;

static void fnth_arm(int n)
{
	char b[16];

	snprintf(b, sizeof(b), "%d", n);
	if (pwrite(fnth_fd, b, strlen(b), 0) < 0)
		printf("# arming fail-nth: %s\n", strerror(errno));
}

/* Disarms; whether the armed fault was reached (fired). */
static int fnth_fired(void)
{
	char b[16] = { 0 };

	if (pread(fnth_fd, b, sizeof(b) - 1, 0) < 0)
		return 0;
	if (pwrite(fnth_fd, "0", 1, 0) < 0)
		printf("# disarming fail-nth: %s\n", strerror(errno));
	return atoi(b) == 0;
}

static int destroy_ioctl(uint32_t id, uint16_t object, uint32_t h)
{
	struct hdr hd = header(id, object, 1, 2);
	static uint32_t out[2];

	attr(&hd, 0, 0, 0, MAND, 0, h);
	attr(&hd, 1, 1, object == 3 ? 8 : 4, MAND, 0, (uintptr_t)out);
	return call(VERBS_IOCTL, &hd);
}

static int destroy_write(uint32_t command, uint32_t h, uint16_t out_words)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[16] = { 0 };

	if (command == 4 || command == 13) {	/* DEALLOC_PD, DEREG_MR: the handle only */
		memcpy(p, &h, 4);
		return send_cmd(command, 3, 0, p, 4, 12);
	}
	memcpy(p, &resp, 8);
	memcpy(p + 8, &h, 4);
	return send_cmd(command, 6, out_words, p, 16, 24);
}

/* The commands swept: each makes (or changes, or destroys) one object; `made` is what a
 * successful run left that the sweep destroys again. */
static int op_alloc_pd(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[8];
	int rc;

	(void)id;
	memcpy(p, &resp, 8);
	rc = send_cmd(3, 4, 2, p, 8, 16);
	memcpy(&sw_made, resp_buf, 4);
	return rc;
}
static void undo_pd(uint32_t id) { (void)id; destroy_write(4, sw_made, 0); }

static int op_reg_mr(uint32_t id)
{
	(void)id;
	return reg_mr((uintptr_t)mr_buf, 8192, (uintptr_t)mr_buf, 0, 1 | 2 | 4, &sw_made);
}
static void undo_mr(uint32_t id) { (void)id; destroy_write(13, sw_made, 0); }

static int op_cq_create(uint32_t id)
{
	struct mlx5_create_cq r = cq_req(1, sw_uar);

	return cq_create(id, 60, 0, -2, -2, ~0u, &r, 32, &sw_made, NULL, NULL);
}
static void undo_cq(uint32_t id) { destroy_ioctl(id, 3, sw_made); }

static int op_qp_create(uint32_t id)
{
	struct mlx5_create_qp r = qp_req(sw_uar);

	return qp_create(id, 2, 0, sw_cq, ~0u, &r, &sw_made, NULL, NULL);
}
static void undo_qp(uint32_t id) { destroy_ioctl(id, 4, sw_made); }

static int op_srq_create(uint32_t id)
{
	struct mlx5_create_srq r = srq_req(0);
	int rc;

	(void)id;
	rc = srq_create_write(0, 16, 1, 0, &r, sizeof(r));
	memcpy(&sw_made, resp_buf, 4);
	return rc;
}
static void undo_srq(uint32_t id) { (void)id; destroy_write(35, sw_made, 1); }

static int op_uar_alloc(uint32_t id)
{
	return uar_alloc(id, 1, &sw_made, NULL);
}
static void undo_uar(uint32_t id) { uar_destroy(id, sw_made); }

static int op_comp_channel(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[8];
	int rc;

	(void)id;
	memcpy(p, &resp, 8);
	rc = send_cmd(17, 4, 1, p, 8, 16);
	memcpy(&sw_made, resp_buf, 4);
	return rc;
}
static void undo_channel(uint32_t id) { (void)id; close((int)sw_made); }

/* Destroys: the object is made without a fault first. */
static uint32_t sw_target;
static int op_dealloc_pd(uint32_t id) { (void)id; return destroy_write(4, sw_target, 0); }
static int op_dereg_mr(uint32_t id) { (void)id; return destroy_write(13, sw_target, 0); }
static int op_cq_destroy(uint32_t id) { return destroy_ioctl(id, 3, sw_target); }
static int op_qp_destroy(uint32_t id) { return destroy_ioctl(id, 4, sw_target); }
static int op_srq_destroy(uint32_t id) { (void)id; return destroy_write(35, sw_target, 1); }

/* Changes of an object made without a fault (and destroyed after). */
static int op_rereg_mr(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf, start = (uintptr_t)mr_buf + 8192, len = 4096;
	uint32_t flags = 2, pd = 0, acc = 0;	/* moved to (the same) PD 0 */
	uint8_t p[48];

	(void)id;
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	memcpy(p + 8, &sw_target, 4);
	memcpy(p + 12, &flags, 4);
	memcpy(p + 16, &start, 8);
	memcpy(p + 24, &len, 8);
	memcpy(p + 32, &start, 8);
	memcpy(p + 40, &pd, 4);
	memcpy(p + 44, &acc, 4);
	return send_cmd(14, 14, 2, p, 48, 56);
}
static int op_modify_qp(uint32_t id)
{
	(void)id;
	return qp_modify(sw_target, 1 | 16 | 32 | 8, 1, 1, 0);
}
static int op_query_qp(uint32_t id)
{
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[16] = { 0 };

	(void)id;
	memcpy(p, &resp, 8);
	memcpy(p + 8, &sw_target, 4);
	return send_cmd(25, 6, 32, p, 16, 24);
}
static int op_modify_srq(uint32_t id)
{
	uint32_t q[4] = { sw_target, 2, 0, 5 };	/* IB_SRQ_LIMIT, limit 5 */

	(void)id;
	return send_cmd(33, 6, 0, q, 16, 24);
}

struct sweep_op {
	const char *name;
	int (*make)(uint32_t id);	/* before: makes sw_target (NULL: none) */
	void (*unmake)(uint32_t id);	/* after: destroys sw_target (NULL: none) */
	int (*op)(uint32_t id);		/* under fail-nth */
	void (*undo)(uint32_t id);	/* after a success (NULL: nothing) */
	int destroys;			/* a failed op leaves sw_target for unmake */
};

static int make_pd(uint32_t id) { int rc = op_alloc_pd(id); sw_target = sw_made; return rc; }
static int make_mr(uint32_t id) { int rc = op_reg_mr(id); sw_target = sw_made; return rc; }
static int make_cq(uint32_t id) { int rc = op_cq_create(id); sw_target = sw_made; return rc; }
static int make_qp(uint32_t id) { int rc = op_qp_create(id); sw_target = sw_made; return rc; }
static int make_srq(uint32_t id) { int rc = op_srq_create(id); sw_target = sw_made; return rc; }
static void unmake_pd(uint32_t id) { (void)id; destroy_write(4, sw_target, 0); }
static void unmake_mr(uint32_t id) { (void)id; destroy_write(13, sw_target, 0); }
static void unmake_cq(uint32_t id) { destroy_ioctl(id, 3, sw_target); }
static void unmake_qp(uint32_t id) { destroy_ioctl(id, 4, sw_target); }
static void unmake_srq(uint32_t id) { (void)id; destroy_write(35, sw_target, 1); }

static const struct sweep_op sweep_ops[] = {
	{ "ALLOC_PD", NULL, NULL, op_alloc_pd, undo_pd, 0 },
	{ "DEALLOC_PD", make_pd, unmake_pd, op_dealloc_pd, NULL, 1 },
	{ "REG_MR", NULL, NULL, op_reg_mr, undo_mr, 0 },
	{ "REREG_MR", make_mr, unmake_mr, op_rereg_mr, NULL, 0 },
	{ "DEREG_MR", make_mr, unmake_mr, op_dereg_mr, NULL, 1 },
	{ "CREATE_COMP_CHANNEL", NULL, NULL, op_comp_channel, undo_channel, 0 },
	{ "UAR_OBJ_ALLOC", NULL, NULL, op_uar_alloc, undo_uar, 0 },
	{ "CQ_CREATE", NULL, NULL, op_cq_create, undo_cq, 0 },
	{ "CQ_DESTROY", make_cq, unmake_cq, op_cq_destroy, NULL, 1 },
	{ "QP_CREATE", NULL, NULL, op_qp_create, undo_qp, 0 },
	{ "MODIFY_QP", make_qp, unmake_qp, op_modify_qp, NULL, 0 },
	{ "QUERY_QP", make_qp, unmake_qp, op_query_qp, NULL, 0 },
	{ "QP_DESTROY", make_qp, unmake_qp, op_qp_destroy, NULL, 1 },
	{ "CREATE_SRQ", NULL, NULL, op_srq_create, undo_srq, 0 },
	{ "MODIFY_SRQ", make_srq, unmake_srq, op_modify_srq, NULL, 0 },
	{ "DESTROY_SRQ", make_srq, unmake_srq, op_srq_destroy, NULL, 1 },
};

/* Sweeps one command: every allocation point in turn. */
static int sweep(uint32_t id, const struct sweep_op *o, int *points)
{
	int n, runs = 0, fails = 0, rc, fired;

	for (n = 1; n < 5000; n++) {
		if (o->make && o->make(id)) {
			printf("not ok - sweep %s: making its object failed without a fault\n", o->name);
			return 1;
		}
		fnth_arm(n);
		rc = o->op(id);
		fired = fnth_fired();
		runs++;
		if (rc)
			fails++;
		if (rc && !fired)
			printf("# sweep %s: point %d: %s without the fault firing\n", o->name, n,
			       strerrorname_np(rc) ?: "E?");
		if (!rc && o->undo)
			o->undo(id);
		if (o->unmake && (!o->destroys || rc))
			o->unmake(id);
		if (!fired)
			break;
	}
	printf("sweep %s: %d runs, %d failed\n", o->name, runs, fails);
	*points += runs - 1;
	return 0;
}

static int failnth_sweeps(uint32_t id, uint32_t uar, uint32_t cq)
{
	char cmd[128];
	unsigned int k;
	int points = 0, bad = 0;

	fnth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fnth_fd < 0) {
		printf("not ok - cannot open fail-nth: %s\n", strerror(errno));
		return 1;
	}
	sw_uar = uar;
	sw_cq = cq;
	/* Everything the kernel will touch in this process is faulted in before arming. */
	memset(qp_buf, 0, sizeof(qp_buf));
	memset(qp_db, 0, sizeof(qp_db));
	memset(cq_buf, 0, sizeof(cq_buf));
	memset(cq_db, 0, sizeof(cq_db));
	memset(srq_buf, 0, sizeof(srq_buf));
	memset(srq_db, 0, sizeof(srq_db));
	memset(mr_buf, 0, sizeof(mr_buf));
	memset(resp_buf, 0, sizeof(resp_buf));
	for (k = 0; k < sizeof(sweep_ops) / sizeof(sweep_ops[0]); k++)
		bad |= sweep(id, &sweep_ops[k], &points);
	printf("failnth: %d points failed over %u commands\n", points,
	       (unsigned int)(sizeof(sweep_ops) / sizeof(sweep_ops[0])));
	/* Resource tracking: no QP of this process is left (a freed one listed would be read). */
	snprintf(cmd, sizeof(cmd), "rdma res show qp 2>&1 | grep -c -e 'pid %d ' -e 'comm uverbs_badinpu'", getpid());
	fflush(stdout);
	{
		FILE *f = popen(cmd, "r");
		int listed = -1;

		if (f) {
			if (fscanf(f, "%d", &listed) != 1)
				listed = -1;
			pclose(f);
		}
		printf("# QPs of this process rdma res lists after the sweeps: %d\n", listed);
		if (listed != 0)
			bad = 1;
	}
	return bad;
}

static int hostile(uint32_t id, const char *stack)
{
	const struct uctx_req good = { 16, 4, 0, 0, 1, 0, 0, 0, 3 };
	struct mlx5_create_qp r;
	uint64_t resp = (uintptr_t)resp_buf;
	uint32_t cq = ~0u, h = ~0u;
	struct mlx5_create_cq c;
	uint8_t p[16];
	int rust = !strcmp(stack, "rust");

	expect("GET_CONTEXT: success", 0, get_context(id, &good, 32));
	memset(p, 0, sizeof(p));
	memcpy(p, &resp, 8);
	expect("write ALLOC_PD: success", 0, send_cmd(3, 4, 2, p, 8, 16));
	expect("UAR_OBJ_ALLOC: success", 0, uar_alloc(id, 1, NULL, NULL));
	c = cq_req(0, uar_page_id);
	expect("CQ_CREATE: success", 0, cq_create(id, 60, 0, -2, -2, ~0u, &c, 32, &cq, NULL, NULL));
	r = qp_req(uar_page_id);
	r.rq_wqe_shift = 3;
	expect(rust ? "QP_CREATE with 8-byte receive WQEs: EINVAL (rust; C makes it)"
		    : "QP_CREATE with 8-byte receive WQEs: success (C; rust refuses it)",
	       rust ? EINVAL : 0, qp_create(id, 2, 0, cq, ~0u, &r, &h, NULL, NULL));
	if (!rust && h != ~0u) {
		struct hdr hd = header(id, 4, 1, 2);
		uint32_t ev;

		attr(&hd, 0, 0, 0, MAND, 0, h);
		attr(&hd, 1, 1, 4, MAND, 0, (uintptr_t)&ev);
		expect("QP_DESTROY of it: success", 0, call(VERBS_IOCTL, &hd));
	}
	r = qp_req(uar_page_id);
	r.rq_wqe_shift = 12;
	h = ~0u;
	expect(rust ? "QP_CREATE with 4 KiB receive WQEs (past the context's stride field): EINVAL (rust; C makes it)"
		    : "QP_CREATE with 4 KiB receive WQEs (past the context's stride field): success (C; rust refuses it)",
	       rust ? EINVAL : 0, qp_create(id, 2, 0, cq, ~0u, &r, &h, NULL, NULL));
	if (!rust && h != ~0u)
		expect("QP_DESTROY of it: success", 0, destroy_ioctl(id, 4, h));
	/* The C stack's own failure paths are not ours to test (and C 7.3.4 leaves firmware QPs
	 * behind under them: see the scenario): the sweeps run on rust. */
	if (rust)
		expect("every command under every failing allocation: each failed cleanly or worked", 0,
		       failnth_sweeps(id, uar_page_id, cq) ? EBADMSG : 0);
	printf("uverbs_badinput: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/*
 * --fuzz SEED COUNT: COUNT seeded random but well-typed commands on one context, each printed
 * with its errno, for the same run on the other stack to be compared line by line (the
 * scenario uverbs-fuzz, C as the oracle). The generator only depends on SEED and on which
 * commands succeeded, so two stacks that answer alike print the same lines. Handles are
 * chosen among the live ones of the right type (mostly), of other types, destroyed ones and
 * numbers never given; sizes, flags, ports, states and masks among boundary values; and two
 * threads destroying the same object at once (how many succeeded is printed: one for a live
 * object; the other's errno depends on timing on C too). Kinds the
 * stacks handle differently on purpose (UC QPs, receive WQEs under 16 bytes) are not sent.
 */
static uint64_t fz_state;

static uint32_t fz(uint32_t n)
{
	fz_state ^= fz_state << 13;
	fz_state ^= fz_state >> 7;
	fz_state ^= fz_state << 17;
	return n ? (uint32_t)(fz_state % n) : 0;
}

#define FZ_HANDLES 64
enum { K_NONE, K_PD, K_MR, K_CQ, K_QP, K_SRQ, K_UAR, K_DEAD };
static uint8_t fz_kind[FZ_HANDLES];

static uint32_t fz_handle(int kind)
{
	uint32_t live[FZ_HANDLES], other[FZ_HANDLES], dead[FZ_HANDLES], nl = 0, no = 0, nd = 0, h;
	uint32_t r = fz(100);

	for (h = 0; h < FZ_HANDLES; h++) {
		if (fz_kind[h] == kind)
			live[nl++] = h;
		else if (fz_kind[h] == K_DEAD)
			dead[nd++] = h;
		else if (fz_kind[h] != K_NONE)
			other[no++] = h;
	}
	if (r < 75 && nl)
		return live[fz(nl)];
	if (r < 85 && no)
		return other[fz(no)];
	if (r < 93 && nd)
		return dead[fz(nd)];
	return fz(4) ? fz(FZ_HANDLES) : 0xffffffffu;
}

/* A handle answered by a create, recorded as `kind`. */
static void fz_made(uint32_t h, int kind)
{
	if (h < FZ_HANDLES)
		fz_kind[h] = kind;
}

static void fz_gone(uint32_t h)
{
	if (h < FZ_HANDLES && fz_kind[h] != K_NONE)
		fz_kind[h] = K_DEAD;
}

/* Two threads destroying the same object at once (the fuzzer's CONCURRENT_DESTROY). */
struct racer {
	uint32_t id, kind, h;
	pthread_barrier_t *start;
	int rc;
};

static int destroy_kind(uint32_t id, uint32_t kind, uint32_t h)
{
	switch (kind) {
	case K_PD: return destroy_write(4, h, 0);
	case K_MR: return destroy_write(13, h, 0);
	case K_CQ: return destroy_ioctl(id, 3, h);
	case K_QP: return destroy_ioctl(id, 4, h);
	default: return destroy_write(35, h, 1);
	}
}

static void *racer_run(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->start);
	r->rc = destroy_kind(r->id, r->kind, r->h);
	return NULL;
}

/* Both threads destroy `h` of `kind`; how many succeeded (exactly one for a live object, the
 * other refused: C answers ENOENT or EBUSY depending on the timing, so only the count is
 * compared). */
static int concurrent_destroy(uint32_t id, uint32_t kind, uint32_t h)
{
	pthread_barrier_t start;
	struct racer r[2] = { { id, kind, h, &start, 0 }, { id, kind, h, &start, 0 } };
	pthread_t t;
	int ok;

	pthread_barrier_init(&start, NULL, 2);
	if (pthread_create(&t, NULL, racer_run, &r[1])) {
		pthread_barrier_destroy(&start);
		return -1;
	}
	racer_run(&r[0]);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&start);
	ok = (r[0].rc == 0) + (r[1].rc == 0);
	return ok;
}

static int fuzz(uint32_t id, uint64_t seed, long count)
{
	static const uint32_t cqes[] = { 0, 1, 2, 31, 60, 63 };
	static const uint64_t lens[] = { 0, 1, 4096, 8192, 65536, 65537, 1ull << 40 };
	static const uint32_t offs[] = { 0, 1, 4096, 61440 };
	static const uint32_t access[] = { 0, 1, 2, 1 | 2, 1 | 4, 1 | 2 | 4 | 8, 8, 16, 32, 64, 1u << 10, 1u << 20 };
	static const uint32_t wrs[] = { 0, 1, 16, 32, 64, 65, 1u << 20 };
	static const uint8_t states[] = { 0, 1, 2, 3, 6, 7 };
	static const uint32_t masks[] = { 1, 1 | 16 | 32 | 8, 1 | 16 | 32 | 8 | 64, 16, 1 | 128 | 256 | 1048576 | 4096 | 131072 | 32768,
					  1 | 512 | 1024 | 2048 | 65536 | 8192, 1 | 65536, 1u << 21, 1 | 16 | 32 };
	const struct uctx_req good = { 16, 4, 0, 0, 1, 0, 0, 0, 3 };
	uint64_t resp = (uintptr_t)resp_buf;
	uint8_t p[128];
	uint32_t uar = 0;
	long i;
	int rc;

	fz_state = seed * 2654435761u + 1;
	rc = get_context(id, &good, 32);
	printf("fuzz: seed %llu, GET_CONTEXT -> %s\n", (unsigned long long)seed, rc ? strerrorname_np(rc) : "0");
	if (rc)
		return 1;
	if (!uar_alloc(id, 1, NULL, NULL))
		uar = uar_page_id;
	for (i = 0; i < count; i++) {
		uint32_t op = fz(16), h = 0, a = 0, b = 0, c = 0, made = ~0u;
		const char *name = "?";

		memset(p, 0, sizeof(p));
		memcpy(p, &resp, 8);
		memset(resp_buf, 0, 64);
		switch (op) {
		case 0: /* ALLOC_PD */
			name = "ALLOC_PD";
			rc = send_cmd(3, 4, 2, p, 8, 16);
			if (!rc)
				memcpy(&made, resp_buf, 4), fz_made(made, K_PD);
			break;
		case 1: /* DEALLOC_PD */
			name = "DEALLOC_PD";
			h = fz_handle(K_PD);
			memcpy(p, &h, 4);
			rc = send_cmd(4, 3, 0, p, 4, 12);
			if (!rc)
				fz_gone(h);
			break;
		case 2: { /* REG_MR */
			uint64_t start = (uintptr_t)mr_buf + offs[fz(4)], len = lens[fz(7)];
			uint64_t va = fz(4) ? start : start + fz(3) * 2048;

			name = "REG_MR";
			h = fz_handle(K_PD);
			a = access[fz(12)];
			b = (uint32_t)len;
			c = (uint32_t)(va - start);
			rc = reg_mr(start, len, va, h, a, &made);
			if (!rc)
				fz_made(made, K_MR);
			break;
		}
		case 3: /* DEREG_MR */
			name = "DEREG_MR";
			h = fz_handle(K_MR);
			memcpy(p, &h, 4);
			rc = send_cmd(13, 3, 0, p, 4, 12);
			if (!rc)
				fz_gone(h);
			break;
		case 4: { /* REREG_MR */
			uint64_t start = (uintptr_t)mr_buf + offs[fz(4)], len = lens[fz(7)];
			uint32_t pd;

			name = "REREG_MR";
			h = fz_handle(K_MR);
			a = fz(9); /* flags: 0 (EINVAL), 1-7, 8 (unknown) */
			pd = fz_handle(K_PD);
			b = access[fz(12)];
			c = (uint32_t)len;
			memcpy(p + 8, &h, 4);
			memcpy(p + 12, &a, 4);
			memcpy(p + 16, &start, 8);
			memcpy(p + 24, &len, 8);
			memcpy(p + 32, &start, 8);
			memcpy(p + 40, &pd, 4);
			memcpy(p + 44, &b, 4);
			rc = send_cmd(14, 14, 2, p, 48, 56);
			break;
		}
		case 5: { /* CQ_CREATE */
			struct mlx5_create_cq r = cq_req(fz(4), uar);

			name = "CQ_CREATE";
			a = cqes[fz(6)];
			b = fz(5) ? 0 : fz(3) ? 1 : 99;
			rc = cq_create(id, a, b, -2, -2, fz(6) ? ~0u : fz(3), &r, 32, &made, NULL, NULL);
			if (!rc)
				fz_made(made, K_CQ);
			break;
		}
		case 6: { /* CQ_DESTROY */
			uint32_t counts[2];

			name = "CQ_DESTROY";
			h = fz_handle(K_CQ);
			rc = cq_destroy(id, h, counts);
			if (!rc)
				fz_gone(h);
			break;
		}
		case 7: { /* QP_CREATE */
			static const uint64_t types[] = { 2, 2, 4, 99 };
			struct mlx5_create_qp r = qp_req(uar);
			uint32_t pd = fz_handle(K_PD), cq = fz_handle(K_CQ);

			name = "QP_CREATE";
			a = (uint32_t)types[fz(4)];
			b = fz(5) ? ~0u : fz(2) ? 1u << 12 : 1u << 1;
			if (!fz(5))
				r.sq_wqe_count = fz(2) ? 48 : 128;
			if (!fz(5))
				r.rq_wqe_shift = fz(2) ? 6 : 4;
			h = pd;
			c = cq;
			rc = qp_create(id, a, pd, cq, b, &r, &made, NULL, NULL);
			if (!rc)
				fz_made(made, K_QP);
			break;
		}
		case 8: /* MODIFY_QP */
			name = "MODIFY_QP";
			h = fz_handle(K_QP);
			a = masks[fz(9)];
			b = states[fz(6)];
			c = fz(4);
			qp_modify_pkey = fz(6) ? 0 : fz(2) ? 1 : 0xffff;
			qp_modify_rd_atomic = fz(4) ? 1 : fz(2) ? 0 : 255;
			rc = qp_modify(h, a, b, c, fz(3));
			qp_modify_pkey = 0;
			qp_modify_rd_atomic = 0;
			break;
		case 9: /* QUERY_QP */
			name = "QUERY_QP";
			h = fz_handle(K_QP);
			memcpy(p + 8, &h, 4);
			a = fz(2) ? 0x3ffff : 1;
			memcpy(p + 12, &a, 4);
			rc = send_cmd(25, 6, 32, p, 16, 24);
			break;
		case 10: { /* QP_DESTROY */
			struct hdr hd = header(id, 4, 1, 2);
			uint32_t ev;

			name = "QP_DESTROY";
			h = fz_handle(K_QP);
			attr(&hd, 0, 0, 0, MAND, 0, h);
			attr(&hd, 1, 1, 4, MAND, 0, (uintptr_t)&ev);
			rc = call(VERBS_IOCTL, &hd);
			if (!rc)
				fz_gone(h);
			break;
		}
		case 11: { /* CREATE_SRQ */
			struct mlx5_create_srq r = srq_req(fz(2));

			name = "CREATE_SRQ";
			h = fz_handle(K_PD);
			a = wrs[fz(7)];
			b = fz(3);
			c = fz(3) ? 0 : fz(2) ? 1 : 100;
			rc = srq_create_write(h, a, b, c, &r, sizeof(r));
			if (!rc)
				memcpy(&made, resp_buf, 4), fz_made(made, K_SRQ);
			break;
		}
		case 12: /* DESTROY_SRQ */
			name = "DESTROY_SRQ";
			h = fz_handle(K_SRQ);
			memcpy(p + 8, &h, 4);
			rc = send_cmd(35, 6, 1, p, 16, 24);
			if (!rc)
				fz_gone(h);
			break;
		case 13: /* MODIFY_SRQ */
			name = "MODIFY_SRQ";
			h = fz_handle(K_SRQ);
			a = fz(4);
			b = wrs[fz(7)];
			c = fz(3) ? fz(40) : 1000;
			memcpy(p, &h, 4);
			memcpy(p + 4, &a, 4);
			memcpy(p + 8, &b, 4);
			memcpy(p + 12, &c, 4);
			rc = send_cmd(33, 6, 0, p, 16, 24);
			break;
		case 15: { /* CONCURRENT_DESTROY */
			static const uint32_t kinds[] = { K_PD, K_MR, K_CQ, K_QP, K_SRQ };
			int won;

			name = "CONCURRENT_DESTROY";
			a = kinds[fz(5)];
			h = fz_handle(a);
			won = concurrent_destroy(id, a, h);
			/* Printed as the count of successes, not an errno. */
			b = (uint32_t)won;
			rc = won < 0 ? EAGAIN : 0;
			if (won > 0)
				fz_gone(h);
			break;
		}
		default: /* QUERY_PORT */
			name = "QUERY_PORT";
			a = fz(4);
			p[8] = a;
			rc = send_cmd(2, 6, 10, p, 16, 24);
			break;
		}
		if (rc || made == ~0u)
			printf("%ld %s %u %u %u %u -> %s\n", i, name, h, a, b, c,
			       rc ? strerrorname_np(rc) ?: "E?" : "0");
		else
			printf("%ld %s %u %u %u %u -> 0 made %u\n", i, name, h, a, b, c, made);
	}
	printf("fuzz: %ld commands\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/infiniband/uverbs0";
	uint32_t id = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	struct hdr h;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[1], "--hostile")) {
		fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			printf("uverbs_badinput: cannot open uverbs0: %s\n", strerror(errno));
			return 2;
		}
		return hostile(1, argv[2]);
	}
	if (argc > 3 && !strcmp(argv[1], "--fuzz")) {
		fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			printf("uverbs_badinput: cannot open uverbs0: %s\n", strerror(errno));
			return 2;
		}
		return fuzz(1, strtoull(argv[2], NULL, 0), strtol(argv[3], NULL, 0));
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("uverbs_badinput: cannot open %s: %s\n", path, strerror(errno));
		return 2;
	}

	expect("another ioctl command: ENOTTY", ENOTTY, call(0x1234, NULL));
	expect("RDMA_VERBS_IOCTL of another size: ENOTTY", ENOTTY, call(0xc0101b01u, NULL));
	expect("header at address 0: EFAULT", EFAULT, call(VERBS_IOCTL, NULL));

	h = header(id, 0, 0, 0);
	h.length = 23;
	expect("length shorter than the header: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0, 0, 0);
	h.length = 40;
	expect("length with an attribute num_attrs does not count: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0, 0, 2);
	h.length = 24 + 16;
	expect("num_attrs 2, length for 1: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0, 0, 255);
	expect("255 attributes: over a page (4104 bytes): EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0xffff, 0, 0);
	h.reserved1 = 1;
	expect("reserved1 set: EPROTONOSUPPORT", EPROTONOSUPPORT, call(VERBS_IOCTL, &h));
	h = header(id, 0xffff, 0, 0);
	h.reserved2 = 0x80000000u;
	expect("reserved2 set: EPROTONOSUPPORT", EPROTONOSUPPORT, call(VERBS_IOCTL, &h));
	h = header(id + 1, 0xffff, 0, 0);
	h.reserved1 = 1;
	expect("reserved set and a wrong driver id: EPROTONOSUPPORT (reserved first)", EPROTONOSUPPORT,
	       call(VERBS_IOCTL, &h));
	h = header(id + 1, 0, 3, 0);
	expect("another driver's id: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(0, 0, 3, 0);
	expect("driver id 0: EINVAL", EINVAL, call(VERBS_IOCTL, &h));
	h = header(id, 0xffff, 0, 0);
	expect("unknown object 0xffff: EPROTONOSUPPORT", EPROTONOSUPPORT, call(VERBS_IOCTL, &h));
	h = header(id, 20, 0, 0);
	expect("core object 20 (past the last, COMP_CNTR 19): EPROTONOSUPPORT", EPROTONOSUPPORT,
	       call(VERBS_IOCTL, &h));
	h = header(id, 0x1fff, 0, 0);
	expect("unknown driver object 0x1fff: EPROTONOSUPPORT", EPROTONOSUPPORT, call(VERBS_IOCTL, &h));
	h = header(id, 0, 0x7fff, 0);
	expect("the device object's unknown method 0x7fff: EPROTONOSUPPORT", EPROTONOSUPPORT,
	       call(VERBS_IOCTL, &h));
	h = header(id, 0, 0x1007, 2);
	expect("the device object's unknown driver method 0x1007, 2 attributes: EPROTONOSUPPORT",
	       EPROTONOSUPPORT, call(VERBS_IOCTL, &h));

	write_headers();
	without_context(id);
	method_attrs(id);
	contexts(id);

	close(fd);
	/* The device file's close destroyed its objects: the channel's readers get EIO. */
	expect("completion channel read after the device file closed: EIO", EIO, rd(kept_channel, 8));
	printf("uverbs_badinput: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
