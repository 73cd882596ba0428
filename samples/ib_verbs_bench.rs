// SPDX-License-Identifier: GPL-2.0

//! Data-path micro-benchmark (test-only): an `ib_core` client that, on every `mlx5_*` device,
//! makes a PD, a CQ, an RC QP connected to itself and a DMA MR, then times with the monotonic
//! clock, in nanoseconds:
//!
//! - `post1_ns`: one `post_send` of one 64-byte SEND (every 16th signalled), the matching
//!   receives posted and the CQ drained outside the timed section (median over rounds of the
//!   mean of 16 calls);
//! - `post16_ns`: one `post_send` of a list of 16 SENDs (the last signalled);
//! - `post16p_ns`: the same 16 SENDs prepared once (`Qp::prepare_send`) and posted with one
//!   `post_prepared` per call (the C stack has no such verb: compared with its `post16_ns`);
//! - `poll1_ns`, `poll16_ns`: per completion, polling completions already in the CQ with room
//!   for 1 or 16 per call;
//! - `rate64`, `rate4096`: SEND messages per second of 64 and 4096 bytes, posting and polling in
//!   a loop for `rate_ms` with at most `window` sends outstanding;
//! - `lock_ns`, for reference: one lock and unlock of an uncontended IRQ-safe spinlock (what
//!   the driver's post and poll paths take; the C twin times `spin_lock_irqsave`).
//!
//! It prints `# bench <name> <value>` lines that `tools/bench/verbs.py` reads, and frees
//! everything before `add` returns. `tools/verbs-twin/ib_verbs_bench.c` does the same on the C
//! stack; under TCG only the ratio of the two means something.

use ib_core::{
    device::registry::{Client, ClientRegistration},
    device::IbDevice,
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion},
    verbs::{
        Access, Cq, CqInit, Mr, Pd, Qp, QpAttr, QpAttrField as F, QpCap, QpInit, QpState, QpType,
    },
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::Arc,
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

module! {
    type: VerbsBench,
    name: "ib_verbs_bench",
    authors: ["rdma-rs developers"],
    description: "Data-path micro-benchmark of kernel verbs (test-only)",
    license: "GPL",
    params: {
        rounds: u32 {
            default: 64,
            description: "Rounds of each per-call measurement (1 to 4096)",
        },
        rate_ms: u32 {
            default: 1000,
            description: "Milliseconds of each message-rate measurement (1 to 10000)",
        },
        window: u32 {
            default: 32,
            description: "Outstanding SENDs in the message-rate measurement (1 to 64)",
        },
    },
}

/// Work requests per timed batch (and the signalling interval).
const BATCH: usize = 16;
/// Send queue depth.
const SQ: u32 = 64;
/// Receive queue depth.
const RQ: u32 = 256;
/// CQ entries.
const CQE: u32 = 1024;
/// Largest message.
const MSG: usize = 4096;
/// Receives kept posted in the message-rate loop.
const RATE_RX: usize = 128;
/// How long to wait for completions before giving up.
const DRAIN_TIMEOUT_NS: i64 = 5_000_000_000;

/// Instruction-count markers for `make bench` (tools/bench/insn_marks.c, a QEMU plugin): an
/// 8-byte no-op, `nopl MARK(%rax,%rax,1)` with `MARK = 0x52444d00 | end << 7 | id`; the plugin
/// counts the guest instructions from an opening marker to the closing one of the same id. The
/// C twin (tools/verbs-twin/ib_verbs_bench.c) places the same markers around the same code.
mod mark {
    /// Around one `post_send` of one WR.
    pub(crate) const POST1: u32 = 1;
    /// Around one `post_send` of a list of 16 WRs.
    pub(crate) const POST16: u32 = 2;
    /// Around the polls of a round's 32 completions with room for 1 (and the empty poll that
    /// ends it).
    pub(crate) const POLL1: u32 = 3;
    /// The same with room for 16.
    pub(crate) const POLL16: u32 = 4;
    /// Around one `post_prepared` of 16 prepared WRs.
    pub(crate) const POST16P: u32 = 5;
    /// The marker's code base and the closing bit.
    pub(crate) const MAGIC: u32 = 0x5244_4d00;
    pub(crate) const END: u32 = 0x80;
}

