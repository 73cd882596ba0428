// SPDX-License-Identifier: GPL-2.0

//! Log messages about an object that sits below a device and has a name of its own, worded as
//! C's `ibdev_printk` words them for an RDMA device with a parent: the parent's driver, the
//! parent's name, then the object's name (`mlx5_core 0000:01:00.0 mlx5_0: Port: 1 Link DOWN`).
//!
//! [`Device::pr_info`] and friends print `<driver> <name>: ` for the device itself; this adds
//! the name of what sits below it, without the colon the `dev_*` prefix would put between them.
//! The message keeps the parent's device information (dev_printk_emit), as C's does.
//!
//! C header: [`include/linux/dev_printk.h`](srctree/include/linux/dev_printk.h)

use crate::{bindings, device::Device, ffi::c_void, prelude::*};
use core::fmt;

/// A message's log level (`LOGLEVEL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Level {
    /// `KERN_ERR`.
    Err = 3,
    /// `KERN_WARNING`.
    Warning = 4,
    /// `KERN_NOTICE`.
    Notice = 5,
    /// `KERN_INFO`.
    Info = 6,
}

/// Prints `args` at `level`, prefixed `<parent's driver> <parent's name> <name>: `.
pub fn print_below(parent: &Device, level: Level, name: &CStr, args: fmt::Arguments<'_>) {
    let dev = parent.as_raw();
    // SAFETY: `dev` is a live device (`&Device` holds a reference for the call), so its driver
    // string and name are NUL-terminated strings valid for the call; `name` is a `CStr`; the
    // format's three `%s` take those three pointers, and `%pA` takes a pointer to a
    // `fmt::Arguments`, which `args` is and which outlives the call.
    unsafe {
        bindings::dev_printk_emit(
            level as i32,
            dev,
            c"%s %s %s: %pA".as_char_ptr(),
            bindings::dev_driver_string(dev),
            parent.name().as_char_ptr(),
            name.as_char_ptr(),
            core::ptr::from_ref(&args).cast::<c_void>(),
        );
    }
}
