// SPDX-License-Identifier: GPL-2.0

//! The ib_core client (C's `umad_client`): every port with MAD services gets its user MAD
//! devices, `umadN` and, where the port takes subnet management, `issmN`, with their sysfs
//! files (`ibdev`, `port`) below the RDMA device's parent as in C
//! (`/sys/class/infiniband/<dev>/device/infiniband_mad/umadN`), opening as `file` says.

use crate::{
    chardevs::{self, ISSM, UMAD},
    file::{IssmFile, UmadFile},
    port::UmadPort,
};
use ib_core::{
    attrs::{CORE_CAP_IB_MAD, CORE_CAP_IB_SMI},
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

/// The ABI version of the umad interface (C's `IB_USER_MAD_ABI_VERSION`), in
/// `/sys/class/infiniband_mad/abi_version`.
const ABI_VERSION: &CStr = c"5";
/// The same, for netlink's `GET_CHARDEV`.
const ABI: u64 = 5;

/// `ibdev`: the RDMA device's name; `ENODEV` once the port is gone.
fn show_ibdev(p: &Arc<UmadPort>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let ib = p.ib_device().ok_or(ENODEV)?;
    let name = ib.name();
    buf.emit(fmt!("{}\n", BStr::from_bytes(&name)))
}

/// `port`: the port number; `ENODEV` once the port is gone.
fn show_port(p: &Arc<UmadPort>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    p.ib_device().ok_or(ENODEV)?;
    buf.emit(fmt!("{}\n", p.port_num()))
}

const ATTRS: &[Attribute<Arc<UmadPort>>] = &[
    Attribute::ro(c"ibdev", show_ibdev),
    Attribute::ro(c"port", show_port),
];

/// What the client keeps of one port: the port and its devices.
pub(crate) struct PortDevices {
    port: Arc<UmadPort>,
    /// `None` only while being built (so that a failure unwinds through `drop`).
    umad: Option<Arc<ClassDevice<Arc<UmadPort>>>>,
    issm: Option<Arc<ClassDevice<Arc<UmadPort>>>>,
    /// The port's index, free again once the rest has gone (dropped last).
    _number: Number,
}

impl Drop for PortDevices {
    /// C's `ib_umad_kill_port`: `issmN`, then `umadN` go (no new open), the open files lose
    /// their agents, then the number is free.
    fn drop(&mut self) {
        drop(self.issm.take());
        drop(self.umad.take());
        self.port.kill();
    }
}

/// The ib_core client (C's `umad_client`), with the `infiniband_mad` class and the device
/// numbers while it is registered.
pub(crate) struct Umad {
    class: CharDevClass,
}

impl Umad {
    /// Reserves the numbers and registers the class, in C's order.
    pub(crate) fn new() -> Result<Self> {
        let class = CharDevClass::new(chardevs::reserve()?, c"infiniband_mad", 0, ABI_VERSION)?;
        Ok(Self { class })
    }

    /// One port's devices (C's `ib_umad_init_port`).
    fn add_port(&self, ib: &Arc<IbDevice>, port_num: u32, smi: bool) -> Result<PortDevices> {
        let numbers = self.class.numbers();
        let taken = numbers.take()?;
        let number = taken.get();
        let umad_devt = numbers.devt(number, UMAD).ok_or(ENOSPC)?;
        let issm_devt = numbers.devt(number, ISSM).ok_or(ENOSPC)?;
        let port = UmadPort::new(ib, port_num, number, umad_devt, issm_devt)?;
        let mut devs = PortDevices {
            port: port.clone(),
            umad: None,
            issm: None,
            _number: taken,
        };
        let name = CString::try_from_fmt(fmt!("umad{number}"))?;
        let mut groups = AttributeGroups::builder();
        groups.group(None, ATTRS)?;
        // SAFETY: The devices go with `PortDevices`, which the client drops (in `remove`, at
        // the latest when it unregisters) before it drops the class.
        devs.umad = Some(unsafe {
            self.class.add::<UmadFile, _>(
                ib.parent(),
                &name,
                groups.build()?,
                port.clone(),
                number,
                UMAD,
            )?
        });
        if smi {
            let name = CString::try_from_fmt(fmt!("issm{number}"))?;
            let mut groups = AttributeGroups::builder();
            groups.group(None, ATTRS)?;
            // SAFETY: As for `umadN`.
            devs.issm = Some(unsafe {
                self.class.add::<IssmFile, _>(
                    ib.parent(),
                    &name,
                    groups.build()?,
                    port,
                    number,
                    ISSM,
                )?
            });
        }
        Ok(devs)
    }
}

impl Client for Umad {
    type Data = KVec<PortDevices>;
    const CHARDEV_NAME: Option<&'static CStr> = Some(c"umad");

    /// C's `ib_umad_add_one`: every port with MAD services gets its devices; a device with none
    /// is skipped (`EOPNOTSUPP`).
    fn add(&self, ib: &Arc<IbDevice>) -> Result<Self::Data> {
        let mut ports = KVec::new();
        for p in 1..=ib.port_count() {
            let Some(imm) = ib.port_immutable(p) else {
                continue;
            };
            if imm.core_cap_flags & CORE_CAP_IB_MAD == 0 {
                continue;
            }
            let smi = imm.core_cap_flags & CORE_CAP_IB_SMI != 0;
            let devs = self.add_port(ib, p, smi)?;
            ports.push(devs, GFP_KERNEL)?;
        }
        if ports.is_empty() {
            return Err(EOPNOTSUPP);
        }
        Ok(ports)
    }

    /// C's `ib_umad_remove_one`: the ports' devices go, last port first.
    fn remove(&self, _ib: &IbDevice, mut data: Self::Data) {
        while let Some(p) = data.pop() {
            drop(p);
        }
    }

    /// C's `ib_umad_get_nl_info`: the `umadN` of a valid port.
    fn chardev_info(
        &self,
        ib: &IbDevice,
        data: &Self::Data,
        port: Option<u32>,
    ) -> Result<ChardevInfo> {
        let port = port.filter(|p| ib.is_valid_port(*p)).ok_or(EINVAL)?;
        let p = data
            .iter()
            .find(|d| d.port.port_num() == port)
            .ok_or(EOPNOTSUPP)?;
        Ok(ChardevInfo {
            devt: p.port.devt(false),
            abi: ABI,
            name: CString::try_from_fmt(fmt!("umad{}", p.port.number()))?,
            driver_id: None,
        })
    }
}
