//! cx-model: an emulated Mellanox ConnectX-5 function served to QEMU over vfio-user.
//!
//! See `docs/cx-model.md` in the repository for what it implements and how it is tested.

pub mod command;
pub mod control;
pub mod device;
pub mod firmware;
pub mod guest_memory;
pub mod ifc;
pub mod init_segment;
pub mod mailbox;
pub mod opcodes;
pub mod pci_config;
pub mod server;
#[cfg(test)]
pub mod test_driver;
pub mod wire;
