// SPDX-License-Identifier: GPL-2.0

//! What an RDMA driver implements ([`DeviceOps`]) and how the core calls it: with the driver's
//! type erased once per device (`DynOps`) and once per verbs object (the core keeps each PD, CQ,
//! QP and MR as a boxed `Typed<T, T::Qp>` etc., so a post or a poll is one indirect call into
//! the driver, which gets its own object type back).

pub use crate::verbs::types::NoVerbs;
use crate::{
    attrs::{DeviceAttr, FwVersion, Gid, LinkLayer, NodeDesc, PortAttr, PortImmutable},
    device::events::EventNotifier,
    hw_stats::HwStatsDesc,
    mad::types::{Mad, MadWc},
    user::spec::{DriverAttrs, DriverMethod, DriverUObject, MethodAttrs},
    user::udata::Udata,
    verbs::prepared::{PreparedImage, PreparedSend},
    verbs::types::{
        AccessFlags, AhAttr, CqInit, CqNotifier, NewMr, NewQp, QpAttr, QpAttrMask, QpCap,
        QpInitDriver, SrqAttr, SrqAttrMask, UserMrInit,
    },
    verbs::wr::{AhObject, MrObject, PostError, RecvWr, SendWr, WorkCompletion},
};
use core::{any::Any, marker::PhantomData, mem::ManuallyDrop, ops::Deref, ptr};
use kernel::{
    alloc::Flags,
    error::VTABLE_DEFAULT_ERROR,
    mm::virt::VmaNew,
    net::route::NetDevice,
    prelude::*,
    sync::{aref::ARef, Arc},
    sysfs_attrs::{Attribute, ShowBuffer},
    user_mmap::UserMaps,
};

/// The driver's side of a buffer: memory at a device address. The core checks every range
/// before calling `read` or `write`.
pub trait DmaMemory: Send + Sync {
    /// The address the device uses for byte 0.
    fn dma_addr(&self) -> u64;

    /// Size in bytes.
    fn len(&self) -> usize;

    /// Whether the buffer has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `out.len()` bytes at `offset` out of the buffer.
    fn read(&self, offset: usize, out: &mut [u8]) -> Result;

    /// Copies `data` into the buffer at `offset`.
    fn write(&self, offset: usize, data: &[u8]) -> Result;
}

/// What an RDMA driver implements for its device (C's `ib_device_ops`).
///
/// `query_device`, `query_port` and `get_port_immutable` are mandatory, as in C. The others are
/// optional; a device lacking any of the verbs C lists as mandatory for kernel verbs still
/// registers, but is not a kernel verbs provider.
///
/// Each verbs object's driver state has the driver's own type (`Self::Pd`, `Self::Cq`,
/// `Self::Qp`, `Self::Mr`): the driver makes it in the creating verb, gets it back by reference
/// in every later verb on the object (and the states of the objects it uses, such as a QP's PD
/// and CQs) and by value in the destroying verb, which the core calls once nothing uses the
/// object any more. A driver without kernel verbs names [`NoVerbs`] for all of them (and one
/// without SRQs or AHs for `Srq` and `Ah`).
///
/// # Atomic context
///
/// `post_send`, `post_recv`, `post_srq_recv`, `poll_cq` and `req_notify_cq` may be called in
/// atomic context (from a completion handler, under a spinlock, in softirq), as in C: they must
/// not sleep, take a sleeping lock, allocate with `GFP_KERNEL` or issue a firmware command.
/// Every other verb is called in process context and may sleep.
///
/// # Lifetime
///
/// The operations may borrow what lives as long as the driver's binding to its bus device
/// (`'bound`: mlx5_ib's keep the function's `Mlx5Device`), registered with
/// [`crate::device::BoundRegistration`]; the core drops them before the binding ends. The
/// objects' states (`Self::Pd`, ...) own what they hold.
#[vtable]
pub trait DeviceOps: Send + Sync {
    /// The driver's state of a protection domain ([`NoVerbs`] for a driver without verbs).
    type Pd: Send + Sync;

    /// The driver's state of a completion queue.
    type Cq: Send + Sync;

    /// The driver's state of a queue pair.
    type Qp: Send + Sync;

    /// The driver's state of a memory region.
    type Mr: Send + Sync;

    /// The driver's state of a shared receive queue.
    type Srq: Send + Sync;

    /// The driver's state of an address handle. A UD send gets it back from its work request
    /// with [`SendWrs::ah`].
    type Ah: Send + Sync;

    /// The driver's state of a user context (C's `mlx5_ib_ucontext`): what a process that
    /// opened the device's uverbs file gets once.
    type UContext: Send + Sync;

    /// The device's attributes; called once, at registration.
    fn query_device(&self) -> Result<DeviceAttr>;

    /// The device's attributes for user space (C's `query_device` with the driver's part of
    /// `EX_QUERY_DEVICE`): the driver answers `udata` too. Without it, the attributes of
    /// [`DeviceOps::query_device`] and no driver data.
    fn query_device_udata(&self, _udata: &Udata) -> Result<DeviceAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// A user context (C's `alloc_ucontext`), with the driver's request and response in
    /// `udata`. Process context.
    fn alloc_ucontext(&self, _udata: &Udata) -> Result<Self::UContext> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Frees a user context (C's `dealloc_ucontext`).
    fn dealloc_ucontext(&self, _ctx: Self::UContext) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The driver's own ioctl methods (C's driver `uapi_definition`s), run by
    /// [`DeviceOps::driver_method`].
    const DRIVER_METHODS: &'static [DriverMethod] = &[];

    /// Attributes the driver adds to the core's methods (C's `ADD_UVERBS_ATTRIBUTES_SIMPLE`);
    /// today the core hands those of QUERY_CONTEXT to [`DeviceOps::query_ucontext`].
    const DRIVER_ATTRS: &'static [DriverAttrs] = &[];

