// SPDX-License-Identifier: GPL-2.0

//! `ioctl(fd, RDMA_VERBS_IOCTL, hdr)` (C's `ib_uverbs_ioctl`, `ib_uverbs_cmd_verbs`,
//! `ib_uverbs_run_method`, `docs/uverbs-c-facts.md` §3.1): the request header checked in C's
//! order, the method looked up in the tree (`uapi.rs`), its attributes checked against their
//! specs in the order user space sent them (unknown mandatory ones `EPROTONOSUPPORT`, others
//! ignored; duplicates and wrong sizes `EINVAL`; non-zero bytes past an extensible input
//! `EOPNOTSUPP`), the mandatory ones required, then the handler with what [`IoctlBundle`] gives
//! it: constants, inputs, outputs flagged `UVERBS_ATTR_F_VALID_OUTPUT` when written, the
//! driver's data and a new file descriptor.

pub(crate) mod bundle;
pub(crate) mod device;
pub(crate) mod ids;
pub(crate) mod tree;

use crate::{
    file::ufile::Ufile,
    file::uobjects::UObject,
    ioctl::bundle::{DriverView, IoctlBundle, ATTR_SIZE},
    ioctl::tree::{DriverMethod, Kind, Method, ATTR_UHW_IN, ATTR_UHW_OUT},
    uabi::IoctlHdr,
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

    /// [`Self::check`], then the driver id: one other than the device's is `EINVAL`.
    fn check_for(&self, driver_id: u32) -> Result {
        self.check()?;
        if self.driver_id != driver_id {
            return Err(EINVAL);
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
    let method = tree::lookup(ufile, hdr.object_id, hdr.method_id)?;
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
    hdr.check_for(driver_id)?;
    Ok(hdr)
}

/// A driver's method, run by the driver in the file's context: the object it made is put
/// under the reserved handle; the object a destroying method names is destroyed once the
/// driver's part succeeded (C's `UVERBS_ACCESS_DESTROY` finalization).
fn run_driver(b: &mut IoctlBundle<'_>, m: &'static DriverMethod) -> Result {
    let ufile = b.ufile;
    ufile.with_context(|c| {
        let view = DriverView {
            bundle: b,
            objects: &c.objects,
        };
        let made = c.ucontext.driver_method(m, &view)?;
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
        Method::Core(m, _) => (m.handler)(b),
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
        assert!(tree::lookup_core(0, 3).is_ok_and(|m| m.has_udata));
        assert!(tree::lookup_core(16, 0).is_ok());
        // QUERY_CONTEXT and QUERY_MR (what ibv_import_device and ibv_import_mr send).
        assert!(tree::lookup_core(0, 4).is_ok_and(|m| !m.has_udata));
        assert!(tree::lookup_core(7, 3).is_ok_and(|m| m.attrs.len() == 5));
        assert_eq!(tree::lookup_core(0, 5).err(), Some(EPROTONOSUPPORT));
        assert_eq!(
            tree::lookup_core(0x1008, 0x1000).err(),
            Some(EPROTONOSUPPORT)
        );
        // Every method fits the bundle.
        assert!(tree::METHODS
            .iter()
            .all(|m| m.attrs.len() <= crate::ioctl::bundle::MAX_ATTRS));
    }
}

#[kernel::macros::kunit_tests(rdma_rs_uverbs_ioctl_attrs)]
mod attr_tests {
    use super::*;
    use crate::{
        ioctl::bundle::{
            check_attr, const_of, decode_attrs, flags32_of, udata_of, Attr, Need, Specs, MAX_ATTRS,
        },
        ioctl::device::invoked,
    };
    use ib_core::{
        user::spec::{attr, struct_in, struct_out, AttrSpec},
        user::udata::Udata,
    };

    /// `UVERBS_ATTR_F_MANDATORY`.
    const MAND: u16 = 1;
    /// A user address the tests' buffers are at (never read: lengths decide).
    const BUF: u64 = 0x10000;

    /// An attribute array as the C program builds it (up to 24 attributes).
    #[derive(Clone, Copy)]
    struct Req {
        b: [u8; ATTR_SIZE * 24],
        n: usize,
    }

    impl Req {
        fn new() -> Self {
            Self {
                b: [0; ATTR_SIZE * 24],
                n: 0,
            }
        }

        /// With attribute `id` of length `len`, `flags`, `attr_data` and `data` added last.
        fn with(mut self, id: u16, len: u16, flags: u16, attr_data: u16, data: u64) -> Self {
            let at = self.n * ATTR_SIZE;
            self.b[at..at + 2].copy_from_slice(&id.to_le_bytes());
            self.b[at + 2..at + 4].copy_from_slice(&len.to_le_bytes());
            self.b[at + 4..at + 6].copy_from_slice(&flags.to_le_bytes());
            self.b[at + 6..at + 8].copy_from_slice(&attr_data.to_le_bytes());
            self.b[at + 8..at + 16].copy_from_slice(&data.to_le_bytes());
            self.n += 1;
            self
        }

        /// With the 16-bit field at `offset` (2: len, 6: attr_data) of attribute `i` set.
        fn set(mut self, i: usize, offset: usize, v: u16) -> Self {
            let at = i * ATTR_SIZE + offset;
            self.b[at..at + 2].copy_from_slice(&v.to_le_bytes());
            self
        }

        fn id(&self, i: usize) -> u16 {
            u16::from_le_bytes([self.b[i * ATTR_SIZE], self.b[i * ATTR_SIZE + 1]])
        }

        /// Attribute `i`'s 16 bytes.
        fn raw(&self, i: usize) -> [u8; ATTR_SIZE] {
            let mut r = [0u8; ATTR_SIZE];
            r.copy_from_slice(&self.b[i * ATTR_SIZE..(i + 1) * ATTR_SIZE]);
            r
        }

        /// With `other`'s attributes added after these.
        fn then(mut self, other: &Req) -> Self {
            for i in 0..other.n {
                let at = self.n * ATTR_SIZE;
                self.b[at..at + ATTR_SIZE].copy_from_slice(&other.raw(i));
                self.n += 1;
            }
            self
        }

        /// Without attribute `i`.
        fn without(&self, i: usize) -> Self {
            let mut r = Req::new();
            for k in (0..self.n).filter(|&k| k != i) {
                let at = r.n * ATTR_SIZE;
                r.b[at..at + ATTR_SIZE].copy_from_slice(&self.raw(k));
                r.n += 1;
            }
            r
        }

        /// With attribute `i` given once more, last.
        fn twice(&self, i: usize) -> Self {
            let mut r = *self;
            let at = r.n * ATTR_SIZE;
            r.b[at..at + ATTR_SIZE].copy_from_slice(&self.raw(i));
            r.n += 1;
            r
        }

        fn bytes(&self) -> &[u8] {
            &self.b[..self.n * ATTR_SIZE]
        }
    }

    /// `r` decoded against `specs`. Without a context (`ctx` false) what needs one, a new
    /// object or fd, is `EINVAL`, as before GET_CONTEXT; lookups of handles and fds pass.
    fn decode<'s>(specs: impl Into<Specs<'s>>, r: &Req, ctx: bool) -> Result {
        let mut given = [None; MAX_ATTRS];
        decode_attrs(specs.into(), r.bytes(), &mut given, |_, need| match need {
            Need::NewFd | Need::NewIdr if !ctx => Err(EINVAL),
            _ => Ok(()),
        })
    }

    /// The attributes of the core's method (`object`, `method`).
    fn specs_of(object: u16, method: u16) -> &'static [AttrSpec] {
        tree::lookup_core(object, method).map_or(&[], |m| m.attrs)
    }

    #[test]
    fn the_header_as_c_checks_it() -> Result {
        let h = |length: u16, num_attrs: u16, r1: u64, r2: u32, driver_id: u32| {
            let mut b = [0u8; HEADER_SIZE];
            b[0..2].copy_from_slice(&length.to_le_bytes());
            b[6..8].copy_from_slice(&num_attrs.to_le_bytes());
            b[8..16].copy_from_slice(&r1.to_le_bytes());
            b[16..20].copy_from_slice(&driver_id.to_le_bytes());
            b[20..24].copy_from_slice(&r2.to_le_bytes());
            use kernel::transmute::FromBytes;
            IoctlHdr::from_bytes_copy(&b).ok_or(EINVAL)
        };
        // mlx5's driver id is 1.
        assert_eq!(h(24, 0, 0, 0, 1)?.check_for(1), Ok(()));
        assert_eq!(h(40, 1, 0, 0, 1)?.check_for(1), Ok(()));
        // Lengths: shorter than the header, an attribute num_attrs does not count, fewer than
        // num_attrs, over a page (255 attributes, 4104 bytes): EINVAL.
        assert_eq!(h(23, 0, 0, 0, 1)?.check_for(1), Err(EINVAL));
        assert_eq!(h(40, 0, 0, 0, 1)?.check_for(1), Err(EINVAL));
        assert_eq!(h(40, 2, 0, 0, 1)?.check_for(1), Err(EINVAL));
        assert_eq!(h(24 + 16 * 255, 255, 0, 0, 1)?.check_for(1), Err(EINVAL));
        // Reserved fields: EPROTONOSUPPORT, before the driver id.
        assert_eq!(h(24, 0, 1, 0, 1)?.check_for(1), Err(EPROTONOSUPPORT));
        assert_eq!(
            h(24, 0, 0, 0x8000_0000, 1)?.check_for(1),
            Err(EPROTONOSUPPORT)
        );
        assert_eq!(h(24, 0, 1, 0, 2)?.check_for(1), Err(EPROTONOSUPPORT));
        // Another driver's id, or none: EINVAL.
        assert_eq!(h(24, 0, 0, 0, 2)?.check_for(1), Err(EINVAL));
        assert_eq!(h(24, 0, 0, 0, 0)?.check_for(1), Err(EINVAL));
        // Another ioctl, or RDMA_VERBS_IOCTL of another size: ENOIOCTLCMD (ENOTTY).
        assert_eq!(read_header(1, 0xc010_1b01, 0).err(), Some(ENOIOCTLCMD));
        // Objects and methods the core does not have: EPROTONOSUPPORT.
        for (o, m) in [
            (0xffff, 0),
            (20, 0),
            (0x1fff, 0),
            (0, 0x7fff),
            (0, 0x1007),
            (1, 1),
        ] {
            assert_eq!(tree::lookup_core(o, m).err(), Some(EPROTONOSUPPORT));
        }
        Ok(())
    }

    /// One attribute as `uverbs_badinput.c` sweeps it: lengths `min..=max` are accepted
    /// (`max` `None`: any from `min`); missing is `EINVAL` if it is mandatory. These are C's
    /// specs, written out apart from `uapi.rs`.
    struct CSpec {
        id: u16,
        min: u16,
        max: Option<u16>,
        mandatory: bool,
    }

    const fn c(id: u16, min: u16, max: i32, mandatory: bool) -> CSpec {
        CSpec {
            id,
            min,
            max: if max < 0 { None } else { Some(max as u16) },
            mandatory,
        }
    }

    /// `attr_sweep` of `uverbs_badinput.c`: `valid` (which decodes to `ok`) with one
    /// attribute of `cs` broken at a time (lengths outside its range, `attr_data` set, missing,
    /// given twice: `EINVAL`), then unknown attributes (mandatory after the valid ones: `tail`;
    /// optional: ignored; mandatory first: `EPROTONOSUPPORT`; after a bad length: `EINVAL`).
    /// Returns the number of cases. Never inlined: each case's request is a copy on the stack.
    #[inline(never)]
    fn sweep<'s>(
        method: &str,
        specs: impl Into<Specs<'s>>,
        valid: &Req,
        cs: &[CSpec],
        ctx: bool,
        ok: Result,
        tail: Error,
    ) -> usize {
        let specs: Specs<'s> = specs.into();
        let mut n = 0;
        let mut expect = |what: &str, arg: u16, got: Result, want: Result| {
            n += 1;
            if got != want {
                pr_err!("{method}: {what} {arg}: expected {want:?}, got {got:?}\n");
            }
            assert_eq!(got, want);
        };
        expect("the valid request", 0, decode(specs, valid, ctx), ok);
        for s in cs {
            let Some(slot) = (0..valid.n).find(|&k| valid.id(k) == s.id) else {
                expect(
                    "attribute not in the valid request",
                    s.id,
                    Err(ENOENT),
                    Ok(()),
                );
                continue;
            };
            for len in 0..=64u16 {
                if len >= s.min && s.max.is_none_or(|m| len <= m) {
                    continue;
                }
                if len > 16 && len != 33 && len != 64 && len + 1 != s.min {
                    continue;
                }
                let r = valid.set(slot, 2, len);
                expect("length", len, decode(specs, &r, ctx), Err(EINVAL));
            }
            let r = valid.set(slot, 6, 1);
            expect("attr_data set", s.id, decode(specs, &r, ctx), Err(EINVAL));
            if s.mandatory {
                let r = valid.without(slot);
                expect("missing", s.id, decode(specs, &r, ctx), Err(EINVAL));
            }
            let r = valid.twice(slot);
            expect("given twice", s.id, decode(specs, &r, ctx), Err(EINVAL));
        }
        let r = valid.with(29, 8, MAND, 0, 0);
        expect(
            "unknown mandatory last",
            29,
            decode(specs, &r, ctx),
            Err(tail),
        );
        let r = valid.with(0x1005, 8, MAND, 0, 0);
        expect(
            "unknown mandatory last",
            0x1005,
            decode(specs, &r, ctx),
            Err(tail),
        );
        let r = valid.with(29, 8, 0, 0, 0);
        expect("unknown optional, ignored", 29, decode(specs, &r, ctx), ok);
        let r = Req::new().with(29, 8, MAND, 0, 0).then(valid);
        expect(
            "unknown mandatory first",
            29,
            decode(specs, &r, ctx),
            Err(EPROTONOSUPPORT),
        );
        let r = valid.with(29, 8, MAND, 0, 0).set(0, 2, 3);
        expect(
            "a bad length before an unknown mandatory attribute",
            3,
            decode(specs, &r, ctx),
            Err(EINVAL),
        );
        n
    }

    #[test]
    fn device_methods_attributes_as_uverbs_badinput_sweeps_them() {
        let mut n = 0;
        // QUERY_PORT: PORT_NUM (a u8 constant), RESP (struct, 48 bytes up).
        let v = Req::new().with(0, 8, MAND, 0, 1).with(1, 48, MAND, 0, BUF);
        let cs = [c(0, 8, 8, true), c(1, 48, -1, true)];
        n += sweep(
            "QUERY_PORT",
            specs_of(0, 2),
            &v,
            &cs,
            false,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // QUERY_GID_ENTRY: PORT, GID_INDEX (constants), FLAGS (4 or 8), RESP_ENTRY (32 up).
        let v = Req::new()
            .with(0, 8, MAND, 0, 1)
            .with(1, 8, MAND, 0, 0)
            .with(2, 4, MAND, 0, 0)
            .with(3, 32, MAND, 0, BUF);
        let cs = [
            c(0, 8, 8, true),
            c(1, 8, 8, true),
            c(2, 4, 8, true),
            c(3, 32, -1, true),
        ];
        n += sweep(
            "QUERY_GID_ENTRY",
            specs_of(0, 6),
            &v,
            &cs,
            false,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // INVOKE_WRITE: WRITE_CMD (constant), CORE_IN (4 up), CORE_OUT (any).
        let v = Req::new()
            .with(2, 8, MAND, 0, 1)
            .with(0, 8, MAND, 0, BUF)
            .with(1, 176, MAND, 0, BUF);
        let cs = [c(2, 8, 8, true), c(0, 4, -1, false), c(1, 0, -1, false)];
        n += sweep(
            "INVOKE_WRITE",
            specs_of(0, 0),
            &v,
            &cs,
            false,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // ASYNC_EVENT_ALLOC: FD_HANDLE, a new fd, which needs the context.
        let v = Req::new().with(0, 0, MAND, 0, 0);
        let cs = [c(0, 0, 0, true)];
        n += sweep(
            "ASYNC_EVENT_ALLOC",
            specs_of(16, 0),
            &v,
            &cs,
            false,
            Err(EINVAL),
            EINVAL,
        );
        // GET_CONTEXT: NUM_COMP_VECTORS (u32 out), CORE_SUPPORT (u64 out), FD_ARR (4 up), UHW.
        let v = Req::new()
            .with(0, 4, MAND, 0, BUF)
            .with(1, 8, MAND, 0, BUF + 8)
            .with(0x1000, 32, MAND, 0, BUF + 16)
            .with(0x1001, 72, MAND, 0, BUF + 64)
            .with(2, 4, 0, 0, BUF + 200);
        let cs = [
            c(0, 4, 4, false),
            c(1, 8, 8, false),
            c(2, 4, -1, false),
            c(0x1000, 0, -1, false),
            c(0x1001, 0, -1, false),
        ];
        n += sweep(
            "GET_CONTEXT",
            specs_of(0, 3),
            &v,
            &cs,
            false,
            Ok(()),
            EPROTONOSUPPORT,
        );
        assert!(n >= 250);
    }

    #[test]
    fn query_context_attributes_and_those_a_driver_adds() {
        let mut n = 0;
        // QUERY_CONTEXT: NUM_COMP_VECTORS (u32 out), CORE_SUPPORT (u64 out), both optional.
        let v = Req::new()
            .with(0, 4, MAND, 0, BUF)
            .with(1, 8, MAND, 0, BUF + 8);
        let cs = [c(0, 4, 4, false), c(1, 8, 8, false)];
        n += sweep(
            "QUERY_CONTEXT",
            specs_of(0, 4),
            &v,
            &cs,
            false,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // With an attribute a driver added (as mlx5's context response, mandatory, a
        // 72-byte struct): it is checked as the core's are, in the same request.
        static ADDED: [AttrSpec; 1] = [attr(0x1000, struct_out(72, 72), true)];
        let v = v.with(0x1000, 72, MAND, 0, BUF + 16);
        let cs = [
            c(0, 4, 4, false),
            c(1, 8, 8, false),
            c(0x1000, 72, -1, true),
        ];
        n += sweep(
            "QUERY_CONTEXT with a driver attribute",
            Specs::new(specs_of(0, 4), &ADDED),
            &v,
            &cs,
            false,
            Ok(()),
            EPROTONOSUPPORT,
        );
        assert!(n >= 60);
    }

    #[test]
    fn object_methods_attributes_with_a_context() {
        let mut n = 0;
        // PD_DESTROY, MR_DESTROY: the handle (length 0).
        let v = Req::new().with(0, 0, MAND, 0, 2);
        let cs = [c(0, 0, 0, true)];
        n += sweep(
            "PD_DESTROY",
            specs_of(1, 0),
            &v,
            &cs,
            true,
            Ok(()),
            EPROTONOSUPPORT,
        );
        n += sweep(
            "MR_DESTROY",
            specs_of(7, 1),
            &v,
            &cs,
            true,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // QUERY_MR as libibverbs' import sends it: the handle, LKEY, RKEY (u32 out), LENGTH
        // (u64 out), and the optional IOVA (u64 out).
        let q = Req::new()
            .with(0, 0, MAND, 0, 2)
            .with(1, 4, MAND, 0, BUF)
            .with(2, 4, MAND, 0, BUF + 4)
            .with(3, 8, MAND, 0, BUF + 8)
            .with(4, 8, 0, 0, BUF + 16);
        let qcs = [
            c(0, 0, 0, true),
            c(1, 4, 4, true),
            c(2, 4, 4, true),
            c(3, 8, 8, true),
            c(4, 8, 8, false),
        ];
        n += sweep(
            "QUERY_MR",
            specs_of(7, 3),
            &q,
            &qcs,
            true,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // CQ_CREATE as libibverbs sends it, with every optional attribute.
        let v = Req::new()
            .with(0, 0, MAND, 0, 0)
            .with(1, 4, MAND, 0, 64)
            .with(2, 8, MAND, 0, 0x1234)
            .with(4, 4, MAND, 0, 0)
            .with(6, 4, MAND, 0, BUF)
            .with(3, 0, MAND, 0, 5)
            .with(7, 0, MAND, 0, 6)
            .with(5, 4, MAND, 0, 0)
            .with(8, 8, 0, 0, BUF)
            .with(9, 8, 0, 0, 4096)
            .with(10, 0, 0, 0, 7)
            .with(11, 8, 0, 0, 0)
            .with(12, 32, 0, 0, BUF)
            .with(0x1000, 32, MAND, 0, BUF)
            .with(0x1001, 8, MAND, 0, BUF);
        let cs = [
            c(0, 0, 0, true),
            c(1, 4, 4, true),
            c(2, 8, 8, true),
            c(3, 0, 0, false),
            c(4, 4, 4, true),
            c(5, 4, 8, false),
            c(6, 4, 4, true),
            c(7, 0, 0, false),
            c(8, 8, 8, false),
            c(9, 8, 8, false),
            c(10, 0, 0, false),
            c(11, 8, 8, false),
            c(12, 32, 32, false),
            c(0x1000, 0, -1, false),
            c(0x1001, 0, -1, false),
        ];
        n += sweep(
            "CQ_CREATE",
            specs_of(3, 0),
            &v,
            &cs,
            true,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // CQ_DESTROY, QP_DESTROY, SRQ_DESTROY: the handle and the response.
        for (o, resp) in [(3u16, 8u16), (4, 4), (5, 4)] {
            let v = Req::new()
                .with(0, 0, MAND, 0, 1)
                .with(1, resp, MAND, 0, BUF);
            let cs = [c(0, 0, 0, true), c(1, resp, resp.into(), true)];
            n += sweep(
                "*_DESTROY",
                specs_of(o, 1),
                &v,
                &cs,
                true,
                Ok(()),
                EPROTONOSUPPORT,
            );
        }
        // QP_CREATE: handles, the caps (a struct of 20 bytes up), the type, flags, answers.
        let v = Req::new()
            .with(0, 0, MAND, 0, 0)
            .with(1, 0, 0, 0, 1)
            .with(2, 0, MAND, 0, 0)
            .with(3, 0, 0, 0, 2)
            .with(4, 0, MAND, 0, 3)
            .with(5, 0, MAND, 0, 3)
            .with(6, 0, 0, 0, 4)
            .with(7, 8, MAND, 0, 0x77)
            .with(8, 20, MAND, 0, BUF)
            .with(9, 8, MAND, 0, 2)
            .with(10, 4, 0, 0, 0)
            .with(11, 4, 0, 0, 0)
            .with(12, 0, 0, 0, 5)
            .with(13, 20, MAND, 0, BUF)
            .with(14, 4, MAND, 0, BUF)
            .with(15, 32, 0, 0, BUF)
            .with(16, 32, 0, 0, BUF)
            .with(17, 32, 0, 0, BUF)
            .with(0x1000, 40, MAND, 0, BUF)
            .with(0x1001, 8, MAND, 0, BUF);
        let cs = [
            c(0, 0, 0, true),
            c(1, 0, 0, false),
            c(2, 0, 0, false),
            c(3, 0, 0, false),
            c(4, 0, 0, false),
            c(5, 0, 0, false),
            c(6, 0, 0, false),
            c(7, 8, 8, true),
            c(8, 20, -1, true),
            c(9, 8, 8, true),
            c(10, 4, 8, false),
            c(11, 4, 4, false),
            c(12, 0, 0, false),
            c(13, 20, -1, true),
            c(14, 4, 4, true),
            c(15, 32, 32, false),
            c(16, 32, 32, false),
            c(17, 32, 32, false),
        ];
        n += sweep(
            "QP_CREATE",
            specs_of(4, 0),
            &v,
            &cs,
            true,
            Ok(()),
            EPROTONOSUPPORT,
        );
        // SRQ_CREATE.
        let v = Req::new()
            .with(0, 0, MAND, 0, 0)
            .with(1, 0, MAND, 0, 0)
            .with(2, 0, 0, 0, 1)
            .with(3, 0, 0, 0, 2)
            .with(4, 8, MAND, 0, 0x77)
            .with(5, 4, MAND, 0, 64)
            .with(6, 4, MAND, 0, 1)
            .with(7, 4, MAND, 0, 0)
            .with(8, 4, 0, 0, 0)
            .with(9, 8, MAND, 0, 0)
            .with(10, 0, 0, 0, 5)
            .with(11, 4, MAND, 0, BUF)
            .with(12, 4, MAND, 0, BUF)
            .with(13, 4, 0, 0, BUF)
            .with(14, 32, 0, 0, BUF);
        let cs = [
            c(0, 0, 0, true),
            c(1, 0, 0, true),
            c(2, 0, 0, false),
            c(3, 0, 0, false),
            c(4, 8, 8, true),
            c(5, 4, 4, true),
            c(6, 4, 4, true),
            c(7, 4, 4, true),
            c(8, 4, 4, false),
            c(9, 8, 8, true),
            c(10, 0, 0, false),
            c(11, 4, 4, true),
            c(12, 4, 4, true),
            c(13, 4, 4, false),
            c(14, 32, 32, false),
        ];
        n += sweep(
            "SRQ_CREATE",
            specs_of(5, 0),
            &v,
            &cs,
            true,
            Ok(()),
            EPROTONOSUPPORT,
        );
        assert!(n > 600);
    }

    /// Attribute `(id, len, flags, attr_data, data)` at position `idx` of an array.
    fn one(idx: usize, id: u16, len: u16, attr_data: u16, data: u64) -> Result<Attr> {
        Attr::decode(idx, &Req::new().with(id, len, 0, attr_data, data).raw(0))
    }

    /// `kind`'s checks of `a` with the tail past the struct zero (`zero`) or not.
    fn check(a: &Attr, kind: Kind, zero: bool) -> Result<Need> {
        check_attr(a, kind, |_, _| zero)
    }

    #[test]
    fn each_kind_checks_its_fields() -> Result {
        use ib_core::user::spec::{type_in, CONST_IN, FLAGS_IN};
        let cap = struct_in(20, 20);
        // A struct input longer than the struct: its tail must be zero (EOPNOTSUPP), then
        // attr_data is EINVAL as for any input.
        assert_eq!(check(&one(0, 8, 24, 0, BUF)?, cap, true), Ok(Need::Nothing));
        assert_eq!(check(&one(0, 8, 24, 0, BUF)?, cap, false), Err(EOPNOTSUPP));
        assert_eq!(check(&one(0, 8, 24, 1, BUF)?, cap, false), Err(EOPNOTSUPP));
        assert_eq!(check(&one(0, 8, 24, 1, BUF)?, cap, true), Err(EINVAL));
        assert_eq!(check(&one(0, 8, 19, 0, BUF)?, cap, true), Err(EINVAL));
        // The tail is not looked at for the struct's own size or a fixed-size input.
        assert_eq!(
            check(&one(0, 8, 20, 0, BUF)?, cap, false),
            Ok(Need::Nothing)
        );
        assert_eq!(check(&one(0, 8, 9, 0, 1)?, CONST_IN, true), Err(EINVAL));
        assert_eq!(
            check(&one(0, 8, 8, 0, 1)?, CONST_IN, false),
            Ok(Need::Nothing)
        );
        assert_eq!(
            check(&one(0, 8, 4, 0, 1)?, FLAGS_IN, false),
            Ok(Need::Nothing)
        );
        assert_eq!(check(&one(0, 8, 2, 0, 1)?, FLAGS_IN, false), Err(EINVAL));
        assert_eq!(check(&one(0, 8, 4, 0, 1)?, type_in(8), false), Err(EINVAL));
        // Handles: length 0, attr_data 0, not negative (EINVAL); then the lookup.
        let pd = Kind::IdrDestroy { object: 1 };
        let rd = Kind::IdrRead { object: 3 };
        assert_eq!(
            check(&one(0, 0, 0, 0, 7)?, pd, false),
            Ok(Need::Idr { object: 1 })
        );
        assert_eq!(
            check(&one(0, 0, 0, 0, 1 << 40)?, rd, false),
            Ok(Need::Idr { object: 3 })
        );
        assert_eq!(check(&one(0, 0, 0, 0, u64::MAX)?, pd, false), Err(EINVAL));
        assert_eq!(check(&one(0, 0, 0, 0, 1 << 63)?, rd, false), Err(EINVAL));
        assert_eq!(check(&one(0, 0, 8, 0, 0)?, pd, false), Err(EINVAL));
        assert_eq!(check(&one(0, 0, 0, 1, 0)?, rd, false), Err(EINVAL));
        // New handles and fds: length 0, attr_data 0.
        let new = Kind::IdrNew { object: 3 };
        assert_eq!(check(&one(0, 0, 0, 0, 99)?, new, false), Ok(Need::NewIdr));
        assert_eq!(check(&one(0, 0, 8, 0, 0)?, new, false), Err(EINVAL));
        assert_eq!(
            check(&one(0, 0, 0, 0, 0)?, Kind::FdNew, false),
            Ok(Need::NewFd)
        );
        assert_eq!(check(&one(0, 0, 0, 1, 0)?, Kind::FdNew, false), Err(EINVAL));
        // Fds read: an `int` (EINVAL past it; -1 is for the lookup, EBADF).
        let ch = Kind::FdRead { object: 2 };
        let fd = |fd| Need::FdRead { object: 2, fd };
        assert_eq!(check(&one(0, 3, 0, 0, 5)?, ch, false), Ok(fd(5)));
        assert_eq!(check(&one(0, 3, 0, 0, u64::MAX)?, ch, false), Ok(fd(-1)));
        assert_eq!(check(&one(0, 3, 0, 0, 1 << 32)?, ch, false), Err(EINVAL));
        assert_eq!(check(&one(0, 3, 0, 0, 1 << 31)?, ch, false), Err(EINVAL));
        assert_eq!(check(&one(0, 3, 4, 0, 5)?, ch, false), Err(EINVAL));
        assert_eq!(check(&one(0, 3, 0, 1, 5)?, ch, false), Err(EINVAL));
        // Raw fds: the same, nothing looked up.
        assert_eq!(
            check(&one(0, 10, 0, 0, 7)?, Kind::RawFd, false),
            Ok(Need::Nothing)
        );
        assert_eq!(
            check(&one(0, 10, 0, 0, 1 << 31)?, Kind::RawFd, false),
            Err(EINVAL)
        );
        assert_eq!(
            check(&one(0, 10, 8, 0, 7)?, Kind::RawFd, false),
            Err(EINVAL)
        );
        Ok(())
    }

    #[test]
    fn struct_tails_and_array_order() {
        // A struct input of 2 to 4 bytes, and a handle, of a made-up method.
        static SPECS: [AttrSpec; 2] = [
            attr(1, struct_in(2, 4), true),
            attr(2, Kind::IdrRead { object: 1 }, false),
        ];
        let specs = &SPECS[..];
        let r = |len: u16, data: u64| Req::new().with(1, len, MAND, 0, data);
        // Inline: the bytes past 4 of the 8 given must be zero.
        assert_eq!(decode(specs, &r(8, 0x0000_0000_0102_0304), true), Ok(()));
        assert_eq!(
            decode(specs, &r(8, 0x0100_0000_0102_0304), true),
            Err(EOPNOTSUPP)
        );
        assert_eq!(
            decode(specs, &r(5, 0x0000_0001_0102_0304), true),
            Err(EOPNOTSUPP)
        );
        assert_eq!(decode(specs, &r(5, 0x0000_0100_0102_0304), true), Ok(()));
        assert_eq!(decode(specs, &r(1, 0), true), Err(EINVAL));
        // In user memory that cannot be read (a kernel thread has none): not zero.
        assert_eq!(decode(specs, &r(16, BUF), true), Err(EOPNOTSUPP));
        assert_eq!(decode(specs, &r(4, BUF), true), Ok(()));
        // The first failing attribute decides, in array order: a lookup's errno before a later
        // bad length, and a bad length before a later lookup.
        let mut given = [None; MAX_ATTRS];
        let lookup_fails = |_: &Attr, need: Need| match need {
            Need::Idr { .. } => Err(ENOENT),
            _ => Ok(()),
        };
        let bad_len_after = Req::new().with(2, 0, 0, 0, 9).then(&r(1, 0));
        assert_eq!(
            decode_attrs(
                specs.into(),
                bad_len_after.bytes(),
                &mut given,
                lookup_fails
            ),
            Err(ENOENT)
        );
        let lookup_after = r(1, 0).with(2, 0, 0, 0, 9);
        assert_eq!(
            decode_attrs(specs.into(), lookup_after.bytes(), &mut given, lookup_fails),
            Err(EINVAL)
        );
        // A method with more attributes than a bundle holds: EINVAL.
        static MANY: [AttrSpec; MAX_ATTRS + 1] = {
            let mut s = [const { attr(0, Kind::FdNew, false) }; MAX_ATTRS + 1];
            s[0] = attr(1, struct_in(2, 4), true);
            s
        };
        let mut given = [None; MAX_ATTRS];
        assert_eq!(
            decode_attrs(MANY[..].into(), r(4, 0).bytes(), &mut given, |_, _| Ok(())),
            Err(EINVAL)
        );
    }

    #[test]
    fn constants_flags_and_driver_data() -> Result {
        // QUERY_PORT's port is a u8, INVOKE_WRITE's command and GID indices u32s: EINVAL above.
        let c8 = one(0, 0, 8, 0, 257)?;
        assert_eq!(const_of(Some(&c8), u8::MAX.into()), Err(EINVAL));
        assert_eq!(const_of(Some(&c8), u32::MAX.into()), Ok(257));
        let c32 = one(0, 2, 8, 0, 1 << 32)?;
        assert_eq!(const_of(Some(&c32), u32::MAX.into()), Err(EINVAL));
        assert_eq!(const_of(None, u64::MAX), Err(ENOENT));
        // QUERY_GID_ENTRY's flags: none known; 8-byte flags with bit 32 are not 4-byte ones.
        assert_eq!(flags32_of(Some(&one(0, 2, 4, 0, 1)?), 0), Err(EINVAL));
        assert_eq!(flags32_of(Some(&one(0, 2, 8, 0, 1 << 32)?), 0), Err(EINVAL));
        assert_eq!(flags32_of(Some(&one(0, 2, 4, 0, 1 << 32)?), 0), Ok(0));
        assert_eq!(flags32_of(Some(&one(0, 2, 8, 0, 0)?), 0), Ok(0));
        assert_eq!(
            flags32_of(Some(&one(0, 2, 2, 0, 0)?), u32::MAX),
            Err(EINVAL)
        );
        assert_eq!(flags32_of(Some(&one(0, 5, 4, 0, 6)?), 7), Ok(6));
        assert_eq!(flags32_of(None, 0), Ok(0));
        // UHW: an inline input is read from the array (attribute 2's data at +40), a longer
        // one where it points; the output where it points; absent ones are empty.
        let arr = 0x20000usize;
        let inl = one(2, 0x1000, 8, 0, 0x55)?;
        let ptr = one(2, 0x1000, 32, 0, BUF)?;
        let out = one(3, 0x1001, 72, 0, BUF + 64)?;
        let b = BUF as usize;
        assert_eq!(
            udata_of(arr, Some(&inl), Some(&out)),
            Udata::new(arr + 40, 8, b + 64, 72)
        );
        assert_eq!(udata_of(arr, Some(&ptr), None), Udata::new(b, 32, 0, 0));
        assert_eq!(udata_of(arr, None, None), Udata::empty());
        // INVOKE_WRITE's command: C's write table, then its sizes against CORE_IN/CORE_OUT.
        let io = |inlen: usize, outlen: usize| Udata::new(b, inlen, b, outlen);
        assert_eq!(invoked(0x100, 0, &io(8, 176)).err(), Some(EINVAL));
        assert_eq!(invoked(41, 0, &io(8, 176)).err(), Some(EOPNOTSUPP));
        assert_eq!(invoked(7, 0, &io(8, 176)).err(), Some(EOPNOTSUPP));
        assert_eq!(invoked(1, 0, &io(0, 0)).err(), Some(ENOSPC));
        assert_eq!(invoked(1, 0, &io(8, 175)).err(), Some(ENOSPC));
        assert_eq!(invoked(1, 0, &io(4, 176)).err(), Some(ENOSPC));
        assert!(invoked(1, 0, &io(8, 176)).is_ok());
        // Extended commands record no sizes; one without a handler is EOPNOTSUPP.
        assert!(invoked(0x8000_0001, 0, &io(0, 0)).is_ok());
        assert_eq!(invoked(0x8000_0018, 0, &io(0, 0)).err(), Some(EOPNOTSUPP));
        Ok(())
    }
}
