//! ip_input: the IPv4 header checks of every packet l2_input passed, ONE
//! LPM bulk lookup for the burst, then the route of each (next hop read
//! once per run of packets with the same LPM result), TTL - 1 with the
//! incremental checksum, padding trimmed. Next step: `Neigh`, a punt (TTL
//! exceeded, no route, ICMP to us, fragmentation needed) or a drop.

use super::punt::Punt;
use super::{Next, Pipeline, Scratch};
use crate::dpdk::{Mbuf, MbufBurst, BURST_SIZE};
use crate::fib::{flow_hash, HopKind, NextHop};
use crate::stage::ip::{ipv4_forward_ttl_of, ipv4_input_into, is_martian_source, CsumFlag, Ipv4Ok};
use crate::stage::plain::plain_header;
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::ipv4::MIN_HEADER_LEN;
use hooks::{DropReason, PacketMeta};
use std::ops::Range;

/// IP protocol number of ICMP.
const IPPROTO_ICMP: u8 = 1;

/// Check, look up and route every packet whose next step is `Ipv4`.
#[inline(always)]
pub fn run(p: &Pipeline, burst: &mut MbufBurst, s: &mut Scratch) {
    let mbufs = burst.as_mut_slice();
    let k = check(mbufs, s);
    p.fib.lookup_bulk(&s.dsts[..k], &mut s.ids[..k]);
    // Runs of packets with the same LPM result (a burst is mostly one):
    // the next hop is read and judged once per run.
    // The output port of every route so far, u16::MAX once they differ
    // (tx sends a burst that leaves whole by one port in one call).
    let mut out_port = None;
    let mut j = 0;
    while j < k {
        let id = s.ids[j];
        let end = j + s.ids[j..k].iter().take_while(|&&x| x == id).count();
        let port = match p.fib.hop(id) {
            Some(hop) if hop.kind == HopKind::Forward => {
                forward_run(mbufs, s, j..end, &hop);
                hop.port
            }
            hop => route_run(p, mbufs, s, j..end, hop),
        };
        out_port = Some(same_port(out_port, port));
        j = end;
    }
    s.out_port = out_port.unwrap_or(u16::MAX);
}

/// The header checks: each packet that passes has its header's fields in
/// `s.oks` (at its index) and its destination in `s.dsts` (in burst order,
/// its index in `s.idx`); returns how many passed.
#[inline(always)]
fn check(mbufs: &[Mbuf], s: &mut Scratch) -> usize {
    let mut k = 0;
    let n = mbufs.len().min(BURST_SIZE);
    for (i, m) in mbufs[..n].iter().enumerate() {
        if s.next[i] == Next::Ipv4 {
            let csum = csum_flag(m);
            let ok = &mut s.oks[i];
            let passed = (s.metas[i].l3_offset == HEADER_LEN as u16
                && plain_header(m.data(), csum, ok))
                || full_check(m, &s.metas[i], csum, ok, &mut s.next[i]);
            s.idx[k] = i as u8;
            s.dsts[k] = u32::from(ok.dst);
            k += usize::from(passed);
        }
    }
    k
}

/// A header that is not plain (tagged, options, or bad): `ipv4_input`;
/// false with the drop reason in `next`.
#[cold]
#[inline(never)]
fn full_check(
    m: &Mbuf,
    meta: &PacketMeta,
    csum: CsumFlag,
    ok: &mut Ipv4Ok,
    next: &mut Next,
) -> bool {
    match ipv4_input_into(m.data(), meta, csum, ok) {
        Ok(()) => true,
        Err(r) => {
            *next = Next::Drop(r);
            false
        }
    }
}

/// A run of packets whose route is a forward by `hop`: only the checks
/// that depend on each packet are made for each.
#[inline(always)]
fn forward_run(mbufs: &mut [Mbuf], s: &mut Scratch, run: Range<usize>, hop: &NextHop) {
    for &i in s.idx.get(run).unwrap_or_default() {
        let i = usize::from(i) % BURST_SIZE;
        let ok = &s.oks[i];
        let Some(m) = mbufs.get_mut(i) else {
            continue;
        };
        // A store per arm (see neigh_output).
        if is_martian_source(ok.src) {
            s.next[i] = Next::Drop(DropReason::Martian);
        } else if ok.ttl <= 1 {
            s.next[i] = Next::Punt(Punt::TtlExceeded);
        } else {
            s.next[i] = forward(m, &mut s.metas[i], ok, hop, &mut s.neigh[i]);
        }
    }
}

