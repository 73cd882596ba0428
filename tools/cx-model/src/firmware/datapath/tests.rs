//! The execution engine on synthetic queues, driven the way a driver drives the device: commands
//! create the objects, WQEs go into guest memory, doorbells go to the UAR, completions are polled
//! by owner bit.

use super::completion::opcode as cqe_op;
use super::requester::{ACK_TIMEOUT, RNR_DELAY};
use super::wqe::opcode as wqe_op;
use crate::firmware::bringup_tests::{create_eq, enable_and_init, teardown_and_reclaim};
use crate::firmware::objects::{Kind, QpState};
use crate::firmware::q_counters::counter;
use crate::guest_memory::GuestMemory;
use crate::ifc::{self, Field};
use crate::opcodes::op;
use crate::test_driver::{input, TestDriver};
use std::time::Instant;

const NUMBER: Field = Field::new(0x48, 24);
/// The counter set the rig allocates first.
const COUNTER_SET: u8 = 1;
const RC: u64 = 0x0;
/// The user index every test QP gets; CQEs must carry it.
const USER_INDEX: u64 = 0x77;

/// Memory region access bits.
const LOCAL_WRITE: u8 = 1;
const REMOTE_WRITE: u8 = 2;
const REMOTE_READ: u8 = 4;
const ATOMIC: u8 = 8;
const ALL: u8 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | ATOMIC;

struct Rig {
    t: TestDriver,
    pages: Vec<u64>,
    uar: u64,
    pd: u64,
    eqn: u32,
    eq_page: u64,
    /// The counter set `bring_up` binds QPs to.
    set: u8,
}

/// A CQ and the driver's consumer index.
struct Cq {
    n: u32,
    buf: u64,
    log_size: u32,
    stride: u64,
    dbr: u64,
    ci: u32,
}

/// A QP and the driver's producer counters.
struct Qp {
    n: u32,
    buf: u64,
    dbr: u64,
    rq_entries: u64,
    sq_entries: u64,
    sq_pi: u16,
    rq_pi: u16,
}

/// A completion as the test reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wc {
    opcode: u8,
    syndrome: u8,
    qpn: u32,
    counter: u16,
    byte_cnt: u32,
    imm: u32,
    uidx: u32,
}

fn created(out: &[u8]) -> u32 {
    ifc::get(out, NUMBER) as u32
}

impl Rig {
    fn new() -> Self {
        Self::with_guid_seed(crate::device::DeviceConfig::default().firmware.guid_seed)
    }

    /// A device whose GUIDs and LIDs derive from `seed` (two seeds, two distinct devices).
    fn with_guid_seed(seed: u64) -> Self {
        let mut config = crate::device::DeviceConfig::default();
        config.firmware.guid_seed = seed;
        let mut t = TestDriver::new(config);
        let pages = enable_and_init(&mut t);
        let uar = ifc::get(&t.exec(&input(op::ALLOC_UAR, 0, 16), 16).unwrap(), NUMBER);
        let pd = ifc::get(&t.exec(&input(op::ALLOC_PD, 0, 16), 16).unwrap(), NUMBER);
        // The counter set every QP is bound to (as a driver binds its port's set).
        let set = t.exec(&input(op::ALLOC_Q_COUNTER, 0, 16), 16).unwrap()[11];
        assert_eq!(set, COUNTER_SET);
        // Completion and CQ error events.
        let (eqn, eq_page) = create_eq(&mut t, uar, 1 | 1 << 4, 0);
        Self {
            t,
            pages,
            uar,
            pd,
            eqn,
            eq_page,
            set,
        }
    }

    fn lid(&self) -> u16 {
        self.t.dev.firmware.node.ports[0].lid
    }

    fn cq(&mut self, log_size: u32, cqe128: bool) -> Cq {
        let stride: u64 = if cqe128 { 128 } else { 64 };
        let bytes = stride << log_size;
        let npages = bytes.div_ceil(4096) as usize;
        let buf = self.t.alloc_pages(npages);
        let dbr = self.t.alloc_pages(1);
        for i in 0..1u64 << log_size {
            // Entries start invalid, as drivers initialise them.
            self.t.mem.write(buf + i * stride + stride - 1, &[0xf0]).unwrap();
        }
        let mut c = input(op::CREATE_CQ, 0, 0x110 + npages * 8);
        ifc::set(&mut c, Field::new(0x88, 3), u64::from(cqe128));
        ifc::set(&mut c, Field::new(0xe3, 5), u64::from(log_size));
        ifc::set(&mut c, Field::new(0xe8, 24), self.uar);
        ifc::set(&mut c, Field::new(0x120, 32), u64::from(self.eqn));
        ifc::set(&mut c, Field::new(0x240, 64), dbr);
        for k in 0..npages {
            let a = buf + k as u64 * 4096;
            c[0x110 + k * 8..0x118 + k * 8].copy_from_slice(&a.to_be_bytes());
        }
        let n = created(&self.t.exec(&c, 16).unwrap());
        Cq {
            n,
            buf,
            log_size,
            stride,
            dbr,
            ci: 0,
        }
    }

    /// A memory region over `bytes` of fresh guest memory (physical addressing); returns its key
    /// and address.
    fn mr(&mut self, bytes: u64, access: u8) -> (u32, u64) {
        let addr = self.t.alloc_pages(bytes.div_ceil(4096) as usize);
        let mut m = input(op::CREATE_MKEY, 0, 0x110);
        ifc::set(&mut m, Field::new(0xe8, 24), self.pd);
        ifc::set(&mut m, Field::new(0x94, 1), u64::from(access & LOCAL_WRITE != 0));
        ifc::set(&mut m, Field::new(0x92, 1), u64::from(access & REMOTE_WRITE != 0));
        ifc::set(&mut m, Field::new(0x93, 1), u64::from(access & REMOTE_READ != 0));
        ifc::set(&mut m, Field::new(0x91, 1), u64::from(access & ATOMIC != 0));
        ifc::set(&mut m, Field::new(0xb8, 8), 0x5a);
        ifc::set(&mut m, Field::new(0x100, 64), addr);
        ifc::set(&mut m, Field::new(0x140, 64), bytes);
        let index = created(&self.t.exec(&m, 16).unwrap());
        (index << 8 | 0x5a, addr)
    }

