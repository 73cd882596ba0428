// SPDX-License-Identifier: GPL-2.0

//! What `ib_umad` owns while it is loaded: the client registrations, which hold the device
//! numbers and the `infiniband_mad` class (C's `ib_umad_init` and `ib_umad_cleanup`).

use crate::{client::Umad, port};
use ib_core::registry::ClientRegistration;
use kernel::prelude::*;

/// The loaded module. Fields drop in declaration order.
#[pin_data]
pub(crate) struct IbUmad {
    /// Unregistering removes every `umadN` and `issmN` before the class and the numbers go.
    #[pin]
    client: ClientRegistration<Umad>,
    /// Frees the port table's memory once the client is gone.
    _table: TableMemory,
}

/// Frees the port table's memory when dropped.
struct TableMemory;

impl Drop for TableMemory {
    fn drop(&mut self) {
        port::clear();
    }
}

impl kernel::InPlaceModule for IbUmad {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        // SAFETY: Called once, at load, before the client registers.
        unsafe { port::init() };
        try_pin_init!(Self {
            client <- ClientRegistration::new(Umad::new()?),
            _table: TableMemory,
        })
    }
}
