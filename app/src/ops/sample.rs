//! One read of every counter: per port (summed over lcores, with the
//! driver's own counters), per worker (summed over ports, with its busy and
//! idle poll cycles), and the totals. Each counter is read once, relaxed:
//! the sums are exact for a stopped stream and a moment's view otherwise.

use super::state::{Mode, Ops};
use crate::counters::PortCount;
use crate::dpdk::PortStats;
use crate::report::StageDrops;
use std::time::Instant;

/// One port's counters.
#[derive(Clone, Debug)]
pub struct PortSample {
    pub id: u16,
    pub name: String,
    /// Summed over every lcore (workers and the control plane).
    pub count: PortCount,
    /// The driver's counters (packets, bytes, missed, errors).
    pub driver: PortStats,
}

/// One worker's counters.
#[derive(Clone, Debug)]
pub struct LcoreSample {
    pub lcore: u32,
    /// Summed over ports.
    pub count: PortCount,
    /// Poll cycles of rounds that received packets, and of empty rounds.
    pub busy_cycles: u64,
    pub idle_cycles: u64,
}

impl LcoreSample {
    /// Busy share of the poll loop's cycles since `earlier`, in percent.
    pub fn busy_percent_since(&self, earlier: Option<&LcoreSample>) -> f64 {
        let (b0, i0) = earlier.map_or((0, 0), |e| (e.busy_cycles, e.idle_cycles));
        let busy = self.busy_cycles.saturating_sub(b0) as f64;
        let idle = self.idle_cycles.saturating_sub(i0) as f64;
        if busy + idle == 0.0 {
            0.0
        } else {
            100.0 * busy / (busy + idle)
        }
    }
}

/// Everything at one moment.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Instant,
    pub ports: Vec<PortSample>,
    pub workers: Vec<LcoreSample>,
    /// Over every port and lcore.
    pub total: PortCount,
    /// What each pipeline stage dropped, by reason, over the workers
    /// (router mode; empty in plain forwarding, which has no stages).
    pub stage_drops: StageDrops,
}

impl Sample {
    /// Read the counters of `ops` and its ports' drivers.
    pub fn take(ops: &Ops) -> Sample {
        // Every lcore's ends, then every lcore's starts (see read_ends).
        let lcores: Vec<&crate::counters::LcoreCounters> = ops
            .workers
            .iter()
            .chain(ops.main.iter())
            .map(|c| &**c)
            .collect();
        let mut counts: Vec<Vec<PortCount>> = lcores
            .iter()
            .map(|c| vec![PortCount::default(); c.ports.len()])
            .collect();
        for (c, out) in lcores.iter().zip(counts.iter_mut()) {
            c.read_ends(out);
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        for (c, out) in lcores.iter().zip(counts.iter_mut()) {
            c.read_starts(out);
        }
        let main = ops.main.as_ref().and_then(|_| counts.pop());
        let workers: Vec<(u32, Vec<PortCount>, (u64, u64))> = ops
            .workers
            .iter()
            .zip(counts)
            .map(|(c, n)| (c.lcore, n, c.poll_snapshot()))
            .collect();
        let mut ports: Vec<PortSample> = ops
            .ports
            .iter()
            .map(|p| PortSample {
                id: p.id,
                name: p.name.clone(),
                count: PortCount::default(),
                driver: crate::dpdk::port::read_stats(p.id),
            })
            .collect();
        let mut total = PortCount::default();
        let all = workers.iter().map(|(_, c, _)| c).chain(main.as_ref());
        for counts in all {
            for (id, c) in counts.iter().enumerate() {
                total.merge(c);
                if let Some(p) = ports.iter_mut().find(|p| usize::from(p.id) == id) {
                    p.count.merge(c);
                }
            }
        }
        let workers = workers
            .into_iter()
            .map(|(lcore, counts, (busy, idle))| {
                let mut count = PortCount::default();
                counts.iter().for_each(|c| count.merge(c));
                LcoreSample {
                    lcore,
                    count,
                    busy_cycles: busy,
                    idle_cycles: idle,
                }
            })
            .collect();
        let stage_drops = match ops.mode {
            Mode::Router => crate::report::stage_drops(ops.workers.iter().map(|c| &**c)),
            Mode::Forward => StageDrops::new(),
        };
        Sample {
            at: Instant::now(),
            ports,
            workers,
            total,
            stage_drops,
        }
    }

    /// Received or created but not yet sent, dropped, consumed or taken by
    /// a hook: `rx + originated - (tx + dropped + consumed + stolen)` (the
    /// final statistics' balance; 0 once fastpath has stopped).
    pub fn in_flight(&self) -> u64 {
        let t = &self.total;
        (t.rx + t.originated).saturating_sub(t.tx + t.drops.total() + t.consumed + t.stolen)
    }
}
