//! ip6_input's routing of a looked-up burst by runs of packets with the
//! same LPM6 entry (a burst is mostly one): the next hop read once per
//! run. A run forwarded by a next hop whose neighbour index the route holds,
//! in a burst that was plain IPv6 throughout (`identity`: packet `j` is
//! lookup `j`), costs each packet only what depends on it
//! ([`forward_plain`]); every other packet goes the general way
//! ([`route_one`]).

use super::header::{ipv6_input, plain_ipv6, Ip6Fields};
use super::neighbour::Neighbours;
use super::route::{route, Routed6};
use crate::datapath::contract::{all, each, Cx, Mask};
use crate::datapath::punt::Punt;
use crate::dpdk::{Lpm6, Mbuf, BURST_SIZE};
use crate::fib::{HopKind, NEIGH_BY_DST};
use crate::fib6::{Fib6, NextHop6};
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::ipv6::{self, field};
use hooks::{PacketMeta, PacketType};

/// Route the `k` packets looked up. `identity`: the burst is plain IPv6 at
/// byte 14 throughout and lookup `j` is packet `j`; else `ip6.at` and
/// `ip6.fields` say each lookup's packet and fields. `unset`: every
/// packet's metadata is l2_input's unwritten plain one (to our MAC).
/// Returns the output port of the packets forwarded (u16::MAX if several;
/// `None` if none).
#[inline(always)]
pub fn route_all(
    cx: &mut Cx<'_>,
    fib: &Fib6,
    k: usize,
    identity: bool,
    unset: bool,
) -> Option<u16> {
    let mut neighbours = Neighbours::new(cx.pipeline);
    let mut out_port = None;
    let mut j = 0;
    while j < k {
        // A run is the lookups of one LPM6 entry: its next hop read once. A
        // miss (no route in the table) is the default route's id.
        let entry = cx.s.ip6.entries[j % BURST_SIZE];
        let hop = fib.hop(fib.or_default(Lpm6::next_hop_of(entry)));
        let (end, forwarded) = match hop {
            Some(h) if identity && h.kind == HopKind::Forward && h.neigh != NEIGH_BY_DST => {
                if unset {
                    forward_range::<false>(cx, j, k, entry, &h, &mut neighbours)
                } else {
                    forward_range::<true>(cx, j, k, entry, &h, &mut neighbours)
                }
            }
            _ => route_run(cx, j, k, hop, identity, &mut neighbours),
        };
        // A run's forwards all leave by its next hop's port.
        if let Some(port) = hop.filter(|_| forwarded).map(|h| h.port) {
            out_port = Some(match out_port {
                Some(q) if q != port => u16::MAX,
                _ => port,
            });
        }
        j = end;
    }
    out_port
}

/// The packets from `from` (before `k`) whose LPM6 entry is `entry`, a
/// forward by `hop` with its neighbour's index, in a plain burst: each
/// forwarded in place, those [`forward_plain`] refuses (hop limit, MTU,
/// not to our MAC) the general way. `META`: the packet type is read from
/// the metadata (else it is l2_input's unwritten plain one: to our MAC).
/// Returns where the run ends and whether it forwarded.
#[inline(always)]
fn forward_range<const META: bool>(
    cx: &mut Cx<'_>,
    from: usize,
    k: usize,
    entry: u32,
    hop: &NextHop6,
    neighbours: &mut Neighbours<'_>,
) -> (usize, bool) {
    // By value: its fields stay in registers over the run.
    let hop = *hop;
    let s = &mut *cx.s;
    let mbufs = cx.burst.as_mut_slice();
    let k = k.min(mbufs.len());
    let packets = mbufs.get_mut(from..k).unwrap_or_default();
    let metas = s.metas.get_mut(from..k).unwrap_or_default();
    let entries = s.ip6.entries.get(from..k).unwrap_or_default();
    let mut other: Mask = 0;
    let mut n = 0;
    for ((m, meta), &x) in packets.iter_mut().zip(metas).zip(entries) {
        if x != entry {
            break;
        }
        if !forward_plain::<META>(m, meta, &hop) {
            other |= 1 << n;
        }
        n += 1;
    }
    // `from + n` is at most the burst's length, below 64.
    let (end, other) = (from + n, other << from);
    if let Some(neigh) = s.neigh.get_mut(from..end) {
        neigh.fill(hop.neigh);
    }
    let forwarded = (all(end) & !all(from)) & !other;
    s.steps.neigh_output |= forwarded;
    let mut any = forwarded != 0;
    for i in each(other) {
        any |= route_one(cx, i, i, Some(hop), true, neighbours);
    }
    (end, any)
}

