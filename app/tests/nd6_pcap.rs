//! Neighbour discovery and ICMPv6 through the whole router: frames into
//! net_pcap0 (host A, 2001:db8:1::2, on 2001:db8:1::/64) and net_pcap1
//! (2001:db8:2::/64, nobody answers unless the test says so), punted by
//! the datapath, answered by the control plane, read back from the output
//! pcaps byte for byte (the frame builders these compare with are pinned
//! to Linux's own frames in router::control::frames6's tests).

mod common;
use common::frames::{HOST_A_MAC as HOST_A, PCAP0_MAC as MAC0, PCAP1_MAC as MAC1};
use common::*;
use fastpath::router::control::frames6::{neighbor_advert, neighbor_solicit};
use hooks::wire::icmpv6::{Icmpv6Packet, NdRepr};
use hooks::wire::ipv6::{multicast_mac, solicited_node, Ipv6Packet, ALL_NODES};
use std::net::Ipv6Addr;

const CONFIG: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
"#;

const NEXT: [u8; 6] = [0x02, 0xdd, 0, 0, 0, 0x77];

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// An Ethernet + IPv6 frame; ICMPv6 payloads get their checksum.
fn frame(
    macs: ([u8; 6], [u8; 6]),
    src: Ipv6Addr,
    dst: Ipv6Addr,
    nh: u8,
    hl: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut p = payload.to_vec();
    if nh == 58 {
        Icmpv6Packet::new_unchecked(&mut p[..]).fill_checksum(&src, &dst);
    }
    let mut f = Vec::new();
    f.extend(macs.0);
    f.extend(macs.1);
    f.extend([0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend((p.len() as u16).to_be_bytes());
    f.extend([nh, hl]);
    f.extend(src.octets());
    f.extend(dst.octets());
    f.extend(p);
    f
}

fn nd(macs: ([u8; 6], [u8; 6]), src: Ipv6Addr, dst: Ipv6Addr, m: NdRepr) -> Vec<u8> {
    let mut msg = vec![0u8; m.buffer_len()];
    m.emit(&mut msg, &src, &dst).unwrap();
    frame(macs, src, dst, 58, 255, &msg)
}

fn udp(src: Ipv6Addr, dst: Ipv6Addr, hl: u8) -> Vec<u8> {
    let data = [0x30, 0x39, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4];
    frame((MAC0, HOST_A), src, dst, 17, hl, &data)
}

/// (type, code, word) of the ICMPv6 message of `f` (checksum verified),
/// its source and destination.
fn icmp6(f: &[u8]) -> ((u8, u8, u32), Ipv6Addr, Ipv6Addr) {
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let msg = &f[54..54 + usize::from(ip.payload_len())];
    let p = Icmpv6Packet::new_checked(msg).unwrap();
    assert!(
        p.verify_checksum(&ip.src_addr(), &ip.dst_addr()),
        "{f:02x?}"
    );
    (
        (p.msg_type(), p.code(), p.word()),
        ip.src_addr(),
        ip.dst_addr(),
    )
}

#[test]
fn solicitations_echo_and_errors_are_answered_through_the_datapath() {
    let (host, ours) = (a("2001:db8:1::2"), a("2001:db8:1::1"));
    let ll = hooks::wire::ipv6::link_local_from_mac(MAC0);
    let ns = |src: Ipv6Addr, target: Ipv6Addr, sll| {
        let g = solicited_node(target);
        let m = NdRepr::NeighborSolicit {
            target,
            source_ll: sll,
        };
        nd((multicast_mac(g), HOST_A), src, g, m)
    };
    let echo = frame(
        (MAC0, HOST_A),
        host,
        ours,
        58,
        64,
        &[128, 0, 0, 0, 0x12, 0x34, 0, 7, 1, 2, 3, 4],
    );
    let input = vec![
        ns(host, ours, Some(HOST_A)),
        ns(Ipv6Addr::UNSPECIFIED, ll, None),
        echo.clone(),
        udp(host, a("2001:db8:99::1"), 64),
        udp(host, a("2001:db8:2::5"), 1),
    ];
    let (out0, out1, s, _) = run_pcaps_logged("nd6echo", CONFIG, &input, &[]);
    assert!(out1.is_empty(), "{out1:02x?}");
    assert_eq!(out0.len(), 5, "{out0:02x?}");
    assert_eq!(out0[0], neighbor_advert(MAC0, ours, host, HOST_A, true));
    assert_eq!(
        out0[1],
        neighbor_advert(MAC0, ll, ALL_NODES, multicast_mac(ALL_NODES), false)
    );
    let (reply, src, dst) = icmp6(&out0[2]);
    assert_eq!((reply.0, src, dst), (129, ours, host));
    assert_eq!(&out0[2][..12], &[HOST_A, MAC0].concat()[..]);
    assert_eq!(&out0[2][58..], &echo[58..], "identifier, sequence, data");
    assert_eq!(icmp6(&out0[3]), ((1, 0, 0), ours, host), "no route");
    assert_eq!(icmp6(&out0[4]), ((3, 0, 0), ours, host), "hop limit");
    assert_eq!(s["control"]["nd_adverts"], 2, "{s}");
    assert_eq!(s["control"]["echo6_replies"], 1, "{s}");
    assert_eq!(s["control"]["icmp6_errors"], 2, "{s}");
    assert_eq!(s["totals"]["drops"]["ipv6_no_route"], 1, "{s}");
    assert_eq!(s["totals"]["drops"]["ipv6_hop_limit_exceeded"], 1, "{s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

#[test]
fn unanswered_resolution_solicits_three_times_then_answers_address_unreachable() {
    let (host, dst) = (a("2001:db8:1::2"), a("2001:db8:2::77"));
    let packet = udp(host, dst, 64);
    let (out0, out1, s, _) =
        run_pcaps_logged("nd6fail", CONFIG, std::slice::from_ref(&packet), &[]);
    let ns = neighbor_solicit(MAC1, a("2001:db8:2::1"), dst, None);
    assert_eq!(out1, vec![ns.to_vec(); 3], "{out1:02x?}");
    assert_eq!(out0.len(), 1, "{out0:02x?}");
    assert_eq!(icmp6(&out0[0]), ((1, 3, 0), a("2001:db8:1::1"), host));
    // The packet quoted as it waited: hop limit already one less.
    let mut quoted = packet[14..].to_vec();
    quoted[7] -= 1;
    assert_eq!(&out0[0][62..], &quoted[..]);
    assert_eq!(s["totals"]["drops"]["neigh_failed"], 1, "{s}");
    assert_eq!(s["control"]["nd_solicits"], 3, "{s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
}

#[test]
fn an_advertisement_releases_the_waiting_packets_and_unsolicited_ones_make_nothing() {
    let (host, dst) = (a("2001:db8:1::2"), a("2001:db8:2::77"));
    let frames: Vec<Vec<u8>> = (0..10).map(|_| udp(host, dst, 64)).collect();
    // The answer on port 1 after the packets (the worker polls port 0
    // first, 32 frames a round): frames to another host before it, and an
    // unsolicited advertisement of another address, which makes no entry.
    let other = vec![0x02, 0xcc, 0, 0, 0, 1, 0x02, 0xaa, 0, 0, 0, 2, 0x08, 0x00];
    let mut other = other;
    other.resize(60, 0);
    let na = |target, solicited| NdRepr::NeighborAdvert {
        router: false,
        solicited,
        override_: true,
        target,
        target_ll: Some(NEXT),
    };
    let mut in1 = vec![other; 4 * 32];
    in1.push(nd(
        (MAC1, NEXT),
        a("2001:db8:2::88"),
        a("2001:db8:2::1"),
        na(a("2001:db8:2::88"), false),
    ));
    in1.push(nd((MAC1, NEXT), dst, a("2001:db8:2::1"), na(dst, true)));
    let (_, out1, s, _) = run_pcaps_logged("nd6answer", CONFIG, &frames, &in1);
    let forwarded: Vec<&Vec<u8>> = out1.iter().filter(|f| f[..6] == NEXT).collect();
    assert_eq!(forwarded.len(), 10, "{out1:02x?}");
    for f in forwarded {
        assert_eq!(&f[6..12], &MAC1);
        let mut want = frames[0][12..].to_vec();
        want[9] -= 1; // hop limit
        assert_eq!(&f[12..], &want[..]);
    }
    assert_eq!(s["control"]["nd_not_learned"], 1, "{s}");
    let n = s["neighbours"].as_array().unwrap();
    assert!(
        n.iter()
            .any(|e| e.as_str().unwrap().starts_with("2001:db8:2::77 ")
                && e.as_str().unwrap().contains("Reachable")),
        "{n:?}"
    );
    assert!(
        !n.iter()
            .any(|e| e.as_str().unwrap().starts_with("2001:db8:2::88")),
        "{n:?}"
    );
    assert_eq!(s["totals"]["balanced"], true, "{s}");
}
