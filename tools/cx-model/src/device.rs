//! The emulated ConnectX function: BAR0 registers and the command interface behind them.
//!
//! This is the skeleton device: it presents the init segment, lets the driver program the command
//! queue, and answers every command with the firmware's bad-operation status, so a driver fails
//! fast and visibly. Every register access is logged at debug level and every command it does not
//! implement at warn level.

use crate::command::{self, CommandLog, Delivery, Entry, Status, ENTRY_SIZE, OWNER_HW, XPORT_PCI};
use crate::guest_memory::GuestMemory;
use crate::init_segment::{self as iseg, FwVersion};
use crate::opcodes::opcode_name;
use crate::pci_config::ConfigSpace;
use log::{debug, error, warn};
use std::time::{Duration, Instant};

/// What can be chosen about a device instance.
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    /// Firmware version reported in the init segment.
    pub fw: FwVersion,
    /// How long the `initializing` bit stays set after power-on or reset.
    pub init_delay: Duration,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            fw: FwVersion {
                major: 16,
                minor: 35,
                subminor: 2000,
            },
            init_delay: Duration::from_millis(100),
        }
    }
}

/// One emulated ConnectX-5 function.
pub struct Device {
    config: DeviceConfig,
    /// PCI configuration space.
    pub config_space: ConfigSpace,
    cmdq_h: u32,
    cmdq_l: u32,
    reset_at: Instant,
    powered_at: Instant,
    commands: CommandLog,
}

impl Device {
    /// A device fresh from power-on.
    pub fn new(config: DeviceConfig) -> Self {
        let now = Instant::now();
        Self {
            config,
            config_space: ConfigSpace::new(),
            cmdq_h: 0,
            cmdq_l: 0,
            reset_at: now,
            powered_at: now,
            commands: CommandLog::default(),
        }
    }

    /// Function-level reset: firmware re-initializes and forgets the command queue.
    pub fn reset(&mut self) {
        self.cmdq_h = 0;
        self.cmdq_l = 0;
        self.reset_at = Instant::now();
    }

    /// The commands seen so far.
    pub fn commands(&self) -> &CommandLog {
        &self.commands
    }

    /// Whether firmware still reports that it is initializing.
    pub fn initializing(&self) -> bool {
        self.reset_at.elapsed() < self.config.init_delay
    }

    /// Guest address of the command queue the driver programmed.
    pub fn cmdq_addr(&self) -> u64 {
        (u64::from(self.cmdq_h) << 32) | u64::from(self.cmdq_l & !0xfff)
    }

    fn reg32(&self, off: u64) -> u32 {
        let fw = self.config.fw;
        match off {
            iseg::FW_REV => (u32::from(fw.minor) << 16) | u32::from(fw.major),
            iseg::CMDIF_REV_FW_SUB => (u32::from(iseg::CMDIF_REV) << 16) | u32::from(fw.subminor),
            iseg::CMDQ_ADDR_H => self.cmdq_h,
            // NIC interface state [10:8] = 0: full driver interface.
            iseg::CMDQ_ADDR_L_SZ => {
                (self.cmdq_l & !0xfff) | (iseg::LOG_CMDQ_SIZE << 4) | iseg::LOG_CMDQ_STRIDE
            }
            iseg::INITIALIZING => u32::from(self.initializing()) << 31,
            // The health buffer's fw_ver word: all ones would mean the device fell off the bus.
            0x230 => 0,
            // The counter advances every 100 ms of device uptime.
            iseg::HEALTH_COUNTER => (self.powered_at.elapsed().as_millis() / 100) as u32,
            _ => 0,
        }
    }

    /// A read of BAR0 at `off`, of any width; registers are big-endian 32-bit words.
    pub fn bar0_read(&mut self, off: u64, data: &mut [u8]) {
        for (i, d) in data.iter_mut().enumerate() {
            let o = off + i as u64;
            *d = self.reg32(o & !3).to_be_bytes()[(o & 3) as usize];
        }
        if off < iseg::SIZE {
            debug!(
                "bar0 read  {:#06x} {:<16} len {} -> {:02x?}",
                off,
                iseg::register_name(off & !3),
                data.len(),
                data
            );
        } else {
            debug!("bar0 read  {:#x} (UAR area) len {}", off, data.len());
        }
    }

