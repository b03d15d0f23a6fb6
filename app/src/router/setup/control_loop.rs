//! Step: run. The main lcore is the control plane (ARP, ICMP, neighbours,
//! route changes), answers `fastpath ctl` and SIGHUP, and publishes what
//! the operations plane shows, until a stop signal or the end of the run.

use super::published::Published;
use super::tables::{Tables, Writers};
use super::workers::Workers;
use super::{Hooks, Setup, Signals};
use crate::capture::Tap;
use crate::counters::LcoreCounters;
use crate::ctl::server::CtlServer;
use crate::dpdk::{lcore, Eal, Port};
use crate::fib6::Fib6Writer;
use crate::lifecycle::input_end::report_end;
use crate::lifecycle::{main_lcore_loop, port_names, run_length, InputEnd};
use crate::ops::state::{Mode, Ops};
use crate::router::control::addr6::Port6;
use crate::router::control::changes::Running;
use crate::router::control::parts::{ControlParts, NeighParams, PortAddr};
use crate::router::control::ControlPlane;
use crate::router::ctl_requests::CtlRequests;
use crate::router::fpm_link::{Changed, FpmLink};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The main lcore: the control plane, its counters and its drop capture tap.
pub(super) struct MainLcore<'a> {
    pub control: ControlPlane<'a>,
    pub counters: Arc<LcoreCounters>,
    pub tap: Arc<Tap>,
    /// The FPM server and zebra's routes (`--fpm`).
    pub fpm: Option<FpmLink>,
}

impl<'a> MainLcore<'a> {
    /// The control plane over the tables' `writers`, with the workers'
    /// punt and inject rings (taken from `workers`).
    pub fn new(
        s: &Setup<'a>,
        writers: Writers,
        addrs: &[PortAddr],
        tables: &Tables,
        fib6: Option<Fib6Writer>,
        workers: &mut Workers,
    ) -> Self {
        let macs: Vec<[u8; 6]> = addrs.iter().map(|a| a.mac).collect();
        let counters = Arc::new(LcoreCounters::new(lcore::main_lcore(), s.max_port()));
        let mut control = ControlPlane::new(ControlParts {
            ports: addrs.to_vec(),
            fib: writers.fib,
            neigh: writers.neigh,
            params: NeighParams {
                reachable: s.opts.neigh_reachable,
                ..NeighParams::default()
            },
            punt: std::mem::take(&mut workers.punt_rx),
            inject: std::mem::take(&mut workers.inject_tx),
            pool: s.pool,
            counters: counters.clone(),
            awaited: tables.awaited.clone(),
            ports6: Port6::of_config(s.cfg, s.port_ids, &macs),
            fib6,
        });
        let tap = workers.hub.tap(lcore::main_lcore());
        control.set_capture(tap.clone());
        MainLcore {
            control,
            counters,
            tap,
            fpm: None,
        }
    }
}

/// Serve until a stop signal or the end of the run (with `input`, the end
/// of the input); what the input's end still waited for if `--duration`
/// ended first.
pub(super) fn run(
    s: &Setup,
    main: &mut MainLcore,
    hooks: &Hooks,
    workers: &Workers,
    ports: &[Port],
    signals: &Signals,
    input: Option<InputEnd>,
) -> Option<String> {
    let publisher = &hooks.publisher;
    let ops = Arc::new(Ops::new(
        Mode::Router,
        workers.started,
        port_names(ports),
        workers.counters.clone(),
        Some(main.counters.clone()),
    ));
    let fpm_stats = main.fpm.as_ref().map(FpmLink::stats);
    let mut published = Published::new(fpm_stats.clone());
    ops.publish(published.view(&main.control, &publisher.current()));
    crate::ops::state::install(ops.clone());
    eprintln!(
        "fastpath: routing{}; Ctrl-C to stop",
        run_length(&s.opts.main_loop, input.as_ref())
    );
    // `fastpath ctl` and SIGHUP: handled on this loop (ctl_requests).
    let mut requests = ctl_requests(s, hooks, workers, &main.counters, fpm_stats);
    let run = requests.run;
    let mut ctl = start_ctl(s.eal);
    let control = &mut main.control;
    let fpm = &mut main.fpm;
    // The control plane is not a poll-mode core: it naps while idle.
    let ended = main_lcore_loop(
        &s.opts.main_loop,
        &signals.stop,
        workers.started,
        &ops,
        Duration::from_micros(500),
        input.as_ref(),
        || {
            let mut changes = 0;
            if signals.reload.swap(false, Ordering::SeqCst) {
                requests.sighup(control);
                if let Some(f) = fpm.as_mut() {
                    f.after(&Changed::All, control, run);
                }
                changes += 1;
            }
            let asked = ctl.as_mut().map_or(0, |c| {
                c.serve(|r| {
                    changes += usize::from(r.changes_state());
                    let changed = Changed::of(&r);
                    let reply = requests.handle(control, r);
                    if let Some(f) = fpm.as_mut() {
                        f.after(&changed, control, run);
                    }
                    reply
                })
            });
            let zebra = fpm.as_mut().map_or(0, |f| f.poll(control, run));
            let handled = control.poll();
            published.publish_when_due(&ops, control, &publisher.current(), changes > 0);
            handled + asked + zebra > 0
        },
    );
    drop(ctl);
    report_end(&ended, input.as_ref(), &ops, workers.started)
}

/// What serves `fastpath ctl` and SIGHUP: the running config, the hooks,
/// every lcore's counters, drop capture and the FPM session's counters.
fn ctl_requests<'a>(
    s: &Setup<'a>,
    hooks: &'a Hooks,
    workers: &Workers,
    main_counters: &Arc<LcoreCounters>,
    fpm: Option<Arc<crate::fpm::FpmStats>>,
) -> CtlRequests<'a> {
    CtlRequests {
        run: Running {
            cfg: s.cfg,
            port_ids: s.port_ids,
        },
        hooks: &hooks.chains,
        publisher: &hooks.publisher,
        last: s.cfg.clone(),
        counters: workers
            .counters
            .iter()
            .chain([main_counters])
            .cloned()
            .collect(),
        capture: workers.capture.clone(),
        fpm,
    }
}

/// The control socket (`ctl`), in EAL's runtime folder; without it (say,
/// a read-only folder) fastpath runs on and says so.
fn start_ctl(eal: &Eal) -> Option<CtlServer> {
    let path = eal.runtime_dir().join(crate::ctl::SOCKET_NAME);
    match CtlServer::start(&path) {
        Ok(s) => {
            eprintln!("fastpath: control socket {}", path.display());
            Some(s)
        }
        Err(e) => {
            eprintln!(
                "fastpath: no control socket at {}: {e}; `fastpath ctl` cannot reach this run",
                path.display()
            );
            None
        }
    }
}
