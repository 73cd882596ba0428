// SPDX-License-Identifier: GPL-2.0

//! The RDMA read/write API (C's `drivers/infiniband/core/rw.c`, `include/rdma/rw.h`) with C's
//! names and signatures: a storage target (nvmet-rdma, the NFS server, iSER, SRP) describes an
//! RDMA READ or WRITE of a scatter list to or from a peer's buffer with
//! `rdma_rw_ctx_init`, posts it (`rdma_rw_ctx_post`, or chains it before its own send with
//! `rdma_rw_ctx_wrs`) and frees it (`rdma_rw_ctx_destroy`). The context is the caller's
//! `struct rdma_rw_ctx`, filled here as C fills it: one work request with one scatter entry
//! (`single`), or requests of up to the QP's `max_write_sge`/`max_read_sge` entries each
//! (`map`, memory from the kernel allocator). A QP made with `cap.max_rdma_ctxs` has its send
//! queue grown for the contexts ([`init_qp`]) and, where the device registers memory for RDMA
//! (iWARP), a pool of fast-registration MRs ([`init_mrs`]).
//!
//! Not here yet: contexts that register memory (C's `RDMA_RW_MR`, what an iWARP device needs
//! for an RDMA READ, or the `force_mr` parameter) are refused with `-EOPNOTSUPP`; signature
//! contexts (`rdma_rw_ctx_signature_init`) need an integrity-capable device, which no device
//! here is (`-EOPNOTSUPP`, as C's `ib_map_mr_sg_pi` gives for one).

use crate::c_abi::{
    driver::umem::ib_dma_virt_map_sg,
    mr_pool::{ib_mr_pool_destroy, ib_mr_pool_init},
};
use core::ptr;
use kernel::{bindings, ffi::c_int, prelude::*};

/// The context's kinds (C's anonymous enum in rw.c).
const RDMA_RW_SINGLE_WR: u8 = 0;
const RDMA_RW_MULTI_WR: u8 = 1;

/// The page list length C caps a registration at.
const MAX_FR_PAGES: u32 = 256;

/// Whether `dev`'s port `port` speaks iWARP (C's `rdma_protocol_iwarp`).
///
/// # Safety
///
/// `dev` is a live registered device structure and `port` one of its ports.
unsafe fn is_iwarp(dev: *mut bindings::ib_device, port: u32) -> bool {
    // SAFETY: The caller's contract: the port's data exists once registered.
    unsafe {
        if port == 0 || port > (*dev).phys_port_cnt || (*dev).port_data.is_null() {
            return false;
        }
        let flags = (*(*dev).port_data.add(port as usize))
            .immutable
            .core_cap_flags;
        flags & bindings::RDMA_CORE_CAP_PROT_IWARP != 0
    }
}

/// Whether RDMA reads and writes on `dev`'s `port` may register memory (C's
/// `rdma_rw_can_use_mr`).
///
/// # Safety
///
/// As for [`is_iwarp`].
unsafe fn can_use_mr(dev: *mut bindings::ib_device, port: u32) -> bool {
    // SAFETY: The caller's contract.
    unsafe { is_iwarp(dev, port) || (*dev).attrs.max_sgl_rd != 0 }
}

/// Whether this operation must register memory (C's `rdma_rw_io_needs_mr`, without its
/// `force_mr` debugging parameter).
///
/// # Safety
///
/// As for [`is_iwarp`].
unsafe fn needs_mr(
    dev: *mut bindings::ib_device,
    port: u32,
    dir: bindings::dma_data_direction,
    nents: u32,
) -> bool {
    if dir != bindings::dma_data_direction::DMA_FROM_DEVICE {
        return false;
    }
    // SAFETY: The caller's contract.
    unsafe {
        let sgl_rd = (*dev).attrs.max_sgl_rd;
        is_iwarp(dev, port) || (sgl_rd != 0 && nents > sgl_rd)
    }
}

