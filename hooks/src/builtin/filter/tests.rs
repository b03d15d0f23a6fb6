//! The filter's tests: rules, policy, fragments, metadata, connection
//! tracking, workers, config errors and reloads.

use super::*;
use crate::builtin::test_util::*;
use crate::flow::tcp_flag::{ACK, RST, SYN};
use crate::rules::LinearBuilder;
use crate::testkit::{icmp_echo, ipv4, tcp, udp};
use crate::{DropReason, HookBurst, HookContext, HookPacket, Verdict};

const A: [u8; 4] = [10, 0, 1, 2];
const B: [u8; 4] = [10, 0, 2, 2];
const DROP_RULE: Verdict = Verdict::Drop(DropReason::FilterRule);
const DROP_POLICY: Verdict = Verdict::Drop(DropReason::FilterPolicy);

fn kind() -> FilterKind {
    FilterKind::new(Arc::new(LinearBuilder))
}

fn one(hook: &dyn Hook, pkt: Pkt, now: u64) -> Verdict {
    run(hook, HookPoint::Egress, &mut [pkt], now)[0]
}

#[test]
fn first_match_wins_and_the_policy_decides_the_rest() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "drop"
        [[rule]]
        proto = "tcp"
        dport = 23
        action = "drop"
        [[rule]]
        proto = "tcp"
        action = "accept"
        [[rule]]
        proto = "tcp"
        dport = 22
        action = "drop"
        "#,
    );
    let mut pkts = vec![
        Pkt::new(tcp(A, B, 1000, 23, SYN).build()),
        Pkt::new(tcp(A, B, 1000, 22, SYN).build()),
        Pkt::new(udp(A, B, 1000, 53).build()),
    ];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(v, vec![DROP_RULE, Verdict::Accept, DROP_POLICY]);
    assert_eq!(stat(&*h, "rule_dropped"), 1);
    assert_eq!(stat(&*h, "rule_accepted"), 1);
    assert_eq!(stat(&*h, "policy_dropped"), 1);
}

#[test]
fn what_cannot_be_parsed_gets_the_policy_never_a_bypass() {
    let k = kind();
    let accept_all_tcp = r#"
        [[rule]]
        proto = "tcp"
        action = "accept"
        "#;
    let h = build(
        &k,
        HookPoint::Egress,
        &format!("policy = \"drop\"\n{accept_all_tcp}"),
    );
    let bad = tcp(A, B, 1, 2, SYN).ihl(4).build();
    assert_eq!(one(&*h, Pkt::new(bad.clone()), 0), DROP_POLICY);
    let short = tcp(A, B, 1, 2, SYN).truncate(14 + 10).build();
    assert_eq!(one(&*h, Pkt::new(short), 0), DROP_POLICY);
    assert_eq!(stat(&*h, "unparsed"), 2);
    assert_eq!(
        stat(&*h, "policy_dropped"),
        2,
        "policy counters include them"
    );
    let h = build(
        &k,
        HookPoint::Egress,
        &format!("policy = \"accept\"\n{accept_all_tcp}"),
    );
    assert_eq!(one(&*h, Pkt::new(bad), 0), Verdict::Accept);
}

#[test]
fn count_rules_count_what_reaches_them_and_do_not_decide() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "accept"
        [[rule]]
        proto = "udp"
        action = "count"
        [[rule]]
        dport = 53
        proto = "udp"
        action = "drop"
        [[rule]]
        proto = "udp"
        action = "count"
        "#,
    );
    let mut pkts = vec![
        Pkt::new(udp(A, B, 1, 53).build()),
        Pkt::new(udp(A, B, 1, 54).build()),
        Pkt::new(tcp(A, B, 1, 53, SYN).build()),
    ];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(v, vec![DROP_RULE, Verdict::Accept, Verdict::Accept]);
    // rule 1 counts both UDP packets; rule 3 only the one rule 2 did not take.
    assert_eq!(stat(&*h, "counted"), 3);
}

