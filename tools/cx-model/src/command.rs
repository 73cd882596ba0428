//! The firmware command interface: command queue entries, the status the device answers with, and
//! the per-opcode record of what a driver asked for.

use crate::guest_memory::{DmaFault, GuestMemory};
use crate::opcodes::opcode_name;
use std::collections::BTreeMap;

/// Size of a command queue entry (`mlx5_cmd_layout`).
pub const ENTRY_SIZE: usize = 64;
/// `type` of an entry the driver submits over PCI.
pub const XPORT_PCI: u8 = 7;
/// Owner bit in `status_own`: set while hardware owns the entry.
pub const OWNER_HW: u8 = 1;

/// Command status values the firmware writes at the start of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Success.
    Ok = 0x0,
    /// Internal error.
    InternalError = 0x1,
    /// The opcode is not supported.
    BadOperation = 0x2,
    /// A parameter is invalid.
    BadParameter = 0x3,
    /// The command is not allowed in the current system state.
    BadSystemState = 0x4,
    /// A resource (object number) is invalid.
    BadResource = 0x5,
    /// The resource is busy.
    ResourceBusy = 0x6,
    /// Not ready; try again.
    NotReady = 0x7,
    /// A limit was exceeded.
    LimitsExceeded = 0x8,
    /// The resource is in the wrong state.
    BadResourceState = 0x9,
    /// An index is out of range.
    IndexError = 0xa,
    /// Out of resources.
    NoResources = 0xf,
    /// The QP is in the wrong state.
    BadQpState = 0x10,
    /// Bad packet.
    BadPacket = 0x30,
    /// Too many outstanding CQEs for the new CQ size.
    BadSizeOutstandingCqes = 0x40,
    /// Input length is wrong.
    BadInputLength = 0x50,
    /// Output length is wrong.
    BadOutputLength = 0x51,
}

impl Status {
    /// The status with this value, if the model knows it.
    pub fn from_u8(v: u8) -> Option<Self> {
        use Status::*;
        [
            Ok,
            InternalError,
            BadOperation,
            BadParameter,
            BadSystemState,
            BadResource,
            ResourceBusy,
            NotReady,
            LimitsExceeded,
            BadResourceState,
            IndexError,
            NoResources,
            BadQpState,
            BadPacket,
            BadSizeOutstandingCqes,
            BadInputLength,
            BadOutputLength,
        ]
        .into_iter()
        .find(|s| *s as u8 == v)
    }
}

/// Delivery status (bits 7:1 of `status_own`) for entries the device could not even parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Delivery {
    /// The entry was delivered.
    Ok = 0x0,
    /// The entry's signature does not check.
    SignatureError = 0x1,
    /// A mailbox block carried the wrong token.
    TokenError = 0x2,
    /// A mailbox block carried the wrong block number.
    BadBlockNumber = 0x3,
    /// A mailbox pointer is not aligned (or not in guest memory).
    InputPointerError = 0x5,
    /// Input length larger than the mailbox chain carries.
    InputLengthError = 0x7,
    /// Output length larger than the mailbox chain carries.
    OutputLengthError = 0x8,
    /// Bad `type` field or descriptor.
    BadDescriptor = 0x10,
}

/// Syndrome reported with [`Status::BadOperation`] for a command the model does not implement:
/// the opcode in the low 16 bits, so the driver's log names what is missing.
pub fn not_implemented_syndrome(opcode: u16) -> u32 {
    0x0cf0_0000 | u32::from(opcode)
}

/// The fields of a command queue entry the device uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Transport type, [`XPORT_PCI`] for a valid entry.
    pub kind: u8,
    /// Input length in bytes.
    pub inlen: u32,
    /// First input mailbox block, 0 if the input fits inline.
    pub in_ptr: u64,
    /// First 16 bytes of the input.
    pub input: [u8; 16],
    /// First output mailbox block.
    pub out_ptr: u64,
    /// Output length in bytes.
    pub outlen: u32,
    /// Token the driver chose.
    pub token: u8,
    /// `status_own` as the driver left it.
    pub status_own: u8,
}

/// Whether the entry's signature checks: the driver sets `sig` so that the XOR of all 64 bytes
/// (owner bit set) is 0xff.
pub fn signature_ok(raw: &[u8; ENTRY_SIZE]) -> bool {
    raw.iter().fold(0u8, |a, b| a ^ b) == 0xff
}

impl Entry {
    /// Decodes the big-endian entry layout.
    pub fn parse(b: &[u8; ENTRY_SIZE]) -> Self {
        let be32 = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let be64 = |o: usize| (u64::from(be32(o)) << 32) | u64::from(be32(o + 4));
        let mut input = [0u8; 16];
        input.copy_from_slice(&b[0x10..0x20]);
        Self {
            kind: b[0],
            inlen: be32(0x04),
            in_ptr: be64(0x08),
            input,
            out_ptr: be64(0x30),
            outlen: be32(0x38),
            token: b[0x3c],
            status_own: b[0x3f],
        }
    }

    /// Command opcode (first 16 bits of the input).
    pub fn opcode(&self) -> u16 {
        u16::from_be_bytes([self.input[0], self.input[1]])
    }

    /// Opcode modifier (bits 16..31 of the second input word).
    pub fn op_mod(&self) -> u16 {
        u16::from_be_bytes([self.input[6], self.input[7]])
    }
}

