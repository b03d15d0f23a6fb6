//! A run from the command line: the options checked, the config file read,
//! signals and the metrics server set up, EAL started, then either mode:
//! the router (`--config`, in `router::setup`) or pairwise forwarding
//! (here). The life both modes share is `lifecycle`'s; this is the one
//! place that turns the command line into their options.

use crate::cli::{AppArgs, Forward};
use crate::config::RouterConfig;
use crate::counters::LcoreCounters;
use crate::dpdk::port::describe_ports;
use crate::dpdk::{lcore, Eal, Mempool, Port, PortConfig, RxQueue, TxQueue};
use crate::forward;
use crate::lifecycle::input_end::{report_end, verdict};
pub use crate::lifecycle::RunError;
use crate::lifecycle::{
    create_pool, default_pool_size, drain_rx, finish, join_workers, main_lcore_loop, port_names,
    run_length, snapshot, start_port, worker_failure, InputEnd, InputSources, LcoreCounts,
    MainLoopOptions,
};
use crate::ops::state::{Mode, Ops};
use crate::report::Report;
use crate::router::{CaptureOptions, RouterOptions};
use clap::Parser;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Run the appliance until Ctrl-C, SIGTERM, `--duration` or (with
/// `--until-input-done`) the end of its input; returns the report.
/// `argv` is the whole command line; `args` the app options after `--`, parsed
/// before EAL starts so that a typo fails fast and without side effects.
pub fn run(argv: &[String], args: &AppArgs) -> Result<Report, RunError> {
    run_with_registry(argv, args, &crate::builtin_hooks::registry())
}

/// [`run`] with the hook kinds of `registry` (the built-in kinds plus any a
/// program registered: a hook written outside the pipeline is added by
/// registering its kind here and naming it in the config).
pub fn run_with_registry(
    argv: &[String],
    args: &AppArgs,
    registry: &hooks::Registry,
) -> Result<Report, RunError> {
    args.validate().map_err(RunError::Usage)?;
    // A bad config file fails before EAL starts.
    let config = match &args.config {
        Some(path) => Some(RouterConfig::load(path).map_err(|e| RunError::Usage(e.to_string()))?),
        None => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    // SIGHUP reloads a router config (routes, neighbours, hooks).
    let reload = config.as_ref().map(|_| Arc::new(AtomicBool::new(false)));
    install_signal_handler(stop.clone(), reload.clone());

    // A taken --metrics port fails before EAL starts.
    let metrics = match args.metrics {
        Some(addr) => Some(crate::ops::http::bind(addr).map_err(RunError::Usage)?),
        None => None,
    };
    check_vdev_drivers(argv)?;
    let (eal, rest) = Eal::init(argv).map_err(RunError::Eal)?;
    if let Err(e) = crate::dpdk::pmdinfo::check_mbuf_pool_ops() {
        drop(eal);
        return Err(RunError::Usage(e));
    }
    // What EAL left over must be exactly the app options we parsed: anything
    // else is an argument EAL did not take, e.g. an app option before `--`.
    let left = AppArgs::try_parse_from(&rest).ok();
    if left.as_ref() != Some(args) {
        drop(eal);
        // Name only what EAL left before `--`: the app's own options follow.
        let app_count = argv
            .iter()
            .position(|a| a == "--")
            .map_or(0, |i| argv.len() - i - 1);
        let end = rest.len().saturating_sub(app_count).max(1.min(rest.len()));
        return Err(RunError::Usage(format!(
            "EAL did not take {:?}: EAL options go before `--`, fastpath's after it \
             (fastpath [EAL options] -- [options])",
            &rest[1.min(rest.len())..end]
        )));
    }
    if let Err(e) = crate::ops::commands::register_all() {
        eprintln!("fastpath: warning: telemetry commands not available: {e}");
    }
    let server = match metrics.map(start_metrics).transpose() {
        Ok(s) => s,
        Err(e) => {
            drop(eal);
            return Err(e);
        }
    };
    let main_loop = main_loop_options(args, argv);
    let result = match &config {
        Some(cfg) => crate::router::setup::run(
            &eal,
            &router_options(args, main_loop),
            cfg,
            registry,
            stop,
            reload,
        ),
        None => run_with_eal(&eal, args, &main_loop, stop),
    };
    crate::ops::state::retire();
    if let Some(s) = server {
        s.stop();
    }
    drop(eal);
    result
}

/// Serve `--metrics` on a thread pinned to the main lcore's CPU.
fn start_metrics(
    listener: std::net::TcpListener,
) -> Result<crate::ops::http::MetricsServer, RunError> {
    let cpu = lcore::cpu_of(lcore::main_lcore());
    let server = crate::ops::http::MetricsServer::start(listener, cpu)
        .map_err(|e| RunError::Usage(format!("--metrics: cannot start the metrics thread: {e}")))?;
    eprintln!(
        "fastpath: metrics at http://{}/metrics{}",
        server.addr,
        cpu.map(|c| format!(" (thread on CPU {c}, the main lcore's)"))
            .unwrap_or_default()
    );
    Ok(server)
}

/// Every `--vdev` among the EAL arguments has a driver in this build: a
/// missing one is named before EAL starts (EAL itself only says that it
/// could not probe devices).
fn check_vdev_drivers(argv: &[String]) -> Result<(), RunError> {
    use crate::dpdk::pmdinfo;
    let (eal_args, _) = crate::cli::split_args(argv.to_vec());
    let vdevs = crate::doctor::eal_args::parse(&eal_args[1..]).vdevs;
    if vdevs.is_empty() {
        return Ok(());
    }
    pmdinfo::check_vdev_drivers(&pmdinfo::catalogue(), &vdevs).map_err(RunError::Usage)
}

/// SIGINT, SIGTERM and SIGHUP stop fastpath cleanly, and a second one while
/// stopping ends the process at once (exit 130). With `reload`, SIGHUP
/// instead sets that flag (the router re-reads its config file).
fn install_signal_handler(stop: Arc<AtomicBool>, reload: Option<Arc<AtomicBool>>) {
    let on_int = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if on_int.swap(true, Ordering::SeqCst) {
            eprintln!("fastpath: second signal, exiting without cleanup");
            // _exit, not exit: exit flushes every stdio stream first, and
            // waits for ever on one a stuck thread holds (a worker blocked
            // writing a pcap to a full pipe), which is when this is needed.
            signal_hook::low_level::exit(130);
        }
    });
    use signal_hook::consts::{SIGHUP, SIGTERM};
    use signal_hook::flag;
    let mut stopping = vec![SIGTERM];
    match reload {
        Some(r) => {
            let _ = flag::register(SIGHUP, r);
        }
        None => stopping.push(SIGHUP),
    }
    for sig in stopping {
        // Handlers run in registration order: the first exits when a stop
        // is already under way, the second starts one.
        let _ = flag::register_conditional_shutdown(sig, 130, stop.clone());
        let _ = flag::register(sig, stop.clone());
    }
}

