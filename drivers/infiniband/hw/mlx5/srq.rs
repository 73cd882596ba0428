// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (C's `srq.c`: `mlx5_ib_create_srq` with `create_srq_kernel` or
//! `create_srq_user`, `mlx5_ib_modify_srq`, `mlx5_ib_query_srq`, `mlx5_ib_destroy_srq`,
//! `mlx5_ib_post_srq_recv`, `mlx5_ib_free_srq_wqe`), made as C makes a basic SRQ on a function
//! at ISSI 1: an RMP (CREATE_RMP) whose work queue is a linked list. One SRQ type
//! ([`Mlx5Srq`]) for both owners; only its memory differs ([`SrqMemory`]).
//!
//! Each WQE starts with a 16-byte "next" segment (the index of the next free WQE at bytes 2-3)
//! followed by the data segments. A kernel consumer's SRQ has its ring in the driver's memory:
//! the free list runs from `head` to `tail`; a post takes the WQE at `head` and follows its
//! link, a completion (by the CQE's `wqe_counter`) links the freed WQE after `tail`. The
//! doorbell record's word 0 counts the WQEs posted. One IRQ-safe spinlock guards the list:
//! posting and completing may run in any context (a CQ's poll takes its own lock, then this
//! one). A user context's SRQ has its ring and doorbell record in user memory: libmlx5
//! allocates the ring of linked WQEs and the record and describes them in its request
//! (`struct mlx5_ib_create_srq`); the driver sizes the ring as for a kernel SRQ, pins both,
//! makes the RMP on them and answers its number (`struct mlx5_ib_create_srq_resp`). User space
//! posts receives itself; the kernel forwards the SRQ's events (limit reached, error).

use crate::{
    qp::wqe::{self, DataSeg, SEG},
    user::uabi::{CreateSrqReq, CreateSrqResp},
    user::umem::{coherent_page_list, page_offset, UserMemory},
};
use ib_core::{
    device::events::{EventNotifier, EventType},
    user::udata::Udata,
    verbs::types::SrqAttr,
    verbs::wr::{PostError, RecvWr},
};
use kernel::{
    io::Io,
    new_spinlock_irqsave,
    prelude::*,
    sync::{
        barrier::{mb, ordering::Write},
        spinlock_irqsave::SpinLockIrqSave,
        Arc,
    },
};
use mlx5_core::{
    auxdev::{
        CoherentBuf, DoorbellRecord, Mlx5Device, Resource, ResourceHandler, ResourceRegistration,
    },
    cmd::commands::Commands,
    ifc::verbs::{
        CreateRmp, CreateRmpIn, DestroyRmp, DestroyRmpIn, ModifyRmp, ModifyRmpIn, QueryRmp,
        RMPC_STATE_RDY,
    },
};

/// Size of the "next" segment (`struct mlx5_wqe_srq_next_seg`).
const NEXT_SEG: usize = 16;
/// Async event types of an SRQ (`MLX5_EVENT_TYPE_SRQ_*`).
const EVENT_SRQ_CATAS_ERROR: u8 = 0x12;
const EVENT_SRQ_RQ_LIMIT: u8 = 0x14;

/// The shape of an SRQ (C's sizing in `mlx5_ib_create_srq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SrqSize {
    /// WQEs in the ring (a power of two; one more than the requests it holds).
    pub(crate) max: u32,
    /// Data segments a request may carry (as asked).
    pub(crate) max_gs: u32,
    /// log2 of the WQE stride.
    pub(crate) wqe_shift: u32,
}

/// Sizes an SRQ of `attr` on a device with `log_max_srq_sz` and `max_wqe_sz_rq` (C's checks
/// and rounding; `EINVAL` past the caps).
pub(crate) fn srq_size(attr: &SrqAttr, log_max_srq_sz: u32, max_wqe_sz_rq: u32) -> Result<SrqSize> {
    let max_wqes = 1u64 << log_max_srq_sz.min(32);
    if u64::from(attr.max_wr) >= max_wqes || attr.max_sge > max_wqe_sz_rq / SEG as u32 {
        return Err(EINVAL);
    }
    let max = attr
        .max_wr
        .checked_add(1)
        .and_then(u32::checked_next_power_of_two)
        .ok_or(EINVAL)?;
    let desc = attr
        .max_sge
        .checked_mul(SEG as u32)
        .and_then(|d| d.checked_add(NEXT_SEG as u32))
        .and_then(u32::checked_next_power_of_two)
        .ok_or(EINVAL)?
        .max(32);
    Ok(SrqSize {
        max,
        max_gs: attr.max_sge,
        wqe_shift: desc.trailing_zeros(),
    })
}

