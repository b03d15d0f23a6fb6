//! Per-hook counters: packets seen, accepted, dropped and stolen, one block
//! per worker (a cache line each, written only by that worker) summed when
//! read.

use crate::worker_counters::WorkerCounters;
use crate::Tally;

const SEEN: usize = 0;
const ACCEPTED: usize = 1;
const DROPPED: usize = 2;
const STOLEN: usize = 3;

/// Sums of one hook's counters over every worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HookStats {
    pub seen: u64,
    pub accepted: u64,
    pub dropped: u64,
    pub stolen: u64,
}

/// Counters of one hook in one chain position, per worker.
pub struct HookCounters {
    counts: WorkerCounters<4>,
}

impl HookCounters {
    /// Counters for `workers` workers (at least one block).
    pub fn new(workers: usize) -> Self {
        HookCounters {
            counts: WorkerCounters::new(workers),
        }
    }

    /// Add one call's effect: `before` and `after` are the burst's tallies
    /// around the hook. Only worker `worker` writes its block (see
    /// [`WorkerCounters::add`]).
    #[inline]
    pub fn record(&self, worker: usize, before: Tally, after: Tally) {
        let mut v = [0; 4];
        v[SEEN] = u64::from(before.accepted);
        v[ACCEPTED] = u64::from(after.accepted);
        v[DROPPED] = u64::from(after.dropped - before.dropped);
        v[STOLEN] = u64::from(after.stolen - before.stolen);
        self.counts.add_all(worker, &v);
    }

    /// Sums over every worker.
    pub fn read(&self) -> HookStats {
        HookStats {
            seen: self.counts.sum(SEEN),
            accepted: self.counts.sum(ACCEPTED),
            dropped: self.counts.sum(DROPPED),
            stolen: self.counts.sum(STOLEN),
        }
    }
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
