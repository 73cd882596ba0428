// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_clients: a C module of ib_core clients, built once against include/rdma/ib_verbs.h and
 * loaded unchanged on either stack (scenario c-abi-clients): on C's ib_core it is the oracle,
 * on the Rust core it exercises the C ABI (docs/c-abi.md, step 2). Test tool.
 *
 * Three clients register in this order: "first" and "second" keep per-device data
 * (ib_set_client_data) and check it in every later callback through C's inline
 * ib_get_client_data; "refuser" fails its add, so it must never get remove or rename. Each
 * callback prints one line; what add prints is what C modules read from struct ib_device
 * inline (name, node type and GUID, ports, per-port immutable data through rdma_cap_* and
 * rdma_protocol_*, a few attributes, the parent device), what ib_query_port returns and
 * what the core's caches hold (ib_get_cached_pkey, ib_find_cached_pkey,
 * ib_get_cached_port_state); at load it prints the core's texts and sizes (ib_event_msg,
 * ib_wc_status_msg, the GID type names both ways, rdma_addr_size and its bounded forms,
 * rdma_node_get_transport, ib_modify_qp_is_ok's answers over its table, ib_sg_to_pages on
 * made-up scatter lists). "first" also
 * registers an event handler (ib_register_event_handler) that prints each event of the device
 * with the cached port state it sees, then dispatches two events as a C driver does
 * (ib_dispatch_event) and writes a message about the device through ibdev_err.
 */
#include <linux/atomic.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/wait.h>
#include <rdma/ib.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

/* Exported by ib_core and declared in its private core_priv.h (which rdma_cm includes). */
const char *ib_cache_gid_type_str(enum ib_gid_type gid_type);
int ib_cache_gid_parse_type_str(const char *buf);

struct ctx {
	struct ib_client *client;
	struct ib_device *device;
	struct ib_event_handler handler;
	bool has_handler;
};

static struct ib_client first, second, refuser;
static unsigned int add_count;
/* Events "first"'s handler got, and where dispatch_events waits for the next. */
static atomic_t events_seen = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(events_wait);

/* What the client's data for @device says: ours (set by our add), or what went wrong. */
static const char *data_check(struct ib_client *client, struct ib_device *device, void *data)
{
	struct ctx *c = data;

	if (!c)
		return "missing";
	if (c->client != client || c->device != device)
		return "someone else's";
	if (ib_get_client_data(device, client) != data)
		return "not what ib_get_client_data returns";
	return "ours";
}

/* The device's events, with the port state the cache holds when the handler runs. */
static void on_event(struct ib_event_handler *handler, struct ib_event *event)
{
	enum ib_port_state state = IB_PORT_NOP;
	int ret = ib_get_cached_port_state(event->device, event->element.port_num, &state);

	pr_info("ib_c_clients: %s: event %d port %u (cached state %d, %d)\n",
		dev_name(&event->device->dev), event->event, event->element.port_num, state, ret);
	atomic_inc(&events_seen);
	wake_up_all(&events_wait);
}

/*
 * A driver's own events, as a C driver dispatches them (ib_dispatch_event, which hands them to
 * the handlers later, from the core's workqueue): one at a time, each waited for, so that the
 * handler's lines come in this order on either stack. SM change goes straight to the handlers;
 * LID change first refreshes the port's cached state. Then a message about the device through
 * ibdev_err, which names it as the core names it.
 */
static void dispatch_events(struct ib_device *device)
{
	static const enum ib_event_type types[] = { IB_EVENT_SM_CHANGE, IB_EVENT_LID_CHANGE };
	int i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		struct ib_event ev = { .device = device, .event = types[i], .element.port_num = 1 };
		int before = atomic_read(&events_seen);

		ib_dispatch_event(&ev);
		if (!wait_event_timeout(events_wait, atomic_read(&events_seen) != before, 10 * HZ))
			pr_info("ib_c_clients: %s: dispatched event %d never came\n",
				dev_name(&device->dev), types[i]);
	}
	ibdev_err(device, "ibdev_err from ib_c_clients: %s %d\n", "value", 42);
}

