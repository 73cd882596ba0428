// SPDX-License-Identifier: GPL-2.0

//! The `struct file_operations` callbacks of files whose private data is a [`ForeignOwnable`]
//! the driver's object owns from open to release (the character devices of
//! [`crate::chrdev`], the files of [`crate::anon_file`]): the conversions from the VFS's raw
//! pointers, written once.

use crate::{
    bindings,
    fs::File,
    prelude::*,
    sync::poll::PollTable,
    types::ForeignOwnable,
    uaccess::{UserPtr, UserSlice, UserSliceWriter},
};

/// The file's private data, borrowed, and the file, for a callback.
///
/// # Safety
///
/// `file` is valid for the duration of the borrow, with no `fdget_pos` region, and its private
/// data is a `P` made by [`ForeignOwnable::into_foreign`] that `release` has not taken back.
pub(crate) unsafe fn borrow<'a, P: ForeignOwnable>(
    file: *mut bindings::file,
) -> (P::Borrowed<'a>, &'a File) {
    // SAFETY: The private data is a live `P` (the caller's promise), which callbacks may borrow.
    let data = unsafe { P::borrow((*file).private_data.cast()) };
    // SAFETY: The file is valid, with no fdget_pos region (the caller's promise).
    let f = unsafe { File::from_raw_file(file) };
    (data, f)
}

/// `release`: the private data taken back and given to `op` with the file.
///
/// # Safety
///
/// As [`borrow`], called once, when the file's last reference goes.
pub(crate) unsafe fn release<P: ForeignOwnable>(
    file: *mut bindings::file,
    op: impl FnOnce(P, &File),
) -> c_int {
    // SAFETY: The private data is a `P` that nothing takes back but this call (the caller's
    // promise).
    let ptr = unsafe { P::from_foreign((*file).private_data.cast()) };
    // SAFETY: The file is valid for the duration of the call, with no fdget_pos region.
    op(ptr, unsafe { File::from_raw_file(file) });
    0
}

/// `read`: `op` writes at most `count` bytes at user address `buf`; the count or the errno.
///
/// # Safety
///
/// As [`borrow`]; `buf` is the user pointer the VFS gave with `count`.
pub(crate) unsafe fn read<P: ForeignOwnable>(
    file: *mut bindings::file,
    buf: *mut c_char,
    count: usize,
    op: impl FnOnce(P::Borrowed<'_>, &File, UserSliceWriter, usize) -> Result<usize>,
) -> isize {
    // SAFETY: The caller's promise.
    let (data, f) = unsafe { borrow::<P>(file) };
    let writer = UserSlice::new(UserPtr::from_ptr(buf.cast()), count).writer();
    match op(data, f, writer, count) {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// `poll`: `op` registers its waits in the table and returns the ready events.
///
/// # Safety
///
/// As [`borrow`]; `wait` is null or a poll table valid for the duration of the call.
pub(crate) unsafe fn poll<P: ForeignOwnable>(
    file: *mut bindings::file,
    wait: *mut bindings::poll_table,
    op: impl FnOnce(P::Borrowed<'_>, &File, PollTable<'_>) -> u32,
) -> bindings::__poll_t {
    // SAFETY: The caller's promise.
    let (data, f) = unsafe { borrow::<P>(file) };
    // SAFETY: `wait` is null or valid for the duration of the call (the caller's promise).
    let table = unsafe { PollTable::from_raw(wait) };
    op(data, f, table)
}
