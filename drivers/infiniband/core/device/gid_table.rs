// SPDX-License-Identifier: GPL-2.0

//! A port's GID table ([`GidEntry`]): on an InfiniBand port the GIDs the driver reports; on a
//! RoCE port the core's own (C's `roce_gid_mgmt.c` with `cache.c`), made from the port's net
//! device when the device registers: a default GID per GID type the port supports (the link
//! local `fe80::` address of the device's MAC, C's `make_default_gid`) in the first entries,
//! then the device's IPv4 addresses (as IPv4-mapped GIDs) and IPv6 addresses, each once per
//! type, in the first free entries, an address already in the table (the link-local one is the
//! default GID) added no second time.
//!
//! Then the table follows the device's addresses (C's inetaddr and inet6addr notifiers,
//! `device/gid_events.rs`): an added address takes the first free entries, a removed one frees
//! its entries (other entries keep their indices). Not yet: C's netdevice events (a device
//! going down or changing its MAC address, bonding and VLAN uppers).

use crate::attrs::{Gid, GidType};
use kernel::{
    net::route::NetDevice,
    new_spinlock_irq,
    prelude::*,
    sync::{aref::ARef, SpinLockIrq},
};

/// One entry of a port's GID table.
#[derive(Clone, Default)]
pub struct GidEntry {
    /// The GID (all zeroes: an empty entry).
    pub gid: Gid,
    /// Its type.
    pub kind: GidType,
    /// The net device it was made from (RoCE entries), held while the entry is.
    pub ndev: Option<ARef<NetDevice>>,
}

impl GidEntry {
    /// An InfiniBand port's entry.
    pub(crate) fn ib(gid: Gid) -> Self {
        Self {
            gid,
            kind: GidType::Ib,
            ndev: None,
        }
    }

    /// Whether the entry holds no GID.
    pub fn is_empty(&self) -> bool {
        self.gid.0 == [0; 16]
    }
}

/// C's `make_default_gid`: `fe80::` and the EUI-64 interface id of the device's MAC address
/// (`addrconf_ifid_eui48`: the universal/local bit flipped, `ff:fe` in the middle); none for a
/// device whose address is not a MAC.
fn default_gid(ndev: &NetDevice) -> Option<Gid> {
    let mac = ndev.hw_addr();
    if mac.len() != 6 {
        return None;
    }
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8..11].copy_from_slice(&mac[..3]);
    g[8] ^= 2;
    g[11] = 0xff;
    g[12] = 0xfe;
    g[13..16].copy_from_slice(&mac[3..]);
    Some(Gid(g))
}

/// The addresses of `ndev` read by `read` (`NetDevice::ipv4_addrs`, `ipv6_addrs`), all of them.
fn addresses<const N: usize>(read: impl Fn(&mut [[u8; N]]) -> usize) -> Result<KVec<[u8; N]>> {
    let mut out = KVec::new();
    out.resize(8, [0; N], GFP_KERNEL)?;
    let mut n = read(&mut out);
    if n > out.len() {
        out.resize(n, [0; N], GFP_KERNEL)?;
        n = read(&mut out).min(out.len());
    }
    out.truncate(n);
    Ok(out)
}

/// A port's GID table, under its lock (C's `ib_gid_table` and its lock): read in any context.
pub struct GidTable {
    entries: Pin<KBox<SpinLockIrq<KVVec<GidEntry>>>>,
    /// On a RoCE port, the GID types its entries have (C's `roce_gid_type_mask_support`, in
    /// order): the first entries are reserved for its default GIDs, one per type. Empty on
    /// other ports, whose table is the driver's.
    types: KVec<GidType>,
}

/// The IPv4-mapped GID of an IPv4 address (C's `rdma_ip2gid`).
pub(crate) fn ipv4_gid(a: &[u8; 4]) -> Gid {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(a);
    Gid(g)
}

