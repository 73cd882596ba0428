// SPDX-License-Identifier: GPL-2.0

//! Sysfs directories below a device or another directory (a bare kobject, as C's
//! `kobject_create_and_add` or a kobject with a `kobj_type`), with attribute groups whose
//! callbacks get the directory's data.
//!
//! A [`KObjectDir<T>`] keeps its parent ([`SysfsDir`]) alive, so a parent's directory is never
//! removed before its children's: a child directory removed after its parent would look up
//! kernfs nodes that are gone.
//!
//! # Lifetimes
//!
//! As for [`crate::class_device`]: dropping the directory removes its groups and its kobject
//! from sysfs (kernfs waits for the callbacks running on its files and refuses new ones) before
//! `T` is dropped; the memory goes with the kobject's last reference, through a release function
//! that is not generic and lives in the kernel image, as do the `kobj_type` and `sysfs_ops`
//! the kobject points to.
//!
//! C header: [`include/linux/kobject.h`](srctree/include/linux/kobject.h)

use crate::{
    bindings,
    error::to_result,
    prelude::*,
    sync::{Arc, UniqueArc},
    sysfs_attrs::{self, AttributeGroups, RawGroups},
    types::Opaque,
};
use core::{marker::PhantomData, mem::ManuallyDrop, ptr::NonNull};

/// An object with a directory in sysfs that other directories can be created in.
///
/// # Safety
///
/// [`SysfsDir::kobject`] returns a kobject that is valid and in sysfs while `self` lives.
pub unsafe trait SysfsDir: Send + Sync {
    /// The kobject of the directory.
    fn kobject(&self) -> *mut bindings::kobject;
}

/// Attribute files C code adds to a directory it does not own (`sysfs_create_groups` on its
/// kobject, as C's `ib_port_register_client_groups` does for a client's counters): their
/// `struct attribute`s are C's, not built by [`AttributeGroups`], so the directory's data
/// dispatches them.
pub trait ForeignAttrs: Send + Sync {
    /// `show` of the foreign attribute `attr` into the page `buf`: the length written or a
    /// negative errno.
    ///
    /// # Safety
    ///
    /// `attr` belongs to a group added with [`KObjectDir::add_foreign_groups`] and not removed
    /// yet; `buf` is a writable `PAGE_SIZE` buffer.
    unsafe fn show_foreign(&self, attr: *mut bindings::attribute, buf: *mut c_char) -> isize;

    /// `store` of the foreign attribute `attr` with `count` bytes at `buf`: `count` or a
    /// negative errno.
    ///
    /// # Safety
    ///
    /// As for [`ForeignAttrs::show_foreign`], except that `buf` is readable for `count` bytes.
    unsafe fn store_foreign(
        &self,
        attr: *mut bindings::attribute,
        buf: *const c_char,
        count: usize,
    ) -> isize;
}

/// The [`ForeignAttrs`] entry points of a directory's `T`, with `T` erased.
#[derive(Clone, Copy)]
struct ForeignCalls {
    show: unsafe fn(*const c_void, *mut bindings::attribute, *mut c_char) -> isize,
    store: unsafe fn(*const c_void, *mut bindings::attribute, *const c_char, usize) -> isize,
}

/// # Safety
///
/// `data` points to a live `T`; the rest as for [`ForeignAttrs::show_foreign`].
unsafe fn foreign_show<T: ForeignAttrs>(
    data: *const c_void,
    attr: *mut bindings::attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: The function's contract.
    unsafe { (*data.cast::<T>()).show_foreign(attr, buf) }
}

/// # Safety
///
/// `data` points to a live `T`; the rest as for [`ForeignAttrs::store_foreign`].
unsafe fn foreign_store<T: ForeignAttrs>(
    data: *const c_void,
    attr: *mut bindings::attribute,
    buf: *const c_char,
    count: usize,
) -> isize {
    // SAFETY: The function's contract.
    unsafe { (*data.cast::<T>()).store_foreign(attr, buf, count) }
}

