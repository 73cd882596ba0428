// SPDX-License-Identifier: GPL-2.0

//! Address resolutions under way (C's `addr_req` list): each is tried once in the caller's
//! task, then finished from the `ib_addr` workqueue, where its callback runs. One whose next
//! hop is being found (`ENODATA`) waits for its deadline, unless a neighbour entry becomes
//! usable first (a netevent `NEIGH_UPDATE`), which makes every request try again at once; past
//! its deadline a request fails with `ETIMEDOUT`. A cancel takes a request off the list, and
//! once it returns the callback has run or never will.

use super::{resolve, SockAddr};
use kernel::{
    bindings,
    delayed_work_arc::{cancel_delayed, cancel_delayed_sync, mod_delayed},
    ffi::{c_int, c_void},
    net::netevent::{self, NeteventHandler},
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        global_lock, Arc, Mutex,
    },
    time::{msecs_to_jiffies, Jiffies},
    workqueue::{DelayedWork, WorkItem},
};

/// C's `rdma_resolve_ip` callback.
pub(crate) type Callback = unsafe extern "C" fn(
    status: c_int,
    src_addr: *mut bindings::sockaddr,
    addr: *mut bindings::rdma_dev_addr,
    context: *mut c_void,
);

/// What the caller gave: the device address to fill, whom to tell, with what context.
struct Target {
    addr: *mut bindings::rdma_dev_addr,
    callback: Option<Callback>,
    context: *mut c_void,
}

// SAFETY: The caller of `rdma_resolve_ip` keeps `addr` and `context` valid, for any task, until
// the callback has run or `rdma_addr_cancel` has returned (C's contract); the callback is a
// function.
unsafe impl Send for Target {}

// SAFETY: As for `Send`; the request only reads the pointers.
unsafe impl Sync for Target {}

/// What a try changes.
struct Progress {
    /// The source address (the route's source is written back).
    src: SockAddr,
    /// The last try's outcome (`ENODATA` while the next hop is being found).
    status: Result,
    /// Whether the callback was called.
    reported: bool,
}

/// A resolution under way (C's `struct addr_req`).
#[pin_data]
pub(crate) struct Request {
    #[pin]
    work: DelayedWork<Request>,
    target: Target,
    dst: SockAddr,
    by_gid_attr: bool,
    /// When a request still without its next hop fails (jiffies).
    deadline: Jiffies,
    #[pin]
    progress: Mutex<Progress>,
}

kernel::impl_has_delayed_work! {
    impl HasDelayedWork<Self> for Request { self.work }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the core's exports can be called.
    unsafe(uninit) static LISTED: SpinLockIrq<KVec<Arc<Request>>> = KVec::new();
}

/// Initializes the list.
///
/// # Safety
///
/// Called once, at module load, before any C module can call the exports.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { LISTED.init() };
}

/// Frees the list's memory at unload. It is empty by then (every caller is a module that
/// depends on this one, and cancels or is called back before it goes); a request still listed
/// is reported and cancelled, so that no timer of it outlives the module (C only warns).
pub(crate) fn clear() {
    let left = core::mem::replace(&mut *LISTED.lock(), KVec::new());
    if !left.is_empty() {
        pr_warn!(
            "{} address resolution(s) left at unload: cancelled\n",
            left.len()
        );
    }
    for req in &left {
        cancel_delayed_sync(req);
    }
}

/// The current time in jiffies.
fn now() -> Jiffies {
    // SAFETY: `jiffies` is a kernel variable always readable; read once, as C's volatile read.
    unsafe { core::ptr::read_volatile(&raw const bindings::jiffies) }
}

/// Jiffies from now until `deadline`, 0 if it has passed (C's `set_timeout`).
fn delay_until(deadline: Jiffies) -> Jiffies {
    let d = deadline.wrapping_sub(now());
    if (d as isize) < 0 {
        0
    } else {
        d
    }
}

/// Whether `deadline` has come (C's `time_after_eq(jiffies, deadline)`).
fn passed(deadline: Jiffies) -> bool {
    (now().wrapping_sub(deadline) as isize) >= 0
}

/// The `ib_addr` workqueue, while the core is loaded.
fn queue() -> Option<&'static kernel::workqueue::Queue> {
    crate::device::workqueues::queues().map(|q| &*q.addr)
}

/// Makes `req` run `delay` jiffies from now (or sooner, if it is already due).
fn run_in(req: &Arc<Request>, delay: Jiffies) {
    if let Some(q) = queue() {
        mod_delayed(q, req, delay);
    }
}

fn listed(list: &KVec<Arc<Request>>, req: &Request) -> Option<usize> {
    list.iter().position(|r| core::ptr::eq(&**r, req))
}

impl WorkItem for Request {
    type Pointer = Arc<Request>;

    fn run(this: Arc<Request>) {
        let mut p = this.progress.lock();
        if p.reported {
            return;
        }
        if p.status == Err(ENODATA) {
            let p = &mut *p;
            // SAFETY: The target lives until the callback or a cancel (caller's contract);
            // the work item does not run after a cancel returned.
            p.status = unsafe {
                resolve(
                    &mut p.src,
                    &this.dst,
                    this.target.addr,
                    true,
                    this.by_gid_attr,
                )
            };
            if p.status.is_err() && passed(this.deadline) {
                p.status = Err(ETIMEDOUT);
            } else if p.status == Err(ENODATA) {
                // Again at the deadline (or at the next neighbour update), if still listed.
                let list = LISTED.lock();
                if listed(&list, &this).is_some() {
                    run_in(&this, delay_until(this.deadline));
                }
                return;
            }
        }
        p.reported = true;
        if let Some(cb) = this.target.callback {
            let src = core::ptr::from_mut(&mut p.src).cast::<bindings::sockaddr>();
            let status = p.status.err().map_or(0, |e| e.to_errno());
            // SAFETY: C's callback contract: the caller's function, with its device address
            // and context (valid until now), and the request's source address.
            unsafe { cb(status, src, this.target.addr, this.target.context) };
        }
        drop(p);
        let mut list = LISTED.lock();
        // A neighbour update may have queued it again meanwhile.
        cancel_delayed(&this);
        if let Some(i) = listed(&list, &this) {
            let _ = list.remove(i);
        }
    }
}

