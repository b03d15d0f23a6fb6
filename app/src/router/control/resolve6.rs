//! IPv6 next-hop resolution by neighbour discovery (RFC 4861 7.2): packets
//! the workers could not send wait in a bounded queue per neighbour while
//! solicitations go to its solicited-node group with ARP's backoff, under
//! ARP's budgets (`policy`, the same `load` and `queued`); an advertisement
//! sends them, silence fails the neighbour and answers each with an ICMPv6
//! address unreachable (RFC 4861 7.2.2, RFC 4443 3.1 code 3). A neighbour
//! is named by its scoped address (`neigh::scope`: a link-local one with
//! its port), in the table and in the queues alike.

use super::frames6::neighbor_solicit;
use super::policy::{self, Request};
use super::ControlPlane;
use crate::dpdk::Mbuf;
use crate::fib::HopKind;
use crate::neigh::{scope6, unscope6, NeighState};
use hooks::wire::icmpv6::{unreachable, ErrorRepr};
use hooks::wire::ipv6::Ipv6Packet;
use hooks::DropReason;
use std::collections::VecDeque;
use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

/// How long a failed resolution is remembered (for the hold).
const FAILED_REMEMBERED: Duration = Duration::from_secs(60);

/// A resolution in progress (the RFC's INCOMPLETE; with `unicast`, PROBE).
pub(super) struct Resolution6 {
    pub(super) port: u16,
    pub(super) queue: VecDeque<Mbuf>,
    sent: u32,
    /// Solicitations to send before failing.
    probes: u32,
    next_at: Instant,
    /// Unicast probe of a stale neighbour (its MAC known); not counted in
    /// the load.
    pub(super) unicast: Option<[u8; 6]>,
}