/// The part of the allocation the `kobj_type` callbacks know about.
#[repr(C)]
struct Header {
    /// First, so that the kobject's address is the allocation's.
    kobj: Opaque<bindings::kobject>,
    groups: RawGroups,
    /// The `T` of the enclosing `Inner<T>`.
    data: *const c_void,
    /// How the `T` shows and stores the attributes C code added, if it can.
    foreign: Option<ForeignCalls>,
}

#[repr(C)]
struct Inner<T> {
    header: Header,
    data: ManuallyDrop<T>,
}

/// Frees the allocation when the kobject's last reference goes.
///
/// # Safety
///
/// Called by the kobject core, once, for a kobject of [`KTYPE`], whose `T` has been dropped.
unsafe extern "C" fn release(kobj: *mut bindings::kobject) {
    let header = kobj.cast::<Header>();
    // SAFETY: `kobj` is the first field of a `repr(C)` `Header` at the start of the allocation
    // (contract); the groups are not used any more and `T` was dropped by its owner.
    unsafe {
        core::ptr::drop_in_place(&raw mut (*header).groups);
        bindings::kfree(header.cast());
    }
}

/// # Safety
///
/// Called by sysfs for an attribute of a kobject of [`KTYPE`] while the file exists.
unsafe extern "C" fn show(
    kobj: *mut bindings::kobject,
    attr: *mut bindings::attribute,
    buf: *mut c_char,
) -> isize {
    let header = kobj.cast::<Header>();
    // SAFETY: The kobject is a live `Header` whose `data` is valid while its files exist (type
    // invariant of `KObjectDir`); an attribute not in its own groups was added by C code
    // through `add_foreign_groups`, which only a directory with foreign calls accepts.
    unsafe {
        if (*header).groups.contains(attr) {
            sysfs_attrs::show(attr, (*header).data, buf)
        } else if let Some(f) = (*header).foreign {
            (f.show)((*header).data, attr, buf)
        } else {
            EIO.to_errno() as isize
        }
    }
}

/// # Safety
///
/// As for [`show`].
unsafe extern "C" fn store(
    kobj: *mut bindings::kobject,
    attr: *mut bindings::attribute,
    buf: *const c_char,
    count: usize,
) -> isize {
    let header = kobj.cast::<Header>();
    // SAFETY: As in `show`; sysfs gives `count` bytes.
    unsafe {
        if (*header).groups.contains(attr) {
            sysfs_attrs::store(attr, (*header).data, buf, count)
        } else if let Some(f) = (*header).foreign {
            (f.store)((*header).data, attr, buf, count)
        } else {
            EIO.to_errno() as isize
        }
    }
}

/// A `kobj_type` or `sysfs_ops` in a `static`.
#[repr(transparent)]
struct Static<T>(T);

// SAFETY: The wrapped C tables are never written after initialisation; their pointers are to
// functions and to other such statics.
unsafe impl<T> Sync for Static<T> {}

static SYSFS_OPS: Static<bindings::sysfs_ops> = Static(bindings::sysfs_ops {
    show: Some(show),
    store: Some(store),
});

static KTYPE: Static<bindings::kobj_type> = Static(bindings::kobj_type {
    release: Some(release),
    sysfs_ops: &SYSFS_OPS.0,
    default_groups: core::ptr::null_mut(),
    child_ns_type: None,
    namespace: None,
    get_ownership: None,
});

/// A directory in sysfs, owning the data its attributes read.
///
/// Created in an [`Arc`] so that directories below it can keep it alive; it is removed when the
/// last of them and its owner have dropped it. It must be dropped in process context.
///
/// # Invariants
///
/// `inner` is a live allocation whose kobject was added to sysfs below `parent`'s, with its
/// groups created, and not deleted yet; `header.data` points to `data`, which is initialised;
/// the groups were built for `T`.
pub struct KObjectDir<T: Send + Sync> {
    inner: NonNull<Inner<T>>,
    /// Keeps the parent's directory in sysfs while this one is.
    _parent: Arc<dyn SysfsDir>,
    _data: PhantomData<T>,
}

// SAFETY: The kobject is driven through the kobject core, which has its own locking; `T` is
// `Send` and dropped wherever the directory is.
unsafe impl<T: Send + Sync> Send for KObjectDir<T> {}

