// SPDX-License-Identifier: GPL-2.0

//! One port's user MAD access (C's `ib_umad_port`): the RDMA device and port it serves, the
//! files open on it, who holds `issmN`, and the port's removal (C's `ib_umad_kill_port`). Its
//! `umadN` and `issmN` (made by `client.rs`) open on it.

use ib_core::{
    chardev::open_files::{OpenFile, OpenFiles},
    device::ib_device::IbDevice,
};
use kernel::{
    chrdev::DevT,
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, Mutex},
};

/// A port's user MAD devices.
#[pin_data]
pub(crate) struct UmadPort {
    number: u32,
    umad_devt: DevT,
    issm_devt: DevT,
    port_num: u32,
    /// The RDMA device until the port is removed, and the open `umadN` files (C's
    /// `file_list`, under `file_mutex`).
    #[pin]
    files: OpenFiles,
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
                files <- OpenFiles::new(ib),
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
        self.files.ib_device()
    }

    /// Lists a newly opened file: `ENXIO` if the port went meanwhile.
    pub(crate) fn add_file(&self, f: Arc<dyn OpenFile>) -> Result {
        self.files.add(f, ENXIO)
    }

    /// Unlists a closed file.
    pub(crate) fn remove_file(&self, f: &dyn OpenFile) {
        self.files.remove(f);
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
        self.files.device_gone();
    }
}
