// SPDX-License-Identifier: GPL-2.0

//! What an ioctl method's handler gets (C's `uverbs_attr_bundle`): the attributes user space
//! sent, checked against the method's spec by `ioctl.rs`, read and written through
//! [`IoctlBundle`] (constants, inputs, outputs flagged `UVERBS_ATTR_F_VALID_OUTPUT` when
//! written, object handles, the driver's data and a new file descriptor).

use crate::{
    file::event_file::{EventFile, NewEventFd},
    file::ufile::Ufile,
    file::uobjects::{UObject, UObjects},
    ioctl::ids::OBJECT_PD,
    uabi::AttrAbi,
};
use ib_core::{
    user::spec::{AttrSpec, Kind, MethodAttrs},
    user::udata::{user_bytes_zero, Udata},
};
use kernel::{
    prelude::*,
    sync::Arc,
    transmute::FromBytes,
    uaccess::{UserPtr, UserSlice},
};

/// `UVERBS_ATTR_F_MANDATORY`: user space needs the kernel to know this attribute.
const F_MANDATORY: u16 = 1 << 0;
/// `UVERBS_ATTR_F_VALID_OUTPUT`: the kernel wrote this output.
pub(crate) const F_VALID_OUTPUT: u16 = 1 << 1;

/// One attribute as user space sent it (`struct ib_uverbs_attr`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attr {
    /// Its position in the request's array.
    idx: usize,
    id: u16,
    len: u16,
    flags: u16,
    attr_data: u16,
    data: u64,
}

impl Attr {
    /// Attribute `idx` of a request's array, from its [`ATTR_SIZE`] bytes `raw`.
    pub(crate) fn decode(idx: usize, raw: &[u8]) -> Result<Self> {
        Ok(Self::parse(
            idx,
            &AttrAbi::from_bytes_copy(raw).ok_or(EINVAL)?,
        ))
    }

    fn parse(idx: usize, raw: &AttrAbi) -> Self {
        Self {
            idx,
            id: raw.attr_id,
            len: raw.len,
            flags: raw.flags,
            // SAFETY: The union's members are integers of its size (or a pair of bytes): any
            // bits are a valid `u16`.
            attr_data: unsafe { raw.attr_data.reserved },
            // SAFETY: Likewise, the union's members are 64-bit integers.
            data: unsafe { raw.__bindgen_anon_1.data },
        }
    }

    /// Whether the data is the value itself rather than a pointer to it (8 bytes or fewer).
    fn is_inline(&self) -> bool {
        usize::from(self.len) <= 8
    }
}

/// The attributes a method takes: the core's (or a driver method's own), then those the
/// device's driver added to a core method (C merges both into one method's tree).
#[derive(Clone, Copy)]
pub(crate) struct Specs<'s> {
    first: &'s [AttrSpec],
    added: &'s [AttrSpec],
}

impl<'s> Specs<'s> {
    /// The method's own `first`, then the driver's `added`.
    pub(crate) fn new(first: &'s [AttrSpec], added: &'s [AttrSpec]) -> Self {
        Self { first, added }
    }

    /// How many.
    fn len(&self) -> usize {
        self.first.len() + self.added.len()
    }

    /// All of them, in position order.
    fn iter(&self) -> impl Iterator<Item = &'s AttrSpec> {
        Iterator::chain(self.first.iter(), self.added.iter())
    }

    /// The position of attribute `id`.
    fn position(&self, id: u16) -> Option<usize> {
        self.iter().position(|s| s.id == id)
    }
}

impl<'s> From<&'s [AttrSpec]> for Specs<'s> {
    fn from(first: &'s [AttrSpec]) -> Self {
        Self::new(first, &[])
    }
}

