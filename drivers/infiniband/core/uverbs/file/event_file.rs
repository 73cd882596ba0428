// SPDX-License-Identifier: GPL-2.0

//! Event files (`anon_inode:[infinibandevent]`): the async event file (C's
//! `ib_uverbs_async_event_file`), from which a process reads its device's asynchronous events,
//! 16 bytes each (`struct ib_uverbs_async_event_desc`), and completion channels (C's
//! `ib_uverbs_completion_event_file`), 8 bytes each (`struct ib_uverbs_comp_event_desc`: the
//! CQ's handle). A read with nothing queued waits (interruptibly), or fails with `EAGAIN` on a
//! non-blocking file.
//!
//! As in C, an async event file's queue is never closed while the file is open: when the device
//! goes, readers get `IB_EVENT_DEVICE_FATAL` and then nothing more. A completion channel's queue
//! is closed when its object is destroyed (its file's context goes): readers then get `EIO`.

use crate::uabi::AsyncEventDesc;
use ib_core::device::{
    events::{DeviceEventHandler, EventType},
    ib_device::{DeviceEventRegistration, IbDevice},
};
use kernel::{
    anon_file::{self, AnonFileOps},
    fs::{file::FileDescriptorReservation, File},
    new_mutex, new_poll_condvar, new_spinlock_irq,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
        poll::{PollCondVar, PollTable},
        Arc, ArcBorrow, Mutex, SpinLockIrq,
    },
    transmute::AsBytes,
    uaccess::UserSliceWriter,
};

/// `O_CLOEXEC`: event files' fds are installed close-on-exec, as C's.
const O_CLOEXEC: u32 = 0o2000000;

/// An event file given to user space: its fd is reserved and its file made while the command
/// runs, and the fd is installed only when the command succeeds (else both are dropped).
pub(crate) struct NewEventFd {
    reservation: FileDescriptorReservation,
    file: ARef<File>,
    events: Arc<EventFile>,
}

impl NewEventFd {
    /// Reserves an fd and makes the file of `events`.
    pub(crate) fn new(events: Arc<EventFile>) -> Result<Self> {
        let reservation = FileDescriptorReservation::get_unused_fd_flags(O_CLOEXEC)?;
        let file = EventFile::new_file(&events)?;
        Ok(Self {
            reservation,
            file,
            events,
        })
    }

    /// The fd's number.
    pub(crate) fn fd(&self) -> u32 {
        self.reservation.reserved_fd()
    }

    /// The event queue behind the file.
    pub(crate) fn events(&self) -> &Arc<EventFile> {
        &self.events
    }

    /// Installs the fd: user space can use it from now on.
    pub(crate) fn install(self) {
        self.reservation.fd_install(self.file);
    }
}

/// The handler of an object's asynchronous events (C's `ib_uverbs_qp_event_handler` and
/// `ib_uverbs_cq_event_handler`): each goes to `file` (none: dropped) as the object's user
/// `handle` and the event's type, counted in `counts` once read.
pub(crate) fn async_handler(
    file: Option<Arc<EventFile>>,
    handle: u64,
    counts: &Arc<EventCounts>,
) -> Result<Option<ib_core::device::events::EventHandler>> {
    let Some(f) = file else {
        return Ok(None);
    };
    let counts = counts.clone();
    Ok(Some(KBox::new(
        move |t: ib_core::device::events::EventType| {
            f.push_counted(handle, t as u32, Some(counts.clone()))
        },
        GFP_KERNEL,
    )?))
}

/// The open file behind fd `fd` of the calling process, to be looked up among a context's
/// event files (C's `fget` in `lookup_get_fd_uobject`): `EBADF` when there is none.
pub(crate) fn fget(fd: i32) -> Result<ARef<kernel::fs::LocalFile>> {
    let fd = u32::try_from(fd).map_err(|_| EBADF)?;
    kernel::fs::LocalFile::fget(fd).map_err(|_| EBADF)
}

