//! The forwarding table: `rte_lpm` maps a destination to a next-hop id; the id
//! indexes a small array of next hops (what to do, which port, which
//! neighbour). Built once by the control plane at start, then read-only.

use crate::config::{NextHopSpec, RouterConfig};
use crate::dpdk::{DpdkError, Lpm, LPM_MISS};
use std::net::Ipv4Addr;

/// What a route does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopKind {
    /// Forward out of `port` to the neighbour (`gateway`, or the destination).
    Forward,
    /// One of our own addresses: local delivery (ICMP echo).
    Local,
    /// A broadcast or multicast destination: never forwarded.
    NotUnicast,
    /// A destination never routed (RFC 1812 5.3.7): 0/8, 127/8, 240/4.
    Martian,
}

/// `NextHop::neigh` when the neighbour is the destination itself (on-link
/// routes), looked up per packet.
pub const NEIGH_BY_DST: u32 = u32::MAX;

/// One next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextHop {
    pub kind: HopKind,
    /// Output port id (for `Local`: the port that owns the address).
    pub port: u16,
    /// Gateway address, host order; 0 when on-link (the destination is the neighbour).
    pub gateway: u32,
    /// Index of the gateway in the neighbour table, or [`NEIGH_BY_DST`].
    pub neigh: u32,
    /// MTU of the output port: larger packets are dropped (no fragmentation).
    pub mtu: u16,
}

/// One LPM prefix and the next hop it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FibEntry {
    pub prefix: Ipv4Addr,
    pub len: u8,
    pub hop: NextHop,
}

/// The prefixes a config installs, in order: the configured routes, every
/// port's connected subnet (on-link), then what no route may override: each
/// port's address (local) and subnet broadcast (not unicast), the limited
/// broadcast and multicast (not unicast), and the martian ranges 0/8, 127/8
/// and 240/4. Later entries replace identical prefixes, so a route for
/// 224.0.0.0/4 or for one of our addresses cannot take effect.
/// `port_ids[i]` is the DPDK id of `cfg.ports[i]`; `gateway_neigh` gives the
/// neighbour-table index of a gateway (adding it if new).
pub fn fib_entries(
    cfg: &RouterConfig,
    port_ids: &[u16],
    mut gateway_neigh: impl FnMut(Ipv4Addr) -> u32,
) -> Vec<FibEntry> {
    let mut out = Vec::new();
    let hop = |kind, i: usize, gateway: u32, neigh: u32| NextHop {
        kind,
        port: port_ids[i],
        gateway,
        neigh,
        mtu: cfg.ports[i].mtu,
    };
    for r in &cfg.routes {
        let h = match r.next_hop {
            NextHopSpec::Via { gateway, port } => hop(
                HopKind::Forward,
                port,
                u32::from(gateway),
                gateway_neigh(gateway),
            ),
            NextHopSpec::Connected { port } => hop(HopKind::Forward, port, 0, NEIGH_BY_DST),
        };
        out.push(FibEntry {
            prefix: r.prefix,
            len: r.prefix_len,
            hop: h,
        });
    }
    for (i, p) in cfg.ports.iter().enumerate() {
        out.push(FibEntry {
            prefix: Ipv4Addr::from(p.network()),
            len: p.prefix_len,
            hop: hop(HopKind::Forward, i, 0, NEIGH_BY_DST),
        });
    }
    for (i, p) in cfg.ports.iter().enumerate() {
        out.push(FibEntry {
            prefix: p.address,
            len: 32,
            hop: hop(HopKind::Local, i, 0, NEIGH_BY_DST),
        });
        if p.prefix_len <= 30 {
            out.push(FibEntry {
                prefix: p.broadcast(),
                len: 32,
                hop: hop(HopKind::NotUnicast, i, 0, NEIGH_BY_DST),
            });
        }
    }
    for (prefix, len, kind) in [
        (Ipv4Addr::BROADCAST, 32, HopKind::NotUnicast),
        (Ipv4Addr::new(224, 0, 0, 0), 4, HopKind::NotUnicast),
        (Ipv4Addr::new(0, 0, 0, 0), 8, HopKind::Martian),
        (Ipv4Addr::new(127, 0, 0, 0), 8, HopKind::Martian),
        (Ipv4Addr::new(240, 0, 0, 0), 4, HopKind::Martian),
    ] {
        out.push(FibEntry {
            prefix,
            len,
            hop: hop(kind, 0, 0, NEIGH_BY_DST),
        });
    }
    // 255.255.255.255 lies in 240/4: it must stay "not unicast".
    out.push(FibEntry {
        prefix: Ipv4Addr::BROADCAST,
        len: 32,
        hop: hop(HopKind::NotUnicast, 0, 0, NEIGH_BY_DST),
    });
    out
}

/// The LPM table and its next hops.
pub struct Fib {
    lpm: Lpm,
    hops: Vec<NextHop>,
    /// Next-hop id of the default route (`0.0.0.0/0`), which `rte_lpm` cannot
    /// hold (depth 1..=32): a miss becomes this id. `LPM_MISS` when none.
    default: u32,
}

impl Fib {
    /// Install `entries` (later ones replace earlier identical prefixes)
    /// into `lpm`; identical next hops share one id.
    pub fn build(mut lpm: Lpm, entries: &[FibEntry]) -> Result<Fib, DpdkError> {
        let mut hops: Vec<NextHop> = Vec::new();
        let mut default = LPM_MISS;
        for e in entries {
            let id = match hops.iter().position(|h| *h == e.hop) {
                Some(id) => id,
                None => {
                    hops.push(e.hop);
                    hops.len() - 1
                }
            };
            if e.len == 0 {
                default = id as u32;
            } else {
                lpm.add(e.prefix, e.len, id as u32)?;
            }
        }
        Ok(Fib { lpm, hops, default })
    }

    /// Next-hop ids of a burst of destinations (host order); a miss is the
    /// default route's id, or [`LPM_MISS`] without one.
    #[inline(always)]
    pub fn lookup_bulk(&self, dsts: &[u32], ids: &mut [u32]) {
        self.lpm.lookup_bulk(dsts, ids);
        if self.default != LPM_MISS {
            for id in ids.iter_mut() {
                if *id == LPM_MISS {
                    *id = self.default;
                }
            }
        }
    }

    /// The next hop of an id from `lookup_bulk` (`None` for a miss).
    #[inline(always)]
    pub fn hop(&self, id: u32) -> Option<&NextHop> {
        if id == LPM_MISS {
            return None;
        }
        self.hops.get(id as usize)
    }

    /// The next hop for one destination.
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<&NextHop> {
        let id = self.lpm.lookup(dst).unwrap_or(self.default);
        self.hop(id)
    }
}
