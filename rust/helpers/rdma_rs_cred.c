// SPDX-License-Identifier: GPL-2.0

#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/sched.h>

/* The calling task's credentials (a macro in C). */
__rust_helper const struct cred *rust_helper_rdma_rs_current_cred(void)
{
	return current_cred();
}

/* A task's pid as the calling task's pid namespace sees it (0 once it has exited). */
__rust_helper pid_t rust_helper_rdma_rs_task_pid_vnr(struct task_struct *task)
{
	return task_pid_vnr(task);
}

/* Whether the calling task has user memory (a kernel thread has none). */
__rust_helper bool rust_helper_rdma_rs_current_has_mm(void)
{
	return current->mm != NULL;
}
