//! A whole bring-up and teardown, driven the way mlx5_core drives it, without QEMU; and each
//! fault the model can inject or must survive.

use crate::command::Status;
use crate::device::DeviceConfig;
use crate::firmware::caps::general;
use crate::firmware::eq::event;
use crate::firmware::faults::Rule;
use crate::firmware::objects::qpc;
use crate::guest_memory::GuestMemory;
use crate::ifc::{self, Field};
use crate::opcodes::op;
use crate::test_driver::{input, Failure, TestDriver};

fn status(f: Result<Vec<u8>, Failure>) -> Option<u8> {
    match f {
        Err(Failure::Status(s, _)) => Some(s),
        _ => None,
    }
}

fn give_pages(t: &mut TestDriver, n: usize) -> Vec<u64> {
    let base = t.alloc_pages(n);
    let pages: Vec<u64> = (0..n as u64).map(|i| base + i * 4096).collect();
    let mut i = input(op::MANAGE_PAGES, 1, 0x10 + n * 8);
    ifc::set(&mut i, Field::new(0x60, 32), n as u64);
    for (k, p) in pages.iter().enumerate() {
        i[0x10 + k * 8..0x18 + k * 8].copy_from_slice(&p.to_be_bytes());
    }
    t.exec(&i, 16).unwrap();
    pages
}

fn query_pages(t: &mut TestDriver, op_mod: u16) -> u64 {
    let out = t.exec(&input(op::QUERY_PAGES, op_mod, 16), 16).unwrap();
    ifc::get(&out, Field::new(0x60, 32))
}

pub(super) fn enable_and_init(t: &mut TestDriver) -> Vec<u64> {
    t.exec(&input(op::ENABLE_HCA, 0, 16), 16).unwrap();
    let out = t.exec(&input(op::QUERY_ISSI, 0, 16), 0x70).unwrap();
    assert_eq!(
        ifc::get(&out, Field::new(0x360, 32)),
        0b11,
        "ISSI 0 and 1 supported"
    );
    let mut set = input(op::SET_ISSI, 0, 16);
    ifc::set(&mut set, Field::new(0x50, 16), 1);
    t.exec(&set, 16).unwrap();
    let boot = query_pages(t, 1);
    assert!(boot > 0);
    let mut pages = give_pages(t, boot as usize);
    assert_eq!(query_pages(t, 1), 0, "boot pages satisfied");
    // General capabilities: an InfiniBand port, and a SET that stays within the maximum.
    let cap = t.exec(&input(op::QUERY_HCA_CAP, 1, 16), 0x10 + 4096).unwrap();
    let cap_page = &cap[0x10..];
    assert_eq!(ifc::get(cap_page, general::PORT_TYPE), 0);
    assert_eq!(ifc::get(cap_page, general::NUM_PORTS), 1);
    let mut set = input(op::SET_HCA_CAP, 0, 0x10 + 4096);
    set[0x10..].copy_from_slice(cap_page);
    ifc::set(&mut set[0x10..], general::LOG_MAX_QP, 31);
    assert_eq!(status(t.exec(&set, 16)), Some(Status::BadParameter as u8));
    ifc::set(&mut set[0x10..], general::LOG_MAX_QP, 18);
    t.exec(&set, 16).unwrap();
    // INIT_HCA needs the init pages first.
    let init = query_pages(t, 2);
    assert!(init > 0);
    assert_eq!(
        status(t.exec(&input(op::INIT_HCA, 0, 16), 16)),
        Some(Status::BadSystemState as u8)
    );
    pages.extend(give_pages(t, init as usize));
    t.exec(&input(op::INIT_HCA, 0, 0x20), 16).unwrap();
    pages
}

pub(super) fn teardown_and_reclaim(t: &mut TestDriver, given: &[u64]) {
    t.exec(&input(op::TEARDOWN_HCA, 0, 16), 16).unwrap();
    let mut back = vec![];
    loop {
        let mut take = input(op::MANAGE_PAGES, 2, 16);
        ifc::set(&mut take, Field::new(0x60, 32), 768);
        let out = t.exec(&take, 0x10 + 768 * 8).unwrap();
        let n = ifc::get(&out, Field::new(0x40, 32)) as usize;
        if n == 0 {
            break;
        }
        back.extend((0..n).map(|k| u64::from_be_bytes(out[0x10 + k * 8..0x18 + k * 8].try_into().unwrap())));
    }
    t.exec(&input(op::DISABLE_HCA, 0, 16), 16).unwrap();
    back.sort_unstable();
    let mut given = given.to_vec();
    given.sort_unstable();
    assert_eq!(back, given, "every page given comes back, once");
    assert_eq!(t.dev.firmware.pages.outstanding(), 0);
}

