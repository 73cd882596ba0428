// SPDX-License-Identifier: GPL-2.0

//! The RDMA netlink device interface (`RDMA_NL_NLDEV`), as C's
//! `drivers/infiniband/core/nldev.c`: what `rdma dev`, `rdma link`, `rdma res`, `rdma system`
//! and libibverbs ask of the core, answered attribute for attribute as C answers, and the
//! `MONITOR` events listeners of `RDMA_NL_GROUP_NOTIFY` get.
//!
//! Commands: `GET` (doit, dump), `SET` (rename, adaptive moderation, namespace), `PORT_GET`
//! (doit, dump), `SYS_GET`, `SYS_SET`, `RES_GET` (doit, dump), the resource-object commands
//! `RES_{QP,CM_ID,CQ,MR,PD,CTX,SRQ}_GET` and their `_RAW` forms (no object is tracked yet, so a
//! dump carries none and a doit finds none), and `GET_CHARDEV` (no character-device client
//! exists yet). Every other op is one this core lacks: `EINVAL`, as C answers for such ops.

use crate::{
    attrs::CORE_CAP_PROT_IB,
    device::{DeviceRef, IbDevice},
    monitor::Event,
    netlink::{self as rdma_nl, Op},
    nl_uapi::{self, attr, cmd, event, EMPTY_STRING, IFNAMSIZ},
    registry,
};
use kernel::{
    net_namespace::{Net, NetRef},
    netlink::{
        flags, AttrPolicy, Attrs, Dump, DumpBuffer, Message, MsgWriter, Policy, Request,
        Validation, NLMSG_DEFAULT_SIZE,
    },
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

/// `RDMA_NLDEV_ATTR_MAX`: the policy covers attribute types `0..ATTR_MAX`.
const ATTR_MAX: usize = attr::ATTR_MAX as usize;

/// `sizeof(struct __kernel_sockaddr_storage)`.
const SOCKADDR_STORAGE: u16 = 128;

/// Longest device name with its NUL (`IB_DEVICE_NAME_MAX`).
const DEVICE_NAME_MAX: u16 = crate::names::NAME_MAX as u16;

/// C's `nldev_policy`, entry for entry.
static POLICY: Policy<ATTR_MAX> = Policy::new()
    .with(attr::ATTR_CHARDEV, AttrPolicy::U64)
    .with(attr::ATTR_CHARDEV_ABI, AttrPolicy::U64)
    .with(
        attr::ATTR_CHARDEV_NAME,
        AttrPolicy::nul_string(EMPTY_STRING),
    )
    .with(
        attr::ATTR_CHARDEV_TYPE,
        AttrPolicy::nul_string(nl_uapi::CHARDEV_TYPE_SIZE as u16),
    )
    .with(attr::ATTR_DEV_DIM, AttrPolicy::U8)
    .with(attr::ATTR_DEV_INDEX, AttrPolicy::U32)
    .with(attr::ATTR_DEV_NAME, AttrPolicy::nul_string(DEVICE_NAME_MAX))
    .with(attr::ATTR_DEV_NODE_TYPE, AttrPolicy::U8)
    .with(
        attr::ATTR_DEV_PROTOCOL,
        AttrPolicy::nul_string(EMPTY_STRING),
    )
    .with(attr::ATTR_DRIVER, AttrPolicy::NESTED)
    .with(attr::ATTR_DRIVER_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_DRIVER_PRINT_TYPE, AttrPolicy::U8)
    .with(
        attr::ATTR_DRIVER_STRING,
        AttrPolicy::nul_string(EMPTY_STRING),
    )
    .with(attr::ATTR_DRIVER_S32, AttrPolicy::S32)
    .with(attr::ATTR_DRIVER_S64, AttrPolicy::S64)
    .with(attr::ATTR_DRIVER_U32, AttrPolicy::U32)
    .with(attr::ATTR_DRIVER_U64, AttrPolicy::U64)
    .with(attr::ATTR_FW_VERSION, AttrPolicy::nul_string(EMPTY_STRING))
    .with(attr::ATTR_LID, AttrPolicy::U32)
    .with(attr::ATTR_LINK_TYPE, AttrPolicy::nul_string(IFNAMSIZ))
    .with(attr::ATTR_LMC, AttrPolicy::U8)
    .with(attr::ATTR_NDEV_INDEX, AttrPolicy::U32)
    .with(attr::ATTR_NDEV_NAME, AttrPolicy::nul_string(IFNAMSIZ))
    .with(attr::ATTR_NODE_GUID, AttrPolicy::U64)
    .with(attr::ATTR_PORT_INDEX, AttrPolicy::U32)
    .with(attr::ATTR_PORT_PHYS_STATE, AttrPolicy::U8)
    .with(attr::ATTR_PORT_STATE, AttrPolicy::U8)
    .with(attr::ATTR_RES_CM_ID, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_CM_IDN, AttrPolicy::U32)
    .with(attr::ATTR_RES_CM_ID_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_CQ, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_CQE, AttrPolicy::U32)
    .with(attr::ATTR_RES_CQN, AttrPolicy::U32)
    .with(attr::ATTR_RES_CQ_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_CTX, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_CTXN, AttrPolicy::U32)
    .with(attr::ATTR_RES_CTX_ENTRY, AttrPolicy::NESTED)
    .with(
        attr::ATTR_RES_DST_ADDR,
        AttrPolicy::min_len(SOCKADDR_STORAGE),
    )
    .with(attr::ATTR_RES_IOVA, AttrPolicy::U64)
    .with(
        attr::ATTR_RES_KERN_NAME,
        AttrPolicy::nul_string(EMPTY_STRING),
    )
    .with(attr::ATTR_RES_LKEY, AttrPolicy::U32)
    .with(attr::ATTR_RES_LOCAL_DMA_LKEY, AttrPolicy::U32)
    .with(attr::ATTR_RES_LQPN, AttrPolicy::U32)
    .with(attr::ATTR_RES_MR, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_MRLEN, AttrPolicy::U64)
    .with(attr::ATTR_RES_MRN, AttrPolicy::U32)
    .with(attr::ATTR_RES_MR_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_PATH_MIG_STATE, AttrPolicy::U8)
    .with(attr::ATTR_RES_PD, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_PDN, AttrPolicy::U32)
    .with(attr::ATTR_RES_PD_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_PID, AttrPolicy::U32)
    .with(attr::ATTR_RES_POLL_CTX, AttrPolicy::U8)
    .with(attr::ATTR_RES_PS, AttrPolicy::U32)
    .with(attr::ATTR_RES_QP, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_QP_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_RAW, AttrPolicy::binary(0))
    .with(attr::ATTR_RES_RKEY, AttrPolicy::U32)
    .with(attr::ATTR_RES_RQPN, AttrPolicy::U32)
    .with(attr::ATTR_RES_RQ_PSN, AttrPolicy::U32)
    .with(attr::ATTR_RES_SQ_PSN, AttrPolicy::U32)
    .with(
        attr::ATTR_RES_SRC_ADDR,
        AttrPolicy::min_len(SOCKADDR_STORAGE),
    )
    .with(attr::ATTR_RES_STATE, AttrPolicy::U8)
    .with(attr::ATTR_RES_SUMMARY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_SUMMARY_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_SUMMARY_ENTRY_CURR, AttrPolicy::U64)
    .with(
        attr::ATTR_RES_SUMMARY_ENTRY_NAME,
        AttrPolicy::nul_string(EMPTY_STRING),
    )
    .with(attr::ATTR_RES_TYPE, AttrPolicy::U8)
    .with(attr::ATTR_RES_SUBTYPE, AttrPolicy::nul_string(EMPTY_STRING))
    .with(attr::ATTR_RES_UNSAFE_GLOBAL_RKEY, AttrPolicy::U32)
    .with(attr::ATTR_RES_USECNT, AttrPolicy::U64)
    .with(attr::ATTR_RES_SRQ, AttrPolicy::NESTED)
    .with(attr::ATTR_RES_SRQN, AttrPolicy::U32)
    .with(attr::ATTR_RES_SRQ_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_MIN_RANGE, AttrPolicy::U32)
    .with(attr::ATTR_MAX_RANGE, AttrPolicy::U32)
    .with(attr::ATTR_SM_LID, AttrPolicy::U32)
    .with(attr::ATTR_SUBNET_PREFIX, AttrPolicy::U64)
    .with(attr::ATTR_STAT_AUTO_MODE_MASK, AttrPolicy::U32)
    .with(attr::ATTR_STAT_MODE, AttrPolicy::U32)
    .with(attr::ATTR_STAT_RES, AttrPolicy::U32)
    .with(attr::ATTR_STAT_COUNTER, AttrPolicy::NESTED)
    .with(attr::ATTR_STAT_COUNTER_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_STAT_COUNTER_ID, AttrPolicy::U32)
    .with(attr::ATTR_STAT_HWCOUNTERS, AttrPolicy::NESTED)
    .with(attr::ATTR_STAT_HWCOUNTER_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_STAT_HWCOUNTER_ENTRY_NAME, AttrPolicy::NUL_STRING)
    .with(attr::ATTR_STAT_HWCOUNTER_ENTRY_VALUE, AttrPolicy::U64)
    .with(attr::ATTR_SYS_IMAGE_GUID, AttrPolicy::U64)
    .with(attr::ATTR_UVERBS_DRIVER_ID, AttrPolicy::U32)
    .with(attr::NET_NS_FD, AttrPolicy::U32)
    .with(attr::SYS_ATTR_NETNS_MODE, AttrPolicy::U8)
    .with(attr::SYS_ATTR_COPY_ON_FORK, AttrPolicy::U8)
    .with(attr::ATTR_STAT_HWCOUNTER_INDEX, AttrPolicy::U32)
    .with(attr::ATTR_STAT_HWCOUNTER_DYNAMIC, AttrPolicy::U8)
    .with(attr::SYS_ATTR_PRIVILEGED_QKEY_MODE, AttrPolicy::U8)
    .with(attr::ATTR_DRIVER_DETAILS, AttrPolicy::U8)
    .with(attr::ATTR_DEV_TYPE, AttrPolicy::U8)
    .with(attr::ATTR_PARENT_NAME, AttrPolicy::NUL_STRING)
    .with(attr::ATTR_NAME_ASSIGN_TYPE, AttrPolicy::U8)
    .with(attr::ATTR_EVENT_TYPE, AttrPolicy::U8)
    .with(attr::ATTR_STAT_OPCOUNTER_ENABLED, AttrPolicy::U8)
    .with(attr::ATTR_FRMR_POOLS, AttrPolicy::NESTED)
    .with(attr::ATTR_FRMR_POOL_ENTRY, AttrPolicy::NESTED)
    .with(attr::ATTR_FRMR_POOL_KEY, AttrPolicy::NESTED)
    .with(attr::ATTR_FRMR_POOL_KEY_ATS, AttrPolicy::U8)
    .with(attr::ATTR_FRMR_POOL_KEY_ACCESS_FLAGS, AttrPolicy::U32)
    .with(attr::ATTR_FRMR_POOL_KEY_VENDOR_KEY, AttrPolicy::U64)
    .with(attr::ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS, AttrPolicy::U64)
    .with(attr::ATTR_FRMR_POOL_QUEUE_HANDLES, AttrPolicy::U32)
    .with(attr::ATTR_FRMR_POOL_MAX_IN_USE, AttrPolicy::U64)
    .with(attr::ATTR_FRMR_POOL_IN_USE, AttrPolicy::U64)
    .with(attr::ATTR_FRMR_POOLS_AGING_PERIOD, AttrPolicy::U32)
    .with(attr::ATTR_FRMR_POOL_PINNED_HANDLES, AttrPolicy::U32)
    .with(attr::ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY, AttrPolicy::U64)
    .with(attr::ATTR_RES_SUMMARY_ENTRY_MAX, AttrPolicy::U64);

/// Whether a non-privileged user may use a controlled Q_Key (C's `privileged_qkey`).
static PRIVILEGED_QKEY: Atomic<bool> = Atomic::new(false);

/// Whether a non-privileged user may use a controlled Q_Key (C's
/// `rdma_nl_get_privileged_qkey`).
pub(crate) fn privileged_qkey() -> bool {
    PRIVILEGED_QKEY.load(Relaxed)
}

/// The nldev message type of `command`.
fn nldev_type(command: u32) -> u16 {
    nl_uapi::msg_type(nl_uapi::client::NLDEV, command)
}

/// Parses a request or dump request against nldev's policy, liberally (C's
/// `__nlmsg_parse(..., NL_VALIDATE_LIBERAL)`).
fn parse<'a>(req: &Request<'a>) -> Result<Attrs<'a, ATTR_MAX>> {
    req.parse(&POLICY, Validation::Liberal)
}

