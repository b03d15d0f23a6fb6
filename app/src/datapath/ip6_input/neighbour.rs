//! ip6_input's neighbours: the index in the neighbour table of each
//! forwarded packet's next hop (the route's gateway, or the destination
//! on-link), found once per run of packets to one address. A next hop the
//! table does not hold yet goes to the control plane (`Punt::Resolve6`),
//! which resolves it by neighbour discovery.

use crate::datapath::Pipeline;
use crate::fib::NEIGH_BY_DST;

/// The last address looked up and its index, over a burst.
pub struct Neighbours<'a> {
    p: &'a Pipeline,
    last: Option<([u8; 16], Option<u32>)>,
}

impl<'a> Neighbours<'a> {
    pub fn new(p: &'a Pipeline) -> Self {
        Neighbours { p, last: None }
    }

    /// The index of the neighbour `addr` whose route gave `neigh` (its
    /// index, or [`NEIGH_BY_DST`]); `None`: not in the table.
    #[inline(always)]
    pub fn index(&mut self, addr: &[u8; 16], neigh: u32) -> Option<u32> {
        if neigh != NEIGH_BY_DST {
            return Some(neigh);
        }
        match self.last {
            Some((a, found)) if a == *addr => found,
            _ => {
                let found = self.p.by_address6(addr);
                self.last = Some((*addr, found));
                found
            }
        }
    }
}

impl Pipeline {
    /// The index of the IPv6 neighbour `addr`, if the table holds it.
    #[inline(never)]
    fn by_address6(&self, addr: &[u8; 16]) -> Option<u32> {
        let found = self.neigh.lookup6(std::net::Ipv6Addr::from(*addr));
        found.map(|x| x as u32)
    }
}
