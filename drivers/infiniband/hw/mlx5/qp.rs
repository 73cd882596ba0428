// SPDX-License-Identifier: GPL-2.0

//! RC and UD queue pairs of kernel consumers (C's `create_kernel_qp`, `__mlx5_ib_modify_qp`,
//! `mlx5_ib_query_qp`, `destroy_qp_common`): the firmware object and its state; the rings that
//! posting fills and the CQs complete are `qp_rings`.

pub(crate) mod rings;
pub(crate) mod wq_size;
pub(crate) mod wqe;

use crate::ah::Mlx5Ah;
use crate::cq::{CqShared, QueueRole};
use crate::qp::rings::QpShared;
use crate::qp::wq_size::{Limits, RqSize, SendKind, SqSize};
use crate::srq::Mlx5Srq;
use crate::user::umem::{coherent_page_list, UserMemory};
use ib_core::{
    attrs::Gid,
    device::events::{EventNotifier, EventType},
    user::udata::Udata,
    verbs::ops::{DeviceOps, SendWrs},
    verbs::prepared::{PreparedImage, PreparedSend},
    verbs::types::{
        Access, AccessFlags, GlobalRoute, NewQp, QpAttr, QpAttrField as F, QpAttrMask, QpCap,
        QpInitDriver, QpState, QpType,
    },
    verbs::wr::{PostError, RecvWr, SendWr},
};
use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};
use mlx5_core::{
    auxdev::{Mlx5Device, Resource, ResourceHandler, ResourceRegistration},
    cmd::commands::Commands,
    ifc::verbs::{
        optpar, qp_state, AttachToMcg, CreateQp, DestroyQp, DetachFromMcg, Init2InitQp, Init2RtrQp,
        McgIn, QpCtxIn, QpNumIn, QpToErr, QpToRst, QueryQp, Rst2InitQp, Rtr2RtsQp, Rts2RtsQp,
        QP_PM_MIGRATED, QP_ST_QP0, QP_ST_QP1, QP_ST_RC, QP_ST_UC, QP_ST_UD, RQ_TYPE_SRQ,
    },
};

/// `MLX5_IB_ACK_REQ_FREQ`.
const ACK_REQ_FREQ: u64 = 8;
/// `qpc.rq_type`: a regular receive queue (`MLX5_NON_ZERO_RQ`) or none (`MLX5_ZERO_LEN_RQ`).
const NON_ZERO_RQ: u64 = 0;
const ZERO_LEN_RQ: u64 = 3;
/// `IB_MTU_256` and `IB_MTU_4096`.
const MTU_256: u8 = 1;
const MTU_4096: u8 = 5;
/// The message size limit C gives UD QPs (`log_msg_max` 12: one 4 KiB MTU).
const UD_LOG_MSG_MAX: u64 = 12;
/// The message size limit of the special QPs (`log_msg_max` 8: one 256-byte MAD).
const SPECIAL_LOG_MSG_MAX: u64 = 8;

/// A QP's async events (path migration, communication established, SQ drained, last WQE,
/// catastrophic, request and access errors) from `mlx5_core`'s resource table, raised to the
/// consumer's handler as C's `mlx5_ib_handle_qp_event` does.
pub(crate) struct QpEvents {
    pub(crate) qpn: u32,
    pub(crate) notifier: EventNotifier,
}

impl ResourceHandler for QpEvents {
    fn event(&self, event_type: u8) {
        let e = match event_type {
            0x01 => EventType::PathMig,
            0x02 => EventType::CommEst,
            0x03 => EventType::SqDrained,
            0x13 => EventType::QpLastWqeReached,
            0x05 => EventType::QpFatal,
            0x07 => EventType::PathMigErr,
            0x10 => EventType::QpReqErr,
            0x11 => EventType::QpAccessErr,
            _ => {
                pr_warn!(
                    "mlx5_ib: Unexpected event type {} on QP {:06x}\n",
                    event_type,
                    self.qpn
                );
                return;
            }
        };
        self.notifier.raise(e);
    }
}

/// A QP's driver state (C's `mlx5_ib_qp`): one type for kernel consumers' QPs and user
/// contexts'.
pub(crate) enum Mlx5Qp<'bound> {
    /// A kernel consumer's: the driver's rings, which the driver posts to.
    Kernel(KernelQp),
    /// A user context's: user space's rings, which user space posts to (`user::qp` makes it).
    User(UserQp<'bound>),
}

/// A kernel consumer's QP.
pub(crate) struct KernelQp {
    /// The resource-table registration of its events (dropped before DESTROY_QP).
    events: Option<ResourceRegistration>,
    shared: Arc<QpShared>,
    send_cq: Arc<CqShared>,
    recv_cq: Arc<CqShared>,
    fw: QpFw,
}

/// A user context's QP: its rings and doorbell record are user memory, pinned.
pub(crate) struct UserQp<'bound> {
    pub(crate) fw: QpFw,
    /// Its receive queue as the request shaped it (what a query reports).
    pub(crate) rq: RqSize,
    /// Dropped before DESTROY_QP: no event reaches the QP's owner after that.
    pub(crate) events: Option<ResourceRegistration>,
    pub(crate) buf: Option<UserMemory<'bound>>,
    pub(crate) db: Option<UserMemory<'bound>>,
}

