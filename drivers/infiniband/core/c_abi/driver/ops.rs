// SPDX-License-Identifier: GPL-2.0

//! A C driver's `struct ib_device_ops` as the core calls a driver ([`CDriverOps`]): the core's
//! type-erased operations (`DynOps`) implemented by calling the C function pointers with the
//! driver's own device structure, converting C's structures to the core's types.
//!
//! What a C driver's device does through it: its attributes, ports, P_Keys, GIDs, link layer,
//! firmware version, node description, port capability bits, device attributes and hardware
//! counters, MAD processing (PerfMgmt counters in sysfs); kernel verbs (PDs, CQs, QPs, the
//! DMA MR, AHs: `pd.rs`, `cq.rs`, `qp.rs`) for a software device, whose consumers' memory is
//! kernel memory. Not yet: user contexts and objects, SRQs.

use crate::{
    attrs::{DeviceAttr, DeviceCapFlags, FwVersion, Gid, LinkLayer, NodeDesc, PortAttr, PortState},
    c_abi::driver::{
        bundle::DriverUdata, cq::DriverCq, dma::VirtBuffer, pd::DriverPd, ucontext::DriverUContext,
    },
    hw_stats::{HwStatDesc, HwStatsDesc},
    mad::types::{result, Mad, MadWc},
    user::spec::{DriverAttrs, DriverMethod},
    user::udata::Udata,
    verbs::ops::{
        CqObject, DmaMemory, DynOps, PdObject, UContextObject, UverbsAbi, CMD_POST_SEND,
        CMD_REQ_NOTIFY_CQ,
    },
    verbs::types::CqInit,
    verbs::types::CqNotifier,
};
use core::ptr::NonNull;
use kernel::{
    bindings,
    ffi::{c_int, c_ulong},
    net::route::NetDevice,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{aref::ARef, Mutex},
    sysfs_attrs::ShowBuffer,
};

/// A registered C driver's operations: its device structure, whose `ops` the driver filled
/// with `ib_set_device_ops`.
///
/// # Invariants
///
/// `ib` is a C driver's device structure (`_ib_alloc_device`), alive while this value is (the
/// registration holds it: `c_abi/driver/registration.rs`); its `ops` do not change after
/// registration.
pub(crate) struct CDriverOps {
    ib: NonNull<bindings::ib_device>,
    /// The counter sets the driver made, per port (freed with the operations).
    stats: Pin<KBox<Mutex<PortStatsList>>>,
}

/// The counter sets of a device's ports, by port number.
type PortStatsList = KVec<(u32, PortStats)>;

/// A port's counter set, made by the driver's `alloc_hw_port_stats`; freed when dropped.
struct PortStats(NonNull<bindings::rdma_hw_stats>);

// SAFETY: The set is read and written under its owner's lock only.
unsafe impl Send for PortStats {}

impl Drop for PortStats {
    fn drop(&mut self) {
        // SAFETY: A set of `rdma_alloc_hw_stats_struct` (the driver's `alloc_hw_port_stats`
        // makes its sets with it), freed once.
        unsafe { crate::c_abi::driver::hw_stats::free_hw_stats(self.0.as_ptr()) };
    }
}

// SAFETY: The structure is read by any thread (C drivers' ops are called from any context the
// core calls them in); the core writes it only while registering, before this value is shared.
unsafe impl Send for CDriverOps {}
// SAFETY: As above.
unsafe impl Sync for CDriverOps {}

impl CDriverOps {
    /// The operations of the C driver whose device structure is `ib`.
    ///
    /// # Safety
    ///
    /// `ib` is a C driver's device structure that outlives the returned value, with its ops set.
    pub(crate) unsafe fn new(ib: NonNull<bindings::ib_device>) -> Result<Self> {
        // INVARIANT: The caller's contract.
        Ok(Self {
            ib,
            stats: KBox::pin_init(
                new_mutex!(KVec::new(), "ib_core::c_abi::driver::CDriverOps::stats"),
                GFP_KERNEL,
            )?,
        })
    }

