//! A filter's parameters and each rule's action, read from the hook's
//! config and checked, with errors that say what is wrong and where.

use super::Action;
use crate::conntrack::CtConfig;
use crate::rules::flow_cache;
use crate::{HookArgs, HookBuildError};

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
pub(super) const ACTION_KEYS: [&str; 1] = ["action"];
/// The hook's own parameters.
pub(super) const PARAMS: [&str; 4] = ["policy", "stateful", "conntrack_max", flow_cache::PARAM];

pub(super) fn parse_policy(args: &HookArgs) -> Result<Action, HookBuildError> {
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

pub(super) fn check_params(args: &HookArgs) -> Result<(), HookBuildError> {
    match args.params.keys().find(|k| !PARAMS.contains(&k.as_str())) {
        Some(k) => Err(HookBuildError::param(
            k,
            "unknown field; expected policy, stateful, conntrack_max, flow_cache",
        )),
        None => Ok(()),
    }
}

pub(super) fn parse_stateful(args: &HookArgs) -> Result<bool, HookBuildError> {
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
pub(super) fn parse_capacity(args: &HookArgs, stateful: bool) -> Result<usize, HookBuildError> {
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
pub(super) fn parse_action(t: &toml::Table, i: usize) -> Result<Option<Action>, HookBuildError> {
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
