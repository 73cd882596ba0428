// SPDX-License-Identifier: GPL-2.0

//! C drivers' devices registered on the core (C's `device.c`): `ib_register_device`,
//! `ib_unregister_device_queued`, `ib_unregister_driver`, `ib_dealloc_device`, and the unregistration `rdma link
//! delete` asks for (C's `ib_unregister_device_and_put`).
//!
//! A registered C driver's device is a [`Registration`] of the core, whose operations call the
//! driver's ops table ([`CDriverOps`]); the core's device is what sysfs, netlink and clients
//! see (C clients through its face). The driver's own structure is kept coherent with it: its
//! name, index, attributes and port data are written at registration, and the core's part in
//! front of it names the device, so that what the driver calls with its structure
//! (`ib_dispatch_event`, `ib_query_port`, the GID exports) reaches it.
//!
//! Unregistration follows C's `__ib_unregister_device`: once per device, whoever asks first
//! (the queued work, the driver's module exit, `rdma link delete`), the others waiting for it;
//! the clients removed and the users waited for, then the driver's references (C's
//! `ib_device_try_get` from its receive path) drained, the net devices dropped, and, for a
//! driver with `dealloc_driver`, the driver's part freed and the structure put.

use crate::{
    attrs::NodeType,
    c_abi::{
        driver::{
            netdev,
            ops::{device_attr_from_c, CDriverOps},
        },
        face,
    },
    device::{DeviceInfo, IbDevice, Registration},
};
use core::ptr::NonNull;
use kernel::{
    bindings,
    device::Device,
    ffi::{c_char, c_int},
    new_mutex,
    prelude::*,
    sync::{aref::ARef, global_lock, Arc, Mutex},
    workqueue::{Work, WorkItem},
};

/// One C driver's device, from its registration until it is unregistered.
#[pin_data]
struct DriverDevice {
    /// The driver's structure.
    ib: NonNull<bindings::ib_device>,
    /// The core's index of the device.
    index: u32,
    /// The core's registration, until the device is unregistered (C's `unregistration_lock`
    /// serialises whoever unregisters it).
    #[pin]
    registration: Mutex<Option<Registration>>,
    /// The queued unregistration (C's `unregistration_work`).
    #[pin]
    work: Work<DriverDevice>,
}

// SAFETY: The structure is used from any thread, as C drivers use it; the core reads it and
// calls the driver's ops with it.
unsafe impl Send for DriverDevice {}
// SAFETY: As above.
unsafe impl Sync for DriverDevice {}

kernel::impl_has_work! {
    impl HasWork<Self> for DriverDevice { self.work }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the core's exports can be called.
    unsafe(uninit) static DEVICES: Mutex<KVec<Arc<DriverDevice>>> = KVec::new();
}

/// Initializes the list of C drivers' devices.
///
/// # Safety
///
/// Called once, at module load, before any C module can call the exports.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { DEVICES.init() };
}

/// Frees the list's memory at unload (every C driver unregistered its devices before its
/// module, which depends on ib_core, went).
pub(crate) fn clear() {
    let left = core::mem::replace(&mut *DEVICES.lock(), KVec::new());
    drop(left);
}

/// The listed device of structure `ib`.
fn find(ib: *mut bindings::ib_device) -> Option<Arc<DriverDevice>> {
    DEVICES.lock().iter().find(|d| d.ib.as_ptr() == ib).cloned()
}

/// Takes `ib` off the list (C's `xa_erase` in `ib_dealloc_device`).
pub(crate) fn unlist(ib: *mut bindings::ib_device) {
    let gone = {
        let mut list = DEVICES.lock();
        list.iter()
            .position(|d| d.ib.as_ptr() == ib)
            .and_then(|i| list.remove(i).ok())
    };
    drop(gone);
}

/// The node type of a C driver's structure.
fn node_type(t: u8) -> Result<NodeType> {
    Ok(match u32::from(t) {
        bindings::RDMA_NODE_IB_CA => NodeType::Ca,
        bindings::RDMA_NODE_IB_SWITCH => NodeType::Switch,
        bindings::RDMA_NODE_IB_ROUTER => NodeType::Router,
        bindings::RDMA_NODE_RNIC => NodeType::Rnic,
        bindings::RDMA_NODE_USNIC => NodeType::Usnic,
        bindings::RDMA_NODE_USNIC_UDP => NodeType::UsnicUdp,
        bindings::RDMA_NODE_UNSPECIFIED => NodeType::Unspecified,
        _ => return Err(EINVAL),
    })
}

