// SPDX-License-Identifier: GPL-2.0

//! The C face of a registered device ([`CFace`]): the `struct ib_device` that C modules are
//! handed (a client's `add` and `remove`) and read through `include/rdma/*.h`'s inline
//! functions: its name, node type and GUID, port count and per-port immutable data
//! (`rdma_cap_*`, `rdma_protocol_*`), attributes, and the client data that
//! `ib_get_client_data` loads from its `client_data` xarray.
//!
//! The core's part sits in front of the C structure in one allocation, where C code never
//! looks (docs/c-abi.md, decision 1): the device the face stands for. The structure's
//! `struct device` is initialised, named as the device and given its parent, so that C's
//! `dev_name(&ibdev->dev)`, `ibdev->dev.parent` and `get_device`/`put_device` work; it is not
//! yet the class device in `/sys/class/infiniband` (that one is still the core's own: it moves
//! into this structure with `_ib_alloc_device`, the C drivers' step). The allocation is freed
//! by the device's release when its last reference goes.

use crate::{
    attrs::{DeviceAttr, PortImmutable},
    device::ib_device::{DeviceEventRegistration, IbDevice},
};
use core::{
    alloc::Layout,
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    alloc::{allocator::Kmalloc, flags::__GFP_ZERO, Allocator, NumaNode},
    bindings,
    device_raw::raw_device,
    ffi::{c_char, c_int},
    net::namespace::Net,
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    types::Opaque,
};

/// `CLIENT_DATA_REGISTERED` (C's device.c): the `client_data` mark of the clients whose `add`
/// has completed, so that their `remove` is due.
pub(crate) const CLIENT_DATA_REGISTERED: bindings::xa_mark_t = 1;

/// A C module's event handler (`struct ib_event_handler`, by address) and the registration
/// that calls it.
pub(crate) type CHandlers = KVec<(usize, DeviceEventRegistration)>;

/// The allocation: the core's part first, then the C structure.
#[repr(C)]
#[pin_data]
struct Alloc {
    /// The device the face stands for, while the [`CFace`] lives (null afterwards).
    owner: AtomicPtr<IbDevice>,
    /// The C event handlers registered on the device (C's `event_handler_list`); emptied when
    /// the face is dropped, so that none outlives the registration.
    #[pin]
    handlers: Mutex<CHandlers>,
    /// The port data `ib.port_data` points to: one entry per port and one before them (C
    /// indexes it by port number, from 1).
    ports: KVec<Opaque<bindings::ib_port_data>>,
    /// The resource tracking roots `ib.res` points to (`c_abi/restrack.rs`).
    res: KVec<Opaque<crate::c_abi::restrack::Root>>,
    /// The port directories of the device's own sysfs tree, by port number from 1 (what C's
    /// `port_data[].sysfs` is to `ib_port_register_client_groups`); emptied when the face is
    /// dropped (the directories hold the structure: [`CDeviceRef`]).
    #[pin]
    port_dirs: Mutex<KVec<Arc<dyn PortDir>>>,
    /// The bytes allocated after `ib` (a C driver's own part of its device structure, from
    /// `_ib_alloc_device`; 0 for a face).
    extra: usize,
    /// Whether `ib` is a C driver's device structure (`_ib_alloc_device`), not a face.
    driver: bool,
    /// What C modules see.
    ib: Opaque<bindings::ib_device>,
}

impl Alloc {
    /// The memory of an allocation with `extra` bytes after `ib`.
    fn layout(extra: usize) -> Result<Layout> {
        let size = size_of::<Alloc>().checked_add(extra).ok_or(ENOMEM)?;
        Layout::from_size_align(size, align_of::<Alloc>()).map_err(|_| ENOMEM)
    }

    /// Allocates zeroed memory for an `Alloc` with `extra` bytes after it and initialises it
    /// with `init` (whose `extra` must be the same); freed by `release`.
    fn new_raw(extra: usize, init: impl PinInit<Alloc, Error>) -> Result<NonNull<Alloc>> {
        let mem = Kmalloc::alloc(
            Self::layout(extra)?,
            GFP_KERNEL | __GFP_ZERO,
            NumaNode::NO_NODE,
        )?;
        let a = mem.cast::<Alloc>();
        // SAFETY: `a` is fresh memory of the right size and alignment for an `Alloc`, which is
        // never moved: `release` frees it in place.
        if let Err(e) = unsafe { pin_init::raw_try_init(a.as_ptr(), init) } {
            // SAFETY: Allocated above with this layout; `init` failed, so nothing in it needs
            // dropping.
            unsafe { Kmalloc::free(a.cast(), Self::layout(extra)?) };
            return Err(e);
        }
        Ok(a)
    }
}

