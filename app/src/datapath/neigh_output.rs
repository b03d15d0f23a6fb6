//! neigh_output: the cached Ethernet header of each routed packet's next
//! hop in front of its IP header (16 bytes, two 64-bit stores). A
//! neighbour's header is read (seqlock) once per run of packets to it, so a
//! burst sees one consistent header per neighbour. A next hop without one
//! sends the packet to the control plane to wait for ARP.

use super::contract::{all, each, Cx, Mask, Stage, StageSpec, Step};
use super::punt::Punt;
use super::Pipeline;
use crate::fib::NEIGH_BY_DST;
use crate::neigh::store_header;
use std::net::Ipv4Addr;

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::NeighOutput,
    takes: &[Step::NeighOutput],
    sets: &[Step::Tx, Step::Local],
    drops: &[],
};

/// Write the header of every packet in `steps.neigh_output`.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    let mask = std::mem::take(&mut cx.s.steps.neigh_output);
    let s = &mut *cx.s;
    let mbufs = cx.burst.as_mut_slice();
    let p = cx.pipeline;
    // (neighbour index, its header words if usable); u32::MAX: none yet.
    let mut cached: (u32, Option<[u64; 2]>) = (u32::MAX, None);
    // (next hop, its neighbour index) of the last packet found by address.
    let mut last_dst: (u32, u32) = (0, u32::MAX);
    let mut sent: Mask = 0;
    let mut one = |i: usize, m: &mut crate::dpdk::Mbuf, index: u32, next_hop: u32| {
        let index = if index != NEIGH_BY_DST {
            index
        } else {
            if next_hop != last_dst.0 {
                last_dst = (next_hop, p.by_address(next_hop));
            }
            last_dst.1
        };
        if index != cached.0 {
            cached = (index, p.header_of(index));
        }
        if let (Some(words), Some(slot)) = (cached.1, m.eth_header_mut()) {
            store_header(slot, words);
            sent |= 1 << i;
        }
    };
    if mask == all(mbufs.len()) {
        // The whole burst (the common case): no index.
        let state = s.neigh.iter().zip(s.metas.iter());
        for (i, (m, (&index, meta))) in mbufs.iter_mut().zip(state).enumerate() {
            one(i, m, index, meta.next_hop);
        }
    } else {
        for i in each(mask) {
            if let Some(m) = mbufs.get_mut(i) {
                one(i, m, s.neigh[i], s.metas[i].next_hop);
            }
        }
    }
    s.steps.tx |= sent;
    let waiting = mask & !sent;
    if waiting != 0 {
        for i in each(waiting) {
            s.punt[i] = Punt::Resolve;
        }
        s.steps.local |= waiting;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::l2_input::plain::plain_meta;
    use crate::datapath::testing::{Bench, GATEWAY_MAC, PEER_MAC, PORT_MACS};
    use hooks::testkit;
    use std::net::Ipv4Addr;

    #[test]
    fn a_resolved_next_hop_s_header_is_written_an_unresolved_one_waits() {
        let frame = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs(PORT_MACS[0], PEER_MAC)
            .build();
        let mut b = Bench::new();
        b.frames(&[frame.clone(), frame.clone(), frame.clone()]);
        let gateway = b
            .pipeline
            .neigh
            .lookup(Ipv4Addr::new(10, 0, 2, 2))
            .expect("static") as u32;
        let mut metas = [plain_meta(0); 3];
        for m in &mut metas {
            m.out_port = 1;
        }
        metas[1].next_hop = u32::from(Ipv4Addr::new(10, 0, 2, 2));
        metas[2].next_hop = u32::from(Ipv4Addr::new(10, 0, 2, 77));
        b.state(
            Steps {
                neigh_output: 0b111,
                ..Steps::default()
            },
            &metas,
        );
        b.scratch.neigh[..3].copy_from_slice(&[gateway, NEIGH_BY_DST, NEIGH_BY_DST]);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                tx: 0b011,
                local: 0b100,
                ..Steps::default()
            }
        );
        assert_eq!(b.scratch.punt[2], Punt::Resolve);
        for i in 0..2 {
            assert_eq!(&b.data(i)[..6], &GATEWAY_MAC);
            assert_eq!(&b.data(i)[6..12], &PORT_MACS[1]);
            assert_eq!(&b.data(i)[12..], &frame[12..]);
        }
        assert_eq!(
            b.data(2),
            &frame[..],
            "a packet that waits is left as it was"
        );
    }
}
