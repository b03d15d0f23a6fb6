//! Neighbour discovery in (RFC 4861): solicitations for our addresses are
//! answered (duplicate address detection from `::` to all-nodes), and what
//! solicitations and advertisements tell is learned under ARP's hardening:
//! a message creates no entry unless it answers a resolution in progress,
//! so unsolicited advertisements and a flood of solicitations from many
//! sources cannot fill the table (and the resolutions they do not start
//! cannot take a gateway's budget).

use super::frames6::{neighbor_advert, parse_nd};
use super::ControlPlane;
use crate::dpdk::Mbuf;
use crate::fib::HopKind;
use crate::neigh::{
    display6, is_malformed_link_local6, scope6, EthHeader, NeighError, NeighState, ETHERTYPE_IPV6,
};
use hooks::wire::ethernet::is_multicast;
use hooks::wire::icmpv6::NdRepr;
use hooks::wire::ipv6::{multicast_mac, ALL_NODES};
use hooks::DropReason;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Instant;

/// Whether a link-layer address can be a neighbour's: not multicast or
/// broadcast, not zero.
fn unicast_mac(mac: [u8; 6]) -> bool {
    !is_multicast(&mac) && mac != [0; 6]
}

/// What an advertisement says, for [`ControlPlane::advertisement`].
struct Advert {
    solicited: bool,
    override_: bool,
    target: Ipv6Addr,
    target_ll: Option<[u8; 6]>,
}