/// RFC 1858 with a rule `proto tcp dport 22 drop` under policy accept:
/// the ports in a first fragment of 8 bytes, the flags in the one at
/// offset 1. Netfilter drops both; so does the filter, under reasons
/// of their own, and a later fragment past the header gets the policy.
#[test]
fn tiny_and_overlapping_fragments_do_not_pass_a_port_rule() {
    let k = kind();
    let ssh_drop = r#"
        policy = "accept"
        [[rule]]
        proto = "tcp"
        dport = 22
        action = "drop"
        "#;
    let h = build(&k, HookPoint::Egress, ssh_drop);
    // The RFC 1858 pair: the ports alone at offset 0, the flags at 8.
    let full = tcp(A, B, 1024, 22, SYN).seq(1).build_l4();
    let frag = |more, offset, l4: &[u8]| ipv4(A, B, 6, l4).fragment(more, offset).build();
    let mut pkts = vec![
        Pkt::new(frag(true, 0, &full[..8])),
        Pkt::new(frag(true, 8, &full[8..16])),
        Pkt::new(frag(false, 16, &[0; 8])),
        Pkt::new(frag(true, 0, &full)),
        Pkt::new(tcp(A, B, 1024, 22, SYN).build()),
        Pkt::new(tcp(A, B, 1024, 80, SYN).build()),
    ];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    let tiny = Verdict::Drop(DropReason::TinyFragment);
    let overlap = Verdict::Drop(DropReason::OverlappingFragment);
    assert_eq!(
        v,
        vec![
            tiny,
            overlap,
            Verdict::Accept,
            DROP_RULE,
            DROP_RULE,
            Verdict::Accept
        ]
    );
    assert_eq!(stat(&*h, "policy_accepted"), 2);
    // Stateful, the same: dropped before the connection table.
    let stateful = format!("stateful = true\n{ssh_drop}");
    let h = build(&kind(), HookPoint::Egress, &stateful);
    let mut pkts = pkts[..3].to_vec();
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(v, vec![tiny, overlap, Verdict::Accept]);
    // Rules that read no ports leave fragments to the rules, as
    // netfilter without a TCP match does.
    let h = build(
        &kind(),
        HookPoint::Egress,
        r#"
        policy = "accept"
        [[rule]]
        src = "10.9.0.0/16"
        action = "drop"
        "#,
    );
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(v, vec![Verdict::Accept; 3]);
}

#[test]
fn non_first_fragments_never_match_port_rules() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "drop"
        [[rule]]
        proto = "udp"
        dport = 80
        action = "accept"
        [[rule]]
        proto = "udp"
        src = "10.0.1.0/24"
        action = "count"
        "#,
    );
    let mut frag = udp(A, B, 1234, 80).build();
    frag[20] = 0x00;
    frag[21] = 185; // offset 1480
    frag[24..26].fill(0);
    let c = crate::wire::checksum::checksum(&frag[14..34]);
    frag[24..26].copy_from_slice(&c.to_be_bytes());
    let mut first = udp(A, B, 1234, 80).build();
    first[20] = 0x20; // MF, offset 0
    first[24..26].fill(0);
    let c = crate::wire::checksum::checksum(&first[14..34]);
    first[24..26].copy_from_slice(&c.to_be_bytes());
    let mut pkts = vec![Pkt::new(frag), Pkt::new(first)];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(v, vec![DROP_POLICY, Verdict::Accept]);
    assert_eq!(
        stat(&*h, "counted"),
        1,
        "the fragment still matches rules without ports"
    );
}

#[test]
fn marks_classes_and_ports_from_metadata() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "accept"
        [[rule]]
        mark = "0x10/0xf0"
        class = "2-3"
        out_port = "out1"
        in_port = 0
        action = "drop"
        "#,
    );
    let base = || Pkt::new(udp(A, B, 1, 2).build());
    let v = run(
        &*h,
        HookPoint::Egress,
        &mut [
            base().with(|m| (m.mark, m.class) = (0x1f, 3)),
            base().with(|m| (m.mark, m.class) = (0x20, 3)),
            base().with(|m| (m.mark, m.class) = (0x10, 4)),
            base().with(|m| (m.mark, m.class, m.in_port) = (0x10, 2, 5)),
        ],
        0,
    );
    assert_eq!(
        v,
        vec![DROP_RULE, Verdict::Accept, Verdict::Accept, Verdict::Accept]
    );
}

const STATEFUL_IN: &str = r#"
    policy = "drop"
    stateful = true
    conntrack_max = 16
    [[rule]]
    state = ["established", "related"]
    action = "accept"
    "#;
const STATEFUL_OUT: &str = r#"
    policy = "accept"
    stateful = true
    conntrack_max = 16
    "#;