impl Mlx5Qp<'_> {
    /// A kernel consumer's QP (`EINVAL` for a user QP, which the kernel does not post to).
    pub(crate) fn kernel(&self) -> Result<&KernelQp> {
        match self {
            Self::Kernel(k) => Ok(k),
            Self::User(_) => Err(EINVAL),
        }
    }

    /// The queue sizes a query reports (C's `mlx5_ib_query_qp`): a kernel QP's as made; a
    /// user QP's receive queue (the send queue is user space's own: 0).
    pub(crate) fn cap(&self) -> QpCap {
        match self {
            Self::Kernel(k) => k.shared.cap(),
            Self::User(u) => QpCap {
                max_recv_wr: u.rq.wqe_cnt,
                max_recv_sge: u.rq.max_gs,
                ..QpCap::default()
            },
        }
    }

    /// Applies a modify (the core checked the transition). A user QP's request of a modify
    /// (`struct mlx5_ib_modify_qp`) is not served: a non-empty one is `EOPNOTSUPP`.
    pub(crate) fn modify(
        &self,
        cmds: &Commands,
        caps: &ModifyCaps,
        attr: &QpAttr,
        mask: QpAttrMask,
        udata: Option<&Udata>,
    ) -> Result {
        match (self, udata) {
            (Self::Kernel(k), None) => k.modify(cmds, caps, attr, mask),
            (Self::User(u), Some(udata)) => {
                udata.check_in_empty()?;
                u.fw.modify(cmds, caps, attr, mask)?;
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }

    /// QUERY_QP: the state and what the context reports.
    pub(crate) fn query(&self, cmds: &Commands) -> Result<QpAttr> {
        match self {
            Self::Kernel(k) => k.fw.query(cmds),
            Self::User(u) => u.fw.query(cmds),
        }
    }
}

/// A QP as its firmware commands see it, kernel or user: what a modify puts in the QP context
/// besides the request, and the state the last modifies left.
pub(crate) struct QpFw {
    qpn: u32,
    kind: SendKind,
    pdn: u32,
    cqn_snd: u32,
    cqn_rcv: u32,
    /// It has a receive queue of its own (its doorbell record goes in RST2INIT).
    has_rq: bool,
    /// The doorbell record's device address.
    dbr: u64,
    /// A kernel QP, which may use the reserved lkey (`rlky`); a user QP must not.
    kernel: bool,
    /// The state of the last modify (`QpState` as a number).
    state: Atomic<u32>,
    /// Remote access rights and responder depth of the last modifies that set them.
    access: Atomic<u32>,
    resp_depth: Atomic<u32>,
    /// The port the last modify that set one set (C's `qp->port`), for a path without one.
    port: Atomic<u32>,
    /// A special QP: its `qpc.st` (QP0 or QP1) and its port, fixed at creation.
    special: Option<(u64, u32)>,
}

fn state_from_u32(v: u32) -> QpState {
    QpState::from_raw(v).unwrap_or(QpState::Reset)
}

/// The IB state of a firmware QP state.
fn ib_state(s: u64) -> QpState {
    match s {
        qp_state::INIT => QpState::Init,
        qp_state::RTR => QpState::Rtr,
        qp_state::RTS => QpState::Rts,
        qp_state::SQER => QpState::Sqe,
        qp_state::SQD => QpState::Sqd,
        qp_state::ERR => QpState::Err,
        _ => QpState::Reset,
    }
}

/// CREATE_QP's context for an RC QP (C's `_create_kernel_qp` and `create_kernel_qp`). The
/// device-wide XRC domain and SRQ C names for QPs without an SRQ are not created by this
/// driver yet: `xrcd` and `srqn_rmpn_xrqn` stay 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn create_ctx(
    st: u64,
    uar: u32,
    pdn: u32,
    sqs: &SqSize,
    rqs: &RqSize,
    cqn_snd: u32,
    cqn_rcv: u32,
    dbr: u64,
    srqn: Option<u32>,
) -> Result<QpCtxIn> {
    let mut q = QpCtxIn::new();
    q.set_uar_page(uar.into())?;
    // `mlx5_get_qp_default_ts` on a device without `sq_ts_format`: free running (0).
    q.set_ts_format(0)?;
    q.set_log_page_size(0)?;
    q.set_fre(1)?;
    q.set_rlky(1)?;
    q.set_st(st)?;
    q.set_pm_state(QP_PM_MIGRATED)?;
    q.set_pd(pdn.into())?;
    if let Some(srqn) = srqn {
        q.set_rq_type(RQ_TYPE_SRQ)?;
        q.set_srqn_rmpn_xrqn(srqn.into())?;
    } else if rqs.wqe_cnt != 0 {
        q.set_log_rq_stride(rqs.wqe_shift.saturating_sub(4).into())?;
        q.set_log_rq_size(rqs.wqe_cnt.trailing_zeros().into())?;
        q.set_rq_type(NON_ZERO_RQ)?;
    } else {
        q.set_rq_type(ZERO_LEN_RQ)?;
    }
    if sqs.wqe_cnt != 0 {
        q.set_log_sq_size(sqs.wqe_cnt.trailing_zeros().into())?;
    } else {
        q.set_no_sq(1)?;
    }
    q.set_cqn_snd(cqn_snd.into())?;
    q.set_cqn_rcv(cqn_rcv.into())?;
    q.set_dbr_addr(dbr)?;
    Ok(q)
}

/// The `qpc.st` of a transport.
pub(crate) fn st_of(kind: SendKind) -> u64 {
    match kind {
        SendKind::Rc => QP_ST_RC,
        SendKind::Uc => QP_ST_UC,
        SendKind::Ud => QP_ST_UD,
    }
}

