// SPDX-License-Identifier: GPL-2.0

//! RMPP, the reliable multi-packet transaction protocol (IBA 13.6, C's `mad_rmpp.c`): the wire
//! format of its header, how a message longer than one MAD is cut into numbered segments
//! ([`Segmenter`]), and how a receiver puts one back together, acknowledging each window of
//! segments ([`Reassembly`]). The MAD layer posts, times and delivers (`rmpp_flow.rs`); only
//! the arithmetic and the decisions are here, with C's numbers.

use crate::mad::types::{class, get32, hdr, method, put32, Mad, MAD_SIZE};
use kernel::prelude::*;

/// Offsets of the RMPP header's fields (after the common MAD header).
pub mod rhdr {
    /// RMPPVersion.
    pub const VERSION: usize = 24;
    /// RMPPType.
    pub const TYPE: usize = 25;
    /// RRespTime (bits 7..3) and RMPPFlags (bits 2..0).
    pub const RTIME_FLAGS: usize = 26;
    /// RMPPStatus.
    pub const STATUS: usize = 27;
    /// SegmentNumber (32 bits).
    pub const SEG_NUM: usize = 28;
    /// PayloadLength, or NewWindowLast in an ACK (32 bits).
    pub const PAYLEN_NEWWIN: usize = 32;
}

/// The common and RMPP headers (`IB_MGMT_RMPP_HDR`).
pub const RMPP_HDR: usize = 36;
/// A segment's payload as RMPP counts it: everything after its header (`IB_MGMT_RMPP_DATA`).
pub const RMPP_DATA: u32 = (MAD_SIZE - RMPP_HDR) as u32;
/// The RMPP version the MAD layer speaks (`IB_MGMT_RMPP_VERSION`).
pub const VERSION: u8 = 1;

/// RMPPType values.
pub mod kind {
    /// A data segment.
    pub const DATA: u8 = 1;
    /// An acknowledgement.
    pub const ACK: u8 = 2;
    /// The receiver asks the sender to stop.
    pub const STOP: u8 = 3;
    /// The transfer is aborted.
    pub const ABORT: u8 = 4;
}

/// RMPPFlags bits.
pub mod flag {
    /// The RMPP header is in use.
    pub const ACTIVE: u8 = 1;
    /// The first segment.
    pub const FIRST: u8 = 1 << 1;
    /// The last segment.
    pub const LAST: u8 = 1 << 2;
}

/// RMPPStatus values (`IB_MGMT_RMPP_STATUS_*`).
pub mod status {
    /// Resources exhausted (a STOP).
    pub const RESX: u8 = 1;
    /// The first abort status.
    pub const ABORT_MIN: u8 = 118;
    /// Total time too long.
    pub const T2L: u8 = 118;
    /// Inconsistent last segment and payload length.
    pub const BAD_LEN: u8 = 119;
    /// Inconsistent first segment and payload length.
    pub const BAD_SEG: u8 = 120;
    /// Bad RMPPType.
    pub const BADT: u8 = 121;
    /// NewWindowLast too small.
    pub const W2S: u8 = 122;
    /// SegmentNumber too big.
    pub const S2B: u8 = 123;
    /// Illegal status.
    pub const BAD_STATUS: u8 = 124;
    /// Unsupported version.
    pub const UNV: u8 = 125;
    /// Too many retries.
    pub const TMR: u8 = 126;
    /// The last abort status.
    pub const ABORT_MAX: u8 = 127;
}

/// Where a class's data starts in a MAD (C's `ib_get_mad_data_offset`): after the SA header,
/// the device management header, the vendor header, or the common header. Every segment of an
/// RMPP message repeats the MAD up to there.
pub fn data_offset(mgmt_class: u8) -> usize {
    match mgmt_class {
        class::SUBN_ADM => 56,
        class::DEVICE_MGMT | class::DEVICE_ADM | class::BIS => 64,
        c if (class::VENDOR_RANGE2_START..=class::VENDOR_RANGE2_END).contains(&c) => 40,
        _ => 24,
    }
}

