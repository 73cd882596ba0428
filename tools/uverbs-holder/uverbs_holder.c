// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_holder: holds a user context of the first RDMA device open (ibv_open_device) and
 * reads its async events until the device goes away, to show what a process sees then
 * (C's disassociation): the events it read up to IB_EVENT_DEVICE_FATAL (after which C's
 * async event file has nothing more to give, and a read would wait for ever), then the errno
 * of a command sent afterwards (QUERY_PORT).
 *
 * Usage: uverbs_holder OUT   Lines appended to OUT (flushed at once, so a scenario can wait on
 * them): `context` (with a PD and a 64 KiB MR in it), then `event N` per event, `read ERRNO` if a read fails,
 * `query_port ERRNO|ok`, `done`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

static const char *errname(int e)
{
	switch (e) {
	case EIO: return "EIO";
	case EINVAL: return "EINVAL";
	case ENODEV: return "ENODEV";
	case EAGAIN: return "EAGAIN";
	default: return strerror(e);
	}
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	static char buf[65536];
	FILE *out;
	int n, rc;

	if (argc != 2 || !(out = fopen(argv[1], "a")))
		return 2;
	setvbuf(out, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(out, "no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fprintf(out, "open %s\n", errname(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fprintf(out, "alloc_pd %s\n", errname(errno));
		return 1;
	}
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		fprintf(out, "reg_mr %s\n", errname(errno));
		return 1;
	}
	fprintf(out, "context\n");
	for (;;) {
		if (ibv_get_async_event(ctx, &ev)) {
			fprintf(out, "read %s\n", errname(errno));
			break;
		}
		fprintf(out, "event %d\n", (int)ev.event_type);
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			break;
	}
	rc = ibv_query_port(ctx, 1, &pa);
	fprintf(out, "query_port %s\n", rc ? errname(rc) : "ok");
	/* The device took the MR and PD back already; what this answers is not checked. */
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	fprintf(out, "done\n");
	return 0;
}
