//! Packets between queue pairs, and their encoding on the wire between two models.
//!
//! A packet is a whole message (no MTU segmentation): the model carries what the transport
//! guarantees, not its framing. RC requests carry a sequence number that their response echoes.

/// What a packet carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// SEND (RC or UD). UD sends carry the Q_Key and, when the sender asked for one, the GRH's
    /// source and destination GIDs.
    Send {
        /// Payload.
        data: Vec<u8>,
        /// Immediate data.
        imm: Option<u32>,
        /// Q_Key (UD).
        qkey: Option<u32>,
        /// Source and destination GID (UD with GRH).
        gids: Option<([u8; 16], [u8; 16])>,
    },
    /// RDMA WRITE, with or without immediate.
    Write {
        /// Remote address.
        addr: u64,
        /// Remote key.
        rkey: u32,
        /// Payload.
        data: Vec<u8>,
        /// Immediate data.
        imm: Option<u32>,
    },
    /// RDMA READ request.
    Read {
        /// Remote address.
        addr: u64,
        /// Remote key.
        rkey: u32,
        /// Bytes to read.
        len: u32,
    },
    /// Atomic compare-and-swap (`add` is None) or fetch-and-add (`compare` is None).
    Atomic {
        /// Remote address.
        addr: u64,
        /// Remote key.
        rkey: u32,
        /// Compare operand (compare-and-swap).
        compare: Option<u64>,
        /// Swap value, or the addend of fetch-and-add.
        operand: u64,
    },
    /// Positive acknowledgement.
    Ack,
    /// RDMA READ response.
    ReadResponse(Vec<u8>),
    /// Atomic response: the original value.
    AtomicResponse(u64),
    /// Negative acknowledgement.
    Nak(Nak),
}

/// Kinds of NAK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nak {
    /// Receiver not ready: no receive WQE.
    ReceiverNotReady = 1,
    /// Invalid request (e.g. the message does not fit the receive).
    InvalidRequest = 2,
    /// Remote access error (key, bounds or rights).
    RemoteAccess = 3,
    /// Remote operational error.
    RemoteOperational = 4,
}

impl Body {
    /// Whether this is a request (as opposed to a response).
    pub fn is_request(&self) -> bool {
        matches!(
            self,
            Body::Send { .. } | Body::Write { .. } | Body::Read { .. } | Body::Atomic { .. }
        )
    }

    /// Payload bytes carried.
    pub fn payload_len(&self) -> usize {
        match self {
            Body::Send { data, .. } | Body::Write { data, .. } | Body::ReadResponse(data) => data.len(),
            Body::Atomic { .. } | Body::AtomicResponse(_) => 8,
            _ => 0,
        }
    }
}

/// A packet: addressing, the requester's sequence number, and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Source LID.
    pub slid: u16,
    /// Destination LID.
    pub dlid: u16,
    /// Source QP.
    pub sqpn: u32,
    /// Destination QP.
    pub dqpn: u32,
    /// Sequence number (RC requests; responses echo it).
    pub psn: u32,
    /// What it carries.
    pub body: Body,
}

/// A packet that could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed packet")
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let (head, rest) = self.0.split_at_checked(N).ok_or(DecodeError)?;
        self.0 = rest;
        head.try_into().map_err(|_| DecodeError)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.take()?))
    }
    fn opt32(&mut self) -> Result<Option<u32>, DecodeError> {
        let present = self.u8()? != 0;
        let v = self.u32()?;
        Ok(present.then_some(v))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u32()? as usize;
        let (head, rest) = self.0.split_at_checked(n).ok_or(DecodeError)?;
        self.0 = rest;
        Ok(head.to_vec())
    }
}

