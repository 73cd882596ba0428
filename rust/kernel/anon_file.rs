// SPDX-License-Identifier: GPL-2.0

//! Files with no inode of their own (`anon_inode_getfile`): what a driver hands to a process
//! as a new file descriptor, such as an event queue it reads.
//!
//! A driver implements [`AnonFileOps`] and makes a file with [`new_file`]; it usually installs
//! it in the caller's file table with [`crate::fs::file::FileDescriptorReservation`].
//!
//! # Lifetimes
//!
//! The `struct file_operations` is a `static` of the implementing module, whose `owner` is that
//! module: the VFS holds the module while such a file exists, so every callback runs with the
//! module's text present. The file owns its data (`T::Ptr`) from [`new_file`] until
//! [`AnonFileOps::release`].
//!
//! C header: [`include/linux/anon_inodes.h`](srctree/include/linux/anon_inodes.h)

use crate::{
    bindings,
    error::{from_err_ptr, VTABLE_DEFAULT_ERROR},
    file_private,
    fs::File,
    module::this_module,
    prelude::*,
    sync::{aref::ARef, poll::PollTable},
    types::ForeignOwnable,
    uaccess::UserSliceWriter,
};
use core::{marker::PhantomData, ptr::NonNull};

/// What an anonymous file does, implemented by the driver.
#[vtable]
pub trait AnonFileOps: Sized {
    /// What the file holds (its `private_data`).
    type Ptr: ForeignOwnable + Send + Sync;

    /// The last reference to the file went away.
    fn release(data: Self::Ptr, _file: &File) {
        drop(data);
    }

    /// `read(2)` of at most `len` bytes into `buf`; returns how many were written.
    fn read(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _buf: UserSliceWriter,
        _len: usize,
    ) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `poll(2)`, `select(2)`, `epoll`: registers what the caller should wait on in `table`
    /// ([`PollTable::register_wait`]) and returns the events ready now ([`POLLIN`],
    /// [`POLLRDNORM`], [`POLLERR`], ...). Without it, a file always reads as ready.
    fn poll(
        _data: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _table: PollTable<'_>,
    ) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// `EPOLLIN`: there is data to read.
pub const POLLIN: u32 = bindings::POLLIN;
/// `EPOLLRDNORM`: there is normal data to read.
pub const POLLRDNORM: u32 = bindings::POLLRDNORM;
/// `EPOLLERR`: the file is in an error state (a read would fail).
pub const POLLERR: u32 = bindings::POLLERR;
/// `EPOLLOUT`: writing would not block.
pub const POLLOUT: u32 = bindings::POLLOUT;
/// `EPOLLWRNORM`: normal data may be written.
pub const POLLWRNORM: u32 = bindings::POLLWRNORM;

/// A new anonymous file named `name` (shown as `anon_inode:<name>` in `/proc/<pid>/fd`), with
/// `flags` (`O_RDONLY`, `O_RDWR`, ...), owning `data`. The file has no `llseek`.
pub fn new_file<T: AnonFileOps>(
    name: &'static CStr,
    data: T::Ptr,
    flags: u32,
) -> Result<ARef<File>> {
    let ptr = data.into_foreign();
    // SAFETY: `name` is NUL-terminated and static; the operations are a static of this module
    // type; `ptr` becomes the file's private data, which `release` takes back.
    let file = unsafe {
        bindings::anon_inode_getfile(
            name.as_char_ptr(),
            &Vtable::<T>::VTABLE,
            ptr.cast(),
            flags as c_int,
        )
    };
    match from_err_ptr(file) {
        Ok(file) => {
            // SAFETY: `anon_inode_getfile` returned a file with one reference, which is ours.
            Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(file.cast::<File>())) })
        }
        Err(e) => {
            // SAFETY: No file took `ptr`: it is still ours to take back.
            drop(unsafe { <T::Ptr as ForeignOwnable>::from_foreign(ptr) });
            Err(e)
        }
    }
}

/// Whether `file` is a file made by [`new_file`] for `T` whose private data is `data` (C
/// compares `f->f_op` with its operations and `f->private_data` with an object it knows): a
/// file of another kind, or of another object, is not. Only addresses are compared.
///
/// The kind is recognised by the `release` operation the file has: `Vtable<T>::release` is one
/// function of the crate that instantiates it (not an inlined constant, whose address Rust
/// does not promise to be unique).
pub fn holds<T: AnonFileOps>(file: &crate::fs::LocalFile, data: &T::Ptr) -> bool
where
    T::Ptr: Clone,
{
    let ours: unsafe extern "C" fn(*mut bindings::inode, *mut bindings::file) -> c_int =
        Vtable::<T>::release;
    // SAFETY: `file` is a valid file (the reference says so): its operations table is valid
    // while it is open; only a pointer field of each is read.
    let release = unsafe {
        let ops = (*file.as_ptr()).f_op;
        if ops.is_null() {
            return false;
        }
        (*ops).release
    };
    if release.map(|f| f as usize) != Some(ours as usize) {
        return false;
    }
    let ptr = data.clone().into_foreign();
    // SAFETY: As above; only the private data pointer is read.
    let same = unsafe { (*file.as_ptr()).private_data } == ptr.cast();
    // SAFETY: `ptr` came from `into_foreign` just above and is given back once.
    drop(unsafe { T::Ptr::from_foreign(ptr) });
    same
}

struct Vtable<T: AnonFileOps>(PhantomData<T>);

impl<T: AnonFileOps> Vtable<T> {
    /// # Safety
    ///
    /// Called by the VFS, once, for a file made by `new_file`.
    unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `new_file` stored a `T::Ptr` in the private data; this last call takes it.
        unsafe { file_private::release::<T::Ptr>(file, T::release) }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file made by `new_file`; `buf` is a user pointer of `count` bytes.
    unsafe extern "C" fn read(
        file: *mut bindings::file,
        buf: *mut c_char,
        count: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: Between `new_file` and `release` the private data is a `T::Ptr`; `buf` and
        // `count` are the VFS's.
        unsafe { file_private::read::<T::Ptr>(file, buf, count, T::read) }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file made by `new_file`; `wait` is null or a valid poll table
    /// for the duration of the call.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        wait: *mut bindings::poll_table,
    ) -> bindings::__poll_t {
        // SAFETY: As in `read`; `wait` is null or valid for the call (the VFS's promise).
        unsafe { file_private::poll::<T::Ptr>(file, wait, T::poll) }
    }

    const VTABLE: bindings::file_operations = bindings::file_operations {
        owner: this_module::<T::OwnerModule>().as_ptr(),
        release: Some(Self::release),
        read: if T::HAS_READ { Some(Self::read) } else { None },
        poll: if T::HAS_POLL { Some(Self::poll) } else { None },
        ..pin_init::zeroed()
    };
}