/// A run of packets whose LPM result is anything but a plain forward (no
/// route, an ECMP group, a local address, martian or not unicast).
/// Returns the output port of the packets it routed (u16::MAX if they
/// differ).
#[inline(never)]
fn route_run(
    p: &Pipeline,
    mbufs: &mut [Mbuf],
    s: &mut Scratch,
    run: Range<usize>,
    hop: Option<NextHop>,
) -> u16 {
    let mut out_port = None;
    for &i in s.idx.get(run).unwrap_or_default() {
        let i = usize::from(i) % BURST_SIZE;
        if let Some(m) = mbufs.get_mut(i) {
            s.next[i] = route(p, m, &mut s.metas[i], &s.oks[i], hop, &mut s.neigh[i]);
            if s.next[i] == Next::Neigh {
                out_port = Some(same_port(out_port, s.metas[i].out_port));
            }
        }
    }
    out_port.unwrap_or(u16::MAX)
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

/// What the NIC says of the header checksum.
#[inline(always)]
pub fn csum_flag(m: &Mbuf) -> CsumFlag {
    match m.rx_ip_checksum() {
        Some(true) => CsumFlag::Good,
        Some(false) => CsumFlag::Bad,
        None => CsumFlag::Unknown,
    }
}

/// Route one checked IPv4 packet by its LPM result's next hop.
#[inline(always)]
fn route(
    p: &Pipeline,
    m: &mut Mbuf,
    meta: &mut PacketMeta,
    ok: &Ipv4Ok,
    hop: Option<NextHop>,
    neigh: &mut u32,
) -> Next {
    if is_martian_source(ok.src) {
        return Next::Drop(DropReason::Martian);
    }
    let Some(hop) = hop else {
        // For an ICMP net unreachable, within the worker's budget.
        return Next::Punt(Punt::NoRoute);
    };
    let hop = if hop.kind == HopKind::Group {
        match group_member(p, m, meta, ok, hop.neigh) {
            Some(h) => h,
            None => return Next::Punt(Punt::NoRoute),
        }
    } else {
        hop
    };
    match hop.kind {
        HopKind::Forward => {}
        HopKind::Group => return Next::Punt(Punt::NoRoute),
        HopKind::Martian => return Next::Drop(DropReason::Martian),
        HopKind::Local if ok.protocol == IPPROTO_ICMP => return Next::Punt(Punt::LocalIcmp),
        HopKind::Local => return Next::Drop(DropReason::LocalUnsupported),
        HopKind::NotUnicast => return Next::Drop(DropReason::NotUnicast),
    }
    if ok.ttl <= 1 {
        return Next::Punt(Punt::TtlExceeded);
    }
    forward(m, meta, ok, &hop, neigh)
}

/// TTL - 1, padding and any VLAN tag off, the next hop in the metadata.
#[inline(always)]
fn forward(
    m: &mut Mbuf,
    meta: &mut PacketMeta,
    ok: &Ipv4Ok,
    hop: &NextHop,
    neigh: &mut u32,
) -> Next {
    let l3 = usize::from(meta.l3_offset);
    if usize::from(ok.trimmed_len) - l3 > usize::from(hop.mtu) {
        return too_big(m, meta, hop.port);
    }
    let data = m.data_mut();
    let header = data
        .get_mut(l3..l3 + MIN_HEADER_LEN)
        .and_then(|b| b.first_chunk_mut());
    match header.map(|h| ipv4_forward_ttl_of(h, ok.ttl)) {
        Some(Ok(_)) => {}
        Some(Err(r)) => return Next::Drop(r),
        None => return Next::Drop(DropReason::Ipv4Truncated),
    }
    // Untagged Ethernet header and no padding from here on.
    let trimmed = usize::from(ok.trimmed_len) == data.len() || m.trim_to(ok.trimmed_len);
    if !trimmed || !m.adj((l3 - HEADER_LEN) as u16) {
        return Next::Drop(DropReason::Ipv4BadTotalLength);
    }
    if l3 != HEADER_LEN {
        // (A plain header is at HEADER_LEN already: no store.)
        meta.l3_offset = HEADER_LEN as u16;
    }
    meta.out_port = hop.port;
    meta.next_hop = if hop.gateway != 0 {
        hop.gateway
    } else {
        u32::from(ok.dst)
    };
    *neigh = hop.neigh;
    Next::Neigh
}

/// The member of the ECMP group whose word is `group` (its `neigh`)
/// that this packet's flow takes (by the NIC's RSS hash, or the
/// 5-tuple's). Out of line: only ECMP routes come here.
#[inline(never)]
fn group_member(
    p: &Pipeline,
    m: &Mbuf,
    meta: &PacketMeta,
    ok: &Ipv4Ok,
    group: u32,
) -> Option<NextHop> {
    let hash = flow_hash(m, ok, usize::from(meta.l3_offset));
    p.fib.member(group, hash)
}

/// Larger than the output MTU: fastpath does not fragment. With Don't
/// Fragment set, the sender is told the MTU (ICMP fragmentation needed,
/// within the worker's budget); without, the packet is dropped.
#[cold]
fn too_big(m: &Mbuf, meta: &mut PacketMeta, out_port: u16) -> Next {
    const FLAGS: usize = 6;
    const DONT_FRAGMENT: u8 = 0x40;
    let flags = m.data().get(usize::from(meta.l3_offset) + FLAGS).copied();
    if flags.is_some_and(|f| f & DONT_FRAGMENT != 0) {
        meta.out_port = out_port;
        Next::Punt(Punt::FragNeeded)
    } else {
        Next::Drop(DropReason::MtuExceeded)
    }
}
