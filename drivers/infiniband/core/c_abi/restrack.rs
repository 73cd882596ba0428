// SPDX-License-Identifier: GPL-2.0

//! Resource tracking as C modules see it: the device's `res` roots (C's core-private
//! `struct rdma_restrack_root`, one xarray per resource type) holding the `rdma_restrack_entry`
//! of every object made for C modules, and `rdma_restrack_new`, `rdma_restrack_parent_name`,
//! `rdma_restrack_add` with C's names and signatures (C's `drivers/infiniband/core/restrack.c`),
//! which C code calls for the objects it completes itself (a DMA MR from the driver's
//! `get_dma_mr`). The objects are also in the core's own tracking, which netlink reads
//! (`crate::restrack`); this is the view C code walks (`dev->res[type].xa`, by `kern_name`).

use kernel::{bindings, ffi::c_char, prelude::*, types::Opaque};

/// C's `struct rdma_restrack_root` (drivers/infiniband/core/restrack.h, which bindgen does not
/// see): the objects of one type by id, and the next id to hand out.
#[repr(C)]
pub(crate) struct Root {
    xa: bindings::xarray,
    next_id: u32,
}

/// Resource types (C's `RDMA_RESTRACK_MAX`).
const TYPES: usize = bindings::rdma_restrack_type_RDMA_RESTRACK_MAX as usize;

/// The roots of a device, one per type, empty (C's `rdma_restrack_init`).
pub(crate) fn new_roots() -> Result<KVec<Opaque<Root>>> {
    let mut roots = KVec::with_capacity(TYPES, GFP_KERNEL)?;
    for _ in 0..TYPES {
        roots.push(Opaque::<Root>::zeroed(), GFP_KERNEL)?;
    }
    for r in &roots {
        // SAFETY: A zeroed xarray of ours, made an allocating one as C's.
        unsafe { bindings::xa_init_flags(&raw mut (*r.get()).xa, bindings::XA_FLAGS_ALLOC) };
    }
    Ok(roots)
}

/// Frees the roots' memory (C's `rdma_restrack_clean`); every object is gone by then.
///
/// # Safety
///
/// `roots` came from [`new_roots`] and no one uses them any more.
pub(crate) unsafe fn destroy_roots(roots: &KVec<Opaque<Root>>) {
    for r in roots {
        // SAFETY: Initialised by `new_roots`, no longer used (contract).
        unsafe { bindings::xa_destroy(&raw mut (*r.get()).xa) };
    }
}

/// The device of the object whose entry is `res`, by the entry's type (null for a type this
/// module does not list).
///
/// # Safety
///
/// `res` is the `res` field of the object its type names.
pub(crate) unsafe fn device_of(
    res: *mut bindings::rdma_restrack_entry,
) -> *mut bindings::ib_device {
    // SAFETY: The entry's container is the object its type names (contract).
    unsafe {
        match (*res).type_ {
            bindings::rdma_restrack_type_RDMA_RESTRACK_PD => {
                (*kernel::container_of!(res, bindings::ib_pd, res)).device
            }
            bindings::rdma_restrack_type_RDMA_RESTRACK_CQ => {
                (*kernel::container_of!(res, bindings::ib_cq, res)).device
            }
            bindings::rdma_restrack_type_RDMA_RESTRACK_QP => {
                (*kernel::container_of!(res, bindings::ib_qp, res)).device
            }
            bindings::rdma_restrack_type_RDMA_RESTRACK_MR => {
                (*kernel::container_of!(res, bindings::ib_mr, res)).device
            }
            bindings::rdma_restrack_type_RDMA_RESTRACK_SRQ => {
                (*kernel::container_of!(res, bindings::ib_srq, res)).device
            }
            bindings::rdma_restrack_type_RDMA_RESTRACK_CM_ID => {
                (*kernel::container_of!(res, bindings::rdma_id_private, res))
                    .id
                    .device
            }
            _ => core::ptr::null_mut(),
        }
    }
}

