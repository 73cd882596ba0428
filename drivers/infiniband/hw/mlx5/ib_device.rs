// SPDX-License-Identifier: GPL-2.0

//! The RDMA device of an mlx5 function with InfiniBand ports: what `ib_core` asks of it
//! (device and port attributes, GIDs, P_Keys, firmware string, sysfs files: `hw_rev`,
//! `hca_type`, `board_id`, `fw_pages`, `reg_pages`), answered as the C
//! driver answers for a native IB function: the port's identity and state from subnet
//! management MADs through MAD_IFC, the limits from the HCA's capability pages.
//!
//! At registration the driver asks firmware, in C's order (stages INIT and CAPS of
//! `mlx5_ib_add`): NodeInfo (P_Key table size), the ExtendedPortInfo probe, NodeDescription,
//! NodeInfo (node GUID). `ib_core` then asks for the port immutable data (PortInfo and
//! QUERY_HCA_VPORT_CONTEXT per port), the device attributes (NodeInfo twice), and fills its
//! caches (PortInfo, then PortInfo and GUIDInfo per GID, PKeyTable per P_Key).

use crate::caps;
use crate::mad::{self, attr, NodeInfo, PortInfo};
use crate::{ah, counters, cq, dma_buf::DmaBuf, mr, pd, qp, qp::wq_size::Limits, srq, user};
use ib_core::{
    attrs::{
        DeviceAttr, Gid, LinkLayer, NodeType, PortAttr, PortImmutable, PortState,
        CORE_CAP_IB_GRH_REQUIRED, CORE_PORT_IBA_IB,
    },
    device::events::EventNotifier,
    device::{BoundRegistration, DeviceInfo, DeviceOps, FwVersion},
    hw_stats::HwStatsDesc,
    mad::types::{Mad, MadWc},
    user::spec::{DriverAttrs, DriverMethod, DriverUObject, MethodAttrs},
    user::udata::Udata,
    verbs::ops::{method_pd, DmaMemory, SendWrs, UserData, UverbsAbi},
    verbs::prepared::{PreparedImage, PreparedSend},
    verbs::types::{
        AccessFlags, AhAttr, CqInit, CqNotifier, NewMr, NewQp, QpAttr, QpAttrMask, QpCap,
        QpInitDriver, SrqAttr, SrqAttrField, SrqAttrMask, UserMrInit, USER_CQ_IGNORE_OVERRUN,
        USER_CQ_TIMESTAMP_COMPLETION,
    },
    verbs::wr::{PostError, RecvWr, SendWr, WorkCompletion},
};
use kernel::{
    device::{Bound, Device},
    mm::virt::VmaNew,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    sysfs_attrs::{Attribute, ShowBuffer},
    types::ForLt,
    user_mmap::UserMaps,
};
use mlx5_core::{
    auxdev::{FunctionInfo, HcaCaps, Mlx5Device},
    cmd::commands::Commands,
    ifc::{get_bits, GeneralCaps, QueryHcaVportContext, QueryHcaVportContextIn},
};

/// The Mellanox ExtendedPortInfo attribute.
const ATTR_EXTENDED_PORT_INFO: u16 = 0xff90;
/// `IB_MGMT_MAD_SIZE`.
const MAD_SIZE: u32 = 256;
/// PortInfo CapabilityMask bits.
const CAP_MASK2_SUP: u32 = 1 << 15;
const EXTENDED_SPEEDS_SUP: u32 = 1 << 14;
/// CapabilityMask2 bits.
const LINK_WIDTH_2X_SUP: u16 = 1 << 4;
const LINK_SPEED_HDR_SUP: u16 = 1 << 5;
const LINK_SPEED_NDR_SUP: u16 = 1 << 10;
/// `IB_SPEED_*` values.
const SPEED_QDR: u16 = 4;
const SPEED_FDR10: u16 = 8;
const SPEED_FDR: u16 = 16;
const SPEED_EDR: u16 = 32;
const SPEED_HDR: u16 = 64;
const SPEED_NDR: u16 = 128;
/// Bit offset of `stat_rate_support` (16 bits) in the general HCA capabilities.
const STAT_RATE_SUPPORT_BIT: usize = 0x1e0;

