// SPDX-License-Identifier: GPL-2.0

//! Auxiliary drivers named as C names them: `<module>.<name>` (C's `mlx5_ib.rdma`).
//!
//! 7.3's `kernel::auxiliary::Adapter` registers a driver with one name used as both the module
//! part and the driver part of `struct device_driver`'s name, so a driver registered as
//! `mlx5_ib` shows up as `/sys/bus/auxiliary/drivers/mlx5_ib.mlx5_ib`. C's
//! `auxiliary_driver_register()` takes the module part from `KBUILD_MODNAME` and the driver part
//! from `auxiliary_driver.name`. [`NamedAdapter`] is the kernel's adapter with the two apart: a
//! driver implements [`NamedDriver`] (an [`auxiliary::Driver`] with a [`NamedDriver::NAME`]) and
//! registers `driver::Registration<NamedAdapter<T>>` with its module name.
//!
//! It does what the kernel's adapter does (device and ID casts as the kernel's adapter makes
//! them, `set_drvdata` in probe, the data dropped by `driver::Registration`'s post-unbind
//! callback). Upstream, this would be a driver name in `auxiliary::Driver`; until then it lives
//! beside `auxiliary` in this overlay.
//!
//! C header: [`include/linux/auxiliary_bus.h`](srctree/include/linux/auxiliary_bus.h)

use crate::{
    auxiliary, bindings, device,
    device_id::RawDeviceIdIndex,
    driver,
    error::{from_result, to_result},
    prelude::*,
    types::Opaque,
    ThisModule,
};
use core::marker::PhantomData;

/// An auxiliary driver with a name of its own.
pub trait NamedDriver: auxiliary::Driver + 'static {
    /// The driver part of the name (C's `auxiliary_driver.name`): `rdma` registers
    /// `<module>.rdma`.
    const NAME: &'static CStr;
}

/// The adapter that registers a [`NamedDriver`]: `driver::Registration::<NamedAdapter<T>>::new(
/// c"mlx5_ib", module)` registers `mlx5_ib.<T::NAME>`.
pub struct NamedAdapter<T: NamedDriver>(PhantomData<T>);

// SAFETY:
// - `bindings::auxiliary_driver` is a C type declared `repr(C)`, embedding a
//   `struct device_driver` at `DEVICE_DRIVER_OFFSET`.
// - `DriverData` is the type `probe_callback` stores with `set_drvdata`.
unsafe impl<T: NamedDriver> driver::DriverLayout for NamedAdapter<T> {
    type DriverType = bindings::auxiliary_driver;
    type DriverData<'bound> = T::Data<'bound>;
    const DEVICE_DRIVER_OFFSET: usize = core::mem::offset_of!(bindings::auxiliary_driver, driver);
}

// SAFETY: `unregister` only unregisters a driver `register` registered successfully (which is
// what `driver::Registration` calls it for).
unsafe impl<T: NamedDriver> driver::RegistrationOps for NamedAdapter<T> {
    unsafe fn register(
        adrv: &Opaque<Self::DriverType>,
        modname: &'static CStr,
        module: &'static ThisModule,
    ) -> Result {
        let drv = adrv.get();
        // SAFETY: `drv` is a valid driver that is not registered yet (`driver::Registration`
        // has just initialized it), so its fields may be set. The names and the ID table are
        // `'static`.
        unsafe {
            (*drv).name = T::NAME.as_char_ptr();
            (*drv).probe = Some(Self::probe_callback);
            (*drv).remove = Some(Self::remove_callback);
            (*drv).id_table = T::ID_TABLE.as_ptr();
        }
        // SAFETY: `drv` is valid and stays pinned until `unregister` (this function's contract);
        // `modname` is NUL-terminated and `'static`.
        to_result(unsafe {
            bindings::__auxiliary_driver_register(drv, module.as_ptr(), modname.as_char_ptr())
        })
    }

    unsafe fn unregister(adrv: &Opaque<Self::DriverType>) {
        // SAFETY: `register` registered `adrv` successfully (this function's contract).
        unsafe { bindings::auxiliary_driver_unregister(adrv.get()) }
    }
}

impl<T: NamedDriver> NamedAdapter<T> {
    extern "C" fn probe_callback(
        adev: *mut bindings::auxiliary_device,
        id: *const bindings::auxiliary_device_id,
    ) -> c_int {
        // SAFETY: The auxiliary bus calls probe with a valid device, which stays valid for the
        // call, with its device lock held (the `CoreInternal` context); `auxiliary::Device` is a
        // `repr(transparent)` wrapper of `struct auxiliary_device`.
        let adev = unsafe { &*adev.cast::<auxiliary::Device<device::CoreInternal<'_>>>() };
        // SAFETY: `id` is the entry of `T::ID_TABLE` the bus matched; `auxiliary::DeviceId` is a
        // `repr(transparent)` wrapper of `struct auxiliary_device_id`.
        let id = unsafe { &*id.cast::<auxiliary::DeviceId>() };
        // SAFETY: `id` is stored in `T::ID_TABLE`, an `IdArray<auxiliary::DeviceId, T::IdInfo,
        // _>`.
        let info = unsafe { id.info_unchecked::<T::IdInfo>() };
        from_result(|| {
            let data = T::probe(adev, info);
            adev.as_ref().set_drvdata(data)?;
            Ok(0)
        })
    }

    extern "C" fn remove_callback(adev: *mut bindings::auxiliary_device) {
        // SAFETY: As in `probe_callback`: the bus calls remove with a valid device, with its
        // device lock held.
        let adev = unsafe { &*adev.cast::<auxiliary::Device<device::CoreInternal<'_>>>() };
        // SAFETY: Remove only follows a successful probe, which stored a `T::Data` with
        // `set_drvdata`; `driver::Registration`'s post-unbind callback takes it back only after
        // this returns.
        let data = unsafe { adev.as_ref().drvdata_borrow::<T::Data<'_>>() };
        T::unbind(adev, data);
    }
}
