//! The `hooks` section of `bench/RESULTS.md`: every case beside no hooks on
//! the same traffic, the targets, the rules and the commands.

use crate::compare::thousands;
use crate::hooks_bench::{collapsed_hooks, min_max, Case, Flows, Hooks, Summary, CT_MAX};
use crate::rates;
use std::fmt::Write as _;

/// Whether the targets hold: (2) within noise of (1), (4) >= 0.85 of (1),
/// (4b) >= 0.70 of (1b), (6) >= 0.60 of (1b). None where a case did not run.
pub fn targets(s: &Summary) -> Vec<(String, Option<bool>)> {
    let noise = s.noise();
    let f = |r: Option<f64>| r.map(|r| format!("{r:.3}")).unwrap_or_else(|| "n/a".into());
    let r2 = s.median_ratio(Case::OTHER_PORT);
    let mut v = vec![(
        format!(
            "(1) and (2) equal within noise (an empty hook point costs nothing): \
             (2)/(1) = {}, noise ±{:.1}% (half the min–max spread of (1), at least 2%)",
            f(r2),
            noise * 100.0
        ),
        r2.map(|r| (r - 1.0).abs() <= noise),
    )];
    for c in Case::ALL {
        if let Some((_, least)) = c.target() {
            let r = s.median_ratio(c);
            v.push((
                format!(
                    "{} >= {least:.2} of {}: {}",
                    c.label(),
                    c.baseline().label(),
                    f(r)
                ),
                r.map(|r| r >= least),
            ));
        }
    }
    v
}

/// The ratio column of a case.
fn ratio_cell(s: &Summary, c: Case) -> String {
    let bold = |x: f64| format!("**{x:.3}**");
    match (c.hooks, c.flows) {
        (Hooks::None, Flows::Few) => "1.00".into(),
        // A baseline: to (1), for scale.
        (Hooks::None, _) => match rates::median(&s.ratios(c, Case::NO_HOOKS)) {
            Some(x) => format!("{x:.3} (to (1))"),
            None => "n/a".into(),
        },
        (_, Flows::Few) => s.median_ratio(c).map(bold).unwrap_or_else(|| "n/a".into()),
        _ => match s.median_ratio(c) {
            Some(x) => format!("{} (to {})", bold(x), c.baseline().label()),
            None => "n/a".into(),
        },
    }
}

fn write_table(m: &mut String, s: &Summary) {
    let _ = writeln!(
        m,
        "| case | hooks | Mpps median | min–max | ratio to no hooks, same traffic | target |"
    );
    let _ = writeln!(m, "|---|---|---:|---:|---:|---|");
    for r in &s.cases {
        let c = r.case;
        let v = s.rates(c);
        let (median, range) = match rates::median(&v) {
            Some(med) => {
                let (lo, hi) = min_max(&v);
                (
                    format!("{:.2}", med / 1e6),
                    format!("{:.2}–{:.2}", lo / 1e6, hi / 1e6),
                )
            }
            None => ("failed".into(), "".into()),
        };
        let mut hooks = c.describe();
        let ct: Vec<f64> = r.ct_entries.iter().map(|&x| x as f64).collect();
        if let Some(ct) = rates::median(&ct) {
            let _ = write!(hooks, "; {} tracked at exit", thousands(ct as u32));
        }
        let target = match (c.target(), c) {
            (Some((t, _)), _) => t,
            (None, Case::OTHER_PORT) => "= (1) within noise",
            (None, c) if matches!(c.hooks, Hooks::Rules10k | Hooks::Rules1k) => "none (scale)",
            _ => "",
        };
        let _ = writeln!(
            m,
            "| {} | {hooks} | {median} | {range} | {} | {target} |",
            c.label(),
            ratio_cell(s, c)
        );
    }
}