/* What the core's caches say of @port. */
static void print_caches(struct ib_device *device, u32 port)
{
	u16 pkey = 0, full = 0, limited = 0, absent = 0;
	enum ib_port_state state = IB_PORT_NOP;
	int r0 = ib_get_cached_pkey(device, port, 0, &pkey);
	int r1 = ib_find_cached_pkey(device, port, 0xffff, &full);
	int r2 = ib_find_cached_pkey(device, port, 0x7fff, &limited);
	int r3 = ib_find_cached_pkey(device, port, 0x1234, &absent);
	int r4 = ib_get_cached_pkey(device, port, 1 << 16, &pkey);
	int r5 = ib_get_cached_port_state(device, port, &state);
	int r6 = ib_get_cached_port_state(device, port + 1, &state);

	pr_info("ib_c_clients: %s port %u caches: pkey[0] 0x%x (%d), find 0xffff %u (%d), 0x7fff %u (%d), 0x1234 0x%x (%d), pkey[65536] %d, state %d (%d), port %u: %d\n",
		dev_name(&device->dev), port, pkey, r0, full, r1, limited, r2, absent, r3, r4,
		state, r5, port + 1, r6);
}

static void print_port(struct ib_device *device, u32 port)
{
	struct ib_port_attr attr;
	int ret = ib_query_port(device, port, &attr);

	pr_info("ib_c_clients: %s port %u: ib %d, cm %d, mad %d, smi %d, cap_flags 0x%x, gids %d, pkeys %d, max_mad %zu\n",
		dev_name(&device->dev), port, rdma_protocol_ib(device, port),
		rdma_cap_ib_cm(device, port), rdma_cap_ib_mad(device, port),
		rdma_cap_ib_smi(device, port), device->port_data[port].immutable.core_cap_flags,
		device->port_data[port].immutable.gid_tbl_len,
		device->port_data[port].immutable.pkey_tbl_len,
		rdma_max_mad_size(device, port));
	if (ret) {
		pr_info("ib_c_clients: %s port %u: ib_query_port: %d\n", dev_name(&device->dev),
			port, ret);
		return;
	}
	pr_info("ib_c_clients: %s port %u: state %d, phys %u, lid 0x%x, sm_lid 0x%x, lmc %u, mtu %d/%d, width %u, speed %u, gids %d, pkeys %u, cap 0x%x, prefix 0x%016llx\n",
		dev_name(&device->dev), port, attr.state, attr.phys_state, attr.lid, attr.sm_lid,
		attr.lmc, attr.active_mtu, attr.max_mtu, attr.active_width, attr.active_speed,
		attr.gid_tbl_len, attr.pkey_tbl_len, attr.port_cap_flags,
		(unsigned long long)attr.subnet_prefix);
}

