// SPDX-License-Identifier: GPL-2.0

//! The legacy `write()` interface (C's `ib_uverbs_write` and `verify_hdr`,
//! `docs/uverbs-c-facts.md` §3.2): the command header, C's table of commands with its request
//! and response sizes, the header checks in C's order, and the split of the buffers into the
//! core's and the driver's part.
//!
//! The table has every command C's has, with C's sizes, so that malformed headers get C's
//! errnos for all of them. Commands whose handler is not written yet answer `EOPNOTSUPP` after
//! the header checks, as C's stub for a command a driver lacks.

use crate::{
    bundle::{Bundle, Handler},
    cmd_channel, cmd_cq, cmd_device, cmd_mr, cmd_pd, cmd_qp, cmd_srq,
    uabi::{CmdHdr, ExCmdHdr},
    ufile::Ufile,
};
use core::cell::Cell;
use ib_core::user::udata::Udata;
use kernel::{
    prelude::*,
    sync::Arc,
    uaccess::{UserPtr, UserSlice},
    uapi,
};

/// `IB_USER_VERBS_CMD_FLAG_EXTENDED`.
pub(crate) const CMD_FLAG_EXTENDED: u32 = 0x8000_0000;
/// `IB_USER_VERBS_CMD_COMMAND_MASK`.
const CMD_COMMAND_MASK: u32 = 0xff;
/// `sizeof(struct ib_uverbs_cmd_hdr)`.
const HDR_SIZE: usize = size_of::<CmdHdr>();
/// `sizeof(struct ib_uverbs_ex_cmd_hdr)`.
const EX_HDR_SIZE: usize = size_of::<ExCmdHdr>();
/// `IB_USER_VERBS_CMD_DESTROY_CQ`, which old rdma-core sent 8 bytes short.
const CMD_DESTROY_CQ: u32 = 20;

/// One write() command (C's `uverbs_api_write_method`).
pub(crate) struct WriteMethod {
    /// An extended command (`ib_uverbs_ex_cmd_hdr`, 8-byte words).
    pub(crate) is_ex: bool,
    /// Size of the core request (extended commands: 0, C does not record it).
    pub(crate) req_size: usize,
    /// Size of the core response.
    pub(crate) resp_size: usize,
    /// The request starts with the user address of the response.
    has_resp: bool,
    /// The request and response carry driver data after the core's.
    has_udata: bool,
    /// `None`: not written yet (`EOPNOTSUPP`).
    pub(crate) handler: Option<Handler>,
}

impl WriteMethod {
    /// A command with a response (C's `UAPI_DEF_WRITE_IO`).
    const fn io(req: usize, resp: usize, handler: Option<Handler>) -> Option<Self> {
        Some(Self {
            is_ex: false,
            req_size: req,
            resp_size: resp,
            has_resp: true,
            has_udata: false,
            handler,
        })
    }

    /// A command with a response and driver data (C's `UAPI_DEF_WRITE_UDATA_IO`).
    const fn udata_io(req: usize, resp: usize, handler: Option<Handler>) -> Option<Self> {
        Some(Self {
            is_ex: false,
            req_size: req,
            resp_size: resp,
            has_resp: true,
            has_udata: true,
            handler,
        })
    }

    /// A command without a response (C's `UAPI_DEF_WRITE_I`).
    const fn i(req: usize) -> Option<Self> {
        Some(Self {
            is_ex: false,
            req_size: req,
            resp_size: 0,
            has_resp: false,
            has_udata: false,
            handler: None,
        })
    }

    /// A command without a response, written (C's `UAPI_DEF_WRITE_I`).
    const fn i_with(req: usize, handler: Handler) -> Option<Self> {
        Some(Self {
            is_ex: false,
            req_size: req,
            resp_size: 0,
            has_resp: false,
            has_udata: false,
            handler: Some(handler),
        })
    }

    /// A command without a response, with driver data, written (C's `UAPI_DEF_WRITE_UDATA_I`).
    const fn udata_i_with(req: usize, handler: Handler) -> Option<Self> {
        Some(Self {
            is_ex: false,
            req_size: req,
            resp_size: 0,
            has_resp: false,
            has_udata: true,
            handler: Some(handler),
        })
    }

