// SPDX-License-Identifier: GPL-2.0

//! The fake RDMA devices ib_core's KUnit suites register (compiled with CONFIG_KUNIT only).
//!
//! - [`Fake`]: a device without kernel verbs. Every port reports 4X EDR, ACTIVE and LinkUp, LID
//!   `0x10 * port`, two GIDs (`fe80::abcd`, then zero); port 1 has a one-entry P_Key table
//!   (`0xffff`), other ports none. Node descriptions starting with `bad` are refused (`EPERM`).
//! - [`Recording`]: the same device (without a writable node description) with the verbs a kernel verbs provider needs except
//!   `post_send` and `post_recv` (so it is not one), each recording its name in a [`Calls`] log.
//!   Its objects are numbered in creation order from 1; `query_qp` reports the numbers of the PD
//!   and CQs the QP was made with, so suites can check what the core handed the driver.
//!   `poll_cq` claims one completion more than there is room for (a driver bug the core
//!   catches).
//!
//! - [`Borrowing`]: a [`Fake`] whose operations borrow a counter of the suite's, which they
//!   increment when they are dropped: a [`BoundRegistration`]'s device, whose operations must
//!   be gone before the binding it borrows from ends.
//!
//! All register in the suites' own registry ([`Registration::new_test`]): they take no index
//! or name of the product's, are not in the `infiniband` class, and netlink never shows them.
//!
//! Both report the limits in [`device_attr`]. The test provider module
//! (`samples/ib_test_provider`) is another, separate provider: a loadable module with a
//! software data path that VM scenarios use; it cannot live here (a module cannot link to
//! KUnit-only code of `ib_core`), nor these here (they reach into `ib_core`'s private items).

use crate::{
    attrs::{
        DeviceAttr, Gid, NodeDesc, NodeType, PortAttr, PortImmutable, PortState, CORE_PORT_IBA_IB,
    },
    device::events::EventNotifier,
    device::{BoundRegistration, DeviceInfo, Registration},
    user::udata::Udata,
    verbs::ops::{DeviceOps, DmaMemory, NoVerbs, UserData},
    verbs::types::{
        AccessFlags, AhAttr, CqInit, CqNotifier, NewMr, NewQp, QpAttr, QpAttrMask, QpInitDriver,
        SrqAttr,
    },
    verbs::wr::WorkCompletion,
};
use kernel::{
    device::{Bound, Device},
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
};

/// The attributes both fakes report: small limits the verbs suites check against.
pub(crate) fn device_attr() -> DeviceAttr {
    DeviceAttr {
        sys_image_guid: 0x1122_3344_5566_7788,
        max_cqe: 1024,
        max_qp_wr: 64,
        max_send_sge: 2,
        max_recv_sge: 2,
        local_dma_lkey: Some(0x5a),
        ..DeviceAttr::default()
    }
}

fn port_attr(port: u32) -> PortAttr {
    PortAttr {
        state: PortState::Active,
        phys_state: 5,
        lid: port * 0x10,
        gid_tbl_len: 2,
        pkey_tbl_len: u16::from(port == 1),
        active_width: 2,
        active_speed: 32,
        ..PortAttr::default()
    }
}

fn port_immutable(port: u32) -> PortImmutable {
    PortImmutable {
        core_cap_flags: CORE_PORT_IBA_IB,
        gid_tbl_len: 2,
        pkey_tbl_len: u16::from(port == 1),
        max_mad_size: 256,
    }
}

fn gid(index: u32) -> Gid {
    match index {
        0 => Gid::from_parts(0xfe80_0000_0000_0000, 0xabcd),
        _ => Gid::default(),
    }
}

fn node_desc_ok(desc: &NodeDesc) -> Result {
    if desc.as_bytes().starts_with(b"bad") {
        return Err(EPERM);
    }
    Ok(())
}

/// What the fakes register as: node GUID `0002:c903:0000:0100`, node description
/// `kunit device`, a CA with `ports` ports, named from `name`.
pub(crate) fn info(name: &[u8], ports: u32) -> DeviceInfo<'_> {
    DeviceInfo {
        name,
        node_type: NodeType::Ca,
        node_guid: 0x0002_c903_0000_0100,
        phys_port_cnt: ports,
        node_desc: b"kunit device",
        parent: None,
        use_cq_dim: false,
        num_comp_vectors: 1,
    }
}

/// A device without kernel verbs.
pub(crate) struct Fake;

