//! `[[hook]]` sections of the router config: where each hook sits, which
//! kind builds it, and its arguments and rules, with the line of each rule
//! and field. The kind itself checks its arguments when the hook set is
//! built (after EAL start, with the port ids known: the `hook_config` module),
//! and its errors are turned back into `file:line` of the rule and field
//! they are about (`HookSpec::error_line`).
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

use super::device::DeviceRef;
use super::position::ConfigError;
use hooks::{HookArgs, HookBuildError, HookPoint};
use std::path::Path;

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
    pub(crate) fn key_line(&self, lines: &[&str], field: &str) -> usize {
        let e = HookBuildError {
            rule: None,
            field: Some(field.into()),
            message: String::new(),
        };
        self.error_line(lines, &e)
    }

    /// The line a kind's error is about: the field's line inside the rule
    /// (or the hook's own keys), else the rule's header, else the hook's.
    pub(crate) fn error_line(&self, lines: &[&str], e: &HookBuildError) -> usize {
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
