// SPDX-License-Identifier: GPL-2.0

//! Multicast group membership through the SA (C's `multicast.c`): consumers join a group on a
//! port, the core keeps one membership per group and port with the SA and counts its members by
//! join state.
//!
//! As C: all joins and leaves of a group are serialised on the group (one SA request at a time,
//! from the `ib_mcast` workqueue or the request's answer); a join whose join state the group
//! already has is answered locally after C's comparison of the records (`EINVAL` when the
//! request's components differ from the group's); a state no member holds any more is left
//! with an SA `Delete` (three retries); a port error, LID change or client reregistration ends
//! every membership on the port with `ENETRESET`, a P_Key change those whose P_Key moved. A
//! member's handler returning `true` has the core free the membership. Each port's groups live
//! until their last member is freed; a device's removal waits for that.

use super::{
    mcmember_record::{self, comp, selector, McMemberRecord},
    query::{query, Request},
};
use crate::{
    attrs::Gid,
    device::{events::EventType, ib_device::IbDevice},
    mad::types::method,
};
use kernel::{
    ffi::c_long,
    new_mutex, new_wait_queue, new_work,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
    wait_queue::WaitQueue,
    workqueue::{Work, WorkItem},
};

/// The SA's `Delete` method (`IB_SA_METHOD_DELETE`).
const METHOD_DELETE: u8 = 0x15;
/// C's timeout of a join or a leave.
const QUERY_TIMEOUT_MS: u32 = 3000;
/// How often C sends a leave the SA did not answer.
const LEAVE_RETRIES: i32 = 3;
/// The kinds of membership (`NUM_JOIN_MEMBERSHIP_TYPES`), one join state bit each.
const JOIN_TYPES: usize = 4;

/// What a member's joins end with.
pub trait JoinHandler: Send + Sync {
    /// The join of `member` ended with `status`: `Ok` with [`Member::rec`] the group's record
    /// and the member's join state; C's errno otherwise (`ENETRESET` when an event ended the
    /// membership). Returning `true` has the core free the membership (C's non-zero return);
    /// it must not be freed from here otherwise.
    fn joined(&self, member: &Arc<Member>, status: Result) -> bool;

    /// The core freed the membership on this handler's request; called once, after.
    fn released(&self) {}
}

/// A member's state (C's `mcast_state`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum MemberState {
    Joining = 0,
    Member = 1,
    Error = 2,
}

/// A group's state (C's `mcast_group_state`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum GroupState {
    /// No work queued or under way.
    Idle,
    /// The group's work owns it.
    Busy,
    /// A port event ended every membership.
    Error,
    /// The P_Keys changed.
    PkeyEvent,
}

/// One consumer's membership of a group (C's `mcast_member` with its `ib_sa_multicast`).
#[pin_data]
pub struct Member {
    #[pin]
    rec: Mutex<McMemberRecord>,
    comp_mask: u64,
    group: Arc<Group>,
    /// A [`MemberState`], changed under the group's lock.
    state: Atomic<u32>,
    /// Callbacks of this member under way (C's references beyond the first).
    busy: Atomic<u32>,
    handler: KBox<dyn JoinHandler>,
}

impl Member {
    /// The member's record: what it asked for, then, once joined, the group's record with its
    /// own join state.
    pub fn rec(&self) -> McMemberRecord {
        *self.rec.lock()
    }

    fn state(&self) -> MemberState {
        match self.state.load(Relaxed) {
            1 => MemberState::Member,
            2 => MemberState::Error,
            _ => MemberState::Joining,
        }
    }

    fn set_state(&self, s: MemberState) {
        self.state.store(s as u32, Relaxed);
    }

    /// Calls the handler with `status`, counted as under way; frees the membership if the
    /// handler asks (C's `callback`, `deref_member` and `ib_sa_free_multicast` after it).
    fn call(self: &Arc<Self>, status: Result) {
        let drop_it = self.handler.joined(self, status);
        self.done_calling();
        if drop_it {
            free(self);
            self.handler.released();
        }
    }

    /// One callback fewer under way.
    fn done_calling(&self) {
        self.busy.fetch_sub(1, Relaxed);
        self.group.port.idle.wake_up_all();
    }
}

/// A group on a port (C's `mcast_group`).
#[pin_data]
pub(crate) struct Group {
    port: Arc<McastPort>,
    #[pin]
    inner: Mutex<GroupInner>,
    /// C's `refcount`: members, queued work and the join under way; the last one takes the
    /// group out of its port's table (changed under the port's lock when it may reach zero).
    refs: Atomic<i32>,
    #[pin]
    work: Work<Group>,
}

