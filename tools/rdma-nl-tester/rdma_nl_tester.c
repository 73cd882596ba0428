// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_nl_tester: sends malformed and hostile requests to the kernel's RDMA netlink socket
 * (NETLINK_RDMA, the "nldev" interface of ib_core) and checks that each gets exactly the answer
 * the upstream C ib_core gives: an NLMSG_ERROR with a given errno, an ACK, a reply then an ACK,
 * a dump ending in NLMSG_DONE (with an errno or 0), or nothing at all.
 *
 * The expectations were written from the C code of Linux 7.3.4 (drivers/infiniband/core/
 * netlink.c, nldev.c, device.c, sa_query.c, lib/nlattr.c, net/netlink/af_netlink.c); the comment
 * above each family of cases names the function that decides the answer.
 *
 * Every reply must carry the request's sequence number and our port id (nlmsg_pid), and come
 * from the kernel (source port id 0). Requests carry NLM_F_REQUEST | NLM_F_ACK unless a case says
 * otherwise (as iproute2's `rdma` does), dumps add NLM_F_DUMP, and the socket sets
 * NETLINK_EXT_ACK so that a failing case can show the kernel's extended-ACK message.
 *
 * Device-dependent cases use the first device of a GET dump; an unknown index is the largest
 * index seen plus 1000.
 *
 * Usage:
 *   rdma_nl_tester [--only SUBSTRING]   run the cases (whose name contains SUBSTRING)
 *   rdma_nl_tester --list               list the cases
 *   rdma_nl_tester --hex                list the cases with their request bytes
 *   rdma_nl_tester monitor SECONDS      print the RDMA_NL_GROUP_NOTIFY events for SECONDS
 *   rdma_nl_tester chardev INDEX TYPE   ask GET_CHARDEV of device INDEX for client TYPE as
 *                                       libibverbs does (no NLM_F_ACK) and print the answer
 *   rdma_nl_tester iwpm                 send the iWARP port mapper's requests (RDMA_NL_IWCM:
 *                                       hello, mapping info, ...) and print what comes back
 *
 * Output: `ok N - name` or `not ok N - name: expected X, got Y` per case, then
 * `rdma_nl_tester: P passed, F failed`. Exit status 0 only if every case passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* include/uapi/linux/netlink.h */
#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

/* include/uapi/rdma/rdma_netlink.h (7.3.4) */
enum {
	RDMA_NL_IWCM = 2,
	RDMA_NL_RSVD = 3,
	RDMA_NL_LS = 4,
	RDMA_NL_NLDEV = 5,
	RDMA_NL_NUM_CLIENTS = 6,
};
#define RDMA_NL_GROUP_NOTIFY 4
#define NL_TYPE(client, op) (((client) << 10) + (op))
#define NLDEV(op) NL_TYPE(RDMA_NL_NLDEV, op)

enum {
	CMD_UNSPEC = 0,
	CMD_GET = 1,
	CMD_SET = 2,
	CMD_NEWLINK = 3,
	CMD_DELLINK = 4,
	CMD_PORT_GET = 5,
	CMD_SYS_GET = 6,
	CMD_SYS_SET = 7,
	CMD_RES_GET = 9,
	CMD_RES_QP_GET = 10,
	CMD_RES_CM_ID_GET = 11,
	CMD_RES_CQ_GET = 12,
	CMD_RES_MR_GET = 13,
	CMD_RES_PD_GET = 14,
	CMD_GET_CHARDEV = 15,
	CMD_STAT_SET = 16,
	CMD_STAT_GET = 17,
	CMD_STAT_DEL = 18,
	CMD_RES_QP_GET_RAW = 19,
	CMD_RES_CQ_GET_RAW = 20,
	CMD_RES_MR_GET_RAW = 21,
	CMD_RES_CTX_GET = 22,
	CMD_RES_SRQ_GET = 23,
	CMD_STAT_GET_STATUS = 24,
	CMD_RES_SRQ_GET_RAW = 25,
	CMD_NEWDEV = 26,
	CMD_DELDEV = 27,
	CMD_MONITOR = 28,
	CMD_FRMR_POOLS_GET = 29,
	CMD_FRMR_POOLS_SET = 30,
	NUM_OPS = 31,
};

enum {
	A_PAD = 0,
	A_DEV_INDEX = 1,
	A_DEV_NAME = 2,
	A_PORT_INDEX = 3,
	A_CAP_FLAGS = 4,
	A_RES_QP = 19,
	A_RES_LQPN = 21,
	A_RES_MR = 40,
	A_NDEV_NAME = 51,
	A_RES_PDN = 60,
	A_RES_CQN = 61,
	A_RES_MRN = 62,
	A_RES_CM_IDN = 63,
	A_RES_CTXN = 64,
	A_LINK_TYPE = 65,
	A_NETNS_MODE = 66,
	A_NET_NS_FD = 68,
	A_CHARDEV_TYPE = 69,
	A_CHARDEV_NAME = 70,
	A_STAT_MODE = 74,
	A_STAT_RES = 75,
	A_STAT_COUNTER_ID = 79,
	A_STAT_HWCOUNTERS = 80,
	A_DEV_DIM = 84,
	A_RES_SRQN = 90,
	A_PRIV_QKEY_MODE = 96,
	A_DRIVER_DETAILS = 97,
	A_DEV_TYPE = 99,
	A_EVENT_TYPE = 102,
	A_FRMR_POOLS_AGING_PERIOD = 115,
	A_MAX = 119, /* RDMA_NLDEV_ATTR_MAX: one past the last attribute */
};

/* enum rdma_nl_notify_event_type */
static const char *const event_names[] = {
	"register", "unregister", "netdev_attach", "netdev_detach", "rename", "netdev_rename",
};

#define NAME_MAX_LEN 64     /* IB_DEVICE_NAME_MAX */
#define SILENCE_MS 200      /* how long "no answer" is waited for */
#define ANSWER_MS 5000      /* how long an answer is waited for */
#define CAP_NET_ADMIN_BIT 12

/* ---------------------------------------------------------------------------------------- */
/* Requests */

/* A raw datagram: zero or more netlink messages, possibly malformed. */
struct msg {
	uint8_t b[1024];
	size_t len;
	size_t hdr;       /* offset of the message being built */
	int seq_fixed;    /* the case set nlmsg_seq itself; do not renumber */
};

static void m_begin(struct msg *m, uint16_t type, uint16_t flags)
{
	struct nlmsghdr h = { .nlmsg_len = NLMSG_HDRLEN, .nlmsg_type = type, .nlmsg_flags = flags };

	m->hdr = m->len;
	memcpy(m->b + m->len, &h, sizeof(h));
	m->len += NLMSG_HDRLEN;
}

/* Sets a header field of the message being built (through memcpy: the buffer is bytes). */
#define M_SET(m, field, v)                                                   \
	do {                                                                 \
		struct nlmsghdr h_;                                          \
		memcpy(&h_, (m)->b + (m)->hdr, sizeof(h_));                  \
		h_.field = (v);                                              \
		memcpy((m)->b + (m)->hdr, &h_, sizeof(h_));                  \
	} while (0)

static void m_end(struct msg *m)
{
	M_SET(m, nlmsg_len, m->len - m->hdr);
}

/* Appends raw bytes to the current message. */
static void m_raw(struct msg *m, const void *p, size_t n)
{
	memcpy(m->b + m->len, p, n);
	m->len += n;
	m_end(m);
}

/* Appends an attribute with a header that says nla_len = 4 + n, padded to 4 bytes. */
static void m_attr(struct msg *m, uint16_t type, const void *p, size_t n)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + n, .nla_type = type };

	memcpy(m->b + m->len, &a, sizeof(a));
	if (n)
		memcpy(m->b + m->len + NLA_HDRLEN, p, n);
	m->len += NLA_ALIGN(NLA_HDRLEN + n);
	m_end(m);
}

static void m_u32(struct msg *m, uint16_t type, uint32_t v)
{
	m_attr(m, type, &v, 4);
}

static void m_u8(struct msg *m, uint16_t type, uint8_t v)
{
	m_attr(m, type, &v, 1);
}

/* A NUL-terminated string attribute. */
static void m_str(struct msg *m, uint16_t type, const char *s)
{
	m_attr(m, type, s, strlen(s) + 1);
}

/* A request: header with flags, no attributes yet. */
static struct msg req(uint16_t type, uint16_t flags)
{
	struct msg m = { 0 };

	m_begin(&m, type, flags);
	return m;
}

#define RQ (NLM_F_REQUEST | NLM_F_ACK)
#define RQD (NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP)

/* ---------------------------------------------------------------------------------------- */
/* Expected outcomes */

enum kind {
	K_ERR,       /* NLMSG_ERROR with errno `err` (non-zero) and nothing before it */
	K_ACK,       /* NLMSG_ERROR with error 0 and nothing before it */
	K_REPLY_ACK, /* exactly one reply (not multipart) of type `type`, then an ACK */
	K_DUMP,      /* NLM_F_MULTI parts of type `type` (`parts` of them if >= 0), NLMSG_DONE 0 */
	K_DONE_ERR,  /* no part, then NLMSG_DONE carrying errno `err` */
	K_SILENT,    /* nothing within SILENCE_MS */
	K_REPLY,     /* exactly one reply of type `type` and then nothing within SILENCE_MS */
	K_SEND_ERR,  /* sendto itself fails with errno `err` */
};

struct expect {
	enum kind kind;
	int err;      /* positive errno for K_ERR / K_DONE_ERR */
	int type;     /* reply or part type for K_REPLY_ACK / K_DUMP; 0: any */
	int parts;    /* K_DUMP: exact number of parts, or -1 for any */
};

static struct expect E_ERR(int e) { return (struct expect){ .kind = K_ERR, .err = e }; }
static struct expect E_ACK(void) { return (struct expect){ .kind = K_ACK }; }
static struct expect E_REPLY(int t) { return (struct expect){ .kind = K_REPLY_ACK, .type = t }; }
static struct expect E_DUMP(int t, int n) { return (struct expect){ .kind = K_DUMP, .type = t, .parts = n }; }
static struct expect E_DONE_ERR(int e) { return (struct expect){ .kind = K_DONE_ERR, .err = e }; }
static struct expect E_SILENT(void) { return (struct expect){ .kind = K_SILENT }; }
static struct expect E_REPLY_NOACK(int t) { return (struct expect){ .kind = K_REPLY, .type = t }; }
static struct expect E_SEND_ERR(int e) { return (struct expect){ .kind = K_SEND_ERR, .err = e }; }

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static void describe_expect(const struct expect *e, char *s, size_t n)
{
	switch (e->kind) {
	case K_ERR:
		snprintf(s, n, "error %s", errname(e->err));
		break;
	case K_ACK:
		snprintf(s, n, "ACK");
		break;
	case K_REPLY_ACK:
		snprintf(s, n, "reply type 0x%x then ACK", e->type);
		break;
	case K_DUMP:
		if (e->parts >= 0)
			snprintf(s, n, "dump of %d part(s) type 0x%x, DONE 0", e->parts, e->type);
		else
			snprintf(s, n, "dump (any parts) type 0x%x, DONE 0", e->type);
		break;
	case K_DONE_ERR:
		snprintf(s, n, "DONE with %s", errname(e->err));
		break;
	case K_SILENT:
		snprintf(s, n, "silence");
		break;
	case K_REPLY:
		snprintf(s, n, "reply type 0x%x and no ACK", e->type);
		break;
	case K_SEND_ERR:
		snprintf(s, n, "sendto failing with %s", errname(e->err));
		break;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Sockets and answers */

static int nl_open(uint32_t *pid, int rcvbuf)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t sl = sizeof(sa);
	int one = 1;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		close(fd);
		return -1;
	}
	*pid = sa.nl_pid;
	return fd;
}

static int nl_send(int fd, const void *p, size_t n)
{
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };

	return sendto(fd, p, n, 0, (struct sockaddr *)&k, sizeof(k)) == (ssize_t)n ? 0 : -1;
}

static uint32_t next_seq = 0x1000;

/* What came back for one request. */
struct answer {
	int replies, parts;  /* non-multipart replies, multipart parts */
	int reply_type_bad, part_type_bad, part_flag_bad;
	int first_type;      /* type of the first reply or part */
	int end;             /* 0 none, 1 NLMSG_ERROR, 2 NLMSG_DONE */
	int err;             /* positive errno of the end message */
	int extra;           /* messages after the end */
	char bad[256];       /* framing problems (seq, pid, source, truncation) */
	char extack[160];
};

static void bad(struct answer *a, const char *fmt, ...)
{
	va_list ap;
	size_t l = strlen(a->bad);

	if (l >= sizeof(a->bad) - 2)
		return;
	if (l)
		a->bad[l++] = ';', a->bad[l++] = ' ';
	a->bad[l] = 0;
	va_start(ap, fmt);
	vsnprintf(a->bad + l, sizeof(a->bad) - l, fmt, ap);
	va_end(ap);
}

/* The extended-ACK message string of an NLMSG_ERROR or NLMSG_DONE, if any. */
static void get_extack(const struct nlmsghdr *h, size_t off, struct answer *a)
{
	const uint8_t *p = (const uint8_t *)h + off;
	const uint8_t *end = (const uint8_t *)h + h->nlmsg_len;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *at = (const void *)p;

		if (at->nla_len < NLA_HDRLEN || p + at->nla_len > end)
			break;
		if ((at->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
			snprintf(a->extack, sizeof(a->extack), "%.*s", (int)(at->nla_len - NLA_HDRLEN),
				 (const char *)(p + NLA_HDRLEN));
		p += NLA_ALIGN(at->nla_len);
	}
}

/* Reads messages for sequence `seq` until NLMSG_ERROR or NLMSG_DONE, or until `ms` of silence.
 * Messages for other sequences (another request in flight on the socket) are passed to `other`
 * if given, else counted as bad. */
struct other_sink {
	uint32_t seq;
	struct answer *a;
};

static void absorb(struct answer *a, const struct nlmsghdr *h, int type)
{
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);
		size_t off;

		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
			bad(a, "short NLMSG_ERROR");
			return;
		}
		if (a->end) {
			a->extra++;
			return;
		}
		a->end = 1;
		a->err = -e->error;
		off = NLMSG_LENGTH(sizeof(*e));
		if (!(h->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len >= NLMSG_HDRLEN)
			off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
		get_extack(h, off, a);
	} else if (h->nlmsg_type == NLMSG_DONE) {
		if (a->end) {
			a->extra++;
			return;
		}
		a->end = 2;
		if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
			a->err = -*(const int *)NLMSG_DATA(h);
		else
			bad(a, "NLMSG_DONE without errno");
		if (!(h->nlmsg_flags & NLM_F_MULTI))
			bad(a, "NLMSG_DONE without NLM_F_MULTI");
		get_extack(h, NLMSG_LENGTH(sizeof(int)), a);
	} else if (a->end) {
		a->extra++;
	} else if (h->nlmsg_flags & NLM_F_MULTI) {
		if (!a->parts && !a->replies)
			a->first_type = h->nlmsg_type;
		a->parts++;
		if (type && h->nlmsg_type != type)
			a->part_type_bad++;
	} else {
		if (!a->parts && !a->replies)
			a->first_type = h->nlmsg_type;
		a->replies++;
		if (type && h->nlmsg_type != type)
			a->reply_type_bad++;
	}
}

