//! ip_input's second half: each checked packet by its LPM result. A run of
//! packets with the same result (a burst is mostly one) reads and judges its
//! next hop once; a plain forward then costs each packet only what depends
//! on it: TTL, MTU, TTL - 1, padding.

use super::flow_hash::flow_hash;
use super::header::{header_at_14, header_at_14_mut, plain_fields, total_len, Ipv4Fields};
use crate::datapath::contract::{all, Cx, Mask};
use crate::datapath::punt::Punt;
use crate::datapath::to_kernel::local_other;
use crate::dpdk::{Mbuf, BURST_SIZE};
use crate::fib::{HopKind, NextHop};
use hooks::flow::proto;
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::ipv4::{self, field, DONT_FRAGMENT, MIN_HEADER_LEN};
use hooks::{DropReason, PacketMeta};
use std::ops::Range;

/// Where one packet goes from ip_input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed {
    /// To neigh_output (its next hop in the metadata and `Scratch::neigh`).
    Neigh,
    /// To the control plane.
    Punt(Punt),
    Drop(DropReason),
}

/// Route the `k` packets looked up, by runs of equal LPM entries (the
/// next hop decoded once per run); leaves in `s.out_port` the one output
/// port of every packet routed. `identity`: the LPM entries are the whole
/// burst's, in order, all plain (the common case): the place of entry `j`
/// is packet `j`.
#[inline(always)]
pub fn route_all(cx: &mut Cx<'_>, k: usize, identity: bool) {
    let fib = cx.pipeline.fib.lookups();
    let mut out_port = None;
    let mut j = 0;
    while j < k {
        let entry = cx.s.lpm_entry[j % BURST_SIZE];
        let hop = cx.pipeline.fib.hop(fib.id(entry));
        let (end, port) = match hop {
            Some(hop) if hop.kind == HopKind::Forward && identity => {
                (forward_range(cx, j, k, entry, &hop), Some(hop.port))
            }
            _ => {
                let end = run_end(&cx.s.lpm_entry, j, k);
                let port = match hop {
                    Some(hop) if hop.kind == HopKind::Forward => {
                        forward_run(cx, j..end, &hop);
                        Some(hop.port)
                    }
                    hop => route_run(cx, j..end, hop, identity),
                };
                (end, port)
            }
        };
        if let Some(port) = port {
            out_port = Some(same_port(out_port, port));
        }
        j = end;
    }
    cx.s.out_port = out_port.unwrap_or(u16::MAX);
}

/// Where the run of LPM entries equal to `entries[from]` ends (before `k`).
#[inline]
fn run_end(entries: &[u32; BURST_SIZE], from: usize, k: usize) -> usize {
    let entry = entries[from % BURST_SIZE];
    let rest = entries.get(from..k).unwrap_or_default();
    from + rest.iter().take_while(|&&x| x == entry).count()
}

/// The whole burst plain, in order: the packets from `from` on whose LPM
/// entry is `entry`, a forward by `hop`, forwarded in place
/// ([`forward_plain`]), walked without an index; the rest of the run
/// (TTL exceeded, too big) the general way. Returns where the run ends.
#[inline(always)]
fn forward_range(cx: &mut Cx<'_>, from: usize, k: usize, entry: u32, hop: &NextHop) -> usize {
    // By value: its fields stay in registers over the run.
    let hop = *hop;
    let s = &mut *cx.s;
    let mbufs = cx.burst.as_mut_slice();
    let k = k.min(mbufs.len());
    let packets = mbufs.get_mut(from..k).unwrap_or_default();
    let metas = s.metas.get_mut(from..k).unwrap_or_default();
    let entries = s.lpm_entry.get(from..k).unwrap_or_default();
    // A loop for each kind of next hop: no test of the gateway per packet.
    let (end, other) = if hop.gateway == 0 {
        forward_each::<true>(packets, metas, entries, entry, hop, from)
    } else {
        forward_each::<false>(packets, metas, entries, entry, hop, from)
    };
    // The run's neighbour, in one fill (vector stores), not a store per packet.
    if let Some(neigh) = s.neigh.get_mut(from..end) {
        neigh.fill(hop.neigh);
    }
    s.steps.neigh_output |= (all(end) & !all(from)) & !other;
    if other != 0 {
        cx.s.fill_metas(other, cx.port, false);
        forward_refused(cx, other, &hop);
    }
    end
}

