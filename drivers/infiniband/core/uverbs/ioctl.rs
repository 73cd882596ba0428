// SPDX-License-Identifier: GPL-2.0

//! `ioctl(fd, RDMA_VERBS_IOCTL, hdr)`: the request header, checked as C's `ib_uverbs_ioctl` and
//! `ib_uverbs_cmd_verbs` check it, in their order (`docs/uverbs-c-facts.md` §3.1). No object has
//! methods yet, so a well-formed request gets C's answer for an unknown object or method,
//! `EPROTONOSUPPORT` (libibverbs then falls back to write() where a command has one).

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

/// `RDMA_VERBS_IOCTL`: `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
pub(crate) const RDMA_VERBS_IOCTL: u32 = 0xc018_1b01;
/// `sizeof(struct ib_uverbs_ioctl_hdr)`.
const HEADER_SIZE: usize = 24;
/// `sizeof(struct ib_uverbs_attr)`: the header is followed by `num_attrs` of them.
const ATTR_SIZE: usize = 16;

/// `struct ib_uverbs_ioctl_hdr`.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    length: u16,
    object_id: u16,
    method_id: u16,
    num_attrs: u16,
    reserved1: u64,
    driver_id: u32,
    reserved2: u32,
}

impl Header {
    /// The header's fields, from its bytes as user space laid them out.
    fn parse(b: &[u8; HEADER_SIZE]) -> Self {
        let mut at = 0;
        let mut take = |n: usize| -> u64 {
            let v = b[at..at + n]
                .iter()
                .rev()
                .fold(0u64, |acc, byte| (acc << 8) | u64::from(*byte));
            at += n;
            v
        };
        // Little-endian fields in declaration order (x86_64 user space).
        Self {
            length: take(2) as u16,
            object_id: take(2) as u16,
            method_id: take(2) as u16,
            num_attrs: take(2) as u16,
            reserved1: take(8),
            driver_id: take(4) as u32,
            reserved2: take(4) as u32,
        }
    }

    /// The checks of the header alone: a length that is not the header and its attributes, or
    /// over a page, is `EINVAL`; a reserved field set is `EPROTONOSUPPORT`.
    fn check(&self) -> Result {
        let len = usize::from(self.length);
        if len > PAGE_SIZE || len != HEADER_SIZE + ATTR_SIZE * usize::from(self.num_attrs) {
            return Err(EINVAL);
        }
        if self.reserved1 != 0 || self.reserved2 != 0 {
            return Err(EPROTONOSUPPORT);
        }
        Ok(())
    }
}

/// One `ioctl` on a file of a device whose driver id is `driver_id`: another command is not
/// ours (`ENOIOCTLCMD`, which the VFS turns into `ENOTTY`); an unreadable header is `EFAULT`;
/// then the header's checks; a driver id other than the device's is `EINVAL` (every ioctl, as
/// C); then the method lookup.
pub(crate) fn ioctl(driver_id: u32, cmd: u32, arg: usize) -> Result<isize> {
    if cmd != RDMA_VERBS_IOCTL {
        return Err(ENOIOCTLCMD);
    }
    let mut raw = [0u8; HEADER_SIZE];
    UserSlice::new(UserPtr::from_addr(arg), HEADER_SIZE)
        .reader()
        .read_slice(&mut raw)?;
    let hdr = Header::parse(&raw);
    hdr.check()?;
    if hdr.driver_id != driver_id {
        return Err(EINVAL);
    }
    // No object has methods yet.
    Err(EPROTONOSUPPORT)
}

#[kernel::macros::kunit_tests(rdma_rs_uverbs_ioctl)]
mod tests {
    use super::*;

    /// A header's bytes.
    fn bytes(length: u16, num_attrs: u16, reserved1: u64, driver_id: u32) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..2].copy_from_slice(&length.to_le_bytes());
        b[2..4].copy_from_slice(&3u16.to_le_bytes());
        b[4..6].copy_from_slice(&0x1000u16.to_le_bytes());
        b[6..8].copy_from_slice(&num_attrs.to_le_bytes());
        b[8..16].copy_from_slice(&reserved1.to_le_bytes());
        b[16..20].copy_from_slice(&driver_id.to_le_bytes());
        b
    }

    #[test]
    fn header_fields_and_checks() {
        // GET_CONTEXT as libibverbs sends it: four attributes, 88 bytes, driver id 1.
        let h = Header::parse(&bytes(88, 4, 0, 1));
        assert_eq!(
            (h.length, h.object_id, h.method_id, h.num_attrs),
            (88, 3, 0x1000, 4)
        );
        assert_eq!(h.driver_id, 1);
        assert_eq!(h.check(), Ok(()));
        // A length that is not the header and its attributes.
        assert_eq!(Header::parse(&bytes(87, 4, 0, 1)).check(), Err(EINVAL));
        assert_eq!(Header::parse(&bytes(24, 1, 0, 1)).check(), Err(EINVAL));
        // Over a page, even when it adds up.
        let n = ((PAGE_SIZE - HEADER_SIZE) / ATTR_SIZE + 1) as u16;
        let len = (HEADER_SIZE + ATTR_SIZE * usize::from(n)) as u16;
        assert_eq!(Header::parse(&bytes(len, n, 0, 1)).check(), Err(EINVAL));
        // A reserved field set, once the length is right.
        assert_eq!(
            Header::parse(&bytes(24, 0, 1 << 40, 1)).check(),
            Err(EPROTONOSUPPORT)
        );
        assert_eq!(Header::parse(&bytes(23, 0, 1, 1)).check(), Err(EINVAL));
    }

    #[test]
    fn only_the_verbs_ioctl_is_ours() {
        assert_eq!(ioctl(1, 0x1234, 0), Err(ENOIOCTLCMD));
        // The header cannot be read from user address 0 (a kernel thread has no user memory).
        assert_eq!(ioctl(1, RDMA_VERBS_IOCTL, 0), Err(EFAULT));
    }
}
