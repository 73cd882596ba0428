// SPDX-License-Identifier: GPL-2.0

//! RDMA netlink (`NETLINK_RDMA`), as C's `drivers/infiniband/core/netlink.c`:
//!
//! - one kernel socket per network namespace, created and released with the namespace
//!   ([`RdmaNet`], registered as per-namespace device operations);
//! - a message type is `client << 10 | op`; a client (only nldev here) registers a table of ops,
//!   each with a `doit`, a dump, or both, and whether it needs `CAP_NET_ADMIN`;
//! - an unknown client or op, or an op with neither callback, is `EINVAL`; in a namespace other
//!   than the initial one only nldev is served; a message with `NLM_F_DUMP` starts the op's dump,
//!   any other its `doit`; errors and requested acknowledgements are acknowledged after the
//!   reply.
//!
//! C modules register their own tables (`rdma_nl_register`, `c_abi/rdma_nl.rs`: iw_cm's iWARP
//! port mapper ops): their `doit` and `dump` are C's callbacks, called as C's dispatcher calls
//! them (an IWCM op always through a dump), and unregistration waits for a callback running.
//!
//! A client that is not registered is looked for once, as C's `get_cb_table` does: the module
//! aliased `rdma-netlink-subsys-N` is loaded (iw_cm for the port mapper's client) and the table
//! looked up again; still none: `EINVAL`.

pub(crate) mod ls;
pub(crate) mod nldev;
pub mod uapi;

use crate::netlink::uapi::client;
use core::ptr::NonNull;
use kernel::{
    bindings, global_lock,
    net::namespace::{self as net_namespace, Net, PernetId},
    net::netlink_protocol::{
        self as netlink, flags, Config, Handler, KernelSocket, Message, Request,
    },
    prelude::*,
    str::CString,
    ThisModule,
};

/// This module, which the netlink core pins while a user socket of the protocol is open or a
/// dump runs.
pub(crate) static THIS_MODULE: ThisModule =
    <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE;