/// Whether `m`'s RMPP header is in use.
pub fn is_active(m: &Mad) -> bool {
    m[rhdr::RTIME_FLAGS] & flag::ACTIVE != 0
}

/// `m`'s RMPPFlags.
pub fn flags(m: &Mad) -> u8 {
    m[rhdr::RTIME_FLAGS] & 0x7
}

/// `m`'s SegmentNumber.
pub fn seg_num(m: &Mad) -> u32 {
    get32(m, rhdr::SEG_NUM)
}

/// `m`'s PayloadLength or NewWindowLast.
pub fn paylen_newwin(m: &Mad) -> u32 {
    get32(m, rhdr::PAYLEN_NEWWIN)
}

/// Sets `m`'s RMPPFlags, keeping its RRespTime (C's `ib_set_rmpp_flags`).
fn set_flags(m: &mut Mad, f: u8) {
    m[rhdr::RTIME_FLAGS] = (m[rhdr::RTIME_FLAGS] & 0xf8) | (f & 0x7);
}

/// A reply to the segment or ACK `m` that carries no data: its header up to the class's data,
/// the method's response bit flipped (C's `format_ack`, `ack_ds_ack`, `nack_recv`).
fn control(m: &Mad, kind: Option<u8>, status: Option<u8>, seg: u32, newwin: u32) -> Mad {
    let mut out = [0u8; MAD_SIZE];
    let n = data_offset(m[hdr::MGMT_CLASS]);
    out[..n].copy_from_slice(&m[..n]);
    out[hdr::METHOD] ^= method::RESP;
    if let Some(k) = kind {
        out[rhdr::TYPE] = k;
    }
    if let Some(s) = status {
        out[rhdr::VERSION] = VERSION;
        out[rhdr::STATUS] = s;
    }
    set_flags(&mut out, flag::ACTIVE);
    put32(&mut out, rhdr::SEG_NUM, seg);
    put32(&mut out, rhdr::PAYLEN_NEWWIN, newwin);
    out
}

/// The ACK of segments up to `seg` with window `newwin`, for the segment `m` (C's `format_ack`).
pub fn ack(m: &Mad, seg: u32, newwin: u32) -> Mad {
    control(m, Some(kind::ACK), None, seg, newwin)
}

/// The sender's answer to an ACK of a message it has sent whole (C's `ack_ds_ack`): segment 0,
/// window 1.
pub fn ds_ack(m: &Mad) -> Mad {
    control(m, None, None, 0, 1)
}

/// The ABORT with `status` that refuses `m` (C's `nack_recv`).
pub fn abort(m: &Mad, status: u8) -> Mad {
    control(m, Some(kind::ABORT), Some(status), 0, 0)
}

/// A message cut into segments: each is the message's header up to its class's data, then
/// `seg_size` bytes of the data, the last padded with zeros (C's `ib_create_send_mad` with
/// `rmpp_active`, `send_next_seg`).
pub struct Segmenter {
    hdr_len: usize,
    data: KVec<u8>,
    seg_count: u32,
    pad: u32,
}

impl Segmenter {
    /// The segments of a message of class `mgmt_class` whose data is `data` (C's
    /// `get_pad_size`: no data still makes one segment, all padding). `EINVAL` past what
    /// segment numbers count.
    pub fn new(mgmt_class: u8, data: KVec<u8>) -> Result<Self> {
        let hdr_len = data_offset(mgmt_class);
        let seg_size = MAD_SIZE - hdr_len;
        let len = data.len();
        let pad = match len % seg_size {
            0 if len != 0 => 0,
            r => seg_size - r,
        };
        let seg_count = u32::try_from((len + pad) / seg_size).map_err(|_| EINVAL)?;
        Ok(Self {
            hdr_len,
            data,
            seg_count,
            pad: pad as u32,
        })
    }

    /// How many segments there are.
    pub fn seg_count(&self) -> u32 {
        self.seg_count
    }