/// The bytes of a NUL-terminated C string of at most `max` bytes.
///
/// # Safety
///
/// `s` is a readable NUL-terminated string or holds `max` readable bytes.
unsafe fn c_bytes<'a>(s: *const c_char, max: usize) -> &'a [u8] {
    let mut n = 0;
    // SAFETY: The caller's contract: every byte up to the NUL or `max` is readable.
    while n < max && unsafe { *s.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: As above.
    unsafe { core::slice::from_raw_parts(s.cast(), n) }
}

/// Registers the C driver's structure `ib` under `name` (a name or a `%d` template).
///
/// # Safety
///
/// `ib` is a structure of `_ib_alloc_device` with its ops set, not registered; `name` is a
/// NUL-terminated string.
unsafe fn register(ib: NonNull<bindings::ib_device>, name: *const c_char) -> Result {
    let raw = ib.as_ptr();
    // SAFETY: The caller's contract.
    unsafe { face::ensure_port_data(raw)? };
    // SAFETY: As above: the driver filled these before registering.
    let c = unsafe { &*raw };
    // SAFETY: The caller's contract; the ops outlive the registration.
    let ops = unsafe { CDriverOps::new(ib)? };
    let ports = c.phys_port_cnt;
    let mut immutables = KVec::with_capacity(ports as usize, GFP_KERNEL)?;
    for port in 1..=ports {
        immutables.push(ops.port_immutable(port)?, GFP_KERNEL)?;
    }
    let c_attrs = ops.query_device_c(None)?;
    let attr = device_attr_from_c(&c_attrs, c.local_dma_lkey);
    // SAFETY: `name` is NUL-terminated (contract).
    let name = unsafe { c_bytes(name, bindings::IB_DEVICE_NAME_MAX as usize) };
    // SAFETY: The node description is a NUL-terminated array of the structure.
    let desc = unsafe { c_bytes(c.node_desc.as_ptr(), c.node_desc.len()) };
    // SAFETY: `dev` is the union's member C drivers use (`ib_dev->dev.parent`).
    let parent_raw = unsafe { c.__bindgen_anon_1.dev.parent };
    let parent: Option<ARef<Device>> = if parent_raw.is_null() {
        None
    } else {
        // SAFETY: The driver's parent device is alive while its device is registered; the new
        // reference is the registration's.
        Some(unsafe { Device::get_device(parent_raw) })
    };
    let info = DeviceInfo {
        name,
        node_type: node_type(c.node_type)?,
        node_guid: u64::from_be(c.node_guid),
        phys_port_cnt: ports,
        node_desc: desc,
        parent,
        use_cq_dim: c.use_cq_dim() != 0,
        num_comp_vectors: u32::try_from(c.num_comp_vectors).unwrap_or(0),
    };
    let enable_driver = c.ops.enable_driver;
    let mut enable = |dev: &Arc<IbDevice>| -> Result {
        // SAFETY: `raw`'s port data exists (above); the registration clears the link before
        // the device goes (`unregister`, and the error path below).
        unsafe { face::set_driver_owner(raw, dev, &c_attrs)? };
        if let Some(enable) = enable_driver {
            // SAFETY: The driver's op, on its own structure.
            kernel::error::to_result(unsafe { enable(raw) })?;
        }
        Ok(())
    };
    let kverbs = ops.is_kverbs_provider();
    let ops = KBox::new(ops, GFP_KERNEL)?;
    let registration = Registration::new_c(info, attr, &immutables, ops, kverbs, &mut enable);
    let registration = match registration {
        Ok(r) => r,
        Err(e) => {
            // SAFETY: `raw` is the driver's structure; nothing holds the link any more.
            unsafe { face::clear_driver_owner(raw) };
            netdev::free_netdevs(raw);
            return Err(e);
        }
    };
    let index = registration.device().index();
    let entry = Arc::pin_init(
        pin_init!(DriverDevice {
            ib,
            index,
            registration <- new_mutex!(Some(registration), "ib_core::c_abi::driver::registration"),
            work <- kernel::new_work!("ib_core::c_abi::driver::DriverDevice::work"),
        }),
        GFP_KERNEL,
    );
    match entry {
        Ok(entry) => {
            if let Err(e) = DEVICES.lock().push(entry.clone(), GFP_KERNEL) {
                unregister_locked(&entry, false);
                return Err(e.into());
            }
            Ok(())
        }
        // The registration was dropped with the failed initialiser: unregistered.
        Err(e) => {
            // SAFETY: As above.
            unsafe { face::clear_driver_owner(raw) };
            netdev::free_netdevs(raw);
            Err(e)
        }
    }
}

/// C's `ib_register_device`: registers a C driver's device, named `name` (a name or a template
/// with `%d`); `dma_device` is the device that maps its DMA (null: a software device, whose
/// addresses are kernel virtual addresses). 0 or C's errno; on an error the driver frees the
/// structure with `ib_dealloc_device`.
///
/// # Safety
///
/// `device` is a structure of `_ib_alloc_device` with its ops set and not registered; `name`
/// is a NUL-terminated string; `dma_device` is null or a live device.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_register_device(
    device: *mut bindings::ib_device,
    name: *const c_char,
    dma_device: *mut bindings::device,
) -> c_int {
    let Some(ib) = NonNull::new(device) else {
        return EINVAL.to_errno();
    };
    // SAFETY: The caller's contract: the driver's structure, not yet shared with the core.
    unsafe { (*device).dma_device = dma_device };
    // SAFETY: The caller's contract.
    match unsafe { register(ib, name) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Unregisters `d` if nobody did yet (C's `__ib_unregister_device`), waiting for an
/// unregistration under way; then, when `dealloc` and the driver has `dealloc_driver`, frees
/// the driver's part and the structure (C's `ib_dealloc_device` at its end).
fn unregister_locked(d: &Arc<DriverDevice>, dealloc: bool) {
    let raw = d.ib.as_ptr();
    let mut held = d.registration.lock();
    let Some(registration) = held.take() else {
        return;
    };
    // Clients removed first, with the device whole: what they send as they go (ib_cm's DREQ
    // for each connection rdma_cm destroys) goes out through the driver, which finds its net
    // device and GIDs through the core as before (C's `disable_device` comes before
    // `free_netdevs`).
    registration.disable();
    // Then the driver's structure stops naming the device, before the device may go (what the
    // driver calls with it from here on finds no device, as an event of a device being
    // unregistered is dropped).
    // SAFETY: The driver's structure, alive until it is put below.
    unsafe { face::clear_driver_owner(raw) };
    // Users waited for, sysfs gone, the device dropped.
    drop(registration);
    // SAFETY: The structure is alive until it is put below; its count and completion were set
    // up by `_ib_alloc_device` and registration. C's `disable_device`: the registration's
    // reference dropped, then every `ib_device_try_get` holder waited for.
    unsafe {
        if bindings::refcount_dec_and_test(&raw mut (*raw).refcount) {
            bindings::complete(&raw mut (*raw).unreg_completion);
        }
        bindings::wait_for_completion(&raw mut (*raw).unreg_completion);
    }
    netdev::free_netdevs(raw);
    drop(held);
    // SAFETY: As above.
    let has_dealloc = unsafe { (*raw).ops.dealloc_driver.is_some() };
    if dealloc && has_dealloc {
        // SAFETY: The structure is unregistered; the driver gave it to the core to free.
        unsafe { ib_dealloc_device(raw) };
    }
}

impl WorkItem for DriverDevice {
    type Pointer = Arc<DriverDevice>;

    fn run(this: Arc<DriverDevice>) {
        unregister_locked(&this, true);
        // SAFETY: The reference `ib_unregister_device_queued` took for the work. A device
        // whose driver deallocated it above is freed by this last put.
        unsafe { face::put_c_device(this.ib.as_ptr()) };
    }
}

/// C's `ib_unregister_device_queued`: unregisters a C driver's device from the core's
/// unregistration workqueue (a driver's net device notifier calls it under RTNL); the driver
/// must have `dealloc_driver`, which frees it at the end. The driver waits for it with
/// `ib_unregister_driver` before its module goes.
///
/// # Safety
///
/// `ib_dev` is a registered C driver's structure.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_unregister_device_queued(ib_dev: *mut bindings::ib_device) {
    let Some(d) = find(ib_dev) else {
        return;
    };
    let Some(queues) = crate::device::workqueues::queues() else {
        return;
    };
    // SAFETY: A listed structure is alive; the reference is the work's.
    unsafe { face::get_c_device(ib_dev) };
    if queues.unregister.enqueue(d).is_err() {
        // Already queued: C drops the new reference.
        // SAFETY: Taken above.
        unsafe { face::put_c_device(ib_dev) };
    }
}

/// C's `ib_unregister_driver`: unregisters every device of the C driver `driver_id` (each freed
/// by its `dealloc_driver`), waiting for unregistrations already under way; returns when none is
/// left, so that the driver's module may go.
#[no_mangle]
pub(crate) extern "C" fn ib_unregister_driver(driver_id: bindings::rdma_driver_id) {
    loop {
        let next = DEVICES
            .lock()
            .iter()
            // SAFETY: A listed structure is alive.
            .find(|d| unsafe { (*d.ib.as_ptr()).ops.driver_id } == driver_id)
            .cloned();
        let Some(d) = next else {
            return;
        };
        let raw = d.ib.as_ptr();
        // SAFETY: Listed, so alive; held across the unregistration as C's `get_device`.
        unsafe { face::get_c_device(raw) };
        unregister_locked(&d, true);
        // A device nobody unregistered with `dealloc_driver` unset stays listed: C would warn
        // and loop no more; so does this.
        unlist(raw);
        // SAFETY: Taken above.
        unsafe { face::put_c_device(raw) };
    }
}

/// `rdma link delete`: C's `nldev_dellink` once the device is found: `-EINVAL` unless the
/// driver lets users unregister it (`IBK_ALLOW_USER_UNREG`); the driver's `dellink` first,
/// then the device unregistered and freed (C's `ib_unregister_device_and_put`).
pub(crate) fn dellink(dev_index: u32) -> Result {
    let d = DEVICES
        .lock()
        .iter()
        .find(|d| d.index == dev_index)
        .cloned();
    let Some(d) = d else {
        return Err(EINVAL);
    };
    let raw = d.ib.as_ptr();
    // SAFETY: Listed, so alive.
    let c = unsafe { &*raw };
    if c.attrs.kernel_cap_flags & u64::from(bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG) == 0
    {
        return Err(EINVAL);
    }
    if !c.link_ops.is_null() {
        // SAFETY: The driver's link ops live while its module does, which its device holds.
        if let Some(dellink) = unsafe { (*c.link_ops).dellink } {
            let _serialised = super::link::dellink_lock();
            // SAFETY: The driver's op, on its own registered structure.
            kernel::error::to_result(unsafe { dellink(raw) })?;
        }
    }
    // SAFETY: As above; held across the unregistration as C's `get_device`.
    unsafe { face::get_c_device(raw) };
    unregister_locked(&d, true);
    // SAFETY: Taken above.
    unsafe { face::put_c_device(raw) };
    Ok(())
}

/// C's `ib_dealloc_device`: the driver's `dealloc_driver` (which frees its own part), then the
/// structure taken off the core's lists, its net devices dropped, and its reference put (the
/// last frees it). A driver calls it after `ib_register_device` failed or for a structure it
/// never registered; the core calls it at the end of an unregistration.
///
/// # Safety
///
/// `device` is a structure of `_ib_alloc_device`, not registered, deallocated once.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_dealloc_device(device: *mut bindings::ib_device) {
    // SAFETY: The caller's contract.
    if let Some(dealloc) = unsafe { (*device).ops.dealloc_driver } {
        // SAFETY: The driver's op, on its own structure.
        unsafe { dealloc(device) };
    }
    unlist(device);
    netdev::free_netdevs(device);
    // SAFETY: The caller's contract: a registration leaves the count at 0.
    if unsafe { bindings::rdma_rs_refcount_read(&raw const (*device).refcount) } != 0 {
        pr_warn!("ib_dealloc_device: a device still referenced is freed\n");
    }
    // SAFETY: The caller's contract: the reference of `_ib_alloc_device`, dropped once.
    unsafe { face::put_driver_device(device) };
}