/// A markdown section for `bench/RESULTS.md`.
pub fn markdown(s: &Summary, machine: &str, command: &str) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "## Hooks (issue: hooks): pcap replay -> classify -> route -> filter -> null, \
         64-byte frames\n"
    );
    let _ = writeln!(m, "{machine}\n");
    let _ = writeln!(m, "```\n{command}\n```\n");
    let _ = writeln!(
        m,
        "Mpps on the router's pcap replay (net_pcap0) -> null (net_null0) setup, one \
         forwarding lcore, fastpath's default settings; {} round(s), each running every case \
         once in an order rotated per round; median over rounds. Each case's ratio is the \
         median of its per-round ratios to no hooks on the same traffic: (1) for 64 flows, \
         (1b) for 100,000 flows, (1c) for 1,000,000 flows (one frame per flow in the pcap, \
         so every packet is of another flow than the last 99,999 or 999,999). The ratio of \
         (1b) and (1c) is to (1), for scale.\n",
        s.rounds
    );
    write_table(&mut m, s);
    let _ = writeln!(m, "\nTargets:\n");
    for (line, ok) in targets(s) {
        let verdict = match ok {
            Some(true) => "holds",
            Some(false) => "does not hold",
            None => "not measured",
        };
        let _ = writeln!(m, "- {line}: **{verdict}**.");
    }
    let errors = s.errors();
    if !errors.is_empty() {
        let _ = writeln!(m, "\nFailed cases:\n");
        for (c, e) in errors {
            let first = e
                .lines()
                .find(|l| l.contains("error"))
                .or_else(|| e.lines().next())
                .unwrap_or("");
            let _ = writeln!(m, "- {}: {}", c.label(), first.trim());
        }
    }
    let _ = writeln!(
        m,
        "\nEvery rule but the last of each hook has a destination in 172.16.0.0/12 (generated, \
         deterministic: prefixes of length 16-32, udp or tcp, some port ranges), so the \
         traffic (UDP from 198.18.0.0/16 to 198.19.0.1) goes through the whole rule set and \
         matches the last rule: classify sets class 1, the filter (policy drop) accepts. Each \
         run checks that fastpath logged every hook at start, that no hook dropped a packet, \
         and that every packet matched a classify rule. In (6) the traffic is one-way, so no \
         flow sees a reply: every packet is `new` to the connection table (the `established` \
         rule never matches); it is looked up, goes through the rules, and refreshes its \
         entry: the stateful filter's worst case. No case passes an option beyond the pool \
         its pcap needs: caches and memos run with their defaults.\n"
    );
    let _ = writeln!(
        m,
        "The hooks of (4) ((4b), (4c): the same on 100,000 and 1,000,000 flows; (5), (5b), \
         (5c): 10,000 classify rules; (6): `stateful = true`, `conntrack_max = {CT_MAX}` (room \
         for its 100,000 connections), and first the rule `state = [\"established\", \
         \"related\"]`, `action = \"accept\"`), after the router config of \
         `fastpath-bench compare --router`:\n\n```toml\n{}```\n",
        collapsed_hooks(Case::RULES_1K)
    );
    let _ = writeln!(
        m,
        "fastpath commands of (4), (6) and (4c) (net_pcap holds the pcap's frames in mbufs, \
         hence the larger pool and EAL memory of the many-flows cases; every case of the same \
         traffic runs with the same; the pcaps are written once into a cache folder, \
         `$CACHE`, `--cache-dir`):\n\n```\n{}\n```",
        s.commands.join("\n")
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks_bench::CaseResult;

    fn mk(c: Case, v: &[f64]) -> CaseResult {
        CaseResult {
            case: c,
            pps: v.iter().map(|&x| Some(x)).collect(),
            ct_entries: if c == Case::CONNTRACK {
                vec![100_000]
            } else {
                vec![]
            },
            error: None,
        }
    }

    #[test]
    fn every_case_against_no_hooks_on_its_own_traffic() {
        let s = Summary {
            rounds: 3,
            cases: vec![
                mk(Case::NO_HOOKS, &[10.0, 10.0, 10.0]),
                mk(Case::OTHER_PORT, &[10.1, 9.95, 10.0]),
                mk(Case::ACCEPT_ALL, &[9.0, 9.0, 9.0]),
                mk(Case::RULES_1K, &[8.5, 8.0, 8.2]),
                mk(Case::RULES_10K, &[7.0, 7.0, 7.0]),
                mk(Case::NO_HOOKS_MANY, &[9.0, 9.0, 9.0]),
                mk(Case::RULES_1K_MANY, &[7.2, 6.3, 6.0]),
                mk(Case::CONNTRACK, &[4.0, 5.0, 5.0]),
                mk(Case::NO_HOOKS_MILLION, &[5.0, 5.0, 5.0]),
                mk(Case::RULES_1K_MILLION, &[2.0, 2.5, 3.0]),
            ],
            commands: vec!["fastpath a".into(), "fastpath b".into()],
        };
        assert!((s.median_ratio(Case::RULES_1K).unwrap() - 0.82).abs() < 1e-9);
        assert!((s.median_ratio(Case::CONNTRACK).unwrap() - 5.0 / 9.0).abs() < 1e-9);
        assert!((s.median_ratio(Case::RULES_1K_MILLION).unwrap() - 0.5).abs() < 1e-9);
        let md = markdown(&s, "machine", "fastpath-bench hooks");
        assert!(md.contains("| (4) |"), "{md}");
        assert!(md.contains("**0.820** | >= 0.85 |"), "{md}");
        assert!(
            md.contains("| **0.700** (to (1b)) | >= 0.70 of (1b) |"),
            "{md}"
        );
        assert!(
            md.contains("| **0.500** (to (1c)) | none (scale) |"),
            "{md}"
        );
        assert!(md.contains("| 0.500 (to (1)) |  |"), "{md}");
        assert!(md.contains("(2)/(1) = 1.000"), "{md}");
        assert!(!md.contains("flow-memo"), "{md}");
        let t = targets(&s);
        assert_eq!(
            t.iter().map(|x| x.1).collect::<Vec<_>>(),
            [Some(true), Some(false), Some(true), Some(false)]
        );
        assert!(
            t[2].0.starts_with("(4b) >= 0.70 of (1b): 0.700"),
            "{}",
            t[2].0
        );
        assert!(md.contains("100,000 tracked at exit"), "{md}");
        assert!(md.contains("**does not hold**"), "{md}");
    }

    #[test]
    fn cases_not_run_are_not_measured() {
        let s = Summary {
            rounds: 1,
            cases: vec![mk(Case::NO_HOOKS, &[10.0]), mk(Case::RULES_1K, &[9.0])],
            commands: Vec::new(),
        };
        let t = targets(&s);
        assert_eq!(t[1].1, Some(true));
        assert_eq!(t[2].1, None);
        let md = markdown(&s, "m", "c");
        assert!(!md.contains("| (6) |"), "{md}");
        assert!(md.contains("not measured"), "{md}");
    }
}
