// SPDX-License-Identifier: GPL-2.0

//! The mlx5 firmware interface, declared once for `mlx5_core` and the protocol modules
//! (`mlx5_ib` imports from here): commands and contexts are big-endian bit fields at fixed
//! offsets (bit 0 is the most significant bit of byte 0). [`layout!`] declares a layout as a
//! byte array with one typed accessor per field, so drivers write
//! `QueryPagesIn::new().op_mod(1)?` instead of offsets; a [`Command`] ties an opcode to its input
//! and output layouts, so `exec::<QueryPages>(&input)` returns a [`QueryPagesOut`].
//!
//! Offsets are those of the interface (`mlx5_ifc.h`); `tools/dev/ifc_layout.py` prints them.
//! A value too wide for its field is refused with `EINVAL` (never cut to the field's width).

pub mod verbs;

use crate::cmd::status::op;
use kernel::prelude::*;

/// Largest layout: layouts are copied onto the kernel stack (16 KiB, shared by the whole call
/// chain), so big structures such as the 4 KiB capability page are declared only as far as
/// the fields read from them.
pub const MAX_LAYOUT_BYTES: usize = 0x400;

/// Reads `width` bits at `bit` of `buf`; bits past the end read as zero. A field of whole bytes
/// is read a byte at a time (most are: addresses, numbers, sizes), others a bit at a time.
pub fn get_bits(buf: &[u8], bit: usize, width: usize) -> u64 {
    if bit % 8 == 0 && width % 8 == 0 && width <= 64 {
        let at = bit / 8;
        return (at..at + width / 8).fold(0u64, |v, i| {
            (v << 8) | u64::from(buf.get(i).copied().unwrap_or(0))
        });
    }
    let mut v = 0u64;
    for i in 0..width {
        let b = bit + i;
        let set = buf.get(b / 8).map_or(0, |byte| (byte >> (7 - b % 8)) & 1);
        v = (v << 1) | u64::from(set);
    }
    v
}

/// Writes `v` into the `width` bits at `bit` of `buf`.
///
/// `EINVAL` if `v` does not fit in `width` bits or the field does not lie inside `buf`; `buf`
/// is unchanged then. (`EINVAL` rather than `ERANGE`: the value is an argument outside the
/// field's domain, which is what the kernel's and the C driver's callers report with `EINVAL`;
/// `ERANGE` means a result that cannot be represented.)
pub fn set_bits(buf: &mut [u8], bit: usize, width: usize, v: u64) -> Result {
    if width > 64 || (width < 64 && v >> width != 0) {
        return Err(EINVAL);
    }
    let end = bit.checked_add(width).ok_or(EINVAL)?;
    if end > buf.len() * 8 {
        return Err(EINVAL);
    }
    if bit % 8 == 0 && width % 8 == 0 {
        // Whole bytes, most significant first (a mailbox trailer's 64-bit pointer was 64
        // turns of the loop below per block).
        let bytes = width / 8;
        for (i, byte) in buf.iter_mut().skip(bit / 8).take(bytes).enumerate() {
            *byte = (v >> (8 * (bytes - 1 - i))) as u8;
        }
        return Ok(());
    }
    for i in 0..width {
        let b = bit + i;
        let set = ((v >> (width - 1 - i)) & 1) as u8;
        let shift = 7 - b % 8;
        // In bounds: `bit + width <= buf.len() * 8` was checked above.
        if let Some(byte) = buf.get_mut(b / 8) {
            *byte = (*byte & !(1 << shift)) | (set << shift);
        }
    }
    Ok(())
}

/// A declared interface layout: a fixed number of bytes, copied by value.
pub trait Layout: Clone {
    /// Size of the layout in bytes.
    const SIZE: usize;

    /// A zeroed layout.
    fn zeroed() -> Self;

    /// The layout at the start of `bytes`, zero-extended if `bytes` is shorter.
    fn from_bytes(bytes: &[u8]) -> Self;

    /// The raw bytes.
    fn as_bytes(&self) -> &[u8];

    /// The raw bytes, mutable.
    fn as_bytes_mut(&mut self) -> &mut [u8];
}

/// A firmware command: its opcode and the layouts of its input and output.
///
/// The command queue writes [`Command::OPCODE`] into the input's header, so input layouts do not
/// carry it. Commands with a variable part (page lists, capability pages) pass or receive it as
/// bytes after the fixed layout (`exec_var`).
pub trait Command {
    /// `MLX5_CMD_OP_*`.
    const OPCODE: u16;
    /// The fixed part of the input, header included.
    type In: Layout;
    /// The fixed part of the output, header included (as far as the driver reads it).
    type Out: Layout;
    /// Output bytes the command asks the device for (at least the layout; more when the
    /// interface's output is longer than what the driver reads).
    const OUT_LEN: usize = <Self::Out as Layout>::SIZE;
}

