//! IPv6 changes asked of the running control plane (`fastpath ctl`,
//! reload): routes (static neighbours: `neighbours6`), checked whole first by the config
//! file's own IPv6 rules against the running config's ports, then applied
//! through the IPv6 FIB's writer in one batch (`fib6::writer`). A refused
//! change changes nothing and says what and why.

use super::changes::{fixed_what, Running};
use super::ControlPlane;
use crate::config::{route_prefix6, Neighbour6Spec, NextHop6Spec, Route6Spec};
use crate::ctl::Reply;
use crate::fib::{HopKind, Origin, NEIGH_BY_DST};
use crate::fib6::{Fib6Writer, NextHop6, Route6Change};
use crate::neigh::scope6;
use serde_json::json;
use std::net::Ipv6Addr;

/// An IPv6 next hop for people.
pub(super) fn describe_hop6(h: &NextHop6) -> String {
    match (h.kind, h.gateway) {
        (HopKind::Forward, Some(g)) => format!("via {g} port {}", h.port),
        (HopKind::Forward, None) => format!("dev port {}", h.port),
        (HopKind::Local, _) => format!("local port {}", h.port),
        (HopKind::NotUnicast, _) => "not unicast".into(),
        (HopKind::Martian | HopKind::Group, _) => "never routed".into(),
    }
}

/// Why there is no IPv6 table to change.
const NO_IPV6: &str = "this fastpath runs without IPv6 (its config has no IPv6 address, route \
                       or neighbour, so no IPv6 FIB was built): add `ipv6 = [...]` to a [[port]] \
                       and restart";

impl ControlPlane<'_> {
    fn fib6_writer(&mut self) -> Result<&mut Fib6Writer, String> {
        self.fib6.as_mut().ok_or_else(|| NO_IPV6.to_string())
    }

    /// `route add PREFIX via IP [dev PORT]` or `dev PORT`, IPv6.
    pub fn route_add6(
        &mut self,
        run: Running<'_>,
        prefix: &str,
        via: &[String],
        dev: Option<&str>,
    ) -> Result<Reply, String> {
        let device = dev.map(|d| run.device(d));
        let spec = run
            .cfg
            .check_route6(prefix, via, device.as_ref())
            .map_err(|e| format!("route add {prefix}: {e}"))?;
        let text = self.install_routes6(run, std::slice::from_ref(&spec), &[], Origin::Ctl)?;
        Ok(Reply::done(
            text.join("\n"),
            self.route6_json(spec.prefix, spec.prefix_len),
        ))
    }

    /// The next hop of a checked IPv6 route, its gateway held in the
    /// neighbour table (for resolution).
    fn route6_hop(&mut self, run: Running<'_>, spec: &Route6Spec) -> Result<NextHop6, String> {
        let (p, l) = (spec.prefix, spec.prefix_len);
        let port = spec.next_hop.port();
        let mut hop = NextHop6 {
            kind: HopKind::Forward,
            port: run.port_ids[port],
            gateway: None,
            neigh: NEIGH_BY_DST,
            mtu: run.cfg.ports[port].mtu,
        };
        if let NextHop6Spec::Via { gateway, .. } = spec.next_hop {
            let i = self
                .neigh
                .insert_gateway6(scope6(gateway, hop.port))
                .map_err(|e| format!("route {p}/{l}: gateway {gateway}: {e}"))?;
            hop.gateway = Some(gateway);
            hop.neigh = i as u32;
        }
        Ok(hop)
    }

    /// Install checked IPv6 routes `set` (replacing their prefixes' routes
    /// in place) and delete the prefixes of `gone`, in one batch: the
    /// workers see the table before or after it, never between. What was
    /// done, a line each.
    pub fn install_routes6(
        &mut self,
        run: Running<'_>,
        set: &[Route6Spec],
        gone: &[(Ipv6Addr, u8)],
        origin: Origin,
    ) -> Result<Vec<String>, String> {
        let mut batch = Vec::new();
        let mut said = Vec::new();
        for spec in set {
            let (p, l) = (spec.prefix, spec.prefix_len);
            let old = self.fib6_writer()?.rule(p, l).map(|r| r.origin.clone());
            if let Some(what) = old.as_ref().and_then(fixed_what) {
                return Err(format!("route {p}/{l}: is {what}; no route can change it"));
            }
            let hop = self.route6_hop(run, spec)?;
            let verb = if old.is_some() { "replaced" } else { "added" };
            said.push(format!("route {p}/{l} {} ({verb})", describe_hop6(&hop)));
            batch.push(Route6Change::Set(p, l, hop, origin.clone()));
        }
        let (removals, gone_said) = self.removals6(gone)?;
        batch.extend(removals);
        said.extend(gone_said);
        self.fib6_writer()?
            .apply(&batch)
            .map_err(|e| format!("IPv6 routes: {e}; nothing changed"))?;
        Ok(said)
    }

    /// The deletes of the prefixes of `gone` that have a route (none of
    /// them fixed), and a line each.
    fn removals6(
        &mut self,
        gone: &[(Ipv6Addr, u8)],
    ) -> Result<(Vec<Route6Change>, Vec<String>), String> {
        let mut batch = Vec::new();
        let mut said = Vec::new();
        for &(p, l) in gone {
            let Some(rule) = self.fib6_writer()?.rule(p, l) else {
                continue;
            };
            if let Some(what) = fixed_what(&rule.origin) {
                return Err(format!(
                    "route del {p}/{l}: is {what}; it cannot be deleted"
                ));
            }
            said.push(format!("route {p}/{l} deleted"));
            batch.push(Route6Change::Remove(p, l));
        }
        Ok((batch, said))
    }

    /// Where the IPv6 route of exactly `p/l` comes from, if there is one.
    pub fn route6_origin(&self, p: Ipv6Addr, l: u8) -> Option<Origin> {
        self.fib6.as_ref()?.rule(p, l).map(|r| r.origin.clone())
    }

    /// `route del PREFIX`, IPv6.
    pub fn route_del6(&mut self, prefix: &str) -> Result<Reply, String> {
        let (p, l) = route_prefix6(prefix).map_err(|e| format!("route del: {e}"))?;
        if self.fib6_writer()?.rule(p, l).is_none() {
            return Err(format!(
                "route del {p}/{l}: no route for exactly {p}/{l} (`show routes` lists them)"
            ));
        }
        let (batch, text) = self.removals6(&[(p, l)])?;
        self.fib6_writer()?
            .apply(&batch)
            .map_err(|e| format!("route del {p}/{l}: {e}"))?;
        Ok(Reply::done(
            text.join("\n"),
            json!({ "prefix": format!("{p}/{l}") }),
        ))
    }

    /// One IPv6 rule as JSON (the shape of IPv4's).
    pub(super) fn route6_json(&self, p: Ipv6Addr, l: u8) -> serde_json::Value {
        let Some(r) = self.fib6.as_ref().and_then(|w| w.rule(p, l)) else {
            return serde_json::Value::Null;
        };
        json!({
            "prefix": format!("{p}/{l}"),
            "family": "ipv6",
            "origin": r.origin.name(),
            "next_hops": [{
                "kind": format!("{:?}", r.hop.kind).to_lowercase(),
                "port": r.hop.port,
                "gateway": r.hop.gateway.map(|g| g.to_string()),
                "up": true,
            }],
        })
    }

    /// `show routes`' IPv6 part: text lines and JSON, by prefix.
    pub(super) fn routes6_shown(&self) -> (String, Vec<serde_json::Value>) {
        let mut text = String::new();
        let mut data = Vec::new();
        let Some(w) = &self.fib6 else {
            return (text, data);
        };
        for (p, l, r) in w.rules() {
            let prefix = format!("{p}/{l}");
            text.push_str(&format!(
                "{prefix:<18} {:<40} {}\n",
                describe_hop6(&r.hop),
                r.origin.name()
            ));
            data.push(self.route6_json(p, l));
        }
        (text, data)
    }
}

