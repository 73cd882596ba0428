// SPDX-License-Identifier: GPL-2.0

//! An open `/dev/infiniband/uverbsN` (C's `ib_uverbs_file`): its device, and the user context
//! and async event file GET_CONTEXT gives it. The device keeps a list of its open files so that
//! when the RDMA device goes away it can take their contexts back (C's disassociation): the
//! driver frees them before the device is gone, and the process only sees errors (`EIO`).

use crate::{device::UverbsDevice, event_file::EventFile, uobjects::UObjects};
use ib_core::ucontext::UContext;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// What GET_CONTEXT made, and the objects made in it.
pub(crate) struct Context {
    /// The objects (dropped before the context: field order, and `destroy_context`).
    pub(crate) objects: UObjects,
    /// The user context.
    pub(crate) ucontext: UContext,
    /// The async event files: the one the write() GET_CONTEXT made, and those
    /// ASYNC_EVENT_ALLOC made (the ioctl GET_CONTEXT makes none).
    events: KVec<Arc<EventFile>>,
    /// The completion channels whose files are open.
    pub(crate) channels: KVec<Arc<EventFile>>,
}

/// The state of one open file.
#[pin_data]
pub(crate) struct Ufile {
    dev: Arc<UverbsDevice>,
    /// Held while a command uses the context, so that disassociation waits for it.
    #[pin]
    context: Mutex<Option<Context>>,
}

impl Ufile {
    /// A file of `dev`, not yet in the device's list.
    pub(crate) fn new(dev: Arc<UverbsDevice>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                dev,
                context <- new_mutex!(None, "ib_uverbs::ufile::context"),
            }),
            GFP_KERNEL,
        )
    }

    /// The device.
    pub(crate) fn device(&self) -> &Arc<UverbsDevice> {
        &self.dev
    }

    /// Runs `f` on the file's user context (C's `ib_uverbs_get_ucontext`): `EIO` once the
    /// RDMA device has gone, `EINVAL` before GET_CONTEXT.
    pub(crate) fn with_ucontext<R>(&self, f: impl FnOnce(&UContext) -> Result<R>) -> Result<R> {
        self.with_context(|c| f(&c.ucontext))
    }

    /// Runs `f` on the file's objects: a file without a context has none, so a lookup there
    /// is `ENOENT` (C looks handles up in the file's table, which is empty then); `EIO` once
    /// the RDMA device has gone.
    pub(crate) fn with_objects<R>(&self, f: impl FnOnce(&mut UObjects) -> Result<R>) -> Result<R> {
        let mut guard = self.context.lock();
        if self.dev.ib_device().is_none() {
            return Err(EIO);
        }
        match (*guard).as_mut() {
            Some(c) => f(&mut c.objects),
            None => f(&mut UObjects::default()),
        }
    }

    /// Runs `f` on the file's context and objects, as [`Ufile::with_ucontext`].
    pub(crate) fn with_context<R>(&self, f: impl FnOnce(&mut Context) -> Result<R>) -> Result<R> {
        let mut guard = self.context.lock();
        if self.dev.ib_device().is_none() {
            return Err(EIO);
        }
        match (*guard).as_mut() {
            Some(c) => f(c),
            None => Err(EINVAL),
        }
    }

    /// Makes the file's user context with `make` (C's `ib_init_ucontext`): `EINVAL` when the
    /// file has one already; `EIO` once the RDMA device has gone.
    pub(crate) fn init_ucontext(
        &self,
        events: Option<Arc<EventFile>>,
        make: impl FnOnce() -> Result<UContext>,
    ) -> Result {
        let mut guard = self.context.lock();
        if self.dev.ib_device().is_none() {
            return Err(EIO);
        }
        if guard.is_some() {
            return Err(EINVAL);
        }
        let mut files = KVec::new();
        if let Some(e) = events {
            files.push(e, GFP_KERNEL)?;
        }
        let ucontext = make()?;
        *guard = Some(Context {
            objects: UObjects::default(),
            ucontext,
            events: files,
            channels: KVec::new(),
        });
        Ok(())
    }

    /// Gives the context another async event file (C's ASYNC_EVENT_ALLOC): `EIO` once the
    /// RDMA device has gone, `EINVAL` before GET_CONTEXT.
    pub(crate) fn add_async_file(&self, events: Arc<EventFile>) -> Result {
        let mut guard = self.context.lock();
        if self.dev.ib_device().is_none() {
            return Err(EIO);
        }
        let c = (*guard).as_mut().ok_or(EINVAL)?;
        c.events.push(events, GFP_KERNEL)?;
        Ok(())
    }

    /// Destroys what GET_CONTEXT made (C's `uverbs_destroy_ufile_hw`): the driver frees the
    /// context now, and the async event file takes no more events. When the RDMA device is
    /// going away (`device_gone`, C's `RDMA_REMOVE_DRIVER_REMOVE`), its readers get
    /// `IB_EVENT_DEVICE_FATAL` last.
    pub(crate) fn destroy_context(&self, device_gone: bool) {
        let old = self.context.lock().take();
        if let Some(mut c) = old {
            c.objects.destroy_all();
            for events in c.events.iter() {
                if device_gone {
                    events.push(0, EVENT_DEVICE_FATAL);
                }
                events.stop();
            }
            for ch in c.channels.iter() {
                ch.close();
            }
            drop(c.ucontext);
        }
    }

    /// A completion channel whose file user space closed leaves the list (C's
    /// `uverbs_uobject_fd_release`).
    pub(crate) fn forget_channel(&self, ch: &Arc<EventFile>) {
        let mut guard = self.context.lock();
        if let Some(c) = (*guard).as_mut() {
            if let Some(i) = c.channels.iter().position(|x| Arc::ptr_eq(x, ch)) {
                let _ = c.channels.remove(i);
            }
        }
        drop(guard);
        ch.close();
    }
}

/// `IB_EVENT_DEVICE_FATAL`.
const EVENT_DEVICE_FATAL: u32 = 8;