    /// Writes segment `n` (1-based) of the message whose header is `header` into `out`: the
    /// flags (FIRST, LAST), its number, and PayloadLength (the whole message's in the first,
    /// the last one's in the last, 0 between).
    pub fn write(&self, header: &Mad, n: u32, out: &mut Mad) {
        let seg_size = MAD_SIZE - self.hdr_len;
        out.fill(0);
        out[..self.hdr_len].copy_from_slice(&header[..self.hdr_len]);
        let start = (n.saturating_sub(1) as usize).saturating_mul(seg_size);
        if let Some(chunk) = self.data.get(start..) {
            let take = chunk.len().min(seg_size);
            out[self.hdr_len..self.hdr_len + take].copy_from_slice(&chunk[..take]);
        }
        let mut f = flag::ACTIVE;
        let mut paylen = 0;
        if n == 1 {
            f |= flag::FIRST;
            paylen = (self.seg_count * RMPP_DATA).saturating_sub(self.pad);
        }
        if n == self.seg_count {
            f |= flag::LAST;
            paylen = RMPP_DATA.saturating_sub(self.pad);
        }
        set_flags(out, f);
        put32(out, rhdr::SEG_NUM, n);
        put32(out, rhdr::PAYLEN_NEWWIN, paylen);
    }
}

/// How long a send waits for an ACK at most (C: "2 seconds for an ACK until we can find the
/// packet lifetime").
pub const ACK_TIMEOUT_MS: u32 = 2000;

/// What to do after an RMPP segment's send completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Post the next segment.
    Post,
    /// Wait this many milliseconds for an ACK.
    WaitAck(u32),
}

/// What an ACK does to a message being sent (C's `process_rmpp_ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckEffect {
    /// Nothing (an old ACK, or a send that is over).
    Ignore,
    /// A repeated ACK of the whole message while its response is awaited: acknowledge it
    /// (C's `ack_ds_ack`).
    DsAck,
    /// It acknowledges segments not sent: abort (S2B).
    TooBig,
    /// The window moved (the send's retries start again when `retries_reset`); then `then`.
    Moved {
        /// The ACK acknowledged more segments.
        retries_reset: bool,
        /// What follows.
        then: AfterAck,
    },
}

/// What follows an ACK that moved the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterAck {
    /// Nothing yet (a segment is on the send queue, or the window is still full).
    Wait,
    /// Post the next segment (the send was waiting for this ACK).
    Post,
    /// Every segment is acknowledged and no response is expected: the send is done.
    Done,
    /// Every segment is acknowledged: wait for the response, and acknowledge the ACK.
    AwaitResponse,
}

/// A message being sent (C's RMPP fields of `ib_mad_send_wr_private`).
pub struct Sender {
    seg: Segmenter,
    /// The segment posted last (or being posted).
    seg_num: u32,
    /// The last segment the receiver acknowledged.
    last_ack: u32,
    /// The last segment the receiver's window takes.
    newwin: u32,
    /// The send's retries, given back by each ACK that moves the window.
    pub max_retries: u32,
    /// The send's response timeout.
    timeout_ms: u32,
}

impl Sender {
    /// A message of `seg`, starting with window `newwin` (1, or what its requester announced),
    /// sent with `retries` and response timeout `timeout_ms`.
    pub fn new(seg: Segmenter, newwin: u32, retries: u32, timeout_ms: u32) -> Self {
        Self {
            seg,
            seg_num: 1,
            last_ack: 0,
            newwin,
            max_retries: retries,
            timeout_ms,
        }
    }

    /// Writes the segment to post into `out`.
    pub fn write_segment(&self, header: &Mad, out: &mut Mad) {
        self.seg.write(header, self.seg_num, out);
    }

    /// Whether every segment is acknowledged.
    pub fn acknowledged(&self) -> bool {
        self.last_ack >= self.seg.seg_count()
    }

    /// A segment's send completed (`ok`: successfully, and the send is still going): what
    /// comes next, or `None` when the transfer is over (every segment acknowledged, or the
    /// send failed), for the MAD layer's usual ending (C's `ib_process_rmpp_send_wc`).
    pub fn segment_sent(&mut self, ok: bool) -> Option<Next> {
        if !ok || self.acknowledged() {
            return None;
        }
        if self.seg_num >= self.newwin || self.seg_num >= self.seg.seg_count() {
            let ms = match self.timeout_ms {
                0 => ACK_TIMEOUT_MS,
                t => t.min(ACK_TIMEOUT_MS),
            };
            return Some(Next::WaitAck(ms));
        }
        self.seg_num += 1;
        Some(Next::Post)
    }

