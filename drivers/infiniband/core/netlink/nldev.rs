// SPDX-License-Identifier: GPL-2.0

//! The RDMA netlink device interface (`RDMA_NL_NLDEV`), as C's
//! `drivers/infiniband/core/nldev.c`: what `rdma dev`, `rdma link`, `rdma res`, `rdma system`
//! and libibverbs ask of the core, answered attribute for attribute as C answers, and the
//! `MONITOR` events listeners of `RDMA_NL_GROUP_NOTIFY` get (sent by `monitor`).
//!
//! Commands: `GET` (doit, dump), `SET` (rename, adaptive moderation, namespace), `PORT_GET`
//! (doit, dump), `SYS_GET`, `SYS_SET`, `RES_GET` (doit, dump), the resource-object commands
//! `RES_{QP,CM_ID,CQ,MR,PD,CTX,SRQ}_GET` and their `_RAW` forms (PDs, CQs, QPs and MRs are
//! listed with C's attributes, and SRQs with their QPs; there are no CM ids or user contexts
//! yet, and no driver has raw contexts), and `GET_CHARDEV` (the character device a client such
//! as ib_uverbs offers for a device, loading the client's module on demand as C does). Every other op is one this core lacks: `EINVAL`, as C answers for such ops.

use crate::{
    attrs::{CORE_CAP_PROT_IB, CORE_CAP_PROT_ROCE, CORE_CAP_PROT_ROCE_UDP_ENCAP},
    device,
    device::ib_device::{DeviceRef, IbDevice},
    device::registry::{self, ChardevInfo},
    netlink::uapi::{self, attr, cmd, EMPTY_STRING, IFNAMSIZ},
    netlink::{self as rdma_nl, Op},
    restrack::{cm_id::CmIdEntry, view::ResView},
    restrack::{KernName, Lists, ResType, Tracked},
    user::ucontext::{UserCqRes, UserMrRes, UserQpRes, UserSrqRes},
    verbs::types::QpAttr,
    verbs::{Cq, Mr, Pd, Qp, QpType, Srq},
};
use kernel::{
    net::namespace::{Net, NetRef},
    net::netlink_protocol::{
        flags, AttrPolicy, Attrs, Dump, DumpBuffer, Message, MsgWriter, Policy, Request,
        Validation, NLMSG_DEFAULT_SIZE,
    },
    prelude::*,
    str::{BStr, CString},
};

/// `RDMA_NLDEV_ATTR_MAX`: the policy covers attribute types `0..ATTR_MAX`.
const ATTR_MAX: usize = attr::ATTR_MAX as usize;

/// `sizeof(struct __kernel_sockaddr_storage)`.
const SOCKADDR_STORAGE: u16 = 128;

/// Longest device name with its NUL (`IB_DEVICE_NAME_MAX`).
const DEVICE_NAME_MAX: u16 = crate::device::names::NAME_MAX as u16;

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
        AttrPolicy::nul_string(uapi::CHARDEV_TYPE_SIZE as u16),
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

