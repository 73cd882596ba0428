// SPDX-License-Identifier: GPL-2.0

//! The firmware command interface: a page of 64-byte queue entries in host memory, input and
//! output beyond 16 bytes in chains of 512-byte mailbox blocks, a doorbell in the init segment,
//! and completion when the device clears the entry's ownership bit (polling mode) or reports the
//! slot on the command EQ (event mode). Commands run concurrently, one per slot, each with its
//! own mailbox blocks from a pool allocated with the queue.
//!
//! Every failure is logged as the C driver logs it: the command's name, op_mod, status name,
//! syndrome and errno.

use crate::dma_page::{DmaPage, PAGE};
use crate::health::DeviceState;
use crate::ifc::layout;
use crate::init_segment::{self, Bar0};
use crate::status::{delivery_errno, op, opcode_name, Status};
use kernel::{
    device, new_condvar, new_mutex,
    prelude::*,
    sync::{
        barrier::{dma_mb, Read, Write},
        Arc, CondVar, Mutex,
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

/// Where completions come from in event mode (the command EQ): the queue waits on it, the event
/// path reports to it. The queue knows only this trait, so it does not depend on the event
/// queues (which run commands through it).
pub(crate) trait CompletionSource: Send + Sync {
    /// Forgets an earlier completion of `slot` (before the slot is reused).
    fn clear(&self, slot: u32);
    /// Waits until `slot` is reported complete or `ms` milliseconds pass; true if reported.
    fn wait(&self, slot: u32, ms: u32) -> bool;
}

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

/// Where a command's doorbell is rung: BAR0, held for the whole command (bring-up, teardown, the
/// event handler), or reached only for the doorbell write (commands from interfaces, which may
/// sleep and so cannot hold a revocable BAR across the command).
pub(crate) trait Doorbell {
    /// Rings the command doorbell for `slot`; `ENODEV` if the BAR is gone.
    fn ring(&self, slot: u32) -> Result;
}

impl Doorbell for Bar0<'_> {
    fn ring(&self, slot: u32) -> Result {
        init_segment::ring_command_doorbell(self, slot);
        Ok(())
    }
}

/// Pages of mailbox blocks allocated with the queue (four blocks each): a command waits for the
/// blocks it needs, and one needing more than the pool holds is refused.
const POOL_PAGES: usize = 16;
const POOL_BLOCKS: usize = POOL_PAGES * BLOCKS_PER_PAGE;

/// Which slots and mailbox blocks are in use.
struct Slots {
    /// Slots with a command in flight.
    busy: u32,
    /// Slots whose command never completed: the device may still own them, so they are never
    /// written again.
    stuck: u32,
    /// Mailbox blocks not in use, by index.
    free_blocks: KVec<u16>,
    /// Blocks held by stuck commands (the device may still write them): never reused.
    lost_blocks: usize,
    /// Token of the last command.
    token: u8,
}

/// The command queue. Several commands run at once, each in its own slot with its own mailbox
/// blocks; the last slot is kept for page commands, as in the C driver.
#[pin_data]
pub(crate) struct CmdQueue {
    queue: DmaPage,
    mailboxes: KVec<DmaPage>,
    log_size: u32,
    log_stride: u32,
    #[pin]
    slots: Mutex<Slots>,
    /// Signalled when a slot or mailbox blocks are released.
    #[pin]
    released: CondVar,
    /// Whether the device is in the internal-error state (set by the health poll).
    state: Arc<DeviceState>,
    /// Event mode: completions arrive through the command EQ (polling mode when `None`).
    #[pin]
    events: Mutex<Option<Arc<dyn CompletionSource>>>,
}

/// A slot and its mailbox blocks, taken for one command; released on drop.
struct Claim<'a> {
    q: &'a CmdQueue,
    slot: u32,
    blocks: KVec<u16>,
    stuck: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut s = self.q.slots.lock();
        s.busy &= !(1 << self.slot);
        if self.stuck {
            s.stuck |= 1 << self.slot;
            s.lost_blocks += self.blocks.len();
        } else {
            for &b in self.blocks.iter() {
                // The free list had room for every block from the start.
                let _ = s.free_blocks.push_within_capacity(b);
            }
        }
        drop(s);
        self.q.released.notify_all();
    }
}

