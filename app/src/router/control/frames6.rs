//! IPv6 frames the control plane reads and writes, on plain byte buffers
//! (unit-tested here, no DPDK): neighbour solicitations and advertisements,
//! echo replies and ICMPv6 errors, and the checks a neighbour discovery
//! message passes before it is acted on.

use hooks::wire::ethernet::{ethertype, EthernetFrame, HEADER_LEN};
use hooks::wire::icmpv6::{
    self, emit_error, EchoRepr, ErrorRepr, Icmpv6Packet, NdError, NdRepr, ND_HOP_LIMIT,
};
use hooks::wire::ipv6::{
    self, multicast_mac, next_header, solicited_node, Ipv6Packet, Ipv6Repr,
    HEADER_LEN as IPV6_HEADER_LEN, MIN_MTU,
};
use hooks::DropReason;
use std::net::Ipv6Addr;

/// Ethernet, IPv6 and a solicitation or advertisement with its link-layer
/// address option: 86 bytes.
pub const ND_FRAME_LEN: usize = HEADER_LEN + IPV6_HEADER_LEN + icmpv6::NS_NA_LEN + 8;
/// Hop limit of the echo replies and errors we originate (Linux's default).
pub const OWN_HOP_LIMIT: u8 = 64;
/// Room for an ICMPv6 error frame: Ethernet and 1280 bytes of IPv6.
pub const ICMP6_ERROR_MAX: usize = HEADER_LEN + MIN_MTU;

/// The drop reason of a neighbour discovery message refused by RFC 4861's
/// checks (the names `NdError::reason` gives).
pub fn nd_drop_reason(e: NdError) -> DropReason {
    match e {
        NdError::NotNeighborMessage => DropReason::NdNotNeighborMessage,
        NdError::Code => DropReason::NdBadCode,
        NdError::Truncated => DropReason::NdTruncated,
        NdError::HopLimit => DropReason::NdHopLimitNot255,
        NdError::MulticastTarget => DropReason::NdMulticastTarget,
        NdError::ZeroLengthOption => DropReason::NdZeroLengthOption,
        NdError::OptionTruncated => DropReason::NdOptionTruncated,
        NdError::LinkLayerOptionLength => DropReason::NdLinkLayerOptionLength,
        NdError::UnspecifiedSourceNotToSolicitedNode => DropReason::NdDadNotToSolicitedNode,
        NdError::UnspecifiedSourceWithLinkLayerAddress => DropReason::NdDadWithSourceLlAddr,
        NdError::SolicitedToMulticast => DropReason::NdSolicitedAdvertToMulticast,
    }
}

/// A neighbour discovery message that passed every check of RFC 4861
/// 7.1.1 / 7.1.2, with the IP addresses it came with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdIn {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub nd: NdRepr,
}

/// Read the neighbour discovery message in `packet` (from its IPv6
/// header): the IPv6 header whole, ICMPv6 after any extension headers
/// (not a fragment), its checksum, then `NdRepr::parse` and `check_ip`.
pub fn parse_nd(packet: &[u8]) -> Result<NdIn, DropReason> {
    let (ip, msg) = icmpv6_message(packet).ok_or(DropReason::NdTruncated)?;
    let (src, dst) = (ip.src_addr, ip.dst_addr);
    let p = Icmpv6Packet::new_checked(msg).map_err(|_| DropReason::NdTruncated)?;
    let nd = NdRepr::parse(&p).map_err(nd_drop_reason)?;
    if !p.verify_checksum(&src, &dst) {
        return Err(DropReason::NdBadChecksum);
    }
    nd.check_ip(&src, &dst, ip.hop_limit)
        .map_err(nd_drop_reason)?;
    Ok(NdIn { src, dst, nd })
}

/// The IPv6 header of `packet` and its ICMPv6 message (up to the payload
/// length), if it holds a whole one: `None` for another protocol, a
/// fragment, or a packet cut short.
pub fn icmpv6_message(packet: &[u8]) -> Option<(Ipv6Repr, &[u8])> {
    let (repr, span) = icmpv6_span(packet)?;
    Some((repr, &packet[span]))
}

