//! `[[hook]]` sections of the router config: where each hook sits, which
//! kind builds it, and its arguments and rules. The kind itself checks its
//! arguments when the [`HookSet`] is built (after EAL start, with the port
//! ids known), and its errors are turned back into `file:line` of the rule
//! and field they are about.
//!
//! ```toml
//! [[hook]]
//! point = "egress"            # or "ingress"
//! port = "net_tap0"           # a [[port]] device
//! kind = "filter"             # a registered hook kind
//! name = "fw"                 # optional, default: the kind; unique per point and port
//! priority = 0                # optional, lower runs first
//! policy = "drop"             # kind-specific parameters ...
//! [[hook.rule]]               # ... and rules, in order
//! proto = "tcp"
//! dport = 23
//! action = "drop"
//! ```

use crate::config::{ConfigError, DeviceRef};
use hooks::{
    BuildContext, Chain, ChainEntry, HookArgs, HookBuildError, HookCounters, HookPoint, HookSet,
    Registry,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One `[[hook]]`, checked for its pipeline keys.
#[derive(Clone, Debug)]
pub struct HookSpec {
    pub point: HookPoint,
    pub port: DeviceRef,
    pub kind: String,
    pub name: String,
    pub priority: i32,
    pub args: HookArgs,
    /// 1-based line of the `[[hook]]` header.
    pub line: usize,
    /// 1-based line of each rule's `[[hook.rule]]` header (the hook's line
    /// for inline rules).
    pub rule_lines: Vec<usize>,
    /// Last line of this hook's text (before the next section that is not
    /// one of its rules).
    pub end_line: usize,
}

const PIPELINE_KEYS: [&str; 6] = ["point", "port", "kind", "name", "priority", "rule"];

/// `[[hook]]` tables (as TOML gives them, with the byte span of each) into
/// specs. `line_at` turns a byte offset into a 1-based line.
pub fn parse_hooks(
    path: &Path,
    text: &str,
    raw: &[toml::Spanned<toml::Table>],
    line_at: impl Fn(usize) -> usize,
) -> Result<Vec<HookSpec>, ConfigError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut specs: Vec<HookSpec> = Vec::new();
    for h in raw {
        let line = line_at(h.span().start);
        let err = |message: String| ConfigError {
            path: path.to_path_buf(),
            line: Some(line),
            message,
        };
        let spec = parse_hook(h.get_ref(), line, &lines).map_err(err)?;
        if let Some(dup) = specs
            .iter()
            .find(|s| s.point == spec.point && s.port == spec.port && s.name == spec.name)
        {
            return Err(err(format!(
                "[[hook]] field `name`: a hook named {:?} is already at {} of port {} \
                 (line {}); give one of them another `name`",
                spec.name,
                spec.point.name(),
                spec.port,
                dup.line
            )));
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// One `[[hook]]` table whose header is at `line`; the error is the message.
fn parse_hook(t: &toml::Table, line: usize, lines: &[&str]) -> Result<HookSpec, String> {
    let point = match str_field(t, "point")? {
        Some(p) => HookPoint::from_name(&p).ok_or_else(|| {
            format!(
                "[[hook]] field `point`: unknown point {p:?}; expected \"ingress\" (after L2, \
                 per input port) or \"egress\" (after routing, per output port)"
            )
        })?,
        None => return Err(missing("point", "\"ingress\" or \"egress\"")),
    };
    let port = port_field(t)?;
    let kind = str_field(t, "kind")?.ok_or_else(|| {
        missing(
            "kind",
            "a hook kind, e.g. \"classify\" (ingress) or \"filter\" (egress)",
        )
    })?;
    let name = str_field(t, "name")?.unwrap_or_else(|| kind.clone());
    let priority = priority_field(t)?;
    let rules = rule_tables(t)?;
    let params: toml::Table = t
        .iter()
        .filter(|(k, _)| !PIPELINE_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let end_line = section_end(lines, line);
    Ok(HookSpec {
        point,
        port,
        kind,
        name,
        priority,
        rule_lines: rule_headers(lines, line, end_line, rules.len()),
        args: HookArgs { params, rules },
        line,
        end_line,
    })
}

fn str_field(t: &toml::Table, key: &str) -> Result<Option<String>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(format!(
            "[[hook]] field `{key}`: expected a string, found {}",
            v.type_str()
        )),
    }
}

fn port_field(t: &toml::Table) -> Result<DeviceRef, String> {
    match t.get("port") {
        Some(toml::Value::String(s)) => Ok(DeviceRef::Name(s.clone())),
        Some(toml::Value::Integer(i)) if (0..=i64::from(u16::MAX)).contains(i) => {
            Ok(DeviceRef::Id(*i as u16))
        }
        Some(v) => Err(format!(
            "[[hook]] field `port`: expected the `device` of a [[port]] (a name or a \
             port id), found {v}"
        )),
        None => Err(missing("port", "the `device` of a [[port]]")),
    }
}

fn priority_field(t: &toml::Table) -> Result<i32, String> {
    match t.get("priority") {
        None => Ok(0),
        Some(toml::Value::Integer(i)) if i32::try_from(*i).is_ok() => Ok(*i as i32),
        Some(v) => Err(format!(
            "[[hook]] field `priority`: expected an integer in -2147483648..=2147483647 \
             (lower runs first), found {v}"
        )),
    }
}

fn rule_tables(t: &toml::Table) -> Result<Vec<toml::Table>, String> {
    let not_tables = |v: &toml::Value| {
        format!(
            "[[hook]] field `rule`: expected [[hook.rule]] tables, found {}",
            v.type_str()
        )
    };
    match t.get("rule") {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                toml::Value::Table(t) => Ok(t.clone()),
                v => Err(not_tables(v)),
            })
            .collect(),
        Some(v) => Err(not_tables(v)),
    }
}

