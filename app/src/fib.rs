//! The forwarding table: the LPM (`rte_fib`'s DIR-24-8) maps a destination to a next-hop id; the
//! id indexes a fixed-capacity array of next hops (what to do, which port,
//! which neighbour), or of ECMP groups whose members are next hops.
//!
//! Built by the control plane at start and changed by it at run time
//! ([`FibWriter`]) while workers look up: see `writer` for how a change
//! reaches them whole.

mod ecmp;
mod hops;
mod writer;

pub use ecmp::{tuple_hash, MAX_PATHS};
pub use writer::{FibWriter, Origin, OriginCounts, Rule, HOP_CAPACITY, ORIGINS};

use crate::config::{NextHopSpec, RouterConfig};
use crate::dpdk::{DpdkError, Lpm, Qsbr, LPM_MISS};
use hops::HopTable;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

/// What a route does with a packet (its code in the next-hop array is its
/// discriminant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HopKind {
    /// Forward out of `port` to the neighbour (`gateway`, or the destination).
    Forward,
    /// One of our own addresses: local delivery (ICMP echo).
    Local,
    /// A broadcast or multicast destination: never forwarded.
    NotUnicast,
    /// A destination never routed (RFC 1812 5.3.7): 0/8, 127/8, 240/4.
    Martian,
    /// An ECMP group: a flow's hash picks one of its live members
    /// ([`Fib::member`]); `neigh` holds the members' place and count.
    Group,
}

/// `NextHop::neigh` when the neighbour is the destination itself (on-link
/// routes), looked up per packet.
pub const NEIGH_BY_DST: u32 = u32::MAX;

/// One next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NextHop {
    pub kind: HopKind,
    /// Output port id (for `Local`: the port that owns the address).
    pub port: u16,
    /// Gateway address, host order; 0 when on-link (the destination is the neighbour).
    pub gateway: u32,
    /// Index of the gateway in the neighbour table, or [`NEIGH_BY_DST`]; for
    /// a `Group`, its members' chunk and live count (see `hops`).
    pub neigh: u32,
    /// MTU of the output port: larger packets are dropped (no fragmentation).
    pub mtu: u16,
}

/// One LPM prefix, the next hops it maps to (several: ECMP), and where it
/// comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FibEntry {
    pub prefix: Ipv4Addr,
    pub len: u8,
    pub hops: Vec<NextHop>,
    pub origin: Origin,
}

/// Routes the IPv4 FIB holds by default (`--fib-routes`).
pub const FIB_ROUTES: u32 = 65_536;

/// The LPM sizes for `entries` with room for `routes` in all (ctl, reloads
/// and FPM beside the config's; at least twice the config's): rules, and
/// tbl8 groups, one for each /24 that holds longer prefixes (twice those of
/// the config, at least 1,024, and one for every 256 rules: a full table
/// has few routes longer than /24).
pub fn table_sizes(entries: &[FibEntry], routes: u32) -> (u32, u32) {
    let long = entries.iter().filter(|e| e.len > 24).count() as u32;
    let rules = (entries.len() as u32 * 2).max(routes);
    (rules, (long * 2).max(1024).max(rules / 256))
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
    for r in &cfg.routes {
        let hops = r
            .next_hops()
            .map(|h| route_hop(cfg, port_ids, h, &mut gateway_neigh))
            .collect();
        out.push(FibEntry {
            prefix: r.prefix,
            len: r.prefix_len,
            hops,
            origin: Origin::Config,
        });
    }
    out.extend(fixed_entries(cfg, port_ids));
    out
}

/// The next hop a route's `via` or `device` names.
pub fn route_hop(
    cfg: &RouterConfig,
    port_ids: &[u16],
    spec: NextHopSpec,
    mut gateway_neigh: impl FnMut(Ipv4Addr) -> u32,
) -> NextHop {
    match spec {
        NextHopSpec::Via { gateway, port } => NextHop {
            kind: HopKind::Forward,
            port: port_ids[port],
            gateway: u32::from(gateway),
            neigh: gateway_neigh(gateway),
            mtu: cfg.ports[port].mtu,
        },
        NextHopSpec::Connected { port } => NextHop {
            kind: HopKind::Forward,
            port: port_ids[port],
            gateway: 0,
            neigh: NEIGH_BY_DST,
            mtu: cfg.ports[port].mtu,
        },
    }
}

