//! The flow memo changes who does the work, never the result.
//!
//! * A burst of remembered flows is answered for classify and a stateless
//!   filter with the same frames out, the same drops and the same hook
//!   counters as with the memo off (`--flow-memo 0`), but for the hooks'
//!   flow caches, which never see the packets the memo answered.
//! * Drops are never remembered.
//! * A burst with a new flow or a dropped packet is split into runs, in
//!   order: the packets before a run of at least eight remembered flows meet
//!   their hooks, the run does not.
//! * A stateful filter confirms each remembered packet's connection state
//!   first: a packet whose connection moved meets the filter.

mod common;

use common::frames::{from_host_a, tcp, udp, UDP_DATA};
use common::*;
use hooks::testkit;

const CONFIG: &str = concat!(
    pcap_router_config!(),
    r#"
[[hook]]
name = "cls"
point = "ingress"
port = "net_pcap0"
kind = "classify"
[[hook.rule]]
proto = "udp"
dport = 53
action = "drop"
[[hook.rule]]
proto = "tcp"
set_mark = 7
[[hook.rule]]
proto = "udp"
set_class = 2

[[hook]]
name = "fw"
point = "egress"
port = "net_pcap1"
kind = "filter"
policy = "drop"
[[hook.rule]]
proto = "udp"
action = "count"
[[hook.rule]]
mark = 7
action = "accept"
[[hook.rule]]
class = 2
proto = "udp"
dport = "80-95"
action = "accept"
"#
);

const A: [u8; 4] = [10, 0, 1, 2];
const B: [u8; 4] = [198, 51, 100, 9];

/// A burst of 32 UDP packets, source ports 1000.., to `dport(i)`.
fn udp_burst(dport: impl Fn(u16) -> u16) -> Vec<Vec<u8>> {
    (0..32).map(|i| udp(A, B, 1000 + i, dport(i))).collect()
}

/// Eleven bursts; the memo answers bursts 1, 3, 4, 6 and 10 whole, 26
/// packets of burst 2 and 31 of burst 9. (A memo of one slot per flow
/// would lose some: of these 97 flows, four pairs share a first slot of
/// 4,096; each flow's second slot keeps them.)
fn traffic() -> Vec<Vec<u8>> {
    let http = udp_burst(|i| 80 + i % 8);
    let mut one_dns = http.clone();
    one_dns[5] = udp(A, B, 1005, 53);
    let mut one_new = http.clone();
    one_new[20] = udp(A, B, 3000, 90);
    let tcp_burst: Vec<_> = (0..32).map(|i| tcp(A, B, 2000 + i, 22, 0x02)).collect();
    // Burst 0's flows with another TTL, identification and payload: the
    // same flows, so the memo answers.
    let mut data = UDP_DATA;
    data[8] ^= 0xff;
    let same_flows: Vec<_> = (0..32)
        .map(|i| {
            from_host_a(testkit::udp(A, B, 1000 + i, 80 + i % 8))
                .ttl(9)
                .ident(0x6534)
                .payload(&data)
                .build()
        })
        .collect();
    // UDP the filter's policy drops (no accept rule for port 1000+).
    let refused = udp_burst(|i| 1000 + i);
    [
        &http,       // 0: recorded
        &http,       // 1: answered
        &one_dns,    // 2: classify drops #5: #0-5 meet the hooks, #6-31 answered
        &http,       // 3: answered
        &same_flows, // 4: answered
        &tcp_burst,  // 5: recorded
        &tcp_burst,  // 6: answered
        &refused,    // 7: dropped by the policy: not recorded
        &refused,    // 8: so met again
        &one_new,    // 9: #0-19 answered, #20 recorded alone, #21-31 answered
        &one_new,    // 10: answered
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect()
}

/// Both runs balanced with no mbuf left, and every hook counter as if
/// each hook had seen every packet, but the flow caches', which the
/// memo's answers never reach. Returns the hooks' statistics.
fn same_but_flow_caches(on: &serde_json::Value, off: &serde_json::Value) -> serde_json::Value {
    for s in [on, off] {
        assert_eq!(s["totals"]["balanced"], true);
        assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    }
    let hooks = |s: &serde_json::Value| {
        let mut h = s["hooks"].clone();
        for hook in h.as_array_mut().unwrap() {
            let stats = hook["stats"].as_object_mut().unwrap();
            stats.retain(|k, _| !k.starts_with("flow_cache"));
        }
        h
    };
    assert_eq!(hooks(on), hooks(off));
    hooks(on)
}

#[test]
fn the_memo_answers_remembered_bursts_and_changes_nothing_else() {
    let frames = traffic();
    let run = |tag: &str, slots: &str| {
        let (_, out1, stats, _) =
            run_pcaps_with(tag, CONFIG, &frames, &[], "1", &["--flow-memo", slots]);
        (out1, stats)
    };
    let (out_on, on) = run("memo-on", "4096");
    let (out_off, off) = run("memo-off", "0");

    // 11 bursts: 1 DNS packet and 64 refused dropped.
    assert_eq!(out_on.len(), 11 * 32 - 1 - 64);
    assert_eq!(out_on, out_off, "the same frames out, in order");
    let answered = 5 * 32 + 26 + 31;
    assert_eq!(on["totals"]["flow_memo"], answered, "{}", on["totals"]);
    assert_eq!(off["totals"]["flow_memo"], 0);
    assert_eq!(on["totals"]["drops"], off["totals"]["drops"]);
    assert_eq!(on["totals"]["drops"]["classify_rule"], 1);
    assert_eq!(on["totals"]["drops"]["filter_policy"], 64);
    let hooks = same_but_flow_caches(&on, &off);
    let fw = hooks
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "fw")
        .cloned()
        .unwrap();
    assert_eq!(fw["seen"], 11 * 32 - 1);
    assert_eq!(fw["stats"]["counted"], 9 * 32 - 1, "every UDP packet");
    assert_eq!(fw["stats"]["rule_accepted"], 11 * 32 - 1 - 64);
}

