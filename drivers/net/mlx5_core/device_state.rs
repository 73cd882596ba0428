// SPDX-License-Identifier: GPL-2.0

//! Whether a function is usable: the internal-error state (C's `MLX5_DEVICE_STATE_INTERNAL_ERROR`)
//! that the health poll or a surprise removal sets and the command queue reads.

use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

/// Whether the device is usable; shared by the command queue and the health poll.
pub(crate) struct DeviceState {
    internal_error: Atomic<u32>,
}

impl DeviceState {
    /// A healthy device.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                internal_error: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Whether the device is in the internal-error state.
    pub(crate) fn in_error(&self) -> bool {
        self.internal_error.load(Relaxed) != 0
    }

    /// Enters the internal-error state; true the first time.
    pub(crate) fn set_error(&self) -> bool {
        self.internal_error.xchg(1, Relaxed) == 0
    }
}
