// SPDX-License-Identifier: GPL-2.0

//! How protocol drivers (`mlx5_ib`, test drivers) attach to the functions this driver binds: on
//! the auxiliary bus, as the C driver does.
//!
//! Once a function is up, `mlx5_core` creates an auxiliary device for it, named as the C driver
//! names it: `mlx5_core.rdma.<N>`, `N` the lowest number no other bound function uses (C's
//! `mlx5_adev_ida`). Its registration data is a [`Mlx5Device`]: what a driver needs to use the
//! function (firmware commands, what the function reported, its capabilities, the firmware page
//! count, its PCI device, its port count). A driver matches it with [`RDMA_ID`] in its
//! auxiliary ID table and reads the data with [`device_data`] in its probe; the device is deleted
//! (and the driver unbound) before the function is torn down.
//!
//! Port events reach a driver through a notifier it registers on the function in its probe
//! ([`Mlx5Device::register_notifier`], C's `mlx5_notifier_register`) and drops at unbind. The
//! control vector's interrupt thread calls notifiers under a spinlock that is only ever held to
//! change the list or to call them, never across a probe or a driver's other callbacks.

use crate::cmd::commands::Commands;
use crate::eq::completion::CompEqs;
use crate::eq::cq_table::CqTable;
pub use crate::eq::cq_table::{CqHandler, CqRegistration};
use crate::eq::notifiers::Notifiers;
pub use crate::eq::notifiers::{Event, EventNotifier, NotifierRegistration};
use crate::eq::resources::ResourceTable;
pub use crate::eq::resources::{Resource, ResourceHandler, ResourceRegistration};
pub use crate::hca::HcaCaps;
use crate::ifc::Command;
pub use crate::memory::coherent::CoherentBuf;
use crate::memory::doorbell::DbPool;
pub use crate::memory::doorbell::DoorbellRecord;
use crate::memory::uar::BfregPool;
pub use crate::memory::uar::{Bfreg, Uar};
pub use crate::memory::wq_buf::{
    RingSpec, RingWriter, SendRingWriter, WqBuf, WqeUnit, SEND_LOG_STRIDE,
};
use kernel::{
    auxiliary,
    device::{self, Bound},
    ida::Ida,
    prelude::*,
    str::CString,
    sync::{aref::ARef, atomic::Atomic, global_lock, Arc},
    types::CovariantForLt,
};

/// The module name in auxiliary device names (C's `KBUILD_MODNAME` in `add_adev`).
pub const MODULE_NAME: &CStr = c"mlx5_core";

/// The name of the RDMA auxiliary device (C's `MLX5_ADEV_NAME ".rdma"` suffix).
pub const RDMA_NAME: &CStr = c"rdma";

/// The ID that matches `mlx5_core.rdma.<N>` in a driver's auxiliary ID table (the module alias
/// `auxiliary:mlx5_core.rdma`).
pub const RDMA_ID: auxiliary::DeviceId = auxiliary::DeviceId::new(MODULE_NAME, RDMA_NAME);

/// What the function reported when it was brought up.
#[derive(Clone, Copy, Debug)]
pub struct FunctionInfo {
    /// Firmware major version (init segment).
    pub fw_major: u16,
    /// Firmware minor version.
    pub fw_minor: u16,
    /// Firmware sub-minor version.
    pub fw_subminor: u16,
    /// PCI vendor id.
    pub vendor_id: u16,
    /// PCI device id.
    pub device_id: u16,
    /// PCI revision.
    pub revision: u8,
    /// Board id (PSID) from QUERY_ADAPTER, NUL-padded.
    pub board_id: [u8; 16],
}

/// What a driver bound to a function's auxiliary device learns about the function: the
/// device's registration data.
pub struct Mlx5Device {
    id: u32,
    name: CString,
    ports: u8,
    commands: Commands,
    info: FunctionInfo,
    caps: HcaCaps,
    fw_pages: Arc<Atomic<u32>>,
    parent: ARef<device::Device>,
    notifiers: Arc<Notifiers>,
    comp: Arc<CompEqs>,
    cq_table: Arc<CqTable>,
    resources: Arc<ResourceTable>,
    uar: Uar,
    bfregs: Arc<BfregPool>,
    dbs: Arc<DbPool>,
    bar_start: u64,
    bar_len: u64,
}

impl Mlx5Device {
    /// The function's PCI device, bound while the function's data is reachable: what the
    /// function's DMA mappings borrow.
    pub fn bound_parent(&self) -> &device::Device<Bound> {
        // SAFETY: INVARIANT: an `Mlx5Device` is the registration data of the function's
        // auxiliary device and is only reachable (through `device_data`, by a driver bound to
        // that device) while the device exists. `mlx5_core` deletes the auxiliary device (which
        // unbinds its driver and drops this data) in `Function::tear_down`, which runs in the
        // PCI driver's unbind (or in a failed probe) before the PCI function is unbound; and the
        // registration's `'bound` lifetime ties it to the PCI device's bound scope. So the parent
        // is bound whenever `&self` exists.
        unsafe { self.parent.as_bound() }
    }