impl ControlPlane<'_> {
    /// A neighbour discovery message punted by a worker: RFC 4861's checks
    /// (each refusal a named drop), then a solicitation or advertisement.
    pub(super) fn nd_input(&mut self, m: Mbuf) {
        let meta = *m.meta();
        let port = meta.in_port;
        if self.port6(port).is_none() {
            return self.drop(m, port, DropReason::UnsupportedProtocol);
        }
        let data = m.data();
        let eth_src: [u8; 6] = data
            .get(6..12)
            .and_then(|s| s.try_into().ok())
            .unwrap_or([0; 6]);
        let parsed = data
            .get(usize::from(meta.l3_offset)..)
            .ok_or(DropReason::NdTruncated)
            .and_then(parse_nd);
        let msg = match parsed {
            Ok(msg) => msg,
            Err(reason) => return self.drop(m, port, reason),
        };
        match msg.nd {
            NdRepr::NeighborSolicit { target, source_ll } => {
                self.solicitation(m, msg.src, target, source_ll.ok_or(eth_src))
            }
            NdRepr::NeighborAdvert {
                solicited,
                override_,
                target,
                target_ll,
                ..
            } => {
                let advert = Advert {
                    solicited,
                    override_,
                    target,
                    target_ll,
                };
                self.advertisement(m, advert)
            }
        }
    }

    /// A solicitation for `target` from `src`: answered if `target` is the
    /// input port's; a source link-layer address (`Ok` in `mac`; `Err`: the
    /// frame's source MAC, used only to answer) updates a known sender or
    /// one being resolved, as stale (RFC 4861 7.2.3).
    fn solicitation(
        &mut self,
        m: Mbuf,
        src: Ipv6Addr,
        target: Ipv6Addr,
        mac: Result<[u8; 6], [u8; 6]>,
    ) {
        let port = m.meta().in_port;
        let Some(p) = self.port6(port) else {
            return self.drop(m, port, DropReason::UnsupportedProtocol);
        };
        if !p.is_ours(target) {
            return self.drop(m, port, DropReason::NdTargetNotOurs);
        }
        let our_mac = p.mac;
        if src.is_unspecified() {
            // Duplicate address detection of our address: defend it, to
            // all-nodes, not solicited (RFC 4861 7.2.4).
            let frame =
                neighbor_advert(our_mac, target, ALL_NODES, multicast_mac(ALL_NODES), false);
            return self.advertise(m, &frame);
        }
        if p.is_ours(src) {
            self.stats.nd_address_conflicts += 1;
            return self.drop(m, port, DropReason::NdBadSource);
        }
        let reply_mac = mac.unwrap_or_else(|e| e);
        if !self.on_link6(port, src) || !unicast_mac(reply_mac) {
            return self.drop(m, port, DropReason::NdBadSource);
        }
        if let Ok(sender_mac) = mac {
            self.learn6(port, scope6(src, port), sender_mac, Learn::Stale);
        }
        let frame = neighbor_advert(our_mac, target, src, reply_mac, true);
        self.advertise(m, &frame);
    }

    /// Send our advertisement `frame` out of the port `m` came in by; `m`
    /// (the solicitation) is consumed.
    fn advertise(&mut self, m: Mbuf, frame: &[u8]) {
        let port = m.meta().in_port;
        self.counters.consumed(port, 1);
        drop(m);
        self.stats.nd_adverts += 1;
        self.originate(frame, port);
    }

    /// An advertisement (RFC 4861 7.2.5): resolves a neighbour being
    /// resolved, confirms or updates a known one; creates nothing else.
    fn advertisement(&mut self, m: Mbuf, a: Advert) {
        let port = m.meta().in_port;
        let Some(p) = self.port6(port) else {
            return self.drop(m, port, DropReason::UnsupportedProtocol);
        };
        if p.is_ours(a.target) {
            // Another node claims our address: nothing to learn.
            self.stats.nd_address_conflicts += 1;
            self.counters.consumed(port, 1);
            return;
        }
        if !self.on_link6(port, a.target) || a.target_ll.is_some_and(|mac| !unicast_mac(mac)) {
            return self.drop(m, port, DropReason::NdBadSource);
        }
        // The kernel's own resolution of the target may wait for it.
        self.mirror_to_kernel(&m);
        self.counters.consumed(port, 1);
        drop(m);
        // The neighbour as the table and the queues name it.
        let target = scope6(a.target, port);
        let table = self.neigh.table().clone();
        let entry = table.get6(target);
        let resolving = self
            .pending6
            .get(&target)
            .is_some_and(|r| r.unicast.is_none() && r.port == port);
        let valid = entry.is_some_and(|e| e.state().is_valid());
        if !valid && !resolving && entry.is_none() {
            self.stats.nd_not_learned += 1;
            return;
        }
        if !valid {
            // Incomplete (or failed): only a link-layer address resolves it.
            if let Some(mac) = a.target_ll {
                let how = if a.solicited {
                    Learn::Reachable
                } else {
                    Learn::Stale
                };
                self.learn6(port, target, mac, how);
            }
            return;
        }
        let Some(e) = entry else { return };
        let current = e.hh().header().dst;
        let differs = a.target_ll.is_some_and(|mac| mac != current);
        if differs && !a.override_ {
            if e.state() == NeighState::Reachable {
                let _ = self.neigh.set_state6(target, NeighState::Stale);
            }
            return;
        }
        let mac = a.target_ll.unwrap_or(current);
        if a.solicited {
            self.learn6(port, target, mac, Learn::Reachable);
        } else if differs {
            self.learn6(port, target, mac, Learn::Stale);
        }
    }

    /// Record that `addr` (scoped: `neigh::scope6` with `port`) is at `mac`
    /// out of `port`, if it is known or being resolved (nothing else makes
    /// an entry): reachable (a solicited advertisement) or stale; a
    /// resolution it answers sends its queue.
    fn learn6(&mut self, port: u16, addr: Ipv6Addr, mac: [u8; 6], how: Learn) {
        let known = self.neigh.table().lookup6(addr).is_some();
        let pending = self.pending6.get(&addr).map(|r| r.unicast.is_none());
        if !known && pending.is_none() {
            self.stats.nd_not_learned += 1;
            return;
        }
        let Some(our_mac) = self.port6(port).map(|p| p.mac) else {
            return;
        };
        let hdr = EthHeader {
            dst: mac,
            src: our_mac,
            ethertype: ETHERTYPE_IPV6,
        };
        let now = Instant::now();
        let mut learned = self.learn_entry6(addr, &hdr, how, now);
        if matches!(learned, Err(NeighError::Full { .. })) {
            self.neigh.collect();
            learned = self.learn_entry6(addr, &hdr, how, now);
        }
        match learned {
            Ok(i) => {
                self.stats.neigh_learned += 1;
                self.failed_at6.remove(&addr);
                if !known {
                    self.last_used6.insert(addr, now);
                }
                // A resolution ends with an answer; a probe of a stale
                // neighbour only when it is confirmed reachable.
                let ends = pending == Some(true) || how == Learn::Reachable;
                if ends {
                    if let Some(res) = self.end_resolution6(addr) {
                        self.flush_queue6(i, res);
                    }
                }
            }
            Err(NeighError::Static6(_)) => {}
            Err(e) => self.table_full6(addr, e),
        }
    }

    fn learn_entry6(
        &mut self,
        addr: Ipv6Addr,
        hdr: &EthHeader,
        how: Learn,
        now: Instant,
    ) -> Result<usize, NeighError> {
        match how {
            Learn::Reachable => self.neigh.resolve6(addr, hdr, self.now_ms(now)),
            Learn::Stale => self.neigh.learn_stale_ip(IpAddr::V6(addr), hdr),
        }
    }

    /// Count an answer the full table could not take; say so once.
    #[cold]
    fn table_full6(&mut self, addr: Ipv6Addr, e: NeighError) {
        self.stats.neigh_table_full += 1;
        if !self.full_reported {
            self.full_reported = true;
            eprintln!(
                "fastpath: neighbour {}: {e}; answers are not learned until \
                 failed or unused entries are reclaimed (said once)",
                display6(addr)
            );
        }
    }

    /// Whether `a` is a neighbour's address out of `port`: on its link
    /// (link-local, or a host of one of its IPv6 subnets), or reached
    /// on-link out of it by a `device =` route.
    /// An address in fe80::/10 outside fe80::/64 is no neighbour's (RFC
    /// 4291 2.5.6 keeps those 54 bits zero; the table's scoping uses them).
    pub(super) fn on_link6(&self, port: u16, a: Ipv6Addr) -> bool {
        let Some(p) = self.port6(port) else {
            return false;
        };
        if is_malformed_link_local6(a) {
            return false;
        }
        if p.has_neighbour(a) {
            return true;
        }
        let unicast = !(a.is_multicast() || a.is_unspecified() || a.is_loopback());
        unicast
            && !p.is_ours(a)
            && self.fib6().and_then(|f| f.lookup(&a)).is_some_and(|h| {
                h.kind == HopKind::Forward && h.gateway.is_none() && h.port == port
            })
    }
}

/// How a neighbour discovery message leaves the entry it updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Learn {
    /// Confirmed (a solicited advertisement): reachable.
    Reachable,
    /// Told, not confirmed (a solicitation's source link-layer address,
    /// an unsolicited advertisement): stale if the header changed.
    Stale,
}
