// SPDX-License-Identifier: GPL-2.0

//! A file's objects (C's `ufile->idr` and `ufile->uobjects`): each verbs object user space
//! made gets a handle, the lowest free number (C's `xa_alloc`), shared by all object types.
//! A handle of another type is `EINVAL`, one that does not exist `ENOENT` (C's
//! `rdma_lookup_get_uobject`). When the file's context goes, objects are destroyed newest
//! first. An ioctl method that makes an object reserves its handle while its attributes are
//! processed (C writes the handle back then); the handle names nothing until the method
//! succeeded.

use crate::{
    file::objects::{UCq, UMr, UQp, USrq},
    ioctl::ids::{OBJECT_AH, OBJECT_CQ, OBJECT_MR, OBJECT_PD, OBJECT_QP, OBJECT_SRQ},
};
use ib_core::{
    user::spec::DriverUObject,
    user::ucontext::{UserAh, UserPd},
};
use kernel::{ida::Ida, prelude::*};

/// One object.
pub(crate) enum UObject {
    /// A protection domain.
    Pd(UserPd),
    /// A memory region.
    Mr(UMr),
    /// A completion queue.
    Cq(UCq),
    /// A queue pair.
    Qp(UQp),
    /// A shared receive queue.
    Srq(USrq),
    /// An address handle.
    Ah {
        /// Kept to be dropped: the driver destroys it then.
        _ah: UserAh,
    },
    /// A driver's object of type `object` (mlx5: a UAR).
    Driver {
        /// Its type (the driver's object id).
        object: u16,
        /// Kept to be dropped: the driver frees it then.
        _obj: DriverUObject,
    },
    /// A handle reserved for an object being made.
    Reserved,
}

impl UObject {
    /// Its type (`UVERBS_OBJECT_*`).
    fn object_type(&self) -> u16 {
        match self {
            UObject::Pd(_) => OBJECT_PD,
            UObject::Mr(_) => OBJECT_MR,
            UObject::Cq(_) => OBJECT_CQ,
            UObject::Qp(_) => OBJECT_QP,
            UObject::Srq(_) => OBJECT_SRQ,
            UObject::Ah { .. } => OBJECT_AH,
            UObject::Driver { object, .. } => *object,
            UObject::Reserved => u16::MAX,
        }
    }

    /// Whether other objects still use it (it cannot be destroyed then: C's `EBUSY`).
    fn busy(&self) -> bool {
        match self {
            UObject::Pd(pd) => pd.users() != 0,
            UObject::Cq(cq) => cq.users() != 0,
            UObject::Srq(srq) => srq.users() != 0,
            UObject::Mr(_)
            | UObject::Qp(_)
            | UObject::Ah { .. }
            | UObject::Driver { .. }
            | UObject::Reserved => false,
        }
    }
}

struct Entry {
    handle: u32,
    /// Creation order, for destruction newest first.
    seq: u64,
    obj: UObject,
}

/// Handles at most (C's `xa_alloc` with `xa_limit_32b`, bounded here by what `Ida` holds).
const MAX_HANDLES: usize = i32::MAX as usize;

/// The objects of one file, by handle.
pub(crate) struct UObjects {
    /// Sorted by handle.
    entries: KVec<Entry>,
    next_seq: u64,
    /// The handles in use (listed in `entries`).
    handles: Ida,
}

impl Default for UObjects {
    fn default() -> Self {
        Self {
            entries: KVec::new(),
            next_seq: 0,
            handles: Ida::new(MAX_HANDLES),
        }
    }
}

impl UObjects {
    /// Adds `obj` under a new handle, the lowest free one. Room is made first, so that a
    /// failure leaves the object with the caller, who drops it.
    pub(crate) fn insert(&mut self, obj: UObject) -> Result<u32> {
        self.entries.reserve(1, GFP_KERNEL)?;
        // `Ida` hands out handles below `MAX_HANDLES`, a `u32`.
        let handle = self.handles.alloc(GFP_KERNEL).map_err(|_| ENOMEM)? as u32;
        let at = self.entries.partition_point(|e| e.handle < handle);
        let seq = self.next_seq;
        self.next_seq += 1;
        if self
            .entries
            .insert_within_capacity(at, Entry { handle, seq, obj })
            .is_err()
        {
            self.handles.free(handle as usize);
            return Err(ENOMEM);
        }
        Ok(handle)
    }

    /// Reserves the lowest free handle for an object being made.
    pub(crate) fn reserve(&mut self) -> Result<u32> {
        self.insert(UObject::Reserved)
    }

    /// Puts `obj` under reserved handle `handle`; the object is dropped if there is no such
    /// reservation (`ENOENT`).
    pub(crate) fn commit(&mut self, handle: u32, obj: UObject) -> Result {
        let e = self
            .entries
            .iter_mut()
            .find(|e| e.handle == handle && matches!(e.obj, UObject::Reserved))
            .ok_or(ENOENT)?;
        e.obj = obj;
        Ok(())
    }

