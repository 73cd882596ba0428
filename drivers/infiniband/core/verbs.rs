// SPDX-License-Identifier: GPL-2.0

//! The kernel verbs objects: protection domains, completion queues, queue pairs and memory
//! regions, as kernel consumers create them on a registered device.
//!
//! Lifetimes are those of the C core, enforced by reference counts rather than by WARNs:
//! - every object holds a [`DeviceRef`], so unregistering a device waits until its objects are
//!   gone (clients drop theirs in `remove`, which runs first, as in C);
//! - a QP holds its PD and its CQs, an MR its PD: a PD or CQ is destroyed only after the last
//!   object using it;
//! - each live object is counted per device ([`crate::restrack`]), which is what `RES_GET`
//!   reports.
//!
//! The driver's side of each object is a [`DriverObject`] it made in the matching
//! [`crate::device::DeviceOps`] method and gets back in later calls and at destruction.

use crate::{
    device::{DeviceRef, IbDevice},
    restrack::ResType,
    wr::{PostError, RecvWr, SendWr, WorkCompletion},
};
use core::any::Any;
use kernel::{prelude::*, sync::Arc};

/// A driver's state for one verbs object, typed by the driver.
pub struct DriverObject(KBox<dyn Any + Send + Sync>);

impl DriverObject {
    /// Wraps the driver's state for an object.
    pub fn new<T: Any + Send + Sync>(state: T) -> Result<Self> {
        Ok(Self(KBox::new(state, GFP_KERNEL)?))
    }

    /// Wraps driver state that is initialized in place (it holds locks, for instance).
    pub fn pin_init<T: Any + Send + Sync>(init: impl PinInit<T, Error>) -> Result<Self> {
        let pinned: Pin<KBox<T>> = KBox::pin_init(init, GFP_KERNEL)?;
        Self::new(pinned)
    }

    /// The driver's state, if it is a `T` (`EINVAL` otherwise).
    pub fn get<T: Any>(&self) -> Result<&T> {
        let any: &(dyn Any + Send + Sync) = &*self.0;
        if let Some(t) = any.downcast_ref::<T>() {
            return Ok(t);
        }
        match any.downcast_ref::<Pin<KBox<T>>>() {
            Some(p) => Ok(p),
            None => Err(EINVAL),
        }
    }
}

/// Completion queue parameters (`ib_cq_init_attr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CqInit {
    /// Entries wanted (the driver may round up).
    pub cqe: u32,
    /// Completion vector.
    pub comp_vector: u32,
}

/// QP transport types (`enum ib_qp_type` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QpType {
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

/// What a consumer asks for when creating a QP.
pub struct QpInit {
    /// Transport type.
    pub qp_type: QpType,
    /// CQ of send completions.
    pub send_cq: Arc<Cq>,
    /// CQ of receive completions.
    pub recv_cq: Arc<Cq>,
    /// Work queue sizes.
    pub cap: QpCap,
    /// Signal every send WR.
    pub sq_sig_all: bool,
}

/// What the driver gets when creating a QP: the consumer's request with the driver's CQ state.
pub struct QpInitDriver<'a> {
    /// Transport type.
    pub qp_type: QpType,
    /// The send CQ's driver state.
    pub send_cq: &'a DriverObject,
    /// The receive CQ's driver state.
    pub recv_cq: &'a DriverObject,
    /// Work queue sizes.
    pub cap: QpCap,
    /// Signal every send WR.
    pub sq_sig_all: bool,
}

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