    /// A QP (in RST) with 2^log_sq send blocks and 2^log_rq receive entries of 64 bytes.
    fn qp(&mut self, st: u64, cq: &Cq, log_sq: u32, log_rq: u32) -> Qp {
        let bytes = (64u64 << log_rq) + (64u64 << log_sq);
        let npages = bytes.div_ceil(4096) as usize;
        let buf = self.t.alloc_pages(npages);
        let dbr = self.t.alloc_pages(1);
        let mut c = input(op::CREATE_QP, 0, 0x110 + npages * 8);
        for (f, v) in [
            (Field::new(0xc8, 8), st),
            (Field::new(0xe8, 24), self.pd),
            (Field::new(0x128, 24), self.uar),
            (Field::new(0x109, 4), u64::from(log_rq)),
            (Field::new(0x10d, 3), 2),
            (Field::new(0x111, 4), u64::from(log_sq)),
            (Field::new(0x4a8, 24), u64::from(cq.n)),
            (Field::new(0x5a8, 24), u64::from(cq.n)),
            (Field::new(0x5c0, 64), dbr),
            (Field::new(0x148, 24), USER_INDEX),
        ] {
            ifc::set(&mut c, f, v);
        }
        for k in 0..npages {
            let a = buf + k as u64 * 4096;
            c[0x110 + k * 8..0x118 + k * 8].copy_from_slice(&a.to_be_bytes());
        }
        let n = created(&self.t.exec(&c, 16).unwrap());
        Qp {
            n,
            buf,
            dbr,
            rq_entries: 1 << log_rq,
            sq_entries: 1 << log_sq,
            sq_pi: 0,
            rq_pi: 0,
        }
    }

    /// RST to RTS, connected to `peer` at `rlid` (RC), with the given retry counts.
    fn bring_up(&mut self, qp: &Qp, peer: u32, rlid: u16, retry: u64, rnr_retry: u64) {
        for (o, fields) in [
            (
                op::RST2INIT_QP,
                vec![
                    (0x600, 32, 0x1111_2222),
                    (0x2a8, 8, 1),
                    (0x120, 8, u64::from(self.set)),
                ],
            ),
            (
                op::INIT2RTR_QP,
                vec![(0x168, 24, u64::from(peer)), (0x1b0, 16, u64::from(rlid))],
            ),
            (op::RTR2RTS_QP, vec![(0x44d, 3, retry), (0x450, 3, rnr_retry)]),
        ] {
            let mut m = input(o, 0, 0x1d0);
            ifc::set(&mut m, NUMBER, u64::from(qp.n));
            for (bit, width, v) in fields {
                ifc::set(&mut m, Field::new(bit, width), v);
            }
            self.t.exec(&m, 16).unwrap();
        }
    }

    /// A connected RC pair on one CQ each, with retries as given.
    fn rc_pair(&mut self, rnr_retry: u64) -> (Qp, Cq, Qp, Cq) {
        let (ca, cb) = (self.cq(4, false), self.cq(4, false));
        let a = self.qp(RC, &ca, 3, 3);
        let b = self.qp(RC, &cb, 3, 3);
        let lid = self.lid();
        self.bring_up(&a, b.n, lid, 7, rnr_retry);
        self.bring_up(&b, a.n, lid, 7, rnr_retry);
        (a, ca, b, cb)
    }

    /// Writes a send WQE (control segment + `segs`) at the producer counter and rings.
    fn post_send(&mut self, qp: &mut Qp, opcode: u8, imm: u32, segs: &[u8]) {
        let ds = 1 + segs.len().div_ceil(16);
        let bbs = (ds * 16).div_ceil(64) as u16;
        let mut w = vec![0u8; usize::from(bbs) * 64];
        w[1..3].copy_from_slice(&qp.sq_pi.to_be_bytes());
        w[3] = opcode;
        w[4..8].copy_from_slice(&(qp.n << 8 | ds as u32).to_be_bytes());
        w[11] = 0x08;
        w[12..16].copy_from_slice(&imm.to_be_bytes());
        w[16..16 + segs.len()].copy_from_slice(segs);
        let rq_bytes = qp.rq_entries * 64;
        for (i, bb) in w.chunks(64).enumerate() {
            let slot = (u64::from(qp.sq_pi) + i as u64) % qp.sq_entries;
            self.t.mem.write(qp.buf + rq_bytes + slot * 64, bb).unwrap();
        }
        qp.sq_pi = qp.sq_pi.wrapping_add(bbs);
        self.t
            .mem
            .write(qp.dbr + 4, &u32::from(qp.sq_pi).to_be_bytes())
            .unwrap();
        self.ring(qp);
    }

    fn ring(&mut self, qp: &Qp) {
        let mut bf = [0u8; 8];
        bf[4..].copy_from_slice(&(qp.n << 8).to_be_bytes());
        let Rig { t, uar, .. } = self;
        t.dev.bar0_write(&mut t.mem, *uar * 4096 + 0x800, &bf);
    }

    /// Posts a receive of one data segment.
    fn post_recv(&mut self, qp: &mut Qp, len: u32, key: u32, addr: u64) {
        let slot = u64::from(qp.rq_pi) % qp.rq_entries;
        let mut e = [0u8; 64];
        e[..16].copy_from_slice(&sge(len, key, addr));
        e[20..24].copy_from_slice(&0x100u32.to_be_bytes()); // terminator
        self.t.mem.write(qp.buf + slot * 64, &e).unwrap();
        qp.rq_pi = qp.rq_pi.wrapping_add(1);
        self.t
            .mem
            .write(qp.dbr, &u32::from(qp.rq_pi).to_be_bytes())
            .unwrap();
    }

    /// The next completion, if software owns it; updates the consumer index.
    fn poll(&mut self, cq: &mut Cq) -> Option<Wc> {
        let entries = 1u32 << cq.log_size;
        let at = cq.buf + u64::from(cq.ci % entries) * cq.stride + cq.stride - 64;
        let mut c = [0u8; 64];
        self.t.mem.read(at, &mut c).unwrap();
        let owner = (cq.ci >> cq.log_size) & 1;
        if c[63] >> 4 == 0xf || u32::from(c[63] & 1) != owner {
            return None;
        }
        cq.ci += 1;
        self.t.mem.write(cq.dbr, &cq.ci.to_be_bytes()).unwrap();
        let be32 = |o: usize| u32::from_be_bytes(c[o..o + 4].try_into().unwrap());
        Some(Wc {
            opcode: c[63] >> 4,
            syndrome: c[55],
            qpn: be32(56) & 0xff_ffff,
            counter: u16::from_be_bytes([c[60], c[61]]),
            byte_cnt: be32(44),
            imm: be32(36),
            uidx: be32(32) & 0xff_ffff,
        })
    }

    fn state(&self, qp: &Qp) -> QpState {
        self.t.dev.firmware.objects.get(Kind::Qp, qp.n).unwrap().qp_state
    }

    fn tick(&mut self, at: Instant) {
        let Rig { t, .. } = self;
        super::tick(&mut t.dev.firmware, &mut t.mem, at);
    }

    /// Counter `at` (byte offset in QUERY_Q_COUNTER's output) of set `set`, read by command.
    fn q_counter(&mut self, set: u8, at: usize) -> u32 {
        let mut q = input(op::QUERY_Q_COUNTER, 0, 32);
        q[31] = set;
        let out = self.t.exec(&q, 0x100).unwrap();
        u32::from_be_bytes(out[at..at + 4].try_into().unwrap())
    }

    fn finish(mut self) {
        teardown_and_reclaim(&mut self.t, &self.pages);
    }
}

