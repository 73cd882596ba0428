//! Firmware pages: memory the driver lends the device. The device asks for a number of boot, init
//! and regular pages (QUERY_PAGES), the driver gives them (MANAGE_PAGES give), and takes them back
//! (MANAGE_PAGES take) before it disables the function. The model keeps the addresses it was given
//! and checks each one back in, so a page never returned shows in its report.

use super::{output, CmdError, CmdResult, Firmware, Input};
use crate::command::Status;
use crate::guest_memory::GuestMemory;
use crate::ifc::{self, Field};
use log::info;
use std::collections::BTreeSet;

/// Pages the firmware asks for at boot (QUERY_PAGES op_mod 1).
pub const BOOT_PAGES: u32 = 16;
/// Pages it asks for before INIT_HCA (op_mod 2).
pub const INIT_PAGES: u32 = 48;

const QUERY_OP_BOOT: u16 = 1;
const QUERY_OP_INIT: u16 = 2;
const QUERY_OP_REGULAR: u16 = 3;
const MANAGE_OP_ALLOC_FAIL: u16 = 0;
const MANAGE_OP_GIVE: u16 = 1;
const MANAGE_OP_TAKE: u16 = 2;

const QUERY_OUT_FUNCTION_ID: Field = Field::new(0x50, 16);
const QUERY_OUT_NUM_PAGES: Field = Field::new(0x60, 32);
const MANAGE_IN_NUM_ENTRIES: Field = Field::new(0x60, 32);
const MANAGE_OUT_NUM_ENTRIES: Field = Field::new(0x40, 32);
/// Byte offset of the address list in both the input (give) and the output (take).
const PAS: usize = 0x10;

/// The pages the driver has lent, and what the firmware still wants.
#[derive(Debug, Default)]
pub struct PageBank {
    held: BTreeSet<u64>,
    /// Pages requested (through QUERY_PAGES answers) but not yet given.
    owed: u32,
    boot_asked: bool,
    init_asked: bool,
    given_total: u64,
    returned_total: u64,
    /// MANAGE_PAGES "cannot give" answers received.
    cant_give: u64,
}

impl PageBank {
    /// A new life cycle (ENABLE_HCA): the firmware will ask for boot and init pages again. Pages
    /// still held from an earlier one stay counted.
    pub fn restart(&mut self) {
        self.owed = 0;
        self.boot_asked = false;
        self.init_asked = false;
    }

    /// Pages currently held.
    pub fn outstanding(&self) -> usize {
        self.held.len()
    }

    /// Pages asked for and not yet given.
    pub fn owed(&self) -> u32 {
        self.owed
    }

    /// How many times the driver answered a request with "cannot give".
    pub fn cant_give(&self) -> u64 {
        self.cant_give
    }

    /// Pages given in all, and returned in all.
    pub fn totals(&self) -> (u64, u64) {
        (self.given_total, self.returned_total)
    }

    /// The firmware asks for `n` more pages (or, negative, offers `-n` back) outside the boot and
    /// init requests.
    pub fn request(&mut self, n: i32) {
        if n > 0 {
            self.owed += n as u32;
        }
    }

    /// A one-line account for the model's exit report.
    pub fn report(&self) -> String {
        format!(
            "firmware pages: {} given, {} returned, {} still held{}",
            self.given_total,
            self.returned_total,
            self.held.len(),
            if self.held.is_empty() && self.given_total > 0 {
                " (all reclaimed)"
            } else {
                ""
            }
        )
    }
}

/// QUERY_PAGES: how many pages the firmware wants now.
pub fn query_pages(fw: &mut Firmware, input: &Input) -> CmdResult {
    let bank = &mut fw.pages;
    let n = match input.op_mod() {
        QUERY_OP_BOOT => {
            if !bank.boot_asked {
                bank.boot_asked = true;
                bank.owed += BOOT_PAGES;
            }
            bank.owed
        }
        QUERY_OP_INIT => {
            if !bank.init_asked {
                bank.init_asked = true;
                bank.owed += INIT_PAGES;
            }
            bank.owed
        }
        QUERY_OP_REGULAR => bank.owed,
        _ => return Err(CmdError::new(Status::BadParameter, 0x9a9_0001)),
    };
    let mut out = output(16);
    ifc::set(&mut out, QUERY_OUT_FUNCTION_ID, 0);
    ifc::set(&mut out, QUERY_OUT_NUM_PAGES, u64::from(n));
    Ok(out)
}

/// MANAGE_PAGES: give or take pages.
pub fn manage_pages(fw: &mut Firmware, _mem: &mut dyn GuestMemory, input: &Input) -> CmdResult {
    let n = input.get(MANAGE_IN_NUM_ENTRIES) as usize;
    let bank = &mut fw.pages;
    match input.op_mod() {
        MANAGE_OP_ALLOC_FAIL => {
            info!("driver could not allocate {n} firmware pages");
            bank.owed = 0;
            bank.cant_give += 1;
            Ok(output(16))
        }
        MANAGE_OP_GIVE => {
            if input.len() < PAS + n * 8 {
                return Err(CmdError::new(Status::BadInputLength, 0x9a9_0010));
            }
            let addrs: Vec<u64> = (0..n).map(|i| input.be64(PAS + i * 8)).collect();
            if addrs.iter().any(|a| a % 4096 != 0 || bank.held.contains(a)) {
                return Err(CmdError::new(Status::BadParameter, 0x9a9_0011));
            }
            let unique: BTreeSet<u64> = addrs.iter().copied().collect();
            if unique.len() != addrs.len() {
                return Err(CmdError::new(Status::BadParameter, 0x9a9_0012));
            }
            bank.held.extend(unique);
            bank.given_total += n as u64;
            bank.owed = bank.owed.saturating_sub(n as u32);
            Ok(output(16))
        }
        MANAGE_OP_TAKE => {
            let take: Vec<u64> = bank.held.iter().take(n).copied().collect();
            for a in &take {
                bank.held.remove(a);
            }
            bank.returned_total += take.len() as u64;
            let mut out = output(PAS + take.len() * 8);
            ifc::set(&mut out, MANAGE_OUT_NUM_ENTRIES, take.len() as u64);
            for (i, a) in take.iter().enumerate() {
                out[PAS + i * 8..PAS + i * 8 + 8].copy_from_slice(&a.to_be_bytes());
            }
            Ok(out)
        }
        _ => Err(CmdError::new(Status::BadParameter, 0x9a9_0013)),
    }
}
