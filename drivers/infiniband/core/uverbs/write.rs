// SPDX-License-Identifier: GPL-2.0

//! The legacy `write()` interface (C's `ib_uverbs_write` and `verify_hdr`,
//! `docs/uverbs-c-facts.md` §3.2): the command header, C's table of commands with its request
//! and response sizes, the header checks in C's order, and the split of the buffers into the
//! core's and the driver's part.
//!
//! The table has every command C's has, with C's sizes, so that malformed headers get C's
//! errnos for all of them. Commands whose handler is not written yet answer `EOPNOTSUPP` after
//! the header checks, as C's stub for a command a driver lacks.

pub(crate) mod bundle;

use crate::{
    cmd,
    file::ufile::Ufile,
    uabi::{CmdHdr, ExCmdHdr},
    write::bundle::{Bundle, Handler},
};
use core::cell::Cell;
use ib_core::{
    user::udata::Udata,
    verbs::ops::{CMD_POST_SEND, CMD_REQ_NOTIFY_CQ},
};
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

/// The data-path commands a driver may ask for ([`ib_core::verbs::ops::UverbsAbi::data_path_cmds`]), holes in
/// [`WRITE`] for the others.
static DATA_PATH: [(u32, Option<WriteMethod>); 2] = [
    (
        CMD_REQ_NOTIFY_CQ,
        WriteMethod::i_with(8, cmd::data_path::req_notify_cq),
    ),
    (
        CMD_POST_SEND,
        WriteMethod::io(24, 4, Some(cmd::data_path::post_send)),
    ),
];

/// The commands (`IB_USER_VERBS_CMD_*`), sizes from `include/uapi/rdma/ib_user_verbs.h`.
static WRITE: [Option<WriteMethod>; 41] = [
    /* 0 GET_CONTEXT */ WriteMethod::udata_io(8, 8, Some(cmd::device::get_context)),
    /* 1 QUERY_DEVICE */ WriteMethod::io(8, 176, Some(cmd::device::query_device)),
    /* 2 QUERY_PORT */ WriteMethod::io(16, 40, Some(cmd::device::query_port)),
    /* 3 ALLOC_PD */ WriteMethod::udata_io(8, 4, Some(cmd::pd::alloc_pd)),
    /* 4 DEALLOC_PD */ WriteMethod::i_with(4, cmd::pd::dealloc_pd),
    /* 5 CREATE_AH */ WriteMethod::udata_io(56, 4, Some(cmd::ah::create_ah)),
    /* 6 MODIFY_AH */ None,
    /* 7 QUERY_AH */ None,
    /* 8 DESTROY_AH */ WriteMethod::i_with(4, cmd::ah::destroy_ah),
    /* 9 REG_MR */ WriteMethod::udata_io(40, 12, Some(cmd::mr::reg_mr)),
    /* 10 REG_SMR */ None,
    /* 11 REREG_MR */ WriteMethod::udata_io(48, 8, Some(cmd::mr::rereg_mr)),
    /* 12 QUERY_MR */ None,
    /* 13 DEREG_MR */ WriteMethod::i_with(4, cmd::mr::dereg_mr),
    // Memory windows: not served (as C's table for an mlx5 function without `imaicl`).
    /* 14 ALLOC_MW */
    None,
    /* 15 BIND_MW */ None,
    /* 16 DEALLOC_MW */ None,
    /* 17 CREATE_COMP_CHANNEL */
    WriteMethod::io(8, 4, Some(cmd::channel::create_comp_channel)),
    /* 18 CREATE_CQ */ WriteMethod::udata_io(32, 8, Some(cmd::cq::create_cq)),
    /* 19 RESIZE_CQ */ WriteMethod::udata_io(16, 8, Some(cmd::cq::resize_cq)),
    /* 20 DESTROY_CQ */ WriteMethod::io(16, 8, Some(cmd::cq::destroy_cq)),
    // The data-path commands are not in C's default command mask (only drivers that poll and
    // post in the kernel for user space enable them; mlx5 does not).
    /* 21 POLL_CQ */
    None,
    /* 22 PEEK_CQ */ None,
    /* 23 REQ_NOTIFY_CQ */ None,
    /* 24 CREATE_QP */ WriteMethod::udata_io(56, 32, None),
    /* 25 QUERY_QP */ WriteMethod::io(16, 128, Some(cmd::qp::query_qp)),
    /* 26 MODIFY_QP */ WriteMethod::i_with(112, cmd::qp::modify_qp),
    /* 27 DESTROY_QP */ WriteMethod::io(16, 4, Some(cmd::qp::destroy_qp)),
    /* 28 POST_SEND */ None,
    /* 29 POST_RECV */ None,
    /* 30 ATTACH_MCAST */ WriteMethod::i(24),
    /* 31 DETACH_MCAST */ WriteMethod::i(24),
    /* 32 CREATE_SRQ */ WriteMethod::udata_io(32, 16, Some(cmd::srq::create_srq)),
    /* 33 MODIFY_SRQ */ WriteMethod::udata_i_with(16, cmd::srq::modify_srq),
    /* 34 QUERY_SRQ */ WriteMethod::io(16, 16, Some(cmd::srq::query_srq)),
    /* 35 DESTROY_SRQ */ WriteMethod::io(16, 4, Some(cmd::srq::destroy_srq)),
    /* 36 POST_SRQ_RECV */ None,
    /* 37 OPEN_XRCD */ WriteMethod::udata_io(16, 4, None),
    /* 38 CLOSE_XRCD */ WriteMethod::i(4),
    /* 39 CREATE_XSRQ */ WriteMethod::udata_io(48, 16, Some(cmd::srq::create_xsrq)),
    /* 40 OPEN_QP */ WriteMethod::udata_io(32, 32, None),
];

