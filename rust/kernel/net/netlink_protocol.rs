// SPDX-License-Identifier: GPL-2.0

//! Netlink protocols served by the kernel.
//!
//! - [`KernelSocket`]: the kernel end of a netlink protocol in one network namespace
//!   (`netlink_kernel_create`); user space sends requests to it, it sends replies and multicast
//!   notifications. Requests reach a [`Handler`] one message at a time, with the acknowledgement
//!   rules of `netlink_rcv_skb`.
//! - [`Request`]: one request: its header, the sender's port id and capabilities, its attributes
//!   parsed against a [`Policy`] ([`Attrs`]), a unicast reply, or a dump ([`Dump`]).
//! - [`Message`] and [`MsgWriter`]: building messages (`nlmsg_put`, `nla_put_*`, nests, end and
//!   cancel).
//!
//! C headers: [`include/linux/netlink.h`](srctree/include/linux/netlink.h),
//! [`include/net/netlink.h`](srctree/include/net/netlink.h)

use crate::{
    alloc::{AllocError, Flags},
    bindings,
    error::to_result,
    net::namespace::Net,
    prelude::*,
    types::Opaque,
    ThisModule,
};
use core::{
    ffi::c_int,
    marker::PhantomData,
    mem::ManuallyDrop,
    ptr::{self, NonNull},
};

/// The payload size that fits a default netlink message (`NLMSG_DEFAULT_SIZE`).
pub const NLMSG_DEFAULT_SIZE: usize = bindings::NLMSG_DEFAULT_SIZE;

/// Length of a message header (`NLMSG_HDRLEN`).
pub const NLMSG_HDRLEN: usize = nlmsg_align(core::mem::size_of::<bindings::nlmsghdr>());

/// Length of an attribute header (`NLA_HDRLEN`).
pub const NLA_HDRLEN: usize = nlmsg_align(core::mem::size_of::<bindings::nlattr>());

/// Types below this are control messages (`NLMSG_MIN_TYPE`).
pub const NLMSG_MIN_TYPE: u16 = bindings::NLMSG_MIN_TYPE as u16;

/// Message flags (`NLM_F_*`).
pub mod flags {
    use crate::bindings;

    /// A request (`NLM_F_REQUEST`).
    pub const REQUEST: u16 = bindings::NLM_F_REQUEST as u16;
    /// Part of a multipart message (`NLM_F_MULTI`).
    pub const MULTI: u16 = bindings::NLM_F_MULTI as u16;
    /// The sender asks for an acknowledgement (`NLM_F_ACK`).
    pub const ACK: u16 = bindings::NLM_F_ACK as u16;
    /// A dump request (`NLM_F_DUMP`).
    pub const DUMP: u16 = bindings::NLM_F_DUMP as u16;
}

/// Rounds a length up to the netlink alignment (`NLMSG_ALIGN`, `NLA_ALIGN`).
pub const fn nlmsg_align(len: usize) -> usize {
    (len + 3) & !3
}

/// A netlink message (header and payload) in a buffer, borrowed.
///
/// # Invariants
///
/// The header is readable, and `nlmsg_len` bytes from it lie in the same buffer.
#[repr(transparent)]
pub struct MsgHeader(Opaque<bindings::nlmsghdr>);

impl MsgHeader {
    /// # Safety
    ///
    /// `ptr` points to a message header followed by `nlmsg_len` readable bytes (header
    /// included), valid and unchanged for `'a`.
    unsafe fn from_raw<'a>(ptr: *const bindings::nlmsghdr) -> &'a MsgHeader {
        // SAFETY: `MsgHeader` is transparent over `nlmsghdr`; the caller guarantees validity.
        unsafe { &*ptr.cast::<MsgHeader>() }
    }

    fn raw(&self) -> bindings::nlmsghdr {
        // SAFETY: The header is readable by the type invariants.
        unsafe { self.0.get().read() }
    }

    /// Length of the message, header included (`nlmsg_len`).
    pub fn len(&self) -> u32 {
        self.raw().nlmsg_len
    }

    /// Whether the message is just a header.
    pub fn is_empty(&self) -> bool {
        self.len() as usize <= NLMSG_HDRLEN
    }

    /// The message type (`nlmsg_type`).
    pub fn msg_type(&self) -> u16 {
        self.raw().nlmsg_type
    }

    /// The message flags (`nlmsg_flags`, see [`flags`]).
    pub fn flags(&self) -> u16 {
        self.raw().nlmsg_flags
    }

    /// The sequence number (`nlmsg_seq`).
    pub fn seq(&self) -> u32 {
        self.raw().nlmsg_seq
    }

    /// The port id the message header carries (`nlmsg_pid`).
    pub fn pid(&self) -> u32 {
        self.raw().nlmsg_pid
    }

    fn parse_with<'a, const N: usize>(
        &'a self,
        policy: &Policy<N>,
        validation: Validation,
        extack: *mut bindings::netlink_ext_ack,
    ) -> Result<Attrs<'a, N>> {
        const { assert!(N > 0 && N <= u16::MAX as usize) };
        let mut attrs = Attrs {
            tb: [ptr::null_mut(); N],
            extack,
            _msg: PhantomData,
        };
        // SAFETY: The message lies in one buffer (type invariants), `tb` has room for `N`
        // entries, i.e. types up to `N - 1`, and `policy` has `N` entries. `extack` is null or a
        // valid extended ack. The kernel validates the attribute lengths against the message.
        to_result(unsafe {
            bindings::__nlmsg_parse(
                self.0.get(),
                0,
                attrs.tb.as_mut_ptr(),
                (N - 1) as c_int,
                policy.0.as_ptr().cast(),
                validation as u32,
                extack,
            )
        })?;
        Ok(attrs)
    }

    /// Parses the attributes that follow the header against `policy` (`__nlmsg_parse` with no
    /// family header).
    pub fn parse<'a, const N: usize>(
        &'a self,
        policy: &Policy<N>,
        validation: Validation,
    ) -> Result<Attrs<'a, N>> {
        self.parse_with(policy, validation, ptr::null_mut())
    }
}

/// How strictly attributes are validated against a policy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub enum Validation {
    /// `NL_VALIDATE_LIBERAL`: unknown attributes are ignored, fixed-size attributes that are too
    /// long are accepted (with a rate-limited warning), too short ones fail with `ERANGE`.
    Liberal = bindings::netlink_validation_NL_VALIDATE_LIBERAL,
    /// `NL_VALIDATE_STRICT`: `nlmsg_parse`'s validation: unknown or `NLA_UNSPEC` attributes,
    /// wrong lengths, trailing data and nests without `NLA_F_NESTED` fail with `EINVAL`.
    Strict = bindings::netlink_validation_NL_VALIDATE_TRAILING
        | bindings::netlink_validation_NL_VALIDATE_MAXTYPE
        | bindings::netlink_validation_NL_VALIDATE_UNSPEC
        | bindings::netlink_validation_NL_VALIDATE_STRICT_ATTRS
        | bindings::netlink_validation_NL_VALIDATE_NESTED,
}

/// The policy of one attribute type (`struct nla_policy`).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct AttrPolicy(bindings::nla_policy);

