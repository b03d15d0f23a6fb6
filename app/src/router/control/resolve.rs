//! Next-hop resolution: packets the workers could not send wait in a
//! bounded queue per neighbour while ARP requests go out with backoff; an
//! answer sends them, silence fails the neighbour and drops them.

use super::frames;
use super::policy::{self, Request};
use super::{ControlPlane, PortAddr};
use crate::dpdk::Mbuf;
use crate::neigh::NeighState;
use hooks::DropReason;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// How long a failed resolution is remembered (for the report and the hold).
const FAILED_REMEMBERED: Duration = Duration::from_secs(60);

/// A resolution in progress: the packets waiting and the next ARP request.
pub(super) struct Resolution {
    pub(super) port: u16,
    target: Ipv4Addr,
    pub(super) queue: VecDeque<Mbuf>,
    sent: u32,
    /// ARP requests to send before failing.
    probes: u32,
    next_at: Instant,
    /// Unicast re-probe of a stale neighbour (its MAC known); not counted
    /// in the load.
    unicast: Option<[u8; 6]>,
}

impl ControlPlane<'_> {
    /// A packet whose next hop has no usable header: sent at once if the
    /// neighbour was resolved since the worker looked, else queued on the
    /// resolution of its next hop (started if none is in progress), or
    /// dropped (failed lately, queues full, too many resolutions).
    pub(super) fn resolve(&mut self, m: Mbuf) {
        let meta = *m.meta();
        let (out, target) = (meta.out_port, Ipv4Addr::from(meta.next_hop));
        let Some(port) = self.port(out) else {
            return self.drop_out(m, out, DropReason::NeighFailed);
        };
        let Some(m) = self.send_if_resolved(m, target, out) else {
            return;
        };
        let now = Instant::now();
        let failed_before = self.failed_at.get(&target).copied();
        if let Some(at) = failed_before {
            if now.saturating_duration_since(at) < self.params.failed_hold {
                return self.drop_out(m, out, DropReason::NeighFailed);
            }
        }
        let gateway = self
            .neigh
            .table()
            .get(target)
            .is_some_and(|e| e.is_gateway() || e.is_static());
        if !policy::may_queue(self.queued, gateway) {
            return self.drop_out(m, out, DropReason::NeighQueueFull);
        }
        if !self.pending.contains_key(&target) {
            let req = Request {
                port: out,
                gateway,
                failed_before: failed_before.is_some(),
            };
            if !self.begin_resolution(target, req, now) {
                return self.drop_out(m, out, DropReason::NeighResolveLimit);
            }
        }
        self.enqueue(m, target, port, now);
    }

    /// Resolved since the worker looked: `m` leaves now with the
    /// neighbour's header (or is dropped if it cannot take it). `m` back if
    /// `target` is not resolved.
    fn send_if_resolved(&mut self, mut m: Mbuf, target: Ipv4Addr, out: u16) -> Option<Mbuf> {
        let Some(index) = self.neigh.table().lookup(target) else {
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

    /// A new resolution of `target`, if the policy admits it (with one ARP
    /// request or all of them); false if refused, too many at once.
    fn begin_resolution(&mut self, target: Ipv4Addr, req: Request, now: Instant) -> bool {
        let Some(probes) = policy::admit(&self.load, req, self.params.probes) else {
            self.stats.resolve_refused += 1;
            return false;
        };
        if probes < self.params.probes {
            self.stats.resolve_single_probe += 1;
        }
        if req.failed_before {
            let _ = self.neigh.set_state(target, NeighState::Incomplete);
        }
        self.start_resolution(target, req.port, probes, None, now);
        true
    }

    /// Queue `m` (out of `port`) on `target`'s resolution; its first ARP
    /// request leaves with the first packet.
    fn enqueue(&mut self, m: Mbuf, target: Ipv4Addr, port: PortAddr, now: Instant) {
        let out = port.id;
        let queue_len = self.params.queue_len;
        let Some(res) = self.pending.get_mut(&target) else {
            return self.drop_out(m, out, DropReason::NeighFailed);
        };
        if res.queue.len() >= queue_len {
            return self.drop_out(m, out, DropReason::NeighQueueFull);
        }
        res.queue.push_back(m);
        self.queued += 1;
        if res.sent == 0 {
            self.solicit(target, port, now);
        }
    }

    /// A resolution (`unicast`: a re-probe of a stale neighbour) starts:
    /// counted in the load if it queues packets, its target awaited.
    pub(super) fn start_resolution(
        &mut self,
        target: Ipv4Addr,
        port: u16,
        probes: u32,
        unicast: Option<[u8; 6]>,
        now: Instant,
    ) {
        if unicast.is_none() {
            self.load.start(port);
        }
        self.awaited.insert(target);
        self.pending.insert(
            target,
            Resolution {
                port,
                target,
                queue: VecDeque::new(),
                sent: 0,
                probes,
                next_at: now,
                unicast,
            },
        );
    }

    /// Send the next ARP request of a resolution and schedule the one after.
    pub(super) fn solicit(&mut self, target: Ipv4Addr, port: PortAddr, now: Instant) {
        let Some(res) = self.pending.get_mut(&target) else {
            return;
        };
        let frame = frames::arp_request(port.mac, port.addr, res.target, res.unicast);
        res.next_at = now + self.params.retrans * (1 << res.sent.min(8));
        res.sent += 1;
        if res.unicast.is_some() {
            self.stats.arp_probes += 1;
        } else {
            self.stats.arp_requests += 1;
        }
        let out = res.port;
        self.originate(&frame, out);
    }

    /// Retries, failures and aging.
    pub(super) fn timers(&mut self, now: Instant) {
        let due: Vec<Ipv4Addr> = self
            .pending
            .iter()
            .filter(|(_, r)| r.next_at <= now)
            .map(|(a, _)| *a)
            .collect();
        for target in due {
            let Some(res) = self.pending.get(&target) else {
                continue;
            };
            let port = self.port(res.port);
            match port {
                Some(p) if res.sent < res.probes => self.solicit(target, p, now),
                _ => self.fail(target, now),
            }
        }
        self.timers6(now);
        // Failures are remembered a minute (the hold is shorter), then forgotten.
        self.failed_at
            .retain(|_, at| now.saturating_duration_since(*at) < FAILED_REMEMBERED);
        if now >= self.next_age {
            self.next_age = now + Duration::from_secs(1);
            self.age(now);
            self.follow_links();
        }
    }

    /// Resolution failed: the waiting packets are dropped, the entry fails.
    fn fail(&mut self, target: Ipv4Addr, now: Instant) {
        let Some(res) = self.end_resolution(target) else {
            return;
        };
        // Only neighbours already in the table (answered before, or a
        // configured gateway) have an entry to mark.
        let _ = self.neigh.set_state(target, NeighState::Failed);
        // Out of its ECMP groups until it answers (re-probed by `age`).
        self.fib.set_gateway_state(u32::from(target), false);
        self.stats.neigh_failed += 1;
        self.failed_at.insert(target, now);
        self.queued -= res.queue.len();
        let n = res.queue.len() as u64;
        self.counters.dropped(res.port, DropReason::NeighFailed, n);
        for m in &res.queue {
            self.capture(m, DropReason::NeighFailed, res.port);
        }
    }

    /// A resolution ends (answered, failed, or shut down): it leaves the
    /// load and the awaited senders.
    pub(super) fn end_resolution(&mut self, target: Ipv4Addr) -> Option<Resolution> {
        let res = self.pending.remove(&target)?;
        if res.unicast.is_none() {
            self.load.end(res.port);
        }
        self.awaited.remove(target);
        Some(res)
    }

    /// A neighbour resolved: its waiting packets leave with its header.
    pub(super) fn flush_queue(&mut self, index: usize, res: Resolution) {
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
