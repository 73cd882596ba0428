// SPDX-License-Identifier: GPL-2.0

//! A PCI function enabled for memory access and bus mastering for as long as a guard lives.
//!
//! 7.3's [`crate::pci::Device`] has `enable_device_mem` and `set_master` for a driver's probe but
//! nothing that undoes them: a driver that stops using its device (remove, or a probe that fails
//! after enabling it) should turn bus mastering off and disable the device, as C drivers do with
//! `pci_clear_master` and `pci_disable_device` (mlx5's `mlx5_pci_close`). [`EnabledDevice`] does
//! both when dropped; kept as the last field of a driver's device data, it runs after everything
//! that makes the device access memory has gone.
//!
//! C header: [`include/linux/pci.h`](srctree/include/linux/pci.h)

use crate::{
    bindings,
    device::{Bound, Core},
    pci,
    prelude::*,
};

/// The device enabled for memory access with bus mastering on; both are undone on drop.
///
/// # Invariants
///
/// `dev` was enabled with `pci_enable_device_mem` and bus mastering was set by [`Self::new`];
/// only `Drop` undoes them.
pub struct EnabledDevice<'a> {
    dev: &'a pci::Device<Bound>,
}

impl<'a> EnabledDevice<'a> {
    /// Enables `dev`'s memory resources and bus mastering (probe only: needs the core context).
    pub fn new(dev: &'a pci::Device<Core<'_>>) -> Result<Self> {
        dev.enable_device_mem()?;
        dev.set_master();
        // INVARIANT: both were done just above.
        Ok(Self { dev })
    }

    /// The device.
    pub fn device(&self) -> &'a pci::Device<Bound> {
        self.dev
    }
}

impl Drop for EnabledDevice<'_> {
    fn drop(&mut self) {
        let raw = core::ptr::from_ref(self.dev)
            .cast_mut()
            .cast::<bindings::pci_dev>();
        // SAFETY: `pci::Device` is a transparent wrapper of `struct pci_dev`, so `raw` is the
        // bound device's `struct pci_dev`, valid for `'a`. The type invariant says that `new`
        // enabled it and set bus mastering, and nothing else undid them.
        unsafe {
            bindings::pci_clear_master(raw);
            bindings::pci_disable_device(raw);
        }
    }
}