impl ControlPlane<'_> {
    /// An IPv6 packet whose next hop has no usable header: its next hop
    /// found again in the IPv6 FIB, then sent at once if resolved since the
    /// worker looked, else queued on its resolution (started if none is in
    /// progress), or dropped (failed lately: with an address unreachable;
    /// queues full; too many resolutions).
    pub(super) fn resolve6(&mut self, m: Mbuf) {
        let out = m.meta().out_port;
        let Some((target, out)) = self.next_hop6(&m, out) else {
            return self.drop_out(m, out, DropReason::Ipv6NoRoute);
        };
        let Some(m) = self.send_if_resolved6(m, target, out) else {
            return;
        };
        let now = Instant::now();
        let failed_before = self.failed_at6.get(&target).copied();
        if let Some(at) = failed_before {
            if now.saturating_duration_since(at) < self.params.failed_hold {
                let error = ErrorRepr::DestUnreachable(unreachable::ADDRESS_UNREACHABLE);
                return self.icmp6_error(m, DropReason::NeighFailed, error, Some(out));
            }
        }
        let gateway = self
            .neigh
            .table()
            .get6(target)
            .is_some_and(|e| e.is_gateway() || e.is_static());
        if !policy::may_queue(self.queued, gateway) {
            return self.drop_out(m, out, DropReason::NeighQueueFull);
        }
        if !self.pending6.contains_key(&target) {
            let req = Request {
                port: out,
                gateway,
                failed_before: failed_before.is_some(),
            };
            let Some(probes) = policy::admit(&self.load, req, self.params.probes) else {
                self.stats.resolve_refused += 1;
                return self.drop_out(m, out, DropReason::NeighResolveLimit);
            };
            if probes < self.params.probes {
                self.stats.resolve_single_probe += 1;
            }
            if req.failed_before {
                let _ = self.neigh.set_state6(target, NeighState::Incomplete);
            }
            self.start_resolution6(target, out, probes, None, now);
        }
        self.enqueue6(m, target, now);
    }

    /// The neighbour a packet waiting for resolution goes to (scoped) and
    /// the port out of which: its route's gateway, or its destination
    /// on-link (by the IPv6 FIB; without one, a destination on `out`'s link).
    fn next_hop6(&self, m: &Mbuf, out: u16) -> Option<(Ipv6Addr, u16)> {
        let (target, port) = self.wire_next_hop6(m, out)?;
        Some((scope6(target, port), port))
    }

    /// [`next_hop6`](Self::next_hop6) as the packet and the FIB name it.
    fn wire_next_hop6(&self, m: &Mbuf, out: u16) -> Option<(Ipv6Addr, u16)> {
        let l3 = usize::from(m.meta().l3_offset);
        let dst = Ipv6Packet::new_checked(m.data().get(l3..)?)
            .ok()?
            .dst_addr();
        match self.fib6() {
            Some(fib) => {
                let hop = fib.lookup(&dst)?;
                (hop.kind == HopKind::Forward).then_some((hop.gateway.unwrap_or(dst), hop.port))
            }
            None => self
                .port6(out)
                .is_some_and(|p| p.has_neighbour(dst))
                .then_some((dst, out)),
        }
    }

    /// Resolved since the worker looked: `m` leaves now with the
    /// neighbour's header. `m` back if `target` is not resolved.
    fn send_if_resolved6(&mut self, mut m: Mbuf, target: Ipv6Addr, out: u16) -> Option<Mbuf> {
        let Some(index) = self.neigh.table().lookup6(target) else {
            return Some(m);
        };
        let entry = self.neigh.table().entry(index);
        if !entry.state().is_valid() {
            return Some(m);
        }
        if m.eth_header_mut().is_some_and(|s| entry.hh_output(s)) {
            self.send(m, out);
        } else {
            self.drop_out(m, out, DropReason::NeighFailed);
        }
        None
    }

    /// Queue `m` on `target`'s resolution; its first solicitation leaves
    /// with the first packet.
    fn enqueue6(&mut self, m: Mbuf, target: Ipv6Addr, now: Instant) {
        let queue_len = self.params.queue_len;
        let out = m.meta().out_port;
        let Some(res) = self.pending6.get_mut(&target) else {
            return self.drop_out(m, out, DropReason::NeighFailed);
        };
        if res.queue.len() >= queue_len {
            let port = res.port;
            return self.drop_out(m, port, DropReason::NeighQueueFull);
        }
        res.queue.push_back(m);
        self.queued += 1;
        if res.sent == 0 {
            self.solicit6(target, now);
        }
    }

    /// A resolution (`unicast`: a probe of a stale neighbour) starts,
    /// counted in the load if it queues packets.
    pub(super) fn start_resolution6(
        &mut self,
        target: Ipv6Addr,
        port: u16,
        probes: u32,
        unicast: Option<[u8; 6]>,
        now: Instant,
    ) {
        if unicast.is_none() {
            self.load.start(port);
        }
        self.pending6.insert(
            target,
            Resolution6 {
                port,
                queue: VecDeque::new(),
                sent: 0,
                probes,
                next_at: now,
                unicast,
            },
        );
    }

    /// Send the next solicitation of a resolution (from our address on its
    /// port for the target: link-local for a link-local one) and schedule
    /// the one after.
    pub(super) fn solicit6(&mut self, target: Ipv6Addr, now: Instant) {
        let Some(res) = self.pending6.get(&target) else {
            return;
        };
        let (port, unicast) = (res.port, res.unicast);
        let Some(p) = self.port6(port) else {
            return;
        };
        let wire = unscope6(target).0;
        let frame = neighbor_solicit(p.mac, p.source_for(wire), wire, unicast);
        let retrans = self.params.retrans;
        if let Some(res) = self.pending6.get_mut(&target) {
            res.next_at = now + retrans * (1 << res.sent.min(8));
            res.sent += 1;
        }
        if unicast.is_some() {
            self.stats.nd_probes += 1;
        } else {
            self.stats.nd_solicits += 1;
        }
        self.originate(&frame, port);
    }

    /// Retries and failures of IPv6 resolutions.
    pub(super) fn timers6(&mut self, now: Instant) {
        let due: Vec<Ipv6Addr> = self
            .pending6
            .iter()
            .filter(|(_, r)| r.next_at <= now)
            .map(|(a, _)| *a)
            .collect();
        for target in due {
            let Some(res) = self.pending6.get(&target) else {
                continue;
            };
            if res.sent < res.probes && self.port6(res.port).is_some() {
                self.solicit6(target, now);
            } else {
                self.fail6(target, now);
            }
        }
        self.failed_at6
            .retain(|_, at| now.saturating_duration_since(*at) < FAILED_REMEMBERED);
    }

    /// Resolution failed: the entry fails, each waiting packet is dropped
    /// and answered with an address unreachable (rate-limited).
    fn fail6(&mut self, target: Ipv6Addr, now: Instant) {
        let Some(res) = self.end_resolution6(target) else {
            return;
        };
        let _ = self.neigh.set_state6(target, NeighState::Failed);
        self.stats.neigh_failed += 1;
        self.failed_at6.insert(target, now);
        self.queued -= res.queue.len();
        let error = ErrorRepr::DestUnreachable(unreachable::ADDRESS_UNREACHABLE);
        for m in res.queue {
            self.icmp6_error(m, DropReason::NeighFailed, error, Some(res.port));
        }
    }

    /// A resolution ends (answered, failed): it leaves the load.
    pub(super) fn end_resolution6(&mut self, target: Ipv6Addr) -> Option<Resolution6> {
        let res = self.pending6.remove(&target)?;
        if res.unicast.is_none() {
            self.load.end(res.port);
        }
        Some(res)
    }

    /// A neighbour resolved: its waiting packets leave with its header.
    pub(super) fn flush_queue6(&mut self, index: usize, res: Resolution6) {
        self.queued -= res.queue.len();
        for mut m in res.queue {
            let entry = self.neigh.table().entry(index);
            let written = m.eth_header_mut().is_some_and(|s| entry.hh_output(s));
            if written {
                self.send(m, res.port);
            } else {
                self.drop_out(m, res.port, DropReason::NeighFailed);
            }
        }
    }
}
