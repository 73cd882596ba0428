// SPDX-License-Identifier: GPL-2.0

//! User contexts (C's `ib_ucontext`): what a process gets from the driver once per open uverbs
//! file, and every user verbs object of that file is made in. ib_uverbs holds them; the
//! driver's state of one is freed when it is dropped.

use crate::{
    addr::l2_eth::resolve_eth_dmac,
    device::events::EventHandler,
    device::ib_device::IbDevice,
    restrack::{ResType, Tracked},
    user::spec::{DriverMethod, DriverUObject, MethodAttrs},
    user::udata::Udata,
    verbs::modify_qp::{is_roce_port, QpModify},
    verbs::ops::{CqObject, PdObject, QpObject, SrqObject, UContextObject},
    verbs::types::{
        AhAttr, CompletionHandler, CqInit, CqNotifier, QpAttr, QpAttrMask, QpCap, QpInitDriver,
        QpState, QpType, SrqAttr, SrqAttrMask, UserMrInit,
    },
    verbs::wr::{AhObject, MrObject, PostError, SendWr},
};
use kernel::{
    mm::virt::VmaNew,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
        Arc,
    },
    task::Task,
    task_pid,
    user_mmap::UserMaps,
};

/// What resource tracking shows of a user context: its id and the task that made it.
pub struct UserCtxRes {
    id: Atomic<u32>,
    task: ARef<Task>,
}

impl UserCtxRes {
    /// The id resource tracking gave it (C's `res.id`, netlink's `CTXN`).
    pub fn id(&self) -> u32 {
        self.id.load(Relaxed)
    }

    /// The pid of the task that made it, as the caller sees it (0 once that task exited).
    pub fn pid(&self) -> i32 {
        task_pid::pid_vnr(&self.task)
    }
}

impl Tracked for UserCtxRes {}

/// What resource tracking shows of a user PD: the task that made it, its context's id, its
/// own id and how many objects use it.
pub struct UserPdRes {
    task: ARef<Task>,
    ctx_id: u32,
    id: Atomic<u32>,
    users: Arc<Atomic<u32>>,
}

impl UserPdRes {
    /// Objects made in the PD (C's `usecnt`).
    pub fn users(&self) -> u64 {
        self.users.load(Relaxed).into()
    }

    /// The id of the PD's context (netlink's `CTXN`).
    pub fn ctx_id(&self) -> u32 {
        self.ctx_id
    }

    /// The pid of the task that made it, as the caller sees it (0 once that task exited).
    pub fn pid(&self) -> i32 {
        task_pid::pid_vnr(&self.task)
    }
}

impl Tracked for UserPdRes {}

/// Unlists `res` (listed by `track` or `track_id` as type `t`) and uncounts it.
fn untrack<T: Tracked + 'static>(dev: &IbDevice, t: ResType, res: &KBox<T>) {
    let ptr: *const T = &**res;
    dev.restrack().untrack(t, ptr as *const dyn Tracked);
    dev.restrack().remove(t);
}

/// Lists `res` in `dev`'s tracking as type `t` under id `id` (QPs are listed by number).
fn track_id<T: Tracked + 'static>(
    dev: &IbDevice,
    t: ResType,
    id: u32,
    res: &KBox<T>,
) -> Option<u32> {
    let ptr: *const T = &**res;
    // SAFETY: As in `track`.
    unsafe { dev.restrack().track(t, Some(id), ptr as *const dyn Tracked) }
}

/// Lists `res` (boxed: it does not move) in `dev`'s tracking as type `t`; returns its id.
fn track<T: Tracked + 'static>(dev: &IbDevice, t: ResType, res: &KBox<T>) -> Option<u32> {
    let ptr: *const T = &**res;
    // SAFETY: `res` is boxed, so it does not move. Every caller tracks it only once nothing
    // can fail any more and moves it into its owner (`UserPd`, `UserCq`, ...) right after,
    // whose `Drop` unlists it first thing, before the box goes.
    unsafe { dev.restrack().track(t, None, ptr as *const dyn Tracked) }
}

/// The calling task, as the owner of a new user object.
fn current_task() -> ARef<Task> {
    let current = kernel::current!();
    let task: &Task = current;
    ARef::from(task)
}

