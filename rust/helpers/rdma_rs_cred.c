// SPDX-License-Identifier: GPL-2.0

#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>

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

/*
 * Charges `npages` pinned pages to the calling process's `pinned_vm`, as C's `ib_umem_get`:
 * -ENOMEM past RLIMIT_MEMLOCK for a task without CAP_IPC_LOCK (nothing charged then). On
 * success the process's mm is returned grabbed (mmgrab), for the uncharge.
 */
__rust_helper struct mm_struct *rust_helper_rdma_rs_pinned_vm_charge(unsigned long npages,
								     int *err)
{
	struct mm_struct *mm = current->mm;
	unsigned long lock_limit;
	s64 new_pinned;

	if (!mm) {
		*err = -EFAULT;
		return NULL;
	}
	lock_limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	new_pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if (new_pinned > lock_limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		*err = -ENOMEM;
		return NULL;
	}
	mmgrab(mm);
	*err = 0;
	return mm;
}

/* Gives back a charge of `rust_helper_rdma_rs_pinned_vm_charge` and drops its mm. */
__rust_helper void rust_helper_rdma_rs_pinned_vm_uncharge(struct mm_struct *mm,
							  unsigned long npages)
{
	atomic64_sub(npages, &mm->pinned_vm);
	mmdrop(mm);
}
