// SPDX-License-Identifier: GPL-2.0

//! A test-only RDMA provider: software devices with no hardware behind them, registered with
//! `ib_core` so that its registration, sysfs and netlink can be tested before (and without) a
//! hardware driver.
//!
//! `insmod ib_test_provider.ko devices=2 ports=2` registers `ibtest0` and `ibtest1`; every device
//! has one port except the last, which has `ports`. Every value a device reports is derived from
//! its number `d` and the parameters, so scenarios can compute what to expect:
//!
//! | what | value |
//! |---|---|
//! | node GUID, system image GUID | `guid_base + d` |
//! | firmware version | `7.3.<d>` |
//! | vendor id, part id, hw version | `0x02c9`, `4119`, `d` |
//! | node description | `ib_test_provider device <d>` (writable) |
//! | port `p` state | ACTIVE, LinkUp; 4X EDR; MTU 4096 |
//! | port `p` LID, SM LID, LMC, SM SL | `lid_base + 16*d + p`, `1`, `0`, `0` |
//! | port `p` capability mask | `0x2651e848` |
//! | GID table | 4 entries: `fe80::<node GUID>` then zeros |
//! | P_Key table | 2 entries: `0xffff`, `0x0000` |
//! | driver sysfs attributes | `hw_rev`: `<d>` in hex; `hca_type`: `MT4119` |
//!
//! The devices also implement the kernel verbs in software (so they are kernel verbs providers):
//! PD, CQ, QP with its attributes, DMA MR, SRQ (with its limit event), AH, DMA buffers, and a
//! data path between the QPs of one device (RC: SEND with and without immediate data, RDMA
//! write, RDMA read, compare-and-swap and fetch-and-add; UD: datagrams with the GRH space and,
//! through an AH with a GRH, the GRH; QPs receiving from an SRQ raise last-WQE-reached in error;
//! see `soft_rc.rs`). QP numbers count from `0x100`, a PD's DMA MR has lkey and rkey
//! `0x1000 + PD number`.

use ib_core::{
    attrs::{DeviceAttr, Gid, NodeType, PortAttr, PortImmutable, PortState, CORE_CAP_PROT_IB},
    device::{DeviceInfo, DeviceOps, FwVersion, NodeDesc, Registration},
    user::udata::Udata,
    verbs::dma_buffer::DmaMemory,
    verbs::ops::{NoVerbs, SendWrs, UserData},
    verbs::wr::{PostError, RecvWr, WorkCompletion},
    verbs::{
        AccessFlags, AhAttr, CqInit, CqNotifier, EventNotifier, NewMr, NewQp, QpAttr, QpAttrField,
        QpAttrMask, QpCap, QpInitDriver, SrqAttr, SrqAttrMask,
    },
};
use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    sysfs_attrs::{Attribute, ShowBuffer},
};

module! {
    type: TestProvider,
    name: "ib_test_provider",
    authors: ["rdma-rs developers"],
    description: "Test-only software RDMA devices for ib_core tests",
    license: "GPL",
    params: {
        devices: u32 {
            default: 2,
            description: "Number of devices to register (at most 8)",
        },
        ports: u32 {
            default: 2,
            description: "Ports of the last device (1..=4); the others have one",
        },
        guid_base: u64 {
            default: 0x0002_c903_00ab_cd00,
            description: "Node GUID of device 0; device d has guid_base + d",
        },
        lid_base: u32 {
            default: 0x100,
            description: "Port p of device d has LID lid_base + 16*d + p",
        },
    },
}

/// Entries in every port's GID table.
const GID_TBL_LEN: u32 = 4;
/// The P_Key table.
const PKEYS: [u16; 2] = [0xffff, 0x0000];
/// An IB port's capability mask, as a ConnectX HCA reports it.
const PORT_CAP_FLAGS: u32 = 0x2651_e848;
/// `IB_PORT_PHYS_STATE_LINK_UP`.
const PHYS_STATE_LINK_UP: u8 = 5;
/// `IB_MTU_4096`.
const MTU_4096: u8 = 5;
/// `IB_WIDTH_4X`.
const WIDTH_4X: u8 = 2;
/// `IB_SPEED_EDR`.
const SPEED_EDR: u16 = 32;

/// `hw_rev`, as mlx5 prints its revision.
fn hw_rev_show(d: &SoftDevice, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{:x}\n", d.number))
}

/// `hca_type`, as mlx5 prints it for a ConnectX-5.
fn hca_type_show(_: &SoftDevice, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.write_bytes(b"MT4119\n");
    Ok(())
}