    /// Number of completion vectors (C's `mlx5_comp_vectors_max`).
    pub fn comp_vectors(&self) -> u32 {
        self.comp.count()
    }

    /// EQ number of completion vector `vector` (C's `mlx5_comp_eqn_get`; `EINVAL` past the
    /// count), creating the vector's interrupt and EQ on first use as the 7.3 C driver does.
    /// Sleeps (firmware command).
    pub fn comp_eqn(&self, vector: u32) -> Result<u32> {
        self.comp.eqn(self.bound_parent(), vector)
    }

    /// Registers `handler` for CQ `cqn` (C's CQ table): completion events from the CQ's EQ, CQ
    /// error events from the async EQ. `EEXIST` if the CQ has a handler. Dropping the
    /// registration unregisters; once the drop returns, the handler is not running and is never
    /// called again.
    pub fn register_cq(&self, cqn: u32, handler: Arc<dyn CqHandler>) -> Result<CqRegistration> {
        self.cq_table.register(cqn, handler)
    }

    /// Registers `handler` for the async events of a QP or SRQ (routed by resource number and
    /// type as C's `mlx5_eq_async_int` and resource event notifiers do). `EEXIST` if it has one.
    pub fn register_resource(
        &self,
        res: Resource,
        handler: Arc<dyn ResourceHandler>,
    ) -> Result<ResourceRegistration> {
        self.resources.register(res, handler)
    }

    /// The physical address of UAR page `index` (C's `uar_index2paddress` with one UAR per
    /// system page), for mapping it into user space: `EINVAL` for a page outside BAR 0 (the
    /// index comes from the firmware; nothing else may be mapped).
    pub fn uar_page_address(&self, index: u32) -> Result<u64> {
        if self.bar_start == 0 {
            return Err(ENODEV);
        }
        let page = crate::memory::uar::UAR_PAGE as u64;
        let off = u64::from(index) * page;
        if off.checked_add(page).is_none_or(|end| end > self.bar_len) {
            return Err(EINVAL);
        }
        self.bar_start.checked_add(off).ok_or(EINVAL)
    }

    /// The physical address of the page of the initialization segment holding the free-running
    /// clock (`internal_timer_h`, offset 0x1000), for mapping it read-only into user space.
    pub fn clock_page_address(&self) -> Result<u64> {
        if self.bar_start == 0 {
            return Err(ENODEV);
        }
        Ok(self.bar_start + 0x1000)
    }

    /// The function's UAR page used for CQ arm doorbells (C's `mdev->priv.uar`).
    pub fn uar(&self) -> &Uar {
        &self.uar
    }

    /// A blue-flame register for a kernel send queue (C's
    /// `mlx5_alloc_bfreg(mdev, bfreg, false, false)`). Sleeps (may allocate a UAR page).
    pub fn alloc_bfreg(&self) -> Result<Bfreg> {
        self.bfregs.alloc()
    }

    /// A zeroed doorbell record from the per-page pool (C's `mlx5_db_alloc`). Sleeps.
    pub fn alloc_db(&self) -> Result<DoorbellRecord> {
        self.dbs.alloc(self.bound_parent())
    }

    /// Zeroed coherent DMA memory on the PCI function (C's `mlx5_frag_buf_alloc_node` /
    /// `dma_alloc_coherent`) for rings and buffers; `len` rounded up to pages. Sleeps.
    pub fn alloc_coherent(&self, len: usize) -> Result<CoherentBuf> {
        CoherentBuf::new(self.bound_parent(), len)
    }

    /// The auxiliary device's id (`N` in `mlx5_core.rdma.<N>`), stable while the function is
    /// bound.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The function's PCI name (`0000:01:00.0`).
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// Number of ports.
    pub fn ports(&self) -> u8 {
        self.ports
    }

    /// Firmware commands on the function (a handle the driver may keep).
    pub fn commands(&self) -> &Commands {
        &self.commands
    }

    /// Runs command `C` with a variable part that may be larger than the command queue's
    /// mailbox pool (a page list of a large memory region): such a command gets mailboxes of
    /// its own, allocated on the function (C allocates every command's). Otherwise as
    /// [`Commands::exec_var`]. Sleeps.
    pub fn exec_var_large<C: Command>(
        &self,
        input: &C::In,
        in_tail: &[u8],
        out_tail: usize,
    ) -> Result<(C::Out, KVec<u8>)> {
        self.commands
            .exec_var_large::<C>(self.bound_parent(), input, in_tail, out_tail)
    }

    /// What the function reported at bring-up.
    pub fn info(&self) -> &FunctionInfo {
        &self.info
    }

    /// The HCA's current capabilities.
    pub fn caps(&self) -> &HcaCaps {
        &self.caps
    }

    /// The count of pages the firmware holds, kept up to date as it asks for pages and gives
    /// them back (C's `priv.fw_pages`); the driver may keep it.
    pub fn fw_pages(&self) -> &Arc<Atomic<u32>> {
        &self.fw_pages
    }

    /// The PCI function's device (the parent of devices the driver registers).
    pub fn device(&self) -> &ARef<device::Device> {
        &self.parent
    }

