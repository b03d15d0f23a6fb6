//! The DPDK ACL classifier agrees with the reference linear one.
//!
//! # What is checked
//!
//! * ~300 random rules over every field and 20,000 keys (many on the rules'
//!   range and prefix edges); first-match-wins across overlapping rules; a
//!   10,000-rule set;
//! * rule sets that use only some fields (so only some ACL input groups are
//!   defined): keys that differ only in the unused fields classify the same;
//! * each of DPDK's classify algorithms either gives the scalar one's
//!   results or, when the CPU or EAL's maximum SIMD width does not allow it,
//!   is refused with `ENOTSUP`: which one is expected is read from the CPU's
//!   flags, so nothing is skipped;
//! * IPv6 keys: random IPv6, IPv4 and address-less rules in one list agree
//!   with the linear classifier's `classify6` (in one context, in runs of 7,
//!   and split for lack of room), first match wins across the families
//!   numbered together, and a list without a rule for IPv6 answers 0 (it
//!   has no IPv6 context unless a later set has IPv6 rules); several rule
//!   sets as categories answer IPv6 keys each as its own linear classifier.
//!
//! # One EAL
//!
//! EAL runs once per process: the first test to need it starts it and the
//! others share it (`cargo nextest` runs each test in a process of its own,
//! plain `cargo test` runs them as threads of one). EAL's maximum SIMD width
//! is process-wide, so every test holds [`simd_width`]'s lock while it builds
//! and classifies.

mod common;
use common::*;
use fastpath::dpdk::acl::AclAlgorithm;
use fastpath::dpdk::{tsc, tsc_hz, AclBuilder, Eal};
use fastrand::Rng;
use hooks::flow::{proto, tcp_flag};
use hooks::rules::{
    Answers, Classifier, ClassifierBuilder, Family, Key, Key6, LinearBuilder, MatchRule, Prefix,
    Prefix6, CT_ESTABLISHED, CT_NEW, CT_RELATED, FLAG_L4, MAX_SETS,
};
use hooks::{FlowSummary, FlowSummary6, PacketMeta};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// A builder on the running EAL (started by the first caller).
fn acl() -> AclBuilder {
    static ACL: OnceLock<AclBuilder> = OnceLock::new();
    *ACL.get_or_init(|| {
        let mut argv = vec!["acl".to_string()];
        argv.extend(eal_args("acl", &[]));
        let (eal, _) = Eal::init(&argv).expect("EAL");
        let acl = AclBuilder::new(eal.socket_id());
        assert_eq!(acl.name(), "dpdk-acl");
        // EAL stays up until the process exits: other tests of this process
        // may use it at any time, so it is never cleaned up.
        std::mem::forget(eal);
        acl
    })
}

// Not in dpdk-sys's bindings: EAL's maximum SIMD width, which gates DPDK's
// vector classify algorithms (the EAL option --force-max-simd-bitwidth sets
// it too, and then locks it).
extern "C" {
    fn rte_vect_set_max_simd_bitwidth(bitwidth: u16) -> i32;
    fn rte_vect_get_max_simd_bitwidth() -> u16;
}

/// Sets EAL's maximum SIMD width to `bits` and holds it there (and every
/// other test of this process off DPDK) until the guard is dropped.
fn simd_width(bits: u16) -> MutexGuard<'static, ()> {
    static WIDTH: Mutex<()> = Mutex::new(());
    acl();
    // A test that failed while holding the lock leaves nothing half done.
    let guard = WIDTH.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: EAL is running; the width is read when a context is created or
    // its algorithm set, and every test that does so holds `WIDTH`.
    let ret = unsafe { rte_vect_set_max_simd_bitwidth(bits) };
    assert_eq!(ret, 0, "rte_vect_set_max_simd_bitwidth({bits}) refused");
    // SAFETY: a plain read of EAL's setting.
    assert_eq!(unsafe { rte_vect_get_max_simd_bitwidth() }, bits);
    guard
}

/// EAL's default maximum SIMD width on x86 (`RTE_VECT_DEFAULT_SIMD_BITWIDTH`).
const DEFAULT_WIDTH: u16 = 256;

#[test]
fn no_rules_classify_to_zero() {
    let _w = simd_width(DEFAULT_WIDTH);
    let c = acl().build(&[]).expect("empty rule set");
    let mut res = [9u32; 3];
    c.classify(&[Key::default(); 3], &mut res);
    assert_eq!(res, [0; 3]);
}

#[test]
fn first_match_wins_across_overlapping_rules() {
    let _w = simd_width(DEFAULT_WIDTH);
    let acl = acl();
    let net10 = Prefix::new(0x0a00_0000, 8);
    let rules = vec![
        // 1: ssh to 10/8.
        MatchRule {
            proto: Some(proto::TCP),
            dst: Some(net10),
            dport: Some((22, 22)),
            ..MatchRule::any()
        },
        // 2: established or related TCP anywhere.
        MatchRule {
            proto: Some(proto::TCP),
            ct_states: CT_ESTABLISHED | CT_RELATED,
            ..MatchRule::any()
        },
        // 3: anything to 10/8.
        MatchRule {
            dst: Some(net10),
            ..MatchRule::any()
        },
        // 4: never wins over 1 (same condition, later).
        MatchRule {
            proto: Some(proto::TCP),
            dst: Some(Prefix::new(0x0a00_0001, 32)),
            dport: Some((22, 22)),
            ..MatchRule::any()
        },
        // 5: SYN without ACK.
        MatchRule {
            proto: Some(proto::TCP),
            tcp_flags: Some((tcp_flag::SYN, tcp_flag::SYN | tcp_flag::ACK)),
            ..MatchRule::any()
        },
        // 6: everything.
        MatchRule::any(),
    ];
    let a = acl.build(&rules).expect("acl");
    let l = LinearBuilder.build(&rules).unwrap();
    let out = 0x0b00_0001;
    let in10 = 0x0a00_0001;
    let syn = tcp_flag::SYN;
    let cases = [
        (key(proto::TCP, 1, in10, 1000, 22, syn, CT_ESTABLISHED), 1),
        (key(proto::TCP, 1, in10, 1000, 23, syn, CT_ESTABLISHED), 2),
        (key(proto::TCP, 1, in10, 1000, 23, syn, CT_RELATED), 2),
        (key(proto::TCP, 1, in10, 1000, 23, syn, CT_NEW), 3),
        (key(proto::TCP, 1, out, 1000, 22, syn, CT_NEW), 5),
        (
            key(proto::TCP, 1, out, 1000, 22, syn | tcp_flag::ACK, CT_NEW),
            6,
        ),
        (key(proto::TCP, 1, out, 1000, 22, syn, 0), 5),
        (key(proto::UDP, 1, in10, 1000, 22, 0, CT_ESTABLISHED), 3),
        (key(proto::UDP, 1, out, 1000, 22, 0, CT_ESTABLISHED), 6),
    ];
    let keys: Vec<Key> = cases.iter().map(|c| c.0).collect();
    let want: Vec<u32> = cases.iter().map(|c| c.1).collect();
    assert_eq!(classify_all(&*l, &keys, 32), want, "linear");
    assert_eq!(classify_all(&*a, &keys, 32), want, "acl");

    // A later fragment of an ssh packet: no L4, so not rule 1 (ports) and
    // not rule 5 (flags).
    let frag = FlowSummary {
        src: 1,
        dst: in10,
        proto: proto::TCP,
        l4: false,
        ..FlowSummary::default()
    };
    let k = Key::new(&frag, &PacketMeta::received_on(0), CT_NEW);
    let mut r = [0u32];
    a.classify(&[k], &mut r);
    assert_eq!(r, [3]);
}

#[test]
fn random_rules_on_every_field_agree_with_linear() {
    let _w = simd_width(DEFAULT_WIDTH);
    let acl = acl();
    let mut rng = Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let pools = Pools::new(&mut rng);
    let rules: Vec<MatchRule> = (0..300).map(|_| random_rule(&mut rng, &pools)).collect();
    let keys = aimed_keys(&mut rng, &rules, &pools, 20_000);
    let a = acl.build_acl(&rules).expect("acl build");
    assert_eq!(a.fields(), 14, "every group used");
    let l = LinearBuilder.build(&rules).unwrap();
    let want = classify_all(&*l, &keys, 32);
    // The keys must exercise the rules, not just miss them all.
    let hits = want.iter().filter(|&&r| r != 0).count();
    assert!(hits > keys.len() / 4, "only {hits} keys matched");
    let mut distinct = want.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        distinct.len() > 100,
        "only {} distinct results",
        distinct.len()
    );
    check_bursts("differential", &a, &rules, &keys, &want);
}

