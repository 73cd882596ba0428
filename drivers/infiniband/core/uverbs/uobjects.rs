// SPDX-License-Identifier: GPL-2.0

//! A file's objects (C's `ufile->idr` and `ufile->uobjects`): each verbs object user space
//! made gets a handle, the lowest free number (C's `xa_alloc`), shared by all object types.
//! A handle of another type is `EINVAL`, one that does not exist `ENOENT` (C's
//! `rdma_lookup_get_uobject`). When the file's context goes, objects are destroyed newest
//! first.

use crate::uapi::{OBJECT_MR, OBJECT_PD};
use ib_core::ucontext::{UserMr, UserPd};
use kernel::prelude::*;

/// One object.
pub(crate) enum UObject {
    /// A protection domain.
    Pd(UserPd),
    /// A memory region.
    Mr(#[expect(dead_code, reason = "kept to be dropped: the driver frees it then")] UserMr),
}

impl UObject {
    /// Its type (`UVERBS_OBJECT_*`).
    fn object_type(&self) -> u16 {
        match self {
            UObject::Pd(_) => OBJECT_PD,
            UObject::Mr(_) => OBJECT_MR,
        }
    }

    /// Whether other objects still use it (it cannot be destroyed then: C's `EBUSY`).
    fn busy(&self) -> bool {
        match self {
            UObject::Pd(pd) => pd.users() != 0,
            UObject::Mr(_) => false,
        }
    }
}

struct Entry {
    handle: u32,
    /// Creation order, for destruction newest first.
    seq: u64,
    obj: UObject,
}

/// The objects of one file, by handle.
#[derive(Default)]
pub(crate) struct UObjects {
    entries: KVec<Entry>,
    next_seq: u64,
}

impl UObjects {
    /// The lowest free handle.
    fn free_handle(&self) -> Result<u32> {
        let mut h = 0u32;
        for e in self.entries.iter() {
            if e.handle != h {
                break;
            }
            h = h.checked_add(1).ok_or(ENOMEM)?;
        }
        Ok(h)
    }

    /// Adds `obj` under a new handle. Room is made first, so that a failure leaves the object
    /// with the caller, who drops it.
    pub(crate) fn insert(&mut self, obj: UObject) -> Result<u32> {
        let handle = self.free_handle()?;
        self.entries.reserve(1, GFP_KERNEL)?;
        let at = self.entries.partition_point(|e| e.handle < handle);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries
            .insert_within_capacity(at, Entry { handle, seq, obj })
            .map_err(|_| ENOMEM)?;
        Ok(handle)
    }

    /// Checks that `handle` is an object of type `object_type`: `ENOENT` if there is none,
    /// `EINVAL` if it is of another type.
    pub(crate) fn check(&self, handle: u64, object_type: u16) -> Result {
        let e = self
            .entries
            .iter()
            .find(|e| u64::from(e.handle) == handle)
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
        Ok(self.entries.remove(i)?.obj)
    }

    /// Destroys every object, newest first.
    pub(crate) fn destroy_all(&mut self) {
        while let Some(i) = self
            .entries
            .iter()
            .enumerate()
            .max_by_key(|(_, e)| e.seq)
            .map(|(i, _)| i)
        {
            drop(self.entries.remove(i));
        }
    }
}