/// Whether the device maps DMA by kernel addresses (C's `ib_uses_virt_dma`: a software device,
/// no DMA device).
///
/// # Safety
///
/// `dev` is a live device structure.
unsafe fn uses_virt_dma(dev: *mut bindings::ib_device) -> bool {
    // SAFETY: The caller's contract.
    unsafe { (*dev).dma_device.is_null() }
}

/// Maps `sg_cnt` entries of `sg` for `dev`; how many mapped entries there are (C's
/// `ib_dma_map_sgtable_attrs`).
///
/// # Safety
///
/// `sg` is a live scatter list of at least `sg_cnt` entries; `dev` a live device structure.
unsafe fn map_sg(
    dev: *mut bindings::ib_device,
    sg: *mut bindings::scatterlist,
    sg_cnt: u32,
    dir: bindings::dma_data_direction,
) -> Result<u32> {
    let cnt = c_int::try_from(sg_cnt).map_err(|_| EINVAL)?;
    // SAFETY: The caller's contract.
    unsafe {
        if uses_virt_dma(dev) {
            let n = ib_dma_virt_map_sg(dev, sg, cnt);
            return if n <= 0 { Err(EIO) } else { Ok(n as u32) };
        }
        let mut t: bindings::sg_table = core::mem::zeroed();
        t.sgl = sg;
        t.orig_nents = sg_cnt;
        kernel::error::to_result(bindings::dma_map_sgtable((*dev).dma_device, &mut t, dir, 0))?;
        Ok(t.nents)
    }
}

/// Unmaps what [`map_sg`] mapped (C's `ib_dma_unmap_sg`).
///
/// # Safety
///
/// `sg` and `sg_cnt` are what was given to [`map_sg`] for `dev` and `dir`.
unsafe fn unmap_sg(
    dev: *mut bindings::ib_device,
    sg: *mut bindings::scatterlist,
    sg_cnt: u32,
    dir: bindings::dma_data_direction,
) {
    // SAFETY: The caller's contract.
    unsafe {
        if !uses_virt_dma(dev) {
            bindings::dma_unmap_sg_attrs((*dev).dma_device, sg, sg_cnt as c_int, dir, 0);
        }
    }
}

/// The peer's side of an operation: its buffer, key, and the direction (`DMA_TO_DEVICE` for an
/// RDMA WRITE to it, `DMA_FROM_DEVICE` for an RDMA READ from it).
#[derive(Clone, Copy)]
struct Remote {
    addr: u64,
    rkey: u32,
    dir: bindings::dma_data_direction,
}

/// The opcode of an RDMA read or write in direction `dir`.
fn rw_opcode(dir: bindings::dma_data_direction) -> bindings::ib_wr_opcode {
    if dir == bindings::dma_data_direction::DMA_TO_DEVICE {
        bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
    } else {
        bindings::ib_wr_opcode_IB_WR_RDMA_READ
    }
}

/// The scatter entry of the mapped entry `sg` from byte `offset` on, with `lkey`.
///
/// # Safety
///
/// `sg` is a live, DMA-mapped entry.
unsafe fn sge_of(sg: *mut bindings::scatterlist, offset: u32, lkey: u32) -> bindings::ib_sge {
    // SAFETY: The caller's contract.
    let (addr, len) = unsafe { (bindings::sg_dma_address(sg), bindings::sg_dma_len(sg)) };
    bindings::ib_sge {
        addr: addr + u64::from(offset),
        length: len - offset,
        lkey,
    }
}

/// Fills `ctx` with one request of one entry (C's `rdma_rw_init_single_wr`).
///
/// # Safety
///
/// `ctx` is writable, `qp` a live QP made here, `sg` a live mapped entry.
unsafe fn init_single(
    ctx: *mut bindings::rdma_rw_ctx,
    qp: *mut bindings::ib_qp,
    sg: *mut bindings::scatterlist,
    offset: u32,
    remote: Remote,
) -> c_int {
    // SAFETY: The caller's contract; all zeroes is a valid request.
    unsafe {
        let c = &mut *ctx;
        c.nr_ops = 1;
        let single = &mut c.__bindgen_anon_1.single;
        single.sge = sge_of(sg, offset, (*(*qp).pd).local_dma_lkey);
        single.wr = core::mem::zeroed();
        single.wr.wr.opcode = rw_opcode(remote.dir);
        single.wr.wr.sg_list = &raw mut single.sge;
        single.wr.wr.num_sge = 1;
        single.wr.remote_addr = remote.addr;
        single.wr.rkey = remote.rkey;
        c.type_ = RDMA_RW_SINGLE_WR;
    }
    1
}

