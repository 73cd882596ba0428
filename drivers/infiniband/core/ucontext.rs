// SPDX-License-Identifier: GPL-2.0

//! User contexts (C's `ib_ucontext`): what a process gets from the driver once per open uverbs
//! file, and every user verbs object of that file is made in. ib_uverbs holds them; the
//! driver's state of one is freed when it is dropped.

use crate::{ib_device::IbDevice, ops::UContextObject, restrack::ResType, udata::Udata};
use kernel::{prelude::*, sync::Arc};

/// A user context of a device.
pub struct UContext {
    /// Dropped first (field order): the driver frees its state while the device is still held.
    _driver: KBox<dyn UContextObject>,
    dev: Arc<IbDevice>,
}

impl UContext {
    /// A new user context of `dev`, with the driver's request and response in `udata` (C's
    /// `ib_alloc_ucontext` and `ops.alloc_ucontext`); `EOPNOTSUPP` for a driver without them.
    pub fn alloc(dev: &Arc<IbDevice>, udata: &Udata) -> Result<Self> {
        let obj = dev.ops().alloc_ucontext(udata)?;
        dev.restrack().add(ResType::Ctx);
        Ok(Self {
            _driver: obj,
            dev: dev.clone(),
        })
    }

    /// The device.
    pub fn device(&self) -> &Arc<IbDevice> {
        &self.dev
    }
}

impl Drop for UContext {
    fn drop(&mut self) {
        self.dev.restrack().remove(ResType::Ctx);
    }
}