/// `sizeof(struct ib_uverbs_async_event_desc)`.
const ASYNC_EVENT_SIZE: usize = size_of::<AsyncEventDesc>();
/// `sizeof(struct ib_uverbs_comp_event_desc)`: the async one's first member, the element.
const COMP_EVENT_SIZE: usize = size_of::<kernel::uapi::ib_uverbs_comp_event_desc>();

/// `O_NONBLOCK`.
const O_NONBLOCK: u32 = 0o4000;

/// One event as user space reads it: the element (a user handle, or the port number), the
/// event type and a reserved word (a completion event is only the first 8 bytes); and the
/// counters of the object it is about, bumped when it is read.
struct Event {
    desc: AsyncEventDesc,
    counts: Option<Arc<EventCounts>>,
}

/// How many of an object's events user space read (C's `comp_events_reported` and
/// `events_reported`): DESTROY answers them, and libibverbs waits until it acknowledged as
/// many.
pub(crate) struct EventCounts {
    comp: Atomic<u32>,
    async_: Atomic<u32>,
}

impl EventCounts {
    /// New counters, at zero.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                comp: Atomic::new(0),
                async_: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Completion events read.
    pub(crate) fn comp(&self) -> u32 {
        self.comp.load(Relaxed)
    }

    /// Asynchronous events read.
    pub(crate) fn async_events(&self) -> u32 {
        self.async_.load(Relaxed)
    }
}

/// The queued events, and whether more may come.
///
/// A FIFO over a vector with a read index: `read` takes the oldest event in O(1) (the consumed
/// front is compacted away once it is half the vector), and `forget` drops an object's events
/// in one pass. Both run with interrupts off, so neither may cost more than O(n) once: a user
/// can queue ~10^5 events (C keeps them on per-object lists, uverbs_main.c:128-150).
struct Queue {
    /// Events `head..` are queued; those before `head` were read (their counts taken).
    events: KVec<Event>,
    head: usize,
    /// No more events (the device has gone and `IB_EVENT_DEVICE_FATAL` is queued, or the
    /// file's context was destroyed).
    done: bool,
    /// Readers get `EIO` once the queue is empty (a destroyed completion channel).
    closed: bool,
}

/// The consumed front is compacted away only when it is at least this long (and half the
/// vector): small queues are just cleared when they empty.
const COMPACT_MIN: usize = 64;

impl Queue {
    fn is_empty(&self) -> bool {
        self.head >= self.events.len()
    }

    /// The oldest queued event's bytes and counters; its slot is consumed.
    fn pop_front(&mut self) -> Option<(AsyncEventDesc, Option<Arc<EventCounts>>)> {
        let e = self.events.get_mut(self.head)?;
        let out = (AsyncEventDesc(e.desc.0), e.counts.take());
        self.head += 1;
        if self.head == self.events.len() {
            self.events.clear();
            self.head = 0;
        } else if self.head >= COMPACT_MIN && self.head * 2 >= self.events.len() {
            // One O(n) move per n/2 reads: O(1) per read, amortized.
            let head = self.head;
            let mut i = 0usize;
            self.events.retain(|_| {
                i += 1;
                i > head
            });
            self.head = 0;
        }
        Some(out)
    }

    /// Drops the queued events counted by `counts`, in one pass (O(n)). The dropped events'
    /// counters cannot be the last reference: the caller holds `counts`.
    fn forget(&mut self, counts: &Arc<EventCounts>) {
        self.events
            .retain(|e| !e.counts.as_ref().is_some_and(|c| Arc::ptr_eq(c, counts)));
        if self.is_empty() {
            self.clear();
        }
    }

    /// Drops every event.
    fn clear(&mut self) {
        self.events.clear();
        self.head = 0;
    }
}

/// The file a completion channel belongs to, as the channel sees it.
pub(crate) trait ChannelOwner: Send + Sync {
    /// The channel's own file was closed by user space: the channel leaves the owner's list
    /// and is closed.
    fn forget_channel(&self, ch: &Arc<EventFile>);
}