impl ControlPlane<'_> {
    /// A reload's IPv6 part, as a difference from `last` to `file` (the
    /// running config's ports): static neighbours installed or removed, then
    /// new and changed IPv6 routes installed and those the file no longer
    /// has deleted (a route `ctl` added stays unless the file names its
    /// prefix), all routes in one batch. What was done, in one line.
    pub fn reload6(
        &mut self,
        run: Running<'_>,
        last: &crate::config::RouterConfig,
    ) -> Result<String, String> {
        let file = run.cfg;
        if self.fib6.is_none() {
            return Ok(format!(
                "{}: IPv6 routes or neighbours were added to a config that started without \
                 IPv6; the IPv6 FIB is built at start: they take effect at a restart",
                file.path.display()
            ));
        }
        let (mut neigh_set, mut neigh_gone) = (0, 0);
        for n in &file.neighbours6 {
            if !last.neighbours6.iter().any(|o| same_neighbour6(o, n)) {
                self.install_neighbour6(run, n)?;
                neigh_set += 1;
            }
        }
        for o in &last.neighbours6 {
            if !file
                .neighbours6
                .iter()
                .any(|n| (n.address, n.port) == (o.address, o.port))
            {
                let _ = self.neigh_del_scoped6(scope6(o.address, run.port_ids[o.port]));
                neigh_gone += 1;
            }
        }
        let set: Vec<Route6Spec> = file
            .routes6
            .iter()
            .filter(|r| {
                !last.routes6.iter().any(|o| same_route6(o, r))
                    || self.route6_origin(r.prefix, r.prefix_len) != Some(Origin::Config)
            })
            .cloned()
            .collect();
        let gone: Vec<(Ipv6Addr, u8)> = last
            .routes6
            .iter()
            .map(|o| (o.prefix, o.prefix_len))
            .filter(|&(p, l)| {
                !file
                    .routes6
                    .iter()
                    .any(|r| (r.prefix, r.prefix_len) == (p, l))
                    && self.route6_origin(p, l) == Some(Origin::Config)
            })
            .collect();
        self.install_routes6(run, &set, &gone, Origin::Config)?;
        Ok(format!(
            "IPv6 routes reloaded from {}: {} added or changed, {} deleted (one swap); static \
             neighbours: {neigh_set} added or changed, {neigh_gone} removed",
            file.path.display(),
            set.len(),
            gone.len()
        ))
    }
}

/// Whether two IPv6 `[[route]]`s route the same way (lines aside).
fn same_route6(a: &Route6Spec, b: &Route6Spec) -> bool {
    (a.prefix, a.prefix_len, a.next_hop) == (b.prefix, b.prefix_len, b.next_hop)
}

/// Whether two IPv6 `[[neighbour]]`s are the same (lines aside).
fn same_neighbour6(a: &Neighbour6Spec, b: &Neighbour6Spec) -> bool {
    (a.address, a.mac, a.port) == (b.address, b.mac, b.port)
}