/// [`forward_range`]'s loop, for a next hop on-link (`ON_LINK`: the
/// destination is the neighbour) or by a gateway: forward each packet
/// from the first while its LPM entry is `entry`. Returns where the run
/// ends (the place of the first packet after `from`) and the packets it
/// could not simply forward.
#[inline(always)]
fn forward_each<const ON_LINK: bool>(
    packets: &mut [Mbuf],
    metas: &mut [PacketMeta],
    entries: &[u32],
    entry: u32,
    hop: NextHop,
    from: usize,
) -> (usize, Mask) {
    // Counted from the run's first packet: `from` is not live in the loop.
    let mut other: Mask = 0;
    let mut n = 0;
    for ((m, meta), &e) in packets.iter_mut().zip(metas).zip(entries) {
        if e != entry {
            break;
        }
        if !forward_plain(m, meta, hop, ON_LINK) {
            other |= 1 << n;
        }
        n += 1;
    }
    // `from + n` is at most the burst's length, below 64.
    (from + n, other << from)
}

/// A run of packets (places in `s.lpm_at`) whose route is a forward by
/// `hop`: a plain header is forwarded in place ([`forward_plain`]); the
/// rest go the general way.
#[inline(never)]
fn forward_run(cx: &mut Cx<'_>, run: Range<usize>, hop: &NextHop) {
    let hop = *hop;
    let s = &mut *cx.s;
    let mbufs = cx.burst.as_mut_slice();
    let mut neigh: Mask = 0;
    let mut other: Mask = 0;
    for &i in s.lpm_at.get(run).unwrap_or_default() {
        let i = usize::from(i) % BURST_SIZE;
        let Some(m) = mbufs.get_mut(i) else { continue };
        let plain = s.full & (1 << i) == 0;
        if plain && forward_plain(m, &mut s.metas[i], hop, hop.gateway == 0) {
            s.neigh[i] = hop.neigh;
            neigh |= 1 << i;
        } else {
            other |= 1 << i;
        }
    }
    s.steps.neigh_output |= neigh;
    if other != 0 {
        forward_refused(cx, other, &hop);
    }
}

/// Forward a packet with a plain header (at byte 14, checked) by `hop`:
/// TTL above 1 and within the MTU, padding trimmed, TTL - 1, the next hop
/// in the metadata (the caller sets its neighbour index; `on_link`: the
/// hop has no gateway). False, with the packet as it was, for any other.
#[inline(always)]
fn forward_plain(m: &mut Mbuf, meta: &mut PacketMeta, hop: NextHop, on_link: bool) -> bool {
    let frame = m.data();
    let len = frame.len();
    let Some(h) = header_at_14(frame) else {
        return false;
    };
    let (ttl, total) = (h[field::TTL], total_len(h));
    if ttl <= 1 || total > hop.mtu {
        return false;
    }
    // Padding after the datagram is cut (two stores), single-segment only.
    let trimmed = HEADER_LEN as u16 + total;
    if usize::from(trimmed) != len && !m.trim_to(trimmed) {
        return false;
    }
    let Some(h) = header_at_14_mut(m.data_mut()) else {
        return false;
    };
    ipv4::decrement_ttl(h, ttl);
    meta.next_hop = if on_link {
        let d = field::DST;
        u32::from_be_bytes([h[d], h[d + 1], h[d + 2], h[d + 3]])
    } else {
        hop.gateway
    };
    meta.out_port = hop.port;
    true
}

