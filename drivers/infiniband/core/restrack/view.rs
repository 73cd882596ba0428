// SPDX-License-Identifier: GPL-2.0

//! What a tracked object is ([`ResView`]): resource tracking lists objects of every kind behind
//! one trait, and netlink, which fills each kind's attributes, finds the object's type here.

use crate::{
    restrack::{cm_id::CmIdEntry, Tracked},
    user::ucontext::{UserCqRes, UserCtxRes, UserMrRes, UserPdRes, UserQpRes, UserSrqRes},
    verbs::{Cq, Mr, Pd, Qp, Srq},
};
use core::any::Any;

/// A tracked object as netlink shows it.
pub(crate) enum ResView<'a> {
    /// A protection domain.
    Pd(&'a Pd),
    /// A completion queue.
    Cq(&'a Cq),
    /// A queue pair.
    Qp(&'a Qp),
    /// A memory region.
    Mr(&'a Mr),
    /// A shared receive queue.
    Srq(&'a Srq),
    /// A user context.
    Ctx(&'a UserCtxRes),
    /// A protection domain of a user context.
    UserPd(&'a UserPdRes),
    /// A memory region of user memory.
    UserMr(&'a UserMrRes),
    /// A completion queue of a user context.
    UserCq(&'a UserCqRes),
    /// A queue pair of a user context.
    UserQp(&'a UserQpRes),
    /// A shared receive queue of a user context.
    UserSrq(&'a UserSrqRes),
    /// A C connection manager ID.
    CmId(&'a CmIdEntry),
}

impl<'a> ResView<'a> {
    /// The tracked object `obj` as what it is (`None` for a type this module does not know,
    /// which no tracked object has).
    pub(crate) fn of(obj: &'a dyn Tracked) -> Option<Self> {
        let any: &'a dyn Any = obj;
        macro_rules! first_of {
            ($($ty:ty => $variant:ident),* $(,)?) => {
                $(if let Some(o) = any.downcast_ref::<$ty>() {
                    return Some(Self::$variant(o));
                })*
            };
        }
        first_of!(
            Pd => Pd,
            Cq => Cq,
            Qp => Qp,
            Mr => Mr,
            Srq => Srq,
            UserCtxRes => Ctx,
            UserPdRes => UserPd,
            UserMrRes => UserMr,
            UserCqRes => UserCq,
            UserQpRes => UserQp,
            UserSrqRes => UserSrq,
            CmIdEntry => CmId,
        );
        None
    }
}