/// The `struct device` inside `ib` (an anonymous union's member in C: `dev`, or `coredev.dev`).
fn dev_of(ib: *mut bindings::ib_device) -> *mut bindings::device {
    // SAFETY: Only the field's address is computed; the union's `dev` is at its start.
    unsafe { (&raw mut (*ib).__bindgen_anon_1).cast() }
}

/// The allocation whose C structure is `ib`.
///
/// # Safety
///
/// `ib` is the structure of a face's allocation (what C code got from the core); only the
/// address is computed here.
unsafe fn alloc_of(ib: *mut bindings::ib_device) -> *mut Alloc {
    // SAFETY: `ib` is the `ib` field of an `Alloc` (contract).
    unsafe { kernel::container_of!(ib.cast::<Opaque<bindings::ib_device>>(), Alloc, ib) }
}

/// Frees the allocation when the face's `struct device` loses its last reference.
///
/// # Safety
///
/// Called by the driver core, once, for the device of a face made by [`CFace::new`].
unsafe extern "C" fn release(dev: *mut bindings::device) {
    // SAFETY: `dev` is at the start of the union that is `ib`'s field (`dev_of`), and `ib` is a
    // field of an `Alloc` made by `KBox::into_raw` (contract).
    let alloc = unsafe {
        alloc_of(
            dev.cast::<u8>()
                .sub(core::mem::offset_of!(bindings::ib_device, __bindgen_anon_1))
                .cast(),
        )
    };
    // SAFETY: The last reference is gone: nothing reads the allocation any more; it was made by
    // `Alloc::new_raw` (contract), is dropped and freed once, and was never moved.
    unsafe {
        let extra = (*alloc).extra;
        ptr::drop_in_place(alloc);
        if let Ok(layout) = Alloc::layout(extra) {
            Kmalloc::free(NonNull::new_unchecked(alloc).cast(), layout);
        }
    }
}

/// C's `_ib_alloc_device`: a zeroed device structure of `size` bytes (a C driver's structure
/// with `struct ib_device` first) with the core's part in front, set up as C sets it up: the
/// `struct device` initialised (freed through `release` by the last `put_device`, which
/// `ib_dealloc_device` drops), the client data, restrack's roots, the reference count and its
/// completion, the user verbs C enables by default, the initial network namespace. The port
/// data comes later ([`ensure_port_data`]): the driver sets the port count after this.
pub(crate) fn alloc_driver_device(size: usize) -> Result<NonNull<bindings::ib_device>> {
    let extra = size
        .checked_sub(size_of::<bindings::ib_device>())
        .ok_or(EINVAL)?;
    let res = crate::c_abi::restrack::new_roots()?;
    let alloc = Alloc::new_raw(
        extra,
        try_pin_init!(Alloc {
            owner: AtomicPtr::new(ptr::null_mut()),
            handlers <- new_handlers(),
            ports: KVec::new(),
            res,
            port_dirs <- new_port_dirs(),
            extra,
            driver: true,
            ib: Opaque::zeroed(),
        }? Error),
    )?
    .as_ptr();
    // SAFETY: `alloc` is valid and not shared yet.
    let ib = unsafe { (*alloc).ib.get() };
    // SAFETY: As above: the structure is zeroed and ours alone until it is returned.
    let c = unsafe { &mut *ib };
    // SAFETY: `alloc` is valid; its roots are not touched elsewhere yet.
    c.res = unsafe { (*alloc).res.as_mut_ptr() }.cast();
    c.__bindgen_anon_1.coredev.rdma_net.net = Net::init_net().as_raw();
    c.__bindgen_anon_1.coredev.owner = ib;
    c.uverbs_cmd_mask = DEFAULT_UVERBS_CMDS
        .iter()
        .fold(0u64, |m, &cmd| m | (1u64 << cmd));
    // SAFETY: Zeroed fields of the structure, initialised once before any user, as C's
    // `_ib_alloc_device` does.
    unsafe {
        bindings::xa_init_flags(&raw mut c.client_data, bindings::XA_FLAGS_ALLOC);
        bindings::__init_rwsem(
            &raw mut c.client_data_rwsem,
            c"&device->client_data_rwsem".as_char_ptr(),
            kernel::static_lock_class!().as_ptr(),
        );
        bindings::init_completion(&raw mut c.unreg_completion);
        init_cq_pools(ib);
    }
    let d = dev_of(ib);
    // SAFETY: `d` is the zeroed `struct device` of the structure; from here on `put_device`
    // frees the allocation through `release`. The class only names the device in the kernel's
    // log, as C's (`infiniband rxe0: ...`; the device is never added: the core's class device
    // is): the structure is freed before ib_core, on which its driver depends, unloads.
    unsafe {
        bindings::device_initialize(d);
        (*d).release = Some(release);
        if let Some(class) = crate::device::class::class() {
            (*d).class = class.as_raw();
        }
    }
    // SAFETY: A field of a live allocation is not null.
    Ok(unsafe { NonNull::new_unchecked(ib) })
}