#[test]
fn established_and_related_come_back_new_inbound_is_refused() {
    let k = kind();
    // Toward A (protected) and toward B; one shared table.
    let to_a = build(&k, HookPoint::Egress, STATEFUL_IN);
    let to_b = build(&k, HookPoint::Egress, STATEFUL_OUT);
    // A -> B SYN leaves toward B and is tracked.
    assert_eq!(
        one(&*to_b, Pkt::new(tcp(A, B, 40000, 80, SYN).build()), 1),
        Verdict::Accept
    );
    // B's SYN/ACK toward A is a reply: established.
    assert_eq!(
        one(&*to_a, Pkt::new(tcp(B, A, 80, 40000, SYN | ACK).build()), 2),
        Verdict::Accept
    );
    assert_eq!(
        one(&*to_a, Pkt::new(tcp(B, A, 80, 40000, ACK).build()), 3),
        Verdict::Accept
    );
    // A new connection from B to A is refused.
    assert_eq!(
        one(&*to_a, Pkt::new(tcp(B, A, 5555, 22, SYN).build()), 4),
        DROP_POLICY
    );
    // Echo: request out, reply in; an unsolicited echo request in is refused.
    assert_eq!(
        one(&*to_b, Pkt::new(icmp_echo(A, B, 8, 7, 0).build()), 5),
        Verdict::Accept
    );
    assert_eq!(
        one(&*to_a, Pkt::new(icmp_echo(B, A, 0, 7, 0).build()), 6),
        Verdict::Accept
    );
    assert_eq!(
        one(&*to_a, Pkt::new(icmp_echo(B, A, 8, 9, 0).build()), 7),
        DROP_POLICY
    );
    assert!(stat(&*to_a, "ct_entries") >= 2);
    assert_eq!(stat(&*to_a, "ct_established"), 3);
}

/// `tcp` with sequence number `seq` (frame offset 38).
fn tcp_at(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8, seq: u32) -> Pkt {
    let mut f = tcp(src, dst, sport, dport, flags).build();
    f[38..42].copy_from_slice(&seq.to_be_bytes());
    Pkt::new(f)
}

#[test]
fn a_blind_rst_is_dropped_and_the_connection_kept() {
    let k = kind();
    let to_a = build_named(&k, HookPoint::Egress, "to_a", STATEFUL_IN);
    let to_b = build_named(&k, HookPoint::Egress, "to_b", STATEFUL_OUT);
    let accept = Verdict::Accept;
    assert_eq!(one(&*to_b, tcp_at(A, B, 40000, 80, SYN, 0), 1), accept);
    assert_eq!(
        one(&*to_a, tcp_at(B, A, 80, 40000, SYN | ACK, 0), 2),
        accept
    );
    assert_eq!(one(&*to_b, tcp_at(A, B, 40000, 80, ACK, 1), 3), accept);
    // A RST from "B" with a sequence number far from B's: dropped,
    // whatever the rules say (toward B the policy accepts), counted.
    let blind = Verdict::Drop(DropReason::CtInvalid);
    assert_eq!(one(&*to_a, tcp_at(B, A, 80, 40000, RST, 1 << 30), 4), blind);
    assert_eq!(one(&*to_b, tcp_at(A, B, 40000, 80, RST, 1 << 30), 4), blind);
    assert_eq!(stat(&*to_a, "ct_invalid_dropped"), 1);
    assert_eq!(stat(&*to_a, "ct_rst_out_of_window"), 2);
    // The connection is still established: B's packets come back.
    assert_eq!(one(&*to_a, tcp_at(B, A, 80, 40000, ACK, 1), 5), accept);
    // B's own RST, in the window, ends it.
    assert_eq!(one(&*to_a, tcp_at(B, A, 80, 40000, RST, 1), 6), accept);
    assert_eq!(stat(&*to_a, "ct_tcp_reset"), 1);
    assert_eq!(one(&*to_a, tcp_at(B, A, 80, 40000, ACK, 1), 7), DROP_POLICY);
}

#[test]
fn a_syn_flood_leaves_room_for_a_new_flow() {
    let k = kind();
    let to_a = build(&k, HookPoint::Egress, STATEFUL_IN);
    let to_b = build(&k, HookPoint::Egress, STATEFUL_OUT);
    // 16 (the capacity) half-open connections, answered.
    for p in 0..16 {
        let (c, s) = (
            tcp_at(A, B, 1000 + p, 80, SYN, 0),
            tcp_at(B, A, 80, 1000 + p, SYN | ACK, 0),
        );
        assert_eq!(one(&*to_b, c, 1), Verdict::Accept);
        assert_eq!(one(&*to_a, s, 1), Verdict::Accept);
    }
    // A new connection is tracked: its reply comes back.
    assert_eq!(
        one(&*to_b, tcp_at(A, B, 5000, 22, SYN, 0), 2),
        Verdict::Accept
    );
    assert_eq!(
        one(&*to_a, tcp_at(B, A, 22, 5000, SYN | ACK, 0), 2),
        Verdict::Accept
    );
    assert_eq!(stat(&*to_b, "ct_early_drop"), 1);
    assert_eq!(stat(&*to_b, "ct_full_policy"), 0);
}

