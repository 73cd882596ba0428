// SPDX-License-Identifier: GPL-2.0

//! Memory regions of user memory (C's `ib_uverbs_reg_mr`, `ib_uverbs_rereg_mr`,
//! `ib_uverbs_dereg_mr` and the MR object's DESTROY and QUERY methods): the access rights
//! checked as C's `ib_check_mr_access`, the PD looked up, the memory pinned and registered by
//! the driver; the MR's handle and keys answer.

use crate::{
    file::objects::UMr,
    file::uobjects::UObject,
    ioctl::bundle::IoctlBundle,
    ioctl::ids::{query_mr as qm, OBJECT_MR},
    uabi::{DeregMr, RegMr, RegMrResp, ReregMr, ReregMrResp},
    write::bundle::Bundle,
};
use ib_core::verbs::types::{Access, AccessFlags, UserMrInit};
use kernel::prelude::*;

/// `IB_ACCESS_*` bits of a user request (`enum ib_access_flags`).
mod access {
    pub(super) const LOCAL_WRITE: u32 = 1 << 0;
    pub(super) const REMOTE_WRITE: u32 = 1 << 1;
    pub(super) const REMOTE_READ: u32 = 1 << 2;
    pub(super) const REMOTE_ATOMIC: u32 = 1 << 3;
    pub(super) const MW_BIND: u32 = 1 << 4;
    pub(super) const ON_DEMAND: u32 = 1 << 6;
    pub(super) const FLUSH_GLOBAL: u32 = 1 << 8;
    pub(super) const FLUSH_PERSISTENT: u32 = 1 << 9;
    /// `IB_ACCESS_SUPPORTED`: bits 0..9 and the optional range, bits 20..29.
    pub(super) const SUPPORTED: u32 = 0x3ff | 0x3ff0_0000;
}

/// C's `ib_check_mr_access` for a device without on-demand paging or flush support: remote
/// write or atomics need local write (`EINVAL`), unknown bits are `EINVAL`, on-demand paging
/// and flushes `EOPNOTSUPP`.
pub(crate) fn check_access(flags: u32) -> Result {
    if flags & (access::REMOTE_ATOMIC | access::REMOTE_WRITE) != 0
        && flags & access::LOCAL_WRITE == 0
    {
        return Err(EINVAL);
    }
    if flags & !access::SUPPORTED != 0 {
        return Err(EINVAL);
    }
    if flags & (access::ON_DEMAND | access::FLUSH_GLOBAL | access::FLUSH_PERSISTENT) != 0 {
        return Err(EOPNOTSUPP);
    }
    Ok(())
}

/// The rights the device checks, and whether the memory is written (C's
/// `ib_access_writable`).
fn rights(flags: u32) -> (AccessFlags, bool) {
    let mut a = AccessFlags::default();
    for (bit, right) in [
        (access::LOCAL_WRITE, Access::LocalWrite),
        (access::REMOTE_WRITE, Access::RemoteWrite),
        (access::REMOTE_READ, Access::RemoteRead),
        (access::REMOTE_ATOMIC, Access::RemoteAtomic),
    ] {
        if flags & bit != 0 {
            a |= right;
        }
    }
    let writable = flags
        & (access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC | access::MW_BIND)
        != 0;
    (a, writable)
}

/// Registers `start..start + length` at `iova` in PD `pd` of the file with access bits `flags`
/// (checked as C's `ib_check_mr_access`).
fn register(
    c: &crate::file::ufile::Context,
    pd: u32,
    start: u64,
    length: u64,
    iova: u64,
    flags: u32,
    udata: &ib_core::user::udata::Udata,
) -> Result<UMr> {
    let (access, writable) = rights(flags);
    let init = UserMrInit {
        start,
        length,
        iova,
        access,
        writable,
    };
    let mr = c.objects.pd(pd.into())?.reg_mr(&init, udata)?;
    Ok(UMr {
        mr,
        pd,
        start,
        length,
        iova,
        access: flags,
    })
}

/// REG_MR (`struct ib_uverbs_reg_mr`: response, start, length, hca_va, pd_handle,
/// access_flags): a start and an address that differ within their page are `EINVAL`; the
/// answer is `{mr_handle, lkey, rkey}`. If it cannot be written, the MR is destroyed again.
pub(crate) fn reg_mr(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<RegMr>()?;
    let (start, length, iova) = (req.start, req.length, req.hca_va);
    let (pd_handle, flags) = (req.pd_handle, req.access_flags);
    if (start ^ iova) & 0xfff != 0 {
        return Err(EINVAL);
    }
    let driver = b.driver;
    b.ufile.with_context(|c| {
        check_access(flags)?;
        let mr = register(c, pd_handle, start, length, iova, flags, &driver)?;
        let (lkey, rkey) = (mr.mr.lkey(), mr.mr.rkey());
        let handle = c.objects.insert(UObject::Mr(mr))?;
        let mut resp = RegMrResp(Default::default());
        (resp.mr_handle, resp.lkey, resp.rkey) = (handle, lkey, rkey);
        if let Err(e) = b.respond_as(&resp) {
            drop(c.objects.remove(handle.into(), OBJECT_MR));
            return Err(e);
        }
        Ok(())
    })
}

