// SPDX-License-Identifier: GPL-2.0

//! The device's presence under `/sys/class/infiniband/<name>/`, as C's `sysfs.c` lays it out:
//!
//! ```text
//! <name>/node_type        "1: CA"                       (and the driver's own attributes)
//!        node_guid        "0002:c903:00ab:cd00"
//!        sys_image_guid   same format
//!        fw_ver           the driver's string
//!        node_desc        read-write, through the driver
//!        ports/<N>/state, phys_state, lid, sm_lid, lid_mask_count, sm_sl, cap_mask, rate,
//!                  link_layer                           (a live query_port each)
//!                  gids/<i>, pkeys/<i>                  (the caches)
//!                  gid_attrs/types/<i>, gid_attrs/ndevs/<i>
//!                  hw_counters/<name>, lifespan         (the driver's counters: sysfs_hw_counters)
//! ```
//!
//! Created when a device registers, before clients see it (C: `device_add`, then
//! `ib_setup_port_attrs`, then `enable_device_and_get`); the `add` uevent waits until the device
//! is enabled, as C's `ib_device_notify_register` sends it. Removed when it unregisters, after
//! the clients: removal waits for every `show`/`store` running and refuses new ones, so the
//! callbacks never outlive the device's registration (see [`kernel::class_device`]).
//!
//! `ports/<N>/counters/` (when the driver processes MADs) reads the PerfMgmt counters, one
//! `process_mad` per read (`pma.rs`).
//!
//! C clients add their own groups to `ports/<N>` of the device's own tree
//! (`ib_port_register_client_groups`: ib_cm's counters), read through their C callbacks.
//!
//! `gid_attrs` name each entry's type and, on a RoCE port, its net device (`ndevs/<i>` reads
//! `EINVAL` for an InfiniBand GID, as in C). Not yet: a C driver's `ops.port_groups`.
//!
//! Network namespaces as C's class has them: the device belongs to the initial namespace, and
//! while devices are shared (the default mode) every other namespace gets a copy of its tree
//! ([`DeviceSysfs::add_compat`], kept by the registry as namespaces come and go).

pub(crate) mod hw_counters;
pub(crate) mod pma;

use crate::{
    attrs::{GidType, LinkLayer, NodeType, NODE_DESC_MAX},
    c_abi::{
        face::{CDeviceRef, CFace, PortDir},
        port_groups,
    },
    device::ib_device::IbDevice,
    device::names::Name,
    sysfs::hw_counters::HwCountersPort,
    sysfs::pma::PmaCounter,
};
use kernel::{
    bindings, class,
    class_device::{AddUevent, ClassDevice},
    ffi::c_char,
    kobject_dir::{ForeignAttrs, KObjectDir, SysfsDir},
    net::namespace::Net,
    prelude::*,
    str::CString,
    sync::Arc,
    sysfs_attrs::{Attribute, AttributeGroups, ShowBuffer, StoreFn},
};

/// What a port's directories read: the device, the port number and its PMA counter table; in
/// the device's own tree, its C structure, for the files C clients add
/// (`c_abi/port_groups.rs`).
pub(crate) struct SysfsPort {
    dev: Arc<IbDevice>,
    port: u32,
    pma: &'static [PmaCounter],
    c_dev: Option<CDeviceRef>,
}

/// A port's directory, `ports/<N>`.
pub(crate) type SysfsPortDir = KObjectDir<SysfsPort>;

impl PortDir for SysfsPortDir {
    unsafe fn add_groups(&self, groups: *const *const bindings::attribute_group) -> Result {
        // SAFETY: The caller's contract; `SysfsPort` hands the files to their C callbacks.
        unsafe { self.add_foreign_groups(groups) }
    }

    unsafe fn remove_groups(&self, groups: *const *const bindings::attribute_group) {
        // SAFETY: The caller's contract.
        unsafe { self.remove_foreign_groups(groups) }
    }
}

impl ForeignAttrs for SysfsPort {
    unsafe fn show_foreign(&self, attr: *mut bindings::attribute, buf: *mut c_char) -> isize {
        match &self.c_dev {
            // SAFETY: A foreign attribute of a port directory was added by
            // `ib_port_register_client_groups` (the caller's contract); the structure is held.
            Some(c) => unsafe { port_groups::show(c.raw(), self.port, attr, buf) },
            None => EIO.to_errno() as isize,
        }
    }