/// [`icmpv6_message`] as where the message lies in `packet`.
fn icmpv6_span(packet: &[u8]) -> Option<(Ipv6Repr, std::ops::Range<usize>)> {
    let ip = Ipv6Packet::new_checked(packet).ok()?;
    let repr = Ipv6Repr::parse(&ip).ok()?;
    let u = ip.upper_layer().ok()?;
    let end = IPV6_HEADER_LEN + repr.payload_len;
    if u.protocol != next_header::ICMPV6 || u.fragment.is_some() || u.offset > end {
        return None;
    }
    packet.get(u.offset..end)?;
    Some((repr, u.offset..end))
}

/// Write the Ethernet header and an IPv6 header (traffic class and flow
/// label 0, next header ICMPv6) for `payload_len` bytes.
fn write_headers(
    frame: &mut [u8],
    (dst_mac, src_mac): ([u8; 6], [u8; 6]),
    (src, dst): (Ipv6Addr, Ipv6Addr),
    payload_len: usize,
    hop_limit: u8,
) {
    if let Ok(mut eth) = EthernetFrame::new_checked(&mut *frame) {
        eth.set_dst_addr(dst_mac);
        eth.set_src_addr(src_mac);
        eth.set_ethertype(ethertype::IPV6);
    }
    if let Ok(mut ip) = Ipv6Packet::new_checked(&mut frame[HEADER_LEN..]) {
        Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: next_header::ICMPV6,
            payload_len,
            hop_limit,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut ip);
    }
}

/// A neighbour advertisement for our address `target` on `our_mac`, to
/// `(dst, dst_mac)`: router and override flags, solicited unless it
/// answers duplicate address detection (to all-nodes), the target
/// link-layer address option, hop limit 255, from `target` itself.
pub fn neighbor_advert(
    our_mac: [u8; 6],
    target: Ipv6Addr,
    dst: Ipv6Addr,
    dst_mac: [u8; 6],
    solicited: bool,
) -> [u8; ND_FRAME_LEN] {
    let mut f = [0u8; ND_FRAME_LEN];
    let na = NdRepr::NeighborAdvert {
        router: true,
        solicited,
        override_: true,
        target,
        target_ll: Some(our_mac),
    };
    let at = HEADER_LEN + IPV6_HEADER_LEN;
    let n = na.emit(&mut f[at..], &target, &dst).unwrap_or(0);
    write_headers(&mut f, (dst_mac, our_mac), (target, dst), n, ND_HOP_LIMIT);
    f
}

/// A neighbour solicitation for `target` from `(our_mac, src)` with our
/// source link-layer address option, hop limit 255: to the target's
/// solicited-node group (its multicast MAC), or unicast to `known`
/// (re-probing a stale neighbour, RFC 4861 7.3.3).
pub fn neighbor_solicit(
    our_mac: [u8; 6],
    src: Ipv6Addr,
    target: Ipv6Addr,
    known: Option<[u8; 6]>,
) -> [u8; ND_FRAME_LEN] {
    let mut f = [0u8; ND_FRAME_LEN];
    let (dst, dst_mac) = match known {
        Some(mac) => (target, mac),
        None => {
            let group = solicited_node(target);
            (group, multicast_mac(group))
        }
    };
    let ns = NdRepr::NeighborSolicit {
        target,
        source_ll: Some(our_mac),
    };
    let at = HEADER_LEN + IPV6_HEADER_LEN;
    let n = ns.emit(&mut f[at..], &src, &dst).unwrap_or(0);
    write_headers(&mut f, (dst_mac, our_mac), (src, dst), n, ND_HOP_LIMIT);
    f
}

