// SPDX-License-Identifier: GPL-2.0

//! Completion queues of user space (C's `mlx5_ib_create_user_cq`, `create_cq_user` and
//! `destroy_cq_user`): libmlx5 allocates the ring and the doorbell record in its own memory
//! and describes them in its request (`struct mlx5_ib_create_cq`); the driver pins both, gives
//! the device the ring's pages and the record's address with CREATE_CQ, and answers the CQ
//! number (`struct mlx5_ib_create_cq_resp`). User space polls and arms the CQ itself (through
//! its UAR page); the kernel only forwards completion events and CQ errors.
//!
//! Pages are described to the device 4 KiB at a time (C may pick larger pages for a physically
//! contiguous ring; the device sees the same memory either way).

use crate::{
    user::uabi::{CreateCqReq, CreateCqResp, ResizeCqReq},
    user::umem::{page_offset, UserMemory},
};
use ib_core::{
    user::udata::Udata,
    verbs::types::{CqInit, CqNotifier, USER_CQ_IGNORE_OVERRUN, USER_CQ_TIMESTAMP_COMPLETION},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
};
use mlx5_core::{
    auxdev::{CqHandler, CqRegistration, Mlx5Device},
    cmd::commands::Commands,
    ifc::verbs::{
        cq_resize_select, CreateCq, CreateCqIn, DestroyCq, DestroyCqIn, ModifyCq, ModifyCqIn,
    },
    ifc::GeneralCaps,
};

/// `sizeof(struct mlx5_ib_create_cq)` (the KUnit suite builds requests of it).
#[cfg(CONFIG_KUNIT)]
const REQ_SIZE: usize = size_of::<CreateCqReq>();
/// `offsetofend(struct mlx5_ib_create_cq, cqe_comp_res_format)`: the shortest request.
const REQ_MIN: usize = 22;

/// `MLX5_IB_CREATE_CQ_FLAGS_*`.
const FLAG_CQE_128B_PAD: u16 = 1 << 0;
const FLAG_UAR_PAGE_INDEX: u16 = 1 << 1;
const FLAG_REAL_TIME_TS: u16 = 1 << 2;

/// `MLX5_IB_CQE_RES_FORMAT_*` (what a compressed CQE carries).
const RES_FORMAT_HASH: u8 = 1 << 0;
const RES_FORMAT_CSUM: u8 = 1 << 1;
const RES_FORMAT_CSUM_STRIDX: u8 = 1 << 2;

/// `MLX5_EVENT_TYPE_CQ_ERROR`.
const EVENT_TYPE_CQ_ERROR: u8 = 0x04;

/// libmlx5's request (`struct mlx5_ib_create_cq`).
#[derive(Debug, PartialEq, Eq)]
struct Request {
    buf_addr: u64,
    db_addr: u64,
    cqe_size: u32,
    cqe_comp_en: u8,
    cqe_comp_res_format: u8,
    flags: u16,
    uar_page_index: u16,
    reserved: bool,
}

impl Request {
    fn from_abi(r: &CreateCqReq) -> Self {
        Self {
            buf_addr: r.buf_addr,
            db_addr: r.db_addr,
            cqe_size: r.cqe_size,
            cqe_comp_en: r.cqe_comp_en,
            cqe_comp_res_format: r.cqe_comp_res_format,
            flags: r.flags,
            uar_page_index: r.uar_page_index,
            reserved: r.reserved0 != 0 || r.reserved1 != 0,
        }
    }