    /// An extended command (C records no sizes for them).
    const fn ex(handler: Option<Handler>) -> Option<Self> {
        Some(Self {
            is_ex: true,
            req_size: 0,
            resp_size: 0,
            has_resp: false,
            has_udata: false,
            handler,
        })
    }
}

/// C's `notsupp_method`: what the holes of the table are (checked as a non-extended command
/// with no sizes, then `EOPNOTSUPP`).
static NOTSUPP: WriteMethod = WriteMethod {
    is_ex: false,
    req_size: 0,
    resp_size: 0,
    has_resp: false,
    has_udata: false,
    handler: None,
};

/// The commands (`IB_USER_VERBS_CMD_*`), sizes from `include/uapi/rdma/ib_user_verbs.h`.
static WRITE: [Option<WriteMethod>; 41] = [
    /* 0 GET_CONTEXT */ WriteMethod::udata_io(8, 8, Some(cmd_device::get_context)),
    /* 1 QUERY_DEVICE */ WriteMethod::io(8, 176, Some(cmd_device::query_device)),
    /* 2 QUERY_PORT */ WriteMethod::io(16, 40, Some(cmd_device::query_port)),
    /* 3 ALLOC_PD */ WriteMethod::udata_io(8, 4, Some(cmd_pd::alloc_pd)),
    /* 4 DEALLOC_PD */ WriteMethod::i_with(4, cmd_pd::dealloc_pd),
    /* 5 CREATE_AH */ WriteMethod::udata_io(56, 4, None),
    /* 6 MODIFY_AH */ None,
    /* 7 QUERY_AH */ None,
    /* 8 DESTROY_AH */ WriteMethod::i(4),
    /* 9 REG_MR */ WriteMethod::udata_io(40, 12, Some(cmd_mr::reg_mr)),
    /* 10 REG_SMR */ None,
    /* 11 REREG_MR */ WriteMethod::udata_io(48, 8, Some(cmd_mr::rereg_mr)),
    /* 12 QUERY_MR */ None,
    /* 13 DEREG_MR */ WriteMethod::i_with(4, cmd_mr::dereg_mr),
    // Memory windows: not served (as C's table for an mlx5 function without `imaicl`).
    /* 14 ALLOC_MW */
    None,
    /* 15 BIND_MW */ None,
    /* 16 DEALLOC_MW */ None,
    /* 17 CREATE_COMP_CHANNEL */
    WriteMethod::io(8, 4, Some(cmd_channel::create_comp_channel)),
    /* 18 CREATE_CQ */ WriteMethod::udata_io(32, 8, Some(cmd_cq::create_cq)),
    /* 19 RESIZE_CQ */ WriteMethod::udata_io(16, 8, Some(cmd_cq::resize_cq)),
    /* 20 DESTROY_CQ */ WriteMethod::io(16, 8, Some(cmd_cq::destroy_cq)),
    // The data-path commands are not in C's default command mask (only drivers that poll and
    // post in the kernel for user space enable them; mlx5 does not).
    /* 21 POLL_CQ */
    None,
    /* 22 PEEK_CQ */ None,
    /* 23 REQ_NOTIFY_CQ */ None,
    /* 24 CREATE_QP */ WriteMethod::udata_io(56, 32, None),
    /* 25 QUERY_QP */ WriteMethod::io(16, 128, Some(cmd_qp::query_qp)),
    /* 26 MODIFY_QP */ WriteMethod::i_with(112, cmd_qp::modify_qp),
    /* 27 DESTROY_QP */ WriteMethod::io(16, 4, Some(cmd_qp::destroy_qp)),
    /* 28 POST_SEND */ None,
    /* 29 POST_RECV */ None,
    /* 30 ATTACH_MCAST */ WriteMethod::i(24),
    /* 31 DETACH_MCAST */ WriteMethod::i(24),
    /* 32 CREATE_SRQ */ WriteMethod::udata_io(32, 16, Some(cmd_srq::create_srq)),
    /* 33 MODIFY_SRQ */ WriteMethod::udata_i_with(16, cmd_srq::modify_srq),
    /* 34 QUERY_SRQ */ WriteMethod::io(16, 16, Some(cmd_srq::query_srq)),
    /* 35 DESTROY_SRQ */ WriteMethod::io(16, 4, Some(cmd_srq::destroy_srq)),
    /* 36 POST_SRQ_RECV */ None,
    /* 37 OPEN_XRCD */ WriteMethod::udata_io(16, 4, None),
    /* 38 CLOSE_XRCD */ WriteMethod::i(4),
    /* 39 CREATE_XSRQ */ WriteMethod::udata_io(48, 16, Some(cmd_srq::create_xsrq)),
    /* 40 OPEN_QP */ WriteMethod::udata_io(32, 32, None),
];

