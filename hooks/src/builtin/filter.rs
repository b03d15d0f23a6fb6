//! `filter` (egress, netfilter-like): first-match rules with an explicit
//! default policy.
//!
//! # Rules
//!
//! Rules match output and input port, prefixes, protocol, ports, TCP flags,
//! DSCP, mark, class and (in stateful mode) connection state; actions are
//! accept, drop and count. A packet that cannot be read as IPv4 gets the
//! policy, never a bypass.
//!
//! ```toml
//! [[hook]]
//! point = "egress"
//! port = "net_tap1"
//! kind = "filter"
//! policy = "drop"              # required: what no rule decides
//! stateful = true              # connection tracking (default false)
//! conntrack_max = 65536        # entries per worker, fixed at first use
//! flow_cache = 4096            # exact-match cache slots per worker (0 = off)
//! [[hook.rule]]
//! state = ["established", "related"]
//! action = "accept"
//! [[hook.rule]]
//! proto = "tcp"
//! dport = 80
//! action = "accept"
//! ```
//!
//! # Stateful mode
//!
//! Every stateful filter of a process shares one connection
//! table per worker, so a flow accepted (and tracked) by the filter on one
//! port is known to the filter on the port its replies leave by. A new flow
//! is tracked when a rule (or the policy) accepts its first packet. When the
//! table is full, tracked flows keep their state and new flows get the
//! default policy, counted as `ct_full_policy` (a full table first drops
//! a half-open or unreplied entry near the new one, `ct_early_drop`). A
//! TCP RST outside its connection's sequence window (a blind reset) is
//! dropped whatever the rules say, with drop reason `ct_invalid` (counted
//! as `ct_invalid_dropped`), and the connection keeps its state. `count`
//! rules count every packet they match that reaches them and do not decide.

use crate::conntrack::{ConnTable, CtCommit, CtConfig, CtHint, CtState, CtStats};
use crate::flow::FlowSummary;
use crate::lease::Lease;
use crate::rules::{
    flow_cache, parse_match, CachedClassifier, ClassifierBuilder, FragmentGuard, Key, MatchRule,
};
use crate::rules::{CT_ESTABLISHED, CT_NEW as KEY_CT_NEW, CT_RELATED};
use crate::worker_counters::{CounterStore, WorkerCounters};
use crate::{
    BuildContext, DropReason, Flows, Hook, HookArgs, HookBuildError, HookBurst, HookContext,
    HookKind, HookPoint, Verdict, MAX_BURST,
};
use std::sync::{Arc, Mutex};

/// Match fields a filter rule may use.
pub const MATCH_KEYS: [&str; 12] = [
    "out_port",
    "in_port",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "tcp_flags",
    "dscp",
    "mark",
    "class",
    "state",
];
const ACTION_KEYS: [&str; 1] = ["action"];

// Per-worker counters of a filter.
const RULE_ACCEPT: usize = 0;
const RULE_DROP: usize = 1;
const POLICY_ACCEPT: usize = 2;
const POLICY_DROP: usize = 3;
const UNPARSED: usize = 4;
const COUNTED: usize = 5;
const CT_FULL_POLICY: usize = 6;
const CT_NEW: usize = 7;
const CT_EST: usize = 8;
const CT_REL: usize = 9;
const CT_UNTRACKED: usize = 10;
const CT_INVALID: usize = 11;
const COUNTERS: usize = 12;
const COUNTER_NAMES: [&str; COUNTERS] = [
    "rule_accepted",
    "rule_dropped",
    "policy_accepted",
    "policy_dropped",
    "unparsed",
    "counted",
    "ct_full_policy",
    "ct_new",
    "ct_established",
    "ct_related",
    "ct_untracked",
    "ct_invalid_dropped",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Accept,
    Drop,
}

/// Connection tables, one per worker, shared by every stateful filter.
struct CtTables {
    tables: Box<[Mutex<ConnTable>]>,
    capacity: usize,
}

