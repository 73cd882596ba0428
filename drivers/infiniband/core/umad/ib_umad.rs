// SPDX-License-Identifier: GPL-2.0

//! `ib_umad`: management datagrams for user space. An ib_core client that gives every port with
//! MAD services a character device `/dev/infiniband/umadN` (and `issmN` where the port takes
//! subnet management) in the `infiniband_mad` class, through which libibumad registers agents
//! and reads and writes MADs with C's framing and errnos (C's `user_mad.c`).

// The user header and the wire rules; device numbers and the port table; one port's devices;
// the files and their agents.
mod chardevs;
mod client;
mod file;
mod hdr;
mod port;

// The loaded module.
mod umad_module;

kernel::prelude::module! {
    type: umad_module::IbUmad,
    name: "ib_umad",
    authors: ["rdma-rs developers"],
    description: "InfiniBand userspace MAD packet access (Rust)",
    license: "GPL",
    alias: ["rdma-client-umad", "rdma-client-issm"],
}
