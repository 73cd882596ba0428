//! Event queues: rings of 64-byte event entries in guest memory that the device fills and the
//! driver consumes, with an MSI-X vector fired when an armed queue gets an event.
//!
//! Ownership: the driver initialises every entry's owner bit to 1; the device writes entry
//! `pi` with owner `(pi >> log_size) & 1`, so the valid parity flips on each pass of the ring.
//! Arming: the driver writes `ci | eqn << 24` to offset 0x40 of its UAR page (arm) or 0x48
//! (update the consumer index only).

use super::{CmdError, CmdResult, Firmware, Input};
use crate::command::Status;
use crate::guest_memory::{DmaFault, GuestMemory};
use crate::ifc::{self, Field};
use log::{debug, warn};
use std::collections::BTreeMap;

/// Event types the model generates.
pub mod event {
    /// A completion queue has a new completion (data: CQ number).
    pub const COMP: u8 = 0x00;
    /// Port state changed.
    pub const PORT_CHANGE: u8 = 0x09;
    /// A command completed (data: bitmap of slots).
    pub const CMD: u8 = 0x0a;
    /// Firmware wants pages (data: number of pages, negative to return them).
    pub const PAGE_REQUEST: u8 = 0x0b;
}

/// Size of an event entry.
pub const EQE_SIZE: usize = 64;
/// UAR offset of the arm doorbell.
pub const DOORBELL_ARM: u64 = 0x40;
/// UAR offset of the update-only doorbell.
pub const DOORBELL_UPDATE: u64 = 0x48;

/// `create_eq_in` fields (offsets within the command input, context included).
mod create {
    use crate::ifc::Field;
    pub const LOG_EQ_SIZE: Field = Field::new(0xe3, 5);
    pub const UAR_PAGE: Field = Field::new(0xe8, 24);
    pub const INTR: Field = Field::new(0x134, 12);
    pub const LOG_PAGE_SIZE: Field = Field::new(0x143, 5);
    pub const PAGE_OFFSET: Field = Field::new(0xd4, 6);
    pub const EVENT_BITMASK: usize = 0x2c0;
    /// Byte offset of the physical address list.
    pub const PAS: usize = 0x110;
    pub const OUT_EQ_NUMBER: Field = Field::new(0x58, 8);
    pub const OUT_LEN: usize = 16;
}

const DESTROY_EQ_NUMBER: Field = Field::new(0x58, 8);

/// One event queue.
#[derive(Debug, Clone)]
pub struct Eq {
    /// Queue number.
    pub eqn: u8,
    log_size: u32,
    page_size: u64,
    pages: Vec<u64>,
    /// MSI-X vector.
    pub vector: u16,
    /// UAR page the driver rings.
    pub uar: u32,
    /// Event types (bit numbers) this queue receives.
    mask: [u64; 4],
    producer: u32,
    consumer: u32,
    armed: bool,
}

impl Eq {
    /// Whether the queue takes events of `ty`.
    pub fn wants(&self, ty: u8) -> bool {
        self.mask[usize::from(ty / 64)] & (1 << (ty % 64)) != 0
    }

    fn entry_addr(&self, index: u32) -> u64 {
        let off = u64::from(index & ((1 << self.log_size) - 1)) * EQE_SIZE as u64;
        self.pages[(off / self.page_size) as usize] + off % self.page_size
    }

    /// Writes an event; returns the vector to fire if the queue was armed.
    fn post(
        &mut self,
        mem: &mut dyn GuestMemory,
        ty: u8,
        sub_type: u8,
        data: &[u8],
    ) -> Result<Option<u16>, DmaFault> {
        if self.producer.wrapping_sub(self.consumer) >= 1 << self.log_size {
            warn!(
                "EQ {}: overrun (producer {}, consumer {}); event {ty:#x} dropped",
                self.eqn, self.producer, self.consumer
            );
            return Ok(None);
        }
        let mut eqe = [0u8; EQE_SIZE];
        eqe[1] = ty;
        eqe[3] = sub_type;
        let n = data.len().min(28);
        eqe[0x20..0x20 + n].copy_from_slice(&data[..n]);
        let addr = self.entry_addr(self.producer);
        // Body first, then the owner byte that hands the entry to the driver.
        mem.write(addr, &eqe[..EQE_SIZE - 1])?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        mem.write(
            addr + EQE_SIZE as u64 - 1,
            &[((self.producer >> self.log_size) & 1) as u8],
        )?;
        self.producer = self.producer.wrapping_add(1);
        if self.armed {
            self.armed = false;
            Ok(Some(self.vector))
        } else {
            Ok(None)
        }
    }
}