#[test]
fn random_rules_in_runs_of_7_merge_to_the_first_match() {
    let _w = simd_width(DEFAULT_WIDTH);
    let acl = acl();
    let mut rng = Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let pools = Pools::new(&mut rng);
    let rules: Vec<MatchRule> = (0..300).map(|_| random_rule(&mut rng, &pools)).collect();
    let keys = aimed_keys(&mut rng, &rules, &pools, 20_000);
    let want = classify_all(&*LinearBuilder.build(&rules).unwrap(), &keys, 32);
    let small = acl
        .with_rules_per_context(7)
        .build_acl(&rules)
        .expect("runs of 7");
    assert!(small.contexts() >= 300 / 7, "{small:?}");
    check_bursts("runs of 7 rules", &small, &rules, &keys, &want);
}

/// Several rule sets in one classifier, one ACL category each (what a
/// lookahead uses): each set answers as its own classifier would, in one
/// context and split into runs of 7 rules, in bursts of every size; the
/// first set is also what `classify` answers.
#[test]
fn rule_sets_as_categories_answer_each_set_alone() {
    let _w = simd_width(DEFAULT_WIDTH);
    let mut rng = Rng::with_seed(0x5e75_0f0a_c1a5_5e50);
    let pools = Pools::new(&mut rng);
    let sets: Vec<Vec<MatchRule>> = [300, 100, 40]
        .iter()
        .map(|&n| (0..n).map(|_| random_rule(&mut rng, &pools)).collect())
        .collect();
    let keys = aimed_keys(&mut rng, &sets.concat(), &pools, 20_000);
    let want = each_set_alone(&sets, &keys);
    // A classifier of one set answers it in [0], the others 0.
    let one = acl().build_acl(&sets[0]).expect("one set");
    let mut got = vec![[u32::MAX; MAX_SETS]; keys.len()];
    for (k, r) in keys.chunks(64).zip(got.chunks_mut(64)) {
        one.classify_sets(k, r);
    }
    assert!(got
        .iter()
        .zip(&want[0])
        .all(|(g, &w)| g[0] == w && g[1..].iter().all(|&x| x == 0)));
    let too_many: Vec<&[MatchRule]> = vec![&sets[0]; MAX_SETS + 1];
    assert!(acl().build_acl_sets(&too_many).is_err());
}

/// A test per rule set of [`SUBSETS`], by name.
macro_rules! subset_tests {
    ($($test:ident: $name:literal,)*) => {$(
        #[test]
        fn $test() {
            let i = SUBSETS.iter().position(|s| s.name == $name).expect($name);
            subset(&SUBSETS[i], 0x5eed_0f5a_b5e7_0001 + i as u64);
        }
    )*};
}

subset_tests! {
    rules_on_proto_only_agree_and_ignore_other_bytes: "proto",
    rules_on_proto_and_dst_agree_and_ignore_other_bytes: "proto+dst",
    rules_on_the_5_tuple_agree_and_ignore_other_bytes: "5-tuple",
    rules_on_mark_only_agree_and_ignore_other_bytes: "mark",
    rules_on_ports_only_agree_and_ignore_other_bytes: "in_port/out_port",
    rules_on_states_only_agree_and_ignore_other_bytes: "states",
    rules_on_vlan_and_class_agree_and_ignore_other_bytes: "vlan+class",
    rules_on_tcp_flags_and_dscp_agree_and_ignore_other_bytes: "tcp_flags+dscp",
}

#[test]
fn subset_tests_cover_every_subset() {
    // A subset added to SUBSETS without a test above would go untested.
    let tested = [
        "proto",
        "proto+dst",
        "5-tuple",
        "mark",
        "in_port/out_port",
        "states",
        "vlan+class",
        "tcp_flags+dscp",
    ];
    let names: Vec<&str> = SUBSETS.iter().map(|s| s.name).collect();
    assert_eq!(names, tested);
}

/// The differential test on a rule set that uses only some fields (every
/// ACL input group is absent from some of them, present in others), in one
/// context and split into runs of 7 rules; then keys that matched, with
/// every byte the rules do not read scrambled, still classify the same.
fn subset(sub: &Subset, seed: u64) {
    let _w = simd_width(DEFAULT_WIDTH);
    let acl = acl();
    let mut rng = Rng::with_seed(seed);
    let pools = Pools::new(&mut rng);
    // Rules with at least one condition (an empty one would hide all
    // later ones).
    let rules: Vec<MatchRule> = (0..150)
        .map(|_| loop {
            let mut r = random_conditions_p(&mut rng, &pools, 80);
            (sub.keep)(&mut r);
            if r != MatchRule::any() {
                return r;
            }
        })
        .collect();
    let keys = aimed_keys(&mut rng, &rules, &pools, 5000);
    let a = acl.build_acl(&rules).expect(sub.name);
    assert_eq!(a.fields(), sub.fields, "{}: {a:?}", sub.name);
    let l = LinearBuilder.build(&rules).unwrap();
    let want = classify_all(&*l, &keys, 32);
    check_bursts(sub.name, &a, &rules, &keys, &want);
    let small = acl
        .with_rules_per_context(7)
        .build_acl(&rules)
        .expect(sub.name);
    assert!(small.contexts() >= 150 / 7, "{small:?}");
    assert_eq!(small.fields(), sub.fields, "{}: split", sub.name);
    check_bursts(sub.name, &small, &rules, &keys, &want);

    // The matched keys with their other bytes scrambled.
    let matched: Vec<usize> = (0..keys.len()).filter(|&i| want[i] != 0).collect();
    assert!(
        matched.len() > keys.len() / 10,
        "{}: too few matches ({} of {})",
        sub.name,
        matched.len(),
        keys.len()
    );
    let scrambled: Vec<Key> = matched
        .iter()
        .map(|&i| {
            let mut b = *keys[i].as_bytes();
            for (j, x) in b.iter_mut().enumerate() {
                if !sub.bytes.iter().any(|&(a, b)| (a..b).contains(&j)) {
                    *x = rng.u64(..) as u8;
                }
            }
            Key::from_bytes(b)
        })
        .collect();
    let same: Vec<u32> = matched.iter().map(|&i| want[i]).collect();
    assert_eq!(
        classify_all(&*l, &scrambled, 32),
        same,
        "{}: linear reads only the subset's bytes",
        sub.name
    );
    assert_eq!(classify_all(&a, &scrambled, 32), same, "{}", sub.name);
    assert_eq!(classify_all(&small, &scrambled, 32), same, "{}", sub.name);
}

#[test]
fn ten_thousand_rules_build_in_one_context_and_agree_with_linear() {
    let _w = simd_width(DEFAULT_WIDTH);
    let acl = acl();
    let mut rng = Rng::with_seed(0x0123_4567_89ab_cdef);
    let rules = firewall_rules(&mut rng, 10_000);
    let t = Instant::now();
    let a = acl.build_acl(&rules).expect("10,000 rules build");
    println!(
        "10,000 rules ({} ACL rules, {} contexts) built in {:.2?}",
        a.acl_rules(),
        a.contexts(),
        t.elapsed()
    );
    assert_eq!(a.contexts(), 1, "{a:?}");
    let keys = keys_for(&mut rng, &rules, 1000);
    let l = LinearBuilder.build(&rules).unwrap();
    let want = classify_all(&*l, &keys, 32);
    // Every aimed key (half of them) matches its rule or an earlier one.
    assert!(want.iter().filter(|&&r| r != 0).count() >= 500);
    assert_eq!(classify_all(&a, &keys, 32), want);
}

/// With 1,000 rules (firewall-like ones: every rule names a destination, so
/// random keys miss them all; then 5-tuple ones), the ACL agrees with the
/// linear classifier in 32-key bursts. The per-key costs are printed for the
/// record only: tests assert behaviour, and what the ACL costs is measured by
/// `fastpath-bench hooks` (bench/RESULTS.md).
fn acl_agrees_with_linear(
    name: &str,
    rules: impl Fn(&mut Rng, usize) -> Vec<MatchRule>,
    seed: u64,
) {
    let _w = simd_width(DEFAULT_WIDTH);
    let mut rng = Rng::with_seed(seed);
    let rules = rules(&mut rng, 1000);
    let a = acl().build_acl(&rules).expect("1,000 rules");
    let l = LinearBuilder.build(&rules).unwrap();
    let keys = keys_for(&mut rng, &rules, 4096);
    assert_eq!(
        classify_all(&a, &keys, 32),
        classify_all(&*l, &keys, 32),
        "{name}"
    );
    let (ns, cyc) = burst_cost(&a, &keys, 50);
    let (lns, lcyc) = burst_cost(&*l, &keys, 2);
    println!(
        "1,000 {name} rules ({} ACL rules, {} context), 32-key bursts: dpdk-acl {ns:.1} ns/key \
         ({cyc:.0} TSC cycles, TSC {} MHz); linear {lns:.0} ns/key ({lcyc:.0} cycles)",
        a.acl_rules(),
        a.contexts(),
        tsc_hz() / 1_000_000
    );
}

