//! Arbitrary bytes never panic the IPv6 readers, and the extension-header
//! walker reads nothing past where it says the headers end.
//!
//! Inputs are chains of extension headers built from the RFC 8200 formats
//! (Hop-by-Hop, Routing, Destination Options, Fragment, AH, ESP, No Next
//! Header, an upper layer) with random lengths, then byte mutations and
//! truncations; and plain random bytes. Properties:
//! - the walker never panics; on success the upper layer starts within the
//!   slice, the Fragment header (if any) lies before it, and no more than
//!   `MAX_EXTENSION_HEADERS` were walked;
//! - its answer depends only on the bytes before that offset: the slice
//!   cut there, any change after it, or a longer slice give the same answer;
//! - every IPv6, ICMPv6 and neighbour discovery reader takes any bytes; an
//!   error emitted about any packet stays within 1280 bytes and verifies;
//!   a neighbour message that parses is emitted again and parses the same.
//!
//! `PROPTEST_CASES` overrides the number of cases.

use hooks::wire::icmpv6::{self, emit_error, error_allowed, ErrorRepr, Icmpv6Packet, NdRepr};
use hooks::wire::ipv6::{
    next_header::*, walk_extension_headers, Ipv6Packet, Ipv6Repr, UpperLayer,
    MAX_EXTENSION_HEADERS, MIN_MTU,
};
use proptest::collection::vec;
use proptest::prelude::*;
use std::net::Ipv6Addr;

fn config(cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = cases;
    }
    c.failure_persistence = None;
    c
}

/// One header of a chain: its Next Header value and how long it claims to be.
fn header() -> impl Strategy<Value = (u8, u8)> {
    (
        prop_oneof![
            Just(HOP_BY_HOP),
            Just(ROUTING),
            Just(DESTINATION_OPTIONS),
            Just(FRAGMENT),
            Just(AH),
            Just(ESP),
            Just(NO_NEXT_HEADER),
            Just(MOBILITY),
            Just(TCP),
            Just(UDP),
            Just(ICMPV6),
            any::<u8>(),
        ],
        0u8..4,
    )
}

/// A chain of headers laid out in their formats (the length byte each
/// declares, Fragment offsets 0 or not, more or not), as (first, payload).
fn chain() -> impl Strategy<Value = (u8, Vec<u8>)> {
    (vec(header(), 0..12), vec(any::<u8>(), 0..64), any::<u16>()).prop_map(
        |(headers, tail, frag_word)| {
            let first = headers.first().map_or(UDP, |h| h.0);
            let mut p = Vec::new();
            for (i, &(kind, len)) in headers.iter().enumerate() {
                let next = headers.get(i + 1).map_or(UDP, |h| h.0);
                let size = match kind {
                    FRAGMENT => 8,
                    AH => (usize::from(len) + 2) * 4,
                    _ => (usize::from(len) + 1) * 8,
                };
                let at = p.len();
                p.resize(at + size, 0x5a);
                p[at] = next;
                p[at + 1] = len;
                if kind == FRAGMENT {
                    let w = if i % 2 == 0 { frag_word & 1 } else { frag_word };
                    p[at + 2..at + 4].copy_from_slice(&w.to_be_bytes());
                }
            }
            p.extend(tail);
            (first, p)
        },
    )
}

/// A chain with some bytes changed and maybe cut short.
fn mutated_chain() -> impl Strategy<Value = (u8, Vec<u8>)> {
    (
        chain(),
        vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|((first, mut p), flips, cut, do_cut)| {
            if !p.is_empty() {
                for (at, v) in flips {
                    let i = at.index(p.len());
                    p[i] = v;
                }
                if do_cut {
                    p.truncate(cut.index(p.len() + 1));
                }
            }
            (first, p)
        })
}

fn any_chain() -> impl Strategy<Value = (u8, Vec<u8>)> {
    prop_oneof![
        3 => mutated_chain(),
        1 => (any::<u8>(), vec(any::<u8>(), 0..200)),
    ]
}

fn check_walk(first: u8, p: &[u8]) -> Result<(), TestCaseError> {
    let Ok(u) = walk_extension_headers(first, p) else {
        return Ok(());
    };
    let UpperLayer {
        offset,
        headers,
        fragment,
        ..
    } = u;
    prop_assert!(offset <= p.len(), "{u:?} past {} bytes", p.len());
    prop_assert!(usize::from(headers) <= MAX_EXTENSION_HEADERS);
    prop_assert_eq!(headers == 0, offset == 0);
    if let Some(f) = fragment {
        prop_assert!(f.at + 8 <= offset, "{:?}", u);
    }
    // The chain alone, cut right after it, gives the same answer; a first
    // fragment with more to come needs its upper-layer header too.
    if !fragment.is_some_and(|f| f.offset == 0 && f.more) {
        prop_assert_eq!(walk_extension_headers(first, &p[..offset]), Ok(u));
    }
    // Nothing at or after `offset` was looked at: change it all, or add
    // more, and the answer stays.
    let mut changed = p.to_vec();
    for b in &mut changed[offset..] {
        *b = !*b;
    }
    prop_assert_eq!(walk_extension_headers(first, &changed), Ok(u));
    changed.extend([0xff; 16]);
    // A longer slice can only change the answer of a first fragment whose
    // upper-layer header had to fit: it still does.
    prop_assert_eq!(walk_extension_headers(first, &changed), Ok(u));
    Ok(())
}