/// All event queues of the function.
#[derive(Debug, Default)]
pub struct EqTable {
    eqs: BTreeMap<u8, Eq>,
}

impl EqTable {
    /// The queue that receives events of `ty`, if any (the first created wins, as each type is
    /// routed to one queue).
    pub fn for_event(&mut self, ty: u8) -> Option<&mut Eq> {
        self.eqs.values_mut().find(|e| e.wants(ty))
    }

    /// Posts an event of `ty` to the queue that takes it; returns the vector to fire.
    pub fn post(&mut self, mem: &mut dyn GuestMemory, ty: u8, sub_type: u8, data: &[u8]) -> Option<u16> {
        let eq = self.for_event(ty)?;
        match eq.post(mem, ty, sub_type, data) {
            Ok(v) => v,
            Err(e) => {
                warn!("EQ {}: cannot write event: {e}", eq.eqn);
                None
            }
        }
    }

    /// Posts an event to EQ `eqn` whatever its mask (completion EQs take completion events of
    /// the CQs bound to them); returns the vector to fire.
    pub fn post_to(
        &mut self,
        mem: &mut dyn GuestMemory,
        eqn: u8,
        ty: u8,
        sub_type: u8,
        data: &[u8],
    ) -> Option<u16> {
        let eq = self.eqs.get_mut(&eqn)?;
        match eq.post(mem, ty, sub_type, data) {
            Ok(v) => v,
            Err(e) => {
                warn!("EQ {eqn}: cannot write event: {e}");
                None
            }
        }
    }

