// SPDX-License-Identifier: GPL-2.0

//! Event queues: a ring of 64-byte entries in DMA pages that the device writes events into,
//! with an owner bit that flips on each pass; the driver consumes entries, then re-arms the
//! queue through its UAR page so the next event raises the queue's MSI-X vector. The control
//! EQs take one page (64 entries); completion EQs C's 1024 entries (16 pages, one PAS each).

pub(crate) mod completion;
pub mod cq_table;
pub(crate) mod notifiers;
pub mod resources;

use crate::cmd::queue::CmdQueue;
use crate::ifc::{
    AllocUar, CreateEq, CreateEqIn, DeallocUar, DeallocUarIn, DestroyEq, DestroyEqIn, Eqe, PlainIn,
};
use crate::init_segment::Bar0;
use crate::memory::dma_page::{DmaPage, PAGE};
use kernel::{device, io::Io, prelude::*};

/// Size of an event queue entry.
const EQE_SIZE: usize = Eqe::SIZE;
/// Entries of a control EQ: one page.
pub(crate) const LOG_ENTRIES: u32 = 6;
const ENTRIES: u32 = 1 << LOG_ENTRIES;
/// Entries of a completion EQ (C's `MLX5_COMP_EQ_SIZE`).
pub(crate) const LOG_COMP_ENTRIES: u32 = 10;
/// Entries in a page.
const PER_PAGE: u32 = (PAGE / EQE_SIZE) as u32;
/// Offsets in a UAR page of the EQ doorbells: update and arm, or update only.
const DOORBELL_ARM: usize = 0x40;
/// Size of a UAR page (the driver sets `log_uar_page_sz` to 0: 4 KiB).
const UAR_PAGE: usize = 4096;
/// Most entries one pass takes from one queue (C's `MLX5_EQ_POLLING_BUDGET`): a device that
/// floods a queue cannot hold the handler's thread.
pub(crate) const POLL_BUDGET: u32 = 128;
/// Event types this driver subscribes to.
pub(crate) mod event {
    /// A port changed state.
    pub(crate) const PORT_CHANGE: u8 = 0x09;
    /// Firmware asks for pages or offers pages back.
    pub(crate) const PAGE_REQUEST: u8 = 0x0b;
}

/// Whether the entry at consumer index `ci` of a ring of `1 << log_entries` belongs to
/// software: its owner bit equals the parity of the pass over the ring (entries start with the
/// bit set, the device writes them with the bit of its pass).
pub(crate) fn software_owns(owner_byte: u8, ci: u32, log_entries: u32) -> bool {
    u32::from(owner_byte & 1) == (ci >> log_entries) & 1
}

/// Page and offset in it of entry `ci` of a ring of `1 << log_entries`.
fn entry_at(ci: u32, log_entries: u32) -> (usize, usize) {
    let i = ci & ((1 << log_entries) - 1);
    ((i / PER_PAGE) as usize, (i % PER_PAGE) as usize * EQE_SIZE)
}

/// The value of an EQ doorbell: consumer index and queue number.
pub(crate) fn doorbell_value(eqn: u8, ci: u32) -> u32 {
    (ci & 0x00ff_ffff) | (u32::from(eqn) << 24)
}

/// A device UAR page, allocated for the driver's doorbells.
pub(crate) struct Uar {
    index: u32,
}

impl Uar {
    /// ALLOC_UAR.
    pub(crate) fn alloc(
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) -> Result<Self> {
        let out = cmd.exec::<AllocUar>(dev, bar, &PlainIn::new())?;
        Ok(Self {
            index: out.uar() as u32,
        })
    }

    /// DEALLOC_UAR.
    pub(crate) fn free(self, cmd: &CmdQueue, dev: &device::Device<device::Bound>, bar: &Bar0<'_>) {
        let r = DeallocUarIn::new()
            .uar(self.index.into())
            .and_then(|q| cmd.exec::<DeallocUar>(dev, bar, &q));
        if let Err(e) = r {
            dev_err!(
                dev,
                "failed to free UAR {}: err {}\n",
                self.index,
                e.to_errno()
            );
        }
    }

    /// The UAR's index.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }
}