/// A `doit` or the start of a dump.
pub(crate) type Callback = fn(&mut Request<'_>) -> Result;

/// One op of a client (C's `struct rdma_nl_cbs`).
#[derive(Clone, Copy)]
pub(crate) struct Op {
    /// Answers a request without `NLM_F_DUMP`.
    pub(crate) doit: Option<Callback>,
    /// Starts the dump that answers a request with `NLM_F_DUMP` (see [`start_dump`]).
    pub(crate) dump: Option<Callback>,
    /// Whether the sender needs `CAP_NET_ADMIN` (`RDMA_NL_ADMIN_PERM`).
    pub(crate) admin: bool,
}

impl Op {
    /// An op this stack does not implement.
    pub(crate) const NONE: Op = Op {
        doit: None,
        dump: None,
        admin: false,
    };
}

/// Starts dump `D` for `req`: usable as [`Op::dump`].
pub(crate) fn start_dump<D: netlink::Dump>(req: &mut Request<'_>) -> Result {
    req.start_dump::<D>(&THIS_MODULE)
}

/// A C module's op table (`struct rdma_nl_cbs[]`, one entry per op of its client).
#[derive(Clone, Copy)]
pub(crate) struct CTable(NonNull<bindings::rdma_nl_cbs>);

// SAFETY: The table is C's constant data, read only; it stays until its module unregisters it.
unsafe impl Send for CTable {}

/// The ops of a client: the core's own, or a C module's.
#[derive(Clone, Copy)]
enum Table {
    Rust(&'static [Op]),
    C(CTable),
}

/// The registered op tables, by client.
struct Clients {
    tables: [Option<Table>; client::NUM as usize],
}

global_lock! {
    // SAFETY: Initialised by `init`, before the sockets exist.
    unsafe(uninit) static CLIENTS: Mutex<Clients> = Clients { tables: [None; client::NUM as usize] };
}

global_lock! {
    // SAFETY: Initialised by `init`, before the sockets exist.
    /// Held while a C table's callback runs, and by its unregistration after the table is
    /// gone (C's per-client rwsem, as a mutex: C modules' requests are rare).
    unsafe(uninit) static C_CALLS: Mutex<()> = ();
}

/// Number of ops of `client`, 0 for an unknown client (C's `is_nl_msg_valid`).
fn num_ops(c: u32) -> u32 {
    match c {
        client::IWCM => client::IWPM_NUM_OPS,
        client::LS => client::LS_NUM_OPS,
        client::NLDEV => uapi::cmd::NUM_OPS,
        _ => 0,
    }
}

/// Registers `client`'s table; `false` for a client that does not exist or has one.
fn register_table(c: u32, table: Table) -> bool {
    let mut clients = CLIENTS.lock();
    match clients.tables.get_mut(c as usize) {
        Some(slot @ None) if num_ops(c) > 0 => {
            *slot = Some(table);
            true
        }
        _ => false,
    }
}

/// Registers `client`'s ops (C's `rdma_nl_register`).
pub(crate) fn register(c: u32, ops: &'static [Op]) {
    if !register_table(c, Table::Rust(ops)) {
        pr_warn!("RDMA netlink client {c} cannot be registered\n");
    }
}

/// Registers a C module's table for `client` (C's `rdma_nl_register`): `table` has
/// [`num_ops`] entries and stays until [`unregister`]. `false` for a client that does not
/// exist or has a table.
///
/// # Safety
///
/// `table` points to `num_ops(c)` valid entries whose callbacks stay callable until
/// [`unregister`] returns.
pub(crate) unsafe fn register_c(c: u32, table: NonNull<bindings::rdma_nl_cbs>) -> bool {
    register_table(c, Table::C(CTable(table)))
}

/// Unregisters `client`'s ops (C's `rdma_nl_unregister`); once it returns, no callback of a C
/// table runs.
///
/// The core's tables are `'static` data of this module, which cannot be unloaded while a
/// request is handled: the netlink core pins the protocol's module for every open user socket.
pub(crate) fn unregister(c: u32) {
    let was = CLIENTS
        .lock()
        .tables
        .get_mut(c as usize)
        .and_then(|slot| slot.take());
    if let Some(Table::C(_)) = was {
        // A callback that found the table before it went ends first.
        drop(C_CALLS.lock());
    }
}

fn table_of(c: u32) -> Option<Table> {
    *CLIENTS.lock().tables.get(c as usize)?
}

/// Answers `req` (client `c`, op `op`) with a C module's table, as C's `rdma_nl_rcv_msg`.
fn handle_c(req: &mut Request<'_>, c: u32, op: u32) -> Result {
    let _calls = C_CALLS.lock();
    // Looked up again under the lock: once unregistration has taken it, it is not used.
    let Some(Table::C(t)) = table_of(c) else {
        return Err(EINVAL);
    };
    // SAFETY: A registered C table has `num_ops(c)` entries and `op` is below that (checked
    // by the caller).
    let cbs = unsafe { *t.0.as_ptr().add(op as usize) };
    if cbs.doit.is_none() && cbs.dump.is_none() {
        return Err(EINVAL);
    }
    if u32::from(cbs.flags) & bindings::rdma_nl_flags_RDMA_NL_ADMIN_PERM != 0
        && !req.capable(bindings::CAP_NET_ADMIN)
    {
        return Err(EPERM);
    }
    // As C: local-services answers never start a dump; iWARP port mapper ops always do.
    let dump = c != client::LS && (req.msg().flags() & flags::DUMP != 0 || c == client::IWCM);
    match (dump, cbs.dump, cbs.doit) {
        // SAFETY: The callbacks are the registered module's, callable while its table is
        // registered, which `C_CALLS` keeps it during the call; a dump's later rounds run while
        // the module is loaded (as in C, whose dumps pin only the core).
        (true, Some(d), _) => unsafe { req.start_c_dump(d, &THIS_MODULE) },
        // SAFETY: As above.
        (false, _, Some(f)) => unsafe { req.call_c_doit(f) },
        _ => Err(EINVAL),
    }
}

/// Loads the module that provides client `c`'s table (aliased `rdma-netlink-subsys-<c>`, C's
/// `MODULE_ALIAS_RDMA_NETLINK`) and looks the table up again. In the sender's context, with no
/// lock held: modprobe may take long, and the module registers its table from its init.
fn load_table(c: u32) -> Option<Table> {
    let alias = CString::try_from_fmt(fmt!("rdma-netlink-subsys-{c}")).ok()?;
    // Whether modprobe found anything shows in the second look.
    let _ = kernel::kmod::request_module(&alias);
    table_of(c)
}

/// The protocol's request handler (C's `rdma_nl_rcv_msg` under `rdma_nl_rcv_skb`).
struct RdmaNetlink;

impl Handler for RdmaNetlink {
    /// SA local services run netlink backwards: the kernel asks, user space answers without
    /// `NLM_F_REQUEST`.
    fn accepts_non_request(msg: &netlink::MsgHeader) -> bool {
        uapi::client_of(msg.msg_type()) == client::LS
    }

    fn handle(req: &mut Request<'_>) -> Result {
        let msg_type = req.msg().msg_type();
        let c = uapi::client_of(msg_type);
        let op = uapi::op_of(msg_type);
        if op >= num_ops(c) {
            return Err(EINVAL);
        }
        // Only nldev answers outside the initial namespace.
        if !req.net().is_init_net() && c != client::NLDEV {
            return Err(EINVAL);
        }
        let entry = match table_of(c).or_else(|| load_table(c)) {
            Some(Table::C(_)) => return handle_c(req, c, op),
            Some(Table::Rust(ops)) => ops.get(op as usize).copied().unwrap_or(Op::NONE),
            None => Op::NONE,
        };
        if entry.doit.is_none() && entry.dump.is_none() {
            return Err(EINVAL);
        }
        if entry.admin && !req.capable(bindings::CAP_NET_ADMIN) {
            return Err(EPERM);
        }
        // Local-services answers overload NLM_F_ROOT: never a dump.
        let call = if c == client::LS {
            entry.doit
        } else if req.msg().flags() & flags::DUMP != 0 || c == client::IWCM {
            entry.dump
        } else {
            entry.doit
        };
        match call {
            Some(f) => f(req),
            None => Err(EINVAL),
        }
    }
}

/// The protocol in a network namespace: its kernel socket (C's `rdma_dev_net.nl_sock`).
pub(crate) struct RdmaNet;

static RDMA_NET_ID: PernetId = PernetId::new();

impl net_namespace::Operations for RdmaNet {
    type Data = KernelSocket;

    fn id() -> &'static PernetId {
        &RDMA_NET_ID
    }

    fn init(net: &Net) -> Result<KernelSocket> {
        let sk = KernelSocket::new::<RdmaNetlink>(
            net,
            bindings::NETLINK_RDMA,
            &THIS_MODULE,
            Config {
                groups: 0,
                nonroot_recv: true,
                // C: `sk_sndtimeo = 10 * HZ`.
                send_timeout_ms: Some(10_000),
            },
        )?;
        if !net.is_init_net() {
            // Counted first: the mode cannot change while the devices get their sysfs copies.
            NET_STATE.lock().other_nets += 1;
            let added = NET_STATE.lock().watch.added;
            if let Err(e) = added(net) {
                let mut st = NET_STATE.lock();
                st.other_nets = st.other_nets.saturating_sub(1);
                return Err(e);
            }
        }
        Ok(sk)
    }

    fn exit(net: &Net, sk: KernelSocket) {
        if !net.is_init_net() {
            let removed = NET_STATE.lock().watch.removed;
            removed(net);
            let mut st = NET_STATE.lock();
            st.other_nets = st.other_nets.saturating_sub(1);
        }
        drop(sk);
    }
}

/// What the device registry does when a namespace other than the initial one comes (the
/// devices get their sysfs copies there; an error fails the namespace's creation) and goes.
#[derive(Clone, Copy)]
pub(crate) struct NamespaceWatch {
    /// A namespace was created.
    pub(crate) added: fn(&Net) -> Result,
    /// A namespace is going.
    pub(crate) removed: fn(&Net),
}

/// Namespace-wide state of the protocol.
struct NetState {
    /// The registry's namespace callbacks.
    watch: NamespaceWatch,
    /// Whether [`Sockets`] is registered (every namespace has its socket).
    sockets_up: bool,
    /// Namespaces other than the initial one (C counts its `rdma_nets`).
    other_nets: u32,
    /// Whether devices are shared by all namespaces (C's `ib_devices_shared_netns`).
    shared_netns: bool,
}

global_lock! {
    // SAFETY: Initialised by `init`, before `Sockets` registers.
    unsafe(uninit) static NET_STATE: Mutex<NetState> = NetState {
        watch: NamespaceWatch {
            added: |_| Ok(()),
            removed: |_| {},
        },
        sockets_up: false,
        other_nets: 0,
        shared_netns: true,
    };
}

/// Prepares the client table and the namespace state (C's `rdma_nl_init`); `watch` is told of
/// the namespaces that come and go once [`Sockets`] registers.
///
/// # Safety
///
/// Called once, at module load, before anything else in this file.
pub(crate) unsafe fn init(watch: NamespaceWatch) {
    // SAFETY: The caller guarantees this is the only call, before any use.
    unsafe {
        CLIENTS.init();
        C_CALLS.init();
        NET_STATE.init();
    }
    NET_STATE.lock().watch = watch;
}

/// The kernel sockets of every namespace (C's `register_pernet_device(&rdma_dev_net_ops)`).
#[pin_data(PinnedDrop)]
pub(crate) struct Sockets {
    #[pin]
    reg: net_namespace::Registration<RdmaNet>,
}

impl Sockets {
    /// Creates the socket of every namespace, and of every namespace created later.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            reg <- net_namespace::Registration::new(net_namespace::Kind::Device),
        })
        .pin_chain(|_| {
            NET_STATE.lock().sockets_up = true;
            Ok(())
        })
    }
}