#[test]
fn acl_agrees_with_linear_on_1000_firewall_rules() {
    acl_agrees_with_linear("firewall", firewall_rules, 0xfeed_f00d_dead_beef);
}

#[test]
fn acl_agrees_with_linear_on_1000_5_tuple_rules() {
    acl_agrees_with_linear("5-tuple", five_tuple_rules, 0xfeed_f00d_dead_bef0);
}

// ---------------------------------------------------------------------------
// IPv6 keys

/// Random rules over every field, IPv6, IPv4 and address-less ones mixed in
/// one list: IPv6 keys classify as the linear classifier's `classify6` (in
/// one context, in runs of 7 rules, and with a second rule set, which IPv6
/// ignores); IPv4 keys still classify as its `classify`.
#[test]
fn ipv6_random_mixed_rules_agree_with_linear() {
    let _w = simd_width(DEFAULT_WIDTH);
    let mut rng = Rng::with_seed(0x1b6e_0f5a_5eed_0006);
    let pools = Pools::new(&mut rng);
    let pools6 = Pools6::new(&mut rng);
    let rules: Vec<MatchRule> = (0..300)
        .map(|_| random_rule6(&mut rng, &pools, &pools6))
        .collect();
    for family in [Some(Family::Ipv4), Some(Family::Ipv6), None] {
        let n = rules.iter().filter(|r| r.family() == family).count();
        assert!(n > 50, "{family:?}: only {n} rules");
    }
    let keys = aimed_keys6(&mut rng, &rules, &pools, &pools6, 20_000);
    let l = LinearBuilder.build(&rules).unwrap();
    let want = classify_all(&*l, &keys, 32);
    let hits = want.iter().filter(|&&r| r != 0).count();
    assert!(hits > keys.len() / 4, "only {hits} keys matched");
    let mut distinct = want.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        distinct.len() > 60,
        "only {} distinct results",
        distinct.len()
    );

    let a = acl().build_acl(&rules).expect("acl build");
    let expanded: usize = rules
        .iter()
        .filter(|r| r.applies_to(Family::Ipv6))
        .map(|r| r.states().count().max(1))
        .sum();
    assert_eq!(a.acl_rules6(), expanded, "{a:?}");
    println!("300 mixed rules: {a:?}");
    assert!(a.contexts6() >= 1, "{a:?}");
    check_bursts("ipv6", &a, &rules, &keys, &want);

    let small = acl()
        .with_rules_per_context(7)
        .build_acl(&rules)
        .expect("runs of 7");
    assert!(small.contexts6() >= 200 / 7, "{small:?}");
    check_bursts("ipv6, runs of 7", &small, &rules, &keys, &want);

    let other: Vec<MatchRule> = (0..50)
        .map(|_| random_rule6(&mut rng, &pools, &pools6))
        .collect();
    let sets = acl().build_acl_sets(&[&rules, &other]).expect("two sets");
    check_bursts("ipv6, two sets", &sets, &rules, &keys, &want);

    let keys4 = aimed_keys(&mut rng, &rules, &pools, 5000);
    let want4 = classify_all(&*l, &keys4, 32);
    assert!(want4.iter().filter(|&&r| r != 0).count() > keys4.len() / 10);
    check_bursts("ipv4 of a mixed list", &a, &rules, &keys4, &want4);
}

/// Several rule sets of mixed families in one classifier (what a lookahead
/// uses for IPv6 packets): each set answers IPv6 keys as its own linear
/// classifier's `classify6` would, in one context and in runs of 7 rules,
/// in bursts of every size; the first set is also what `classify6` answers.
#[test]
fn ipv6_rule_sets_as_categories_answer_each_set_alone() {
    let _w = simd_width(DEFAULT_WIDTH);
    let mut rng = Rng::with_seed(0x1b6e_5e75_0f0a_c1a5);
    let pools = Pools::new(&mut rng);
    let pools6 = Pools6::new(&mut rng);
    let sets: Vec<Vec<MatchRule>> = [300, 100, 40]
        .iter()
        .map(|&n| {
            (0..n)
                .map(|_| random_rule6(&mut rng, &pools, &pools6))
                .collect()
        })
        .collect();
    let keys = aimed_keys6(&mut rng, &sets.concat(), &pools, &pools6, 20_000);
    each_set_alone(&sets, &keys);
}

/// IPv4 and IPv6 rules are numbered together: an IPv4 rule never answers
/// an IPv6 key (nor an IPv6 rule an IPv4 one), an address-less rule answers
/// both, and the first match wins.
#[test]
fn ipv6_first_match_wins_across_families() {
    let _w = simd_width(DEFAULT_WIDTH);
    let doc = Prefix6::new(0x2001_0db8 << 96, 32);
    let rules = vec![
        // 1: IPv4 TCP to 10/8.
        MatchRule {
            proto: Some(proto::TCP),
            dst: Some(Prefix::new(0x0a00_0000, 8)),
            ..MatchRule::any()
        },
        // 2: ssh to 2001:db8::/32.
        MatchRule {
            proto: Some(proto::TCP),
            dst6: Some(doc),
            dport: Some((22, 22)),
            ..MatchRule::any()
        },
        // 3: established or related TCP, either family.
        MatchRule {
            proto: Some(proto::TCP),
            ct_states: CT_ESTABLISHED | CT_RELATED,
            ..MatchRule::any()
        },
        // 4: anything to 2001:db8::/32.
        MatchRule {
            dst6: Some(doc),
            ..MatchRule::any()
        },
        // 5: any IPv4 TCP (0/0 names the family).
        MatchRule {
            proto: Some(proto::TCP),
            dst: Some(Prefix::new(0, 0)),
            ..MatchRule::any()
        },
        // 6: SYN without ACK from fe80::/10, a prefix ending inside word 0.
        MatchRule {
            proto: Some(proto::TCP),
            src6: Some(Prefix6::new(0xfe80 << 112, 10)),
            tcp_flags: Some((tcp_flag::SYN, tcp_flag::SYN | tcp_flag::ACK)),
            ..MatchRule::any()
        },
        // 7: everything.
        MatchRule::any(),
    ];
    let a = acl().build_acl(&rules).expect("acl");
    assert_eq!((a.acl_rules6(), a.contexts6()), (6, 1), "{a:?}");
    let l = LinearBuilder.build(&rules).unwrap();
    let in_doc = (0x2001_0db8 << 96) | 1;
    let out = (0x2001_0db9 << 96) | 1;
    let ll = (0xfebf << 112) | 1;
    let (syn, ack) = (tcp_flag::SYN, tcp_flag::ACK);
    let cases = [
        (key6(proto::TCP, 1, in_doc, 22, syn, CT_NEW, true), 2),
        (
            key6(proto::TCP, 1, in_doc, 23, syn, CT_ESTABLISHED, true),
            3,
        ),
        (key6(proto::TCP, 1, in_doc, 22, ack, CT_RELATED, true), 2),
        (key6(proto::TCP, 1, in_doc, 23, syn, CT_NEW, true), 4),
        (key6(proto::UDP, 1, in_doc, 22, 0, CT_ESTABLISHED, true), 4),
        // A later fragment: no L4, so not rule 2 (ports).
        (key6(proto::TCP, 1, in_doc, 22, syn, CT_NEW, false), 4),
        (key6(proto::TCP, ll, out, 80, syn, CT_NEW, true), 6),
        (key6(proto::TCP, ll, out, 80, syn | ack, CT_NEW, true), 7),
        (
            key6(proto::TCP, 0xfec0 << 112, out, 80, syn, CT_NEW, true),
            7,
        ),
        (key6(proto::UDP, 1, 1, 53, 0, 0, true), 7),
    ];
    let keys: Vec<Key6> = cases.iter().map(|c| c.0).collect();
    let want: Vec<u32> = cases.iter().map(|c| c.1).collect();
    assert_eq!(classify_all(&*l, &keys, 32), want, "linear");
    assert_eq!(classify_all(&a, &keys, 32), want, "acl");
    assert_eq!(classify_all(&a, &keys, 1), want, "acl, one by one");

    let in10 = 0x0a00_0001;
    let cases4 = [
        (key(proto::TCP, 1, in10, 1000, 22, syn, CT_NEW), 1),
        (
            key(proto::TCP, 1, 0x0b00_0001, 1000, 22, syn, CT_ESTABLISHED),
            3,
        ),
        (key(proto::TCP, 1, 0x0b00_0001, 1000, 22, syn, CT_NEW), 5),
        (key(proto::UDP, 1, in10, 1000, 22, 0, CT_NEW), 7),
    ];
    let keys4: Vec<Key> = cases4.iter().map(|c| c.0).collect();
    let want4: Vec<u32> = cases4.iter().map(|c| c.1).collect();
    assert_eq!(classify_all(&*l, &keys4, 32), want4, "linear, IPv4");
    assert_eq!(classify_all(&a, &keys4, 32), want4, "acl, IPv4");
}

