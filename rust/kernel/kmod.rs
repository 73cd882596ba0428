// SPDX-License-Identifier: GPL-2.0

//! Loading a module by name or alias from the kernel (`request_module`).
//!
//! C header: [`include/linux/kmod.h`](srctree/include/linux/kmod.h)

use crate::{bindings, prelude::*};

/// Asks user space (`modprobe`) to load the module called, or aliased, `name` and waits until
/// it has run (C's `request_module`). Process context; it may sleep for long. The result says
/// only whether modprobe could be run and succeeded: callers look again for what the module
/// provides.
pub fn request_module(name: &CStr) -> Result {
    // SAFETY: The format takes one string argument, `name`, which is NUL-terminated and lives
    // for the call.
    let ret = unsafe { bindings::__request_module(true, c"%s".as_char_ptr(), name.as_char_ptr()) };
    match ret {
        0 => Ok(()),
        // A negative errno, or modprobe's positive exit status.
        e if e < 0 => Err(Error::from_errno(e)),
        _ => Err(ENOENT),
    }
}