#[path = "ib_test_provider/soft_rc.rs"]
mod soft_rc;

use soft_rc::{mr_key, Fabric, SoftAh, SoftCq, SoftQp, SoftQpInit, SoftSrq};

/// One software device.
struct SoftDevice {
    number: u32,
    guid: u64,
    lid_base: u32,
    next_pd: Atomic<u32>,
    next_qpn: Atomic<u32>,
    fabric: Arc<Fabric>,
}

/// A software PD.
struct SoftPd {
    number: u32,
}

/// A software memory region: its key and rights.
struct SoftMr {
    key: u32,
    rights: AccessFlags,
}

#[vtable]
impl DeviceOps for SoftDevice {
    type Pd = SoftPd;
    type Cq = Arc<SoftCq>;
    type Qp = Arc<SoftQp>;
    type Mr = SoftMr;
    type Srq = Arc<SoftSrq>;
    type Ah = SoftAh;
    type UContext = ib_core::verbs::ops::NoVerbs;

    fn device_attrs() -> &'static [Attribute<Self>] {
        const ATTRS: &[Attribute<SoftDevice>] = &[
            Attribute::ro(c"hw_rev", hw_rev_show),
            Attribute::ro(c"hca_type", hca_type_show),
        ];
        ATTRS
    }

    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            fw_ver: (7 << 32) | (3 << 16) | u64::from(self.number),
            sys_image_guid: self.guid,
            max_mr_size: u64::MAX,
            page_size_cap: 0xffff_f000,
            vendor_id: 0x02c9,
            vendor_part_id: 4119,
            hw_ver: self.number,
            max_qp: 1 << 16,
            max_qp_wr: 1 << 15,
            max_send_sge: 30,
            max_recv_sge: 30,
            max_cq: 1 << 16,
            max_cqe: (1 << 22) - 1,
            max_mr: 1 << 16,
            max_pd: 1 << 16,
            max_qp_rd_atom: 16,
            max_qp_init_rd_atom: 16,
            max_srq: 1 << 15,
            max_srq_wr: (1 << 15) - 1,
            // IB_ATOMIC_HCA: the data path does compare-and-swap and fetch-and-add.
            atomic_cap: 1,
            max_pkeys: PKEYS.len() as u16,
            local_ca_ack_delay: 16,
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        Ok(PortAttr {
            state: PortState::Active,
            phys_state: PHYS_STATE_LINK_UP,
            max_mtu: MTU_4096,
            active_mtu: MTU_4096,
            gid_tbl_len: GID_TBL_LEN,
            port_cap_flags: PORT_CAP_FLAGS,
            max_msg_sz: soft_rc::MAX_MSG as u32,
            pkey_tbl_len: PKEYS.len() as u16,
            lid: self.lid_base + 16 * self.number + port,
            sm_lid: 1,
            active_width: WIDTH_4X,
            active_speed: SPEED_EDR,
            ..PortAttr::default()
        })
    }

    fn get_port_immutable(&self, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            // An InfiniBand protocol port without management datagrams: the software fabric
            // carries none (no SMI or GSI QP), so the MAD layer and ib_umad leave it alone.
            core_cap_flags: CORE_CAP_PROT_IB,
            gid_tbl_len: GID_TBL_LEN,
            pkey_tbl_len: PKEYS.len() as u16,
            max_mad_size: 256,
        })
    }

    fn query_gid(&self, _port: u32, index: u32) -> Result<Gid> {
        Ok(match index {
            0 => Gid::from_parts(0xfe80_0000_0000_0000, self.guid),
            i if i < GID_TBL_LEN => Gid::default(),
            _ => return Err(EINVAL),
        })
    }

    fn query_pkey(&self, _port: u32, index: u16) -> Result<u16> {
        PKEYS.get(usize::from(index)).copied().ok_or(EINVAL)
    }

    fn fw_version(&self) -> FwVersion {
        let mut v = FwVersion::new();
        // A version string this short always fits.
        let _ = core::fmt::Write::write_fmt(&mut v, format_args!("7.3.{}", self.number));
        v
    }

    fn modify_node_desc(&self, _desc: &NodeDesc) -> Result {
        Ok(())
    }

    fn alloc_pd(&self) -> Result<SoftPd> {
        Ok(SoftPd {
            number: self.next_pd.fetch_add(1, Relaxed),
        })
    }

    fn dealloc_pd(&self, _pd: SoftPd) -> Result {
        Ok(())
    }

    /// Kernel CQs only (the provider has no user verbs).
    fn create_cq(
        &self,
        init: &CqInit,
        notifier: &CqNotifier,
        user: Option<UserData<'_, NoVerbs>>,
    ) -> Result<Arc<SoftCq>> {
        if user.is_some() {
            return Err(EOPNOTSUPP);
        }
        SoftCq::new(init.cqe as usize, notifier.clone())
    }

    fn destroy_cq(&self, _cq: Arc<SoftCq>) -> Result {
        Ok(())
    }

    fn req_notify_cq(&self, cq: &Arc<SoftCq>, solicited: bool) -> Result {
        cq.arm(solicited);
        Ok(())
    }

    fn poll_cq(&self, cq: &Arc<SoftCq>, wc: &mut [WorkCompletion]) -> Result<usize> {
        Ok(cq.poll(wc))
    }

    fn create_qp(
        &self,
        pd: &SoftPd,
        init: &QpInitDriver<'_, Arc<SoftCq>, Arc<SoftSrq>>,
        user: Option<UserData<'_, NoVerbs>>,
    ) -> Result<NewQp<Arc<SoftQp>>> {
        // Kernel QPs only (the provider has no user verbs).
        if user.is_some() {
            return Err(EOPNOTSUPP);
        }
        // The software fabric carries no management datagrams: no special QPs.
        if matches!(
            init.qp_type,
            ib_core::verbs::types::QpType::Smi | ib_core::verbs::types::QpType::Gsi
        ) {
            return Err(EOPNOTSUPP);
        }
        let qpn = self.next_qpn.fetch_add(1, Relaxed);
        let qp = SoftQp::new(SoftQpInit {
            qpn,
            pd: pd.number,
            qp_type: init.qp_type,
            sq_sig_all: init.sq_sig_all,
            cap: init.cap,
            send_cq: init.send_cq.clone(),
            recv_cq: init.recv_cq.clone(),
            srq: init.srq.cloned(),
            events: init.events.clone(),
        })?;
        self.fabric.add_qp(qp.clone())?;
        Ok(NewQp {
            qp,
            qp_num: qpn,
            cap: init.cap,
        })
    }

    fn modify_qp(
        &self,
        qp: &Arc<SoftQp>,
        attr: &QpAttr,
        mask: QpAttrMask,
        _udata: Option<&Udata>,
    ) -> Result {
        use QpAttrField as F;
        let (state, was) = {
            let mut cur = qp.attr.lock();
            let was = cur.qp_state;
            let m = |field: F| mask.contains(field);
            if m(F::State) {
                cur.qp_state = attr.qp_state;
            }
            if m(F::Port) {
                cur.port_num = attr.port_num;
            }
            if m(F::PkeyIndex) {
                cur.pkey_index = attr.pkey_index;
            }
            if m(F::AccessFlags) {
                cur.qp_access_flags = attr.qp_access_flags;
            }
            if m(F::Qkey) {
                cur.qkey = attr.qkey;
            }
            if m(F::Av) {
                cur.dlid = attr.dlid;
            }
            if m(F::DestQpn) {
                cur.dest_qp_num = attr.dest_qp_num;
            }
            if m(F::PathMtu) {
                cur.path_mtu = attr.path_mtu;
            }
            if m(F::RqPsn) {
                cur.rq_psn = attr.rq_psn;
            }
            if m(F::SqPsn) {
                cur.sq_psn = attr.sq_psn;
            }
            if m(F::Timeout) {
                cur.timeout = attr.timeout;
            }
            if m(F::RetryCnt) {
                cur.retry_cnt = attr.retry_cnt;
            }
            if m(F::RnrRetry) {
                cur.rnr_retry = attr.rnr_retry;
            }
            if m(F::MinRnrTimer) {
                cur.min_rnr_timer = attr.min_rnr_timer;
            }
            if m(F::MaxQpRdAtomic) {
                cur.max_rd_atomic = attr.max_rd_atomic;
            }
            if m(F::MaxDestRdAtomic) {
                cur.max_dest_rd_atomic = attr.max_dest_rd_atomic;
            }
            (cur.qp_state, was)
        };
        if mask.contains(F::State) {
            qp.state_changed(state, was);
            qp.report_last_wqe();
        }
        Ok(())
    }

    fn qp_cap(&self, qp: &Arc<SoftQp>) -> QpCap {
        // As asked: the provider rounds nothing.
        qp.cap
    }

    fn query_qp(&self, qp: &Arc<SoftQp>) -> Result<QpAttr> {
        Ok(*qp.attr.lock())
    }

    fn destroy_qp(&self, qp: Arc<SoftQp>) -> Result {
        self.fabric.remove_qp(qp.qpn);
        Ok(())
    }

    fn post_send(&self, qp: &Arc<SoftQp>, wrs: SendWrs<'_, Self>) -> Result<(), PostError> {
        qp.post_send(&self.fabric, &wrs, |wr| wrs.ah(wr).map(|ah| ah.attr))
    }

    fn post_recv(&self, qp: &Arc<SoftQp>, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        qp.post_recv(&self.fabric, wrs)
    }

    fn get_dma_mr(&self, pd: &SoftPd, rights: AccessFlags) -> Result<NewMr<SoftMr>> {
        let key = mr_key(pd.number);
        self.fabric.add_mr(key, rights)?;
        Ok(NewMr {
            mr: SoftMr { key, rights },
            lkey: key,
            rkey: key,
        })
    }

    fn dereg_mr(&self, mr: SoftMr) -> Result {
        self.fabric.remove_mr(mr.key, mr.rights);
        Ok(())
    }

    /// Kernel SRQs only (the provider has no user verbs).
    fn create_srq(
        &self,
        pd: &SoftPd,
        attr: &SrqAttr,
        events: &EventNotifier,
        user: Option<UserData<'_, NoVerbs>>,
    ) -> Result<(Arc<SoftSrq>, SrqAttr)> {
        if user.is_some() {
            return Err(EOPNOTSUPP);
        }
        let srq = SoftSrq::new(pd.number, attr, events.clone())?;
        let made = srq.query();
        Ok((srq, made))
    }

    fn modify_srq(
        &self,
        srq: &Arc<SoftSrq>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        _udata: Option<&Udata>,
    ) -> Result {
        srq.modify(attr, mask)
    }

    fn query_srq(&self, srq: &Arc<SoftSrq>) -> Result<SrqAttr> {
        Ok(srq.query())
    }

    fn destroy_srq(&self, _srq: Arc<SoftSrq>) -> Result {
        Ok(())
    }

    fn post_srq_recv(&self, srq: &Arc<SoftSrq>, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let result = srq.post_recv(wrs);
        self.fabric.progress_waiting();
        result
    }

    fn create_ah(&self, _pd: &SoftPd, attr: &AhAttr) -> Result<SoftAh> {
        Ok(SoftAh { attr: *attr })
    }

    fn destroy_ah(&self, _ah: SoftAh) -> Result {
        Ok(())
    }

    fn alloc_dma_buffer(&self, len: usize) -> Result<KBox<dyn DmaMemory>> {
        self.fabric.alloc_buffer(len)
    }
}