    /// C's checks of the request alone: unknown flags, a CQE size other than 64 or 128, or
    /// reserved fields set are `EINVAL`.
    fn check(&self) -> Result {
        if self.flags & !(FLAG_CQE_128B_PAD | FLAG_UAR_PAGE_INDEX | FLAG_REAL_TIME_TS) != 0 {
            return Err(EINVAL);
        }
        if (self.cqe_size != 64 && self.cqe_size != 128) || self.reserved {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// The UAR page the CQ is armed through: this driver serves dynamic UARs only, so the
    /// request must name one (`EINVAL`).
    fn uar_page(&self) -> Result<u16> {
        if self.flags & FLAG_UAR_PAGE_INDEX == 0 {
            return Err(EINVAL);
        }
        Ok(self.uar_page_index)
    }

    /// C's CQE compression and padding checks: the device's code of the compressed format
    /// (`None`: no compression) and whether CQEs are padded. `EOPNOTSUPP` for compression or
    /// padding the device lacks (padding: 128-byte CQEs only), `EINVAL` for an unknown format.
    fn features(&self, caps: &GeneralCaps) -> Result<(Option<u8>, bool)> {
        let mut comp = None;
        if self.cqe_comp_en == 1 {
            let supported = match self.cqe_size {
                128 => caps.cqe_compression_128() != 0,
                _ => caps.cqe_compression() != 0,
            };
            if !supported {
                pr_warn!(
                    "mlx5_ib: CQE compression is not supported for size {}!\n",
                    self.cqe_size
                );
                return Err(EOPNOTSUPP);
            }
            comp = Some(mini_cqe_format(self.cqe_comp_res_format)?);
        }
        let pad = self.flags & FLAG_CQE_128B_PAD != 0;
        if pad && (self.cqe_size != 128 || caps.cqe_128_always() == 0) {
            pr_warn!(
                "mlx5_ib: CQE padding is not supported for CQE size of {}B!\n",
                self.cqe_size
            );
            return Err(EOPNOTSUPP);
        }
        Ok((comp, pad))
    }
}

/// C's checks of a user CQ's size and flags before its request is read: more entries than
/// `log_max_cq_sz` allows (before and after rounding `cqe + 1` up to a power of two) are
/// `EINVAL`, creation flags other than overrun-ignore and completion timestamps
/// `EOPNOTSUPP`. Returns the ring's entries.
fn entries(cqe: u32, flags: u32, log_max_cq_sz: u64) -> Result<u32> {
    let max = 1u64 << log_max_cq_sz.min(32);
    if u64::from(cqe) > max {
        return Err(EINVAL);
    }
    if flags & !(USER_CQ_IGNORE_OVERRUN | USER_CQ_TIMESTAMP_COMPLETION) != 0 {
        return Err(EOPNOTSUPP);
    }
    let entries = cqe
        .checked_add(1)
        .and_then(u32::checked_next_power_of_two)
        .ok_or(EINVAL)?;
    if u64::from(entries) > max {
        return Err(EINVAL);
    }
    Ok(entries)
}

/// RESIZE_CQ's request checked as C's `resize_user`: reserved fields `EINVAL`, a ring of
/// `entries` CQEs whose size overflows `EINVAL`. Returns the ring's address, its CQE size
/// and its length.
fn resize_request(raw: &ResizeCqReq, entries: u32) -> Result<(u64, u16, usize)> {
    if raw.reserved0 != 0 || raw.reserved1 != 0 {
        return Err(EINVAL);
    }
    let len = usize::from(raw.cqe_size)
        .checked_mul(entries as usize)
        .ok_or(EINVAL)?;
    Ok((raw.buf_addr, raw.cqe_size, len))
}

/// The CQ's events, as `mlx5_core`'s CQ table delivers them.
struct Events {
    notifier: CqNotifier,
}

impl CqHandler for Events {
    fn completion(&self) {
        self.notifier.completion();
    }

    fn event(&self, event_type: u8) {
        if event_type == EVENT_TYPE_CQ_ERROR {
            self.notifier.error();
        }
    }
}

/// A user context's CQ (the user variant of [`crate::cq::Mlx5Cq`]): its ring and doorbell
/// record are user memory, pinned.
pub(crate) struct UserCq<'bound> {
    cqn: u32,
    /// Dropped before DESTROY_CQ: no event reaches the CQ's owner after that.
    reg: Option<CqRegistration>,
    /// The ring; its lock orders resizes (C's `resize_mutex`).
    ring: Pin<KBox<Mutex<Option<UserMemory<'bound>>>>>,
    db: Option<UserMemory<'bound>>,
    /// Entries of the ring (a power of two).
    entries: Atomic<u32>,
    /// 128-byte CQEs are padded (`MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD`).
    pad: bool,
}

/// `sizeof(struct mlx5_ib_resize_cq)`: buf_addr, cqe_size, reserved0, reserved1 (also the
/// shortest request: `reserved1` ends it).
const RESIZE_REQ_SIZE: usize = size_of::<ResizeCqReq>();
/// `MLX5_CQ_OPMOD_RESIZE`.
const CQ_OPMOD_RESIZE: u16 = 1;

/// C's `cqe_sz_to_mlx_sz`: 64 bytes 0, 128 bytes 1, 128 padded 2; C's -1 for any other size
/// leaves 7 in the 3-bit field.
fn cqe_sz(size: u32, pad: bool) -> u64 {
    match (size, pad) {
        (64, _) => 0,
        (128, false) => 1,
        (128, true) => 2,
        _ => 7,
    }
}

impl<'bound> UserCq<'bound> {
    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Its size as user space sees it (C's `cq->cqe`: the entries, less one).
    pub(crate) fn size(&self) -> u32 {
        self.entries.load(Relaxed).saturating_sub(1)
    }

    /// C's `mlx5_ib_resize_cq` with user data: the new size checked and rounded as at
    /// creation (nothing to do at the same size), then libmlx5's request (`struct
    /// mlx5_ib_resize_cq`: the new ring and its CQE size) checked, the ring pinned, MODIFY_CQ
    /// with the new size, page offset and CQE size; the old ring is unpinned once the device
    /// took the new one. Returns the size as user space sees it.
    pub(crate) fn resize(
        &self,
        dev: &'bound Mlx5Device,
        log_max_cq_sz: u32,
        cqe: u32,
        udata: &Udata,
    ) -> Result<u32> {
        let entries = entries(cqe, 0, log_max_cq_sz.into())?;
        let mut ring = self.ring.lock();
        if entries == self.entries.load(Relaxed) {
            return Ok(entries - 1);
        }
        let raw = udata.read_in_as::<ResizeCqReq>(RESIZE_REQ_SIZE)?;
        let (buf_addr, cqe_size, len) = resize_request(&raw, entries)?;
        let new = UserMemory::pin(dev, buf_addr, len, true)?;
        // As at creation, the ring must start on a 64-byte boundary.
        let offset = page_offset(buf_addr)?;
        let pas = new.page_list()?;
        let mut input = ModifyCqIn::new();
        input.set_op_mod(CQ_OPMOD_RESIZE.into())?;
        input.set_cqn(self.cqn.into())?;
        input.set_resize_field_select(
            cq_resize_select::LOG_SIZE | cq_resize_select::PG_OFFSET | cq_resize_select::PG_SIZE,
        )?;
        input.set_log_page_size(0)?;
        input.set_page_offset(offset)?;
        input.set_cqe_sz(cqe_sz(cqe_size.into(), self.pad))?;
        input.set_log_cq_size(entries.trailing_zeros().into())?;
        if let Err(e) = dev.exec_var_large::<ModifyCq>(&input, &pas, 0) {
            // A timed-out MODIFY_CQ may have given the device the new ring: pinned for ever.
            if e == ETIMEDOUT {
                core::mem::forget(new);
            }
            return Err(e);
        }
        // C releases the old ring as soon as the command succeeded.
        *ring = Some(new);
        self.entries.store(entries, Relaxed);
        Ok(entries - 1)
    }
}

/// C's `mini_cqe_res_format_to_hw`: the device's code for a compressed-CQE format.
fn mini_cqe_format(format: u8) -> Result<u8> {
    match format {
        RES_FORMAT_HASH => Ok(0),
        RES_FORMAT_CSUM => Ok(1),
        // Needs `mini_cqe_resp_stride_index`, which this driver does not read.
        RES_FORMAT_CSUM_STRIDX => Err(EOPNOTSUPP),
        _ => Err(EINVAL),
    }
}

/// Creates a CQ of user context `ctx` (C's `mlx5_ib_create_user_cq`), checked in C's order.
pub(crate) fn create<'bound>(
    dev: &'bound Mlx5Device,
    cmds: &Commands,
    caps: &GeneralCaps,
    init: &CqInit,
    udata: &Udata,
    notifier: &CqNotifier,
) -> Result<UserCq<'bound>> {
    let entries = entries(init.cqe, init.flags, caps.log_max_cq_sz())?;
    let req = Request::from_abi(&udata.read_in_as::<CreateCqReq>(REQ_MIN)?);
    req.check()?;
    let ring_len = (entries as usize)
        .checked_mul(req.cqe_size as usize)
        .ok_or(EINVAL)?;
    let ring = UserMemory::pin(dev, req.buf_addr, ring_len, true)?;
    // The ring's offset in its first page must be a whole number of 64-byte units.
    let offset = page_offset(req.buf_addr)?;
    let db = UserMemory::pin(dev, req.db_addr, 8, true)?;
    let pas = ring.page_list()?;
    let uar_page = req.uar_page()?;
    let mut input = CreateCqIn::new();
    let (comp, pad) = req.features(caps)?;
    if let Some(format) = comp {
        input.set_cqe_comp_en(1)?;
        input.set_mini_cqe_res_format(format.into())?;
    }
    let eqn = dev.comp_eqn(init.comp_vector)?;
    let events: Arc<dyn CqHandler> = Arc::new(
        Events {
            notifier: notifier.clone(),
        },
        GFP_KERNEL,
    )?;
    input.set_cqe_sz(cqe_sz(req.cqe_size, pad))?;
    input.set_log_cq_size(entries.trailing_zeros().into())?;
    input.set_uar_page(uar_page.into())?;
    input.set_c_eqn(eqn.into())?;
    input.set_log_page_size(0)?;
    input.set_page_offset(offset)?;
    input.set_dbr_addr(db.first_dma())?;
    if init.flags & USER_CQ_IGNORE_OVERRUN != 0 {
        input.set_oi(1)?;
    }
    let mut cq = UserCq {
        cqn: 0,
        reg: None,
        ring: KBox::pin_init(new_mutex!(Some(ring), "mlx5_ib::user_cq::ring"), GFP_KERNEL)?,
        db: Some(db),
        entries: Atomic::new(entries),
        pad,
    };
    let out = match dev.exec_var_large::<CreateCq>(&input, &pas, 0) {
        Ok((out, _)) => out,
        Err(e) => {
            // A timed-out CREATE_CQ may have created the CQ: its memory stays pinned for ever.
            if e == ETIMEDOUT {
                core::mem::forget(cq);
            }
            return Err(e);
        }
    };
    cq.cqn = out.cqn() as u32;
    let done = dev.register_cq(cq.cqn, events).and_then(|reg| {
        cq.reg = Some(reg);
        let mut resp = CreateCqResp(Default::default());
        resp.cqn = cq.cqn;
        udata.respond_as(&resp)
    });
    if let Err(e) = done {
        let _ = destroy(cmds, cq);
        return Err(e);
    }
    Ok(cq)
}

