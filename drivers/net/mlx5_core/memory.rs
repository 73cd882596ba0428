// SPDX-License-Identifier: GPL-2.0

//! Memory the function shares with the device: coherent buffers ([`coherent`]) in pages of
//! their own ([`dma_page`]), doorbell records ([`doorbell`]), the pages lent to the firmware
//! ([`pages`]), the UAR pages with their blue-flame registers ([`uar`]) and a work queue's
//! rings in a coherent buffer, written in place ([`wq_buf`]).

pub mod coherent;
pub(crate) mod dma_page;
pub mod doorbell;
pub(crate) mod pages;
pub mod uar;
pub(crate) mod word_copy;
pub mod wq_buf;