/// What a modify needs of the device besides the QP.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModifyCaps {
    /// log2 of the largest message (`log_max_msg`).
    pub(crate) log_max_msg: u32,
    /// The static rates the device has (`stat_rate_support`), for a path's rate.
    pub(crate) stat_rate_support: u32,
    /// Each port's Q counter set (index: port - 1; 0: none), which RST2INIT binds the QP to.
    pub(crate) counter_sets: [u8; crate::counters::MAX_PORTS],
    /// The P_Key table's size: a modify naming an index past it is `EINVAL` (C's
    /// `dev->pkey_table_len`).
    pub(crate) pkey_table_len: u16,
    /// The most outstanding RDMA reads and atomics a QP may initiate (`1 << log_max_ra_res_qp`).
    pub(crate) max_rd_atomic: u32,
    /// The most it may answer (`1 << log_max_ra_req_qp`).
    pub(crate) max_dest_rd_atomic: u32,
}

impl ModifyCaps {
    /// C's checks in `mlx5_ib_modify_qp` before any command (qp.c:4916-4923): a P_Key index
    /// past the table, or more RDMA reads and atomics than the device takes, is `EINVAL`;
    /// neither value reaches the firmware.
    pub(crate) fn check(&self, attr: &QpAttr, mask: QpAttrMask) -> Result {
        if mask.contains(F::PkeyIndex) && attr.pkey_index >= self.pkey_table_len {
            return Err(EINVAL);
        }
        if mask.contains(F::MaxQpRdAtomic) && u32::from(attr.max_rd_atomic) > self.max_rd_atomic {
            return Err(EINVAL);
        }
        if mask.contains(F::MaxDestRdAtomic)
            && u32::from(attr.max_dest_rd_atomic) > self.max_dest_rd_atomic
        {
            return Err(EINVAL);
        }
        Ok(())
    }
}

/// The primary path of a modify with an address vector (C's `_mlx5_set_path` for an IB port):
/// the remote LID, the source path bits (7 of them) and the GRH flag, the service level, the
/// static rate as the device names it, and with a GRH the source GID index, hop limit,
/// traffic class, flow label and remote GID.
fn set_path(q: &mut QpCtxIn, attr: &QpAttr, stat_rate_support: u32) -> Result {
    q.set_rlid(attr.dlid.into())?;
    q.set_mlid((attr.src_path_bits & 0x7f).into())?;
    q.set_sl((attr.sl & 0xf).into())?;
    if let Some(g) = &attr.grh {
        q.set_grh(1)?;
        q.set_src_addr_index(g.sgid_index.into())?;
        q.set_hop_limit(g.hop_limit.into())?;
        q.set_tclass(g.traffic_class.into())?;
        q.set_flow_label((g.flow_label & 0xf_ffff).into())?;
        let mut hi = [0u8; 8];
        let mut lo = [0u8; 8];
        hi.copy_from_slice(&g.dgid.0[..8]);
        lo.copy_from_slice(&g.dgid.0[8..]);
        q.set_rgid_hi(u64::from_be_bytes(hi))?;
        q.set_rgid_lo(u64::from_be_bytes(lo))?;
    }
    q.set_stat_rate(crate::ah::stat_rate(attr.static_rate, stat_rate_support)?.into())?;
    Ok(())
}

impl QpFw {
    /// A QP just created (in RESET).
    pub(crate) fn new(
        qpn: u32,
        kind: SendKind,
        pdn: u32,
        cqn_snd: u32,
        cqn_rcv: u32,
        has_rq: bool,
        dbr: u64,
    ) -> Self {
        Self {
            qpn,
            kind,
            pdn,
            cqn_snd,
            cqn_rcv,
            has_rq,
            dbr,
            kernel: true,
            state: Atomic::new(QpState::Reset as u32),
            access: Atomic::new(0),
            resp_depth: Atomic::new(0),
            port: Atomic::new(0),
            special: None,
        }
    }

    /// The same QP as a port's special QP of service type `st` (QP0 or QP1).
    fn special(self, st: u64, port: u32) -> Self {
        Self {
            special: Some((st, port)),
            port: Atomic::new(port),
            ..self
        }
    }

    /// The QP's `qpc.st`.
    fn st(&self) -> u64 {
        self.special.map_or(st_of(self.kind), |(st, _)| st)
    }

    /// The same QP made for user space: no reserved lkey (C sets `rlky` for kernel QPs only).
    pub(crate) fn for_user(self) -> Self {
        Self {
            kernel: false,
            ..self
        }
    }

    /// The QP number.
    pub(crate) fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The state the last modify left.
    pub(crate) fn state(&self) -> QpState {
        state_from_u32(self.state.load(Relaxed))
    }

