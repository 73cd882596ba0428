// SPDX-License-Identifier: GPL-2.0

//! Little-endian fields of the user-verbs ABI's structures (x86_64 user space), read from their
//! bytes: the core's requests (ib_uverbs) and the drivers' (their `udata`).

/// The `u16` at byte `o` of `b`.
#[inline]
pub fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

/// The `u32` at byte `o` of `b`.
#[inline]
pub fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// The `u64` at byte `o` of `b`.
#[inline]
pub fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from(u32_at(b, o)) | (u64::from(u32_at(b, o + 4)) << 32)
}