/// The extended commands (`IB_USER_VERBS_EX_CMD_*`).
static WRITE_EX: [Option<WriteMethod>; 58] = {
    let mut t = [const { None }; 58];
    t[1] = WriteMethod::ex(Some(cmd::device::ex_query_device));
    // CREATE_CQ, CREATE_QP, MODIFY_QP, CREATE_FLOW, DESTROY_FLOW, MODIFY_CQ. The work queue
    // and indirection table commands (52..56) are holes, as in C's table for a device without
    // them (mlx5 has them on Ethernet ports only).
    t[18] = WriteMethod::ex(Some(cmd::cq::ex_create_cq));
    t[24] = WriteMethod::ex(None);
    t[26] = WriteMethod::ex(Some(cmd::qp::ex_modify_qp));
    t[50] = WriteMethod::ex(None);
    t[51] = WriteMethod::ex(None);
    t[57] = WriteMethod::ex(None);
    t
};

/// The command numbered `command` (C's `uapi_get_method`) on a device whose driver serves the
/// data-path commands `data_path` ([`ib_core::verbs::ops::UverbsAbi::data_path_cmds`]): bits outside the number and
/// the extended flag are `EINVAL`; a number past the table `EOPNOTSUPP`; a hole C's stub.
pub(crate) fn lookup(command: u32, data_path: u64) -> Result<&'static WriteMethod> {
    if command & !(CMD_FLAG_EXTENDED | CMD_COMMAND_MASK) != 0 {
        return Err(EINVAL);
    }
    let idx = (command & CMD_COMMAND_MASK) as usize;
    if command & CMD_FLAG_EXTENDED == 0 && idx < 64 && data_path & (1 << idx) != 0 {
        if let Some((_, Some(m))) = DATA_PATH.iter().find(|(c, _)| *c as usize == idx) {
            return Ok(m);
        }
    }
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

