// SPDX-License-Identifier: GPL-2.0

//! A port's GID table ([`GidEntry`]): on an InfiniBand port the GIDs the driver reports; on a
//! RoCE port the core's own (C's `roce_gid_mgmt.c` with `cache.c`), made from the port's net
//! device when the device registers: a default GID per GID type the port supports (the link
//! local `fe80::` address of the device's MAC, C's `make_default_gid`) in the first entries,
//! then the device's IPv4 addresses (as IPv4-mapped GIDs) and IPv6 addresses, each once per
//! type, in the first free entries, an address already in the table (the link-local one is the
//! default GID) added no second time.
//!
//! Not yet: the table follows the net device's address changes (C's inetaddr, inet6addr and
//! netdevice notifiers); it is made once, at registration.

use crate::attrs::{Gid, GidType};
use kernel::{net::route::NetDevice, prelude::*, sync::aref::ARef};

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

/// A RoCE port's table of `len` entries made from its net device `ndev`, for the GID types
/// of `core_cap_flags` (see the module's documentation).
pub(crate) fn roce_table(
    ndev: &ARef<NetDevice>,
    len: u32,
    core_cap_flags: u32,
) -> Result<KVVec<GidEntry>> {
    let mut table = KVVec::with_capacity(len as usize, GFP_KERNEL)?;
    for _ in 0..len {
        table.push(GidEntry::default(), GFP_KERNEL)?;
    }
    let mut types: KVec<GidType> = KVec::new();
    for t in GidType::of_port(core_cap_flags) {
        types.push(t, GFP_KERNEL)?;
    }
    // The default GIDs' entries are reserved for them, as C's `gid_table_reserve_default`.
    let reserved = types.len();
    if let Some(gid) = default_gid(ndev) {
        for (entry, t) in table.iter_mut().zip(types.iter()) {
            *entry = GidEntry {
                gid,
                kind: *t,
                ndev: Some(ndev.clone()),
            };
        }
    }
    let mut add = |gid: Gid| {
        if gid.0 == [0; 16] {
            return;
        }
        for t in types.iter() {
            let known = table.iter().any(|e| {
                e.gid == gid
                    && e.kind == *t
                    && e.ndev.as_ref().map(|n| n.as_raw()) == Some(ndev.as_raw())
            });
            if known {
                continue;
            }
            // The first free entry past the reserved ones; a full table takes no more (C:
            // `-ENOSPC`).
            if let Some(e) = table.iter_mut().skip(reserved).find(|e| e.is_empty()) {
                *e = GidEntry {
                    gid,
                    kind: *t,
                    ndev: Some(ndev.clone()),
                };
            }
        }
    };
    if !ndev.is_unregistering() {
        for a in addresses(|out| ndev.ipv4_addrs(out))?.iter() {
            // C's `rdma_ip2gid` of an IPv4 address: its IPv4-mapped IPv6 address.
            let mut g = [0u8; 16];
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(a);
            add(Gid(g));
        }
        #[cfg(CONFIG_IPV6)]
        for a in addresses(|out| ndev.ipv6_addrs(out))?.iter() {
            add(Gid(*a));
        }
    }
    Ok(table)
}