/// Without a rule for IPv6 (in the first set) there is no IPv6 context and
/// every IPv6 key classifies to 0.
#[test]
fn ipv6_keys_classify_to_zero_without_ipv6_rules() {
    let _w = simd_width(DEFAULT_WIDTH);
    let mut rng = Rng::with_seed(0x0000_0006_0000_0000);
    let pools = Pools::new(&mut rng);
    let pools6 = Pools6::new(&mut rng);
    let v4: Vec<MatchRule> = firewall_rules(&mut rng, 200);
    assert!(v4.iter().all(|r| r.family() == Some(Family::Ipv4)));
    let v6: Vec<MatchRule> = (0..50)
        .map(|_| random_rule6(&mut rng, &pools, &pools6))
        .collect();
    let keys = aimed_keys6(&mut rng, &v6, &pools, &pools6, 2000);
    let empty: &[MatchRule] = &[];
    for (name, sets) in [
        ("no rules", vec![empty]),
        ("IPv4 rules", vec![&v4[..]]),
        ("IPv6 rules in the second set only", vec![&v4[..], &v6[..]]),
    ] {
        let a = acl().build_acl_sets(&sets).expect(name);
        if sets.len() == 1 {
            assert_eq!((a.contexts6(), a.acl_rules6()), (0, 0), "{name}: {a:?}");
        }
        for burst in [1, 32, 100] {
            assert!(
                classify_all(&a, &keys, burst).iter().all(|&r| r == 0),
                "{name}"
            );
        }
    }
    // The second set's IPv6 rules answer in their own category only.
    let a = acl().build_acl_sets(&[&v4[..], &v6[..]]).expect("two sets");
    let mut got = vec![[u32::MAX; MAX_SETS]; keys.len()];
    for (k, r) in keys.chunks(64).zip(got.chunks_mut(64)) {
        a.classify_sets6(k, r);
    }
    assert!(got.iter().all(|g| g[0] == 0 && g[2] == 0));
    assert!(got.iter().any(|g| g[1] != 0));
    // The keys would match the IPv6 rules.
    let a = acl().build_acl(&v6).expect("IPv6 rules");
    assert!(classify_all(&a, &keys, 32).iter().any(|&r| r != 0));
}

/// IPv6 rules split over several contexts when a context's tables may not
/// grow past a limit (`ERANGE`, as DPDK answers a set too big for one
/// context) still agree with linear; 1,000 firewall-like IPv6 rules in one
/// context agree too, and their costs are printed for the record.
#[test]
fn ipv6_firewall_rules_split_over_contexts_agree_with_linear() {
    let _w = simd_width(DEFAULT_WIDTH);
    let mut rng = Rng::with_seed(0xfeed_f00d_0000_0006);
    let rules = firewall_rules6(&mut rng, 1000);
    let keys = keys_for6(&mut rng, &rules, 4096);
    let l = LinearBuilder.build(&rules).unwrap();
    let want = classify_all(&*l, &keys, 32);
    assert!(want.iter().filter(|&&r| r != 0).count() >= keys.len() / 2);

    let t = Instant::now();
    let a = acl().build_acl(&rules).expect("1,000 IPv6 rules");
    let built = t.elapsed();
    check_bursts("1,000 IPv6 rules", &a, &rules, &keys, &want);
    let (ns, cyc) = burst_cost(&a, &keys, 50);
    let (lns, lcyc) = burst_cost(&*l, &keys, 2);
    println!(
        "1,000 IPv6 firewall rules ({} ACL rules, {} context(s), built in {built:.2?}), \
         32-key bursts: dpdk-acl {ns:.1} ns/key ({cyc:.0} TSC cycles, TSC {} MHz); \
         linear {lns:.0} ns/key ({lcyc:.0} cycles)",
        a.acl_rules6(),
        a.contexts6(),
        tsc_hz() / 1_000_000
    );

    let t = Instant::now();
    let split = acl()
        .with_max_size(SPLIT_MAX_SIZE)
        .build_acl(&rules)
        .expect("split");
    let built = t.elapsed();
    assert!(split.contexts6() > 1, "{split:?}");
    check_bursts("split IPv6 rules", &split, &rules, &keys, &want);
    let (ns, cyc) = burst_cost(&split, &keys, 20);
    println!(
        "the same with tables of at most {SPLIT_MAX_SIZE} bytes: {} contexts (built in \
         {built:.2?}), {ns:.1} ns/key ({cyc:.0} cycles)",
        split.contexts6()
    );
}

/// A table size limit that splits 1,000 IPv6 firewall rules.
const SPLIT_MAX_SIZE: usize = 1 << 20;

// ---------------------------------------------------------------------------
// DPDK's classify algorithms

/// The flags of the first CPU in `/proc/cpuinfo`.
fn cpu_flags() -> Vec<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
    let line = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .expect("a flags line in /proc/cpuinfo");
    let (_, flags) = line.split_once(':').expect("flags: ...");
    flags.split_whitespace().map(str::to_string).collect()
}

/// Whether DPDK 22.11 runs `alg` here at a maximum SIMD width of `bits`
/// (`acl_check_alg_x86` in `lib/acl/rte_acl.c`): the CPU flags it checks,
/// and the width each algorithm needs.
fn runs_here(alg: AclAlgorithm, bits: u16) -> bool {
    let flags = cpu_flags();
    let has = |names: &[&str]| names.iter().all(|n| flags.iter().any(|f| f == n));
    let avx512 = has(&["avx512f", "avx512vl", "avx512cd", "avx512bw"]);
    match alg {
        AclAlgorithm::Default | AclAlgorithm::Scalar => true,
        AclAlgorithm::Sse => cfg!(target_arch = "x86_64") && has(&["sse4_1"]) && bits >= 128,
        AclAlgorithm::Avx2 => cfg!(target_arch = "x86_64") && has(&["avx2"]) && bits >= 256,
        AclAlgorithm::Avx512x16 => cfg!(target_arch = "x86_64") && avx512 && bits >= 256,
        AclAlgorithm::Avx512x32 => cfg!(target_arch = "x86_64") && avx512 && bits >= 512,
    }
}

