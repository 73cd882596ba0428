//! The vfio-user side: QEMU's `vfio-user-pci` client talks to [`ModelServer`], which forwards
//! config-space and BAR accesses to the [`Device`] and keeps the guest-memory mappings and the
//! MSI-X eventfds.

use crate::device::Device;
use crate::guest_memory::MappedMemory;
use crate::pci_config::{BAR0_SIZE, MSIX_VECTORS};
use log::{debug, info, warn};
use std::fs::File;
use std::io::Write;
use std::mem::size_of;
use std::path::Path;
use vfio_bindings::bindings::vfio::*;
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, Server, ServerBackend, ServerRegion};

/// The device plus what the vfio-user connection gave it.
pub struct ModelServer {
    /// The emulated function.
    pub device: Device,
    mem: MappedMemory,
    msix: Vec<Option<File>>,
}

impl ModelServer {
    /// Wraps `device` for serving.
    pub fn new(device: Device) -> Self {
        Self {
            device,
            mem: MappedMemory::default(),
            msix: Vec::new(),
        }
    }

    /// Raises MSI-X `vector` if the guest enabled it.
    pub fn raise_msix(&self, vector: usize) {
        match self.msix.get(vector) {
            Some(Some(f)) => {
                if let Err(e) = (&*f).write_all(&1u64.to_le_bytes()) {
                    warn!("MSI-X vector {vector}: eventfd write failed: {e}");
                }
            }
            _ => debug!("MSI-X vector {vector} not enabled by the guest"),
        }
    }
}

impl ServerBackend for ModelServer {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), std::io::Error> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self.device.config_space.read(offset, data),
            VFIO_PCI_BAR0_REGION_INDEX => self.device.bar0_read(offset, data),
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
                self.device.config_space.write(offset, data);
            }
            VFIO_PCI_BAR0_REGION_INDEX => self.device.bar0_write(&mut self.mem, offset, data),
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
            Some(f) => self.mem.map(address, size, &f, offset),
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
        self.mem.unmap(address);
        Ok(())
    }

    fn reset(&mut self) -> Result<(), std::io::Error> {
        info!("device reset");
        self.device.reset();
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
        let start = start as usize;
        if flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 {
            let need = start + count as usize;
            if self.msix.len() < need {
                self.msix.resize_with(need, || None);
            }
            if fds.is_empty() {
                // No fds with DATA_EVENTFD: disable the range.
                for v in &mut self.msix[start..need] {
                    *v = None;
                }
            }
            for (i, f) in fds.into_iter().enumerate() {
                self.msix[start + i] = Some(f);
            }
        } else if flags & VFIO_IRQ_SET_DATA_NONE != 0
            && flags & VFIO_IRQ_SET_ACTION_TRIGGER != 0
            && count == 0
        {
            self.msix.clear();
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

/// Listens on `socket`, serves one client until it disconnects, and returns the server state.
pub fn serve(socket: &Path, device: Device) -> Result<ModelServer, vfio_user::Error> {
    let server = Server::new(socket, true, irqs(), regions())?;
    info!("listening on {}", socket.display());
    let mut model = ModelServer::new(device);
    server.run(&mut model)?;
    info!("client disconnected");
    Ok(model)
}
