// SPDX-License-Identifier: GPL-2.0

//! Protection domains: ALLOC_PD and DEALLOC_PD (C's `mlx5_ib_alloc_pd`/`mlx5_ib_dealloc_pd`
//! for kernel consumers, with uid 0).

use kernel::prelude::*;
use mlx5_core::{
    cmd::commands::Commands,
    ifc::verbs::{AllocPd, DeallocPd, DeallocPdIn},
    ifc::PlainIn,
};

/// A protection domain's driver state: its number.
pub(crate) struct Mlx5Pd {
    /// The PD number firmware gave.
    pub(crate) pdn: u32,
}

/// Allocates a PD.
pub(crate) fn alloc(cmds: &Commands) -> Result<Mlx5Pd> {
    let out = cmds.exec::<AllocPd>(&PlainIn::new())?;
    Ok(Mlx5Pd {
        pdn: out.pd() as u32,
    })
}

/// Frees a PD.
pub(crate) fn dealloc(cmds: &Commands, pd: Mlx5Pd) -> Result {
    cmds.exec::<DeallocPd>(&DeallocPdIn::new().pd(pd.pdn.into())?)?;
    Ok(())
}
