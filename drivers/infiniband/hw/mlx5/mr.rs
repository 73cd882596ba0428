// SPDX-License-Identifier: GPL-2.0

//! Memory regions: the DMA MR of a PD (C's `mlx5_ib_get_dma_mr`): a physical-address mkey of
//! 64-bit length with the access rights asked for, keyed with the device's next variant byte
//! (`assign_mkey_variant`), and its DESTROY_MKEY; and user memory (C's `mlx5_ib_reg_user_mr`
//! as it goes on a function whose UMR cannot change an mkey's page size,
//! `umr_modify_entity_size_disabled`: `reg_create`): the pages pinned and mapped, an MTT mkey
//! whose translation table lists them, 4 KiB each.

use crate::{pd::Mlx5Pd, user::umem::UserMemory};
use ib_core::verbs::types::{Access, AccessFlags, UserMrInit};
use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};
use mlx5_core::{
    auxdev::Mlx5Device,
    cmd::commands::Commands,
    ifc::verbs::{
        CreateMkey, CreateMkeyIn, DestroyMkey, DestroyMkeyIn, MKC_ACCESS_MODE_MTT,
        MKC_ACCESS_MODE_PA,
    },
};

/// A memory region's driver state: its key, and for user memory the pinned, mapped pages.
pub(crate) struct Mlx5Mr<'bound> {
    /// The mkey (index << 8 | variant byte); lkey and rkey both.
    pub(crate) key: u32,
    /// The user memory the mkey translates to (none for a DMA MR).
    umem: Option<UserMemory<'bound>>,
}

/// `MLX5_IB_MTT_READ | MLX5_IB_MTT_WRITE`: a translation entry's access bits, when the
/// function takes them (`pg`).
const MTT_PRESENT: u64 = 0x3;
/// Log2 of the translation entries' page size (4 KiB: the pages are mapped one by one).
const PAGE_SHIFT: u64 = 12;

/// C's `get_octo_len`: 16-byte units of a translation table covering `len` bytes from `iova`
/// in 4 KiB pages (two 8-byte entries per unit).
fn octo_len(iova: u64, len: u64) -> u64 {
    let offset = iova & ((1 << PAGE_SHIFT) - 1);
    let pages = (len + offset).div_ceil(1 << PAGE_SHIFT);
    pages.div_ceil(2)
}

/// CREATE_MKEY's input for the DMA MR of PD `pdn` with `access`, variant byte `variant`.
/// (C also sets the relaxed-ordering bits and `ma_translation_mode` from capabilities the
/// emulated device does not report; they stay 0 here.)
pub(crate) fn dma_mkey_in(pdn: u32, access: AccessFlags, variant: u8) -> Result<CreateMkeyIn> {
    let mut m = mkey_in(pdn, access, 0, variant)?;
    m.set_access_mode_1_0(MKC_ACCESS_MODE_PA)?;
    m.set_length64(1)?;
    Ok(m)
}

/// What every mkey's context has (C's `set_mkc_access_pd_addr_fields` and the variant byte):
/// the access rights (local read always), the PD, no QP, the start address.
fn mkey_in(pdn: u32, access: AccessFlags, start: u64, variant: u8) -> Result<CreateMkeyIn> {
    let bit = |a: Access| u64::from(access.contains(a));
    let mut m = CreateMkeyIn::new();
    m.set_a(bit(Access::RemoteAtomic))?;
    m.set_rw(bit(Access::RemoteWrite))?;
    m.set_rr(bit(Access::RemoteRead))?;
    m.set_lw(bit(Access::LocalWrite))?;
    m.set_lr(1)?;
    m.set_pd(pdn.into())?;
    m.set_qpn(0xff_ffff)?;
    m.set_start_addr(start)?;
    m.set_mkey_7_0(variant.into())?;
    Ok(m)
}

/// Creates the DMA MR of `pd`; `variant` is the device's mkey variant counter.
pub(crate) fn get_dma_mr<'bound>(
    cmds: &Commands,
    variant: &Atomic<u32>,
    pd: &Mlx5Pd,
    access: AccessFlags,
) -> Result<Mlx5Mr<'bound>> {
    // C's `atomic_inc_return` truncated to the key byte.
    let key = (variant.fetch_add(1, Relaxed).wrapping_add(1) & 0xff) as u8;
    let out = cmds.exec::<CreateMkey>(&dma_mkey_in(pd.pdn, access, key)?)?;
    Ok(Mlx5Mr {
        key: ((out.mkey_index() as u32) << 8) | u32::from(key),
        umem: None,
    })
}

