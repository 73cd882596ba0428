// SPDX-License-Identifier: GPL-2.0

//! Registered RDMA devices and clients, with the C core's ordering:
//!
//! - a device gets a unique name (see [`crate::device::names`]) and an index that increases (cyclically,
//!   not reused at once, as the C core's `xa_alloc_cyclic`); both are taken before the device is
//!   set up (phase 1), and the device becomes visible to clients, netlink and lookups only once
//!   fully set up (phase 2, [`enable`]);
//! - a client that registers gets `add` for every registered device, in index order;
//! - a device that registers is added to every client, in client registration order;
//! - a device that unregisters is hidden first, then removed from every client in reverse
//!   registration order;
//! - a client that unregisters is removed from every device.
//!
//! A registered device's sysfs presence is kept here too, so that a rename moves it under the
//! same lock that checks the new name; and so are the network namespaces other than the
//! initial one, so that a device that registers and a namespace that appears each find the
//! other under one lock (each shared device has a copy of its sysfs tree in each namespace:
//! [`net_added`], [`net_removed`]).
//!
//! Client callbacks run with the registry locked: they must not register or unregister devices
//! or clients.
//!
//! There are two registries ([`Domain`]): the product's, and, in a kernel with KUnit, one for
//! ib_core's own suites. The suites' fake devices take their names and indices from theirs, so
//! the product's first device is index 0 as in C (the suites run at every load of `ib_core`),
//! and netlink, lookups and the product's clients never see them.

use crate::{
    c_abi::face::CFace,
    device::ib_device::{DeviceRef, Domain, IbDevice},
    device::names::{self, Name},
    netlink as rdma_nl,
    sysfs::{DeviceSysfs, DeviceTree},
};
use core::{marker::PhantomPinned, ptr::NonNull};
use kernel::{
    bindings,
    chrdev::DevT,
    net::namespace::Net,
    prelude::*,
    str::CString,
    sync::{global_lock, Arc, Mutex},
};

/// A kernel consumer of RDMA devices.
pub trait Client: Sync + Send {
    /// What the client keeps per device.
    type Data: Send;

    /// Whether the client uses kernel verbs, so that devices which do not serve them are not
    /// added to it (C's `no_kverbs_req`, inverted).
    const NEEDS_KVERBS: bool = true;

    /// A device is available. An error leaves the device without this client (no `remove`).
    fn add(&self, dev: &Arc<IbDevice>) -> Result<Self::Data>;

    /// The device goes away, or the client unregisters.
    fn remove(&self, dev: &IbDevice, data: Self::Data);

    /// The name netlink's `GET_CHARDEV` asks for (`uverbs`, `umad`), for a client that offers a
    /// character device per device (C's `client->name` with a `get_nl_info`).
    const CHARDEV_NAME: Option<&'static CStr> = None;

    /// The character device the client offers for `dev`, whose data is `data`; `port` is the
    /// port the request named (C's `get_nl_info`). Called with the client's data locked: it
    /// must not call back into the registry.
    fn chardev_info(
        &self,
        _dev: &IbDevice,
        _data: &Self::Data,
        _port: Option<u32>,
    ) -> Result<ChardevInfo> {
        Err(EOPNOTSUPP)
    }
}

/// A client's character device for one RDMA device, as `GET_CHARDEV` reports it (C's
/// `ib_client_nl_info`).
pub struct ChardevInfo {
    /// Its device number.
    pub devt: DevT,
    /// The version of the ABI behind it.
    pub abi: u64,
    /// Its name (`uverbs0`).
    pub name: CString,
    /// The driver id user space binds its provider library with (`UVERBS_DRIVER_ID`), if the
    /// client reports one.
    pub driver_id: Option<u32>,
}

/// The registry's view of a client registration: a Rust one ([`ClientRegistration`]) or a C
/// module's `struct ib_client` ([`crate::c_abi::clients`]). Called with the registry locked.
pub(crate) trait Attached: Sync {
    /// `dev` is available (`face`: its C structure, for the product's devices).
    fn attach(&self, dev: &Arc<IbDevice>, face: Option<&CFace>);
    /// `dev` goes away, or the client does.
    fn detach(&self, dev: &IbDevice, face: Option<&CFace>);
    /// `face`'s device has a new name (C's `rename` callback).
    fn renamed(&self, _face: &CFace) {}
    /// The client's character device name for netlink's `GET_CHARDEV`.
    fn chardev_name(&self) -> Option<&'static CStr> {
        None
    }
    /// `None` when the client is not attached to `dev`.
    fn chardev_info(&self, _dev: &IbDevice, _port: Option<u32>) -> Option<Result<ChardevInfo>> {
        None
    }
    /// The C module's client structure behind it (null: a Rust client).
    fn c_client(&self) -> *mut bindings::ib_client {
        core::ptr::null_mut()
    }
}

/// A registered client, by address of its pinned registration.
struct ClientPtr(NonNull<dyn Attached>);

// SAFETY: The pointee is `Sync` and valid while listed: a registration unlists itself in its
// destructor, under the registry lock.
unsafe impl Send for ClientPtr {}

impl ClientPtr {
    fn get(&self) -> &dyn Attached {
        // SAFETY: See the `Send` impl; callers hold the registry lock.
        unsafe { self.0.as_ref() }
    }
}

