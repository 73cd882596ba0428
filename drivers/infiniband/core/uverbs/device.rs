// SPDX-License-Identifier: GPL-2.0

//! One `uverbsN` per RDMA device whose driver serves user verbs (C's `ib_uverbs_device`): the
//! RDMA device it serves until that goes away and the files open on it.

use ib_core::{
    chardev::open_files::{OpenFile, OpenFiles},
    device::ib_device::IbDevice,
    verbs::ops::UverbsAbi,
};
use kernel::{chrdev::DevT, prelude::*, sync::Arc};

/// A `uverbsN` device.
#[pin_data]
pub(crate) struct UverbsDevice {
    devnum: u32,
    devt: DevT,
    abi: UverbsAbi,
    /// The RDMA device until it goes away (C's disassociation: files still open then get
    /// `EIO`, and the device's unregistration does not wait for them), and the open files (C's
    /// `uverbs_file_list`), whose contexts go with it.
    #[pin]
    files: OpenFiles,
}

impl UverbsDevice {
    /// The device numbered `devnum` (device number `devt`) for `ib`, whose driver has `abi`.
    pub(crate) fn new(
        ib: &Arc<IbDevice>,
        abi: UverbsAbi,
        devnum: u32,
        devt: DevT,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(UverbsDevice {
                devnum,
                devt,
                abi,
                files <- OpenFiles::new(ib),
            }),
            GFP_KERNEL,
        )
    }

    /// The device's index in the `uverbsN` numbering.
    pub(crate) fn devnum(&self) -> u32 {
        self.devnum
    }

    /// Its device number.
    pub(crate) fn devt(&self) -> DevT {
        self.devt
    }

    /// The driver's user-verbs ABI.
    pub(crate) fn abi(&self) -> UverbsAbi {
        self.abi
    }

    /// The RDMA device, `None` once it has gone away.
    pub(crate) fn ib_device(&self) -> Option<Arc<IbDevice>> {
        self.files.ib_device()
    }

    /// Lists a newly opened file: `EIO` if the RDMA device went away meanwhile.
    pub(crate) fn add_file(&self, f: Arc<dyn OpenFile>) -> Result {
        self.files.add(f, EIO)
    }

    /// Unlists a closed file.
    pub(crate) fn remove_file(&self, f: &dyn OpenFile) {
        self.files.remove(f);
    }

    /// The RDMA device goes away (C's `ib_uverbs_free_hw_resources`): commands fail with `EIO`
    /// from now on, and every open file's context is destroyed, after the command running on
    /// it, if any.
    pub(crate) fn disassociate(&self) {
        self.files.device_gone();
    }
}
