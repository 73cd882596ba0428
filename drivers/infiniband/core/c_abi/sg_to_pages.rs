// SPDX-License-Identifier: GPL-2.0

//! `ib_sg_to_pages` with C's name and signature (C's `drivers/infiniband/core/verbs.c`): what a
//! driver's `map_mr_sg` (rxe's, siw's) calls to turn a DMA-mapped scatter list into the page
//! list of a fast-registration MR, one `set_page` call per page of `mr->page_size`.
//!
//! It converts the longest prefix of the list that one MR can describe: the first entry from
//! `*sg_offset_p` on; a later entry joins only where the previous one ended, either on page
//! boundaries on both sides (its pages follow) or, when one side is not on a boundary, exactly
//! at the previous entry's end (the page they share is given once). `mr->iova` is where the
//! mapping starts, `mr->length` how many bytes it covers. When `set_page` refuses a page (the
//! driver's list is full) the conversion stops there, and `*sg_offset_p` says where in that
//! entry the next MR would go on. The arithmetic is C's, wrapping where C's unsigned types wrap,
//! so that drivers see the same numbers on either core.

use kernel::{bindings, ffi::c_int, prelude::*};

/// A driver's page assignment callback (`set_page`): 0 or more when taken, negative when not.
type SetPage = Option<unsafe extern "C" fn(*mut bindings::ib_mr, u64) -> c_int>;

/// C's `ib_sg_to_pages`: how many entries of `sgl` (of `sg_nents`) were converted, or the
/// error `set_page` gave for the very first page; `-EINVAL` for no entry, or a start offset
/// past the first entry.
///
/// # Safety
///
/// `mr` points to a `struct ib_mr` with its `page_size` set (a power of two); `sgl` is a
/// DMA-mapped scatter list with at least `sg_nents` entries; `sg_offset_p` is null or points to
/// an offset; `set_page` is callable with `mr` (C's contract).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sg_to_pages(
    mr: *mut bindings::ib_mr,
    sgl: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset_p: *mut u32,
    set_page: SetPage,
) -> c_int {
    // SAFETY: `sg_offset_p` is null or valid (contract).
    let mut sg_offset = unsafe { sg_offset_p.as_ref() }.copied().unwrap_or(0);
    // SAFETY: `sgl` has at least one entry when `sg_nents` is positive (contract); it is read
    // only then.
    if sg_nents <= 0 || sg_offset > unsafe { bindings::sg_dma_len(sgl) } {
        return EINVAL.to_errno();
    }
    let Some(set_page) = set_page else {
        return EINVAL.to_errno();
    };
    // SAFETY: `mr` is valid (contract).
    let page_size = u64::from(unsafe { (*mr).page_size });
    let page_mask = !page_size.wrapping_sub(1);
    // SAFETY: As above; the first entry is valid.
    unsafe {
        (*mr).iova = bindings::sg_dma_address(sgl).wrapping_add(sg_offset.into());
        (*mr).length = 0;
    }
    let mut last_end: u64 = 0;
    let mut last_page_off: u64 = 0;
    let mut sg = sgl;
    let mut i: c_int = 0;
    while i < sg_nents && !sg.is_null() {
        // SAFETY: `sg` is one of the first `sg_nents` entries (contract).
        let (base, len) = unsafe { (bindings::sg_dma_address(sg), bindings::sg_dma_len(sg)) };
        let dma_addr = base.wrapping_add(sg_offset.into());
        let dma_len = len.wrapping_sub(sg_offset);
        let end = dma_addr.wrapping_add(dma_len.into());
        let mut page_addr = dma_addr & page_mask;
        // The start of the entry whose page `set_page` took last (where a refusal resumes).
        let mut prev_addr = dma_addr;
        let joins_mid_page = i > 0 && (last_page_off != 0 || page_addr != dma_addr);
        if joins_mid_page {
            // A gap: the MR ends with the previous entry.
            if last_end != dma_addr {
                break;
            }
            // The page it starts in is the previous entry's last: given already.
            page_addr = page_addr.wrapping_add(page_size);
        }
        // The entry's pages, from the first not given yet.
        if !joins_mid_page || page_addr < end {
            loop {
                // SAFETY: `mr` is valid and `set_page` callable with it (contract).
                let ret = unsafe { set_page(mr, page_addr) };
                if ret < 0 {
                    sg_offset = prev_addr.wrapping_sub(base) as u32;
                    // SAFETY: `mr` is valid; `sg_offset_p` null or valid (contract).
                    unsafe {
                        (*mr).length = (*mr).length.wrapping_add(prev_addr.wrapping_sub(dma_addr));
                        if let Some(p) = sg_offset_p.as_mut() {
                            *p = sg_offset;
                        }
                    }
                    return if i != 0 || sg_offset != 0 { i } else { ret };
                }
                prev_addr = page_addr;
                page_addr = page_addr.wrapping_add(page_size);
                if page_addr >= end {
                    break;
                }
            }
        }
        // SAFETY: `mr` is valid (contract).
        unsafe { (*mr).length = (*mr).length.wrapping_add(dma_len.into()) };
        last_end = end;
        last_page_off = end & !page_mask;
        sg_offset = 0;
        i += 1;
        // SAFETY: `sg` is an entry of the list; the next one is valid while `i < sg_nents`.
        sg = unsafe { bindings::sg_next(sg) };
    }
    // SAFETY: `sg_offset_p` is null or valid (contract).
    if let Some(p) = unsafe { sg_offset_p.as_mut() } {
        *p = 0;
    }
    i
}
