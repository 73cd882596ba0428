// SPDX-License-Identifier: GPL-2.0

//! RoCE GID tables following their net devices' IP addresses (C's `roce_gid_mgmt.c` address
//! notifiers): an address added to or removed from a net device becomes a GID added to or
//! freed from the table of every RoCE port on that device.
//!
//! The tables of RoCE ports are listed here with their net device ([`Listed`], made with each
//! table), so that a notification reaches them without the registry's lock: a client's removal
//! runs under that lock and may unregister a net device (IPoIB's `ib0`), whose address
//! notifications then come in the middle. A table update does not sleep, so it is made in the
//! notifier itself (C queues it on its `gid-cache-wq`; the chains keep the order here).

use crate::{
    attrs::Gid,
    device::gid_table::{ipv4_gid, GidTable},
};
use kernel::{
    net::{
        addr_notifier::{AddrHandler, IpAddress},
        route::NetDevice,
    },
    prelude::*,
    sync::{aref::ARef, global_lock, Arc},
};

/// A RoCE port's table and the net device it follows (by address: only compared).
struct Entry {
    ndev: usize,
    table: Arc<GidTable>,
}

global_lock! {
    // SAFETY: Initialized by the module initializer before any device registers.
    unsafe(uninit) static TABLES: SpinLockIrq<KVec<Entry>> = KVec::new();
}

/// Initializes the list.
///
/// # Safety
///
/// Called once, at module load, before any device registers.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { TABLES.init() };
}

/// Frees the list's memory at unload (every device, and so every table, is gone).
pub(crate) fn clear() {
    let left = core::mem::replace(&mut *TABLES.lock(), KVec::new());
    drop(left);
}

/// A RoCE port's table listed for its net device's address changes; unlisted when dropped.
pub(crate) struct Listed(Arc<GidTable>);

impl Listed {
    /// Lists `table`, the table of a RoCE port on `ndev`.
    pub(crate) fn new(table: Arc<GidTable>, ndev: &NetDevice) -> Result<Self> {
        // Under the IRQ-safe lock: no sleeping allocation.
        TABLES.lock().push(
            Entry {
                ndev: ndev.as_raw().addr(),
                table: table.clone(),
            },
            GFP_ATOMIC,
        )?;
        Ok(Self(table))
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        let gone = {
            let mut list = TABLES.lock();
            list.iter()
                .position(|e| Arc::ptr_eq(&e.table, &self.0))
                .and_then(|i| list.remove(i).ok())
        };
        drop(gone);
    }
}

/// The address watch ib_core keeps registered while it is loaded.
pub(crate) struct AddrWatch;

/// The registered watch.
pub(crate) type Registration = kernel::net::addr_notifier::Registration<AddrWatch>;

/// Registers the watch.
pub(crate) fn register() -> impl PinInit<Registration, Error> {
    Registration::new(AddrWatch)
}

impl AddrHandler for AddrWatch {
    fn address(&self, ndev: &NetDevice, addr: IpAddress, up: bool) {
        let gid = match addr {
            // C's `rdma_ip2gid`.
            IpAddress::V4(a) => ipv4_gid(&a),
            IpAddress::V6(a) => Gid(a),
        };
        let held: ARef<NetDevice> = ndev.into();
        let list = TABLES.lock();
        for e in list.iter().filter(|e| e.ndev == ndev.as_raw().addr()) {
            e.table.address_changed(&held, gid, up);
        }
    }
}
