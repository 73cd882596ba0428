// SPDX-License-Identifier: GPL-2.0

//! What user space maps of the device (C's `mlx5_ib_mmap`, `mlx5_ib_mmap_offset` and the UAR
//! object, `MLX5_IB_OBJECT_UAR`).
//!
//! libmlx5 asks for UAR pages with the UAR object's ALLOC method: each is a firmware UAR
//! (ALLOC_UAR) and an entry of its context's mmap table, at the lowest free page offset from
//! `9 << 16` (C's `rdma_user_mmap_entry_insert_range`), which the method answers as the byte
//! offset to `mmap` (the first is 0x900000). The entry lives while the object or a mapping
//! holds it: destroying the object takes the offset away from new mappings, and the last
//! reference frees the UAR (DEALLOC_UAR) and the offset.
//!
//! The legacy offsets (`command << 8 | index` in pages) answer as C's for a context with
//! dynamic UARs only: static UAR pages `EINVAL`, write-combined ones `EPERM` (this driver
//! never has write-combining), contiguous pages `ENOSYS`; the free-running clock's page of the
//! initialization segment maps read-only and uncached, the clock-info page `EOPNOTSUPP`
//! (there is none).

use ib_core::user::spec::{attr, type_out, AttrSpec, DriverUObject, Kind, MethodAttrs, CONST_IN};
use kernel::{
    mm::virt::VmaNew,
    new_mutex,
    page::{PAGE_SHIFT, PAGE_SIZE},
    prelude::*,
    sync::{Arc, Mutex},
    user_mmap::{Caching, UserMaps},
};
use mlx5_core::{
    auxdev::Mlx5Device,
    cmd::commands::Commands,
    ifc::{AllocUar, DeallocUar, DeallocUarIn, PlainIn},
};

/// `MLX5_IB_OBJECT_UAR`.
pub(crate) const OBJECT_UAR: u16 = 0x1008;
/// `MLX5_IB_METHOD_UAR_OBJ_ALLOC`.
pub(crate) const METHOD_UAR_ALLOC: u16 = 0x1000;
/// `MLX5_IB_METHOD_UAR_OBJ_DESTROY`.
pub(crate) const METHOD_UAR_DESTROY: u16 = 0x1001;

/// `MLX5_IB_ATTR_UAR_OBJ_ALLOC_*`.
mod alloc_attr {
    pub(super) const HANDLE: u16 = 0x1000;
    pub(super) const TYPE: u16 = 0x1001;
    pub(super) const MMAP_OFFSET: u16 = 0x1002;
    pub(super) const MMAP_LENGTH: u16 = 0x1003;
    pub(super) const PAGE_ID: u16 = 0x1004;
}
/// `MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE`.
const DESTROY_HANDLE: u16 = 0x1000;

/// `MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF` and `_NC`.
const UAR_TYPE_BF: u64 = 0;
const UAR_TYPE_NC: u64 = 1;

pub(crate) static ALLOC_ATTRS: [AttrSpec; 5] = [
    attr(
        alloc_attr::HANDLE,
        Kind::IdrNew { object: OBJECT_UAR },
        true,
    ),
    attr(alloc_attr::TYPE, CONST_IN, true),
    attr(alloc_attr::PAGE_ID, type_out(4), true),
    attr(alloc_attr::MMAP_LENGTH, type_out(4), true),
    attr(alloc_attr::MMAP_OFFSET, type_out(8), true),
];

pub(crate) static DESTROY_ATTRS: [AttrSpec; 1] = [attr(
    DESTROY_HANDLE,
    Kind::IdrDestroy { object: OBJECT_UAR },
    true,
)];

/// The legacy mmap commands (`MLX5_IB_MMAP_*`).
mod cmd {
    pub(super) const REGULAR_PAGE: u64 = 0;
    pub(super) const GET_CONTIGUOUS_PAGES: u64 = 1;
    pub(super) const WC_PAGE: u64 = 2;
    pub(super) const NC_PAGE: u64 = 3;
    pub(super) const CORE_CLOCK: u64 = 5;
    pub(super) const ALLOC_WC: u64 = 6;
    pub(super) const CLOCK_INFO: u64 = 7;
}

