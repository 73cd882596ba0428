// SPDX-License-Identifier: GPL-2.0

//! The device's commands (C's `uverbs_cmd.c` GET_CONTEXT, QUERY_DEVICE, QUERY_PORT and
//! EX_QUERY_DEVICE): a user context with its async event file, and the device's and ports'
//! attributes in the ABI's layouts (`struct ib_uverbs_query_device_resp` and its extension,
//! `struct ib_uverbs_query_port_resp`).

use crate::{
    file::event_file::{EventFile, NewEventFd},
    uabi::{
        ExQueryDevice, ExQueryDeviceResp, GetContext, GetContextResp, QueryDevice, QueryDeviceResp,
        QueryPort, QueryPortResp,
    },
    write::bundle::Bundle,
};
use ib_core::{
    attrs::{DeviceAttr, LinkLayer, PortAttr, CORE_CAP_IB_GRH_REQUIRED, CORE_CAP_OPA_MAD},
    device::ib_device::IbDevice,
    user::ucontext::UContext,
};
use kernel::{prelude::*, uapi};

/// `IB_UVERBS_QPF_GRH_REQUIRED`.
const QPF_GRH_REQUIRED: u8 = 1;
/// `IB_UVERBS_PCF_IP_BASED_GIDS`: bit 26 of the capability mask, which the ABI reuses.
const PCF_IP_BASED_GIDS: u32 = 1 << 26;
/// `IB_SPEED_NDR`: the legacy response has no room for faster speeds.
const SPEED_NDR: u16 = 128;

/// C's `copy_query_dev_fields`: the base device attributes. The EE, RDD, raw QP and FMR limits
/// stay 0: the kernel has none of them.
fn device_resp(ib: &IbDevice, a: &DeviceAttr) -> uapi::ib_uverbs_query_device_resp {
    uapi::ib_uverbs_query_device_resp {
        fw_ver: a.fw_ver,
        // The GUIDs as the ABI's `__be64` holds them: the big-endian bytes C keeps.
        node_guid: ib.node_guid().to_be(),
        sys_image_guid: a.sys_image_guid.to_be(),
        max_mr_size: a.max_mr_size,
        page_size_cap: a.page_size_cap,
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        max_qp: a.max_qp,
        max_qp_wr: a.max_qp_wr,
        device_cap_flags: u64::from(a.device_cap_flags) as u32,
        max_sge: a.max_send_sge.min(a.max_recv_sge),
        max_sge_rd: a.max_sge_rd,
        max_cq: a.max_cq,
        max_cqe: a.max_cqe,
        max_mr: a.max_mr,
        max_pd: a.max_pd,
        max_qp_rd_atom: a.max_qp_rd_atom,
        max_res_rd_atom: a.max_res_rd_atom,
        max_qp_init_rd_atom: a.max_qp_init_rd_atom,
        atomic_cap: a.atomic_cap.into(),
        max_mw: a.max_mw,
        max_mcast_grp: a.max_mcast_grp,
        max_mcast_qp_attach: a.max_mcast_qp_attach,
        max_total_mcast_qp_attach: a.max_total_mcast_qp_attach,
        max_ah: a.max_ah,
        max_srq: a.max_srq,
        max_srq_wr: a.max_srq_wr,
        max_srq_sge: a.max_srq_sge,
        max_pkeys: a.max_pkeys,
        local_ca_ack_delay: a.local_ca_ack_delay,
        phys_port_cnt: ib.port_count().min(u8::MAX.into()) as u8,
        ..Default::default()
    }
}

/// GET_CONTEXT by write() (C's `ib_uverbs_get_context`): the user context, and the async
/// event file whose fd the core response carries.
pub(crate) fn get_context(b: &mut Bundle<'_>) -> Result {
    b.request_as::<GetContext>()?;
    let ib = b.ufile.device().ib_device().ok_or(EIO)?;
    let fd = NewEventFd::new(EventFile::new_async()?)?;
    let mut resp = GetContextResp(Default::default());
    resp.async_fd = fd.fd();
    resp.num_comp_vectors = ib.num_comp_vectors();
    b.respond_as(&resp)?;
    let driver = b.driver;
    b.ufile
        .init_ucontext(Some(fd.events().clone()), || UContext::alloc(&ib, &driver))?;
    fd.install();
    Ok(())
}

