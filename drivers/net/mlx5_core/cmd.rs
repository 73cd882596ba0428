// SPDX-License-Identifier: GPL-2.0

//! Firmware commands (C's `cmd.c`): the command queue and its slots ([`queue`]), their
//! completions by event ([`events`]), the handle protocol drivers issue commands through
//! ([`commands`]) and the firmware's status and syndrome ([`status`]).

pub mod commands;
pub(crate) mod events;
pub(crate) mod queue;
pub mod status;