/// Sets up the shared CQ pool of the device structure `ib` (C's `_ib_alloc_device` part;
/// `c_abi/cq_pool.rs`): its lock and one empty list per polling context.
///
/// # Safety
///
/// `ib` is a zeroed device structure not yet shared.
unsafe fn init_cq_pools(ib: *mut bindings::ib_device) {
    // SAFETY: The structure is ours alone (contract); the lock's name and class are static.
    unsafe {
        bindings::__spin_lock_init(
            &raw mut (*ib).cq_pools_lock,
            c"&device->cq_pools_lock".as_char_ptr(),
            kernel::static_lock_class!().as_ptr(),
        );
        for l in (*ib).cq_pools.iter_mut() {
            crate::c_abi::object::init_list(l);
        }
    }
}

/// The user verbs commands C's `_ib_alloc_device` enables for every device
/// (`IB_USER_VERBS_CMD_*`).
const DEFAULT_UVERBS_CMDS: [u32; 30] = [
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_ALLOC_MW,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_ALLOC_PD,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_ATTACH_MCAST,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CLOSE_XRCD,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CREATE_AH,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CREATE_CQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CREATE_QP,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CREATE_SRQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_CREATE_XSRQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DEALLOC_MW,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DEALLOC_PD,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DEREG_MR,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DESTROY_AH,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DESTROY_CQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DESTROY_QP,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DESTROY_SRQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_DETACH_MCAST,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_GET_CONTEXT,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_MODIFY_QP,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_MODIFY_SRQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_OPEN_QP,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_OPEN_XRCD,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_QUERY_DEVICE,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_QUERY_PORT,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_QUERY_QP,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_QUERY_SRQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REG_MR,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REREG_MR,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_RESIZE_CQ,
];

/// Whether `port` is a port of the C structure `ib` (C's `rdma_is_port_valid`: from 1, or 0
/// for a switch, to the port count).
///
/// # Safety
///
/// `ib` is a live device structure.
pub(crate) unsafe fn port_valid(ib: *mut bindings::ib_device, port: u32) -> bool {
    // SAFETY: The caller's contract.
    let c = unsafe { &*ib };
    let start = u32::from(c.node_type == bindings::RDMA_NODE_IB_SWITCH as u8);
    (start..=c.phys_port_cnt).contains(&port)
}

/// Whether `ib` is a C driver's device structure ([`alloc_driver_device`]) rather than a face.
///
/// # Safety
///
/// `ib` is the structure of a face or of [`alloc_driver_device`], still allocated.
pub(crate) unsafe fn is_driver_device(ib: *mut bindings::ib_device) -> bool {
    // SAFETY: The caller's contract.
    unsafe { (*alloc_of(ib)).driver }
}

/// C's `alloc_port_data`: the port data `ib.port_data` points to, one entry per port from 1
/// (and one before), each naming its device, made once (later calls keep it).
///
/// # Safety
///
/// `ib` is a structure of [`alloc_driver_device`]; its driver does not call this concurrently
/// (C's registration path is serialised by the driver, as here).
pub(crate) unsafe fn ensure_port_data(ib: *mut bindings::ib_device) -> Result {
    // SAFETY: The caller's contract: the allocation is live, its port vector ours for now.
    let (alloc, c) = unsafe { (&mut *alloc_of(ib), &mut *ib) };
    if !alloc.ports.is_empty() {
        return Ok(());
    }
    let ports = c.phys_port_cnt as usize;
    let mut port_data = KVec::with_capacity(ports + 1, GFP_KERNEL)?;
    for _ in 0..=ports {
        let p: Opaque<bindings::ib_port_data> = Opaque::zeroed();
        // SAFETY: A zeroed entry, ours alone.
        unsafe { (*p.get()).ib_dev = ib };
        port_data.push(p, GFP_KERNEL)?;
    }
    alloc.ports = port_data;
    c.port_data = alloc.ports.as_mut_ptr().cast();
    Ok(())
}