/// The `filter` kind. Keeps the connection tables across rule reloads, so
/// tracked flows survive a new rule file.
pub struct FilterKind {
    builder: Arc<dyn ClassifierBuilder>,
    conntrack: Mutex<Option<Arc<CtTables>>>,
    /// Each instance's own counters, kept across reloads.
    counters: CounterStore<COUNTERS>,
}

impl FilterKind {
    pub fn new(builder: Arc<dyn ClassifierBuilder>) -> Self {
        FilterKind {
            builder,
            conntrack: Mutex::new(None),
            counters: CounterStore::default(),
        }
    }
}

/// One filter instance.
pub struct Filter {
    /// The terminal rules, behind a per-worker exact-match cache.
    classifier: CachedClassifier,
    /// Action of each terminal rule, in classifier order.
    actions: Vec<Action>,
    /// Config index of each terminal rule (for ordering against count rules).
    terminal_index: Vec<usize>,
    /// Count rules: config index and match.
    count_rules: Vec<(usize, MatchRule)>,
    /// The fragments the rules cannot judge, dropped before them.
    fragments: FragmentGuard,
    policy: Action,
    conntrack: Option<Arc<CtTables>>,
    counts: Arc<WorkerCounters<COUNTERS>>,
}

impl Filter {
    fn policy_verdict(&self) -> Option<Verdict> {
        match self.policy {
            Action::Accept => None,
            Action::Drop => Some(Verdict::Drop(DropReason::FilterPolicy)),
        }
    }
}

/// A filter's token for a packet (see `Hook::flow_pure`): the one outcome
/// counter it counted under (bits 0-3), for a stateful filter the
/// packet's connection state (bits 4-5, [`ct_code`]), and how many `count`
/// rules it matched (from bit 8).
fn token(counter: usize, ct: u32, counted: usize) -> u32 {
    counter as u32 & 0xf | (ct & 3) << 4 | (counted.min(0xff_ffff) as u32) << 8
}

/// [`token`] taken apart: (counter, connection state code, count rules
/// matched).
fn untoken(t: u32) -> (usize, u32, u64) {
    (
        ((t & 0xf) as usize).min(COUNTERS - 1),
        t >> 4 & 3,
        u64::from(t >> 8),
    )
}

/// Connection state codes of a token: none (stateless), and the states a
/// remembered packet may have had.
const CT_CODE_NONE: u32 = 0;
const CT_CODE_NEW: u32 = 1;
const CT_CODE_EST: u32 = 2;
const CT_CODE_UNTRACKED: u32 = 3;

/// A state's code in a token (`Related` and `Invalid` are never
/// remembered).
fn ct_code(state: CtState) -> u32 {
    match state {
        CtState::New => CT_CODE_NEW,
        CtState::Established => CT_CODE_EST,
        CtState::Untracked => CT_CODE_UNTRACKED,
        CtState::Related | CtState::Invalid => CT_CODE_NONE,
    }
}

/// A packet's connection state as key bits, and the counter it counts under.
fn ct_key(state: CtState) -> (u8, usize) {
    match state {
        CtState::New => (KEY_CT_NEW, CT_NEW),
        CtState::Established => (CT_ESTABLISHED, CT_EST),
        CtState::Related => (CT_RELATED, CT_REL),
        CtState::Untracked => (0, CT_UNTRACKED),
        // Dropped before the rules (see `Filter::process`).
        CtState::Invalid => (0, CT_INVALID),
    }
}