/// A user context of a device.
pub struct UContext {
    /// Dropped first (field order, after `Drop::drop` unlists it): the driver frees its state
    /// while the device is still held.
    driver: KBox<dyn UContextObject>,
    res: KBox<UserCtxRes>,
    dev: Arc<IbDevice>,
}

impl UContext {
    /// A new user context of `dev`, with the driver's request and response in `udata` (C's
    /// `ib_alloc_ucontext` and `ops.alloc_ucontext`); `EOPNOTSUPP` for a driver without them.
    pub fn alloc(dev: &Arc<IbDevice>, udata: &Udata) -> Result<Self> {
        let res = KBox::new(
            UserCtxRes {
                id: Atomic::new(0),
                task: current_task(),
            },
            GFP_KERNEL,
        )?;
        let obj = dev.ops().alloc_ucontext(udata)?;
        dev.restrack().add(ResType::Ctx);
        if let Some(id) = track(dev, ResType::Ctx, &res) {
            res.id.store(id, Relaxed);
        }
        Ok(Self {
            driver: obj,
            res,
            dev: dev.clone(),
        })
    }

    /// The device.
    pub fn device(&self) -> &Arc<IbDevice> {
        &self.dev
    }

    /// Runs the driver's method `m` in this context (C's driver method handlers); returns the
    /// object a method that makes one made.
    pub fn driver_method(
        &self,
        m: &DriverMethod,
        attrs: &dyn MethodAttrs,
    ) -> Result<Option<DriverUObject>> {
        self.driver.driver_method(m, attrs)
    }

    /// Writes this context's driver data to the attributes the driver added to QUERY_CONTEXT
    /// (C's `ops.query_ucontext`); `EOPNOTSUPP` for a driver without it.
    pub fn query(&self, attrs: &dyn MethodAttrs) -> Result {
        self.driver.query(attrs)
    }

    /// Maps device memory of this context into `vma` (C's `ops.mmap`), tracked by `maps`;
    /// `ENODEV` for a driver without it.
    pub fn mmap(&self, vma: &VmaNew, maps: &Arc<UserMaps>) -> Result {
        self.driver.mmap(vma, maps)
    }

