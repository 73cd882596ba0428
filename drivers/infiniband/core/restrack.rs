// SPDX-License-Identifier: GPL-2.0

//! Resource tracking (C's restrack): the live verbs objects of a device, counted per type for
//! netlink's `RES_GET` summary and listed per type, by id, for the `RES_{PD,CQ,QP,MR,SRQ}_GET`
//! commands (`rdma res show pd|cq|qp|mr|srq`).
//!
//! Ids are allocated as C's `rdma_restrack_add` does: per device and per type, cyclically from
//! 0 (`xa_alloc_cyclic` on an `XA_FLAGS_ALLOC` xarray), except for QPs, whose id is their QP
//! number. An object whose id cannot be had (a QP number already listed, no memory) still works
//! but is not listed, as in C.
//!
//! User objects (contexts, their PDs and MRs) record the task that created them instead, which
//! netlink reports as a pid (C's `rdma_restrack_set_name(res, NULL)`).
//!
//! Every kernel object records the kernel module that created it ([`KernName`], C's `kern_name` from
//! `KBUILD_MODNAME`): the creating verbs take it as an argument, made by [`kern_name!`] from
//! the calling module's own metadata, so a consumer cannot create an object without it (MRs and
//! SRQs take their PD's, as C's `rdma_restrack_parent_name`).
//!
//! # Lifetime of the listed pointers
//!
//! The lists hold raw pointers to the objects (which live in `Arc`s, so they do not move). An
//! object lists itself once it is in its `Arc` and unlists itself first thing in its `Drop`,
//! before any of its fields (its driver state included) goes; both happen under the lists'
//! mutex, and the pointers are only followed with that mutex held. Netlink fills an object's
//! entry with the mutex held, so destroying an object waits for a fill in progress (C's
//! `rdma_restrack_begin_del` waiting for the entry's references).

pub(crate) mod view;

use core::{any::Any, ptr::NonNull};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Mutex,
    },
    ModuleMetadata,
};

/// Tracked object types, in the order and with the names of C's `RES_GET` summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResType {
    /// Protection domains.
    Pd,
    /// Completion queues.
    Cq,
    /// Queue pairs.
    Qp,
    /// Connection manager ids.
    CmId,
    /// Memory regions.
    Mr,
    /// User contexts.
    Ctx,
    /// Shared receive queues.
    Srq,
}

/// Number of tracked types.
const TYPES: usize = 7;

impl ResType {
    /// Every type, in summary order.
    pub const ALL: [ResType; TYPES] = [
        ResType::Pd,
        ResType::Cq,
        ResType::Qp,
        ResType::CmId,
        ResType::Mr,
        ResType::Ctx,
        ResType::Srq,
    ];

    /// The name netlink reports (`RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME`).
    pub fn name(self) -> &'static CStr {
        match self {
            ResType::Pd => c"pd",
            ResType::Cq => c"cq",
            ResType::Qp => c"qp",
            ResType::CmId => c"cm_id",
            ResType::Mr => c"mr",
            ResType::Ctx => c"ctx",
            ResType::Srq => c"srq",
        }
    }
}

/// The kernel module that created a verbs object (C's `rdma_restrack_entry.kern_name`, which
/// `ib_alloc_pd`, `ib_create_cq` and `ib_create_qp` take from the caller's `KBUILD_MODNAME`).
/// Made by [`kern_name!`] in the calling module.
#[derive(Clone, Copy, Debug)]
pub struct KernName(&'static CStr);

impl KernName {
    /// The name of module `M` (what [`kern_name!`] gives in the module `M` declares).
    pub const fn of<M: ModuleMetadata>() -> Self {
        Self(M::NAME)
    }

    /// The name, without its NUL.
    pub fn as_bytes(&self) -> &'static [u8] {
        self.0.to_bytes()
    }
}

/// The [`KernName`] of the module this is expanded in (its `module!` name): what the creating
/// verbs (`Pd::alloc`, `Cq::create`, `QpInit::kern_name`) take.
#[macro_export]
// `crate` is meant: the module whose name is wanted is the caller's.
#[allow(clippy::crate_in_macro_def)]
macro_rules! kern_name {
    () => {
        $crate::restrack::KernName::of::<crate::LocalModule>()
    };
}

/// An object that can be listed in resource tracking. Netlink finds what it is by its type
/// (`view::ResView::of`), as C finds an entry's object with `container_of` by the entry's
/// type.
pub(crate) trait Tracked: Any + Send + Sync {
    /// The kernel module that created the object (`None` for user objects).
    fn creator(&self) -> Option<KernName> {
        None
    }
}

/// One listed object.
struct Entry {
    id: u32,
    obj: NonNull<dyn Tracked>,
}

// SAFETY: `obj` points to a `Tracked` object, which is `Send + Sync`; it is only followed with
// the lists' mutex held, while the object is alive (see the module documentation).
unsafe impl Send for Entry {}

/// The listed objects of one type, sorted by id, and where the next id search starts.
struct Table {
    entries: KVec<Entry>,
    next_id: u32,
}

impl Table {
    const fn new() -> Self {
        Self {
            entries: KVec::new(),
            next_id: 0,
        }
    }

    /// The smallest free id at or above `from`, if any.
    fn free_from(&self, from: u32) -> Option<u32> {
        let mut candidate = from;
        let start = self.entries.partition_point(|e| e.id < from);
        for e in &self.entries[start..] {
            if e.id != candidate {
                break;
            }
            candidate = candidate.checked_add(1)?;
        }
        Some(candidate)
    }

