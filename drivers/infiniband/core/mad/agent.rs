// SPDX-License-Identifier: GPL-2.0

//! Who gets which MAD (C's agent tables in `mad.c`): an agent registers on a port's SMI or GSI
//! QP for one management class and version (a vendor class of the OUI range with its OUI) and
//! a set of methods; a request goes to the agent that owns its method, a response to the agent
//! whose transaction id prefix (`hi_tid`) it carries. Registration is checked as C's
//! `ib_register_mad_agent` checks it.

use crate::{
    mad::types::{class, get16, get64, hdr, method, Mad},
    verbs::types::QpType,
};
use kernel::prelude::*;

/// Class versions below this (`MAX_MGMT_VERSION`).
pub const MAX_MGMT_VERSION: u8 = 0x83;
/// Classes below this, besides directed-route SMPs (`MAX_MGMT_CLASS`).
pub const MAX_MGMT_CLASS: u8 = 80;
/// Largest transaction id prefix (24 bits, `XA_LIMIT(0, (1 << 24) - 1)`).
pub const HI_TID_MAX: u32 = (1 << 24) - 1;
/// The attribute id of ClassPortInfo.
const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
/// Baseboard management responses are flagged in the attribute modifier's bit 0.
const BM_ATTR_MOD_RESP: u32 = 1;

/// What an agent registers for (C's `ib_mad_reg_req`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadRegReq {
    /// Management class.
    pub mgmt_class: u8,
    /// Class version.
    pub class_version: u8,
    /// The OUI of a vendor class of the OUI range (bytes in wire order).
    pub oui: [u8; 3],
    /// Methods: bit `m` of the 128 is method `m`.
    pub method_mask: [u64; 2],
}

impl MadRegReq {
    /// Whether method `m` (0..127) is in the mask.
    pub fn has_method(&self, m: u8) -> bool {
        let m = usize::from(m & 0x7f);
        self.method_mask[m / 64] & (1 << (m % 64)) != 0
    }

    fn overlaps(&self, other: &MadRegReq) -> bool {
        self.method_mask[0] & other.method_mask[0] != 0
            || self.method_mask[1] & other.method_mask[1] != 0
    }
}

/// Whether `c` is a vendor class of the range that carries an OUI.
pub fn is_vendor_oui_class(c: u8) -> bool {
    (class::VENDOR_RANGE2_START..=class::VENDOR_RANGE2_END).contains(&c)
}

/// Whether `c` is a class that may use RMPP (C's `ib_is_mad_class_rmpp`).
pub fn is_rmpp_class(c: u8) -> bool {
    matches!(
        c,
        class::SUBN_ADM | class::DEVICE_MGMT | class::DEVICE_ADM | class::BIS
    ) || is_vendor_oui_class(c)
}

/// Whether `m` is a response (C's `ib_response_mad`).
pub fn is_response(m: &Mad) -> bool {
    let meth = m[hdr::METHOD];
    meth & method::RESP != 0
        || meth == method::TRAP_REPRESS
        || (m[hdr::MGMT_CLASS] == class::BM
            && crate::mad::types::get32(m, hdr::ATTR_MOD) & BM_ATTR_MOD_RESP != 0)
}

/// The transaction id of `m`.
pub fn tid(m: &Mad) -> u64 {
    get64(m, hdr::TID)
}

/// Checks a registration as C's `ib_register_mad_agent` does before it looks at the port
/// (every failure there is `EINVAL`): the QP type, the RMPP version and the request itself.
pub fn check_registration(qp_type: QpType, reg: Option<&MadRegReq>, rmpp_version: u8) -> Result {
    if !matches!(qp_type, QpType::Smi | QpType::Gsi) || rmpp_version > 1 {
        return Err(EINVAL);
    }
    let Some(r) = reg else {
        return Ok(());
    };
    let c = r.mgmt_class;
    if r.class_version >= MAX_MGMT_VERSION {
        return Err(EINVAL);
    }
    if c >= MAX_MGMT_CLASS && c != class::SUBN_DIRECTED_ROUTE {
        return Err(EINVAL);
    }
    if c == 0 {
        return Err(EINVAL);
    }
    if is_vendor_oui_class(c) && r.oui == [0; 3] {
        return Err(EINVAL);
    }
    if rmpp_version != 0 && !is_rmpp_class(c) {
        return Err(EINVAL);
    }
    let smp = c == class::SUBN_LID_ROUTED || c == class::SUBN_DIRECTED_ROUTE;
    if (qp_type == QpType::Smi) != smp {
        return Err(EINVAL);
    }
    Ok(())
}

/// Whether a MAD arriving on a QP of `qp_type` is acceptable (C's `validate_mad` for an
/// InfiniBand port): base version 1, subnet management classes only on QP0 and the others only
/// on QP1, CM MADs other than ClassPortInfo only as `Send`.
pub fn valid_for_qp(m: &Mad, qp_type: QpType) -> bool {
    if m[hdr::BASE_VERSION] != 1 {
        return false;
    }
    let c = m[hdr::MGMT_CLASS];
    let smp = c == class::SUBN_LID_ROUTED || c == class::SUBN_DIRECTED_ROUTE;
    if (qp_type == QpType::Smi) != smp {
        return false;
    }
    if c == class::CM
        && get16(m, hdr::ATTR_ID) != ATTR_CLASS_PORT_INFO
        && m[hdr::METHOD] != method::SEND
    {
        return false;
    }
    true
}

/// One agent's registration as the tables see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentKey {
    /// The QP it is on.
    pub qp_type: QpType,
    /// Its transaction id prefix.
    pub hi_tid: u32,
    /// What it registered for (`None`: it only sends).
    pub reg: Option<MadRegReq>,
}