/// The root the entry `res` belongs to, if its device is a face and its type one of those.
///
/// # Safety
///
/// As for [`device_of`]; the device, if any, is a face's, live.
unsafe fn root_of(res: *mut bindings::rdma_restrack_entry) -> Option<*mut Root> {
    // SAFETY: The caller's contract.
    let dev = unsafe { device_of(res) };
    if dev.is_null() {
        return None;
    }
    // SAFETY: As above.
    let (roots, t) = unsafe { ((*dev).res.cast::<Root>(), (*res).type_ as usize) };
    // SAFETY: A face's `res` has one root per type, and `t` is below `TYPES` (`device_of`
    // knows only those).
    (!roots.is_null() && t < TYPES).then(|| unsafe { roots.add(t) })
}

/// C's `rdma_restrack_new`: prepares the entry `res` of an object of type `type_`.
///
/// # Safety
///
/// `res` points to a writable entry not in any root.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_restrack_new(
    res: *mut bindings::rdma_restrack_entry,
    type_: bindings::rdma_restrack_type,
) {
    // SAFETY: `res` is writable (contract).
    unsafe {
        bindings::refcount_set(&raw mut (*res).kref.refcount, 1);
        bindings::init_completion(&raw mut (*res).comp);
        (*res).type_ = type_;
    }
}

/// C's `rdma_restrack_parent_name`: the entry takes its parent's owner: a kernel parent's name
/// (the module that made the parent), or a user parent's task, held (rdma_cm's connection IDs
/// made by a user listener are the listener's task's, as `rdma res show cm_id` shows them).
///
/// # Safety
///
/// `dst` is writable, whose `task`, if not null, it holds; `parent` readable, whose `task`, if
/// not null, is alive (held by it).
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_restrack_parent_name(
    dst: *mut bindings::rdma_restrack_entry,
    parent: *const bindings::rdma_restrack_entry,
) {
    // SAFETY: The caller's contract.
    unsafe {
        if !(*parent).user {
            (*dst).kern_name = (*parent).kern_name;
            return;
        }
        let task = (*parent).task;
        if task.is_null() {
            return;
        }
        // C's `rdma_restrack_attach_task`: the hold is the entry's, dropped by `put_task`.
        put_task(dst);
        bindings::get_task_struct(task);
        (*dst).task = task;
        (*dst).user = true;
    }
}

/// C's `rdma_restrack_set_name`: the entry `res` is a kernel object made by the module named
/// `caller` (a static string, kept), or, with no name, a user object of the current task
/// (held until `rdma_restrack_del` ([`del`])).
///
/// # Safety
///
/// `res` is a writable entry prepared by [`rdma_restrack_new`]; `caller` is null or outlives
/// the entry.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_restrack_set_name(
    res: *mut bindings::rdma_restrack_entry,
    caller: *const c_char,
) {
    if !caller.is_null() {
        // SAFETY: `res` is writable (contract).
        unsafe { (*res).kern_name = caller };
        return;
    }
    // SAFETY: `current` is this task, alive for the call; the hold taken here is the entry's,
    // dropped by `put_task`. `res` is writable (contract).
    unsafe {
        let task = bindings::get_current();
        bindings::get_task_struct(task);
        put_task(res);
        (*res).task = task;
        (*res).user = true;
    }
}

/// Drops the entry's hold of its task, if it has one.
///
/// # Safety
///
/// `res` is a writable entry whose `task`, if not null, is held by it.
unsafe fn put_task(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    unsafe {
        let task = (*res).task;
        if !task.is_null() {
            bindings::put_task_struct(task);
            (*res).task = core::ptr::null_mut();
        }
    }
}

