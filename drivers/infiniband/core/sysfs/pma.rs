// SPDX-License-Identifier: GPL-2.0

//! A port's performance counters as sysfs shows them in `ports/<N>/counters/` (C's
//! `show_pma_counter` and its tables in `sysfs.c`): each file is one PerfMgmt `Get` through the
//! driver's `process_mad`, of PortCounters or, for the wide counters of a device whose
//! ClassPortInfo says it has them, PortCountersExtended.

use crate::{
    device::ib_device::IbDevice,
    mad::types::{class, flags, get16, get32, get64, hdr, method, result, MAD_SIZE},
};
use kernel::prelude::*;

/// PerfMgmt attributes.
const CLASS_PORT_INFO: u16 = 0x0001;
const PORT_COUNTERS: u16 = 0x0012;
const PORT_COUNTERS_EXT: u16 = 0x001d;
/// ClassPortInfo capabilities: the extended counters, with (`EXT_WIDTH`) and without
/// (`EXT_WIDTH_NOIETF`) the unicast and multicast ones.
const CAP_EXT_WIDTH: u16 = 1 << 9;
const CAP_EXT_WIDTH_NOIETF: u16 = 1 << 10;
/// Where a PerfMgmt attribute starts in the MAD, and its PortSelect byte.
const PMA_DATA: usize = 64;
const PORT_SELECT: usize = 65;

/// One file of `counters/`: its name, the attribute it reads, and its place there (bit offset
/// from the attribute's start, width in bits).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PmaCounter {
    pub(crate) name: &'static CStr,
    attr: u16,
    offset: u16,
    width: u8,
}

const fn pc(name: &'static CStr, offset: u16, width: u8) -> PmaCounter {
    PmaCounter {
        name,
        attr: PORT_COUNTERS,
        offset,
        width,
    }
}

const fn ext(name: &'static CStr, offset: u16) -> PmaCounter {
    PmaCounter {
        name,
        attr: PORT_COUNTERS_EXT,
        offset,
        width: 64,
    }
}

/// The error counters every table starts with, in C's order.
macro_rules! errors {
    () => {
        [
            pc(c"symbol_error", 32, 16),
            pc(c"link_error_recovery", 48, 8),
            pc(c"link_downed", 56, 8),
            pc(c"port_rcv_errors", 64, 16),
            pc(c"port_rcv_remote_physical_errors", 80, 16),
            pc(c"port_rcv_switch_relay_errors", 96, 16),
            pc(c"port_xmit_discards", 112, 16),
            pc(c"port_xmit_constraint_errors", 128, 8),
            pc(c"port_rcv_constraint_errors", 136, 8),
            pc(c"local_link_integrity_errors", 152, 4),
            pc(c"excessive_buffer_overrun_errors", 156, 4),
            pc(c"VL15_dropped", 176, 16),
        ]
    };
}

