// SPDX-License-Identifier: GPL-2.0

//! An open `/dev/infiniband/uverbsN` (C's `ib_uverbs_file`): its device, and the user context
//! and async event file GET_CONTEXT gives it. The device keeps a list of its open files so that
//! when the RDMA device goes away it can take their contexts back (C's disassociation): the
//! driver frees them before the device is gone, and the process only sees errors (`EIO`).
//!
//! Device pages the file mapped into user space (`mmap`, e.g. mlx5's UAR pages) are tracked
//! by the file's [`UserMaps`] and taken back first when the device goes. `mmap` runs with the
//! caller's mmap lock held, so it does not take the context's lock (a command holding that may
//! be waiting for the mmap lock, pinning user memory); it uses the context through its own
//! reference, and disassociation waits for the mappings under way before taking pages back.

use crate::{
    device::UverbsDevice,
    file::event_file::{ChannelOwner, EventFile},
    file::uobjects::UObjects,
};
use ib_core::chardev::open_files::OpenFile;
use ib_core::device::ib_device::DeviceEventRegistration;
use ib_core::user::ucontext::UContext;
use kernel::{
    mm::virt::VmaNew,
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, Mutex},
    user_mmap::UserMaps,
};

/// What GET_CONTEXT made, and the objects made in it.
pub(crate) struct Context {
    /// The objects (dropped before the context: field order, and `destroy_context`).
    pub(crate) objects: UObjects,
    /// The user context (shared with `mmap` calls under way).
    pub(crate) ucontext: Arc<UContext>,
    /// The async event files: the one the write() GET_CONTEXT made, and those
    /// ASYNC_EVENT_ALLOC made (the ioctl GET_CONTEXT makes none).
    events: KVec<Arc<EventFile>>,
    /// Each async event file's registration for the device's and ports' events.
    watches: KVec<DeviceEventRegistration>,
    /// The completion channels whose files are open.
    pub(crate) channels: KVec<Arc<EventFile>>,
}

impl Context {
    /// The event file of this context that `file` is: a completion channel (`channel`) or an
    /// async event file; `None` for any other file.
    pub(crate) fn event_file(
        &self,
        file: &kernel::fs::LocalFile,
        channel: bool,
    ) -> Option<Arc<EventFile>> {
        let list = if channel {
            &self.channels
        } else {
            &self.events
        };
        list.iter()
            .find(|e| kernel::anon_file::holds::<EventFile>(file, e))
            .cloned()
    }

    /// The async event file objects report to when they name none (C's
    /// `default_async_file`): the first one made.
    pub(crate) fn default_async_file(&self) -> Option<Arc<EventFile>> {
        self.events.first().cloned()
    }
}

/// The state of one open file.
#[pin_data]
pub(crate) struct Ufile {
    dev: Arc<UverbsDevice>,
    /// Held while a command uses the context, so that disassociation waits for it.
    #[pin]
    context: Mutex<Option<Context>>,
    /// The device pages mapped into user space through this file.
    maps: Arc<UserMaps>,
    /// The context as `mmap` uses it, and how many `mmap` calls use it now.
    #[pin]
    mmap: Mutex<MmapSlot>,
    /// Signalled when the last `mmap` call under way ends.
    #[pin]
    mmap_idle: CondVar,
}

/// The context as `mmap` sees it.
struct MmapSlot {
    ctx: Option<Arc<UContext>>,
    active: u32,
}

