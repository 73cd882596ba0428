// SPDX-License-Identifier: GPL-2.0

//! The async event file (C's `ib_uverbs_async_event_file`, `anon_inode:[infinibandevent]`): a
//! process reads its device's asynchronous events from it, 16 bytes each
//! (`struct ib_uverbs_async_event_desc`). A read with nothing queued waits (interruptibly), or
//! fails with `EAGAIN` on a non-blocking file. As in C the queue is never closed while the file
//! is open: when the device goes, readers get `IB_EVENT_DEVICE_FATAL` and then nothing more.

use kernel::{
    anon_file::{self, AnonFileOps},
    fs::File,
    new_condvar, new_spinlock,
    prelude::*,
    sync::{aref::ARef, Arc, ArcBorrow, CondVar, SpinLock},
    uaccess::UserSliceWriter,
};

/// `sizeof(struct ib_uverbs_async_event_desc)`.
const EVENT_SIZE: usize = 16;

/// `O_NONBLOCK`.
const O_NONBLOCK: u32 = 0o4000;

/// One event as user space reads it: the element (a user handle, or the port number), the
/// event type and a reserved word.
#[derive(Clone, Copy)]
struct Event([u8; EVENT_SIZE]);

/// The queued events, and whether more may come.
struct Queue {
    events: KVec<Event>,
    /// No more events (the device has gone and `IB_EVENT_DEVICE_FATAL` is queued, or the
    /// file's context was destroyed).
    done: bool,
}

/// An async event file's state.
#[pin_data]
pub(crate) struct AsyncEventFile {
    #[pin]
    queue: SpinLock<Queue>,
    #[pin]
    readable: CondVar,
}

impl AsyncEventFile {
    /// An empty queue.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                queue <- new_spinlock!(Queue { events: KVec::new(), done: false }),
                readable <- new_condvar!("ib_uverbs::async_event::readable"),
            }),
            GFP_KERNEL,
        )
    }

    /// The file user space gets (read-only, as C's).
    pub(crate) fn new_file(this: &Arc<Self>) -> Result<ARef<File>> {
        anon_file::new_file::<AsyncEventFile>(c"[infinibandevent]", this.clone(), 0)
    }

    /// Queues an event (C's `ib_uverbs_async_handler`); may run in atomic context. An event
    /// that finds no memory is dropped, as C drops it.
    pub(crate) fn push(&self, element: u64, event_type: u32) {
        let mut e = [0u8; EVENT_SIZE];
        e[0..8].copy_from_slice(&element.to_le_bytes());
        e[8..12].copy_from_slice(&event_type.to_le_bytes());
        let mut q = self.queue.lock();
        if q.done {
            return;
        }
        if q.events.push(Event(e), GFP_ATOMIC).is_ok() {
            self.readable.notify_all();
        }
    }

    /// No more events are queued (C unregisters the file's event handler): readers still get
    /// what is queued, then wait.
    pub(crate) fn stop(&self) {
        self.queue.lock().done = true;
    }
}

#[vtable]
impl AnonFileOps for AsyncEventFile {
    type Ptr = Arc<AsyncEventFile>;

    /// C's `ib_uverbs_event_read` for the async queue: one event per read; a buffer shorter
    /// than an event is `EINVAL` (the event stays queued).
    fn read(
        this: ArcBorrow<'_, AsyncEventFile>,
        file: &File,
        mut buf: UserSliceWriter,
        len: usize,
    ) -> Result<usize> {
        let mut q = this.queue.lock();
        while q.events.is_empty() {
            if file.flags() & O_NONBLOCK != 0 {
                return Err(EAGAIN);
            }
            if this.readable.wait_interruptible(&mut q) {
                return Err(ERESTARTSYS);
            }
        }
        if len < EVENT_SIZE {
            return Err(EINVAL);
        }
        let ev = q.events.remove(0)?;
        drop(q);
        buf.write_slice(&ev.0)?;
        Ok(EVENT_SIZE)
    }
}