/// Fills the registered driver structure `ib` with what the core read at registration (C's
/// `setup_device` and `assign_name` write them into the driver's own structure): the name, the
/// index, the attributes, each port's immutable data; and makes `dev` the device behind it.
///
/// # Safety
///
/// `ib` is a structure of [`alloc_driver_device`] whose port data exists
/// ([`ensure_port_data`]); `dev` outlives the link (the caller clears it with
/// [`clear_driver_owner`] before the device goes).
pub(crate) unsafe fn set_driver_owner(
    ib: *mut bindings::ib_device,
    dev: &Arc<IbDevice>,
    c_attrs: &bindings::ib_device_attr,
) -> Result {
    // SAFETY: The caller's contract.
    let alloc = unsafe { &*alloc_of(ib) };
    {
        // SAFETY: As above; the driver does not write these while it registers.
        let c = unsafe { &mut *ib };
        let name = dev.name();
        set_c_string(&mut c.name, name.as_bytes());
        c.index = dev.index();
        c.attrs = *c_attrs;
        for port in 1..=dev.port_count() {
            if let (Some(i), Some(p)) = (dev.port_immutable(port), alloc.ports.get(port as usize)) {
                // SAFETY: An entry of the port vector; C code reads it only after registration.
                fill_port(unsafe { &mut *p.get() }, ib, i);
            }
        }
        let mut buf = [0u8; bindings::IB_DEVICE_NAME_MAX as usize];
        let n = name.as_bytes().len().min(buf.len() - 1);
        buf[..n].copy_from_slice(&name.as_bytes()[..n]);
        // SAFETY: The device is initialised (`alloc_driver_device`); `buf` is NUL-terminated and
        // the format takes one string.
        kernel::error::to_result(unsafe {
            bindings::dev_set_name(dev_of(ib), c"%s".as_char_ptr(), buf.as_ptr())
        })?;
        // SAFETY: Zeroed until now; one reference, the registration's (C's count once
        // `ib_register_device` returns).
        unsafe { bindings::refcount_set(&raw mut c.refcount, 1) };
    }
    alloc
        .owner
        .store(Arc::as_ptr(dev).cast_mut(), Ordering::Release);
    Ok(())
}

/// Unlinks the driver structure `ib` from its device (the registration is going).
///
/// # Safety
///
/// `ib` is a structure of [`alloc_driver_device`].
pub(crate) unsafe fn clear_driver_owner(ib: *mut bindings::ib_device) {
    // SAFETY: The caller's contract.
    unsafe {
        (*alloc_of(ib))
            .owner
            .store(ptr::null_mut(), Ordering::Release)
    };
}

/// Drops the reference `device_initialize` gave a structure of [`alloc_driver_device`] (C's
/// `put_device` at the end of `ib_dealloc_device`): the last one frees it.
///
/// # Safety
///
/// `ib` is a structure of [`alloc_driver_device`] whose initial reference was not dropped yet.
pub(crate) unsafe fn put_driver_device(ib: *mut bindings::ib_device) {
    // SAFETY: The caller's contract; `client_data` holds nothing (no client sees this
    // structure: clients get the face).
    unsafe {
        bindings::xa_destroy(&raw mut (*ib).client_data);
        bindings::put_device(dev_of(ib));
    }
}

/// The `struct device` of `ib` (what C's `&ibdev->dev` is), for a C driver's attribute
/// callbacks.
pub(crate) fn c_device_of(ib: *mut bindings::ib_device) -> *mut bindings::device {
    dev_of(ib)
}

/// Takes a reference on the `struct device` of `ib` (C's `get_device(&ibdev->dev)`).
///
/// # Safety
///
/// `ib` is a face's structure or one of [`alloc_driver_device`], referenced by the caller.
pub(crate) unsafe fn get_c_device(ib: *mut bindings::ib_device) {
    // SAFETY: The caller's contract.
    unsafe { bindings::get_device(dev_of(ib)) };
}

/// Drops a reference taken by [`get_c_device`].
///
/// # Safety
///
/// The caller holds a reference of [`get_c_device`] on `ib`.
pub(crate) unsafe fn put_c_device(ib: *mut bindings::ib_device) {
    // SAFETY: The caller's contract.
    unsafe { bindings::put_device(dev_of(ib)) };
}

/// The C face of a registered device; dropping it detaches it from the device (the C
/// structure then outlives it only as long as someone holds a reference to its `dev`).
///
/// # Invariants
///
/// `alloc` is a live `Alloc` whose `ib.dev` is initialised and holds the reference this face
/// drops; its `owner` points to `_owner`'s device while the face lives.
pub(crate) struct CFace {
    alloc: NonNull<Alloc>,
    /// Keeps the device the allocation points to alive.
    _owner: Arc<IbDevice>,
}

