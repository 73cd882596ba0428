// SPDX-License-Identifier: GPL-2.0

//! A function's event chain (C's `mlx5_events.nh` with `mlx5_notifier_register`): the events
//! port changes and the health poll raise ([`Event`]), the drivers' handlers of them
//! ([`EventNotifier`]), and their registrations. The control vector's interrupt thread calls
//! notifiers under a spinlock that is only ever held to change the list or to call them, never
//! across a probe or a driver's other callbacks.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
};

/// Events passed to notifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port went down.
    PortDown(u8),
    /// The port became active.
    PortActive(u8),
    /// Another port change (LID, P_Key, GUID, client re-register, initialized): port and the
    /// device's sub-type.
    PortChange(u8, u8),
    /// The device entered the internal-error state (a fatal health syndrome, or the device gone
    /// from the bus): commands fail from now on (C's `MLX5_DEV_EVENT_SYS_ERROR`). Sent once,
    /// from a work item after the health poll found the error.
    SysError,
}

impl Event {
    /// The event for a PORT_CHANGE event queue entry.
    pub(crate) fn port_change(port: u8, sub_type: u8) -> Self {
        match sub_type {
            1 => Event::PortDown(port),
            4 => Event::PortActive(port),
            s => Event::PortChange(port, s),
        }
    }
}

/// A driver's handler of a function's events (C's `struct notifier_block` on the function's
/// event chain).
pub trait EventNotifier: Send + Sync {
    /// Something happened on the function. Called from the control vector's interrupt thread
    /// with the function's notifier lock (a spinlock) held: it must not sleep (no firmware
    /// command, no mutex), as C's atomic notifier chain; defer such work to a work item.
    fn notify(&self, event: Event);
}

/// The notifiers registered on one function.
struct NotifierList {
    /// Key of the next registration.
    next_key: u64,
    /// Registrations, oldest first.
    entries: KVec<(u64, Arc<dyn EventNotifier>)>,
}

/// A function's event notifiers (C's `mlx5_events.nh`), shared between the function (whose
/// interrupt thread calls them) and its auxiliary device's data (through which drivers register).
#[pin_data]
pub(crate) struct Notifiers {
    #[pin]
    list: SpinLock<NotifierList>,
}

impl Notifiers {
    /// An empty chain.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                list <- new_spinlock!(NotifierList {
                    next_key: 0,
                    entries: KVec::new(),
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds `notifier` to the chain until the returned registration is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        notifier: Arc<dyn EventNotifier>,
    ) -> Result<NotifierRegistration> {
        let mut list = self.list.lock();
        let key = list.next_key;
        // Under a spinlock: no sleeping allocation.
        list.entries.push((key, notifier), GFP_ATOMIC)?;
        list.next_key = key.wrapping_add(1);
        Ok(NotifierRegistration {
            notifiers: self.clone(),
            key,
        })
    }

    /// Calls every notifier with `event`, oldest registration first.
    pub(crate) fn call(&self, event: Event) {
        let list = self.list.lock();
        for (_, n) in list.entries.iter() {
            n.notify(event);
        }
    }
}

/// A notifier's registration: the notifier gets events until this is dropped. Once the drop
/// returns, the notifier is not running and is not called again.
pub struct NotifierRegistration {
    notifiers: Arc<Notifiers>,
    key: u64,
}

impl Drop for NotifierRegistration {
    fn drop(&mut self) {
        let removed = {
            let mut list = self.notifiers.list.lock();
            match list.entries.iter().position(|(k, _)| *k == self.key) {
                Some(i) => list.entries.remove(i).ok(),
                None => None,
            }
        };
        // The notifier's last reference may go here, with the lock released.
        drop(removed);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_notifiers)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};

    /// Counts the events it gets for port 1.
    struct Counter(Atomic<u32>);

    impl EventNotifier for Counter {
        fn notify(&self, event: Event) {
            if let Event::PortDown(1) | Event::PortActive(1) | Event::PortChange(1, _) = event {
                self.0.fetch_add(1, Relaxed);
            }
        }
    }

    #[test]
    fn port_change_sub_types() {
        assert_eq!(Event::port_change(1, 1), Event::PortDown(1));
        assert_eq!(Event::port_change(2, 4), Event::PortActive(2));
        assert_eq!(Event::port_change(1, 6), Event::PortChange(1, 6));
    }

    #[test]
    fn notifiers_get_events_until_their_registration_drops() -> Result {
        let chain = Notifiers::new()?;
        let a = Arc::new(Counter(Atomic::new(0)), GFP_KERNEL)?;
        let b = Arc::new(Counter(Atomic::new(0)), GFP_KERNEL)?;
        let ra = chain.register(a.clone())?;
        let rb = chain.register(b.clone())?;
        chain.call(Event::port_change(1, 1));
        drop(ra);
        chain.call(Event::port_change(1, 4));
        assert_eq!(a.0.load(Relaxed), 1);
        assert_eq!(b.0.load(Relaxed), 2);
        drop(rb);
        chain.call(Event::port_change(1, 1));
        assert_eq!(b.0.load(Relaxed), 2);
        // The chain holds no reference to a notifier once its registration is gone.
        assert!(chain.list.lock().entries.is_empty());
        Ok(())
    }
}
