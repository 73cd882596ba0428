//! Big-endian bit fields, the way the mlx5 interface lays out commands and contexts: bit 0 is the
//! most significant bit of byte 0, and a field is a run of bits at a fixed offset.
//!
//! Offsets come from the interface definitions (`mlx5_ifc.h`); `tools/dev/ifc_layout.py` prints
//! them. Each layout the model uses declares its fields as [`Field`] constants.

/// A field: bit offset from the start of the layout and width in bits (at most 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Offset of the field's most significant bit.
    pub bit: usize,
    /// Width in bits.
    pub width: usize,
}

impl Field {
    /// A field at `bit` of `width` bits.
    pub const fn new(bit: usize, width: usize) -> Self {
        Self { bit, width }
    }

    /// The same field inside a sub-layout that starts at `base` bits.
    pub const fn at(self, base: usize) -> Self {
        Self {
            bit: base + self.bit,
            width: self.width,
        }
    }

    /// Byte offset of a byte-aligned field.
    pub const fn byte(self) -> usize {
        self.bit / 8
    }
}

/// Reads `f` from `buf`; bits beyond the buffer read as zero (a short input is zero-extended, as
/// the device treats missing input).
pub fn get(buf: &[u8], f: Field) -> u64 {
    let mut v = 0u64;
    for i in 0..f.width {
        let b = f.bit + i;
        let bit = buf.get(b / 8).map_or(0, |byte| (byte >> (7 - b % 8)) & 1);
        v = (v << 1) | u64::from(bit);
    }
    v
}

/// Writes the low `f.width` bits of `v` into `buf`; bits beyond the buffer are dropped.
pub fn set(buf: &mut [u8], f: Field, v: u64) {
    for i in 0..f.width {
        let b = f.bit + i;
        let bit = ((v >> (f.width - 1 - i)) & 1) as u8;
        if let Some(byte) = buf.get_mut(b / 8) {
            let shift = 7 - b % 8;
            *byte = (*byte & !(1 << shift)) | (bit << shift);
        }
    }
}

/// Common command header fields (`mbox_in`/`mbox_out`).
pub mod header {
    use super::Field;
    /// Input: opcode.
    pub const OPCODE: Field = Field::new(0x00, 16);
    /// Input: user id.
    pub const UID: Field = Field::new(0x10, 16);
    /// Input: opcode modifier.
    pub const OP_MOD: Field = Field::new(0x30, 16);
    /// Output: status.
    pub const STATUS: Field = Field::new(0x00, 8);
    /// Output: syndrome.
    pub const SYNDROME: Field = Field::new(0x20, 32);
    /// Size of the common input/output header in bytes.
    pub const LEN: usize = 16;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_big_endian_msb_first() {
        let mut b = [0u8; 8];
        set(&mut b, Field::new(0, 16), 0x0104);
        assert_eq!(&b[..2], &[0x01, 0x04]);
        // log_max_qp: bit 0x9b, width 5: the low five bits of dword 4.
        let mut cap = [0u8; 32];
        set(&mut cap, Field::new(0x9b, 5), 18);
        assert_eq!(cap[0x13], 18);
        assert_eq!(get(&cap, Field::new(0x9b, 5)), 18);
        // A field straddling a byte boundary.
        set(&mut b, Field::new(0x1c, 8), 0xab);
        assert_eq!(b[3] & 0x0f, 0x0a);
        assert_eq!(b[4] >> 4, 0x0b);
        assert_eq!(get(&b, Field::new(0x1c, 8)), 0xab);
    }

    #[test]
    fn out_of_range_bits_read_zero_and_are_dropped() {
        let mut b = [0xffu8; 2];
        assert_eq!(get(&b, Field::new(8, 16)), 0xff00);
        set(&mut b, Field::new(12, 8), 0);
        assert_eq!(b, [0xff, 0xf0]);
    }

    #[test]
    fn sixty_four_bit_fields() {
        let mut b = [0u8; 16];
        set(&mut b, Field::new(64, 64), 0x0123_4567_89ab_cdef);
        assert_eq!(get(&b, Field::new(64, 64)), 0x0123_4567_89ab_cdef);
        assert_eq!(&b[8..], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
    }
}
