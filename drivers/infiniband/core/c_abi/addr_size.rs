// SPDX-License-Identifier: GPL-2.0

//! The size of a socket address by its family, with C's names and signatures (C's
//! `drivers/infiniband/core/addr.c`): `rdma_addr_size` and its two bounded forms, which the
//! connection managers use to copy addresses from user space.

use core::mem::size_of;
use kernel::{bindings, ffi::c_int};

/// The length of an address of `family`: IPv4, IPv6, InfiniBand (`AF_IB`), else 0.
fn size_for(family: u32) -> usize {
    match family {
        bindings::AF_INET => size_of::<bindings::sockaddr_in>(),
        bindings::AF_INET6 => size_of::<bindings::sockaddr_in6>(),
        bindings::AF_IB => size_of::<bindings::sockaddr_ib>(),
        _ => 0,
    }
}

/// The family of the address at `addr`.
///
/// # Safety
///
/// `addr` points to a readable `struct sockaddr`.
unsafe fn family(addr: *const bindings::sockaddr) -> u32 {
    // SAFETY: The caller's contract.
    u32::from(unsafe { (*addr).sa_family })
}

/// `n` as C's `int` (the sizes above are small).
fn int(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(0)
}

/// C's `rdma_addr_size`: the length of the address `addr` holds by its family, 0 for a family
/// the RDMA core does not take.
///
/// # Safety
///
/// `addr` points to a readable `struct sockaddr`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_addr_size(addr: *const bindings::sockaddr) -> c_int {
    // SAFETY: The caller's contract.
    int(size_for(unsafe { family(addr) }))
}

/// C's `rdma_addr_size_in6`: [`rdma_addr_size`], 0 when that exceeds a `sockaddr_in6`.
///
/// # Safety
///
/// `addr` points to a readable `struct sockaddr_in6`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_addr_size_in6(addr: *mut bindings::sockaddr_in6) -> c_int {
    // SAFETY: The caller's contract; a `sockaddr_in6` starts with the family.
    let n = size_for(unsafe { family(addr.cast()) });
    int(if n <= size_of::<bindings::sockaddr_in6>() {
        n
    } else {
        0
    })
}

/// C's `rdma_addr_size_kss`: [`rdma_addr_size`], 0 when that exceeds a
/// `__kernel_sockaddr_storage`.
///
/// # Safety
///
/// `addr` points to a readable `struct __kernel_sockaddr_storage`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_addr_size_kss(
    addr: *mut bindings::__kernel_sockaddr_storage,
) -> c_int {
    // SAFETY: The caller's contract; the storage starts with the family.
    let n = size_for(unsafe { family(addr.cast()) });
    int(if n <= size_of::<bindings::__kernel_sockaddr_storage>() {
        n
    } else {
        0
    })
}