/// What a method's handler gets (C's `uverbs_attr_bundle`).
pub(crate) struct IoctlBundle<'a> {
    /// The file the request came on.
    pub(crate) ufile: &'a Arc<Ufile>,
    /// The attributes the method takes.
    specs: Specs<'static>,
    /// User address of the request's attribute array.
    user_attrs: usize,
    /// The attributes given, by their position in the method's spec.
    attrs: [Option<Attr>; MAX_ATTRS],
    /// The driver's data (`UHW_IN`/`UHW_OUT`).
    pub(crate) driver: Udata,
    /// The new file descriptor of an `FdNew` attribute, installed by the handler on success.
    pub(crate) new_fd: Option<NewEventFd>,
    /// The handle an `IdrNew` attribute reserved, given up unless the method succeeds.
    new_handle: Option<u32>,
    /// The event files `FdRead` attributes named, by their position in the method's spec.
    files: [Option<Arc<EventFile>>; MAX_ATTRS],
}

/// The most attributes a method here has.
pub(crate) const MAX_ATTRS: usize = 20;
/// `sizeof(struct ib_uverbs_attr)`: the header is followed by `num_attrs` of them.
pub(crate) const ATTR_SIZE: usize = size_of::<AttrAbi>();

impl<'a> IoctlBundle<'a> {
    /// A request on `ufile` for a method taking `specs`, whose attribute array is at user
    /// address `user_attrs`; nothing given yet.
    pub(crate) fn new(ufile: &'a Arc<Ufile>, specs: Specs<'static>, user_attrs: usize) -> Self {
        Self {
            ufile,
            specs,
            user_attrs,
            attrs: [None; MAX_ATTRS],
            driver: Udata::empty(),
            new_fd: None,
            new_handle: None,
            files: [const { None }; MAX_ATTRS],
        }
    }
}

