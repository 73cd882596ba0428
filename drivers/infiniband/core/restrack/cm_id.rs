// SPDX-License-Identifier: GPL-2.0

//! A C connection manager ID in resource tracking: rdma_cm lists each ID once it is bound to a
//! device (`rdma_restrack_add` of its `struct rdma_id_private`'s entry: `crate::c_abi::restrack`
//! lists it here too), and `rdma res show cm_id` shows what C's `fill_res_cm_id_entry` reads of
//! it: its port, QP, port space, state, addresses, and its module or task.

use crate::restrack::{KernName, Tracked};
use core::ptr::{self, NonNull};
use kernel::{bindings, task::Task, task_pid};

/// A listed rdma_cm ID (C's `struct rdma_id_private`).
pub(crate) struct CmIdEntry {
    id: NonNull<bindings::rdma_id_private>,
}

// SAFETY: The entry only reads the ID, which rdma_cm keeps alive while it is listed (it is
// unlisted by `rdma_restrack_del` before rdma_cm frees it); any task may read it.
unsafe impl Send for CmIdEntry {}
// SAFETY: As above: shared use only reads.
unsafe impl Sync for CmIdEntry {}

/// Bytes of a `struct sockaddr_storage` (what C puts in the address attributes).
pub(crate) const ADDR_SIZE: usize = core::mem::size_of::<bindings::__kernel_sockaddr_storage>();

impl CmIdEntry {
    /// The ID whose restrack entry is `res`.
    ///
    /// # Safety
    ///
    /// `res` is the `res` field of a live `struct rdma_id_private`, which stays alive while this
    /// entry is listed.
    pub(crate) unsafe fn new(res: *mut bindings::rdma_restrack_entry) -> Option<Self> {
        // SAFETY: `res` is the entry of an `rdma_id_private` (contract).
        let id = unsafe { kernel::container_of!(res, bindings::rdma_id_private, res) };
        Some(Self {
            id: NonNull::new(id)?,
        })
    }

    /// Its restrack entry.
    pub(crate) fn res(&self) -> *mut bindings::rdma_restrack_entry {
        // SAFETY: `id` is live while listed (type invariant); only the field's address is taken.
        unsafe { &raw mut (*self.id.as_ptr()).res }
    }

    /// Reads field `f` of the ID. rdma_cm changes some fields (state, addresses) under its own
    /// locks, which C's netlink does not take either: a volatile read of the current value.
    fn read<T: Copy>(&self, f: impl FnOnce(*const bindings::rdma_id_private) -> *const T) -> T {
        // SAFETY: `id` is live while listed (type invariant); `f` gives a field of it.
        unsafe { ptr::read_volatile(f(self.id.as_ptr())) }
    }

    /// The port it is bound to (0: none yet).
    pub(crate) fn port(&self) -> u32 {
        // SAFETY: `p` is a live ID (see `read`); the field's address only.
        self.read(|p| unsafe { &raw const (*p).id.port_num })
    }

    /// Its QP's number and type, once it has one.
    pub(crate) fn qp(&self) -> Option<(u32, u8)> {
        // SAFETY: As for `port`.
        let num = self.read(|p| unsafe { &raw const (*p).qp_num });
        // SAFETY: As for `port`.
        let t = self.read(|p| unsafe { &raw const (*p).id.qp_type });
        (num != 0).then_some((num, t as u8))
    }

    /// Its port space (C's `enum rdma_ucm_port_space`).
    pub(crate) fn ps(&self) -> u32 {
        // SAFETY: As for `port`.
        self.read(|p| unsafe { &raw const (*p).id.ps })
    }

    /// Its state (C's `enum rdma_cm_state`).
    pub(crate) fn state(&self) -> u8 {
        // SAFETY: As for `port`.
        self.read(|p| unsafe { &raw const (*p).state }) as u8
    }

    /// Its source address as C puts it (the whole `sockaddr_storage`), if it has one.
    pub(crate) fn src_addr(&self) -> Option<[u8; ADDR_SIZE]> {
        // SAFETY: As for `port`.
        Self::addr(self.read(|p| unsafe { &raw const (*p).id.route.addr.src_addr }))
    }

    /// Its destination address, if it has one.
    pub(crate) fn dst_addr(&self) -> Option<[u8; ADDR_SIZE]> {
        // SAFETY: As for `port`.
        Self::addr(self.read(|p| unsafe { &raw const (*p).id.route.addr.dst_addr }))
    }

    /// `a`'s bytes, unless its family is unset.
    fn addr(a: bindings::__kernel_sockaddr_storage) -> Option<[u8; ADDR_SIZE]> {
        // SAFETY: Every variant of the storage's union starts with the family.
        let family = unsafe { a.__bindgen_anon_1.__bindgen_anon_1.ss_family };
        if family == 0 {
            return None;
        }
        // SAFETY: `a` is `ADDR_SIZE` plain bytes.
        Some(unsafe {
            core::mem::transmute::<bindings::__kernel_sockaddr_storage, [u8; ADDR_SIZE]>(a)
        })
    }

    /// The pid of the task that made a user ID, as the caller sees it (0: a kernel ID, or the
    /// task exited).
    pub(crate) fn pid(&self) -> i32 {
        // SAFETY: As for `port`.
        let task = self.read(|p| unsafe { &raw const (*p).res.task });
        if task.is_null() {
            return 0;
        }
        // SAFETY: A user ID's entry holds its task until it is unlisted (`rdma_restrack_set_name`
        // took the hold); `Task` is a transparent wrapper of `task_struct`.
        task_pid::pid_vnr(unsafe { &*task.cast::<Task>() })
    }
}

impl Tracked for CmIdEntry {
    fn creator(&self) -> Option<KernName> {
        // SAFETY: As for `port`.
        if self.read(|p| unsafe { &raw const (*p).res.user }) {
            return None;
        }
        // SAFETY: As for `port`.
        let name = self.read(|p| unsafe { &raw const (*p).res.kern_name });
        // SAFETY: A kernel ID's name is its module's, which outlives the ID.
        Some(unsafe { KernName::from_c(name) })
    }
}