/// A rule set of the algorithm tests: name, rules, keys, the scalar
/// algorithm's results.
type Case = (&'static str, Vec<MatchRule>, Vec<Key>, Vec<u32>);

/// Rule sets and keys for the algorithm tests, with the scalar algorithm's
/// results (which the linear classifier's must equal).
fn algorithm_cases() -> Vec<Case> {
    let mut rng = Rng::with_seed(0xa190_7357);
    let sets = [
        ("firewall", firewall_rules(&mut rng, 1000)),
        ("5-tuple", five_tuple_rules(&mut rng, 1000)),
    ];
    let scalar = acl().with_algorithm(AclAlgorithm::Scalar);
    sets.into_iter()
        .map(|(name, rules)| {
            let keys = keys_for(&mut rng, &rules, 4096);
            let a = scalar
                .build_acl(&rules)
                .expect("the scalar algorithm builds");
            let want = classify_all(&a, &keys, 32);
            let linear = classify_all(&*LinearBuilder.build(&rules).unwrap(), &keys, 32);
            assert_eq!(want, linear, "{name}: scalar vs linear");
            (name, rules, keys, want)
        })
        .collect()
}

/// `alg` at a maximum SIMD width of `bits`: where this CPU runs it, it builds
/// and gives the scalar algorithm's results on every rule set (its cost is
/// printed); elsewhere building is refused with `ENOTSUP`.
fn algorithm(alg: AclAlgorithm, bits: u16) {
    let _w = simd_width(bits);
    let expected = runs_here(alg, bits);
    for (name, rules, keys, want) in algorithm_cases() {
        match acl().with_algorithm(alg).build_acl(&rules) {
            Ok(a) if expected => {
                check_bursts(&format!("{alg:?} {name}"), &a, &rules, &keys, &want);
                let (ns, cyc) = burst_cost(&a, &keys, 50);
                println!("{alg:?} at {bits} bits, {name}: {ns:.1} ns/key ({cyc:.0} cycles)");
            }
            Ok(_) => panic!(
                "{alg:?} at {bits} bits built, but this CPU's flags say DPDK should refuse it"
            ),
            Err(e) => {
                assert!(
                    !expected,
                    "{alg:?} at {bits} bits refused although this CPU has what it needs: {e}"
                );
                let want = format!("rte_acl_set_ctx_classify {alg:?}");
                let code = format!("(errno {})", libc::ENOTSUP);
                assert!(
                    e.contains(&want) && e.contains(&code),
                    "{alg:?} at {bits} bits: refused with {e:?}, not ENOTSUP from {want}"
                );
            }
        }
    }
}

#[test]
fn algorithm_default_at_256_bits() {
    algorithm(AclAlgorithm::Default, 256);
}

#[test]
fn algorithm_scalar_at_256_bits() {
    algorithm(AclAlgorithm::Scalar, 256);
}

#[test]
fn algorithm_sse_at_256_bits() {
    algorithm(AclAlgorithm::Sse, 256);
}

#[test]
fn algorithm_sse_at_128_bits() {
    algorithm(AclAlgorithm::Sse, 128);
}

#[test]
fn algorithm_avx2_at_256_bits() {
    algorithm(AclAlgorithm::Avx2, 256);
}

/// DPDK refuses `alg` when EAL's maximum SIMD width is `bits`, whatever this
/// CPU has: the width is below what the algorithm needs. Asked of DPDK
/// directly, not of [`runs_here`].
fn refused_at(alg: AclAlgorithm, bits: u16) {
    let _w = simd_width(bits);
    let rules = firewall_rules(&mut Rng::with_seed(0x5eed), 50);
    let Err(e) = acl().with_algorithm(alg).build_acl(&rules) else {
        panic!("{alg:?} built at a maximum SIMD width of {bits} bits");
    };
    let want = format!("rte_acl_set_ctx_classify {alg:?}");
    let code = format!("(errno {})", libc::ENOTSUP);
    assert!(
        e.contains(&want) && e.contains(&code),
        "{alg:?} at {bits} bits: refused with {e:?}, not ENOTSUP from {want}"
    );
}

#[test]
fn algorithm_avx2_is_refused_at_128_bits() {
    refused_at(AclAlgorithm::Avx2, 128);
    algorithm(AclAlgorithm::Avx2, 128);
}

#[test]
fn algorithm_avx512x16_at_256_bits() {
    algorithm(AclAlgorithm::Avx512x16, 256);
}

#[test]
fn algorithm_avx512x32_is_refused_at_256_bits() {
    refused_at(AclAlgorithm::Avx512x32, 256);
    algorithm(AclAlgorithm::Avx512x32, 256);
}

#[test]
fn algorithm_default_at_512_bits() {
    algorithm(AclAlgorithm::Default, 512);
}

#[test]
fn algorithm_avx512x16_at_512_bits() {
    algorithm(AclAlgorithm::Avx512x16, 512);
}

#[test]
fn algorithm_avx512x32_at_512_bits() {
    algorithm(AclAlgorithm::Avx512x32, 512);
}

// ---------------------------------------------------------------------------
// Rules, keys and measurements

/// Percent chances and picks from a slice, drawn from the seeded generator.
trait Draw {
    fn chance(&mut self, percent: u64) -> bool;
    fn pick<T: Copy>(&mut self, v: &[T]) -> T;
}

impl Draw for Rng {
    fn chance(&mut self, percent: u64) -> bool {
        self.u64(..100) < percent
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.usize(..v.len())]
    }
}

/// Keys of either family, each classified by its own method.
trait TestKey: Copy + std::fmt::Debug {
    fn classify(c: &dyn Classifier, keys: &[Self], results: &mut [u32]);
    fn classify_sets(c: &dyn Classifier, keys: &[Self], results: &mut [Answers]);
}

impl TestKey for Key {
    fn classify(c: &dyn Classifier, keys: &[Key], results: &mut [u32]) {
        c.classify(keys, results);
    }
    fn classify_sets(c: &dyn Classifier, keys: &[Key], results: &mut [Answers]) {
        c.classify_sets(keys, results);
    }
}

impl TestKey for Key6 {
    fn classify(c: &dyn Classifier, keys: &[Key6], results: &mut [u32]) {
        c.classify6(keys, results);
    }
    fn classify_sets(c: &dyn Classifier, keys: &[Key6], results: &mut [Answers]) {
        c.classify_sets6(keys, results);
    }
}

/// Rule sets in one ACL classifier, one category each: each set answers
/// `keys` as its own linear classifier does, in one context and in runs
/// of 7 rules, in bursts of every size, and the first set is what the
/// one-set classify answers. Returns each set's answers.
fn each_set_alone<K: TestKey>(sets: &[Vec<MatchRule>], keys: &[K]) -> Vec<Vec<u32>> {
    let refs: Vec<&[MatchRule]> = sets.iter().map(|s| &s[..]).collect();
    let want: Vec<Vec<u32>> = sets
        .iter()
        .map(|s| classify_all(&*LinearBuilder.build(s).unwrap(), keys, 32))
        .collect();
    for (c, w) in want.iter().enumerate() {
        let hits = w.iter().filter(|&&r| r != 0).count();
        assert!(hits > keys.len() / 50, "set {c}: only {hits} keys matched");
    }
    for (name, builder) in [
        ("one context", acl()),
        ("runs of 7", acl().with_rules_per_context(7)),
    ] {
        let a = builder.build_acl_sets(&refs).expect(name);
        for burst in [1, 32, 64, 100] {
            let mut got = vec![[u32::MAX; MAX_SETS]; keys.len()];
            for (k, r) in keys.chunks(burst).zip(got.chunks_mut(burst)) {
                K::classify_sets(&a, k, r);
            }
            for (c, w) in want.iter().enumerate() {
                let of_set: Vec<u32> = got.iter().map(|g| g[c]).collect();
                assert!(of_set == *w, "{name}, bursts of {burst}: set {c} differs");
            }
        }
        assert_eq!(classify_all(&a, keys, 32), want[0], "{name}: one set");
    }
    want
}

fn classify_all<K: TestKey>(c: &dyn Classifier, keys: &[K], burst: usize) -> Vec<u32> {
    let mut res = vec![u32::MAX; keys.len()];
    for (k, r) in keys.chunks(burst).zip(res.chunks_mut(burst)) {
        K::classify(c, k, r);
    }
    res
}

/// Keys from packets (the way the hooks build them).
fn key(proto: u8, src: u32, dst: u32, sport: u16, dport: u16, tcp_flags: u8, ct: u8) -> Key {
    let s = FlowSummary {
        src,
        dst,
        proto,
        l4: true,
        sport,
        dport,
        tcp_flags,
        ..FlowSummary::default()
    };
    Key::new(&s, &PacketMeta::received_on(0), ct)
}

/// Values rules and keys are drawn from, so that they meet often.
struct Pools {
    addrs: Vec<u32>,
    ports: Vec<u16>,
    protos: Vec<u8>,
}

impl Pools {
    fn new(rng: &mut Rng) -> Pools {
        let mut addrs: Vec<u32> = (0..6).map(|_| rng.u64(..) as u32).collect();
        addrs.extend([
            0,
            u32::MAX,
            0x0a00_0000,
            0x0aff_ffff,
            0x8000_0000,
            0x7fff_ffff,
        ]);
        Pools {
            addrs,
            ports: vec![
                0, 1, 22, 53, 79, 80, 81, 443, 1023, 1024, 8080, 32768, 65534, 65535,
            ],
            protos: vec![proto::TCP, proto::UDP, proto::ICMP, 0, 47, 255],
        }
    }

    /// A 16-bit range with edges at interesting values.
    fn range16(&self, rng: &mut Rng, max: u16) -> (u16, u16) {
        let a = if rng.chance(50) {
            rng.pick(&self.ports).min(max)
        } else {
            rng.u64(..u64::from(max) + 1) as u16
        };
        let b = match rng.u64(..4) {
            0 => a,
            1 => a.saturating_add(rng.u64(..16) as u16).min(max),
            2 => max,
            _ => rng.u64(..u64::from(max) + 1) as u16,
        };
        (a.min(b), a.max(b))
    }

