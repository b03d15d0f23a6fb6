//! Changes asked of the running control plane (`fastpath ctl`, reload):
//! routes and static neighbours. Each is checked whole first, against the
//! running config's ports by the config file's own rules; a refused change
//! changes nothing and says what and why.

use super::ControlPlane;
use crate::config::{route_prefix, DeviceRef, NeighbourSpec, RouteSpec, RouterConfig};
use crate::ctl::Reply;
use crate::fib::{route_hop, HopKind, NextHop, Origin, NEIGH_BY_DST};
use crate::neigh::EthHeader;
use hooks::wire::ethernet::ethertype;
use serde_json::json;
use std::net::Ipv4Addr;

/// The running config and its ports' DPDK ids (`port_ids[i]` of `cfg.ports[i]`).
#[derive(Clone, Copy)]
pub struct Running<'a> {
    pub cfg: &'a RouterConfig,
    pub port_ids: &'a [u16],
}

impl Running<'_> {
    /// A port as the command names it: its device (as in the file) or its
    /// DPDK port id.
    pub(super) fn device(&self, name: &str) -> DeviceRef {
        let by_name = DeviceRef::Name(name.to_string());
        if self.cfg.port_index(&by_name).is_some() {
            return by_name;
        }
        match name.parse::<u16>() {
            Ok(id) => match self.port_ids.iter().position(|p| *p == id) {
                Some(i) => self.cfg.ports[i].device.clone(),
                None => DeviceRef::Id(id),
            },
            Err(_) => by_name,
        }
    }
}

/// What a rule that no route may change is.
pub(super) fn fixed_what(origin: &Origin) -> Option<String> {
    match origin {
        Origin::Config | Origin::Ctl | Origin::Fpm => None,
        Origin::Connected(port) => Some(format!(
            "the connected subnet of port {port}, always routed on-link out of it"
        )),
        Origin::Fixed(what) => Some(what.clone()),
    }
}

/// A next hop for people.
fn describe_hop(h: &NextHop, down: bool) -> String {
    let state = if down { " (down)" } else { "" };
    match h.kind {
        HopKind::Forward if h.gateway != 0 => {
            format!("via {} port {}{state}", Ipv4Addr::from(h.gateway), h.port)
        }
        HopKind::Forward => format!("dev port {}", h.port),
        HopKind::Local => format!("local port {}", h.port),
        HopKind::NotUnicast => "not unicast".into(),
        HopKind::Martian => "never routed".into(),
        HopKind::Group => "group".into(),
    }
}