/// `IB_MR_REREG_*`: what a re-registration changes.
mod rereg {
    pub(super) const TRANS: u32 = 1 << 0;
    pub(super) const PD: u32 = 1 << 1;
    pub(super) const ACCESS: u32 = 1 << 2;
    pub(super) const SUPPORTED: u32 = TRANS | PD | ACCESS;
}

/// REREG_MR (`struct ib_uverbs_rereg_mr`: response, mr_handle, flags, start, length, hca_va,
/// pd_handle, access_flags), checked in C's order: no flag `EINVAL`, an unknown one
/// `EOPNOTSUPP`, a new range whose start and address differ within their page `EINVAL`, then
/// the MR, the new access rights and the new PD. The MR is made again, as C's mlx5 does when it
/// cannot change an MR in place (its `recreate` path, with new keys): the new one is registered
/// with what the request changes and what the old one had otherwise, takes the old one's handle,
/// and the old one is deregistered. Answers `{lkey, rkey}`.
pub(crate) fn rereg_mr(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ReregMr>()?;
    let (handle, flags) = (req.mr_handle, req.flags);
    let (start, length, iova) = (req.start, req.length, req.hca_va);
    let (pd_handle, access) = (req.pd_handle, req.access_flags);
    if flags == 0 {
        return Err(EINVAL);
    }
    if flags & !rereg::SUPPORTED != 0 {
        return Err(EOPNOTSUPP);
    }
    if flags & rereg::TRANS != 0 && (start ^ iova) & 0xfff != 0 {
        return Err(EINVAL);
    }
    let driver = b.driver;
    let (lkey, rkey) = b.ufile.with_context(|c| {
        let old = c.objects.mr_mut(handle.into())?;
        let (mut pd, mut range, mut bits) = (old.pd, (old.start, old.length, old.iova), old.access);
        if flags & rereg::ACCESS != 0 {
            check_access(access)?;
            bits = access;
        }
        if flags & rereg::PD != 0 {
            // Looked up (C's errnos) by the registration, before the driver runs.
            pd = pd_handle;
        }
        if flags & rereg::TRANS != 0 {
            range = (start, length, iova);
        }
        let new = register(c, pd, range.0, range.1, range.2, bits, &driver)?;
        let keys = (new.mr.lkey(), new.mr.rkey());
        // The old MR is deregistered when it is dropped here, after the new one took its place.
        drop(core::mem::replace(c.objects.mr_mut(handle.into())?, new));
        Ok(keys)
    })?;
    let mut resp = ReregMrResp(Default::default());
    (resp.lkey, resp.rkey) = (lkey, rkey);
    b.respond_as(&resp)
}

/// DEREG_MR (`struct ib_uverbs_dereg_mr`: the handle).
pub(crate) fn dereg_mr(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<DeregMr>()?;
    b.ufile
        .with_objects(|o| o.remove(req.mr_handle.into(), OBJECT_MR).map(drop))
}

/// The MR object's DESTROY method: the handle was checked with the attributes.
pub(crate) fn destroy_mr(b: &mut IoctlBundle<'_>) -> Result {
    let handle = b.idr_handle(crate::ioctl::ids::mr_destroy::HANDLE)?;
    b.ufile
        .with_objects(|o| o.remove(handle, OBJECT_MR).map(drop))
}

/// The MR object's QUERY method (C's handler, what `ibv_import_mr` sends): its keys and
/// length, then its IOVA if asked for.
pub(crate) fn query_mr(b: &mut IoctlBundle<'_>) -> Result {
    let handle = b.idr_handle(qm::HANDLE)?;
    let (lkey, rkey, length, iova) = b.ufile.with_objects(|o| {
        let m = o.mr_mut(handle)?;
        Ok((m.mr.lkey(), m.mr.rkey(), m.length, m.iova))
    })?;
    b.copy_to(qm::RESP_LKEY, &lkey.to_le_bytes())?;
    b.copy_to(qm::RESP_RKEY, &rkey.to_le_bytes())?;
    b.copy_to(qm::RESP_LENGTH, &length.to_le_bytes())?;
    b.copy_to_optional(qm::RESP_IOVA, &iova.to_le_bytes())
}

#[kernel::macros::kunit_tests(rdma_rs_uverbs_mr)]
mod tests {
    use super::*;

    #[test]
    fn access_checked_as_c() {
        assert_eq!(
            check_access(access::LOCAL_WRITE | access::REMOTE_WRITE),
            Ok(())
        );
        assert_eq!(check_access(access::REMOTE_WRITE), Err(EINVAL));
        assert_eq!(check_access(access::REMOTE_ATOMIC), Err(EINVAL));
        assert_eq!(check_access(1 << 10), Err(EINVAL));
        assert_eq!(check_access(1 << 30), Err(EINVAL));
        assert_eq!(check_access(1 << 20), Ok(()));
        assert_eq!(check_access(access::ON_DEMAND), Err(EOPNOTSUPP));
        assert_eq!(check_access(access::FLUSH_GLOBAL), Err(EOPNOTSUPP));
        assert_eq!(
            rights(access::REMOTE_READ),
            (Access::RemoteRead.into(), false)
        );
        assert!(rights(access::MW_BIND).1);
    }
}
