// SPDX-License-Identifier: GPL-2.0

//! Completion EQs (C's `mlx5_comp_eqn_get` and friends in `eq.c`, `pci_irq.c`): one EQ per
//! completion vector, each on its own MSI-X vector after the control vector (vector `i + 1`
//! for completion vector `i`), created on first use as the 7.3 C driver does (so the bring-up
//! command trace is unchanged), destroyed at teardown in reverse order.
//!
//! Each vector's interrupt is requested when its EQ is created, named as C names it in
//! `/proc/interrupts` (`mlx5_comp<i>@pci:<function>`), with C's affinity (an affinity hint and
//! mask of the single CPU `cpumask_local_spread(i)`). Its handler runs in hard-IRQ context: it
//! takes at most 128 EQEs per pass (C's `MLX5_EQ_POLLING_BUDGET`), passes each CQ number to the
//! CQ table, and always re-arms the EQ. It takes only the EQ's own spinlock and the CQ table's,
//! never a mutex or a lock held across a driver's probe.

use crate::cmd::queue::CmdQueue;
use crate::eq::cq_table::CqTable;
use crate::eq::{EventQueue, LOG_COMP_ENTRIES, POLL_BUDGET};
use crate::init_segment::SharedBar;
use kernel::{
    device::{self, Bound},
    irq::{self, IrqReturn},
    irq_affinity::{self, AffinityHint},
    irq_vector::{IrqVector, Registration},
    new_mutex, new_spinlock_irq,
    prelude::*,
    str::CString,
    sync::{aref::ARef, Arc, Mutex, SpinLockIrq},
};

/// EQs the C driver keeps for itself besides completion EQs (C's `MLX5_MAX_ASYNC_EQS`).
pub(crate) const MAX_ASYNC_EQS: u32 = 4;

/// MSI-X vectors to ask for (C's `mlx5_irq_table_create` for a PCI function): one per port and
/// online CPU plus the control vector, at most the device's EQs and the function's MSI-X table.
pub(crate) fn vectors_wanted(ports: u32, cpus: u32, max_eqs: u32, msix: u32) -> u32 {
    ports
        .saturating_mul(cpus)
        .saturating_add(1)
        .min(max_eqs)
        .min(msix)
        .max(1)
}

/// Completion vectors with `granted` MSI-X vectors (C's `get_num_eqs`: the vectors after the
/// control one, at most the device's EQs less the async ones). With a single vector there is
/// none: completions would share the control vector, which this driver does not do.
pub(crate) fn comp_vectors_for(granted: u32, max_eqs: u32) -> u32 {
    granted
        .saturating_sub(1)
        .min(max_eqs.saturating_sub(MAX_ASYNC_EQS))
}

/// The device's EQ count (C's `mlx5_max_eq_cap_get` without the second capability page).
pub(crate) fn max_eqs(max_num_eqs: u64, log_max_eq: u64) -> u32 {
    if max_num_eqs != 0 {
        max_num_eqs as u32
    } else {
        1u32 << log_max_eq.min(24)
    }
}

/// A completion vector's hard-IRQ handler.
#[pin_data]
struct CompIrq {
    /// The EQ, put in once created; taken out (under the lock) before it is destroyed.
    #[pin]
    eq: SpinLockIrq<Option<EventQueue>>,
    bar: SharedBar,
    table: Arc<CqTable>,
}

impl irq::Handler for CompIrq {
    fn handle(&self) -> IrqReturn {
        let mut guard = self.eq.lock();
        let Some(eq) = (*guard).as_mut() else {
            return IrqReturn::None;
        };
        // A pass takes at most the budget and always re-arms (`poll_with`); what is left makes
        // the device raise the vector again. The BAR access is an RCU read section: no sleep.
        let _ = self.bar.try_access_with(|bar| {
            eq.poll_with(bar, POLL_BUDGET, |eqe| {
                self.table.completion(eqe.comp_cqn() as u32);
            })
        });
        IrqReturn::Handled
    }
}

/// A created completion vector. The fields drop in this order: the affinity hint (cleared
/// while the interrupt is still requested), then the interrupt registration (which frees the
/// interrupt, then its name).
struct CompEq {
    _hint: Option<AffinityHint>,
    irq: Pin<KBox<Registration<CompIrq>>>,
    eqn: u8,
}

/// What the vectors' lock protects.
struct CompState {
    /// Set at teardown: no vector is created any more.
    closed: bool,
    /// The MSI-X vectors, by completion vector.
    vectors: KVec<IrqVector>,
    /// The created vectors.
    eqs: KVec<Option<CompEq>>,
}

/// A function's completion vectors.
#[pin_data]
pub(crate) struct CompEqs {
    dev: ARef<device::Device>,
    cmd: Arc<CmdQueue>,
    bar: SharedBar,
    uar_index: u32,
    table: Arc<CqTable>,
    count: u32,
    #[pin]
    state: Mutex<CompState>,
}

