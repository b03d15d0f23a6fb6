//! What the control plane is built from: our ports as it sees them, the
//! timers and bounds of neighbour resolution, and the tables' writers and
//! rings it is given ([`ControlParts`]).

use crate::counters::LcoreCounters;
use crate::datapath::budget::ArpAwaited;
use crate::dpdk::{Mempool, RingConsumer, RingProducer};
use crate::fib::FibWriter;
use crate::fib6::Fib6Writer;
use crate::neigh::NeighWriter;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

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

/// What the control plane is built from.
pub struct ControlParts<'a> {
    /// Our ports: their ids, MACs, addresses and MTUs.
    pub ports: Vec<PortAddr>,
    /// The FIB's writer.
    pub fib: FibWriter,
    /// The neighbour table's writer (the control plane is its only one).
    pub neigh: NeighWriter,
    /// Timers and bounds of neighbour resolution.
    pub params: NeighParams,
    /// Worker -> control: what the workers punt, one ring per worker.
    pub punt: Vec<RingConsumer>,
    /// Control -> worker: what we send, one ring per worker.
    pub inject: Vec<RingProducer>,
    /// Where the frames we build come from.
    pub pool: &'a Mempool,
    /// The main lcore's counters.
    pub counters: Arc<LcoreCounters>,
    /// The addresses being resolved, shared with the workers' ARP budgets.
    pub awaited: Arc<ArpAwaited>,
    /// Our ports' IPv6 addresses (empty when the config has no IPv6).
    pub ports6: Vec<super::addr6::Port6>,
    /// The IPv6 FIB's writer (route changes), and the table the workers
    /// read: where an IPv6 packet's next hop is found again (`None` without
    /// IPv6: on-link destinations only).
    pub fib6: Option<Fib6Writer>,
}