#[test]
fn tracked_flows_survive_a_rule_reload() {
    let k = kind();
    let to_b = build(&k, HookPoint::Egress, STATEFUL_OUT);
    assert_eq!(
        one(&*to_b, Pkt::new(udp(A, B, 5000, 53).build()), 1),
        Verdict::Accept
    );
    // The rules are rebuilt (a reload): the table is the kind's, not the instance's.
    let to_a = build(&k, HookPoint::Egress, STATEFUL_IN);
    assert_eq!(
        one(&*to_a, Pkt::new(udp(B, A, 53, 5000).build()), 2),
        Verdict::Accept
    );
    // Resizing while running is refused with a reason.
    let err = k
        .build(
            &args(&STATEFUL_IN.replace("conntrack_max = 16", "conntrack_max = 32")),
            &build_cx(HookPoint::Egress),
        )
        .err()
        .expect("resize refused");
    assert_eq!(err.field.as_deref(), Some("conntrack_max"));
}

#[test]
fn a_full_table_keeps_established_flows_and_gives_new_ones_the_policy() {
    let k = kind();
    let to_b = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "drop"
        stateful = true
        conntrack_max = 16
        [[rule]]
        state = ["established"]
        action = "accept"
        [[rule]]
        proto = "udp"
        action = "accept"
        "#,
    );
    let mut accepted = 0;
    for p in 0..64u16 {
        if one(&*to_b, Pkt::new(udp(A, B, 1000 + p, 53).build()), 10) == Verdict::Accept {
            accepted += 1;
            // Replied: established, never dropped early.
            assert_eq!(
                one(&*to_b, Pkt::new(udp(B, A, 53, 1000 + p).build()), 10),
                Verdict::Accept
            );
        }
    }
    assert_eq!(accepted, 16, "exactly the table's capacity of new flows");
    assert_eq!(stat(&*to_b, "ct_full_policy"), 48);
    assert_eq!(stat(&*to_b, "policy_dropped"), 48);
    assert_eq!(stat(&*to_b, "ct_early_drop"), 0);
    // A tracked flow still passes.
    assert_eq!(
        one(&*to_b, Pkt::new(udp(A, B, 1000, 53).build()), 11),
        Verdict::Accept
    );
}

/// Two workers: each its own connection table (in its own store) and
/// its own flow cache, no lock between them; the statistics sum what
/// each published.
#[test]
fn each_worker_tracks_in_its_own_table_and_publishes_its_counts() {
    let k = kind();
    let cx = BuildContext {
        workers: 2,
        ..build_cx(HookPoint::Egress)
    };
    let to_b = k.build(&args(STATEFUL_OUT), &cx).unwrap();
    let to_a = k.build(&args(STATEFUL_IN), &cx).unwrap();
    let mut stores = [WorkerStore::new(), WorkerStore::new()];
    let mut on_workers: Vec<[Box<dyn HookWorker>; 2]> = (0..2)
        .map(|w| {
            [
                to_b.worker(w, &mut stores[w]),
                to_a.worker(w, &mut stores[w]),
            ]
        })
        .collect();
    let mut one = |w: usize, hook: usize, f: Vec<u8>| {
        let mut p = Pkt::new(f);
        let mut views = [HookPacket::new(&mut p.data, &mut p.meta)];
        let mut v = [Verdict::Accept];
        let cx = HookContext {
            worker: w,
            point: HookPoint::Egress,
            port: 1,
            now_ns: 1,
        };
        let mut burst = HookBurst::new(&mut views, &mut v);
        on_workers[w][hook].process(&cx, &mut stores[w], &mut burst);
        v[0]
    };
    // Worker 0 tracks A -> B; its reply is accepted there, not on worker 1.
    assert_eq!(one(0, 0, udp(A, B, 5000, 53).build()), Verdict::Accept);
    assert_eq!(one(0, 1, udp(B, A, 53, 5000).build()), Verdict::Accept);
    assert_eq!(one(1, 1, udp(B, A, 53, 5000).build()), DROP_POLICY);
    assert_eq!(one(1, 0, udp(A, B, 6000, 53).build()), Verdict::Accept);
    // One entry in each worker's table, published and summed.
    assert_eq!(stat(&*to_a, "ct_entries"), 2);
    assert_eq!(stat(&*to_b, "ct_entries"), 2, "the same tables");
    assert_eq!(stat(&*to_a, "ct_established"), 1);
    assert_eq!(stat(&*to_a, "policy_dropped"), 1);
}

