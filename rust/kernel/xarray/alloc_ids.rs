// SPDX-License-Identifier: GPL-2.0

//! Index allocation and ordered lookup in an [`XArray`](super::XArray) (made with an [`AllocKind`], as C's
//! `XA_FLAGS_ALLOC`): C's `__xa_alloc_cyclic`, `__xa_insert` and `xa_find`, which the kernel
//! crate's [`Guard`] lacks. A child of `kernel::xarray` (the overlay declares it there), so it
//! uses the array's and the guard's private fields as their own module does.
//!
//! C header: [`include/linux/xarray.h`](srctree/include/linux/xarray.h)
//!
//! [`AllocKind`]: super::AllocKind

use super::{Guard, StoreError};
use crate::{alloc, bindings, build_assert::build_assert, error::Error, types::ForeignOwnable};

impl<T: ForeignOwnable> Guard<'_, T> {
    /// Stores `value` at the first free index of `min..=max` at or after `*next`, wrapping
    /// around to `min` (C's `__xa_alloc_cyclic`), and moves `*next` past it. `EBUSY` when every
    /// index of the range is taken, `ENOMEM` when the array cannot grow; the value comes back
    /// with the error. May drop the lock to allocate, as [`Guard::store`].
    ///
    /// The array must have been made with an [`AllocKind`](super::AllocKind).
    pub fn alloc_cyclic(
        &mut self,
        value: T,
        min: u32,
        max: u32,
        next: &mut u32,
        gfp: alloc::Flags,
    ) -> Result<u32, StoreError<T>> {
        build_assert!(
            T::FOREIGN_ALIGN >= 4,
            "pointers stored in XArray must be 4-byte aligned"
        );
        let new = value.into_foreign();
        let mut id = 0u32;
        let limit = bindings::xa_limit { min, max };
        // SAFETY: `self.xa.xa` is valid (the array's invariant) and its lock is held (the
        // guard's); `id` and `next` are valid for writes; `new` came from `into_foreign`.
        let ret = unsafe {
            bindings::__xa_alloc_cyclic(
                self.xa.xa.get(),
                &mut id,
                new.cast(),
                limit,
                next,
                gfp.as_raw(),
            )
        };
        if ret < 0 {
            // SAFETY: `new` came from `into_foreign` and was not stored.
            let value = unsafe { T::from_foreign(new) };
            return Err(StoreError {
                value,
                error: Error::from_errno(ret),
            });
        }
        Ok(id)
    }

    /// Stores `value` at `index` if nothing is there (C's `__xa_insert`): `EBUSY` if the index
    /// is taken, `ENOMEM`; the value comes back with the error. May drop the lock to allocate.
    pub fn insert(
        &mut self,
        index: usize,
        value: T,
        gfp: alloc::Flags,
    ) -> Result<(), StoreError<T>> {
        build_assert!(
            T::FOREIGN_ALIGN >= 4,
            "pointers stored in XArray must be 4-byte aligned"
        );
        let new = value.into_foreign();
        // SAFETY: `self.xa.xa` is valid (the array's invariant) and its lock is held (the
        // guard's); `new` came from `into_foreign`.
        let ret =
            unsafe { bindings::__xa_insert(self.xa.xa.get(), index, new.cast(), gfp.as_raw()) };
        if ret < 0 {
            // SAFETY: `new` came from `into_foreign` and was not stored.
            let value = unsafe { T::from_foreign(new) };
            return Err(StoreError {
                value,
                error: Error::from_errno(ret),
            });
        }
        Ok(())
    }

    /// The first element at or after `index`, with its index (C's `xa_find` for present
    /// entries): iterating in index order is `find(0)`, then `find(i + 1)`.
    pub fn find(&self, index: usize) -> Option<(usize, T::Borrowed<'_>)> {
        let mut at = index;
        // SAFETY: `self.xa.xa` is valid (the array's invariant); `at` is valid for writes.
        let ptr = unsafe {
            bindings::xa_find(self.xa.xa.get(), &mut at, usize::MAX, bindings::XA_PRESENT)
        };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: A present entry came from `T::into_foreign`; it stays while the guard holds
        // the lock, which the borrow's lifetime (that of `&self`) does not outlive.
        Some((at, unsafe { T::borrow(ptr.cast()) }))
    }
}

#[macros::kunit_tests(rdma_rs_xarray_alloc_ids)]
mod tests {
    use crate::{
        prelude::*,
        xarray::{AllocKind, XArray},
    };

    /// A boxed value, made before the array's lock is taken (the lock is a spinlock).
    fn boxed(v: u32) -> Result<KBox<u32>> {
        Ok(KBox::new(v, GFP_KERNEL)?)
    }

    #[test]
    fn cyclic_ids_inserts_and_order() -> Result {
        let xa = KBox::pin_init(XArray::<KBox<u32>>::new(AllocKind::Alloc), GFP_KERNEL)?;
        let mut values = KVec::new();
        for v in [0, 1, 2, 3, 9, 11, 12, 13, 1000] {
            values.push(Some(boxed(v)?), GFP_KERNEL)?;
        }
        let mut take = |i: usize| values.get_mut(i).and_then(Option::take).ok_or(EINVAL);
        let mut next = 0u32;
        let mut seen = [(0usize, 0u32); 5];
        let mut n = 0;
        {
            let mut g = xa.lock();
            // Cyclic: each id after the last one given, in the range 0..=3.
            for want in 0..4u32 {
                let got = g.alloc_cyclic(take(want as usize)?, 0, 3, &mut next, GFP_KERNEL)?;
                assert_eq!(got, want);
            }
            // Full: EBUSY, and the value comes back.
            let e = g.alloc_cyclic(take(4)?, 0, 3, &mut next, GFP_KERNEL);
            assert!(matches!(e, Err(ref s) if s.error == EBUSY && *s.value == 9));
            // Freed ids are found again after wrapping around.
            let freed = (g.remove(1), g.remove(2));
            assert_eq!(g.alloc_cyclic(take(5)?, 0, 3, &mut next, GFP_KERNEL)?, 1);
            assert_eq!(g.alloc_cyclic(take(6)?, 0, 3, &mut next, GFP_KERNEL)?, 2);
            // Insert at a chosen index: EBUSY when taken.
            let e = g.insert(3, take(7)?, GFP_KERNEL);
            assert!(matches!(e, Err(ref s) if s.error == EBUSY && *s.value == 13));
            g.insert(1000, take(8)?, GFP_KERNEL)?;
            // In index order, with the values stored.
            let mut at = 0;
            while let Some((i, v)) = g.find(at) {
                if n < seen.len() {
                    seen[n] = (i, *v);
                }
                n += 1;
                at = i + 1;
            }
            assert!(g.find(1001).is_none());
            drop(g);
            drop(freed);
            drop(e);
        }
        assert_eq!(n, 5);
        assert_eq!(seen, [(0, 0), (1, 11), (2, 12), (3, 3), (1000, 1000)]);
        Ok(())
    }
}
