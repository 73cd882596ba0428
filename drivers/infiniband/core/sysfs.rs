// SPDX-License-Identifier: GPL-2.0

//! The device's presence under `/sys/class/infiniband/<name>/`.
//!
//! Placeholder with the interface the device code calls; the class device, its attributes and the
//! `ports/` tree are being written (issue 4). Until then a registered device has no sysfs entry.

use crate::{device::IbDevice, names::Name};
use kernel::{prelude::*, sync::Arc};

/// What sysfs holds for one registered device; dropping it removes the files.
pub(crate) struct DeviceSysfs;

impl DeviceSysfs {
    /// Creates the device's sysfs entries (called before the device becomes visible to
    /// clients, as C's `device_add` in `ib_register_device`).
    pub(crate) fn new(_dev: &Arc<IbDevice>) -> Result<Self> {
        Ok(Self)
    }

    /// Renames the device's directory (C's `device_rename`).
    pub(crate) fn rename(&self, _name: &Name) -> Result {
        Ok(())
    }
}
