// SPDX-License-Identifier: GPL-2.0

//! The interface registry: how protocol modules (`mlx5_ib`, test interfaces) attach to the
//! functions this driver binds.
//!
//! A module implements [`Interface`] and keeps a pinned [`Registration`] for as long as it wants
//! devices. Every bound function gets [`Interface::add`] (functions bound before the
//! registration at registration time, later ones when they are bound), [`Interface::event`] for
//! port changes, and [`Interface::remove`] exactly once: when the function is unbound or when
//! the registration is dropped, whichever comes first. Callbacks run in process context with the
//! registry locked: they must not register or unregister interfaces.

use crate::commands::Commands;
pub use crate::hca::HcaCaps;
use core::{marker::PhantomPinned, ptr::NonNull};
use kernel::{
    device,
    prelude::*,
    str::CString,
    sync::{aref::ARef, atomic::Atomic, global_lock, Arc, Mutex},
};

/// What the function reported when it was brought up.
#[derive(Clone, Copy, Debug)]
pub struct FunctionInfo {
    /// Firmware major version (init segment).
    pub fw_major: u16,
    /// Firmware minor version.
    pub fw_minor: u16,
    /// Firmware sub-minor version.
    pub fw_subminor: u16,
    /// PCI vendor id.
    pub vendor_id: u16,
    /// PCI device id.
    pub device_id: u16,
    /// PCI revision.
    pub revision: u8,
    /// Board id (PSID) from QUERY_ADAPTER, NUL-padded.
    pub board_id: [u8; 16],
}

/// What an interface learns about a function.
pub struct Mlx5Device {
    id: u32,
    name: CString,
    ports: u8,
    commands: Commands,
    info: FunctionInfo,
    caps: HcaCaps,
    fw_pages: Arc<Atomic<u32>>,
    parent: ARef<device::Device>,
}

impl Mlx5Device {
    /// A stable number for the function while it is bound.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The function's PCI name (`0000:01:00.0`).
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// Number of ports.
    pub fn ports(&self) -> u8 {
        self.ports
    }

    /// Firmware commands on the function (a handle the interface may keep).
    pub fn commands(&self) -> &Commands {
        &self.commands
    }

    /// What the function reported at bring-up.
    pub fn info(&self) -> &FunctionInfo {
        &self.info
    }

    /// The HCA's current capabilities.
    pub fn caps(&self) -> &HcaCaps {
        &self.caps
    }

    /// The count of pages the firmware holds, kept up to date as it asks for pages and gives
    /// them back (C's `priv.fw_pages`); the interface may keep it.
    pub fn fw_pages(&self) -> &Arc<Atomic<u32>> {
        &self.fw_pages
    }

    /// The PCI function's device (the parent of devices the interface registers).
    pub fn device(&self) -> &ARef<device::Device> {
        &self.parent
    }
}

/// Events passed to interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port went down.
    PortDown(u8),
    /// The port became active.
    PortActive(u8),
    /// Another port change (LID, P_Key, GUID, client re-register, initialized): port and the
    /// device's sub-type.
    PortChange(u8, u8),
}

impl Event {
    /// The event for a PORT_CHANGE event queue entry.
    pub(crate) fn port_change(port: u8, sub_type: u8) -> Self {
        match sub_type {
            1 => Event::PortDown(port),
            4 => Event::PortActive(port),
            s => Event::PortChange(port, s),
        }
    }
}

/// A protocol module's callbacks.
pub trait Interface: Sync + Send {
    /// What the interface keeps per function.
    type Context: Send;

    /// A function is available; returns the interface's state for it. An error leaves the
    /// function without this interface (no `event` or `remove` follows).
    fn add(&self, dev: &Mlx5Device) -> Result<Self::Context>;

    /// The function goes away (or the interface unregisters).
    fn remove(&self, dev: &Mlx5Device, ctx: Self::Context);

    /// Something happened on the function.
    fn event(&self, dev: &Mlx5Device, ctx: &mut Self::Context, event: Event);
}

/// The registry's view of a registration.
trait Attached: Sync {
    fn attach(&self, dev: &Mlx5Device);
    fn detach(&self, dev: &Mlx5Device);
    fn notify(&self, dev: &Mlx5Device, event: Event);
}

/// A registered interface, by address of its pinned registration.
struct InterfacePtr(NonNull<dyn Attached>);

// SAFETY: The pointee is `Sync` and stays valid while it is in the registry (a registration
// removes itself in its destructor), so the pointer may move between threads.
unsafe impl Send for InterfacePtr {}

impl InterfacePtr {
    fn get(&self) -> &dyn Attached {
        // SAFETY: See the `Send` impl: the registration is alive while its pointer is listed, and
        // the registry lock is held by every caller.
        unsafe { self.0.as_ref() }
    }
}

/// Bound functions and registered interfaces.
pub(crate) struct Registry {
    interfaces: KVec<InterfacePtr>,
    devices: KVec<Mlx5Device>,
    next_id: u32,
}

impl Registry {
    const fn new() -> Self {
        Self {
            interfaces: KVec::new(),
            devices: KVec::new(),
            next_id: 0,
        }
    }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the driver or any export is used.
    pub(crate) unsafe(uninit) static REGISTRY: Mutex<Registry> = Registry::new();
}

