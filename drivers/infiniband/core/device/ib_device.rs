// SPDX-License-Identifier: GPL-2.0

//! An RDMA device as the core, its clients, sysfs and netlink see it ([`IbDevice`]): what the
//! driver reported at registration (attributes, port data, GID and P_Key caches), live port
//! queries through the driver's operations, and the counted references ([`DeviceRef`]) that
//! unregistration waits for. How a device registers is the `device` module's business.

use crate::{
    attrs::{
        DeviceAttr, FwVersion, Gid, LinkLayer, NodeDesc, NodeType, PortAttr, PortImmutable,
        PortState, CORE_CAP_PROT_IWARP, CORE_CAP_PROT_ROCE, CORE_CAP_PROT_ROCE_UDP_ENCAP,
    },
    device::events::{DeviceEventHandler, DeviceEvents, EventType},
    device::gid_events,
    device::gid_table::{GidEntry, GidTable},
    device::names::Name,
    hw_stats::HwStats,
    restrack::Restrack,
    user::udata::Udata,
    verbs::ops::{DynOps, UverbsAbi},
};
use kernel::{
    dev_print_below::{print_below, Level},
    device::Device,
    net::route::NetDevice,
    new_condvar, new_mutex,
    prelude::*,
    str::{BStr, CString},
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
        Arc, Completion, CondVar, Mutex,
    },
    sysfs_attrs::ShowBuffer,
};

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
    /// Number of completion vectors (interrupts CQs can be bound to; C's `num_comp_vectors`).
    pub num_comp_vectors: u32,
}

/// What the core keeps per port: the immutable data and the caches C fills at registration.
pub struct PortData {
    immutable: PortImmutable,
    link_layer: LinkLayer,
    /// The GID table (its size is the driver's: kvmalloc'ed): the driver's GIDs on an
    /// InfiniBand or iWARP port, the core's on a RoCE port (`device/gid_table.rs`).
    gids: Arc<GidTable>,
    /// A RoCE port's table listed for its net device's address changes
    /// (`device/gid_events.rs`), until the port goes.
    _listed: Option<gid_events::Listed>,
    /// The P_Key cache: as many entries as the driver's `pkey_tbl_len` (a `u16`, so at most
    /// 65535, as C's), kvmalloc'ed, since a device picks the size.
    pkeys: KVVec<u16>,
    /// The port state last read (C's `port_data[].cache.port_state`): at registration, then at
    /// each port event; a change is logged as C logs it.
    state: Atomic<u32>,
    /// The port's hardware counters, when the driver has them (C keeps them with the port's
    /// sysfs, where netlink finds them too).
    hw_stats: Option<Pin<KBox<HwStats>>>,
}

/// Who holds a [`DeviceRef`], and whether new ones may be taken.
struct Users {
    count: u32,
    closed: bool,
}

/// Which registry a device or client is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Domain {
    /// The product's: drivers' devices, what netlink, sysfs and clients see.
    Live,
    /// ib_core's KUnit suites' own (their fake devices and test clients).
    #[cfg(CONFIG_KUNIT = "y")]
    Test,
}

/// An RDMA device as the core, its clients, sysfs and netlink see it.
#[pin_data]
pub struct IbDevice {
    /// The registry the device is in (the product's, or KUnit's).
    domain: Domain,
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
    num_comp_vectors: u32,
    parent: Option<ARef<Device>>,
    #[pin]
    users: Mutex<Users>,
    #[pin]
    users_gone: CondVar,
    ops: KBox<dyn DynOps>,
    #[pin]
    restrack: Restrack,
    #[pin]
    events: DeviceEvents,
    /// Completed when the device is dropped, after every other field (the driver's operations
    /// included): declared last.
    gone: Gone,
}

/// Completes its completion when dropped.
struct Gone(Arc<Completion>);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.complete_all();
    }
}