/// CREATE_EQ of 256 entries in four pages on `uar`, taking event types `mask`, firing `vector`.
pub(super) fn create_eq(t: &mut TestDriver, uar: u64, mask: u64, vector: u64) -> (u32, u64) {
    let pages = t.alloc_pages(4);
    let mut ce = input(op::CREATE_EQ, 0, 0x110 + 4 * 8);
    ifc::set(&mut ce, Field::new(0xe3, 5), 8);
    ifc::set(&mut ce, Field::new(0xe8, 24), uar);
    ifc::set(&mut ce, Field::new(0x134, 12), vector);
    ce[0x58..0x60].copy_from_slice(&mask.to_be_bytes());
    for k in 0..4usize {
        ce[0x110 + k * 8..0x118 + k * 8].copy_from_slice(&(pages + k as u64 * 4096).to_be_bytes());
    }
    (
        ifc::get(&t.exec(&ce, 16).unwrap(), Field::new(0x58, 8)) as u32,
        pages,
    )
}

#[test]
fn bring_up_event_mode_and_teardown() {
    let mut t = TestDriver::new(DeviceConfig::default());
    let pages = enable_and_init(&mut t);
    let out = t.exec(&input(op::QUERY_ADAPTER, 0, 16), 0x110).unwrap();
    assert_eq!(&out[0x100..0x10d], b"MT_0000000008");
    let out = t.exec(&input(op::ALLOC_UAR, 0, 16), 16).unwrap();
    let uar = ifc::get(&out, Field::new(0x48, 24));
    assert!(uar >= 8, "UAR pages stay clear of the init segment");

    // The command EQ: 256 entries in four pages, vector 0, command events only.
    let eq_pages = t.alloc_pages(4);
    let mut ce = input(op::CREATE_EQ, 0, 0x110 + 4 * 8);
    ifc::set(&mut ce, Field::new(0xe3, 5), 8);
    ifc::set(&mut ce, Field::new(0xe8, 24), uar);
    ifc::set(&mut ce, Field::new(0x134, 12), 0);
    ce[0x58..0x60].copy_from_slice(&(1u64 << event::CMD).to_be_bytes());
    for k in 0..4u64 {
        ce[0x110 + k as usize * 8..0x118 + k as usize * 8]
            .copy_from_slice(&(eq_pages + k * 4096).to_be_bytes());
    }
    // The driver initialises owner bits to 1.
    for k in 0..256u64 {
        t.mem.write(eq_pages + k * 64 + 63, &[1]).unwrap();
    }
    let out = t.exec(&ce, 16).unwrap();
    let eqn = ifc::get(&out, Field::new(0x58, 8)) as u32;
    assert!(
        t.dev.take_irqs().is_empty(),
        "the command that creates the EQ completes by polling"
    );
    // Arm it, then run a command: its completion arrives as an event with the slot's bit.
    let db = (eqn << 24).to_be_bytes(); // consumer index 0
    t.dev.bar0_write(&mut t.mem, uar * 4096 + 0x40, &db);
    t.exec_slot(3, &input(op::QUERY_ADAPTER, 0, 16), 0x110).unwrap();
    let mut eqe = [0u8; 64];
    t.mem.read(eq_pages, &mut eqe).unwrap();
    assert_eq!(eqe[1], event::CMD);
    assert_eq!(&eqe[0x20..0x24], &(1u32 << 3).to_be_bytes());
    assert_eq!(eqe[63], 0, "first pass: owner 0");
    assert_eq!(t.dev.take_irqs(), vec![0]);
    // Not re-armed: the next completion is queued without an interrupt.
    t.exec(&input(op::QUERY_ADAPTER, 0, 16), 0x110).unwrap();
    assert!(t.dev.take_irqs().is_empty());

    // The port answers a PortInfo SMP: ACTIVE, with a LID.
    let mut mad = input(op::MAD_IFC, 3, 0x110);
    ifc::set(&mut mad, Field::new(0x58, 8), 1);
    mad[0x10..0x14].copy_from_slice(&[1, 1, 1, 1]);
    mad[0x10 + 16..0x10 + 18].copy_from_slice(&0x15u16.to_be_bytes());
    mad[0x10 + 20..0x10 + 24].copy_from_slice(&1u32.to_be_bytes());
    let out = t.exec(&mad, 0x110).unwrap();
    let smp = &out[0x10..];
    assert_eq!(smp[3], 0x81, "GetResp");
    assert_eq!(smp[64 + 32] & 0xf, 4, "ACTIVE");
    assert_ne!(u16::from_be_bytes([smp[64 + 16], smp[64 + 17]]), 0, "a LID");

    let mut destroy = input(op::DESTROY_EQ, 0, 16);
    ifc::set(&mut destroy, Field::new(0x58, 8), u64::from(eqn));
    t.exec(&destroy, 16).unwrap();
    let mut dealloc = input(op::DEALLOC_UAR, 0, 16);
    ifc::set(&mut dealloc, Field::new(0x48, 24), uar);
    t.exec(&dealloc, 16).unwrap();
    teardown_and_reclaim(&mut t, &pages);
}

