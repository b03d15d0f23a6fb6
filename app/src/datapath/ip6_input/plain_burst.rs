//! ip6_input's way for a burst that is plain IPv6 throughout (the common
//! case: each header at byte 14 passing [`is_plain`]), in one pass over its
//! packets: each header checked, its destination's LPM6 entry walked, and
//! the packet forwarded in place when that entry's next hop is a forward
//! with its neighbour's index (read once per run of packets of one entry).
//! A packet the pass does not forward (hop limit, MTU, not to our MAC, a
//! next hop that is not such a forward) is routed the general way after
//! it (`runs::route_one`). The pass stops at the first packet that is not
//! plain: it and those after it go the general way (`check_all`); the
//! packets before it stay as the pass left them.

use super::header::{addr, is_plain};
use super::neighbour::Neighbours;
use super::runs::{fold_port, route_one};
use crate::datapath::contract::{all, each, Cx, Mask};
use crate::dpdk::{Lpm6, BURST_SIZE};
use crate::fib::{HopKind, NEIGH_BY_DST};
use crate::fib6::Fib6;
use hooks::wire::ethernet::HEADER_LEN as ETH_LEN;
use hooks::wire::ipv6::{self, field, HEADER_LEN as IP6_LEN};
use hooks::PacketType;

/// What the pass did: how many packets it took (the first ones), and the
/// output port of those it forwarded (u16::MAX if several; `None` if none).
pub struct Passed {
    pub taken: usize,
    pub out_port: Option<u16>,
}

/// A run's next hop as the pass uses it: `limit` is the largest IPv6
/// packet it forwards (the port's MTU), 0 for a next hop the pass does
/// not forward, so one compare says both.
#[derive(Clone, Copy)]
struct RunHop {
    entry: u32,
    port: u16,
    limit: u16,
    neigh: u32,
}

impl RunHop {
    /// Before the first run: an entry no walk ends on.
    const NONE: RunHop = RunHop {
        entry: Lpm6::NO_ENTRY,
        port: 0,
        limit: 0,
        neigh: 0,
    };

    /// The next hop of a run of `entry` (a miss: the default route's).
    #[inline(never)]
    fn of(fib: &Fib6, entry: u32) -> RunHop {
        match fib.hop_of_entry(entry) {
            Some(h) if h.kind == HopKind::Forward && h.neigh != NEIGH_BY_DST => RunHop {
                entry,
                port: h.port,
                limit: h.mtu,
                neigh: h.neigh,
            },
            _ => RunHop {
                entry,
                ..RunHop::NONE
            },
        }
    }
}

/// Check, look up and forward the burst's packets from the first until one
/// is not plain (see the module). `META`: each packet's L3 offset and
/// packet type are read from its metadata (else it is l2_input's unwritten
/// plain one: byte 14, to our MAC).
#[inline(always)]
pub fn check_and_forward<const META: bool>(cx: &mut Cx<'_>, fib: &Fib6, lpm: &Lpm6) -> Passed {
    let s = &mut *cx.s;
    let mut run = RunHop::NONE;
    // Only the refused are marked in the loop: the forwarded are the rest.
    let (mut other, mut run_from): (Mask, usize) = (0, 0);
    let mut out_port = None;
    let mut taken = 0;
    for (i, (m, meta)) in cx
        .burst
        .as_mut_slice()
        .iter_mut()
        .zip(&mut s.metas)
        .enumerate()
    {
        if META && meta.l3_offset != ETH_LEN as u16 {
            break;
        }
        let frame = m.data_mut();
        let rest = frame.len().wrapping_sub(ETH_LEN + IP6_LEN);
        let Some(h) = frame.get_mut(ETH_LEN..).and_then(|b| b.first_chunk_mut()) else {
            break;
        };
        if !is_plain(h, rest) {
            break;
        }
        let entry = lpm.walk(addr(h, field::DST));
        if entry != run.entry {
            // The run before: its forwards all left by its port.
            fold_run(&mut out_port, &run, run_from, i, other);
            (run, run_from) = (RunHop::of(fib, entry), i);
        }
        let hop_limit = h[field::HOP_LIMIT];
        let fits = rest + IP6_LEN <= usize::from(run.limit);
        let other_host = META && meta.packet_type != PacketType::Host;
        if other_host | (hop_limit <= 1) | !fits {
            s.ip6.entries[i % BURST_SIZE] = entry;
            other |= 1 << i;
        } else {
            ipv6::decrement_hop_limit(h, hop_limit);
            meta.out_port = run.port;
            // 16 bytes do not fit: the neighbour's index says where it goes.
            meta.next_hop = 0;
            s.neigh[i % BURST_SIZE] = run.neigh;
        }
        taken = i + 1;
    }
    fold_run(&mut out_port, &run, run_from, taken, other);
    s.steps.neigh_output |= all(taken) & !other;
    if other != 0 {
        route_others(cx, fib, other, &mut out_port);
    }
    Passed { taken, out_port }
}

/// The port of the run of packets `from..to` into `out_port` if it
/// forwarded any (any not in `other`).
#[inline(always)]
fn fold_run(out_port: &mut Option<u16>, run: &RunHop, from: usize, to: usize, other: Mask) {
    if (all(to) & !all(from)) & !other != 0 {
        fold_port(out_port, run.port);
    }
}

/// The packets of `other` the pass took but did not forward, each routed
/// the general way by its entry's next hop.
#[inline(never)]
fn route_others(cx: &mut Cx<'_>, fib: &Fib6, other: Mask, out_port: &mut Option<u16>) {
    let mut neighbours = Neighbours::new(cx.pipeline);
    for i in each(other) {
        let entry = cx.s.ip6.entries[i];
        let hop = fib.hop_of_entry(entry);
        if route_one(cx, i, i, hop, true, &mut neighbours) {
            if let Some(h) = hop {
                fold_port(out_port, h.port);
            }
        }
    }
}