impl IoctlBundle<'_> {
    /// Takes the attributes user space sent (`raw`, [`ATTR_SIZE`] bytes each) as
    /// [`decode_attrs`] checks them, doing what each needs in their order.
    pub(crate) fn take_attrs(&mut self, raw: &[u8]) -> Result {
        let specs = self.specs;
        let mut given = [None; MAX_ATTRS];
        let ret = decode_attrs(specs, raw, &mut given, |a, need| self.act(a, need));
        self.attrs = given;
        ret
    }

    /// What attribute `a` needs once its fields passed.
    fn act(&mut self, a: &Attr, need: Need) -> Result {
        match need {
            Need::Nothing => Ok(()),
            Need::NewFd => self.new_fd(a),
            Need::NewIdr => self.idr_new(a),
            Need::FdRead { object, fd } => self.fd_read(a, object, fd),
            // C's `rdma_lookup_get_uobject`: it must exist (`ENOENT`) and be of its type
            // (`EINVAL`); a read is checked as a destruction is (C's lookup is the same but for
            // the lock taken).
            Need::Idr { object } => self.ufile.with_objects(|o| o.check(a.data, object)),
        }
    }

    /// Frees the handle an `IdrNew` attribute reserved, unless the method put its object
    /// there.
    pub(crate) fn release_reserved(&mut self) {
        if let Some(h) = self.new_handle.take() {
            let _ = self.ufile.with_objects(|o| {
                o.abort(h);
                Ok(())
            });
        }
    }

    fn attr(&self, id: u16) -> Option<&Attr> {
        let pos = self.specs.position(id)?;
        self.attrs[pos].as_ref()
    }

    /// Whether user space gave attribute `id`.
    pub(crate) fn is_present(&self, id: u16) -> bool {
        self.attr(id).is_some()
    }

    /// The constant `id` (C's `uverbs_get_const`): `ENOENT` when absent, `EINVAL` above `max`
    /// (the C type's range).
    pub(crate) fn get_const(&self, id: u16, max: u64) -> Result<u64> {
        const_of(self.attr(id), max)
    }

    /// Input `id` into `to` (C's `uverbs_copy_from_or_zero`): as much as it holds (inline or
    /// from user memory), the rest of `to` zero; all zero when absent.
    pub(crate) fn copy_from_or_zero(&self, id: u16, to: &mut [u8]) -> Result {
        to.fill(0);
        let Some(a) = self.attr(id) else {
            return Ok(());
        };
        let n = usize::from(a.len).min(to.len());
        if a.is_inline() {
            to[..n].copy_from_slice(&a.data.to_le_bytes()[..n]);
            return Ok(());
        }
        UserSlice::new(UserPtr::from_addr(a.data as usize), n)
            .reader()
            .read_slice(&mut to[..n])
    }

    /// Input `id` of 4 bytes (C's `uverbs_copy_from` of a `u32`, inline): `ENOENT` when absent.
    pub(crate) fn get_u32(&self, id: u16) -> Result<u32> {
        Ok(self.attr(id).ok_or(ENOENT)?.data as u32)
    }

    /// Input `id` of 8 bytes (C's `uverbs_copy_from` of a `u64`, inline): `ENOENT` when absent.
    pub(crate) fn get_u64(&self, id: u16) -> Result<u64> {
        Ok(self.attr(id).ok_or(ENOENT)?.data)
    }

    /// The 32-bit flags `id` (C's `uverbs_get_flags32`): 0 when absent; `EINVAL` for a length
    /// other than 4 or 8, or a bit outside `allowed`.
    pub(crate) fn get_flags32(&self, id: u16, allowed: u32) -> Result<u32> {
        flags32_of(self.attr(id), allowed)
    }

    /// The user address of attribute `idx`'s field at `offset` (4: flags, 8: data).
    fn field_addr(&self, idx: usize, offset: usize) -> usize {
        field_addr(self.user_attrs, idx, offset)
    }

    /// Flags output attribute `a` as written (C's `uverbs_set_output`).
    fn set_output(&self, a: &Attr) -> Result {
        let flags = (a.flags | F_VALID_OUTPUT).to_le_bytes();
        UserSlice::new(UserPtr::from_addr(self.field_addr(a.idx, 4)), 2)
            .writer()
            .write_slice(&flags)
    }

    /// Writes `from` to output `id` (C's `uverbs_copy_to`): as much as it holds; `ENOENT` when
    /// absent (callers ignore that for optional outputs).
    pub(crate) fn copy_to(&self, id: u16, from: &[u8]) -> Result {
        let a = *self.attr(id).ok_or(ENOENT)?;
        let n = from.len().min(usize::from(a.len));
        UserSlice::new(UserPtr::from_addr(a.data as usize), n)
            .writer()
            .write_slice(&from[..n])?;
        self.set_output(&a)
    }

    /// [`IoctlBundle::copy_to`] of an optional output: absent is not an error (C's
    /// `IS_UVERBS_COPY_ERR`).
    pub(crate) fn copy_to_optional(&self, id: u16, from: &[u8]) -> Result {
        match self.copy_to(id, from) {
            Err(e) if e == ENOENT => Ok(()),
            r => r,
        }
    }

    /// Writes `from` to output `id` and zeroes the rest of a longer buffer (C's
    /// `uverbs_copy_to_struct_or_zero`).
    pub(crate) fn copy_to_struct_or_zero(&self, id: u16, from: &[u8]) -> Result {
        let a = *self.attr(id).ok_or(ENOENT)?;
        // `Udata::respond` writes what fits and zeroes the rest, as C's pair of calls does.
        Udata::new(0, 0, a.data as usize, usize::from(a.len)).respond(from)?;
        self.set_output(&a)
    }

    /// The user-space buffers of input `in_id` and output `out_id` as a [`Udata`] (C's
    /// `uverbs_fill_udata`): an inline input is read where it lies, in the request's array.
    pub(crate) fn udata(&self, in_id: u16, out_id: u16) -> Udata {
        udata_of(self.user_attrs, self.attr(in_id), self.attr(out_id))
    }

    /// Flags output `id` as written, if given (what C does for a write command's response
    /// through `INVOKE_WRITE`).
    pub(crate) fn mark_output(&self, id: u16) -> Result {
        match self.attr(id) {
            Some(a) => {
                let a = *a;
                self.set_output(&a)
            }
            None => Ok(()),
        }
    }

    /// The event file attribute `a` names by its fd `fd` (C's `lookup_get_fd_uobject`): one
    /// that is not open, or not a file of type `object` of this file's context, is `EBADF`;
    /// then `EIO` once the device has gone.
    fn fd_read(&mut self, a: &Attr, object: u16, fd: i32) -> Result {
        let file = crate::file::event_file::fget(fd)?;
        let channel = object == crate::ioctl::ids::OBJECT_COMP_CHANNEL;
        let found = self.ufile.with_context_any(|c| match c {
            Some(c) => c.event_file(&file, channel),
            None => None,
        })?;
        let ev = found.ok_or(EBADF)?;
        let pos = self.specs.position(a.id).ok_or(EINVAL)?;
        if let Some(slot) = self.files.get_mut(pos) {
            *slot = Some(ev);
        }
        Ok(())
    }

    /// The event file attribute `id` named, if it was given.
    pub(crate) fn event_file(&self, id: u16) -> Option<Arc<EventFile>> {
        let pos = self.specs.position(id)?;
        self.files.get(pos)?.clone()
    }

    /// Reserves the handle of a new object for attribute `a` and writes it back into the
    /// attribute's data (C's `UVERBS_ACCESS_NEW`): needs the file's context (`EIO`, `EINVAL`).
    fn idr_new(&mut self, a: &Attr) -> Result {
        let handle = self.ufile.with_context(|c| c.objects.reserve())?;
        self.new_handle = Some(handle);
        let id = i64::from(handle).to_le_bytes();
        UserSlice::new(UserPtr::from_addr(self.field_addr(a.idx, 8)), 8)
            .writer()
            .write_slice(&id)
    }

    /// Puts `obj` under the handle the method's `IdrNew` attribute reserved (C's
    /// `uverbs_finalize_uobj_create`); `EINVAL` for a method without one (the object is
    /// dropped).
    pub(crate) fn commit_new(
        &mut self,
        objects: &mut crate::file::uobjects::UObjects,
        obj: UObject,
    ) -> Result<u32> {
        let handle = self.new_handle.take().ok_or(EINVAL)?;
        objects.commit(handle, obj)?;
        Ok(handle)
    }

    /// The handle of object attribute `id` (checked with the attributes).
    pub(crate) fn idr_handle(&self, id: u16) -> Result<u64> {
        Ok(self.attr(id).ok_or(ENOENT)?.data)
    }

    /// A new async event file for attribute `a`: its number is written back into the
    /// attribute's data; it is installed if the method succeeds. Needs the file's context
    /// (`EIO`, `EINVAL`).
    fn new_fd(&mut self, a: &Attr) -> Result {
        self.ufile.with_ucontext(|_| Ok(()))?;
        let new = NewEventFd::new(EventFile::new_async()?)?;
        let fd = i64::from(new.fd()).to_le_bytes();
        UserSlice::new(UserPtr::from_addr(self.field_addr(a.idx, 8)), 8)
            .writer()
            .write_slice(&fd)?;
        self.new_fd = Some(new);
        Ok(())
    }
}

