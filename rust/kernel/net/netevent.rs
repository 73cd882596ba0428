// SPDX-License-Identifier: GPL-2.0

//! Network event notifications (`register_netevent_notifier`): a subsystem learns when a
//! neighbour entry changes, to drop what it derived from the old one.
//!
//! C header: [`include/net/netevent.h`](srctree/include/net/netevent.h)

use crate::{bindings, error::to_result, prelude::*, types::Opaque};
use core::ffi::{c_int, c_void};

/// `NUD_VALID`: the neighbour states in which its link-layer address may be used.
pub(crate) const NUD_VALID: u8 = (bindings::NUD_PERMANENT
    | bindings::NUD_NOARP
    | bindings::NUD_REACHABLE
    | bindings::NUD_PROBE
    | bindings::NUD_STALE
    | bindings::NUD_DELAY) as u8;

/// What a subsystem does on network events.
pub trait NeteventHandler: Send + Sync {
    /// A neighbour entry was updated (`NETEVENT_NEIGH_UPDATE`); `valid` says whether it is now
    /// in a usable state (`NUD_VALID`). Runs in atomic context: must not sleep.
    fn neigh_update(&self, valid: bool);
}

/// A registered netevent notifier; unregistered when dropped.
///
/// # Invariants
///
/// `nb` is registered with the netevent notifier chain, with `call::<H>` as its callback, from
/// initialisation until drop.
#[pin_data(PinnedDrop)]
pub struct Registration<H: NeteventHandler> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    handler: H,
}

// SAFETY: The notifier block is only touched by the notifier chain, which serialises
// registration; `H` is `Send`.
unsafe impl<H: NeteventHandler> Send for Registration<H> {}

// SAFETY: `&Registration` only gives out `&H`, which is `Sync`.
unsafe impl<H: NeteventHandler> Sync for Registration<H> {}

impl<H: NeteventHandler + 'static> Registration<H> {
    /// Registers `handler` for network events.
    pub fn new(handler: H) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            handler,
            nb <- Opaque::try_ffi_init(|slot: *mut bindings::notifier_block| {
                // SAFETY: `slot` is valid for writes; an all-zero notifier block with only the
                // callback set is what the chain expects.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).notifier_call = Some(Self::call);
                }
                // SAFETY: `slot` is initialised and pinned inside `Self`, whose `PinnedDrop`
                // unregisters it; `handler` is initialised before `nb` (field order above), so
                // the callback never sees it uninitialised.
                // INVARIANT: registered on success.
                to_result(unsafe { bindings::register_netevent_notifier(slot) })
            }),
        })
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// The chain's callback.
    ///
    /// # Safety
    ///
    /// `nb` is the `nb` field of a live `Registration<H>`; for `NETEVENT_NEIGH_UPDATE`, `ctx`
    /// points to a valid `struct neighbour`.
    unsafe extern "C" fn call(
        nb: *mut bindings::notifier_block,
        event: usize,
        ctx: *mut c_void,
    ) -> c_int {
        // SAFETY: By the function's contract `nb` is the `nb` field of a `Registration<H>`
        // (`Opaque` is `repr(transparent)`), which the chain keeps registered only while it
        // lives.
        let this = unsafe {
            &*crate::container_of!(nb.cast::<Opaque<bindings::notifier_block>>(), Self, nb)
        };
        if event == bindings::netevent_notif_type_NETEVENT_NEIGH_UPDATE as usize && !ctx.is_null() {
            let neigh = ctx.cast::<bindings::neighbour>();
            // SAFETY: For this event the chain passes a valid neighbour (function contract);
            // `nud_state` is read once, as C's `READ_ONCE`.
            let state = unsafe { core::ptr::addr_of!((*neigh).nud_state).read_volatile() };
            this.handler.neigh_update(state & NUD_VALID != 0);
        }
        bindings::NOTIFY_DONE as c_int
    }
}

#[pinned_drop]
impl<H: NeteventHandler> PinnedDrop for Registration<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `nb` is registered by the type invariants and unregistered only here; the
        // chain waits for running callbacks (it is an atomic chain under RCU, and unregistering
        // synchronises it).
        unsafe { bindings::unregister_netevent_notifier(self.nb.get()) };
    }
}

#[macros::kunit_tests(rdma_rs_netevent)]
mod tests {
    use super::*;
    use crate::alloc::KBox;
    use crate::sync::atomic::{Atomic, Relaxed};

    struct Counter {
        valid: Atomic<u32>,
        invalid: Atomic<u32>,
    }

    impl NeteventHandler for Counter {
        fn neigh_update(&self, valid: bool) {
            if valid {
                self.valid.fetch_add(1, Relaxed);
            } else {
                self.invalid.fetch_add(1, Relaxed);
            }
        }
    }

    /// Delivers a neighbour update for a neighbour in `nud_state` to `reg`'s callback, as the
    /// chain would. (Not through the chain itself: other subscribers would look at a neighbour
    /// that is not real.)
    fn neigh_update(reg: &Registration<Counter>, nud_state: u8) -> Result {
        // SAFETY: An all-zero `struct neighbour` is a valid value for the one field the callback
        // reads; it is never linked into a table.
        let mut neigh: KBox<bindings::neighbour> =
            KBox::new(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;
        neigh.nud_state = nud_state;
        let p: *mut bindings::neighbour = &mut *neigh;
        // SAFETY: `reg.nb` is the `nb` field of a live registration and `p` a valid neighbour.
        unsafe {
            Registration::<Counter>::call(
                reg.nb.get(),
                bindings::netevent_notif_type_NETEVENT_NEIGH_UPDATE as usize,
                p.cast(),
            )
        };
        Ok(())
    }

    #[test]
    fn neighbour_updates_reach_the_handler() -> Result {
        let reg = KBox::pin_init(
            Registration::new(Counter {
                valid: Atomic::new(0),
                invalid: Atomic::new(0),
            }),
            GFP_KERNEL,
        )?;
        neigh_update(&reg, bindings::NUD_REACHABLE as u8)?;
        neigh_update(&reg, bindings::NUD_FAILED as u8)?;
        neigh_update(&reg, bindings::NUD_STALE as u8)?;
        assert_eq!(reg.handler().valid.load(Relaxed), 2);
        assert_eq!(reg.handler().invalid.load(Relaxed), 1);
        drop(reg);
        Ok(())
    }
}