#[test]
fn config_errors_name_the_rule_and_field() {
    let k = kind();
    let cx = build_cx(HookPoint::Egress);
    let err = |t: &str| k.build(&args(t), &cx).err().expect("refused");
    let e = err("[[rule]]\nproto = \"tcp\"\naction = \"accept\"");
    assert_eq!(e.field.as_deref(), Some("policy"));
    let e = err("policy = \"drop\"\n[[rule]]\nstate = [\"new\"]\naction = \"accept\"");
    assert_eq!((e.rule, e.field.as_deref()), (Some(0), Some("state")));
    let e = err("policy = \"drop\"\n[[rule]]\nproto = \"tcp\"\naction = \"reject\"");
    assert_eq!((e.rule, e.field.as_deref()), (Some(0), Some("action")));
    let e = err("policy = \"drop\"\n[[rule]]\nproto = \"tcp\"\n[[rule]]\nproto = \"udp\"");
    assert_eq!(e.rule, Some(0));
    let e = err("policy = \"drop\"\nconntrack_max = 100");
    assert_eq!(e.field.as_deref(), Some("conntrack_max"));
    let e = err("policy = \"drop\"\nverbose = true");
    assert_eq!(e.field.as_deref(), Some("verbose"));
}

#[test]
fn a_rebuilt_instance_keeps_counting() {
    let k = FilterKind::new(Arc::new(LinearBuilder));
    let rules = "policy = \"drop\"\n[[rule]]\nproto = \"udp\"\naction = \"accept\"";
    let h = build(&k, HookPoint::Egress, rules);
    run(
        &*h,
        HookPoint::Egress,
        &mut [Pkt::new(udp([10, 0, 1, 2], [10, 0, 2, 2], 1, 2).build())],
        0,
    );
    let h2 = build(&k, HookPoint::Egress, rules);
    run(
        &*h2,
        HookPoint::Egress,
        &mut [Pkt::new(tcp([10, 0, 1, 2], [10, 0, 2, 2], 1, 2, 2).build())],
        0,
    );
    assert_eq!(stat(&*h2, "rule_accepted"), 1);
    assert_eq!(stat(&*h2, "policy_dropped"), 1);
    // Another instance name starts from zero.
    let other = args(rules);
    let mut cx = build_cx(HookPoint::Egress);
    cx.name = "other".into();
    let h3 = k.build(&other, &cx).unwrap();
    assert_eq!(stat(&*h3, "rule_accepted"), 0);
}

/// A plain summary (`set`) against the parse (`parse`) over 20,000 random
/// headers (`header`, biased toward plain ones), each written over a
/// summary a burst before left `dirty`: a summary not set is left as it
/// was and the parse finds no plain packet there (`plain`: TCP or UDP
/// ports read, not a fragment, right after the fixed header); a summary
/// set is the parse's. Returns how many were set.
fn plain_against_parse<S: Copy + PartialEq + std::fmt::Debug>(
    mut header: impl FnMut(&mut fastrand::Rng) -> Vec<u8>,
    dirty: S,
    set: fn(&mut S, &[u8]) -> bool,
    parse: fn(&[u8]) -> Option<S>,
    plain: fn(&S) -> bool,
) -> usize {
    let mut rng = fastrand::Rng::with_seed(23);
    let mut answered = 0;
    for case in 0..20_000 {
        let l3 = header(&mut rng);
        let mut s = dirty;
        let parsed = parse(&l3);
        if !set(&mut s, &l3) {
            assert_eq!(s, dirty, "case {case}: a summary not set is left as it was");
            assert!(
                !parsed.as_ref().is_some_and(plain),
                "case {case}: plain but not answered: {l3:02x?}"
            );
            continue;
        }
        answered += 1;
        assert_eq!(Some(s), parsed, "case {case}: {l3:02x?}");
    }
    assert!(answered > 400, "too few plain cases: {answered}");
    answered
}

/// Random bytes of up to `max` bytes, some of them (by `bias`) made likely
/// to be a plain header's.
fn random_header(
    rng: &mut fastrand::Rng,
    max: usize,
    bias: fn(&mut fastrand::Rng, &mut [u8]),
) -> Vec<u8> {
    let len = rng.usize(0..max);
    let mut l3: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
    bias(rng, &mut l3);
    l3
}

/// One chance in four that a bias is not applied.
fn likely(rng: &mut fastrand::Rng) -> bool {
    rng.u8(..4) != 0
}