static int collect(int fd, uint32_t pid, uint32_t seq, int type, int ms, struct answer *a,
		   struct other_sink *other, int max_datagrams)
{
	static uint8_t buf[65536];
	int datagrams = 0;

	while (!a->end && (!max_datagrams || datagrams < max_datagrams)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sockaddr_nl from;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;
		int r = poll(&pfd, 1, ms);

		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		n = recvmsg(fd, &mh, 0);
		if (n < 0) {
			bad(a, "recv: %s", errname(errno));
			return -1;
		}
		datagrams++;
		if (mh.msg_flags & MSG_TRUNC)
			bad(a, "datagram truncated");
		if (from.nl_pid != 0)
			bad(a, "datagram from port %u, not the kernel", from.nl_pid);
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_pid != pid)
				bad(a, "nlmsg_pid %u, our port is %u", h->nlmsg_pid, pid);
			if (h->nlmsg_seq != seq) {
				if (other && h->nlmsg_seq == other->seq)
					absorb(other->a, h, 0);
				else
					bad(a, "nlmsg_seq %u, sent %u", h->nlmsg_seq, seq);
				continue;
			}
			absorb(a, h, type);
		}
		if (n > 0)
			bad(a, "%zd trailing bytes in datagram", n);
	}
	return 0;
}

/* Messages that arrive right after the end (the kernel answers a doit before sendmsg returns;
 * a dump's next round is produced by recvmsg). */
static void check_extra(int fd, struct answer *a)
{
	uint8_t buf[8192];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n))
			a->extra++;
}

static void describe_answer(const struct answer *a, int silent_wait, char *s, size_t n)
{
	char ext[200] = "";
	size_t l;

	if (a->extack[0])
		snprintf(ext, sizeof(ext), " (extack: %s)", a->extack);
	if (!a->end && !a->replies && !a->parts)
		l = snprintf(s, n, silent_wait ? "silence" : "nothing within %d ms", ANSWER_MS);
	else if (!a->end)
		l = snprintf(s, n, "%d reply(ies) and %d part(s) of type 0x%x, then nothing", a->replies,
			     a->parts, a->first_type);
	else if (a->end == 1 && a->err && !a->replies && !a->parts)
		l = snprintf(s, n, "error %s%s", errname(a->err), ext);
	else if (a->end == 1 && a->err)
		l = snprintf(s, n, "%d reply(ies), %d part(s), then error %s%s", a->replies, a->parts,
			     errname(a->err), ext);
	else if (a->end == 1)
		l = snprintf(s, n, "%d reply(ies) of type 0x%x, %d part(s), ACK", a->replies,
			     a->first_type, a->parts);
	else
		l = snprintf(s, n, "%d reply(ies), %d part(s) of type 0x%x, DONE %s%s", a->replies,
			     a->parts, a->first_type, a->err ? errname(a->err) : "0", ext);
	if (a->extra && l < n)
		l += snprintf(s + l, n - l, ", %d message(s) after the end", a->extra);
	if (a->bad[0] && l < n)
		snprintf(s + l, n - l, " [%s]", a->bad);
}

static int matches(const struct expect *e, const struct answer *a)
{
	if (a->bad[0] || a->extra)
		return 0;
	switch (e->kind) {
	case K_ERR:
		return a->end == 1 && a->err == e->err && !a->replies && !a->parts;
	case K_ACK:
		return a->end == 1 && a->err == 0 && !a->replies && !a->parts;
	case K_REPLY_ACK:
		return a->end == 1 && a->err == 0 && a->replies == 1 && !a->parts && !a->reply_type_bad;
	case K_DUMP:
		return a->end == 2 && a->err == 0 && !a->replies && !a->part_type_bad &&
		       (e->parts < 0 || a->parts == e->parts);
	case K_DONE_ERR:
		return a->end == 2 && a->err == e->err && !a->replies && !a->parts;
	case K_SILENT:
		return !a->end && !a->replies && !a->parts;
	case K_REPLY:
		return !a->end && a->replies == 1 && !a->parts && !a->reply_type_bad;
	case K_SEND_ERR:
		return 0; /* the send went through */
	}
	return 0;
}

/* Sends `m` on a fresh socket and compares the answer with `e`. Returns 1 on a match; `got`
 * describes the answer. */
static int exchange(struct msg *m, const struct expect *e, int rcvbuf, char *got, size_t gn)
{
	struct answer a = { 0 };
	uint32_t pid, seq = next_seq++;
	int fd = nl_open(&pid, rcvbuf);
	int silent = e->kind == K_SILENT || e->kind == K_REPLY;

	if (fd < 0) {
		snprintf(got, gn, "cannot open a NETLINK_RDMA socket: %s", errname(errno));
		return 0;
	}
	if (m->len >= NLMSG_HDRLEN) {
		struct nlmsghdr h;

		memcpy(&h, m->b, sizeof(h));
		if (m->seq_fixed)
			seq = h.nlmsg_seq;
		h.nlmsg_seq = seq;
		memcpy(m->b, &h, sizeof(h));
	}
	if (nl_send(fd, m->b, m->len) < 0) {
		int err = errno;

		snprintf(got, gn, "sendto failed: %s", errname(err));
		close(fd);
		return e->kind == K_SEND_ERR && e->err == err;
	}
	collect(fd, pid, seq, e->type, silent ? SILENCE_MS : ANSWER_MS, &a, NULL, 0);
	check_extra(fd, &a);
	close(fd);
	describe_answer(&a, silent, got, gn);
	return matches(e, &a);
}

/* ---------------------------------------------------------------------------------------- */
/* Devices */

struct dev {
	uint32_t index;
	char name[NAME_MAX_LEN + 1];
	uint32_t ports;
	int dim;
};

static struct dev devs[16];
static int ndevs;
static uint32_t unknown_index = 1000;

/* Walks the attributes of a GET reply. */
static void parse_dev(const struct nlmsghdr *h, struct dev *d)
{
	const uint8_t *p = NLMSG_DATA(h);
	const uint8_t *end = (const uint8_t *)h + h->nlmsg_len;

	memset(d, 0, sizeof(*d));
	d->dim = -1;
	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *at = (const void *)p;
		const void *v = p + NLA_HDRLEN;
		int len = at->nla_len - NLA_HDRLEN;

		if (at->nla_len < NLA_HDRLEN || p + at->nla_len > end)
			break;
		switch (at->nla_type & NLA_TYPE_MASK) {
		case A_DEV_INDEX:
			if (len == 4)
				memcpy(&d->index, v, 4);
			break;
		case A_DEV_NAME:
			snprintf(d->name, sizeof(d->name), "%.*s", len, (const char *)v);
			break;
		case A_PORT_INDEX:
			if (len == 4)
				memcpy(&d->ports, v, 4);
			break;
		case A_DEV_DIM:
			if (len == 1)
				d->dim = *(const uint8_t *)v;
			break;
		}
		p += NLA_ALIGN(at->nla_len);
	}
}

/* GET dump: fills devs[]. Returns the number of devices or -1. */
static int discover(void)
{
	static uint8_t buf[65536];
	struct msg m = req(NLDEV(CMD_GET), RQD);
	uint32_t pid;
	int fd = nl_open(&pid, 0), done = 0;

	ndevs = 0;
	if (fd < 0)
		return -1;
	M_SET(&m, nlmsg_seq, next_seq++);
	if (nl_send(fd, m.b, m.len) < 0) {
		close(fd);
		return -1;
	}
	while (!done) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, ANSWER_MS) <= 0)
			break;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				done = 1;
			else if (h->nlmsg_type == NLDEV(CMD_GET) && ndevs < 16)
				parse_dev(h, &devs[ndevs++]);
		}
	}
	close(fd);
	for (int i = 0; i < ndevs; i++)
		if (devs[i].index + 1000 > unknown_index)
			unknown_index = devs[i].index + 1000;
	return done ? ndevs : -1;
}

/* The current name of device `index` (GET doit), or "" if it cannot be read. */
static void dev_name_now(uint32_t index, char *name, size_t n)
{
	static uint8_t buf[16384];
	struct msg m = req(NLDEV(CMD_GET), NLM_F_REQUEST);
	uint32_t pid;
	int fd = nl_open(&pid, 0);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t r;

	name[0] = 0;
	if (fd < 0)
		return;
	m_u32(&m, A_DEV_INDEX, index);
	M_SET(&m, nlmsg_seq, next_seq++);
	if (nl_send(fd, m.b, m.len) == 0 && poll(&pfd, 1, ANSWER_MS) > 0 &&
	    (r = recv(fd, buf, sizeof(buf), 0)) > 0) {
		struct nlmsghdr *h = (void *)buf;
		struct dev d;

		if (NLMSG_OK(h, (size_t)r) && h->nlmsg_type == NLDEV(CMD_GET)) {
			parse_dev(h, &d);
			snprintf(name, n, "%s", d.name);
		}
	}
	close(fd);
}

/* ---------------------------------------------------------------------------------------- */
/* Cases */

struct tcase;
typedef int (*case_fn)(struct tcase *c, char *got, size_t gn);

struct tcase {
	char name[120];
	struct msg m;
	struct expect e;
	case_fn fn;     /* custom case; else send `m` and expect `e` */
	int unpriv;     /* run in a child without CAP_NET_ADMIN */
	int needs_dev;  /* needs a device (`dev`) */
	int needs_2dev; /* needs two devices, skipped otherwise */
	int rcvbuf;     /* SO_RCVBUF for the socket, 0: default */
	int arg;
};

static struct tcase *cases;
static int ncases, cap_cases;
static struct dev *dev; /* the device under test */
static struct dev nodev = { .index = 0, .name = "none", .ports = 1, .dim = -1 };

static struct tcase *add(const char *fmt, ...)
{
	va_list ap;
	struct tcase *c;

	if (ncases == cap_cases) {
		cap_cases = cap_cases ? 2 * cap_cases : 256;
		cases = realloc(cases, cap_cases * sizeof(*cases));
		if (!cases)
			exit(2);
	}
	c = &cases[ncases++];
	memset(c, 0, sizeof(*c));
	va_start(ap, fmt);
	vsnprintf(c->name, sizeof(c->name), fmt, ap);
	va_end(ap);
	return c;
}

/* A plain case: request and expected answer. */
static struct tcase *plain(struct msg m, struct expect e, const char *fmt, ...)
{
	va_list ap;
	char name[120];
	struct tcase *c;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	c = add("%s", name);
	c->m = m;
	c->e = e;
	return c;
}

/* Same, needing a device. */
#define DPLAIN(...) (plain(__VA_ARGS__)->needs_dev = 1)

static struct msg with_dev(uint16_t type, uint16_t flags)
{
	struct msg m = req(type, flags);

	m_u32(&m, A_DEV_INDEX, dev->index);
	return m;
}

static struct msg with_dev_port(uint16_t type, uint16_t flags, uint32_t port)
{
	struct msg m = with_dev(type, flags);

	m_u32(&m, A_PORT_INDEX, port);
	return m;
}

static struct msg with_index(uint16_t type, uint16_t flags, uint32_t index)
{
	struct msg m = req(type, flags);

	m_u32(&m, A_DEV_INDEX, index);
	return m;
}

/* Appends bytes after the current message without changing its nlmsg_len. */
static void m_tail(struct msg *m, const void *p, size_t n)
{
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

/* ---------------------------------------------------------------------------------------- */
/* Without CAP_NET_ADMIN */

/* Removes CAP_NET_ADMIN from the effective and permitted sets of this process (raw capset, so
 * no libcap). Returns 0 if it is gone afterwards. */
static int drop_net_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	d[0].effective &= ~(1u << CAP_NET_ADMIN_BIT);
	d[0].permitted &= ~(1u << CAP_NET_ADMIN_BIT);
	if (syscall(SYS_capset, &h, d) < 0)
		return -1;
	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	return (d[0].effective & (1u << CAP_NET_ADMIN_BIT)) ? -1 : 0;
}

static int run_one(struct tcase *c, char *got, size_t gn);

/* Runs the case in a forked child that dropped CAP_NET_ADMIN first (the socket is opened after
 * the drop, so both the socket's and the sender's credentials lack it). */
static int run_unpriv(struct tcase *c, char *got, size_t gn)
{
	int p[2];
	pid_t pid;
	int status, ok;
	ssize_t n;

	if (pipe(p) < 0) {
		snprintf(got, gn, "pipe: %s", errname(errno));
		return 0;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		snprintf(got, gn, "fork: %s", errname(errno));
		return 0;
	}
	if (pid == 0) {
		char buf[512];

		close(p[0]);
		if (drop_net_admin() < 0) {
			snprintf(buf, sizeof(buf), "could not drop CAP_NET_ADMIN");
			ok = 0;
		} else {
			c->unpriv = 0;
			ok = run_one(c, buf, sizeof(buf));
		}
		if (write(p[1], buf, strlen(buf)) < 0)
			_exit(3);
		_exit(ok ? 0 : 1);
	}
	close(p[1]);
	n = read(p[0], got, gn - 1);
	got[n > 0 ? n : 0] = 0;
	close(p[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
		snprintf(got + strlen(got), gn - strlen(got), " [child died]");
		return 0;
	}
	return WEXITSTATUS(status) == 0;
}

/* The child really lacks CAP_NET_ADMIN, and ordinary queries still work for it. */
static int fn_unpriv_sanity(struct tcase *c, char *got, size_t gn)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	struct msg m = req(NLDEV(CMD_GET), RQD);
	struct expect e = E_DUMP(NLDEV(CMD_GET), ndevs);

	(void)c;
	if (syscall(SYS_capget, &h, d) < 0 || (d[0].effective & (1u << CAP_NET_ADMIN_BIT))) {
		snprintf(got, gn, "CAP_NET_ADMIN still effective");
		return 0;
	}
	return exchange(&m, &e, 0, got, gn);
}

