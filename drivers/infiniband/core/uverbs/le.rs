// SPDX-License-Identifier: GPL-2.0

//! Little-endian fields of the ABI's structures (x86_64 user space), read from their bytes.

/// The `u16` at byte `o` of `b`.
pub(crate) fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

/// The `u32` at byte `o` of `b`.
pub(crate) fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// The `u64` at byte `o` of `b`.
pub(crate) fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from(u32_at(b, o)) | (u64::from(u32_at(b, o + 4)) << 32)
}
