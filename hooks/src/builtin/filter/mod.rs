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
//! as `ct_invalid_dropped`), and the connection keeps its state. IPv6
//! packets are tracked alike in the worker's IPv6 table (a burst's IPv6
//! packets looked up together), counted under the same `ct_*` counters;
//! `ct_entries` counts both families' entries, and each family's table
//! holds `conntrack_max`. `count`
//! rules count every packet they match that reaches them and do not decide.

mod burst;
mod config;
mod counters;
mod rules;
#[cfg(test)]
mod tests;

pub use config::MATCH_KEYS;

use crate::conntrack::{ConnTable, CtConfig};
use crate::rules::{flow_cache, CachedClassifier, ClassifierBuilder, FragmentGuard};
use crate::worker_counters::{CounterStore, WorkerCounters};
use crate::{
    BuildContext, Hook, HookArgs, HookBuildError, HookKind, HookPoint, HookWorker, StoreKey,
    WorkerStore,
};
use burst::FilterWorker;
use config::{check_params, parse_capacity, parse_policy, parse_stateful};
use counters::{COUNTERS, TABLE_COUNTERS};
use rules::{parse_rules, Rules};
use std::sync::{Arc, Mutex, OnceLock};

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
    /// By carried answer: the counter of its verdict (`burst::carried_table`).
    carried: Vec<u8>,
    /// The lookahead slot whose carried answers this filter takes, once
    /// linked (`crate::lookahead`).
    slot: OnceLock<usize>,
}

/// The hook handed to the chain: the shared instance.
struct FilterHook(Arc<Filter>);

impl Hook for FilterHook {
    /// The filter on worker `worker`, and its connection table in `store` (the one
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
        Box::new(FilterWorker::new(f.clone(), worker))
    }

    fn lookahead(&self) -> Option<&dyn crate::lookahead::Lookahead> {
        Some(&*self.0)
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        counters::stats(&self.0)
    }

    fn writes_frames(&self) -> bool {
        false
    }
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
        let carried = burst::carried_table(&rules, policy);
        Ok(Arc::new(FilterHook(Arc::new(Filter {
            carried,
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