    unsafe fn store_foreign(
        &self,
        attr: *mut bindings::attribute,
        buf: *const c_char,
        count: usize,
    ) -> isize {
        match &self.c_dev {
            // SAFETY: As in `show_foreign`.
            Some(c) => unsafe { port_groups::store(c.raw(), self.port, attr, buf, count) },
            None => EIO.to_errno() as isize,
        }
    }
}

impl HwCountersPort for SysfsPort {
    fn device(&self) -> &IbDevice {
        &self.dev
    }

    fn port_num(&self) -> u32 {
        self.port
    }
}

/// A port's directories.
struct PortDirs {
    /// `ports/<N>/gid_attrs` (dropped first: it lives in the port's directory).
    _gid_attrs: Arc<SysfsPortDir>,
    /// `ports/<N>`.
    port: Arc<SysfsPortDir>,
}

/// One directory tree of a device in the class: its own (in the initial network namespace), or
/// a copy in another namespace (C's compat device).
///
/// The fields drop in order, children before their parents (which they also keep alive).
pub(crate) struct DeviceTree {
    ports: KVec<PortDirs>,
    _ports_dir: Arc<KObjectDir<()>>,
    dev: Arc<ClassDevice<Arc<IbDevice>>>,
}

/// What sysfs holds for one registered device; dropping it removes the files.
///
/// While devices are shared by all network namespaces (the default), each namespace other than
/// the initial one gets a copy of the tree, with the same name, files and ports, as C's compat
/// devices (a sysfs mounted in that namespace shows only its copy); in exclusive mode only the
/// initial namespace sees the device.
pub(crate) struct DeviceSysfs {
    /// The copies, by the address of their namespace (dropped first).
    compat: KVec<(usize, DeviceTree)>,
    main: DeviceTree,
}

/// C's `node_type_string`.
fn node_type_str(t: NodeType) -> &'static str {
    match t {
        NodeType::Ca => "CA",
        NodeType::Switch => "switch",
        NodeType::Router => "router",
        NodeType::Rnic => "RNIC",
        NodeType::Usnic => "usNIC",
        NodeType::UsnicUdp => "usNIC UDP",
        NodeType::Unspecified => "unspecified",
    }
}

/// C's `phys_state_to_str`.
fn phys_state_str(s: u8) -> &'static str {
    match s {
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "Phy Test",
        _ => "<unknown>",
    }
}

/// Lanes of an `IB_WIDTH_*` value (C's `ib_width_enum_to_int`).
fn width_lanes(w: u8) -> Option<u32> {
    match w {
        1 => Some(1),
        16 => Some(2),
        2 => Some(4),
        4 => Some(8),
        8 => Some(12),
        _ => None,
    }
}

/// Per-lane rate in 100 Mb/s and the name of an `IB_SPEED_*` value; anything else counts as SDR
/// (C's `ib_port_attr_to_speed_info`).
fn lane_speed(s: u16) -> (u32, &'static str) {
    match s {
        2 => (50, " DDR"),
        4 => (100, " QDR"),
        8 => (100, " FDR10"),
        16 => (140, " FDR"),
        32 => (250, " EDR"),
        64 => (500, " HDR"),
        128 => (1000, " NDR"),
        256 => (2000, " XDR"),
        _ => (25, " SDR"),
    }
}

/// `rate`: `"100 Gb/sec (4X EDR)"`; `EINVAL` for an unknown width, as C.
fn write_rate(buf: &mut ShowBuffer<'_>, width: u8, speed: u16) -> Result {
    let lanes = width_lanes(width).ok_or(EINVAL)?;
    let (per_lane, name) = lane_speed(speed);
    let rate = per_lane * lanes;
    let half = if rate % 10 != 0 { ".5" } else { "" };
    buf.emit(fmt!("{}{} Gb/sec ({}X{})\n", rate / 10, half, lanes, name))
}

/// A GUID as C prints a `__be64`: four big-endian 16-bit groups.
fn write_guid(buf: &mut ShowBuffer<'_>, g: u64) -> Result {
    buf.emit(fmt!(
        "{:04x}:{:04x}:{:04x}:{:04x}\n",
        (g >> 48) & 0xffff,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    ))
}