/// The loaded module: its registered devices.
struct TestProvider {
    registrations: KVec<Registration>,
}

impl kernel::Module for TestProvider {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let count = module_parameters::devices.value();
        let last_ports = module_parameters::ports.value();
        if count > 8 || !(1..=4).contains(&last_ports) {
            pr_err!("devices must be at most 8 and ports 1..=4\n");
            return Err(EINVAL);
        }
        let guid_base = module_parameters::guid_base.value();
        let lid_base = module_parameters::lid_base.value();
        let mut registrations = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for number in 0..count {
            let mut desc = NodeDesc::new();
            let _ = core::fmt::Write::write_fmt(
                &mut desc,
                format_args!("ib_test_provider device {number}"),
            );
            let info = DeviceInfo {
                name: b"ibtest%d",
                node_type: NodeType::Ca,
                node_guid: guid_base.wrapping_add(u64::from(number)),
                phys_port_cnt: if number + 1 == count { last_ports } else { 1 },
                node_desc: desc.as_bytes(),
                parent: None,
                use_cq_dim: false,
                num_comp_vectors: 1,
            };
            let lid0 = lid_base + 16 * number;
            let dev = SoftDevice {
                number,
                guid: info.node_guid,
                lid_base,
                next_pd: Atomic::new(1),
                next_qpn: Atomic::new(0x100),
                fabric: Arc::pin_init(Fabric::new(lid0, info.node_guid), GFP_KERNEL)?,
            };
            let reg = Registration::new(info, dev)?;
            pr_info!(
                "registered {} (index {}, {} port(s))\n",
                kernel::str::BStr::from_bytes(&reg.device().name()),
                reg.device().index(),
                reg.device().port_count()
            );
            registrations.push(reg, GFP_KERNEL)?;
        }
        Ok(Self { registrations })
    }
}

impl Drop for TestProvider {
    fn drop(&mut self) {
        // Unregister the latest first, as a driver unwinding its probes would.
        while let Some(reg) = self.registrations.pop() {
            drop(reg);
        }
        pr_info!("unloaded\n");
    }
}