#[pinned_drop]
impl PinnedDrop for Sockets {
    fn drop(self: Pin<&mut Self>) {
        // No multicast from now on; then the registration releases the sockets.
        NET_STATE.lock().sockets_up = false;
    }
}

/// Sends `msg` to multicast `group` of the initial namespace (C's `rdma_nl_multicast` for
/// devices, which all live there). `ESRCH` when nobody listens.
pub(crate) fn multicast(msg: Message, group: u32) -> Result {
    let st = NET_STATE.lock();
    if !st.sockets_up {
        return Err(ESRCH);
    }
    // SAFETY: `sockets_up` is set, under this lock, only while the registration of `RdmaNet`
    // lives, and the registration ran `init` for the initial namespace, which never exits.
    let sk = unsafe { net_namespace::Registration::<RdmaNet>::data(Net::init_net()) };
    sk.multicast(msg, group, GFP_KERNEL)
}

/// The kernel socket of `net` (C's `rdma_net_to_dev_net(net)->nl_sock`), for C modules'
/// messages; `None` while the sockets are not up (before the core's init ends, after its exit
/// begins).
///
/// # Safety
///
/// `net` is alive for `'a`, and the caller is code of a module that depends on this one (so
/// this module stays loaded, with its sockets, for `'a`).
pub(crate) unsafe fn socket_of<'a>(net: &'a Net) -> Option<&'a KernelSocket> {
    if !NET_STATE.lock().sockets_up {
        return None;
    }
    // SAFETY: The sockets are up, and stay so while this module is loaded (contract); every
    // live namespace has had its `init`.
    Some(unsafe { net_namespace::Registration::<RdmaNet>::data(net) })
}

/// Whether devices are shared by all namespaces (C's `ib_devices_shared_netns`).
pub(crate) fn shared_netns() -> bool {
    NET_STATE.lock().shared_netns
}

/// Whether a request from `net` may see the devices (C's `rdma_dev_access_netns`; every
/// device lives in the initial namespace here).
pub(crate) fn net_sees_devices(net: &Net) -> bool {
    shared_netns() || net.is_init_net()
}

/// Sets the namespace mode (C's `rdma_compatdev_set`): refused with `EBUSY` while namespaces
/// other than the initial one exist.
pub(crate) fn set_shared_netns(shared: bool) -> Result {
    let mut st = NET_STATE.lock();
    if st.shared_netns == shared {
        return Ok(());
    }
    if st.other_nets > 0 {
        return Err(EBUSY);
    }
    st.shared_netns = shared;
    Ok(())
}
