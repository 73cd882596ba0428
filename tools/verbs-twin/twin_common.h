/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the C twins share (test tools, see README.md): the Rust names of completion statuses and
 * opcodes, the test message pattern, a DMA MR tracked as the module's own, and the walk of an RC
 * QP to RTS. Included by one .c file per module: every function is static.
 */
#ifndef VERBS_TWIN_COMMON_H
#define VERBS_TWIN_COMMON_H

#include <rdma/ib_verbs.h>
#include <rdma/restrack.h>
/* Core-private: the exported rdma_restrack_new/_add helpers. */
#include "restrack.h"

static const char *const status_names[] = {
	"Success", "LocLenErr", "LocQpOpErr", "LocEecOpErr", "LocProtErr", "WrFlushErr",
	"MwBindErr", "BadRespErr", "LocAccessErr", "RemInvReqErr", "RemAccessErr", "RemOpErr",
	"RetryExcErr", "RnrRetryExcErr", "LocRddViolErr", "RemInvRdReqErr", "RemAbortErr",
	"InvEecnErr", "InvEecStateErr", "FatalErr", "RespTimeoutErr", "GeneralErr",
};

/* The Rust names (Debug) of completion statuses and completion opcodes. */
static inline const char *status_name(unsigned int s)
{
	return s < ARRAY_SIZE(status_names) ? status_names[s] : "Unknown";
}

static inline const char *opcode_name(enum ib_wc_opcode op)
{
	switch (op) {
	case IB_WC_SEND: return "Send";
	case IB_WC_RDMA_WRITE: return "RdmaWrite";
	case IB_WC_RDMA_READ: return "RdmaRead";
	case IB_WC_COMP_SWAP: return "CompSwap";
	case IB_WC_FETCH_ADD: return "FetchAdd";
	case IB_WC_RECV: return "Recv";
	case IB_WC_RECV_RDMA_WITH_IMM: return "RecvRdmaWithImm";
	default: return "Other";
	}
}

/* Byte `i` of the test message made with `seed` (the Rust samples' env::pattern). */
static inline u8 pattern(size_t i, u8 seed)
{
	return (u8)(i * 7) + seed;
}

static inline void fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(i, seed);
}

static inline bool holds(const u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(i, seed))
			return false;
	return true;
}

static inline const char *intact(bool ok)
{
	return ok ? "intact" : "CORRUPT";
}

/*
 * A DMA MR with `access`, tracked like any kernel MR. The kernel API has no ib_get_dma_mr any
 * more (only the PD's untracked internal MR); this is what ib_alloc_mr does around the driver's
 * get_dma_mr, so that the MR counts and shows as this module's, as the Rust Mr::get_dma_mr.
 */
static inline struct ib_mr *get_dma_mr(struct ib_pd *pd, int access)
{
	struct ib_mr *mr;

	if (!pd->device->ops.get_dma_mr)
		return ERR_PTR(-EOPNOTSUPP);
	mr = pd->device->ops.get_dma_mr(pd, access);
	if (IS_ERR(mr))
		return mr;
	mr->device = pd->device;
	mr->pd = pd;
	mr->dm = NULL;
	mr->uobject = NULL;
	mr->need_inval = false;
	mr->type = IB_MR_TYPE_DMA;
	mr->sig_attrs = NULL;
	atomic_inc(&pd->usecnt);
	rdma_restrack_new(&mr->res, RDMA_RESTRACK_MR);
	rdma_restrack_parent_name(&mr->res, &pd->res);
	rdma_restrack_add(&mr->res);
	return mr;
}

/*
 * Moves an RC QP from RESET to RTS, connected to QP `dqpn` behind LID `dlid` on port 1, with
 * `access` for the peer and `rnr_retry`, as the Rust samples' env::connect_rc. `state`, when
 * not NULL, follows the QP's state through the modifies that succeed.
 */
static inline int twin_connect_rc(struct ib_qp *qp, u16 dlid, u32 dqpn, int access, u8 rnr_retry,
				  enum ib_qp_state *state)
{
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = access;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PORT | IB_QP_PKEY_INDEX |
			   IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	if (state)
		*state = IB_QPS_INIT;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.ah_attr.type = rdma_ah_find_type(qp->device, 1);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_dlid(&a.ah_attr, dlid);
	a.path_mtu = IB_MTU_4096;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x1234;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	if (state)
		*state = IB_QPS_RTR;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 0x1234;
	a.max_rd_atomic = 1;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			   IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
	if (!err && state)
		*state = IB_QPS_RTS;
	return err;
}

#endif
