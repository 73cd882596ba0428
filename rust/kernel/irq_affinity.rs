// SPDX-License-Identifier: GPL-2.0

//! Interrupt affinity hints, and the CPU choices drivers spread their vectors with.
//!
//! A multi-queue driver gives each completion vector a preferred CPU, as C's
//! `irq_set_affinity_and_hint(irq, cpumask_of(cpumask_local_spread(i, node)))`. The kernel keeps a
//! pointer to the hint's mask until the hint is cleared, so the mask must outlive it:
//! [`AffinityHint`] owns the mask and clears the hint before freeing it.
//!
//! C header: [`include/linux/interrupt.h`](srctree/include/linux/interrupt.h)

use crate::{
    alloc::{AllocError, Flags},
    bindings,
    cpu::CpuId,
    cpumask::{Cpumask, CpumaskVar},
    prelude::*,
};

/// The number of online CPUs (`num_online_cpus()`).
pub fn online_cpus() -> u32 {
    // SAFETY: `__cpu_online_mask` is a static cpumask, always initialised; reading its weight is
    // what `num_online_cpus()` does.
    let online = unsafe { Cpumask::from_raw(&raw const bindings::__cpu_online_mask) };
    online.weight()
}

/// The CPU that the `i`-th of a driver's vectors should prefer (`cpumask_local_spread(i,
/// NUMA_NO_NODE)`): online CPUs in turn, wrapping around.
pub fn local_spread_cpu(i: u32) -> Option<CpuId> {
    // SAFETY: Any index and node are valid; the function returns an online CPU.
    let cpu = unsafe { bindings::cpumask_local_spread(i, bindings::NUMA_NO_NODE) };
    CpuId::from_u32(cpu)
}

/// An interrupt's affinity hint (and affinity) set to one CPU; cleared on drop.
///
/// # Invariants
///
/// The kernel's hint for `irq` points to `*mask` from [`AffinityHint::new`] until `Drop`
/// clears it; `mask` is boxed, so its address does not change when `self` moves.
pub struct AffinityHint {
    irq: u32,
    mask: KBox<CpumaskVar>,
}

impl AffinityHint {
    /// Sets `irq`'s affinity and affinity hint to `cpu` (`irq_set_affinity_and_hint`). The kernel
    /// may refuse to move the interrupt (an error it returns is ignored, as C drivers do); the
    /// hint is set regardless.
    ///
    /// # Safety
    ///
    /// `irq` is an interrupt the caller has requested, and it stays requested until the returned
    /// value is dropped (drop it before freeing the interrupt).
    pub unsafe fn new(irq: u32, cpu: CpuId, flags: Flags) -> Result<Self, AllocError> {
        let mut mask = KBox::new(CpumaskVar::new_zero(flags)?, flags)?;
        mask.set(cpu);
        // SAFETY: `irq` is requested (the caller's contract); the mask is boxed and lives in the
        // returned value until `Drop` has cleared the hint.
        let _ = unsafe { bindings::__irq_apply_affinity_hint(irq, mask.as_raw(), true) };
        // INVARIANT: the hint points to `*mask` from here on.
        Ok(Self { irq, mask })
    }

    /// The CPUs of the hint.
    pub fn mask(&self) -> &Cpumask {
        &self.mask
    }
}

impl Drop for AffinityHint {
    fn drop(&mut self) {
        // SAFETY: `irq` is still requested (the contract of `new`); clearing the hint makes the
        // kernel forget the mask before the box is freed.
        unsafe { bindings::__irq_apply_affinity_hint(self.irq, core::ptr::null(), false) };
    }
}
