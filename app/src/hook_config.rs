//! Building the hook set of a running router from its config's `[[hook]]`
//! specs ([`crate::config::HookSpec`]) with the registered hook kinds; a
//! kind's error comes back as `file:line` of the rule and field it is about.

use crate::config::{ConfigError, DeviceRef, HookSpec};
use hooks::{BuildContext, Chain, ChainEntry, HookCounters, HookPoint, HookSet, Registry};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

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
    log_lookahead(&hooks::lookahead::link(&set));
    Ok(set)
}

/// Which hooks answer which ahead, on stderr.
fn log_lookahead(linked: &hooks::lookahead::Linked) {
    for (port, e) in &linked.failed {
        eprintln!(
            "fastpath: the last ingress hook of port {port} does not answer egress rules \
             ahead: {e}; both hooks classify on their own"
        );
    }
    if linked.ingress.is_empty() {
        return;
    }
    for (port, slot) in &linked.egress {
        eprintln!(
            "fastpath: the first egress hook of port {port} takes answers looked up at \
             ingress (lookahead slot {slot}) from the last ingress hook of port(s) {:?}",
            linked.ingress
        );
    }
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
