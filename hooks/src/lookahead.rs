//! Lookahead: an ingress hook that classifies anyway answers an egress
//! hook's rules in the same lookup, and the packet carries the answer
//! (`PacketMeta::lookahead`) to the egress hook, which then neither keys
//! nor classifies it again. With DPDK's ACL both rule sets sit in one
//! context as two categories: one walk of the tries answers both.
//!
//! # When the carried answer is the egress hook's own
//!
//! An egress hook offers its rules ([`Lookahead::egress_rules`]) only when
//! its decision on a plain packet is the first of those rules that the
//! packet's key matches, and no rule reads what an ingress hook or the
//! route may change before it runs: the mark, the class, the output port.
//! A stateful filter's rules on the connection state alone are left out
//! of what it offers (a key at ingress has no state, so they could not
//! match there); it answers them itself from the state it finds, and
//! keeps the earlier of that and the carried answer. The key's other fields (addresses, protocol,
//! ports, TCP flags, DSCP, input port, VLAN) are the frame's and the input
//! port's, which the router does not change (only the TTL and checksum).
//! So the answer is the same at ingress as at egress, provided no hook in
//! between rewrites the frame: the ingress hook must be the last of its
//! chain and the egress hook the first of its own. [`link`] checks both.
//!
//! A packet that comes by another way (another input port, a hook that did
//! not look ahead, a key that was not plain) carries 0, "no answer", and
//! the egress hook classifies it as before.

use crate::rules::{MatchRule, MAX_SETS};
use crate::{HookPoint, HookSet, LOOKAHEAD_SLOTS};

/// What a hook kind offers to lookahead (see the module). A hook opts in
/// through [`Hook::lookahead`](crate::Hook::lookahead).
pub trait Lookahead: Send + Sync {
    /// Egress side: the rules whose first match decides a plain packet
    /// here, when none reads the mark, class, output port or connection
    /// state; `None` otherwise.
    fn egress_rules(&self) -> Option<&[MatchRule]> {
        None
    }

    /// Egress side: take the answers carried in lookahead slot `slot`.
    /// Called at most once, while the set is built (before any worker runs
    /// it).
    fn carried_in(&self, slot: usize) {
        let _ = slot;
    }

    /// Ingress side: answer `sets` (slot i: `sets[i]`) in this hook's own
    /// lookup and carry the answers. `Ok(false)`: this hook cannot. Called
    /// at most once, while the set is built.
    fn look_ahead(&self, sets: &[&[MatchRule]]) -> Result<bool, String> {
        let _ = sets;
        Ok(false)
    }
}

/// What [`link`] did: (egress port, slot) of the hooks that take carried
/// answers, the ingress ports whose last hook carries them, and the
/// ingress ports whose hook failed to (with why: they run as before).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Linked {
    pub egress: Vec<(u16, usize)>,
    pub ingress: Vec<u16>,
    pub failed: Vec<(u16, String)>,
}

/// Link the hooks of `set`: the first hook of each egress chain that offers
/// its rules gets a slot (by port order, [`LOOKAHEAD_SLOTS`] at most), and
/// the last hook of each ingress chain is asked to answer them. Nothing is
/// linked when no ingress hook takes them. Run once per set, before any
/// worker runs it.
pub fn link(set: &HookSet) -> Linked {
    let end_of = |point: HookPoint, port: u16| {
        set.chain(point, port)
            .and_then(|c| match point {
                HookPoint::Egress => c.entries().first(),
                HookPoint::Ingress => c.entries().last(),
            })
            .map(|e| &e.hook)
    };
    let ports = (0..set.ports()).map(|p| p as u16);
    let mut egress: Vec<(u16, &dyn Lookahead, &[MatchRule])> = Vec::new();
    for port in ports.clone() {
        let offer = end_of(HookPoint::Egress, port).and_then(|h| h.lookahead());
        if let Some((l, rules)) = offer.and_then(|l| Some((l, l.egress_rules()?))) {
            if egress.len() < LOOKAHEAD_SLOTS.min(MAX_SETS - 1) {
                egress.push((port, l, rules));
            }
        }
    }
    let mut linked = Linked::default();
    if egress.is_empty() {
        return linked;
    }
    let sets: Vec<&[MatchRule]> = egress.iter().map(|e| e.2).collect();
    for port in ports {
        let Some(l) = end_of(HookPoint::Ingress, port).and_then(|h| h.lookahead()) else {
            continue;
        };
        match l.look_ahead(&sets) {
            Ok(true) => linked.ingress.push(port),
            Ok(false) => {}
            Err(e) => linked.failed.push((port, e)),
        }
    }
    if !linked.ingress.is_empty() {
        for (slot, (port, l, _)) in egress.iter().enumerate() {
            l.carried_in(slot);
            linked.egress.push((*port, slot));
        }
    }
    linked
}