/// The packets of a forward run that could not simply be forwarded: TTL
/// exceeded, too big, a header the full checks took, or a frame that
/// cannot be trimmed.
#[cold]
#[inline(never)]
fn forward_refused(cx: &mut Cx<'_>, other: Mask, hop: &NextHop) {
    for i in crate::datapath::contract::each(other) {
        let Some(f) = fields_of(cx, i) else { continue };
        let Some(m) = cx.burst.as_mut_slice().get_mut(i) else {
            continue;
        };
        let s = &mut *cx.s;
        let routed = if f.ttl <= 1 {
            Routed::Punt(Punt::TtlExceeded)
        } else if forward(m, &mut s.metas[i], &f, *hop, &mut s.neigh[i]) {
            Routed::Neigh
        } else {
            judge_refused(m, &mut s.metas[i], &f, hop)
        };
        cx.route_to(i, routed);
    }
}

/// The header fields of packet `i`: kept by the full checks, else read
/// from its plain header at byte 14.
#[inline]
fn fields_of(cx: &Cx<'_>, i: usize) -> Option<Ipv4Fields> {
    if cx.s.full & (1 << i) != 0 {
        return cx.s.ipv4.get(i).copied();
    }
    Some(plain_fields(header_at_14(
        cx.burst.as_slice().get(i)?.data(),
    )?))
}

/// A run of packets whose LPM result is anything but a plain forward (no
/// route, an ECMP group, a local address, martian or not unicast).
/// Returns the output port of the packets it routed (u16::MAX if they
/// differ; none if it routed none). `identity`: as for [`route_all`].
#[inline(never)]
fn route_run(
    cx: &mut Cx<'_>,
    run: Range<usize>,
    hop: Option<NextHop>,
    identity: bool,
) -> Option<u16> {
    let mut out_port = None;
    if identity {
        cx.s.fill_metas(all(run.end) & !all(run.start), cx.port, false);
    }
    for j in run {
        let at = if identity {
            j
        } else {
            usize::from(cx.s.lpm_at[j % BURST_SIZE])
        };
        let i = at % BURST_SIZE;
        let Some(f) = fields_of(cx, i) else { continue };
        let Some(m) = cx.burst.as_mut_slice().get_mut(i) else {
            continue;
        };
        let s = &mut *cx.s;
        let routed = route(cx.pipeline, m, &mut s.metas[i], &f, hop, &mut s.neigh[i]);
        if routed == Routed::Neigh {
            out_port = Some(same_port(out_port, s.metas[i].out_port));
        }
        cx.route_to(i, routed);
    }
    out_port
}

impl Cx<'_> {
    /// Put packet `i` where ip_input routed it.
    #[inline(always)]
    fn route_to(&mut self, i: usize, routed: Routed) {
        match routed {
            Routed::Neigh => self.s.steps.neigh_output |= 1 << i,
            Routed::Punt(p) => {
                self.s.punt[i] = p;
                self.s.steps.local |= 1 << i;
            }
            Routed::Drop(r) => self.drop(i, r),
        }
    }
}

/// `port` if every port so far (`so_far`, none yet: `None`) is `port`,
/// else u16::MAX.
#[inline(always)]
fn same_port(so_far: Option<u16>, port: u16) -> u16 {
    match so_far {
        Some(p) if p != port => u16::MAX,
        _ => port,
    }
}

/// Route one checked IPv4 packet by its LPM result's next hop.
#[inline(always)]
fn route(
    p: &crate::datapath::Pipeline,
    m: &mut Mbuf,
    meta: &mut PacketMeta,
    f: &Ipv4Fields,
    hop: Option<NextHop>,
    neigh: &mut u32,
) -> Routed {
    let Some(mut hop) = hop else {
        // For an ICMP net unreachable, within the worker's budget.
        return Routed::Punt(Punt::NoRoute);
    };
    if hop.kind == HopKind::Group {
        let hash = flow_hash(m, f, usize::from(meta.l3_offset));
        match p.fib.member(hop.neigh, hash) {
            Some(h) => hop = h,
            None => return Routed::Punt(Punt::NoRoute),
        }
    }
    match hop.kind {
        HopKind::Forward => {}
        HopKind::Group => return Routed::Punt(Punt::NoRoute),
        HopKind::Martian => return Routed::Drop(DropReason::Martian),
        HopKind::Local if f.protocol == proto::ICMP => return Routed::Punt(Punt::LocalIcmp),
        HopKind::Local => {
            let peers = p.kernel.as_deref();
            return match local_other(peers, DropReason::LocalUnsupported) {
                Ok(to) => Routed::Punt(to),
                Err(r) => Routed::Drop(r),
            };
        }
        HopKind::NotUnicast => return not_unicast(p, f),
    }
    if f.ttl <= 1 {
        return Routed::Punt(Punt::TtlExceeded);
    }
    if forward(m, meta, f, hop, neigh) {
        Routed::Neigh
    } else {
        judge_refused(m, meta, f, &hop)
    }
}