    /// The driver's device structure.
    fn raw(&self) -> *mut bindings::ib_device {
        self.ib.as_ptr()
    }

    /// The driver's ops table.
    fn ops(&self) -> &bindings::ib_device_ops {
        // SAFETY: The structure is alive and its ops fixed (type invariant).
        unsafe { &(*self.raw()).ops }
    }

    /// The device's attributes as the driver reports them (C's `query_device`, with an empty
    /// `udata` as `setup_device` calls it, or a command's).
    pub(crate) fn query_device_c(&self, udata: Option<&Udata>) -> Result<bindings::ib_device_attr> {
        let query = self.ops().query_device.ok_or(EOPNOTSUPP)?;
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut attr: bindings::ib_device_attr = unsafe { core::mem::zeroed() };
        // No context: a device query needs none (C's `setup_device` passes a bare `udata`).
        let mut udata = DriverUdata::new(udata.unwrap_or(&Udata::empty()), core::ptr::null_mut());
        // SAFETY: The structure is alive (type invariant); both out-parameters are ours.
        kernel::error::to_result(unsafe { query(self.raw(), &mut attr, udata.udata()) })?;
        Ok(attr)
    }

    /// Attribute `i` of the driver's `device_group` (C's `device_attribute`s, which C puts in the
    /// device's sysfs directory), null-terminated list, if there is one at `i`.
    fn c_attr(&self, i: usize) -> Option<*mut bindings::device_attribute> {
        let group = self.ops().device_group;
        if group.is_null() {
            return None;
        }
        // SAFETY: The driver's static group and its null-terminated list: every entry up to the
        // null is read only after the ones before it were not null.
        unsafe {
            let attrs = (*group).__bindgen_anon_2.attrs;
            if attrs.is_null() {
                return None;
            }
            for k in 0..i {
                if (*attrs.add(k)).is_null() {
                    return None;
                }
            }
            let a = *attrs.add(i);
            // The group's attributes are `struct device_attribute`s (C's `DEVICE_ATTR_*`).
            (!a.is_null()).then(|| kernel::container_of!(a, bindings::device_attribute, attr))
        }
    }

    /// Whether the driver has every op C requires of a kernel verbs provider (C's
    /// `ib_device_check_mandatory`, as the core's `is_kverbs_provider`), and the core can give
    /// its consumers memory (a software device: no DMA device).
    pub(crate) fn is_kverbs_provider(&self) -> bool {
        let o = self.ops();
        o.alloc_pd.is_some()
            && o.dealloc_pd.is_some()
            && o.create_qp.is_some()
            && o.modify_qp.is_some()
            && o.destroy_qp.is_some()
            && o.post_send.is_some()
            && o.post_recv.is_some()
            && o.create_cq.is_some()
            && o.destroy_cq.is_some()
            && o.poll_cq.is_some()
            && o.req_notify_cq.is_some()
            && o.get_dma_mr.is_some()
            && o.dereg_mr.is_some()
            // SAFETY: The structure is alive (type invariant).
            && unsafe { (*self.raw()).dma_device }.is_null()
    }

    /// C's `get_port_immutable` of `port`.
    pub(crate) fn port_immutable(&self, port: u32) -> Result<crate::attrs::PortImmutable> {
        let get = self.ops().get_port_immutable.ok_or(EINVAL)?;
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut imm: bindings::ib_port_immutable = unsafe { core::mem::zeroed() };
        // SAFETY: The structure is alive (type invariant); `imm` is ours.
        kernel::error::to_result(unsafe { get(self.raw(), port, &mut imm) })?;
        Ok(crate::attrs::PortImmutable {
            core_cap_flags: imm.core_cap_flags,
            gid_tbl_len: u32::try_from(imm.gid_tbl_len).map_err(|_| EINVAL)?,
            pkey_tbl_len: u16::try_from(imm.pkey_tbl_len).map_err(|_| EINVAL)?,
            max_mad_size: imm.max_mad_size,
        })
    }
}

