// SPDX-License-Identifier: GPL-2.0

//! Controlled Q_Keys (bit 31 set, as the GSI Q_Key 0x80010000): who may give one to a QP. C
//! lets a task with `CAP_NET_RAW` in the device's namespace, or everyone once netlink's
//! privileged-qkey mode is on (`rdma system set privileged-qkey on`). A leaf: nldev sets the
//! mode, the verbs paths ask.

use kernel::sync::atomic::{Atomic, Relaxed};

/// Netlink's privileged-qkey mode (C's `privileged_qkey`).
static PRIVILEGED_MODE: Atomic<bool> = Atomic::new(false);

/// Whether every user may use a controlled Q_Key (C's `rdma_nl_get_privileged_qkey`).
pub fn privileged_mode() -> bool {
    PRIVILEGED_MODE.load(Relaxed)
}

/// Sets the privileged-qkey mode (nldev's `SYS_SET`).
pub(crate) fn set_privileged_mode(on: bool) {
    PRIVILEGED_MODE.store(on, Relaxed);
}

/// Whether the calling task may give a QP a controlled Q_Key: the mode is on, or the task has
/// `CAP_NET_RAW` in the device's namespace, which for every device here is the initial one
/// (C's `rdma_nl_get_privileged_qkey() || rdma_uattrs_has_raw_cap()`).
pub fn may_use() -> bool {
    privileged_mode() || kernel::cred_current::capable(kernel::bindings::CAP_NET_RAW)
}
