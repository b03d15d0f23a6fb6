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
use crate::lookahead::{answerable_ahead, state_only, Lookahead};
use crate::rules::{
    flow_cache, parse_match, CachedClassifier, ClassifierBuilder, FlowCache, FragmentGuard, Key,
    MatchRule,
};
use crate::rules::{CT_ESTABLISHED, CT_NEW as KEY_CT_NEW, CT_RELATED};
use crate::worker_counters::{CounterStore, WorkerCounters};
use crate::{
    BuildContext, DropReason, Hook, HookArgs, HookBuildError, HookBurst, HookContext, HookKind,
    HookPoint, HookWorker, StoreKey, Verdict, WorkerStore, MAX_BURST,
};
use std::sync::{Arc, Mutex, OnceLock};

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
/// The hook's own parameters.
const PARAMS: [&str; 4] = ["policy", "stateful", "conntrack_max", flow_cache::PARAM];

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
/// Packets decided by an answer carried from ingress (`crate::lookahead`).
const ANSWERED_AHEAD: usize = 12;
const COUNTERS: usize = 13;
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
    "answered_ahead",
];

/// What each worker publishes of its connection table, after every burst
/// that used it.
const TABLE_NAMES: [&str; 7] = [
    "ct_entries",
    "ct_refused_full",
    "ct_early_drop",
    "ct_tcp_established",
    "ct_tcp_reset",
    "ct_rst_out_of_window",
    "ct_tcp_out_of_window",
];
const TABLE_COUNTERS: usize = TABLE_NAMES.len();

