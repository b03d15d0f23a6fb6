//! Per-lcore pipeline counters. Each lcore writes only its own (single writer:
//! a relaxed load and store, no locked instruction); the main lcore reads them
//! all and sums. Every block is cache-line aligned so no two lcores share a line.

use hooks::DropReason;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counters of one port as one lcore saw it.
#[repr(align(64))]
#[derive(Debug)]
pub struct PortCounters {
    /// Packets received on this port.
    pub rx: AtomicU64,
    /// Packets handed to this port's driver for transmission.
    pub tx: AtomicU64,
    /// Received on this port and handed to the control plane (ARP, ICMP to
    /// us, TTL exceeded, unresolved next hop): in flight until it acts.
    pub punted: AtomicU64,
    /// Packets the control plane created to send on this port (ARP requests,
    /// ICMP errors).
    pub originated: AtomicU64,
    /// Packets the control plane handed this lcore to send on this port
    /// (what it originated, and punted packets it sends on, such as those
    /// that waited for a neighbour): a worker's own count of them, so that
    /// per worker `rx + injected == tx + dropped + punted + stolen`.
    pub injected: AtomicU64,
    /// Received on this port and consumed by the control plane (ARP replies
    /// and announcements it learned from).
    pub consumed: AtomicU64,
    /// Received on this port and taken by a hook (verdict `Stolen`): the
    /// hook owns them from then on.
    pub stolen: AtomicU64,
    /// Packets meant for this port (or received on it) and dropped, by reason.
    pub drops: [AtomicU64; DropReason::COUNT],
}

// std derives Default for arrays of at most 32 elements; there are more reasons.
impl Default for PortCounters {
    fn default() -> Self {
        PortCounters {
            rx: AtomicU64::new(0),
            tx: AtomicU64::new(0),
            punted: AtomicU64::new(0),
            originated: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            stolen: AtomicU64::new(0),
            drops: [const { AtomicU64::new(0) }; DropReason::COUNT],
        }
    }
}

/// Pipeline stages timed with the TSC (when `--stage-cycles` is on), in
/// the order the datapath runs them (`datapath::Stage`).
pub const STAGES: [&str; 7] = [
    "l2_input",
    "ingress_hook",
    "ip_input",
    "egress_hook",
    "neigh_output",
    "local",
    "tx",
];

/// TSC cycles spent in each stage and the packets they were spent on (one
/// TSC read around each stage per burst, not per packet).
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct StageCycles {
    pub cycles: [AtomicU64; STAGES.len()],
    pub packets: AtomicU64,
}

/// TSC cycles of a worker's poll loop, split by whether the round received
/// anything (busy) or found every queue empty (idle): one TSC read per
/// round, counted into the round before it.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct PollCycles {
    /// `[idle, busy]`, indexed by whether the round received packets.
    pub cycles: [AtomicU64; 2],
}

/// Counters of one lcore, one block per port id.
#[derive(Debug)]
pub struct LcoreCounters {
    pub lcore: u32,
    pub ports: Box<[PortCounters]>,
    pub stages: StageCycles,
    pub poll: PollCycles,
    /// Drops by the stage that dropped them and their reason.
    pub stage_drops: Box<StageDrops>,
}

/// Packets each stage dropped, by reason (indexed as [`STAGES`], then by
/// `DropReason as usize`).
#[derive(Debug)]
pub struct StageDrops(pub [[AtomicU64; DropReason::COUNT]; STAGES.len()]);

impl Default for StageDrops {
    fn default() -> Self {
        StageDrops([const { [const { AtomicU64::new(0) }; DropReason::COUNT] }; STAGES.len()])
    }
}

/// Add `n` to a counter that only the calling lcore writes.
#[inline(always)]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

impl LcoreCounters {
    /// Counters for `lcore` covering port ids `0..port_count`.
    pub fn new(lcore: u32, port_count: usize) -> Self {
        LcoreCounters {
            lcore,
            ports: (0..port_count).map(|_| PortCounters::default()).collect(),
            stages: StageCycles::default(),
            poll: PollCycles::default(),
            stage_drops: Box::default(),
        }
    }

    /// Count the `cycles` of one poll round, busy when it received packets.
    #[inline(always)]
    pub fn poll_round(&self, busy: bool, cycles: u64) {
        bump(&self.poll.cycles[usize::from(busy)], cycles);
    }

    /// Busy and idle poll cycles so far.
    pub fn poll_snapshot(&self) -> (u64, u64) {
        (
            self.poll.cycles[1].load(Relaxed),
            self.poll.cycles[0].load(Relaxed),
        )
    }