    /// A CQ of this context (C's `UVERBS_METHOD_CQ_CREATE` from `create_user_cq` on): the
    /// driver makes it from `init` and `udata`; its completion events call `completion`, its
    /// errors `event`, in any context (they must not sleep).
    pub fn create_cq(
        &self,
        init: &CqInit,
        udata: &Udata,
        completion: Option<CompletionHandler>,
        event: Option<EventHandler>,
    ) -> Result<UserCq> {
        let res = KBox::new(
            UserCqRes {
                task: current_task(),
                ctx_id: self.res.id(),
                cqe: Atomic::new(0),
                users: Arc::new(Atomic::new(0), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let notifier = CqNotifier::new(completion, event)?;
        let drv = self.driver.create_cq(init, udata, &notifier)?;
        res.cqe.store(drv.size().unwrap_or(init.cqe), Relaxed);
        self.dev.restrack().add(ResType::Cq);
        let _ = track(&self.dev, ResType::Cq, &res);
        Ok(UserCq {
            driver: drv,
            res,
            dev: self.dev.clone(),
        })
    }

    /// A protection domain of this context (C's `ib_uverbs_alloc_pd` and the driver's
    /// `alloc_pd` with `udata`).
    pub fn alloc_pd(&self, udata: &Udata) -> Result<UserPd> {
        let res = KBox::new(
            UserPdRes {
                task: current_task(),
                ctx_id: self.res.id(),
                id: Atomic::new(0),
                users: Arc::new(Atomic::new(0), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let drv = self.dev.ops().alloc_user_pd(&*self.driver, udata)?;
        self.dev.restrack().add(ResType::Pd);
        if let Some(id) = track(&self.dev, ResType::Pd, &res) {
            res.id.store(id, Relaxed);
        }
        Ok(UserPd {
            driver: drv,
            res,
            dev: self.dev.clone(),
        })
    }
}

impl UserPd {
    /// The driver's state, type-erased, for [`MethodAttrs::pd_object`].
    pub fn driver_object(&self) -> &dyn core::any::Any {
        self.driver.as_any()
    }

    /// Objects made in the PD: while there are any, it cannot be destroyed (C's `EBUSY`).
    pub fn users(&self) -> u32 {
        self.res.users.load(Relaxed)
    }

    /// A QP of context `ctx` in this PD (C's `create_qp` with user data): the driver makes it
    /// from `init` and `udata` (C's core checks no sizes for user QPs; the driver does). Its
    /// asynchronous events call `event`.
    pub fn create_qp(
        &self,
        ctx: &UContext,
        init: &UserQpInit<'_>,
        udata: &Udata,
        event: Option<EventHandler>,
    ) -> Result<UserQp> {
        let mut res = KBox::new(
            UserQpRes {
                task: current_task(),
                pd_id: self.res.id.load(Relaxed),
                qp_num: 0,
                qp_type: init.qp_type,
                port: Atomic::new(0),
                drv: None,
                srq_id: init.srq.map(|s| s.res.id.load(Relaxed)),
            },
            GFP_KERNEL,
        )?;
        let events = crate::device::events::EventNotifier::new(event)?;
        let new = self.driver.create_user_qp(
            &*ctx.driver,
            &QpInitDriver {
                qp_type: init.qp_type,
                port: 0,
                send_cq: &*init.send_cq.driver,
                recv_cq: &*init.recv_cq.driver,
                cap: init.cap,
                sq_sig_all: init.sq_sig_all,
                srq: init.srq.map(|s| &*s.driver),
                events: &events,
            },
            udata,
        )?;
        res.qp_num = new.qp_num;
        let cap = new.cap;
        let drv = new.qp;
        res.drv = Some(drv.clone());
        let state = Arc::pin_init(
            kernel::new_mutex!(QpState::Reset, "ib_core::user::ucontext::UserQp::state"),
            GFP_KERNEL,
        )?;
        let mut users = KVec::with_capacity(4, GFP_KERNEL)?;
        users.push(self.res.users.clone(), GFP_KERNEL)?;
        users.push(init.send_cq.res.users.clone(), GFP_KERNEL)?;
        users.push(init.recv_cq.res.users.clone(), GFP_KERNEL)?;
        if let Some(srq) = init.srq {
            users.push(srq.res.users.clone(), GFP_KERNEL)?;
        }
        // Listed last, once nothing can fail (C's `rdma_restrack_add` in `create_qp`): from
        // here the `UserQp` below owns `res` and unlists it in its `Drop`.
        self.dev.restrack().add(ResType::Qp);
        let _ = track_id(&self.dev, ResType::Qp, new.qp_num, &res);
        for u in users.iter() {
            u.fetch_add(1, Relaxed);
        }
        Ok(UserQp {
            driver: drv,
            res,
            state,
            cap,
            users,
            dev: self.dev.clone(),
        })
    }

    /// An SRQ of context `ctx` in this PD (C's `ib_create_srq_user`): the driver makes it
    /// from `attr` and `udata` and says what it made. Its asynchronous events call `event`.
    pub fn create_srq(
        &self,
        ctx: &UContext,
        attr: &SrqAttr,
        udata: &Udata,
        event: Option<EventHandler>,
    ) -> Result<(UserSrq, SrqAttr)> {
        let res = KBox::new(
            UserSrqRes {
                task: current_task(),
                pd_id: self.res.id.load(Relaxed),
                id: Atomic::new(0),
                users: Arc::new(Atomic::new(0), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let events = crate::device::events::EventNotifier::new(event)?;
        let (drv, made) = self
            .driver
            .create_srq(attr, &events, Some((&*ctx.driver, udata)))?;
        self.dev.restrack().add(ResType::Srq);
        if let Some(id) = track(&self.dev, ResType::Srq, &res) {
            res.id.store(id, Relaxed);
        }
        self.res.users.fetch_add(1, Relaxed);
        Ok((
            UserSrq {
                driver: drv,
                res,
                pd_users: self.res.users.clone(),
                dev: self.dev.clone(),
            },
            made,
        ))
    }

    /// An address handle of context `ctx` in this PD for `attr` (C's `ib_uverbs_create_ah` and
    /// `rdma_create_user_ah`): its source GID entry must exist (`EINVAL`), a RoCE address gets
    /// its next hop's MAC and hop limit, then the driver makes it from `udata`
    /// (`create_user_ah`; `EOPNOTSUPP` for a driver without it).
    pub fn create_ah(&self, ctx: &UContext, attr: &AhAttr, udata: &Udata) -> Result<UserAh> {
        let port = u32::from(attr.port_num);
        if !self.dev.is_valid_port(port) {
            return Err(EINVAL);
        }
        let mut attr = *attr;
        if let Some(g) = attr.grh.as_mut() {
            let entry = self
                .dev
                .gid_entry(port, g.sgid_index.into())
                .filter(|e| !e.is_empty())
                .ok_or(EINVAL)?;
            if is_roce_port(&self.dev, port) {
                let (dmac, hop_limit) = resolve_eth_dmac(&entry, &g.dgid.0)?;
                g.roce_dmac = Some(dmac);
                if let Some(h) = hop_limit {
                    g.hop_limit = h;
                }
            }
        }
        let driver = self.driver.create_user_ah(&*ctx.driver, &attr, udata)?;
        self.res.users.fetch_add(1, Relaxed);
        Ok(UserAh {
            _driver: driver,
            pd_users: self.res.users.clone(),
        })
    }

    /// Registers user memory in this PD (C's `ib_uverbs_reg_mr` and the driver's
    /// `reg_user_mr`).
    pub fn reg_mr(&self, init: &UserMrInit, udata: &Udata) -> Result<UserMr> {
        let res = KBox::new(
            UserMrRes {
                task: current_task(),
                pd_id: self.res.id.load(Relaxed),
                lkey: 0,
                rkey: 0,
                length: init.length,
            },
            GFP_KERNEL,
        )?;
        let new = self.driver.reg_user_mr(init, udata)?;
        let mut res = res;
        res.lkey = new.lkey;
        res.rkey = new.rkey;
        self.dev.restrack().add(ResType::Mr);
        let _ = track(&self.dev, ResType::Mr, &res);
        self.res.users.fetch_add(1, Relaxed);
        Ok(UserMr {
            _driver: new.mr,
            res,
            pd_users: self.res.users.clone(),
            dev: self.dev.clone(),
        })
    }
}

/// An address handle made for user space (its library keeps the address; the driver may keep
/// a copy its queues name); the driver destroys it when it is dropped.
pub struct UserAh {
    /// Dropped first (field order).
    _driver: KBox<dyn AhObject>,
    pd_users: Arc<Atomic<u32>>,
}

impl Drop for UserAh {
    fn drop(&mut self) {
        // C destroys a user AH with `RDMA_DESTROY_AH_SLEEPABLE`: always in a task.
        self._driver.set_destroy_sleepable(true);
        self.pd_users.fetch_sub(1, Relaxed);
    }
}

/// What resource tracking shows of a user MR.
pub struct UserMrRes {
    task: ARef<Task>,
    pd_id: u32,
    lkey: u32,
    rkey: u32,
    length: u64,
}

impl UserMrRes {
    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// Its length.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The id of its PD (netlink's `PDN`).
    pub fn pd_id(&self) -> u32 {
        self.pd_id
    }

    /// The pid of the task that made it, as the caller sees it (0 once that task exited).
    pub fn pid(&self) -> i32 {
        task_pid::pid_vnr(&self.task)
    }
}

impl Tracked for UserMrRes {}

/// A memory region of user memory; the driver unmaps and unpins it when it is dropped.
pub struct UserMr {
    /// Dropped first (field order, after `Drop::drop` unlists it).
    _driver: KBox<dyn MrObject>,
    res: KBox<UserMrRes>,
    pd_users: Arc<Atomic<u32>>,
    dev: Arc<IbDevice>,
}

impl UserMr {
    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.res.lkey
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.res.rkey
    }
}

impl Drop for UserMr {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Mr, &self.res);
        self.pd_users.fetch_sub(1, Relaxed);
    }
}

/// What resource tracking shows of a user CQ.
pub struct UserCqRes {
    task: ARef<Task>,
    ctx_id: u32,
    cqe: Atomic<u32>,
    users: Arc<Atomic<u32>>,
}

impl UserCqRes {
    /// Its size (C's `cq->cqe`).
    pub fn cqe(&self) -> u32 {
        self.cqe.load(Relaxed)
    }

    /// The QPs using it.
    pub fn users(&self) -> u64 {
        self.users.load(Relaxed).into()
    }

    /// The id of its context (netlink's `CTXN`).
    pub fn ctx_id(&self) -> u32 {
        self.ctx_id
    }

    /// The pid of the task that made it, as the caller sees it (0 once that task exited).
    pub fn pid(&self) -> i32 {
        task_pid::pid_vnr(&self.task)
    }
}

impl Tracked for UserCqRes {}

/// A CQ made for user space; the driver destroys it when it is dropped.
pub struct UserCq {
    /// Dropped first (field order, after `Drop::drop` unlists it).
    driver: KBox<dyn CqObject>,
    res: KBox<UserCqRes>,
    dev: Arc<IbDevice>,
}

impl UserCq {
    /// Its size as user space sees it (C's `cq->cqe`).
    pub fn cqe(&self) -> u32 {
        self.res.cqe()
    }

    /// Gives it room for `cqe` completions in the new ring the driver's request in `udata`
    /// describes (C's `ib_uverbs_resize_cq` and the driver's `resize_user_cq`); returns the size
    /// made, which the CQ reports from then on.
    pub fn resize(&self, cqe: u32, udata: &Udata) -> Result<u32> {
        self.driver.resize(cqe, Some(udata))?;
        let made = self.driver.size().unwrap_or(cqe);
        self.res.cqe.store(made, Relaxed);
        Ok(made)
    }

    /// Arms its completion event from the kernel (REQ_NOTIFY_CQ, for a driver that serves it:
    /// [`crate::verbs::ops::UverbsAbi::data_path_cmds`]).
    pub fn req_notify(&self, solicited: bool) -> Result {
        self.driver.req_notify(solicited)
    }

    /// The QPs using it: while there are any, it cannot be destroyed (C's `EBUSY`).
    pub fn users(&self) -> u32 {
        self.res.users.load(Relaxed)
    }
}

impl Drop for UserCq {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Cq, &self.res);
    }
}

/// A QP user space asks for (C's `ib_qp_init_attr` from CREATE_QP).
pub struct UserQpInit<'a> {
    /// Transport type.
    pub qp_type: QpType,
    /// The CQ of its sends.
    pub send_cq: &'a UserCq,
    /// The CQ of its receives.
    pub recv_cq: &'a UserCq,
    /// Work queue sizes asked for.
    pub cap: QpCap,
    /// Every send completes with a CQE.
    pub sq_sig_all: bool,
    /// The SRQ it receives from (it has no receive queue of its own then).
    pub srq: Option<&'a UserSrq>,
}

/// What resource tracking shows of a user QP.
pub struct UserQpRes {
    task: ARef<Task>,
    pd_id: u32,
    qp_num: u32,
    qp_type: QpType,
    /// The port a modify last set, 0 before (C's `qp->port`).
    port: Atomic<u32>,
    /// The driver's QP, for the attributes a listing queries.
    drv: Option<Arc<dyn QpObject>>,
    /// The tracking id of the SRQ it receives from (an SRQ's listing names its QPs).
    srq_id: Option<u32>,
}

impl UserQpRes {
    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }

    /// Its transport.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// The port a modify last set, 0 before.
    pub fn port(&self) -> u32 {
        self.port.load(Relaxed)
    }

    /// The id of its PD (netlink's `PDN`).
    pub fn pd_id(&self) -> u32 {
        self.pd_id
    }

    /// The tracking id of the SRQ it receives from, if any.
    pub fn srq_id(&self) -> Option<u32> {
        self.srq_id
    }

    /// Its attributes, from the driver.
    pub fn query(&self) -> Result<QpAttr> {
        self.drv.as_ref().ok_or(EINVAL)?.query()
    }

    /// The pid of the task that made it, as the caller sees it (0 once that task exited).
    pub fn pid(&self) -> i32 {
        task_pid::pid_vnr(&self.task)
    }
}

impl Tracked for UserQpRes {}

/// A QP made for user space; the driver destroys it when it is dropped.
pub struct UserQp {
    driver: Arc<dyn QpObject>,
    res: KBox<UserQpRes>,
    /// The state the last modify left (C's `qp->state` as `ib_modify_qp_is_ok` checks it).
    state: Arc<kernel::sync::Mutex<QpState>>,
    cap: QpCap,
    /// The use counts of its PD, CQs and SRQ.
    users: KVec<Arc<Atomic<u32>>>,
    dev: Arc<IbDevice>,
}

impl UserQp {
    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.res.qp_num
    }

    /// The queue sizes as the driver made them.
    pub fn cap(&self) -> QpCap {
        self.cap
    }

    /// Its transport.
    pub fn qp_type(&self) -> QpType {
        self.res.qp_type
    }

    /// The port a modify last set, 0 before (C's `qp->port`).
    pub fn port(&self) -> u32 {
        self.res.port()
    }

    /// Applies a modify (C's `ib_modify_qp_with_udata`): checked as a kernel QP's, with the
    /// path's next hop resolved on a RoCE port, then applied by the driver with `udata`
    /// ([`QpModify::apply`]).
    pub fn modify(&self, attr: &QpAttr, mask: QpAttrMask, udata: &Udata) -> Result {
        QpModify {
            dev: &self.dev,
            drv: &*self.driver,
            qp_type: self.res.qp_type,
            state: &self.state,
            port: &self.res.port,
        }
        .apply(attr, mask, Some(udata))
    }

    /// The QP's attributes and queue sizes, from the driver (the sizes made when it does not
    /// report them).
    pub fn query(&self) -> Result<(QpAttr, QpCap)> {
        let (attr, cap) = self.driver.query_with_cap()?;
        Ok((attr, cap.unwrap_or(self.cap)))
    }

    /// Starts the driver's send work with `wrs` (POST_SEND, for a driver that serves it:
    /// [`crate::verbs::ops::UverbsAbi::data_path_cmds`]; its library has usually written the
    /// requests to the queue already, and `wrs` is empty).
    pub fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        crate::verbs::post_send_checked(&self.dev, wrs, |w| {
            // SAFETY: `post_send_checked` passes only requests whose AHs are of this QP's
            // device.
            unsafe { self.driver.post_send(w) }
        })
    }
}