#[test]
fn objects_refer_to_what_exists() {
    let mut t = TestDriver::new(DeviceConfig::default());
    let pages = enable_and_init(&mut t);
    // An mkey on a PD that does not exist is refused; on an allocated PD it is created.
    let mut mk = input(op::CREATE_MKEY, 0, 0x110);
    ifc::set(&mut mk, Field::new(0xe8, 24), 5);
    assert_eq!(status(t.exec(&mk, 16)), Some(Status::BadResource as u8));
    let out = t.exec(&input(op::ALLOC_PD, 0, 16), 16).unwrap();
    let pd = ifc::get(&out, Field::new(0x48, 24));
    ifc::set(&mut mk, Field::new(0xe8, 24), pd);
    let out = t.exec(&mk, 16).unwrap();
    let mkey = ifc::get(&out, Field::new(0x48, 24));
    // The PD cannot go while the mkey lives in it.
    let mut dp = input(op::DEALLOC_PD, 0, 16);
    ifc::set(&mut dp, Field::new(0x48, 24), pd);
    assert_eq!(
        status(t.exec(&dp, 16)),
        Some(Status::ResourceBusy as u8),
        "PD in use"
    );
    let mut dm = input(op::DESTROY_MKEY, 0, 16);
    ifc::set(&mut dm, Field::new(0x48, 24), mkey);
    t.exec(&dm, 16).unwrap();
    t.exec(&dp, 16).unwrap();
    assert_eq!(
        status(t.exec(&dm, 16)),
        Some(Status::BadResource as u8),
        "destroyed twice"
    );
    teardown_and_reclaim(&mut t, &pages);
}

#[test]
fn injected_hang_and_status() {
    let mut t = TestDriver::new(DeviceConfig::default());
    t.dev
        .firmware
        .faults
        .add(Rule::parse("hang:ENABLE_HCA:1").unwrap());
    t.dev
        .firmware
        .faults
        .add(Rule::parse("status:QUERY_ISSI:0x4:0xabc:1").unwrap());
    assert_eq!(
        t.exec(&input(op::ENABLE_HCA, 0, 16), 16),
        Err(Failure::NotCompleted)
    );
    // The driver gives up on slot 0 and carries on in another slot; the device still answers.
    t.exec_slot(1, &input(op::ENABLE_HCA, 0, 16), 16).unwrap();
    assert_eq!(
        t.exec_slot(2, &input(op::QUERY_ISSI, 0, 16), 0x70),
        Err(Failure::Status(0x4, 0xabc))
    );
    t.exec_slot(2, &input(op::QUERY_ISSI, 0, 16), 0x70).unwrap();
}

#[test]
fn malformed_commands_get_device_errors() {
    let mut t = TestDriver::new(DeviceConfig::default());
    // Unknown opcode: bad operation with the opcode in the syndrome.
    let r = t.exec(&input(0x7ff0, 0, 16), 16);
    assert_eq!(r, Err(Failure::Status(Status::BadOperation as u8, 0x0cf0_7ff0)));
    // Input shorter than a command header.
    assert_eq!(
        status(t.exec(&input(op::ENABLE_HCA, 0, 8)[..8], 16)),
        Some(Status::BadInputLength as u8)
    );
    // Commands before ENABLE_HCA are refused.
    assert_eq!(
        status(t.exec(&input(op::INIT_HCA, 0, 16), 16)),
        Some(Status::BadSystemState as u8)
    );
    t.exec(&input(op::ENABLE_HCA, 0, 16), 16).unwrap();
    // MANAGE_PAGES claiming more entries than its input carries.
    let mut mp = input(op::MANAGE_PAGES, 1, 0x10 + 8);
    ifc::set(&mut mp, Field::new(0x60, 32), 4);
    assert_eq!(status(t.exec(&mp, 16)), Some(Status::BadInputLength as u8));
    // The same page given twice.
    let p = t.alloc_pages(1);
    let mut mp = input(op::MANAGE_PAGES, 1, 0x10 + 16);
    ifc::set(&mut mp, Field::new(0x60, 32), 2);
    mp[0x10..0x18].copy_from_slice(&p.to_be_bytes());
    mp[0x18..0x20].copy_from_slice(&p.to_be_bytes());
    assert_eq!(status(t.exec(&mp, 16)), Some(Status::BadParameter as u8));
    assert_eq!(
        t.dev.firmware.pages.outstanding(),
        0,
        "a refused give keeps nothing"
    );
}