/// The nldev message type of `command`.
fn nldev_type(command: u32) -> u16 {
    uapi::msg_type(uapi::client::NLDEV, command)
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
/// `RDMA_CORE_CAP_PROT_IWARP`.
const CORE_CAP_PROT_IWARP: u32 = 0x0040_0000;
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
        u64::from(dev.attr().device_cap_flags),
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
fn fill_port_info(w: &mut MsgWriter<'_>, net: &Net, dev: &IbDevice, port: u32) -> Result {
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
    // The port's net device (a C driver's: rxe, siw), when the request's namespace sees it.
    if let Some(ndev) = dev.port_netdev(port).filter(|n| n.net() == net) {
        w.put_u32(attr::ATTR_NDEV_INDEX, ndev.ifindex() as u32)?;
        w.put_string(attr::ATTR_NDEV_NAME, ndev.name())?;
    }
    Ok(())
}

/// The summary `RES_GET` gives, in C's order (`enum rdma_restrack_type`, without the counters
/// and DMA handles it does not show): the name, and the tracked type (completion counters are
/// not tracked here: no driver has them).
const SUMMARY: [(&[u8], Option<ResType>); 8] = [
    (b"pd", Some(ResType::Pd)),
    (b"cq", Some(ResType::Cq)),
    (b"qp", Some(ResType::Qp)),
    (b"cm_id", Some(ResType::CmId)),
    (b"mr", Some(ResType::Mr)),
    (b"ctx", Some(ResType::Ctx)),
    (b"srq", Some(ResType::Srq)),
    (b"comp_cntr", None),
];

/// How many objects of `kind` the device has (C's `rdma_restrack_count`; `show_details`
/// would count driver-internal objects too, which this core does not tell apart).
fn restrack_count(dev: &IbDevice, kind: Option<ResType>, _show_details: bool) -> u64 {
    kind.map_or(0, |k| dev.restrack().count(k))
}

/// The limit `RES_GET` shows next to a count (C's `fill_res_info`); 0 is not shown.
fn restrack_max(dev: &IbDevice, kind: Option<ResType>) -> u64 {
    let a = dev.attr();
    u64::from(match kind {
        Some(ResType::Qp) => a.max_qp,
        Some(ResType::Cq) => a.max_cq,
        Some(ResType::Mr) => a.max_mr,
        Some(ResType::Pd) => a.max_pd,
        Some(ResType::Srq) => a.max_srq,
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
        return set_netns(req, &dev, fd, name);
    }
    if let Some(name) = name {
        if name.is_empty() {
            return Err(EINVAL);
        }
        return device::rename(&dev, name);
    }
    if let Some(dim) = attrs.u8(attr::ATTR_DEV_DIM) {
        return dev.set_use_cq_dim(dim);
    }
    Ok(())
}

/// Moves a device to the namespace `fd` names (C's `ib_device_set_netns_put`).
fn set_netns(req: &Request<'_>, dev: &IbDevice, fd: u32, name: Option<&[u8]>) -> Result {
    let net = match NetRef::from_fd(fd as i32) {
        Ok(net) => net,
        Err(e) => {
            req.set_err_msg(c"Invalid target net namespace fd");
            return Err(e);
        }
    };
    // `netlink_ns_capable(skb, net->user_ns, CAP_NET_ADMIN)` holds: the sender passed the
    // admin check in the initial user namespace, the ancestor of every other.
    //
    // Every device lives in the initial namespace; moving one there is a no-op, a name still
    // renames it in place.
    if net.is_init_net() {
        let ret = match name {
            Some(n) => device::rename(dev, n),
            None => Ok(()),
        };
        if ret == Err(EEXIST) {
            req.set_err_msg(c"Device name already exists in the target net namespace");
        } else if ret == Err(EINVAL) && name.is_some() {
            req.set_err_msg(c"Unable to use requested device name in the target net namespace");
        }
        return ret;
    }
    if rdma_nl::shared_netns() {
        req.set_err_msg(c"Cannot change net namespace of RDMA device in shared netns mode");
        return Err(EOPNOTSUPP);
    }
    // Drivers here cannot disassociate user contexts (`disassociate_ucontext`).
    req.set_err_msg(c"Device does not support namespace changes (no disassociate support)");
    Err(EOPNOTSUPP)
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
    let net = req.net();
    answer(req, cmd::CMD_GET, |w| fill_port_info(w, net, &dev, port))
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
        let net_raw = buf.net().as_raw();
        // SAFETY: The requesting socket's namespace outlives its dump.
        let net = unsafe { Net::from_raw(net_raw) };
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
            if fill_port_info(&mut w, net, &dev, port).is_err() {
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
    /// The tracked type (`None`: statistic counters, which resource tracking does not list).
    kind: Option<ResType>,
    /// The table attribute holding the entries.
    table: u16,
    /// The attribute of one entry in the table.
    entry: u16,
    /// The attribute that names one object in a doit.
    id: u16,
    /// Objects of the device rather than of a port (`NLDEV_PER_DEV`).
    per_dev: bool,
}

const RES_QP: ResObject = ResObject {
    kind: Some(ResType::Qp),
    table: attr::ATTR_RES_QP,
    entry: attr::ATTR_RES_QP_ENTRY,
    id: attr::ATTR_RES_LQPN,
    per_dev: false,
};
const RES_CM_ID: ResObject = ResObject {
    kind: Some(ResType::CmId),
    table: attr::ATTR_RES_CM_ID,
    entry: attr::ATTR_RES_CM_ID_ENTRY,
    id: attr::ATTR_RES_CM_IDN,
    per_dev: false,
};
const RES_CQ: ResObject = ResObject {
    kind: Some(ResType::Cq),
    table: attr::ATTR_RES_CQ,
    entry: attr::ATTR_RES_CQ_ENTRY,
    id: attr::ATTR_RES_CQN,
    per_dev: true,
};
const RES_MR: ResObject = ResObject {
    kind: Some(ResType::Mr),
    table: attr::ATTR_RES_MR,
    entry: attr::ATTR_RES_MR_ENTRY,
    id: attr::ATTR_RES_MRN,
    per_dev: true,
};
const RES_PD: ResObject = ResObject {
    kind: Some(ResType::Pd),
    table: attr::ATTR_RES_PD,
    entry: attr::ATTR_RES_PD_ENTRY,
    id: attr::ATTR_RES_PDN,
    per_dev: true,
};
const RES_CTX: ResObject = ResObject {
    kind: Some(ResType::Ctx),
    table: attr::ATTR_RES_CTX,
    entry: attr::ATTR_RES_CTX_ENTRY,
    id: attr::ATTR_RES_CTXN,
    per_dev: true,
};
const RES_COUNTER: ResObject = ResObject {
    kind: None,
    table: attr::ATTR_STAT_COUNTER,
    entry: attr::ATTR_STAT_COUNTER_ENTRY,
    id: attr::ATTR_STAT_COUNTER_ID,
    per_dev: false,
};
const RES_SRQ: ResObject = ResObject {
    kind: Some(ResType::Srq),
    table: attr::ATTR_RES_SRQ,
    entry: attr::ATTR_RES_SRQ_ENTRY,
    id: attr::ATTR_RES_SRQN,
    per_dev: true,
};

/// `RDMA_NLDEV_ATTR_RES_KERN_NAME` (C's `fill_res_name_pid` for a kernel object; user objects
/// get `RES_PID`, `fill_res_pid`).
fn fill_res_name(w: &mut MsgWriter<'_>, name: KernName) -> Result {
    w.put_string(attr::ATTR_RES_KERN_NAME, name.as_bytes())
}

/// `IB_MIG_MIGRATED`: the path migration state the core reports for RC and UC QPs (no driver
/// here has alternate paths, so none reports another).
const MIG_MIGRATED: u8 = 0;

/// One QP's attributes (C's `fill_res_qp_entry` and `fill_res_qp_entry_query`).
fn fill_res_qp_entry(w: &mut MsgWriter<'_>, qp: &Qp, port: u32) -> Result {
    fill_res_qp_port(w, qp.port(), port)?;
    w.put_u32(attr::ATTR_RES_LQPN, qp.qp_num())?;
    fill_res_name(w, qp.kern_name())?;
    fill_res_qp_query(w, qp.qp_type(), &qp.query()?)
}

/// A QP's port, if a modify set one; `EAGAIN` (skip it) when the request names another port.
fn fill_res_qp_port(w: &mut MsgWriter<'_>, qp_port: u32, port: u32) -> Result {
    if port != 0 && port != qp_port {
        return Err(EAGAIN);
    }
    if qp_port != 0 {
        w.put_u32(attr::ATTR_PORT_INDEX, qp_port)?;
    }
    Ok(())
}

/// The attributes of a QP's entry that come from a query (C's `fill_res_qp_entry_query`).
fn fill_res_qp_query(w: &mut MsgWriter<'_>, qp_type: QpType, a: &QpAttr) -> Result {
    let connected = matches!(qp_type, QpType::Rc | QpType::Uc);
    if connected {
        w.put_u32(attr::ATTR_RES_RQPN, a.dest_qp_num)?;
        w.put_u32(attr::ATTR_RES_RQ_PSN, a.rq_psn)?;
    }
    w.put_u32(attr::ATTR_RES_SQ_PSN, a.sq_psn)?;
    if connected {
        w.put_u8(attr::ATTR_RES_PATH_MIG_STATE, MIG_MIGRATED)?;
    }
    w.put_u8(attr::ATTR_RES_TYPE, qp_type as u8)?;
    w.put_u8(attr::ATTR_RES_STATE, a.qp_state as u8)
}

/// One user QP's attributes (C's `fill_res_qp_entry` for a user QP): as a kernel QP's, with
/// its PD's id and its task's pid instead of a module name.
fn fill_res_user_qp_entry(w: &mut MsgWriter<'_>, qp: &UserQpRes, port: u32) -> Result {
    fill_res_qp_port(w, qp.port(), port)?;
    w.put_u32(attr::ATTR_RES_LQPN, qp.qp_num())?;
    w.put_u32(attr::ATTR_RES_PDN, qp.pd_id())?;
    fill_res_pid(w, qp.pid())?;
    fill_res_qp_query(w, qp.qp_type(), &qp.query()?)
}

/// One CQ's attributes (C's `fill_res_cq_entry`).
fn fill_res_cq_entry(w: &mut MsgWriter<'_>, cq: &Cq, id: u32) -> Result {
    w.put_u32(attr::ATTR_RES_CQE, cq.cqe())?;
    w.put_u64(attr::ATTR_RES_USECNT, cq.users(), attr::ATTR_PAD)?;
    w.put_u8(attr::ATTR_RES_POLL_CTX, cq.poll_ctx())?;
    // No CQ here has adaptive moderation (`cq->dim`).
    w.put_u8(attr::ATTR_DEV_DIM, 0)?;
    w.put_u32(attr::ATTR_RES_CQN, id)?;
    fill_res_name(w, cq.kern_name())
}

/// One user CQ's attributes (C's `fill_res_cq_entry` for a user CQ: no poll context, its
/// context's id and the pid of its task).
fn fill_res_user_cq_entry(w: &mut MsgWriter<'_>, cq: &UserCqRes, id: u32) -> Result {
    w.put_u32(attr::ATTR_RES_CQE, cq.cqe())?;
    w.put_u64(attr::ATTR_RES_USECNT, cq.users(), attr::ATTR_PAD)?;
    w.put_u8(attr::ATTR_DEV_DIM, 0)?;
    w.put_u32(attr::ATTR_RES_CQN, id)?;
    w.put_u32(attr::ATTR_RES_CTXN, cq.ctx_id())?;
    fill_res_pid(w, cq.pid())
}

/// One MR's attributes (C's `fill_res_mr_entry`): its keys only for `CAP_NET_ADMIN`.
fn fill_res_mr_entry(w: &mut MsgWriter<'_>, mr: &Mr, id: u32, admin: bool) -> Result {
    if admin {
        w.put_u32(attr::ATTR_RES_RKEY, mr.rkey())?;
        w.put_u32(attr::ATTR_RES_LKEY, mr.lkey())?;
    }
    w.put_u64(attr::ATTR_RES_MRLEN, mr.length(), attr::ATTR_PAD)?;
    w.put_u32(attr::ATTR_RES_MRN, id)?;
    fill_res_name(w, mr.kern_name())
}

/// One PD's attributes (C's `fill_res_pd_entry`): its keys only for `CAP_NET_ADMIN`.
fn fill_res_pd_entry(w: &mut MsgWriter<'_>, pd: &Pd, id: u32, admin: bool) -> Result {
    if admin {
        w.put_u32(attr::ATTR_RES_LOCAL_DMA_LKEY, pd.local_dma_lkey())?;
        if let Some(rkey) = pd.unsafe_global_rkey() {
            w.put_u32(attr::ATTR_RES_UNSAFE_GLOBAL_RKEY, rkey)?;
        }
    }
    w.put_u64(attr::ATTR_RES_USECNT, pd.users(), attr::ATTR_PAD)?;
    w.put_u32(attr::ATTR_RES_PDN, id)?;
    fill_res_name(w, pd.kern_name())
}

/// `IB_SRQT_BASIC`, the only SRQ type here.
const SRQT_BASIC: u8 = 0;

/// One `QP_ENTRY` of an SRQ's QP table: a number, or a range (C's `fill_res_range_qp_entry`).
fn fill_qp_range(w: &mut MsgWriter<'_>, min: u32, max: u32) -> Result {
    if min == 0 {
        return Ok(());
    }
    let mut entry = w.nest(attr::ATTR_RES_QP_ENTRY)?;
    if min == max {
        entry.put_u32(attr::ATTR_RES_LQPN, min)?;
    } else {
        entry.put_u32(attr::ATTR_MIN_RANGE, min)?;
        entry.put_u32(attr::ATTR_MAX_RANGE, max)?;
    }
    entry.end();
    Ok(())
}

/// One SRQ's attributes (C's `fill_res_srq_entry`): its number, type and PD, its QPs as
/// ranges of numbers (`qp_of` gives the number of a listed QP that receives from it).
fn fill_srq_common(
    w: &mut MsgWriter<'_>,
    lists: &Lists<'_>,
    id: u32,
    pd_id: u32,
    qp_of: impl Fn(&ResView<'_>) -> Option<u32>,
) -> Result {
    w.put_u32(attr::ATTR_RES_SRQN, id)?;
    w.put_u8(attr::ATTR_RES_TYPE, SRQT_BASIC)?;
    w.put_u32(attr::ATTR_RES_PDN, pd_id)?;
    let mut table = w.nest(attr::ATTR_RES_QP)?;
    let (mut min, mut prev) = (0u32, 0u32);
    let mut res = Ok(());
    lists.each(ResType::Qp, |_, obj| {
        if res.is_err() {
            return;
        }
        let Some(n) = ResView::of(obj).and_then(|view| qp_of(&view)) else {
            return;
        };
        if min == 0 {
            min = n;
        } else if n > prev.wrapping_add(1) {
            res = fill_qp_range(&mut table, min, prev);
            min = n;
        }
        prev = n;
    });
    res?;
    fill_qp_range(&mut table, min, prev)?;
    table.end();
    Ok(())
}

/// A kernel SRQ's attributes, with the module that made it.
fn fill_res_srq_entry(w: &mut MsgWriter<'_>, lists: &Lists<'_>, srq: &Srq, id: u32) -> Result {
    fill_srq_common(w, lists, id, srq.pd().res_id(), |view| match view {
        ResView::Qp(qp) if qp.srq().is_some_and(|s| core::ptr::eq(&**s, srq)) => Some(qp.qp_num()),
        _ => None,
    })?;
    fill_res_name(w, srq.kern_name())
}

/// A user SRQ's attributes, with the pid of its task.
fn fill_res_user_srq_entry(
    w: &mut MsgWriter<'_>,
    lists: &Lists<'_>,
    srq: &UserSrqRes,
    id: u32,
) -> Result {
    fill_srq_common(w, lists, id, srq.pd_id(), |view| match view {
        ResView::UserQp(qp) if qp.srq_id() == Some(id) => Some(qp.qp_num()),
        _ => None,
    })?;
    fill_res_pid(w, srq.pid())
}

/// Which entries a resource command fills.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// C's `fill_res_*_entry`.
    Res,
    /// C's `fill_res_*_raw_entry`: the driver's raw context, which no driver here gives
    /// (`EINVAL`, as C without the driver callback).
    Raw,
    /// C's `fill_stat_mr_entry` (`STAT_GET` of MRs): the MR number, and the driver's MR
    /// statistics, which no driver here has.
    StatMr,
}

/// One object's attributes, as `fill` says. `EAGAIN`: not on `port`.
fn fill_res_entry(
    w: &mut MsgWriter<'_>,
    lists: &Lists<'_>,
    obj: &dyn Tracked,
    id: u32,
    port: u32,
    admin: bool,
    fill: Fill,
) -> Result {
    let view = ResView::of(obj).ok_or(EINVAL)?;
    match (fill, view) {
        (Fill::Raw, ResView::Qp(qp)) => {
            if port != 0 && port != qp.port() {
                return Err(EAGAIN);
            }
            Err(EINVAL)
        }
        (Fill::Raw, ResView::UserQp(qp)) => {
            if port != 0 && port != qp.port() {
                return Err(EAGAIN);
            }
            Err(EINVAL)
        }
        (Fill::Raw, _) => Err(EINVAL),
        (Fill::StatMr, ResView::Mr(_) | ResView::UserMr(_)) => w.put_u32(attr::ATTR_RES_MRN, id),
        (Fill::Res, ResView::UserMr(mr)) => fill_res_user_mr_entry(w, mr, id, admin),
        // Only MRs are asked for with `StatMr`.
        (Fill::StatMr, _) => Err(EINVAL),
        (Fill::Res, ResView::Qp(qp)) => fill_res_qp_entry(w, qp, port),
        (Fill::Res, ResView::Cq(cq)) => fill_res_cq_entry(w, cq, id),
        (Fill::Res, ResView::UserCq(cq)) => fill_res_user_cq_entry(w, cq, id),
        (Fill::Res, ResView::UserQp(qp)) => fill_res_user_qp_entry(w, qp, port),
        (Fill::Res, ResView::Mr(mr)) => fill_res_mr_entry(w, mr, id, admin),
        (Fill::Res, ResView::Pd(pd)) => fill_res_pd_entry(w, pd, id, admin),
        (Fill::Res, ResView::Srq(srq)) => fill_res_srq_entry(w, lists, srq, id),
        (Fill::Res, ResView::UserSrq(srq)) => fill_res_user_srq_entry(w, lists, srq, id),
        (Fill::Res, ResView::CmId(cm)) => fill_res_cm_id_entry(w, cm, id, port),
        (Fill::Res, ResView::Ctx(ctx)) => {
            w.put_u32(attr::ATTR_RES_CTXN, ctx.id())?;
            fill_res_pid(w, ctx.pid())
        }
        (Fill::Res, ResView::UserPd(pd)) => {
            if admin {
                // A user PD has no local DMA lkey (C leaves it 0).
                w.put_u32(attr::ATTR_RES_LOCAL_DMA_LKEY, 0)?;
            }
            w.put_u64(attr::ATTR_RES_USECNT, pd.users(), attr::ATTR_PAD)?;
            w.put_u32(attr::ATTR_RES_PDN, id)?;
            w.put_u32(attr::ATTR_RES_CTXN, pd.ctx_id())?;
            fill_res_pid(w, pd.pid())
        }
    }
}

/// One rdma_cm ID's attributes (C's `fill_res_cm_id_entry`): its port (`EAGAIN`, skip it, when
/// the request names another), its QP once it has one, port space, state, the addresses it has,
/// its id, and its module or task. (No driver here has a `fill_res_cm_id_entry` of its own.)
fn fill_res_cm_id_entry(w: &mut MsgWriter<'_>, cm: &CmIdEntry, id: u32, port: u32) -> Result {
    let cm_port = cm.port();
    if port != 0 && port != cm_port {
        return Err(EAGAIN);
    }
    if cm_port != 0 {
        w.put_u32(attr::ATTR_PORT_INDEX, cm_port)?;
    }
    if let Some((qpn, qp_type)) = cm.qp() {
        w.put_u32(attr::ATTR_RES_LQPN, qpn)?;
        w.put_u8(attr::ATTR_RES_TYPE, qp_type)?;
    }
    w.put_u32(attr::ATTR_RES_PS, cm.ps())?;
    w.put_u8(attr::ATTR_RES_STATE, cm.state())?;
    if let Some(a) = cm.src_addr() {
        w.put_bytes(attr::ATTR_RES_SRC_ADDR, &a)?;
    }
    if let Some(a) = cm.dst_addr() {
        w.put_bytes(attr::ATTR_RES_DST_ADDR, &a)?;
    }
    w.put_u32(attr::ATTR_RES_CM_IDN, id)?;
    match cm.creator() {
        Some(name) => fill_res_name(w, name),
        None => fill_res_pid(w, cm.pid()),
    }
}

/// One user MR's attributes (C's `fill_res_mr_entry` for a user MR): its keys only for
/// `CAP_NET_ADMIN`, its PD's id, the pid of its task.
fn fill_res_user_mr_entry(w: &mut MsgWriter<'_>, mr: &UserMrRes, id: u32, admin: bool) -> Result {
    if admin {
        w.put_u32(attr::ATTR_RES_RKEY, mr.rkey())?;
        w.put_u32(attr::ATTR_RES_LKEY, mr.lkey())?;
    }
    w.put_u64(attr::ATTR_RES_MRLEN, mr.length(), attr::ATTR_PAD)?;
    w.put_u32(attr::ATTR_RES_MRN, id)?;
    w.put_u32(attr::ATTR_RES_PDN, mr.pd_id())?;
    fill_res_pid(w, mr.pid())
}

/// `RDMA_NLDEV_ATTR_RES_PID` of a user object (C's `fill_res_name_pid`), left out once the
/// task has exited.
fn fill_res_pid(w: &mut MsgWriter<'_>, pid: i32) -> Result {
    if pid != 0 {
        w.put_u32(attr::ATTR_RES_PID, pid as u32)?;
    }
    Ok(())
}

/// `RES_<object>_GET` doit (C's `res_get_common_doit`): one object by id.
fn res_object_doit(req: &Request<'_>, obj: &ResObject, fill: Fill) -> Result {
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
    let kind = obj.kind.ok_or(ENOENT)?;
    let admin = req.capable(kernel::bindings::CAP_NET_ADMIN);
    let command = uapi::op_of(req.msg().msg_type());
    let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL).map_err(|_| ENOMEM)?;
    dev.restrack()
        .with(kind, id, |lists, view| -> Result {
            let mut w = msg.put(req.portid(), req.msg().seq(), nldev_type(command), 0)?;
            fill_handle(&mut w, &dev).map_err(|_| EMSGSIZE)?;
            fill_res_entry(&mut w, lists, view, id, port, admin, fill)?;
            w.end();
            Ok(())
        })
        .ok_or(ENOENT)??;
    req.unicast(msg)
}

/// `RES_<object>_GET` dump (C's `res_get_common_dumpit`): the objects of a device, `start`
/// being the position of the next one to send (C's `cb->args[0]`).
fn res_object_dump(
    buf: &mut DumpBuffer<'_>,
    start: &mut u32,
    obj: &ResObject,
    admin: bool,
    fill: Fill,
) -> Result {
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
    let port = port.unwrap_or(0);
    let (portid, seq, op) = (
        buf.portid(),
        buf.seq(),
        uapi::op_of(buf.request().msg_type()),
    );
    let mut w = buf.put(portid, seq, nldev_type(op), flags::MULTI)?;
    fill_handle(&mut w, &dev)?;
    let mut table = w.nest_noflag(obj.table)?;
    let mut filled = false;
    let mut next = *start as usize;
    let mut failed = None;
    if let Some(kind) = obj.kind {
        dev.restrack()
            .visit(kind, *start as usize, |lists, pos, id, view| {
                next = pos;
                filled = true;
                let Ok(mut entry) = table.nest_noflag(obj.entry) else {
                    // The buffer is full: the next round resumes here.
                    return false;
                };
                match fill_res_entry(&mut entry, lists, view, id, port, admin, fill) {
                    Ok(()) => entry.end(),
                    Err(e) if e == EMSGSIZE => {
                        entry.cancel();
                        return false;
                    }
                    Err(e) if e == EAGAIN => entry.cancel(),
                    Err(e) => {
                        entry.cancel();
                        failed = Some(e);
                        return false;
                    }
                }
                next = pos + 1;
                true
            });
    }
    if let Some(e) = failed {
        table.cancel();
        w.cancel();
        return Err(e);
    }
    if !filled {
        // Nothing (more) to send: the message is cancelled and the dump ends with
        // `NLMSG_DONE` alone, as in C.
        table.cancel();
        w.cancel();
        return Ok(());
    }
    table.end();
    w.end();
    *start = u32::try_from(next).unwrap_or(u32::MAX);
    Ok(())
}

/// The doit and dump of one tracked object type (`K` indexes [`ResObjectDump::OBJECT`]);
/// `RAW`: the `_RAW` command; `ADMIN`: whether the requester has `CAP_NET_ADMIN` (known when the
/// dump starts, which picks the type, since C asks it of the request's buffer in every round).
struct ResObjectDump<const K: u8, const RAW: bool, const ADMIN: bool>;

impl<const K: u8, const RAW: bool, const ADMIN: bool> ResObjectDump<K, RAW, ADMIN> {
    const FILL: Fill = if RAW { Fill::Raw } else { Fill::Res };
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
        res_object_doit(req, Self::OBJECT, Self::FILL)
    }
}

impl<const K: u8, const RAW: bool, const ADMIN: bool> Dump for ResObjectDump<K, RAW, ADMIN> {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, start: &mut u32) -> Result {
        res_object_dump(buf, start, Self::OBJECT, ADMIN, Self::FILL)
    }
}

