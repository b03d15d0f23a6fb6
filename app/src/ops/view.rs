//! The control plane's state as the operations plane shows it: routes,
//! neighbours, hooks and what the control plane did. Built on the main
//! lcore (router mode) and published whole; readers never see a half-made
//! one.

use crate::report::HookReport;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Instant;

/// One route of the forwarding table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteView {
    pub prefix: Ipv4Addr,
    pub len: u8,
    /// `forward`, `local`, `not_unicast` or `martian`.
    pub kind: &'static str,
    /// Where it comes from: `config`, `ctl`, `fpm`, `connected` or `fixed`.
    pub origin: &'static str,
    /// Its next hops (several: ECMP).
    pub hops: Vec<HopView>,
}

/// One next hop of a route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopView {
    /// Output port (for `local`: the port owning the address).
    pub port: u16,
    /// The gateway; `None` on-link (the destination is the neighbour).
    pub via: Option<Ipv4Addr>,
    /// Out of its ECMP group until its gateway answers again.
    pub down: bool,
}

/// One neighbour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeighView {
    pub address: Ipv4Addr,
    /// The MAC address, when known.
    pub mac: Option<[u8; 6]>,
    /// `incomplete`, `reachable`, `stale` or `failed`.
    pub state: &'static str,
    pub is_static: bool,
}

/// One route of the IPv6 table (one next hop: IPv6 has no ECMP here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route6View {
    pub prefix: Ipv6Addr,
    pub len: u8,
    /// `forward`, `local`, `not_unicast` or `martian`.
    pub kind: &'static str,
    /// Where it comes from: `config`, `ctl`, `connected` or `fixed`.
    pub origin: &'static str,
    /// Output port (for `local`: the port owning the address).
    pub port: u16,
    /// The gateway; `None` on-link.
    pub via: Option<Ipv6Addr>,
}

/// One IPv6 neighbour (the table both families share).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neigh6View {
    pub address: Ipv6Addr,
    /// The port a link-local neighbour is on (one address, one neighbour
    /// per link); `None` for any other address.
    pub port: Option<u16>,
    /// The MAC address, when known.
    pub mac: Option<[u8; 6]>,
    /// `incomplete`, `reachable`, `stale` or `failed` (as IPv4's).
    pub state: &'static str,
    pub is_static: bool,
}

/// The neighbour states, in the order they are counted.
pub const NEIGH_STATES: [&str; 4] = ["incomplete", "reachable", "stale", "failed"];

/// The connection tables of stateful filters (shared by every such hook).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConntrackView {
    /// Whether any hook tracks connections.
    pub tracking: bool,
    /// Counters by name (`entries`, `capacity`, `full`, ...).
    pub counters: Vec<(String, u64)>,
}