/// Places the marker with code `$code` (a constant) here; as the C twin's `asm volatile` with a
/// memory clobber, the compiler moves no memory access across it.
macro_rules! mark {
    ($code:expr) => {
        // SAFETY: an 8-byte no-op: it reads and writes no register, flag or memory, and
        // touches no stack.
        unsafe {
            core::arch::asm!(
                ".byte 0x0f, 0x1f, 0x84, 0x00",
                ".long {code}",
                code = const $code,
                options(nostack, preserves_flags)
            )
        }
    };
}

/// Opens the instruction-count interval `$id`.
macro_rules! mark_begin {
    ($id:expr) => {
        mark!(mark::MAGIC | $id)
    };
}

/// Closes the instruction-count interval `$id`.
macro_rules! mark_end {
    ($id:expr) => {
        mark!(mark::MAGIC | mark::END | $id)
    };
}

/// Nanoseconds since `t0`.
fn since(t0: &Instant<Monotonic>) -> i64 {
    t0.elapsed().as_nanos()
}

/// The median of `v` (0 when empty), `v` sorted in place on the way (a heapsort of its own:
/// core's sort ends in a panic objtool does not know as one).
fn median(v: &mut [i64]) -> i64 {
    fn sift_down(v: &mut [i64], mut root: usize, end: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= end {
                return;
            }
            if child + 1 < end && v[child] < v[child + 1] {
                child += 1;
            }
            if v[root] >= v[child] {
                return;
            }
            v.swap(root, child);
            root = child;
        }
    }
    let n = v.len();
    for start in (0..n / 2).rev() {
        sift_down(v, start, n);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift_down(v, 0, end);
    }
    v.get(n / 2).copied().unwrap_or(0)
}

/// What one benchmark run works with.
struct Bench<'a> {
    qp: &'a Qp,
    cq: &'a Cq,
    /// Whole tx buffer (4096 bytes) and its first 64 bytes.
    tx: Sge,
    tx64: Sge,
    /// The rx buffer: every receive lands there (the content is not checked).
    rx: Sge,
}

