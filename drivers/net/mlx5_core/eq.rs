// SPDX-License-Identifier: GPL-2.0

//! Event queues: a ring of 64-byte entries in a DMA page that the device writes events into,
//! with an owner bit that flips on each pass; the driver consumes entries, then re-arms the
//! queue through its UAR page so the next event raises the queue's MSI-X vector.

use crate::cmdq::CmdQueue;
use crate::dma_page::{DmaPage, PAGE};
use crate::ifc::layout;
use crate::init_segment::Bar0;
use crate::status::op;
use kernel::{device, io::Io, prelude::*};

/// Size of an event queue entry.
const EQE_SIZE: usize = 64;
/// Entries per queue: one page.
const LOG_ENTRIES: u32 = 6;
const ENTRIES: u32 = 1 << LOG_ENTRIES;
/// Offsets in a UAR page of the EQ doorbells: update and arm, or update only.
const DOORBELL_ARM: usize = 0x40;
/// Size of a UAR page (the driver sets `log_uar_page_sz` to 0: 4 KiB).
const UAR_PAGE: usize = 4096;
/// Byte offset of the page list in CREATE_EQ input.
const PAS: usize = 0x110;
/// Byte offset of the event bitmask in CREATE_EQ input.
const EVENT_BITMASK: usize = 0x58;

/// Event types this driver subscribes to.
pub(crate) mod event {
    /// A port changed state.
    pub(crate) const PORT_CHANGE: u8 = 0x09;
    /// Firmware asks for pages or offers pages back.
    pub(crate) const PAGE_REQUEST: u8 = 0x0b;
}

layout! {
    /// CREATE_EQ input (the event bitmask and page list are written as bytes).
    input CreateEqIn[0x118] {
        opcode: 0x00, 16;
        log_eq_size: 0xe3, 5;
        uar_page: 0xe8, 24;
        intr: 0x134, 12;
        log_page_size: 0x143, 5;
    }
    /// CREATE_EQ output.
    output CreateEqOut[16] {
        eq_number: 0x58, 8;
    }
    /// DESTROY_EQ input.
    input DestroyEqIn[16] {
        opcode: 0x00, 16;
        eq_number: 0x58, 8;
    }
    /// ALLOC_UAR output.
    output AllocUarOut[16] {
        uar: 0x48, 24;
    }
    /// DEALLOC_UAR input.
    input DeallocUarIn[16] {
        opcode: 0x00, 16;
        uar: 0x48, 24;
    }
}

/// One event as the queue delivered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Eqe {
    /// Event type.
    pub(crate) ty: u8,
    /// Event sub-type.
    pub(crate) sub_type: u8,
    /// Event data (bytes 0x20..0x3c of the entry).
    pub(crate) data: [u8; 28],
}

/// Whether the entry at consumer index `ci` belongs to software: its owner bit equals the
/// parity of the pass over the ring (entries start with the bit set, the device writes them
/// with the bit of its pass).
pub(crate) fn software_owns(owner_byte: u8, ci: u32) -> bool {
    u32::from(owner_byte & 1) == (ci >> LOG_ENTRIES) & 1
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
        let mut q = [0u8; 16];
        q[..2].copy_from_slice(&op::ALLOC_UAR.to_be_bytes());
        let out = cmd.exec(dev, bar, &q, 16)?;
        Ok(Self {
            index: AllocUarOut::from_bytes(&out).uar() as u32,
        })
    }

    /// DEALLOC_UAR.
    pub(crate) fn free(self, cmd: &CmdQueue, dev: &device::Device<device::Bound>, bar: &Bar0<'_>) {
        let q = DeallocUarIn::new()
            .opcode(op::DEALLOC_UAR.into())
            .uar(self.index.into());
        if let Err(e) = cmd.exec(dev, bar, q.as_bytes(), 16) {
            dev_err!(
                dev,
                "failed to free UAR {}: err {}\n",
                self.index,
                e.to_errno()
            );
        }
    }

    /// Byte offset of the UAR page in BAR0.
    fn offset(&self) -> usize {
        self.index as usize * UAR_PAGE
    }
}