/// Fills `ctx` with requests of up to the QP's scatter limit for the direction each, over
/// `sg_cnt` mapped entries from `sg` (C's `rdma_rw_init_map_wrs`); how many requests, or the
/// errno.
///
/// # Safety
///
/// As for [`init_single`], `sg` having at least `sg_cnt` mapped entries.
unsafe fn init_map(
    ctx: *mut bindings::rdma_rw_ctx,
    qp: *mut bindings::ib_qp,
    mut sg: *mut bindings::scatterlist,
    sg_cnt: u32,
    mut offset: u32,
    remote: Remote,
) -> Result<c_int> {
    let dir = remote.dir;
    // SAFETY: `qp` and its PD are live (contract).
    let (max_sge, lkey) = unsafe {
        let q = &*qp;
        let m = if dir == bindings::dma_data_direction::DMA_TO_DEVICE {
            q.max_write_sge
        } else {
            q.max_read_sge
        };
        (m, (*q.pd).local_dma_lkey)
    };
    if max_sge == 0 {
        return Err(EINVAL);
    }
    let nr_ops = sg_cnt.div_ceil(max_sge);
    let mut sges: KVec<bindings::ib_sge> = KVec::with_capacity(sg_cnt as usize, GFP_KERNEL)?;
    for _ in 0..sg_cnt {
        // SAFETY: `sg` is one of the `sg_cnt` mapped entries (contract).
        sges.push(unsafe { sge_of(sg, offset, lkey) }, GFP_KERNEL)?;
        offset = 0;
        // SAFETY: As above.
        sg = unsafe { bindings::sg_next(sg) };
    }
    // SAFETY: All zeroes is a valid request.
    let zero: bindings::ib_rdma_wr = unsafe { core::mem::zeroed() };
    let mut wrs: KVec<bindings::ib_rdma_wr> = KVec::with_capacity(nr_ops as usize, GFP_KERNEL)?;
    for _ in 0..nr_ops {
        wrs.push(zero, GFP_KERNEL)?;
    }
    // The vectors' memory is handed to the context; `destroy` frees it with `kfree` (it is the
    // kernel allocator's, as C's `kcalloc`).
    let (sge_ptr, _, _) = sges.into_raw_parts();
    let (wr_ptr, _, _) = wrs.into_raw_parts();
    let mut total: u64 = 0;
    let mut left = sg_cnt;
    let mut at = 0usize;
    for i in 0..nr_ops as usize {
        let n = left.min(max_sge);
        // SAFETY: `i < nr_ops` and `at + n <= sg_cnt`: entries of the vectors made above.
        unsafe {
            let w = &mut *wr_ptr.add(i);
            w.wr.opcode = rw_opcode(dir);
            w.remote_addr = remote.addr + total;
            w.rkey = remote.rkey;
            w.wr.num_sge = n as c_int;
            w.wr.sg_list = sge_ptr.add(at);
            for k in 0..n as usize {
                total += u64::from((*sge_ptr.add(at + k)).length);
            }
            w.wr.next = if i + 1 < nr_ops as usize {
                &raw mut (*wr_ptr.add(i + 1)).wr
            } else {
                ptr::null_mut()
            };
        }
        at += n as usize;
        left -= n;
    }
    // SAFETY: `ctx` is writable (contract).
    unsafe {
        let c = &mut *ctx;
        c.nr_ops = nr_ops;
        c.__bindgen_anon_1.map.sges = sge_ptr;
        c.__bindgen_anon_1.map.wrs = wr_ptr;
        c.type_ = RDMA_RW_MULTI_WR;
    }
    Ok(nr_ops as c_int)
}

