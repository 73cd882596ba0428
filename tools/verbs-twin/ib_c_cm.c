// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_cm: a user of C's connection manager (ib_cm.ko, unmodified), built once against
 * include/rdma/ib_cm.h and loaded unchanged on either stack (scenario c-abi-cm): on C's ib_core
 * it is the oracle, on the Rust core it shows C's ib_cm running on the C ABI (its MAD agent on
 * QP1, the P_Key and GID caches, ib_init_ah_attr_from_path, the AHs it makes for each MAD under
 * its spinlocks, the port counters it adds to sysfs). Test tool.
 *
 * Everything happens on mlx5_0's port 1, both ends of each connection on the same port (ib_cm's
 * MADs go to the port's own LID and come back through the device). From module init, once the
 * client's add has handed it the device, one step at a time, each waited for before its line is
 * printed: a listen, and a second listen on the same service refused; a REQ for a service
 * nobody listens on, rejected by ib_cm on the other end; a REQ for the listened service, the
 * passive side's REQ event (the path ib_cm rebuilt from the REQ, the QP numbers, private data),
 * its QP taken to RTR with ib_cm_init_qp_attr and a REP, the active side's REP event, its QP
 * taken to RTS the same way (the attributes ib_cm computed) and an RTU, the passive side's RTU
 * event and its QP to RTS; a SEND over the connection and its data; a DREQ, the DREP, both
 * sides' time-wait ends; everything destroyed. The lines must be the C stack's (scenario).
 *
 * With peer_lid= and peer_guid= (the other host's port) it is one end of a connection to the
 * ib_c_cm of another host, its role= "passive" (listen, answer the REQ, take the SEND, answer
 * the DREQ) or "active" (REQ to the peer, RTU, a SEND, DREQ), a line per step (scenario
 * c-abi-cm-2vm: a Rust-core host against a C host, both ways).
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>

#define SERVICE_ID 0x1234000000000001ULL
#define NOBODY_ID 0x1234000000000002ULL
#define MSG 64
#define WAIT (5 * HZ)

/* One end of a connection: its cm_id, QP and what its handler saw. */
struct end {
	const char *name;
	struct ib_cm_id *id;
	struct ib_qp *qp;
	u32 psn;
	/* Bits of the events seen (1 << event type). */
	unsigned long seen;
	int last_event;
	int rej_reason;
	/* The cm_id's state as the RTU's handler saw it (later reads may see a DREQ's effect). */
	int rtu_state;
	int err[3];
	/* The other end's QP number, as the REQ or the REP gave it. */
	u32 remote_qpn;
	/* What the handler saw and did, printed by init: per event (REQ or REP, RTU, DREQ) and
	 * per QP transition (INIT, RTR, RTS), each written once.
	 */
	char ev[3][320];
	char st[3][320];
};

static ushort peer_lid;
module_param(peer_lid, ushort, 0444);
MODULE_PARM_DESC(peer_lid, "the LID of another host's port to connect with (0: both ends here)");
static ullong peer_guid;
module_param(peer_guid, ullong, 0444);
MODULE_PARM_DESC(peer_guid, "that port's GUID (its GID is fe80::<guid>)");
static char *role = "active";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "with a peer: \"active\" (sends the REQ) or \"passive\" (listens)");

static struct end active = { .name = "active", .psn = 0x111 };
static struct end passive = { .name = "passive", .psn = 0x222 };
static DECLARE_WAIT_QUEUE_HEAD(wake);
static struct ib_device *dev;
static struct ib_pd *pd;
static struct ib_cq *cq;
static struct ib_client client;
static u16 lid, peer;
static u8 *buf;
static dma_addr_t dma;

static void saw(struct end *e, int event)
{
	e->last_event = event;
	set_bit(event, &e->seen);
	wake_up_all(&wake);
}

static bool has_seen(struct end *e, int event)
{
	return wait_event_timeout(wake, test_bit(event, &e->seen), WAIT) > 0;
}

/*
 * Whether a cm_id just given a DREQ is where ib_cm leaves it: DREQ_SENT, or already past it when
 * the DREP came back before the caller looked (TIMEWAIT, then IDLE once time-wait ends). Which of
 * the three it reads depends on the timing of the DREP, on either stack.
 */
static bool dreq_sent_or_past(struct ib_cm_id *id)
{
	return id->state == IB_CM_DREQ_SENT || id->state == IB_CM_TIMEWAIT || id->state == IB_CM_IDLE;
}

