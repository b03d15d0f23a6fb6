//! What the control plane shows: the routes and neighbours for the
//! operations plane (`fastpath ctl`, telemetry, metrics) and the exit report.

use super::ControlPlane;
use crate::config::format_mac;
use crate::fib::{HopKind, OriginCounts};
use crate::neigh::NeighState;
use crate::ops::view::{HopView, Neigh6View, NeighView, Route6View, RouteView};
use std::net::{IpAddr, Ipv4Addr};

impl ControlPlane<'_> {
    /// The versions of both families' tables: while they hold, the views
    /// [`routes`](Self::routes) and [`routes6`](Self::routes6) built are current.
    pub fn routes_version(&self) -> (u64, u64) {
        (
            self.fib.version(),
            self.fib6.as_ref().map_or(0, |w| w.version()),
        )
    }

    /// Both families' rules by origin (IPv6: `None` without IPv6).
    pub fn route_counts(&self) -> (OriginCounts, Option<OriginCounts>) {
        (
            self.fib.origin_counts(),
            self.fib6.as_ref().map(|w| w.origin_counts()),
        )
    }

    /// The forwarding table as the operations plane shows it: every rule
    /// of the FIB as it is now (runtime changes included).
    pub fn routes(&self) -> Vec<RouteView> {
        self.fib
            .rules()
            .map(|(prefix, len, r)| RouteView {
                prefix,
                len,
                kind: match r.hops.first().map(|h| h.kind) {
                    Some(HopKind::Local) => "local",
                    Some(HopKind::NotUnicast) => "not_unicast",
                    Some(HopKind::Martian) => "martian",
                    _ => "forward",
                },
                origin: r.origin.name(),
                hops: r
                    .hops
                    .iter()
                    .map(|h| HopView {
                        port: h.port,
                        via: (h.gateway != 0).then(|| Ipv4Addr::from(h.gateway)),
                        down: h.gateway != 0 && self.fib.is_down(h.gateway),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The IPv6 table, by prefix (empty without IPv6).
    pub fn routes6(&self) -> Vec<Route6View> {
        let Some(w) = &self.fib6 else {
            return Vec::new();
        };
        w.rules()
            .map(|(prefix, len, r)| Route6View {
                prefix,
                len,
                kind: kind_name(r.hop.kind),
                origin: r.origin.name(),
                port: r.hop.port,
                via: r.hop.gateway,
            })
            .collect()
    }

    /// The IPv6 table's counts for the exit report (`None` without IPv6).
    pub fn ipv6_report(&self) -> Option<crate::report::Ipv6Report> {
        let w = self.fib6.as_ref()?;
        let mut r = crate::report::Ipv6Report {
            table_swaps: w.swaps(),
            ..Default::default()
        };
        // The writer's counts: no walk of the table (sorted, for a full one).
        for (origin, n) in w.origin_counts().fields() {
            if n > 0 {
                r.routes += n as usize;
                r.routes_by_origin.insert(origin, n as usize);
            }
        }
        for (_, e) in self.neigh.table().iter6() {
            r.neighbours += 1;
            r.static_neighbours += usize::from(e.is_static());
        }
        Some(r)
    }

    /// The IPv6 neighbours of the table.
    pub fn neighbours6(&self) -> Vec<Neigh6View> {
        self.neigh
            .table()
            .iter6()
            .map(|(_, e)| {
                let state = e.state();
                let (address, port) = crate::neigh::unscope6(e.addr6());
                Neigh6View {
                    address,
                    port,
                    mac: state.is_valid().then(|| e.hh().header().dst),
                    state: state_name(state),
                    is_static: e.is_static(),
                }
            })
            .collect()
    }

    /// The neighbour table, then the addresses whose resolution failed
    /// lately and that never answered (they have no entry).
    pub fn neighbours(&self) -> Vec<NeighView> {
        let mut out: Vec<NeighView> = self
            .neigh
            .table()
            .iter()
            .map(|(_, e)| {
                let state = e.state();
                NeighView {
                    address: e.addr(),
                    mac: state.is_valid().then(|| e.hh().header().dst),
                    state: match state {
                        NeighState::Incomplete => "incomplete",
                        NeighState::Reachable => "reachable",
                        NeighState::Stale => "stale",
                        NeighState::Failed => "failed",
                    },
                    is_static: e.is_static(),
                }
            })
            .collect();
        out.extend(self.failed_unknown().into_iter().map(|a| NeighView {
            address: a,
            mac: None,
            state: "failed",
            is_static: false,
        }));
        out
    }

    /// The neighbour table, one line per entry, for the exit report, then
    /// the addresses whose resolution failed lately and that never answered
    /// (they have no entry), then the IPv6 neighbours.
    pub fn describe_neighbours(&self) -> Vec<String> {
        let line = |(_, e): (usize, &crate::neigh::NeighEntry)| {
            let h = e.hh().header();
            format!(
                "{:<15} {:<17} {:?}{}",
                match e.ip() {
                    Some(IpAddr::V6(a)) => crate::neigh::display6(a),
                    Some(a) => a.to_string(),
                    None => String::new(),
                },
                format_mac(&h.dst),
                e.state(),
                if e.is_static() { " static" } else { "" }
            )
        };
        let table = self.neigh.table();
        let mut lines: Vec<String> = table.iter().map(line).collect();
        lines.extend(
            self.failed_unknown()
                .into_iter()
                .map(|a| format!("{:<15} {:<17} Failed", a.to_string(), "-")),
        );
        // An IPv6 neighbour probed by unicast is in the RFC's PROBE state.
        lines.extend(table.iter6().map(|(i, e)| {
            let probing = self
                .pending6
                .get(&e.addr6())
                .is_some_and(|r| r.unicast.is_some());
            match probing {
                true => line((i, e)).replace("Stale", "Probe"),
                false => line((i, e)),
            }
        }));
        lines
    }

    /// The addresses whose resolution failed lately and that have no entry
    /// (they never answered), in order.
    fn failed_unknown(&self) -> Vec<Ipv4Addr> {
        let table = self.neigh.table();
        let mut failed: Vec<Ipv4Addr> = self
            .failed_at
            .keys()
            .filter(|a| table.lookup(**a).is_none())
            .copied()
            .collect();
        failed.sort();
        failed
    }
}

/// A route kind as the operations plane names it.
fn kind_name(k: HopKind) -> &'static str {
    match k {
        HopKind::Local => "local",
        HopKind::NotUnicast => "not_unicast",
        HopKind::Martian => "martian",
        HopKind::Forward | HopKind::Group => "forward",
    }
}

/// A neighbour state as the operations plane names it.
fn state_name(s: NeighState) -> &'static str {
    match s {
        NeighState::Incomplete => "incomplete",
        NeighState::Reachable => "reachable",
        NeighState::Stale => "stale",
        NeighState::Failed => "failed",
    }
}
