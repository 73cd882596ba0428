// SPDX-License-Identifier: GPL-2.0

//! Completion channels (C's `ib_uverbs_create_comp_channel`): a file a process reads its CQs'
//! completion events from (`event_file.rs`). It belongs to the file's context: when the
//! context goes, its readers get `EIO`; when user space closes it first, it leaves the context.

use crate::{
    file::event_file::{EventFile, NewEventFd},
    uabi::{CreateCompChannel, CreateCompChannelResp},
    write::bundle::Bundle,
};
use kernel::prelude::*;

/// CREATE_COMP_CHANNEL (`struct ib_uverbs_create_comp_channel`: the response address): the new
/// channel's fd answers (`struct ib_uverbs_create_comp_channel_resp`). A context is needed
/// (`EINVAL` before GET_CONTEXT, `EIO` once the device has gone). If the answer cannot be
/// written, the channel is not installed.
pub(crate) fn create_comp_channel(b: &mut Bundle<'_>) -> Result {
    b.request_as::<CreateCompChannel>()?;
    let ufile = b.ufile.clone();
    b.ufile.with_context(|c| {
        let fd = NewEventFd::new(EventFile::new_comp()?)?;
        let ch = fd.events().clone();
        c.channels.push(ch.clone(), GFP_KERNEL)?;
        let mut resp = CreateCompChannelResp(Default::default());
        resp.fd = fd.fd();
        if let Err(e) = b.respond_as(&resp) {
            let _ = c.channels.pop();
            ch.close();
            return Err(e);
        }
        ch.set_owner(ufile);
        fd.install();
        Ok(())
    })
}