fn addr(bytes: &[u8]) -> Ipv6Addr {
    let mut o = [0u8; 16];
    for (d, s) in o.iter_mut().zip(bytes) {
        *d = *s;
    }
    Ipv6Addr::from(o)
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn the_walker_never_panics_nor_reads_past_the_chain((first, p) in any_chain()) {
        check_walk(first, &p)?;
    }

    /// A packet: an IPv6 header whose next header and payload length fit
    /// the chain (or not), then the chain.
    #[test]
    fn every_ipv6_reader_takes_any_packet(
        (first, chain) in any_chain(),
        header in vec(any::<u8>(), 40),
        fix in any::<bool>(),
        hop_limit in any::<u8>(),
    ) {
        let mut buf = header.clone();
        if fix {
            buf[0] = 0x60 | (buf[0] & 0x0f);
            buf[4..6].copy_from_slice(&(chain.len() as u16).to_be_bytes());
            buf[6] = first;
        }
        buf.extend_from_slice(&chain);
        let ip = Ipv6Packet::new_checked(&buf[..]).unwrap();
        let _ = (ip.version(), ip.traffic_class(), ip.flow_label(), ip.hop_limit());
        let _ = (ip.src_addr(), ip.dst_addr(), ip.payload().len());
        if let Ok(repr) = Ipv6Repr::parse(&ip) {
            let mut out = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]));
            prop_assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&out[..]).unwrap()), Ok(repr));
        }
        if let Ok(u) = ip.upper_layer() {
            prop_assert!(u.offset >= 40 && u.offset <= 40 + ip.payload().len());
            // The message at the upper layer, through every ICMPv6 reader.
            let msg = &buf[u.offset..40 + ip.payload().len()];
            if let Ok(p) = Icmpv6Packet::new_checked(msg) {
                let (s, d) = (ip.src_addr(), ip.dst_addr());
                let _ = (p.verify_checksum(&s, &d), icmpv6::EchoRepr::parse(&p), ErrorRepr::parse(&p));
                if let Ok(nd) = NdRepr::parse(&p) {
                    let _ = nd.check_ip(&s, &d, hop_limit);
                    let mut out = [0u8; 32];
                    let n = nd.emit(&mut out, &s, &d).unwrap();
                    let again = Icmpv6Packet::new_checked(&out[..n]).unwrap();
                    prop_assert!(again.verify_checksum(&s, &d));
                    prop_assert_eq!(NdRepr::parse(&again), Ok(nd));
                }
                let mut reply = vec![0u8; msg.len()];
                if let Some(n) = icmpv6::emit_echo_reply(&mut reply, msg, &d, &s) {
                    prop_assert!(Icmpv6Packet::new_checked(&reply[..n]).unwrap().verify_checksum(&d, &s));
                }
            }
        }
        // Errors about it: at most 1280 bytes with the IPv6 header, right checksum.
        let (me, to) = (addr(&header[..16]), addr(&header[16..32]));
        for e in [ErrorRepr::TimeExceeded(0), ErrorRepr::PacketTooBig { mtu: 1280 }, ErrorRepr::DestUnreachable(3)] {
            let _ = error_allowed(&e, &buf);
            let mut out = vec![0u8; 1300];
            if let Some(n) = emit_error(&mut out, e, &buf, &me, &to) {
                prop_assert!(40 + n <= MIN_MTU);
                prop_assert!(Icmpv6Packet::new_checked(&out[..n]).unwrap().verify_checksum(&me, &to));
                prop_assert_eq!(n, icmpv6::error_message_len(&buf));
            }
        }
    }

    /// Neighbour discovery messages: a solicitation or advertisement with
    /// random options, mutated.
    #[test]
    fn neighbour_messages_parse_or_name_the_fault(
        na in any::<bool>(),
        body in vec(any::<u8>(), 20..20 + 40),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    ) {
        let mut m = vec![if na { 136 } else { 135 }, 0, 0, 0];
        m.extend(body);
        for (at, v) in flips {
            let i = at.index(m.len());
            m[i] = v;
        }
        let p = Icmpv6Packet::new_checked(&m[..]).unwrap();
        match NdRepr::parse(&p) {
            Ok(nd) => {
                prop_assert!(!nd.target().is_multicast());
                let mut out = [0u8; 32];
                let n = nd.emit(&mut out, &Ipv6Addr::LOCALHOST, &Ipv6Addr::LOCALHOST).unwrap();
                prop_assert_eq!(NdRepr::parse(&Icmpv6Packet::new_checked(&out[..n]).unwrap()), Ok(nd));
            }
            Err(e) => prop_assert!(e.reason().starts_with("nd_")),
        }
    }
}
