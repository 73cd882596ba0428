// SPDX-License-Identifier: GPL-2.0

//! Character devices: ranges of device numbers ([`Region`]) and the file operations of a
//! character device written in Rust ([`FileOperations`], [`file_operations`]).
//!
//! A driver reserves numbers with [`Region::register`] (a fixed major and minors, as
//! `register_chrdev_region`) or [`Region::alloc`] (a major chosen by the kernel, as
//! `alloc_chrdev_region`), then adds one device per number with
//! [`crate::class_device::ClassDevice::new_chardev`], which ties a `struct cdev` to the class
//! device (`cdev_device_add`) so that `/dev/<name>` opens reach [`FileOperations::open`] with
//! the class device's data.
//!
//! # Lifetimes
//!
//! The `struct file_operations` is a `static` of the module that implements
//! [`FileOperations`]; its `owner` is that module, so the VFS holds the module while a file is
//! open, and every callback below runs with the module's text present. An open can still come
//! after the device was removed (the VFS found the cdev before `cdev_device_del`): it fails with
//! `ENXIO` before [`FileOperations::open`] is called (the class device's open gate); one that
//! got its clone of the device's data just before may run while the device goes.
//!
//! C headers: [`include/linux/cdev.h`](srctree/include/linux/cdev.h),
//! [`include/linux/fs.h`](srctree/include/linux/fs.h)

use crate::{
    bindings,
    error::{to_result, VTABLE_DEFAULT_ERROR},
    file_private,
    fs::File,
    ida::Ida,
    mm::virt::VmaNew,
    module::this_module,
    new_mutex,
    prelude::*,
    sync::{poll::PollTable, Arc, Mutex},
    types::ForeignOwnable,
    uaccess::{UserPtr, UserSliceWriter},
};
use core::marker::PhantomData;

/// Bits of a device number that hold the minor (C's `MINORBITS`).
const MINOR_BITS: u32 = 20;

/// A device number (`dev_t`): a major and a minor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DevT(u32);

impl DevT {
    /// The number of `major`:`minor` (C's `MKDEV`), `None` when either is out of range.
    pub fn new(major: u32, minor: u32) -> Option<Self> {
        if major >= 1 << (32 - MINOR_BITS) || minor >= 1 << MINOR_BITS {
            return None;
        }
        Some(Self((major << MINOR_BITS) | minor))
    }

    /// The number as the kernel stores it.
    pub fn as_raw(self) -> u32 {
        self.0
    }

    /// Wraps a raw `dev_t`.
    pub fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The major number.
    pub fn major(self) -> u32 {
        self.0 >> MINOR_BITS
    }

    /// The minor number.
    pub fn minor(self) -> u32 {
        self.0 & ((1 << MINOR_BITS) - 1)
    }

    /// The 64-bit encoding user space decodes (C's `huge_encode_dev`, as netlink carries it).
    pub fn huge_encoded(self) -> u64 {
        let (major, minor) = (u64::from(self.major()), u64::from(self.minor()));
        (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
    }
}

/// A range of character device numbers reserved for one driver, released when dropped.
///
/// # Invariants
///
/// `first`..`first + count` was reserved by `register_chrdev_region` or `alloc_chrdev_region`
/// and is released only by `drop`.
pub struct Region {
    first: DevT,
    count: u32,
}

impl Region {
    /// Reserves `count` minors of `major` from `first_minor` (C's `register_chrdev_region`):
    /// `EBUSY` when another driver holds one of them.
    pub fn register(major: u32, first_minor: u32, count: u32, name: &'static CStr) -> Result<Self> {
        let first = DevT::new(major, first_minor).ok_or(EINVAL)?;
        if count == 0 || u64::from(first_minor) + u64::from(count) > 1 << MINOR_BITS {
            return Err(EINVAL);
        }
        // SAFETY: `name` is a NUL-terminated string that outlives the reservation ('static).
        to_result(unsafe {
            bindings::register_chrdev_region(first.as_raw(), count, name.as_char_ptr())
        })?;
        // INVARIANT: the range is reserved.
        Ok(Self { first, count })
    }

