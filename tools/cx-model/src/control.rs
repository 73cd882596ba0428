//! The control channel: line commands that change the device while it runs, for tests.
//!
//! ```text
//! port <n> down | port <n> up     link goes down or comes back; a PORT_CHANGE event is posted
//! health-error <synd> [fatal]     the health buffer reports a syndrome (fatal: recovery required)
//! health-clear                    the health buffer is clean again
//! nic-state <full|disabled|sw-reset>
//!                                 the NIC interface state the init segment reports (other
//!                                 than full: the device is halted, as after a fatal error)
//! remove                          surprise removal: reads return all ones, commands are dropped
//! reset                           a function-level reset, as QEMU's FLR gives it (the firmware
//!                                 forgets everything the driver set up); for a driver unbound
//! page-request <n>                firmware asks for n more pages (n < 0: asks the driver to take
//!                                 back -n pages), through a PAGE_REQUEST event
//! eqe-flood <n>                   floods the async EQ with n PORT_CHANGE events (sub-type 0), as
//!                                 fast as the driver consumes them
//! eqe <role> <type> <sub> [hex]   posts one event queue entry as the device would, whatever it
//!                                 says: to the EQ of <role> (async, cmd, pages, or comp: every
//!                                 completion EQ), of event <type> and sub-type <sub>, with up to
//!                                 28 bytes of event data (hex); for hostile-device tests (unknown
//!                                 types, bogus CQ/QP numbers, ports out of range, stray tokens)
//! mad-inject <dqpn> <sqpn> <slid> <qkey> <count> <hex>
//!                                 a hostile node: <count> datagrams carrying <hex> (any length
//!                                 up to 256 bytes, a malformed MAD or none at all) arrive from
//!                                 the wire for QP <dqpn> (0 and 1: port 1's SMI and GSI QPs)
//!                                 from QP <sqpn> at LID <slid> with Q_Key <qkey>, each through
//!                                 the fabric's checks (VL15 only between QP0s, the Q_Key);
//!                                 what the device sends back to <slid> is kept, not sent
//! mad-replies                     what the device sent to the last injection's <slid> since
//!                                 it: `replies N` and each MAD as class.method.status.
//!                                 rmpp-type.rmpp-status in hex
//! fault <spec>                    adds a fault rule (see --fault)
//! cq-resizes                      how many CQ resizes were done, and the most CQEs one of them
//!                                 found not consumed yet
//! status                          one line describing the device
//! objects                         how many firmware objects exist, by kind (PDs, transport
//!                                 domains, UARs, mkeys, CQs, QPs, SRQs, RMPs, XRC domains)
//! ```
//!
//! `cx-model --control PATH` serves these on a unix socket, one reply line per command.

use crate::device::Device;
use crate::firmware::datapath::{
    self,
    packet::{Body, Packet},
};
use crate::firmware::eq::event;
use crate::firmware::faults::Rule;
use crate::firmware::objects::Kind as ObjKind;
use crate::firmware::port::{PHYS_DISABLED, PHYS_LINK_UP, STATE_ACTIVE, STATE_DOWN};
use crate::firmware::sma::subtype;
use crate::guest_memory::GuestMemory;
use log::info;

fn number(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("bad number {s:?}"))
}

/// Bytes from hex digits (`0011ff`; an odd count is refused).
fn hex_bytes(s: &str) -> Result<Vec<u8>, String> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if !s.is_ascii() || !s.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits in {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| format!("bad hex {s:?}")))
        .collect()
}

