//! ACCESS_REG: the device's access registers, read (op_mod 1) or written (op_mod 0) through a
//! command. The model implements the ones drivers touch at bring-up.

use super::{output, CmdError, CmdResult, Firmware, Input};
use crate::command::Status;
use crate::ifc::Field;
use log::{debug, warn};

const REGISTER_ID: Field = Field::new(0x50, 16);
const ARGUMENT: Field = Field::new(0x60, 32);
/// Byte offset of the register data in the input and the output.
const DATA: usize = 0x10;

const OP_WRITE: u16 = 0;
const OP_READ: u16 = 1;

/// Register ids.
pub mod id {
    /// Host endianness (written by the driver at init).
    pub const HOST_ENDIANNESS: u16 = 0x7004;
}

/// ACCESS_REG.
pub fn access_reg(_fw: &mut Firmware, input: &Input) -> CmdResult {
    let reg = input.get(REGISTER_ID) as u16;
    let arg = input.get(ARGUMENT);
    let data = input.bytes().get(DATA..).unwrap_or_default();
    match (reg, input.op_mod()) {
        (id::HOST_ENDIANNESS, OP_WRITE) => {
            debug!("HOST_ENDIANNESS <- {:02x?}", &data[..data.len().min(4)]);
            let mut out = output(DATA + data.len());
            out[DATA..].copy_from_slice(data);
            Ok(out)
        }
        (_, OP_READ | OP_WRITE) => {
            warn!(
                "ACCESS_REG {reg:#06x} op_mod {} argument {arg:#x}: register not implemented",
                input.op_mod()
            );
            Err(CmdError::new(Status::BadParameter, 0x0ae0_0000 | u32::from(reg)))
        }
        _ => Err(CmdError::new(Status::BadParameter, 0x0ae1_0000)),
    }
}
