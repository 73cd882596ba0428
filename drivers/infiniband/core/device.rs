// SPDX-License-Identifier: GPL-2.0

//! RDMA devices as drivers register them: the driver's operations ([`DeviceOps`]), what it says
//! about its device ([`DeviceInfo`]) and its [`Registration`]; renames ([`rename`]).
//!
//! Registration follows the C core (`ib_register_device`): the name and index are taken first,
//! then the port immutable data and the device attributes are read from the driver, the GID and
//! P_Key caches are filled, sysfs is populated, and only then is the device marked registered
//! and handed to clients; a MONITOR event announces it last. Unregistration hides the device,
//! removes it from clients in reverse order, waits until nobody holds a [`DeviceRef`], announces
//! it, and removes sysfs.
//!
//! This is the layer that ties the registry, sysfs and the MONITOR events together; the device
//! itself ([`IbDevice`]) sits below all three.

pub(crate) mod class;
pub mod events;
pub(crate) mod gid_events;
pub mod gid_table;
pub mod ib_device;
pub mod monitor;
pub mod names;
pub mod registry;
pub(crate) mod workqueues;

use crate::{
    attrs::{DeviceAttr, PortImmutable},
    c_abi::face::CFace,
    device::class::class,
    device::events::EventType,
    device::ib_device::{read_ports, Domain},
    device::monitor::Event,
    sysfs::DeviceSysfs,
    verbs::ops::{is_kverbs_provider, DeviceImpl, DynOps},
};
pub use crate::{
    attrs::{FwVersion, NodeDesc, ShortText, FW_VERSION_MAX, NODE_DESC_MAX},
    device::ib_device::{DeviceEventRegistration, DeviceInfo, DeviceRef, IbDevice, PortData},
    verbs::ops::{DeviceOps, NoVerbs},
};
use core::{marker::PhantomData, mem::ManuallyDrop, ptr};
use kernel::{
    device::{Bound, Device},
    devres::Devres,
    prelude::*,
    sync::Arc,
    types::ForLt,
};

/// A registered RDMA device; dropping it unregisters the device (and waits for its users).
///
/// Dropping it returns only once the device itself is gone, every reference to it dropped
/// (C's `unreg_completion`): the device holds the driver's operations, whose code is the
/// driver's, so they are dropped before unregistration returns, while the driver is still
/// there, never by whoever drops the last reference after the driver module has gone.
pub struct Registration {
    dev: ManuallyDrop<Arc<IbDevice>>,
}

