// SPDX-License-Identifier: GPL-2.0

//! User contexts (C's `ib_ucontext`): what a process gets from the driver once per open uverbs
//! file, and every user verbs object of that file is made in. ib_uverbs holds them; the
//! driver's state of one is freed when it is dropped.

use crate::{
    ib_device::IbDevice,
    ops::{PdObject, UContextObject},
    restrack::ResType,
    udata::Udata,
};
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

    /// A protection domain of this context (C's `ib_uverbs_alloc_pd` and the driver's
    /// `alloc_pd` with `udata`).
    pub fn alloc_pd(&self, udata: &Udata) -> Result<UserPd> {
        let drv = self.dev.ops().alloc_user_pd(udata)?;
        self.dev.restrack().add(ResType::Pd);
        Ok(UserPd {
            _driver: drv,
            dev: self.dev.clone(),
        })
    }
}

/// A protection domain made for user space; the driver frees it when it is dropped.
pub struct UserPd {
    /// Dropped first (field order): the driver frees its state while the device is held.
    _driver: KBox<dyn PdObject>,
    dev: Arc<IbDevice>,
}

impl Drop for UserPd {
    fn drop(&mut self) {
        self.dev.restrack().remove(ResType::Pd);
    }
}

impl Drop for UContext {
    fn drop(&mut self) {
        self.dev.restrack().remove(ResType::Ctx);
    }
}
