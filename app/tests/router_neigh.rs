//! Neighbour learning and the control plane's budgets under floods, through
//! the router on pcap vdevs: crafted ARP floods and address sweeps, and a
//! real neighbour that answers our request.
//!
//! Order without timing: the one worker polls port 0, then port 1, 32
//! frames each per round, and hands the punts of both to the control plane
//! through one ring, in order. So frames placed after `k` rounds of filler
//! (frames to another host's MAC, dropped in l2) on their port reach the
//! control plane after whatever the other port held in its first `k`
//! rounds: a neighbour's reply is placed after the packets that make us ask.

mod common;
use common::frames::{routed, HOST_A_MAC as HOST_A, PCAP0_MAC as MAC0, PCAP1_MAC as MAC1};
use common::*;
use hooks::testkit;
use hooks::wire::ethernet::ethertype;
use hooks::wire::ArpRepr;

/// Frames per round of the worker's poll of one port.
const ROUND: usize = 32;

/// `rounds` rounds of frames to another station, dropped as other_host.
fn filler(rounds: usize) -> Vec<Vec<u8>> {
    let f = testkit::ethernet([0x02, 0xcc, 0, 0, 0, 1], HOST_A, ethertype::IPV4, &[0; 46]);
    vec![f; rounds * ROUND]
}

/// An ARP packet (operation `op`) from `(mac, ip)` for `target_ip`, to
/// `dst`, padded to 60 bytes.
fn arp(
    op: u16,
    dst: [u8; 6],
    mac: [u8; 6],
    ip: [u8; 4],
    to_mac: [u8; 6],
    to_ip: [u8; 4],
) -> Vec<u8> {
    let repr = ArpRepr {
        operation: op,
        sender_mac: mac,
        sender_ip: ip.into(),
        target_mac: to_mac,
        target_ip: to_ip.into(),
    };
    let mut f = testkit::arp(dst, mac, &repr);
    f.resize(60, 0);
    f
}

/// A neighbour's ARP reply to us on port 1 (10.x address `ip`).
fn reply_to_port1(mac: [u8; 6], ip: [u8; 4], port_ip: [u8; 4]) -> Vec<u8> {
    arp(2, MAC1, mac, ip, MAC1, port_ip)
}

/// A gratuitous ARP request from `ip` (broadcast, sender = target).
fn gratuitous(mac: [u8; 6], ip: [u8; 4]) -> Vec<u8> {
    arp(1, [0xff; 6], mac, ip, [0; 6], ip)
}

/// A UDP frame received on port `port` (to its MAC) from `src` to `dst`.
fn udp_in(port_mac: [u8; 6], src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    testkit::udp(src, dst, 12345, 53)
        .macs(port_mac, HOST_A)
        .ident(0x1234)
        .payload(&[1, 2, 3, 4])
        .build()
}

fn count(frames: &[Vec<u8>], f: &[u8]) -> usize {
    frames.iter().filter(|x| x.as_slice() == f).count()
}