/* The QP number `e`'s QP must be connected to: the other end's here, the peer's given by ib_cm. */
static u32 other_qpn(struct end *e)
{
	struct end *o = e == &active ? &passive : &active;

	return peer_lid ? e->remote_qpn : o->qp->qp_num;
}

/* Takes `e`'s QP to `state` with what ib_cm computes; describes it in `out`. */
static int to_state(struct end *e, enum ib_qp_state state, char *out, size_t len)
{
	struct ib_qp_attr a = {};
	int mask = 0, err;

	a.qp_state = state;
	err = ib_cm_init_qp_attr(e->id, &a, &mask);
	if (!err)
		err = ib_modify_qp(e->qp, &a, mask);
	switch (state) {
	case IB_QPS_INIT:
		snprintf(out, len, "init: %d, mask 0x%x, access 0x%x, pkey index %u, port %u",
			 err, mask, a.qp_access_flags, a.pkey_index, a.port_num);
		break;
	case IB_QPS_RTR:
		snprintf(out, len,
			 "rtr: %d, mask 0x%x, mtu %d, dest qp the other end's %d, rq_psn 0x%x, rd_atomic %u, min_rnr %u, ah type %d dlid the peer's %d sl %u path_bits %u rate %u grh %d port %u",
			 err, mask, a.path_mtu, a.dest_qp_num == other_qpn(e),
			 a.rq_psn, a.max_dest_rd_atomic, a.min_rnr_timer, a.ah_attr.type,
			 rdma_ah_get_dlid(&a.ah_attr) == peer, rdma_ah_get_sl(&a.ah_attr),
			 rdma_ah_get_path_bits(&a.ah_attr), rdma_ah_get_static_rate(&a.ah_attr),
			 !!(rdma_ah_get_ah_flags(&a.ah_attr) & IB_AH_GRH), rdma_ah_get_port_num(&a.ah_attr));
		break;
	default:
		snprintf(out, len,
			 "rts: %d, mask 0x%x, sq_psn 0x%x, timeout %u, retry %u, rnr_retry %u, rd_atomic %u",
			 err, mask, a.sq_psn, a.timeout, a.retry_cnt, a.rnr_retry, a.max_rd_atomic);
	}
	return err;
}