impl AttrPolicy {
    const fn of(ty: u32, len: u16) -> Self {
        // SAFETY: An all-zero `nla_policy` is valid (`NLA_UNSPEC`, no union member set).
        let mut p: bindings::nla_policy = unsafe { core::mem::zeroed() };
        p.type_ = ty as u8;
        p.len = len;
        Self(p)
    }

    /// No constraint (`NLA_UNSPEC`, length 0).
    pub const UNSPEC: Self = Self::of(bindings::NLA_UNSPEC, 0);
    /// `NLA_U8`.
    pub const U8: Self = Self::of(bindings::NLA_U8, 0);
    /// `NLA_U16`.
    pub const U16: Self = Self::of(bindings::NLA_U16, 0);
    /// `NLA_U32`.
    pub const U32: Self = Self::of(bindings::NLA_U32, 0);
    /// `NLA_U64`.
    pub const U64: Self = Self::of(bindings::NLA_U64, 0);
    /// `NLA_S32`.
    pub const S32: Self = Self::of(bindings::NLA_S32, 0);
    /// `NLA_S64`.
    pub const S64: Self = Self::of(bindings::NLA_S64, 0);
    /// `NLA_NESTED` (no policy for the nested attributes).
    pub const NESTED: Self = Self::of(bindings::NLA_NESTED, 0);
    /// `NLA_NUL_STRING` of any length.
    pub const NUL_STRING: Self = Self::of(bindings::NLA_NUL_STRING, 0);

    /// `NLA_NUL_STRING` of at most `max_len` characters before the NUL.
    pub const fn nul_string(max_len: u16) -> Self {
        Self::of(bindings::NLA_NUL_STRING, max_len)
    }

    /// `NLA_BINARY` of at most `max_len` bytes (0: any length).
    pub const fn binary(max_len: u16) -> Self {
        Self::of(bindings::NLA_BINARY, max_len)
    }

    /// `NLA_UNSPEC` of at least `min_len` bytes (C's `{ .len = n }`).
    pub const fn min_len(min_len: u16) -> Self {
        Self::of(bindings::NLA_UNSPEC, min_len)
    }
}

/// A policy: one [`AttrPolicy`] per attribute type `0..N` (the C `nla_policy` array, with
/// `maxtype = N - 1`). Build it in a `static` with [`Policy::new`] and [`Policy::with`].
#[repr(transparent)]
pub struct Policy<const N: usize>([AttrPolicy; N]);

// SAFETY: A policy is read-only data (the union's pointers are never set by this API).
unsafe impl<const N: usize> Sync for Policy<N> {}

impl<const N: usize> Policy<N> {
    /// A policy that constrains nothing.
    pub const fn new() -> Self {
        Self([AttrPolicy::UNSPEC; N])
    }

    /// Sets the policy of attribute type `attr`. Meant for constant evaluation: an `attr` out of
    /// range fails the build there.
    pub const fn with(mut self, attr: u16, policy: AttrPolicy) -> Self {
        self.0[attr as usize] = policy;
        self
    }

    /// The highest attribute type the policy covers.
    pub const fn max_type(&self) -> u16 {
        (N - 1) as u16
    }
}

impl<const N: usize> Default for Policy<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Attributes of a message, parsed and validated against a [`Policy`] of `N` entries.
pub struct Attrs<'a, const N: usize> {
    /// Validated attributes by type (null: absent); they point into the message.
    tb: [*mut bindings::nlattr; N],
    /// Where validation errors are reported (null: nowhere), valid for `'a`.
    extack: *mut bindings::netlink_ext_ack,
    _msg: PhantomData<&'a MsgHeader>,
}

impl<'a, const N: usize> Attrs<'a, N> {
    /// The payload of attribute `attr`, if present.
    pub fn get(&self, attr: u16) -> Option<&'a [u8]> {
        let nla = *self.tb.get(attr as usize)?;
        if nla.is_null() {
            return None;
        }
        // SAFETY: `__nla_parse` only records attributes whose header and `nla_len` bytes lie in
        // the message, which lives for `'a`.
        let total = unsafe { (*nla).nla_len } as usize;
        let len = total.saturating_sub(NLA_HDRLEN);
        // SAFETY: The payload follows the (aligned) header and has `len` bytes in the message.
        Some(unsafe { core::slice::from_raw_parts(nla.cast::<u8>().add(NLA_HDRLEN), len) })
    }

    /// Whether attribute `attr` is present.
    pub fn has(&self, attr: u16) -> bool {
        self.get(attr).is_some()
    }

    fn bytes<const B: usize>(&self, attr: u16) -> Option<[u8; B]> {
        self.get(attr)?.get(..B)?.try_into().ok()
    }

    /// The first byte of attribute `attr` (`nla_get_u8`); `None` if absent or empty.
    pub fn u8(&self, attr: u16) -> Option<u8> {
        self.bytes::<1>(attr).map(|b| b[0])
    }

    /// Attribute `attr` as `nla_get_u16` reads it; `None` if absent or shorter.
    pub fn u16(&self, attr: u16) -> Option<u16> {
        self.bytes(attr).map(u16::from_ne_bytes)
    }

    /// Attribute `attr` as `nla_get_u32` reads it; `None` if absent or shorter.
    pub fn u32(&self, attr: u16) -> Option<u32> {
        self.bytes(attr).map(u32::from_ne_bytes)
    }

    /// Attribute `attr` as `nla_get_u64` reads it; `None` if absent or shorter.
    pub fn u64(&self, attr: u16) -> Option<u64> {
        self.bytes(attr).map(u64::from_ne_bytes)
    }

    /// Parses the attributes nested in attribute `attr` against `policy` (`nla_parse_nested`
    /// with `Validation::Strict`, `nla_parse_nested_deprecated` with `Validation::Liberal`);
    /// `None` if `attr` is absent.
    pub fn parse_nested<const M: usize>(
        &self,
        attr: u16,
        policy: &Policy<M>,
        validation: Validation,
    ) -> Option<Result<Attrs<'a, M>>> {
        const { assert!(M > 0 && M <= u16::MAX as usize) };
        let payload = self.get(attr)?;
        let mut nested = Attrs {
            tb: [ptr::null_mut(); M],
            extack: self.extack,
            _msg: PhantomData,
        };
        let Ok(len) = c_int::try_from(payload.len()) else {
            return Some(Err(EINVAL));
        };
        // SAFETY: `payload` is the nested attributes' bytes in the message, which lives for
        // `'a`; `tb` has room for `M` entries and `policy` has `M`; `extack` is null or valid.
        let ret = unsafe {
            bindings::__nla_parse(
                nested.tb.as_mut_ptr(),
                (M - 1) as c_int,
                payload.as_ptr().cast(),
                len,
                policy.0.as_ptr().cast(),
                validation as u32,
                self.extack,
            )
        };
        Some(to_result(ret).map(|()| nested))
    }

    /// Attribute `attr` as a string: the payload up to its first NUL (all of it if there is
    /// none), as `nla_strscpy` copies it.
    pub fn string(&self, attr: u16) -> Option<&'a [u8]> {
        let p = self.get(attr)?;
        Some(match p.iter().position(|&b| b == 0) {
            Some(end) => p.get(..end).unwrap_or(p),
            None => p,
        })
    }
}