fn neighbours(s: &serde_json::Value) -> Vec<String> {
    s["neighbours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn assert_balanced(s: &serde_json::Value) {
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
}

/// Port 0 10.0.1.1/24, port 1 10.1.0.1/16.
const WIDE: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"

[[port]]
device = "net_pcap1"
address = "10.1.0.1/16"
"#;

const HOST_MAC: [u8; 6] = [0x02, 0xdd, 0, 0, 0, 0x07];
const HOST_IP: [u8; 4] = [10, 1, 200, 7];

#[test]
fn a_gratuitous_arp_flood_makes_no_entries_and_a_real_host_still_resolves() {
    // A table of 64; 300 gratuitous ARPs from a /16 (within the ARP budget),
    // then the host we asked for answers.
    let flood: Vec<Vec<u8>> = (0..300u32)
        .map(|n| {
            let ip = [10, 1, (n >> 8) as u8 + 1, n as u8];
            gratuitous([0x02, 0xee, 0, 0, (n >> 8) as u8, n as u8], ip)
        })
        .collect();
    let traffic: Vec<Vec<u8>> = (0..10)
        .map(|_| udp_in(MAC0, [10, 0, 1, 2], HOST_IP))
        .collect();
    let mut in1 = flood;
    in1.extend(filler(4));
    in1.push(reply_to_port1(HOST_MAC, HOST_IP, [10, 1, 0, 1]));
    let (_, out1, s, log) = run_pcaps_with(
        "rngratuitous",
        WIDE,
        &traffic,
        &in1,
        &["--neigh-capacity", "64"],
    );
    let sent = count(&out1, &routed(&traffic[0], MAC1, HOST_MAC));
    assert_eq!(
        sent, 10,
        "the host's traffic leaves with its MAC: {s}\n{log}"
    );
    assert_eq!(s["control"]["arp_not_learned"], 300, "{s}");
    assert_eq!(s["control"]["neigh_table_full"], 0, "{s}");
    assert_eq!(s["totals"]["drops"]["neigh_failed"], 0, "{s}");
    let n = neighbours(&s);
    assert_eq!(n.len(), 1, "only the host that answered: {n:?}");
    assert!(
        n[0].starts_with("10.1.200.7 ") && n[0].contains("Reachable"),
        "{n:?}"
    );
    assert_balanced(&s);
}

/// Port 0 10.0.1.1/24, port 1 10.0.2.1/24, 198.51.100.0/24 via 10.0.2.2 (no
/// static neighbour: resolved by ARP).
const VIA: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"
"#;

const GW_MAC: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x22];

/// ARP requests from `n` hosts of 10.0.`net`.10-209 for 10.0.`net`.250 (not
/// us), received on a port: a flood over the ARP punt budget.
fn arp_flood(net: u8, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let ip = [10, 0, net, 10 + (i % 200) as u8];
            let mac = [0x02, 0xf0, net, 0, (i >> 8) as u8, i as u8];
            arp(1, [0xff; 6], mac, ip, [0; 6], [10, 0, net, 250])
        })
        .collect()
}

/// 32 packets for the gateway's route arrive on port 0 first; the gateway
/// answers on port 1 after `flood0` on port 0 and `flood1` on port 1,
/// within one 10 ms period of the budgets. Returns the packets that left
/// by the gateway and the statistics.
fn gateway_answers_after(
    flood0: Vec<Vec<u8>>,
    flood1: Vec<Vec<u8>>,
    test: &str,
) -> (usize, serde_json::Value) {
    let traffic: Vec<Vec<u8>> = (0..32)
        .map(|_| udp_in(MAC0, [10, 0, 1, 2], [198, 51, 100, 9]))
        .collect();
    let mut in0 = traffic.clone();
    in0.extend(flood0);
    let mut in1 = filler(1);
    in1.extend(flood1);
    // The reply after the floods' first 20 rounds: over 512 ARPs seen.
    in1.extend(filler(20usize.saturating_sub(in1.len() / ROUND)));
    in1.push(reply_to_port1(GW_MAC, [10, 0, 2, 2], [10, 0, 2, 1]));
    let (_, out1, s, _) = run_pcaps_logged(test, VIA, &in0, &in1);
    (count(&out1, &routed(&traffic[0], MAC1, GW_MAC)), s)
}

#[test]
fn an_arp_flood_on_another_port_does_not_starve_the_gateway_s_answer() {
    let (sent, s) = gateway_answers_after(arp_flood(1, 2000), Vec::new(), "rnfloodport");
    assert_eq!(sent, 32, "{s}");
    let drops = &s["totals"]["drops"];
    assert!(
        drops["punt_rate_limited"].as_u64().unwrap() > 0,
        "the flood was limited: {s}"
    );
    assert_eq!(drops["neigh_failed"], 0, "{s}");
    assert_eq!(drops["control_ring_full"], 0, "{s}");
    assert_balanced(&s);
}