#[test]
fn port_down_and_up_post_port_change_events() {
    let mut t = TestDriver::new(DeviceConfig::default());
    let pages = enable_and_init(&mut t);
    let out = t.exec(&input(op::ALLOC_UAR, 0, 16), 16).unwrap();
    let uar = ifc::get(&out, Field::new(0x48, 24));
    // An async EQ of 256 entries taking port events.
    let (eqn, eq_pages) = create_eq(&mut t, uar, 1 << event::PORT_CHANGE, 0);
    t.dev
        .bar0_write(&mut t.mem, uar * 4096 + 0x40, &(eqn << 24).to_be_bytes());
    crate::control::execute(&mut t.dev, &mut t.mem, "port 1 down").unwrap();
    assert_eq!(t.dev.take_irqs(), vec![0]);
    let mut eqe = [0u8; 64];
    t.mem.read(eq_pages, &mut eqe).unwrap();
    assert_eq!(
        (eqe[1], eqe[3], eqe[0x28] >> 4),
        (event::PORT_CHANGE, 1, 1),
        "port 1 down"
    );
    assert_eq!(t.dev.firmware.node.ports[0].state, 1);
    crate::control::execute(&mut t.dev, &mut t.mem, "port 1 up").unwrap();
    t.mem.read(eq_pages + 64, &mut eqe).unwrap();
    assert_eq!((eqe[1], eqe[3]), (event::PORT_CHANGE, 4), "port active");
    let mut destroy = input(op::DESTROY_EQ, 0, 16);
    ifc::set(&mut destroy, Field::new(0x58, 8), u64::from(eqn));
    t.exec(&destroy, 16).unwrap();
    teardown_and_reclaim(&mut t, &pages);
}

#[test]
fn surprise_removal_drops_commands() {
    let mut t = TestDriver::new(DeviceConfig::default());
    t.exec(&input(op::ENABLE_HCA, 0, 16), 16).unwrap();
    crate::control::execute(&mut t.dev, &mut t.mem, "remove").unwrap();
    assert_eq!(
        t.exec(&input(op::QUERY_ISSI, 0, 16), 0x70),
        Err(Failure::NotCompleted)
    );
}

