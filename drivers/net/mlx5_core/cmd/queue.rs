// SPDX-License-Identifier: GPL-2.0

//! The firmware command interface: a page of 64-byte queue entries in host memory, input and
//! output beyond 16 bytes in chains of 512-byte mailbox blocks, a doorbell in the init segment,
//! and completion when the device clears the entry's ownership bit (polling mode) or reports the
//! slot on the command EQ (event mode). Commands run concurrently, one per slot, each with its
//! own mailbox blocks from a pool allocated with the queue; a command larger than the pool (the
//! page list of a large memory region, ring or queue) gets a chain of its own, allocated for it
//! as C allocates every command's, when its caller can allocate on the device
//! (`exec_var_large`).
//!
//! A command whose input fits the entry and whose output is small (every DESTROY and DEALLOC
//! command, TEARDOWN_HCA, DISABLE_HCA) allocates nothing: teardown cannot fail for lack of
//! memory, which C makes sure of with its preallocated command messages.
//!
//! Every failure is logged as the C driver logs it: the command's name, op_mod, status name,
//! syndrome and errno; failures a caller can repeat at will are rate-limited as C's
//! `mlx5_core_err_rl` (the kernel's default: 10 messages per 5 seconds, per call site).
//!
//! A command that times out leaves its slot and its mailbox blocks to the device, as C's
//! `mlx5_cmd_comp_handler` does with a forced completion: the device may still complete it and
//! write them. The slot is given back when the late completion arrives (the entry's ownership bit
//! is seen clear, logged as C logs it); while every usable slot is stuck, commands fail at once
//! with `EAGAIN` (C's "All CMD slots are stalled"). Memory the device may still write is never
//! freed: at teardown, the queue page and the mailbox pages of commands that never completed are
//! leaked on purpose (at most the whole pool and the queue page: 17 pages, 68 KiB per function),
//! and so is the chain of its own of a large command that timed out.

use crate::cmd::status::{delivery_errno, op, opcode_name, Status};
use crate::device_state::DeviceState;
use crate::ifc::{
    self, CmdEntry, CmdInHeader, CmdMailbox, CmdMailboxTrailer, Command, Layout, OutHeader,
};
use crate::init_segment::{self, Bar0};
use crate::memory::dma_page::{DmaPage, PAGE};
use core::mem::ManuallyDrop;
use kernel::{
    device, new_condvar, new_mutex,
    prelude::*,
    sync::{
        aref::ARef,
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
/// Transport type of an entry submitted over PCI.
const XPORT_PCI: u64 = 7;
/// Bytes of input and output carried inline in the entry.
const INLINE: usize = 16;
/// Outputs up to this size are read into a buffer on the stack instead of the heap (every
/// DESTROY/DEALLOC command's and most CREATE/ALLOC ones': a header and an object number).
const SMALL_OUT: usize = 64;
/// Data bytes a mailbox block carries.
const BLOCK_DATA: usize = 512;
/// Mailbox blocks are 576 bytes, aligned to 1 KiB: four per page.
const BLOCK_STRIDE: usize = 1024;
const BLOCKS_PER_PAGE: usize = PAGE / BLOCK_STRIDE;

const _: () = assert!(
    CmdEntry::SIZE == 64
        && CmdMailbox::SIZE <= BLOCK_STRIDE
        && CmdMailbox::SIZE == BLOCK_DATA + CmdMailboxTrailer::SIZE
);

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

/// Number of mailbox blocks that carry `len` bytes past the inline part.
pub(crate) fn blocks_for(len: usize) -> usize {
    len.saturating_sub(INLINE).div_ceil(BLOCK_DATA)
}

/// Bytes `from..to` of `head` followed by `tail` (clamped to their joint length): the part in
/// `head`, then the part in `tail`. A command's input is its layout followed by a variable part
/// (a page list); the two are never joined into one buffer.
pub(crate) fn joined_range<'a>(
    head: &'a [u8],
    tail: &'a [u8],
    from: usize,
    to: usize,
) -> [&'a [u8]; 2] {
    let hl = head.len();
    let end = hl.saturating_add(tail.len());
    let (from, to) = (from.min(end), to.min(end).max(from.min(end)));
    [
        &head[from.min(hl)..to.min(hl)],
        &tail[from.saturating_sub(hl)..to.saturating_sub(hl)],
    ]
}

/// The part of a command input (`head` followed by `tail`, header included) that block `i`
/// carries.
pub(crate) fn block_data<'a>(head: &'a [u8], tail: &'a [u8], i: usize) -> [&'a [u8]; 2] {
    let from = i.saturating_mul(BLOCK_DATA).saturating_add(INLINE);
    joined_range(head, tail, from, from.saturating_add(BLOCK_DATA))
}

/// Copies `parts`, one after the other, to the start of `room` (`EINVAL` if they do not fit).
fn copy_parts(room: &mut [u8], parts: [&[u8]; 2]) -> Result {
    let mut at = 0;
    for part in parts {
        let end = at + part.len();
        room.get_mut(at..end).ok_or(EINVAL)?.copy_from_slice(part);
        at = end;
    }
    Ok(())
}

/// Zeros for the unused part of a block's data.
static ZERO_DATA: [u8; BLOCK_DATA] = [0; BLOCK_DATA];

