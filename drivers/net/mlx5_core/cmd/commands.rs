// SPDX-License-Identifier: GPL-2.0

//! Firmware commands for protocol modules: a handle interfaces keep (it is `'static` and
//! cloneable) to run typed commands ([`crate::ifc::Command`]) on their function, concurrently
//! with each other and with `mlx5_core`'s own (page commands keep their slot).

use crate::cmd::queue::{CmdQueue, Doorbell};
use crate::ifc::Command;
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

    /// Runs command `C` with `input` (its opcode is written by the queue) and returns its
    /// output. Waits for a free slot when all are busy. Errors: the status's errno (logged with
    /// the command's name), `ETIMEDOUT`, `ENOLINK` once the device is in the internal-error
    /// state, `ENODEV` once the function is unbound.
    pub fn exec<C: Command>(&self, input: &C::In) -> Result<C::Out> {
        self.queue.exec::<C>(&self.dev, self, input)
    }

    /// Runs command `C` with a variable part: `in_tail` follows the input layout, and
    /// `out_tail` bytes following the output are returned with it. Errors as [`Self::exec`].
    pub fn exec_var<C: Command>(
        &self,
        input: &C::In,
        in_tail: &[u8],
        out_tail: usize,
    ) -> Result<(C::Out, KVec<u8>)> {
        self.queue
            .exec_var::<C>(&self.dev, self, None, input, in_tail, out_tail)
    }
}

impl Commands {
    /// [`Self::exec_var`] for a command that may be larger than the mailbox pool: its chain is
    /// allocated on `bound` when it is (see `Mlx5Device::exec_var_large`).
    pub(crate) fn exec_var_large<C: Command>(
        &self,
        bound: &device::Device<device::Bound>,
        input: &C::In,
        in_tail: &[u8],
        out_tail: usize,
    ) -> Result<(C::Out, KVec<u8>)> {
        self.queue
            .exec_var_large::<C>(bound, self, input, in_tail, out_tail)
    }

    /// Whether the device is in the internal-error state (a fatal health error or the device
    /// gone): commands fail at once, and the hardware completes no more work.
    ///
    /// Inline across crates: `mlx5_ib` asks on every post and poll, a field read as in C.
    #[inline]
    pub fn in_internal_error(&self) -> bool {
        self.queue.device_in_error()
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
