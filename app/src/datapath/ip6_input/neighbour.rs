//! ip6_input's neighbours: the index in the neighbour table of each
//! forwarded packet's next hop (the route's gateway, or the destination
//! on-link), found once per run of packets to one address. A next hop the
//! table does not hold yet goes to the control plane (`Punt::Resolve6`),
//! which resolves it by neighbour discovery. A link-local address is looked
//! up with its port (`neigh::scope6`): it names a neighbour on one link.

use super::route::neighbour_addr;
use crate::datapath::Pipeline;
use crate::dpdk::Mbuf;
use crate::fib::NEIGH_BY_DST;
use crate::fib6::NextHop6;

/// The last address (and port) looked up and its index, over a burst.
pub struct Neighbours<'a> {
    p: &'a Pipeline,
    last: Option<([u8; 16], u16, Option<u32>)>,
}

impl<'a> Neighbours<'a> {
    pub fn new(p: &'a Pipeline) -> Self {
        Neighbours { p, last: None }
    }

    /// The index of a packet `m` forwarded by `hop`: the route's, or its
    /// neighbour's address looked up ([`NEIGH_BY_DST`]); `None`: not in the
    /// table.
    #[inline(always)]
    pub fn index(&mut self, m: &Mbuf, hop: &NextHop6) -> Option<u32> {
        if hop.neigh != NEIGH_BY_DST {
            return Some(hop.neigh);
        }
        self.by_address(&neighbour_addr(m, hop), hop.port)
    }

    /// The index of the neighbour `addr` out of `port`, the last one
    /// remembered.
    #[inline]
    fn by_address(&mut self, addr: &[u8; 16], port: u16) -> Option<u32> {
        match self.last {
            Some((a, p, found)) if a == *addr && p == port => found,
            _ => {
                let found = self.p.by_address6(addr, port);
                self.last = Some((*addr, port, found));
                found
            }
        }
    }
}

impl Pipeline {
    /// The index of the IPv6 neighbour `addr` out of `port`, if the table
    /// holds it.
    #[inline(never)]
    fn by_address6(&self, addr: &[u8; 16], port: u16) -> Option<u32> {
        let scoped = crate::neigh::scope6(std::net::Ipv6Addr::from(*addr), port);
        let found = self.neigh.lookup6(scoped);
        found.map(|x| x as u32)
    }
}
