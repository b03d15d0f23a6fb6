//! IPv6 neighbour aging, in ARP's round once a second (RFC 4861 7.3.3 with
//! ARP's timers): reachable neighbours went stale in the table's own aging;
//! a stale one a worker used (the RFC's DELAY, until this round) is probed
//! by unicast solicitations (PROBE) and keeps forwarding meanwhile; failed
//! and long-unused ones are reclaimed.

use super::policy;
use super::ControlPlane;
use crate::neigh::{unscope6, EthHeader, NeighState};
use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

impl ControlPlane<'_> {
    /// The IPv6 entries' share of [`age`](ControlPlane::age).
    pub(super) fn age6(&mut self, now: Instant) {
        let table = self.neigh.table().clone();
        let (mut probe, mut reclaim) = (Vec::new(), Vec::new());
        for (i, e) in table.iter6() {
            let target = e.addr6();
            if e.is_static() || self.pending6.contains_key(&target) {
                continue;
            }
            if self.neigh.take_used(i) {
                self.last_used6.insert(target, now);
            }
            let unused_for = self
                .last_used6
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
            if self.neigh.reclaim6(target).is_ok() {
                self.last_used6.remove(&target);
                self.stats.neigh_reclaimed += 1;
            }
        }
        for (target, hdr) in probe {
            self.reprobe6(target, hdr, now);
        }
    }

    /// Probe a stale neighbour (scoped: a link-local one names its port)
    /// by unicast to its known MAC.
    fn reprobe6(&mut self, target: Ipv6Addr, hdr: EthHeader, now: Instant) {
        let (wire, link) = unscope6(target);
        let Some(port) = self
            .ports6
            .iter()
            .flatten()
            .map(|p| (p.id, p.mac))
            .find(|&(id, mac)| {
                mac == hdr.src && link.is_none_or(|l| l == id) && self.on_link6(id, wire)
            })
            .map(|(id, _)| id)
        else {
            return;
        };
        let probes = self.params.probes;
        self.start_resolution6(target, port, probes, Some(hdr.dst), now);
        self.solicit6(target, now);
    }
}