/// The registered device `index`, if requests from `net` may see it (C's
/// `ib_device_get_by_index`).
fn device_by_index(net: &Net, index: u32) -> Option<DeviceRef> {
    if !rdma_nl::net_sees_devices(net) {
        return None;
    }
    registry::get(index)
}

/// The device a request names with `DEV_INDEX`: `EINVAL` when absent or unknown.
fn requested_device(net: &Net, attrs: &Attrs<'_, ATTR_MAX>) -> Result<DeviceRef> {
    let index = attrs.u32(attr::ATTR_DEV_INDEX).ok_or(EINVAL)?;
    device_by_index(net, index).ok_or(EINVAL)
}

/// Builds a reply to `req` of type `command` with `fill`, and sends it.
fn answer(
    req: &Request<'_>,
    command: u32,
    fill: impl FnOnce(&mut MsgWriter<'_>) -> Result,
) -> Result {
    let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL).map_err(|_| ENOMEM)?;
    let mut w = msg.put(req.portid(), req.msg().seq(), nldev_type(command), 0)?;
    fill(&mut w)?;
    w.end();
    req.unicast(msg)
}

/// `DEV_INDEX` and `DEV_NAME` (C's `fill_nldev_handle`).
fn fill_handle(w: &mut MsgWriter<'_>, dev: &IbDevice) -> Result {
    w.put_u32(attr::ATTR_DEV_INDEX, dev.index())?;
    w.put_string(attr::ATTR_DEV_NAME, &dev.name())
}