fn sge(len: u32, key: u32, addr: u64) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0..4].copy_from_slice(&len.to_be_bytes());
    s[4..8].copy_from_slice(&key.to_be_bytes());
    s[8..16].copy_from_slice(&addr.to_be_bytes());
    s
}

fn raddr(addr: u64, rkey: u32) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0..8].copy_from_slice(&addr.to_be_bytes());
    s[8..12].copy_from_slice(&rkey.to_be_bytes());
    s
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn rc_send_write_read_and_atomics_move_data_and_complete() {
    let mut r = Rig::new();
    let (mut a, mut ca, mut b, mut cb) = r.rc_pair(7);
    let (ak, aaddr) = r.mr(8192, LOCAL_WRITE);
    let (bk, baddr) = r.mr(8192, ALL);
    let msg: Vec<u8> = (0..100u8).collect();
    r.t.mem.write(aaddr, &msg).unwrap();

    // SEND into B's posted receive.
    r.post_recv(&mut b, 256, bk, baddr + 0x1000);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(100, ak, aaddr));
    let wc = r.poll(&mut cb).unwrap();
    assert_eq!((wc.opcode, wc.qpn, wc.byte_cnt), (cqe_op::RESP_SEND, b.n, 100));
    assert_eq!(u64::from(wc.uidx), USER_INDEX);
    let mut got = vec![0u8; 100];
    r.t.mem.read(baddr + 0x1000, &mut got).unwrap();
    assert_eq!(got, msg);
    let wc = r.poll(&mut ca).unwrap();
    assert_eq!((wc.opcode, wc.qpn, wc.counter), (cqe_op::REQ, a.n, 0));

    // RDMA WRITE with immediate: data lands at the remote address, a receive is consumed.
    r.post_recv(&mut b, 0, bk, baddr);
    let w = cat(&[&raddr(baddr + 0x100, bk), &sge(64, ak, aaddr)]);
    r.post_send(&mut a, wqe_op::RDMA_WRITE_IMM, 0xabcd, &w);
    let wc = r.poll(&mut cb).unwrap();
    assert_eq!(
        (wc.opcode, wc.imm, wc.byte_cnt),
        (cqe_op::RESP_WR_IMM, 0xabcd, 64)
    );
    let mut got = vec![0u8; 64];
    r.t.mem.read(baddr + 0x100, &mut got).unwrap();
    assert_eq!(got, &msg[..64]);
    assert_eq!(r.poll(&mut ca).unwrap().opcode, cqe_op::REQ);

    // RDMA READ of 128 bytes of B into A at +0x800.
    let pattern: Vec<u8> = (0..128u8).map(|x| x ^ 0x5a).collect();
    r.t.mem.write(baddr + 0x400, &pattern).unwrap();
    let w = cat(&[&raddr(baddr + 0x400, bk), &sge(128, ak, aaddr + 0x800)]);
    r.post_send(&mut a, wqe_op::RDMA_READ, 0, &w);
    let wc = r.poll(&mut ca).unwrap();
    assert_eq!((wc.opcode, wc.byte_cnt, wc.counter), (cqe_op::REQ, 128, 2));
    let mut got = vec![0u8; 128];
    r.t.mem.read(aaddr + 0x800, &mut got).unwrap();
    assert_eq!(got, pattern);

    // Atomics on a big-endian counter at B+0x200; the original lands at A+0x900.
    r.t.mem.write(baddr + 0x200, &10u64.to_be_bytes()).unwrap();
    let mut atomic = [0u8; 16];
    atomic[..8].copy_from_slice(&5u64.to_be_bytes());
    let w = cat(&[&raddr(baddr + 0x200, bk), &atomic, &sge(8, ak, aaddr + 0x900)]);
    r.post_send(&mut a, wqe_op::ATOMIC_FA, 0, &w);
    assert_eq!(r.poll(&mut ca).unwrap().byte_cnt, 8);
    let be = |r: &Rig, at: u64| {
        let mut v = [0u8; 8];
        r.t.mem.read(at, &mut v).unwrap();
        u64::from_be_bytes(v)
    };
    assert_eq!((be(&r, baddr + 0x200), be(&r, aaddr + 0x900)), (15, 10));
    atomic[..8].copy_from_slice(&99u64.to_be_bytes()); // swap
    atomic[8..].copy_from_slice(&15u64.to_be_bytes()); // compare
    let w = cat(&[&raddr(baddr + 0x200, bk), &atomic, &sge(8, ak, aaddr + 0x900)]);
    r.post_send(&mut a, wqe_op::ATOMIC_CS, 0, &w);
    assert!(r.poll(&mut ca).is_some());
    assert_eq!((be(&r, baddr + 0x200), be(&r, aaddr + 0x900)), (99, 15));
    // A compare that fails leaves memory alone and still returns the original.
    atomic[8..].copy_from_slice(&1u64.to_be_bytes());
    let w = cat(&[&raddr(baddr + 0x200, bk), &atomic, &sge(8, ak, aaddr + 0x900)]);
    r.post_send(&mut a, wqe_op::ATOMIC_CS, 0, &w);
    assert!(r.poll(&mut ca).is_some());
    assert_eq!((be(&r, baddr + 0x200), be(&r, aaddr + 0x900)), (99, 99));
    assert_eq!(r.poll(&mut ca), None);
    assert_eq!(r.poll(&mut cb), None);
    let q = [
        counter::RX_WRITE_REQUESTS,
        counter::RX_READ_REQUESTS,
        counter::RX_ATOMIC_REQUESTS,
    ]
    .map(|at| r.q_counter(COUNTER_SET, at));
    assert_eq!(q, [1, 1, 3]);
    r.finish();
}

