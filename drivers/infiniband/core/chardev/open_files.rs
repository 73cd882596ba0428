// SPDX-License-Identifier: GPL-2.0

//! The files open on a user-space node of an RDMA device (a `uverbsN`, a `umadN`): the RDMA
//! device while it is there, the files, and the device's going away, which every open file is
//! told of (C's `uverbs_file_list` with `ib_uverbs_free_hw_resources`, umad's `file_list` with
//! `ib_umad_kill_port`).

use crate::device::ib_device::IbDevice;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// An open file as its node sees it.
pub trait OpenFile: Send + Sync {
    /// The RDMA device has gone: the file gives up what it holds of it (uverbs: its context;
    /// umad: its agents) and fails from now on.
    fn device_gone(&self);
}

/// A node's RDMA device and open files.
#[pin_data]
pub struct OpenFiles {
    /// The RDMA device, until it goes.
    #[pin]
    ib: Mutex<Option<Arc<IbDevice>>>,
    /// The open files.
    #[pin]
    files: Mutex<KVec<Arc<dyn OpenFile>>>,
}

impl OpenFiles {
    /// No file open on a node of `ib`.
    ///
    /// The locks' initializers are made here, not inlined into the calling crate: lockdep keys
    /// a lock class by its static key and checks that the class's name has one address too.
    #[inline(never)]
    pub fn new(ib: &Arc<IbDevice>) -> impl PinInit<Self> {
        let ib = new_mutex!(
            Some(ib.clone()),
            "ib_core::chardev::open_files::OpenFiles::ib"
        );
        let files = new_mutex!(
            KVec::new(),
            "ib_core::chardev::open_files::OpenFiles::files"
        );
        pin_init!(Self {
            ib <- ib,
            files <- files,
        })
    }

    /// The RDMA device, `None` once it has gone.
    pub fn ib_device(&self) -> Option<Arc<IbDevice>> {
        self.ib.lock().clone()
    }

    /// Lists a newly opened file; `gone` if the RDMA device went meanwhile (uverbs: `EIO`,
    /// umad: `ENXIO`).
    pub fn add(&self, f: Arc<dyn OpenFile>, gone: Error) -> Result {
        let mut files = self.files.lock();
        if self.ib.lock().is_none() {
            return Err(gone);
        }
        files.push(f, GFP_KERNEL)?;
        Ok(())
    }

    /// Unlists a closed file.
    pub fn remove(&self, f: &dyn OpenFile) {
        let mut files = self.files.lock();
        if let Some(i) = files
            .iter()
            .position(|x| core::ptr::addr_eq(Arc::as_ptr(x), f))
        {
            let _ = files.remove(i);
        }
    }

    /// The RDMA device goes: no file is listed from now on, and every open one is told, outside
    /// the list's lock (a file may take processes' mmap locks), or under it when there is no
    /// memory for a copy of the list (which cannot be long).
    pub fn device_gone(&self) {
        let files = {
            let list = self.files.lock();
            *self.ib.lock() = None;
            let mut copy = KVec::with_capacity(list.len(), GFP_KERNEL);
            if let Ok(c) = copy.as_mut() {
                for f in list.iter() {
                    let _ = c.push(f.clone(), GFP_KERNEL);
                }
            }
            copy
        };
        match files {
            Ok(files) => files.iter().for_each(|f| f.device_gone()),
            Err(_) => self.files.lock().iter().for_each(|f| f.device_gone()),
        }
    }
}