// SAFETY: Shared access gives `&T` (`T: Sync`) and the kobject pointer.
unsafe impl<T: Send + Sync> Sync for KObjectDir<T> {}

impl<T: Send + Sync> KObjectDir<T> {
    /// Creates directory `name` in `parent`'s, with `groups` reading `data`.
    pub fn new(
        parent: Arc<dyn SysfsDir>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
    ) -> Result<Arc<Self>> {
        Self::create(parent, name, groups, data, None)
    }

    /// As [`KObjectDir::new`], for a directory C code may add attribute groups to
    /// ([`KObjectDir::add_foreign_groups`]), which `data` shows and stores.
    pub fn new_with_foreign(
        parent: Arc<dyn SysfsDir>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
    ) -> Result<Arc<Self>>
    where
        T: ForeignAttrs,
    {
        let calls = ForeignCalls {
            show: foreign_show::<T>,
            store: foreign_store::<T>,
        };
        Self::create(parent, name, groups, data, Some(calls))
    }

    fn create(
        parent: Arc<dyn SysfsDir>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
        foreign: Option<ForeignCalls>,
    ) -> Result<Arc<Self>> {
        let holder = UniqueArc::<Self>::new_uninit(GFP_KERNEL)?;
        // Allocated before `data` and `groups` are given up to `ManuallyDrop` and a raw pointer,
        // so that a failed allocation drops them (else they leak).
        let slot = KBox::<Inner<T>>::new_uninit(GFP_KERNEL)?;
        let inner = KBox::into_raw(KBox::write(
            slot,
            Inner {
                header: Header {
                    kobj: Opaque::zeroed(),
                    groups: groups.into_raw(),
                    data: core::ptr::null(),
                    foreign,
                },
                data: ManuallyDrop::new(data),
            },
        ));
        // SAFETY: `inner` is a valid allocation that this function owns.
        let kobj = unsafe { (*inner).header.kobj.get() };
        // SAFETY: `kobj` is zeroed and not shared. From `kobject_init` on, the kobject owns the
        // allocation: `kobject_put` frees it through `release`, which leaves `data` to us.
        unsafe {
            (*inner).header.data = (&raw const (*inner).data).cast();
            bindings::kobject_init(kobj, &KTYPE.0);
        }
        let abort = |err: Error| {
            // SAFETY: `data` is initialised and no callback can reach it (no file exists); the
            // kobject holds the only reference, so `kobject_put` frees it.
            unsafe {
                ManuallyDrop::drop(&mut (*inner).data);
                bindings::kobject_put(kobj);
            }
            err
        };
        // SAFETY: `kobj` is initialised; the parent's kobject is in sysfs while `parent` lives
        // (`SysfsDir`), and `kobject_add` takes its own reference on it. One string argument.
        to_result(unsafe {
            bindings::kobject_add(
                kobj,
                parent.kobject(),
                c"%s".as_char_ptr(),
                name.as_char_ptr(),
            )
        })
        .map_err(abort)?;
        // SAFETY: `kobj` is in sysfs; the groups live in the allocation.
        if let Err(e) = to_result(unsafe {
            bindings::sysfs_create_groups(kobj, (*inner).header.groups.as_list())
        }) {
            // SAFETY: `kobj` is in sysfs; `sysfs_create_groups` removed what it had created.
            unsafe { bindings::kobject_del(kobj) };
            return Err(abort(e));
        }
        // INVARIANT: the kobject is in sysfs with its groups, `header.data` points to `data`.
        Ok(holder
            .write(Self {
                // SAFETY: `KBox::into_raw` does not return null.
                inner: unsafe { NonNull::new_unchecked(inner) },
                _parent: parent,
                _data: PhantomData,
            })
            .into())
    }

    /// The data the attributes read.
    pub fn data(&self) -> &T {
        // SAFETY: `data` is initialised while `self` lives (type invariant).
        unsafe { &(*self.inner.as_ptr()).data }
    }

