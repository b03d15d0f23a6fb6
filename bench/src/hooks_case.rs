//! The cases of the hooks benchmark: which hooks, on which traffic, and the
//! case each is compared with (no hooks on the same traffic).
//!
//! | traffic | no hooks | other port | accept | 1,000 rules | 10,000 rules | conntrack |
//! |---|---|---|---|---|---|---|
//! | 64 flows, 1,024 frames | (1) | (2) | (3) | (4) | (5) | |
//! | 100,000 flows, one frame each | (1b) | | | (4b) | (5b) | (6) |
//! | 1,000,000 flows, one frame each | (1c) | | | (4c) | (5c) | |

use crate::compare::{self, thousands};
use crate::frame::FlowSpec;
use crate::pcap_cache::PcapTraffic;

/// The hooks of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hooks {
    /// (1): none.
    None,
    /// (2): `accept` at ingress of the null port and egress of the pcap
    /// port: hook points in use, but not on the traffic's path.
    OtherPort,
    /// (3): one `accept` at ingress of the pcap port.
    AcceptAll,
    /// (4): `classify` (1,000 rules) at ingress of the pcap port, `filter`
    /// (100 rules, policy drop) at egress of the null port.
    Rules1k,
    /// (5): (4) with 10,000 classify rules.
    Rules10k,
    /// (6): (4) with connection tracking.
    Conntrack,
}

impl Hooks {
    fn number(self) -> u8 {
        match self {
            Hooks::None => 1,
            Hooks::OtherPort => 2,
            Hooks::AcceptAll => 3,
            Hooks::Rules1k => 4,
            Hooks::Rules10k => 5,
            Hooks::Conntrack => 6,
        }
    }

    fn from_number(n: u8) -> Option<Hooks> {
        [
            Hooks::None,
            Hooks::OtherPort,
            Hooks::AcceptAll,
            Hooks::Rules1k,
            Hooks::Rules10k,
            Hooks::Conntrack,
        ]
        .into_iter()
        .find(|h| h.number() == n)
    }
}

/// The traffic of a case: 64-byte UDP frames, this many flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flows {
    /// [`FLOWS`] flows, [`FRAMES`] frames (as `compare`).
    Few,
    /// [`MANY_FLOWS`] flows, one frame each.
    Many,
    /// [`MILLION_FLOWS`] flows, one frame each.
    Million,
}

/// Flows and frames of the few-flows traffic.
pub const FLOWS: u32 = 64;
pub const FRAMES: usize = 1024;
/// Flows (and frames) of (1b), (4b), (5b) and (6).
pub const MANY_FLOWS: u32 = 100_000;
/// Flows (and frames) of (1c), (4c) and (5c).
pub const MILLION_FLOWS: u32 = 1_000_000;

impl Flows {
    pub fn count(self) -> u32 {
        match self {
            Flows::Few => FLOWS,
            Flows::Many => MANY_FLOWS,
            Flows::Million => MILLION_FLOWS,
        }
    }

    /// The label's suffix: (4), (4b), (4c).
    fn suffix(self) -> &'static str {
        match self {
            Flows::Few => "",
            Flows::Many => "b",
            Flows::Million => "c",
        }
    }

    /// 64-byte frames to net_pcap0's MAC.
    pub fn traffic(self) -> PcapTraffic {
        let spec = FlowSpec {
            frame_size: 64,
            flows: self.count(),
            dst_mac: compare::PCAP0_MAC,
            ..Default::default()
        };
        let frames = match self {
            Flows::Few => FRAMES,
            _ => self.count() as usize,
        };
        PcapTraffic::fixed(spec, frames)
    }
}

/// One measured setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Case {
    pub hooks: Hooks,
    pub flows: Flows,
}

const fn case(hooks: Hooks, flows: Flows) -> Case {
    Case { hooks, flows }
}

impl Case {
    pub const NO_HOOKS: Case = case(Hooks::None, Flows::Few);
    pub const OTHER_PORT: Case = case(Hooks::OtherPort, Flows::Few);
    pub const ACCEPT_ALL: Case = case(Hooks::AcceptAll, Flows::Few);
    pub const RULES_1K: Case = case(Hooks::Rules1k, Flows::Few);
    pub const RULES_10K: Case = case(Hooks::Rules10k, Flows::Few);
    pub const NO_HOOKS_MANY: Case = case(Hooks::None, Flows::Many);
    pub const RULES_1K_MANY: Case = case(Hooks::Rules1k, Flows::Many);
    pub const RULES_10K_MANY: Case = case(Hooks::Rules10k, Flows::Many);
    pub const CONNTRACK: Case = case(Hooks::Conntrack, Flows::Many);
    pub const NO_HOOKS_MILLION: Case = case(Hooks::None, Flows::Million);
    pub const RULES_1K_MILLION: Case = case(Hooks::Rules1k, Flows::Million);
    pub const RULES_10K_MILLION: Case = case(Hooks::Rules10k, Flows::Million);

