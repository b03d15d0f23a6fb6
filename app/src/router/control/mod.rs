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
//!   needed), rate-limited;
//! * for IPv6 the same: answers neighbour solicitations for our addresses
//!   (duplicate address detection included) and echo requests, resolves
//!   next hops by neighbour discovery in the one neighbour table (the same
//!   queues, budgets and aging as ARP, and the same hardening), and sends
//!   ICMPv6 errors (time exceeded, destination unreachable codes 0, 2, 3,
//!   packet too big), rate-limited.
//!
//! Workers never wait on it: it talks to them through SPSC rings.
//!
//! # Where
//!
//! This file holds the state, the loop (`poll`: each punted packet to its
//! handler, then the timers), sending and dropping, and the shutdown drain.
//! One concept a file besides: `parts` (what it is built from), `arp`,
//! `icmp`, `resolve` (queues and ARP requests for next hops), `aging`,
//! `views` (routes and neighbours shown), `stats`, `changes` (`fastpath
//! ctl` and reload), with the plain-value helpers `frames`, `policy` and
//! `limiter`; `kernel` (the ports' kernel interfaces). IPv6: `addr6` (our addresses per port), `nd` (neighbour
//! discovery in), `resolve6` (queues and solicitations), `aging6`, `icmp6`,
//! `changes6` (routes) and `neighbours6` (static neighbours), with the
//! plain-frame helpers of `frames6`.

pub mod addr6;
mod aging;
mod aging6;
mod arp;
pub mod changes;
mod changes6;
pub mod frames;
pub mod frames6;
mod icmp;
mod icmp6;
mod kernel;
pub mod limiter;
mod nd;
mod neighbours6;
pub mod parts;
pub mod policy;
mod resolve;
mod resolve6;
pub mod stats;
#[cfg(test)]
mod tests6;
mod views;

use crate::capture::{DropSite, Stage, Tap, NO_PORT};
use crate::counters::LcoreCounters;
use crate::datapath::budget::ArpAwaited;
use crate::datapath::punt::Punt;
use crate::dpdk::{Mbuf, MbufBurst, Mempool, RingConsumer, RingProducer};
use crate::fib::{FibWriter, HopKind};
use crate::fib6::{Fib6, Fib6Writer};
use crate::neigh::NeighWriter;
use addr6::Port6;
use hooks::DropReason;
use limiter::TokenBucket;
use parts::{ControlParts, NeighParams, PortAddr};
use policy::Load;
use resolve::Resolution;
use resolve6::Resolution6;
use stats::ControlStats;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bursts taken from each punt ring per round of the control loop.
const POLL_BURSTS_PER_RING: usize = 8;

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
    /// Our ports' IPv6 addresses, by port id.
    ports6: Vec<Option<Port6>>,
    /// The IPv6 FIB's writer (route changes; next hops of IPv6 packets
    /// waiting for resolution).
    fib6: Option<Fib6Writer>,
    /// IPv6 resolutions in progress, by address (as `pending`; they share
    /// `load` and `queued` with ARP's).
    pending6: HashMap<Ipv6Addr, Resolution6>,
    /// When resolution of an IPv6 address last failed.
    failed_at6: HashMap<Ipv6Addr, Instant>,
    /// When a worker last used a learned IPv6 neighbour (seen at aging).
    last_used6: HashMap<Ipv6Addr, Instant>,
    icmp6_errors: TokenBucket,
    /// The ports' kernel interfaces, by port id (empty without).
    kernel: Vec<Option<crate::kernel::Representor>>,
    /// Each interface's carrier as last set (on at creation).
    carrier: Vec<bool>,
}

impl<'a> ControlPlane<'a> {
    pub fn new(parts: ControlParts<'a>) -> Self {
        let max = parts
            .ports
            .iter()
            .map(|p| usize::from(p.id) + 1)
            .max()
            .unwrap_or(0);
        let mut by_id = vec![None; max];
        for p in &parts.ports {
            by_id[usize::from(p.id)] = Some(*p);
        }
        let max6 = parts.ports6.iter().map(|p| usize::from(p.id) + 1).max();
        let mut ports6 = vec![None; max6.unwrap_or(0)];
        for p in parts.ports6 {
            let id = usize::from(p.id);
            ports6[id] = Some(p);
        }
        let now = Instant::now();
        ControlPlane {
            ports: by_id,
            fib: parts.fib,
            neigh: parts.neigh,
            params: parts.params,
            pending: HashMap::new(),
            load: Load::default(),
            awaited: parts.awaited,
            queued: 0,
            failed_at: HashMap::new(),
            last_used: HashMap::new(),
            full_reported: false,
            punt: parts.punt,
            inject: parts.inject,
            pool: parts.pool,
            counters: parts.counters,
            icmp_errors: TokenBucket::new(100.0, 50.0, now),
            start: now,
            next_age: now + Duration::from_secs(1),
            stats: ControlStats::default(),
            capture: None,
            ports6,
            fib6: parts.fib6,
            pending6: HashMap::new(),
            failed_at6: HashMap::new(),
            last_used6: HashMap::new(),
            icmp6_errors: TokenBucket::new(100.0, 50.0, now),
            kernel: Vec::new(),
            carrier: Vec::new(),
        }
    }

    /// The ports' kernel interfaces, by port id.
    pub fn set_kernel(&mut self, kernel: Vec<Option<crate::kernel::Representor>>) {
        self.carrier = vec![true; kernel.len()];
        self.kernel = kernel;
        self.follow_links();
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

    /// The IPv6 FIB the workers read (`None` without IPv6).
    fn fib6(&self) -> Option<&Fib6> {
        self.fib6.as_ref().map(|w| &**w.table())
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
        handled += self.poll_kernel();
        self.timers(Instant::now());
        self.fib.collect();
        handled
    }

    /// One punted packet, to the part of the control plane its punt
    /// reason names.
    fn handle(&mut self, m: Mbuf) {
        let meta = *m.meta();
        match Punt::from_code(meta.punt) {
            Some(Punt::Arp) => self.arp_input(m),
            Some(Punt::LocalIcmp) => self.echo(m),
            Some(Punt::TtlExceeded) => self.time_exceeded(m),
            Some(Punt::NoRoute) => self.net_unreachable(m),
            Some(Punt::FragNeeded) => self.frag_needed(m),
            Some(Punt::Resolve) => self.resolve(m),
            Some(Punt::Nd) => self.nd_input(m),
            Some(Punt::LocalIcmp6) => self.echo6(m),
            Some(Punt::HopLimitExceeded) => self.hop_limit_exceeded(m),
            Some(Punt::Resolve6) => self.resolve6(m),
            Some(Punt::NoRoute6) => self.no_route6(m),
            Some(Punt::PacketTooBig) => self.packet_too_big(m),
            Some(Punt::BeyondScope) => self.beyond_scope(m),
            Some(Punt::Kernel) => self.punt_to_kernel(m),
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

    /// Port `id`'s IPv6 addresses (`None` without IPv6).
    fn port6(&self, id: u16) -> Option<&Port6> {
        self.ports6.get(usize::from(id)).and_then(Option::as_ref)
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
        for (_, res) in std::mem::take(&mut self.pending6) {
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
}