    /// Reserves `count` minors from 0 of a major the kernel picks (C's `alloc_chrdev_region`).
    pub fn alloc(count: u32, name: &'static CStr) -> Result<Self> {
        if count == 0 || count > 1 << MINOR_BITS {
            return Err(EINVAL);
        }
        let mut first: bindings::dev_t = 0;
        // SAFETY: `first` is valid for writes; `name` outlives the reservation ('static).
        to_result(unsafe {
            bindings::alloc_chrdev_region(&mut first, 0, count, name.as_char_ptr())
        })?;
        // INVARIANT: the range is reserved.
        Ok(Self {
            first: DevT::from_raw(first),
            count,
        })
    }

    /// The `index`-th number of the range.
    pub fn devt(&self, index: u32) -> Option<DevT> {
        if index >= self.count {
            return None;
        }
        Some(DevT::from_raw(self.first.as_raw() + index))
    }

    /// How many numbers the range holds.
    pub fn count(&self) -> u32 {
        self.count
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: The range is reserved (type invariant) and released only here.
        unsafe { bindings::unregister_chrdev_region(self.first.as_raw(), self.count) };
    }
}

/// The device numbers of a driver whose devices have `per` character devices each (C's scheme
/// of uverbs and umad): the first `fixed` devices get numbers of the historical `major` from
/// `base_minor` on, the others, up to `max` devices, numbers of a major the kernel picks. In each
/// range the `k`-th character device of the range's `i`-th device is its `k * devices + i`-th
/// number (umad: every `umadN`, then every `issmN`). A device takes the lowest free index
/// ([`Numbers::take`], C's `ida_alloc_max`).
pub struct Numbers {
    fixed: Region,
    dynamic: Region,
    fixed_devices: u32,
    dynamic_devices: u32,
    taken: Arc<Mutex<Ida>>,
}

/// A device's index in its driver's [`Numbers`], taken until dropped.
pub struct Number {
    index: u32,
    taken: Arc<Mutex<Ida>>,
}

impl Numbers {
    /// Reserves both ranges, the fixed one first (as C's `ib_uverbs_init` and `ib_umad_init`);
    /// `EINVAL` for `fixed` above `max` or ranges that do not fit.
    pub fn reserve(
        name: &'static CStr,
        major: u32,
        base_minor: u32,
        fixed: u32,
        max: u32,
        per: u32,
    ) -> Result<Self> {
        let dynamic_devices = max.checked_sub(fixed).ok_or(EINVAL)?;
        let fixed_range = Region::register(
            major,
            base_minor,
            fixed.checked_mul(per).ok_or(EINVAL)?,
            name,
        )?;
        let dynamic = Region::alloc(dynamic_devices.checked_mul(per).ok_or(EINVAL)?, name)?;
        let taken = Arc::pin_init(
            new_mutex!(Ida::new(max as usize), "kernel::chrdev::Numbers::taken"),
            GFP_KERNEL,
        )?;
        Ok(Self {
            fixed: fixed_range,
            dynamic,
            fixed_devices: fixed,
            dynamic_devices,
            taken,
        })
    }

    /// Takes the lowest free index: `ENOSPC` when every one is taken.
    pub fn take(&self) -> Result<Number> {
        let index = self.taken.lock().alloc(GFP_KERNEL)?;
        Ok(Number {
            // `Ida` hands out numbers below `max`, a `u32`.
            index: index as u32,
            taken: self.taken.clone(),
        })
    }

    /// The number of the `k`-th character device of the device with index `index`.
    pub fn devt(&self, index: u32, k: u32) -> Option<DevT> {
        if index < self.fixed_devices {
            self.fixed
                .devt(k.checked_mul(self.fixed_devices)?.checked_add(index)?)
        } else {
            let i = index - self.fixed_devices;
            self.dynamic
                .devt(k.checked_mul(self.dynamic_devices)?.checked_add(i)?)
        }
    }
}

impl Number {
    /// The index.
    pub fn get(&self) -> u32 {
        self.index
    }
}

impl Drop for Number {
    fn drop(&mut self) {
        self.taken.lock().free(self.index as usize);
    }
}

/// What a character device's files do, implemented by the driver.
///
/// Files are stream files (`stream_open`): no `llseek`, `pread` and `pwrite` fail with `ESPIPE`.
#[vtable]
pub trait FileOperations: Sized {
    /// What each open file holds (its `private_data`).
    type Ptr: ForeignOwnable + Send + Sync;