/// The trailer of block `num` of a chain: the next block's address and the command's token
/// (ctrl and block signatures stay zero: the driver turns checksums off).
pub(crate) fn mailbox_trailer(next: u64, num: u32, token: u8) -> Result<CmdMailboxTrailer> {
    let mut t = CmdMailboxTrailer::new();
    t.set_next_pointer(next)?;
    t.set_block_number(num.into())?;
    t.set_token(token.into())?;
    Ok(t)
}

/// Mailbox block `num` of a chain as one layout: its data and [`mailbox_trailer`]. The command
/// path writes the two parts in place (`build_chain`); the tests check the whole block.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn mailbox_block(
    data: [&[u8]; 2],
    next: u64,
    num: u32,
    token: u8,
) -> Result<CmdMailbox> {
    let mut m = CmdMailbox::new();
    copy_parts(m.mailbox_data_mut(), data)?;
    m.trailer_mut()
        .copy_from_slice(mailbox_trailer(next, num, token)?.as_bytes());
    Ok(m)
}

/// The entry signature: the byte that makes the XOR of the whole entry 0xff.
pub(crate) fn entry_signature(entry: &CmdEntry) -> u8 {
    !entry.as_bytes().iter().fold(0u8, |a, b| a ^ b)
}

/// A queue entry handed to the device: input length and inline part, mailbox pointers, output
/// length, token, signature, owned by the device.
pub(crate) fn command_entry(
    input: [&[u8]; 2],
    in_ptr: u64,
    out_ptr: u64,
    out_len: usize,
    token: u8,
) -> Result<CmdEntry> {
    let mut e = CmdEntry::new();
    e.set_type_(XPORT_PCI)?;
    let [head, tail] = input;
    e.set_input_length((head.len() + tail.len()) as u64)?;
    e.set_input_mailbox_pointer(in_ptr)?;
    copy_parts(
        e.command_input_inline_data_mut(),
        joined_range(head, tail, 0, INLINE),
    )?;
    e.set_output_mailbox_pointer(out_ptr)?;
    e.set_output_length(out_len as u64)?;
    e.set_token(token.into())?;
    e.set_ownership(1)?;
    let sig = entry_signature(&e);
    e.set_signature(sig.into())?;
    Ok(e)
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
/// blocks it needs; one needing more than the pool holds gets a chain of its own
/// (`exec_var_large`) or is refused (`EINVAL`).
const POOL_PAGES: usize = 16;
const POOL_BLOCKS: usize = POOL_PAGES * BLOCKS_PER_PAGE;
/// At most 32 slots (log size 5).
const MAX_SLOTS: usize = 32;

/// A set of the pool's mailbox blocks, one bit per block: claiming and releasing blocks
/// allocates nothing.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct BlockSet(u64);

const _: () = assert!(POOL_BLOCKS <= u64::BITS as usize);

impl BlockSet {
    /// Blocks `0..n` (at most the 64 a set holds).
    fn first(n: usize) -> Self {
        Self(
            u64::MAX
                .checked_shr(u64::BITS - n.min(64) as u32)
                .unwrap_or(0),
        )
    }

    fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The `i`-th block of the set, by index (the order a command's chain uses).
    fn nth(self, i: usize) -> Option<u16> {
        let mut rest = self.0;
        for _ in 0..i {
            rest &= rest.wrapping_sub(1);
        }
        (rest != 0).then(|| rest.trailing_zeros() as u16)
    }

    /// Takes `n` blocks out of the set (the lowest ones), or none if it has fewer.
    fn take(&mut self, n: usize) -> Option<Self> {
        if self.len() < n {
            return None;
        }
        let mut taken = 0u64;
        for _ in 0..n {
            let low = self.0 & self.0.wrapping_neg();
            taken |= low;
            self.0 &= !low;
        }
        Some(Self(taken))
    }

    fn insert_all(&mut self, other: Self) {
        self.0 |= other.0;
    }

    fn iter(self) -> impl Iterator<Item = u16> {
        (0..u64::BITS as u16).filter(move |&b| self.0 & (1 << b) != 0)
    }
}

/// Which slots and mailbox blocks are in use.
struct Slots {
    /// Slots with a command in flight.
    busy: u32,
    /// Slots whose command timed out: the device may still own them, so they are not written
    /// again until the device hands them back.
    stuck: u32,
    /// The mailbox blocks of each stuck slot's command (the device may still write them).
    stuck_blocks: [BlockSet; MAX_SLOTS],
    /// Mailbox blocks not in use.
    free_blocks: BlockSet,
    /// Blocks in the pool.
    pool: usize,
    /// Token of the last command.
    token: u8,
}

/// What [`Slots::take`] found.
enum Take {
    /// The slot and the blocks, now busy.
    Taken(u32, BlockSet),
    /// Every usable slot or too many blocks are busy: wait for a release.
    Wait,
}

impl Slots {
    /// No command in flight, `pool` free mailbox blocks (at most 64).
    fn new(pool: usize) -> Self {
        let free_blocks = BlockSet::first(pool);
        Self {
            busy: 0,
            stuck: 0,
            stuck_blocks: [BlockSet::default(); MAX_SLOTS],
            free_blocks,
            pool: free_blocks.len(),
            token: 0,
        }
    }

    /// Blocks held by stuck commands.
    fn lost_blocks(&self) -> usize {
        self.stuck_blocks.iter().map(|b| b.len()).sum()
    }

    /// Takes one of the `usable` slots and `nblocks` blocks. `EAGAIN` when every usable slot is
    /// stuck (C fails at once rather than wait for firmware that stopped answering), `EINVAL`
    /// when the blocks not lost to stuck commands cannot carry the command.
    fn take(&mut self, usable: u32, nblocks: usize) -> Result<Take> {
        let usable = usable & !self.stuck;
        if usable == 0 {
            return Err(EAGAIN);
        }
        if nblocks > self.pool - self.lost_blocks() {
            return Err(EINVAL);
        }
        let free = usable & !self.busy;
        if free == 0 {
            return Ok(Take::Wait);
        }
        let Some(blocks) = self.free_blocks.take(nblocks) else {
            return Ok(Take::Wait);
        };
        let slot = free.trailing_zeros();
        self.busy |= 1 << slot;
        Ok(Take::Taken(slot, blocks))
    }

    /// Ends the command in `slot`: its blocks go back to the pool, or, if it timed out
    /// (`stuck`), stay with the slot until the device hands the slot back.
    fn release(&mut self, slot: u32, blocks: BlockSet, stuck: bool) {
        let Some(held) = self.stuck_blocks.get_mut(slot as usize) else {
            return;
        };
        self.busy &= !(1 << slot);
        if stuck {
            self.stuck |= 1 << slot;
            *held = blocks;
        } else {
            self.free_blocks.insert_all(blocks);
        }
    }

    /// The device handed stuck `slot` back (a late completion): the slot and its blocks are
    /// usable again.
    fn give_back(&mut self, slot: u32) {
        let Some(held) = self.stuck_blocks.get_mut(slot as usize) else {
            return;
        };
        let blocks = core::mem::take(held);
        self.stuck &= !(1 << slot);
        self.free_blocks.insert_all(blocks);
    }

    /// Pool pages holding blocks of stuck commands, one bit each.
    fn pages_in_device_hands(&self) -> u32 {
        self.stuck_blocks
            .iter()
            .flat_map(|b| b.iter())
            .fold(0, |m, b| m | 1 << (usize::from(b) / BLOCKS_PER_PAGE))
    }
}

/// The kernel's default rate limit (`DEFAULT_RATELIMIT_INTERVAL` and `_BURST`), which C's
/// `dev_err_ratelimited` uses: 10 messages per 5 seconds.
const RATELIMIT_INTERVAL_MS: i64 = 5000;
const RATELIMIT_BURST: u32 = 10;

/// The state of one rate-limited message, as the kernel's `___ratelimit`.
#[derive(Default)]
struct RateLimit {
    /// Start of the current interval (milliseconds on the queue's clock).
    begin: Option<i64>,
    printed: u32,
    missed: u32,
}

impl RateLimit {
    /// Whether a message may be printed at `now_ms`: `Some(n)` if so, `n` being the messages
    /// suppressed in the interval that just ended (to report), `None` if it is suppressed.
    fn admit(&mut self, now_ms: i64) -> Option<u32> {
        let mut reported = 0;
        match self.begin {
            None => self.begin = Some(now_ms),
            Some(b) if now_ms - b > RATELIMIT_INTERVAL_MS => {
                reported = core::mem::take(&mut self.missed);
                self.begin = Some(now_ms);
                self.printed = 0;
            }
            Some(_) => {}
        }
        if self.printed < RATELIMIT_BURST {
            self.printed += 1;
            Some(reported)
        } else {
            self.missed += 1;
            None
        }
    }
}

/// The rate-limited messages of the queue.
#[derive(Clone, Copy)]
enum Limited {
    Status,
    Delivery,
    Stalled,
    TooLarge,
}
const LIMITED: usize = 4;

/// Logs with `dev_err!` unless the call site's rate limit suppresses it.
macro_rules! err_rl {
    ($q:expr, $site:expr, $dev:expr, $($arg:tt)*) => {
        if let Some(missed) = $q.admit($site) {
            if missed > 0 {
                dev_warn!($dev, "{missed} command error messages suppressed\n");
            }
            dev_err!($dev, $($arg)*);
        }
    };
}

/// The command queue. Several commands run at once, each in its own slot with its own mailbox
/// blocks; the last slot is kept for page commands, as in the C driver.
#[pin_data(PinnedDrop)]
pub(crate) struct CmdQueue {
    /// Not dropped while a slot is stuck (the device may still write its entry).
    queue: ManuallyDrop<DmaPage>,
    mailboxes: KVec<DmaPage>,
    dev: ARef<device::Device>,
    /// Clock of the rate limits.
    born: Instant<Monotonic>,
    #[pin]
    limits: Mutex<[RateLimit; LIMITED]>,
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
    /// Blocks of the pool (none for a command with a chain of its own).
    blocks: BlockSet,
    /// The pages of a chain of its own, for a command larger than the pool (C allocates every
    /// command's mailboxes; the pool here serves all others).
    own: KVec<DmaPage>,
    stuck: bool,
}

impl Claim<'_> {
    /// Block `i` of the command's chain (input blocks first, then output blocks): its page,
    /// offset in the page and device address.
    fn block(&self, i: usize) -> Option<(&DmaPage, usize, u64)> {
        if self.own.is_empty() {
            return self.q.block(self.blocks.nth(i)?);
        }
        let page = self.own.get(i / BLOCKS_PER_PAGE)?;
        let off = (i % BLOCKS_PER_PAGE) * BLOCK_STRIDE;
        Some((page, off, page.dma_address() + off as u64))
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let blocks = core::mem::take(&mut self.blocks);
        let own = core::mem::take(&mut self.own);
        if self.stuck {
            // The device may still write them: never given back, as C leaves a timed-out
            // command's mailboxes.
            core::mem::forget(own);
        } else {
            drop(own);
        }
        self.q.slots.lock().release(self.slot, blocks, self.stuck);
        self.q.released.notify_all();
    }
}

#[pinned_drop]
impl PinnedDrop for CmdQueue {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: only the unpinned fields `queue` and `mailboxes` are changed, nothing pinned
        // is moved.
        let this = unsafe { Pin::get_unchecked_mut(self) };
        let mut s = this.slots.lock();
        this.reap(&mut s);
        let (stuck, leak) = (s.stuck, s.pages_in_device_hands());
        drop(s);
        let mailboxes = core::mem::take(&mut this.mailboxes);
        if stuck == 0 {
            // SAFETY: `queue` is not used after this (the queue is being dropped).
            unsafe { ManuallyDrop::drop(&mut this.queue) };
            return;
        }
        // Commands that never completed: the device may still write their entries and
        // mailboxes, so that memory is never given back to the kernel (as C leaves a timed-out
        // command's entry to the device).
        let mut pages = 1;
        for (i, page) in mailboxes.into_iter().enumerate() {
            if leak & (1 << i) != 0 {
                core::mem::forget(page);
                pages += 1;
            }
        }
        dev_warn!(
            this.dev,
            "{} command(s) never completed: leaving {} KiB of command memory to the device\n",
            stuck.count_ones(),
            pages * PAGE / 1024
        );
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
        if log_size > 5 || log_size + log_stride > 12 || (1 << log_stride) < CmdEntry::SIZE {
            dev_err!(dev, "unsupported command queue geometry: log size {log_size}, log stride {log_stride}\n");
            return Err(EINVAL);
        }
        let queue = DmaPage::new(dev)?;
        let mut mailboxes = KVec::with_capacity(POOL_PAGES, GFP_KERNEL)?;
        for _ in 0..POOL_PAGES {
            mailboxes.push(DmaPage::new(dev)?, GFP_KERNEL)?;
        }
        let slots = Slots::new(POOL_BLOCKS);
        init_segment::set_cmdq_address(bar, queue.dma_address());
        let plain: &device::Device = dev;
        Arc::pin_init(
            try_pin_init!(Self {
                queue: ManuallyDrop::new(queue),
                mailboxes,
                dev: plain.into(),
                born: Instant::<Monotonic>::now(),
                limits <- new_mutex!(<[RateLimit; LIMITED]>::default()),
                log_size,
                log_stride,
                slots <- new_mutex!(slots),
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

    /// Whether a message of call site `site` may be printed now; `Some(n)`: yes, and `n`
    /// earlier ones were suppressed.
    fn admit(&self, site: Limited) -> Option<u32> {
        let now = self.born.elapsed().as_millis();
        self.limits.lock().get_mut(site as usize)?.admit(now)
    }

    /// Gives back the stuck slots the device has handed back since their command timed out (a
    /// late completion: the ownership bit is clear again), as C's completion handler does.
    fn reap(&self, s: &mut Slots) {
        let mut stuck = s.stuck;
        while stuck != 0 {
            let slot = stuck.trailing_zeros();
            stuck &= !(1 << slot);
            let off = (slot as usize) << self.log_stride;
            if let Ok(entry) = self.queue.read_layout::<CmdEntry>(off) {
                if entry.ownership() == 0 {
                    dev_err!(
                        self.dev,
                        "Command completion arrived after timeout (entry idx = {slot}).\n"
                    );
                    s.give_back(slot);
                }
            }
        }
    }

    /// Whether the device is in the internal-error state.
    #[inline]
    pub(crate) fn device_in_error(&self) -> bool {
        self.state.in_error()
    }

    /// The slot MANAGE_PAGES uses: the last one, kept for page commands as in the C driver.
    pub(crate) fn page_slot(&self) -> u32 {
        (1 << self.log_size) - 1
    }

    /// The longest input one command can carry: the inline part and every block of the pool.
    pub(crate) fn max_input_len(&self) -> usize {
        INLINE + POOL_BLOCKS * BLOCK_DATA
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

    /// Fills blocks `first..first + n` of `claim`'s chain from `data` (past the inline part);
    /// returns the address of the first block, or 0 for no chain.
    fn build_chain(
        claim: &Claim<'_>,
        first: usize,
        n: usize,
        data: [&[u8]; 2],
        token: u8,
    ) -> Result<u64> {
        for i in 0..n {
            let (mb, off, _) = claim.block(first + i).ok_or(EINVAL)?;
            let next = if i + 1 < n {
                claim.block(first + i + 1).ok_or(EINVAL)?.2
            } else {
                0
            };
            let num = u32::try_from(i).map_err(|_| EINVAL)?;
            let [head, tail] = data;
            // Written in place, part by part (what `mailbox_block` builds): a whole block on
            // the stack here, on a device probe's deep path, overflowed the 16 KiB stack.
            let [a, b] = block_data(head, tail, i);
            mb.write(off, a)?;
            mb.write(off + a.len(), b)?;
            let used = a.len() + b.len();
            let rest = ZERO_DATA
                .get(..BLOCK_DATA - used.min(BLOCK_DATA))
                .ok_or(EINVAL)?;
            mb.write(off + used, rest)?;
            mb.write_layout(off + BLOCK_DATA, &mailbox_trailer(next, num, token)?)?;
        }
        if n == 0 {
            return Ok(0);
        }
        Ok(claim.block(first).ok_or(EINVAL)?.2)
    }

    /// Waits for a usable slot (`want`, or any regular one) and `nblocks` mailbox blocks, and
    /// takes them with a fresh token.
    /// With `alloc`, a command larger than the pool gets a chain of its own, allocated on the
    /// device here; without, it is refused (`EINVAL`).
    fn claim(
        &self,
        dev: &device::Device,
        alloc: Option<&device::Device<device::Bound>>,
        want: Option<u32>,
        nblocks: usize,
    ) -> Result<(Claim<'_>, u8)> {
        let usable = match want {
            Some(slot) => 1u32 << slot,
            None => (1u32 << self.regular_slots()) - 1,
        };
        let mut own = KVec::new();
        let mut pool_blocks = nblocks;
        if let Some(bound) = alloc {
            if nblocks > POOL_BLOCKS {
                let pages = nblocks.div_ceil(BLOCKS_PER_PAGE);
                own = KVec::with_capacity(pages, GFP_KERNEL)?;
                for _ in 0..pages {
                    own.push(DmaPage::new(bound)?, GFP_KERNEL)?;
                }
                pool_blocks = 0;
            }
        }
        let mut s = self.slots.lock();
        loop {
            if self.state.in_error() {
                return Err(ENOLINK);
            }
            self.reap(&mut s);
            match s.take(usable, pool_blocks) {
                Ok(Take::Taken(slot, blocks)) => {
                    // Tokens are non-zero and change with every command.
                    s.token = s.token.wrapping_add(1).max(1);
                    let token = s.token;
                    return Ok((
                        Claim {
                            q: self,
                            slot,
                            blocks,
                            own,
                            stuck: false,
                        },
                        token,
                    ));
                }
                // Each busy slot is released within the command timeout.
                Ok(Take::Wait) => self.released.wait(&mut s),
                Err(EAGAIN) => {
                    err_rl!(
                        self,
                        Limited::Stalled,
                        dev,
                        "All CMD slots are stalled, aborting command\n"
                    );
                    return Err(EAGAIN);
                }
                Err(EINVAL) => {
                    err_rl!(
                        self,
                        Limited::TooLarge,
                        dev,
                        "a command needs {nblocks} mailbox blocks, more than the {} usable\n",
                        s.pool - s.lost_blocks()
                    );
                    return Err(EINVAL);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs command `C` in a regular slot (waiting for one to be free): `input`, with the
    /// command's opcode written into its header. Returns the output layout, or the errno of a
    /// delivery, status or timeout failure (logged).
    pub(crate) fn exec<C: Command>(
        &self,
        dev: &device::Device,
        bar: &dyn Doorbell,
        input: &C::In,
    ) -> Result<C::Out> {
        Ok(self.exec_var::<C>(dev, bar, None, input, &[], 0)?.0)
    }

    /// [`Self::exec_var`] in a regular slot for a command that may be larger than the mailbox
    /// pool: such a command gets a chain of its own, allocated on `bound` (C's per-command
    /// mailboxes), so its size is bounded by memory only.
    pub(crate) fn exec_var_large<C: Command>(
        &self,
        bound: &device::Device<device::Bound>,
        bar: &dyn Doorbell,
        input: &C::In,
        in_tail: &[u8],
        out_tail: usize,
    ) -> Result<(C::Out, KVec<u8>)> {
        self.exec_var_in::<C>(bound, Some(bound), bar, None, input, in_tail, out_tail)
    }

    /// Runs command `C` with a variable part: `in_tail` is sent after the input layout and
    /// `out_tail` more bytes are read after the command's output, returned as bytes. `slot`:
    /// the page slot, or `None` for any regular slot.
    pub(crate) fn exec_var<C: Command>(
        &self,
        dev: &device::Device,
        bar: &dyn Doorbell,
        slot: Option<u32>,
        input: &C::In,
        in_tail: &[u8],
        out_tail: usize,
    ) -> Result<(C::Out, KVec<u8>)> {
        self.exec_var_in::<C>(dev, None, bar, slot, input, in_tail, out_tail)
    }

    /// Runs command `C` in `slot` (the page slot, or `None` for any regular slot) and reads
    /// `tail.len()` bytes after its output into `tail`, allocating nothing: the output, tail
    /// included, is read into a buffer on the stack, at most [`SMALL_OUT`] bytes (`EINVAL` for
    /// more), and the pool's mailbox blocks carry whatever does not fit the entry. So a
    /// command that must not fail for lack of memory (a DESTROY, TEARDOWN_HCA, a reclaim of a
    /// few pages at teardown) does not, as C's preallocated command messages make sure of.
    pub(crate) fn exec_small<C: Command>(
        &self,
        dev: &device::Device,
        bar: &dyn Doorbell,
        slot: Option<u32>,
        input: &C::In,
        tail: &mut [u8],
    ) -> Result<C::Out> {
        self.exec_small_in::<C>(dev, None, bar, slot, input, &[], tail)
    }

    /// [`Self::exec_small`] with an input tail and, when `alloc` is given, a chain of its own
    /// for an input larger than the pool.
    #[allow(clippy::too_many_arguments)]
    fn exec_small_in<C: Command>(
        &self,
        dev: &device::Device,
        alloc: Option<&device::Device<device::Bound>>,
        bar: &dyn Doorbell,
        slot: Option<u32>,
        input: &C::In,
        in_tail: &[u8],
        tail: &mut [u8],
    ) -> Result<C::Out> {
        let out_len = C::OUT_LEN
            .checked_add(tail.len())
            .ok_or(EINVAL)?
            .max(INLINE);
        if out_len > SMALL_OUT {
            return Err(EINVAL);
        }
        let wire = ifc::encode::<C>(input)?;
        let mut buf = [0u8; SMALL_OUT];
        let out = buf.get_mut(..out_len).ok_or(EINVAL)?;
        self.exec_raw(dev, alloc, bar, slot, wire.as_bytes(), in_tail, out)?;
        let rest = out.get(C::OUT_LEN..).unwrap_or(&[]);
        let n = rest.len().min(tail.len());
        tail[..n].copy_from_slice(&rest[..n]);
        Ok(C::Out::from_bytes(out))
    }

    /// [`Self::exec_var`], with chains of their own for commands larger than the pool when
    /// `alloc` is given.
    #[allow(clippy::too_many_arguments)]
    fn exec_var_in<C: Command>(
        &self,
        dev: &device::Device,
        alloc: Option<&device::Device<device::Bound>>,
        bar: &dyn Doorbell,
        slot: Option<u32>,
        input: &C::In,
        in_tail: &[u8],
        out_tail: usize,
    ) -> Result<(C::Out, KVec<u8>)> {
        let out_len = C::OUT_LEN.checked_add(out_tail).ok_or(EINVAL)?.max(INLINE);
        if out_tail == 0 && out_len <= SMALL_OUT {
            // Nothing to allocate (see `exec_small`).
            let out = self.exec_small_in::<C>(dev, alloc, bar, slot, input, in_tail, &mut [])?;
            return Ok((out, KVec::new()));
        }
        let wire = ifc::encode::<C>(input)?;
        // Allocated before the command is sent: once the device has run it (created or
        // destroyed an object), an allocation failure must not turn its result into an error.
        let mut out = KVec::with_capacity(out_len, GFP_KERNEL)?;
        out.resize(out_len, 0, GFP_KERNEL)?;
        let mut tail = KVec::with_capacity(out_tail, GFP_KERNEL)?;
        self.exec_raw(dev, alloc, bar, slot, wire.as_bytes(), in_tail, &mut out)?;
        let fixed = C::Out::from_bytes(&out);
        let rest = out.get(C::OUT_LEN..).unwrap_or(&[]);
        for &b in rest.iter().take(out_tail) {
            // Within the capacity reserved above: never allocates, never fails.
            let _ = tail.push_within_capacity(b);
        }
        Ok((fixed, tail))
    }

    /// Runs a command in `slot` (the page slot; `None`: any regular slot): `head` (the input
    /// layout, header included) followed by `tail`; its output fills `out` (at least the
    /// [`INLINE`] bytes). Returns the errno of a delivery, status or timeout failure (logged).
    /// Several commands may run at once. Allocates only for a command that needs mailbox
    /// blocks (their list) or a chain of its own.
    #[allow(clippy::too_many_arguments)]
    fn exec_raw(
        &self,
        dev: &device::Device,
        alloc: Option<&device::Device<device::Bound>>,
        bar: &dyn Doorbell,
        slot: Option<u32>,
        head: &[u8],
        tail: &[u8],
        out: &mut [u8],
    ) -> Result {
        if slot.is_some_and(|s| s >= 1 << self.log_size) || out.len() < INLINE {
            return Err(EINVAL);
        }
        let out_len = out.len();
        let hdr = CmdInHeader::from_bytes(head);
        let (opcode, op_mod) = (hdr.opcode() as u16, hdr.op_mod());
        if self.state.in_error() {
            return internal_error_result(opcode, out);
        }
        let (nin, nout) = (blocks_for(head.len() + tail.len()), blocks_for(out_len));
        let (mut claim, token) = match self.claim(dev, alloc, slot, nin + nout) {
            Err(ENOLINK) => return internal_error_result(opcode, out),
            r => r?,
        };
        let slot = claim.slot;
        let in_ptr = Self::build_chain(&claim, 0, nin, [head, tail], token)?;
        let out_ptr = Self::build_chain(&claim, nin, nout, [&[], &[]], token)?;

        let entry = command_entry([head, tail], in_ptr, out_ptr, out_len, token)?;
        let entry_off = (slot as usize) << self.log_stride;
        self.queue.write_layout(entry_off, &entry)?;
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
                return internal_error_result(opcode, out);
            }
            return Err(e);
        }
        dma_mb(Read);
        let done: CmdEntry = self.queue.read_layout(entry_off)?;
        let delivery = done.status() as u8;
        if delivery != 0 {
            let err = delivery_errno(delivery);
            err_rl!(
                self,
                Limited::Delivery,
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
        out[..INLINE].copy_from_slice(done.command_output_inline_data());
        for i in 0..nout {
            let (mb, off, _) = claim.block(nin + i).ok_or(EINVAL)?;
            let from = INLINE + i * BLOCK_DATA;
            let to = (from + BLOCK_DATA).min(out_len);
            // The block's data starts it (`mailbox_data` at 0): read in place, not the whole
            // block onto the stack.
            mb.read(off, &mut out[from..to])?;
        }
        drop(claim);
        let hdr = OutHeader::from_bytes(out);
        let status = Status::from_raw(hdr.status() as u8);
        if let Err(err) = status.to_result() {
            err_rl!(
                self,
                Limited::Status,
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
        Ok(())
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
            let entry: CmdEntry = self.queue.read_layout(entry_off)?;
            if entry.ownership() == 0 {
                return Ok(());
            }
            // A command in flight when the device enters the error state fails now.
            if self.state.in_error() {
                return Err(EIO);
            }
            if start.elapsed() > CMD_TIMEOUT {
                dev_warn!(
                    dev,
                    "{}({:#x}) timeout. Will cause a leak of a command resource\n",
                    opcode_name(opcode),
                    opcode
                );
                return Err(ETIMEDOUT);
            }
            if let Some(ev) = events {
                // Event mode: sleep (uninterruptibly, as C) until the handler reports the slot
                // or a short while passes, to recheck the ownership bit and the error state.
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

/// `MLX5_CMD_OP_DESTROY_RMP`, which only `mlx5_ib` issues (`ifc_verbs.rs`).
const DESTROY_RMP: u16 = 0x90e;
/// `MLX5_CMD_OP_DEALLOC_TRANSPORT_DOMAIN`, which only `mlx5_ib` issues (`ifc_verbs.rs`).
const DEALLOC_TRANSPORT_DOMAIN: u16 = 0x817;

/// What a command gets while the device is in the internal-error state, as in the C driver
/// (`mlx5_internal_err_ret_value`): commands that release resources, the verbs objects' too
/// (an MKey, a CQ, a QP and its moves to RESET or ERR, a PD, an RMP, a transport domain), succeed with zeroed
/// output, so teardown completes and frees the software state; the others fail with
/// `ENOLINK`. A success leaves `out` zeroed.
fn internal_error_result(opcode: u16, out: &mut [u8]) -> Result {
    match opcode {
        op::TEARDOWN_HCA
        | op::DISABLE_HCA
        | op::MANAGE_PAGES
        | op::DESTROY_EQ
        | op::DEALLOC_UAR
        | op::DESTROY_MKEY
        | op::DESTROY_CQ
        | op::DESTROY_QP
        | op::QP_2ERR
        | op::QP_2RST
        | op::DEALLOC_PD
        | DESTROY_RMP
        | DEALLOC_TRANSPORT_DOMAIN => {
            out.fill(0);
            Ok(())
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
        let whole = |d: &[u8], i| block_data(d, &[], i)[0].len();
        assert_eq!(whole(&data, 0), 512);
        assert_eq!(block_data(&data, &[], 0)[0][0], data[16]);
        assert_eq!(block_data(&data, &[], 1)[0][0], data[16 + 512]);
        assert_eq!(whole(&data, 2), 100);
        assert_eq!(whole(&data, 3), 0);
        // A 16-byte input needs no block and a 17-byte one a one-byte block.
        assert_eq!(whole(&data[..16], 0), 0);
        assert_eq!(whole(&data[..17], 0), 1);
        // Split anywhere into a layout and a tail, every block carries the same bytes.
        for cut in [0, 10, 16, 17, 300, 528, 529, data.len()] {
            let (head, tail) = data.split_at(cut);
            for i in 0..4 {
                let [a, b] = block_data(head, tail, i);
                let [w, _] = block_data(&data, &[], i);
                assert_eq!(a.len() + b.len(), w.len());
                assert!(Iterator::chain(a.iter(), b.iter()).eq(w.iter()));
            }
            let [a, b] = joined_range(head, tail, 0, INLINE);
            assert!(Iterator::chain(a.iter(), b.iter()).eq(data[..INLINE].iter()));
        }
    }

    #[test]
    fn mailbox_block_layout() -> Result {
        let m = mailbox_block([&[0xaa; 2], &[0xaa]], 0x1122_3344_5566_7000, 3, 0x5a)?;
        let b = m.as_bytes();
        assert_eq!(&b[0..4], &[0xaa, 0xaa, 0xaa, 0]);
        assert_eq!(
            &b[0x230..0x238],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x70, 0x00]
        );
        assert_eq!(&b[0x238..0x23c], &[0, 0, 0, 3]);
        assert_eq!(b[0x23d], 0x5a);
        // Block signatures stay unset.
        assert_eq!((b[0x23e], b[0x23f]), (0, 0));
        // More data than a block carries is refused.
        assert!(mailbox_block([&[0; BLOCK_DATA], &[0]], 0, 0, 1).is_err());
        // The trailer sits right after the data.
        assert_eq!(
            &b[BLOCK_DATA..],
            mailbox_trailer(0x1122_3344_5566_7000, 3, 0x5a)?.as_bytes()
        );
        Ok(())
    }

    /// Regular slots of a 32-entry queue (the last one is the page slot).
    const REGULAR: u32 = (1 << 31) - 1;
    const PAGE_SLOT: u32 = 1 << 31;

    fn taken(t: Result<Take>) -> Option<(u32, BlockSet)> {
        match t {
            Ok(Take::Taken(slot, blocks)) => Some((slot, blocks)),
            _ => None,
        }
    }

    #[test]
    fn timed_out_slots_come_back_with_their_late_completion() -> Result {
        let mut s = Slots::new(POOL_BLOCKS);
        // Every regular slot times out, more timeouts than slots over time: each time, commands
        // fail at once while all are stuck and run again once the device hands them back.
        for _round in 0..3 {
            let mut claims = KVec::new();
            for _ in 0..31 {
                let c = taken(s.take(REGULAR, 1)).ok_or(EINVAL)?;
                claims.push(c, GFP_KERNEL)?;
            }
            assert!(matches!(s.take(REGULAR, 0), Ok(Take::Wait)));
            for (slot, blocks) in claims {
                s.release(slot, blocks, true);
            }
            assert_eq!(s.stuck, REGULAR);
            assert_eq!(s.lost_blocks(), 31);
            // All regular slots stalled: fail fast, as C.
            assert!(matches!(s.take(REGULAR, 0), Err(e) if e == EAGAIN));
            // The page slot is separate and still works.
            let (slot, blocks) = taken(s.take(PAGE_SLOT, 2)).ok_or(EINVAL)?;
            assert_eq!(slot, 31);
            s.release(slot, blocks, false);
            // Late completions give the slots and their blocks back.
            for slot in 0..31 {
                s.give_back(slot);
            }
            assert_eq!((s.stuck, s.lost_blocks()), (0, 0));
            assert_eq!(s.free_blocks.len(), POOL_BLOCKS);
            assert_eq!(s.free_blocks, BlockSet::first(POOL_BLOCKS));
        }
        Ok(())
    }

    #[test]
    fn stuck_blocks_are_never_reused() -> Result {
        let mut s = Slots::new(8);
        let (slot, blocks) = taken(s.take(REGULAR, 5)).ok_or(EINVAL)?;
        let lost = blocks;
        s.release(slot, blocks, true);
        // Only 3 blocks remain usable: a 4-block command is refused, a 3-block one gets none of
        // the stuck command's blocks.
        assert!(matches!(s.take(REGULAR, 4), Err(e) if e == EINVAL));
        let (slot2, blocks2) = taken(s.take(REGULAR, 3)).ok_or(EINVAL)?;
        assert_ne!(slot2, slot);
        assert_eq!(blocks2.len(), 3);
        assert!(blocks2.iter().all(|b| lost.iter().all(|l| l != b)));
        assert_ne!(s.pages_in_device_hands(), 0);
        s.release(slot2, blocks2, false);
        s.give_back(slot);
        assert_eq!(s.pages_in_device_hands(), 0);
        assert!(taken(s.take(REGULAR, 8)).is_some());
        Ok(())
    }

    #[test]
    fn block_sets_take_the_lowest_blocks_and_name_them_in_order() {
        let mut free = BlockSet::first(8);
        assert_eq!(
            (
                free.len(),
                BlockSet::first(0).len(),
                BlockSet::first(64).len()
            ),
            (8, 0, 64)
        );
        let a = free.take(3);
        assert_eq!(a, Some(BlockSet(0b111)));
        assert_eq!(a.and_then(|a| a.nth(2)), Some(2));
        assert_eq!(a.and_then(|a| a.nth(3)), None);
        // Five left: six cannot be taken, and a failed take takes nothing.
        assert_eq!(free.take(6), None);
        assert_eq!(free.len(), 5);
        let b = free.take(2).unwrap_or_default();
        assert_eq!((b.nth(0), b.nth(1)), (Some(3), Some(4)));
        free.insert_all(b);
        assert_eq!(free, BlockSet(0xf8));
        assert!(free.iter().eq([3u16, 4, 5, 6, 7].into_iter()));
    }

    #[test]
    fn a_stuck_page_slot_fails_page_commands_fast_until_given_back() -> Result {
        let mut s = Slots::new(POOL_BLOCKS);
        let (slot, blocks) = taken(s.take(PAGE_SLOT, 1)).ok_or(EINVAL)?;
        s.release(slot, blocks, true);
        assert!(matches!(s.take(PAGE_SLOT, 1), Err(e) if e == EAGAIN));
        assert!(taken(s.take(REGULAR, 1)).is_some());
        s.give_back(31);
        assert!(taken(s.take(PAGE_SLOT, 1)).is_some());
        Ok(())
    }

    #[test]
    fn error_messages_are_rate_limited_as_the_kernel_default() {
        let mut rl = RateLimit::default();
        for i in 0..RATELIMIT_BURST {
            assert_eq!(rl.admit(i64::from(i)), Some(0));
        }
        for i in 0..25 {
            assert_eq!(rl.admit(100 + i), None);
        }
        // Still within the interval.
        assert_eq!(rl.admit(RATELIMIT_INTERVAL_MS), None);
        // A new interval: printed again, with the count of suppressed messages.
        assert_eq!(rl.admit(RATELIMIT_INTERVAL_MS + 1), Some(26));
        assert_eq!(rl.admit(RATELIMIT_INTERVAL_MS + 2), Some(0));
    }

    #[test]
    fn entry_fields_and_signature() -> Result {
        let mut input = [0u8; 0x20];
        input[..2].copy_from_slice(&op::ACCESS_REG.to_be_bytes());
        input[0x11] = 0x42;
        let e = command_entry([&input[..8], &input[8..]], 0x1000, 0x2000, 0x20, 0x5a)?;
        let b = e.as_bytes();
        assert_eq!((b[0], &b[4..8]), (7, &[0u8, 0, 0, 0x20][..]));
        assert_eq!(&b[0x10..0x12], &[0x08, 0x05]);
        assert_eq!(&b[0x08..0x10], &0x1000u64.to_be_bytes());
        assert_eq!(&b[0x30..0x38], &0x2000u64.to_be_bytes());
        assert_eq!(&b[0x38..0x3c], &[0, 0, 0, 0x20]);
        assert_eq!((b[0x3c], b[0x3f]), (0x5a, 1));
        assert_eq!(b.iter().fold(0u8, |a, b| a ^ b), 0xff);
        // A device-written status reads through the layout.
        let mut done = e.clone();
        done.as_bytes_mut()[0x3f] = 0x04;
        assert_eq!((done.status(), done.ownership()), (2, 0));
        Ok(())
    }
}
