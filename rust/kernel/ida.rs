// SPDX-License-Identifier: GPL-2.0

//! Numbers handed out lowest free first below a limit (C's `ida_alloc_max` and
//! `ida_alloc_range`), over the kernel crate's [`IdPool`], which grows as numbers are taken.
//!
//! An [`Ida`] is a plain value: the caller keeps it under its own lock (a [`crate::sync::Mutex`]
//! when taking a number may allocate with `GFP_KERNEL`).
//!
//! C header: [`include/linux/idr.h`](srctree/include/linux/idr.h)

use crate::{alloc::Flags, id_pool::IdPool, prelude::*};

/// The numbers `0..limit`, the lowest free one handed out first.
pub struct Ida {
    pool: IdPool,
    limit: usize,
}

impl Ida {
    /// No number taken; numbers below `limit`.
    pub fn new(limit: usize) -> Self {
        Self {
            pool: IdPool::new(),
            limit,
        }
    }

    /// Takes the lowest free number (C's `ida_alloc_max(limit - 1)`): `ENOSPC` when every
    /// number is taken, `ENOMEM` when the pool cannot grow.
    pub fn alloc(&mut self, flags: Flags) -> Result<usize> {
        self.alloc_from(0, flags)
    }

    /// Takes the lowest free number at or above `from` (C's `ida_alloc_range(from, limit - 1)`),
    /// with the errors of [`Ida::alloc`].
    pub fn alloc_from(&mut self, from: usize, flags: Flags) -> Result<usize> {
        if from >= self.limit {
            return Err(ENOSPC);
        }
        loop {
            if let Some(unused) = self.pool.find_unused_id(from) {
                if unused.as_usize() >= self.limit {
                    return Err(ENOSPC);
                }
                return Ok(unused.acquire());
            }
            // Every number the pool holds from `from` on is taken: grow it, unless it already
            // covers the limit.
            if self.pool.capacity() >= self.limit {
                return Err(ENOSPC);
            }
            let resizer = self.pool.grow_request().ok_or(ENOSPC)?.realloc(flags)?;
            self.pool.grow(resizer);
        }
    }

    /// Gives `id` back (nothing if it was not taken).
    pub fn free(&mut self, id: usize) {
        if id < self.pool.capacity() {
            self.pool.release_id(id);
        }
    }
}

#[macros::kunit_tests(rdma_rs_ida)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_first_below_the_limit() -> Result {
        let mut ida = Ida::new(300);
        for want in 0..300 {
            assert_eq!(ida.alloc(GFP_KERNEL)?, want);
        }
        // Full: the pool grew past 256 numbers, but none at or above the limit is handed out.
        assert_eq!(ida.alloc(GFP_KERNEL).err(), Some(ENOSPC));
        ida.free(7);
        ida.free(200);
        assert_eq!(ida.alloc(GFP_KERNEL)?, 7);
        assert_eq!(ida.alloc_from(100, GFP_KERNEL)?, 200);
        assert_eq!(ida.alloc_from(300, GFP_KERNEL).err(), Some(ENOSPC));
        // A number never taken, or beyond the pool, is ignored.
        ida.free(100_000);
        Ok(())
    }
}
