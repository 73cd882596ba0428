// SPDX-License-Identifier: GPL-2.0

//! `ioctl(fd, RDMA_VERBS_IOCTL, hdr)` (C's `ib_uverbs_ioctl`, `ib_uverbs_cmd_verbs`,
//! `ib_uverbs_run_method`, `docs/uverbs-c-facts.md` §3.1): the request header checked in C's
//! order, the method looked up in the tree (`uapi.rs`), its attributes checked against their
//! specs in the order user space sent them (unknown mandatory ones `EPROTONOSUPPORT`, others
//! ignored; duplicates and wrong sizes `EINVAL`; non-zero bytes past an extensible input
//! `EOPNOTSUPP`), the mandatory ones required, then the handler with what [`IoctlBundle`] gives
//! it: constants, inputs, outputs flagged `UVERBS_ATTR_F_VALID_OUTPUT` when written, the
//! driver's data and a new file descriptor.

use crate::{
    ioctl_bundle::{IoctlBundle, ATTR_SIZE},
    uabi::IoctlHdr,
    uapi::{self, DriverMethod, Kind, Method, ATTR_UHW_IN, ATTR_UHW_OUT},
    ufile::Ufile,
    uobjects::UObject,
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
    uaccess::{UserPtr, UserSlice},
};

/// `RDMA_VERBS_IOCTL`: `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
pub(crate) const RDMA_VERBS_IOCTL: u32 = 0xc018_1b01;
/// `sizeof(struct ib_uverbs_ioctl_hdr)`.
const HEADER_SIZE: usize = size_of::<IoctlHdr>();

