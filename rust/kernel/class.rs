// SPDX-License-Identifier: GPL-2.0

//! Device classes (`/sys/class/<name>`).
//!
//! C header: [`include/linux/device/class.h`](srctree/include/linux/device/class.h)

use crate::{bindings, error::to_result, prelude::*, types::Opaque};

/// A registered device class.
///
/// The class appears as `/sys/class/<name>` while the registration lives, and is unregistered
/// when it is dropped. Devices are added to it by the subsystems that own the class.
///
/// # Invariants
///
/// `inner` holds a `struct class` that was successfully passed to `class_register` and has not
/// been unregistered yet.
#[pin_data(PinnedDrop)]
pub struct Registration {
    #[pin]
    inner: Opaque<bindings::class>,
}

// SAFETY: The class is only touched by the driver core, which does its own locking; the
// registration can be dropped (unregistered) from any thread.
unsafe impl Send for Registration {}

// SAFETY: `&Registration` only gives out the class pointer; every use of it goes through the driver
// core, which serialises access.
unsafe impl Sync for Registration {}

/// `dev_uevent` of a class whose devices' uevents carry `NAME=<device name>`.
///
/// # Safety
///
/// Called by the driver core with a valid device and uevent environment.
unsafe extern "C" fn name_uevent(
    dev: *const bindings::device,
    env: *mut bindings::kobj_uevent_env,
) -> c_int {
    // SAFETY: `dev` and `env` are valid (contract); the format takes one string, the device's
    // name, which is NUL-terminated.
    unsafe { bindings::add_uevent_var(env, c"NAME=%s".as_char_ptr(), bindings::dev_name(dev)) }
}

impl Registration {
    /// Registers a class called `name`.
    pub fn new(name: &'static CStr) -> impl PinInit<Self, Error> {
        Self::register(name, false)
    }

    /// Registers a class called `name` whose devices' uevents (and `uevent` files) carry
    /// `NAME=<device name>`, as the `infiniband` class does.
    pub fn new_with_name_uevent(name: &'static CStr) -> impl PinInit<Self, Error> {
        Self::register(name, true)
    }

    fn register(name: &'static CStr, name_var: bool) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            inner <- Opaque::try_ffi_init(move |slot: *mut bindings::class| {
                // SAFETY: `slot` is valid for writes; an all-zero `struct class` is valid (no
                // groups, no callbacks), and only the name and the uevent callback are set.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).name = name.as_char_ptr();
                    if name_var {
                        (*slot).dev_uevent = Some(name_uevent);
                    }
                }
                // SAFETY: `slot` holds an initialised class that lives, pinned, until
                // `PinnedDrop::drop` unregisters it.
                // INVARIANT: on success the class is registered.
                to_result(unsafe { bindings::class_register(slot) })
            }),
        })
    }

    /// The raw `struct class`, for creating devices in it.
    pub fn as_raw(&self) -> *const bindings::class {
        self.inner.get()
    }

    /// Whether the driver core reports this class as registered.
    pub fn is_registered(&self) -> bool {
        // SAFETY: `inner` is a registered class by the type invariants.
        unsafe { bindings::class_is_registered(self.inner.get()) }
    }
}

#[pinned_drop]
impl PinnedDrop for Registration {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The class is registered by the type invariants, and is unregistered only here.
        unsafe { bindings::class_unregister(self.inner.get()) };
    }
}

#[macros::kunit_tests(rdma_rs_class)]
mod tests {
    use super::*;
    use crate::alloc::KBox;

    #[test]
    fn register_and_unregister() {
        let reg = KBox::pin_init(Registration::new(c"rdma_rs_kunit"), GFP_KERNEL);
        assert!(reg.is_ok());
        let Ok(reg) = reg else { return };
        assert!(reg.is_registered());
        drop(reg);
        // The name is free again once the first registration is gone.
        let again = KBox::pin_init(Registration::new(c"rdma_rs_kunit"), GFP_KERNEL);
        assert!(again.is_ok());
    }
}
