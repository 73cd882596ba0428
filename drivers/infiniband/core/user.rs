// SPDX-License-Identifier: GPL-2.0

//! What ib_core keeps for user verbs (ib_uverbs sits above it): the user ABI's typed structures
//! ([`abi`]), the method and attribute specification ([`spec`]), a command's user buffers
//! ([`udata`]) and user contexts with the objects made in them ([`ucontext`]).

pub mod abi;
pub mod spec;
pub mod ucontext;
pub mod udata;