/// `RDMA_CORE_CAP_OPA_MAD`.
const CORE_CAP_OPA_MAD: u32 = 0x20;
/// `RDMA_CORE_CAP_PROT_ROCE`.
const CORE_CAP_PROT_ROCE: u32 = 0x0020_0000;
/// `RDMA_CORE_CAP_PROT_IWARP`.
const CORE_CAP_PROT_IWARP: u32 = 0x0040_0000;
/// `RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP`.
const CORE_CAP_PROT_ROCE_UDP_ENCAP: u32 = 0x0080_0000;
/// `RDMA_CORE_CAP_PROT_USNIC`.
const CORE_CAP_PROT_USNIC: u32 = 0x0200_0000;

fn core_caps(dev: &IbDevice, port: u32) -> u32 {
    dev.port_immutable(port).map_or(0, |p| p.core_cap_flags)
}

/// `rdma_protocol_ib`.
fn protocol_ib(dev: &IbDevice, port: u32) -> bool {
    core_caps(dev, port) & CORE_CAP_PROT_IB != 0
}

/// The protocol name of `port` (C decides on the first port), if it has one.
fn protocol_name(dev: &IbDevice, port: u32) -> Option<&'static [u8]> {
    let caps = core_caps(dev, port);
    if caps & CORE_CAP_OPA_MAD != 0 {
        Some(b"opa")
    } else if caps & CORE_CAP_PROT_IB != 0 {
        Some(b"ib")
    } else if caps & CORE_CAP_PROT_IWARP != 0 {
        Some(b"iw")
    } else if caps & (CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) != 0 {
        Some(b"roce")
    } else if caps & CORE_CAP_PROT_USNIC != 0 {
        Some(b"usnic")
    } else {
        None
    }
}