static int add_one(struct ib_client *client, struct ib_device *device)
{
	struct ctx *c;
	u32 port;

	add_count++;
	pr_info("ib_c_clients: %s: add %s (index order %u): node type %u, guid %016llx, ports %u-%u, parent %s, dma %s, kverbs %u\n",
		client->name, dev_name(&device->dev), add_count, device->node_type,
		(unsigned long long)be64_to_cpu(device->node_guid), rdma_start_port(device),
		rdma_end_port(device), device->dev.parent ? dev_name(device->dev.parent) : "-",
		device->dma_device ? dev_name(device->dma_device) : "-",
		device->kverbs_provider);
	if (strcmp(device->name, dev_name(&device->dev)))
		pr_info("ib_c_clients: %s: name %s differs from dev_name\n", client->name,
			device->name);
	if (client == &first) {
		pr_info("ib_c_clients: %s attrs: vendor 0x%x part %u hw %u, max_qp %d max_cq %d max_cqe %d max_mr %d max_pd %d max_srq %d max_sge %d/%d, atomic %d, cap 0x%llx, desc \"%s\"\n",
			dev_name(&device->dev), device->attrs.vendor_id,
			device->attrs.vendor_part_id, device->attrs.hw_ver, device->attrs.max_qp,
			device->attrs.max_cq, device->attrs.max_cqe, device->attrs.max_mr,
			device->attrs.max_pd, device->attrs.max_srq, device->attrs.max_send_sge,
			device->attrs.max_recv_sge, device->attrs.atomic_cap,
			(unsigned long long)device->attrs.device_cap_flags, device->node_desc);
		rdma_for_each_port(device, port) {
			print_port(device, port);
			print_caches(device, port);
		}
		pr_info("ib_c_clients: %s: rdma_net is init_net %d, rdma_dev_access_netns(init_net) %d, owner is the device %d\n",
			dev_name(&device->dev),
			net_eq(read_pnet(&device->coredev.rdma_net), &init_net),
			rdma_dev_access_netns(device, &init_net), device->coredev.owner == device);
		pr_info("ib_c_clients: %s: ib_query_port of port %u: %d\n", dev_name(&device->dev),
			rdma_end_port(device) + 1,
			ib_query_port(device, rdma_end_port(device) + 1, &(struct ib_port_attr){}));
	}
	if (client == &refuser) {
		pr_info("ib_c_clients: %s: refuses %s\n", client->name, dev_name(&device->dev));
		return -EOPNOTSUPP;
	}
	if (ib_get_client_data(device, client))
		pr_info("ib_c_clients: %s: data before it was set\n", client->name);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->client = client;
	c->device = device;
	if (client == &first) {
		INIT_IB_EVENT_HANDLER(&c->handler, device, on_event);
		ib_register_event_handler(&c->handler);
		c->has_handler = true;
		dispatch_events(device);
	}
	ib_set_client_data(device, client, c);
	pr_info("ib_c_clients: %s: data for %s: %s\n", client->name, dev_name(&device->dev),
		data_check(client, device, c));
	return 0;
}

static void remove_one(struct ib_client *client, struct ib_device *device, void *data)
{
	struct ctx *c = data;

	pr_info("ib_c_clients: %s: remove %s, data %s\n", client->name, dev_name(&device->dev),
		data_check(client, device, data));
	if (c && c->has_handler)
		ib_unregister_event_handler(&c->handler);
	kfree(data);
}

static void rename_one(struct ib_client *client, struct ib_device *device, void *data)
{
	pr_info("ib_c_clients: %s: renamed to %s (name %s), data %s\n", client->name,
		dev_name(&device->dev), device->name, data_check(client, device, data));
}

static int first_add(struct ib_device *d) { return add_one(&first, d); }
static int second_add(struct ib_device *d) { return add_one(&second, d); }
static int refuser_add(struct ib_device *d) { return add_one(&refuser, d); }
static void first_remove(struct ib_device *d, void *p) { remove_one(&first, d, p); }
static void second_remove(struct ib_device *d, void *p) { remove_one(&second, d, p); }
static void refuser_remove(struct ib_device *d, void *p) { remove_one(&refuser, d, p); }
static void first_rename(struct ib_device *d, void *p) { rename_one(&first, d, p); }
static void second_rename(struct ib_device *d, void *p) { rename_one(&second, d, p); }
static void refuser_rename(struct ib_device *d, void *p) { rename_one(&refuser, d, p); }

static struct ib_client first = {
	.name = "first", .add = first_add, .remove = first_remove, .rename = first_rename,
};
static struct ib_client second = {
	.name = "second", .add = second_add, .remove = second_remove, .rename = second_rename,
};
static struct ib_client refuser = {
	.name = "refuser", .add = refuser_add, .remove = refuser_remove,
	.rename = refuser_rename,
};

/*
 * ib_modify_qp_is_ok over every state pair and QP type below IB_QPT_MAX, one line per current
 * state: how many of the probe masks it allows and a hash of every answer in order. The probes
 * are the masks consumers use to reach INIT, RTR and RTS (and none), each alone, with each
 * attribute bit added and with each removed: around every set a transition requires, so that a
 * required or an allowed bit either stack has and the other has not changes the answers.
 */