/// C's `rdma_resolve_ip`: resolves `dst` (from `src`, or a wildcard of `dst`'s family) into
/// `*addr`, and calls `callback` from the `ib_addr` workqueue with the result: 0, the route's
/// or the device's errno, `ETIMEDOUT` when the next hop is still unknown `timeout_ms` from now.
/// An error returned at once (`EINVAL` for families that differ, the first try's errors but
/// `ENODATA`, `ENOMEM`) means no callback.
///
/// # Safety
///
/// `dst` (and `src`, if set) hold socket addresses of their families' sizes; `addr` is
/// writable, its `net` live, its `sgid_attr` held if set, and it and `context` stay valid until
/// the callback has run or [`cancel`] has returned for `addr`.
pub(crate) unsafe fn resolve_ip(
    src: *const bindings::sockaddr,
    dst: *const bindings::sockaddr,
    addr: *mut bindings::rdma_dev_addr,
    timeout_ms: u32,
    callback: Option<Callback>,
    by_gid_attr: bool,
    context: *mut c_void,
) -> Result {
    let mut src_in = SockAddr::zeroed();
    let mut dst_in = SockAddr::zeroed();
    // SAFETY: `dst` is readable (contract).
    let dst_family = unsafe { (*dst).sa_family };
    let copy = |from: *const bindings::sockaddr, to: &mut SockAddr| {
        // SAFETY: `from` holds an address of its family's size (contract), at most a storage's.
        unsafe {
            let n = crate::c_abi::addr_size::rdma_addr_size(from) as usize;
            core::ptr::copy_nonoverlapping(
                from.cast::<u8>(),
                core::ptr::from_mut(to).cast::<u8>(),
                n.min(core::mem::size_of::<SockAddr>()),
            );
        }
    };
    if src.is_null() {
        // SAFETY: A storage starts with its family.
        unsafe {
            (*core::ptr::from_mut(&mut src_in).cast::<bindings::sockaddr>()).sa_family = dst_family
        };
    } else {
        // SAFETY: `src` is readable (contract).
        if unsafe { (*src).sa_family } != dst_family {
            return Err(EINVAL);
        }
        copy(src, &mut src_in);
    }
    copy(dst, &mut dst_in);
    // SAFETY: `addr` is writable, its namespace and GID entry as `resolve` needs (contract).
    let first = unsafe { resolve(&mut src_in, &dst_in, addr, true, by_gid_attr) };
    let deadline = match first {
        Ok(()) => now(),
        Err(e) if e == ENODATA => now().wrapping_add(msecs_to_jiffies(timeout_ms)),
        Err(e) => return Err(e),
    };
    let req = Arc::pin_init(
        pin_init!(Request {
            work <- kernel::new_delayed_work!("ib_core::addr::Request::work"),
            target: Target { addr, callback, context },
            dst: dst_in,
            by_gid_attr,
            deadline,
            progress <- new_mutex!(Progress { src: src_in, status: first, reported: false }),
        }),
        GFP_KERNEL,
    )?;
    let mut list = LISTED.lock();
    list.push(req.clone(), GFP_ATOMIC)?;
    run_in(&req, delay_until(deadline));
    Ok(())
}

/// C's `rdma_addr_cancel`: takes the request for `addr` off the list, if any; once this returns
/// its callback has finished or will never run. Sleeps; not from that callback.
pub(crate) fn cancel(addr: *mut bindings::rdma_dev_addr) {
    let found = {
        let mut list = LISTED.lock();
        match list.iter().position(|r| r.target.addr == addr) {
            Some(i) => list.remove(i).ok(),
            None => None,
        }
    };
    if let Some(req) = found {
        cancel_delayed_sync(&req);
    }
}

/// Every listed request tries again now (C's `netevent_callback` on a usable neighbour).
fn retry_all() {
    let list = LISTED.lock();
    for req in list.iter() {
        run_in(req, 0);
    }
}

/// How many times a usable neighbour made the requests try again (for tests).
static NEIGHBOUR_KICKS: Atomic<u64> = Atomic::new(0);

/// ib_core's netevent handler.
pub(crate) struct NeighbourWatch;

impl NeteventHandler for NeighbourWatch {
    fn neigh_update(&self, valid: bool) {
        // As C: only a neighbour that is now valid can complete a resolution.
        if valid {
            NEIGHBOUR_KICKS.fetch_add(1, Relaxed);
            retry_all();
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
    fn only_a_valid_neighbour_update_retries() {
        let before = NEIGHBOUR_KICKS.load(Relaxed);
        NeighbourWatch.neigh_update(false);
        assert_eq!(NEIGHBOUR_KICKS.load(Relaxed), before);
        NeighbourWatch.neigh_update(true);
        assert!(NEIGHBOUR_KICKS.load(Relaxed) > before);
    }

    #[test]
    fn deadlines_wrap_as_jiffies_do() {
        let t = now();
        assert!(passed(t));
        assert!(!passed(t.wrapping_add(1000)));
        assert_eq!(delay_until(t.wrapping_sub(5)), 0);
        assert!(delay_until(t.wrapping_add(1000)) <= 1000);
    }
}
