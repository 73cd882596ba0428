// SPDX-License-Identifier: GPL-2.0

//! What `ib_uverbs` owns while it is loaded: the client registration, which holds the device
//! numbers and the `infiniband_verbs` class (C's `ib_uverbs_init` and `ib_uverbs_cleanup`).

use crate::client::Uverbs;
use ib_core::device::registry::ClientRegistration;
use kernel::prelude::*;

/// The loaded module.
#[pin_data]
pub(crate) struct IbUverbs {
    /// Unregistering removes every `uverbsN` before the class and the numbers go.
    #[pin]
    client: ClientRegistration<Uverbs>,
}

impl kernel::InPlaceModule for IbUverbs {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            client <- ClientRegistration::new(Uverbs::new()?),
        })
    }
}
