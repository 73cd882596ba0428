//! A minimal mlx5 driver for host tests: builds command queue entries and mailbox chains in a
//! [`FakeMemory`], rings the doorbell and reads the results back, the way the kernel driver does.

use crate::command::{Entry, ENTRY_SIZE, OWNER_HW, XPORT_PCI};
use crate::device::{Device, DeviceConfig};
use crate::guest_memory::{FakeMemory, GuestMemory};
use crate::ifc::{self, header};
use crate::init_segment as iseg;
use crate::mailbox::{DATA_SIZE, INLINE};
use std::time::Duration;

/// Guest RAM base and size for the fake memory.
pub const RAM: u64 = 0x100_0000;
const RAM_SIZE: usize = 16 << 20;
/// Command queue page.
pub const CMDQ: u64 = RAM;
/// Mailbox blocks are carved from here, 1 KiB each.
const MAILBOXES: u64 = RAM + 0x10_0000;
/// Free memory for pages and queues handed to the device.
pub const HEAP: u64 = RAM + 0x20_0000;

/// Status and syndrome of a failed command, or a delivery error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Firmware status and syndrome.
    Status(u8, u32),
    /// Delivery status from `status_own`.
    Delivery(u8),
    /// The entry was not handed back.
    NotCompleted,
}

/// The fake driver.
pub struct TestDriver {
    /// The device under test.
    pub dev: Device,
    /// Guest memory.
    pub mem: FakeMemory,
    token: u8,
    heap_next: u64,
    /// Whether entries get a correct signature (tests of bad signatures turn it off).
    pub sign: bool,
}

impl TestDriver {
    /// A device with `config` (init delay forced to zero) and its command queue programmed.
    pub fn new(mut config: DeviceConfig) -> Self {
        config.init_delay = Duration::ZERO;
        let mut t = Self {
            dev: Device::new(config),
            mem: FakeMemory::new(RAM, RAM_SIZE),
            token: 0,
            heap_next: HEAP,
            sign: true,
        };
        t.dev.bar0_write(
            &mut t.mem,
            iseg::CMDQ_ADDR_H,
            &((CMDQ >> 32) as u32).to_be_bytes(),
        );
        t.dev
            .bar0_write(&mut t.mem, iseg::CMDQ_ADDR_L_SZ, &(CMDQ as u32).to_be_bytes());
        t
    }

    /// Allocates `pages` 4 KiB pages of zeroed guest memory.
    pub fn alloc_pages(&mut self, pages: usize) -> u64 {
        let a = self.heap_next;
        self.heap_next += pages as u64 * 4096;
        a
    }

    fn build_chain(&mut self, first_block: u64, len: usize, token: u8, data: &[u8]) -> u64 {
        let n = len.saturating_sub(INLINE).div_ceil(DATA_SIZE);
        for i in 0..n {
            let addr = first_block + i as u64 * 1024;
            let next = if i + 1 < n { addr + 1024 } else { 0 };
            let mut block = [0u8; 576];
            let from = INLINE + i * DATA_SIZE;
            if from < data.len() {
                let to = (from + DATA_SIZE).min(data.len());
                block[..to - from].copy_from_slice(&data[from..to]);
            }
            block[0x230..0x238].copy_from_slice(&next.to_be_bytes());
            block[0x238..0x23c].copy_from_slice(&(i as u32).to_be_bytes());
            block[0x23d] = token;
            self.mem.write(addr, &block).unwrap();
        }
        if n == 0 {
            0
        } else {
            first_block
        }
    }

    /// Submits `input` in slot 0 with room for `outlen` output bytes and returns the output.
    pub fn exec(&mut self, input: &[u8], outlen: usize) -> Result<Vec<u8>, Failure> {
        self.exec_slot(0, input, outlen)
    }

    /// Submits `input` in `slot`.
    pub fn exec_slot(&mut self, slot: u32, input: &[u8], outlen: usize) -> Result<Vec<u8>, Failure> {
        self.token = self.token.wrapping_add(1).max(1);
        let token = self.token;
        let in_ptr = self.build_chain(MAILBOXES, input.len(), token, input);
        let out_ptr = self.build_chain(MAILBOXES + 0x8_0000, outlen, token, &[]);
        let mut e = [0u8; ENTRY_SIZE];
        e[0] = XPORT_PCI;
        e[4..8].copy_from_slice(&(input.len() as u32).to_be_bytes());
        e[8..16].copy_from_slice(&in_ptr.to_be_bytes());
        let n = input.len().min(INLINE);
        e[0x10..0x10 + n].copy_from_slice(&input[..n]);
        e[0x30..0x38].copy_from_slice(&out_ptr.to_be_bytes());
        e[0x38..0x3c].copy_from_slice(&(outlen as u32).to_be_bytes());
        e[0x3c] = token;
        e[0x3f] = OWNER_HW;
        if self.sign {
            e[0x3d] = !e.iter().fold(0u8, |a, b| a ^ b);
        }
        let addr = CMDQ + u64::from(slot) * 64;
        self.mem.write(addr, &e).unwrap();
        self.dev
            .bar0_write(&mut self.mem, iseg::CMD_DBELL, &(1u32 << slot).to_be_bytes());
        self.mem.read(addr, &mut e).unwrap();
        let entry = Entry::parse(&e);
        if entry.status_own & OWNER_HW != 0 {
            return Err(Failure::NotCompleted);
        }
        if entry.status_own >> 1 != 0 {
            return Err(Failure::Delivery(entry.status_own >> 1));
        }
        let mut out = vec![0u8; outlen.max(INLINE)];
        out[..INLINE].copy_from_slice(&e[0x20..0x30]);
        let mut pos = INLINE;
        let mut block = out_ptr;
        while pos < outlen {
            let take = (outlen - pos).min(DATA_SIZE);
            self.mem.read(block, &mut out[pos..pos + take]).unwrap();
            let mut next = [0u8; 8];
            self.mem.read(block + 0x230, &mut next).unwrap();
            block = u64::from_be_bytes(next);
            pos += take;
        }
        let status = ifc::get(&out, header::STATUS) as u8;
        if status != 0 {
            return Err(Failure::Status(status, ifc::get(&out, header::SYNDROME) as u32));
        }
        Ok(out)
    }
}

/// An input of `len` bytes with `opcode` and `op_mod` in the header.
pub fn input(opcode: u16, op_mod: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(INLINE)];
    ifc::set(&mut b, header::OPCODE, u64::from(opcode));
    ifc::set(&mut b, header::OP_MOD, u64::from(op_mod));
    b
}
