//! Neighbour aging, once a second: reachable neighbours go stale, the used
//! ones are re-probed by unicast, failed and long-unused ones are reclaimed,
//! and failed ECMP gateways are asked again once their hold is over.

use super::policy;
use super::ControlPlane;
use crate::neigh::{EthHeader, NeighState};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

impl ControlPlane<'_> {
    /// Reachable neighbours not confirmed for `reachable` become stale. A
    /// stale neighbour a worker used within `gc_stale` (or a route's
    /// gateway) is re-probed by unicast and keeps forwarding meanwhile; a
    /// probe answered makes it reachable again, unanswered probes make it
    /// fail. Failed learned entries, and stale ones unused for longer, are
    /// reclaimed.
    pub(super) fn age(&mut self, now: Instant) {
        let reachable_ms = self.params.reachable.as_millis() as u64;
        let aged = self.neigh.age(self.now_ms(now), reachable_ms);
        self.stats.neigh_stale += aged as u64;
        let table = self.neigh.table().clone();
        let (mut probe, mut reclaim) = (Vec::new(), Vec::new());
        for (i, e) in table.iter() {
            let target = e.addr();
            if e.is_static() || self.pending.contains_key(&target) {
                continue;
            }
            if self.neigh.take_used(i) {
                self.last_used.insert(target, now);
            }
            let unused_for = self
                .last_used
                .get(&target)
                .map_or(Duration::MAX, |t| now.saturating_duration_since(*t));
            if e.state() == NeighState::Stale
                && (e.is_gateway() || unused_for <= self.params.gc_stale)
            {
                probe.push((target, e.hh().header()));
            } else if e.is_reclaimable()
                && policy::reclaim_due(e.state(), unused_for, self.params.gc_stale)
            {
                reclaim.push(target);
            }
        }
        for target in reclaim {
            if self.neigh.reclaim(target).is_ok() {
                self.last_used.remove(&target);
                self.stats.neigh_reclaimed += 1;
            }
        }
        self.neigh.collect();
        for (target, hdr) in probe {
            self.reprobe(target, hdr, now);
        }
        self.probe_down_gateways(now);
        self.age6(now);
    }

    /// ECMP members that failed get no packets, so nothing would ask for
    /// them again: once their hold is over, one ARP request each.
    fn probe_down_gateways(&mut self, now: Instant) {
        for (gateway, port) in self.fib.down_gateways() {
            let target = Ipv4Addr::from(gateway);
            let held = self
                .failed_at
                .get(&target)
                .is_some_and(|at| now.saturating_duration_since(*at) < self.params.failed_hold);
            let Some(p) = self.port(port) else { continue };
            if held || self.pending.contains_key(&target) {
                continue;
            }
            self.start_resolution(target, port, 1, None, now);
            self.solicit(target, p, now);
        }
    }

    /// Re-probe a stale neighbour by unicast to its known MAC.
    fn reprobe(&mut self, target: Ipv4Addr, hdr: EthHeader, now: Instant) {
        let Some(port) = self
            .ports
            .iter()
            .flatten()
            .find(|p| p.mac == hdr.src && self.on_link(p, target))
            .copied()
        else {
            return;
        };
        let probes = self.params.probes;
        self.start_resolution(target, port.id, probes, Some(hdr.dst), now);
        self.solicit(target, port, now);
    }
}