/// Starts the dump of object type `K`, with what the requester may see.
fn start_res_object_dump<const K: u8, const RAW: bool>(req: &mut Request<'_>) -> Result {
    if req.capable(kernel::bindings::CAP_NET_ADMIN) {
        rdma_nl::start_dump::<ResObjectDump<K, RAW, true>>(req)
    } else {
        rdma_nl::start_dump::<ResObjectDump<K, RAW, false>>(req)
    }
}

/// `GET_CHARDEV` doit: the character device a client (`uverbs`, `umad`) offers for a device
/// or globally.
fn get_chardev(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    let client = attrs.string(attr::ATTR_CHARDEV_TYPE).ok_or(EINVAL)?;
    // `nla_strscpy` into `RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE` bytes.
    let client = client.get(..uapi::CHARDEV_TYPE_SIZE - 1).unwrap_or(client);
    let mut port = None;
    let mut dev = None;
    if attrs.has(attr::ATTR_DEV_INDEX) {
        let d = requested_device(req.net(), &attrs)?;
        if let Some(p) = attrs.u32(attr::ATTR_PORT_INDEX) {
            if !d.is_valid_port(p) {
                return Err(EINVAL);
            }
            port = Some(p);
        }
        dev = Some(d);
    } else if attrs.has(attr::ATTR_PORT_INDEX) {
        return Err(EINVAL);
    }
    let info = chardev_info(dev.as_deref(), client, port)?;
    answer(req, cmd::CMD_GET_CHARDEV, |w| {
        if let Some(id) = info.driver_id {
            w.put_u32(attr::ATTR_UVERBS_DRIVER_ID, id)?;
        }
        w.put_u64(attr::ATTR_CHARDEV, info.devt.huge_encoded(), attr::ATTR_PAD)?;
        w.put_u64(attr::ATTR_CHARDEV_ABI, info.abi, attr::ATTR_PAD)?;
        w.put_string(attr::ATTR_CHARDEV_NAME, info.name.to_bytes())
    })
}

