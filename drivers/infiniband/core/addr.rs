// SPDX-License-Identifier: GPL-2.0

//! Address resolution state (C's `addr.c`). So far only its neighbour watch exists: like C's
//! `netevent_callback`, a neighbour entry that becomes usable invalidates what was derived from
//! neighbours before, here by moving a generation number that cached resolutions are compared
//! against (address resolution itself comes with the connection manager).

use kernel::{
    net::netevent::{self, NeteventHandler},
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

/// Moves each time a neighbour entry becomes usable.
static NEIGH_GENERATION: Atomic<u64> = Atomic::new(0);

/// The current neighbour generation: a resolution made under an older one is stale.
pub fn neighbour_generation() -> u64 {
    NEIGH_GENERATION.load(Relaxed)
}

/// ib_core's netevent handler.
pub(crate) struct NeighbourWatch;

impl NeteventHandler for NeighbourWatch {
    fn neigh_update(&self, valid: bool) {
        // As C: only a neighbour that is now valid can complete (or change) a resolution.
        if valid {
            NEIGH_GENERATION.fetch_add(1, Relaxed);
        }
    }
}

/// The registration ib_core keeps while loaded.
pub(crate) type Registration = netevent::Registration<NeighbourWatch>;

/// Registers the neighbour watch.
pub(crate) fn register() -> impl PinInit<Registration, Error> {
    Registration::new(NeighbourWatch)
}

#[kernel::macros::kunit_tests(rdma_rs_ib_addr)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_neighbour_update_invalidates_cached_state() {
        let before = neighbour_generation();
        NeighbourWatch.neigh_update(false);
        assert_eq!(neighbour_generation(), before);
        NeighbourWatch.neigh_update(true);
        assert!(neighbour_generation() > before);
    }
}
