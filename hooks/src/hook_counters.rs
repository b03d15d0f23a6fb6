//! Per-hook counters: packets seen, accepted, dropped and stolen, one block
//! per worker (a cache line each, written only by that worker) summed when
//! read.

use crate::Tally;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[repr(align(64))]
#[derive(Debug, Default)]
struct Slot {
    seen: AtomicU64,
    accepted: AtomicU64,
    dropped: AtomicU64,
    stolen: AtomicU64,
}

/// Sums of one hook's counters over every worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HookStats {
    pub seen: u64,
    pub accepted: u64,
    pub dropped: u64,
    pub stolen: u64,
}

/// Counters of one hook in one chain position, per worker.
#[derive(Debug)]
pub struct HookCounters {
    slots: Box<[Slot]>,
}

impl HookCounters {
    /// Counters for `workers` workers (at least one block).
    pub fn new(workers: usize) -> Self {
        HookCounters {
            slots: (0..workers.max(1)).map(|_| Slot::default()).collect(),
        }
    }

    /// Add one call's effect: `before` and `after` are the burst's tallies
    /// around the hook. Only worker `worker` writes its block (relaxed load
    /// and store, no locked instruction); an out-of-range worker shares the
    /// last block with atomic adds.
    #[inline]
    pub fn record(&self, worker: usize, before: Tally, after: Tally) {
        let seen = u64::from(before.accepted);
        let accepted = u64::from(after.accepted);
        let dropped = u64::from(after.dropped - before.dropped);
        let stolen = u64::from(after.stolen - before.stolen);
        match self.slots.get(worker) {
            Some(s) => {
                bump(&s.seen, seen);
                bump(&s.accepted, accepted);
                bump(&s.dropped, dropped);
                bump(&s.stolen, stolen);
            }
            None => {
                let s = &self.slots[self.slots.len() - 1];
                s.seen.fetch_add(seen, Relaxed);
                s.accepted.fetch_add(accepted, Relaxed);
                s.dropped.fetch_add(dropped, Relaxed);
                s.stolen.fetch_add(stolen, Relaxed);
            }
        }
    }

    /// Sums over every worker.
    pub fn read(&self) -> HookStats {
        self.slots
            .iter()
            .fold(HookStats::default(), |a, s| HookStats {
                seen: a.seen + s.seen.load(Relaxed),
                accepted: a.accepted + s.accepted.load(Relaxed),
                dropped: a.dropped + s.dropped.load(Relaxed),
                stolen: a.stolen + s.stolen.load(Relaxed),
            })
    }
}

#[inline(always)]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_worker_blocks_sum_when_read() {
        let c = HookCounters::new(2);
        let before = Tally {
            accepted: 10,
            dropped: 1,
            stolen: 0,
        };
        let after = Tally {
            accepted: 6,
            dropped: 4,
            stolen: 1,
        };
        c.record(0, before, after);
        c.record(1, before, after);
        c.record(9, before, after);
        assert_eq!(
            c.read(),
            HookStats {
                seen: 30,
                accepted: 18,
                dropped: 9,
                stolen: 3
            }
        );
    }
}
