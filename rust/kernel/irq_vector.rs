// SPDX-License-Identifier: GPL-2.0

//! Interrupt handlers on a bound PCI device's MSI-X vectors, each named per device and vector.
//!
//! 7.3's [`crate::irq::Registration`] takes a `&'static CStr` name and an
//! [`crate::irq::IrqRequest`] that borrows the device. A multi-queue driver names its vectors at
//! run time (C's `mlx5_comp<i>@pci:<function>`) and keeps some registrations in shared,
//! reference-counted state that outlives any borrow. This module gives it:
//!
//! - [`IrqVector`]: a vector of a [`BoundIrqVectors`] allocation, handed out by
//!   [`BoundIrqVectors::vector`] and valid under the allocation's safety contract (the vectors
//!   are freed only after every handler on them is unregistered and no [`IrqVector`] is used
//!   any more), so it carries no lifetime;
//! - [`Registration`] and [`ThreadedRegistration`]: a handler on a vector, which owns its name
//!   (the kernel keeps a pointer to it until `free_irq`; it is freed after);
//! - [`IrqVectorSlot`]: an atomic slot for an [`IrqVector`], for code that waits for a vector's
//!   handlers (`synchronize_irq`) without owning their registration.
//!
//! C header: [`include/linux/interrupt.h`](srctree/include/linux/interrupt.h)
//!
//! [`BoundIrqVectors`]: crate::pci_irq_vectors::BoundIrqVectors
//! [`BoundIrqVectors::vector`]: crate::pci_irq_vectors::BoundIrqVectors::vector

use crate::{
    bindings,
    error::to_result,
    irq::{Flags, Handler, IrqReturn, ThreadedHandler, ThreadedIrqReturn},
    prelude::*,
    str::CString,
    sync::atomic::{Atomic, Relaxed},
};
use core::marker::PhantomPinned;

/// An interrupt vector of a bound PCI device's MSI-X allocation.
///
/// # Invariants
///
/// `irq` is the (non-zero) Linux interrupt number of a vector of an allocation made by
/// [`crate::pci_irq_vectors::BoundIrqVectors::alloc_msix`], whose safety contract keeps the
/// allocation (and so the interrupt's descriptor) alive, and the device bound, for as long as
/// the value or any copy of it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqVector {
    irq: u32,
}

impl IrqVector {
    /// The vector whose interrupt is `irq`.
    ///
    /// # Safety
    ///
    /// `irq` is non-zero and the interrupt of an allocated vector of a bound device, which stay
    /// so for as long as the returned value (or a copy) is used.
    pub(crate) unsafe fn new(irq: u32) -> Self {
        // INVARIANT: The caller's contract.
        Self { irq }
    }

    /// The Linux interrupt number (for `/proc/interrupts`, affinity hints, messages).
    pub fn irq(&self) -> u32 {
        self.irq
    }

    /// Waits until no handler of the vector is running on another CPU, hard or threaded (C's
    /// `synchronize_irq`). Sleeps: call it from process context, never from the vector's own
    /// handler. Returns at once if no handler is registered.
    pub fn synchronize(&self) {
        // SAFETY: The interrupt's descriptor exists while `self` is used (type invariant);
        // waiting on a descriptor without an action is allowed and returns at once.
        unsafe { bindings::synchronize_irq(self.irq) };
    }
}

/// A slot that may hold an [`IrqVector`], set and read atomically: a table that dispatches from
/// several vectors notes each one here as it is set up, and waits for them all when an entry
/// leaves.
pub struct IrqVectorSlot {
    /// The vector's interrupt number; 0 for none (an [`IrqVector`] is never 0).
    irq: Atomic<u32>,
}

impl IrqVectorSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self {
            irq: Atomic::new(0),
        }
    }

    /// Puts `vector` in the slot (replacing what was there).
    pub fn set(&self, vector: IrqVector) {
        self.irq.store(vector.irq, Relaxed);
    }

    /// The vector in the slot, if any.
    pub fn get(&self) -> Option<IrqVector> {
        match self.irq.load(Relaxed) {
            0 => None,
            // SAFETY: Only `set` stores a non-zero value, the interrupt of an `IrqVector`, which
            // is valid while a copy of it is used, and a slot is a place where one is kept.
            irq => Some(unsafe { IrqVector::new(irq) }),
        }
    }

    /// Waits for the handlers of the vector in the slot ([`IrqVector::synchronize`]); nothing if
    /// the slot is empty.
    pub fn synchronize(&self) {
        if let Some(vector) = self.get() {
            vector.synchronize();
        }
    }
}

