// SPDX-License-Identifier: GPL-2.0

//! The driver's part of a user-verbs command (C's `struct ib_udata`): a request and a response
//! buffer in the calling process, whose layouts only the driver and its user-space provider
//! know (mlx5's are `mlx5-abi.h`'s). ib_uverbs builds one per command; the driver reads and
//! answers it with the rules C's helpers follow, so old and new user space both work.

use kernel::{
    prelude::*,
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

/// The driver's request and response buffers of one command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Udata {
    inbuf: usize,
    inlen: usize,
    outbuf: usize,
    outlen: usize,
}

/// Whether the `len` user bytes at `addr` are all zero (C's `check_zeroed_user`); `EFAULT`
/// when they cannot be read.
pub fn user_bytes_zero(addr: usize, len: usize) -> Result<bool> {
    let mut reader = UserSlice::new(UserPtr::from_addr(addr), len).reader();
    let mut chunk = [0u8; 64];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        reader.read_slice(&mut chunk[..n])?;
        if chunk[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
        left -= n;
    }
    Ok(true)
}

/// C's `copy_struct_from_user`: fills `dst` from the `len` user bytes at `src`. A shorter user
/// structure leaves the rest of `dst` zero; a longer one must be zero past `dst`'s end, or the
/// copy fails with `E2BIG`. An unreadable buffer is `EFAULT`.
pub fn copy_struct_from_user(dst: &mut [u8], src: usize, len: usize) -> Result {
    dst.fill(0);
    if len > dst.len() && !user_bytes_zero(src.wrapping_add(dst.len()), len - dst.len())? {
        return Err(E2BIG);
    }
    let n = len.min(dst.len());
    UserSlice::new(UserPtr::from_addr(src), n)
        .reader()
        .read_slice(&mut dst[..n])
}

impl Udata {
    /// No driver data (a command whose driver part is empty).
    pub const fn empty() -> Self {
        Self {
            inbuf: 0,
            inlen: 0,
            outbuf: 0,
            outlen: 0,
        }
    }

    /// The driver data at user addresses `inbuf` (`inlen` bytes) and `outbuf` (`outlen`).
    pub fn new(inbuf: usize, inlen: usize, outbuf: usize, outlen: usize) -> Self {
        Self {
            inbuf,
            inlen,
            outbuf,
            outlen,
        }
    }

    /// The user addresses and lengths: request, its length, response, its length (what a C
    /// driver's `struct ib_udata` holds).
    pub(crate) fn parts(&self) -> (usize, usize, usize, usize) {
        (self.inbuf, self.inlen, self.outbuf, self.outlen)
    }

    /// Length of the request.
    pub fn inlen(&self) -> usize {
        self.inlen
    }

    /// Length of the response buffer.
    pub fn outlen(&self) -> usize {
        self.outlen
    }

    /// Copies the first `req.len()` bytes of the request into `req` (C's `ib_copy_from_udata`
    /// of a length the driver chose from `inlen`); the caller makes sure they exist.
    pub fn read_in(&self, req: &mut [u8]) -> Result {
        if req.len() > self.inlen {
            return Err(EINVAL);
        }
        UserSlice::new(UserPtr::from_addr(self.inbuf), req.len())
            .reader()
            .read_slice(req)
    }

    /// Copies `out.len()` bytes of the request from `offset` into `out` (C's reads through a
    /// `uverbs_req_iter`): `EINVAL` past the request's end, `EFAULT` when unreadable.
    pub fn read_in_at(&self, offset: usize, out: &mut [u8]) -> Result {
        if offset
            .checked_add(out.len())
            .is_none_or(|end| end > self.inlen)
        {
            return Err(EINVAL);
        }
        UserSlice::new(
            UserPtr::from_addr(self.inbuf.wrapping_add(offset)),
            out.len(),
        )
        .reader()
        .read_slice(out)
    }