/// The RDMA device's driver state.
pub(crate) struct Mlx5IbDevice<'bound> {
    cmds: Commands,
    info: FunctionInfo,
    caps: HcaCaps,
    /// P_Key table size (NodeInfo's PartitionCap, read once as C's `pkey_table_len`).
    pkey_table_len: u16,
    /// Whether port 1 answers ExtendedPortInfo (C's `MLX_EXT_PORT_CAP_FLAG_EXTENDED_PORT_INFO`).
    ext_port_info: bool,
    /// Pages the firmware holds, as `mlx5_core` counts them.
    fw_pages: Arc<Atomic<u32>>,
    /// The mkey variant counter (C's `mkey_var`).
    mkey_var: Atomic<u32>,
    /// The function's `Mlx5Device` (CQ and QP creation need its EQs, UAR, doorbell pools and
    /// DMA memory), as C's `mlx5_ib_dev` keeps `mdev`: the auxiliary device's registration
    /// data, there as long as mlx5_ib is bound to it.
    core: &'bound Mlx5Device,
    /// Work queue caps.
    limits: Limits,
    log_max_cq_sz: u32,
    /// MODIFY_CQ can resize CQs (the `cq_resize` capability).
    cq_resize: bool,
    /// What QP modifies need of the device.
    modify_caps: qp::ModifyCaps,
    /// Its CQs (for the internal-error handling).
    cqs: Arc<cq::DeviceCqs>,
    /// The ports' Q counter sets, if the device has Q counters (freed with the driver's state,
    /// once the device is unregistered).
    counters: Option<counters::Counters>,
}

/// Port numbers as MAD_IFC takes them (the core only asks for ports that exist).
fn port_u8(port: u32) -> Result<u8> {
    u8::try_from(port).map_err(|_| EINVAL)
}

impl Mlx5IbDevice<'_> {
    fn node_info(&self) -> Result<NodeInfo> {
        Ok(NodeInfo::parse(&mad::smp_get(
            &self.cmds,
            1,
            attr::NODE_INFO,
            0,
        )?))
    }

    fn port_info(&self, port: u32) -> Result<PortInfo> {
        Ok(PortInfo::parse(&mad::smp_get(
            &self.cmds,
            port_u8(port)?,
            attr::PORT_INFO,
            port,
        )?))
    }
}

/// QUERY_HCA_VPORT_CONTEXT's input for the function's own vport on `port` of a function with
/// `num_ports` ports: as C's `mlx5_query_hca_vport_context`, the port is named only when the
/// function has two ports (firmware answers for the only port otherwise).
fn vport_context_in(num_ports: u64, port: u32) -> Result<QueryHcaVportContextIn> {
    let input = QueryHcaVportContextIn::new();
    if num_ports == 2 {
        input.port_num(port.into())
    } else {
        Ok(input)
    }
}

/// `hw_rev`: the PCI revision.
fn hw_rev_show(d: &Mlx5IbDevice<'_>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{:x}\n", d.info.revision))
}

/// `hca_type`: `MT` and the PCI device id in decimal.
fn hca_type_show(d: &Mlx5IbDevice<'_>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("MT{}\n", d.info.device_id))
}

/// `board_id`: the PSID QUERY_ADAPTER reported.
fn board_id_show(d: &Mlx5IbDevice<'_>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let id = &d.info.board_id;
    let end = id.iter().position(|&b| b == 0).unwrap_or(id.len());
    buf.write_bytes(&id[..end]);
    buf.write_bytes(b"\n");
    Ok(())
}

/// `fw_pages`: pages the firmware holds.
fn fw_pages_show(d: &Mlx5IbDevice<'_>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{}\n", d.fw_pages.load(Relaxed)))
}

/// `reg_pages`: C prints a counter its page allocator never raises, so always 0.
fn reg_pages_show(_: &Mlx5IbDevice<'_>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.write_bytes(b"0\n");
    Ok(())
}

#[vtable]
impl<'bound> DeviceOps for Mlx5IbDevice<'bound> {
    type Pd = pd::Mlx5Pd;
    type Cq = cq::Mlx5Cq<'bound>;
    type Qp = qp::Mlx5Qp<'bound>;
    type Mr = mr::Mlx5Mr<'bound>;
    type Srq = srq::Mlx5Srq<'bound>;
    type Ah = ah::Mlx5Ah;
    type UContext = user::ucontext::Mlx5UContext;