#[vtable]
impl DeviceOps for Fake {
    type Pd = NoVerbs;
    type Cq = NoVerbs;
    type Qp = NoVerbs;
    type Mr = NoVerbs;
    type Srq = NoVerbs;
    type Ah = NoVerbs;
    type UContext = crate::verbs::ops::NoVerbs;

    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(device_attr())
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        Ok(port_attr(port))
    }

    fn get_port_immutable(&self, port: u32) -> Result<PortImmutable> {
        Ok(port_immutable(port))
    }

    fn query_gid(&self, _port: u32, index: u32) -> Result<Gid> {
        Ok(gid(index))
    }

    fn query_pkey(&self, _port: u32, _index: u16) -> Result<u16> {
        Ok(0xffff)
    }

    fn modify_node_desc(&self, desc: &NodeDesc) -> Result {
        node_desc_ok(desc)
    }
}

/// Registers a [`Fake`] with `ports` ports, named from `name`.
pub(crate) fn register(name: &[u8], ports: u32) -> Result<Registration> {
    Registration::new_test(info(name, ports), Fake)
}

/// A [`Fake`] whose operations borrow `dropped`, which they increment when they are dropped.
pub(crate) struct Borrowing<'a> {
    dropped: &'a Atomic<u32>,
}

impl Drop for Borrowing<'_> {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Relaxed);
    }
}

#[vtable]
impl<'a> DeviceOps for Borrowing<'a> {
    type Pd = NoVerbs;
    type Cq = NoVerbs;
    type Qp = NoVerbs;
    type Mr = NoVerbs;
    type Srq = NoVerbs;
    type Ah = NoVerbs;
    type UContext = NoVerbs;

    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(device_attr())
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        Ok(port_attr(port))
    }

    fn get_port_immutable(&self, port: u32) -> Result<PortImmutable> {
        Ok(port_immutable(port))
    }

    fn query_gid(&self, _port: u32, index: u32) -> Result<Gid> {
        Ok(gid(index))
    }

    fn query_pkey(&self, _port: u32, _index: u16) -> Result<u16> {
        Ok(0xffff)
    }
}

/// Registers a one-port [`Borrowing`] named from `name` for the bus device `parent`.
pub(crate) fn register_bound<'a>(
    parent: &'a Device<Bound>,
    name: &[u8],
    dropped: &'a Atomic<u32>,
) -> Result<BoundRegistration<'a>> {
    BoundRegistration::new_test::<kernel::types::ForLt!(Borrowing<'_>)>(
        parent,
        info(name, 1),
        Borrowing { dropped },
    )
}

/// Driver calls a [`Recording`] device saw, in order.
pub(crate) type Calls = Arc<Mutex<KVec<&'static str>>>;

/// An empty call log.
pub(crate) fn calls() -> Result<Calls> {
    Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)
}

/// The calls logged since the last `take`.
pub(crate) fn take(calls: &Calls) -> KVec<&'static str> {
    core::mem::take(&mut *calls.lock())
}

/// A device whose verbs record what they are asked.
pub(crate) struct Recording {
    calls: Calls,
    next: Atomic<u32>,
    attr: DeviceAttr,
}

impl Recording {
    fn log(&self, what: &'static str) -> Result {
        self.calls.lock().push(what, GFP_KERNEL)?;
        Ok(())
    }

    fn number(&self) -> u32 {
        self.next.fetch_add(1, Relaxed) + 1
    }
}

/// A [`Recording`] PD, CQ or MR: its number.
pub(crate) struct Numbered(pub(crate) u32);

/// A [`Recording`] QP: the numbers of what it was made with.
pub(crate) struct RecQp {
    pd: u32,
    send_cq: u32,
    recv_cq: u32,
    srq: u32,
}

