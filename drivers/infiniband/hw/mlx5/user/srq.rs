// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues of user space (C's `mlx5_ib_create_srq` with user data:
//! `create_srq_user`, `destroy_srq_user`; `mlx5_ib_modify_srq`, `mlx5_ib_query_srq`,
//! `mlx5_ib_destroy_srq` for a user SRQ). libmlx5 allocates the ring of linked WQEs and the
//! doorbell record in its own memory and describes them in its request (`struct
//! mlx5_ib_create_srq`); the driver sizes the ring as for a kernel SRQ, pins both, makes the
//! RMP on them (CREATE_RMP, as C on a function at ISSI 1) and answers its number (`struct
//! mlx5_ib_create_srq_resp`). User space posts receives itself; the kernel forwards the SRQ's
//! events (limit reached, error).

use crate::{
    srq::{self, RmpMemory, SrqSize},
    user::uabi::{CreateSrqReq, CreateSrqResp},
    user::umem::{page_offset, UserMemory},
};
use ib_core::{device::events::EventNotifier, user::udata::Udata, verbs::types::SrqAttr};
use kernel::prelude::*;
use mlx5_core::{
    auxdev::{Mlx5Device, ResourceRegistration},
    cmd::commands::Commands,
};

/// `sizeof(struct mlx5_ib_create_srq)` (the KUnit suite builds requests of it).
#[cfg(CONFIG_KUNIT)]
const REQ_SIZE: usize = size_of::<CreateSrqReq>();
/// `offsetofend(struct mlx5_ib_create_srq, flags)`: the shortest request.
const REQ_MIN: usize = 20;

/// libmlx5's request (`struct mlx5_ib_create_srq`).
#[derive(Debug, PartialEq, Eq)]
struct Request {
    buf_addr: u64,
    db_addr: u64,
    /// `reserved0` or `reserved1` is not zero.
    reserved: bool,
}

impl Request {
    fn from_abi(r: &CreateSrqReq) -> Self {
        Self {
            buf_addr: r.buf_addr,
            db_addr: r.db_addr,
            reserved: r.reserved0 != 0 || r.reserved1 != 0,
        }
    }

    /// C's check of the request alone: reserved fields set are `EINVAL`.
    fn check(&self) -> Result {
        if self.reserved {
            return Err(EINVAL);
        }
        Ok(())
    }
}

/// A user SRQ's driver state.
pub(crate) struct Mlx5UserSrq {
    srqn: u32,
    size: SrqSize,
    /// Dropped before DESTROY_RMP: no event reaches the SRQ's owner after that.
    events: Option<ResourceRegistration>,
    buf: Option<UserMemory>,
    db: Option<UserMemory>,
}

impl Mlx5UserSrq {
    /// The RMP number (what a QP receiving from it names).
    pub(crate) fn srqn(&self) -> u32 {
        self.srqn
    }

    /// Arms the limit (C's `mlx5_ib_modify_srq`).
    pub(crate) fn arm(&self, cmds: &Commands, limit: u32) -> Result {
        srq::arm_rmp(cmds, self.srqn, self.size.max, limit)
    }

    /// Its attributes: what it holds, and the limit armed as the device reports it.
    pub(crate) fn query(&self, cmds: &Commands) -> Result<SrqAttr> {
        Ok(SrqAttr {
            max_wr: self.size.max - 1,
            max_sge: self.size.max_gs,
            srq_limit: srq::query_rmp_limit(cmds, self.srqn)?,
        })
    }
}

