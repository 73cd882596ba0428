//! ACCESS_REG: the device's access registers, read (op_mod 1) or written (op_mod 0) through a
//! command. The model implements the ones drivers touch at bring-up, and PCAP (the port's
//! capability mask, which mlx5_ib writes when a subnet manager opens `issmN`).

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
    /// Port capabilities (`MLX5_REG_PCAP`): the PortInfo.CapabilityMask the port reports.
    pub const PCAP: u16 = 0x5001;
}

/// PCAP: the local port at byte 1, the capability mask at bytes 4..8.
const PCAP_SIZE: usize = 20;

/// ACCESS_REG.
pub fn access_reg(fw: &mut Firmware, input: &Input) -> CmdResult {
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
        (id::PCAP, op @ (OP_READ | OP_WRITE)) => {
            if data.len() < PCAP_SIZE {
                return Err(CmdError::new(Status::BadParameter, 0x0ae2_0000));
            }
            let num = data[1];
            let port = fw
                .node
                .ports
                .iter_mut()
                .find(|p| p.num == num)
                .ok_or(CmdError::new(Status::BadParameter, 0x0ae2_0001))?;
            if op == OP_WRITE {
                port.cap_mask = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
                debug!("PCAP port {num} <- capability mask {:#010x}", port.cap_mask);
            }
            let mut out = output(DATA + PCAP_SIZE);
            out[DATA + 1] = num;
            out[DATA + 4..DATA + 8].copy_from_slice(&port.cap_mask.to_be_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::port::CAPABILITY_MASK;

    #[test]
    fn pcap_write_sets_the_ports_capability_mask() {
        let mut fw = Firmware::new(crate::firmware::FirmwareConfig::default());
        let mut raw = vec![0u8; DATA + PCAP_SIZE];
        raw[0x6..0x8].copy_from_slice(&OP_WRITE.to_be_bytes());
        raw[0xa..0xc].copy_from_slice(&id::PCAP.to_be_bytes());
        raw[DATA + 1] = 1;
        raw[DATA + 4..DATA + 8].copy_from_slice(&(CAPABILITY_MASK | 2).to_be_bytes());
        let out = access_reg(&mut fw, &Input::new(&raw)).unwrap();
        assert_eq!(&out[DATA + 4..DATA + 8], &(CAPABILITY_MASK | 2).to_be_bytes());
        assert_eq!(fw.node.ports[0].cap_mask, CAPABILITY_MASK | 2);
        // Port 2 does not exist.
        raw[DATA + 1] = 2;
        assert!(access_reg(&mut fw, &Input::new(&raw)).is_err());
    }
}