    /// mlx5's user-verbs ABI (`MLX5_IB_UVERBS_ABI_VERSION` 1) and driver id (`RDMA_DRIVER_MLX5`
    /// 1): libmlx5 binds to the device by them. It posts and polls in user space alone: no
    /// data-path command.
    const UVERBS: Option<UverbsAbi> = Some(UverbsAbi {
        version: 1,
        driver_id: 1,
        data_path_cmds: 0,
    });

    fn device_attrs() -> &'static [Attribute<Self>]
    where
        Self: 'static,
    {
        // `Self` is `'static` here, so the table of the `'static` instance is its table.
        const ATTRS: &[Attribute<Mlx5IbDevice<'static>>] = &[
            Attribute::ro(c"hw_rev", hw_rev_show),
            Attribute::ro(c"hca_type", hca_type_show),
            Attribute::ro(c"board_id", board_id_show),
            Attribute::ro(c"fw_pages", fw_pages_show),
            Attribute::ro(c"reg_pages", reg_pages_show),
        ];
        ATTRS
    }

    fn query_device(&self) -> Result<DeviceAttr> {
        let mut a = caps::device_attr(&self.caps, &self.info);
        // C reads NodeInfo twice here: once for the system image GUID, once for the vendor id.
        a.sys_image_guid = self.node_info()?.sys_image_guid;
        a.vendor_id = self.node_info()?.vendor_id & 0xffff;
        a.max_pkeys = self.pkey_table_len;
        Ok(a)
    }

    /// C's `mlx5_ib_query_device` with user space's buffer: a buffer too short for the
    /// header is `EINVAL`, a request with anything in it `EOPNOTSUPP`, then the attributes
    /// (with their MADs) and mlx5's part of the answer.
    fn query_device_udata(&self, udata: &Udata) -> Result<DeviceAttr> {
        if udata.outlen() != 0 && udata.outlen() < 8 {
            return Err(EINVAL);
        }
        udata.check_in_empty()?;
        let a = self.query_device()?;
        if udata.outlen() != 0 {
            udata.respond(&caps::query_device_resp(&self.caps, udata.outlen()))?;
        }
        Ok(a)
    }

    fn alloc_ucontext(&self, udata: &Udata) -> Result<user::ucontext::Mlx5UContext> {
        let ports = GeneralCaps::from_bytes(&self.caps.general).num_ports() as u16;
        user::ucontext::alloc(&self.cmds, &self.caps, ports, udata)
    }

    fn dealloc_ucontext(&self, ctx: user::ucontext::Mlx5UContext) {
        user::ucontext::dealloc(&self.cmds, ctx)
    }

    /// The UAR object, QUERY_PORT, GET_DATA_DIRECT_SYSFS_PATH and PD_QUERY.
    const DRIVER_METHODS: &'static [DriverMethod] = &user::methods::DRIVER_METHODS;

    /// The context response of QUERY_CONTEXT.
    const DRIVER_ATTRS: &'static [DriverAttrs] = &user::methods::DRIVER_ATTRS;

    fn driver_method(
        &self,
        ctx: &user::ucontext::Mlx5UContext,
        m: &DriverMethod,
        attrs: &dyn MethodAttrs,
    ) -> Result<Option<DriverUObject>> {
        let ports = GeneralCaps::from_bytes(&self.caps.general).num_ports() as u32;
        let pdn_of = |id| Ok(method_pd::<Self>(attrs, id)?.pdn);
        user::methods::driver_method(self.core, &self.cmds, &ctx.mmap, ports, &pdn_of, m, attrs)
    }

    fn query_ucontext(
        &self,
        ctx: &user::ucontext::Mlx5UContext,
        attrs: &dyn MethodAttrs,
    ) -> Result {
        let caps = GeneralCaps::from_bytes(&self.caps.general);
        user::methods::query_ucontext(&caps, caps.num_ports() as u16, ctx, attrs)
    }

