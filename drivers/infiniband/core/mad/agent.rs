// SPDX-License-Identifier: GPL-2.0

//! Who gets which MAD (C's agent tables in `mad.c`): an agent registers on a port's SMI or GSI
//! QP for one management class and version (a vendor class of the OUI range with its OUI) and
//! a set of methods; a request goes to the agent that owns its method, a response to the agent
//! whose transaction id prefix (`hi_tid`) it carries. Registration is checked as C's
//! `ib_register_mad_agent` checks it.

use crate::{
    mad::types::{class, get16, get64, hdr, method, put16, status, Mad},
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

/// Registration flag: the agent's user does RMPP itself (`IB_MAD_USER_RMPP`); the MAD layer
/// passes its segments as they are.
pub const USER_RMPP: u32 = 1 << 0;

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

/// Whether a port with (`smi`) or without QP0 and with (`cm`) or without CM serves an agent on
/// `qp_type` (C's first check of `ib_register_mad_agent`: `EPROTONOSUPPORT` if not). Other QP
/// types pass here: [`check_registration`] refuses them (`EINVAL`).
pub fn port_serves(qp_type: QpType, smi: bool, cm: bool) -> bool {
    match qp_type {
        QpType::Smi => smi,
        QpType::Gsi => cm,
        _ => true,
    }
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

/// C's checks of a kernel agent's send before its directed route (`ib_post_send_mad`): an
/// agent registered for RMPP sends only RMPP classes (`EINVAL`).
pub fn check_send(rmpp_version: u8, m: &Mad) -> Result {
    if rmpp_version != 0 && !is_rmpp_class(m[hdr::MGMT_CLASS]) {
        return Err(EINVAL);
    }
    Ok(())
}

/// The first free transaction id prefix from `next` on, wrapping at [`HI_TID_MAX`] (C's
/// `xa_alloc_cyclic`); `None` when `taken` says all are.
pub fn free_hi_tid(next: u32, taken: impl Fn(u32) -> bool) -> Option<u32> {
    (0..=HI_TID_MAX)
        .map(|k| next.wrapping_add(k) & HI_TID_MAX)
        .find(|&t| !taken(t))
}

/// The index in `agents` of the agent a MAD received on `qp_type` is for (C's
/// `find_mad_agent`): a response goes to the agent whose prefix its TID carries, a request to
/// the owner of its method.
pub fn recipient<'a>(
    agents: impl IntoIterator<Item = &'a AgentKey>,
    qp_type: QpType,
    m: &Mad,
) -> Option<usize> {
    let mut agents = agents.into_iter();
    if is_response(m) {
        let hi = (tid(m) >> 32) as u32;
        return agents.position(|a| a.hi_tid == hi && a.qp_type == qp_type);
    }
    agents.position(|a| a.owns_request(qp_type, m))
}

/// Makes `out` the answer to `m`, a `Get` or `Set` nobody takes (C's
/// `generate_unmatched_resp`): `m` as a `GetResp` with status "unsupported method/attribute"
/// (and the direction bit for a directed-route SMP).
pub fn unmatched_response(m: &Mad, out: &mut Mad) {
    out.copy_from_slice(m);
    out[hdr::METHOD] = method::GET_RESP;
    let mut st = status::UNSUPPORTED_METHOD_ATTRIB;
    if m[hdr::MGMT_CLASS] == class::SUBN_DIRECTED_ROUTE {
        st |= status::SMP_DIRECTION;
    }
    put16(&mut out[..], hdr::STATUS, st);
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
    fn registration_errnos_ranges_and_owners() {
        let (gsi, smi) = (QpType::Gsi, QpType::Smi);
        let reg = |c, v| check_registration(gsi, Some(&req(c, v, &[1])), 0);
        // QP types other than SMI and GSI, RMPP versions past 1: EINVAL.
        for qp in [QpType::Rc, QpType::Uc, QpType::Ud] {
            assert_eq!(check_registration(qp, None, 0), Err(EINVAL));
        }
        assert_eq!(check_registration(gsi, None, 1), Ok(()));
        assert_eq!(check_registration(gsi, None, 255), Err(EINVAL));
        // Class versions up to 0x82; classes 1..79 and 0x81 (directed route) only.
        assert_eq!(reg(0x04, 0x82), Ok(()));
        assert_eq!(reg(0x04, 0xff), Err(EINVAL));
        assert_eq!(reg(0x2f, 1), Ok(()));
        assert_eq!(reg(80, 1), Err(EINVAL));
        assert_eq!(reg(0x80, 1), Err(EINVAL));
        assert_eq!(reg(0xff, 1), Err(EINVAL));
        assert_eq!(reg(0, 1), Err(EINVAL));
        // The version is checked first: class 0 with version 0x83 is EINVAL either way.
        assert_eq!(reg(0, 0x83), Err(EINVAL));
        // Vendor range 1 needs no OUI; range 2 (0x30..0x4f) does.
        assert_eq!(reg(0x09, 1), Ok(()));
        assert_eq!(reg(0x0f, 1), Ok(()));
        assert_eq!(reg(0x4f, 1), Err(EINVAL));
        let mut v = req(0x4f, 1, &[1]);
        v.oui = [0, 0x14, 0x05];
        assert_eq!(check_registration(gsi, Some(&v), 0), Ok(()));
        assert_eq!(check_registration(gsi, Some(&v), 1), Ok(()));
        // RMPP: SA, device management and administration, BIS, vendor range 2.
        for c in [0x03, 0x06, 0x10, 0x12] {
            assert_eq!(check_registration(gsi, Some(&req(c, 1, &[1])), 1), Ok(()));
        }
        for c in [0x04, 0x05, 0x07, 0x09, 0x11, 0x21] {
            assert_eq!(
                check_registration(gsi, Some(&req(c, 1, &[1])), 1),
                Err(EINVAL)
            );
        }
        // SMP classes only on QP0 (either routing), the others only on QP1.
        assert_eq!(
            check_registration(smi, Some(&req(0x01, 1, &[1])), 0),
            Ok(())
        );
        assert_eq!(
            check_registration(smi, Some(&req(0x81, 1, &[1])), 0),
            Ok(())
        );
        assert_eq!(
            check_registration(gsi, Some(&req(0x81, 1, &[1])), 0),
            Err(EINVAL)
        );
        assert_eq!(
            check_registration(smi, Some(&req(0x03, 2, &[1])), 0),
            Err(EINVAL)
        );
        // Methods another agent owns (C's `method_in_use`): same QP, class, version and (range
        // 2) OUI, a common method, in either half of the mask.
        let key = |qp_type, r| AgentKey {
            qp_type,
            hi_tid: 0,
            reg: Some(r),
        };
        let a = key(gsi, req(0x04, 1, &[1, 0x7f]));
        assert!(a.conflicts(&key(gsi, req(0x04, 1, &[0x7f]))));
        assert!(!a.conflicts(&key(gsi, req(0x04, 2, &[1]))));
        assert!(!a.conflicts(&key(gsi, req(0x05, 1, &[1]))));
        assert!(!a.conflicts(&key(gsi, req(0x04, 1, &[2, 0x7e]))));
        let mut v2 = v;
        v2.oui = [0, 0x14, 0x06];
        assert!(key(gsi, v).conflicts(&key(gsi, v)));
        assert!(!key(gsi, v).conflicts(&key(gsi, v2)));
        // Vendor range 1 has no OUI: the OUI field does not tell agents apart.
        let mut r1 = req(0x09, 1, &[1]);
        let r1b = r1;
        r1.oui = [1, 2, 3];
        assert!(key(gsi, r1).conflicts(&key(gsi, r1b)));
        let s = key(smi, req(0x01, 1, &[1]));
        assert!(!s.conflicts(&key(gsi, req(0x01, 1, &[1]))));
    }

    #[test]
    fn ports_serve_agents_as_c() {
        // QP0 agents need an SMI port, QP1 agents CM (EPROTONOSUPPORT otherwise); other QP
        // types go on to check_registration's EINVAL, whatever the port has.
        assert!(port_serves(QpType::Smi, true, false));
        assert!(!port_serves(QpType::Smi, false, true));
        assert!(port_serves(QpType::Gsi, false, true));
        assert!(!port_serves(QpType::Gsi, true, false));
        assert!(port_serves(QpType::Ud, false, false));
        assert_eq!(check_registration(QpType::Ud, None, 0), Err(EINVAL));
    }

    #[test]
    fn transaction_id_prefixes_are_allocated_cyclically() {
        assert_eq!(free_hi_tid(0, |_| false), Some(0));
        assert_eq!(free_hi_tid(5, |t| t < 7), Some(7));
        // From the top of the range, wrapping to 0.
        assert_eq!(free_hi_tid(HI_TID_MAX, |_| false), Some(HI_TID_MAX));
        assert_eq!(free_hi_tid(HI_TID_MAX, |t| t == HI_TID_MAX), Some(0));
        assert_eq!(free_hi_tid(HI_TID_MAX + 1, |_| false), Some(0));
        // Every prefix taken: EBUSY for the caller.
        assert_eq!(free_hi_tid(3, |_| true), None);
    }

    #[test]
    fn kernel_agent_sends_are_checked_as_c_checks_them() {
        // An RMPP agent sends RMPP classes only (EINVAL), whatever the method.
        assert_eq!(check_send(1, &mad(0x03, 2, 1)), Ok(()));
        assert_eq!(check_send(1, &mad(0x30, 1, 1)), Ok(()));
        assert_eq!(check_send(1, &mad(0x04, 1, 1)), Err(EINVAL));
        assert_eq!(check_send(1, &mad(0x81, 1, 0x81)), Err(EINVAL));
        // Without RMPP any class goes (the directed route is checked after).
        for c in [0x01, 0x04, 0x07, 0x81, 0xff] {
            assert_eq!(check_send(0, &mad(c, 1, 1)), Ok(()));
        }
    }

    #[test]
    fn received_mads_go_to_the_agent_c_picks() {
        let (gsi, smi) = (QpType::Gsi, QpType::Smi);
        let mut vreq = req(0x30, 1, &[1]);
        vreq.oui = [0, 0x14, 0x05];
        let agents = [
            // hi_tid 0: send-only on QP1 (umad's perfquery).
            AgentKey {
                qp_type: gsi,
                hi_tid: 0,
                reg: None,
            },
            AgentKey {
                qp_type: gsi,
                hi_tid: 1,
                reg: Some(req(0x04, 1, &[1, 2])),
            },
            AgentKey {
                qp_type: smi,
                hi_tid: 2,
                reg: Some(req(0x81, 1, &[1])),
            },
            AgentKey {
                qp_type: gsi,
                hi_tid: 3,
                reg: Some(vreq),
            },
        ];
        let to = |qp, m: &Mad| recipient(agents.iter(), qp, m);
        // Requests: by QP, class, version, method (the response bit aside).
        assert_eq!(to(gsi, &mad(0x04, 1, 1)), Some(1));
        assert_eq!(to(gsi, &mad(0x04, 1, 2)), Some(1));
        assert_eq!(to(gsi, &mad(0x04, 1, 3)), None);
        assert_eq!(to(gsi, &mad(0x04, 9, 1)), None);
        assert_eq!(to(gsi, &mad(0x04, 0xff, 1)), None);
        assert_eq!(to(gsi, &mad(0x05, 1, 1)), None);
        assert_eq!(to(smi, &mad(0x04, 1, 1)), None);
        assert_eq!(to(smi, &mad(0x81, 1, 1)), Some(2));
        assert_eq!(to(gsi, &mad(0x81, 1, 1)), None);
        // Vendor range 2: the OUI at bytes 37..40 must match.
        let mut v = mad(0x30, 1, 1);
        assert_eq!(to(gsi, &v), None);
        v[37..40].copy_from_slice(&[0, 0x14, 0x05]);
        assert_eq!(to(gsi, &v), Some(3));
        v[39] = 6;
        assert_eq!(to(gsi, &v), None);
        // Responses: by the TID's high 32 bits and the QP, whatever the class.
        let resp = |c, qp_hi: u64| {
            let mut m = mad(c, 1, method::GET_RESP);
            crate::mad::types::put64(&mut m, hdr::TID, (qp_hi << 32) | 0x1234);
            m
        };
        assert_eq!(to(gsi, &resp(0x04, 0)), Some(0));
        assert_eq!(to(gsi, &resp(0x0a, 1)), Some(1));
        assert_eq!(to(smi, &resp(0x01, 2)), Some(2));
        assert_eq!(to(smi, &resp(0x01, 0)), None);
        assert_eq!(to(gsi, &resp(0x04, 2)), None);
        assert_eq!(to(gsi, &resp(0x04, 0x100_0000)), None);
        // TrapRepress and a BM response (attribute modifier bit 0) are responses too.
        let mut tr = mad(0x04, 1, method::TRAP_REPRESS);
        crate::mad::types::put64(&mut tr, hdr::TID, 1 << 32);
        assert_eq!(to(gsi, &tr), Some(1));
        let mut bm = mad(class::BM, 1, 1);
        crate::mad::types::put32(&mut bm, hdr::ATTR_MOD, 1);
        assert!(is_response(&bm));
        assert_eq!(to(gsi, &bm), Some(0));
    }

    #[test]
    fn unmatched_gets_and_sets_are_answered_unsupported() {
        let mut out = [0xeeu8; MAD_SIZE];
        let mut m = mad(0x04, 9, method::SET);
        m[100] = 0x42;
        unmatched_response(&m, &mut out);
        assert_eq!(out[hdr::METHOD], method::GET_RESP);
        assert_eq!(get16(&out, hdr::STATUS), 0x000c);
        assert_eq!((out[hdr::CLASS_VERSION], out[100], out[255]), (9, 0x42, 0));
        // A directed-route SMP's answer is on its way back: the direction bit.
        unmatched_response(&mad(0x81, 1, method::GET), &mut out);
        assert_eq!(get16(&out, hdr::STATUS), 0x800c);
        assert_eq!(out[hdr::MGMT_CLASS], 0x81);
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
        let mut cpi = mad(0x07, 2, 1);
        crate::mad::types::put16(&mut cpi, hdr::ATTR_ID, ATTR_CLASS_PORT_INFO);
        assert!(valid_for_qp(&cpi, QpType::Gsi));
        // Base versions other than 1 (OPA's 0x80 included: no OPA port here).
        for b in [0, 2, 0x80, 0xff] {
            let mut m = mad(0x04, 1, 1);
            m[hdr::BASE_VERSION] = b;
            assert!(!valid_for_qp(&m, QpType::Gsi));
            let mut m = mad(0x01, 1, 1);
            m[hdr::BASE_VERSION] = b;
            assert!(!valid_for_qp(&m, QpType::Smi));
        }
        // Class 0 and classes past 0x81: not SMPs, so QP1's (the agents find no owner).
        assert!(valid_for_qp(&mad(0x00, 1, 1), QpType::Gsi));
        assert!(!valid_for_qp(&mad(0x00, 1, 1), QpType::Smi));
        assert!(valid_for_qp(&mad(0xff, 1, 1), QpType::Gsi));
        assert!(valid_for_qp(&mad(0x81, 1, 1), QpType::Smi));
        assert!(!valid_for_qp(&mad(0x81, 1, 1), QpType::Gsi));
    }
}