    fn prefix(&self, rng: &mut Rng) -> Prefix {
        let len = rng.u64(..33) as u8;
        let a = if rng.chance(70) {
            rng.pick(&self.addrs)
        } else {
            rng.u64(..) as u32
        };
        let p = Prefix::new(0, len);
        Prefix::new(a & p.mask(), len)
    }
}

/// A random rule with at least 3 conditions (so that few rules catch
/// everything and hide the later ones).
fn random_rule(rng: &mut Rng, pools: &Pools) -> MatchRule {
    loop {
        let r = random_conditions(rng, pools);
        if conditions(&r) >= 3 {
            return r;
        }
    }
}

/// The number of conditions of `r`.
fn conditions(r: &MatchRule) -> usize {
    [
        r.in_port.is_some(),
        r.out_port.is_some(),
        r.src.is_some(),
        r.dst.is_some(),
        r.src6.is_some(),
        r.dst6.is_some(),
        r.proto.is_some(),
        r.sport.is_some(),
        r.dport.is_some(),
        r.tcp_flags.is_some(),
        r.dscp.is_some(),
        r.vlan.is_some(),
        r.mark.is_some(),
        r.class.is_some(),
        r.ct_states != 0,
    ]
    .iter()
    .filter(|&&c| c)
    .count()
}

fn random_conditions(rng: &mut Rng, pools: &Pools) -> MatchRule {
    random_conditions_p(rng, pools, 35)
}

/// A random rule with each condition at `p` percent chance (more for
/// addresses and protocol).
fn random_conditions_p(rng: &mut Rng, pools: &Pools, p: u64) -> MatchRule {
    let mut r = MatchRule::any();
    if rng.chance(p) {
        r.in_port = Some(pools.range16(rng, 7));
    }
    if rng.chance(p) {
        r.out_port = Some(pools.range16(rng, 7));
    }
    if rng.chance(p + 20) {
        r.src = Some(pools.prefix(rng));
    }
    if rng.chance(p + 20) {
        r.dst = Some(pools.prefix(rng));
    }
    if rng.chance(p + 20) {
        r.proto = Some(rng.pick(&pools.protos));
    }
    if rng.chance(p) {
        r.sport = Some(pools.range16(rng, u16::MAX));
    }
    if rng.chance(p) {
        r.dport = Some(pools.range16(rng, u16::MAX));
    }
    if rng.chance(p) {
        let any = rng.u64(..) as u8;
        let m = rng.pick(&[0u8, 0x02, 0x12, 0x17, 0xff, any]);
        r.tcp_flags = Some((rng.u64(..) as u8 & m, m));
    }
    if rng.chance(p) {
        let (a, b) = (rng.u64(..64) as u8, rng.u64(..64) as u8);
        r.dscp = Some(if rng.chance(10) {
            (a.min(b), 255)
        } else {
            (a.min(b), a.max(b))
        });
    }
    if rng.chance(p) {
        r.vlan = Some(pools.range16(rng, 4095));
    }
    if rng.chance(p) {
        let any = rng.u64(..) as u32;
        let m = rng.pick(&[0u32, 0xff, 0xf0, 0xffff_0000, u32::MAX, 0x8000_0001, any]);
        let v = if rng.chance(50) {
            rng.u64(..4) as u32
        } else {
            rng.u64(..) as u32
        };
        r.mark = Some((v & m, m));
    }
    if rng.chance(p) {
        r.class = Some(pools.range16(rng, u16::MAX));
    }
    if rng.chance(p + 5) {
        r.ct_states = (rng.u64(..7) as u8 + 1) << 1;
    }
    r
}

/// A value on a range's edges or inside it; with `miss` percent chance,
/// just outside it or anywhere.
fn near16(rng: &mut Rng, r: Option<(u16, u16)>, miss: u64) -> u16 {
    let Some((lo, hi)) = r else {
        return rng.u64(..) as u16;
    };
    if rng.chance(miss) {
        return match rng.u64(..3) {
            0 => lo.wrapping_sub(1),
            1 => hi.wrapping_add(1),
            _ => rng.u64(..) as u16,
        };
    }
    match rng.u64(..3) {
        0 => lo,
        1 => hi,
        _ => lo + (rng.u64(..u64::from(hi - lo) + 1) as u16),
    }
}

fn near_prefix(rng: &mut Rng, p: Option<Prefix>, pools: &Pools, miss: u64) -> u32 {
    let Some(p) = p else {
        return if rng.chance(50) {
            rng.pick(&pools.addrs)
        } else {
            rng.u64(..) as u32
        };
    };
    let last = p.addr | !p.mask();
    if rng.chance(miss) {
        return match rng.u64(..3) {
            0 => p.addr.wrapping_sub(1),
            1 => last.wrapping_add(1),
            // The last bit of the prefix flipped.
            _ => p.addr ^ (1u32 << (32 - u32::from(p.len.max(1)))),
        };
    }
    match rng.u64(..3) {
        0 => p.addr,
        1 => last,
        _ => p.addr | (rng.u64(..) as u32 & !p.mask()),
    }
}

fn near_mask<T>(rng: &mut Rng, vm: Option<(T, T)>, random: T, miss: u64) -> T
where
    T: Copy
        + std::ops::BitAnd<Output = T>
        + std::ops::BitOr<Output = T>
        + std::ops::Not<Output = T>
        + std::ops::BitXor<Output = T>,
{
    match vm {
        Some((v, m)) => {
            let k = v | (random & !m);
            if rng.chance(miss) {
                k ^ (m & random) // a miss unless random has no bit in m
            } else {
                k
            }
        }
        None => random,
    }
}

/// A key aimed at rule `r`: each field on or near its condition's edges,
/// outside it with `miss` percent chance.
fn key_near(rng: &mut Rng, r: &MatchRule, pools: &Pools, miss: u64) -> Key {
    let mut b = [0u8; 32];
    b[0] = match r.proto {
        Some(p) if !rng.chance(miss) => p,
        _ => rng.pick(&pools.protos),
    };
    let any = rng.u64(..);
    b[1] = near_mask(rng, r.tcp_flags, any as u8, miss);
    b[2] = match r.dscp {
        Some((lo, hi)) if rng.chance(miss) => rng.pick(&[
            lo.wrapping_sub(1),
            hi.wrapping_add(1),
            (any >> 8) as u8 & 63,
        ]),
        Some((lo, hi)) => rng.pick(&[lo, hi, lo + ((any >> 8) % (u64::from(hi - lo) + 1)) as u8]),
        None => rng.u64(..64) as u8,
    };
    let l4 = if !r.needs_l4() || !rng.chance(miss) {
        FLAG_L4
    } else {
        0
    };
    let states: Vec<u8> = r.states().collect();
    let ct = if !states.is_empty() && !rng.chance(miss) {
        rng.pick(&states)
    } else {
        match rng.u64(..10) {
            0 => 0,
            1 => rng.u64(..) as u8 & 0x0e, // several state bits: not from packets, but defined
            _ => rng.pick(&[CT_NEW, CT_ESTABLISHED, CT_RELATED]),
        }
    };
    b[3] = l4 | ct;
    b[4..8].copy_from_slice(&near_prefix(rng, r.src, pools, miss).to_be_bytes());
    b[8..12].copy_from_slice(&near_prefix(rng, r.dst, pools, miss).to_be_bytes());
    b[12..14].copy_from_slice(&near16(rng, r.sport, miss).to_be_bytes());
    b[14..16].copy_from_slice(&near16(rng, r.dport, miss).to_be_bytes());
    b[16..18].copy_from_slice(&(near16(rng, r.in_port, miss) & 0x0f).to_be_bytes());
    b[18..20].copy_from_slice(&(near16(rng, r.out_port, miss) & 0x0f).to_be_bytes());
    b[20..22].copy_from_slice(&near16(rng, r.vlan, miss).to_be_bytes());
    b[22..24].copy_from_slice(&near16(rng, r.class, miss).to_be_bytes());
    let any = rng.u64(..) as u32;
    b[24..28].copy_from_slice(&near_mask(rng, r.mark, any, miss).to_be_bytes());
    Key::from_bytes(b)
}

/// `c` classifies `keys` to `want` (first matches among `rules`) in bursts
/// of every size.
fn check_bursts<K: TestKey>(
    what: &str,
    c: &dyn Classifier,
    rules: &[MatchRule],
    keys: &[K],
    want: &[u32],
) {
    for burst in [1, 32, 64, 100, keys.len()] {
        let got = classify_all(c, keys, burst);
        if let Some(i) = (0..keys.len()).find(|&i| got[i] != want[i]) {
            let show = |n: u32| match n {
                0 => "none".to_string(),
                n => format!("{n}: {:?}", rules[n as usize - 1]),
            };
            panic!(
                "{what}, burst {burst}: key {i} {:?}\n acl:    {}\n linear: {}",
                keys[i],
                show(got[i]),
                show(want[i])
            );
        }
    }
}

