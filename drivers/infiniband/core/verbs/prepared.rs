// SPDX-License-Identifier: GPL-2.0

//! Prepared send work requests: a send work request checked and encoded by its QP's driver once
//! ([`crate::verbs::Qp::prepare_send`]), then posted any number of times
//! ([`crate::verbs::Qp::post_prepared`]) with no check and no encoding under the send queue's
//! lock: the driver copies the encoded units into its ring and writes what changes from post to
//! post (the WQE's index, the QP number). C has no such verb; its `ib_post_send` checks and
//! encodes every request of every post with the queue locked. For consumers that post requests
//! of a fixed shape again and again (a ULP's SEND of a fixed header buffer, a benchmark, a ring
//! of RDMA WRITEs to fixed remote slots), what is left to the post is the copy.
//!
//! The encoding is the driver's (its WQE image, in 16-byte units). A prepared request belongs to
//! the QP it was prepared for: posting it on another QP is refused with `EINVAL`.

use kernel::prelude::*;

/// The largest encoding, in 16-byte units (128 bytes: a control segment, a remote address and
/// six data segments in mlx5's format). A driver refuses a request that needs more with
/// `EINVAL`; it can still be posted with [`crate::verbs::Qp::post_send`].
pub const MAX_PREPARED_UNITS: usize = 8;

/// A driver's encoding of a send work request: `units` 16-byte units, as 64-bit words in memory
/// order (two per unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreparedImage {
    words: [u64; 2 * MAX_PREPARED_UNITS],
    units: u8,
}

impl PreparedImage {
    /// An encoding of `units` units (`EINVAL` for 0 or more than [`MAX_PREPARED_UNITS`]),
    /// unit `i` being `words[2 * i]` and `words[2 * i + 1]`.
    pub fn new(words: [u64; 2 * MAX_PREPARED_UNITS], units: usize) -> Result<Self> {
        if units == 0 || units > MAX_PREPARED_UNITS {
            return Err(EINVAL);
        }
        Ok(Self {
            words,
            units: units as u8,
        })
    }

    /// The number of 16-byte units (1 to [`MAX_PREPARED_UNITS`]).
    #[inline]
    pub fn units(&self) -> usize {
        usize::from(self.units)
    }

    /// Unit `i` as two words in memory order; zeroes past the encoding's end.
    #[inline(always)]
    pub fn unit(&self, i: usize) -> [u64; 2] {
        match (self.words.get(2 * i), self.words.get(2 * i + 1)) {
            (Some(&a), Some(&b)) => [a, b],
            _ => [0, 0],
        }
    }
}

/// A send work request prepared for a QP: its driver's encoding and the request id its
/// completion carries (which may be changed between posts).
#[derive(Clone, Copy, Debug)]
pub struct PreparedSend {
    /// The consumer's identifier, returned in the completion.
    pub wr_id: u64,
    /// The QP it was prepared for (its device's address and its number).
    pub(crate) owner: (usize, u32),
    image: PreparedImage,
}

impl PreparedSend {
    /// `image` for the QP `owner` names.
    pub(crate) fn new(wr_id: u64, owner: (usize, u32), image: PreparedImage) -> Self {
        Self {
            wr_id,
            owner,
            image,
        }
    }

    /// The driver's encoding.
    #[inline(always)]
    pub fn image(&self) -> &PreparedImage {
        &self.image
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_core_prepared)]
mod tests {
    use super::*;

    #[test]
    fn images_hold_one_to_eight_units() {
        let mut w = [0u64; 2 * MAX_PREPARED_UNITS];
        w[2] = 7;
        w[3] = 9;
        assert_eq!(PreparedImage::new(w, 0).err(), Some(EINVAL));
        assert_eq!(PreparedImage::new(w, 9).err(), Some(EINVAL));
        let i = PreparedImage::new(w, 2).ok();
        assert_eq!(
            i.map(|i| (i.units(), i.unit(1), i.unit(8))),
            Some((2, [7, 9], [0, 0]))
        );
    }
}