/// C's `rdma_rw_ctx_init`: maps `sg_cnt` entries of `sg` for `qp`'s device and describes the
/// RDMA WRITE (`DMA_TO_DEVICE`) or READ (`DMA_FROM_DEVICE`) of them, from byte `sg_offset`
/// on, to or from `remote_addr` under `rkey`; the number of work requests it will post, or
/// the errno (`-EIO` for an offset past the list, `-ENOMEM`, `-EOPNOTSUPP` for an operation
/// that must register memory), with nothing left mapped.
///
/// # Safety
///
/// C's contract: `ctx` is writable; `qp` is a live QP made here; `sg` is a live scatter list
/// of at least `sg_cnt` entries, not mapped yet.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_ctx_init(
    ctx: *mut bindings::rdma_rw_ctx,
    qp: *mut bindings::ib_qp,
    port_num: u32,
    sg: *mut bindings::scatterlist,
    sg_cnt: u32,
    sg_offset: u32,
    remote_addr: u64,
    rkey: u32,
    dir: bindings::dma_data_direction,
) -> c_int {
    // SAFETY: The QP and its PD are live (contract).
    let dev = unsafe { (*(*qp).pd).device };
    // SAFETY: The list is live and unmapped (contract).
    let mapped = match unsafe { map_sg(dev, sg, sg_cnt, dir) } {
        Ok(n) => n,
        Err(e) => return e.to_errno(),
    };
    let (mut first, mut cnt, mut offset) = (sg, mapped, sg_offset);
    // Skip to the entry the offset falls in.
    while cnt > 0 {
        // SAFETY: `first` is one of the mapped entries.
        let len = unsafe { bindings::sg_dma_len(first) };
        if offset < len {
            break;
        }
        offset -= len;
        cnt -= 1;
        // SAFETY: As above.
        first = unsafe { bindings::sg_next(first) };
    }
    let remote = Remote {
        addr: remote_addr,
        rkey,
        dir,
    };
    // SAFETY: `dev` is the QP's registered device; `port_num` the caller's port.
    let must_register = unsafe { needs_mr(dev, port_num, dir, cnt) };
    let ret = if cnt == 0 {
        pr_warn!("rdma_rw_ctx_init: the offset is past the scatter list\n");
        EIO.to_errno()
    } else if must_register {
        EOPNOTSUPP.to_errno()
    } else if cnt > 1 {
        // SAFETY: `ctx` writable, `first` the first of `cnt` mapped entries (contract).
        match unsafe { init_map(ctx, qp, first, cnt, offset, remote) } {
            Ok(n) => n,
            Err(e) => e.to_errno(),
        }
    } else {
        // SAFETY: As above.
        unsafe { init_single(ctx, qp, first, offset, remote) }
    };
    if ret < 0 {
        // SAFETY: Mapped above with these arguments.
        unsafe { unmap_sg(dev, sg, sg_cnt, dir) };
    }
    ret
}

/// C's `rdma_rw_ctx_destroy`: frees what [`rdma_rw_ctx_init`] allocated and unmaps `sg`.
///
/// # Safety
///
/// C's contract: `ctx` was set up by [`rdma_rw_ctx_init`] with `qp`, `sg`, `sg_cnt` and `dir`
/// and its work requests are complete; it is not used again until set up anew.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_ctx_destroy(
    ctx: *mut bindings::rdma_rw_ctx,
    qp: *mut bindings::ib_qp,
    _port_num: u32,
    sg: *mut bindings::scatterlist,
    sg_cnt: u32,
    dir: bindings::dma_data_direction,
) {
    // SAFETY: The context is one `rdma_rw_ctx_init` set up (contract).
    unsafe {
        let c = &mut *ctx;
        match c.type_ {
            RDMA_RW_MULTI_WR => {
                bindings::kfree(c.__bindgen_anon_1.map.wrs.cast());
                bindings::kfree(c.__bindgen_anon_1.map.sges.cast());
            }
            RDMA_RW_SINGLE_WR => {}
            _ => {
                pr_warn!("rdma_rw_ctx_destroy of a context not set up here\n");
                return;
            }
        }
        unmap_sg((*(*qp).pd).device, sg, sg_cnt, dir);
    }
}

