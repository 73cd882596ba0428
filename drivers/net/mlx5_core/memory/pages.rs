// SPDX-License-Identifier: GPL-2.0

//! Firmware pages: host memory the device asks for (QUERY_PAGES) and the driver lends
//! (MANAGE_PAGES give), then takes back (MANAGE_PAGES take) before the function is disabled.

use crate::cmd::queue::CmdQueue;
use crate::ifc::{ManagePages, ManagePagesIn, ManagePagesOut, QueryPages, QueryPagesIn};
use crate::init_segment::Bar0;
use crate::memory::dma_page::DmaPage;
use kernel::{
    device,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

/// Which request QUERY_PAGES answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageRequest {
    /// Pages needed to boot.
    Boot = 1,
    /// Pages needed before INIT_HCA.
    Init = 2,
}

/// MANAGE_PAGES op_mod telling firmware its request cannot be met (C's
/// `MLX5_PAGES_CANT_GIVE`).
const MANAGE_CANT_GIVE: u64 = 0;
const MANAGE_GIVE: u64 = 1;
const MANAGE_TAKE: u64 = 2;
/// Size of one page address in MANAGE_PAGES input (give) and output (take).
const PAS_ENTRY: usize = 8;
/// Most pages one take asks for: what fits the output mailboxes the C driver uses.
const TAKE_BATCH: usize = 768;
/// Pages a take asks for when the output of a whole batch could not be allocated: what
/// `CmdQueue::exec_small` reads without allocating (16 bytes of header, 8 per page, 64 in all),
/// so the pages come back at teardown even when memory is short.
const TAKE_FEW: usize = 6;

/// Most pages the driver lends the device in all (256 MiB of 4 KiB pages), whatever it asks:
/// firmware asking for more is answered "cannot give", as C answers an allocation failure.
pub(crate) const MAX_HELD: usize = 1 << 16;

/// Whether a request for `n` more pages can be met with `held` lent, in MANAGE_PAGES commands
/// of at most `per_command` pages each.
pub(crate) fn may_give(n: usize, held: usize, per_command: usize) -> bool {
    per_command > 0 && held.saturating_add(n) <= MAX_HELD
}

/// Removes (and so drops) from `lent` each item whose address the device returned, in
/// O(log n) each. Returns how many matched and how many addresses matched nothing lent.
pub(crate) fn take_back<P>(
    lent: &mut RBTree<u64, P>,
    returned: impl Iterator<Item = u64>,
) -> (usize, usize) {
    let (mut matched, mut unknown) = (0, 0);
    for addr in returned {
        match lent.remove(&addr) {
            Some(_) => matched += 1,
            None => unknown += 1,
        }
    }
    (matched, unknown)
}

/// Why pages could not be given.
enum GiveError {
    /// Before anything was sent (bound, allocation): the device is told "cannot give".
    Local(Error),
    /// MANAGE_PAGES itself failed.
    Command(Error),
}

/// The pages lent to firmware, and counts of what moved.
pub(crate) struct FwPages {
    /// By DMA address.
    lent: RBTree<u64, DmaPage>,
    /// How many `lent` holds.
    count: usize,
    /// The function the pages were given for (reclaimed for the same).
    function_id: u64,
    given: u64,
    reclaimed: u64,
    /// How many the firmware holds, for debugfs (`fw_pages_total`).
    held: Arc<Atomic<u32>>,
}