/// QUERY_DEVICE (C's `ib_uverbs_query_device`): the attributes cached at registration.
pub(crate) fn query_device(b: &mut Bundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        b.request_as::<QueryDevice>()?;
        let ib = ctx.device();
        b.respond_as(&QueryDeviceResp(device_resp(ib, ib.attr())))
    })
}

/// EX_QUERY_DEVICE (C's `ib_uverbs_ex_query_device`): the attributes queried now, with the
/// driver's part in the driver data, and `response_length`. No on-demand paging, RSS, tag
/// matching or device memory: those capabilities stay 0.
pub(crate) fn ex_query_device(b: &mut Bundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        let req = b.request_as::<ExQueryDevice>()?;
        if req.comp_mask != 0 || req.reserved != 0 {
            return Err(EINVAL);
        }
        let ib = ctx.device();
        let a = ib.query_device_udata(&b.driver)?;
        let mut r = ExQueryDeviceResp(Default::default());
        r.base = device_resp(ib, &a);
        r.timestamp_mask = a.timestamp_mask;
        r.hca_core_clock = a.hca_core_clock;
        r.device_cap_flags_ex = u64::from(a.device_cap_flags);
        r.raw_packet_caps = a.raw_packet_caps;
        r.cq_moderation_caps.max_cq_moderation_count = a.max_cq_moderation_count;
        r.cq_moderation_caps.max_cq_moderation_period = a.max_cq_moderation_period;
        r.response_length = b.response_length(size_of::<ExQueryDeviceResp>());
        b.respond_as(&r)
    })
}

/// C's `copy_port_attr_to_resp`: a port's attributes as the ABI carries them.
pub(crate) fn port_resp(ib: &IbDevice, port: u32, a: &PortAttr) -> uapi::ib_uverbs_query_port_resp {
    let core_caps = ib.port_immutable(port).map_or(0, |i| i.core_cap_flags);
    let opa = core_caps & CORE_CAP_OPA_MAD != 0;
    // IB LIDs are 16 bits; Omni-Path's extended unicast LIDs are folded as C's
    // `OPA_TO_IB_UCAST_LID`.
    let lid16 = |lid: u32| if opa && lid >= 0xc000 { 0 } else { lid as u16 };
    uapi::ib_uverbs_query_port_resp {
        // No IP-based GIDs on an InfiniBand port: bit 26 is cleared.
        port_cap_flags: a.port_cap_flags & !PCF_IP_BASED_GIDS,
        max_msg_sz: a.max_msg_sz,
        bad_pkey_cntr: a.bad_pkey_cntr,
        qkey_viol_cntr: a.qkey_viol_cntr,
        gid_tbl_len: a.gid_tbl_len,
        pkey_tbl_len: a.pkey_tbl_len,
        lid: lid16(a.lid),
        sm_lid: lid16(a.sm_lid),
        state: a.state as u8,
        max_mtu: a.max_mtu,
        active_mtu: a.active_mtu,
        lmc: a.lmc,
        max_vl_num: a.max_vl_num,
        sm_sl: a.sm_sl,
        subnet_timeout: a.subnet_timeout,
        init_type_reply: a.init_type_reply,
        active_width: a.active_width,
        active_speed: a.active_speed.min(SPEED_NDR) as u8,
        phys_state: a.phys_state,
        link_layer: match ib.link_layer(port) {
            Some(LinkLayer::Infiniband) => 1,
            Some(LinkLayer::Ethernet) => 2,
            _ => 0,
        },
        flags: if core_caps & CORE_CAP_IB_GRH_REQUIRED != 0 {
            QPF_GRH_REQUIRED
        } else {
            0
        },
        reserved: 0,
    }
}

/// QUERY_PORT (C's `ib_uverbs_query_port`): `EINVAL` for a port that does not exist.
pub(crate) fn query_port(b: &mut Bundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        let port = u32::from(b.request_as::<QueryPort>()?.port_num);
        let ib = ctx.device();
        let a = ib.query_port(port)?;
        b.respond_as(&QueryPortResp(port_resp(ib, port, &a)))
    })
}