    /// Count packets received on `port`.
    #[inline(always)]
    pub fn rx(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].rx, n);
    }

    /// Count packets sent on `port`.
    #[inline(always)]
    pub fn tx(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].tx, n);
    }

    /// Count packets handed to the control plane from `port`.
    #[inline(always)]
    pub fn punted(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].punted, n);
    }

    /// Count packets the control plane created for `port`.
    pub fn originated(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].originated, n);
    }

    /// Count packets the control plane handed this lcore to send on `port`.
    #[cold]
    pub fn injected(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].injected, n);
    }

    /// Count packets from `port` a hook stole.
    #[cold]
    pub fn stolen(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].stolen, n);
    }

    /// Count packets from `port` the control plane consumed.
    pub fn consumed(&self, port: u16, n: u64) {
        bump(&self.ports[port as usize].consumed, n);
    }

    /// Count packets dropped for `reason`, attributed to `port`.
    #[inline(always)]
    pub fn dropped(&self, port: u16, reason: DropReason, n: u64) {
        bump(&self.ports[port as usize].drops[reason as usize], n);
    }

    /// Count packets stage `stage` (index into [`STAGES`]) dropped for `reason`.
    #[inline(always)]
    pub fn stage_dropped(&self, stage: usize, reason: DropReason, n: u64) {
        if let Some(s) = self.stage_drops.0.get(stage) {
            bump(&s[reason as usize], n);
        }
    }

    /// Drops so far by stage and reason: `(stage name, reason, packets)`,
    /// the non-zero ones.
    pub fn stage_drops_snapshot(&self) -> Vec<(&'static str, DropReason, u64)> {
        let mut out = Vec::new();
        for (name, by_reason) in STAGES.iter().zip(self.stage_drops.0.iter()) {
            for reason in DropReason::ALL {
                let n = by_reason[reason as usize].load(Relaxed);
                if n != 0 {
                    out.push((*name, reason, n));
                }
            }
        }
        out
    }

    /// Add one burst's stage timings: `tsc[i]..tsc[i + 1]` is stage `i`.
    #[inline(always)]
    pub fn stage_cycles(&self, tsc: &[u64; STAGES.len() + 1], packets: u64) {
        for (i, c) in self.stages.cycles.iter().enumerate() {
            bump(c, tsc[i + 1].wrapping_sub(tsc[i]));
        }
        bump(&self.stages.packets, packets);
    }

    /// Cycles per stage and packets timed.
    pub fn stage_snapshot(&self) -> ([u64; STAGES.len()], u64) {
        (
            std::array::from_fn(|i| self.stages.cycles[i].load(Relaxed)),
            self.stages.packets.load(Relaxed),
        )
    }

    /// Into `out` (one per port), the counters a packet ends in: tx,
    /// drops, consumed, stolen. Read these for every lcore before
    /// [`Self::read_starts`]: a packet is counted where it starts before
    /// where it ends, so a running fastpath never shows more ended than
    /// started.
    pub fn read_ends(&self, out: &mut [PortCount]) {
        for (p, o) in self.ports.iter().zip(out.iter_mut()) {
            o.tx = p.tx.load(Relaxed);
            o.consumed = p.consumed.load(Relaxed);
            o.stolen = p.stolen.load(Relaxed);
            o.drops = hooks::DropCounters(std::array::from_fn(|i| p.drops[i].load(Relaxed)));
        }
    }

    /// Into `out`, the other counters (rx, originated, punted, ...).
    pub fn read_starts(&self, out: &mut [PortCount]) {
        for (p, o) in self.ports.iter().zip(out.iter_mut()) {
            o.rx = p.rx.load(Relaxed);
            o.originated = p.originated.load(Relaxed);
            o.injected = p.injected.load(Relaxed);
            o.punted = p.punted.load(Relaxed);
        }
    }

    /// A plain copy of this lcore's counters.
    pub fn snapshot(&self) -> Vec<PortCount> {
        self.ports
            .iter()
            .map(|p| PortCount {
                rx: p.rx.load(Relaxed),
                tx: p.tx.load(Relaxed),
                punted: p.punted.load(Relaxed),
                originated: p.originated.load(Relaxed),
                injected: p.injected.load(Relaxed),
                consumed: p.consumed.load(Relaxed),
                stolen: p.stolen.load(Relaxed),
                drops: hooks::DropCounters(std::array::from_fn(|i| p.drops[i].load(Relaxed))),
            })
            .collect()
    }
}

/// Plain counter values of one port (for one lcore, or summed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCount {
    pub rx: u64,
    pub tx: u64,
    pub punted: u64,
    pub originated: u64,
    pub injected: u64,
    pub consumed: u64,
    pub stolen: u64,
    pub drops: hooks::DropCounters,
}

impl PortCount {
    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &PortCount) {
        self.rx += other.rx;
        self.tx += other.tx;
        self.punted += other.punted;
        self.originated += other.originated;
        self.injected += other.injected;
        self.consumed += other.consumed;
        self.stolen += other.stolen;
        self.drops.merge(&other.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_on_their_port_and_reason() {
        let c = LcoreCounters::new(1, 3);
        c.rx(0, 32);
        c.tx(1, 30);
        c.dropped(1, DropReason::TxQueueFull, 2);
        let s = c.snapshot();
        assert_eq!(s[0].rx, 32);
        assert_eq!(s[1].tx, 30);
        assert_eq!(s[1].drops.get(DropReason::TxQueueFull), 2);
        assert_eq!(s[2], PortCount::default());
    }

    #[test]
    fn blocks_do_not_share_cache_lines() {
        assert_eq!(std::mem::align_of::<PortCounters>(), 64);
        assert_eq!(std::mem::size_of::<PortCounters>() % 64, 0);
    }
}
