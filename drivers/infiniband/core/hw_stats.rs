// SPDX-License-Identifier: GPL-2.0

//! A port's hardware counters (C's `rdma_hw_stats`): the names the driver describes with
//! [`DeviceOps::alloc_hw_port_stats`](crate::verbs::ops::DeviceOps::alloc_hw_port_stats), the values it
//! reads with [`DeviceOps::get_hw_stats`](crate::verbs::ops::DeviceOps::get_hw_stats), and how long a
//! read stays fresh (`lifespan`). sysfs shows them as `ports/<N>/hw_counters/<name>` (and the
//! writable `lifespan`), netlink as `rdma stat show`; both read the same [`HwStats`] under its
//! lock, as C's `stats->lock`.
//!
//! Set up at registration, after the caches (C: at the port's sysfs creation, `setup_hw_port_stats`,
//! whose first full read must succeed or the registration fails). The values are read through a
//! reader the device passes (the driver's `get_hw_stats` for the port), so this module stays
//! below the driver's operations.

use kernel::{
    new_mutex,
    prelude::*,
    sync::Mutex,
    sysfs_attrs::ShowBuffer,
    time::{msecs_to_jiffies, Delta, Instant, Monotonic},
};

/// One hardware counter as the driver describes it (C's `rdma_stat_desc`).
#[derive(Clone, Copy, Debug)]
pub struct HwStatDesc {
    /// Its name: the sysfs file and the netlink entry.
    pub name: &'static CStr,
    /// An optional counter (C's `IB_STAT_FLAG_OPTIONAL`): no sysfs file; netlink lists it with
    /// `rdma stat mode supported`.
    pub optional: bool,
    /// Disabled at first (C's `is_disabled` bit): `rdma stat show` leaves it out.
    pub disabled: bool,
}

/// A port's counters as the driver describes them (what C's `alloc_hw_port_stats` returns).
pub struct HwStatsDesc {
    /// The counters, in the order of sysfs and netlink, and of the values
    /// [`DeviceOps::get_hw_stats`](crate::verbs::ops::DeviceOps::get_hw_stats) fills.
    pub descs: KVec<HwStatDesc>,
    /// How long a read stays fresh, in milliseconds (C's `RDMA_HW_STATS_DEFAULT_LIFESPAN` is 10).
    pub lifespan_ms: u32,
}

/// The longest `lifespan` sysfs accepts, in milliseconds (as C).
const LIFESPAN_MAX_MS: i32 = 10_000;

/// What the lock protects: the last values read and when.
struct HwStatsState {
    values: KVec<u64>,
    disabled: KVec<bool>,
    /// When the values were last read in full.
    timestamp: Instant<Monotonic>,
    /// How long they stay fresh, in jiffies.
    lifespan: usize,
}

/// A port's hardware counters and their last values (C's `rdma_hw_stats`).
#[pin_data]
pub(crate) struct HwStats {
    descs: KVec<HwStatDesc>,
    #[pin]
    state: Mutex<HwStatsState>,
}

/// `jiffies_to_msecs` (the kernel's HZ is one of 100, 250, 300, 1000; rounds up as C does for
/// HZ values that do not divide 1000).
fn jiffies_to_msecs(j: usize) -> u64 {
    let hz = msecs_to_jiffies(1000).max(1) as u64;
    (j as u64).saturating_mul(1000).div_ceil(hz)
}

impl HwStats {
    /// The counters `desc` describes, read once in full with `read` (the driver's
    /// `get_hw_stats`: values, index; returns the count read), which must read them all.
    pub(crate) fn new(
        desc: HwStatsDesc,
        read: impl FnOnce(&mut [u64], usize) -> Result<usize>,
    ) -> Result<Pin<KBox<Self>>> {
        let n = desc.descs.len();
        if n == 0 {
            // C's `alloc_hw_stats_port`: no counters is an allocation failure.
            return Err(ENOMEM);
        }
        let mut values = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut disabled = KVec::with_capacity(n, GFP_KERNEL)?;
        for d in desc.descs.iter() {
            values.push(0, GFP_KERNEL)?;
            disabled.push(d.disabled, GFP_KERNEL)?;
        }
        let lifespan = msecs_to_jiffies(desc.lifespan_ms) as usize;
        let stats = KBox::pin_init(
            try_pin_init!(HwStats {
                descs: desc.descs,
                state <- new_mutex!(HwStatsState {
                    values,
                    disabled,
                    timestamp: Instant::now(),
                    lifespan,
                }),
            }? Error),
            GFP_KERNEL,
        )?;
        {
            let mut st = stats.state.lock();
            // The first read asks for all of them (index = their number) and must get all.
            let got = read(&mut st.values, n)?;
            if got != n {
                return Err(EINVAL);
            }
            st.timestamp = Instant::now();
        }
        Ok(stats)
    }

    /// The counters, in order.
    pub(crate) fn descs(&self) -> &[HwStatDesc] {
        &self.descs
    }