    /// The QP context of a modify from `cur` to `new` (C's `__mlx5_ib_modify_qp` for an RC or
    /// UD kernel QP on an IB port).
    fn modify_ctx(
        &self,
        caps: &ModifyCaps,
        cur: QpState,
        new: QpState,
        attr: &QpAttr,
        mask: QpAttrMask,
    ) -> Result<QpCtxIn> {
        let mut q = QpCtxIn::new();
        q.set_qpn(self.qpn.into())?;
        let ud = self.kind == SendKind::Ud;
        q.set_st(self.st())?;
        q.set_pm_state(QP_PM_MIGRATED)?;
        if self.special.is_some() {
            // C's special QPs carry one 256-byte MAD per message.
            q.set_mtu(MTU_256.into())?;
            q.set_log_msg_max(SPECIAL_LOG_MSG_MAX)?;
        } else if ud {
            // C gives every UD modify the largest MTU and a one-MTU message limit.
            q.set_mtu(MTU_4096.into())?;
            q.set_log_msg_max(UD_LOG_MSG_MAX)?;
        } else if mask.contains(F::PathMtu) {
            if !(MTU_256..=MTU_4096).contains(&attr.path_mtu) {
                return Err(EINVAL);
            }
            q.set_mtu(attr.path_mtu.into())?;
            q.set_log_msg_max(caps.log_max_msg.into())?;
        }
        if mask.contains(F::DestQpn) {
            q.set_remote_qpn(attr.dest_qp_num.into())?;
        }
        if mask.contains(F::PkeyIndex) {
            q.set_pkey_index(attr.pkey_index.into())?;
        }
        if let Some((_, port)) = self.special {
            // A special QP serves the port it was made for.
            q.set_vhca_port_num(port.into())?;
        }
        if mask.contains(F::Port) {
            q.set_vhca_port_num(attr.port_num.into())?;
        }
        if mask.contains(F::Av) {
            set_path(&mut q, attr, caps.stat_rate_support)?;
            // C sets the path's port with it: this modify's, else the QP's.
            let port = if mask.contains(F::Port) {
                attr.port_num.into()
            } else {
                self.port.load(Relaxed)
            };
            q.set_vhca_port_num(port.into())?;
        }
        if mask.contains(F::Timeout) {
            q.set_ack_timeout(attr.timeout.into())?;
        }
        q.set_pd(self.pdn.into())?;
        q.set_cqn_snd(self.cqn_snd.into())?;
        q.set_cqn_rcv(self.cqn_rcv.into())?;
        q.set_log_ack_req_freq(ACK_REQ_FREQ)?;
        if mask.contains(F::RnrRetry) {
            q.set_rnr_retry(attr.rnr_retry.into())?;
        }
        if mask.contains(F::RetryCnt) {
            q.set_retry_count(attr.retry_cnt.into())?;
        }
        if mask.contains(F::MaxQpRdAtomic) && attr.max_rd_atomic != 0 {
            q.set_log_sra_max(log_depth(attr.max_rd_atomic))?;
        }
        if mask.contains(F::SqPsn) {
            q.set_next_send_psn(attr.sq_psn.into())?;
        }
        if mask.contains(F::MaxDestRdAtomic) && attr.max_dest_rd_atomic != 0 {
            q.set_log_rra_max(log_depth(attr.max_dest_rd_atomic))?;
        }
        if mask.contains(F::AccessFlags) || mask.contains(F::MaxDestRdAtomic) {
            // C's `set_qpc_atomic_flags`: what this modify sets, else what the QP has.
            let depth = if mask.contains(F::MaxDestRdAtomic) {
                attr.max_dest_rd_atomic
            } else {
                self.resp_depth.load(Relaxed) as u8
            };
            let mut acc = if mask.contains(F::AccessFlags) {
                attr.qp_access_flags
            } else {
                AccessFlags::from_ib_bits(self.access.load(Relaxed))
            };
            if depth == 0 {
                acc = if acc.contains(Access::RemoteWrite) {
                    Access::RemoteWrite.into()
                } else {
                    AccessFlags::default()
                };
            }
            q.set_rre(acc.contains(Access::RemoteRead).into())?;
            q.set_rae(acc.contains(Access::RemoteAtomic).into())?;
            q.set_rwe(acc.contains(Access::RemoteWrite).into())?;
        }
        if mask.contains(F::MinRnrTimer) {
            q.set_min_rnr_nak(attr.min_rnr_timer.into())?;
        }
        if mask.contains(F::RqPsn) {
            q.set_next_rcv_psn(attr.rq_psn.into())?;
        }
        if mask.contains(F::Qkey) {
            q.set_q_key(attr.qkey.into())?;
        }
        if cur == QpState::Reset && new == QpState::Init {
            if self.has_rq {
                q.set_dbr_addr(self.dbr)?;
            }
            // The port's counter set (C: the QP's bound counter, never one here, else the
            // port's): this modify's port, else the QP's.
            let port = if mask.contains(F::Port) {
                u32::from(attr.port_num)
            } else {
                self.port.load(Relaxed)
            };
            let set = usize::try_from(port)
                .ok()
                .and_then(|p| p.checked_sub(1))
                .and_then(|i| caps.counter_sets.get(i))
                .copied()
                .unwrap_or(0);
            q.set_counter_set_id(set.into())?;
            if self.kernel {
                q.set_rlky(1)?;
            }
        }
        let allowed = if self.special.is_some() {
            // C's optional-parameter table has no row for the special QPs.
            0
        } else {
            match self.kind {
                SendKind::Ud => ud_opt_mask(cur, new),
                SendKind::Uc => uc_opt_mask(cur, new),
                SendKind::Rc => rc_opt_mask(cur, new),
            }
        };
        q.set_opt_param_mask((ib_mask_to_opt(mask) & allowed).into())?;
        Ok(q)
    }