/// What `GET` tells about a device (C's `fill_dev_info`).
fn fill_dev_info(w: &mut MsgWriter<'_>, dev: &IbDevice) -> Result {
    fill_handle(w, dev)?;
    // The number of ports (`rdma_end_port`).
    w.put_u32(attr::ATTR_PORT_INDEX, dev.port_count())?;
    w.put_u64(
        attr::ATTR_CAP_FLAGS,
        dev.attr().device_cap_flags,
        attr::ATTR_PAD,
    )?;
    let fw = dev.fw_version();
    if !fw.as_bytes().is_empty() {
        w.put_string(attr::ATTR_FW_VERSION, fw.as_bytes())?;
    }
    w.put_u64(attr::ATTR_NODE_GUID, dev.node_guid(), attr::ATTR_PAD)?;
    w.put_u64(
        attr::ATTR_SYS_IMAGE_GUID,
        dev.attr().sys_image_guid,
        attr::ATTR_PAD,
    )?;
    w.put_u8(attr::ATTR_DEV_NODE_TYPE, dev.node_type() as u8)?;
    w.put_u8(attr::ATTR_DEV_DIM, u8::from(dev.use_cq_dim()))?;
    // `DEV_TYPE` and `PARENT_NAME` are for sub-devices (SMI), which this core does not make;
    // names are assigned by drivers (`RDMA_NAME_ASSIGN_TYPE_UNKNOWN`).
    w.put_u8(attr::ATTR_NAME_ASSIGN_TYPE, 0)?;
    if let Some(p) = protocol_name(dev, 1) {
        w.put_string(attr::ATTR_DEV_PROTOCOL, p)?;
    }
    Ok(())
}

/// The subnet prefix of `port` as C's port cache holds it: the prefix of the last GID read
/// into the cache (0 when there is none), since drivers here do not report one.
fn subnet_prefix(dev: &IbDevice, port: u32) -> u64 {
    let mut prefix = 0;
    let mut i = 0;
    while let Some(gid) = dev.cached_gid(port, i) {
        let mut b = [0u8; 8];
        b.copy_from_slice(gid.0.get(..8).unwrap_or(&[0; 8]));
        prefix = u64::from_be_bytes(b);
        i += 1;
    }
    prefix
}

/// What `PORT_GET` tells about a port (C's `fill_port_info`).
fn fill_port_info(w: &mut MsgWriter<'_>, dev: &IbDevice, port: u32) -> Result {
    fill_handle(w, dev)?;
    w.put_u32(attr::ATTR_PORT_INDEX, port)?;
    let a = dev.query_port(port)?;
    if protocol_ib(dev, port) {
        let caps = u64::from(a.port_cap_flags) | (u64::from(a.port_cap_flags2) << 32);
        w.put_u64(attr::ATTR_CAP_FLAGS, caps, attr::ATTR_PAD)?;
        w.put_u64(
            attr::ATTR_SUBNET_PREFIX,
            subnet_prefix(dev, port),
            attr::ATTR_PAD,
        )?;
        w.put_u32(attr::ATTR_LID, a.lid)?;
        w.put_u32(attr::ATTR_SM_LID, a.sm_lid)?;
        w.put_u8(attr::ATTR_LMC, a.lmc)?;
    }
    w.put_u8(attr::ATTR_PORT_STATE, a.state as u8)?;
    w.put_u8(attr::ATTR_PORT_PHYS_STATE, a.phys_state)?;
    // `NDEV_INDEX`/`NDEV_NAME`: no network device is attached to a port in this stack.
    Ok(())
}

/// Tracked resource types (`enum rdma_restrack_type`; the counters and DMA handles, 6 and 8,
/// are not shown by `RES_GET`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum ResType {
    /// Protection domains.
    Pd = 0,
    /// Completion queues.
    Cq = 1,
    /// Queue pairs.
    Qp = 2,
    /// Connection manager ids.
    CmId = 3,
    /// Memory regions.
    Mr = 4,
    /// User contexts.
    Ctx = 5,
    /// Shared receive queues.
    Srq = 7,
    /// Completion counters.
    CompCntr = 9,
}