/// The "next" segment linking WQE to WQE `next`.
pub(crate) fn next_seg(next: u16) -> [u8; NEXT_SEG] {
    let mut s = [0u8; NEXT_SEG];
    s[2..4].copy_from_slice(&next.to_be_bytes());
    s
}

/// The free list's state.
struct Ring {
    head: u32,
    tail: u32,
    /// WQEs posted (the doorbell record's value).
    wqe_ctr: u16,
    /// The request id of each WQE.
    wrid: KVec<u64>,
}

/// What an SRQ shares with the CQs of the QPs that receive from it.
#[pin_data]
pub(crate) struct SrqShared {
    buf: CoherentBuf,
    db: DoorbellRecord,
    size: SrqSize,
    #[pin]
    ring: SpinLockIrqSave<Ring>,
}

impl SrqShared {
    fn wqe_off(&self, idx: u32) -> usize {
        ((idx & (self.size.max - 1)) as usize) << self.size.wqe_shift
    }

    /// A receive completed in WQE `wqe_counter` (a value from the device, bounded to the
    /// ring): its request id; the WQE goes back to the free list (C's `mlx5_ib_free_srq_wqe`).
    pub(crate) fn complete(&self, wqe_counter: u16) -> u64 {
        let idx = u32::from(wqe_counter) & (self.size.max - 1);
        let mut r = self.ring.lock();
        let wr_id = r.wrid.get(idx as usize).copied().unwrap_or(0);
        self.free_locked(&mut r, idx);
        wr_id
    }

    /// Puts WQE `wqe_counter` back on the free list without completing it (a CQE dropped when
    /// its QP went to RESET).
    pub(crate) fn free(&self, wqe_counter: u16) {
        let idx = u32::from(wqe_counter) & (self.size.max - 1);
        let mut r = self.ring.lock();
        self.free_locked(&mut r, idx);
    }

    fn free_locked(&self, r: &mut Ring, idx: u32) {
        let _ = self.buf.write(self.wqe_off(r.tail), &next_seg(idx as u16));
        r.tail = idx;
    }

    /// Queues receive requests (C's `mlx5_ib_post_srq_recv`): `EINVAL` for a scatter list
    /// longer than the SRQ's, `ENOMEM` when no WQE is free; then the doorbell record.
    pub(crate) fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let mut r = self.ring.lock();
        let mut nreq = 0u16;
        let mut result = Ok(());
        for (i, wr) in wrs.iter().enumerate() {
            if wr.sg_list.len() > self.size.max_gs as usize {
                result = Err(PostError {
                    first_bad: i,
                    err: EINVAL,
                });
                break;
            }
            if r.head == r.tail {
                result = Err(PostError {
                    first_bad: i,
                    err: ENOMEM,
                });
                break;
            }
            let head = r.head;
            let base = self.wqe_off(head);
            let mut link = [0u8; 4];
            let mut w = self.buf.read(base, &mut link);
            for (k, sge) in wr.sg_list.iter().enumerate() {
                w = w.and_then(|()| {
                    self.buf
                        .view::<DataSeg>(base + NEXT_SEG + k * SEG)
                        .map(|v| v.copy_write(wqe::data_seg(sge)))
                });
            }
            if wr.sg_list.len() < self.size.max_gs as usize {
                let k = wr.sg_list.len();
                w = w.and_then(|()| {
                    self.buf
                        .view::<DataSeg>(base + NEXT_SEG + k * SEG)
                        .map(|v| v.copy_write(wqe::recv_terminator()))
                });
            }
            if let Err(err) = w {
                result = Err(PostError { first_bad: i, err });
                break;
            }
            if let Some(x) = r.wrid.get_mut((head & (self.size.max - 1)) as usize) {
                *x = wr.wr_id;
            }
            r.head = u32::from(u16::from_be_bytes([link[2], link[3]])) & (self.size.max - 1);
            nreq = nreq.wrapping_add(1);
        }
        if nreq != 0 {
            r.wqe_ctr = r.wqe_ctr.wrapping_add(nreq);
            // The WQEs before the doorbell record.
            mb(Write);
            self.db.set(0, r.wqe_ctr.into());
        }
        result
    }
}