    /// The data of the class device the files open on: a counted reference (e.g. an `Arc`),
    /// which `open` gets a clone of.
    type Device: Clone + Send + Sync;

    /// Opens a file of the device whose data is `dev` (cloned while the device existed; it may
    /// be removed meanwhile). Runs in process context and may sleep.
    fn open(dev: &Self::Device, file: &File) -> Result<Self::Ptr>;

    /// The last reference to the file went away.
    fn release(data: Self::Ptr, _file: &File) {
        drop(data);
    }

    /// `read(2)` of at most `len` bytes into `buf`; returns how many were written. A read that
    /// must wait checks [`File::flags`] for `O_NONBLOCK` itself.
    fn read(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _buf: UserSliceWriter,
        _len: usize,
    ) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `poll(2)`, `select(2)`, `epoll`: registers what the caller should wait on in `table`
    /// ([`PollTable::register_wait`]) and returns the events ready now (`EPOLL*` bits).
    /// Without it, a file always reads as ready.
    fn poll(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _table: PollTable<'_>,
    ) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `write(2)` of the `len` bytes at user address `buf` (read them with
    /// [`crate::uaccess::UserSlice`]); returns how many were consumed.
    fn write(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _buf: UserPtr,
        _len: usize,
    ) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ioctl(2)`: the `cmd` and its argument (for most commands a user pointer).
    fn ioctl(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `mmap(2)`: sets up `vma` (called while the VMA is created).
    fn mmap(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _vma: &VmaNew,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The `struct file_operations` of `T`, for [`crate::class_device::ClassDevice::new_chardev`].
pub(crate) fn file_operations<T: FileOperations>() -> &'static bindings::file_operations {
    &Vtable::<T>::VTABLE
}

struct Vtable<T: FileOperations>(PhantomData<T>);

impl<T: FileOperations> Vtable<T> {
    /// # Safety
    ///
    /// Called by the VFS for an inode of a character device whose cdev has these operations,
    /// and a file being opened. Only [`crate::class_device::ClassDevice::new_chardev`] gives
    /// cdevs these operations, with data of type `T::Device`.
    unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `inode` and `file` are valid for the open (contract).
        let ret = unsafe { bindings::stream_open(inode, file) };
        if ret != 0 {
            return ret;
        }
        // SAFETY: The file is valid for the duration of the call, with no fdget_pos region.
        let f = unsafe { File::from_raw_file(file) };
        // SAFETY: This is the open of a file of a class device made by `new_chardev` with `T`
        // (contract), whose data is a `T::Device`.
        let dev = unsafe { crate::class_device::chardev_data::<T::Device>(inode) };
        match dev.and_then(|dev| T::open(&dev, f)) {
            Ok(ptr) => {
                // SAFETY: Open owns the file's private data; the other callbacks read it back
                // as `T::Ptr`, and `release` takes it back.
                unsafe { (*file).private_data = ptr.into_foreign().cast() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the VFS, once, for a file opened by `open`.
    unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `open` stored a `T::Ptr` in the private data; this last call takes it.
        unsafe { file_private::release::<T::Ptr>(file, T::release) }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file opened by `open`; `buf` is a user pointer of `count` bytes.
    unsafe extern "C" fn read(
        file: *mut bindings::file,
        buf: *mut c_char,
        count: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: Between `open` and `release` the private data is a `T::Ptr`; `buf` and `count`
        // are the VFS's.
        unsafe { file_private::read::<T::Ptr>(file, buf, count, T::read) }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file opened by `open`; `wait` is null or a valid poll table.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        wait: *mut bindings::poll_table,
    ) -> bindings::__poll_t {
        // SAFETY: As in `read`; `wait` is null or valid for the call (the VFS's promise).
        unsafe { file_private::poll::<T::Ptr>(file, wait, T::poll) }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file opened by `open`; `buf` is a user pointer of `count` bytes.
    unsafe extern "C" fn write(
        file: *mut bindings::file,
        buf: *const c_char,
        count: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: Between `open` and `release` the private data is a `T::Ptr`.
        let (data, f) = unsafe { file_private::borrow::<T::Ptr>(file) };
        match T::write(data, f, UserPtr::from_ptr(buf.cast_mut().cast()), count) {
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file opened by `open`.
    unsafe extern "C" fn ioctl(file: *mut bindings::file, cmd: c_uint, arg: c_ulong) -> c_long {
        // SAFETY: As in `write`.
        let (data, f) = unsafe { file_private::borrow::<T::Ptr>(file) };
        match T::ioctl(data, f, cmd, arg as usize) {
            Ok(n) => n as c_long,
            Err(e) => e.to_errno() as c_long,
        }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file opened by `open` and a VMA being set up.
    unsafe extern "C" fn mmap(
        file: *mut bindings::file,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        // SAFETY: As in `write`.
        let (data, f) = unsafe { file_private::borrow::<T::Ptr>(file) };
        // SAFETY: The VMA is undergoing its initial set-up (contract).
        let area = unsafe { VmaNew::from_raw(vma) };
        match T::mmap(data, f, area) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    const VTABLE: bindings::file_operations = bindings::file_operations {
        owner: this_module::<T::OwnerModule>().as_ptr(),
        open: Some(Self::open),
        release: Some(Self::release),
        read: if T::HAS_READ { Some(Self::read) } else { None },
        poll: if T::HAS_POLL { Some(Self::poll) } else { None },
        write: if T::HAS_WRITE {
            Some(Self::write)
        } else {
            None
        },
        unlocked_ioctl: if T::HAS_IOCTL {
            Some(Self::ioctl)
        } else {
            None
        },
        #[cfg(CONFIG_COMPAT)]
        compat_ioctl: if T::HAS_IOCTL {
            bindings::compat_ptr_ioctl
        } else {
            None
        },
        mmap: if T::HAS_MMAP { Some(Self::mmap) } else { None },
        ..pin_init::zeroed()
    };
}

#[macros::kunit_tests(rdma_rs_chrdev)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers() {
        let d = DevT::new(231, 192);
        assert!(d.is_some());
        let Some(d) = d else { return };
        assert_eq!((d.major(), d.minor()), (231, 192));
        // What netlink carries for 231:192 (rdma-core decodes it back).
        assert_eq!(d.huge_encoded(), 0xe7c0);
        let big = DevT::new(240, 0x12345);
        assert!(big.is_some());
        let Some(big) = big else { return };
        assert_eq!(big.huge_encoded(), 0x45 | (240 << 8) | (0x12300 << 12));
        assert!(DevT::new(4096, 0).is_none());
        assert!(DevT::new(1, 1 << 20).is_none());
    }

    #[test]
    fn regions_are_exclusive_and_released() -> Result {
        let dynamic = Region::alloc(4, c"rdma_rs_kunit")?;
        assert_eq!(dynamic.count(), 4);
        let first = dynamic.devt(0).ok_or(EINVAL)?;
        assert!(dynamic.devt(4).is_none());
        // The same numbers cannot be reserved twice.
        assert_eq!(
            Region::register(first.major(), first.minor(), 1, c"rdma_rs_kunit2").err(),
            Some(EBUSY)
        );
        drop(dynamic);
        // Released: free to take again.
        let again = Region::register(first.major(), first.minor(), 4, c"rdma_rs_kunit2")?;
        assert_eq!(again.devt(3).map(|d| d.minor()), Some(first.minor() + 3));
        assert_eq!(
            Region::register(1, 0, 0, c"rdma_rs_kunit3").err(),
            Some(EINVAL)
        );
        Ok(())
    }
}
