// SPDX-License-Identifier: GPL-2.0

//! Firmware commands for protocol modules: a handle interfaces keep (it is `'static` and
//! cloneable) to run commands on their function, concurrently with each other and with
//! `mlx5_core`'s own (page commands keep their slot).

use crate::cmd::{CmdQueue, Doorbell};
use crate::init_segment::{self, SharedBar};
use kernel::{
    device,
    prelude::*,
    sync::{aref::ARef, Arc},
};

/// Runs firmware commands on one function.
#[derive(Clone)]
pub struct Commands {
    queue: Arc<CmdQueue>,
    bar: SharedBar,
    dev: ARef<device::Device>,
}

impl Commands {
    pub(crate) fn new(queue: Arc<CmdQueue>, bar: SharedBar, dev: ARef<device::Device>) -> Self {
        Self { queue, bar, dev }
    }

    /// Runs a command: `input` is the whole command input (header included, as the interface
    /// layouts in `mlx5_ifc.h` define it); the output has room for `out_len` bytes. Waits for a
    /// free slot when all are busy. Errors: the status's errno (logged with the command's name),
    /// `ETIMEDOUT`, `ENOLINK` once the device is in the internal-error state, `ENODEV` once the
    /// function is unbound.
    pub fn exec(&self, input: &[u8], out_len: usize) -> Result<KVec<u8>> {
        self.queue.exec(&self.dev, self, input, out_len)
    }
}

impl Doorbell for Commands {
    fn ring(&self, slot: u32) -> Result {
        // The BAR is only reached for the write itself: the command may sleep, which a held
        // (RCU-protected) BAR access must not.
        self.bar
            .try_access_with(|bar| init_segment::ring_command_doorbell(bar, slot))
            .ok_or(ENODEV)
    }
}
