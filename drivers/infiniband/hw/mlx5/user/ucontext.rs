// SPDX-License-Identifier: GPL-2.0

//! User contexts (C's `mlx5_ib_alloc_ucontext`/`mlx5_ib_dealloc_ucontext`): libmlx5's request
//! (`struct mlx5_ib_alloc_ucontext_req_v2`) checked as C checks it, a transport domain per
//! context, and the response (`struct mlx5_ib_alloc_ucontext_resp`) libmlx5 sizes its queues
//! and doorbells by.
//!
//! Only dynamic UARs are served (`MLX5_LIB_CAP_DYN_UAR`, what libmlx5 asks first): the context
//! has no static UAR pages and tells libmlx5 so (`tot_bfregs` 0). A request without dynamic
//! UARs (libmlx5's second and third tries, or older libraries) gets `EOPNOTSUPP`. DEVX is not
//! served either: `EINVAL` when the function has no DEVX contexts (`log_max_uctx` 0, C's
//! answer), `EOPNOTSUPP` otherwise; libmlx5 retries without it.

use crate::{
    user::mmap::MmapTable,
    user::uabi::{AllocUcontextReq, AllocUcontextResp},
};
use core::mem::offset_of;
use ib_core::user::udata::Udata;
use kernel::{prelude::*, sync::Arc, transmute::AsBytes, uapi};
use mlx5_core::{
    auxdev::HcaCaps,
    cmd::commands::Commands,
    ifc::verbs::{AllocTransportDomain, DeallocTransportDomain, DeallocTransportDomainIn},
    ifc::{GeneralCaps, PlainIn},
};

/// `sizeof(struct mlx5_ib_alloc_ucontext_req)`, the version-0 request.
const REQ_V0_SIZE: usize = size_of::<uapi::mlx5_ib_alloc_ucontext_req>();
/// `offsetof(struct mlx5_ib_alloc_ucontext_req_v2, max_cqe_version)`: the shortest v2 request.
const REQ_V2_MIN: usize = offset_of!(uapi::mlx5_ib_alloc_ucontext_req_v2, max_cqe_version);
/// `sizeof(struct mlx5_ib_alloc_ucontext_req_v2)`.
const REQ_V2_SIZE: usize = size_of::<AllocUcontextReq>();
/// `sizeof(struct mlx5_ib_alloc_ucontext_resp)`.
const RESP_SIZE: usize = size_of::<AllocUcontextResp>();
/// `MLX5_IB_ALLOC_UCTX_DEVX`.
const UCTX_DEVX: u32 = 1 << 0;
/// `MLX5_LIB_CAP_DYN_UAR`.
const LIB_CAP_DYN_UAR: u64 = 1 << 1;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET`.
const RESP_MASK_CORE_CLOCK_OFFSET: u32 = 1 << 0;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE`.
const RESP_MASK_ECE: u32 = 1 << 2;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS`.
const RESP_MASK_SQD2RTS: u32 = 1 << 3;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG` (always set in 7.3).
const RESP_MASK_MKEY_UPDATE_TAG: u32 = 1 << 5;
/// `MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`.
const CMDS_SUPP_UHW: u8 = 0x3;
/// `MLX5_NON_FP_BFREGS_PER_UAR`: bfreg counts are rounded up to it.
const NON_FP_BFREGS_PER_UAR: u32 = 2;

/// A user context's driver state.
pub(crate) struct Mlx5UContext {
    /// Its transport domain, when the function has them.
    tdn: Option<u32>,
    /// The CQE format its CQs use (the lower of the device's and the library's).
    pub(crate) cqe_version: u8,
    /// What user space can map (its UAR pages).
    pub(crate) mmap: Arc<MmapTable>,
}

impl Mlx5UContext {
    /// A context without a transport domain, of CQE version `cqe_version` (for tests).
    #[cfg(CONFIG_KUNIT)]
    pub(crate) fn for_test(cqe_version: u8, mmap: Arc<MmapTable>) -> Self {
        Self {
            tdn: None,
            cqe_version,
            mmap,
        }
    }
}

/// C's check of the request's length: the 8-byte version 0, or version 2 up to
/// `max_cqe_version` at least (`EINVAL`).
fn check_len(inlen: usize) -> Result {
    if inlen != REQ_V0_SIZE && inlen < REQ_V2_MIN {
        return Err(EINVAL);
    }
    Ok(())
}

/// The fields of the request C checks.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    total_num_bfregs: u32,
    num_low_latency_bfregs: u32,
    flags: u32,
    comp_mask: u32,
    max_cqe_version: u8,
    reserved: bool,
    lib_caps: u64,
}

