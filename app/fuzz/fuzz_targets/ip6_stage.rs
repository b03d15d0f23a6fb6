//! ip6_input's checks on arbitrary frames at any L3 offset: `ipv6_input`
//! accepts only version 6 with its payload inside the frame, a source
//! that is not multicast, no loopback or IPv4-mapped address, and reports
//! the header's own hop limit and length; `plain_ipv6` takes only what
//! `ipv6_input` takes, with the same fields and header; the delivery to us
//! (`to_us`) classifies any accepted packet without a panic; and a packet
//! `forward_verdict` lets through comes out as the datapath writes it
//! (padding cut, the bytes before byte 14 of the header taken off as
//! `reshape` does, `hop_limit_down`): the input with the hop limit one
//! less and nothing else changed.

#![no_main]

use arbitrary::Arbitrary;
use fastpath::datapath::ip6_input::header::{ipv6_input, plain_ipv6, Ip6Fields};
use fastpath::datapath::ip6_input::local::{to_link, to_us};
use fastpath::datapath::ip6_input::route::{forward_verdict, hop_limit_down};
use fastpath::fib::HopKind;
use fastpath::fib6::NextHop6;
use hooks::testkit;
use hooks::wire::ethernet::{ethertype, HEADER_LEN};
use hooks::wire::ipv6::{self, field, HEADER_LEN as IP6_LEN};
use hooks::{PacketMeta, PacketType};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    /// The L3 offset: 14, 18 or 22 (l2's), or any.
    l3: u8,
    any_l3: bool,
    /// Our address (else a group of ours), for `to_us`.
    unicast: bool,
    packet_type: u8,
    hop_port: u16,
    in_port: u16,
    mtu: u16,
    /// Start from a plain UDP datagram (2001:db8:1::7 to 2001:db8:2::9,
    /// hop limit 64) with the bytes below as its payload, then make these
    /// edits (position, value), then add this much padding; else the bytes
    /// below are the frame.
    template: Option<(Vec<(u8, u8)>, u8)>,
    frame: Vec<u8>,
}