/// C's `rdma_restrack_del`: unlists the object whose entry is `res` (an entry never listed
/// only drops its task), waits until no reader holds it (C's `rdma_restrack_get` users), and
/// drops its task. Sleeps.
///
/// # Safety
///
/// `res` is the entry of a live object, prepared by [`rdma_restrack_new`]; if listed, its
/// device is live.
pub(crate) unsafe fn del(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    unsafe {
        if (*res).valid {
            untrack(res);
            // The hold of `rdma_restrack_new`: the last one completes `comp`.
            if bindings::refcount_dec_and_test(&raw mut (*res).kref.refcount) {
                bindings::complete(&raw mut (*res).comp);
            }
            bindings::wait_for_completion(&raw mut (*res).comp);
        }
        put_task(res);
    }
}

/// C's `rdma_restrack_add`: lists the object whose entry is `res` in its device's root (a QP
/// under its number, as C, the others under the next free id) and marks the entry valid; an
/// entry of a device that is not this core's, or that could not be listed, stays invalid.
///
/// # Safety
///
/// `res` is the entry of an object its type names, made by [`rdma_restrack_new`], whose device
/// is live; it is not listed yet.
pub(crate) unsafe fn add(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: `res` is a prepared entry (contract).
    if unsafe { (*res).no_track() } != 0 {
        // SAFETY: As above.
        unsafe { (*res).valid = true };
        return;
    }
    // SAFETY: As above; its device is live.
    let Some(root) = (unsafe { root_of(res) }) else {
        return;
    };
    // SAFETY: `root` is a live root; the xarray's own lock is taken for the store (which may
    // drop it to allocate, as C's `xa_alloc_cyclic` does).
    let ret = unsafe {
        let xa = &raw mut (*root).xa;
        bindings::xa_lock(xa);
        let ret = if (*res).type_ == bindings::rdma_restrack_type_RDMA_RESTRACK_QP {
            let qp = kernel::container_of!(res, bindings::ib_qp, res);
            let mut id = (*qp).qp_num;
            if matches!(
                (*qp).qp_type,
                bindings::ib_qp_type_IB_QPT_SMI | bindings::ib_qp_type_IB_QPT_GSI
            ) {
                id |= (*qp).port << 24;
            }
            (*res).id = id;
            let r = bindings::__xa_insert(xa, id as usize, res.cast(), bindings::GFP_KERNEL);
            if r != 0 {
                (*res).id = 0;
            }
            r
        } else {
            let limit = bindings::xa_limit {
                max: u32::MAX,
                min: 0,
            };
            let r = bindings::__xa_alloc_cyclic(
                xa,
                &raw mut (*res).id,
                res.cast(),
                limit,
                &raw mut (*root).next_id,
                bindings::GFP_KERNEL,
            );
            r.min(0)
        };
        bindings::xa_unlock(xa);
        ret
    };
    if ret == 0 {
        // SAFETY: As above.
        unsafe { (*res).valid = true };
    }
}

/// Lists a kernel object made for a C module under the name `caller`: C's
/// `rdma_restrack_new`, `rdma_restrack_set_name` and `rdma_restrack_add`.
///
/// # Safety
///
/// As for [`add`]; `caller` is null or outlives the entry.
pub(crate) unsafe fn track(
    res: *mut bindings::rdma_restrack_entry,
    type_: bindings::rdma_restrack_type,
    caller: *const c_char,
) {
    // SAFETY: The caller's contract.
    unsafe {
        rdma_restrack_new(res, type_);
        (*res).kern_name = caller;
        add(res);
    }
}

/// Unlists the object whose entry is `res` (C's `rdma_restrack_del`, without the wait for
/// netlink readers: netlink reads the core's own tracking, not these roots).
///
/// # Safety
///
/// `res` is the entry of a live object whose device is live.
pub(crate) unsafe fn untrack(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    unsafe {
        if !(*res).valid {
            return;
        }
        (*res).valid = false;
        if (*res).no_track() != 0 {
            return;
        }
        if let Some(root) = root_of(res) {
            bindings::xa_erase(&raw mut (*root).xa, (*res).id as usize);
        }
    }
}
