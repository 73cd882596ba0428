// SPDX-License-Identifier: GPL-2.0

//! Registered RDMA devices and clients, with the C core's ordering:
//!
//! - a device gets a unique name (see [`crate::names`]) and an index that increases (cyclically,
//!   not reused at once, as the C core's `xa_alloc_cyclic`);
//! - a client that registers gets `add` for every registered device, in index order;
//! - a device that registers is added to every client, in client registration order;
//! - a device that unregisters is removed from every client in reverse registration order;
//! - a client that unregisters is removed from every device.
//!
//! Client callbacks run with the registry locked: they must not register or unregister devices
//! or clients.

use crate::names;
use core::{marker::PhantomPinned, ptr::NonNull};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{global_lock, Mutex},
};

/// A registered device, as clients see it.
pub struct IbDevice {
    index: u32,
    name: KVec<u8>,
    ports: u8,
}

impl IbDevice {
    /// The device index (stable while registered; what netlink calls `DEV_INDEX`).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The device name (`mlx5_0`).
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Number of ports.
    pub fn ports(&self) -> u8 {
        self.ports
    }
}

/// A kernel consumer of RDMA devices.
pub trait Client: Sync + Send {
    /// What the client keeps per device.
    type Data: Send;

    /// A device is available. An error leaves the device without this client (no `remove`).
    fn add(&self, dev: &IbDevice) -> Result<Self::Data>;

    /// The device goes away, or the client unregisters.
    fn remove(&self, dev: &IbDevice, data: Self::Data);
}

/// The registry's view of a client registration.
trait Attached: Sync {
    fn attach(&self, dev: &IbDevice);
    fn detach(&self, dev: &IbDevice);
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

/// Devices and clients.
pub(crate) struct Registry {
    devices: KVec<IbDevice>,
    clients: KVec<ClientPtr>,
    next_index: u32,
}

impl Registry {
    const fn new() -> Self {
        Self {
            devices: KVec::new(),
            clients: KVec::new(),
            next_index: 0,
        }
    }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before any registration.
    pub(crate) unsafe(uninit) static REGISTRY: Mutex<Registry> = Registry::new();
}

/// Frees the registry's memory at module unload (nothing can be registered then: registrants
/// hold a reference on this module).
pub(crate) fn clear() {
    let mut reg = REGISTRY.lock();
    reg.devices = KVec::new();
    reg.clients = KVec::new();
}

/// A registered device; dropping it unregisters the device.
pub struct DeviceRegistration {
    index: u32,
}

impl DeviceRegistration {
    /// Registers a device named after `template` (`mlx5_%d` or a fixed name) with `ports`
    /// ports; every client gets `add`.
    pub fn new(template: &[u8], ports: u8) -> Result<Self> {
        let mut reg = REGISTRY.lock();
        let name = names::assign(template, reg.devices.iter().map(|d| &d.name[..]))?;
        // Indices increase and wrap, skipping those in use.
        let mut index = reg.next_index;
        while reg.devices.iter().any(|d| d.index == index) {
            index = index.wrapping_add(1) & 0x7fff_ffff;
        }
        reg.next_index = index.wrapping_add(1) & 0x7fff_ffff;
        let dev = IbDevice { index, name, ports };
        reg.devices.reserve(1, GFP_KERNEL)?;
        for c in reg.clients.iter() {
            c.get().attach(&dev);
        }
        reg.devices.push(dev, GFP_KERNEL)?;
        Ok(Self { index })
    }

    /// The device's index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The device's name.
    pub fn name(&self) -> Result<KVec<u8>> {
        let reg = REGISTRY.lock();
        let d = reg
            .devices
            .iter()
            .find(|d| d.index == self.index)
            .ok_or(ENODEV)?;
        let mut n = KVec::new();
        n.extend_from_slice(&d.name, GFP_KERNEL)?;
        Ok(n)
    }
}

impl Drop for DeviceRegistration {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock();
        let Some(k) = reg.devices.iter().position(|d| d.index == self.index) else {
            return;
        };
        if let Ok(dev) = reg.devices.remove(k) {
            for c in reg.clients.iter().rev() {
                c.get().detach(&dev);
            }
        }
    }
}

