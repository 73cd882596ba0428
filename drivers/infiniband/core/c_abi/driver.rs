// SPDX-License-Identifier: GPL-2.0

//! C drivers on the core (docs/c-abi.md, step 4): the device structure a C driver allocates,
//! fills and registers (rxe, siw), the ops table the core drives it through, its ports' net
//! devices, the link types of `rdma link add`, and the helpers its verbs call.

/// The driver's device structure: allocation, ops, references.
pub(crate) mod alloc;
/// User data inside a bundle header, as C drivers' ops expect it.
pub(crate) mod bundle;
/// Completion queues.
pub(crate) mod cq;
/// Memory for consumers of software devices.
pub(crate) mod dma;
/// The speed of Ethernet ports.
pub(crate) mod eth_speed;
/// Counter sets of C drivers.
pub(crate) mod hw_stats;
/// Link types (`rdma link add`).
pub(crate) mod link;
/// Ports' net devices.
pub(crate) mod netdev;
/// The memory of the driver's verbs objects.
pub(crate) mod object;
/// The driver's ops table as the core's operations.
pub(crate) mod ops;
/// Protection domains, and the MRs and AHs in them.
pub(crate) mod pd;
/// Queue pairs and their work requests.
pub(crate) mod qp;
/// The event relay a driver's QP structure carries, and what it tells.
pub(crate) mod qp_relay;
/// Registration and unregistration.
pub(crate) mod registration;
/// The source GID attributes of addresses.
pub(crate) mod sgid;
/// User contexts.
pub(crate) mod ucontext;
/// User-verbs buffers.
pub(crate) mod udata;
/// User memory of memory regions.
pub(crate) mod umem;
/// User contexts' mmap entries.
pub(crate) mod user_mmap;