    /// No ACK came in time: the segments from the last acknowledged one go again (C's
    /// `ib_retry_rmpp`); false when all were acknowledged (the send waited for its response).
    pub fn rewind(&mut self) -> bool {
        if self.acknowledged() {
            return false;
        }
        self.seg_num = self.last_ack + 1;
        true
    }

    /// An ACK of segments up to `seg` with window `newwin`, for a send that is `live` (not
    /// cancelled or aborted), `waiting` (no segment on the send queue), expecting a response
    /// when `timeout_ms` is not 0.
    pub fn on_ack(&mut self, seg: u32, newwin: u32, live: bool, waiting: bool) -> AckEffect {
        // As C's `int`s (see [`Reassembly::segment`]).
        let (seg, newwin) = (seg as i32, newwin as i32);
        if self.acknowledged() {
            return if self.timeout_ms != 0 && live {
                AckEffect::DsAck
            } else {
                AckEffect::Ignore
            };
        }
        if !live {
            return AckEffect::Ignore;
        }
        if seg > self.seg.seg_count() as i32 || seg > self.newwin as i32 {
            return AckEffect::TooBig;
        }
        if newwin < self.newwin as i32 || seg < self.last_ack as i32 {
            return AckEffect::Ignore;
        }
        let retries_reset = seg > self.last_ack as i32;
        // Both are at least `last_ack` and `newwin`, so not negative.
        self.last_ack = seg as u32;
        self.newwin = newwin as u32;
        let then = if self.acknowledged() {
            if self.timeout_ms == 0 {
                AfterAck::Done
            } else {
                AfterAck::AwaitResponse
            }
        } else if waiting && self.seg_num < self.newwin && self.seg_num < self.seg.seg_count() {
            self.seg_num += 1;
            AfterAck::Post
        } else {
            AfterAck::Wait
        };
        AckEffect::Moved {
            retries_reset,
            then,
        }
    }
}

/// What a receiver does with a data segment of a message under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing (a duplicate, out of the window, or a gap to wait out).
    Drop,
    /// Acknowledge what is in order ([`Reassembly::ack`]).
    Ack,
    /// The message is whole: acknowledge it and deliver it.
    Complete,
}

/// A message being received (C's `mad_rmpp_recv`): the data in order after the first segment,
/// the segments past a gap, and the window.
pub struct Reassembly {
    hdr_len: usize,
    /// The data of segments 2..=`seg_num`, in order.
    more: KVec<u8>,
    /// Segments past `seg_num + 1` that came early, by number.
    early: KVec<(u32, KBox<Mad>)>,
    /// The last segment received in order.
    seg_num: u32,
    /// The last segment acknowledged.
    last_ack: u32,
    /// The last segment the sender may send now.
    newwin: u32,
    /// The PayloadLength of the last segment (once it came).
    last_paylen: u32,
    complete: bool,
    /// The window the requester announced for the answer (C's `repwin`).
    pub repwin: u32,
}

impl Reassembly {
    /// A message whose first segment is `first`, acknowledged `window` segments at a time (C's
    /// `create_rmpp_recv` and `start_rmpp`); [`Step::Complete`] when it is the only one.
    pub fn start(first: &Mad, window: u32) -> (Self, Step) {
        let mut r = Self {
            hdr_len: data_offset(first[hdr::MGMT_CLASS]),
            more: KVec::new(),
            early: KVec::new(),
            seg_num: 1,
            last_ack: 0,
            newwin: 1,
            last_paylen: paylen_newwin(first),
            complete: false,
            repwin: 1,
        };
        if flags(first) & flag::LAST != 0 {
            r.complete = true;
            return (r, Step::Complete);
        }
        r.newwin += window;
        (r, Step::Ack)
    }