static void print_qp_transitions(void)
{
	static const u32 typical[] = {
		0,
		IB_QP_STATE,
		IB_QP_STATE | IB_QP_PORT,
		IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_QKEY,
		IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY,
		IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS,
		IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN,
		IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER,
		IB_QP_STATE | IB_QP_SQ_PSN,
		IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_SQ_PSN,
		IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			IB_QP_MAX_QP_RD_ATOMIC,
	};
	enum ib_qp_state cur, next;
	u32 type, t, bit;

	for (cur = IB_QPS_RESET; cur <= IB_QPS_ERR; cur++) {
		u32 hash = 2166136261u, allowed = 0, probes = 0;

		for (next = IB_QPS_RESET; next <= IB_QPS_ERR; next++)
			for (type = 0; type < IB_QPT_MAX; type++)
				for (t = 0; t < ARRAY_SIZE(typical); t++)
					for (bit = 0; bit <= 26; bit++) {
						/* bit 26: the probe alone; then with the bit
						 * flipped (added or removed). */
						u32 mask = bit == 26 ? typical[t] :
								       typical[t] ^ BIT(bit);
						bool ok = ib_modify_qp_is_ok(cur, next, type, mask);

						hash = (hash ^ ok) * 16777619u;
						allowed += ok;
						probes++;
					}
		pr_info("ib_c_clients: qp transitions from state %d: %u of %u probes allowed, hash 0x%08x\n",
			cur, allowed, probes, hash);
	}
}

/* ib_sg_to_pages' set_page: records each page, refuses once the list holds sg_limit. */
static u64 sg_pages[64];
static int sg_npages, sg_limit;

static int record_page(struct ib_mr *mr, u64 addr)
{
	if (sg_npages >= sg_limit)
		return -ENOMEM;
	sg_pages[sg_npages++] = addr;
	return 0;
}

/*
 * ib_sg_to_pages as a driver's map_mr_sg calls it, on scatter lists made up here (DMA addresses
 * and lengths written directly, nothing mapped): one line per case with what it returns, the
 * offset it gives back, the MR's iova and length, and the pages set_page got.
 */
static void print_sg_to_pages(void)
{
	static const struct {
		const char *name;
		u32 page_size;
		int nents, limit;
		unsigned int offset;
		u64 addr[4];
		u32 len[4];
	} cases[] = {
		{ "aligned", 4096, 3, 64, 0, { 0x10000, 0x11000, 0x30000 }, { 4096, 4096, 8192 } },
		{ "first offset", 4096, 2, 64, 100, { 0x10000, 0x12000 }, { 8192, 4096 } },
		{ "gap", 4096, 3, 64, 0, { 0x10000, 0x20000, 0x21800 }, { 4096, 2048, 4096 } },
		{ "joined mid-page", 4096, 3, 64, 0, { 0x10000, 0x10800, 0x11000 }, { 2048, 2048, 4096 } },
		{ "joined across pages", 4096, 2, 64, 0, { 0x10400, 0x11c00 }, { 6144, 9216 } },
		{ "list full", 4096, 2, 3, 0, { 0x10000, 0x20000 }, { 8192, 8192 } },
		{ "list full at once", 4096, 1, 0, 0, { 0x10000 }, { 4096 } },
		{ "list full, offset", 4096, 1, 0, 512, { 0x10000 }, { 4096 } },
		{ "64k pages", 65536, 2, 64, 0, { 0x100000, 0x110000 }, { 65536, 100000 } },
		{ "offset past the first", 4096, 1, 64, 5000, { 0x10000 }, { 4096 } },
		{ "no entries", 4096, 0, 64, 0, { 0x10000 }, { 4096 } },
	};
	/* Static: the module's init runs once, and an ib_mr is large for its stack. */
	static struct scatterlist sgl[4];
	static struct ib_mr mr;
	static char line[512];
	int c, i, n, ret;

	for (c = 0; c < ARRAY_SIZE(cases); c++) {
		unsigned int offset = cases[c].offset;

		sg_init_table(sgl, ARRAY_SIZE(sgl));
		for (i = 0; i < ARRAY_SIZE(sgl); i++) {
			sg_dma_address(&sgl[i]) = cases[c].addr[i];
			sg_dma_len(&sgl[i]) = cases[c].len[i];
		}
		memset(&mr, 0, sizeof(mr));
		mr.page_size = cases[c].page_size;
		sg_npages = 0;
		sg_limit = cases[c].limit;
		ret = ib_sg_to_pages(&mr, sgl, cases[c].nents, &offset, record_page);
		n = 0;
		for (i = 0; i < sg_npages; i++)
			n += scnprintf(line + n, sizeof(line) - n, " 0x%llx", sg_pages[i]);
		pr_info("ib_c_clients: sg to pages, %s: %d, offset %u, iova 0x%llx length %llu, pages%s\n",
			cases[c].name, ret, offset, mr.iova, mr.length, n ? line : " none");
	}
}

