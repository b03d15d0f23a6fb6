//! The producer side of drop capture: one [`Tap`] per lcore that drops
//! packets (each worker, and the control plane on the main lcore), all
//! handing records to one bounded lock-free queue that the writer empties.
//!
//! # Cost
//! Capture off: a drop site pays one relaxed load of a flag that is written
//! only when a capture starts or stops (out of line, on the drop path, never
//! on a forwarded packet's). Capture on: a per-lcore rate check (GCRA: one
//! compare on the TSC), a copy of at most [`SNAP_LEN`](super::SNAP_LEN) bytes into a record,
//! and one push that never waits: a full queue counts the packet as lost.

use super::record::{DropRecord, DropSite};
use crate::counters::bump;
use crate::dpdk::tsc;
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// What every tap and the writer share: the queue and the on/off flag.
pub struct Hub {
    pub(super) queue: ArrayQueue<DropRecord>,
    pub(super) on: AtomicBool,
    /// TSC ticks between two captures of one lcore at the rate bound.
    interval: u64,
    /// How far ahead of now an lcore's schedule may run: its burst.
    tolerance: u64,
    taps: Mutex<Vec<Arc<Tap>>>,
}

impl Hub {
    /// A hub with a queue of `slots` records, each lcore captures at most
    /// `rate` packets per second (after a first burst of a tenth of that,
    /// at least 32) on a `tsc_hz` clock.
    pub fn new(slots: usize, rate: u64, tsc_hz: u64) -> Arc<Hub> {
        let interval = tsc_hz / rate.max(1);
        let burst = (rate / 10).max(32);
        Arc::new(Hub {
            queue: ArrayQueue::new(slots.max(1)),
            on: AtomicBool::new(false),
            interval,
            tolerance: interval.saturating_mul(burst),
            taps: Mutex::new(Vec::new()),
        })
    }

    /// The tap of `lcore`.
    pub fn tap(self: &Arc<Self>, lcore: u32) -> Arc<Tap> {
        let tap = Arc::new(Tap {
            hub: self.clone(),
            lcore: lcore as u16,
            schedule: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            over_rate: AtomicU64::new(0),
        });
        crate::sync::lock(&self.taps).push(tap.clone());
        tap
    }

    /// Packets lost so far over every tap: (queue full, over the rate).
    pub(super) fn losses(&self) -> (u64, u64) {
        let taps = crate::sync::lock(&self.taps);
        taps.iter().fold((0, 0), |(l, r), t| {
            (l + t.lost.load(Relaxed), r + t.over_rate.load(Relaxed))
        })
    }
}

/// One lcore's way into the capture. Only that lcore calls [`Tap::capture`]
/// (its counters have a single writer, like the lcore's counters).
pub struct Tap {
    hub: Arc<Hub>,
    lcore: u16,
    /// GCRA: the TSC at which this lcore's next capture is due.
    schedule: AtomicU64,
    /// Dropped packets not captured: the queue was full.
    lost: AtomicU64,
    /// Dropped packets not captured: over the lcore's rate.
    over_rate: AtomicU64,
}

impl Tap {
    /// Whether a capture is running.
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.hub.on.load(Relaxed)
    }

    /// Hand a copy of `frame`, dropped at `site`, to the writer, if a
    /// capture is running. Never waits.
    #[inline]
    pub fn capture(&self, frame: &[u8], site: DropSite<'_>) {
        if self.on() {
            self.copy(frame, &site);
        }
    }

    #[cold]
    #[inline(never)]
    fn copy(&self, frame: &[u8], site: &DropSite<'_>) {
        let now = tsc();
        if !self.within_rate(now) {
            bump(&self.over_rate, 1);
            return;
        }
        let record = DropRecord::new(frame, site, self.lcore, now);
        if self.hub.queue.push(record).is_err() {
            bump(&self.lost, 1);
        }
    }

    /// GCRA: a capture is due if the schedule is at most `tolerance` ahead.
    #[inline]
    fn within_rate(&self, now: u64) -> bool {
        let due = self.schedule.load(Relaxed).max(now);
        if due - now > self.hub.tolerance {
            return false;
        }
        self.schedule.store(due + self.hub.interval, Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::{Stage, SNAP_LEN};
    use hooks::DropReason;

    fn site() -> DropSite<'static> {
        DropSite::new(DropReason::NoRoute, Stage::Ip, 0)
    }

    #[test]
    fn off_captures_nothing_and_counts_nothing() {
        let hub = Hub::new(4, 1000, 1_000_000);
        let tap = hub.tap(1);
        tap.capture(&[0; 60], site());
        assert!(hub.queue.is_empty());
        assert_eq!(hub.losses(), (0, 0));
    }

    #[test]
    fn a_full_queue_counts_the_rest_as_lost() {
        let hub = Hub::new(4, u64::MAX, 1_000_000_000);
        hub.on.store(true, Relaxed);
        let tap = hub.tap(1);
        for _ in 0..10 {
            tap.capture(&[7; 1000], site());
        }
        assert_eq!(hub.queue.len(), 4);
        assert_eq!(hub.losses(), (6, 0));
        let r = hub.queue.pop().unwrap();
        assert_eq!((r.orig_len, r.frame().len()), (1000, SNAP_LEN));
    }

    #[test]
    fn the_rate_bound_lets_a_burst_through_then_counts_the_rest() {
        // 320 per second on a 1 GHz clock: a burst of 32, then one per 3.1 ms.
        let hub = Hub::new(1024, 320, 1_000_000_000);
        hub.on.store(true, Relaxed);
        let tap = hub.tap(1);
        for _ in 0..100 {
            tap.capture(&[0; 60], site());
        }
        // The burst (32, and the one due now), give or take the clock's
        // progress during the loop.
        let got = hub.queue.len();
        assert!((33..=35).contains(&got), "{got}");
        assert_eq!(hub.losses(), (0, 100 - got as u64));
    }
}
