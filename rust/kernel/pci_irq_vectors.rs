// SPDX-License-Identifier: GPL-2.0

//! MSI-X vectors that a PCI driver keeps for as long as its device is bound.
//!
//! [`crate::pci::IrqVectorRegistration`] hands out [`IrqRequest`]s that borrow the registration,
//! so a driver cannot keep both the vectors and the handlers registered on them in its device
//! data. [`BoundIrqVectors`] ties requests to the device's bound lifetime instead; the price is
//! a safety contract on drop order, which the driver's data layout keeps. The same contract
//! covers the [`IrqVector`]s it hands out, which carry no lifetime at all, for handlers kept in
//! shared state that no borrow can describe (see [`crate::irq_vector`]).
//!
//! C header: [`include/linux/pci.h`](srctree/include/linux/pci.h)

use crate::{
    bindings,
    device::{self, Bound},
    error::to_result,
    irq::IrqRequest,
    irq_vector::IrqVector,
    pci,
    prelude::*,
};

/// The `struct pci_dev` of `dev`.
fn raw(dev: &pci::Device<Bound>) -> *mut bindings::pci_dev {
    let d: &device::Device<Bound> = dev.as_ref();
    // SAFETY: The generic device of a `pci::Device` is the `dev` field of its `struct pci_dev`,
    // so stepping back by that field's offset stays inside the same allocation.
    unsafe { crate::container_of!(d.as_raw(), bindings::pci_dev, dev) }
}

/// MSI-X vectors allocated for a bound PCI device, freed on drop.
///
/// # Invariants
///
/// `dev` has an allocation of `len` MSI-X vectors, made by [`BoundIrqVectors::alloc_msix`] and
/// freed only by `Drop`.
pub struct BoundIrqVectors<'a> {
    dev: &'a pci::Device<Bound>,
    len: u32,
}

impl<'a> BoundIrqVectors<'a> {
    /// The size of `dev`'s MSI-X table (`pci_msix_vec_count`): how many vectors
    /// [`Self::alloc_msix`] could get at most; `EINVAL` if the function has no MSI-X capability.
    pub fn msix_table_size(dev: &pci::Device<Bound>) -> Result<u32> {
        // SAFETY: `raw(dev)` is a valid `struct pci_dev` (type invariant of `pci::Device`).
        let n = unsafe { bindings::pci_msix_vec_count(raw(dev)) };
        to_result(n)?;
        // The count is not negative here (checked above).
        Ok(n as u32)
    }

    /// Allocates between `min` and `max` MSI-X vectors for `dev`.
    ///
    /// # Safety
    ///
    /// Every IRQ handler registered on a request from [`Self::request`] or on a vector from
    /// [`Self::vector`] must be unregistered before the returned value is dropped (for example:
    /// keep the registrations in fields declared before this one in the same structure, so they
    /// drop first), and no [`IrqVector`] from [`Self::vector`] (or a copy) may be used after it
    /// is dropped.
    pub unsafe fn alloc_msix(dev: &'a pci::Device<Bound>, min: u32, max: u32) -> Result<Self> {
        // SAFETY: `raw(dev)` is a valid `struct pci_dev` (type invariant of `pci::Device`);
        // `pci_alloc_irq_vectors` checks the other arguments.
        let ret =
            unsafe { bindings::pci_alloc_irq_vectors(raw(dev), min, max, bindings::PCI_IRQ_MSIX) };
        to_result(ret)?;
        // INVARIANT: `pci_alloc_irq_vectors` allocated `ret` (> 0) vectors.
        Ok(Self {
            dev,
            len: ret as u32,
        })
    }

    /// Number of vectors allocated.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether no vector was allocated (never true for a successful allocation).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A request for vector `index`, valid for the device's bound lifetime; `EINVAL` when the
    /// index is out of range.
    pub fn request(&self, index: u32) -> Result<IrqRequest<'a>> {
        if index >= self.len {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is a valid bound PCI device with vectors allocated (type invariant).
        let irq = unsafe { bindings::pci_irq_vector(raw(self.dev), index) };
        if irq < 0 {
            return Err(Error::from_errno(irq));
        }
        // SAFETY: `irq` is an interrupt of `dev`, resolved from its vector allocation. The
        // caller of `alloc_msix` keeps handlers registered on it from outliving the allocation.
        Ok(unsafe { IrqRequest::new(self.dev.as_ref(), irq as u32) })
    }

    /// Vector `index`, for handlers and waits that no borrow of the device can describe (kept
    /// in reference-counted state); `EINVAL` when the index is out of range. The contract of
    /// [`Self::alloc_msix`] says how long it may be used.
    pub fn vector(&self, index: u32) -> Result<IrqVector> {
        if index >= self.len {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is a valid bound PCI device with vectors allocated (type invariant).
        let irq = unsafe { bindings::pci_irq_vector(raw(self.dev), index) };
        if irq <= 0 {
            return Err(if irq < 0 {
                Error::from_errno(irq)
            } else {
                EINVAL
            });
        }
        // SAFETY: `irq` is a non-zero interrupt of an allocated vector of `dev`, which is bound
        // while the allocation exists (it borrows the bound device). The caller of `alloc_msix`
        // keeps the allocation until no `IrqVector` of it is used any more.
        Ok(unsafe { IrqVector::new(irq as u32) })
    }
}

impl Drop for BoundIrqVectors<'_> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the vectors were allocated for `dev` and are freed only
        // here; the contract of `alloc_msix` says no handler is registered on them any more.
        unsafe { bindings::pci_free_irq_vectors(raw(self.dev)) };
    }
}
