// SPDX-License-Identifier: GPL-2.0

//! The ioctl methods of the device and async event objects (C's
//! `uverbs_std_types_device.c`, `uverbs_std_types_async_fd.c`): INVOKE_WRITE (a write()
//! command carried in an ioctl, how rdma-core 44 sends every legacy command to a kernel that
//! has it), GET_CONTEXT, QUERY_CONTEXT, QUERY_PORT, QUERY_GID_ENTRY and ASYNC_EVENT_ALLOC.

use crate::{
    cmd,
    ioctl::bundle::{DriverView, IoctlBundle},
    ioctl::ids::{get_context as gc, invoke_write as iw, query_gid_entry as qg, query_port as qp},
    uabi::{GidEntry, QueryPortRespEx},
    write,
    write::bundle::{Bundle, Handler},
};
use core::cell::Cell;
use ib_core::{
    device::ib_device::IbDevice,
    user::{ucontext::UContext, udata::Udata},
};
use kernel::{prelude::*, transmute::AsBytes};

/// `IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS`: what GET_CONTEXT reports of the core (mlx5
/// does not set `uverbs_robust_udata`).
const CORE_SUPPORT_OPTIONAL_MR_ACCESS: u64 = 1 << 0;

/// GET_CONTEXT's and QUERY_CONTEXT's first two outputs (the same ids in both): the completion
/// vector count of `ib` and the core's support bits, each if asked for.
fn context_info(b: &IoctlBundle<'_>, ib: &IbDevice) -> Result {
    b.copy_to_optional(gc::NUM_COMP_VECTORS, &ib.num_comp_vectors().to_le_bytes())?;
    b.copy_to_optional(
        gc::CORE_SUPPORT,
        &CORE_SUPPORT_OPTIONAL_MR_ACCESS.to_le_bytes(),
    )
}

/// INVOKE_WRITE (C's handler): the command's sizes against CORE_IN/CORE_OUT (`ENOSPC`), then
/// the write() handler with them; its response flags CORE_OUT as written.
pub(crate) fn invoke_write(b: &mut IoctlBundle<'_>) -> Result {
    let cmd = b.get_const(iw::WRITE_CMD, u32::MAX.into())? as u32;
    let ucore = b.udata(iw::CORE_IN, iw::CORE_OUT);
    let handler = invoked(cmd, b.ufile.device().abi().data_path_cmds, &ucore)?;
    let mut wb = Bundle {
        ufile: b.ufile,
        ucore,
        driver: b.driver,
        responded: Cell::new(false),
    };
    handler(&mut wb)?;
    if wb.responded.get() {
        b.mark_output(iw::CORE_OUT)?;
    }
    Ok(())
}

/// The handler of write() command `cmd` carried by INVOKE_WRITE with buffers `ucore`, on a
/// device serving the data-path commands `data_path`: the command as [`write::lookup`] finds
/// it, buffers shorter than its sizes `ENOSPC`, a command without a handler `EOPNOTSUPP`.
pub(crate) fn invoked(cmd: u32, data_path: u64, ucore: &Udata) -> Result<Handler> {
    let m = write::lookup(cmd, data_path)?;
    if ucore.inlen() < m.req_size || ucore.outlen() < m.resp_size {
        return Err(ENOSPC);
    }
    m.handler.ok_or(EOPNOTSUPP)
}

/// GET_CONTEXT (C's handler): the completion vector count and the core's support bits, then
/// the context. No async event file: user space asks for one with ASYNC_EVENT_ALLOC.
/// `FD_ARR` (capability files, `/dev/infiniband/ucapN`) is refused with `EINVAL`: this stack
/// has no such files.
pub(crate) fn get_context(b: &mut IoctlBundle<'_>) -> Result {
    let ib = b.ufile.device().ib_device().ok_or(EIO)?;
    context_info(b, &ib)?;
    let caps = b.is_present(gc::FD_ARR);
    let driver = b.driver;
    b.ufile.init_ucontext(None, || {
        if caps {
            return Err(EINVAL);
        }
        UContext::alloc(&ib, &driver)
    })
}

/// QUERY_CONTEXT (C's handler, what `ibv_import_device` sends on a dup of the file): the
/// completion vector count and the core's support bits, then the driver's part (`EOPNOTSUPP`
/// for a driver without one, before anything is written), in the file's context (`EINVAL`
/// without one).
pub(crate) fn query_context(b: &mut IoctlBundle<'_>) -> Result {
    let ib = b.ufile.device().ib_device().ok_or(EIO)?;
    b.ufile.with_context(|c| {
        if !ib.has_query_ucontext() {
            return Err(EOPNOTSUPP);
        }
        context_info(b, &ib)?;
        let view = DriverView {
            bundle: b,
            objects: &c.objects,
        };
        c.ucontext.query(&view)
    })
}

/// QUERY_PORT (C's handler): the legacy response, then `port_cap_flags2` and the full active
/// speed.
pub(crate) fn query_port(b: &mut IoctlBundle<'_>) -> Result {
    b.ufile.with_ucontext(|ctx| {
        let port = b.get_const(qp::PORT_NUM, u8::MAX.into())? as u32;
        let ib = ctx.device();
        let a = ib.query_port(port)?;
        let mut r = QueryPortRespEx(Default::default());
        r.legacy_resp = cmd::device::port_resp(ib, port, &a);
        r.port_cap_flags2 = a.port_cap_flags2;
        r.active_speed_ex = a.active_speed.into();
        b.copy_to_struct_or_zero(qp::RESP, r.as_bytes())
    })
}

/// QUERY_GID_ENTRY (C's handler): flags must be 0; a port that does not exist or an index past
/// the table is `EINVAL`, an empty entry `ENODATA` (C's cache leaves out all-zero GIDs; an IB
/// port's unused GUIDInfo entries still carry the subnet prefix, so they answer).
pub(crate) fn query_gid_entry(b: &mut IoctlBundle<'_>) -> Result {
    b.get_flags32(qg::FLAGS, 0)?;
    let port = b.get_const(qg::PORT, u32::MAX.into())? as u32;
    let index = b.get_const(qg::GID_INDEX, u32::MAX.into())? as u32;
    b.ufile.with_ucontext(|ctx| {
        let ib = ctx.device();
        if !ib.is_valid_port(port) {
            return Err(EINVAL);
        }
        let entry = ib.gid_entry(port, index).ok_or(EINVAL)?;
        if entry.is_empty() {
            return Err(ENODATA);
        }
        let mut e = GidEntry(Default::default());
        // The GID's bytes as they are (the ABI's `__u64 gid[2]` carries raw bytes).
        AsBytes::as_bytes_mut(&mut e.gid).copy_from_slice(&entry.gid.0);
        e.gid_index = index;
        e.port_num = port;
        // The entry's type (`IB_GID_TYPE_*`) and, on a RoCE or iWARP port, its net device.
        e.gid_type = entry.kind as u32;
        e.netdev_ifindex = entry.ndev.map_or(0, |n| n.ifindex() as u32);
        b.copy_to_struct_or_zero(qg::RESP_ENTRY, e.as_bytes())
    })
}

/// ASYNC_EVENT_ALLOC (C's handler): the new async event file joins the context and its fd is
/// installed.
pub(crate) fn async_event_alloc(b: &mut IoctlBundle<'_>) -> Result {
    let fd = b.new_fd.take().ok_or(EINVAL)?;
    b.ufile.add_async_file(fd.events().clone())?;
    fd.install();
    Ok(())
}