/// Ethernet + IPv6 (UDP, hop limit 64) + `payload`.
fn plain_frame(payload: &[u8]) -> Vec<u8> {
    let src: [u8; 16] = "2001:db8:1::7"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let dst: [u8; 16] = "2001:db8:2::9"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    ip.extend_from_slice(&[17, 64]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    ip.extend_from_slice(payload);
    testkit::ethernet([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], ethertype::IPV6, &ip)
}

fuzz_target!(|input: Input| {
    let Input {
        l3,
        any_l3,
        unicast,
        packet_type,
        hop_port,
        in_port,
        mtu,
        template,
        mut frame,
    } = input;
    // An mbuf segment holds at most 65535 bytes; a few KB cover every rule.
    if frame.len() > 4096 {
        return;
    }
    if let Some((edits, pad)) = template {
        frame = plain_frame(&frame);
        for (at, b) in edits.into_iter().take(4) {
            if let Some(x) = frame.get_mut(usize::from(at)) {
                *x = b;
            }
        }
        frame.resize(frame.len() + usize::from(pad % 64), 0);
    }
    let l3 = if any_l3 {
        usize::from(l3)
    } else {
        HEADER_LEN + 4 * usize::from(l3 % 3)
    };
    let Some(fields) = check_header(&frame, l3) else {
        return;
    };
    check_plain(&frame, l3, &fields);
    // The delivery to us: the packet without padding.
    let ip = &frame[l3..usize::from(fields.trimmed_len)];
    let src: [u8; 16] = ip[field::SRC..field::SRC + 16].try_into().unwrap();
    let unspecified = ipv6::is_unspecified(&src);
    for kernel in [false, true] {
        let _ = to_us(ip, unicast, unspecified, kernel);
        let _ = to_link(ip, unspecified, kernel);
    }
    let mut meta = PacketMeta::received_on(in_port);
    meta.l3_offset = l3 as u16;
    meta.packet_type = match packet_type % 4 {
        0 => PacketType::Host,
        1 => PacketType::Broadcast,
        2 => PacketType::Multicast,
        _ => PacketType::OtherHost,
    };
    let hop = NextHop6 {
        kind: HopKind::Forward,
        port: hop_port,
        gateway: None,
        neigh: 0,
        mtu,
    };
    let classes = (
        ipv6::is_unspecified(&src),
        ipv6::is_link_local_unicast(&src),
    );
    if forward_verdict(&mut meta, &fields, &hop, classes, in_port).is_ok() {
        check_forward(&frame, l3, &fields, mtu);
    }
});

/// `ipv6_input` at `l3`: an accepted header is version 6 from a source
/// neither multicast, loopback nor IPv4-mapped, its payload inside the
/// frame; the fields are its bytes. Returns them.
fn check_header(frame: &[u8], l3: usize) -> Option<Ip6Fields> {
    let r = ipv6_input(frame, l3);
    if frame.len() < l3 + IP6_LEN {
        assert!(r.is_err(), "a header past the frame's end");
    }
    let (f, h) = r.ok()?;
    assert_eq!(h[..], frame[l3..l3 + IP6_LEN]);
    assert_eq!(h[0] >> 4, 6);
    let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
    assert_eq!(usize::from(f.trimmed_len), l3 + IP6_LEN + payload);
    assert!(usize::from(f.trimmed_len) <= frame.len());
    assert_eq!(f.hop_limit, h[field::HOP_LIMIT]);
    assert!(!f.plain);
    let (src, dst): (&[u8; 16], &[u8; 16]) = (
        h[field::SRC..][..16].try_into().unwrap(),
        h[field::DST..][..16].try_into().unwrap(),
    );
    assert!(!ipv6::is_multicast(src));
    for a in [src, dst] {
        assert!(!ipv6::is_loopback(a) && !ipv6::is_ipv4_mapped(a), "{a:?}");
    }
    Some(f)
}

/// `plain_ipv6` takes a subset of what `ipv6_input` takes: global unicast
/// on both sides, no padding, the same fields but `plain`.
fn check_plain(frame: &[u8], l3: usize, full: &Ip6Fields) {
    let Some((f, h)) = plain_ipv6(frame, l3) else {
        return;
    };
    assert_eq!(h[..], frame[l3..l3 + IP6_LEN]);
    assert!(f.plain);
    assert_eq!(
        (f.trimmed_len, f.hop_limit),
        (full.trimmed_len, full.hop_limit)
    );
    assert_eq!(usize::from(f.trimmed_len), frame.len(), "no padding");
    for at in [field::SRC, field::DST] {
        assert_eq!(h[at] >> 5, 1, "2000::/3");
    }
}

/// What a forward writes: the frame from byte `l3 - 14` (the tag off) to
/// the end of the payload (the padding off), its hop limit one less and
/// above zero, within the MTU; every other byte the input's.
fn check_forward(frame: &[u8], l3: usize, f: &Ip6Fields, mtu: u16) {
    assert!(f.hop_limit > 1);
    let end = usize::from(f.trimmed_len);
    assert!(end - l3 <= usize::from(mtu));
    // `reshape` on a frame whose header sits before byte 14 fails (the
    // datapath drops it by name): l2 never gives such an offset.
    let Some(start) = l3.checked_sub(HEADER_LEN) else {
        return;
    };
    let mut out = frame[start..end].to_vec();
    assert!(hop_limit_down(&mut out, f));
    let hop = HEADER_LEN + field::HOP_LIMIT;
    assert_eq!(out[hop], frame[l3 + field::HOP_LIMIT] - 1);
    assert_eq!(out.len(), end - start);
    for (i, (a, b)) in out.iter().zip(&frame[start..end]).enumerate() {
        if i != hop {
            assert_eq!(a, b, "byte {i}");
        }
    }
}