/// Writes the inline output (status and syndrome) of entry `slot_addr` and hands the entry back to
/// the driver with `delivery` in `status_own`.
pub fn complete<M: GuestMemory + ?Sized>(
    mem: &mut M,
    slot_addr: u64,
    status: Status,
    syndrome: u32,
    delivery: Delivery,
) -> Result<(), DmaFault> {
    let mut out = [0u8; 16];
    out[0] = status as u8;
    out[4..8].copy_from_slice(&syndrome.to_be_bytes());
    complete_raw(mem, slot_addr, &out, delivery)
}

/// Writes the 16 inline output bytes of the entry at `slot_addr`, then hands it back to the
/// driver with `delivery` in `status_own`.
pub fn complete_raw<M: GuestMemory + ?Sized>(
    mem: &mut M,
    slot_addr: u64,
    inline: &[u8; 16],
    delivery: Delivery,
) -> Result<(), DmaFault> {
    mem.write(slot_addr + 0x20, inline)?;
    // The output must be visible before ownership returns: the driver polls `status_own`.
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    mem.write(slot_addr + 0x3f, &[(delivery as u8) << 1])
}

/// Count of commands seen, per opcode, and how each was answered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommandLog {
    counts: BTreeMap<(u16, bool), u64>,
    /// Every command in the order it arrived: opcode and op_mod.
    sequence: Vec<(u16, u16)>,
}

impl CommandLog {
    /// Records one command and whether the model implemented it.
    pub fn record(&mut self, opcode: u16, op_mod: u16, implemented: bool) {
        *self.counts.entry((opcode, implemented)).or_default() += 1;
        self.sequence.push((opcode, op_mod));
    }

    /// The commands in arrival order, one per line (`NAME op_mod`), with runs of the same
    /// command folded into one line with a count.
    pub fn trace(&self) -> String {
        let mut s = String::new();
        let mut i = 0;
        while i < self.sequence.len() {
            let cur = self.sequence[i];
            let run = self.sequence[i..].iter().take_while(|&&c| c == cur).count();
            let name = opcode_name(cur.0).unwrap_or("UNKNOWN");
            if run > 1 {
                s.push_str(&format!("{name} op_mod {:#x} x{run}\n", cur.1));
            } else {
                s.push_str(&format!("{name} op_mod {:#x}\n", cur.1));
            }
            i += run;
        }
        s
    }

    /// Total number of commands recorded.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Number of times `opcode` was seen.
    pub fn count(&self, opcode: u16) -> u64 {
        self.counts
            .iter()
            .filter(|((o, _), _)| *o == opcode)
            .map(|(_, n)| n)
            .sum()
    }

    /// A table, one line per opcode: name, opcode, count, and `not implemented` where so.
    pub fn report(&self) -> String {
        let mut s = String::new();
        for (&(op, implemented), n) in &self.counts {
            let name = opcode_name(op).unwrap_or("UNKNOWN");
            let what = if implemented { "" } else { "  not implemented" };
            s.push_str(&format!("{name:<32} {op:#06x} {n:>6}{what}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_memory::FakeMemory;

    fn entry_bytes(opcode: u16, op_mod: u16) -> [u8; ENTRY_SIZE] {
        let mut b = [0u8; ENTRY_SIZE];
        b[0] = XPORT_PCI;
        b[4..8].copy_from_slice(&16u32.to_be_bytes());
        b[0x10..0x12].copy_from_slice(&opcode.to_be_bytes());
        b[0x16..0x18].copy_from_slice(&op_mod.to_be_bytes());
        b[0x38..0x3c].copy_from_slice(&16u32.to_be_bytes());
        b[0x3c] = 0x5a;
        b[0x3f] = OWNER_HW;
        b
    }

    #[test]
    fn parse_entry_fields() {
        let e = Entry::parse(&entry_bytes(0x104, 3));
        assert_eq!(e.kind, XPORT_PCI);
        assert_eq!(e.opcode(), 0x104);
        assert_eq!(e.op_mod(), 3);
        assert_eq!(e.inlen, 16);
        assert_eq!(e.outlen, 16);
        assert_eq!(e.token, 0x5a);
        assert_eq!(e.status_own & OWNER_HW, OWNER_HW);
    }

    #[test]
    fn completion_clears_owner_and_writes_status() {
        let mut m = FakeMemory::new(0x1000, 0x1000);
        m.write(0x1040, &entry_bytes(0x104, 0)).unwrap();
        complete(&mut m, 0x1040, Status::BadOperation, 0xdead, Delivery::Ok).unwrap();
        let mut b = [0u8; ENTRY_SIZE];
        m.read(0x1040, &mut b).unwrap();
        assert_eq!(b[0x20], 0x2);
        assert_eq!(u32::from_be_bytes(b[0x24..0x28].try_into().unwrap()), 0xdead);
        assert_eq!(b[0x3f], 0, "owner bit back to software, delivery ok");
        complete(&mut m, 0x1040, Status::Ok, 0, Delivery::BadDescriptor).unwrap();
        m.read(0x1040, &mut b).unwrap();
        assert_eq!(b[0x3f] >> 1, 0x10);
    }

    #[test]
    fn log_counts_and_reports() {
        let mut l = CommandLog::default();
        l.record(0x104, 0, false);
        l.record(0x104, 0, false);
        l.record(0x10a, 0, true);
        assert_eq!(l.total(), 3);
        assert_eq!(l.count(0x104), 2);
        let r = l.report();
        assert!(r.contains("ENABLE_HCA") && r.contains("not implemented"), "{r}");
        assert!(r
            .lines()
            .any(|x| x.starts_with("QUERY_ISSI") && !x.contains("not implemented")));
    }
}
