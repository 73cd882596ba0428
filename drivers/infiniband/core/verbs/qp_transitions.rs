// SPDX-License-Identifier: GPL-2.0

//! Which QP state transitions exist and which attributes each requires and allows, per QP type:
//! the rules of the InfiniBand specification's QP state machine as C's `ib_modify_qp_is_ok`
//! applies them (its `qp_state_table`, `drivers/infiniband/core/verbs.c`). One table for the
//! whole stack: the core checks every modify against it ([`crate::verbs::modify_qp::qp_transition_ok`]) and
//! C drivers and consumers call it as `ib_modify_qp_is_ok` (`c_abi/qp.rs`).
//!
//! States, QP types and attribute bits are C's numbers (`enum ib_qp_state`, `enum ib_qp_type`,
//! `enum ib_qp_attr_mask`), so that C callers' values need no translation: the core's own
//! [`QpState`](crate::verbs::types::QpState), [`QpType`](crate::verbs::types::QpType) and
//! [`QpAttrField`](crate::verbs::types::QpAttrField) where it has them (they carry C's values), the
//! rest here; the C ABI checks at compile time that all are the kernel headers' values.

/// `IB_QPS_*`.
pub mod state {
    use crate::verbs::types::QpState as S;
    /// `IB_QPS_RESET`.
    pub const RESET: u32 = S::Reset as u32;
    /// `IB_QPS_INIT`.
    pub const INIT: u32 = S::Init as u32;
    /// `IB_QPS_RTR`.
    pub const RTR: u32 = S::Rtr as u32;
    /// `IB_QPS_RTS`.
    pub const RTS: u32 = S::Rts as u32;
    /// `IB_QPS_SQD`.
    pub const SQD: u32 = S::Sqd as u32;
    /// `IB_QPS_SQE`.
    pub const SQE: u32 = S::Sqe as u32;
    /// `IB_QPS_ERR`.
    pub const ERR: u32 = S::Err as u32;
}

/// `IB_QPT_*` (the types below `IB_QPT_MAX`).
pub mod qp_type {
    use crate::verbs::types::QpType as T;
    /// `IB_QPT_SMI`.
    pub const SMI: u32 = T::Smi as u32;
    /// `IB_QPT_GSI`.
    pub const GSI: u32 = T::Gsi as u32;
    /// `IB_QPT_RC`.
    pub const RC: u32 = T::Rc as u32;
    /// `IB_QPT_UC`.
    pub const UC: u32 = T::Uc as u32;
    /// `IB_QPT_UD`.
    pub const UD: u32 = T::Ud as u32;
    /// `IB_QPT_RAW_PACKET`.
    pub const RAW_PACKET: u32 = 8;
    /// `IB_QPT_XRC_INI`.
    pub const XRC_INI: u32 = 9;
    /// `IB_QPT_XRC_TGT`.
    pub const XRC_TGT: u32 = 10;
    /// `IB_QPT_MAX`: types from here on (the drivers' own) have no row in the table.
    pub const MAX: u32 = 11;
}

/// `IB_QP_*` attribute bits.
pub mod attr {
    use crate::verbs::types::QpAttrField as F;
    /// `IB_QP_STATE`.
    pub const STATE: u32 = F::State as u32;
    /// `IB_QP_CUR_STATE`.
    pub const CUR_STATE: u32 = F::CurState as u32;
    /// `IB_QP_EN_SQD_ASYNC_NOTIFY` (the core carries no SQD notification).
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    /// `IB_QP_ACCESS_FLAGS`.
    pub const ACCESS_FLAGS: u32 = F::AccessFlags as u32;
    /// `IB_QP_PKEY_INDEX`.
    pub const PKEY_INDEX: u32 = F::PkeyIndex as u32;
    /// `IB_QP_PORT`.
    pub const PORT: u32 = F::Port as u32;
    /// `IB_QP_QKEY`.
    pub const QKEY: u32 = F::Qkey as u32;
    /// `IB_QP_AV`.
    pub const AV: u32 = F::Av as u32;
    /// `IB_QP_PATH_MTU`.
    pub const PATH_MTU: u32 = F::PathMtu as u32;
    /// `IB_QP_TIMEOUT`.
    pub const TIMEOUT: u32 = F::Timeout as u32;
    /// `IB_QP_RETRY_CNT`.
    pub const RETRY_CNT: u32 = F::RetryCnt as u32;
    /// `IB_QP_RNR_RETRY`.
    pub const RNR_RETRY: u32 = F::RnrRetry as u32;
    /// `IB_QP_RQ_PSN`.
    pub const RQ_PSN: u32 = F::RqPsn as u32;
    /// `IB_QP_MAX_QP_RD_ATOMIC`.
    pub const MAX_QP_RD_ATOMIC: u32 = F::MaxQpRdAtomic as u32;
    /// `IB_QP_ALT_PATH` (the core carries no alternate path).
    pub const ALT_PATH: u32 = 1 << 14;
    /// `IB_QP_MIN_RNR_TIMER`.
    pub const MIN_RNR_TIMER: u32 = F::MinRnrTimer as u32;
    /// `IB_QP_SQ_PSN`.
    pub const SQ_PSN: u32 = F::SqPsn as u32;
    /// `IB_QP_MAX_DEST_RD_ATOMIC`.
    pub const MAX_DEST_RD_ATOMIC: u32 = F::MaxDestRdAtomic as u32;
    /// `IB_QP_PATH_MIG_STATE` (nor path migration).
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    /// `IB_QP_DEST_QPN`.
    pub const DEST_QPN: u32 = F::DestQpn as u32;
    /// `IB_QP_RATE_LIMIT` (nor rate limits): allowed on every transition.
    pub const RATE_LIMIT: u32 = 1 << 25;
}