impl Request {
    /// The request's fields (of its first `min(inlen, 32)` bytes, the rest reading as zero).
    fn from_abi(r: &AllocUcontextReq) -> Self {
        Self {
            total_num_bfregs: r.total_num_bfregs,
            num_low_latency_bfregs: r.num_low_latency_bfregs,
            flags: r.flags,
            comp_mask: r.comp_mask,
            max_cqe_version: r.max_cqe_version,
            reserved: r.reserved0 != 0 || r.reserved1 != 0 || r.reserved2 != 0,
            lib_caps: r.lib_caps,
        }
    }

    /// C's checks, in its order, before anything is allocated.
    fn check(&self, caps: &GeneralCaps) -> Result {
        if self.flags & !UCTX_DEVX != 0 {
            return Err(EOPNOTSUPP);
        }
        if self.comp_mask != 0 || self.reserved {
            return Err(EOPNOTSUPP);
        }
        let total = self
            .total_num_bfregs
            .checked_next_multiple_of(NON_FP_BFREGS_PER_UAR)
            .unwrap_or(0);
        if self.num_low_latency_bfregs > total.wrapping_sub(1) {
            return Err(EINVAL);
        }
        if self.flags & UCTX_DEVX != 0 {
            return Err(if caps.log_max_uctx() == 0 {
                EINVAL
            } else {
                EOPNOTSUPP
            });
        }
        if self.lib_caps & LIB_CAP_DYN_UAR == 0 {
            return Err(EOPNOTSUPP);
        }
        Ok(())
    }
}

/// The response (`set_ucontext_resp`) for a context with CQE version `cqe_version`, of a
/// function with `num_ports` ports, `response_length` = `min(outlen, 72)`.
pub(crate) fn response(
    caps: &GeneralCaps,
    num_ports: u16,
    cqe_version: u8,
    outlen: usize,
) -> AllocUcontextResp {
    let mut r = AllocUcontextResp(Default::default());
    let pow2 = |v: u64| 1u32.checked_shl(v as u32).unwrap_or(0);
    r.qp_tab_size = pow2(caps.log_max_qp());
    // bf_reg_size stays 0: blue-flame registers need write-combining, which this driver does
    // not test for (C's `mlx5_wc_support_get`; it is false without the `bf` capability).
    // Dynamic UARs: no static bfregs (`tot_bfregs` 0).
    r.cache_line_size = 64;
    r.max_sq_desc_sz = caps.max_wqe_sz_sq() as u16;
    r.max_rq_desc_sz = caps.max_wqe_sz_rq() as u16;
    r.max_send_wqebb = pow2(caps.log_max_qp_sz());
    r.max_recv_wr = pow2(caps.log_max_qp_sz());
    r.max_srq_recv_wr = pow2(caps.log_max_srq_sz());
    r.num_ports = num_ports;
    let uar_4k = caps.uar_4k() != 0;
    r.log_uar_size = if uar_4k {
        12
    } else {
        kernel::page::PAGE_SHIFT as u32
    };
    r.num_uars_per_page = if uar_4k {
        caps.num_of_uars_per_page() as u32
    } else {
        1
    };
    let mut comp_mask = RESP_MASK_CORE_CLOCK_OFFSET | RESP_MASK_MKEY_UPDATE_TAG;
    if caps.ece_support() != 0 {
        comp_mask |= RESP_MASK_ECE;
    }
    if caps.drain_sigerr() != 0 {
        comp_mask |= RESP_MASK_SQD2RTS;
    }
    r.comp_mask = comp_mask;
    r.response_length = outlen.min(RESP_SIZE) as u32;
    r.cqe_version = cqe_version;
    r.cmds_supp_uhw = CMDS_SUPP_UHW;
    // eth_min_inline (InfiniBand port: 0); clock_info_versions 0 (no clock page);
    // hca_core_clock_offset: `internal_timer_h` is at 0x1000 of the init segment, so 0 in
    // its page.
    r
}