// SAFETY: The C structure is read by any thread; what the core writes after setup (the name,
// the client data) is written under the registry lock or through the xarray's own lock.
unsafe impl Send for CFace {}
// SAFETY: As above.
unsafe impl Sync for CFace {}

/// A count as C's `int` field holds it (at most `INT_MAX`; the driver's counts fit).
pub(crate) fn int(v: u32) -> c_int {
    c_int::try_from(v).unwrap_or(c_int::MAX)
}

/// Copies `src` into the C string `dst`, truncated to leave room for the NUL.
fn set_c_string(dst: &mut [c_char], src: &[u8]) {
    let n = src.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(&src[..n]) {
        *d = *s as c_char;
    }
    for d in dst.iter_mut().skip(n) {
        *d = 0;
    }
}

/// C's `struct ib_device_attr` from what the driver reported.
fn fill_attrs(a: &mut bindings::ib_device_attr, d: &DeviceAttr) {
    a.fw_ver = d.fw_ver;
    a.sys_image_guid = d.sys_image_guid.to_be();
    a.max_mr_size = d.max_mr_size;
    a.page_size_cap = d.page_size_cap;
    a.vendor_id = d.vendor_id;
    a.vendor_part_id = d.vendor_part_id;
    a.hw_ver = d.hw_ver;
    a.max_qp = d.max_qp;
    a.max_qp_wr = d.max_qp_wr;
    a.device_cap_flags = u64::from(d.device_cap_flags);
    a.kernel_cap_flags = if d.local_dma_lkey.is_some() {
        u64::from(bindings::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY)
    } else {
        0
    };
    a.max_send_sge = d.max_send_sge;
    a.max_recv_sge = d.max_recv_sge;
    a.max_sge_rd = d.max_sge_rd;
    a.max_fast_reg_page_list_len = d.max_fast_reg_page_list_len;
    a.max_cq = d.max_cq;
    a.max_cqe = d.max_cqe;
    a.max_mr = d.max_mr;
    a.max_pd = d.max_pd;
    a.max_qp_rd_atom = d.max_qp_rd_atom;
    a.max_qp_init_rd_atom = d.max_qp_init_rd_atom;
    a.max_res_rd_atom = d.max_res_rd_atom;
    a.atomic_cap = u32::from(d.atomic_cap);
    a.max_mw = d.max_mw;
    a.max_mcast_grp = d.max_mcast_grp;
    a.max_mcast_qp_attach = d.max_mcast_qp_attach;
    a.max_total_mcast_qp_attach = d.max_total_mcast_qp_attach;
    a.max_ah = d.max_ah;
    a.max_srq = d.max_srq;
    a.max_srq_wr = d.max_srq_wr;
    a.max_srq_sge = d.max_srq_sge;
    a.max_pkeys = d.max_pkeys;
    a.local_ca_ack_delay = d.local_ca_ack_delay;
    a.timestamp_mask = d.timestamp_mask;
    a.hca_core_clock = d.hca_core_clock;
    a.raw_packet_caps = d.raw_packet_caps;
    a.cq_caps.max_cq_moderation_count = d.max_cq_moderation_count;
    a.cq_caps.max_cq_moderation_period = d.max_cq_moderation_period;
}

/// C's `struct ib_port_data` of one port: its immutable data, and the back pointer.
fn fill_port(p: &mut bindings::ib_port_data, ib: *mut bindings::ib_device, i: &PortImmutable) {
    p.ib_dev = ib;
    p.immutable.pkey_tbl_len = i.pkey_tbl_len.into();
    p.immutable.gid_tbl_len = int(i.gid_tbl_len);
    p.immutable.core_cap_flags = i.core_cap_flags;
    p.immutable.max_mad_size = i.max_mad_size;
}

/// An empty handler list. Not generic nor inlined: one lock class for every face.
#[inline(never)]
fn new_handlers() -> impl PinInit<Mutex<CHandlers>> {
    new_mutex!(KVec::new(), "ib_core::c_abi::face::Alloc::handlers")
}

#[inline(never)]
fn new_port_dirs() -> impl PinInit<Mutex<KVec<Arc<dyn PortDir>>>> {
    new_mutex!(KVec::new(), "ib_core::c_abi::face::Alloc::port_dirs")
}

/// A port's sysfs directory (the core's `ports/<N>`), as C clients' attribute groups need it
/// (`c_abi/port_groups.rs`); the core's sysfs implements it.
pub(crate) trait PortDir: Send + Sync {
    /// Adds C's NULL-terminated group list `groups` to the directory.
    ///
    /// # Safety
    ///
    /// `groups` stays valid until [`PortDir::remove_groups`] or the directory's end; its
    /// attributes are `struct ib_port_attribute`s.
    unsafe fn add_groups(&self, groups: *const *const bindings::attribute_group) -> Result;

