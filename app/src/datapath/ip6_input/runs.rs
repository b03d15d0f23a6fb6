//! ip6_input's routing of the packets its general way checked, by runs of
//! packets with the same LPM6 entry (a burst is mostly one): the next hop
//! read once per run, each packet routed by it ([`route_one`]). A burst
//! plain throughout takes `plain_burst.rs`'s one pass instead.

use super::header::{ipv6_input, plain_ipv6, Ip6Fields};
use super::neighbour::Neighbours;
use super::route::{route, Routed6};
use crate::datapath::contract::Cx;
use crate::datapath::punt::Punt;
use crate::dpdk::BURST_SIZE;
use crate::fib6::{Fib6, NextHop6};

/// Route the `k` packets looked up, `ip6.at` and `ip6.fields` saying each
/// lookup's packet and fields. Returns the output port of the packets
/// forwarded (u16::MAX if several; `None` if none).
#[inline(never)]
pub fn route_all(cx: &mut Cx<'_>, fib: &Fib6, k: usize) -> Option<u16> {
    let mut neighbours = Neighbours::new(cx.pipeline);
    let mut out_port = None;
    let mut j = 0;
    while j < k {
        // A run is the lookups of one LPM6 entry: its next hop read once. A
        // miss (no route in the table) is the default route's id.
        let entry = cx.s.ip6.entries[j % BURST_SIZE];
        let hop = fib.hop_of_entry(entry);
        let mut forwarded = false;
        while j < k && cx.s.ip6.entries[j % BURST_SIZE] == entry {
            let i = usize::from(cx.s.ip6.at[j % BURST_SIZE]);
            forwarded |= route_one(cx, i % BURST_SIZE, j, hop, false, &mut neighbours);
            j += 1;
        }
        // A run's forwards all leave by its next hop's port.
        if let Some(h) = hop.filter(|_| forwarded) {
            fold_port(&mut out_port, h.port);
        }
    }
    out_port
}

/// The output port of a burst's forwards so far, with `port`'s: u16::MAX
/// once there are two.
#[inline(always)]
pub fn fold_port(out_port: &mut Option<u16>, port: u16) {
    *out_port = Some(match *out_port {
        Some(q) if q != port => u16::MAX,
        _ => port,
    });
}

/// Route packet `i` (lookup `j`) by `hop` the general way ([`route`]): its
/// fields kept by the checks, or (`reread`: a packet of the plain pass,
/// which keeps none) read again from its header. Returns whether it was
/// forwarded.
#[inline(never)]
pub fn route_one(
    cx: &mut Cx<'_>,
    i: usize,
    j: usize,
    hop: Option<NextHop6>,
    reread: bool,
    neighbours: &mut Neighbours<'_>,
) -> bool {
    cx.s.fill_metas(1 << i, cx.port, false);
    let Some(m) = cx.burst.as_mut_slice().get_mut(i) else {
        return false;
    };
    let f = if reread {
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