/// C's `rdma_rw_ctx_wrs`: the chain of work requests of `ctx`, with `chain_wr` after its last
/// when given, else its last signalled and completing to `cqe`.
///
/// # Safety
///
/// C's contract: `ctx` was set up by [`rdma_rw_ctx_init`]; `cqe` or `chain_wr` is live until
/// the requests complete.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_ctx_wrs(
    ctx: *mut bindings::rdma_rw_ctx,
    _qp: *mut bindings::ib_qp,
    _port_num: u32,
    cqe: *mut bindings::ib_cqe,
    chain_wr: *mut bindings::ib_send_wr,
) -> *mut bindings::ib_send_wr {
    // SAFETY: The context is set up (contract).
    let (first, last) = unsafe {
        let c = &mut *ctx;
        match c.type_ {
            RDMA_RW_SINGLE_WR => {
                let w = &raw mut c.__bindgen_anon_1.single.wr.wr;
                (w, w)
            }
            RDMA_RW_MULTI_WR => {
                let wrs = c.__bindgen_anon_1.map.wrs;
                (
                    &raw mut (*wrs).wr,
                    &raw mut (*wrs.add(c.nr_ops as usize - 1)).wr,
                )
            }
            _ => return ptr::null_mut(),
        }
    };
    // SAFETY: `last` is the context's last request.
    unsafe {
        if chain_wr.is_null() {
            (*last).__bindgen_anon_1.wr_cqe = cqe;
            (*last).send_flags |= bindings::ib_send_flags_IB_SEND_SIGNALED as c_int;
        } else {
            (*last).next = chain_wr;
        }
    }
    first
}

/// C's `rdma_rw_ctx_post`: posts the requests of `ctx` (see [`rdma_rw_ctx_wrs`]) on `qp`; 0 or
/// the post's errno.
///
/// # Safety
///
/// As for [`rdma_rw_ctx_wrs`]; `qp` is the context's QP.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_ctx_post(
    ctx: *mut bindings::rdma_rw_ctx,
    qp: *mut bindings::ib_qp,
    port_num: u32,
    cqe: *mut bindings::ib_cqe,
    chain_wr: *mut bindings::ib_send_wr,
) -> c_int {
    // SAFETY: The caller's contract.
    let first = unsafe { rdma_rw_ctx_wrs(ctx, qp, port_num, cqe, chain_wr) };
    if first.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: The QP's device is live; its `post_send` is the core's (`c_abi/data_path.rs`), as
    // C's inline `ib_post_send` calls it.
    unsafe {
        let Some(post) = (*(*qp).device).ops.post_send else {
            return EOPNOTSUPP.to_errno();
        };
        let mut bad: *const bindings::ib_send_wr = ptr::null();
        post(qp, first, &mut bad)
    }
}

/// C's `rdma_rw_ctx_signature_init`: an RDMA operation with protection information through a
/// signature MR, which needs a QP made with `IB_QP_CREATE_INTEGRITY_EN` on a device that has
/// signature MRs; no device here has them (such a QP is refused at creation): `-EOPNOTSUPP`.
///
/// # Safety
///
/// C's contract; nothing is read.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_ctx_signature_init(
    _ctx: *mut bindings::rdma_rw_ctx,
    _qp: *mut bindings::ib_qp,
    _port_num: u32,
    _sg: *mut bindings::scatterlist,
    _sg_cnt: u32,
    _prot_sg: *mut bindings::scatterlist,
    _prot_sg_cnt: u32,
    _sig_attrs: *mut bindings::ib_sig_attrs,
    _remote_addr: u64,
    _rkey: u32,
    _dir: bindings::dma_data_direction,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `rdma_rw_ctx_destroy_signature`: no signature context is ever set up here