/// The extended commands (`IB_USER_VERBS_EX_CMD_*`).
static WRITE_EX: [Option<WriteMethod>; 58] = {
    let mut t = [const { None }; 58];
    t[1] = WriteMethod::ex(Some(cmd_device::ex_query_device));
    // CREATE_CQ, CREATE_QP, MODIFY_QP, CREATE_FLOW, DESTROY_FLOW, MODIFY_CQ. The work queue
    // and indirection table commands (52..56) are holes, as in C's table for a device without
    // them (mlx5 has them on Ethernet ports only).
    t[18] = WriteMethod::ex(Some(cmd_cq::ex_create_cq));
    t[24] = WriteMethod::ex(None);
    t[26] = WriteMethod::ex(Some(cmd_qp::ex_modify_qp));
    t[50] = WriteMethod::ex(None);
    t[51] = WriteMethod::ex(None);
    t[57] = WriteMethod::ex(None);
    t
};

/// The command numbered `command` (C's `uapi_get_method`): bits outside the number and the
/// extended flag are `EINVAL`; a number past the table `EOPNOTSUPP`; a hole C's stub.
pub(crate) fn lookup(command: u32) -> Result<&'static WriteMethod> {
    if command & !(CMD_FLAG_EXTENDED | CMD_COMMAND_MASK) != 0 {
        return Err(EINVAL);
    }
    let idx = (command & CMD_COMMAND_MASK) as usize;
    let table: &'static [Option<WriteMethod>] = if command & CMD_FLAG_EXTENDED != 0 {
        &WRITE_EX
    } else {
        &WRITE
    };
    match table.get(idx) {
        None => Err(EOPNOTSUPP),
        Some(Some(m)) => Ok(m),
        Some(None) => Ok(&NOTSUPP),
    }
}

/// `struct ib_uverbs_cmd_hdr`.
type Header = uapi::ib_uverbs_cmd_hdr;

/// `struct ib_uverbs_ex_cmd_hdr`.
type ExHeader = uapi::ib_uverbs_ex_cmd_hdr;

/// C's `verify_hdr`: the header's word counts against the write's length and the command's
/// sizes. Returns the input word count to use (an 8-byte-short DESTROY_CQ is taken as 24).
fn verify(hdr: &Header, ex: &ExHeader, count: usize, m: &WriteMethod) -> Result<u16> {
    if m.is_ex {
        let count = count - HDR_SIZE - EX_HDR_SIZE;
        if (usize::from(hdr.in_words) + usize::from(ex.provider_in_words)) * 8 != count {
            return Err(EINVAL);
        }
        if usize::from(hdr.in_words) * 8 < m.req_size {
            return Err(ENOSPC);
        }
        if ex.cmd_hdr_reserved != 0 {
            return Err(EINVAL);
        }
        if ex.response != 0 {
            if hdr.out_words == 0 && ex.provider_out_words == 0 {
                return Err(EINVAL);
            }
            if usize::from(hdr.out_words) * 8 < m.resp_size {
                return Err(ENOSPC);
            }
            // `access_ok`: the whole response must lie in user space.
            let len = (u64::from(hdr.out_words) + u64::from(ex.provider_out_words)) * 8;
            if ex
                .response
                .checked_add(len)
                .is_none_or(|end| end > USER_SPACE_END)
            {
                return Err(EFAULT);
            }
        } else if hdr.out_words != 0 || ex.provider_out_words != 0 {
            return Err(EINVAL);
        }
        return Ok(hdr.in_words);
    }
    if usize::from(hdr.in_words) * 4 != count {
        return Err(EINVAL);
    }
    if count < m.req_size + HDR_SIZE {
        if hdr.command == CMD_DESTROY_CQ && count == 16 {
            return Ok(6);
        }
        return Err(ENOSPC);
    }
    if usize::from(hdr.out_words) * 4 < m.resp_size {
        return Err(ENOSPC);
    }
    Ok(hdr.in_words)
}

