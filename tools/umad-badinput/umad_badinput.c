// SPDX-License-Identifier: GPL-2.0
/*
 * umad_badinput: malformed and edge-case use of /dev/infiniband/umadN, each checked against the
 * errno (or result) C's ib_umad gives (drivers/infiniband/core/user_mad.c of Linux 7.3).
 *
 * Usage: umad_badinput DEV LID            the checks below, on an open device (port's LID)
 *        umad_badinput --issm-busy ISSM       a non-blocking open of a held issmN: EAGAIN
 *        umad_badinput --failnth DEV LID      every umad call under every failing allocation
 *                                         (see failnth() below; hardening-user runs it)
 *        umad_badinput --removed DEV READY GO
 *                                         opens DEV, registers an agent, creates READY, waits for
 *                                         GO (the device is removed meanwhile), then checks what
 *                                         C answers on a file whose port is gone
 * Prints "ok <name>" or "not ok <name>: <why>" per check and a last line
 * "umad_badinput: N passed, M failed"; exits 1 if a check failed, 2 on a set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/ib_user_mad.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HDR 64			/* struct ib_user_mad_hdr, after ENABLE_PKEY */
#define MAD 256
#define RMPP_HDR 36

static int passed, failed;

static void result(int ok, const char *name, const char *fmt, long a, long b)
{
	if (ok) {
		passed++;
		printf("ok %s\n", name);
	} else {
		failed++;
		printf("not ok %s: ", name);
		printf(fmt, a, b);
		printf("\n");
	}
}

/* expect_err: the call returned -1 with errno `want`. */
static void expect_err(const char *name, long rc, int err, int want)
{
	result(rc < 0 && err == want, name, "rc %ld errno %ld", rc, rc < 0 ? err : 0);
	(void)want;
}

static void expect_rc(const char *name, long rc, int err, long want)
{
	result(rc == want, name, "rc %ld (errno %ld)", rc, rc < 0 ? err : 0);
}

static long xioctl(int fd, unsigned long cmd, void *arg, int *err)
{
	long rc = ioctl(fd, cmd, arg);

	*err = errno;
	return rc;
}

/* A registration request for class `mclass` version `ver` on QP `qpn` owning `methods`. */
static struct ib_user_mad_reg_req reg(uint8_t qpn, uint8_t mclass, uint8_t ver, uint64_t methods)
{
	struct ib_user_mad_reg_req r;

	memset(&r, 0, sizeof(r));
	r.qpn = qpn;
	r.mgmt_class = mclass;
	r.mgmt_class_version = ver;
	memcpy(r.method_mask, &methods, sizeof(methods));
	return r;
}

/* Builds a PerfMgmt Get of PortCounters (agent `id`, TID low bits `tid`) to `lid` on QP1. */
static void perf_get(uint8_t *buf, uint32_t id, uint16_t lid, uint32_t tid, uint32_t timeout_ms,
		     uint32_t retries)
{
	struct ib_user_mad_hdr *h = (struct ib_user_mad_hdr *)buf;
	uint8_t *m = buf + HDR;

	memset(buf, 0, HDR + MAD);
	h->id = id;
	h->timeout_ms = timeout_ms;
	h->retries = retries;
	h->qpn = htobe32(1);
	h->qkey = htobe32(0x80010000);
	h->lid = htobe16(lid);
	m[0] = 1;		/* base version */
	m[1] = 0x04;		/* PerfMgmt */
	m[2] = 1;		/* class version */
	m[3] = 0x01;		/* Get */
	m[12] = tid >> 24;
	m[13] = tid >> 16;
	m[14] = tid >> 8;
	m[15] = tid;
	m[16] = 0x00;		/* PortCounters */
	m[17] = 0x12;
	m[65] = 1;		/* PortSelect */
}

static long xwrite(int fd, const void *b, size_t n, int *err)
{
	long rc = write(fd, b, n);

	*err = errno;
	return rc;
}

static long xread(int fd, void *b, size_t n, int *err)
{
	long rc = read(fd, b, n);

	*err = errno;
	return rc;
}

/* Waits up to `ms` for fd to become readable; the poll mask. */
static int wait_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) <= 0)
		return 0;
	return p.revents;
}

