// SPDX-License-Identifier: GPL-2.0

//! An open `/dev/infiniband/uverbsN` (C's `ib_uverbs_file`).
//!
//! Opening works as in C (`ENXIO` for a device that has gone, `EIO` for one whose RDMA device
//! has gone). The ioctl interface checks its header as C and knows no method yet
//! (`EPROTONOSUPPORT`, see `ioctl.rs`); there are no write() commands yet (`EINVAL`, as the
//! kernel answers for a file without them). So libibverbs lists the device but cannot open a
//! context on it.

use crate::{chardevs, device::UverbsDevice};
use kernel::{
    chrdev::{DevT, FileOperations},
    fs::File,
    prelude::*,
    sync::Arc,
};

/// What an open file holds.
pub(crate) struct UverbsFile {
    dev: Arc<UverbsDevice>,
}

#[vtable]
impl FileOperations for UverbsFile {
    type Ptr = KBox<Self>;

    /// C's `ib_uverbs_open`.
    fn open(devt: DevT, _file: &File) -> Result<KBox<Self>> {
        let dev = chardevs::find(devt).ok_or(ENXIO)?;
        dev.ib_device().ok_or(EIO)?;
        Ok(KBox::new(Self { dev }, GFP_KERNEL)?)
    }

    /// C's `ib_uverbs_ioctl`.
    fn ioctl(data: &UverbsFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        crate::ioctl::ioctl(data.dev.abi().driver_id, cmd, arg)
    }
}
