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
use core::mem::ManuallyDrop;
use kernel::{prelude::*, sync::Arc};

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
    /// Registers a device whose driver is `ops`.
    pub fn new<T: DeviceOps>(info: DeviceInfo<'_>, ops: T) -> Result<Self> {
        Self::new_in(Domain::Live, info, ops)
    }

    /// Registers a KUnit suite's device: in the suites' own registry (names, indices, clients),
    /// in the class `class::set_test_class` installed if any, without MONITOR events.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn new_test<T: DeviceOps>(info: DeviceInfo<'_>, ops: T) -> Result<Self> {
        Self::new_in(Domain::Test, info, ops)
    }

    fn new_in<T: DeviceOps>(domain: Domain, info: DeviceInfo<'_>, ops: T) -> Result<Self> {
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

/// Renames a registered device, with C's `ib_device_rename` rules: the same name is a no-op,
/// a name in use is `EEXIST`; sysfs follows, and a MONITOR event tells listeners.
pub fn rename(dev: &IbDevice, new: &[u8]) -> Result {
    if registry::rename(dev, new)? && dev.domain() == Domain::Live {
        monitor::device_event(dev, Event::Rename);
    }
    Ok(())
}