impl FwPages {
    /// No pages lent yet.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            lent: RBTree::new(),
            count: 0,
            function_id: 0,
            given: 0,
            reclaimed: 0,
            held: Arc::new(Atomic::new(0), GFP_KERNEL)?,
        })
    }

    /// The count of pages the firmware holds, kept up to date.
    pub(crate) fn held_counter(&self) -> Arc<Atomic<u32>> {
        self.held.clone()
    }

    fn update_held(&self) {
        self.held
            .store(u32::try_from(self.count).unwrap_or(u32::MAX), Relaxed);
    }

    /// Pages the device holds now.
    pub(crate) fn outstanding(&self) -> usize {
        self.count
    }

    /// Pages given and reclaimed since load.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (self.given, self.reclaimed)
    }

    /// Asks how many pages `request` needs and gives them.
    pub(crate) fn satisfy(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        request: PageRequest,
    ) -> Result {
        let q = QueryPagesIn::new().op_mod(request as u64)?;
        let out = cmd.exec::<QueryPages>(dev, bar, &q)?;
        // Two's complement: the device may report a negative count.
        let n = out.num_pages() as u32 as i32;
        if n <= 0 {
            return Ok(());
        }
        self.give(cmd, dev, bar, n as usize, out.function_id(), false)
    }

    /// Allocates `n` pages and lends them to the device, in as many MANAGE_PAGES as it takes
    /// (each lends what its mailboxes hold). When the request cannot be met (more than
    /// [`MAX_HELD`] in all, or no memory) and it came as an event (`notify`), the device is told
    /// so with MANAGE_PAGES "cannot give", as C does; pages already lent stay lent.
    fn give(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        n: usize,
        function_id: u64,
        notify: bool,
    ) -> Result {
        let per_command = cmd.max_input_len().saturating_sub(ManagePagesIn::SIZE) / PAS_ENTRY;
        // The count comes from the device: nothing is allocated for a request over the bound.
        let r = if !may_give(n, self.count, per_command) {
            dev_err!(
                dev,
                "firmware asked for {n} pages; {} lent, at most {MAX_HELD} in all\n",
                self.count
            );
            Err(GiveError::Local(ENOMEM))
        } else {
            let mut left = n;
            let mut r = Ok(());
            while left > 0 && r.is_ok() {
                let now = left.min(per_command);
                r = self.try_give(cmd, dev, bar, now, function_id);
                left -= now;
            }
            r
        };
        match r {
            Ok(()) => Ok(()),
            // As C: a give the firmware failed is not answered.
            Err(GiveError::Command(e)) => Err(e),
            Err(GiveError::Local(e)) => {
                if notify {
                    self.cant_give(cmd, dev, bar, function_id);
                }
                Err(e)
            }
        }
    }

    fn try_give(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        n: usize,
        function_id: u64,
    ) -> core::result::Result<(), GiveError> {
        let (pages, nodes, pas) = Self::prepare(dev, n).map_err(GiveError::Local)?;
        let hdr = ManagePagesIn::new()
            .op_mod(MANAGE_GIVE)
            .and_then(|q| q.function_id(function_id))
            .and_then(|q| q.input_num_entries(n as u64))
            .map_err(GiveError::Local)?;
        let slot = cmd.page_slot();
        if let Err(e) = cmd.exec_var::<ManagePages>(dev, bar, Some(slot), &hdr, &pas, 0) {
            if e == ETIMEDOUT {
                // The device may have taken the pages without answering: never freed.
                core::mem::forget(pages);
            }
            return Err(GiveError::Command(e));
        }
        self.lend(pages, nodes, function_id);
        Ok(())
    }

    /// `n` pages, their tree nodes and their address list, allocated before anything is sent.
    #[expect(clippy::type_complexity)]
    fn prepare(
        dev: &device::Device<device::Bound>,
        n: usize,
    ) -> Result<(
        KVec<DmaPage>,
        KVec<RBTreeNodeReservation<u64, DmaPage>>,
        KVec<u8>,
    )> {
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut nodes = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut pas = KVec::with_capacity(n * PAS_ENTRY, GFP_KERNEL)?;
        for _ in 0..n {
            // Pages the device has not been given yet are freed on failure.
            let p = DmaPage::new(dev)?;
            pas.extend_from_slice(&p.dma_address().to_be_bytes(), GFP_KERNEL)?;
            pages.push(p, GFP_KERNEL)?;
            // Room to record them is made first: once the device accepts them, they must not
            // be dropped (freed) for want of memory.
            nodes.push(RBTreeNodeReservation::new(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        Ok((pages, nodes, pas))
    }

    /// Records `pages`, which the device accepted.
    fn lend(
        &mut self,
        mut pages: KVec<DmaPage>,
        mut nodes: KVec<RBTreeNodeReservation<u64, DmaPage>>,
        function_id: u64,
    ) {
        self.given += pages.len() as u64;
        self.function_id = function_id;
        for (p, node) in pages.drain_all().zip(nodes.drain_all()) {
            if let Some(dup) = self.lent.insert(node.into_node(p.dma_address(), p)) {
                // Two pages with one address cannot be; never free one the device may hold.
                core::mem::forget(dup);
            } else {
                self.count += 1;
            }
        }
        self.update_held();
    }

    /// MANAGE_PAGES "cannot give" for `function_id` (C's `page_notify_fail`).
    fn cant_give(
        &self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        function_id: u64,
    ) {
        let slot = cmd.page_slot();
        let r = ManagePagesIn::new()
            .op_mod(MANAGE_CANT_GIVE)
            .and_then(|q| q.function_id(function_id))
            .and_then(|q| cmd.exec_var::<ManagePages>(dev, bar, Some(slot), &q, &[], 0));
        if let Err(e) = r {
            dev_warn!(
                dev,
                "page notify failed func_id({function_id}) err({})\n",
                e.to_errno()
            );
        }
    }

    /// Answers a page request event: gives `num` pages, or takes back `-num` (at most what the
    /// device holds, one command's worth).
    pub(crate) fn on_request(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        function_id: u64,
        num: i32,
    ) -> Result {
        if num > 0 {
            return self.give(cmd, dev, bar, num as usize, function_id, true);
        }
        let want = (num.unsigned_abs() as usize)
            .min(self.count)
            .min(TAKE_BATCH);
        if want > 0 && self.reclaim_some(cmd, dev, bar, want) == 0 {
            return Err(EIO);
        }
        Ok(())
    }

    /// Asks for `want` pages back in one command; returns how many came back (0 when the
    /// command failed or returned nothing usable). When the command's output cannot be
    /// allocated, asks for [`TAKE_FEW`] pages with an output that needs no allocation.
    fn reclaim_some(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        want: usize,
    ) -> usize {
        let slot = Some(cmd.page_slot());
        let function_id = self.function_id;
        let take = |n: usize| {
            ManagePagesIn::new()
                .op_mod(MANAGE_TAKE)
                .and_then(|q| q.function_id(function_id))
                .and_then(|q| q.input_num_entries(n as u64))
        };
        let r = take(want)
            .and_then(|q| cmd.exec_var::<ManagePages>(dev, bar, slot, &q, &[], want * PAS_ENTRY));
        let r = match r {
            Ok((out, pas)) => Ok(self.taken_back(dev, &out, want, &pas)),
            Err(e) if e == ENOMEM => {
                let few = want.min(TAKE_FEW);
                let mut buf = [0u8; TAKE_FEW * PAS_ENTRY];
                let pas = &mut buf[..few * PAS_ENTRY];
                take(few)
                    .and_then(|q| cmd.exec_small::<ManagePages>(dev, bar, slot, &q, pas))
                    .map(|out| self.taken_back(dev, &out, few, pas))
            }
            Err(e) => Err(e),
        };
        r.unwrap_or_else(|e| {
            dev_err!(dev, "failed reclaiming pages: err {}\n", e.to_errno());
            0
        })
    }

    /// Frees the pages a take of `want` returned (`out`, with the addresses in `pas`);
    /// returns how many were ours.
    fn taken_back(
        &mut self,
        dev: &device::Device<device::Bound>,
        out: &ManagePagesOut,
        want: usize,
        pas: &[u8],
    ) -> usize {
        let got = out.output_num_entries() as usize;
        if got == 0 || got > want || got * PAS_ENTRY > pas.len() {
            dev_err!(dev, "firmware returned {got} pages, driver asked {want}\n");
            return 0;
        }
        let addrs = pas.chunks_exact(PAS_ENTRY).take(got).map(|a| {
            let mut b = [0u8; PAS_ENTRY];
            b.copy_from_slice(a);
            u64::from_be_bytes(b)
        });
        // Dropping a page frees it: the device gave it back.
        let (matched, unknown) = take_back(&mut self.lent, addrs);
        self.count -= matched;
        self.reclaimed += matched as u64;
        self.update_held();
        if unknown != 0 {
            dev_err!(
                dev,
                "firmware returned {unknown} page(s) it was never given\n"
            );
        }
        matched
    }

    /// Takes back every page. Pages the device does not return are kept mapped (never freed
    /// under a device that may still write them) and reported.
    pub(crate) fn reclaim_all(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) {
        while self.count != 0 {
            if cmd.device_in_error() {
                // The device is dead (as the C driver assumes in this state): nothing will write
                // the pages any more, so they are freed without asking for them back.
                dev_warn!(
                    dev,
                    "device in error state: releasing {} firmware pages without reclaim\n",
                    self.count
                );
                self.reclaimed += self.count as u64;
                self.lent = RBTree::new();
                self.count = 0;
                self.update_held();
                break;
            }
            let want = self.count.min(TAKE_BATCH);
            if self.reclaim_some(cmd, dev, bar, want) == 0 {
                break;
            }
        }
        if self.count != 0 {
            dev_err!(
                dev,
                "firmware did not return {} pages; they stay allocated\n",
                self.count
            );
            // Leaked on purpose: freeing memory the device may still write is worse.
            core::mem::forget(core::mem::replace(&mut self.lent, RBTree::new()));
            self.count = 0;
        }
    }
}

impl Drop for FwPages {
    fn drop(&mut self) {
        if self.count != 0 {
            // Dropped without a reclaim (a probe that failed half-way): the device may still
            // write these pages, so they are never freed.
            pr_err!(
                "{} firmware pages were never reclaimed; they stay allocated\n",
                self.count
            );
            core::mem::forget(core::mem::replace(&mut self.lent, RBTree::new()));
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_pages)]
mod tests {
    use super::*;

    fn lent(addrs: &[u64]) -> RBTree<u64, ()> {
        let mut v = RBTree::new();
        for &a in addrs {
            assert!(v.try_create_and_insert(a, (), GFP_KERNEL).is_ok());
        }
        v
    }

    #[test]
    fn returned_pages_are_taken_back_once() {
        let mut l = lent(&[0x1000, 0x2000, 0x3000]);
        assert_eq!(take_back(&mut l, [0x2000u64, 0x1000].into_iter()), (2, 0));
        assert!(l.get(&0x3000).is_some());
        assert!(l.get(&0x1000).is_none());
        // The same page twice, and one never lent: both counted as unknown.
        assert_eq!(
            take_back(&mut l, [0x2000u64, 0x9000, 0x3000].into_iter()),
            (1, 2)
        );
        assert!(l.is_empty());
    }

    #[test]
    fn absurd_requests_are_refused_before_allocating() {
        assert!(may_give(48, 0, 1000));
        // More than one command lends: given in several.
        assert!(may_give(1001, 0, 1000));
        // No command can lend any.
        assert!(!may_give(1, 0, 0));
        // More than the driver lends in all, also in several requests.
        assert!(may_give(1000, MAX_HELD - 1000, 1000));
        assert!(!may_give(1, MAX_HELD, 1000));
        assert!(!may_give(MAX_HELD + 1, 0, 1000));
        assert!(!may_give(usize::MAX, 1, usize::MAX));
        // A negative count read as unsigned is huge.
        assert!(!may_give((-1i32) as u32 as usize, 0, 1 << 20));
    }

    #[test]
    fn query_pages_layout() -> Result {
        let q = QueryPagesIn::new().op_mod(PageRequest::Init as u64)?;
        let wire = crate::ifc::encode::<QueryPages>(&q)?;
        assert_eq!(&wire.as_bytes()[0..2], &[0x01, 0x07]);
        assert_eq!(&wire.as_bytes()[6..8], &[0x00, 0x02]);
        let out = crate::ifc::QueryPagesOut::from_bytes(&[
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 48,
        ]);
        assert_eq!(out.num_pages(), 48);
        Ok(())
    }

    #[test]
    fn manage_pages_give_header() -> Result {
        let mut q = ManagePagesIn::new();
        q.set_op_mod(MANAGE_GIVE)?;
        q.set_input_num_entries(3)?;
        let wire = crate::ifc::encode::<ManagePages>(&q)?;
        assert_eq!(&wire.as_bytes()[0..2], &[0x01, 0x08]);
        assert_eq!(&wire.as_bytes()[12..16], &[0, 0, 0, 3]);
        // A count wider than its 32-bit field is refused.
        assert!(ManagePagesIn::new().input_num_entries(1 << 32).is_err());
        Ok(())
    }
}