/// A message being written into a buffer: its header is in place, attributes are appended.
///
/// Dropping it without [`MsgWriter::end`] cancels it (`nlmsg_cancel`): the buffer is trimmed
/// back to where the message started.
///
/// # Invariants
///
/// `skb` is a valid buffer, borrowed exclusively for `'a`, and `nlh` is the header of the last
/// message started in it.
pub struct MsgWriter<'a> {
    skb: NonNull<bindings::sk_buff>,
    nlh: NonNull<bindings::nlmsghdr>,
    _skb: PhantomData<&'a mut bindings::sk_buff>,
}

impl<'a> MsgWriter<'a> {
    /// # Safety
    ///
    /// `skb` is a valid buffer that nothing else uses for `'a`.
    unsafe fn start(
        skb: *mut bindings::sk_buff,
        portid: u32,
        seq: u32,
        msg_type: u16,
        flags: u16,
    ) -> Result<Self> {
        // SAFETY: `skb` is valid (caller); `nlmsg_put` returns null when the header does not fit.
        let nlh =
            unsafe { bindings::nlmsg_put(skb, portid, seq, msg_type.into(), 0, flags.into()) };
        let nlh = NonNull::new(nlh).ok_or(EMSGSIZE)?;
        let skb = NonNull::new(skb).ok_or(EINVAL)?;
        // INVARIANT: `nlh` was just put in `skb`.
        Ok(Self {
            skb,
            nlh,
            _skb: PhantomData,
        })
    }

    fn skb(&self) -> *mut bindings::sk_buff {
        self.skb.as_ptr()
    }

    fn put_raw(&mut self, attr: u16, data: &[u8]) -> Result {
        let len = c_int::try_from(data.len()).map_err(|_| EMSGSIZE)?;
        // SAFETY: `skb` is valid (type invariants); `data` is readable for `len` bytes.
        to_result(unsafe { bindings::nla_put(self.skb(), attr.into(), len, data.as_ptr().cast()) })
    }

    /// Appends a `u8` attribute (`nla_put_u8`).
    pub fn put_u8(&mut self, attr: u16, value: u8) -> Result {
        self.put_raw(attr, &[value])
    }

    /// Appends a `u16` attribute (`nla_put_u16`).
    pub fn put_u16(&mut self, attr: u16, value: u16) -> Result {
        self.put_raw(attr, &value.to_ne_bytes())
    }

    /// Appends a `u32` attribute (`nla_put_u32`).
    pub fn put_u32(&mut self, attr: u16, value: u32) -> Result {
        self.put_raw(attr, &value.to_ne_bytes())
    }

    /// Appends a `u64` attribute, preceded by a `pad` attribute if needed to align the value
    /// (`nla_put_u64_64bit`).
    pub fn put_u64(&mut self, attr: u16, value: u64, pad: u16) -> Result {
        let v = value.to_ne_bytes();
        // SAFETY: `skb` is valid (type invariants); `v` is readable for 8 bytes.
        to_result(unsafe {
            bindings::nla_put_64bit(self.skb(), attr.into(), 8, v.as_ptr().cast(), pad.into())
        })
    }

    /// Appends a string attribute with its terminating NUL (`nla_put_string`). The string ends
    /// at its first NUL, if it has one.
    pub fn put_string(&mut self, attr: u16, s: &[u8]) -> Result {
        let s = match s.iter().position(|&b| b == 0) {
            Some(end) => s.get(..end).unwrap_or(s),
            None => s,
        };
        let len = c_int::try_from(s.len() + 1).map_err(|_| EMSGSIZE)?;
        // SAFETY: `skb` is valid (type invariants); `nla_reserve` returns null if there is no room.
        let nla = unsafe { bindings::nla_reserve(self.skb(), attr.into(), len) };
        if nla.is_null() {
            return Err(EMSGSIZE);
        }
        // SAFETY: `nla_reserve` made room for `s.len() + 1` payload bytes after the header.
        unsafe {
            let data = nla.cast::<u8>().add(NLA_HDRLEN);
            ptr::copy_nonoverlapping(s.as_ptr(), data, s.len());
            data.add(s.len()).write(0);
        }
        Ok(())
    }

    /// Appends an attribute with `data` as its payload (`nla_put`).
    pub fn put_bytes(&mut self, attr: u16, data: &[u8]) -> Result {
        self.put_raw(attr, data)
    }

    /// Starts a nested attribute with `NLA_F_NESTED` set (`nla_nest_start`).
    pub fn nest(&mut self, attr: u16) -> Result<Nest<'_, 'a>> {
        // SAFETY: `skb` is valid (type invariants).
        let start = unsafe { bindings::nla_nest_start(self.skb(), attr.into()) };
        Nest::new(self, start)
    }

    /// Starts a nested attribute without `NLA_F_NESTED` (`nla_nest_start_noflag`).
    pub fn nest_noflag(&mut self, attr: u16) -> Result<Nest<'_, 'a>> {
        // SAFETY: `skb` is valid (type invariants).
        let start = unsafe { bindings::nla_nest_start_noflag(self.skb(), attr.into()) };
        Nest::new(self, start)
    }

    /// Bytes in the buffer so far, this message included.
    pub fn buffer_len(&self) -> usize {
        // SAFETY: `skb` is valid (type invariants).
        unsafe { (*self.skb()).len as usize }
    }

    /// Finishes the message: its length is set (`nlmsg_end`).
    pub fn end(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `nlh` is the header of the message being written in `skb` (type invariants).
        unsafe { bindings::nlmsg_end(this.skb(), this.nlh.as_ptr()) };
    }

    /// Removes the message from the buffer (`nlmsg_cancel`).
    pub fn cancel(self) {
        drop(self);
    }
}

impl Drop for MsgWriter<'_> {
    fn drop(&mut self) {
        // SAFETY: `nlh` is the header of the message being written in `skb` (type invariants);
        // trimming the buffer back to it drops the message.
        unsafe { bindings::nlmsg_cancel(self.skb(), self.nlh.as_ptr()) };
    }
}

/// A nested attribute being written; it dereferences to the message's [`MsgWriter`] for the
/// nested attributes. Dropping it without [`Nest::end`] removes it (`nla_nest_cancel`).
///
/// # Invariants
///
/// `start` is the header of a nested attribute begun in the writer's buffer, and nothing before
/// it has been removed.
pub struct Nest<'w, 'a> {
    writer: &'w mut MsgWriter<'a>,
    start: NonNull<bindings::nlattr>,
}

impl<'w, 'a> Nest<'w, 'a> {
    fn new(writer: &'w mut MsgWriter<'a>, start: *mut bindings::nlattr) -> Result<Self> {
        let start = NonNull::new(start).ok_or(EMSGSIZE)?;
        // INVARIANT: `start` was just begun in the writer's buffer.
        Ok(Self { writer, start })
    }

    /// Closes the nest: its length covers what was written since it started (`nla_nest_end`).
    pub fn end(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `start` is a nest header in the buffer (type invariants).
        unsafe { bindings::nla_nest_end(this.writer.skb(), this.start.as_ptr()) };
    }

    /// Removes the nest and everything in it (`nla_nest_cancel`).
    pub fn cancel(self) {
        drop(self);
    }
}