impl Ufile {
    /// A file of `dev`, not yet in the device's list.
    pub(crate) fn new(dev: Arc<UverbsDevice>) -> Result<Arc<Self>> {
        let maps = UserMaps::new()?;
        Arc::pin_init(
            pin_init!(Self {
                dev,
                context <- new_mutex!(None, "ib_uverbs::ufile::context"),
                maps,
                mmap <- new_mutex!(MmapSlot { ctx: None, active: 0 }, "ib_uverbs::ufile::mmap"),
                mmap_idle <- new_condvar!("ib_uverbs::ufile::mmap_idle"),
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

    /// Runs `f` on the file's context, if it has one: `EIO` once the RDMA device has gone.
    pub(crate) fn with_context_any<R>(
        &self,
        f: impl FnOnce(Option<&mut Context>) -> R,
    ) -> Result<R> {
        let mut guard = self.context.lock();
        if self.dev.ib_device().is_none() {
            return Err(EIO);
        }
        Ok(f((*guard).as_mut()))
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
        let ib = self.dev.ib_device().ok_or(EIO)?;
        let mut files = KVec::new();
        let mut watches = KVec::new();
        if let Some(e) = events {
            watches.push(EventFile::watch_device(&e, &ib)?, GFP_KERNEL)?;
            files.push(e, GFP_KERNEL)?;
        }
        let ucontext = Arc::new(make()?, GFP_KERNEL)?;
        self.mmap.lock().ctx = Some(ucontext.clone());
        *guard = Some(Context {
            objects: UObjects::default(),
            ucontext,
            events: files,
            watches,
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
        let ib = self.dev.ib_device().ok_or(EIO)?;
        let c = (*guard).as_mut().ok_or(EINVAL)?;
        c.events.reserve(1, GFP_KERNEL)?;
        c.watches
            .push(EventFile::watch_device(&events, &ib)?, GFP_KERNEL)?;
        c.events.push(events, GFP_KERNEL)?;
        Ok(())
    }

    /// Destroys what GET_CONTEXT made (C's `uverbs_destroy_ufile_hw`): the driver frees the
    /// context now, and the async event file takes no more events. When the RDMA device is
    /// going away (`device_gone`, C's `RDMA_REMOVE_DRIVER_REMOVE`), its readers get
    /// `IB_EVENT_DEVICE_FATAL` last.
    pub(crate) fn destroy_context(&self, device_gone: bool) {
        // No new mapping, and none under way (they hold the context); then the pages mapped go
        // (C's `uverbs_user_mmap_disassociate`, only needed when the device goes: a file being
        // closed has no mappings left, each holds the file).
        let mapped = {
            let mut slot = self.mmap.lock();
            let ctx = slot.ctx.take();
            while slot.active != 0 {
                self.mmap_idle.wait(&mut slot);
            }
            ctx
        };
        drop(mapped);
        if device_gone {
            self.maps.zap_all();
        }
        let old = self.context.lock().take();
        if let Some(mut c) = old {
            // The device's events stop coming first (C unregisters the handlers as the async
            // event files' objects go).
            c.watches.clear();
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

    /// Maps device memory of the file's context into `vma` (C's `ib_uverbs_mmap`): `EIO` once
    /// the RDMA device has gone, `EINVAL` before GET_CONTEXT; the driver says what the offset
    /// maps (`ENODEV` for a driver without `mmap`).
    pub(crate) fn mmap(&self, vma: &VmaNew) -> Result {
        let ctx = {
            let mut slot = self.mmap.lock();
            if self.dev.ib_device().is_none() {
                return Err(EIO);
            }
            let ctx = slot.ctx.clone().ok_or(EINVAL)?;
            slot.active += 1;
            ctx
        };
        let r = ctx.mmap(vma, &self.maps);
        // The reference goes before the count: the last one is never dropped here.
        drop(ctx);
        let mut slot = self.mmap.lock();
        slot.active -= 1;
        if slot.active == 0 {
            self.mmap_idle.notify_all();
        }
        r
    }
}

impl ChannelOwner for Ufile {
    /// A completion channel whose file user space closed leaves the list (C's
    /// `uverbs_uobject_fd_release`).
    fn forget_channel(&self, ch: &Arc<EventFile>) {
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

impl OpenFile for Ufile {
    /// The RDMA device goes away: the file's context is destroyed, after the command running
    /// on it, if any (C's `uverbs_destroy_ufile_hw` with `RDMA_REMOVE_DRIVER_REMOVE`).
    fn device_gone(&self) {
        self.destroy_context(true);
    }
}

/// `IB_EVENT_DEVICE_FATAL`.
const EVENT_DEVICE_FATAL: u32 = 8;
