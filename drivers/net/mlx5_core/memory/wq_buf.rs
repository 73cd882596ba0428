// SPDX-License-Identifier: GPL-2.0

//! A work queue's buffer (C's `mlx5_frag_buf` of a QP): one [`CoherentBuf`] holding a receive
//! ring and a send ring, their geometry checked against the buffer once, when it is made, so that
//! posting writes a WQE's 16-byte units in place with a mask per slot and no bounds check.
//!
//! A ring is `count` slots (a power of two) of `1 << log_stride` bytes (16 at least) at a
//! 16-byte-aligned offset; a unit past a slot's end continues in the next slot, and the last slot
//! continues at the first, as the device reads a send WQE that runs over basic blocks and past
//! the ring's end. What [`RingWriter::put`] writes is a `#[repr(C)]` segment of 16 bytes, stored
//! with two volatile 64-bit stores, as C's `mlx5_ib_post_send` fills its segments in the ring.

use crate::memory::coherent::CoherentBuf;
use core::marker::PhantomData;
use kernel::prelude::*;
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// The size of a WQE unit (`MLX5_SEND_WQE_DS`, the `ds` count's unit).
pub const UNIT: usize = 16;

/// The largest slot a ring may have, log2 (1 MiB: far more than any WQE).
const MAX_LOG_STRIDE: u32 = 20;

/// The send ring's slot, log2: C's `MLX5_SEND_WQE_BB`, a 64-byte basic block of four units.
/// A [`WqBuf`]'s send ring has this stride, so that its writer ([`SendRingWriter`]) computes a
/// unit's place with constants.
pub const SEND_LOG_STRIDE: u32 = 6;

/// Where a ring is: `count` slots of `1 << log_stride` bytes at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingSpec {
    /// Byte offset of slot 0 in the buffer.
    pub offset: usize,
    /// Log2 of a slot's size in bytes (4 to 20).
    pub log_stride: u32,
    /// Slots (a power of two; 0 for a ring the queue does not have).
    pub count: u32,
}

/// A ring's geometry, checked against the buffer.
///
/// # Invariants
///
/// `offset` is a multiple of [`UNIT`], `4 <= log_stride <= MAX_LOG_STRIDE`, and the `mask + 1`
/// slots of `1 << log_stride` bytes at `offset` lie inside the buffer; a ring of no slots is
/// slot 0 of 16 bytes at offset 0 (writes there are the caller's mistake, never out of the
/// buffer). `units_log` is `log_stride - 4` (log2 of the units per slot) and `unit_mask` the
/// units per slot minus one.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    offset: usize,
    log_stride: u32,
    units_log: u32,
    unit_mask: u32,
    mask: u32,
}

impl Geometry {
    /// `spec` checked against a buffer of `len` bytes: `EINVAL` unless it fits.
    fn new(spec: RingSpec, len: usize) -> Result<Self> {
        if spec.count == 0 {
            return Ok(Self {
                offset: 0,
                log_stride: 4,
                units_log: 0,
                unit_mask: 0,
                mask: 0,
            });
        }
        if !spec.count.is_power_of_two()
            || !(4..=MAX_LOG_STRIDE).contains(&spec.log_stride)
            || spec.offset % UNIT != 0
        {
            return Err(EINVAL);
        }
        let bytes = 1usize
            .checked_shl(spec.log_stride)
            .and_then(|s| s.checked_mul(spec.count as usize))
            .and_then(|b| b.checked_add(spec.offset))
            .ok_or(EINVAL)?;
        if bytes > len {
            return Err(EINVAL);
        }
        let units_log = spec.log_stride - 4;
        Ok(Self {
            offset: spec.offset,
            log_stride: spec.log_stride,
            units_log,
            unit_mask: (1 << units_log) - 1,
            mask: spec.count - 1,
        })
    }

    /// The byte offset of unit `unit` of the WQE at producer count `counter`: its slot is
    /// `counter` plus the whole slots `unit` spans, masked. In the buffer, with room for a unit,
    /// whatever the arguments (the type's invariants).
    #[inline(always)]
    fn unit_offset(&self, counter: u32, unit: u32) -> usize {
        self.place(
            counter,
            unit,
            self.log_stride,
            self.units_log,
            self.unit_mask,
        )
    }

