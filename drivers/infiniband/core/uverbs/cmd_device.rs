// SPDX-License-Identifier: GPL-2.0

//! The device's commands (C's `uverbs_cmd.c` GET_CONTEXT, QUERY_DEVICE, QUERY_PORT and
//! EX_QUERY_DEVICE): a user context with its async event file, and the device's and ports'
//! attributes in the ABI's layouts (`struct ib_uverbs_query_device_resp` and its extension,
//! `struct ib_uverbs_query_port_resp`).

use crate::{
    bundle::Bundle,
    event_file::{EventFile, NewEventFd},
};
use ib_core::{
    attrs::{DeviceAttr, LinkLayer, PortAttr, CORE_CAP_IB_GRH_REQUIRED, CORE_CAP_OPA_MAD},
    device::ib_device::IbDevice,
    user::ucontext::UContext,
};
use kernel::prelude::*;

/// `sizeof(struct ib_uverbs_query_device_resp)`.
const QUERY_DEVICE_RESP: usize = 176;
/// `sizeof(struct ib_uverbs_ex_query_device_resp)`.
const EX_QUERY_DEVICE_RESP: usize = 304;
/// `sizeof(struct ib_uverbs_query_port_resp)`.
pub(crate) const QUERY_PORT_RESP: usize = 40;
/// `IB_UVERBS_QPF_GRH_REQUIRED`.
const QPF_GRH_REQUIRED: u8 = 1;
/// `IB_UVERBS_PCF_IP_BASED_GIDS`: bit 26 of the capability mask, which the ABI reuses.
const PCF_IP_BASED_GIDS: u32 = 1 << 26;
/// `IB_SPEED_NDR`: the legacy response has no room for faster speeds.
const SPEED_NDR: u16 = 128;

/// A little-endian byte image of a response.
struct Image<const N: usize>([u8; N]);

impl<const N: usize> Image<N> {
    fn new() -> Self {
        Self([0; N])
    }
    fn u8(&mut self, off: usize, v: u8) {
        self.0[off] = v;
    }
    fn u16(&mut self, off: usize, v: u16) {
        self.0[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
    /// A GUID, as the big-endian bytes C keeps it in.
    fn guid(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_be_bytes());
    }
}

/// C's `copy_query_dev_fields`: the base device attributes (176 bytes at `at`).
fn put_device_attr<const N: usize>(r: &mut Image<N>, at: usize, ib: &IbDevice, a: &DeviceAttr) {
    r.u64(at, a.fw_ver);
    r.guid(at + 8, ib.node_guid());
    r.guid(at + 16, a.sys_image_guid);
    r.u64(at + 24, a.max_mr_size);
    r.u64(at + 32, a.page_size_cap);
    r.u32(at + 40, a.vendor_id);
    r.u32(at + 44, a.vendor_part_id);
    r.u32(at + 48, a.hw_ver);
    r.u32(at + 52, a.max_qp);
    r.u32(at + 56, a.max_qp_wr);
    r.u32(at + 60, u64::from(a.device_cap_flags) as u32);
    r.u32(at + 64, a.max_send_sge.min(a.max_recv_sge));
    r.u32(at + 68, a.max_sge_rd);
    r.u32(at + 72, a.max_cq);
    r.u32(at + 76, a.max_cqe);
    r.u32(at + 80, a.max_mr);
    r.u32(at + 84, a.max_pd);
    r.u32(at + 88, a.max_qp_rd_atom);
    // max_ee_rd_atom (92): no EE contexts.
    r.u32(at + 96, a.max_res_rd_atom);
    r.u32(at + 100, a.max_qp_init_rd_atom);
    // max_ee_init_rd_atom (104).
    r.u32(at + 108, a.atomic_cap.into());
    // max_ee (112), max_rdd (116).
    r.u32(at + 120, a.max_mw);
    // max_raw_ipv6_qp (124), max_raw_ethy_qp (128).
    r.u32(at + 132, a.max_mcast_grp);
    r.u32(at + 136, a.max_mcast_qp_attach);
    r.u32(at + 140, a.max_total_mcast_qp_attach);
    r.u32(at + 144, a.max_ah);
    // max_fmr (148), max_map_per_fmr (152): gone from the kernel.
    r.u32(at + 156, a.max_srq);
    r.u32(at + 160, a.max_srq_wr);
    r.u32(at + 164, a.max_srq_sge);
    r.u16(at + 168, a.max_pkeys);
    r.u8(at + 170, a.local_ca_ack_delay);
    r.u8(at + 171, ib.port_count().min(u8::MAX.into()) as u8);
}

/// GET_CONTEXT by write() (C's `ib_uverbs_get_context`): the user context, and the async
/// event file whose fd the core response carries (`{async_fd, num_comp_vectors}`).
pub(crate) fn get_context(b: &mut Bundle<'_>) -> Result {
    let mut req = [0u8; 8];
    b.request(&mut req)?;
    let ib = b.ufile.device().ib_device().ok_or(EIO)?;
    let fd = NewEventFd::new(EventFile::new_async()?)?;
    let mut resp = Image::<8>::new();
    resp.u32(0, fd.fd());
    resp.u32(4, ib.num_comp_vectors());
    b.respond(&resp.0)?;
    let driver = b.driver;
    b.ufile
        .init_ucontext(Some(fd.events().clone()), || UContext::alloc(&ib, &driver))?;
    fd.install();
    Ok(())
}

/// QUERY_DEVICE (C's `ib_uverbs_query_device`): the attributes cached at registration.
pub(crate) fn query_device(b: &mut Bundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        let mut req = [0u8; 8];
        b.request(&mut req)?;
        let ib = ctx.device();
        let mut r = Image::<QUERY_DEVICE_RESP>::new();
        put_device_attr(&mut r, 0, ib, ib.attr());
        b.respond(&r.0)
    })
}

