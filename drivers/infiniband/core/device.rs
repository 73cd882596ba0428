// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: what a driver implements ([`DeviceOps`]), what it registers ([`Registration`])
//! and what the core, its clients, sysfs and netlink see ([`IbDevice`]).
//!
//! Registration follows the C core (`ib_register_device`): the name and index are taken first,
//! then the port immutable data and the device attributes are read from the driver, the GID and
//! P_Key caches are filled, sysfs is populated, and only then is the device marked registered
//! and handed to clients; a MONITOR event announces it last. Unregistration hides the device,
//! removes it from clients in reverse order, waits until nobody holds a [`DeviceRef`], announces
//! it, and removes sysfs.

pub use crate::ops::{DeviceOps, NoVerbs};
use crate::{
    attrs::{DeviceAttr, Gid, LinkLayer, NodeType, PortAttr, PortImmutable},
    names::Name,
    ops::{is_kverbs_provider, DeviceImpl, DynOps},
    registry,
    restrack::Restrack,
};
use kernel::{
    device::Device,
    new_condvar, new_mutex,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
        Arc, CondVar, Mutex,
    },
    sysfs_attrs::ShowBuffer,
};

/// Longest node description (`IB_DEVICE_NODE_DESC_MAX`).
pub const NODE_DESC_MAX: usize = 64;

/// Longest firmware version string, with its NUL (`IB_FW_VERSION_NAME_MAX`).
pub const FW_VERSION_MAX: usize = 64;