    /// Takes data segment `m` (number 2 or more) of the message (C's `continue_rmpp`). `ENOMEM`
    /// when it cannot be kept.
    pub fn segment(&mut self, m: &Mad, window: u32) -> Result<Step> {
        // Segment numbers compare as C's `int`s: one of 2^31 or more is below every window and
        // is answered with an ACK, as C answers it.
        let n = seg_num(m);
        if (n as i32) > self.newwin as i32 {
            return Ok(Step::Drop);
        }
        if (n as i32) <= self.last_ack as i32 || self.complete {
            return Ok(Step::Ack);
        }
        if n <= self.seg_num || self.early.iter().any(|(e, _)| *e == n) {
            return Ok(Step::Drop);
        }
        if n != self.seg_num + 1 {
            let at = self
                .early
                .iter()
                .position(|(e, _)| *e > n)
                .unwrap_or(self.early.len());
            let seg = KBox::new(*m, GFP_KERNEL)?;
            self.early.reserve(1, GFP_KERNEL)?;
            self.early
                .insert_within_capacity(at, (n, seg))
                .map_err(|_| ENOMEM)?;
            return Ok(Step::Drop);
        }
        self.take(m)?;
        let mut last = flags(m) & flag::LAST != 0;
        while !last
            && self
                .early
                .first()
                .is_some_and(|(e, _)| *e == self.seg_num + 1)
        {
            let (_, s) = self.early.remove(0)?;
            self.take(&s)?;
            last = flags(&s) & flag::LAST != 0;
        }
        if last {
            self.complete = true;
            self.early.clear();
            return Ok(Step::Complete);
        }
        if self.seg_num == self.newwin {
            self.newwin += window;
            return Ok(Step::Ack);
        }
        Ok(Step::Drop)
    }

    /// Appends the next segment in order.
    fn take(&mut self, m: &Mad) -> Result {
        self.more
            .extend_from_slice(&m[self.hdr_len..], GFP_KERNEL)?;
        self.seg_num += 1;
        self.last_paylen = paylen_newwin(m);
        Ok(())
    }

    /// The ACK of what came in order, for segment `m` of the message (C's `format_ack`).
    pub fn ack(&mut self, m: &Mad) -> Mad {
        self.last_ack = self.seg_num;
        ack(m, self.seg_num, self.newwin)
    }

    /// Whether the message is whole.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The message's length, from the start of the first segment to the end of its data (C's
    /// `get_mad_len`: the last segment's PayloadLength says how much of it is padding).
    pub fn mad_len(&self) -> usize {
        let data_size = MAD_SIZE - self.hdr_len;
        let pad = RMPP_DATA
            .checked_sub(self.last_paylen)
            .filter(|p| *p <= RMPP_DATA)
            .unwrap_or(0) as usize;
        (self.hdr_len + self.seg_num as usize * data_size).saturating_sub(pad)
    }

    /// The data after the first segment's, in order (taken).
    pub fn take_more(&mut self) -> KVec<u8> {
        core::mem::replace(&mut self.more, KVec::new())
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mad_rmpp)]
mod tests {
    use super::*;

    /// An SA GetTableResp header with the RMPP header active.
    fn sa_header() -> Mad {
        let mut m = [0u8; MAD_SIZE];
        m[hdr::BASE_VERSION] = 1;
        m[hdr::MGMT_CLASS] = class::SUBN_ADM;
        m[hdr::CLASS_VERSION] = 2;
        m[hdr::METHOD] = 0x93;
        m[rhdr::VERSION] = VERSION;
        m[rhdr::TYPE] = kind::DATA;
        m[rhdr::RTIME_FLAGS] = (0x1f << 3) | flag::ACTIVE;
        m
    }

    fn data(len: usize) -> KVec<u8> {
        let mut v = KVec::new();
        for i in 0..len {
            v.push(i as u8, GFP_KERNEL).unwrap();
        }
        v
    }

