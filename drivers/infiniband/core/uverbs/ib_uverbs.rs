// SPDX-License-Identifier: GPL-2.0

//! `ib_uverbs`: RDMA verbs for user space. An ib_core client that gives every device whose
//! driver serves user verbs a character device `/dev/infiniband/uverbsN` in the
//! `infiniband_verbs` class, and answers netlink's `GET_CHARDEV` for it, so that libibverbs
//! finds the device as on the C stack. ib_core loads this module on demand (its alias
//! `rdma-client-uverbs`), as C's.

// The device numbers and the class; one device per RDMA device; the files user space opens,
// their state and their event files (async events, completion channels).
mod chardevs;
mod client;
mod device;
mod event_file;
mod ids;
mod objects;
mod uabi;
mod ufile;
mod uobjects;

// Commands: what a handler gets, the device's commands, the write() interface; the ioctl
// interface, its tree of objects and methods, the device's methods.
mod bundle;
mod cmd_channel;
mod cmd_cq;
mod cmd_device;
mod cmd_mr;
mod cmd_pd;
mod cmd_qp;
mod cmd_srq;
mod ioctl;
mod ioctl_bundle;
mod ioctl_device;
mod uapi;
mod write_cmd;

// The file operations.
mod file;

// The loaded module.
mod uverbs_module;

kernel::prelude::module! {
    type: uverbs_module::IbUverbs,
    name: "ib_uverbs",
    authors: ["rdma-rs developers"],
    description: "RDMA verbs for user space (Rust)",
    license: "GPL",
    alias: ["rdma-client-uverbs"],
}