impl<'a> core::ops::Deref for Nest<'_, 'a> {
    type Target = MsgWriter<'a>;

    fn deref(&self) -> &MsgWriter<'a> {
        self.writer
    }
}

impl<'a> core::ops::DerefMut for Nest<'_, 'a> {
    fn deref_mut(&mut self) -> &mut MsgWriter<'a> {
        self.writer
    }
}

impl Drop for Nest<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: `start` is a nest header in the buffer (type invariants); trimming back to it
        // removes the nest.
        unsafe { bindings::nla_nest_cancel(self.writer.skb(), self.start.as_ptr()) };
    }
}

/// An owned netlink buffer (`nlmsg_new`) holding messages to send.
///
/// # Invariants
///
/// `skb` is a buffer owned by this object.
pub struct Message {
    skb: NonNull<bindings::sk_buff>,
}

// SAFETY: The buffer is owned and not shared; it can be sent or freed from any thread.
unsafe impl Send for Message {}

impl Message {
    /// Allocates a buffer with room for `payload` bytes of message payload (`nlmsg_new`); use
    /// [`NLMSG_DEFAULT_SIZE`] for the usual size.
    pub fn new(payload: usize, flags: Flags) -> Result<Self, AllocError> {
        // SAFETY: `nlmsg_new` only needs valid integers.
        let skb = unsafe { bindings::nlmsg_new(payload, flags.as_raw()) };
        Ok(Self {
            skb: NonNull::new(skb).ok_or(AllocError)?,
        })
    }

    /// Starts a message (`nlmsg_put`) with no family header. `EMSGSIZE` if it does not fit.
    pub fn put(
        &mut self,
        portid: u32,
        seq: u32,
        msg_type: u16,
        flags: u16,
    ) -> Result<MsgWriter<'_>> {
        // SAFETY: The buffer is owned (type invariants) and borrowed exclusively for the writer's
        // lifetime.
        unsafe { MsgWriter::start(self.skb.as_ptr(), portid, seq, msg_type, flags) }
    }

    /// Bytes in the buffer.
    pub fn len(&self) -> usize {
        // SAFETY: The buffer is valid (type invariants).
        unsafe { (*self.skb.as_ptr()).len as usize }
    }

    /// Whether the buffer holds no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first complete message in the buffer, if any.
    pub fn first(&self) -> Option<&MsgHeader> {
        let skb = self.skb.as_ptr();
        // SAFETY: The buffer is valid (type invariants); its `len` bytes at `data` are readable.
        let (data, len) = unsafe { ((*skb).data, (*skb).len as usize) };
        if len < NLMSG_HDRLEN {
            return None;
        }
        // SAFETY: At least a header's worth of bytes are readable at `data`.
        let mlen = unsafe { (*data.cast::<bindings::nlmsghdr>()).nlmsg_len } as usize;
        if mlen < NLMSG_HDRLEN || mlen > len {
            return None;
        }
        // SAFETY: The header and its `nlmsg_len` bytes are in the buffer, which `&self` keeps
        // alive and unchanged.
        Some(unsafe { MsgHeader::from_raw(data.cast()) })
    }

    fn into_raw(self) -> *mut bindings::sk_buff {
        ManuallyDrop::new(self).skb.as_ptr()
    }

    /// Takes ownership of a buffer C code filled (a C module's `rdma_nl_unicast`).
    ///
    /// # Safety
    ///
    /// `skb` is a valid netlink buffer the caller owns and gives up.
    pub unsafe fn from_raw(skb: NonNull<bindings::sk_buff>) -> Self {
        // INVARIANT: owned, by the function's contract.
        Self { skb }
    }
}

/// Messages C code builds in a buffer it owns (a C module's netlink messages, which the Rust
/// side of its protocol sends): C's `nlmsg_put`, `nlmsg_data` and `nla_put` with the message
/// cancelled when the attribute does not fit.
pub mod c_buffer {
    use super::*;

    /// Starts a message in `skb` (`nlmsg_put` from port 0): its header, or `None` when a
    /// header and `payload` bytes do not fit (or `payload` is negative).
    ///
    /// # Safety
    ///
    /// `skb` is a valid netlink buffer the caller owns.
    pub unsafe fn put_msg(
        skb: *mut bindings::sk_buff,
        seq: u32,
        msg_type: u16,
        payload: c_int,
        flags: u16,
    ) -> Option<NonNull<bindings::nlmsghdr>> {
        if payload < 0 {
            return None;
        }
        // SAFETY: `skb` is valid and owned (contract); `nlmsg_put` checks the room left.
        NonNull::new(unsafe {
            bindings::nlmsg_put(skb, 0, seq, msg_type.into(), payload, flags.into())
        })
    }

    /// The payload of message `nlh` (`nlmsg_data`): right after its aligned header.
    pub fn payload(nlh: NonNull<bindings::nlmsghdr>) -> *mut u8 {
        nlh.as_ptr().cast::<u8>().wrapping_add(NLMSG_HDRLEN)
    }

    /// Appends attribute `attr` holding `data` to message `nlh`, the last of `skb`
    /// (`nla_put`); `EMSGSIZE`, with the message removed (`nlmsg_cancel`), when it does not
    /// fit.
    ///
    /// # Safety
    ///
    /// `skb` is a valid netlink buffer the caller owns and `nlh` its last message.
    pub unsafe fn put_attr_or_cancel(
        skb: *mut bindings::sk_buff,
        nlh: *mut bindings::nlmsghdr,
        attr: u16,
        data: &[u8],
    ) -> Result {
        let len = c_int::try_from(data.len()).map_err(|_| EMSGSIZE)?;
        // SAFETY: `skb` is valid and owned (contract); `data` is readable for `len` bytes.
        let ret = unsafe { bindings::nla_put(skb, attr.into(), len, data.as_ptr().cast()) };
        if ret != 0 {
            // SAFETY: `nlh` is the last message of `skb` (contract): trimming back to it
            // removes it.
            unsafe { bindings::nlmsg_cancel(skb, nlh) };
            return Err(EMSGSIZE);
        }
        Ok(())
    }
}

/// A C `doit` callback of a netlink client (`struct rdma_nl_cbs`'s, for instance).
pub type CDoit = unsafe extern "C" fn(
    *mut bindings::sk_buff,
    *mut bindings::nlmsghdr,
    *mut bindings::netlink_ext_ack,
) -> c_int;

/// A C `dump` callback (`netlink_dump_control::dump`).
pub type CDump =
    unsafe extern "C" fn(*mut bindings::sk_buff, *mut bindings::netlink_callback) -> c_int;

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: The buffer is owned (type invariants).
        unsafe { bindings::nlmsg_free(self.skb.as_ptr()) };
    }
}

/// Reads `NETLINK_CB(skb).portid`.
///
/// # Safety
///
/// `skb` is a valid netlink buffer.
unsafe fn cb_portid(skb: *const bindings::sk_buff) -> u32 {
    // SAFETY: The caller guarantees that `skb` is valid.
    unsafe { bindings::rdma_rs_netlink_cb_portid(skb) }
}