impl ControlPlane<'_> {
    /// `route add PREFIX via IP[,IP...]` or `dev PORT`.
    pub fn route_add(
        &mut self,
        run: Running<'_>,
        prefix: &str,
        via: &[String],
        dev: Option<&str>,
    ) -> Result<Reply, String> {
        if crate::config::is_ipv6_text(prefix) {
            return self.route_add6(run, prefix, via, dev);
        }
        // `via` with `dev` is IPv6's link-local gateway; IPv4 takes `dev` alone.
        let via = if dev.is_some() { &[][..] } else { via };
        let device = dev.map(|d| run.device(d));
        let spec = run
            .cfg
            .check_route(prefix, via, device.as_ref())
            .map_err(|e| format!("route add {prefix}: {e}"))?;
        let replaced = self.install_route(run, &spec, Origin::Ctl)?;
        Ok(Reply::done(
            self.route_said(spec.prefix, spec.prefix_len, replaced),
            self.route_json(spec.prefix, spec.prefix_len),
        ))
    }

    /// Install a checked route (replacing the prefix's route in place);
    /// whether it replaced one. Says nothing: FPM installs a full table
    /// through here (`route_add` words it for people).
    pub fn install_route(
        &mut self,
        run: Running<'_>,
        spec: &RouteSpec,
        origin: Origin,
    ) -> Result<bool, String> {
        let (p, l) = (spec.prefix, spec.prefix_len);
        let old = self.fib.rule(p, l).map(|r| fixed_what(&r.origin));
        if let Some(Some(what)) = old {
            return Err(format!("route {p}/{l}: is {what}; no route can change it"));
        }
        let mut held = Ok(());
        let neigh = &mut self.neigh;
        let hops: Vec<NextHop> = spec
            .next_hops()
            .map(|h| {
                route_hop(run.cfg, run.port_ids, h, |gw| {
                    match neigh.insert_gateway(gw) {
                        Ok(i) => i as u32,
                        Err(e) => {
                            held = Err(format!("route {p}/{l}: gateway {gw}: {e}"));
                            NEIGH_BY_DST
                        }
                    }
                })
            })
            .collect();
        held?;
        self.fib
            .set(p, l, hops, origin)
            .map_err(|e| format!("route {p}/{l}: {e}"))?;
        Ok(old.is_some())
    }

    /// What `route add` did, for people: the route as installed.
    fn route_said(&self, p: Ipv4Addr, l: u8, replaced: bool) -> String {
        let hops = self.fib.rule(p, l).map_or(&[][..], |r| &r.hops[..]);
        let said: Vec<String> = hops.iter().map(|h| describe_hop(h, false)).collect();
        let verb = if replaced { "replaced" } else { "added" };
        format!("route {p}/{l} {} ({verb})", said.join(", "))
    }

    /// Where the route of exactly `p/l` comes from, if there is one.
    pub fn route_origin(&self, p: Ipv4Addr, l: u8) -> Option<Origin> {
        self.fib.rule(p, l).map(|r| r.origin.clone())
    }

    /// `route del PREFIX`.
    pub fn route_del(&mut self, prefix: &str) -> Result<Reply, String> {
        if crate::config::is_ipv6_text(prefix) {
            return self.route_del6(prefix);
        }
        let (p, l) = route_prefix(prefix).map_err(|e| format!("route del: {e}"))?;
        let Some(rule) = self.fib.rule(p, l) else {
            return Err(format!(
                "route del {p}/{l}: no route for exactly {p}/{l} (`show routes` lists them)"
            ));
        };
        if let Some(what) = fixed_what(&rule.origin) {
            return Err(format!(
                "route del {p}/{l}: is {what}; it cannot be deleted"
            ));
        }
        self.fib
            .remove(p, l)
            .map_err(|e| format!("route del {p}/{l}: {e}"))?;
        Ok(Reply::done(
            format!("route {p}/{l} deleted"),
            json!({ "prefix": format!("{p}/{l}") }),
        ))
    }

    /// `neigh add IP MAC`.
    pub fn neigh_add(
        &mut self,
        run: Running<'_>,
        address: &str,
        mac: &str,
        dev: Option<&str>,
    ) -> Result<Reply, String> {
        if crate::config::is_ipv6_text(address) {
            return self.neigh_add6(run, address, mac, dev);
        }
        let spec = run
            .cfg
            .check_neighbour(address, mac)
            .map_err(|e| format!("neigh add {address}: {e}"))?;
        let text = self.install_neighbour(run, &spec)?;
        Ok(Reply::done(text, self.neighbour_json(spec.address)))
    }

    /// Install a checked static neighbour (replacing a learned entry).
    pub fn install_neighbour(
        &mut self,
        run: Running<'_>,
        spec: &NeighbourSpec,
    ) -> Result<String, String> {
        let port = run.port_ids[spec.port];
        let src = self.port(port).map(|p| p.mac).unwrap_or_default();
        let hdr = EthHeader {
            dst: spec.mac,
            src,
            ethertype: ethertype::IPV4,
        };
        let a = spec.address;
        let i = self
            .neigh
            .insert_static(a, &hdr)
            .map_err(|e| format!("neigh add {a}: {e}"))?;
        self.failed_at.remove(&a);
        self.fib.set_gateway_state(u32::from(a), true);
        if let Some(res) = self.end_resolution(a) {
            self.flush_queue(i, res);
        }
        Ok(format!(
            "neighbour {a} {} static on port {port}",
            crate::config::format_mac(&spec.mac)
        ))
    }

    /// `neigh del IP`.
    pub fn neigh_del(&mut self, address: &str) -> Result<Reply, String> {
        if crate::config::is_ipv6_text(address) {
            return self.neigh_del6(address);
        }
        let a: Ipv4Addr = address.trim().parse().map_err(|_| {
            format!("neigh del: {address:?} is not an IPv4 address; expected e.g. 10.0.1.2")
        })?;
        self.neigh
            .remove_static(a)
            .map_err(|e| format!("neigh del {a}: {e}"))?;
        Ok(Reply::done(
            format!("neighbour {a}: no longer static"),
            json!({ "address": a.to_string() }),
        ))
    }

    /// One rule as JSON.
    fn route_json(&self, p: Ipv4Addr, l: u8) -> serde_json::Value {
        let Some(r) = self.fib.rule(p, l) else {
            return serde_json::Value::Null;
        };
        let hops: Vec<serde_json::Value> = r
            .hops
            .iter()
            .map(|h| {
                json!({
                    "kind": format!("{:?}", h.kind).to_lowercase(),
                    "port": h.port,
                    "gateway": (h.gateway != 0).then(|| Ipv4Addr::from(h.gateway).to_string()),
                    "up": !self.fib.is_down(h.gateway),
                })
            })
            .collect();
        json!({
            "prefix": format!("{p}/{l}"),
            "origin": r.origin.name(),
            "next_hops": hops,
        })
    }

    /// `show routes`: every prefix of the table.
    pub fn show_routes(&self) -> Reply {
        let mut text = String::new();
        let mut data = Vec::new();
        for (p, l, r) in self.fib.rules() {
            let hops: Vec<String> = r
                .hops
                .iter()
                .map(|h| describe_hop(h, h.gateway != 0 && self.fib.is_down(h.gateway)))
                .collect();
            let prefix = format!("{p}/{l}");
            text.push_str(&format!(
                "{prefix:<18} {:<40} {}\n",
                hops.join(", "),
                r.origin.name()
            ));
            data.push(self.route_json(p, l));
        }
        let (text6, data6) = self.routes6_shown();
        text.push_str(&text6);
        data.extend(data6);
        Reply::done(text, serde_json::Value::Array(data))
    }

    fn neighbour_json(&self, a: Ipv4Addr) -> serde_json::Value {
        let Some(e) = self.neigh.table().get(a) else {
            return serde_json::Value::Null;
        };
        json!({
            "address": a.to_string(),
            "mac": crate::config::format_mac(&e.hh().header().dst),
            "state": format!("{:?}", e.state()).to_lowercase(),
            "static": e.is_static(),
            "gateway": e.is_gateway(),
        })
    }

    /// `show neighbours`: the table, then failed addresses without an entry.
    pub fn show_neighbours(&self) -> Reply {
        let mut data: Vec<serde_json::Value> = self
            .neigh
            .table()
            .iter()
            .map(|(_, e)| self.neighbour_json(e.addr()))
            .collect();
        data.sort_by_key(|v| {
            v["address"]
                .as_str()
                .and_then(|s| s.parse::<Ipv4Addr>().ok())
                .map(u32::from)
        });
        let mut data6: Vec<serde_json::Value> = self
            .neigh
            .table()
            .iter6()
            .map(|(_, e)| self.neighbour6_json(e.addr6()))
            .collect();
        data6.sort_by_key(|v| {
            v["address"]
                .as_str()
                .and_then(|s| s.parse::<std::net::Ipv6Addr>().ok())
                .map(std::net::Ipv6Addr::to_bits)
        });
        data.extend(data6);
        let mut text = self.describe_neighbours().join("\n");
        text.push('\n');
        Reply::done(text, serde_json::Value::Array(data))
    }
}
