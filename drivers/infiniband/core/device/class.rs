// SPDX-License-Identifier: GPL-2.0

//! The `infiniband` class (`/sys/class/infiniband`) that registered devices appear in: the core
//! module registers it at load and installs it here; the registry and device registration find
//! it here. KUnit suites install a class of their own for their devices.

use kernel::{
    class,
    sync::atomic::{Acquire, Atomic, Release},
};

/// The `infiniband` class while it is registered (null otherwise), for the devices' sysfs. The
/// core module installs it at load and removes it at unload ([`set_class`]).
static CLASS: Atomic<*const class::Registration> = Atomic::new(core::ptr::null());

/// Installs the class registered devices appear in (`None`: removes it).
///
/// # Safety
///
/// An installed class stays registered, at the same address, until it is removed; it is
/// removed before devices can no longer unregister (drivers hold a reference on `ib_core`, so
/// every device has unregistered when the module unloads).
pub(crate) unsafe fn set_class(class: Option<&class::Registration>) {
    CLASS.store(
        class.map_or(core::ptr::null(), core::ptr::from_ref),
        Release,
    );
}

/// Whether `ib_core` has registered the `infiniband` class (drivers may register devices).
pub fn class_registered() -> bool {
    !CLASS.load(Acquire).is_null()
}

/// The `infiniband` class, while `ib_core` is loaded.
pub(crate) fn class() -> Option<&'static class::Registration> {
    // SAFETY: An installed pointer is valid until it is removed (`set_class`'s contract). Code
    // that gets the class runs while `ib_core` is loaded: devices register (and unregister)
    // only while a driver holds a reference on the module.
    unsafe { CLASS.load(Acquire).as_ref() }
}

/// The class KUnit suites' devices appear in while a suite installs one (null otherwise): never
/// the `infiniband` class.
#[cfg(CONFIG_KUNIT = "y")]
static TEST_CLASS: Atomic<*const class::Registration> = Atomic::new(core::ptr::null());

/// Installs the class KUnit suites' devices appear in (`None`: removes it).
///
/// # Safety
///
/// An installed class stays registered, at the same address, until it is removed, and every
/// device registered while it was installed has unregistered before it is removed.
#[cfg(CONFIG_KUNIT = "y")]
pub(crate) unsafe fn set_test_class(class: Option<&class::Registration>) {
    TEST_CLASS.store(
        class.map_or(core::ptr::null(), core::ptr::from_ref),
        Release,
    );
}

/// The class KUnit suites' devices appear in, if a suite installed one.
#[cfg(CONFIG_KUNIT = "y")]
pub(crate) fn test_class() -> Option<&'static class::Registration> {
    // SAFETY: An installed pointer is valid until it is removed (`set_test_class`'s contract).
    unsafe { TEST_CLASS.load(Acquire).as_ref() }
}