    #[test]
    fn segments_carry_c_s_flags_numbers_and_lengths() {
        // 450 bytes of SA data: 200 a segment, three segments, 150 bytes of padding.
        let s = Segmenter::new(class::SUBN_ADM, data(450)).unwrap();
        assert_eq!(s.seg_count(), 3);
        let h = sa_header();
        let mut m = [0u8; MAD_SIZE];
        s.write(&h, 1, &mut m);
        assert_eq!(flags(&m), flag::ACTIVE | flag::FIRST);
        // RRespTime kept.
        assert_eq!(m[rhdr::RTIME_FLAGS] >> 3, 0x1f);
        assert_eq!((seg_num(&m), paylen_newwin(&m)), (1, 3 * 220 - 150));
        assert_eq!(m[56], 0);
        assert_eq!(m[57], 1);
        s.write(&h, 2, &mut m);
        assert_eq!(
            (flags(&m), paylen_newwin(&m), m[56]),
            (flag::ACTIVE, 0, 200)
        );
        s.write(&h, 3, &mut m);
        assert_eq!(flags(&m), flag::ACTIVE | flag::LAST);
        assert_eq!(paylen_newwin(&m), 220 - 150);
        // Padding is zeros.
        assert_eq!(&m[56 + 50..60 + 50], &[0, 0, 0, 0]);
        // No data is one segment, all padding; exactly two segments' worth has none.
        let s = Segmenter::new(class::SUBN_ADM, KVec::new()).unwrap();
        assert_eq!(s.seg_count(), 1);
        s.write(&h, 1, &mut m);
        assert_eq!(flags(&m), flag::ACTIVE | flag::FIRST | flag::LAST);
        assert_eq!(paylen_newwin(&m), 20);
        assert_eq!(
            Segmenter::new(class::SUBN_ADM, data(400))
                .unwrap()
                .seg_count(),
            2
        );
    }

    #[test]
    fn a_message_comes_back_whole_in_any_order() {
        let s = Segmenter::new(class::SUBN_ADM, data(450)).unwrap();
        let h = sa_header();
        let seg = |n| {
            let mut m = [0u8; MAD_SIZE];
            s.write(&h, n, &mut m);
            m
        };
        let (mut r, step) = Reassembly::start(&seg(1), 64);
        assert_eq!(step, Step::Ack);
        let a = r.ack(&seg(1));
        assert_eq!(a[rhdr::TYPE], kind::ACK);
        // The response bit flipped.
        assert_eq!(a[hdr::METHOD], 0x13);
        assert_eq!((seg_num(&a), paylen_newwin(&a)), (1, 65));
        // Segment 3 before 2: kept, then both taken when 2 comes.
        assert_eq!(r.segment(&seg(3), 64).unwrap(), Step::Drop);
        // A duplicate.
        assert_eq!(r.segment(&seg(3), 64).unwrap(), Step::Drop);
        assert_eq!(r.segment(&seg(2), 64).unwrap(), Step::Complete);
        assert_eq!(r.mad_len(), 56 + 450);
        let more = r.take_more();
        assert_eq!(more.len(), 400);
        assert_eq!((more[0], more[249]), (200u8, 193u8));
        // A segment number of 2^31 or more counts as acknowledged (C's ints).
        let mut big = seg(2);
        put32(&mut big, rhdr::SEG_NUM, 0xffff_ffff);
        let (mut r2, _) = Reassembly::start(&seg(1), 64);
        let _ = r2.ack(&seg(1));
        assert_eq!(r2.segment(&big, 64).unwrap(), Step::Ack);
        // After the end, segments are acknowledged again.
        assert_eq!(r.segment(&seg(3), 64).unwrap(), Step::Ack);
    }

