// SPDX-License-Identifier: GPL-2.0

//! `mlx5_core`: the PCI driver for Mellanox ConnectX functions. It brings the function up through
//! the firmware command interface and creates an auxiliary device for it (`mlx5_core.rdma.<N>`),
//! which protocol drivers (`mlx5_ib`) bind.

pub mod auxdev;
pub mod cmd;
mod debugfs;
mod device_state;
pub mod eq;
mod function;
mod hca;
mod health;
pub mod ifc;
mod init_segment;
mod log_limit;
pub mod memory;
mod pci_driver;

pub use pci_driver::bound_functions;

use kernel::{driver, pci, prelude::*};

/// The module: the PCI driver, then the module-wide state its functions use. The fields drop in
/// that order (functions unbind first); `init` sets them up in the opposite order, so a failed
/// driver registration undoes the module-wide state.
#[pin_data]
struct Mlx5CoreModule {
    #[pin]
    driver: driver::Registration<pci::Adapter<pci_driver::Mlx5PciDriver>>,
    _globals: Globals,
}

/// The module-wide state: the auxiliary device number pool and debugfs's `mlx5/`, set up at
/// load and freed when dropped.
struct Globals;

impl Globals {
    fn new() -> Self {
        // SAFETY: Called once per module load (by `init`), before the driver can bind.
        unsafe { auxdev::ADEV_IDS.init() };
        // SAFETY: As above.
        unsafe { debugfs::init() };
        Globals
    }
}

impl Drop for Globals {
    fn drop(&mut self) {
        // Every function is unbound by now (the driver dropped first, or never registered).
        auxdev::free_ids();
        debugfs::exit();
    }
}

impl kernel::InPlaceModule for Mlx5CoreModule {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _globals: Globals::new(),
            driver <- driver::Registration::new(c"mlx5_core", module),
        })
    }
}

module! {
    type: Mlx5CoreModule,
    name: "mlx5_core",
    authors: ["rdma-rs developers"],
    description: "Mellanox ConnectX core driver (Rust)",
    license: "GPL",
}