/// An SRQ's async events, raised to the consumer's handler as C's `mlx5_ib_srq_event` does.
struct SrqEvents {
    srqn: u32,
    notifier: EventNotifier,
}

impl ResourceHandler for SrqEvents {
    fn event(&self, event_type: u8) {
        let e = match event_type {
            // The device disarmed the limit.
            EVENT_SRQ_RQ_LIMIT => EventType::SrqLimitReached,
            EVENT_SRQ_CATAS_ERROR => EventType::SrqErr,
            _ => {
                pr_warn!(
                    "mlx5_ib: Unexpected event type {} on SRQ {:06x}\n",
                    event_type,
                    self.srqn
                );
                return;
            }
        };
        self.notifier.raise(e);
    }
}

/// Where an RMP's work queue lies: its page list (big-endian addresses of 4 KiB pages), the
/// offset of the ring in the first page (64-byte units) and its doorbell record.
pub(crate) struct RmpMemory<'a> {
    pub(crate) pas: &'a [u8],
    pub(crate) page_offset: u64,
    pub(crate) dbr: u64,
}

/// CREATE_RMP of a ready RMP shaped `size` in PD `pdn` (C's `create_rmp_cmd`); returns its
/// number.
pub(crate) fn create_rmp(
    dev: &Mlx5Device,
    size: SrqSize,
    pdn: u32,
    mem: &RmpMemory<'_>,
) -> Result<u32> {
    let mut input = CreateRmpIn::new();
    input.set_state(RMPC_STATE_RDY)?;
    input.set_pd(pdn.into())?;
    input.set_dbr_addr(mem.dbr)?;
    input.set_log_wq_stride(size.wqe_shift.into())?;
    input.set_log_wq_pg_sz(0)?;
    input.set_page_offset(mem.page_offset)?;
    input.set_log_wq_sz(size.max.trailing_zeros().into())?;
    let (out, _) = dev.exec_var_large::<CreateRmp>(&input, mem.pas, 0)?;
    Ok(out.rmpn() as u32)
}

/// Files RMP `srqn`'s events in the resource table, raised to `events`.
pub(crate) fn register_events(
    dev: &Mlx5Device,
    srqn: u32,
    events: &EventNotifier,
) -> Result<ResourceRegistration> {
    let handler: Arc<dyn ResourceHandler> = Arc::new(
        SrqEvents {
            srqn,
            notifier: events.clone(),
        },
        GFP_KERNEL,
    )?;
    dev.register_resource(Resource::Srq(srqn), handler)
}

/// Arms RMP `srqn`'s limit (C's `mlx5_ib_modify_srq`: `EINVAL` for a limit not below the
/// ring's `max` WQEs; MODIFY_RMP with the limit selected).
pub(crate) fn arm_rmp(cmds: &Commands, srqn: u32, max: u32, limit: u32) -> Result {
    if limit >= max {
        return Err(EINVAL);
    }
    let mut input = ModifyRmpIn::new();
    input.set_rmp_state(RMPC_STATE_RDY)?;
    input.set_rmpn(srqn.into())?;
    input.set_bitmask_lwm(1)?;
    input.set_state(RMPC_STATE_RDY)?;
    input.set_lwm(limit.into())?;
    cmds.exec::<ModifyRmp>(&input)?;
    Ok(())
}