/// A GID as `%pI6` prints it: eight groups of four hex digits.
fn write_gid(buf: &mut ShowBuffer<'_>, gid: &[u8; 16]) -> Result {
    for (i, pair) in gid.chunks_exact(2).enumerate() {
        let sep = if i == 0 { "" } else { ":" };
        buf.emit(fmt!("{}{:02x}{:02x}", sep, pair[0], pair[1]))?;
    }
    buf.write_bytes(b"\n");
    Ok(())
}

// The device's attributes (C's `ib_dev_attrs`).

fn node_type_show(d: &Arc<IbDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let t = d.node_type();
    buf.emit(fmt!("{}: {}\n", t as u8, node_type_str(t)))
}

fn node_guid_show(d: &Arc<IbDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    write_guid(buf, d.node_guid())
}

fn sys_image_guid_show(d: &Arc<IbDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    write_guid(buf, d.attr().sys_image_guid)
}

fn fw_ver_show(d: &Arc<IbDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.write_bytes(d.fw_version().as_bytes());
    buf.write_bytes(b"\n");
    Ok(())
}

fn node_desc_show(d: &Arc<IbDevice>, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.write_bytes(d.node_desc().as_bytes());
    buf.write_bytes(b"\n");
    Ok(())
}

/// As C: the first 64 bytes written, newline included, go to the driver (`EOPNOTSUPP` when it
/// cannot set a description); the text ends at the first NUL.
fn node_desc_store(d: &Arc<IbDevice>, _: u32, data: &[u8]) -> Result {
    d.set_node_desc(&data[..data.len().min(NODE_DESC_MAX)])
}

const DEVICE_ATTRS: [Attribute<Arc<IbDevice>>; 5] = [
    Attribute::ro(c"node_type", node_type_show),
    Attribute::ro(c"node_guid", node_guid_show),
    Attribute::ro(c"sys_image_guid", sys_image_guid_show),
    Attribute::ro(c"fw_ver", fw_ver_show),
    Attribute::rw(c"node_desc", node_desc_show, node_desc_store),
];

fn driver_attr_show(d: &Arc<IbDevice>, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
    d.driver_attr_show(i, buf)
}

fn driver_attr_store(d: &Arc<IbDevice>, i: u32, data: &[u8]) -> Result {
    d.driver_attr_store(i, data)
}

// A port's attributes (C's `port_default_attrs`), each from a live `query_port`.

fn state_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let a = p.dev.query_port(p.port)?;
    buf.emit(fmt!("{}: {}\n", a.state as u8, a.state.name()))
}

fn lid_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{:#x}\n", p.dev.query_port(p.port)?.lid))
}

fn lid_mask_count_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{}\n", p.dev.query_port(p.port)?.lmc))
}

fn sm_lid_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{:#x}\n", p.dev.query_port(p.port)?.sm_lid))
}

fn sm_sl_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("{}\n", p.dev.query_port(p.port)?.sm_sl))
}

fn cap_mask_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    buf.emit(fmt!("0x{:08x}\n", p.dev.query_port(p.port)?.port_cap_flags))
}

fn rate_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let a = p.dev.query_port(p.port)?;
    write_rate(buf, a.active_width, a.active_speed)
}

fn phys_state_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let s = p.dev.query_port(p.port)?.phys_state;
    buf.emit(fmt!("{}: {}\n", s, phys_state_str(s)))
}

fn link_layer_show(p: &SysfsPort, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let s = match p.dev.link_layer(p.port) {
        Some(LinkLayer::Infiniband) => "InfiniBand",
        Some(LinkLayer::Ethernet) => "Ethernet",
        _ => "Unknown",
    };
    buf.emit(fmt!("{}\n", s))
}

const PORT_ATTRS: [Attribute<SysfsPort>; 9] = [
    Attribute::ro(c"state", state_show),
    Attribute::ro(c"lid", lid_show),
    Attribute::ro(c"lid_mask_count", lid_mask_count_show),
    Attribute::ro(c"sm_lid", sm_lid_show),
    Attribute::ro(c"sm_sl", sm_sl_show),
    Attribute::ro(c"cap_mask", cap_mask_show),
    Attribute::ro(c"rate", rate_show),
    Attribute::ro(c"phys_state", phys_state_show),
    Attribute::ro(c"link_layer", link_layer_show),
];