impl Bench<'_> {
    /// Posts `n` receives of the whole rx buffer, up to [`BATCH`] per call.
    fn post_recvs(&self, mut n: usize) -> Result {
        let sg = [self.rx];
        let wr = RecvWr {
            wr_id: 0,
            sg_list: &sg,
        };
        let wrs = [wr; BATCH];
        while n > 0 {
            let k = n.min(BATCH);
            self.qp.post_recv(&wrs[..k]).map_err(|e| e.err)?;
            n -= k;
        }
        Ok(())
    }

    /// A SEND of `sg` (signalled if `signaled`).
    fn send<'s>(sg: &'s [Sge], signaled: bool) -> SendWr<'s> {
        SendWr {
            wr_id: 1,
            opcode: SendOpcode::Send,
            sg_list: sg,
            send_flags: if signaled { send_flags::SIGNALED } else { 0 },
            ..SendWr::default()
        }
    }

    /// Polls until `n` completions came, all successful (`EIO` otherwise, `ETIMEDOUT` after
    /// [`DRAIN_TIMEOUT_NS`]).
    fn drain(&self, n: usize) -> Result {
        let mut wc = [WorkCompletion::default(); BATCH];
        let mut got = 0;
        let t0 = Instant::<Monotonic>::now();
        while got < n {
            let k = self.cq.poll(&mut wc)?;
            if wc[..k].iter().any(|w| w.status != WcStatus::Success) {
                return Err(EIO);
            }
            got += k;
            if k == 0 && since(&t0) > DRAIN_TIMEOUT_NS {
                return Err(ETIMEDOUT);
            }
        }
        Ok(())
    }

    /// `post1_ns`: one WR per call, every 16th signalled.
    fn post1(&self, rounds: usize) -> Result<i64> {
        let sg = [self.tx64];
        let mut samples = KVec::with_capacity(rounds, GFP_KERNEL)?;
        for _ in 0..rounds {
            self.post_recvs(BATCH)?;
            let t0 = Instant::<Monotonic>::now();
            for i in 0..BATCH {
                let wr = [Self::send(&sg, i == BATCH - 1)];
                mark_begin!(mark::POST1);
                let r = self.qp.post_send(&wr);
                mark_end!(mark::POST1);
                r.map_err(|e| e.err)?;
            }
            let dt = since(&t0);
            self.drain(BATCH + 1)?;
            samples.push(dt / BATCH as i64, GFP_KERNEL)?;
        }
        Ok(median(&mut samples))
    }

    /// `post16_ns`: a list of 16 WRs per call, the last signalled.
    fn post16(&self, rounds: usize) -> Result<i64> {
        let sg = [self.tx64];
        let mut wrs = [Self::send(&sg, false); BATCH];
        wrs[BATCH - 1] = Self::send(&sg, true);
        let mut samples = KVec::with_capacity(rounds, GFP_KERNEL)?;
        for _ in 0..rounds {
            self.post_recvs(BATCH)?;
            let t0 = Instant::<Monotonic>::now();
            mark_begin!(mark::POST16);
            let r = self.qp.post_send(&wrs);
            mark_end!(mark::POST16);
            r.map_err(|e| e.err)?;
            let dt = since(&t0);
            self.drain(BATCH + 1)?;
            samples.push(dt, GFP_KERNEL)?;
        }
        Ok(median(&mut samples))
    }

    /// `post16p_ns`: the list of `post16` prepared once, posted with `post_prepared`.
    fn post16p(&self, rounds: usize) -> Result<i64> {
        let sg = [self.tx64];
        let mut wrs = KVec::with_capacity(BATCH, GFP_KERNEL)?;
        for i in 0..BATCH {
            wrs.push(
                self.qp.prepare_send(&Self::send(&sg, i == BATCH - 1))?,
                GFP_KERNEL,
            )?;
        }
        let mut samples = KVec::with_capacity(rounds, GFP_KERNEL)?;
        for _ in 0..rounds {
            self.post_recvs(BATCH)?;
            let t0 = Instant::<Monotonic>::now();
            mark_begin!(mark::POST16P);
            let r = self.qp.post_prepared(&wrs);
            mark_end!(mark::POST16P);
            r.map_err(|e| e.err)?;
            let dt = since(&t0);
            self.drain(BATCH + 1)?;
            samples.push(dt, GFP_KERNEL)?;
        }
        Ok(median(&mut samples))
    }

    /// Per CQE, polling `room` at a time the 32 completions of 16 signalled SENDs already in
    /// the CQ; returns the median and how many rounds were dropped because not all
    /// completions had come before the timed polls.
    fn poll(&self, rounds: usize, room: usize) -> Result<(i64, usize)> {
        let sg = [self.tx64];
        let wrs = [Self::send(&sg, true); BATCH];
        let mut wc = [WorkCompletion::default(); BATCH];
        let room = room.clamp(1, BATCH);
        let mut samples = KVec::with_capacity(rounds, GFP_KERNEL)?;
        let mut dropped = 0;
        for _ in 0..rounds {
            self.post_recvs(BATCH)?;
            self.qp.post_send(&wrs).map_err(|e| e.err)?;
            // Let the device finish: the timed polls should find every completion there.
            fsleep(Delta::from_millis(2));
            let mut got = 0;
            let mut ok = true;
            let t0 = Instant::<Monotonic>::now();
            if room == 1 {
                mark_begin!(mark::POLL1);
            } else {
                mark_begin!(mark::POLL16);
            }
            let polled = loop {
                let k = match self.cq.poll(&mut wc[..room]) {
                    Ok(0) => break Ok(()),
                    Ok(k) => k,
                    Err(e) => break Err(e),
                };
                ok &= wc[..k].iter().all(|w| w.status == WcStatus::Success);
                got += k;
            };
            if room == 1 {
                mark_end!(mark::POLL1);
            } else {
                mark_end!(mark::POLL16);
            }
            let dt = since(&t0);
            polled?;
            if !ok {
                return Err(EIO);
            }
            if got < 2 * BATCH {
                dropped += 1;
                self.drain(2 * BATCH - got)?;
            } else {
                samples.push(dt / got as i64, GFP_KERNEL)?;
            }
        }
        Ok((median(&mut samples), dropped))
    }

    /// Messages per second of `sg`'s size for `ms` milliseconds, at most `window` outstanding
    /// (every SEND signalled, every receive reposted as it completes).
    fn rate(&self, sg: Sge, ms: u32, window: usize) -> Result<i64> {
        let sgl = [sg];
        let wr = Self::send(&sgl, true);
        let mut wc = [WorkCompletion::default(); BATCH];
        self.post_recvs(RATE_RX)?;
        let mut outstanding = 0usize;
        let mut done = 0i64;
        let mut received = 0usize;
        let limit = i64::from(ms) * 1_000_000;
        let t0 = Instant::<Monotonic>::now();
        let mut elapsed;
        loop {
            elapsed = since(&t0);
            if elapsed >= limit {
                break;
            }
            while outstanding < window {
                self.qp.post_send(&[wr]).map_err(|e| e.err)?;
                outstanding += 1;
            }
            let k = self.cq.poll(&mut wc)?;
            let mut recvs = 0;
            for w in &wc[..k] {
                if w.status != WcStatus::Success {
                    return Err(EIO);
                }
                if w.opcode == WcOpcode::Recv {
                    if w.byte_len != sg.length {
                        return Err(EIO);
                    }
                    recvs += 1;
                } else {
                    outstanding = outstanding.saturating_sub(1);
                    done += 1;
                }
            }
            if recvs > 0 {
                received += recvs;
                self.post_recvs(recvs)?;
            }
        }
        // What is still in flight: the outstanding SENDs and the receives not yet seen (one
        // per SEND posted).
        let posted = done as usize + outstanding;
        self.drain(outstanding + posted.saturating_sub(received))?;
        // The receives left posted: flushed when the QP is destroyed.
        Ok(done * 1_000_000_000 / elapsed.max(1))
    }
}

