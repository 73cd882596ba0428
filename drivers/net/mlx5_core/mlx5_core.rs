// SPDX-License-Identifier: GPL-2.0

//! `mlx5_core`: the PCI driver for Mellanox ConnectX functions. It brings the function up through
//! the firmware command interface and creates an auxiliary device for it (`mlx5_core.rdma.<N>`),
//! which protocol drivers (`mlx5_ib`) bind.

pub mod auxdev;
mod cmd_events;
mod cmdq;
pub mod coherent;
pub mod commands;
mod completion_eq;
pub mod cq_table;
mod debugfs;
mod dma_page;
pub mod doorbell;
mod eq;
mod function;
mod hca;
mod health;
pub mod ifc;
mod init_segment;
mod log_limit;
mod pages;
mod pci_driver;
pub mod resources;
pub mod status;
pub mod uar;

pub use pci_driver::bound_functions;

use kernel::{driver, pci, prelude::*};

/// The module: the auxiliary device numbers, then the PCI driver.
#[pin_data(PinnedDrop)]
struct Mlx5CoreModule {
    #[pin]
    driver: driver::Registration<pci::Adapter<pci_driver::Mlx5PciDriver>>,
}

impl kernel::InPlaceModule for Mlx5CoreModule {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        // SAFETY: Called once, at module load, before the driver can bind.
        unsafe { auxdev::ADEV_IDS.init() };
        // SAFETY: As above.
        unsafe { debugfs::init() };
        try_pin_init!(Self {
            driver <- driver::Registration::new(c"mlx5_core", module),
        })
    }
}

#[pinned_drop]
impl PinnedDrop for Mlx5CoreModule {
    fn drop(self: Pin<&mut Self>) {
        // The number pool is a static: free it. Functions still bound are unbound right after
        // (the driver field drops); their numbers have no pool to go back to then.
        auxdev::free_ids();
        debugfs::exit();
    }
}

module! {
    type: Mlx5CoreModule,
    name: "mlx5_core",
    authors: ["rdma-rs developers"],
    description: "Mellanox ConnectX core driver (Rust)",
    license: "GPL",
}