/// What an attribute still needs once its own fields passed (C's `uverbs_process_attr` past
/// its checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Nothing: data, a buffer or a raw fd.
    Nothing,
    /// A new async event file (`FdNew`).
    NewFd,
    /// A new object's handle (`IdrNew`).
    NewIdr,
    /// The event file of type `object` behind `fd` (`FdRead`).
    FdRead {
        /// Its type.
        object: u16,
        /// The fd given.
        fd: i32,
    },
    /// The object of type `object` under the handle given (`IdrRead`, `IdrDestroy`).
    Idr {
        /// Its type.
        object: u16,
    },
}

/// C's `uverbs_process_attr` checks of attribute `a`'s own fields against `kind`, all `EINVAL`
/// but one: an input longer than a struct it extends is `EOPNOTSUPP` unless its bytes past
/// the struct are zero (`cleared(a, from)`); then a length outside the kind's range or
/// `attr_data` set. Objects and fds have length 0 and `attr_data` 0; handles are not
/// negative, fds are `int`s.
pub(crate) fn check_attr(
    a: &Attr,
    kind: Kind,
    cleared: impl FnOnce(&Attr, u16) -> bool,
) -> Result<Need> {
    let (min, max, zero_trailing) = match kind {
        Kind::PtrIn {
            min,
            max,
            zero_trailing,
        } => {
            if a.len > max && zero_trailing && !cleared(a, max) {
                return Err(EOPNOTSUPP);
            }
            (min, max, zero_trailing)
        }
        Kind::PtrOut {
            min,
            max,
            zero_trailing,
        } => (min, max, zero_trailing),
        Kind::FdNew => {
            no_payload(a)?;
            return Ok(Need::NewFd);
        }
        Kind::IdrNew { .. } => {
            no_payload(a)?;
            return Ok(Need::NewIdr);
        }
        Kind::FdRead { object } => {
            no_payload(a)?;
            return Ok(Need::FdRead {
                object,
                fd: fd_of(a)?,
            });
        }
        Kind::RawFd => {
            no_payload(a)?;
            fd_of(a)?;
            return Ok(Need::Nothing);
        }
        Kind::IdrDestroy { object } | Kind::IdrRead { object } => {
            no_payload(a)?;
            // C takes the handle as a signed 64-bit id and refuses negative ones.
            if (a.data as i64) < 0 {
                return Err(EINVAL);
            }
            return Ok(Need::Idr { object });
        }
    };
    if a.len < min || (!zero_trailing && a.len > max) {
        return Err(EINVAL);
    }
    if a.attr_data != 0 {
        return Err(EINVAL);
    }
    Ok(Need::Nothing)
}