impl IoctlHdr {
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

/// One `ioctl` on `ufile`: another command is not ours (`ENOIOCTLCMD`, which the VFS turns
/// into `ENOTTY`); an unreadable header is `EFAULT`; then the header's checks; a driver id
/// other than the device's is `EINVAL` (every ioctl, as C); an unknown object or method
/// `EPROTONOSUPPORT`; then the method runs.
pub(crate) fn ioctl(ufile: &Arc<Ufile>, cmd: u32, arg: usize) -> Result<isize> {
    let hdr = read_header(ufile.device().abi().driver_id, cmd, arg)?;
    let method = uapi::lookup(ufile, hdr.object_id, hdr.method_id)?;
    run(ufile, method, arg + HEADER_SIZE, usize::from(hdr.num_attrs))?;
    Ok(0)
}

/// The header's checks, up to the driver id.
fn read_header(driver_id: u32, cmd: u32, arg: usize) -> Result<IoctlHdr> {
    if cmd != RDMA_VERBS_IOCTL {
        return Err(ENOIOCTLCMD);
    }
    let hdr: IoctlHdr = UserSlice::new(UserPtr::from_addr(arg), HEADER_SIZE)
        .reader()
        .read()?;
    hdr.check()?;
    if hdr.driver_id != driver_id {
        return Err(EINVAL);
    }
    Ok(hdr)
}

/// A driver's method, run by the driver in the file's context: the object it made is put
/// under the reserved handle; the object a destroying method names is destroyed once the
/// driver's part succeeded (C's `UVERBS_ACCESS_DESTROY` finalization).
fn run_driver(b: &mut IoctlBundle<'_>, m: &'static DriverMethod) -> Result {
    let ufile = b.ufile;
    ufile.with_context(|c| {
        let made = c.ucontext.driver_method(m, &*b)?;
        if let Some(obj) = made {
            let object = m
                .attrs
                .iter()
                .find_map(|a| match a.kind {
                    Kind::IdrNew { object } => Some(object),
                    _ => None,
                })
                .ok_or(EINVAL)?;
            b.commit_new(&mut c.objects, UObject::Driver { object, _obj: obj })?;
        }
        for spec in m.attrs {
            if let Kind::IdrDestroy { object } = spec.kind {
                let handle = b.idr_handle(spec.id)?;
                drop(c.objects.remove(handle, object)?);
            }
        }
        Ok(())
    })
}

/// C's `ib_uverbs_run_method`: the attributes (`num_attrs` of them at `user_attrs`), then the
/// handler. A handler's `EPROTONOSUPPORT` is turned into `EINVAL`, as C does: that errno means
/// only "the framework does not know this request".
fn run(ufile: &Arc<Ufile>, method: Method, user_attrs: usize, num_attrs: usize) -> Result {
    let mut raw = KVec::new();
    UserSlice::new(UserPtr::from_addr(user_attrs), num_attrs * ATTR_SIZE)
        .read_all(&mut raw, GFP_KERNEL)?;
    let mut b = IoctlBundle::new(ufile, method.attrs(), user_attrs);
    let ret = process_and_run(&mut b, method, &raw);
    // If the method failed (or never ran), a handle it reserved is free again.
    b.release_reserved();
    ret
}

/// The attributes checked against the method's spec in the order given, then the method.
fn process_and_run(b: &mut IoctlBundle<'_>, method: Method, raw: &[u8]) -> Result {
    b.take_attrs(raw)?;
    if method.has_udata() {
        b.driver = b.udata(ATTR_UHW_IN, ATTR_UHW_OUT);
    }
    let ret = match method {
        Method::Core(m) => (m.handler)(b),
        Method::Driver(m) => run_driver(b, m),
    };
    let ret = match ret {
        Ok(()) if method.has_udata() => b.mark_output(ATTR_UHW_OUT),
        r => r,
    };
    if ret == Err(EPROTONOSUPPORT) {
        return Err(EINVAL);
    }
    ret
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

    use kernel::transmute::FromBytes;

    /// The header of `bytes`.
    fn parse(b: &[u8; HEADER_SIZE]) -> Result<IoctlHdr> {
        IoctlHdr::from_bytes_copy(b).ok_or(EINVAL)
    }

    #[test]
    fn header_fields_and_checks() -> Result {
        // GET_CONTEXT as libibverbs sends it: four attributes, 88 bytes, driver id 1.
        let h = parse(&bytes(88, 4, 0, 1))?;
        assert_eq!(
            (h.length, h.object_id, h.method_id, h.num_attrs),
            (88, 3, 0x1000, 4)
        );
        assert_eq!(h.driver_id, 1);
        assert_eq!(h.check(), Ok(()));
        // A length that is not the header and its attributes.
        assert_eq!(parse(&bytes(87, 4, 0, 1))?.check(), Err(EINVAL));
        assert_eq!(parse(&bytes(24, 1, 0, 1))?.check(), Err(EINVAL));
        // Over a page, even when it adds up.
        let n = ((PAGE_SIZE - HEADER_SIZE) / ATTR_SIZE + 1) as u16;
        let len = (HEADER_SIZE + ATTR_SIZE * usize::from(n)) as u16;
        assert_eq!(parse(&bytes(len, n, 0, 1))?.check(), Err(EINVAL));
        // A reserved field set, once the length is right.
        assert_eq!(
            parse(&bytes(24, 0, 1 << 40, 1))?.check(),
            Err(EPROTONOSUPPORT)
        );
        assert_eq!(parse(&bytes(23, 0, 1, 1))?.check(), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn only_the_verbs_ioctl_is_ours() {
        assert_eq!(read_header(1, 0x1234, 0).err(), Some(ENOIOCTLCMD));
        // The header cannot be read from user address 0 (a kernel thread has no user memory).
        assert_eq!(read_header(1, RDMA_VERBS_IOCTL, 0).err(), Some(EFAULT));
    }

    #[test]
    fn the_tree_has_c_ids() {
        assert!(uapi::lookup_core(0, 3).is_ok_and(|m| m.has_udata));
        assert!(uapi::lookup_core(16, 0).is_ok());
        assert_eq!(uapi::lookup_core(0, 5).err(), Some(EPROTONOSUPPORT));
        assert_eq!(
            uapi::lookup_core(0x1008, 0x1000).err(),
            Some(EPROTONOSUPPORT)
        );
        // Every method fits the bundle.
        assert!(uapi::METHODS
            .iter()
            .all(|m| m.attrs.len() <= crate::ioctl_bundle::MAX_ATTRS));
    }
}