    fn raw(&self) -> *mut bindings::kobject {
        // SAFETY: `inner` is live (type invariant).
        unsafe { (*self.inner.as_ptr()).header.kobj.get() }
    }

    /// Adds C's attribute groups `groups` (a NULL-terminated list) to the directory, as C's
    /// `sysfs_create_groups` on its kobject; their files are shown and stored by the data's
    /// [`ForeignAttrs`]. `EINVAL` for a directory made without it.
    ///
    /// # Safety
    ///
    /// `groups` and everything it points to stay valid until [`KObjectDir::remove_foreign_groups`]
    /// removes them or the directory is dropped; their attributes are ones the data's
    /// [`ForeignAttrs`] understands.
    pub unsafe fn add_foreign_groups(
        &self,
        groups: *const *const bindings::attribute_group,
    ) -> Result {
        // SAFETY: `inner` is live (type invariant).
        if unsafe { (*self.inner.as_ptr()).header.foreign.is_none() } {
            return Err(EINVAL);
        }
        // SAFETY: The kobject is in sysfs (type invariant); `groups` is valid (contract).
        to_result(unsafe { bindings::sysfs_create_groups(self.raw(), groups.cast_mut()) })
    }

    /// Removes groups added by [`KObjectDir::add_foreign_groups`] (waiting for their callbacks
    /// running), as C's `sysfs_remove_groups`.
    ///
    /// # Safety
    ///
    /// `groups` is valid; it was added with [`KObjectDir::add_foreign_groups`].
    pub unsafe fn remove_foreign_groups(&self, groups: *const *const bindings::attribute_group) {
        // SAFETY: The kobject is in sysfs (type invariant); `groups` is valid (contract).
        unsafe { bindings::sysfs_remove_groups(self.raw(), groups.cast_mut()) }
    }
}

// SAFETY: The kobject is in sysfs from `new` until `drop`, and valid while `self` lives.
unsafe impl<T: Send + Sync> SysfsDir for KObjectDir<T> {
    fn kobject(&self) -> *mut bindings::kobject {
        self.raw()
    }
}

impl<T: Send + Sync> Drop for KObjectDir<T> {
    fn drop(&mut self) {
        let inner = self.inner.as_ptr();
        let kobj = self.raw();
        // SAFETY: The kobject is in sysfs with its groups (type invariant), and removed only
        // here: removing the groups and the directory waits for running callbacks and refuses
        // new ones, so `data` can be dropped afterwards; then our reference is released. The
        // parent is still in sysfs (`_parent` is dropped after this).
        unsafe {
            bindings::sysfs_remove_groups(kobj, (*inner).header.groups.as_list());
            bindings::kobject_del(kobj);
            ManuallyDrop::drop(&mut (*inner).data);
            bindings::kobject_put(kobj);
        }
    }
}

#[macros::kunit_tests(rdma_rs_kobject_dir)]
mod tests {
    use super::*;
    use crate::{
        class,
        class_device::{AddUevent, ClassDevice},
        page::PAGE_SIZE,
        sync::atomic::{Atomic, Relaxed},
        sysfs_attrs::{Attribute, ShowBuffer},
    };

    struct Port {
        num: u32,
        drops: Arc<Atomic<u32>>,
    }