/// An event queue. Its pages are freed only by a successful [`EventQueue::destroy`]: dropped
/// otherwise, they are left allocated, since the device may still write them.
pub(crate) struct EventQueue {
    pages: Option<KVec<DmaPage>>,
    log_entries: u32,
    eqn: u8,
    ci: u32,
    uar_offset: usize,
    name: &'static str,
}

impl EventQueue {
    /// CREATE_EQ of one page, taking the event types in `mask`, signalling MSI-X `vector`. The
    /// queue is not armed yet: [`Self::poll`] arms it.
    pub(crate) fn create(
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        uar_index: u32,
        vector: u16,
        mask: u64,
        name: &'static str,
    ) -> Result<Self> {
        Self::create_sized(cmd, dev, bar, uar_index, vector, mask, LOG_ENTRIES, name)
    }

    /// CREATE_EQ of `1 << log_entries` entries (at least a page's worth), as [`Self::create`].
    #[expect(clippy::too_many_arguments)]
    pub(crate) fn create_sized(
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        uar_index: u32,
        vector: u16,
        mask: u64,
        log_entries: u32,
        name: &'static str,
    ) -> Result<Self> {
        if !(LOG_ENTRIES..=LOG_COMP_ENTRIES).contains(&log_entries) {
            return Err(EINVAL);
        }
        let npages = ((1usize << log_entries) * EQE_SIZE) / PAGE;
        let mut pages = KVec::with_capacity(npages, GFP_KERNEL)?;
        // The PAS of the pages after the first, big-endian, after the input layout.
        let mut pas_tail = KVec::with_capacity((npages - 1) * 8, GFP_KERNEL)?;
        // Entries start owned by the device's first pass.
        let mut fresh = Eqe::new();
        fresh.set_owner(1)?;
        for n in 0..npages {
            let page = DmaPage::new(dev)?;
            for i in 0..PER_PAGE as usize {
                page.write_layout(i * EQE_SIZE, &fresh)?;
            }
            if n > 0 {
                pas_tail.extend_from_slice(&page.dma_address().to_be_bytes(), GFP_KERNEL)?;
            }
            pages.push(page, GFP_KERNEL)?;
        }
        let first = pages.first().ok_or(EINVAL)?.dma_address();
        // Set in place (see mlx5_ib's CQ creation): completion EQs are made on demand, from a
        // CQ creation that may itself run deep in a probe.
        let mut q = CreateEqIn::new();
        q.set_log_eq_size(log_entries.into())?;
        q.set_uar_page(uar_index.into())?;
        q.set_intr(vector.into())?;
        q.set_log_page_size(0)?;
        q.set_event_bitmask(mask)?;
        q.set_pas0(first)?;
        let out = match cmd.exec_var::<CreateEq>(dev, bar, None, &q, &pas_tail, 0) {
            Ok((out, _)) => out,
            Err(e) => {
                if e == ETIMEDOUT {
                    // The device may have taken the queue and may write it: never freed.
                    core::mem::forget(pages);
                }
                return Err(e);
            }
        };
        let eqn = out.eq_number() as u8;
        Ok(Self {
            pages: Some(pages),
            log_entries,
            eqn,
            ci: 0,
            uar_offset: uar_index as usize * UAR_PAGE,
            name,
        })
    }

    /// The queue's number.
    pub(crate) fn eqn(&self) -> u8 {
        self.eqn
    }

    /// DESTROY_EQ.
    pub(crate) fn destroy(
        mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) {
        let r = DestroyEqIn::new()
            .eq_number(self.eqn.into())
            .and_then(|q| cmd.exec::<DestroyEq>(dev, bar, &q));
        match r {
            // The device no longer writes the pages.
            Ok(_) => drop(self.pages.take()),
            // The device may still write the pages: `Drop` keeps them.
            Err(e) => dev_err!(
                dev,
                "failed to destroy {} EQ {}: err {}\n",
                self.name,
                self.eqn,
                e.to_errno()
            ),
        }
    }