    /// In table order: each traffic's baseline first.
    pub const ALL: [Case; 12] = [
        Case::NO_HOOKS,
        Case::OTHER_PORT,
        Case::ACCEPT_ALL,
        Case::RULES_1K,
        Case::RULES_10K,
        Case::NO_HOOKS_MANY,
        Case::RULES_1K_MANY,
        Case::RULES_10K_MANY,
        Case::CONNTRACK,
        Case::NO_HOOKS_MILLION,
        Case::RULES_1K_MILLION,
        Case::RULES_10K_MILLION,
    ];

    /// `(4)`, `(4b)`, `(6)`.
    pub fn label(self) -> String {
        let suffix = if self.hooks == Hooks::Conntrack {
            ""
        } else {
            self.flows.suffix()
        };
        format!("({}{suffix})", self.hooks.number())
    }

    /// Parse a `--cases` item: a label with or without parentheses (`4`,
    /// `(4b)`, `6`), or a case number at a traffic (`4@64`, `4@100k`,
    /// `5@1m`).
    pub fn parse(s: &str) -> Result<Case, String> {
        let t = s.trim().trim_start_matches('(').trim_end_matches(')');
        let t = t.to_ascii_lowercase();
        let bad = || {
            format!(
                "case '{s}': expected one of {} (or N@64, N@100k, N@1m)",
                Case::ALL
                    .iter()
                    .map(|c| c.label().trim_matches(['(', ')']).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let (num, flows) = match t.split_once('@') {
            Some((n, f)) => {
                let flows = match f {
                    "64" => Flows::Few,
                    "100k" | "100000" => Flows::Many,
                    "1m" | "1000000" => Flows::Million,
                    _ => return Err(bad()),
                };
                (n.to_string(), Some(flows))
            }
            None => {
                let (n, suffix) = t.split_at(t.len().min(1));
                let flows = match suffix {
                    "" => None,
                    "b" => Some(Flows::Many),
                    "c" => Some(Flows::Million),
                    _ => return Err(bad()),
                };
                (n.to_string(), flows)
            }
        };
        let hooks = num
            .parse()
            .ok()
            .and_then(Hooks::from_number)
            .ok_or_else(bad)?;
        let flows = flows.unwrap_or(if hooks == Hooks::Conntrack {
            Flows::Many
        } else {
            Flows::Few
        });
        let c = case(hooks, flows);
        if Case::ALL.contains(&c) {
            Ok(c)
        } else {
            Err(bad())
        }
    }

    /// The cases of a `--cases` list in table order, each one's baseline
    /// added (its ratio needs it); every case when `list` is empty.
    pub fn select(list: &[String]) -> Result<Vec<Case>, String> {
        if list.iter().all(|s| s.trim().is_empty()) {
            return Ok(Case::ALL.to_vec());
        }
        let mut picked = Vec::new();
        for s in list.iter().filter(|s| !s.trim().is_empty()) {
            let c = Case::parse(s)?;
            picked.push(c);
            picked.push(c.baseline());
        }
        Ok(Case::ALL
            .into_iter()
            .filter(|c| picked.contains(c))
            .collect())
    }

    /// The table's "hooks" column.
    pub fn describe(self) -> String {
        let pcap = super::hooks_bench::PCAP_PORT;
        let null = super::hooks_bench::NULL_PORT;
        let rules = super::hooks_bench::FILTER_RULES;
        let flows = match self.flows {
            Flows::Few => String::new(),
            f => format!(", {} flows", thousands(f.count())),
        };
        match self.hooks {
            Hooks::None if self.flows == Flows::Few => "none".into(),
            Hooks::None => format!("none{flows} (baseline of {})", self.dependents()),
            Hooks::OtherPort => format!(
                "`accept` at ingress of {null} and egress of {pcap} only \
                 (not on the traffic's path)"
            ),
            Hooks::AcceptAll => format!("one `accept` at ingress of {pcap}"),
            Hooks::Rules1k | Hooks::Rules10k => format!(
                "`classify` {} rules at ingress, `filter` {rules} rules at egress{flows}",
                thousands(self.classify_rules() as u32)
            ),
            Hooks::Conntrack => {
                format!("(4) with `stateful = true` (`state` rule + {rules} rules){flows}")
            }
        }
    }

    /// `(4b), (5b), (6)`: the cases whose baseline this is.
    fn dependents(self) -> String {
        Case::ALL
            .into_iter()
            .filter(|c| *c != self && c.baseline() == self)
            .map(|c| c.label())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// No hooks on the same traffic: the case its ratio is taken to.
    pub fn baseline(self) -> Case {
        case(Hooks::None, self.flows)
    }

    /// Hooks fastpath must report at start.
    pub fn hook_count(self) -> usize {
        match self.hooks {
            Hooks::None => 0,
            Hooks::AcceptAll => 1,
            _ => 2,
        }
    }

    pub fn classify_rules(self) -> usize {
        match self.hooks {
            Hooks::Rules10k => super::hooks_bench::CLASSIFY_RULES_LARGE,
            _ => super::hooks_bench::CLASSIFY_RULES,
        }
    }

    /// The target column, and the least ratio the issue asks for.
    pub fn target(self) -> Option<(&'static str, f64)> {
        match self {
            Case::RULES_1K => Some((">= 0.85", 0.85)),
            Case::RULES_1K_MANY => Some((">= 0.70 of (1b)", 0.70)),
            Case::CONNTRACK => Some((">= 0.60 of (1b)", 0.60)),
            _ => None,
        }
    }

    /// File-name friendly.
    pub fn slug(self) -> String {
        let hooks = match self.hooks {
            Hooks::None => "none",
            Hooks::OtherPort => "other-port",
            Hooks::AcceptAll => "accept",
            Hooks::Rules1k => "rules-1k",
            Hooks::Rules10k => "rules-10k",
            Hooks::Conntrack => "conntrack",
        };
        format!(
            "{}-{hooks}-{}flows",
            self.label().trim_matches(['(', ')']),
            self.flows.count()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_baselines() {
        let labels: Vec<String> = Case::ALL.iter().map(|c| c.label()).collect();
        assert_eq!(
            labels,
            [
                "(1)", "(2)", "(3)", "(4)", "(5)", "(1b)", "(4b)", "(5b)", "(6)", "(1c)", "(4c)",
                "(5c)"
            ]
        );
        assert_eq!(Case::CONNTRACK.baseline(), Case::NO_HOOKS_MANY);
        assert_eq!(Case::RULES_10K_MILLION.baseline(), Case::NO_HOOKS_MILLION);
        assert_eq!(Case::OTHER_PORT.baseline(), Case::NO_HOOKS);
        assert_eq!(
            Case::NO_HOOKS_MANY.describe(),
            "none, 100,000 flows (baseline of (4b), (5b), (6))"
        );
        assert!(Case::RULES_1K_MILLION
            .describe()
            .ends_with(", 1,000,000 flows"));
    }

    #[test]
    fn cases_parse_by_label_or_traffic() {
        assert_eq!(Case::parse("4"), Ok(Case::RULES_1K));
        assert_eq!(Case::parse("(4b)"), Ok(Case::RULES_1K_MANY));
        assert_eq!(Case::parse("4@100k"), Ok(Case::RULES_1K_MANY));
        assert_eq!(Case::parse("5@1M"), Ok(Case::RULES_10K_MILLION));
        assert_eq!(Case::parse("6"), Ok(Case::CONNTRACK));
        assert_eq!(Case::parse("1c"), Ok(Case::NO_HOOKS_MILLION));
        assert!(Case::parse("2b")
            .unwrap_err()
            .contains("expected one of 1, 2, 3"));
        assert!(Case::parse("6@1m").is_err());
        assert!(Case::parse("7").is_err());
    }

    #[test]
    fn a_selection_brings_its_baselines_in_table_order() {
        let s = Case::select(&["4@1m".into(), "4".into()]).unwrap();
        assert_eq!(
            s,
            [
                Case::NO_HOOKS,
                Case::RULES_1K,
                Case::NO_HOOKS_MILLION,
                Case::RULES_1K_MILLION
            ]
        );
        assert_eq!(Case::select(&[]).unwrap(), Case::ALL);
        assert_eq!(Case::select(&["".into()]).unwrap(), Case::ALL);
    }

    #[test]
    fn traffic_per_flows() {
        assert_eq!(Flows::Few.traffic().frames, 1024);
        assert_eq!(Flows::Many.traffic().mbufs(), 262_143);
        let m = Flows::Million.traffic();
        assert_eq!((m.frames, m.spec.flows), (1_000_000, 1_000_000));
        assert_eq!(m.memory_mb(), 5120);
    }
}