/// The summary `RES_GET` gives: name and type, in C's order.
const SUMMARY: [(&[u8], ResType); 8] = [
    (b"pd", ResType::Pd),
    (b"cq", ResType::Cq),
    (b"qp", ResType::Qp),
    (b"cm_id", ResType::CmId),
    (b"mr", ResType::Mr),
    (b"ctx", ResType::Ctx),
    (b"srq", ResType::Srq),
    (b"comp_cntr", ResType::CompCntr),
];

/// How many objects of `kind` the device has (C's `rdma_restrack_count`; `show_details`
/// counts driver-internal objects too). No object is tracked yet: the kernel verbs API and
/// uverbs, which create them, do not exist; this is where they will be counted.
pub(crate) fn restrack_count(_dev: &IbDevice, _kind: ResType, _show_details: bool) -> u64 {
    0
}

/// The limit `RES_GET` shows next to a count (C's `fill_res_info`); 0 is not shown.
fn restrack_max(dev: &IbDevice, kind: ResType) -> u64 {
    let a = dev.attr();
    u64::from(match kind {
        ResType::Qp => a.max_qp,
        ResType::Cq => a.max_cq,
        ResType::Mr => a.max_mr,
        ResType::Pd => a.max_pd,
        ResType::Srq => a.max_srq,
        // Completion counters: no driver here reports any (`query_comp_cntr_caps`).
        _ => 0,
    })
}

/// What `RES_GET` tells about a device (C's `fill_res_info`).
fn fill_res_info(w: &mut MsgWriter<'_>, dev: &IbDevice, show_details: bool) -> Result {
    fill_handle(w, dev)?;
    let mut table = w.nest_noflag(attr::ATTR_RES_SUMMARY)?;
    for (name, kind) in SUMMARY {
        let mut entry = table.nest_noflag(attr::ATTR_RES_SUMMARY_ENTRY)?;
        entry.put_string(attr::ATTR_RES_SUMMARY_ENTRY_NAME, name)?;
        entry.put_u64(
            attr::ATTR_RES_SUMMARY_ENTRY_CURR,
            restrack_count(dev, kind, show_details),
            attr::ATTR_PAD,
        )?;
        let max = restrack_max(dev, kind);
        if max != 0 {
            entry.put_u64(attr::ATTR_RES_SUMMARY_ENTRY_MAX, max, attr::ATTR_PAD)?;
        }
        entry.end();
    }
    table.end();
    Ok(())
}

/// `GET` doit.
fn get_doit(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    let dev = requested_device(req.net(), &attrs)?;
    answer(req, cmd::CMD_GET, |w| fill_dev_info(w, &dev))
}

/// Dumps one message per device, one device per round, resuming at the device's position
/// (C's `ib_enum_all_devs` with `_nldev_get_dumpit` and `_nldev_res_get_dumpit`).
fn dump_devices(
    buf: &mut DumpBuffer<'_>,
    start: &mut u32,
    command: u32,
    fill: fn(&mut MsgWriter<'_>, &IbDevice) -> Result,
) -> Result {
    let devices = if rdma_nl::net_sees_devices(buf.net()) {
        registry::devices()?
    } else {
        KVec::new()
    };
    let (portid, seq) = (buf.portid(), buf.seq());
    for (idx, dev) in (0u32..).zip(devices.iter()) {
        if idx < *start {
            continue;
        }
        *start = idx;
        if let Ok(mut w) = buf.put(portid, seq, nldev_type(command), flags::MULTI) {
            if fill(&mut w, dev).is_ok() {
                w.end();
                *start = idx + 1;
            }
        }
        // C's enumeration stops at the first device that left something in the buffer.
        if !buf.is_empty() {
            break;
        }
    }
    Ok(())
}

/// `GET` dump.
struct GetDump;

impl Dump for GetDump {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, start: &mut u32) -> Result {
        dump_devices(buf, start, cmd::CMD_GET, fill_dev_info)
    }
}

/// `SET` doit: rename, namespace, adaptive moderation (`nlmsg_parse`, i.e. strict).
fn set_doit(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    let dev = requested_device(req.net(), &attrs)?;
    // `nla_strscpy` into `IB_DEVICE_NAME_MAX` bytes: at most 63 characters are kept.
    let name = attrs
        .string(attr::ATTR_DEV_NAME)
        .map(|n| n.get(..usize::from(DEVICE_NAME_MAX) - 1).unwrap_or(n));
    if let Some(fd) = attrs.u32(attr::NET_NS_FD) {
        if name.is_some_and(|n| n.is_empty()) {
            return Err(EINVAL);
        }
        // C's `ib_device_set_netns_put`: the descriptor must name a namespace; then, with
        // devices shared by all namespaces, moving one is not supported. (Moving a device in
        // exclusive mode is not implemented here either.)
        let _net = NetRef::from_fd(fd as i32)?;
        return Err(EOPNOTSUPP);
    }
    if let Some(name) = name {
        if name.is_empty() {
            return Err(EINVAL);
        }
        return registry::rename(&dev, name);
    }
    if let Some(dim) = attrs.u8(attr::ATTR_DEV_DIM) {
        return dev.set_use_cq_dim(dim);
    }
    Ok(())
}

