// SPDX-License-Identifier: GPL-2.0

//! Devices of a class (`/sys/class/<class>/<name>`) whose attributes run Rust code on the
//! owner's data.
//!
//! A [`ClassDevice<T>`] is a `struct device` in a [`class::Registration`], below a parent device
//! or, without one, in `/sys/devices/virtual/<class>/`. Its attribute groups
//! ([`AttributeGroups<T>`]) reach the `T` it owns.
//!
//! # Lifetimes
//!
//! The `struct device` is reference counted by the driver core and can outlive the
//! [`ClassDevice`] (anyone may hold a `get_device` reference); the `T` cannot. Dropping the
//! `ClassDevice` calls `device_del`, which removes the attribute files; kernfs deactivates each
//! file and waits until every `show`/`store` already running on it has returned, and refuses new
//! ones (a file user space still holds open reads `ENODEV` from then on). Only then is `T`
//! dropped, so a callback never sees a dropped `T`. The memory of the device and of the groups
//! is freed by the device's release function when the last reference goes; that function is
//! not generic (it lives in the kernel image, not in the module that created the device), so a
//! reference held past the module's unload does not call into freed module text.
//!
//! A character device ([`ClassDevice::new_chardev`]) has its `struct cdev` in the same
//! allocation (as C embeds it in its device structures); the cdev holds a reference to the
//! device while it is mapped or any of its files is open, so the allocation outlives it. Its
//! files' `open` gets a clone of the `T` (a counted reference, e.g. an `Arc`:
//! [`crate::chrdev::FileOperations::open`]) taken under the device's open gate: dropping the
//! `ClassDevice` unmaps the cdev, then closes the gate (waiting for a clone being taken), then
//! drops `T`; an open that found the cdev before it was unmapped and comes after that fails with
//! `ENXIO`, as C's `ib_uverbs_open` does for a device whose reference count went to zero.
//!
//! C header: [`include/linux/device.h`](srctree/include/linux/device.h)

use crate::{
    bindings,
    chrdev::{self, DevT, FileOperations},
    class, device,
    error::to_result,
    kobject_dir::SysfsDir,
    net::namespace::Net,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex, UniqueArc},
    sysfs_attrs::{AttributeGroups, RawGroups},
    types::Opaque,
};
use core::{marker::PhantomData, mem::ManuallyDrop, ptr::NonNull};

/// The part of the allocation the release function knows about.
#[repr(C)]
struct Header {
    /// First, so that the device's address is the allocation's.
    dev: Opaque<bindings::device>,
    groups: RawGroups,
    /// The network namespace the device belongs to in a class that has them (null: the
    /// initial one). Not referenced: the device is removed before the namespace exits.
    net: *mut bindings::net,
    /// The character device of a device made by [`ClassDevice::new_chardev`] (zeroed and unused
    /// otherwise).
    cdev: Opaque<bindings::cdev>,
}

#[repr(C)]
#[pin_data]
struct Inner<T> {
    header: Header,
    /// Whether a file's `open` may clone `data` (the open gate; see the module documentation).
    #[pin]
    open_gate: Mutex<bool>,
    data: ManuallyDrop<T>,
}

/// When the device's `add` uevent is sent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AddUevent {
    /// When the device is added.
    Now,
    /// Not before [`ClassDevice::announce`] (C's `dev_set_uevent_suppress` around
    /// `device_add`, for devices that are not ready for user space when they appear).
    Deferred,
}

/// A device added to a class, owning the data its attributes read.
///
/// Created in an [`Arc`] so that directories below it ([`crate::kobject_dir::KObjectDir`]) can
/// keep it alive: it is removed when the last of them and its owner have dropped it. It must be
/// dropped in process context.
///
/// # Invariants
///
/// `inner` is a live allocation whose `header.dev` was added with `device_add` and not deleted
/// yet, whose driver data points to `data`, which is initialised, and whose groups are
/// `header.groups`, built for `T`.
pub struct ClassDevice<T: Send + Sync> {
    inner: NonNull<Inner<T>>,
    /// Whether the device has a character device (added with it, in the allocation).
    has_cdev: bool,
    _data: PhantomData<T>,
}