fn missing(field: &str, expected: &str) -> String {
    format!("[[hook]] missing field `{field}`: expected {expected}")
}

/// Last line of the `[[hook]]` starting at `line`: before the next table
/// header that is not a `[[hook.rule]]` (or a sub-table of the hook).
fn section_end(lines: &[&str], line: usize) -> usize {
    for (i, l) in lines.iter().enumerate().skip(line) {
        let t = l.trim_start();
        if t.starts_with('[') && !t.starts_with("[[hook.") && !t.starts_with("[hook.") {
            return i;
        }
    }
    lines.len()
}

/// Lines of the `[[hook.rule]]` headers in `line+1..=end`; the hook's line
/// for rules that have no header (inline `rule = [...]`).
fn rule_headers(lines: &[&str], line: usize, end: usize, n: usize) -> Vec<usize> {
    let mut found: Vec<usize> = (line..end.min(lines.len()))
        .filter(|&i| {
            lines[i]
                .trim_start()
                .strip_prefix("[[")
                .is_some_and(|r| r.trim_start().starts_with("hook.rule"))
        })
        .map(|i| i + 1)
        .collect();
    found.resize(n, line);
    found
}

impl HookSpec {
    /// The line of one of the hook's own keys (the hook's line without it).
    fn key_line(&self, lines: &[&str], field: &str) -> usize {
        let e = HookBuildError {
            rule: None,
            field: Some(field.into()),
            message: String::new(),
        };
        self.error_line(lines, &e)
    }