/// What a protocol does with the messages user space sends to its kernel socket.
pub trait Handler: 'static {
    /// Whether a message without `NLM_F_REQUEST` is handled anyway (such messages are otherwise
    /// only acknowledged if they ask for it, as `netlink_rcv_skb` does).
    fn accepts_non_request(_msg: &MsgHeader) -> bool {
        false
    }

    /// Handles one message. `Ok` is acknowledged (with 0) if the message asks for it, an error
    /// is always acknowledged with its errno, and a started dump is not acknowledged.
    fn handle(req: &mut Request<'_>) -> Result;
}

/// One message user space sent to a [`KernelSocket`].
///
/// # Invariants
///
/// `skb` is the received buffer, owned by the netlink core for the duration of the handler,
/// and `skb->sk` is the kernel socket it was sent to. `msg` is a complete message in it.
/// `extack` is valid for the duration of the handler.
pub struct Request<'a> {
    skb: NonNull<bindings::sk_buff>,
    msg: &'a MsgHeader,
    extack: *mut bindings::netlink_ext_ack,
    dump_started: bool,
}

impl<'a> Request<'a> {
    /// The request message.
    pub fn msg(&self) -> &'a MsgHeader {
        self.msg
    }

    /// The sender's port id (`NETLINK_CB(skb).portid`), where replies go.
    pub fn portid(&self) -> u32 {
        // SAFETY: `skb` is a valid netlink buffer (type invariants).
        unsafe { cb_portid(self.skb.as_ptr()) }
    }

    fn sock(&self) -> *mut bindings::sock {
        // SAFETY: `skb` is valid (type invariants).
        unsafe { (*self.skb.as_ptr()).sk }
    }

    /// The network namespace of the socket the request arrived on.
    pub fn net(&self) -> &Net {
        // SAFETY: `skb->sk` is the kernel socket (type invariants), alive while the request is
        // handled, and so is its namespace.
        unsafe { Net::from_raw(bindings::sock_net(self.sock())) }
    }

    /// Whether the sender had capability `cap` (e.g. `bindings::CAP_NET_ADMIN`) in the initial
    /// user namespace when it opened its socket and when it sent the message
    /// (`netlink_capable`).
    pub fn capable(&self, cap: u32) -> bool {
        let Ok(cap) = c_int::try_from(cap) else {
            return false;
        };
        // SAFETY: `skb` is valid (type invariants).
        unsafe { bindings::netlink_capable(self.skb.as_ptr(), cap) }
    }

    /// Parses the request's attributes against `policy`; validation errors are also reported
    /// in the extended acknowledgement.
    pub fn parse<const N: usize>(
        &self,
        policy: &Policy<N>,
        validation: Validation,
    ) -> Result<Attrs<'a, N>> {
        self.msg.parse_with(policy, validation, self.extack)
    }

    /// Sets the message of the extended acknowledgement (`NL_SET_ERR_MSG`).
    pub fn set_err_msg(&self, msg: &'static CStr) {
        // SAFETY: `extack` is valid while the request is handled (type invariants); the message
        // is static, as the netlink core expects.
        unsafe { (*self.extack)._msg = msg.as_char_ptr() };
    }

    /// Sends `msg` to the sender without blocking (`netlink_unicast(..., MSG_DONTWAIT)`).
    pub fn unicast(&self, msg: Message) -> Result {
        // SAFETY: `skb->sk` is the kernel socket (type invariants); `netlink_unicast` consumes
        // the buffer in every case.
        let ret = unsafe {
            bindings::netlink_unicast(
                self.sock(),
                msg.into_raw(),
                self.portid(),
                bindings::MSG_DONTWAIT as c_int,
            )
        };
        to_result(ret.min(0))
    }

    /// Answers the request with a dump (`netlink_dump_start`): `D::dump` fills buffers until it
    /// adds nothing, then the netlink core sends `NLMSG_DONE` and calls `D::done`. The request is
    /// then not acknowledged. `module` is the module `D`'s code belongs to; it is pinned while
    /// the dump runs.
    pub fn start_dump<D: Dump>(&mut self, module: &'static ThisModule) -> Result {
        const {
            assert!(
                core::mem::size_of::<D::State>() <= bindings::NETLINK_CTX_SIZE as usize
                    && core::mem::align_of::<D::State>() <= core::mem::align_of::<u64>()
            )
        };
        // SAFETY: `dump_callback::<D>` and `done_callback::<D>` are this abstraction's, callable
        // while `module` is pinned by the dump.
        unsafe { self.start_dump_with(Some(dump_callback::<D>), Some(done_callback::<D>), module) }
    }

    /// `netlink_dump_start` with `dump` and `done`, `module` pinned while the dump runs; a
    /// started dump is not acknowledged.
    ///
    /// # Safety
    ///
    /// The callbacks stay callable until the dump ends.
    unsafe fn start_dump_with(
        &mut self,
        dump: Option<CDump>,
        done: Option<unsafe extern "C" fn(*mut bindings::netlink_callback) -> c_int>,
        module: &'static ThisModule,
    ) -> Result {
        // SAFETY: An all-zero dump control is valid (no callbacks); the fields used are set.
        let mut control: bindings::netlink_dump_control = unsafe { core::mem::zeroed() };
        control.dump = dump;
        control.done = done;
        control.module = module.as_ptr();
        // SAFETY: `skb` and its kernel socket are valid and `msg` is its message (type
        // invariants); the netlink core copies what it needs from `control`, takes its own
        // reference on `skb`, and zeroes the callback's context (the dump's state); the
        // callbacks' contract is the caller's.
        let ret = unsafe {
            bindings::__netlink_dump_start(
                self.sock(),
                self.skb.as_ptr(),
                self.msg.0.get(),
                &mut control,
            )
        };
        if ret == EINTR.to_errno() {
            // The dump started; the netlink core asks not to acknowledge.
            self.dump_started = true;
            return Ok(());
        }
        to_result(ret)
    }
}

impl Request<'_> {
    /// Hands the request to a C module's `doit` (`skb`, the message, the extended
    /// acknowledgement), as a C protocol's dispatcher does; its errno.
    ///
    /// # Safety
    ///
    /// `doit` is a C netlink `doit` callback that may be called now and keeps no pointer to the
    /// request past its return.
    pub unsafe fn call_c_doit(&self, doit: CDoit) -> Result {
        // SAFETY: `skb`, `msg` and `extack` are valid for the duration of the handler (type
        // invariants); the callback's contract is the caller's.
        to_result(unsafe { doit(self.skb.as_ptr(), self.msg.0.get(), self.extack) })
    }

    /// Answers the request with a dump whose rounds are a C module's `dump`
    /// (`netlink_dump_start` with it, no `done`), as a C protocol's dispatcher does; `module`
    /// (the protocol's) is pinned while the dump runs. The request is then not acknowledged.
    ///
    /// # Safety
    ///
    /// `dump` is a C netlink dump callback that stays callable until the dump ends.
    pub unsafe fn start_c_dump(&mut self, dump: CDump, module: &'static ThisModule) -> Result {
        // SAFETY: The caller's contract.
        unsafe { self.start_dump_with(Some(dump), None, module) }
    }
}