    #[test]
    fn windows_are_acknowledged_as_they_fill() {
        let s = Segmenter::new(class::SUBN_ADM, data(200 * 5)).unwrap();
        let h = sa_header();
        let seg = |n| {
            let mut m = [0u8; MAD_SIZE];
            s.write(&h, n, &mut m);
            m
        };
        let (mut r, _) = Reassembly::start(&seg(1), 2);
        let _ = r.ack(&seg(1));
        assert_eq!(r.segment(&seg(2), 2).unwrap(), Step::Drop);
        // The window (3) is full.
        assert_eq!(r.segment(&seg(3), 2).unwrap(), Step::Ack);
        let a = r.ack(&seg(3));
        assert_eq!((seg_num(&a), paylen_newwin(&a)), (3, 5));
        // Already acknowledged.
        assert_eq!(r.segment(&seg(2), 2).unwrap(), Step::Ack);
        // Past the window.
        assert_eq!(r.segment(&seg(6), 2).unwrap(), Step::Drop);
        assert_eq!(r.segment(&seg(4), 2).unwrap(), Step::Drop);
        assert_eq!(r.segment(&seg(5), 2).unwrap(), Step::Complete);
        assert_eq!(r.mad_len(), 56 + 1000);
    }

    #[test]
    fn a_sender_follows_the_receiver_s_window() {
        // Five segments, window 1 at first (no window announced), no response expected.
        let seg = Segmenter::new(class::SUBN_ADM, data(200 * 5)).unwrap();
        let mut s = Sender::new(seg, 1, 3, 0);
        assert_eq!(s.segment_sent(true), Some(Next::WaitAck(ACK_TIMEOUT_MS)));
        // The ACK of 1 opens the window to 3: segment 2 goes, then 3, then the wait.
        let moved = |then| AckEffect::Moved {
            retries_reset: true,
            then,
        };
        assert_eq!(s.on_ack(1, 3, true, true), moved(AfterAck::Post));
        assert_eq!(s.segment_sent(true), Some(Next::Post));
        assert_eq!(s.segment_sent(true), Some(Next::WaitAck(ACK_TIMEOUT_MS)));
        // An old ACK, one past the window, one of segments not sent.
        let old = AckEffect::Moved {
            retries_reset: false,
            then: AfterAck::Wait,
        };
        assert_eq!(s.on_ack(1, 3, true, true), old);
        assert_eq!(s.on_ack(4, 9, true, true), AckEffect::TooBig);
        // No ACK in time: back to the segment after the last acknowledged.
        assert!(s.rewind());
        let mut m = [0u8; MAD_SIZE];
        s.write_segment(&sa_header(), &mut m);
        assert_eq!(seg_num(&m), 2);
        assert_eq!(s.on_ack(3, 5, true, false), moved(AfterAck::Wait));
        assert_eq!(s.on_ack(5, 5, true, true), moved(AfterAck::Done));
        assert!(s.acknowledged());
        assert!(!s.rewind());
        assert_eq!(s.segment_sent(true), None);
        // With a response expected, the last ACK starts its wait.
        let seg = Segmenter::new(class::SUBN_ADM, data(10)).unwrap();
        let mut s = Sender::new(seg, 1, 0, 500);
        assert_eq!(s.segment_sent(true), Some(Next::WaitAck(500)));
        assert_eq!(s.on_ack(1, 1, true, true), moved(AfterAck::AwaitResponse));
        assert_eq!(s.on_ack(1, 1, true, true), AckEffect::DsAck);
    }

    #[test]
    fn aborts_and_ds_acks_as_c_formats_them() {
        let h = sa_header();
        let a = abort(&h, status::BAD_SEG);
        assert_eq!(
            (a[rhdr::TYPE], a[rhdr::STATUS], a[rhdr::VERSION]),
            (kind::ABORT, 120, 1)
        );
        assert_eq!(
            (flags(&a), seg_num(&a), paylen_newwin(&a)),
            (flag::ACTIVE, 0, 0)
        );
        assert_eq!(a[hdr::METHOD], 0x13);
        let mut ackm = ack(&h, 4, 9);
        ackm[hdr::METHOD] = 0x13;
        let d = ds_ack(&ackm);
        assert_eq!(
            (d[rhdr::TYPE], seg_num(&d), paylen_newwin(&d)),
            (kind::ACK, 0, 1)
        );
        assert_eq!(d[hdr::METHOD], 0x93);
        assert_eq!(data_offset(0x30), 40);
        assert_eq!(data_offset(class::DEVICE_MGMT), 64);
        assert_eq!(data_offset(class::CM), 24);
    }
}