/* ---------------------------------------------------------------------------------------- */
/* Custom cases */

/* Two requests in one datagram: a bad GET (EINVAL) then a SYS_GET (reply + ACK). Each is
 * answered in order with its own sequence number (netlink.c: rdma_nl_rcv_skb loops). */
static int fn_two_in_one(struct tcase *c, char *got, size_t gn)
{
	struct msg m = req(NLDEV(CMD_GET), RQ);
	struct answer a1 = { 0 }, a2 = { 0 };
	struct expect e1 = E_ERR(EINVAL), e2 = E_REPLY(NLDEV(CMD_SYS_GET));
	uint32_t pid, s1 = next_seq++, s2 = next_seq++;
	char d1[300], d2[300];
	int fd = nl_open(&pid, 0), ok;

	(void)c;
	M_SET(&m, nlmsg_seq, s1);
	m_begin(&m, NLDEV(CMD_SYS_GET), RQ);
	M_SET(&m, nlmsg_seq, s2);
	if (fd < 0 || nl_send(fd, m.b, m.len) < 0) {
		snprintf(got, gn, "socket or send failed: %s", errname(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	collect(fd, pid, s1, 0, ANSWER_MS, &a1, NULL, 0);
	collect(fd, pid, s2, e2.type, ANSWER_MS, &a2, NULL, 0);
	check_extra(fd, &a2);
	close(fd);
	describe_answer(&a1, 0, d1, sizeof(d1));
	describe_answer(&a2, 0, d2, sizeof(d2));
	ok = matches(&e1, &a1) && matches(&e2, &a2);
	snprintf(got, gn, "first: %s; second: %s", d1, d2);
	return ok;
}

/* Starts a dump, reads `reads` datagrams of it (0: none), closes the socket; then a new GET dump
 * must list every device. The netlink core frees the dump state on release
 * (af_netlink.c: netlink_release -> netlink_sock_destruct / cb cleanup). */
static int fn_dump_abandon(struct tcase *c, char *got, size_t gn)
{
	struct msg m = c->m;
	struct answer a = { 0 };
	struct expect e = E_DUMP(NLDEV(CMD_GET), ndevs);
	uint32_t pid, seq = next_seq++;
	int fd = nl_open(&pid, c->rcvbuf);

	if (fd < 0) {
		snprintf(got, gn, "socket: %s", errname(errno));
		return 0;
	}
	M_SET(&m, nlmsg_seq, seq);
	if (nl_send(fd, m.b, m.len) < 0) {
		snprintf(got, gn, "send: %s", errname(errno));
		close(fd);
		return 0;
	}
	if (c->arg)
		collect(fd, pid, seq, 0, ANSWER_MS, &a, NULL, c->arg);
	if (c->arg && !a.parts) {
		describe_answer(&a, 0, got, gn);
		strncat(got, " (expected a first part)", gn - strlen(got) - 1);
		close(fd);
		return 0;
	}
	close(fd);
	m = req(NLDEV(CMD_GET), RQD);
	return exchange(&m, &e, 0, got, gn);
}

/* A second dump on a socket whose dump is still running: EBUSY
 * (af_netlink.c: __netlink_dump_start, "A dump is in progress"); the first dump then completes.
 * A GET dump always needs a second round (one device per round, nldev.c: _nldev_get_dumpit), so
 * it is still running after the first datagram. */
static int fn_dump_busy(struct tcase *c, char *got, size_t gn)
{
	struct msg m1 = req(NLDEV(CMD_GET), RQD), m2 = c->m;
	struct answer a1 = { 0 }, a2 = { 0 };
	struct expect e1 = E_DUMP(NLDEV(CMD_GET), ndevs), e2 = c->e;
	struct other_sink o = { 0 };
	uint32_t pid, s1 = next_seq++, s2 = next_seq++;
	char d1[300], d2[300];
	int fd = nl_open(&pid, 0), ok;

	if (fd < 0) {
		snprintf(got, gn, "socket: %s", errname(errno));
		return 0;
	}
	M_SET(&m1, nlmsg_seq, s1);
	M_SET(&m2, nlmsg_seq, s2);
	if (nl_send(fd, m1.b, m1.len) < 0 || nl_send(fd, m2.b, m2.len) < 0) {
		snprintf(got, gn, "send: %s", errname(errno));
		close(fd);
		return 0;
	}
	o.seq = s2;
	o.a = &a2;
	collect(fd, pid, s1, e1.type, ANSWER_MS, &a1, &o, 0);
	if (!a2.end)
		collect(fd, pid, s2, e2.type, ANSWER_MS, &a2, NULL, 0);
	check_extra(fd, &a1);
	close(fd);
	describe_answer(&a1, 0, d1, sizeof(d1));
	describe_answer(&a2, 0, d2, sizeof(d2));
	/* the absorbed answer was not type-checked: check it here */
	if (e2.kind == K_REPLY_ACK && a2.first_type != e2.type)
		a2.reply_type_bad = 1;
	ok = matches(&e1, &a1) && matches(&e2, &a2);
	snprintf(got, gn, "dump: %s; second request: %s", d1, d2);
	return ok;
}

/* SET DEV_NAME on the device, as a request, returning its answer. */
static int set_name(uint32_t index, const void *name, size_t len, const struct expect *e, char *got,
		    size_t gn)
{
	struct msg m = with_index(NLDEV(CMD_SET), RQ, index);

	m_attr(&m, A_DEV_NAME, name, len);
	return exchange(&m, e, 0, got, gn);
}

/* Renames the device to c->name-derived `to` (arg selects), checks the name, renames it back. */
static int fn_rename_and_back(struct tcase *c, char *got, size_t gn)
{
	char to[NAME_MAX_LEN + 2], want[NAME_MAX_LEN + 2], now[NAME_MAX_LEN + 1], g[400];
	struct expect ack = E_ACK();
	char orig[NAME_MAX_LEN + 1];

	snprintf(orig, sizeof(orig), "%s", dev->name);
	if (c->arg == 64) {
		/* 64 characters pass the policy (NLA_NUL_STRING, len IB_DEVICE_NAME_MAX: up to 64
		 * without the NUL, lib/nlattr.c: validate_nla); nldev_set_doit copies it with
		 * nla_strscpy into a 64-byte buffer, so the device gets the first 63. */
		memset(to, 'n', 64);
		to[64] = 0;
		memcpy(want, to, 63);
		want[63] = 0;
	} else {
		snprintf(to, sizeof(to), "nltest%u", dev->index);
		snprintf(want, sizeof(want), "%s", to);
	}
	if (!set_name(dev->index, to, strlen(to) + 1, &ack, g, sizeof(g))) {
		snprintf(got, gn, "rename to %.70s: %s", to, g);
		return 0;
	}
	dev_name_now(dev->index, now, sizeof(now));
	if (strcmp(now, want)) {
		snprintf(got, gn, "after the rename GET says \"%s\", expected \"%s\"", now, want);
		set_name(dev->index, orig, strlen(orig) + 1, &ack, g, sizeof(g));
		return 0;
	}
	if (!set_name(dev->index, orig, strlen(orig) + 1, &ack, g, sizeof(g))) {
		snprintf(got, gn, "rename back to %s: %s", orig, g);
		return 0;
	}
	dev_name_now(dev->index, now, sizeof(now));
	if (strcmp(now, orig)) {
		snprintf(got, gn, "after renaming back GET says \"%s\", expected \"%s\"", now, orig);
		return 0;
	}
	snprintf(got, gn, "renamed to %s and back", want);
	return 1;
}

/* The device still has its original name (after every rename case, and after the refused
 * ones). */
static int fn_name_unchanged(struct tcase *c, char *got, size_t gn)
{
	char now[NAME_MAX_LEN + 1];

	(void)c;
	dev_name_now(dev->index, now, sizeof(now));
	snprintf(got, gn, "GET says \"%s\", expected \"%s\"", now, dev->name);
	return !strcmp(now, dev->name);
}

/* ---------------------------------------------------------------------------------------- */
/* The cases, by family. The family is the part of the name before the first ':'. */

static int has_dump(int op)
{
	/* nldev.c: nldev_cb_table, ops with a .dump */
	switch (op) {
	case CMD_GET: case CMD_PORT_GET: case CMD_RES_GET: case CMD_RES_QP_GET:
	case CMD_RES_CM_ID_GET: case CMD_RES_CQ_GET: case CMD_RES_MR_GET: case CMD_RES_PD_GET:
	case CMD_STAT_GET: case CMD_RES_QP_GET_RAW: case CMD_RES_CQ_GET_RAW:
	case CMD_RES_MR_GET_RAW: case CMD_RES_CTX_GET: case CMD_RES_SRQ_GET:
	case CMD_RES_SRQ_GET_RAW: case CMD_FRMR_POOLS_GET:
		return 1;
	}
	return 0;
}

static int has_doit(int op)
{
	return op > 0 && op < NUM_OPS && op != 8 && op != CMD_MONITOR && op != CMD_FRMR_POOLS_GET;
}

static const char long65[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char long64[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static int netns_fd = -1, devnull_fd = -1;

static void fam_framing(void)
{
	/*
	 * netlink.c: rdma_nl_rcv_skb. A datagram shorter than a netlink header is not looked at;
	 * a header whose nlmsg_len is below 16 or beyond the datagram ends the loop with no
	 * answer, even with NLM_F_ACK. A message is answered, then the rest of the datagram is
	 * handled the same way.
	 */
	static const size_t short_lens[] = { 1, 4, 8, 12, 15 };
	static const uint32_t bad_len[] = { 0, 8, 15 };
	static const uint32_t long_len[] = { 25, 28, 1000, 0xffffffff };
	struct msg m;

	/* af_netlink.c: netlink_sendmsg refuses an empty datagram before the kernel socket sees it */
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m.len = 0;
	plain(m, E_SEND_ERR(ENODATA), "framing: an empty datagram is refused by sendto: ENODATA");
	for (size_t i = 0; i < sizeof(short_lens) / sizeof(*short_lens); i++) {
		m = req(NLDEV(CMD_SYS_GET), RQ);
		m.len = short_lens[i];
		plain(m, E_SILENT(), "framing: datagram of %zu bytes (shorter than a header)", short_lens[i]);
	}
	for (size_t i = 0; i < sizeof(bad_len) / sizeof(*bad_len); i++) {
		m = req(NLDEV(CMD_SYS_GET), RQ);
		m_u32(&m, A_DEV_INDEX, 0);
		M_SET(&m, nlmsg_len, bad_len[i]);
		plain(m, E_SILENT(), "framing: nlmsg_len %u in a 24-byte datagram", bad_len[i]);
	}
	for (size_t i = 0; i < sizeof(long_len) / sizeof(*long_len); i++) {
		m = req(NLDEV(CMD_SYS_GET), RQ);
		m_u32(&m, A_DEV_INDEX, 0);
		M_SET(&m, nlmsg_len, long_len[i]);
		plain(m, E_SILENT(), "framing: nlmsg_len %u larger than the 24-byte datagram", long_len[i]);
	}
	m = req(NLDEV(CMD_GET), RQ);
	plain(m, E_ERR(EINVAL), "framing: GET of exactly a header (no DEV_INDEX) is EINVAL");
	/* the attribute lies outside nlmsg_len: the GET has none; the 8 bytes left are shorter
	 * than a header and ignored */
	m = with_dev(NLDEV(CMD_GET), RQ);
	M_SET(&m, nlmsg_len, NLMSG_HDRLEN);
	DPLAIN(m, E_ERR(EINVAL), "framing: DEV_INDEX after nlmsg_len is not seen (EINVAL, rest ignored)");
	/* nlmsg_len not a multiple of 4: 2 bytes left after the attributes are only warned about
	 * (lib/nlattr.c: __nla_validate_parse, liberal) */
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_raw(&m, "\0\0", 2);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "framing: GET with nlmsg_len 26 (2 stray bytes) is answered");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m_tail(&m, "\x08\0\0\0\0\0\0\0", 8);
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "framing: SYS_GET then 8 stray bytes: one reply and ACK, nothing more");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	{
		struct nlmsghdr h = { .nlmsg_len = 100, .nlmsg_type = NLDEV(CMD_GET), .nlmsg_flags = RQ };

		m_tail(&m, &h, sizeof(h));
	}
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "framing: SYS_GET then a header with nlmsg_len past the end: one answer");
	add("framing: two requests in one datagram are answered in order")->fn = fn_two_in_one;
	m = req(NLDEV(CMD_SYS_GET), RQ);
	M_SET(&m, nlmsg_seq, 0);
	m.seq_fixed = 1;
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "framing: nlmsg_seq 0 is echoed");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	M_SET(&m, nlmsg_seq, 0xffffffff);
	m.seq_fixed = 1;
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "framing: nlmsg_seq 0xffffffff is echoed");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	M_SET(&m, nlmsg_pid, 12345);
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "framing: a made-up nlmsg_pid is ignored, the reply comes to our port");
	m = req(NLDEV(CMD_GET), NLM_F_REQUEST);
	plain(m, E_ERR(EINVAL), "framing: an error is reported without NLM_F_ACK");
	m = req(NLDEV(CMD_SYS_GET), NLM_F_REQUEST);
	plain(m, E_REPLY_NOACK(NLDEV(CMD_SYS_GET)), "framing: a doit without NLM_F_ACK: the reply, no ACK");
}

