//! The IPv6 path through the datapath on crafted frames: net_pcap0
//! (2001:db8:1::1/64) receives one frame of each kind from host A
//! (2001:db8:1::2), net_pcap1 (2001:db8:2::1/64) is the way to
//! 2001:db8:100::/48 via 2001:db8:2::2, a static neighbour. Asserted: the
//! exact bytes of each forwarded frame (hop limit - 1, the neighbour's
//! Ethernet header, extension headers untouched, padding trimmed), the
//! count of every IPv6 drop reason under the stage that made it, and the
//! punts (each reason is the stage test's; here their count, and that the
//! control plane took each).

mod common;
use common::frames::{udp, HOST_A_MAC as HOST_A, PCAP0_MAC as MAC0, PCAP1_MAC as MAC1};
use common::*;
use std::net::Ipv6Addr;

const NEIGH_22: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x22];

const CONFIG: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[route]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"

[[neighbour]]
address = "10.0.2.2"
mac = "02:bb:00:00:00:22"

[[neighbour]]
address = "2001:db8:2::2"
mac = "02:bb:00:00:00:22"
"#;

const A: &str = "2001:db8:1::2";
const US: &str = "2001:db8:1::1";
const FAR: &str = "2001:db8:100::9";

/// Next header values.
const UDP: u8 = 17;
const ICMPV6: u8 = 58;
const DEST_OPTS: u8 = 60;
const HOP_BY_HOP: u8 = 0;
const FRAGMENT: u8 = 44;