/// The core's view of C's `struct ib_device_attr`, with the device's `local_dma_lkey` when the
/// driver says every PD may use it.
pub(crate) fn device_attr_from_c(a: &bindings::ib_device_attr, local_dma_lkey: u32) -> DeviceAttr {
    let has_lkey =
        a.kernel_cap_flags & u64::from(bindings::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY) != 0;
    DeviceAttr {
        fw_ver: a.fw_ver,
        sys_image_guid: u64::from_be(a.sys_image_guid),
        max_mr_size: a.max_mr_size,
        page_size_cap: a.page_size_cap,
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        max_qp: a.max_qp,
        max_qp_wr: a.max_qp_wr,
        device_cap_flags: DeviceCapFlags::from_c(a.device_cap_flags),
        max_send_sge: a.max_send_sge,
        max_recv_sge: a.max_recv_sge,
        max_sge_rd: a.max_sge_rd,
        max_fast_reg_page_list_len: a.max_fast_reg_page_list_len,
        max_cq: a.max_cq,
        max_cqe: a.max_cqe,
        max_mr: a.max_mr,
        max_pd: a.max_pd,
        max_qp_rd_atom: a.max_qp_rd_atom,
        max_qp_init_rd_atom: a.max_qp_init_rd_atom,
        max_res_rd_atom: a.max_res_rd_atom,
        atomic_cap: u8::try_from(a.atomic_cap).unwrap_or(0),
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
        timestamp_mask: a.timestamp_mask,
        hca_core_clock: a.hca_core_clock,
        raw_packet_caps: a.raw_packet_caps,
        max_cq_moderation_count: a.cq_caps.max_cq_moderation_count,
        max_cq_moderation_period: a.cq_caps.max_cq_moderation_period,
        local_dma_lkey: has_lkey.then_some(local_dma_lkey),
    }
}

/// The link layer of `port` of the C driver's structure `ib` (C's `rdma_port_get_link_layer`:
/// the driver's answer, or without the op InfiniBand for an InfiniBand transport, else
/// Ethernet).
///
/// # Safety
///
/// `ib` is a C driver's live structure with its ops set.
pub(crate) unsafe fn link_layer_of(ib: *mut bindings::ib_device, port: u32) -> LinkLayer {
    // SAFETY: The caller's contract.
    let c = unsafe { &*ib };
    let ll = match c.ops.get_link_layer {
        // SAFETY: The driver's op on its own structure.
        Some(get) => unsafe { get(ib, port) },
        None => {
            if crate::c_abi::queries::rdma_node_get_transport(c.node_type.into())
                == bindings::rdma_transport_type_RDMA_TRANSPORT_IB
            {
                bindings::rdma_link_layer_IB_LINK_LAYER_INFINIBAND
            } else {
                bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
            }
        }
    };
    match ll {
        bindings::rdma_link_layer_IB_LINK_LAYER_INFINIBAND => LinkLayer::Infiniband,
        bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET => LinkLayer::Ethernet,
        _ => LinkLayer::Unspecified,
    }
}

/// The core's view of C's `struct ib_port_attr`.
fn port_attr_from_c(c: &bindings::ib_port_attr) -> PortAttr {
    PortAttr {
        state: PortState::from_raw(u8::try_from(c.state).unwrap_or(0)),
        phys_state: c.phys_state,
        max_mtu: u8::try_from(c.max_mtu).unwrap_or(0),
        active_mtu: u8::try_from(c.active_mtu).unwrap_or(0),
        gid_tbl_len: u32::try_from(c.gid_tbl_len).unwrap_or(0),
        port_cap_flags: c.port_cap_flags,
        max_msg_sz: c.max_msg_sz,
        bad_pkey_cntr: c.bad_pkey_cntr,
        qkey_viol_cntr: c.qkey_viol_cntr,
        pkey_tbl_len: c.pkey_tbl_len,
        lid: c.lid,
        sm_lid: c.sm_lid,
        lmc: c.lmc,
        max_vl_num: c.max_vl_num,
        sm_sl: c.sm_sl,
        subnet_timeout: c.subnet_timeout,
        init_type_reply: c.init_type_reply,
        active_width: c.active_width,
        active_speed: c.active_speed,
        port_cap_flags2: c.port_cap_flags2,
    }
}