/// The first and last page offsets of the table (C's `MLX5_IB_MMAP_OFFSET_START << 16` and
/// `(MLX5_IB_MMAP_OFFSET_END << 16) + 0xffff`).
const FIRST_PGOFF: u32 = 9 << 16;
const LAST_PGOFF: u32 = (255 << 16) + 0xffff;

/// The table's key of a VMA's page offset (C's `mlx5_vma_to_pgoff`: the command above the
/// extended index).
fn table_key(pgoff: u64) -> u64 {
    let command = (pgoff >> 8) & 0xff;
    let index = (pgoff & 0xff) | (((pgoff >> 16) & 0xff) << 8);
    (command << 16) | index
}

/// The byte offset user space maps a table entry at (C's `mlx5_entry_to_mmap_offset`).
fn mmap_offset(pgoff: u32) -> u64 {
    let command = u64::from(pgoff >> 16) & 0xffff;
    let index = u64::from(pgoff) & 0xffff;
    (((index >> 8) << 16) | (command << 8) | (index & 0xff)) << PAGE_SHIFT
}

/// A UAR page of a user context (C's `mlx5_user_mmap_entry` of type `UAR_NC`).
struct UserUar {
    cmds: Commands,
    /// The firmware's UAR index.
    index: u32,
    /// Its physical address (in BAR 0).
    address: u64,
    /// Its entry's page offset in the table, freed with it.
    pgoff: u32,
    table: Arc<MmapTable>,
}

/// DEALLOC_UAR of UAR `index`; a failure is logged (the UAR stays the firmware's).
fn free_uar(cmds: &Commands, index: u32) {
    let r = DeallocUarIn::new()
        .uar(index.into())
        .and_then(|q| cmds.exec::<DeallocUar>(&q));
    if let Err(e) = r {
        pr_warn!(
            "mlx5_ib: DEALLOC_UAR {:#x} failed: err {}\n",
            index,
            e.to_errno()
        );
    }
}

impl Drop for UserUar {
    /// The last reference (object or mapping) went: the UAR goes back to the firmware (C's
    /// `mlx5_ib_mmap_free`), and its offset is free again.
    fn drop(&mut self) {
        free_uar(&self.cmds, self.index);
        self.table.release(self.pgoff);
    }
}

/// One offset of the table: reserved while its UAR exists, mappable while its object does.
struct Slot {
    pgoff: u32,
    uar: Option<Arc<UserUar>>,
}

/// A user context's mmap table (C's `ucontext->mmap_xa` for mlx5's entries).
#[pin_data]
pub(crate) struct MmapTable {
    #[pin]
    slots: Mutex<KVec<Slot>>,
}

impl MmapTable {
    /// An empty table.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                slots <- new_mutex!(KVec::new(), "mlx5_ib::mmap::MmapTable::slots"),
            }),
            GFP_KERNEL,
        )
    }

    /// Reserves the lowest free offset (`ENOMEM` when all are taken, as C's `xa` range).
    fn reserve(&self) -> Result<u32> {
        let mut slots = self.slots.lock();
        let mut pgoff = FIRST_PGOFF;
        for s in slots.iter() {
            if s.pgoff != pgoff {
                break;
            }
            pgoff += 1;
        }
        if pgoff > LAST_PGOFF {
            return Err(ENOMEM);
        }
        let at = slots.partition_point(|s| s.pgoff < pgoff);
        slots.reserve(1, GFP_KERNEL)?;
        slots
            .insert_within_capacity(at, Slot { pgoff, uar: None })
            .map_err(|_| ENOMEM)?;
        Ok(pgoff)
    }

    /// Makes reserved offset `pgoff` map `uar`.
    fn publish(&self, pgoff: u32, uar: &Arc<UserUar>) {
        if let Some(s) = self.slots.lock().iter_mut().find(|s| s.pgoff == pgoff) {
            s.uar = Some(uar.clone());
        }
    }

    /// Takes offset `pgoff` away from new mappings (C's `rdma_user_mmap_entry_remove`); the
    /// table's reference is returned, to be dropped without the lock.
    fn unpublish(&self, pgoff: u32) -> Option<Arc<UserUar>> {
        self.slots
            .lock()
            .iter_mut()
            .find(|s| s.pgoff == pgoff)
            .and_then(|s| s.uar.take())
    }

    /// Frees offset `pgoff` (its UAR is gone).
    fn release(&self, pgoff: u32) {
        let mut slots = self.slots.lock();
        if let Some(i) = slots.iter().position(|s| s.pgoff == pgoff) {
            let _ = slots.remove(i);
        }
    }

    /// The UAR mapped at table key `key`, if its object still exists.
    fn lookup(&self, key: u64) -> Option<Arc<UserUar>> {
        self.slots
            .lock()
            .iter()
            .find(|s| u64::from(s.pgoff) == key)
            .and_then(|s| s.uar.clone())
    }
}

