//! Step: drain. Once every worker has stopped: what is punted or waiting in
//! the control plane, what sits in inject rings, what devices still hold;
//! then what the run's report adds to the ports' and pool's figures.

use super::control_loop::MainLcore;
use super::tables::Tables;
use super::workers::Workers;
use super::{Hooks, Setup};
use crate::capture::{DropSite, Stage, Summary};
use crate::counters::{LcoreCounters, STAGES};
use crate::dpdk::{MbufBurst, RingConsumer};
use crate::lifecycle::{drain_rx, join_workers, snapshot, worker_failure, LcoreCounts, RunError};
use crate::report::{HookReport, Report, StageDrops};
use hooks::DropReason;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the router adds to a run's report.
pub(super) struct Outcome {
    pub duration: Duration,
    pub counts: LcoreCounts,
    /// What the input's end still waited for when `--duration` ended
    /// (`--until-input-done`).
    pub unfinished: Option<String>,
    stages: BTreeMap<&'static str, f64>,
    stage_drops: StageDrops,
    neighbours: Vec<String>,
    events: BTreeMap<&'static str, u64>,
    hooks: Vec<HookReport>,
    captures: Vec<Summary>,
    ipv6: Option<crate::report::Ipv6Report>,
}

impl Outcome {
    pub fn add_to(&self, r: &mut Report) {
        r.stage_cycles_per_packet = self.stages.clone();
        r.stage_drops = self.stage_drops.clone();
        r.neighbours = self.neighbours.clone();
        r.control = self.events.clone();
        r.hooks = self.hooks.clone();
        r.captures = self.captures.clone();
        r.ipv6 = self.ipv6.clone();
    }
}

/// Stop and join the workers, drain what is left, and sum up the run.
pub(super) fn drain(
    s: &Setup,
    main: MainLcore,
    hooks: Hooks,
    workers: Workers,
    tables: Tables,
    stop: &AtomicBool,
) -> Result<Outcome, RunError> {
    stop.store(true, Ordering::SeqCst);
    let failed = join_workers(workers.jobs);
    // Readers stop before the ports do.
    crate::ops::state::retire();
    let duration = workers.started.elapsed();
    // Workers are gone: the hooks' counters are final, and dropping the
    // last snapshot frees whatever packets hooks still hold.
    let hook_reports = HookReport::of(&hooks.publisher.current());
    drop(hooks);

    let MainLcore {
        mut control,
        counters: main_counters,
        tap,
        fpm: _,
    } = main;
    let waiting = control.shutdown();
    let neighbours = control.describe_neighbours();
    let ipv6 = control.ipv6_report();
    let events: BTreeMap<&'static str, u64> = control.stats().fields().into_iter().collect();
    drop(control);
    let mut to_drain = std::mem::take(&mut *crate::sync::lock(&workers.to_drain));
    let mut injected = 0;
    for ring in to_drain.inject.drain(..) {
        injected += drop_injected(ring, &main_counters, &tap);
    }
    let drained = drain_rx(&mut to_drain.rx, s.pool.in_use() as u64, &main_counters);
    drop(to_drain);
    if waiting + injected + drained > 0 {
        eprintln!(
            "fastpath: at shutdown dropped {waiting} packets waiting in the control plane, \
             {injected} in inject rings, {drained} drained from RX queues"
        );
    }
    let mut counters = workers.counters;
    counters.push(main_counters);
    let captures = workers.capture.finish();
    drop(tables);
    if let Some(e) = workers.launch_err {
        return Err(e.into());
    }
    worker_failure(&failed, "routing")?;
    Ok(Outcome {
        duration,
        counts: snapshot(&counters),
        unfinished: None,
        stages: stage_cycles(&counters),
        stage_drops: crate::report::stage_drops(counters.iter().map(|c| &**c)),
        neighbours,
        events,
        hooks: hook_reports,
        captures,
        ipv6,
    })
}

/// Drop (counted, and captured) what the control plane injected and no
/// worker sent; how many.
fn drop_injected(mut ring: RingConsumer, main: &LcoreCounters, tap: &crate::capture::Tap) -> u64 {
    let mut n = 0;
    let mut burst = MbufBurst::new();
    while ring.dequeue_burst(&mut burst) != 0 {
        for m in burst.drain() {
            let (reason, out) = (DropReason::ShutdownDrain, m.meta().out_port);
            main.dropped(out, reason, 1);
            let at = DropSite::new(reason, Stage::Control, m.meta().in_port);
            tap.capture(m.data(), at.to_port(out));
            n += 1;
        }
    }
    n
}

/// Cycles per packet of each pipeline stage over every lcore (`--stage-cycles`);
/// empty when nothing was timed.
fn stage_cycles(counters: &[Arc<LcoreCounters>]) -> BTreeMap<&'static str, f64> {
    let mut cycles = [0u64; STAGES.len()];
    let mut timed = 0;
    for c in counters {
        let (cy, n) = c.stage_snapshot();
        for (a, b) in cycles.iter_mut().zip(cy) {
            *a += b;
        }
        timed += n;
    }
    if timed == 0 {
        return BTreeMap::new();
    }
    STAGES
        .iter()
        .zip(cycles)
        .map(|(n, c)| (*n, c as f64 / timed as f64))
        .collect()
}