    /// Applies a modify (the core checked the transition): the firmware command of the
    /// transition, then the state kept. Returns the new state.
    pub(crate) fn modify(
        &self,
        cmds: &Commands,
        caps: &ModifyCaps,
        attr: &QpAttr,
        mask: QpAttrMask,
    ) -> Result<QpState> {
        caps.check(attr, mask)?;
        let cur = state_from_u32(self.state.load(Relaxed));
        let new = if mask.contains(F::State) {
            attr.qp_state
        } else {
            cur
        };
        let num = QpNumIn::new().qpn(self.qpn.into())?;
        match (cur, new) {
            (_, QpState::Reset) => {
                cmds.exec::<QpToRst>(&num)?;
            }
            (_, QpState::Err) => {
                cmds.exec::<QpToErr>(&num)?;
            }
            (QpState::Reset, QpState::Init) => {
                let ctx = self.modify_ctx(caps, cur, new, attr, mask)?;
                cmds.exec::<Rst2InitQp>(&ctx)?;
            }
            (QpState::Init, QpState::Init) => {
                let ctx = self.modify_ctx(caps, cur, new, attr, mask)?;
                cmds.exec::<Init2InitQp>(&ctx)?;
            }
            (QpState::Init, QpState::Rtr) => {
                let ctx = self.modify_ctx(caps, cur, new, attr, mask)?;
                cmds.exec::<Init2RtrQp>(&ctx)?;
            }
            (QpState::Rtr, QpState::Rts) => {
                let ctx = self.modify_ctx(caps, cur, new, attr, mask)?;
                cmds.exec::<Rtr2RtsQp>(&ctx)?;
            }
            (QpState::Rts, QpState::Rts) => {
                let ctx = self.modify_ctx(caps, cur, new, attr, mask)?;
                cmds.exec::<Rts2RtsQp>(&ctx)?;
            }
            // SQD and SQE transitions are not implemented yet.
            _ => return Err(EOPNOTSUPP),
        }
        self.state.store(new as u32, Relaxed);
        if mask.contains(F::AccessFlags) {
            self.access.store(u32::from(attr.qp_access_flags), Relaxed);
        }
        if mask.contains(F::MaxDestRdAtomic) {
            self.resp_depth
                .store(attr.max_dest_rd_atomic.into(), Relaxed);
        }
        if mask.contains(F::Port) {
            self.port.store(attr.port_num.into(), Relaxed);
        }
        Ok(new)
    }

    /// QUERY_QP: the state and what the context reports.
    pub(crate) fn query(&self, cmds: &Commands) -> Result<QpAttr> {
        let o = cmds.exec::<QueryQp>(&QpNumIn::new().qpn(self.qpn.into())?)?;
        let mut acc = AccessFlags::default();
        if o.rre() != 0 {
            acc |= Access::RemoteRead;
        }
        if o.rwe() != 0 {
            acc |= Access::RemoteWrite;
        }
        if o.rae() != 0 {
            acc |= Access::RemoteAtomic;
        }
        Ok(QpAttr {
            qp_state: ib_state(o.state()),
            qp_access_flags: acc,
            pkey_index: o.pkey_index() as u16,
            port_num: o.vhca_port_num() as u8,
            qkey: o.q_key() as u32,
            dlid: o.rlid() as u16,
            sl: o.sl() as u8,
            src_path_bits: o.mlid() as u8,
            static_rate: crate::ah::ib_rate(o.stat_rate() as u8),
            grh: if o.grh() != 0 {
                let mut dgid = [0u8; 16];
                dgid[..8].copy_from_slice(&o.rgid_hi().to_be_bytes());
                dgid[8..].copy_from_slice(&o.rgid_lo().to_be_bytes());
                Some(GlobalRoute {
                    dgid: Gid(dgid),
                    flow_label: o.flow_label() as u32,
                    sgid_index: o.src_addr_index() as u8,
                    hop_limit: o.hop_limit() as u8,
                    traffic_class: o.tclass() as u8,
                    roce_dmac: None,
                })
            } else {
                None
            },
            path_mtu: o.mtu() as u8,
            timeout: o.ack_timeout() as u8,
            retry_cnt: o.retry_count() as u8,
            rnr_retry: o.rnr_retry() as u8,
            rq_psn: o.next_rcv_psn() as u32,
            max_rd_atomic: 1 << o.log_sra_max(),
            min_rnr_timer: o.min_rnr_nak() as u8,
            sq_psn: o.next_send_psn() as u32,
            max_dest_rd_atomic: 1 << o.log_rra_max(),
            dest_qp_num: o.remote_qpn() as u32,
        })
    }
}