/// GID `i` if the cache holds a valid (non-zero) entry there; C keeps zero GIDs out of the
/// table.
fn valid_gid(p: &SysfsPort, i: u32) -> Option<[u8; 16]> {
    p.dev
        .cached_gid(p.port, i)
        .map(|g| g.0)
        .filter(|g| g.iter().any(|&b| b != 0))
}

/// `gids/<i>`: the zero GID for an empty entry, as C.
fn gid_show(p: &SysfsPort, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
    write_gid(buf, &valid_gid(p, i).unwrap_or([0; 16]))
}

/// `pkeys/<i>`, from the cache; `EINVAL` past its end, as C's cached P_Key lookup.
fn pkey_show(p: &SysfsPort, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let pkey = p.dev.cached_pkey(p.port, i).ok_or(EINVAL)?;
    buf.emit(fmt!("0x{:04x}\n", pkey))
}

/// `gid_attrs/types/<i>`: the entry's type as C names it (`IB/RoCE v1` for an InfiniBand or
/// RoCE v1 GID, `RoCE v2`); `EINVAL` for an empty entry.
fn gid_type_show(p: &SysfsPort, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let e = p
        .dev
        .gid_entry(p.port, i)
        .filter(|e| !e.is_empty())
        .ok_or(EINVAL)?;
    buf.write_bytes(if e.kind == GidType::RoceV2 {
        b"RoCE v2\n"
    } else {
        b"IB/RoCE v1\n"
    });
    Ok(())
}

/// `gid_attrs/ndevs/<i>`: the name of the entry's net device (RoCE entries); `EINVAL` for an
/// entry without one (InfiniBand GIDs) or an empty one, as C.
fn gid_ndev_show(p: &SysfsPort, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let e = p
        .dev
        .gid_entry(p.port, i)
        .filter(|e| !e.is_empty())
        .ok_or(EINVAL)?;
    let ndev = e.ndev.ok_or(EINVAL)?;
    buf.write_bytes(ndev.name());
    buf.write_bytes(b"\n");
    Ok(())
}

/// `counters/<name>`: counter `i` of the port's table, one PerfMgmt query each.
fn pma_show(p: &SysfsPort, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let c = p.pma.get(i as usize).ok_or(EINVAL)?;
    pma::show(&p.dev, p.port, c, buf)
}

/// `ports/<port>` and its `gid_attrs`, sized by a `query_port` as C's `setup_port` does; with
/// `counters/` when the driver processes MADs and `hw_counters` when it has port statistics,
/// both in the device's own tree (`full`), not in its copies (C's `is_full_dev`). With the
/// device's C structure `face`, C clients can add files to `ports/<port>`.
fn port_dirs(
    ports_dir: &Arc<KObjectDir<()>>,
    dev: &Arc<IbDevice>,
    port: u32,
    full: bool,
    face: Option<&CFace>,
) -> Result<PortDirs> {
    let attr = dev.query_port(port)?;
    let mut b = AttributeGroups::builder();
    b.group(None, &PORT_ATTRS)?;
    let pma: &'static [PmaCounter] = if full && dev.ops().has_process_mad() {
        pma::counter_table(dev, port)
    } else {
        &[]
    };
    if !pma.is_empty() {
        let mut files = KVec::with_capacity(pma.len(), GFP_KERNEL)?;
        for c in pma {
            files.push(Attribute::ro(c.name, pma_show), GFP_KERNEL)?;
        }
        b.group(Some(c"counters"), &files)?;
    }
    b.table(c"gids", attr.gid_tbl_len, 0o444, Some(gid_show), None)?;
    if attr.pkey_tbl_len > 0 {
        b.table(
            c"pkeys",
            u32::from(attr.pkey_tbl_len),
            0o444,
            Some(pkey_show),
            None,
        )?;
    }
    if full {
        if let Some(hw) = hw_counters::attrs::<SysfsPort>(dev, port)? {
            b.group(Some(c"hw_counters"), &hw)?;
        }
    }
    let name = CString::try_from_fmt(fmt!("{}", port))?;
    let parent: Arc<dyn SysfsDir> = ports_dir.clone();
    let port_dir = KObjectDir::new_with_foreign(
        parent,
        &name,
        b.build()?,
        SysfsPort {
            dev: dev.clone(),
            port,
            pma,
            c_dev: face.map(CFace::device_ref),
        },
    )?;

    let mut b = AttributeGroups::builder();
    b.table(c"ndevs", attr.gid_tbl_len, 0o444, Some(gid_ndev_show), None)?;
    b.table(c"types", attr.gid_tbl_len, 0o444, Some(gid_type_show), None)?;
    let parent: Arc<dyn SysfsDir> = port_dir.clone();
    let gid_attrs = KObjectDir::new(
        parent,
        c"gid_attrs",
        b.build()?,
        SysfsPort {
            dev: dev.clone(),
            port,
            pma: &[],
            c_dev: None,
        },
    )?;
    Ok(PortDirs {
        _gid_attrs: gid_attrs,
        port: port_dir,
    })
}

