//! The vfio-user side: QEMU's `vfio-user-pci` client talks to [`ModelServer`], which forwards
//! config-space and BAR accesses to the [`Device`], keeps the guest-memory mappings and the MSI-X
//! eventfds, and runs commands on a worker thread so the server keeps answering QEMU while a
//! command executes (or hangs, when a fault says so). A network thread delivers packets from the
//! wire (see [`crate::wire`]) and runs the data path's retry timers.

use crate::device::Device;
use crate::firmware::datapath::{self, Packet};
use crate::guest_memory::MappedMemory;
use crate::init_segment;
use crate::pci_config::{BAR0_SIZE, MSIX_VECTORS};
use log::{debug, info, warn};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::mem::size_of;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use vfio_bindings::bindings::vfio::*;
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, Server, ServerBackend, ServerRegion};

/// State shared by the server thread and the command worker. Lock order: device, then memory,
/// then interrupts.
pub struct Shared {
    /// The emulated function.
    pub device: Mutex<Device>,
    /// Guest RAM.
    pub mem: Mutex<MappedMemory>,
    /// MSI-X eventfds by vector.
    pub msix: Mutex<Vec<Option<File>>>,
    /// The wire to the peer model, when linked.
    pub wire: Mutex<Option<UnixStream>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking holder leaves the data as it was; the model keeps serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Raises the interrupts an operation on the device queued and puts the packets it sent
    /// on the wire. Call without the device lock held.
    fn settle(&self, (irqs, packets): (Vec<u16>, Vec<Packet>)) {
        self.fire(&irqs);
        if packets.is_empty() {
            return;
        }
        let mut wire = lock(&self.wire);
        if let Some(w) = wire.as_mut() {
            for p in &packets {
                if let Err(e) = crate::wire::write_frame(w, p) {
                    warn!("wire: send failed: {e}; packets lost");
                    break;
                }
            }
        } else {
            debug!("{} packet(s) for the wire, which is down: lost", packets.len());
        }
    }

    /// Raises each vector the device queued.
    fn fire(&self, vectors: &[u16]) {
        if vectors.is_empty() {
            return;
        }
        let msix = lock(&self.msix);
        for &v in vectors {
            match msix.get(usize::from(v)) {
                Some(Some(f)) => {
                    if let Err(e) = (&*f).write_all(&1u64.to_le_bytes()) {
                        warn!("MSI-X vector {v}: eventfd write failed: {e}");
                    }
                }
                _ => debug!("MSI-X vector {v} not enabled by the guest"),
            }
        }
    }
}

/// Work for the command thread.
enum Work {
    /// The driver rang the command doorbell with this slot mask.
    Doorbell(u32),
}

fn worker(shared: Arc<Shared>, rx: Receiver<Work>) {
    while let Ok(work) = rx.recv() {
        match work {
            Work::Doorbell(mask) => {
                let effects = {
                    let mut dev = lock(&shared.device);
                    let mut mem = lock(&shared.mem);
                    dev.bar0_write(&mut *mem, init_segment::CMD_DBELL, &mask.to_be_bytes());
                    dev.take_effects()
                };
                shared.settle(effects);
            }
        }
    }
}

/// Work for the network thread.
pub enum Net {
    /// A packet from the wire.
    Packet(Packet),
    /// Stop the thread.
    Stop,
}

/// The longest the network thread sleeps when no timer runs.
const NET_IDLE: Duration = Duration::from_millis(100);