impl Drop for UserQp {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Qp, &self.res);
        // The listing's reference goes first: the driver destroys the QP when the last goes,
        // which is `self.driver`, dropped after this.
        self.res.drv = None;
        for u in self.users.iter() {
            u.fetch_sub(1, Relaxed);
        }
    }
}

/// What resource tracking shows of a user SRQ.
pub struct UserSrqRes {
    task: ARef<Task>,
    pd_id: u32,
    id: Atomic<u32>,
    users: Arc<Atomic<u32>>,
}

impl UserSrqRes {
    /// The id resource tracking gave it (netlink's `SRQN`).
    pub fn id(&self) -> u32 {
        self.id.load(Relaxed)
    }

    /// The id of its PD (netlink's `PDN`).
    pub fn pd_id(&self) -> u32 {
        self.pd_id
    }

    /// The pid of the task that made it, as the caller sees it (0 once that task exited).
    pub fn pid(&self) -> i32 {
        task_pid::pid_vnr(&self.task)
    }
}

impl Tracked for UserSrqRes {}

/// An SRQ made for user space; the driver destroys it when it is dropped.
pub struct UserSrq {
    /// Dropped first (field order, after `Drop::drop` unlists it).
    driver: KBox<dyn SrqObject>,
    res: KBox<UserSrqRes>,
    pd_users: Arc<Atomic<u32>>,
    dev: Arc<IbDevice>,
}

impl UserSrq {
    /// The QPs receiving from it: while there are any, it cannot be destroyed (C's `EBUSY`).
    pub fn users(&self) -> u32 {
        self.res.users.load(Relaxed)
    }

    /// Resizes it or arms its limit (C's `ops.modify_srq` with `udata`; the driver checks).
    pub fn modify(&self, attr: &SrqAttr, mask: SrqAttrMask, udata: &Udata) -> Result {
        self.driver.modify(attr, mask, Some(udata))
    }

    /// Its attributes, from the driver (C's `ib_query_srq`).
    pub fn query(&self) -> Result<SrqAttr> {
        self.driver.query()
    }
}

impl Drop for UserSrq {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Srq, &self.res);
        self.pd_users.fetch_sub(1, Relaxed);
    }
}

/// A protection domain made for user space; the driver frees it when it is dropped.
pub struct UserPd {
    /// Dropped first (field order, after `Drop::drop` unlists it): the driver frees its state
    /// while the device is held.
    driver: KBox<dyn PdObject>,
    res: KBox<UserPdRes>,
    dev: Arc<IbDevice>,
}

impl Drop for UserPd {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Pd, &self.res);
    }
}

impl Drop for UContext {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Ctx, &self.res);
    }
}