/// The entries no route changes: connected subnets, our addresses, the
/// broadcasts, multicast and the martian ranges.
fn fixed_entries(cfg: &RouterConfig, port_ids: &[u16]) -> Vec<FibEntry> {
    let mut out = Vec::new();
    let hop = |kind, i: usize| NextHop {
        kind,
        port: port_ids[i],
        gateway: 0,
        neigh: NEIGH_BY_DST,
        mtu: cfg.ports[i].mtu,
    };
    let mut push = |prefix, len, h, origin| {
        out.push(FibEntry {
            prefix,
            len,
            hops: vec![h],
            origin,
        })
    };
    for (i, p) in cfg.ports.iter().enumerate() {
        let origin = Origin::Connected(port_ids[i]);
        push(
            Ipv4Addr::from(p.network()),
            p.prefix_len,
            hop(HopKind::Forward, i),
            origin,
        );
    }
    for (i, p) in cfg.ports.iter().enumerate() {
        let id = port_ids[i];
        push(
            p.address,
            32,
            hop(HopKind::Local, i),
            Origin::Fixed(format!("our own address on port {id}")),
        );
        if p.prefix_len <= 30 {
            push(
                p.broadcast(),
                32,
                hop(HopKind::NotUnicast, i),
                Origin::Fixed(format!("the subnet broadcast of port {id}")),
            );
        }
    }
    for (prefix, len, kind, what) in [
        (
            Ipv4Addr::BROADCAST,
            32,
            HopKind::NotUnicast,
            "the limited broadcast",
        ),
        (
            Ipv4Addr::new(224, 0, 0, 0),
            4,
            HopKind::NotUnicast,
            "multicast",
        ),
        (
            Ipv4Addr::new(0, 0, 0, 0),
            8,
            HopKind::Martian,
            "\"this network\"",
        ),
        (Ipv4Addr::new(127, 0, 0, 0), 8, HopKind::Martian, "loopback"),
        (Ipv4Addr::new(240, 0, 0, 0), 4, HopKind::Martian, "reserved"),
    ] {
        push(prefix, len, hop(kind, 0), Origin::Fixed(what.to_string()));
    }
    // 255.255.255.255 lies in 240/4: it must stay "not unicast".
    push(
        Ipv4Addr::BROADCAST,
        32,
        hop(HopKind::NotUnicast, 0),
        Origin::Fixed("the limited broadcast".into()),
    );
    out
}

/// The LPM table and its next hops, as the workers read them.
pub struct Fib {
    lpm: Arc<Lpm>,
    hops: HopTable,
    /// Next-hop id of the default route (`0.0.0.0/0`), kept out of the LPM
    /// (depth 1..=32): a miss becomes this id. `LPM_MISS` when none.
    default: AtomicU32,
}

/// A burst's view of the FIB ([`Fib::lookups`]): the LPM looked up where
/// the destination is read ([`FibLookup::entry`]), no second pass over the
/// keys; the next-hop id decoded once per run of equal entries
/// ([`FibLookup::id`]).
pub struct FibLookup<'a> {
    lpm: &'a Lpm,
    default: u32,
}

impl FibLookup<'_> {
    /// The LPM's next hop of `dst` (host order), [`LPM_MISS`] for none:
    /// equal entries, equal ids.
    #[inline(always)]
    pub fn entry(&self, dst: u32) -> u32 {
        self.lpm.entry(dst)
    }

    /// The next-hop id of an entry from [`FibLookup::entry`], as
    /// [`Fib::lookup_bulk`] gives it for the same destination.
    #[inline(always)]
    pub fn id(&self, entry: u32) -> u32 {
        match entry {
            LPM_MISS => self.default,
            id => id,
        }
    }
}

impl Fib {
    /// A table of `entries` that nothing changes later (later entries
    /// replace earlier identical prefixes; identical next hops share an id).
    pub fn build(lpm: Lpm, entries: &[FibEntry]) -> Result<Arc<Fib>, DpdkError> {
        let (fib, _writer) = FibWriter::new(lpm, Qsbr::new(1)?, entries)?;
        Ok(fib)
    }

    /// Next-hop ids of a burst of destinations (host order); a miss is the
    /// default route's id, or [`LPM_MISS`] without one.
    #[inline(always)]
    pub fn lookup_bulk(&self, dsts: &[u32], ids: &mut [u32]) {
        self.lpm.lookup_bulk(dsts, ids);
        let default = self.default.load(Relaxed);
        if default != LPM_MISS {
            for id in ids.iter_mut() {
                if *id == LPM_MISS {
                    *id = default;
                }
            }
        }
    }

    /// The table for one burst's lookups one at a time ([`FibLookup::id`]),
    /// the default route's id read once.
    #[inline(always)]
    pub fn lookups(&self) -> FibLookup<'_> {
        FibLookup {
            lpm: &self.lpm,
            default: self.default.load(Relaxed),
        }
    }

    /// The next hop of an id from `lookup_bulk` (`None` for a miss).
    #[inline(always)]
    pub fn hop(&self, id: u32) -> Option<NextHop> {
        if id == LPM_MISS {
            return None;
        }
        self.hops.get(id)
    }

    /// The member of an ECMP group that a flow of hash `hash` takes: the
    /// same one for as long as the group is unchanged.
    /// (`group` is the group's `neigh` word.)
    #[inline]
    pub fn member(&self, group: u32, hash: u32) -> Option<NextHop> {
        self.hops.member(group, hash)
    }

    /// The next hop for one destination (a group as is).
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<NextHop> {
        let id = self
            .lpm
            .lookup(dst)
            .unwrap_or_else(|| self.default.load(Relaxed));
        self.hop(id)
    }
}
