// SPDX-License-Identifier: GPL-2.0

//! One `uverbsN` per RDMA device whose driver serves user verbs (C's `ib_uverbs_device`): the
//! RDMA device it serves until that goes away and the files open on it.

use ib_core::{ib_device::IbDevice, ops::UverbsAbi};
use kernel::{
    chrdev::DevT,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// An open `uverbsN` file as its device sees it: what the RDMA device's going away does to it.
pub(crate) trait DeviceFile: Send + Sync {
    /// The RDMA device goes away: the file's context is destroyed, after the command running
    /// on it, if any (C's `uverbs_destroy_ufile_hw` with `RDMA_REMOVE_DRIVER_REMOVE`).
    fn disassociate(&self);
}

/// A `uverbsN` device.
#[pin_data]
pub(crate) struct UverbsDevice {
    devnum: u32,
    devt: DevT,
    abi: UverbsAbi,
    /// The RDMA device, until it goes away (C's disassociation): files still open then get
    /// `EIO`, and the device's unregistration does not wait for them.
    #[pin]
    ib: Mutex<Option<Arc<IbDevice>>>,
    /// The open files (C's `uverbs_file_list`), whose contexts go with the RDMA device.
    #[pin]
    files: Mutex<KVec<Arc<dyn DeviceFile>>>,
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
                ib <- new_mutex!(Some(ib.clone())),
                files <- new_mutex!(KVec::new()),
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
        self.ib.lock().clone()
    }

    /// Lists a newly opened file: `EIO` if the RDMA device went away meanwhile.
    pub(crate) fn add_file(&self, f: Arc<dyn DeviceFile>) -> Result {
        let mut files = self.files.lock();
        if self.ib.lock().is_none() {
            return Err(EIO);
        }
        files.push(f, GFP_KERNEL)?;
        Ok(())
    }

    /// Unlists a closed file.
    pub(crate) fn remove_file(&self, f: &dyn DeviceFile) {
        let mut files = self.files.lock();
        if let Some(i) = files
            .iter()
            .position(|x| core::ptr::addr_eq(Arc::as_ptr(x), f))
        {
            let _ = files.remove(i);
        }
    }

    /// The RDMA device goes away (C's `ib_uverbs_free_hw_resources`): commands fail with `EIO`
    /// from now on, and every open file's context is destroyed, after the command running on
    /// it, if any.
    pub(crate) fn disassociate(&self) {
        *self.ib.lock() = None;
        // Not under the list's lock: taking mappings back takes processes' mmap locks.
        let files = {
            let list = self.files.lock();
            let mut copy = KVec::with_capacity(list.len(), GFP_KERNEL);
            if let Ok(c) = copy.as_mut() {
                for f in list.iter() {
                    let _ = c.push(f.clone(), GFP_KERNEL);
                }
            }
            copy
        };
        match files {
            Ok(files) => files.iter().for_each(|f| f.disassociate()),
            // Without memory for a copy, under the lock (the list cannot be long).
            Err(_) => self.files.lock().iter().for_each(|f| f.disassociate()),
        }
    }
}
