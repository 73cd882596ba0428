// SPDX-License-Identifier: GPL-2.0

//! User verbs in the driver (C's `mlx5_ib` user paths): the driver data of user contexts, CQs,
//! QPs and SRQs in `rdma/mlx5-abi.h`'s structures ([`uabi`]), their user-memory rings
//! ([`umem`]), the UAR and doorbell pages user space maps ([`mmap`]) and mlx5's own ioctl
//! methods ([`methods`]).

pub(crate) mod cq;
pub(crate) mod methods;
pub(crate) mod mmap;
pub(crate) mod qp;
pub(crate) mod uabi;
pub(crate) mod ucontext;
pub(crate) mod umem;
