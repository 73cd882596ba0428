// SPDX-License-Identifier: GPL-2.0

//! Whether a function is usable: the internal-error state (C's `MLX5_DEVICE_STATE_INTERNAL_ERROR`)
//! that the health poll or a surprise removal sets and the command queue reads.
//!
//! The flag is a `core` atomic, not a `kernel::sync::atomic` one: `mlx5_ib` reads it on every
//! post and poll (as C reads `mdev->state`), and a relaxed `core` load is one inline `mov`,
//! where the kernel's atomics go through an out-of-line `rust_helper_atomic_read` (the kernel
//! is built without `CONFIG_RUST_INLINE_HELPERS`). A relaxed flag needs nothing the LKMM adds.

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
use kernel::{prelude::*, sync::Arc};

/// Whether the device is usable; shared by the command queue and the health poll.
pub(crate) struct DeviceState {
    internal_error: AtomicBool,
}

impl DeviceState {
    /// A healthy device.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                internal_error: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?)
    }

    /// Whether the device is in the internal-error state.
    #[inline]
    pub(crate) fn in_error(&self) -> bool {
        self.internal_error.load(Relaxed)
    }

    /// Enters the internal-error state; true the first time.
    pub(crate) fn set_error(&self) -> bool {
        !self.internal_error.swap(true, Relaxed)
    }
}
