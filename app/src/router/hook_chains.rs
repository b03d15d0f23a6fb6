//! The hook chains of a running router: built from the config's `[[hook]]`
//! sections at start and again at each reload, and said on stderr.

use crate::config::RouterConfig;
use crate::hook_config::build_hook_set;
use crate::lifecycle::RunError;
use hooks::{HookSet, Registry};

/// What building the hook chains needs, kept for reloads.
pub(super) struct HookChains<'a> {
    cfg: &'a RouterConfig,
    registry: &'a Registry,
    port_ids: &'a [u16],
    port_names: Vec<(String, u16)>,
    max_port: usize,
    workers: usize,
}

impl<'a> HookChains<'a> {
    /// For the running `cfg`, whose `[[port]]` i is DPDK port `port_ids[i]`.
    pub fn new(
        cfg: &'a RouterConfig,
        registry: &'a Registry,
        port_ids: &'a [u16],
        max_port: usize,
        workers: usize,
    ) -> Self {
        let port_names = cfg
            .ports
            .iter()
            .zip(port_ids)
            .map(|(p, id)| (p.device.to_string(), *id))
            .collect();
        HookChains {
            cfg,
            registry,
            port_ids,
            port_names,
            max_port,
            workers,
        }
    }

    /// The chains of `file`'s [[hook]] sections (ports resolved against the
    /// running config).
    pub fn build(
        &self,
        file: &RouterConfig,
        previous: Option<&HookSet>,
    ) -> Result<HookSet, RunError> {
        build_hook_set(
            &file.path,
            &file.text,
            &file.hooks,
            self.registry,
            |d| self.cfg.port_index(d),
            self.port_ids,
            &self.port_names,
            self.max_port,
            self.workers,
            previous,
        )
        .map_err(|e| RunError::Usage(e.to_string()))
    }
}

/// One line per hook: its name, kind, point, port and priority.
pub(super) fn log_hooks(set: &HookSet) {
    for (point, port, e) in set.entries() {
        eprintln!(
            "fastpath: hook {:?} ({}) at {} of port {port}, priority {}",
            e.name,
            e.kind,
            point.name(),
            e.priority
        );
    }
}