impl AgentKey {
    /// Whether this agent owns the request `m` that came in on `qp_type`.
    pub fn owns_request(&self, qp_type: QpType, m: &Mad) -> bool {
        let Some(r) = &self.reg else {
            return false;
        };
        if self.qp_type != qp_type
            || r.mgmt_class != m[hdr::MGMT_CLASS]
            || r.class_version != m[hdr::CLASS_VERSION]
            || !r.has_method(m[hdr::METHOD])
        {
            return false;
        }
        // A vendor class of the OUI range: the OUI follows the RMPP header.
        !is_vendor_oui_class(r.mgmt_class) || m.get(37..40) == Some(&r.oui[..])
    }

    /// Whether `other` would own a method this agent owns (C's `method_in_use`): the same
    /// class, version and (vendor classes) OUI, and a common method.
    pub fn conflicts(&self, other: &AgentKey) -> bool {
        match (&self.reg, &other.reg) {
            (Some(a), Some(b)) => {
                self.qp_type == other.qp_type
                    && a.mgmt_class == b.mgmt_class
                    && a.class_version == b.class_version
                    && (!is_vendor_oui_class(a.mgmt_class) || a.oui == b.oui)
                    && a.overlaps(b)
            }
            _ => false,
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_mad_agent)]
mod tests {
    use super::*;
    use crate::mad::types::MAD_SIZE;

    fn req(c: u8, v: u8, methods: &[u8]) -> MadRegReq {
        let mut r = MadRegReq {
            mgmt_class: c,
            class_version: v,
            ..MadRegReq::default()
        };
        for &m in methods {
            r.method_mask[usize::from(m) / 64] |= 1 << (m % 64);
        }
        r
    }

    fn mad(c: u8, v: u8, m: u8) -> Mad {
        let mut x = [0u8; MAD_SIZE];
        x[hdr::BASE_VERSION] = 1;
        x[hdr::MGMT_CLASS] = c;
        x[hdr::CLASS_VERSION] = v;
        x[hdr::METHOD] = m;
        x
    }

    #[test]
    fn registrations_are_checked_as_c_checks_them() {
        let gsi = QpType::Gsi;
        assert!(check_registration(gsi, None, 0).is_ok());
        assert!(check_registration(QpType::Ud, None, 0).is_err());
        assert!(check_registration(gsi, None, 2).is_err());
        assert!(check_registration(gsi, Some(&req(0x04, 1, &[1])), 0).is_ok());
        assert!(check_registration(gsi, Some(&req(0x04, 0x83, &[1])), 0).is_err());
        assert!(check_registration(gsi, Some(&req(0, 1, &[1])), 0).is_err());
        assert!(check_registration(gsi, Some(&req(80, 1, &[1])), 0).is_err());
        // Subnet management only on QP0, the rest only on QP1.
        assert!(check_registration(gsi, Some(&req(0x01, 1, &[1])), 0).is_err());
        assert!(check_registration(QpType::Smi, Some(&req(0x81, 1, &[1])), 0).is_ok());
        assert!(check_registration(QpType::Smi, Some(&req(0x04, 1, &[1])), 0).is_err());
        // RMPP only for RMPP classes; vendor OUI classes need an OUI.
        assert!(check_registration(gsi, Some(&req(0x03, 2, &[1])), 1).is_ok());
        assert!(check_registration(gsi, Some(&req(0x04, 1, &[1])), 1).is_err());
        assert!(check_registration(gsi, Some(&req(0x30, 1, &[1])), 0).is_err());
    }

    #[test]
    fn requests_go_to_the_owner_of_their_method() {
        let a = AgentKey {
            qp_type: QpType::Gsi,
            hi_tid: 1,
            reg: Some(req(0x04, 1, &[1, 2])),
        };
        assert!(a.owns_request(QpType::Gsi, &mad(0x04, 1, 1)));
        assert!(!a.owns_request(QpType::Gsi, &mad(0x04, 1, 3)));
        assert!(!a.owns_request(QpType::Gsi, &mad(0x04, 2, 1)));
        let b = AgentKey {
            hi_tid: 2,
            reg: Some(req(0x04, 1, &[2, 5])),
            ..a
        };
        assert!(a.conflicts(&b));
        let c = AgentKey {
            hi_tid: 3,
            reg: Some(req(0x04, 1, &[5])),
            ..a
        };
        assert!(!a.conflicts(&c));
        let send_only = AgentKey { reg: None, ..a };
        assert!(!send_only.conflicts(&a));
    }

    #[test]
    fn responses_and_valid_mads() {
        assert!(is_response(&mad(0x04, 1, 0x81)));
        assert!(is_response(&mad(0x01, 1, method::TRAP_REPRESS)));
        assert!(!is_response(&mad(0x04, 1, 1)));
        assert!(valid_for_qp(&mad(0x01, 1, 1), QpType::Smi));
        assert!(!valid_for_qp(&mad(0x01, 1, 1), QpType::Gsi));
        assert!(!valid_for_qp(&mad(0x04, 1, 1), QpType::Smi));
        let mut bad = mad(0x04, 1, 1);
        bad[hdr::BASE_VERSION] = 2;
        assert!(!valid_for_qp(&bad, QpType::Gsi));
        // CM: only Send, except ClassPortInfo.
        assert!(!valid_for_qp(&mad(0x07, 2, 1), QpType::Gsi));
        assert!(valid_for_qp(&mad(0x07, 2, 3), QpType::Gsi));
    }
}
