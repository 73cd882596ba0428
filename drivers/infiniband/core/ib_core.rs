// SPDX-License-Identifier: GPL-2.0

//! `ib_core`: the RDMA core. Device registration, clients, RDMA netlink, sysfs and the kernel
//! verbs API live here; drivers such as `mlx5_ib` and consumers plug into it.

// Modules in layers, lowest first: a module uses only modules of earlier groups
// (`tools/dev/import_graph.py drivers/infiniband/core` prints the graph and finds no cycle).

// Vocabulary: attributes, names, netlink numbers, object counts, verbs and data path types.
pub mod addr;
pub mod attrs;
pub mod be;
pub mod chardev_class;
pub mod controlled_qkey;
pub mod events;
pub mod hw_stats;
mod ib_class;
pub mod mad_types;
pub mod names;
pub mod nl_uapi;
pub mod open_files;
pub mod restrack;
pub mod udata;
pub mod user_abi;
pub mod uverbs_spec;
pub mod verbs_types;
mod workqueues;
pub mod wr;

// What a driver implements; RDMA netlink's sockets and dispatch.
mod netlink;
pub mod ops;

// The core's device.
pub mod ib_device;

// Users of a device: verbs objects and buffers, user contexts, MONITOR events, sysfs.
pub mod cq_poll;
pub mod dma_buffer;
pub mod monitor;
mod pma;
mod sysfs;
mod sysfs_hw_counters;
pub mod ucontext;
pub mod verbs;

// Registered devices (with their sysfs) and clients.
pub mod registry;
mod res_view;

// Registration, which ties the registry, sysfs and events together; what drivers use.
pub mod device;

// Management datagrams: the rules of agents and directed routes, a port's MAD QPs, the MAD
// layer (a client of every device).
pub mod mad;
pub mod mad_agent;
mod mad_port;
pub mod mad_smi;

// Netlink's device interface and local services.
mod ls;
mod nldev;

// The loaded module.
mod core_module;

// The fake devices KUnit suites share.
#[cfg(CONFIG_KUNIT = "y")]
mod kunit_fake;

pub use ib_class::class_registered;

kernel::prelude::module! {
    type: core_module::IbCore,
    name: "ib_core",
    authors: ["rdma-rs developers"],
    description: "RDMA core (Rust)",
    license: "GPL",
}
