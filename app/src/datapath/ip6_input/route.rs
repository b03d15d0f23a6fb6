//! ip6_input's second half: each checked packet by its FIB6 next hop. A
//! forward (RFC 8200, RFC 4291, RFC 4443's conditions for the errors the
//! control plane sends): a packet from a frame to our MAC, hop limit above
//! 1, a link-local source only back onto its own link, within the output
//! port's MTU (never fragmented); then padding and any VLAN tag off, hop
//! limit - 1 (one store: IPv6 has no header checksum). Extension headers
//! are forwarded untouched (Hop-by-Hop is not processed on this path).

use super::groups::Groups6;
use super::header::{addr, Ip6Fields};
use super::local::{to_link, to_us};
use crate::datapath::punt::Punt;
use crate::dpdk::Mbuf;
use crate::fib::HopKind;
use crate::fib6::NextHop6;
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::ipv6::{self, field};
use hooks::{DropReason, PacketMeta, PacketType};

/// Where one IPv6 packet goes from ip6_input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed6 {
    /// Forwarded: to neigh_output once its neighbour (the route's gateway,
    /// or the destination on-link: [`neighbour_addr`]) has an index.
    Neigh,
    /// To the control plane.
    Punt(Punt),
    Drop(DropReason),
}

/// Route one checked packet (received on `in_port`) by its next hop
/// (`None`: no route).
#[inline(always)]
pub fn route(
    m: &mut Mbuf,
    meta: &mut PacketMeta,
    f: &Ip6Fields,
    hop: Option<NextHop6>,
    groups: &Groups6,
    in_port: u16,
    kernel: bool,
) -> Routed6 {
    // A plain packet's source is neither `::` nor link-local: its forward
    // reads nothing of the header again.
    if let Some(hop) = hop.filter(|h| f.plain && h.kind == HopKind::Forward) {
        return forward(m, meta, f, &hop, (false, false), in_port);
    }
    let l3 = usize::from(meta.l3_offset);
    let Some(h) = m.data().get(l3..).and_then(|b| b.first_chunk()) else {
        return Routed6::Drop(DropReason::Ipv6Truncated);
    };
    // Of the source, a forward needs only its classes.
    let src = addr(h, field::SRC);
    let (unspecified, link_local) = (ipv6::is_unspecified(src), ipv6::is_link_local_unicast(src));
    let Some(hop) = hop else {
        return no_route(unspecified);
    };
    if hop.kind == HopKind::Forward {
        return forward(m, meta, f, &hop, (unspecified, link_local), in_port);
    }
    let dst = *addr(h, field::DST);
    let deliver = |m: &Mbuf, unicast| {
        let ip = m.data().get(l3..usize::from(f.trimmed_len));
        let judged = to_us(ip.unwrap_or_default(), unicast, unspecified, kernel);
        judged.map_or_else(Routed6::Drop, Routed6::Punt)
    };
    match hop.kind {
        HopKind::Forward => forward(m, meta, f, &hop, (unspecified, link_local), in_port),
        // Our link-local address of another port is not ours on this link.
        HopKind::Local if ipv6::is_link_local_unicast(&dst) && hop.port != in_port => {
            Routed6::Drop(DropReason::Ipv6LinkLocalDestination)
        }
        HopKind::Local => deliver(m, true),
        HopKind::NotUnicast if groups.has_group(in_port, &dst) => deliver(m, false),
        HopKind::NotUnicast if ipv6::multicast_scope(&dst) <= 2 => {
            let ip = m.data().get(l3..usize::from(f.trimmed_len));
            let judged = to_link(ip.unwrap_or_default(), unspecified, kernel);
            judged.map_or_else(Routed6::Drop, Routed6::Punt)
        }
        HopKind::NotUnicast => Routed6::Drop(DropReason::Ipv6MulticastNotRouted),
        HopKind::Martian => Routed6::Drop(martian(&dst)),
        // No ECMP groups in the IPv6 FIB yet.
        HopKind::Group => no_route(unspecified),
    }
}

/// No route: an ICMPv6 destination unreachable is due, unless the source
/// is `::` (nobody to tell).
#[inline]
fn no_route(unspecified: bool) -> Routed6 {
    if unspecified {
        Routed6::Drop(DropReason::Ipv6UnspecifiedSource)
    } else {
        Routed6::Punt(Punt::NoRoute6)
    }
}