/// A device index and name in use: reserved (phase 1), then registered, then hidden while it
/// unregisters.
struct Entry {
    index: u32,
    name: Name,
    dev: Option<Arc<IbDevice>>,
    registered: bool,
    /// The device's sysfs presence, from phase 2 until [`release`].
    sysfs: Option<DeviceSysfs>,
    /// The device's C structure, from phase 2 until [`release`] (the product's devices).
    face: Option<CFace>,
}

/// A network namespace other than the initial one, listed from its `init` to its `exit` (C's
/// `rdma_nets`).
struct OtherNet(NonNull<bindings::net>);

// SAFETY: A namespace may be used from any thread; the pointer is only read.
unsafe impl Send for OtherNet {}

impl OtherNet {
    fn net(&self) -> &Net {
        // SAFETY: A listed namespace is alive: its `exit` unlists it before it goes
        // ([`net_removed`]).
        unsafe { Net::from_raw(self.0.as_ptr()) }
    }
}

/// Devices and clients.
pub(crate) struct Registry {
    devices: KVec<Entry>,
    clients: KVec<ClientPtr>,
    next_index: u32,
    /// The other network namespaces (the product's registry only).
    nets: KVec<OtherNet>,
    /// The `client_id` the next C client gets (C's `highest_client_id`): ids follow
    /// registration order, and the newest client's is taken back when it unregisters.
    next_c_client_id: u32,
}

impl Registry {
    const fn new() -> Self {
        Self {
            devices: KVec::new(),
            clients: KVec::new(),
            next_index: 0,
            nets: KVec::new(),
            next_c_client_id: 0,
        }
    }

    fn entry(&self, index: u32) -> Option<&Entry> {
        self.devices.iter().find(|e| e.index == index)
    }

    /// The registered devices, in index order (entries are kept sorted by index).
    fn registered(&self) -> impl Iterator<Item = &Arc<IbDevice>> {
        self.registered_with_faces().map(|(d, _)| d)
    }

    /// The registered devices with their C structures, in index order.
    fn registered_with_faces(&self) -> impl Iterator<Item = (&Arc<IbDevice>, Option<&CFace>)> {
        self.devices
            .iter()
            .filter(|e| e.registered)
            .filter_map(|e| Some((e.dev.as_ref()?, e.face.as_ref())))
    }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before any registration.
    pub(crate) unsafe(uninit) static REGISTRY: Mutex<Registry> = Registry::new();
}

/// A listed C client's structure.
struct CClientRaw(NonNull<bindings::ib_client>);

// SAFETY: The structure of a listed C client is valid, for any task, while it is listed (the
// contract of `list_c_client`).
unsafe impl Send for CClientRaw {}

global_lock! {
    // SAFETY: Initialized by the module initializer before any registration.
    //
    // The listed C clients' structures, in id order, under a lock of their own (C's `clients`
    // xarray beside its `devices`): `ib_get_net_dev_by_params` looks them up from tasks that a
    // client's `remove` may wait for (ib_cm's work, which its removal flushes), so not under
    // `REGISTRY`, held while clients are removed. Taken inside `REGISTRY`, never the reverse.
    unsafe(uninit) static C_CLIENTS: Mutex<KVec<CClientRaw>> = KVec::new();
}

#[cfg(CONFIG_KUNIT = "y")]
global_lock! {
    // SAFETY: Initialized by the module initializer before any registration.
    pub(crate) unsafe(uninit) static TEST_REGISTRY: Mutex<Registry> = Registry::new();
}

/// Initializes the registries.
///
/// # Safety
///
/// Called once, at module load, before any device or client registers.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe {
        REGISTRY.init();
        C_CLIENTS.init();
    }
    #[cfg(CONFIG_KUNIT = "y")]
    // SAFETY: As this function's contract.
    unsafe {
        TEST_REGISTRY.init()
    };
}

/// Runs `f` with the registry of `domain` locked.
fn with<R>(domain: Domain, f: impl FnOnce(&mut Registry) -> R) -> R {
    match domain {
        Domain::Live => f(&mut REGISTRY.lock()),
        #[cfg(CONFIG_KUNIT = "y")]
        Domain::Test => f(&mut TEST_REGISTRY.lock()),
    }
}

/// The character device the client called `name` offers for `dev` (C's
/// `__ib_get_client_nl_info`): `ENOENT` when no client of that name is attached to the device.
pub(crate) fn client_chardev_info(
    dev: &IbDevice,
    name: &[u8],
    port: Option<u32>,
) -> Result<ChardevInfo> {
    with(Domain::Live, |reg| {
        for c in reg.clients.iter() {
            let c = c.get();
            if c.chardev_name().map(|n| n.to_bytes()) != Some(name) {
                continue;
            }
            if let Some(info) = c.chardev_info(dev, port) {
                return info;
            }
        }
        Err(ENOENT)
    })
}

/// Frees the registries' memory at module unload (nothing can be registered then: registrants
/// hold a reference on this module).
pub(crate) fn clear() {
    let clear_one = |reg: &mut Registry| {
        reg.devices = KVec::new();
        reg.clients = KVec::new();
        reg.nets = KVec::new();
    };
    with(Domain::Live, clear_one);
    #[cfg(CONFIG_KUNIT = "y")]
    with(Domain::Test, clear_one);
    *C_CLIENTS.lock() = KVec::new();
}

/// A name and index taken for a device being set up; released on drop unless enabled.
pub(crate) struct Reserved {
    domain: Domain,
    index: u32,
    name: Name,
}

impl Reserved {
    /// The index.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The name.
    pub(crate) fn name(&self) -> Name {
        self.name
    }