/// A UAR object (what user space's handle names): destroying it unpublishes its offset.
struct UarObject {
    uar: Option<Arc<UserUar>>,
}

impl Drop for UarObject {
    fn drop(&mut self) {
        if let Some(uar) = self.uar.take() {
            let table = uar.table.clone();
            let pgoff = uar.pgoff;
            // Dropped in this order: the table's reference, then the object's (which may be the
            // last: DEALLOC_UAR, then the offset is freed).
            drop(table.unpublish(pgoff));
            drop(uar);
        }
    }
}

/// UAR_OBJ_ALLOC's type: only non-cached UARs are made (`EOPNOTSUPP` for an unknown type, and
/// for blue-flame, which needs write-combining, which this driver never has).
fn uar_type(ty: u64) -> Result {
    if ty != UAR_TYPE_BF && ty != UAR_TYPE_NC {
        return Err(EOPNOTSUPP);
    }
    if ty == UAR_TYPE_BF {
        return Err(EOPNOTSUPP);
    }
    Ok(())
}

/// UAR_OBJ_ALLOC (C's handler and `alloc_uar_entry`): the type must be blue-flame or
/// non-cached (`EINVAL` past `u32`, `EOPNOTSUPP` otherwise), and blue-flame needs
/// write-combining, which this driver never has (`EOPNOTSUPP`). Answers the page's offset,
/// length and firmware index.
pub(crate) fn uar_alloc(
    dev: &Mlx5Device,
    cmds: &Commands,
    table: &Arc<MmapTable>,
    attrs: &dyn MethodAttrs,
) -> Result<DriverUObject> {
    uar_type(attrs.get_const(alloc_attr::TYPE, u32::MAX.into())?)?;
    let pgoff = table.reserve()?;
    let index = match cmds.exec::<AllocUar>(&PlainIn::new()) {
        Ok(out) => out.uar() as u32,
        Err(e) => {
            table.release(pgoff);
            return Err(e);
        }
    };
    // A firmware index outside BAR 0 is never mapped: the allocation fails.
    let made = dev.uar_page_address(index).and_then(|address| {
        Ok(Arc::new(
            UserUar {
                cmds: cmds.clone(),
                index,
                address,
                pgoff,
                table: table.clone(),
            },
            GFP_KERNEL,
        )?)
    });
    // From here the UAR is freed (and the offset released) when the last reference goes.
    let uar = match made {
        Ok(u) => u,
        Err(e) => {
            free_uar(cmds, index);
            table.release(pgoff);
            return Err(e);
        }
    };
    table.publish(pgoff, &uar);
    let obj = KBox::new(UarObject { uar: Some(uar) }, GFP_KERNEL)?;
    attrs.copy_to(alloc_attr::MMAP_OFFSET, &mmap_offset(pgoff).to_le_bytes())?;
    attrs.copy_to(alloc_attr::PAGE_ID, &index.to_le_bytes())?;
    attrs.copy_to(alloc_attr::MMAP_LENGTH, &(PAGE_SIZE as u32).to_le_bytes())?;
    Ok(obj)
}

