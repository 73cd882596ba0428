// SPDX-License-Identifier: GPL-2.0

//! The C `struct device` behind a [`Device`], for C structures a module fills that point to a
//! device (a C-ABI object's parent or DMA device). Reading or storing the pointer is safe; what
//! the C side does with it is under that side's contract (it must not outlive the device).

use crate::{bindings, device::Device};

/// The `struct device` `dev` wraps.
pub fn raw_device(dev: &Device) -> *mut bindings::device {
    dev.as_raw()
}