/// A packet to a broadcast or multicast address: dropped, but for a group
/// of the link's own (224.0.0.0/24: OSPF, RIP, VRRP, ...), which goes to
/// the kernel with kernel interfaces (never forwarded: RFC 5771).
#[cold]
fn not_unicast(p: &crate::datapath::Pipeline, f: &Ipv4Fields) -> Routed {
    let link_local_group = u32::from(f.dst) & 0xffff_ff00 == 0xe000_0000;
    match p.kernel.as_deref() {
        Some(_) if link_local_group => Routed::Punt(Punt::Kernel),
        _ => Routed::Drop(DropReason::NotUnicast),
    }
}

/// Forward a packet whose TTL is above 1 by `hop`: TTL - 1, padding and any
/// VLAN tag off, the next hop in the metadata. False, with the packet as it
/// was, when it is larger than the MTU or cannot be trimmed
/// ([`judge_refused`] says why).
#[inline(always)]
fn forward(
    m: &mut Mbuf,
    meta: &mut PacketMeta,
    f: &Ipv4Fields,
    hop: NextHop,
    neigh: &mut u32,
) -> bool {
    let l3 = usize::from(meta.l3_offset);
    if usize::from(f.trimmed_len) - l3 > usize::from(hop.mtu) {
        return false;
    }
    // Untagged Ethernet header and no padding from here on.
    let untrimmed = usize::from(f.trimmed_len) != m.data().len();
    if (untrimmed || l3 != HEADER_LEN) && !reshape(m, f, l3) {
        return false;
    }
    let Some(h) = m
        .data_mut()
        .get_mut(HEADER_LEN..HEADER_LEN + MIN_HEADER_LEN)
        .and_then(|b| b.first_chunk_mut())
    else {
        return false;
    };
    ipv4::decrement_ttl(h, f.ttl);
    if l3 != HEADER_LEN {
        // (A plain header is at HEADER_LEN already: no store.)
        meta.l3_offset = HEADER_LEN as u16;
    }
    meta.out_port = hop.port;
    meta.next_hop = if hop.gateway != 0 {
        hop.gateway
    } else {
        u32::from(f.dst)
    };
    *neigh = hop.neigh;
    true
}

/// Trim the padding and take any VLAN tag off (the IPv4 header then at
/// HEADER_LEN). Out of line: plain frames need neither.
#[cold]
#[inline(never)]
fn reshape(m: &mut Mbuf, f: &Ipv4Fields, l3: usize) -> bool {
    let trimmed = usize::from(f.trimmed_len) == m.data().len() || m.trim_to(f.trimmed_len);
    trimmed && m.adj((l3 - HEADER_LEN) as u16)
}

/// Why a packet with TTL above 1 could not be forwarded by `hop`: larger
/// than the MTU (fastpath does not fragment: with Don't Fragment set the
/// sender is told the MTU by an ICMP fragmentation needed, else it is
/// dropped), or a frame that could not be trimmed.
#[cold]
fn judge_refused(m: &Mbuf, meta: &mut PacketMeta, f: &Ipv4Fields, hop: &NextHop) -> Routed {
    let l3 = usize::from(meta.l3_offset);
    if usize::from(f.trimmed_len) - l3 <= usize::from(hop.mtu) {
        return Routed::Drop(DropReason::Ipv4BadTotalLength);
    }
    let flags = m.data().get(l3 + field::FLAGS_FRAG).copied();
    if flags.is_some_and(|b| b & DONT_FRAGMENT != 0) {
        meta.out_port = hop.port;
        Routed::Punt(Punt::FragNeeded)
    } else {
        Routed::Drop(DropReason::MtuExceeded)
    }
}