/// Destroys a user CQ: its handler goes, then DESTROY_CQ; its memory is unpinned unless the
/// command failed (the device may still write it then).
pub(crate) fn destroy(cmds: &Commands, mut cq: UserCq<'_>) -> Result {
    drop(cq.reg.take());
    let r = DestroyCqIn::new()
        .cqn(cq.cqn.into())
        .and_then(|q| cmds.exec::<DestroyCq>(&q).map(|_| ()));
    if r.is_err() {
        core::mem::forget(cq.ring.lock().take());
        core::mem::forget(cq.db.take());
    }
    r
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_user_cq)]
mod tests {
    use super::*;
    use kernel::transmute::FromBytes;

    /// The request of `b`, as decoded.
    fn parse(b: &[u8; REQ_SIZE]) -> Result<Request> {
        Ok(Request::from_abi(
            &CreateCqReq::from_bytes_copy(b).ok_or(EINVAL)?,
        ))
    }

    fn req(cqe_size: u32, flags: u16, reserved_at: Option<usize>) -> [u8; REQ_SIZE] {
        let mut b = [0u8; REQ_SIZE];
        b[0..8].copy_from_slice(&0x7f00_0000_1000u64.to_le_bytes());
        b[8..16].copy_from_slice(&0x7f00_0000_2008u64.to_le_bytes());
        b[16..20].copy_from_slice(&cqe_size.to_le_bytes());
        b[22..24].copy_from_slice(&flags.to_le_bytes());
        b[24..26].copy_from_slice(&7u16.to_le_bytes());
        if let Some(at) = reserved_at {
            b[at] = 1;
        }
        b
    }