/// `TABLE_NAMES`' values of a table.
fn table_values(t: &ConnTable) -> [u64; TABLE_COUNTERS] {
    let s: CtStats = t.stats();
    [
        t.len() as u64,
        s.full,
        s.early_drop,
        s.tcp_established,
        s.reset,
        s.rst_out_of_window,
        s.out_of_window,
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Accept,
    Drop,
}

/// Connection tracking of every stateful filter of a kind: one table per
/// worker, in that worker's [`WorkerStore`] under `key` (made when the
/// first stateful filter reaches the worker, kept across reloads, shared
/// by every stateful filter of the kind), and what the workers publish of
/// their tables.
struct Conntrack {
    key: StoreKey,
    capacity: usize,
    published: WorkerCounters<TABLE_COUNTERS>,
    /// Workers the published lines are for.
    workers: usize,
}

/// The `filter` kind. Keeps the connection tracking across rule reloads,
/// so tracked flows survive a new rule file.
pub struct FilterKind {
    builder: Arc<dyn ClassifierBuilder>,
    conntrack: Mutex<Option<Arc<Conntrack>>>,
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

/// One filter instance: what its workers share.
struct Filter {
    /// The terminal rules (each worker keeps its cache of their answers).
    classifier: CachedClassifier,
    rules: Rules,
    /// The fragments the rules cannot judge, dropped before them.
    fragments: FragmentGuard,
    policy: Action,
    conntrack: Option<Arc<Conntrack>>,
    counts: Arc<WorkerCounters<COUNTERS>>,
    /// The lookahead slot whose carried answers this filter takes, once
    /// linked (`crate::lookahead`).
    slot: OnceLock<usize>,
}

/// A filter's rules, terminal (accept, drop: in the classifier) and
/// `count`.
#[derive(Default)]
struct Rules {
    terminal: Vec<MatchRule>,
    /// Action of each terminal rule, in classifier order.
    actions: Vec<Action>,
    /// Config index of each terminal rule (for ordering against count rules).
    terminal_index: Vec<usize>,
    /// Count rules: config index and match.
    count_rules: Vec<(usize, MatchRule)>,
    /// The terminal rules without a state condition, which lookahead
    /// answers at ingress (where a key has no state), and the answer each
    /// stands for (1 + its terminal index).
    ahead: Vec<MatchRule>,
    ahead_answer: Vec<u32>,
    /// Per state (new, established, related): 1 + the index of the first
    /// terminal rule on that state and nothing else; 0 if none.
    state_first: [u32; 3],
}

impl Rules {
    /// What lookahead needs (`ahead`, `ahead_answer`, `state_first`), once
    /// the rules are parsed.
    fn prepare_ahead(&mut self) {
        for (i, r) in self.terminal.iter().enumerate() {
            if r.ct_states == 0 {
                self.ahead.push(r.clone());
                self.ahead_answer.push(i as u32 + 1);
            }
        }
        for (s, bits) in [KEY_CT_NEW, CT_ESTABLISHED, CT_RELATED]
            .into_iter()
            .enumerate()
        {
            let takes = |r: &MatchRule| r.ct_states & bits != 0 && state_only(r);
            self.state_first[s] = self
                .terminal
                .iter()
                .position(takes)
                .map_or(0, |i| i as u32 + 1);
        }
    }

    /// The answer (1 + terminal index, 0 none) of an answer of the `ahead`
    /// rules.
    #[inline(always)]
    fn of_ahead(&self, answer: u32) -> u32 {
        if self.ahead.len() == self.terminal.len() {
            // No state rules: the same rules, the same answers.
            return answer;
        }
        answer
            .checked_sub(1)
            .and_then(|i| self.ahead_answer.get(i as usize))
            .copied()
            .unwrap_or(0)
    }

    /// 1 + the index of the first terminal rule that matches on nothing but
    /// the connection state and takes `bits` (one `CT_*` bit); 0 if none.
    #[inline(always)]
    fn state_first(&self, bits: u8) -> u32 {
        match bits {
            KEY_CT_NEW => self.state_first[0],
            CT_ESTABLISHED => self.state_first[1],
            CT_RELATED => self.state_first[2],
            _ => 0,
        }
    }
}

/// The earlier of two classifier answers (0: no match).
fn first_of(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

/// The hook handed to the chain: the shared instance.
struct FilterHook(Arc<Filter>);

/// A filter's part on one worker: the shared instance and the worker's
/// flow cache. Its connection table is in the worker's store.
struct FilterPart {
    shared: Arc<Filter>,
    cache: FlowCache,
    worker: usize,
    /// The arrays of one burst, kept between bursts (not set up per burst).
    judged: Box<Judged>,
}

/// One burst's packets as the filter reads them: the `n` it judges by
/// their rules, their burst index, summary, key and connection state.
struct Judged {
    n: usize,
    idx: [u8; MAX_BURST],
    sums: [FlowSummary; MAX_BURST],
    keys: [Key; MAX_BURST],
    /// Each packet's state, and where its entry is for its commit.
    looked: [(CtState, CtHint); MAX_BURST],
    results: [u32; MAX_BURST],
    /// Stateful: the keys made (`keys[..keyed]`) and the packet of each,
    /// the others being answered at ingress.
    keyed: usize,
    keyed_at: [u8; MAX_BURST],
    tally: [u64; COUNTERS],
}

impl Judged {
    fn new() -> Self {
        Judged {
            n: 0,
            idx: [0; MAX_BURST],
            sums: [FlowSummary::default(); MAX_BURST],
            keys: [Key::default(); MAX_BURST],
            looked: [(CtState::Untracked, CtHint::NONE); MAX_BURST],
            results: [0; MAX_BURST],
            keyed: 0,
            keyed_at: [0; MAX_BURST],
            tally: [0; COUNTERS],
        }
    }
}

impl Lookahead for Filter {
    /// The terminal rules, when nothing but them and the connection state
    /// decides a plain packet: no count rules, no rule on mark, class or
    /// output port, and rules on states have no other condition (at
    /// ingress they never match: the key there has no state; here
    /// `Rules::state_first` answers for them).
    fn egress_rules(&self) -> Option<&[MatchRule]> {
        let r = &self.rules;
        (r.count_rules.is_empty() && answerable_ahead(&r.terminal)).then_some(&r.ahead[..])
    }

    fn carried_in(&self, slot: usize) {
        let _ = self.slot.set(slot);
    }
}

impl Filter {
    fn policy_verdict(&self) -> Option<Verdict> {
        match self.policy {
            Action::Accept => None,
            Action::Drop => Some(Verdict::Drop(DropReason::FilterPolicy)),
        }
    }

    /// Read every accepted packet: an unreadable one gets the policy, a
    /// fragment the rules cannot judge is dropped, the rest are kept in
    /// `j` (keyed now when stateless; stateful, the key waits for the
    /// connection state).
    fn gather(&self, burst: &mut HookBurst<'_, '_>, j: &mut Judged) {
        let stateless = self.conntrack.is_none();
        let slot = self.slot.get().copied();
        for i in burst.accepted() {
            let Some(p) = burst.packet(i) else { continue };
            if stateless {
                if let Some(&a) = slot.and_then(|s| p.meta().lookahead.get(s)) {
                    if a != 0 {
                        let answer = self.rules.of_ahead(a - 1);
                        self.decide_ahead(burst, i, answer, &mut j.tally);
                        continue;
                    }
                }
                if j.keys[j.n].set_plain(p.l3(), p.meta(), 0) {
                    j.idx[j.n] = i as u8;
                    j.n += 1;
                    continue;
                }
            }
            let Some(s) = FlowSummary::parse(p.l3()) else {
                // Unreadable: the policy decides, counted as such too.
                j.tally[UNPARSED] += 1;
                match self.policy_verdict() {
                    Some(v) => {
                        j.tally[POLICY_DROP] += 1;
                        burst.set_verdict(i, v);
                    }
                    None => j.tally[POLICY_ACCEPT] += 1,
                }
                continue;
            };
            if let Some(r) = self.fragments.check(&s) {
                burst.set_verdict(i, Verdict::Drop(r));
                continue;
            }
            let n = j.n;
            if stateless {
                j.keys[n] = Key::new(&s, p.meta(), 0);
            } else {
                j.sums[n] = s;
            }
            j.idx[n] = i as u8;
            j.n += 1;
        }
    }

    /// Stateful: look every gathered packet up in the worker's table (all
    /// slots read first), count its state and make its key with it.
    fn look_up(&self, burst: &HookBurst<'_, '_>, table: &mut ConnTable, now: u64, j: &mut Judged) {
        let n = j.n;
        let l3 = |k: usize| {
            burst
                .packet(usize::from(j.idx[k]))
                .map_or(&[][..], |p| p.l3())
        };
        table.lookup_burst(&j.sums[..n], l3, now, &mut j.looked[..n]);
        let slot = self.slot.get().copied();
        j.keyed = 0;
        for k in 0..n {
            let (bits, counter) = ct_key(j.looked[k].0);
            j.tally[counter] += 1;
            let Some(p) = burst.packet(usize::from(j.idx[k])) else {
                continue;
            };
            match slot.and_then(|s| p.meta().lookahead.get(s)) {
                Some(&a) if a != 0 => {
                    // The stateless rules answered at ingress; the
                    // state-only rules answer for the state found here.
                    let stateless = self.rules.of_ahead(a - 1);
                    j.results[k] = first_of(stateless, self.rules.state_first(bits));
                    j.tally[ANSWERED_AHEAD] += 1;
                }
                _ => {
                    let m = j.keyed;
                    j.keys[m] = Key::new(&j.sums[k], p.meta(), bits);
                    j.keyed_at[m] = k as u8;
                    j.keyed += 1;
                }
            }
        }
    }

    /// Stateful: classify the keys `look_up` made and put each answer at
    /// its packet.
    fn classify_tracked(&self, cache: &mut FlowCache, j: &mut Judged) {
        let m = j.keyed;
        if m == 0 {
            return;
        }
        let mut answers = [0u32; MAX_BURST];
        self.classifier
            .classify(cache, &j.keys[..m], &mut answers[..m]);
        for (&k, a) in j.keyed_at[..m].iter().zip(answers) {
            j.results[usize::from(k)] = a;
        }
    }

    /// The `count` rules before the terminal rule that matched packet `k`
    /// (all of them when none did) that its key matches.
    fn counted(&self, j: &Judged, k: usize, hit: Option<usize>) -> u64 {
        let r = &self.rules;
        if r.count_rules.is_empty() {
            return 0;
        }
        let limit = hit.map_or(usize::MAX, |h| r.terminal_index[h]);
        r.count_rules
            .iter()
            .filter(|(ci, rule)| *ci < limit && rule.matches(&j.keys[k]))
            .count() as u64
    }

    /// Decide packet `k` of `j` from its classifier result: count rules,
    /// the action of its rule or the policy, a new flow committed to the
    /// table when accepted (the policy when the table is full).
    fn decide(
        &self,
        burst: &mut HookBurst<'_, '_>,
        table: Option<&mut ConnTable>,
        now: u64,
        j: &mut Judged,
        k: usize,
    ) {
        let i = usize::from(j.idx[k]);
        if j.looked[k].0 == CtState::Invalid {
            // A blind RST: dropped whatever the rules say (counted under
            // ct_invalid_dropped by its lookup).
            burst.set_verdict(i, Verdict::Drop(DropReason::CtInvalid));
            return;
        }
        let hit = j.results[k].checked_sub(1).map(|r| r as usize);
        j.tally[COUNTED] += self.counted(j, k, hit);
        let (mut action, mut by_rule) = match hit.and_then(|r| self.rules.actions.get(r)) {
            Some(a) => (*a, true),
            None => (self.policy, false),
        };
        if action == Action::Accept && j.looked[k].0 == CtState::New {
            if let Some(t) = table {
                let l3 = burst.packet(i).map_or(&[][..], |p| p.l3());
                if t.commit_hinted(&j.sums[k], l3, now, j.looked[k].1) == CtCommit::Full {
                    // Table full: a new flow gets the default policy.
                    j.tally[CT_FULL_POLICY] += 1;
                    action = self.policy;
                    by_rule &= action == Action::Accept;
                }
            }
        }
        j.tally[apply(burst, i, action, by_rule)] += 1;
    }

    /// Decide packet `i` from `result`, its classifier result carried from
    /// ingress (stateless, no count rules: nothing else reads it).
    #[inline(always)]
    fn decide_ahead(
        &self,
        burst: &mut HookBurst<'_, '_>,
        i: usize,
        result: u32,
        tally: &mut [u64; COUNTERS],
    ) {
        let rule = result
            .checked_sub(1)
            .and_then(|r| self.rules.actions.get(r as usize));
        let (action, by_rule) = rule.map_or((self.policy, false), |a| (*a, true));
        tally[apply(burst, i, action, by_rule)] += 1;
        tally[ANSWERED_AHEAD] += 1;
    }
}

/// Give packet `i` its verdict for `action`, by a rule or the policy;
/// returns the counter it counts under.
#[inline(always)]
fn apply(burst: &mut HookBurst<'_, '_>, i: usize, action: Action, by_rule: bool) -> usize {
    match (action, by_rule) {
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
    }
}

/// A packet's connection state as key bits, and the counter it counts under.
fn ct_key(state: CtState) -> (u8, usize) {
    match state {
        CtState::New => (KEY_CT_NEW, CT_NEW),
        CtState::Established => (CT_ESTABLISHED, CT_EST),
        CtState::Related => (CT_RELATED, CT_REL),
        CtState::Untracked => (0, CT_UNTRACKED),
        // Dropped before the rules (see `Filter::decide`).
        CtState::Invalid => (0, CT_INVALID),
    }
}

impl HookWorker for FilterPart {
    fn process(
        &mut self,
        cx: &HookContext,
        store: &mut WorkerStore,
        burst: &mut HookBurst<'_, '_>,
    ) {
        let f = &*self.shared;
        // The part's own arrays, reused burst after burst: every element a
        // burst reads, it wrote first (`looked` is written by the lookup, or
        // reset below when there is none).
        let j = &mut *self.judged;
        j.n = 0;
        j.tally = [0; COUNTERS];
        f.gather(burst, j);
        let n = j.n;
        // Stateful: the worker's table (made by `Hook::worker`).
        let mut table = match (&f.conntrack, n) {
            (Some(ct), 1..) => store.get_mut::<ConnTable>(ct.key),
            _ => None,
        };
        if let Some(t) = table.as_deref_mut() {
            f.look_up(burst, t, cx.now_ns, j);
            f.classify_tracked(&mut self.cache, j);
        } else {
            if f.conntrack.is_some() {
                // No table on this worker (none of the pipeline's): untracked.
                j.looked[..n].fill((CtState::Untracked, CtHint::NONE));
                for k in 0..n {
                    if let Some(p) = burst.packet(usize::from(j.idx[k])) {
                        j.keys[k] = Key::new(&j.sums[k], p.meta(), 0);
                    }
                }
            }
            if n > 0 {
                f.classifier
                    .classify(&mut self.cache, &j.keys[..n], &mut j.results[..n]);
            }
        }
        for k in 0..n {
            f.decide(burst, table.as_deref_mut(), cx.now_ns, j, k);
        }
        for (c, v) in j.tally.into_iter().enumerate() {
            f.counts.add(self.worker, c, v);
        }
        if let (Some(ct), Some(t)) = (&f.conntrack, table) {
            for (c, v) in table_values(t).into_iter().enumerate() {
                ct.published.set(self.worker, c, v);
            }
        }
    }
}

impl Hook for FilterHook {
    /// The worker's part, and its connection table in `store` (the one
    /// every stateful filter of the kind uses on this worker, made by the
    /// first).
    fn worker(&self, worker: usize, store: &mut WorkerStore) -> Box<dyn HookWorker> {
        let f = &self.0;
        if let Some(ct) = &f.conntrack {
            let capacity = ct.capacity;
            store.get_or_insert_with(ct.key, || {
                ConnTable::new(CtConfig {
                    capacity,
                    ..CtConfig::default()
                })
            });
        }
        Box::new(FilterPart {
            shared: f.clone(),
            cache: f.classifier.cache(worker),
            worker,
            judged: Box::new(Judged::new()),
        })
    }

    fn lookahead(&self) -> Option<&dyn Lookahead> {
        Some(&*self.0)
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let f = &self.0;
        let mut v: Vec<(&'static str, u64)> = COUNTER_NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| match *i {
                ANSWERED_AHEAD => f.slot.get().is_some(),
                i => f.conntrack.is_some() || i < CT_FULL_POLICY,
            })
            .map(|(i, name)| (*name, f.counts.sum(i)))
            .collect();
        if let Some(ct) = &f.conntrack {
            for (i, name) in TABLE_NAMES.iter().enumerate() {
                v.push((name, ct.published.sum(i)));
            }
            v.push(("ct_capacity", ct.capacity as u64));
        }
        v.extend(f.classifier.stat_lines());
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

fn check_params(args: &HookArgs) -> Result<(), HookBuildError> {
    match args.params.keys().find(|k| !PARAMS.contains(&k.as_str())) {
        Some(k) => Err(HookBuildError::param(
            k,
            "unknown field; expected policy, stateful, conntrack_max, flow_cache",
        )),
        None => Ok(()),
    }
}

fn parse_stateful(args: &HookArgs) -> Result<bool, HookBuildError> {
    match args.params.get("stateful") {
        None => Ok(false),
        Some(toml::Value::Boolean(b)) => Ok(*b),
        Some(v) => Err(HookBuildError::param(
            "stateful",
            format!("expected true or false, found {v}"),
        )),
    }
}

/// Entries per worker of the connection tables (`conntrack_max`).
fn parse_capacity(args: &HookArgs, stateful: bool) -> Result<usize, HookBuildError> {
    match args.params.get("conntrack_max") {
        None => Ok(CtConfig::default().capacity),
        Some(toml::Value::Integer(i)) if stateful && (16..=1 << 24).contains(i) => Ok(*i as usize),
        Some(_) if !stateful => Err(HookBuildError::param(
            "conntrack_max",
            "only for a stateful filter; add stateful = true",
        )),
        Some(v) => Err(HookBuildError::param(
            "conntrack_max",
            format!("expected entries per worker in 16..=16777216, found {v}"),
        )),
    }
}

/// What rule `i` does: `Some` of a terminal action, `None` for `count`.
fn parse_action(t: &toml::Table, i: usize) -> Result<Option<Action>, HookBuildError> {
    match t.get("action") {
        Some(toml::Value::String(a)) if a == "accept" => Ok(Some(Action::Accept)),
        Some(toml::Value::String(a)) if a == "drop" => Ok(Some(Action::Drop)),
        Some(toml::Value::String(a)) if a == "count" => Ok(None),
        Some(v) => Err(HookBuildError::rule(
            i,
            "action",
            format!("expected \"accept\", \"drop\" or \"count\", found {v}"),
        )),
        None => Err(HookBuildError {
            rule: Some(i),
            field: None,
            message: "missing `action`: expected \"accept\", \"drop\" or \"count\"".into(),
        }),
    }
}

fn parse_rules(
    args: &HookArgs,
    cx: &BuildContext,
    stateful: bool,
) -> Result<Rules, HookBuildError> {
    let mut rules = Rules::default();
    for (i, t) in args.rules.iter().enumerate() {
        let rule = parse_match(t, i, cx, &MATCH_KEYS, &ACTION_KEYS)?;
        if rule.ct_states != 0 && !stateful {
            return Err(HookBuildError::rule(
                i,
                "state",
                "connection state needs a stateful filter; add stateful = true to the hook",
            ));
        }
        match parse_action(t, i)? {
            Some(action) => {
                rules.actions.push(action);
                rules.terminal.push(rule);
                rules.terminal_index.push(i);
            }
            None => rules.count_rules.push((i, rule)),
        }
    }
    rules.prepare_ahead();
    Ok(rules)
}

impl FilterKind {
    /// The kind's connection tracking, made at first use.
    fn conntrack(&self, capacity: usize, workers: usize) -> Result<Arc<Conntrack>, HookBuildError> {
        let mut ct = crate::lock(&self.conntrack);
        if let Some(t) = ct.as_ref() {
            if t.capacity != capacity || t.workers < workers {
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
        let t = Arc::new(Conntrack {
            key: StoreKey::new(),
            capacity,
            published: WorkerCounters::new(workers),
            workers: workers.max(1),
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
        check_params(args)?;
        let policy = parse_policy(args)?;
        let slots = flow_cache::slots_param(args)?;
        let stateful = parse_stateful(args)?;
        let capacity = parse_capacity(args, stateful)?;
        let rules = parse_rules(args, cx, stateful)?;
        let classifier = self
            .builder
            .build(&rules.terminal)
            .map_err(|e| HookBuildError {
                rule: None,
                field: None,
                message: format!("building the {} classifier: {e}", self.builder.name()),
            })?;
        let conntrack = match stateful {
            true => Some(self.conntrack(capacity, cx.workers)?),
            false => None,
        };
        let all = rules.terminal.iter();
        let fragments = FragmentGuard::for_rules(all.chain(rules.count_rules.iter().map(|c| &c.1)));
        Ok(Arc::new(FilterHook(Arc::new(Filter {
            classifier: CachedClassifier::new(classifier, cx.workers, slots),
            rules,
            fragments,
            policy,
            conntrack,
            counts: self.counters.for_instance(cx),
            slot: OnceLock::new(),
        }))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::test_util::*;
    use crate::flow::tcp_flag::{ACK, RST, SYN};
    use crate::rules::LinearBuilder;
    use crate::testkit::{icmp_echo, ipv4, tcp, udp};
    use crate::HookPacket;

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
        let mut parts: Vec<[Box<dyn HookWorker>; 2]> = (0..2)
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
            parts[w][hook].process(&cx, &mut stores[w], &mut burst);
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