    /// The registry.
    pub(crate) fn domain(&self) -> Domain {
        self.domain
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        release(self.domain, self.index);
    }
}

/// Phase 1: takes a name from `template` and the next free index in the registry of `domain`.
pub(crate) fn reserve(domain: Domain, template: &[u8]) -> Result<Reserved> {
    with(domain, |reg| reserve_in(reg, domain, template))
}

fn reserve_in(reg: &mut Registry, domain: Domain, template: &[u8]) -> Result<Reserved> {
    let name = names::assign(template, reg.devices.iter().map(|e| e.name.as_bytes()))?;
    // Indices increase and wrap, skipping those in use.
    let mut index = reg.next_index;
    while reg.entry(index).is_some() {
        index = index.wrapping_add(1) & 0x7fff_ffff;
    }
    reg.next_index = index.wrapping_add(1) & 0x7fff_ffff;
    let at = reg
        .devices
        .iter()
        .position(|e| e.index > index)
        .unwrap_or(reg.devices.len());
    reg.devices.reserve(1, GFP_KERNEL)?;
    let entry = Entry {
        index,
        name,
        dev: None,
        registered: false,
        sysfs: None,
        face: None,
    };
    reg.devices
        .insert_within_capacity(at, entry)
        .map_err(|_| ENOMEM)?;
    Ok(Reserved {
        domain,
        index,
        name,
    })
}

/// Phase 2: the device becomes visible with its sysfs presence, every client gets `add`, in
/// registration order, and then sysfs sends the `add` uevent (C's `enable_device_and_get`, then
/// `ib_device_notify_register`). A device without a class (KUnit's) has no sysfs presence;
/// `face` is the device's C structure, which C clients are handed.
/// First, while devices are shared, its sysfs gets its copy in every other namespace (C's
/// `add_compat_devs`, which C makes after the clients; here a failure leaves nothing to undo).
/// On an error the device is not registered and its reservation is released.
pub(crate) fn enable(
    reserved: Reserved,
    dev: &Arc<IbDevice>,
    mut sysfs: Option<DeviceSysfs>,
    mut face: Option<CFace>,
) -> Result {
    let (domain, index) = (reserved.domain, reserved.index);
    let done = with(domain, |reg| {
        if let (Some(s), Some(class)) = (sysfs.as_mut(), crate::device::class::class()) {
            if domain == Domain::Live && rdma_nl::shared_netns() {
                for n in reg.nets.iter() {
                    // SAFETY: The class stays registered while devices are (`device::class`),
                    // and a copy is taken out before its namespace exits (`net_removed`, under
                    // this lock, which finds it in the entry's sysfs).
                    unsafe { s.add_compat(class, n.net())? };
                }
            }
        }
        let Some(e) = reg.devices.iter_mut().find(|e| e.index == index) else {
            return Ok(());
        };
        e.dev = Some(dev.clone());
        e.registered = true;
        e.face = face.take();
        for c in reg.clients.iter() {
            c.get().attach(dev, e.face.as_ref());
        }
        if let Some(sysfs) = sysfs.take() {
            sysfs.announce();
            e.sysfs = Some(sysfs);
        }
        Ok(())
    });
    if done.is_err() {
        // Outside the lock: removal waits for running callbacks; then the reservation goes.
        drop(sysfs);
        drop(face);
        drop(reserved);
    } else {
        core::mem::forget(reserved);
    }
    done
}

/// A network namespace other than the initial one appeared (C's `rdma_dev_init_net`): listed,
/// and, while devices are shared, every registered device gets its sysfs copy there. On an
/// error nothing is left of it (the namespace is not created).
pub(crate) fn net_added(net: &Net) -> Result {
    let mut undo = KVec::new();
    let done = with(Domain::Live, |reg| {
        reg.nets.push(
            OtherNet(NonNull::new(net.as_raw()).ok_or(EINVAL)?),
            GFP_KERNEL,
        )?;
        let (Some(class), true) = (crate::device::class::class(), rdma_nl::shared_netns()) else {
            return Ok(());
        };
        let mut failed = Ok(());
        for e in reg.devices.iter_mut().filter(|e| e.registered) {
            if let Some(s) = e.sysfs.as_mut() {
                // SAFETY: As in `enable`.
                failed = unsafe { s.add_compat(class, net) };
                if failed.is_err() {
                    break;
                }
            }
        }
        if failed.is_err() {
            undo = take_net(reg, net);
        }
        failed
    });
    drop(undo);
    done
}

/// A network namespace other than the initial one is going (C's `rdma_dev_exit_net`): unlisted,
/// and the devices' copies there removed.
pub(crate) fn net_removed(net: &Net) {
    let gone = with(Domain::Live, |reg| take_net(reg, net));
    drop(gone);
}

/// Unlists `net` and takes the devices' copies there out, for the caller to drop outside the
/// lock (removal waits for running `show` and `store` callbacks). Should the vector not grow,
/// the copies are dropped here, under the lock.
fn take_net(reg: &mut Registry, net: &Net) -> KVec<DeviceTree> {
    reg.nets.retain(|n| n.0.as_ptr() != net.as_raw());
    let mut trees = KVec::new();
    let _ = trees.reserve(reg.devices.len(), GFP_KERNEL);
    for e in reg.devices.iter_mut() {
        if let Some(tree) = e.sysfs.as_mut().and_then(|s| s.take_compat(net)) {
            // Within the capacity reserved above, or dropped at once.
            let _ = trees.push_within_capacity(tree);
        }
    }
    trees
}

