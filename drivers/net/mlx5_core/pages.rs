// SPDX-License-Identifier: GPL-2.0

//! Firmware pages: host memory the device asks for (QUERY_PAGES) and the driver lends
//! (MANAGE_PAGES give), then takes back (MANAGE_PAGES take) before the function is disabled.

use crate::cmdq::CmdQueue;
use crate::dma_page::DmaPage;
use crate::ifc::{ManagePages, ManagePagesIn, QueryPages, QueryPagesIn};
use crate::init_segment::Bar0;
use kernel::{
    device,
    prelude::*,
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

const MANAGE_GIVE: u64 = 1;
const MANAGE_TAKE: u64 = 2;
/// Size of one page address in MANAGE_PAGES input (give) and output (take).
const PAS_ENTRY: usize = 8;
/// Most pages one take asks for: what fits the output mailboxes the C driver uses.
const TAKE_BATCH: usize = 768;

/// Something lent to the device, known to it by its DMA address.
pub(crate) trait Lent {
    /// The address the device knows it by.
    fn dma_address(&self) -> u64;
}

impl Lent for DmaPage {
    fn dma_address(&self) -> u64 {
        DmaPage::dma_address(self)
    }
}

/// Removes (and so drops) from `lent` each item whose address the device returned. Returns how
/// many matched and how many addresses matched nothing lent.
pub(crate) fn take_back<P: Lent>(
    lent: &mut KVec<P>,
    returned: impl Iterator<Item = u64>,
) -> (usize, usize) {
    let (mut matched, mut unknown) = (0, 0);
    for addr in returned {
        match lent.iter().position(|p| p.dma_address() == addr) {
            Some(k) if lent.remove(k).is_ok() => matched += 1,
            _ => unknown += 1,
        }
    }
    (matched, unknown)
}

/// The pages lent to firmware, and counts of what moved.
pub(crate) struct FwPages {
    lent: KVec<DmaPage>,
    given: u64,
    reclaimed: u64,
    /// How many the firmware holds, for debugfs (`fw_pages_total`).
    held: Arc<Atomic<u32>>,
}

impl FwPages {
    /// No pages lent yet.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            lent: KVec::new(),
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
            .store(u32::try_from(self.lent.len()).unwrap_or(u32::MAX), Relaxed);
    }

    /// Pages the device holds now.
    pub(crate) fn outstanding(&self) -> usize {
        self.lent.len()
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
        self.give(cmd, dev, bar, n as usize, out.function_id())
    }

    /// Allocates `n` pages and lends them to the device.
    fn give(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        n: usize,
        function_id: u64,
    ) -> Result {
        // The count comes from the device: no more pages are allocated than one command can
        // lend (the rest of such a request would be refused by the queue anyway).
        let most = cmd.max_input_len().saturating_sub(ManagePagesIn::SIZE) / PAS_ENTRY;
        if n > most {
            dev_err!(
                dev,
                "firmware asked for {n} pages, more than one command lends ({most})\n"
            );
            return Err(EINVAL);
        }
        let hdr = ManagePagesIn::new()
            .op_mod(MANAGE_GIVE)?
            .function_id(function_id)?
            .input_num_entries(n as u64)?;
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut pas = KVec::with_capacity(n * PAS_ENTRY, GFP_KERNEL)?;
        for _ in 0..n {
            let p = DmaPage::new(dev)?;
            pas.extend_from_slice(&p.dma_address().to_be_bytes(), GFP_KERNEL)?;
            pages.push(p, GFP_KERNEL)?;
        }
        // Room to record them is made first: once the device accepts them, they must not be
        // dropped (freed) for want of memory.
        self.lent.reserve(n, GFP_KERNEL)?;
        let slot = cmd.page_slot();
        cmd.exec_var::<ManagePages>(dev, bar, Some(slot), &hdr, &pas, 0)?;
        self.given += n as u64;
        for p in pages.drain_all() {
            if let Err(kernel::alloc::kvec::PushError(p)) = self.lent.push_within_capacity(p) {
                // Unreachable after the reserve above; never free a page the device holds.
                core::mem::forget(p);
            }
        }
        self.update_held();
        Ok(())
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
            return self.give(cmd, dev, bar, num as usize, function_id);
        }
        let want = (num.unsigned_abs() as usize)
            .min(self.lent.len())
            .min(TAKE_BATCH);
        if want > 0 && self.reclaim_some(cmd, dev, bar, want) == 0 {
            return Err(EIO);
        }
        Ok(())
    }

    /// Asks for `want` pages back in one command; returns how many came back (0 when the
    /// command failed or returned nothing usable).
    fn reclaim_some(
        &mut self,
        cmd: &CmdQueue,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        want: usize,
    ) -> usize {
        let slot = cmd.page_slot();
        let r = ManagePagesIn::new()
            .op_mod(MANAGE_TAKE)
            .and_then(|q| q.input_num_entries(want as u64))
            .and_then(|q| {
                cmd.exec_var::<ManagePages>(dev, bar, Some(slot), &q, &[], want * PAS_ENTRY)
            });
        let (out, pas) = match r {
            Ok(o) => o,
            Err(e) => {
                dev_err!(dev, "failed reclaiming pages: err {}\n", e.to_errno());
                return 0;
            }
        };
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
        while !self.lent.is_empty() {
            if cmd.device_in_error() {
                // The device is dead (as the C driver assumes in this state): nothing will write
                // the pages any more, so they are freed without asking for them back.
                dev_warn!(
                    dev,
                    "device in error state: releasing {} firmware pages without reclaim\n",
                    self.lent.len()
                );
                self.reclaimed += self.lent.len() as u64;
                self.lent.clear();
                self.update_held();
                break;
            }
            let want = self.lent.len().min(TAKE_BATCH);
            if self.reclaim_some(cmd, dev, bar, want) == 0 {
                break;
            }
        }
        if !self.lent.is_empty() {
            dev_err!(
                dev,
                "firmware did not return {} pages; they stay allocated\n",
                self.lent.len()
            );
            // Leaked on purpose: freeing memory the device may still write is worse.
            core::mem::forget(core::mem::take(&mut self.lent));
        }
    }
}