#[vtable]
impl DeviceOps for Recording {
    type Pd = Numbered;
    type Cq = Numbered;
    type Qp = RecQp;
    type Mr = Numbered;
    type Srq = Numbered;
    type Ah = Numbered;
    type UContext = crate::verbs::ops::NoVerbs;

    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(self.attr)
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        Ok(port_attr(port))
    }

    fn get_port_immutable(&self, port: u32) -> Result<PortImmutable> {
        Ok(port_immutable(port))
    }

    fn query_gid(&self, _port: u32, index: u32) -> Result<Gid> {
        Ok(gid(index))
    }

    fn query_pkey(&self, _port: u32, _index: u16) -> Result<u16> {
        Ok(0xffff)
    }

    fn alloc_pd(&self) -> Result<Numbered> {
        self.log("alloc_pd")?;
        Ok(Numbered(self.number()))
    }

    fn dealloc_pd(&self, _pd: Numbered) -> Result {
        self.log("dealloc_pd")
    }

    fn create_cq(
        &self,
        _init: &CqInit,
        _n: &CqNotifier,
        _user: Option<UserData<'_, NoVerbs>>,
    ) -> Result<Numbered> {
        self.log("create_cq")?;
        Ok(Numbered(self.number()))
    }

    fn destroy_cq(&self, _cq: Numbered) -> Result {
        self.log("destroy_cq")
    }

    /// 1000 plus the CQ's number: not what was asked, so tests see the driver's size.
    fn cq_size(&self, cq: &Numbered) -> u32 {
        1000 + cq.0
    }

    fn req_notify_cq(&self, _cq: &Numbered, _solicited: bool) -> Result {
        self.log("req_notify_cq")
    }

    fn create_qp(
        &self,
        pd: &Numbered,
        init: &QpInitDriver<'_, Numbered, Numbered>,
        _user: Option<UserData<'_, NoVerbs>>,
    ) -> Result<NewQp<RecQp>> {
        self.log("create_qp")?;
        Ok(NewQp {
            qp: RecQp {
                pd: pd.0,
                send_cq: init.send_cq.0,
                recv_cq: init.recv_cq.0,
                srq: init.srq.map_or(0, |s| s.0),
            },
            qp_num: 0x42,
            cap: init.cap,
        })
    }

    fn modify_qp(
        &self,
        _qp: &RecQp,
        _attr: &QpAttr,
        _mask: QpAttrMask,
        _udata: Option<&Udata>,
    ) -> Result {
        self.log("modify_qp")
    }

    /// The PD's number as `qkey`, the send and receive CQs' as `sq_psn` and `rq_psn`, the
    /// SRQ's (0: none) as `dest_qp_num`.
    fn query_qp(&self, qp: &RecQp) -> Result<QpAttr> {
        Ok(QpAttr {
            qkey: qp.pd,
            sq_psn: qp.send_cq,
            rq_psn: qp.recv_cq,
            dest_qp_num: qp.srq,
            ..QpAttr::default()
        })
    }

    fn destroy_qp(&self, _qp: RecQp) -> Result {
        self.log("destroy_qp")
    }

    fn get_dma_mr(&self, _pd: &Numbered, _access: AccessFlags) -> Result<NewMr<Numbered>> {
        self.log("get_dma_mr")?;
        Ok(NewMr {
            mr: Numbered(self.number()),
            lkey: 7,
            rkey: 8,
        })
    }

    fn dereg_mr(&self, _mr: Numbered) -> Result {
        self.log("dereg_mr")
    }

    fn create_srq(
        &self,
        _pd: &Numbered,
        attr: &SrqAttr,
        _events: &EventNotifier,
        _user: Option<UserData<'_, NoVerbs>>,
    ) -> Result<(Numbered, SrqAttr)> {
        self.log("create_srq")?;
        Ok((Numbered(self.number()), *attr))
    }

    fn destroy_srq(&self, _srq: Numbered) -> Result {
        self.log("destroy_srq")
    }

    fn create_ah(&self, _pd: &Numbered, _attr: &AhAttr) -> Result<Numbered> {
        self.log("create_ah")?;
        Ok(Numbered(self.number()))
    }

    fn destroy_ah(&self, _ah: Numbered) -> Result {
        self.log("destroy_ah")
    }

    fn poll_cq(&self, _cq: &Numbered, wc: &mut [WorkCompletion]) -> Result<usize> {
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

/// Registers a [`Recording`] device (one port, named `kverbs%d`) logging to `calls`.
pub(crate) fn register_recording(calls: &Calls) -> Result<Registration> {
    register_recording_with(calls, |_| ())
}

/// A [`Recording`] device whose attributes `tweak` changes.
pub(crate) fn register_recording_with(
    calls: &Calls,
    tweak: fn(&mut DeviceAttr),
) -> Result<Registration> {
    let mut attr = device_attr();
    tweak(&mut attr);
    Registration::new_test(
        info(b"kverbs%d", 1),
        Recording {
            calls: calls.clone(),
            next: Atomic::new(0),
            attr,
        },
    )
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
