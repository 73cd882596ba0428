// SPDX-License-Identifier: GPL-2.0

//! The file operations of `/dev/infiniband/uverbsN` (C's `uverbs_fops`).
//!
//! Opening works as in C (`ENXIO` for a device that has gone, `EIO` for one whose RDMA device
//! has gone). write() runs the legacy commands (`write_cmd.rs`), ioctl() the methods of the
//! ioctl interface (`ioctl.rs`), which carries the legacy commands too (INVOKE_WRITE).

pub(crate) mod event_file;
pub(crate) mod objects;
pub(crate) mod ufile;
pub(crate) mod uobjects;

use crate::{device::UverbsDevice, file::ufile::Ufile};
use kernel::{
    chrdev::FileOperations, cred_current, fs::File, mm::virt::VmaNew, prelude::*, sync::Arc,
    uaccess::UserPtr,
};

/// What an open file holds.
pub(crate) struct UverbsFile {
    ufile: Arc<Ufile>,
}

impl Drop for UverbsFile {
    /// C's `ib_uverbs_close`: the file's objects and context go, and it leaves the device's
    /// list.
    fn drop(&mut self) {
        self.ufile.destroy_context(false);
        self.ufile.device().remove_file(&*self.ufile);
    }
}

#[vtable]
impl FileOperations for UverbsFile {
    type Ptr = KBox<Self>;

    type Device = Arc<UverbsDevice>;

    /// C's `ib_uverbs_open`.
    fn open(dev: &Arc<UverbsDevice>, _file: &File) -> Result<KBox<Self>> {
        dev.ib_device().ok_or(EIO)?;
        let ufile = Ufile::new(dev.clone())?;
        let this = KBox::new(
            Self {
                ufile: ufile.clone(),
            },
            GFP_KERNEL,
        )?;
        dev.add_file(ufile)?;
        Ok(this)
    }

    /// C's `ib_uverbs_write`: a task other than the opener's credentials is refused
    /// (`EACCES`, C's `ib_safe_file_access`).
    fn write(data: &UverbsFile, file: &File, buf: UserPtr, len: usize) -> Result<usize> {
        if !cred_current::is_current(file.cred()) {
            return Err(EACCES);
        }
        crate::write::write(&data.ufile, buf.as_const_ptr() as usize, len)
    }

    /// C's `ib_uverbs_ioctl`.
    fn ioctl(data: &UverbsFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        crate::ioctl::ioctl(&data.ufile, cmd, arg)
    }

    /// C's `ib_uverbs_mmap`.
    fn mmap(data: &UverbsFile, _file: &File, vma: &VmaNew) -> Result {
        data.ufile.mmap(vma)
    }
}
