// SPDX-License-Identifier: GPL-2.0

//! `mlx5_ib`: the InfiniBand driver for ConnectX functions. It attaches to `mlx5_core` functions
//! and registers an RDMA device with `ib_core` for each.

mod ah;
mod caps;
mod counters;
mod cq;
mod dma_buf;
mod ib_device;
mod ib_module;
mod mad;
mod mr;
mod pd;
mod port_events;
mod qp;
mod srq;
mod user;

kernel::prelude::module! {
    type: ib_module::Mlx5Ib,
    name: "mlx5_ib",
    authors: ["rdma-rs developers"],
    description: "Mellanox ConnectX InfiniBand driver (Rust)",
    license: "GPL",
}