    /// A write to BAR0; a doorbell write makes the device execute commands in guest memory.
    pub fn bar0_write<M: GuestMemory>(&mut self, mem: &mut M, off: u64, data: &[u8]) {
        let Ok(word) = <[u8; 4]>::try_from(data) else {
            warn!(
                "bar0 write {:#x} of {} bytes: only 32-bit register writes are implemented",
                off,
                data.len()
            );
            return;
        };
        let v = u32::from_be_bytes(word);
        debug!(
            "bar0 write {:#06x} {:<16} <- {:#010x}",
            off,
            iseg::register_name(off),
            v
        );
        match off {
            iseg::CMDQ_ADDR_H => self.cmdq_h = v,
            iseg::CMDQ_ADDR_L_SZ => self.cmdq_l = v & !0xfff,
            iseg::CMD_DBELL => self.ring_command_doorbell(mem, v),
            _ if off < iseg::SIZE => warn!("bar0 write to unimplemented register {:#x} <- {:#x}", off, v),
            _ => warn!(
                "bar0 write to UAR area {:#x} <- {:#x}: UARs are not implemented",
                off, v
            ),
        }
    }

    fn ring_command_doorbell<M: GuestMemory>(&mut self, mem: &mut M, mask: u32) {
        let slots = 1u32 << iseg::LOG_CMDQ_SIZE;
        for slot in 0..32 {
            if mask & (1 << slot) == 0 {
                continue;
            }
            if slot >= slots {
                warn!("command doorbell for slot {slot}, beyond the {slots} the queue has");
                continue;
            }
            let addr = self.cmdq_addr() + (u64::from(slot) << iseg::LOG_CMDQ_STRIDE);
            self.execute_slot(mem, slot, addr);
        }
    }