/// `PORT_GET` doit. The reply is typed `GET`, as C's.
fn port_get_doit(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    if !attrs.has(attr::ATTR_DEV_INDEX) || !attrs.has(attr::ATTR_PORT_INDEX) {
        return Err(EINVAL);
    }
    let dev = requested_device(req.net(), &attrs)?;
    let port = attrs.u32(attr::ATTR_PORT_INDEX).ok_or(EINVAL)?;
    if !dev.is_valid_port(port) {
        return Err(EINVAL);
    }
    answer(req, cmd::CMD_GET, |w| fill_port_info(w, &dev, port))
}

/// `PORT_GET` dump: the ports of the device the request names.
struct PortGetDump;

impl Dump for PortGetDump {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, start: &mut u32) -> Result {
        let index = {
            let attrs = buf
                .request()
                .parse(&POLICY, Validation::Liberal)
                .map_err(|_| EINVAL)?;
            attrs.u32(attr::ATTR_DEV_INDEX).ok_or(EINVAL)?
        };
        let dev = device_by_index(buf.net(), index).ok_or(EINVAL)?;
        let (portid, seq) = (buf.portid(), buf.seq());
        let mut idx = 0;
        for port in 1..=dev.port_count() {
            if idx < *start {
                idx += 1;
                continue;
            }
            let Ok(mut w) = buf.put(portid, seq, nldev_type(cmd::CMD_PORT_GET), flags::MULTI)
            else {
                break;
            };
            if fill_port_info(&mut w, &dev, port).is_err() {
                w.cancel();
                break;
            }
            idx += 1;
            w.end();
        }
        *start = idx;
        Ok(())
    }
}

/// `RES_GET` doit.
fn res_get_doit(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    let dev = requested_device(req.net(), &attrs)?;
    let details = attrs.u8(attr::ATTR_DRIVER_DETAILS).is_some_and(|d| d != 0);
    answer(req, cmd::CMD_RES_GET, |w| fill_res_info(w, &dev, details))
}

/// `RES_GET` dump.
struct ResGetDump;

impl Dump for ResGetDump {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, start: &mut u32) -> Result {
        dump_devices(buf, start, cmd::CMD_RES_GET, |w, dev| {
            fill_res_info(w, dev, false)
        })
    }
}

/// How the commands of one tracked object type look (C's `fill_entries`).
struct ResObject {
    kind: ResType,
    /// The table attribute holding the entries.
    table: u16,
    /// The attribute that names one object in a doit.
    id: u16,
    /// Objects of the device rather than of a port (`NLDEV_PER_DEV`).
    per_dev: bool,
}

const RES_QP: ResObject = ResObject {
    kind: ResType::Qp,
    table: attr::ATTR_RES_QP,
    id: attr::ATTR_RES_LQPN,
    per_dev: false,
};
const RES_CM_ID: ResObject = ResObject {
    kind: ResType::CmId,
    table: attr::ATTR_RES_CM_ID,
    id: attr::ATTR_RES_CM_IDN,
    per_dev: false,
};
const RES_CQ: ResObject = ResObject {
    kind: ResType::Cq,
    table: attr::ATTR_RES_CQ,
    id: attr::ATTR_RES_CQN,
    per_dev: true,
};
const RES_MR: ResObject = ResObject {
    kind: ResType::Mr,
    table: attr::ATTR_RES_MR,
    id: attr::ATTR_RES_MRN,
    per_dev: true,
};
const RES_PD: ResObject = ResObject {
    kind: ResType::Pd,
    table: attr::ATTR_RES_PD,
    id: attr::ATTR_RES_PDN,
    per_dev: true,
};
const RES_CTX: ResObject = ResObject {
    kind: ResType::Ctx,
    table: attr::ATTR_RES_CTX,
    id: attr::ATTR_RES_CTXN,
    per_dev: true,
};
const RES_SRQ: ResObject = ResObject {
    kind: ResType::Srq,
    table: attr::ATTR_RES_SRQ,
    id: attr::ATTR_RES_SRQN,
    per_dev: true,
};

/// Object `id` of type `kind` of a device (C's `rdma_restrack_get_byid`): `ENOENT`, since
/// nothing is tracked yet (see [`restrack_count`]).
fn restrack_get(_dev: &IbDevice, _kind: ResType, _id: u32) -> Result<core::convert::Infallible> {
    Err(ENOENT)
}