/// ([`rdma_rw_ctx_signature_init`]), so there is nothing to free; warned about, as C warns
/// for a context of another kind.
///
/// # Safety
///
/// C's contract; nothing is read.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_ctx_destroy_signature(
    _ctx: *mut bindings::rdma_rw_ctx,
    _qp: *mut bindings::ib_qp,
    _port_num: u32,
    _sg: *mut bindings::scatterlist,
    _sg_cnt: u32,
    _prot_sg: *mut bindings::scatterlist,
    _prot_sg_cnt: u32,
    _dir: bindings::dma_data_direction,
) {
    pr_warn!("rdma_rw_ctx_destroy_signature of a context not set up as one\n");
}

/// The page list length of a registration on `dev` (C's `rdma_rw_fr_page_list_len` without
/// integrity).
///
/// # Safety
///
/// `dev` is a live device structure.
unsafe fn fr_page_list_len(dev: *mut bindings::ib_device) -> u32 {
    // SAFETY: The caller's contract.
    unsafe { (*dev).attrs.max_fast_reg_page_list_len.min(MAX_FR_PAGES) }
}

/// C's `rdma_rw_mr_factor`: how many MRs (or, without registration, work requests of the
/// device's `max_sge_rd` entries) a transfer of `maxpages` pages needs on `device`'s
/// `port_num`.
///
/// # Safety
///
/// C's contract: `device` is a live registered device structure, `port_num` one of its ports.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rw_mr_factor(
    device: *mut bindings::ib_device,
    port_num: u32,
    maxpages: u32,
) -> u32 {
    // SAFETY: The caller's contract.
    let per = unsafe {
        if can_use_mr(device, port_num) {
            fr_page_list_len(device)
        } else {
            (*device).attrs.max_sge_rd
        }
    };
    if per == 0 {
        return maxpages;
    }
    maxpages.div_ceil(per)
}

/// C's `rdma_rw_init_qp`: grows `attr`'s send queue for its `cap.max_rdma_ctxs` contexts (three
/// requests each where memory is registered: registration, invalidation, the operation), up
/// to the device's `max_qp_wr`.
///
/// # Safety
///
/// `dev` is a live registered device structure; `attr` is writable.
pub(crate) unsafe fn init_qp(dev: *mut bindings::ib_device, attr: &mut bindings::ib_qp_init_attr) {
    // SAFETY: The caller's contract.
    let factor = if unsafe { can_use_mr(dev, attr.port_num) } {
        3
    } else {
        1
    };
    let extra = attr.cap.max_rdma_ctxs.saturating_mul(factor);
    // SAFETY: As above.
    let max = unsafe { (*dev).attrs.max_qp_wr };
    attr.cap.max_send_wr = attr.cap.max_send_wr.saturating_add(extra).min(max);
}

/// C's `rdma_rw_init_mrs`: the QP's pool of fast-registration MRs for its RDMA contexts, where
/// the device registers memory for them; 0 or the errno.
///
/// # Safety
///
/// `qp` is a live QP made here with `attr`.
pub(crate) unsafe fn init_mrs(qp: *mut bindings::ib_qp, attr: &bindings::ib_qp_init_attr) -> c_int {
    // SAFETY: The caller's contract.
    unsafe {
        let dev = (*(*qp).pd).device;
        if !can_use_mr(dev, attr.port_num) || attr.cap.max_rdma_ctxs == 0 {
            return 0;
        }
        let nr = c_int::try_from(attr.cap.max_rdma_ctxs).unwrap_or(c_int::MAX);
        ib_mr_pool_init(
            qp,
            &raw mut (*qp).rdma_mrs,
            nr,
            bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
            fr_page_list_len(dev),
            0,
        )
    }
}

/// C's `rdma_rw_cleanup_mrs`: frees the QP's pools.
///
/// # Safety
///
/// `qp` is a live QP made here, its MRs all back in their pools.
pub(crate) unsafe fn cleanup_mrs(qp: *mut bindings::ib_qp) {
    // SAFETY: The caller's contract.
    unsafe {
        ib_mr_pool_destroy(qp, &raw mut (*qp).sig_mrs);
        ib_mr_pool_destroy(qp, &raw mut (*qp).rdma_mrs);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_c_rdma_rw)]
