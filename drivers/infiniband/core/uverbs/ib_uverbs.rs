// SPDX-License-Identifier: GPL-2.0

//! `ib_uverbs`: RDMA verbs for user space. An ib_core client that gives every device whose
//! driver serves user verbs a character device `/dev/infiniband/uverbsN` in the
//! `infiniband_verbs` class, and answers netlink's `GET_CHARDEV` for it, so that libibverbs
//! finds the device as on the C stack. ib_core loads this module on demand (its alias
//! `rdma-client-uverbs`), as C's.

// The client and its devices (`client`, `device`, `chardevs`); the files user space opens
// (`file/`); write() (`write/`) and the ioctl (`ioctl/`) reaching the commands (`cmd/`); the
// ABI's structures (`uabi`); the kernel's attributes in that ABI for C modules (`marshall`).
mod chardevs;
mod client;
mod cmd;
mod device;
mod file;
mod ioctl;
mod marshall;
mod uabi;
mod uverbs_module;
mod write;

kernel::prelude::module! {
    type: uverbs_module::IbUverbs,
    name: "ib_uverbs",
    authors: ["rdma-rs developers"],
    description: "RDMA verbs for user space (Rust)",
    license: "GPL",
    alias: ["rdma-client-uverbs"],
}