    /// Writes user context `ctx`'s driver data to the attributes the driver added to
    /// QUERY_CONTEXT (C's `ops.query_ucontext`, what `ibv_import_device` reads). Process
    /// context.
    fn query_ucontext(&self, _ctx: &Self::UContext, _attrs: &dyn MethodAttrs) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Runs driver method `m` (one of [`DeviceOps::DRIVER_METHODS`]) in user context `ctx`,
    /// its attributes checked against its spec; returns the new object of a method that makes
    /// one. Process context.
    fn driver_method(
        &self,
        _ctx: &Self::UContext,
        _m: &DriverMethod,
        _attrs: &dyn MethodAttrs,
    ) -> Result<Option<DriverUObject>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Maps device memory of user context `ctx` into `vma` (C's `ops.mmap`), through `maps`,
    /// which takes the mappings back when the device goes. The VMA's offset says what. Called
    /// with the mmap lock held: it must not wait for anything that pins user memory.
    fn mmap(&self, _ctx: &Self::UContext, _vma: &VmaNew, _maps: &Arc<UserMaps>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// A port's current attributes (`port` counts from 1).
    fn query_port(&self, port: u32) -> Result<PortAttr>;

    /// A port's immutable data; called once per port, at registration.
    fn get_port_immutable(&self, port: u32) -> Result<PortImmutable>;

    /// GID `index` of `port` (skipped when absent, as in C).
    fn query_gid(&self, _port: u32, _index: u32) -> Result<Gid> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// P_Key `index` of `port` (needed when the port has a P_Key table).
    fn query_pkey(&self, _port: u32, _index: u16) -> Result<u16> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The firmware version as users see it (`fw_ver`); empty when absent.
    fn fw_version(&self) -> FwVersion {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The link layer of `port`; InfiniBand when absent, as C's `rdma_port_get_link_layer`
    /// for a CA.
    fn get_link_layer(&self, _port: u32) -> LinkLayer {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets the node description (C's `modify_device` with `IB_DEVICE_MODIFY_NODE_DESC`); the
    /// core keeps the new text once the driver accepts it. `EOPNOTSUPP` when absent.
    fn modify_node_desc(&self, _desc: &NodeDesc) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Processes a management datagram addressed to `port` (C's `process_mad`): `wc` is the
    /// completion it came with (`None` for the core's own queries, such as the sysfs
    /// counters), `inp` the MAD; a reply goes into `out` (zeroed by the caller). Returns
    /// [`crate::mad::types::result`] bits. May sleep (a firmware command).
    fn process_mad(
        &self,
        _flags: u32,
        _port: u32,
        _wc: Option<&MadWc>,
        _inp: &Mad,
        _out: &mut Mad,
    ) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets and clears port capability bits (C's `modify_port` with `set_port_cap_mask` and
    /// `clr_port_cap_mask`), as `issmN` does for `IsSM`.
    fn modify_port_caps(&self, _port: u32, _set: u32, _clear: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The user-verbs ABI the driver serves through ib_uverbs (C's `ops.uverbs_abi_ver` and
    /// `ops.driver_id`); `None` for a driver without user verbs, whose devices get no
    /// `uverbsN`.
    const UVERBS: Option<UverbsAbi> = None;

    /// Files the driver adds to the device's sysfs directory (C's `ops.device_group`, e.g.
    /// mlx5's `hw_rev`); their callbacks get the driver's data and the file's position here.
    fn device_attrs() -> &'static [Attribute<Self>]
    where
        Self: Sized + 'static,
    {
        &[]
    }

    /// A PD for user space (C's `alloc_pd` with the driver's request and response in
    /// `udata`). Without it, [`DeviceOps::alloc_pd`] and no driver data.
    fn alloc_user_pd(&self, _udata: &Udata) -> Result<Self::Pd> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Allocates a protection domain.
    fn alloc_pd(&self) -> Result<Self::Pd> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Frees a protection domain (nothing uses it any more).
    fn dealloc_pd(&self, _pd: Self::Pd) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a completion queue, for a kernel consumer (`user` is `None`: the driver makes
    /// its ring, which the kernel polls) or for a user context (C's `create_user_cq`: its ring
    /// and doorbell record described by the driver's request in `udata`, which the driver
    /// answers; user space polls and arms it). Completion and error events go to `notifier`.
    /// Process context.
    fn create_cq(
        &self,
        _init: &CqInit,
        _notifier: &CqNotifier,
        _user: Option<UserData<'_, Self::UContext>>,
    ) -> Result<Self::Cq> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Entries `cq` holds as the driver made it (C's `ib_cq.cqe`, which drivers set, often
    /// rounded up; what user space is answered); what the consumer asked for when absent.
    fn cq_size(&self, _cq: &Self::Cq) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Gives a completion queue room for `cqe` completions, keeping those not polled yet (C's
    /// `resize_user_cq`; a user CQ's new ring described by the driver's request in `udata`);
    /// [`DeviceOps::cq_size`] then says what the driver made. Process context; the core
    /// serializes nothing: the driver orders a resize with polls and other resizes.
    fn resize_cq(&self, _cq: &Self::Cq, _cqe: u32, _udata: Option<&Udata>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a completion queue (no QP uses it any more).
    fn destroy_cq(&self, _cq: Self::Cq) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Arms a completion queue for one completion event (from the kernel: a kernel consumer's
    /// CQ, or a user CQ of a driver whose library asks the kernel, `UverbsAbi::data_path_cmds`).
    fn req_notify_cq(&self, _cq: &Self::Cq, _solicited: bool) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a queue pair in `pd`, with the CQs and SRQ `init` names (all of this device and,
    /// for a user QP, of the same user context), for a kernel consumer (`user` is `None`: the
    /// driver makes its rings) or for a user context (C's `create_qp` with `udata`: its rings
    /// and doorbell record described by the driver's request, which the driver answers; the
    /// core checked the sizes against the device's limits). Returns the QP, its number and its
    /// queue sizes as made (C's `init_attr->cap` after `create_qp`, what user space is
    /// answered).
    fn create_qp(
        &self,
        _pd: &Self::Pd,
        _init: &QpInitDriver<'_, Self::Cq, Self::Srq>,
        _user: Option<UserData<'_, Self::UContext>>,
    ) -> Result<NewQp<Self::Qp>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The queue sizes of `qp` as a query reports them (C's `ib_qp_init_attr.cap` of
    /// `query_qp`: for a kernel QP the sizes made, often rounded up; a user QP's as the driver
    /// says); what the consumer asked for when absent.
    fn qp_cap(&self, _qp: &Self::Qp) -> QpCap {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Applies a modify the core has checked against the QP state machine (a user QP's with
    /// the driver's request and response in `udata`).
    fn modify_qp(
        &self,
        _qp: &Self::Qp,
        _attr: &QpAttr,
        _mask: QpAttrMask,
        _udata: Option<&Udata>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The QP's attributes.
    fn query_qp(&self, _qp: &Self::Qp) -> Result<QpAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a queue pair.
    fn destroy_qp(&self, _qp: Self::Qp) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Attaches the UD QP `qp` to the multicast group `gid` (LID `lid`, checked by the core): it
    /// receives the datagrams sent to the group (C's `attach_mcast`).
    fn attach_mcast(&self, _qp: &Self::Qp, _gid: &Gid, _lid: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Detaches `qp` from the multicast group `gid` (C's `detach_mcast`).
    fn detach_mcast(&self, _qp: &Self::Qp, _gid: &Gid, _lid: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The DMA memory region of `pd` with `access` rights.
    fn get_dma_mr(&self, _pd: &Self::Pd, _access: AccessFlags) -> Result<NewMr<Self::Mr>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Registers the calling process's memory `init` in `pd` (C's `reg_user_mr`): the driver
    /// pins and maps it, and answers `udata`. Process context.
    fn reg_user_mr(
        &self,
        _pd: &Self::Pd,
        _init: &UserMrInit,
        _udata: &Udata,
    ) -> Result<NewMr<Self::Mr>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Deregisters a memory region.
    fn dereg_mr(&self, _mr: Self::Mr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Queues send work requests on a QP, in order; stops at the first it cannot queue. The
    /// driver finds its own state of a UD request's AH with [`SendWrs::ah`].
    fn post_send(&self, _qp: &Self::Qp, _wrs: SendWrs<'_, Self>) -> Result<(), PostError> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Checks and encodes a send work request (never a UD one) for a QP once, as
    /// `post_send` would check and write it (`crate::verbs::prepared`). Never sleeps.
    fn prepare_send(&self, _qp: &Self::Qp, _wr: &SendWr<'_>) -> Result<PreparedImage> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Queues prepared send requests on a QP (each prepared by `prepare_send` for this QP), in
    /// order; stops at the first it cannot queue.
    fn post_prepared(&self, _qp: &Self::Qp, _wrs: &[PreparedSend]) -> Result<(), PostError> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Queues receive work requests on a QP, in order; stops at the first it cannot queue.
    fn post_recv(&self, _qp: &Self::Qp, _wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Moves up to `wc.len()` completions of a CQ into `wc`, oldest first; returns how many.
    fn poll_cq(&self, _cq: &Self::Cq, _wc: &mut [WorkCompletion]) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a shared receive queue in `pd` (`attr.srq_limit` armed if not 0), for a kernel
    /// consumer (`user` is `None`: the driver makes its ring; completions of its receives go
    /// to the CQ of the QP that consumed them) or for a user context (C's `create_srq` with
    /// `udata`: its ring and doorbell record described by the driver's request, which the
    /// driver answers; user space posts to it). Its asynchronous events (`SrqLimitReached`,
    /// `SrqErr`) go to `events`. Returns the SRQ and its sizes as made (C writes them back
    /// into the caller's `ib_srq_attr`). Process context.
    fn create_srq(
        &self,
        _pd: &Self::Pd,
        _attr: &SrqAttr,
        _events: &EventNotifier,
        _user: Option<UserData<'_, Self::UContext>>,
    ) -> Result<(Self::Srq, SrqAttr)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Resizes an SRQ or arms its limit (C's `modify_srq`; a user SRQ's with the driver's
    /// request in `udata`).
    fn modify_srq(
        &self,
        _srq: &Self::Srq,
        _attr: &SrqAttr,
        _mask: SrqAttrMask,
        _udata: Option<&Udata>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// An SRQ's attributes.
    fn query_srq(&self, _srq: &Self::Srq) -> Result<SrqAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys an SRQ (no QP uses it any more).
    fn destroy_srq(&self, _srq: Self::Srq) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Queues receive work requests on an SRQ of a kernel consumer, in order; stops at the
    /// first it cannot queue.
    fn post_srq_recv(&self, _srq: &Self::Srq, _wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an address handle in `pd` (its port checked by the core). It must not sleep:
    /// C callers create AHs under spinlocks (C's `rdma_create_ah` without
    /// `RDMA_CREATE_AH_SLEEPABLE`; ib_cm does so for each MAD it sends).
    fn create_ah(&self, _pd: &Self::Pd, _attr: &AhAttr) -> Result<Self::Ah> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys an address handle.
    fn destroy_ah(&self, _ah: Self::Ah) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Allocates `len` bytes of memory the device can reach, for consumers' work requests
    /// (the core hands it to consumers as a `DmaBuffer`).
    fn alloc_dma_buffer(&self, _len: usize) -> Result<KBox<dyn DmaMemory>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Describes `port`'s hardware counters (C's `alloc_hw_port_stats`); called once per port
    /// at registration. A driver with it also has [`DeviceOps::get_hw_stats`]; with both, the
    /// port gets `hw_counters` in sysfs and `rdma stat show` reads them. `EOPNOTSUPP` says
    /// this device has none (C's drivers install the operation only for devices that do).
    fn alloc_hw_port_stats(&self, _port: u32) -> Result<HwStatsDesc> {
        Err(EOPNOTSUPP)
    }

    /// Reads `port`'s hardware counters into `values` (as many as described, in that order)
    /// (C's `get_hw_stats`): `index` is the counter the core wants (its number, `values.len()`,
    /// for all of them); returns how many counters were read from `index` on as C's drivers
    /// count them: the core treats the values as fresh for the lifespan only when that is
    /// `values.len()`. Process context (a firmware command).
    fn get_hw_stats(&self, _port: u32, _values: &mut [u64], _index: usize) -> Result<usize> {
        Err(EOPNOTSUPP)
    }
}

/// Whether a driver has every verb C requires of a kernel verbs provider
/// (`ib_device_check_mandatory`), except `reg_user_mr` (there are no user verbs yet) and with
/// [`DeviceOps::alloc_dma_buffer`] (how Rust consumers get memory for work requests).
pub(crate) fn is_kverbs_provider<T: DeviceOps>() -> bool {
    T::HAS_ALLOC_PD
        && T::HAS_DEALLOC_PD
        && T::HAS_CREATE_QP
        && T::HAS_MODIFY_QP
        && T::HAS_DESTROY_QP
        && T::HAS_POST_SEND
        && T::HAS_POST_RECV
        && T::HAS_CREATE_CQ
        && T::HAS_DESTROY_CQ
        && T::HAS_POLL_CQ
        && T::HAS_REQ_NOTIFY_CQ
        && T::HAS_GET_DMA_MR
        && T::HAS_DEREG_MR
        && T::HAS_ALLOC_DMA_BUFFER
}

/// `$call` if the driver has the verb (`$has`), else `EOPNOTSUPP` (in the verb's error type).
/// `$has` is a constant: the test costs nothing.
macro_rules! optional_op {
    ($has:expr, $call:expr) => {
        if $has {
            $call
        } else {
            Err(EOPNOTSUPP.into())
        }
    };
}

/// What user space needs to know of a driver's user verbs before it opens the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UverbsAbi {
    /// The driver's ABI version (`uverbsN/abi_version`, netlink's `CHARDEV_ABI`; mlx5: 1).
    pub version: u32,
    /// The driver id user space matches its provider with (`RDMA_DRIVER_*`; mlx5: 1), sent as
    /// netlink's `UVERBS_DRIVER_ID`.
    pub driver_id: u32,
    /// The data-path write() commands the driver serves, as bits of their numbers (C's
    /// `uverbs_cmd_mask` beyond its default: [`CMD_REQ_NOTIFY_CQ`], [`CMD_POST_SEND`]); 0 for a
    /// driver whose library posts and polls alone (mlx5).
    pub data_path_cmds: u64,
}

/// `IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`: arm a user CQ's completion event in the kernel.
pub const CMD_REQ_NOTIFY_CQ: u32 = 23;
/// `IB_USER_VERBS_CMD_POST_SEND`: start a user QP's send work in the kernel.
pub const CMD_POST_SEND: u32 = 28;

/// The operations the core calls on a registered device, with the driver's type erased once
/// per device.
pub(crate) trait DynOps: Send + Sync {
    /// `DeviceOps::UVERBS`.
    fn uverbs(&self) -> Option<UverbsAbi>;
    /// `DeviceOps::DRIVER_METHODS`.
    fn driver_methods(&self) -> &'static [DriverMethod];
    /// `DeviceOps::DRIVER_ATTRS`.
    fn driver_attrs(&self) -> &'static [DriverAttrs];
    /// A new PD (`DeviceOps::alloc_pd`).
    fn alloc_pd(&self) -> Result<KBox<dyn PdObject>>;
    /// A new CQ (`DeviceOps::create_cq`).
    fn create_cq(&self, init: &CqInit, notifier: &CqNotifier) -> Result<KBox<dyn CqObject>>;
    /// A new DMA buffer (`DeviceOps::alloc_dma_buffer`).
    fn alloc_dma_buffer(&self, len: usize) -> Result<KBox<dyn DmaMemory>>;
    /// A new user context (`DeviceOps::alloc_ucontext`).
    fn alloc_ucontext(&self, udata: &Udata) -> Result<KBox<dyn UContextObject>>;
    /// A new PD for user space in the context `ctx` (`DeviceOps::alloc_user_pd`, or
    /// `alloc_pd`).
    fn alloc_user_pd(&self, ctx: &dyn UContextObject, udata: &Udata) -> Result<KBox<dyn PdObject>>;
    /// `DeviceOps::query_device_udata`, or `query_device` without driver data.
    fn query_device_udata(&self, udata: &Udata) -> Result<DeviceAttr>;
    /// `DeviceOps::query_port`.
    fn query_port(&self, port: u32) -> Result<PortAttr>;
    /// `DeviceOps::query_gid`, `None` when the driver has none.
    fn query_gid(&self, port: u32, index: u32) -> Option<Result<Gid>>;
    /// `DeviceOps::query_pkey` (`EOPNOTSUPP` when absent).
    fn query_pkey(&self, port: u32, index: u16) -> Result<u16>;
    /// `DeviceOps::fw_version` (empty when absent).
    fn fw_version(&self) -> FwVersion;
    /// `DeviceOps::get_link_layer` (InfiniBand when absent).
    fn link_layer(&self, port: u32) -> LinkLayer;
    /// `DeviceOps::modify_node_desc` (`EOPNOTSUPP` when absent).
    fn modify_node_desc(&self, desc: &NodeDesc) -> Result;
    /// Whether the driver has `DeviceOps::process_mad`.
    fn has_process_mad(&self) -> bool;
    /// Whether the driver has `DeviceOps::query_ucontext`.
    fn has_query_ucontext(&self) -> bool;
    /// `DeviceOps::process_mad` ([`crate::mad::types::result::FAILURE`] when absent).
    fn process_mad(
        &self,
        flags: u32,
        port: u32,
        wc: Option<&MadWc>,
        inp: &Mad,
        out: &mut Mad,
    ) -> u32;
    /// `DeviceOps::modify_port_caps` (`EOPNOTSUPP` when absent).
    fn modify_port_caps(&self, port: u32, set: u32, clear: u32) -> Result;
    /// Name, mode and writability of the driver's sysfs attribute `i`.
    fn device_attr(&self, i: usize) -> Option<(&'static CStr, u16, bool)>;
    /// Reads the driver's sysfs attribute `i`.
    fn device_attr_show(&self, i: u32, buf: &mut ShowBuffer<'_>) -> Result;
    /// Writes the driver's sysfs attribute `i`.
    fn device_attr_store(&self, i: u32, data: &[u8]) -> Result;
    /// Whether the driver has hardware counters (`alloc_hw_port_stats` and `get_hw_stats`).
    fn has_hw_stats(&self) -> bool;
    /// `DeviceOps::alloc_hw_port_stats`.
    fn alloc_hw_port_stats(&self, port: u32) -> Result<HwStatsDesc>;
    /// `DeviceOps::get_hw_stats`.
    fn get_hw_stats(&self, port: u32, values: &mut [u64], index: usize) -> Result<usize>;
    /// Whether the driver checks QP transitions itself (C drivers: `ib_modify_qp_is_ok` from
    /// their `modify_qp`, or their transport's own rules); the core checks them for its own.
    fn checks_qp_transitions(&self) -> bool {
        false
    }
    /// A C driver's own device structure (what its iWARP connection ops are called with:
    /// `c_abi/face_iw.rs`); null for the core's drivers.
    fn c_structure(&self) -> *mut kernel::bindings::ib_device {
        core::ptr::null_mut()
    }
    /// The network device of `port` (C's `ib_device_get_netdev`), held: a C driver's, set with
    /// `ib_device_set_netdev`; none for the core's drivers.
    fn netdev(&self, _port: u32) -> Option<ARef<NetDevice>> {
        None
    }
}

/// A driver's operations as the core keeps them: shared with every object the device makes.
pub(crate) struct DeviceImpl<T>(Arc<T>);

impl<T: DeviceOps + 'static> DeviceImpl<T> {
    /// The driver's operations, type-erased.
    pub(crate) fn erase(ops: Arc<T>) -> Result<KBox<dyn DynOps>> {
        Ok(KBox::new(Self(ops), GFP_KERNEL)?)
    }
}

/// A protection domain's driver state, with the driver's type erased once.
pub(crate) trait PdObject: Send + Sync {
    /// The driver's state as `Any`, for a driver method to find its PD state ([`method_pd`]).
    fn as_any(&self) -> &dyn Any;
    /// Creates a QP in this PD with `init`'s CQs, which must be CQs of this PD's device.
    fn create_qp(
        &self,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
    ) -> Result<NewQp<KBox<dyn QpObject>>>;
    /// The PD's DMA memory region.
    fn get_dma_mr(&self, access: AccessFlags) -> Result<NewMr<KBox<dyn MrObject>>>;
    /// A memory region of user memory (`DeviceOps::reg_user_mr`).
    fn reg_user_mr(&self, init: &UserMrInit, udata: &Udata) -> Result<NewMr<KBox<dyn MrObject>>>;
    /// A fast-registration MR of this PD for up to `max_num_sg` pages (C's `ib_alloc_mr` with
    /// `IB_MR_TYPE_MEM_REG`); `EOPNOTSUPP` for drivers without it.
    fn alloc_mr(&self, _max_num_sg: u32) -> Result<NewMr<KBox<dyn MrObject>>> {
        Err(EOPNOTSUPP)
    }
    /// A new SRQ in this PD (`DeviceOps::create_srq`), for the kernel or for the user context
    /// of `user`, which must be of this PD's driver; with its sizes as made.
    fn create_srq(
        &self,
        attr: &SrqAttr,
        events: &EventNotifier,
        user: Option<(&dyn UContextObject, &Udata)>,
    ) -> Result<(KBox<dyn SrqObject>, SrqAttr)>;
    /// A new AH in this PD, its memory allocated with `flags` (`GFP_ATOMIC` for a caller that
    /// cannot sleep).
    fn create_ah(&self, attr: &AhAttr, flags: Flags) -> Result<KBox<dyn AhObject>>;
    /// A user QP in this PD (`DeviceOps::create_qp` with the context and `udata`): `ctx` and
    /// the CQs must be of this PD's driver.
    fn create_user_qp(
        &self,
        ctx: &dyn UContextObject,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        udata: &Udata,
    ) -> Result<NewQp<Arc<dyn QpObject>>>;
    /// A user AH in this PD (C's `create_user_ah`, which the core's drivers do not have:
    /// `EOPNOTSUPP` by default): `ctx` must be of this PD's driver.
    fn create_user_ah(
        &self,
        _ctx: &dyn UContextObject,
        _attr: &AhAttr,
        _udata: &Udata,
    ) -> Result<KBox<dyn AhObject>> {
        Err(EOPNOTSUPP)
    }
}

/// A shared receive queue's driver state (a kernel consumer's or a user context's), with the
/// driver's type erased once.
pub(crate) trait SrqObject: Send + Sync {
    /// `DeviceOps::modify_srq`.
    fn modify(&self, attr: &SrqAttr, mask: SrqAttrMask, udata: Option<&Udata>) -> Result;
    /// `DeviceOps::query_srq`.
    fn query(&self) -> Result<SrqAttr>;
    /// `DeviceOps::post_srq_recv`.
    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError>;
    /// The driver's state as `Any`, for QP creation to find the driver's SRQ state.
    fn as_any(&self) -> &dyn Any;
}

/// A completion queue's driver state, with the driver's type erased once.
pub(crate) trait CqObject: Send + Sync {
    /// `DeviceOps::req_notify_cq`.
    fn req_notify(&self, solicited: bool) -> Result;
    /// `DeviceOps::poll_cq`.
    fn poll(&self, wc: &mut [WorkCompletion]) -> Result<usize>;
    /// `DeviceOps::cq_size`, `None` when the driver has none.
    fn size(&self) -> Option<u32>;
    /// `DeviceOps::resize_cq` (a user CQ's with the driver's request in `udata`).
    fn resize(&self, cqe: u32, udata: Option<&Udata>) -> Result;
    /// The driver's state as `Any`, for QP creation to find the driver's CQ state.
    fn as_any(&self) -> &dyn Any;
}

/// A queue pair's driver state, with the driver's type erased once: each verb on it is one
/// indirect call into the driver's code.
pub(crate) trait QpObject: Send + Sync {
    /// `DeviceOps::modify_qp` (a user QP's with the driver's request in `udata`).
    fn modify(&self, attr: &QpAttr, mask: QpAttrMask, udata: Option<&Udata>) -> Result;
    /// `DeviceOps::query_qp`.
    fn query(&self) -> Result<QpAttr>;
    /// `DeviceOps::post_send`; for a user QP of a driver whose library asks the kernel to
    /// start its send queue (the POST_SEND command: C drivers of software devices), usually
    /// with no request.
    ///
    /// # Safety
    ///
    /// The AH of every UD request of `wrs` was made on this QP's device (the core's one "same
    /// device" check before a post, `crate::verbs::Qp::post_send`).
    unsafe fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<(), PostError>;
    /// `DeviceOps::prepare_send`.
    fn prepare_send(&self, wr: &SendWr<'_>) -> Result<PreparedImage>;
    /// `DeviceOps::post_prepared`.
    fn post_prepared(&self, wrs: &[PreparedSend]) -> Result<(), PostError>;
    /// `DeviceOps::post_recv`.
    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError>;
    /// `DeviceOps::qp_cap` (the sizes a query reports), `None` when the driver has none.
    fn cap(&self) -> Option<QpCap>;
    /// [`QpObject::query`] and [`QpObject::cap`] at once, for a driver that answers both in
    /// one call (C's `query_qp` fills the attributes and the sizes).
    fn query_with_cap(&self) -> Result<(QpAttr, Option<QpCap>)> {
        Ok((self.query()?, self.cap()))
    }
    /// Whether the driver has `DeviceOps::attach_mcast`.
    fn has_mcast(&self) -> bool;
    /// `DeviceOps::attach_mcast`.
    fn attach_mcast(&self, gid: &Gid, lid: u16) -> Result;
    /// `DeviceOps::detach_mcast`.
    fn detach_mcast(&self, gid: &Gid, lid: u16) -> Result;
}

/// A user context's driver state, with the driver's type erased once.
pub(crate) trait UContextObject: Send + Sync {
    /// The driver's state as `Any`, for user QP creation to find the driver's context state.
    fn as_any(&self) -> &dyn Any;
    /// `DeviceOps::driver_method`.
    fn driver_method(
        &self,
        m: &DriverMethod,
        attrs: &dyn MethodAttrs,
    ) -> Result<Option<DriverUObject>>;
    /// `DeviceOps::query_ucontext` (`EOPNOTSUPP` without it, C's answer).
    fn query(&self, attrs: &dyn MethodAttrs) -> Result;
    /// `DeviceOps::mmap` (`ENODEV` without it, as the VFS answers for a file without `mmap`).
    fn mmap(&self, vma: &VmaNew, maps: &Arc<UserMaps>) -> Result;
    /// A CQ of this context (`DeviceOps::create_cq` with the context and `udata`;
    /// `EOPNOTSUPP` without it).
    fn create_cq(
        &self,
        init: &CqInit,
        udata: &Udata,
        notifier: &CqNotifier,
    ) -> Result<KBox<dyn CqObject>>;
}

/// One verbs object of driver `T`: the driver's state `O` and the driver's operations. Dropping
/// it gives the state back to the driver's destroying verb.
struct Typed<T: DeviceOps + 'static, O: Send + Sync + 'static> {
    ops: Arc<T>,
    obj: ManuallyDrop<O>,
    /// The destroying verb (`EOPNOTSUPP` when the driver lacks it) and its name for the log.
    destroy: fn(&T, O) -> Result,
    what: &'static str,
    /// The QP number, for the log.
    num: Option<u32>,
}

impl<T: DeviceOps + 'static, O: Send + Sync + 'static> Typed<T, O> {
    fn new(ops: Arc<T>, obj: O, destroy: fn(&T, O) -> Result, what: &'static str) -> Self {
        Self {
            ops,
            obj: ManuallyDrop::new(obj),
            destroy,
            what,
            num: None,
        }
    }
}

impl<T: DeviceOps + 'static, O: Send + Sync + 'static> Drop for Typed<T, O> {
    fn drop(&mut self) {
        // SAFETY: `obj` is not used again: this is the object's destructor.
        let obj = unsafe { ManuallyDrop::take(&mut self.obj) };
        if let Err(e) = (self.destroy)(&self.ops, obj) {
            match self.num {
                Some(n) => pr_warn!("{} {:#x} failed: err {}\n", self.what, n, e.to_errno()),
                None => pr_warn!("{} failed: err {}\n", self.what, e.to_errno()),
            }
        }
    }
}

fn dealloc_pd<T: DeviceOps + 'static>(ops: &T, pd: T::Pd) -> Result {
    optional_op!(T::HAS_DEALLOC_PD, T::dealloc_pd(ops, pd))
}

fn destroy_cq<T: DeviceOps + 'static>(ops: &T, cq: T::Cq) -> Result {
    optional_op!(T::HAS_DESTROY_CQ, T::destroy_cq(ops, cq))
}

fn destroy_qp<T: DeviceOps + 'static>(ops: &T, qp: T::Qp) -> Result {
    optional_op!(T::HAS_DESTROY_QP, T::destroy_qp(ops, qp))
}

fn dereg_mr<T: DeviceOps + 'static>(ops: &T, mr: T::Mr) -> Result {
    optional_op!(T::HAS_DEREG_MR, T::dereg_mr(ops, mr))
}

fn destroy_srq<T: DeviceOps + 'static>(ops: &T, srq: T::Srq) -> Result {
    optional_op!(T::HAS_DESTROY_SRQ, T::destroy_srq(ops, srq))
}

fn destroy_ah<T: DeviceOps + 'static>(ops: &T, ah: T::Ah) -> Result {
    optional_op!(T::HAS_DESTROY_AH, T::destroy_ah(ops, ah))
}

/// The driver's state of an AH whose driver is `T`.
///
/// # Safety
///
/// `ah` was made by [`PdObject::create_ah`] of a PD whose driver is `T`.
unsafe fn driver_ah<T: DeviceOps>(ah: &dyn AhObject) -> &T::Ah {
    // SAFETY: `state` points to the `T::Ah` inside the `Typed<T, T::Ah>` (the caller's
    // promise), which lives as long as `ah`.
    unsafe { &*ah.state().cast::<T::Ah>() }
}

/// Send work requests on their way to driver `T`'s `DeviceOps::post_send`, which the core
/// checked: the AH of every UD request was made on the QP's device, so it is `T`'s, and the
/// driver reads its own state of it with [`SendWrs::ah`] (no type check, no `unsafe` in the
/// driver). They read as a slice.
pub struct SendWrs<'a, T: DeviceOps + ?Sized> {
    wrs: &'a [SendWr<'a>],
    _driver: PhantomData<fn() -> T>,
}

impl<'a, T: DeviceOps + ?Sized> SendWrs<'a, T> {
    /// The requests `wrs` for a QP of driver `T`.
    ///
    /// # Safety
    ///
    /// The AH of every UD request of `wrs` was made by a PD of a device whose driver is `T`.
    #[inline]
    pub(crate) unsafe fn new(wrs: &'a [SendWr<'a>]) -> Self {
        Self {
            wrs,
            _driver: PhantomData,
        }
    }

    /// The driver's state of the AH of `wr`, one of these requests: `None` when it is not a UD
    /// request, or not one of these.
    #[inline]
    pub fn ah(&self, wr: &SendWr<'_>) -> Option<&'a T::Ah>
    where
        T: Sized,
    {
        let base = self.wrs.as_ptr().addr();
        let at = ptr::from_ref(wr).addr().wrapping_sub(base) / core::mem::size_of::<SendWr<'_>>();
        let own = self.wrs.get(at)?;
        if !ptr::eq(
            ptr::from_ref(own).cast::<()>(),
            ptr::from_ref(wr).cast::<()>(),
        ) {
            return None;
        }
        let ud = own.ud.as_ref()?;
        // SAFETY: `own` is one of the requests, whose AHs are `T`'s (`new`'s contract).
        Some(unsafe { driver_ah::<T>(ud.ah.driver()) })
    }
}

impl<'a, T: DeviceOps + ?Sized> Deref for SendWrs<'a, T> {
    type Target = [SendWr<'a>];

    #[inline]
    fn deref(&self) -> &Self::Target {
        self.wrs
    }
}

/// The user context an object is made for, with the driver's request and response (C's
/// `udata`, whose context the driver finds from it); `None` in its place: a kernel consumer's
/// object.
pub struct UserData<'a, C> {
    /// The driver's state of the user context.
    pub ctx: &'a C,
    /// The driver's request and response.
    pub udata: &'a Udata,
}

impl<C> Clone for UserData<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for UserData<'_, C> {}

/// The driver state `O` of an object, from its state as `Any` (a CQ, SRQ or user context the
/// core passes along with another object: the core checked they are of the same device, whose
/// objects are all its driver's, so the check cannot fail; `EINVAL` if the core broke that
/// rule). The state is the driver's own type, which needs no lifetime of the driver's.
fn driver_obj<O: Send + Sync + 'static>(any: &dyn Any) -> Result<&O> {
    any.downcast_ref::<O>().ok_or(EINVAL)
}

/// Driver `T`'s state of the PD attribute `id` of a driver method names (C's
/// `uverbs_attr_get_obj` and `to_mpd`): `EINVAL` when the method has no such attribute.
pub fn method_pd<T: DeviceOps>(attrs: &dyn MethodAttrs, id: u16) -> Result<&T::Pd>
where
    T::Pd: 'static,
{
    driver_obj::<T::Pd>(attrs.pd_object(id)?)
}

impl<T: DeviceOps + 'static> Typed<T, T::Pd> {
    /// A new MR of this PD's driver, type-erased (on failure it is given back to the driver).
    fn boxed_mr(&self, new: NewMr<T::Mr>) -> Result<NewMr<KBox<dyn MrObject>>> {
        let mr = Typed::new(self.ops.clone(), new.mr, dereg_mr::<T>, "dereg_mr");
        Ok(NewMr {
            mr: KBox::new(mr, GFP_KERNEL)?,
            lkey: new.lkey,
            rkey: new.rkey,
        })
    }
}

impl<T: DeviceOps + 'static> PdObject for Typed<T, T::Pd> {
    fn as_any(&self) -> &dyn Any {
        &*self.obj
    }

    fn create_qp(
        &self,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
    ) -> Result<NewQp<KBox<dyn QpObject>>> {
        let new = self.typed_qp(init, None)?;
        // On failure the QP is dropped, which gives it back to the driver.
        Ok(NewQp {
            qp: KBox::new(new.qp, GFP_KERNEL)?,
            qp_num: new.qp_num,
            cap: new.cap,
        })
    }

    fn get_dma_mr(&self, access: AccessFlags) -> Result<NewMr<KBox<dyn MrObject>>> {
        let new = optional_op!(
            T::HAS_GET_DMA_MR,
            T::get_dma_mr(&self.ops, &self.obj, access)
        )?;
        self.boxed_mr(new)
    }

    fn reg_user_mr(&self, init: &UserMrInit, udata: &Udata) -> Result<NewMr<KBox<dyn MrObject>>> {
        let new = optional_op!(
            T::HAS_REG_USER_MR,
            T::reg_user_mr(&self.ops, &self.obj, init, udata)
        )?;
        self.boxed_mr(new)
    }

    fn create_srq(
        &self,
        attr: &SrqAttr,
        events: &EventNotifier,
        user: Option<(&dyn UContextObject, &Udata)>,
    ) -> Result<(KBox<dyn SrqObject>, SrqAttr)> {
        let user = match user {
            Some((ctx, udata)) => Some(UserData {
                ctx: driver_obj::<T::UContext>(ctx.as_any())?,
                udata,
            }),
            None => None,
        };
        let (srq, made) = optional_op!(
            T::HAS_CREATE_SRQ,
            T::create_srq(&self.ops, &self.obj, attr, events, user)
        )?;
        let srq = Typed::new(self.ops.clone(), srq, destroy_srq::<T>, "destroy_srq");
        Ok((KBox::new(srq, GFP_KERNEL)?, made))
    }

    fn create_ah(&self, attr: &AhAttr, flags: Flags) -> Result<KBox<dyn AhObject>> {
        let ah = optional_op!(T::HAS_CREATE_AH, T::create_ah(&self.ops, &self.obj, attr))?;
        let ah = Typed::new(self.ops.clone(), ah, destroy_ah::<T>, "destroy_ah");
        Ok(KBox::new(ah, flags)?)
    }

    fn create_user_qp(
        &self,
        ctx: &dyn UContextObject,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        udata: &Udata,
    ) -> Result<NewQp<Arc<dyn QpObject>>> {
        let user = UserData {
            ctx: driver_obj::<T::UContext>(ctx.as_any())?,
            udata,
        };
        let new = self.typed_qp(init, Some(user))?;
        let qp: Arc<dyn QpObject> = Arc::new(new.qp, GFP_KERNEL)?;
        Ok(NewQp {
            qp,
            qp_num: new.qp_num,
            cap: new.cap,
        })
    }
}

impl<T: DeviceOps + 'static> Typed<T, T::Pd> {
    /// A QP of this PD made by the driver (`DeviceOps::create_qp`) with `init`'s CQs and SRQ
    /// as the driver's own states, for the kernel or `user`.
    fn typed_qp(
        &self,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        user: Option<UserData<'_, T::UContext>>,
    ) -> Result<NewQp<Typed<T, T::Qp>>> {
        let typed = QpInitDriver {
            qp_type: init.qp_type,
            port: init.port,
            send_cq: driver_obj::<T::Cq>(init.send_cq.as_any())?,
            recv_cq: driver_obj::<T::Cq>(init.recv_cq.as_any())?,
            cap: init.cap,
            sq_sig_all: init.sq_sig_all,
            srq: match init.srq {
                Some(s) => Some(driver_obj::<T::Srq>(s.as_any())?),
                None => None,
            },
            events: init.events,
        };
        let new = optional_op!(
            T::HAS_CREATE_QP,
            T::create_qp(&self.ops, &self.obj, &typed, user)
        )?;
        let mut qp = Typed::new(self.ops.clone(), new.qp, destroy_qp::<T>, "destroy_qp");
        qp.num = Some(new.qp_num);
        Ok(NewQp {
            qp,
            qp_num: new.qp_num,
            cap: new.cap,
        })
    }
}

impl<T: DeviceOps + 'static> SrqObject for Typed<T, T::Srq> {
    fn modify(&self, attr: &SrqAttr, mask: SrqAttrMask, udata: Option<&Udata>) -> Result {
        optional_op!(
            T::HAS_MODIFY_SRQ,
            T::modify_srq(&self.ops, &self.obj, attr, mask, udata)
        )
    }

    fn query(&self) -> Result<SrqAttr> {
        optional_op!(T::HAS_QUERY_SRQ, T::query_srq(&self.ops, &self.obj))
    }

    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        optional_op!(
            T::HAS_POST_SRQ_RECV,
            T::post_srq_recv(&self.ops, &self.obj, wrs)
        )
    }

    fn as_any(&self) -> &dyn Any {
        &*self.obj
    }
}

impl<T: DeviceOps + 'static> AhObject for Typed<T, T::Ah> {
    fn state(&self) -> *const () {
        let state: &T::Ah = &self.obj;
        core::ptr::from_ref(state).cast()
    }
}

impl<T: DeviceOps + 'static> CqObject for Typed<T, T::Cq> {
    fn req_notify(&self, solicited: bool) -> Result {
        optional_op!(
            T::HAS_REQ_NOTIFY_CQ,
            T::req_notify_cq(&self.ops, &self.obj, solicited)
        )
    }

    fn poll(&self, wc: &mut [WorkCompletion]) -> Result<usize> {
        optional_op!(T::HAS_POLL_CQ, T::poll_cq(&self.ops, &self.obj, wc))
    }

    fn size(&self) -> Option<u32> {
        T::HAS_CQ_SIZE.then(|| T::cq_size(&self.ops, &self.obj))
    }

    fn resize(&self, cqe: u32, udata: Option<&Udata>) -> Result {
        optional_op!(
            T::HAS_RESIZE_CQ,
            T::resize_cq(&self.ops, &self.obj, cqe, udata)
        )
    }

    fn as_any(&self) -> &dyn Any {
        &*self.obj
    }
}

impl<T: DeviceOps + 'static> QpObject for Typed<T, T::Qp> {
    fn has_mcast(&self) -> bool {
        T::HAS_ATTACH_MCAST
    }

    fn attach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        optional_op!(
            T::HAS_ATTACH_MCAST,
            T::attach_mcast(&self.ops, &self.obj, gid, lid)
        )
    }

    fn detach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        optional_op!(
            T::HAS_DETACH_MCAST,
            T::detach_mcast(&self.ops, &self.obj, gid, lid)
        )
    }

    fn modify(&self, attr: &QpAttr, mask: QpAttrMask, udata: Option<&Udata>) -> Result {
        optional_op!(
            T::HAS_MODIFY_QP,
            T::modify_qp(&self.ops, &self.obj, attr, mask, udata)
        )
    }

    fn query(&self) -> Result<QpAttr> {
        optional_op!(T::HAS_QUERY_QP, T::query_qp(&self.ops, &self.obj))
    }

    unsafe fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: The AHs of `wrs` are of this QP's device (the caller's promise), whose
        // driver is `T`, so a PD of `T` made them.
        let wrs = unsafe { SendWrs::new(wrs) };
        optional_op!(T::HAS_POST_SEND, T::post_send(&self.ops, &self.obj, wrs))
    }

    fn prepare_send(&self, wr: &SendWr<'_>) -> Result<PreparedImage> {
        optional_op!(
            T::HAS_PREPARE_SEND,
            T::prepare_send(&self.ops, &self.obj, wr)
        )
    }

    fn post_prepared(&self, wrs: &[PreparedSend]) -> Result<(), PostError> {
        optional_op!(
            T::HAS_POST_PREPARED,
            T::post_prepared(&self.ops, &self.obj, wrs)
        )
    }

    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        optional_op!(T::HAS_POST_RECV, T::post_recv(&self.ops, &self.obj, wrs))
    }

    fn cap(&self) -> Option<QpCap> {
        T::HAS_QP_CAP.then(|| T::qp_cap(&self.ops, &self.obj))
    }
}

impl<T: DeviceOps + 'static> MrObject for Typed<T, T::Mr> {}

impl<T: DeviceOps + 'static> UContextObject for Typed<T, T::UContext> {
    fn as_any(&self) -> &dyn Any {
        &*self.obj
    }

    fn driver_method(
        &self,
        m: &DriverMethod,
        attrs: &dyn MethodAttrs,
    ) -> Result<Option<DriverUObject>> {
        optional_op!(
            T::HAS_DRIVER_METHOD,
            T::driver_method(&self.ops, &self.obj, m, attrs)
        )
    }

    fn query(&self, attrs: &dyn MethodAttrs) -> Result {
        optional_op!(
            T::HAS_QUERY_UCONTEXT,
            T::query_ucontext(&self.ops, &self.obj, attrs)
        )
    }

    fn mmap(&self, vma: &VmaNew, maps: &Arc<UserMaps>) -> Result {
        if T::HAS_MMAP {
            T::mmap(&self.ops, &self.obj, vma, maps)
        } else {
            Err(ENODEV)
        }
    }

    fn create_cq(
        &self,
        init: &CqInit,
        udata: &Udata,
        notifier: &CqNotifier,
    ) -> Result<KBox<dyn CqObject>> {
        let user = UserData {
            ctx: &*self.obj,
            udata,
        };
        let cq = optional_op!(
            T::HAS_CREATE_CQ,
            T::create_cq(&self.ops, init, notifier, Some(user))
        )?;
        let cq = Typed::new(self.ops.clone(), cq, destroy_cq::<T>, "destroy_cq");
        Ok(KBox::new(cq, GFP_KERNEL)?)
    }
}

fn dealloc_ucontext<T: DeviceOps + 'static>(ops: &T, ctx: T::UContext) -> Result {
    if T::HAS_DEALLOC_UCONTEXT {
        T::dealloc_ucontext(ops, ctx);
    }
    Ok(())
}

impl<T: DeviceOps + 'static> DynOps for DeviceImpl<T> {
    fn uverbs(&self) -> Option<UverbsAbi> {
        T::UVERBS
    }

    fn driver_methods(&self) -> &'static [DriverMethod] {
        T::DRIVER_METHODS
    }

    fn driver_attrs(&self) -> &'static [DriverAttrs] {
        T::DRIVER_ATTRS
    }

    fn alloc_pd(&self) -> Result<KBox<dyn PdObject>> {
        let pd = optional_op!(T::HAS_ALLOC_PD, T::alloc_pd(&self.0))?;
        let pd = Typed::new(self.0.clone(), pd, dealloc_pd::<T>, "dealloc_pd");
        Ok(KBox::new(pd, GFP_KERNEL)?)
    }

    fn create_cq(&self, init: &CqInit, notifier: &CqNotifier) -> Result<KBox<dyn CqObject>> {
        let cq = optional_op!(
            T::HAS_CREATE_CQ,
            T::create_cq(&self.0, init, notifier, None)
        )?;
        let cq = Typed::new(self.0.clone(), cq, destroy_cq::<T>, "destroy_cq");
        Ok(KBox::new(cq, GFP_KERNEL)?)
    }

    fn alloc_dma_buffer(&self, len: usize) -> Result<KBox<dyn DmaMemory>> {
        optional_op!(T::HAS_ALLOC_DMA_BUFFER, T::alloc_dma_buffer(&self.0, len))
    }

    fn alloc_ucontext(&self, udata: &Udata) -> Result<KBox<dyn UContextObject>> {
        let ctx = optional_op!(T::HAS_ALLOC_UCONTEXT, T::alloc_ucontext(&self.0, udata))?;
        let ctx = Typed::new(
            self.0.clone(),
            ctx,
            dealloc_ucontext::<T>,
            "dealloc_ucontext",
        );
        Ok(KBox::new(ctx, GFP_KERNEL)?)
    }

    fn alloc_user_pd(
        &self,
        _ctx: &dyn UContextObject,
        udata: &Udata,
    ) -> Result<KBox<dyn PdObject>> {
        let pd = if T::HAS_ALLOC_USER_PD {
            T::alloc_user_pd(&self.0, udata)?
        } else {
            optional_op!(T::HAS_ALLOC_PD, T::alloc_pd(&self.0))?
        };
        let pd = Typed::new(self.0.clone(), pd, dealloc_pd::<T>, "dealloc_pd");
        Ok(KBox::new(pd, GFP_KERNEL)?)
    }

    fn query_device_udata(&self, udata: &Udata) -> Result<DeviceAttr> {
        if T::HAS_QUERY_DEVICE_UDATA {
            T::query_device_udata(&self.0, udata)
        } else {
            T::query_device(&self.0)
        }
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        T::query_port(&self.0, port)
    }

    fn query_gid(&self, port: u32, index: u32) -> Option<Result<Gid>> {
        T::HAS_QUERY_GID.then(|| T::query_gid(&self.0, port, index))
    }

    fn query_pkey(&self, port: u32, index: u16) -> Result<u16> {
        optional_op!(T::HAS_QUERY_PKEY, T::query_pkey(&self.0, port, index))
    }

    fn fw_version(&self) -> FwVersion {
        if T::HAS_FW_VERSION {
            T::fw_version(&self.0)
        } else {
            FwVersion::new()
        }
    }

    fn link_layer(&self, port: u32) -> LinkLayer {
        if T::HAS_GET_LINK_LAYER {
            T::get_link_layer(&self.0, port)
        } else {
            LinkLayer::Infiniband
        }
    }

    fn modify_node_desc(&self, desc: &NodeDesc) -> Result {
        optional_op!(T::HAS_MODIFY_NODE_DESC, T::modify_node_desc(&self.0, desc))
    }

    fn has_process_mad(&self) -> bool {
        T::HAS_PROCESS_MAD
    }

    fn has_query_ucontext(&self) -> bool {
        T::HAS_QUERY_UCONTEXT
    }

    fn process_mad(
        &self,
        flags: u32,
        port: u32,
        wc: Option<&MadWc>,
        inp: &Mad,
        out: &mut Mad,
    ) -> u32 {
        if T::HAS_PROCESS_MAD {
            T::process_mad(&self.0, flags, port, wc, inp, out)
        } else {
            crate::mad::types::result::FAILURE
        }
    }

    fn modify_port_caps(&self, port: u32, set: u32, clear: u32) -> Result {
        optional_op!(
            T::HAS_MODIFY_PORT_CAPS,
            T::modify_port_caps(&self.0, port, set, clear)
        )
    }

    fn device_attr(&self, i: usize) -> Option<(&'static CStr, u16, bool)> {
        T::device_attrs()
            .get(i)
            .map(|a| (a.name(), a.mode(), a.has_store()))
    }

    fn device_attr_show(&self, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
        let a = T::device_attrs().get(i as usize).ok_or(EIO)?;
        a.show(&self.0, i, buf)
    }

    fn device_attr_store(&self, i: u32, data: &[u8]) -> Result {
        let a = T::device_attrs().get(i as usize).ok_or(EIO)?;
        a.store(&self.0, i, data)
    }

    fn has_hw_stats(&self) -> bool {
        T::HAS_ALLOC_HW_PORT_STATS && T::HAS_GET_HW_STATS
    }

    fn alloc_hw_port_stats(&self, port: u32) -> Result<HwStatsDesc> {
        optional_op!(
            T::HAS_ALLOC_HW_PORT_STATS,
            T::alloc_hw_port_stats(&self.0, port)
        )
    }

    fn get_hw_stats(&self, port: u32, values: &mut [u64], index: usize) -> Result<usize> {
        optional_op!(
            T::HAS_GET_HW_STATS,
            T::get_hw_stats(&self.0, port, values, index)
        )
    }
}