/// Hides a device and removes it from every client, latest client first.
pub(crate) fn disable(dev: &IbDevice) {
    with(dev.domain(), |reg| {
        let Some(e) = reg.devices.iter_mut().find(|e| e.index == dev.index()) else {
            return;
        };
        if !e.registered {
            return;
        }
        e.registered = false;
        let face = e.face.as_ref();
        for c in reg.clients.iter().rev() {
            c.get().detach(dev, face);
        }
        if let Some(f) = face {
            // The device's shared CQs go once every client is removed (C's
            // `ib_cq_pool_cleanup`).
            // SAFETY: The face's live structure, its pool set up when it was made.
            unsafe { crate::c_abi::cq_pool::cleanup(f.raw()) };
        }
    })
}

/// Removes a device's sysfs presence (outside the lock: removal waits for running `show` and
/// `store` callbacks) and its C structure, then frees its name and index.
pub(crate) fn release(domain: Domain, index: u32) {
    let (sysfs, face) = with(domain, |reg| {
        match reg.devices.iter_mut().find(|e| e.index == index) {
            Some(e) => (e.sysfs.take(), e.face.take()),
            None => (None, None),
        }
    });
    drop(sysfs);
    drop(face);
    with(domain, |reg| {
        if let Some(k) = reg.devices.iter().position(|e| e.index == index) {
            let _ = reg.devices.remove(k);
        }
    })
}

/// The registered device with `index`, referenced.
pub fn get(index: u32) -> Option<DeviceRef> {
    get_in(Domain::Live, index)
}

/// The registered device with `index` in the registry of `domain`, referenced.
pub(crate) fn get_in(domain: Domain, index: u32) -> Option<DeviceRef> {
    with(domain, |reg| {
        reg.registered().find(|d| d.index() == index)?.try_get()
    })
}

/// The registered device called `name`, referenced.
pub fn get_by_name(name: &[u8]) -> Option<DeviceRef> {
    get_by_name_in(Domain::Live, name)
}

/// The registered device called `name` in the registry of `domain`, referenced.
pub(crate) fn get_by_name_in(domain: Domain, name: &[u8]) -> Option<DeviceRef> {
    with(domain, |reg| {
        let e = reg
            .devices
            .iter()
            .find(|e| e.registered && e.name.as_bytes() == name)?;
        e.dev.as_ref()?.try_get()
    })
}

/// The registered device with the lowest index at or above `from`, referenced (for dumps that
/// continue where they stopped).
pub fn next_from(from: u32) -> Option<DeviceRef> {
    next_from_in(Domain::Live, from)
}

/// [`next_from`] in the registry of `domain`.
pub(crate) fn next_from_in(domain: Domain, from: u32) -> Option<DeviceRef> {
    with(domain, |reg| {
        reg.registered()
            .filter(|d| d.index() >= from)
            .find_map(|d| d.try_get())
    })
}

/// The registered devices, in index order, referenced.
pub fn devices() -> Result<KVec<DeviceRef>> {
    let reg = REGISTRY.lock();
    let mut v = KVec::new();
    for d in reg.registered() {
        if let Some(r) = d.try_get() {
            v.push(r, GFP_KERNEL)?;
        }
    }
    Ok(v)
}

/// Renames a registered device, with C's `ib_device_rename` rules: the same name is a no-op
/// (`false`), a name in use is `EEXIST`; sysfs follows. Returns whether the name changed.
pub(crate) fn rename(dev: &IbDevice, new: &[u8]) -> Result<bool> {
    let name = Name::new(new)?;
    with(dev.domain(), |reg| {
        let Some(k) = reg.devices.iter().position(|e| e.index == dev.index()) else {
            return Err(ENODEV);
        };
        if reg.devices[k].name == name {
            return Ok(false);
        }
        if reg.devices.iter().any(|e| e.name == name) {
            return Err(EEXIST);
        }
        if let Some(s) = reg.devices[k].sysfs.as_ref() {
            s.rename(&name)?;
        }
        reg.devices[k].name = name;
        dev.set_name(name);
        if let Some(face) = reg.devices[k].face.as_ref() {
            // C's `ib_device_rename`: the name, then each client's `rename`, newest last.
            if let Err(e) = face.rename(name.as_bytes()) {
                pr_warn!("no memory for the C name of a renamed device ({e:?})\n");
            }
            for c in reg.clients.iter() {
                c.get().renamed(face);
            }
        }
        Ok(true)
    })
}

/// Calls `f` with the sysfs presence of the KUnit device with `index` (KUnit checks).
#[cfg(CONFIG_KUNIT = "y")]
pub(crate) fn with_sysfs<R>(index: u32, f: impl FnOnce(Option<&DeviceSysfs>) -> R) -> R {
    with(Domain::Test, |reg| {
        f(reg.entry(index).and_then(|e| e.sysfs.as_ref()))
    })
}