    fn execute_slot<M: GuestMemory>(&mut self, mem: &mut M, slot: u32, addr: u64) {
        let mut raw = [0u8; ENTRY_SIZE];
        if let Err(e) = mem.read(addr, &mut raw) {
            error!("command slot {slot}: cannot read the entry: {e}");
            return;
        }
        let entry = Entry::parse(&raw);
        if entry.status_own & OWNER_HW == 0 {
            warn!("command slot {slot}: doorbell rung for an entry software still owns");
        }
        let result = if entry.kind != XPORT_PCI {
            warn!("command slot {slot}: bad entry type {:#x}", entry.kind);
            command::complete(mem, addr, Status::Ok, 0, Delivery::BadDescriptor)
        } else {
            let op = entry.opcode();
            let name = opcode_name(op).unwrap_or("UNKNOWN");
            warn!(
                "command {name}({op:#x}) op_mod {:#x}: not implemented, answering bad operation",
                entry.op_mod()
            );
            self.commands.record(op, false);
            command::complete(
                mem,
                addr,
                Status::BadOperation,
                command::not_implemented_syndrome(op),
                Delivery::Ok,
            )
        };
        if let Err(e) = result {
            error!("command slot {slot}: cannot write the completion: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_memory::FakeMemory;

    const RAM: u64 = 0x10_0000;

    fn be32(d: &mut Device, off: u64) -> u32 {
        let mut b = [0u8; 4];
        d.bar0_read(off, &mut b);
        u32::from_be_bytes(b)
    }

    fn device() -> Device {
        Device::new(DeviceConfig {
            init_delay: Duration::ZERO,
            ..Default::default()
        })
    }

    #[test]
    fn init_segment_identity() {
        let mut d = device();
        assert_eq!(be32(&mut d, iseg::FW_REV), (35 << 16) | 16);
        assert_eq!(be32(&mut d, iseg::CMDIF_REV_FW_SUB), (5 << 16) | 2000);
        assert_eq!(be32(&mut d, iseg::CMDQ_ADDR_L_SZ) & 0xff, (5 << 4) | 6);
        assert_eq!(be32(&mut d, iseg::INITIALIZING) >> 31, 0);
    }

    #[test]
    fn initializing_bit_clears_after_the_delay() {
        let mut d = Device::new(DeviceConfig {
            init_delay: Duration::from_millis(50),
            ..Default::default()
        });
        assert_eq!(be32(&mut d, iseg::INITIALIZING) >> 31, 1);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(be32(&mut d, iseg::INITIALIZING) >> 31, 0);
        d.reset();
        assert_eq!(
            be32(&mut d, iseg::INITIALIZING) >> 31,
            1,
            "reset re-enters initialization"
        );
    }

    #[test]
    fn sub_word_reads_see_big_endian_bytes() {
        let mut d = device();
        let mut b = [0u8; 2];
        d.bar0_read(iseg::CMDIF_REV_FW_SUB, &mut b);
        assert_eq!(u16::from_be_bytes(b), 5);
    }

    #[test]
    fn every_command_gets_bad_operation_with_syndrome() {
        let mut d = device();
        let mut m = FakeMemory::new(RAM, 0x10000);
        d.bar0_write(&mut m, iseg::CMDQ_ADDR_H, &0u32.to_be_bytes());
        d.bar0_write(&mut m, iseg::CMDQ_ADDR_L_SZ, &(RAM as u32).to_be_bytes());
        assert_eq!(d.cmdq_addr(), RAM);
        for (slot, op) in [(0u64, 0x104u16), (3, 0x10a)] {
            let mut e = [0u8; ENTRY_SIZE];
            e[0] = XPORT_PCI;
            e[0x10..0x12].copy_from_slice(&op.to_be_bytes());
            e[0x3f] = OWNER_HW;
            m.write(RAM + slot * 64, &e).unwrap();
        }
        d.bar0_write(&mut m, iseg::CMD_DBELL, &((1u32 << 0) | (1 << 3)).to_be_bytes());
        for (slot, op) in [(0u64, 0x104u32), (3, 0x10a)] {
            let mut e = [0u8; ENTRY_SIZE];
            m.read(RAM + slot * 64, &mut e).unwrap();
            assert_eq!(e[0x3f], 0, "slot {slot} handed back with delivery ok");
            assert_eq!(e[0x20], Status::BadOperation as u8);
            assert_eq!(
                u32::from_be_bytes(e[0x24..0x28].try_into().unwrap()),
                0x0cf0_0000 | op
            );
        }
        assert_eq!(d.commands().count(0x104), 1);
        assert_eq!(d.commands().count(0x10a), 1);
    }

    #[test]
    fn bad_entry_type_gets_a_delivery_error() {
        let mut d = device();
        let mut m = FakeMemory::new(RAM, 0x10000);
        d.bar0_write(&mut m, iseg::CMDQ_ADDR_L_SZ, &(RAM as u32).to_be_bytes());
        let mut e = [0u8; ENTRY_SIZE];
        e[0] = 3;
        e[0x3f] = OWNER_HW;
        m.write(RAM, &e).unwrap();
        d.bar0_write(&mut m, iseg::CMD_DBELL, &1u32.to_be_bytes());
        m.read(RAM, &mut e).unwrap();
        assert_eq!(e[0x3f] >> 1, Delivery::BadDescriptor as u8);
        assert_eq!(e[0x3f] & OWNER_HW, 0);
        assert_eq!(d.commands().total(), 0);
    }

    #[test]
    fn doorbell_with_queue_outside_guest_memory_does_not_panic() {
        let mut d = device();
        let mut m = FakeMemory::new(RAM, 0x1000);
        d.bar0_write(&mut m, iseg::CMDQ_ADDR_H, &1u32.to_be_bytes());
        d.bar0_write(&mut m, iseg::CMD_DBELL, &u32::MAX.to_be_bytes());
        assert_eq!(d.commands().total(), 0);
    }

    #[test]
    fn health_counter_moves() {
        let mut d = device();
        let a = be32(&mut d, iseg::HEALTH_COUNTER);
        std::thread::sleep(Duration::from_millis(120));
        assert!(be32(&mut d, iseg::HEALTH_COUNTER) > a);
    }
}