/// The main lcore's run length and live view, from the command line
/// (`argv`: the whole of it, for what each `--vdev` receives).
fn main_loop_options(args: &AppArgs, argv: &[String]) -> MainLoopOptions {
    use std::io::IsTerminal;
    let until_input_done = args.until_input_done.then(|| {
        let (eal_args, _) = crate::cli::split_args(argv.to_vec());
        let vdevs = crate::doctor::eal_args::parse(&eal_args[1..]).vdev_specs;
        InputSources::from_vdevs(&vdevs)
    });
    MainLoopOptions {
        duration: args.duration,
        live_view: args.live_view(std::io::stdout().is_terminal()),
        until_input_done,
    }
}

/// The router's options, from the command line and the main lcore's.
pub fn router_options(args: &AppArgs, main_loop: MainLoopOptions) -> RouterOptions {
    RouterOptions {
        rx_desc: args.rx_desc,
        tx_desc: args.tx_desc,
        mbufs: args.mbufs,
        neigh_capacity: args.neigh_capacity,
        fib_routes: args.fib_routes,
        fib6_routes: args.fib6_routes,
        neigh_reachable: Duration::from_secs_f64(args.neigh_reachable),
        stage_cycles: args.stage_cycles,
        capture: CaptureOptions {
            drops: args.capture_drops.clone(),
            max_bytes: args.capture_max_bytes,
            rate: args.capture_rate,
            queue: args.capture_queue,
        },
        main_loop,
        fpm: args.fpm.map(|listen| crate::router::FpmOptions {
            listen,
            hold: Duration::from_secs_f64(args.fpm_hold),
        }),
    }
}