    /// Takes the entries software owns, in order, at most [`POLL_BUDGET`] of them, passing each
    /// to `f`, then re-arms the queue (always, whatever happened before). Entries left over
    /// stay in the ring: arming a queue that holds unconsumed entries makes the device raise
    /// the vector again, so the next pass of the handler takes them (as C does). Returns how
    /// many were taken.
    pub(crate) fn poll_with(
        &mut self,
        bar: &Bar0<'_>,
        budget: u32,
        mut f: impl FnMut(Eqe),
    ) -> Result<u32> {
        let Some(pages) = self.pages.as_ref() else {
            return Ok(0);
        };
        let mut taken = 0;
        let mut res = Ok(());
        while taken < budget.min(POLL_BUDGET) {
            let (p, at) = entry_at(self.ci, self.log_entries);
            let Some(page) = pages.get(p) else {
                res = Err(EINVAL);
                break;
            };
            let seen: Eqe = match page.read_layout(at) {
                Ok(e) => e,
                Err(e) => {
                    res = Err(e);
                    break;
                }
            };
            if !software_owns(seen.owner() as u8, self.ci, self.log_entries) {
                break;
            }
            // The entry is read again, whole, only after its owner bit said it is complete.
            core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
            match page.read_layout(at) {
                Ok(e) => f(e),
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
            self.ci = self.ci.wrapping_add(1);
            taken += 1;
        }
        let v = doorbell_value(self.eqn, self.ci);
        // The mapping covers the UAR pages; a failure would mean a UAR outside BAR0.
        let armed = bar.try_write32(v.swap_bytes(), self.uar_offset + DOORBELL_ARM);
        res.and(armed).map(|()| taken)
    }

    /// [`Self::poll_with`] appending the entries to `out`. Room for a budget's worth is made
    /// first; when that allocation fails, only what fits is taken, the queue is re-armed all the
    /// same (the device raises the vector again for what is left) and `ENOMEM` is returned.
    pub(crate) fn poll(&mut self, bar: &Bar0<'_>, out: &mut KVec<Eqe>) -> Result {
        let reserved = out.reserve(POLL_BUDGET as usize, GFP_KERNEL);
        let room = u32::try_from(out.capacity() - out.len()).unwrap_or(POLL_BUDGET);
        let mut lost = false;
        self.poll_with(bar, room, |e| {
            // Never fails: `room` entries fit without allocating.
            lost |= out.push_within_capacity(e).is_err();
        })?;
        if lost {
            return Err(ENOMEM);
        }
        reserved.map_err(|_| ENOMEM)
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        if let Some(pages) = self.pages.take() {
            // Not destroyed: the device may still write the pages, so they are never freed.
            core::mem::forget(pages);
        }
    }
}

/// Size of the page the queue lives in (for checks).
const _: () = assert!(ENTRIES as usize * EQE_SIZE == PAGE);

#[kernel::macros::kunit_tests(rdma_rs_mlx5_eq)]
mod tests {
    use super::*;

    #[test]
    fn owner_parity_flips_each_pass() {
        // Fresh entries (owner 1) are not software's on the first pass; the device writes 0.
        assert!(!software_owns(1, 0, LOG_ENTRIES));
        assert!(software_owns(0, 0, LOG_ENTRIES));
        assert!(software_owns(0, ENTRIES - 1, LOG_ENTRIES));
        // Second pass: the device writes 1.
        assert!(!software_owns(0, ENTRIES, LOG_ENTRIES));
        assert!(software_owns(1, ENTRIES, LOG_ENTRIES));
        assert!(software_owns(0, 2 * ENTRIES, LOG_ENTRIES));
        // A completion EQ's passes are 1024 entries long.
        assert!(software_owns(0, ENTRIES, LOG_COMP_ENTRIES));
        assert!(!software_owns(0, 1024, LOG_COMP_ENTRIES));
        assert!(software_owns(1, 1024, LOG_COMP_ENTRIES));
    }

    #[test]
    fn entries_span_pages() {
        assert_eq!(entry_at(0, LOG_ENTRIES), (0, 0));
        assert_eq!(entry_at(65, LOG_ENTRIES), (0, 0x40));
        assert_eq!(entry_at(63, LOG_COMP_ENTRIES), (0, 63 * 64));
        assert_eq!(entry_at(64, LOG_COMP_ENTRIES), (1, 0));
        assert_eq!(entry_at(1023, LOG_COMP_ENTRIES), (15, 63 * 64));
        assert_eq!(entry_at(1024 + 130, LOG_COMP_ENTRIES), (2, 2 * 64));
    }

    #[test]
    fn doorbell_carries_queue_and_24_bit_index() {
        assert_eq!(doorbell_value(3, 5), 0x0300_0005);
        assert_eq!(doorbell_value(0x12, 0x0100_0002), 0x1200_0002);
    }
}
