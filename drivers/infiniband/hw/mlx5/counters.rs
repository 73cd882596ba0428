// SPDX-License-Identifier: GPL-2.0

//! Hardware counters of the ports (C's `counters.c`, the part behind `hw_counters` and `rdma
//! stat show`): a Q counter set per port, allocated when the device registers (ALLOC_Q_COUNTER,
//! uid 0xffff when the device has DEVX user contexts, else 0), freed when the driver's state
//! goes (DEALLOC_Q_COUNTER, in reverse); every QP counts on its port's set (RST2INIT's
//! `counter_set_id`, see `qp.rs`); a read is one QUERY_Q_COUNTER of the set.
//!
//! The names, in C's order: the basic Q counters, `out_of_sequence`, the retransmission group
//! and the enhanced error group when the device has them, the RoCE accelerator counters (always,
//! as 7.3's C), then the optional per-operation counters, described but hidden and disabled
//! (C reads them from flow counters that no QP here is bound to: they read 0). Not here: the
//! congestion counters (`cc_query_allowed`: QUERY_CONG_STATISTICS), `rx_icrc_encapsulated`
//! (PCAM/PPCNT), the CNP operation counters (flow table capabilities), switchdev's vport
//! counters, and counters bound to QPs (`rdma stat qp`).

use ib_core::hw_stats::{HwStatDesc, HwStatsDesc};
use kernel::prelude::*;
use mlx5_core::{
    cmd::commands::Commands,
    ifc::verbs::{
        AllocQCounter, AllocQCounterIn, DeallocQCounter, DeallocQCounterIn, QueryQCounter,
        QueryQCounterIn, QueryQCounterOut, SHARED_RESOURCE_UID,
    },
    ifc::GeneralCaps,
};

/// A Q counter: its name and the byte offset of its 32-bit value in QUERY_Q_COUNTER's output
/// (`query_q_counter_out` in `mlx5_ifc.h`).
struct QCounter {
    name: &'static CStr,
    offset: usize,
}

const fn q(name: &'static CStr, offset: usize) -> QCounter {
    QCounter { name, offset }
}

/// Always there.
const BASIC: [QCounter; 5] = [
    q(c"rx_write_requests", 0x10),
    q(c"rx_read_requests", 0x18),
    q(c"rx_atomic_requests", 0x20),
    q(c"rx_dct_connect", 0x28),
    q(c"out_of_buffer", 0x30),
];

/// With `out_of_seq_cnt`.
const OUT_OF_SEQ: [QCounter; 1] = [q(c"out_of_sequence", 0x38)];

/// With `retransmission_q_counters`.
const RETRANS: [QCounter; 5] = [
    q(c"duplicate_request", 0x40),
    q(c"rnr_nak_retry_err", 0x48),
    q(c"packet_seq_err", 0x50),
    q(c"implied_nak_seq_err", 0x58),
    q(c"local_ack_timeout_err", 0x60),
];

/// With `enhanced_error_q_counters`.
const EXTENDED_ERR: [QCounter; 10] = [
    q(c"resp_local_length_error", 0x78),
    q(c"resp_cqe_error", 0x90),
    q(c"req_cqe_error", 0x94),
    q(c"req_remote_invalid_request", 0xa0),
    q(c"req_remote_access_errors", 0xa8),
    q(c"resp_remote_access_errors", 0xac),
    q(c"resp_cqe_flush_error", 0xbc),
    q(c"req_cqe_flush_error", 0xc0),
    q(c"req_transport_retries_exceeded", 0xb4),
    q(c"req_rnr_retries_exceeded", 0x70),
];

/// Always there in 7.3 (no capability check).
const ROCE_ACCL: [QCounter; 5] = [
    q(c"roce_adp_retrans", 0xc8),
    q(c"roce_adp_retrans_to", 0xcc),
    q(c"roce_slow_restart", 0xd0),
    q(c"roce_slow_restart_cnps", 0xd4),
    q(c"roce_slow_restart_trans", 0xd8),
];

/// The optional per-operation counters C always describes (hidden, disabled).
const OP_COUNTERS: [&CStr; 5] = [
    c"cc_rx_ce_pkts",
    c"rdma_tx_packets",
    c"rdma_tx_bytes",
    c"rdma_rx_packets",
    c"rdma_rx_bytes",
];

/// C's `RDMA_HW_STATS_DEFAULT_LIFESPAN`, in milliseconds.
const LIFESPAN_MS: u32 = 10;

/// The most ports a function has here (the QP context keeps one set per port).
pub(crate) const MAX_PORTS: usize = 4;

/// The ports' Q counter sets and what a read returns; dropping it frees the sets.
pub(crate) struct Counters {
    cmds: Commands,
    /// The Q counters, in order (the same for every port).
    q: KVec<&'static QCounter>,
    /// Each port's set (index: port - 1).
    sets: KVec<u8>,
}

