//! The rules and configs of the hooks benchmark's cases ([`Case`]): the
//! generated rules match no packet of the traffic, except the last one of
//! each hook, so every packet goes through the whole rule set.

use crate::compare::{self, thousands};
use crate::frame::FlowSpec;
use crate::hooks_bench::{CT_MAX, FILTER_RULES, NULL_PORT, PCAP_PORT};
use crate::hooks_case::{Case, Hooks};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// One `[[hook.rule]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub src: Option<(Ipv4Addr, u8)>,
    pub dst: Option<(Ipv4Addr, u8)>,
    pub proto: Option<&'static str>,
    pub sport: Option<(u16, u16)>,
    pub dport: Option<(u16, u16)>,
    /// `state = ["established", "related"]`.
    pub established: bool,
    pub set_class: Option<u16>,
    pub set_mark: Option<u32>,
    /// `"drop"` (classify); `"accept"` or `"drop"` (filter).
    pub action: Option<&'static str>,
}

impl Rule {
    pub fn to_toml(&self) -> String {
        let mut s = String::from("[[hook.rule]]\n");
        let prefix = |(a, l): (Ipv4Addr, u8)| format!("\"{a}/{l}\"");
        let range = |(lo, hi): (u16, u16)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("\"{lo}-{hi}\"")
            }
        };
        if self.established {
            s.push_str("state = [\"established\", \"related\"]\n");
        }
        if let Some(p) = self.src {
            let _ = writeln!(s, "src = {}", prefix(p));
        }
        if let Some(p) = self.dst {
            let _ = writeln!(s, "dst = {}", prefix(p));
        }
        if let Some(p) = self.proto {
            let _ = writeln!(s, "proto = \"{p}\"");
        }
        if let Some(r) = self.sport {
            let _ = writeln!(s, "sport = {}", range(r));
        }
        if let Some(r) = self.dport {
            let _ = writeln!(s, "dport = {}", range(r));
        }
        if let Some(c) = self.set_class {
            let _ = writeln!(s, "set_class = {c}");
        }
        if let Some(m) = self.set_mark {
            let _ = writeln!(s, "set_mark = {m:#x}");
        }
        if let Some(a) = self.action {
            let _ = writeln!(s, "action = \"{a}\"");
        }
        s
    }
}

/// The rules' random numbers: one seeded generator, as in the tests. The
/// workload is the seed's stream under the `fastrand` that Cargo.lock pins;
/// bench/RESULTS.md records each hook's first rules with its figures.
type Rng = fastrand::Rng;

/// A prefix inside 172.16.0.0/12 of length 16..=32, host bits zero: the
/// traffic (198.18.0.0/15) never falls in one.
fn private_prefix(r: &mut Rng) -> (Ipv4Addr, u8) {
    let len = r.u8(16..=32);
    let base = u32::from(Ipv4Addr::new(172, 16, 0, 0));
    let a = base | (r.u32(..) & 0x000f_ffff);
    let mask = u32::MAX << (32 - u32::from(len));
    (Ipv4Addr::from(a & mask), len)
}

fn port_range(r: &mut Rng) -> (u16, u16) {
    let lo = r.u16(..);
    if r.bool() {
        (lo, lo)
    } else {
        (lo, lo.saturating_add(r.u16(1..=1024)))
    }
}

/// `n` rules that match no packet of the benchmark traffic: every one has a
/// destination in 172.16.0.0/12. Classify rules set a class, a mark or both
/// (one in 32 drops); filter rules accept or drop.
fn generated(seed: u64, n: usize, classify: bool) -> Vec<Rule> {
    let mut r = Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let mut rule = Rule {
                dst: Some(private_prefix(&mut r)),
                proto: Some(if r.bool() { "udp" } else { "tcp" }),
                ..Default::default()
            };
            if r.bool() {
                rule.src = Some(private_prefix(&mut r));
            }
            if r.u8(..5) < 3 {
                rule.dport = Some(port_range(&mut r));
            }
            if r.u8(..5) == 0 {
                rule.sport = Some(port_range(&mut r));
            }
            if classify {
                if r.u8(..32) == 0 {
                    rule.action = Some("drop");
                } else {
                    let which = r.u8(..3);
                    if which != 2 {
                        rule.set_class = Some(r.u16(2..16));
                    }
                    if which != 0 {
                        rule.set_mark = Some(r.u32(..) | 1);
                    }
                }
            } else {
                rule.action = Some(if r.bool() { "accept" } else { "drop" });
            }
            rule
        })
        .collect()
}