/// Delivers packets from the wire and runs the data path's timers.
fn network(shared: Arc<Shared>, rx: Receiver<Net>) {
    loop {
        let deadline = {
            let dev = lock(&shared.device);
            match (dev.firmware.datapath.next_deadline(), dev.next_command_deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        let wait = deadline.map_or(NET_IDLE, |d| {
            d.saturating_duration_since(Instant::now()).min(NET_IDLE)
        });
        let mut packets = vec![];
        match rx.recv_timeout(wait) {
            Ok(Net::Packet(p)) => packets.push(p),
            Ok(Net::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        while let Ok(n) = rx.try_recv() {
            match n {
                Net::Packet(p) => packets.push(p),
                Net::Stop => return,
            }
        }
        let effects = {
            let mut dev = lock(&shared.device);
            let mut mem = lock(&shared.mem);
            for p in packets {
                datapath::receive(&mut dev.firmware, &mut *mem, p);
            }
            let now = Instant::now();
            datapath::tick(&mut dev.firmware, &mut *mem, now);
            dev.complete_due(&mut *mem, now);
            dev.take_effects()
        };
        shared.settle(effects);
    }
}

/// The server's backend.
pub struct ModelServer {
    shared: Arc<Shared>,
    work: Option<Sender<Work>>,
    thread: Option<JoinHandle<()>>,
    net: Sender<Net>,
    net_thread: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Wraps `device` for serving and starts the command worker.
    pub fn new(device: Device) -> Self {
        let shared = Arc::new(Shared {
            device: Mutex::new(device),
            mem: Mutex::new(MappedMemory::default()),
            msix: Mutex::new(Vec::new()),
            wire: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel();
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("cx-commands".into())
            .spawn(move || worker(s, rx))
            .ok();
        let (net, net_rx) = mpsc::channel();
        let s = shared.clone();
        let net_thread = std::thread::Builder::new()
            .name("cx-network".into())
            .spawn(move || network(s, net_rx))
            .ok();
        Self {
            shared,
            work: Some(tx),
            thread,
            net,
            net_thread,
        }
    }

    /// A sender of packets to the network thread.
    pub fn net(&self) -> Sender<Net> {
        self.net.clone()
    }

    /// The shared state (device, memory, interrupts).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the worker after the work already queued.
    pub fn stop(&mut self) {
        self.work.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.net.send(Net::Stop);
        if let Some(t) = self.net_thread.take() {
            let _ = t.join();
        }
        lock(&self.shared.wire).take();
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl ServerBackend for ModelServer {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), std::io::Error> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => lock(&self.shared.device).config_space.read(offset, data),
            VFIO_PCI_BAR0_REGION_INDEX => lock(&self.shared.device).bar0_read(offset, data),
            _ => {
                warn!("read of region {region} at {offset:#x}: no such region");
                data.fill(0xff);
            }
        }
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => {
                debug!("config write {offset:#x} <- {data:02x?}");
                lock(&self.shared.device).config_space.write(offset, data);
            }
            VFIO_PCI_BAR0_REGION_INDEX if offset == init_segment::CMD_DBELL && data.len() == 4 => {
                let mask = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
                debug!("bar0 write {offset:#06x} cmd_dbell <- {mask:#010x}");
                if let Some(tx) = &self.work {
                    let _ = tx.send(Work::Doorbell(mask));
                }
            }
            VFIO_PCI_BAR0_REGION_INDEX => {
                let effects = {
                    let mut dev = lock(&self.shared.device);
                    let mut mem = lock(&self.shared.mem);
                    dev.bar0_write(&mut *mem, offset, data);
                    dev.take_effects()
                };
                self.shared.settle(effects);
            }
            _ => warn!("write to region {region} at {offset:#x}: no such region"),
        }
        Ok(())
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> Result<(), std::io::Error> {
        debug!("dma_map iova {address:#x} size {size:#x} offset {offset:#x} flags {flags:?}");
        match fd {
            Some(f) => lock(&self.shared.mem).map(address, size, &f, offset),
            None => {
                // ROM and other non-RAM regions come without an fd; guest RAM must be a shared
                // memfd for the device to reach it.
                debug!("dma_map of {address:#x} without an fd: not reachable by DMA");
                Ok(())
            }
        }
    }

    fn dma_unmap(&mut self, _flags: DmaUnmapFlags, address: u64, size: u64) -> Result<(), std::io::Error> {
        debug!("dma_unmap iova {address:#x} size {size:#x}");
        lock(&self.shared.mem).unmap(address);
        Ok(())
    }

    fn reset(&mut self) -> Result<(), std::io::Error> {
        info!("device reset");
        lock(&self.shared.device).reset();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), std::io::Error> {
        debug!(
            "set_irqs index {index} flags {flags:#x} start {start} count {count} fds {}",
            fds.len()
        );
        if index != VFIO_PCI_MSIX_IRQ_INDEX {
            return Ok(());
        }
        let mut msix = lock(&self.shared.msix);
        let start = start as usize;
        if flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 {
            let need = start + count as usize;
            if msix.len() < need {
                msix.resize_with(need, || None);
            }
            if fds.is_empty() {
                for v in &mut msix[start..need] {
                    *v = None;
                }
            }
            for (i, f) in fds.into_iter().enumerate() {
                msix[start + i] = Some(f);
            }
        } else if flags & VFIO_IRQ_SET_DATA_NONE != 0
            && flags & VFIO_IRQ_SET_ACTION_TRIGGER != 0
            && count == 0
        {
            msix.clear();
        }
        Ok(())
    }
}

fn regions() -> Vec<ServerRegion> {
    (0..VFIO_PCI_NUM_REGIONS)
        .map(|index| {
            let size = match index {
                VFIO_PCI_CONFIG_REGION_INDEX => 4096,
                VFIO_PCI_BAR0_REGION_INDEX => BAR0_SIZE,
                _ => 0,
            };
            let flags = if size != 0 {
                VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE
            } else {
                0
            };
            let region_info = vfio_region_info {
                argsz: size_of::<vfio_region_info>() as u32,
                index,
                size,
                flags,
                ..Default::default()
            };
            ServerRegion {
                region_info,
                sparse_areas: vec![],
                mmap_fd: None,
            }
        })
        .collect()
}

fn irqs() -> Vec<IrqInfo> {
    (0..VFIO_PCI_NUM_IRQS)
        .map(|index| {
            let (count, flags) = match index {
                VFIO_PCI_INTX_IRQ_INDEX => (1, VFIO_IRQ_INFO_EVENTFD),
                VFIO_PCI_MSIX_IRQ_INDEX => (
                    u32::from(MSIX_VECTORS),
                    VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE,
                ),
                _ => (0, 0),
            };
            IrqInfo { index, count, flags }
        })
        .collect()
}

/// Serves control commands (see [`crate::control`]) on a unix socket, one reply line each.
fn serve_control(listener: UnixListener, shared: Arc<Shared>) {
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let Ok(reader) = conn.try_clone() else { continue };
        let mut writer = conn;
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            let (reply, effects) = {
                let mut dev = lock(&shared.device);
                let mut mem = lock(&shared.mem);
                let r = crate::control::execute(&mut dev, &mut *mem, &line);
                (r, dev.take_effects())
            };
            shared.settle(effects);
            let text = match reply {
                Ok(r) => format!("ok {r}\n"),
                Err(e) => format!("error {e}\n"),
            };
            if writer.write_all(text.as_bytes()).is_err() {
                break;
            }
        }
    }
}

/// Keeps the wire to the peer model up (see [`crate::wire::run`]), handing its packets to the
/// network thread.
fn serve_wire(end: crate::wire::WireEnd, shared: Arc<Shared>, net: Sender<Net>) {
    let s1 = shared.clone();
    let s2 = shared;
    crate::wire::run(
        end,
        move |w| {
            *lock(&s1.wire) = Some(w);
            lock(&s1.device).firmware.datapath.wire = true;
        },
        move || {
            lock(&s2.wire).take();
            lock(&s2.device).firmware.datapath.wire = false;
        },
        move |p| net.send(Net::Packet(p)).is_ok(),
    );
}

/// Listens on `socket`, serves one client until it disconnects, and returns the server state.
/// With `control`, also serves control commands on that unix socket; with `wire`, links to a
/// peer model.
pub fn serve(
    socket: &Path,
    device: Device,
    control: Option<&Path>,
    wire: Option<crate::wire::WireEnd>,
) -> Result<ModelServer, vfio_user::Error> {
    let server = Server::new(socket, true, irqs(), regions())?;
    info!("listening on {}", socket.display());
    let mut model = ModelServer::new(device);
    if let Some(end) = wire {
        let shared = model.shared().clone();
        let net = model.net();
        let _ = std::thread::Builder::new()
            .name("cx-wire".into())
            .spawn(move || serve_wire(end, shared, net));
    }
    if let Some(path) = control {
        let _ = std::fs::remove_file(path);
        match UnixListener::bind(path) {
            Ok(l) => {
                let shared = model.shared().clone();
                let _ = std::thread::Builder::new()
                    .name("cx-control".into())
                    .spawn(move || serve_control(l, shared));
                info!("control channel on {}", path.display());
            }
            Err(e) => warn!("cannot listen for control on {}: {e}", path.display()),
        }
    }
    server.run(&mut model)?;
    info!("client disconnected");
    model.stop();
    Ok(model)
}