/// EX_QUERY_DEVICE (C's `ib_uverbs_ex_query_device`): the attributes queried now, with the
/// driver's part in the driver data, and `response_length`.
pub(crate) fn ex_query_device(b: &mut Bundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        let mut req = [0u8; 8];
        b.request(&mut req)?;
        // comp_mask, then reserved.
        if req[0..4] != [0; 4] || req[4..8] != [0; 4] {
            return Err(EINVAL);
        }
        let ib = ctx.device();
        let a = ib.query_device_udata(&b.driver)?;
        let mut r = Image::<EX_QUERY_DEVICE_RESP>::new();
        put_device_attr(&mut r, 0, ib, &a);
        // odp_caps (184) and xrc_odp_caps (296): no on-demand paging.
        r.u64(208, a.timestamp_mask);
        r.u64(216, a.hca_core_clock);
        r.u64(224, u64::from(a.device_cap_flags));
        // rss_caps (232), max_wq_type_rq (248): Ethernet only.
        r.u32(252, a.raw_packet_caps);
        // tm_caps (256): no tag matching.
        r.u16(280, a.max_cq_moderation_count);
        r.u16(282, a.max_cq_moderation_period);
        // max_dm_size (288): no device memory.
        r.u32(180, b.response_length(EX_QUERY_DEVICE_RESP));
        b.respond(&r.0)
    })
}

/// C's `copy_port_attr_to_resp`: a port's attributes as the ABI carries them (40 bytes).
pub(crate) fn port_resp(ib: &IbDevice, port: u32, a: &PortAttr) -> [u8; QUERY_PORT_RESP] {
    let mut r = Image::<QUERY_PORT_RESP>::new();
    let core_caps = ib.port_immutable(port).map_or(0, |i| i.core_cap_flags);
    // No IP-based GIDs on an InfiniBand port: bit 26 is cleared.
    r.u32(0, a.port_cap_flags & !PCF_IP_BASED_GIDS);
    r.u32(4, a.max_msg_sz);
    r.u32(8, a.bad_pkey_cntr);
    r.u32(12, a.qkey_viol_cntr);
    r.u32(16, a.gid_tbl_len);
    r.u16(20, a.pkey_tbl_len);
    let opa = core_caps & CORE_CAP_OPA_MAD != 0;
    // IB LIDs are 16 bits; Omni-Path's extended unicast LIDs are folded as C's
    // `OPA_TO_IB_UCAST_LID`.
    let lid16 = |lid: u32| if opa && lid >= 0xc000 { 0 } else { lid as u16 };
    r.u16(22, lid16(a.lid));
    r.u16(24, lid16(a.sm_lid));
    r.u8(26, a.state as u8);
    r.u8(27, a.max_mtu);
    r.u8(28, a.active_mtu);
    r.u8(29, a.lmc);
    r.u8(30, a.max_vl_num);
    r.u8(31, a.sm_sl);
    r.u8(32, a.subnet_timeout);
    r.u8(33, a.init_type_reply);
    r.u8(34, a.active_width);
    r.u8(35, a.active_speed.min(SPEED_NDR) as u8);
    r.u8(36, a.phys_state);
    r.u8(
        37,
        match ib.link_layer(port) {
            Some(LinkLayer::Infiniband) => 1,
            Some(LinkLayer::Ethernet) => 2,
            _ => 0,
        },
    );
    if core_caps & CORE_CAP_IB_GRH_REQUIRED != 0 {
        r.u8(38, QPF_GRH_REQUIRED);
    }
    r.0
}

/// QUERY_PORT (C's `ib_uverbs_query_port`): `EINVAL` for a port that does not exist.
pub(crate) fn query_port(b: &mut Bundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        let mut req = [0u8; 16];
        b.request(&mut req)?;
        let port = u32::from(req[8]);
        let ib = ctx.device();
        let a = ib.query_port(port)?;
        b.respond(&port_resp(ib, port, &a))
    })
}