/// `n` keys: most aimed at a random rule of `rules`, the rest random
/// bytes.
fn aimed_keys(rng: &mut Rng, rules: &[MatchRule], pools: &Pools, n: usize) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::with_capacity(n);
    while keys.len() < n {
        if rng.chance(75) {
            let r = &rules[rng.usize(..rules.len())];
            let miss = rng.pick(&[0, 10, 30]);
            keys.push(key_near(rng, r, pools, miss));
        } else {
            // Random bytes, with the pools' addresses half the time.
            let mut b = [0u8; 32];
            for x in b.iter_mut() {
                *x = rng.u64(..) as u8;
            }
            if rng.chance(50) {
                b[4..8].copy_from_slice(&rng.pick(&pools.addrs).to_be_bytes());
            }
            keys.push(Key::from_bytes(b));
        }
    }
    keys
}

/// A rule set with conditions in only some fields.
struct Subset {
    name: &'static str,
    /// Clears the conditions outside the subset.
    keep: fn(&mut MatchRule),
    /// Key bytes the subset's conditions read: `(start, end)`, end
    /// excluded.
    bytes: &'static [(usize, usize)],
    /// ACL fields the classifier should define.
    fields: usize,
}

/// `r` with only the conditions `keep` names.
fn only(r: &MatchRule, keep: &[&str]) -> MatchRule {
    let k = |name: &str| keep.contains(&name);
    MatchRule {
        in_port: r.in_port.filter(|_| k("in_port")),
        out_port: r.out_port.filter(|_| k("out_port")),
        src: r.src.filter(|_| k("src")),
        dst: r.dst.filter(|_| k("dst")),
        src6: r.src6.filter(|_| k("src6")),
        dst6: r.dst6.filter(|_| k("dst6")),
        proto: r.proto.filter(|_| k("proto")),
        sport: r.sport.filter(|_| k("sport")),
        dport: r.dport.filter(|_| k("dport")),
        tcp_flags: r.tcp_flags.filter(|_| k("tcp_flags")),
        dscp: r.dscp.filter(|_| k("dscp")),
        vlan: r.vlan.filter(|_| k("vlan")),
        mark: r.mark.filter(|_| k("mark")),
        class: r.class.filter(|_| k("class")),
        ct_states: if k("states") { r.ct_states } else { 0 },
    }
}

const SUBSETS: [Subset; 8] = [
    Subset {
        name: "proto",
        keep: |r| *r = only(r, &["proto"]),
        bytes: &[(0, 1)],
        fields: 1,
    },
    Subset {
        name: "proto+dst",
        keep: |r| *r = only(r, &["proto", "dst"]),
        bytes: &[(0, 1), (8, 12)],
        fields: 2,
    },
    Subset {
        name: "5-tuple",
        keep: |r| *r = only(r, &["proto", "src", "dst", "sport", "dport"]),
        // Byte 3: the L4 bit of the flags.
        bytes: &[(0, 1), (3, 16)],
        fields: 9,
    },
    Subset {
        name: "mark",
        keep: |r| {
            *r = only(r, &["mark"]);
            // Not mask 0 (any mark): the first such rule would hide the rest.
            if let Some((v, 0)) = r.mark {
                r.mark = Some((v, 0xff));
            }
        },
        bytes: &[(24, 28)],
        fields: 2,
    },
    Subset {
        name: "in_port/out_port",
        keep: |r| *r = only(r, &["in_port", "out_port"]),
        bytes: &[(16, 20)],
        fields: 3,
    },
    Subset {
        name: "states",
        keep: |r| *r = only(r, &["states"]),
        bytes: &[(3, 4)],
        fields: 5,
    },
    Subset {
        name: "vlan+class",
        keep: |r| *r = only(r, &["vlan", "class"]),
        bytes: &[(20, 24)],
        fields: 3,
    },
    Subset {
        name: "tcp_flags+dscp",
        keep: |r| *r = only(r, &["tcp_flags", "dscp"]),
        bytes: &[(1, 4)],
        fields: 5,
    },
];

/// Firewall-like rules: prefixes, protocol, port or port range, sometimes
/// states, input port, DSCP.
fn firewall_rules(rng: &mut Rng, n: usize) -> Vec<MatchRule> {
    (0..n)
        .map(|_| {
            let mut r = MatchRule::any();
            if rng.chance(70) {
                let len = 8 + rng.u64(..25) as u8;
                let p = Prefix::new(0, len);
                r.src = Some(Prefix::new(rng.u64(..) as u32 & p.mask(), len));
            }
            {
                let len = 16 + rng.u64(..17) as u8;
                let p = Prefix::new(0, len);
                r.dst = Some(Prefix::new(rng.u64(..) as u32 & p.mask(), len));
            }
            if rng.chance(90) {
                r.proto = Some(if rng.chance(70) {
                    proto::TCP
                } else {
                    proto::UDP
                });
                if rng.chance(80) {
                    let p = rng.u64(..65536) as u16;
                    r.dport = Some(if rng.chance(80) {
                        (p, p)
                    } else {
                        (p, p.saturating_add(rng.u64(..1000) as u16))
                    });
                }
                if rng.chance(10) {
                    r.sport = Some((1024, 65535));
                }
            }
            if rng.chance(20) {
                r.ct_states = rng.pick(&[CT_NEW, CT_ESTABLISHED | CT_RELATED]);
            }
            if rng.chance(10) {
                let p = rng.u64(..4) as u16;
                r.in_port = Some((p, p));
            }
            r
        })
        .collect()
}

/// Keys that hit given rules (their first addresses and ports), plus
/// random ones.
fn keys_for(rng: &mut Rng, rules: &[MatchRule], n: usize) -> Vec<Key> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                let r = &rules[rng.usize(..rules.len())];
                let pick = |p: Option<Prefix>, x: u32| p.map_or(x, |p| p.addr | (x & !p.mask()));
                let s = FlowSummary {
                    proto: r.proto.unwrap_or(proto::TCP),
                    src: pick(r.src, rng.u64(..) as u32),
                    dst: pick(r.dst, rng.u64(..) as u32),
                    l4: true,
                    sport: r.sport.map_or(rng.u64(..) as u16, |s| s.0),
                    dport: r.dport.map_or(rng.u64(..) as u16, |d| d.1),
                    tcp_flags: tcp_flag::ACK,
                    ..FlowSummary::default()
                };
                let ct = r.states().next().unwrap_or(CT_NEW);
                let m = PacketMeta::received_on(r.in_port.map_or(0, |p| p.0));
                Key::new(&s, &m, ct)
            } else {
                key(
                    rng.pick(&[proto::TCP, proto::UDP]),
                    rng.u64(..) as u32,
                    rng.u64(..) as u32,
                    rng.u64(..) as u16,
                    rng.u64(..) as u16,
                    0,
                    CT_NEW,
                )
            }
        })
        .collect()
}

/// Time per key (ns, TSC cycles) classifying `keys` in 32-key bursts: the
/// fastest of `rounds` passes over them (the machine may be shared: a
/// slower pass was interrupted).
fn burst_cost<K: TestKey>(c: &dyn Classifier, keys: &[K], rounds: usize) -> (f64, f64) {
    let mut res = [0u32; 32];
    let n = ((keys.len() / 32) * 32) as f64;
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let (t, c0) = (Instant::now(), tsc());
        for k in keys.chunks_exact(32) {
            K::classify(c, k, &mut res);
            std::hint::black_box(&res);
        }
        let (ns, cyc) = (t.elapsed().as_nanos() as f64 / n, (tsc() - c0) as f64 / n);
        if cyc < best.1 {
            best = (ns, cyc);
        }
    }
    best
}

/// 5-tuple rules: protocol, source and destination prefixes, source and
/// destination port ranges; nothing else.
fn five_tuple_rules(rng: &mut Rng, n: usize) -> Vec<MatchRule> {
    (0..n)
        .map(|_| {
            let mut r = MatchRule::any();
            r.proto = Some(if rng.chance(70) {
                proto::TCP
            } else {
                proto::UDP
            });
            if rng.chance(60) {
                let len = 8 + rng.u64(..25) as u8;
                let p = Prefix::new(0, len);
                r.src = Some(Prefix::new(rng.u64(..) as u32 & p.mask(), len));
            }
            let len = 16 + rng.u64(..17) as u8;
            let p = Prefix::new(0, len);
            r.dst = Some(Prefix::new(rng.u64(..) as u32 & p.mask(), len));
            if rng.chance(20) {
                r.sport = Some((1024, 65535));
            }
            if rng.chance(85) {
                let p = rng.u64(..65536) as u16;
                r.dport = Some(if rng.chance(80) {
                    (p, p)
                } else {
                    (p, p.saturating_add(rng.u64(..1000) as u16))
                });
            }
            r
        })
        .collect()
}

