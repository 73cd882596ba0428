// SPDX-License-Identifier: GPL-2.0

//! What `ib_umad` owns while it is loaded: the client registration, which holds the device
//! numbers and the `infiniband_mad` class (C's `ib_umad_init` and `ib_umad_cleanup`).

use crate::client::Umad;
use ib_core::device::registry::ClientRegistration;
use kernel::prelude::*;

/// The loaded module.
#[pin_data]
pub(crate) struct IbUmad {
    /// Unregistering removes every `umadN` and `issmN` before the class and the numbers go.
    #[pin]
    client: ClientRegistration<Umad>,
}

impl kernel::InPlaceModule for IbUmad {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            client <- ClientRegistration::new(Umad::new()?),
        })
    }
}