mod tests {
    use super::*;

    /// A zeroed `T` on the heap (the C structures here are too large for the stack).
    ///
    /// # Safety
    ///
    /// All zeroes is a valid `T` (a plain C structure).
    unsafe fn zeroed<T>() -> Result<KBox<T>> {
        let mut b = KBox::<T>::new_uninit(GFP_KERNEL)?;
        // SAFETY: The allocation holds one `T`; all zeroes is valid (contract).
        unsafe {
            ptr::write_bytes(b.as_mut_ptr(), 0, 1);
            Ok(b.assume_init())
        }
    }

    /// A software device (no DMA device) whose port 1 is not iWARP, a PD with local key 0x77,
    /// a QP taking two scatter entries per RDMA request, as C code hands them to rdma_rw; five
    /// kernel buffers of 4096 bytes and a scatter list over them; a zeroed context.
    struct Fake {
        _ports: KBox<[bindings::ib_port_data; 2]>,
        dev: KBox<bindings::ib_device>,
        _pd: KBox<bindings::ib_pd>,
        qp: KBox<bindings::ib_qp>,
        bufs: KVec<KVec<u8>>,
        sg: KBox<[bindings::scatterlist; 5]>,
        ctx: KBox<bindings::rdma_rw_ctx>,
    }

    fn fake() -> Result<Fake> {
        // SAFETY: Plain C structures.
        let (mut ports, mut dev, mut pd, mut qp, mut sg, ctx) = unsafe {
            (
                zeroed::<[bindings::ib_port_data; 2]>()?,
                zeroed::<bindings::ib_device>()?,
                zeroed::<bindings::ib_pd>()?,
                zeroed::<bindings::ib_qp>()?,
                zeroed::<[bindings::scatterlist; 5]>()?,
                zeroed::<bindings::rdma_rw_ctx>()?,
            )
        };
        dev.phys_port_cnt = 1;
        dev.port_data = ports.as_mut_ptr();
        dev.attrs.max_sge_rd = 2;
        dev.attrs.max_fast_reg_page_list_len = 512;
        pd.device = &mut *dev;
        pd.local_dma_lkey = 0x77;
        qp.device = &mut *dev;
        qp.pd = &mut *pd;
        qp.max_write_sge = 2;
        qp.max_read_sge = 2;
        let mut bufs = KVec::new();
        for _ in 0..5 {
            let mut b = KVec::new();
            b.extend_from_slice(&[0u8; 4096], GFP_KERNEL)?;
            bufs.push(b, GFP_KERNEL)?;
        }
        // SAFETY: A table of five entries, each pointed at a live kernel buffer.
        unsafe {
            bindings::sg_init_table(sg.as_mut_ptr(), 5);
            for (i, b) in bufs.iter().enumerate() {
                bindings::rdma_rs_sg_set_buf(&mut sg[i], b.as_ptr().cast(), 4096);
            }
        }
        Ok(Fake {
            _ports: ports,
            dev,
            _pd: pd,
            qp,
            bufs,
            sg,
            ctx,
        })
    }

    /// `rdma_rw_ctx_init` on the fake QP and list, from byte `offset`, in direction `dir`.
    fn init(f: &mut Fake, offset: u32, dir: bindings::dma_data_direction) -> c_int {
        // SAFETY: A fake QP of a software device, a live five-entry list, a writable context.
        unsafe {
            rdma_rw_ctx_init(
                &mut *f.ctx,
                &mut *f.qp,
                1,
                f.sg.as_mut_ptr(),
                5,
                offset,
                0x10000,
                9,
                dir,
            )
        }
    }

    /// `rdma_rw_ctx_destroy` of the context `init` set up.
    fn destroy(f: &mut Fake, dir: bindings::dma_data_direction) {
        // SAFETY: The context set up by `init` with this QP and list.
        unsafe { rdma_rw_ctx_destroy(&mut *f.ctx, &mut *f.qp, 1, f.sg.as_mut_ptr(), 5, dir) };
    }

