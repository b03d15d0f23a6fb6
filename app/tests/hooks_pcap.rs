//! classify at ingress and filter at egress on crafted frames, through the
//! real pipeline (net_pcap in, net_pcap out, DPDK's ACL matching): the mark
//! classify sets is what filter matches on, first match wins, count rules
//! count without deciding, IPv4 options are skipped, non-first fragments
//! never match port rules, every drop lands under its reason, and a classify
//! and filter pair linked by lookahead decides as the unlinked pair does.

mod common;
use common::frames::{from_host_a, tcp, udp};
use common::*;
use hooks::testkit;

/// The classify hook of `CONFIG` and `LINKED`: DNS marked and classed,
/// 192.0.2.0/24 dropped.
macro_rules! classify_hook {
    () => {
        r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "classify"
name = "cls"
[[hook.rule]]
proto = "udp"
dport = 53
set_mark = 7
set_class = 3
[[hook.rule]]
src = "192.0.2.0/24"
action = "drop"
"#
    };
}

const CONFIG: &str = concat!(
    pcap_router_config!(),
    classify_hook!(),
    r#"
[[hook]]
point = "egress"
port = "net_pcap1"
kind = "filter"
name = "fw"
policy = "drop"
[[hook.rule]]
proto = "tcp"
dport = 23
action = "drop"
[[hook.rule]]
mark = 7
class = 3
action = "accept"
[[hook.rule]]
proto = "udp"
dport = "80-80"
action = "accept"
[[hook.rule]]
proto = "udp"
action = "count"
"#
);

const DST: [u8; 4] = [198, 51, 100, 9];

const A: [u8; 4] = [10, 0, 1, 2];

/// A non-first fragment (offset 1480) of a UDP datagram whose payload bytes
/// are a UDP header to ports 1234 -> 80: they are data, not a header.
fn later_fragment() -> Vec<u8> {
    let payload = testkit::udp(A, DST, 1234, 80).build_l4();
    from_host_a(testkit::ipv4(A, DST, 17, &payload).fragment(false, 1480)).build()
}

/// UDP to port 80 with IHL 6 (4 bytes of options, no-ops and end of list).
fn with_options() -> Vec<u8> {
    from_host_a(testkit::udp(A, DST, 5000, 80).ip_options(&[1, 1, 1, 0])).build()
}

#[test]
fn classify_marks_filter_decides_and_every_drop_has_its_reason() {
    let mut frames = Vec::new();
    frames.extend((0..10).map(|i| udp(A, DST, 5000 + i, 53))); // marked, accepted
    frames.extend((0..10).map(|i| udp(A, DST, 6000 + i, 80))); // accepted
    frames.extend((0..5).map(|i| udp([192, 0, 2, 7], DST, 7000 + i, 9))); // classify drop
    frames.extend((0..5).map(|i| tcp(A, DST, 8000 + i, 23, 0x02))); // filter drop
    frames.extend((0..3).map(|_| later_fragment())); // policy drop, counted
    frames.extend((0..2).map(|_| with_options())); // accepted (port 80 past options)

    let (_, out1, s, stderr) = run_pcaps_logged("hooks-pcap", CONFIG, &frames, &[]);
    assert!(
        stderr.contains("hook \"fw\" (filter) at egress of port 1"),
        "{stderr}"
    );
    let dport = |f: &Vec<u8>| {
        let l4 = 14 + usize::from(f[14] & 0x0f) * 4;
        u16::from_be_bytes([f[l4 + 2], f[l4 + 3]])
    };
    assert_eq!(out1.len(), 22, "10 DNS + 10 HTTP + 2 with options");
    assert_eq!(out1.iter().filter(|f| dport(f) == 53).count(), 10);
    assert_eq!(out1.iter().filter(|f| dport(f) == 80).count(), 12);
    assert!(out1.iter().all(|f| f[26..30] == [10, 0, 1, 2]));

    let drops = &s["totals"]["drops"];
    assert_eq!(drops["classify_rule"], 5);
    assert_eq!(drops["filter_rule"], 5);
    assert_eq!(drops["filter_policy"], 3);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    let hook = |name: &str| common::hook_report(&s, name).clone();
    let cls = hook("cls");
    assert_eq!(
        (&cls["seen"], &cls["accepted"], &cls["dropped"]),
        (&35.into(), &30.into(), &5.into())
    );
    assert_eq!(cls["stats"]["matched"], 15);
    let fw = hook("fw");
    assert_eq!(
        (&fw["seen"], &fw["accepted"], &fw["dropped"]),
        (&30.into(), &22.into(), &8.into())
    );
    assert_eq!(fw["stats"]["rule_accepted"], 22);
    assert_eq!(fw["stats"]["rule_dropped"], 5);
    assert_eq!(fw["stats"]["policy_dropped"], 3);
    assert_eq!(
        fw["stats"]["counted"], 3,
        "the count rule sees what no rule took"
    );
}