static void fam_no_request(void)
{
	/*
	 * netlink.c: rdma_nl_rcv_skb. Without NLM_F_REQUEST a message is not handled (except for
	 * the LS client); it is ACKed when NLM_F_ACK is set, else ignored. Control types below
	 * NLMSG_MIN_TYPE are skipped the same way.
	 */
	struct msg m;

	m = req(NLDEV(CMD_GET), NLM_F_ACK);
	plain(m, E_ACK(), "no-request: GET without NLM_F_REQUEST, with NLM_F_ACK: ACK, not EINVAL");
	m = req(NLDEV(CMD_GET), 0);
	plain(m, E_SILENT(), "no-request: GET without NLM_F_REQUEST nor NLM_F_ACK: silence");
	m = req(NLDEV(CMD_GET), NLM_F_ACK | NLM_F_DUMP);
	plain(m, E_ACK(), "no-request: GET dump without NLM_F_REQUEST: ACK, no dump");
	m = req(NLDEV(CMD_SYS_GET), NLM_F_ACK);
	plain(m, E_ACK(), "no-request: SYS_GET without NLM_F_REQUEST: ACK, no reply");
	m = req(NLDEV(CMD_SET), NLM_F_ACK);
	m_u32(&m, A_DEV_INDEX, dev->index);
	m_str(&m, A_DEV_NAME, "nlnoreq0");
	DPLAIN(m, E_ACK(), "no-request: SET rename without NLM_F_REQUEST: ACK, not done");
	add("no-request: the device kept its name")->fn = fn_name_unchanged;
	cases[ncases - 1].needs_dev = 1;
	m = req(NLDEV(CMD_SET), NLM_F_ACK);
	m_u32(&m, A_DEV_INDEX, dev->index);
	m_str(&m, A_DEV_NAME, "nlnoreq0");
	plain(m, E_ACK(), "no-request: SET without NLM_F_REQUEST and without CAP_NET_ADMIN: ACK")->unpriv = 1;
	m = req(999, NLM_F_ACK);
	plain(m, E_ACK(), "no-request: unknown client without NLM_F_REQUEST: ACK");
	for (int t = 1; t < NLMSG_MIN_TYPE; t += (t < 4 ? 1 : 11)) {
		m = req(t, RQ);
		plain(m, E_ACK(), "no-request: control type %d with NLM_F_REQUEST is skipped and ACKed", t);
	}
	/* sa_query.c: ib_nl_handle_resolve_resp expects no NLM_F_REQUEST (it is a response from
	 * user space); no query waits for this seq, so it returns 0 */
	m = req(NL_TYPE(RDMA_NL_LS, 0), NLM_F_ACK);
	plain(m, E_ACK(), "no-request: LS RESOLVE response without a pending query: ACK");
	m = req(NL_TYPE(RDMA_NL_LS, 0), 0);
	plain(m, E_SILENT(), "no-request: LS RESOLVE response without NLM_F_ACK: silence");
	/* sa_query.c: ib_nl_handle_set_timeout insists on NLM_F_REQUEST */
	m = req(NL_TYPE(RDMA_NL_LS, 1), NLM_F_ACK);
	plain(m, E_ERR(EPERM), "no-request: LS SET_TIMEOUT without NLM_F_REQUEST: EPERM");
	/* addr.c: ib_nl_handle_ip_res_resp: no DGID attribute, nothing done */
	m = req(NL_TYPE(RDMA_NL_LS, 2), NLM_F_ACK);
	plain(m, E_ACK(), "no-request: LS IP_RESOLVE response without attributes: ACK");
}

static void fam_clients(void)
{
	/*
	 * netlink.c: is_nl_msg_valid (client < RDMA_NL_NUM_CLIENTS and op below the client's op
	 * count: IWCM 9, LS 3, NLDEV 31, others 0), get_cb_table (no table: -EINVAL; IWCM's is
	 * only there when iw_cm is loaded, which it is not here). Client 0 with op 1 is type 1, a
	 * control message, skipped and ACKed by rdma_nl_rcv_skb. LS op 1 (SET_TIMEOUT) without a
	 * timeout attribute returns 0 (sa_query.c: ib_nl_handle_set_timeout).
	 */
	for (int c = 0; c < 64; c++) {
		struct msg m = req(NL_TYPE(c, 1), RQ);
		struct expect e = E_ERR(EINVAL);

		if (c == 0 || c == RDMA_NL_LS)
			e = E_ACK();
		plain(m, e, "clients: client %d op 1", c);
	}
	/* LS RESOLVE and IP_RESOLVE responses sent as requests (sa_query.c, addr.c) */
	plain(req(NL_TYPE(RDMA_NL_LS, 0), RQ), E_ERR(EPERM), "clients: LS op 0 (RESOLVE) as a request: EPERM");
	plain(req(NL_TYPE(RDMA_NL_LS, 2), RQ), E_ERR(EPERM), "clients: LS op 2 (IP_RESOLVE) as a request: EPERM");
	plain(req(NL_TYPE(RDMA_NL_LS, 3), RQ), E_ERR(EINVAL), "clients: LS op 3 (past the last): EINVAL");
	plain(req(NL_TYPE(RDMA_NL_IWCM, 9), RQ), E_ERR(EINVAL), "clients: IWCM op 9 (past the last): EINVAL");
	plain(req(NL_TYPE(RDMA_NL_NLDEV, 1023), RQ), E_ERR(EINVAL), "clients: NLDEV op 1023: EINVAL");
	plain(req(0xffff, RQ), E_ERR(EINVAL), "clients: type 0xffff (client 63 op 1023): EINVAL");
}

static void fam_ops(void)
{
	/*
	 * netlink.c: rdma_nl_rcv_msg. Ops 31 and up: -EINVAL (is_nl_msg_valid). Ops with neither
	 * doit nor dump (0, 8, 28 MONITOR): -EINVAL (get_cb_table). With NLM_F_DUMP an op without
	 * .dump, and without it an op without .doit, leave err at -EINVAL. Every doit but SYS_GET
	 * needs DEV_INDEX or another attribute and answers -EINVAL without; SYS_GET replies
	 * (nldev.c). Dumps run in netlink_dump_start: a dump callback's error comes back in
	 * NLMSG_DONE (af_netlink.c: netlink_dump, netlink_dump_done), not as NLMSG_ERROR; GET and
	 * RES_GET dumps need no attribute and list every device; the others need DEV_INDEX
	 * (PORT_GET, RES_*), STAT_RES (STAT_GET) or DEV_INDEX (FRMR_POOLS_GET).
	 */
	for (int op = 0; op < 64; op++) {
		struct expect e = E_ERR(EINVAL);

		if (op == CMD_SYS_GET)
			e = E_REPLY(NLDEV(CMD_SYS_GET));
		plain(req(NLDEV(op), RQ), e, "ops-doit: op %d without attributes", op);
	}
	for (int op = 0; op < 64; op++) {
		struct expect e = E_ERR(EINVAL);

		if (op == CMD_GET)
			e = E_DUMP(NLDEV(CMD_GET), ndevs);
		else if (op == CMD_RES_GET)
			e = E_DUMP(NLDEV(CMD_RES_GET), ndevs);
		else if (op < NUM_OPS && has_dump(op))
			e = E_DONE_ERR(EINVAL);
		plain(req(NLDEV(op), RQD), e, "ops-dump: op %d without attributes", op);
	}
}

static void fam_no_handler(void)
{
	/* netlink.c: rdma_nl_rcv_msg: with a valid DEV_INDEX, only the missing handler decides */
	for (int op = 0; op < NUM_OPS; op++) {
		if (!has_dump(op))
			DPLAIN(with_dev(NLDEV(op), RQD), E_ERR(EINVAL), "no-handler: op %d as a dump (no .dump)", op);
		if (!has_doit(op))
			DPLAIN(with_dev(NLDEV(op), RQ), E_ERR(EINVAL), "no-handler: op %d as a doit (no .doit)", op);
	}
	DPLAIN(with_dev(NLDEV(31), RQ), E_ERR(EINVAL), "no-handler: op 31 (first past the table)");
	DPLAIN(with_dev(NLDEV(63), RQD), E_ERR(EINVAL), "no-handler: op 63 as a dump");
}

static void fam_dev_index(void)
{
	/*
	 * Every handler looks the device up with ib_device_get_by_index (device.c) and answers
	 * -EINVAL when it is missing or unknown; dumps report it in NLMSG_DONE. DEV_INDEX is
	 * NLA_U32: with the liberal parse (__nlmsg_parse(..., NL_VALIDATE_LIBERAL) in GET, PORT_GET,
	 * RES_*, STAT_GET) a length below 4 is -ERANGE (-> EINVAL) but a longer one is only warned
	 * about and its first 4 bytes are used (lib/nlattr.c: validate_nla); the strict parse
	 * (nlmsg_parse in SET, DELLINK, STAT_SET/DEL, NEWDEV, DELDEV, FRMR_POOLS_SET) refuses any
	 * length but 4 (NL_VALIDATE_STRICT_ATTRS).
	 */
	static const int sizes[] = { 0, 1, 2, 3, 5, 8 };
	uint32_t u = unknown_index;
	struct msg m;
	uint8_t v[8];

	m = req(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "dev-index: GET with PORT_INDEX but no DEV_INDEX");
	m = req(NLDEV(CMD_PORT_GET), RQ);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "dev-index: PORT_GET with PORT_INDEX but no DEV_INDEX");
	m = req(NLDEV(CMD_GET), RQ);
	m_str(&m, A_DEV_NAME, dev->name);
	DPLAIN(m, E_ERR(EINVAL), "dev-index: GET with the device's DEV_NAME but no DEV_INDEX");
	m = req(NLDEV(CMD_SET), RQ);
	m_str(&m, A_DEV_NAME, "nlnoidx0");
	plain(m, E_ERR(EINVAL), "dev-index: SET rename without DEV_INDEX");
	m = req(NLDEV(CMD_STAT_GET_STATUS), RQ);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "dev-index: STAT_GET_STATUS without DEV_INDEX");
	m = req(NLDEV(CMD_RES_QP_GET), RQD);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_DONE_ERR(EINVAL), "dev-index: RES_QP_GET dump without DEV_INDEX");

	plain(with_index(NLDEV(CMD_GET), RQ, u), E_ERR(EINVAL), "dev-index: GET unknown index");
	plain(with_index(NLDEV(CMD_GET), RQ, 0xffffffff), E_ERR(EINVAL), "dev-index: GET index 0xffffffff");
	m = with_index(NLDEV(CMD_SET), RQ, u);
	m_str(&m, A_DEV_NAME, "nlunknown0");
	plain(m, E_ERR(EINVAL), "dev-index: SET rename unknown index");
	m = with_index(NLDEV(CMD_SET), RQ, u);
	m_u8(&m, A_DEV_DIM, 1);
	plain(m, E_ERR(EINVAL), "dev-index: SET DEV_DIM unknown index");
	plain(with_index(NLDEV(CMD_DELLINK), RQ, u), E_ERR(EINVAL), "dev-index: DELLINK unknown index");
	m = with_index(NLDEV(CMD_PORT_GET), RQ, u);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "dev-index: PORT_GET unknown index");
	plain(with_index(NLDEV(CMD_PORT_GET), RQD, u), E_DONE_ERR(EINVAL), "dev-index: PORT_GET dump unknown index");
	plain(with_index(NLDEV(CMD_RES_GET), RQ, u), E_ERR(EINVAL), "dev-index: RES_GET unknown index");
	m = with_index(NLDEV(CMD_RES_QP_GET), RQ, u);
	m_u32(&m, A_PORT_INDEX, 1);
	m_u32(&m, A_RES_LQPN, 1);
	plain(m, E_ERR(EINVAL), "dev-index: RES_QP_GET unknown index");
	for (int op = CMD_RES_QP_GET; op <= CMD_RES_PD_GET; op++)
		plain(with_index(NLDEV(op), RQD, u), E_DONE_ERR(EINVAL), "dev-index: op %d dump unknown index", op);
	plain(with_index(NLDEV(CMD_RES_CTX_GET), RQD, u), E_DONE_ERR(EINVAL), "dev-index: RES_CTX_GET dump unknown index");
	plain(with_index(NLDEV(CMD_RES_SRQ_GET), RQD, u), E_DONE_ERR(EINVAL), "dev-index: RES_SRQ_GET dump unknown index");
	m = with_index(NLDEV(CMD_STAT_SET), RQ, u);
	m_u32(&m, A_PORT_INDEX, 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_MODE, 1);
	plain(m, E_ERR(EINVAL), "dev-index: STAT_SET unknown index");
	m = with_index(NLDEV(CMD_STAT_GET), RQ, u);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "dev-index: STAT_GET unknown index");
	m = with_index(NLDEV(CMD_STAT_GET), RQD, u);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	plain(m, E_DONE_ERR(EINVAL), "dev-index: STAT_GET (counters) dump unknown index");
	m = with_index(NLDEV(CMD_STAT_DEL), RQ, u);
	m_u32(&m, A_PORT_INDEX, 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_COUNTER_ID, 1);
	m_u32(&m, A_RES_LQPN, 1);
	plain(m, E_ERR(EINVAL), "dev-index: STAT_DEL unknown index");
	m = with_index(NLDEV(CMD_STAT_GET_STATUS), RQ, u);
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "dev-index: STAT_GET_STATUS unknown index");
	m = with_index(NLDEV(CMD_GET_CHARDEV), RQ, u);
	m_str(&m, A_CHARDEV_TYPE, "uverbs");
	plain(m, E_ERR(EINVAL), "dev-index: GET_CHARDEV unknown index");
	m = with_index(NLDEV(CMD_NEWDEV), RQ, u);
	m_str(&m, A_DEV_NAME, "nlsub0");
	m_u8(&m, A_DEV_TYPE, 1);
	plain(m, E_ERR(EINVAL), "dev-index: NEWDEV unknown parent index");
	plain(with_index(NLDEV(CMD_DELDEV), RQ, u), E_ERR(EINVAL), "dev-index: DELDEV unknown index");
	plain(with_index(NLDEV(CMD_FRMR_POOLS_GET), RQD, u), E_DONE_ERR(EINVAL), "dev-index: FRMR_POOLS_GET dump unknown index");
	plain(with_index(NLDEV(CMD_FRMR_POOLS_SET), RQ, u), E_ERR(EINVAL), "dev-index: FRMR_POOLS_SET unknown index");

	memset(v, 0, sizeof(v));
	memcpy(v, &dev->index, 4);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		int n = sizes[i];

		m = req(NLDEV(CMD_GET), RQ);
		m_attr(&m, A_DEV_INDEX, v, n);
		DPLAIN(m, n > 4 ? E_REPLY(NLDEV(CMD_GET)) : E_ERR(EINVAL),
		       "dev-index: GET DEV_INDEX of %d bytes (liberal parse)", n);
		m = req(NLDEV(CMD_SET), RQ);
		m_attr(&m, A_DEV_INDEX, v, n);
		DPLAIN(m, E_ERR(EINVAL), "dev-index: SET DEV_INDEX of %d bytes (strict parse)", n);
		m = req(NLDEV(CMD_PORT_GET), RQD);
		m_attr(&m, A_DEV_INDEX, v, n);
		DPLAIN(m, n > 4 ? E_DUMP(NLDEV(CMD_PORT_GET), dev->ports) : E_DONE_ERR(EINVAL),
		       "dev-index: PORT_GET dump DEV_INDEX of %d bytes", n);
	}
	DPLAIN(with_dev(NLDEV(CMD_SET), RQ), E_ACK(), "dev-index: SET with only a valid DEV_INDEX does nothing: ACK");
	m = req(NLDEV(CMD_DELDEV), RQ);
	m_attr(&m, A_DEV_INDEX, v, 8);
	DPLAIN(m, E_ERR(EINVAL), "dev-index: DELDEV DEV_INDEX of 8 bytes (strict parse)");
}