/// Forwarding mode (no `--config`): the `--forward` rules (or ports paired
/// 0<->1, 2<->3, ...) over every worker lcore, until a stop signal,
/// `--duration` or the end of the input.
fn run_with_eal(
    eal: &Eal,
    args: &AppArgs,
    main_loop: &MainLoopOptions,
    stop: Arc<AtomicBool>,
) -> Result<Report, RunError> {
    let rules = forward_rules(args)?;
    // The ports a worker polls: the RX side of every rule.
    let input = match &main_loop.until_input_done {
        Some(sources) => {
            let rx: BTreeSet<u16> = rules.iter().map(|r| r.rx).collect();
            Some(sources.plan_ports(rx.into_iter().map(|p| (p, args.rx_queues)))?)
        }
        None => None,
    };
    let workers = lcore::workers();
    if workers.is_empty() {
        return Err(RunError::Usage(
            "no worker lcore: give EAL at least two lcores, e.g. -l 0-1 \
             (the first is the main lcore for control, the others poll queues)"
                .into(),
        ));
    }
    let used: BTreeSet<u16> = rules.iter().flat_map(|r| [r.rx, r.tx]).collect();
    let pool_size = args.mbufs.unwrap_or_else(|| {
        default_pool_size(
            used.len(),
            args.rx_queues as usize,
            workers.len(),
            args.rx_desc,
            args.tx_desc,
            workers.len() + 1,
        )
    });
    let pool = create_pool(eal, pool_size)?;
    let plan = Forwarding {
        args,
        main_loop,
        input: input.as_ref(),
        rules: &rules,
        used: &used,
        workers: &workers,
        pool: &pool,
    };
    // Ports are dropped (closed) before the pool, whatever path leaves here.
    let mut ports: Vec<Port> = Vec::new();
    let (duration, lcore_counts, unfinished) = match configure_and_forward(&plan, &mut ports, stop)
    {
        Ok(v) => v,
        Err(e) => {
            drop(ports);
            let _ = pool.free();
            return Err(e);
        }
    };
    verdict(
        finish(eal, ports, pool, duration, &lcore_counts),
        unfinished,
    )
}

/// The `--forward` rules (or the default pairs), checked against the ports
/// DPDK has.
fn forward_rules(args: &AppArgs) -> Result<Vec<Forward>, RunError> {
    let port_count = Port::count();
    let rules: Vec<Forward> = if args.forward.is_empty() {
        forward::default_rules(port_count).map_err(RunError::Usage)?
    } else {
        args.forward.clone()
    };
    forward::check_rules(&rules).map_err(RunError::Usage)?;
    for r in &rules {
        for p in [r.rx, r.tx] {
            if p >= port_count {
                return Err(RunError::Usage(format!(
                    "--forward {}:{}: port {p} does not exist; {}",
                    r.rx,
                    r.tx,
                    describe_ports()
                )));
            }
        }
    }
    Ok(rules)
}

/// What a forwarding run reads.
struct Forwarding<'a> {
    args: &'a AppArgs,
    main_loop: &'a MainLoopOptions,
    /// With `--until-input-done`: the frames each polled port will read.
    input: Option<&'a InputEnd>,
    rules: &'a [Forward],
    /// Every port a rule names.
    used: &'a BTreeSet<u16>,
    workers: &'a [u32],
    pool: &'a Mempool,
}

impl Forwarding<'_> {
    /// One more than the largest port id in use.
    fn max_port(&self) -> usize {
        self.used.iter().max().map(|p| *p as usize + 1).unwrap_or(0)
    }
}

/// The ports' queues once up: RX of the receiving ports, TX of every port
/// (one per worker), and the RX queues no worker polls (ports that only
/// transmit; drained at shutdown).
struct Queues {
    rx: BTreeMap<u16, Vec<RxQueue>>,
    tx: BTreeMap<u16, Vec<Option<TxQueue>>>,
    unpolled: Vec<RxQueue>,
}

/// The launched workers.
struct Launched {
    jobs: Vec<lcore::LcoreJob>,
    counters: Vec<Arc<LcoreCounters>>,
    /// Why a worker could not be launched (the others were told to stop).
    launch_err: Option<crate::dpdk::DpdkError>,
}