fn put_opt32(out: &mut Vec<u8>, v: Option<u32>) {
    out.push(u8::from(v.is_some()));
    out.extend_from_slice(&v.unwrap_or(0).to_be_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

impl Packet {
    /// The packet as bytes (without framing).
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(32 + self.body.payload_len());
        o.extend_from_slice(&self.slid.to_be_bytes());
        o.extend_from_slice(&self.dlid.to_be_bytes());
        o.extend_from_slice(&self.sqpn.to_be_bytes());
        o.extend_from_slice(&self.dqpn.to_be_bytes());
        o.extend_from_slice(&self.psn.to_be_bytes());
        match &self.body {
            Body::Send {
                data,
                imm,
                qkey,
                gids,
            } => {
                o.push(1);
                put_opt32(&mut o, *imm);
                put_opt32(&mut o, *qkey);
                o.push(u8::from(gids.is_some()));
                let (s, d) = gids.unwrap_or(([0; 16], [0; 16]));
                o.extend_from_slice(&s);
                o.extend_from_slice(&d);
                put_bytes(&mut o, data);
            }
            Body::Write {
                addr,
                rkey,
                data,
                imm,
            } => {
                o.push(2);
                o.extend_from_slice(&addr.to_be_bytes());
                o.extend_from_slice(&rkey.to_be_bytes());
                put_opt32(&mut o, *imm);
                put_bytes(&mut o, data);
            }
            Body::Read { addr, rkey, len } => {
                o.push(3);
                o.extend_from_slice(&addr.to_be_bytes());
                o.extend_from_slice(&rkey.to_be_bytes());
                o.extend_from_slice(&len.to_be_bytes());
            }
            Body::Atomic {
                addr,
                rkey,
                compare,
                operand,
            } => {
                o.push(4);
                o.extend_from_slice(&addr.to_be_bytes());
                o.extend_from_slice(&rkey.to_be_bytes());
                o.push(u8::from(compare.is_some()));
                o.extend_from_slice(&compare.unwrap_or(0).to_be_bytes());
                o.extend_from_slice(&operand.to_be_bytes());
            }
            Body::Ack => o.push(5),
            Body::ReadResponse(data) => {
                o.push(6);
                put_bytes(&mut o, data);
            }
            Body::AtomicResponse(v) => {
                o.push(7);
                o.extend_from_slice(&v.to_be_bytes());
            }
            Body::Nak(n) => {
                o.push(8);
                o.push(*n as u8);
            }
        }
        o
    }

    /// Decodes a packet [`encode`](Self::encode) produced.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader(b);
        let slid = r.u16()?;
        let dlid = r.u16()?;
        let sqpn = r.u32()?;
        let dqpn = r.u32()?;
        let psn = r.u32()?;
        let body = match r.u8()? {
            1 => {
                let imm = r.opt32()?;
                let qkey = r.opt32()?;
                let has_gids = r.u8()? != 0;
                let s = r.take::<16>()?;
                let d = r.take::<16>()?;
                Body::Send {
                    imm,
                    qkey,
                    gids: has_gids.then_some((s, d)),
                    data: r.bytes()?,
                }
            }
            2 => Body::Write {
                addr: r.u64()?,
                rkey: r.u32()?,
                imm: r.opt32()?,
                data: r.bytes()?,
            },
            3 => Body::Read {
                addr: r.u64()?,
                rkey: r.u32()?,
                len: r.u32()?,
            },
            4 => {
                let addr = r.u64()?;
                let rkey = r.u32()?;
                let has_compare = r.u8()? != 0;
                let compare = r.u64()?;
                Body::Atomic {
                    addr,
                    rkey,
                    compare: has_compare.then_some(compare),
                    operand: r.u64()?,
                }
            }
            5 => Body::Ack,
            6 => Body::ReadResponse(r.bytes()?),
            7 => Body::AtomicResponse(r.u64()?),
            8 => Body::Nak(match r.u8()? {
                1 => Nak::ReceiverNotReady,
                2 => Nak::InvalidRequest,
                3 => Nak::RemoteAccess,
                4 => Nak::RemoteOperational,
                _ => return Err(DecodeError),
            }),
            _ => return Err(DecodeError),
        };
        if !r.0.is_empty() {
            return Err(DecodeError);
        }
        Ok(Self {
            slid,
            dlid,
            sqpn,
            dqpn,
            psn,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_body_round_trips_and_truncation_is_refused() {
        let bodies = vec![
            Body::Send {
                data: vec![1, 2, 3],
                imm: Some(7),
                qkey: Some(0x1111),
                gids: Some(([1; 16], [2; 16])),
            },
            Body::Send {
                data: vec![],
                imm: None,
                qkey: None,
                gids: None,
            },
            Body::Write {
                addr: 0x1234_5678_9abc,
                rkey: 0x300,
                data: vec![9; 100],
                imm: None,
            },
            Body::Read {
                addr: 5,
                rkey: 6,
                len: 7,
            },
            Body::Atomic {
                addr: 8,
                rkey: 9,
                compare: Some(10),
                operand: 11,
            },
            Body::Atomic {
                addr: 8,
                rkey: 9,
                compare: None,
                operand: 12,
            },
            Body::Ack,
            Body::ReadResponse(vec![4; 33]),
            Body::AtomicResponse(u64::MAX),
            Body::Nak(Nak::RemoteAccess),
        ];
        for body in bodies {
            let p = Packet {
                slid: 6,
                dlid: 10,
                sqpn: 0x101,
                dqpn: 0x102,
                psn: 42,
                body,
            };
            let e = p.encode();
            assert_eq!(Packet::decode(&e), Ok(p));
            assert_eq!(Packet::decode(&e[..e.len() - 1]), Err(DecodeError));
            let mut longer = e.clone();
            longer.push(0);
            assert_eq!(Packet::decode(&longer), Err(DecodeError));
        }
        assert_eq!(Packet::decode(&[0; 17]), Err(DecodeError), "unknown body type");
    }
}