    fn mmap(
        &self,
        ctx: &user::ucontext::Mlx5UContext,
        vma: &VmaNew,
        maps: &Arc<UserMaps>,
    ) -> Result {
        user::mmap::mmap(self.core, &ctx.mmap, vma, maps)
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        let p = self.port_info(port)?;
        let mut a = PortAttr {
            lid: p.lid.into(),
            lmc: p.lmc,
            sm_lid: p.sm_lid.into(),
            sm_sl: p.sm_sl,
            state: PortState::from_raw(p.state),
            phys_state: p.phys_state,
            port_cap_flags: p.cap_mask,
            gid_tbl_len: p.guid_cap.into(),
            max_msg_sz: caps::max_msg_sz(&self.caps),
            pkey_tbl_len: self.pkey_table_len,
            bad_pkey_cntr: p.bad_pkey_cntr.into(),
            qkey_viol_cntr: p.qkey_viol_cntr.into(),
            active_width: p.width_active & 0xf,
            active_speed: p.speed_active.into(),
            max_mtu: p.mtu_cap,
            active_mtu: p.neighbor_mtu,
            subnet_timeout: p.subnet_timeout,
            max_vl_num: p.vl_cap,
            init_type_reply: p.init_type_reply,
            ..PortAttr::default()
        };
        let mask2 = p.cap_mask & CAP_MASK2_SUP != 0;
        if mask2 {
            a.port_cap_flags2 = p.cap_mask2;
            if p.cap_mask2 & LINK_WIDTH_2X_SUP != 0 {
                a.active_width = p.width_active;
            }
        }
        if p.cap_mask & EXTENDED_SPEEDS_SUP != 0 {
            match p.speed_ext_active {
                1 => a.active_speed = SPEED_FDR,
                2 => a.active_speed = SPEED_EDR,
                4 if mask2 && p.cap_mask2 & LINK_SPEED_HDR_SUP != 0 => a.active_speed = SPEED_HDR,
                8 if mask2 && p.cap_mask2 & LINK_SPEED_NDR_SUP != 0 => a.active_speed = SPEED_NDR,
                _ => {}
            }
        }
        // QDR may be FDR10, which only ExtendedPortInfo tells.
        if a.active_speed == SPEED_QDR && self.ext_port_info {
            let d = mad::smp_get(&self.cmds, port_u8(port)?, ATTR_EXTENDED_PORT_INFO, port)?;
            if d[15] & 1 != 0 {
                a.active_speed = SPEED_FDR10;
            }
        }
        Ok(a)
    }

    fn get_port_immutable(&self, port: u32) -> Result<PortImmutable> {
        let a = self.query_port(port)?;
        let num_ports = GeneralCaps::from_bytes(&self.caps.general).num_ports();
        let out = self
            .cmds
            .exec::<QueryHcaVportContext>(&vport_context_in(num_ports, port)?)?;
        let grh = out.grh_required() != 0;
        Ok(PortImmutable {
            core_cap_flags: CORE_PORT_IBA_IB | if grh { CORE_CAP_IB_GRH_REQUIRED } else { 0 },
            gid_tbl_len: a.gid_tbl_len,
            pkey_tbl_len: a.pkey_tbl_len,
            max_mad_size: MAD_SIZE,
        })
    }

    fn query_gid(&self, port: u32, index: u32) -> Result<Gid> {
        let prefix = self.port_info(port)?.gid_prefix;
        let block = mad::smp_get(&self.cmds, port_u8(port)?, attr::GUID_INFO, index / 8)?;
        Ok(Gid::from_parts(prefix, mad::guid_in_block(&block, index)))
    }

    /// MAD_IFC for what the firmware's agents answer (`mad::process_mad`). The driver serves
    /// only native InfiniBand functions (no IB virtualization), whose ports all take subnet
    /// management MADs (C's `has_smi`).
    fn process_mad(
        &self,
        flags: u32,
        port: u32,
        wc: Option<&MadWc>,
        inp: &Mad,
        out: &mut Mad,
    ) -> u32 {
        let Ok(port) = port_u8(port) else {
            return ib_core::mad::types::result::FAILURE;
        };
        mad::process_mad(&self.cmds, true, flags, port, wc, inp, out)
    }

    /// C's `mlx5_ib_modify_port` for the capability mask of an InfiniBand port (`issmN`).
    fn modify_port_caps(&self, port: u32, set: u32, clear: u32) -> Result {
        mad::modify_port_caps(&self.cmds, port_u8(port)?, set, clear)
    }

    fn query_pkey(&self, port: u32, index: u16) -> Result<u16> {
        let index = u32::from(index);
        let block = mad::smp_get(&self.cmds, port_u8(port)?, attr::PKEY_TABLE, index / 32)?;
        Ok(mad::pkey_in_block(&block, index))
    }