    #[test]
    fn a_list_is_split_into_requests_of_the_qps_scatter_limit() {
        let Ok(mut f) = fake() else {
            assert!(false);
            return;
        };
        let dir = bindings::dma_data_direction::DMA_TO_DEVICE;
        assert_eq!(init(&mut f, 100, dir), 3);
        assert_eq!(f.ctx.type_, RDMA_RW_MULTI_WR);
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut cqe: bindings::ib_cqe = unsafe { core::mem::zeroed() };
        // SAFETY: The context set up above; `cqe` outlives its use here.
        let first =
            unsafe { rdma_rw_ctx_wrs(&mut *f.ctx, &mut *f.qp, 1, &mut cqe, ptr::null_mut()) };
        let mut w = first;
        let mut remote = 0x10000u64;
        let mut at = 0usize;
        for (k, sges) in [2usize, 2, 1].into_iter().enumerate() {
            // SAFETY: The context's requests are RDMA requests in its own memory.
            let r = unsafe { &*kernel::container_of!(w, bindings::ib_rdma_wr, wr) };
            assert!(r.wr.opcode == bindings::ib_wr_opcode_IB_WR_RDMA_WRITE);
            assert_eq!(r.wr.num_sge as usize, sges);
            assert_eq!(r.remote_addr, remote);
            assert_eq!(r.rkey, 9);
            for j in 0..sges {
                // SAFETY: The request's scatter list has `sges` entries.
                let s = unsafe { &*r.wr.sg_list.add(j) };
                let skip = if at == 0 { 100 } else { 0 };
                // A software device's DMA address is the kernel address.
                assert_eq!(s.addr, f.bufs[at].as_ptr() as u64 + skip);
                assert_eq!(u64::from(s.length), 4096 - skip);
                assert_eq!(s.lkey, 0x77);
                remote += u64::from(s.length);
                at += 1;
            }
            let last = k == 2;
            assert_eq!(r.wr.next.is_null(), last);
            let signaled = r.wr.send_flags & bindings::ib_send_flags_IB_SEND_SIGNALED as c_int;
            let is_signaled = signaled != 0;
            assert_eq!(is_signaled, last);
            w = r.wr.next;
        }
        destroy(&mut f, dir);
    }

    #[test]
    fn an_offset_into_the_last_entry_makes_one_request_and_past_the_list_eio() {
        let Ok(mut f) = fake() else {
            assert!(false);
            return;
        };
        let dir = bindings::dma_data_direction::DMA_FROM_DEVICE;
        // Past four entries and 8 bytes of the fifth: one request of one entry.
        assert_eq!(init(&mut f, 4 * 4096 + 8, dir), 1);
        assert_eq!(f.ctx.type_, RDMA_RW_SINGLE_WR);
        // SAFETY: A single-request context: its `single` member.
        let single = unsafe { &f.ctx.__bindgen_anon_1.single };
        assert!(single.wr.wr.opcode == bindings::ib_wr_opcode_IB_WR_RDMA_READ);
        assert_eq!(single.sge.addr, f.bufs[4].as_ptr() as u64 + 8);
        assert_eq!(single.sge.length, 4096 - 8);
        assert_eq!(single.wr.remote_addr, 0x10000);
        destroy(&mut f, dir);
        // An offset past the list: `-EIO`, nothing left to destroy.
        assert_eq!(init(&mut f, 5 * 4096, dir), EIO.to_errno());
    }

    #[test]
    fn the_mr_factor_is_the_read_scatter_limit_without_registration() {
        let Ok(mut f) = fake() else {
            assert!(false);
            return;
        };
        let dev: *mut bindings::ib_device = &mut *f.dev;
        // SAFETY: The fake device, port 1 (not iWARP, no `max_sgl_rd`).
        let (seven, two) = unsafe { (rdma_rw_mr_factor(dev, 1, 7), rdma_rw_mr_factor(dev, 1, 2)) };
        assert_eq!(seven, 4);
        assert_eq!(two, 1);
    }
}