impl Counters {
    /// Allocates a set per port (C's `mlx5_ib_alloc_counters`); `None` when the device has no
    /// Q counters (`max_qp_cnt` 0: no `hw_counters`, `rdma stat show` is `EINVAL`). On a
    /// failure the sets already allocated are freed again, in reverse.
    pub(crate) fn alloc(cmds: &Commands, gen: &GeneralCaps, ports: u8) -> Result<Option<Self>> {
        if gen.max_qp_cnt() == 0 {
            return Ok(None);
        }
        let mut q = KVec::new();
        let groups: [(&'static [QCounter], bool); 5] = [
            (&BASIC, true),
            (&OUT_OF_SEQ, gen.out_of_seq_cnt() != 0),
            (&RETRANS, gen.retransmission_q_counters() != 0),
            (&EXTENDED_ERR, gen.enhanced_error_q_counters() != 0),
            (&ROCE_ACCL, true),
        ];
        for (group, present) in groups {
            if present {
                for c in group {
                    q.push(c, GFP_KERNEL)?;
                }
            }
        }
        let mut this = Self {
            cmds: cmds.clone(),
            q,
            sets: KVec::with_capacity(usize::from(ports), GFP_KERNEL)?,
        };
        // Shared with every user context when the device has DEVX ones (C's `is_shared`).
        let uid = if gen.log_max_uctx() != 0 {
            SHARED_RESOURCE_UID
        } else {
            0
        };
        for port in 1..=ports {
            let out = cmds
                .exec::<AllocQCounter>(&AllocQCounterIn::new().uid(uid)?)
                .inspect_err(|e| {
                    pr_warn!(
                        "couldn't allocate queue counter for port {}, err {}\n",
                        port,
                        e.to_errno()
                    );
                })?;
            // `this` drops on an error: the sets so far are freed.
            this.sets.push(out.counter_set_id() as u8, GFP_KERNEL)?;
        }
        Ok(Some(this))
    }

    /// The set of `port` (0 for a port the device does not have: counted nowhere).
    pub(crate) fn set_id(&self, port: u32) -> u8 {
        usize::try_from(port)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .and_then(|i| self.sets.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// The sets by port, for QP contexts (0 past the ports).
    pub(crate) fn set_ids(&self) -> [u8; MAX_PORTS] {
        let mut ids = [0; MAX_PORTS];
        for (id, set) in ids.iter_mut().zip(self.sets.iter()) {
            *id = *set;
        }
        ids
    }

    /// Number of counters described: the Q counters, then the optional ones.
    fn count(&self) -> usize {
        self.q.len() + OP_COUNTERS.len()
    }

    /// The counters of a port (C's `mlx5_ib_alloc_hw_port_stats`).
    pub(crate) fn describe(&self) -> Result<HwStatsDesc> {
        let mut descs = KVec::with_capacity(self.count(), GFP_KERNEL)?;
        for c in self.q.iter() {
            descs.push(
                HwStatDesc {
                    name: c.name,
                    optional: false,
                    disabled: false,
                },
                GFP_KERNEL,
            )?;
        }
        for name in OP_COUNTERS {
            descs.push(
                HwStatDesc {
                    name,
                    optional: true,
                    disabled: true,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(HwStatsDesc {
            descs,
            lifespan_ms: LIFESPAN_MS,
        })
    }

    /// Reads `port`'s counters into `values` (C's `mlx5_ib_get_hw_stats`): for `index` 0 or
    /// past the Q counters, every counter (the optional ones stay 0: no flow counter is bound);
    /// returns what C returns, which decides whether the core treats the values as fresh: the
    /// number of all counters for a full read, the number of Q counters for a read of one of
    /// them (1 to its last), the index for an optional counter.
    pub(crate) fn read(&self, port: u32, values: &mut [u64], index: usize) -> Result<usize> {
        let (nq, n) = (self.q.len(), self.count());
        if index > n {
            return Err(EINVAL);
        }
        if index >= nq && index < n {
            // One optional counter: nothing bound, its value stays.
            return Ok(index);
        }
        let set = self.set_id(port);
        if set == 0 {
            return Err(EINVAL);
        }
        let out: QueryQCounterOut = self
            .cmds
            .exec::<QueryQCounter>(&QueryQCounterIn::new().counter_set_id(set.into())?)?;
        let bytes = out.as_bytes();
        for (v, c) in values.iter_mut().zip(self.q.iter()) {
            // Our offsets lie inside the output (a 256-byte layout); the value is the device's.
            let b = bytes.get(c.offset..c.offset + 4).ok_or(EINVAL)?;
            *v = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        }
        if index > 0 && index < nq {
            return Ok(nq);
        }
        Ok(n)
    }
}

impl Drop for Counters {
    /// Frees the sets, last port first (C's `mlx5_ib_dealloc_counters`; a failure is only
    /// logged by the command interface).
    fn drop(&mut self) {
        while let Some(set) = self.sets.pop() {
            if set == 0 {
                continue;
            }
            if let Ok(input) = DeallocQCounterIn::new().counter_set_id(set.into()) {
                let _ = self.cmds.exec::<DeallocQCounter>(&input);
            }
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_counters)]
mod tests {
    use super::*;

    #[test]
    fn offsets_lie_in_the_query_output_and_names_are_c_names() {
        for group in [&BASIC[..], &OUT_OF_SEQ, &RETRANS, &EXTENDED_ERR, &ROCE_ACCL] {
            for c in group {
                assert!(c.offset + 4 <= QueryQCounterOut::SIZE);
                assert!(c.offset >= 0x10);
            }
        }
        assert_eq!(BASIC[0].name, c"rx_write_requests");
        assert_eq!(EXTENDED_ERR[9].offset, 0x70);
    }
}