    fn fw_version(&self) -> FwVersion {
        let mut v = FwVersion::new();
        // "16.35.2000" always fits.
        let _ = core::fmt::Write::write_fmt(
            &mut v,
            format_args!(
                "{}.{}.{:04}",
                self.info.fw_major, self.info.fw_minor, self.info.fw_subminor
            ),
        );
        v
    }

    fn get_link_layer(&self, _port: u32) -> LinkLayer {
        LinkLayer::Infiniband
    }

    fn alloc_pd(&self) -> Result<pd::Mlx5Pd> {
        pd::alloc(&self.cmds)
    }

    /// C's `mlx5_ib_alloc_pd` with user data: the PD number answers libmlx5
    /// (`struct mlx5_ib_alloc_pd_resp`); a response that cannot be written frees the PD.
    fn alloc_user_pd(&self, udata: &Udata) -> Result<pd::Mlx5Pd> {
        let p = pd::alloc(&self.cmds)?;
        if let Err(e) = udata.respond(&p.pdn.to_le_bytes()) {
            let _ = pd::dealloc(&self.cmds, p);
            return Err(e);
        }
        Ok(p)
    }

    fn dealloc_pd(&self, pd: pd::Mlx5Pd) -> Result {
        pd::dealloc(&self.cmds, pd)
    }