kernel::impl_flags!(
    /// Which [`QpAttr`] fields a modify sets (`enum ib_qp_attr_mask`); only the fields
    /// [`QpAttr`] has can be named.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpAttrMask(u32);

    /// One [`QpAttr`] field a modify sets (`IB_QP_*`, C's values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum QpAttrField {
        /// `IB_QP_STATE`: [`QpAttr::qp_state`].
        State = 1,
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
    /// Destination LID (the address vector, IB only so far).
    pub dlid: u16,
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

/// Whether moving a `qp_type` QP from `cur` to `next` with `mask` is allowed: the transitions and
/// required attributes of the C core's `ib_modify_qp_is_ok` (optional attributes are not
/// checked yet).
pub fn qp_transition_ok(cur: QpState, next: QpState, qp_type: QpType, mask: QpAttrMask) -> bool {
    use QpAttrField as F;
    use QpState::*;
    use QpType::*;
    let none = QpAttrMask::empty();
    let required = match (cur, next) {
        (_, Reset) | (_, Err) => none,
        (Reset, Init) => match qp_type {
            Ud => F::PkeyIndex | F::Port | F::Qkey,
            Rc | Uc => F::PkeyIndex | F::Port | F::AccessFlags,
        },
        (Init, Init) | (Rts, Rts) | (Sqd, Sqd) | (Sqd, Rts) | (Sqe, Rts) | (Rts, Sqd) => none,
        (Init, Rtr) => match qp_type {
            Ud => none,
            Uc => F::Av | F::PathMtu | F::DestQpn | F::RqPsn,
            Rc => F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer,
        },
        (Rtr, Rts) => match qp_type {
            Ud | Uc => F::SqPsn.into(),
            Rc => F::Timeout | F::RetryCnt | F::RnrRetry | F::SqPsn | F::MaxQpRdAtomic,
        },
        _ => return false,
    };
    // A modify to another state must say so.
    (cur == next || mask.contains(F::State)) && mask.contains_all(required)
}

/// A protection domain.
pub struct Pd {
    dev: DeviceRef,
    drv: Option<DriverObject>,
}

impl Pd {
    /// Allocates a PD on `dev` (`EOPNOTSUPP` if the driver has no kernel verbs, `ENODEV` if the
    /// device is unregistering).
    pub fn alloc(dev: &Arc<IbDevice>) -> Result<Arc<Self>> {
        let dev = dev.try_get().ok_or(ENODEV)?;
        let drv = dev.ops().alloc_pd()?;
        let pd = Self {
            dev,
            drv: Some(drv),
        };
        pd.dev.restrack().add(ResType::Pd);
        // On failure the PD is dropped, which gives it back to the driver.
        Ok(Arc::new(pd, GFP_KERNEL)?)
    }

    /// The device.
    pub fn device(&self) -> &IbDevice {
        &self.dev
    }

    fn drv(&self) -> Result<&DriverObject> {
        self.drv.as_ref().ok_or(EINVAL)
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        if let Some(drv) = self.drv.take() {
            if let Err(e) = self.dev.ops().dealloc_pd(drv) {
                pr_warn!("dealloc_pd failed: err {}\n", e.to_errno());
            }
            self.dev.restrack().remove(ResType::Pd);
        }
    }
}

/// What a consumer's CQ callback is.
pub type CompletionHandler = KBox<dyn Fn() + Send + Sync>;

/// Where a driver reports completion events of a CQ (it keeps a clone).
#[derive(Clone)]
pub struct CqNotifier(Arc<Option<CompletionHandler>>);

impl CqNotifier {
    /// A completion event: calls the consumer's handler, if it has one.
    pub fn completion(&self) {
        if let Some(h) = self.0.as_ref() {
            h();
        }
    }
}

/// A completion queue.
pub struct Cq {
    dev: DeviceRef,
    drv: Option<DriverObject>,
    notifier: CqNotifier,
}

impl Cq {
    /// Creates a CQ on `dev`; `handler` runs on completion events once the CQ is armed.
    pub fn create(
        dev: &Arc<IbDevice>,
        init: &CqInit,
        handler: Option<CompletionHandler>,
    ) -> Result<Arc<Self>> {
        let dev = dev.try_get().ok_or(ENODEV)?;
        if init.cqe == 0 || init.cqe > dev.attr().max_cqe {
            return Err(EINVAL);
        }
        let notifier = CqNotifier(Arc::new(handler, GFP_KERNEL)?);
        let drv = dev.ops().create_cq(init, &notifier)?;
        let cq = Self {
            dev,
            drv: Some(drv),
            notifier,
        };
        cq.dev.restrack().add(ResType::Cq);
        Ok(Arc::new(cq, GFP_KERNEL)?)
    }

    /// Asks for a completion event on the next completion (`solicited`: the next solicited
    /// one).
    pub fn req_notify(&self, solicited: bool) -> Result {
        self.dev.ops().req_notify_cq(self.drv()?, solicited)
    }

    /// Moves up to `wc.len()` completions into `wc`, oldest first; returns how many (C's
    /// `ib_poll_cq`). A completion event only says that there is something to poll: re-arm with
    /// [`Cq::req_notify`], then poll again, so that nothing completing in between is missed.
    pub fn poll(&self, wc: &mut [WorkCompletion]) -> Result<usize> {
        let n = self.dev.ops().poll_cq(self.drv()?, wc)?;
        // A driver reporting more than it was given room for is a driver bug.
        if n > wc.len() {
            return Err(EIO);
        }
        Ok(n)
    }

    /// The notifier the driver reports events to.
    pub fn notifier(&self) -> &CqNotifier {
        &self.notifier
    }

    fn drv(&self) -> Result<&DriverObject> {
        self.drv.as_ref().ok_or(EINVAL)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        if let Some(drv) = self.drv.take() {
            if let Err(e) = self.dev.ops().destroy_cq(drv) {
                pr_warn!("destroy_cq failed: err {}\n", e.to_errno());
            }
            self.dev.restrack().remove(ResType::Cq);
        }
    }
}

/// A queue pair. It keeps its PD and CQs alive.
pub struct Qp {
    pd: Arc<Pd>,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    qp_type: QpType,
    qp_num: u32,
    drv: Option<DriverObject>,
    state: kernel::sync::Arc<kernel::sync::Mutex<QpState>>,
}

impl Qp {
    /// Creates a QP in `pd`. Its CQs must be on the same device.
    pub fn create(pd: &Arc<Pd>, init: QpInit) -> Result<Arc<Self>> {
        let dev = &pd.dev;
        if !core::ptr::eq(init.send_cq.dev.arc().as_ref(), dev.arc().as_ref())
            || !core::ptr::eq(init.recv_cq.dev.arc().as_ref(), dev.arc().as_ref())
        {
            return Err(EINVAL);
        }
        let attr = dev.attr();
        if init.cap.max_send_wr > attr.max_qp_wr
            || init.cap.max_recv_wr > attr.max_qp_wr
            || init.cap.max_send_sge > attr.max_send_sge
            || init.cap.max_recv_sge > attr.max_recv_sge
        {
            return Err(EINVAL);
        }
        let (drv, qp_num) = dev.ops().create_qp(
            pd.drv()?,
            &QpInitDriver {
                qp_type: init.qp_type,
                send_cq: init.send_cq.drv()?,
                recv_cq: init.recv_cq.drv()?,
                cap: init.cap,
                sq_sig_all: init.sq_sig_all,
            },
        )?;
        let state = kernel::sync::Arc::pin_init(
            kernel::new_mutex!(QpState::Reset, "ib_core::verbs::Qp::state"),
            GFP_KERNEL,
        );
        let state = match state {
            Ok(s) => s,
            Err(e) => {
                let _ = dev.ops().destroy_qp(drv);
                return Err(e);
            }
        };
        let qp = Self {
            pd: pd.clone(),
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            qp_type: init.qp_type,
            qp_num,
            drv: Some(drv),
            state,
        };
        qp.pd.dev.restrack().add(ResType::Qp);
        Ok(Arc::new(qp, GFP_KERNEL)?)
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }

    /// The transport type.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// Queues send work requests, in order (C's `ib_post_send`). On error, the requests before
    /// [`PostError::first_bad`] are queued and will complete; the others are not.
    pub fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        let drv = self.drv()?;
        self.pd.dev.ops().post_send(drv, wrs)
    }

    /// Queues receive work requests, in order (C's `ib_post_recv`), with the same partial
    /// semantics as [`Qp::post_send`].
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let drv = self.drv()?;
        self.pd.dev.ops().post_recv(drv, wrs)
    }

    /// The state the last modify set, as C drivers track it: a QP the device moves to the error
    /// state (after a failed work request) still reads as before here; [`Qp::query`] asks the
    /// driver.
    pub fn state(&self) -> QpState {
        *self.state.lock()
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The send and receive CQs.
    pub fn cqs(&self) -> (&Arc<Cq>, &Arc<Cq>) {
        (&self.send_cq, &self.recv_cq)
    }

    /// Modifies the QP: the transition and required attributes are checked first (`EINVAL`),
    /// as C's `ib_modify_qp_is_ok`, then the driver applies it.
    pub fn modify(&self, attr: &QpAttr, mask: QpAttrMask) -> Result {
        let mut state = self.state.lock();
        let next = if mask.contains(QpAttrField::State) {
            attr.qp_state
        } else {
            *state
        };
        if !qp_transition_ok(*state, next, self.qp_type, mask) {
            return Err(EINVAL);
        }
        if mask.contains(QpAttrField::Port) && !self.pd.dev.is_valid_port(attr.port_num.into()) {
            return Err(EINVAL);
        }
        self.pd.dev.ops().modify_qp(self.drv()?, attr, mask)?;
        *state = next;
        Ok(())
    }

    /// The QP's attributes, from the driver.
    pub fn query(&self) -> Result<QpAttr> {
        self.pd.dev.ops().query_qp(self.drv()?)
    }

    fn drv(&self) -> Result<&DriverObject> {
        self.drv.as_ref().ok_or(EINVAL)
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        if let Some(drv) = self.drv.take() {
            if let Err(e) = self.pd.dev.ops().destroy_qp(drv) {
                pr_warn!(
                    "destroy_qp {:#x} failed: err {}\n",
                    self.qp_num,
                    e.to_errno()
                );
            }
            self.pd.dev.restrack().remove(ResType::Qp);
        }
    }
}