#[test]
fn signalled_sends_complete_on_the_send_cq_with_an_event() {
    let mut t = TestDriver::new(DeviceConfig::default());
    let pages = enable_and_init(&mut t);
    let uar = ifc::get(
        &t.exec(&input(op::ALLOC_UAR, 0, 16), 16).unwrap(),
        Field::new(0x48, 24),
    );
    let pd = ifc::get(
        &t.exec(&input(op::ALLOC_PD, 0, 16), 16).unwrap(),
        Field::new(0x48, 24),
    );
    // A completion EQ (no event types in its mask) of 256 entries.
    let (eqn, eq_pages) = create_eq(&mut t, uar, 0, 1);
    t.dev
        .bar0_write(&mut t.mem, uar * 4096 + 0x40, &(eqn << 24).to_be_bytes());
    // A CQ of 4 entries in one page, armed.
    let cq_page = t.alloc_pages(1);
    let mut cc = input(op::CREATE_CQ, 0, 0x118);
    ifc::set(&mut cc, Field::new(0xe3, 5), 2);
    ifc::set(&mut cc, Field::new(0xe8, 24), uar);
    ifc::set(&mut cc, Field::new(0x120, 32), u64::from(eqn));
    cc[0x110..0x118].copy_from_slice(&cq_page.to_be_bytes());
    let cqn = ifc::get(&t.exec(&cc, 16).unwrap(), Field::new(0x48, 24)) as u32;
    let mut arm = [0u8; 8];
    arm[4..].copy_from_slice(&cqn.to_be_bytes());
    t.dev.bar0_write(&mut t.mem, uar * 4096 + 0x20, &arm);
    // A UD QP (RQ of 4 x 64 bytes, SQ of 4 basic blocks, one page) walked to RTS; its WQEs below
    // carry no address vector, so they address no port of this device.
    let (qpn, qp_page, dbr) = make_qp(&mut t, 0x2, pd, uar, cqn);
    let mut m = input(op::RTR2RTS_QP, 0, 0xd8);
    ifc::set(&mut m, Field::new(0x48, 24), u64::from(qpn));
    assert_eq!(
        status(t.exec(&m, 16)),
        Some(Status::BadQpState as u8),
        "RTR2RTS from RTS"
    );
    // Two WQEs, the second signalled; producer 2 in the doorbell record.
    for (i, ce) in [(0u16, 0u8), (1, 0x08)] {
        let mut ctrl = [0u8; 16];
        ctrl[1..3].copy_from_slice(&i.to_be_bytes());
        ctrl[3] = 0x0a;
        ctrl[4..8].copy_from_slice(&((qpn << 8) | 4).to_be_bytes());
        ctrl[11] = ce;
        t.mem.write(qp_page + 256 + u64::from(i) * 64, &ctrl).unwrap();
    }
    t.mem.write(dbr + 4, &2u32.to_be_bytes()).unwrap();
    let mut bf = [0u8; 8];
    bf[4..].copy_from_slice(&((qpn << 8) | 4).to_be_bytes());
    t.dev.bar0_write(&mut t.mem, uar * 4096 + 0x800, &bf);
    let mut cqe = [0u8; 64];
    t.mem.read(cq_page, &mut cqe).unwrap();
    assert_eq!(cqe[63], 0x00, "requester completion, owner 0");
    assert_eq!(u16::from_be_bytes([cqe[60], cqe[61]]), 1, "for the signalled WQE");
    assert_eq!(
        u32::from_be_bytes(cqe[56..60].try_into().unwrap()) & 0xffffff,
        qpn
    );
    t.mem.read(cq_page + 64, &mut cqe).unwrap();
    assert_eq!(cqe, [0u8; 64], "the unsignalled WQE makes no completion");
    assert_eq!(
        t.dev.take_irqs(),
        vec![1],
        "the armed CQ raised an event on its EQ's vector"
    );
    let mut eqe = [0u8; 64];
    t.mem.read(eq_pages, &mut eqe).unwrap();
    assert_eq!(
        (eqe[1], u32::from_be_bytes(eqe[0x38..0x3c].try_into().unwrap())),
        (event::COMP, cqn)
    );
    // The QP holds the CQ: it cannot go first.
    let mut dc = input(op::DESTROY_CQ, 0, 16);
    ifc::set(&mut dc, Field::new(0x48, 24), u64::from(cqn));
    assert_eq!(status(t.exec(&dc, 16)), Some(Status::ResourceBusy as u8));
    let mut dq = input(op::DESTROY_QP, 0, 16);
    ifc::set(&mut dq, Field::new(0x48, 24), u64::from(qpn));
    t.exec(&dq, 16).unwrap();
    t.exec(&dc, 16).unwrap();
    teardown_and_reclaim(&mut t, &pages);
}

/// Creates a QP of service type `st` with `rq_log` receive entries of 64 bytes and 4 send BBs,
/// in one page; returns (qpn, buffer page, doorbell record).
fn make_qp(t: &mut TestDriver, st: u64, pd: u64, uar: u64, cqn: u32) -> (u32, u64, u64) {
    let page = t.alloc_pages(1);
    let dbr = t.alloc_pages(1);
    let mut cq = input(op::CREATE_QP, 0, 0x118);
    for (f, v) in [
        (Field::new(0xc8, 8), st),
        (Field::new(0xe8, 24), pd),
        (Field::new(0x128, 24), uar),
        (Field::new(0x109, 4), 2),
        (Field::new(0x10d, 3), 2),
        (Field::new(0x111, 4), 2),
        (Field::new(0x4a8, 24), u64::from(cqn)),
        (Field::new(0x5a8, 24), u64::from(cqn)),
        (Field::new(0x5c0, 64), dbr),
    ] {
        ifc::set(&mut cq, f, v);
    }
    cq[0x110..0x118].copy_from_slice(&page.to_be_bytes());
    let qpn = ifc::get(&t.exec(&cq, 16).unwrap(), Field::new(0x48, 24)) as u32;
    for o in [op::RST2INIT_QP, op::INIT2RTR_QP, op::RTR2RTS_QP] {
        let mut m = input(o, 0, 0xd8);
        ifc::set(&mut m, Field::new(0x48, 24), u64::from(qpn));
        ifc::set(&mut m, Field::new(0x600, 32), 0x1111_2222); // Q_Key
        t.exec(&m, 16).unwrap();
    }
    (qpn, page, dbr)
}