/// A client's registration: attached to every registered device while it lives.
#[pin_data(PinnedDrop)]
pub struct ClientRegistration<C: Client + 'static> {
    client: C,
    #[pin]
    data: Mutex<KVec<(u32, C::Data)>>,
    #[pin]
    _pin: PhantomPinned,
}

impl<C: Client + 'static> ClientRegistration<C> {
    /// Registers `client`; it gets `add` for every registered device.
    pub fn new(client: C) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            client,
            data <- new_mutex!(KVec::new()),
            _pin: PhantomPinned,
            _: {
                let ptr: NonNull<dyn Attached> = this;
                let mut reg = REGISTRY.lock();
                reg.clients.push(ClientPtr(ptr), GFP_KERNEL)?;
                // SAFETY: `this` is fully initialized and pinned.
                let r = unsafe { ptr.as_ref() };
                for d in reg.devices.iter() {
                    r.attach(d);
                }
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
        let mut reg = REGISTRY.lock();
        if let Some(k) = reg
            .clients
            .iter()
            .position(|p| core::ptr::addr_eq(p.0.as_ptr(), ptr.as_ptr()))
        {
            let _ = reg.clients.remove(k);
        }
        for d in reg.devices.iter() {
            self.detach(d);
        }
    }
}

impl<C: Client + 'static> Attached for ClientRegistration<C> {
    fn attach(&self, dev: &IbDevice) {
        match self.client.add(dev) {
            Ok(data) => {
                if let Err(e) = self.data.lock().push((dev.index, data), GFP_KERNEL) {
                    pr_err!("no memory to attach a client ({e:?})\n");
                }
            }
            Err(e) => pr_warn!(
                "a client refused device {}: err {}\n",
                dev.index,
                e.to_errno()
            ),
        }
    }

    fn detach(&self, dev: &IbDevice) {
        let data = {
            let mut d = self.data.lock();
            match d.iter().position(|(i, _)| *i == dev.index) {
                Some(k) => d.remove(k).ok(),
                None => None,
            }
        };
        if let Some((_, data)) = data {
            self.client.remove(dev, data);
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_registry)]
mod tests {
    use super::*;
    use kernel::sync::Arc;

    /// What a test client saw: (client tag, 'a' or 'r', device name).
    type Log = Arc<Mutex<KVec<(u8, u8, KVec<u8>)>>>;

    struct Recorder {
        tag: u8,
        log: Log,
    }

    impl Client for Recorder {
        type Data = ();

        fn add(&self, dev: &IbDevice) -> Result<()> {
            let mut n = KVec::new();
            n.extend_from_slice(dev.name(), GFP_KERNEL)?;
            self.log.lock().push((self.tag, b'a', n), GFP_KERNEL)?;
            Ok(())
        }

        fn remove(&self, dev: &IbDevice, (): ()) {
            let mut n = KVec::new();
            if n.extend_from_slice(dev.name(), GFP_KERNEL).is_ok() {
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

    #[test]
    fn clients_and_devices_in_the_c_cores_order() -> Result {
        let log: Log = Arc::pin_init(new_mutex!(KVec::new()), GFP_KERNEL)?;
        let a = KBox::pin_init(
            ClientRegistration::new(Recorder {
                tag: b'A',
                log: log.clone(),
            }),
            GFP_KERNEL,
        )?;
        let d0 = DeviceRegistration::new(b"kunit_%d", 1)?;
        let b = KBox::pin_init(
            ClientRegistration::new(Recorder {
                tag: b'B',
                log: log.clone(),
            }),
            GFP_KERNEL,
        )?;
        let d1 = DeviceRegistration::new(b"kunit_%d", 2)?;
        assert!(d1.index() > d0.index());
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
        let old = d0.index();
        drop(d0);
        assert_eq!(
            &seen(&log)[..],
            &[ev(b'B', b'r', b"kunit_0"), ev(b'A', b'r', b"kunit_0")]
        );
        // Its name is free again, its index is not reused at once.
        let d2 = DeviceRegistration::new(b"kunit_%d", 1)?;
        assert_eq!(&d2.name()?[..], b"kunit_0");
        assert_ne!(d2.index(), old);
        assert_eq!(
            &seen(&log)[..],
            &[ev(b'A', b'a', b"kunit_0"), ev(b'B', b'a', b"kunit_0")]
        );
        // A fixed name cannot be taken twice.
        assert!(DeviceRegistration::new(b"kunit_1", 1).is_err());
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
}