/// Turn a frame holding an ICMPv6 echo request (IPv6 at 14, the 14 bytes
/// before it the Ethernet header's place) into the echo reply, in place:
/// the message moved up to follow the fixed header (extension headers are
/// not echoed), from `reply_src(dst, src)` (the request's destination when
/// it is ours) back to the request's source, hop limit 64, Ethernet to
/// `peer_mac` from `our_mac`. Returns the reply's frame length (the caller
/// trims to it); `None` for anything but a whole echo request with a good
/// checksum.
pub fn echo_reply_in_place(
    frame: &mut [u8],
    our_mac: [u8; 6],
    peer_mac: [u8; 6],
    reply_src: impl FnOnce(Ipv6Addr, Ipv6Addr) -> Ipv6Addr,
) -> Option<usize> {
    let (ip, span) = icmpv6_span(frame.get(HEADER_LEN..)?)?;
    let msg = &frame[HEADER_LEN + span.start..HEADER_LEN + span.end];
    let p = Icmpv6Packet::new_checked(msg).ok()?;
    let echo = EchoRepr::parse(&p).filter(|e| e.msg_type == icmpv6::kind::ECHO_REQUEST)?;
    if !p.verify_checksum(&ip.src_addr, &ip.dst_addr) {
        return None;
    }
    let (src, dst) = (reply_src(ip.dst_addr, ip.src_addr), ip.src_addr);
    let (from, len) = (HEADER_LEN + span.start, span.len());
    let at = HEADER_LEN + IPV6_HEADER_LEN;
    frame.copy_within(from..from + len, at);
    let reply = EchoRepr {
        msg_type: icmpv6::kind::ECHO_REPLY,
        ..echo
    };
    reply.emit(
        &mut Icmpv6Packet::new_unchecked(&mut frame[at..at + len]),
        &src,
        &dst,
    );
    write_headers(frame, (peer_mac, our_mac), (src, dst), len, OWN_HOP_LIMIT);
    Some(at + len)
}

/// Write the frame of the ICMPv6 error `error` about `original` (the
/// offending packet from its IPv6 header, up to its payload length) into
/// `buf`: Ethernet to `peer_mac` from `our_mac`, IPv6 from `src` to the
/// original source, hop limit 64, at most 1280 bytes of IPv6. Returns the
/// frame length.
pub fn icmpv6_error(
    buf: &mut [u8; ICMP6_ERROR_MAX],
    error: ErrorRepr,
    original: &[u8],
    (our_mac, peer_mac): ([u8; 6], [u8; 6]),
    src: Ipv6Addr,
) -> Option<usize> {
    let dst = Ipv6Packet::new_checked(original).ok()?.src_addr();
    let at = HEADER_LEN + IPV6_HEADER_LEN;
    let n = emit_error(&mut buf[at..], error, original, &src, &dst)?;
    write_headers(
        &mut buf[..],
        (peer_mac, our_mac),
        (src, dst),
        n,
        OWN_HOP_LIMIT,
    );
    Some(at + n)
}

/// Whether an error may be sent about a frame received with destination
/// MAC `dst_mac` (RFC 4443 2.4 (e.2), (e.4)): not about a link-layer
/// multicast or broadcast, packet too big excepted.
pub fn link_layer_allows(error: &ErrorRepr, dst_mac: [u8; 6]) -> bool {
    matches!(error, ErrorRepr::PacketTooBig { .. })
        || !hooks::wire::ethernet::is_multicast(&dst_mac)
}