static void fam_port_index(void)
{
	/*
	 * nldev.c: nldev_port_get_doit needs PORT_INDEX and rdma_is_port_valid (1..ports for a
	 * CA); its reply is typed GET. Wrong sizes follow the liberal rule (see dev-index). The
	 * PORT_GET dump ignores PORT_INDEX. RES_* dumps and STAT_* check the port too.
	 */
	uint32_t n = dev->ports;
	struct msg m;
	uint8_t v[8] = { 1 };

	DPLAIN(with_dev_port(NLDEV(CMD_PORT_GET), RQ, 1), E_REPLY(NLDEV(CMD_GET)), "port-index: PORT_GET port 1 (reply typed GET)");
	DPLAIN(with_dev_port(NLDEV(CMD_PORT_GET), RQ, n), E_REPLY(NLDEV(CMD_GET)), "port-index: PORT_GET last port");
	DPLAIN(with_dev_port(NLDEV(CMD_PORT_GET), RQ, 0), E_ERR(EINVAL), "port-index: PORT_GET port 0");
	DPLAIN(with_dev_port(NLDEV(CMD_PORT_GET), RQ, n + 1), E_ERR(EINVAL), "port-index: PORT_GET port past the last");
	DPLAIN(with_dev_port(NLDEV(CMD_PORT_GET), RQ, 0xffffffff), E_ERR(EINVAL), "port-index: PORT_GET port 0xffffffff");
	DPLAIN(with_dev(NLDEV(CMD_PORT_GET), RQ), E_ERR(EINVAL), "port-index: PORT_GET without PORT_INDEX");
	for (int s = 0; s <= 8; s += (s == 0 ? 2 : (s == 2 ? 3 : 3))) {
		m = with_dev(NLDEV(CMD_PORT_GET), RQ);
		m_attr(&m, A_PORT_INDEX, v, s);
		DPLAIN(m, s > 4 ? E_REPLY(NLDEV(CMD_GET)) : E_ERR(EINVAL), "port-index: PORT_GET PORT_INDEX of %d bytes", s);
	}
	DPLAIN(with_dev_port(NLDEV(CMD_PORT_GET), RQD, 0), E_DUMP(NLDEV(CMD_PORT_GET), n), "port-index: PORT_GET dump ignores PORT_INDEX 0");
	DPLAIN(with_dev_port(NLDEV(CMD_RES_QP_GET), RQD, 0), E_DONE_ERR(EINVAL), "port-index: RES_QP_GET dump port 0");
	DPLAIN(with_dev_port(NLDEV(CMD_RES_QP_GET), RQD, n + 1), E_DONE_ERR(EINVAL), "port-index: RES_QP_GET dump port past the last");
	DPLAIN(with_dev_port(NLDEV(CMD_RES_QP_GET), RQD, 1), E_DUMP(NLDEV(CMD_RES_QP_GET), -1), "port-index: RES_QP_GET dump port 1");
	m = with_dev_port(NLDEV(CMD_STAT_SET), RQ, 0);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_MODE, 1);
	DPLAIN(m, E_ERR(EINVAL), "port-index: STAT_SET port 0");
	DPLAIN(with_dev_port(NLDEV(CMD_STAT_GET_STATUS), RQ, 0), E_ERR(EINVAL), "port-index: STAT_GET_STATUS port 0");
	DPLAIN(with_dev_port(NLDEV(CMD_STAT_GET_STATUS), RQ, n + 1), E_ERR(EINVAL), "port-index: STAT_GET_STATUS port past the last");
	m = with_dev_port(NLDEV(CMD_STAT_GET), RQ, n + 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_MODE, 0);
	DPLAIN(m, E_ERR(EINVAL), "port-index: STAT_GET (QP mode) port past the last");
	m = req(NLDEV(CMD_GET_CHARDEV), RQ);
	m_str(&m, A_CHARDEV_TYPE, "uverbs");
	m_u32(&m, A_PORT_INDEX, 1);
	plain(m, E_ERR(EINVAL), "port-index: GET_CHARDEV with PORT_INDEX but no DEV_INDEX");
	m = with_dev_port(NLDEV(CMD_GET_CHARDEV), RQ, 0);
	m_str(&m, A_CHARDEV_TYPE, "uverbs");
	DPLAIN(m, E_ERR(EINVAL), "port-index: GET_CHARDEV port 0");
}

static void fam_dev_name(void)
{
	/*
	 * DEV_NAME is NLA_NUL_STRING with len IB_DEVICE_NAME_MAX (64): it needs a NUL within its
	 * first 65 bytes and at most 64 characters (lib/nlattr.c: validate_nla). Every attribute
	 * present is validated, so a bad DEV_NAME fails even a GET that does not use it.
	 * nldev_set_doit also refuses an empty name.
	 */
	struct msg m;

	m = with_dev(NLDEV(CMD_GET), RQ);
	m_attr(&m, A_DEV_NAME, "abc", 3);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: GET with an unterminated DEV_NAME");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_attr(&m, A_DEV_NAME, NULL, 0);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: GET with a zero-length DEV_NAME");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_str(&m, A_DEV_NAME, "");
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "dev-name: GET with an empty (NUL only) DEV_NAME is answered");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_str(&m, A_DEV_NAME, long65);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: GET with a 65-character DEV_NAME");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_str(&m, A_DEV_NAME, long64);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "dev-name: GET with a 64-character DEV_NAME is answered");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_attr(&m, A_DEV_NAME, "ab\0cd", 5);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "dev-name: GET with a DEV_NAME holding an inner NUL is answered");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_attr(&m, A_DEV_NAME, "nlname", 6);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: SET with an unterminated DEV_NAME");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_attr(&m, A_DEV_NAME, NULL, 0);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: SET with a zero-length DEV_NAME");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_str(&m, A_DEV_NAME, "");
	DPLAIN(m, E_ERR(EINVAL), "dev-name: SET with an empty name");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_str(&m, A_DEV_NAME, long65);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: SET with a 65-character name");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_DEV_NAME, 0x41414141);
	DPLAIN(m, E_ERR(EINVAL), "dev-name: SET with DEV_NAME as a u32 (no NUL)");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_attr(&m, A_DEV_NAME, "nlx", 3);
	m_str(&m, A_LINK_TYPE, "rxe");
	m_str(&m, A_NDEV_NAME, "lo");
	plain(m, E_ERR(EINVAL), "dev-name: NEWLINK with an unterminated DEV_NAME");
	add("dev-name: the device kept its name")->fn = fn_name_unchanged;
	cases[ncases - 1].needs_dev = 1;
}

static void fam_attr_headers(void)
{
	/*
	 * lib/nlattr.c: __nla_validate_parse walks attributes while nla_ok (nla_len >= 4 and within
	 * the message); what is left is only warned about in the liberal parse (GET, PORT_GET,
	 * RES_*, STAT_GET, SYS_GET) and refused in the strict one (SET, ...). Attribute type 0 is
	 * skipped by the liberal parse and refused by the strict one (NL_VALIDATE_MAXTYPE).
	 * NLA_F_NESTED on a non-nested attribute is refused only by the strict parse.
	 */
	static const uint16_t bad_len[] = { 0, 2, 3, 200 };
	struct msg m;

	for (size_t i = 0; i < sizeof(bad_len) / sizeof(*bad_len); i++) {
		struct nlattr a = { .nla_len = bad_len[i], .nla_type = A_DEV_INDEX };
		uint32_t idx = dev->index;

		m = req(NLDEV(CMD_GET), RQ);
		m_raw(&m, &a, sizeof(a));
		m_raw(&m, &idx, 4);
		DPLAIN(m, E_ERR(EINVAL), "attr-headers: GET whose DEV_INDEX has nla_len %u", bad_len[i]);
		m = with_dev(NLDEV(CMD_GET), RQ);
		a.nla_type = A_PORT_INDEX;
		m_raw(&m, &a, sizeof(a));
		m_raw(&m, &idx, 4);
		DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with DEV_INDEX then an attribute of nla_len %u", bad_len[i]);
		m = with_dev(NLDEV(CMD_SET), RQ);
		m_raw(&m, &a, sizeof(a));
		m_raw(&m, &idx, 4);
		DPLAIN(m, E_ERR(EINVAL), "attr-headers: SET with DEV_INDEX then an attribute of nla_len %u", bad_len[i]);
	}
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_raw(&m, "\x01\x00", 2);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with 2 bytes after the attributes");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_raw(&m, "\x01\x00", 2);
	DPLAIN(m, E_ERR(EINVAL), "attr-headers: SET with 2 bytes after the attributes");
	m = req(NLDEV(CMD_GET), RQ);
	m_u32(&m, 0, 7);
	m_u32(&m, A_DEV_INDEX, dev->index);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with an attribute of type 0 first");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, 0, 7);
	DPLAIN(m, E_ERR(EINVAL), "attr-headers: SET with an attribute of type 0");
	m = req(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_DEV_INDEX | NLA_F_NESTED, dev->index);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with NLA_F_NESTED on DEV_INDEX");
	m = req(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_DEV_INDEX | NLA_F_NESTED, dev->index);
	DPLAIN(m, E_ERR(EINVAL), "attr-headers: SET with NLA_F_NESTED on DEV_INDEX");
	m = req(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_DEV_INDEX | NLA_F_NET_BYTEORDER, dev->index);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with NLA_F_NET_BYTEORDER on DEV_INDEX");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_attr(&m, A_STAT_HWCOUNTERS, "\0\0", 2);
	DPLAIN(m, E_ERR(EINVAL), "attr-headers: GET with a 2-byte nested attribute");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_attr(&m, A_STAT_HWCOUNTERS, NULL, 0);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with an empty nested attribute");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_DEV_INDEX, unknown_index);
	DPLAIN(m, E_ERR(EINVAL), "attr-headers: GET with DEV_INDEX twice, the last unknown, uses the last");
	m = with_index(NLDEV(CMD_GET), RQ, unknown_index);
	m_u32(&m, A_DEV_INDEX, dev->index);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-headers: GET with DEV_INDEX twice, the last valid, uses the last");
}

static void fam_attr_types(void)
{
	/*
	 * Types above RDMA_NLDEV_ATTR_MAX - 1 (118) are skipped by the liberal parse and refused by
	 * the strict one (lib/nlattr.c: __nla_validate_parse, NL_VALIDATE_MAXTYPE). A fixed-size
	 * attribute of the wrong size: shorter is -ERANGE, longer only warned about, in the liberal
	 * parse; any mismatch is -EINVAL in the strict one. Attributes without a policy type
	 * (NLA_UNSPEC, e.g. CAP_FLAGS) are refused by the strict parse (NL_VALIDATE_UNSPEC);
	 * RES_SRC_ADDR has a minimum length of sizeof(sockaddr_storage). SYS_GET returns the parse
	 * error as it is (nldev.c: nldev_sys_get_doit), the others turn it into -EINVAL.
	 */
	static const uint16_t types[] = { A_MAX, A_MAX + 1, 200, 0x3fff };
	struct msg m;

	for (size_t i = 0; i < sizeof(types) / sizeof(*types); i++) {
		m = with_dev(NLDEV(CMD_GET), RQ);
		m_u32(&m, types[i], 1);
		DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-types: GET with attribute type %u is answered", types[i]);
		m = with_dev(NLDEV(CMD_SET), RQ);
		m_u32(&m, types[i], 1);
		DPLAIN(m, E_ERR(EINVAL), "attr-types: SET with attribute type %u", types[i]);
	}
	m = req(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_MAX, 1);
	plain(m, E_ERR(EINVAL), "attr-types: GET with only an unknown attribute type");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m_u32(&m, 0x3fff, 1);
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "attr-types: SYS_GET with attribute type 0x3fff is answered");
	m = with_dev(NLDEV(CMD_DELDEV), RQ);
	m_u32(&m, A_MAX, 1);
	DPLAIN(m, E_ERR(EINVAL), "attr-types: DELDEV with attribute type 119");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_DEV_DIM, 1);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-types: GET with DEV_DIM (u8) of 4 bytes is answered");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_attr(&m, A_DEV_DIM, NULL, 0);
	DPLAIN(m, E_ERR(EINVAL), "attr-types: GET with DEV_DIM of 0 bytes");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_DEV_DIM, 1);
	DPLAIN(m, E_ERR(EINVAL), "attr-types: SET with DEV_DIM (u8) of 4 bytes");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m_attr(&m, A_NETNS_MODE, NULL, 0);
	plain(m, E_ERR(ERANGE), "attr-types: SYS_GET with NETNS_MODE of 0 bytes: ERANGE");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m_u32(&m, A_NETNS_MODE, 1);
	plain(m, E_REPLY(NLDEV(CMD_SYS_GET)), "attr-types: SYS_GET with NETNS_MODE of 4 bytes is answered");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m_attr(&m, A_DEV_NAME, "x", 1);
	plain(m, E_ERR(EINVAL), "attr-types: SYS_GET with an unterminated DEV_NAME");
	m = req(NLDEV(CMD_SYS_GET), RQ);
	m_attr(&m, A_STAT_HWCOUNTERS, "\0", 1);
	plain(m, E_ERR(ERANGE), "attr-types: SYS_GET with a 1-byte nested attribute: ERANGE");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_u32(&m, A_CAP_FLAGS, 1);
	DPLAIN(m, E_REPLY(NLDEV(CMD_GET)), "attr-types: GET with CAP_FLAGS (no policy) is answered");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_CAP_FLAGS, 1);
	DPLAIN(m, E_ERR(EINVAL), "attr-types: SET with CAP_FLAGS (no policy)");
	m = with_dev(NLDEV(CMD_GET), RQ);
	m_u32(&m, 33 /* RES_SRC_ADDR */, 1);
	DPLAIN(m, E_ERR(EINVAL), "attr-types: GET with a 4-byte RES_SRC_ADDR (min 128)");
	m = req(NLDEV(CMD_GET), RQ);
	m_str(&m, A_DEV_INDEX, "1");
	plain(m, E_ERR(EINVAL), "attr-types: GET with DEV_INDEX as the string \"1\"");
	m = with_dev(NLDEV(CMD_FRMR_POOLS_SET), RQ);
	m_attr(&m, A_FRMR_POOLS_AGING_PERIOD, "\0\0", 2);
	DPLAIN(m, E_ERR(EINVAL), "attr-types: FRMR_POOLS_SET with a 2-byte AGING_PERIOD");
	m = with_dev(NLDEV(CMD_GET_CHARDEV), RQ);
	m_str(&m, A_CHARDEV_TYPE, "abcdefghijklmnopqrstuvwxyz0123456");
	DPLAIN(m, E_ERR(EINVAL), "attr-types: GET_CHARDEV with a 33-character CHARDEV_TYPE");
}