    /// C's `mlx5_ib_reg_user_mr` (no on-demand paging; the MTT mkey made by CREATE_MKEY, as
    /// C makes it on a function whose UMR cannot set a page size).
    fn reg_user_mr(
        &self,
        pd: &pd::Mlx5Pd,
        init: &UserMrInit,
        _udata: &Udata,
    ) -> Result<NewMr<mr::Mlx5Mr<'bound>>> {
        let pg = GeneralCaps::from_bytes(&self.caps.general).pg() != 0;
        let mr = mr::reg_user(self.core, &self.mkey_var, pd, init, pg)?;
        let key = mr.key;
        Ok(NewMr {
            mr,
            lkey: key,
            rkey: key,
        })
    }

    fn get_dma_mr(
        &self,
        pd: &pd::Mlx5Pd,
        access: AccessFlags,
    ) -> Result<NewMr<mr::Mlx5Mr<'bound>>> {
        let mr = mr::get_dma_mr(&self.cmds, &self.mkey_var, pd, access)?;
        let key = mr.key;
        Ok(NewMr {
            mr,
            lkey: key,
            rkey: key,
        })
    }

    fn dereg_mr(&self, mr: mr::Mlx5Mr<'bound>) -> Result {
        mr::dereg(&self.cmds, mr)
    }

    /// C's `mlx5_ib_create_cq`: a kernel consumer's ring (tracked for the internal-error
    /// flush), or a user context's from libmlx5's request (`user::cq`, checked in C's order).
    fn create_cq(
        &self,
        init: &CqInit,
        notifier: &CqNotifier,
        user: Option<UserData<'_, user::ucontext::Mlx5UContext>>,
    ) -> Result<cq::Mlx5Cq<'bound>> {
        if let Some(u) = user {
            let caps = GeneralCaps::from_bytes(&self.caps.general);
            let cq = user::cq::create(self.core, &self.cmds, &caps, init, u.udata, notifier)?;
            return Ok(cq::Mlx5Cq::User(cq));
        }
        // As C, for kernel consumers too: no creation flags but these two.
        if init.flags & !(USER_CQ_IGNORE_OVERRUN | USER_CQ_TIMESTAMP_COMPLETION) != 0 {
            return Err(EOPNOTSUPP);
        }
        let cq = cq::Mlx5Cq::Kernel(cq::create(self.core, self.log_max_cq_sz, init, notifier)?);
        if let Err(e) = cq.kernel().and_then(|k| self.cqs.add(k)) {
            let _ = cq::destroy(&self.cmds, cq);
            return Err(e);
        }
        Ok(cq)
    }

    fn cq_size(&self, cq: &cq::Mlx5Cq<'bound>) -> u32 {
        cq.size()
    }

    /// `ENOSYS` without the `cq_resize` capability, as C; a user CQ's new ring is libmlx5's
    /// (`udata`), a kernel CQ's the driver's.
    fn resize_cq(&self, cq: &cq::Mlx5Cq<'bound>, cqe: u32, udata: Option<&Udata>) -> Result {
        if !self.cq_resize {
            pr_info!("Firmware does not support resize CQ\n");
            return Err(ENOSYS);
        }
        match (cq, udata) {
            (cq::Mlx5Cq::Kernel(_), None) => {
                cq.kernel()?.resize(self.core, self.log_max_cq_sz, cqe)
            }
            (cq::Mlx5Cq::User(u), Some(udata)) => u
                .resize(self.core, self.log_max_cq_sz, cqe, udata)
                .map(|_| ()),
            _ => Err(EINVAL),
        }
    }

    fn destroy_cq(&self, cq: cq::Mlx5Cq<'bound>) -> Result {
        if let Ok(k) = cq.kernel() {
            self.cqs.remove(k);
        }
        cq::destroy(&self.cmds, cq)
    }

    /// A user CQ is armed by user space (mlx5 asks for no REQ_NOTIFY_CQ command).
    fn req_notify_cq(&self, cq: &cq::Mlx5Cq<'bound>, solicited: bool) -> Result {
        match cq {
            cq::Mlx5Cq::Kernel(_) => cq.kernel()?.arm(self.core, solicited),
            cq::Mlx5Cq::User(_) => Err(EOPNOTSUPP),
        }
    }

    /// In the internal-error state, the outstanding requests come back flushed (C's
    /// `mlx5_ib_poll_sw_comp`).
    fn poll_cq(&self, cq: &cq::Mlx5Cq<'bound>, wc: &mut [WorkCompletion]) -> Result<usize> {
        let cq = cq.kernel()?;
        if self.cmds.in_internal_error() {
            return Ok(cq.poll_flushed(wc));
        }
        cq.poll(wc)
    }

    fn create_qp(
        &self,
        pd: &pd::Mlx5Pd,
        init: &QpInitDriver<'_, cq::Mlx5Cq<'bound>, srq::Mlx5Srq<'bound>>,
        user: Option<UserData<'_, user::ucontext::Mlx5UContext>>,
    ) -> Result<NewQp<qp::Mlx5Qp<'bound>>> {
        match user {
            Some(u) => {
                let caps = GeneralCaps::from_bytes(&self.caps.general);
                user::qp::create(self.core, &caps, u.ctx, pd.pdn, init, u.udata)
            }
            None => qp::create(self.core, &self.limits, pd.pdn, init),
        }
    }

    fn qp_cap(&self, qp: &qp::Mlx5Qp<'bound>) -> QpCap {
        qp.cap()
    }

    fn modify_qp(
        &self,
        qp: &qp::Mlx5Qp<'bound>,
        attr: &QpAttr,
        mask: QpAttrMask,
        udata: Option<&Udata>,
    ) -> Result {
        qp.modify(&self.cmds, &self.modify_caps, attr, mask, udata)
    }

    fn query_qp(&self, qp: &qp::Mlx5Qp<'bound>) -> Result<QpAttr> {
        qp.query(&self.cmds)
    }

    fn destroy_qp(&self, qp: qp::Mlx5Qp<'bound>) -> Result {
        qp::destroy(&self.cmds, qp)
    }

    fn attach_mcast(&self, qp: &qp::Mlx5Qp<'bound>, gid: &Gid, _lid: u16) -> Result {
        qp.kernel()?.attach_mcast(&self.cmds, gid)
    }

    fn detach_mcast(&self, qp: &qp::Mlx5Qp<'bound>, gid: &Gid, _lid: u16) -> Result {
        qp.kernel()?.detach_mcast(&self.cmds, gid)
    }

    /// `EIO` in the internal-error state, as C's `mlx5_ib_post_send`.
    fn post_send(&self, qp: &qp::Mlx5Qp<'bound>, wrs: SendWrs<'_, Self>) -> Result<(), PostError> {
        if self.cmds.in_internal_error() {
            return Err(EIO.into());
        }
        qp.kernel()?.post_send(wrs)
    }

    /// `EIO` in the internal-error state, as `post_send`.
    fn prepare_send(&self, qp: &qp::Mlx5Qp<'bound>, wr: &SendWr<'_>) -> Result<PreparedImage> {
        if self.cmds.in_internal_error() {
            return Err(EIO);
        }
        qp.kernel()?.prepare_send(wr)
    }

    /// `EIO` in the internal-error state, as `post_send`.
    fn post_prepared(
        &self,
        qp: &qp::Mlx5Qp<'bound>,
        wrs: &[PreparedSend],
    ) -> Result<(), PostError> {
        if self.cmds.in_internal_error() {
            return Err(EIO.into());
        }
        qp.kernel()?.post_prepared(wrs)
    }

    /// `EIO` in the internal-error state, as C's `mlx5_ib_post_recv`.
    fn post_recv(&self, qp: &qp::Mlx5Qp<'bound>, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        if self.cmds.in_internal_error() {
            return Err(EIO.into());
        }
        qp.kernel()?.post_recv(wrs)
    }

    /// C's `mlx5_ib_create_srq`: the sizes checked and rounded, then the kernel's ring or
    /// libmlx5's request. Basic SRQs only (the core makes no other kind). As C, the limit is
    /// not armed at creation: a consumer arms it with a modify.
    fn create_srq(
        &self,
        pd: &pd::Mlx5Pd,
        attr: &SrqAttr,
        events: &EventNotifier,
        user: Option<UserData<'_, user::ucontext::Mlx5UContext>>,
    ) -> Result<(srq::Mlx5Srq<'bound>, SrqAttr)> {
        let gen = GeneralCaps::from_bytes(&self.caps.general);
        let size = srq::srq_size(attr, gen.log_max_srq_sz() as u32, self.limits.max_wqe_sz_rq)?;
        match user {
            Some(u) => srq::create_user(self.core, size, pd.pdn, attr, u.udata, events),
            None => {
                let made = SrqAttr {
                    max_wr: size.max - 1,
                    ..*attr
                };
                Ok((srq::create(self.core, size, pd.pdn, events)?, made))
            }
        }
    }

    fn modify_srq(
        &self,
        srq: &srq::Mlx5Srq<'bound>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        _udata: Option<&Udata>,
    ) -> Result {
        // No resizing, as C.
        if mask.contains(SrqAttrField::MaxWr) {
            return Err(EINVAL);
        }
        if mask.contains(SrqAttrField::Limit) {
            srq.arm(&self.cmds, attr.srq_limit)?;
        }
        Ok(())
    }

    fn query_srq(&self, srq: &srq::Mlx5Srq<'bound>) -> Result<SrqAttr> {
        srq.query(&self.cmds)
    }

    fn destroy_srq(&self, srq: srq::Mlx5Srq<'bound>) -> Result {
        srq::destroy(&self.cmds, srq)
    }

    /// `EIO` in the internal-error state, as C's `mlx5_ib_post_srq_recv`.
    fn post_srq_recv(
        &self,
        srq: &srq::Mlx5Srq<'bound>,
        wrs: &[RecvWr<'_>],
    ) -> Result<(), PostError> {
        if self.cmds.in_internal_error() {
            return Err(EIO.into());
        }
        srq.kernel_ring()?.post_recv(wrs)
    }

    fn create_ah(&self, _pd: &pd::Mlx5Pd, attr: &AhAttr) -> Result<ah::Mlx5Ah> {
        let support = get_bits(&self.caps.general, STAT_RATE_SUPPORT_BIT, 16) as u32;
        ah::create(attr, support)
    }

    fn destroy_ah(&self, _ah: ah::Mlx5Ah) -> Result {
        Ok(())
    }

    fn alloc_dma_buffer(&self, len: usize) -> Result<KBox<dyn DmaMemory>> {
        let buf = DmaBuf::new(self.core.alloc_coherent(len)?, len)?;
        Ok(KBox::new(buf, GFP_KERNEL)?)
    }

    fn alloc_hw_port_stats(&self, _port: u32) -> Result<HwStatsDesc> {
        // Without Q counters C installs no hardware counter operations at all.
        self.counters.as_ref().ok_or(EOPNOTSUPP)?.describe()
    }

    fn get_hw_stats(&self, port: u32, values: &mut [u64], index: usize) -> Result<usize> {
        self.counters
            .as_ref()
            .ok_or(EOPNOTSUPP)?
            .read(port, values, index)
    }
}

