// SPDX-License-Identifier: GPL-2.0

//! Directed-route subnet management packets (C's `smi.c` and `smi.h`, IBA 14.2.2): how the
//! hop pointer of a directed-route SMP moves when a port sends or receives it, and whether the
//! SMP is for the local subnet management agent. Only the rules of a channel adapter apply
//! (`is_switch` false everywhere the MAD layer calls them, as for every device it serves).

use crate::mad::types::{get16, hdr, status, Mad};

/// Most hops a directed route may have (`IB_SMP_MAX_PATH_HOPS`).
pub const MAX_PATH_HOPS: u8 = 64;
/// The permissive LID.
pub const LID_PERMISSIVE: u16 = 0xffff;

/// SMP field offsets (`struct ib_smp`).
mod smp {
    /// DrSLID.
    pub(super) const DR_SLID: usize = 32;
    /// DrDLID.
    pub(super) const DR_DLID: usize = 34;
    /// The initial path (64 port numbers).
    pub(super) const INITIAL_PATH: usize = 128;
    /// The return path (64 port numbers).
    pub(super) const RETURN_PATH: usize = 192;
}

/// Handle or drop (`enum smi_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmiAction {
    /// Drop the SMP.
    Discard,
    /// Go on with it.
    Handle,
}

/// Where a received directed-route SMP goes (`enum smi_forward_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmiForward {
    /// Up the stack.
    Local,
    /// To the send queue.
    Send,
    /// On to another port (switches only).
    Forward,
}

fn direction(m: &Mad) -> bool {
    get16(m, hdr::STATUS) & status::SMP_DIRECTION != 0
}

fn path(m: &Mad, base: usize, i: u8) -> u8 {
    m.get(base + usize::from(i)).copied().unwrap_or(0)
}

/// The DrSLID (returning SMP) or DrDLID (outgoing SMP) that says whether the LID-routed part
/// of the path is empty at this end: what C checks before [`handle_send`].
pub fn lid_routed_part_empty(m: &Mad) -> bool {
    let at = if direction(m) {
        smp::DR_DLID
    } else {
        smp::DR_SLID
    };
    get16(m, at) == LID_PERMISSIVE
}

/// The DrSLID of `m`.
pub fn dr_slid(m: &Mad) -> u16 {
    get16(m, smp::DR_SLID)
}

/// Moves the hop pointer of an SMP that `port` sends (C's `smi_handle_dr_smp_send`).
pub fn handle_send(m: &mut Mad, is_switch: bool, port: u32) -> SmiAction {
    let hop_cnt = m[hdr::HOP_CNT];
    let mut hop_ptr = m[hdr::HOP_PTR];
    let dlid_perm = get16(m, smp::DR_DLID) == LID_PERMISSIVE;
    let slid_perm = get16(m, smp::DR_SLID) == LID_PERMISSIVE;
    let on = |b: bool| {
        if b {
            SmiAction::Handle
        } else {
            SmiAction::Discard
        }
    };
    if hop_cnt >= MAX_PATH_HOPS {
        return SmiAction::Discard;
    }
    let action = if !direction(m) {
        if hop_cnt != 0 && hop_ptr == 0 {
            hop_ptr += 1;
            on(u32::from(path(m, smp::INITIAL_PATH, hop_ptr)) == port)
        } else if hop_ptr != 0 && hop_ptr < hop_cnt {
            if !is_switch {
                return SmiAction::Discard;
            }
            hop_ptr += 1;
            on(u32::from(path(m, smp::INITIAL_PATH, hop_ptr)) == port)
        } else if hop_ptr == hop_cnt {
            hop_ptr += 1;
            on(is_switch || dlid_perm)
        } else {
            on(hop_ptr == hop_cnt + 1)
        }
    } else if hop_cnt != 0 && hop_ptr == hop_cnt + 1 {
        hop_ptr -= 1;
        on(u32::from(path(m, smp::RETURN_PATH, hop_ptr)) == port)
    } else if (2..=hop_cnt).contains(&hop_ptr) {
        if !is_switch {
            return SmiAction::Discard;
        }
        hop_ptr -= 1;
        on(u32::from(path(m, smp::RETURN_PATH, hop_ptr)) == port)
    } else if hop_ptr == 1 {
        hop_ptr -= 1;
        on(is_switch || slid_perm)
    } else {
        on(hop_ptr == 0)
    };
    m[hdr::HOP_PTR] = hop_ptr;
    action
}