/// An event queue. Its page is freed only by a successful [`EventQueue::destroy`]: dropped
/// otherwise, the page is left allocated, since the device may still write it.
pub(crate) struct EventQueue {
    page: Option<DmaPage>,
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
        uar: &Uar,
        vector: u16,
        mask: u64,
        name: &'static str,
    ) -> Result<Self> {
        let page = DmaPage::new(dev)?;
        for i in 0..ENTRIES as usize {
            page.write(i * EQE_SIZE + EQE_SIZE - 1, &[1])?;
        }
        let mut q = CreateEqIn::new()
            .opcode(op::CREATE_EQ.into())
            .log_eq_size(LOG_ENTRIES.into())
            .uar_page(uar.index.into())
            .intr(vector.into())
            .log_page_size(0);
        let b = q.as_bytes_mut();
        b[EVENT_BITMASK..EVENT_BITMASK + 8].copy_from_slice(&mask.to_be_bytes());
        b[PAS..PAS + 8].copy_from_slice(&page.dma_address().to_be_bytes());
        let out = cmd.exec(dev, bar, q.as_bytes(), 16)?;
        let eqn = CreateEqOut::from_bytes(&out).eq_number() as u8;
        Ok(Self {
            page: Some(page),
            eqn,
            ci: 0,
            uar_offset: uar.offset(),
            name,
        })
    }

    /// DESTROY_EQ.
    pub(crate) fn destroy(
        mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) {
        let q = DestroyEqIn::new()
            .opcode(op::DESTROY_EQ.into())
            .eq_number(self.eqn.into());
        match cmd.exec(dev, bar, q.as_bytes(), 16) {
            // The device no longer writes the page.
            Ok(_) => drop(self.page.take()),
            // The device may still write the page: `Drop` keeps it.
            Err(e) => dev_err!(
                dev,
                "failed to destroy {} EQ {}: err {}\n",
                self.name,
                self.eqn,
                e.to_errno()
            ),
        }
    }

    /// Takes every entry software owns, in order, then re-arms the queue.
    pub(crate) fn poll(&mut self, bar: &Bar0<'_>, out: &mut KVec<Eqe>) -> Result {
        let Some(page) = self.page.as_ref() else {
            return Ok(());
        };
        loop {
            let at = (self.ci % ENTRIES) as usize * EQE_SIZE;
            let mut owner = [0u8; 1];
            page.read(at + EQE_SIZE - 1, &mut owner)?;
            if !software_owns(owner[0], self.ci) {
                break;
            }
            // The rest of the entry is read only after its owner bit said it is complete.
            core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
            let mut e = [0u8; EQE_SIZE];
            page.read(at, &mut e)?;
            let mut data = [0u8; 28];
            data.copy_from_slice(&e[0x20..0x3c]);
            out.push(
                Eqe {
                    ty: e[1],
                    sub_type: e[3],
                    data,
                },
                GFP_KERNEL,
            )?;
            self.ci = self.ci.wrapping_add(1);
        }
        let v = doorbell_value(self.eqn, self.ci);
        // The mapping covers the UAR pages; a failure would mean a UAR outside BAR0.
        bar.try_write32(v.swap_bytes(), self.uar_offset + DOORBELL_ARM)
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        if let Some(page) = self.page.take() {
            // Not destroyed: the device may still write the page, so it is never freed.
            core::mem::forget(page);
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
        assert!(!software_owns(1, 0));
        assert!(software_owns(0, 0));
        assert!(software_owns(0, ENTRIES - 1));
        // Second pass: the device writes 1.
        assert!(!software_owns(0, ENTRIES));
        assert!(software_owns(1, ENTRIES));
        assert!(software_owns(0, 2 * ENTRIES));
    }

    #[test]
    fn doorbell_carries_queue_and_24_bit_index() {
        assert_eq!(doorbell_value(3, 5), 0x0300_0005);
        assert_eq!(doorbell_value(0x12, 0x0100_0002), 0x1200_0002);
    }
}
