//! The routing pipeline on crafted frames: net_pcap0 (10.0.1.1/24) receives
//! one frame of each kind, net_pcap1 (10.0.2.1/24) is the way to the routes.
//! Asserted: the exact bytes of every frame that leaves either port (routed
//! with TTL - 1 and the neighbour's header, VLAN stripped, padding trimmed;
//! ARP reply, echo reply, time exceeded and net unreachable from the control
//! plane) and the exact count of every drop reason.

mod common;
use common::frames::{
    from_host_a, tcp, udp, HOST_A_MAC as HOST_A, PCAP0_MAC as MAC0, PCAP1_MAC as MAC1, UDP_DATA,
};
use common::*;
use hooks::testkit::{self, Frame};
use hooks::wire::ethernet::ethertype;
use hooks::wire::{arp, checksum, ArpRepr, Ipv4Packet};

const NEIGH_22: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x22];
const NEIGH_23: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x23];

const CONFIG: &str = concat!(
    pcap_router_config!(),
    r#"
[[route]]
prefix = "198.51.100.7/32"
via = "10.0.2.3"

[[neighbour]]
address = "10.0.2.3"
mac = "02:bb:00:00:00:23"
"#
);

/// Host A's address on port 0's subnet.
const A: [u8; 4] = [10, 0, 1, 2];

/// An Ethernet + ARP reply (42 bytes, unpadded) from `(mac, ip)` to `(to_mac, to_ip)`.
fn arp_reply(mac: [u8; 6], ip: [u8; 4], to_mac: [u8; 6], to_ip: [u8; 4]) -> Vec<u8> {
    let repr = ArpRepr {
        operation: arp::op::REPLY,
        sender_mac: mac,
        sender_ip: ip.into(),
        target_mac: to_mac,
        target_ip: to_ip.into(),
    };
    testkit::arp(to_mac, mac, &repr)
}

/// A UDP frame from host A, port `sport`, to `dst`:53 with TTL `ttl` and
/// 18 bytes of data (60 bytes).
fn udp_frame(dst: [u8; 4], ttl: u8, sport: u16) -> Frame {
    from_host_a(testkit::udp(A, dst, sport, 53).ttl(ttl)).payload(&UDP_DATA)
}

fn udp_to(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    udp_frame(dst, ttl, 12345).build()
}

/// What `frame` (untagged, IP at 14) looks like routed out of port 1 to `neigh`.
fn routed(frame: &[u8], neigh: [u8; 6]) -> Vec<u8> {
    common::frames::routed(frame, MAC1, neigh)
}

/// A UDP frame with 8 bytes of IP payload (a bare UDP header from `sport`
/// to port 2) to `dst` with TTL `ttl`, padded with 0xee to 60 bytes: the
/// router must trim the padding.
fn padded_udp_to(dst: [u8; 4], sport: u16, ttl: u8) -> Vec<u8> {
    let mut f = from_host_a(testkit::udp(A, dst, sport, 2).ttl(ttl))
        .pad(false)
        .build();
    f.resize(60, 0xee);
    f
}

/// A frame to another station's MAC (dropped as other_host), 60 bytes.
fn to_other_host() -> Vec<u8> {
    testkit::ethernet([0x02, 0xcc, 0, 0, 0, 1], HOST_A, ethertype::IPV4, &[0; 46])
}

/// `sport` with `i` as its low byte: the frames of a burst differ by it, and
/// frame `i` of two bursts is one flow when their ports share a high byte.
fn low_byte(sport: u16, i: u16) -> u16 {
    (sport & 0xff00) | (i & 0xff)
}