impl Default for IrqVectorSlot {
    fn default() -> Self {
        Self::new()
    }
}

/// A hard-IRQ handler registered on an [`IrqVector`] under a name the registration owns;
/// unregistered (`free_irq`) when dropped, and only then is the name freed.
///
/// # Invariants
///
/// The handler is registered with `request_irq` on `vector`, with `name` as its name and a
/// pointer to `Self` as its cookie, from the end of [`Registration::new`]'s initializer until
/// `drop`.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Handler> {
    vector: IrqVector,
    name: CString,
    #[pin]
    handler: T,
    /// The kernel holds a pointer to `Self`.
    #[pin]
    _pin: PhantomPinned,
}

impl<T: Handler> Registration<T> {
    /// Registers `handler` on `vector`, named `name` in `/proc/interrupts`.
    ///
    /// # Safety
    ///
    /// The returned registration is not forgotten (`mem::forget` or a leaked reference count):
    /// its `Drop` must run, to free the interrupt before the memory of `Self` goes.
    pub unsafe fn new(
        vector: IrqVector,
        flags: Flags,
        name: CString,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        // INVARIANT: Once the initializer completes, the handler is registered as described.
        try_pin_init!(&this in Self {
            handler <- handler,
            vector,
            name,
            _pin: PhantomPinned,
            _: {
                // SAFETY: The callback is a valid `irq_handler_t` for a cookie pointing to
                // `Self`; every field is initialized, so it may run at once. `name` is a field
                // of `Self`, which is pinned: it stays where it is until `drop` has freed the
                // interrupt. On success `drop` frees it before the memory goes (the caller does
                // not forget `Self`).
                to_result(unsafe {
                    bindings::request_irq(
                        vector.irq,
                        Some(handle_callback::<T>),
                        flags.into_inner(),
                        name.as_char_ptr(),
                        this.as_ptr().cast::<c_void>(),
                    )
                })?;
            },
        })
    }

    /// The handler.
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// The vector the handler is registered on.
    pub fn vector(&self) -> IrqVector {
        self.vector
    }

    /// The interrupt's name.
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// Waits until the handler is not running on another CPU ([`IrqVector::synchronize`]).
    pub fn synchronize(&self) {
        self.vector.synchronize();
    }
}

#[pinned_drop]
impl<T: Handler> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        let irq = self.vector.irq;
        // SAFETY: The handler is registered on `irq` with a pointer to `Self` as its cookie (type
        // invariant). `free_irq` waits for a handler in flight, so no reference to `self` is
        // left when it returns; the name is freed after, with the fields.
        unsafe {
            bindings::free_irq(
                irq,
                core::ptr::from_mut::<Self>(self.get_unchecked_mut()).cast::<c_void>(),
            )
        };
    }
}

/// # Safety
///
/// Only for use as the handler of [`Registration::new`], whose cookie `ptr` points to a live
/// `Registration<T>`.
unsafe extern "C" fn handle_callback<T: Handler>(
    _irq: c_int,
    ptr: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: `ptr` is the cookie of `Registration::new`, valid until `free_irq` returns, and
    // the registration is only read through shared references.
    let registration = unsafe { &*ptr.cast_const().cast::<Registration<T>>() };
    bindings::irqreturn_t(T::handle(&registration.handler) as c_uint)
}

/// A threaded handler registered on an [`IrqVector`] under a name the registration owns;
/// unregistered (`free_irq`, which also stops the thread) when dropped, and only then is the
/// name freed.
///
/// # Invariants
///
/// The handler is registered with `request_threaded_irq` on `vector`, with `name` as its name
/// and a pointer to `Self` as its cookie, from the end of [`ThreadedRegistration::new`]'s
/// initializer until `drop`.
#[pin_data(PinnedDrop)]
pub struct ThreadedRegistration<T: ThreadedHandler> {
    vector: IrqVector,
    name: CString,
    #[pin]
    handler: T,
    /// The kernel holds a pointer to `Self`.
    #[pin]
    _pin: PhantomPinned,
}

