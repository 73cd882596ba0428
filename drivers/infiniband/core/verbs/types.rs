// SPDX-License-Identifier: GPL-2.0

//! The vocabulary of the verbs objects that drivers and consumers share: what a CQ or QP is
//! created with, QP states and attributes with their modify mask, access rights, and what a
//! driver hands back when it creates a QP or a memory region (C's `ib_cq_init_attr`,
//! `ib_qp_init_attr`, `ib_qp_attr`, `enum ib_qp_attr_mask`, `enum ib_access_flags`), with C's
//! numeric values.

use crate::{
    attrs::Gid,
    device::events::{EventHandler, EventNotifier, EventType},
};
use kernel::{prelude::*, sync::Arc};

/// The driver state of verbs objects a driver never makes: naming it for `DeviceOps::Pd`,
/// `DeviceOps::Cq`, `DeviceOps::Qp`, `DeviceOps::Mr`, `DeviceOps::Srq` or `DeviceOps::Ah`
/// says so (no value of it exists).
#[derive(Debug)]
pub enum NoVerbs {}

/// Completion queue parameters (`ib_cq_init_attr`), a kernel consumer's or user space's (a
/// user CQ's ring and doorbell record are in the driver's request).
#[derive(Clone, Copy, Debug, Default)]
pub struct CqInit {
    /// Entries wanted (the driver may round up; user space's: not 0).
    pub cqe: u32,
    /// Completion vector (user space's: below the device's count).
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*`: [`USER_CQ_TIMESTAMP_COMPLETION`], [`USER_CQ_IGNORE_OVERRUN`]
    /// (0 for most kernel consumers).
    pub flags: u32,
}

/// What a consumer's CQ callback is.
pub type CompletionHandler = KBox<dyn Fn() + Send + Sync>;

/// The consumer's handlers of a CQ.
struct CqHandlers {
    completion: Option<CompletionHandler>,
    event: Option<EventHandler>,
}

/// Where a driver reports completion events and asynchronous events of a CQ (it keeps a
/// clone).
#[derive(Clone)]
pub struct CqNotifier(Arc<CqHandlers>);

impl CqNotifier {
    /// A notifier calling `completion` and `event` (nothing for a `None`).
    pub(crate) fn new(
        completion: Option<CompletionHandler>,
        event: Option<EventHandler>,
    ) -> Result<Self> {
        Ok(Self(Arc::new(
            CqHandlers { completion, event },
            GFP_KERNEL,
        )?))
    }

    /// A completion event: calls the consumer's completion handler, if it has one.
    pub fn completion(&self) {
        if let Some(h) = self.0.completion.as_ref() {
            h();
        }
    }

    /// A CQ error (an overrun): raises `CqErr` to the consumer's event handler, if it has one
    /// (C's `IB_EVENT_CQ_ERR`).
    pub fn error(&self) {
        if let Some(h) = self.0.event.as_ref() {
            h(EventType::CqErr);
        }
    }
}

/// QP transport types (`enum ib_qp_type` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QpType {
    /// The subnet management QP, QP0 of a port (the MAD layer's).
    Smi = 0,
    /// The general services QP, QP1 of a port (the MAD layer's).
    Gsi = 1,
    /// Reliable connected.
    Rc = 2,
    /// Unreliable connected.
    Uc = 3,
    /// Unreliable datagram.
    Ud = 4,
}

/// Work queue sizes (`ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Inline data bytes.
    pub max_inline_data: u32,
}

/// What the driver gets when creating a QP: the consumer's request, with the driver's own state
/// of the QP's CQs and SRQ (`C` is the driver's `DeviceOps::Cq`, `S` its `DeviceOps::Srq`,
/// [`NoVerbs`] by default, so that a driver without SRQs names only `C`).
pub struct QpInitDriver<'a, C: ?Sized, S: ?Sized = NoVerbs> {
    /// Transport type.
    pub qp_type: QpType,
    /// The port of a special QP ([`QpType::Smi`], [`QpType::Gsi`]); 0 for the others.
    pub port: u32,
    /// The send CQ's driver state.
    pub send_cq: &'a C,
    /// The receive CQ's driver state.
    pub recv_cq: &'a C,
    /// Work queue sizes.
    pub cap: QpCap,
    /// Signal every send WR.
    pub sq_sig_all: bool,
    /// The SRQ the QP receives from (its own receive queue is not used then).
    pub srq: Option<&'a S>,
    /// Where the driver raises the QP's asynchronous events (it keeps a clone).
    pub events: &'a EventNotifier,
}

/// Shared receive queue parameters (`ib_srq_attr`): what a consumer asks for at creation, what
/// a modify sets (the fields [`SrqAttrMask`] names) and what a query returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Receive work requests the SRQ holds.
    pub max_wr: u32,
    /// Scatter/gather entries per receive work request.
    pub max_sge: u32,
    /// The limit: when fewer receives than this remain posted, the driver raises
    /// `SrqLimitReached` once (0: not armed).
    pub srq_limit: u32,
}