    /// Gives up reserved handle `handle`.
    pub(crate) fn abort(&mut self, handle: u32) {
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| e.handle == handle && matches!(e.obj, UObject::Reserved))
        {
            let _ = self.entries.remove(i);
            self.handles.free(handle as usize);
        }
    }

    /// Checks that `handle` is an object of type `object_type`: `ENOENT` if there is none
    /// (or it is only reserved), `EINVAL` if it is of another type.
    pub(crate) fn check(&self, handle: u64, object_type: u16) -> Result {
        let e = self
            .entries
            .iter()
            .find(|e| u64::from(e.handle) == handle && !matches!(e.obj, UObject::Reserved))
            .ok_or(ENOENT)?;
        if e.obj.object_type() != object_type {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// The PD `handle` (C's `uobj_get_obj_read`): `ENOENT`, or `EINVAL` for another type.
    pub(crate) fn pd(&self, handle: u64) -> Result<&UserPd> {
        self.check(handle, OBJECT_PD)?;
        match self.entries.iter().find(|e| u64::from(e.handle) == handle) {
            Some(Entry {
                obj: UObject::Pd(pd),
                ..
            }) => Ok(pd),
            _ => Err(EINVAL),
        }
    }

    /// The CQ `handle` (`ENOENT`, or `EINVAL` for another type).
    pub(crate) fn cq(&self, handle: u64) -> Result<&ib_core::user::ucontext::UserCq> {
        self.check(handle, OBJECT_CQ)?;
        match self.entries.iter().find(|e| u64::from(e.handle) == handle) {
            Some(Entry {
                obj: UObject::Cq(cq),
                ..
            }) => cq.cq(),
            _ => Err(EINVAL),
        }
    }

    /// The QP `handle` (`ENOENT`, or `EINVAL` for another type).
    pub(crate) fn qp(&self, handle: u64) -> Result<&UQp> {
        self.check(handle, OBJECT_QP)?;
        match self.entries.iter().find(|e| u64::from(e.handle) == handle) {
            Some(Entry {
                obj: UObject::Qp(qp),
                ..
            }) => Ok(qp),
            _ => Err(EINVAL),
        }
    }

    /// The MR `handle`, to be changed in place (`ENOENT`, or `EINVAL` for another type).
    pub(crate) fn mr_mut(&mut self, handle: u64) -> Result<&mut UMr> {
        self.check(handle, OBJECT_MR)?;
        match self
            .entries
            .iter_mut()
            .find(|e| u64::from(e.handle) == handle)
        {
            Some(Entry {
                obj: UObject::Mr(mr),
                ..
            }) => Ok(mr),
            _ => Err(EINVAL),
        }
    }

    /// The SRQ `handle` (`ENOENT`, or `EINVAL` for another type).
    pub(crate) fn srq(&self, handle: u64) -> Result<&USrq> {
        self.check(handle, OBJECT_SRQ)?;
        match self.entries.iter().find(|e| u64::from(e.handle) == handle) {
            Some(Entry {
                obj: UObject::Srq(srq),
                ..
            }) => Ok(srq),
            _ => Err(EINVAL),
        }
    }

    /// Takes object `handle` of type `object_type` out (C's destroy lookup), to be dropped:
    /// `EBUSY` while other objects use it.
    pub(crate) fn remove(&mut self, handle: u64, object_type: u16) -> Result<UObject> {
        self.check(handle, object_type)?;
        let i = self
            .entries
            .iter()
            .position(|e| u64::from(e.handle) == handle)
            .ok_or(ENOENT)?;
        if self.entries[i].obj.busy() {
            return Err(EBUSY);
        }
        let e = self.entries.remove(i)?;
        self.handles.free(e.handle as usize);
        Ok(e.obj)
    }

    /// Destroys every object, newest first, skipping an object still in use until its users
    /// are gone (C's `__uverbs_cleanup_ufile` retries busy objects, rdma_core.c:927): an MR
    /// moved to a newer PD by REREG_MR goes before that PD. Each pass is O(n) and frees what
    /// is idle; passes repeat while one frees something. Should every object left be busy
    /// (which no sequence of commands can cause), the newest goes anyway, so the loop ends.
    pub(crate) fn destroy_all(&mut self) {
        let entries = self.entries.as_mut_slice();
        entries.sort_unstable_by_key(|e| core::cmp::Reverse(e.seq));
        let live = |e: &Entry| !matches!(e.obj, UObject::Reserved);
        loop {
            let mut freed = false;
            for e in entries.iter_mut() {
                if live(e) && !e.obj.busy() {
                    // Dropped here, in order: the objects it used become idle for later ones.
                    drop(core::mem::replace(&mut e.obj, UObject::Reserved));
                    freed = true;
                }
            }
            if freed {
                continue;
            }
            match entries.iter_mut().find(|e| live(e)) {
                Some(e) => drop(core::mem::replace(&mut e.obj, UObject::Reserved)),
                None => break,
            }
        }
        self.entries.clear();
        self.handles = Ida::new(MAX_HANDLES);
    }
}
