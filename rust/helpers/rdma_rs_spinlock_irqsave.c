// SPDX-License-Identifier: GPL-2.0

#include <linux/spinlock.h>

/*
 * spin_lock_irqsave and its kin are macros in C: the saved interrupt state goes back to the
 * caller, who gives it to the unlock.
 */
__rust_helper unsigned long rust_helper_rdma_rs_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

__rust_helper void rust_helper_rdma_rs_spin_unlock_irqrestore(spinlock_t *lock,
							       unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

__rust_helper int rust_helper_rdma_rs_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	return spin_trylock_irqsave(lock, *flags);
}