/// Registers the RDMA device of `dev` (`mlx5_%d`), asking firmware what C's init stages ask.
/// `EOPNOTSUPP` for functions whose ports are not native InfiniBand (Ethernet/RoCE and
/// virtualized IB are not handled yet).
pub(crate) fn register<'bound>(
    parent: &'bound Device<Bound>,
    dev: &'bound Mlx5Device,
    cqs: Arc<cq::DeviceCqs>,
) -> Result<BoundRegistration<'bound>> {
    if !caps::is_native_ib(dev.caps()) {
        return Err(EOPNOTSUPP);
    }
    let cmds = dev.commands().clone();
    // Stage INIT: the P_Key table size, then whether port 1 answers ExtendedPortInfo (a refusal
    // only means it does not).
    let node = NodeInfo::parse(&mad::smp_get(&cmds, 1, attr::NODE_INFO, 0)?);
    // As C's `mlx5_query_ext_port_caps`: the command and the MAD must both succeed.
    let ext_port_info = matches!(
        mad::smp_get_status(&cmds, 1, ATTR_EXTENDED_PORT_INFO, 1),
        Ok((_, 0))
    );
    // Stage CAPS: the node description and the node GUID.
    let desc = mad::smp_get(&cmds, 1, attr::NODE_DESC, 0)?;
    let node_guid = NodeInfo::parse(&mad::smp_get(&cmds, 1, attr::NODE_INFO, 0)?).node_guid;
    let info = DeviceInfo {
        name: b"mlx5_%d",
        node_type: NodeType::Ca,
        node_guid,
        phys_port_cnt: dev.ports().into(),
        node_desc: &desc,
        parent: Some(dev.device().clone()),
        use_cq_dim: true,
        num_comp_vectors: dev.comp_vectors(),
    };
    let gen = GeneralCaps::from_bytes(&dev.caps().general);
    let limits = Limits {
        log_max_qp_sz: gen.log_max_qp_sz() as u32,
        max_wqe_sz_sq: gen.max_wqe_sz_sq() as u32,
        max_wqe_sz_rq: gen.max_wqe_sz_rq() as u32,
    };
    // Stage COUNTERS: a Q counter set per port (freed again if the registration fails: the
    // driver's state, which owns them, is dropped then).
    let counters = counters::Counters::alloc(&cmds, &gen, dev.ports())?;
    let counter_sets = counters
        .as_ref()
        .map_or([0; counters::MAX_PORTS], |c| c.set_ids());
    BoundRegistration::new::<ForLt!(Mlx5IbDevice<'_>)>(
        parent,
        info,
        Mlx5IbDevice {
            cmds,
            info: *dev.info(),
            caps: dev.caps().try_clone()?,
            pkey_table_len: node.partition_cap,
            ext_port_info,
            fw_pages: dev.fw_pages().clone(),
            mkey_var: Atomic::new(0),
            core: dev,
            limits,
            log_max_cq_sz: gen.log_max_cq_sz() as u32,
            cq_resize: gen.cq_resize() != 0,
            modify_caps: qp::ModifyCaps {
                log_max_msg: gen.log_max_msg() as u32,
                stat_rate_support: get_bits(&dev.caps().general, STAT_RATE_SUPPORT_BIT, 16) as u32,
                counter_sets,
                pkey_table_len: node.partition_cap,
                max_rd_atomic: 1u32 << gen.log_max_ra_res_qp().min(31),
                max_dest_rd_atomic: 1u32 << gen.log_max_ra_req_qp().min(31),
            },
            cqs,
            counters,
        },
    )
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_device)]
mod tests {
    use super::*;

    /// The `port_num` field of QUERY_HCA_VPORT_CONTEXT's input (bits 0x4c..0x50).
    fn port_num(input: &QueryHcaVportContextIn) -> u8 {
        input.as_bytes()[9] & 0xf
    }

    #[test]
    fn vport_context_names_the_port_of_a_two_port_function() -> Result {
        // As C: the port on a two-port function, nothing on a one-port function.
        assert_eq!(port_num(&vport_context_in(2, 1)?), 1);
        assert_eq!(port_num(&vport_context_in(2, 2)?), 2);
        assert_eq!(port_num(&vport_context_in(1, 1)?), 0);
        // A port number wider than the field is refused, not truncated.
        assert_eq!(vport_context_in(2, 16).err(), Some(EINVAL));
        Ok(())
    }
}