/// What a group's lock protects.
struct GroupInner {
    rec: McMemberRecord,
    state: GroupState,
    pending: KVec<Arc<Member>>,
    active: KVec<Arc<Member>>,
    /// The member whose join was sent last (compared by address).
    last_join: usize,
    members: [i32; JOIN_TYPES],
    pkey_index: Option<u16>,
    leave_state: u8,
    retries: i32,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Group { self.work }
}

impl WorkItem for Group {
    type Pointer = Arc<Group>;

    fn run(this: Arc<Group>) {
        this.process();
    }
}

/// Adds `inc` to the count of each membership kind `join_state` names (C's
/// `adjust_membership`).
fn adjust_membership(g: &mut GroupInner, join_state: u8, inc: i32) {
    for (i, n) in g.members.iter_mut().enumerate() {
        if join_state & (1 << i) != 0 {
            *n += inc;
        }
    }
}

/// The join states the group holds with the SA that no member needs any more (C's
/// `get_leave_state`).
fn leave_state(g: &GroupInner) -> u8 {
    let mut s = 0;
    for (i, &n) in g.members.iter().enumerate() {
        if n == 0 {
            s |= 1 << i;
        }
    }
    s & g.rec.join_state
}

/// C's `check_selector`: whether a selected value of the request rules the group out.
fn selector_fails(
    comp_mask: u64,
    sel_bit: u64,
    val_bit: u64,
    sel: u8,
    group: u8,
    want: u8,
) -> bool {
    if comp_mask & sel_bit == 0 || comp_mask & val_bit == 0 {
        return false;
    }
    match sel {
        selector::GT => group <= want,
        selector::LT => group >= want,
        selector::EQ => group != want,
        _ => false,
    }
}

/// C's `cmp_rec`: whether the group `g` (its MGID matching) has what request `r` asks in the
/// components `m` names; `EINVAL` if not.
fn cmp_rec(g: &McMemberRecord, r: &McMemberRecord, m: u64) -> Result {
    let differs = |bit: u64, d: bool| m & bit != 0 && d;
    let bad = differs(comp::PORT_GID, g.port_gid != r.port_gid)
        || differs(comp::QKEY, g.qkey != r.qkey)
        || differs(comp::MLID, g.mlid != r.mlid)
        || selector_fails(
            m,
            comp::MTU_SELECTOR,
            comp::MTU,
            r.mtu_selector,
            g.mtu,
            r.mtu,
        )
        || differs(comp::TRAFFIC_CLASS, g.traffic_class != r.traffic_class)
        || differs(comp::PKEY, g.pkey != r.pkey)
        || selector_fails(
            m,
            comp::RATE_SELECTOR,
            comp::RATE,
            r.rate_selector,
            g.rate,
            r.rate,
        )
        || selector_fails(
            m,
            comp::PACKET_LIFE_TIME_SELECTOR,
            comp::PACKET_LIFE_TIME,
            r.packet_life_time_selector,
            g.packet_life_time,
            r.packet_life_time,
        )
        || differs(comp::SL, g.sl != r.sl)
        || differs(comp::FLOW_LABEL, g.flow_label != r.flow_label)
        || differs(comp::HOP_LIMIT, g.hop_limit != r.hop_limit)
        || differs(comp::SCOPE, g.scope != r.scope);
    if bad {
        Err(EINVAL)
    } else {
        Ok(())
    }
}

/// Takes `m` out of `list`, if it is there.
fn unlink(list: &mut KVec<Arc<Member>>, m: &Member) -> bool {
    match list.iter().position(|x| core::ptr::eq(&**x, m)) {
        Some(i) => list.remove(i).is_ok(),
        None => false,
    }
}

/// The address a member is compared by.
fn addr(m: &Member) -> usize {
    core::ptr::from_ref(m) as usize
}

impl Group {
    /// Queues the group's work (a reference for it was taken); false when the core's
    /// workqueues are gone (the module is going).
    fn try_queue(self: &Arc<Self>) -> bool {
        match crate::device::workqueues::queues() {
            Some(q) => {
                // The work is queued only when the group goes from idle to busy: never twice.
                let _ = q.multicast.enqueue(self.clone());
                true
            }
            None => false,
        }
    }