/// The limit RMP `srqn` is armed with, read from the device (C's `mlx5_ib_query_srq` with
/// QUERY_RMP; the device disarms a limit when its event fires).
pub(crate) fn query_rmp_limit(cmds: &Commands, srqn: u32) -> Result<u32> {
    let input = DestroyRmpIn::new().rmpn(srqn.into())?;
    let out = cmds.exec::<QueryRmp>(&input)?;
    Ok(out.lwm() as u32)
}

/// DESTROY_RMP.
pub(crate) fn destroy_rmp(cmds: &Commands, srqn: u32) -> Result {
    let input = DestroyRmpIn::new().rmpn(srqn.into())?;
    cmds.exec::<DestroyRmp>(&input).map(|_| ())
}

/// An SRQ's driver state (C's `mlx5_ib_srq`): its RMP and its memory.
pub(crate) struct Mlx5Srq<'bound> {
    /// The resource-table registration of its events (dropped before DESTROY_RMP: no event
    /// reaches the SRQ's owner after that).
    events: Option<ResourceRegistration>,
    /// The RMP number (what a QP receiving from it names).
    pub(crate) srqn: u32,
    size: SrqSize,
    memory: SrqMemory<'bound>,
}

/// Where an SRQ's ring and doorbell record are.
enum SrqMemory<'bound> {
    /// A kernel consumer's: the driver's, shared with the CQs of its QPs.
    Kernel(Arc<SrqShared>),
    /// A user context's: user memory, pinned (never unpinned if DESTROY_RMP fails).
    User {
        buf: Option<UserMemory<'bound>>,
        db: Option<UserMemory<'bound>>,
    },
}

/// Creates a kernel SRQ in PD `pdn`: the WQE ring with every WQE linked to the next, a
/// doorbell record, CREATE_RMP, then its events in the resource table.
pub(crate) fn create<'bound>(
    dev: &'bound Mlx5Device,
    size: SrqSize,
    pdn: u32,
    events: &EventNotifier,
) -> Result<Mlx5Srq<'bound>> {
    let buf = dev.alloc_coherent((size.max as usize) << size.wqe_shift)?;
    for i in 0..size.max {
        let next = ((i + 1) & (size.max - 1)) as u16;
        buf.write((i as usize) << size.wqe_shift, &next_seg(next))?;
    }
    let db = dev.alloc_db()?;
    let mut wrid = KVec::with_capacity(size.max as usize, GFP_KERNEL)?;
    for _ in 0..size.max {
        wrid.push(0u64, GFP_KERNEL)?;
    }
    let pas = coherent_page_list(buf.dma(), buf.len())?;
    let dbr = db.dma();
    let shared = Arc::pin_init(
        pin_init!(SrqShared {
            buf,
            db,
            size,
            ring <- new_spinlock_irqsave!(Ring {
                head: 0,
                tail: size.max - 1,
                wqe_ctr: 0,
                wrid,
            }),
        }),
        GFP_KERNEL,
    )?;
    let mem = RmpMemory {
        pas: &pas,
        page_offset: 0,
        dbr,
    };
    let srqn = match create_rmp(dev, size, pdn, &mem) {
        Ok(n) => n,
        Err(e) => {
            // A timed-out CREATE_RMP may have made the RMP: its memory is never freed then.
            if e == ETIMEDOUT {
                core::mem::forget(shared);
            }
            return Err(e);
        }
    };
    let mut srq = Mlx5Srq {
        events: None,
        srqn,
        size,
        memory: SrqMemory::Kernel(shared),
    };
    match register_events(dev, srqn, events) {
        Ok(reg) => srq.events = Some(reg),
        Err(e) => {
            let _ = destroy(dev.commands(), srq);
            return Err(e);
        }
    }
    Ok(srq)
}

