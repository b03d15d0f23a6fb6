//! Per-worker punt budgets: how many packets of each kind a worker may hand
//! to the control plane per period. A flood of one kind (ARP, pings to us,
//! unresolvable next hops, TTL 1, unroutable or oversized traffic) then cannot fill the
//! punt ring and starve the others, nor keep the control lcore from its
//! timers. Over budget, the worker drops the packet itself.

use super::punt::Punt;
use hooks::DropReason;

/// Packets per period and the period for one punt kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub packets: u32,
    pub period_ms: u64,
}

/// The budget of each punt kind, indexed by its code.
pub const RATES: [Rate; Punt::ALL.len() + 1] = [
    // 0: unused.
    Rate {
        packets: 0,
        period_ms: 1,
    },
    // Arp: 51,200 per second.
    Rate {
        packets: 512,
        period_ms: 10,
    },
    // LocalIcmp: 12,800 echo requests per second.
    Rate {
        packets: 128,
        period_ms: 10,
    },
    // TtlExceeded: 100 per second (the ICMP errors are rate-limited anyway).
    Rate {
        packets: 10,
        period_ms: 100,
    },
    // Resolve: 25,600 per second (queues hold 64 per neighbour).
    Rate {
        packets: 256,
        period_ms: 10,
    },
    // NoRoute: 100 per second, for ICMP net unreachable.
    Rate {
        packets: 10,
        period_ms: 100,
    },
    // FragNeeded: 100 per second, for ICMP fragmentation needed.
    Rate {
        packets: 10,
        period_ms: 100,
    },
];

/// What a packet over budget is dropped as: TTL exceeded and no route keep
/// their own reason (only the ICMP error is forgone), the others are
/// `punt_rate_limited`.
pub fn over_budget_reason(kind: Punt) -> DropReason {
    match kind {
        Punt::TtlExceeded => DropReason::TtlExceeded,
        Punt::NoRoute => DropReason::NoRoute,
        Punt::FragNeeded => DropReason::MtuExceeded,
        Punt::Arp | Punt::LocalIcmp | Punt::Resolve => DropReason::PuntRateLimited,
    }
}

/// The budgets of one worker. `now` is a TSC reading, `tsc_hz` its rate.
#[derive(Clone, Debug, Default)]
pub struct PuntBudgets {
    left: [u32; RATES.len()],
    period_end: [u64; RATES.len()],
}

impl PuntBudgets {
    /// Take one punt of `kind`; false when over budget. `now` (a TSC read)
    /// is asked for only when the period's budget is spent.
    #[inline]
    pub fn take(&mut self, kind: Punt, now: impl FnOnce() -> u64, tsc_hz: u64) -> bool {
        let k = kind as usize;
        if self.left[k] == 0 {
            let now = now();
            if now < self.period_end[k] {
                return false;
            }
            let rate = RATES[k];
            self.period_end[k] = now + tsc_hz / 1000 * rate.period_ms;
            self.left[k] = rate.packets;
        }
        self.left[k] -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 1_000_000_000;

    #[test]
    fn a_kind_gets_its_packets_per_period_then_waits() {
        let mut b = PuntBudgets::default();
        let n = (0..100).filter(|_| b.take(Punt::NoRoute, || 0, HZ)).count();
        assert_eq!(n, 10);
        // Other kinds have their own budget.
        assert!(b.take(Punt::Arp, || 0, HZ));
        // Still inside the 100 ms period: nothing more.
        assert!(!b.take(Punt::NoRoute, || 99_000_000, HZ));
        // The next period refills.
        let n = (0..100)
            .filter(|_| b.take(Punt::NoRoute, || 100_000_000, HZ))
            .count();
        assert_eq!(n, 10);
    }

    #[test]
    fn every_kind_gets_exactly_its_rate() {
        for kind in Punt::ALL {
            let rate = RATES[kind as usize];
            let mut b = PuntBudgets::default();
            let n = (0..100_000).filter(|_| b.take(kind, || 0, HZ)).count();
            assert_eq!(n as u32, rate.packets, "{kind:?}");
            let end = rate.period_ms * 1_000_000;
            assert!(!b.take(kind, || end - 1, HZ), "{kind:?}: refilled early");
            assert!(b.take(kind, || end, HZ), "{kind:?}: not refilled");
        }
    }

    #[test]
    fn over_budget_reasons() {
        assert_eq!(
            over_budget_reason(Punt::TtlExceeded),
            DropReason::TtlExceeded
        );
        assert_eq!(over_budget_reason(Punt::NoRoute), DropReason::NoRoute);
        assert_eq!(
            over_budget_reason(Punt::FragNeeded),
            DropReason::MtuExceeded
        );
        assert_eq!(over_budget_reason(Punt::Arp), DropReason::PuntRateLimited);
        assert_eq!(
            over_budget_reason(Punt::Resolve),
            DropReason::PuntRateLimited
        );
        assert_eq!(
            over_budget_reason(Punt::LocalIcmp),
            DropReason::PuntRateLimited
        );
    }
}