impl DeviceTree {
    /// The tree of `dev` in `class`: in the initial namespace, its `add` uevent held back until
    /// [`DeviceSysfs::announce`], or in `net`, announced at once. `face` (the device's own
    /// tree) is its C structure, for C clients' port files.
    ///
    /// # Safety
    ///
    /// `class` stays registered until the returned value is dropped, and so does `net`.
    unsafe fn new(
        class: &class::Registration,
        dev: &Arc<IbDevice>,
        net: Option<&Net>,
        face: Option<&CFace>,
    ) -> Result<Self> {
        let mut b = AttributeGroups::builder();
        b.group(None, &DEVICE_ATTRS)?;
        // The driver's own files (C's `groups[1] = ops.device_group`).
        let mut extra = KVec::new();
        while let Some((name, mode, store)) = dev.driver_attr(extra.len()) {
            let store: Option<StoreFn<Arc<IbDevice>>> = store.then_some(driver_attr_store);
            extra.push(
                Attribute::new(name, mode, Some(driver_attr_show), store),
                GFP_KERNEL,
            )?;
        }
        if !extra.is_empty() {
            b.group(None, &extra)?;
        }
        let name = dev.name();
        // The initial namespace's tree is announced once the device is registered; a copy at once.
        let uevent = if net.is_some() {
            AddUevent::Now
        } else {
            AddUevent::Deferred
        };
        // SAFETY: `class` (and `net`) stay until this tree, the only holder of the class
        // device, is dropped (the caller's contract).
        let class_dev = unsafe {
            ClassDevice::new(
                class,
                dev.parent(),
                name.as_c_str(),
                b.build()?,
                dev.clone(),
                uevent,
                net,
            )?
        };
        let parent: Arc<dyn SysfsDir> = class_dev.clone();
        let ports_dir = KObjectDir::new(parent, c"ports", AttributeGroups::empty()?, ())?;
        let mut ports = KVec::with_capacity(dev.port_count() as usize, GFP_KERNEL)?;
        for port in 1..=dev.port_count() {
            ports.push(
                port_dirs(&ports_dir, dev, port, net.is_none(), face)?,
                GFP_KERNEL,
            )?;
        }
        Ok(Self {
            ports,
            _ports_dir: ports_dir,
            dev: class_dev,
        })
    }
}

impl DeviceSysfs {
    /// Creates the device's sysfs entries in `class` (called before the device becomes visible
    /// to clients, as C's `device_add` in `ib_register_device`). The `add` uevent waits for
    /// [`DeviceSysfs::announce`].
    ///
    /// # Safety
    ///
    /// `class` stays registered until the returned value is dropped.
    pub(crate) unsafe fn new(
        class: &class::Registration,
        dev: &Arc<IbDevice>,
        face: Option<&CFace>,
    ) -> Result<Self> {
        Ok(Self {
            compat: KVec::new(),
            // SAFETY: The caller's contract.
            main: unsafe { DeviceTree::new(class, dev, None, face)? },
        })
    }