static struct tcase *unpriv(struct msg m, struct expect e, const char *name)
{
	struct tcase *c = plain(m, e, "%s", name);

	c->unpriv = 1;
	return c;
}

static void fam_admin(void)
{
	/*
	 * netlink.c: rdma_nl_rcv_msg: ops flagged RDMA_NL_ADMIN_PERM (nldev.c: SET, NEWLINK,
	 * DELLINK, SYS_SET, STAT_SET, STAT_DEL, the four *_RAW, NEWDEV, DELDEV, FRMR_POOLS_SET;
	 * device.c: the three LS ops) need netlink_capable(CAP_NET_ADMIN), checked before the
	 * handler runs and before doit/dump is chosen: -EPERM. Other ops work without it.
	 * Each case runs in a child that dropped CAP_NET_ADMIN with capset.
	 */
	struct msg m;
	struct tcase *c;
	static const int raw[] = { CMD_RES_QP_GET_RAW, CMD_RES_CQ_GET_RAW, CMD_RES_MR_GET_RAW, CMD_RES_SRQ_GET_RAW };

	c = add("admin: the child lacks CAP_NET_ADMIN and can still dump devices");
	c->fn = fn_unpriv_sanity;
	c->unpriv = 1;
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_str(&m, A_DEV_NAME, "nlperm0");
	unpriv(m, E_ERR(EPERM), "admin: SET rename")->needs_dev = 1;
	add("admin: the device kept its name")->fn = fn_name_unchanged;
	cases[ncases - 1].needs_dev = 1;
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u8(&m, A_DEV_DIM, 1);
	unpriv(m, E_ERR(EPERM), "admin: SET DEV_DIM")->needs_dev = 1;
	m = with_dev(NLDEV(CMD_SET), RQD);
	unpriv(m, E_ERR(EPERM), "admin: SET as a dump")->needs_dev = 1;
	unpriv(req(NLDEV(CMD_SET), RQ), E_ERR(EPERM), "admin: SET without attributes");
	m = with_index(NLDEV(CMD_SET), RQ, unknown_index);
	m_str(&m, A_DEV_NAME, "nlperm0");
	unpriv(m, E_ERR(EPERM), "admin: SET unknown index");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_str(&m, A_DEV_NAME, "nlperm0");
	m_str(&m, A_LINK_TYPE, "rxe");
	m_str(&m, A_NDEV_NAME, "lo");
	unpriv(m, E_ERR(EPERM), "admin: NEWLINK");
	unpriv(with_dev(NLDEV(CMD_DELLINK), RQ), E_ERR(EPERM), "admin: DELLINK")->needs_dev = 1;
	m = req(NLDEV(CMD_SYS_SET), RQ);
	m_u8(&m, A_NETNS_MODE, 1);
	unpriv(m, E_ERR(EPERM), "admin: SYS_SET NETNS_MODE");
	m = req(NLDEV(CMD_SYS_SET), RQ);
	m_u8(&m, A_PRIV_QKEY_MODE, 0);
	unpriv(m, E_ERR(EPERM), "admin: SYS_SET PRIVILEGED_QKEY_MODE");
	m = with_dev_port(NLDEV(CMD_STAT_SET), RQ, 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_MODE, 1);
	unpriv(m, E_ERR(EPERM), "admin: STAT_SET")->needs_dev = 1;
	m = with_dev_port(NLDEV(CMD_STAT_DEL), RQ, 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_COUNTER_ID, 1);
	m_u32(&m, A_RES_LQPN, 1);
	unpriv(m, E_ERR(EPERM), "admin: STAT_DEL")->needs_dev = 1;
	for (size_t i = 0; i < sizeof(raw) / sizeof(*raw); i++) {
		char name[80];

		snprintf(name, sizeof(name), "admin: op %d (RES_*_GET_RAW) dump", raw[i]);
		unpriv(with_dev(NLDEV(raw[i]), RQD), E_ERR(EPERM), name)->needs_dev = 1;
		snprintf(name, sizeof(name), "admin: op %d (RES_*_GET_RAW) doit", raw[i]);
		m = with_dev_port(NLDEV(raw[i]), RQ, 1);
		m_u32(&m, A_RES_LQPN, 1);
		unpriv(m, E_ERR(EPERM), name)->needs_dev = 1;
	}
	m = with_dev(NLDEV(CMD_NEWDEV), RQ);
	m_str(&m, A_DEV_NAME, "nlsub0");
	m_u8(&m, A_DEV_TYPE, 1);
	unpriv(m, E_ERR(EPERM), "admin: NEWDEV")->needs_dev = 1;
	unpriv(with_dev(NLDEV(CMD_DELDEV), RQ), E_ERR(EPERM), "admin: DELDEV")->needs_dev = 1;
	unpriv(with_dev(NLDEV(CMD_FRMR_POOLS_SET), RQ), E_ERR(EPERM), "admin: FRMR_POOLS_SET")->needs_dev = 1;
	for (int op = 0; op < 3; op++) {
		char name[80];

		snprintf(name, sizeof(name), "admin: LS op %d", op);
		unpriv(req(NL_TYPE(RDMA_NL_LS, op), RQ), E_ERR(EPERM), name);
	}
	/* not admin */
	unpriv(with_dev(NLDEV(CMD_GET), RQ), E_REPLY(NLDEV(CMD_GET)), "admin: GET works without CAP_NET_ADMIN")->needs_dev = 1;
	unpriv(req(NLDEV(CMD_SYS_GET), RQ), E_REPLY(NLDEV(CMD_SYS_GET)), "admin: SYS_GET works without CAP_NET_ADMIN");
	unpriv(with_dev_port(NLDEV(CMD_PORT_GET), RQ, 1), E_REPLY(NLDEV(CMD_GET)), "admin: PORT_GET works without CAP_NET_ADMIN")->needs_dev = 1;
	unpriv(req(NLDEV(CMD_RES_GET), RQD), E_DUMP(NLDEV(CMD_RES_GET), ndevs), "admin: RES_GET dump works without CAP_NET_ADMIN");
	unpriv(with_dev(NLDEV(CMD_RES_QP_GET), RQD), E_DUMP(NLDEV(CMD_RES_QP_GET), -1), "admin: RES_QP_GET dump works without CAP_NET_ADMIN")->needs_dev = 1;
	unpriv(with_index(NLDEV(CMD_GET), RQ, unknown_index), E_ERR(EINVAL), "admin: a non-admin op's errors are unchanged (EINVAL)");
	unpriv(req(NL_TYPE(9, 1), RQ), E_ERR(EINVAL), "admin: unknown client is EINVAL, not EPERM");
}

static void fam_dump(void)
{
	/*
	 * af_netlink.c: netlink_dump_start runs the first round at once; later rounds run from
	 * recvmsg when the receive queue has room (netlink_recvmsg -> netlink_dump), so a dump
	 * completes even with the smallest SO_RCVBUF. A GET dump carries one device per round
	 * (device.c: ib_enum_all_devs stops at the first non-zero return). Closing the socket
	 * mid-dump releases the dump state. A second dump while one runs is -EBUSY; a doit is
	 * served. NLM_F_ROOT or NLM_F_MATCH alone count as a dump (NLM_F_DUMP is both bits,
	 * netlink.c tests `flags & NLM_F_DUMP`). A dump gets no ACK even with NLM_F_ACK.
	 */
	struct tcase *c;
	struct msg m;

	c = add("dump: GET dump abandoned after the first part; a new one lists every device");
	c->m = req(NLDEV(CMD_GET), RQD);
	c->fn = fn_dump_abandon;
	c->arg = 1;
	c->needs_dev = 1;
	c = add("dump: GET dump abandoned before reading; a new one lists every device");
	c->m = req(NLDEV(CMD_GET), RQD);
	c->fn = fn_dump_abandon;
	c = add("dump: GET dump with a tiny receive buffer abandoned after the first part");
	c->m = req(NLDEV(CMD_GET), RQD);
	c->fn = fn_dump_abandon;
	c->arg = 1;
	c->rcvbuf = 1;
	c->needs_dev = 1;
	c = add("dump: PORT_GET dump abandoned after the first part");
	c->m = with_dev(NLDEV(CMD_PORT_GET), RQD);
	c->fn = fn_dump_abandon;
	c->arg = 1;
	c->needs_dev = 1;
	c = add("dump: RES_GET dump abandoned after the first part");
	c->m = req(NLDEV(CMD_RES_GET), RQD);
	c->fn = fn_dump_abandon;
	c->arg = 1;
	c->needs_dev = 1;
	c = add("dump: RES_QP_GET dump abandoned before reading");
	c->m = with_dev(NLDEV(CMD_RES_QP_GET), RQD);
	c->fn = fn_dump_abandon;
	c->needs_dev = 1;
	c = add("dump: a second GET dump while the first runs: EBUSY");
	c->m = req(NLDEV(CMD_GET), RQD);
	c->e = E_ERR(EBUSY);
	c->fn = fn_dump_busy;
	c->needs_dev = 1;
	c = add("dump: a PORT_GET dump while a GET dump runs: EBUSY");
	c->m = with_dev(NLDEV(CMD_PORT_GET), RQD);
	c->e = E_ERR(EBUSY);
	c->fn = fn_dump_busy;
	c->needs_dev = 1;
	c = add("dump: a SYS_GET doit while a GET dump runs is answered");
	c->m = req(NLDEV(CMD_SYS_GET), RQ);
	c->e = E_REPLY(NLDEV(CMD_SYS_GET));
	c->fn = fn_dump_busy;
	c->needs_dev = 1;
	c = add("dump: a bad GET doit while a GET dump runs: EINVAL");
	c->m = req(NLDEV(CMD_GET), RQ);
	c->e = E_ERR(EINVAL);
	c->fn = fn_dump_busy;
	c->needs_dev = 1;
	plain(req(NLDEV(CMD_GET), RQD), E_DUMP(NLDEV(CMD_GET), ndevs), "dump: GET dump with a tiny receive buffer completes")->rcvbuf = 1;
	plain(req(NLDEV(CMD_RES_GET), RQD), E_DUMP(NLDEV(CMD_RES_GET), ndevs), "dump: RES_GET dump with a tiny receive buffer completes")->rcvbuf = 1;
	c = plain(with_dev(NLDEV(CMD_PORT_GET), RQD), E_DUMP(NLDEV(CMD_PORT_GET), dev->ports), "dump: PORT_GET dump with a tiny receive buffer completes");
	c->rcvbuf = 1;
	c->needs_dev = 1;
	for (int op = CMD_RES_QP_GET; op <= CMD_RES_PD_GET; op++) {
		c = plain(with_dev(NLDEV(op), RQD), E_DUMP(NLDEV(op), -1), "dump: op %d dump with a tiny receive buffer completes", op);
		c->rcvbuf = 1;
		c->needs_dev = 1;
	}
	/* the *_RAW dumps are left out: their entries come from the driver
	 * (ops.fill_res_*_entry_raw), and on mlx5_0 the QP and CQ ones end with EOPNOTSUPP, the SRQ
	 * one with EINVAL (mlx5 has no fill_res_srq_entry_raw) */
	for (int op = CMD_RES_CTX_GET; op <= CMD_RES_SRQ_GET; op++)
		DPLAIN(with_dev(NLDEV(op), RQD), E_DUMP(NLDEV(op), -1), "dump: op %d dump of the device", op);
	DPLAIN(with_dev(NLDEV(CMD_FRMR_POOLS_GET), RQD), E_DUMP(NLDEV(CMD_FRMR_POOLS_GET), -1), "dump: FRMR_POOLS_GET dump of the device");
	plain(req(NLDEV(CMD_GET), NLM_F_REQUEST | NLM_F_DUMP), E_DUMP(NLDEV(CMD_GET), ndevs), "dump: GET dump without NLM_F_ACK");
	plain(req(NLDEV(CMD_GET), NLM_F_REQUEST | NLM_F_ACK | NLM_F_ROOT), E_DUMP(NLDEV(CMD_GET), ndevs), "dump: NLM_F_ROOT alone starts a dump");
	plain(req(NLDEV(CMD_GET), NLM_F_REQUEST | NLM_F_ACK | NLM_F_MATCH), E_DUMP(NLDEV(CMD_GET), ndevs), "dump: NLM_F_MATCH alone starts a dump");
	m = req(NLDEV(CMD_STAT_GET), RQD);
	m_u32(&m, A_STAT_RES, 99);
	plain(m, E_DONE_ERR(EINVAL), "dump: STAT_GET dump with an unknown STAT_RES");
	m = with_dev(NLDEV(CMD_STAT_GET), RQD);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	DPLAIN(m, E_DUMP(NLDEV(CMD_STAT_GET), -1), "dump: STAT_GET dump of the QP counters");
}

