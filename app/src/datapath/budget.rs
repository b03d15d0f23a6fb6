//! Per-worker punt budgets: how many packets of each kind a worker may hand
//! to the control plane per period, per input port. Over budget, the worker
//! drops the packet itself.
//!
//! # Why
//!
//! A flood of one kind (ARP, pings to us, unresolvable next hops, TTL 1,
//! unroutable or oversized traffic) on one port then cannot fill the punt
//! ring and starve the other kinds or the other ports, nor keep the control
//! lcore from its timers.
//!
//! # ARP tiers
//!
//! An ARP from a sender the control plane is waiting for (a resolution or a
//! re-probe in progress, see [`ArpAwaited`]) is taken from a budget of its
//! own first, so a flood cannot starve the answers to our own requests.
//! Other ARP is limited per source (hashed sender address) before it reaches
//! the port's budget, so one host cannot spend it alone.

use super::punt::Punt;
use hooks::DropReason;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

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
    // Nd: 51,200 per second, as ARP.
    Rate {
        packets: 512,
        period_ms: 10,
    },
    // LocalIcmp6: 12,800 echo requests per second, as IPv4's.
    Rate {
        packets: 128,
        period_ms: 10,
    },
    // HopLimitExceeded: 100 per second, as TtlExceeded.
    Rate {
        packets: 10,
        period_ms: 100,
    },
    // Resolve6: 25,600 per second, as Resolve.
    Rate {
        packets: 256,
        period_ms: 10,
    },
    // NoRoute6: 100 per second, as NoRoute.
    Rate {
        packets: 10,
        period_ms: 100,
    },
    // PacketTooBig: 100 per second, as FragNeeded.
    Rate {
        packets: 10,
        period_ms: 100,
    },
    // BeyondScope: 100 per second.
    Rate {
        packets: 10,
        period_ms: 100,
    },
    // Kernel: 25,600 per second (TCP to the router: BGP, SSH; each is a
    // write to the kernel interface on the control lcore, which must keep
    // up with every port's budget and its other work: a flood measured
    // here at 100,000 per second overran the punt ring).
    Rate {
        packets: 256,
        period_ms: 10,
    },
];

/// ARP from a sender the control plane awaits: per port, ahead of the rest.
pub const AWAITED_ARP: Rate = Rate {
    packets: 256,
    period_ms: 10,
};

/// Other ARP from one source (one of [`SOURCES`] hash buckets of the sender
/// address) per port: an eighth of the port's ARP budget.
pub const SOURCE_ARP: Rate = Rate {
    packets: 64,
    period_ms: 10,
};

/// To the kernel from a configured routing peer: per port, ahead of the
/// rest, so that a flood at the router's address cannot starve a BGP
/// session.
pub const PEER_KERNEL: Rate = Rate {
    packets: 256,
    period_ms: 10,
};

/// To the kernel from one source (one of [`SOURCES`] hash buckets of the
/// source address) per port: a quarter of the port's kernel budget.
pub const SOURCE_KERNEL: Rate = Rate {
    packets: 64,
    period_ms: 10,
};

/// Hash buckets of ARP senders per port.
pub const SOURCES: usize = 64;

/// Ports with budgets of their own; ports with higher ids share the last.
pub const BUDGET_PORTS: usize = 16;

/// What a packet over budget is dropped as: TTL exceeded and no route keep
/// their own reason (only the ICMP error is forgone), the others are
/// `punt_rate_limited`.
pub fn over_budget_reason(kind: Punt) -> DropReason {
    match kind {
        Punt::TtlExceeded => DropReason::TtlExceeded,
        Punt::HopLimitExceeded => DropReason::Ipv6HopLimitExceeded,
        Punt::NoRoute => DropReason::NoRoute,
        Punt::NoRoute6 => DropReason::Ipv6NoRoute,
        Punt::BeyondScope => DropReason::Icmpv6BeyondScope,
        Punt::FragNeeded => DropReason::MtuExceeded,
        Punt::PacketTooBig => DropReason::Ipv6PacketTooBig,
        Punt::Arp | Punt::LocalIcmp | Punt::Resolve => DropReason::PuntRateLimited,
        Punt::Nd | Punt::LocalIcmp6 | Punt::Resolve6 => DropReason::PuntRateLimited,
        Punt::Kernel => DropReason::KernelRateLimited,
    }
}