/// The traffic's destination /16.
fn traffic_prefix(spec: &FlowSpec) -> (Ipv4Addr, u8) {
    let [a, b, _, _] = spec.dst_ip;
    (Ipv4Addr::new(a, b, 0, 0), 16)
}

/// `n` classify rules: `n - 1` generated ones, then `udp` to the traffic's
/// /16 with `set_class = 1`.
pub fn classify_rules(n: usize, spec: &FlowSpec) -> Vec<Rule> {
    let mut v = generated(0xc1a5_51f7, n.saturating_sub(1), true);
    v.push(Rule {
        dst: Some(traffic_prefix(spec)),
        proto: Some("udp"),
        set_class: Some(1),
        ..Default::default()
    });
    v
}

/// Filter rules: (stateful: `state = established, related` accept first,
/// then) `n - 1` generated ones, then accept `udp` to the traffic's /16.
pub fn filter_rules(n: usize, spec: &FlowSpec, stateful: bool) -> Vec<Rule> {
    let mut v = Vec::new();
    if stateful {
        v.push(Rule {
            established: true,
            action: Some("accept"),
            ..Default::default()
        });
    }
    v.extend(generated(0xf1_17e4, n.saturating_sub(1), false));
    v.push(Rule {
        dst: Some(traffic_prefix(spec)),
        proto: Some("udp"),
        action: Some("accept"),
        ..Default::default()
    });
    v
}

fn hook_header(point: &str, port: &str, kind: &str, params: &[(&str, String)]) -> String {
    let mut s = format!("\n[[hook]]\npoint = \"{point}\"\nport = \"{port}\"\nkind = \"{kind}\"\n");
    for (k, v) in params {
        let _ = writeln!(s, "{k} = {v}");
    }
    s
}

/// The hooks of a case: header and rules of each `[[hook]]`.
fn hooks(case: Case) -> Vec<(String, Vec<Rule>)> {
    let spec = case.flows.traffic().spec;
    match case.hooks {
        Hooks::None => Vec::new(),
        Hooks::OtherPort => vec![
            (hook_header("ingress", NULL_PORT, "accept", &[]), Vec::new()),
            (hook_header("egress", PCAP_PORT, "accept", &[]), Vec::new()),
        ],
        Hooks::AcceptAll => vec![(hook_header("ingress", PCAP_PORT, "accept", &[]), Vec::new())],
        Hooks::Rules1k | Hooks::Rules10k | Hooks::Conntrack => {
            let stateful = case.hooks == Hooks::Conntrack;
            let mut params = vec![("policy", "\"drop\"".to_string())];
            if stateful {
                params.push(("stateful", "true".into()));
                params.push(("conntrack_max", CT_MAX.to_string()));
            }
            vec![
                (
                    hook_header("ingress", PCAP_PORT, "classify", &[]),
                    classify_rules(case.classify_rules(), &spec),
                ),
                (
                    hook_header("egress", NULL_PORT, "filter", &params),
                    filter_rules(FILTER_RULES, &spec, stateful),
                ),
            ]
        }
    }
}

/// The `[[hook]]` sections of a case.
pub fn hooks_toml(case: Case) -> String {
    let mut s = String::new();
    for (header, rules) in hooks(case) {
        s.push_str(&header);
        for r in rules {
            s.push('\n');
            s.push_str(&r.to_toml());
        }
    }
    s
}

/// The whole fastpath config of a case: the router setup plus its hooks.
pub fn config(case: Case) -> String {
    let mut s = compare::router_config(&case.flows.traffic().spec);
    if case.hook_count() > 0 {
        let _ = write!(s, "\n# fastpath-bench hooks, case {}", case.label());
        s.push_str(&hooks_toml(case));
    }
    s
}

