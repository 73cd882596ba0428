// SPDX-License-Identifier: GPL-2.0

//! `mlx5_core`: the PCI driver for Mellanox ConnectX functions. It brings the function up through
//! the firmware command interface and lets protocol modules (`mlx5_ib`) attach to it.

mod cmd;
mod dma_page;
mod eq;
mod events;
mod hca;
mod ifc;
mod init_segment;
mod pages;
mod pci_driver;
mod status;

pub use pci_driver::bound_functions;

kernel::module_pci_driver! {
    type: pci_driver::Mlx5PciDriver,
    name: "mlx5_core",
    authors: ["rdma-rs developers"],
    description: "Mellanox ConnectX core driver (Rust)",
    license: "GPL",
}