/// A memory region. It keeps its PD alive.
pub struct Mr {
    pd: Arc<Pd>,
    lkey: u32,
    rkey: u32,
    drv: Option<DriverObject>,
}

impl Mr {
    /// The DMA MR of `pd`: all of memory, with `access` rights (`get_dma_mr`).
    pub fn get_dma_mr(pd: &Arc<Pd>, access: AccessFlags) -> Result<Arc<Self>> {
        let (drv, lkey, rkey) = pd.dev.ops().get_dma_mr(pd.drv()?, access)?;
        let mr = Self {
            pd: pd.clone(),
            lkey,
            rkey,
            drv: Some(drv),
        };
        mr.pd.dev.restrack().add(ResType::Mr);
        Ok(Arc::new(mr, GFP_KERNEL)?)
    }

    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        if let Some(drv) = self.drv.take() {
            if let Err(e) = self.pd.dev.ops().dereg_mr(drv) {
                pr_warn!("dereg_mr failed: err {}\n", e.to_errno());
            }
            self.pd.dev.restrack().remove(ResType::Mr);
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_verbs)]
mod tests {
    use super::*;
    use crate::{
        attrs::{DeviceAttr, DeviceCap, DeviceCapFlags, NodeType, PortAttr, PortImmutable},
        device::{DeviceInfo, DeviceOps, Registration},
        dma_buffer::{DmaBuffer, DmaMemory, DMA_BUFFER_MAX},
    };
    use kernel::{new_mutex, sync::Mutex};

