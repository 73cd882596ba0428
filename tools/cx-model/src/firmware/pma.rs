//! The performance management agent behind MAD_IFC: PerfMgmt-class GETs of ClassPortInfo,
//! PortCounters and PortCountersExtended, answered from the data path's traffic counters. (The
//! C mlx5_ib sends these to the firmware when the device has no vport counters, which is what
//! the model reports; `/sys/class/infiniband/*/ports/*/counters/` reads them.)

use super::datapath::Counters;

/// Management class of performance management.
pub const CLASS_PERF_MGMT: u8 = 0x04;

/// Attributes.
const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
const ATTR_PORT_COUNTERS: u16 = 0x0012;
const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;

/// Where attribute data starts in a PerfMgmt MAD (after the 24-byte header and 40 reserved).
const DATA: usize = 64;
/// ClassPortInfo capability: the extended (64-bit) counters are supported.
const CAP_EXT_WIDTH: u16 = 0x0200;
/// MAD status: unsupported attribute.
const STATUS_UNSUPPORTED_ATTR: u16 = 0x000c;

fn put32(m: &mut [u8], at: usize, v: u64) {
    // 32-bit counters saturate rather than wrap.
    let v = u32::try_from(v).unwrap_or(u32::MAX);
    m[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn put64(m: &mut [u8], at: usize, v: u64) {
    m[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// Answers a PerfMgmt GET in `m` for `port`; returns the MAD status.
pub fn answer_get(c: &Counters, attr: u16, port: u8, m: &mut [u8; 256]) -> u16 {
    let d = &mut m[DATA..];
    match attr {
        ATTR_CLASS_PORT_INFO => {
            d.fill(0);
            d[0] = 1; // base version
            d[1] = 1; // class version
            d[2..4].copy_from_slice(&CAP_EXT_WIDTH.to_be_bytes());
        }
        ATTR_PORT_COUNTERS => {
            let select = d[1];
            d[4..].fill(0);
            d[1] = if select == 0 { port } else { select };
            // Data counters count 32-bit words.
            put32(d, 24, c.xmit_bytes / 4);
            put32(d, 28, c.rcv_bytes / 4);
            put32(d, 32, c.xmit_packets);
            put32(d, 36, c.rcv_packets);
        }
        ATTR_PORT_COUNTERS_EXT => {
            let select = d[1];
            d[4..].fill(0);
            d[1] = if select == 0 { port } else { select };
            put64(d, 8, c.xmit_bytes / 4);
            put64(d, 16, c.rcv_bytes / 4);
            put64(d, 24, c.xmit_packets);
            put64(d, 32, c.rcv_packets);
            put64(d, 40, c.xmit_packets);
            put64(d, 48, c.rcv_packets);
        }
        _ => return STATUS_UNSUPPORTED_ATTR,
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_in_words_and_packets() {
        let c = Counters {
            xmit_bytes: 4000,
            rcv_bytes: 8000,
            xmit_packets: 3,
            rcv_packets: 5,
        };
        let mut m = [0u8; 256];
        assert_eq!(answer_get(&c, ATTR_PORT_COUNTERS, 1, &mut m), 0);
        let be32 = |m: &[u8; 256], at: usize| u32::from_be_bytes(m[at..at + 4].try_into().unwrap());
        assert_eq!(m[DATA + 1], 1, "port select");
        assert_eq!((be32(&m, DATA + 24), be32(&m, DATA + 28)), (1000, 2000));
        assert_eq!((be32(&m, DATA + 32), be32(&m, DATA + 36)), (3, 5));
        assert_eq!(answer_get(&c, ATTR_PORT_COUNTERS_EXT, 1, &mut m), 0);
        let be64 = |m: &[u8; 256], at: usize| u64::from_be_bytes(m[at..at + 8].try_into().unwrap());
        assert_eq!((be64(&m, DATA + 8), be64(&m, DATA + 32)), (1000, 5));
        assert_eq!(answer_get(&c, ATTR_CLASS_PORT_INFO, 1, &mut m), 0);
        assert_eq!(u16::from_be_bytes([m[DATA + 2], m[DATA + 3]]), CAP_EXT_WIDTH);
        assert_eq!(answer_get(&c, 0x99, 1, &mut m), STATUS_UNSUPPORTED_ATTR);
    }
}
