//! The control plane, on the main lcore: the neighbour table's single writer
//! and the router's answer to everything the workers punt.
//!
//! # What it does
//!
//! * answers ARP and ICMP echo for our addresses;
//! * resolves next hops for packets the workers could not send (a bounded
//!   queue per neighbour, ARP with backoff, failure);
//! * updates the neighbours it knows from ARP, like Linux with
//!   `arp_accept=0`: an ARP packet creates no entry unless it answers a
//!   resolution in progress;
//! * ages reachable neighbours to stale, re-probes the used ones, reclaims
//!   failed and long-unused entries;
//! * sends ICMP errors (time exceeded, net unreachable, fragmentation
//!   needed), rate-limited.
//!
//! Workers never wait on it: it talks to them through SPSC rings.

pub mod changes;
pub mod frames;
pub mod limiter;
pub mod policy;

use crate::capture::{DropSite, Stage, Tap, NO_PORT};
use crate::counters::LcoreCounters;
use crate::datapath::budget::ArpAwaited;
use crate::datapath::punt::Punt;
use crate::dpdk::{Mbuf, MbufBurst, Mempool, RingConsumer, RingProducer};
use crate::fib::{FibWriter, HopKind};
use crate::neigh::{EthHeader, NeighState, NeighWriter};
use frames::{ARP_FRAME_LEN, ICMP_ERROR_MAX};
use hooks::wire::arp::{self, ArpPacket, ArpRepr};
use hooks::wire::ethernet::{ethertype, EthernetFrame, HEADER_LEN};
use hooks::wire::{icmp, Ipv4Packet};
use hooks::DropReason;
use limiter::TokenBucket;
use policy::{Load, Request};
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a failed resolution is remembered (for the report and the hold).
const FAILED_REMEMBERED: Duration = Duration::from_secs(60);

/// Bursts taken from each punt ring per round of the control loop.
const POLL_BURSTS_PER_RING: usize = 8;

/// ICMP destination unreachable code 0: network unreachable (no route).
const ICMP_NET_UNREACHABLE: u8 = 0;
/// ICMP destination unreachable code 4: fragmentation needed and DF set;
/// bytes 6..8 carry the next-hop MTU (RFC 1191).
const ICMP_FRAG_NEEDED: u8 = 4;

/// Timers and bounds of neighbour resolution (the kernel's neigh parameters).
#[derive(Clone, Copy, Debug)]
pub struct NeighParams {
    /// Packets waiting per unresolved neighbour (`unres_qlen`).
    pub queue_len: usize,
    /// ARP requests before giving up (`mcast_solicit` / `ucast_solicit`).
    pub probes: u32,
    /// Wait after the first request; doubles after each (`retrans_time`).
    pub retrans: Duration,
    /// A confirmed neighbour stays reachable this long (`base_reachable_time`).
    pub reachable: Duration,
    /// After a failure, packets are dropped this long before trying again.
    pub failed_hold: Duration,
    /// A stale neighbour no worker used for this long is reclaimed (the
    /// kernel's `gc_stale_time`).
    pub gc_stale: Duration,
}

impl Default for NeighParams {
    fn default() -> Self {
        NeighParams {
            queue_len: 64,
            probes: 3,
            retrans: Duration::from_millis(250),
            reachable: Duration::from_secs(30),
            failed_hold: Duration::from_secs(1),
            gc_stale: Duration::from_secs(60),
        }
    }
}