impl Hook for Filter {
    fn process(&self, cx: &HookContext, burst: &mut HookBurst<'_, '_>) {
        let mut tally = [0u64; COUNTERS];
        let mut sums = [FlowSummary::default(); MAX_BURST];
        let mut keys = [Key::default(); MAX_BURST];
        let mut idx = [0u8; MAX_BURST];
        let mut n = 0;
        // Stateless, a packet's key is known as soon as it is parsed;
        // stateful, it waits for the packet's connection state.
        let stateless = self.conntrack.is_none();
        for i in burst.accepted() {
            let Some(p) = burst.packet(i) else { continue };
            let Some(s) = FlowSummary::parse(p.l3()) else {
                // Unreadable: the policy decides, counted as such too.
                tally[UNPARSED] += 1;
                burst.forget_flow(i);
                match self.policy_verdict() {
                    Some(v) => {
                        tally[POLICY_DROP] += 1;
                        burst.set_verdict(i, v);
                    }
                    None => tally[POLICY_ACCEPT] += 1,
                }
                continue;
            };
            if let Some(r) = self.fragments.check(&s) {
                burst.forget_flow(i);
                burst.set_verdict(i, Verdict::Drop(r));
                continue;
            }
            if stateless {
                keys[n] = Key::new(&s, p.meta(), 0);
            } else {
                sums[n] = s;
            }
            idx[n] = i as u8;
            n += 1;
        }
        let mut table = match n {
            0 => None,
            _ => self
                .conntrack
                .as_ref()
                .and_then(|t| t.tables.get(cx.worker))
                .map(crate::lock),
        };
        // Each packet's state, and where its entry is for its commit.
        let mut looked = [(CtState::Untracked, CtHint::NONE); MAX_BURST];
        if let Some(t) = table.as_mut() {
            let l3 = |k: usize| {
                burst
                    .packet(usize::from(idx[k]))
                    .map_or(&[][..], |p| p.l3())
            };
            t.lookup_burst(&sums[..n], l3, cx.now_ns, &mut looked[..n]);
        }
        if !stateless {
            for k in 0..n {
                let ct = match table {
                    Some(_) => {
                        let (bits, counter) = ct_key(looked[k].0);
                        tally[counter] += 1;
                        bits
                    }
                    // A worker without a table (none of the pipeline's):
                    // untracked.
                    None => 0,
                };
                if let Some(p) = burst.packet(usize::from(idx[k])) {
                    keys[k] = Key::new(&sums[k], p.meta(), ct);
                }
            }
        }
        let mut results = [0u32; MAX_BURST];
        if n > 0 {
            self.classifier
                .classify(cx.worker, &keys[..n], &mut results[..n]);
        }
        for k in 0..n {
            let i = usize::from(idx[k]);
            if looked[k].0 == CtState::Invalid {
                // A blind RST: dropped whatever the rules say, and never
                // remembered (counted under ct_invalid_dropped above).
                burst.set_verdict(i, Verdict::Drop(DropReason::CtInvalid));
                burst.forget_flow(i);
                continue;
            }
            let hit = results[k].checked_sub(1).map(|r| r as usize);
            let mut counted = 0;
            if !self.count_rules.is_empty() {
                let limit = hit.map_or(usize::MAX, |r| self.terminal_index[r]);
                counted = self
                    .count_rules
                    .iter()
                    .filter(|(ci, r)| *ci < limit && r.matches(&keys[k]))
                    .count();
                tally[COUNTED] += counted as u64;
            }
            let (mut action, mut by_rule) = match hit.and_then(|r| self.actions.get(r)) {
                Some(a) => (*a, true),
                None => (self.policy, false),
            };
            let mut refreshed = false;
            if action == Action::Accept && keys[k].ct() == KEY_CT_NEW {
                if let Some(t) = table.as_mut() {
                    let l3 = burst.packet(i).map_or(&[][..], |p| p.l3());
                    match t.commit_hinted(&sums[k], l3, cx.now_ns, looked[k].1) {
                        CtCommit::Full => {
                            // Table full: a new flow gets the default policy.
                            tally[CT_FULL_POLICY] += 1;
                            action = self.policy;
                            by_rule &= action == Action::Accept;
                        }
                        CtCommit::Refreshed => refreshed = true,
                        CtCommit::Tracked | CtCommit::Ignored => {}
                    }
                }
            }
            let counter = match (action, by_rule) {
                (Action::Accept, true) => RULE_ACCEPT,
                (Action::Accept, false) => POLICY_ACCEPT,
                (Action::Drop, true) => {
                    burst.set_verdict(i, Verdict::Drop(DropReason::FilterRule));
                    RULE_DROP
                }
                (Action::Drop, false) => {
                    burst.set_verdict(i, Verdict::Drop(DropReason::FilterPolicy));
                    POLICY_DROP
                }
            };
            tally[counter] += 1;
            // Stateful, only a packet that left its connection as it was
            // (but for the timer) may be remembered, with its state, for
            // `confirm` to check.
            let token = match table.is_some() {
                false => Some(token(counter, CT_CODE_NONE, counted)),
                true => {
                    let (state, hint) = looked[k];
                    let steady = match state {
                        CtState::Untracked => true,
                        CtState::Established => hint.steady(),
                        CtState::New => refreshed,
                        CtState::Related | CtState::Invalid => false,
                    };
                    steady.then(|| token(counter, ct_code(state), counted))
                }
            };
            match token {
                Some(t) => burst.set_token(i, t),
                None => burst.forget_flow(i),
            }
        }
        for (c, v) in tally.into_iter().enumerate() {
            self.counts.add(cx.worker, c, v);
        }
    }

