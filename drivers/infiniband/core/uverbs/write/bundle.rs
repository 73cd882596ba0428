// SPDX-License-Identifier: GPL-2.0

//! What a command handler gets (C's `uverbs_attr_bundle` as the write() commands use it): the
//! file, the core request and response (`ucore`) and the driver's (`driver`). write() and the
//! ioctl `INVOKE_WRITE` both build one and run the same handlers.

use crate::file::ufile::Ufile;
use core::cell::Cell;
use ib_core::user::udata::Udata;
use kernel::{
    prelude::*,
    sync::Arc,
    transmute::{AsBytes, FromBytes},
};

/// A command's buffers and file.
pub(crate) struct Bundle<'a> {
    /// The file the command came on.
    pub(crate) ufile: &'a Arc<Ufile>,
    /// The core request and response.
    pub(crate) ucore: Udata,
    /// The driver's request and response.
    pub(crate) driver: Udata,
    /// Whether the handler answered (`INVOKE_WRITE` then flags its core output as written).
    pub(crate) responded: Cell<bool>,
}

impl Bundle<'_> {
    /// The core request as a `T` of the user ABI (C's `uverbs_request` into `sizeof(T)`
    /// bytes): a shorter one reads as zero-filled, a longer one must be zero past `T`
    /// (`EOPNOTSUPP`).
    pub(crate) fn request_as<T: FromBytes + AsBytes>(&self) -> Result<T> {
        self.ucore.read_in_as(0)
    }

    /// Answers with `resp`, a response of the user ABI ([`Bundle::respond`]).
    pub(crate) fn respond_as<T: AsBytes>(&self, resp: &T) -> Result {
        self.respond(resp.as_bytes())
    }

    /// Answers with `resp` (C's `uverbs_response`): as much as the buffer holds, zeroes after.
    pub(crate) fn respond(&self, resp: &[u8]) -> Result {
        self.ucore.respond(resp)?;
        self.responded.set(true);
        Ok(())
    }

    /// `min(outlen, len)`: how much of a response of `len` bytes user space gets (C's
    /// `uverbs_response_length`, the `response_length` of extended responses).
    pub(crate) fn response_length(&self, len: usize) -> u32 {
        self.ucore.outlen().min(len) as u32
    }
}

/// A command handler.
pub(crate) type Handler = fn(&mut Bundle<'_>) -> Result;