const fn join<const A: usize, const B: usize, const N: usize>(
    a: [PmaCounter; A],
    b: [PmaCounter; B],
) -> [PmaCounter; N] {
    let mut out = [pc(c"", 0, 0); N];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// C's `pma_attrs`: 32-bit data counters.
static BASE: [PmaCounter; 17] = join(
    errors!(),
    [
        pc(c"port_xmit_data", 192, 32),
        pc(c"port_rcv_data", 224, 32),
        pc(c"port_xmit_packets", 256, 32),
        pc(c"port_rcv_packets", 288, 32),
        pc(c"port_xmit_wait", 320, 32),
    ],
);

/// C's `pma_attrs_ext`: 64-bit data counters with unicast and multicast.
static EXT: [PmaCounter; 21] = join(
    errors!(),
    [
        ext(c"port_xmit_data", 64),
        ext(c"port_rcv_data", 128),
        ext(c"port_xmit_packets", 192),
        pc(c"port_xmit_wait", 320, 32),
        ext(c"port_rcv_packets", 256),
        ext(c"unicast_rcv_packets", 384),
        ext(c"unicast_xmit_packets", 320),
        ext(c"multicast_rcv_packets", 512),
        ext(c"multicast_xmit_packets", 448),
    ],
);

/// C's `pma_attrs_noietf`: 64-bit data counters only.
static NOIETF: [PmaCounter; 17] = join(
    errors!(),
    [
        ext(c"port_xmit_data", 64),
        ext(c"port_rcv_data", 128),
        ext(c"port_xmit_packets", 192),
        ext(c"port_rcv_packets", 256),
        pc(c"port_xmit_wait", 320, 32),
    ],
);

/// A PerfMgmt `Get` of `attr` for `port` through the driver (C's `get_perf_mad`): the answer's
/// MAD, `EINVAL` unless the driver replied.
fn get_perf_mad(dev: &IbDevice, port: u32, attr: u16) -> Result<KBox<[u8; MAD_SIZE]>> {
    let ops = dev.ops();
    if !ops.has_process_mad() {
        return Err(ENOSYS);
    }
    let mut inp = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
    let mut out = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
    inp[hdr::BASE_VERSION] = 1;
    inp[hdr::MGMT_CLASS] = class::PERF_MGMT;
    inp[hdr::CLASS_VERSION] = 1;
    inp[hdr::METHOD] = method::GET;
    inp[hdr::ATTR_ID..hdr::ATTR_ID + 2].copy_from_slice(&attr.to_be_bytes());
    if attr != CLASS_PORT_INFO {
        inp[PORT_SELECT] = port as u8;
    }
    let want = result::SUCCESS | result::REPLY;
    if ops.process_mad(flags::IGNORE_MKEY, port, None, &inp, &mut out) & want != want {
        return Err(EINVAL);
    }
    Ok(out)
}

/// The counter table of `port` (C's `get_counter_table`): from the capabilities its
/// ClassPortInfo reports, the 32-bit table if it cannot be read.
pub(crate) fn counter_table(dev: &IbDevice, port: u32) -> &'static [PmaCounter] {
    let Ok(cpi) = get_perf_mad(dev, port, CLASS_PORT_INFO) else {
        return &BASE;
    };
    let caps = get16(&cpi[..], PMA_DATA + 2);
    if caps & CAP_EXT_WIDTH != 0 {
        &EXT
    } else if caps & CAP_EXT_WIDTH_NOIETF != 0 {
        &NOIETF
    } else {
        &BASE
    }
}

/// Writes counter `c` of `port` as C's `show_pma_counter` prints it.
pub(crate) fn show(
    dev: &IbDevice,
    port: u32,
    c: &PmaCounter,
    buf: &mut kernel::sysfs_attrs::ShowBuffer<'_>,
) -> Result {
    let m = get_perf_mad(dev, port, c.attr)?;
    let at = PMA_DATA + usize::from(c.offset / 8);
    let byte = m.get(at).copied().ok_or(EINVAL)?;
    match c.width {
        4 => {
            let shift = 4u16.saturating_sub(c.offset % 8);
            buf.emit(fmt!("{}\n", (byte >> shift) & 0xf))
        }
        8 => buf.emit(fmt!("{}\n", byte)),
        16 => buf.emit(fmt!("{}\n", get16(&m[..], at))),
        32 => buf.emit(fmt!("{}\n", get32(&m[..], at))),
        64 => buf.emit(fmt!("{}\n", get64(&m[..], at))),
        _ => Ok(()),
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_pma)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_cs_files_in_cs_order() {
        assert_eq!(BASE.len(), 17);
        assert_eq!(EXT.len(), 21);
        assert_eq!(NOIETF.len(), 17);
        assert_eq!(BASE[0].name, c"symbol_error");
        assert_eq!(BASE[16].name, c"port_xmit_wait");
        assert_eq!(EXT[15].name, c"port_xmit_wait");
        assert_eq!(EXT[20].name, c"multicast_xmit_packets");
        assert_eq!((EXT[12].attr, EXT[12].offset), (PORT_COUNTERS_EXT, 64));
        assert!(BASE.iter().all(|c| !c.name.is_empty()));
    }
}