    /// Driver calls a test device saw, in order.
    type Calls = Arc<Mutex<KVec<&'static str>>>;

    /// A device whose verbs only record what they are asked.
    struct Recording {
        calls: Calls,
    }

    impl Recording {
        fn log(&self, what: &'static str) -> Result {
            self.calls.lock().push(what, GFP_KERNEL)?;
            Ok(())
        }
    }

    #[vtable]
    impl DeviceOps for Recording {
        fn query_device(&self) -> Result<DeviceAttr> {
            Ok(DeviceAttr {
                max_cqe: 1024,
                max_qp_wr: 64,
                max_send_sge: 2,
                max_recv_sge: 2,
                ..DeviceAttr::default()
            })
        }

        fn query_port(&self, _port: u32) -> Result<PortAttr> {
            Ok(PortAttr::default())
        }

        fn get_port_immutable(&self, _port: u32) -> Result<PortImmutable> {
            Ok(PortImmutable::default())
        }

        fn alloc_pd(&self) -> Result<DriverObject> {
            self.log("alloc_pd")?;
            DriverObject::new(1u32)
        }

        fn dealloc_pd(&self, _pd: DriverObject) -> Result {
            self.log("dealloc_pd")
        }

        fn create_cq(&self, _init: &CqInit, _n: &CqNotifier) -> Result<DriverObject> {
            self.log("create_cq")?;
            DriverObject::new(2u32)
        }

        fn destroy_cq(&self, _cq: DriverObject) -> Result {
            self.log("destroy_cq")
        }

        fn create_qp(
            &self,
            pd: &DriverObject,
            init: &QpInitDriver<'_>,
        ) -> Result<(DriverObject, u32)> {
            // The core hands back what the driver made.
            if *pd.get::<u32>()? != 1 || *init.send_cq.get::<u32>()? != 2 {
                return Err(EINVAL);
            }
            self.log("create_qp")?;
            Ok((DriverObject::new(3u32)?, 0x42))
        }

        fn modify_qp(&self, _qp: &DriverObject, _attr: &QpAttr, _mask: QpAttrMask) -> Result {
            self.log("modify_qp")
        }

        fn destroy_qp(&self, _qp: DriverObject) -> Result {
            self.log("destroy_qp")
        }

        fn get_dma_mr(
            &self,
            _pd: &DriverObject,
            _access: AccessFlags,
        ) -> Result<(DriverObject, u32, u32)> {
            self.log("get_dma_mr")?;
            Ok((DriverObject::new(4u32)?, 7, 8))
        }

