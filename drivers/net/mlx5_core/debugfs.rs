// SPDX-License-Identifier: GPL-2.0

//! debugfs, where the C driver has it: `mlx5/<function>/pages/fw_pages_total`, the number of
//! pages the firmware holds.

use core::fmt;
use kernel::{
    debugfs::{Dir, File},
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        global_lock, Arc,
    },
};

global_lock! {
    // SAFETY: Initialized by the module initializer (`init`) before the driver can bind.
    unsafe(uninit) static ROOT: Mutex<Option<Dir>> = None;
}

/// Creates `mlx5/` at module load.
///
/// # Safety
///
/// Called once, before any function is bound.
pub(crate) unsafe fn init() {
    // SAFETY: The caller calls this once, before any use of `ROOT`.
    unsafe { ROOT.init() };
    *ROOT.lock() = Some(Dir::new(c"mlx5"));
}

/// Removes `mlx5/` at module unload.
pub(crate) fn exit() {
    ROOT.lock().take();
}

/// A counter as its file shows it: a decimal number.
pub(crate) struct Counter(pub(crate) Arc<Atomic<u32>>);

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.load(Relaxed))
    }
}

/// One function's directory. Fields drop in order: the file, then the directories.
#[pin_data]
pub(crate) struct FunctionDir {
    #[pin]
    fw_pages_total: File<Counter>,
    _pages: Dir,
    _dir: Dir,
}

impl FunctionDir {
    /// `mlx5/<name>/pages/fw_pages_total`, showing `pages`.
    pub(crate) fn new(name: &CStr, pages: Arc<Atomic<u32>>) -> Result<Pin<KBox<Self>>> {
        let dir = match ROOT.lock().as_ref() {
            Some(root) => root.subdir(name),
            None => return Err(ENOENT),
        };
        let sub = dir.subdir(c"pages");
        KBox::pin_init(
            try_pin_init!(Self {
                fw_pages_total <- sub.read_only_file(c"fw_pages_total", Counter(pages)),
                _pages: sub,
                _dir: dir,
            }),
            GFP_KERNEL,
        )
    }
}