    impl Drop for Port {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Relaxed);
        }
    }

    fn show_num(p: &Port, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
        buf.emit(fmt!("port {}\n", p.num))
    }

    fn show_entry(p: &Port, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
        buf.emit(fmt!("0x{:04x}\n", p.num * 0x100 + i))
    }

    fn store_entry(_: &Port, _: u32, data: &[u8]) -> Result {
        if data.is_empty() {
            return Err(EINVAL);
        }
        Err(EPERM)
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

    fn dir_of(d: &dyn SysfsDir) -> *mut bindings::kernfs_node {
        // SAFETY: The kobject is in sysfs while `d` lives.
        unsafe { (*d.kobject()).sd }
    }

    /// Calls `show` or `store` of attribute `i` of group `g` through the directory's sysfs_ops.
    fn call(d: &KObjectDir<Port>, g: usize, i: usize, write: Option<&[u8]>) -> (isize, KVec<u8>) {
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL).unwrap_or_default();
        if page.len() != PAGE_SIZE {
            return (-(bindings::ENOMEM as isize), page);
        }
        let kobj = d.raw();
        // SAFETY: The test built the groups, `g` and `i` are within them; the kobject is in
        // sysfs; the page is a page.
        let n = unsafe {
            let list = (*d.inner.as_ptr()).header.groups.as_list();
            let attr = *(**list.add(g)).__bindgen_anon_2.attrs.add(i);
            let ops = (*(*kobj).ktype).sysfs_ops;
            match write {
                None => ((*ops).show.unwrap_or(show))(kobj, attr, page.as_mut_ptr().cast()),
                Some(w) => ((*ops).store.unwrap_or(store))(kobj, attr, w.as_ptr().cast(), w.len()),
            }
        };
        page.truncate(n.max(0) as usize);
        (n, page)
    }

    #[test]
    fn tree_below_a_class_device() -> Result {
        let class = KBox::pin_init(class::Registration::new(c"rdma_rs_kunit_kd"), GFP_KERNEL)?;
        let drops = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        // SAFETY: `class` outlives the device: every directory holding it is dropped before the
        // end of the test.
        let dev: Arc<dyn SysfsDir> = unsafe {
            ClassDevice::new(
                &class,
                None,
                c"kunit_kd0",
                AttributeGroups::empty()?,
                (),
                AddUevent::Now,
                None,
            )?
        };
        let ports: Arc<dyn SysfsDir> =
            KObjectDir::new(dev.clone(), c"ports", AttributeGroups::empty()?, ())?;
        let mut b = AttributeGroups::builder();
        b.group(None, &[Attribute::ro(c"num", show_num)])?;
        b.table(c"pkeys", 3, 0o444, Some(show_entry), None)?;
        b.table(c"gids", 0, 0o444, Some(show_entry), None)?;
        b.table(c"rw", 1, 0o644, Some(show_entry), Some(store_entry))?;
        let port = Port {
            num: 2,
            drops: drops.clone(),
        };
        let p2 = KObjectDir::new(ports.clone(), c"2", b.build()?, port)?;
        assert_eq!(p2.data().num, 2);

        assert!(exists(dir_of(&*dev), c"ports"));
        assert!(exists(dir_of(&*ports), c"2"));
        let pd = dir_of(&*p2);
        assert!(exists(pd, c"num"));
        assert!(exists(pd, c"pkeys"));
        assert!(exists(pd, c"gids"));
        assert!(!exists(pd, c"counters"));

        let (n, text) = call(&p2, 0, 0, None);
        assert_eq!(n, 7);
        assert_eq!(&text[..], b"port 2\n");
        let (n, text) = call(&p2, 1, 2, None);
        assert_eq!(n, 7);
        assert_eq!(&text[..], b"0x0202\n");
        assert_eq!(call(&p2, 3, 0, Some(b"1")).0, -(bindings::EPERM as isize));
        assert_eq!(call(&p2, 1, 0, Some(b"1")).0, -(bindings::EIO as isize));

        // A child keeps its parents in sysfs: dropping our handles removes nothing yet.
        let ports_dir = dir_of(&*ports);
        drop(ports);
        drop(dev);
        assert!(exists(ports_dir, c"2"));
        assert_eq!(drops.load(Relaxed), 0);
        // The last child goes: the whole tree goes, the data is dropped once.
        drop(p2);
        assert_eq!(drops.load(Relaxed), 1);
        drop(class);
        Ok(())
    }

    impl ForeignAttrs for Port {
        unsafe fn show_foreign(&self, attr: *mut bindings::attribute, buf: *mut c_char) -> isize {
            // SAFETY: `attr` is the test's foreign attribute, whose name is a C string; `buf`
            // is a page (contract).
            let n = unsafe { CStr::from_char_ptr((*attr).name) }
                .to_bytes()
                .len();
            let text = [b'f'; 8];
            let n = n.min(text.len());
            // SAFETY: `buf` is a page (contract); `n` is at most 8.
            unsafe { core::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n) };
            n as isize
        }

        unsafe fn store_foreign(
            &self,
            _: *mut bindings::attribute,
            _: *const c_char,
            count: usize,
        ) -> isize {
            count as isize + self.num as isize
        }
    }

    /// A C attribute group, as C modules declare them (`static`, never moved).
    struct CGroup {
        attr: Opaque<bindings::attribute>,
        attrs: Opaque<[*mut bindings::attribute; 2]>,
        group: Opaque<bindings::attribute_group>,
        list: Opaque<[*const bindings::attribute_group; 2]>,
    }

    // SAFETY: Written once by the test before use, then only read (by sysfs).
    unsafe impl Sync for CGroup {}

    static C_GROUP: CGroup = CGroup {
        attr: Opaque::zeroed(),
        attrs: Opaque::zeroed(),
        group: Opaque::zeroed(),
        list: Opaque::zeroed(),
    };

    #[test]
    fn foreign_groups() -> Result {
        let class = KBox::pin_init(class::Registration::new(c"rdma_rs_kunit_kf"), GFP_KERNEL)?;
        let drops = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        // SAFETY: As in `tree_below_a_class_device`.
        let dev: Arc<dyn SysfsDir> = unsafe {
            ClassDevice::new(
                &class,
                None,
                c"kunit_kf0",
                AttributeGroups::empty()?,
                (),
                AddUevent::Now,
                None,
            )?
        };
        let mut b = AttributeGroups::builder();
        b.group(None, &[Attribute::ro(c"num", show_num)])?;
        let port = Port {
            num: 3,
            drops: drops.clone(),
        };
        let p3 = KObjectDir::new_with_foreign(dev.clone(), c"3", b.build()?, port)?;
        let plain = KObjectDir::new(dev.clone(), c"plain", AttributeGroups::empty()?, ())?;
        let g = &C_GROUP;
        // SAFETY: Only this test uses the static; sysfs reads it after it is written.
        let list = unsafe {
            let a = &mut *g.attr.get();
            a.name = c"foreign".as_char_ptr();
            a.mode = 0o644;
            *g.attrs.get() = [g.attr.get(), core::ptr::null_mut()];
            let gr = &mut *g.group.get();
            gr.name = c"cm_rx_msgs".as_char_ptr();
            gr.__bindgen_anon_2.attrs = g.attrs.get().cast();
            *g.list.get() = [g.group.get().cast_const(), core::ptr::null()];
            g.list.get().cast::<*const bindings::attribute_group>()
        };
        // SAFETY: The groups are static and removed below.
        assert_eq!(unsafe { plain.add_foreign_groups(list) }, Err(EINVAL));
        // SAFETY: As above; `Port` shows any attribute.
        unsafe { p3.add_foreign_groups(list)? };
        assert!(exists(dir_of(&*p3), c"cm_rx_msgs"));
        // The own attribute still reads the data; the foreign one goes to `ForeignAttrs`.
        assert_eq!(&call(&p3, 0, 0, None).1[..], b"port 3\n");
        let kobj = p3.raw();
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        // SAFETY: The kobject is in sysfs with the foreign group; the page is a page.
        let (n, w) = unsafe {
            let ops = (*(*kobj).ktype).sysfs_ops;
            let n = ((*ops).show.unwrap_or(show))(kobj, g.attr.get(), page.as_mut_ptr().cast());
            let w = ((*ops).store.unwrap_or(store))(kobj, g.attr.get(), page.as_ptr().cast(), 2);
            (n, w)
        };
        assert_eq!(n, 7);
        assert_eq!(&page[..7], b"fffffff");
        assert_eq!(w, 5);
        // SAFETY: Added above.
        unsafe { p3.remove_foreign_groups(list) };
        assert!(!exists(dir_of(&*p3), c"cm_rx_msgs"));
        // SAFETY: As above: left in place, it goes with the directory.
        unsafe { p3.add_foreign_groups(list)? };
        drop(plain);
        drop(p3);
        drop(dev);
        assert_eq!(drops.load(Relaxed), 1);
        drop(class);
        Ok(())
    }
}