/// Bring the ports up, launch the workers, serve until stopped, drain;
/// with the counters, what the input's end still waited for when
/// `--duration` ended (see [`report_end`]).
fn configure_and_forward(
    plan: &Forwarding,
    ports: &mut Vec<Port>,
    stop: Arc<AtomicBool>,
) -> Result<(Duration, LcoreCounts, Option<String>), RunError> {
    let queues = start_ports(plan, ports)?;
    let returned = Arc::new(Mutex::new(queues.unpolled));
    let started = Instant::now();
    let mut launched = launch(plan, queues.rx, queues.tx, &stop, &returned);
    let mut unfinished = None;
    if launched.launch_err.is_none() {
        let ops = Arc::new(Ops::new(
            Mode::Forward,
            started,
            port_names(ports),
            launched.counters.clone(),
            None,
        ));
        crate::ops::state::install(ops.clone());
        eprintln!(
            "fastpath: forwarding{}; Ctrl-C to stop",
            run_length(plan.main_loop, plan.input)
        );
        let idle = Duration::from_millis(20);
        let ended = main_lcore_loop(
            plan.main_loop,
            &stop,
            started,
            &ops,
            idle,
            plan.input,
            || false,
        );
        unfinished = report_end(&ended, plan.input, &ops, started);
    }
    stop.store(true, Ordering::SeqCst);
    let failed = join_workers(launched.jobs);
    // Readers stop before the ports do.
    crate::ops::state::retire();
    let duration = started.elapsed();
    // Every worker has stopped: drain what devices still hold for us, at most
    // as many packets per queue as mbufs are out (more cannot be ours).
    let main = Arc::new(LcoreCounters::new(lcore::main_lcore(), plan.max_port()));
    let mut queues = std::mem::take(&mut *crate::sync::lock(&returned));
    let drained = drain_rx(&mut queues, plan.pool.in_use() as u64, &main);
    drop(queues);
    if drained > 0 {
        eprintln!("fastpath: drained {drained} packets from RX queues at shutdown");
    }
    launched.counters.push(main);
    if let Some(e) = launched.launch_err {
        return Err(e.into());
    }
    worker_failure(&failed, "forwarding")?;
    Ok((duration, snapshot(&launched.counters), unfinished))
}

/// Open, configure and start every port a rule names.
fn start_ports(plan: &Forwarding, ports: &mut Vec<Port>) -> Result<Queues, RunError> {
    let args = plan.args;
    let rx_ports: BTreeSet<u16> = plan.rules.iter().map(|r| r.rx).collect();
    let mut q = Queues {
        rx: BTreeMap::new(),
        tx: BTreeMap::new(),
        unpolled: Vec::new(),
    };
    for &id in plan.used {
        let mut port = Port::open(id)?;
        let cfg = PortConfig {
            rx_queues: if rx_ports.contains(&id) {
                args.rx_queues
            } else {
                1
            },
            tx_queues: plan.workers.len() as u16,
            rx_desc: args.rx_desc,
            tx_desc: args.tx_desc,
            promiscuous: !args.no_promiscuous,
            // Forwarding keeps no per-flow state: the driver's own key will do.
            symmetric_rss: false,
        };
        let (rx, tx) = port.configure(&cfg, plan.pool)?;
        start_port(&mut port, &cfg)?;
        if rx_ports.contains(&id) {
            q.rx.insert(id, rx);
        } else {
            q.unpolled.extend(rx);
        }
        q.tx.insert(id, tx.into_iter().map(Some).collect::<Vec<_>>());
        ports.push(port);
    }
    Ok(q)
}

/// Launch a forwarding worker per lcore of the plan; a launch that fails
/// stops the ones before it.
fn launch(
    plan: &Forwarding,
    rxq: BTreeMap<u16, Vec<RxQueue>>,
    txq: BTreeMap<u16, Vec<Option<TxQueue>>>,
    stop: &Arc<AtomicBool>,
    returned: &Arc<Mutex<Vec<RxQueue>>>,
) -> Launched {
    let mut l = Launched {
        jobs: Vec::new(),
        counters: Vec::new(),
        launch_err: None,
    };
    for worker in forward::plan(plan.rules, rxq, txq, plan.workers) {
        let c = Arc::new(LcoreCounters::new(worker.lcore, plan.max_port()));
        let streams: Vec<String> = worker
            .streams
            .iter()
            .map(|s| {
                let tx = worker.tx[s.tx_slot].port();
                format!("{}/{}->{tx}", s.rx.port(), s.rx.queue())
            })
            .collect();
        eprintln!(
            "fastpath: lcore {} polls {}",
            worker.lcore,
            streams.join(", ")
        );
        let lcore_id = worker.lcore;
        let (cc, st, back) = (c.clone(), stop.clone(), returned.clone());
        match lcore::launch(lcore_id, move || forward::run_worker(worker, cc, st, back)) {
            Ok(job) => {
                l.jobs.push(job);
                l.counters.push(c);
            }
            Err(e) => {
                l.launch_err = Some(e);
                stop.store(true, Ordering::SeqCst);
                break;
            }
        }
    }
    l
}