/// `lock_ns`: ns per lock and unlock of an uncontended [`kernel::sync::SpinLockIrq`], over `n` rounds of
/// [`BATCH`] pairs (the median of the rounds' means).
fn lock_cost(n: usize) -> Result<i64> {
    let lock = KBox::pin_init(new_spinlock_irq!(0u64), GFP_KERNEL)?;
    let mut samples = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        let t0 = Instant::<Monotonic>::now();
        for _ in 0..BATCH {
            *lock.lock() += 1;
        }
        samples.push(since(&t0) / BATCH as i64, GFP_KERNEL)?;
    }
    Ok(median(&mut samples))
}

/// `IB_MTU_4096`.
const MTU_4096: u8 = 5;

/// Moves `qp` to RTS, looped back to itself.
fn connect(qp: &Qp, lid: u16) -> Result {
    let to_init = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        pkey_index: 0,
        ..QpAttr::default()
    };
    qp.modify(&to_init, F::State | F::Port | F::PkeyIndex | F::AccessFlags)?;
    let to_rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: MTU_4096,
        dlid: lid,
        dest_qp_num: qp.qp_num(),
        rq_psn: 0x1234,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ..QpAttr::default()
    };
    qp.modify(
        &to_rtr,
        F::State | F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer,
    )?;
    let to_rts = QpAttr {
        qp_state: QpState::Rts,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        sq_psn: 0x1234,
        max_rd_atomic: 1,
        ..QpAttr::default()
    };
    qp.modify(
        &to_rts,
        F::State | F::Timeout | F::RetryCnt | F::RnrRetry | F::SqPsn | F::MaxQpRdAtomic,
    )
}