    /// [`Self::unit_offset`] for a geometry whose `log_stride` is `LOG` (the caller's promise):
    /// the unit's slot and place in it are then shifts and masks by constants, which fold
    /// away where `unit` is a constant (each segment of a WQE builder).
    #[inline(always)]
    fn unit_offset_fixed<const LOG: u32>(&self, counter: u32, unit: u32) -> usize {
        // Wrapping: no overflow check compiled in (nor in `RingWriter<0>`'s copy of this
        // function, never called).
        let units_log = LOG.wrapping_sub(4);
        let unit_mask = 1u32.wrapping_shl(units_log).wrapping_sub(1);
        self.place(counter, unit, LOG, units_log, unit_mask)
    }

    /// The formula of [`Self::unit_offset`], given the stride, log2, the units per slot, log2,
    /// and their mask. No arithmetic here can overflow (the invariants bound every term): it is
    /// written with wrapping operations so that no overflow check is compiled in.
    #[inline(always)]
    fn place(
        &self,
        counter: u32,
        unit: u32,
        log_stride: u32,
        units_log: u32,
        unit_mask: u32,
    ) -> usize {
        let slot = counter.wrapping_add(unit.wrapping_shr(units_log)) & self.mask;
        let within = ((unit & unit_mask) as usize) << 4;
        self.offset
            .wrapping_add((slot as usize).wrapping_shl(log_stride))
            .wrapping_add(within)
    }
}

/// A 16-byte WQE segment: plain old data whose bytes are what the device reads.
pub trait WqeUnit: IntoBytes + Immutable + Copy {}

/// A work queue's buffer: a receive and a send ring in one coherent buffer. Dropping it frees
/// the buffer (see [`CoherentBuf`] for when that may happen).
pub struct WqBuf {
    buf: CoherentBuf,
    recv: Geometry,
    send: Geometry,
}

impl WqBuf {
    /// The rings `recv` and `send` in `buf`: `EINVAL` unless each fits in it (a slot count that
    /// is a power of two, slots of 16 bytes or more, a 16-byte-aligned offset) and a send ring
    /// has slots of [`SEND_LOG_STRIDE`].
    pub fn new(buf: CoherentBuf, recv: RingSpec, send: RingSpec) -> Result<Self> {
        let len = buf.len();
        if send.count != 0 && send.log_stride != SEND_LOG_STRIDE {
            return Err(EINVAL);
        }
        Ok(Self {
            recv: Geometry::new(recv, len)?,
            send: Geometry::new(send, len)?,
            buf,
        })
    }

    /// A writer of the receive ring's units (a copy of its geometry and the buffer's address:
    /// kept in registers by the caller's loop).
    #[inline(always)]
    pub fn recv_writer(&self) -> RingWriter<'_> {
        // INVARIANT: `recv` is a geometry of `self.buf`, whose start `base` is, borrowed for
        // `'_`; the stride is read from it (`0`).
        RingWriter {
            base: self.buf.as_mut_ptr(),
            g: self.recv,
            _buf: PhantomData,
        }
    }

    /// A writer of the send ring's units, its stride a constant (see [`Self::recv_writer`]).
    #[inline(always)]
    pub fn send_writer(&self) -> SendRingWriter<'_> {
        // INVARIANT: `send` is a geometry of `self.buf`, whose start `base` is, borrowed for
        // `'_`; `new` refused a send ring of another stride than `SEND_LOG_STRIDE` (an empty
        // ring's geometry is never written: its users check the count first).
        RingWriter {
            base: self.buf.as_mut_ptr(),
            g: self.send,
            _buf: PhantomData,
        }
    }
}

/// Stores the units of one ring of a [`WqBuf`] it borrows. `LOG_STRIDE` is the ring's slot,
/// log2, when fixed (the send ring: [`SendRingWriter`]), or `0` when read from the geometry.
///
/// # Invariants
///
/// `base` is the start of the borrowed buffer and `g` a geometry checked against it; when
/// `LOG_STRIDE` is not `0`, `g.log_stride` is `LOG_STRIDE`.
#[derive(Clone, Copy)]
pub struct RingWriter<'a, const LOG_STRIDE: u32 = 0> {
    base: *mut u8,
    g: Geometry,
    _buf: PhantomData<&'a CoherentBuf>,
}

/// The send ring's writer: slots of [`SEND_LOG_STRIDE`].
pub type SendRingWriter<'a> = RingWriter<'a, SEND_LOG_STRIDE>;