/// Everything the main lcore publishes.
#[derive(Clone, Debug, Default)]
pub struct ControlView {
    /// Set by [`super::state::Ops::publish`]: 1 for the first view.
    pub seq: u64,
    /// When it was built (`None` for the empty view before the first).
    pub built: Option<Instant>,
    /// The IPv4 table's routes by origin (`fib::ORIGINS`' order): always
    /// current.
    pub route_counts: Vec<(&'static str, u64)>,
    /// The IPv4 table, route by route: rebuilt only when a reader asked
    /// for it ([`super::state::Ops::routes_view`]) or a ctl change was
    /// made, and shared between views meanwhile (a full table is a
    /// million routes); see `routes_behind`.
    pub routes: Arc<[RouteView]>,
    pub neighbours: Vec<NeighView>,
    /// The IPv6 table's routes by origin (empty without IPv6).
    pub route6_counts: Vec<(&'static str, u64)>,
    /// The IPv6 table (empty without IPv6), built as `routes`.
    pub routes6: Arc<[Route6View]>,
    /// Whether a table changed since `routes` or `routes6` was built.
    pub routes_behind: bool,
    pub neighbours6: Vec<Neigh6View>,
    pub hooks: Vec<HookReport>,
    /// What the control plane did (ARP, ICMP, neighbour events).
    pub control: Vec<(&'static str, u64)>,
    /// The FPM session's state and counters (`fpm::FpmStats::fields`;
    /// empty without `--fpm`).
    pub fpm: Vec<(&'static str, u64)>,
}

impl ControlView {
    /// How many neighbours are in each of [`NEIGH_STATES`].
    pub fn neigh_states(&self) -> [u64; NEIGH_STATES.len()] {
        let mut n = [0; NEIGH_STATES.len()];
        for e in &self.neighbours {
            if let Some(i) = NEIGH_STATES.iter().position(|s| *s == e.state) {
                n[i] += 1;
            }
        }
        n
    }

    /// How many IPv6 neighbours are in each of [`NEIGH_STATES`].
    pub fn neigh6_states(&self) -> [u64; NEIGH_STATES.len()] {
        let mut n = [0; NEIGH_STATES.len()];
        for e in &self.neighbours6 {
            if let Some(i) = NEIGH_STATES.iter().position(|s| *s == e.state) {
                n[i] += 1;
            }
        }
        n
    }

    /// The connection tables, as the first hook tracking connections counts
    /// them (every stateful filter shares the same tables), without the
    /// `ct_` prefix of the hooks' own counters.
    pub fn conntrack(&self) -> ConntrackView {
        let Some(h) = self
            .hooks
            .iter()
            .find(|h| h.stats.contains_key("ct_entries"))
        else {
            return ConntrackView::default();
        };
        let mut counters: Vec<(String, u64)> = h
            .stats
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("ct_").map(|k| (k.to_string(), *v)))
            .filter(|(k, _)| !is_per_hook(k))
            .collect();
        // Per-hook packet verdicts of connection tracking, summed over hooks.
        for k in PER_HOOK {
            let sum = self.hooks.iter().filter_map(|h| h.stats.get(k)).sum();
            counters.push((k.trim_start_matches("ct_").to_string(), sum));
        }
        ConntrackView {
            tracking: true,
            counters,
        }
    }
}

/// Conntrack counters each hook keeps for its own packets.
const PER_HOOK: [&str; 6] = [
    "ct_full_policy",
    "ct_new",
    "ct_established",
    "ct_related",
    "ct_untracked",
    "ct_invalid_dropped",
];

fn is_per_hook(k: &str) -> bool {
    PER_HOOK.iter().any(|p| p.trim_start_matches("ct_") == k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn hook(stats: &[(&'static str, u64)]) -> HookReport {
        HookReport {
            point: "ingress",
            port: 0,
            name: "fw".into(),
            kind: "filter".into(),
            priority: 0,
            counts: hooks::HookStats::default(),
            stats: stats.iter().copied().collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn conntrack_takes_shared_tables_once_and_sums_verdicts() {
        let v = ControlView {
            hooks: vec![
                hook(&[("ct_entries", 5), ("ct_refused_full", 2), ("ct_new", 3)]),
                hook(&[("ct_entries", 5), ("ct_refused_full", 2), ("ct_new", 4)]),
            ],
            ..Default::default()
        };
        let ct = v.conntrack();
        assert!(ct.tracking);
        let get = |k: &str| ct.counters.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        assert_eq!(get("entries"), Some(5));
        assert_eq!(get("refused_full"), Some(2));
        assert_eq!(get("new"), Some(7));
        assert!(!ControlView::default().conntrack().tracking);
    }

    #[test]
    fn neighbour_states_are_counted() {
        let n = |state| NeighView {
            address: Ipv4Addr::LOCALHOST,
            mac: None,
            state,
            is_static: false,
        };
        let v = ControlView {
            neighbours: vec![n("reachable"), n("reachable"), n("failed")],
            ..Default::default()
        };
        assert_eq!(v.neigh_states(), [0, 2, 0, 1]);
    }
}