static int post_recv(struct ib_qp *qp)
{
	struct ib_sge sge = { .addr = dma + MSG, .length = MSG, .lkey = pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

static int passive_handler(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	const struct ib_cm_req_event_param *r = &ev->param.req_rcvd;
	struct ib_cm_rep_param rep = {};
	struct sa_path_rec *p;
	int err;

	switch (ev->event) {
	case IB_CM_REQ_RECEIVED:
		passive.id = id;
		passive.remote_qpn = r->remote_qpn;
		p = r->primary_path;
		snprintf(passive.ev[0], sizeof(passive.ev[0]),
			 "req: listen id ours %d, port %u, remote qpn the active QP's %d, qp type %d, psn 0x%x, resp %u init %u, timeouts %u/%u, retry %u rnr %u, srq %u, private \"%s\"; path type %d dlid the peer's %d slid the port's %d, pkey 0x%x, mtu %u, sl %u, rate %u, life %u, hop %u, sgid index 0 %d, alternate %d",
			 r->listen_id == id->context, r->port,
			 peer_lid ? r->remote_qpn != 0 : r->remote_qpn == active.qp->qp_num,
			 r->qp_type, r->starting_psn,
			 r->responder_resources, r->initiator_depth, r->local_cm_response_timeout,
			 r->remote_cm_response_timeout, r->retry_count, r->rnr_retry_count, r->srq,
			 (char *)ev->private_data, p->rec_type,
			 be32_to_cpu(sa_path_get_dlid(p)) == peer, be32_to_cpu(sa_path_get_slid(p)) == lid,
			 be16_to_cpu(p->pkey), p->mtu, p->sl, p->rate, p->packet_life_time,
			 p->hop_limit, r->ppath_sgid_attr ? r->ppath_sgid_attr->index == 0 : -1,
			 r->alternate_path != NULL);
		err = to_state(&passive, IB_QPS_INIT, passive.st[0], sizeof(passive.st[0]));
		if (!err)
			err = to_state(&passive, IB_QPS_RTR, passive.st[1], sizeof(passive.st[1]));
		if (!err)
			err = post_recv(passive.qp);
		if (!err) {
			rep.qp_num = passive.qp->qp_num;
			rep.starting_psn = passive.psn;
			rep.private_data = "ib_c_cm rep";
			rep.private_data_len = 12;
			rep.responder_resources = 1;
			rep.initiator_depth = 1;
			rep.rnr_retry_count = 7;
			err = ib_send_cm_rep(id, &rep);
		}
		passive.err[0] = err;
		break;
	case IB_CM_RTU_RECEIVED:
		passive.err[1] = to_state(&passive, IB_QPS_RTS, passive.st[2], sizeof(passive.st[2]));
		snprintf(passive.ev[1], sizeof(passive.ev[1]), "rtu: private \"%s\"",
			 (char *)ev->private_data);
		passive.rtu_state = id->state;
		break;
	case IB_CM_DREQ_RECEIVED:
		snprintf(passive.ev[2], sizeof(passive.ev[2]), "dreq: private \"%s\"",
			 (char *)ev->private_data);
		passive.err[2] = ib_send_cm_drep(id, NULL, 0);
		break;
	default:
		break;
	}
	saw(&passive, ev->event);
	return 0;
}

static int active_handler(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	const struct ib_cm_rep_event_param *r = &ev->param.rep_rcvd;
	int err;

	switch (ev->event) {
	case IB_CM_REP_RECEIVED:
		active.remote_qpn = r->remote_qpn;
		snprintf(active.ev[0], sizeof(active.ev[0]),
			 "rep: remote qpn the passive QP's %d, psn 0x%x, resp %u init %u, failover %u, flow %u, rnr %u, srq %u, private \"%s\"",
			 peer_lid ? r->remote_qpn != 0 : r->remote_qpn == passive.qp->qp_num,
			 r->starting_psn,
			 r->responder_resources, r->initiator_depth, r->failover_accepted,
			 r->flow_control, r->rnr_retry_count, r->srq, (char *)ev->private_data);
		err = to_state(&active, IB_QPS_INIT, active.st[0], sizeof(active.st[0]));
		if (!err)
			err = to_state(&active, IB_QPS_RTR, active.st[1], sizeof(active.st[1]));
		if (!err)
			err = to_state(&active, IB_QPS_RTS, active.st[2], sizeof(active.st[2]));
		if (!err)
			err = ib_send_cm_rtu(id, "ib_c_cm rtu", 12);
		active.err[0] = err;
		break;
	case IB_CM_REJ_RECEIVED:
		active.rej_reason = ev->param.rej_rcvd.reason;
		break;
	default:
		break;
	}
	saw(&active, ev->event);
	return 0;
}

/* The path from the port to the peer (itself here), as an SA would give it (no SA here: made by
 * hand).
 */
static void own_path(struct sa_path_rec *p, union ib_gid *gid)
{
	memset(p, 0, sizeof(*p));
	p->rec_type = SA_PATH_REC_TYPE_IB;
	p->dgid = *gid;
	if (peer_lid)
		p->dgid.global.interface_id = cpu_to_be64(peer_guid);
	p->sgid = *gid;
	p->ib.dlid = cpu_to_be16(peer);
	p->ib.slid = cpu_to_be16(lid);
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = cpu_to_be16(0xffff);
	p->sl = 0;
	p->mtu_selector = IB_SA_EQ;
	p->mtu = IB_MTU_1024;
	p->rate_selector = IB_SA_EQ;
	p->rate = IB_RATE_PORT_CURRENT;
	p->packet_life_time_selector = IB_SA_EQ;
	p->packet_life_time = 14;
}

static int send_req(struct ib_cm_id *id, struct sa_path_rec *path, u64 sid)
{
	struct ib_cm_req_param req = {};

	req.primary_path = path;
	req.service_id = cpu_to_be64(sid);
	req.qp_num = active.qp->qp_num;
	req.qp_type = IB_QPT_RC;
	req.starting_psn = active.psn;
	req.private_data = "ib_c_cm req";
	req.private_data_len = 12;
	req.responder_resources = 1;
	req.initiator_depth = 1;
	req.remote_cm_response_timeout = 20;
	req.local_cm_response_timeout = 20;
	req.retry_count = 7;
	req.rnr_retry_count = 7;
	req.max_cm_retries = 3;
	return ib_send_cm_req(id, &req);
}

static struct ib_qp *rc_qp(void)
{
	struct ib_qp_init_attr init = { .qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_ALL_WR,
					.send_cq = cq, .recv_cq = cq,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1 } };

	return ib_create_qp(pd, &init);
}

/* Polls `n` completions (2 s at most). */
static int poll_n(struct ib_wc *wc, int n)
{
	int got = 0, tries;

	for (tries = 0; tries < 200 && got < n; tries++) {
		int r = ib_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			msleep(10);
	}
	return got;
}

static void traffic(void)
{
	struct ib_sge sge = { .addr = dma, .length = MSG, .lkey = pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct ib_wc wc[2] = {};
	int i, err, n, ok = 1;

	for (i = 0; i < MSG; i++) {
		buf[i] = (u8)(i * 7 + 3);
		buf[MSG + i] = 0;
	}
	err = ib_post_send(active.qp, &wr, NULL);
	n = err ? 0 : poll_n(wc, 2);
	for (i = 0; i < MSG; i++)
		if (buf[MSG + i] != (u8)(i * 7 + 3))
			ok = 0;
	if (n == 2 && wc[0].wr_id > wc[1].wr_id)
		swap(wc[0], wc[1]);
	pr_info("ib_c_cm: send over the connection: post %d; %d completion(s): %d/%d, recv on the passive QP %d, %u bytes; data %s\n",
		err, n, wc[0].status, wc[1].status, n == 2 && wc[1].qp == passive.qp,
		wc[1].byte_len, ok ? "intact" : "CORRUPT");
}

/* Both ends on this port: a listen, a rejected REQ, then the whole connection. */
static void run_loop(union ib_gid *gid)
{
	struct ib_cm_id *listen, *other, *nobody;
	struct sa_path_rec path;
	int err;

	listen = ib_create_cm_id(dev, passive_handler, NULL);
	other = ib_create_cm_id(dev, passive_handler, NULL);
	if (IS_ERR(listen) || IS_ERR(other)) {
		pr_info("ib_c_cm: cm ids failed\n");
		return;
	}
	listen->context = listen;
	err = ib_cm_listen(listen, cpu_to_be64(SERVICE_ID));
	pr_info("ib_c_cm: listen: %d, state %d; the same service again: %d\n", err, listen->state,
		ib_cm_listen(other, cpu_to_be64(SERVICE_ID)));
	ib_destroy_cm_id(other);

	own_path(&path, gid);
	nobody = ib_create_cm_id(dev, active_handler, NULL);
	if (IS_ERR(nobody))
		goto out_listen;
	err = send_req(nobody, &path, NOBODY_ID);
	pr_info("ib_c_cm: req to a service nobody listens on: %d, state %d; rejected %d, reason %d, state %d\n",
		err, err ? -1 : IB_CM_REQ_SENT, has_seen(&active, IB_CM_REJ_RECEIVED),
		active.rej_reason, nobody->state);
	ib_destroy_cm_id(nobody);
	active.seen = 0;

	active.id = ib_create_cm_id(dev, active_handler, NULL);
	if (IS_ERR(active.id)) {
		active.id = NULL;
		goto out_listen;
	}
	err = send_req(active.id, &path, SERVICE_ID);
	pr_info("ib_c_cm: req: %d, state %d\n", err, active.id->state);
	if (!has_seen(&passive, IB_CM_REQ_RECEIVED)) {
		pr_info("ib_c_cm: no req arrived\n");
		goto out_listen;
	}
	pr_info("ib_c_cm: passive %s\n", passive.ev[0]);
	pr_info("ib_c_cm: passive %s\n", passive.st[0]);
	pr_info("ib_c_cm: passive %s\n", passive.st[1]);
	pr_info("ib_c_cm: passive sent the rep: %d\n", passive.err[0]);
	if (!has_seen(&active, IB_CM_REP_RECEIVED)) {
		pr_info("ib_c_cm: no rep arrived\n");
		goto out_listen;
	}
	pr_info("ib_c_cm: active %s\n", active.ev[0]);
	pr_info("ib_c_cm: active %s\n", active.st[0]);
	pr_info("ib_c_cm: active %s\n", active.st[1]);
	pr_info("ib_c_cm: active %s\n", active.st[2]);
	pr_info("ib_c_cm: active sent the rtu: %d, state %d\n", active.err[0], active.id->state);
	if (!has_seen(&passive, IB_CM_RTU_RECEIVED)) {
		pr_info("ib_c_cm: no rtu arrived\n");
		goto out_listen;
	}
	pr_info("ib_c_cm: passive %s; %s; state %d\n", passive.ev[1], passive.st[2],
		passive.rtu_state);

	traffic();

	err = ib_send_cm_dreq(active.id, "ib_c_cm dreq", 13);
	pr_info("ib_c_cm: dreq: %d, state dreq sent or past it %d\n", err,
		dreq_sent_or_past(active.id));
	pr_info("ib_c_cm: passive got it %d: %s; drep sent %d\n",
		has_seen(&passive, IB_CM_DREQ_RECEIVED), passive.ev[2], passive.err[2]);
	pr_info("ib_c_cm: active got the drep %d; time-wait ended: active %d, passive %d; states %d/%d\n",
		has_seen(&active, IB_CM_DREP_RECEIVED), has_seen(&active, IB_CM_TIMEWAIT_EXIT),
		has_seen(&passive, IB_CM_TIMEWAIT_EXIT), active.id->state, passive.id->state);

out_listen:
	if (active.id)
		ib_destroy_cm_id(active.id);
	if (passive.id)
		ib_destroy_cm_id(passive.id);
	ib_destroy_cm_id(listen);
}

/* The passive end of a connection with another host: listen, answer, take its SEND. */
static void run_passive(void)
{
	struct ib_cm_id *listen = ib_create_cm_id(dev, passive_handler, NULL);
	struct ib_wc wc = {};
	int i, n, ok = 1;

	if (IS_ERR(listen)) {
		pr_info("ib_c_cm: cm id failed\n");
		return;
	}
	listen->context = listen;
	pr_info("ib_c_cm: passive: listening: %d\n", ib_cm_listen(listen, cpu_to_be64(SERVICE_ID)));
	if (!wait_event_timeout(wake, test_bit(IB_CM_REQ_RECEIVED, &passive.seen), 90 * HZ)) {
		pr_info("ib_c_cm: no req arrived\n");
		goto out;
	}
	pr_info("ib_c_cm: passive %s\n", passive.ev[0]);
	pr_info("ib_c_cm: passive %s\n", passive.st[0]);
	pr_info("ib_c_cm: passive %s\n", passive.st[1]);
	pr_info("ib_c_cm: passive sent the rep: %d\n", passive.err[0]);
	if (!has_seen(&passive, IB_CM_RTU_RECEIVED)) {
		pr_info("ib_c_cm: no rtu arrived\n");
		goto out;
	}
	pr_info("ib_c_cm: passive %s; %s; state %d\n", passive.ev[1], passive.st[2],
		passive.rtu_state);
	n = poll_n(&wc, 1);
	for (i = 0; i < MSG; i++)
		if (buf[MSG + i] != (u8)(i * 7 + 3))
			ok = 0;
	pr_info("ib_c_cm: the peer's send: %d completion(s): status %d, opcode %d, %u bytes, on the passive QP %d; data %s\n",
		n, wc.status, wc.opcode, wc.byte_len, n == 1 && wc.qp == passive.qp,
		ok ? "intact" : "CORRUPT");
	if (!wait_event_timeout(wake, test_bit(IB_CM_DREQ_RECEIVED, &passive.seen), 30 * HZ)) {
		pr_info("ib_c_cm: no dreq arrived\n");
		goto out;
	}
	pr_info("ib_c_cm: passive got the dreq: %s; drep sent %d\n", passive.ev[2], passive.err[2]);
	pr_info("ib_c_cm: passive time-wait ended %d; state %d\n",
		has_seen(&passive, IB_CM_TIMEWAIT_EXIT), passive.id->state);
out:
	if (passive.id)
		ib_destroy_cm_id(passive.id);
	ib_destroy_cm_id(listen);
}

/* The active end of a connection with another host: REQ, RTU, a SEND, DREQ. */
static void run_active(union ib_gid *gid)
{
	struct ib_sge sge = { .addr = dma, .length = MSG, .lkey = pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct sa_path_rec path;
	struct ib_wc wc = {};
	int i, err, n;

	active.id = ib_create_cm_id(dev, active_handler, NULL);
	if (IS_ERR(active.id)) {
		active.id = NULL;
		pr_info("ib_c_cm: cm id failed\n");
		return;
	}
	own_path(&path, gid);
	err = send_req(active.id, &path, SERVICE_ID);
	pr_info("ib_c_cm: req to the peer: %d, state %d\n", err, active.id->state);
	if (!has_seen(&active, IB_CM_REP_RECEIVED)) {
		pr_info("ib_c_cm: no rep arrived\n");
		goto out;
	}
	pr_info("ib_c_cm: active %s\n", active.ev[0]);
	pr_info("ib_c_cm: active %s\n", active.st[0]);
	pr_info("ib_c_cm: active %s\n", active.st[1]);
	pr_info("ib_c_cm: active %s\n", active.st[2]);
	pr_info("ib_c_cm: active sent the rtu: %d, state %d\n", active.err[0], active.id->state);
	for (i = 0; i < MSG; i++)
		buf[i] = (u8)(i * 7 + 3);
	err = ib_post_send(active.qp, &wr, NULL);
	n = err ? 0 : poll_n(&wc, 1);
	pr_info("ib_c_cm: send to the peer: post %d; %d completion(s): status %d, opcode %d\n",
		err, n, wc.status, wc.opcode);
	err = ib_send_cm_dreq(active.id, "ib_c_cm dreq", 13);
	pr_info("ib_c_cm: dreq: %d, state dreq sent or past it %d\n", err,
		dreq_sent_or_past(active.id));
	pr_info("ib_c_cm: active got the drep %d; time-wait ended %d; state %d\n",
		has_seen(&active, IB_CM_DREP_RECEIVED), has_seen(&active, IB_CM_TIMEWAIT_EXIT),
		active.id->state);
out:
	ib_destroy_cm_id(active.id);
	active.id = NULL;
}

static void run(void)
{
	struct ib_port_attr attr;
	union ib_gid gid;

	if (ib_query_port(dev, 1, &attr) || rdma_query_gid(dev, 1, 0, &gid)) {
		pr_info("ib_c_cm: %s: no port 1\n", dev_name(&dev->dev));
		return;
	}
	lid = attr.lid;
	peer = peer_lid ? peer_lid : lid;
	pr_info("ib_c_cm: %s: port 1: cm supported %d (ib_cm set it)\n", dev_name(&dev->dev),
		!!(attr.port_cap_flags & IB_PORT_CM_SUP));
	pd = ib_alloc_pd(dev, 0);
	cq = IS_ERR(pd) ? ERR_PTR(-ENODEV) : ib_create_cq(dev, NULL, NULL, NULL,
							   &(struct ib_cq_init_attr){ .cqe = 16 });
	active.qp = IS_ERR(cq) ? ERR_PTR(-ENODEV) : rc_qp();
	passive.qp = IS_ERR(active.qp) ? ERR_PTR(-ENODEV) : rc_qp();
	buf = dma_alloc_coherent(dev->dma_device, 2 * MSG, &dma, GFP_KERNEL);
	if (IS_ERR(passive.qp) || !buf) {
		pr_info("ib_c_cm: verbs objects failed\n");
		goto out;
	}

	if (!peer_lid)
		run_loop(&gid);
	else if (!strcmp(role, "passive"))
		run_passive();
	else
		run_active(&gid);
out:
	if (buf)
		dma_free_coherent(dev->dma_device, 2 * MSG, buf, dma);
	if (!IS_ERR_OR_NULL(passive.qp))
		ib_destroy_qp(passive.qp);
	if (!IS_ERR_OR_NULL(active.qp))
		ib_destroy_qp(active.qp);
	if (!IS_ERR_OR_NULL(cq))
		ib_destroy_cq(cq);
	if (!IS_ERR_OR_NULL(pd))
		ib_dealloc_pd(pd);
	pr_info("ib_c_cm: %s: done\n", dev_name(&dev->dev));
}

static int add(struct ib_device *device)
{
	if (!dev && !strcmp(dev_name(&device->dev), "mlx5_0"))
		dev = device;
	return 0;
}

static void remove(struct ib_device *device, void *data)
{
	if (device == dev)
		dev = NULL;
}

static struct ib_client client = {
	.name = "ib_c_cm",
	.add = add,
	.remove = remove,
};

static int __init ib_c_cm_init(void)
{
	int err = ib_register_client(&client);

	if (err)
		return err;
	/* Between the add and the remove the device is ours to use: the steps run here, outside
	 * the core's registration locks, as a user of ib_cm would.
	 */
	if (dev)
		run();
	else
		pr_info("ib_c_cm: no mlx5_0\n");
	return 0;
}

static void __exit ib_c_cm_exit(void)
{
	ib_unregister_client(&client);
}

module_init(ib_c_cm_init);
module_exit(ib_c_cm_exit);
MODULE_DESCRIPTION("A C user of ib_cm, loaded unchanged on either stack (test tool)");
MODULE_LICENSE("GPL");