    #[test]
    fn request_parsed_and_checked_as_c() -> Result {
        let r = parse(&req(64, FLAG_UAR_PAGE_INDEX, None))?;
        assert_eq!(r.buf_addr, 0x7f00_0000_1000);
        assert_eq!(r.db_addr, 0x7f00_0000_2008);
        assert_eq!(r.uar_page_index, 7);
        assert_eq!(r.check(), Ok(()));
        assert_eq!(parse(&req(128, 0, None))?.check(), Ok(()));
        assert_eq!(parse(&req(32, 0, None))?.check(), Err(EINVAL));
        assert_eq!(parse(&req(64, 1 << 3, None))?.check(), Err(EINVAL));
        assert_eq!(parse(&req(64, 0, Some(26)))?.check(), Err(EINVAL));
        assert_eq!(parse(&req(64, 0, Some(31)))?.check(), Err(EINVAL));
        Ok(())
    }

    /// `uverbs_badinput`'s CQ_CREATE and RESIZE_CQ cases decided by the request alone.
    #[test]
    fn bad_requests_get_cs_errnos() -> Result {
        // CQE sizes other than 64 and 128: EINVAL.
        for size in [0, 1, 32, 63, 65, 127, 129, 256, u32::MAX] {
            assert_eq!(
                parse(&req(size, FLAG_UAR_PAGE_INDEX, None))?.check(),
                Err(EINVAL)
            );
        }
        // Each known flag alone passes; every other bit is EINVAL.
        for f in [FLAG_CQE_128B_PAD, FLAG_UAR_PAGE_INDEX, FLAG_REAL_TIME_TS, 7] {
            assert_eq!(parse(&req(128, f, None))?.check(), Ok(()));
        }
        for bit in 3..16 {
            assert_eq!(parse(&req(64, 1 << bit, None))?.check(), Err(EINVAL));
        }
        // reserved0 (26..28) and reserved1 (28..32), each byte: EINVAL.
        for at in 26..32 {
            assert_eq!(
                parse(&req(64, FLAG_UAR_PAGE_INDEX, Some(at)))?.check(),
                Err(EINVAL)
            );
        }
        // The flags are checked before the size.
        assert_eq!(parse(&req(32, 1 << 3, None))?.check(), Err(EINVAL));
        // No UAR page named (dynamic UARs only): EINVAL; else the page index.
        assert_eq!(parse(&req(64, 0, None))?.uar_page(), Err(EINVAL));
        assert_eq!(
            parse(&req(64, FLAG_UAR_PAGE_INDEX, None))?.uar_page(),
            Ok(7)
        );
        // The ring starts on a 64-byte boundary (8 bytes in: EINVAL).
        assert_eq!(page_offset(0x7f00_0000_1000), Ok(0));
        assert_eq!(page_offset(0x7f00_0000_1040), Ok(1));
        assert_eq!(page_offset(0x7f00_0000_1fc0), Ok(63));
        assert_eq!(page_offset(0x7f00_0000_1008), Err(EINVAL));
        assert_eq!(page_offset(0x7f00_0000_1020), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn sizes_flags_and_features_against_the_caps() -> Result {
        use ib_core::verbs::types::USER_CQ_IGNORE_OVERRUN as OI;
        // log_max_cq_sz 22: up to 2^22 entries after rounding cqe + 1 up.
        assert_eq!(entries(0, 0, 22), Ok(1));
        assert_eq!(entries(1, 0, 22), Ok(2));
        assert_eq!(entries(60, 0, 22), Ok(64));
        assert_eq!(entries(63, OI, 22), Ok(64));
        assert_eq!(entries((1 << 22) - 1, 0, 22), Ok(1 << 22));
        assert_eq!(entries(1 << 22, 0, 22), Err(EINVAL));
        assert_eq!(entries(0x7fff_ffff, 0, 22), Err(EINVAL));
        assert_eq!(entries(u32::MAX, 0, 32), Err(EINVAL));
        // Unknown creation flags: EOPNOTSUPP, after the size.
        assert_eq!(entries(60, 1 << 2, 22), Err(EOPNOTSUPP));
        assert_eq!(entries(1 << 23, 1 << 2, 22), Err(EINVAL));
        // Compression and padding without the capabilities: EOPNOTSUPP.
        let none = GeneralCaps::new();
        let with = |cqe_size, flags, comp: u8, format: u8| -> Result<Request> {
            let mut b = req(cqe_size, flags, None);
            b[20] = comp;
            b[21] = format;
            parse(&b)
        };
        assert_eq!(with(64, 2, 0, 0)?.features(&none), Ok((None, false)));
        // Compression enabled only by 1 (C's `== 1`).
        assert_eq!(with(64, 2, 2, 1)?.features(&none), Ok((None, false)));
        assert_eq!(with(64, 2, 1, 1)?.features(&none), Err(EOPNOTSUPP));
        assert_eq!(with(128, 3, 0, 0)?.features(&none), Err(EOPNOTSUPP));
        let mut caps = GeneralCaps::new();
        caps.set_cqe_compression(1)?;
        caps.set_cqe_128_always(1)?;
        assert_eq!(with(64, 2, 1, 1)?.features(&caps), Ok((Some(0), false)));
        assert_eq!(with(64, 2, 1, 2)?.features(&caps), Ok((Some(1), false)));
        assert_eq!(with(64, 2, 1, 3)?.features(&caps), Err(EINVAL));
        assert_eq!(with(64, 2, 1, 4)?.features(&caps), Err(EOPNOTSUPP));
        // 128-byte CQEs need their own compression capability.
        assert_eq!(with(128, 2, 1, 1)?.features(&caps), Err(EOPNOTSUPP));
        // Padding: 128-byte CQEs only, with `cqe_128_always`.
        assert_eq!(with(128, 3, 0, 0)?.features(&caps), Ok((None, true)));
        assert_eq!(with(64, 3, 0, 0)?.features(&caps), Err(EOPNOTSUPP));
        // An unknown format is refused before the padding.
        assert_eq!(with(64, 3, 1, 3)?.features(&caps), Err(EINVAL));
        // RESIZE_CQ: reserved fields EINVAL; the ring's length from the CQE size.
        let resize = |reserved0: u16, reserved1: u32| {
            let mut r = ResizeCqReq(Default::default());
            r.buf_addr = 0x7f00_0000_1000;
            r.cqe_size = 64;
            r.reserved0 = reserved0;
            r.reserved1 = reserved1;
            r
        };
        assert_eq!(
            resize_request(&resize(0, 0), 128),
            Ok((0x7f00_0000_1000, 64, 8192))
        );
        assert_eq!(resize_request(&resize(1, 0), 128), Err(EINVAL));
        assert_eq!(resize_request(&resize(0, 1 << 31), 128), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn compressed_formats_as_c() {
        assert_eq!(mini_cqe_format(RES_FORMAT_HASH), Ok(0));
        assert_eq!(mini_cqe_format(RES_FORMAT_CSUM), Ok(1));
        assert_eq!(mini_cqe_format(RES_FORMAT_CSUM_STRIDX), Err(EOPNOTSUPP));
        assert_eq!(mini_cqe_format(3), Err(EINVAL));
    }
}
