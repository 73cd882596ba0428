// SPDX-License-Identifier: GPL-2.0

//! UAR pages and blue-flame registers (C's `uar.c`): the function's UAR page, through which CQs
//! are armed (C's `mdev->priv.uar`), and the blue-flame registers kernel send queues ring their
//! doorbells through (C's `mlx5_alloc_bfreg(mdev, bfreg, false, false)`).
//!
//! As in C with 4 KiB system pages (`uar_4k` not set, one UAR per system page), a UAR page holds
//! 4 blue-flame registers at `0x800 + n * (1 << log_bf_reg_size)`, the first 2 for regular
//! (not fast-path) use. The function's UAR page, allocated at bring-up, is the first page of the
//! pool (as C's `mlx5_get_uars_page` puts it on the same list); when its regular registers are
//! taken, ALLOC_UAR adds a page, and a page added so is freed (DEALLOC_UAR) once its registers
//! are all back. Each register has two buffers of half its size that doorbells alternate
//! between (the offset toggles after each ring, as C's `bf->offset ^= bf->buf_size`). The model
//! advertises no BlueFlame (`bf` = 0): doorbells are plain 64-bit writes, never write-combined.
//!
//! A blue-flame register is a lease on BAR0's mapping: its address is resolved once, when it is
//! handed out (through the BAR's `Devres`, which fails once the BAR is gone), and ringing it is a
//! plain `writeq`, with no per-ring liveness check (C's `mlx5_write64`). The lease is sound
//! because the BAR outlives every register: the pool counts the registers out, and the function's
//! teardown, after it deleted the auxiliary device (whose driver returns every register it holds:
//! `mlx5_ib` destroys every kernel QP before its unbind returns), waits for the count to reach
//! zero before the BAR is unmapped ([`BfregPool::wait_returned`]). A register left with a queue
//! leaked after a firmware timeout is given up first ([`Bfreg::abandon`]): it rings nothing
//! after that.

use crate::cmd::commands::Commands;
use crate::ifc::{AllocUar, DeallocUar, DeallocUarIn, PlainIn};
use crate::init_segment::SharedBar;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use kernel::{
    io::{Io, IoBackend, IoBase, Mmio, MmioBackend, MmioRaw},
    new_mutex,
    prelude::*,
    ptr::KnownSize,
    sync::{Arc, Mutex},
    time::{delay::fsleep, Delta},
};

/// Size of a UAR page.
pub(crate) const UAR_PAGE: usize = 4096;
/// Offset of the first blue-flame register in a UAR page (C's `MLX5_BF_OFFSET`).
pub(crate) const BF_OFFSET: usize = 0x800;
/// Blue-flame registers per UAR (C's `MLX5_BFREGS_PER_UAR`).
pub(crate) const BFREGS_PER_UAR: u32 = 4;
/// The regular (not fast-path) ones among them, the first (C's `MLX5_NON_FP_BFREGS_PER_UAR`).
pub(crate) const NON_FP_BFREGS_PER_UAR: u32 = 2;

/// Writes `bytes` as one 64-bit store, in memory order, at `at` in BAR0 (C's `mlx5_write64`),
/// after a write barrier (the `wmb()` C puts between a doorbell record and its doorbell):
/// `ENODEV` once the BAR is revoked, `EINVAL` outside it. Never sleeps (RCU read side only).
fn write64(bar: &SharedBar, at: usize, bytes: [u8; 8]) -> Result {
    // No barrier here, as C's `mlx5_write64`: the caller has one between what it stored in
    // memory (doorbell record, WQE) and the doorbell (C's `wmb()` in `mlx5_cq_arm` and
    // `mlx5_ib_post_send`).
    // `writeq` stores the value little-endian: the bytes land in the order given.
    let v = u64::from_le_bytes(bytes);
    bar.try_access_with(|b| b.try_write64(v, at))
        .ok_or(ENODEV)?
}

/// A UAR page of the function: doorbells by 64-bit writes at offsets in it.
pub struct Uar {
    index: u32,
    bar: SharedBar,
}

impl Uar {
    pub(crate) fn new(index: u32, bar: SharedBar) -> Self {
        Self { index, bar }
    }

    /// The UAR's index (what a CQ or QP context names).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Writes `bytes` with one 64-bit store (memory order kept, as C's `mlx5_write64`) at
    /// `offset` in the page. The caller puts a write barrier between a doorbell record it wrote
    /// and this (C's `wmb()` before a CQ arm). `EINVAL` unless `offset` is 8-byte aligned and
    /// in the page, `ENODEV` once the BAR is gone. Never sleeps.
    pub fn write64(&self, offset: usize, bytes: [u8; 8]) -> Result {
        if offset % 8 != 0 || offset > UAR_PAGE - 8 {
            return Err(EINVAL);
        }
        write64(&self.bar, self.index as usize * UAR_PAGE + offset, bytes)
    }
}