/// Forward a plain packet (its header at byte 14, checked by
/// [`plain_ipv6`]: a global source, no padding) by `hop`: to our MAC, hop
/// limit above 1, within the MTU; then hop limit - 1 and the route in the
/// metadata (the caller sets its neighbour index). False, with the packet
/// as it was, for any other. `META`: as [`forward_range`]'s.
#[inline(always)]
fn forward_plain<const META: bool>(m: &mut Mbuf, meta: &mut PacketMeta, hop: &NextHop6) -> bool {
    let len = m.data().len();
    let Some(h) = m
        .data_mut()
        .get_mut(HEADER_LEN..)
        .and_then(|b| b.first_chunk_mut())
    else {
        return false;
    };
    let hop_limit = h[field::HOP_LIMIT];
    let fits = len - HEADER_LEN <= usize::from(hop.mtu);
    let other_host = META && meta.packet_type != PacketType::Host;
    if other_host | (hop_limit <= 1) | !fits {
        return false;
    }
    ipv6::decrement_hop_limit(h, hop_limit);
    meta.out_port = hop.port;
    // 16 bytes do not fit: the neighbour's index says where it goes.
    meta.next_hop = 0;
    true
}

/// The lookups from `from` (before `k`) whose entry is the first's, each
/// routed the general way. Returns where the run ends and whether it
/// forwarded.
#[inline(never)]
fn route_run(
    cx: &mut Cx<'_>,
    from: usize,
    k: usize,
    hop: Option<NextHop6>,
    identity: bool,
    neighbours: &mut Neighbours<'_>,
) -> (usize, bool) {
    let entry = cx.s.ip6.entries[from % BURST_SIZE];
    let mut forwarded = false;
    let mut j = from;
    while j < k && cx.s.ip6.entries[j % BURST_SIZE] == entry {
        let i = if identity {
            j
        } else {
            usize::from(cx.s.ip6.at[j % BURST_SIZE])
        };
        forwarded |= route_one(cx, i % BURST_SIZE, j, hop, identity, neighbours);
        j += 1;
    }
    (j, forwarded)
}

/// Route packet `i` (lookup `j`) by `hop` the general way ([`route`]): its
/// fields kept by the checks, or (`identity`) read again from its plain
/// header. Returns whether it was forwarded.
#[inline(never)]
fn route_one(
    cx: &mut Cx<'_>,
    i: usize,
    j: usize,
    hop: Option<NextHop6>,
    identity: bool,
    neighbours: &mut Neighbours<'_>,
) -> bool {
    cx.s.fill_metas(1 << i, cx.port, false);
    let Some(m) = cx.burst.as_mut_slice().get_mut(i) else {
        return false;
    };
    let f = if identity {
        match fields(m.data(), usize::from(cx.s.metas[i].l3_offset)) {
            Ok(f) => f,
            Err(r) => {
                cx.drop(i, r);
                return false;
            }
        }
    } else {
        cx.s.ip6.fields[j % BURST_SIZE]
    };
    let p = cx.pipeline;
    let kernel = p.kernel.is_some();
    match route(m, &mut cx.s.metas[i], &f, hop, &p.groups6, cx.port, kernel) {
        Routed6::Neigh => match hop.and_then(|h| neighbours.index(m, &h)) {
            Some(index) => {
                cx.s.neigh[i] = index;
                cx.s.steps.neigh_output |= 1 << i;
                return true;
            }
            None => punt(cx, i, Punt::Resolve6),
        },
        Routed6::Punt(reason) => punt(cx, i, reason),
        Routed6::Drop(r) => cx.drop(i, r),
    }
    false
}

/// The checks' fields of the header at byte `l3` of `frame`: the plain
/// case first, [`ipv6_input`] for the rest.
#[inline(always)]
pub fn fields(frame: &[u8], l3: usize) -> Result<Ip6Fields, hooks::DropReason> {
    match plain_ipv6(frame, l3) {
        Some((f, _)) => Ok(f),
        None => ipv6_input(frame, l3).map(|(f, _)| f),
    }
}

#[inline(always)]
fn punt(cx: &mut Cx<'_>, i: usize, reason: Punt) {
    cx.s.punt[i] = reason;
    cx.s.steps.local |= 1 << i;
}
