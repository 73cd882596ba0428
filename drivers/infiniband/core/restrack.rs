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
//! The lists are C's: an `XArray` per type, allocating ids cyclically. They hold pointers to
//! the objects (which live in `Arc`s or boxes, so they do not move), each in a small box of its
//! own since a `dyn` pointer does not fit an entry. An object lists itself once it is in its
//! `Arc` and unlists itself first thing in its `Drop`, before any of its fields (its driver
//! state included) goes; both happen under the lists' mutex, and the pointers are only
//! followed with that mutex held. Netlink fills an object's
//! entry with the mutex held, so destroying an object waits for a fill in progress (C's
//! `rdma_restrack_begin_del` waiting for the entry's references).

pub(crate) mod cm_id;
pub(crate) mod view;

use core::{any::Any, ptr::NonNull};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Mutex,
    },
    xarray::{AllocKind, XArray},
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

    /// The name a C module passed as its `caller` (`KBUILD_MODNAME`, through C's
    /// `ib_alloc_pd`, `ib_create_cq`, `ib_create_qp` macros); the empty name for none (C keeps
    /// a NULL name, which netlink leaves out).
    ///
    /// # Safety
    ///
    /// `name` is null or a NUL-terminated string that outlives every object named by it (C's
    /// contract: a module's name is in its memory until it is unloaded, after it destroyed its
    /// objects).
    pub(crate) unsafe fn from_c(name: *const kernel::ffi::c_char) -> Self {
        if name.is_null() {
            return Self(c"");
        }
        // SAFETY: `name` is a NUL-terminated string living as long as the objects it names
        // (contract), which is as long as the name is used.
        Self(unsafe { CStr::from_char_ptr(name) })
    }

    /// The name, without its NUL.
    pub fn as_bytes(&self) -> &'static [u8] {
        self.0.to_bytes()
    }

    /// The name with its NUL (what C's `%s` reads).
    pub fn as_bytes_with_nul(&self) -> &'static [u8] {
        self.0.to_bytes_with_nul()
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

/// One listed object: a pointer to it (see the module documentation).
struct Listed(NonNull<dyn Tracked>);

// SAFETY: `Listed` points to a `Tracked` object, which is `Send + Sync`; it is only followed
// with the lists' mutex held, while the object is alive (see the module documentation).
unsafe impl Send for Listed {}

/// The listed objects of one type by id.
type List = XArray<KBox<Listed>>;

/// Ids are below 2^32 (C's `xa_limit_32b`).
const ID_MAX: u32 = u32::MAX;

/// Live objects of one device: counts and lists per type.
#[pin_data]
pub struct Restrack {
    counts: [Atomic<u64>; TYPES],
    /// The lists' lock: listing, unlisting and following a listed pointer happen under it. It
    /// holds where each type's next id search starts (C's `next_id` of `xa_alloc_cyclic`).
    #[pin]
    lock: Mutex<[u32; TYPES]>,
    #[pin]
    lists: [List; TYPES],
}

impl Restrack {
    /// Nothing tracked.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            counts: [const { Atomic::new(0) }; TYPES],
            lock <- new_mutex!([0; TYPES], "ib_core::restrack::lists"),
            lists <- pin_init::pin_init_array_from_fn(|_| XArray::new(AllocKind::Alloc)),
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
        let entry = KBox::new(Listed(NonNull::new(obj.cast_mut())?), GFP_KERNEL).ok()?;
        let mut next = self.lock.lock();
        let mut list = self.lists[t as usize].lock();
        match id {
            Some(id) => list
                .insert(id as usize, entry, GFP_KERNEL)
                .ok()
                .map(|()| id),
            None => list
                .alloc_cyclic(entry, 0, ID_MAX, &mut next[t as usize], GFP_KERNEL)
                .ok(),
        }
    }

    /// Unlists `obj` (nothing if it is not listed); returns once no netlink fill uses it.
    pub(crate) fn untrack(&self, t: ResType, obj: *const dyn Tracked) {
        let _lists = self.lock.lock();
        let mut list = self.lists[t as usize].lock();
        let mut at = 0;
        let found = loop {
            let Some((id, e)) = list.find(at) else {
                break None;
            };
            if core::ptr::addr_eq(e.0.as_ptr(), obj) {
                break Some(id);
            }
            at = id + 1;
        };
        if let Some(id) = found {
            drop(list.remove(id));
        }
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
        let _held = self.lock.lock();
        let lists = Lists(&self.lists);
        let mut at = 0;
        let mut pos = 0;
        while let Some((id, obj)) = lists.next(t, at) {
            at = id as usize + 1;
            if pos >= start {
                // SAFETY: Listed objects are alive while the lists' mutex is held (module
                // documentation).
                if !f(&lists, pos, id, unsafe { obj.as_ref() }) {
                    break;
                }
            }
            pos += 1;
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
        let _held = self.lock.lock();
        let obj = self.lists[t as usize].lock().get(id as usize)?.0;
        // SAFETY: Listed objects are alive while the lists' mutex is held (module
        // documentation).
        Some(f(&Lists(&self.lists), unsafe { obj.as_ref() }))
    }
}

/// Every list of a device, while the lists' mutex is held.
pub(crate) struct Lists<'a>(&'a [List; TYPES]);

impl Lists<'_> {
    /// The first object of type `t` at or after id `at`, with its id (the array's own lock
    /// held only for the lookup: the pointer stays valid under the lists' mutex).
    fn next(&self, t: ResType, at: usize) -> Option<(u32, NonNull<dyn Tracked>)> {
        let list = self.0[t as usize].lock();
        let (id, e) = list.find(at)?;
        Some((u32::try_from(id).ok()?, e.0))
    }

    /// Calls `f` on each listed object of type `t`, in id order, with its id.
    pub(crate) fn each(&self, t: ResType, mut f: impl FnMut(u32, &dyn Tracked)) {
        let mut at = 0;
        while let Some((id, obj)) = self.next(t, at) {
            at = id as usize + 1;
            // SAFETY: Listed objects are alive while the lists' mutex is held, which it is
            // while `self` exists (module documentation).
            f(id, unsafe { obj.as_ref() });
        }
    }
}
