//! Send WQEs: the control segment, the transport segments each opcode carries (datagram,
//! remote address, atomic) and the data (pointer or inline segments).

use super::buffer::{be32, be64};
use super::keys::Sge;

/// Size of a send WQE basic block.
pub const WQE_BB: u64 = 64;

/// WQE opcodes.
pub mod opcode {
    /// No operation.
    pub const NOP: u8 = 0x00;
    /// SEND with invalidate.
    pub const SEND_INVAL: u8 = 0x01;
    /// RDMA WRITE.
    pub const RDMA_WRITE: u8 = 0x08;
    /// RDMA WRITE with immediate.
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    /// SEND.
    pub const SEND: u8 = 0x0a;
    /// SEND with immediate.
    pub const SEND_IMM: u8 = 0x0b;
    /// RDMA READ.
    pub const RDMA_READ: u8 = 0x10;
    /// Atomic compare and swap.
    pub const ATOMIC_CS: u8 = 0x11;
    /// Atomic fetch and add.
    pub const ATOMIC_FA: u8 = 0x12;
}

/// Service types (`qpc.st`) the data path executes.
pub mod service {
    /// Reliable connected.
    pub const RC: u64 = 0x0;
    /// Unreliable datagram.
    pub const UD: u64 = 0x2;
    /// The SMI QP (QP0), which sends subnet management datagrams.
    pub const QP0: u64 = 0x7;
    /// The GSI QP (QP1), which sends datagrams.
    pub const QP1: u64 = 0x8;
}

/// The number a QP of service type `st` and number `qpn` has on the wire: the special QPs
/// are QP0 and QP1 there, whatever their firmware number.
pub fn wire_qpn(st: u64, qpn: u32) -> u32 {
    match st {
        service::QP0 => 0,
        service::QP1 => 1,
        _ => qpn,
    }
}

/// Whether service type `st` sends datagrams.
pub fn is_datagram(st: u64) -> bool {
    st == service::UD || st == service::QP0 || st == service::QP1
}

/// A UD destination, from the WQE's address vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Destination {
    /// Q_Key given in the WQE; `None` means "use the QP's" (the high bit set).
    pub qkey: Option<u32>,
    /// Destination QP.
    pub dqpn: u32,
    /// Destination LID.
    pub dlid: u16,
    /// Destination GID, when a GRH goes with the message.
    pub dgid: Option<[u8; 16]>,
}

/// A remote buffer: address and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The data of a WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// Inline bytes.
    Inline(Vec<u8>),
    /// A gather (or, for reads and atomics, scatter) list.
    List(Vec<Sge>),
}

impl Data {
    /// Total length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Data::Inline(b) => b.len() as u64,
            Data::List(l) => l.iter().map(|s| u64::from(s.len)).sum(),
        }
    }
}

/// What a WQE asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Nothing (NOP, and the opcodes of driver-internal QPs the model does not execute).
    Nop,
    /// SEND (with immediate), to the connected peer or a datagram destination.
    Send {
        /// Immediate data.
        imm: Option<u32>,
        /// Datagram destination (UD, QP1).
        to: Option<Destination>,
    },
    /// RDMA WRITE (with immediate).
    Write {
        /// Where.
        remote: Remote,
        /// Immediate data.
        imm: Option<u32>,
    },
    /// RDMA READ into the WQE's scatter list.
    Read(Remote),
    /// Atomic compare-and-swap or fetch-and-add; the original value lands in the scatter list.
    Atomic {
        /// Where.
        remote: Remote,
        /// Compare operand (compare-and-swap only).
        compare: Option<u64>,
        /// Swap value or addend.
        operand: u64,
    },
}

/// A send WQE as fetched from the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWqe {
    /// WQE counter from the control segment (reported in the CQE).
    pub counter: u16,
    /// Basic blocks the WQE takes.
    pub bbs: u16,
    /// WQE opcode.
    pub opcode: u8,
    /// Whether it asks for a completion.
    pub signaled: bool,
    /// The operation.
    pub op: Op,
    /// Its data.
    pub data: Data,
}

/// Why a WQE could not be parsed (a local QP operation error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Number of basic blocks of the WQE whose first block is `first`.
pub fn basic_blocks(first: &[u8]) -> u16 {
    let ds = u64::from(first.get(7).copied().unwrap_or(0) & 0x3f);
    (ds * 16).div_ceil(WQE_BB).max(1) as u16
}

fn parse_data(mut segs: &[u8]) -> Result<Data, Malformed> {
    if segs.len() >= 4 && be32(segs, 0) & 0x8000_0000 != 0 {
        let n = (be32(segs, 0) & 0x7fff_ffff) as usize;
        let bytes = segs.get(4..4 + n).ok_or(Malformed("inline data past the WQE"))?;
        return Ok(Data::Inline(bytes.to_vec()));
    }
    let mut list = vec![];
    while segs.len() >= 16 {
        let len = be32(segs, 0);
        if len != 0 {
            list.push(Sge {
                len,
                key: be32(segs, 4),
                addr: be64(segs, 8),
            });
        }
        segs = &segs[16..];
    }
    Ok(Data::List(list))
}