#[test]
fn query_qp_reports_what_the_transitions_set() {
    let mut t = TestDriver::new(DeviceConfig::default());
    let pages = enable_and_init(&mut t);
    let uar = ifc::get(
        &t.exec(&input(op::ALLOC_UAR, 0, 16), 16).unwrap(),
        Field::new(0x48, 24),
    );
    let pd = ifc::get(
        &t.exec(&input(op::ALLOC_PD, 0, 16), 16).unwrap(),
        Field::new(0x48, 24),
    );
    let (eqn, _) = create_eq(&mut t, uar, 0, 0);
    let cq_page = t.alloc_pages(1);
    let mut cc = input(op::CREATE_CQ, 0, 0x118);
    ifc::set(&mut cc, Field::new(0xe3, 5), 4);
    ifc::set(&mut cc, Field::new(0xe8, 24), uar);
    ifc::set(&mut cc, Field::new(0x120, 32), u64::from(eqn));
    cc[0x110..0x118].copy_from_slice(&cq_page.to_be_bytes());
    let cqn = ifc::get(&t.exec(&cc, 16).unwrap(), Field::new(0x48, 24)) as u32;
    let (qpn, _, _) = make_qp(&mut t, 0, pd, uar, cqn);
    let mut q = input(op::QUERY_QP, 0, 16);
    ifc::set(&mut q, Field::new(0x48, 24), u64::from(qpn));
    let out = t.exec(&q, 0x1d0).unwrap();
    // make_qp's INIT2RTR gave no remote QP: 0.
    assert_eq!(ifc::get(&out, Field::new(0x168, 24)), 0);
    let mut m = input(op::QP_2RST_QP, 0, 0xd8);
    ifc::set(&mut m, Field::new(0x48, 24), u64::from(qpn));
    t.exec(&m, 16).unwrap();
    // Each transition sets its fields: RST2INIT the access rights, INIT2RTR the remote QP, the
    // MTU and the receive PSN, RTR2RTS the send PSN and the retry counts; QUERY_QP reports them.
    let sets: [(u16, &[(Field, u64)]); 3] = [
        (op::RST2INIT_QP, &[(qpc::RWE, 1), (qpc::RRE, 1)]),
        (
            op::INIT2RTR_QP,
            &[
                (qpc::REMOTE_QPN, 0x4321),
                (qpc::MTU, 5),
                (qpc::NEXT_RCV_PSN, 0x1234),
            ],
        ),
        (
            op::RTR2RTS_QP,
            &[
                (qpc::NEXT_SEND_PSN, 0x5678),
                (qpc::RETRY_COUNT, 7),
                (qpc::RNR_RETRY, 6),
            ],
        ),
    ];
    for (o, fields) in sets {
        let mut m = input(o, 0, 0xd8);
        ifc::set(&mut m, Field::new(0x48, 24), u64::from(qpn));
        for (f, v) in fields {
            ifc::set(&mut m, *f, *v);
        }
        t.exec(&m, 16).unwrap();
        if o == op::INIT2RTR_QP {
            let out = t.exec(&q, 0x1d0).unwrap();
            assert_eq!(ifc::get(&out, Field::new(0xc0, 4)), 2); // RTR
            assert_eq!(ifc::get(&out, qpc::NEXT_SEND_PSN), 0);
        }
    }
    let out = t.exec(&q, 0x1d0).unwrap();
    assert_eq!(ifc::get(&out, Field::new(0xc0, 4)), 3); // RTS
    for (_, fields) in sets {
        for (f, v) in fields {
            assert_eq!(ifc::get(&out, *f), *v);
        }
    }
    assert_eq!(ifc::get(&out, qpc::RAE), 0);
    let _ = pages;
}

