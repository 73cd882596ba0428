// SPDX-License-Identifier: GPL-2.0

//! `ib_core`: the RDMA core. Device registration, clients, RDMA netlink, sysfs and the kernel
//! verbs API live here; drivers such as `mlx5_ib` and consumers plug into it.

pub mod addr;
pub mod attrs;
mod core_module;
pub mod device;
pub mod dma_buffer;
mod ls;
pub mod monitor;
pub mod names;
mod netlink;
pub mod nl_uapi;
mod nldev;
pub mod ops;
pub mod registry;
pub mod restrack;
mod sysfs;
pub mod verbs;
mod workqueues;
pub mod wr;

pub use core_module::class_registered;

kernel::prelude::module! {
    type: core_module::IbCore,
    name: "ib_core",
    authors: ["rdma-rs developers"],
    description: "RDMA core (Rust)",
    license: "GPL",
}
