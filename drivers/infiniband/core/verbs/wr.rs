// SPDX-License-Identifier: GPL-2.0

//! The data path's vocabulary: scatter/gather entries, send and receive work requests, and the
//! work completions a CQ returns (C's `ib_sge`, `ib_send_wr`, `ib_recv_wr`, `ib_wc`), with the
//! numeric values of the C enums so that drivers can put them on the wire unchanged.

use crate::verbs::types::{AccessFlags, AhAttr};
use kernel::{bindings, prelude::*};

/// One piece of local memory a work request reads or writes (`ib_sge`, in its layout: a C
/// module's scatter list is read as a slice of these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Sge {
    /// Device address (what `DmaBuffer::dma_addr` gives, plus an offset).
    pub addr: u64,
    /// Bytes.
    pub length: u32,
    /// Key of a memory region covering the range.
    pub lkey: u32,
}

/// Send work request operations (`enum ib_wr_opcode` values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum SendOpcode {
    /// Writes to remote memory.
    RdmaWrite = 0,
    /// Writes to remote memory and consumes a receive carrying the immediate data.
    RdmaWriteWithImm = 1,
    /// Sends to the peer's next receive.
    #[default]
    Send = 2,
    /// Sends with immediate data.
    SendWithImm = 3,
    /// Reads remote memory.
    RdmaRead = 4,
    /// Compares 8 bytes of remote memory with [`SendWr::compare_add`] and, if equal, writes
    /// [`SendWr::swap`]; the original value lands in the local buffer.
    AtomicCmpAndSwp = 5,
    /// Adds [`SendWr::compare_add`] to 8 bytes of remote memory; the original value lands in
    /// the local buffer.
    AtomicFetchAndAdd = 6,
    /// Invalidates the local key [`SendWr::invalidate_rkey`] of a fast-registration MR.
    LocalInv = 7,
    /// Sends and invalidates the peer's key [`SendWr::invalidate_rkey`] there.
    SendWithInv = 9,
    /// Registers the pages mapped into [`SendWr::reg`]'s MR ([`crate::verbs::Mr::map_sg`])
    /// under its new key.
    RegMr = 0x20,
}

/// Send flags (`enum ib_send_flags` values).
pub mod send_flags {
    /// Wait for earlier RDMA reads and atomics.
    pub const FENCE: u32 = 1;
    /// Generate a completion even when the QP does not signal every send.
    pub const SIGNALED: u32 = 1 << 1;
    /// Ask for a solicited event at the receiver.
    pub const SOLICITED: u32 = 1 << 2;
    /// Copy the data into the work request: the bytes are [`super::SendWr::inline_data`].
    pub const INLINE: u32 = 1 << 3;
}

/// An address handle's driver state, with the driver's type erased once (the `ops` module
/// implements it for every driver's `DeviceOps::Ah`).
pub(crate) trait AhObject: Send + Sync {
    /// The address of the driver's state (a `T::Ah` of the AH's driver `T`).
    fn state(&self) -> *const ();
    /// Whether its destruction may sleep (C's `RDMA_DESTROY_AH_SLEEPABLE`, which a C caller
    /// names when it destroys the AH); a driver that cares records it, the others ignore it.
    fn set_destroy_sleepable(&self, _sleepable: bool) {}
}

/// What a UD work request needs of an address handle: the address, the driver's state and the
/// device it was made on. A [`crate::verbs::Ah`] dereferences to it, so `ah: &ah` names one.
pub struct AhHandle {
    drv: KBox<dyn AhObject>,
    /// The address of the device's `IbDevice`, which the AH keeps alive (through its PD), so
    /// no other device has it while the AH exists.
    device: usize,
    attr: AhAttr,
}

impl AhHandle {
    /// The handle of an AH that `drv` made on the device at `device` for `attr`.
    pub(crate) fn new(drv: KBox<dyn AhObject>, device: usize, attr: AhAttr) -> Self {
        Self { drv, device, attr }
    }

    /// The address.
    pub fn attr(&self) -> &AhAttr {
        &self.attr
    }

    /// Whether the AH was made on the device at address `device`.
    #[inline]
    pub(crate) fn is_of(&self, device: usize) -> bool {
        self.device == device
    }

    /// The driver's state.
    #[inline]
    pub(crate) fn driver(&self) -> &dyn AhObject {
        &*self.drv
    }
}

impl core::fmt::Debug for AhHandle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ah").field("attr", &self.attr).finish()
    }
}

/// What a send work request on a UD QP carries (`ib_ud_wr`).
#[derive(Clone, Copy, Debug)]
pub struct UdWr<'a> {
    /// Where the datagram goes. The core refuses (`EINVAL`) an AH of another device than the
    /// QP's before the driver sees the work request.
    pub ah: &'a AhHandle,
    /// The destination QP.
    pub remote_qpn: u32,
    /// The destination's Q_Key (with the top bit set, the QP's own Q_Key is used, as in C).
    pub remote_qkey: u32,
}