#[test]
fn ud_send_is_delivered_through_mtt_keys_to_a_posted_receive() {
    let mut t = TestDriver::new(DeviceConfig::default());
    let pages = enable_and_init(&mut t);
    let uar = ifc::get(
        &t.exec(&input(op::ALLOC_UAR, 0, 16), 16).unwrap(),
        Field::new(0x48, 24),
    );
    let pd = ifc::get(
        &t.exec(&input(op::ALLOC_PD, 0, 16), 16).unwrap(),
        Field::new(0x48, 24),
    );
    let (eqn, _) = create_eq(&mut t, uar, 0, 0);
    let cq_page = t.alloc_pages(1);
    let mut cc = input(op::CREATE_CQ, 0, 0x118);
    ifc::set(&mut cc, Field::new(0xe3, 5), 4);
    ifc::set(&mut cc, Field::new(0xe8, 24), uar);
    ifc::set(&mut cc, Field::new(0x120, 32), u64::from(eqn));
    cc[0x110..0x118].copy_from_slice(&cq_page.to_be_bytes());
    let cqn = ifc::get(&t.exec(&cc, 16).unwrap(), Field::new(0x48, 24)) as u32;
    // One memory region: virtual 0x7000_0000.., two 4 KiB pages that are not contiguous in
    // guest memory, so a buffer crossing the page boundary needs the translation table.
    let p0 = t.alloc_pages(1);
    let _gap = t.alloc_pages(1);
    let p1 = t.alloc_pages(1);
    let mut mk = input(op::CREATE_MKEY, 0, 0x110 + 16);
    ifc::set(&mut mk, Field::new(0xe8, 24), pd);
    ifc::set(&mut mk, Field::new(0x96, 2), 1); // MTT
    ifc::set(&mut mk, Field::new(0x94, 1), 1); // local write
    ifc::set(&mut mk, Field::new(0x100, 64), 0x7000_0000);
    ifc::set(&mut mk, Field::new(0x140, 64), 0x2000);
    ifc::set(&mut mk, Field::new(0x25a, 6), 12);
    mk[0x110..0x118].copy_from_slice(&(p0 | 0x3).to_be_bytes());
    mk[0x118..0x120].copy_from_slice(&(p1 | 0x3).to_be_bytes());
    let lkey = (ifc::get(&t.exec(&mk, 16).unwrap(), Field::new(0x48, 24)) as u32) << 8;
    let (a, a_page, a_dbr) = make_qp(&mut t, 0x2, pd, uar, cqn);
    let (b, b_page, b_dbr) = make_qp(&mut t, 0x2, pd, uar, cqn);
    // B posts a receive of 0x200 bytes at virtual 0x7000_1000 - 0x20 (crossing into page 1).
    let recv_va = 0x7000_1000u64 - 0x20;
    let mut rseg = [0u8; 16];
    rseg[0..4].copy_from_slice(&0x200u32.to_be_bytes());
    rseg[4..8].copy_from_slice(&lkey.to_be_bytes());
    rseg[8..16].copy_from_slice(&recv_va.to_be_bytes());
    t.mem.write(b_page, &rseg).unwrap();
    t.mem.write(b_dbr, &1u32.to_be_bytes()).unwrap();
    // A sends 100 bytes from virtual 0x7000_0100 to B's QP at the port's LID.
    let payload: Vec<u8> = (0..100u8).collect();
    t.mem.write(p0 + 0x100, &payload).unwrap();
    let lid = t.dev.firmware.node.ports[0].lid;
    let mut w = [0u8; 128];
    w[3] = 0x0a;
    w[4..8].copy_from_slice(&((a << 8) | 5).to_be_bytes());
    w[11] = 0x08;
    w[16..20].copy_from_slice(&0x1111_2222u32.to_be_bytes()); // Q_Key
    w[24..28].copy_from_slice(&(b | 0x8000_0000).to_be_bytes());
    w[30..32].copy_from_slice(&lid.to_be_bytes());
    w[64..68].copy_from_slice(&100u32.to_be_bytes());
    w[68..72].copy_from_slice(&lkey.to_be_bytes());
    w[72..80].copy_from_slice(&0x7000_0100u64.to_be_bytes());
    t.mem.write(a_page + 256, &w).unwrap();
    t.mem.write(a_dbr + 4, &2u32.to_be_bytes()).unwrap();
    let mut bf = [0u8; 8];
    bf[4..].copy_from_slice(&((a << 8) | 5).to_be_bytes());
    t.dev.bar0_write(&mut t.mem, uar * 4096 + 0x800, &bf);
    // B's buffer: 40 bytes of GRH area, then the payload across the two pages.
    let mut got = [0u8; 140];
    t.mem.read(p0 + 0x1000 - 0x20, &mut got[..0x20]).unwrap();
    t.mem.read(p1, &mut got[0x20..]).unwrap();
    assert_eq!(&got[40..], &payload[..]);
    // Completions: the sender's when the datagram leaves, then the receiver's.
    let mut cqe = [0u8; 64];
    t.mem.read(cq_page, &mut cqe).unwrap();
    assert_eq!(
        (
            cqe[63] >> 4,
            u32::from_be_bytes(cqe[56..60].try_into().unwrap()) & 0xffffff
        ),
        (0x0, a)
    );
    t.mem.read(cq_page + 64, &mut cqe).unwrap();
    assert_eq!(cqe[63] >> 4, 0x2, "RESP_SEND");
    assert_eq!(
        u32::from_be_bytes(cqe[44..48].try_into().unwrap()),
        140,
        "byte count includes the GRH area"
    );
    assert_eq!(
        u32::from_be_bytes(cqe[24..28].try_into().unwrap()) & 0xffffff,
        a,
        "source QP"
    );
    assert_eq!(u32::from_be_bytes(cqe[56..60].try_into().unwrap()) & 0xffffff, b);
    // A second send finds no receive posted: UD drops it, the sender still completes.
    w[1..3].copy_from_slice(&2u16.to_be_bytes());
    t.mem.write(a_page + 256 + 128, &w).unwrap();
    t.mem.write(a_dbr + 4, &4u32.to_be_bytes()).unwrap();
    t.dev.bar0_write(&mut t.mem, uar * 4096 + 0x800, &bf);
    t.mem.read(cq_page + 128, &mut cqe).unwrap();
    assert_eq!(
        (cqe[63] >> 4, u16::from_be_bytes([cqe[60], cqe[61]])),
        (0x0, 2),
        "requester CQE only"
    );
    t.mem.read(cq_page + 192, &mut cqe).unwrap();
    assert_eq!(cqe, [0u8; 64]);
    for n in [a, b] {
        let mut dq = input(op::DESTROY_QP, 0, 16);
        ifc::set(&mut dq, Field::new(0x48, 24), u64::from(n));
        t.exec(&dq, 16).unwrap();
    }
    teardown_and_reclaim(&mut t, &pages);
}