impl<const LOG_STRIDE: u32> RingWriter<'_, LOG_STRIDE> {
    /// Stores `value`, one 16-byte unit, as unit `unit` of the WQE at producer count `counter`
    /// (the unit's slot is `counter` plus the slots before it, modulo the ring's size): two
    /// volatile 64-bit stores in memory order, no check. Never sleeps.
    #[inline(always)]
    pub fn put<T: WqeUnit>(&self, counter: u32, unit: u32, value: T) {
        const { assert!(size_of::<T>() == UNIT && align_of::<T>() <= UNIT) };
        // Two words with the unit's bytes in memory order (a copy the compiler folds away).
        let Ok(words) = <[u64; 2]>::read_from_bytes(value.as_bytes()) else {
            return;
        };
        self.put_words(counter, unit, words);
    }

    /// Stores a unit given as two words in memory order (see [`Self::put`]).
    #[inline(always)]
    pub fn put_words(&self, counter: u32, unit: u32, words: [u64; 2]) {
        let off = if LOG_STRIDE == 0 {
            self.g.unit_offset(counter, unit)
        } else {
            self.g.unit_offset_fixed::<LOG_STRIDE>(counter, unit)
        };
        // SAFETY: by `Geometry`'s invariants (for a fixed stride, the same offset: the
        // geometry's stride is `LOG_STRIDE`) `off + UNIT` is inside the buffer `base` starts
        // (the type's invariants), which outlives `self`; `off` is a multiple of 16 from a
        // page-aligned start, so both 8-byte words are aligned. The memory is shared with the
        // device, hence volatile stores (as `kernel::io`'s `copy_write`); no reference into it
        // is made.
        unsafe {
            let at = self.base.add(off).cast::<u64>();
            at.write_volatile(words[0]);
            at.add(1).write_volatile(words[1]);
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_wq_buf)]
mod tests {
    use super::*;

    fn spec(offset: usize, log_stride: u32, count: u32) -> RingSpec {
        RingSpec {
            offset,
            log_stride,
            count,
        }
    }

    #[test]
    fn geometry_is_checked_against_the_buffer() {
        // 64 slots of 64 bytes after a 256-byte receive ring: 4352 bytes.
        assert!(Geometry::new(spec(256, 6, 64), 8192).is_ok());
        assert!(Geometry::new(spec(256, 6, 64), 4352).is_ok());
        assert_eq!(Geometry::new(spec(256, 6, 64), 4351).err(), Some(EINVAL));
        assert_eq!(Geometry::new(spec(256, 6, 48), 8192).err(), Some(EINVAL));
        assert_eq!(Geometry::new(spec(8, 6, 64), 8192).err(), Some(EINVAL));
        assert_eq!(Geometry::new(spec(0, 3, 64), 8192).err(), Some(EINVAL));
        assert_eq!(
            Geometry::new(spec(0, 60, 1 << 20), 8192).err(),
            Some(EINVAL)
        );
        assert_eq!(Geometry::new(spec(0, 21, 1), 1 << 22).err(), Some(EINVAL));
        assert!(Geometry::new(spec(usize::MAX - 15, 4, 0), 4096).is_ok());
    }

    #[test]
    fn units_run_over_slots_and_wrap() -> Result {
        // Send ring of 64 basic blocks at 256: a WQE at 62 of 4 blocks (units 0..15) takes
        // slots 62, 63, 0, 1.
        let g = Geometry::new(spec(256, 6, 64), 8192)?;
        assert_eq!(g.unit_offset(62, 0), 256 + 62 * 64);
        assert_eq!(g.unit_offset(62, 3), 256 + 62 * 64 + 48);
        assert_eq!(g.unit_offset(62, 4), 256 + 63 * 64);
        assert_eq!(g.unit_offset(62, 9), 256 + 16);
        assert_eq!(g.unit_offset(u32::MAX, 4), 256);
        // Receive slots of 32 bytes: unit 1 is the slot's second half.
        let r = Geometry::new(spec(0, 5, 8), 4096)?;
        assert_eq!(r.unit_offset(9, 1), 32 + 16);
        // Whatever the arguments, a unit stays in the buffer.
        for c in [0, 1, 63, 64, u32::MAX] {
            for u in [0, 1, 31, 1000, u32::MAX] {
                assert!(g.unit_offset(c, u) + UNIT <= 4352);
                assert!(r.unit_offset(c, u) + UNIT <= 256);
                // The send ring's writer, with the stride a constant, finds the same place.
                assert_eq!(
                    g.unit_offset_fixed::<SEND_LOG_STRIDE>(c, u),
                    g.unit_offset(c, u)
                );
            }
        }
        Ok(())
    }
}