impl IbDevice {
    /// The device the core keeps for a driver's registration: what the driver reported at
    /// registration and its operations. (Not generic over the driver: lock class keys made in a
    /// generic function would be shared by every driver's instance under different names, which
    /// lockdep reports.)
    #[expect(clippy::too_many_arguments)]
    pub(crate) fn new(
        info: DeviceInfo<'_>,
        domain: Domain,
        index: u32,
        name: Name,
        attr: DeviceAttr,
        fw_version: FwVersion,
        ports: KVec<PortData>,
        ops: KBox<dyn DynOps>,
        kverbs_provider: bool,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(IbDevice {
                domain,
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
                num_comp_vectors: info.num_comp_vectors,
                parent: info.parent,
                users <- new_mutex!(Users { count: 0, closed: false }),
                users_gone <- new_condvar!(),
                ops,
                restrack <- Restrack::new(),
                events <- DeviceEvents::new(),
                gone: Gone(Arc::pin_init(Completion::new(), GFP_KERNEL)?),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The device index (stable while registered; netlink's `DEV_INDEX`).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The registry the device is in.
    pub(crate) fn domain(&self) -> Domain {
        self.domain
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

    /// Sets and clears capability bits of `port` through the driver (C's `ib_modify_port`
    /// with `set_port_cap_mask` and `clr_port_cap_mask`): `EINVAL` for a port the device does
    /// not have, `EOPNOTSUPP` if the driver cannot.
    pub fn modify_port_caps(&self, port: u32, set: u32, clear: u32) -> Result {
        if !self.is_valid_port(port) {
            return Err(EINVAL);
        }
        self.ops.modify_port_caps(port, set, clear)
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

    /// Refreshes the cached state of `port` after a port event, as C's `ib_cache_update` for
    /// `PORT_ERR` and `PORT_ACTIVE` (one port query; the GID and P_Key caches are not re-read
    /// for those events in C either). A change of state is logged in C's words
    /// (`Port: 1 Link DOWN`). Process context: the query is a driver command.
    pub(crate) fn update_port_state(&self, port: u32) -> Result {
        let data = self.port(port).ok_or(EINVAL)?;
        let new = self.ops.query_port(port)?.state;
        let old = data.state.xchg(u32::from(new as u8), Relaxed);
        let old = PortState::from_raw(u8::try_from(old).unwrap_or(0));
        if old != PortState::Nop && old != new {
            self.log_info(fmt!("Port: {port} Link {}\n", new.name()));
        }
        Ok(())
    }

    /// Logs `msg` about the device at KERN_INFO, prefixed as C's `ibdev_info` prefixes it: the
    /// parent device's driver and name, then the device's name. Process context.
    pub(crate) fn log_info(&self, msg: core::fmt::Arguments<'_>) {
        let name = self.name();
        let name = BStr::from_bytes(&name);
        match (self.parent(), CString::try_from_fmt(fmt!("{name}"))) {
            (Some(parent), Ok(cname)) => print_below(parent, Level::Info, &cname, msg),
            _ => pr_info!("{name}: {msg}"),
        }
    }

    /// Link layer of `port`.
    pub fn link_layer(&self, port: u32) -> Option<LinkLayer> {
        self.port(port).map(|p| p.link_layer)
    }

    /// The network device of `port`, held (C's `ib_device_get_netdev`): what a C driver
    /// associated with it; none for a port without one.
    pub fn port_netdev(&self, port: u32) -> Option<ARef<NetDevice>> {
        self.port(port)?;
        self.ops.netdev(port)
    }

    /// GID `index` of `port`, from the cache (filled at registration; a RoCE port's follows
    /// its net device's addresses).
    pub fn cached_gid(&self, port: u32, index: u32) -> Option<Gid> {
        self.port(port)?.gids.gid(index)
    }

    /// Entry `index` of `port`'s GID table: its GID, type and net device.
    pub fn gid_entry(&self, port: u32, index: u32) -> Option<GidEntry> {
        self.port(port)?.gids.get(index)
    }

    /// P_Key `index` of `port`, from the cache filled at registration.
    pub fn cached_pkey(&self, port: u32, index: u32) -> Option<u16> {
        self.port(port)?
            .pkeys
            .get(usize::try_from(index).ok()?)
            .copied()
    }

    /// The state of `port` last read (C's `port_data[].cache.port_state`): at registration and
    /// at each port event.
    pub fn cached_port_state(&self, port: u32) -> Option<PortState> {
        let v = self.port(port)?.state.load(Relaxed);
        Some(PortState::from_raw(u8::try_from(v).unwrap_or(0)))
    }

    /// The index of `pkey` in `port`'s cached table (C's `ib_find_cached_pkey`): the first
    /// full-member entry with its 15 key bits, else the last limited one.
    pub fn find_cached_pkey(&self, port: u32, pkey: u16) -> Option<u16> {
        let pkeys = &self.port(port)?.pkeys;
        let mut partial = None;
        for (i, &entry) in pkeys.iter().enumerate() {
            if entry & 0x7fff != pkey & 0x7fff {
                continue;
            }
            let i = u16::try_from(i).ok()?;
            if entry & 0x8000 != 0 {
                return Some(i);
            }
            partial = Some(i);
        }
        partial
    }

    /// The P_Key table length of `port`'s cache.
    pub fn cached_pkey_count(&self, port: u32) -> Option<usize> {
        Some(self.port(port)?.pkeys.len())
    }

    /// `port`'s hardware counters, if the driver has them (C's `ib_get_hw_stats_port`).
    pub(crate) fn hw_stats(&self, port: u32) -> Option<&HwStats> {
        self.port(port)?.hw_stats.as_deref()
    }

    /// Reads `port`'s hardware counters through the driver (its `get_hw_stats`).
    pub(crate) fn read_hw_stats(
        &self,
        port: u32,
        values: &mut [u64],
        index: usize,
    ) -> Result<usize> {
        self.ops.get_hw_stats(port, values, index)
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

    /// Number of completion vectors.
    pub fn num_comp_vectors(&self) -> u32 {
        self.num_comp_vectors
    }

    /// The device's attributes queried now, for user space, with the driver's answer in
    /// `udata` (C's `ops.query_device` in `EX_QUERY_DEVICE`).
    pub fn query_device_udata(&self, udata: &Udata) -> Result<DeviceAttr> {
        self.ops.query_device_udata(udata)
    }

    /// The user-verbs ABI of the device's driver, `None` when it has no user verbs.
    pub fn uverbs_abi(&self) -> Option<UverbsAbi> {
        self.ops.uverbs()
    }

    /// The driver's own ioctl methods (C's driver `uapi_definition`s).
    pub fn driver_methods(&self) -> &'static [crate::user::spec::DriverMethod] {
        self.ops.driver_methods()
    }

    /// Whether the driver can tell a user context's data again (C's `ops.query_ucontext`,
    /// what QUERY_CONTEXT needs).
    pub fn has_query_ucontext(&self) -> bool {
        self.ops.has_query_ucontext()
    }

    /// The attributes the driver adds to the core's methods (C's
    /// `ADD_UVERBS_ATTRIBUTES_SIMPLE`).
    pub fn driver_attrs(&self) -> &'static [crate::user::spec::DriverAttrs] {
        self.ops.driver_attrs()
    }

    /// The device the RDMA device sits on, if any.
    pub fn parent(&self) -> Option<&Device> {
        self.parent.as_deref()
    }

    /// The driver's operations.
    pub(crate) fn ops(&self) -> &dyn DynOps {
        &*self.ops
    }

    /// Tells every registered event handler of the device about `event` on `port` (0: the
    /// whole device), as C's `ib_dispatch_event` does from its work item: an event that
    /// changes what the core caches about a port (C's `is_cache_update_event`) first refreshes
    /// the port's state (which logs a change of state), and reaches the handlers only if that
    /// worked; a GID change reaches none (C tells GID changes entry by entry). Process context:
    /// drivers call it from a work item (the refresh is a driver command).
    pub fn dispatch_event(&self, event: EventType, port: u32) {
        use EventType::*;
        if matches!(
            event,
            PortErr | PortActive | LidChange | PkeyChange | ClientReregister | GidChange
        ) && (self.update_port_state(port).is_err() || event == GidChange)
        {
            return;
        }
        self.events.dispatch(event, port);
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
    /// What completes once the device is dropped: its last reference gone and the driver's
    /// operations dropped with it.
    pub(crate) fn gone(&self) -> Arc<Completion> {
        self.gone.0.clone()
    }

    pub(crate) fn close_and_wait(&self) {
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
pub(crate) fn read_ports(ops: &dyn DynOps, immutables: &[PortImmutable]) -> Result<KVec<PortData>> {
    let mut ports = KVec::with_capacity(immutables.len(), GFP_KERNEL)?;
    for (i, imm) in immutables.iter().enumerate() {
        let port = i as u32 + 1;
        let link_layer = ops.link_layer(port);
        // The cache update starts with a port query, as C's `ib_cache_update`.
        let attr = ops.query_port(port)?;
        let roce = imm.core_cap_flags & (CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) != 0;
        let mut listed = None;
        let gids = if roce {
            // The core's own, from the port's net device (C's `roce_gid_mgmt`), following its
            // addresses.
            match ops.netdev(port) {
                Some(ndev) => {
                    let t = Arc::new(
                        GidTable::roce(&ndev, imm.gid_tbl_len, imm.core_cap_flags)?,
                        GFP_KERNEL,
                    )?;
                    listed = Some(gid_events::Listed::new(t.clone(), &ndev)?);
                    t
                }
                None => Arc::new(GidTable::empty()?, GFP_KERNEL)?,
            }
        } else {
            let mut gids = KVVec::new();
            if link_layer != LinkLayer::Ethernet || imm.core_cap_flags & CORE_CAP_PROT_IWARP != 0 {
                // The driver's (C's `config_non_roce_gid_cache`); an iWARP port's entries name
                // its net device.
                let ndev = if imm.core_cap_flags & CORE_CAP_PROT_IWARP != 0 {
                    ops.netdev(port)
                } else {
                    None
                };
                for index in 0..imm.gid_tbl_len {
                    match ops.query_gid(port, index) {
                        Some(g) => {
                            let mut e = GidEntry::ib(g?);
                            e.ndev = ndev.clone();
                            gids.push(e, GFP_KERNEL)?
                        }
                        None => break,
                    }
                }
            }
            Arc::new(GidTable::of_driver(gids)?, GFP_KERNEL)?
        };
        // One query per P_Key, as C's `ib_cache_update` (mlx5 answers each with the MAD of its
        // block of 32, as C's `mlx5_query_mad_ifc_pkey`).
        let mut pkeys = KVVec::with_capacity(usize::from(imm.pkey_tbl_len), GFP_KERNEL)?;
        for index in 0..imm.pkey_tbl_len {
            pkeys.push(ops.query_pkey(port, index)?, GFP_KERNEL)?;
        }
        ports.push(
            PortData {
                immutable: *imm,
                link_layer,
                gids,
                _listed: listed,
                pkeys,
                state: Atomic::new(u32::from(attr.state as u8)),
                hw_stats: None,
            },
            GFP_KERNEL,
        )?;
    }
    // The hardware counters, described and read once per port (C: when the port's sysfs is
    // created, after the caches; a failure fails the registration, except `EOPNOTSUPP`: a
    // device whose driver has them in general but not this one).
    if ops.has_hw_stats() {
        for (i, p) in ports.iter_mut().enumerate() {
            let port = i as u32 + 1;
            let desc = match ops.alloc_hw_port_stats(port) {
                Ok(desc) => desc,
                Err(e) if e == EOPNOTSUPP => continue,
                Err(e) => return Err(e),
            };
            p.hw_stats = Some(HwStats::new(desc, |v, index| {
                ops.get_hw_stats(port, v, index)
            })?);
        }
    }
    Ok(ports)
}

/// A handler of a device's events, registered until dropped (C's `ib_register_event_handler`
/// and `ib_unregister_event_handler`). It holds the device: an `ib_core` client drops it in
/// `remove`, before unregistration waits for the device to go.
pub struct DeviceEventRegistration {
    dev: Arc<IbDevice>,
    id: u64,
}

impl DeviceEventRegistration {
    /// Registers `handler` for the events of `dev`.
    pub fn new(dev: &Arc<IbDevice>, handler: DeviceEventHandler) -> Result<Self> {
        let id = dev.events.add(handler)?;
        Ok(Self {
            dev: dev.clone(),
            id,
        })
    }
}

impl Drop for DeviceEventRegistration {
    fn drop(&mut self) {
        self.dev.events.remove(self.id);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_cache)]
mod tests {
    use super::*;
    use crate::{
        attrs::CORE_PORT_IBA_IB,
        device::{DeviceOps, NoVerbs, Registration},
        kunit_fake,
    };

    /// A device whose one port has the largest P_Key table a driver can report; its P_Key
    /// queries are counted.
    struct LargePkeyTable {
        queries: Arc<Atomic<u32>>,
    }

    #[vtable]
    impl DeviceOps for LargePkeyTable {
        type Pd = NoVerbs;
        type Cq = NoVerbs;
        type Qp = NoVerbs;
        type Mr = NoVerbs;
        type Srq = NoVerbs;
        type Ah = NoVerbs;
        type UContext = crate::verbs::ops::NoVerbs;

        fn query_device(&self) -> Result<DeviceAttr> {
            Ok(kunit_fake::device_attr())
        }

        fn query_port(&self, _port: u32) -> Result<PortAttr> {
            Ok(PortAttr {
                gid_tbl_len: 1,
                pkey_tbl_len: u16::MAX,
                ..PortAttr::default()
            })
        }

        fn get_port_immutable(&self, _port: u32) -> Result<PortImmutable> {
            Ok(PortImmutable {
                core_cap_flags: CORE_PORT_IBA_IB,
                gid_tbl_len: 1,
                pkey_tbl_len: u16::MAX,
                max_mad_size: 256,
            })
        }

        fn query_gid(&self, _port: u32, _index: u32) -> Result<Gid> {
            Ok(Gid::default())
        }

        fn query_pkey(&self, _port: u32, index: u16) -> Result<u16> {
            self.queries.fetch_add(1, Relaxed);
            Ok(index ^ 0x8000)
        }
    }

    #[test]
    fn the_largest_pkey_table_is_cached_one_query_per_entry() -> Result {
        let queries = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let reg = Registration::new_test(
            kunit_fake::info(b"kunit_pkeys%d", 1),
            LargePkeyTable {
                queries: queries.clone(),
            },
        )?;
        let dev = reg.device();
        assert_eq!(queries.load(Relaxed), u32::from(u16::MAX));
        assert_eq!(dev.cached_pkey(1, 0), Some(0x8000));
        assert_eq!(dev.cached_pkey(1, 65534), Some(65534 ^ 0x8000));
        assert_eq!(dev.cached_pkey(1, 65535), None);
        assert_eq!(dev.cached_pkey(2, 0), None);
        Ok(())
    }
}