/// The end of user space on x86_64 (`TASK_SIZE_MAX` with 4-level page tables): C's
/// `access_ok` refuses ranges past it.
const USER_SPACE_END: u64 = (1 << 47) - 4096;

/// One `write(2)` of `count` bytes at user address `buf` on `ufile` (C's `ib_uverbs_write`
/// after its credential check). Returns `count` on success.
pub(crate) fn write(ufile: &Arc<Ufile>, buf: usize, count: usize) -> Result<usize> {
    if count < HDR_SIZE {
        return Err(EINVAL);
    }
    let hdr: CmdHdr = UserSlice::new(UserPtr::from_addr(buf), HDR_SIZE)
        .reader()
        .read()?;
    let m = lookup(hdr.command)?;
    let mut ex = ExHeader::default();
    if m.is_ex {
        if count < HDR_SIZE + EX_HDR_SIZE {
            return Err(EINVAL);
        }
        let read: ExCmdHdr = UserSlice::new(UserPtr::from_addr(buf + HDR_SIZE), EX_HDR_SIZE)
            .reader()
            .read()?;
        ex = read.0;
    }
    let in_words = verify(&hdr, &ex, count, m)?;
    let payload = buf + HDR_SIZE;
    let (ucore, driver) = if !m.is_ex {
        let mut in_len = usize::from(in_words) * 4 - HDR_SIZE;
        let mut out_len = usize::from(hdr.out_words) * 4;
        let mut driver = Udata::empty();
        let (mut d_in, mut d_in_len) = (0, 0);
        if m.has_udata {
            // `verify` checked both sizes; should a table entry ever change, a short request
            // is C's `ENOSPC`, never an underflow.
            d_in_len = in_len.checked_sub(m.req_size).ok_or(ENOSPC)?;
            in_len = m.req_size;
            if d_in_len != 0 {
                d_in = payload + in_len;
            }
        }
        let mut response = 0u64;
        if m.has_resp {
            let mut r = [0u8; 8];
            UserSlice::new(UserPtr::from_addr(payload), 8)
                .reader()
                .read_slice(&mut r)?;
            response = u64::from_le_bytes(r);
            if m.has_udata {
                let d_out_len = out_len.checked_sub(m.resp_size).ok_or(ENOSPC)?;
                out_len = m.resp_size;
                let d_out = if d_out_len != 0 {
                    (response as usize).wrapping_add(out_len)
                } else {
                    0
                };
                driver = Udata::new(d_in, d_in_len, d_out, d_out_len);
            } else {
                driver = Udata::new(d_in, d_in_len, 0, 0);
            }
        } else if m.has_udata {
            driver = Udata::new(d_in, d_in_len, 0, 0);
        }
        (or_null(payload, in_len, response as usize, out_len), driver)
    } else {
        let core_in = payload + EX_HDR_SIZE;
        let in_len = usize::from(in_words) * 8;
        let out_len = usize::from(hdr.out_words) * 8;
        let response = ex.response as usize;
        (
            or_null(core_in, in_len, response, out_len),
            or_null(
                core_in + in_len,
                usize::from(ex.provider_in_words) * 8,
                response.wrapping_add(out_len),
                usize::from(ex.provider_out_words) * 8,
            ),
        )
    };
    let handler = m.handler.ok_or(EOPNOTSUPP)?;
    let mut bundle = Bundle {
        ufile,
        ucore,
        driver,
        responded: Cell::new(false),
    };
    handler(&mut bundle)?;
    Ok(count)
}