    /// The line a kind's error is about: the field's line inside the rule
    /// (or the hook's own keys), else the rule's header, else the hook's.
    fn error_line(&self, lines: &[&str], e: &HookBuildError) -> usize {
        let (start, end) = match e.rule {
            Some(r) => {
                let start = self.rule_lines.get(r).copied().unwrap_or(self.line);
                let end = self
                    .rule_lines
                    .get(r + 1)
                    .map(|l| l - 1)
                    .unwrap_or(self.end_line);
                (start, end)
            }
            None => (
                self.line,
                self.rule_lines
                    .first()
                    .map(|l| l - 1)
                    .unwrap_or(self.end_line),
            ),
        };
        let Some(field) = &e.field else {
            return start;
        };
        (start..end.min(lines.len()))
            .find(|&i| {
                let l = lines[i].trim_start();
                l.strip_prefix(field.as_str())
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
            .map(|i| i + 1)
            .unwrap_or(start)
    }
}

/// Build every chain with `registry`'s kinds. `port_ids[i]` is the DPDK id
/// of `[[port]]` i, `port_names` every port's config name and id. Counters
/// of hooks already in `previous` (same point, port and name) carry over.
#[allow(clippy::too_many_arguments)]
pub fn build_hook_set(
    path: &Path,
    text: &str,
    specs: &[HookSpec],
    registry: &Registry,
    port_index: impl Fn(&DeviceRef) -> Option<usize>,
    port_ids: &[u16],
    port_names: &[(String, u16)],
    max_port: usize,
    workers: usize,
    previous: Option<&HookSet>,
) -> Result<HookSet, ConfigError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut old: BTreeMap<(HookPoint, u16, &str), Arc<HookCounters>> = BTreeMap::new();
    if let Some(prev) = previous {
        for (point, port, e) in prev.entries() {
            old.insert((point, port, e.name.as_str()), e.counters.clone());
        }
    }
    let mut chains: BTreeMap<(HookPoint, u16), Vec<ChainEntry>> = BTreeMap::new();
    for spec in specs {
        let err = |line: usize, message: String| ConfigError {
            path: path.to_path_buf(),
            line: Some(line),
            message,
        };
        let i = port_index(&spec.port).ok_or_else(|| {
            let known: Vec<String> = port_names.iter().map(|(n, _)| format!("{n:?}")).collect();
            err(
                spec.key_line(&lines, "port"),
                format!(
                    "[[hook]] field `port`: {} is not a [[port]] of this config; expected one \
                     of {}",
                    spec.port,
                    known.join(", ")
                ),
            )
        })?;
        let port = port_ids[i];
        let cx = BuildContext {
            workers,
            point: spec.point,
            port,
            ports: port_names.to_vec(),
            name: spec.name.clone(),
        };
        let hook = build_hook(spec, registry, &cx, &lines).map_err(|(l, m)| err(l, m))?;
        let counters = old
            .get(&(spec.point, port, spec.name.as_str()))
            .cloned()
            .unwrap_or_else(|| Arc::new(HookCounters::new(workers)));
        chains
            .entry((spec.point, port))
            .or_default()
            .push(ChainEntry {
                name: spec.name.clone(),
                kind: spec.kind.clone(),
                priority: spec.priority,
                hook,
                counters,
            });
    }
    let mut set = HookSet::empty(max_port);
    for ((point, port), entries) in chains {
        set.set(point, port, Chain::new(entries));
    }
    Ok(set)
}

/// The hook of `spec`, built by its registered kind; an error is its line
/// in `lines` and its message.
fn build_hook(
    spec: &HookSpec,
    registry: &Registry,
    cx: &BuildContext,
    lines: &[&str],
) -> Result<Arc<dyn hooks::Hook>, (usize, String)> {
    let Some(kind) = registry.get(&spec.kind) else {
        return Err((
            spec.key_line(lines, "kind"),
            format!(
                "[[hook]] field `kind`: no hook kind {:?} is registered; expected one of {}",
                spec.kind,
                registry.names().join(", ")
            ),
        ));
    };
    if !kind.points().contains(&spec.point) {
        let points: Vec<&str> = kind.points().iter().map(|p| p.name()).collect();
        return Err((
            spec.key_line(lines, "point"),
            format!(
                "[[hook]] field `point`: a {:?} hook cannot sit at {}; it works at {}",
                spec.kind,
                spec.point.name(),
                points.join(", ")
            ),
        ));
    }
    kind.build(&spec.args, cx).map_err(|e| {
        let message = format!(
            "[[hook]] {:?} ({} at {} of {}): {e}",
            spec.name,
            spec.kind,
            spec.point.name(),
            spec.port
        );
        (spec.error_line(lines, &e), message)
    })
}
