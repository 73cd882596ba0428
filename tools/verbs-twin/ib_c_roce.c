// SPDX-License-Identifier: GPL-2.0
/*
 * ib_c_roce: a C kernel verbs consumer of a RoCE port, built once against include/rdma/ and
 * loaded unchanged on either stack (scenario c-abi-sw-drivers-2vm): on C's ib_core it is the
 * oracle; on the Rust core it drives a C driver (rxe) through the core's kernel verbs (docs/
 * c-abi.md, step 4). Test tool.
 *
 * On the device named by `dev` (client add), port 1 must be RoCE. It makes a PD, a CQ and two
 * RC QPs, connects them to each other with RoCE addresses (type RDMA_AH_ATTR_TYPE_ROCE, GRH from
 * GID `sgid` to the same GID, the next hop's MAC the GID entry's net device's own: a loopback,
 * resolved by the caller as C's kernel callers resolve it), and prints one line per step: the
 * GID entry used, the QPs' states, a SEND with immediate data (both completions and the bytes),
 * an RDMA WRITE and an RDMA READ through the PD's unsafe global rkey, the QPs' attributes as ib_query_qp
 * returns them, a UD datagram to a UD QP of the same port through a RoCE AH (with its GRH).
 * remove destroys everything and prints what each destroy returned.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

#define MSG 512
#define IMM 0x4321
#define QKEY 0x22222222
#define GRH 40

static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the device to use");
static int sgid = 1;
module_param(sgid, int, 0444);
MODULE_PARM_DESC(sgid, "the source GID index");

struct kept {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *a, *b, *ud;
	struct ib_ah *ah;
	u8 *buf;
};

static struct ib_client client;

static int poll_n(struct ib_cq *cq, struct ib_wc *wc, int n)
{
	int got = 0, i;

	for (i = 0; i < 10000 && got < n; i++) {
		int r = ib_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep_range(1000, 2000);
	}
	return got;
}

/* The RoCE address of GID `sgid` of port 1, to itself, with the entry's own MAC. */
static int roce_av(struct ib_device *d, struct rdma_ah_attr *aa, const struct ib_gid_attr *g)
{
	struct net_device *ndev;
	union ib_gid dgid = g->gid;

	memset(aa, 0, sizeof(*aa));
	aa->type = rdma_ah_find_type(d, 1);
	rdma_ah_set_port_num(aa, 1);
	rdma_ah_set_grh(aa, &dgid, 0, g->index, 64, 0);
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(g);
	if (IS_ERR(ndev)) {
		rcu_read_unlock();
		return PTR_ERR(ndev);
	}
	memcpy(aa->roce.dmac, ndev->dev_addr, ETH_ALEN);
	rcu_read_unlock();
	return 0;
}