/// Whether `vma` is a shared mapping.
fn vma_shared(vma: &VmaNew) -> bool {
    vma.flags() & kernel::mm::virt::flags::SHARED != 0
}

/// What a mapping's offset names.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// The free-running clock's page, read-only.
    CoreClock,
    /// The table entry of this key ([`table_key`]).
    Table(u64),
}

/// C's decoding of `mlx5_ib_mmap`'s offset for a context with dynamic UARs: what a mapping of
/// `size` bytes at page offset `pgoff` names (`shared`, `writable`, `executable`: the VMA's
/// flags), or C's errno for it.
fn target(
    pgoff: u64,
    size: usize,
    shared: bool,
    writable: bool,
    executable: bool,
) -> Result<Target> {
    match (pgoff >> 8) & 0xff {
        cmd::WC_PAGE | cmd::ALLOC_WC => Err(EPERM),
        // Static UAR pages: this context has none (C's `uar_mmap` with `lib_uar_dyn`).
        cmd::REGULAR_PAGE | cmd::NC_PAGE => Err(EINVAL),
        cmd::GET_CONTIGUOUS_PAGES => Err(ENOSYS),
        cmd::CORE_CLOCK => {
            if size != PAGE_SIZE {
                return Err(EINVAL);
            }
            if writable {
                return Err(EPERM);
            }
            Ok(Target::CoreClock)
        }
        cmd::CLOCK_INFO => {
            if size != PAGE_SIZE || !shared {
                return Err(EINVAL);
            }
            // C: only index 0 (`MLX5_IB_CLOCK_INFO_V1`) exists; then write or exec access is
            // refused; then there is no clock-info page on this device.
            if pgoff & 0xff != 0 {
                return Err(EOPNOTSUPP);
            }
            if writable || executable {
                return Err(EPERM);
            }
            Err(EOPNOTSUPP)
        }
        _ => Ok(Target::Table(table_key(pgoff))),
    }
}