/// Creates a basic SRQ of user space in PD `pdn`, shaped `size` (the caller sized it with C's
/// checks), from libmlx5's request in `udata` (C's `create_srq_user` order: the request's
/// length and reserved fields, the ring pinned, the doorbell record pinned). Returns it and
/// what it holds as user space sees it.
pub(crate) fn create_user<'bound>(
    dev: &'bound Mlx5Device,
    size: SrqSize,
    pdn: u32,
    attr: &SrqAttr,
    udata: &Udata,
    events: &EventNotifier,
) -> Result<(Mlx5Srq<'bound>, SrqAttr)> {
    let req = Request::from_abi(&udata.read_in_as::<CreateSrqReq>(REQ_MIN)?);
    req.check()?;
    // Its `flags` are not read: `MLX5_SRQ_FLAG_SIGNATURE` asks for WQE signatures, which the
    // device is not told of here (libmlx5 sets it only when asked to by its environment); C
    // ignores the other bits.
    let buf_len = (size.max as usize) << size.wqe_shift;
    let buf = UserMemory::pin(dev, req.buf_addr, buf_len, false)?;
    let db = UserMemory::pin(dev, req.db_addr, 8, true)?;
    // The ring's offset in its first page must be a whole number of 64-byte units (C's
    // quantized page offset finds no page size otherwise: `EINVAL`).
    let offset = page_offset(req.buf_addr)?;
    let pas = buf.page_list()?;
    let mem = RmpMemory {
        pas: &pas,
        page_offset: offset,
        dbr: db.first_dma(),
    };
    let srqn = match create_rmp(dev, size, pdn, &mem) {
        Ok(n) => n,
        Err(e) => {
            // A timed-out CREATE_RMP may have made the RMP: its memory stays pinned for ever.
            if e == ETIMEDOUT {
                core::mem::forget(buf);
                core::mem::forget(db);
            }
            return Err(e);
        }
    };
    let mut srq = Mlx5Srq {
        events: None,
        srqn,
        size,
        memory: SrqMemory::User {
            buf: Some(buf),
            db: Some(db),
        },
    };
    let done = register_events(dev, srqn, events).and_then(|reg| {
        srq.events = Some(reg);
        let mut resp = CreateSrqResp(Default::default());
        resp.srqn = srqn;
        udata.respond_as(&resp)
    });
    if let Err(e) = done {
        let _ = destroy(dev.commands(), srq);
        return Err(e);
    }
    let made = SrqAttr {
        max_wr: size.max - 1,
        max_sge: attr.max_sge,
        srq_limit: attr.srq_limit,
    };
    Ok((srq, made))
}

impl Mlx5Srq<'_> {
    /// Arms the limit (C's `mlx5_ib_modify_srq`).
    pub(crate) fn arm(&self, cmds: &Commands, limit: u32) -> Result {
        arm_rmp(cmds, self.srqn, self.size.max, limit)
    }

    /// The SRQ's attributes: what it holds, and the limit armed as the device reports it.
    pub(crate) fn query(&self, cmds: &Commands) -> Result<SrqAttr> {
        Ok(SrqAttr {
            max_wr: self.size.max - 1,
            max_sge: self.size.max_gs,
            srq_limit: query_rmp_limit(cmds, self.srqn)?,
        })
    }

    /// A kernel consumer's ring (`EINVAL` for a user context's SRQ, which user space posts
    /// to and whose completions the kernel never sees).
    pub(crate) fn kernel_ring(&self) -> Result<&Arc<SrqShared>> {
        match &self.memory {
            SrqMemory::Kernel(shared) => Ok(shared),
            SrqMemory::User { .. } => Err(EINVAL),
        }
    }
}

/// Destroys an SRQ (C's `mlx5_ib_destroy_srq`): out of the resource table, DESTROY_RMP; its
/// memory is freed (or unpinned) unless that failed, when the device may still write it.
pub(crate) fn destroy(cmds: &Commands, mut srq: Mlx5Srq<'_>) -> Result {
    drop(srq.events.take());
    let r = destroy_rmp(cmds, srq.srqn);
    if r.is_err() {
        match &mut srq.memory {
            SrqMemory::Kernel(_) => core::mem::forget(srq),
            SrqMemory::User { buf, db } => {
                core::mem::forget(buf.take());
                core::mem::forget(db.take());
            }
        }
    }
    r
}

/// `sizeof(struct mlx5_ib_create_srq)` (the KUnit suite builds requests of it).
#[cfg(CONFIG_KUNIT)]
const REQ_SIZE: usize = size_of::<CreateSrqReq>();
/// `offsetofend(struct mlx5_ib_create_srq, flags)`: the shortest request.
const REQ_MIN: usize = 20;