/// The reason for a destination the FIB6 never forwards (its fixed
/// entries: link-local, `::`; loopback and IPv4-mapped are refused before).
#[cold]
fn martian(dst: &[u8; 16]) -> DropReason {
    if ipv6::is_link_local_unicast(dst) {
        DropReason::Ipv6LinkLocalDestination
    } else if ipv6::is_unspecified(dst) {
        DropReason::Ipv6UnspecifiedDestination
    } else if ipv6::is_loopback(dst) {
        DropReason::Ipv6Loopback
    } else {
        DropReason::Ipv6Ipv4Mapped
    }
}

/// Forward a packet by `hop` (its source `::`? link-local?): if
/// [`forward_verdict`] lets it, padding and tag off, hop limit - 1, the
/// route in the metadata.
#[inline(always)]
fn forward(
    m: &mut Mbuf,
    meta: &mut PacketMeta,
    f: &Ip6Fields,
    hop: &NextHop6,
    classes: (bool, bool),
    in_port: u16,
) -> Routed6 {
    if let Err(r) = forward_verdict(meta, f, hop, classes, in_port) {
        return r;
    }
    let l3 = usize::from(meta.l3_offset);
    if !reshape(m, f.trimmed_len, l3) {
        return Routed6::Drop(DropReason::Ipv6BadPayloadLength);
    }
    if !hop_limit_down(m.data_mut(), f) {
        return Routed6::Drop(DropReason::Ipv6Truncated);
    }
    meta.l3_offset = HEADER_LEN as u16;
    meta.out_port = hop.port;
    // 16 bytes do not fit: the neighbour's index says where it goes.
    meta.next_hop = 0;
    Routed6::Neigh
}

/// Whether a checked packet (its source `::`? link-local?) may be
/// forwarded by `hop`, in the order of the kernel's `ip6_forward`: only
/// what came to our MAC, never from `::`, hop limit above 1, a link-local
/// source not off its link, within the MTU. `Err`: where it goes instead
/// (the output port in `meta` for the errors that quote it).
#[inline(always)]
pub fn forward_verdict(
    meta: &mut PacketMeta,
    f: &Ip6Fields,
    hop: &NextHop6,
    (unspecified, link_local): (bool, bool),
    in_port: u16,
) -> Result<(), Routed6> {
    if meta.packet_type != PacketType::Host {
        // A unicast destination in a frame to a group's MAC.
        return Err(Routed6::Drop(DropReason::NotUnicast));
    }
    if unspecified {
        return Err(Routed6::Drop(DropReason::Ipv6UnspecifiedSource));
    }
    if f.hop_limit <= 1 {
        return Err(Routed6::Punt(Punt::HopLimitExceeded));
    }
    if link_local && hop.port != in_port {
        meta.out_port = hop.port;
        return Err(Routed6::Punt(Punt::BeyondScope));
    }
    if usize::from(f.trimmed_len) - usize::from(meta.l3_offset) > usize::from(hop.mtu) {
        meta.out_port = hop.port;
        return Err(Routed6::Punt(Punt::PacketTooBig));
    }
    Ok(())
}

/// A forward's one edit of the header (at byte 14 once reshaped): the hop
/// limit `f` read, less one (one store: IPv6 has no header checksum).
/// False if the frame holds no header there.
#[inline(always)]
pub fn hop_limit_down(frame: &mut [u8], f: &Ip6Fields) -> bool {
    match frame
        .get_mut(HEADER_LEN..)
        .and_then(|b| b.first_chunk_mut())
    {
        Some(h) => {
            ipv6::decrement_hop_limit(h, f.hop_limit);
            true
        }
        None => false,
    }
}

/// The address of a forwarded packet's neighbour: the route's gateway, or
/// its destination on-link (the header at byte 14 after the forward).
#[inline]
pub fn neighbour_addr(m: &Mbuf, hop: &NextHop6) -> [u8; 16] {
    match hop.gateway {
        Some(g) => g.octets(),
        None => m
            .data()
            .get(HEADER_LEN..)
            .and_then(|b| b.first_chunk())
            .map_or([0; 16], |h| *addr(h, field::DST)),
    }
}

/// Trim the padding and take any VLAN tag off (the IPv6 header then at
/// HEADER_LEN).
#[inline(always)]
fn reshape(m: &mut Mbuf, trimmed_len: u16, l3: usize) -> bool {
    let trimmed = usize::from(trimmed_len) == m.data().len() || m.trim_to(trimmed_len);
    trimmed && (l3 == HEADER_LEN || m.adj((l3 - HEADER_LEN) as u16))
}
