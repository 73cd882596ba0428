// SPDX-License-Identifier: GPL-2.0

//! Copies between kernel memory and coherent DMA memory a 64-bit word at a time.
//!
//! The kernel crate's I/O copies call `memcpy`, which the compiler may expand into `rep movsb`:
//! fine on hardware, but one emulated instruction per byte under TCG, where a 64 MiB memory
//! registration's command (128 KiB of page addresses in 256 mailbox blocks) cost more in that
//! copy than in anything else of ours (docs/testing.md, instruction counts). These loops store
//! or load aligned words (volatile, so they are never turned back into `memcpy`), with bytes only
//! for an unaligned head and a tail.

/// Copies `src` to `dst`.
///
/// # Safety
///
/// `dst` is valid for `src.len()` bytes of writes and no reference to that memory exists (it is
/// memory shared with the device, reached only through raw accesses).
pub(crate) unsafe fn copy_to_dma(dst: *mut u8, src: &[u8]) {
    let head = dst.align_offset(8).min(src.len());
    let (bytes, rest) = src.split_at(head);
    for (i, b) in bytes.iter().enumerate() {
        // SAFETY: `i < src.len()`: inside the caller's range.
        unsafe { dst.add(i).write_volatile(*b) };
    }
    let words = rest.chunks_exact(8);
    let tail = words.remainder();
    let mut at = head;
    for w in words {
        let mut v = [0u8; 8];
        v.copy_from_slice(w);
        // SAFETY: `at + 8 <= src.len()`, inside the caller's range; `dst + at` is 8-byte
        // aligned (`head` aligned it, then whole words).
        unsafe {
            dst.add(at)
                .cast::<u64>()
                .write_volatile(u64::from_ne_bytes(v))
        };
        at += 8;
    }
    for (i, b) in tail.iter().enumerate() {
        // SAFETY: `at + i < src.len()`: inside the caller's range.
        unsafe { dst.add(at + i).write_volatile(*b) };
    }
}

/// Copies `dst.len()` bytes from `src` into `dst`.
///
/// # Safety
///
/// `src` is valid for `dst.len()` bytes of reads and no mutable reference to that memory exists
/// (it is memory shared with the device, reached only through raw accesses).
pub(crate) unsafe fn copy_from_dma(dst: &mut [u8], src: *const u8) {
    let head = src.align_offset(8).min(dst.len());
    let (bytes, rest) = dst.split_at_mut(head);
    for (i, b) in bytes.iter_mut().enumerate() {
        // SAFETY: `i < dst.len()`: inside the caller's range.
        *b = unsafe { src.add(i).read_volatile() };
    }
    let mut at = head;
    let mut words = rest.chunks_exact_mut(8);
    for w in &mut words {
        // SAFETY: `at + 8 <= dst.len()`, inside the caller's range; `src + at` is 8-byte
        // aligned (`head` aligned it, then whole words).
        let v = unsafe { src.add(at).cast::<u64>().read_volatile() };
        w.copy_from_slice(&v.to_ne_bytes());
        at += 8;
    }
    for (i, b) in words.into_remainder().iter_mut().enumerate() {
        // SAFETY: `at + i < dst.len()`: inside the caller's range.
        *b = unsafe { src.add(at + i).read_volatile() };
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_word_copy)]
mod tests {
    use super::*;

    #[test]
    fn copies_any_alignment_and_length() {
        let mut src = [0u8; 64];
        for (i, b) in src.iter_mut().enumerate() {
            *b = i as u8 ^ 0xa5;
        }
        for start in 0..9 {
            for len in [0usize, 1, 7, 8, 9, 23, 40] {
                let mut dma = [0u64; 8];
                let base = dma.as_mut_ptr().cast::<u8>();
                // SAFETY: `start + len <= 49 < 64`, inside `dma`, which nothing else borrows.
                unsafe { copy_to_dma(base.add(start), &src[..len]) };
                let mut back = [0u8; 64];
                // SAFETY: as above, for reads.
                unsafe { copy_from_dma(&mut back[..len], base.add(start)) };
                assert_eq!(&back[..len], &src[..len]);
                // Nothing written outside the range.
                let bytes: [u8; 64] = zerocopy::transmute!(dma);
                assert!(bytes[..start].iter().all(|&b| b == 0));
                assert!(bytes[start + len..].iter().all(|&b| b == 0));
            }
        }
    }
}