/// libmlx5's request (`struct mlx5_ib_create_srq`).
#[derive(Debug, PartialEq, Eq)]
struct Request {
    buf_addr: u64,
    db_addr: u64,
    /// `reserved0` or `reserved1` is not zero.
    reserved: bool,
}

impl Request {
    fn from_abi(r: &CreateSrqReq) -> Self {
        Self {
            buf_addr: r.buf_addr,
            db_addr: r.db_addr,
            reserved: r.reserved0 != 0 || r.reserved1 != 0,
        }
    }

    /// C's check of the request alone: reserved fields set are `EINVAL`.
    fn check(&self) -> Result {
        if self.reserved {
            return Err(EINVAL);
        }
        Ok(())
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_srq)]
mod tests {
    use super::*;

    fn attr(max_wr: u32, max_sge: u32) -> SrqAttr {
        SrqAttr {
            max_wr,
            max_sge,
            srq_limit: 0,
        }
    }

    #[test]
    fn sizing_as_c() -> Result {
        // The twin's SRQ: 16 asked, 32 WQEs (31 usable) of 32 bytes.
        assert_eq!(
            srq_size(&attr(16, 1), 20, 512)?,
            SrqSize {
                max: 32,
                max_gs: 1,
                wqe_shift: 5
            }
        );
        // Three SGEs: 16 + 48 bytes, a 64-byte stride; 15 asked fits 16 WQEs.
        let s = srq_size(&attr(15, 3), 20, 512)?;
        assert_eq!((s.max, s.wqe_shift), (16, 6));
        // Past the caps: EINVAL.
        assert_eq!(srq_size(&attr(1 << 10, 1), 10, 512).err(), Some(EINVAL));
        assert_eq!(srq_size(&attr(4, 33), 10, 512).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn next_segment_image() {
        assert_eq!(
            next_seg(0x0102),
            [0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_user_srq)]
mod user_tests {
    use super::*;
    use kernel::transmute::FromBytes;

    /// The request of `b`, as decoded.
    fn parse(b: &[u8; REQ_SIZE]) -> Result<Request> {
        Ok(Request::from_abi(
            &CreateSrqReq::from_bytes_copy(b).ok_or(EINVAL)?,
        ))
    }

    #[test]
    fn request_parsed_as_c() -> Result {
        let mut b = [0u8; REQ_SIZE];
        b[0..8].copy_from_slice(&0x7f00_0000_3000u64.to_le_bytes());
        b[8..16].copy_from_slice(&0x7f00_0000_4010u64.to_le_bytes());
        b[16..20].copy_from_slice(&1u32.to_le_bytes());
        b[24..28].copy_from_slice(&0xff_ffffu32.to_le_bytes());
        let r = parse(&b)?;
        assert_eq!(
            r,
            Request {
                buf_addr: 0x7f00_0000_3000,
                db_addr: 0x7f00_0000_4010,
                reserved: false,
            }
        );
        assert_eq!(r.check(), Ok(()));
        // `uidx` (bytes 24..28) and `flags` (16..20) are not checked; `reserved0` (20..24)
        // and `reserved1` (28..32), each byte: EINVAL (`uverbs_badinput`'s CREATE_SRQ cases).
        for at in [16, 17, 18, 19, 24, 25, 26, 27] {
            let mut x = b;
            x[at] = 0xff;
            assert_eq!(parse(&x)?.check(), Ok(()));
        }
        for at in [20, 21, 22, 23, 28, 29, 30, 31] {
            let mut x = b;
            x[at] = 1;
            assert!(parse(&x)?.reserved);
            assert_eq!(parse(&x)?.check(), Err(EINVAL));
        }
        // A ring 8 bytes into a page: EINVAL; 64-byte units otherwise.
        assert_eq!(page_offset(0x7f00_0000_3008), Err(EINVAL));
        assert_eq!(page_offset(0x7f00_0000_3080), Ok(2));
        Ok(())
    }
}
