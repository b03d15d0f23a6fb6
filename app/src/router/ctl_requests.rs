//! The main lcore's side of `fastpath ctl` and SIGHUP: each request is
//! handled here, on the control loop, between two rounds of the control
//! plane (see `ctl::server` for how it gets here).
//!
//! `reload` re-reads the config file and applies it as a difference from the
//! file as last loaded: new and changed `[[route]]`s are installed in place,
//! routes the file no longer has are deleted (a route `fastpath ctl` added
//! stays, unless the file now names its prefix), static neighbours likewise,
//! and the hooks are rebuilt and swapped as a whole. IPv6 routes and static
//! neighbours likewise (`control::changes6`: the IPv6 routes in one batch). The file is checked
//! whole first (and its hooks built): a file that does not load changes
//! nothing. Ports and lcores need a restart.

use super::control::changes::Running;
use super::control::ControlPlane;
use super::hook_chains::{log_hooks, HookChains};
use super::setup::{split_flows, tracks_connections};
use crate::config::{RouteSpec, RouterConfig};
use crate::counters::{LcoreCounters, PortCount};
use crate::ctl::{Reply, Request, Show};
use crate::fib::Origin;
use crate::report::HookReport;
use hooks::snapshot::Publisher;
use hooks::{DropReason, HookSet};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What handling a request needs beyond the control plane.
pub(super) struct CtlRequests<'a> {
    pub run: Running<'a>,
    pub hooks: &'a HookChains<'a>,
    pub publisher: &'a Publisher<HookSet>,
    /// The config file as last loaded (what a reload is a difference from).
    pub last: RouterConfig,
    /// Every lcore's counters (workers and the main lcore), for `show stats`.
    pub counters: Vec<Arc<LcoreCounters>>,
    /// Drop capture, for `capture start` / `stop`.
    pub capture: crate::capture::Control,
    /// The FPM session's counters (`--fpm`), for `show fpm`.
    pub fpm: Option<Arc<crate::fpm::FpmStats>>,
}

/// Whether two `[[route]]`s route the same way (lines aside).
fn same_route(a: &RouteSpec, b: &RouteSpec) -> bool {
    (a.prefix, a.prefix_len, a.next_hop, &a.multipath)
        == (b.prefix, b.prefix_len, b.next_hop, &b.multipath)
}

