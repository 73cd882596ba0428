// SPDX-License-Identifier: GPL-2.0

//! ib_core's C ABI: what C modules built against `include/rdma/*.h` link to (docs/c-abi.md).
//! The contract is `c_abi/imports.txt`; the functions are exported with C's names by
//! `c_abi/exports.h`.

/// Exports passing a call to a driver op no Rust driver has yet.
pub(crate) mod absent_ops;
/// IP addresses to device addresses (C's `addr.c`).
pub(crate) mod addr;
/// Socket address sizes by family.
pub(crate) mod addr_size;
/// Address handles, and C's address attributes.
pub(crate) mod ah;
/// The core's caches: P_Keys, port states.
pub(crate) mod cache;
/// C modules' clients: registration and client data.
pub(crate) mod clients;
/// C's `rdma_restrack_add` and `rdma_restrack_del`; rdma_cm's IDs listed for netlink.
pub(crate) mod cm_id;
/// Completion queues, and those the core polls.
pub(crate) mod cq;
/// The device's shared CQ pool (`ib_cq_pool_get`).
pub(crate) mod cq_pool;
/// The data path: the ops table's post, poll and arm entries.
pub(crate) mod data_path;
/// C drivers' devices on the core.
pub(crate) mod driver;
/// C modules' device event handlers.
pub(crate) mod events;
/// The C structure of a registered device.
pub(crate) mod face;
/// The iWARP entries of a face's ops table (refused until iWARP connections go through the core).
pub(crate) mod face_iw;
/// GIDs and address attributes.
pub(crate) mod gid;
/// The MAD agent API.
pub(crate) mod mad_agent;
/// The texts of events, completion statuses and GID types.
pub(crate) mod messages;
/// Memory regions.
pub(crate) mod mr;
/// Pools of fast-registration MRs on a QP.
pub(crate) mod mr_pool;
/// Objects as C holds them: the core's part, then the C structure.
pub(crate) mod object;
/// Protection domains.
pub(crate) mod pd;
/// C clients' files in the ports' sysfs directories.
pub(crate) mod port_groups;
/// Queue pairs, and their draining.
pub(crate) mod qp;
/// Device and port queries.
pub(crate) mod queries;
/// Static rates in Mb/s.
pub(crate) mod rates;
/// RDMA netlink for C modules' clients.
pub(crate) mod rdma_nl;
/// The RDMA read/write API (`rdma_rw_ctx_*`).
pub(crate) mod rdma_rw;
/// Resource tracking as C sees it.
pub(crate) mod restrack;
/// The SA client's C API: clients, path queries, path records packed and unpacked.
pub(crate) mod sa_client;
/// Multicast joins' C API.
pub(crate) mod sa_multicast;
/// Address attributes from SA path records.
pub(crate) mod sa_path;
/// Scatter lists to a fast-registration MR's pages (`ib_sg_to_pages`).
pub(crate) mod sg_to_pages;
/// Shared receive queues.
pub(crate) mod srq;
/// C's work requests and completions as the core's.
pub(crate) mod wr;