    /// Its answer is the first rule matching the packet's key (flow
    /// summary, metadata and, stateful, connection state), or the policy.
    /// Stateful, it [`confirms`](Hook::confirms): a packet is remembered
    /// only if it left its connection as it was but for the timer, and
    /// its state is checked (and the timer restarted) before the memo
    /// answers for it.
    fn flow_pure(&self) -> bool {
        true
    }

    fn confirms(&self) -> bool {
        self.conntrack.is_some()
    }

    fn confirm(&self, cx: &HookContext, flows: &[FlowSummary], tokens: &[u32]) -> usize {
        self.confirm_leased(cx, Flows::Given(flows), tokens, &mut [])
    }

    /// Stateful: a lease is on the flow's connection-table slot (see
    /// [`crate::lease`]).
    fn confirm_leased(
        &self,
        cx: &HookContext,
        flows: Flows<'_>,
        tokens: &[u32],
        leases: &mut [Lease],
    ) -> usize {
        let Some(table) = self
            .conntrack
            .as_ref()
            .and_then(|t| t.tables.get(cx.worker))
        else {
            return flows.len();
        };
        let n = flows.len().min(tokens.len()).min(MAX_BURST);
        let mut states = [CtState::Related; MAX_BURST];
        for (s, &t) in states.iter_mut().zip(&tokens[..n]) {
            *s = match untoken(t).1 {
                CT_CODE_NEW => CtState::New,
                CT_CODE_EST => CtState::Established,
                CT_CODE_UNTRACKED => CtState::Untracked,
                // Never remembered: not confirmed.
                _ => CtState::Related,
            };
        }
        let m = n.min(leases.len());
        crate::lock(table).confirm_leased(flows, &states[..n], &mut leases[..m], cx.now_ns)
    }

