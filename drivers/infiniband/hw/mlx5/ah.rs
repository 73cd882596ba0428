// SPDX-License-Identifier: GPL-2.0

//! Address handles of an InfiniBand port (C's `mlx5_ib_create_ah` with `create_ib_ah`): the
//! address vector a UD send copies into its datagram segment, encoded once at creation in
//! C's `struct mlx5_av` layout (48 bytes, big-endian fields).
//!
//! `mlx5_av` byte offsets: 0 Q_Key, 8 destination QP (with the extended-AV bit), 12
//! `stat_rate_sl` (rate << 4 | SL), 13 `fl_mlid` (source path bits), 14 remote LID, 24
//! traffic class, 25 hop limit, 28 `grh_gid_fl` (GRH flag bit 30, source GID index << 20,
//! flow label), 32 remote GID.

use ib_core::verbs::types::AhAttr;
use kernel::prelude::*;

/// Size of `struct mlx5_av`.
pub(crate) const AV_SIZE: usize = 48;

/// The `grh_gid_fl` bit saying the packets carry a GRH.
const AV_GRH: u32 = 1 << 30;

/// `IB_RATE_*` values the rate encoding names.
const RATE_2_5_GBPS: u8 = 2;
const RATE_800_GBPS: u8 = 23;
const RATE_1600_GBPS: u8 = 25;
/// `MLX5_STAT_RATE_OFFSET`.
const STAT_RATE_OFFSET: u8 = 5;

/// The device's encoding of an IB static rate (C's `ib_to_mlx5_rate_map`).
fn rate_map(rate: u8) -> u8 {
    match rate {
        0 => 0,
        // IB_RATE_56_GBPS, 25, 100, 200, 50, 400.
        12 => 1,
        15 => 2,
        16 => 3,
        17 => 4,
        20 => 5,
        21 => 6,
        _ => rate.wrapping_add(STAT_RATE_OFFSET),
    }
}

/// C's `mlx5_to_ib_rate_map`: the IB rate (`IB_RATE_*`) of a device's static rate field, the
/// inverse of `rate_map` (0: the port's current rate).
pub(crate) fn ib_rate(mlx5_rate: u8) -> u8 {
    match mlx5_rate {
        0 => 0,
        1 => 12,
        2 => 15,
        3 => 16,
        4 => 17,
        5 => 20,
        6 => 21,
        _ => mlx5_rate.wrapping_sub(STAT_RATE_OFFSET),
    }
}

/// The static rate field of an address vector (C's `mlx5r_ib_rate`): 0 for the port's
/// current rate, else the fastest rate at most `rate` that `stat_rate_support` (the HCA
/// capability bit mask) names. `EINVAL` for a value that is not an IB rate.
pub(crate) fn stat_rate(rate: u8, stat_rate_support: u32) -> Result<u8> {
    if rate == 0 || rate == RATE_800_GBPS || rate == RATE_1600_GBPS {
        return Ok(0);
    }
    if !(RATE_2_5_GBPS..=RATE_1600_GBPS).contains(&rate) {
        return Err(EINVAL);
    }
    let mut r = rate;
    while r != 0 && (1u32 << rate_map(r)) & stat_rate_support == 0 {
        r -= 1;
    }
    Ok(rate_map(r))
}

/// The address vector of `attr` on an IB port (the key and destination QP fields stay 0:
/// each send fills them).
pub(crate) fn encode_av(attr: &AhAttr, stat_rate_support: u32) -> Result<[u8; AV_SIZE]> {
    let mut av = [0u8; AV_SIZE];
    if let Some(grh) = &attr.grh {
        av[32..48].copy_from_slice(&grh.dgid.0);
        let fl = (grh.flow_label & 0xf_ffff) | AV_GRH | (u32::from(grh.sgid_index) << 20);
        av[28..32].copy_from_slice(&fl.to_be_bytes());
        av[25] = grh.hop_limit;
        av[24] = grh.traffic_class;
    }
    av[12] = stat_rate(attr.static_rate, stat_rate_support)? << 4;
    av[14..16].copy_from_slice(&attr.dlid.to_be_bytes());
    av[13] = attr.src_path_bits & 0x7f;
    av[12] |= attr.sl & 0xf;
    Ok(av)
}

/// An address handle's driver state: its address vector.
pub(crate) struct Mlx5Ah {
    /// The `mlx5_av` image.
    pub(crate) av: [u8; AV_SIZE],
}

/// Creates an address handle (no firmware command: the AV lives in the driver).
pub(crate) fn create(attr: &AhAttr, stat_rate_support: u32) -> Result<Mlx5Ah> {
    Ok(Mlx5Ah {
        av: encode_av(attr, stat_rate_support)?,
    })
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_ah)]
mod tests {
    use super::*;
    use ib_core::{attrs::Gid, verbs::types::GlobalRoute};

    #[test]
    fn lid_only_address_vector() -> Result {
        let attr = AhAttr {
            dlid: 0x1234,
            sl: 0x13,
            src_path_bits: 0xff,
            port_num: 1,
            ..AhAttr::default()
        };
        let av = encode_av(&attr, 0)?;
        let mut want = [0u8; AV_SIZE];
        // SL masked to 4 bits, path bits to 7, the LID big-endian; no GRH.
        want[12] = 0x03;
        want[13] = 0x7f;
        want[14] = 0x12;
        want[15] = 0x34;
        assert_eq!(av, want);
        Ok(())
    }

    #[test]
    fn grh_address_vector() -> Result {
        let mut dgid = [0u8; 16];
        for (i, b) in dgid.iter_mut().enumerate() {
            *b = 0xf0 | i as u8;
        }
        let attr = AhAttr {
            dlid: 7,
            sl: 2,
            static_rate: 0,
            port_num: 1,
            grh: Some(GlobalRoute {
                dgid: Gid(dgid),
                flow_label: 0xabcde,
                sgid_index: 3,
                hop_limit: 64,
                traffic_class: 0x20,
                roce_dmac: None,
            }),
            ..AhAttr::default()
        };
        let av = encode_av(&attr, 0)?;
        assert_eq!(&av[12..16], &[0x02, 0, 0, 7]);
        assert_eq!((av[24], av[25]), (0x20, 64));
        // 1 << 30 | 3 << 20 | 0xabcde.
        assert_eq!(&av[28..32], &[0x40, 0x3a, 0xbc, 0xde]);
        assert_eq!(&av[32..48], &dgid);
        assert_eq!(&av[0..12], &[0u8; 12]);
        Ok(())
    }

    #[test]
    fn static_rates_as_c() {
        // Port current (and the rates past the map) encode as 0; a bad value is EINVAL.
        assert_eq!(stat_rate(0, 0), Ok(0));
        assert_eq!(stat_rate(RATE_800_GBPS, 0), Ok(0));
        assert_eq!(stat_rate(1, 0xffff), Err(EINVAL));
        assert_eq!(stat_rate(26, 0xffff), Err(EINVAL));
        // 10 Gb/s (3) is 3 + 5 = 8 when supported; else the next slower supported one.
        assert_eq!(stat_rate(3, 1 << 8), Ok(8));
        assert_eq!(stat_rate(3, 1 << 7), Ok(7));
        // 56 Gb/s (12) is 1.
        assert_eq!(stat_rate(12, 1 << 1), Ok(1));
        // Nothing supported: down to port current.
        assert_eq!(stat_rate(3, 0), Ok(0));
    }

    #[test]
    fn rates_read_back_as_c() {
        // The inverse of the encoding, for every IB rate the map names.
        for rate in [
            0u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        ] {
            assert_eq!(ib_rate(rate_map(rate)), rate);
        }
    }
}