/// C's checks of a write of `count` bytes up to its handler: a write shorter than the header
/// is `EINVAL` (nothing read); the header (`read_hdr`) names the command ([`lookup`]); an
/// extended one needs room for its second header (`EINVAL`), read by `read_ex`; then
/// [`verify`]. Returns the command, both headers (the second zero for others) and the input
/// word count to use.
fn check_header(
    count: usize,
    data_path: u64,
    read_hdr: impl FnOnce() -> Result<Header>,
    read_ex: impl FnOnce() -> Result<ExHeader>,
) -> Result<(&'static WriteMethod, Header, ExHeader, u16)> {
    if count < HDR_SIZE {
        return Err(EINVAL);
    }
    let hdr = read_hdr()?;
    let m = lookup(hdr.command, data_path)?;
    let mut ex = ExHeader::default();
    if m.is_ex {
        if count < HDR_SIZE + EX_HDR_SIZE {
            return Err(EINVAL);
        }
        ex = read_ex()?;
    }
    let in_words = verify(&hdr, &ex, count, m)?;
    Ok((m, hdr, ex, in_words))
}

/// The end of user space on x86_64 (`TASK_SIZE_MAX` with 4-level page tables): C's
/// `access_ok` refuses ranges past it.
const USER_SPACE_END: u64 = (1 << 47) - 4096;

/// One `write(2)` of `count` bytes at user address `buf` on `ufile` (C's `ib_uverbs_write`
/// after its credential check). Returns `count` on success.
pub(crate) fn write(ufile: &Arc<Ufile>, buf: usize, count: usize) -> Result<usize> {
    let (m, hdr, ex, in_words) = check_header(
        count,
        ufile.device().abi().data_path_cmds,
        || {
            let h: CmdHdr = UserSlice::new(UserPtr::from_addr(buf), HDR_SIZE)
                .reader()
                .read()?;
            Ok(h.0)
        },
        || {
            let h: ExCmdHdr = UserSlice::new(UserPtr::from_addr(buf + HDR_SIZE), EX_HDR_SIZE)
                .reader()
                .read()?;
            Ok(h.0)
        },
    )?;
    let payload = buf + HDR_SIZE;
    let (handler, ucore, driver) = decode(m, &hdr, &ex, in_words, payload, || {
        let mut r = [0u8; 8];
        UserSlice::new(UserPtr::from_addr(payload), 8)
            .reader()
            .read_slice(&mut r)?;
        Ok(u64::from_le_bytes(r))
    })?;
    let mut bundle = Bundle {
        ufile,
        ucore,
        driver,
        responded: Cell::new(false),
    };
    handler(&mut bundle)?;
    Ok(count)
}

/// What a checked command runs with: its handler (`EOPNOTSUPP` when it has none, after the
/// buffers are split as C's stub is reached) and its buffers ([`split`]).
fn decode(
    m: &WriteMethod,
    hdr: &Header,
    ex: &ExHeader,
    in_words: u16,
    payload: usize,
    read_response: impl FnOnce() -> Result<u64>,
) -> Result<(Handler, Udata, Udata)> {
    let (ucore, driver) = split(m, hdr, ex, in_words, payload, read_response)?;
    let handler = m.handler.ok_or(EOPNOTSUPP)?;
    Ok((handler, ucore, driver))
}