kernel::impl_flags!(
    /// Which [`SrqAttr`] fields a modify sets (`enum ib_srq_attr_mask`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SrqAttrMask(u32);

    /// One [`SrqAttr`] field (`IB_SRQ_*`, C's values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SrqAttrField {
        /// `IB_SRQ_MAX_WR`: resize to [`SrqAttr::max_wr`].
        MaxWr = 1,
        /// `IB_SRQ_LIMIT`: arm [`SrqAttr::srq_limit`].
        Limit = 1 << 1,
    }
);

/// A global route header for an address (`ib_global_route`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: Gid,
    /// Flow label.
    pub flow_label: u32,
    /// Index of the source GID in the port's table.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// On a RoCE port, the Ethernet address of the next hop (C's `rdma_ah_attr.roce.dmac`,
    /// an address of type `RDMA_AH_ATTR_TYPE_ROCE`), resolved by the caller; none on an
    /// InfiniBand port.
    pub roce_dmac: Option<[u8; 6]>,
}

/// An address handle's address (`rdma_ah_attr` of an InfiniBand port).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Destination LID.
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// Static rate (`IB_RATE_*`, 0: port current).
    pub static_rate: u8,
    /// The local port (from 1).
    pub port_num: u8,
    /// The global route, when the packets carry a GRH (`IB_AH_GRH`).
    pub grh: Option<GlobalRoute>,
}

/// A QP a driver created (`Q` is its `DeviceOps::Qp`).
pub struct NewQp<Q> {
    /// The driver's state of the QP.
    pub qp: Q,
    /// The QP number.
    pub qp_num: u32,
    /// Its queue sizes as made (C's `init_attr->cap` after `create_qp`, which drivers update;
    /// what user space is answered).
    pub cap: QpCap,
}

/// A memory region a driver registered (`M` is its `DeviceOps::Mr`).
pub struct NewMr<M> {
    /// The driver's state of the MR.
    pub mr: M,
    /// The local key.
    pub lkey: u32,
    /// The remote key.
    pub rkey: u32,
}

/// User memory to register (C's `reg_user_mr` arguments): `length` bytes at user address
/// `start` of the calling process, which the device addresses as `iova`.
#[derive(Clone, Copy, Debug)]
pub struct UserMrInit {
    /// Start in the process.
    pub start: u64,
    /// Length in bytes (not 0).
    pub length: u64,
    /// The address the MR's users give for `start`.
    pub iova: u64,
    /// The access rights the device checks.
    pub access: AccessFlags,
    /// The memory is written by the device (C's `ib_access_writable`: local or remote write,
    /// remote atomics, memory-window binding): pinned for writing.
    pub writable: bool,
}

/// `IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`.
pub const USER_CQ_TIMESTAMP_COMPLETION: u32 = 1 << 0;
/// `IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN`.
pub const USER_CQ_IGNORE_OVERRUN: u32 = 1 << 1;

/// QP states (`enum ib_qp_state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum QpState {
    /// Reset.
    #[default]
    Reset = 0,
    /// Initialized.
    Init = 1,
    /// Ready to receive.
    Rtr = 2,
    /// Ready to send.
    Rts = 3,
    /// Send queue drained.
    Sqd = 4,
    /// Send queue error.
    Sqe = 5,
    /// Error.
    Err = 6,
}

impl QpState {
    /// The state numbered `v` (C's `enum ib_qp_state` values), `None` past `Err`.
    pub fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Reset,
            1 => Self::Init,
            2 => Self::Rtr,
            3 => Self::Rts,
            4 => Self::Sqd,
            5 => Self::Sqe,
            6 => Self::Err,
            _ => return None,
        })
    }
}