    /// Registers `notifier` for the function's events (C's `mlx5_notifier_register`); it gets
    /// them until the returned registration is dropped, which a driver does at unbind at the
    /// latest.
    pub fn register_notifier(
        &self,
        notifier: Arc<dyn EventNotifier>,
    ) -> Result<NotifierRegistration> {
        self.notifiers.register(notifier)
    }
}

/// The registration data type of `mlx5_core.rdma.<N>` devices, as [`auxiliary::Registration`]
/// and [`auxiliary::Device::registration_data`] name it.
pub type DeviceData = CovariantForLt!(Mlx5Device);

/// The [`Mlx5Device`] of an `mlx5_core.rdma.<N>` device a driver is bound to (`EINVAL` if the
/// device was not created by this driver).
pub fn device_data<'a>(adev: &'a auxiliary::Device<Bound>) -> Result<Pin<&'a Mlx5Device>> {
    adev.registration_data::<DeviceData>()
}

/// Auxiliary device numbers at most (C's `mlx5_adev_ida` is unbounded; a 32-bit number is).
const MAX_ADEV_IDS: usize = i32::MAX as usize;

global_lock! {
    // SAFETY: Initialized by the module initializer before the driver can bind.
    pub(crate) unsafe(uninit) static ADEV_IDS: Mutex<Option<Ida>> = None;
}

/// Frees the id pool at module unload (every function is unbound by then or finds no pool).
pub(crate) fn free_ids() {
    *ADEV_IDS.lock() = None;
}

/// An auxiliary device number, taken from the pool until dropped.
struct AdevId(u32);

impl AdevId {
    /// The lowest free number.
    fn alloc() -> Result<Self> {
        let mut guard = ADEV_IDS.lock();
        let ids = guard.get_or_insert_with(|| Ida::new(MAX_ADEV_IDS));
        // `Ida` hands out numbers below `MAX_ADEV_IDS`, a `u32`.
        Ok(Self(ids.alloc(GFP_KERNEL)? as u32))
    }
}

impl Drop for AdevId {
    fn drop(&mut self) {
        if let Some(ids) = ADEV_IDS.lock().as_mut() {
            ids.free(self.0 as usize);
        }
    }
}

/// A function's `mlx5_core.rdma.<N>` device while it exists. Dropping it deletes the device
/// (unbinding its driver first), then frees the number.
pub(crate) struct AuxDevice<'bound> {
    _registration: auxiliary::Registration<'bound, DeviceData>,
    _id: AdevId,
    /// The device's blue-flame registers, for the teardown to wait for their return.
    pub(crate) bfregs: Arc<BfregPool>,
}

/// What `mlx5_core` hands to a function's auxiliary device at creation.
pub(crate) struct DeviceParts {
    /// Number of ports.
    pub(crate) ports: u8,
    /// Firmware commands on the function.
    pub(crate) commands: Commands,
    /// What the function reported at bring-up.
    pub(crate) info: FunctionInfo,
    /// The HCA's capabilities.
    pub(crate) caps: HcaCaps,
    /// The firmware page count.
    pub(crate) fw_pages: Arc<Atomic<u32>>,
    /// The completion vectors.
    pub(crate) comp: Arc<CompEqs>,
    /// The CQ table.
    pub(crate) cq_table: Arc<CqTable>,
    /// The QP/SRQ event handlers.
    pub(crate) resources: Arc<ResourceTable>,
    /// The function's UAR page.
    pub(crate) uar: Uar,
    /// The blue-flame registers.
    pub(crate) bfregs: Arc<BfregPool>,
    /// Bus address of BAR 0 (the initialization segment, then the UAR pages).
    pub(crate) bar_start: u64,
    /// Length of BAR 0.
    pub(crate) bar_len: u64,
}

impl<'bound> AuxDevice<'bound> {
    /// Creates `mlx5_core.rdma.<N>` below `parent` with what drivers get; a driver already
    /// loaded probes it before this returns.
    pub(crate) fn new(
        parent: &'bound device::Device<Bound>,
        parts: DeviceParts,
        notifiers: Arc<Notifiers>,
    ) -> Result<Self> {
        let id = AdevId::alloc()?;
        let bfregs = parts.bfregs.clone();
        let data = Mlx5Device {
            id: id.0,
            name: CString::try_from_fmt(fmt!("{}", parent.name()))?,
            ports: parts.ports,
            commands: parts.commands,
            info: parts.info,
            caps: parts.caps,
            fw_pages: parts.fw_pages,
            parent: parent.into(),
            notifiers,
            comp: parts.comp,
            cq_table: parts.cq_table,
            resources: parts.resources,
            uar: parts.uar,
            bfregs: parts.bfregs,
            dbs: DbPool::new()?,
            bar_start: parts.bar_start,
            bar_len: parts.bar_len,
        };
        let registration =
            auxiliary::Registration::new(parent, RDMA_NAME, id.0, MODULE_NAME, data)?;
        Ok(Self {
            _registration: registration,
            _id: id,
            bfregs,
        })
    }
}