    /// The EQs a test addresses by role: `async` (the queue that takes port changes), `cmd`
    /// (command completions), `pages` (page requests), `comp` (every queue that takes no event
    /// type: the completion EQs).
    pub fn by_role(&self, role: &str) -> Vec<u8> {
        let takes = |ty: u8| {
            self.eqs
                .values()
                .filter(move |e| e.wants(ty))
                .map(|e| e.eqn)
                .take(1)
        };
        match role {
            "async" => takes(event::PORT_CHANGE).collect(),
            "cmd" => takes(event::CMD).collect(),
            "pages" => takes(event::PAGE_REQUEST).collect(),
            "comp" => self
                .eqs
                .values()
                .filter(|e| e.mask.iter().all(|m| *m == 0))
                .map(|e| e.eqn)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A doorbell write at `offset` of UAR page `uar`: updates the consumer index and maybe arms.
    /// Returns the vector to fire when arming a queue that already holds unconsumed events.
    pub fn doorbell(&mut self, uar: u32, offset: u64, value: u32) -> Option<u16> {
        let eqn = (value >> 24) as u8;
        let ci = value & 0x00ff_ffff;
        let Some(eq) = self.eqs.get_mut(&eqn) else {
            warn!("EQ doorbell for unknown EQ {eqn} (UAR {uar})");
            return None;
        };
        if eq.uar != uar {
            debug!("EQ {eqn} doorbell through UAR {uar}, created with UAR {}", eq.uar);
        }
        // The driver's index is 24 bits wide; extend it against the producer.
        let ci_full = (eq.producer & !0x00ff_ffff) | ci;
        eq.consumer = if ci_full > eq.producer {
            ci_full.wrapping_sub(1 << 24)
        } else {
            ci_full
        };
        if offset == DOORBELL_ARM {
            if eq.consumer != eq.producer {
                return Some(eq.vector);
            }
            eq.armed = true;
        }
        None
    }

    /// Free entries in the queue that takes events of `ty` (0 when none takes them).
    pub fn room(&self, ty: u8) -> usize {
        self.eqs.values().find(|e| e.wants(ty)).map_or(0, |e| {
            (1usize << e.log_size).saturating_sub(e.producer.wrapping_sub(e.consumer) as usize)
        })
    }

    /// Whether EQ `eqn` exists.
    pub fn exists(&self, eqn: u8) -> bool {
        self.eqs.contains_key(&eqn)
    }

    /// Number of queues.
    pub fn len(&self) -> usize {
        self.eqs.len()
    }

    /// Whether there are no queues.
    pub fn is_empty(&self) -> bool {
        self.eqs.is_empty()
    }

    /// Forgets every queue (teardown).
    pub fn clear(&mut self) {
        self.eqs.clear();
    }
}

/// CREATE_EQ.
pub fn create_eq(fw: &mut Firmware, input: &Input) -> CmdResult {
    let log_size = input.get(create::LOG_EQ_SIZE) as u32;
    let log_page = input.get(create::LOG_PAGE_SIZE) as u32;
    if !(1..=22).contains(&log_size) || log_page > 10 || input.get(create::PAGE_OFFSET) != 0 {
        return Err(CmdError::new(Status::BadParameter, 0x6e0_0001));
    }
    let page_size = 4096u64 << log_page;
    let bytes = (EQE_SIZE as u64) << log_size;
    let npages = bytes.div_ceil(page_size) as usize;
    let pas_end = create::PAS + npages * 8;
    if input.len() < pas_end {
        return Err(CmdError::new(Status::BadInputLength, 0x6e0_0002));
    }
    let pages = (0..npages)
        .map(|i| input.be64(create::PAS + i * 8))
        .collect::<Vec<_>>();
    if pages.iter().any(|p| p % 4096 != 0) {
        return Err(CmdError::new(Status::BadParameter, 0x6e0_0003));
    }
    let vector = input.get(create::INTR) as u16;
    if vector >= fw.config.msix_vectors {
        return Err(CmdError::new(Status::BadParameter, 0x6e0_0004));
    }
    let uar = input.get(create::UAR_PAGE) as u32;
    if !fw.uars.contains(uar) {
        return Err(CmdError::new(Status::BadResource, 0x6e0_0005));
    }
    let mut mask = [0u64; 4];
    for (i, m) in mask.iter_mut().enumerate() {
        // Four big-endian 64-bit words; word i holds event types 64*i .. 64*i+63.
        *m = input.be64(create::EVENT_BITMASK / 8 + i * 8);
    }
    let eqn = (0..=u8::MAX)
        .find(|n| !fw.eqs.eqs.contains_key(n))
        .ok_or(CmdError::new(Status::LimitsExceeded, 0x6e0_0006))?;
    debug!(
        "CREATE_EQ {eqn}: {} entries, vector {vector}, uar {uar}, mask {mask:x?}",
        1u32 << log_size
    );
    fw.eqs.eqs.insert(
        eqn,
        Eq {
            eqn,
            log_size,
            page_size,
            pages,
            vector,
            uar,
            mask,
            producer: 0,
            consumer: 0,
            armed: false,
        },
    );
    let mut out = vec![0u8; create::OUT_LEN];
    ifc::set(&mut out, create::OUT_EQ_NUMBER, u64::from(eqn));
    Ok(out)
}

/// DESTROY_EQ.
pub fn destroy_eq(fw: &mut Firmware, input: &Input) -> CmdResult {
    let eqn = input.get(DESTROY_EQ_NUMBER) as u8;
    fw.eqs
        .eqs
        .remove(&eqn)
        .ok_or(CmdError::new(Status::BadResource, 0x6e0_0010))?;
    Ok(vec![0u8; 16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_memory::FakeMemory;

    fn eq(log_size: u32, base: u64) -> Eq {
        Eq {
            eqn: 3,
            log_size,
            page_size: 4096,
            pages: vec![base, base + 0x1000],
            vector: 2,
            uar: 8,
            mask: [1 << event::CMD, 0, 0, 0],
            producer: 0,
            consumer: 0,
            armed: false,
        }
    }

    #[test]
    fn owner_parity_flips_each_pass_and_arming_fires_once() {
        let mut m = FakeMemory::new(0x10000, 0x2000);
        let mut t = EqTable::default();
        t.eqs.insert(3, eq(2, 0x10000));
        assert_eq!(t.doorbell(8, DOORBELL_ARM, 3 << 24), None);
        // First pass: owner 0, interrupt on the first event only (the queue disarms).
        assert_eq!(t.post(&mut m, event::CMD, 0, &1u32.to_be_bytes()), Some(2));
        assert_eq!(t.post(&mut m, event::CMD, 0, &2u32.to_be_bytes()), None);
        let mut e = [0u8; 64];
        m.read(0x10000 + 64, &mut e).unwrap();
        assert_eq!(e[1], event::CMD);
        assert_eq!(&e[0x20..0x24], &2u32.to_be_bytes());
        assert_eq!(e[63], 0);
        // Consume both, fill the rest of the ring and wrap: entry 0 again, owner 1.
        assert_eq!(t.doorbell(8, DOORBELL_UPDATE, 2 | (3 << 24)), None);
        for _ in 0..3 {
            t.post(&mut m, event::CMD, 0, &[]);
        }
        m.read(0x10000, &mut e).unwrap();
        assert_eq!(e[63], 1, "second pass writes owner 1");
        // Four unconsumed entries fill the ring; a fifth is dropped, not written over.
        t.post(&mut m, event::CMD, 0, &[]);
        assert_eq!(t.eqs[&3].producer, 6);
        // Arming with unconsumed events fires at once.
        assert_eq!(t.doorbell(8, DOORBELL_ARM, 5 | (3 << 24)), Some(2));
    }

    #[test]
    fn routing_by_event_type() {
        let mut t = EqTable::default();
        t.eqs.insert(3, eq(2, 0x10000));
        assert!(t.for_event(event::CMD).is_some());
        assert!(t.for_event(event::PAGE_REQUEST).is_none());
    }

    #[test]
    fn consumer_index_wraps_at_24_bits() {
        let mut t = EqTable::default();
        let mut q = eq(2, 0x10000);
        q.producer = 0x0100_0002;
        t.eqs.insert(3, q);
        t.doorbell(8, DOORBELL_UPDATE, 0x00ff_ffff | (3 << 24));
        assert_eq!(t.eqs[&3].consumer, 0x00ff_ffff);
    }

    #[test]
    fn flood_fills_the_queue_and_refills_as_the_driver_consumes() {
        use crate::firmware::{Firmware, FirmwareConfig};
        let mut m = FakeMemory::new(0x10000, 0x2000);
        let mut fw = Firmware::new(FirmwareConfig::default());
        let mut q = eq(2, 0x10000);
        q.mask = [1 << event::PORT_CHANGE, 0, 0, 0];
        fw.eqs.eqs.insert(3, q);
        assert_eq!(fw.eqs.room(event::PORT_CHANGE), 4);
        assert_eq!(fw.eqs.room(event::CMD), 0);
        // Four fit now; nothing is dropped, the rest waits.
        assert_eq!(fw.start_flood(&mut m, 10), 4);
        assert_eq!(fw.eqs.room(event::PORT_CHANGE), 0);
        assert_eq!((fw.flood.posted, fw.flood.remaining), (4, 6));
        let mut e = [0u8; 64];
        m.read(0x10000, &mut e).unwrap();
        assert_eq!((e[1], e[3], e[0x28] >> 4), (event::PORT_CHANGE, 0, 1));
        // The driver consumes three and arms: three more are posted, and the vector fires.
        fw.uar_write(&mut m, 8, DOORBELL_ARM, &(3u32 | (3 << 24)).to_be_bytes());
        assert_eq!((fw.flood.posted, fw.flood.remaining), (7, 3));
        assert!(fw.irqs.contains(&2));
        fw.uar_write(&mut m, 8, DOORBELL_ARM, &(7u32 | (3 << 24)).to_be_bytes());
        fw.uar_write(&mut m, 8, DOORBELL_ARM, &(10u32 | (3 << 24)).to_be_bytes());
        assert_eq!((fw.flood.posted, fw.flood.remaining), (10, 0));
    }
}