/// Checks (and for a returning SMP, moves the hop pointer of) an SMP that `port` received
/// (C's `smi_handle_dr_smp_recv`); `ports` is the device's port count.
pub fn handle_recv(m: &mut Mad, is_switch: bool, port: u32, ports: u32) -> SmiAction {
    let hop_cnt = m[hdr::HOP_CNT];
    let mut hop_ptr = m[hdr::HOP_PTR];
    let dlid_perm = get16(m, smp::DR_DLID) == LID_PERMISSIVE;
    let slid_perm = get16(m, smp::DR_SLID) == LID_PERMISSIVE;
    let on = |b: bool| {
        if b {
            SmiAction::Handle
        } else {
            SmiAction::Discard
        }
    };
    if hop_cnt >= MAX_PATH_HOPS {
        return SmiAction::Discard;
    }
    let action = if !direction(m) {
        if hop_cnt != 0 && hop_ptr == 0 {
            SmiAction::Discard
        } else if hop_ptr != 0 && hop_ptr < hop_cnt {
            if !is_switch {
                return SmiAction::Discard;
            }
            if let Some(r) = m.get_mut(smp::RETURN_PATH + usize::from(hop_ptr)) {
                *r = port as u8;
            }
            on(u32::from(path(m, smp::INITIAL_PATH, hop_ptr + 1)) <= ports)
        } else if hop_ptr == hop_cnt {
            if hop_cnt != 0 {
                if let Some(r) = m.get_mut(smp::RETURN_PATH + usize::from(hop_ptr)) {
                    *r = port as u8;
                }
            }
            on(is_switch || dlid_perm)
        } else {
            on(hop_ptr == hop_cnt + 1)
        }
    } else if hop_cnt != 0 && hop_ptr == hop_cnt + 1 {
        hop_ptr -= 1;
        on(u32::from(path(m, smp::RETURN_PATH, hop_ptr)) == port)
    } else if (2..=hop_cnt).contains(&hop_ptr) {
        if !is_switch {
            return SmiAction::Discard;
        }
        on(u32::from(path(m, smp::RETURN_PATH, hop_ptr - 1)) <= ports)
    } else if hop_ptr == 1 {
        if slid_perm {
            hop_ptr -= 1;
            SmiAction::Handle
        } else {
            on(is_switch)
        }
    } else {
        on(hop_ptr == 0)
    };
    m[hdr::HOP_PTR] = hop_ptr;
    action
}

/// Where a received SMP goes once [`handle_recv`] let it through (C's
/// `smi_check_forward_dr_smp`).
pub fn check_forward(m: &Mad) -> SmiForward {
    let hop_cnt = m[hdr::HOP_CNT];
    let hop_ptr = m[hdr::HOP_PTR];
    if !direction(m) {
        if hop_ptr != 0 && hop_ptr < hop_cnt {
            return SmiForward::Forward;
        }
        if hop_ptr == hop_cnt {
            return if get16(m, smp::DR_DLID) == LID_PERMISSIVE {
                SmiForward::Send
            } else {
                SmiForward::Local
            };
        }
        if u16::from(hop_ptr) == u16::from(hop_cnt) + 1 {
            return SmiForward::Send;
        }
    } else {
        if (2..=hop_cnt).contains(&hop_ptr) {
            return SmiForward::Forward;
        }
        if hop_ptr == 1 {
            return if get16(m, smp::DR_SLID) != LID_PERMISSIVE {
                SmiForward::Send
            } else {
                SmiForward::Local
            };
        }
    }
    SmiForward::Local
}

/// Whether an outgoing SMP is for the local agent (C's `smi_check_local_smp`, for a device
/// with `process_mad`).
pub fn is_local(m: &Mad) -> bool {
    !direction(m) && u16::from(m[hdr::HOP_PTR]) == u16::from(m[hdr::HOP_CNT]) + 1
}

/// Whether a returning SMP has reached its requester here (C's
/// `smi_check_local_returning_smp`, for a device with `process_mad`).
pub fn is_local_returning(m: &Mad) -> bool {
    direction(m) && m[hdr::HOP_PTR] == 0
}

