//! The control plane's IPv6 frames on arbitrary input: neighbour discovery
//! as `nd_input` reads it (`parse_nd`: RFC 4861's checks), the answers it
//! builds from what passed (an advertisement for a solicitation's target,
//! a solicitation for an advertisement's), echo replies in place and
//! ICMPv6 errors about whatever bytes came in. Nothing may panic, and
//! every frame out must be whole: lengths, addresses, hop limits, a
//! checksum that verifies, an error within 1280 bytes of IPv6 quoting the
//! packet's start.

#![no_main]

use arbitrary::Arbitrary;
use fastpath::router::control::frames6::{
    echo_reply_in_place, icmpv6_error, icmpv6_message, neighbor_advert, neighbor_solicit,
    parse_nd, ICMP6_ERROR_MAX, ND_FRAME_LEN, OWN_HOP_LIMIT,
};
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::icmpv6::{self, ErrorRepr, Icmpv6Packet, NdRepr};
use hooks::wire::ipv6::{Ipv6Packet, HEADER_LEN as IPV6_HEADER_LEN, MIN_MTU};
use libfuzzer_sys::fuzz_target;
use std::net::Ipv6Addr;

#[derive(Arbitrary, Debug)]
struct Input {
    our_mac: [u8; 6],
    peer_mac: [u8; 6],
    ours: [u8; 16],
    error: u8,
    word: u32,
    /// Fill in the ICMPv6 checksum of what the frame holds, so that the
    /// checks past it are reached.
    fix: bool,
    frame: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let Input {
        our_mac,
        peer_mac,
        ours,
        error,
        word,
        fix,
        mut frame,
    } = input;
    if frame.len() > 2048 {
        return;
    }
    if fix {
        fix_checksum(&mut frame);
    }
    let ours = Ipv6Addr::from(ours);
    let l3 = frame.get(HEADER_LEN..).unwrap_or(&[]);
    if let Ok(msg) = parse_nd(l3) {
        // What passed is whole and what we answer with is valid.
        let (ip, _) = icmpv6_message(l3).expect("parse_nd read an ICMPv6 message");
        assert_eq!(ip.hop_limit, 255);
        match msg.nd {
            NdRepr::NeighborSolicit { target, source_ll } => {
                assert!(!msg.src.is_unspecified() || source_ll.is_none());
                let na = neighbor_advert(our_mac, target, msg.src, peer_mac, true);
                check_nd(&na, target, msg.src);
            }
            NdRepr::NeighborAdvert { target, .. } => {
                let ns = neighbor_solicit(our_mac, ours, target, None);
                check_nd(&ns, ours, hooks::wire::ipv6::solicited_node(target));
            }
        }
    }
    let before = frame.clone();
    if let Some(n) = echo_reply_in_place(&mut frame, our_mac, peer_mac, |d, _| d) {
        assert!(n <= before.len());
        let reply = &frame[..n];
        let (ip, msg) = icmpv6_message(&reply[HEADER_LEN..]).expect("a reply");
        let q = Ipv6Packet::new_checked(&before[HEADER_LEN..]).unwrap();
        assert_eq!((ip.src_addr, ip.dst_addr), (q.dst_addr(), q.src_addr()));
        assert_eq!(ip.hop_limit, OWN_HOP_LIMIT);
        assert_eq!(IPV6_HEADER_LEN + ip.payload_len, n - HEADER_LEN);
        assert_eq!(msg[0], icmpv6::kind::ECHO_REPLY);
        assert!(Icmpv6Packet::new_checked(msg)
            .unwrap()
            .verify_checksum(&ip.src_addr, &ip.dst_addr));
        assert_eq!((&reply[..6], &reply[6..12]), (&peer_mac[..], &our_mac[..]));
    }
    let original = before.get(HEADER_LEN..).unwrap_or(&[]);
    let err = match error % 4 {
        0 => ErrorRepr::TimeExceeded(0),
        1 => ErrorRepr::DestUnreachable((word % 5) as u8),
        2 => ErrorRepr::PacketTooBig { mtu: word },
        _ => ErrorRepr::ParamProblem {
            code: (word % 4) as u8,
            pointer: word,
        },
    };
    let mut buf = [0u8; ICMP6_ERROR_MAX];
    if let Some(n) = icmpv6_error(&mut buf, err, original, (our_mac, peer_mac), ours) {
        assert!(n <= HEADER_LEN + MIN_MTU);
        let (ip, msg) = icmpv6_message(&buf[HEADER_LEN..n]).expect("an error");
        let q = Ipv6Packet::new_checked(original).unwrap();
        assert_eq!((ip.src_addr, ip.dst_addr), (ours, q.src_addr()));
        assert_eq!(IPV6_HEADER_LEN + ip.payload_len, n - HEADER_LEN);
        let p = Icmpv6Packet::new_checked(msg).unwrap();
        assert!(p.verify_checksum(&ip.src_addr, &ip.dst_addr));
        assert_eq!(ErrorRepr::parse(&p), Some(err));
        let quoted = &msg[icmpv6::HEADER_LEN..];
        assert_eq!(quoted, &original[..quoted.len()]);
    }
});

/// An advertisement or solicitation we built: 86 bytes, hop limit 255,
/// from `src` to `dst`, a checksum that verifies, and it parses again.
fn check_nd(f: &[u8; ND_FRAME_LEN], src: Ipv6Addr, dst: Ipv6Addr) {
    let (ip, msg) = icmpv6_message(&f[HEADER_LEN..]).expect("ND");
    assert_eq!((ip.src_addr, ip.dst_addr, ip.hop_limit), (src, dst, 255));
    let p = Icmpv6Packet::new_checked(msg).unwrap();
    assert!(p.verify_checksum(&src, &dst));
    assert!(NdRepr::parse(&p).is_ok());
}

/// The ICMPv6 checksum of the message the frame holds, if it holds one.
fn fix_checksum(frame: &mut [u8]) {
    let Some(l3) = frame.get(HEADER_LEN..) else {
        return;
    };
    let Some((ip, msg)) = icmpv6_message(l3) else {
        return;
    };
    let at = HEADER_LEN + (msg.as_ptr() as usize - l3.as_ptr() as usize);
    let len = msg.len();
    if len >= icmpv6::HEADER_LEN {
        let m = &mut frame[at..at + len];
        Icmpv6Packet::new_unchecked(m).fill_checksum(&ip.src_addr, &ip.dst_addr);
    }
}
