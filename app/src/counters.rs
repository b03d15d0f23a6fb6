//! Per-lcore pipeline counters. Each lcore writes only its own (single writer:
//! a relaxed load and store, no locked instruction); the main lcore reads them
//! all and sums. Every block is cache-line aligned so no two lcores share a line.

use hooks::DropReason;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counters of one port as one lcore saw it.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct PortCounters {
    /// Packets received on this port.
    pub rx: AtomicU64,
    /// Packets handed to this port's driver for transmission.
    pub tx: AtomicU64,
    /// Packets meant for this port (or received on it) and dropped, by reason.
    pub drops: [AtomicU64; DropReason::COUNT],
}

/// Counters of one lcore, one block per port id.
#[derive(Debug)]
pub struct LcoreCounters {
    pub lcore: u32,
    pub ports: Box<[PortCounters]>,
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
        }
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

    /// Count packets dropped for `reason`, attributed to `port`.
    #[inline(always)]
    pub fn dropped(&self, port: u16, reason: DropReason, n: u64) {
        bump(&self.ports[port as usize].drops[reason as usize], n);
    }

    /// A plain copy of this lcore's counters.
    pub fn snapshot(&self) -> Vec<PortCount> {
        self.ports
            .iter()
            .map(|p| PortCount {
                rx: p.rx.load(Relaxed),
                tx: p.tx.load(Relaxed),
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
    pub drops: hooks::DropCounters,
}

impl PortCount {
    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &PortCount) {
        self.rx += other.rx;
        self.tx += other.tx;
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