/// `RES_<object>_GET` doit (C's `res_get_common_doit`): one object by id.
fn res_object_doit(req: &Request<'_>, obj: &ResObject) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    if !attrs.has(attr::ATTR_DEV_INDEX) || !attrs.has(obj.id) {
        return Err(EINVAL);
    }
    let dev = requested_device(req.net(), &attrs)?;
    let mut port = 0;
    if let Some(p) = attrs.u32(attr::ATTR_PORT_INDEX) {
        if !dev.is_valid_port(p) {
            return Err(EINVAL);
        }
        port = p;
    }
    if (port != 0) == obj.per_dev {
        return Err(EINVAL);
    }
    let id = attrs.u32(obj.id).ok_or(EINVAL)?;
    // The entry of a found object is filled here once objects are tracked.
    match restrack_get(&dev, obj.kind, id)? {}
}

/// `RES_<object>_GET` dump (C's `res_get_common_dumpit`): the objects of a device.
fn res_object_dump(buf: &mut DumpBuffer<'_>, _start: &mut u32, obj: &ResObject) -> Result {
    let (index, port) = {
        let attrs = buf
            .request()
            .parse(&POLICY, Validation::Liberal)
            .map_err(|_| EINVAL)?;
        let index = attrs.u32(attr::ATTR_DEV_INDEX).ok_or(EINVAL)?;
        (index, attrs.u32(attr::ATTR_PORT_INDEX))
    };
    let dev = device_by_index(buf.net(), index).ok_or(EINVAL)?;
    if let Some(p) = port {
        if !dev.is_valid_port(p) {
            return Err(EINVAL);
        }
    }
    let (portid, seq, op) = (
        buf.portid(),
        buf.seq(),
        nl_uapi::op_of(buf.request().msg_type()),
    );
    let mut w = buf.put(portid, seq, nldev_type(op), flags::MULTI)?;
    fill_handle(&mut w, &dev)?;
    let table = w.nest_noflag(obj.table)?;
    // No object is tracked, so none is put (`filled` stays false in C): the message is
    // cancelled and the dump ends with `NLMSG_DONE` alone. (With objects, `_start` counts the
    // ones already sent, as C's `cb->args[0]`.)
    table.cancel();
    w.cancel();
    Ok(())
}

/// The dump of one tracked object type.
struct ResObjectDump<const K: u8>;

impl<const K: u8> ResObjectDump<K> {
    const OBJECT: &'static ResObject = match K {
        0 => &RES_QP,
        1 => &RES_CM_ID,
        2 => &RES_CQ,
        3 => &RES_MR,
        4 => &RES_PD,
        5 => &RES_CTX,
        _ => &RES_SRQ,
    };

    fn doit(req: &mut Request<'_>) -> Result {
        res_object_doit(req, Self::OBJECT)
    }
}

impl<const K: u8> Dump for ResObjectDump<K> {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, start: &mut u32) -> Result {
        res_object_dump(buf, start, Self::OBJECT)
    }
}

/// `GET_CHARDEV` doit: the character device a client (`uverbs`, `umad`) offers for a device
/// or globally.
fn get_chardev(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    let client = attrs.string(attr::ATTR_CHARDEV_TYPE).ok_or(EINVAL)?;
    // `nla_strscpy` into `RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE` bytes.
    let client = client
        .get(..nl_uapi::CHARDEV_TYPE_SIZE - 1)
        .unwrap_or(client);
    let mut dev = None;
    if attrs.has(attr::ATTR_DEV_INDEX) {
        let d = requested_device(req.net(), &attrs)?;
        if let Some(port) = attrs.u32(attr::ATTR_PORT_INDEX) {
            if !d.is_valid_port(port) {
                return Err(EINVAL);
            }
        }
        dev = Some(d);
    } else if attrs.has(attr::ATTR_PORT_INDEX) {
        return Err(EINVAL);
    }
    match chardev_info(dev.as_deref(), client)? {}
}

/// The character device of `client` (C's `ib_get_client_nl_info`). No client of this core
/// offers one yet (uverbs and umad do not exist), so every name is unknown: C answers an
/// unknown client, once no module provides it, with `EOPNOTSUPP`.
fn chardev_info(_dev: Option<&IbDevice>, _client: &[u8]) -> Result<core::convert::Infallible> {
    Err(EOPNOTSUPP)
}

/// `SYS_GET` doit.
fn sys_get_doit(req: &mut Request<'_>) -> Result {
    parse(req)?;
    answer(req, cmd::CMD_SYS_GET, |w| {
        w.put_u8(attr::SYS_ATTR_NETNS_MODE, u8::from(rdma_nl::shared_netns()))?;
        w.put_u8(
            attr::SYS_ATTR_PRIVILEGED_QKEY_MODE,
            u8::from(privileged_qkey()),
        )?;
        w.put_u8(attr::SYS_ATTR_MONITOR_MODE, 1)?;
        // Copy-on-fork is supported; C ignores a failure to say so.
        let _ = w.put_u8(attr::SYS_ATTR_COPY_ON_FORK, 1);
        Ok(())
    })
}

