//! A filter's counters: its own per worker, and what each worker publishes
//! of its connection table.

use super::Filter;
use crate::conntrack::{ConnTable, CtStats};

// Per-worker counters of a filter.
pub(super) const RULE_ACCEPT: usize = 0;
pub(super) const RULE_DROP: usize = 1;
pub(super) const POLICY_ACCEPT: usize = 2;
pub(super) const POLICY_DROP: usize = 3;
pub(super) const UNPARSED: usize = 4;
pub(super) const COUNTED: usize = 5;
pub(super) const CT_FULL_POLICY: usize = 6;
pub(super) const CT_NEW: usize = 7;
pub(super) const CT_EST: usize = 8;
pub(super) const CT_REL: usize = 9;
pub(super) const CT_UNTRACKED: usize = 10;
pub(super) const CT_INVALID: usize = 11;
/// Packets decided by an answer carried from ingress (`crate::lookahead`).
pub(super) const ANSWERED_AHEAD: usize = 12;
pub(super) const COUNTERS: usize = 13;
pub(super) const COUNTER_NAMES: [&str; COUNTERS] = [
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
pub(super) const TABLE_NAMES: [&str; 7] = [
    "ct_entries",
    "ct_refused_full",
    "ct_early_drop",
    "ct_tcp_established",
    "ct_tcp_reset",
    "ct_rst_out_of_window",
    "ct_tcp_out_of_window",
];
pub(super) const TABLE_COUNTERS: usize = TABLE_NAMES.len();

/// `TABLE_NAMES`' values of a table.
pub(super) fn table_values(t: &ConnTable) -> [u64; TABLE_COUNTERS] {
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

/// The statistics lines of filter `f`: its counters (the connection
/// tracking ones only when stateful, `answered_ahead` only when linked),
/// its connection tables' and its classifier's.
pub(super) fn stats(f: &Filter) -> Vec<(&'static str, u64)> {
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