/// Where [`MrObject::map_sg`] left a fast-registration MR: C's `ib_map_mr_sg` return value and
/// the range the driver's mapping gives the MR (its `iova` and `length`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MappedSg {
    /// Scatter entries mapped (a prefix of those given).
    pub count: u32,
    /// The MR's I/O virtual address: the first entry's DMA address plus the offset.
    pub iova: u64,
    /// Bytes mapped.
    pub length: u64,
}

/// A memory region's driver state, with the driver's type erased once.
pub(crate) trait MrObject: Send + Sync {
    /// The driver's own form of the MR, for a work request that names it (C drivers: its
    /// `struct ib_mr`); null for drivers without fast registration.
    fn state(&self) -> *const () {
        core::ptr::null()
    }

    /// Maps the DMA-mapped scatter list `sg` (`nents` entries, the first from byte `*offset`
    /// on, `offset` then advanced as C's `sg_offset_p`) into a fast-registration MR's page
    /// list in pages of `page_size` bytes (C's `ib_map_mr_sg`); `EOPNOTSUPP` for drivers
    /// without it.
    ///
    /// # Safety
    ///
    /// `sg` is a DMA-mapped scatter list of at least `nents` entries for this MR's device;
    /// `offset` is null or writable.
    unsafe fn map_sg(
        &self,
        _sg: *mut bindings::scatterlist,
        _nents: u32,
        _offset: *mut u32,
        _page_size: u32,
    ) -> Result<MappedSg> {
        Err(EOPNOTSUPP)
    }
}

/// What a registration work request needs of a fast-registration MR: the driver's state and
/// the device it was made on. A [`crate::verbs::Mr`] holds one ([`crate::verbs::Mr::handle`]).
pub struct MrHandle {
    drv: KBox<dyn MrObject>,
    /// The address of the device's `IbDevice`, which the MR keeps alive (through its PD).
    device: usize,
}

impl MrHandle {
    /// The handle of an MR that `drv` made on the device at `device`.
    pub(crate) fn new(drv: KBox<dyn MrObject>, device: usize) -> Self {
        Self { drv, device }
    }

    /// Whether the MR was made on the device at address `device`.
    #[inline]
    pub(crate) fn is_of(&self, device: usize) -> bool {
        self.device == device
    }

    /// The driver's state.
    #[inline]
    pub(crate) fn driver(&self) -> &dyn MrObject {
        &*self.drv
    }
}

/// What a memory registration work request carries (`ib_reg_wr`).
#[derive(Clone, Copy)]
pub struct RegWr<'a> {
    /// The fast-registration MR whose mapped pages are registered. The core refuses (`EINVAL`)
    /// an MR of another device than the QP's before the driver sees the work request.
    pub mr: &'a MrHandle,
    /// The MR's key once registered (its index with the consumer's key byte).
    pub key: u32,
    /// The access rights of the registration.
    pub access: AccessFlags,
}

impl core::fmt::Debug for RegWr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RegWr").field("key", &self.key).finish()
    }
}

/// A send work request (`ib_send_wr` with `ib_rdma_wr`, `ib_atomic_wr`, `ib_ud_wr` and
/// `ib_reg_wr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SendWr<'a> {
    /// The consumer's identifier, returned in the completion.
    pub wr_id: u64,
    /// Operation.
    pub opcode: SendOpcode,
    /// Local memory (ignored when `send_flags` has [`send_flags::INLINE`]).
    pub sg_list: &'a [Sge],
    /// The bytes of an inline send, in order: with [`send_flags::INLINE`] in `send_flags`, the
    /// driver copies the concatenation of these slices into the work request at post time and
    /// ignores `sg_list` (C passes inline data as `sg_list` entries whose `addr` is a kernel
    /// virtual address; here it is borrowed memory, so no address is trusted). The consumer may
    /// reuse the memory as soon as the post returns. A driver refuses more bytes than the QP's
    /// `max_inline_data` with `ENOMEM`, as C's mlx5 does. Empty by default; without `INLINE` it
    /// is ignored.
    pub inline_data: &'a [&'a [u8]],
    /// [`send_flags`] bits.
    pub send_flags: u32,
    /// Immediate data (with-immediate opcodes), as a number.
    pub imm_data: u32,
    /// Remote address (RDMA opcodes).
    pub remote_addr: u64,
    /// Remote key (RDMA opcodes).
    pub rkey: u32,
    /// Atomics: the value compared (compare-and-swap) or added (fetch-and-add).
    pub compare_add: u64,
    /// Compare-and-swap: the value written when the comparison holds.
    pub swap: u64,
    /// UD QPs: the destination.
    pub ud: Option<UdWr<'a>>,
    /// The key [`SendOpcode::SendWithInv`] invalidates at the peer, or
    /// [`SendOpcode::LocalInv`] here.
    pub invalidate_rkey: u32,
    /// [`SendOpcode::RegMr`]: the registration.
    pub reg: Option<RegWr<'a>>,
}

