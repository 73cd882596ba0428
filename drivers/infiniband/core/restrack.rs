// SPDX-License-Identifier: GPL-2.0

//! Resource tracking: how many verbs objects of each type live on a device, for netlink's
//! `RES_GET` summary (C's restrack, counts only so far).

use kernel::sync::atomic::{Atomic, Relaxed};

/// Tracked object types, in the order and with the names of C's `RES_GET` summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResType {
    /// Protection domains.
    Pd,
    /// Completion queues.
    Cq,
    /// Queue pairs.
    Qp,
    /// Connection manager ids.
    CmId,
    /// Memory regions.
    Mr,
    /// User contexts.
    Ctx,
    /// Shared receive queues.
    Srq,
}

impl ResType {
    /// Every type, in summary order.
    pub const ALL: [ResType; 7] = [
        ResType::Pd,
        ResType::Cq,
        ResType::Qp,
        ResType::CmId,
        ResType::Mr,
        ResType::Ctx,
        ResType::Srq,
    ];

    /// The name netlink reports (`RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME`).
    pub fn name(self) -> &'static CStr {
        match self {
            ResType::Pd => c"pd",
            ResType::Cq => c"cq",
            ResType::Qp => c"qp",
            ResType::CmId => c"cm_id",
            ResType::Mr => c"mr",
            ResType::Ctx => c"ctx",
            ResType::Srq => c"srq",
        }
    }
}

use kernel::prelude::CStr;

/// Live object counts of one device.
pub struct Restrack {
    counts: [Atomic<u64>; 7],
}

impl Restrack {
    /// All zero.
    pub(crate) fn new() -> Self {
        Self {
            counts: [const { Atomic::new(0) }; 7],
        }
    }

    /// An object of type `t` was created.
    pub(crate) fn add(&self, t: ResType) {
        self.counts[t as usize].fetch_add(1, Relaxed);
    }

    /// An object of type `t` was destroyed.
    pub(crate) fn remove(&self, t: ResType) {
        self.counts[t as usize].fetch_sub(1, Relaxed);
    }

    /// Live objects of type `t`.
    pub fn count(&self, t: ResType) -> u64 {
        self.counts[t as usize].load(Relaxed)
    }
}
