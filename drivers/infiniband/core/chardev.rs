// SPDX-License-Identifier: GPL-2.0

//! The character devices ib_uverbs and ib_umad create per device or port: their class, ABI
//! version file and numbers ([`class`]), and the files open on one node ([`open_files`]).

pub mod class;
pub mod open_files;