    /// Reads counter `index` for sysfs: through the driver unless the values are fresher than
    /// the lifespan (C's `update_hw_stats`: only a read that returned every counter refreshes
    /// the time stamp), then prints it as `"%llu\n"` (no bound counters add history here).
    pub(crate) fn show(
        &self,
        read: impl FnOnce(&mut [u64], usize) -> Result<usize>,
        index: u32,
        buf: &mut ShowBuffer<'_>,
    ) -> Result {
        let i = index as usize;
        let mut st = self.state.lock();
        let now = Instant::<Monotonic>::now();
        // C's `time_is_after_eq_jiffies(timestamp + lifespan)`, the lifespan as many
        // milliseconds as its jiffies make.
        let lifespan = Delta::from_millis(jiffies_to_msecs(st.lifespan) as i64);
        let fresh = now - st.timestamp <= lifespan;
        if !fresh {
            let got = read(&mut st.values, i)?;
            if got == self.descs.len() {
                st.timestamp = now;
            }
        }
        let v = *st.values.get(i).ok_or(EINVAL)?;
        buf.emit(fmt!("{}\n", v))
    }

    /// `lifespan`: milliseconds, as C prints `jiffies_to_msecs(lifespan)`.
    pub(crate) fn lifespan_show(&self, buf: &mut ShowBuffer<'_>) -> Result {
        let j = self.state.lock().lifespan;
        buf.emit(fmt!("{}\n", jiffies_to_msecs(j)))
    }

    /// Sets `lifespan` from a decimal number of milliseconds, 0 to 10000 (C's `kstrtoint`,
    /// then `EINVAL` out of range).
    pub(crate) fn lifespan_store(&self, data: &[u8]) -> Result {
        let ms = parse_int(data)?;
        if !(0..=LIFESPAN_MAX_MS).contains(&ms) {
            return Err(EINVAL);
        }
        let j = msecs_to_jiffies(ms as u32) as usize;
        self.state.lock().lifespan = j;
        Ok(())
    }

    /// Reads every counter through the driver (C's `get_hw_stats(.., 0)` in
    /// `stat_get_doit_default_counter`, which ignores the lifespan) and calls `f` with the name
    /// and value of each enabled one, in order, under the lock. A failed read is `EINVAL`, as C.
    pub(crate) fn read_enabled(
        &self,
        read: impl FnOnce(&mut [u64], usize) -> Result<usize>,
        mut f: impl FnMut(&'static CStr, u64) -> Result,
    ) -> Result {
        let mut st = self.state.lock();
        let got = read(&mut st.values, 0).map_err(|_| EINVAL)?;
        // The driver's count is bounded by what it described.
        let n = got.min(self.descs.len());
        for (i, d) in self.descs.iter().enumerate().take(n) {
            if st.disabled.get(i).copied().unwrap_or(true) {
                continue;
            }
            f(d.name, st.values.get(i).copied().unwrap_or(0))?;
        }
        Ok(())
    }

    /// Calls `f` with the index, name and, for an optional counter, the enabled state of each
    /// counter, under the lock (C's `nldev_stat_get_counter_status_doit`).
    pub(crate) fn for_each_desc(
        &self,
        mut f: impl FnMut(u32, &'static CStr, Option<bool>) -> Result,
    ) -> Result {
        let st = self.state.lock();
        for (i, d) in self.descs.iter().enumerate() {
            let enabled = d
                .optional
                .then(|| !st.disabled.get(i).copied().unwrap_or(true));
            f(i as u32, d.name, enabled)?;
        }
        Ok(())
    }
}

/// C's `kstrtoint(buf, 10, ..)`: optional sign, decimal digits, one optional trailing newline;
/// `EINVAL` otherwise, `ERANGE` past an `i32`.
fn parse_int(data: &[u8]) -> Result<i32> {
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    let (neg, digits) = match data.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, data),
    };
    if digits.is_empty() {
        return Err(EINVAL);
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(EINVAL);
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(c - b'0')))
            .ok_or(ERANGE)?;
        if v > i64::from(i32::MAX) + 1 {
            return Err(ERANGE);
        }
    }
    let v = if neg { -v } else { v };
    i32::try_from(v).map_err(|_| ERANGE)
}

#[kernel::macros::kunit_tests(rdma_rs_ib_hw_stats)]
mod tests {
    use super::*;

    #[test]
    fn lifespan_numbers_parse_as_kstrtoint() {
        assert_eq!(parse_int(b"10\n"), Ok(10));
        assert_eq!(parse_int(b"+7"), Ok(7));
        assert_eq!(parse_int(b"-1\n"), Ok(-1));
        assert_eq!(parse_int(b"10000"), Ok(10000));
        assert_eq!(parse_int(b"abc"), Err(EINVAL));
        assert_eq!(parse_int(b""), Err(EINVAL));
        assert_eq!(parse_int(b"1 \n"), Err(EINVAL));
        assert_eq!(parse_int(b"99999999999"), Err(ERANGE));
    }
}
