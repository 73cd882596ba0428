//! The emulated ConnectX function: BAR0 registers and the command interface behind them.
//!
//! The device presents the init segment, lets the driver program the command queue, and runs each
//! command the driver submits through the [`Firmware`]: input gathered from the entry and its
//! mailboxes, output scattered back, ownership returned, and, once a command EQ exists, a
//! completion event posted. Every register access is logged at debug level.

use crate::command::{self, CommandLog, Delivery, Entry, ENTRY_SIZE, OWNER_HW, XPORT_PCI};
use crate::firmware::{eq::event, Execution, Firmware, FirmwareConfig};
use crate::guest_memory::GuestMemory;
use crate::init_segment as iseg;
use crate::mailbox::{self, MailboxError};
use crate::pci_config::ConfigSpace;
use log::{debug, error, warn};
use std::time::{Duration, Instant};

/// What can be chosen about a device instance.
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    /// Firmware identity and resources.
    pub firmware: FirmwareConfig,
    /// How long the `initializing` bit stays set after power-on or reset.
    pub init_delay: Duration,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            firmware: FirmwareConfig::default(),
            init_delay: Duration::from_millis(100),
        }
    }
}

/// One emulated ConnectX-5 function.
pub struct Device {
    init_delay: Duration,
    /// PCI configuration space.
    pub config_space: ConfigSpace,
    /// The firmware behind the command interface.
    pub firmware: Firmware,
    cmdq_h: u32,
    cmdq_l: u32,
    reset_at: Instant,
    powered_at: Instant,
    /// Slots whose command was made to hang (never handed back).
    hung_slots: u32,
    /// Commands executed whose completion is held back (a `delay` fault), oldest first.
    delayed: Vec<Delayed>,
    /// The most commands the device owned at once (hung, delayed and the one executing).
    max_in_flight: u32,
    /// Health buffer syndrome (0: healthy).
    health_synd: u8,
    /// Health buffer "recovery flow required" bit.
    health_rfr: bool,
    /// The NIC interface state the init segment reports (0: full driver interface).
    nic_ifc: u8,
    /// Surprise-removed: the function no longer answers.
    removed: bool,
}

impl Device {
    /// A device fresh from power-on.
    pub fn new(config: DeviceConfig) -> Self {
        let now = Instant::now();
        Self {
            init_delay: config.init_delay,
            config_space: ConfigSpace::new(),
            firmware: Firmware::new(config.firmware),
            cmdq_h: 0,
            cmdq_l: 0,
            reset_at: now,
            powered_at: now,
            hung_slots: 0,
            delayed: Vec::new(),
            max_in_flight: 0,
            health_synd: 0,
            health_rfr: false,
            nic_ifc: 0,
            removed: false,
        }
    }

    /// Sets the health buffer's syndrome; `fatal` also sets the recovery-required bit and
    /// halts the device (no more DMA for work requests, completions or events; see
    /// `Firmware::halted`).
    pub fn set_health(&mut self, synd: u8, fatal: bool) {
        self.health_synd = synd;
        self.health_rfr = fatal && synd != 0;
        self.update_halt();
    }

    /// Sets the NIC interface state the init segment reports (`cmdq_addr_l_sz` bits 10:8; 0:
    /// full driver interface, 1: disabled, 7: software reset). A state other than 0 halts the
    /// device as a fatal error does.
    pub fn set_nic_state(&mut self, state: u8) {
        self.nic_ifc = state & 7;
        self.update_halt();
    }

    /// The device is halted while a fatal error or a NIC interface state other than "full
    /// driver" stands.
    fn update_halt(&mut self) {
        self.firmware.halted = self.health_rfr || self.nic_ifc != 0;
    }

    /// Surprise removal: from now on reads return all ones and writes are dropped, as for a
    /// function that fell off the bus.
    pub fn surprise_remove(&mut self) {
        self.removed = true;
    }

    /// Whether the function was surprise-removed.
    pub fn removed(&self) -> bool {
        self.removed
    }

    /// Function-level reset: firmware re-initializes and forgets the command queue.
    pub fn reset(&mut self) {
        self.cmdq_h = 0;
        self.cmdq_l = 0;
        self.hung_slots = 0;
        self.delayed.clear();
        self.reset_at = Instant::now();
        self.firmware.reset();
    }

    /// The commands seen so far.
    pub fn commands(&self) -> &CommandLog {
        &self.firmware.log
    }

    /// What the last operations produced for the outside: MSI-X vectors to raise, and packets
    /// for the wire; drains both.
    pub fn take_effects(&mut self) -> (Vec<u16>, Vec<crate::firmware::datapath::Packet>) {
        (self.take_irqs(), self.firmware.datapath.take_outbound())
    }

