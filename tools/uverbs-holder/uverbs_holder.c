// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_holder: holds a user context of the first RDMA device open (ibv_open_device) and
 * reads its async events until the device goes away, to show what a process sees then
 * (C's disassociation): the events it read up to IB_EVENT_DEVICE_FATAL (after which C's
 * async event file has nothing more to give, and a read would wait for ever), then the errno
 * of a command sent afterwards (QUERY_PORT).
 *
 * It also maps a UAR page of its own (mlx5's UAR object, as libmlx5 does for its doorbells)
 * and, once the device is gone, stores into it: the page was taken back, so the store lands in
 * memory (it reads back) instead of reaching a device that is gone, and nothing faults.
 *
 * The device sends DEVICE_FATAL before it takes the mappings back (C's
 * ib_uverbs_free_hw_resources queues the event, then destroys the file's objects and zaps its
 * mappings), so a store made as soon as the event is read may still reach the device's page.
 * With GO, the store waits until that file exists: the scenario creates it once the removal
 * (rmmod, unbind) has returned, when every mapping has been taken back.
 *
 * Usage: uverbs_holder OUT [GO]   Lines appended to OUT (flushed at once, so a scenario can wait
 * on them): `context` (with a PD, a 64 KiB MR, a completion channel and a CQ of 60 entries armed
 * on it, and a mapped UAR page), then `event N` per event,
 * `read ERRNO` if a read fails, `uar reads back 0xN` after a store of 0x1234 into the page,
 * `query_port ERRNO|ok`, `done`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* A non-cached UAR of mlx5's UAR object (0x1008, ALLOC 0x1000), mapped: NULL on failure. */
static volatile uint32_t *map_uar(int cmd_fd)
{
	struct {
		uint16_t length, object_id, method_id, num_attrs;
		uint64_t reserved1;
		uint32_t driver_id, reserved2;
		struct { uint16_t id, len, flags, attr_data; uint64_t data; } attrs[5];
	} h;
	uint64_t offset = 0;
	uint32_t page_id = 0, length = 0;
	void *p;

	memset(&h, 0, sizeof(h));
	h.length = sizeof(h);
	h.object_id = 0x1008;
	h.method_id = 0x1000;
	h.num_attrs = 5;
	h.driver_id = 1;
	h.attrs[0] = (typeof(h.attrs[0])){ 0x1000, 0, 1, 0, 0 };
	h.attrs[1] = (typeof(h.attrs[0])){ 0x1001, 8, 1, 0, 1 };
	h.attrs[2] = (typeof(h.attrs[0])){ 0x1004, 4, 1, 0, (uintptr_t)&page_id };
	h.attrs[3] = (typeof(h.attrs[0])){ 0x1003, 4, 1, 0, (uintptr_t)&length };
	h.attrs[4] = (typeof(h.attrs[0])){ 0x1002, 8, 1, 0, (uintptr_t)&offset };
	if (ioctl(cmd_fd, 0xc0181b01u, &h))
		return NULL;
	p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, cmd_fd, offset);
	return p == MAP_FAILED ? NULL : p;
}

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

/* Waits (10 ms steps, 60 s at most) until `path` exists: 0 once it does, -1 on timeout. */
static int wait_for_file(const char *path)
{
	const struct timespec step = { .tv_nsec = 10 * 1000 * 1000 };
	int i;

	for (i = 0; i < 6000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		nanosleep(&step, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	volatile uint32_t *uar;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	static char buf[65536];
	FILE *out;
	int n, rc;

	if (argc < 2 || argc > 3 || !(out = fopen(argv[1], "a")))
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
	ch = ibv_create_comp_channel(ctx);
	if (!ch) {
		fprintf(out, "create_comp_channel %s\n", errname(errno));
		return 1;
	}
	cq = ibv_create_cq(ctx, 60, NULL, ch, 0);
	if (!cq) {
		fprintf(out, "create_cq %s\n", errname(errno));
		return 1;
	}
	rc = ibv_req_notify_cq(cq, 0);
	if (rc) {
		fprintf(out, "req_notify_cq %s\n", errname(rc));
		return 1;
	}
	uar = map_uar(ctx->cmd_fd);
	if (!uar) {
		fprintf(out, "uar %s\n", errname(errno));
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
	if (argc == 3 && wait_for_file(argv[2])) {
		fprintf(out, "no %s after 60 s\n", argv[2]);
		return 1;
	}
	uar[0x40] = 0x1234;
	fprintf(out, "uar reads back %#x\n", uar[0x40]);
	rc = ibv_query_port(ctx, 1, &pa);
	fprintf(out, "query_port %s\n", rc ? errname(rc) : "ok");
	/* The device took them back already; what this answers is not checked. */
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	fprintf(out, "done\n");
	return 0;
}