    /// The port directories of the device's own tree, by port number from 1 (for its C
    /// structure: [`CFace::set_port_dirs`]).
    pub(crate) fn port_dirs(&self) -> Result<KVec<Arc<dyn PortDir>>> {
        let mut v = KVec::with_capacity(self.main.ports.len(), GFP_KERNEL)?;
        for p in self.main.ports.iter() {
            let dir: Arc<dyn PortDir> = p.port.clone();
            v.push(dir, GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// Adds the device's copy in `net` (C's `add_one_compat_dev`). The registry asks once per
    /// device and namespace: a namespace meets the registered devices, a device that registers
    /// the listed namespaces, both under its lock.
    ///
    /// # Safety
    ///
    /// `class` stays registered until the returned value is dropped, and the copy is taken out
    /// ([`DeviceSysfs::take_compat`]) before `net` exits.
    pub(crate) unsafe fn add_compat(&mut self, class: &class::Registration, net: &Net) -> Result {
        let key = net.as_raw() as usize;
        self.compat.reserve(1, GFP_KERNEL)?;
        // SAFETY: The caller's contract.
        let tree = unsafe { DeviceTree::new(class, self.main.dev.data(), Some(net), None)? };
        self.compat.push((key, tree), GFP_KERNEL)?;
        Ok(())
    }

    /// Takes out the device's copy in `net`, for the caller to drop outside its locks (removal
    /// waits for running `show` and `store` callbacks).
    pub(crate) fn take_compat(&mut self, net: &Net) -> Option<DeviceTree> {
        let key = net.as_raw() as usize;
        let i = self.compat.iter().position(|(k, _)| *k == key)?;
        self.compat.remove(i).ok().map(|(_, tree)| tree)
    }

    /// Sends the `add` uevent, once the device is registered (C's `ib_device_notify_register`).
    pub(crate) fn announce(&self) {
        self.main.dev.announce();
    }

    /// Renames the device's directory (C's `device_rename`), then its copies in other
    /// namespaces (a copy that cannot follow is logged, as C's `rename_compat_devs`).
    pub(crate) fn rename(&self, name: &Name) -> Result {
        self.main.dev.rename(name.as_c_str())?;
        for (_, tree) in self.compat.iter() {
            if tree.dev.rename(name.as_c_str()).is_err() {
                pr_warn!("Fail to rename compatdev to new name {}\n", name.as_c_str());
            }
        }
        Ok(())
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_sysfs)]
mod tests {
    use super::*;
    use crate::{attrs::Gid, device, device::registry, kunit_fake};
    use kernel::{bindings, page::PAGE_SIZE};

    /// What `f` writes into a fresh page.
    fn text(f: impl FnOnce(&mut ShowBuffer<'_>) -> Result) -> Result<KVec<u8>> {
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let n = {
            let mut b = ShowBuffer::new(&mut page);
            f(&mut b)?;
            b.len()
        };
        page.truncate(n);
        Ok(page)
    }

    #[test]
    fn values_print_as_in_c() -> Result {
        assert_eq!(
            &text(|b| write_rate(b, 2, 32))?[..],
            b"100 Gb/sec (4X EDR)\n"
        );
        assert_eq!(
            &text(|b| write_rate(b, 1, 1))?[..],
            b"2.5 Gb/sec (1X SDR)\n"
        );
        assert_eq!(
            &text(|b| write_rate(b, 8, 16))?[..],
            b"168 Gb/sec (12X FDR)\n"
        );
        assert_eq!(
            &text(|b| write_rate(b, 16, 64))?[..],
            b"100 Gb/sec (2X HDR)\n"
        );
        assert_eq!(
            &text(|b| write_rate(b, 1, 8))?[..],
            b"10 Gb/sec (1X FDR10)\n"
        );
        assert_eq!(
            &text(|b| write_rate(b, 4, 256))?[..],
            b"1600 Gb/sec (8X XDR)\n"
        );
        // An unknown speed counts as SDR, an unknown width is EINVAL.
        assert_eq!(&text(|b| write_rate(b, 2, 3))?[..], b"10 Gb/sec (4X SDR)\n");
        assert_eq!(text(|b| write_rate(b, 3, 32)).err(), Some(EINVAL));
        assert_eq!(
            &text(|b| write_guid(b, 0x0002_c903_00ab_cd00))?[..],
            b"0002:c903:00ab:cd00\n"
        );
        let gid = Gid::from_parts(0xfe80_0000_0000_0000, 0x0002_c903_00ab_cd00);
        assert_eq!(
            &text(|b| write_gid(b, &gid.0))?[..],
            b"fe80:0000:0000:0000:0002:c903:00ab:cd00\n"
        );
        use crate::attrs::PortState;
        assert_eq!(PortState::Active.name(), "ACTIVE");
        assert_eq!(PortState::ActiveDefer.name(), "ACTIVE_DEFER");
        assert_eq!(phys_state_str(5), "LinkUp");
        assert_eq!(phys_state_str(0), "<unknown>");
        assert_eq!(phys_state_str(8), "<unknown>");
        assert_eq!(node_type_str(NodeType::UsnicUdp), "usNIC UDP");
        Ok(())
    }

    /// Whether the path below the kernfs directory `dir` exists.
    fn exists(dir: *mut bindings::kernfs_node, path: &[&CStr]) -> bool {
        let mut kn = dir;
        // SAFETY: `dir` is a live kernfs directory (the device is registered); every node found
        // is referenced until the next step has been looked up in it.
        unsafe {
            bindings::kernfs_get(kn);
            for name in path {
                let next =
                    bindings::kernfs_find_and_get_ns(kn, name.as_char_ptr(), core::ptr::null());
                bindings::kernfs_put(kn);
                if next.is_null() {
                    return false;
                }
                kn = next;
            }
            bindings::kernfs_put(kn);
        }
        true
    }

    /// Whether `class` has a device called `name`.
    fn in_class_of(class: Option<&class::Registration>, name: &CStr) -> bool {
        let Some(class) = class else {
            return false;
        };
        // SAFETY: The class is registered; the reference `class_find_device` takes is dropped.
        unsafe {
            let d = bindings::class_find_device(
                class.as_raw(),
                core::ptr::null(),
                name.as_char_ptr().cast(),
                Some(bindings::device_match_name),
            );
            if d.is_null() {
                return false;
            }
            bindings::put_device(d);
        }
        true
    }

    /// Whether the suites' class has a device called `name`.
    fn in_class(name: &CStr) -> bool {
        in_class_of(crate::device::class::test_class(), name)
    }

    #[test]
    fn a_device_tree_follows_registration_and_rename() -> Result {
        // The suites' devices appear in a class of their own, never in `infiniband`.
        let class = KBox::pin_init(class::Registration::new(c"rdma_rs_kunit"), GFP_KERNEL)?;
        // SAFETY: The class stays registered, pinned in its box, until it is removed below;
        // `device_tree_checks` unregisters every device it registers before it returns.
        unsafe { crate::device::class::set_test_class(Some(&*class)) };
        let r = device_tree_checks();
        // SAFETY: Removing the class is always allowed.
        unsafe { crate::device::class::set_test_class(None) };
        drop(class);
        r
    }

    fn device_tree_checks() -> Result {
        // Port 1 has a P_Key table, port 2 none; two GIDs each, the second zero.
        let reg = kunit_fake::register(b"kunit_sysfs%d", 2)?;
        let dev = reg.device().clone();
        let name = dev.name();
        assert!(in_class(name.as_c_str()));
        assert!(!in_class_of(crate::device::class::class(), name.as_c_str()));
        let dir = registry::with_sysfs(dev.index(), |s| {
            let s = s.ok_or(ENODEV)?;
            // SAFETY: The class device is in sysfs while registered.
            Ok::<_, Error>(unsafe { (*s.main.dev.kobject()).sd })
        })?;
        for f in [
            c"node_type",
            c"node_guid",
            c"sys_image_guid",
            c"fw_ver",
            c"node_desc",
        ] {
            assert!(exists(dir, &[f]));
        }
        assert!(!exists(dir, &[c"hw_rev"]));
        for f in [
            c"state",
            c"lid",
            c"lid_mask_count",
            c"sm_lid",
            c"sm_sl",
            c"cap_mask",
            c"rate",
            c"phys_state",
            c"link_layer",
        ] {
            assert!(exists(dir, &[c"ports", c"1", f]));
            assert!(exists(dir, &[c"ports", c"2", f]));
        }
        assert!(exists(dir, &[c"ports", c"1", c"gids", c"1"]));
        assert!(!exists(dir, &[c"ports", c"1", c"gids", c"2"]));
        assert!(exists(dir, &[c"ports", c"1", c"pkeys", c"0"]));
        assert!(!exists(dir, &[c"ports", c"2", c"pkeys"]));
        assert!(exists(dir, &[c"ports", c"2", c"gid_attrs", c"types", c"1"]));
        assert!(exists(dir, &[c"ports", c"2", c"gid_attrs", c"ndevs", c"1"]));
        assert!(!exists(dir, &[c"ports", c"3"]));

        // The device's values.
        assert_eq!(&text(|b| node_type_show(&dev, 0, b))?[..], b"1: CA\n");
        assert_eq!(
            &text(|b| node_guid_show(&dev, 0, b))?[..],
            b"0002:c903:0000:0100\n"
        );
        assert_eq!(
            &text(|b| sys_image_guid_show(&dev, 0, b))?[..],
            b"1122:3344:5566:7788\n"
        );
        assert_eq!(&text(|b| fw_ver_show(&dev, 0, b))?[..], b"\n");
        assert_eq!(
            &text(|b| node_desc_show(&dev, 0, b))?[..],
            b"kunit device\n"
        );
        // C keeps what was written, newline included, up to 64 bytes and the first NUL.
        node_desc_store(&dev, 0, b"new\n")?;
        assert_eq!(&text(|b| node_desc_show(&dev, 0, b))?[..], b"new\n\n");
        node_desc_store(&dev, 0, b"ab\0cd")?;
        assert_eq!(&text(|b| node_desc_show(&dev, 0, b))?[..], b"ab\n");
        node_desc_store(&dev, 0, &[b'x'; 70])?;
        assert_eq!(text(|b| node_desc_show(&dev, 0, b))?.len(), 65);
        assert_eq!(node_desc_store(&dev, 0, b"bad"), Err(EPERM));
        assert_eq!(text(|b| node_desc_show(&dev, 0, b))?.len(), 65);

        // A port's values.
        let p1 = SysfsPort {
            dev: dev.clone(),
            port: 1,
            pma: &[],
            c_dev: None,
        };
        let p2 = SysfsPort {
            dev: dev.clone(),
            port: 2,
            pma: &[],
            c_dev: None,
        };
        assert_eq!(&text(|b| state_show(&p1, 0, b))?[..], b"4: ACTIVE\n");
        assert_eq!(&text(|b| phys_state_show(&p1, 0, b))?[..], b"5: LinkUp\n");
        assert_eq!(&text(|b| lid_show(&p2, 0, b))?[..], b"0x20\n");
        assert_eq!(&text(|b| cap_mask_show(&p2, 0, b))?[..], b"0x00000000\n");
        assert_eq!(
            &text(|b| rate_show(&p1, 0, b))?[..],
            b"100 Gb/sec (4X EDR)\n"
        );
        assert_eq!(&text(|b| link_layer_show(&p1, 0, b))?[..], b"InfiniBand\n");
        assert_eq!(
            &text(|b| gid_show(&p1, 0, b))?[..],
            b"fe80:0000:0000:0000:0000:0000:0000:abcd\n"
        );
        assert_eq!(
            &text(|b| gid_show(&p1, 1, b))?[..],
            b"0000:0000:0000:0000:0000:0000:0000:0000\n"
        );
        assert_eq!(&text(|b| pkey_show(&p1, 0, b))?[..], b"0xffff\n");
        assert_eq!(text(|b| pkey_show(&p2, 0, b)).err(), Some(EINVAL));
        assert_eq!(&text(|b| gid_type_show(&p2, 0, b))?[..], b"IB/RoCE v1\n");
        assert_eq!(text(|b| gid_type_show(&p2, 1, b)).err(), Some(EINVAL));
        assert_eq!(text(|b| gid_ndev_show(&p2, 0, b)).err(), Some(EINVAL));
        let bad = SysfsPort {
            dev: dev.clone(),
            port: 3,
            pma: &[],
            c_dev: None,
        };
        assert_eq!(text(|b| state_show(&bad, 0, b)).err(), Some(EINVAL));
        drop((p1, p2, bad));

        // Rename moves the directory; unregistration removes it.
        device::rename(&dev, b"kunit_renamed")?;
        assert!(in_class(c"kunit_renamed"));
        assert!(!in_class(name.as_c_str()));
        assert!(exists(dir, &[c"ports", c"2", c"state"]));
        // Unregistration waits for every reference to the device.
        let index = dev.index();
        drop(dev);
        drop(reg);
        assert!(!in_class(c"kunit_renamed"));
        assert!(registry::with_sysfs(index, |s| s.is_none()));
        Ok(())
    }
}