impl Registration {
    /// Registers a device whose driver is `ops` (which owns what it holds; a driver bound to a
    /// bus device whose operations borrow from the binding uses [`BoundRegistration`]).
    pub fn new<T: DeviceOps + 'static>(info: DeviceInfo<'_>, ops: T) -> Result<Self> {
        Self::new_in(Domain::Live, info, ops)
    }

    /// Registers a KUnit suite's device: in the suites' own registry (names, indices, clients),
    /// in the class `class::set_test_class` installed if any, without MONITOR events.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn new_test<T: DeviceOps + 'static>(info: DeviceInfo<'_>, ops: T) -> Result<Self> {
        Self::new_in(Domain::Test, info, ops)
    }

    fn new_in<T: DeviceOps + 'static>(
        domain: Domain,
        info: DeviceInfo<'_>,
        ops: T,
    ) -> Result<Self> {
        // Phase 1: the name and index, so that uniqueness checks see them.
        let reserved = registry::reserve(domain, info.name)?;
        let mut immutables = KVec::with_capacity(info.phys_port_cnt as usize, GFP_KERNEL)?;
        for port in 1..=info.phys_port_cnt {
            immutables.push(ops.get_port_immutable(port)?, GFP_KERNEL)?;
        }
        let attr = ops.query_device()?;
        let ops = DeviceImpl::erase(Arc::new(ops, GFP_KERNEL)?)?;
        Self::finish(
            info,
            reserved,
            attr,
            &immutables,
            ops,
            is_kverbs_provider::<T>(),
            &mut |_| Ok(()),
        )
    }

    /// Registers a C driver's device (`ib_register_device`, `c_abi/driver/registration.rs`):
    /// what the driver reported, its operations, and `enable`, called once the core's device
    /// exists and before any client sees it (C's `enable_driver`; an error fails the
    /// registration).
    pub(crate) fn new_c(
        info: DeviceInfo<'_>,
        attr: DeviceAttr,
        immutables: &[PortImmutable],
        ops: KBox<dyn DynOps>,
        kverbs_provider: bool,
        enable: &mut dyn FnMut(&Arc<IbDevice>) -> Result,
    ) -> Result<Self> {
        let reserved = registry::reserve(Domain::Live, info.name)?;
        Self::finish(
            info,
            reserved,
            attr,
            immutables,
            ops,
            kverbs_provider,
            enable,
        )
    }

    /// The part of registration that does not depend on the driver's type.
    fn finish(
        info: DeviceInfo<'_>,
        reserved: registry::Reserved,
        attr: DeviceAttr,
        immutables: &[PortImmutable],
        ops: KBox<dyn DynOps>,
        kverbs_provider: bool,
        enable: &mut dyn FnMut(&Arc<IbDevice>) -> Result,
    ) -> Result<Self> {
        let ports = read_ports(&*ops, immutables)?;
        let fw_version = ops.fw_version();
        let (domain, index, name) = (reserved.domain(), reserved.index(), reserved.name());
        let dev = IbDevice::new(
            info,
            domain,
            index,
            name,
            attr,
            fw_version,
            ports,
            ops,
            kverbs_provider,
        )?;
        // sysfs, then phase 2 (clients, then the `add` uevent), then the MONITOR event, as C.
        let class = match domain {
            Domain::Live => Some(class().ok_or(ENODEV)?),
            #[cfg(CONFIG_KUNIT = "y")]
            Domain::Test => crate::device::class::test_class(),
        };
        // The C structure C clients are handed (the product's devices: C modules see no other).
        let face = if domain == Domain::Live {
            Some(CFace::new(
                &dev,
                crate::c_abi::data_path::fill_ops,
                |c, drv| {
                    // SAFETY: `drv` is null or the registering C driver's live structure.
                    unsafe { crate::c_abi::face_iw::fill(c, drv) }
                },
            )?)
        } else {
            None
        };
        let sysfs = match class {
            // SAFETY: The `infiniband` class stays registered until `ib_core` unloads, which is
            // after every device has unregistered, and a KUnit class until every device
            // registered in it has unregistered (`set_test_class`); unregistration drops the
            // device's sysfs (in `registry::release`).
            Some(class) => Some(unsafe { DeviceSysfs::new(class, &dev, face.as_ref())? }),
            None => None,
        };
        // C clients add files to the ports' directories through the C structure.
        if let (Some(f), Some(s)) = (face.as_ref(), sysfs.as_ref()) {
            f.set_port_dirs(s.port_dirs()?);
        }
        enable(&dev)?;
        registry::enable(reserved, &dev, sysfs, face)?;
        if domain == Domain::Live {
            monitor::device_event(&dev, Event::Register);
        }
        Ok(Self {
            dev: ManuallyDrop::new(dev),
        })
    }

    /// The registered device.
    pub fn device(&self) -> &Arc<IbDevice> {
        &self.dev
    }

    /// Dispatches `event` on `port` (0: the whole device) to the device's event handlers:
    /// [`IbDevice::dispatch_event`].
    pub fn dispatch_event(&self, event: EventType, port: u32) {
        self.dev.dispatch_event(event, port);
    }

    /// The first step of unregistering, which dropping the registration takes if this did not:
    /// the device hidden and removed from every client (C's `disable_device`). For a driver
    /// whose device must keep working while its clients let it go (their last messages, ib_cm's
    /// DREQs, go out through it) and that lets go of its own part only after.
    pub(crate) fn disable(&self) {
        registry::disable(&self.dev);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Hide it and remove it from clients (in reverse order), then wait for its users.
        registry::disable(&self.dev);
        self.dev.close_and_wait();
        if self.dev.domain() == Domain::Live {
            monitor::device_event(&self.dev, Event::Unregister);
        }
        // Removes sysfs, then frees the name and index.
        registry::release(self.dev.domain(), self.dev.index());
        // Then waits until the device is dropped (whoever holds the last reference).
        let gone = self.dev.gone();
        // SAFETY: `self.dev` is not used after this.
        drop(unsafe { ManuallyDrop::take(&mut self.dev) });
        gone.wait_for_completion();
    }
}

/// A device registered by a driver bound to a bus device (mlx5_ib's auxiliary device), whose
/// operations and the states of the objects they make (`DeviceOps::Cq`, ...) may borrow what
/// lives as long as that binding (`'bound`, as in 7.3's `auxiliary::Driver::Data<'bound>`:
/// mlx5_ib's operations keep the function's `Mlx5Device`, its user objects' memory is mapped
/// for the bound PCI device).
///
/// Dropping it unregisters the device as [`Registration`] does. It is also a device-managed
/// resource of the bus device: if it is never dropped, the binding's end unregisters the
/// device, so the core neither calls the operations nor keeps an object's state after
/// `'bound` in either case.
pub struct BoundRegistration<'bound> {
    reg: Devres<Registration>,
    _bound: PhantomData<&'bound ()>,
}

impl<'bound> BoundRegistration<'bound> {
    /// Registers a device of the bus device `parent`, whose driver is `ops`: the family `F`
    /// names the operations' type for every lifetime (`ForLt!(Mlx5IbDevice<'_>)`), and the
    /// driver implements [`DeviceOps`] for all of them, so its code cannot rely on any.
    pub fn new<F>(
        parent: &'bound Device<Bound>,
        info: DeviceInfo<'_>,
        ops: F::Of<'bound>,
    ) -> Result<Self>
    where
        F: ForLt,
        for<'a> F::Of<'a>: DeviceOps,
    {
        Self::new_in::<F>(Domain::Live, parent, info, ops)
    }