/// Lists a C module's client and attaches it to every registered device, in index order (C's
/// `ib_register_client`): it gets the next C client id first.
///
/// # Safety
///
/// `client` stays valid and pinned until [`unlist_c_client`] returns it; `raw` is its C
/// structure, valid as long.
pub(crate) unsafe fn list_c_client(
    client: NonNull<dyn Attached>,
    raw: *mut bindings::ib_client,
) -> Result {
    let raw_ptr = NonNull::new(raw).ok_or(EINVAL)?;
    with(Domain::Live, |reg| {
        reg.clients.reserve(1, GFP_KERNEL)?;
        let mut c_clients = C_CLIENTS.lock();
        c_clients.reserve(1, GFP_KERNEL)?;
        // SAFETY: `raw` is valid (contract); the id is written before any callback runs.
        unsafe { (*raw).client_id = reg.next_c_client_id };
        reg.next_c_client_id += 1;
        reg.clients
            .push_within_capacity(ClientPtr(client))
            .map_err(|_| ENOMEM)?;
        c_clients
            .push_within_capacity(CClientRaw(raw_ptr))
            .map_err(|_| ENOMEM)?;
        drop(c_clients);
        // SAFETY: `client` is valid (contract).
        let c = unsafe { client.as_ref() };
        for (d, face) in reg.registered_with_faces() {
            c.attach(d, face);
        }
        Ok(())
    })
}

/// Unlists the C client whose structure is `raw` after removing it from every registered
/// device, in index order (C's `ib_unregister_client`); returns what [`list_c_client`] was
/// given, for the caller to free, or `None` if no such client is listed.
pub(crate) fn unlist_c_client(raw: *mut bindings::ib_client) -> Option<NonNull<dyn Attached>> {
    with(Domain::Live, |reg| {
        let k = reg.clients.iter().position(|c| c.get().c_client() == raw)?;
        let client = reg.clients.remove(k).ok()?;
        {
            let mut c_clients = C_CLIENTS.lock();
            if let Some(i) = c_clients.iter().position(|c| c.0.as_ptr() == raw) {
                let _ = c_clients.remove(i);
            }
        }
        for (d, face) in reg.registered_with_faces() {
            client.get().detach(d, face);
        }
        // SAFETY: `raw` is the listed client's structure, valid until it is unlisted (the
        // contract of `list_c_client`).
        let id = unsafe { (*raw).client_id };
        if id + 1 == reg.next_c_client_id {
            reg.next_c_client_id = id;
        }
        Some(client.0)
    })
}

/// The listed C clients for which `wanted` holds, in client id order, each with a use taken
/// (C's `ib_client_get`; the caller drops it, and `ib_unregister_client` waits for it).
pub(crate) fn c_clients_in_use(
    wanted: impl Fn(&bindings::ib_client) -> bool,
) -> Result<KVec<NonNull<bindings::ib_client>>> {
    let c_clients = C_CLIENTS.lock();
    let mut out = KVec::with_capacity(c_clients.len(), GFP_KERNEL)?;
    for c in c_clients.iter() {
        let raw = c.0;
        // SAFETY: A listed C client's structure is valid while it is listed (the contract
        // of `list_c_client`), and it is listed while the lock is held.
        let client = unsafe { raw.as_ref() };
        // SAFETY: As above; the count was set at registration, so a client whose last use
        // went (it is unregistering) is skipped.
        let in_use =
            || unsafe { bindings::rdma_rs_refcount_inc_not_zero(&raw mut (*raw.as_ptr()).uses) };
        if wanted(client) && in_use() {
            // The capacity is the list's length: the push cannot fail.
            if out.push_within_capacity(raw).is_err() {
                // SAFETY: The use just taken, dropped unused (never the last: the
                // registration holds one while the client is listed).
                unsafe { bindings::refcount_dec(&raw mut (*raw.as_ptr()).uses) };
            }
        }
    }
    // Listing order is id order: ids follow registration, and only the newest client's
    // id is given again (to a client listed after every other).
    Ok(out)
}

/// A client's registration: attached to every registered device while it lives.
#[pin_data(PinnedDrop)]
pub struct ClientRegistration<C: Client + 'static> {
    client: C,
    domain: Domain,
    #[pin]
    data: Mutex<KVec<(u32, C::Data)>>,
    #[pin]
    _pin: PhantomPinned,
}

/// The lock class (name and key) of every client's data lock. (A `new_mutex!` in the generic
/// registration would make one key that each client's instance names with its own copy of the
/// name, which lockdep reports.)
// Never inlined into another crate: a copy of the name literal there would be another pointer
// for the same key, which lockdep reports ("found a different class with the same key").
#[inline(never)]
fn client_data_class() -> (&'static CStr, Pin<&'static kernel::sync::LockClassKey>) {
    (CLIENT_DATA_NAME, kernel::static_lock_class!())
}

/// The name of every client's data lock class, one object in `ib_core`.
static CLIENT_DATA_NAME: &CStr = c"ib_core::ClientRegistration::data";

impl<C: Client + 'static> ClientRegistration<C> {
    /// Registers `client`; it gets `add` for every registered device.
    pub fn new(client: C) -> impl PinInit<Self, Error> {
        Self::new_in(Domain::Live, client)
    }

    /// Registers `client` with the KUnit suites' devices.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn new_test(client: C) -> impl PinInit<Self, Error> {
        Self::new_in(Domain::Test, client)
    }

    fn new_in(domain: Domain, client: C) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            client,
            domain,
            data <- Mutex::new(KVec::new(), client_data_class().0, client_data_class().1),
            _pin: PhantomPinned,
            _: {
                let ptr: NonNull<dyn Attached> = this;
                with(*domain, |reg| -> Result {
                    reg.clients.push(ClientPtr(ptr), GFP_KERNEL)?;
                    // SAFETY: `this` is fully initialized and pinned.
                    let r = unsafe { ptr.as_ref() };
                    for (d, face) in reg.registered_with_faces() {
                        r.attach(d, face);
                    }
                    Ok(())
                })?;
            },
        }? Error)
    }

    /// The client.
    pub fn client(&self) -> &C {
        &self.client
    }
}