/// Creates an RC or UD QP in PD `pdn` (other types: `EOPNOTSUPP`).
pub(crate) fn create<'bound>(
    dev: &'bound Mlx5Device,
    limits: &Limits,
    pdn: u32,
    init: &QpInitDriver<'_, crate::cq::Mlx5Cq<'_>, Mlx5Srq<'_>>,
) -> Result<NewQp<Mlx5Qp<'bound>>> {
    // The special QPs send datagrams, as UD QPs (C sizes and builds their WQEs alike).
    let (kind, special) = match init.qp_type {
        QpType::Rc => (SendKind::Rc, None),
        QpType::Ud => (SendKind::Ud, None),
        QpType::Smi => (SendKind::Ud, Some(QP_ST_QP0)),
        QpType::Gsi => (SendKind::Ud, Some(QP_ST_QP1)),
        _ => return Err(EOPNOTSUPP),
    };
    let st = special.unwrap_or(st_of(kind));
    // A QP of an SRQ has no receive queue of its own (C's `set_rq_size` without `has_rq`).
    let rqs = if init.srq.is_some() {
        RqSize::default()
    } else {
        wq_size::rq_size(&init.cap, limits)?
    };
    let sqs = wq_size::sq_size(&init.cap, limits, kind)?;
    let sq_offset = (rqs.wqe_cnt << rqs.wqe_shift) as usize;
    let len = sq_offset + sqs.bytes as usize;
    let buf = dev.alloc_coherent(len)?;
    let db = dev.alloc_db()?;
    let bfreg = dev.alloc_bfreg()?;
    let uar = bfreg.uar_index();
    let dbr = db.dma();
    let pas = coherent_page_list(buf.dma(), buf.len())?;
    let shared = QpShared::new(
        buf,
        db,
        bfreg,
        sqs,
        rqs,
        init.sq_sig_all,
        kind,
        match init.srq {
            Some(s) => Some(s.kernel_ring()?.clone()),
            None => None,
        },
    )?;
    let send_cq = init.send_cq.kernel()?.clone();
    let recv_cq = init.recv_cq.kernel()?.clone();
    let ctx = create_ctx(
        st,
        uar,
        pdn,
        &sqs,
        &rqs,
        send_cq.cqn(),
        recv_cq.cqn(),
        dbr,
        init.srq.map(|s| s.srqn),
    )?;
    let out = match dev.exec_var_large::<CreateQp>(&ctx, &pas, 0) {
        Ok((out, _)) => out,
        Err(e) => {
            // A timed-out CREATE_QP may have created the QP: its memory is never freed then.
            if e == ETIMEDOUT {
                shared.abandon_doorbell();
                core::mem::forget(shared);
            }
            return Err(e);
        }
    };
    let qpn = out.qpn() as u32;
    shared.set_qpn(qpn);
    let fw = QpFw::new(
        qpn,
        kind,
        pdn,
        send_cq.cqn(),
        recv_cq.cqn(),
        shared.has_rq(),
        shared.db_dma(),
    );
    let fw = match special {
        Some(st) => fw.special(st, init.port),
        None => fw,
    };
    let mut qp = KernelQp {
        events: None,
        shared,
        send_cq,
        recv_cq,
        fw,
    };
    let handler: Result<Arc<dyn ResourceHandler>> = Arc::new(
        QpEvents {
            qpn,
            notifier: init.events.clone(),
        },
        GFP_KERNEL,
    )
    .map(|h| h as Arc<dyn ResourceHandler>)
    .map_err(Error::from);
    let added = handler
        .and_then(|h| dev.register_resource(Resource::Qp(qpn), h))
        .map(|reg| qp.events = Some(reg))
        .and_then(|()| qp.send_cq.add_qp(qpn, &qp.shared, QueueRole::Send))
        .and_then(|()| qp.recv_cq.add_qp(qpn, &qp.shared, QueueRole::Recv));
    if let Err(e) = added {
        // Gives the QP back (tables, then DESTROY_QP).
        let _ = destroy_kernel(dev.commands(), qp);
        return Err(e);
    }
    // The special QPs are QP0 and QP1 to their users, whatever the firmware's number.
    let qp_num = match special {
        Some(QP_ST_QP0) => 0,
        Some(_) => 1,
        None => qpn,
    };
    let cap = qp.shared.cap();
    Ok(NewQp {
        qp: Mlx5Qp::Kernel(qp),
        qp_num,
        cap,
    })
}

/// C's `fls(v - 1)` for a nonzero depth: log2 of `v` rounded up.
fn log_depth(v: u8) -> u64 {
    u64::from(u8::BITS - (v - 1).leading_zeros())
}

/// The `opt_param_mask` bits of an IB attribute mask (C's `ib_mask_to_mlx5_opt`).
pub(crate) fn ib_mask_to_opt(mask: QpAttrMask) -> u32 {
    let mut o = 0;
    let pairs: [(F, u32); 11] = [
        (F::AccessFlags, optpar::RWE | optpar::RRE | optpar::RAE),
        (F::PkeyIndex, optpar::PKEY_INDEX),
        (F::Port, optpar::PRI_PORT),
        (F::Qkey, optpar::Q_KEY),
        (F::Av, optpar::PRIMARY_ADDR_PATH),
        (F::Timeout, optpar::ACK_TIMEOUT),
        (F::RetryCnt, optpar::RETRY_COUNT),
        (F::RnrRetry, optpar::RNR_RETRY),
        (F::MaxQpRdAtomic, optpar::SRA_MAX),
        (F::MinRnrTimer, optpar::RNR_TIMEOUT),
        (
            F::MaxDestRdAtomic,
            optpar::RRA_MAX | optpar::RWE | optpar::RRE | optpar::RAE,
        ),
    ];
    for (f, bits) in pairs {
        if mask.contains(f) {
            o |= bits;
        }
    }
    o
}

/// The optional parameters a UD transition accepts (C's `opt_mask` for `MLX5_QP_ST_UD`; the
/// packet pacing index is never asked for here).
pub(crate) fn ud_opt_mask(cur: QpState, new: QpState) -> u32 {
    use optpar::*;
    match (cur, new) {
        (QpState::Init, QpState::Init) => PKEY_INDEX | Q_KEY | PRI_PORT,
        (QpState::Init, QpState::Rtr) => PKEY_INDEX | Q_KEY,
        (QpState::Rtr, QpState::Rts) | (QpState::Rts, QpState::Rts) => Q_KEY,
        _ => 0,
    }
}

/// The optional parameters an RC transition accepts (C's `opt_mask` for `MLX5_QP_ST_RC`).
pub(crate) fn rc_opt_mask(cur: QpState, new: QpState) -> u32 {
    use optpar::*;
    match (cur, new) {
        (QpState::Init, QpState::Init) => RRE | RAE | RWE | PKEY_INDEX | PRI_PORT | LAG_TX_AFF,
        (QpState::Init, QpState::Rtr) => ALT_ADDR_PATH | RRE | RAE | RWE | PKEY_INDEX | LAG_TX_AFF,
        (QpState::Rtr, QpState::Rts) | (QpState::Rts, QpState::Rts) => {
            ALT_ADDR_PATH | RRE | RAE | RWE | PM_STATE | RNR_TIMEOUT
        }
        _ => 0,
    }
}

