// SPDX-License-Identifier: GPL-2.0

//! Sysfs attributes and attribute groups whose `show` and `store` run Rust code.
//!
//! An [`AttributeGroups<T>`] is the `attribute_group` list of one sysfs object (a class device,
//! see [`crate::class_device`], or a directory, see [`crate::kobject_dir`]) whose data is a `T`.
//! Every attribute carries a [`ShowFn<T>`] and/or a [`StoreFn<T>`] and an index, so that one
//! callback can serve a table of files named `0`, `1`, ... (`gids/0`..`gids/N-1`); the names of
//! such tables are generated and owned by the groups.
//!
//! The object that holds the groups reaches its `T` when sysfs calls it and hands it to the
//! callbacks; see the object's documentation for why `T` outlives every call.
//!
//! C header: [`include/linux/sysfs.h`](srctree/include/linux/sysfs.h)

use crate::{bindings, page::PAGE_SIZE, prelude::*};
use core::{fmt, marker::PhantomData, ptr};

/// Reads an attribute: writes the file's contents for the object's data and index into the
/// buffer. An error becomes the `read` errno.
pub type ShowFn<T> = fn(&T, u32, &mut ShowBuffer<'_>) -> Result;

/// Writes an attribute with the bytes user space wrote (the whole write, at most a page). On
/// success the write is reported complete; an error becomes the `write` errno.
pub type StoreFn<T> = fn(&T, u32, &[u8]) -> Result;

/// The page a [`ShowFn`] fills. Output past `PAGE_SIZE - 1` bytes is dropped, as `sysfs_emit`
/// does.
pub struct ShowBuffer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> ShowBuffer<'a> {
    /// A buffer writing into `buf` (of which it uses at most `PAGE_SIZE - 1` bytes).
    pub fn new(buf: &'a mut [u8]) -> Self {
        let cap = buf.len().min(PAGE_SIZE - 1);
        Self {
            buf: &mut buf[..cap],
            len: 0,
        }
    }

    /// Appends `bytes`, as far as they fit.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let room = self.buf.len() - self.len;
        let n = bytes.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    /// Appends formatted text, as far as it fits (`buf.emit(fmt!("{}\n", x))`).
    pub fn emit(&mut self, args: fmt::Arguments<'_>) -> Result {
        fmt::Write::write_fmt(self, args).map_err(|_| EINVAL)
    }

    /// What has been written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Number of bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Write for ShowBuffer<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.write_bytes(s.as_bytes());
        Ok(())
    }
}

/// The permission bits sysfs accepts on an attribute (it warns about any other).
const VALID_MODE: u16 = 0o664;

/// One attribute of a group: a file name, its mode and its callbacks.
pub struct Attribute<T: ?Sized> {
    name: &'static CStr,
    mode: u16,
    show: Option<ShowFn<T>>,
    store: Option<StoreFn<T>>,
}

impl<T: ?Sized> Clone for Attribute<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Attribute<T> {}

impl<T: ?Sized> Attribute<T> {
    /// An attribute with the given mode (at most `0o664`, as sysfs demands) and callbacks.
    pub const fn new(
        name: &'static CStr,
        mode: u16,
        show: Option<ShowFn<T>>,
        store: Option<StoreFn<T>>,
    ) -> Self {
        Self {
            name,
            mode,
            show,
            store,
        }
    }

    /// A read-only attribute, mode `0444` (C's `__ATTR_RO`).
    pub const fn ro(name: &'static CStr, show: ShowFn<T>) -> Self {
        Self::new(name, 0o444, Some(show), None)
    }

    /// A read-write attribute, mode `0644` (C's `__ATTR_RW`).
    pub const fn rw(name: &'static CStr, show: ShowFn<T>, store: StoreFn<T>) -> Self {
        Self::new(name, 0o644, Some(show), Some(store))
    }

    /// The file name.
    pub fn name(&self) -> &'static CStr {
        self.name
    }

    /// The file mode.
    pub fn mode(&self) -> u16 {
        self.mode
    }

    /// Whether the attribute can be written.
    pub fn has_store(&self) -> bool {
        self.store.is_some()
    }

    /// Calls `show` (`EIO` without one), for an owner that forwards its files to `data`.
    pub fn show(&self, data: &T, index: u32, buf: &mut ShowBuffer<'_>) -> Result {
        self.show.ok_or(EIO)?(data, index, buf)
    }

    /// Calls `store` (`EIO` without one).
    pub fn store(&self, data: &T, index: u32, bytes: &[u8]) -> Result {
        self.store.ok_or(EIO)?(data, index, bytes)
    }
}