/// Creates a basic SRQ of user space in PD `pdn`, shaped `size` (the caller sized it with C's
/// checks), from libmlx5's request in `udata` (C's `create_srq_user` order: the request's
/// length and reserved fields, the ring pinned, the doorbell record pinned). Returns it and
/// what it holds as user space sees it.
pub(crate) fn create(
    dev: &Mlx5Device,
    size: SrqSize,
    pdn: u32,
    attr: &SrqAttr,
    udata: &Udata,
    events: &EventNotifier,
) -> Result<(Mlx5UserSrq, SrqAttr)> {
    let req = Request::from_abi(&udata.read_in_as::<CreateSrqReq>(REQ_MIN)?);
    req.check()?;
    // Its `flags` are not read: `MLX5_SRQ_FLAG_SIGNATURE` asks for WQE signatures, which the
    // device is not told of here (libmlx5 sets it only when asked to by its environment); C
    // ignores the other bits.
    let buf_len = (size.max as usize) << size.wqe_shift;
    let buf = UserMemory::pin(dev, req.buf_addr, buf_len, false)?;
    let db = UserMemory::pin(dev, req.db_addr, 8, true)?;
    // The ring's offset in its first page must be a whole number of 64-byte units (C's
    // quantized page offset finds no page size otherwise: `EINVAL`).
    let offset = page_offset(req.buf_addr)?;
    let pas = buf.page_list()?;
    let mem = RmpMemory {
        pas: &pas,
        page_offset: offset,
        dbr: db.first_dma(),
    };
    let srqn = match srq::create_rmp(dev, size, pdn, &mem) {
        Ok(n) => n,
        Err(e) => {
            // A timed-out CREATE_RMP may have made the RMP: its memory stays pinned for ever.
            if e == ETIMEDOUT {
                core::mem::forget(buf);
                core::mem::forget(db);
            }
            return Err(e);
        }
    };
    let mut s = Mlx5UserSrq {
        srqn,
        size,
        events: None,
        buf: Some(buf),
        db: Some(db),
    };
    let done = srq::register_events(dev, srqn, events).and_then(|reg| {
        s.events = Some(reg);
        let mut resp = CreateSrqResp(Default::default());
        resp.srqn = srqn;
        udata.respond_as(&resp)
    });
    if let Err(e) = done {
        let _ = destroy(dev.commands(), s);
        return Err(e);
    }
    let made = SrqAttr {
        max_wr: size.max - 1,
        max_sge: attr.max_sge,
        srq_limit: attr.srq_limit,
    };
    Ok((s, made))
}

/// Destroys a user SRQ (C's `mlx5_ib_destroy_srq`): its handler goes, then DESTROY_RMP; its
/// memory is unpinned unless that failed.
pub(crate) fn destroy(cmds: &Commands, mut s: Mlx5UserSrq) -> Result {
    drop(s.events.take());
    let r = srq::destroy_rmp(cmds, s.srqn);
    if r.is_err() {
        core::mem::forget(s.buf.take());
        core::mem::forget(s.db.take());
    }
    r
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_user_srq)]
mod tests {
    use super::*;
    use kernel::transmute::FromBytes;

    /// The request of `b`, as decoded.
    fn parse(b: &[u8; REQ_SIZE]) -> Result<Request> {
        Ok(Request::from_abi(
            &CreateSrqReq::from_bytes_copy(b).ok_or(EINVAL)?,
        ))
    }

    #[test]
    fn request_parsed_as_c() -> Result {
        let mut b = [0u8; REQ_SIZE];
        b[0..8].copy_from_slice(&0x7f00_0000_3000u64.to_le_bytes());
        b[8..16].copy_from_slice(&0x7f00_0000_4010u64.to_le_bytes());
        b[16..20].copy_from_slice(&1u32.to_le_bytes());
        b[24..28].copy_from_slice(&0xff_ffffu32.to_le_bytes());
        let r = parse(&b)?;
        assert_eq!(
            r,
            Request {
                buf_addr: 0x7f00_0000_3000,
                db_addr: 0x7f00_0000_4010,
                reserved: false,
            }
        );
        assert_eq!(r.check(), Ok(()));
        // `uidx` (bytes 24..28) and `flags` (16..20) are not checked; `reserved0` (20..24)
        // and `reserved1` (28..32), each byte: EINVAL (`uverbs_badinput`'s CREATE_SRQ cases).
        for at in [16, 17, 18, 19, 24, 25, 26, 27] {
            let mut x = b;
            x[at] = 0xff;
            assert_eq!(parse(&x)?.check(), Ok(()));
        }
        for at in [20, 21, 22, 23, 28, 29, 30, 31] {
            let mut x = b;
            x[at] = 1;
            assert!(parse(&x)?.reserved);
            assert_eq!(parse(&x)?.check(), Err(EINVAL));
        }
        // A ring 8 bytes into a page: EINVAL; 64-byte units otherwise.
        assert_eq!(page_offset(0x7f00_0000_3008), Err(EINVAL));
        assert_eq!(page_offset(0x7f00_0000_3080), Ok(2));
        Ok(())
    }
}