    /// The request into `req` with C's `ib_copy_validate_udata_in` rules: shorter than
    /// `min_len` is `EINVAL`; a shorter request leaves the rest of `req` zero; a longer one must
    /// be zero past `req`, or the answer is `EOPNOTSUPP`.
    pub fn read_in_validated(&self, req: &mut [u8], min_len: usize) -> Result {
        if self.inlen < min_len {
            return Err(EINVAL);
        }
        copy_struct_from_user(req, self.inbuf, self.inlen).map_err(|e| {
            if e == E2BIG {
                EOPNOTSUPP
            } else {
                e
            }
        })
    }

    /// The request as a `T` of the user ABI with [`Udata::read_in_validated`]'s rules and a
    /// minimum of `min_len` bytes.
    pub fn read_in_as<T: FromBytes + AsBytes>(&self, min_len: usize) -> Result<T> {
        // SAFETY: `T: FromBytes`: every byte pattern, all zeroes included, is a valid `T`.
        let mut req: T = unsafe { core::mem::zeroed() };
        self.read_in_validated(req.as_bytes_mut(), min_len)?;
        Ok(req)
    }

    /// Answers with `resp`, a response of the user ABI ([`Udata::respond`]).
    pub fn respond_as<T: AsBytes>(&self, resp: &T) -> Result {
        self.respond(resp.as_bytes())
    }

    /// Whether the request's bytes from `offset` on are all zero (C's `ib_is_udata_cleared` to
    /// the request's end). As in C (`ib_is_buffer_cleared`), bytes that cannot be read, or more
    /// than 64 KiB of them, are not "cleared": the answer is `false`, never an error. The
    /// address is user input: it wraps as C's pointer arithmetic does, and the read fails.
    pub fn in_zero_from(&self, offset: usize) -> Result<bool> {
        if offset >= self.inlen {
            return Ok(true);
        }
        let len = self.inlen - offset;
        if len > usize::from(u16::MAX) {
            return Ok(false);
        }
        Ok(user_bytes_zero(self.inbuf.wrapping_add(offset), len).unwrap_or(false))
    }

    /// C's `ib_is_udata_in_empty`: a request with a non-zero byte is `EOPNOTSUPP` (the driver
    /// takes none, and user space asked for something it does not know).
    pub fn check_in_empty(&self) -> Result {
        if self.inlen == 0 {
            return Ok(());
        }
        self.read_in_validated(&mut [], 0)
    }

    /// Answers with `resp` (C's `ib_respond_udata`): as much of it as the buffer holds, and
    /// zeroes in the rest of the buffer.
    pub fn respond(&self, resp: &[u8]) -> Result {
        let n = resp.len().min(self.outlen);
        let mut w = UserSlice::new(UserPtr::from_addr(self.outbuf), self.outlen).writer();
        w.write_slice(&resp[..n])?;
        let zeros = [0u8; 64];
        let mut left = self.outlen - n;
        while left > 0 {
            let k = left.min(zeros.len());
            w.write_slice(&zeros[..k])?;
            left -= k;
        }
        Ok(())
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_core_udata)]
mod tests {
    use super::*;

    #[test]
    fn empty_data_reads_and_answers_nothing() {
        let u = Udata::empty();
        assert_eq!((u.inlen(), u.outlen()), (0, 0));
        assert_eq!(u.check_in_empty(), Ok(()));
        assert_eq!(u.respond(&[1, 2, 3]), Ok(()));
        let mut req = [7u8; 4];
        // An empty request validated against a structure: all zero.
        assert_eq!(u.read_in_validated(&mut req, 0), Ok(()));
        assert_eq!(req, [0; 4]);
        assert_eq!(u.read_in_validated(&mut req, 1), Err(EINVAL));
        assert_eq!(u.read_in(&mut req), Err(EINVAL));
    }

    #[test]
    fn unreadable_user_memory_is_efault() {
        // A kernel thread has no user memory: address 0x1000 faults.
        let u = Udata::new(0x1000, 8, 0x1000, 8);
        let mut req = [0u8; 8];
        assert_eq!(u.read_in(&mut req), Err(EFAULT));
        assert_eq!(u.read_in_validated(&mut req, 8), Err(EFAULT));
        assert_eq!(u.check_in_empty(), Err(EFAULT));
        assert_eq!(u.respond(&[0; 8]), Err(EFAULT));
    }
}
