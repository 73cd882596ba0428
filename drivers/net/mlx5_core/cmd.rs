// SPDX-License-Identifier: GPL-2.0

//! The firmware command interface: a page of 64-byte queue entries in host memory, input and
//! output beyond 16 bytes in chains of 512-byte mailbox blocks, a doorbell in the init segment,
//! and completion when the device clears the entry's ownership bit (polling mode).
//!
//! Every failure is logged as the C driver logs it: the command's name, op_mod, status name,
//! syndrome and errno.

use crate::cmd_events::CmdEvents;
use crate::dma_page::{DmaPage, PAGE};
use crate::health::DeviceState;
use crate::ifc::layout;
use crate::init_segment::{self, Bar0};
use crate::status::{self, delivery_errno, op, opcode_name};
use kernel::{
    device,
    prelude::*,
    sync::{
        barrier::{dma_mb, Read, Write},
        Arc,
    },
    time::{
        delay::{fsleep, udelay},
        Delta, Instant, Monotonic,
    },
};

/// In event mode, how long a waiter sleeps before it rechecks the entry itself.
const EVENT_RECHECK_MS: u32 = 20;
/// Size of a queue entry.
const ENTRY: usize = 64;
/// Transport type of an entry submitted over PCI.
const XPORT_PCI: u8 = 7;
/// Ownership bit in `status_own`: set while the device owns the entry.
const OWNER_HW: u8 = 1;
/// Bytes of input and output carried inline in the entry.
const INLINE: usize = 16;
/// Data bytes a mailbox block carries.
const BLOCK_DATA: usize = 512;
/// Mailbox blocks are 576 bytes, aligned to 1 KiB: four per page.
const BLOCK_STRIDE: usize = 1024;
const BLOCKS_PER_PAGE: usize = PAGE / BLOCK_STRIDE;
/// Offsets of a block's next pointer, number and token.
const BLOCK_NEXT: usize = 0x230;
const BLOCK_NUM: usize = 0x238;
const BLOCK_TOKEN: usize = 0x23d;

/// How long a command may take (the C driver's default command timeout).
pub(crate) const CMD_TIMEOUT: Delta = Delta::from_millis(60_000);

layout! {
    /// The common output header.
    output OutHeader[16] {
        status: 0x00, 8;
        syndrome: 0x20, 32;
    }
}

/// Number of mailbox blocks that carry `len` bytes past the inline part.
pub(crate) fn blocks_for(len: usize) -> usize {
    len.saturating_sub(INLINE).div_ceil(BLOCK_DATA)
}

/// The part of `data` (a whole command input, header included) that block `i` carries.
pub(crate) fn block_data(data: &[u8], i: usize) -> &[u8] {
    let from = (INLINE + i * BLOCK_DATA).min(data.len());
    let to = (from + BLOCK_DATA).min(data.len());
    &data[from..to]
}

/// A block's trailer from `next` on: next block address, block number, token (ctrl and block
/// signatures stay zero: the driver turns checksums off).
pub(crate) fn block_trailer(next: u64, num: u32, token: u8) -> [u8; 16] {
    let mut t = [0u8; 16];
    t[0..8].copy_from_slice(&next.to_be_bytes());
    t[BLOCK_NUM - BLOCK_NEXT..BLOCK_NUM - BLOCK_NEXT + 4].copy_from_slice(&num.to_be_bytes());
    t[BLOCK_TOKEN - BLOCK_NEXT] = token;
    t
}

/// The entry signature: the byte that makes the XOR of the whole entry 0xff.
pub(crate) fn entry_signature(entry: &[u8; ENTRY]) -> u8 {
    !entry.iter().fold(0u8, |a, b| a ^ b)
}

/// The command queue, in polling mode. One command runs at a time.
pub(crate) struct CmdQueue {
    queue: DmaPage,
    mailboxes: KVec<DmaPage>,
    log_size: u32,
    log_stride: u32,
    token: u8,
    /// Slots whose command never completed: the device may still own them, so they are never
    /// written again.
    stuck: u32,
    /// Whether the device is in the internal-error state (set by the health poll).
    state: Arc<DeviceState>,
    /// Event mode: completions arrive through the command EQ (polling mode when `None`).
    events: Option<Arc<CmdEvents>>,
}

