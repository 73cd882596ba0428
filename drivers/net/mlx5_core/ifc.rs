// SPDX-License-Identifier: GPL-2.0

//! Layouts of the mlx5 firmware interface: commands and contexts are big-endian bit fields at
//! fixed offsets (bit 0 is the most significant bit of byte 0). [`layout!`] declares a layout as a
//! byte array with one typed accessor per field, so drivers write
//! `QueryHcaCapIn::new().op_mod(1)` instead of offsets.
//!
//! Offsets are those of the interface (`mlx5_ifc.h`); `tools/dev/ifc_layout.py` prints them.
//! The macro and the bit helpers are public so that protocol modules use the same checked
//! layouts for the commands they issue.

/// Largest layout: layouts are copied onto the kernel stack (16 KiB, shared by the whole call
/// chain), so big structures such as the 4 KiB capability page are declared only as far as
/// the fields read from them.
pub const MAX_LAYOUT_BYTES: usize = 0x400;

/// Reads `width` bits at `bit` of `buf`; bits past the end read as zero.
pub fn get_bits(buf: &[u8], bit: usize, width: usize) -> u64 {
    let mut v = 0u64;
    for i in 0..width {
        let b = bit + i;
        let set = buf.get(b / 8).map_or(0, |byte| (byte >> (7 - b % 8)) & 1);
        v = (v << 1) | u64::from(set);
    }
    v
}

/// Writes the low `width` bits of `v` at `bit` of `buf`; bits past the end are dropped.
pub fn set_bits(buf: &mut [u8], bit: usize, width: usize, v: u64) {
    for i in 0..width {
        let b = bit + i;
        let set = ((v >> (width - 1 - i)) & 1) as u8;
        if let Some(byte) = buf.get_mut(b / 8) {
            let shift = 7 - b % 8;
            *byte = (*byte & !(1 << shift)) | (set << shift);
        }
    }
}

/// Declares interface layouts (exported: driver modules such as `mlx5_ib` declare theirs with
/// `mlx5_core::layout!`).
///
/// `input` layouts get a builder method per field (`Layout::new().field(value)`); `output`
/// layouts get a getter per field. Field offsets and widths are in bits; the compiler checks that
/// every field fits in the layout and is at most 64 bits wide.
#[macro_export]
macro_rules! layout {
    ($(
        $(#[$meta:meta])*
        $kind:ident $name:ident [$bytes:expr] {
            $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )*
        }
    )*) => {$(
        $(#[$meta])*
        #[derive(Clone)]
        pub(crate) struct $name {
            bytes: [u8; $bytes],
        }

        // Accessors are generated for every field and layout; a driver uses the ones it needs.
        #[allow(dead_code)]
        impl $name {
            /// Size of the layout in bytes.
            pub(crate) const SIZE: usize = $bytes;

            // Every field must lie inside the layout and fit in a u64. (`allow`, not `expect`:
            // the lint fires only for layouts that have one-bit fields.) A layout is a value on
            // the stack: it is sized to the fields it declares (a 4 KiB capability page is read
            // through a prefix of it), never more than `MAX_LAYOUT_BYTES`.
            #[allow(clippy::int_plus_one)]
            const _FIELDS_FIT: () = {
                assert!($bytes <= $crate::ifc::MAX_LAYOUT_BYTES);
                $( assert!($width <= 64 && $bit + $width <= $bytes * 8); )*
            };

            /// The raw bytes.
            pub(crate) fn as_bytes(&self) -> &[u8] {
                &self.bytes
            }

            /// The raw bytes, for variable parts that follow the fixed fields.
            pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
                &mut self.bytes
            }
        }

        $crate::layout!(@accessors $kind $name { $( $(#[$fmeta])* $field: $bit, $width; )* });
    )*};

    (@accessors input $name:ident { $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )* }) => {
        #[allow(dead_code)]
        impl $name {
            /// A zeroed layout.
            pub(crate) fn new() -> Self {
                let () = Self::_FIELDS_FIT;
                Self { bytes: [0; Self::SIZE] }
            }

            $(
                $(#[$fmeta])*
                pub(crate) fn $field(mut self, value: u64) -> Self {
                    $crate::ifc::set_bits(&mut self.bytes, $bit, $width, value);
                    self
                }
            )*
        }
    };

    (@accessors output $name:ident { $( $(#[$fmeta:meta])* $field:ident: $bit:expr, $width:expr; )* }) => {
        #[allow(dead_code)]
        impl $name {
            /// The layout at the start of `bytes`, zero-extended if `bytes` is shorter.
            pub(crate) fn from_bytes(bytes: &[u8]) -> Self {
                let () = Self::_FIELDS_FIT;
                let mut this = Self { bytes: [0; Self::SIZE] };
                let n = bytes.len().min(Self::SIZE);
                this.bytes[..n].copy_from_slice(&bytes[..n]);
                this
            }

            $(
                $(#[$fmeta])*
                pub(crate) fn $field(&self) -> u64 {
                    $crate::ifc::get_bits(&self.bytes, $bit, $width)
                }
            )*
        }
    };
}

pub use crate::layout;

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
    fn builder_places_fields_big_endian() {
        let i = TestIn::new()
            .opcode(0x104)
            .op_mod(3)
            .wide(0x0123_4567_89ab_cdef);
        let b = i.as_bytes();
        assert_eq!(&b[0..2], &[0x01, 0x04]);
        assert_eq!(&b[6..8], &[0x00, 0x03]);
        assert_eq!(&b[8..16], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
    }

    #[test]
    fn field_straddling_bytes() {
        let i = TestIn::new().straddle(0xab);
        assert_eq!(i.as_bytes()[3] & 0x0f, 0x0a);
        assert_eq!(i.as_bytes()[4] >> 4, 0x0b);
        assert_eq!(get_bits(i.as_bytes(), 0x1c, 8), 0xab);
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
    fn values_wider_than_the_field_are_truncated() {
        let i = TestIn::new().op_mod(0x1_0005);
        assert_eq!(get_bits(i.as_bytes(), 0x30, 16), 5);
        // The neighbouring field is untouched.
        assert_eq!(get_bits(i.as_bytes(), 0x20, 16), 0);
    }
}