/// A dump: the answer to a request with `NLM_F_DUMP`, produced in rounds, each filling one
/// buffer, until a round adds nothing.
pub trait Dump: 'static {
    /// What is kept from one round to the next (C's `cb->args`/`cb->ctx`): all zeroes at the
    /// start, at most 48 bytes.
    type State: Zeroable + Copy;

    /// Fills `buf` with the next messages. `Ok` ends the round (the dump ends when the round
    /// added nothing); an error ends the dump with that errno.
    fn dump(buf: &mut DumpBuffer<'_>, state: &mut Self::State) -> Result;

    /// The dump is over (finished, or the socket closed).
    fn done(_state: &mut Self::State) {}
}

/// # Safety
///
/// `cb` is a valid callback of a dump started by [`Request::start_dump::<D>`].
unsafe fn dump_state<'a, D: Dump>(cb: *mut bindings::netlink_callback) -> &'a mut D::State {
    // SAFETY: The context is 48 bytes, aligned as a `long` (it is in a union with `args`),
    // zeroed at the dump's start (a valid `State`, which is `Zeroable`) and only written through
    // this function; `start_dump` checked the size and alignment. The netlink core serialises
    // the callbacks of a dump.
    unsafe { &mut *(&raw mut (*cb).__bindgen_anon_1).cast::<D::State>() }
}

/// The netlink core's `dump` callback for `D`.
///
/// # Safety
///
/// `skb` is the round's buffer and `cb` the callback of a dump started by
/// [`Request::start_dump::<D>`].
unsafe extern "C" fn dump_callback<D: Dump>(
    skb: *mut bindings::sk_buff,
    cb: *mut bindings::netlink_callback,
) -> c_int {
    let (Some(skb_nn), Some(cb_nn)) = (NonNull::new(skb), NonNull::new(cb)) else {
        return EINVAL.to_errno();
    };
    // INVARIANT: the netlink core passes the round's buffer and the dump's callback.
    let mut buf = DumpBuffer {
        skb: skb_nn,
        cb: cb_nn,
        _p: PhantomData,
    };
    // SAFETY: `cb` belongs to a dump started by `start_dump::<D>`.
    let state = unsafe { dump_state::<D>(cb) };
    match D::dump(&mut buf, state) {
        // SAFETY: `skb` is the valid round buffer.
        Ok(()) => unsafe { (*skb).len as c_int },
        Err(e) => e.to_errno(),
    }
}

/// The netlink core's `done` callback for `D`.
///
/// # Safety
///
/// `cb` is the callback of a dump started by [`Request::start_dump::<D>`].
unsafe extern "C" fn done_callback<D: Dump>(cb: *mut bindings::netlink_callback) -> c_int {
    if !cb.is_null() {
        // SAFETY: `cb` belongs to a dump started by `start_dump::<D>`.
        D::done(unsafe { dump_state::<D>(cb) });
    }
    0
}

/// The buffer of one dump round, and the request being answered.
///
/// # Invariants
///
/// `skb` is the round's buffer and `cb` the dump's callback, both valid for `'a`; `cb->nlh` is
/// the request and `cb->skb` its buffer.
pub struct DumpBuffer<'a> {
    skb: NonNull<bindings::sk_buff>,
    cb: NonNull<bindings::netlink_callback>,
    _p: PhantomData<&'a mut bindings::sk_buff>,
}

impl DumpBuffer<'_> {
    /// The request.
    pub fn request(&self) -> &MsgHeader {
        // SAFETY: `cb->nlh` is the request, kept alive by the netlink core with its buffer for
        // the whole dump (type invariants).
        unsafe { MsgHeader::from_raw((*self.cb.as_ptr()).nlh) }
    }

    /// The requester's port id (`NETLINK_CB(cb->skb).portid`).
    pub fn portid(&self) -> u32 {
        // SAFETY: `cb->skb` is the request's buffer (type invariants).
        unsafe { cb_portid((*self.cb.as_ptr()).skb) }
    }

    /// The request's sequence number.
    pub fn seq(&self) -> u32 {
        self.request().seq()
    }

    /// The network namespace of the requester's socket.
    pub fn net(&self) -> &Net {
        // SAFETY: The round's buffer is owned by the requester's socket (type invariants), which
        // is alive during the round, and so is its namespace.
        unsafe { Net::from_raw(bindings::sock_net((*self.skb.as_ptr()).sk)) }
    }

    /// Bytes in the buffer so far.
    pub fn len(&self) -> usize {
        // SAFETY: `skb` is valid (type invariants).
        unsafe { (*self.skb.as_ptr()).len as usize }
    }

    /// Whether nothing was put in the buffer yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a message in the buffer (`nlmsg_put`); `EMSGSIZE` if the buffer is full.
    pub fn put(
        &mut self,
        portid: u32,
        seq: u32,
        msg_type: u16,
        flags: u16,
    ) -> Result<MsgWriter<'_>> {
        // SAFETY: The buffer is valid and borrowed exclusively for the writer's lifetime.
        unsafe { MsgWriter::start(self.skb.as_ptr(), portid, seq, msg_type, flags) }
    }
}

/// Configuration of a [`KernelSocket`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// Number of multicast groups (fewer than 32 means 32).
    pub groups: u32,
    /// Let users without `CAP_NET_ADMIN` join multicast groups (`NL_CFG_F_NONROOT_RECV`).
    pub nonroot_recv: bool,
    /// Send timeout of the kernel socket (`sk_sndtimeo`), in milliseconds; `None` keeps the
    /// default.
    pub send_timeout_ms: Option<u32>,
}

/// The kernel socket of a netlink protocol in one network namespace
/// (`netlink_kernel_create`); released when dropped (`netlink_kernel_release`).
///
/// # Invariants
///
/// `sk` is a kernel netlink socket owned by this object.
pub struct KernelSocket {
    sk: NonNull<bindings::sock>,
}

// SAFETY: The netlink core serialises its use of the socket; it can be used and released from
// any thread.
unsafe impl Send for KernelSocket {}

// SAFETY: Every operation `&KernelSocket` offers is thread safe in the netlink core.
unsafe impl Sync for KernelSocket {}

impl KernelSocket {
    /// Creates the kernel socket of protocol `unit` in `net`; messages sent to it go to `H`.
    /// `module` is the module that owns `H` (user sockets of the protocol pin it).
    pub fn new<H: Handler>(
        net: &Net,
        unit: u32,
        module: &'static ThisModule,
        config: Config,
    ) -> Result<Self> {
        let unit = c_int::try_from(unit).map_err(|_| EINVAL)?;
        // SAFETY: An all-zero configuration is valid (no callbacks).
        let mut cfg: bindings::netlink_kernel_cfg = unsafe { core::mem::zeroed() };
        cfg.groups = config.groups;
        if config.nonroot_recv {
            cfg.flags |= bindings::NL_CFG_F_NONROOT_RECV;
        }
        cfg.input = Some(input_callback::<H>);
        // SAFETY: `net` is alive; `cfg` is valid for the call (the kernel copies from it);
        // `module` is this module.
        let sk = unsafe {
            bindings::__netlink_kernel_create(net.as_raw(), unit, module.as_ptr(), &mut cfg)
        };
        let sk = NonNull::new(sk).ok_or(ENOMEM)?;
        if let Some(ms) = config.send_timeout_ms {
            let jiffies = crate::time::msecs_to_jiffies(ms);
            // SAFETY: `sk` was just created and is owned here; C sets the field the same way.
            unsafe { (*sk.as_ptr()).sk_sndtimeo = jiffies as crate::ffi::c_long };
        }
        // INVARIANT: the socket was created above and is owned by the new object.
        Ok(Self { sk })
    }