#[test]
fn each_qp_counts_on_the_set_its_rst2init_named() {
    let mut r = Rig::new();
    let other = r.t.exec(&input(op::ALLOC_Q_COUNTER, 0, 16), 16).unwrap()[11];
    assert_eq!(other, COUNTER_SET + 1);
    // A on the rig's set, B on the other one.
    let (mut ca, cb) = (r.cq(4, false), r.cq(4, false));
    let mut a = r.qp(RC, &ca, 3, 3);
    let b = r.qp(RC, &cb, 3, 3);
    let lid = r.lid();
    r.bring_up(&a, b.n, lid, 7, 7);
    r.set = other;
    r.bring_up(&b, a.n, lid, 7, 7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, ALL);
    for _ in 0..3 {
        let w = cat(&[&raddr(baddr, bk), &sge(32, ak, aaddr)]);
        r.post_send(&mut a, wqe_op::RDMA_WRITE, 0, &w);
        assert_eq!(r.poll(&mut ca).unwrap().opcode, cqe_op::REQ);
    }
    let w = cat(&[&raddr(baddr, bk), &sge(32, ak, aaddr)]);
    r.post_send(&mut a, wqe_op::RDMA_READ, 0, &w);
    assert_eq!(r.poll(&mut ca).unwrap().opcode, cqe_op::REQ);
    // The responder's set counted the requests; the requester's saw none.
    assert_eq!(r.q_counter(other, counter::RX_WRITE_REQUESTS), 3);
    assert_eq!(r.q_counter(other, counter::RX_READ_REQUESTS), 1);
    assert_eq!(r.q_counter(COUNTER_SET, counter::RX_WRITE_REQUESTS), 0);
    // A write B's key refuses: an error on each side, then the flush of A's next request.
    let w = cat(&[&raddr(baddr, bk + 0x3000), &sge(32, ak, aaddr)]);
    r.post_send(&mut a, wqe_op::RDMA_WRITE, 0, &w);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(16, ak, aaddr));
    assert_eq!(r.poll(&mut ca).unwrap().syndrome, 0x13);
    assert_eq!(r.poll(&mut ca).unwrap().syndrome, 0x05);
    assert_eq!(r.q_counter(other, counter::RESP_REMOTE_ACCESS_ERRORS), 1);
    assert_eq!(r.q_counter(COUNTER_SET, counter::REQ_REMOTE_ACCESS_ERRORS), 1);
    assert_eq!(r.q_counter(COUNTER_SET, counter::REQ_CQE_ERROR), 1);
    assert_eq!(r.q_counter(COUNTER_SET, counter::REQ_CQE_FLUSH_ERROR), 1);
    // A set that does not exist cannot be named.
    let c = r.cq(2, false);
    let d = r.qp(RC, &c, 2, 2);
    let mut m = input(op::RST2INIT_QP, 0, 0x1d0);
    ifc::set(&mut m, NUMBER, u64::from(d.n));
    ifc::set(&mut m, Field::new(0x120, 8), 77);
    assert!(r.t.exec(&m, 16).is_err());
    r.finish();
}

#[test]
fn receiver_not_ready_is_retried_until_a_receive_is_posted_or_the_count_runs_out() {
    let mut r = Rig::new();
    let (mut a, mut ca, mut b, mut cb) = r.rc_pair(7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(32, ak, aaddr));
    assert_eq!(r.poll(&mut ca), None, "no receive: the send waits");
    assert!(r.t.dev.firmware.datapath.next_deadline().is_some());
    let mut at = Instant::now();
    at += RNR_DELAY * 2;
    r.tick(at);
    assert_eq!(r.poll(&mut ca), None, "still no receive");
    r.post_recv(&mut b, 64, bk, baddr);
    at += RNR_DELAY * 2;
    r.tick(at);
    assert_eq!(r.poll(&mut cb).unwrap().opcode, cqe_op::RESP_SEND);
    assert_eq!(r.poll(&mut ca).unwrap().opcode, cqe_op::REQ);
    assert_eq!(r.t.dev.firmware.datapath.next_deadline(), None);

    // With no RNR retries the first NAK is an error, and the QP goes to the error state.
    let (mut c, mut cc, _d, _cd) = r.rc_pair(0);
    r.post_send(&mut c, wqe_op::SEND, 0, &sge(32, ak, aaddr));
    let wc = r.poll(&mut cc).unwrap();
    assert_eq!((wc.opcode, wc.syndrome), (cqe_op::REQ_ERR, 0x16));
    assert_eq!(r.state(&c), QpState::Err);
    // Each NAK was one missing receive at the responder; the first pair's two were retried, the
    // second pair's ended the request.
    assert_eq!(r.q_counter(COUNTER_SET, counter::OUT_OF_BUFFER), 3);
    assert_eq!(r.q_counter(COUNTER_SET, counter::RNR_NAK_RETRY_ERR), 2);
    assert_eq!(r.q_counter(COUNTER_SET, counter::REQ_RNR_RETRIES_EXCEEDED), 1);
    assert_eq!(r.q_counter(COUNTER_SET, counter::REQ_CQE_ERROR), 1);
    r.finish();
}

#[test]
fn errors_complete_with_the_device_syndrome_and_flush_the_rest() {
    let mut r = Rig::new();
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE | REMOTE_WRITE);
    let (rk, _) = r.mr(4096, LOCAL_WRITE); // no remote rights

    // (name, first WQE opcode, its segments, expected syndrome)
    let cases: Vec<(&str, u8, Vec<u8>, u8)> = vec![
        (
            "bad lkey",
            wqe_op::SEND,
            sge(16, ak + 0x1000, aaddr).to_vec(),
            0x04,
        ),
        (
            "wrong key variant",
            wqe_op::SEND,
            sge(16, ak ^ 1, aaddr).to_vec(),
            0x04,
        ),
        (
            "bad rkey",
            wqe_op::RDMA_WRITE,
            cat(&[&raddr(baddr, bk + 0x3000), &sge(16, ak, aaddr)]),
            0x13,
        ),
        (
            "write past the region's end",
            wqe_op::RDMA_WRITE,
            cat(&[&raddr(baddr + 4096 - 8, bk), &sge(16, ak, aaddr)]),
            0x13,
        ),
        (
            "write without remote-write right",
            wqe_op::RDMA_WRITE,
            cat(&[&raddr(baddr, rk), &sge(16, ak, aaddr)]),
            0x13,
        ),
        (
            "read without remote-read right",
            wqe_op::RDMA_READ,
            cat(&[&raddr(baddr, bk), &sge(16, ak, aaddr)]),
            0x13,
        ),
    ];
    for (name, opcode, segs, syndrome) in cases {
        let (mut a, mut ca, _b, _cb) = r.rc_pair(7);
        r.post_send(&mut a, opcode, 0, &segs);
        r.post_send(&mut a, wqe_op::SEND, 0, &sge(16, ak, aaddr));
        r.post_send(&mut a, wqe_op::SEND, 0, &sge(16, ak, aaddr));
        let got: Vec<(u8, u8, u16)> = std::iter::from_fn(|| r.poll(&mut ca))
            .map(|w| (w.opcode, w.syndrome, w.counter))
            .collect();
        assert_eq!(
            got,
            vec![
                (cqe_op::REQ_ERR, syndrome, 0),
                (cqe_op::REQ_ERR, 0x05, 1),
                (cqe_op::REQ_ERR, 0x05, 2)
            ],
            "{name}"
        );
        assert_eq!(r.state(&a), QpState::Err, "{name}");
        // WQEs posted in the error state are flushed too.
        r.post_send(&mut a, wqe_op::SEND, 0, &sge(16, ak, aaddr));
        let w = r.poll(&mut ca).unwrap();
        assert_eq!((w.syndrome, w.counter), (0x05, 3), "{name}");
    }

    // A receive too small: the responder reports a length error, the requester an invalid
    // request; both QPs go to the error state and B's other receive is flushed.
    let (mut a, mut ca, mut b, mut cb) = r.rc_pair(7);
    r.post_recv(&mut b, 16, bk, baddr);
    r.post_recv(&mut b, 4096, bk, baddr);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(100, ak, aaddr));
    let w = r.poll(&mut cb).unwrap();
    assert_eq!((w.opcode, w.syndrome, w.counter), (cqe_op::RESP_ERR, 0x01, 0));
    let w = r.poll(&mut cb).unwrap();
    assert_eq!((w.opcode, w.syndrome, w.counter), (cqe_op::RESP_ERR, 0x05, 1));
    let w = r.poll(&mut ca).unwrap();
    assert_eq!((w.opcode, w.syndrome), (cqe_op::REQ_ERR, 0x12));
    assert_eq!((r.state(&a), r.state(&b)), (QpState::Err, QpState::Err));

    // The same on a QP looped back to itself: its request takes the NAK (remote invalid
    // request), not a flush; a receive posted later, in the error state, is flushed at the
    // next tick (the driver rings no doorbell for receives).
    let cl = r.cq(4, false);
    let mut l = r.qp(RC, &cl, 3, 3);
    let lid = r.lid();
    r.bring_up(&l, l.n, lid, 7, 7);
    let mut cl = cl;
    r.post_recv(&mut l, 16, ak, aaddr);
    r.post_send(&mut l, wqe_op::SEND, 0, &sge(100, ak, aaddr));
    let w = r.poll(&mut cl).unwrap();
    assert_eq!((w.opcode, w.syndrome, w.counter), (cqe_op::RESP_ERR, 0x01, 0));
    let w = r.poll(&mut cl).unwrap();
    assert_eq!((w.opcode, w.syndrome), (cqe_op::REQ_ERR, 0x12));
    assert!(r.poll(&mut cl).is_none());
    r.post_recv(&mut l, 64, ak, aaddr);
    assert!(r.poll(&mut cl).is_none(), "not before the tick");
    r.tick(Instant::now() + std::time::Duration::from_millis(20));
    let w = r.poll(&mut cl).unwrap();
    assert_eq!((w.opcode, w.syndrome, w.counter), (cqe_op::RESP_ERR, 0x05, 1));

    // Moving a QP to the error state by command flushes its posted receives.
    let (_a, _ca, mut b, mut cb) = r.rc_pair(7);
    r.post_recv(&mut b, 64, bk, baddr);
    let mut m = input(op::QP_2ERR_QP, 0, 0x1d0);
    ifc::set(&mut m, NUMBER, u64::from(b.n));
    r.t.exec(&m, 16).unwrap();
    let w = r.poll(&mut cb).unwrap();
    assert_eq!((w.opcode, w.syndrome), (cqe_op::RESP_ERR, 0x05));
    r.finish();
}