use attr::*;
use qp_type::*;
use state::*;

/// How the QP types group in the table: most rows treat several types alike.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// UD.
    Ud,
    /// SMI and GSI (QP0 and QP1).
    Special,
    /// UC.
    Uc,
    /// RC.
    Rc,
    /// XRC initiator: RC's sender side, UC's where it has no responder.
    XrcIni,
    /// XRC target: RC's responder side.
    XrcTgt,
    /// Raw packet.
    Raw,
    /// A type below `IB_QPT_MAX` with no attributes in any row (the raw IPv6 and Ethertype
    /// types, and the unused number 7).
    Other,
}

fn kind(t: u32) -> Option<Kind> {
    Some(match t {
        UD => Kind::Ud,
        SMI | GSI => Kind::Special,
        UC => Kind::Uc,
        RC => Kind::Rc,
        XRC_INI => Kind::XrcIni,
        XRC_TGT => Kind::XrcTgt,
        RAW_PACKET => Kind::Raw,
        t if t < MAX => Kind::Other,
        _ => return None,
    })
}

/// What the move to RTS from RTS or SQD (and from RTR, besides what that requires) allows.
fn rts_optional(k: Kind) -> u32 {
    match k {
        Kind::Ud | Kind::Special => CUR_STATE | QKEY,
        Kind::Uc | Kind::XrcIni => CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE,
        Kind::Rc | Kind::XrcTgt => {
            CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE
        }
        Kind::Raw | Kind::Other => 0,
    }
}

/// The attributes a move of a `t` QP from `cur` to `next` requires and those it allows besides
/// (`IB_QP_STATE` and `IB_QP_RATE_LIMIT` aside); `None` when there is no such transition, or
/// for a state or type out of C's ranges.
pub fn transition(cur: u32, next: u32, t: u32) -> Option<(u32, u32)> {
    let k = kind(t)?;
    let none = (0, 0);
    Some(match (cur, next) {
        (RESET, RESET) => none,
        (RESET, INIT) => (
            match k {
                Kind::Ud => PKEY_INDEX | PORT | QKEY,
                Kind::Raw => PORT,
                Kind::Uc | Kind::Rc | Kind::XrcIni | Kind::XrcTgt => {
                    PKEY_INDEX | PORT | ACCESS_FLAGS
                }
                Kind::Special => PKEY_INDEX | QKEY,
                Kind::Other => 0,
            },
            0,
        ),
        (RESET, _) => return None,
        (INIT..=ERR, RESET | ERR) => none,
        (INIT, INIT) => (
            0,
            match k {
                Kind::Ud => PKEY_INDEX | PORT | QKEY,
                Kind::Uc | Kind::Rc | Kind::XrcIni | Kind::XrcTgt => {
                    PKEY_INDEX | PORT | ACCESS_FLAGS
                }
                Kind::Special => PKEY_INDEX | QKEY,
                Kind::Raw | Kind::Other => 0,
            },
        ),
        (INIT, RTR) => (
            match k {
                Kind::Uc | Kind::XrcIni => AV | PATH_MTU | DEST_QPN | RQ_PSN,
                Kind::Rc | Kind::XrcTgt => {
                    AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER
                }
                _ => 0,
            },
            match k {
                Kind::Ud | Kind::Special => PKEY_INDEX | QKEY,
                Kind::Uc | Kind::Rc | Kind::XrcIni | Kind::XrcTgt => {
                    ALT_PATH | ACCESS_FLAGS | PKEY_INDEX
                }
                Kind::Raw | Kind::Other => 0,
            },
        ),
        (RTR, RTS) => (
            match k {
                Kind::Ud | Kind::Uc | Kind::Special => SQ_PSN,
                Kind::Rc | Kind::XrcIni => {
                    TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC
                }
                Kind::XrcTgt => TIMEOUT | SQ_PSN,
                Kind::Raw | Kind::Other => 0,
            },
            rts_optional(k),
        ),
        (RTS | SQD, RTS) => (0, rts_optional(k)),
        (RTS, SQD) => (
            0,
            match k {
                Kind::Raw | Kind::Other => 0,
                _ => EN_SQD_ASYNC_NOTIFY,
            },
        ),
        (SQD, SQD) => (
            0,
            match k {
                Kind::Ud | Kind::Special => PKEY_INDEX | QKEY,
                Kind::Uc => AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE,
                Kind::Rc => {
                    PORT | AV
                        | TIMEOUT
                        | RETRY_CNT
                        | RNR_RETRY
                        | MAX_QP_RD_ATOMIC
                        | MAX_DEST_RD_ATOMIC
                        | ALT_PATH
                        | ACCESS_FLAGS
                        | PKEY_INDEX
                        | MIN_RNR_TIMER
                        | PATH_MIG_STATE
                }
                Kind::XrcIni => {
                    PORT | AV
                        | TIMEOUT
                        | RETRY_CNT
                        | RNR_RETRY
                        | MAX_QP_RD_ATOMIC
                        | ALT_PATH
                        | ACCESS_FLAGS
                        | PKEY_INDEX
                        | PATH_MIG_STATE
                }
                Kind::XrcTgt => {
                    PORT | AV
                        | TIMEOUT
                        | MAX_DEST_RD_ATOMIC
                        | ALT_PATH
                        | ACCESS_FLAGS
                        | PKEY_INDEX
                        | MIN_RNR_TIMER
                        | PATH_MIG_STATE
                }
                Kind::Raw | Kind::Other => 0,
            },
        ),
        (SQE, RTS) => (
            0,
            match k {
                Kind::Ud | Kind::Special => CUR_STATE | QKEY,
                Kind::Uc => CUR_STATE | ACCESS_FLAGS,
                _ => 0,
            },
        ),
        _ => return None,
    })
}