    /// Sends `msg` to the members of multicast `group` (`nlmsg_multicast` from port 0).
    /// `ESRCH` means that nobody listens.
    pub fn multicast(&self, msg: Message, group: u32, flags: Flags) -> Result {
        // SAFETY: `sk` is a valid kernel socket (type invariants); the buffer is consumed.
        to_result(unsafe {
            bindings::nlmsg_multicast(self.sk.as_ptr(), msg.into_raw(), 0, group, flags.as_raw())
        })
    }

    /// Sends `msg` to port `portid` without blocking.
    pub fn unicast(&self, msg: Message, portid: u32) -> Result {
        // SAFETY: `sk` is a valid kernel socket (type invariants); the buffer is consumed.
        let ret = unsafe {
            bindings::netlink_unicast(
                self.sk.as_ptr(),
                msg.into_raw(),
                portid,
                bindings::MSG_DONTWAIT as c_int,
            )
        };
        to_result(ret.min(0))
    }

    /// Sends `msg` to port `portid`, waiting for room in its receive queue (up to the socket's
    /// send timeout; `netlink_unicast` without `MSG_DONTWAIT`).
    pub fn unicast_wait(&self, msg: Message, portid: u32) -> Result {
        // SAFETY: `sk` is a valid kernel socket (type invariants); the buffer is consumed.
        let ret = unsafe { bindings::netlink_unicast(self.sk.as_ptr(), msg.into_raw(), portid, 0) };
        to_result(ret.min(0))
    }

    /// Whether a socket listens to multicast `group` (`netlink_has_listeners`).
    pub fn has_listeners(&self, group: u32) -> bool {
        // SAFETY: `sk` is a valid kernel socket (type invariants).
        unsafe { bindings::netlink_has_listeners(self.sk.as_ptr(), group) != 0 }
    }

    /// The send timeout in jiffies (`sk_sndtimeo`).
    pub fn send_timeout(&self) -> crate::ffi::c_long {
        // SAFETY: `sk` is a valid socket (type invariants).
        unsafe { (*self.sk.as_ptr()).sk_sndtimeo }
    }
}

impl Drop for KernelSocket {
    fn drop(&mut self) {
        // SAFETY: The socket is owned (type invariants) and released only here.
        unsafe { bindings::netlink_kernel_release(self.sk.as_ptr()) };
    }
}

/// The kernel socket's input: every message of `skb` in turn, with `netlink_rcv_skb`'s rules.
///
/// # Safety
///
/// `skb` is a buffer sent to a kernel socket created with `H`, owned by the caller for the call.
unsafe extern "C" fn input_callback<H: Handler>(skb: *mut bindings::sk_buff) {
    let Some(skb_nn) = NonNull::new(skb) else {
        return;
    };
    loop {
        // SAFETY: The netlink core passes a valid buffer, ours during the call.
        let (data, len) = unsafe { ((*skb).data, (*skb).len as usize) };
        if len < nlmsg_align(NLMSG_HDRLEN) {
            return;
        }
        // SAFETY: An all-zero extended ack is the empty one; each message gets its own.
        let mut extack: bindings::netlink_ext_ack = unsafe { core::mem::zeroed() };
        let nlh = data.cast::<bindings::nlmsghdr>();
        // SAFETY: A header's worth of bytes is readable at `data`.
        let mlen = unsafe { (*nlh).nlmsg_len } as usize;
        if mlen < NLMSG_HDRLEN || len < mlen {
            return;
        }
        // SAFETY: The header and its `mlen` bytes are in the buffer, which is not changed until
        // the message is pulled below.
        let msg = unsafe { MsgHeader::from_raw(nlh) };
        let mut err = 0;
        let mut ack = true;
        if (msg.flags() & flags::REQUEST != 0 || H::accepts_non_request(msg))
            && msg.msg_type() >= NLMSG_MIN_TYPE
        {
            // INVARIANT: `skb` was sent to a kernel socket, `msg` is a complete message in it,
            // and `extack` outlives the request.
            let mut req = Request {
                skb: skb_nn,
                msg,
                extack: &mut extack,
                dump_started: false,
            };
            err = match H::handle(&mut req) {
                Ok(()) => 0,
                Err(e) => e.to_errno(),
            };
            if req.dump_started || err == EINTR.to_errno() {
                ack = false;
            }
        }
        if ack && (msg.flags() & flags::ACK != 0 || err != 0) {
            // SAFETY: `skb` and `nlh` are the received buffer and message; `extack` is valid.
            unsafe { bindings::netlink_ack(skb, nlh, err, &extack) };
        }
        let pull = nlmsg_align(mlen).min(len);
        // SAFETY: `pull` is at most the buffer's length.
        unsafe { bindings::skb_pull(skb, pull as u32) };
    }
}

#[macros::kunit_tests(rdma_rs_netlink)]
mod tests {
    use super::*;

    const A_U8: u16 = 1;
    const A_U32: u16 = 2;
    const A_U64: u16 = 3;
    const A_STR: u16 = 4;
    const A_NEST: u16 = 5;
    const A_PAD: u16 = 0;

    static POLICY: Policy<6> = Policy::new()
        .with(A_U8, AttrPolicy::U8)
        .with(A_U32, AttrPolicy::U32)
        .with(A_U64, AttrPolicy::U64)
        .with(A_STR, AttrPolicy::nul_string(8))
        .with(A_NEST, AttrPolicy::NESTED);

    fn message(fill: impl FnOnce(&mut MsgWriter<'_>) -> Result) -> Result<Message> {
        let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL)?;
        let mut w = msg.put(7, 42, 0x1401, flags::MULTI)?;
        fill(&mut w)?;
        w.end();
        Ok(msg)
    }

    #[test]
    fn build_and_parse_back() -> Result {
        let msg = message(|w| {
            w.put_u8(A_U8, 0xab)?;
            w.put_u32(A_U32, 0x1234_5678)?;
            w.put_u64(A_U64, 0x1122_3344_5566_7788, A_PAD)?;
            w.put_string(A_STR, b"mlx5_0")?;
            let mut n = w.nest_noflag(A_NEST)?;
            n.put_u32(1, 9)?;
            n.end();
            Ok(())
        })?;
        let hdr = msg.first().ok_or(EINVAL)?;
        assert_eq!(hdr.msg_type(), 0x1401);
        assert_eq!(hdr.seq(), 42);
        assert_eq!(hdr.pid(), 7);
        assert_eq!(hdr.flags(), flags::MULTI);
        assert_eq!(hdr.len() as usize, msg.len());
        let attrs = hdr.parse(&POLICY, Validation::Liberal)?;
        assert_eq!(attrs.u8(A_U8), Some(0xab));
        assert_eq!(attrs.u32(A_U32), Some(0x1234_5678));
        assert_eq!(attrs.u64(A_U64), Some(0x1122_3344_5566_7788));
        assert_eq!(attrs.string(A_STR), Some(&b"mlx5_0"[..]));
        // The string goes out with its NUL, as `nla_put_string` puts it.
        assert_eq!(attrs.get(A_STR), Some(&b"mlx5_0\0"[..]));
        // The nest holds one u32 attribute: header (4) + payload (4).
        assert_eq!(attrs.get(A_NEST).map(|p| p.len()), Some(8));
        Ok(())
    }