/// Whether `rules` may be answered ahead: none reads what changes between
/// the ingress and the egress hook, except the connection state in rules
/// on nothing else ([`state_only`]), which the egress hook answers itself.
pub fn answerable_ahead(rules: &[MatchRule]) -> bool {
    rules.iter().all(|r| {
        let on_the_way = r.out_port.is_some() || r.mark.is_some() || r.class.is_some();
        !on_the_way && (r.ct_states == 0 || state_only(r))
    })
}

/// Whether `r` has a condition on the connection state and on nothing else.
pub fn state_only(r: &MatchRule) -> bool {
    r.ct_states != 0
        && *r
            == MatchRule {
                ct_states: r.ct_states,
                ..MatchRule::any()
            }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::classify::ClassifyKind;
    use crate::builtin::filter::FilterKind;
    use crate::builtin::test_util::{build, run, stat, Pkt};
    use crate::rules::LinearBuilder;
    use crate::testkit::{tcp, udp};
    use crate::{Chain, ChainEntry, Hook, HookCounters, Verdict};
    use fastrand::Rng;
    use std::sync::Arc;

    /// Addresses and ports the rules and packets draw from, so that many
    /// packets match some rule.
    const NETS: [[u8; 3]; 4] = [[10, 0, 1], [10, 0, 2], [10, 1, 0], [192, 0, 2]];
    const PORTS: [u16; 5] = [22, 53, 80, 443, 5000];

    fn addr(rng: &mut Rng) -> [u8; 4] {
        let n = NETS[rng.usize(..NETS.len())];
        [n[0], n[1], n[2], rng.u8(1..8)]
    }

    /// A random protocol condition (UDP, or TCP to a port), or none.
    fn proto_match(rng: &mut Rng) -> Option<String> {
        match rng.u8(..3) {
            0 => Some("proto = \"udp\"\n".into()),
            1 => Some(format!(
                "proto = \"tcp\"\ndport = {}\n",
                PORTS[rng.usize(..PORTS.len())]
            )),
            _ => None,
        }
    }

    /// A random rule's match keys, as TOML.
    fn rule_match(rng: &mut Rng) -> String {
        let mut t = String::new();
        if rng.bool() {
            let [a, b, c, _] = addr(rng);
            t += &format!("src = \"{a}.{b}.{c}.0/{}\"\n", [24, 28, 32][rng.usize(..3)]);
        }
        if rng.bool() {
            let [a, b, c, d] = addr(rng);
            t += &format!("dst = \"{a}.{b}.{c}.{d}\"\n");
        }
        t += &proto_match(rng).unwrap_or_default();
        if t.is_empty() {
            t += &format!("in_port = {}\n", rng.u8(..2));
        }
        t
    }

    fn classify_rules(rng: &mut Rng, n: usize) -> String {
        (0..n)
            .map(|i| {
                let action = match rng.u8(..4) {
                    0 => "action = \"drop\"".to_string(),
                    1 => format!("set_mark = {i}"),
                    _ => format!("set_class = {}", i % 7),
                };
                format!("[[rule]]\n{}{action}\n", rule_match(rng))
            })
            .collect()
    }

    fn filter_rules(rng: &mut Rng, n: usize) -> String {
        let mut t = format!("policy = \"{}\"\n", ["accept", "drop"][rng.usize(..2)]);
        for _ in 0..n {
            let action = ["accept", "drop"][rng.usize(..2)];
            t += &format!("[[rule]]\n{}action = \"{action}\"\n", rule_match(rng));
        }
        t
    }

    fn packet(rng: &mut Rng) -> Pkt {
        let (src, dst) = (addr(rng), addr(rng));
        let (sport, dport) = (rng.u16(1024..), PORTS[rng.usize(..PORTS.len())]);
        let frame = match rng.u8(..8) {
            0 => udp(src, dst, sport, dport).ip_options(&[1, 1, 1, 0]),
            1 => udp(src, dst, sport, dport).fragment(false, 64),
            2..=4 => tcp(src, dst, sport, dport, 0x10),
            _ => udp(src, dst, sport, dport),
        };
        Pkt::new(frame.build()).with(|m| m.in_port = rng.u16(..2))
    }

    fn entry(hook: Arc<dyn Hook>, kind: &str) -> ChainEntry {
        ChainEntry {
            name: "t".into(),
            kind: kind.into(),
            priority: 0,
            hook,
            counters: Arc::new(HookCounters::new(1)),
        }
    }

    /// Classify at ingress of port 0 (also of port 1: packets come in on
    /// either), filter at egress of port 1.
    fn pair(classify: &str, filter: &str) -> (Arc<dyn Hook>, Arc<dyn Hook>, HookSet) {
        let c = build(
            &ClassifyKind::new(Arc::new(LinearBuilder)),
            HookPoint::Ingress,
            classify,
        );
        let f = build(
            &FilterKind::new(Arc::new(LinearBuilder)),
            HookPoint::Egress,
            filter,
        );
        let mut set = HookSet::empty(2);
        set.set(
            HookPoint::Ingress,
            0,
            Chain::new(vec![entry(c.clone(), "classify")]),
        );
        set.set(
            HookPoint::Egress,
            1,
            Chain::new(vec![entry(f.clone(), "filter")]),
        );
        (c, f, set)
    }

    /// Both hooks over one burst, as the pipeline runs them: what the
    /// filter sees is what classify let through. Returns the verdicts and
    /// how many packets reached the filter with an answer carried.
    fn both(c: &dyn Hook, f: &dyn Hook, pkts: &mut [Pkt]) -> (Vec<Verdict>, usize) {
        let mut verdicts = run(c, HookPoint::Ingress, pkts, 0);
        let passed: Vec<usize> = (0..pkts.len())
            .filter(|&i| verdicts[i] == Verdict::Accept)
            .collect();
        let mut routed: Vec<Pkt> = passed.iter().map(|&i| pkts[i].clone()).collect();
        let carried = routed.iter().filter(|p| p.meta.lookahead[0] != 0).count();
        for (&i, v) in passed.iter().zip(run(f, HookPoint::Egress, &mut routed, 0)) {
            verdicts[i] = v;
        }
        (verdicts, carried)
    }

    /// The classify and filter counters that do not depend on lookahead.
    fn counts(c: &dyn Hook, f: &dyn Hook) -> Vec<u64> {
        let mut v = vec![stat(c, "matched"), stat(c, "unparsed")];
        for name in [
            "rule_accepted",
            "rule_dropped",
            "policy_accepted",
            "policy_dropped",
            "unparsed",
        ] {
            v.push(stat(f, name));
        }
        v
    }

    #[test]
    fn answers_carried_from_ingress_decide_as_the_filter_would() {
        // The test worker keeps its `HookWorker`s by hook address: every hook stays
        // alive to the end, so that no new one takes an old one's address.
        let mut alive = Vec::new();
        for seed in 0..40 {
            let mut rng = Rng::with_seed(seed);
            let (ct, ft) = (classify_rules(&mut rng, 30), filter_rules(&mut rng, 20));
            let (c, f, set) = pair(&ct, &ft);
            let (c0, f0, _) = pair(&ct, &ft);
            alive.push([c.clone(), f.clone(), c0.clone(), f0.clone()]);
            let linked = link(&set);
            assert_eq!(linked.egress, vec![(1, 0)], "seed {seed}");
            assert_eq!(linked.ingress, vec![0], "seed {seed}");
            let mut carried = 0;
            for _ in 0..8 {
                let pkts: Vec<Pkt> = (0..32).map(|_| packet(&mut rng)).collect();
                let (mut a, mut b) = (pkts.clone(), pkts);
                let (got, n) = both(&*c, &*f, &mut a);
                let (want, none) = both(&*c0, &*f0, &mut b);
                assert_eq!(got, want, "seed {seed}");
                assert_eq!(none, 0, "seed {seed}: carried without a link");
                for (x, y) in a.iter().zip(&b) {
                    assert_eq!((x.meta.mark, x.meta.class), (y.meta.mark, y.meta.class));
                }
                carried += n;
            }
            assert_eq!(counts(&*c, &*f), counts(&*c0, &*f0), "seed {seed}");
            // Plain packets the classify let through were answered ahead;
            // those with IP options or fragments were not.
            assert!(carried > 0, "seed {seed}: nothing carried");
            assert_eq!(stat(&*f, "answered_ahead"), carried as u64, "seed {seed}");
            assert!(stat(&*f, "unparsed") + stat(&*c, "unparsed") < 8 * 32);
        }
    }

    /// A stateful filter's rules: state-only rules among random ones.
    fn stateful_rules(rng: &mut Rng, n: usize) -> String {
        let mut t = format!(
            "policy = \"{}\"\nstateful = true\n",
            ["accept", "drop"][rng.usize(..2)]
        );
        let at = rng.usize(..4);
        for i in 0..n {
            if i == at {
                t += "[[rule]]\nstate = [\"established\", \"related\"]\naction = \"accept\"\n";
            }
            if i == at + 3 {
                let action = ["accept", "drop"][rng.usize(..2)];
                t += &format!("[[rule]]\nstate = \"new\"\naction = \"{action}\"\n");
            }
            let action = ["accept", "drop"][rng.usize(..2)];
            t += &format!("[[rule]]\n{}action = \"{action}\"\n", rule_match(rng));
        }
        t
    }

    /// How a test makes packets: a new one, and (stateful tests) a reply.
    type Traffic = (fn(&mut Rng) -> Pkt, Option<fn(&Pkt) -> Pkt>);

    /// Eight bursts of 32 packets through a linked classify and filter
    /// (`hooks[..2]`) and the same hooks unlinked (`hooks[2..]`): each
    /// packet `new` or, given `reply`, half of them replies to earlier ones.
    /// The verdicts, marks and classes are the same, the unlinked pair
    /// carries nothing, and so are the counters that do not depend on
    /// lookahead. Returns every packet as the linked classify left it.
    fn alike(hooks: [&dyn Hook; 4], rng: &mut Rng, (new, reply): Traffic, seed: u64) -> Vec<Pkt> {
        let [c, f, c0, f0] = hooks;
        let (mut seen, mut classified) = (Vec::<Pkt>::new(), Vec::new());
        for _ in 0..8 {
            let pkts: Vec<Pkt> = (0..32)
                .map(|_| match (seen.len(), reply) {
                    (n, Some(reply)) if n > 0 && rng.bool() => reply(&seen[rng.usize(..n)]),
                    _ => new(rng),
                })
                .collect();
            seen.extend(pkts.iter().cloned());
            let (mut a, mut b) = (pkts.clone(), pkts);
            let (got, _) = both(c, f, &mut a);
            let (want, none) = both(c0, f0, &mut b);
            assert_eq!(got, want, "seed {seed}");
            assert_eq!(none, 0, "seed {seed}: carried without a link");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((x.meta.mark, x.meta.class), (y.meta.mark, y.meta.class));
            }
            classified.extend(a);
        }
        assert_eq!(counts(c, f), counts(c0, f0), "seed {seed}");
        classified
    }

    /// Two stateful filters tracked the same connections.
    fn same_tracking(f: &dyn Hook, f0: &dyn Hook, seed: u64) {
        for n in ["ct_new", "ct_established", "ct_entries"] {
            assert_eq!(stat(f, n), stat(f0, n), "seed {seed}: {n}");
        }
    }

    /// The reply of a packet: addresses and ports swapped.
    fn reply(p: &Pkt) -> Pkt {
        let mut q = p.clone();
        let ip = &mut q.data[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        for i in 0..4 {
            ip.swap(12 + i, 16 + i);
        }
        if ip.len() >= ihl + 4 {
            ip.swap(ihl, ihl + 2);
            ip.swap(ihl + 1, ihl + 3);
        }
        q
    }

    #[test]
    fn a_stateful_filter_takes_carried_answers_and_its_state_rules() {
        let mut alive = Vec::new();
        let (mut established, mut answered) = (0, 0);
        for seed in 100..130 {
            let mut rng = Rng::with_seed(seed);
            let (ct, ft) = (classify_rules(&mut rng, 20), stateful_rules(&mut rng, 20));
            let (c, f, set) = pair(&ct, &ft);
            let (c0, f0, _) = pair(&ct, &ft);
            alive.push([c.clone(), f.clone(), c0.clone(), f0.clone()]);
            let linked = link(&set);
            assert_eq!(linked.egress, vec![(1, 0)], "seed {seed}");
            // New packets, and replies to earlier ones (established).
            let traffic = (
                packet as fn(&mut Rng) -> Pkt,
                Some(reply as fn(&Pkt) -> Pkt),
            );
            alike([&*c, &*f, &*c0, &*f0], &mut rng, traffic, seed);
            same_tracking(&*f, &*f0, seed);
            established += stat(&*f, "ct_established");
            answered += stat(&*f, "answered_ahead");
        }
        // The traffic reached both kinds of rules: replies of tracked flows
        // and answers carried from ingress.
        assert!(established > 100, "{established} established");
        assert!(answered > 1000, "{answered} answered ahead");
    }

    #[test]
    fn filters_that_read_what_changes_on_the_way_are_not_answered_ahead() {
        for extra in ["mark = 1", "class = 2", "out_port = 1", "state = \"new\""] {
            let stateful = if extra.starts_with("state") {
                "stateful = true\n"
            } else {
                ""
            };
            let filter = format!(
                "policy = \"accept\"\n{stateful}[[rule]]\nproto = \"udp\"\n{extra}\naction = \"drop\"\n"
            );
            let (_, f, set) = pair("[[rule]]\nproto = \"udp\"\nset_mark = 1\n", &filter);
            assert_eq!(link(&set), Linked::default(), "{extra}");
            assert!(f.stats().iter().all(|(n, _)| *n != "answered_ahead"));
        }
        let counting = "policy = \"accept\"\n[[rule]]\nproto = \"udp\"\naction = \"count\"\n";
        let (_, _, set) = pair("[[rule]]\nproto = \"udp\"\nset_mark = 1\n", counting);
        assert_eq!(link(&set), Linked::default(), "count rules");
    }

    #[test]
    fn only_the_last_ingress_and_first_egress_hooks_are_linked() {
        let c = "[[rule]]\nproto = \"udp\"\nset_mark = 1\n";
        let f = "policy = \"accept\"\n[[rule]]\nproto = \"udp\"\naction = \"drop\"\n";
        let (ch, fh, _) = pair(c, f);
        let (ch2, fh2, _) = pair(c, f);
        let mut set = HookSet::empty(2);
        // classify, then another classify: only the second may carry.
        let ingress = vec![entry(ch.clone(), "classify"), entry(ch2, "classify")];
        set.set(HookPoint::Ingress, 0, Chain::new(ingress));
        let egress = vec![entry(fh.clone(), "filter"), entry(fh2, "filter")];
        set.set(HookPoint::Egress, 1, Chain::new(egress));
        let linked = link(&set);
        assert_eq!((linked.ingress, linked.egress), (vec![0], vec![(1, 0)]));
        assert!(ch.stats().iter().all(|(n, _)| *n != "lookahead_sets"));
        assert_eq!(stat(&*fh, "answered_ahead"), 0);
    }

    /// A random rule's match keys for either family: IPv6 prefixes of
    /// 2001:db8:N::/48 (N in 1..=4) or IPv4 ones as [`rule_match`], or
    /// neither.
    fn rule_match_any(rng: &mut Rng) -> String {
        if rng.bool() {
            return rule_match(rng);
        }
        let mut t = String::new();
        if rng.bool() {
            let net = rng.u8(1..5);
            t += &match rng.u8(..3) {
                0 => format!("src = \"2001:db8:{net}::/48\"\n"),
                _ => format!("src = \"2001:db8:{net}::{}\"\n", rng.u8(1..4)),
            };
        }
        if rng.bool() {
            t += &format!("dst = \"2001:db8:{}::{}\"\n", rng.u8(1..5), rng.u8(1..4));
        }
        match proto_match(rng) {
            Some(p) => t += &p,
            None => t += &format!("in_port = {}\n", rng.u8(..2)),
        }
        t
    }

    fn rules_any(rng: &mut Rng, n: usize, actions: &[&str], head: String) -> String {
        let mut t = head;
        for i in 0..n {
            let action = match actions[rng.usize(..actions.len())] {
                "mark" => format!("set_mark = {i}"),
                a => format!("action = \"{a}\""),
            };
            t += &format!("[[rule]]\n{}{action}\n", rule_match_any(rng));
        }
        t
    }

    /// An IPv6 packet (plain TCP or UDP mostly, some behind a Hop-by-Hop
    /// header, which no lookahead answers) or, one in four, an IPv4 one.
    fn packet_any(rng: &mut Rng) -> Pkt {
        if rng.u8(..4) == 0 {
            return packet(rng);
        }
        let addr = |rng: &mut Rng| format!("2001:db8:{}::{}", rng.u8(1..5), rng.u8(1..4));
        let (src, dst) = (addr(rng), addr(rng));
        let (sport, dport) = (rng.u16(1024..), PORTS[rng.usize(..PORTS.len())]);
        let p = match rng.u8(..6) {
            0 => {
                let mut x = vec![17, 0, 1, 4, 0, 0, 0, 0];
                x.extend(sport.to_be_bytes());
                x.extend(dport.to_be_bytes());
                x.extend([0, 8, 0, 0]);
                Pkt::ipv6(&src, &dst, 0, &x)
            }
            1..=2 => Pkt::tcp6(&src, &dst, sport, dport, 0x10),
            _ => Pkt::udp6(&src, &dst, sport, dport),
        };
        p.with(|m| m.in_port = rng.u16(..2))
    }

    /// The reply of a packet of either family: addresses and the first
    /// four bytes after the fixed header (ports) swapped.
    fn reply_any(p: &Pkt) -> Pkt {
        if p.meta.protocol != 0x86dd {
            return reply(p);
        }
        let mut q = p.clone();
        let ip = &mut q.data[14..];
        for i in 0..16 {
            ip.swap(8 + i, 24 + i);
        }
        if ip[6] != 0 {
            ip.swap(40, 42);
            ip.swap(41, 43);
        }
        q
    }

    #[test]
    fn ipv6_packets_carry_answers_that_decide_as_the_filter_would() {
        let mut alive = Vec::new();
        let (mut carried6, mut answered, mut established) = (0, 0, 0);
        for seed in 200..240 {
            let mut rng = Rng::with_seed(seed);
            let stateful = seed % 2 == 1;
            let ct = rules_any(&mut rng, 30, &["drop", "mark", "mark"], String::new());
            let head = format!(
                "policy = \"{}\"\n{}",
                ["accept", "drop"][rng.usize(..2)],
                if stateful { "stateful = true\n" } else { "" }
            );
            let mut ft = rules_any(&mut rng, 20, &["accept", "drop"], head);
            if stateful {
                ft += "[[rule]]\nstate = [\"established\"]\naction = \"accept\"\n";
            }
            let (c, f, set) = pair(&ct, &ft);
            let (c0, f0, _) = pair(&ct, &ft);
            alive.push([c.clone(), f.clone(), c0.clone(), f0.clone()]);
            assert_eq!(link(&set).egress, vec![(1, 0)], "seed {seed}");
            let replies = stateful.then_some(reply_any as fn(&Pkt) -> Pkt);
            let classified = alike(
                [&*c, &*f, &*c0, &*f0],
                &mut rng,
                (packet_any, replies),
                seed,
            );
            carried6 += classified
                .iter()
                .filter(|p| p.meta.protocol == 0x86dd && p.meta.lookahead[0] != 0)
                .count();
            if stateful {
                same_tracking(&*f, &*f0, seed);
                established += stat(&*f, "ct_established");
            }
            answered += stat(&*f, "answered_ahead");
        }
        // IPv6 packets carried answers, and the filters took them.
        assert!(carried6 > 2000, "{carried6} IPv6 packets carried an answer");
        assert!(answered > 2000, "{answered} answered ahead");
        assert!(established > 100, "{established} established");
    }
}