/// An event file's state.
#[pin_data]
pub(crate) struct EventFile {
    /// Bytes of one event as read.
    event_size: usize,
    /// Completion events are queued from the EQ's interrupt.
    #[pin]
    queue: SpinLockIrq<Queue>,
    #[pin]
    readable: PollCondVar,
    /// A completion channel's file, until the channel is destroyed: the channel leaves the
    /// file's list when its own file is closed first.
    #[pin]
    owner: Mutex<Option<Arc<dyn ChannelOwner>>>,
}

impl EventFile {
    fn with_size(event_size: usize) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                event_size,
                queue <- new_spinlock_irq!(Queue { events: KVec::new(), head: 0, done: false, closed: false }),
                readable <- new_poll_condvar!("ib_uverbs::event_file::readable"),
                owner <- new_mutex!(None, "ib_uverbs::event_file::owner"),
            }),
            GFP_KERNEL,
        )
    }

    /// An empty async event queue.
    pub(crate) fn new_async() -> Result<Arc<Self>> {
        Self::with_size(ASYNC_EVENT_SIZE)
    }

    /// An empty completion channel.
    pub(crate) fn new_comp() -> Result<Arc<Self>> {
        Self::with_size(COMP_EVENT_SIZE)
    }

    /// The file user space gets (read-only, as C's).
    fn new_file(this: &Arc<Self>) -> Result<ARef<File>> {
        anon_file::new_file::<EventFile>(c"[infinibandevent]", this.clone(), 0)
    }

    /// Records the file a completion channel belongs to.
    pub(crate) fn set_owner(&self, owner: Arc<dyn ChannelOwner>) {
        *self.owner.lock() = Some(owner);
    }

    /// The channel's object is destroyed (C's `ib_uverbs_free_event_queue`): queued events
    /// are dropped, readers get `EIO`, and it no longer refers to its file.
    pub(crate) fn close(&self) {
        drop(self.owner.lock().take());
        let mut q = self.queue.lock();
        q.closed = true;
        q.done = true;
        q.clear();
        drop(q);
        self.readable.notify_all();
    }

    /// Queues an event (C's `ib_uverbs_async_handler`); may run in atomic context. An event
    /// that finds no memory is dropped, as C drops it.
    pub(crate) fn push(&self, element: u64, event_type: u32) {
        self.push_counted(element, event_type, None);
    }

    /// Queues an event about an object whose `counts` count it once it is read (C's
    /// `ib_uverbs_comp_handler` and `uverbs_uobj_event`); may run in hard-IRQ context.
    pub(crate) fn push_counted(
        &self,
        element: u64,
        event_type: u32,
        counts: Option<Arc<EventCounts>>,
    ) {
        let desc = AsyncEventDesc(kernel::uapi::ib_uverbs_async_event_desc {
            element,
            event_type,
            reserved: 0,
        });
        let mut q = self.queue.lock();
        if q.done {
            return;
        }
        if q.events.push(Event { desc, counts }, GFP_ATOMIC).is_ok() {
            self.readable.notify_all();
        }
    }

    /// Drops the queued events of the object counted by `counts` (C's `ib_uverbs_release_ucq`
    /// and `ib_uverbs_release_uevent`: a destroyed object's unread events go).
    pub(crate) fn forget(&self, counts: &Arc<EventCounts>) {
        self.queue.lock().forget(counts);
    }

    /// Queues the events of `dev` and its ports from now until the returned registration is
    /// dropped (C's `ib_uverbs_init_async_event_file` registers `ib_uverbs_event_handler`): the
    /// port number is the event's element, as C reports it.
    pub(crate) fn watch_device(
        this: &Arc<Self>,
        dev: &Arc<IbDevice>,
    ) -> Result<DeviceEventRegistration> {
        let file = this.clone();
        let handler: DeviceEventHandler = KBox::new(
            move |event: EventType, port: u32| file.push(u64::from(port), event as u32),
            GFP_KERNEL,
        )?;
        DeviceEventRegistration::new(dev, handler)
    }

    /// No more events are queued (C unregisters the file's event handler): readers still get
    /// what is queued, then wait.
    pub(crate) fn stop(&self) {
        self.queue.lock().done = true;
    }
}

#[vtable]
impl AnonFileOps for EventFile {
    type Ptr = Arc<EventFile>;

