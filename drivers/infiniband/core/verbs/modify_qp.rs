// SPDX-License-Identifier: GPL-2.0

//! The core's part of a QP modify (C's `_ib_modify_qp`), one for kernel consumers' QPs
//! ([`crate::verbs::Qp::modify`]) and user contexts' (`user::ucontext::UserQp::modify`): the
//! transition checked against the QP state machine, the port, a user path's next hop resolved
//! on a RoCE port, the path's source GID; then the driver applies it (a user QP's with its
//! `udata`), and the core keeps the state and the port it left.

use crate::{
    attrs::{CORE_CAP_PROT_ROCE, CORE_CAP_PROT_ROCE_UDP_ENCAP},
    device::ib_device::IbDevice,
    user::udata::Udata,
    verbs::ops::QpObject,
    verbs::qp_transitions::modify_qp_is_ok,
    verbs::types::{GlobalRoute, QpAttr, QpAttrField, QpAttrMask, QpState, QpType},
};
use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Mutex,
    },
};

/// Whether `port` of `dev` is a RoCE port (RoCE v1 or v2).
pub(crate) fn is_roce_port(dev: &IbDevice, port: u32) -> bool {
    dev.port_immutable(port).is_some_and(|i| {
        i.core_cap_flags & (CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) != 0
    })
}

/// Whether an address with global route `grh` is of the type `port` needs (C's
/// `rdma_ah_find_type`): a RoCE port's addresses have a GRH and the next hop's MAC, an
/// InfiniBand port's none.
pub(crate) fn av_type_ok(dev: &IbDevice, port: u32, grh: Option<&GlobalRoute>) -> bool {
    is_roce_port(dev, port) == grh.is_some_and(|g| g.roce_dmac.is_some())
}

/// Whether moving a `qp_type` QP from `cur` to `next` with `mask` is allowed: C's
/// `ib_modify_qp_is_ok` ([`modify_qp_is_ok`], the one table), and a modify
/// without the state bit stays in `cur` (`next` must be `cur` then).
pub fn qp_transition_ok(cur: QpState, next: QpState, qp_type: QpType, mask: QpAttrMask) -> bool {
    (cur == next || mask.contains(QpAttrField::State))
        && modify_qp_is_ok(cur as u32, next as u32, qp_type as u32, mask.into())
}

/// The port a modify's path is on: the one it sets, else the QP's (`qp_port`).
fn path_port(attr: &QpAttr, mask: QpAttrMask, qp_port: u32) -> u32 {
    if mask.contains(QpAttrField::Port) {
        attr.port_num.into()
    } else {
        qp_port
    }
}

/// C's `rdma_fill_sgid_attr` for a modify with an address vector: a GRH names a source GID of
/// the path's port, `EINVAL` when there is none or the address is not of the port's type.
fn check_path_sgid(dev: &IbDevice, attr: &QpAttr, mask: QpAttrMask, qp_port: u32) -> Result {
    let (true, Some(g)) = (mask.contains(QpAttrField::Av), &attr.grh) else {
        return Ok(());
    };
    let port = path_port(attr, mask, qp_port);
    if !av_type_ok(dev, port, Some(g)) {
        return Err(EINVAL);
    }
    dev.cached_gid(port, g.sgid_index.into())
        .map(|_| ())
        .ok_or(EINVAL)
}

/// A new path user space gives a connected QP on a RoCE port, with the next hop's MAC and the
/// route's hop limit filled in (C's `ib_resolve_eth_dmac` in `_ib_modify_qp` with `udata`:
/// user space knows only GIDs; a kernel consumer's path has its MAC already); `None` when
/// there is nothing to resolve. A source GID entry that does not exist is left to the path
/// check (`EINVAL`).
fn resolve_roce_path(
    dev: &IbDevice,
    qp_type: QpType,
    attr: &QpAttr,
    mask: QpAttrMask,
    qp_port: u32,
) -> Result<Option<QpAttr>> {
    let Some(g) = attr.grh.as_ref().filter(|_| mask.contains(QpAttrField::Av)) else {
        return Ok(None);
    };
    if !matches!(qp_type, QpType::Rc | QpType::Uc) {
        return Ok(None);
    }
    let port = path_port(attr, mask, qp_port);
    let Some(sgid) = dev
        .gid_entry(port, g.sgid_index.into())
        .filter(|_| is_roce_port(dev, port))
    else {
        return Ok(None);
    };
    let (dmac, hop_limit) = crate::addr::l2_eth::resolve_eth_dmac(&sgid, &g.dgid.0)?;
    let mut path = *attr;
    if let Some(pg) = path.grh.as_mut() {
        pg.roce_dmac = Some(dmac);
        if let Some(h) = hop_limit {
            pg.hop_limit = h;
        }
    }
    Ok(Some(path))
}

/// What a modify reads and changes of a QP, kernel or user.
pub(crate) struct QpModify<'a> {
    /// The QP's device.
    pub(crate) dev: &'a IbDevice,
    /// The driver's QP.
    pub(crate) drv: &'a dyn QpObject,
    /// Its transport.
    pub(crate) qp_type: QpType,
    /// The state the last modify left (C's `qp->state` as `ib_modify_qp_is_ok` checks it);
    /// held across the modify, so that modifies of one QP go one at a time.
    pub(crate) state: &'a Mutex<QpState>,
    /// The port a modify last set, 0 before (C's `qp->port`).
    pub(crate) port: &'a Atomic<u32>,
}

impl QpModify<'_> {
    /// Applies a modify: the transition and its attributes checked as C's
    /// `ib_modify_qp_is_ok` (by the driver, for a C driver, with its transport's rules: an
    /// iWARP QP goes to INIT with its access flags alone and to RTS through its connection
    /// manager), the port, a user QP's RoCE path resolved, the path's source GID (each
    /// `EINVAL`); then the driver applies it, with `udata` for a user QP.
    pub(crate) fn apply(&self, attr: &QpAttr, mask: QpAttrMask, udata: Option<&Udata>) -> Result {
        let mut state = self.state.lock();
        let next = if mask.contains(QpAttrField::State) {
            attr.qp_state
        } else {
            *state
        };
        if !self.dev.ops().checks_qp_transitions()
            && !qp_transition_ok(*state, next, self.qp_type, mask)
        {
            return Err(EINVAL);
        }
        if mask.contains(QpAttrField::Port) && !self.dev.is_valid_port(attr.port_num.into()) {
            return Err(EINVAL);
        }
        let qp_port = self.port.load(Relaxed);
        let resolved = match udata {
            Some(_) => resolve_roce_path(self.dev, self.qp_type, attr, mask, qp_port)?,
            None => None,
        };
        let attr = resolved.as_ref().unwrap_or(attr);
        check_path_sgid(self.dev, attr, mask, qp_port)?;
        self.drv.modify(attr, mask, udata)?;
        *state = next;
        if mask.contains(QpAttrField::Port) {
            self.port.store(attr.port_num.into(), Relaxed);
        }
        Ok(())
    }
}
