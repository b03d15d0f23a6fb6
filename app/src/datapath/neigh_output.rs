//! neigh_output: the cached Ethernet header of each routed packet's next
//! hop in front of its IP header (16 bytes, two 64-bit stores). A
//! neighbour's header is read (seqlock) once per run of packets to it, so a
//! burst sees one consistent header per neighbour. A next hop without one
//! sends the packet to the control plane to wait for ARP (or neighbour
//! discovery, for IPv6: `Punt::Resolve6`).

use super::contract::{all, each, Cx, Mask, Stage, StageSpec, Step};
use super::punt::Punt;
use super::Pipeline;
use crate::dpdk::{Mbuf, BURST_SIZE};
use crate::fib::NEIGH_BY_DST;
use crate::neigh::store_header;
use hooks::wire::ethernet::ethertype;
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
    let sent = if mask == all(cx.burst.len()) {
        whole_burst(cx)
    } else {
        some(cx, mask)
    };
    let s = &mut *cx.s;
    s.steps.tx |= sent;
    let waiting = mask & !sent;
    if waiting != 0 {
        // To the control plane, with their metadata.
        s.fill_metas(waiting, cx.port, true);
        for i in each(waiting) {
            s.punt[i] = if s.metas[i].protocol == ethertype::IPV6 {
                Punt::Resolve6
            } else {
                Punt::Resolve
            };
        }
        s.steps.local |= waiting;
    }
}

/// Every packet of the burst (the common case), by runs of packets to one
/// neighbour: the neighbour's header is read once per run, and each packet
/// of the run costs its test and its two stores. Returns the packets sent.
#[inline(always)]
fn whole_burst(cx: &mut Cx<'_>) -> Mask {
    let s = &mut *cx.s;
    let mut found = Found::new(cx.pipeline);
    let mbufs = cx.burst.as_mut_slice();
    let n = mbufs.len().min(BURST_SIZE);
    let mut sent: Mask = 0;
    let mut i = 0;
    while i < n {
        let index = s.neigh[i];
        let words = found.words(index, s.metas[i].next_hop);
        let packets = mbufs.get_mut(i..n).unwrap_or_default();
        let indexes = s.neigh.get(i..n).unwrap_or_default();
        let (len, written) = match words {
            // On-link (by the packet's own next hop): a run of one.
            _ if index == NEIGH_BY_DST => {
                let one = packets.get_mut(..1).unwrap_or_default();
                (1, words.map_or(0, |w| write_run(one, indexes, index, w).1))
            }
            Some(w) => write_run(packets, indexes, index, w),
            None => (run_len(indexes, index), 0),
        };
        sent |= written << i;
        i += len.max(1);
    }
    sent
}

/// Write the header `words` into the packets from the first on whose
/// neighbour index is `index`; returns how many and the mask (from bit 0)
/// of those written.
#[inline(always)]
fn write_run(packets: &mut [Mbuf], indexes: &[u32], index: u32, words: [u64; 2]) -> (usize, Mask) {
    let mut unsent: Mask = 0;
    let mut j = 0;
    for (m, &x) in packets.iter_mut().zip(indexes) {
        if x != index {
            break;
        }
        match m.eth_header_mut() {
            Some(slot) => store_header(slot, words),
            None => unsent |= 1 << j,
        }
        j += 1;
    }
    (j, all(j) & !unsent)
}

/// How many of `indexes`, from the first, are `index`.
#[inline]
fn run_len(indexes: &[u32], index: u32) -> usize {
    indexes.iter().take_while(|&&x| x == index).count()
}

/// The packets of `mask`, a part of the burst, one at a time. Returns the
/// packets sent.
#[inline(never)]
fn some(cx: &mut Cx<'_>, mask: Mask) -> Mask {
    let s = &mut *cx.s;
    let mut found = Found::new(cx.pipeline);
    let mbufs = cx.burst.as_mut_slice();
    let mut sent: Mask = 0;
    for i in each(mask) {
        let Some(m) = mbufs.get_mut(i) else { continue };
        if let (Some(words), Some(slot)) = (
            found.words(s.neigh[i], s.metas[i].next_hop),
            m.eth_header_mut(),
        ) {
            store_header(slot, words);
            sent |= 1 << i;
        }
    }
    sent
}

/// The neighbours a burst's packets go to, each looked up once per run of
/// packets to it.
struct Found<'a> {
    p: &'a Pipeline,
    /// (neighbour index, its header words if usable); u32::MAX: none yet.
    cached: (u32, Option<[u64; 2]>),
    /// (next hop, its neighbour index) of the last packet found by address.
    last_dst: (u32, u32),
}

impl<'a> Found<'a> {
    fn new(p: &'a Pipeline) -> Self {
        Found {
            p,
            cached: (u32::MAX, None),
            last_dst: (0, u32::MAX),
        }
    }

    /// The header of neighbour `index` (by `next_hop`'s address when it is
    /// [`NEIGH_BY_DST`]), if it has a usable one.
    #[inline(always)]
    fn words(&mut self, index: u32, next_hop: u32) -> Option<[u64; 2]> {
        let index = if index != NEIGH_BY_DST {
            index
        } else {
            if next_hop != self.last_dst.0 {
                self.last_dst = (next_hop, self.p.by_address(next_hop));
            }
            self.last_dst.1
        };
        if index != self.cached.0 {
            self.cached = (index, self.p.header_of(index));
        }
        self.cached.1
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
    use hooks::PacketMeta;
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
        // Packet 2's metadata left unset by l2_input (a burst without
        // hooks) but its route: written as it waits, the route kept.
        b.scratch.unset = 0b100;
        b.scratch.metas[2].in_port = 9;
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
        let mut waiting = plain_meta(0);
        waiting.out_port = 1;
        waiting.next_hop = metas[2].next_hop;
        assert_eq!(b.scratch.metas[2], waiting);
        assert_eq!(b.scratch.unset, 0);
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

    #[test]
    fn an_ipv6_neighbour_s_header_is_written_an_unresolved_one_waits_for_nd() {
        use crate::datapath::ip6_input::frames::udp6;
        let frame = udp6("2001:db8:1::7", "2001:db8:100::9").build();
        let mut b = Bench::with_ipv6();
        b.frames(&[frame.clone(), frame.clone()]);
        let neigh = |a: &str| b.pipeline.neigh.lookup6(a.parse().unwrap()).unwrap() as u32;
        let (resolved, waiting) = (neigh("2001:db8:2::2"), neigh("2001:db8:2::9"));
        let mut meta = PacketMeta::received_on(0);
        meta.protocol = ethertype::IPV6;
        meta.l3_offset = 14;
        meta.out_port = 1;
        b.state(
            Steps {
                neigh_output: 0b11,
                ..Steps::default()
            },
            &[meta, meta],
        );
        b.scratch.neigh[..2].copy_from_slice(&[resolved, waiting]);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                tx: 0b01,
                local: 0b10,
                ..Steps::default()
            }
        );
        assert_eq!(b.scratch.punt[1], Punt::Resolve6);
        assert_eq!(&b.data(0)[..6], &GATEWAY_MAC);
        assert_eq!(&b.data(0)[6..12], &PORT_MACS[1]);
        assert_eq!(
            &b.data(0)[12..],
            &frame[12..],
            "ethertype 0x86DD and the packet"
        );
        assert_eq!(b.data(1), &frame[..]);
    }
}