    #[test]
    fn u64_is_aligned_with_a_pad_attribute() -> Result {
        let msg = message(|w| {
            w.put_u8(A_U8, 1)?;
            w.put_u64(A_U64, u64::MAX, A_PAD)
        })?;
        let attrs = msg
            .first()
            .ok_or(EINVAL)?
            .parse(&POLICY, Validation::Liberal)?;
        assert_eq!(attrs.u64(A_U64), Some(u64::MAX));
        assert_eq!(attrs.get(A_U64).map(|p| p.len()), Some(8));
        Ok(())
    }

    #[test]
    fn short_fixed_size_attribute_is_erange() -> Result {
        // A two-byte payload where the policy says u32: C's liberal validation answers ERANGE.
        let msg = message(|w| w.put_bytes(A_U32, &[1, 2]))?;
        let hdr = msg.first().ok_or(EINVAL)?;
        assert_eq!(hdr.parse(&POLICY, Validation::Liberal).err(), Some(ERANGE));
        Ok(())
    }

    #[test]
    fn long_fixed_size_attribute_liberal_and_strict() -> Result {
        // Eight bytes where the policy says u32: liberal accepts (reading the first four),
        // strict refuses with EINVAL.
        let msg = message(|w| w.put_bytes(A_U32, &[1, 0, 0, 0, 9, 9, 9, 9]))?;
        let hdr = msg.first().ok_or(EINVAL)?;
        let attrs = hdr.parse(&POLICY, Validation::Liberal)?;
        assert_eq!(attrs.u32(A_U32), Some(u32::from_ne_bytes([1, 0, 0, 0])));
        assert_eq!(hdr.parse(&POLICY, Validation::Strict).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn strings_need_a_nul_and_respect_the_length() -> Result {
        let no_nul = message(|w| w.put_bytes(A_STR, b"abc"))?;
        let hdr = no_nul.first().ok_or(EINVAL)?;
        assert_eq!(hdr.parse(&POLICY, Validation::Liberal).err(), Some(EINVAL));
        // Nine characters where the policy allows eight: no NUL within the first nine bytes,
        // which C's validation answers with EINVAL.
        let long = message(|w| w.put_string(A_STR, b"123456789"))?;
        let hdr = long.first().ok_or(EINVAL)?;
        assert_eq!(hdr.parse(&POLICY, Validation::Liberal).err(), Some(EINVAL));
        let ok = message(|w| w.put_string(A_STR, b"12345678"))?;
        let attrs = ok
            .first()
            .ok_or(EINVAL)?
            .parse(&POLICY, Validation::Liberal)?;
        assert_eq!(attrs.string(A_STR), Some(&b"12345678"[..]));
        Ok(())
    }

    #[test]
    fn unknown_attributes_liberal_and_strict() -> Result {
        let msg = message(|w| {
            w.put_u32(A_U32, 5)?;
            w.put_u32(100, 1)
        })?;
        let hdr = msg.first().ok_or(EINVAL)?;
        let attrs = hdr.parse(&POLICY, Validation::Liberal)?;
        assert_eq!(attrs.u32(A_U32), Some(5));
        assert!(!attrs.has(100));
        assert_eq!(hdr.parse(&POLICY, Validation::Strict).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn nested_attributes_parse_against_their_policy() -> Result {
        static INNER: Policy<3> = Policy::new()
            .with(1, AttrPolicy::U32)
            .with(2, AttrPolicy::U8);
        let msg = message(|w| {
            let mut n = w.nest(A_NEST)?;
            n.put_u32(1, 77)?;
            n.put_u8(2, 3)?;
            n.end();
            Ok(())
        })?;
        let attrs = msg
            .first()
            .ok_or(EINVAL)?
            .parse(&POLICY, Validation::Liberal)?;
        let inner = attrs
            .parse_nested(A_NEST, &INNER, Validation::Strict)
            .ok_or(EINVAL)??;
        assert_eq!(inner.u32(1), Some(77));
        assert_eq!(inner.u8(2), Some(3));
        assert!(attrs
            .parse_nested(A_U32, &INNER, Validation::Strict)
            .is_none());
        // A u8 where the inner policy wants a u32: strict parsing refuses it.
        let bad = message(|w| {
            let mut n = w.nest(A_NEST)?;
            n.put_u8(1, 1)?;
            n.end();
            Ok(())
        })?;
        let attrs = bad
            .first()
            .ok_or(EINVAL)?
            .parse(&POLICY, Validation::Liberal)?;
        assert_eq!(
            attrs
                .parse_nested(A_NEST, &INNER, Validation::Strict)
                .and_then(|r| r.err()),
            Some(EINVAL)
        );
        Ok(())
    }

    #[test]
    fn cancel_removes_the_message_and_nest() -> Result {
        let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL)?;
        let w = msg.put(0, 1, 0x1401, 0)?;
        w.cancel();
        assert!(msg.is_empty());
        let mut w = msg.put(0, 1, 0x1401, 0)?;
        w.put_u32(A_U32, 1)?;
        let before = w.buffer_len();
        let mut n = w.nest_noflag(A_NEST)?;
        n.put_u32(1, 2)?;
        n.cancel();
        assert_eq!(w.buffer_len(), before);
        w.end();
        let attrs = msg
            .first()
            .ok_or(EINVAL)?
            .parse(&POLICY, Validation::Liberal)?;
        assert!(!attrs.has(A_NEST));
        Ok(())
    }

    #[test]
    fn full_buffer_is_emsgsize() -> Result {
        let mut msg = Message::new(64, GFP_KERNEL)?;
        let mut w = msg.put(0, 1, 0x1401, 0)?;
        let big = [0u8; 512];
        assert_eq!(w.put_bytes(A_STR, &big).err(), Some(EMSGSIZE));
        Ok(())
    }

    #[test]
    fn kernel_socket_in_init_net() -> Result {
        struct Ignore;
        impl Handler for Ignore {
            fn handle(_req: &mut Request<'_>) -> Result {
                Ok(())
            }
        }
        // Built-in code has no module (C's `THIS_MODULE` is NULL there).
        // SAFETY: The kernel crate is built in.
        static BUILT_IN: ThisModule = unsafe { ThisModule::from_ptr(ptr::null_mut()) };
        // Protocol 31 (`MAX_LINKS - 1`) is unused in the test kernel.
        let sk = KernelSocket::new::<Ignore>(
            Net::init_net(),
            31,
            &BUILT_IN,
            Config {
                nonroot_recv: true,
                send_timeout_ms: Some(10_000),
                ..Config::default()
            },
        )?;
        assert_eq!(
            sk.send_timeout(),
            crate::time::msecs_to_jiffies(10_000) as crate::ffi::c_long
        );
        assert!(!sk.has_listeners(4));
        let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL)?;
        msg.put(0, 0, 0x1400 + 28, 0)?.end();
        assert_eq!(sk.multicast(msg, 4, GFP_KERNEL).err(), Some(ESRCH));
        Ok(())
    }
}