/// The hop rules for a directed-route SMP that `port` of a channel adapter with `ports` ports
/// received (C's `handle_ib_smi`); false: drop it.
pub fn received(m: &mut Mad, port: u32, ports: u32) -> bool {
    if handle_recv(m, false, port, ports) == SmiAction::Discard {
        return false;
    }
    match check_forward(m) {
        SmiForward::Local => true,
        SmiForward::Send => handle_send(m, false, port) == SmiAction::Handle && is_local(m),
        // Only switches forward; a channel adapter takes it (C).
        SmiForward::Forward => true,
    }
}

/// Whether a directed-route SMP that `port` is to send has a route that cannot start here
/// (C's `handle_outgoing_dr_smp`: "Invalid directed route", `EINVAL`). Moves the hop pointer
/// as [`handle_send`] when the LID-routed part at this end is empty.
pub fn outgoing_refused(m: &mut Mad, port: u32) -> bool {
    lid_routed_part_empty(m) && handle_send(m, false, port) == SmiAction::Discard
}

#[kernel::macros::kunit_tests(rdma_rs_ib_mad_smi)]
mod tests {
    use super::*;
    use crate::mad::types::{put16, MAD_SIZE};

    fn dr(hop_ptr: u8, hop_cnt: u8, slid: u16, dlid: u16) -> Mad {
        let mut m = [0u8; MAD_SIZE];
        m[hdr::BASE_VERSION] = 1;
        m[hdr::MGMT_CLASS] = 0x81;
        m[hdr::HOP_PTR] = hop_ptr;
        m[hdr::HOP_CNT] = hop_cnt;
        put16(&mut m, smp::DR_SLID, slid);
        put16(&mut m, smp::DR_DLID, dlid);
        m
    }

    #[test]
    fn a_zero_hop_query_is_for_the_local_agent() {
        // `smpquery -D nodeinfo 0`: no hops, both directed-route LIDs permissive.
        let mut m = dr(0, 0, LID_PERMISSIVE, LID_PERMISSIVE);
        assert!(lid_routed_part_empty(&m));
        assert_eq!(handle_send(&mut m, false, 1), SmiAction::Handle);
        assert_eq!(m[hdr::HOP_PTR], 1);
        assert!(is_local(&m));
    }