/// The hooks of a case for the results file: each hook's first three rules,
/// a count of the rest, and its last rule.
pub fn collapsed_hooks(case: Case) -> String {
    let mut s = String::new();
    for (header, rules) in hooks(case) {
        s.push_str(&header);
        let n = rules.len();
        for (i, r) in rules.iter().enumerate() {
            if i < 3 || i + 1 == n {
                s.push('\n');
                s.push_str(&r.to_toml());
            } else if i == 3 {
                let _ = write!(
                    s,
                    "\n# ... {} more generated rules (none matches the traffic) ...\n",
                    thousands((n - 4) as u32)
                );
            }
        }
    }
    s.trim_start().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks_bench::{CLASSIFY_RULES, CLASSIFY_RULES_LARGE};
    use crate::hooks_case::{Flows, FRAMES};
    use fastpath::config::RouterConfig;
    use std::path::Path;

    /// A traffic packet's 5-tuple.
    struct Pkt {
        src: u32,
        dst: u32,
        sport: u16,
        dport: u16,
    }

    fn packets(flows: Flows) -> Vec<Pkt> {
        let spec = flows.traffic().spec;
        // Every flow of the 100,000; a sample of the million.
        let n = (spec.flows as usize).clamp(FRAMES, 200_000);
        (0..n as u64)
            .map(|s| {
                let f = spec.frame(s);
                assert_eq!(f[23], 17, "UDP");
                let be32 = |i: usize| u32::from_be_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
                let be16 = |i: usize| u16::from_be_bytes([f[i], f[i + 1]]);
                Pkt {
                    src: be32(26),
                    dst: be32(30),
                    sport: be16(34),
                    dport: be16(36),
                }
            })
            .collect()
    }

    /// Does a rule, as parsed back from the config, match `p` (UDP, class
    /// 1, mark 0, state new)?
    fn matches(get: &dyn Fn(&str) -> Option<String>, keys: &[String], p: &Pkt) -> bool {
        let prefix = |s: String, a: u32| {
            let (addr, len) = s.split_once('/').expect("prefix with length");
            let addr: Ipv4Addr = addr.parse().expect("address");
            let len: u32 = len.parse().expect("length");
            assert!(len <= 32);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            assert_eq!(u32::from(addr) & !mask, 0, "host bits in {s}");
            a & mask == u32::from(addr)
        };
        let range = |s: String, v: u16| {
            let (lo, hi) = match s.split_once('-') {
                Some((lo, hi)) => (lo.parse().unwrap(), hi.parse().unwrap()),
                None => (s.parse::<u16>().unwrap(), s.parse::<u16>().unwrap()),
            };
            assert!(lo <= hi, "range {s}");
            (lo..=hi).contains(&v)
        };
        for k in keys {
            let v = get(k).expect("key");
            let ok = match k.as_str() {
                "src" => prefix(v, p.src),
                "dst" => prefix(v, p.dst),
                "proto" => v == "udp",
                "sport" => range(v, p.sport),
                "dport" => range(v, p.dport),
                "state" => v.contains("\"new\""),
                "set_class" | "set_mark" | "action" => true,
                other => panic!("unexpected key {other}"),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn parse(case: Case) -> RouterConfig {
        RouterConfig::parse(Path::new("hooks.toml"), &config(case))
            .unwrap_or_else(|e| panic!("case {}: {e}", case.label()))
    }

    #[test]
    fn configs_parse_with_the_expected_hooks_and_rule_counts() {
        for case in Case::ALL {
            let cfg = parse(case);
            assert_eq!(cfg.hooks.len(), case.hook_count(), "{}", case.label());
            assert_eq!(cfg.ports.len(), 2);
            let kinds: Vec<(&str, String, usize)> = cfg
                .hooks
                .iter()
                .map(|h| (h.kind.as_str(), h.port.to_string(), h.args.rules.len()))
                .collect();
            let expected: Vec<(&str, String, usize)> = match case.hooks {
                Hooks::None => vec![],
                Hooks::OtherPort => vec![
                    ("accept", NULL_PORT.into(), 0),
                    ("accept", PCAP_PORT.into(), 0),
                ],
                Hooks::AcceptAll => vec![("accept", PCAP_PORT.into(), 0)],
                Hooks::Rules1k => vec![
                    ("classify", PCAP_PORT.into(), 1_000),
                    ("filter", NULL_PORT.into(), 100),
                ],
                Hooks::Rules10k => vec![
                    ("classify", PCAP_PORT.into(), 10_000),
                    ("filter", NULL_PORT.into(), 100),
                ],
                Hooks::Conntrack => vec![
                    ("classify", PCAP_PORT.into(), 1_000),
                    ("filter", NULL_PORT.into(), 101),
                ],
            };
            assert_eq!(kinds, expected, "{}", case.label());
            for h in &cfg.hooks {
                if h.kind == "filter" {
                    let p = &h.args.params;
                    assert_eq!(p.get("policy").and_then(|v| v.as_str()), Some("drop"));
                    let stateful = case.hooks == Hooks::Conntrack;
                    assert_eq!(
                        p.get("stateful").and_then(|v| v.as_bool()),
                        stateful.then_some(true)
                    );
                    assert_eq!(
                        p.get("conntrack_max").and_then(|v| v.as_integer()),
                        stateful.then_some(i64::from(CT_MAX))
                    );
                } else {
                    assert!(h.args.params.is_empty());
                }
                let expected_point = match (h.kind.as_str(), h.port.to_string().as_str()) {
                    ("classify", _) => "ingress",
                    ("filter", _) => "egress",
                    (_, p) if case.hooks == Hooks::OtherPort && p == PCAP_PORT => "egress",
                    _ => "ingress",
                };
                assert_eq!(h.point.name(), expected_point);
            }
        }
    }

    #[test]
    fn only_the_last_rule_matches_the_traffic() {
        for case in [
            Case::RULES_1K,
            Case::RULES_10K,
            Case::CONNTRACK,
            Case::RULES_1K_MILLION,
        ] {
            let cfg = parse(case);
            let pkts = packets(case.flows);
            for h in &cfg.hooks {
                let n = h.args.rules.len();
                for (i, rule) in h.args.rules.iter().enumerate() {
                    let get = |k: &str| {
                        rule.get(k)
                            .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
                    };
                    let keys: Vec<String> = rule.keys().cloned().collect();
                    let last = i + 1 == n;
                    // The generated rules never match: checking a few
                    // packets is enough; the last must match them all.
                    let sample = if last { &pkts[..] } else { &pkts[..4] };
                    for p in sample {
                        assert_eq!(
                            matches(&get, &keys, p),
                            last,
                            "{} {} rule {i}",
                            case.label(),
                            h.kind
                        );
                    }
                    if !last && !keys.iter().any(|k| k == "state") {
                        // Non-matching by construction: a destination in 172.16/12.
                        let dst = get("dst").expect("generated rules have a dst");
                        assert!(dst.starts_with("172."), "{dst}");
                    }
                }
                let last = h.args.rules.last().expect("rules");
                if h.kind == "classify" {
                    assert_eq!(last.get("set_class").and_then(|v| v.as_integer()), Some(1));
                } else {
                    assert_eq!(last.get("action").and_then(|v| v.as_str()), Some("accept"));
                }
            }
        }
    }

    #[test]
    fn generated_rules_are_varied_and_deterministic() {
        let spec = Flows::Few.traffic().spec;
        let a = classify_rules(CLASSIFY_RULES_LARGE, &spec);
        assert_eq!(a, classify_rules(CLASSIFY_RULES_LARGE, &spec));
        // (4)'s rules are the first of (5)'s.
        let b = classify_rules(CLASSIFY_RULES, &spec);
        assert_eq!(a[..CLASSIFY_RULES - 1], b[..CLASSIFY_RULES - 1]);
        let count = |f: &dyn Fn(&Rule) -> bool| b.iter().filter(|r| f(r)).count();
        assert!(count(&|r| r.action == Some("drop")) > 5);
        assert!(count(&|r| r.action == Some("drop")) < 100);
        assert!(count(&|r| r.set_class.is_some()) > 300);
        assert!(count(&|r| r.set_mark.is_some()) > 300);
        assert!(count(&|r| r.proto == Some("tcp")) > 300);
        assert!(count(&|r| r.dport.is_some_and(|(lo, hi)| lo < hi)) > 100);
        let lens: std::collections::BTreeSet<u8> =
            b.iter().filter_map(|r| r.dst.map(|d| d.1)).collect();
        assert_eq!(lens.len(), 17, "{lens:?}");
        let f = filter_rules(FILTER_RULES, &spec, false);
        assert!(f.iter().filter(|r| r.action == Some("drop")).count() > 20);
        assert!(f.iter().filter(|r| r.action == Some("accept")).count() > 20);
        assert!(filter_rules(FILTER_RULES, &spec, true)[0].established);
    }

    #[test]
    fn collapsed_hooks_show_three_rules_and_the_count() {
        let c = collapsed_hooks(Case::RULES_1K);
        assert!(c.contains("# ... 996 more generated rules"), "{c}");
        assert!(c.contains("# ... 96 more generated rules"), "{c}");
        assert_eq!(c.matches("[[hook.rule]]").count(), 8, "{c}");
        assert!(c.contains("set_class = 1\n"), "{c}");
        assert!(c.starts_with("[[hook]]"), "{c}");
    }
}