    /// Drops a reference; the last takes the group out of its port (C's `release_group`).
    fn release(self: &Arc<Self>) {
        let mut groups = self.port.groups.lock();
        if self.refs.fetch_sub(1, Relaxed) == 1 {
            unlink_group(&mut groups, self);
            self.port.count.fetch_sub(1, Relaxed);
            drop(groups);
            self.port.idle.wake_up_all();
        }
    }

    /// C's `mcast_work_handler`: serves the pending joins one at a time, then leaves the join
    /// states nobody needs, or goes idle.
    fn process(self: &Arc<Self>) {
        'retest: loop {
            let mut g = self.inner.lock();
            while !g.pending.is_empty() || g.state != GroupState::Busy {
                if g.state != GroupState::Busy {
                    drop(g);
                    self.process_group_error();
                    continue 'retest;
                }
                let member = g.pending[0].clone();
                let want = member.rec();
                let join_state = want.join_state;
                member.busy.fetch_add(1, Relaxed);
                if join_state == g.rec.join_state & join_state {
                    let status = cmp_rec(&g.rec, &want, member.comp_mask);
                    if status.is_ok() {
                        // C's `join_group`.
                        member.set_state(MemberState::Member);
                        adjust_membership(&mut g, join_state, 1);
                        g.rec.join_state |= join_state;
                        let mut rec = g.rec;
                        rec.join_state = join_state;
                        *member.rec.lock() = rec;
                        unlink(&mut g.pending, &member);
                        if g.active.push(member.clone(), GFP_KERNEL).is_err() {
                            // The membership cannot be kept: it fails as C's allocations
                            // before it would.
                            adjust_membership(&mut g, join_state, -1);
                            member.set_state(MemberState::Error);
                            drop(g);
                            member.call(Err(ENOMEM));
                            g = self.inner.lock();
                            continue;
                        }
                    } else {
                        unlink(&mut g.pending, &member);
                    }
                    drop(g);
                    member.call(status);
                } else {
                    drop(g);
                    match self.send_join(&member) {
                        Ok(()) => {
                            member.done_calling();
                            return;
                        }
                        Err(e) => {
                            // C's `fail_join`.
                            unlink(&mut self.inner.lock().pending, &member);
                            member.call(Err(e));
                        }
                    }
                }
                g = self.inner.lock();
            }
            let leave = leave_state(&g);
            if leave != 0 {
                g.rec.join_state &= !leave;
                drop(g);
                if self.send_leave(leave).is_err() {
                    continue 'retest;
                }
            } else {
                g.state = GroupState::Idle;
                drop(g);
                self.release();
            }
            return;
        }
    }

    /// C's `process_group_error`: after a port event every active member's membership ends
    /// with `ENETRESET` (after a P_Key change, unless the group's P_Key kept its index).
    fn process_group_error(self: &Arc<Self>) {
        let (state, pkey) = {
            let g = self.inner.lock();
            (g.state, g.rec.pkey)
        };
        let found = if state == GroupState::PkeyEvent {
            self.port.dev.find_cached_pkey(self.port.port, pkey)
        } else {
            None
        };
        let mut g = self.inner.lock();
        let kept = g.state == GroupState::PkeyEvent && found.is_some() && g.pkey_index == found;
        if !kept {
            while !g.active.is_empty() {
                let member = g.active.remove(0).ok();
                let Some(member) = member else { break };
                member.busy.fetch_add(1, Relaxed);
                adjust_membership(&mut g, member.rec().join_state, -1);
                member.set_state(MemberState::Error);
                drop(g);
                member.call(Err(ENETRESET));
                g = self.inner.lock();
            }
            g.rec.join_state = 0;
        }
        g.state = GroupState::Busy;
    }

    /// Sends the SA `member`'s join (a `Set`); its answer continues the work (C's `send_join`).
    fn send_join(self: &Arc<Self>, member: &Arc<Member>) -> Result {
        self.inner.lock().last_join = addr(member);
        let group = self.clone();
        let done = KBox::new(
            move |status: Result, answer: Option<&[u8]>| group.join_answered(status, answer),
            GFP_KERNEL,
        )?;
        let mut data = [0u8; mcmember_record::SIZE];
        member.rec().encode(&mut data);
        let request = Request {
            method: method::SET,
            attr_id: mcmember_record::ATTR_ID,
            comp_mask: member.comp_mask,
            data: &data,
        };
        let port = &self.port;
        query(&port.dev, port.port, request, QUERY_TIMEOUT_MS, done).map(|_| ())
    }

    /// Sends the SA a `Delete` of the join states `leave` (C's `send_leave`).
    fn send_leave(self: &Arc<Self>, leave: u8) -> Result {
        let mut rec = {
            let mut g = self.inner.lock();
            g.leave_state = leave;
            g.rec
        };
        rec.join_state = leave;
        let group = self.clone();
        let done = KBox::new(
            move |status: Result, _answer: Option<&[u8]>| group.leave_answered(status),
            GFP_KERNEL,
        )?;
        let mut data = [0u8; mcmember_record::SIZE];
        rec.encode(&mut data);
        let request = Request {
            method: METHOD_DELETE,
            attr_id: mcmember_record::ATTR_ID,
            comp_mask: comp::MGID | comp::PORT_GID | comp::JOIN_STATE,
            data: &data,
        };
        let port = &self.port;
        query(&port.dev, port.port, request, QUERY_TIMEOUT_MS, done).map(|_| ())
    }

    /// C's `join_handler`: the SA's answer to a join.
    fn join_answered(self: &Arc<Self>, status: Result, answer: Option<&[u8]>) {
        let rec = answer
            .and_then(|a| a.first_chunk::<{ mcmember_record::SIZE }>())
            .map(McMemberRecord::decode);
        match (status, rec) {
            (Ok(()), Some(rec)) => {
                let pkey_index = self.port.dev.find_cached_pkey(self.port.port, rec.pkey);
                let _groups = self.port.groups.lock();
                let mut g = self.inner.lock();
                if g.state == GroupState::Busy && g.pkey_index.is_none() {
                    g.pkey_index = pkey_index;
                }
                // A group created with MGID 0 is found by the MGID the SA gave it from now on.
                g.rec = rec;
            }
            (status, _) => self.join_failed(status.err().unwrap_or(EIO)),
        }
        self.process();
    }

    /// C's `process_join_error`: the join sent last, if still first in line, fails.
    fn join_failed(self: &Arc<Self>, e: Error) {
        let mut g = self.inner.lock();
        let Some(member) = g.pending.first().cloned() else {
            return;
        };
        if g.last_join != addr(&member) {
            return;
        }
        member.busy.fetch_add(1, Relaxed);
        unlink(&mut g.pending, &member);
        drop(g);
        member.call(Err(e));
    }

    /// C's `leave_handler`: a failed leave is sent again, up to three times.
    fn leave_answered(self: &Arc<Self>, status: Result) {
        if status.is_err() {
            let (retries, leave) = {
                let g = self.inner.lock();
                (g.retries, g.leave_state)
            };
            if retries > 0 && self.send_leave(leave).is_ok() {
                self.inner.lock().retries -= 1;
                return;
            }
        }
        self.process();
    }
}