    /// Lists `obj` under `id`, or under the next free id (cyclically, as `xa_alloc_cyclic`);
    /// `None` when the id is taken or there is no memory.
    fn insert(&mut self, id: Option<u32>, obj: NonNull<dyn Tracked>) -> Option<u32> {
        let id = match id {
            Some(id) => {
                if self.entries.iter().any(|e| e.id == id) {
                    return None;
                }
                id
            }
            None => {
                let id = self.free_from(self.next_id).or_else(|| self.free_from(0))?;
                self.next_id = id.wrapping_add(1);
                id
            }
        };
        let at = self.entries.partition_point(|e| e.id < id);
        self.entries.reserve(1, GFP_KERNEL).ok()?;
        self.entries
            .insert_within_capacity(at, Entry { id, obj })
            .ok()?;
        Some(id)
    }

    /// Unlists the object at `addr`, if it is listed.
    fn remove(&mut self, addr: *const ()) {
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| core::ptr::eq(e.obj.as_ptr().cast::<()>(), addr))
        {
            let _ = self.entries.remove(i);
        }
    }
}

/// Live objects of one device: counts and lists per type.
#[pin_data]
pub struct Restrack {
    counts: [Atomic<u64>; TYPES],
    #[pin]
    tables: Mutex<[Table; TYPES]>,
}

impl Restrack {
    /// Nothing tracked.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            counts: [const { Atomic::new(0) }; TYPES],
            tables <- new_mutex!([const { Table::new() }; TYPES], "ib_core::restrack::tables"),
        })
    }

    /// An object of type `t` was created.
    pub(crate) fn add(&self, t: ResType) {
        self.counts[t as usize].fetch_add(1, Relaxed);
    }

    /// An object of type `t` was destroyed.
    pub(crate) fn remove(&self, t: ResType) {
        self.counts[t as usize].fetch_sub(1, Relaxed);
    }

    /// Live objects of type `t`.
    pub fn count(&self, t: ResType) -> u64 {
        self.counts[t as usize].load(Relaxed)
    }

    /// Listed kernel objects of type `t` that module `owner` created (what `rdma res show`
    /// lists with `comm [<owner>]`).
    pub fn count_of(&self, t: ResType, owner: KernName) -> u64 {
        let mut n = 0;
        self.visit(t, 0, |_, _, _, obj| {
            if obj
                .creator()
                .is_some_and(|k| k.as_bytes() == owner.as_bytes())
            {
                n += 1;
            }
            true
        });
        n
    }

    /// Lists `obj` under type `t`, with id `id` (QPs: their number) or a new one; returns the
    /// id, `None` if it is not listed (C's `rdma_restrack_add`, which fails silently too).
    ///
    /// # Safety
    ///
    /// `obj` is alive until [`Restrack::untrack`] is called for it, and does not move.
    pub(crate) unsafe fn track(
        &self,
        t: ResType,
        id: Option<u32>,
        obj: *const dyn Tracked,
    ) -> Option<u32> {
        let obj = NonNull::new(obj.cast_mut())?;
        self.tables.lock()[t as usize].insert(id, obj)
    }

    /// Unlists `obj` (nothing if it is not listed); returns once no netlink fill uses it.
    pub(crate) fn untrack(&self, t: ResType, obj: *const dyn Tracked) {
        self.tables.lock()[t as usize].remove(obj.cast::<()>());
    }

    /// Calls `f` on the listed objects of type `t` in id order, from position `start` on, with
    /// every list (for objects that show others, as an SRQ its QPs), their position and id,
    /// until it returns `false`.
    pub(crate) fn visit(
        &self,
        t: ResType,
        start: usize,
        mut f: impl FnMut(&Lists<'_>, usize, u32, &dyn Tracked) -> bool,
    ) {
        let tables = self.tables.lock();
        let lists = Lists(&tables);
        for (pos, e) in tables[t as usize].entries.iter().enumerate().skip(start) {
            // SAFETY: Listed objects are alive while the lock is held (module documentation).
            let obj = unsafe { e.obj.as_ref() };
            if !f(&lists, pos, e.id, obj) {
                break;
            }
        }
    }

    /// Calls `f` on every list and the object of type `t` with id `id`; `None` if there is
    /// none.
    pub(crate) fn with<R>(
        &self,
        t: ResType,
        id: u32,
        f: impl FnOnce(&Lists<'_>, &dyn Tracked) -> R,
    ) -> Option<R> {
        let tables = self.tables.lock();
        let e = tables[t as usize].entries.iter().find(|e| e.id == id)?;
        // SAFETY: Listed objects are alive while the lock is held (module documentation).
        Some(f(&Lists(&tables), unsafe { e.obj.as_ref() }))
    }
}

/// Every list of a device, while their lock is held.
pub(crate) struct Lists<'a>(&'a [Table; TYPES]);

impl Lists<'_> {
    /// Calls `f` on each listed object of type `t`, in id order, with its id.
    pub(crate) fn each(&self, t: ResType, mut f: impl FnMut(u32, &dyn Tracked)) {
        for e in &self.0[t as usize].entries {
            // SAFETY: Listed objects are alive while the lock is held, which it is while `self`
            // exists (module documentation).
            f(e.id, unsafe { e.obj.as_ref() });
        }
    }
}