#[pinned_drop]
impl<C: Client + 'static> PinnedDrop for ClientRegistration<C> {
    fn drop(self: Pin<&mut Self>) {
        let ptr: NonNull<dyn Attached> = NonNull::from(&*self);
        let this: &Self = &self;
        with(this.domain, |reg| {
            if let Some(k) = reg
                .clients
                .iter()
                .position(|p| core::ptr::addr_eq(p.0.as_ptr(), ptr.as_ptr()))
            {
                let _ = reg.clients.remove(k);
            }
            for (d, face) in reg.registered_with_faces() {
                this.detach(d, face);
            }
        })
    }
}

impl<C: Client + 'static> Attached for ClientRegistration<C> {
    fn attach(&self, dev: &Arc<IbDevice>, _face: Option<&CFace>) {
        if C::NEEDS_KVERBS && !dev.kverbs_provider() {
            return;
        }
        match self.client.add(dev) {
            Ok(data) => {
                if let Err(e) = self.data.lock().push((dev.index(), data), GFP_KERNEL) {
                    pr_err!("no memory to attach a client ({e:?})\n");
                }
            }
            Err(e) => pr_warn!(
                "a client refused device {}: err {}\n",
                dev.index(),
                e.to_errno()
            ),
        }
    }

    fn detach(&self, dev: &IbDevice, _face: Option<&CFace>) {
        let data = {
            let mut d = self.data.lock();
            match d.iter().position(|(i, _)| *i == dev.index()) {
                Some(k) => d.remove(k).ok(),
                None => None,
            }
        };
        if let Some((_, data)) = data {
            self.client.remove(dev, data);
        }
    }

    fn chardev_name(&self) -> Option<&'static CStr> {
        C::CHARDEV_NAME
    }

    fn chardev_info(&self, dev: &IbDevice, port: Option<u32>) -> Option<Result<ChardevInfo>> {
        let d = self.data.lock();
        let (_, data) = d.iter().find(|(i, _)| *i == dev.index())?;
        Some(self.client.chardev_info(dev, data, port))
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_registry)]
mod tests {
    use super::*;
    use crate::kunit_fake::register;
    use kernel::new_mutex;
    use kernel::{
        owned_workqueue::{Flags, OwnedQueue},
        sync::Arc,
        workqueue::Queue,
    };

    /// A closure that can be called through a box.
    trait Job: Send {
        fn run(self: KBox<Self>);
    }

    impl<F: FnOnce() + Send> Job for F {
        fn run(self: KBox<Self>) {
            KBox::into_inner(self)()
        }
    }

    /// A job on a workqueue, with a work item of its own: `Queue::try_spawn` would share its
    /// lock class key with the kernel's other users of it, under another name, and lockdep warns.
    #[pin_data]
    struct Task {
        #[pin]
        work: kernel::workqueue::Work<Task>,
        #[pin]
        job: Mutex<Option<KBox<dyn Job>>>,
    }

    kernel::impl_has_work! {
        impl HasWork<Self> for Task { self.work }
    }

    impl kernel::workqueue::WorkItem for Task {
        type Pointer = Arc<Task>;

        fn run(this: Arc<Task>) {
            let job = this.job.lock().take();
            if let Some(job) = job {
                job.run();
            }
        }
    }

    /// A workqueue of the test's own. Dropping it waits until every job on it has returned: a
    /// job signals the test before it leaves this module's code, and the module may be unloaded
    /// as soon as its tests are done.
    fn test_queue(unbound: bool) -> Result<OwnedQueue> {
        let flags = if unbound {
            Flags::UNBOUND
        } else {
            Flags::PERCPU
        };
        OwnedQueue::new(c"ib_core_kunit", flags, 0)
    }

    /// Runs `f` on `q`.
    fn spawn(q: &Queue, f: KBox<dyn Job>) -> Result {
        let task = Arc::pin_init(
            pin_init!(Task {
                work <- kernel::new_work!("ib_core::device::registry::tests"),
                job <- new_mutex!(Some(f)),
            }),
            GFP_KERNEL,
        )?;
        q.enqueue(task).map_err(|_| EBUSY)
    }

    /// What a test client saw: (client tag, 'a' or 'r', device name).
    type Log = Arc<Mutex<KVec<(u8, u8, KVec<u8>)>>>;

    struct Recorder {
        tag: u8,
        log: Log,
    }

    impl Client for Recorder {
        type Data = ();
        const NEEDS_KVERBS: bool = false;

        fn add(&self, dev: &Arc<IbDevice>) -> Result<()> {
            let mut n = KVec::new();
            n.extend_from_slice(&dev.name(), GFP_KERNEL)?;
            self.log.lock().push((self.tag, b'a', n), GFP_KERNEL)?;
            Ok(())
        }

        fn remove(&self, dev: &IbDevice, (): ()) {
            let mut n = KVec::new();
            if n.extend_from_slice(&dev.name(), GFP_KERNEL).is_ok() {
                let _ = self.log.lock().push((self.tag, b'r', n), GFP_KERNEL);
            }
        }
    }

    fn seen(log: &Log) -> KVec<(u8, u8, KVec<u8>)> {
        core::mem::take(&mut *log.lock())
    }

    fn ev(tag: u8, what: u8, name: &[u8]) -> (u8, u8, KVec<u8>) {
        let mut n = KVec::new();
        let _ = n.extend_from_slice(name, GFP_KERNEL);
        (tag, what, n)
    }

