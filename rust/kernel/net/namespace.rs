// SPDX-License-Identifier: GPL-2.0

//! Network namespaces and per-namespace operations (`pernet_operations`).
//!
//! C headers: [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h),
//! [`include/net/netns/generic.h`](srctree/include/net/netns/generic.h)

use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    net::route::NetDevice,
    prelude::*,
    sync::aref::ARef,
    types::Opaque,
};
use core::{marker::PhantomData, ptr::NonNull};

/// A network namespace (`struct net`).
///
/// Only ever used by reference; whoever hands out a `&Net` guarantees that the namespace lives
/// at least as long as the reference.
///
/// # Invariants
///
/// The wrapped `struct net` is alive for the lifetime of any reference to it.
#[repr(transparent)]
pub struct Net(Opaque<bindings::net>);

// SAFETY: A `struct net` is shared by everything that runs in it; the accessors used here are
// thread safe.
unsafe impl Sync for Net {}

// SAFETY: See `Sync`: nothing about a `struct net` is tied to a thread.
unsafe impl Send for Net {}

impl Net {
    /// Wraps a raw namespace pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `struct net` that stays alive for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net) -> &'a Net {
        // SAFETY: `Net` is a transparent wrapper of `struct net`, and the caller guarantees that
        // the namespace lives for `'a`.
        unsafe { &*ptr.cast::<Net>() }
    }

    /// The initial network namespace, which is never torn down.
    pub fn init_net() -> &'static Net {
        // SAFETY: `init_net` is a static object that lives as long as the kernel.
        unsafe { Self::from_raw(&raw mut bindings::init_net) }
    }

    /// The raw `struct net`.
    pub fn as_raw(&self) -> *mut bindings::net {
        self.0.get()
    }

    /// Whether a network device called `name` exists in this namespace (`dev_get_by_name`).
    pub fn has_netdev(&self, name: &CStr) -> bool {
        self.netdev_by_name(name).is_some()
    }

    /// The network device called `name` in this namespace, held (`dev_get_by_name`).
    pub fn netdev_by_name(&self, name: &CStr) -> Option<ARef<NetDevice>> {
        // SAFETY: The namespace is alive (type invariants) and `name` is NUL-terminated.
        let dev = unsafe { bindings::dev_get_by_name(self.as_raw(), name.as_char_ptr()) };
        // SAFETY: `dev_get_by_name` returned a referenced device or null; the reference becomes
        // the `ARef`'s.
        NonNull::new(dev).map(|d| unsafe { ARef::from_raw(d.cast()) })
    }

    /// Whether this is the initial network namespace.
    pub fn is_init_net(&self) -> bool {
        self == Self::init_net()
    }
}

impl PartialEq for Net {
    fn eq(&self, other: &Net) -> bool {
        // SAFETY: Both namespaces are alive by the type invariants.
        unsafe { bindings::net_eq(self.as_raw(), other.as_raw()) != 0 }
    }
}

/// A counted reference to a network namespace (`get_net`/`put_net`).
///
/// # Invariants
///
/// The object holds one reference on the namespace.
pub struct NetRef(NonNull<bindings::net>);

// SAFETY: A namespace reference can be used and dropped from any thread.
unsafe impl Send for NetRef {}

// SAFETY: `&NetRef` only gives out `&Net`, which is `Sync`.
unsafe impl Sync for NetRef {}

impl NetRef {
    /// The namespace a namespace file descriptor of the current task refers to
    /// (`get_net_ns_by_fd`): `EBADF` for a bad descriptor, `EINVAL` for a file that is not a
    /// network namespace.
    pub fn from_fd(fd: i32) -> Result<Self> {
        // SAFETY: Any integer may be passed; the kernel looks it up in the current task's table.
        let net = from_err_ptr(unsafe { bindings::get_net_ns_by_fd(fd) })?;
        // INVARIANT: `get_net_ns_by_fd` returned a referenced namespace.
        Ok(Self(NonNull::new(net).ok_or(EINVAL)?))
    }
}

impl core::ops::Deref for NetRef {
    type Target = Net;