static int to_rts(struct ib_qp *qp, u32 dest, const struct rdma_ah_attr *av)
{
	struct ib_qp_attr a = {};
	int r;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	r = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr = *av;
	r = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
				 IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
				 IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

static struct ib_qp *new_qp(struct kept *k, enum ib_qp_type t)
{
	struct ib_qp_init_attr ia = {};

	ia.send_cq = k->cq;
	ia.recv_cq = k->cq;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_type = IB_SIGNAL_ALL_WR;
	ia.qp_type = t;
	return ib_create_qp(k->pd, &ia);
}

static void run(struct ib_device *d, struct kept *k)
{
	const struct ib_gid_attr *g;
	struct rdma_ah_attr av;
	struct ib_sge sge;
	struct ib_wc wc[4];
	struct ib_recv_wr rwr = {}, *bad_r;
	struct ib_send_wr swr = {}, *bad_s;
	struct ib_rdma_wr rdma = {};
	struct ib_ud_wr ud = {};
	struct ib_qp_attr qa;
	struct ib_qp_init_attr qia;
	u64 base;
	int r, n, i;

	g = rdma_get_gid_attr(d, 1, sgid);
	if (IS_ERR(g)) {
		pr_info("ib_c_roce: gid %d: %ld\n", sgid, PTR_ERR(g));
		return;
	}
	pr_info("ib_c_roce: gid %d: %pI6 type %d, on the port's net device %d\n", sgid, g->gid.raw,
		g->gid_type, roce_av(d, &av, g) == 0);
	k->pd = ib_alloc_pd(d, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(k->pd)) {
		pr_info("ib_c_roce: pd: %ld\n", PTR_ERR(k->pd));
		k->pd = NULL;
		goto out;
	}
	k->cq = ib_create_cq(d, NULL, NULL, NULL, &(struct ib_cq_init_attr){ .cqe = 16 });
	if (IS_ERR(k->cq)) {
		pr_info("ib_c_roce: cq: %ld\n", PTR_ERR(k->cq));
		k->cq = NULL;
		goto out;
	}
	k->a = new_qp(k, IB_QPT_RC);
	k->b = IS_ERR(k->a) ? ERR_PTR(-EINVAL) : new_qp(k, IB_QPT_RC);
	if (IS_ERR(k->a) || IS_ERR(k->b)) {
		pr_info("ib_c_roce: rc qps: %d %d\n", PTR_ERR_OR_ZERO(k->a), PTR_ERR_OR_ZERO(k->b));
		if (IS_ERR(k->a))
			k->a = NULL;
		if (IS_ERR(k->b))
			k->b = NULL;
		goto out;
	}
	r = to_rts(k->a, k->b->qp_num, &av);
	n = to_rts(k->b, k->a->qp_num, &av);
	pr_info("ib_c_roce: rc qps to RTS: %d %d\n", r, n);
	if (r || n)
		goto out;
	k->buf = kzalloc(4 * MSG, GFP_KERNEL);
	if (!k->buf)
		goto out;
	base = ib_dma_map_single(d, k->buf, 4 * MSG, DMA_BIDIRECTIONAL);
	for (i = 0; i < MSG; i++)
		k->buf[i] = (u8)(i * 7 + 3);

	/* SEND with immediate data from a (bytes 0..MSG) into b (MSG..2*MSG). */
	sge = (struct ib_sge){ .addr = base + MSG, .length = MSG, .lkey = k->pd->local_dma_lkey };
	rwr.wr_id = 2;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	r = ib_post_recv(k->b, &rwr, (const struct ib_recv_wr **)&bad_r);
	sge = (struct ib_sge){ .addr = base, .length = MSG, .lkey = k->pd->local_dma_lkey };
	swr.wr_id = 1;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IB_WR_SEND_WITH_IMM;
	swr.ex.imm_data = cpu_to_be32(IMM);
	n = ib_post_send(k->a, &swr, (const struct ib_send_wr **)&bad_s);
	pr_info("ib_c_roce: send: posted %d %d, completions %d\n", r, n, poll_n(k->cq, wc, 2));
	for (i = 0; i < 2; i++)
		pr_info("ib_c_roce:   wr %llu status %d opcode %d len %u imm %d\n", wc[i].wr_id,
			wc[i].status, wc[i].opcode, wc[i].opcode == IB_WC_RECV ? wc[i].byte_len : 0,
			wc[i].wc_flags & IB_WC_WITH_IMM ? be32_to_cpu(wc[i].ex.imm_data) : -1);
	pr_info("ib_c_roce: send: bytes arrived %d\n", !memcmp(k->buf, k->buf + MSG, MSG));

	/* RDMA WRITE from a's buffer into 2*MSG, then READ it back into 3*MSG. */
	sge = (struct ib_sge){ .addr = base, .length = MSG, .lkey = k->pd->local_dma_lkey };
	rdma.wr.wr_id = 3;
	rdma.wr.sg_list = &sge;
	rdma.wr.num_sge = 1;
	rdma.wr.opcode = IB_WR_RDMA_WRITE;
	rdma.remote_addr = base + 2 * MSG;
	rdma.rkey = k->pd->unsafe_global_rkey;
	r = ib_post_send(k->a, &rdma.wr, (const struct ib_send_wr **)&bad_s);
	n = poll_n(k->cq, wc, 1);
	pr_info("ib_c_roce: write: posted %d, completion %d status %d opcode %d, bytes %d\n", r, n,
		wc[0].status, wc[0].opcode, !memcmp(k->buf, k->buf + 2 * MSG, MSG));
	sge = (struct ib_sge){ .addr = base + 3 * MSG, .length = MSG, .lkey = k->pd->local_dma_lkey };
	rdma.wr.wr_id = 4;
	rdma.wr.opcode = IB_WR_RDMA_READ;
	r = ib_post_send(k->b, &rdma.wr, (const struct ib_send_wr **)&bad_s);
	n = poll_n(k->cq, wc, 1);
	pr_info("ib_c_roce: read: posted %d, completion %d status %d opcode %d len %u, bytes %d\n",
		r, n, wc[0].status, wc[0].opcode, wc[0].byte_len,
		!memcmp(k->buf, k->buf + 3 * MSG, MSG));

	r = ib_query_qp(k->a, &qa, IB_QP_STATE | IB_QP_AV | IB_QP_DEST_QPN, &qia);
	pr_info("ib_c_roce: query: %d, state %d, dest is b %d, path type %d grh %d sgid %u hop %u, dmac the port's %d\n",
		r, qa.qp_state, qa.dest_qp_num == k->b->qp_num, qa.ah_attr.type,
		!!(rdma_ah_get_ah_flags(&qa.ah_attr) & IB_AH_GRH), qa.ah_attr.grh.sgid_index,
		qa.ah_attr.grh.hop_limit, !memcmp(qa.ah_attr.roce.dmac, av.roce.dmac, ETH_ALEN));

	/* UD: a datagram to a UD QP of the port through a RoCE AH. */
	k->ud = new_qp(k, IB_QPT_UD);
	if (IS_ERR(k->ud)) {
		pr_info("ib_c_roce: ud qp: %ld\n", PTR_ERR(k->ud));
		k->ud = NULL;
		goto out;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IB_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = QKEY;
	r = ib_modify_qp(k->ud, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);
	qa.qp_state = IB_QPS_RTR;
	r = r ?: ib_modify_qp(k->ud, &qa, IB_QP_STATE);
	qa.qp_state = IB_QPS_RTS;
	qa.sq_psn = 0;
	r = r ?: ib_modify_qp(k->ud, &qa, IB_QP_STATE | IB_QP_SQ_PSN);
	k->ah = rdma_create_ah(k->pd, &av, RDMA_CREATE_AH_SLEEPABLE);
	pr_info("ib_c_roce: ud qp to RTS %d, ah %d\n", r, IS_ERR(k->ah) ? (int)PTR_ERR(k->ah) : 0);
	if (IS_ERR(k->ah)) {
		k->ah = NULL;
		goto out;
	}
	memset(k->buf + MSG, 0, 2 * MSG);
	sge = (struct ib_sge){ .addr = base + MSG, .length = GRH + 256, .lkey = k->pd->local_dma_lkey };
	rwr.wr_id = 5;
	rwr.sg_list = &sge;
	r = ib_post_recv(k->ud, &rwr, (const struct ib_recv_wr **)&bad_r);
	sge = (struct ib_sge){ .addr = base, .length = 256, .lkey = k->pd->local_dma_lkey };
	ud.wr.wr_id = 6;
	ud.wr.sg_list = &sge;
	ud.wr.num_sge = 1;
	ud.wr.opcode = IB_WR_SEND;
	ud.ah = k->ah;
	ud.remote_qpn = k->ud->qp_num;
	ud.remote_qkey = QKEY;
	n = ib_post_send(k->ud, &ud.wr, (const struct ib_send_wr **)&bad_s);
	i = poll_n(k->cq, wc, 2);
	pr_info("ib_c_roce: ud: posted %d %d, completions %d\n", r, n, i);
	for (i = 0; i < 2; i++)
		pr_info("ib_c_roce:   wr %llu status %d opcode %d len %u grh %d\n", wc[i].wr_id,
			wc[i].status, wc[i].opcode, wc[i].opcode == IB_WC_RECV ? wc[i].byte_len : 0,
			!!(wc[i].wc_flags & IB_WC_GRH));
	pr_info("ib_c_roce: ud: bytes arrived %d\n", !memcmp(k->buf, k->buf + MSG + GRH, 256));
	ib_dma_unmap_single(d, base, 4 * MSG, DMA_BIDIRECTIONAL);
out:
	rdma_put_gid_attr(g);
}


/*
 * The peer exchange of a two-VM run: a UD QP and an RC QP whose numbers this module prints
 * ("peer: ud N rc M"); the scenario hands them to the module on the other VM through the
 * `peer` parameter ("<ud qpn> <rc qpn> <IPv4 address> <MAC>"), which then sends a datagram to
 * the peer's UD QP through a RoCE AH and connects its RC QP to the peer's and sends on it, and
 * waits for the peer's datagram and message: RoCE v2 traffic between the two VMs' rxe0.
 */
/* The peer buffer: the UD receive (GRH and message) at 0, the sends' bytes at 2 * MSG, the RC
 * receive at 4 * MSG. */
struct peer {
	struct ib_device *d;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *ud, *rc;
	struct ib_ah *ah;
	u8 *buf;
	u64 base;
	u8 seed;
};

static struct peer peer;
static DEFINE_MUTEX(peer_lock);

static void fill(u8 *p, u8 seed)
{
	int i;

	for (i = 0; i < MSG; i++)
		p[i] = (u8)(i * 13 + seed);
}

static int check(const u8 *p, u8 seed)
{
	int i;

	for (i = 0; i < MSG; i++)
		if (p[i] != (u8)(i * 13 + seed))
			return 0;
	return 1;
}

/* Makes the peer objects on `d` with the PD `pd`: receives posted on both QPs. */
static void peer_setup(struct ib_device *d, struct ib_pd *pd, u8 seed)
{
	struct ib_qp_init_attr ia = {};
	struct ib_qp_attr qa = {};
	struct ib_recv_wr rwr = {};
	const struct ib_recv_wr *bad;
	struct ib_sge sge;
	int r;

	peer.d = d;
	peer.pd = pd;
	peer.seed = seed;
	peer.cq = ib_create_cq(d, NULL, NULL, NULL, &(struct ib_cq_init_attr){ .cqe = 16 });
	if (IS_ERR(peer.cq)) {
		pr_info("ib_c_roce: peer: cq %ld\n", PTR_ERR(peer.cq));
		peer.cq = NULL;
		return;
	}
	ia.send_cq = peer.cq;
	ia.recv_cq = peer.cq;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_type = IB_SIGNAL_ALL_WR;
	ia.qp_type = IB_QPT_UD;
	peer.ud = ib_create_qp(pd, &ia);
	ia.qp_type = IB_QPT_RC;
	peer.rc = IS_ERR(peer.ud) ? ERR_PTR(-EINVAL) : ib_create_qp(pd, &ia);
	if (IS_ERR(peer.ud) || IS_ERR(peer.rc)) {
		pr_info("ib_c_roce: peer: qps %d %d\n", PTR_ERR_OR_ZERO(peer.ud), PTR_ERR_OR_ZERO(peer.rc));
		if (IS_ERR(peer.ud))
			peer.ud = NULL;
		if (IS_ERR(peer.rc))
			peer.rc = NULL;
		return;
	}
	qa.qp_state = IB_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = QKEY;
	r = ib_modify_qp(peer.ud, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);
	qa.qp_state = IB_QPS_RTR;
	r = r ?: ib_modify_qp(peer.ud, &qa, IB_QP_STATE);
	qa.qp_state = IB_QPS_RTS;
	r = r ?: ib_modify_qp(peer.ud, &qa, IB_QP_STATE | IB_QP_SQ_PSN);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IB_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
	r = r ?: ib_modify_qp(peer.rc, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
						IB_QP_ACCESS_FLAGS);
	peer.buf = kzalloc(6 * MSG, GFP_KERNEL);
	if (r || !peer.buf) {
		pr_info("ib_c_roce: peer: setup %d\n", r ?: -ENOMEM);
		return;
	}
	peer.base = ib_dma_map_single(d, peer.buf, 6 * MSG, DMA_BIDIRECTIONAL);
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	sge = (struct ib_sge){ .addr = peer.base, .length = GRH + MSG, .lkey = pd->local_dma_lkey };
	rwr.wr_id = 11;
	r = ib_post_recv(peer.ud, &rwr, &bad);
	sge = (struct ib_sge){ .addr = peer.base + 4 * MSG, .length = MSG, .lkey = pd->local_dma_lkey };
	rwr.wr_id = 12;
	r = r ?: ib_post_recv(peer.rc, &rwr, &bad);
	pr_info("ib_c_roce: peer: ud %u rc %u, receives posted %d\n", peer.ud->qp_num,
		peer.rc->qp_num, r);
}

static void peer_free(void)
{
	if (peer.ah)
		rdma_destroy_ah_user(peer.ah, RDMA_DESTROY_AH_SLEEPABLE, NULL);
	if (peer.ud)
		ib_destroy_qp(peer.ud);
	if (peer.rc)
		ib_destroy_qp(peer.rc);
	if (peer.cq)
		ib_destroy_cq_user(peer.cq, NULL);
	if (peer.buf) {
		if (peer.base)
			ib_dma_unmap_single(peer.d, peer.base, 6 * MSG, DMA_BIDIRECTIONAL);
		kfree(peer.buf);
	}
	memset(&peer, 0, sizeof(peer));
}

static int peer_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ud_qpn, rc_qpn;
	u8 ip[4], mac[ETH_ALEN];
	struct rdma_ah_attr av = {};
	union ib_gid dgid = {};
	struct ib_sge sge;
	struct ib_ud_wr ud = {};
	struct ib_send_wr swr = {};
	const struct ib_send_wr *bad;
	struct ib_wc wc[4];
	int r, n, i, got[4] = {}, len[4] = {}, status[4] = { -1, -1, -1, -1 };

	if (sscanf(val, "%u %u %hhu.%hhu.%hhu.%hhu %hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &ud_qpn,
		   &rc_qpn, &ip[0], &ip[1], &ip[2], &ip[3], &mac[0], &mac[1], &mac[2], &mac[3],
		   &mac[4], &mac[5]) != 12)
		return -EINVAL;
	mutex_lock(&peer_lock);
	if (!peer.buf || peer.ah) {
		mutex_unlock(&peer_lock);
		return -EBUSY;
	}
	dgid.raw[10] = 0xff;
	dgid.raw[11] = 0xff;
	memcpy(&dgid.raw[12], ip, 4);
	av.type = rdma_ah_find_type(peer.d, 1);
	rdma_ah_set_port_num(&av, 1);
	rdma_ah_set_grh(&av, &dgid, 0, sgid, 64, 0);
	memcpy(av.roce.dmac, mac, ETH_ALEN);
	peer.ah = rdma_create_ah(peer.pd, &av, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(peer.ah)) {
		r = PTR_ERR(peer.ah);
		peer.ah = NULL;
		mutex_unlock(&peer_lock);
		pr_info("ib_c_roce: peer: ah %d\n", r);
		return 0;
	}
	fill(peer.buf + 2 * MSG, peer.seed);
	sge = (struct ib_sge){ .addr = peer.base + 2 * MSG, .length = MSG, .lkey = peer.pd->local_dma_lkey };
	ud.wr.wr_id = 13;
	ud.wr.sg_list = &sge;
	ud.wr.num_sge = 1;
	ud.wr.opcode = IB_WR_SEND;
	ud.ah = peer.ah;
	ud.remote_qpn = ud_qpn;
	ud.remote_qkey = QKEY;
	r = ib_post_send(peer.ud, &ud.wr, &bad);
	n = to_rts(peer.rc, rc_qpn, &av);
	swr.wr_id = 14;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IB_WR_SEND;
	n = n ?: ib_post_send(peer.rc, &swr, &bad);
	pr_info("ib_c_roce: peer: ud send posted %d, rc connected and send posted %d\n", r, n);
	/* Both sends and both receives (the peer's datagram and message). */
	n = poll_n(peer.cq, wc, 4);
	for (i = 0; i < n; i++) {
		unsigned int k = wc[i].wr_id - 11;

		if (k < 4) {
			got[k] = 1;
			status[k] = wc[i].status;
			len[k] = wc[i].byte_len;
		}
	}
	pr_info("ib_c_roce: peer: ud send %d status %d, rc send %d status %d\n", got[2],
		status[2], got[3], status[3]);
	pr_info("ib_c_roce: peer: ud receive %d status %d len %d, the peer's bytes %d\n", got[0],
		status[0], got[0] ? len[0] : 0, got[0] && check(peer.buf + GRH, mac[5]));
	pr_info("ib_c_roce: peer: rc receive %d status %d len %d, the peer's bytes %d\n", got[1],
		status[1], got[1] ? len[1] : 0, got[1] && check(peer.buf + 4 * MSG, mac[5]));
	mutex_unlock(&peer_lock);
	return 0;
}

static const struct kernel_param_ops peer_ops = {
	.set = peer_set,
};
module_param_cb(peer, &peer_ops, NULL, 0200);
MODULE_PARM_DESC(peer, "the other VM's UD and RC QP numbers, IPv4 address and MAC: starts the exchange");

/* This side's pattern seed: the last byte of the port's MAC (the peer checks with it). */
static u8 own_seed(struct ib_device *d)
{
	const struct ib_gid_attr *g = rdma_get_gid_attr(d, 1, sgid);
	struct net_device *ndev;
	u8 seed = 0;

	if (IS_ERR(g))
		return 0;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(g);
	if (!IS_ERR(ndev))
		seed = ndev->dev_addr[ETH_ALEN - 1];
	rcu_read_unlock();
	rdma_put_gid_attr(g);
	return seed;
}

static int roce_add(struct ib_device *d)
{
	struct kept *k;

	if (strcmp(dev_name(&d->dev), dev))
		return -EOPNOTSUPP;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	pr_info("ib_c_roce: add %s, port 1 RoCE %d\n", dev_name(&d->dev), rdma_protocol_roce(d, 1));
	ib_set_client_data(d, &client, k);
	if (rdma_protocol_roce(d, 1)) {
		run(d, k);
		if (k->pd && !peer.d)
			peer_setup(d, k->pd, own_seed(d));
	}
	return 0;
}

static void roce_remove(struct ib_device *d, void *data)
{
	struct kept *k = data;
	int ah = 0, ud = 0, a = 0, b = 0, cq = 0;

	mutex_lock(&peer_lock);
	if (peer.d == d)
		peer_free();
	mutex_unlock(&peer_lock);
	if (k->ah)
		ah = rdma_destroy_ah_user(k->ah, RDMA_DESTROY_AH_SLEEPABLE, NULL);
	if (k->ud)
		ud = ib_destroy_qp(k->ud);
	if (k->a)
		a = ib_destroy_qp(k->a);
	if (k->b)
		b = ib_destroy_qp(k->b);
	if (k->cq)
		cq = ib_destroy_cq_user(k->cq, NULL);
	if (k->pd)
		ib_dealloc_pd(k->pd);
	pr_info("ib_c_roce: remove %s: destroys %d %d %d %d %d\n", dev_name(&d->dev), ah, ud, a, b,
		cq);
	kfree(k->buf);
	kfree(k);
}

static struct ib_client client = {
	.name = "ib_c_roce",
	.add = roce_add,
	.remove = roce_remove,
};

static int __init ib_c_roce_init(void)
{
	return ib_register_client(&client);
}

static void __exit ib_c_roce_exit(void)
{
	ib_unregister_client(&client);
}

module_init(ib_c_roce_init);
module_exit(ib_c_roce_exit);
MODULE_DESCRIPTION("A C kernel verbs consumer of a RoCE port, for both RDMA stacks (test tool)");
MODULE_LICENSE("GPL");