/// A receive work request (`ib_recv_wr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RecvWr<'a> {
    /// The consumer's identifier, returned in the completion.
    pub wr_id: u64,
    /// Where incoming data goes.
    pub sg_list: &'a [Sge],
}

/// A post that stopped early: the work requests before `first_bad` are posted, the others are
/// not (C's `bad_wr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostError {
    /// Index of the first work request not posted.
    pub first_bad: usize,
    /// Why (`EINVAL` for a malformed request or a QP in the wrong state, `ENOMEM` for a full
    /// queue, as C's drivers).
    pub err: Error,
}

impl From<Error> for PostError {
    /// A failure before anything was posted.
    fn from(err: Error) -> PostError {
        PostError { first_bad: 0, err }
    }
}

impl From<PostError> for Error {
    fn from(e: PostError) -> Error {
        e.err
    }
}

/// Completion status (`enum ib_wc_status` values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum WcStatus {
    /// Success.
    #[default]
    Success = 0,
    /// Local length error (a message longer than the receive buffer).
    LocLenErr = 1,
    /// Local QP operation error.
    LocQpOpErr = 2,
    /// Local EE context operation error.
    LocEecOpErr = 3,
    /// Local protection error (bad lkey or address).
    LocProtErr = 4,
    /// Flushed: the QP went to the error state before the request was processed.
    WrFlushErr = 5,
    /// Memory window bind error.
    MwBindErr = 6,
    /// Bad response.
    BadRespErr = 7,
    /// Local access error.
    LocAccessErr = 8,
    /// Remote invalid request (the responder could not take the message).
    RemInvReqErr = 9,
    /// Remote access error (bad rkey, address or rights).
    RemAccessErr = 10,
    /// Remote operation error.
    RemOpErr = 11,
    /// Transport retries exhausted.
    RetryExcErr = 12,
    /// RNR retries exhausted.
    RnrRetryExcErr = 13,
    /// Local RDD violation.
    LocRddViolErr = 14,
    /// Remote invalid RD request.
    RemInvRdReqErr = 15,
    /// Remote aborted.
    RemAbortErr = 16,
    /// Invalid EE context number.
    InvEecnErr = 17,
    /// Invalid EE context state.
    InvEecStateErr = 18,
    /// Fatal error.
    FatalErr = 19,
    /// Response timeout.
    RespTimeoutErr = 20,
    /// General error.
    GeneralErr = 21,
}

/// Completed operations (`enum ib_wc_opcode` values; receives have bit 7 set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum WcOpcode {
    /// A send.
    #[default]
    Send = 0,
    /// An RDMA write.
    RdmaWrite = 1,
    /// An RDMA read.
    RdmaRead = 2,
    /// A compare-and-swap.
    CompSwap = 3,
    /// A fetch-and-add.
    FetchAdd = 4,
    /// A local invalidation.
    LocalInv = 6,
    /// A memory registration.
    RegMr = 10,
    /// A receive.
    Recv = 1 << 7,
    /// A receive consumed by an RDMA write with immediate data.
    RecvRdmaWithImm = (1 << 7) + 1,
}

/// A work completion (`ib_wc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The work request's identifier.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Operation (only meaningful on success, as in C).
    pub opcode: WcOpcode,
    /// The driver's error detail.
    pub vendor_err: u32,
    /// Bytes received (receives).
    pub byte_len: u32,
    /// Immediate data, when the message carried some (C's `IB_WC_WITH_IMM`).
    pub imm_data: Option<u32>,
    /// The local key a send with invalidate from the peer invalidated (receives; C's
    /// `IB_WC_WITH_INVALIDATE`).
    pub invalidated_rkey: Option<u32>,
    /// The local QP.
    pub qp_num: u32,
    /// The sending QP (receives).
    pub src_qp: u32,
    /// The sender's LID (receives).
    pub slid: u16,
    /// The sender's service level (receives).
    pub sl: u8,
    /// The port (receives).
    pub port_num: u8,
    /// The first 40 bytes of the receive buffer hold a GRH (UD receives, C's `IB_WC_GRH`).
    pub grh: bool,
    /// The P_Key index the message came in on (receives on the GSI QP).
    pub pkey_index: u16,
    /// The destination LID's path bits (receives).
    pub dlid_path_bits: u8,
}