/// An IPv6 frame from host A to `dst_mac`: `src` → `dst`, first next header
/// `nh`, hop limit `hl`, `payload` after the fixed header.
fn frame(dst_mac: [u8; 6], src: &str, dst: &str, nh: u8, hl: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(dst_mac);
    f.extend(HOST_A);
    f.extend([0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend((payload.len() as u16).to_be_bytes());
    f.extend([nh, hl]);
    f.extend(src.parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
    f.extend(payload);
    f
}

/// A UDP datagram (ports 12345 → 53, 4 bytes of data, checksum 0).
fn udp6_payload() -> Vec<u8> {
    vec![0x30, 0x39, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4]
}

fn udp6(src: &str, dst: &str) -> Vec<u8> {
    frame(MAC0, src, dst, UDP, 64, &udp6_payload())
}

/// ICMPv6 of `ty` (code 0, 4 bytes of body; the checksum is the control
/// plane's to check).
fn icmp6(dst_mac: [u8; 6], src: &str, dst: &str, ty: u8) -> Vec<u8> {
    frame(dst_mac, src, dst, ICMPV6, 255, &[ty, 0, 0, 0, 0, 0, 0, 0])
}

/// An 8-byte extension header of kind `nh`'s chain: next header `next`,
/// length field `len`, PadN.
fn ext(next: u8, len: u8) -> Vec<u8> {
    vec![next, len, 1, 4, 0, 0, 0, 0]
}

/// What `f` looks like forwarded out of port 1 to `neigh`: the neighbour's
/// Ethernet header, hop limit - 1, the rest (extension headers included)
/// as it was, padding trimmed.
fn forwarded(f: &[u8], neigh: [u8; 6]) -> Vec<u8> {
    let total = 14 + 40 + usize::from(u16::from_be_bytes([f[18], f[19]]));
    let mut out = Vec::new();
    out.extend(neigh);
    out.extend(MAC1);
    out.extend(&f[12..total]);
    out[21] -= 1;
    out
}

#[test]
fn every_kind_of_ipv6_frame_ends_where_it_should() {
    // Forwarded: a UDP datagram behind a Destination Options header, and
    // one padded by 6 bytes.
    let mut with_opts = ext(UDP, 0);
    with_opts.extend(udp6_payload());
    let fwd_opts = frame(MAC0, A, FAR, DEST_OPTS, 64, &with_opts);
    let mut fwd_padded = udp6(A, "2001:db8:100::10");
    fwd_padded.extend([0xee; 6]);
    let v4 = udp([10, 0, 1, 2], [198, 51, 100, 9], 1000, 2000);

    let mut bad_version = udp6(A, FAR);
    bad_version[14] = 0x45;
    let mut long_payload = udp6(A, FAR);
    long_payload[19] += 1;
    // ICMPv6 to us behind chains that cannot be walked.
    let mut cut = ext(ICMPV6, 4);
    cut.extend([128, 0, 0, 0]);
    let hbh_second = [ext(HOP_BY_HOP, 0), ext(ICMPV6, 0), vec![128, 0, 0, 0]].concat();
    let nine: Vec<u8> = (0..9)
        .flat_map(|i| ext(if i == 8 { ICMPV6 } else { DEST_OPTS }, 0))
        .chain([128, 0, 0, 0])
        .collect();
    // A first fragment (offset 0, more) whose chain ends in a cut header.
    let first_frag = [vec![DEST_OPTS, 0, 0, 1, 0, 0, 0, 7], vec![ICMPV6, 3]].concat();
    let mut big = vec![0x30, 0x39, 0, 53, 0x05, 0xb5, 0, 0];
    big.resize(1461, 0x5a);

    let drops: Vec<(&str, Vec<u8>)> = vec![
        ("ipv6_bad_version", bad_version),
        ("ipv6_bad_payload_length", long_payload),
        ("ipv6_multicast_source", udp6("ff02::1", FAR)),
        ("ipv6_unspecified_source", udp6("::", FAR)),
        ("ipv6_loopback", udp6(A, "::1")),
        ("ipv6_ipv4_mapped", udp6("::ffff:10.0.1.2", FAR)),
        ("ipv6_link_local_destination", udp6(A, "fe80::99")),
        ("ipv6_unspecified_destination", udp6(A, "::")),
        ("ipv6_multicast_link_scope", udp6(A, "ff02::5")),
        ("ipv6_multicast_not_routed", udp6(A, "ff05::2")),
        ("ipv6_local_unsupported", udp6(A, US)),
        (
            "ipv6_multicast_unsupported",
            frame(
                [0x33, 0x33, 0, 0, 0, 1],
                A,
                "ff02::1",
                UDP,
                1,
                &udp6_payload(),
            ),
        ),
        (
            "ipv6_router_discovery",
            icmp6([0x33, 0x33, 0, 0, 0, 2], "fe80::2", "ff02::2", 133),
        ),
        (
            "ipv6_ext_header_truncated",
            frame(MAC0, A, US, DEST_OPTS, 64, &cut),
        ),
        (
            "ipv6_hop_by_hop_not_first",
            frame(MAC0, A, US, DEST_OPTS, 64, &hbh_second),
        ),
        (
            "ipv6_too_many_ext_headers",
            frame(MAC0, A, US, DEST_OPTS, 64, &nine),
        ),
        (
            "ipv6_chain_not_in_first_fragment",
            frame(MAC0, A, US, FRAGMENT, 64, &first_frag),
        ),
        // A unicast destination to forward in a frame to a group's MAC.
        ("not_unicast", {
            let mut f = udp6(A, FAR);
            f[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
            f
        }),
    ];
    let punts: Vec<(&str, Vec<u8>)> = vec![
        (
            "nd",
            icmp6([0x33, 0x33, 0xff, 0, 0, 1], A, "ff02::1:ff00:1", 135),
        ),
        ("local_icmp6", icmp6(MAC0, A, US, 128)),
        (
            "hop_limit_exceeded",
            frame(MAC0, A, FAR, UDP, 1, &udp6_payload()),
        ),
        ("no_route6", udp6(A, "2001:db8:999::1")),
        ("packet_too_big", frame(MAC0, A, FAR, UDP, 64, &big)),
        ("beyond_scope", udp6("fe80::2", FAR)),
        ("resolve6", udp6(A, "2001:db8:2::77")),
    ];
    // A frame to a group that is not ours: l2_input's.
    let other_group = frame(
        [0x33, 0x33, 0, 0, 0, 0xfb],
        A,
        "ff02::fb",
        UDP,
        1,
        &udp6_payload(),
    );

    let mut input = vec![fwd_opts.clone(), v4, fwd_padded.clone(), other_group];
    input.extend(drops.iter().map(|(_, f)| f.clone()));
    input.extend(punts.iter().map(|(_, f)| f.clone()));
    let (_, out1, s, stderr) = run_pcaps_logged("rt6pcap", CONFIG, &input, &[]);

    // Port 1: the forwarded frames, exactly, the IPv4 one between them
    // (and, once the control plane resolves IPv6 next hops, its neighbour
    // solicitations for the on-link destination: not this test's).
    let solicitation =
        |f: &Vec<u8>| f.len() > 54 && f[12..14] == [0x86, 0xdd] && f[20] == ICMPV6 && f[54] == 135;
    let out1: Vec<Vec<u8>> = out1.into_iter().filter(|f| !solicitation(f)).collect();
    assert_eq!(out1.len(), 3, "{out1:02x?}");
    assert_eq!(out1[0], forwarded(&fwd_opts, NEIGH_22));
    assert_eq!(out1[1][12..14], [0x08, 0x00]);
    assert_eq!(out1[2], forwarded(&fwd_padded, NEIGH_22));
    assert_eq!(out1[0][21], 63);
    assert_eq!(&out1[0][54..62], &ext(UDP, 0)[..], "the header untouched");
    assert_eq!(out1[2].len(), fwd_padded.len() - 6, "padding trimmed");

    // Every drop under the stage that made it.
    let mut ip: serde_json::Map<String, serde_json::Value> = serde_json::Map::new();
    for (reason, _) in &drops {
        ip.insert(reason.to_string(), 1.into());
    }
    let by_stage = &s["stage_drops"];
    assert_eq!(by_stage["ip_input"], serde_json::Value::Object(ip), "{s}");
    assert_eq!(
        by_stage["l2_input"],
        serde_json::json!({"not_unicast": 1}),
        "{s}"
    );
    for stage in ["ingress_hook", "egress_hook", "neigh_output", "local", "tx"] {
        assert_eq!(by_stage[stage], serde_json::json!({}), "{stage}: {s}");
    }
    // Each punt went to the control plane (within its budget).
    assert_eq!(s["totals"]["punted"], punts.len() as u64, "{s}");
    assert_eq!(s["totals"]["rx"], input.len() as u64);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);

    // At start: what was loaded, and each port's multicast reception.
    assert!(stderr.contains("IPv6 is forwarded"), "{stderr}");
    for port in [
        "port 0 (net_pcap0) IPv6 groups:",
        "port 1 (net_pcap1) IPv6 groups:",
    ] {
        assert!(stderr.contains(port), "{port:?} missing:\n{stderr}");
    }
}

/// The hooks see IPv6 as they see IPv4, through DPDK's ACL: classify at
/// ingress marks the datagram an IPv6 rule names, the egress filter (policy
/// drop, stateless and stateful) accepts it by that mark, drops the one an
/// IPv6 source rule names under `filter_rule`, gives the one no rule
/// matches the policy (`filter_policy`), and never lets an IPv4 rule match
/// IPv6 (the IPv4 datagram is accepted by its own rule). With policy
/// accept the unmatched one leaves as without hooks.
#[test]
fn ipv6_rules_classify_and_filter_routed_ipv6() {
    let v4 = udp([10, 0, 1, 2], [198, 51, 100, 9], 1000, 2000);
    let marked = udp6(A, FAR);
    let blocked = udp6("2001:db8:1::bad", FAR);
    let unmatched = frame(MAC0, A, "2001:db8:100::10", DEST_OPTS, 64, &{
        let mut p = ext(UDP, 0);
        p.extend(udp6_payload());
        p
    });
    let hooks = |policy: &str, stateful: bool| {
        mark_and_filter_hooks("", &format!("policy = \"{policy}\"\nstateful = {stateful}"))
    };
    for (policy, stateful) in [("drop", false), ("drop", true), ("accept", false)] {
        let config = format!("{CONFIG}{}", hooks(policy, stateful));
        let what = format!("policy {policy}, stateful {stateful}");
        let input = [
            v4.clone(),
            marked.clone(),
            blocked.clone(),
            unmatched.clone(),
        ];
        let (_, out1, s, _) = run_pcaps_logged("rt6hook", &config, &input, &[]);
        let v6_out: Vec<&Vec<u8>> = out1.iter().filter(|f| f[12..14] == [0x86, 0xdd]).collect();
        let v4_out = out1.iter().filter(|f| f[12..14] == [0x08, 0x00]).count();
        assert_eq!(v4_out, 1, "{what}: the IPv4 rule accepts");
        let fw = common::hook_report(&s, "fw");
        let cls = common::hook_report(&s, "cls");
        assert_eq!(cls["seen"], 4, "{what}: {s}");
        // The blocked datagram is marked too: the filter's source rule comes first.
        assert_eq!(cls["stats"]["matched"], 2, "{what}: {s}");
        assert_eq!(fw["seen"], 4, "{what}: {s}");
        assert_eq!(fw["stats"]["rule_accepted"], 2, "{what}: {s}");
        assert_eq!(fw["stats"]["rule_dropped"], 1, "{what}: {s}");
        let mut want = vec![forwarded(&marked, NEIGH_22)];
        if policy == "drop" {
            assert_eq!(
                s["stage_drops"]["egress_hook"],
                serde_json::json!({"filter_rule": 1, "filter_policy": 1}),
                "{what}: {s}"
            );
        } else {
            want.push(forwarded(&unmatched, NEIGH_22));
            assert_eq!(fw["stats"]["policy_accepted"], 1, "{what}: {s}");
        }
        let want: Vec<&Vec<u8>> = want.iter().collect();
        assert_eq!(v6_out, want, "{what}");
        assert_eq!(s["totals"]["balanced"], true);
        assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    }
}

/// IPv6 keys go through the hooks' flow caches: 35 datagrams of each of
/// two flows, more than one receive burst, classified and filtered with
/// each flow's rule answer (every one marked, the blocked flow's dropped),
/// the later bursts' keys answered from the caches (hits counted, every
/// key a hit or a miss). With `flow_cache = 0` nothing is counted.
#[test]
fn ipv6_flows_are_answered_from_the_hooks_flow_caches() {
    let marked = udp6(A, FAR);
    let blocked = udp6("2001:db8:1::bad", FAR);
    let hooks = |cache: &str| mark_and_filter_hooks(cache, &format!("policy = \"drop\"\n{cache}"));
    let input: Vec<Vec<u8>> = (0..70)
        .map(|i| {
            if i % 2 == 0 {
                marked.clone()
            } else {
                blocked.clone()
            }
        })
        .collect();
    for cache in ["", "flow_cache = 0"] {
        let config = format!("{CONFIG}{}", hooks(cache));
        let (_, out1, s, _) = run_pcaps_logged("rt6cache", &config, &input, &[]);
        assert_eq!(out1.len(), 35, "{cache}: the marked flow leaves");
        assert!(out1.iter().all(|f| *f == forwarded(&marked, NEIGH_22)));
        let cls = common::hook_report(&s, "cls");
        let fw = common::hook_report(&s, "fw");
        assert_eq!(cls["stats"]["matched"], 70, "{cache}: {s}");
        assert_eq!(fw["stats"]["rule_dropped"], 35, "{cache}: {s}");
        assert_eq!(fw["stats"]["rule_accepted"], 35, "{cache}: {s}");
        for h in [cls, fw] {
            let st = &h["stats"];
            if cache.is_empty() {
                let (hits, misses) = (
                    st["flow_cache_hits"].as_u64().unwrap_or(0),
                    st["flow_cache_misses"].as_u64().unwrap_or(0),
                );
                assert!(hits > 0 && misses >= 2, "{}: {st}", h["name"]);
                assert_eq!(hits + misses, 70, "{}: {st}", h["name"]);
            } else {
                assert!(st.get("flow_cache_hits").is_none(), "{}: {st}", h["name"]);
            }
        }
        assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    }
}

/// Classify at port 0's ingress marking UDP to 2001:db8:100::9 port 53
/// (with `classify` lines added), and a filter at port 1's egress (with
/// `filter` lines: policy and more) dropping 2001:db8:1::bad, accepting the
/// mark, and accepting UDP from 10.0.1.0/24 to port 2000 before dropping
/// the rest of IPv4.
fn mark_and_filter_hooks(classify: &str, filter: &str) -> String {
    format!(
        r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "classify"
name = "cls"
{classify}
[[hook.rule]]
dst = "2001:db8:100::9"
proto = "udp"
dport = 53
set_mark = 7

[[hook]]
point = "egress"
port = "net_pcap1"
kind = "filter"
name = "fw"
{filter}
[[hook.rule]]
src = "2001:db8:1::bad"
action = "drop"
[[hook.rule]]
mark = 7
action = "accept"
[[hook.rule]]
src = "10.0.1.0/24"
proto = "udp"
dport = 2000
action = "accept"
[[hook.rule]]
src = "0.0.0.0/0"
action = "drop"
"#
    )
}