    fn replay(&self, cx: &HookContext, tokens: &[u32]) {
        let mut tally = [0u64; COUNTERS];
        // A burst is mostly one flow, or flows with one answer: count runs
        // of equal tokens (a memory add per packet would chain them).
        let mut add = |t: u32, k: usize| {
            let (counter, ct, counted) = untoken(t);
            tally[counter] += k as u64;
            tally[COUNTED] += counted * k as u64;
            match ct {
                CT_CODE_NEW => tally[CT_NEW] += k as u64,
                CT_CODE_EST => tally[CT_EST] += k as u64,
                CT_CODE_UNTRACKED => tally[CT_UNTRACKED] += k as u64,
                _ => {}
            }
        };
        match tokens.first() {
            Some(&t) if tokens.iter().all(|&u| u == t) => add(t, tokens.len()),
            _ => tokens
                .chunk_by(|a, b| a == b)
                .for_each(|run| add(run[0], run.len())),
        }
        for (c, v) in tally.into_iter().enumerate() {
            if v != 0 {
                self.counts.add(cx.worker, c, v);
            }
        }
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = COUNTER_NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.conntrack.is_some() || *i < CT_FULL_POLICY)
            .map(|(i, name)| (*name, self.counts.sum(i)))
            .collect();
        if let Some(ct) = &self.conntrack {
            let mut entries = 0;
            let mut sum = CtStats::default();
            for t in ct.tables.iter() {
                let t = crate::lock(t);
                entries += t.len() as u64;
                let s = t.stats();
                sum.full += s.full;
                sum.early_drop += s.early_drop;
                sum.tcp_established += s.tcp_established;
                sum.reset += s.reset;
                sum.rst_out_of_window += s.rst_out_of_window;
                sum.out_of_window += s.out_of_window;
            }
            v.push(("ct_entries", entries));
            v.push(("ct_refused_full", sum.full));
            v.push(("ct_early_drop", sum.early_drop));
            v.push(("ct_tcp_established", sum.tcp_established));
            v.push(("ct_tcp_reset", sum.reset));
            v.push(("ct_rst_out_of_window", sum.rst_out_of_window));
            v.push(("ct_tcp_out_of_window", sum.out_of_window));
            v.push(("ct_capacity", ct.capacity as u64));
        }
        v.extend(self.classifier.stat_lines());
        v
    }
}

fn parse_policy(args: &HookArgs) -> Result<Action, HookBuildError> {
    match args.params.get("policy") {
        Some(toml::Value::String(p)) if p == "accept" => Ok(Action::Accept),
        Some(toml::Value::String(p)) if p == "drop" => Ok(Action::Drop),
        Some(v) => Err(HookBuildError::param(
            "policy",
            format!("expected \"accept\" or \"drop\", found {v}"),
        )),
        None => Err(HookBuildError::param(
            "policy",
            "missing: a filter needs an explicit default policy, \"accept\" or \"drop\"",
        )),
    }
}

impl FilterKind {
    /// The shared connection tables, created at first use.
    fn tables(&self, capacity: usize, workers: usize) -> Result<Arc<CtTables>, HookBuildError> {
        let mut ct = crate::lock(&self.conntrack);
        if let Some(t) = ct.as_ref() {
            if t.capacity != capacity || t.tables.len() < workers {
                return Err(HookBuildError::param(
                    "conntrack_max",
                    format!(
                        "the connection tables were made with {} entries per worker; they \
                         cannot change while running (restart fastpath to resize)",
                        t.capacity
                    ),
                ));
            }
            return Ok(t.clone());
        }
        let t = Arc::new(CtTables {
            tables: (0..workers.max(1))
                .map(|_| {
                    Mutex::new(ConnTable::new(CtConfig {
                        capacity,
                        ..CtConfig::default()
                    }))
                })
                .collect(),
            capacity,
        });
        *ct = Some(t.clone());
        Ok(t)
    }
}

impl HookKind for FilterKind {
    fn name(&self) -> &str {
        "filter"
    }

    fn points(&self) -> &[HookPoint] {
        &[HookPoint::Egress]
    }

