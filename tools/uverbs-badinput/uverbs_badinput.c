// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_badinput: malformed requests on a uverbs character device (/dev/infiniband/uverbsN),
 * each checked against the errno the upstream C ib_uverbs of Linux 7.3.4 returns
 * (drivers/infiniband/core/uverbs_ioctl.c: ib_uverbs_ioctl, ib_uverbs_cmd_verbs; the VFS turns
 * -ENOIOCTLCMD into ENOTTY). Only cases whose answer does not depend on which methods a stack
 * implements: the ioctl header's checks and unknown objects and methods.
 *
 * Usage: uverbs_badinput [/dev/infiniband/uverbs0] [DRIVER_ID]   (defaults: uverbs0, 1 = mlx5)
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

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/infiniband/uverbs0";
	uint32_t id = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	struct hdr h;

	setvbuf(stdout, NULL, _IOLBF, 0);
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

	printf("uverbs_badinput: %d passed, %d failed\n", passed, failed);
	close(fd);
	return failed ? 1 : 0;
}