/// Longest generated name: a `u32` in decimal and the NUL.
const NAME_LEN: usize = 12;

/// A `show` or `store` entry point for one `T`, with the callback's type erased.
type CallShow = unsafe fn(*const c_void, &RawAttr, &mut ShowBuffer<'_>) -> Result;
type CallStore = unsafe fn(*const c_void, &RawAttr, &[u8]) -> Result;

/// An attribute as sysfs sees it, with what is needed to call back into Rust.
///
/// The `struct attribute` is first (inside the `device_attribute`), so a pointer to it is a
/// pointer to the whole.
#[repr(C)]
struct RawAttr {
    dattr: bindings::device_attribute,
    /// The generated name (tables), NUL-terminated.
    name: [u8; NAME_LEN],
    index: u32,
    /// The `ShowFn<T>` / `StoreFn<T>` of the `T` the groups were built for, or null.
    show: *const (),
    store: *const (),
    call_show: CallShow,
    call_store: CallStore,
}

/// # Safety
///
/// `owner` points to a valid `T`, and `attr.show` is null or a `ShowFn<T>`.
unsafe fn call_show<T>(owner: *const c_void, attr: &RawAttr, buf: &mut ShowBuffer<'_>) -> Result {
    if attr.show.is_null() {
        return Err(EIO);
    }
    // SAFETY: By the function's contract `attr.show` is a `ShowFn<T>` cast to a data pointer, which
    // has the size of a function pointer.
    let show = unsafe { core::mem::transmute::<*const (), ShowFn<T>>(attr.show) };
    // SAFETY: By the function's contract `owner` points to a valid `T`.
    show(unsafe { &*owner.cast::<T>() }, attr.index, buf)
}

/// # Safety
///
/// `owner` points to a valid `T`, and `attr.store` is null or a `StoreFn<T>`.
unsafe fn call_store<T>(owner: *const c_void, attr: &RawAttr, data: &[u8]) -> Result {
    if attr.store.is_null() {
        return Err(EIO);
    }
    // SAFETY: As in `call_show`.
    let store = unsafe { core::mem::transmute::<*const (), StoreFn<T>>(attr.store) };
    // SAFETY: By the function's contract `owner` points to a valid `T`.
    store(unsafe { &*owner.cast::<T>() }, attr.index, data)
}

/// Calls the `show` of `attr` for the object whose data is at `owner`, into the page `buf`.
///
/// # Safety
///
/// `attr` is an attribute of a live [`RawGroups`] built as `AttributeGroups<T>`, `owner` points
/// to a `T` that stays valid during the call, and `buf` is a writable `PAGE_SIZE` buffer.
pub(crate) unsafe fn show(
    attr: *const bindings::attribute,
    owner: *const c_void,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `attr` is the first field of a `RawAttr` (contract), which is `repr(C)`.
    let raw = unsafe { &*attr.cast::<RawAttr>() };
    // SAFETY: sysfs hands `show` a page-sized buffer (contract).
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), PAGE_SIZE) };
    let mut out = ShowBuffer::new(page);
    // SAFETY: `raw.call_show` was built for the `T` of `owner` (contract).
    match unsafe { (raw.call_show)(owner, raw, &mut out) } {
        Ok(()) => out.len() as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// Calls the `store` of `attr` for the object whose data is at `owner`, with `count` bytes at
/// `buf`; returns `count` or a negative errno.
///
/// # Safety
///
/// As for [`show`], except that `buf` is valid for reading `count` bytes.
pub(crate) unsafe fn store(
    attr: *const bindings::attribute,
    owner: *const c_void,
    buf: *const c_char,
    count: usize,
) -> isize {
    // SAFETY: `attr` is the first field of a `RawAttr` (contract), which is `repr(C)`.
    let raw = unsafe { &*attr.cast::<RawAttr>() };
    // SAFETY: sysfs passes `count` readable bytes (contract).
    let data = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    // SAFETY: `raw.call_store` was built for the `T` of `owner` (contract).
    match unsafe { (raw.call_store)(owner, raw, data) } {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// `device_attribute::show` of every attribute: the device's driver data is the owner.
///
/// # Safety
///
/// Called by the driver core for an attribute of a device whose driver data points to the `T`
/// its groups were built for (what [`crate::class_device::ClassDevice`] sets up).
unsafe extern "C" fn device_show(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `dev` is a valid device (contract).
    let owner = unsafe { bindings::dev_get_drvdata(dev) };
    // SAFETY: `attr` is one of ours and `owner` its `T` (contract); sysfs gives a page.
    unsafe { show(&raw const (*attr).attr, owner, buf) }
}

/// `device_attribute::store` of every attribute.
///
/// # Safety
///
/// As for [`device_show`].
unsafe extern "C" fn device_store(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *const c_char,
    count: usize,
) -> isize {
    // SAFETY: `dev` is a valid device (contract).
    let owner = unsafe { bindings::dev_get_drvdata(dev) };
    // SAFETY: `attr` is one of ours and `owner` its `T` (contract); sysfs gives `count` bytes.
    unsafe { store(&raw const (*attr).attr, owner, buf, count) }
}

/// The storage of built groups, with `T` erased: the attributes (with their generated names),
/// the NULL-terminated attribute lists, the groups and the NULL-terminated group list.
///
/// # Invariants
///
/// Nothing is added to the vectors after [`Builder::build`], so every pointer between them stays
/// valid while the value lives (moving the vectors does not move their buffers). The attributes
/// were built for one `T`.
///
/// The attribute arrays are sized by tables a device reports (a GID table of thousands of
/// entries gives thousands of attributes), so they may come from vmalloc (C's kvcalloc).
pub(crate) struct RawGroups {
    attrs: KVVec<RawAttr>,
    /// Only pointed to (by the groups).
    _attr_lists: KVVec<*mut bindings::attribute>,
    groups: KVec<bindings::attribute_group>,
    list: KVec<*const bindings::attribute_group>,
}

// SAFETY: The groups are not changed after they are built; the raw pointers point into the
// value's own buffers or to `'static` names and functions.
unsafe impl Send for RawGroups {}

// SAFETY: See `Send`; shared access only reads.
unsafe impl Sync for RawGroups {}

impl RawGroups {
    /// Whether `attr` is one of these groups' attributes (C code may add attributes of its own
    /// to the same object: `kobject_dir`'s foreign groups).
    pub(crate) fn contains(&self, attr: *const bindings::attribute) -> bool {
        let start = self.attrs.as_ptr() as usize;
        let end = start + self.attrs.len() * core::mem::size_of::<RawAttr>();
        (start..end).contains(&(attr as usize))
    }

    /// The NULL-terminated group list (`struct attribute_group **`, as `device::groups` and
    /// `sysfs_create_groups` take it), valid while `self` lives.
    pub(crate) fn as_list(&self) -> *mut *const bindings::attribute_group {
        self.list.as_ptr().cast_mut()
    }
}

/// The attribute groups of one sysfs object whose data is a `T`.
pub struct AttributeGroups<T> {
    raw: RawGroups,
    _data: PhantomData<fn(&T)>,
}

impl<T> AttributeGroups<T> {
    /// A builder, to which groups are added in the order they are created in.
    pub fn builder() -> Builder<T> {
        Builder {
            groups: KVec::new(),
        }
    }

    /// No attribute at all.
    pub fn empty() -> Result<Self> {
        Self::builder().build()
    }

    /// The type-erased storage, for the object that installs the groups.
    pub(crate) fn into_raw(self) -> RawGroups {
        self.raw
    }

    /// Number of groups.
    pub fn group_count(&self) -> usize {
        self.raw.groups.len()
    }

    /// Number of attributes in all groups.
    pub fn attribute_count(&self) -> usize {
        self.raw.attrs.len()
    }
}

/// The members of one group being built.
enum Members<T> {
    /// Attributes with their own names; index = position in the list.
    List(KVec<Attribute<T>>),
    /// `len` attributes named `0`..`len-1`, sharing mode and callbacks; index = the number.
    Table { len: u32, attr: Attribute<T> },
}

impl<T> Members<T> {
    fn len(&self) -> usize {
        match self {
            Members::List(l) => l.len(),
            Members::Table { len, .. } => *len as usize,
        }
    }
}

/// Collects groups for [`AttributeGroups`].
pub struct Builder<T> {
    groups: KVec<(Option<&'static CStr>, Members<T>)>,
}

fn check_mode(mode: u16) -> Result {
    if mode & !VALID_MODE != 0 {
        return Err(EINVAL);
    }
    Ok(())
}

/// Writes `n` in decimal into `out`, NUL-terminated.
fn decimal_name(mut n: u32, out: &mut [u8; NAME_LEN]) {
    let mut digits = [0u8; NAME_LEN];
    let mut k = 0;
    loop {
        digits[k] = b'0' + (n % 10) as u8;
        k += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..k].iter().rev().enumerate() {
        out[i] = *d;
    }
    out[k] = 0;
}

impl<T> Builder<T> {
    /// Adds a group: in the object's directory when `name` is `None`, else in a subdirectory
    /// `name`. Each attribute's index is its position in `attrs`. `EINVAL` for a mode sysfs
    /// refuses.
    pub fn group(&mut self, name: Option<&'static CStr>, attrs: &[Attribute<T>]) -> Result {
        let mut list = KVec::with_capacity(attrs.len(), GFP_KERNEL)?;
        for a in attrs {
            check_mode(a.mode)?;
            list.push(*a, GFP_KERNEL)?;
        }
        self.groups.push((name, Members::List(list)), GFP_KERNEL)?;
        Ok(())
    }

    /// Adds a subdirectory `name` with files `0`..`len-1`, all with `mode` and the same
    /// callbacks, which get the file's number as index (C's `gids/N`). `len` may be zero (an
    /// empty directory).
    pub fn table(
        &mut self,
        name: &'static CStr,
        len: u32,
        mode: u16,
        show: Option<ShowFn<T>>,
        store: Option<StoreFn<T>>,
    ) -> Result {
        check_mode(mode)?;
        let attr = Attribute::new(c"", mode, show, store);
        self.groups
            .push((Some(name), Members::Table { len, attr }), GFP_KERNEL)?;
        Ok(())
    }

    /// Lays the groups out for sysfs.
    pub fn build(self) -> Result<AttributeGroups<T>> {
        let ngroups = self.groups.len();
        let nattrs = self
            .groups
            .iter()
            .try_fold(0usize, |n, (_, m)| n.checked_add(m.len()))
            .ok_or(ENOMEM)?;
        let mut attrs = KVVec::<RawAttr>::with_capacity(nattrs, GFP_KERNEL)?;
        let mut attr_lists = KVVec::with_capacity(nattrs + ngroups, GFP_KERNEL)?;
        let mut groups = KVec::with_capacity(ngroups, GFP_KERNEL)?;
        let mut list = KVec::with_capacity(ngroups + 1, GFP_KERNEL)?;

        let raw = |a: &Attribute<T>, index: u32| {
            let mut dattr = bindings::device_attribute::default();
            dattr.attr.name = a.name.as_char_ptr();
            dattr.attr.mode = a.mode;
            dattr.__bindgen_anon_1.show = Some(device_show);
            dattr.__bindgen_anon_2.store = Some(device_store);
            RawAttr {
                dattr,
                name: [0; NAME_LEN],
                index,
                show: a.show.map_or(ptr::null(), |f| f as *const ()),
                store: a.store.map_or(ptr::null(), |f| f as *const ()),
                call_show: call_show::<T>,
                call_store: call_store::<T>,
            }
        };
        for (_, members) in self.groups.iter() {
            match members {
                Members::List(l) => {
                    for (i, a) in l.iter().enumerate() {
                        attrs
                            .push_within_capacity(raw(a, i as u32))
                            .map_err(|_| ENOMEM)?;
                    }
                }
                Members::Table { len, attr } => {
                    for i in 0..*len {
                        let mut r = raw(attr, i);
                        decimal_name(i, &mut r.name);
                        attrs.push_within_capacity(r).map_err(|_| ENOMEM)?;
                    }
                }
            }
        }

        // The attribute buffer is complete: from here on its elements do not move.
        let base = attrs.as_mut_ptr();
        let mut next = 0usize;
        for (name, members) in self.groups.iter() {
            let start = attr_lists.len();
            let table = matches!(members, Members::Table { .. });
            for _ in 0..members.len() {
                // SAFETY: `next < nattrs == attrs.len()`: the groups' lengths add up to `nattrs`.
                let a = unsafe { base.add(next) };
                next += 1;
                // SAFETY: `a` points to an element of `attrs`, which nothing else references.
                unsafe {
                    if table {
                        (*a).dattr.attr.name = (*a).name.as_ptr().cast();
                    }
                    bindings::rdma_rs_sysfs_attr_init(&raw mut (*a).dattr.attr);
                }
                attr_lists
                    .push_within_capacity(
                        // SAFETY: As above.
                        unsafe { &raw mut (*a).dattr.attr },
                    )
                    .map_err(|_| ENOMEM)?;
            }
            attr_lists
                .push_within_capacity(ptr::null_mut())
                .map_err(|_| ENOMEM)?;
            let g = bindings::attribute_group {
                name: name.map_or(ptr::null(), |n| n.as_char_ptr()),
                __bindgen_anon_2: bindings::attribute_group__bindgen_ty_2 {
                    // SAFETY: `start` is within `attr_lists`, whose capacity was reserved up
                    // front, so its buffer does not move any more.
                    attrs: unsafe { attr_lists.as_mut_ptr().add(start) },
                },
                ..Default::default()
            };
            groups.push_within_capacity(g).map_err(|_| ENOMEM)?;
        }
        let gbase = groups.as_ptr();
        for i in 0..ngroups {
            // SAFETY: `i < groups.len()`.
            list.push_within_capacity(unsafe { gbase.add(i) })
                .map_err(|_| ENOMEM)?;
        }
        list.push_within_capacity(ptr::null()).map_err(|_| ENOMEM)?;
        // INVARIANT: the vectors are complete and are not changed again.
        Ok(AttributeGroups {
            raw: RawGroups {
                attrs,
                _attr_lists: attr_lists,
                groups,
                list,
            },
            _data: PhantomData,
        })
    }
}

#[macros::kunit_tests(rdma_rs_sysfs_attrs)]
mod tests {
    use super::*;
    use crate::sync::atomic::{Atomic, Relaxed};

    struct Data {
        value: u32,
        stored: Atomic<u32>,
    }

    fn show_value(d: &Data, index: u32, buf: &mut ShowBuffer<'_>) -> Result {
        buf.emit(fmt!("{} {}\n", d.value, index))
    }

    fn store_value(d: &Data, index: u32, data: &[u8]) -> Result {
        if data.first() == Some(&b'x') {
            return Err(EINVAL);
        }
        d.stored.store(index * 1000 + data.len() as u32, Relaxed);
        Ok(())
    }

    const ATTRS: [Attribute<Data>; 2] = [
        Attribute::ro(c"value", show_value),
        Attribute::new(c"wo", 0o200, None, Some(store_value)),
    ];

    fn name_of(a: *const bindings::attribute) -> &'static CStr {
        // SAFETY: The attribute is valid and its name a NUL-terminated string (test only).
        unsafe { CStr::from_char_ptr((*a).name) }
    }

    #[test]
    fn show_buffer_truncates_at_a_page() {
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL).unwrap_or_default();
        assert_eq!(page.len(), PAGE_SIZE);
        let mut b = ShowBuffer::new(&mut page);
        assert!(b.is_empty());
        assert!(b.emit(fmt!("{:#x}\n", 0x1234)).is_ok());
        assert_eq!(b.as_bytes(), b"0x1234\n");
        for _ in 0..PAGE_SIZE {
            b.write_bytes(b"ab");
        }
        assert_eq!(b.len(), PAGE_SIZE - 1);
    }

    #[test]
    fn generated_names() {
        let mut n = [0xffu8; NAME_LEN];
        decimal_name(0, &mut n);
        assert_eq!(&n[..2], b"0\0");
        decimal_name(4294967295, &mut n);
        assert_eq!(&n[..11], b"4294967295\0");
        decimal_name(127, &mut n);
        assert_eq!(&n[..4], b"127\0");
    }

    /// Attribute `i` of group `g` of a NULL-terminated group list (NULL past a group's end).
    fn attr_at(
        list: *mut *const bindings::attribute_group,
        g: usize,
        i: usize,
    ) -> *mut bindings::attribute {
        // SAFETY: The test passes indices within the groups it built (or the terminating NULL).
        unsafe { *(**list.add(g)).__bindgen_anon_2.attrs.add(i) }
    }

    /// The name of group `g`, if it has one.
    fn group_name(list: *mut *const bindings::attribute_group, g: usize) -> Option<&'static CStr> {
        // SAFETY: As in `attr_at`; group names are static strings.
        unsafe {
            let n = (**list.add(g)).name;
            (!n.is_null()).then(|| CStr::from_char_ptr(n))
        }
    }

    #[test]
    fn layout_and_dispatch() -> Result {
        let mut b = AttributeGroups::<Data>::builder();
        b.group(None, &ATTRS)?;
        b.table(c"tab", 3, 0o444, Some(show_value), None)?;
        b.table(c"none", 0, 0o444, Some(show_value), None)?;
        let g = b.build()?.into_raw();
        let list = g.as_list();
        // SAFETY: The list holds three groups, then NULL.
        assert!(unsafe { *list.add(3) }.is_null());
        assert_eq!(group_name(list, 0), None);
        assert_eq!(name_of(attr_at(list, 0, 0)), c"value");
        // SAFETY: The attribute is valid while `g` lives.
        assert_eq!(unsafe { (*attr_at(list, 0, 0)).mode }, 0o444);
        assert_eq!(name_of(attr_at(list, 0, 1)), c"wo");
        assert!(attr_at(list, 0, 2).is_null());
        assert_eq!(group_name(list, 1), Some(c"tab"));
        assert_eq!(name_of(attr_at(list, 1, 0)), c"0");
        assert_eq!(name_of(attr_at(list, 1, 2)), c"2");
        assert!(attr_at(list, 1, 3).is_null());
        assert_eq!(group_name(list, 2), Some(c"none"));
        assert!(attr_at(list, 2, 0).is_null());

        // Calls reach the callbacks with the owner and the index.
        let data = Data {
            value: 7,
            stored: Atomic::new(0),
        };
        let owner = (&raw const data).cast::<c_void>();
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let p = page.as_mut_ptr().cast::<c_char>();
        let input = b"hello\n";
        // SAFETY: The attribute belongs to `g`, built for `Data`; `owner` is a `Data`; `p` is a
        // page and the input is valid for the length given.
        let n = unsafe { show(attr_at(list, 1, 2), owner, p) };
        assert_eq!(n, 4);
        assert_eq!(&page[..4], b"7 2\n");
        let p = page.as_mut_ptr().cast::<c_char>();
        // SAFETY: The attribute belongs to `g`, built for `Data`; `owner` is a `Data`; `p` is a
        // page and the input is valid for the length given.
        let n = unsafe { show(attr_at(list, 0, 0), owner, p) };
        assert_eq!(n, 4);
        assert_eq!(&page[..4], b"7 0\n");
        let p = page.as_mut_ptr().cast::<c_char>();
        // No show: EIO, as C's port attributes.
        // SAFETY: The attribute belongs to `g`, built for `Data`; `owner` is a `Data`; `p` is a
        // page and the input is valid for the length given.
        let n = unsafe { show(attr_at(list, 0, 1), owner, p) };
        assert_eq!(n, -(bindings::EIO as isize));
        // SAFETY: The attribute belongs to `g`, built for `Data`; `owner` is a `Data`; `p` is a
        // page and the input is valid for the length given.
        let n = unsafe { store(attr_at(list, 0, 1), owner, input.as_ptr().cast(), 6) };
        assert_eq!(n, 6);
        assert_eq!(data.stored.load(Relaxed), 1006);
        // SAFETY: The attribute belongs to `g`, built for `Data`; `owner` is a `Data`; `p` is a
        // page and the input is valid for the length given.
        let n = unsafe { store(attr_at(list, 0, 1), owner, b"x".as_ptr().cast(), 1) };
        assert_eq!(n, -(bindings::EINVAL as isize));
        // SAFETY: The attribute belongs to `g`, built for `Data`; `owner` is a `Data`; `p` is a
        // page and the input is valid for the length given.
        let n = unsafe { store(attr_at(list, 0, 0), owner, input.as_ptr().cast(), 6) };
        assert_eq!(n, -(bindings::EIO as isize));
        Ok(())
    }

    #[test]
    fn bad_modes_are_refused() {
        let mut b = AttributeGroups::<Data>::builder();
        assert_eq!(
            b.group(None, &[Attribute::new(c"x", 0o777, Some(show_value), None)]),
            Err(EINVAL)
        );
        assert_eq!(b.table(c"t", 1, 0o4444, None, None), Err(EINVAL));
        let g = b.build();
        assert!(g.is_ok());
        if let Ok(g) = g {
            assert_eq!(g.group_count(), 0);
            assert_eq!(g.attribute_count(), 0);
        }
    }
}