// SAFETY: The device is driven through the driver core, which has its own locking; `T` is
// `Send` and dropped wherever the `ClassDevice` is.
unsafe impl<T: Send + Sync> Send for ClassDevice<T> {}

// SAFETY: Shared access gives `&T` (`T: Sync`) and calls the driver core, which serialises
// renames and removal itself.
unsafe impl<T: Send + Sync> Sync for ClassDevice<T> {}

/// Frees the allocation when the device's last reference goes.
///
/// # Safety
///
/// Called by the driver core, once, for a device created by [`ClassDevice::new`], whose `T`
/// has been dropped already.
unsafe extern "C" fn release(dev: *mut bindings::device) {
    let header = dev.cast::<Header>();
    // SAFETY: `dev` is the first field of a `repr(C)` `Header` that starts the allocation
    // (contract); nothing uses the groups any more, and `T` was dropped by its owner.
    unsafe {
        core::ptr::drop_in_place(&raw mut (*header).groups);
        bindings::kfree(header.cast());
    }
}

/// `namespace` of a class registered with
/// [`class::Registration::new_net_with_name_uevent`]: the network namespace of the device.
///
/// # Safety
///
/// Called by the driver core with a valid device created by [`ClassDevice`] (the contract of
/// such a class).
pub(crate) unsafe extern "C" fn net_namespace(
    dev: *const bindings::device,
) -> *const bindings::ns_common {
    // SAFETY: `dev` is the first field of a `repr(C)` `Header` (contract), whose `net` is null or
    // a namespace that outlives the device.
    let net = unsafe { (*dev.cast::<Header>()).net };
    let net = if net.is_null() {
        Net::init_net().as_raw()
    } else {
        net
    };
    // SAFETY: `net` is a live namespace (above); its `ns` field is its sysfs tag.
    unsafe { &raw const (*net).ns }
}

/// A new, open gate. Neither generic nor inlined, so that every device's gate has the one lock
/// class: lockdep keys a class by the address of its static key and checks that the class name
/// has one address too, and code instantiated or inlined in another crate has its own copy of
/// the name.
#[inline(never)]
fn new_open_gate() -> impl PinInit<Mutex<bool>> {
    new_mutex!(true, "kernel::class_device::Inner::open_gate")
}

impl<T: Send + Sync> ClassDevice<T> {
    /// Adds a device called `name` to `class`, below `parent` (or in the class's virtual
    /// directory), with `groups` reading `data`. In a class with network namespaces it belongs
    /// to `net` (readers see it in sysfs mounted there; `None`: the initial namespace).
    ///
    /// # Safety
    ///
    /// `class` stays registered until the returned device (every clone of the [`Arc`]) is
    /// dropped, and the device is dropped before `net` exits (e.g. in the namespace's `exit` of
    /// a [`crate::net::namespace::Registration`]).
    pub unsafe fn new(
        class: &class::Registration,
        parent: Option<&device::Device>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
        uevent: AddUevent,
        net: Option<&Net>,
    ) -> Result<Arc<Self>> {
        // SAFETY: The caller's contract.
        unsafe { Self::add(class, parent, name, groups, data, uevent, None, net) }
    }

    /// As [`ClassDevice::new`], for a character device numbered `devt` whose files are `F`'s,
    /// opened on `data` ([`crate::chrdev::FileOperations::open`]): `/dev/<name>` appears
    /// (devtmpfs) and the device gets a `dev` attribute (C's `cdev_device_add`). Removing the
    /// device removes the character device; files already open stay open, each holding the
    /// `struct device` (not `data`).
    ///
    /// # Safety
    ///
    /// As for [`ClassDevice::new`]; `devt` is in a [`crate::chrdev::Region`] that outlives the
    /// device.
    pub unsafe fn new_chardev<F: FileOperations<Device = T>>(
        class: &class::Registration,
        parent: Option<&device::Device>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
        devt: DevT,
    ) -> Result<Arc<Self>> {
        // SAFETY: The caller's contract.
        unsafe {
            Self::add(
                class,
                parent,
                name,
                groups,
                data,
                AddUevent::Now,
                Some((devt, chrdev::file_operations::<F>())),
                None,
            )
        }
    }