/// Takes `group` out of `groups`.
fn unlink_group(groups: &mut KVec<Arc<Group>>, group: &Group) {
    if let Some(i) = groups.iter().position(|x| core::ptr::eq(&**x, group)) {
        let _ = groups.remove(i);
    }
}

/// The multicast groups of one port (C's `mcast_port`).
#[pin_data]
pub(crate) struct McastPort {
    dev: Arc<IbDevice>,
    port: u32,
    /// The groups by MGID (C's red-black tree; a port has a handful).
    #[pin]
    groups: Mutex<KVec<Arc<Group>>>,
    /// How many groups `groups` holds, read without its lock.
    count: Atomic<usize>,
    /// Woken when a group goes or a member's callback ends.
    #[pin]
    idle: WaitQueue,
}

impl McastPort {
    /// A port without groups.
    pub(crate) fn new(dev: &Arc<IbDevice>, port: u32) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                dev: dev.clone(),
                port,
                groups <- new_mutex!(KVec::new(), "ib_core::sa::multicast::McastPort::groups"),
                count: Atomic::new(0),
                idle <- new_wait_queue!("ib_core::sa::multicast::McastPort::idle"),
            }),
            GFP_KERNEL,
        )
    }

    /// The group of `mgid` with a reference taken, made if there is none; MGID 0 (the SA picks
    /// one) always makes a new group (C's `acquire_group`).
    fn acquire_group(self: &Arc<Self>, mgid: &Gid) -> Result<Arc<Group>> {
        let is_mgid0 = mgid.0 == [0; 16];
        let mut groups = self.groups.lock();
        if !is_mgid0 {
            if let Some(g) = groups.iter().find(|g| g.inner.lock().rec.mgid == *mgid) {
                g.refs.fetch_add(1, Relaxed);
                return Ok(g.clone());
            }
        }
        let group = Arc::pin_init(
            pin_init!(Group {
                port: self.clone(),
                inner <- new_mutex!(
                    GroupInner {
                        rec: McMemberRecord {
                            mgid: *mgid,
                            ..Default::default()
                        },
                        state: GroupState::Idle,
                        pending: KVec::new(),
                        active: KVec::new(),
                        last_join: 0,
                        members: [0; JOIN_TYPES],
                        pkey_index: None,
                        leave_state: 0,
                        retries: LEAVE_RETRIES,
                    },
                    "ib_core::sa::multicast::Group::inner"
                ),
                refs: Atomic::new(1),
                work <- new_work!("ib_core::sa::multicast::Group::work"),
            }),
            GFP_KERNEL,
        )?;
        groups.push(group.clone(), GFP_KERNEL)?;
        self.count.fetch_add(1, Relaxed);
        Ok(group)
    }

    /// The record of the group `mgid` as the SA last gave it (C's `ib_sa_get_mcmember_rec`);
    /// `EADDRNOTAVAIL` if the port has no such group.
    pub(crate) fn group_rec(&self, mgid: &Gid) -> Result<McMemberRecord> {
        let groups = self.groups.lock();
        for g in groups.iter() {
            let rec = g.inner.lock().rec;
            if rec.mgid == *mgid {
                return Ok(rec);
            }
        }
        Err(EADDRNOTAVAIL)
    }

    /// A port event: memberships end (C's `mcast_groups_event`).
    fn groups_event(&self, to: GroupState) {
        let groups = self.groups.lock();
        for group in groups.iter() {
            let mut g = group.inner.lock();
            if g.state == GroupState::Idle && group.try_queue() {
                // The work's reference (the group's members hold it in the table: not the last).
                group.refs.fetch_add(1, Relaxed);
            }
            if g.state != GroupState::Error {
                g.state = to;
            }
        }
    }

    /// A device event on this port (C's `mcast_event_handler`).
    pub(crate) fn event(&self, event: EventType) {
        match event {
            EventType::PortErr | EventType::LidChange | EventType::ClientReregister => {
                self.groups_event(GroupState::Error)
            }
            EventType::PkeyChange => self.groups_event(GroupState::PkeyEvent),
            _ => {}
        }
    }

    /// Waits until every group is gone (C's `mcast_remove_one`: each member freed, each leave
    /// answered).
    pub(crate) fn drain(&self) {
        wait_until(&self.idle, || self.count.load(Relaxed) == 0);
    }
}