/// The optional parameters a UC transition accepts (C's `opt_mask` for `MLX5_QP_ST_UC`; the
/// packet pacing index is never asked for here).
pub(crate) fn uc_opt_mask(cur: QpState, new: QpState) -> u32 {
    use optpar::*;
    match (cur, new) {
        (QpState::Init, QpState::Init) => RWE | PKEY_INDEX | PRI_PORT | LAG_TX_AFF,
        (QpState::Init, QpState::Rtr) => ALT_ADDR_PATH | RWE | PKEY_INDEX | LAG_TX_AFF,
        (QpState::Rtr, QpState::Rts) | (QpState::Rts, QpState::Rts) => {
            ALT_ADDR_PATH | RWE | PM_STATE
        }
        _ => 0,
    }
}

impl KernelQp {
    fn qpn(&self) -> u32 {
        self.shared.qpn()
    }

    /// The ATTACH_TO_MCG or DETACH_FROM_MCG input for this QP and the group `gid`.
    fn mcg_input(&self, gid: &Gid) -> Result<McgIn> {
        let (hi, lo) = gid.0.split_at(8);
        let word = |b: &[u8]| b.iter().fold(0u64, |w, &x| (w << 8) | u64::from(x));
        McgIn::new()
            .qpn(self.qpn().into())?
            .gid_hi(word(hi))?
            .gid_lo(word(lo))
    }

    /// ATTACH_TO_MCG: the QP receives the datagrams sent to the group `gid` (C's
    /// `mlx5_ib_mcg_attach`).
    pub(crate) fn attach_mcast(&self, cmds: &Commands, gid: &Gid) -> Result {
        cmds.exec::<AttachToMcg>(&self.mcg_input(gid)?)?;
        Ok(())
    }

    /// DETACH_FROM_MCG (C's `mlx5_ib_mcg_detach`).
    pub(crate) fn detach_mcast(&self, cmds: &Commands, gid: &Gid) -> Result {
        cmds.exec::<DetachFromMcg>(&self.mcg_input(gid)?)?;
        Ok(())
    }

    /// Applies a modify (the core checked the transition); a QP back in RESET has its CQEs
    /// dropped and its rings start over, as C.
    fn modify(
        &self,
        cmds: &Commands,
        caps: &ModifyCaps,
        attr: &QpAttr,
        mask: QpAttrMask,
    ) -> Result {
        let new = self.fw.modify(cmds, caps, attr, mask)?;
        if new == QpState::Reset {
            self.recv_cq.clean(self.qpn());
            if !Arc::ptr_eq(&self.send_cq, &self.recv_cq) {
                self.send_cq.clean(self.qpn());
            }
            self.shared.reset_rings();
        }
        Ok(())
    }

    /// Queues send requests ([`QpShared::post_send`]).
    pub(crate) fn post_send<D: DeviceOps<Ah = Mlx5Ah>>(
        &self,
        wrs: SendWrs<'_, D>,
    ) -> Result<(), PostError> {
        self.shared.post_send(wrs)
    }

    /// Queues receive requests ([`QpShared::post_recv`]).
    pub(crate) fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        self.shared.post_recv(wrs)
    }

    /// Encodes a send request once ([`QpShared::prepare_send`]).
    pub(crate) fn prepare_send(&self, wr: &SendWr<'_>) -> Result<PreparedImage> {
        self.shared.prepare_send(wr)
    }

    /// Queues prepared send requests ([`QpShared::post_prepared`]).
    pub(crate) fn post_prepared(&self, wrs: &[PreparedSend]) -> Result<(), PostError> {
        self.shared.post_prepared(wrs)
    }
}

/// Destroys a QP (C's `destroy_qp_common`).
pub(crate) fn destroy(cmds: &Commands, qp: Mlx5Qp<'_>) -> Result {
    match qp {
        Mlx5Qp::Kernel(k) => destroy_kernel(cmds, k),
        Mlx5Qp::User(u) => destroy_user(cmds, u),
    }
}

/// Destroys a user QP: its handler goes, it is moved to RESET, then DESTROY_QP; its memory is
/// unpinned unless that failed (the device may still use it).
pub(crate) fn destroy_user(cmds: &Commands, mut qp: UserQp<'_>) -> Result {
    drop(qp.events.take());
    let num = QpNumIn::new().qpn(qp.fw.qpn().into())?;
    if qp.fw.state() != QpState::Reset {
        let _ = cmds.exec::<QpToRst>(&num);
    }
    let r = cmds.exec::<DestroyQp>(&num).map(|_| ());
    if r.is_err() {
        core::mem::forget(qp.buf.take());
        core::mem::forget(qp.db.take());
    }
    r
}