/// The stateful gather's plain summary against `FlowSummary::parse`: where
/// it answers, it answers what the parse does (never a fragment); it
/// answers for every plain TCP and UDP packet.
#[test]
fn the_plain_summary_is_the_parsed_one() {
    use crate::flow::{proto, FlowSummary, Fragment};
    let bias = |rng: &mut fastrand::Rng, l3: &mut [u8]| {
        let len = l3.len();
        if len > 0 && likely(rng) {
            l3[0] = if rng.u8(..8) == 0 { rng.u8(..) } else { 0x45 };
        }
        if len > 9 && likely(rng) {
            l3[9] = [proto::TCP, proto::UDP, proto::ICMP, rng.u8(..)][rng.usize(..4)];
        }
        if len > 7 && likely(rng) {
            l3[6] &= [0x40, 0x00, 0x20, 0xff][rng.usize(..4)];
            l3[7] = if rng.bool() { 0 } else { rng.u8(..) };
        }
        if len > 3 && likely(rng) {
            let t = rng.u16(0..100);
            l3[2..4].copy_from_slice(&t.to_be_bytes());
        }
    };
    plain_against_parse(
        |rng| random_header(rng, 80, bias),
        FlowSummary {
            src: 7,
            sport: 9,
            fragment: Fragment::NonFirst,
            ..FlowSummary::default()
        },
        burst::set_plain_summary,
        FlowSummary::parse,
        |s| s.has_ports() && s.fragment == Fragment::None && s.l4_offset == 20,
    );
}

/// The stateful gather's plain IPv6 summary against `FlowSummary6::parse`
/// (headers biased toward version 6, TCP or UDP or an extension header
/// next, payload lengths around the header's): where it answers, it
/// answers what the parse does; it answers for every TCP and UDP packet
/// without an extension header.
#[test]
fn the_plain_ipv6_summary_is_the_parsed_one() {
    use crate::flow::{proto, Fragment};
    use crate::flow6::FlowSummary6;
    let bias = |rng: &mut fastrand::Rng, l3: &mut [u8]| {
        let len = l3.len();
        if len > 0 && likely(rng) {
            l3[0] = if rng.u8(..8) == 0 {
                rng.u8(..)
            } else {
                0x60 | l3[0] & 0x0f
            };
        }
        if len > 6 && likely(rng) {
            l3[6] = [proto::TCP, proto::UDP, 0, 44, 58, rng.u8(..)][rng.usize(..6)];
        }
        if len > 5 && likely(rng) {
            let p = rng.u16(0..70);
            l3[4..6].copy_from_slice(&p.to_be_bytes());
        }
    };
    plain_against_parse(
        |rng| random_header(rng, 100, bias),
        FlowSummary6 {
            src: [7; 16],
            sport: 9,
            fragment: Fragment::NonFirst,
            ..FlowSummary6::default()
        },
        burst::set_plain_summary6,
        FlowSummary6::parse,
        |s| s.has_ports() && s.fragment == Fragment::None && s.l4_offset == 40,
    );
}

/// IPv6 through a filter: rules naming IPv6 prefixes or no address match
/// it, IPv4 rules never do, the policy decides the rest; count rules count
/// IPv6 too; a chain that cannot be walked gets the policy; a later TCP
/// fragment at 8 bytes is dropped before the rules (RFC 5722); ports never
/// match a later fragment.
#[test]
fn ipv6_meets_the_rules_of_its_family_and_the_policy() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "drop"
        [[rule]]
        src = "10.0.0.0/8"
        action = "accept"
        [[rule]]
        proto = "udp"
        action = "count"
        [[rule]]
        src = "2001:db8:bad::/48"
        action = "drop"
        [[rule]]
        dst = "2001:db8:2::/48"
        proto = "tcp"
        dport = 22
        action = "accept"
        [[rule]]
        proto = "udp"
        dport = 53
        action = "accept"
        "#,
    );
    let a6 = "2001:db8:1::2";
    // Fragment header: next header TCP, offset 8 bytes, then 8 data bytes.
    let frag8 = [vec![6, 0, 0, 8, 0, 0, 0, 1], vec![0; 8]].concat();
    // A first fragment whose chain is cut: Destination Options, 2 bytes.
    let cut = [vec![60, 0, 0, 1, 0, 0, 0, 1], vec![6, 3]].concat();
    let mut pkts = vec![
        Pkt::tcp6(a6, "2001:db8:2::9", 40000, 22, SYN),
        Pkt::tcp6(a6, "2001:db8:3::9", 40000, 22, SYN),
        Pkt::udp6(a6, "2001:db8:3::9", 1000, 53),
        Pkt::udp6("2001:db8:bad::1", "2001:db8:3::9", 1000, 53),
        Pkt::udp6(a6, "2001:db8:3::9", 1000, 54),
        Pkt::new(udp([10, 0, 0, 1], B, 1, 2).build()),
        Pkt::ipv6(a6, "2001:db8:2::9", 44, &frag8),
        Pkt::ipv6(a6, "2001:db8:2::9", 44, &cut),
    ];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(
        v,
        vec![
            Verdict::Accept,
            DROP_POLICY,
            Verdict::Accept,
            DROP_RULE,
            DROP_POLICY,
            Verdict::Accept,
            Verdict::Drop(DropReason::OverlappingFragment),
            DROP_POLICY,
        ]
    );
    assert_eq!(stat(&*h, "rule_accepted"), 3);
    assert_eq!(stat(&*h, "rule_dropped"), 1);
    assert_eq!(stat(&*h, "policy_dropped"), 3);
    assert_eq!(stat(&*h, "unparsed"), 1, "the cut chain");
    assert_eq!(
        stat(&*h, "counted"),
        3,
        "the UDP datagrams the count rule saw"
    );
}