/// Sleeps on `queue` until `done()` holds (C's `wait_for_completion` of a count falling to 0).
fn wait_until(queue: &WaitQueue, done: impl Fn() -> bool) {
    let second = c_long::try_from(kernel::time::msecs_to_jiffies(1000)).unwrap_or(c_long::MAX);
    while !queue.wait_uninterruptible_timeout(second, &done) {}
}

/// Makes a membership of the group `rec.mgid` on `port` for `handler`, asking for the join
/// state and the components `comp_mask` names (of [`mcmember_record::comp`]), without starting
/// it: [`start`] does, after the caller stored the member (a join's handler may run, and free
/// the membership, before `start` returns).
pub(crate) fn prepare(
    port: &Arc<McastPort>,
    rec: &McMemberRecord,
    comp_mask: u64,
    handler: KBox<dyn JoinHandler>,
) -> Result<Arc<Member>> {
    let group = port.acquire_group(&rec.mgid)?;
    let for_member = group.clone();
    let member = Arc::pin_init(
        pin_init!(Member {
            rec <- new_mutex!(*rec, "ib_core::sa::multicast::Member::rec"),
            comp_mask,
            group: for_member,
            state: Atomic::new(MemberState::Joining as u32),
            busy: Atomic::new(0),
            handler,
        }),
        GFP_KERNEL,
    );
    if member.is_err() {
        group.release();
    }
    member
}

/// Starts the join of a prepared `member` (C's `queue_join`).
pub(crate) fn start(member: &Arc<Member>) -> Result {
    let group = &member.group;
    let mut g = group.inner.lock();
    g.pending.push(member.clone(), GFP_KERNEL)?;
    if g.state == GroupState::Idle {
        group.refs.fetch_add(1, Relaxed);
        if !group.try_queue() {
            unlink(&mut g.pending, member);
            drop(g);
            group.release();
            return Err(ENODEV);
        }
        g.state = GroupState::Busy;
    }
    Ok(())
}