        fn dereg_mr(&self, _mr: DriverObject) -> Result {
            self.log("dereg_mr")
        }

        fn poll_cq(&self, _cq: &DriverObject, wc: &mut [WorkCompletion]) -> Result<usize> {
            // A driver bug: more completions than there was room for.
            Ok(wc.len() + 1)
        }

        fn alloc_dma_buffer(&self, len: usize) -> Result<KBox<dyn DmaMemory>> {
            self.log("alloc_dma_buffer")?;
            let mut bytes = KVec::new();
            bytes.resize(len, 0, GFP_KERNEL)?;
            let bytes = KBox::pin_init(new_mutex!(bytes), GFP_KERNEL)?;
            Ok(KBox::new(Plain(bytes), GFP_KERNEL)?)
        }
    }

    /// Plain memory standing in for DMA memory, at device address 0x1000.
    struct Plain(Pin<KBox<Mutex<KVec<u8>>>>);

    impl DmaMemory for Plain {
        fn dma_addr(&self) -> u64 {
            0x1000
        }

        fn len(&self) -> usize {
            self.0.lock().len()
        }

        fn read(&self, offset: usize, out: &mut [u8]) -> Result {
            out.copy_from_slice(self.0.lock().get(offset..offset + out.len()).ok_or(EIO)?);
            Ok(())
        }

        fn write(&self, offset: usize, data: &[u8]) -> Result {
            self.0
                .lock()
                .get_mut(offset..offset + data.len())
                .ok_or(EIO)?
                .copy_from_slice(data);
            Ok(())
        }
    }

    fn register(calls: &Calls) -> Result<Registration> {
        let info = DeviceInfo {
            name: b"kverbs%d",
            node_type: NodeType::Ca,
            node_guid: 0,
            phys_port_cnt: 1,
            node_desc: b"",
            parent: None,
            use_cq_dim: false,
        };
        Registration::new(
            info,
            Recording {
                calls: calls.clone(),
            },
        )
    }