/// Whether moving a `t` QP from `cur` to `next` with the attributes `mask` names is allowed
/// (C's `ib_modify_qp_is_ok`): the transition exists, `mask` names every attribute it requires
/// and nothing it does not allow (`IB_QP_STATE` and `IB_QP_RATE_LIMIT` always allowed), and
/// names the current state only from RTR, RTS, SQD or SQE. As C's, it does not ask for
/// `IB_QP_STATE` when `next` differs from `cur`: callers that do ([`crate::verbs`]) check that.
pub fn modify_qp_is_ok(cur: u32, next: u32, t: u32, mask: u32) -> bool {
    if mask & CUR_STATE != 0 && !matches!(cur, RTR | RTS | SQD | SQE) {
        return false;
    }
    let Some((required, optional)) = transition(cur, next, t) else {
        return false;
    };
    mask & required == required && mask & !(required | optional | STATE | RATE_LIMIT) == 0
}

#[kernel::macros::kunit_tests(rdma_rs_qp_transitions)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_the_table() {
        // RESET goes to INIT (with what each type needs) and RESET only.
        assert!(modify_qp_is_ok(
            RESET,
            INIT,
            RC,
            STATE | PKEY_INDEX | PORT | ACCESS_FLAGS
        ));
        assert!(!modify_qp_is_ok(RESET, INIT, RC, STATE | PKEY_INDEX | PORT));
        assert!(modify_qp_is_ok(RESET, INIT, RAW_PACKET, STATE | PORT));
        assert!(!modify_qp_is_ok(RESET, ERR, UD, STATE));
        assert!(modify_qp_is_ok(RESET, RESET, XRC_TGT, 0));
        // XRC: the initiator needs UC's RTR attributes, the target RC's.
        let uc_rtr = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN;
        assert!(modify_qp_is_ok(INIT, RTR, XRC_INI, uc_rtr));
        assert!(!modify_qp_is_ok(INIT, RTR, XRC_TGT, uc_rtr));
        assert!(modify_qp_is_ok(
            INIT,
            RTR,
            XRC_TGT,
            uc_rtr | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER
        ));
        // The alternate path and path migration where C allows them, not elsewhere.
        assert!(modify_qp_is_ok(
            RTS,
            RTS,
            RC,
            ALT_PATH | PATH_MIG_STATE | CUR_STATE
        ));
        assert!(!modify_qp_is_ok(RTS, RTS, UD, ALT_PATH));
        // SQD notification on the way to SQD; rate limits anywhere.
        assert!(modify_qp_is_ok(RTS, SQD, UD, STATE | EN_SQD_ASYNC_NOTIFY));
        assert!(!modify_qp_is_ok(
            RTS,
            SQD,
            RAW_PACKET,
            STATE | EN_SQD_ASYNC_NOTIFY
        ));
        assert!(modify_qp_is_ok(INIT, ERR, RC, STATE | RATE_LIMIT));
        // The current state named only from RTR, RTS, SQD, SQE.
        assert!(!modify_qp_is_ok(INIT, INIT, RC, CUR_STATE));
        assert!(modify_qp_is_ok(
            SQE,
            RTS,
            UC,
            STATE | CUR_STATE | ACCESS_FLAGS
        ));
        assert!(!modify_qp_is_ok(SQE, RTS, RC, STATE | ACCESS_FLAGS));
        // No state or type out of range, no row for a driver's type.
        assert!(!modify_qp_is_ok(7, RESET, RC, 0));
        assert!(!modify_qp_is_ok(ERR, 7, RC, 0));
        assert!(!modify_qp_is_ok(RTS, RESET, 0xff, 0));
        // A type without attributes in any row moves with the state bit alone.
        assert!(modify_qp_is_ok(RESET, INIT, 5, STATE));
        assert!(!modify_qp_is_ok(RESET, INIT, 5, STATE | PORT));
    }
}