/// Whether `a` is a solicited-node group (for callers holding an address).
pub fn is_solicited_node(a: Ipv6Addr) -> bool {
    ipv6::is_solicited_node(&a.octets())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use hooks::wire::icmpv6::{kind, nd_option};
    use hooks::wire::ipv6::ALL_NODES;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    const MAC1: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
    const MAC2: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

    /// A Linux kernel's neighbour solicitation for 2001:db8::2 from
    /// 2001:db8::1 (02:00:00:00:00:01) to its solicited-node group, and its
    /// answer from a host (solicited, override), and an echo request to
    /// 2001:db8::2 (captured on a veth pair; the same frames as
    /// hooks::wire::icmpv6's tests).
    const LINUX_NS: [u8; 86] = [
        0x33, 0x33, 0xff, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x60,
        0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0x1c, 0x27, 0x00, 0x00,
        0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x02, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
    ];
    const LINUX_NA: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x86, 0xdd, 0x60,
        0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x00, 0x8a, 0x71, 0x60, 0x00,
        0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x02, 0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
    ];
    pub(crate) const LINUX_ECHO: [u8; 78] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x60,
        0x03, 0x68, 0x39, 0x00, 0x18, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x80, 0x00, 0x13, 0x72, 0x13, 0x87,
        0x00, 0x01, 0x92, 0x50, 0x13, 0x6b, 0x00, 0x00, 0x00, 0x00, 0x52, 0x82, 0x05, 0x00, 0x00,
        0x00, 0x00, 0x00,
    ];
    /// The ICMPv6 part of the kernel's echo reply to it (only type and
    /// checksum differ from the request's).
    const LINUX_ECHO_REPLY_HEADER: [u8; 4] = [0x81, 0x00, 0x12, 0x72];

    /// The ICMPv6 message of a frame verifies with its IPv6 addresses.
    fn checksum_ok(frame: &[u8]) -> bool {
        let (ip, msg) = icmpv6_message(&frame[HEADER_LEN..]).expect("an ICMPv6 frame");
        Icmpv6Packet::new_checked(msg)
            .unwrap()
            .verify_checksum(&ip.src_addr, &ip.dst_addr)
    }

    /// An Ethernet + IPv6 frame carrying `payload` after `next_header`.
    pub(crate) fn frame6(
        (dst_mac, src_mac): ([u8; 6], [u8; 6]),
        (src, dst): (Ipv6Addr, Ipv6Addr),
        next: u8,
        hop_limit: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut f = vec![0u8; HEADER_LEN + IPV6_HEADER_LEN + payload.len()];
        write_headers(
            &mut f,
            (dst_mac, src_mac),
            (src, dst),
            payload.len(),
            hop_limit,
        );
        f[HEADER_LEN + 6] = next;
        f[HEADER_LEN + IPV6_HEADER_LEN..].copy_from_slice(payload);
        f
    }

    /// An ND message (checksum filled) in a frame.
    pub(crate) fn nd_frame(
        macs: ([u8; 6], [u8; 6]),
        (src, dst): (Ipv6Addr, Ipv6Addr),
        hop_limit: u8,
        nd: NdRepr,
    ) -> Vec<u8> {
        let mut msg = vec![0u8; nd.buffer_len()];
        nd.emit(&mut msg, &src, &dst).unwrap();
        frame6(macs, (src, dst), next_header::ICMPV6, hop_limit, &msg)
    }

    #[test]
    fn linux_solicitation_is_read_and_answered_as_linux_with_the_router_flag() {
        let msg = parse_nd(&LINUX_NS[HEADER_LEN..]).unwrap();
        assert_eq!(msg.src, a("2001:db8::1"));
        assert_eq!(msg.dst, a("ff02::1:ff00:2"));
        assert_eq!(
            msg.nd,
            NdRepr::NeighborSolicit {
                target: a("2001:db8::2"),
                source_ll: Some(MAC1),
            }
        );
        let na = neighbor_advert(MAC2, a("2001:db8::2"), msg.src, MAC1, true);
        // Linux's answer from a host is solicited + override (0x60); ours
        // adds the router flag (0xe0), which moves the checksum by 0x8000.
        let mut want = LINUX_NA;
        want[HEADER_LEN + IPV6_HEADER_LEN + 4] = 0xe0;
        want[HEADER_LEN + IPV6_HEADER_LEN + 2..][..2].copy_from_slice(&[0x0a, 0x71]);
        assert_eq!(na, want);
        assert!(checksum_ok(&na));
        let back = parse_nd(&na[HEADER_LEN..]).unwrap();
        assert_eq!(
            back.nd,
            NdRepr::NeighborAdvert {
                router: true,
                solicited: true,
                override_: true,
                target: a("2001:db8::2"),
                target_ll: Some(MAC2),
            }
        );
    }

    #[test]
    fn our_solicitation_is_linux_s_byte_for_byte() {
        let ns = neighbor_solicit(MAC1, a("2001:db8::1"), a("2001:db8::2"), None);
        assert_eq!(ns, LINUX_NS);
    }

    #[test]
    fn a_unicast_probe_goes_to_the_known_mac_and_the_target() {
        let ns = neighbor_solicit(MAC1, a("fe80::1"), a("fe80::2"), Some(MAC2));
        assert_eq!(&ns[..6], &MAC2);
        assert_eq!(&ns[6..12], &MAC1);
        let msg = parse_nd(&ns[HEADER_LEN..]).unwrap();
        assert_eq!((msg.src, msg.dst), (a("fe80::1"), a("fe80::2")));
        assert_eq!(ns[HEADER_LEN + 7], 255, "hop limit");
        assert!(checksum_ok(&ns));
    }

    #[test]
    fn duplicate_address_detection_is_answered_to_all_nodes_not_solicited() {
        let na = neighbor_advert(
            MAC2,
            a("2001:db8::2"),
            ALL_NODES,
            multicast_mac(ALL_NODES),
            false,
        );
        assert_eq!(&na[..6], &[0x33, 0x33, 0, 0, 0, 1]);
        let msg = parse_nd(&na[HEADER_LEN..]).unwrap();
        assert_eq!((msg.src, msg.dst), (a("2001:db8::2"), ALL_NODES));
        assert_eq!(
            na[HEADER_LEN + IPV6_HEADER_LEN + 4],
            0xa0,
            "router, override"
        );
        assert!(checksum_ok(&na));
    }

    #[test]
    fn each_refusal_has_its_reason() {
        let ns = |src, dst, ll| {
            NdRepr::NeighborSolicit {
                target: a("2001:db8::2"),
                source_ll: ll,
            }
            .emit(&mut [0u8; 32], &src, &dst)
            .map(|_| (src, dst, ll))
            .unwrap()
        };
        let build = |(src, dst, ll): (Ipv6Addr, Ipv6Addr, Option<[u8; 6]>), hop| {
            let nd = NdRepr::NeighborSolicit {
                target: a("2001:db8::2"),
                source_ll: ll,
            };
            nd_frame((MAC2, MAC1), (src, dst), hop, nd)
        };
        let sn = a("ff02::1:ff00:2");
        let good = build(ns(a("2001:db8::1"), sn, Some(MAC1)), 255);
        assert!(parse_nd(&good[HEADER_LEN..]).is_ok());
        let refused = |f: &[u8]| parse_nd(&f[HEADER_LEN..]).err();
        // Hop limit is not in the checksum: only check_ip sees it.
        let hop = build(ns(a("2001:db8::1"), sn, Some(MAC1)), 254);
        assert_eq!(refused(&hop), Some(DropReason::NdHopLimitNot255));
        let mut bad = good.clone();
        bad[HEADER_LEN + IPV6_HEADER_LEN + 10] ^= 1;
        assert_eq!(refused(&bad), Some(DropReason::NdBadChecksum));
        let dad_ll = build(ns(Ipv6Addr::UNSPECIFIED, sn, Some(MAC1)), 255);
        assert_eq!(refused(&dad_ll), Some(DropReason::NdDadWithSourceLlAddr));
        let dad_all = build(ns(Ipv6Addr::UNSPECIFIED, ALL_NODES, None), 255);
        assert_eq!(refused(&dad_all), Some(DropReason::NdDadNotToSolicitedNode));
        let dad = build(ns(Ipv6Addr::UNSPECIFIED, sn, None), 255);
        assert!(parse_nd(&dad[HEADER_LEN..]).is_ok());
        let solicited_to_all = nd_frame(
            (MAC2, MAC1),
            (a("2001:db8::1"), ALL_NODES),
            255,
            NdRepr::NeighborAdvert {
                router: false,
                solicited: true,
                override_: true,
                target: a("2001:db8::1"),
                target_ll: Some(MAC1),
            },
        );
        assert_eq!(
            refused(&solicited_to_all),
            Some(DropReason::NdSolicitedAdvertToMulticast)
        );
        // A zero-length option, in a message whose checksum is right.
        let mut msg = vec![0u8; 32];
        msg[0] = kind::NEIGHBOR_SOLICIT;
        msg[8..24].copy_from_slice(&a("2001:db8::2").octets());
        msg[24] = nd_option::SOURCE_LL_ADDR;
        let (src, dst) = (a("2001:db8::1"), sn);
        Icmpv6Packet::new_unchecked(&mut msg[..]).fill_checksum(&src, &dst);
        let zero = frame6((MAC2, MAC1), (src, dst), next_header::ICMPV6, 255, &msg);
        assert_eq!(refused(&zero), Some(DropReason::NdZeroLengthOption));
        // Cut short by the frame: the payload length claims more.
        assert_eq!(
            refused(&good[..good.len() - 4]),
            Some(DropReason::NdTruncated)
        );
        // Not ICMPv6.
        let udp = frame6((MAC2, MAC1), (src, dst), 17, 255, &[0; 8]);
        assert_eq!(refused(&udp), Some(DropReason::NdTruncated));
        // An echo request punted as ND.
        assert_eq!(refused(&LINUX_ECHO), Some(DropReason::NdNotNeighborMessage));
    }

    #[test]
    fn echo_reply_to_linux_s_request_is_linux_s_reply() {
        let mut f = LINUX_ECHO;
        let n = echo_reply_in_place(&mut f, MAC2, MAC1, |dst, _| dst).unwrap();
        assert_eq!(n, LINUX_ECHO.len());
        assert_eq!(&f[..6], &MAC1);
        assert_eq!(&f[6..12], &MAC2);
        let at = HEADER_LEN + IPV6_HEADER_LEN;
        assert_eq!(&f[at..at + 4], &LINUX_ECHO_REPLY_HEADER);
        assert_eq!(
            &f[at + 4..],
            &LINUX_ECHO[at + 4..],
            "identifier, sequence, data"
        );
        let ip = Ipv6Packet::new_checked(&f[HEADER_LEN..]).unwrap();
        assert_eq!(ip.src_addr(), a("2001:db8::2"));
        assert_eq!(ip.dst_addr(), a("2001:db8::1"));
        assert_eq!(ip.hop_limit(), OWN_HOP_LIMIT);
        assert!(checksum_ok(&f));
    }

    #[test]
    fn echo_reply_leaves_extension_headers_out_and_refuses_non_requests() {
        // A Destination Options header (PadN) before the echo request.
        let echo = &LINUX_ECHO[HEADER_LEN + IPV6_HEADER_LEN..];
        let mut payload = vec![next_header::ICMPV6, 0, 1, 4, 0, 0, 0, 0];
        payload.extend_from_slice(echo);
        let (src, dst) = (a("2001:db8::1"), a("2001:db8::2"));
        let mut f = frame6((MAC2, MAC1), (src, dst), 60, 64, &payload);
        let chosen = |_, _| a("2001:db8::99");
        let n = echo_reply_in_place(&mut f, MAC2, MAC1, chosen).unwrap();
        assert_eq!(n, LINUX_ECHO.len());
        let ip = Ipv6Packet::new_checked(&f[HEADER_LEN..n]).unwrap();
        assert_eq!(ip.next_header(), next_header::ICMPV6);
        assert_eq!(ip.src_addr(), a("2001:db8::99"));
        assert!(checksum_ok(&f[..n]));
        assert_eq!(f[HEADER_LEN + IPV6_HEADER_LEN], kind::ECHO_REPLY);
        // A reply, a bad checksum, a cut message: no answer.
        let mut reply = f[..n].to_vec();
        assert_eq!(echo_reply_in_place(&mut reply, MAC2, MAC1, |d, _| d), None);
        let mut bad = LINUX_ECHO;
        bad[70] ^= 1;
        assert_eq!(echo_reply_in_place(&mut bad, MAC2, MAC1, |d, _| d), None);
        let mut cut = LINUX_ECHO[..70].to_vec();
        assert_eq!(echo_reply_in_place(&mut cut, MAC2, MAC1, |d, _| d), None);
    }

    #[test]
    fn errors_are_at_most_1280_bytes_of_ipv6_from_the_chosen_source() {
        let (src, dst) = (a("2001:db8:1::2"), a("2001:db8:100::9"));
        let big = frame6((MAC2, MAC1), (src, dst), 17, 1, &[0x5a; 1400]);
        let original = &big[HEADER_LEN..];
        let mut buf = [0u8; ICMP6_ERROR_MAX];
        let error = ErrorRepr::TimeExceeded(0);
        let ours = a("2001:db8:1::1");
        let n = icmpv6_error(&mut buf, error, original, (MAC2, MAC1), ours).unwrap();
        assert_eq!(n, HEADER_LEN + 1280);
        let f = &buf[..n];
        assert_eq!(&f[..6], &MAC1);
        assert_eq!(&f[6..12], &MAC2);
        let ip = Ipv6Packet::new_checked(&f[HEADER_LEN..]).unwrap();
        assert_eq!((ip.src_addr(), ip.dst_addr()), (ours, src));
        assert_eq!(ip.hop_limit(), OWN_HOP_LIMIT);
        assert_eq!(usize::from(ip.payload_len()), 1240);
        let at = HEADER_LEN + IPV6_HEADER_LEN;
        assert_eq!(&f[at..at + 2], &[kind::TIME_EXCEEDED, 0]);
        assert_eq!(&f[at + 8..], &original[..1232], "the quote");
        assert!(checksum_ok(f));
        // Packet too big carries the MTU; a small packet is quoted whole.
        let small = frame6((MAC2, MAC1), (src, dst), 17, 64, &[1; 20]);
        let ptb = ErrorRepr::PacketTooBig { mtu: 1400 };
        let n = icmpv6_error(&mut buf, ptb, &small[HEADER_LEN..], (MAC2, MAC1), ours).unwrap();
        assert_eq!(n, at + 8 + 60);
        assert_eq!(
            &buf[at..at + 8],
            &[2, 0, buf[at + 2], buf[at + 3], 0, 0, 0x05, 0x78]
        );
        assert!(checksum_ok(&buf[..n]));
        // Not about a frame to a multicast MAC, packet too big excepted.
        let group = multicast_mac(ALL_NODES);
        assert!(!link_layer_allows(&error, group));
        assert!(!link_layer_allows(&error, [0xff; 6]));
        assert!(link_layer_allows(&ptb, group));
        assert!(link_layer_allows(&error, MAC2));
    }

    #[test]
    fn any_bytes_are_read_without_panic() {
        // Linux's frames with bytes changed and cut anywhere: every reader
        // answers (refuses, most of the time) and never reads past the end.
        let mut rng = fastrand::Rng::with_seed(0x6e64_3666);
        let seeds: [&[u8]; 3] = [&LINUX_NS, &LINUX_NA, &LINUX_ECHO];
        for round in 0..20_000 {
            let mut f = seeds[round % 3].to_vec();
            for _ in 0..rng.usize(0..4) {
                let at = rng.usize(0..f.len());
                f[at] = rng.u8(..);
            }
            f.truncate(rng.usize(0..=f.len()));
            let _ = parse_nd(f.get(HEADER_LEN..).unwrap_or(&[]));
            let len = f.len();
            if let Some(n) = echo_reply_in_place(&mut f, MAC2, MAC1, |d, _| d) {
                assert!(n <= len);
                assert!(checksum_ok(&f[..n]));
            }
            let mut buf = [0u8; ICMP6_ERROR_MAX];
            let original = f.get(HEADER_LEN..).unwrap_or(&[]);
            if let Some(n) = icmpv6_error(
                &mut buf,
                ErrorRepr::TimeExceeded(0),
                original,
                (MAC1, MAC2),
                a("fe80::1"),
            ) {
                assert!(n <= ICMP6_ERROR_MAX);
            }
        }
    }
}