/// Case (6)'s kind of hooks: a stateful filter toward A refusing new
/// inbound, and one toward B accepting all (one connection table). B's
/// packets come in on port 0 too (and leave by it, a hairpin), so that
/// one pcap keeps both directions in order.
const STATEFUL: &str = concat!(
    pcap_router_config!(),
    r#"
[[neighbour]]
address = "10.0.1.2"
mac = "02:aa:00:00:00:12"

[[hook]]
name = "cls"
point = "ingress"
port = "net_pcap0"
kind = "classify"
[[hook.rule]]
proto = "tcp"
set_mark = 7

[[hook]]
name = "to_b"
point = "egress"
port = "net_pcap1"
kind = "filter"
policy = "accept"
stateful = true

[[hook]]
name = "to_a"
point = "egress"
port = "net_pcap0"
kind = "filter"
policy = "drop"
stateful = true
[[hook.rule]]
state = ["established"]
action = "accept"
"#
);

/// The memo answers a stateful filter too, but only for packets that
/// leave their connection as it was, and only while the connection is
/// as it was remembered. Every TCP segment moves its connection's
/// sequence window, so TCP packets always meet the filter (after a RST,
/// B's packets are new, and are dropped, as with the memo off); the UDP
/// flows' packets are answered once remembered.
#[test]
fn the_memo_answers_a_stateful_filter_only_while_the_connection_holds() {
    let burst = |f: &dyn Fn(u16) -> Vec<u8>| (0..32).map(f).collect::<Vec<_>>();
    let a_b = |flags: u8| burst(&|i| tcp(A, B, 40000 + i, 80, flags));
    let b_a = |flags: u8| burst(&|i| tcp(B, A, 80, 40000 + i, flags));
    let udp_a_b = burst(&|i| udp(A, B, 5000 + i, 53));
    let (syn, ack, rst) = (0x02, 0x10, 0x04);
    // Connections 16-31 reset by B, with 16 new UDP flows in the burst.
    let half_reset: Vec<Vec<u8>> = (16..32)
        .map(|i| tcp(B, A, 80, 40000 + i, ack | rst))
        .chain((0..16).map(|i| udp(A, B, 6000 + i, 53)))
        .collect();
    let frames: Vec<Vec<u8>> = [
        a_b(syn),        // 0: new, tracked: not remembered
        b_a(syn | ack),  // 1: the first replies: not remembered
        a_b(ack),        // 2: established (TCP: never remembered)
        b_a(ack),        // 3: established
        a_b(ack),        // 4: established
        b_a(ack),        // 5: established
        half_reset,      // 6: accepted; connections 16-31 are gone
        b_a(ack),        // 7: 0-15 established; 16-31 new, dropped
        a_b(ack),        // 8: 0-15 established; 16-31 new, accepted (not tracked)
        udp_a_b.clone(), // 9: new, tracked: not remembered
        udp_a_b.clone(), // 10: new, refreshed: remembered
        udp_a_b,         // 11: answered
    ]
    .into_iter()
    .flatten()
    .collect();
    let run = |tag: &str, slots: &str| {
        let (out0, out1, stats, _) =
            run_pcaps_with(tag, STATEFUL, &frames, &[], "1", &["--flow-memo", slots]);
        (out0, out1, stats)
    };
    let (a_on, b_on, on) = run("memo-ct-on", "4096");
    let (a_off, b_off, off) = run("memo-ct-off", "0");
    assert_eq!((a_on.len(), b_on.len()), (4 * 32, 7 * 32 + 16));
    assert_eq!(
        (&a_on, &b_on),
        (&a_off, &b_off),
        "the same frames out, in order"
    );
    assert_eq!(on["totals"]["flow_memo"], 32, "{}", on["totals"]);
    assert_eq!(on["totals"]["drops"], off["totals"]["drops"]);
    assert_eq!(on["totals"]["drops"]["filter_policy"], 16);
    same_but_flow_caches(&on, &off);
}
