// SPDX-License-Identifier: GPL-2.0

//! `ib_core`: the RDMA core. Device registration, clients, RDMA netlink, sysfs and the kernel
//! verbs API live here; drivers such as `mlx5_ib` and consumers plug into it.

// One folder per subsystem; each folder's root file names its parts
// (`tools/dev/import_graph.py drivers/infiniband/core` prints the module graph and finds no cycle).

/// Address resolution for RoCE (GIDs from IP addresses).
pub mod addr;
/// What drivers report: device and port attributes, GIDs.
pub mod attrs;
/// Big-endian fields (MADs, SMPs, CQEs).
pub mod be;
/// What C modules link to: C's names and structures.
mod c_abi;
/// The character-device classes and open-file lists of ib_uverbs and ib_umad.
pub mod chardev;
/// The loaded module.
mod core_module;
/// Registration: devices, clients, names, events.
pub mod device;
/// A port's hardware counters.
pub mod hw_stats;
/// The fake devices KUnit suites share.
#[cfg(CONFIG_KUNIT = "y")]
mod kunit_fake;
/// Management datagrams.
pub mod mad;
/// RDMA netlink.
pub mod netlink;
/// Resource tracking.
pub mod restrack;
/// The subnet administration client.
pub mod sa;
/// `/sys/class/infiniband`.
mod sysfs;
/// User verbs support for ib_uverbs.
pub mod user;
/// The kernel verbs API and the driver interface.
pub mod verbs;

pub use device::class::class_registered;

kernel::prelude::module! {
    type: core_module::IbCore,
    name: "ib_core",
    authors: ["rdma-rs developers"],
    description: "RDMA core (Rust)",
    license: "GPL",
}