/// A user context (C's `mlx5_ib_alloc_ucontext`, dynamic UARs only).
pub(crate) fn alloc(
    cmds: &Commands,
    caps: &HcaCaps,
    num_ports: u16,
    udata: &Udata,
) -> Result<Mlx5UContext> {
    let c = GeneralCaps::from_bytes(&caps.general);
    let inlen = udata.inlen();
    check_len(inlen)?;
    let mut raw = AllocUcontextReq(Default::default());
    udata.read_in(&mut raw.as_bytes_mut()[..inlen.min(REQ_V2_SIZE)])?;
    let req = Request::from_abi(&raw);
    req.check(&c)?;
    let mmap = MmapTable::new()?;
    let tdn = if c.log_max_transport_domain() != 0 {
        let out = cmds.exec::<AllocTransportDomain>(&PlainIn::new())?;
        Some(out.transport_domain() as u32)
    } else {
        None
    };
    let ctx = Mlx5UContext {
        tdn,
        cqe_version: (c.cqe_version() as u8).min(req.max_cqe_version),
        mmap,
    };
    let resp = response(&c, num_ports, ctx.cqe_version, udata.outlen());
    if let Err(e) = udata.respond_as(&resp) {
        dealloc(cmds, ctx);
        return Err(e);
    }
    Ok(ctx)
}

/// Frees a user context: its transport domain.
pub(crate) fn dealloc(cmds: &Commands, ctx: Mlx5UContext) {
    let Some(tdn) = ctx.tdn else { return };
    let done = DeallocTransportDomainIn::new()
        .transport_domain(tdn.into())
        .and_then(|input| cmds.exec::<DeallocTransportDomain>(&input).map(|_| ()));
    if let Err(e) = done {
        pr_warn!(
            "dealloc_transport_domain {:#x} failed: err {}\n",
            tdn,
            e.to_errno()
        );
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_ucontext)]
mod tests {
    use super::*;
    use kernel::transmute::FromBytes;

    /// The request of `b`, as decoded.
    fn parse(b: &[u8; REQ_V2_SIZE]) -> Result<Request> {
        Ok(Request::from_abi(
            &AllocUcontextReq::from_bytes_copy(b).ok_or(EINVAL)?,
        ))
    }

    /// libmlx5 44's first request: 16 bfregs, 4 low-latency, DEVX, CQE version 1, 4K and
    /// dynamic UARs.
    fn libmlx5_request(flags: u32, lib_caps: u64) -> [u8; REQ_V2_SIZE] {
        let mut b = [0u8; REQ_V2_SIZE];
        b[0..4].copy_from_slice(&16u32.to_le_bytes());
        b[4..8].copy_from_slice(&4u32.to_le_bytes());
        b[8..12].copy_from_slice(&flags.to_le_bytes());
        b[16] = 1;
        b[24..32].copy_from_slice(&lib_caps.to_le_bytes());
        b
    }

    #[test]
    fn requests_are_checked_in_c_order() -> Result {
        let no_devx = GeneralCaps::new();
        let mut devx = GeneralCaps::new();
        devx.set_log_max_uctx(8)?;
        let first = parse(&libmlx5_request(UCTX_DEVX, 3))?;
        assert_eq!(first.check(&no_devx), Err(EINVAL));
        assert_eq!(first.check(&devx), Err(EOPNOTSUPP));
        assert_eq!(parse(&libmlx5_request(0, 3))?.check(&no_devx), Ok(()));
        // Without dynamic UARs (libmlx5's 24-byte retry drops lib_caps).
        assert_eq!(
            parse(&libmlx5_request(0, 0))?.check(&no_devx),
            Err(EOPNOTSUPP)
        );
        // Unknown flags, a comp_mask, a reserved byte.
        assert_eq!(
            parse(&libmlx5_request(2, 3))?.check(&no_devx),
            Err(EOPNOTSUPP)
        );
        let mut b = libmlx5_request(0, 3);
        b[20] = 1;
        assert_eq!(parse(&b)?.check(&no_devx), Err(EOPNOTSUPP));
        // More low-latency bfregs than bfregs (after rounding 3 up to 4).
        let mut b = libmlx5_request(0, 3);
        b[0..4].copy_from_slice(&3u32.to_le_bytes());
        b[4..8].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(parse(&b)?.check(&no_devx), Err(EINVAL));
        Ok(())
    }

