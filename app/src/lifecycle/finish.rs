//! The teardown of a run, once every worker has joined.

use super::RunError;
use crate::dpdk::port::read_stats;
use crate::dpdk::{Eal, Mempool, Port, PortStats};
use crate::report::{MbufReport, Report};
use std::time::Duration;

/// Each lcore's id and its per-port counters, as the report takes them.
pub type LcoreCounts = Vec<(u32, Vec<crate::counters::PortCount>)>;

/// Stop the ports, read the drivers' counters, close them (releasing every
/// mbuf the drivers still hold), then check that the pool is whole, and
/// build the report.
pub fn finish(
    eal: &Eal,
    mut ports: Vec<Port>,
    pool: Mempool,
    duration: Duration,
    lcore_counts: &LcoreCounts,
) -> Result<Report, RunError> {
    let mut port_stats: Vec<(u16, String, PortStats)> = Vec::new();
    let mut first_err = None;
    for p in ports.iter_mut() {
        if let Err(e) = p.stop() {
            first_err.get_or_insert(e);
        }
        port_stats.push((p.id(), p.name().to_string(), read_stats(p.id())));
    }
    for p in ports.iter_mut() {
        if let Err(e) = p.close() {
            first_err.get_or_insert(e);
        }
    }
    drop(ports);
    let mbufs = MbufReport {
        pool: pool.name().to_string(),
        size: pool.size(),
        in_use_at_exit: pool.in_use(),
    };
    let freed = pool.free();
    let report = Report::build(
        eal.version(),
        duration.as_secs_f64(),
        lcore_counts,
        &port_stats,
        mbufs,
    );
    if let Some(e) = first_err {
        eprint!("{}", report.to_text());
        return Err(e.into());
    }
    if let Err(missing) = freed {
        return Err(RunError::Leak {
            missing,
            report: Box::new(report),
        });
    }
    Ok(report)
}