    /// # Safety
    ///
    /// As for [`ClassDevice::new_chardev`] and, with a `net`, [`ClassDevice::new`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn add(
        class: &class::Registration,
        parent: Option<&device::Device>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
        uevent: AddUevent,
        chardev: Option<(DevT, &'static bindings::file_operations)>,
        net: Option<&Net>,
    ) -> Result<Arc<Self>> {
        // Allocated before the device exists, so that nothing can fail after `device_add`; both
        // before `data` and `groups` are given up to raw pointers and `ManuallyDrop`, so that a
        // failed allocation drops them (else they leak).
        let holder = UniqueArc::<Self>::new_uninit(GFP_KERNEL)?;
        let groups = groups.into_raw();
        let net = net.map_or(core::ptr::null_mut(), Net::as_raw);
        let inner = KBox::pin_init(
            pin_init!(Inner {
                header: Header {
                    dev: Opaque::zeroed(),
                    groups,
                    net,
                    cdev: Opaque::zeroed(),
                },
                open_gate <- new_open_gate(),
                data: ManuallyDrop::new(data),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: The allocation is never moved: it is freed in place by `release`.
        let inner = KBox::into_raw(unsafe { Pin::into_inner_unchecked(inner) });
        // SAFETY: `inner` is a valid allocation that this function owns.
        let dev = unsafe { (*inner).header.dev.get() };
        // SAFETY: `dev` is a zeroed `struct device` that is not shared yet. From
        // `device_initialize` on, the device owns the allocation: `put_device` frees it
        // through `release`, which leaves `data` to us.
        unsafe {
            bindings::device_initialize(dev);
            (*dev).class = class.as_raw();
            (*dev).parent = parent.map_or(core::ptr::null_mut(), |p| p.as_raw());
            (*dev).groups = (*inner).header.groups.as_list();
            (*dev).release = Some(release);
            bindings::dev_set_drvdata(dev, (&raw mut (*inner).data).cast());
            if let Some((devt, _)) = chardev {
                (*dev).devt = devt.as_raw();
            }
        }
        let abort = move |err: Error| {
            // SAFETY: `data` is initialised and no callback can reach it (the device is not in
            // sysfs); the device holds the only reference, so `put_device` frees it.
            unsafe {
                ManuallyDrop::drop(&mut (*inner).data);
                bindings::put_device(dev);
            }
            err
        };
        // SAFETY: `dev` is initialised; the format takes one string argument.
        to_result(unsafe { bindings::dev_set_name(dev, c"%s".as_char_ptr(), name.as_char_ptr()) })
            .map_err(abort)?;
        if uevent == AddUevent::Deferred {
            // SAFETY: `dev` is initialised and not shared yet.
            unsafe { (*dev).kobj.set_uevent_suppress(1) };
        }
        let has_cdev = chardev.is_some();
        if let Some((devt, fops)) = chardev {
            // SAFETY: `inner` is valid (above).
            let cdev = unsafe { (*inner).header.cdev.get() };
            // SAFETY: `cdev` is zeroed and not shared; `fops` is 'static, its owner the module
            // whose files these are. Its kobject's release (the kernel's, for an initialised
            // cdev) frees nothing: the cdev is freed with the allocation, which the reference
            // it holds on `dev` once added keeps alive.
            unsafe {
                bindings::cdev_init(cdev, fops);
                (*cdev).owner = fops.owner;
            }
            // C's `cdev_device_add`, step by step so that each failure is undone exactly.
            // SAFETY: `cdev` is set up and `dev` initialised and named. Only a successful
            // `cdev_add` takes a reference to the parent; the cdev's release drops one.
            unsafe { bindings::cdev_set_parent(cdev, &raw mut (*dev).kobj) };
            // SAFETY: As above; `devt` is reserved for the caller (contract).
            // A cdev that is not added holds no reference to `dev` and is never released: it
            // goes with the allocation.
            to_result(unsafe { bindings::cdev_add(cdev, devt.as_raw(), 1) }).map_err(abort)?;
            // SAFETY: `dev` is initialised and named; its class is registered (caller's
            // contract) and its groups live in the allocation.
            to_result(unsafe { bindings::device_add(dev) }).map_err(|e| {
                // SAFETY: The cdev is added; `cdev_del` unmaps it and drops its reference.
                unsafe { bindings::cdev_del(cdev) };
                abort(e)
            })?;
        } else {
            // SAFETY: `dev` is initialised and named; its class is registered (caller's
            // contract) and its groups live in the allocation.
            to_result(unsafe { bindings::device_add(dev) }).map_err(abort)?;
        }
        // INVARIANT: the device is added, its driver data points to `data`.
        Ok(holder
            .write(Self {
                // SAFETY: `KBox::into_raw` does not return null.
                inner: unsafe { NonNull::new_unchecked(inner) },
                has_cdev,
                _data: PhantomData,
            })
            .into())
    }

    fn raw(&self) -> *mut bindings::device {
        // SAFETY: `inner` is live (type invariant).
        unsafe { (*self.inner.as_ptr()).header.dev.get() }
    }

    /// The generic device.
    pub fn device(&self) -> &device::Device {
        // SAFETY: The device is valid while `self` lives (type invariant).
        unsafe { device::Device::from_raw(self.raw()) }
    }

    /// The data the attributes read.
    pub fn data(&self) -> &T {
        // SAFETY: `data` is initialised while `self` lives (type invariant).
        unsafe { &(*self.inner.as_ptr()).data }
    }

    /// The device's name.
    pub fn name(&self) -> &CStr {
        self.device().name()
    }

    /// Renames the device (`device_rename`: the directory, the class link, a `move` uevent).
    /// The driver core's errnos: `EINVAL` for an empty name, `EEXIST` when the class has a
    /// device of that name.
    pub fn rename(&self, name: &CStr) -> Result {
        // SAFETY: The device is added (type invariant); `name` is a NUL-terminated string.
        to_result(unsafe { bindings::device_rename(self.raw(), name.as_char_ptr()) })
    }

    /// Sends the `add` uevent held back by [`AddUevent::Deferred`].
    pub fn announce(&self) {
        let dev = self.raw();
        // SAFETY: The device is added (type invariant). Clearing the flag races with nothing
        // that matters: only uevents look at it.
        unsafe {
            (*dev).kobj.set_uevent_suppress(0);
            bindings::kobject_uevent(&raw mut (*dev).kobj, bindings::kobject_action_KOBJ_ADD);
        }
    }
}

/// A clone of the data of the character device that `inode` opens, taken under the device's
/// open gate: `ENXIO` once the device is removed.
///
/// # Safety
///
/// Called in the `open` of a file of a character device whose cdev is the one of a
/// `ClassDevice<T>` made by [`ClassDevice::new_chardev`], with that open's `inode`.
pub(crate) unsafe fn chardev_data<T: Clone + Send + Sync>(
    inode: *mut bindings::inode,
) -> Result<T> {
    // SAFETY: `inode` is valid for the open; the VFS set its `i_cdev` to the cdev it opens, on
    // which it holds a reference for the open (contract).
    let cdev = unsafe { bindings::rdma_rs_inode_cdev(inode) }.cast::<Opaque<bindings::cdev>>();
    // SAFETY: The cdev is the `cdev` field of a `Header`, the first field of a `repr(C)`
    // `Inner<T>` (contract); the reference held on the cdev keeps `dev`, and so the whole
    // allocation, alive for the call.
    let inner = unsafe { crate::container_of!(cdev, Header, cdev) }.cast::<Inner<T>>();
    // SAFETY: As above: `inner` is alive; the gate is initialised.
    let open = unsafe { (*inner).open_gate.lock() };
    if !*open {
        return Err(ENXIO);
    }
    // SAFETY: `data` is dropped only after the gate is closed (`Drop`), and the gate is held.
    Ok(T::clone(unsafe { &(*inner).data }))
}

// SAFETY: The kobject of the device is in sysfs from `new` until `drop`, and valid while
// `self` lives.
unsafe impl<T: Send + Sync> SysfsDir for ClassDevice<T> {
    fn kobject(&self) -> *mut bindings::kobject {
        // SAFETY: The device is valid while `self` lives (type invariant).
        unsafe { &raw mut (*self.raw()).kobj }
    }
}

impl<T: Send + Sync> Drop for ClassDevice<T> {
    fn drop(&mut self) {
        let inner = self.inner.as_ptr();
        let dev = self.raw();
        // SAFETY: The device is added (type invariant) and is deleted only here. `device_del`
        // removes the attribute files, waiting for running callbacks, so none can reach `data`
        // afterwards; then `data` is dropped once, and our reference to the device released.
        unsafe {
            if self.has_cdev {
                // No lookup finds the cdev from here (`cdev_del` drops the reference
                // `cdev_init` gave); each open file's keeps it, and so `dev`, until it closes.
                bindings::cdev_device_del((*inner).header.cdev.get(), dev);
                // An open that found the cdev earlier gets `ENXIO` from here on; one running
                // now finishes first.
                *(*inner).open_gate.lock() = false;
            } else {
                bindings::device_del(dev);
            }
            ManuallyDrop::drop(&mut (*inner).data);
            bindings::put_device(dev);
        }
    }
}

#[macros::kunit_tests(rdma_rs_class_device)]
mod tests {
    use super::*;
    use crate::{
        page::PAGE_SIZE,
        sync::atomic::{Atomic, Relaxed},
        sysfs_attrs::{Attribute, ShowBuffer},
    };

    /// Counts drops, so that the test sees when the device's data goes.
    struct Data {
        value: Atomic<u32>,
        drops: Arc<Atomic<u32>>,
    }

    impl Drop for Data {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Relaxed);
        }
    }

    fn show_value(d: &Data, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
        buf.emit(fmt!("{}\n", d.value.load(Relaxed)))
    }

    fn store_value(d: &Data, _: u32, data: &[u8]) -> Result {
        let digit = data.first().copied().ok_or(EINVAL)?;
        if !digit.is_ascii_digit() {
            return Err(EINVAL);
        }
        d.value.store(u32::from(digit - b'0'), Relaxed);
        Ok(())
    }

    fn show_index(_: &Data, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
        buf.emit(fmt!("entry {}\n", i))
    }

    /// The kernfs node `name` below `dir`, if it exists.
    fn exists(dir: *mut bindings::kernfs_node, name: &CStr) -> bool {
        // SAFETY: `dir` is a live kernfs directory (test only); the reference taken is dropped.
        unsafe {
            let kn = bindings::kernfs_find_and_get_ns(dir, name.as_char_ptr(), core::ptr::null());
            if kn.is_null() {
                return false;
            }
            bindings::kernfs_put(kn);
            true
        }
    }

    /// Reads attribute `attr` of `kobj` through the kobject's sysfs operations, as a `read(2)`
    /// does.
    fn read(kobj: *mut bindings::kobject, attr: *mut bindings::attribute) -> Result<KVec<u8>> {
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        // SAFETY: `kobj` is a live kobject in sysfs with a sysfs_ops `show` (test only).
        let n = unsafe {
            let ops = (*(*kobj).ktype).sysfs_ops;
            ((*ops).show.ok_or(EINVAL)?)(kobj, attr, page.as_mut_ptr().cast())
        };
        if n < 0 {
            return Err(Error::from_errno(n as i32));
        }
        page.truncate(n as usize);
        Ok(page)
    }

    /// Writes `data` to attribute `attr` of `kobj` through the kobject's sysfs operations.
    fn write(kobj: *mut bindings::kobject, attr: *mut bindings::attribute, data: &[u8]) -> isize {
        // SAFETY: As in `read`; `data` is valid for its length.
        unsafe {
            let ops = (*(*kobj).ktype).sysfs_ops;
            match (*ops).store {
                Some(f) => f(kobj, attr, data.as_ptr().cast(), data.len()),
                None => -1,
            }
        }
    }

    /// Attribute `i` of group `g` of the device.
    fn attr(dev: &ClassDevice<Data>, g: usize, i: usize) -> *mut bindings::attribute {
        // SAFETY: The test built the groups; `g` and `i` are within them.
        unsafe {
            let list = (*dev.raw()).groups;
            *(**list.add(g)).__bindgen_anon_2.attrs.add(i)
        }
    }

    #[test]
    fn add_read_write_rename_remove() -> Result {
        let class = KBox::pin_init(class::Registration::new(c"rdma_rs_kunit_cd"), GFP_KERNEL)?;
        let drops = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let mut b = AttributeGroups::builder();
        b.group(
            None,
            &[
                Attribute::ro(c"ro", show_value),
                Attribute::rw(c"rw", show_value, store_value),
            ],
        )?;
        b.table(c"tab", 2, 0o444, Some(show_index), None)?;
        let data = Data {
            value: Atomic::new(5),
            drops: drops.clone(),
        };
        // SAFETY: `class` outlives the device (dropped at the end of the test, after it).
        let dev = unsafe {
            ClassDevice::new(
                &class,
                None,
                c"kunit_cd0",
                b.build()?,
                data,
                AddUevent::Now,
                None,
            )?
        };
        assert_eq!(dev.name(), c"kunit_cd0");
        let kobj = dev.kobject();
        // SAFETY: The device is in sysfs; its kobject and directory are valid.
        let (dir, vdir) = unsafe { ((*kobj).sd, (*(*kobj).parent).sd) };
        assert!(exists(vdir, c"kunit_cd0"));
        assert!(exists(dir, c"ro"));
        assert!(exists(dir, c"rw"));
        assert!(exists(dir, c"tab"));
        assert!(!exists(dir, c"nothing"));

        // Through the driver core's device sysfs_ops, as a read(2) would.
        assert_eq!(&read(kobj, attr(&dev, 0, 0))?[..], b"5\n");
        assert_eq!(&read(kobj, attr(&dev, 1, 1))?[..], b"entry 1\n");
        assert_eq!(write(kobj, attr(&dev, 0, 1), b"3\n"), 2);
        assert_eq!(&read(kobj, attr(&dev, 0, 1))?[..], b"3\n");
        assert_eq!(
            write(kobj, attr(&dev, 0, 1), b"z"),
            -(bindings::EINVAL as isize)
        );
        assert_eq!(dev.data().value.load(Relaxed), 3);

        // Rename: the directory follows; a taken name is refused.
        dev.rename(c"kunit_cd1")?;
        assert_eq!(dev.name(), c"kunit_cd1");
        assert!(exists(vdir, c"kunit_cd1"));
        assert!(!exists(vdir, c"kunit_cd0"));
        let mut b2 = AttributeGroups::<Data>::builder();
        b2.group(None, &[])?;
        let other = Data {
            value: Atomic::new(0),
            drops: drops.clone(),
        };
        // SAFETY: As above.
        let dev2 = unsafe {
            ClassDevice::new(
                &class,
                None,
                c"kunit_cd2",
                b2.build()?,
                other,
                AddUevent::Deferred,
                None,
            )?
        };
        dev2.announce();
        assert_eq!(dev.rename(c"kunit_cd2"), Err(EEXIST));
        // Removal deletes the directory and drops the data.
        assert_eq!(drops.load(Relaxed), 0);
        drop(dev);
        assert_eq!(drops.load(Relaxed), 1);
        assert!(!exists(vdir, c"kunit_cd1"));
        drop(dev2);
        assert_eq!(drops.load(Relaxed), 2);
        Ok(())
    }
}