static void fam_rename(void)
{
	/*
	 * nldev.c: nldev_set_doit -> device.c: ib_device_rename: the same name is a no-op (0), a
	 * name another device has is -EEXIST, else the device is renamed. With NET_NS_FD the
	 * request goes to ib_device_set_netns_put: a bad fd is -EBADF, a file that is no netns
	 * -EINVAL (get_net_ns_by_fd), our own netns a no-op. DEV_DIM accepts 0 and 1
	 * (ib_device_set_dim).
	 */
	struct tcase *c;
	struct msg m;

	m = with_dev(NLDEV(CMD_SET), RQ);
	m_str(&m, A_DEV_NAME, dev->name);
	DPLAIN(m, E_ACK(), "rename: to its own name: ACK");
	c = add("rename: to a new name and back");
	c->fn = fn_rename_and_back;
	c->needs_dev = 1;
	c = add("rename: a 64-character name is cut to 63 characters, and back");
	c->fn = fn_rename_and_back;
	c->arg = 64;
	c->needs_dev = 1;
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_str(&m, A_DEV_NAME, ndevs > 1 ? devs[1].name : "none");
	c = plain(m, E_ERR(EEXIST), "rename: to another device's name: EEXIST");
	c->needs_dev = 1;
	c->needs_2dev = 1;
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_NET_NS_FD, 9999);
	DPLAIN(m, E_ERR(EBADF), "rename: SET NET_NS_FD not an open fd: EBADF");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_NET_NS_FD, devnull_fd);
	DPLAIN(m, E_ERR(EINVAL), "rename: SET NET_NS_FD of /dev/null: EINVAL");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_NET_NS_FD, netns_fd);
	DPLAIN(m, E_ACK(), "rename: SET NET_NS_FD of our own netns: ACK (no-op)");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u32(&m, A_NET_NS_FD, netns_fd);
	m_str(&m, A_DEV_NAME, "");
	DPLAIN(m, E_ERR(EINVAL), "rename: SET NET_NS_FD with an empty name: EINVAL");
	m = with_dev(NLDEV(CMD_SET), RQ);
	m_u8(&m, A_DEV_DIM, 2);
	DPLAIN(m, E_ERR(EINVAL), "rename: SET DEV_DIM 2: EINVAL");
	if (dev->dim >= 0) {
		m = with_dev(NLDEV(CMD_SET), RQ);
		m_u8(&m, A_DEV_DIM, dev->dim);
		DPLAIN(m, E_ACK(), "rename: SET DEV_DIM to its current value: ACK");
	}
	add("rename: the device has its original name at the end")->fn = fn_name_unchanged;
	cases[ncases - 1].needs_dev = 1;
}

static void fam_handlers(void)
{
	/* nldev.c, handler by handler; the function deciding is named in each group */
	struct msg m;
	uint32_t n = dev->ports;

	/* nldev_res_get_doit */
	DPLAIN(with_dev(NLDEV(CMD_RES_GET), RQ), E_REPLY(NLDEV(CMD_RES_GET)), "handlers: RES_GET of the device");
	m = with_dev(NLDEV(CMD_RES_GET), RQ);
	m_u32(&m, A_DRIVER_DETAILS, 1);
	DPLAIN(m, E_REPLY(NLDEV(CMD_RES_GET)), "handlers: RES_GET with a 4-byte DRIVER_DETAILS is answered");
	/* res_get_common_doit: the object's id is required; per-port objects (QP, CM_ID) need a
	 * port, per-device ones refuse one; an unknown id is -ENOENT
	 * (restrack.c: rdma_restrack_get_byid) */
	DPLAIN(with_dev_port(NLDEV(CMD_RES_QP_GET), RQ, 1), E_ERR(EINVAL), "handlers: RES_QP_GET without LQPN");
	m = with_dev(NLDEV(CMD_RES_QP_GET), RQ);
	m_u32(&m, A_RES_LQPN, 0xfffff0);
	DPLAIN(m, E_ERR(EINVAL), "handlers: RES_QP_GET without PORT_INDEX");
	m = with_dev_port(NLDEV(CMD_RES_QP_GET), RQ, 1);
	m_u32(&m, A_RES_LQPN, 0xfffff0);
	DPLAIN(m, E_ERR(ENOENT), "handlers: RES_QP_GET unknown LQPN: ENOENT");
	m = with_dev_port(NLDEV(CMD_RES_QP_GET), RQ, n + 1);
	m_u32(&m, A_RES_LQPN, 0xfffff0);
	DPLAIN(m, E_ERR(EINVAL), "handlers: RES_QP_GET port past the last");
	m = with_dev_port(NLDEV(CMD_RES_QP_GET_RAW), RQ, 1);
	m_u32(&m, A_RES_LQPN, 0xfffff0);
	DPLAIN(m, E_ERR(ENOENT), "handlers: RES_QP_GET_RAW unknown LQPN: ENOENT");
	m = with_dev_port(NLDEV(CMD_RES_CM_ID_GET), RQ, 1);
	m_u32(&m, A_RES_CM_IDN, 0xfffff0);
	DPLAIN(m, E_ERR(ENOENT), "handlers: RES_CM_ID_GET unknown CM_IDN: ENOENT");
	{
		static const struct { int op, id; const char *what; } per_dev[] = {
			{ CMD_RES_CQ_GET, A_RES_CQN, "RES_CQ_GET" },
			{ CMD_RES_MR_GET, A_RES_MRN, "RES_MR_GET" },
			{ CMD_RES_PD_GET, A_RES_PDN, "RES_PD_GET" },
			{ CMD_RES_CTX_GET, A_RES_CTXN, "RES_CTX_GET" },
			{ CMD_RES_SRQ_GET, A_RES_SRQN, "RES_SRQ_GET" },
			{ CMD_RES_CQ_GET_RAW, A_RES_CQN, "RES_CQ_GET_RAW" },
		};

		for (size_t i = 0; i < sizeof(per_dev) / sizeof(*per_dev); i++) {
			m = with_dev(NLDEV(per_dev[i].op), RQ);
			m_u32(&m, per_dev[i].id, 0xfffff0);
			DPLAIN(m, E_ERR(ENOENT), "handlers: %s unknown id: ENOENT", per_dev[i].what);
			m = with_dev_port(NLDEV(per_dev[i].op), RQ, 1);
			m_u32(&m, per_dev[i].id, 0xfffff0);
			DPLAIN(m, E_ERR(EINVAL), "handlers: %s with a port (per-device object)", per_dev[i].what);
			DPLAIN(with_dev(NLDEV(per_dev[i].op), RQ), E_ERR(EINVAL), "handlers: %s without an id", per_dev[i].what);
		}
	}
	/* nldev_sys_get_doit / nldev_set_sys_set_doit: only 0 and 1 are accepted */
	plain(req(NLDEV(CMD_SYS_SET), RQ), E_ERR(EINVAL), "handlers: SYS_SET without attributes");
	m = req(NLDEV(CMD_SYS_SET), RQ);
	m_u8(&m, A_NETNS_MODE, 2);
	plain(m, E_ERR(EINVAL), "handlers: SYS_SET NETNS_MODE 2");
	m = req(NLDEV(CMD_SYS_SET), RQ);
	m_u8(&m, A_PRIV_QKEY_MODE, 2);
	plain(m, E_ERR(EINVAL), "handlers: SYS_SET PRIVILEGED_QKEY_MODE 2");
	m = req(NLDEV(CMD_SYS_SET), RQ);
	m_u32(&m, A_NETNS_MODE, 1);
	plain(m, E_ERR(EINVAL), "handlers: SYS_SET NETNS_MODE of 4 bytes (strict parse)");
	/* nldev_newlink: DEV_NAME, LINK_TYPE, NDEV_NAME required; no '%' in the name; the netdev
	 * must exist (-ENODEV); an unknown link type is -EINVAL after request_module fails */
	plain(req(NLDEV(CMD_NEWLINK), RQ), E_ERR(EINVAL), "handlers: NEWLINK without attributes");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_str(&m, A_DEV_NAME, "nl%d");
	m_str(&m, A_LINK_TYPE, "nosuchlink");
	m_str(&m, A_NDEV_NAME, "lo");
	plain(m, E_ERR(EINVAL), "handlers: NEWLINK with '%' in the name");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_str(&m, A_DEV_NAME, "nlnew0");
	m_str(&m, A_LINK_TYPE, "nosuchlink");
	m_str(&m, A_NDEV_NAME, "nosuchnetdev0");
	plain(m, E_ERR(ENODEV), "handlers: NEWLINK on a netdev that does not exist: ENODEV");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_str(&m, A_DEV_NAME, "nlnew0");
	m_str(&m, A_LINK_TYPE, "nosuchlink");
	m_str(&m, A_NDEV_NAME, "lo");
	plain(m, E_ERR(EINVAL), "handlers: NEWLINK of an unknown link type");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_str(&m, A_DEV_NAME, "nlnew0");
	m_str(&m, A_LINK_TYPE, "abcdefghijklmnopq");
	m_str(&m, A_NDEV_NAME, "lo");
	plain(m, E_ERR(EINVAL), "handlers: NEWLINK with a 17-character LINK_TYPE");
	m = req(NLDEV(CMD_NEWLINK), RQ);
	m_str(&m, A_DEV_NAME, "");
	m_str(&m, A_LINK_TYPE, "nosuchlink");
	m_str(&m, A_NDEV_NAME, "lo");
	plain(m, E_ERR(EINVAL), "handlers: NEWLINK with an empty name");
	/* nldev_dellink: only devices flagged IBK_ALLOW_USER_UNREG (software devices) */
	DPLAIN(with_dev(NLDEV(CMD_DELLINK), RQ), E_ERR(EINVAL), "handlers: DELLINK of a hardware device");
	/* nldev_newdev / nldev_deldev (device.c: ib_del_sub_device_and_put) */
	m = with_dev(NLDEV(CMD_NEWDEV), RQ);
	m_str(&m, A_DEV_NAME, "nlsub0");
	DPLAIN(m, E_ERR(EINVAL), "handlers: NEWDEV without DEV_TYPE");
	m = with_dev(NLDEV(CMD_NEWDEV), RQ);
	m_u8(&m, A_DEV_TYPE, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: NEWDEV without DEV_NAME");
	DPLAIN(with_dev(NLDEV(CMD_DELDEV), RQ), E_ERR(EOPNOTSUPP), "handlers: DELDEV of a device that is no sub-device: EOPNOTSUPP");
	/* nldev_get_chardev / device.c: ib_get_client_nl_info: unknown client -> EOPNOTSUPP */
	m = with_dev(NLDEV(CMD_GET_CHARDEV), RQ);
	DPLAIN(m, E_ERR(EINVAL), "handlers: GET_CHARDEV without CHARDEV_TYPE");
	m = req(NLDEV(CMD_GET_CHARDEV), RQ);
	m_str(&m, A_CHARDEV_TYPE, "nosuchclient");
	plain(m, E_ERR(EOPNOTSUPP), "handlers: GET_CHARDEV of an unknown global client: EOPNOTSUPP");
	m = with_dev(NLDEV(CMD_GET_CHARDEV), RQ);
	m_str(&m, A_CHARDEV_TYPE, "nosuchclient");
	DPLAIN(m, E_ERR(EOPNOTSUPP), "handlers: GET_CHARDEV of an unknown device client: EOPNOTSUPP");
	m = with_dev_port(NLDEV(CMD_GET_CHARDEV), RQ, 1);
	m_str(&m, A_CHARDEV_TYPE, "nosuchclient");
	DPLAIN(m, E_ERR(EOPNOTSUPP), "handlers: GET_CHARDEV of an unknown client on port 1: EOPNOTSUPP");
	m = with_dev_port(NLDEV(CMD_GET_CHARDEV), RQ, n + 1);
	m_str(&m, A_CHARDEV_TYPE, "nosuchclient");
	DPLAIN(m, E_ERR(EINVAL), "handlers: GET_CHARDEV port past the last");
	/* nldev_stat_set_doit / nldev_stat_set_mode_doit */
	DPLAIN(with_dev_port(NLDEV(CMD_STAT_SET), RQ, 1), E_ERR(EINVAL), "handlers: STAT_SET without STAT_MODE nor HWCOUNTERS");
	m = with_dev_port(NLDEV(CMD_STAT_SET), RQ, 1);
	m_u32(&m, A_STAT_MODE, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_SET STAT_MODE without STAT_RES");
	m = with_dev_port(NLDEV(CMD_STAT_SET), RQ, 1);
	m_u32(&m, A_STAT_RES, 99);
	m_u32(&m, A_STAT_MODE, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_SET with STAT_RES 99");
	m = with_dev(NLDEV(CMD_STAT_SET), RQ);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_MODE, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_SET without PORT_INDEX");
	/* nldev_stat_del_doit */
	m = with_dev_port(NLDEV(CMD_STAT_DEL), RQ, 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_RES_LQPN, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_DEL without STAT_COUNTER_ID");
	m = with_dev_port(NLDEV(CMD_STAT_DEL), RQ, 1);
	m_u32(&m, A_STAT_RES, 99);
	m_u32(&m, A_STAT_COUNTER_ID, 1);
	m_u32(&m, A_RES_LQPN, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_DEL with STAT_RES 99");
	m = with_dev_port(NLDEV(CMD_STAT_DEL), RQ, 0);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	m_u32(&m, A_STAT_COUNTER_ID, 1);
	m_u32(&m, A_RES_LQPN, 1);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_DEL port 0");
	/* nldev_stat_get_doit */
	m = with_dev_port(NLDEV(CMD_STAT_GET), RQ, 1);
	m_u32(&m, A_STAT_RES, 99);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_GET with STAT_RES 99");
	m = with_dev_port(NLDEV(CMD_STAT_GET), RQ, 1);
	m_u32(&m, A_STAT_RES, A_RES_QP);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_GET QP mode query without STAT_MODE");
	m = with_dev(NLDEV(CMD_STAT_GET), RQ);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_GET without PORT_INDEX");
	m = with_dev_port(NLDEV(CMD_STAT_GET), RQ, 0);
	DPLAIN(m, E_ERR(EINVAL), "handlers: STAT_GET port 0");
	/* nldev_frmr_pools_set_doit: no settable attribute given, nothing done, err 0 */
	DPLAIN(with_dev(NLDEV(CMD_FRMR_POOLS_SET), RQ), E_ACK(), "handlers: FRMR_POOLS_SET with only DEV_INDEX: ACK");
}

static void build_cases(void)
{
	dev = ndevs > 0 ? &devs[0] : &nodev;
	fam_framing();
	fam_no_request();
	fam_clients();
	fam_ops();
	fam_no_handler();
	fam_dev_index();
	fam_port_index();
	fam_dev_name();
	fam_attr_headers();
	fam_attr_types();
	fam_admin();
	fam_dump();
	fam_rename();
	fam_handlers();
}

/* ---------------------------------------------------------------------------------------- */
/* Running */

static int run_one(struct tcase *c, char *got, size_t gn)
{
	if (c->needs_dev && ndevs == 0) {
		snprintf(got, gn, "no RDMA device found by a GET dump");
		return 0;
	}
	if (c->unpriv)
		return run_unpriv(c, got, gn);
	if (c->fn)
		return c->fn(c, got, gn);
	return exchange(&c->m, &c->e, c->rcvbuf, got, gn);
}

/* ---------------------------------------------------------------------------------------- */
/* iwpm: the iWARP port mapper's side of RDMA_NL_IWCM (iw_cm's table: iwcm.c, iwpm_msg.c) */

/* What comes back for one message: each message's type, its u16/u32 attributes, the DONE or
 * ERROR errno, until DONE or ERROR or SILENCE_MS of silence; printed on one line.
 */
static void iwpm_answers(int fd, char *out, size_t n)
{
	char buf[8192];
	size_t used = 0;

	out[0] = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;
		int end = 0;

		if (poll(&p, 1, SILENCE_MS) <= 0) {
			used += snprintf(out + used, n - used, "%snothing more", used ? ", " : "");
			return;
		}
		r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0)
			return;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)r);
		     h = NLMSG_NEXT(h, r)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				int e;

				memcpy(&e, NLMSG_DATA(h), sizeof(e));
				used += snprintf(out + used, n - used, "%s%s %d", used ? ", " : "",
						 h->nlmsg_type == NLMSG_DONE ? "done" : "error", e);
				end = 1;
				continue;
			}
			used += snprintf(out + used, n - used, "%smsg client %u op %u from %u",
					 used ? ", " : "", h->nlmsg_type >> 10, h->nlmsg_type & 0x3ff,
					 h->nlmsg_pid);
			for (struct nlattr *a = (struct nlattr *)NLMSG_DATA(h);
			     (char *)a + NLA_HDRLEN <= (char *)h + h->nlmsg_len && a->nla_len >= NLA_HDRLEN;
			     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
				uint32_t v = 0;

				if (a->nla_len - NLA_HDRLEN <= 4)
					memcpy(&v, (char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN);
				used += snprintf(out + used, n - used, " [%u]=%u", a->nla_type, v);
			}
		}
		if (end)
			return;
	}
}

