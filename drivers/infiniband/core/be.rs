// SPDX-License-Identifier: GPL-2.0

//! Big-endian fields of wire and device structures read from and written into their bytes: MADs
//! and SMPs, the umad header's network-order fields, the device's completion entries. A field
//! out of range reads as 0 and is not written, so a short buffer never panics.

/// A 16-bit big-endian field of `m` at `at` (0 if out of range).
#[inline]
pub fn get16(m: &[u8], at: usize) -> u16 {
    match m.get(at..at.saturating_add(2)) {
        Some(b) => u16::from_be_bytes([b[0], b[1]]),
        None => 0,
    }
}

/// A 32-bit big-endian field of `m` at `at` (0 if out of range).
#[inline]
pub fn get32(m: &[u8], at: usize) -> u32 {
    match m.get(at..at.saturating_add(4)) {
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// A 64-bit big-endian field of `m` at `at` (0 if out of range).
#[inline]
pub fn get64(m: &[u8], at: usize) -> u64 {
    match m.get(at..at.saturating_add(8)) {
        Some(b) => (u64::from(get32(b, 0)) << 32) | u64::from(get32(b, 4)),
        None => 0,
    }
}

/// Stores `v` big-endian in `m` at `at` (nothing if out of range).
#[inline]
pub fn put16(m: &mut [u8], at: usize, v: u16) {
    if let Some(b) = m.get_mut(at..at.saturating_add(2)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Stores `v` big-endian in `m` at `at` (nothing if out of range).
#[inline]
pub fn put32(m: &mut [u8], at: usize, v: u32) {
    if let Some(b) = m.get_mut(at..at.saturating_add(4)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Stores `v` big-endian in `m` at `at` (nothing if out of range).
#[inline]
pub fn put64(m: &mut [u8], at: usize, v: u64) {
    if let Some(b) = m.get_mut(at..at.saturating_add(8)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}