/// Parses a whole WQE (`ds` 16-byte units) of a QP of service type `st`.
pub fn parse(wqe: &[u8], st: u64) -> Result<SendWqe, Malformed> {
    if wqe.len() < 16 {
        return Err(Malformed("shorter than its control segment"));
    }
    let opcode = wqe[3];
    let counter = u16::from_be_bytes([wqe[1], wqe[2]]);
    let signaled = wqe[11] & 0x08 != 0;
    let imm = be32(wqe, 12);
    let rest = &wqe[16..];
    let remote = |seg: &[u8]| Remote {
        addr: be64(seg, 0),
        rkey: be32(seg, 8),
    };
    let need = |n: usize| {
        if rest.len() < n {
            Err(Malformed("transport segment past the WQE"))
        } else {
            Ok(())
        }
    };
    let (op, data) = match opcode {
        opcode::SEND | opcode::SEND_IMM | opcode::SEND_INVAL if is_datagram(st) => {
            need(48)?;
            let av = &rest[..48];
            let qkey = be32(av, 0);
            let grh = be32(av, 28) & (1 << 30) != 0;
            let to = Destination {
                qkey: (qkey & 0x8000_0000 == 0).then_some(qkey),
                dqpn: be32(av, 8) & 0x00ff_ffff,
                dlid: u16::from_be_bytes([av[14], av[15]]),
                dgid: grh.then(|| {
                    let mut g = [0u8; 16];
                    g.copy_from_slice(&av[32..48]);
                    g
                }),
            };
            let imm = (opcode == opcode::SEND_IMM).then_some(imm);
            (Op::Send { imm, to: Some(to) }, parse_data(&rest[48..])?)
        }
        opcode::SEND | opcode::SEND_IMM | opcode::SEND_INVAL => {
            let imm = (opcode == opcode::SEND_IMM).then_some(imm);
            (Op::Send { imm, to: None }, parse_data(rest)?)
        }
        opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM => {
            need(16)?;
            let imm = (opcode == opcode::RDMA_WRITE_IMM).then_some(imm);
            let op = Op::Write {
                remote: remote(rest),
                imm,
            };
            (op, parse_data(&rest[16..])?)
        }
        opcode::RDMA_READ => {
            need(16)?;
            (Op::Read(remote(rest)), parse_data(&rest[16..])?)
        }
        opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
            need(32)?;
            let swap_add = be64(rest, 16);
            let op = Op::Atomic {
                remote: remote(rest),
                compare: (opcode == opcode::ATOMIC_CS).then(|| be64(rest, 24)),
                operand: swap_add,
            };
            (op, parse_data(&rest[32..])?)
        }
        opcode::NOP => (Op::Nop, Data::List(vec![])),
        other => {
            log::debug!("WQE opcode {other:#x} is not executed; it completes as a NOP");
            (Op::Nop, Data::List(vec![]))
        }
    };
    Ok(SendWqe {
        counter,
        bbs: basic_blocks(wqe),
        opcode,
        signaled,
        op,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctrl(opcode: u8, counter: u16, ds: u8) -> Vec<u8> {
        let mut w = vec![0u8; usize::from(ds) * 16];
        w[1..3].copy_from_slice(&counter.to_be_bytes());
        w[3] = opcode;
        w[7] = ds;
        w[11] = 0x08;
        w
    }

    #[test]
    fn rdma_write_with_immediate_and_two_sges() {
        let mut w = ctrl(opcode::RDMA_WRITE_IMM, 7, 4);
        w[12..16].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        w[16..24].copy_from_slice(&0x1000u64.to_be_bytes());
        w[24..28].copy_from_slice(&0x4242u32.to_be_bytes());
        w[32..36].copy_from_slice(&10u32.to_be_bytes());
        w[36..40].copy_from_slice(&0x300u32.to_be_bytes());
        w[40..48].copy_from_slice(&0x2000u64.to_be_bytes());
        w[48..52].copy_from_slice(&20u32.to_be_bytes());
        let p = parse(&w, service::RC).unwrap();
        assert_eq!(p.counter, 7);
        assert_eq!(p.bbs, 1);
        assert!(p.signaled);
        assert_eq!(
            p.op,
            Op::Write {
                remote: Remote {
                    addr: 0x1000,
                    rkey: 0x4242
                },
                imm: Some(0xdead_beef)
            }
        );
        assert_eq!(p.data.len(), 30);
    }

    #[test]
    fn atomics_inline_and_datagrams() {
        let mut w = ctrl(opcode::ATOMIC_CS, 0, 4);
        w[32..40].copy_from_slice(&5u64.to_be_bytes()); // swap
        w[40..48].copy_from_slice(&4u64.to_be_bytes()); // compare
        let p = parse(&w, service::RC).unwrap();
        assert!(matches!(
            p.op,
            Op::Atomic {
                compare: Some(4),
                operand: 5,
                ..
            }
        ));
        let mut w = ctrl(opcode::SEND, 1, 2);
        w[16..20].copy_from_slice(&(0x8000_0000u32 | 5).to_be_bytes());
        w[20..25].copy_from_slice(b"hello");
        assert_eq!(
            parse(&w, service::RC).unwrap().data,
            Data::Inline(b"hello".to_vec())
        );
        let mut w = ctrl(opcode::SEND, 2, 5);
        w[16..20].copy_from_slice(&0x8000_0000u32.to_be_bytes()); // use the QP's Q_Key
        w[24..28].copy_from_slice(&(0x8000_0000u32 | 0x123).to_be_bytes());
        w[30..32].copy_from_slice(&9u16.to_be_bytes());
        let p = parse(&w, service::UD).unwrap();
        assert_eq!(
            p.op,
            Op::Send {
                imm: None,
                to: Some(Destination {
                    qkey: None,
                    dqpn: 0x123,
                    dlid: 9,
                    dgid: None
                })
            }
        );
        assert_eq!(p.bbs, 2, "five 16-byte units take two basic blocks");
        let mut w = ctrl(opcode::SEND, 3, 2);
        w[16..20].copy_from_slice(&(0x8000_0000u32 | 100).to_be_bytes());
        assert!(parse(&w, service::RC).is_err(), "inline length past the WQE");
        assert!(
            parse(&ctrl(opcode::SEND, 0, 2), service::UD).is_err(),
            "no address vector"
        );
    }
}
