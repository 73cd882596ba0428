// SPDX-License-Identifier: GPL-2.0

//! One `uverbsN` per RDMA device whose driver serves user verbs (C's `ib_uverbs_device`): its
//! character device and sysfs files (`ibdev`, `abi_version`, `dev`), below the device's parent
//! as in C (`/sys/class/infiniband/<dev>/device/infiniband_verbs/uverbsN`).

use crate::{
    chardevs::{self, Numbers},
    ufile::Ufile,
};
use ib_core::{
    ib_device::IbDevice,
    ops::UverbsAbi,
    registry::{ChardevInfo, Client},
};
use kernel::{
    chrdev::{self, DevT},
    class::{self, DevNode, StringFile},
    class_device::ClassDevice,
    new_mutex,
    prelude::*,
    str::{BStr, CString},
    sync::{Arc, Mutex},
    sysfs_attrs::{Attribute, AttributeGroups, ShowBuffer},
};

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
    files: Mutex<KVec<Arc<Ufile>>>,
}

impl UverbsDevice {
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
    pub(crate) fn add_file(&self, f: Arc<Ufile>) -> Result {
        let mut files = self.files.lock();
        if self.ib.lock().is_none() {
            return Err(EIO);
        }
        files.push(f, GFP_KERNEL)?;
        Ok(())
    }

    /// Unlists a closed file.
    pub(crate) fn remove_file(&self, f: &Arc<Ufile>) {
        let mut files = self.files.lock();
        if let Some(i) = files.iter().position(|x| Arc::ptr_eq(x, f)) {
            let _ = files.remove(i);
        }
    }

    /// The RDMA device goes away (C's `ib_uverbs_free_hw_resources`): commands fail with `EIO`
    /// from now on, and every open file's context is destroyed, after the command running on
    /// it, if any.
    fn disassociate(&self) {
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
            Ok(files) => files.iter().for_each(|f| f.destroy_context(true)),
            // Without memory for a copy, under the lock (the list cannot be long).
            Err(_) => self
                .files
                .lock()
                .iter()
                .for_each(|f| f.destroy_context(true)),
        }
    }
}

/// `ibdev`: the RDMA device's current name (it follows renames); `ENODEV` once it is gone.
fn show_ibdev(d: &Arc<UverbsDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let ib = d.ib_device().ok_or(ENODEV)?;
    let name = ib.name();
    buf.emit(fmt!("{}\n", BStr::from_bytes(&name)))
}

/// `abi_version`: the driver's user-verbs ABI; `ENODEV` once the RDMA device is gone.
fn show_abi_version(d: &Arc<UverbsDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    d.ib_device().ok_or(ENODEV)?;
    buf.emit(fmt!("{}\n", d.abi.version))
}

const ATTRS: &[Attribute<Arc<UverbsDevice>>] = &[
    Attribute::ro(c"ibdev", show_ibdev),
    Attribute::ro(c"abi_version", show_abi_version),
];

/// What the client keeps per RDMA device.
pub(crate) struct PerDevice {
    dev: Arc<UverbsDevice>,
    /// `None` only while `add` builds it (so that a failure there unwinds through `drop`).
    node: Option<Arc<ClassDevice<Arc<UverbsDevice>>>>,
}

impl Drop for PerDevice {
    /// C's `ib_uverbs_remove_one`: the node and the sysfs files go (no new open), the files
    /// still open lose the device, then the number is free.
    fn drop(&mut self) {
        drop(self.node.take());
        self.dev.disassociate();
        chardevs::remove(self.dev.devnum);
    }
}

/// The ib_core client (C's `uverbs_client`), with what the devices need while it is
/// registered. Fields drop in this order: the class file, the class, then the numbers.
pub(crate) struct Uverbs {
    _abi_file: StringFile,
    class: Pin<KBox<class::Registration>>,
    numbers: Numbers,
}

/// The ABI version of the uverbs interface (C's `IB_USER_VERBS_ABI_VERSION`), in
/// `/sys/class/infiniband_verbs/abi_version`.
const ABI_VERSION: &CStr = c"6";

impl Uverbs {
    /// Reserves the numbers and registers the class, in C's order.
    pub(crate) fn new() -> Result<Self> {
        let numbers = Numbers::reserve()?;
        let class = KBox::pin_init(
            class::Registration::new_with_devnode(
                c"infiniband_verbs",
                DevNode {
                    dir: c"infiniband",
                    mode: 0o666,
                },
            ),
            GFP_KERNEL,
        )?;
        // SAFETY: The file is dropped before the class (field order).
        let abi_file = unsafe { StringFile::new(&class, c"abi_version", ABI_VERSION)? };
        Ok(Self {
            _abi_file: abi_file,
            class,
            numbers,
        })
    }
}

impl Client for Uverbs {
    type Data = PerDevice;
    // User space reaches devices without kernel verbs too (C's `no_kverbs_req`).
    const NEEDS_KVERBS: bool = false;
    const CHARDEV_NAME: Option<&'static CStr> = Some(c"uverbs");

    /// C's `ib_uverbs_add_one`: devices whose driver has no user verbs are skipped
    /// (`EOPNOTSUPP`, as C without `alloc_ucontext`). ib_core adds and removes devices one at a
    /// time, so the free number found stays free until the device is in the table.
    fn add(&self, ib: &Arc<IbDevice>) -> Result<PerDevice> {
        let abi = ib.uverbs_abi().ok_or(EOPNOTSUPP)?;
        let devnum = chardevs::free_devnum()?;
        let devt = self.numbers.devt(devnum).ok_or(ENOMEM)?;
        let dev = Arc::pin_init(
            pin_init!(UverbsDevice {
                devnum,
                devt,
                abi,
                ib <- new_mutex!(Some(ib.clone())),
                files <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )?;
        let mut per = PerDevice {
            dev: dev.clone(),
            node: None,
        };
        chardevs::insert(dev.clone())?;
        let name = CString::try_from_fmt(fmt!("uverbs{devnum}"))?;
        let mut groups = AttributeGroups::builder();
        groups.group(None, ATTRS)?;
        // SAFETY: The class outlives every device: devices are removed when the client
        // unregisters, before the class goes (field order of the module). `devt` is in
        // `numbers`, which outlives the class.
        let node = unsafe {
            ClassDevice::new_chardev(
                &self.class,
                ib.parent(),
                &name,
                groups.build()?,
                dev,
                devt,
                chrdev::file_operations::<crate::file::UverbsFile>(),
            )?
        };
        per.node = Some(node);
        Ok(per)
    }

    fn remove(&self, _ib: &IbDevice, data: PerDevice) {
        drop(data);
    }

    /// C's `ib_uverbs_get_nl_info`: only without a port.
    fn chardev_info(
        &self,
        _ib: &IbDevice,
        data: &PerDevice,
        port: Option<u32>,
    ) -> Result<ChardevInfo> {
        if port.is_some() {
            return Err(EINVAL);
        }
        Ok(ChardevInfo {
            devt: data.dev.devt,
            abi: u64::from(data.dev.abi.version),
            name: CString::try_from_fmt(fmt!("uverbs{}", data.dev.devnum))?,
            driver_id: Some(data.dev.abi.driver_id),
        })
    }
}
