// SPDX-License-Identifier: GPL-2.0

//! `ports/<N>/hw_counters/`: a file per hardware counter the driver describes (except the
//! optional ones), in the driver's order, each read as `"%llu\n"` through the port's
//! [`HwStats`](crate::hw_stats) (at most once per lifespan), and `lifespan` (milliseconds,
//! writable, 0 to 10000), as C's `setup_hw_port_stats`. Only the device's own tree has them,
//! not its copies in other network namespaces (C's `is_full_dev`).

use crate::device::ib_device::IbDevice;
use kernel::{
    prelude::*,
    sysfs_attrs::{Attribute, ShowBuffer},
};

/// What the files of a port's `hw_counters` read: the device and the port number.
pub(crate) trait HwCountersPort {
    /// The device.
    fn device(&self) -> &IbDevice;
    /// The port number.
    fn port_num(&self) -> u32;
}

/// `hw_counters/<name>`: counter `index`.
fn counter_show<T: HwCountersPort>(p: &T, index: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let (dev, port) = (p.device(), p.port_num());
    let stats = dev.hw_stats(port).ok_or(EINVAL)?;
    stats.show(|v, i| dev.read_hw_stats(port, v, i), index, buf)
}

/// `hw_counters/lifespan`.
fn lifespan_show<T: HwCountersPort>(p: &T, _: u32, buf: &mut ShowBuffer<'_>) -> Result {
    let stats = p.device().hw_stats(p.port_num()).ok_or(EINVAL)?;
    stats.lifespan_show(buf)
}

/// Writes `hw_counters/lifespan`.
fn lifespan_store<T: HwCountersPort>(p: &T, _: u32, data: &[u8]) -> Result {
    let stats = p.device().hw_stats(p.port_num()).ok_or(EINVAL)?;
    stats.lifespan_store(data)
}

/// The files of `port`'s `hw_counters` group, or `None` when the port has no hardware
/// counters. Each counter's attribute index is its index in the driver's description.
pub(crate) fn attrs<T: HwCountersPort>(
    dev: &IbDevice,
    port: u32,
) -> Result<Option<KVec<Attribute<T>>>> {
    let Some(stats) = dev.hw_stats(port) else {
        return Ok(None);
    };
    let descs = stats.descs();
    let mut attrs = KVec::with_capacity(descs.len() + 1, GFP_KERNEL)?;
    for (i, d) in descs.iter().enumerate() {
        // Optional counters have no file (C skips `IB_STAT_FLAG_OPTIONAL`).
        if d.optional {
            continue;
        }
        // An attribute's index is its position in the group, so a hidden optional counter in
        // the middle would shift the ones after it: C's drivers put them last (C warns
        // otherwise), and so must ours.
        if attrs.len() != i {
            return Err(EINVAL);
        }
        attrs.push(Attribute::ro(d.name, counter_show::<T>), GFP_KERNEL)?;
    }
    attrs.push(
        Attribute::rw(c"lifespan", lifespan_show::<T>, lifespan_store::<T>),
        GFP_KERNEL,
    )?;
    Ok(Some(attrs))
}