/// A stateful filter tracks IPv6 as IPv4: the replies of a flow its
/// rules accepted are established, a new flow the other way is not.
#[test]
fn a_stateful_filter_tracks_the_ipv6_flows_its_rules_accept() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "drop"
        stateful = true
        conntrack_max = 16
        [[rule]]
        state = ["established", "related"]
        action = "accept"
        [[rule]]
        dst = "2001:db8:2::/48"
        action = "accept"
        "#,
    );
    let mut pkts = vec![
        Pkt::tcp6("2001:db8:1::2", "2001:db8:2::9", 40000, 22, SYN),
        Pkt::tcp6("2001:db8:2::9", "2001:db8:1::2", 22, 40000, SYN | ACK),
        Pkt::tcp6("2001:db8:2::9", "2001:db8:1::2", 22, 40001, SYN),
    ];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 0);
    assert_eq!(v, vec![Verdict::Accept, DROP_POLICY, DROP_POLICY]);
    // (One burst: the SYN is committed after the burst's lookups.) The
    // reply in the next burst is established.
    let mut pkts = vec![
        Pkt::tcp6("2001:db8:2::9", "2001:db8:1::2", 22, 40000, SYN | ACK),
        Pkt::tcp6("2001:db8:2::9", "2001:db8:1::2", 22, 40001, SYN),
    ];
    let v = run(&*h, HookPoint::Egress, &mut pkts, 1);
    assert_eq!(v, vec![Verdict::Accept, DROP_POLICY]);
    assert_eq!(stat(&*h, "ct_new"), 4);
    assert_eq!(stat(&*h, "ct_established"), 1);
    assert_eq!(stat(&*h, "ct_entries"), 1);
}

/// `established_and_related_come_back_new_inbound_is_refused` in IPv6.
const A6: &str = "2001:db8:1::2";
const B6: &str = "2001:db8:2::9";
const ROUTER6: &str = "2001:db8:3::1";

/// An ICMPv6 message of `icmp_type` from `src` to `dst`: echo (128, 129)
/// with identifier `id`, or an error quoting the IPv6 packet of `quoted`.
fn icmp6(src: &str, dst: &str, icmp_type: u8, id: u16, quoted: Option<&Pkt>) -> Pkt {
    let mut m = vec![icmp_type, 0, 0, 0];
    m.extend(id.to_be_bytes());
    m.extend([0, 1]);
    if let Some(q) = quoted {
        m.extend(&q.data[14..]);
    }
    Pkt::ipv6(src, dst, 58, &m)
}

/// [`Pkt::tcp6`] with sequence number `seq` (frame offset 58).
fn tcp6_at(src: &str, dst: &str, sport: u16, dport: u16, flags: u8, seq: u32) -> Pkt {
    let mut p = Pkt::tcp6(src, dst, sport, dport, flags);
    p.data[58..62].copy_from_slice(&seq.to_be_bytes());
    p
}

