//! Step: the control plane's tables, before any worker reads them: the RCU
//! the workers report their quiescent states to (the one reclamation domain
//! of the FIB, the neighbour table and the hook sets), static neighbours
//! of both families,
//! and the routes (FIB over DPDK's LPM).

use super::Setup;
use crate::datapath::budget::ArpAwaited;
use crate::dpdk::{Lpm, Qsbr};
use crate::fib::{fib_entries, table_sizes, Fib, FibWriter, NEIGH_BY_DST};
use crate::lifecycle::RunError;
use crate::neigh::{EthHeader, NeighTable, NeighWriter, ETHERTYPE_IPV6};
use hooks::wire::ethernet::ethertype;
use std::sync::Arc;

/// What the workers read.
pub(super) struct Tables {
    pub neigh: Arc<NeighTable>,
    pub awaited: Arc<ArpAwaited>,
    pub fib: Arc<Fib>,
    pub qsbr: Arc<Qsbr>,
}

/// What the control plane writes them through.
pub(super) struct Writers {
    pub fib: FibWriter,
    pub neigh: NeighWriter,
}

/// The neighbour table with the config's static neighbours and every
/// gateway held for resolution, and the FIB with the config's routes.
/// `macs` is each port's MAC by port id.
pub(super) fn build(s: &Setup, macs: &[[u8; 6]]) -> Result<(Tables, Writers), RunError> {
    let cfg = s.cfg;
    // Workers report quiescent states to it, once per poll loop; the FIB's
    // writer reuses what it unpublished, the LPM its tbl8 groups, the
    // neighbour table its reclaimed slots, and the hook publisher frees the
    // hook sets it replaced, after them.
    let qsbr = Qsbr::new(s.workers() as u32)?;
    let (neigh, mut writer) = NeighTable::new(s.opts.neigh_capacity as usize, qsbr.clone());
    for n in &cfg.neighbours {
        let hdr = EthHeader {
            dst: n.mac,
            src: macs[usize::from(s.port_ids[n.port])],
            ethertype: ethertype::IPV4,
        };
        writer
            .insert_static(n.address, &hdr)
            .map_err(|e| RunError::Usage(cfg.error_at(n.line, e.to_string()).to_string()))?;
    }
    // The IPv6 ones share the table (and its capacity).
    for n in &cfg.neighbours6 {
        let hdr = EthHeader {
            dst: n.mac,
            src: macs[usize::from(s.port_ids[n.port])],
            ethertype: ETHERTYPE_IPV6,
        };
        let port = s.port_ids[n.port];
        writer
            .insert_static6(crate::neigh::scope6(n.address, port), &hdr)
            .map_err(|e| RunError::Usage(cfg.error_at(n.line, e.to_string()).to_string()))?;
    }
    let mut neigh_err = None;
    let entries = fib_entries(cfg, s.port_ids, |gw| match writer.insert_gateway(gw) {
        Ok(i) => i as u32,
        Err(e) => {
            neigh_err.get_or_insert(e);
            NEIGH_BY_DST
        }
    });
    if let Some(e) = neigh_err {
        return Err(RunError::Usage(format!("{}: {e}", cfg.path.display())));
    }
    // Room for routes added at run time (`fastpath ctl`, reloads, FPM).
    let (rules, tbl8s) = table_sizes(&entries, s.opts.fib_routes);
    let lpm = Lpm::new("fib", rules, tbl8s, s.eal.socket_id())?;
    let (fib, fib_writer) = FibWriter::new(lpm, qsbr.clone(), &entries).map_err(|e| {
        RunError::Usage(format!(
            "{}: the routes do not fit the LPM table ({e}); fewer routes longer than /24 \
             would help",
            cfg.path.display()
        ))
    })?;
    let tables = Tables {
        neigh,
        awaited: Arc::new(ArpAwaited::default()),
        fib,
        qsbr,
    };
    let writers = Writers {
        fib: fib_writer,
        neigh: writer,
    };
    Ok((tables, writers))
}