impl CmdQueue {
    /// Allocates the queue page and programs its address into the init segment.
    pub(crate) fn new(
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        state: Arc<DeviceState>,
    ) -> Result<Self> {
        let (log_size, log_stride) = init_segment::cmdq_geometry(bar);
        if log_size > 5 || log_size + log_stride > 12 || (1 << log_stride) < ENTRY {
            dev_err!(dev, "unsupported command queue geometry: log size {log_size}, log stride {log_stride}\n");
            return Err(EINVAL);
        }
        let queue = DmaPage::new(dev)?;
        init_segment::set_cmdq_address(bar, queue.dma_address());
        Ok(Self {
            queue,
            mailboxes: KVec::new(),
            log_size,
            log_stride,
            token: 0,
            stuck: 0,
            state,
            events: None,
        })
    }

    /// Switches to event mode (completions through the command EQ in `events`).
    pub(crate) fn use_events(&mut self, events: Arc<CmdEvents>) {
        self.events = Some(events);
    }

    /// Switches back to polling mode (before the command EQ is destroyed).
    pub(crate) fn use_polling(&mut self) {
        self.events = None;
    }

    /// Whether the device is in the internal-error state.
    pub(crate) fn device_in_error(&self) -> bool {
        self.state.in_error()
    }

    /// The slot MANAGE_PAGES uses: the last one, kept for page commands as in the C driver.
    pub(crate) fn page_slot(&self) -> u32 {
        (1 << self.log_size) - 1
    }

    fn block_addr(&self, i: usize) -> Option<(usize, usize, u64)> {
        let page = self.mailboxes.get(i / BLOCKS_PER_PAGE)?;
        let off = (i % BLOCKS_PER_PAGE) * BLOCK_STRIDE;
        Some((i / BLOCKS_PER_PAGE, off, page.dma_address() + off as u64))
    }