/* Sends one IWCM request (op, the sender's port id in nlmsg_pid as iwpmd sets it) and prints
 * `iwpm <name>: <answers>`.
 */
static void iwpm_case(const char *name, struct msg *m)
{
	char got[512];
	uint32_t pid;
	int fd = nl_open(&pid, 0);

	if (fd < 0) {
		printf("iwpm %s: no socket (%s)\n", name, strerror(errno));
		return;
	}
	M_SET(m, nlmsg_pid, pid);
	M_SET(m, nlmsg_seq, next_seq++);
	if (nl_send(fd, m->b, m->len)) {
		printf("iwpm %s: send failed: %s\n", name, strerror(errno));
		close(fd);
		return;
	}
	iwpm_answers(fd, got, sizeof(got));
	/* The kernel's message comes from port 0 and goes to ours: say so, not the numbers. */
	printf("iwpm %s: %s\n", name, got);
	close(fd);
}

static int iwpm(void)
{
	enum { REG_PID = 0, REMOVE_MAPPING = 3, MAPINFO = 6, HELLO = 8 };
	uint16_t v4 = 4, v3 = 3;
	struct msg m;

	m = req(NL_TYPE(RDMA_NL_IWCM, HELLO), NLM_F_REQUEST);
	m_attr(&m, 1, &v4, 2);
	iwpm_case("hello abi 4", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, HELLO), NLM_F_REQUEST);
	m_attr(&m, 1, &v3, 2);
	iwpm_case("hello abi 3", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, HELLO), NLM_F_REQUEST);
	iwpm_case("hello without its attribute", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, HELLO), NLM_F_REQUEST | NLM_F_ACK);
	m_attr(&m, 1, &v4, 1);
	iwpm_case("hello with a 1-byte version", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, MAPINFO), NLM_F_REQUEST);
	m_str(&m, 1, "iWarpPortMapperUser");
	m_attr(&m, 2, &v4, 2);
	iwpm_case("mapinfo from iwpmd, no mapping", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, MAPINFO), NLM_F_REQUEST);
	m_str(&m, 1, "someone else");
	m_attr(&m, 2, &v4, 2);
	iwpm_case("mapinfo from another name", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, REMOVE_MAPPING), NLM_F_REQUEST | NLM_F_ACK);
	iwpm_case("remove mapping (no callback)", &m);
	m = req(NL_TYPE(RDMA_NL_IWCM, REG_PID), NLM_F_REQUEST | NLM_F_ACK);
	iwpm_case("reg pid answer without attributes", &m);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* monitor SECONDS: RDMA_NL_GROUP_NOTIFY events (nldev.c: rdma_nl_notify_event) */

static int monitor(int seconds)
{
	static uint8_t buf[16384];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int group = RDMA_NL_GROUP_NOTIFY;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	struct timespec t0, t;

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0) {
		fprintf(stderr, "rdma_nl_tester: cannot join RDMA_NL_GROUP_NOTIFY: %s\n", strerror(errno));
		return 2;
	}
	printf("monitor: listening for %d s\n", seconds);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = seconds * 1000L - ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			printf("monitor: recv: %s\n", strerror(errno));
			fflush(stdout);
			continue;
		}
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			const uint8_t *p = NLMSG_DATA(h);
			const uint8_t *end = (const uint8_t *)h + h->nlmsg_len;
			int ev = -1;
			long idx = -1, port = -1, ndev = -1;
			char name[NAME_MAX_LEN + 1] = "", ndev_name[32] = "";

			if (h->nlmsg_type != NLDEV(CMD_MONITOR)) {
				printf("monitor: message type 0x%x\n", h->nlmsg_type);
				continue;
			}
			while (p + NLA_HDRLEN <= end) {
				const struct nlattr *at = (const void *)p;
				const void *v = p + NLA_HDRLEN;
				int len = at->nla_len - NLA_HDRLEN;
				uint32_t u = 0;

				if (at->nla_len < NLA_HDRLEN || p + at->nla_len > end)
					break;
				if (len == 4)
					memcpy(&u, v, 4);
				switch (at->nla_type & NLA_TYPE_MASK) {
				case A_DEV_INDEX: idx = u; break;
				case A_DEV_NAME: snprintf(name, sizeof(name), "%.*s", len, (const char *)v); break;
				case A_PORT_INDEX: port = u; break;
				case 50 /* NDEV_INDEX */: ndev = u; break;
				case A_NDEV_NAME: snprintf(ndev_name, sizeof(ndev_name), "%.*s", len, (const char *)v); break;
				case A_EVENT_TYPE: if (len == 1) ev = *(const uint8_t *)v; break;
				}
				p += NLA_ALIGN(at->nla_len);
			}
			printf("monitor: event=%s(%d) dev_index=%ld dev_name=%s", ev >= 0 && ev < 6 ? event_names[ev] : "unknown",
			       ev, idx, name);
			if (port >= 0)
				printf(" port=%ld", port);
			if (ndev >= 0 || ndev_name[0])
				printf(" ndev_index=%ld ndev_name=%s", ndev, ndev_name);
			printf(" seq=%u pid=%u\n", h->nlmsg_seq, h->nlmsg_pid);
		}
		fflush(stdout);
	}
	printf("monitor: done\n");
	close(fd);
	return 0;
}

/*
 * chardev: one GET_CHARDEV request for device `index` and client `type`, flags NLM_F_REQUEST only
 * (as libibverbs sends it). Prints each attribute of the reply in order ("attr N u32|u64 VALUE" or
 * "attr N str VALUE"), or "error ERRNO-NAME", then whatever else arrives within SILENCE_MS (there
 * must be nothing: an extra ACK would break libnl's sequence check). Exit status 0 if a reply came.
 */
static int chardev(uint32_t index, const char *type)
{
	static uint8_t buf[16384];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct msg m = req(NLDEV(CMD_GET_CHARDEV), NLM_F_REQUEST);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA), got = 0, rc = 1;

	m_u32(&m, A_DEV_INDEX, index);
	m_str(&m, A_CHARDEV_TYPE, type);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, m.b, m.len, 0) != (ssize_t)m.len) {
		printf("chardev: cannot talk to NETLINK_RDMA: %s\n", strerror(errno));
		return 2;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, got ? SILENCE_MS : 5000) <= 0)
			break;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0)
			break;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			const uint8_t *p = NLMSG_DATA(h), *end = (const uint8_t *)h + h->nlmsg_len;

			if (got++)
				printf("then: ");
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				printf("error %s\n", e->error ? errname(-e->error) : "0 (ACK)");
				continue;
			}
			if (h->nlmsg_type != NLDEV(CMD_GET_CHARDEV)) {
				printf("message type 0x%x\n", h->nlmsg_type);
				continue;
			}
			printf("reply flags 0x%x\n", h->nlmsg_flags);
			rc = 0;
			while (p + NLA_HDRLEN <= end) {
				const struct nlattr *at = (const void *)p;
				const uint8_t *v = p + NLA_HDRLEN;
				int len = at->nla_len - NLA_HDRLEN;
				uint64_t u64;
				uint32_t u32;

				if (at->nla_len < NLA_HDRLEN || p + at->nla_len > end)
					break;
				if (at->nla_type == A_PAD) {
					/* alignment only */
				} else if (len == 4) {
					memcpy(&u32, v, 4);
					printf("attr %u u32 %u\n", at->nla_type, u32);
				} else if (len == 8 && at->nla_type != A_CHARDEV_NAME) {
					memcpy(&u64, v, 8);
					printf("attr %u u64 0x%llx\n", at->nla_type, (unsigned long long)u64);
				} else {
					printf("attr %u str %.*s%s\n", at->nla_type, len > 0 ? len - 1 : 0, (const char *)v,
					       len > 0 && v[len - 1] == 0 ? "" : " (no NUL)");
				}
				p += NLA_ALIGN(at->nla_len);
			}
		}
	}
	if (!got)
		printf("chardev: no answer\n");
	close(fd);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: rdma_nl_tester [--list] [--only SUBSTRING]\n"
			"       rdma_nl_tester monitor SECONDS\n"
			"       rdma_nl_tester chardev INDEX TYPE\n"
			"       rdma_nl_tester iwpm\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int list = 0, hex = 0, passed = 0, failed = 0, skipped = 0, n = 0, found;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list"))
			list = 1;
		else if (!strcmp(argv[i], "--hex"))
			list = hex = 1;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "monitor") && i + 1 < argc)
			return monitor(atoi(argv[i + 1]));
		else if (!strcmp(argv[i], "chardev") && i + 2 < argc)
			return chardev(strtoul(argv[i + 1], NULL, 0), argv[i + 2]);
		else if (!strcmp(argv[i], "iwpm"))
			return setvbuf(stdout, NULL, _IOLBF, 0), iwpm();
		else
			usage();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	found = discover();
	if (!list) {
		if (found < 0)
			printf("# GET dump failed: no NETLINK_RDMA answer (is ib_core loaded?)\n");
		for (int i = 0; i < ndevs; i++)
			printf("# device %s index %u, %u port(s)\n", devs[i].name, devs[i].index, devs[i].ports);
		printf("# unknown index %u\n", unknown_index);
	}
	build_cases();
	for (int i = 0; i < ncases; i++) {
		struct tcase *c = &cases[i];
		char got[700], want[200];

		if (only && !strstr(c->name, only))
			continue;
		n++;
		if (list) {
			printf("%d %s\n", n, c->name);
			for (size_t j = 0; hex && j < c->m.len; j++)
				printf("%02x%s", c->m.b[j], j % 16 == 15 || j + 1 == c->m.len ? "\n" : " ");
			continue;
		}
		if (c->needs_2dev && ndevs < 2) {
			printf("ok %d - %s # SKIP needs two devices, found %d\n", n, c->name, ndevs);
			skipped++;
			continue;
		}
		got[0] = 0;
		if (run_one(c, got, sizeof(got))) {
			printf("ok %d - %s\n", n, c->name);
			passed++;
		} else {
			if (c->fn) {
				snprintf(want, sizeof(want), "see case");
				printf("not ok %d - %s: %s\n", n, c->name, got);
			} else {
				describe_expect(&c->e, want, sizeof(want));
				printf("not ok %d - %s: expected %s, got %s\n", n, c->name, want, got);
			}
			failed++;
		}
	}
	if (list)
		return 0;
	if (skipped)
		printf("# %d skipped\n", skipped);
	printf("rdma_nl_tester: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
