//! The IPv6 forwarding table: an [`Lpm6Pair`] maps a destination to a
//! next-hop id, the id indexes this table's own array of next hops. Its own
//! array rather than the IPv4 FIB's: an IPv4 next hop holds its gateway in
//! 4 bytes, which the IPv4 workers read per packet; widening every slot to
//! 16 bytes would slow the IPv4 path for IPv6's sake, and the two tables'
//! ids are looked up in separate LPMs anyway.
//!
//! Built by the control plane at start from the config ([`fib6_entries`])
//! and changed by it at run time ([`Fib6Writer`]: `fastpath ctl`, reloads)
//! while the workers look up: see `writer` for how a change reaches them
//! whole.

mod entries;
mod hops;
mod writer;

pub use entries::fib6_entries;
pub use writer::{Fib6Writer, Route6Change, Rule6, HOP6_CAPACITY};

use crate::dpdk::{DpdkError, Lpm6, Lpm6Pair, Qsbr, LPM6_MISS};
use crate::fib::{HopKind, Origin};
use hops::HopTable6;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU32, Ordering::Acquire};
use std::sync::Arc;

/// One IPv6 next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NextHop6 {
    pub kind: HopKind,
    /// Output port id (for `Local`: the port that owns the address).
    pub port: u16,
    /// The gateway; `None` on-link (the destination is the neighbour).
    pub gateway: Option<Ipv6Addr>,
    /// The gateway's index in the neighbour table, or `NEIGH_BY_DST`.
    pub neigh: u32,
    /// MTU of the output port: larger packets get a packet too big.
    pub mtu: u16,
}

/// One prefix, its next hop and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fib6Entry {
    pub prefix: Ipv6Addr,
    pub len: u8,
    pub hop: NextHop6,
    pub origin: Origin,
}

/// The IPv6 table as the workers will read it.
#[derive(Debug)]
pub struct Fib6 {
    lpm: Arc<Lpm6Pair>,
    hops: HopTable6,
    /// Next-hop id of the default route `::/0`, which `rte_lpm6` cannot hold
    /// (depth 1..=128): a miss becomes it. `LPM6_MISS` when none.
    default: AtomicU32,
}

impl Fib6 {
    /// A pair of `rte_lpm6` tables named `name`_a and `name`_b, sized for
    /// `entries` (see [`table_sizes`]), read by the workers of `qsbr`, with
    /// `entries` installed (later ones replace identical earlier prefixes;
    /// identical next hops share an id): the table and its writer. On an
    /// error (a full table) the workers see none of it.
    pub fn create(
        name: &str,
        entries: &[Fib6Entry],
        routes: u32,
        qsbr: Arc<Qsbr>,
        socket: i32,
    ) -> Result<(Arc<Fib6>, Fib6Writer), DpdkError> {
        let (rules, tbl8s) = table_sizes(entries, routes);
        let a = Lpm6::new(&format!("{name}_a"), rules, tbl8s, socket)?;
        let b = Lpm6::new(&format!("{name}_b"), rules, tbl8s, socket)?;
        let (_, writer) = Lpm6Pair::new(a, b, qsbr.clone())?;
        Fib6Writer::new(writer, qsbr, entries)
    }

    /// The LPM table the workers read now: ip6_input takes it once per
    /// burst and walks it for each destination ([`Lpm6::walk`]: 16 bytes
    /// as `Ipv6Packet::dst_bytes` gives them), then decodes each run of
    /// one entry once ([`Lpm6::next_hop_of`]); a miss is [`LPM6_MISS`],
    /// which [`or_default`](Self::or_default) turns into the default
    /// route's id, once per run, not once per packet. Held no further than
    /// the worker's next quiescent report.
    #[inline(always)]
    pub fn table(&self) -> &Lpm6 {
        self.lpm.active()
    }

    /// Next-hop ids of `dsts` ([`table`](Self::table)'s lookups, misses
    /// left [`LPM6_MISS`]).
    pub fn lookup_bulk(&self, dsts: &[[u8; 16]], ids: &mut [u32]) {
        self.table().lookup_bulk(dsts, ids);
    }

    /// The default route's id for a miss of [`table`](Self::table)
    /// (still [`LPM6_MISS`] without a default route), else `id`.
    #[inline(always)]
    pub fn or_default(&self, id: u32) -> u32 {
        if id == LPM6_MISS {
            self.default.load(Acquire)
        } else {
            id
        }
    }

    /// The next hop of an id from `or_default` (`None` for a miss).
    #[inline(always)]
    pub fn hop(&self, id: u32) -> Option<NextHop6> {
        self.hops.get(id)
    }

    /// The next hop of an entry [`Lpm6::walk`] ended on in
    /// [`table`](Self::table): its next hop's, or the default route's for a
    /// miss (`None` without one).
    #[inline(always)]
    pub fn hop_of_entry(&self, entry: u32) -> Option<NextHop6> {
        self.hop(self.or_default(Lpm6::next_hop_of(entry)))
    }

    /// The next hop for one destination.
    pub fn lookup(&self, dst: &Ipv6Addr) -> Option<NextHop6> {
        let id = self
            .lpm
            .lookup(dst)
            .unwrap_or_else(|| self.default.load(Acquire));
        self.hop(id)
    }
}

/// Routes the IPv6 FIB holds beyond the config's by default
/// (`--fib6-routes`).
pub const FIB6_ROUTES: u32 = 1024;

/// tbl8 groups a route added at run time may take: one per byte from the
/// fourth to the sixth, for a /48 that shares none (the Internet's longest).
const GROUPS_PER_ROUTE: u32 = 3;

/// The `rte_lpm6` sizes for `entries` with room to grow by `routes` (ctl
/// and FPM routes): rules, and tbl8 groups (a prefix longer than /24 takes
/// up to one group per byte past the third that no other prefix shares).
pub fn table_sizes(entries: &[Fib6Entry], routes: u32) -> (u32, u32) {
    let groups: u32 = entries
        .iter()
        .map(|e| u32::from(e.len.saturating_sub(24)).div_ceil(8))
        .sum();
    let rules = entries.len() as u32;
    (
        (rules * 2).max(rules + routes),
        (groups * 2).max(groups + routes.saturating_mul(GROUPS_PER_ROUTE)),
    )
}