/// Declares interface layouts.
///
/// `input` layouts get a builder method per field (`Layout::new().field(value)?`, `EINVAL` for a
/// value wider than the field); `output` layouts get a getter per field; `context` layouts (read
/// and modified in place, such as capability pages) get a getter and a `set_` method per field.
/// Field offsets and widths are in bits. Lines starting with `@` declare byte ranges (offset and
/// length in bytes) with a `name()` and a `name_mut()` slice accessor, for data that is not a
/// number (strings, MADs). The compiler checks that every field fits in the layout and is at most
/// 64 bits wide, and that the layout is at most [`MAX_LAYOUT_BYTES`].
///
/// Not exported: interface layouts are declared here, once, for every module that uses them.
macro_rules! layout {
    ($(
        $(#[$meta:meta])*
        $vis:vis $kind:ident $name:ident [$bytes:expr] {
            $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )*
            $( @ $(#[$bmeta:meta])* $bname:ident: $boff:expr, $blen:expr; )*
        }
    )*) => {$(
        $(#[$meta])*
        #[derive(Clone)]
        $vis struct $name {
            bytes: [u8; $bytes],
        }

        // Accessors are generated for every field and layout; a driver uses the ones it needs.
        #[allow(dead_code)]
        impl $name {
            /// Size of the layout in bytes.
            $vis const SIZE: usize = $bytes;

            // Every field must lie inside the layout and fit in a u64. (`allow`, not `expect`:
            // the lint fires only for layouts that have one-bit fields.) A layout is a value on
            // the stack: it is sized to the fields it declares (a 4 KiB capability page is read
            // through a prefix of it), never more than `MAX_LAYOUT_BYTES`.
            #[allow(clippy::int_plus_one)]
            const _FIELDS_FIT: () = {
                assert!($bytes <= $crate::ifc::MAX_LAYOUT_BYTES);
                $( assert!($width <= 64 && $bit + $width <= $bytes * 8); )*
                $( assert!($boff + $blen <= $bytes); )*
            };

            /// A zeroed layout.
            #[inline]
            $vis fn new() -> Self {
                let () = Self::_FIELDS_FIT;
                Self { bytes: [0; $bytes] }
            }

            /// The layout at the start of `bytes`, zero-extended if `bytes` is shorter.
            #[inline]
            $vis fn from_bytes(bytes: &[u8]) -> Self {
                let mut this = Self::new();
                let n = bytes.len().min($bytes);
                this.bytes[..n].copy_from_slice(&bytes[..n]);
                this
            }

            /// The raw bytes.
            #[inline]
            $vis fn as_bytes(&self) -> &[u8] {
                &self.bytes
            }

            /// The raw bytes, mutable.
            #[inline]
            $vis fn as_bytes_mut(&mut self) -> &mut [u8] {
                &mut self.bytes
            }

            $(
                $(#[$bmeta])*
                #[inline]
                $vis fn $bname(&self) -> &[u8] {
                    &self.bytes[$boff..$boff + $blen]
                }

                ::kernel::macros::paste! {
                    $(#[$bmeta])*
                    #[inline]
                    $vis fn [<$bname _mut>](&mut self) -> &mut [u8] {
                        &mut self.bytes[$boff..$boff + $blen]
                    }
                }
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $crate::ifc::Layout for $name {
            const SIZE: usize = $bytes;

            #[inline]
            fn zeroed() -> Self {
                Self::new()
            }

            #[inline]
            fn from_bytes(bytes: &[u8]) -> Self {
                $name::from_bytes(bytes)
            }

            fn as_bytes(&self) -> &[u8] {
                &self.bytes
            }

            fn as_bytes_mut(&mut self) -> &mut [u8] {
                &mut self.bytes
            }
        }

        $crate::ifc::layout!(@accessors $kind $vis $name { $( $(#[$fmeta])* $field: $bit, $width; )* });
    )*};

    (@accessors input $vis:vis $name:ident { $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )* }) => {
        #[allow(dead_code)]
        impl $name {
            $(
                #[doc = concat!("Sets `", stringify!($field), "`.")]
                $(#[$fmeta])*
                ///
                /// `EINVAL` if `value` is wider than the field.
                #[inline]
                $vis fn $field(mut self, value: u64) -> ::kernel::error::Result<Self> {
                    $crate::ifc::set_bits(&mut self.bytes, $bit, $width, value)?;
                    Ok(self)
                }

                ::kernel::macros::paste! {
                    #[doc = concat!("Sets `", stringify!($field), "` in place (no copy of the layout: for large inputs built on a deep stack).")]
                    $(#[$fmeta])*
                    ///
                    /// `EINVAL` if `value` is wider than the field.
                    #[inline]
                    $vis fn [<set_ $field>](&mut self, value: u64) -> ::kernel::error::Result {
                        $crate::ifc::set_bits(&mut self.bytes, $bit, $width, value)
                    }
                }
            )*
        }
    };

    (@accessors output $vis:vis $name:ident { $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )* }) => {
        #[allow(dead_code)]
        impl $name {
            $(
                #[doc = concat!("`", stringify!($field), "`.")]
                $(#[$fmeta])*
                #[inline]
                $vis fn $field(&self) -> u64 {
                    $crate::ifc::get_bits(&self.bytes, $bit, $width)
                }
            )*
        }
    };

    (@accessors context $vis:vis $name:ident { $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )* }) => {
        $crate::ifc::layout!(@accessors output $vis $name { $( $(#[$fmeta])* $field: $bit, $width; )* });

        #[allow(dead_code)]
        impl $name {
            $(
                ::kernel::macros::paste! {
                    #[doc = concat!("Sets `", stringify!($field), "`.")]
                    $(#[$fmeta])*
                    ///
                    /// Sets the field; `EINVAL` if `value` is wider than it.
                    #[inline]
                    $vis fn [<set_ $field>](&mut self, value: u64) -> ::kernel::error::Result {
                        $crate::ifc::set_bits(&mut self.bytes, $bit, $width, value)
                    }
                }
            )*
        }
    };
}

pub(crate) use layout;

/// Declares command types: `Name: OPCODE, In => Out;` (optionally `, out_len = N` for an output
/// longer than the layout read from it).
macro_rules! commands {
    ($(
        $(#[$meta:meta])*
        $name:ident: $opcode:ident, $in:ty => $out:ty $(, out_len = $len:expr)?;
    )*) => {$(
        $(#[$meta])*
        pub struct $name;

        impl Command for $name {
            const OPCODE: u16 = op::$opcode;
            type In = $in;
            type Out = $out;
            $( const OUT_LEN: usize = $len; )?
        }
    )*};
}

pub(crate) use commands;

layout! {
    /// The header of every command input (the opcode is written by the command queue).
    pub context CmdInHeader[16] {
        opcode: 0x00, 16;
        uid: 0x10, 16;
        op_mod: 0x30, 16;
    }
    /// The header of every command output.
    pub output OutHeader[16] {
        status: 0x00, 8;
        syndrome: 0x20, 32;
    }
    /// Input of the commands that carry only a function id (ENABLE_HCA, DISABLE_HCA).
    pub input FunctionIn[16] {
        op_mod: 0x30, 16;
        function_id: 0x50, 16;
    }
    /// Input of commands with nothing but the header.
    pub input PlainIn[16] {
        op_mod: 0x30, 16;
    }
    /// QUERY_ISSI output.
    pub output QueryIssiOut[0x70] {
        current_issi: 0x50, 16;
        supported_issi_dw0: 0x360, 32;
    }
    /// SET_ISSI input.
    pub input SetIssiIn[16] {
        current_issi: 0x50, 16;
    }
    /// ACCESS_REG input with a 16-byte register.
    pub input AccessRegIn[0x20] {
        op_mod: 0x30, 16;
        register_id: 0x50, 16;
        argument: 0x60, 32;
    }
    /// ACCESS_REG input with the PCAP register (port capabilities, 20 bytes at 0x10): the local
    /// port and the PortInfo.CapabilityMask it reports.
    pub input AccessRegPcapIn[0x24] {
        op_mod: 0x30, 16;
        register_id: 0x50, 16;
        argument: 0x60, 32;
        local_port: 0x88, 8;
        port_capability_mask: 0xa0, 32;
    }
    /// TEARDOWN_HCA input.
    pub input TeardownHcaIn[16] {
        profile: 0x50, 16;
    }
    /// SET_DRIVER_VERSION input.
    pub input SetDriverVersionIn[0x50] {
        @
        /// The version string (NUL-padded).
        driver_version: 0x10, 0x40;
    }
    /// QUERY_ADAPTER output.
    pub output QueryAdapterOut[0x110] {
        ieee_vendor_id: 0x148, 24;
        @
        /// The board id (PSID), NUL-padded.
        vsd_contd_psid: 0x100, 16;
    }
    /// QUERY_PAGES input.
    pub input QueryPagesIn[16] {
        op_mod: 0x30, 16;
        function_id: 0x50, 16;
    }
    /// QUERY_PAGES output.
    pub output QueryPagesOut[16] {
        function_id: 0x50, 16;
        num_pages: 0x60, 32;
    }
    /// MANAGE_PAGES input header; the page addresses (big-endian 64-bit) follow.
    pub input ManagePagesIn[16] {
        op_mod: 0x30, 16;
        function_id: 0x50, 16;
        input_num_entries: 0x60, 32;
    }
    /// MANAGE_PAGES output header; returned addresses follow.
    pub output ManagePagesOut[16] {
        output_num_entries: 0x40, 32;
    }
    /// CREATE_EQ input with a one-page queue.
    pub input CreateEqIn[0x118] {
        log_eq_size: 0xe3, 5;
        uar_page: 0xe8, 24;
        intr: 0x134, 12;
        log_page_size: 0x143, 5;
        event_bitmask: 0x2c0, 64;
        pas0: 0x880, 64;
    }
    /// CREATE_EQ output.
    pub output CreateEqOut[16] {
        eq_number: 0x58, 8;
    }
    /// DESTROY_EQ input.
    pub input DestroyEqIn[16] {
        eq_number: 0x58, 8;
    }
    /// ALLOC_UAR output.
    pub output AllocUarOut[16] {
        uar: 0x48, 24;
    }
    /// DEALLOC_UAR input.
    pub input DeallocUarIn[16] {
        uar: 0x48, 24;
    }
    /// MAD_IFC input (`mad_ifc_in`): the header, then the MAD at byte 0x10 (the common MAD
    /// header fields a `Get` sets are declared here; the rest of the MAD is zero).
    pub input MadIfcIn[0x110] {
        op_mod: 0x30, 16;
        remote_lid: 0x40, 16;
        plane_index: 0x50, 8;
        port: 0x58, 8;
        mad_base_version: 0x80, 8;
        mad_mgmt_class: 0x88, 8;
        mad_class_version: 0x90, 8;
        mad_method: 0x98, 8;
        mad_attr_id: 0x100, 16;
        mad_attr_mod: 0x120, 32;
    }
    /// MAD_IFC output: the answer MAD at byte 0x10.
    pub output MadIfcOut[0x110] {
        mad_status: 0xa0, 16;
        @
        /// The SMP's attribute data.
        smp_data: 0x50, 64;
    }
    /// QUERY_HCA_VPORT_CONTEXT input.
    pub input QueryHcaVportContextIn[0x10] {
        op_mod: 0x30, 16;
        other_vport: 0x40, 1;
        port_num: 0x4c, 4;
        vport_number: 0x50, 16;
    }
    /// QUERY_HCA_VPORT_CONTEXT output, as far as used (the context starts at byte 0x10).
    pub output QueryHcaVportContextOut[0x40] {
        grh_required: 0x183, 1;
    }
    /// General device capabilities (`cmd_hca_cap`), the fields `mlx5_core` and `mlx5_ib` read
    /// or set (the 4 KiB page as far as its last field used).
    pub context GeneralCaps[0xc0] {
        log_max_srq_sz: 0x80, 8;
        log_max_qp_sz: 0x88, 8;
        log_max_qp: 0x9b, 5;
        log_max_srq: 0xab, 5;
        log_max_cq_sz: 0xc8, 8;
        log_max_cq: 0xdb, 5;
        /// Log2 of the number of EQs (used when `max_num_eqs` is 0).
        log_max_eq: 0xfc, 4;
        log_max_mkey: 0xea, 6;
        log_max_ra_req_qp: 0x14a, 6;
        log_max_ra_res_qp: 0x15a, 6;
        pkey_table_size: 0x190, 16;
        ib_virt: 0x1a2, 1;
        local_ca_ack_delay: 0x1ab, 5;
        port_type: 0x1b6, 2;
        num_ports: 0x1b8, 8;
        log_max_msg: 0x1c3, 5;
        ipoib_basic_offloads: 0x204, 1;
        umr_modify_entity_size_disabled: 0x207, 1;
        cmdif_checksum: 0x210, 2;
        atomic: 0x21e, 1;
        /// MODIFY_CQ can resize a CQ.
        cq_resize: 0x221, 1;
        apm: 0x22e, 1;
        imaicl: 0x231, 1;
        qkv: 0x236, 1;
        pkv: 0x237, 1;
        xrc: 0x23c, 1;
        log_pg_sz: 0x258, 8;
        driver_version: 0x261, 1;
        /// Log2 of a blue-flame register's size (two buffers that alternate).
        log_bf_reg_size: 0x26b, 5;
        max_wqe_sz_sq: 0x290, 16;
        max_wqe_sz_rq: 0x2b0, 16;
        log_max_pd: 0x32b, 5;
        /// Number of EQs (0: see `log_max_eq`).
        max_num_eqs: 0x470, 16;
        log_uar_page_sz: 0x490, 16;
        max_sgl_for_optimized_performance: 0xc0, 8;
        ece_support: 0xa3, 1;
        dump_fill_mkey: 0xf8, 1;
        log_max_klm_list_size: 0x11a, 6;
        end_pad: 0x160, 1;
        rq_delay_drop: 0x185, 1;
        general_notification_event: 0x1d2, 1;
        /// Highest CQE format version (user contexts take the lower of it and theirs).
        cqe_version: 0x1fc, 4;
        striding_rq: 0x201, 1;
        ipoib_enhanced_offloads: 0x203, 1;
        drain_sigerr: 0x20f, 1;
        sho: 0x217, 1;
        dct: 0x21a, 1;
        qos: 0x21b, 1;
        eth_net_offloads: 0x21c, 1;
        roce: 0x21d, 1;
        cq_moderation: 0x222, 1;
        block_lb_mc: 0x228, 1;
        qp_packet_based: 0x232, 1;
        /// UARs are 4 KiB, several to a system page.
        uar_4k: 0x240, 1;
        /// Blue-flame (write-combining) doorbells.
        bf: 0x260, 1;
        max_qp_mcg: 0x2e7, 25;
        log_max_mcg: 0x318, 8;
        log_max_transport_domain: 0x323, 5;
        /// Translation entries carry their own access bits (`MLX5_IB_MTT_PRESENT`).
        pg: 0x227, 1;
        ext_stride_num_range: 0x3a0, 1;
        sq_ts_format: 0x440, 2;
        rq_ts_format: 0x442, 2;
        /// Log2 of the DEVX user contexts (0: no DEVX).
        log_max_uctx: 0x463, 5;
        /// Q counters have `out_of_sequence`.
        out_of_seq_cnt: 0x180, 1;
        /// Q counters have the retransmission group (`duplicate_request`, ...).
        retransmission_q_counters: 0x182, 1;
        /// Number of Q counter sets (0: none).
        max_qp_cnt: 0x186, 10;
        /// Congestion statistics (QUERY_CONG_STATISTICS).
        cc_query_allowed: 0x161, 1;
        /// Q counters have the enhanced error group (`resp_local_length_error`, ...).
        enhanced_error_q_counters: 0x1b1, 1;
        device_frequency_khz: 0x4e0, 32;
        num_of_uars_per_page: 0x520, 32;
        log_max_dci_stream_channels: 0x58b, 5;
        log_max_dci_errored_streams: 0x593, 5;
        mini_cqe_resp_stride_index: 0x5bc, 1;
        cqe_128_always: 0x5bd, 1;
        cqe_compression_128: 0x5be, 1;
        cqe_compression: 0x5bf, 1;
        cqe_compression_max_num: 0x5d0, 16;
        tag_matching: 0x5f0, 1;
    }
    /// Atomic capabilities (`atomic_caps`, as far as used).
    pub context AtomicCaps[0x18] {
        atomic_req_8b_endianness_mode: 0x40, 2;
        supported_atomic_req_8b_endianness_mode_1: 0x46, 1;
        atomic_operations: 0x90, 16;
        atomic_size_qp: 0xb0, 16;
    }
    /// A command queue entry (`mlx5_cmd_layout`).
    pub context CmdEntry[0x40] {
        type_: 0x00, 8;
        input_length: 0x20, 32;
        input_mailbox_pointer: 0x40, 64;
        output_mailbox_pointer: 0x180, 64;
        output_length: 0x1c0, 32;
        token: 0x1e0, 8;
        signature: 0x1e8, 8;
        status: 0x1f8, 7;
        ownership: 0x1ff, 1;
        @
        /// The first 16 bytes of the input.
        command_input_inline_data: 0x10, 16;
        @
        /// The first 16 bytes of the output.
        command_output_inline_data: 0x20, 16;
    }
    /// A command mailbox block (`mlx5_cmd_prot_block`): 512 data bytes, then a
    /// [`CmdMailboxTrailer`].
    pub context CmdMailbox[0x240] {
        @
        /// The data the block carries.
        mailbox_data: 0x00, 0x200;
        @
        /// What follows the data.
        trailer: 0x200, 0x40;
    }
    /// The 64 bytes of a mailbox block after its data (`mlx5_cmd_prot_block` from `rsvd0`):
    /// the next block's address, the block's number, the token and the signatures.
    pub context CmdMailboxTrailer[0x40] {
        next_pointer: 0x180, 64;
        block_number: 0x1c0, 32;
        token: 0x1e8, 8;
        ctrl_signature: 0x1f0, 8;
        signature: 0x1f8, 8;
    }
    /// An event queue entry (`mlx5_eqe`), with the event data of the events this driver takes.
    pub context Eqe[0x40] {
        event_type: 0x08, 8;
        event_sub_type: 0x18, 8;
        /// CMD event: the slots completed (`cmd_eqe.vector`).
        cmd_vector: 0x100, 32;
        /// Page request: the function (`page_req_eqe.func_id`).
        page_function_id: 0x110, 16;
        /// Page request: pages to give (positive) or take back (negative), two's complement.
        page_num_pages: 0x120, 32;
        /// Port change: the port number (`port_change_eqe.port`, high nibble).
        port_num: 0x140, 4;
        /// CQ error: the CQ (`cq_err.cqn`, low 24 bits).
        cq_err_cqn: 0x100, 32;
        /// QP/SRQ event: the resource's queue type (`qp_srq.type`).
        qp_srq_type: 0x1a0, 8;
        /// QP/SRQ event: the resource number (`qp_srq.qp_srq_n`, low 24 bits).
        qp_srq_n: 0x1c0, 32;
        /// Completion: the CQ (`comp.cqn`, low 24 bits).
        comp_cqn: 0x1c0, 32;
        signature: 0x1f0, 8;
        owner: 0x1ff, 1;
    }
}

commands! {
    /// `ENABLE_HCA`.
    EnableHca: ENABLE_HCA, FunctionIn => OutHeader;
    /// `DISABLE_HCA`.
    DisableHca: DISABLE_HCA, FunctionIn => OutHeader;
    /// `QUERY_ISSI`.
    QueryIssi: QUERY_ISSI, PlainIn => QueryIssiOut;
    /// `SET_ISSI`.
    SetIssi: SET_ISSI, SetIssiIn => OutHeader;
    /// `ACCESS_REG` of a 16-byte register (its value is not read).
    AccessReg: ACCESS_REG, AccessRegIn => OutHeader, out_len = 0x20;
    /// `ACCESS_REG` of the PCAP register.
    AccessRegPcap: ACCESS_REG, AccessRegPcapIn => OutHeader, out_len = 0x24;
    /// `QUERY_HCA_CAP`: the capability page follows the output header.
    QueryHcaCap: QUERY_HCA_CAP, PlainIn => OutHeader;
    /// `SET_HCA_CAP`: the capability page follows the input header.
    SetHcaCap: SET_HCA_CAP, PlainIn => OutHeader;
    /// `INIT_HCA`.
    InitHca: INIT_HCA, PlainIn => OutHeader;
    /// `TEARDOWN_HCA`.
    TeardownHca: TEARDOWN_HCA, TeardownHcaIn => OutHeader;
    /// `SET_DRIVER_VERSION`.
    SetDriverVersion: SET_DRIVER_VERSION, SetDriverVersionIn => OutHeader;
    /// `QUERY_ADAPTER`.
    QueryAdapter: QUERY_ADAPTER, PlainIn => QueryAdapterOut;
    /// `QUERY_PAGES`.
    QueryPages: QUERY_PAGES, QueryPagesIn => QueryPagesOut;
    /// `MANAGE_PAGES`: page addresses follow the input (give) or the output (take).
    ManagePages: MANAGE_PAGES, ManagePagesIn => ManagePagesOut;
    /// `CREATE_EQ`.
    CreateEq: CREATE_EQ, CreateEqIn => CreateEqOut;
    /// `DESTROY_EQ`.
    DestroyEq: DESTROY_EQ, DestroyEqIn => OutHeader;
    /// `ALLOC_UAR`.
    AllocUar: ALLOC_UAR, PlainIn => AllocUarOut;
    /// `DEALLOC_UAR`.
    DeallocUar: DEALLOC_UAR, DeallocUarIn => OutHeader;
    /// `MAD_IFC`.
    MadIfc: MAD_IFC, MadIfcIn => MadIfcOut;
    /// `QUERY_HCA_VPORT_CONTEXT` (the device returns the whole `hca_vport_context`).
    QueryHcaVportContext: QUERY_HCA_VPORT_CONTEXT, QueryHcaVportContextIn
        => QueryHcaVportContextOut, out_len = 0x210;
    /// `NOP`.
    Nop: NOP, PlainIn => OutHeader;
}

/// The input bytes of a command as the queue sends them: `input` with `C::OPCODE` in its header.
pub fn encode<C: Command>(input: &C::In) -> Result<C::In> {
    let mut input = input.clone();
    let mut hdr = CmdInHeader::from_bytes(input.as_bytes());
    hdr.set_opcode(C::OPCODE.into())?;
    let n = CmdInHeader::SIZE.min(C::In::SIZE);
    input.as_bytes_mut()[..n].copy_from_slice(&hdr.as_bytes()[..n]);
    Ok(input)
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ifc)]
mod tests {
    use super::*;

    layout! {
        /// A test input.
        input TestIn[16] {
            opcode: 0x00, 16;
            op_mod: 0x30, 16;
            straddle: 0x1c, 8;
            wide: 0x40, 64;
        }
        /// A test output.
        output TestOut[16] {
            status: 0x00, 8;
            syndrome: 0x20, 32;
            log_max_qp: 0x5b, 5;
        }
    }

    #[test]
    fn builder_places_fields_big_endian() -> Result {
        let mut i = TestIn::new();
        i.set_opcode(0x104)?;
        i.set_op_mod(3)?;
        i.set_wide(0x0123_4567_89ab_cdef)?;
        let b = i.as_bytes();
        assert_eq!(&b[0..2], &[0x01, 0x04]);
        assert_eq!(&b[6..8], &[0x00, 0x03]);
        assert_eq!(&b[8..16], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        Ok(())
    }

    #[test]
    fn whole_byte_fields_match_the_bit_loop() -> Result {
        // The byte path of set_bits/get_bits against a field written bit by bit (an unaligned
        // one, then moved by a byte): the same bytes, the same values, neighbours untouched.
        for (bit, width, v) in [
            (8usize, 8usize, 0xa5u64),
            (16, 16, 0xbeef),
            (32, 64, 0x0102_0304_0506_0708),
        ] {
            let mut fast = [0x5au8; 16];
            set_bits(&mut fast, bit, width, v)?;
            let mut slow = [0x5au8; 17];
            set_bits(&mut slow, bit + 4, width, v)?;
            assert_eq!(get_bits(&fast, bit, width), v);
            assert_eq!(get_bits(&slow, bit + 4, width), v);
            for k in 0..width / 8 {
                let from_slow = (slow[bit / 8 + k] << 4) | (slow[bit / 8 + k + 1] >> 4);
                assert_eq!(fast[bit / 8 + k], from_slow);
            }
            assert_eq!(fast[bit / 8 - 1], 0x5a);
            assert!(fast[(bit + width) / 8..].iter().all(|&b| b == 0x5a));
        }
        // Past the end: refused, nothing written; reads as zero.
        let mut short = [0u8; 4];
        assert_eq!(set_bits(&mut short, 16, 32, 1).err(), Some(EINVAL));
        assert_eq!(short, [0; 4]);
        assert_eq!(get_bits(&[0xff, 0xff], 8, 16), 0xff00);
        Ok(())
    }

    #[test]
    fn field_straddling_bytes() -> Result {
        let i = TestIn::new().straddle(0xab)?;
        assert_eq!(i.as_bytes()[3] & 0x0f, 0x0a);
        assert_eq!(i.as_bytes()[4] >> 4, 0x0b);
        assert_eq!(get_bits(i.as_bytes(), 0x1c, 8), 0xab);
        Ok(())
    }

    #[test]
    fn getters_and_short_outputs() {
        let o = TestOut::from_bytes(&[0x02, 0, 0, 0, 0x0c, 0xf0, 0x01, 0x04, 0, 0, 0, 18]);
        assert_eq!(o.status(), 2);
        assert_eq!(o.syndrome(), 0x0cf0_0104);
        assert_eq!(o.log_max_qp(), 18);
        // Missing bytes read as zero.
        assert_eq!(TestOut::from_bytes(&[]).syndrome(), 0);
    }

    #[test]
    fn values_wider_than_the_field_are_refused() -> Result {
        // One bit too many is refused, and the layout is left as it was.
        assert_eq!(TestIn::new().op_mod(0x1_0005).err(), Some(EINVAL));
        let mut caps = GeneralCaps::new();
        caps.set_log_max_qp(18)?;
        assert_eq!(caps.set_log_max_qp(1 << 5), Err(EINVAL));
        assert_eq!(caps.log_max_qp(), 18);
        let mut buf = [0u8; 4];
        assert_eq!(set_bits(&mut buf, 0x1c, 8, 0xab), Err(EINVAL));
        assert_eq!(set_bits(&mut buf, 0, 3, 8), Err(EINVAL));
        assert_eq!(buf, [0; 4]);
        // The widest value that fits is kept whole, neighbours untouched.
        let i = TestIn::new().op_mod(0xffff)?;
        assert_eq!(get_bits(i.as_bytes(), 0x30, 16), 0xffff);
        assert_eq!(get_bits(i.as_bytes(), 0x20, 16), 0);
        assert_eq!(get_bits(i.as_bytes(), 0x40, 8), 0);
        // 64-bit fields take any value.
        assert!(TestIn::new().wide(u64::MAX).is_ok());
        Ok(())
    }

    #[test]
    fn commands_tie_opcodes_to_their_layouts() -> Result {
        assert_eq!(QueryPages::OPCODE, 0x107);
        assert_eq!(<QueryPages as Command>::In::SIZE, 16);
        assert_eq!(<QueryPages as Command>::OUT_LEN, 16);
        assert_eq!(QueryIssi::OUT_LEN, 0x70);
        assert_eq!(AccessReg::OUT_LEN, 0x20);
        assert_eq!(<AccessReg as Command>::In::SIZE, 0x20);
        assert_eq!(QueryHcaVportContext::OUT_LEN, 0x210);
        assert_eq!(<MadIfc as Command>::In::SIZE, 0x110);
        assert_eq!(<CreateEq as Command>::In::SIZE, 0x118);
        assert_eq!(Nop::OPCODE, 0x80d);
        Ok(())
    }

    #[test]
    fn encoding_round_trip() -> Result {
        // The queue stamps the opcode; the builder's fields stay where the interface puts them.
        let q = QueryPagesIn::new().op_mod(2)?.function_id(0x1234)?;
        let wire = encode::<QueryPages>(&q)?;
        assert_eq!(&wire.as_bytes()[0..2], &[0x01, 0x07]);
        let hdr = CmdInHeader::from_bytes(wire.as_bytes());
        assert_eq!((hdr.opcode(), hdr.op_mod()), (0x107, 2));
        assert_eq!(get_bits(wire.as_bytes(), 0x50, 16), 0x1234);
        // An output decodes from the bytes the device wrote.
        let mut raw = [0u8; 16];
        raw[0x0a..0x0c].copy_from_slice(&0x1234u16.to_be_bytes());
        raw[0x0c..0x10].copy_from_slice(&48u32.to_be_bytes());
        let out = <QueryPages as Command>::Out::from_bytes(&raw);
        assert_eq!((out.function_id(), out.num_pages()), (0x1234, 48));
        // Byte ranges and a MAD's fields.
        let mut m = MadIfcIn::new();
        m.set_port(1)?;
        m.set_mad_attr_id(0x15)?;
        m.set_mad_attr_mod(7)?;
        assert_eq!(&m.as_bytes()[0x20..0x22], &[0x00, 0x15]);
        assert_eq!(&m.as_bytes()[0x24..0x28], &[0, 0, 0, 7]);
        m.as_bytes_mut()[0x10] = 1;
        assert_eq!(get_bits(m.as_bytes(), 0x80, 8), 1);
        let mut v = SetDriverVersionIn::new();
        v.driver_version_mut()[..5].copy_from_slice(b"Linux");
        assert_eq!(&v.as_bytes()[0x10..0x15], b"Linux");
        Ok(())
    }

    #[test]
    fn entry_mailbox_and_eqe_layouts() -> Result {
        let mut e = CmdEntry::new();
        e.set_type_(7)?;
        e.set_input_length(0x1010)?;
        e.set_output_mailbox_pointer(0x1122_3344_5566_7000)?;
        e.set_token(0x5a)?;
        e.set_ownership(1)?;
        let b = e.as_bytes();
        assert_eq!(b[0], 7);
        assert_eq!(&b[4..8], &[0, 0, 0x10, 0x10]);
        assert_eq!(
            &b[0x30..0x38],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x70, 0x00]
        );
        assert_eq!((b[0x3c], b[0x3f]), (0x5a, 1));
        let mut m = CmdMailboxTrailer::new();
        m.set_block_number(3)?;
        m.set_token(0x5a)?;
        // At 0x238 and 0x23d of the block (its trailer starts at 0x200).
        assert_eq!(&m.as_bytes()[0x38..0x3c], &[0, 0, 0, 3]);
        assert_eq!(m.as_bytes()[0x3d], 0x5a);
        assert_eq!(CmdMailbox::SIZE, 0x200 + CmdMailboxTrailer::SIZE);
        let mut raw = [0u8; 0x40];
        raw[1] = 0x0b;
        raw[0x22..0x24].copy_from_slice(&1u16.to_be_bytes());
        raw[0x24..0x28].copy_from_slice(&(-3i32).to_be_bytes());
        raw[0x3f] = 1;
        let q = Eqe::from_bytes(&raw);
        assert_eq!((q.event_type(), q.page_function_id()), (0x0b, 1));
        assert_eq!(q.page_num_pages() as u32 as i32, -3);
        assert_eq!(q.owner(), 1);
        Ok(())
    }
}