/// An object or fd attribute has length 0 and `attr_data` 0 (`EINVAL`).
fn no_payload(a: &Attr) -> Result {
    if a.attr_data != 0 || a.len != 0 {
        return Err(EINVAL);
    }
    Ok(())
}

/// The fd an attribute gives: an `int` (`EINVAL`).
fn fd_of(a: &Attr) -> Result<i32> {
    i32::try_from(a.data as i64).map_err(|_| EINVAL)
}

/// C's `uverbs_set_attr` for each attribute of `raw` ([`ATTR_SIZE`] bytes each) in its order,
/// then the mandatory check, against `specs`: an unknown attribute is ignored unless it is
/// mandatory (`EPROTONOSUPPORT`); a repeated one is `EINVAL`; one whose fields fail
/// [`check_attr`] gets its errno; `act` then does what it needs, and it is put in `given` at
/// its position in `specs`. A mandatory attribute not given is `EINVAL`, as is a method with
/// more attributes than a bundle holds.
pub(crate) fn decode_attrs(
    specs: Specs<'_>,
    raw: &[u8],
    given: &mut [Option<Attr>; MAX_ATTRS],
    mut act: impl FnMut(&Attr, Need) -> Result,
) -> Result {
    if specs.len() > MAX_ATTRS {
        return Err(EINVAL);
    }
    for (idx, chunk) in raw.chunks_exact(ATTR_SIZE).enumerate() {
        let a = Attr::decode(idx, chunk)?;
        let Some((pos, spec)) = specs.iter().enumerate().find(|(_, s)| s.id == a.id) else {
            if a.flags & F_MANDATORY != 0 {
                return Err(EPROTONOSUPPORT);
            }
            continue;
        };
        if given[pos].is_some() {
            return Err(EINVAL);
        }
        let need = check_attr(&a, spec.kind, cleared_after)?;
        act(&a, need)?;
        given[pos] = Some(a);
    }
    if specs
        .iter()
        .zip(given.iter())
        .any(|(spec, given)| spec.mandatory && given.is_none())
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// Whether the bytes of input `a` past `from` are zero (C's `uverbs_is_attr_cleared`); an
/// unreadable buffer counts as not zero.
fn cleared_after(a: &Attr, from: u16) -> bool {
    let (from, len) = (usize::from(from), usize::from(a.len));
    if a.is_inline() {
        let bytes = a.data.to_le_bytes();
        return bytes[from.min(8)..len.min(8)].iter().all(|b| *b == 0);
    }
    user_bytes_zero((a.data as usize).wrapping_add(from), len - from).unwrap_or(false)
}

/// The constant of attribute `a` (C's `uverbs_get_const`): `ENOENT` when absent, `EINVAL`
/// above `max`.
pub(crate) fn const_of(a: Option<&Attr>, max: u64) -> Result<u64> {
    let a = a.ok_or(ENOENT)?;
    if a.data > max {
        return Err(EINVAL);
    }
    Ok(a.data)
}

/// The 32-bit flags of attribute `a` (C's `uverbs_get_flags32`): 0 when absent; `EINVAL` for a
/// length other than 4 or 8, or a bit outside `allowed`.
pub(crate) fn flags32_of(a: Option<&Attr>, allowed: u32) -> Result<u32> {
    let Some(a) = a else {
        return Ok(0);
    };
    let flags = match a.len {
        8 => a.data,
        4 => a.data & 0xffff_ffff,
        _ => return Err(EINVAL),
    };
    if flags & !u64::from(allowed) != 0 {
        return Err(EINVAL);
    }
    Ok(flags as u32)
}

/// The user address of field `offset` of attribute `idx` of the array at `user_attrs`.
fn field_addr(user_attrs: usize, idx: usize, offset: usize) -> usize {
    // User input: wraps as C's pointer arithmetic does (the access then fails).
    user_attrs
        .wrapping_add(idx.wrapping_mul(ATTR_SIZE))
        .wrapping_add(offset)
}

/// The buffers of input `inp` and output `out` as a [`Udata`] (C's `uverbs_fill_udata`): an
/// inline input is read where it lies, in the array at `user_attrs`.
pub(crate) fn udata_of(user_attrs: usize, inp: Option<&Attr>, out: Option<&Attr>) -> Udata {
    let (inbuf, inlen) = match inp {
        Some(a) if a.is_inline() => (field_addr(user_attrs, a.idx, 8), usize::from(a.len)),
        Some(a) => (a.data as usize, usize::from(a.len)),
        None => (0, 0),
    };
    let (outbuf, outlen) = match out {
        Some(a) => (a.data as usize, usize::from(a.len)),
        None => (0, 0),
    };
    Udata::new(inbuf, inlen, outbuf, outlen)
}

/// A request as a driver's code sees it (C's `uverbs_attr_bundle` in a driver's handler): the
/// bundle, and the file's objects its handles name.
pub(crate) struct DriverView<'v, 'a> {
    /// The request.
    pub(crate) bundle: &'v IoctlBundle<'a>,
    /// The file's objects (its context is locked while the driver runs).
    pub(crate) objects: &'v UObjects,
}

impl MethodAttrs for DriverView<'_, '_> {
    fn get_const(&self, id: u16, max: u64) -> Result<u64> {
        self.bundle.get_const(id, max)
    }

    fn copy_from(&self, id: u16, to: &mut [u8]) -> Result {
        let n = self.len(id)?;
        self.bundle
            .copy_from_or_zero(id, to.get_mut(..n).ok_or(EINVAL)?)
    }

    fn len(&self, id: u16) -> Result<usize> {
        Ok(usize::from(self.bundle.attr(id).ok_or(ENOENT)?.len))
    }

    fn copy_to(&self, id: u16, from: &[u8]) -> Result {
        self.bundle.copy_to(id, from)
    }

    fn copy_to_struct_or_zero(&self, id: u16, from: &[u8]) -> Result {
        self.bundle.copy_to_struct_or_zero(id, from)
    }

    fn pd_object(&self, id: u16) -> Result<&dyn core::any::Any> {
        let is_pd = |s: &AttrSpec| {
            s.id == id && matches!(s.kind, Kind::IdrRead { object } if object == OBJECT_PD)
        };
        if !self.bundle.specs.iter().any(is_pd) {
            return Err(EINVAL);
        }
        let handle = self.bundle.idr_handle(id)?;
        Ok(self.objects.pd(handle)?.driver_object())
    }
}