/// A load check, outside CI (`scripts/load-checks`, the `load-checks` profile
/// of .config/nextest.toml): the reply passes only if the control lcore has
/// asked for the gateway before the worker meets it, a race between two
/// threads that no order of the input settles. An idle machine wins it every
/// time; one whose main-lcore CPU is busy with other work may not.
#[test]
fn an_arp_flood_on_the_gateway_s_port_does_not_starve_its_answer() {
    // A flood long enough (625 rounds, over the budget in every period)
    // that the control plane has asked for the gateway before the worker
    // meets its reply at the end.
    let (sent, s) = gateway_answers_after(Vec::new(), arp_flood(2, 20_000), "rnfloodsame");
    assert_eq!(sent, 32, "the awaited reply passes ahead of the flood: {s}");
    let drops = &s["totals"]["drops"];
    let limited = drops["punt_rate_limited"].as_u64().unwrap()
        + drops["punt_source_limited"].as_u64().unwrap_or(0);
    assert!(limited > 0, "the flood was limited: {s}");
    assert_eq!(drops["neigh_failed"], 0, "{s}");
    assert_balanced(&s);
}

/// Port 0 10.0.1.1/24, port 1 10.1.0.1/16, 198.51.100.0/24 via 10.1.0.2.
const SWEPT: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"

[[port]]
device = "net_pcap1"
address = "10.1.0.1/16"

[[route]]
prefix = "198.51.100.0/24"
via = "10.1.0.2"
"#;

#[test]
fn a_sweep_of_unused_addresses_leaves_room_for_the_gateway_and_other_ports() {
    // 256 packets arriving on port 1 to unused addresses of its /16 (one
    // budget period of resolution punts), then, a period later, packets
    // for the gateway's route and for a new on-link neighbour of port 0.
    let sweep: Vec<Vec<u8>> = (0..256u32)
        .map(|n| udp_in(MAC1, [10, 1, 0, 9], [10, 1, 7 + (n >> 8) as u8, n as u8]))
        .collect();
    let to_gw: Vec<Vec<u8>> = (0..32)
        .map(|_| udp_in(MAC0, [10, 0, 1, 2], [198, 51, 100, 9]))
        .collect();
    let to_new: Vec<Vec<u8>> = (0..10)
        .map(|_| udp_in(MAC0, [10, 0, 1, 2], [10, 0, 1, 50]))
        .collect();
    let new_mac = [0x02, 0xdd, 0, 0, 0, 0x50];
    let gap = 1500; // rounds: tens of milliseconds, far less than 1.75 s
    let mut in0 = filler(gap);
    in0.extend(to_gw.iter().cloned());
    in0.extend(to_new.iter().cloned());
    in0.extend(filler(4));
    in0.push(arp(2, MAC0, new_mac, [10, 0, 1, 50], MAC0, [10, 0, 1, 1]));
    let mut in1 = sweep;
    in1.extend(filler(gap + 4));
    in1.push(reply_to_port1(
        [0x02, 0xbb, 0, 0, 0, 0x02],
        [10, 1, 0, 2],
        [10, 1, 0, 1],
    ));
    let (out0, out1, s, _) = run_pcaps_logged("rnsweep", SWEPT, &in0, &in1);
    let gw = count(&out1, &routed(&to_gw[0], MAC1, [0x02, 0xbb, 0, 0, 0, 0x02]));
    assert_eq!(gw, 32, "the gateway resolves from its reserve: {s}");
    let new = count(&out0, &routed(&to_new[0], MAC0, new_mac));
    assert_eq!(new, 10, "port 0 has room of its own: {s}");
    let drops = &s["totals"]["drops"];
    assert_eq!(drops["neigh_resolve_limit"], 128, "port 1's limit: {s}");
    assert_eq!(s["control"]["resolve_refused"], 128, "{s}");
    // Past half its limit, the port's resolutions send one request each.
    assert_eq!(s["control"]["resolve_single_probe"], 64, "{s}");
    assert_eq!(drops["neigh_failed"], 128, "{s}");
    assert_balanced(&s);
}