/// A short text kept inline (firmware version, node description): at most `N` bytes.
#[derive(Clone, Copy)]
pub struct ShortText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> ShortText<N> {
    /// An empty text.
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
        }
    }

    /// `s`, cut at its first NUL and at `N` bytes.
    pub fn from_bytes(s: &[u8]) -> Self {
        let mut t = Self::new();
        let s = s.split(|&c| c == 0).next().unwrap_or(&[]);
        let n = s.len().min(N);
        t.buf[..n].copy_from_slice(&s[..n]);
        t.len = n;
        t
    }

    /// The text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for ShortText<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Write for ShortText<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let b = s.as_bytes();
        let n = b.len().min(N - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        if n < b.len() {
            Err(core::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// A firmware version string.
pub type FwVersion = ShortText<{ FW_VERSION_MAX - 1 }>;

/// A node description.
pub type NodeDesc = ShortText<NODE_DESC_MAX>;

/// What a driver says about its device when registering it.
pub struct DeviceInfo<'a> {
    /// Name or template (`mlx5_%d`: the lowest free number).
    pub name: &'a [u8],
    /// Node type.
    pub node_type: NodeType,
    /// Node GUID, as the number it prints as.
    pub node_guid: u64,
    /// Number of physical ports (ports count from 1).
    pub phys_port_cnt: u32,
    /// Initial node description.
    pub node_desc: &'a [u8],
    /// The device the RDMA device sits on (its sysfs parent), if any.
    pub parent: Option<ARef<Device>>,
    /// Whether kernel CQs start with adaptive interrupt moderation (C's `use_cq_dim`, which
    /// mlx5 sets; netlink can change it later).
    pub use_cq_dim: bool,
}

/// What the core keeps per port: the immutable data and the caches C fills at registration.
pub struct PortData {
    immutable: PortImmutable,
    link_layer: LinkLayer,
    gids: KVec<Gid>,
    pkeys: KVec<u16>,
}

/// Who holds a [`DeviceRef`], and whether new ones may be taken.
struct Users {
    count: u32,
    closed: bool,
}

/// An RDMA device as the core, its clients, sysfs and netlink see it.
#[pin_data]
pub struct IbDevice {
    index: u32,
    #[pin]
    name: Mutex<Name>,
    node_type: NodeType,
    node_guid: u64,
    #[pin]
    node_desc: Mutex<NodeDesc>,
    attr: DeviceAttr,
    fw_version: FwVersion,
    ports: KVec<PortData>,
    kverbs_provider: bool,
    /// Whether kernel CQs use adaptive interrupt moderation (C's `use_cq_dim`).
    use_cq_dim: Atomic<bool>,
    parent: Option<ARef<Device>>,
    #[pin]
    users: Mutex<Users>,
    #[pin]
    users_gone: CondVar,
    ops: KBox<dyn DynOps>,
    restrack: Restrack,
    /// The device's sysfs presence, while it has one.
    #[pin]
    pub(crate) sysfs: Mutex<Option<crate::sysfs::DeviceSysfs>>,
}

impl IbDevice {
    /// The device index (stable while registered; netlink's `DEV_INDEX`).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The device's current name.
    pub fn name(&self) -> Name {
        *self.name.lock()
    }

    pub(crate) fn set_name(&self, name: Name) {
        *self.name.lock() = name;
    }

    /// Node type.
    pub fn node_type(&self) -> NodeType {
        self.node_type
    }

    /// Node GUID, as the number it prints as.
    pub fn node_guid(&self) -> u64 {
        self.node_guid
    }

    /// The attributes `query_device` gave at registration.
    pub fn attr(&self) -> &DeviceAttr {
        &self.attr
    }

    /// Firmware version string (empty when the driver has none).
    pub fn fw_version(&self) -> &FwVersion {
        &self.fw_version
    }

    /// Current node description.
    pub fn node_desc(&self) -> NodeDesc {
        *self.node_desc.lock()
    }

    /// Sets the node description through the driver (`EOPNOTSUPP` if it cannot).
    pub fn set_node_desc(&self, desc: &[u8]) -> Result {
        let desc = NodeDesc::from_bytes(desc);
        let mut cur = self.node_desc.lock();
        self.ops.modify_node_desc(&desc)?;
        *cur = desc;
        Ok(())
    }

    /// Name, mode and writability of the driver's device attribute `i` (C's `device_group`).
    pub(crate) fn driver_attr(&self, i: usize) -> Option<(&'static CStr, u16, bool)> {
        self.ops.device_attr(i)
    }

    /// Reads the driver's device attribute `i`.
    pub(crate) fn driver_attr_show(&self, i: u32, buf: &mut ShowBuffer<'_>) -> Result {
        self.ops.device_attr_show(i, buf)
    }

    /// Writes the driver's device attribute `i`.
    pub(crate) fn driver_attr_store(&self, i: u32, data: &[u8]) -> Result {
        self.ops.device_attr_store(i, data)
    }

    /// Number of ports; they count from 1.
    pub fn port_count(&self) -> u32 {
        self.ports.len() as u32
    }

    fn port(&self, port: u32) -> Option<&PortData> {
        self.ports.get(usize::try_from(port).ok()?.checked_sub(1)?)
    }

    /// Whether `port` exists.
    pub fn is_valid_port(&self, port: u32) -> bool {
        self.port(port).is_some()
    }

    /// The immutable data of `port`.
    pub fn port_immutable(&self, port: u32) -> Option<&PortImmutable> {
        self.port(port).map(|p| &p.immutable)
    }

    /// `port`'s current attributes, from the driver (`EINVAL` for a port that does not exist).
    pub fn query_port(&self, port: u32) -> Result<PortAttr> {
        if !self.is_valid_port(port) {
            return Err(EINVAL);
        }
        self.ops.query_port(port)
    }

    /// Link layer of `port`.
    pub fn link_layer(&self, port: u32) -> Option<LinkLayer> {
        self.port(port).map(|p| p.link_layer)
    }

    /// GID `index` of `port`, from the cache filled at registration.
    pub fn cached_gid(&self, port: u32, index: u32) -> Option<Gid> {
        self.port(port)?
            .gids
            .get(usize::try_from(index).ok()?)
            .copied()
    }

    /// P_Key `index` of `port`, from the cache filled at registration.
    pub fn cached_pkey(&self, port: u32, index: u32) -> Option<u16> {
        self.port(port)?
            .pkeys
            .get(usize::try_from(index).ok()?)
            .copied()
    }

    /// Whether the device serves kernel verbs (it has every verb C requires for that).
    pub fn kverbs_provider(&self) -> bool {
        self.kverbs_provider
    }

    /// Whether kernel CQs use adaptive interrupt moderation (netlink's `DEV_DIM`).
    pub fn use_cq_dim(&self) -> bool {
        self.use_cq_dim.load(Relaxed)
    }

    /// Turns adaptive interrupt moderation on (1) or off (0) (C's `ib_device_set_dim`:
    /// `EINVAL` for other values).
    pub fn set_use_cq_dim(&self, use_dim: u8) -> Result {
        if use_dim > 1 {
            return Err(EINVAL);
        }
        self.use_cq_dim.store(use_dim == 1, Relaxed);
        Ok(())
    }

    /// The device the RDMA device sits on, if any.
    pub fn parent(&self) -> Option<&Device> {
        self.parent.as_deref()
    }

    /// The driver's operations.
    pub(crate) fn ops(&self) -> &dyn DynOps {
        &*self.ops
    }

    /// Live verbs objects per type (what `RES_GET` reports).
    pub fn restrack(&self) -> &Restrack {
        &self.restrack
    }

    /// A counted reference, unless the device is being unregistered.
    pub fn try_get(self: &Arc<Self>) -> Option<DeviceRef> {
        let mut u = self.users.lock();
        if u.closed {
            return None;
        }
        u.count += 1;
        Some(DeviceRef(self.clone()))
    }

    /// Refuses new references and waits until every [`DeviceRef`] is dropped.
    fn close_and_wait(&self) {
        let mut u = self.users.lock();
        u.closed = true;
        while u.count > 0 {
            self.users_gone.wait(&mut u);
        }
    }
}

/// A counted reference to a registered device. Unregistration waits until every one of them is
/// dropped, so hold it only for the duration of an operation.
pub struct DeviceRef(Arc<IbDevice>);

impl DeviceRef {
    /// The shared device.
    pub fn arc(&self) -> &Arc<IbDevice> {
        &self.0
    }
}

impl core::ops::Deref for DeviceRef {
    type Target = IbDevice;

    fn deref(&self) -> &IbDevice {
        &self.0
    }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        let mut u = self.0.users.lock();
        u.count -= 1;
        if u.count == 0 {
            self.0.users_gone.notify_all();
        }
    }
}

/// Reads what registration caches from the driver: port data (immutable, link layer, GIDs on
/// non-RoCE ports, P_Keys), in C's order (`setup_port_data`, then `ib_cache_setup_one`).
fn read_ports(ops: &dyn DynOps, immutables: &[PortImmutable]) -> Result<KVec<PortData>> {
    let mut ports = KVec::with_capacity(immutables.len(), GFP_KERNEL)?;
    for (i, imm) in immutables.iter().enumerate() {
        let port = i as u32 + 1;
        let link_layer = ops.link_layer(port);
        // The cache update starts with a port query, as C's `ib_cache_update`.
        ops.query_port(port)?;
        let mut gids = KVec::new();
        if link_layer != LinkLayer::Ethernet {
            for index in 0..imm.gid_tbl_len {
                match ops.query_gid(port, index) {
                    Some(g) => gids.push(g?, GFP_KERNEL)?,
                    None => break,
                }
            }
        }
        let mut pkeys = KVec::with_capacity(usize::from(imm.pkey_tbl_len), GFP_KERNEL)?;
        for index in 0..imm.pkey_tbl_len {
            pkeys.push(ops.query_pkey(port, index)?, GFP_KERNEL)?;
        }
        ports.push(
            PortData {
                immutable: *imm,
                link_layer,
                gids,
                pkeys,
            },
            GFP_KERNEL,
        )?;
    }
    Ok(ports)
}

/// A registered RDMA device; dropping it unregisters the device (and waits for its users).
pub struct Registration {
    dev: Arc<IbDevice>,
}

impl Registration {
    /// Registers a device whose driver is `ops`.
    pub fn new<T: DeviceOps>(info: DeviceInfo<'_>, ops: T) -> Result<Self> {
        // Phase 1: the name and index, so that uniqueness checks see them.
        let reserved = registry::reserve(info.name)?;
        let mut immutables = KVec::with_capacity(info.phys_port_cnt as usize, GFP_KERNEL)?;
        for port in 1..=info.phys_port_cnt {
            immutables.push(ops.get_port_immutable(port)?, GFP_KERNEL)?;
        }
        let attr = ops.query_device()?;
        let ops = DeviceImpl::erase(Arc::new(ops, GFP_KERNEL)?)?;
        let ports = read_ports(&*ops, &immutables)?;
        let fw_version = ops.fw_version();
        let kverbs_provider = is_kverbs_provider::<T>();
        Self::finish(
            info,
            reserved,
            attr,
            fw_version,
            ports,
            ops,
            kverbs_provider,
        )
    }

    /// The part of registration that does not depend on the driver's type. (Kept out of the
    /// generic function: lock class keys made there would be shared by every driver's instance
    /// under different names, which lockdep reports.)
    fn finish(
        info: DeviceInfo<'_>,
        reserved: registry::Reserved,
        attr: DeviceAttr,
        fw_version: FwVersion,
        ports: KVec<PortData>,
        ops: KBox<dyn DynOps>,
        kverbs_provider: bool,
    ) -> Result<Self> {
        let (index, name) = (reserved.index(), reserved.name());
        let dev = Arc::pin_init(
            try_pin_init!(IbDevice {
                index,
                name <- new_mutex!(name),
                node_type: info.node_type,
                node_guid: info.node_guid,
                node_desc <- new_mutex!(NodeDesc::from_bytes(info.node_desc)),
                attr,
                fw_version,
                ports,
                kverbs_provider,
                use_cq_dim: Atomic::new(info.use_cq_dim),
                parent: info.parent,
                users <- new_mutex!(Users { count: 0, closed: false }),
                users_gone <- new_condvar!(),
                ops,
                restrack: Restrack::new(),
                sysfs <- new_mutex!(None),
            }? Error),
            GFP_KERNEL,
        )?;
        // sysfs, then phase 2 (clients), then the `add` uevent and the MONITOR event, as C.
        let sysfs = crate::sysfs::DeviceSysfs::new(&dev)?;
        *dev.sysfs.lock() = Some(sysfs);
        registry::enable(reserved, &dev);
        if let Some(s) = dev.sysfs.lock().as_ref() {
            s.announce();
        }
        crate::monitor::device_event(&dev, crate::monitor::Event::Register);
        Ok(Self { dev })
    }

    /// The registered device.
    pub fn device(&self) -> &Arc<IbDevice> {
        &self.dev
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Hide it and remove it from clients (in reverse order), then wait for its users.
        registry::disable(&self.dev);
        self.dev.close_and_wait();
        crate::monitor::device_event(&self.dev, crate::monitor::Event::Unregister);
        *self.dev.sysfs.lock() = None;
        registry::release(self.dev.index());
    }
}