impl DynOps for CDriverOps {
    fn uverbs(&self) -> Option<UverbsAbi> {
        // C's `ib_uverbs_add_one` skips a device whose driver has no `alloc_ucontext`.
        let o = self.ops();
        o.alloc_ucontext?;
        // SAFETY: The structure is alive (type invariant); the mask is set before registration.
        let mask = unsafe { (*self.raw()).uverbs_cmd_mask };
        let served = |cmd: u32, has_op: bool| {
            if has_op && mask & (1 << cmd) != 0 {
                1u64 << cmd
            } else {
                0
            }
        };
        Some(UverbsAbi {
            version: o.uverbs_abi_ver,
            driver_id: o.driver_id,
            data_path_cmds: served(CMD_REQ_NOTIFY_CQ, o.req_notify_cq.is_some())
                | served(CMD_POST_SEND, o.post_send.is_some()),
        })
    }

    fn driver_methods(&self) -> &'static [DriverMethod] {
        &[]
    }

    fn driver_attrs(&self) -> &'static [DriverAttrs] {
        &[]
    }

    fn alloc_pd(&self) -> Result<KBox<dyn PdObject>> {
        // SAFETY: The structure outlives the device's objects (type invariant).
        Ok(KBox::new(unsafe { DriverPd::alloc(self.ib)? }, GFP_KERNEL)?)
    }

    fn create_cq(&self, init: &CqInit, notifier: &CqNotifier) -> Result<KBox<dyn CqObject>> {
        // SAFETY: As above.
        Ok(KBox::new(
            unsafe { DriverCq::create(self.ib, init, notifier)? },
            GFP_KERNEL,
        )?)
    }

    fn alloc_dma_buffer(&self, len: usize) -> Result<KBox<dyn DmaMemory>> {
        // A software device addresses kernel memory by its virtual address (C's
        // `ib_uses_virt_dma`); a C driver of hardware would need its DMA device's mappings: not
        // yet.
        // SAFETY: The structure is alive (type invariant).
        if !unsafe { (*self.raw()).dma_device }.is_null() {
            return Err(EOPNOTSUPP);
        }
        Ok(KBox::new(VirtBuffer::new(len)?, GFP_KERNEL)?)
    }

    fn alloc_ucontext(&self, udata: &Udata) -> Result<KBox<dyn UContextObject>> {
        // SAFETY: The structure outlives the device's contexts (type invariant).
        Ok(KBox::new(
            unsafe { DriverUContext::alloc(self.ib, udata)? },
            GFP_KERNEL,
        )?)
    }

    fn alloc_user_pd(&self, ctx: &dyn UContextObject, udata: &Udata) -> Result<KBox<dyn PdObject>> {
        let uctx = DriverUContext::of(ctx)?.raw();
        // SAFETY: The structure outlives the device's objects (type invariant); the context is
        // the driver's, and outlives its PDs (the core destroys a context's objects first).
        Ok(KBox::new(
            unsafe { DriverPd::alloc_user(self.ib, uctx, udata)? },
            GFP_KERNEL,
        )?)
    }

    fn checks_qp_transitions(&self) -> bool {
        true
    }

    fn query_device_udata(&self, udata: &Udata) -> Result<DeviceAttr> {
        let attr = self.query_device_c(Some(udata))?;
        // SAFETY: The structure is alive (type invariant).
        let lkey = unsafe { (*self.raw()).local_dma_lkey };
        Ok(device_attr_from_c(&attr, lkey))
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        let query = self.ops().query_port.ok_or(EOPNOTSUPP)?;
        // SAFETY: A plain C structure: all zeroes is valid (C zeroes it before the driver).
        let mut attr: bindings::ib_port_attr = unsafe { core::mem::zeroed() };
        // SAFETY: The structure is alive (type invariant); `attr` is ours.
        kernel::error::to_result(unsafe { query(self.raw(), port, &mut attr) })?;
        Ok(port_attr_from_c(&attr))
    }

    fn query_gid(&self, port: u32, index: u32) -> Option<Result<Gid>> {
        // A RoCE port's GIDs are the core's to make (C's `roce_gid_mgmt`); an InfiniBand or
        // iWARP port's come from the driver (the core asks only for those).
        let query = self.ops().query_gid?;
        // SAFETY: A plain C union: all zeroes is valid.
        let mut gid: bindings::ib_gid = unsafe { core::mem::zeroed() };
        let index = kernel::ffi::c_int::try_from(index).ok()?;
        // SAFETY: The structure is alive (type invariant); `gid` is ours.
        let r = kernel::error::to_result(unsafe { query(self.raw(), port, index, &mut gid) });
        // SAFETY: The raw bytes of the union.
        Some(r.map(|()| Gid(unsafe { gid.raw })))
    }

    fn query_pkey(&self, port: u32, index: u16) -> Result<u16> {
        let query = self.ops().query_pkey.ok_or(EOPNOTSUPP)?;
        let mut pkey = 0u16;
        // SAFETY: The structure is alive (type invariant); `pkey` is ours.
        kernel::error::to_result(unsafe { query(self.raw(), port, index, &mut pkey) })?;
        Ok(pkey)
    }

    fn fw_version(&self) -> FwVersion {
        let Some(get) = self.ops().get_dev_fw_str else {
            return FwVersion::default();
        };
        let mut buf = [0u8; crate::attrs::FW_VERSION_MAX];
        // SAFETY: The structure is alive (type invariant); C's callers hand a buffer of
        // `IB_FW_VERSION_NAME_MAX` bytes, as this one.
        unsafe { get(self.raw(), buf.as_mut_ptr().cast()) };
        let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        FwVersion::from_bytes(&buf[..n])
    }

    fn link_layer(&self, port: u32) -> LinkLayer {
        // SAFETY: The structure is alive with its ops (type invariant).
        unsafe { link_layer_of(self.raw(), port) }
    }

    fn modify_node_desc(&self, desc: &NodeDesc) -> Result {
        let modify = self.ops().modify_device.ok_or(EOPNOTSUPP)?;
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut m: bindings::ib_device_modify = unsafe { core::mem::zeroed() };
        for (d, s) in m.node_desc.iter_mut().zip(desc.as_bytes()) {
            *d = *s as kernel::ffi::c_char;
        }
        // SAFETY: The structure is alive (type invariant); `m` is ours.
        kernel::error::to_result(unsafe {
            modify(
                self.raw(),
                bindings::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC as c_int,
                &mut m,
            )
        })
    }

    fn has_process_mad(&self) -> bool {
        self.ops().process_mad.is_some()
    }

    fn has_query_ucontext(&self) -> bool {
        false
    }

    fn process_mad(
        &self,
        flags: u32,
        port: u32,
        wc: Option<&MadWc>,
        inp: &Mad,
        out: &mut Mad,
    ) -> u32 {
        let Some(process) = self.ops().process_mad else {
            return result::FAILURE;
        };
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut c_wc: bindings::ib_wc = unsafe { core::mem::zeroed() };
        if let Some(w) = wc {
            c_wc.slid = w.slid.into();
            c_wc.src_qp = w.src_qp;
            c_wc.sl = w.sl;
            c_wc.pkey_index = w.pkey_index;
            c_wc.dlid_path_bits = w.dlid_path_bits;
            c_wc.port_num = port;
        }
        const _: () = assert!(size_of::<Mad>() == size_of::<bindings::ib_mad>());
        let mut out_size = size_of::<Mad>();
        let mut out_pkey_index = 0u16;
        // SAFETY: The driver's op on its own structure, with MADs of `struct ib_mad`'s size
        // (checked above) and the completion when there is one; no GRH is passed, as the
        // core's MAD layer passes none for a local MAD.
        let r = unsafe {
            process(
                self.raw(),
                flags as c_int,
                port,
                if wc.is_some() {
                    &c_wc
                } else {
                    core::ptr::null()
                },
                core::ptr::null(),
                inp.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                &mut out_size,
                &mut out_pkey_index,
            )
        };
        // C's `IB_MAD_RESULT_*` bits are the core's.
        u32::try_from(r).unwrap_or(result::FAILURE)
    }

    fn modify_port_caps(&self, port: u32, set: u32, clear: u32) -> Result {
        let modify = self.ops().modify_port.ok_or(EOPNOTSUPP)?;
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut m: bindings::ib_port_modify = unsafe { core::mem::zeroed() };
        m.set_port_cap_mask = set;
        m.clr_port_cap_mask = clear;
        // SAFETY: The structure is alive (type invariant); `m` is ours.
        kernel::error::to_result(unsafe { modify(self.raw(), port, 0, &mut m) })
    }

    fn device_attr(&self, i: usize) -> Option<(&'static CStr, u16, bool)> {
        let a = self.c_attr(i)?;
        // SAFETY: A listed attribute of the driver's group (`c_attr`); its name is the driver
        // module's static data, which outlives the device's sysfs files (the driver cannot go
        // while its device is registered).
        let (name, mode) = unsafe { ((*a).attr.name, (*a).attr.mode) };
        if name.is_null() {
            return None;
        }
        // SAFETY: As above: a NUL-terminated static name.
        let name = unsafe { CStr::from_char_ptr(name) };
        // SAFETY: As above.
        let store = unsafe { (*a).__bindgen_anon_2.store.is_some() };
        Some((name, mode, store))
    }

    fn device_attr_show(&self, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
        let a = self.c_attr(i as usize).ok_or(EINVAL)?;
        // SAFETY: A listed attribute (`c_attr`).
        let show = unsafe { (*a).__bindgen_anon_1.show }.ok_or(EIO)?;
        // C's `show` writes a page with `sysfs_emit`, which wants a page-aligned buffer: a
        // page-sized allocation is one.
        let mut page = KVec::<u8>::with_capacity(PAGE_SIZE, GFP_KERNEL)?;
        page.resize(PAGE_SIZE, 0, GFP_KERNEL)?;
        let dev = crate::c_abi::face::c_device_of(self.raw());
        // SAFETY: The driver's callback with its own structure's device and attribute, and a
        // writable page.
        let n = unsafe { show(dev, a, page.as_mut_ptr().cast()) };
        let n = usize::try_from(n).map_err(|_| Error::from_errno(n as c_int))?;
        buf.write_bytes(page.get(..n.min(PAGE_SIZE)).unwrap_or(&[]));
        Ok(())
    }

    fn device_attr_store(&self, i: u32, data: &[u8]) -> Result {
        let a = self.c_attr(i as usize).ok_or(EINVAL)?;
        // SAFETY: A listed attribute (`c_attr`).
        let store = unsafe { (*a).__bindgen_anon_2.store }.ok_or(EIO)?;
        let mut page = KVec::<u8>::with_capacity(data.len() + 1, GFP_KERNEL)?;
        page.extend_from_slice(data, GFP_KERNEL)?;
        page.push(0, GFP_KERNEL)?;
        let dev = crate::c_abi::face::c_device_of(self.raw());
        // SAFETY: The driver's callback with its own structure's device and attribute, and the
        // written bytes, NUL-terminated as sysfs hands them.
        let n = unsafe { store(dev, a, page.as_ptr().cast(), data.len()) };
        if n < 0 {
            return Err(Error::from_errno(n as c_int));
        }
        Ok(())
    }

    fn has_hw_stats(&self) -> bool {
        self.ops().alloc_hw_port_stats.is_some() && self.ops().get_hw_stats.is_some()
    }

    fn alloc_hw_port_stats(&self, port: u32) -> Result<HwStatsDesc> {
        let alloc = self.ops().alloc_hw_port_stats.ok_or(EOPNOTSUPP)?;
        // SAFETY: The structure is alive (type invariant).
        let stats = NonNull::new(unsafe { alloc(self.raw(), port) }).ok_or(ENOMEM)?;
        let kept = PortStats(stats);
        // SAFETY: A counter set the driver made with `rdma_alloc_hw_stats_struct`: its
        // descriptions (the driver's static table) hold `num_counters` entries.
        let (descs, n, lifespan, disabled) = unsafe {
            let s = stats.as_ptr();
            (
                (*s).descs,
                usize::try_from((*s).num_counters).unwrap_or(0),
                (*s).lifespan,
                (*s).is_disabled,
            )
        };
        let mut out = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            // SAFETY: As above; the names are the driver module's static strings, which
            // outlive the device.
            let (name, flags) = unsafe { ((*descs.add(i)).name, (*descs.add(i)).flags) };
            if name.is_null() {
                return Err(EINVAL);
            }
            let bits = c_ulong::BITS as usize;
            // SAFETY: The bitmap holds a bit per counter (`rdma_alloc_hw_stats_struct`).
            let off = unsafe { *disabled.add(i / bits) } & (1 << (i % bits)) != 0;
            out.push(
                HwStatDesc {
                    // SAFETY: As above.
                    name: unsafe { CStr::from_char_ptr(name) },
                    optional: flags & bindings::ib_stat_flag_IB_STAT_FLAG_OPTIONAL != 0,
                    disabled: off,
                },
                GFP_KERNEL,
            )?;
        }
        self.stats.lock().push((port, kept), GFP_KERNEL)?;
        Ok(HwStatsDesc {
            descs: out,
            // C keeps jiffies; the core counts milliseconds (C's `jiffies_to_msecs`).
            lifespan_ms: u32::try_from(
                lifespan.saturating_mul(1000) / bindings::CONFIG_HZ as usize,
            )
            .unwrap_or(u32::MAX),
        })
    }

    fn get_hw_stats(&self, port: u32, values: &mut [u64], index: usize) -> Result<usize> {
        let get = self.ops().get_hw_stats.ok_or(EOPNOTSUPP)?;
        let stats = self.stats.lock();
        let s = stats
            .iter()
            .find(|(p, _)| *p == port)
            .map(|(_, s)| s.0)
            .ok_or(EINVAL)?;
        let index = c_int::try_from(index).map_err(|_| EINVAL)?;
        // SAFETY: The driver's op on its own structure and the set it made for `port`; the
        // lock keeps the set (and its values) for this call.
        let n = unsafe { get(self.raw(), s.as_ptr(), port, index) };
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        // SAFETY: The set's values, `num_counters` of them.
        let vals = unsafe {
            let p = s.as_ptr();
            core::slice::from_raw_parts(
                (&raw const (*p).value).cast::<u64>(),
                usize::try_from((*p).num_counters).unwrap_or(0),
            )
        };
        for (d, v) in values.iter_mut().zip(vals) {
            *d = *v;
        }
        Ok(n as usize)
    }

    fn c_structure(&self) -> *mut bindings::ib_device {
        self.raw()
    }

    fn netdev(&self, port: u32) -> Option<ARef<NetDevice>> {
        crate::c_abi::driver::netdev::port_netdev(self.raw(), port)
    }
}
