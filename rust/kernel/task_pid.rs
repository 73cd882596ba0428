// SPDX-License-Identifier: GPL-2.0

//! A task's pid as the calling task sees it (C's `task_pid_vnr`): what RDMA netlink reports as
//! the owner of a user object (`rdma res show` prints `pid N`).
//!
//! C header: [`include/linux/pid.h`](srctree/include/linux/pid.h)

use crate::{bindings, task::Task};

/// `task`'s pid in the calling task's pid namespace; 0 once `task` has exited (or when it is
/// not visible from there).
pub fn pid_vnr(task: &Task) -> i32 {
    // SAFETY: `task` is a valid task (a reference keeps it alive for the call).
    unsafe { bindings::rdma_rs_task_pid_vnr(task.as_ptr()) }
}