    fn deref(&self) -> &Net {
        // SAFETY: The reference keeps the namespace alive (type invariants).
        unsafe { Net::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for NetRef {
    fn drop(&mut self) {
        // SAFETY: The object holds a reference (type invariants), given back here.
        unsafe { bindings::put_net(self.0.as_ptr()) };
    }
}

/// The slot in which the kernel stores the id of a per-namespace registration
/// (`pernet_operations.id`): which `net_generic` pointer holds its data.
///
/// Each [`Operations`] implementation owns one, in a `static`.
pub struct PernetId(Opaque<crate::ffi::c_uint>);

// SAFETY: The id is written by the kernel once, at registration, under its pernet lock, before
// any namespace's data can be looked up, and only read afterwards.
unsafe impl Sync for PernetId {}

impl PernetId {
    /// An id slot, filled in at registration.
    pub const fn new() -> Self {
        Self(Opaque::new(0))
    }

    fn get(&self) -> crate::ffi::c_uint {
        // SAFETY: The slot is valid memory; see the `Sync` impl for why the read does not race.
        unsafe { *self.0.get() }
    }
}

impl Default for PernetId {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-namespace operations: something that is created in every network namespace (including
/// those that exist when it registers) and destroyed with the namespace or at unregistration.
pub trait Operations: Sized + 'static {
    /// What is kept per namespace.
    type Data: Send + Sync;

    /// The slot for the registration's id (one `static` per implementation).
    fn id() -> &'static PernetId;

    /// Creates the namespace's data. An error fails the namespace's creation (or the
    /// registration, for the namespaces that already exist).
    fn init(net: &Net) -> Result<Self::Data>;

    /// Destroys the namespace's data.
    fn exit(_net: &Net, data: Self::Data) {
        drop(data);
    }
}

/// Where a per-namespace registration sits among the others.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `register_pernet_subsys`: torn down after the network devices of a dying namespace.
    Subsys,
    /// `register_pernet_device`: torn down before the subsystems, like network devices.
    Device,
}

/// A registration of per-namespace [`Operations`].
///
/// # Invariants
///
/// `ops` is registered with the kind `kind` while the registration lives; every live namespace
/// then holds a `T::Data` at its `net_generic` slot for `T::id()`.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Operations> {
    #[pin]
    ops: Opaque<bindings::pernet_operations>,
    kind: Kind,
    _t: PhantomData<T>,
}

// SAFETY: The operations are only used by the kernel under its pernet lock; the per-namespace
// data is `Send + Sync`.
unsafe impl<T: Operations> Send for Registration<T> {}

// SAFETY: See `Send`; `&Registration` only gives shared access to `Sync` data.
unsafe impl<T: Operations> Sync for Registration<T> {}

impl<T: Operations> Registration<T> {
    /// Registers `T` and runs its `init` in every existing namespace.
    pub fn new(kind: Kind) -> impl PinInit<Self, Error> {
        // The data lives in `kmalloc` memory the kernel sizes for it (never zero-sized).
        const {
            assert!(
                core::mem::size_of::<T::Data>() > 0
                    && core::mem::align_of::<T::Data>() <= bindings::ARCH_KMALLOC_MINALIGN
            )
        };
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(move |slot: *mut bindings::pernet_operations| {
                // SAFETY: `slot` is valid for writes; an all-zero `pernet_operations` is valid
                // (no callbacks), then the callbacks, the id slot and the data size are set.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).init = Some(Self::init_callback);
                    (*slot).exit = Some(Self::exit_callback);
                    (*slot).id = T::id().0.get();
                    (*slot).size = core::mem::size_of::<T::Data>();
                }
                // SAFETY: `slot` is initialised and stays pinned until `drop` unregisters it.
                // INVARIANT: on success it is registered with `kind`.
                to_result(unsafe {
                    match kind {
                        Kind::Subsys => bindings::register_pernet_subsys(slot),
                        Kind::Device => bindings::register_pernet_device(slot),
                    }
                })
            }),
            kind,
            _t: PhantomData,
        })
    }

    fn slot(net: &Net) -> *mut T::Data {
        // SAFETY: `net` is alive; the id was assigned at registration. `net_generic` returns the
        // `size` bytes the kernel allocated for this registration in `net`.
        unsafe { bindings::net_generic(net.as_raw(), T::id().get()).cast::<T::Data>() }
    }

    /// The data of a namespace.
    ///
    /// # Safety
    ///
    /// `T`'s `init` has succeeded for `net` and its `exit` has not started (e.g. the caller runs
    /// on behalf of an object that `init` created and `exit` destroys).
    /// (The registration is not borrowed: the data is found through `T::id()`.)
    pub unsafe fn data(net: &Net) -> &T::Data {
        // SAFETY: The caller guarantees that `init` stored a `T::Data` in the slot and that it is
        // not yet taken out by `exit`.
        unsafe { &*Self::slot(net) }
    }

    /// The data of the initial namespace, which exists as long as the registration.
    pub fn init_net_data(&self) -> &T::Data {
        // SAFETY: The registration ran `init` for every existing namespace, including the
        // initial one, which is never torn down; `exit` runs for it only when `self` is dropped.
        unsafe { Self::data(Net::init_net()) }
    }

    /// The `init` callback.
    ///
    /// # Safety
    ///
    /// `net` is a namespace being set up, and the registration's id is assigned.
    unsafe extern "C" fn init_callback(net: *mut bindings::net) -> crate::ffi::c_int {
        // SAFETY: The kernel passes a namespace under construction, alive during the call.
        let net = unsafe { Net::from_raw(net) };
        match T::init(net) {
            Ok(data) => {
                // SAFETY: The kernel allocated `size_of::<T::Data>()` zeroed bytes, aligned for
                // `kmalloc`, at this slot (the alignment is checked in `new`).
                unsafe { Self::slot(net).write(data) };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// The `exit` callback.
    ///
    /// # Safety
    ///
    /// `net` is a namespace being torn down whose `init` succeeded.
    unsafe extern "C" fn exit_callback(net: *mut bindings::net) {
        // SAFETY: The kernel passes a namespace being torn down, alive during the call.
        let net = unsafe { Net::from_raw(net) };
        // SAFETY: `exit` runs only for namespaces whose `init` succeeded, so the slot holds a
        // `T::Data`; it is moved out once, here, and the kernel frees the memory afterwards.
        let data = unsafe { Self::slot(net).read() };
        T::exit(net, data);
    }
}

#[pinned_drop]
impl<T: Operations> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The operations are registered with `kind` by the type invariants, and are
        // unregistered only here; the kernel runs `exit` for every namespace.
        unsafe {
            match self.kind {
                Kind::Subsys => bindings::unregister_pernet_subsys(self.ops.get()),
                Kind::Device => bindings::unregister_pernet_device(self.ops.get()),
            }
        }
    }
}