/// Makes the objects, runs every measurement and prints the results.
fn run(dev: &Arc<IbDevice>, name: &kernel::str::BStr) -> Result {
    let rounds = module_parameters::rounds.value().clamp(1, 4096) as usize;
    let rate_ms = module_parameters::rate_ms.value().clamp(1, 10_000);
    let window = module_parameters::window.value().clamp(1, SQ) as usize;
    let pd = Pd::alloc(dev, ib_core::kern_name!())?;
    // Before the QP: dropped after it, so no receive still posted can point into freed memory.
    let tx = DmaBuffer::alloc(dev, MSG)?;
    let rx = DmaBuffer::alloc(dev, MSG)?;
    let cq = Cq::create(
        dev,
        &CqInit {
            cqe: CQE,
            comp_vector: 0,
            flags: 0,
        },
        None,
        ib_core::kern_name!(),
    )?;
    let qp = Qp::create(
        &pd,
        QpInit {
            qp_type: QpType::Rc,
            send_cq: cq.clone(),
            recv_cq: cq.clone(),
            cap: QpCap {
                max_send_wr: SQ,
                max_recv_wr: RQ,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            kern_name: ib_core::kern_name!(),
            srq: None,
            event_handler: None,
            port_num: 0,
        },
    )?;
    let mr: Arc<Mr> = Mr::get_dma_mr(&pd, Access::LocalWrite.into())?;
    let lid = u16::try_from(dev.query_port(1)?.lid).map_err(|_| EINVAL)?;
    connect(&qp, lid)?;
    let b = Bench {
        qp: &qp,
        cq: &cq,
        tx: tx.sge(0, MSG as u32, mr.lkey())?,
        tx64: tx.sge(0, 64, mr.lkey())?,
        rx: rx.sge(0, MSG as u32, mr.lkey())?,
    };
    pr_info!(
        "{name}: bench: rounds {rounds}, rate {rate_ms} ms, window {window}; qp {:#x}\n",
        qp.qp_num()
    );
    let post1 = b.post1(rounds)?;
    let post16 = b.post16(rounds)?;
    let post16p = b.post16p(rounds)?;
    let (poll1, dropped1) = b.poll(rounds, 1)?;
    let (poll16, dropped16) = b.poll(rounds, BATCH)?;
    let rate64 = b.rate(b.tx64, rate_ms, window)?;
    let rate4096 = b.rate(b.tx, rate_ms, window)?;
    let lock = lock_cost(rounds)?;
    pr_info!("{name}: # bench post1_ns {post1}\n");
    pr_info!("{name}: # bench post16_ns {post16}\n");
    pr_info!("{name}: # bench post16p_ns {post16p}\n");
    pr_info!("{name}: # bench poll1_ns {poll1}\n");
    pr_info!("{name}: # bench poll16_ns {poll16}\n");
    pr_info!("{name}: # bench rate64 {rate64}\n");
    pr_info!("{name}: # bench rate4096 {rate4096}\n");
    pr_info!("{name}: # bench lock_ns {lock}\n");
    pr_info!(
        "{name}: bench done ({} poll round(s) dropped: completions late)\n",
        dropped1 + dropped16
    );
    Ok(())
}

/// The client.
struct Benchmark;

impl Client for Benchmark {
    type Data = ();

    fn add(&self, dev: &Arc<IbDevice>) -> Result {
        let name = dev.name();
        if !name.starts_with(b"mlx5_") {
            return Ok(());
        }
        let name = kernel::str::BStr::from_bytes(&name);
        if let Err(e) = run(dev, name) {
            pr_err!("{name}: bench failed: err {}\n", e.to_errno());
        }
        Ok(())
    }

    fn remove(&self, _dev: &IbDevice, _data: ()) {}
}

/// The module: the client registration.
#[pin_data]
struct VerbsBench {
    #[pin]
    registration: ClientRegistration<Benchmark>,
}

impl kernel::InPlaceModule for VerbsBench {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            registration <- ClientRegistration::new(Benchmark),
        })
    }
}
