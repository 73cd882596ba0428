// SPDX-License-Identifier: GPL-2.0

//! The verbs objects a file holds besides PDs (C's `ib_ucq_object`, `ib_umr`, `ib_uqp_object`,
//! `ib_usrq_object`): the object and what its file keeps with it (the events still queued for
//! it, the files they go to). The commands that make and use them are `cmd_*.rs`.

use crate::file::event_file::{EventCounts, EventFile};
use ib_core::user::ucontext::{UserCq, UserMr, UserQp, UserSrq};
use kernel::{prelude::*, sync::Arc};

/// A CQ of a file (C's `ib_ucq_object`).
pub(crate) struct UCq {
    /// Destroyed first (in `Drop`), then its unread events are dropped.
    pub(crate) cq: Option<UserCq>,
    pub(crate) counts: Arc<EventCounts>,
    pub(crate) channel: Option<Arc<EventFile>>,
    pub(crate) async_file: Option<Arc<EventFile>>,
}

impl UCq {
    /// The CQ (`EINVAL` while it is being destroyed).
    pub(crate) fn cq(&self) -> Result<&UserCq> {
        self.cq.as_ref().ok_or(EINVAL)
    }

    /// QPs using it (it cannot be destroyed while there are any).
    pub(crate) fn users(&self) -> u32 {
        self.cq.as_ref().map_or(0, |c| c.users())
    }
}

impl Drop for UCq {
    /// C's `uverbs_free_cq`: the CQ goes, then its events not read yet.
    fn drop(&mut self) {
        drop(self.cq.take());
        for f in [&self.channel, &self.async_file].into_iter().flatten() {
            f.forget(&self.counts);
        }
    }
}

/// An MR of a file (C's `ib_umr` uobject): the MR and what it was registered with, which a
/// re-registration keeps what it does not change of.
pub(crate) struct UMr {
    /// The MR (dropping it deregisters it).
    pub(crate) mr: UserMr,
    /// The handle of its PD in the file.
    pub(crate) pd: u32,
    pub(crate) start: u64,
    pub(crate) length: u64,
    pub(crate) iova: u64,
    /// Its `IB_ACCESS_*` bits as user space gave them.
    pub(crate) access: u32,
}

/// A QP of a file (C's `ib_uqp_object`).
pub(crate) struct UQp {
    /// Destroyed first (in `Drop`), then its unread events are dropped.
    pub(crate) qp: Option<UserQp>,
    pub(crate) counts: Arc<EventCounts>,
    pub(crate) async_file: Option<Arc<EventFile>>,
    pub(crate) sq_sig_all: bool,
}

impl Drop for UQp {
    fn drop(&mut self) {
        drop(self.qp.take());
        if let Some(f) = &self.async_file {
            f.forget(&self.counts);
        }
    }
}

/// An SRQ of a file (C's `ib_usrq_object`).
pub(crate) struct USrq {
    /// Destroyed first (in `Drop`), then its unread events are dropped.
    pub(crate) srq: Option<UserSrq>,
    pub(crate) counts: Arc<EventCounts>,
    pub(crate) async_file: Option<Arc<EventFile>>,
}

impl USrq {
    /// The SRQ (`EINVAL` while it is being destroyed).
    pub(crate) fn srq(&self) -> Result<&UserSrq> {
        self.srq.as_ref().ok_or(EINVAL)
    }

    /// QPs receiving from it (it cannot be destroyed while there are any).
    pub(crate) fn users(&self) -> u32 {
        self.srq.as_ref().map_or(0, |s| s.users())
    }
}

impl Drop for USrq {
    /// C's `uverbs_free_srq`: the SRQ goes, then its events not read yet.
    fn drop(&mut self) {
        drop(self.srq.take());
        if let Some(f) = &self.async_file {
            f.forget(&self.counts);
        }
    }
}
