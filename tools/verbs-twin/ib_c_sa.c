// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_sa: a C user of the SA client API (what rdma_cm and IPoIB use), built once against
 * include/rdma/ib_sa.h and loaded unchanged on either stack (scenario fabric-sm-2vm, with an SM
 * running): on C's ib_core it is the oracle, on the Rust core it exercises the C ABI's SA client
 * and multicast joins (docs/c-abi.md). Test tool.
 *
 * On port 1 of each device (client add), one step at a time, each waited for before its line is
 * printed: a path query the API refuses; the path to the peer (peer_lid=) with every field of
 * the record, the record packed (ib_sa_pack_path) and unpacked again; the path to a LID nobody
 * has (the SA's error status); a cancel of a query that has ended; every service record (none);
 * the join of a multicast group (created by the first joiner) with every field of the SA's
 * record, the group's record as the core keeps it (ib_sa_get_mcmember_rec) and the address of
 * the group (ib_init_ah_from_mcmember);
 * joins the core answers itself (a second member; a Q_Key the group does not have; one whose
 * callback asks the core to free it); a create the SA refuses. The first membership is kept
 * until the module goes (its leave is the SA's business then); every other one is freed in the
 * add. LIDs and GIDs are printed as they are: the scenario names its own and the peer's. With
 * just_join=1 it only joins the group and keeps the membership; later callbacks (a port event's
 * -ENETRESET) are printed.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/wait.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

static int peer_lid;
module_param(peer_lid, int, 0444);
MODULE_PARM_DESC(peer_lid, "the LID of the peer port, asked for a path");

static bool just_join;
module_param(just_join, bool, 0444);
MODULE_PARM_DESC(just_join, "only join the group and keep the membership (no other step)");

static struct ib_sa_client sa_client;
static struct ib_client client;
static DECLARE_WAIT_QUEUE_HEAD(wake);

/* The group the module joins and keeps: ff12:601b:ffff::1:5a (link-local scope). */
static union ib_gid group_mgid = { .raw = { 0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0,
					     0, 0, 0, 0, 0, 0x01, 0x00, 0x5a } };

/* A path query's end. */
struct path_wait {
	int done, status;
	unsigned int num;
	struct sa_path_rec rec;
};

static void path_done(int status, struct sa_path_rec *resp, unsigned int num, void *context)
{
	struct path_wait *w = context;

	w->status = status;
	w->num = num;
	if (resp)
		w->rec = *resp;
	WRITE_ONCE(w->done, 1);
	wake_up_all(&wake);
}

/* A service query's end. */
struct service_wait {
	int done, status;
	unsigned int num;
	int resp_given;
};

static void service_done(int status, struct sa_service_rec *resp, unsigned int num,
			 void *context)
{
	struct service_wait *w = context;

	w->status = status;
	w->num = num;
	w->resp_given = resp != NULL;
	WRITE_ONCE(w->done, 1);
	wake_up_all(&wake);
}

/* A join's callbacks; `free_me` is what the callback returns. */
struct join_wait {
	int calls, status, free_me;
	struct ib_sa_mcmember_rec rec;
};

static int join_done(int status, struct ib_sa_multicast *mc)
{
	struct join_wait *w = mc->context;

	w->status = status;
	w->rec = mc->rec;
	if (w->calls)
		pr_info("ib_c_sa: callback %d of a membership: status %d\n", w->calls + 1, status);
	WRITE_ONCE(w->calls, w->calls + 1);
	wake_up_all(&wake);
	return w->free_me;
}

/* The membership kept until the module goes. */
static struct ib_sa_multicast *kept;
static struct join_wait kept_wait;

static int wait_path(struct path_wait *w)
{
	return wait_event_timeout(wake, READ_ONCE(w->done), 30 * HZ) ? 0 : -ETIME;
}

static int wait_join(struct join_wait *w, int calls)
{
	return wait_event_timeout(wake, READ_ONCE(w->calls) >= calls, 30 * HZ) ? 0 : -ETIME;
}

static void print_path(const char *what, struct sa_path_rec *r)
{
	pr_info("ib_c_sa: %s: type %d service_id %#llx dgid %pI6 sgid %pI6 dlid %u slid %u raw %u\n",
		what, r->rec_type, be64_to_cpu(r->service_id), r->dgid.raw, r->sgid.raw,
		be16_to_cpu(r->ib.dlid), be16_to_cpu(r->ib.slid), r->ib.raw_traffic);
	pr_info("ib_c_sa: %s: flow_label %#x hop_limit %u tclass %u reversible %u numb_path %u pkey %#x qos_class %u sl %u\n",
		what, be32_to_cpu(r->flow_label), r->hop_limit, r->traffic_class, r->reversible,
		r->numb_path, be16_to_cpu(r->pkey), be16_to_cpu(r->qos_class), r->sl);
	pr_info("ib_c_sa: %s: mtu %u/%u rate %u/%u packet_life_time %u/%u preference %u flags %#x\n",
		what, r->mtu_selector, r->mtu, r->rate_selector, r->rate,
		r->packet_life_time_selector, r->packet_life_time, r->preference, r->flags);
}

static void print_mcmember(const char *what, struct ib_sa_mcmember_rec *r)
{
	pr_info("ib_c_sa: %s: mgid %pI6 port_gid %pI6 qkey %#x mlid %#x\n", what, r->mgid.raw,
		r->port_gid.raw, be32_to_cpu(r->qkey), be16_to_cpu(r->mlid));
	pr_info("ib_c_sa: %s: mtu %u/%u tclass %u pkey %#x rate %u/%u packet_life_time %u/%u sl %u flow_label %#x hop_limit %u scope %u join_state %u proxy %u\n",
		what, r->mtu_selector, r->mtu, r->traffic_class, be16_to_cpu(r->pkey),
		r->rate_selector, r->rate, r->packet_life_time_selector, r->packet_life_time, r->sl,
		be32_to_cpu(r->flow_label), r->hop_limit, r->scope, r->join_state, r->proxy_join);
}

/* What a group's creation gives: IPoIB's components (Q_Key, P_Key, SL, flow label, TClass). */
#define CREATE_MASK (IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PORT_GID | \
		     IB_SA_MCMEMBER_REC_JOIN_STATE | IB_SA_MCMEMBER_REC_QKEY | \
		     IB_SA_MCMEMBER_REC_PKEY | IB_SA_MCMEMBER_REC_SL | \
		     IB_SA_MCMEMBER_REC_FLOW_LABEL | IB_SA_MCMEMBER_REC_TRAFFIC_CLASS)

static void member_rec(struct ib_sa_mcmember_rec *rec, union ib_gid *port_gid, u32 qkey)
{
	memset(rec, 0, sizeof(*rec));
	rec->mgid = group_mgid;
	rec->port_gid = *port_gid;
	rec->qkey = cpu_to_be32(qkey);
	rec->pkey = cpu_to_be16(0xffff);
	rec->join_state = 1;
}

/* Joins with `rec` and `mask`, waits for the first callback; the membership or an error. */
static struct ib_sa_multicast *join(struct ib_device *dev, struct ib_sa_mcmember_rec *rec,
				    ib_sa_comp_mask mask, struct join_wait *w)
{
	struct ib_sa_multicast *mc;

	mc = ib_sa_join_multicast(&sa_client, dev, 1, rec, mask, GFP_KERNEL, join_done, w);
	if (!IS_ERR(mc) && wait_join(w, 1))
		pr_info("ib_c_sa: no join callback in 30 s\n");
	return mc;
}

static void paths(struct ib_device *dev, u16 own_lid)
{
	struct sa_path_rec rec = {}, back = {};
	struct ib_sa_query *query = NULL;
	struct path_wait w = {};
	u8 wire[64];
	int id;

	/* A RoCE record: refused before anything is sent. */
	rec.rec_type = SA_PATH_REC_TYPE_ROCE_V2;
	id = ib_sa_path_rec_get(&sa_client, dev, 1, &rec, IB_SA_PATH_REC_DLID, 1000, GFP_KERNEL,
				path_done, &w, &query);
	pr_info("ib_c_sa: path with a RoCE record: %d, query %s\n", id, query ? "set" : "null");

	memset(&rec, 0, sizeof(rec));
	rec.rec_type = SA_PATH_REC_TYPE_IB;
	rec.ib.dlid = cpu_to_be16(peer_lid);
	rec.ib.slid = cpu_to_be16(own_lid);
	rec.reversible = 1;
	rec.numb_path = 1;
	id = ib_sa_path_rec_get(&sa_client, dev, 1, &rec,
				IB_SA_PATH_REC_DLID | IB_SA_PATH_REC_SLID |
				IB_SA_PATH_REC_REVERSIBLE | IB_SA_PATH_REC_NUMB_PATH,
				2000, GFP_KERNEL, path_done, &w, &query);
	pr_info("ib_c_sa: path to the peer: asked: %s, query %s\n", id >= 0 ? "an id" : "error",
		query ? "set" : "null");
	if (id < 0 || wait_path(&w)) {
		pr_info("ib_c_sa: path to the peer: %d, no answer\n", id);
		return;
	}
	pr_info("ib_c_sa: path to the peer: status %d, %u record(s)\n", w.status, w.num);
	print_path("path", &w.rec);
	ib_sa_pack_path(&w.rec, wire);
	/* Cut where the fields are: ServiceID | DGID | SGID | DLID SLID | the rest. */
	pr_info("ib_c_sa: packed: %*phN | %*phN | %*phN | %*phN | %*phN\n", 8, wire, 16, wire + 8,
		16, wire + 24, 4, wire + 40, 20, wire + 44);
	back.rec_type = SA_PATH_REC_TYPE_IB;
	ib_sa_unpack_path(wire, &back);
	pr_info("ib_c_sa: unpacked again: %s\n", memcmp(&back, &w.rec, sizeof(back)) ? "differs" : "the same record");

	/* A cancel of the query that ended: nothing happens. */
	w.done = 0;
	ib_sa_cancel_query(id, query);
	msleep(200);
	pr_info("ib_c_sa: cancel of an ended query: %s\n", w.done ? "a callback" : "no callback");

	/* A LID nobody has: the SA answers with an error status. */
	memset(&w, 0, sizeof(w));
	rec.ib.dlid = cpu_to_be16(0x77);
	id = ib_sa_path_rec_get(&sa_client, dev, 1, &rec,
				IB_SA_PATH_REC_DLID | IB_SA_PATH_REC_SLID, 2000, GFP_KERNEL,
				path_done, &w, &query);
	if (id < 0 || wait_path(&w)) {
		pr_info("ib_c_sa: path to LID 0x77: %d, no answer\n", id);
		return;
	}
	pr_info("ib_c_sa: path to LID 0x77: status %d, %u record(s), dlid %u\n", w.status, w.num,
		be16_to_cpu(w.rec.ib.dlid));
}

/* Every service the SA knows (a GetTable; nobody registered one). */
static void services(struct ib_device *dev)
{
	struct sa_service_rec rec = {};
	struct ib_sa_query *query = NULL;
	struct service_wait w = {};
	int id;

	id = ib_sa_service_rec_get(&sa_client, dev, 1, &rec, 0, 2000, GFP_KERNEL, service_done, &w,
				   &query);
	if (id < 0 || !wait_event_timeout(wake, READ_ONCE(w.done), 30 * HZ)) {
		pr_info("ib_c_sa: services: %d, no answer\n", id);
		return;
	}
	pr_info("ib_c_sa: services: status %d, %u record(s), records %s\n", w.status, w.num,
		w.resp_given ? "given" : "none");
}

/* A GUIDInfo query's end. */
struct guid_wait {
	int done, status, given;
	struct ib_sa_guidinfo_rec rec;
};

static void guid_done(int status, struct ib_sa_guidinfo_rec *resp, void *context)
{
	struct guid_wait *w = context;

	w->status = status;
	w->given = resp != NULL;
	if (resp)
		w->rec = *resp;
	WRITE_ONCE(w->done, 1);
	wake_up_all(&wake);
}

/* GUIDInfo record `block` of `lid` (a Get), its answer printed, LIDs and GUIDs named. */
static void guid_get(struct ib_device *dev, const char *what, u16 lid, u8 block, u8 method,
		     u16 own_lid, union ib_gid *own_gid)
{
	struct ib_sa_guidinfo_rec rec = { .lid = cpu_to_be16(lid), .block_num = block };
	struct ib_sa_query *query = NULL;
	struct guid_wait w = {};
	int id;

	id = ib_sa_guid_info_rec_query(&sa_client, dev, 1, &rec,
				       IB_SA_GUIDINFO_REC_LID | IB_SA_GUIDINFO_REC_BLOCK_NUM,
				       method, 2000, GFP_KERNEL, guid_done, &w, &query);
	if (id < 0) {
		pr_info("ib_c_sa: %s: %d, query %s\n", what, id, query ? "set" : "null");
		return;
	}
	if (!wait_event_timeout(wake, READ_ONCE(w.done), 30 * HZ)) {
		pr_info("ib_c_sa: %s: no answer\n", what);
		return;
	}
	pr_info("ib_c_sa: %s: status %d, record %s\n", what, w.status, w.given ? "given" : "none");
	if (w.given && !w.status)
		pr_info("ib_c_sa: %s: lid %s block %u, GUID 0 %s, GUIDs 1-7 %s\n", what,
			be16_to_cpu(w.rec.lid) == own_lid ? "OWN" : "other", w.rec.block_num,
			memcmp(w.rec.guid_info_list, own_gid->raw + 8, 8) ? "another" :
									     "the port GUID",
			memchr_inv(w.rec.guid_info_list + 8, 0, 56) ? "set" : "zero");
}

/* A service record packed and unpacked again (C's ib_pack/ib_unpack tables). */
static void service_packing(void)
{
	struct sa_service_rec rec = {}, back;
	u8 wire[176];
	int i;

	rec.id = cpu_to_be64(0x1122334455667788ULL);
	for (i = 0; i < 16; i++)
		rec.gid[i] = 0xf0 + i;
	rec.pkey = cpu_to_be16(0xffff);
	rec.reserved[0] = rec.reserved[1] = 0x5a;
	rec.lease = cpu_to_be32(0xffffffff);
	memcpy(rec.name, "ib_c_sa", 7);
	rec.data_16[7] = cpu_to_be16(0x0102);
	rec.data_64[1] = cpu_to_be64(0x0a0b0c0d0e0f1011ULL);
	memset(wire, 0xee, sizeof(wire));
	ib_sa_pack_service(&rec, wire);
	pr_info("ib_c_sa: service packed: %*phN | %*phN | %*phN | %*phN\n", 24, wire, 8, wire + 24,
		16, wire + 48, 16, wire + 160);
	memset(&back, 0xaa, sizeof(back));
	ib_sa_unpack_service(wire, &back);
	pr_info("ib_c_sa: service unpacked: reserved %*phN, the rest %s\n", 2, back.reserved,
		memcmp(&back.lease, &rec.lease, sizeof(rec) - offsetof(struct sa_service_rec, lease)) ||
		memcmp(&back, &rec, offsetof(struct sa_service_rec, reserved)) ? "differs" : "the same");
}

static void joins(struct ib_device *dev, union ib_gid *own_gid)
{
	static union ib_gid nobody_mgid = { .raw = { 0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0,
						      0, 0, 0, 0, 0, 0x02, 0x00, 0x5a } };
	struct ib_sa_mcmember_rec rec, got;
	struct join_wait w = {};
	struct ib_sa_multicast *mc;
	struct rdma_ah_attr ah;
	int ret;

	/* The group: created by the first of the two VMs to ask, joined by the other. */
	member_rec(&rec, own_gid, 0x0b1b);
	kept = join(dev, &rec, CREATE_MASK, &kept_wait);
	if (IS_ERR(kept)) {
		pr_info("ib_c_sa: join: %ld\n", PTR_ERR(kept));
		kept = NULL;
		return;
	}
	pr_info("ib_c_sa: join: status %d, %d callback(s)\n", kept_wait.status, kept_wait.calls);
	if (just_join)
		return;
	print_mcmember("joined", &kept_wait.rec);
	pr_info("ib_c_sa: the membership's record is the callback's: %s\n",
		memcmp(&kept->rec, &kept_wait.rec, sizeof(rec)) ? "no" : "yes");

	ret = ib_sa_get_mcmember_rec(dev, 1, &group_mgid, &got);
	pr_info("ib_c_sa: get_mcmember_rec: %d, %s\n", ret,
		memcmp(&got, &kept_wait.rec, sizeof(got)) ? "another record" : "the joined record");
	ret = ib_sa_get_mcmember_rec(dev, 1, &nobody_mgid, &got);
	pr_info("ib_c_sa: get_mcmember_rec of a group never joined: %d\n", ret);

	ret = ib_init_ah_from_mcmember(dev, 1, &kept_wait.rec, NULL, IB_GID_TYPE_IB, &ah);
	pr_info("ib_c_sa: init_ah_from_mcmember: %d type %d dlid %#x sl %u port %u rate %u flags %#x\n",
		ret, ah.type, rdma_ah_get_dlid(&ah), rdma_ah_get_sl(&ah), rdma_ah_get_port_num(&ah),
		rdma_ah_get_static_rate(&ah), rdma_ah_get_ah_flags(&ah));
	if (!ret) {
		const struct ib_global_route *grh = rdma_ah_read_grh(&ah);

		pr_info("ib_c_sa: init_ah_from_mcmember: dgid %pI6 sgid_index %u hop_limit %u tclass %u flow_label %#x sgid_attr %s\n",
			grh->dgid.raw, grh->sgid_index, grh->hop_limit, grh->traffic_class,
			grh->flow_label, grh->sgid_attr ? "held" : "none");
		rdma_destroy_ah_attr(&ah);
	}
	ret = ib_init_ah_from_mcmember(dev, 1, &kept_wait.rec, NULL, IB_GID_TYPE_ROCE, &ah);
	pr_info("ib_c_sa: init_ah_from_mcmember with a RoCE GID type: %d\n", ret);

	/* A second member of the group, with the join state it has: answered by the core. */
	mc = join(dev, &rec, CREATE_MASK, &w);
	pr_info("ib_c_sa: second join: status %d, %d callback(s), mlid %s\n", w.status, w.calls,
		w.rec.mlid == kept_wait.rec.mlid ? "the group's" : "another");
	if (!IS_ERR(mc))
		ib_sa_free_multicast(mc);

	/* A Q_Key the group does not have: refused by the core (C's cmp_rec). */
	memset(&w, 0, sizeof(w));
	member_rec(&rec, own_gid, 0x5678);
	mc = join(dev, &rec, CREATE_MASK, &w);
	pr_info("ib_c_sa: join with another Q_Key: status %d, %d callback(s)\n", w.status, w.calls);
	if (!IS_ERR(mc))
		ib_sa_free_multicast(mc);

	/* A callback that returns non-zero: the core frees the membership. */
	memset(&w, 0, sizeof(w));
	w.free_me = 1;
	member_rec(&rec, own_gid, 0x0b1b);
	mc = join(dev, &rec, CREATE_MASK, &w);
	pr_info("ib_c_sa: join freed by its callback: status %d, %d callback(s)\n", w.status, w.calls);

	/* A create without the components the SA needs (no Q_Key): the SA refuses it. */
	memset(&w, 0, sizeof(w));
	member_rec(&rec, own_gid, 0);
	rec.mgid = nobody_mgid;
	mc = join(dev, &rec, IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PORT_GID |
		  IB_SA_MCMEMBER_REC_JOIN_STATE, &w);
	pr_info("ib_c_sa: create without a Q_Key: status %d, %d callback(s)\n", w.status, w.calls);
	if (!IS_ERR(mc))
		ib_sa_free_multicast(mc);
}

static int add(struct ib_device *dev)
{
	struct ib_port_attr attr;
	union ib_gid gid;
	int ret;

	if (!rdma_cap_ib_sa(dev, 1))
		return 0;
	ret = ib_query_port(dev, 1, &attr);
	if (!ret)
		ret = rdma_query_gid(dev, 1, 0, &gid);
	if (ret) {
		pr_info("ib_c_sa: %s: port 1: %d\n", dev_name(&dev->dev), ret);
		return 0;
	}
	pr_info("ib_c_sa: %s: port 1 %s, own LID %u, SM LID %u\n", dev_name(&dev->dev),
		attr.state == IB_PORT_ACTIVE ? "ACTIVE" : "not ACTIVE", attr.lid, attr.sm_lid);
	if (!just_join) {
		paths(dev, attr.lid);
		services(dev);
		guid_get(dev, "GUIDInfo of the own port, block 0", attr.lid, 0, IB_MGMT_METHOD_GET,
			 attr.lid, &gid);
		guid_get(dev, "GUIDInfo of LID 0x77", 0x77, 0, IB_MGMT_METHOD_GET, attr.lid, &gid);
		guid_get(dev, "GUIDInfo with GetTable", attr.lid, 0, IB_MGMT_METHOD_GET_TABLE,
			 attr.lid, &gid);
		service_packing();
	}
	joins(dev, &gid);
	pr_info("ib_c_sa: %s: done\n", dev_name(&dev->dev));
	return 0;
}

static void remove(struct ib_device *dev, void *data)
{
	if (kept) {
		ib_sa_free_multicast(kept);
		kept = NULL;
		pr_info("ib_c_sa: %s: the kept membership freed (%d callback(s) in all, the last with status %d)\n",
			dev_name(&dev->dev), kept_wait.calls, kept_wait.status);
	}
}

static struct ib_client client = {
	.name = "ib_c_sa",
	.add = add,
	.remove = remove,
};

static int __init ib_c_sa_init(void)
{
	int ret;

	ib_sa_register_client(&sa_client);
	ret = ib_register_client(&client);
	if (ret)
		ib_sa_unregister_client(&sa_client);
	return ret;
}

static void __exit ib_c_sa_exit(void)
{
	ib_unregister_client(&client);
	ib_sa_unregister_client(&sa_client);
}

module_init(ib_c_sa_init);
module_exit(ib_c_sa_exit);
MODULE_DESCRIPTION("C SA client API user loaded on either stack (test tool)");
MODULE_LICENSE("GPL");