    /// `uverbs_badinput`'s GET_CONTEXT cases decided by the driver data alone, each field on
    /// its own and in C's order.
    #[test]
    fn request_lengths_fields_and_order() -> Result {
        // Lengths: 8 (version 0) and 16 on (version 2 from max_cqe_version); 1..15 else EINVAL.
        for len in 1..16 {
            let want = if len == 8 { Ok(()) } else { Err(EINVAL) };
            assert_eq!(check_len(len), want);
        }
        assert_eq!(check_len(0), Err(EINVAL));
        for len in [16, 24, 32, 40, 4096] {
            assert_eq!(check_len(len), Ok(()));
        }
        let caps = GeneralCaps::new();
        let good = libmlx5_request(0, 3);
        assert_eq!(parse(&good)?.check(&caps), Ok(()));
        let with = |at: usize, v: u8| {
            let mut b = good;
            b[at] = v;
            parse(&b)
        };
        // Every unknown flag bit: EOPNOTSUPP.
        for bit in 1..32 {
            let r = parse(&libmlx5_request(1 << bit, 3))?;
            assert_eq!(r.check(&caps), Err(EOPNOTSUPP));
        }
        // comp_mask (bytes 12..16), reserved0 (17), reserved1 (18..20), reserved2 (20..24):
        // EOPNOTSUPP.
        for at in [12, 15, 17, 18, 19, 20, 23] {
            assert_eq!(with(at, 1)?.check(&caps), Err(EOPNOTSUPP));
        }
        // max_cqe_version and lib_caps bits other than dynamic UARs are not checked.
        assert_eq!(with(16, 0xff)?.check(&caps), Ok(()));
        assert_eq!(with(31, 0x80)?.check(&caps), Ok(()));
        // Dynamic UARs missing: EOPNOTSUPP (a version-0 request has no lib_caps).
        assert_eq!(with(24, 1)?.check(&caps), Err(EOPNOTSUPP));
        let mut v0 = [0u8; REQ_V2_SIZE];
        v0[..8].copy_from_slice(&good[..8]);
        assert_eq!(parse(&v0)?.check(&caps), Err(EOPNOTSUPP));
        // Low-latency bfregs: at most the total rounded up to 2, less one; a total of 0 (or
        // one that rounds past u32) wraps, as C's `total - 1`.
        let bfregs = |total: u32, ll: u32| {
            let mut b = good;
            b[0..4].copy_from_slice(&total.to_le_bytes());
            b[4..8].copy_from_slice(&ll.to_le_bytes());
            parse(&b)
        };
        assert_eq!(bfregs(3, 3)?.check(&caps), Ok(()));
        assert_eq!(bfregs(3, 4)?.check(&caps), Err(EINVAL));
        assert_eq!(bfregs(16, 15)?.check(&caps), Ok(()));
        assert_eq!(bfregs(16, 16)?.check(&caps), Err(EINVAL));
        assert_eq!(bfregs(0, u32::MAX)?.check(&caps), Ok(()));
        assert_eq!(bfregs(u32::MAX, u32::MAX)?.check(&caps), Ok(()));
        // C's order: flags, then comp_mask and reserved, then bfregs, then DEVX, then lib_caps.
        let mut b = libmlx5_request(UCTX_DEVX | 4, 0);
        b[0..4].copy_from_slice(&3u32.to_le_bytes());
        b[4..8].copy_from_slice(&4u32.to_le_bytes());
        b[12] = 1;
        assert_eq!(parse(&b)?.check(&caps), Err(EOPNOTSUPP));
        b[8..12].copy_from_slice(&UCTX_DEVX.to_le_bytes());
        assert_eq!(parse(&b)?.check(&caps), Err(EOPNOTSUPP));
        b[12] = 0;
        let mut devx = GeneralCaps::new();
        devx.set_log_max_uctx(8)?;
        assert_eq!(parse(&b)?.check(&devx), Err(EINVAL));
        b[0..4].copy_from_slice(&5u32.to_le_bytes());
        assert_eq!(parse(&b)?.check(&devx), Err(EOPNOTSUPP));
        assert_eq!(parse(&b)?.check(&caps), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn response_as_libmlx5_reads_it() -> Result {
        let mut c = GeneralCaps::new();
        c.set_log_max_qp(18)?;
        c.set_log_max_qp_sz(15)?;
        c.set_log_max_srq_sz(15)?;
        c.set_max_wqe_sz_sq(1024)?;
        c.set_max_wqe_sz_rq(512)?;
        let r = response(&c, 1, 1, 72);
        let b = r.as_bytes();
        assert_eq!(b.len(), 72);
        assert_eq!(b[0..4], (1u32 << 18).to_le_bytes());
        // Dynamic UARs: no static bfregs.
        assert_eq!(b[8..12], [0; 4]);
        assert_eq!(b[32..34], [1, 0]);
        assert_eq!(b[36..40], 0x21u32.to_le_bytes());
        assert_eq!(b[40..44], 72u32.to_le_bytes());
        assert_eq!((b[44], b[45]), (1, 3));
        assert_eq!(response(&c, 1, 0, 40).response_length, 40);
        Ok(())
    }
}