impl<T: ThreadedHandler> ThreadedRegistration<T> {
    /// Registers `handler` on `vector` (its hard part and its thread), named `name` in
    /// `/proc/interrupts`.
    ///
    /// # Safety
    ///
    /// The returned registration is not forgotten (`mem::forget` or a leaked reference count):
    /// its `Drop` must run, to free the interrupt before the memory of `Self` goes.
    pub unsafe fn new(
        vector: IrqVector,
        flags: Flags,
        name: CString,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        // INVARIANT: Once the initializer completes, the handler is registered as described.
        try_pin_init!(&this in Self {
            handler <- handler,
            vector,
            name,
            _pin: PhantomPinned,
            _: {
                // SAFETY: The callbacks are valid `irq_handler_t`s for a cookie pointing to
                // `Self`; every field is initialized, so they may run at once. `name` is a field
                // of `Self`, which is pinned: it stays where it is until `drop` has freed the
                // interrupt. On success `drop` frees it before the memory goes (the caller does
                // not forget `Self`).
                to_result(unsafe {
                    bindings::request_threaded_irq(
                        vector.irq,
                        Some(threaded_hard_callback::<T>),
                        Some(threaded_thread_callback::<T>),
                        flags.into_inner(),
                        name.as_char_ptr(),
                        this.as_ptr().cast::<c_void>(),
                    )
                })?;
            },
        })
    }

    /// The handler.
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// The vector the handler is registered on.
    pub fn vector(&self) -> IrqVector {
        self.vector
    }

    /// The interrupt's name.
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// Waits until neither part of the handler is running ([`IrqVector::synchronize`]).
    pub fn synchronize(&self) {
        self.vector.synchronize();
    }
}

#[pinned_drop]
impl<T: ThreadedHandler> PinnedDrop for ThreadedRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        let irq = self.vector.irq;
        // SAFETY: The handler is registered on `irq` with a pointer to `Self` as its cookie (type
        // invariant). `free_irq` waits for the hard part and the thread in flight, so no
        // reference to `self` is left when it returns; the name is freed after, with the fields.
        unsafe {
            bindings::free_irq(
                irq,
                core::ptr::from_mut::<Self>(self.get_unchecked_mut()).cast::<c_void>(),
            )
        };
    }
}

/// # Safety
///
/// Only for use as the hard handler of [`ThreadedRegistration::new`], whose cookie `ptr` points
/// to a live `ThreadedRegistration<T>`.
unsafe extern "C" fn threaded_hard_callback<T: ThreadedHandler>(
    _irq: c_int,
    ptr: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: `ptr` is the cookie of `ThreadedRegistration::new`, valid until `free_irq`
    // returns, and the registration is only read through shared references.
    let registration = unsafe { &*ptr.cast_const().cast::<ThreadedRegistration<T>>() };
    let ret: ThreadedIrqReturn = T::handle(&registration.handler);
    bindings::irqreturn_t(ret as c_uint)
}

/// # Safety
///
/// Only for use as the thread function of [`ThreadedRegistration::new`], whose cookie `ptr`
/// points to a live `ThreadedRegistration<T>`.
unsafe extern "C" fn threaded_thread_callback<T: ThreadedHandler>(
    _irq: c_int,
    ptr: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: `ptr` is the cookie of `ThreadedRegistration::new`, valid until `free_irq`
    // returns, and the registration is only read through shared references.
    let registration = unsafe { &*ptr.cast_const().cast::<ThreadedRegistration<T>>() };
    let ret: IrqReturn = T::handle_threaded(&registration.handler);
    bindings::irqreturn_t(ret as c_uint)
}

#[macros::kunit_tests(rdma_rs_irq_vector)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_slot_waits_for_nothing() {
        let slot = IrqVectorSlot::new();
        assert_eq!(slot.get(), None);
        slot.synchronize();
        assert_eq!(IrqVectorSlot::default().get(), None);
    }
}