impl Drop for FwPages {
    fn drop(&mut self) {
        if !self.lent.is_empty() {
            // Dropped without a reclaim (a probe that failed half-way): the device may still
            // write these pages, so they are never freed.
            pr_err!(
                "{} firmware pages were never reclaimed; they stay allocated\n",
                self.lent.len()
            );
            core::mem::forget(core::mem::take(&mut self.lent));
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_pages)]
mod tests {
    use super::*;

    struct FakePage(u64);

    impl Lent for FakePage {
        fn dma_address(&self) -> u64 {
            self.0
        }
    }

    fn lent(addrs: &[u64]) -> KVec<FakePage> {
        let mut v = KVec::new();
        for &a in addrs {
            assert!(v.push(FakePage(a), GFP_KERNEL).is_ok());
        }
        v
    }

    #[test]
    fn returned_pages_are_taken_back_once() {
        let mut l = lent(&[0x1000, 0x2000, 0x3000]);
        assert_eq!(take_back(&mut l, [0x2000u64, 0x1000].into_iter()), (2, 0));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].0, 0x3000);
        // The same page twice, and one never lent: both counted as unknown.
        assert_eq!(
            take_back(&mut l, [0x2000u64, 0x9000, 0x3000].into_iter()),
            (1, 2)
        );
        assert!(l.is_empty());
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
        let q = ManagePagesIn::new()
            .op_mod(MANAGE_GIVE)?
            .input_num_entries(3)?;
        let wire = crate::ifc::encode::<ManagePages>(&q)?;
        assert_eq!(&wire.as_bytes()[0..2], &[0x01, 0x08]);
        assert_eq!(&wire.as_bytes()[12..16], &[0, 0, 0, 3]);
        // A count wider than its 32-bit field is refused.
        assert!(ManagePagesIn::new().input_num_entries(1 << 32).is_err());
        Ok(())
    }
}
