// SPDX-License-Identifier: GPL-2.0

//! `mlx5_ib`: the InfiniBand driver for ConnectX functions. It attaches to `mlx5_core` functions
//! and registers an RDMA device with `ib_core` for each.

mod ah;
mod caps;
mod counters;
mod cq;
mod cqe;
mod dma_buf;
mod ib_device;
mod ib_module;
mod mad;
mod mmap;
mod mr;
mod pd;
mod port_events;
mod qp;
mod qp_rings;
mod srq;
mod uabi;
mod ucontext;
mod umem;
mod user_cq;
mod user_qp;
mod user_srq;
mod wq_size;
mod wqe;

kernel::prelude::module! {
    type: ib_module::Mlx5Ib,
    name: "mlx5_ib",
    authors: ["rdma-rs developers"],
    description: "Mellanox ConnectX InfiniBand driver (Rust)",
    license: "GPL",
}
