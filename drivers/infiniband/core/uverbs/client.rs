// SPDX-License-Identifier: GPL-2.0

//! The ib_core client (C's `uverbs_client`): one `uverbsN` per RDMA device whose driver serves
//! user verbs, its character device (opening as `file` says) and sysfs files (`ibdev`,
//! `abi_version`, `dev`), below the device's parent as in C
//! (`/sys/class/infiniband/<dev>/device/infiniband_verbs/uverbsN`).

use crate::{chardevs, device::UverbsDevice, file::UverbsFile};
use ib_core::{
    chardev::class::CharDevClass,
    device::ib_device::IbDevice,
    device::registry::{ChardevInfo, Client},
};
use kernel::{
    chrdev::Number,
    class_device::ClassDevice,
    prelude::*,
    str::{BStr, CString},
    sync::Arc,
    sysfs_attrs::{Attribute, AttributeGroups, ShowBuffer},
};

/// `ibdev`: the RDMA device's current name (it follows renames); `ENODEV` once it is gone.
fn show_ibdev(d: &Arc<UverbsDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let ib = d.ib_device().ok_or(ENODEV)?;
    let name = ib.name();
    buf.emit(fmt!("{}\n", BStr::from_bytes(&name)))
}

/// `abi_version`: the driver's user-verbs ABI; `ENODEV` once the RDMA device is gone.
fn show_abi_version(d: &Arc<UverbsDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    d.ib_device().ok_or(ENODEV)?;
    buf.emit(fmt!("{}\n", d.abi().version))
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
    /// The device's index, free again once the rest has gone (dropped last).
    _number: Number,
}

impl Drop for PerDevice {
    /// C's `ib_uverbs_remove_one`: the node and the sysfs files go (no new open), the files
    /// still open lose the device, then the number is free.
    fn drop(&mut self) {
        drop(self.node.take());
        self.dev.disassociate();
    }
}

/// The ib_core client (C's `uverbs_client`), with the `infiniband_verbs` class and the
/// device numbers while it is registered.
pub(crate) struct Uverbs {
    class: CharDevClass,
}

/// The ABI version of the uverbs interface (C's `IB_USER_VERBS_ABI_VERSION`), in
/// `/sys/class/infiniband_verbs/abi_version`.
const ABI_VERSION: &CStr = c"6";

impl Uverbs {
    /// Reserves the numbers and registers the class, in C's order.
    pub(crate) fn new() -> Result<Self> {
        let class = CharDevClass::new(
            chardevs::reserve()?,
            c"infiniband_verbs",
            0o666,
            ABI_VERSION,
        )?;
        Ok(Self { class })
    }
}

impl Client for Uverbs {
    type Data = PerDevice;
    // User space reaches devices without kernel verbs too (C's `no_kverbs_req`).
    const NEEDS_KVERBS: bool = false;
    const CHARDEV_NAME: Option<&'static CStr> = Some(c"uverbs");

    /// C's `ib_uverbs_add_one`: devices whose driver has no user verbs are skipped
    /// (`EOPNOTSUPP`, as C without `alloc_ucontext`); without a free number `ENOMEM`, as C.
    fn add(&self, ib: &Arc<IbDevice>) -> Result<PerDevice> {
        let abi = ib.uverbs_abi().ok_or(EOPNOTSUPP)?;
        let numbers = self.class.numbers();
        let number = numbers.take().map_err(|_| ENOMEM)?;
        let devnum = number.get();
        let devt = numbers.devt(devnum, 0).ok_or(ENOMEM)?;
        let dev = UverbsDevice::new(ib, abi, devnum, devt)?;
        let mut per = PerDevice {
            dev: dev.clone(),
            node: None,
            _number: number,
        };
        let name = CString::try_from_fmt(fmt!("uverbs{devnum}"))?;
        let mut groups = AttributeGroups::builder();
        groups.group(None, ATTRS)?;
        // SAFETY: The node goes with `PerDevice`, which the client drops (in `remove`, at the
        // latest when it unregisters) before it drops the class.
        let node = unsafe {
            self.class
                .add::<UverbsFile, _>(ib.parent(), &name, groups.build()?, dev, devnum, 0)?
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
            devt: data.dev.devt(),
            abi: u64::from(data.dev.abi().version),
            name: CString::try_from_fmt(fmt!("uverbs{}", data.dev.devnum()))?,
            driver_id: Some(data.dev.abi().driver_id),
        })
    }
}
