//! Arbitrary bytes through the IPv6 readers: the fixed header's view and
//! Repr, the extension-header walker, and the ICMPv6, echo, error and
//! neighbour discovery readers and emitters. Every check is an assertion:
//! - the walker's upper layer starts within the payload, after any Fragment
//!   header, and its answer depends only on the bytes before it (the chain
//!   cut there, or changed after it, gives the same answer);
//! - a Repr or neighbour message that parses is emitted and parses the
//!   same; emitted messages verify;
//! - an error about any packet is at most 1280 bytes with its IPv6 header.
//!
//! Input: byte 0 is the first Next Header of a bare chain (the rest is the
//! chain); the whole input is also read as an IPv6 packet.

#![no_main]

use hooks::wire::icmpv6::{
    self, emit_echo_reply, emit_error, error_allowed, EchoRepr, ErrorRepr, Icmpv6Packet, NdRepr,
};
use hooks::wire::ipv6::{walk_extension_headers, Ipv6Packet, Ipv6Repr, MAX_EXTENSION_HEADERS};
use libfuzzer_sys::fuzz_target;
use std::net::Ipv6Addr;

fn check_walk(first: u8, p: &[u8]) {
    let Ok(u) = walk_extension_headers(first, p) else {
        return;
    };
    assert!(u.offset <= p.len(), "{u:?} {p:02x?}");
    assert!(usize::from(u.headers) <= MAX_EXTENSION_HEADERS);
    if let Some(f) = u.fragment {
        assert!(f.at + 8 <= u.offset);
    }
    if !u.fragment.is_some_and(|f| f.offset == 0 && f.more) {
        assert_eq!(walk_extension_headers(first, &p[..u.offset]), Ok(u));
    }
    let mut changed = p.to_vec();
    for b in &mut changed[u.offset..] {
        *b = !*b;
    }
    assert_eq!(walk_extension_headers(first, &changed), Ok(u));
}

fn check_icmpv6(msg: &[u8], s: &Ipv6Addr, d: &Ipv6Addr, hop_limit: u8) {
    let Ok(p) = Icmpv6Packet::new_checked(msg) else {
        return;
    };
    let _ = (p.msg_type(), p.code(), p.checksum(), p.word(), p.body());
    let _ = (
        p.verify_checksum(s, d),
        EchoRepr::parse(&p),
        ErrorRepr::parse(&p),
    );
    if let Ok(nd) = NdRepr::parse(&p) {
        let _ = nd.check_ip(s, d, hop_limit);
        let mut out = [0u8; 32];
        let n = nd.emit(&mut out, s, d).expect("32 bytes hold any NS or NA");
        let again = Icmpv6Packet::new_checked(&out[..n]).unwrap();
        assert!(again.verify_checksum(s, d));
        assert_eq!(NdRepr::parse(&again), Ok(nd));
    }
    let mut reply = vec![0u8; msg.len()];
    if let Some(n) = emit_echo_reply(&mut reply, msg, d, s) {
        assert!(Icmpv6Packet::new_checked(&reply[..n])
            .unwrap()
            .verify_checksum(d, s));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some((&first, chain)) = data.split_first() {
        check_walk(first, chain);
        check_icmpv6(chain, &Ipv6Addr::LOCALHOST, &Ipv6Addr::UNSPECIFIED, first);
    }
    let Ok(ip) = Ipv6Packet::new_checked(data) else {
        return;
    };
    let _ = (
        ip.version(),
        ip.traffic_class(),
        ip.flow_label(),
        ip.hop_limit(),
    );
    let (s, d) = (ip.src_addr(), ip.dst_addr());
    check_walk(ip.next_header(), ip.payload());
    if let Ok(repr) = Ipv6Repr::parse(&ip) {
        let mut out = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]));
        assert_eq!(
            Ipv6Repr::parse(&Ipv6Packet::new_checked(&out[..]).unwrap()),
            Ok(repr)
        );
    }
    if let Ok(u) = ip.upper_layer() {
        assert!(u.offset >= 40 && u.offset <= 40 + ip.payload().len());
        check_icmpv6(
            &data[u.offset..40 + ip.payload().len()],
            &s,
            &d,
            ip.hop_limit(),
        );
    }
    let mut out = vec![0u8; 1300];
    for e in [
        ErrorRepr::TimeExceeded(0),
        ErrorRepr::PacketTooBig { mtu: 1280 },
        ErrorRepr::ParamProblem {
            code: 2,
            pointer: 40,
        },
    ] {
        let _ = error_allowed(&e, data);
        if let Some(n) = emit_error(&mut out, e, data, &d, &s) {
            assert!(40 + n <= 1280);
            assert_eq!(n, icmpv6::error_message_len(data));
            assert!(Icmpv6Packet::new_checked(&out[..n])
                .unwrap()
                .verify_checksum(&d, &s));
        }
    }
});