/// Byte offset in its UAR page of blue-flame register `dbi` (C's `map_offset`, one UAR per
/// system page).
pub(crate) fn bf_offset(dbi: u32, log_bf_reg_size: u8) -> usize {
    (dbi % BFREGS_PER_UAR) as usize * (1usize << log_bf_reg_size) + BF_OFFSET
}

/// The doorbell offset toggle of a blue-flame register: two buffers of half the register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BfToggle {
    offset: usize,
    buf_size: usize,
}

impl BfToggle {
    /// Starts at the first buffer.
    pub(crate) fn new(log_bf_reg_size: u8) -> Self {
        Self {
            offset: 0,
            buf_size: (1usize << log_bf_reg_size) / 2,
        }
    }

    /// The offset to ring now; the next ring uses the other buffer.
    pub(crate) fn next(&mut self) -> usize {
        let at = self.offset;
        self.offset ^= self.buf_size;
        at
    }
}

/// One UAR page of the blue-flame pool.
struct UarSlot {
    index: u32,
    /// A bit per free regular register.
    free: u32,
    /// Added by the pool (freed when its registers are all back); the function's own page is not.
    owned: bool,
}

/// All regular registers of a page free.
const ALL_REGULAR: u32 = (1 << NON_FP_BFREGS_PER_UAR) - 1;

/// The function's blue-flame registers.
#[pin_data]
pub(crate) struct BfregPool {
    commands: Commands,
    bar: SharedBar,
    log_bf_reg_size: u8,
    #[pin]
    pages: Mutex<KVec<UarSlot>>,
    /// Registers handed out and not returned (or abandoned): leases on BAR0's mapping.
    leased: AtomicUsize,
}

