// SPDX-License-Identifier: GPL-2.0

//! The loaded `mlx5_ib` module. It links against both `ib_core` and `mlx5_core` (so it cannot be
//! loaded without them) and checks at load that the core is ready.

use kernel::prelude::*;

/// The loaded `mlx5_ib` module.
pub(crate) struct Mlx5Ib;

impl kernel::Module for Mlx5Ib {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        if !ib_core::class_registered() {
            pr_err!("ib_core has no infiniband class registered\n");
            return Err(ENODEV);
        }
        pr_info!(
            "loaded; ib_core ready, {} mlx5 function(s) bound\n",
            mlx5_core::bound_functions()
        );
        Ok(Self)
    }
}

impl Drop for Mlx5Ib {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