/// CREATE_MKEY's input for user memory (C's `reg_create` with `populate`): an MTT mkey of
/// `init`'s length at `init.iova` in PD `pdn`, with `octo` translation units.
fn user_mkey_in(
    pdn: u32,
    init: &UserMrInit,
    octo: u64,
    pg_cap: bool,
    variant: u8,
) -> Result<CreateMkeyIn> {
    let mut m = mkey_in(pdn, init.access, init.iova, variant)?;
    m.set_pg_access(pg_cap.into())?;
    m.set_free(0)?;
    m.set_access_mode_1_0(MKC_ACCESS_MODE_MTT)?;
    m.set_umr_en(1)?;
    m.set_len(init.length)?;
    m.set_translations_octword_size(octo)?;
    m.set_log_page_size(PAGE_SHIFT)?;
    m.set_translations_octword_actual_size(octo)?;
    Ok(m)
}

/// Registers the calling process's memory `init` in `pd` for the function's PCI device `dev`
/// (C's `create_real_mr` through `reg_create`). `pg_cap`: the function's `pg` capability.
pub(crate) fn reg_user<'bound>(
    mdev: &'bound Mlx5Device,
    variant: &Atomic<u32>,
    pd: &Mlx5Pd,
    init: &UserMrInit,
    pg_cap: bool,
) -> Result<Mlx5Mr<'bound>> {
    let len = usize::try_from(init.length).map_err(|_| EINVAL)?;
    let umem = UserMemory::pin(mdev, init.start, len, init.writable)?;
    let octo = octo_len(init.iova, init.length);
    // The translation table: one big-endian entry per page, padded to whole 16-byte units.
    let entries = usize::try_from(octo * 2).map_err(|_| EINVAL)?;
    let flags = if pg_cap { MTT_PRESENT } else { 0 };
    let pas = umem.translation_table(flags, entries)?;
    // C's `atomic_inc_return` truncated to the key byte.
    let key = (variant.fetch_add(1, Relaxed).wrapping_add(1) & 0xff) as u8;
    let input = user_mkey_in(pd.pdn, init, octo, pg_cap, key)?;
    // A page list larger than the command queue's mailbox pool (past 16 MiB of 4 KiB pages)
    // gets mailboxes of its own, as every command does in C.
    let (out, _) = mdev.exec_var_large::<CreateMkey>(&input, &pas, 0)?;
    Ok(Mlx5Mr {
        key: ((out.mkey_index() as u32) << 8) | u32::from(key),
        umem: Some(umem),
    })
}

/// Destroys an MR's mkey, then unmaps and unpins its user memory. If the device may still
/// use the memory (DESTROY_MKEY failed), the memory is left pinned and mapped for ever, as C
/// leaves it.
pub(crate) fn dereg(cmds: &Commands, mut mr: Mlx5Mr<'_>) -> Result {
    let done = DestroyMkeyIn::new()
        .mkey_index((mr.key >> 8).into())
        .and_then(|input| cmds.exec::<DestroyMkey>(&input).map(|_| ()));
    if done.is_err() {
        if let Some(umem) = mr.umem.take() {
            core::mem::forget(umem);
        }
    }
    done
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_mr)]
mod tests {
    use super::*;

    #[test]
    fn dma_mkey_context_as_c() -> Result {
        let m = dma_mkey_in(0x5, Access::LocalWrite | Access::RemoteRead, 0x2a)?;
        let b = m.as_bytes();
        // rr, lw, lr set; rw and a clear; PA access mode (0).
        assert_eq!(b[0x12], 0b0001_1100);
        assert_eq!(&b[0x14..0x18], &[0xff, 0xff, 0xff, 0x2a]);
        assert_eq!(&b[0x1c..0x20], &[0x80, 0, 0, 5]);
        assert_eq!(&b[0x20..0x30], &[0u8; 16]);
        Ok(())
    }

    #[test]
    fn translation_units_as_c() {
        // One page, 16 bytes into it; two pages from a page boundary; three; a 64 KiB buffer
        // that starts 100 bytes into a page (17 pages).
        assert_eq!(octo_len(0x1010, 16), 1);
        assert_eq!(octo_len(0x2000, 8192), 1);
        assert_eq!(octo_len(0x2000, 8193), 2);
        assert_eq!(octo_len(0x3064, 65536), 9);
    }
}