// ---------------------------------------------------------------------------
// IPv6 rules and keys

/// IPv6 addresses rules and keys are drawn from, so that they meet often:
/// random ones, and ones with runs of equal bits across the 32-bit words.
struct Pools6 {
    addrs: Vec<u128>,
}

impl Pools6 {
    fn new(rng: &mut Rng) -> Pools6 {
        let mut addrs: Vec<u128> = (0..6).map(|_| rng.u128(..)).collect();
        addrs.extend([
            0,
            u128::MAX,
            0x2001_0db8 << 96,
            (0x2001_0db8 << 96) | u128::from(u64::MAX),
            0xfe80 << 112,
            1 << 127,
            (1 << 127) - 1,
            0xffff_ffff_0000_0000_ffff_ffff_0000_0000,
        ]);
        Pools6 { addrs }
    }

    /// A prefix, often of a length on or next to a word edge.
    fn prefix(&self, rng: &mut Rng) -> Prefix6 {
        let len = if rng.chance(40) {
            rng.pick(&[0u8, 1, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128])
        } else {
            rng.u64(..129) as u8
        };
        let a = if rng.chance(70) {
            rng.pick(&self.addrs)
        } else {
            rng.u128(..)
        };
        Prefix6::new(a & Prefix6::new(0, len).mask(), len)
    }
}

/// A random rule of a mixed list with at least 3 conditions: an IPv6 one
/// (40 %), an IPv4 one (30 %) or one naming no address (30 %).
fn random_rule6(rng: &mut Rng, pools: &Pools, pools6: &Pools6) -> MatchRule {
    loop {
        let mut r = random_conditions(rng, pools);
        match rng.u64(..10) {
            0..=3 => {
                (r.src, r.dst) = (None, None);
                if rng.chance(70) {
                    r.src6 = Some(pools6.prefix(rng));
                }
                if r.src6.is_none() || rng.chance(70) {
                    r.dst6 = Some(pools6.prefix(rng));
                }
            }
            4..=6 => {
                if r.src.is_none() && r.dst.is_none() {
                    r.dst = Some(pools.prefix(rng));
                }
            }
            _ => (r.src, r.dst) = (None, None),
        }
        if conditions(&r) >= 3 {
            return r;
        }
    }
}

/// An address in or near prefix `p` (see [`near_prefix`]); a miss may
/// also flip any bit of the prefix, in any of its words.
fn near_prefix6(rng: &mut Rng, p: Option<Prefix6>, pools6: &Pools6, miss: u64) -> u128 {
    let Some(p) = p else {
        return if rng.chance(50) {
            rng.pick(&pools6.addrs)
        } else {
            rng.u128(..)
        };
    };
    let last = p.addr | !p.mask();
    let len = u32::from(p.len.max(1));
    if rng.chance(miss) {
        return match rng.u64(..4) {
            0 => p.addr.wrapping_sub(1),
            1 => last.wrapping_add(1),
            2 => p.addr ^ (1u128 << (128 - len)),
            _ => p.addr ^ (1u128 << (127 - rng.u32(..len))),
        };
    }
    match rng.u64(..3) {
        0 => p.addr,
        1 => last,
        _ => p.addr | (rng.u128(..) & !p.mask()),
    }
}

/// An IPv6 key aimed at rule `r` as [`key_near`] aims an IPv4 one: the
/// same fields, the addresses on or near the IPv6 prefixes.
fn key6_near(rng: &mut Rng, r: &MatchRule, pools: &Pools, pools6: &Pools6, miss: u64) -> Key6 {
    let k = key_near(rng, r, pools, miss);
    let k = k.as_bytes();
    let mut b = [0u8; 64];
    b[..4].copy_from_slice(&k[..4]);
    b[4..20].copy_from_slice(&near_prefix6(rng, r.src6, pools6, miss).to_be_bytes());
    b[20..36].copy_from_slice(&near_prefix6(rng, r.dst6, pools6, miss).to_be_bytes());
    b[36..52].copy_from_slice(&k[12..28]);
    Key6::from_bytes(b)
}

/// `n` IPv6 keys: most aimed at a random rule of `rules` that applies to
/// IPv6, the rest random bytes.
fn aimed_keys6(
    rng: &mut Rng,
    rules: &[MatchRule],
    pools: &Pools,
    pools6: &Pools6,
    n: usize,
) -> Vec<Key6> {
    let for6: Vec<&MatchRule> = rules
        .iter()
        .filter(|r| r.applies_to(Family::Ipv6))
        .collect();
    (0..n)
        .map(|_| {
            if rng.chance(75) {
                let r = for6[rng.usize(..for6.len())];
                let miss = rng.pick(&[0, 10, 30]);
                key6_near(rng, r, pools, pools6, miss)
            } else {
                let mut b = [0u8; 64];
                for x in &mut b[..52] {
                    *x = rng.u64(..) as u8;
                }
                if rng.chance(50) {
                    b[4..20].copy_from_slice(&rng.pick(&pools6.addrs).to_be_bytes());
                }
                if rng.chance(50) {
                    b[20..36].copy_from_slice(&rng.pick(&pools6.addrs).to_be_bytes());
                }
                Key6::from_bytes(b)
            }
        })
        .collect()
}

/// An IPv6 key from a packet (the way the hooks build it).
fn key6(proto: u8, src: u128, dst: u128, dport: u16, tcp_flags: u8, ct: u8, l4: bool) -> Key6 {
    let s = FlowSummary6 {
        src: src.to_be_bytes(),
        dst: dst.to_be_bytes(),
        proto,
        l4,
        sport: 40000,
        dport,
        tcp_flags,
        ..FlowSummary6::default()
    };
    Key6::new(&s, &PacketMeta::received_on(0), ct)
}

/// A random IPv6 prefix of a length in `lens`.
fn prefix6_in(rng: &mut Rng, lens: std::ops::RangeInclusive<u8>) -> Prefix6 {
    let len = rng.u8(lens);
    Prefix6::new(rng.u128(..) & Prefix6::new(0, len).mask(), len)
}

/// [`firewall_rules`] for IPv6: source prefixes /16../64, destinations
/// /32../128.
fn firewall_rules6(rng: &mut Rng, n: usize) -> Vec<MatchRule> {
    firewall_rules(rng, n)
        .into_iter()
        .map(|mut r| {
            r.src6 = r.src.take().map(|_| prefix6_in(rng, 16..=64));
            r.dst6 = r.dst.take().map(|_| prefix6_in(rng, 32..=128));
            r
        })
        .collect()
}

/// [`keys_for`] for IPv6: half the keys hit a given rule, the others are
/// random.
fn keys_for6(rng: &mut Rng, rules: &[MatchRule], n: usize) -> Vec<Key6> {
    let pick = |p: Option<Prefix6>, x: u128| p.map_or(x, |p| p.addr | (x & !p.mask()));
    (0..n)
        .map(|i| {
            let (s, ct, port) = if i % 2 == 0 {
                let r = &rules[rng.usize(..rules.len())];
                let s = FlowSummary6 {
                    proto: r.proto.unwrap_or(proto::TCP),
                    src: pick(r.src6, rng.u128(..)).to_be_bytes(),
                    dst: pick(r.dst6, rng.u128(..)).to_be_bytes(),
                    l4: true,
                    sport: r.sport.map_or(rng.u16(..), |s| s.0),
                    dport: r.dport.map_or(rng.u16(..), |d| d.1),
                    tcp_flags: tcp_flag::ACK,
                    ..FlowSummary6::default()
                };
                let ct = r.states().next().unwrap_or(CT_NEW);
                (s, ct, r.in_port.map_or(0, |p| p.0))
            } else {
                let s = FlowSummary6 {
                    proto: rng.pick(&[proto::TCP, proto::UDP]),
                    src: rng.u128(..).to_be_bytes(),
                    dst: rng.u128(..).to_be_bytes(),
                    l4: true,
                    sport: rng.u16(..),
                    dport: rng.u16(..),
                    ..FlowSummary6::default()
                };
                (s, CT_NEW, 0)
            };
            Key6::new(&s, &PacketMeta::received_on(port), ct)
        })
        .collect()
}