    /// A completion channel closed by user space leaves its file's list (C destroys its
    /// object then).
    fn release(this: Arc<EventFile>, _file: &File) {
        let owner = this.owner.lock().take();
        if let Some(ufile) = owner {
            ufile.forget_channel(&this);
        }
    }

    /// C's `ib_uverbs_event_read`: one event per read; a buffer shorter than an event is
    /// `EINVAL` (the event stays queued); a closed, empty queue `EIO`.
    fn read(
        this: ArcBorrow<'_, EventFile>,
        file: &File,
        mut buf: UserSliceWriter,
        len: usize,
    ) -> Result<usize> {
        let mut q = this.queue.lock();
        while q.is_empty() {
            if q.closed {
                return Err(EIO);
            }
            if file.flags() & O_NONBLOCK != 0 {
                return Err(EAGAIN);
            }
            if this.readable.wait_interruptible(&mut q) {
                return Err(ERESTARTSYS);
            }
        }
        let size = this.event_size;
        if len < size {
            return Err(EINVAL);
        }
        let Some((desc, counts)) = q.pop_front() else {
            return Err(EAGAIN);
        };
        // Counted as read before the copy, as C counts it under its lock.
        if let Some(c) = counts.as_ref() {
            if size == COMP_EVENT_SIZE {
                c.comp.fetch_add(1, Relaxed);
            } else {
                c.async_.fetch_add(1, Relaxed);
            }
        }
        drop(q);
        drop(counts);
        buf.write_slice(&desc.as_bytes()[..size])?;
        Ok(size)
    }

    /// C's `ib_uverbs_event_poll`: readable while an event is queued; an error once the file's
    /// context went (closed and empty); else the caller waits for the next event.
    fn poll(this: ArcBorrow<'_, EventFile>, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &this.readable);
        let q = this.queue.lock();
        if !q.is_empty() {
            anon_file::POLLIN | anon_file::POLLRDNORM
        } else if q.closed {
            anon_file::POLLERR
        } else {
            0
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_uverbs_event_queue)]
mod tests {
    use super::*;

    fn queue() -> Queue {
        Queue {
            events: KVec::new(),
            head: 0,
            done: false,
            closed: false,
        }
    }

    fn event(element: u64, counts: &Arc<EventCounts>) -> Event {
        Event {
            desc: AsyncEventDesc(kernel::uapi::ib_uverbs_async_event_desc {
                element,
                ..Default::default()
            }),
            counts: Some(counts.clone()),
        }
    }

    fn element(d: &AsyncEventDesc) -> u64 {
        d.element
    }

    /// Events come out in order across compactions; an object's events are dropped in one
    /// pass and the others stay in order.
    #[test]
    fn fifo_across_compaction_and_forget() -> Result {
        let (a, b) = (EventCounts::new()?, EventCounts::new()?);
        let mut q = queue();
        for i in 0..1000u64 {
            let c = if i % 2 == 0 { &a } else { &b };
            q.events.push(event(i, c), GFP_KERNEL)?;
        }
        for i in 0..300u64 {
            let (bytes, _) = q.pop_front().ok_or(EINVAL)?;
            assert_eq!(element(&bytes), i);
        }
        // 300 >= COMPACT_MIN but less than half: not compacted yet.
        assert_eq!(q.head, 300);
        for i in 300..500u64 {
            let (bytes, _) = q.pop_front().ok_or(EINVAL)?;
            assert_eq!(element(&bytes), i);
        }
        // Half consumed: compacted to the 500 left.
        assert_eq!((q.head, q.events.len()), (0, 500));
        // Dropping `a`'s events (the even ones) leaves `b`'s, in order.
        q.forget(&a);
        let mut want = 501u64;
        while let Some((bytes, counts)) = q.pop_front() {
            assert_eq!(element(&bytes), want);
            assert!(counts.is_some_and(|c| Arc::ptr_eq(&c, &b)));
            want += 2;
        }
        assert_eq!(want, 1001);
        assert!(q.is_empty());
        assert_eq!((q.head, q.events.len()), (0, 0));
        Ok(())
    }
}
