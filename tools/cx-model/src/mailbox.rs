//! Command input and output beyond the 16 inline bytes travel in chains of mailbox blocks in
//! guest memory (`mlx5_cmd_prot_block`): 512 data bytes, then the next block's address, the block
//! number and the command's token.

use crate::command::Entry;
use crate::guest_memory::{DmaFault, GuestMemory};

/// Bytes of data a block carries.
pub const DATA_SIZE: usize = 512;
/// Offset of the next block's address (big-endian 64-bit, 0 ends the chain).
const NEXT: u64 = 0x230;
/// Offset of the block number (big-endian 32-bit, counting from 0).
const BLOCK_NUM: u64 = 0x238;
/// Offset of the token byte.
const TOKEN: u64 = 0x23d;
/// Inline input or output bytes in the queue entry.
pub const INLINE: usize = 16;

/// Why a mailbox chain could not be used; each maps to the delivery status the device reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailboxError {
    /// A block lies outside guest memory.
    Fault(DmaFault),
    /// The chain ends before `len` bytes were carried.
    ChainTooShort,
    /// A block carries the wrong number.
    BadBlockNumber,
    /// A block carries a token other than the entry's.
    BadToken,
}

impl From<DmaFault> for MailboxError {
    fn from(f: DmaFault) -> Self {
        Self::Fault(f)
    }
}

fn block_header<M: GuestMemory + ?Sized>(
    mem: &M,
    addr: u64,
    index: u32,
    token: u8,
) -> Result<u64, MailboxError> {
    let mut hdr = [0u8; 16];
    mem.read(addr + NEXT, &mut hdr)?;
    let next = u64::from_be_bytes(hdr[0..8].try_into().unwrap_or_default());
    let b = (BLOCK_NUM - NEXT) as usize;
    let num = u32::from_be_bytes(hdr[b..b + 4].try_into().unwrap_or_default());
    if num != index {
        return Err(MailboxError::BadBlockNumber);
    }
    if hdr[(TOKEN - NEXT) as usize] != token {
        return Err(MailboxError::BadToken);
    }
    Ok(next)
}

/// Number of blocks needed to carry `len` bytes past the inline part.
pub fn blocks_for(len: usize) -> usize {
    len.saturating_sub(INLINE).div_ceil(DATA_SIZE)
}

/// Gathers the command input: the inline bytes, then the chain from `in_ptr`.
pub fn read_input<M: GuestMemory + ?Sized>(mem: &M, entry: &Entry) -> Result<Vec<u8>, MailboxError> {
    let len = entry.inlen as usize;
    let mut input = Vec::with_capacity(len.max(INLINE));
    input.extend_from_slice(&entry.input[..len.min(INLINE)]);
    let mut addr = entry.in_ptr;
    let mut index = 0u32;
    while input.len() < len {
        if addr == 0 {
            return Err(MailboxError::ChainTooShort);
        }
        let next = block_header(mem, addr, index, entry.token)?;
        let take = (len - input.len()).min(DATA_SIZE);
        let start = input.len();
        input.resize(start + take, 0);
        mem.read(addr, &mut input[start..])?;
        addr = next;
        index += 1;
    }
    Ok(input)
}