    fn ensure_blocks(&mut self, dev: &device::Device<device::Bound>, n: usize) -> Result {
        while self.mailboxes.len() * BLOCKS_PER_PAGE < n {
            self.mailboxes.push(DmaPage::new(dev)?, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// Lays out a chain of `count` blocks starting at block `first`, filled from `data` (past the
    /// inline part); returns the address of the first block, or 0 for no chain.
    fn build_chain(&self, first: usize, count: usize, data: &[u8], token: u8) -> Result<u64> {
        for i in 0..count {
            let (page, off, _) = self.block_addr(first + i).ok_or(EINVAL)?;
            let next = if i + 1 < count {
                self.block_addr(first + i + 1).ok_or(EINVAL)?.2
            } else {
                0
            };
            let mb = &self.mailboxes[page];
            mb.zero(off, BLOCK_STRIDE)?;
            let part = block_data(data, i);
            mb.write(off, part)?;
            mb.write(off + BLOCK_NEXT, &block_trailer(next, i as u32, token))?;
        }
        Ok(if count == 0 {
            0
        } else {
            self.block_addr(first).ok_or(EINVAL)?.2
        })
    }

    /// Runs a command in `slot`: `input` (header included), room for `out_len` output bytes.
    /// Returns the output, or the errno of a delivery, status or timeout failure (logged).
    pub(crate) fn exec_in_slot(
        &mut self,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        slot: u32,
        input: &[u8],
        out_len: usize,
    ) -> Result<KVec<u8>> {
        if slot >= 1 << self.log_size || self.stuck & (1 << slot) != 0 {
            dev_err!(dev, "command slot {slot} is not usable\n");
            return Err(EAGAIN);
        }
        let out_len = out_len.max(INLINE);
        let opcode = u16::from_be_bytes([
            input.first().copied().unwrap_or(0),
            input.get(1).copied().unwrap_or(0),
        ]);
        let op_mod = u16::from_be_bytes([
            input.get(6).copied().unwrap_or(0),
            input.get(7).copied().unwrap_or(0),
        ]);
        if self.state.in_error() {
            return internal_error_result(opcode, out_len);
        }
        let (nin, nout) = (blocks_for(input.len()), blocks_for(out_len));
        self.ensure_blocks(dev, nin + nout)?;
        // Tokens are non-zero and change with every command.
        self.token = self.token.wrapping_add(1).max(1);
        let token = self.token;
        let in_ptr = self.build_chain(0, nin, input, token)?;
        let out_ptr = self.build_chain(nin, nout, &[], token)?;

        let mut e = [0u8; ENTRY];
        e[0] = XPORT_PCI;
        e[4..8].copy_from_slice(&(input.len() as u32).to_be_bytes());
        e[8..16].copy_from_slice(&in_ptr.to_be_bytes());
        let n = input.len().min(INLINE);
        e[0x10..0x10 + n].copy_from_slice(&input[..n]);
        e[0x30..0x38].copy_from_slice(&out_ptr.to_be_bytes());
        e[0x38..0x3c].copy_from_slice(&(out_len as u32).to_be_bytes());
        e[0x3c] = token;
        e[0x3f] = OWNER_HW;
        e[0x3d] = entry_signature(&e);
        let entry_off = (slot as usize) << self.log_stride;
        self.queue.write(entry_off, &e)?;
        // The entry and its mailboxes must be visible to the device before the doorbell.
        dma_mb(Write);
        if let Some(ev) = &self.events {
            ev.clear(slot);
        }
        init_segment::ring_command_doorbell(bar, slot);

        if let Err(e) = self.wait_owner(dev, slot, entry_off, opcode) {
            self.stuck |= 1 << slot;
            if self.state.in_error() {
                return internal_error_result(opcode, out_len);
            }
            return Err(e);
        }
        dma_mb(Read);
        let mut status_own = [0u8; 1];
        self.queue.read(entry_off + 0x3f, &mut status_own)?;
        let delivery = status_own[0] >> 1;
        if delivery != 0 {
            let err = delivery_errno(delivery);
            dev_err!(
                dev,
                "{}({:#x}) op_mod({:#x}) delivery failed, delivery status {:#x}, err({})\n",
                opcode_name(opcode),
                opcode,
                op_mod,
                delivery,
                err.to_errno()
            );
            return Err(err);
        }
        let mut out = KVec::with_capacity(out_len, GFP_KERNEL)?;
        out.resize(out_len, 0, GFP_KERNEL)?;
        self.queue.read(entry_off + 0x20, &mut out[..INLINE])?;
        for i in 0..nout {
            let (page, off, _) = self.block_addr(nin + i).ok_or(EINVAL)?;
            let from = INLINE + i * BLOCK_DATA;
            let to = (from + BLOCK_DATA).min(out_len);
            self.mailboxes[page].read(off, &mut out[from..to])?;
        }
        let hdr = OutHeader::from_bytes(&out);
        let st = hdr.status() as u8;
        if st != 0 {
            let err = status::status_errno(st);
            dev_err!(
                dev,
                "{}({:#x}) op_mod({:#x}) failed, status {}({:#x}), syndrome ({:#x}), err({})\n",
                opcode_name(opcode),
                opcode,
                op_mod,
                status::status_name(st),
                st,
                hdr.syndrome(),
                err.to_errno()
            );
            return Err(err);
        }
        Ok(out)
    }

    /// Runs a command in the first regular slot that is not stuck.
    pub(crate) fn exec(
        &mut self,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        input: &[u8],
        out_len: usize,
    ) -> Result<KVec<u8>> {
        let Some(slot) = (0..self.page_slot()).find(|s| self.stuck & (1 << s) == 0) else {
            dev_err!(dev, "all command slots are stalled, aborting command\n");
            return Err(EAGAIN);
        };
        self.exec_in_slot(dev, bar, slot, input, out_len)
    }

    /// Waits for the device to hand the entry back; spins briefly, then sleeps.
    fn wait_owner(
        &self,
        dev: &device::Device<device::Bound>,
        slot: u32,
        entry_off: usize,
        opcode: u16,
    ) -> Result {
        let start = Instant::<Monotonic>::now();
        let mut polls = 0u32;
        loop {
            let mut so = [0u8; 1];
            self.queue.read(entry_off + 0x3f, &mut so)?;
            if so[0] & OWNER_HW == 0 {
                return Ok(());
            }
            // A command in flight when the device enters the error state fails now.
            if self.state.in_error() {
                return Err(EIO);
            }
            if start.elapsed() > CMD_TIMEOUT {
                dev_err!(dev, "{}({:#x}) timeout\n", opcode_name(opcode), opcode);
                return Err(ETIMEDOUT);
            }
            if let Some(ev) = &self.events {
                // Event mode: sleep until the handler reports the slot (or a short while, to
                // recheck the ownership bit and the error state).
                ev.wait(slot, EVENT_RECHECK_MS);
                continue;
            }
            polls += 1;
            if polls < 100 {
                udelay(Delta::from_micros(1));
            } else {
                fsleep(Delta::from_micros(100));
            }
        }
    }
}

/// What a command gets while the device is in the internal-error state, as in the C driver:
/// commands that release resources succeed (with zeroed output), so teardown completes; the
/// others fail with `ENOLINK`.
fn internal_error_result(opcode: u16, out_len: usize) -> Result<KVec<u8>> {
    match opcode {
        op::TEARDOWN_HCA
        | op::DISABLE_HCA
        | op::MANAGE_PAGES
        | op::DESTROY_EQ
        | op::DEALLOC_UAR => {
            let mut out = KVec::with_capacity(out_len, GFP_KERNEL)?;
            out.resize(out_len, 0, GFP_KERNEL)?;
            Ok(out)
        }
        _ => Err(ENOLINK),
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_cmd)]
mod tests {
    use super::*;

    #[test]
    fn mailbox_block_counts() {
        assert_eq!(blocks_for(0), 0);
        assert_eq!(blocks_for(16), 0);
        assert_eq!(blocks_for(17), 1);
        assert_eq!(blocks_for(16 + 512), 1);
        assert_eq!(blocks_for(16 + 513), 2);
        assert_eq!(blocks_for(16 + 4096), 8);
        assert_eq!(blocks_for(0x10 + 4096), 8);
    }

    #[test]
    fn inputs_split_across_blocks() {
        // An input of 16 + 512 * 2 + 100 bytes: inline part, two full blocks, one partial.
        let mut data = KVec::new();
        for i in 0..(16 + 512 * 2 + 100) {
            assert!(data.push((i % 251) as u8, GFP_KERNEL).is_ok());
        }
        assert_eq!(blocks_for(data.len()), 3);
        assert_eq!(block_data(&data, 0).len(), 512);
        assert_eq!(block_data(&data, 0)[0], data[16]);
        assert_eq!(block_data(&data, 1)[0], data[16 + 512]);
        assert_eq!(block_data(&data, 2).len(), 100);
        assert_eq!(block_data(&data, 3).len(), 0);
        // A 16-byte input needs no block and a 17-byte one a one-byte block.
        assert_eq!(block_data(&data[..16], 0).len(), 0);
        assert_eq!(block_data(&data[..17], 0).len(), 1);
    }

    #[test]
    fn block_trailer_layout() {
        let t = block_trailer(0x1122_3344_5566_7000, 3, 0x5a);
        assert_eq!(&t[0..8], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x70, 0x00]);
        assert_eq!(&t[8..12], &[0, 0, 0, 3]);
        assert_eq!(t[13], 0x5a);
        // Block signatures stay unset.
        assert_eq!(t[15], 0);
    }

    #[test]
    fn signature_makes_the_entry_xor_to_ff() {
        let mut e = [0u8; ENTRY];
        e[0] = XPORT_PCI;
        e[0x10] = 0x01;
        e[0x11] = 0x04;
        e[0x3c] = 0x5a;
        e[0x3f] = OWNER_HW;
        e[0x3d] = entry_signature(&e);
        assert_eq!(e.iter().fold(0u8, |a, b| a ^ b), 0xff);
    }
}