    /// Removes groups added by [`PortDir::add_groups`].
    ///
    /// # Safety
    ///
    /// `groups` was added to this directory.
    unsafe fn remove_groups(&self, groups: *const *const bindings::attribute_group);
}

/// A counted reference to a face's C structure (to its `struct device`), for what may outlive
/// the face: the port directories whose C files are called with the structure.
///
/// # Invariants
///
/// `0` is the structure of a face's allocation, whose device this value holds a reference to.
pub(crate) struct CDeviceRef(NonNull<bindings::ib_device>);

// SAFETY: The reference may be dropped on any thread (`put_device`); the pointer is only read.
unsafe impl Send for CDeviceRef {}
// SAFETY: As above.
unsafe impl Sync for CDeviceRef {}

impl CDeviceRef {
    /// The C structure, valid while `self` lives.
    pub(crate) fn raw(&self) -> *mut bindings::ib_device {
        self.0.as_ptr()
    }
}

impl Drop for CDeviceRef {
    fn drop(&mut self) {
        // SAFETY: The reference is ours (type invariant); the last one frees the allocation.
        unsafe { bindings::put_device(dev_of(self.0.as_ptr())) };
    }
}

impl CFace {
    /// The face of `dev`, which is being registered; `fill_ops` fills the ops table entries C
    /// code calls directly, for a device with kernel verbs (given whether it has SRQs), and
    /// `fill_iw` the iWARP entries of an RNIC's face (given the C driver's own structure, null
    /// for one of the core's drivers).
    pub(crate) fn new(
        dev: &Arc<IbDevice>,
        fill_ops: impl FnOnce(&mut bindings::ib_device_ops, bool),
        fill_iw: impl FnOnce(&mut bindings::ib_device, *mut bindings::ib_device),
    ) -> Result<Self> {
        let ports = dev.port_count();
        let mut port_data = KVec::with_capacity(ports as usize + 1, GFP_KERNEL)?;
        for _ in 0..=ports {
            port_data.push(Opaque::zeroed(), GFP_KERNEL)?;
        }
        let res = crate::c_abi::restrack::new_roots()?;
        let alloc = Alloc::new_raw(
            0,
            try_pin_init!(Alloc {
                owner: AtomicPtr::new(Arc::as_ptr(dev).cast_mut()),
                handlers <- new_handlers(),
                ports: port_data,
                res,
                port_dirs <- new_port_dirs(),
                extra: 0,
                driver: false,
                ib: Opaque::zeroed(),
            }? Error),
        )?
        .as_ptr();
        // SAFETY: `alloc` is valid and not shared yet; every pointer below is into it.
        let ib = unsafe { (*alloc).ib.get() };
        // SAFETY: As above: the structure is zeroed and ours alone until the face is returned.
        let c = unsafe { &mut *ib };
        let name = dev.name();
        set_c_string(&mut c.name, name.as_bytes());
        set_c_string(&mut c.node_desc, dev.node_desc().as_bytes());
        c.node_guid = dev.node_guid().to_be();
        c.node_type = dev.node_type() as u8;
        c.phys_port_cnt = ports;
        c.num_comp_vectors = int(dev.num_comp_vectors());
        c.index = dev.index();
        c.set_kverbs_provider(dev.kverbs_provider().into());
        if dev.kverbs_provider() {
            // What C's inline post, poll and arm functions call (`c_abi/data_path.rs`).
            fill_ops(&mut c.ops, dev.attr().max_srq > 0);
        }
        if c.node_type == bindings::RDMA_NODE_RNIC as u8 {
            // What iw_cm calls through the device (`c_abi/face_iw.rs`), for a C driver's the
            // driver's own structure.
            fill_iw(c, dev.ops().c_structure());
        }
        c.set_use_cq_dim(dev.use_cq_dim().into());
        c.local_dma_lkey = dev.attr().local_dma_lkey.unwrap_or(0);
        fill_attrs(&mut c.attrs, dev.attr());
        // SAFETY: `alloc` is valid (above); its port vector is not touched elsewhere.
        let port_data = unsafe { &mut (*alloc).ports };
        for port in 1..=ports {
            if let (Some(i), Some(p)) = (dev.port_immutable(port), port_data.get(port as usize)) {
                // SAFETY: `p` is a zeroed entry of the vector, ours alone.
                fill_port(unsafe { &mut *p.get() }, ib, i);
            }
        }
        c.port_data = port_data.as_mut_ptr().cast();
        // SAFETY: `alloc` is valid; its roots are not touched elsewhere until C code gets `ib`.
        c.res = unsafe { (*alloc).res.as_mut_ptr() }.cast();
        // Every device lives in the initial network namespace here (C's `coredev.rdma_net`,
        // which `rdma_dev_access_netns` and C's inline readers of it see).
        c.__bindgen_anon_1.coredev.rdma_net.net = Net::init_net().as_raw();
        c.__bindgen_anon_1.coredev.owner = ib;
        // SAFETY: `client_data` is a zeroed xarray; C's `_ib_alloc_device` makes it an
        // allocating one (a NULL store then reserves the index, as `add_client_context` needs).
        unsafe { bindings::xa_init_flags(&raw mut c.client_data, bindings::XA_FLAGS_ALLOC) };
        // SAFETY: A zeroed semaphore of the face, initialised once before any user, with a
        // static class (C's `init_rwsem` in `_ib_alloc_device`).
        unsafe {
            bindings::__init_rwsem(
                &raw mut c.client_data_rwsem,
                c"&device->client_data_rwsem".as_char_ptr(),
                kernel::static_lock_class!().as_ptr(),
            )
        };
        // SAFETY: Zeroed; C's counts, set as `enable_device_and_get` leaves them for a
        // registered device (one reference: the registration's).
        unsafe {
            bindings::refcount_set(&raw mut c.refcount, 1);
            bindings::init_completion(&raw mut c.unreg_completion);
            init_cq_pools(ib);
        }
        let d = dev_of(ib);
        // SAFETY: `d` is the zeroed `struct device` of the face. From `device_initialize` on the
        // device owns the allocation: `put_device` frees it through `release`.
        unsafe {
            bindings::device_initialize(d);
            (*d).release = Some(release);
            if let Some(parent) = dev.parent() {
                (*d).parent = raw_device(parent);
                c.dma_device = raw_device(parent);
            }
        }
        // INVARIANT: initialised above; `dev` is kept alive by the face.
        let face = Self {
            // SAFETY: `KBox::into_raw` does not return null.
            alloc: unsafe { NonNull::new_unchecked(alloc) },
            _owner: dev.clone(),
        };
        face.set_dev_name(name.as_bytes())?;
        Ok(face)
    }

