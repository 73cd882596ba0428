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
#[repr(C)]
pub struct Registration {
    /// First, so that the class's address is the registration's (the `devnode` callback finds
    /// `devnode` from the class).
    #[pin]
    inner: Opaque<bindings::class>,
    devnode: Option<DevNode>,
}

/// Where the device nodes of a class's character devices appear below `/dev`, and their mode
/// (C's `class->devnode`).
#[derive(Clone, Copy)]
pub struct DevNode {
    /// The directory below `/dev` (`infiniband` gives `/dev/infiniband/<device name>`).
    pub dir: &'static CStr,
    /// The node's permission bits (0 keeps devtmpfs's default, 0600).
    pub mode: u16,
}

/// `devnode` of a class registered with a [`DevNode`].
///
/// # Safety
///
/// Called by the driver core with a valid device of a class that is the first field of a
/// [`Registration`] with `devnode` set, and a valid or null `mode`.
unsafe extern "C" fn class_devnode(
    dev: *const bindings::device,
    mode: *mut bindings::umode_t,
) -> *mut c_char {
    // SAFETY: The device's class is the first field of a `repr(C)` `Registration` (contract),
    // registered, so alive.
    let reg = unsafe { &*(*dev).class.cast::<Registration>() };
    let Some(node) = reg.devnode else {
        return core::ptr::null_mut();
    };
    if !mode.is_null() && node.mode != 0 {
        // SAFETY: `mode` is valid for writes when not null (contract).
        unsafe { *mode = node.mode };
    }
    // SAFETY: The format takes two strings, both NUL-terminated; the caller frees the result.
    unsafe {
        bindings::kasprintf(
            bindings::GFP_KERNEL,
            c"%s/%s".as_char_ptr(),
            node.dir.as_char_ptr(),
            bindings::dev_name(dev),
        )
    }
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

    /// Registers a class called `name` whose devices' uevents carry `NAME=<device name>` and
    /// whose devices each belong to a network namespace (C's `ns_type` and `namespace`, as the
    /// `infiniband` class): `/sys/class/<name>` shows a reader the devices of the namespace its
    /// sysfs was mounted in. Every device of such a class must be a
    /// [`crate::class_device::ClassDevice`] (its namespace is read from there).
    pub fn new_net_with_name_uevent(name: &'static CStr) -> impl PinInit<Self, Error> {
        Self::register_with(name, true, None, true)
    }

    /// Registers a class called `name` whose character devices' nodes are `/dev/<dir>/<name>`
    /// with the given mode (the `infiniband_verbs` class: `/dev/infiniband/uverbsN`, 0666).
    pub fn new_with_devnode(name: &'static CStr, node: DevNode) -> impl PinInit<Self, Error> {
        Self::register_with(name, false, Some(node), false)
    }

    fn register(name: &'static CStr, name_var: bool) -> impl PinInit<Self, Error> {
        Self::register_with(name, name_var, None, false)
    }

    fn register_with(
        name: &'static CStr,
        name_var: bool,
        node: Option<DevNode>,
        net: bool,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            devnode: node,
            inner <- Opaque::try_ffi_init(move |slot: *mut bindings::class| {
                // SAFETY: `slot` is valid for writes; an all-zero `struct class` is valid (no
                // groups, no callbacks), and only the name and the callbacks are set. The
                // namespace type is the kernel's, static.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).name = name.as_char_ptr();
                    if name_var {
                        (*slot).dev_uevent = Some(name_uevent);
                    }
                    if node.is_some() {
                        (*slot).devnode = Some(class_devnode);
                    }
                    if net {
                        (*slot).ns_type = bindings::rdma_rs_net_ns_type();
                        (*slot).namespace = Some(crate::class_device::net_namespace);
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

/// A read-only file in a class's directory (`/sys/class/<class>/<name>`) whose content is a
/// fixed string and a newline (C's `CLASS_ATTR_STRING`), removed when dropped.
///
/// # Invariants
///
/// `attr` was added to `class` with `class_create_file_ns` and is removed only by `drop`.
pub struct StringFile {
    class: *const bindings::class,
    attr: KBox<bindings::class_attribute_string>,
}

// SAFETY: The file is added and removed through the driver core, which has its own locking.
unsafe impl Send for StringFile {}
// SAFETY: `&StringFile` gives access to nothing.
unsafe impl Sync for StringFile {}

impl StringFile {
    /// Adds file `name` with content `value` to `class`.
    ///
    /// # Safety
    ///
    /// `class` stays registered until the file is dropped.
    pub unsafe fn new(
        class: &Registration,
        name: &'static CStr,
        value: &'static CStr,
    ) -> Result<Self> {
        // SAFETY: All-zero is a valid `class_attribute_string` (no callbacks, null strings).
        let mut attr: KBox<bindings::class_attribute_string> =
            KBox::new(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;
        // SAFETY: The attribute is ours and not in sysfs yet: it gets its lockdep class (C's
        // `sysfs_attr_init` for an attribute not in static memory).
        unsafe { bindings::rdma_rs_sysfs_attr_init(&raw mut attr.attr.attr) };
        attr.attr.attr.name = name.as_char_ptr();
        attr.attr.attr.mode = 0o444;
        attr.attr.show = Some(bindings::show_class_attr_string);
        attr.str_ = value.as_char_ptr().cast_mut();
        // SAFETY: The class is registered (contract); the attribute lives, boxed, until `drop`
        // removes it, and its strings are 'static.
        to_result(unsafe {
            bindings::class_create_file_ns(class.as_raw(), &attr.attr, core::ptr::null())
        })?;
        // INVARIANT: the file is added.
        Ok(Self {
            class: class.as_raw(),
            attr,
        })
    }
}

impl Drop for StringFile {
    fn drop(&mut self) {
        // SAFETY: The file was added to the class (type invariant), which is still registered
        // (contract of `new`); this waits for readers, after which the box may go.
        unsafe { bindings::class_remove_file_ns(self.class, &self.attr.attr, core::ptr::null()) };
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