    fn build(&self, args: &HookArgs, cx: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        for k in args.params.keys() {
            if !["policy", "stateful", "conntrack_max", flow_cache::PARAM].contains(&k.as_str()) {
                return Err(HookBuildError::param(
                    k,
                    "unknown field; expected policy, stateful, conntrack_max, flow_cache",
                ));
            }
        }
        let policy = parse_policy(args)?;
        let slots = flow_cache::slots_param(args)?;
        let stateful = match args.params.get("stateful") {
            None => false,
            Some(toml::Value::Boolean(b)) => *b,
            Some(v) => {
                return Err(HookBuildError::param(
                    "stateful",
                    format!("expected true or false, found {v}"),
                ))
            }
        };
        let capacity = match args.params.get("conntrack_max") {
            None => CtConfig::default().capacity,
            Some(toml::Value::Integer(i)) if stateful && (16..=1 << 24).contains(i) => *i as usize,
            Some(_) if !stateful => {
                return Err(HookBuildError::param(
                    "conntrack_max",
                    "only for a stateful filter; add stateful = true",
                ))
            }
            Some(v) => {
                return Err(HookBuildError::param(
                    "conntrack_max",
                    format!("expected entries per worker in 16..=16777216, found {v}"),
                ))
            }
        };
        let mut terminal = Vec::new();
        let mut actions = Vec::new();
        let mut terminal_index = Vec::new();
        let mut count_rules = Vec::new();
        for (i, t) in args.rules.iter().enumerate() {
            let rule = parse_match(t, i, cx, &MATCH_KEYS, &ACTION_KEYS)?;
            if rule.ct_states != 0 && !stateful {
                return Err(HookBuildError::rule(
                    i,
                    "state",
                    "connection state needs a stateful filter; add stateful = true to the hook",
                ));
            }
            match t.get("action") {
                Some(toml::Value::String(a)) if a == "accept" || a == "drop" => {
                    actions.push(if a == "accept" {
                        Action::Accept
                    } else {
                        Action::Drop
                    });
                    terminal.push(rule);
                    terminal_index.push(i);
                }
                Some(toml::Value::String(a)) if a == "count" => count_rules.push((i, rule)),
                Some(v) => {
                    return Err(HookBuildError::rule(
                        i,
                        "action",
                        format!("expected \"accept\", \"drop\" or \"count\", found {v}"),
                    ))
                }
                None => {
                    return Err(HookBuildError {
                        rule: Some(i),
                        field: None,
                        message: "missing `action`: expected \"accept\", \"drop\" or \"count\""
                            .into(),
                    })
                }
            }
        }
        let classifier = self.builder.build(&terminal).map_err(|e| HookBuildError {
            rule: None,
            field: None,
            message: format!("building the {} classifier: {e}", self.builder.name()),
        })?;
        let conntrack = if stateful {
            Some(self.tables(capacity, cx.workers)?)
        } else {
            None
        };
        let fragments =
            FragmentGuard::for_rules(terminal.iter().chain(count_rules.iter().map(|c| &c.1)));
        Ok(Arc::new(Filter {
            classifier: CachedClassifier::new(classifier, cx.workers, slots),
            actions,
            terminal_index,
            count_rules,
            fragments,
            policy,
            conntrack,
            counts: self.counters.for_instance(cx),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::test_util::*;
    use crate::flow::tcp_flag::{ACK, RST, SYN};
    use crate::rules::LinearBuilder;
    use crate::testkit::{icmp_echo, ipv4, tcp, udp};

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

    /// Packets for the replay tests: every outcome a stateless filter
    /// counts (rule accept and drop, policy, count rules, unparsed).
    fn mixed_burst() -> Vec<Pkt> {
        let mut short = udp(A, B, 1, 53).build();
        short[14] = 0x46; // IHL 6 with no option bytes checked: unreadable
        short.truncate(34);
        vec![
            Pkt::new(udp(A, B, 1, 53).build()),
            Pkt::new(udp(A, B, 1, 54).build()),
            Pkt::new(udp(A, B, 1, 54).build()),
            Pkt::new(tcp(A, B, 1, 80, SYN).build()),
            Pkt::new(tcp(A, B, 1, 22, SYN).build()),
            Pkt::new(icmp_echo(A, B, 8, 7, 0).build()),
            Pkt::new(short),
        ]
    }

    const REPLAYED: &str = r#"
        policy = "drop"
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
        [[rule]]
        proto = "udp"
        action = "accept"
        [[rule]]
        dport = 80
        proto = "tcp"
        action = "accept"
        [[rule]]
        proto = "icmp"
        action = "count"
    "#;

    #[test]
    fn a_stateless_filter_replays_its_tokens_into_the_same_counters() {
        let h = build(&kind(), HookPoint::Egress, REPLAYED);
        assert!(h.flow_pure());
        let mut pkts = mixed_burst();
        let (v, tokens) = run_tokens(&*h, HookPoint::Egress, &mut pkts);
        assert_eq!(
            v,
            vec![
                DROP_RULE,
                Verdict::Accept,
                Verdict::Accept,
                Verdict::Accept,
                DROP_POLICY,
                DROP_POLICY,
                DROP_POLICY
            ]
        );
        assert_eq!(stat(&*h, "counted"), 1 + 2 * 2 + 1);
        // Another kind: counters of its own, from zero. What process
        // counted for the packets that have a token, replay counts too.
        let fresh = build(&kind(), HookPoint::Egress, REPLAYED);
        replay(&*fresh, HookPoint::Egress, &tokens[..6]);
        let mut want = stats_but_cache(&*h);
        for (name, v) in want.iter_mut() {
            if *name == "unparsed" || *name == "policy_dropped" {
                *v -= 1; // the unreadable packet, which has no token
            }
        }
        assert_eq!(stats_but_cache(&*fresh), want);
        // Twice the tokens, twice the counts.
        replay(&*fresh, HookPoint::Egress, &tokens[..6]);
        assert_eq!(stat(&*fresh, "counted"), 2 * 6);
        assert_eq!(stat(&*fresh, "rule_accepted"), 2 * 3);
    }

    #[test]
    fn a_stateful_filter_is_flow_pure_and_confirms() {
        let h = build(&kind(), HookPoint::Egress, STATEFUL_OUT);
        assert!(h.flow_pure() && h.confirms());
        let h = build(&kind(), HookPoint::Egress, REPLAYED);
        assert!(h.flow_pure() && !h.confirms());
    }

    /// What the router's flow memo does with a stateful filter, on a
    /// connection's whole life: remember the token of each packet the
    /// filter let it remember; for a packet of a remembered flow, confirm
    /// and replay; else run the filter. The verdicts, the counters and the
    /// connection table end as with a filter that saw every packet, and a
    /// remembered "established: accept" does not outlive its connection.
    #[test]
    fn a_stateful_filter_answered_from_a_memo_ends_as_one_that_saw_every_packet() {
        // Without leases (each remembered packet confirmed in full), and
        // with them (the memo keeps the filter's lease per flow).
        for leased in [false, true] {
            use std::collections::HashMap;
            let (k1, k2) = (kind(), kind());
            // [toward A (new inbound refused), toward B], per table.
            let seen = [
                build_named(&k1, HookPoint::Egress, "to_a", STATEFUL_IN),
                build_named(&k1, HookPoint::Egress, "to_b", STATEFUL_OUT),
            ];
            let memo = [
                build_named(&k2, HookPoint::Egress, "to_a", STATEFUL_IN),
                build_named(&k2, HookPoint::Egress, "to_b", STATEFUL_OUT),
            ];
            let (to_a, to_b) = (0, 1);
            let ms = 1_000_000;
            let steps: Vec<(usize, Vec<u8>, u64)> = vec![
                (to_b, udp(A, B, 5000, 53).build(), 0), // new: inserted, not remembered
                (to_b, udp(A, B, 5000, 53).build(), ms), // new, refreshed: remembered
                (to_b, udp(A, B, 5000, 53).build(), 2 * ms), // answered
                (to_a, udp(B, A, 53, 5000).build(), 3 * ms), // the first reply: not remembered
                (to_b, udp(A, B, 5000, 53).build(), 4 * ms), // not New any more: refused, seen
                (to_b, udp(A, B, 5000, 53).build(), 5 * ms), // answered (established)
                (to_a, udp(B, A, 53, 5000).build(), 6 * ms), // remembered
                (to_a, udp(B, A, 53, 5000).build(), 7 * ms), // answered
                (to_a, udp(B, A, 53, 5000).build(), 7 * ms + ms / 2), // answered (leased: on its lease)
                (to_b, tcp(A, B, 40000, 80, SYN).build(), 8 * ms),
                (to_a, tcp(B, A, 80, 40000, SYN | ACK).build(), 9 * ms),
                (to_b, tcp(A, B, 40000, 80, ACK).build(), 10 * ms),
                // TCP is never remembered: every segment moves its window.
                (to_a, tcp(B, A, 80, 40000, ACK).build(), 11 * ms),
                (to_a, tcp(B, A, 80, 40000, ACK).build(), 12 * ms),
                (to_a, tcp(B, A, 80, 40000, ACK).build(), 12 * ms + ms / 2),
                (to_b, tcp(A, B, 40000, 80, ACK | RST).build(), 13 * ms), // removes the entry
                (to_a, tcp(B, A, 80, 40000, ACK).build(), 14 * ms),       // new: dropped
                (to_a, tcp(B, A, 80, 40000, ACK).build(), 15 * ms),       // dropped again
                (to_a, udp(B, A, 53, 5000).build(), 400_000 * ms),        // expired: dropped
            ];
            let mut remembered: HashMap<(usize, Vec<u8>), (u32, Lease)> = HashMap::new();
            let (mut answered, mut refused) = (0, 0);
            let mut leases_held = 0;
            let mut verdicts = Vec::new();
            for (step, (f, frame, now)) in steps.iter().enumerate() {
                let v = run(
                    &*seen[*f],
                    HookPoint::Egress,
                    &mut [Pkt::new(frame.clone())],
                    *now,
                )[0];
                let key = (*f, frame.clone());
                let pkt = Pkt::new(frame.clone());
                let confirmed = remembered.get_mut(&key).map(|(t, lease)| {
                    let before = *lease;
                    let yes = match leased {
                        false => confirm_one(&*memo[*f], HookPoint::Egress, &pkt, *t, *now),
                        true => {
                            confirm_leased(&*memo[*f], HookPoint::Egress, &pkt, *t, lease, *now)
                        }
                    };
                    // Confirmed on the lease it had: not renewed.
                    leases_held += usize::from(yes && before != Lease::NONE && *lease == before);
                    (yes, *t)
                });
                let m = match confirmed {
                    Some((true, t)) => {
                        replay(&*memo[*f], HookPoint::Egress, &[t]);
                        answered += 1;
                        Verdict::Accept
                    }
                    other => {
                        refused += usize::from(other.is_some());
                        let (v, t) = run_at(&*memo[*f], HookPoint::Egress, &mut [pkt], *now);
                        remembered.remove(&key);
                        if v[0] == Verdict::Accept && t[0] != crate::NO_TOKEN {
                            remembered.insert(key, (t[0], Lease::NONE));
                        }
                        v[0]
                    }
                };
                assert_eq!(m, v, "step {step}");
                verdicts.push(v);
            }
            assert_eq!(
                (answered, refused),
                (4, 2),
                "leased {leased}: {remembered:?}"
            );
            // With leases, the second answered packet of a flow in a row
            // is confirmed on the lease the first one's confirm gave; the
            // first reply (step 3) ends the leases given before it.
            assert_eq!(leases_held, if leased { 1 } else { 0 });
            let dropped: Vec<usize> = (0..verdicts.len())
                .filter(|&i| verdicts[i] != Verdict::Accept)
                .collect();
            assert_eq!(dropped, [16, 17, 18]);
            for i in 0..2 {
                assert_eq!(
                    stats_but_cache(&*seen[i]),
                    stats_but_cache(&*memo[i]),
                    "filter {i}"
                );
            }
            // Toward A: steps 3, 6, 7, 8, 10, 12, 13, 14 established; 16-18
            // new, dropped.
            assert_eq!(stat(&*memo[to_a], "ct_established"), 8);
            assert_eq!(stat(&*memo[to_a], "ct_new"), 3);
            assert_eq!(stat(&*memo[to_a], "policy_dropped"), 3);
            assert_eq!(stat(&*memo[to_b], "ct_established"), 4);
        }
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
}

#[cfg(test)]
mod reload_tests {
    use super::*;
    use crate::builtin::test_util::*;
    use crate::rules::LinearBuilder;
    use crate::testkit::{tcp, udp};

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
}