#[test]
fn every_kind_of_frame_ends_where_it_should() {
    let good = udp_to([198, 51, 100, 9], 64);
    let host32 = udp_to([198, 51, 100, 7], 64);
    let good_frame = || udp_frame([198, 51, 100, 9], 64, 12345);
    // VLAN 5: no VLAN is configured, so not ours. A priority tag (VLAN 0,
    // PCP 5) is as good as untagged and is routed, untagged.
    let tagged = good_frame().vlan(5).build();
    let prio = good_frame().vlan(0xa000).build();
    // Martians: from loopback, to 240/4.
    let from_loopback = from_host_a(testkit::udp([127, 0, 0, 1], [198, 51, 100, 9], 12345, 53))
        .payload(&UDP_DATA)
        .build();
    let to_reserved = udp_to([240, 0, 0, 1], 64);
    let padded = padded_udp_to([198, 51, 100, 10], 1, 9);

    let runt = good_frame().truncate(59).build();
    let other_host = good_frame().macs([0x02, 0xcc, 0, 0, 0, 1], HOST_A).build();
    let bcast = good_frame().macs([0xff; 6], HOST_A).build();
    let mut llc = testkit::ethernet(MAC0, HOST_A, 0x0026, &[0x42, 0x42, 0x03]);
    llc.resize(60, 0);
    // IHL 4, the checksum as it was for IHL 5.
    let bad_ihl = good_frame().ihl(4).stale_ipv4_checksum().build();
    let bad_csum = good_frame().bad_ipv4_checksum().build();
    let long_total = good_frame().total_len(200).build();
    let ttl1 = udp_to([198, 51, 100, 9], 1);
    let no_route = udp_to([203, 0, 113, 1], 64);
    let ipv6 = testkit::ethernet(MAC0, HOST_A, ethertype::IPV6, &[0x60; 66]);
    let tcp_to_us = from_host_a(testkit::tcp(A, [10, 0, 1, 1], 0, 0, 0)).build();
    let echo_data = b"hi";
    let echo = from_host_a(testkit::icmp_echo(A, [10, 0, 2, 1], 8, 0x1234, 1))
        .payload(echo_data)
        .build();
    let request = ArpRepr {
        operation: arp::op::REQUEST,
        sender_mac: HOST_A,
        sender_ip: A.into(),
        target_mac: [0; 6],
        target_ip: [10, 0, 1, 1].into(),
    };
    let mut arp_req = testkit::arp([0xff; 6], HOST_A, &request);
    arp_req.resize(60, 0);

    let input = vec![
        good.clone(),
        host32.clone(),
        tagged,
        prio,
        padded.clone(),
        from_loopback,
        to_reserved,
        runt,
        other_host,
        bcast,
        llc,
        bad_ihl,
        bad_csum,
        long_total,
        ttl1.clone(),
        no_route.clone(),
        ipv6,
        tcp_to_us,
        echo.clone(),
        arp_req,
    ];
    let (out0, out1, s) = run_pcaps("rtpcap", CONFIG, &input, &[]);

    // Port 1: the routed frames, in order, exactly.
    let expect1 = vec![
        routed(&good, NEIGH_22),
        routed(&host32, NEIGH_23),
        routed(&good, NEIGH_22),
        routed(&padded, NEIGH_22),
    ];
    assert_eq!(out1.len(), expect1.len(), "{out1:02x?}");
    for (i, (a, b)) in out1.iter().zip(&expect1).enumerate() {
        assert_eq!(a, b, "routed frame {i}");
    }
    let ip = Ipv4Packet::new_checked(&out1[0][14..]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(ip.ttl(), 63);

    // Port 0: from the control plane, in punt order: time exceeded, net
    // unreachable, echo reply, ARP reply.
    assert_eq!(out0.len(), 4, "{out0:02x?}");
    for (err, orig, kind) in [(&out0[0], &ttl1, (11, 0)), (&out0[1], &no_route, (3, 0))] {
        assert_eq!(&err[..12], &[HOST_A, MAC0].concat()[..]);
        let ip = Ipv4Packet::new_checked(&err[14..]).unwrap();
        assert_eq!(ip.src_addr().octets(), [10, 0, 1, 1]);
        assert_eq!(ip.dst_addr().octets(), [10, 0, 1, 2]);
        assert!(ip.verify_checksum());
        assert_eq!((err[34], err[35]), kind, "ICMP type and code");
        assert_eq!(checksum::checksum(&err[34..]), 0, "ICMP checksum verifies");
        assert_eq!(&err[42..], &orig[14..14 + 28], "quotes header + 8 bytes");
    }

    let reply = &out0[2];
    assert_eq!(&reply[..12], &[HOST_A, MAC0].concat()[..]);
    let rip = Ipv4Packet::new_checked(&reply[14..]).unwrap();
    assert_eq!(rip.src_addr().octets(), [10, 0, 2, 1]);
    assert_eq!(rip.dst_addr().octets(), [10, 0, 1, 2]);
    assert!(rip.verify_checksum());
    assert_eq!(reply.len(), 14 + 30, "trimmed to the IP total length");
    assert_eq!(reply[34], 0, "echo reply");
    assert_eq!(&reply[38..], &echo[38..44], "ident, seq and data echoed");
    assert_eq!(&reply[42..], echo_data);
    assert_eq!(
        checksum::checksum(&reply[34..]),
        0,
        "ICMP checksum verifies"
    );

    let arp = &out0[3];
    let expect_arp = arp_reply(MAC0, [10, 0, 1, 1], HOST_A, [10, 0, 1, 2]);
    assert_eq!(arp, &expect_arp);

    let drops = &s["totals"]["drops"];
    for (reason, n) in [
        ("runt", 1),
        ("other_host", 1),
        ("not_unicast", 1),
        ("ieee_802_3", 1),
        ("ipv4_bad_ihl", 1),
        ("ipv4_bad_checksum", 1),
        ("ipv4_bad_total_length", 1),
        ("ttl_exceeded", 1),
        ("no_route", 1),
        ("unsupported_protocol", 1),
        ("local_unsupported", 1),
        ("vlan_not_configured", 1),
        ("martian", 2),
    ] {
        assert_eq!(drops[reason], n, "{reason}: {s}");
    }
    assert_eq!(s["totals"]["dropped"], 14, "{s}");
    assert_stage_drops(&s);
    assert_eq!(s["totals"]["rx"], input.len() as u64);
    assert_eq!(s["totals"]["tx"], 4 + 4);
    assert_eq!(s["totals"]["punted"], 4, "ttl, no route, echo, arp");
    assert_eq!(
        s["totals"]["originated"], 2,
        "time exceeded, net unreachable"
    );
    assert_eq!(s["control"]["icmp_errors"], 2);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// Each drop of `every_kind_of_frame_ends_where_it_should` under the stage
/// that made it: frames l2 refuses at l2_input, bad IPv4 headers and
/// martians at ip_input; TTL 1 and no route are punted and dropped by the
/// control plane (after its ICMP error), so they are in the totals only.
fn assert_stage_drops(s: &serde_json::Value) {
    let by_stage = &s["stage_drops"];
    let expect = serde_json::json!({
        "l2_input": {
            "runt": 1,
            "other_host": 1,
            "not_unicast": 1,
            "ieee_802_3": 1,
            "vlan_not_configured": 1,
            "unsupported_protocol": 1,
        },
        "ingress_hook": {},
        "ip_input": {
            "ipv4_bad_ihl": 1,
            "ipv4_bad_checksum": 1,
            "ipv4_bad_total_length": 1,
            "martian": 2,
            "local_unsupported": 1,
        },
        "egress_hook": {},
        "neigh_output": {},
        "local": {},
        "tx": {},
    });
    assert_eq!(by_stage, &expect, "{s}");
    // Summed over stages, each reason's total but the control plane's.
    let totals = s["totals"]["drops"].as_object().unwrap();
    for (reason, total) in totals {
        let staged: u64 = by_stage
            .as_object()
            .unwrap()
            .values()
            .filter_map(|r| r[reason].as_u64())
            .sum();
        let control = match reason.as_str() {
            "ttl_exceeded" | "no_route" => 1,
            _ => 0,
        };
        assert_eq!(staged + control, total.as_u64().unwrap(), "{reason}: {s}");
    }
}

/// A config with one port per side and no neighbours: on-link next hops
/// must be resolved by ARP.
const CONFIG_NO_NEIGH: &str = pcap_ports_config!();

/// Is `f` an ARP request from port 1 for `target`?
fn is_arp_request_for(f: &[u8], target: [u8; 4]) -> bool {
    f.len() >= 42
        && f[..6] == [0xff; 6]
        && f[6..12] == MAC1
        && f[12..14] == [0x08, 0x06]
        && f[20..22] == [0, 1]
        && f[22..28] == MAC1
        && f[28..32] == [10, 0, 2, 1]
        && f[38..42] == target
}

#[test]
fn unresolved_next_hop_queues_retries_with_backoff_then_fails() {
    // 100 packets to a connected address nobody answers for.
    let frames: Vec<Vec<u8>> = (0..100).map(|_| udp_to([10, 0, 2, 77], 64)).collect();
    let (out0, out1, s) = run_pcaps("rtunres", CONFIG_NO_NEIGH, &frames, &[]);
    assert!(out0.is_empty(), "{out0:02x?}");
    // The first request, and retries after 250 and 500 ms; fails 1 s later.
    assert_eq!(out1.len(), 3, "{out1:02x?}");
    assert!(out1.iter().all(|f| is_arp_request_for(f, [10, 0, 2, 77])));
    let drops = &s["totals"]["drops"];
    assert_eq!(drops["neigh_queue_full"], 36, "{s}");
    assert_eq!(drops["neigh_failed"], 64, "{s}");
    assert_eq!(s["control"]["arp_requests"], 3, "{s}");
    assert_eq!(s["control"]["neigh_failed"], 1, "{s}");
    assert_eq!(s["totals"]["originated"], 3);
    assert_eq!(s["totals"]["tx"], 3);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    let n = s["neighbours"].as_array().unwrap();
    assert!(
        n.iter()
            .any(|e| e.as_str().unwrap().starts_with("10.0.2.77")
                && e.as_str().unwrap().contains("Failed")),
        "{n:?}"
    );
}

#[test]
fn an_arp_reply_releases_the_waiting_packets() {
    let frames: Vec<Vec<u8>> = (0..100).map(|_| udp_to([10, 0, 2, 77], 64)).collect();
    // The neighbour's reply to us, on port 1, after the packets that make
    // us ask (the worker polls port 0 first, 32 frames a round; an
    // unsolicited reply would make no entry): 4 rounds of frames to another
    // host first.
    let nb = [0x02, 0xdd, 0, 0, 0, 0x77];
    let mut reply = arp_reply(nb, [10, 0, 2, 77], MAC1, [10, 0, 2, 1]);
    reply.resize(60, 0);
    let mut in1 = vec![to_other_host(); 4 * 32];
    in1.push(reply);
    let (_, out1, s) = run_pcaps("rtreply", CONFIG_NO_NEIGH, &frames, &in1);
    let expect = routed(&frames[0], nb);
    let sent = out1.iter().filter(|f| **f == expect).count();
    let requests = out1
        .iter()
        .filter(|f| is_arp_request_for(f, [10, 0, 2, 77]))
        .count();
    assert_eq!(
        sent + requests,
        out1.len(),
        "only routed frames and ARP requests: {out1:02x?}"
    );
    assert!(requests <= 1, "no retry once answered: {requests}");
    let drops = &s["totals"]["drops"];
    // At most 64 wait; whatever did not fit was counted.
    assert!(sent >= 64, "{sent} sent: {s}");
    assert_eq!(
        sent as u64 + drops["neigh_queue_full"].as_u64().unwrap(),
        100,
        "{s}"
    );
    assert_eq!(drops["neigh_failed"], 0, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    let n = s["neighbours"].as_array().unwrap();
    assert!(
        n.iter()
            .any(|e| e.as_str().unwrap().starts_with("10.0.2.77")
                && e.as_str().unwrap().contains("02:dd:00:00:00:77 Reachable")),
        "{n:?}"
    );
}

#[test]
fn a_no_route_flood_is_answered_at_a_bounded_rate() {
    // 1000 packets without a route. The worker's budget is 10 unreachable
    // punts per 100 ms period: the first 10 always go, and within one burst
    // of 32 (microseconds) the budget runs out, so some are never punted,
    // however slowly the machine reads them. Counts, not a time window: every
    // packet is a no_route drop, the punted ones are answered (or counted
    // rate-limited by the control plane), the rest forgone.
    let frames: Vec<Vec<u8>> = (0..1000).map(|_| udp_to([203, 0, 113, 9], 64)).collect();
    let (out0, out1, s) = run_pcaps("rtflood", CONFIG_NO_NEIGH, &frames, &[]);
    assert!(out1.is_empty());
    assert!(out0
        .iter()
        .all(|f| f[12..14] == [0x08, 0x00] && f[34] == 3 && f[35] == 0));
    assert_eq!(s["totals"]["drops"]["no_route"], 1000, "{s}");
    let punted = s["totals"]["punted"].as_u64().unwrap();
    assert!(
        (10..1000).contains(&punted),
        "the first period's 10 punted, and not the whole flood: {s}"
    );
    let c = &s["control"];
    assert_eq!(c["icmp_errors"], out0.len() as u64, "{s}");
    assert_eq!(
        c["icmp_errors"].as_u64().unwrap() + c["icmp_rate_limited"].as_u64().unwrap(),
        punted,
        "each punt answered or counted rate-limited: {s}"
    );
    assert!(out0.len() >= 10, "the first period's punts answered: {s}");
    assert_eq!(s["totals"]["drops"]["control_ring_full"], 0, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

#[test]
fn a_ping_flood_to_the_router_is_answered_at_the_punt_rate() {
    // 2000 echo requests to 10.0.1.1 in a few ms: the worker punts 128 per
    // 10 ms and drops the rest itself, so the ring never overflows.
    let echo = from_host_a(testkit::icmp_echo(A, [10, 0, 1, 1], 8, 0x1234, 1))
        .payload(b"xy")
        .build();
    let frames = vec![echo; 2000];
    let (out0, _, s) = run_pcaps("rtpingflood", CONFIG_NO_NEIGH, &frames, &[]);
    let replies = out0.len() as u64;
    // Counts, not a time window: the first period's 128 always go (the ring
    // holds them), every request is answered or counted rate-limited, and
    // the limit held back some. How many depends on how fast the worker read
    // the pcap, so only that it did: 129 read within one 10 ms period (five
    // bursts of 32), which a running worker does unless it is preempted for
    // 10 ms after every fourth of its 63 bursts.
    assert!(
        replies >= 128,
        "the first period's punts answered: {replies}"
    );
    assert!(out0.iter().all(|f| f[34] == 0), "echo replies only");
    let drops = &s["totals"]["drops"];
    let limited = drops["punt_rate_limited"].as_u64().unwrap();
    assert_eq!(limited, 2000 - replies, "{s}");
    assert!(limited > 0, "the flood was limited: {s}");
    assert_eq!(s["totals"]["punted"], replies, "{s}");
    assert_eq!(drops["control_ring_full"], 0, "{s}");
    assert_eq!(s["control"]["echo_replies"], replies);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

#[test]
fn a_sweep_of_unused_addresses_does_not_fill_the_neighbour_table() {
    // One packet to each of 200 unused on-link addresses: the port takes
    // 128 resolutions at once (the rest are refused), those past half of
    // them send one request instead of three; every resolution fails, and
    // none of them takes a table entry (only answers do).
    let config = CONFIG_NO_NEIGH.replace("10.0.2.1/24", "10.1.0.1/16");
    let frames: Vec<Vec<u8>> = (0..200u8).map(|i| udp_to([10, 1, 7, i + 2], 64)).collect();
    let (_, out1, s) = run_pcaps("rtsweep", &config, &frames, &[]);
    assert_eq!(out1.len(), 64 * 3 + 64, "ARP requests");
    assert_eq!(s["totals"]["drops"]["neigh_failed"], 128, "{s}");
    assert_eq!(s["totals"]["drops"]["neigh_resolve_limit"], 72, "{s}");
    assert_eq!(s["control"]["neigh_failed"], 128, "{s}");
    assert_eq!(s["control"]["resolve_single_probe"], 64, "{s}");
    let n: Vec<&str> = s["neighbours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(n.len(), 128, "{n:?}");
    assert!(
        n.iter().all(|l| l.contains(" - ") && l.ends_with("Failed")),
        "listed as failed, without a table entry: {n:?}"
    );
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

#[test]
fn too_big_with_df_gets_frag_needed_and_without_is_dropped() {
    let config = CONFIG.replace(
        "address = \"10.0.2.1/24\"",
        "address = \"10.0.2.1/24\"\nmtu = 576",
    );
    let big = |df: bool| {
        let f = from_host_a(testkit::ipv4(A, [198, 51, 100, 9], 17, &[7; 600]));
        if df { f.dont_frag() } else { f }.build()
    };
    let fits = udp_to([198, 51, 100, 9], 64);
    let (out0, out1, s) = run_pcaps(
        "rtmtu",
        &config,
        &[big(true), big(false), fits.clone()],
        &[],
    );
    assert_eq!(out1, vec![routed(&fits, NEIGH_22)]);
    assert_eq!(out0.len(), 1, "{out0:02x?}");
    let e = &out0[0];
    assert_eq!((e[34], e[35]), (3, 4), "fragmentation needed");
    assert_eq!(&e[38..42], &[0, 0, 0x02, 0x40], "next-hop MTU 576");
    assert_eq!(checksum::checksum(&e[34..]), 0);
    assert_eq!(s["totals"]["drops"]["mtu_exceeded"], 2, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

#[test]
fn an_on_link_route_outside_the_subnet_resolves_by_arp() {
    // 192.0.2.0/24 is on-link out of port 1 (a `device =` route), outside
    // its 10.0.2.0/24: the neighbour's ARP reply must be accepted there.
    let config = format!(
        "{CONFIG_NO_NEIGH}\n[[route]]\nprefix = \"192.0.2.0/24\"\ndevice = \"net_pcap1\"\n"
    );
    let frames: Vec<Vec<u8>> = (0..10).map(|_| udp_to([192, 0, 2, 5], 64)).collect();
    let nb = [0x02, 0xee, 0, 0, 0, 0x05];
    let mut reply = arp_reply(nb, [192, 0, 2, 5], MAC1, [10, 0, 2, 1]);
    reply.resize(60, 0);
    // After the packets that make us ask (see an_arp_reply_releases_the_waiting_packets).
    let mut in1 = vec![to_other_host(); 4 * 32];
    in1.push(reply);
    let (_, out1, s) = run_pcaps("rtdevroute", &config, &frames, &in1);
    let expect = routed(&frames[0], nb);
    assert_eq!(
        out1.iter().filter(|f| **f == expect).count(),
        10,
        "{out1:02x?}"
    );
    assert_eq!(s["totals"]["drops"]["arp_invalid"], 0, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// A whole burst of plain forwards (32 frames: two gateways, an on-link
/// neighbour, padded frames), a burst with one exception in it, and a burst
/// to two on-link neighbours in pairs (runs of one next hop and one
/// header): the bytes out are the ones expected, in order. (Written for the
/// fast lane the stages replaced.)
#[test]
fn plain_bursts_take_the_fast_lane_and_leave_as_the_stages_would() {
    const NEIGH_25: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x25];
    const NEIGH_26: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x26];
    let config = format!(
        "{CONFIG}\n[[neighbour]]\naddress = \"10.0.2.5\"\nmac = \"02:bb:00:00:00:25\"\n\
         \n[[neighbour]]\naddress = \"10.0.2.6\"\nmac = \"02:bb:00:00:00:26\"\n"
    );
    // (destination, TTL, neighbour); the last kind is a small padded frame.
    let kinds = [
        ([198, 51, 100, 9], 64, NEIGH_22),
        ([198, 51, 100, 7], 2, NEIGH_23),
        ([10, 0, 2, 5], 128, NEIGH_25),
        ([198, 51, 100, 11], 9, NEIGH_22),
    ];
    // Burst 1: all plain. Burst 2: plain but for a TTL 1 in the middle.
    let mut input = Vec::new();
    let mut expect = Vec::new();
    for i in 0..64u16 {
        let k = usize::from(i) % kinds.len();
        let (dst, ttl, neigh) = kinds[k];
        let ttl = if i == 40 { 1 } else { ttl };
        // The UDP source port's low byte is i: every frame its own.
        let f = match k {
            3 => padded_udp_to(dst, i, ttl),
            _ => udp_frame(dst, ttl, low_byte(12345, i)).build(),
        };
        if i != 40 {
            expect.push(routed(&f, neigh));
        }
        input.push(f);
    }
    // Burst 3: on-link, two destinations in pairs (one neighbour lookup
    // per run of equal destinations).
    for i in 0..32 {
        let (dst, neigh) = if i % 4 < 2 {
            ([10, 0, 2, 5], NEIGH_25)
        } else {
            ([10, 0, 2, 6], NEIGH_26)
        };
        let f = udp_frame(dst, 64, low_byte(12345, i)).build();
        expect.push(routed(&f, neigh));
        input.push(f);
    }
    let (out0, out1, s) = run_pcaps("rtlane", &config, &input, &[]);

    assert_eq!(out1.len(), expect.len(), "{out1:02x?}");
    for (i, (a, b)) in out1.iter().zip(&expect).enumerate() {
        assert_eq!(a, b, "routed frame {i}");
    }
    assert_eq!(out0.len(), 1, "the time exceeded for the TTL 1 frame");
    assert_eq!(s["totals"]["drops"]["ttl_exceeded"], 1, "{s}");
    assert_eq!(s["totals"]["rx"], 96);
    assert_eq!(s["totals"]["tx"], 95 + 1);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// Bursts that do not leave whole by one port (the fast lane, which the
/// stages replaced, declined them after its checks):
/// one whose last frame leaves by the other port, one whose first frame's
/// next hop is unresolved. The stages route them; every frame's TTL is
/// decremented once, so the lane wrote nothing before it declined.
#[test]
fn bursts_declined_after_the_checks_are_routed_by_the_stages_unchanged() {
    const NEIGH_15: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x15];
    let config =
        format!("{CONFIG}\n[[neighbour]]\naddress = \"10.0.1.5\"\nmac = \"02:bb:00:00:00:15\"\n");
    let mut input = Vec::new();
    let mut expect1 = Vec::new();
    let mut expect0 = Vec::new();
    for i in 0..64u16 {
        let (dst, neigh) = match i {
            31 => ([10, 0, 1, 5], Some(NEIGH_15)),
            32 => ([10, 0, 2, 9], None),
            _ => ([198, 51, 100, 9], Some(NEIGH_22)),
        };
        let f = udp_frame(dst, 64, low_byte(12345, i)).build();
        match neigh {
            Some(NEIGH_15) => expect0.push(routed_out(&f, NEIGH_15, MAC0)),
            Some(n) => expect1.push(routed(&f, n)),
            None => {}
        }
        input.push(f);
    }
    let (out0, out1, s) = run_pcaps("rtdecl", &config, &input, &[]);

    let ipv4_out1: Vec<_> = out1.iter().filter(|f| f[12..14] == [0x08, 0x00]).collect();
    assert_eq!(ipv4_out1.len(), expect1.len(), "{out1:02x?}");
    for (i, (a, b)) in ipv4_out1.iter().zip(&expect1).enumerate() {
        assert_eq!(*a, b, "routed frame {i} out of port 1");
    }
    assert!(
        out1.iter().any(|f| is_arp_request_for(f, [10, 0, 2, 9])),
        "the unresolved next hop is asked for"
    );
    assert_eq!(out0, expect0, "the frame routed back out of port 0");
    assert_eq!(s["totals"]["rx"], 64);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// [`routed`] out of a port whose MAC is `port_mac`.
fn routed_out(frame: &[u8], neigh: [u8; 6], port_mac: [u8; 6]) -> Vec<u8> {
    let mut out = routed(frame, neigh);
    out[6..12].copy_from_slice(&port_mac);
    out
}

/// With a filter at egress of the output port, a plain burst (a gateway,
/// padded frames, an on-link neighbour found by the next hop ip_input left
/// in the metadata) and one with a TTL 1 frame (burst 2): the frames the
/// filter accepts leave in order, with the counts expected.
#[test]
fn an_egress_chain_runs_on_bursts_the_lane_routed_as_on_the_stages() {
    const NEIGH_25: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x25];
    let config = format!(
        "{CONFIG}
[[neighbour]]
address = \"10.0.2.5\"
mac = \"02:bb:00:00:00:25\"

[[hook]]
point = \"egress\"
port = \"net_pcap1\"
kind = \"filter\"
name = \"fw\"
policy = \"accept\"
[[hook.rule]]
proto = \"tcp\"
dport = 23
action = \"drop\"
"
    );
    let mut input = Vec::new();
    let mut expect = Vec::new();
    for burst in 0..2u16 {
        for i in 0..32u16 {
            // The source port's low byte is i (see low_byte).
            let sport = low_byte(1000 + 32 * burst + i, i);
            let ttl1 = burst == 1 && i == 5;
            let (f, neigh) = match i % 4 {
                0 => (udp(A, [198, 51, 100, 9], sport, 53), NEIGH_22),
                1 => (
                    padded_udp_to([198, 51, 100, 10], i, if ttl1 { 1 } else { 9 }),
                    NEIGH_22,
                ),
                2 => (udp(A, [10, 0, 2, 5], sport, 53), NEIGH_25),
                _ => (tcp(A, [198, 51, 100, 9], sport, 23, 0x02), NEIGH_22),
            };
            if ttl1 {
                // Time exceeded: not routed.
            } else if i % 4 != 3 {
                expect.push(routed(&f, neigh));
            }
            input.push(f);
        }
    }
    let (_, out1, s) = run_pcaps("rtegress", &config, &input, &[]);

    assert_eq!(out1.len(), expect.len(), "{out1:02x?}");
    for (i, (a, b)) in out1.iter().zip(&expect).enumerate() {
        assert_eq!(a, b, "routed frame {i}");
    }
    assert_eq!(s["totals"]["drops"]["filter_rule"], 16, "{s}");
    assert_eq!(s["totals"]["drops"]["ttl_exceeded"], 1, "{s}");
    let fw = &s["hooks"][0];
    assert_eq!(fw["name"], "fw", "{s}");
    assert_eq!(
        (&fw["seen"], &fw["accepted"], &fw["dropped"]),
        (&63.into(), &47.into(), &16.into())
    );
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// With an ingress chain on the input port: the classify marks stay in the
/// metadata, so the egress filter drops the marked packets; a burst the
/// filter accepts whole (3) leaves with the right headers; a burst in which
/// classify drops a packet (1) or with a TTL 1 frame (2) loses just that
/// one. Without the egress chain every routed frame leaves (second run).
#[test]
fn the_lane_takes_bursts_after_an_ingress_chain_and_keeps_its_marks() {
    const NEIGH_25: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x25];
    let ingress = "
[[neighbour]]
address = \"10.0.2.5\"
mac = \"02:bb:00:00:00:25\"

[[hook]]
point = \"ingress\"
port = \"net_pcap0\"
kind = \"classify\"
name = \"qos\"
[[hook.rule]]
proto = \"tcp\"
dport = 23
action = \"drop\"
[[hook.rule]]
proto = \"udp\"
dport = 53
set_mark = 7
";
    let egress = "
[[hook]]
point = \"egress\"
port = \"net_pcap1\"
kind = \"filter\"
name = \"fw\"
policy = \"accept\"
[[hook.rule]]
mark = 7
action = \"drop\"
";
    let mut input = Vec::new();
    // (frame, its neighbour, marked)
    let mut plain = Vec::new();
    for burst in 0..4u16 {
        for i in 0..32u16 {
            let sport = 1000 + 32 * burst + i;
            // The source port's low byte is i (see low_byte).
            let low = low_byte(sport, i);
            // Burst 3 has no packet to port 53: nothing marked.
            let dns = if burst == 3 { 5353 } else { 53 };
            let ttl1 = burst == 2 && i == 9;
            let (mut f, neigh, marked) = match i % 4 {
                0 => (udp(A, [198, 51, 100, 9], low, dns), NEIGH_22, dns == 53),
                1 => (
                    padded_udp_to([198, 51, 100, 10], i, if ttl1 { 1 } else { 9 }),
                    NEIGH_22,
                    false,
                ),
                2 => (udp(A, [10, 0, 2, 5], low, 54), NEIGH_25, false),
                _ => (udp(A, [10, 0, 2, 5], low, dns), NEIGH_25, dns == 53),
            };
            if burst == 1 && i == 7 {
                f = tcp(A, [198, 51, 100, 9], sport, 23, 0x02);
            } else if ttl1 {
                // Time exceeded: not routed.
            } else {
                plain.push((routed(&f, neigh), marked));
            }
            input.push(f);
        }
    }

    let config = format!("{CONFIG}{ingress}{egress}");
    let (_, out1, s) = run_pcaps("rtingress", &config, &input, &[]);
    let expect: Vec<&Vec<u8>> = plain.iter().filter(|p| !p.1).map(|p| &p.0).collect();
    assert_eq!(out1.len(), expect.len(), "{out1:02x?}");
    for (i, (a, b)) in out1.iter().zip(&expect).enumerate() {
        assert_eq!(a, *b, "routed frame {i}");
    }
    let marked = plain.iter().filter(|p| p.1).count();
    assert_eq!(s["totals"]["drops"]["filter_rule"], marked, "{s}");
    assert_eq!(s["totals"]["drops"]["classify_rule"], 1, "{s}");
    assert_eq!(s["totals"]["drops"]["ttl_exceeded"], 1, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);

    // Without the egress filter every routed frame leaves, in order.
    let config = format!("{CONFIG}{ingress}");
    let (_, out1, s) = run_pcaps("rtingress2", &config, &input, &[]);
    assert_eq!(out1.len(), plain.len(), "{out1:02x?}");
    for (i, (a, b)) in out1.iter().zip(&plain).enumerate() {
        assert_eq!(*a, b.0, "routed frame {i}");
    }
    assert_eq!(s["hooks"][0]["name"], "qos", "{s}");
    assert_eq!(s["hooks"][0]["dropped"], 1, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// An echo request to our address 10.0.1.1 from `src_mac`.
fn echo_from(src_mac: [u8; 6], seq: u16) -> Vec<u8> {
    from_host_a(testkit::icmp_echo(A, [10, 0, 1, 1], 8, 0x1234, seq))
        .macs(MAC0, src_mac)
        .payload(b"hi")
        .build()
}

/// Source MACs no station has: broadcast, multicast, zero.
const BAD_SOURCES: [[u8; 6]; 3] = [[0xff; 6], [0x01, 0x00, 0x5e, 0, 0, 1], [0; 6]];

/// Echo replies and ICMP errors go to a frame's source MAC: a ping from
/// ff:ff:ff:ff:ff:ff would be answered to every station. l2 drops frames
/// from a group or zero source (`bad_source_mac`), and so does l2_input's
/// fast check: a burst of otherwise plain forwards from such
/// sources is not routed.
#[test]
fn frames_from_a_broadcast_multicast_or_zero_source_mac_are_dropped_unanswered() {
    let good = udp_to([198, 51, 100, 9], 64);
    let mut input = vec![good.clone()];
    for src in BAD_SOURCES {
        input.push(
            udp_frame([198, 51, 100, 9], 64, 12345)
                .macs(MAC0, src)
                .build(),
        );
    }
    // Every frame of this run is a plain forward but for its source: the
    // fast lane's burst.
    let (out0, out1, s) = run_pcaps("rtbadsrc-lane", CONFIG, &input, &[]);
    assert_eq!(out1, vec![routed(&good, NEIGH_22)], "{out1:02x?}");
    assert!(out0.is_empty(), "{out0:02x?}");
    assert_eq!(s["totals"]["drops"]["bad_source_mac"], 3, "{s}");
    assert_eq!(s["totals"]["balanced"], true);

    let mut pings: Vec<Vec<u8>> = BAD_SOURCES.iter().map(|&m| echo_from(m, 1)).collect();
    // And the ones the stages would answer with an ICMP error.
    pings.push(
        udp_frame([198, 51, 100, 9], 1, 12345)
            .macs(MAC0, [0xff; 6])
            .build(),
    );
    pings.push(echo_from(HOST_A, 2));
    let (out0, out1, s) = run_pcaps("rtbadsrc-ping", CONFIG, &pings, &[]);
    assert!(out1.is_empty(), "{out1:02x?}");
    assert_eq!(out0.len(), 1, "only the ping from a station: {out0:02x?}");
    assert_eq!(&out0[0][..12], &[HOST_A, MAC0].concat()[..]);
    assert_eq!(out0[0][34], 0, "echo reply");
    let drops = &s["totals"]["drops"];
    assert_eq!(drops["bad_source_mac"], 4, "{s}");
    assert_eq!(s["totals"]["dropped"], 4, "{s}");
    assert_eq!(s["totals"]["punted"], 1);
    assert_eq!(s["control"]["icmp_errors"], 0);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// Outer VLAN 100 with an inner priority tag (id 0) is in VLAN 100, which
/// is not configured: dropped like any tag of id not 0, for both 802.1Q
/// and 802.1ad outer tags. Two priority tags are as good as untagged.
#[test]
fn double_tags_with_an_inner_priority_tag_are_vlan_not_configured() {
    let good = udp_to([198, 51, 100, 9], 64);
    let double = |outer: u16, outer_tci: u16, inner_tci: u16| {
        udp_frame([198, 51, 100, 9], 64, 12345)
            .tag(outer, outer_tci)
            .vlan(inner_tci)
            .build()
    };
    let input = vec![
        double(0x8100, 100, 0),
        double(0x88a8, 100, 0xa000),
        double(0x8100, 0, 100),
        double(0x88a8, 0xa000, 100),
        double(0x8100, 0xa000, 0),
        double(0x88a8, 0, 0xa000),
    ];
    let (_, out1, s) = run_pcaps("rtqinq", CONFIG, &input, &[]);
    assert_eq!(out1, vec![routed(&good, NEIGH_22); 2], "{out1:02x?}");
    assert_eq!(s["totals"]["drops"]["vlan_not_configured"], 4, "{s}");
    assert_eq!(s["totals"]["dropped"], 4, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
}
