//! HCA life cycle: ENABLE/DISABLE_HCA, ISSI negotiation, INIT/TEARDOWN_HCA, driver version,
//! adapter query.

use super::{output, CmdError, CmdResult, Firmware, HcaState, Input};
use crate::command::Status;
use crate::ifc::{self, Field};
use log::info;

/// ISSI values this firmware supports (bit n = ISSI n): 0 and 1.
const SUPPORTED_ISSI: u64 = 0b11;

const QUERY_ISSI_CURRENT: Field = Field::new(0x50, 16);
const QUERY_ISSI_SUPPORTED_DW0: Field = Field::new(0x360, 32);
const QUERY_ISSI_OUT_LEN: usize = 0x70;
const SET_ISSI_CURRENT: Field = Field::new(0x50, 16);
const TEARDOWN_OUT_STATE: Field = Field::new(0x7f, 1);
const DRIVER_VERSION: usize = 0x10;
const DRIVER_VERSION_LEN: usize = 64;
const ADAPTER_IEEE_VENDOR_ID: Field = Field::new(0x148, 24);
const ADAPTER_VSD_VENDOR_ID: Field = Field::new(0x170, 16);
const ADAPTER_PSID: usize = 0x100;
const ADAPTER_OUT_LEN: usize = 0x110;

/// Mellanox's IEEE OUI.
pub const MELLANOX_OUI: u64 = 0x0002c9;

/// ENABLE_HCA. Also accepted when already enabled: a driver that lost a command to a timeout
/// starts over without a reset.
pub fn enable_hca(fw: &mut Firmware, _input: &Input) -> CmdResult {
    if fw.state == HcaState::Initialized {
        return Err(CmdError::new(Status::BadSystemState, 0x5e0_0010));
    }
    if fw.pages.outstanding() != 0 {
        info!(
            "ENABLE_HCA with {} pages of an earlier driver instance never reclaimed",
            fw.pages.outstanding()
        );
    }
    fw.pages.restart();
    fw.state = HcaState::Enabled;
    Ok(output(16))
}

/// DISABLE_HCA: the function goes back to reset state. Pages the driver did not reclaim stay
/// counted as outstanding, so the leak shows in the model's report.
pub fn disable_hca(fw: &mut Firmware, _input: &Input) -> CmdResult {
    if fw.state == HcaState::Initialized {
        return Err(CmdError::new(Status::BadSystemState, 0x5e0_0011));
    }
    fw.state = HcaState::Disabled;
    Ok(output(16))
}

/// QUERY_ISSI: current ISSI and the supported set.
pub fn query_issi(fw: &mut Firmware, _input: &Input) -> CmdResult {
    let mut out = output(QUERY_ISSI_OUT_LEN);
    ifc::set(&mut out, QUERY_ISSI_CURRENT, u64::from(fw.issi));
    ifc::set(&mut out, QUERY_ISSI_SUPPORTED_DW0, SUPPORTED_ISSI);
    Ok(out)
}

/// SET_ISSI.
pub fn set_issi(fw: &mut Firmware, input: &Input) -> CmdResult {
    let issi = input.get(SET_ISSI_CURRENT);
    if issi >= 64 || SUPPORTED_ISSI & (1 << issi) == 0 {
        return Err(CmdError::new(Status::BadParameter, 0x155_0001));
    }
    fw.issi = issi as u16;
    Ok(output(16))
}

/// INIT_HCA: allowed once capabilities are set and boot and init pages were given.
pub fn init_hca(fw: &mut Firmware, _input: &Input) -> CmdResult {
    if fw.state != HcaState::Enabled {
        return Err(CmdError::new(Status::BadSystemState, 0x1a0_0001));
    }
    if fw.pages.owed() > 0 {
        return Err(CmdError::new(Status::BadSystemState, 0x1a0_0002));
    }
    fw.state = HcaState::Initialized;
    Ok(output(16))
}

/// TEARDOWN_HCA: graceful (op_mod 0) or forced (op_mod 1) close. Resources the driver left behind
/// are dropped.
pub fn teardown_hca(fw: &mut Firmware, input: &Input) -> CmdResult {
    if fw.state != HcaState::Initialized {
        return Err(CmdError::new(Status::BadSystemState, 0x7ea_0001));
    }
    match input.op_mod() {
        0 | 1 => {}
        _ => return Err(CmdError::new(Status::BadParameter, 0x7ea_0002)),
    }
    let leftover = fw.eqs.len() + fw.uars.len() + fw.pds.len() + fw.tds.len();
    if leftover != 0 {
        info!(
            "TEARDOWN_HCA with {} EQs, {} UARs, {} PDs, {} TDs still allocated",
            fw.eqs.len(),
            fw.uars.len(),
            fw.pds.len(),
            fw.tds.len()
        );
    }
    if fw.objects.total() != 0 {
        info!(
            "TEARDOWN_HCA with {} objects (QPs, CQs, mkeys, ...) still allocated",
            fw.objects.total()
        );
    }
    fw.eqs.clear();
    fw.objects.clear();
    fw.datapath.clear();
    fw.state = HcaState::Enabled;
    let mut out = output(16);
    ifc::set(&mut out, TEARDOWN_OUT_STATE, 0);
    Ok(out)
}

/// SET_DRIVER_VERSION: logged.
pub fn set_driver_version(_fw: &mut Firmware, input: &Input) -> CmdResult {
    let bytes = input.bytes();
    let end = (DRIVER_VERSION + DRIVER_VERSION_LEN).min(bytes.len());
    let raw = bytes.get(DRIVER_VERSION..end).unwrap_or_default();
    let text = raw.split(|&b| b == 0).next().unwrap_or_default();
    info!("driver version: {}", String::from_utf8_lossy(text));
    Ok(output(16))
}

/// QUERY_ADAPTER: vendor ids and the board id (PSID).
pub fn query_adapter(fw: &mut Firmware, _input: &Input) -> CmdResult {
    let mut out = output(ADAPTER_OUT_LEN);
    ifc::set(&mut out, ADAPTER_IEEE_VENDOR_ID, MELLANOX_OUI);
    ifc::set(
        &mut out,
        ADAPTER_VSD_VENDOR_ID,
        u64::from(crate::pci_config::VENDOR_ID),
    );
    let psid = fw.config.psid.as_bytes();
    let n = psid.len().min(16);
    out[ADAPTER_PSID..ADAPTER_PSID + n].copy_from_slice(&psid[..n]);
    Ok(out)
}
