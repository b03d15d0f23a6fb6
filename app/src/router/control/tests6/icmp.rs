//! Echo replies and ICMPv6 errors.

use super::*;
use crate::datapath::budget::over_budget_reason;

#[test]
fn an_echo_request_to_us_is_answered_from_the_address_it_was_sent_to() {
    let mut rig = Rig::new();
    let host = a("2001:db8:1::2");
    let ours = a("2001:db8:1::1");
    let mut echo = vec![kind::ECHO_REQUEST, 0, 0, 0, 0x12, 0x34, 0, 1, 9, 8, 7, 6];
    Icmpv6Packet::new_unchecked(&mut echo[..]).fill_checksum(&host, &ours);
    let f = frame6((P0, HOST), (host, ours), next_header::ICMPV6, 64, &echo);
    rig.punt(&f, Punt::LocalIcmp6, 0, 0);
    let reply = rig.one_sent(0);
    let (fields, src, dst) = icmp6(&reply);
    assert_eq!(fields.0, kind::ECHO_REPLY);
    assert_eq!((src, dst), (ours, host));
    assert_eq!(&reply[..6], &HOST);
    assert_eq!(
        &reply[HEADER_LEN + 44..],
        &echo[4..],
        "identifier, sequence, data"
    );
    assert_eq!(rig.cp.stats.echo6_replies, 1);
    // Anything else to us is dropped with its reason.
    let mut bad = f.clone();
    bad[HEADER_LEN + 40 + 9] ^= 1;
    rig.punt(&bad, Punt::LocalIcmp6, 0, 0);
    assert_eq!(rig.dropped(0, DropReason::Icmpv6Invalid), 1);
    assert!(rig.sent().is_empty());
}

/// RFC 4443 2.2: the reply to a message sent to one of our unicast
/// addresses leaves from that address, also when it belongs to another
/// port than the one the request came in on (a host pinging the router's
/// far side: Linux's ping otherwise prints "DIFFERENT ADDRESS!").
#[test]
fn an_echo_request_to_another_port_s_address_is_answered_from_that_address() {
    let mut rig = Rig::new();
    let host = a("2001:db8:1::2");
    let far_side = a("2001:db8:2::1");
    let mut echo = vec![kind::ECHO_REQUEST, 0, 0, 0, 0x12, 0x34, 0, 1, 9, 8, 7, 6];
    Icmpv6Packet::new_unchecked(&mut echo[..]).fill_checksum(&host, &far_side);
    let f = frame6((P0, HOST), (host, far_side), next_header::ICMPV6, 64, &echo);
    rig.punt(&f, Punt::LocalIcmp6, 0, 0);
    let reply = rig.one_sent(0);
    let (fields, src, dst) = icmp6(&reply);
    assert_eq!(fields.0, kind::ECHO_REPLY);
    assert_eq!((src, dst), (far_side, host));
    assert_eq!(&reply[..12], &[HOST, P0].concat()[..], "out of port 0");
    assert_eq!(rig.cp.stats.echo6_replies, 1);
}

#[test]
fn each_error_has_its_type_code_source_and_drop_reason() {
    let mut rig = Rig::new();
    let host = a("2001:db8:1::2");
    let far = a("2001:db8:99::1");
    let cases = [
        (
            Punt::HopLimitExceeded,
            (3, 0, 0),
            DropReason::Ipv6HopLimitExceeded,
        ),
        (Punt::NoRoute6, (1, 0, 0), DropReason::Ipv6NoRoute),
        (Punt::BeyondScope, (1, 2, 0), DropReason::Icmpv6BeyondScope),
        (
            Punt::PacketTooBig,
            (2, 0, 1400),
            DropReason::Ipv6PacketTooBig,
        ),
    ];
    for (punt, fields, reason) in cases {
        let packet = datagram(host, far, 1);
        rig.punt(&packet, punt, 0, 1);
        let err = rig.one_sent(0);
        let (got, src, dst) = icmp6(&err);
        assert_eq!(got, fields, "{punt:?}");
        assert_eq!((src, dst), (a("2001:db8:1::1"), host), "{punt:?}");
        assert_eq!(&err[HEADER_LEN + 48..], &packet[HEADER_LEN..], "{punt:?}");
        assert_eq!(rig.dropped(0, reason), 1, "{punt:?}");
        // A worker over its budget for this kind counts the packet alike.
        assert_eq!(over_budget_reason(punt), reason, "{punt:?}");
    }
    // A link-local source is answered from our link-local address.
    rig.punt(
        &datagram(a("fe80::42"), far, 1),
        Punt::HopLimitExceeded,
        0,
        1,
    );
    let (_, src, dst) = icmp6(&rig.one_sent(0));
    assert_eq!((src, dst), (a("fe80::ff:fe00:1"), a("fe80::42")));
    assert_eq!(rig.cp.stats.icmp6_errors, 5);
}

#[test]
fn no_error_about_an_error_or_a_multicast_destination_packet_too_big_excepted() {
    let mut rig = Rig::new();
    let host = a("2001:db8:1::2");
    // About an ICMPv6 error: none.
    let about = [kind::DEST_UNREACHABLE, 0, 0, 0, 0, 0, 0, 0];
    let f = frame6(
        (P0, HOST),
        (host, a("2001:db8:99::1")),
        next_header::ICMPV6,
        1,
        &about,
    );
    rig.punt(&f, Punt::HopLimitExceeded, 0, 1);
    // To a multicast address: none, but packet too big.
    let group = a("ff0e::1");
    rig.punt(&datagram(host, group, 1), Punt::HopLimitExceeded, 0, 1);
    assert!(rig.sent().is_empty());
    assert_eq!(rig.cp.stats.icmp6_not_allowed, 2);
    assert_eq!(
        rig.dropped(0, DropReason::Ipv6HopLimitExceeded),
        2,
        "still counted"
    );
    rig.punt(&datagram(host, group, 64), Punt::PacketTooBig, 0, 1);
    assert_eq!(icmp6(&rig.one_sent(0)).0, (2, 0, 1400));
}

#[test]
fn errors_are_rate_limited_like_ipv4_s() {
    let mut rig = Rig::new();
    let packet = datagram(a("2001:db8:1::2"), a("2001:db8:99::1"), 1);
    for _ in 0..80 {
        rig.punt(&packet, Punt::HopLimitExceeded, 0, 1);
    }
    let sent = rig.sent().len();
    // A burst of 50 (a few more if the bucket refilled meanwhile).
    assert!((50..55).contains(&sent), "{sent}");
    assert_eq!(rig.cp.stats.icmp6_rate_limited as usize, 80 - sent);
    assert_eq!(rig.dropped(0, DropReason::Ipv6HopLimitExceeded), 80);
}