#[test]
fn a_request_nobody_answers_ends_in_a_retry_exceeded_error() {
    let mut r = Rig::new();
    let mut ca = r.cq(2, false);
    let mut a = r.qp(RC, &ca, 2, 2);
    r.bring_up(&a, 0x999, 0x7777, 2, 7); // a LID that no port has, and no wire
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(16, ak, aaddr));
    let mut at = Instant::now();
    for _ in 0..3 {
        assert_eq!(r.poll(&mut ca), None);
        at += ACK_TIMEOUT * 2;
        r.tick(at);
    }
    let w = r.poll(&mut ca).unwrap();
    assert_eq!((w.opcode, w.syndrome), (cqe_op::REQ_ERR, 0x15));
    // Two timeouts retried, the third past the retry count of 2.
    assert_eq!(r.q_counter(COUNTER_SET, counter::LOCAL_ACK_TIMEOUT_ERR), 2);
    assert_eq!(
        r.q_counter(COUNTER_SET, counter::REQ_TRANSPORT_RETRIES_EXCEEDED),
        1
    );
    assert_eq!(r.q_counter(COUNTER_SET, counter::REQ_CQE_ERROR), 1);
    r.finish();
}

#[test]
fn every_ring_wraps_with_owner_parity_and_128_byte_cqes() {
    let mut r = Rig::new();
    // A CQ of 4 entries of 128 bytes shared by both QPs; SQs of 4 blocks, RQs of 4 entries.
    let mut cq = r.cq(2, true);
    let mut a = r.qp(RC, &cq, 2, 2);
    let mut b = r.qp(RC, &cq, 2, 2);
    let lid = r.lid();
    r.bring_up(&a, b.n, lid, 7, 7);
    r.bring_up(&b, a.n, lid, 7, 7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE);
    for round in 0..11u16 {
        let msg = vec![round as u8; 48];
        r.t.mem.write(aaddr, &msg).unwrap();
        r.post_recv(&mut b, 128, bk, baddr);
        if round % 3 == 2 {
            // Inline data making a two-block WQE, which wraps when it starts at block 3.
            let mut inline = vec![0u8; 4 + 80];
            inline[..4].copy_from_slice(&(0x8000_0000u32 | 80).to_be_bytes());
            inline[4..].fill(round as u8);
            r.post_send(&mut a, wqe_op::SEND, 0, &inline);
        } else {
            r.post_send(&mut a, wqe_op::SEND, 0, &sge(48, ak, aaddr));
        }
        let first = r.poll(&mut cq).unwrap_or_else(|| panic!("round {round}: no CQE"));
        let second = r.poll(&mut cq).unwrap();
        assert_eq!(
            (first.opcode, second.opcode),
            (cqe_op::RESP_SEND, cqe_op::REQ),
            "round {round}"
        );
        let len = if round % 3 == 2 { 80 } else { 48 };
        assert_eq!(first.byte_cnt, len);
        let mut got = vec![0u8; len as usize];
        r.t.mem.read(baddr, &mut got).unwrap();
        assert!(got.iter().all(|&x| x == round as u8), "round {round}");
        assert_eq!(
            second.counter,
            a.sq_pi.wrapping_sub(if round % 3 == 2 { 2 } else { 1 })
        );
        assert_eq!(r.poll(&mut cq), None);
    }
    assert!(cq.ci > 16, "the CQ wrapped several times");
    assert_eq!(r.state(&a), QpState::Rts);
    r.finish();
}

/// MODIFY_CQ resizing `cq` to `1 << log_size` entries in a new buffer, as C's
/// `mlx5_ib_resize_cq` issues it; returns the new buffer, or the failure.
fn resize(r: &mut Rig, cq: &Cq, log_size: u32) -> Result<u64, crate::test_driver::Failure> {
    let bytes = cq.stride << log_size;
    let npages = bytes.div_ceil(4096) as usize;
    let buf = r.t.alloc_pages(npages);
    for i in 0..1u64 << log_size {
        r.t.mem
            .write(buf + i * cq.stride + cq.stride - 1, &[0xf0])
            .unwrap();
    }
    let mut m = input(op::MODIFY_CQ, 1, 0x110 + npages * 8);
    ifc::set(&mut m, NUMBER, u64::from(cq.n));
    ifc::set(&mut m, Field::new(0x60, 32), 0b111);
    ifc::set(&mut m, Field::new(0x88, 3), u64::from(cq.stride == 128));
    ifc::set(&mut m, Field::new(0xe3, 5), u64::from(log_size));
    for k in 0..npages {
        let a = buf + k as u64 * 4096;
        m[0x110 + k * 8..0x118 + k * 8].copy_from_slice(&a.to_be_bytes());
    }
    r.t.exec(&m, 16).map(|_| buf)
}

