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

impl Registration {
    /// Registers a class called `name`.
    pub fn new(name: &'static CStr) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            inner <- Opaque::try_ffi_init(move |slot: *mut bindings::class| {
                // SAFETY: `slot` is valid for writes; an all-zero `struct class` is valid (no
                // groups, no callbacks), and only the name is set.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).name = name.as_char_ptr();
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
