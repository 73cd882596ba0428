// SPDX-License-Identifier: GPL-2.0

//! A class of RDMA user-space character devices as ib_uverbs and ib_umad register them (C's
//! `ib_uverbs_init` and `ib_umad_init`): the class (`/sys/class/infiniband_verbs`,
//! `infiniband_mad`) with its nodes in `/dev/infiniband/`, its `abi_version` class file, and the
//! device numbers its devices take.

use kernel::{
    chrdev::{FileOperations, Numbers},
    class::{self, DevNode, StringFile},
    class_device::ClassDevice,
    device::Device,
    prelude::*,
    sync::Arc,
    sysfs_attrs::AttributeGroups,
};

/// A registered class of character devices, with its numbers. Fields drop in this order: the
/// class file, the class, then the numbers.
pub struct CharDevClass {
    _abi_file: StringFile,
    class: Pin<KBox<class::Registration>>,
    numbers: Numbers,
}

impl CharDevClass {
    /// Registers class `name`, whose nodes are `/dev/infiniband/<device>` with mode `mode` (0:
    /// the default), with the class file `abi_version` reading `abi_version`, for devices
    /// numbered from `numbers` (reserved first, as C).
    pub fn new(
        numbers: Numbers,
        name: &'static CStr,
        mode: u16,
        abi_version: &'static CStr,
    ) -> Result<Self> {
        let class = KBox::pin_init(
            class::Registration::new_with_devnode(
                name,
                DevNode {
                    dir: c"infiniband",
                    mode,
                },
            ),
            GFP_KERNEL,
        )?;
        // SAFETY: The file is dropped before the class (field order).
        let abi_file = unsafe { StringFile::new(&class, c"abi_version", abi_version)? };
        Ok(Self {
            _abi_file: abi_file,
            class,
            numbers,
        })
    }

    /// The device numbers.
    pub fn numbers(&self) -> &Numbers {
        &self.numbers
    }

    /// Adds `name`, the `k`-th character device of the device with index `index` in the
    /// numbers, below `parent`, with `groups` reading `data`; its files are `F`'s, opened on
    /// `data`. `EINVAL` for an index or `k` outside the numbers.
    ///
    /// # Safety
    ///
    /// The returned device (every clone of the [`Arc`]) is dropped before `self`.
    pub unsafe fn add<F, T>(
        &self,
        parent: Option<&Device>,
        name: &CStr,
        groups: AttributeGroups<T>,
        data: T,
        index: u32,
        k: u32,
    ) -> Result<Arc<ClassDevice<T>>>
    where
        F: FileOperations<Device = T>,
        T: Send + Sync,
    {
        let devt = self.numbers.devt(index, k).ok_or(EINVAL)?;
        // SAFETY: The class stays registered while `self` lives, which outlives the device (the
        // caller's promise); `devt` is in `self.numbers`' ranges, which outlive the class.
        unsafe { ClassDevice::new_chardev::<F>(&self.class, parent, name, groups, data, devt) }
    }
}
