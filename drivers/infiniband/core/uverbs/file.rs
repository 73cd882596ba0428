// SPDX-License-Identifier: GPL-2.0

//! An open `/dev/infiniband/uverbsN` (C's `ib_uverbs_file`).
//!
//! Opening works as in C (`ENXIO` for a device that has gone, `EIO` for one whose RDMA device
//! has gone); the verbs behind it, the ioctl and write() commands, are not there yet, so
//! libibverbs lists the device but cannot open a context on it (ioctl answers `ENOTTY`, write
//! `EINVAL`, as the kernel does for a file without them).

use crate::{chardevs, device::UverbsDevice};
use kernel::{
    chrdev::{DevT, FileOperations},
    fs::File,
    prelude::*,
    sync::Arc,
};

/// What an open file holds.
pub(crate) struct UverbsFile {
    _dev: Arc<UverbsDevice>,
}

#[vtable]
impl FileOperations for UverbsFile {
    type Ptr = KBox<Self>;

    /// C's `ib_uverbs_open`.
    fn open(devt: DevT, _file: &File) -> Result<KBox<Self>> {
        let dev = chardevs::find(devt).ok_or(ENXIO)?;
        dev.ib_device().ok_or(EIO)?;
        Ok(KBox::new(Self { _dev: dev }, GFP_KERNEL)?)
    }
}
