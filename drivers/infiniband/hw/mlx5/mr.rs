// SPDX-License-Identifier: GPL-2.0

//! Memory regions: the DMA MR of a PD (C's `mlx5_ib_get_dma_mr`): a physical-address mkey of
//! 64-bit length with the access rights asked for, keyed with the device's next variant byte
//! (`assign_mkey_variant`), and its DESTROY_MKEY.

use crate::pd::Mlx5Pd;
use ib_core::verbs_types::{Access, AccessFlags};
use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};
use mlx5_core::{
    commands::Commands,
    ifc_verbs::{CreateMkey, CreateMkeyIn, DestroyMkey, DestroyMkeyIn, MKC_ACCESS_MODE_PA},
};

/// A memory region's driver state: its key.
pub(crate) struct Mlx5Mr {
    /// The mkey (index << 8 | variant byte); lkey and rkey both.
    pub(crate) key: u32,
}

/// CREATE_MKEY's input for the DMA MR of PD `pdn` with `access`, variant byte `variant`.
/// (C also sets the relaxed-ordering bits and `ma_translation_mode` from capabilities the
/// emulated device does not report; they stay 0 here.)
pub(crate) fn dma_mkey_in(pdn: u32, access: AccessFlags, variant: u8) -> Result<CreateMkeyIn> {
    let bit = |a: Access| u64::from(access.contains(a));
    let mut m = CreateMkeyIn::new();
    m.set_access_mode_1_0(MKC_ACCESS_MODE_PA)?;
    m.set_length64(1)?;
    m.set_a(bit(Access::RemoteAtomic))?;
    m.set_rw(bit(Access::RemoteWrite))?;
    m.set_rr(bit(Access::RemoteRead))?;
    m.set_lw(bit(Access::LocalWrite))?;
    m.set_lr(1)?;
    m.set_pd(pdn.into())?;
    m.set_qpn(0xff_ffff)?;
    m.set_start_addr(0)?;
    m.set_mkey_7_0(variant.into())?;
    Ok(m)
}

/// Creates the DMA MR of `pd`; `variant` is the device's mkey variant counter.
pub(crate) fn get_dma_mr(
    cmds: &Commands,
    variant: &Atomic<u32>,
    pd: &Mlx5Pd,
    access: AccessFlags,
) -> Result<Mlx5Mr> {
    // C's `atomic_inc_return` truncated to the key byte.
    let key = (variant.fetch_add(1, Relaxed).wrapping_add(1) & 0xff) as u8;
    let out = cmds.exec::<CreateMkey>(&dma_mkey_in(pd.pdn, access, key)?)?;
    Ok(Mlx5Mr {
        key: ((out.mkey_index() as u32) << 8) | u32::from(key),
    })
}

/// Destroys an MR's mkey.
pub(crate) fn dereg(cmds: &Commands, mr: Mlx5Mr) -> Result {
    cmds.exec::<DestroyMkey>(&DestroyMkeyIn::new().mkey_index((mr.key >> 8).into())?)?;
    Ok(())
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
}