/// Maps what `vma`'s offset names (C's `mlx5_ib_mmap` for a context with dynamic UARs).
pub(crate) fn mmap(
    dev: &Mlx5Device,
    table: &Arc<MmapTable>,
    vma: &VmaNew,
    maps: &Arc<UserMaps>,
) -> Result {
    let pgoff = kernel::user_mmap::pgoff(vma);
    let size = vma.end() - vma.start();
    let shared = vma_shared(vma);
    match target(pgoff, size, shared, vma.writable(), vma.executable())? {
        Target::CoreClock => {
            vma.try_clear_maywrite()?;
            // The clock is 8 bytes in a 4 KiB page of the BAR: a larger page would map the
            // device's neighbouring registers too (C's `EOPNOTSUPP`, main.c:2773).
            if PAGE_SIZE > 4096 {
                return Err(EOPNOTSUPP);
            }
            let pfn = (dev.clock_page_address()? >> PAGE_SHIFT) as usize;
            maps.map_io(vma, pfn, PAGE_SIZE, Caching::Uncached, None)
        }
        Target::Table(key) => {
            let uar = table.lookup(key).ok_or(EINVAL)?;
            let pfn = (uar.address >> PAGE_SHIFT) as usize;
            maps.map_io(vma, pfn, PAGE_SIZE, Caching::Uncached, Some(uar))
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_mmap)]
mod tests {
    use super::*;

    #[test]
    fn offsets_as_c() {
        // The first dynamic entry of a context: byte offset 0x900000, which maps back to it.
        assert_eq!(mmap_offset(FIRST_PGOFF), 0x90_0000);
        assert_eq!(table_key(0x90_0000 >> PAGE_SHIFT), u64::from(FIRST_PGOFF));
        // Index 0x123 of command 9: the high index byte above the command.
        let pgoff = FIRST_PGOFF + 0x123;
        assert_eq!(
            mmap_offset(pgoff),
            ((0x1 << 16) | (9 << 8) | 0x23) << PAGE_SHIFT
        );
        assert_eq!(
            table_key(mmap_offset(pgoff) >> PAGE_SHIFT),
            u64::from(pgoff)
        );
        // The legacy clock page.
        assert_eq!(table_key(0x500), 5 << 16);
    }

    /// `uverbs_badinput`'s mmap cases decided by the offset and the VMA's flags (the byte
    /// offsets it maps at; one page unless said).
    #[test]
    fn offsets_decoded_as_c() {
        let at = |off: u64, pages: usize, shared: bool, w: bool, x: bool| {
            target(off >> PAGE_SHIFT, pages * PAGE_SIZE, shared, w, x)
        };
        // Dynamic UAR entries: the table's key (its lookup decides: 0x902000 has none).
        assert_eq!(
            at(0x90_0000, 1, true, true, false),
            Ok(Target::Table(FIRST_PGOFF.into()))
        );
        assert_eq!(
            at(0x90_2000, 1, true, true, false),
            Ok(Target::Table(u64::from(FIRST_PGOFF) + 2))
        );
        // Static UAR pages (regular, non-cached): EINVAL; write-combined (either): EPERM;
        // contiguous pages: ENOSYS.
        assert_eq!(at(0, 1, true, true, false), Err(EINVAL));
        assert_eq!(at(0x30_0000, 1, true, true, false), Err(EINVAL));
        assert_eq!(at(0x20_0000, 1, true, true, false), Err(EPERM));
        assert_eq!(at(0x60_0000, 1, true, true, false), Err(EPERM));
        assert_eq!(at(0x10_0000, 1, true, false, false), Err(ENOSYS));
        // The core clock: one page, read-only.
        assert_eq!(at(0x50_0000, 1, true, false, false), Ok(Target::CoreClock));
        assert_eq!(at(0x50_0000, 1, false, false, false), Ok(Target::CoreClock));
        assert_eq!(at(0x50_0000, 1, true, true, false), Err(EPERM));
        assert_eq!(at(0x50_0000, 2, true, false, false), Err(EINVAL));
        assert_eq!(at(0x50_0000, 2, true, true, false), Err(EINVAL));
        // Clock info: size and sharing, then the index (only 0), then write or exec access,
        // then there is none.
        assert_eq!(at(0x70_2000, 1, true, false, false), Err(EOPNOTSUPP));
        assert_eq!(at(0x70_2000, 1, true, true, false), Err(EOPNOTSUPP));
        assert_eq!(at(0x70_0000, 1, false, false, false), Err(EINVAL));
        assert_eq!(at(0x70_0000, 2, true, false, false), Err(EINVAL));
        assert_eq!(at(0x70_0000, 1, true, true, false), Err(EPERM));
        assert_eq!(at(0x70_0000, 1, true, false, true), Err(EPERM));
        assert_eq!(at(0x70_0000, 1, true, false, false), Err(EOPNOTSUPP));
        // Commands 4 and 8 and up: table keys (nothing is there below 9).
        assert_eq!(
            at(0x40_0000, 1, true, true, false),
            Ok(Target::Table(4 << 16))
        );
        assert_eq!(
            at(0xff0_0000, 1, true, true, false),
            Ok(Target::Table(0xff << 16))
        );
        // The UAR object's types: non-cached only.
        assert_eq!(uar_type(UAR_TYPE_NC), Ok(()));
        assert_eq!(uar_type(UAR_TYPE_BF), Err(EOPNOTSUPP));
        assert_eq!(uar_type(2), Err(EOPNOTSUPP));
        assert_eq!(uar_type(u32::MAX.into()), Err(EOPNOTSUPP));
    }

    #[test]
    fn table_reserves_lowest_free() -> Result {
        let t = MmapTable::new()?;
        assert_eq!(t.reserve()?, FIRST_PGOFF);
        assert_eq!(t.reserve()?, FIRST_PGOFF + 1);
        t.release(FIRST_PGOFF);
        assert_eq!(t.reserve()?, FIRST_PGOFF);
        assert!(t.lookup(FIRST_PGOFF.into()).is_none());
        Ok(())
    }
}