/// Scatters `output` past its inline part into the chain from `out_ptr`; the inline part is
/// written with the completion. Bytes beyond `outlen` are not written.
pub fn write_output<M: GuestMemory + ?Sized>(
    mem: &mut M,
    entry: &Entry,
    output: &[u8],
) -> Result<(), MailboxError> {
    let len = output.len().min(entry.outlen as usize);
    let mut pos = INLINE;
    let mut addr = entry.out_ptr;
    let mut index = 0u32;
    while pos < len {
        if addr == 0 {
            return Err(MailboxError::ChainTooShort);
        }
        let next = block_header(mem, addr, index, entry.token)?;
        let take = (len - pos).min(DATA_SIZE);
        mem.write(addr, &output[pos..pos + take])?;
        pos += take;
        addr = next;
        index += 1;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::guest_memory::FakeMemory;

    /// Lays out a chain of `n` blocks at `base`, 1 KiB apart, and returns the first address.
    pub(crate) fn chain(mem: &mut FakeMemory, base: u64, n: usize, token: u8) -> u64 {
        for i in 0..n {
            let addr = base + (i as u64) * 1024;
            let next = if i + 1 < n { addr + 1024 } else { 0 };
            mem.write(addr + NEXT, &next.to_be_bytes()).unwrap();
            mem.write(addr + BLOCK_NUM, &(i as u32).to_be_bytes()).unwrap();
            mem.write(addr + TOKEN, &[token]).unwrap();
        }
        if n == 0 {
            0
        } else {
            base
        }
    }

    fn entry(inlen: u32, in_ptr: u64, outlen: u32, out_ptr: u64) -> Entry {
        Entry {
            kind: 7,
            inlen,
            in_ptr,
            input: [0xaa; 16],
            out_ptr,
            outlen,
            token: 9,
            status_own: 1,
        }
    }

    #[test]
    fn block_counts() {
        assert_eq!(blocks_for(16), 0);
        assert_eq!(blocks_for(17), 1);
        assert_eq!(blocks_for(16 + 512), 1);
        assert_eq!(blocks_for(16 + 513), 2);
        assert_eq!(blocks_for(16 + 4096), 8);
    }

    #[test]
    fn input_across_several_blocks() {
        let mut m = FakeMemory::new(0x10000, 0x10000);
        let first = chain(&mut m, 0x10000, 3, 9);
        for i in 0..3u64 {
            m.write(0x10000 + i * 1024, &[i as u8 + 1; 512]).unwrap();
        }
        let len = 16 + 512 * 2 + 100;
        let input = read_input(&m, &entry(len as u32, first, 16, 0)).unwrap();
        assert_eq!(input.len(), len);
        assert_eq!(&input[..16], &[0xaa; 16]);
        assert!(input[16..528].iter().all(|&b| b == 1));
        assert!(input[528..1040].iter().all(|&b| b == 2));
        assert!(input[1040..].iter().all(|&b| b == 3));
    }

    #[test]
    fn short_chain_bad_number_and_bad_token_are_reported() {
        let mut m = FakeMemory::new(0x10000, 0x10000);
        let first = chain(&mut m, 0x10000, 1, 9);
        assert_eq!(
            read_input(&m, &entry(16 + 513, first, 16, 0)),
            Err(MailboxError::ChainTooShort)
        );
        m.write(0x10000 + BLOCK_NUM, &5u32.to_be_bytes()).unwrap();
        assert_eq!(
            read_input(&m, &entry(100, first, 16, 0)),
            Err(MailboxError::BadBlockNumber)
        );
        let first = chain(&mut m, 0x10000, 1, 8);
        assert_eq!(
            read_input(&m, &entry(100, first, 16, 0)),
            Err(MailboxError::BadToken)
        );
        assert!(matches!(
            read_input(&m, &entry(100, 0x1, 16, 0)),
            Err(MailboxError::Fault(_))
        ));
    }

    #[test]
    fn output_scatter_respects_outlen() {
        let mut m = FakeMemory::new(0x10000, 0x10000);
        let first = chain(&mut m, 0x10000, 2, 9);
        let out: Vec<u8> = (0..(16 + 600)).map(|i| i as u8).collect();
        write_output(&mut m, &entry(16, 0, 16 + 520, first), &out).unwrap();
        let mut b = [0u8; 512];
        m.read(0x10000, &mut b).unwrap();
        assert_eq!(&b[..], &out[16..528]);
        let mut b2 = [0u8; 10];
        m.read(0x10000 + 1024, &mut b2).unwrap();
        assert_eq!(&b2[..8], &out[528..536]);
        assert_eq!(&b2[8..], &[0, 0], "nothing past outlen");
    }
}