    #[test]
    fn a_one_hop_query_leaves_through_its_port_only() {
        let mut m = dr(0, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        m[smp::INITIAL_PATH + 1] = 1;
        assert_eq!(handle_send(&mut m, false, 1), SmiAction::Handle);
        assert_eq!(m[hdr::HOP_PTR], 1);
        assert!(!is_local(&m));
        let mut m = dr(0, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        m[smp::INITIAL_PATH + 1] = 2;
        assert_eq!(handle_send(&mut m, false, 1), SmiAction::Discard);
        // A channel adapter does not relay.
        let mut m = dr(1, 2, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_send(&mut m, false, 1), SmiAction::Discard);
        // Too long a path.
        let mut m = dr(0, MAX_PATH_HOPS, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_send(&mut m, false, 1), SmiAction::Discard);
    }

    #[test]
    fn a_received_request_at_the_path_end_is_answered_locally() {
        // One hop, arrived: hop_ptr was moved to 1 by the sender.
        let mut m = dr(1, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Handle);
        // The return path records the port.
        assert_eq!(m[smp::RETURN_PATH + 1], 1);
        assert_eq!(check_forward(&m), SmiForward::Send);
        assert_eq!(handle_send(&mut m, false, 1), SmiAction::Handle);
        assert!(is_local(&m));
        // A request whose sender did not move the hop pointer is dropped.
        let mut m = dr(0, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
    }

    /// The directed-route SMPs a hostile node sends (the `hardening-mad-wire` scenario), as a
    /// channel adapter's receive side judges them: C's `smi_handle_dr_smp_recv`.
    #[test]
    fn malformed_directed_routes_are_dropped_as_c_drops_them() {
        let returning = |hop_ptr, hop_cnt| {
            let mut m = dr(hop_ptr, hop_cnt, LID_PERMISSIVE, LID_PERMISSIVE);
            put16(&mut m, hdr::STATUS, status::SMP_DIRECTION);
            m
        };
        // A path longer than 63 hops, whatever the pointer.
        for cnt in [MAX_PATH_HOPS, 200, 255] {
            let mut m = dr(1, cnt, LID_PERMISSIVE, LID_PERMISSIVE);
            assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
            let mut m = returning(cnt, cnt);
            assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        }
        // Outgoing: a pointer past the count plus one, or 0 with hops to go.
        let mut m = dr(5, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        let mut m = dr(255, 3, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        let mut m = dr(0, 2, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        // Outgoing, the pointer one past the count: for the subnet manager (C14-13:4).
        let mut m = dr(2, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Handle);
        // Outgoing, mid-path: a channel adapter does not relay.
        let mut m = dr(1, 3, LID_PERMISSIVE, LID_PERMISSIVE);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        // Returning with the pointer at 0: for the subnet manager (C14-13:4).
        let mut m = returning(0, 3);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Handle);
        // Returning mid-path: no relay.
        let mut m = returning(2, 3);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        // Returning past the count: only through the port its return path names.
        let mut m = returning(4, 3);
        m[smp::RETURN_PATH + 3] = 2;
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
        let mut m = returning(4, 3);
        m[smp::RETURN_PATH + 3] = 1;
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Handle);
        assert_eq!(m[hdr::HOP_PTR], 3);
        // Returning at hop 1 toward a LID-routed part: only a switch goes on.
        let mut m = dr(1, 3, 5, LID_PERMISSIVE);
        put16(&mut m, hdr::STATUS, status::SMP_DIRECTION);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Discard);
    }

    /// What the MAD layer makes of a received directed-route SMP ([`received`], C's
    /// `handle_ib_smi` on a channel adapter) and of one an agent sends
    /// ([`outgoing_refused`]).
    #[test]
    fn received_and_sent_routes_as_the_mad_layer_takes_them() {
        // The `hardening-mad-wire` SMPs: hop counts 200 and 64, pointer 70 past count 3, a
        // header-only SMP (no permissive DrDLID): dropped.
        for (ptr, cnt) in [(0, 200), (1, 64), (70, 3)] {
            let mut m = dr(ptr, cnt, LID_PERMISSIVE, LID_PERMISSIVE);
            assert!(!received(&mut m, 1, 1));
        }
        assert!(!received(&mut dr(0, 0, 0, 0), 1, 1));
        // The return bit with pointer 0: for the local agent, hop pointer unchanged.
        let mut m = dr(0, 2, LID_PERMISSIVE, LID_PERMISSIVE);
        put16(&mut m, hdr::STATUS, status::SMP_DIRECTION);
        assert!(received(&mut m, 1, 1));
        assert_eq!(m[hdr::HOP_PTR], 0);
        // A zero-hop request with permissive LIDs: taken, the pointer moved past the count.
        let mut m = dr(0, 0, LID_PERMISSIVE, LID_PERMISSIVE);
        assert!(received(&mut m, 1, 1));
        assert_eq!(m[hdr::HOP_PTR], 1);
        // One hop, arrived: taken, and the return path names the port it came in on.
        let mut m = dr(1, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        assert!(received(&mut m, 1, 1));
        assert_eq!((m[hdr::HOP_PTR], m[smp::RETURN_PATH + 1]), (2, 1));
        // At the path's end with a LID-routed part to go (DrDLID not permissive): dropped.
        let mut m = dr(1, 1, LID_PERMISSIVE, 7);
        assert!(!received(&mut m, 1, 1));
        // Sent: a route that cannot start at port 1 is refused (EINVAL for the sender).
        let mut m = dr(0, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        m[smp::INITIAL_PATH + 1] = 2;
        assert!(outgoing_refused(&mut m, 1));
        let mut m = dr(0, MAX_PATH_HOPS, LID_PERMISSIVE, LID_PERMISSIVE);
        assert!(outgoing_refused(&mut m, 1));
        let mut m = dr(0, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        m[smp::INITIAL_PATH + 1] = 1;
        assert!(!outgoing_refused(&mut m, 1));
        assert_eq!(m[hdr::HOP_PTR], 1);
        // A LID-routed part first (DrSLID not permissive): not this end's to check.
        let mut m = dr(0, MAX_PATH_HOPS, 5, LID_PERMISSIVE);
        assert!(!outgoing_refused(&mut m, 1));
        assert_eq!(m[hdr::HOP_PTR], 0);
    }

    #[test]
    fn a_returning_response_reaches_its_requester() {
        let mut m = dr(1, 1, LID_PERMISSIVE, LID_PERMISSIVE);
        put16(&mut m, hdr::STATUS, status::SMP_DIRECTION);
        assert_eq!(handle_recv(&mut m, false, 1, 1), SmiAction::Handle);
        assert_eq!(m[hdr::HOP_PTR], 0);
        assert_eq!(check_forward(&m), SmiForward::Local);
        assert!(is_local_returning(&m));
    }
}