impl CtlRequests<'_> {
    /// Answer one request.
    pub fn handle(&mut self, control: &mut ControlPlane<'_>, request: Request) -> Reply {
        let run = self.run;
        match request {
            Request::RouteAdd { prefix, via, dev } => {
                control.route_add(run, &prefix, &via, dev.as_deref()).into()
            }
            Request::RouteDel { prefix } => control.route_del(&prefix).into(),
            Request::NeighAdd { address, mac, dev } => control
                .neigh_add(run, &address, &mac, dev.as_deref())
                .into(),
            Request::NeighDel { address } => control.neigh_del(&address).into(),
            Request::Reload => self
                .reload(control)
                .map(|lines| {
                    let text = lines.join("\n");
                    Reply::done(text, json!({ "reloaded": lines }))
                })
                .into(),
            Request::Show { what: Show::Routes } => control.show_routes(),
            Request::Show {
                what: Show::Neighbours,
            } => control.show_neighbours(),
            Request::Show { what: Show::Hooks } => self.show_hooks(),
            Request::Show { what: Show::Stats } => self.show_stats(),
            Request::Show { what: Show::Fpm } => self.show_fpm(),
            Request::CaptureStart { file } => self.capture_start(&file),
            Request::CaptureStop => self.capture_stop(),
        }
    }

    /// SIGHUP: what `reload` does, said on stderr.
    #[cold]
    pub fn sighup(&mut self, control: &mut ControlPlane<'_>) {
        match self.reload(control) {
            Ok(lines) => {
                for l in lines {
                    eprintln!("fastpath: SIGHUP: {l}");
                }
            }
            Err(e) => eprintln!(
                "fastpath: SIGHUP: {e}; the running hooks stay (and routes and neighbours: \
                 nothing changed)"
            ),
        }
    }

    /// Re-read the config file and apply it; what was done, line by line.
    #[cold]
    pub fn reload(&mut self, control: &mut ControlPlane<'_>) -> Result<Vec<String>, String> {
        let cfg = self.run.cfg;
        let path = cfg.path.display();
        let file = RouterConfig::load(&cfg.path).map_err(|e| e.to_string())?;
        if file.ports != cfg.ports {
            return Err(format!(
                "{path}: the [[port]] sections changed; ports need a restart"
            ));
        }
        let set = self
            .hooks
            .build(&file, Some(&self.publisher.current()))
            .map_err(|e| e.to_string())?;
        let run = Running {
            cfg: &file,
            port_ids: self.run.port_ids,
        };
        let mut lines = Vec::new();
        let (mut neigh_set, mut neigh_gone) = (0, 0);
        for n in &file.neighbours {
            let same = self
                .last
                .neighbours
                .iter()
                .any(|o| (o.address, o.mac) == (n.address, n.mac));
            if !same {
                control.install_neighbour(run, n)?;
                neigh_set += 1;
            }
        }
        let (mut set_routes, mut gone_routes) = (0, 0);
        for r in &file.routes {
            let same = self.last.routes.iter().any(|o| same_route(o, r));
            if !same || control.route_origin(r.prefix, r.prefix_len) != Some(Origin::Config) {
                control.install_route(run, r, Origin::Config)?;
                set_routes += 1;
            }
        }
        for o in &self.last.routes {
            let kept = file
                .routes
                .iter()
                .any(|r| (r.prefix, r.prefix_len) == (o.prefix, o.prefix_len));
            if !kept && control.route_origin(o.prefix, o.prefix_len) == Some(Origin::Config) {
                control.route_del(&format!("{}/{}", o.prefix, o.prefix_len))?;
                gone_routes += 1;
            }
        }
        for o in &self.last.neighbours {
            if !file.neighbours.iter().any(|n| n.address == o.address) {
                let _ = control.neigh_del(&o.address.to_string());
                neigh_gone += 1;
            }
        }
        lines.push(format!(
            "routes reloaded from {path}: {set_routes} added or changed, {gone_routes} \
             deleted; static neighbours: {neigh_set} added or changed, {neigh_gone} removed"
        ));
        if (&file.routes6, &file.neighbours6) != (&self.last.routes6, &self.last.neighbours6) {
            lines.push(control.reload6(run, &self.last)?);
        }
        if file.lcores != self.last.lcores {
            lines.push(format!(
                "{path}: the [[lcore]] sections changed; they need a restart"
            ));
        }
        let n = set.entries().count();
        log_hooks(&set);
        let _retired = self.publisher.publish(set);
        lines.push(format!(
            "hooks reloaded from {path} ({n} hooks, generation {})",
            self.publisher.generation()
        ));
        lines.extend(connection_warnings(&self.last, &file));
        self.last = file;
        Ok(lines)
    }

    /// `show fpm`: the FPM session's state and counters.
    fn show_fpm(&self) -> Reply {
        let Some(stats) = &self.fpm else {
            return Reply::done(
                "fpm: off (start fastpath with --fpm ADDR:PORT; docs/frr.md)\n",
                json!({ "enabled": false }),
            );
        };
        let fields = stats.fields();
        let mut text = String::new();
        for (k, v) in &fields {
            if *v > 0 || k.starts_with("connected") || k.ends_with("routes") {
                text.push_str(&format!("{k:<22} {v}\n"));
            }
        }
        let mut data: serde_json::Map<String, serde_json::Value> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        data.insert("enabled".into(), json!(true));
        Reply::done(text, serde_json::Value::Object(data))
    }

    fn capture_start(&self, file: &std::path::Path) -> Reply {
        match self.capture.start(file) {
            Ok(()) => Reply::done(
                format!("capturing dropped packets to {}", file.display()),
                json!({ "file": file }),
            ),
            Err(e) => Reply::refused(e),
        }
    }

    fn capture_stop(&self) -> Reply {
        match self.capture.stop() {
            Ok(summary) => Reply::done(
                summary.to_line(),
                serde_json::to_value(&summary).unwrap_or_default(),
            ),
            Err(e) => Reply::refused(e),
        }
    }

    fn show_hooks(&self) -> Reply {
        let hooks = HookReport::of(&self.publisher.current());
        let mut text = String::new();
        for h in &hooks {
            text.push_str(&format!(
                "{:<16} {:<10} {} port {} priority {}\n",
                h.name, h.kind, h.point, h.port, h.priority
            ));
        }
        let data = serde_json::to_value(&hooks).unwrap_or_default();
        Reply::done(text, data)
    }

    /// `show stats`: per port received, sent and dropped (by reason) so far,
    /// and the drops of each pipeline stage by reason.
    fn show_stats(&self) -> Reply {
        let mut ports: Vec<PortCount> = Vec::new();
        for c in &self.counters {
            for (i, p) in c.snapshot().iter().enumerate() {
                if ports.len() <= i {
                    ports.resize(i + 1, PortCount::default());
                }
                ports[i].merge(p);
            }
        }
        let mut text = String::new();
        let mut data = Vec::new();
        for (id, p) in ports.iter().enumerate() {
            if !self.run.port_ids.contains(&(id as u16)) {
                continue;
            }
            let drops: BTreeMap<&str, u64> = DropReason::ALL
                .iter()
                .map(|r| (r.name(), p.drops.get(*r)))
                .filter(|(_, n)| *n > 0)
                .collect();
            text.push_str(&format!(
                "port {id}: rx {} tx {} dropped {} punted {}\n",
                p.rx,
                p.tx,
                p.drops.total(),
                p.punted
            ));
            for (r, n) in &drops {
                text.push_str(&format!("  {r:<24} {n}\n"));
            }
            data.push(json!({
                "port": id, "rx": p.rx, "tx": p.tx, "punted": p.punted,
                "dropped": p.drops.total(), "drops": drops,
            }));
        }
        let by_stage = crate::report::stage_drops(self.counters.iter().map(|c| &**c));
        let staged: Vec<String> = by_stage
            .iter()
            .flat_map(|(st, d)| d.iter().map(move |(r, n)| format!("{st} {r} {n}")))
            .collect();
        if !staged.is_empty() {
            text.push_str(&format!("drops by stage: {}\n", staged.join(", ")));
        }
        Reply::done(text, json!({ "ports": data, "stage_drops": by_stage }))
    }
}

/// What a reload from `old` to `new` means for stateful filters on several
/// workers: the RSS key is set when a port starts, so a stateful filter
/// added by a reload runs over the key the ports started with; and the
/// placement may split flows (see `split_flows`).
fn connection_warnings(old: &RouterConfig, new: &RouterConfig) -> Vec<String> {
    let workers = crate::dpdk::lcore::workers().len();
    let mut lines = Vec::new();
    if workers > 1 && tracks_connections(new) && !tracks_connections(old) {
        lines.push(format!(
            "{}: a stateful filter was added: RSS ports keep the key they started with, not \
             the symmetric one, until a restart; on {workers} workers a reply can reach \
             another worker's connection table",
            new.path.display()
        ));
    }
    lines.extend(split_flows(new, workers));
    lines
}