impl CmdQueue {
    /// Allocates the queue page and the mailbox pool, and programs the queue's address into the
    /// init segment.
    pub(crate) fn new(
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        state: Arc<DeviceState>,
    ) -> Result<Arc<Self>> {
        let (log_size, log_stride) = init_segment::cmdq_geometry(bar);
        if log_size > 5 || log_size + log_stride > 12 || (1 << log_stride) < ENTRY {
            dev_err!(dev, "unsupported command queue geometry: log size {log_size}, log stride {log_stride}\n");
            return Err(EINVAL);
        }
        let queue = DmaPage::new(dev)?;
        let mut mailboxes = KVec::with_capacity(POOL_PAGES, GFP_KERNEL)?;
        for _ in 0..POOL_PAGES {
            mailboxes.push(DmaPage::new(dev)?, GFP_KERNEL)?;
        }
        let mut free_blocks = KVec::with_capacity(POOL_BLOCKS, GFP_KERNEL)?;
        for b in 0..POOL_BLOCKS as u16 {
            free_blocks.push(b, GFP_KERNEL)?;
        }
        init_segment::set_cmdq_address(bar, queue.dma_address());
        Arc::pin_init(
            try_pin_init!(Self {
                queue,
                mailboxes,
                log_size,
                log_stride,
                slots <- new_mutex!(Slots {
                    busy: 0,
                    stuck: 0,
                    free_blocks,
                    lost_blocks: 0,
                    token: 0,
                }),
                released <- new_condvar!(),
                state,
                events <- new_mutex!(None),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Switches to event mode (completions reported by `events`).
    pub(crate) fn use_events(&self, events: Arc<dyn CompletionSource>) {
        *self.events.lock() = Some(events);
    }

    /// Switches back to polling mode (before the command EQ is destroyed).
    pub(crate) fn use_polling(&self) {
        *self.events.lock() = None;
    }

    /// Whether the device is in the internal-error state.
    pub(crate) fn device_in_error(&self) -> bool {
        self.state.in_error()
    }

    /// The slot MANAGE_PAGES uses: the last one, kept for page commands as in the C driver.
    pub(crate) fn page_slot(&self) -> u32 {
        (1 << self.log_size) - 1
    }

    /// Number of slots commands other than page commands can use.
    fn regular_slots(&self) -> u32 {
        self.page_slot()
    }

    /// DMA address, page and offset of mailbox block `b`.
    fn block(&self, b: u16) -> Option<(&DmaPage, usize, u64)> {
        let b = usize::from(b);
        let page = self.mailboxes.get(b / BLOCKS_PER_PAGE)?;
        let off = (b % BLOCKS_PER_PAGE) * BLOCK_STRIDE;
        Some((page, off, page.dma_address() + off as u64))
    }

    /// Fills the chain of `blocks` from `data` (past the inline part); returns the address of
    /// the first block, or 0 for no chain.
    fn build_chain(&self, blocks: &[u16], data: &[u8], token: u8) -> Result<u64> {
        for (i, &b) in blocks.iter().enumerate() {
            let (mb, off, _) = self.block(b).ok_or(EINVAL)?;
            let next = match blocks.get(i + 1) {
                Some(&n) => self.block(n).ok_or(EINVAL)?.2,
                None => 0,
            };
            mb.zero(off, BLOCK_STRIDE)?;
            mb.write(off, block_data(data, i))?;
            mb.write(off + BLOCK_NEXT, &block_trailer(next, i as u32, token))?;
        }
        match blocks.first() {
            Some(&b) => Ok(self.block(b).ok_or(EINVAL)?.2),
            None => Ok(0),
        }
    }

    /// Waits for a usable slot (`want`, or any regular one) and `nblocks` mailbox blocks, and
    /// takes them with a fresh token.
    fn claim(
        &self,
        dev: &device::Device,
        want: Option<u32>,
        nblocks: usize,
    ) -> Result<(Claim<'_>, u8)> {
        let mut s = self.slots.lock();
        loop {
            if self.state.in_error() {
                return Err(ENOLINK);
            }
            let usable = match want {
                Some(slot) => 1u32 << slot,
                None => (1u32 << self.regular_slots()) - 1,
            } & !s.stuck;
            if usable == 0 {
                dev_err!(dev, "all command slots are stalled, aborting command\n");
                return Err(EAGAIN);
            }
            if nblocks > POOL_BLOCKS - s.lost_blocks {
                dev_err!(
                    dev,
                    "a command needs {nblocks} mailbox blocks, more than the {} usable\n",
                    POOL_BLOCKS - s.lost_blocks
                );
                return Err(EINVAL);
            }
            let free = usable & !s.busy;
            if free != 0 && s.free_blocks.len() >= nblocks {
                let slot = free.trailing_zeros();
                let mut blocks = KVec::with_capacity(nblocks, GFP_KERNEL)?;
                for _ in 0..nblocks {
                    if let Some(b) = s.free_blocks.pop() {
                        blocks.push(b, GFP_KERNEL)?;
                    }
                }
                s.busy |= 1 << slot;
                // Tokens are non-zero and change with every command.
                s.token = s.token.wrapping_add(1).max(1);
                let token = s.token;
                return Ok((
                    Claim {
                        q: self,
                        slot,
                        blocks,
                        stuck: false,
                    },
                    token,
                ));
            }
            self.released.wait(&mut s);
        }
    }

    /// Runs a command in `slot` (the page slot; `None`: any regular slot): `input` (header
    /// included), room for `out_len` output bytes. Returns the output, or the errno of a
    /// delivery, status or timeout failure (logged). Several commands may run at once.
    pub(crate) fn exec_in_slot(
        &self,
        dev: &device::Device,
        bar: &dyn Doorbell,
        slot: Option<u32>,
        input: &[u8],
        out_len: usize,
    ) -> Result<KVec<u8>> {
        if slot.is_some_and(|s| s >= 1 << self.log_size) {
            return Err(EINVAL);
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
        let (mut claim, token) = match self.claim(dev, slot, nin + nout) {
            Err(ENOLINK) => return internal_error_result(opcode, out_len),
            r => r?,
        };
        let slot = claim.slot;
        let (in_blocks, out_blocks) = claim.blocks.split_at(nin);
        let in_ptr = self.build_chain(in_blocks, input, token)?;
        let out_ptr = self.build_chain(out_blocks, &[], token)?;

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
        let events = self.events.lock().clone();
        if let Some(ev) = &events {
            ev.clear(slot);
        }
        // On failure nothing was submitted: the claim frees the slot and blocks again.
        bar.ring(slot)?;

        if let Err(e) = self.wait_owner(dev, events.as_deref(), slot, entry_off, opcode) {
            claim.stuck = true;
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
        for (i, &b) in out_blocks.iter().enumerate() {
            let (mb, off, _) = self.block(b).ok_or(EINVAL)?;
            let from = INLINE + i * BLOCK_DATA;
            let to = (from + BLOCK_DATA).min(out_len);
            mb.read(off, &mut out[from..to])?;
        }
        drop(claim);
        let hdr = OutHeader::from_bytes(&out);
        let status = Status::from_raw(hdr.status() as u8);
        if let Err(err) = status.to_result() {
            dev_err!(
                dev,
                "{}({:#x}) op_mod({:#x}) failed, status {}({:#x}), syndrome ({:#x}), err({})\n",
                opcode_name(opcode),
                opcode,
                op_mod,
                status.name(),
                status.raw(),
                hdr.syndrome(),
                err.to_errno()
            );
            return Err(err);
        }
        Ok(out)
    }

    /// Runs a command in a regular slot (waiting for one to be free).
    pub(crate) fn exec(
        &self,
        dev: &device::Device,
        bar: &dyn Doorbell,
        input: &[u8],
        out_len: usize,
    ) -> Result<KVec<u8>> {
        self.exec_in_slot(dev, bar, None, input, out_len)
    }

    /// Waits for the device to hand the entry back; spins briefly, then sleeps.
    fn wait_owner(
        &self,
        dev: &device::Device,
        events: Option<&dyn CompletionSource>,
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
            if let Some(ev) = events {
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

#[kernel::macros::kunit_tests(rdma_rs_mlx5_cmdq)]
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
