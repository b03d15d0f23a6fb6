//! Step: the IPv6 tables, when the config has IPv6. The config's IPv6
//! addresses and routes are loaded into the IPv6 FIB at start, but the
//! datapath does not forward IPv6 in this build yet: it still drops IPv6
//! frames as `unsupported_protocol`, and one line at start says so.

use super::Setup;
use crate::config::RouterConfig;
use crate::dpdk::lpm6::table_bytes;
use crate::dpdk::{Lpm6Writer, Qsbr};
use crate::fib::NEIGH_BY_DST;
use crate::fib6::{fib6_entries, table_sizes, Fib6};
use crate::lifecycle::RunError;
use crate::neigh::NeighWriter;
use std::sync::Arc;

/// The IPv6 FIB and its writer (for the route changes to come).
pub(super) struct Ipv6Tables {
    pub fib: Arc<Fib6>,
    pub _writer: Lpm6Writer,
    /// Prefixes installed (the default route included).
    pub prefixes: usize,
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
    let entries = fib6_entries(cfg, s.port_ids, &port_macs, |gw, _| {
        match neigh.insert_gateway6(gw) {
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
    let (rules, tbl8s) = table_sizes(&entries);
    let (fib, writer) =
        Fib6::create("fib6", &entries, qsbr.clone(), s.eal.socket_id()).map_err(|e| {
            RunError::Usage(format!(
                "{}: the IPv6 routes cannot be loaded ({e}); the IPv6 FIB takes two tables of \
                 {} MiB of DPDK memory: give the EAL more (-m, or more hugepages), or remove \
                 the IPv6 items from the config",
                cfg.path.display(),
                table_bytes(rules, tbl8s) >> 20
            ))
        })?;
    Ok(Some(Ipv6Tables {
        fib: Arc::new(fib),
        _writer: writer,
        prefixes: entries.len(),
    }))
}

/// The line printed at start when the config has IPv6: what was loaded,
/// and that IPv6 is not forwarded yet.
pub(super) fn notice(cfg: &RouterConfig, t: &Ipv6Tables) -> String {
    let addresses: usize = cfg.ports.iter().map(|p| p.ipv6.len() + 1).sum();
    format!(
        "fastpath: IPv6: {addresses} addresses (link-local included), {} routes and {} static \
         neighbours loaded from the config ({} prefixes, {} next hops in the IPv6 FIB); IPv6 \
         forwarding is not enabled in this build yet: IPv6 frames are dropped and counted as \
         unsupported_protocol, and neighbour discovery does not answer",
        cfg.routes6.len(),
        cfg.neighbours6.len(),
        t.prefixes,
        t.fib.hop_count()
    )
}