static int checks(const char *dev, uint16_t lid)
{
	uint8_t buf[HDR + MAD + 64];
	struct ib_user_mad_hdr *h = (struct ib_user_mad_hdr *)buf;
	struct ib_user_mad_reg_req r;
	struct ib_user_mad_reg_req2 r2;
	uint32_t id;
	int fd, nb, err, i;
	long rc;

	fd = open(dev, O_RDWR);
	if (fd < 0) {
		printf("umad_badinput: open %s: %s\n", dev, strerror(errno));
		return 2;
	}
	rc = xioctl(fd, IB_USER_MAD_ENABLE_PKEY, NULL, &err);
	expect_rc("ENABLE_PKEY before any agent: 0", rc, err, 0);
	rc = xioctl(fd, IB_USER_MAD_ENABLE_PKEY, NULL, &err);
	expect_rc("ENABLE_PKEY again before any agent: 0", rc, err, 0);
	rc = xioctl(fd, _IO(RDMA_IOCTL_MAGIC, 0x7f), NULL, &err);
	expect_err("an unknown ioctl: ENOTTY", rc, err, ENOTTY);

	/* write() without agents. */
	perf_get(buf, 0, lid, 1, 0, 0);
	rc = xwrite(fd, buf, HDR + RMPP_HDR - 1, &err);
	expect_err("write shorter than the header and the RMPP header: EINVAL", rc, err, EINVAL);
	h->id = 32;
	rc = xwrite(fd, buf, HDR + MAD, &err);
	expect_err("write with agent id 32: EINVAL", rc, err, EINVAL);
	h->id = 0;
	rc = xwrite(fd, buf, HDR + MAD, &err);
	expect_err("write through an agent never registered: EIO", rc, err, EIO);

	/* Registrations. */
	r = reg(2, 0x04, 1, 1 << 1);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT on qpn 2: EINVAL", rc, err, EINVAL);
	r = reg(1, 0x04, 0x83, 1 << 1);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT with class version 0x83: EINVAL", rc, err, EINVAL);
	r = reg(1, 0x01, 1, 1 << 1);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT of subnet management on QP1: EINVAL", rc, err, EINVAL);
	r = reg(0, 0x04, 1, 1 << 1);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT of PerfMgmt on QP0: EINVAL", rc, err, EINVAL);
	r = reg(1, 0x30, 1, 1 << 1);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT of a vendor OUI class without OUI: EINVAL", rc, err, EINVAL);
	r = reg(1, 0x04, 1, 1 << 1);
	r.rmpp_version = 1;
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT with RMPP on a class without it: EINVAL", rc, err, EINVAL);
	r = reg(1, 0x04, 1, 1 << 1);
	r.id = 77;
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_rc("REGISTER_AGENT of PerfMgmt Get on QP1: 0", rc, err, 0);
	expect_rc("and its id, written back, is 0", r.id, 0, 0);
	r = reg(1, 0x04, 1, (1 << 1) | (1 << 2));
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("REGISTER_AGENT of a method another agent owns: EINVAL", rc, err, EINVAL);
	rc = xioctl(fd, IB_USER_MAD_ENABLE_PKEY, NULL, &err);
	expect_err("ENABLE_PKEY once an agent is registered: EINVAL", rc, err, EINVAL);

	memset(&r2, 0, sizeof(r2));
	r2.qpn = 1;
	r2.mgmt_class = 0x04;
	r2.mgmt_class_version = 1;
	r2.flags = 2;
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &r2, &err);
	expect_err("REGISTER_AGENT2 with an unknown flag: EINVAL", rc, err, EINVAL);
	expect_rc("and the flags it knows written back: 1", r2.flags, 0, 1);
	memset(&r2, 0, sizeof(r2));
	r2.qpn = 1;
	r2.mgmt_class = 0x31;
	r2.mgmt_class_version = 1;
	r2.oui = 0x01001405;
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &r2, &err);
	expect_err("REGISTER_AGENT2 with an OUI wider than 24 bits: EINVAL", rc, err, EINVAL);

	/* 31 more send-only agents fill the file's 32 slots. */
	for (i = 1, rc = 0; i < 32 && rc == 0; i++) {
		r = reg(1, 0, 0, 0);
		rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	}
	expect_rc("31 send-only agents register", rc, err, 0);
	r = reg(1, 0, 0, 0);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("a 33rd agent: ENOMEM", rc, err, ENOMEM);
	id = 40;
	rc = xioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id, &err);
	expect_err("UNREGISTER_AGENT of id 40: EINVAL", rc, err, EINVAL);
	id = 5;
	rc = xioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id, &err);
	expect_rc("UNREGISTER_AGENT of agent 5: 0", rc, err, 0);
	rc = xioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id, &err);
	expect_err("UNREGISTER_AGENT of agent 5 again: EINVAL", rc, err, EINVAL);

	/* write() sizes through agent 1 (send-only, QP1). */
	perf_get(buf, 1, lid, 0x100, 1000, 0);
	rc = xwrite(fd, buf, HDR + MAD + 1, &err);
	expect_err("write of a MAD longer than 256 bytes: EINVAL", rc, err, EINVAL);
	rc = xwrite(fd, buf, HDR + RMPP_HDR - 1, &err);
	expect_err("write shorter than the header and the RMPP header: EINVAL", rc, err, EINVAL);
	rc = xwrite(fd, buf, HDR + MAD, &err);
	expect_rc("write of a PortCounters Get to the own LID: the whole count", rc, err, HDR + MAD);

	/* read() of the response. */
	rc = xread(fd, buf, HDR - 1, &err);
	expect_err("read shorter than the header: EINVAL", rc, err, EINVAL);
	result(wait_in(fd, 5000) & POLLIN, "the response arrives (poll: POLLIN)", "%ld%ld", 0, 0);
	rc = xread(fd, buf, HDR + MAD - 1, &err);
	expect_err("read with room for less than the MAD: EINVAL", rc, err, EINVAL);
	memset(buf, 0, sizeof(buf));
	rc = xread(fd, buf, sizeof(buf), &err);
	expect_rc("and the packet was kept: a full read returns it (header + 256)", rc, err, HDR + MAD);
	expect_rc("for agent 1", h->id, 0, 1);
	expect_rc("with status 0", h->status, 0, 0);
	expect_rc("length: header + 256", h->length, 0, HDR + MAD);
	expect_rc("from QP1", be32toh(h->qpn), 0, 1);
	expect_rc("from the own LID", be16toh(h->lid), 0, lid);
	expect_rc("a GetResp", buf[HDR + 3], 0, 0x81);
	expect_rc("carrying the request's TID (low bits)", buf[HDR + 15] | buf[HDR + 14] << 8, 0, 0x100);

	nb = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, nb | O_NONBLOCK);
	rc = xread(fd, buf, sizeof(buf), &err);
	expect_err("a non-blocking read with nothing queued: EAGAIN", rc, err, EAGAIN);
	fcntl(fd, F_SETFL, nb);
	{
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

		rc = poll(&p, 1, 0);
		result(rc == 1 && p.revents == POLLOUT, "poll with nothing queued: POLLOUT only",
		       "rc %ld revents %#lx", rc, p.revents);
	}

	/* A request nobody answers: LID 0x77 does not exist. */
	perf_get(buf, 2, 0x77, 0x200, 500, 1);
	rc = xwrite(fd, buf, HDR + MAD, &err);
	expect_rc("write of a Get to a LID nobody has, 500 ms, 1 retry", rc, err, HDR + MAD);
	rc = xwrite(fd, buf, HDR + MAD, &err);
	expect_err("the same request again while it waits: EINVAL (duplicate TID)", rc, err, EINVAL);
	result(wait_in(fd, 5000) & POLLIN, "its timeout is reported (poll: POLLIN)", "%ld%ld", 0, 0);
	rc = xread(fd, buf, HDR + 23, &err);
	expect_err("read with room for less than the timed-out MAD's header: EINVAL", rc, err,
		   EINVAL);
	memset(buf, 0, sizeof(buf));
	rc = xread(fd, buf, sizeof(buf), &err);
	expect_rc("a full read returns the header and the MAD's 24-byte header", rc, err, HDR + 24);
	expect_rc("for agent 2", h->id, 0, 2);
	expect_rc("with status ETIMEDOUT", h->status, 0, ETIMEDOUT);
	expect_rc("the header's length as written (0)", h->length, 0, 0);
	expect_rc("and the TID's low bits as sent", buf[HDR + 15] | buf[HDR + 14] << 8, 0, 0x200);
	expect_rc("the TID's high bits are the agent's (not zero)",
		  (buf[HDR + 8] | buf[HDR + 9] | buf[HDR + 10] | buf[HDR + 11]) != 0, 0, 1);

	close(fd);
	printf("umad_badinput: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

static int removed(const char *dev, const char *ready, const char *go)
{
	uint8_t buf[HDR + MAD];
	struct ib_user_mad_reg_req r;
	struct pollfd p;
	uint32_t id;
	int fd, err, i;
	long rc;

	fd = open(dev, O_RDWR);
	if (fd < 0) {
		printf("umad_badinput: open %s: %s\n", dev, strerror(errno));
		return 2;
	}
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY, NULL);
	r = reg(1, 0x04, 1, 1 << 1);
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r) < 0) {
		printf("umad_badinput: register: %s\n", strerror(errno));
		return 2;
	}
	close(open(ready, O_CREAT | O_WRONLY, 0644));
	for (i = 0; i < 3000 && access(go, F_OK) != 0; i++)
		usleep(20000);
	if (access(go, F_OK) != 0) {
		printf("umad_badinput: %s never came\n", go);
		return 2;
	}
	rc = xread(fd, buf, sizeof(buf), &err);
	expect_err("after removal: read: EIO", rc, err, EIO);
	perf_get(buf, 0, 1, 1, 0, 0);
	rc = xwrite(fd, buf, sizeof(buf), &err);
	expect_err("after removal: write: EIO", rc, err, EIO);
	r = reg(1, 0x04, 1, 1 << 2);
	rc = xioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r, &err);
	expect_err("after removal: REGISTER_AGENT: EPIPE", rc, err, EPIPE);
	id = 0;
	rc = xioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id, &err);
	expect_err("after removal: UNREGISTER_AGENT of its agent: EINVAL", rc, err, EINVAL);
	p.fd = fd;
	p.events = POLLIN | POLLOUT;
	p.revents = 0;
	rc = poll(&p, 1, 0);
	result(rc == 1 && p.revents == POLLERR, "after removal: poll: POLLERR only",
	       "rc %ld revents %#lx", rc, p.revents);
	rc = close(fd);
	expect_rc("after removal: close: 0", rc, errno, 0);
	printf("umad_badinput: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* issm: the port is held (by another process) already; a non-blocking open gets EAGAIN. */
static int issm_busy(const char *dev)
{
	int fd = open(dev, O_RDWR | O_NONBLOCK);
	int err = errno;

	expect_err("a second, non-blocking open of issm: EAGAIN", fd, err, EAGAIN);
	if (fd >= 0)
		close(fd);
	printf("umad_badinput: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/*
 * --failnth DEV LID: each umad call (on a file with the 64-byte header: ENABLE_PKEY) with its
 * N-th kernel allocation failing (fail-nth armed by
 * this thread just before the call; FAILSLAB/FAIL_PAGE_ALLOC armed by the scenario), N = 1, 2,
 * ... until a run does not reach its N-th: open of the device, REGISTER_AGENT, REGISTER_AGENT2,
 * a PerfMgmt Get written (sent, its answer read back when it worked), UNREGISTER_AGENT. Each
 * fails cleanly or works; what worked is undone without a fault. Prints `sweep <call>: R runs,
 * F failed` and `umad failnth: P points over 5 calls`; afterwards an agent registers and a Get
 * is answered (nothing is left registered or half made).
 */
static int fnth = -1;

static void arm(int n)
{
	char b[16];

	snprintf(b, sizeof(b), "%d", n);
	if (pwrite(fnth, b, strlen(b), 0) < 0)
		printf("# arming fail-nth: %s\n", strerror(errno));
}

static int fired(void)
{
	char b[16] = { 0 };

	if (pread(fnth, b, sizeof(b) - 1, 0) < 0)
		return 0;
	if (pwrite(fnth, "0", 1, 0) < 0)
		printf("# disarming fail-nth: %s\n", strerror(errno));
	return atoi(b) == 0;
}

static int sweep_fd = -1;
static uint16_t sweep_lid;
static uint32_t sweep_agent;
static uint8_t sweep_buf[HDR + MAD + 64];

static int op_open(const char *dev)
{
	sweep_fd = open(dev, O_RDWR);
	return sweep_fd < 0 ? errno : 0;
}
static int op_register(const char *dev)
{
	struct ib_user_mad_reg_req r = reg(1, 0x04, 1, 1 << 1);

	(void)dev;
	if (ioctl(sweep_fd, IB_USER_MAD_REGISTER_AGENT, &r) < 0)
		return errno;
	sweep_agent = r.id;
	return 0;
}
static int op_register2(const char *dev)
{
	struct ib_user_mad_reg_req2 r2;

	(void)dev;
	memset(&r2, 0, sizeof(r2));
	r2.qpn = 1;
	r2.mgmt_class = 0x04;
	r2.mgmt_class_version = 1;
	if (ioctl(sweep_fd, IB_USER_MAD_REGISTER_AGENT2, &r2) < 0)
		return errno;
	sweep_agent = r2.id;
	return 0;
}
static int op_send(const char *dev)
{
	(void)dev;
	perf_get(sweep_buf, sweep_agent, sweep_lid, 7, 1000, 0);
	return write(sweep_fd, sweep_buf, HDR + MAD) < 0 ? errno : 0;
}
static int op_unregister(const char *dev)
{
	(void)dev;
	return ioctl(sweep_fd, IB_USER_MAD_UNREGISTER_AGENT, &sweep_agent) < 0 ? errno : 0;
}

/* The answer to a Get that was sent: read, waiting up to 5 s. */
static void take_answer(void)
{
	if (wait_in(sweep_fd, 5000) & POLLIN) {
		if (read(sweep_fd, sweep_buf, sizeof(sweep_buf)) < 0)
			printf("# reading the answer: %s\n", strerror(errno));
	}
}

struct umad_op {
	const char *name;
	int setup;			/* 0: none, 1: open, 2: open and register */
	int (*op)(const char *dev);
	int undo;			/* after success: 1 close, 2 unregister and close, 3 read, unregister, close */
};

static const struct umad_op umad_ops[] = {
	{ "open", 0, op_open, 1 },
	{ "REGISTER_AGENT", 1, op_register, 2 },
	{ "REGISTER_AGENT2", 1, op_register2, 2 },
	{ "write", 2, op_send, 3 },
	{ "UNREGISTER_AGENT", 2, op_unregister, 1 },
};

static int failnth(const char *dev, uint16_t lid)
{
	int points = 0, k, n, rc, f, bad = 0;

	sweep_lid = lid;
	fnth = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fnth < 0) {
		printf("not ok fail-nth: %s\n", strerror(errno));
		return 1;
	}
	memset(sweep_buf, 0, sizeof(sweep_buf));
	for (k = 0; k < (int)(sizeof(umad_ops) / sizeof(umad_ops[0])); k++) {
		const struct umad_op *o = &umad_ops[k];
		int runs = 0, fails = 0;

		for (n = 1; n < 2000; n++) {
			if (o->setup >= 1 && (op_open(dev) ||
					      ioctl(sweep_fd, IB_USER_MAD_ENABLE_PKEY, NULL) < 0)) {
				printf("not ok %s: open without a fault failed\n", o->name);
				return 1;
			}
			if (o->setup >= 2 && op_register(dev)) {
				printf("not ok %s: REGISTER_AGENT without a fault failed\n", o->name);
				return 1;
			}
			arm(n);
			rc = o->op(dev);
			f = fired();
			runs++;
			if (rc)
				fails++;
			if (rc && !f)
				printf("# sweep %s: point %d: %s without the fault firing\n", o->name, n,
				       strerror(rc));
			if (!rc && o->undo == 3)
				take_answer();
			if (!rc && o->undo >= 2 && o->op != op_unregister)
				op_unregister(dev);
			if (rc && o->op == op_unregister)
				op_unregister(dev);
			if (sweep_fd >= 0 && (!rc || o->op != op_open))
				close(sweep_fd);
			sweep_fd = -1;
			if (!f)
				break;
		}
		printf("sweep %s: %d runs, %d failed\n", o->name, runs, fails);
		points += runs - 1;
	}
	printf("umad failnth: %d points over %d calls\n", points, (int)(sizeof(umad_ops) / sizeof(umad_ops[0])));
	/* Nothing is left half made: an agent registers and its Get is answered. */
	if ((rc = op_open(dev)) ||
	    (rc = ioctl(sweep_fd, IB_USER_MAD_ENABLE_PKEY, NULL) < 0 ? errno : 0) ||
	    (rc = op_register(dev)) || (rc = op_send(dev))) {
		printf("not ok after the sweeps: a Get could not be sent: %s\n", strerror(rc));
		bad = 1;
	} else if (!(wait_in(sweep_fd, 5000) & POLLIN) ||
		   read(sweep_fd, sweep_buf, sizeof(sweep_buf)) != HDR + MAD ||
		   ((struct ib_user_mad_hdr *)sweep_buf)->status != 0) {
		printf("not ok after the sweeps: no answer to the Get\n");
		bad = 1;
	} else {
		printf("ok after the sweeps: an agent registers and its Get is answered\n");
	}
	if (sweep_fd >= 0)
		close(sweep_fd);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--issm-busy") == 0)
		return issm_busy(argv[2]);
	if (argc == 5 && strcmp(argv[1], "--removed") == 0)
		return removed(argv[2], argv[3], argv[4]);
	if (argc == 4 && strcmp(argv[1], "--failnth") == 0)
		return failnth(argv[2], (uint16_t)strtoul(argv[3], NULL, 0));
	if (argc == 3)
		return checks(argv[1], (uint16_t)strtoul(argv[2], NULL, 0));
	fprintf(stderr, "usage: umad_badinput DEV LID | --issm-busy ISSM | --removed DEV READY GO | --failnth DEV LID\n");
	return 2;
}