    /// Registers a KUnit suite's device ([`Registration::new_test`]) for `parent`.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn new_test<F>(
        parent: &'bound Device<Bound>,
        info: DeviceInfo<'_>,
        ops: F::Of<'bound>,
    ) -> Result<Self>
    where
        F: ForLt,
        for<'a> F::Of<'a>: DeviceOps,
    {
        Self::new_in::<F>(Domain::Test, parent, info, ops)
    }

    fn new_in<F>(
        domain: Domain,
        parent: &'bound Device<Bound>,
        info: DeviceInfo<'_>,
        ops: F::Of<'bound>,
    ) -> Result<Self>
    where
        F: ForLt,
        for<'a> F::Of<'a>: DeviceOps,
    {
        let ops = ManuallyDrop::new(ops);
        // SAFETY: `F::Of<'bound>` and `F::Of<'static>` differ in a lifetime only, so they have
        // one layout; the value is moved (read once, the original is not dropped). The core
        // keeps the operations, and the states of the objects they made (each object holds the
        // device, whose release the unregistration waits for: clients' objects go in their
        // `remove`, user contexts' when they are disassociated), until the registration below
        // is dropped, which is when `self` is or, at the latest, when the binding to `parent`
        // ends (the device-managed resource), both within `'bound`; and the driver's code is
        // generic over the lifetime (`for<'a> F::Of<'a>: DeviceOps`), so it cannot use the
        // `'static` it is called with.
        let ops = unsafe { ptr::read(ptr::from_ref(&*ops).cast::<F::Of<'static>>()) };
        let reg = Registration::new_in(domain, info, ops)?;
        Ok(Self {
            reg: Devres::new(parent, reg)?,
            _bound: PhantomData,
        })
    }

    /// The registered device, while `parent` (the bus device it was registered for) is bound.
    pub fn device<'a>(&'a self, parent: &'a Device<Bound>) -> Result<&'a Arc<IbDevice>> {
        Ok(self.reg.access(parent)?.device())
    }
}

/// Renames a registered device, with C's `ib_device_rename` rules: the same name is a no-op,
/// a name in use is `EEXIST`; sysfs follows, and a MONITOR event tells listeners.
pub fn rename(dev: &IbDevice, new: &[u8]) -> Result {
    if registry::rename(dev, new)? && dev.domain() == Domain::Live {
        monitor::device_event(dev, Event::Rename);
    }
    Ok(())
}

#[kernel::macros::kunit_tests(rdma_rs_ib_bound_registration)]
mod tests {
    use super::*;
    use crate::{device::registry::get_by_name_in, kunit_fake::register_bound};
    use kernel::{
        faux,
        sync::atomic::{Atomic, Relaxed},
    };

    /// The faux device's bus device, bound to the faux driver while `r` exists.
    fn bound(r: &faux::Registration) -> &Device<Bound> {
        let dev: &faux::Device<Bound> = r.as_ref();
        dev.as_ref()
    }

    #[test]
    fn dropping_it_unregisters_the_device_and_drops_the_operations() -> Result {
        let dropped = Atomic::new(0u32);
        let bus = faux::Registration::new(c"rdma_rs_kunit_bound", None)?;
        let reg = register_bound(bound(&bus), b"kbound%d", &dropped)?;
        let name = reg.device(bound(&bus))?.name();
        assert!(get_by_name_in(Domain::Test, &name).is_some());
        drop(reg);
        assert!(dropped.load(Relaxed) == 1);
        assert!(get_by_name_in(Domain::Test, &name).is_none());
        Ok(())
    }

    #[test]
    fn a_forgotten_one_goes_when_the_binding_ends() -> Result {
        let dropped = Atomic::new(0u32);
        let bus = faux::Registration::new(c"rdma_rs_kunit_bound", None)?;
        let reg = register_bound(bound(&bus), b"kbound%d", &dropped)?;
        let name = reg.device(bound(&bus))?.name();
        // Not dropped while the binding lasts (as if forgotten): the operations would outlive
        // what they borrow, but for the binding's end, which takes the registration with it.
        let kept = KBox::into_raw(KBox::new(reg, GFP_KERNEL)?).cast::<BoundRegistration<'static>>();
        assert!(dropped.load(Relaxed) == 0);
        assert!(get_by_name_in(Domain::Test, &name).is_some());
        drop(bus);
        assert!(dropped.load(Relaxed) == 1);
        assert!(get_by_name_in(Domain::Test, &name).is_none());
        // SAFETY: `kept` is the box made above, not used since. Dropping it only drops its
        // device-managed resource, already released with the binding (the registration and
        // the borrowing operations went then), which keeps its own reference to the device.
        drop(unsafe { KBox::from_raw(kept) });
        assert!(dropped.load(Relaxed) == 1);
        Ok(())
    }

    #[test]
    fn its_device_is_reached_only_through_its_own_bus_device() -> Result {
        let dropped = Atomic::new(0u32);
        let bus = faux::Registration::new(c"rdma_rs_kunit_bound", None)?;
        let other = faux::Registration::new(c"rdma_rs_kunit_other", None)?;
        let reg = register_bound(bound(&bus), b"kbound%d", &dropped)?;
        assert!(reg.device(bound(&other)).err() == Some(EINVAL));
        assert!(reg.device(bound(&bus)).is_ok());
        Ok(())
    }
}