/// Ends `member`'s membership (C's `ib_sa_free_multicast`): its join states are left with the
/// SA when no other member needs them; returns once no callback of it is under way. Not from
/// its own handler (which returns `true` instead).
pub fn free(member: &Arc<Member>) {
    let group = &member.group;
    let mut g = group.inner.lock();
    if member.state() == MemberState::Member {
        adjust_membership(&mut g, member.rec().join_state, -1);
    }
    if !unlink(&mut g.pending, member) {
        unlink(&mut g.active, member);
    }
    if g.state == GroupState::Idle && group.try_queue() {
        // The member's reference goes to the work, which releases it.
        g.state = GroupState::Busy;
        drop(g);
    } else {
        drop(g);
        group.release();
    }
    wait_until(&group.port.idle, || member.busy.load(Relaxed) == 0);
}

#[kernel::macros::kunit_tests(rdma_rs_sa_multicast)]
mod tests {
    use super::*;

    fn inner(members: [i32; JOIN_TYPES], join_state: u8) -> GroupInner {
        GroupInner {
            rec: McMemberRecord {
                join_state,
                ..Default::default()
            },
            state: GroupState::Idle,
            pending: KVec::new(),
            active: KVec::new(),
            last_join: 0,
            members,
            pkey_index: None,
            leave_state: 0,
            retries: LEAVE_RETRIES,
        }
    }

    #[test]
    fn selectors_rule_out_as_c_s_check_selector() {
        let m = comp::MTU_SELECTOR | comp::MTU;
        // Greater than 4: the group's 4 is not, 5 is.
        assert!(selector_fails(
            m,
            comp::MTU_SELECTOR,
            comp::MTU,
            selector::GT,
            4,
            4
        ));
        assert!(!selector_fails(
            m,
            comp::MTU_SELECTOR,
            comp::MTU,
            selector::GT,
            5,
            4
        ));
        assert!(selector_fails(
            m,
            comp::MTU_SELECTOR,
            comp::MTU,
            selector::LT,
            4,
            4
        ));
        assert!(!selector_fails(
            m,
            comp::MTU_SELECTOR,
            comp::MTU,
            selector::LT,
            3,
            4
        ));
        assert!(selector_fails(
            m,
            comp::MTU_SELECTOR,
            comp::MTU,
            selector::EQ,
            3,
            4
        ));
        // Selector 3 (the largest) and a mask without both bits rule nothing out.
        assert!(!selector_fails(m, comp::MTU_SELECTOR, comp::MTU, 3, 1, 4));
        assert!(!selector_fails(
            comp::MTU,
            comp::MTU_SELECTOR,
            comp::MTU,
            selector::EQ,
            3,
            4
        ));
    }

    #[test]
    fn records_compare_on_the_masked_components() {
        let group = McMemberRecord {
            qkey: 0x1b1b,
            pkey: 0xffff,
            mtu: 4,
            ..Default::default()
        };
        let mut want = group;
        want.qkey = 0x5678;
        assert!(cmp_rec(&group, &want, comp::QKEY).is_err());
        assert!(cmp_rec(&group, &want, comp::PKEY).is_ok());
        want = group;
        want.port_gid = Gid([1; 16]);
        assert!(cmp_rec(&group, &want, comp::PORT_GID).is_err());
        want = group;
        want.mtu = 5;
        want.mtu_selector = selector::LT;
        assert!(cmp_rec(&group, &want, comp::MTU_SELECTOR | comp::MTU).is_ok());
        want.mtu_selector = selector::GT;
        assert!(cmp_rec(&group, &want, comp::MTU_SELECTOR | comp::MTU).is_err());
    }

    #[test]
    fn join_states_nobody_holds_are_left() {
        let mut g = inner([1, 0, 0, 0], 0b0011);
        assert_eq!(leave_state(&g), 0b0010);
        adjust_membership(&mut g, 0b0001, -1);
        assert_eq!(leave_state(&g), 0b0011);
        adjust_membership(&mut g, 0b0110, 1);
        assert_eq!(g.members, [0, 1, 1, 0]);
        assert_eq!(leave_state(&g), 0b0001);
    }
}