/// C's `ib_uverbs_init_udata_buf_or_null`: an empty buffer has no address.
fn or_null(inbuf: usize, inlen: usize, outbuf: usize, outlen: usize) -> Udata {
    Udata::new(
        if inlen != 0 { inbuf } else { 0 },
        inlen,
        if outlen != 0 { outbuf } else { 0 },
        outlen,
    )
}

#[kernel::macros::kunit_tests(rdma_rs_uverbs_write)]
mod tests {
    use super::*;

    fn hdr(command: u32, in_words: u16, out_words: u16) -> Header {
        Header {
            command,
            in_words,
            out_words,
        }
    }

    #[test]
    fn command_numbers_as_c_looks_them_up() {
        assert!(lookup(0).is_ok_and(|m| m.req_size == 8 && m.handler.is_some()));
        assert!(lookup(CMD_FLAG_EXTENDED | 1).is_ok_and(|m| m.is_ex));
        // Bits outside the number and the flag; past the tables.
        assert_eq!(lookup(0x100).err(), Some(EINVAL));
        assert_eq!(lookup(41).err(), Some(EOPNOTSUPP));
        assert_eq!(lookup(CMD_FLAG_EXTENDED | 58).err(), Some(EOPNOTSUPP));
        // A hole is C's stub: not extended, no sizes, no handler.
        assert!(lookup(6).is_ok_and(|m| !m.is_ex && m.req_size == 0 && m.handler.is_none()));
        assert!(lookup(CMD_FLAG_EXTENDED | 2).is_ok_and(|m| !m.is_ex));
    }

    #[test]
    fn headers_are_checked_in_c_order() -> Result {
        let none = ExHeader::default();
        let qp = lookup(2)?;
        // QUERY_PORT as libibverbs writes it: 24 bytes, 6 words in, 10 out.
        assert_eq!(verify(&hdr(2, 6, 10), &none, 24, qp), Ok(6));
        assert_eq!(verify(&hdr(2, 5, 10), &none, 24, qp), Err(EINVAL));
        assert_eq!(verify(&hdr(2, 4, 10), &none, 16, qp), Err(ENOSPC));
        assert_eq!(verify(&hdr(2, 6, 9), &none, 24, qp), Err(ENOSPC));
        // The short DESTROY_CQ of old rdma-core.
        let dcq = lookup(20)?;
        assert_eq!(verify(&hdr(20, 4, 2), &none, 16, dcq), Ok(6));
        // EX_QUERY_DEVICE as libibverbs writes it: 32 bytes, 1 word in, 38 + 13 out.
        let exq = lookup(CMD_FLAG_EXTENDED | 1)?;
        let ex = ExHeader {
            response: 0x10000,
            provider_in_words: 0,
            provider_out_words: 13,
            cmd_hdr_reserved: 0,
        };
        let x = CMD_FLAG_EXTENDED | 1;
        assert_eq!(verify(&hdr(x, 1, 38), &ex, 32, exq), Ok(1));
        assert_eq!(verify(&hdr(x, 2, 38), &ex, 32, exq), Err(EINVAL));
        let reserved = ExHeader {
            cmd_hdr_reserved: 1,
            ..ex
        };
        assert_eq!(verify(&hdr(x, 1, 38), &reserved, 32, exq), Err(EINVAL));
        let nowhere = ExHeader { response: 0, ..ex };
        assert_eq!(verify(&hdr(x, 1, 38), &nowhere, 32, exq), Err(EINVAL));
        let kernel = ExHeader {
            response: u64::MAX - 8,
            ..ex
        };
        assert_eq!(verify(&hdr(x, 1, 38), &kernel, 32, exq), Err(EFAULT));
        let no_out = ExHeader {
            provider_out_words: 0,
            ..ex
        };
        assert_eq!(verify(&hdr(x, 1, 0), &no_out, 32, exq), Err(EINVAL));
        Ok(())
    }
}