/// Runs one control command; returns the reply line or an error line.
pub fn execute(dev: &mut Device, mem: &mut dyn GuestMemory, line: &str) -> Result<String, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["port", n, dir @ ("up" | "down")] => {
            let num = u8::try_from(number(n)?).map_err(|_| "bad port".to_string())?;
            let fw = &mut dev.firmware;
            let port = fw
                .node
                .ports
                .iter_mut()
                .find(|p| p.num == num)
                .ok_or_else(|| format!("no port {num}"))?;
            let up = *dir == "up";
            (port.state, port.phys_state) = if up {
                (STATE_ACTIVE, PHYS_LINK_UP)
            } else {
                (STATE_DOWN, PHYS_DISABLED)
            };
            let mut data = [0u8; 28];
            data[8] = num << 4;
            fw.post_event(
                mem,
                event::PORT_CHANGE,
                if up { subtype::ACTIVE } else { subtype::DOWN },
                &data,
            );
            info!("control: port {num} {dir}");
            Ok(format!("port {num} {dir}"))
        }
        ["health-error", synd, rest @ ..] => {
            let synd = u8::try_from(number(synd)?).map_err(|_| "syndrome is 8 bits".to_string())?;
            if synd == 0 {
                return Err("syndrome 0 means healthy; use health-clear".into());
            }
            let fatal = matches!(rest, ["fatal"]);
            dev.set_health(synd, fatal);
            info!(
                "control: health syndrome {synd:#x}{}",
                if fatal { ", recovery required" } else { "" }
            );
            Ok(format!("health syndrome {synd:#x}"))
        }
        ["nic-state", state] => {
            let v = match *state {
                "full" => 0,
                "disabled" => 1,
                "sw-reset" => 7,
                _ => return Err(format!("nic-state {state:?}: full, disabled or sw-reset")),
            };
            dev.set_nic_state(v);
            info!("control: NIC interface state {state}");
            Ok(format!("nic-state {state}"))
        }
        ["health-clear"] => {
            dev.set_health(0, false);
            Ok("health clear".into())
        }
        ["page-request", n] => {
            let n: i32 = n.parse().map_err(|_| format!("bad page count {n:?}"))?;
            if n == 0 {
                return Err("page-request needs a non-zero count".into());
            }
            let fw = &mut dev.firmware;
            if fw.eqs.for_event(event::PAGE_REQUEST).is_none() {
                return Err("no EQ takes page requests".into());
            }
            fw.pages.request(n);
            // ec_function and function id 0, then the signed page count.
            let mut data = [0u8; 28];
            data[4..8].copy_from_slice(&n.to_be_bytes());
            fw.post_event(mem, event::PAGE_REQUEST, 0, &data);
            Ok(format!("page request {n}"))
        }
        ["eqe-flood", n] => {
            let n = number(n)?;
            if n == 0 {
                return Err("eqe-flood needs a non-zero count".into());
            }
            let fw = &mut dev.firmware;
            if fw.eqs.for_event(event::PORT_CHANGE).is_none() {
                return Err("no EQ takes port events".into());
            }
            let now = fw.start_flood(mem, n);
            info!("control: flood of {n} EQEs, {now} posted at once");
            Ok(format!("eqe flood {n}"))
        }
        ["eqe", role, ty, sub, rest @ ..] => {
            let ty = u8::try_from(number(ty)?).map_err(|_| "event type is 8 bits".to_string())?;
            let sub = u8::try_from(number(sub)?).map_err(|_| "sub-type is 8 bits".to_string())?;
            let data = match rest {
                [] => Vec::new(),
                [hex] => hex_bytes(hex)?,
                _ => return Err("eqe takes one hex data word".into()),
            };
            if data.len() > 28 {
                return Err("event data is at most 28 bytes".into());
            }
            let fw = &mut dev.firmware;
            let eqns = fw.eqs.by_role(role);
            if eqns.is_empty() {
                return Err(format!("no {role} EQ"));
            }
            for &eqn in &eqns {
                if let Some(v) = fw.eqs.post_to(mem, eqn, ty, sub, &data) {
                    fw.irqs.push(v);
                }
            }
            info!("control: EQE type {ty:#x} sub-type {sub:#x} to {role} EQ(s) {eqns:?}");
            Ok(format!("eqe {ty:#x} posted to {} EQ(s)", eqns.len()))
        }
        ["mad-replies"] => {
            // Each MAD as class.method.status.rmpp-type.rmpp-status (hex).
            let r = &dev.firmware.datapath.replies;
            let mut line = format!("replies {}", r.len());
            for d in r {
                let b = |i: usize| d.get(i).copied().unwrap_or(0);
                line += &format!(
                    " {:02x}.{:02x}.{:02x}{:02x}.{:02x}.{:02x}",
                    b(1),
                    b(3),
                    b(4),
                    b(5),
                    b(25),
                    b(27)
                );
            }
            Ok(line)
        }
        ["mad-inject", dqpn, sqpn, slid, qkey, count, hex] => {
            let data = hex_bytes(hex)?;
            if data.len() > 256 {
                return Err("a MAD is at most 256 bytes".into());
            }
            let count = number(count)?;
            if count > 1_000_000 {
                return Err("at most 1000000 datagrams at once".into());
            }
            let fw = &mut dev.firmware;
            let dlid = fw.node.ports.first().map_or(0, |p| p.lid);
            let packet = Packet {
                slid: u16::try_from(number(slid)?).map_err(|_| "a LID is 16 bits".to_string())?,
                dlid,
                sqpn: u32::try_from(number(sqpn)?).map_err(|_| "bad source QP".to_string())?,
                dqpn: u32::try_from(number(dqpn)?).map_err(|_| "bad QP".to_string())?,
                psn: 0,
                body: Body::Send {
                    data,
                    imm: None,
                    qkey: Some(u32::try_from(number(qkey)?).map_err(|_| "a Q_Key is 32 bits")?),
                    gids: None,
                },
            };
            fw.datapath.hostile = Some(packet.slid);
            fw.datapath.replies.clear();
            for _ in 0..count {
                datapath::receive(fw, mem, packet.clone());
            }
            info!("control: {count} datagram(s) injected for QP {:#x}", packet.dqpn);
            Ok(format!("injected {count}"))
        }
        ["reset"] => {
            dev.reset();
            info!("control: function reset");
            Ok("reset".into())
        }
        ["remove"] => {
            dev.surprise_remove();
            info!("control: surprise removal");
            Ok("removed".into())
        }
        ["release"] => {
            let n = dev.release_delayed(mem);
            Ok(format!("released {n}"))
        }
        ["mad-poke", attr, off, hex] => {
            // Garbage in MAD_IFC answers: the data bytes of SMPs for `attr` from `off`.
            let num = |v: &str| match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => v.parse(),
            };
            let attr = num(attr)
                .ok()
                .and_then(|v| u16::try_from(v).ok())
                .ok_or("bad attribute")?;
            let off = num(off)
                .ok()
                .filter(|&o| o < 64)
                .ok_or("offset past the 64 data bytes")? as usize;
            if hex.len() % 2 != 0 || hex.is_empty() || off + hex.len() / 2 > 64 {
                return Err("bytes: an even number of hex digits, inside the 64 data bytes".into());
            }
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| "bad hex bytes")?;
            info!("control: MAD answers for attribute {attr:#06x} get {hex} at data offset {off}");
            dev.firmware.node.pokes.push((attr, off, bytes));
            Ok(format!("mad-poke {attr:#06x} {off} {hex}"))
        }
        ["fault", spec] => {
            dev.firmware.faults.add(Rule::parse(spec)?);
            Ok(format!("fault {spec} added"))
        }
        ["cq-resizes"] => Ok(format!(
            "cq resizes {}, most not consumed {}",
            dev.firmware.datapath.cq_resizes, dev.firmware.datapath.cq_most_carried
        )),
        ["status"] => {
            let fw = &dev.firmware;
            let ports: Vec<String> = fw
                .node
                .ports
                .iter()
                .map(|p| format!("port {} state {}", p.num, p.state))
                .collect();
            Ok(format!(
                "state {:?}, {} commands, {} pages held, {}, {} cannot-give, flood {} posted {} left{}",
                fw.state,
                fw.log.total(),
                fw.pages.outstanding(),
                ports.join(", "),
                fw.pages.cant_give(),
                fw.flood.posted,
                fw.flood.remaining,
                if dev.removed() { ", removed" } else { "" }
            ))
        }
        ["objects"] => {
            let fw = &dev.firmware;
            let o = &fw.objects;
            Ok(format!(
                "pds {} tds {} uars {} mkeys {} cqs {} qps {} srqs {} rmps {} xrcds {}",
                fw.pds.len(),
                fw.tds.len(),
                fw.uars.len(),
                o.count(ObjKind::Mkey),
                o.count(ObjKind::Cq),
                o.count(ObjKind::Qp),
                o.count(ObjKind::Srq),
                o.count(ObjKind::Rmp),
                o.count(ObjKind::Xrcd),
            ))
        }
        _ => Err(format!("unknown control command {line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceConfig;
    use crate::guest_memory::FakeMemory;
    use crate::init_segment as iseg;

    fn be32(d: &mut Device, off: u64) -> u32 {
        let mut b = [0u8; 4];
        d.bar0_read(off, &mut b);
        u32::from_be_bytes(b)
    }

    #[test]
    fn nic_state_shows_in_cmdq_addr_l_sz_and_halts() {
        let mut d = Device::new(DeviceConfig::default());
        let mut m = FakeMemory::new(0, 0x1000);
        execute(&mut d, &mut m, "nic-state disabled").unwrap();
        assert_eq!((be32(&mut d, iseg::CMDQ_ADDR_L_SZ) >> 8) & 7, 1);
        assert!(d.firmware.halted);
        execute(&mut d, &mut m, "nic-state sw-reset").unwrap();
        assert_eq!((be32(&mut d, iseg::CMDQ_ADDR_L_SZ) >> 8) & 7, 7);
        execute(&mut d, &mut m, "nic-state full").unwrap();
        assert_eq!((be32(&mut d, iseg::CMDQ_ADDR_L_SZ) >> 8) & 7, 0);
        assert!(!d.firmware.halted);
        assert!(execute(&mut d, &mut m, "nic-state off").is_err());
    }

    #[test]
    fn health_error_and_clear() {
        let mut d = Device::new(DeviceConfig::default());
        let mut m = FakeMemory::new(0, 0x1000);
        execute(&mut d, &mut m, "health-error 0x8 fatal").unwrap();
        let w = be32(&mut d, iseg::HEALTH + 0x38);
        assert_eq!(w >> 31, 1, "rfr set");
        assert_eq!((be32(&mut d, iseg::HEALTH + 0x3c) >> 16) & 0xff, 0x8, "synd");
        execute(&mut d, &mut m, "health-clear").unwrap();
        assert_eq!(be32(&mut d, iseg::HEALTH + 0x3c), 0);
        assert!(execute(&mut d, &mut m, "health-error 0").is_err());
    }

    #[test]
    fn surprise_removal_reads_all_ones() {
        let mut d = Device::new(DeviceConfig::default());
        let mut m = FakeMemory::new(0, 0x1000);
        assert_ne!(be32(&mut d, iseg::FW_REV), u32::MAX);
        execute(&mut d, &mut m, "remove").unwrap();
        assert_eq!(be32(&mut d, iseg::FW_REV), u32::MAX);
        assert_eq!(
            be32(&mut d, iseg::HEALTH + 0x30),
            u32::MAX,
            "health fw_ver: the device is gone"
        );
    }

    #[test]
    fn bad_commands_are_refused() {
        let mut d = Device::new(DeviceConfig::default());
        let mut m = FakeMemory::new(0, 0x1000);
        assert!(execute(&mut d, &mut m, "port 3 down").is_err());
        assert!(execute(&mut d, &mut m, "explode").is_err());
        assert!(execute(&mut d, &mut m, "fault hang:NOPE").is_err());
        assert!(execute(&mut d, &mut m, "status")
            .unwrap()
            .contains("port 1 state 4"));
    }

    #[test]
    fn objects_are_counted() {
        let mut d = Device::new(DeviceConfig::default());
        let mut m = FakeMemory::new(0, 0x1000);
        assert_eq!(
            execute(&mut d, &mut m, "objects").unwrap(),
            "pds 0 tds 0 uars 0 mkeys 0 cqs 0 qps 0 srqs 0 rmps 0 xrcds 0"
        );
    }

    #[test]
    fn eqe_needs_an_eq_and_sane_arguments() {
        let mut d = Device::new(DeviceConfig::default());
        let mut m = FakeMemory::new(0, 0x1000);
        // No EQ exists before the driver creates one.
        assert_eq!(
            execute(&mut d, &mut m, "eqe async 0x3f 0"),
            Err("no async EQ".to_string())
        );
        assert!(execute(&mut d, &mut m, "eqe async 0x100 0").is_err());
        assert!(execute(&mut d, &mut m, "eqe async 9 0 abc").is_err());
        assert!(execute(&mut d, &mut m, "eqe async 9 0 é1").is_err());
        let long = "00".repeat(29);
        assert!(execute(&mut d, &mut m, &format!("eqe async 9 0 {long}")).is_err());
        assert_eq!(hex_bytes("0x00ff10"), Ok(vec![0, 0xff, 0x10]));
    }
}