    fn take(calls: &Calls) -> KVec<&'static str> {
        core::mem::take(&mut *calls.lock())
    }

    #[test]
    fn transitions_follow_the_c_table() {
        use QpAttrField as F;
        use QpState::{Init, Reset, Rtr, Rts};
        let m = |bits: QpAttrMask| bits | F::State;
        let rc_init = F::PkeyIndex | F::Port | F::AccessFlags;
        assert!(qp_transition_ok(Reset, Init, QpType::Rc, m(rc_init)));
        assert!(!qp_transition_ok(
            Reset,
            Init,
            QpType::Rc,
            m(F::Port.into())
        ));
        // UD needs a Q_Key rather than access flags.
        assert!(!qp_transition_ok(Reset, Init, QpType::Ud, m(rc_init)));
        assert!(qp_transition_ok(
            Reset,
            Init,
            QpType::Ud,
            m(F::PkeyIndex | F::Port | F::Qkey)
        ));
        let rc_rtr =
            F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer;
        assert!(qp_transition_ok(Init, Rtr, QpType::Rc, m(rc_rtr)));
        assert!(!qp_transition_ok(Init, Rtr, QpType::Rc, m(rc_rtr & !F::Av)));
        assert!(qp_transition_ok(
            Init,
            Rtr,
            QpType::Ud,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(Rtr, Rts, QpType::Ud, m(F::SqPsn.into())));
        assert!(!qp_transition_ok(Rtr, Rts, QpType::Rc, m(F::SqPsn.into())));
        // Skipping states is refused; reset and error are always reachable.
        assert!(!qp_transition_ok(Reset, Rtr, QpType::Rc, m(rc_rtr)));
        assert!(!qp_transition_ok(
            Init,
            Rts,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(
            Rts,
            QpState::Err,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(
            Rtr,
            Reset,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        // A change of state without the state bit is refused.
        assert!(!qp_transition_ok(Reset, Init, QpType::Rc, rc_init));
    }

    #[test]
    fn objects_outlive_their_handles_until_their_users_go() -> Result {
        let calls: Calls = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        let pd = Pd::alloc(&dev)?;
        let cq = Cq::create(
            &dev,
            &CqInit {
                cqe: 16,
                comp_vector: 0,
            },
            None,
        )?;
        let qp = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap {
                    max_send_wr: 8,
                    max_recv_wr: 8,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
            },
        )?;
        assert_eq!(qp.qp_num(), 0x42);
        let mr = Mr::get_dma_mr(&pd, Access::LocalWrite.into())?;
        assert_eq!((mr.lkey(), mr.rkey()), (7, 8));
        assert_eq!(
            &take(&calls)[..],
            &["alloc_pd", "create_cq", "create_qp", "get_dma_mr"]
        );
        let r = dev.restrack();
        assert_eq!(
            [ResType::Pd, ResType::Cq, ResType::Qp, ResType::Mr].map(|t| r.count(t)),
            [1, 1, 1, 1]
        );
        // Limits from query_device are enforced before the driver is asked.
        assert_eq!(
            Cq::create(
                &dev,
                &CqInit {
                    cqe: 4096,
                    comp_vector: 0
                },
                None
            )
            .err(),
            Some(EINVAL)
        );
        // A wrong transition never reaches the driver.
        let to_rtr = QpAttr {
            qp_state: QpState::Rtr,
            ..QpAttr::default()
        };
        assert_eq!(qp.modify(&to_rtr, QpAttrField::State.into()), Err(EINVAL));
        assert!(take(&calls).is_empty());
        // Dropping the PD and CQ handles frees nothing: the QP and the MR use them.
        drop(pd);
        drop(cq);
        assert!(take(&calls).is_empty());
        drop(qp);
        assert_eq!(&take(&calls)[..], &["destroy_qp", "destroy_cq"]);
        drop(mr);
        assert_eq!(&take(&calls)[..], &["dereg_mr", "dealloc_pd"]);
        assert_eq!(
            [ResType::Pd, ResType::Cq, ResType::Qp, ResType::Mr].map(|t| r.count(t)),
            [0, 0, 0, 0]
        );
        drop(dev);
        drop(reg);
        Ok(())
    }

    #[test]
    fn buffers_are_bounds_checked_and_polls_too() -> Result {
        let calls: Calls = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        // No post_send or post_recv: a device, but not a kernel verbs provider.
        assert!(!dev.kverbs_provider());
        assert_eq!(DmaBuffer::alloc(&dev, 0).err(), Some(EINVAL));
        assert_eq!(
            DmaBuffer::alloc(&dev, DMA_BUFFER_MAX + 1).err(),
            Some(EINVAL)
        );
        assert!(take(&calls).is_empty());
        let buf = DmaBuffer::alloc(&dev, 64)?;
        buf.write(60, b"abcd")?;
        let mut out = [0u8; 4];
        buf.read(60, &mut out)?;
        assert_eq!(&out, b"abcd");
        // Past the end (and overflowing offsets) never reach the driver.
        assert_eq!(buf.write(61, b"abcd"), Err(EINVAL));
        assert_eq!(buf.read(usize::MAX, &mut out), Err(EINVAL));
        assert_eq!(buf.sge(32, 33, 7).err(), Some(EINVAL));
        let sge = buf.sge(32, 32, 7)?;
        assert_eq!((sge.addr, sge.length, sge.lkey), (0x1020, 32, 7));
        // A driver claiming more completions than the room it had is caught.
        let cq = Cq::create(
            &dev,
            &CqInit {
                cqe: 4,
                comp_vector: 0,
            },
            None,
        )?;
        let mut wc = [WorkCompletion::default(); 2];
        assert_eq!(cq.poll(&mut wc), Err(EIO));
        drop(cq);
        drop(buf);
        drop(dev);
        drop(reg);
        Ok(())
    }

    #[test]
    fn flags_have_the_c_values() {
        use QpAttrField as F;
        let all = Access::LocalWrite | Access::RemoteWrite | Access::RemoteRead;
        assert_eq!(u32::from(all | Access::RemoteAtomic), 0xf);
        assert!(all.contains(Access::RemoteRead) && !all.contains(Access::RemoteAtomic));
        assert_eq!(u32::from(AccessFlags::default()), 0);
        assert_eq!(u32::from(QpAttrMask::from(F::DestQpn)), 1 << 20);
        assert_eq!(
            u32::from(F::State | F::MinRnrTimer | F::Av),
            1 | (1 << 15) | (1 << 7)
        );
        // A mask holds only fields `QpAttr` has: complementing never sets another bit.
        assert_eq!(QpAttrMask::all_bits(), 0x13_bff9);
        assert_eq!(u32::from(!QpAttrMask::empty()), QpAttrMask::all_bits());
        assert_eq!(
            u64::from(DeviceCap::BadPkeyCntr | DeviceCap::CcDmaBounce),
            2 | (1 << 41)
        );
        assert_eq!(u64::from(DeviceCapFlags::default()), 0);
    }
}