/// One budget: packets left and the TSC at which the period ends.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    left: u32,
    period_end: u64,
}

impl Bucket {
    /// Take one packet; `now` is read only when the budget is spent.
    #[inline]
    fn take(&mut self, rate: Rate, now: &mut impl FnMut() -> u64, tsc_hz: u64) -> bool {
        if self.left == 0 {
            let now = now();
            if now < self.period_end {
                return false;
            }
            self.period_end = now + tsc_hz / 1000 * rate.period_ms;
            self.left = rate.packets;
        }
        self.left -= 1;
        true
    }
}

/// The budgets of one input port.
#[derive(Clone, Debug)]
struct PortBudgets {
    kinds: [Bucket; RATES.len()],
    awaited: Bucket,
    sources: [Bucket; SOURCES],
    peers: Bucket,
    kernel_sources: [Bucket; SOURCES],
}

impl Default for PortBudgets {
    fn default() -> Self {
        PortBudgets {
            kinds: Default::default(),
            awaited: Bucket::default(),
            sources: [Bucket::default(); SOURCES],
            peers: Bucket::default(),
            kernel_sources: [Bucket::default(); SOURCES],
        }
    }
}

/// A punt kind with a first tier (taken first when the packet qualifies),
/// then a share per source before the port's budget, and the drop reasons
/// of those two.
struct Tiers<'a> {
    first: (bool, &'a mut Bucket, Rate),
    source: (&'a mut Bucket, Rate),
    port: (&'a mut Bucket, Rate),
    over: (DropReason, DropReason),
}

impl Tiers<'_> {
    fn take(self, now: &mut impl FnMut() -> u64, tsc_hz: u64) -> Result<(), DropReason> {
        let (qualifies, first, rate) = self.first;
        if qualifies && first.take(rate, now, tsc_hz) {
            return Ok(());
        }
        if !self.source.0.take(self.source.1, now, tsc_hz) {
            return Err(self.over.0);
        }
        if !self.port.0.take(self.port.1, now, tsc_hz) {
            return Err(self.over.1);
        }
        Ok(())
    }
}

/// The budgets of one worker. `now` is a TSC reading, `tsc_hz` its rate.
#[derive(Clone, Debug)]
pub struct PuntBudgets {
    ports: Box<[PortBudgets; BUDGET_PORTS]>,
}

impl Default for PuntBudgets {
    fn default() -> Self {
        PuntBudgets {
            ports: Box::new(std::array::from_fn(|_| PortBudgets::default())),
        }
    }
}

/// Bucket of an ARP sender address (Fibonacci hashing, top bits).
#[inline]
fn source_bucket(sender: u32) -> usize {
    (sender.wrapping_mul(0x9e37_79b9) >> (32 - SOURCES.trailing_zeros())) as usize
}

impl PuntBudgets {
    /// Take one punt of `kind` received on `port`; false when over budget.
    /// `now` (a TSC read) is asked for only when a period's budget is spent.
    #[inline]
    pub fn take(
        &mut self,
        kind: Punt,
        port: u16,
        mut now: impl FnMut() -> u64,
        tsc_hz: u64,
    ) -> bool {
        let k = kind as usize;
        self.port(port).kinds[k].take(RATES[k], &mut now, tsc_hz)
    }

    /// Take one ARP punt from `sender` received on `port`, `awaited` if the
    /// control plane waits for that sender: from the awaited budget first,
    /// then the source's and the port's. The drop reason when refused.
    pub fn take_arp(
        &mut self,
        port: u16,
        sender: u32,
        awaited: bool,
        mut now: impl FnMut() -> u64,
        tsc_hz: u64,
    ) -> Result<(), DropReason> {
        let b = self.port(port);
        let k = Punt::Arp as usize;
        Tiers {
            first: (awaited, &mut b.awaited, AWAITED_ARP),
            source: (&mut b.sources[source_bucket(sender)], SOURCE_ARP),
            port: (&mut b.kinds[k], RATES[k]),
            over: (DropReason::PuntSourceLimited, DropReason::PuntRateLimited),
        }
        .take(&mut now, tsc_hz)
    }

    /// Take one punt to the kernel from `source` (a hash of its address)
    /// received on `port`, `peer` if it comes from a configured routing
    /// peer: from the peers' budget first, then the source's and the
    /// port's. The drop reason when refused.
    pub fn take_kernel(
        &mut self,
        port: u16,
        source: u32,
        peer: bool,
        mut now: impl FnMut() -> u64,
        tsc_hz: u64,
    ) -> Result<(), DropReason> {
        let b = self.port(port);
        let k = Punt::Kernel as usize;
        Tiers {
            first: (peer, &mut b.peers, PEER_KERNEL),
            source: (&mut b.kernel_sources[source_bucket(source)], SOURCE_KERNEL),
            port: (&mut b.kinds[k], RATES[k]),
            over: (
                DropReason::KernelSourceLimited,
                DropReason::KernelRateLimited,
            ),
        }
        .take(&mut now, tsc_hz)
    }

    #[inline]
    fn port(&mut self, port: u16) -> &mut PortBudgets {
        let i = usize::from(port).min(BUDGET_PORTS - 1);
        &mut self.ports[i]
    }
}

/// Slots of [`ArpAwaited`].
const AWAITED_SLOTS: usize = 1024;

/// The senders whose ARP the control plane waits for (resolutions and
/// re-probes in progress), for the workers' budgets: a direct-mapped set of
/// addresses, written by the control plane only, read by workers. A newer
/// address may take an older one's slot: that one's answers then meet the
/// ordinary budgets, never worse than without the set.
pub struct ArpAwaited {
    slots: Box<[AtomicU32]>,
}

impl Default for ArpAwaited {
    fn default() -> Self {
        ArpAwaited {
            slots: (0..AWAITED_SLOTS).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

impl ArpAwaited {
    #[inline]
    fn slot(&self, a: u32) -> &AtomicU32 {
        let i = a.wrapping_mul(0x9e37_79b9) >> (32 - AWAITED_SLOTS.trailing_zeros());
        &self.slots[i as usize]
    }

    /// The control plane waits for an answer from `a`.
    pub fn insert(&self, a: Ipv4Addr) {
        self.slot(u32::from(a)).store(u32::from(a), Relaxed);
    }

    /// It no longer does.
    pub fn remove(&self, a: Ipv4Addr) {
        let s = self.slot(u32::from(a));
        if s.load(Relaxed) == u32::from(a) {
            s.store(0, Relaxed);
        }
    }

    /// Whether the control plane waits for `a` (host order).
    #[inline]
    pub fn contains(&self, a: u32) -> bool {
        a != 0 && self.slot(a).load(Relaxed) == a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 1_000_000_000;

    #[test]
    fn a_kind_gets_its_packets_per_period_then_waits() {
        let mut b = PuntBudgets::default();
        let n = (0..100)
            .filter(|_| b.take(Punt::NoRoute, 0, || 0, HZ))
            .count();
        assert_eq!(n, 10);
        // Other kinds have their own budget.
        assert!(b.take(Punt::Arp, 0, || 0, HZ));
        // Still inside the 100 ms period: nothing more.
        assert!(!b.take(Punt::NoRoute, 0, || 99_000_000, HZ));
        // The next period refills.
        let n = (0..100)
            .filter(|_| b.take(Punt::NoRoute, 0, || 100_000_000, HZ))
            .count();
        assert_eq!(n, 10);
    }

    #[test]
    fn every_kind_gets_exactly_its_rate() {
        for kind in Punt::ALL {
            let rate = RATES[kind as usize];
            let mut b = PuntBudgets::default();
            let n = (0..100_000).filter(|_| b.take(kind, 0, || 0, HZ)).count();
            assert_eq!(n as u32, rate.packets, "{kind:?}");
            let end = rate.period_ms * 1_000_000;
            assert!(!b.take(kind, 0, || end - 1, HZ), "{kind:?}: refilled early");
            assert!(b.take(kind, 0, || end, HZ), "{kind:?}: not refilled");
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

    #[test]
    fn each_port_has_its_own_budget() {
        let mut b = PuntBudgets::default();
        let n = (0..100)
            .filter(|_| b.take(Punt::NoRoute, 0, || 0, HZ))
            .count();
        assert_eq!(n, 10);
        // Port 0 spent: port 1 is untouched.
        let n = (0..100)
            .filter(|_| b.take(Punt::NoRoute, 1, || 0, HZ))
            .count();
        assert_eq!(n, 10);
        // Ports past the last share its budget, and never index out.
        let last = BUDGET_PORTS as u16 - 1;
        assert!(b.take(Punt::NoRoute, u16::MAX, || 0, HZ));
        let n = (0..100)
            .filter(|_| b.take(Punt::NoRoute, last, || 0, HZ))
            .count();
        assert_eq!(n, 9);
    }

    /// Sender addresses in distinct source buckets.
    fn senders(n: usize) -> Vec<u32> {
        let mut seen = [false; SOURCES];
        (0x0a01_0000u32..)
            .filter(|a| !std::mem::replace(&mut seen[source_bucket(*a)], true))
            .take(n)
            .collect()
    }

    #[test]
    fn one_arp_source_gets_its_share_not_the_port_budget() {
        let mut b = PuntBudgets::default();
        let one = senders(1)[0];
        let r: Vec<_> = (0..1000)
            .map(|_| b.take_arp(0, one, false, || 0, HZ))
            .collect();
        assert_eq!(r.iter().filter(|r| r.is_ok()).count(), 64);
        assert!(r[64..]
            .iter()
            .all(|r| *r == Err(DropReason::PuntSourceLimited)));
        // The port's budget is still there for the others.
        let others = senders(9);
        let ok = others[1..]
            .iter()
            .flat_map(|&s| (0..64).map(move |_| s))
            .filter(|&s| b.take_arp(0, s, false, || 0, HZ).is_ok())
            .count();
        assert_eq!(ok, 512 - 64, "the port's 512 per period");
    }

    #[test]
    fn a_routing_peer_reaches_the_kernel_ahead_of_a_flood() {
        let mut b = PuntBudgets::default();
        let all = senders(SOURCES);
        // One source floods: its share passes, the rest is its own drop.
        let r: Vec<_> = (0..1000)
            .map(|_| b.take_kernel(0, all[0], false, || 0, HZ))
            .collect();
        let share = SOURCE_KERNEL.packets as usize;
        assert_eq!(r.iter().filter(|r| r.is_ok()).count(), share);
        assert!(r[share..]
            .iter()
            .all(|r| *r == Err(DropReason::KernelSourceLimited)));
        // Many sources spend the port's budget.
        let passed = all[1..]
            .iter()
            .flat_map(|&s| (0..share).map(move |_| s))
            .filter(|&s| b.take_kernel(0, s, false, || 0, HZ).is_ok())
            .count();
        assert_eq!(
            passed + share,
            RATES[Punt::Kernel as usize].packets as usize
        );
        assert!(b.take_kernel(0, all[5], false, || 0, HZ).is_err());
        // A peer (even one hashing with a flooder) still passes, up to its
        // own budget; a non-peer from the same address does not.
        let peer = all[0];
        let ok = (0..10_000)
            .filter(|_| b.take_kernel(0, peer, true, || 0, HZ).is_ok())
            .count();
        assert_eq!(ok, PEER_KERNEL.packets as usize);
        assert!(b.take_kernel(0, peer, false, || 0, HZ).is_err());
        // Another port is untouched.
        assert!(b.take_kernel(1, peer, false, || 0, HZ).is_ok());
    }

    #[test]
    fn awaited_arp_passes_ahead_of_a_flood() {
        let mut b = PuntBudgets::default();
        // A flood from every source spends the port's ARP budget.
        for s in senders(SOURCES) {
            for _ in 0..64 {
                let _ = b.take_arp(0, s, false, || 0, HZ);
            }
        }
        let gateway = 0x0a02_0002;
        assert!(b.take_arp(0, gateway, false, || 0, HZ).is_err());
        // Awaited: 256 per period of its own.
        let ok = (0..1000)
            .filter(|_| b.take_arp(0, gateway, true, || 0, HZ).is_ok())
            .count();
        assert_eq!(ok, 256);
        // Another port's ARP is unaffected.
        assert_eq!(b.take_arp(1, gateway, false, || 0, HZ), Ok(()));
    }

    #[test]
    fn awaited_set_holds_the_latest_address_of_a_slot() {
        let w = ArpAwaited::default();
        let a = Ipv4Addr::new(10, 0, 2, 2);
        assert!(!w.contains(u32::from(a)));
        w.insert(a);
        assert!(w.contains(u32::from(a)));
        assert!(!w.contains(0));
        w.remove(Ipv4Addr::new(10, 0, 2, 3));
        assert!(
            w.contains(u32::from(a)),
            "removing another address leaves it"
        );
        w.remove(a);
        assert!(!w.contains(u32::from(a)));
    }
}
