// SPDX-License-Identifier: GPL-2.0

//! The commands and methods, object by object (C's `uverbs_cmd.c` and `uverbs_std_types_*.c`):
//! each handler gets a write() or an ioctl bundle and answers in the ABI's structures.

pub(crate) mod ah;
pub(crate) mod channel;
pub(crate) mod cq;
pub(crate) mod data_path;
pub(crate) mod device;
pub(crate) mod mr;
pub(crate) mod pd;
pub(crate) mod qp;
pub(crate) mod srq;