/// A filter that drops ssh under policy accept, behind a classify hook
/// that reads no ports.
const SSH_DROP: &str = concat!(
    pcap_router_config!(),
    r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "classify"
name = "cls"
[[hook.rule]]
src = "192.0.2.0/24"
action = "drop"

[[hook]]
point = "egress"
port = "net_pcap1"
kind = "filter"
name = "fw"
policy = "accept"
[[hook.rule]]
proto = "tcp"
dport = 22
action = "drop"
"#
);

/// A fragment of a TCP segment to DST: `l4` at `offset` bytes.
fn tcp_fragment(offset: u16, more: bool, l4: &[u8]) -> Vec<u8> {
    from_host_a(testkit::ipv4(A, DST, 6, l4).fragment(more, offset)).build()
}

/// RFC 1858 through the router (DPDK's ACL, the flow cache): with `proto tcp dport 22 drop` under policy accept, a first
/// fragment with 8 bytes of TCP (the ports, not the flags) and the
/// fragment at offset 1 (the flags) are dropped, each under its reason; a
/// later fragment matches no port rule and gets the policy. Fragments
/// accepted before (at offset 185) do not answer for the offset-1 ones of
/// the same addresses that follow them.
#[test]
fn tiny_and_overlapping_fragments_do_not_pass_a_port_rule() {
    // A SYN from port 1024 to 22: its ports (and sequence number) alone,
    // then the 8 bytes with its flags.
    let syn = testkit::tcp(A, DST, 1024, 22, 0x02)
        .seq(1)
        .window(1024)
        .build_l4();
    let (ports_only, flags) = (&syn[..8], &syn[8..16]);
    // Two bursts of later fragments, accepted.
    let mut frames: Vec<_> = (0..64)
        .map(|_| tcp_fragment(1480, false, &[0; 8]))
        .collect();
    frames.extend([
        tcp_fragment(0, true, ports_only),
        tcp_fragment(8, false, flags),
        tcp_fragment(16, false, &[0; 8]),
        tcp(A, DST, 1024, 22, 0x02),
        tcp(A, DST, 1024, 80, 0x02),
    ]);
    frames.extend((0..40).map(|_| tcp_fragment(8, true, flags)));
    let (_, out1, s, stderr) = run_pcaps_logged("hooks-frag", SSH_DROP, &frames, &[]);
    // Linked (docs/lookahead.md): the fragments are still the filter's to
    // judge; only the two whole segments carry an answer from ingress.
    let link = "the first egress hook of port 1 takes answers looked up at ingress";
    assert!(stderr.contains(link), "{stderr}");
    let fw = common::hook_report(&s, "fw");
    assert_eq!(fw["stats"]["answered_ahead"], 2, "{fw}");
    let offset = |f: &Vec<u8>| u16::from_be_bytes([f[20], f[21]]) & 0x1fff;
    assert_eq!(out1.len(), 64 + 1 + 1, "frames out of port 1");
    assert_eq!(out1.iter().filter(|f| offset(f) == 2).count(), 1);
    assert_eq!(out1.iter().filter(|f| offset(f) == 185).count(), 64);
    assert!(out1.iter().all(|f| offset(f) != 1 && f[36..38] != [0, 22]));
    let drops = &s["totals"]["drops"];
    assert_eq!(drops["tiny_fragment"], 1, "{s}");
    assert_eq!(drops["overlapping_fragment"], 41, "{s}");
    assert_eq!(drops["filter_rule"], 1, "{s}");
    assert_eq!(s["totals"]["dropped"], 43, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
}

/// A classify hook last at ingress and a stateless filter first at egress:
/// linked (one lookup at ingress, the filter's answer carried,
/// `docs/lookahead.md`).
const LINKED: &str = concat!(
    pcap_router_config!(),
    classify_hook!(),
    r#"
[[hook]]
point = "egress"
port = "net_pcap1"
kind = "filter"
name = "fw"
policy = "drop"
[[hook.rule]]
proto = "tcp"
dport = 23
action = "drop"
[[hook.rule]]
proto = "udp"
dport = "50-80"
action = "accept"
[[hook.rule]]
proto = "tcp"
action = "accept"
"#
);

/// Another ingress hook after classify (one that could rewrite frames, as
/// far as the link knows): the pair is no longer linked.
const AFTER_CLASSIFY: &str = r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "accept"
name = "after"
priority = 10
"#;

/// The same hooks linked and unlinked send the same frames and drop the
/// same ones under the same reasons; linked, every plain packet classify
/// let through was decided by its carried answer, and the others (IPv4
/// options, a later fragment) by the filter's own lookup.
#[test]
fn a_linked_classify_and_filter_decide_as_unlinked_ones() {
    let mut frames = Vec::new();
    for i in 0..240u16 {
        let src = if i % 7 == 0 { [192, 0, 2, 7] } else { A };
        let dport = [9, 23, 53, 60, 80, 443][usize::from(i % 6)];
        frames.push(match (i / 6) % 3 {
            0 => tcp(src, DST, 1000 + i, dport, 0x02),
            _ => udp(src, DST, 1000 + i, dport),
        });
    }
    frames.extend((0..4).map(|_| with_options()));
    frames.extend((0..4).map(|_| later_fragment()));

    let (_, out_l, s_l, err_l) = run_pcaps_logged("hooks-linked", LINKED, &frames, &[]);
    let unlinked = format!("{LINKED}{AFTER_CLASSIFY}");
    let (_, out_u, s_u, err_u) = run_pcaps_logged("hooks-unlinked", &unlinked, &frames, &[]);
    let link = "the first egress hook of port 1 takes answers looked up at ingress";
    assert!(err_l.contains(link), "{err_l}");
    assert!(!err_u.contains(link), "{err_u}");

    assert!(out_l.len() > 100, "{} frames out", out_l.len());
    assert_eq!(out_l, out_u, "the same frames out, in the same order");
    assert_eq!(s_l["totals"]["drops"], s_u["totals"]["drops"]);
    let drops = &s_l["totals"]["drops"];
    assert!(drops["classify_rule"].as_u64() > Some(0), "{drops}");
    assert!(drops["filter_rule"].as_u64() > Some(0), "{drops}");
    assert!(drops["filter_policy"].as_u64() > Some(0), "{drops}");
    let (fw_l, fw_u) = (hook_report(&s_l, "fw"), hook_report(&s_u, "fw"));
    for c in [
        "rule_accepted",
        "rule_dropped",
        "policy_dropped",
        "unparsed",
    ] {
        assert_eq!(fw_l["stats"][c], fw_u["stats"][c], "{c}");
    }
    // Every plain frame classify did not drop (its first match wins: a
    // DNS query from 192.0.2.7 is marked, not dropped).
    let plain_passed = 240 - drops["classify_rule"].as_u64().unwrap();
    assert_eq!(fw_l["stats"]["answered_ahead"], plain_passed);
    assert!(fw_u["stats"]["answered_ahead"].is_null());
    assert_eq!(hook_report(&s_l, "cls")["stats"]["lookahead_sets"], 1);
    for s in [&s_l, &s_u] {
        assert_eq!(s["totals"]["balanced"], true);
        assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    }
}