/// What the control plane did, for the exit report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlStats {
    /// ARP requests sent to resolve a next hop (broadcast).
    pub arp_requests: u64,
    /// Unicast ARP probes of stale neighbours.
    pub arp_probes: u64,
    /// ARP replies sent for our addresses.
    pub arp_replies: u64,
    /// ICMP echo replies sent.
    pub echo_replies: u64,
    /// ICMP errors sent (time exceeded, destination unreachable).
    pub icmp_errors: u64,
    /// ICMP errors not sent: over the rate limit.
    pub icmp_rate_limited: u64,
    /// Neighbours resolved or refreshed from ARP.
    pub neigh_learned: u64,
    /// Neighbours that went reachable -> stale.
    pub neigh_stale: u64,
    /// Resolutions that failed (no answer after every probe).
    pub neigh_failed: u64,
    /// ARP packets from a sender with no entry and no resolution in
    /// progress: no entry made (gratuitous, unsolicited, requests to us).
    pub arp_not_learned: u64,
    /// Answers not learned because the table was full.
    pub neigh_table_full: u64,
    /// Entries reclaimed: failed, or stale and unused.
    pub neigh_reclaimed: u64,
    /// Resolutions started with a single ARP request (the address failed
    /// lately, or its port was busy with resolutions).
    pub resolve_single_probe: u64,
    /// New resolutions refused (too many at once; packets counted as
    /// `neigh_resolve_limit`).
    pub resolve_refused: u64,
}

impl ControlStats {
    /// Name and value of each counter.
    pub fn fields(&self) -> [(&'static str, u64); 14] {
        [
            ("arp_requests", self.arp_requests),
            ("arp_probes", self.arp_probes),
            ("arp_replies", self.arp_replies),
            ("echo_replies", self.echo_replies),
            ("icmp_errors", self.icmp_errors),
            ("icmp_rate_limited", self.icmp_rate_limited),
            ("neigh_learned", self.neigh_learned),
            ("neigh_stale", self.neigh_stale),
            ("neigh_failed", self.neigh_failed),
            ("arp_not_learned", self.arp_not_learned),
            ("neigh_table_full", self.neigh_table_full),
            ("neigh_reclaimed", self.neigh_reclaimed),
            ("resolve_single_probe", self.resolve_single_probe),
            ("resolve_refused", self.resolve_refused),
        ]
    }
}

/// One of our ports as the control plane sees it.
#[derive(Clone, Copy, Debug)]
pub struct PortAddr {
    pub id: u16,
    pub mac: [u8; 6],
    pub addr: Ipv4Addr,
    pub prefix_len: u8,
    pub mtu: u16,
}

impl PortAddr {
    fn mask(&self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0)
    }

    /// Whether `a` is a host of this port's connected subnet (not our own
    /// address, not the network or broadcast address).
    pub fn has_host(&self, a: Ipv4Addr) -> bool {
        let (m, a32) = (self.mask(), u32::from(a));
        let net = u32::from(self.addr) & m;
        a32 & m == net
            && a != self.addr
            && (self.prefix_len > 30 || (a32 != net && a32 != net | !m))
    }
}

/// A resolution in progress: the packets waiting and the next ARP request.
struct Resolution {
    port: u16,
    target: Ipv4Addr,
    queue: VecDeque<Mbuf>,
    sent: u32,
    /// ARP requests to send before failing.
    probes: u32,
    next_at: Instant,
    /// Unicast re-probe of a stale neighbour (its MAC known); not counted
    /// in the load.
    unicast: Option<[u8; 6]>,
}

/// The control plane's state.
pub struct ControlPlane<'a> {
    ports: Vec<Option<PortAddr>>,
    /// The FIB's writer (route changes, ECMP members leaving and coming
    /// back), and to know which addresses are on-link out of which port
    /// (connected subnets and `device =` routes).
    fib: FibWriter,
    neigh: NeighWriter,
    params: NeighParams,
    /// Resolutions in progress, by address. A neighbour enters the table
    /// only when it answers one (or is a configured gateway): a sweep of
    /// unused addresses or a flood of ARP cannot fill the table.
    pending: HashMap<Ipv4Addr, Resolution>,
    /// Resolutions in progress per port (not re-probes).
    load: Load,
    /// The senders of `pending`, for the workers' ARP budgets.
    awaited: Arc<ArpAwaited>,
    /// Packets waiting over all resolutions (bounded by MAX_QUEUED).
    queued: usize,
    /// When resolution of an address last failed.
    failed_at: HashMap<Ipv4Addr, Instant>,
    /// When a worker last used a learned neighbour (seen at aging).
    last_used: HashMap<Ipv4Addr, Instant>,
    /// Whether "neighbour table full" has been said.
    full_reported: bool,
    punt: Vec<RingConsumer>,
    inject: Vec<RingProducer>,
    pool: &'a Mempool,
    counters: Arc<LcoreCounters>,
    icmp_errors: TokenBucket,
    start: Instant,
    next_age: Instant,
    stats: ControlStats,
    /// The main lcore's way into drop capture.
    capture: Option<Arc<Tap>>,
}

