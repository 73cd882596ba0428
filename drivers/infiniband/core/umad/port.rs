// SPDX-License-Identifier: GPL-2.0

//! One port's user MAD access (C's `ib_umad_port`): the RDMA device and port it serves, the
//! files open on it, who holds `issmN`, and the port's removal (C's `ib_umad_kill_port`). Its
//! `umadN` and `issmN` (made by `client.rs`) open on it.

use ib_core::ib_device::IbDevice;
use kernel::{
    chrdev::DevT,
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, Mutex},
};

/// An open `umadN` file as its port sees it: what the port's removal does to it.
pub(crate) trait PortFile: Send + Sync {
    /// The port is gone: the file loses its agents; reads, writes and registrations fail.
    fn kill(&self);
}

/// A port's user MAD devices.
#[pin_data]
pub(crate) struct UmadPort {
    number: u32,
    umad_devt: DevT,
    issm_devt: DevT,
    port_num: u32,
    /// The RDMA device, until the port is removed.
    #[pin]
    ib: Mutex<Option<Arc<IbDevice>>>,
    /// The open `umadN` files (C's `file_list`, under `file_mutex`).
    #[pin]
    files: Mutex<KVec<Arc<dyn PortFile>>>,
    /// Whether `issmN` is held (C's `sm_sem`, a semaphore of one).
    #[pin]
    sm_held: Mutex<bool>,
    #[pin]
    sm_free: CondVar,
}

impl UmadPort {
    /// Port `port_num` of `ib`, numbered `number` in the `umadN` numbering, with the device
    /// numbers of its `umadN` and `issmN`.
    pub(crate) fn new(
        ib: &Arc<IbDevice>,
        port_num: u32,
        number: u32,
        umad_devt: DevT,
        issm_devt: DevT,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(UmadPort {
                number,
                umad_devt,
                issm_devt,
                port_num,
                ib <- new_mutex!(Some(ib.clone())),
                files <- new_mutex!(KVec::new()),
                sm_held <- new_mutex!(false),
                sm_free <- new_condvar!(),
            }),
            GFP_KERNEL,
        )
    }

    /// The port's number in the `umadN` numbering.
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// The number of `umadN` (`issm` false) or `issmN`.
    pub(crate) fn devt(&self, issm: bool) -> DevT {
        if issm {
            self.issm_devt
        } else {
            self.umad_devt
        }
    }

    /// The RDMA device's port number.
    pub(crate) fn port_num(&self) -> u32 {
        self.port_num
    }

    /// The RDMA device, `None` once the port is removed.
    pub(crate) fn ib_device(&self) -> Option<Arc<IbDevice>> {
        self.ib.lock().clone()
    }

    /// Lists a newly opened file: `ENXIO` if the port went meanwhile.
    pub(crate) fn add_file(&self, f: Arc<dyn PortFile>) -> Result {
        let mut files = self.files.lock();
        if self.ib.lock().is_none() {
            return Err(ENXIO);
        }
        files.push(f, GFP_KERNEL)?;
        Ok(())
    }

    /// Unlists a closed file.
    pub(crate) fn remove_file(&self, f: &dyn PortFile) {
        let mut files = self.files.lock();
        if let Some(i) = files
            .iter()
            .position(|x| core::ptr::addr_eq(Arc::as_ptr(x), f))
        {
            let _ = files.remove(i);
        }
    }

    /// Takes `issmN` (C's `down(&port->sm_sem)`): `EAGAIN` if held and `nonblock`, else waits
    /// (`ERESTARTSYS` on a signal).
    pub(crate) fn sm_take(&self, nonblock: bool) -> Result {
        let mut held = self.sm_held.lock();
        while *held {
            if nonblock {
                return Err(EAGAIN);
            }
            if self.sm_free.wait_interruptible(&mut held) {
                return Err(ERESTARTSYS);
            }
        }
        *held = true;
        Ok(())
    }

    /// Gives `issmN` back (C's `up(&port->sm_sem)`).
    pub(crate) fn sm_give(&self) {
        *self.sm_held.lock() = false;
        self.sm_free.notify_one();
    }

    /// The port is removed (C's `ib_umad_kill_port`, after the devices are gone): every open
    /// file loses its agents; reads, writes and registrations fail from now on.
    pub(crate) fn kill(&self) {
        let files = {
            let files = self.files.lock();
            *self.ib.lock() = None;
            let mut copy = KVec::new();
            for f in files.iter() {
                let _ = copy.push(f.clone(), GFP_KERNEL);
            }
            copy
        };
        for f in files.iter() {
            f.kill();
        }
    }
}