/* The texts and sizes the core gives C modules, one line per table. */
static void print_tables(void)
{
	static const char * const gid_texts[] = { "IB/RoCE v1", "RoCE v2\n", "RoCE v2", "", "\n",
						  "RoCE v3", "ib/roce v1" };
	struct __kernel_sockaddr_storage ss = {};
	char line[1024];
	int i, n;

	n = 0;
	for (i = 0; i <= IB_EVENT_DEVICE_SPEED_CHANGE + 1; i++)
		n += scnprintf(line + n, sizeof(line) - n, "%s%s", i ? "|" : "", ib_event_msg(i));
	pr_info("ib_c_clients: events: %s\n", line);
	n = 0;
	for (i = 0; i <= IB_WC_GENERAL_ERR + 1; i++)
		n += scnprintf(line + n, sizeof(line) - n, "%s%s", i ? "|" : "", ib_wc_status_msg(i));
	pr_info("ib_c_clients: wc statuses: %s\n", line);
	n = 0;
	for (i = 0; i <= IB_GID_TYPE_SIZE; i++)
		n += scnprintf(line + n, sizeof(line) - n, "%s%s", i ? "|" : "",
			       ib_cache_gid_type_str(i));
	for (i = 0; i < ARRAY_SIZE(gid_texts); i++)
		n += scnprintf(line + n, sizeof(line) - n, " %d",
			       ib_cache_gid_parse_type_str(gid_texts[i]));
	pr_info("ib_c_clients: gid types: %s\n", line);
	n = 0;
	for (i = 0; i < 4; i++) {
		static const sa_family_t families[] = { AF_INET, AF_INET6, AF_IB, AF_UNIX };

		ss.ss_family = families[i];
		n += scnprintf(line + n, sizeof(line) - n, " %u:%d/%d/%d", families[i],
			       rdma_addr_size((struct sockaddr *)&ss),
			       rdma_addr_size_in6((struct sockaddr_in6 *)&ss),
			       rdma_addr_size_kss(&ss));
	}
	pr_info("ib_c_clients: address sizes:%s\n", line);
	n = 0;
	for (i = 0; i <= RDMA_NODE_UNSPECIFIED + 1; i++)
		n += scnprintf(line + n, sizeof(line) - n, " %d:%d", i, rdma_node_get_transport(i));
	pr_info("ib_c_clients: transports:%s\n", line);
	print_qp_transitions();
	print_sg_to_pages();
}

static int __init ib_c_clients_init(void)
{
	int ret;

	print_tables();

	ret = ib_register_client(&first);
	if (ret)
		return ret;
	ret = ib_register_client(&second);
	if (ret)
		goto out_first;
	ret = ib_register_client(&refuser);
	if (ret)
		goto out_second;
	pr_info("ib_c_clients: registered (ids in order: %d)\n",
		first.client_id < second.client_id && second.client_id < refuser.client_id);
	return 0;

out_second:
	ib_unregister_client(&second);
out_first:
	ib_unregister_client(&first);
	return ret;
}

static void __exit ib_c_clients_exit(void)
{
	ib_unregister_client(&refuser);
	ib_unregister_client(&second);
	ib_unregister_client(&first);
	pr_info("ib_c_clients: unregistered\n");
}

module_init(ib_c_clients_init);
module_exit(ib_c_clients_exit);
MODULE_DESCRIPTION("C ib_core clients loaded on either stack (test tool)");
MODULE_LICENSE("GPL");
