// SPDX-License-Identifier: GPL-2.0

//! The device attributes of an mlx5 RDMA device, from the HCA's capability pages, as
//! `mlx5_ib_query_device` computes them for a native InfiniBand function.

use ib_core::attrs::DeviceAttr;
use mlx5_core::auxdev::{FunctionInfo, HcaCaps};

mlx5_core::layout! {
    /// The general capability fields the device attributes come from (`cmd_hca_cap`, as far as
    /// its last field used here).
    output GenCaps[0x68] {
        log_max_srq_sz: 0x80, 8;
        log_max_qp_sz: 0x88, 8;
        log_max_qp: 0x9b, 5;
        log_max_srq: 0xab, 5;
        log_max_cq_sz: 0xc8, 8;
        log_max_cq: 0xdb, 5;
        log_max_mkey: 0xea, 6;
        log_max_ra_req_qp: 0x14a, 6;
        log_max_ra_res_qp: 0x15a, 6;
        ib_virt: 0x1a2, 1;
        local_ca_ack_delay: 0x1ab, 5;
        port_type: 0x1b6, 2;
        num_ports: 0x1b8, 8;
        log_max_msg: 0x1c3, 5;
        ipoib_basic_offloads: 0x204, 1;
        umr_modify_entity_size_disabled: 0x207, 1;
        atomic: 0x21e, 1;
        apm: 0x22e, 1;
        imaicl: 0x231, 1;
        qkv: 0x236, 1;
        pkv: 0x237, 1;
        xrc: 0x23c, 1;
        log_pg_sz: 0x258, 8;
        max_wqe_sz_sq: 0x290, 16;
        max_wqe_sz_rq: 0x2b0, 16;
        log_max_pd: 0x32b, 5;
    }

    /// The atomic capability fields (`atomic_caps`, as far as used).
    output AtomicCaps[0x18] {
        atomic_req_8b_endianness_mode: 0x40, 2;
        atomic_operations: 0x90, 16;
        atomic_size_qp: 0xb0, 16;
    }
}

/// `IB_DEVICE_*` capability bits mlx5 reports.
mod cap {
    pub(super) const BAD_PKEY_CNTR: u64 = 1 << 1;
    pub(super) const BAD_QKEY_CNTR: u64 = 1 << 2;
    pub(super) const AUTO_PATH_MIG: u64 = 1 << 4;
    pub(super) const CHANGE_PHY_PORT: u64 = 1 << 5;
    pub(super) const PORT_ACTIVE_EVENT: u64 = 1 << 10;
    pub(super) const SYS_IMAGE_GUID: u64 = 1 << 11;
    pub(super) const RC_RNR_NAK_GEN: u64 = 1 << 12;
    pub(super) const MEM_WINDOW: u64 = 1 << 17;
    pub(super) const UD_IP_CSUM: u64 = 1 << 18;
    pub(super) const XRC: u64 = 1 << 20;
    pub(super) const MEM_MGT_EXTENSIONS: u64 = 1 << 21;
    pub(super) const MEM_WINDOW_TYPE_2B: u64 = 1 << 24;
}

/// Whether the function's ports are InfiniBand ports served through MAD_IFC (port type IB, no
/// IB virtualization), the only kind this driver handles so far (C's `mlx5_use_mad_ifc`).
pub(crate) fn is_native_ib(caps: &HcaCaps) -> bool {
    let c = GenCaps::from_bytes(&caps.general);
    c.port_type() == 0 && c.ib_virt() == 0
}

/// Largest message, for `query_port` (`1 << log_max_msg`).
pub(crate) fn max_msg_sz(caps: &HcaCaps) -> u32 {
    pow2(GenCaps::from_bytes(&caps.general).log_max_msg())
}

/// `1 << v`, saturated (firmware-reported logs are small, but not trusted to be).
fn pow2(v: u64) -> u32 {
    1u32.checked_shl(v as u32).unwrap_or(u32::MAX)
}