/// The buffers of a checked command whose payload (after the header) is at user address
/// `payload`: the core's request and response, and the driver's after them (C's part of
/// `ib_uverbs_write` after `verify_hdr`). A legacy command with a response names its address in
/// the first 8 bytes of its request, read by `read_response`.
fn split(
    m: &WriteMethod,
    hdr: &Header,
    ex: &ExHeader,
    in_words: u16,
    payload: usize,
    read_response: impl FnOnce() -> Result<u64>,
) -> Result<(Udata, Udata)> {
    if !m.is_ex {
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
            response = read_response()?;
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
        return Ok((or_null(payload, in_len, response as usize, out_len), driver));
    }
    let core_in = payload + EX_HDR_SIZE;
    let in_len = usize::from(in_words) * 8;
    let out_len = usize::from(hdr.out_words) * 8;
    let response = ex.response as usize;
    Ok((
        or_null(core_in, in_len, response, out_len),
        or_null(
            core_in + in_len,
            usize::from(ex.provider_in_words) * 8,
            response.wrapping_add(out_len),
            usize::from(ex.provider_out_words) * 8,
        ),
    ))
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
        assert!(lookup(0, 0).is_ok_and(|m| m.req_size == 8 && m.handler.is_some()));
        assert!(lookup(CMD_FLAG_EXTENDED | 1, 0).is_ok_and(|m| m.is_ex));
        // Bits outside the number and the flag; past the tables.
        assert_eq!(lookup(0x100, 0).err(), Some(EINVAL));
        assert_eq!(lookup(41, 0).err(), Some(EOPNOTSUPP));
        assert_eq!(lookup(CMD_FLAG_EXTENDED | 58, 0).err(), Some(EOPNOTSUPP));
        // A hole is C's stub: not extended, no sizes, no handler.
        assert!(lookup(6, 0).is_ok_and(|m| !m.is_ex && m.req_size == 0 && m.handler.is_none()));
        assert!(lookup(CMD_FLAG_EXTENDED | 2, 0).is_ok_and(|m| !m.is_ex));
    }

    #[test]
    fn data_path_commands_follow_the_driver() {
        // Holes unless the driver asks for them (C's `uverbs_cmd_mask`).
        assert!(lookup(CMD_POST_SEND, 0).is_ok_and(|m| m.handler.is_none() && m.req_size == 0));
        let both = (1 << CMD_POST_SEND) | (1 << CMD_REQ_NOTIFY_CQ);
        assert!(lookup(CMD_POST_SEND, both)
            .is_ok_and(|m| m.req_size == 24 && m.resp_size == 4 && m.handler.is_some()));
        assert!(lookup(CMD_REQ_NOTIFY_CQ, both)
            .is_ok_and(|m| m.req_size == 8 && m.resp_size == 0 && m.handler.is_some()));
        // Only on the legacy table; a bit for a command without such a handler changes nothing.
        assert!(lookup(CMD_FLAG_EXTENDED | CMD_POST_SEND, both).is_ok_and(|m| m.handler.is_none()));
        assert!(lookup(21, 1 << 21).is_ok_and(|m| m.handler.is_none()));
    }

    #[test]
    fn headers_are_checked_in_c_order() -> Result {
        let none = ExHeader::default();
        let qp = lookup(2, 0)?;
        // QUERY_PORT as libibverbs writes it: 24 bytes, 6 words in, 10 out.
        assert_eq!(verify(&hdr(2, 6, 10), &none, 24, qp), Ok(6));
        assert_eq!(verify(&hdr(2, 5, 10), &none, 24, qp), Err(EINVAL));
        assert_eq!(verify(&hdr(2, 4, 10), &none, 16, qp), Err(ENOSPC));
        assert_eq!(verify(&hdr(2, 6, 9), &none, 24, qp), Err(ENOSPC));
        // The short DESTROY_CQ of old rdma-core.
        let dcq = lookup(20, 0)?;
        assert_eq!(verify(&hdr(20, 4, 2), &none, 16, dcq), Ok(6));
        // EX_QUERY_DEVICE as libibverbs writes it: 32 bytes, 1 word in, 38 + 13 out.
        let exq = lookup(CMD_FLAG_EXTENDED | 1, 0)?;
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

    /// Where the tests' writes start, and the response buffer they name (user addresses that
    /// are never read: the reads are the closures below).
    const BUF: usize = 0x7f00_0000_0000;
    const RESP: u64 = 0x10000;
    /// `IB_USER_VERBS_CMD_FLAG_EXTENDED`, as the C program writes it.
    const EX: u32 = 0x8000_0000;

    /// A write of `count` bytes with header `h` (and extended header `ex`, if the write holds
    /// one) taken up to its handler, as [`write`] does; the response address is [`RESP`].
    fn run(count: usize, h: Header, ex: Option<ExHeader>) -> Result<(Udata, Udata)> {
        let (m, h, exh, in_words) = check_header(count, 0, || Ok(h), || ex.ok_or(EFAULT))?;
        let (_, ucore, driver) = decode(m, &h, &exh, in_words, BUF + HDR_SIZE, || Ok(RESP))?;
        Ok((ucore, driver))
    }

    /// The input word count the header checks give such a write.
    fn checked(count: usize, h: Header, ex: Option<ExHeader>) -> Result<u16> {
        check_header(count, 0, || Ok(h), || ex.ok_or(EFAULT)).map(|(.., in_words)| in_words)
    }

    /// The extended header's fields, as the C program's `send_ex` writes them.
    fn ex(response: u64, pin: u16, pout: u16, reserved: u32) -> Option<ExHeader> {
        Some(ExHeader {
            response,
            provider_in_words: pin,
            provider_out_words: pout,
            cmd_hdr_reserved: reserved,
        })
    }

    /// C's write() commands and their request and response sizes (`uverbs_badinput.c`'s
    /// table; 0, 0: a hole), independent of [`WRITE`].
    const C_SIZES: [(usize, usize); 41] = {
        let mut t = [(0, 0); 41];
        t[0] = (8, 8);
        t[1] = (8, 176);
        t[2] = (16, 40);
        t[3] = (8, 4);
        t[4] = (4, 0);
        t[5] = (56, 4);
        t[8] = (4, 0);
        t[9] = (40, 12);
        t[11] = (48, 8);
        t[13] = (4, 0);
        t[17] = (8, 4);
        t[18] = (32, 8);
        t[19] = (16, 8);
        t[20] = (16, 8);
        t[24] = (56, 32);
        t[25] = (16, 128);
        t[26] = (112, 0);
        t[27] = (16, 4);
        t[30] = (24, 0);
        t[31] = (24, 0);
        t[32] = (32, 16);
        t[33] = (16, 0);
        t[34] = (16, 16);
        t[35] = (16, 4);
        t[37] = (16, 4);
        t[38] = (4, 0);
        t[39] = (48, 16);
        t[40] = (32, 32);
        t
    };
    /// The holes of C's table for mlx5 on InfiniBand without memory windows.
    const HOLES: [u32; 13] = [6, 7, 10, 12, 14, 15, 16, 21, 22, 23, 28, 29, 36];
    /// C's extended commands, and the holes of its extended table.
    const EX_CMDS: [u32; 7] = [1, 18, 24, 26, 50, 51, 57];
    const EX_HOLES: [u32; 10] = [0, 2, 17, 25, 49, 52, 53, 54, 55, 56];

    #[test]
    fn short_writes_and_numbers_past_the_tables() {
        // Shorter than the header: EINVAL, before anything is read (a read would be EFAULT).
        for k in 0..HDR_SIZE {
            assert_eq!(
                check_header(k, 0, || Err(EFAULT), || Err(EFAULT)).err(),
                Some(EINVAL)
            );
        }
        // A header that cannot be read: EFAULT.
        assert_eq!(
            check_header(8, 0, || Err(EFAULT), || Err(EFAULT)).err(),
            Some(EFAULT)
        );
        // Bits outside the number and the extended flag: EINVAL.
        assert_eq!(run(16, hdr(0x100, 4, 44), None).err(), Some(EINVAL));
        assert_eq!(run(16, hdr(0x4000_0001, 4, 44), None).err(), Some(EINVAL));
        assert_eq!(run(16, hdr(EX | 0x101, 4, 0), None).err(), Some(EINVAL));
        // Past the tables: EOPNOTSUPP.
        for k in (41..256).step_by(107) {
            assert_eq!(run(16, hdr(k, 4, 0), None).err(), Some(EOPNOTSUPP));
        }
        for k in (58..256).step_by(98) {
            assert_eq!(
                run(32, hdr(EX | k, 1, 1), ex(RESP, 0, 0, 0)).err(),
                Some(EOPNOTSUPP)
            );
        }
    }

    #[test]
    fn every_command_word_counts_as_c() {
        for (i, &(req, resp)) in C_SIZES.iter().enumerate() {
            let c = i as u32;
            let m = lookup(c, 0);
            assert!(m.is_ok_and(|m| !m.is_ex && m.req_size == req && m.resp_size == resp));
            let w = |n: usize| (n / 4) as u16;
            // in_words * 4 is not the length: EINVAL.
            assert_eq!(
                run(req + 8, hdr(c, w(req + 8) + 1, w(resp) + 1), None).err(),
                Some(EINVAL)
            );
            // A request 4 bytes short: ENOSPC (even DESTROY_CQ's: only 16 bytes are let by).
            if req >= 4 {
                assert_eq!(
                    run(req + 4, hdr(c, w(req + 4), w(resp)), None).err(),
                    Some(ENOSPC)
                );
            }
            // A response 4 bytes short: ENOSPC.
            if resp >= 4 {
                assert_eq!(
                    run(req + 8, hdr(c, w(req + 8), w(resp - 4)), None).err(),
                    Some(ENOSPC)
                );
            }
            // The sizes themselves pass the header checks.
            assert_eq!(
                checked(req + 8, hdr(c, w(req + 8), w(resp)), None),
                Ok(w(req + 8))
            );
        }
        // The holes: C's stub, EOPNOTSUPP once the words add up, EINVAL before.
        for &c in HOLES.iter() {
            assert_eq!(C_SIZES[c as usize], (0, 0));
            assert_eq!(run(16, hdr(c, 4, 0), None).err(), Some(EOPNOTSUPP));
            assert_eq!(run(16, hdr(c, 5, 0), None).err(), Some(EINVAL));
        }
    }

    #[test]
    fn extended_headers_as_c_checks_them() {
        // Extended holes are checked as legacy commands.
        for &c in EX_HOLES.iter() {
            assert_eq!(run(16, hdr(EX | c, 4, 0), None).err(), Some(EOPNOTSUPP));
            assert_eq!(
                run(32, hdr(EX | c, 1, 1), ex(RESP, 0, 0, 0)).err(),
                Some(EINVAL)
            );
            assert_eq!(
                run(32, hdr(EX | c, 1, 1), ex(0xffff_8880_0000_0000, 0, 0, 0)).err(),
                Some(EINVAL)
            );
        }
        for &c in EX_CMDS.iter() {
            let x = EX | c;
            assert!(lookup(x, 0).is_ok_and(|m| m.is_ex));
            // No room for the extended header: EINVAL, without reading it.
            assert_eq!(run(16, hdr(x, 2, 0), None).err(), Some(EINVAL));
            // An extended header that cannot be read: EFAULT.
            assert_eq!(run(32, hdr(x, 1, 1), None).err(), Some(EFAULT));
            // Word counts, provider words: EINVAL.
            assert_eq!(run(32, hdr(x, 2, 1), ex(RESP, 0, 0, 0)).err(), Some(EINVAL));
            assert_eq!(run(32, hdr(x, 1, 1), ex(RESP, 1, 0, 0)).err(), Some(EINVAL));
            // The reserved word: EINVAL.
            assert_eq!(run(32, hdr(x, 1, 1), ex(RESP, 0, 0, 1)).err(), Some(EINVAL));
            // Response words without a response address, and the reverse: EINVAL.
            assert_eq!(run(32, hdr(x, 1, 1), ex(0, 0, 0, 0)).err(), Some(EINVAL));
            assert_eq!(run(32, hdr(x, 1, 0), ex(0, 0, 1, 0)).err(), Some(EINVAL));
            assert_eq!(run(32, hdr(x, 1, 0), ex(RESP, 0, 0, 0)).err(), Some(EINVAL));
            // A response in kernel space, or wrapping: EFAULT.
            assert_eq!(
                run(32, hdr(x, 1, 1), ex(0xffff_8880_0000_0000, 0, 0, 0)).err(),
                Some(EFAULT)
            );
            assert_eq!(
                run(32, hdr(x, 1, 1), ex(u64::MAX - 7, 0, 0, 0)).err(),
                Some(EFAULT)
            );
            // A response ending where user space ends passes; 4 bytes further does not.
            let end = USER_SPACE_END;
            assert_eq!(checked(32, hdr(x, 1, 1), ex(end - 8, 0, 0, 0)), Ok(1));
            assert_eq!(checked(32, hdr(x, 1, 1), ex(end - 4, 0, 0, 0)), Err(EFAULT));
        }
    }

    #[test]
    fn buffers_split_as_c_splits_them() -> Result {
        let p = BUF + HDR_SIZE;
        let r = RESP as usize;
        // QUERY_PORT: 16 bytes in, 40 out, no driver data.
        assert_eq!(
            run(24, hdr(2, 6, 10), None)?,
            (Udata::new(p, 16, r, 40), Udata::empty())
        );
        // ALLOC_PD with 8 bytes of driver request and 8 of response, after the core's.
        assert_eq!(
            run(24, hdr(3, 6, 3), None)?,
            (Udata::new(p, 8, r, 4), Udata::new(p + 8, 8, r + 4, 8))
        );
        // Without driver data: no addresses.
        assert_eq!(
            run(16, hdr(3, 4, 1), None)?,
            (Udata::new(p, 8, r, 4), Udata::empty())
        );
        // A response pointer that cannot be read: EFAULT.
        let m = lookup(3, 0)?;
        let h = hdr(3, 4, 1);
        assert_eq!(
            decode(m, &h, &ExHeader::default(), 4, p, || Err(EFAULT)).err(),
            Some(EFAULT)
        );
        // DEALLOC_PD has no response: its pointer is never read.
        let m = lookup(4, 0)?;
        let h = hdr(4, 3, 0);
        let (_, ucore, driver) = decode(m, &h, &ExHeader::default(), 3, p, || Err(EFAULT))?;
        assert_eq!((ucore, driver), (Udata::new(p, 4, 0, 0), Udata::empty()));
        // MODIFY_SRQ: driver request only.
        assert_eq!(
            run(32, hdr(33, 8, 0), None)?,
            (Udata::new(p, 16, 0, 0), Udata::new(p + 16, 8, 0, 0))
        );
        // Old rdma-core's 16-byte DESTROY_CQ is read as 24 bytes.
        assert_eq!(
            run(16, hdr(20, 4, 2), None)?,
            (Udata::new(p, 16, r, 8), Udata::empty())
        );
        // EX_QUERY_DEVICE as libibverbs writes it: the core's 8 bytes after both headers, 304
        // bytes of response, mlx5's 104 after them.
        assert_eq!(
            run(32, hdr(EX | 1, 1, 38), ex(RESP, 0, 13, 0))?,
            (
                Udata::new(p + EX_HDR_SIZE, 8, r, 304),
                Udata::new(0, 0, r + 304, 104)
            )
        );
        // EX_CREATE_CQ with 8 bytes of provider request.
        let (core, drv) = (
            Udata::new(p + EX_HDR_SIZE, 32, r, 32),
            Udata::new(p + EX_HDR_SIZE + 32, 8, 0, 0),
        );
        assert_eq!(run(64, hdr(EX | 18, 4, 4), ex(RESP, 1, 0, 0))?, (core, drv));
        // Commands without a handler yet: EOPNOTSUPP once the buffers are split.
        assert_eq!(run(64, hdr(37, 16, 1), None).err(), Some(EOPNOTSUPP));
        assert_eq!(
            run(64, hdr(EX | 24, 4, 4), ex(RESP, 1, 0, 0)).err(),
            Some(EOPNOTSUPP)
        );
        Ok(())
    }
}