#[test]
fn a_resized_cq_ends_its_old_ring_with_a_resize_entry_and_goes_on_in_the_new_one() {
    let mut r = Rig::new();
    // One CQ of 4 entries for both QPs.
    let mut cq = r.cq(2, false);
    let mut a = r.qp(RC, &cq, 3, 3);
    let mut b = r.qp(RC, &cq, 3, 3);
    let lid = r.lid();
    r.bring_up(&a, b.n, lid, 7, 7);
    r.bring_up(&b, a.n, lid, 7, 7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE);
    // Four entries fill the old ring; the first two are polled (their slots take the resize
    // entry).
    r.post_recv(&mut b, 64, bk, baddr);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(8, ak, aaddr));
    r.post_recv(&mut b, 64, bk, baddr);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(8, ak, aaddr));
    assert_eq!(r.poll(&mut cq).map(|w| w.opcode), Some(cqe_op::RESP_SEND));
    assert_eq!(r.poll(&mut cq).map(|w| w.opcode), Some(cqe_op::REQ));
    // Two outstanding: a new ring of 2 cannot hold them and the resize entry.
    assert!(matches!(
        resize(&mut r, &cq, 1),
        Err(crate::test_driver::Failure::Status(0x40, _))
    ));
    let new_buf = resize(&mut r, &cq, 4).unwrap();
    // The old ring: the two outstanding entries, then the resize entry at producer index 4.
    assert_eq!(r.poll(&mut cq).map(|w| w.opcode), Some(cqe_op::RESP_SEND));
    assert_eq!(r.poll(&mut cq).map(|w| w.opcode), Some(cqe_op::REQ));
    assert_eq!(r.poll(&mut cq).map(|w| w.opcode), Some(cqe_op::RESIZE_CQ));
    assert_eq!(r.poll(&mut cq), None, "the old ring ends there");
    // The new ring of 16 goes on at index 5, and wraps with its own owner parity.
    cq.buf = new_buf;
    cq.log_size = 4;
    for round in 0..20 {
        r.post_recv(&mut b, 64, bk, baddr);
        r.post_send(&mut a, wqe_op::SEND, 0, &sge(8, ak, aaddr));
        let got = (r.poll(&mut cq), r.poll(&mut cq));
        assert_eq!(
            (got.0.map(|w| w.opcode), got.1.map(|w| w.opcode)),
            (Some(cqe_op::RESP_SEND), Some(cqe_op::REQ)),
            "round {round}"
        );
    }
    assert_eq!(cq.ci, 5 + 40);
    let dp = &r.t.dev.firmware.datapath;
    assert_eq!((dp.cq_resizes, dp.cq_most_carried), (1, 2));
    // An unknown CQ and an unknown op_mod are refused.
    let mut m = input(op::MODIFY_CQ, 1, 0x118);
    ifc::set(&mut m, NUMBER, 0xabcd);
    assert!(matches!(
        r.t.exec(&m, 16),
        Err(crate::test_driver::Failure::Status(0x5, _))
    ));
    let mut m = input(op::MODIFY_CQ, 2, 0x118);
    ifc::set(&mut m, NUMBER, u64::from(cq.n));
    assert!(matches!(
        r.t.exec(&m, 16),
        Err(crate::test_driver::Failure::Status(0x3, _))
    ));
    r.finish();
}

#[test]
fn a_fatal_error_halts_the_data_path_until_a_reset() {
    let mut r = Rig::new();
    let (mut a, mut ca, mut b, mut cb) = r.rc_pair(7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE);
    r.t.mem.write(aaddr, &[0x5a; 8]).unwrap();
    r.post_recv(&mut b, 64, bk, baddr);
    r.t.dev.set_health(0xb, true);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(8, ak, aaddr));
    r.tick(Instant::now() + ACK_TIMEOUT * 10);
    // Nothing executed, nothing written: no data, no completion on either side.
    let mut got = [0u8; 8];
    r.t.mem.read(baddr, &mut got).unwrap();
    assert_eq!(got, [0; 8]);
    assert_eq!(r.poll(&mut ca), None);
    assert_eq!(r.poll(&mut cb), None);
    // Not a fatal one: the device runs again (a doorbell now executes the queued send).
    r.t.dev.set_health(0x8, false);
    r.post_recv(&mut b, 64, bk, baddr);
    r.post_send(&mut a, wqe_op::SEND, 0, &sge(8, ak, aaddr));
    assert_eq!(r.poll(&mut cb).map(|w| w.opcode), Some(cqe_op::RESP_SEND));
    r.finish();
}

#[test]
fn a_full_cq_overruns_with_a_cq_error_event() {
    let mut r = Rig::new();
    let (mut a, _ca, mut b, mut cb) = r.rc_pair(7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE);
    // B's CQ has 16 entries; 17 receives without polling overrun it.
    for _ in 0..8 {
        r.post_recv(&mut b, 64, bk, baddr);
    }
    for i in 0..17u32 {
        if i == 8 {
            for _ in 0..8 {
                r.post_recv(&mut b, 64, bk, baddr);
            }
        }
        if i == 16 {
            r.post_recv(&mut b, 64, bk, baddr);
        }
        r.post_send(&mut a, wqe_op::SEND, 0, &sge(8, ak, aaddr));
    }
    let mut eqe_types = vec![];
    for i in 0..8u64 {
        let mut e = [0u8; 64];
        r.t.mem.read(r.eq_page + i * 64, &mut e).unwrap();
        eqe_types.push(e[1]);
    }
    assert!(eqe_types.contains(&0x04), "CQ error event posted: {eqe_types:x?}");
    let n = std::iter::from_fn(|| r.poll(&mut cb)).count();
    assert_eq!(n, 16, "the 17th completion was lost");
    r.finish();
}

