//! neigh_output: the cached Ethernet header of each routed packet's next
//! hop in front of its IP header (16 bytes, two 64-bit stores). A
//! neighbour's header is read (seqlock) once per run of packets to it, so a
//! burst sees one consistent header per neighbour. Next step: `Forward` (out
//! of `meta.out_port`), or `Punt(Resolve)` for a next hop without one.

use super::punt::Punt;
use super::{Next, Pipeline, Scratch};
use crate::dpdk::MbufBurst;
use crate::fib::NEIGH_BY_DST;
use crate::neigh::store_header;
use std::net::Ipv4Addr;

/// Write the header of every packet whose next step is `Neigh`; leaves in
/// `s.forwarded` how many are forwarded.
#[inline(always)]
pub fn run(p: &Pipeline, burst: &mut MbufBurst, s: &mut Scratch) {
    let mut forwarded = 0;
    // (neighbour index, its header words if usable); u32::MAX: none yet.
    let mut cached: (u32, Option<[u64; 2]>) = (u32::MAX, None);
    // (next hop, its neighbour index) of the last packet found by address.
    let mut last_dst: (u32, u32) = (0, u32::MAX);
    // One pass over the burst and its per-packet state side by side: no
    // index, so no bounds check per packet.
    let states = s.next.iter_mut().zip(s.neigh.iter().zip(&s.metas));
    for (m, (next, (&neigh, meta))) in burst.as_mut_slice().iter_mut().zip(states) {
        if *next != Next::Neigh {
            continue;
        }
        let index = if neigh != NEIGH_BY_DST {
            neigh
        } else if meta.next_hop == last_dst.0 {
            last_dst.1
        } else {
            last_dst = (meta.next_hop, p.by_address(meta.next_hop));
            last_dst.1
        };
        if index != cached.0 {
            cached = (index, p.header_of(index));
        }
        let slot = cached
            .1
            .and_then(|words| Some((m.eth_header_mut()?, words)));
        // A store per arm, not one of a value built by both: the common
        // arm then stores the tag alone.
        match slot {
            Some((slot, words)) => {
                store_header(slot, words);
                forwarded += 1;
                *next = Next::Forward;
            }
            None => *next = Next::Punt(Punt::Resolve),
        }
    }
    s.forwarded = forwarded;
}

impl Pipeline {
    /// The index of the neighbour whose address is `next_hop` (u32::MAX:
    /// none). Out of line: on-link destinations only.
    #[inline(never)]
    fn by_address(&self, next_hop: u32) -> u32 {
        let found = self.neigh.lookup(Ipv4Addr::from(next_hop));
        found.map_or(u32::MAX, |x| x as u32)
    }

    /// The cached header of neighbour `index`, if it has a usable one. Out
    /// of line: read once per run of packets to a neighbour, and the
    /// seqlock's loop would take registers from the per-packet one.
    #[inline(never)]
    fn header_of(&self, index: u32) -> Option<[u64; 2]> {
        (index != u32::MAX)
            .then(|| self.neigh.entry(index as usize).hh_snapshot())
            .flatten()
    }
}