/// Adds a bound function; every registered interface gets `add`. Returns its id.
pub(crate) fn add_device(
    parent: ARef<device::Device>,
    ports: u8,
    commands: Commands,
    info: FunctionInfo,
    caps: HcaCaps,
    fw_pages: Arc<Atomic<u32>>,
) -> Result<u32> {
    let mut reg = REGISTRY.lock();
    let id = reg.next_id;
    let dev = Mlx5Device {
        id,
        name: CString::try_from_fmt(fmt!("{}", parent.name()))?,
        ports,
        commands,
        info,
        caps,
        fw_pages,
        parent,
    };
    reg.devices.reserve(1, GFP_KERNEL)?;
    reg.next_id = id.wrapping_add(1);
    for i in reg.interfaces.iter() {
        i.get().attach(&dev);
    }
    reg.devices.push(dev, GFP_KERNEL)?;
    Ok(id)
}

/// Removes a function; every registered interface gets `remove`, latest registered first.
pub(crate) fn remove_device(id: u32) {
    let mut reg = REGISTRY.lock();
    let Some(k) = reg.devices.iter().position(|d| d.id == id) else {
        return;
    };
    if let Ok(dev) = reg.devices.remove(k) {
        for i in reg.interfaces.iter().rev() {
            i.get().detach(&dev);
        }
    }
}

/// Passes `event` on function `id` to every interface.
pub(crate) fn dispatch(id: u32, event: Event) {
    let reg = REGISTRY.lock();
    if let Some(dev) = reg.devices.iter().find(|d| d.id == id) {
        for i in reg.interfaces.iter() {
            i.get().notify(dev, event);
        }
    }
}

/// Frees the registry's memory at module unload (no interface can be registered then: each
/// holds a reference on this module).
pub(crate) fn clear() {
    let mut reg = REGISTRY.lock();
    reg.interfaces = KVec::new();
    reg.devices = KVec::new();
}

/// Lists `this` and attaches it to every bound function.
fn register(this: NonNull<dyn Attached>) -> Result {
    let mut reg = REGISTRY.lock();
    reg.interfaces.push(InterfacePtr(this), GFP_KERNEL)?;
    // SAFETY: `this` is the caller's fully initialized, pinned registration.
    let r = unsafe { this.as_ref() };
    for dev in reg.devices.iter() {
        r.attach(dev);
    }
    Ok(())
}

/// Detaches `this` from every function and unlists it.
fn unregister(this: NonNull<dyn Attached>) {
    let mut reg = REGISTRY.lock();
    if let Some(k) = reg
        .interfaces
        .iter()
        .position(|p| core::ptr::addr_eq(p.0.as_ptr(), this.as_ptr()))
    {
        let _ = reg.interfaces.remove(k);
    }
    // SAFETY: `this` is the caller's registration, still alive (its destructor is running).
    let r = unsafe { this.as_ref() };
    for dev in reg.devices.iter().rev() {
        r.detach(dev);
    }
}

/// An interface's registration: attached to every bound function while it lives.
#[pin_data(PinnedDrop)]
pub struct Registration<I: Interface + 'static> {
    iface: I,
    #[pin]
    contexts: Mutex<KVec<(u32, I::Context)>>,
    #[pin]
    _pin: PhantomPinned,
}

/// The lock class (name and key) of every interface's context lock. (A `new_mutex!` in the
/// generic registration would make one key that each interface's instance names with its own copy
/// of the name, which lockdep reports.)
fn contexts_class() -> (&'static CStr, Pin<&'static kernel::sync::LockClassKey>) {
    (
        c"mlx5_core::interface::Registration::contexts",
        kernel::static_lock_class!(),
    )
}

impl<I: Interface + 'static> Registration<I> {
    /// Registers `iface`; it gets `add` for every function already bound.
    pub fn new(iface: I) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            iface,
            contexts <- Mutex::new(KVec::new(), contexts_class().0, contexts_class().1),
            _pin: PhantomPinned,
            _: {
                let ptr: NonNull<dyn Attached> = this;
                register(ptr)?;
            },
        }? Error)
    }

    /// The interface.
    pub fn interface(&self) -> &I {
        &self.iface
    }
}

#[pinned_drop]
impl<I: Interface + 'static> PinnedDrop for Registration<I> {
    fn drop(self: Pin<&mut Self>) {
        let ptr: NonNull<dyn Attached> = NonNull::from(&*self);
        unregister(ptr);
    }
}

impl<I: Interface + 'static> Attached for Registration<I> {
    fn attach(&self, dev: &Mlx5Device) {
        match self.iface.add(dev) {
            Ok(ctx) => {
                if let Err(e) = self.contexts.lock().push((dev.id, ctx), GFP_KERNEL) {
                    pr_err!("mlx5_core: no memory to attach an interface ({e:?})\n");
                }
            }
            Err(e) => pr_warn!(
                "mlx5_core: an interface refused {}: err {}\n",
                dev.name(),
                e.to_errno()
            ),
        }
    }

    fn detach(&self, dev: &Mlx5Device) {
        let ctx = {
            let mut c = self.contexts.lock();
            match c.iter().position(|(id, _)| *id == dev.id) {
                Some(k) => c.remove(k).ok(),
                None => None,
            }
        };
        if let Some((_, ctx)) = ctx {
            self.iface.remove(dev, ctx);
        }
    }

    fn notify(&self, dev: &Mlx5Device, event: Event) {
        let mut c = self.contexts.lock();
        if let Some((_, ctx)) = c.iter_mut().find(|(id, _)| *id == dev.id) {
            self.iface.event(dev, ctx, event);
        }
    }
}