    /// A client that uses kernel verbs: it counts the devices it was given.
    struct VerbsUser {
        added: Arc<Mutex<u32>>,
    }

    impl Client for VerbsUser {
        type Data = ();

        fn add(&self, _dev: &Arc<IbDevice>) -> Result<()> {
            *self.added.lock() += 1;
            Ok(())
        }

        fn remove(&self, _dev: &IbDevice, (): ()) {}
    }

    #[test]
    fn devices_without_kernel_verbs_are_not_given_to_verbs_clients() -> Result {
        let added = Arc::pin_init(new_mutex!(0u32), GFP_KERNEL)?;
        let log: Log = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)?;
        let d = register(b"kunit_%d", 1)?;
        assert!(!d.device().kverbs_provider());
        let verbs = KBox::pin_init(
            ClientRegistration::new_test(VerbsUser {
                added: added.clone(),
            }),
            GFP_KERNEL,
        )?;
        let any = KBox::pin_init(
            ClientRegistration::new_test(Recorder {
                tag: b'N',
                log: log.clone(),
            }),
            GFP_KERNEL,
        )?;
        // As C's add_client_context: only clients that say they need no verbs get the device.
        assert_eq!(*added.lock(), 0);
        assert_eq!(seen(&log).len(), 1);
        drop(any);
        drop(verbs);
        drop(d);
        Ok(())
    }

    #[test]
    fn clients_and_devices_in_the_c_cores_order() -> Result {
        let log: Log = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)?;
        let a = KBox::pin_init(
            ClientRegistration::new_test(Recorder {
                tag: b'A',
                log: log.clone(),
            }),
            GFP_KERNEL,
        )?;
        let d0 = register(b"kunit_%d", 1)?;
        let b = KBox::pin_init(
            ClientRegistration::new_test(Recorder {
                tag: b'B',
                log: log.clone(),
            }),
            GFP_KERNEL,
        )?;
        let d1 = register(b"kunit_%d", 2)?;
        assert!(d1.device().index() > d0.device().index());
        assert_eq!(
            &seen(&log)[..],
            &[
                ev(b'A', b'a', b"kunit_0"),
                ev(b'B', b'a', b"kunit_0"),
                ev(b'A', b'a', b"kunit_1"),
                ev(b'B', b'a', b"kunit_1"),
            ]
        );
        // Unregistering a device removes it from the clients, latest first.
        let old = d0.device().index();
        drop(d0);
        assert_eq!(
            &seen(&log)[..],
            &[ev(b'B', b'r', b"kunit_0"), ev(b'A', b'r', b"kunit_0")]
        );
        // Its name is free again, its index is not reused at once.
        let d2 = register(b"kunit_%d", 1)?;
        assert_eq!(&d2.device().name()[..], b"kunit_0");
        assert_ne!(d2.device().index(), old);
        assert_eq!(
            &seen(&log)[..],
            &[ev(b'A', b'a', b"kunit_0"), ev(b'B', b'a', b"kunit_0")]
        );
        // A fixed name cannot be taken twice.
        assert!(register(b"kunit_1", 1).is_err());
        // Unregistering a client removes it from every device.
        drop(b);
        assert_eq!(
            &seen(&log)[..],
            &[ev(b'B', b'r', b"kunit_1"), ev(b'B', b'r', b"kunit_0")]
        );
        drop(d1);
        drop(d2);
        drop(a);
        assert_eq!(
            &seen(&log)[..],
            &[ev(b'A', b'r', b"kunit_1"), ev(b'A', b'r', b"kunit_0")]
        );
        Ok(())
    }

    #[test]
    fn fake_devices_stay_out_of_the_products_registry() -> Result {
        let live_next = REGISTRY.lock().next_index;
        let log: Log = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)?;
        let live_client = KBox::pin_init(
            ClientRegistration::new(Recorder {
                tag: b'L',
                log: log.clone(),
            }),
            GFP_KERNEL,
        )?;
        let d = register(b"kunit_apart%d", 1)?;
        let index = d.device().index();
        // The product's index space and names are untouched, its lookups and clients do not
        // see the device; the suites' registry does.
        assert_eq!(REGISTRY.lock().next_index, live_next);
        assert!(REGISTRY.lock().devices.is_empty());
        assert!(get_by_name(b"kunit_apart0").is_none());
        assert!(get(index).is_none());
        assert!(next_from(0).is_none());
        assert!(get_by_name_in(Domain::Test, b"kunit_apart0").is_some());
        assert!(seen(&log).is_empty());
        drop(d);
        drop(live_client);
        assert!(seen(&log).is_empty());
        Ok(())
    }

    /// A driver whose operations record when they are dropped.
    struct DropRecorder {
        dropped: Arc<kernel::sync::atomic::Atomic<bool>>,
    }

    impl Drop for DropRecorder {
        fn drop(&mut self) {
            self.dropped.store(true, kernel::sync::atomic::Relaxed);
        }
    }

    #[vtable]
    impl crate::verbs::ops::DeviceOps for DropRecorder {
        type Pd = crate::verbs::ops::NoVerbs;
        type Cq = crate::verbs::ops::NoVerbs;
        type Qp = crate::verbs::ops::NoVerbs;
        type Mr = crate::verbs::ops::NoVerbs;
        type Srq = crate::verbs::ops::NoVerbs;
        type Ah = crate::verbs::ops::NoVerbs;
        type UContext = crate::verbs::ops::NoVerbs;

        fn query_device(&self) -> Result<crate::attrs::DeviceAttr> {
            Ok(crate::kunit_fake::device_attr())
        }

        fn query_port(&self, _port: u32) -> Result<crate::attrs::PortAttr> {
            Ok(crate::attrs::PortAttr::default())
        }

        fn get_port_immutable(&self, _port: u32) -> Result<crate::attrs::PortImmutable> {
            Ok(crate::attrs::PortImmutable {
                core_cap_flags: crate::attrs::CORE_PORT_IBA_IB,
                gid_tbl_len: 0,
                pkey_tbl_len: 0,
                max_mad_size: 256,
            })
        }
    }

    #[test]
    fn the_drivers_operations_are_dropped_before_unregistration_returns() -> Result {
        use kernel::{
            sync::atomic::{Atomic, Relaxed},
            time::{delay::fsleep, Delta},
        };

        let queue = test_queue(false)?;
        let dropped = Arc::new(Atomic::new(false), GFP_KERNEL)?;
        let reg = crate::device::Registration::new_test(
            crate::kunit_fake::info(b"kunit_owner%d", 1),
            DropRecorder {
                dropped: dropped.clone(),
            },
        )?;
        // Someone (a sysfs reader, a netlink dump, a client) still holds the device, and lets
        // it go a little later, on another thread.
        let holder = reg.device().clone();
        spawn(
            &queue,
            KBox::new(
                move || {
                    fsleep(Delta::from_millis(100));
                    drop(holder);
                },
                GFP_KERNEL,
            )?,
        )?;
        // Unregistration returns only once the driver's operations are dropped: after it, the
        // driver (and its module) may go.
        drop(reg);
        assert!(dropped.load(Relaxed));
        drop(queue);
        Ok(())
    }

    #[test]
    fn unregister_waits_for_users() -> Result {
        use kernel::{
            sync::{
                atomic::{Atomic, Relaxed},
                Completion,
            },
            time::{delay::fsleep, Delta},
        };

        let queue = test_queue(false)?;
        let reg = register(b"kunit_busy", 1)?;
        let index = reg.device().index();
        let user = get_in(Domain::Test, index).ok_or(ENODEV)?;
        let done = Arc::pin_init(Completion::new(), GFP_KERNEL)?;
        let unregistered = Arc::new(Atomic::new(false), GFP_KERNEL)?;
        {
            let (done, unregistered) = (done.clone(), unregistered.clone());
            spawn(
                &queue,
                KBox::new(
                    move || {
                        drop(reg);
                        unregistered.store(true, Relaxed);
                        done.complete_all();
                    },
                    GFP_KERNEL,
                )?,
            )?;
        }
        // The device is hidden at once, but unregistration waits for the user.
        fsleep(Delta::from_millis(100));
        assert!(get_in(Domain::Test, index).is_none());
        assert!(get_by_name_in(Domain::Test, b"kunit_busy").is_none());
        assert!(!unregistered.load(Relaxed));
        assert_eq!(&user.name()[..], b"kunit_busy");
        drop(user);
        done.wait_for_completion();
        assert!(unregistered.load(Relaxed));
        // The name is free again.
        let again = register(b"kunit_busy", 1)?;
        assert_eq!(&again.device().name()[..], b"kunit_busy");
        Ok(())
    }

    #[test]
    fn concurrent_device_and_client_churn() -> Result {
        use kernel::sync::{
            atomic::{Atomic, Relaxed},
            Completion,
        };

        const WORKERS: usize = 4;
        const ROUNDS: u32 = 40;
        let queue = test_queue(true)?;
        let failures = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let mut done = KVec::new();
        for w in 0..WORKERS {
            let c = Arc::pin_init(Completion::new(), GFP_KERNEL)?;
            done.push(c.clone(), GFP_KERNEL)?;
            let failures = failures.clone();
            let work = KBox::new(
                move || {
                    let log: Result<Log> = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL);
                    for _ in 0..ROUNDS {
                        let ok = match w % 2 {
                            // Devices come and go, and are looked up while they do.
                            0 => register(b"kchurn%d", 2)
                                .map(|r| {
                                    let found = get_in(Domain::Test, r.device().index()).is_some();
                                    let _ = next_from_in(Domain::Test, 0);
                                    found
                                })
                                .unwrap_or(false),
                            // Clients come and go.
                            _ => match &log {
                                Ok(log) => KBox::pin_init(
                                    ClientRegistration::new_test(Recorder {
                                        tag: b'C',
                                        log: log.clone(),
                                    }),
                                    GFP_KERNEL,
                                )
                                .is_ok(),
                                Err(_) => false,
                            },
                        };
                        if !ok {
                            failures.fetch_add(1, Relaxed);
                        }
                    }
                    // Every add a client saw was matched by a remove.
                    if let Ok(log) = &log {
                        let log = log.lock();
                        let adds = log.iter().filter(|e| e.1 == b'a').count();
                        let removes = log.iter().filter(|e| e.1 == b'r').count();
                        if adds != removes {
                            failures.fetch_add(1, Relaxed);
                        }
                    }
                    c.complete_all();
                },
                GFP_KERNEL,
            )?;
            spawn(&queue, work)?;
        }
        for c in done.iter() {
            c.wait_for_completion();
        }
        assert_eq!(failures.load(Relaxed), 0);
        assert!(next_from_in(Domain::Test, 0).is_none());
        Ok(())
    }
}
