//! Per-stage timing (`--stage-cycles`) as a const generic: with `TIMED`
//! false every method is empty and the pipeline is compiled without a TSC
//! read; the stages themselves never ask whether they are timed.

use crate::counters::{LcoreCounters, STAGES};
use crate::dpdk::tsc;

pub use super::contract::Stage;

/// Where each stage of a burst ended, by TSC.
pub struct Clock<const TIMED: bool> {
    stamps: [u64; STAGES.len() + 1],
}

impl<const TIMED: bool> Clock<TIMED> {
    /// Start timing a burst.
    #[inline(always)]
    pub fn start() -> Self {
        let mut stamps = [0; STAGES.len() + 1];
        if TIMED {
            stamps[0] = tsc();
        }
        Clock { stamps }
    }

    /// `stage` ended now.
    #[inline(always)]
    pub fn lap(&mut self, stage: Stage) {
        if TIMED {
            self.stamps[stage as usize + 1] = tsc();
        }
    }

    /// Add the burst's `packets` and stage cycles to the lcore's counters.
    #[inline(always)]
    pub fn count(&self, counters: &LcoreCounters, packets: usize) {
        if TIMED {
            counters.stage_cycles(&self.stamps, packets as u64);
        }
    }
}

const _: () = assert!(Stage::Tx as usize + 1 == STAGES.len());
