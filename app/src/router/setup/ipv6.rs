//! Step: the IPv6 tables, when the config has IPv6: the IPv6 FIB with the
//! config's addresses and routes, each port's groups (all-nodes,
//! all-routers, each address's solicited-node group), and each port's
//! multicast filter programmed with the groups' MACs (or all-multicast
//! where the device has no filter), with one line per port saying which.

use super::Setup;
use crate::config::RouterConfig;
use crate::datapath::ip6_input::groups::{Groups6, PortGroups6};
use crate::dpdk::lpm6::table_bytes;
use crate::dpdk::{Port, Qsbr};
use crate::fib::NEIGH_BY_DST;
use crate::fib6::{fib6_entries, table_sizes, Fib6, Fib6Writer};
use crate::lifecycle::RunError;
use crate::neigh::NeighWriter;
use std::sync::Arc;

/// The IPv6 FIB and its writer (taken by the control plane, for route
/// changes), and the ports' groups.
pub(super) struct Ipv6Tables {
    pub fib: Arc<Fib6>,
    pub writer: Option<Fib6Writer>,
    /// Distinct next hops at start.
    pub hops: usize,
    /// Prefixes installed (the default route included).
    pub prefixes: usize,
    pub groups: Arc<Groups6>,
}

/// The IPv6 FIB with the config's routes, or `None` when the config has no
/// IPv6. `macs` is each port's MAC by port id (for link-local addresses
/// derived from them). Each route's gateway is held in the neighbour table
/// (`neigh`, the one both families share) for resolution, as IPv4's are.
pub(super) fn build(
    s: &Setup,
    macs: &[[u8; 6]],
    qsbr: &Arc<Qsbr>,
    neigh: &mut NeighWriter,
) -> Result<Option<Ipv6Tables>, RunError> {
    let cfg = s.cfg;
    if !cfg.has_ipv6() {
        return Ok(None);
    }
    let port_macs: Vec<[u8; 6]> = s.port_ids.iter().map(|&id| macs[usize::from(id)]).collect();
    let mut neigh_err = None;
    // A link-local gateway is a neighbour of its port's link alone.
    let entries = fib6_entries(cfg, s.port_ids, &port_macs, |gw, port| {
        match neigh.insert_gateway6(crate::neigh::scope6(gw, port)) {
            Ok(i) => i as u32,
            Err(e) => {
                neigh_err.get_or_insert(e);
                NEIGH_BY_DST
            }
        }
    });
    if let Some(e) = neigh_err {
        return Err(RunError::Usage(format!("{}: {e}", cfg.path.display())));
    }
    let routes = s.opts.fib6_routes;
    let (rules, tbl8s) = table_sizes(&entries, routes);
    let (fib, writer) = Fib6::create("fib6", &entries, routes, qsbr.clone(), s.eal.socket_id())
        .map_err(|e| {
            RunError::Usage(format!(
                "{}: the IPv6 routes cannot be loaded ({e}); the IPv6 FIB takes two tables of \
                 {} MiB of DPDK memory (with room for --fib6-routes {routes}): give the EAL \
                 more (-m, or more hugepages), a smaller --fib6-routes, or remove the IPv6 \
                 items from the config",
                cfg.path.display(),
                table_bytes(rules, tbl8s) >> 20
            ))
        })?;
    let mut groups = vec![PortGroups6::default(); s.max_port()];
    for (i, p) in cfg.ports.iter().enumerate() {
        let own = p.ipv6.iter().map(|a| a.address);
        let link_local = p.link_local.address(port_macs[i]);
        groups[usize::from(s.port_ids[i])] = PortGroups6::of(own.chain([link_local]));
    }
    Ok(Some(Ipv6Tables {
        fib,
        hops: writer.hop_count(),
        writer: Some(writer),
        prefixes: entries.len(),
        groups: Arc::new(Groups6::new(groups)),
    }))
}

/// Program each port's multicast filter with its groups' MACs, or turn
/// all-multicast on where the device has no filter; one line per port.
pub(super) fn program_multicast(ports: &mut [Port], groups: &Groups6) {
    for port in ports {
        let Some(g) = groups.port(port.id()) else {
            continue;
        };
        let how = match port.set_multicast_macs(&g.macs) {
            Ok(()) => format!("multicast filter set to its {} group MACs", g.macs.len()),
            Err(filter) => match port.enable_all_multicast() {
                Ok(()) => format!("no multicast filter ({}): all-multicast on", filter.reason),
                Err(all) => format!(
                    "neither a multicast filter ({}) nor all-multicast ({}): it receives \
                     what its device delivers",
                    filter.reason, all.reason
                ),
            },
        };
        eprintln!(
            "fastpath: port {} ({}) IPv6 groups: {how}",
            port.id(),
            port.name()
        );
    }
}

/// The line printed at start when the config has IPv6: what was loaded.
pub(super) fn notice(cfg: &RouterConfig, t: &Ipv6Tables) -> String {
    let addresses: usize = cfg.ports.iter().map(|p| p.ipv6.len() + 1).sum();
    format!(
        "fastpath: IPv6: {addresses} addresses (link-local included), {} routes and {} static \
         neighbours loaded from the config ({} prefixes, {} next hops in the IPv6 FIB); IPv6 is \
         forwarded, through the hooks as IPv4 is",
        cfg.routes6.len(),
        cfg.neighbours6.len(),
        t.prefixes,
        t.hops
    )
}