/// The device attributes, without the parts MADs report (system image GUID, vendor id) and the
/// P_Key count, which the caller fills in.
pub(crate) fn device_attr(caps: &HcaCaps, info: &FunctionInfo) -> DeviceAttr {
    let c = GenCaps::from_bytes(&caps.general);
    let mut flags =
        cap::CHANGE_PHY_PORT | cap::PORT_ACTIVE_EVENT | cap::SYS_IMAGE_GUID | cap::RC_RNR_NAK_GEN;
    for (on, bit) in [
        (c.pkv(), cap::BAD_PKEY_CNTR),
        (c.qkv(), cap::BAD_QKEY_CNTR),
        (c.apm(), cap::AUTO_PATH_MIG),
        (c.xrc(), cap::XRC),
        (c.imaicl(), cap::MEM_WINDOW | cap::MEM_WINDOW_TYPE_2B),
        (
            u64::from(c.umr_modify_entity_size_disabled() == 0),
            cap::MEM_MGT_EXTENSIONS,
        ),
        (c.ipoib_basic_offloads(), cap::UD_IP_CSUM),
    ] {
        if on != 0 {
            flags |= bit;
        }
    }
    // A send WQE has a control and a remote-address segment before its data segments, of at
    // most 512 bytes; a receive WQE is all data segments (16 bytes each).
    let max_wqe_sq = c.max_wqe_sz_sq().min(512) as u32;
    let max_send_sge = max_wqe_sq.saturating_sub(32) / 16;
    let max_recv_sge = c.max_wqe_sz_rq() as u32 / 16;
    DeviceAttr {
        fw_ver: (u64::from(info.fw_major) << 32)
            | (u64::from(info.fw_minor) << 16)
            | u64::from(info.fw_subminor),
        max_mr_size: u64::MAX,
        page_size_cap: !((1u64 << c.log_pg_sz().min(63)) - 1),
        vendor_part_id: info.device_id.into(),
        hw_ver: info.revision.into(),
        max_qp: pow2(c.log_max_qp()),
        // A send WQE takes at most 256 bytes, a WQE basic block 64: C's `mlx5_ib_calc_max_qp_wr`.
        max_qp_wr: pow2(c.log_max_qp_sz()) / 4,
        device_cap_flags: flags,
        max_send_sge,
        max_recv_sge,
        max_cq: pow2(c.log_max_cq()),
        max_cqe: pow2(c.log_max_cq_sz()).saturating_sub(1),
        max_mr: pow2(c.log_max_mkey()),
        max_pd: pow2(c.log_max_pd()),
        max_qp_rd_atom: pow2(c.log_max_ra_req_qp()),
        max_qp_init_rd_atom: pow2(c.log_max_ra_res_qp()),
        atomic_cap: atomic_cap(caps),
        max_srq: pow2(c.log_max_srq()),
        max_srq_wr: pow2(c.log_max_srq_sz()).saturating_sub(1),
        local_ca_ack_delay: c.local_ca_ack_delay() as u8,
        ..DeviceAttr::default()
    }
}

/// `IB_ATOMIC_HCA` (1) when the HCA does 8-byte compare-swap and fetch-add on QPs in host
/// endianness, else `IB_ATOMIC_NONE` (C's `get_atomic_caps`).
fn atomic_cap(caps: &HcaCaps) -> u8 {
    if GenCaps::from_bytes(&caps.general).atomic() == 0 || caps.atomic.is_empty() {
        return 0;
    }
    let a = AtomicCaps::from_bytes(&caps.atomic);
    let ops = a.atomic_operations() & 0x3 == 0x3;
    let size8 = a.atomic_size_qp() & (1 << 3) != 0;
    u8::from(ops && size8 && a.atomic_req_8b_endianness_mode() != 0)
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_caps)]
mod tests {
    use super::*;
    use kernel::prelude::*;

    fn caps_with(fields: &[(usize, usize, u64)]) -> Result<HcaCaps> {
        let mut general = KVec::new();
        general.resize(0x1000, 0, GFP_KERNEL)?;
        for &(bit, width, v) in fields {
            mlx5_core::ifc::set_bits(&mut general, bit, width, v);
        }
        Ok(HcaCaps {
            general,
            atomic: KVec::new(),
        })
    }

    #[test]
    fn attributes_follow_the_c_formulas() -> Result {
        let caps = caps_with(&[
            (0x88, 8, 16),     // log_max_qp_sz
            (0x9b, 5, 18),     // log_max_qp
            (0xc8, 8, 22),     // log_max_cq_sz
            (0x290, 16, 1024), // max_wqe_sz_sq
            (0x2b0, 16, 512),  // max_wqe_sz_rq
            (0x237, 1, 1),     // pkv
            (0x258, 8, 12),    // log_pg_sz
        ])?;
        let info = FunctionInfo {
            fw_major: 16,
            fw_minor: 35,
            fw_subminor: 2000,
            vendor_id: 0x15b3,
            device_id: 0x1017,
            revision: 0,
            board_id: [0; 16],
        };
        let a = device_attr(&caps, &info);
        assert_eq!(a.fw_ver, (16 << 32) | (35 << 16) | 2000);
        assert_eq!((a.max_qp, a.max_qp_wr), (1 << 18, 1 << 14));
        assert_eq!(a.max_cqe, (1 << 22) - 1);
        assert_eq!((a.max_send_sge, a.max_recv_sge), (30, 32));
        assert_eq!(a.device_cap_flags, 0x1c20 | 0x2 | cap::MEM_MGT_EXTENSIONS);
        assert_eq!(a.page_size_cap, !0xfff);
        assert_eq!(a.vendor_part_id, 0x1017);
        assert_eq!(a.atomic_cap, 0);
        Ok(())
    }
}