impl CompEqs {
    /// The completion vectors of a function on the MSI-X `vectors` (vector 1 and up); EQs ring
    /// `uar_index`'s doorbells and dispatch to `table`.
    ///
    /// The vectors are used until [`Self::tear_down`], which frees every interrupt requested on
    /// them: the owner of their allocation runs it before freeing them (the contract of
    /// `BoundIrqVectors::alloc_msix`).
    pub(crate) fn new(
        dev: ARef<device::Device>,
        cmd: Arc<CmdQueue>,
        bar: SharedBar,
        uar_index: u32,
        table: Arc<CqTable>,
        vectors: KVec<IrqVector>,
    ) -> Result<Arc<Self>> {
        let count = u32::try_from(vectors.len()).map_err(|_| EINVAL)?;
        let mut eqs = KVec::with_capacity(vectors.len(), GFP_KERNEL)?;
        for _ in 0..count {
            eqs.push(None, GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Self {
                dev,
                cmd,
                bar,
                uar_index,
                table,
                count,
                state <- new_mutex!(CompState {
                    closed: false,
                    vectors,
                    eqs,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Number of completion vectors.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The EQ number of completion vector `vector`, creating the vector's interrupt and EQ on
    /// first use (`EINVAL` past the count, `ENODEV` after teardown). `dev` is the function's
    /// bound device.
    pub(crate) fn eqn(&self, dev: &device::Device<Bound>, vector: u32) -> Result<u32> {
        if vector >= self.count {
            return Err(EINVAL);
        }
        let i = vector as usize;
        let mut st = self.state.lock();
        if st.closed {
            return Err(ENODEV);
        }
        if let Some(Some(eq)) = st.eqs.get(i) {
            return Ok(u32::from(eq.eqn));
        }
        let irq_vector = *st.vectors.get(i).ok_or(EINVAL)?;
        let eq = self.create(dev, vector, irq_vector)?;
        let eqn = eq.eqn;
        self.table.set_vector(i, irq_vector);
        if let Some(slot) = st.eqs.get_mut(i) {
            *slot = Some(eq);
        }
        dev_dbg!(dev, "allocated completion EQN {eqn}\n");
        Ok(u32::from(eqn))
    }

    /// Requests the vector's interrupt, then creates its EQ and arms it.
    fn create(
        &self,
        dev: &device::Device<Bound>,
        vector: u32,
        irq_vector: IrqVector,
    ) -> Result<CompEq> {
        let name = CString::try_from_fmt(fmt!("mlx5_comp{}@pci:{}", vector, dev.name()))?;
        let (bar, table) = (self.bar.clone(), self.table.clone());
        let handler = try_pin_init!(CompIrq {
            eq <- new_spinlock_irq!(None),
            bar,
            table,
        }? Error);
        let reg = KBox::pin_init(
            // SAFETY: The registration is kept in `CompEq::irq` and dropped, never forgotten.
            unsafe { Registration::new(irq_vector, irq::Flags::TRIGGER_NONE, name, handler) },
            GFP_KERNEL,
        )?;
        // C's affinity: the single CPU `cpumask_local_spread(vector)`.
        let hint = match irq_affinity::local_spread_cpu(vector) {
            // SAFETY: The vector's interrupt is requested by `reg`, which outlives the hint: on
            // the error returns below the hint (declared later) drops first, and in `CompEq` its
            // field is declared before the registration's.
            Some(cpu) => Some(unsafe { AffinityHint::new(reg.vector().irq(), cpu, GFP_KERNEL)? }),
            None => None,
        };
        let eq = self.bar.access_with(dev, |bar| {
            EventQueue::create_sized(
                &self.cmd,
                dev,
                bar,
                self.uar_index,
                u16::try_from(vector + 1).map_err(|_| EINVAL)?,
                // As C: no event type bits; the device posts a CQ's completions to the EQ its
                // context names.
                0,
                // C's `MLX5_COMP_EQ_SIZE`.
                LOG_COMP_ENTRIES,
                "comp",
            )
        });
        let eq = eq.and_then(|r| r)?;
        let eqn = eq.eqn();
        *reg.handler().eq.lock() = Some(eq);
        // Arms the EQ (a first pass that finds nothing), with the handler's lock, as the
        // interrupt would.
        let _ = irq::Handler::handle(reg.handler());
        Ok(CompEq {
            _hint: hint,
            irq: reg,
            eqn,
        })
    }

    /// Destroys the created vectors in reverse vector order (C's `destroy_comp_eqs`): each EQ
    /// leaves its handler, DESTROY_EQ, the affinity hint is cleared, the interrupt freed. No
    /// vector is created afterwards.
    pub(crate) fn tear_down(&self, dev: &device::Device<Bound>) {
        let mut st = self.state.lock();
        st.closed = true;
        // No vector is used after this (the owner of their allocation may free them next).
        st.vectors.clear();
        while let Some(slot) = st.eqs.pop() {
            let Some(ceq) = slot else {
                continue;
            };
            let eq = ceq.irq.handler().eq.lock().take();
            if let Some(eq) = eq {
                let destroyed = self
                    .bar
                    .access_with(dev, |bar| eq.destroy(&self.cmd, dev, bar));
                if destroyed.is_err() {
                    dev_err!(dev, "BAR0 gone; completion EQ {} not destroyed\n", ceq.eqn);
                }
            }
            // The affinity hint is cleared, then the interrupt freed.
            drop(ceq);
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_comp_vectors)]
mod tests {
    use super::*;

    #[test]
    fn vector_counts_follow_c() {
        // cx-model on the 2-CPU guest: 1 port, log_max_eq 4 (16 EQs), 64 MSI-X entries.
        let eqs = max_eqs(0, 4);
        assert_eq!(eqs, 16);
        assert_eq!(vectors_wanted(1, 2, eqs, 64), 3);
        assert_eq!(comp_vectors_for(3, eqs), 2);
        // `max_num_eqs` wins over `log_max_eq` when set.
        assert_eq!(max_eqs(7, 4), 7);
        // Limited by the device's EQs (less the async ones) and by the MSI-X table.
        assert_eq!(vectors_wanted(2, 64, 16, 2048), 16);
        assert_eq!(comp_vectors_for(16, 16), 12);
        assert_eq!(vectors_wanted(1, 64, 256, 8), 8);
        assert_eq!(comp_vectors_for(8, 256), 7);
        // A single vector granted: no completion vector of its own.
        assert_eq!(comp_vectors_for(1, 16), 0);
        assert_eq!(vectors_wanted(0, 0, 0, 0), 1);
    }
}
