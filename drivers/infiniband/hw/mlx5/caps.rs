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

/// `IB_RAW_PACKET_CAP_DELAY_DROP`.
const RAW_PACKET_CAP_DELAY_DROP: u32 = 1 << 3;
/// Most completions a CQ moderation waits for (`MLX5_MAX_CQ_COUNT`).
const MAX_CQ_COUNT: u16 = u16::MAX;
/// Longest CQ moderation period, in microseconds (`MLX5_MAX_CQ_PERIOD`).
const MAX_CQ_PERIOD: u16 = (1 << 12) - 1;

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
    let max_qp = pow2(c.log_max_qp());
    let max_qp_rd_atom = pow2(c.log_max_ra_req_qp());
    let max_mcast_grp = pow2(c.log_max_mcg());
    let max_mcast_qp_attach = c.max_qp_mcg() as u32;
    let mut raw_packet_caps = 0;
    // Raw packet QPs are always supported on a single-port function (C's `raw_support`).
    if c.rq_delay_drop() != 0 && c.general_notification_event() != 0 {
        raw_packet_caps |= RAW_PACKET_CAP_DELAY_DROP;
    }
    let (max_cq_moderation_count, max_cq_moderation_period) = if c.cq_moderation() != 0 {
        (MAX_CQ_COUNT, MAX_CQ_PERIOD)
    } else {
        (0, 0)
    };
    DeviceAttr {
        fw_ver: (u64::from(info.fw_major) << 32)
            | (u64::from(info.fw_minor) << 16)
            | u64::from(info.fw_subminor),
        max_mr_size: u64::MAX,
        page_size_cap: !((1u64 << c.log_pg_sz().min(63)) - 1),
        vendor_part_id: info.device_id.into(),
        hw_ver: info.revision.into(),
        max_qp,
        // A send WQE takes at most 256 bytes, a WQE basic block 64: C's `mlx5_ib_calc_max_qp_wr`.
        max_qp_wr: pow2(c.log_max_qp_sz()) / 4,
        device_cap_flags: flags,
        max_send_sge,
        max_recv_sge,
        max_cq: pow2(c.log_max_cq()),
        max_cqe: pow2(c.log_max_cq_sz()).saturating_sub(1),
        max_mr: pow2(c.log_max_mkey()),
        max_pd: pow2(c.log_max_pd()),
        max_qp_rd_atom,
        max_qp_init_rd_atom: pow2(c.log_max_ra_res_qp()),
        atomic_cap: atomic_cap(caps),
        max_srq: pow2(c.log_max_srq()),
        max_srq_wr: pow2(c.log_max_srq_sz()).saturating_sub(1),
        local_ca_ack_delay: c.local_ca_ack_delay() as u8,
        // A read's scatter list fills a 512-byte WQE after its control and remote-address
        // segments (C's `MLX5_MAX_SGE_RD`).
        max_sge_rd: (512 - 16 - 16) / 16,
        max_res_rd_atom: max_qp_rd_atom.wrapping_mul(max_qp),
        max_mw: if c.imaicl() != 0 {
            pow2(c.log_max_mkey())
        } else {
            0
        },
        max_mcast_grp,
        max_mcast_qp_attach,
        // C multiplies in `int` and stores the wrapped product.
        max_total_mcast_qp_attach: max_mcast_qp_attach.wrapping_mul(max_mcast_grp),
        max_ah: i32::MAX as u32,
        max_srq_sge: max_recv_sge.saturating_sub(1),
        timestamp_mask: 0x7fff_ffff_ffff_ffff,
        hca_core_clock: c.device_frequency_khz(),
        raw_packet_caps,
        max_cq_moderation_count,
        max_cq_moderation_period,
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

/// Size of `struct mlx5_ib_query_device_resp` (7.3: up to `reg_c0`).
pub(crate) const QUERY_DEVICE_RESP_SIZE: usize = 112;

/// `MLX5_IB_QUERY_DEV_RESP_FLAGS_*` and `MLX5_IB_CQE_RES_FORMAT_*`.
mod resp_flags {
    pub(super) const CQE_128B_COMP: u32 = 1 << 0;
    pub(super) const CQE_128B_PAD: u32 = 1 << 1;
    pub(super) const PACKET_BASED_CREDIT_MODE: u32 = 1 << 2;
    pub(super) const SCAT2CQE_DCT: u32 = 1 << 3;
    pub(super) const CQE_FORMAT_HASH: u32 = 1 << 0;
    pub(super) const CQE_FORMAT_CSUM: u32 = 1 << 1;
    pub(super) const CQE_FORMAT_CSUM_STRIDX: u32 = 1 << 2;
}

/// mlx5's part of `EX_QUERY_DEVICE` (`struct mlx5_ib_query_device_resp`) for a response buffer
/// of `outlen` bytes, as `mlx5_ib_query_device` fills it: each member only when the buffer
/// holds it whole, counted in `response_length`. Returns the bytes; the caller copies
/// `min(outlen, 112)` of them.
///
/// The Ethernet offload members (TSO, RSS, multi-packet send, software parsing, tunnels) stay
/// zero: they come from the Ethernet capability page, which an InfiniBand function does not
/// report (`eth_net_offloads` 0) and this driver does not read. Packet pacing needs the QoS
/// page, likewise unread: it stays zero too (see docs/uverbs-c-facts.md).
pub(crate) fn query_device_resp(caps: &HcaCaps, outlen: usize) -> [u8; QUERY_DEVICE_RESP_SIZE] {
    let c = GenCaps::from_bytes(&caps.general);
    let mut r = [0u8; QUERY_DEVICE_RESP_SIZE];
    let put = |r: &mut [u8; QUERY_DEVICE_RESP_SIZE], off: usize, v: u32| {
        r[off..off + 4].copy_from_slice(&v.to_le_bytes())
    };
    // comp_mask and response_length.
    let mut len = 8u32;
    // Members as (offset, size): each counts when the buffer holds it whole.
    let fits = |off: usize, size: usize| off + size <= outlen;
    // tso_caps, rss_caps: zero (Ethernet offloads), but counted.
    for (off, size) in [(8, 8), (16, 16)] {
        if fits(off, size) {
            len += size as u32;
        }
    }
    if fits(32, 8) {
        len += 8;
        if c.cqe_compression() != 0 {
            put(&mut r, 32, c.cqe_compression_max_num() as u32);
            let mut formats = resp_flags::CQE_FORMAT_HASH | resp_flags::CQE_FORMAT_CSUM;
            if c.mini_cqe_resp_stride_index() != 0 {
                formats |= resp_flags::CQE_FORMAT_CSUM_STRIDX;
            }
            put(&mut r, 36, formats);
        }
    }
    // packet_pacing_caps (QoS page), mlx5_ib_support_multi_pkt_send_wqes (Ethernet): zero.
    for (off, size) in [(40, 16), (56, 4)] {
        if fits(off, size) {
            len += size as u32;
        }
    }
    if fits(60, 4) {
        len += 4;
        let mut flags = resp_flags::SCAT2CQE_DCT;
        if c.cqe_compression_128() != 0 {
            flags |= resp_flags::CQE_128B_COMP;
        }
        if c.cqe_128_always() != 0 {
            flags |= resp_flags::CQE_128B_PAD;
        }
        if c.qp_packet_based() != 0 {
            flags |= resp_flags::PACKET_BASED_CREDIT_MODE;
        }
        put(&mut r, 60, flags);
    }
    // sw_parsing_caps (Ethernet): zero.
    if fits(64, 8) {
        len += 8;
    }
    if fits(72, 24) {
        len += 24;
        if c.striding_rq() != 0 {
            put(&mut r, 72, 6);
            put(&mut r, 76, 13);
            put(
                &mut r,
                80,
                if c.ext_stride_num_range() != 0 { 3 } else { 9 },
            );
            put(&mut r, 84, 16);
            // Raw packet QPs (`IB_QPT_RAW_PACKET` 8).
            put(&mut r, 88, 1 << 8);
        }
    }
    // tunnel_offloads_caps (Ethernet): zero.
    if fits(96, 4) {
        len += 4;
    }
    if fits(100, 2) {
        len += 2;
        r[100] = c.log_max_dci_stream_channels() as u8;
        r[101] = c.log_max_dci_errored_streams() as u8;
    }
    // reserved; reg_c0 (only with an offloads-mode eswitch: zero here).
    for (off, size) in [(102, 2), (104, 8)] {
        if fits(off, size) {
            len += size as u32;
        }
    }
    put(&mut r, 4, len);
    r
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

    #[test]
    fn query_device_resp_counts_what_fits() -> Result {
        let caps = caps_with(&GenCaps::new())?;
        // rdma-core 44's 104 bytes: every member up to `reserved`.
        let r = query_device_resp(&caps, 104);
        assert_eq!(r[4..8], 104u32.to_le_bytes());
        assert_eq!(r[60..64], (1u32 << 3).to_le_bytes());
        // 7.3's own 112 bytes, and a buffer that ends inside the flags.
        assert_eq!(query_device_resp(&caps, 112)[4..8], 112u32.to_le_bytes());
        let short = query_device_resp(&caps, 62);
        assert_eq!(short[4..8], 60u32.to_le_bytes());
        assert_eq!(short[60..64], [0; 4]);
        let mut c = GenCaps::new();
        c.set_cqe_compression(1)?;
        c.set_cqe_compression_max_num(64)?;
        c.set_qp_packet_based(1)?;
        let r = query_device_resp(&caps_with(&c)?, 104);
        assert_eq!(r[32..40], [64, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(r[60..64], ((1u32 << 3) | (1 << 2)).to_le_bytes());
        Ok(())
    }
}