impl<'a> ControlPlane<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ports: &[PortAddr],
        fib: FibWriter,
        neigh: NeighWriter,
        params: NeighParams,
        punt: Vec<RingConsumer>,
        inject: Vec<RingProducer>,
        pool: &'a Mempool,
        counters: Arc<LcoreCounters>,
        awaited: Arc<ArpAwaited>,
    ) -> Self {
        let max = ports
            .iter()
            .map(|p| usize::from(p.id) + 1)
            .max()
            .unwrap_or(0);
        let mut by_id = vec![None; max];
        for p in ports {
            by_id[usize::from(p.id)] = Some(*p);
        }
        let now = Instant::now();
        ControlPlane {
            ports: by_id,
            fib,
            neigh,
            params,
            pending: HashMap::new(),
            load: Load::default(),
            awaited,
            queued: 0,
            failed_at: HashMap::new(),
            last_used: HashMap::new(),
            full_reported: false,
            punt,
            inject,
            pool,
            counters,
            icmp_errors: TokenBucket::new(100.0, 50.0, now),
            start: now,
            next_age: now + Duration::from_secs(1),
            stats: ControlStats::default(),
            capture: None,
        }
    }

    /// Hand copies of what the control plane drops to `tap`'s capture.
    pub fn set_capture(&mut self, tap: Arc<Tap>) {
        self.capture = Some(tap);
    }

    /// Hand a copy of `m`, dropped for `reason`, to a running drop capture
    /// (`out_port`: where it was to go, [`NO_PORT`] for nowhere yet).
    fn capture(&self, m: &Mbuf, reason: DropReason, out_port: u16) {
        if let Some(tap) = &self.capture {
            let at = DropSite::new(reason, Stage::Control, m.meta().in_port);
            tap.capture(m.data(), at.to_port(out_port));
        }
    }

    /// What the control plane has done so far.
    pub fn stats(&self) -> ControlStats {
        self.stats
    }

    /// The neighbour clock: milliseconds since start (coarse, so `confirmed`
    /// changes at most once a millisecond).
    fn now_ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.start).as_millis() as u64
    }

    /// One round: handle every punted packet, then run the timers. Returns
    /// how many packets it handled (0: the caller may sleep a little).
    pub fn poll(&mut self) -> usize {
        let mut burst = MbufBurst::new();
        let mut handled = 0;
        for r in 0..self.punt.len() {
            // A bounded share per ring per round: one busy worker cannot
            // starve the others' rings, the timers or the stop signal.
            for _ in 0..POLL_BURSTS_PER_RING {
                if self.punt[r].dequeue_burst(&mut burst) == 0 {
                    break;
                }
                for m in burst.drain() {
                    handled += 1;
                    self.handle(m);
                }
            }
        }
        self.timers(Instant::now());
        self.fib.collect();
        handled
    }

    fn handle(&mut self, m: Mbuf) {
        let meta = *m.meta();
        match Punt::from_code(meta.punt) {
            Some(Punt::Arp) => self.arp_input(m),
            Some(Punt::LocalIcmp) => self.echo(m),
            Some(Punt::TtlExceeded) => {
                self.icmp_error(m, DropReason::TtlExceeded, icmp::kind::TIME_EXCEEDED, 0)
            }
            Some(Punt::NoRoute) => self.icmp_error(
                m,
                DropReason::NoRoute,
                icmp::kind::DEST_UNREACHABLE,
                ICMP_NET_UNREACHABLE,
            ),
            Some(Punt::FragNeeded) => self.icmp_error(
                m,
                DropReason::MtuExceeded,
                icmp::kind::DEST_UNREACHABLE,
                ICMP_FRAG_NEEDED,
            ),
            Some(Punt::Resolve) => self.resolve(m),
            None => self.drop(m, meta.in_port, DropReason::UnsupportedProtocol),
        }
    }

    /// Drop `m`, received on `port`, for `reason`.
    fn drop(&self, m: Mbuf, port: u16, reason: DropReason) {
        self.counters.dropped(port, reason, 1);
        self.capture(&m, reason, NO_PORT);
        drop(m);
    }

    /// Drop `m`, on its way out of `port`, for `reason`.
    fn drop_out(&self, m: Mbuf, port: u16, reason: DropReason) {
        self.counters.dropped(port, reason, 1);
        self.capture(&m, reason, port);
        drop(m);
    }

    /// Whether `a` is a neighbour's address out of `port`: a host of its
    /// connected subnet, or reached on-link out of it by a `device =` route.
    fn on_link(&self, port: &PortAddr, a: Ipv4Addr) -> bool {
        port.has_host(a)
            || self
                .fib
                .table()
                .lookup(a)
                .is_some_and(|h| h.kind == HopKind::Forward && h.gateway == 0 && h.port == port.id)
                && a != port.addr
    }

    fn port(&self, id: u16) -> Option<PortAddr> {
        self.ports.get(usize::from(id)).copied().flatten()
    }

    /// Send `m` out of `port` through a worker's TX path.
    fn send(&mut self, mut m: Mbuf, port: u16) {
        m.meta_mut().out_port = port;
        if self.inject.is_empty() {
            return self.drop_out(m, port, DropReason::ControlRingFull);
        }
        let ring = usize::from(port) % self.inject.len();
        if let Err(m) = self.inject[ring].enqueue(m) {
            self.drop_out(m, port, DropReason::ControlRingFull);
        }
    }

    /// Send a frame we build from scratch; counted as originated.
    fn originate(&mut self, frame: &[u8], port: u16) {
        let Some(mut m) = Mbuf::alloc(self.pool) else {
            return; // pool exhausted: nothing was created, nothing to count
        };
        // Received on no port (what a drop capture says of it).
        m.meta_mut().in_port = NO_PORT;
        if !m.append(frame) {
            return;
        }
        self.counters.originated(port, 1);
        self.send(m, port);
    }

    // --- ARP -------------------------------------------------------------

    fn arp_input(&mut self, mut m: Mbuf) {
        let meta = *m.meta();
        let port_id = meta.in_port;
        let (Some(port), Some(bytes)) = (
            self.port(port_id),
            m.data().get(usize::from(meta.l3_offset)..),
        ) else {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        };
        let Some(req) = ArpPacket::new_checked(bytes)
            .ok()
            .and_then(|p| ArpRepr::parse(&p))
        else {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        };
        let probe = req.sender_ip.is_unspecified(); // RFC 5227 probe
        let sender_ok = self.on_link(&port, req.sender_ip)
            && !hooks::wire::ethernet::is_multicast(&req.sender_mac)
            && req.sender_mac != [0; 6];
        if !sender_ok && !probe {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        }
        let for_us = req.target_ip == port.addr;
        if sender_ok {
            self.learn(&port, &req);
        }
        if req.operation == arp::op::REQUEST && for_us {
            let l2 = usize::from(meta.l3_offset) - HEADER_LEN;
            if m.adj(l2 as u16)
                && m.trim_to(ARP_FRAME_LEN as u16)
                && frames::arp_reply_in_place(m.data_mut(), &req, port.mac)
            {
                self.stats.arp_replies += 1;
                return self.send(m, port_id);
            }
            return self.drop(m, port_id, DropReason::ArpInvalid);
        }
        if !for_us && !sender_ok {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        }
        self.counters.consumed(port_id, 1);
    }

    /// Learn from an ARP packet (any operation, as Linux): update a known
    /// neighbour, or create one whose resolution is in progress. Anything
    /// else (a gratuitous ARP, an unsolicited reply, a request to us from an
    /// unknown host) makes no entry, so a flood of them cannot fill the table.
    fn learn(&mut self, port: &PortAddr, arp: &ArpRepr) {
        let known = self.neigh.table().lookup(arp.sender_ip).is_some();
        if !known && !self.pending.contains_key(&arp.sender_ip) {
            self.stats.arp_not_learned += 1;
            return;
        }
        let hdr = EthHeader {
            dst: arp.sender_mac,
            src: port.mac,
            ethertype: ethertype::IPV4,
        };
        let now = Instant::now();
        let mut learned = self.neigh.resolve(arp.sender_ip, &hdr, self.now_ms(now));
        if matches!(learned, Err(crate::neigh::NeighError::Full { .. })) {
            // Slots reclaimed whose grace period has passed since the last
            // round may take it.
            self.neigh.collect();
            learned = self.neigh.resolve(arp.sender_ip, &hdr, self.now_ms(now));
        }
        match learned {
            Ok(i) => {
                self.stats.neigh_learned += 1;
                self.failed_at.remove(&arp.sender_ip);
                // A gateway that failed is back in its ECMP groups.
                self.fib.set_gateway_state(u32::from(arp.sender_ip), true);
                if !known {
                    self.last_used.insert(arp.sender_ip, now);
                }
                if let Some(res) = self.end_resolution(arp.sender_ip) {
                    self.flush_queue(i, res);
                }
            }
            // Static neighbours are not overwritten.
            Err(crate::neigh::NeighError::Static(_)) => {}
            Err(e) => self.table_full(arp.sender_ip, e),
        }
    }

    /// Count an answer the full table could not take; say so once.
    #[cold]
    fn table_full(&mut self, addr: Ipv4Addr, e: crate::neigh::NeighError) {
        self.stats.neigh_table_full += 1;
        if !self.full_reported {
            self.full_reported = true;
            eprintln!(
                "fastpath: neighbour {addr}: {e}; answers are not learned until \
                 failed or unused entries are reclaimed (said once)"
            );
        }
    }

    /// A resolution ends (answered, failed, or shut down): it leaves the
    /// load and the awaited senders.
    fn end_resolution(&mut self, target: Ipv4Addr) -> Option<Resolution> {
        let res = self.pending.remove(&target)?;
        if res.unicast.is_none() {
            self.load.end(res.port);
        }
        self.awaited.remove(target);
        Some(res)
    }

    /// A neighbour resolved: its waiting packets leave with its header.
    fn flush_queue(&mut self, index: usize, res: Resolution) {
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

    // --- ICMP ------------------------------------------------------------

    fn echo(&mut self, mut m: Mbuf) {
        let meta = *m.meta();
        let Some(port) = self.port(meta.in_port) else {
            return self.drop(m, meta.in_port, DropReason::IcmpInvalid);
        };
        let l3 = usize::from(meta.l3_offset);
        let total = m
            .data()
            .get(l3..)
            .and_then(|b| Ipv4Packet::new_checked(b).ok())
            .map(|ip| usize::from(ip.total_len()));
        let ok = total.is_some_and(|t| {
            m.trim_to((l3 + t) as u16)
                && m.adj((l3 - HEADER_LEN) as u16)
                && frames::echo_reply_in_place(m.data_mut(), port.mac).is_ok()
        });
        if ok {
            self.stats.echo_replies += 1;
            self.send(m, meta.in_port);
        } else {
            self.drop(m, meta.in_port, DropReason::IcmpInvalid);
        }
    }

    /// Drop `m` for `reason` and answer its sender with an ICMP error from
    /// the input port's address (RFC 1812 rules, rate-limited).
    fn icmp_error(&mut self, m: Mbuf, reason: DropReason, msg_type: u8, code: u8) {
        let meta = *m.meta();
        self.counters.dropped(meta.in_port, reason, 1);
        self.capture(&m, reason, NO_PORT);
        let Some(port) = self.port(meta.in_port) else {
            return;
        };
        let l3 = usize::from(meta.l3_offset);
        let data = m.data();
        let Some(ip) = data.get(l3..).and_then(|b| Ipv4Packet::new_checked(b).ok()) else {
            return;
        };
        let orig = &data[l3..(l3 + usize::from(ip.total_len())).min(data.len())];
        let peer_mac = EthernetFrame::new_checked(data)
            .map(|e| e.src_addr())
            .unwrap_or([0; 6]);
        if !frames::may_send_icmp_error(orig) {
            return;
        }
        if !self.icmp_errors.take(Instant::now()) {
            self.stats.icmp_rate_limited += 1;
            return;
        }
        let mut buf = [0u8; ICMP_ERROR_MAX];
        if let Some(n) = frames::icmp_error(
            &mut buf, msg_type, code, orig, port.mac, peer_mac, port.addr,
        ) {
            drop(m);
            if code == ICMP_FRAG_NEEDED && msg_type == icmp::kind::DEST_UNREACHABLE {
                let mtu = self.port(meta.out_port).map_or(0, |p| p.mtu);
                frames::set_next_hop_mtu(&mut buf[..n], mtu);
            }
            self.stats.icmp_errors += 1;
            self.originate(&buf[..n], meta.in_port);
        }
    }

    // --- Resolution ------------------------------------------------------

    /// A packet whose next hop has no usable header.
    fn resolve(&mut self, mut m: Mbuf) {
        let meta = *m.meta();
        let (out, target) = (meta.out_port, Ipv4Addr::from(meta.next_hop));
        let Some(port) = self.port(out) else {
            return self.drop_out(m, out, DropReason::NeighFailed);
        };
        // Resolved since the worker looked: send it now.
        if let Some(index) = self.neigh.table().lookup(target) {
            let entry = self.neigh.table().entry(index);
            if entry.state().is_valid() {
                if m.eth_header_mut().is_some_and(|s| entry.hh_output(s)) {
                    return self.send(m, out);
                }
                return self.drop_out(m, out, DropReason::NeighFailed);
            }
        }
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
            .is_some_and(|e| e.is_held() || e.is_static());
        if !policy::may_queue(self.queued, gateway) {
            return self.drop_out(m, out, DropReason::NeighQueueFull);
        }
        if !self.pending.contains_key(&target) {
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
            if failed_before.is_some() {
                let _ = self.neigh.set_state(target, NeighState::Incomplete);
            }
            self.start_resolution(target, out, probes, None, now);
        }
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
    fn start_resolution(
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
    fn solicit(&mut self, target: Ipv4Addr, port: PortAddr, now: Instant) {
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
    fn timers(&mut self, now: Instant) {
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
        // Failures are remembered a minute (the hold is shorter), then forgotten.
        self.failed_at
            .retain(|_, at| now.saturating_duration_since(*at) < FAILED_REMEMBERED);
        if now >= self.next_age {
            self.next_age = now + Duration::from_secs(1);
            self.age(now);
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

    /// Reachable neighbours not confirmed for `reachable` become stale. A
    /// stale neighbour a worker used within `gc_stale` (or a route's
    /// gateway) is re-probed by unicast and keeps forwarding meanwhile; a
    /// probe answered makes it reachable again, unanswered probes make it
    /// fail. Failed learned entries, and stale ones unused for longer, are
    /// reclaimed.
    fn age(&mut self, now: Instant) {
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
            if e.state() == NeighState::Stale && (e.is_held() || unused_for <= self.params.gc_stale)
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

    /// Shutdown, after every worker has stopped: drop and count what is
    /// still punted or waiting for resolution.
    pub fn shutdown(&mut self) -> u64 {
        let mut burst = MbufBurst::new();
        let mut n = 0;
        for r in 0..self.punt.len() {
            while self.punt[r].dequeue_burst(&mut burst) != 0 {
                for m in burst.drain() {
                    let port = m.meta().in_port;
                    self.drop(m, port, DropReason::ShutdownDrain);
                    n += 1;
                }
            }
        }
        self.queued = 0;
        self.load = Load::default();
        for (target, res) in std::mem::take(&mut self.pending) {
            self.awaited.remove(target);
            let k = res.queue.len() as u64;
            self.counters
                .dropped(res.port, DropReason::ShutdownDrain, k);
            for m in &res.queue {
                self.capture(m, DropReason::ShutdownDrain, res.port);
            }
            n += k;
        }
        n
    }

    /// The forwarding table as the operations plane shows it: every rule
    /// of the FIB as it is now (runtime changes included).
    pub fn routes(&self) -> Vec<crate::ops::view::RouteView> {
        use crate::ops::view::{HopView, RouteView};
        self.fib
            .rules()
            .map(|(prefix, len, r)| RouteView {
                prefix,
                len,
                kind: match r.hops.first().map(|h| h.kind) {
                    Some(HopKind::Local) => "local",
                    Some(HopKind::NotUnicast) => "not_unicast",
                    Some(HopKind::Martian) => "martian",
                    _ => "forward",
                },
                origin: r.origin.name(),
                hops: r
                    .hops
                    .iter()
                    .map(|h| HopView {
                        port: h.port,
                        via: (h.gateway != 0).then(|| Ipv4Addr::from(h.gateway)),
                        down: h.gateway != 0 && self.fib.is_down(h.gateway),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The neighbour table, then the addresses whose resolution failed
    /// lately and that never answered (they have no entry).
    pub fn neighbours(&self) -> Vec<crate::ops::view::NeighView> {
        let table = self.neigh.table();
        let mut out: Vec<crate::ops::view::NeighView> = table
            .iter()
            .map(|(_, e)| {
                let state = e.state();
                crate::ops::view::NeighView {
                    address: e.addr(),
                    mac: state.is_valid().then(|| e.hh().header().dst),
                    state: match state {
                        NeighState::Incomplete => "incomplete",
                        NeighState::Reachable => "reachable",
                        NeighState::Stale => "stale",
                        NeighState::Failed => "failed",
                    },
                    is_static: e.is_static(),
                }
            })
            .collect();
        let mut failed: Vec<&Ipv4Addr> = self
            .failed_at
            .keys()
            .filter(|a| table.lookup(**a).is_none())
            .collect();
        failed.sort();
        out.extend(failed.into_iter().map(|a| crate::ops::view::NeighView {
            address: *a,
            mac: None,
            state: "failed",
            is_static: false,
        }));
        out
    }

    /// The neighbour table, one line per entry, for the exit report, then
    /// the addresses whose resolution failed lately and that never answered
    /// (they have no entry).
    pub fn describe_neighbours(&self) -> Vec<String> {
        let table = self.neigh.table();
        let mut lines: Vec<String> = table
            .iter()
            .map(|(_, e)| {
                let h = e.hh().header();
                format!(
                    "{:<15} {:<17} {:?}{}",
                    e.addr().to_string(),
                    crate::config::format_mac(&h.dst),
                    e.state(),
                    if e.is_static() { " static" } else { "" }
                )
            })
            .collect();
        let mut failed: Vec<&Ipv4Addr> = self
            .failed_at
            .keys()
            .filter(|a| table.lookup(**a).is_none())
            .collect();
        failed.sort();
        lines.extend(
            failed
                .into_iter()
                .map(|a| format!("{:<15} {:<17} Failed", a.to_string(), "-")),
        );
        lines
    }
}