kernel::impl_flags!(
    /// Which [`QpAttr`] fields a modify sets (`enum ib_qp_attr_mask`); only the fields
    /// [`QpAttr`] has can be named, and `CUR_STATE`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpAttrMask(u32);

    /// One [`QpAttr`] field a modify sets (`IB_QP_*`, C's values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum QpAttrField {
        /// `IB_QP_STATE`: [`QpAttr::qp_state`].
        State = 1,
        /// `IB_QP_CUR_STATE`: the caller names the current state (only allowed from RTR, RTS,
        /// SQD and SQE); the core checks the transition from the state it knows.
        CurState = 1 << 1,
        /// `IB_QP_ACCESS_FLAGS`: [`QpAttr::qp_access_flags`].
        AccessFlags = 1 << 3,
        /// `IB_QP_PKEY_INDEX`: [`QpAttr::pkey_index`].
        PkeyIndex = 1 << 4,
        /// `IB_QP_PORT`: [`QpAttr::port_num`].
        Port = 1 << 5,
        /// `IB_QP_QKEY`: [`QpAttr::qkey`].
        Qkey = 1 << 6,
        /// `IB_QP_AV`: [`QpAttr::dlid`].
        Av = 1 << 7,
        /// `IB_QP_PATH_MTU`: [`QpAttr::path_mtu`].
        PathMtu = 1 << 8,
        /// `IB_QP_TIMEOUT`: [`QpAttr::timeout`].
        Timeout = 1 << 9,
        /// `IB_QP_RETRY_CNT`: [`QpAttr::retry_cnt`].
        RetryCnt = 1 << 10,
        /// `IB_QP_RNR_RETRY`: [`QpAttr::rnr_retry`].
        RnrRetry = 1 << 11,
        /// `IB_QP_RQ_PSN`: [`QpAttr::rq_psn`].
        RqPsn = 1 << 12,
        /// `IB_QP_MAX_QP_RD_ATOMIC`: [`QpAttr::max_rd_atomic`].
        MaxQpRdAtomic = 1 << 13,
        /// `IB_QP_MIN_RNR_TIMER`: [`QpAttr::min_rnr_timer`].
        MinRnrTimer = 1 << 15,
        /// `IB_QP_SQ_PSN`: [`QpAttr::sq_psn`].
        SqPsn = 1 << 16,
        /// `IB_QP_MAX_DEST_RD_ATOMIC`: [`QpAttr::max_dest_rd_atomic`].
        MaxDestRdAtomic = 1 << 17,
        /// `IB_QP_DEST_QPN`: [`QpAttr::dest_qp_num`].
        DestQpn = 1 << 20,
    }
);

impl QpAttrMask {
    /// The fields `IB_QP_*` bits (C's values) name; `None` when they name a field this core
    /// does not carry to drivers (alternate paths, path migration, SQD notification,
    /// capabilities, rate limits).
    pub fn from_ib_bits(bits: u32) -> Option<Self> {
        (bits & !Self::all_bits() == 0).then_some(Self(bits))
    }
}

kernel::impl_flags!(
    /// Local and remote access rights of a memory region or a QP (`enum ib_access_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct AccessFlags(u32);

    /// One access right (`IB_ACCESS_*`, C's values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Access {
        /// `IB_ACCESS_LOCAL_WRITE`.
        LocalWrite = 1,
        /// `IB_ACCESS_REMOTE_WRITE`.
        RemoteWrite = 1 << 1,
        /// `IB_ACCESS_REMOTE_READ`.
        RemoteRead = 1 << 2,
        /// `IB_ACCESS_REMOTE_ATOMIC`.
        RemoteAtomic = 1 << 3,
    }
);

impl AccessFlags {
    /// The rights `IB_ACCESS_*` bits name (C's numbers; bits of other rights are left out).
    pub fn from_ib_bits(bits: u32) -> Self {
        let mut a = Self::default();
        for r in [
            Access::LocalWrite,
            Access::RemoteWrite,
            Access::RemoteRead,
            Access::RemoteAtomic,
        ] {
            if bits & u32::from(Self::from(r)) != 0 {
                a |= r;
            }
        }
        a
    }
}

/// QP attributes a modify sets or a query returns (the subset of `ib_qp_attr` kept so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttr {
    /// State.
    pub qp_state: QpState,
    /// Remote access rights.
    pub qp_access_flags: AccessFlags,
    /// P_Key index.
    pub pkey_index: u16,
    /// Port (from 1).
    pub port_num: u8,
    /// Q_Key (datagram QPs).
    pub qkey: u32,
    /// Destination LID (the address vector: with [`QpAttr::sl`], [`QpAttr::src_path_bits`],
    /// [`QpAttr::static_rate`] and [`QpAttr::grh`], set with `QpAttrField::Av`).
    pub dlid: u16,
    /// Service level of the path.
    pub sl: u8,
    /// Source path bits (the low bits of the source LID).
    pub src_path_bits: u8,
    /// Static rate (`IB_RATE_*`, 0: the port's current rate).
    pub static_rate: u8,
    /// The global route, when the packets carry a GRH (`IB_AH_GRH`).
    pub grh: Option<GlobalRoute>,
    /// Path MTU (`IB_MTU_*`).
    pub path_mtu: u8,
    /// Local ACK timeout.
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries.
    pub rnr_retry: u8,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Outstanding RDMA reads/atomics as initiator.
    pub max_rd_atomic: u8,
    /// Minimal RNR NAK timer.
    pub min_rnr_timer: u8,
    /// Send PSN.
    pub sq_psn: u32,
    /// Outstanding RDMA reads/atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// Remote QP number.
    pub dest_qp_num: u32,
}
