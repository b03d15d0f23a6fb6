//! The control plane's neighbour policy, on plain values (unit-tested here,
//! no DPDK): which resolutions may start and with how many probes, and
//! which table entries are reclaimed.

use crate::neigh::NeighState;
use std::time::Duration;

/// Resolutions of addresses that are not configured gateways, at once over
/// all ports (more distinct next hops are dropped as `neigh_resolve_limit`
/// until some finish).
pub const MAX_RESOLUTIONS: usize = 256;
/// The same, out of one port: a sweep on one link leaves room for the others.
pub const PORT_RESOLUTIONS: usize = 128;
/// Resolutions kept for configured gateways beyond [`MAX_RESOLUTIONS`]: a
/// sweep of on-link addresses never keeps a route's gateway from resolving.
pub const GATEWAY_RESERVE: usize = 32;
/// Packets waiting for resolution at most, over all neighbours: the mbuf
/// pool keeps room for this many beyond the rings.
pub const MAX_QUEUED: usize = 4096;
/// Of [`MAX_QUEUED`], kept for packets to configured gateways.
pub const GATEWAY_QUEUED: usize = 512;

/// Resolutions in progress (those that queue packets; re-probes of stale
/// neighbours are not counted).
#[derive(Clone, Debug, Default)]
pub struct Load {
    total: usize,
    per_port: Vec<usize>,
}

impl Load {
    /// Resolutions in progress over all ports.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Resolutions in progress out of `port`.
    pub fn port(&self, port: u16) -> usize {
        self.per_port.get(usize::from(port)).copied().unwrap_or(0)
    }

    pub fn start(&mut self, port: u16) {
        let p = usize::from(port);
        if self.per_port.len() <= p {
            self.per_port.resize(p + 1, 0);
        }
        self.per_port[p] += 1;
        self.total += 1;
    }

    pub fn end(&mut self, port: u16) {
        if let Some(n) = self.per_port.get_mut(usize::from(port)) {
            *n = n.saturating_sub(1);
            self.total = self.total.saturating_sub(1);
        }
    }
}

/// What a new resolution is to the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub port: u16,
    /// A configured gateway (a route holds its entry).
    pub gateway: bool,
    /// Failed lately and not answered since.
    pub failed_before: bool,
}

/// Whether a new resolution may start, and if so with how many ARP
/// requests: `probes` normally; one for an address that failed lately
/// (it fails in one retransmit time, not the whole backoff), and one while
/// the port is busy with resolutions (over half its limit), so a sweep of
/// unused addresses holds each slot a quarter of a second, not 1.75 s.
/// Gateways have their reserve and always get every probe.
pub fn admit(load: &Load, req: Request, probes: u32) -> Option<u32> {
    if req.gateway {
        return (load.total() < MAX_RESOLUTIONS + GATEWAY_RESERVE).then_some(probes);
    }
    if load.total() >= MAX_RESOLUTIONS || load.port(req.port) >= PORT_RESOLUTIONS {
        return None;
    }
    let busy = load.port(req.port) >= PORT_RESOLUTIONS / 2;
    Some(if req.failed_before || busy { 1 } else { probes })
}

/// Whether one more packet may wait for resolution, `queued` waiting now.
pub fn may_queue(queued: usize, gateway: bool) -> bool {
    let limit = if gateway {
        MAX_QUEUED
    } else {
        MAX_QUEUED - GATEWAY_QUEUED
    };
    queued < limit
}

/// Whether a learned entry (static and gateway entries never are) with no
/// resolution in progress is reclaimed: failed, or stale and unused for
/// `gc_stale` (the kernel's `gc_stale_time`).
pub fn reclaim_due(state: NeighState, unused_for: Duration, gc_stale: Duration) -> bool {
    match state {
        NeighState::Failed => true,
        NeighState::Stale => unused_for > gc_stale,
        NeighState::Incomplete | NeighState::Reachable => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(port: u16, gateway: bool, failed_before: bool) -> Request {
        Request {
            port,
            gateway,
            failed_before,
        }
    }

    fn loaded(per_port: &[usize]) -> Load {
        let mut l = Load::default();
        for (p, &n) in per_port.iter().enumerate() {
            for _ in 0..n {
                l.start(p as u16);
            }
        }
        l
    }

    #[test]
    fn a_port_full_of_resolutions_leaves_the_others_room() {
        let l = loaded(&[PORT_RESOLUTIONS]);
        assert_eq!(admit(&l, req(0, false, false), 3), None);
        assert_eq!(admit(&l, req(1, false, false), 3), Some(3));
    }

    #[test]
    fn the_total_limit_applies_over_ports() {
        let l = loaded(&[PORT_RESOLUTIONS, PORT_RESOLUTIONS]);
        assert_eq!(l.total(), MAX_RESOLUTIONS);
        assert_eq!(admit(&l, req(2, false, false), 3), None);
    }

    #[test]
    fn gateways_have_a_reserve() {
        let mut l = loaded(&[PORT_RESOLUTIONS, PORT_RESOLUTIONS]);
        for _ in 0..GATEWAY_RESERVE {
            assert_eq!(admit(&l, req(1, true, false), 3), Some(3));
            l.start(1);
        }
        assert_eq!(admit(&l, req(1, true, false), 3), None);
        assert!(may_queue(MAX_QUEUED - GATEWAY_QUEUED, true));
        assert!(!may_queue(MAX_QUEUED - GATEWAY_QUEUED, false));
        assert!(!may_queue(MAX_QUEUED, true));
    }

    #[test]
    fn an_address_that_failed_before_gets_one_probe() {
        let l = Load::default();
        assert_eq!(admit(&l, req(0, false, false), 3), Some(3));
        assert_eq!(admit(&l, req(0, false, true), 3), Some(1));
        // A gateway keeps trying in full.
        assert_eq!(admit(&l, req(0, true, true), 3), Some(3));
    }

    #[test]
    fn a_busy_port_gets_one_probe_per_resolution() {
        let l = loaded(&[PORT_RESOLUTIONS / 2 - 1]);
        assert_eq!(admit(&l, req(0, false, false), 3), Some(3));
        let l = loaded(&[PORT_RESOLUTIONS / 2]);
        assert_eq!(admit(&l, req(0, false, false), 3), Some(1));
        assert_eq!(admit(&l, req(1, false, false), 3), Some(3));
    }

    #[test]
    fn load_counts_starts_and_ends() {
        let mut l = loaded(&[2, 1]);
        l.end(0);
        assert_eq!((l.total(), l.port(0), l.port(1)), (2, 1, 1));
        l.end(5); // never started: ignored
        assert_eq!(l.total(), 2);
    }

    #[test]
    fn failed_and_long_unused_stale_entries_are_reclaimed() {
        let gc = Duration::from_secs(60);
        let s = Duration::from_secs;
        assert!(reclaim_due(NeighState::Failed, s(0), gc));
        assert!(!reclaim_due(NeighState::Stale, s(60), gc));
        assert!(reclaim_due(NeighState::Stale, s(61), gc));
        assert!(!reclaim_due(NeighState::Reachable, s(1000), gc));
        assert!(!reclaim_due(NeighState::Incomplete, s(1000), gc));
    }
}
