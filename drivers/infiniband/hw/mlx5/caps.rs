// SPDX-License-Identifier: GPL-2.0

//! The device attributes of an mlx5 RDMA device, from the HCA's capability pages, as
//! `mlx5_ib_query_device` computes them for a native InfiniBand function.

use ib_core::attrs::{DeviceAttr, DeviceCap as Cap};
use mlx5_core::{
    auxdev::{FunctionInfo, HcaCaps},
    ifc::{AtomicCaps, GeneralCaps as GenCaps},
};

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
        Cap::ChangePhyPort | Cap::PortActiveEvent | Cap::SysImageGuid | Cap::RcRnrNakGen;
    for (on, bit) in [
        (c.pkv(), Cap::BadPkeyCntr.into()),
        (c.qkv(), Cap::BadQkeyCntr.into()),
        (c.apm(), Cap::AutoPathMig.into()),
        (c.xrc(), Cap::Xrc.into()),
        (c.imaicl(), Cap::MemWindow | Cap::MemWindowType2b),
        (
            u64::from(c.umr_modify_entity_size_disabled() == 0),
            Cap::MemMgtExtensions.into(),
        ),
        (c.ipoib_basic_offloads(), Cap::UdIpCsum.into()),
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

    fn caps_with(c: &GenCaps) -> Result<HcaCaps> {
        let mut general = KVec::new();
        general.resize(0x1000, 0, GFP_KERNEL)?;
        general[..GenCaps::SIZE].copy_from_slice(c.as_bytes());
        Ok(HcaCaps {
            general,
            atomic: KVec::new(),
        })
    }

    #[test]
    fn attributes_follow_the_c_formulas() -> Result {
        let mut c = GenCaps::new();
        c.set_log_max_qp_sz(16)?;
        c.set_log_max_qp(18)?;
        c.set_log_max_cq_sz(22)?;
        c.set_max_wqe_sz_sq(1024)?;
        c.set_max_wqe_sz_rq(512)?;
        c.set_pkv(1)?;
        c.set_log_pg_sz(12)?;
        let caps = caps_with(&c)?;
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
        assert_eq!(u64::from(a.device_cap_flags), 0x1c20 | 0x2 | (1 << 21));
        assert_eq!(a.page_size_cap, !0xfff);
        assert_eq!(a.vendor_part_id, 0x1017);
        assert_eq!(a.atomic_cap, 0);
        Ok(())
    }
}