/// The character device of `client` for `dev`, or the client's global one without a device
/// (C's `ib_get_client_nl_info`; no client of this core has a global one). When no client of
/// that name answers, the module aliased `rdma-client-<name>` is loaded (ib_uverbs is) and the
/// clients are asked again; still none: `EOPNOTSUPP`.
fn chardev_info(dev: Option<&IbDevice>, client: &[u8], port: Option<u32>) -> Result<ChardevInfo> {
    let ask = || match dev {
        Some(d) => registry::client_chardev_info(d, client, port),
        None => Err(ENOENT),
    };
    match ask() {
        Err(e) if e == ENOENT => {}
        other => return other,
    }
    let alias = CString::try_from_fmt(fmt!("rdma-client-{}", BStr::from_bytes(client)))?;
    // Whether modprobe found anything shows in the second look.
    let _ = kernel::kmod::request_module(&alias);
    ask().map_err(|e| if e == ENOENT { EOPNOTSUPP } else { e })
}

/// `SYS_GET` doit.
fn sys_get_doit(req: &mut Request<'_>) -> Result {
    parse(req)?;
    answer(req, cmd::CMD_SYS_GET, |w| {
        w.put_u8(attr::SYS_ATTR_NETNS_MODE, u8::from(rdma_nl::shared_netns()))?;
        w.put_u8(
            attr::SYS_ATTR_PRIVILEGED_QKEY_MODE,
            u8::from(crate::verbs::controlled_qkey::privileged_mode()),
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
        crate::verbs::controlled_qkey::set_privileged_mode(mode == 1);
        return Ok(());
    }
    Err(EINVAL)
}

/// `nla_strscpy` into a buffer of `size` bytes: at most `size - 1` bytes of the string.
fn strscpy(s: &[u8], size: usize) -> &[u8] {
    s.get(..size.saturating_sub(1)).unwrap_or(s)
}

/// `RDMA_COUNTER_MODE_AUTO`.
const COUNTER_MODE_AUTO: u32 = 1;

/// `NEWLINK` doit: a software device on a network device (`rdma link add`).
fn newlink(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    let (Some(ibdev), Some(kind), Some(ndev)) = (
        attrs.string(attr::ATTR_DEV_NAME),
        attrs.string(attr::ATTR_LINK_TYPE),
        attrs.string(attr::ATTR_NDEV_NAME),
    ) else {
        return Err(EINVAL);
    };
    let ibdev = strscpy(ibdev, usize::from(DEVICE_NAME_MAX));
    if ibdev.contains(&b'%') || ibdev.is_empty() {
        return Err(EINVAL);
    }
    let kind = strscpy(kind, usize::from(IFNAMSIZ));
    let ndev = strscpy(ndev, usize::from(IFNAMSIZ));
    let mut name = [0u8; IFNAMSIZ as usize];
    name.get_mut(..ndev.len())
        .ok_or(EINVAL)?
        .copy_from_slice(ndev);
    let name = CStr::from_bytes_until_nul(&name).map_err(|_| EINVAL)?;
    let ndev = req.net().netdev_by_name(name).ok_or(ENODEV)?;
    // The link type's C driver (rxe, siw) makes the device.
    crate::c_abi::driver::link::newlink(kind, ibdev, &ndev)
}

/// `DELLINK` doit: removes a software device (`rdma link delete`).
fn dellink(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    if !attrs.has(attr::ATTR_DEV_INDEX) {
        return Err(EINVAL);
    }
    // The device must be one the request's namespace sees; the reference goes before the
    // unregistration, which waits for every reference.
    let index = requested_device(req.net(), &attrs)
        .map_err(|_| EINVAL)?
        .index();
    // Only C drivers' devices that allow it may be unregistered by users
    // (`IBK_ALLOW_USER_UNREG`, set by software drivers).
    crate::c_abi::driver::registration::dellink(index)
}

/// `STAT_SET` doit: counter mode, QP binding, optional counters (`rdma stat set`).
fn stat_set(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    if !attrs.has(attr::ATTR_DEV_INDEX) || !attrs.has(attr::ATTR_PORT_INDEX) {
        return Err(EINVAL);
    }
    let dev = requested_device(req.net(), &attrs)?;
    if !attrs
        .u32(attr::ATTR_PORT_INDEX)
        .is_some_and(|p| dev.is_valid_port(p))
    {
        return Err(EINVAL);
    }
    if !attrs.has(attr::ATTR_STAT_MODE) && !attrs.has(attr::ATTR_STAT_HWCOUNTERS) {
        return Err(EINVAL);
    }
    if let Some(mode) = attrs.u32(attr::ATTR_STAT_MODE) {
        // Only QP counters exist.
        if attrs.u32(attr::ATTR_STAT_RES) != Some(u32::from(attr::ATTR_RES_QP)) {
            return Err(EINVAL);
        }
        if mode == COUNTER_MODE_AUTO {
            // `rdma_counter_set_auto_mode`: a port without hardware counters.
            return Err(EOPNOTSUPP);
        }
        if !attrs.has(attr::ATTR_RES_LQPN) {
            return Err(EINVAL);
        }
        if attrs.has(attr::ATTR_STAT_COUNTER_ID) {
            // `rdma_counter_bind_qpn`: the QP is looked up by number, which resource tracking
            // cannot do yet (it only counts).
            return Err(ENOENT);
        }
        // `rdma_counter_bind_qpn_alloc`: a port without hardware counters.
        return Err(EOPNOTSUPP);
    }
    // Optional counters (`ib_get_hw_stats_port`): none without hardware counters.
    Err(EINVAL)
}

/// `STAT_DEL` doit: unbinds a QP from a counter.
fn stat_del(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    for a in [
        attr::ATTR_STAT_RES,
        attr::ATTR_DEV_INDEX,
        attr::ATTR_PORT_INDEX,
        attr::ATTR_STAT_COUNTER_ID,
        attr::ATTR_RES_LQPN,
    ] {
        if !attrs.has(a) {
            return Err(EINVAL);
        }
    }
    if attrs.u32(attr::ATTR_STAT_RES) != Some(u32::from(attr::ATTR_RES_QP)) {
        return Err(EINVAL);
    }
    let dev = requested_device(req.net(), &attrs)?;
    if !attrs
        .u32(attr::ATTR_PORT_INDEX)
        .is_some_and(|p| dev.is_valid_port(p))
    {
        return Err(EINVAL);
    }
    // `rdma_counter_unbind_qpn` looks the QP up by number, which resource tracking cannot do
    // yet.
    Err(ENOENT)
}

/// `STAT_GET` doit: a port's hardware counters, a port's counter mode, or one counter or MR.
fn stat_get_doit(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    let Some(res) = attrs.u32(attr::ATTR_STAT_RES) else {
        return stat_get_default_counter(req, &attrs);
    };
    if res == u32::from(attr::ATTR_RES_QP) {
        if attrs.has(attr::ATTR_STAT_COUNTER_ID) {
            return res_object_doit(req, &RES_COUNTER, Fill::Res);
        }
        if !attrs.has(attr::ATTR_STAT_MODE)
            || !attrs.has(attr::ATTR_DEV_INDEX)
            || !attrs.has(attr::ATTR_PORT_INDEX)
        {
            return Err(EINVAL);
        }
        let dev = requested_device(req.net(), &attrs)?;
        let port = attrs.u32(attr::ATTR_PORT_INDEX).ok_or(EINVAL)?;
        if !dev.is_valid_port(port) {
            return Err(EINVAL);
        }
        // The port's counter mode (`rdma_counter_get_mode`): no counter was ever set up, so
        // it is `RDMA_COUNTER_MODE_NONE`, without a mask.
        return answer(req, cmd::CMD_STAT_GET, |w| {
            fill_handle(w, &dev)?;
            w.put_u32(attr::ATTR_PORT_INDEX, port)?;
            w.put_u32(attr::ATTR_STAT_MODE, 0)
        });
    }
    if res == u32::from(attr::ATTR_RES_MR) {
        return res_object_doit(req, &RES_MR, Fill::StatMr);
    }
    Err(EINVAL)
}

/// `STAT_GET` dump: the QP counters or the MRs of a device.
struct StatGetDump;

impl Dump for StatGetDump {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, start: &mut u32) -> Result {
        let res = {
            let attrs = buf
                .request()
                .parse(&POLICY, Validation::Liberal)
                .map_err(|_| EINVAL)?;
            attrs.u32(attr::ATTR_STAT_RES).ok_or(EINVAL)?
        };
        if res == u32::from(attr::ATTR_RES_QP) {
            res_object_dump(buf, start, &RES_COUNTER, false, Fill::Res)
        } else if res == u32::from(attr::ATTR_RES_MR) {
            res_object_dump(buf, start, &RES_MR, false, Fill::StatMr)
        } else {
            Err(EINVAL)
        }
    }
}

/// `STAT_GET` doit without `STAT_RES`: the hardware counters of a port, read now (`rdma stat
/// show`; C's `stat_get_doit_default_counter`): `EINVAL` for a device without them, a port
/// without them or a failed read.
fn stat_get_default_counter(req: &mut Request<'_>, attrs: &Attrs<'_, ATTR_MAX>) -> Result {
    if !attrs.has(attr::ATTR_DEV_INDEX) || !attrs.has(attr::ATTR_PORT_INDEX) {
        return Err(EINVAL);
    }
    let dev = requested_device(req.net(), attrs)?;
    let port = attrs.u32(attr::ATTR_PORT_INDEX).ok_or(EINVAL)?;
    let stats = dev.hw_stats(port).ok_or(EINVAL)?;
    answer(req, cmd::CMD_STAT_GET, |w| {
        fill_handle(w, &dev)?;
        w.put_u32(attr::ATTR_PORT_INDEX, port)?;
        let mut table = w.nest(attr::ATTR_STAT_HWCOUNTERS)?;
        // Bound counters add no history: no counter is ever bound here.
        stats.read_enabled(
            |v, i| dev.read_hw_stats(port, v, i),
            |name, value| {
                let mut entry = table.nest(attr::ATTR_STAT_HWCOUNTER_ENTRY)?;
                entry.put_string(attr::ATTR_STAT_HWCOUNTER_ENTRY_NAME, name.to_bytes())?;
                entry.put_u64(attr::ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value, attr::ATTR_PAD)?;
                entry.end();
                Ok(())
            },
        )?;
        table.end();
        Ok(())
    })
}

/// `STAT_GET_STATUS` doit: which hardware counters a port has and which are enabled.
fn stat_get_status(req: &mut Request<'_>) -> Result {
    let attrs = parse(req).map_err(|_| EINVAL)?;
    if !attrs.has(attr::ATTR_DEV_INDEX) || !attrs.has(attr::ATTR_PORT_INDEX) {
        return Err(EINVAL);
    }
    let dev = requested_device(req.net(), &attrs)?;
    if !attrs
        .u32(attr::ATTR_PORT_INDEX)
        .is_some_and(|p| dev.is_valid_port(p))
    {
        return Err(EINVAL);
    }
    let port = attrs.u32(attr::ATTR_PORT_INDEX).ok_or(EINVAL)?;
    // `ib_get_hw_stats_port`: `EINVAL` without hardware counters.
    let stats = dev.hw_stats(port).ok_or(EINVAL)?;
    answer(req, cmd::CMD_STAT_GET_STATUS, |w| {
        fill_handle(w, &dev)?;
        w.put_u32(attr::ATTR_PORT_INDEX, port)?;
        let mut table = w.nest(attr::ATTR_STAT_HWCOUNTERS)?;
        stats.for_each_desc(|index, name, enabled| {
            let mut entry = table.nest(attr::ATTR_STAT_HWCOUNTER_ENTRY)?;
            entry.put_string(attr::ATTR_STAT_HWCOUNTER_ENTRY_NAME, name.to_bytes())?;
            entry.put_u32(attr::ATTR_STAT_HWCOUNTER_INDEX, index)?;
            // Only optional counters say whether they are enabled.
            if let Some(enabled) = enabled {
                entry.put_u8(attr::ATTR_STAT_HWCOUNTER_DYNAMIC, u8::from(enabled))?;
            }
            entry.end();
            Ok(())
        })?;
        table.end();
        Ok(())
    })
}

/// `NEWDEV` doit: a sub-device of a device (`rdma dev add`).
fn newdev(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    if !attrs.has(attr::ATTR_DEV_INDEX)
        || !attrs.has(attr::ATTR_DEV_NAME)
        || !attrs.has(attr::ATTR_DEV_TYPE)
    {
        return Err(EINVAL);
    }
    let _parent = requested_device(req.net(), &attrs)?;
    // `ib_add_sub_device`: no driver here makes sub-devices (`add_sub_dev`).
    Err(EOPNOTSUPP)
}

/// `DELDEV` doit: removes a sub-device (`rdma dev delete`).
fn deldev(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict).map_err(|_| EINVAL)?;
    let _dev = requested_device(req.net(), &attrs)?;
    // `ib_del_sub_device_and_put`: the device is no sub-device.
    Err(EOPNOTSUPP)
}