impl BfregPool {
    /// A pool whose first page is the function's UAR `uar_index`.
    pub(crate) fn new(
        commands: Commands,
        bar: SharedBar,
        uar_index: u32,
        log_bf_reg_size: u8,
    ) -> Result<Arc<Self>> {
        let mut pages = KVec::new();
        pages.push(
            UarSlot {
                index: uar_index,
                free: ALL_REGULAR,
                owned: false,
            },
            GFP_KERNEL,
        )?;
        Arc::pin_init(
            pin_init!(Self {
                commands,
                bar,
                // Bounded so both buffers of both regular registers stay in the page.
                log_bf_reg_size: log_bf_reg_size.min(10),
                pages <- new_mutex!(pages),
                leased: AtomicUsize::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// A regular register: from the first page with one free, else from a new page (ALLOC_UAR).
    pub(crate) fn alloc(self: &Arc<Self>) -> Result<Bfreg> {
        let mut pages = self.pages.lock();
        let i = match pages.iter().position(|p| p.free != 0) {
            Some(i) => i,
            None => {
                let out = self.commands.exec::<AllocUar>(&PlainIn::new())?;
                let index = out.uar() as u32;
                let slot = UarSlot {
                    index,
                    free: ALL_REGULAR,
                    owned: true,
                };
                if let Err(e) = pages.push(slot, GFP_KERNEL) {
                    drop(pages);
                    self.dealloc_uar(index);
                    return Err(e.into());
                }
                pages.len() - 1
            }
        };
        let slot = pages.get_mut(i).ok_or(EINVAL)?;
        let dbi = slot.free.trailing_zeros();
        let at = slot.index as usize * UAR_PAGE + bf_offset(dbi, self.log_bf_reg_size);
        // Both buffers of the register, 8 bytes each, inside the BAR's mapping.
        let end = at + (1usize << self.log_bf_reg_size) / 2 + 8;
        let regs = self
            .bar
            .try_access_with(|bar| {
                let base = MmioBackend::as_ptr(bar.as_view());
                (end <= KnownSize::size(base)).then(|| base.addr() + at)
            })
            .ok_or(ENODEV)?
            .ok_or(EINVAL)?;
        slot.free &= !(1 << dbi);
        self.leased.fetch_add(1, Relaxed);
        // INVARIANT: `regs` and `regs + buf_size` are 8-byte registers in BAR0's mapping, which
        // lasts until every lease is back (`wait_returned`).
        Ok(Bfreg {
            pool: self.clone(),
            uar_index: slot.index,
            dbi,
            toggle: BfToggle::new(self.log_bf_reg_size),
            regs,
        })
    }

    /// Waits (up to 10 s) until every register handed out was returned or abandoned: the
    /// function's teardown calls it after its auxiliary device is deleted and before BAR0 is
    /// unmapped. A register still out after that is a driver's bug: it is logged.
    pub(crate) fn wait_returned(&self) {
        for _ in 0..10_000 {
            if self.leased.load(Relaxed) == 0 {
                return;
            }
            fsleep(Delta::from_millis(1));
        }
        pr_err!(
            "mlx5_core: {} blue-flame register(s) still held as BAR0 goes\n",
            self.leased.load(Relaxed)
        );
    }

    /// DEALLOC_UAR of a page the pool added.
    fn dealloc_uar(&self, index: u32) {
        let r = DeallocUarIn::new()
            .uar(index.into())
            .and_then(|q| self.commands.exec::<DeallocUar>(&q));
        if let Err(e) = r {
            pr_warn!(
                "mlx5_core: failed to free UAR {index}: err {}\n",
                e.to_errno()
            );
        }
    }

    /// Gives register `dbi` of UAR `index` back (C's `mlx5_free_bfreg`).
    fn free(&self, index: u32, dbi: u32) {
        let mut pages = self.pages.lock();
        let Some(i) = pages.iter().position(|p| p.index == index) else {
            return;
        };
        let Some(slot) = pages.get_mut(i) else {
            return;
        };
        slot.free |= 1 << dbi;
        if slot.owned && slot.free == ALL_REGULAR {
            let _ = pages.remove(i);
            // Under the pool's lock, as C frees the page under its list's.
            self.dealloc_uar(index);
        }
    }
}

/// A blue-flame register for a kernel send queue: a lease on BAR0's mapping (see the module's
/// documentation). Dropping it gives it back (process context; C's `mlx5_free_bfreg`).
///
/// # Invariants
///
/// Unless it is 0 (abandoned), `regs` is the address of the register's first buffer in BAR0's
/// mapping, and `regs + toggle`'s other offset is its second; both are 8-byte aligned and the
/// mapping lasts as long as the register is counted in its pool's `leased`.
pub struct Bfreg {
    pool: Arc<BfregPool>,
    uar_index: u32,
    dbi: u32,
    toggle: BfToggle,
    regs: usize,
}

impl Bfreg {
    /// The index of the register's UAR page (for the QP context's `uar_page`).
    pub fn uar_index(&self) -> u32 {
        self.uar_index
    }

    /// Rings a send doorbell with the first 8 bytes of the WQE's control segment (C's
    /// `mlx5_write64` to the register's current buffer, then the buffer toggle). The caller puts
    /// a write barrier between the WQE and doorbell record it wrote and this (C's second
    /// `wmb()` in `mlx5_ib_post_send`). Never sleeps; `ENODEV` once the BAR is gone.
    #[inline]
    pub fn ring(&mut self, first8: [u8; 8]) -> Result {
        if self.regs == 0 {
            return Err(ENODEV);
        }
        let raw = MmioRaw::<u64>::new(self.regs + self.toggle.next());
        // SAFETY: by the type's invariants, `raw` is one of the register's two 8-byte buffers in
        // BAR0's mapping, which lasts while the register is leased, as it is until it drops.
        let reg = unsafe { Mmio::from_raw(raw) };
        // `writeq` stores the value little-endian: the bytes land in the order given.
        reg.write_val(u64::from_le_bytes(first8));
        Ok(())
    }

    /// Gives the lease up without giving the register back, for a queue leaked after a firmware
    /// timeout (the device may still use the register): it rings nothing after this, and the
    /// function's teardown no longer waits for it.
    pub fn abandon(&mut self) {
        if self.regs != 0 {
            self.regs = 0;
            self.pool.leased.fetch_sub(1, Relaxed);
        }
    }
}

impl Drop for Bfreg {
    fn drop(&mut self) {
        self.abandon();
        self.pool.free(self.uar_index, self.dbi);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_uar)]
mod tests {
    use super::*;

    #[test]
    fn bf_offsets_and_toggle_follow_the_register_size() {
        // 512-byte registers (cx-model's log_bf_reg_size 9): 0x800, 0xa00, ...
        assert_eq!(bf_offset(0, 9), 0x800);
        assert_eq!(bf_offset(1, 9), 0xa00);
        assert_eq!(bf_offset(5, 9), 0xa00);
        let mut t = BfToggle::new(9);
        assert_eq!(t.next(), 0);
        assert_eq!(t.next(), 0x100);
        assert_eq!(t.next(), 0);
        let mut t = BfToggle::new(8);
        assert_eq!(t.next(), 0);
        assert_eq!(t.next(), 0x80);
        // Both buffers of the last regular register stay in the page.
        assert!(bf_offset(NON_FP_BFREGS_PER_UAR - 1, 9) + 0x100 + 8 <= UAR_PAGE);
    }
}