    /// The C structure.
    pub(crate) fn raw(&self) -> *mut bindings::ib_device {
        // SAFETY: `alloc` is live (type invariant).
        unsafe { (*self.alloc.as_ptr()).ib.get() }
    }

    /// Names the face's `struct device` (what C's `dev_name` reads).
    fn set_dev_name(&self, name: &[u8]) -> Result {
        let mut buf = [0u8; bindings::IB_DEVICE_NAME_MAX as usize];
        let n = name.len().min(buf.len() - 1);
        buf[..n].copy_from_slice(&name[..n]);
        // SAFETY: The device is initialised (type invariant); `buf` is NUL-terminated and the
        // format takes one string.
        kernel::error::to_result(unsafe {
            bindings::dev_set_name(dev_of(self.raw()), c"%s".as_char_ptr(), buf.as_ptr())
        })
    }

    /// A counted reference to the C structure.
    pub(crate) fn device_ref(&self) -> CDeviceRef {
        let ib = self.raw();
        // SAFETY: The device is initialised (type invariant); the reference taken is the new
        // value's.
        unsafe { bindings::get_device(dev_of(ib)) };
        // INVARIANT: referenced above. SAFETY: `raw` is never null.
        CDeviceRef(unsafe { NonNull::new_unchecked(ib) })
    }

    /// Hands the face the port directories of the device's own sysfs tree (by port number from
    /// 1), before C clients see it.
    pub(crate) fn set_port_dirs(&self, dirs: KVec<Arc<dyn PortDir>>) {
        // SAFETY: The allocation is live (type invariant).
        *unsafe { &(*self.alloc.as_ptr()).port_dirs }.lock() = dirs;
    }

