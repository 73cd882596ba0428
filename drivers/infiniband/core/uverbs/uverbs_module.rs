// SPDX-License-Identifier: GPL-2.0

//! What `ib_uverbs` owns while it is loaded: the client registration, which holds the device
//! numbers and the `infiniband_verbs` class (C's `ib_uverbs_init` and `ib_uverbs_cleanup`).

use crate::{client::Uverbs, device};
use ib_core::registry::ClientRegistration;
use kernel::prelude::*;

/// The loaded module. Fields drop in declaration order.
#[pin_data]
pub(crate) struct IbUverbs {
    /// Unregistering removes every `uverbsN` before the class and the numbers go.
    #[pin]
    client: ClientRegistration<Uverbs>,
    /// Frees the device table's memory once the client is gone.
    _table: TableMemory,
}

/// Frees the device table's memory when dropped.
struct TableMemory;

impl Drop for TableMemory {
    fn drop(&mut self) {
        device::clear();
    }
}

impl kernel::InPlaceModule for IbUverbs {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        // SAFETY: Called once, at load, before the client registers.
        unsafe { device::init() };
        try_pin_init!(Self {
            client <- ClientRegistration::new(Uverbs::new()?),
            _table: TableMemory,
        })
    }
}