/// `FRMR_POOLS_GET` dump: the fast-registration MR pools of a device.
struct FrmrPoolsDump;

impl Dump for FrmrPoolsDump {
    type State = u32;

    fn dump(buf: &mut DumpBuffer<'_>, _start: &mut u32) -> Result {
        let index = {
            let attrs = buf
                .request()
                .parse(&POLICY, Validation::Liberal)
                .map_err(|_| EINVAL)?;
            attrs.u32(attr::ATTR_DEV_INDEX).ok_or(EINVAL)?
        };
        let _dev = device_by_index(buf.net(), index).ok_or(EINVAL)?;
        // No device here has FRMR pools: nothing to dump.
        Ok(())
    }
}

/// `FRMR_POOLS_SET` doit: the pools' aging period, or the handles pinned in one pool.
fn frmr_pools_set(req: &mut Request<'_>) -> Result {
    let attrs = req.parse(&POLICY, Validation::Strict)?;
    if !attrs.has(attr::ATTR_DEV_INDEX) {
        return Err(EINVAL);
    }
    let _dev = requested_device(req.net(), &attrs)?;
    if attrs.has(attr::ATTR_FRMR_POOLS_AGING_PERIOD) {
        // `ib_frmr_pools_set_aging_period`: no pools.
        return Err(EINVAL);
    }
    if attrs.has(attr::ATTR_FRMR_POOL_PINNED_HANDLES) {
        let key = attrs
            .parse_nested(attr::ATTR_FRMR_POOL_KEY, &POLICY, Validation::Strict)
            .ok_or(EINVAL)??;
        if key.has(attr::ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY) {
            return Err(EINVAL);
        }
        // `ib_frmr_pools_set_pinned`: no pools.
        return Err(EINVAL);
    }
    Ok(())
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

const fn res_object<const K: u8, const RAW: bool>() -> Op {
    doit_dump(
        ResObjectDump::<K, RAW, false>::doit,
        start_res_object_dump::<K, RAW>,
        RAW,
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
    t[cmd::CMD_RES_QP_GET as usize] = res_object::<0, false>();
    t[cmd::CMD_RES_CM_ID_GET as usize] = res_object::<1, false>();
    t[cmd::CMD_RES_CQ_GET as usize] = res_object::<2, false>();
    t[cmd::CMD_RES_MR_GET as usize] = res_object::<3, false>();
    t[cmd::CMD_RES_PD_GET as usize] = res_object::<4, false>();
    t[cmd::CMD_RES_CTX_GET as usize] = res_object::<5, false>();
    t[cmd::CMD_RES_SRQ_GET as usize] = res_object::<6, false>();
    t[cmd::CMD_SYS_GET as usize] = doit(sys_get_doit, false);
    t[cmd::CMD_SYS_SET as usize] = doit(sys_set_doit, true);
    t[cmd::CMD_NEWLINK as usize] = doit(newlink, true);
    t[cmd::CMD_DELLINK as usize] = doit(dellink, true);
    t[cmd::CMD_STAT_SET as usize] = doit(stat_set, true);
    t[cmd::CMD_STAT_GET as usize] =
        doit_dump(stat_get_doit, rdma_nl::start_dump::<StatGetDump>, false);
    t[cmd::CMD_STAT_DEL as usize] = doit(stat_del, true);
    t[cmd::CMD_STAT_GET_STATUS as usize] = doit(stat_get_status, false);
    t[cmd::CMD_NEWDEV as usize] = doit(newdev, true);
    t[cmd::CMD_DELDEV as usize] = doit(deldev, true);
    t[cmd::CMD_FRMR_POOLS_GET as usize] = Op {
        doit: None,
        dump: Some(rdma_nl::start_dump::<FrmrPoolsDump>),
        admin: false,
    };
    t[cmd::CMD_FRMR_POOLS_SET as usize] = doit(frmr_pools_set, true);
    t[cmd::CMD_RES_QP_GET_RAW as usize] = res_object::<0, true>();
    t[cmd::CMD_RES_CQ_GET_RAW as usize] = res_object::<2, true>();
    t[cmd::CMD_RES_MR_GET_RAW as usize] = res_object::<3, true>();
    t[cmd::CMD_RES_SRQ_GET_RAW as usize] = res_object::<6, true>();
    t
};

/// nldev registered with RDMA netlink (C's `nldev_init`); unregistered when dropped
/// (`nldev_exit`).
pub(crate) struct Registration;

impl Registration {
    /// Registers nldev's ops.
    pub(crate) fn new() -> Self {
        rdma_nl::register(uapi::client::NLDEV, &OPS);
        Self
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        rdma_nl::unregister(uapi::client::NLDEV);
    }
}