    /// MSI-X vectors to raise, in order; drains the list.
    pub fn take_irqs(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.firmware.irqs)
    }

    /// Whether firmware still reports that it is initializing.
    pub fn initializing(&self) -> bool {
        self.reset_at.elapsed() < self.init_delay
    }

    /// Guest address of the command queue the driver programmed.
    pub fn cmdq_addr(&self) -> u64 {
        (u64::from(self.cmdq_h) << 32) | u64::from(self.cmdq_l & !0xfff)
    }

    fn reg32(&self, off: u64) -> u32 {
        let fw = self.firmware.config.fw;
        match off {
            iseg::FW_REV => (u32::from(fw.minor) << 16) | u32::from(fw.major),
            iseg::CMDIF_REV_FW_SUB => (u32::from(iseg::CMDIF_REV) << 16) | u32::from(fw.subminor),
            iseg::CMDQ_ADDR_H => self.cmdq_h,
            // NIC interface state in [10:8] (0: full driver interface).
            iseg::CMDQ_ADDR_L_SZ => {
                (self.cmdq_l & !0xfff)
                    | (u32::from(self.nic_ifc) << 8)
                    | (iseg::LOG_CMDQ_SIZE << 4)
                    | iseg::LOG_CMDQ_STRIDE
            }
            iseg::INITIALIZING => u32::from(self.initializing()) << 31,
            // Health buffer: fw_ver (all ones would mean the device fell off the bus), then
            // rfr_severity, then irisc_index, synd and ext_synd.
            0x230 => 0,
            0x238 => u32::from(self.health_rfr) << 31,
            0x23c => u32::from(self.health_synd) << 16,
            // The counter advances every 100 ms of device uptime.
            iseg::HEALTH_COUNTER => (self.powered_at.elapsed().as_millis() / 100) as u32,
            _ => 0,
        }
    }

    /// A read of BAR0 at `off`, of any width; registers are big-endian 32-bit words.
    pub fn bar0_read(&mut self, off: u64, data: &mut [u8]) {
        if self.removed {
            data.fill(0xff);
            return;
        }
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

    /// A write to BAR0: command queue registers, the command doorbell, or a UAR doorbell.
    pub fn bar0_write(&mut self, mem: &mut dyn GuestMemory, off: u64, data: &[u8]) {
        if self.removed {
            debug!("bar0 write {off:#x} after surprise removal: dropped");
            return;
        }
        let v = match data.len() {
            4 => u32::from_be_bytes([data[0], data[1], data[2], data[3]]),
            // 64-bit doorbells: the low word at the higher address carries what the model uses.
            8 => u32::from_be_bytes([data[4], data[5], data[6], data[7]]),
            n => {
                warn!("bar0 write {off:#x} of {n} bytes: only 32- and 64-bit writes are implemented");
                return;
            }
        };
        debug!(
            "bar0 write {:#06x} {:<16} <- {:#010x} (len {})",
            off,
            iseg::register_name(off),
            v,
            data.len()
        );
        match off {
            iseg::CMDQ_ADDR_H => self.cmdq_h = v,
            iseg::CMDQ_ADDR_L_SZ => self.cmdq_l = v & !0xfff,
            iseg::CMD_DBELL => self.ring_command_doorbell(mem, v),
            _ if off < crate::firmware::resources::FIRST_UAR as u64 * 4096 => {
                warn!("bar0 write to unimplemented register {off:#x} <- {v:#x}")
            }
            _ => self
                .firmware
                .uar_write(mem, (off / 4096) as u32, off % 4096, data),
        }
    }

    fn ring_command_doorbell(&mut self, mem: &mut dyn GuestMemory, mask: u32) {
        let slots = 1u32 << iseg::LOG_CMDQ_SIZE;
        let mut completed = 0u32;
        for slot in 0..32 {
            if mask & (1 << slot) == 0 {
                continue;
            }
            if slot >= slots {
                warn!("command doorbell for slot {slot}, beyond the {slots} the queue has");
                continue;
            }
            let addr = self.cmdq_addr() + (u64::from(slot) << iseg::LOG_CMDQ_STRIDE);
            // Events go to the command EQ only if it existed before this command ran: the command
            // that creates it completes by polling.
            let events = self.firmware.eqs.for_event(event::CMD).is_some();
            if self.execute_slot(mem, slot, addr) && events {
                completed |= 1 << slot;
            }
        }
        if completed != 0 && self.firmware.eqs.for_event(event::CMD).is_some() {
            self.firmware
                .post_event(mem, event::CMD, 0, &completed.to_be_bytes());
        }
    }

    /// Runs the command in `slot`; returns whether it completed (handed back to the driver).
    fn execute_slot(&mut self, mem: &mut dyn GuestMemory, slot: u32, addr: u64) -> bool {
        let mut raw = [0u8; ENTRY_SIZE];
        if let Err(e) = mem.read(addr, &mut raw) {
            error!("command slot {slot}: cannot read the entry: {e}");
            return false;
        }
        let entry = Entry::parse(&raw);
        let in_flight = 1 + self.hung_slots.count_ones() + self.delayed.len() as u32;
        self.max_in_flight = self.max_in_flight.max(in_flight);
        if entry.status_own & OWNER_HW == 0 {
            warn!("command slot {slot}: doorbell rung for an entry software still owns");
        }
        if !command::signature_ok(&raw) {
            warn!(
                "command slot {slot} (opcode {:#x}): bad entry signature",
                entry.opcode()
            );
            return self.finish(mem, slot, addr, &[], Delivery::SignatureError);
        }
        if entry.kind != XPORT_PCI {
            warn!("command slot {slot}: bad entry type {:#x}", entry.kind);
            return self.finish(mem, slot, addr, &[], Delivery::BadDescriptor);
        }
        let input = match mailbox::read_input(mem, &entry) {
            Ok(i) => i,
            Err(e) => {
                warn!(
                    "command slot {slot} (opcode {:#x}): input mailboxes: {e:?}",
                    entry.opcode()
                );
                return self.finish(mem, slot, addr, &[], delivery_for(e));
            }
        };
        let output = match self.firmware.execute(mem, &input) {
            Execution::Complete(out) => out,
            Execution::Hang => {
                self.hung_slots |= 1 << slot;
                return false;
            }
            Execution::Later(output, after) => {
                self.delayed.push(Delayed {
                    due: Instant::now() + after,
                    slot,
                    addr,
                    entry,
                    output,
                });
                return false;
            }
        };
        if let Err(e) = mailbox::write_output(mem, &entry, &output) {
            warn!(
                "command slot {slot} (opcode {:#x}): output mailboxes: {e:?}",
                entry.opcode()
            );
            return self.finish(mem, slot, addr, &[], Delivery::OutputLengthError);
        }
        self.finish(mem, slot, addr, &output, Delivery::Ok)
    }

    /// When the next held-back completion is due.
    pub fn next_command_deadline(&self) -> Option<Instant> {
        self.delayed.iter().map(|d| d.due).min()
    }

    /// Hands back the held-back commands whose time has come, with a command event when the
    /// command EQ exists.
    pub fn complete_due(&mut self, mem: &mut dyn GuestMemory, now: Instant) {
        if self.removed {
            return;
        }
        let mut completed = 0u32;
        let mut i = 0;
        while i < self.delayed.len() {
            if self.delayed[i].due > now {
                i += 1;
                continue;
            }
            let d = self.delayed.remove(i);
            let done = match mailbox::write_output(mem, &d.entry, &d.output) {
                Ok(()) => self.finish(mem, d.slot, d.addr, &d.output, Delivery::Ok),
                Err(e) => {
                    warn!("command slot {}: output mailboxes: {e:?}", d.slot);
                    self.finish(mem, d.slot, d.addr, &[], Delivery::OutputLengthError)
                }
            };
            if done {
                completed |= 1 << d.slot;
            }
        }
        if completed != 0 && self.firmware.eqs.for_event(event::CMD).is_some() {
            self.firmware
                .post_event(mem, event::CMD, 0, &completed.to_be_bytes());
        }
    }

    /// Hands back every held-back command now (the `release` control command), whatever its
    /// delay; returns how many.
    pub fn release_delayed(&mut self, mem: &mut dyn GuestMemory) -> usize {
        let now = Instant::now();
        let n = self.delayed.len();
        for d in &mut self.delayed {
            d.due = now;
        }
        self.complete_due(mem, now);
        n
    }

    /// The most commands the device owned at once.
    pub fn max_in_flight(&self) -> u32 {
        self.max_in_flight
    }

    fn finish(
        &mut self,
        mem: &mut dyn GuestMemory,
        slot: u32,
        addr: u64,
        output: &[u8],
        delivery: Delivery,
    ) -> bool {
        let mut inline = [0u8; mailbox::INLINE];
        let n = output.len().min(mailbox::INLINE);
        inline[..n].copy_from_slice(&output[..n]);
        match command::complete_raw(mem, addr, &inline, delivery) {
            Ok(()) => true,
            Err(e) => {
                error!("command slot {slot}: cannot write the completion: {e}");
                false
            }
        }
    }
}

fn delivery_for(e: MailboxError) -> Delivery {
    match e {
        MailboxError::Fault(_) => Delivery::InputPointerError,
        MailboxError::ChainTooShort => Delivery::InputLengthError,
        MailboxError::BadBlockNumber => Delivery::BadBlockNumber,
        MailboxError::BadToken => Delivery::TokenError,
    }
}

/// A command whose completion is held back.
struct Delayed {
    due: Instant,
    slot: u32,
    addr: u64,
    entry: Entry,
    output: Vec<u8>,
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
    fn bad_entry_type_gets_a_delivery_error() {
        let mut d = device();
        let mut m = FakeMemory::new(RAM, 0x10000);
        d.bar0_write(&mut m, iseg::CMDQ_ADDR_L_SZ, &(RAM as u32).to_be_bytes());
        let mut e = [0u8; ENTRY_SIZE];
        e[0] = 3;
        e[0x3f] = OWNER_HW;
        e[0x3d] = !e.iter().fold(0u8, |a, b| a ^ b);
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