    /// The sysfs directory of `port` of the face `ib`, if the device has one.
    ///
    /// # Safety
    ///
    /// As for [`CFace::owner`].
    pub(crate) unsafe fn port_dir(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> Option<Arc<dyn PortDir>> {
        // SAFETY: The caller's contract.
        let alloc = unsafe { &*alloc_of(ib) };
        let dirs = alloc.port_dirs.lock();
        dirs.get(usize::try_from(port).ok()?.checked_sub(1)?)
            .cloned()
    }

    /// The device was renamed (C's `ib_device_rename` copies the name into `name` and renames
    /// `dev`), under the registry lock.
    pub(crate) fn rename(&self, name: &[u8]) -> Result {
        self.set_dev_name(name)?;
        // SAFETY: The structure is live (type invariant); its name is written only here, under
        // the registry lock, as C writes it under `devices_rwsem`.
        set_c_string(unsafe { &mut (*self.raw()).name }, name);
        Ok(())
    }

    /// The device behind `ib` (as [`CFace::owner`]), referenced, and the face's C event handler
    /// list.
    ///
    /// # Safety
    ///
    /// As for [`CFace::owner`].
    pub(crate) unsafe fn owner_and_handlers<'a>(
        ib: *mut bindings::ib_device,
    ) -> Option<(Arc<IbDevice>, &'a Mutex<CHandlers>)> {
        // SAFETY: The caller's contract.
        let alloc = unsafe { alloc_of(ib) };
        // SAFETY: `alloc` is live (contract).
        let owner = unsafe { (*alloc).owner.load(Ordering::Acquire) };
        if owner.is_null() {
            return None;
        }
        // SAFETY: A non-null owner is the pointer of an `Arc` the face holds (`_owner`), alive
        // while the face is (contract); the borrow ends at once, in the new reference.
        let dev: Arc<IbDevice> = unsafe { ArcBorrow::from_raw(owner) }.into();
        // SAFETY: As above; the allocation outlives the call (contract).
        Some((dev, unsafe { &(*alloc).handlers }))
    }

    /// The device behind `ib` (as [`CFace::owner`]), referenced: what the core's objects made
    /// for C modules hold.
    ///
    /// # Safety
    ///
    /// As for [`CFace::owner`].
    pub(crate) unsafe fn owner_arc(ib: *mut bindings::ib_device) -> Option<Arc<IbDevice>> {
        // SAFETY: The caller's contract.
        unsafe { Self::owner_and_handlers(ib) }.map(|(dev, _)| dev)
    }

    /// The device a C structure handed to C code stands for, if it is still registered.
    ///
    /// # Safety
    ///
    /// `ib` is the structure of a [`CFace`] (what C code got from a client's `add`), whose
    /// `dev` is still referenced (C's contract: between `add` and the end of `remove`, or
    /// under `ib_device_get`).
    pub(crate) unsafe fn owner<'a>(ib: *mut bindings::ib_device) -> Option<&'a IbDevice> {
        // SAFETY: The caller's contract.
        let alloc = unsafe { alloc_of(ib) };
        // SAFETY: `alloc` is live (contract).
        let owner = unsafe { (*alloc).owner.load(Ordering::Acquire) };
        // SAFETY: A non-null owner is kept alive by the face, which nulls it before it lets the
        // device go; C code calls in only while the device is registered (contract).
        unsafe { owner.as_ref() }
    }

    /// [`CFace::owner`] with `port` checked as C checks it first (`rdma_is_port_valid`): the
    /// C errno to return otherwise, `-ENODEV` for a device no longer registered, `-EINVAL` for
    /// a port it does not have.
    ///
    /// # Safety
    ///
    /// As for [`CFace::owner`].
    pub(crate) unsafe fn owner_on_port<'a>(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> core::result::Result<&'a IbDevice, c_int> {
        // SAFETY: The caller's contract.
        let dev = unsafe { Self::owner(ib) }.ok_or(ENODEV.to_errno())?;
        if dev.is_valid_port(port) {
            Ok(dev)
        } else {
            Err(EINVAL.to_errno())
        }
    }
}

impl Drop for CFace {
    fn drop(&mut self) {
        let ib = self.raw();
        // SAFETY: The allocation is live (type invariant).
        let alloc = unsafe { &*self.alloc.as_ptr() };
        // Handlers a C module left registered go (C would call them no more either): none keeps
        // the device.
        let left = core::mem::take(&mut *alloc.handlers.lock());
        drop(left);
        // The port directories hold the structure: let them go with the device's sysfs.
        let dirs = core::mem::take(&mut *alloc.port_dirs.lock());
        drop(dirs);
        // SAFETY: The allocation is live (type invariant); from here on C code that still holds
        // the structure finds no device behind it. The client data is empty (every client was
        // removed before the face is dropped); its xarray's memory goes, then our reference.
        unsafe {
            alloc.owner.store(ptr::null_mut(), Ordering::Release);
            bindings::xa_destroy(&raw mut (*ib).client_data);
            // Every object made for C modules is gone with their clients.
            crate::c_abi::restrack::destroy_roots(&alloc.res);
            bindings::put_device(dev_of(ib));
        }
    }
}