#[test]
fn atomics_use_host_order_when_the_driver_chooses_it() {
    let mut r = Rig::new();
    // The driver reads the atomic caps and sets requester endianness mode 1 (host order).
    let caps =
        r.t.exec(&input(op::QUERY_HCA_CAP, 3 << 1 | 1, 16), 0x10 + 4096)
            .unwrap();
    assert_eq!(ifc::get(&caps[0x10..], Field::new(0x46, 1)), 1, "mode 1 offered");
    // As the C driver does: a page with only the mode set; the read-only fields stay.
    let mut set = input(op::SET_HCA_CAP, 3 << 1, 0x10 + 4096);
    ifc::set(&mut set[0x10..], Field::new(0x40, 2), 1);
    r.t.exec(&set, 16).unwrap();
    let cur =
        r.t.exec(&input(op::QUERY_HCA_CAP, 3 << 1 | 1, 16), 0x10 + 4096)
            .unwrap();
    assert_eq!(
        ifc::get(&cur[0x10..], Field::new(0x90, 16)),
        0b11,
        "operations kept"
    );
    assert_eq!(ifc::get(&cur[0x10..], Field::new(0x40, 2)), 1, "mode set");
    let (mut a, mut ca, _b, _cb) = r.rc_pair(7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = r.mr(4096, ALL);
    r.t.mem.write(baddr, &0x1_0000_0001u64.to_le_bytes()).unwrap();
    let mut atomic = [0u8; 16];
    atomic[..8].copy_from_slice(&0xffu64.to_be_bytes()); // the WQE stays big-endian
    let w = cat(&[&raddr(baddr, bk), &atomic, &sge(8, ak, aaddr)]);
    r.post_send(&mut a, wqe_op::ATOMIC_FA, 0, &w);
    assert_eq!(r.poll(&mut ca).unwrap().opcode, cqe_op::REQ);
    let le = |r: &Rig, at: u64| {
        let mut v = [0u8; 8];
        r.t.mem.read(at, &mut v).unwrap();
        u64::from_le_bytes(v)
    };
    assert_eq!((le(&r, baddr), le(&r, aaddr)), (0x1_0000_0100, 0x1_0000_0001));
    r.finish();
}

/// Carries packets between two devices until both are quiet, as the wire between two models
/// does.
fn shuttle(x: &mut Rig, y: &mut Rig) {
    loop {
        let to_y = x.t.dev.firmware.datapath.take_outbound();
        let to_x = y.t.dev.firmware.datapath.take_outbound();
        if to_x.is_empty() && to_y.is_empty() {
            return;
        }
        for (packets, r) in [(to_y, &mut *y), (to_x, &mut *x)] {
            for p in packets {
                let Rig { t, .. } = r;
                super::receive(&mut t.dev.firmware, &mut t.mem, p);
            }
        }
    }
}

#[test]
fn queue_pairs_on_two_devices_reach_each_other_over_the_wire() {
    let mut x = Rig::with_guid_seed(1);
    let mut y = Rig::with_guid_seed(2);
    assert_ne!(x.lid(), y.lid());
    x.t.dev.firmware.datapath.wire = true;
    y.t.dev.firmware.datapath.wire = true;
    let mut cx = x.cq(4, false);
    let mut cy = y.cq(4, false);
    let mut a = x.qp(RC, &cx, 3, 3);
    let mut b = y.qp(RC, &cy, 3, 3);
    let (xl, yl) = (x.lid(), y.lid());
    x.bring_up(&a, b.n, yl, 7, 7);
    y.bring_up(&b, a.n, xl, 7, 7);
    let (ak, aaddr) = x.mr(4096, LOCAL_WRITE);
    let (bk, baddr) = y.mr(4096, ALL);
    x.t.mem.write(aaddr, b"over the wire").unwrap();
    // A SEND before the receive is posted: a receiver-not-ready NAK crosses back, and the
    // retry after the receive arrives.
    x.post_send(&mut a, wqe_op::SEND, 0, &sge(13, ak, aaddr));
    shuttle(&mut x, &mut y);
    assert_eq!(x.poll(&mut cx), None);
    y.post_recv(&mut b, 64, bk, baddr);
    let later = Instant::now() + RNR_DELAY * 2;
    x.tick(later);
    shuttle(&mut x, &mut y);
    assert_eq!(y.poll(&mut cy).unwrap().byte_cnt, 13);
    let mut got = [0u8; 13];
    y.t.mem.read(baddr, &mut got).unwrap();
    assert_eq!(&got, b"over the wire");
    assert_eq!(x.poll(&mut cx).unwrap().opcode, cqe_op::REQ);
    // An RDMA READ of Y's memory into X's.
    let w = cat(&[&raddr(baddr, bk), &sge(13, ak, aaddr + 100)]);
    x.post_send(&mut a, wqe_op::RDMA_READ, 0, &w);
    shuttle(&mut x, &mut y);
    assert_eq!(x.poll(&mut cx).unwrap().byte_cnt, 13);
    let mut got = [0u8; 13];
    x.t.mem.read(aaddr + 100, &mut got).unwrap();
    assert_eq!(&got, b"over the wire");
    // With the wire down, a request is lost and ends in a retry-exceeded error.
    x.t.dev.firmware.datapath.wire = false;
    x.post_send(&mut a, wqe_op::SEND, 0, &sge(13, ak, aaddr));
    let mut at = Instant::now();
    for _ in 0..9 {
        at += ACK_TIMEOUT * 2;
        x.tick(at);
    }
    let w = x.poll(&mut cx).unwrap();
    assert_eq!((w.opcode, w.syndrome), (cqe_op::REQ_ERR, 0x15));
    x.finish();
    y.finish();
}

#[test]
fn a_shared_receive_queue_follows_its_free_list_around_the_ring() {
    let mut r = Rig::new();
    // An RMP of 4 WQEs of 64 bytes (a 16-byte link, then one data segment), linked in a circle.
    let srq_buf = r.t.alloc_pages(1);
    let srq_dbr = r.t.alloc_pages(1);
    let mut c = input(op::CREATE_RMP, 0, 0x118);
    ifc::set(&mut c, Field::new(0x2c8, 24), r.pd);
    ifc::set(&mut c, Field::new(0x300, 64), srq_dbr);
    ifc::set(&mut c, Field::new(0x38c, 4), 6);
    ifc::set(&mut c, Field::new(0x39b, 5), 2);
    c[0x110..0x118].copy_from_slice(&srq_buf.to_be_bytes());
    let srqn = created(&r.t.exec(&c, 16).unwrap());
    let (bk, baddr) = r.mr(4096, LOCAL_WRITE);
    for i in 0..4u64 {
        let mut w = [0u8; 64];
        w[2..4].copy_from_slice(&(((i + 1) % 4) as u16).to_be_bytes());
        w[16..32].copy_from_slice(&sge(64, bk, baddr + i * 64));
        r.t.mem.write(srq_buf + i * 64, &w).unwrap();
    }
    // B receives through the RMP; A sends to B.
    let mut cq = r.cq(4, false);
    let mut a = r.qp(RC, &cq, 3, 3);
    let mut qc = input(op::CREATE_QP, 0, 0x118);
    let b_buf = r.t.alloc_pages(1);
    let b_dbr = r.t.alloc_pages(1);
    for (f, v) in [
        (Field::new(0xc8, 8), RC),
        (Field::new(0xe8, 24), r.pd),
        (Field::new(0x128, 24), r.uar),
        (Field::new(0x111, 4), 3),
        (Field::new(0x4a8, 24), u64::from(cq.n)),
        (Field::new(0x5a8, 24), u64::from(cq.n)),
        (Field::new(0x5c0, 64), b_dbr),
        (Field::new(0x625, 3), 1), // receives from an SRQ
        (Field::new(0x628, 24), u64::from(srqn)),
    ] {
        ifc::set(&mut qc, f, v);
    }
    qc[0x110..0x118].copy_from_slice(&b_buf.to_be_bytes());
    let b = created(&r.t.exec(&qc, 16).unwrap());
    let lid = r.lid();
    let b_qp = Qp {
        n: b,
        buf: b_buf,
        dbr: b_dbr,
        rq_entries: 1,
        sq_entries: 8,
        sq_pi: 0,
        rq_pi: 0,
    };
    r.bring_up(&a, b, lid, 7, 7);
    r.bring_up(&b_qp, a.n, lid, 7, 7);
    let (ak, aaddr) = r.mr(4096, LOCAL_WRITE);
    // An EQ for SRQ limit events; the RMP armed with limit 4 (MODIFY_RMP with the lwm bit).
    let (_, limit_eq) = create_eq(&mut r.t, r.uar, 1 << 0x14, 0);
    let mut m = input(op::MODIFY_RMP, 0, 0x100 + 0x780 / 8);
    ifc::set(&mut m, Field::new(0x48, 24), u64::from(srqn));
    ifc::set(&mut m, Field::new(0xbf, 1), 1);
    ifc::set(&mut m, Field::new(0x2b0, 16), 4);
    r.t.exec(&m, 16).unwrap();
    // QUERY_RMP reads the armed limit back (C's `mlx5_ib_query_srq`), ready.
    let mut q = input(op::QUERY_RMP, 0, 16);
    ifc::set(&mut q, Field::new(0x48, 24), u64::from(srqn));
    let armed = r.t.exec(&q, 0x110).unwrap();
    assert_eq!(ifc::get(&armed, Field::new(0x2b0, 16)), 4);
    assert_eq!(ifc::get(&armed, Field::new(0x108, 4)), 1);
    // Ten messages through a ring of four: the driver re-posts each WQE as it is consumed
    // (the counter in the doorbell record says how many were posted in all).
    let mut posted = 4u32;
    r.t.mem.write(srq_dbr, &posted.to_be_bytes()).unwrap();
    for k in 0..10u32 {
        r.t.mem.write(aaddr, &[k as u8; 16]).unwrap();
        r.post_send(&mut a, wqe_op::SEND, 0, &sge(16, ak, aaddr));
        let w = r
            .poll(&mut cq)
            .unwrap_or_else(|| panic!("message {k}: no receive completion"));
        assert_eq!(
            (w.opcode, u32::from(w.counter)),
            (cqe_op::RESP_SEND, k % 4),
            "message {k}"
        );
        let mut got = [0u8; 16];
        r.t.mem.read(baddr + u64::from(k % 4) * 64, &mut got).unwrap();
        assert_eq!(got, [k as u8; 16]);
        assert_eq!(r.poll(&mut cq).unwrap().opcode, cqe_op::REQ);
        posted += 1;
        r.t.mem.write(srq_dbr, &posted.to_be_bytes()).unwrap();
    }
    // The first message left 3 WQEs, below the limit: one event, naming the RMP; then disarmed.
    let mut e = [0u8; 128];
    r.t.mem.read(limit_eq, &mut e).unwrap();
    assert_eq!(e[1], 0x14, "SRQ limit event");
    assert_eq!(u32::from_be_bytes(e[0x38..0x3c].try_into().unwrap()), srqn);
    assert_eq!(e[64 + 1], 0, "only one event: the limit must be armed again");
    let fired = r.t.exec(&q, 0x110).unwrap();
    assert_eq!(
        ifc::get(&fired, Field::new(0x2b0, 16)),
        0,
        "disarmed once it fired"
    );
    // The QP on the SRQ moved to the error state: the last WQE reached event names it, once
    // (a second move to error raises nothing), as drivers wait for it before draining.
    let (_, last_eq) = create_eq(&mut r.t, r.uar, 1 << 0x13, 0);
    for _ in 0..2 {
        let mut m = input(op::QP_2ERR_QP, 0, 0x1d0);
        ifc::set(&mut m, NUMBER, u64::from(b));
        r.t.exec(&m, 16).unwrap();
    }
    let mut e = [0u8; 128];
    r.t.mem.read(last_eq, &mut e).unwrap();
    assert_eq!(e[1], 0x13, "last WQE reached event");
    assert_eq!(u32::from_be_bytes(e[0x38..0x3c].try_into().unwrap()), b);
    assert_eq!(e[64 + 1], 0, "only one event per entry into the error state");
    r.finish();
}

#[test]
fn a_ud_qp_attaches_to_a_multicast_gid_and_a_destroyed_one_leaves_the_group() {
    use crate::test_driver::Failure;
    let status = |r: Result<Vec<u8>, Failure>| match r {
        Err(Failure::Status(s, _)) => Some(s),
        _ => None,
    };
    let mcg = |o: u16, qpn: u32, gid: [u8; 16]| {
        let mut m = input(o, 0, 0x20);
        ifc::set(&mut m, NUMBER, u64::from(qpn));
        m[0x10..0x20].copy_from_slice(&gid);
        m
    };
    let mut r = Rig::new();
    let cq = r.cq(4, false);
    let ud = r.qp(0x2, &cq, 3, 3);
    let rc = r.qp(RC, &cq, 3, 3);
    let group = [
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    ];
    let mut unicast = group;
    unicast[0] = 0xfe;
    // Only a UD QP, only a multicast GID (bad parameter, 0x3).
    assert_eq!(
        status(r.t.exec(&mcg(op::ATTACH_TO_MCG, rc.n, group), 16)),
        Some(0x3)
    );
    assert_eq!(
        status(r.t.exec(&mcg(op::ATTACH_TO_MCG, ud.n, unicast), 16)),
        Some(0x3)
    );
    // Detaching what is not attached is refused; attached, it detaches once.
    assert_eq!(
        status(r.t.exec(&mcg(op::DETACH_FROM_MCG, ud.n, group), 16)),
        Some(0x3)
    );
    r.t.exec(&mcg(op::ATTACH_TO_MCG, ud.n, group), 16).unwrap();
    r.t.exec(&mcg(op::DETACH_FROM_MCG, ud.n, group), 16).unwrap();
    assert_eq!(
        status(r.t.exec(&mcg(op::DETACH_FROM_MCG, ud.n, group), 16)),
        Some(0x3)
    );
    // Attached again, then destroyed: the group forgets it.
    r.t.exec(&mcg(op::ATTACH_TO_MCG, ud.n, group), 16).unwrap();
    assert!(r.t.dev.firmware.datapath.groups.contains_key(&group));
    for qp in [&ud, &rc] {
        let mut d = input(op::DESTROY_QP, 0, 16);
        ifc::set(&mut d, NUMBER, u64::from(qp.n));
        r.t.exec(&d, 16).unwrap();
    }
    assert!(r.t.dev.firmware.datapath.groups.is_empty());
    assert!(super::multicast::is_multicast(0xc001) && super::multicast::is_multicast(0xfffe));
    assert!(!super::multicast::is_multicast(0xbfff) && !super::multicast::is_multicast(0xffff));
    let mut d = input(op::DESTROY_CQ, 0, 16);
    ifc::set(&mut d, NUMBER, u64::from(cq.n));
    r.t.exec(&d, 16).unwrap();
    r.finish();
}