/// `SYS_SET` doit (strict parsing): the namespace mode or the privileged Q_Key mode.
fn sys_set_doit(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    if let Some(mode) = attrs.u8(attr::SYS_ATTR_NETNS_MODE) {
        if mode > 1 {
            return Err(EINVAL);
        }
        return rdma_nl::set_shared_netns(mode == 1);
    }
    if let Some(mode) = attrs.u8(attr::SYS_ATTR_PRIVILEGED_QKEY_MODE) {
        if mode > 1 {
            return Err(EINVAL);
        }
        PRIVILEGED_QKEY.store(mode == 1, Relaxed);
        return Ok(());
    }
    Err(EINVAL)
}

const fn doit(f: rdma_nl::Callback, admin: bool) -> Op {
    Op {
        doit: Some(f),
        dump: None,
        admin,
    }
}

const fn doit_dump(f: rdma_nl::Callback, d: rdma_nl::Callback, admin: bool) -> Op {
    Op {
        doit: Some(f),
        dump: Some(d),
        admin,
    }
}

const fn res_object<const K: u8>(admin: bool) -> Op {
    doit_dump(
        ResObjectDump::<K>::doit,
        rdma_nl::start_dump::<ResObjectDump<K>>,
        admin,
    )
}

/// nldev's ops (C's `nldev_cb_table`), by command.
static OPS: [Op; cmd::NUM_OPS as usize] = {
    let mut t = [Op::NONE; cmd::NUM_OPS as usize];
    t[cmd::CMD_GET as usize] = doit_dump(get_doit, rdma_nl::start_dump::<GetDump>, false);
    t[cmd::CMD_GET_CHARDEV as usize] = doit(get_chardev, false);
    t[cmd::CMD_SET as usize] = doit(set_doit, true);
    t[cmd::CMD_PORT_GET as usize] =
        doit_dump(port_get_doit, rdma_nl::start_dump::<PortGetDump>, false);
    t[cmd::CMD_RES_GET as usize] =
        doit_dump(res_get_doit, rdma_nl::start_dump::<ResGetDump>, false);
    t[cmd::CMD_RES_QP_GET as usize] = res_object::<0>(false);
    t[cmd::CMD_RES_CM_ID_GET as usize] = res_object::<1>(false);
    t[cmd::CMD_RES_CQ_GET as usize] = res_object::<2>(false);
    t[cmd::CMD_RES_MR_GET as usize] = res_object::<3>(false);
    t[cmd::CMD_RES_PD_GET as usize] = res_object::<4>(false);
    t[cmd::CMD_RES_CTX_GET as usize] = res_object::<5>(false);
    t[cmd::CMD_RES_SRQ_GET as usize] = res_object::<6>(false);
    t[cmd::CMD_SYS_GET as usize] = doit(sys_get_doit, false);
    t[cmd::CMD_SYS_SET as usize] = doit(sys_set_doit, true);
    t[cmd::CMD_RES_QP_GET_RAW as usize] = res_object::<0>(true);
    t[cmd::CMD_RES_CQ_GET_RAW as usize] = res_object::<2>(true);
    t[cmd::CMD_RES_MR_GET_RAW as usize] = res_object::<3>(true);
    t[cmd::CMD_RES_SRQ_GET_RAW as usize] = res_object::<6>(true);
    t
};

/// nldev registered with RDMA netlink (C's `nldev_init`); unregistered when dropped
/// (`nldev_exit`).
pub(crate) struct Registration;

impl Registration {
    /// Registers nldev's ops.
    pub(crate) fn new() -> Self {
        rdma_nl::register(nl_uapi::client::NLDEV, &OPS);
        Self
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        rdma_nl::unregister(nl_uapi::client::NLDEV);
    }
}

/// Tells `RDMA_NL_GROUP_NOTIFY` listeners about `event` on `dev` (C's
/// `rdma_nl_notify_event` for device events).
pub(crate) fn notify(dev: &IbDevice, ev: Event) -> Result {
    let kind = match ev {
        Event::Register => event::REGISTER_EVENT,
        Event::Unregister => event::UNREGISTER_EVENT,
        Event::Rename => event::RENAME_EVENT,
    };
    let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL).map_err(|_| ENOMEM)?;
    let built = msg
        .put(0, 0, nldev_type(cmd::CMD_MONITOR), 0)
        .and_then(|mut w| {
            fill_handle(&mut w, dev)?;
            w.put_u8(attr::ATTR_EVENT_TYPE, kind)?;
            w.end();
            Ok(())
        });
    let sent = built.and_then(|()| match rdma_nl::multicast(msg, nl_uapi::GROUP_NOTIFY) {
        Err(e) if e == ESRCH => Ok(()),
        r => r,
    });
    if let Err(e) = sent {
        let what = match ev {
            Event::Register => "register device",
            Event::Unregister => "unregister device",
            Event::Rename => "rename device",
        };
        pr_warn!(
            "{}: Failed to send RDMA monitor {} event ({})\n",
            kernel::str::BStr::from_bytes(&dev.name()),
            what,
            e.to_errno()
        );
        return Err(e);
    }
    Ok(())
}