/// Adds `gid` on `ndev` to `table` once per type of `types`, each in the first free entry past
/// the `types.len()` reserved ones (C's `ib_cache_gid_add`: an entry with the same GID, type and
/// net device is not added again; a full table takes no more, C's `-ENOSPC`).
fn add_to(table: &mut [GidEntry], types: &[GidType], ndev: &ARef<NetDevice>, gid: Gid) {
    if gid.0 == [0; 16] {
        return;
    }
    for t in types {
        let known = table.iter().any(|e| {
            e.gid == gid
                && e.kind == *t
                && e.ndev.as_ref().map(|n| n.as_raw()) == Some(ndev.as_raw())
        });
        if known {
            continue;
        }
        if let Some(e) = table.iter_mut().skip(types.len()).find(|e| e.is_empty()) {
            *e = GidEntry {
                gid,
                kind: *t,
                ndev: Some(ndev.clone()),
            };
        }
    }
}

impl GidTable {
    fn new(entries: KVVec<GidEntry>, types: KVec<GidType>) -> Result<Self> {
        Ok(Self {
            entries: KBox::pin_init(
                new_spinlock_irq!(entries, "ib_core::device::gid_table::GidTable::entries"),
                GFP_KERNEL,
            )?,
            types,
        })
    }

    /// An InfiniBand or iWARP port's table: the driver's GIDs.
    pub(crate) fn of_driver(entries: KVVec<GidEntry>) -> Result<Self> {
        Self::new(entries, KVec::new())
    }

    /// A RoCE port's table of `len` entries made from its net device `ndev`, for the GID types
    /// of `core_cap_flags` (see the module's documentation).
    pub(crate) fn roce(ndev: &ARef<NetDevice>, len: u32, core_cap_flags: u32) -> Result<Self> {
        let mut table = KVVec::with_capacity(len as usize, GFP_KERNEL)?;
        for _ in 0..len {
            table.push(GidEntry::default(), GFP_KERNEL)?;
        }
        let mut types: KVec<GidType> = KVec::new();
        for t in GidType::of_port(core_cap_flags) {
            types.push(t, GFP_KERNEL)?;
        }
        // The default GIDs' entries are reserved for them, as C's `gid_table_reserve_default`.
        if let Some(gid) = default_gid(ndev) {
            for (entry, t) in table.iter_mut().zip(types.iter()) {
                *entry = GidEntry {
                    gid,
                    kind: *t,
                    ndev: Some(ndev.clone()),
                };
            }
        }
        if !ndev.is_unregistering() {
            for a in addresses(|out| ndev.ipv4_addrs(out))?.iter() {
                add_to(&mut table, &types, ndev, ipv4_gid(a));
            }
            #[cfg(CONFIG_IPV6)]
            for a in addresses(|out| ndev.ipv6_addrs(out))?.iter() {
                add_to(&mut table, &types, ndev, Gid(*a));
            }
        }
        Self::new(table, types)
    }

    /// An empty table (a RoCE port without a net device yet).
    pub(crate) fn empty() -> Result<Self> {
        Self::new(KVVec::new(), KVec::new())
    }

    /// Entry `index`.
    pub fn get(&self, index: u32) -> Option<GidEntry> {
        self.entries
            .lock()
            .get(usize::try_from(index).ok()?)
            .cloned()
    }

    /// The GID of entry `index`.
    pub fn gid(&self, index: u32) -> Option<Gid> {
        self.entries
            .lock()
            .get(usize::try_from(index).ok()?)
            .map(|e| e.gid)
    }

    /// On a RoCE port, `gid` was added to (`up`) or removed from its net device `ndev`: its
    /// entries are added, or freed (C's `update_gid` with `GID_ADD`/`GID_DEL`). Nothing on
    /// another port.
    pub(crate) fn address_changed(&self, ndev: &ARef<NetDevice>, gid: Gid, up: bool) {
        if self.types.is_empty() {
            return;
        }
        let mut gone = KVec::new();
        {
            let mut table = self.entries.lock();
            if up {
                add_to(&mut table, &self.types, ndev, gid);
            } else {
                for e in table.iter_mut().skip(self.types.len()) {
                    if e.gid == gid && e.ndev.as_ref().map(|n| n.as_raw()) == Some(ndev.as_raw()) {
                        // The reference goes after the lock (a failed push drops it here).
                        let _ = gone.push(core::mem::take(e), GFP_ATOMIC);
                    }
                }
            }
        }
        drop(gone);
    }
}