#[test]
fn a_delayed_command_holds_its_slot_while_others_complete() {
    let mut t = TestDriver::new(DeviceConfig::default());
    t.exec(&input(op::ENABLE_HCA, 0, 16), 16).unwrap();
    t.dev.firmware.faults.add(Rule::parse("delay:NOP:50:1").unwrap());
    let start = std::time::Instant::now();
    assert_eq!(
        t.exec_slot(0, &input(op::NOP, 0, 16), 16),
        Err(Failure::NotCompleted)
    );
    let due = t.dev.next_command_deadline().expect("a completion is held back");
    assert!(due >= start + std::time::Duration::from_millis(50));
    // Other slots run meanwhile; the rule applied once.
    t.exec_slot(1, &input(op::NOP, 0, 16), 16).unwrap();
    t.exec_slot(2, &input(op::QUERY_ADAPTER, 0, 16), 0x110).unwrap();
    assert_eq!(t.dev.max_in_flight(), 2, "the held command and one more");
    // Not before it is due.
    t.dev.complete_due(&mut t.mem, start);
    let mut e = [0u8; 64];
    t.mem.read(crate::test_driver::CMDQ, &mut e).unwrap();
    assert_eq!(e[0x3f] & 1, 1, "still owned by the device");
    t.dev.complete_due(&mut t.mem, due);
    t.mem.read(crate::test_driver::CMDQ, &mut e).unwrap();
    assert_eq!(e[0x3f], 0, "handed back with delivery status 0");
    assert_eq!(e[0x20], 0, "command status 0");
    assert!(t.dev.next_command_deadline().is_none());
}

#[test]
fn release_hands_back_held_commands_at_once() {
    let mut t = TestDriver::new(DeviceConfig::default());
    t.exec(&input(op::ENABLE_HCA, 0, 16), 16).unwrap();
    t.dev
        .firmware
        .faults
        .add(Rule::parse("delay:NOP:600000:2").unwrap());
    for slot in 0..2 {
        assert_eq!(
            t.exec_slot(slot, &input(op::NOP, 0, 16), 16),
            Err(Failure::NotCompleted)
        );
    }
    let reply = crate::control::execute(&mut t.dev, &mut t.mem, "release").unwrap();
    assert_eq!(reply, "released 2");
    for slot in 0..2u64 {
        let mut e = [0u8; 64];
        t.mem.read(crate::test_driver::CMDQ + slot * 64, &mut e).unwrap();
        assert_eq!(e[0x3f], 0, "slot {slot} handed back with delivery status 0");
        assert_eq!(e[0x20], 0, "command status 0");
    }
    assert!(t.dev.next_command_deadline().is_none());
    assert_eq!(
        crate::control::execute(&mut t.dev, &mut t.mem, "release").unwrap(),
        "released 0"
    );
}
