// SPDX-License-Identifier: GPL-2.0

//! ib_core's C ABI: what C modules built against `include/rdma/*.h` link to (docs/c-abi.md).
//! The contract is `c_abi/imports.txt`; the functions are exported with C's names by
//! `c_abi/exports.h`.

/// Socket address sizes by family.
pub(crate) mod addr_size;
/// The core's caches: P_Keys, port states.
pub(crate) mod cache;
/// C modules' clients: registration and client data.
pub(crate) mod clients;
/// C modules' device event handlers.
pub(crate) mod events;
/// The C structure of a registered device.
pub(crate) mod face;
/// The texts of events, completion statuses and GID types.
pub(crate) mod messages;
/// Device and port queries.
pub(crate) mod queries;