/// Destroys a kernel QP: to RESET if it is not there, out of its CQs' tables (with its CQEs),
/// DESTROY_QP; its memory is leaked if that fails.
fn destroy_kernel(cmds: &Commands, mut qp: KernelQp) -> Result {
    let qpn = qp.qpn();
    drop(qp.events.take());
    let num = QpNumIn::new().qpn(qpn.into())?;
    if qp.fw.state() != QpState::Reset {
        if let Err(e) = cmds.exec::<QpToRst>(&num) {
            pr_warn!(
                "modify QP {:#x} to RESET failed: err {}\n",
                qpn,
                e.to_errno()
            );
        }
    }
    qp.recv_cq.remove_qp(qpn);
    if !Arc::ptr_eq(&qp.send_cq, &qp.recv_cq) {
        qp.send_cq.remove_qp(qpn);
    }
    match cmds.exec::<DestroyQp>(&num) {
        Ok(_) => Ok(()),
        Err(e) => {
            qp.shared.abandon_doorbell();
            core::mem::forget(qp);
            Err(e)
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_qp)]
mod tests {
    use super::*;
    use mlx5_core::ifc::get_bits;

    #[test]
    fn optional_parameters_as_c() {
        let rtr = F::State | F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic;
        let o = ib_mask_to_opt(rtr) & rc_opt_mask(QpState::Init, QpState::Rtr);
        assert_eq!(o, optpar::RWE | optpar::RRE | optpar::RAE);
        let rts = F::State | F::Timeout | F::RetryCnt | F::RnrRetry | F::SqPsn | F::MinRnrTimer;
        let o = ib_mask_to_opt(rts) & rc_opt_mask(QpState::Rtr, QpState::Rts);
        assert_eq!(o, optpar::RNR_TIMEOUT);
        assert_eq!(rc_opt_mask(QpState::Reset, QpState::Init), 0);
        // UC: remote writes only; no atomic, read or RNR parameters pass at any transition.
        let uc_rtr = F::State | F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::AccessFlags;
        let o = ib_mask_to_opt(uc_rtr) & uc_opt_mask(QpState::Init, QpState::Rtr);
        assert_eq!(o & (optpar::RRE | optpar::RAE), 0);
        assert_eq!(
            uc_opt_mask(QpState::Init, QpState::Rtr) & optpar::RWE,
            optpar::RWE
        );
        assert_eq!(
            uc_opt_mask(QpState::Rtr, QpState::Rts) & (optpar::RNR_TIMEOUT | optpar::RRE),
            0
        );
        assert_eq!(st_of(SendKind::Uc), QP_ST_UC);
        // UD: the Q_Key and P_Key index may change at INIT2RTR, the Q_Key at RTR2RTS.
        let init = F::State | F::PkeyIndex | F::Port | F::Qkey;
        assert_eq!(
            ib_mask_to_opt(init) & ud_opt_mask(QpState::Init, QpState::Init),
            optpar::PKEY_INDEX | optpar::PRI_PORT | optpar::Q_KEY
        );
        let rtr = F::State | F::Qkey;
        assert_eq!(
            ib_mask_to_opt(rtr) & ud_opt_mask(QpState::Init, QpState::Rtr),
            optpar::Q_KEY
        );
        assert_eq!(
            ib_mask_to_opt(F::State | F::SqPsn) & ud_opt_mask(QpState::Rtr, QpState::Rts),
            0
        );
        assert_eq!(
            (log_depth(1), log_depth(2), log_depth(3), log_depth(16)),
            (0, 1, 2, 4)
        );
    }

    #[test]
    fn create_context_as_c() -> Result {
        let sqs = SqSize {
            wqe_cnt: 64,
            max_gs: 10,
            max_post: 21,
            max_inline: 56,
            bytes: 4096,
        };
        let rqs = RqSize {
            wqe_cnt: 16,
            wqe_shift: 4,
            max_gs: 1,
        };
        let q = create_ctx(QP_ST_RC, 9, 3, &sqs, &rqs, 0x400, 0x401, 0xabc0, None)?;
        let b = q.as_bytes();
        assert_eq!(get_bits(b, 0x128, 24), 9);
        assert_eq!(get_bits(b, 0xe8, 24), 3);
        assert_eq!(get_bits(b, 0x109, 4), 4);
        assert_eq!(get_bits(b, 0x10d, 3), 0);
        assert_eq!(get_bits(b, 0x111, 4), 6);
        assert_eq!(get_bits(b, 0x110, 1), 0);
        assert_eq!((get_bits(b, 0x454, 1), get_bits(b, 0x11b, 1)), (1, 1));
        assert_eq!(get_bits(b, 0x5c0, 64), 0xabc0);
        assert_eq!(get_bits(b, 0x625, 3), NON_ZERO_RQ);
        // No send queue: `no_sq`.
        let q = create_ctx(QP_ST_RC, 9, 3, &SqSize::default(), &rqs, 1, 1, 0, None)?;
        assert_eq!(get_bits(q.as_bytes(), 0x110, 1), 1);
        // A UD QP: `st` 2.
        let q = create_ctx(QP_ST_UD, 9, 3, &sqs, &rqs, 1, 1, 0, None)?;
        assert_eq!(get_bits(q.as_bytes(), 0xc8, 8), QP_ST_UD);
        // A QP of SRQ 0x77: rq_type SRQ and the RMP number, no receive queue size.
        let q = create_ctx(
            QP_ST_UD,
            9,
            3,
            &sqs,
            &RqSize::default(),
            1,
            1,
            0,
            Some(0x77),
        )?;
        let b = q.as_bytes();
        assert_eq!(get_bits(b, 0x625, 3), RQ_TYPE_SRQ);
        assert_eq!(get_bits(b, 0x628, 24), 0x77);
        // No receive queue size or stride of its own.
        assert_eq!((get_bits(b, 0x109, 4), get_bits(b, 0x10d, 3)), (0, 0));
        Ok(())
    }
}