#[test]
fn established_and_related_come_back_new_inbound_is_refused_ipv6() {
    let k = kind();
    let to_a = build(&k, HookPoint::Egress, STATEFUL_IN);
    let to_b = build(&k, HookPoint::Egress, STATEFUL_OUT);
    let accept = Verdict::Accept;
    // A -> B SYN leaves toward B and is tracked.
    let syn = Pkt::tcp6(A6, B6, 40000, 80, SYN);
    assert_eq!(one(&*to_b, syn.clone(), 1), accept);
    // B's SYN/ACK toward A is a reply: established.
    assert_eq!(
        one(&*to_a, Pkt::tcp6(B6, A6, 80, 40000, SYN | ACK), 2),
        accept
    );
    assert_eq!(one(&*to_a, Pkt::tcp6(B6, A6, 80, 40000, ACK), 3), accept);
    // A new connection from B to A is refused.
    assert_eq!(
        one(&*to_a, Pkt::tcp6(B6, A6, 5555, 22, SYN), 4),
        DROP_POLICY
    );
    // Echo: request out, reply in; an unsolicited echo request in is refused.
    assert_eq!(one(&*to_b, icmp6(A6, B6, 128, 7, None), 5), accept);
    assert_eq!(one(&*to_a, icmp6(B6, A6, 129, 7, None), 6), accept);
    assert_eq!(one(&*to_a, icmp6(B6, A6, 128, 9, None), 7), DROP_POLICY);
    // A router's packet too big about A's connection is related; one about
    // a connection nobody made is not.
    assert_eq!(one(&*to_a, icmp6(ROUTER6, A6, 2, 0, Some(&syn)), 8), accept);
    let stranger = Pkt::tcp6(A6, B6, 40009, 80, SYN);
    assert_eq!(
        one(&*to_a, icmp6(ROUTER6, A6, 1, 0, Some(&stranger)), 9),
        DROP_POLICY
    );
    // Neighbour discovery is untracked: no state rule matches it (here
    // the policy drops it; a stateless rule would be needed).
    let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
    ns.extend(
        "2001:db8:1::2"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    assert_eq!(one(&*to_a, Pkt::ipv6(B6, A6, 58, &ns), 10), DROP_POLICY);
    assert!(stat(&*to_a, "ct_entries") >= 2);
    assert_eq!(stat(&*to_a, "ct_established"), 3);
    assert_eq!(stat(&*to_a, "ct_related"), 1);
    assert_eq!(stat(&*to_a, "ct_untracked"), 1);
}

#[test]
fn an_ipv6_blind_rst_is_dropped_and_the_connection_kept() {
    let k = kind();
    let to_a = build(&k, HookPoint::Egress, STATEFUL_IN);
    let to_b = build(&k, HookPoint::Egress, STATEFUL_OUT);
    let accept = Verdict::Accept;
    assert_eq!(one(&*to_b, tcp6_at(A6, B6, 40000, 80, SYN, 0), 1), accept);
    assert_eq!(
        one(&*to_a, tcp6_at(B6, A6, 80, 40000, SYN | ACK, 0), 2),
        accept
    );
    assert_eq!(one(&*to_b, tcp6_at(A6, B6, 40000, 80, ACK, 1), 3), accept);
    // A RST from "B" far from B's sequence: dropped, whatever the rules.
    assert_eq!(
        one(&*to_a, tcp6_at(B6, A6, 80, 40000, RST, 0x4000_0000), 4),
        Verdict::Drop(DropReason::CtInvalid)
    );
    assert_eq!(stat(&*to_a, "ct_invalid_dropped"), 1);
    assert_eq!(stat(&*to_a, "ct_rst_out_of_window"), 1);
    // The connection goes on.
    assert_eq!(one(&*to_a, tcp6_at(B6, A6, 80, 40000, ACK, 1), 5), accept);
}

#[test]
fn a_full_table_gives_new_ipv6_flows_the_policy_and_ipv4_its_own_room() {
    let k = kind();
    let h = build(
        &k,
        HookPoint::Egress,
        r#"
        policy = "drop"
        stateful = true
        conntrack_max = 16
        [[rule]]
        state = ["established"]
        action = "accept"
        [[rule]]
        proto = "udp"
        dport = 53
        action = "accept"
        "#,
    );
    for port in 5000..5016 {
        assert_eq!(one(&*h, Pkt::udp6(A6, B6, port, 53), 1), Verdict::Accept);
        assert_eq!(one(&*h, Pkt::udp6(B6, A6, 53, port), 2), Verdict::Accept);
    }
    // Every entry replied: none to drop early, the next flow gets the
    // policy.
    assert_eq!(one(&*h, Pkt::udp6(A6, B6, 5016, 53), 3), DROP_POLICY);
    assert_eq!(stat(&*h, "ct_full_policy"), 1);
    assert_eq!(stat(&*h, "ct_refused_full"), 1);
    // IPv4 has a table of its own, of the same capacity, in the same burst.
    let mut mixed = vec![
        Pkt::new(udp(A, B, 5000, 53).build()),
        Pkt::udp6(A6, B6, 5017, 53),
        Pkt::new(udp(A, B, 5001, 53).build()),
    ];
    let v = run(&*h, HookPoint::Egress, &mut mixed, 4);
    assert_eq!(v, vec![Verdict::Accept, DROP_POLICY, Verdict::Accept]);
    assert_eq!(stat(&*h, "ct_entries"), 18);
    assert_eq!(stat(&*h, "ct_full_policy"), 2);
}
