//! Start-up, run and shutdown of the forwarding appliance: EAL, pool, ports,
//! worker lcores, the statistics loop on the main lcore, and the ordered
//! teardown that proves every mbuf came back.

use crate::cli::{AppArgs, Forward};
use crate::config::RouterConfig;
use crate::counters::LcoreCounters;
use crate::dpdk::port::{describe_ports, read_stats};
use crate::dpdk::{lcore, DpdkError, Eal, Mempool, Port, PortConfig, PortStats, BURST_SIZE};
use crate::forward;
use crate::ops::live::Live;
use crate::ops::sample::Sample;
use crate::ops::state::{Mode, Ops, PortName};
use crate::report::{MbufReport, Report};
use clap::Parser;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a run failed. Each maps to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The command line or the set-up it asks for is wrong (exit 2).
    #[error("{0}")]
    Usage(String),
    /// EAL could not start (exit 1).
    #[error("EAL initialisation failed: {0}.\n  Check the EAL options before `--` (DPDK printed its reason above), e.g. -l 0-1 --no-huge -m 512 --vdev net_null0")]
    Eal(DpdkError),
    /// A DPDK call failed (exit 1).
    #[error("{0}")]
    Dpdk(#[from] DpdkError),
    /// The run finished but mbufs did not come back (exit 3).
    #[error("{missing} mbufs were not returned to the pool at exit (leak)")]
    Leak { missing: u32, report: Box<Report> },
}

impl RunError {
    /// Process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Usage(_) => 2,
            RunError::Eal(_) | RunError::Dpdk(_) => 1,
            RunError::Leak { .. } => 3,
        }
    }
}

/// Mbufs per lcore cache, as in DPDK's examples.
pub(crate) const MEMPOOL_CACHE: u32 = 256;

/// Pool size that covers every RX and TX ring, a burst and a cache per lcore,
/// with headroom; rounded to 2^n - 1 (the ring-friendly size DPDK recommends).
pub(crate) fn default_pool_size(
    ports: usize,
    rxq: usize,
    txq: usize,
    args: &AppArgs,
    lcores: usize,
) -> u32 {
    let need = ports * rxq * args.rx_desc as usize
        + ports * txq * args.tx_desc as usize
        + ports * lcores * BURST_SIZE
        + lcores * MEMPOOL_CACHE as usize;
    let n = (need * 2).max(8192).next_power_of_two() - 1;
    n as u32
}

/// Run the appliance until Ctrl-C, SIGTERM or `--duration`; returns the report.
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
    let result = match &config {
        Some(cfg) => crate::router::setup::run(&eal, args, cfg, registry, stop, reload),
        None => run_with_eal(&eal, args, stop),
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
            std::process::exit(130);
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

fn run_with_eal(eal: &Eal, args: &AppArgs, stop: Arc<AtomicBool>) -> Result<Report, RunError> {
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
    let workers = lcore::workers();
    if workers.is_empty() {
        return Err(RunError::Usage(
            "no worker lcore: give EAL at least two lcores, e.g. -l 0-1 \
             (the first is the main lcore for control, the others poll queues)"
                .into(),
        ));
    }

    let rx_ports: BTreeSet<u16> = rules.iter().map(|r| r.rx).collect();
    let used: BTreeSet<u16> = rules.iter().flat_map(|r| [r.rx, r.tx]).collect();
    let pool_size = args.mbufs.unwrap_or_else(|| {
        default_pool_size(
            used.len(),
            args.rx_queues as usize,
            workers.len(),
            args,
            workers.len() + 1,
        )
    });
    let pool = Mempool::new("mbuf_pool", pool_size, MEMPOOL_CACHE, eal.socket_id())?;

    // Ports are dropped (closed) before the pool, whatever path leaves here.
    let mut ports: Vec<Port> = Vec::new();
    let outcome = configure_and_forward(
        args, &rules, &rx_ports, &used, &workers, &pool, &mut ports, stop,
    );
    let (duration, lcore_counts) = match outcome {
        Ok(v) => v,
        Err(e) => {
            drop(ports);
            let _ = pool.free();
            return Err(e);
        }
    };

    finish(eal, ports, pool, duration, &lcore_counts)
}

/// Teardown once every worker has joined: stop the ports, read the drivers'
/// counters, close them (releasing every mbuf the drivers still hold), then
/// check that the pool is whole, and build the report.
pub(crate) fn finish(
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

pub(crate) type LcoreCounts = Vec<(u32, Vec<crate::counters::PortCount>)>;

#[allow(clippy::too_many_arguments)]
fn configure_and_forward(
    args: &AppArgs,
    rules: &[Forward],
    rx_ports: &BTreeSet<u16>,
    used: &BTreeSet<u16>,
    workers: &[u32],
    pool: &Mempool,
    ports: &mut Vec<Port>,
    stop: Arc<AtomicBool>,
) -> Result<(Duration, LcoreCounts), RunError> {
    let mut rxq = BTreeMap::new();
    let mut txq = BTreeMap::new();
    // RX queues no worker polls (ports that only transmit); drained at shutdown.
    let mut unpolled = Vec::new();
    for &id in used {
        let mut port = Port::open(id)?;
        let cfg = PortConfig {
            rx_queues: if rx_ports.contains(&id) {
                args.rx_queues
            } else {
                1
            },
            tx_queues: workers.len() as u16,
            rx_desc: args.rx_desc,
            tx_desc: args.tx_desc,
            promiscuous: !args.no_promiscuous,
            // Forwarding keeps no per-flow state: the driver's own key will do.
            symmetric_rss: false,
        };
        let (rx, tx) = port.configure(&cfg, pool)?;
        port.start()?;
        log_port_up(&port, &cfg);
        if rx_ports.contains(&id) {
            rxq.insert(id, rx);
        } else {
            unpolled.extend(rx);
        }
        txq.insert(id, tx.into_iter().map(Some).collect::<Vec<_>>());
        ports.push(port);
    }

    let plans = forward::plan(rules, rxq, txq, workers);
    let max_port = used.iter().max().map(|p| *p as usize + 1).unwrap_or(0);
    let mut jobs = Vec::new();
    let mut counters = Vec::new();
    let handback = Arc::new(Mutex::new(unpolled));
    let started = Instant::now();
    let mut launch_err = None;
    for plan in plans {
        let c = Arc::new(LcoreCounters::new(plan.lcore, max_port));
        let streams: Vec<String> = plan
            .streams
            .iter()
            .map(|s| {
                format!(
                    "{}/{}->{}",
                    s.rx.port(),
                    s.rx.queue(),
                    plan.tx[s.tx_slot].port()
                )
            })
            .collect();
        eprintln!(
            "fastpath: lcore {} polls {}",
            plan.lcore,
            streams.join(", ")
        );
        let lcore_id = plan.lcore;
        let (cc, st, hb) = (c.clone(), stop.clone(), handback.clone());
        match lcore::launch(lcore_id, move || forward::run_worker(plan, cc, st, hb)) {
            Ok(job) => {
                jobs.push(job);
                counters.push(c);
            }
            Err(e) => {
                launch_err = Some(e);
                stop.store(true, Ordering::SeqCst);
                break;
            }
        }
    }
    if launch_err.is_none() {
        let ops = Arc::new(Ops::new(
            Mode::Forward,
            started,
            port_names(ports),
            counters.clone(),
            None,
        ));
        crate::ops::state::install(ops.clone());
        eprintln!(
            "fastpath: forwarding{}; Ctrl-C to stop",
            match args.duration {
                Some(d) => format!(" for {d} s"),
                None => String::new(),
            }
        );
        control_loop(args, &stop, started, &ops);
    }
    stop.store(true, Ordering::SeqCst);
    let failed = join_workers(jobs);
    // Readers stop before the ports do.
    crate::ops::state::retire();
    let duration = started.elapsed();
    // Every worker has stopped: drain what devices still hold for us, at most
    // as many packets per queue as mbufs are out (more cannot be ours).
    let main = Arc::new(LcoreCounters::new(lcore::main_lcore(), max_port));
    let mut queues = std::mem::take(&mut *crate::sync::lock(&handback));
    let drained = forward::drain(&mut queues, pool.in_use() as u64, &main);
    drop(queues);
    if drained > 0 {
        eprintln!("fastpath: drained {drained} packets from RX queues at shutdown");
    }
    counters.push(main);
    if let Some(e) = launch_err {
        return Err(e.into());
    }
    if !failed.is_empty() {
        return Err(RunError::Dpdk(DpdkError {
            what: format!("worker lcore(s) {failed:?}"),
            code: libc::EIO,
            reason: "the forwarding loop failed (see above)".into(),
        }));
    }
    Ok((
        duration,
        counters.iter().map(|c| (c.lcore, c.snapshot())).collect(),
    ))
}

/// Wait for every worker; the lcores whose job failed.
pub(crate) fn join_workers(jobs: Vec<lcore::LcoreJob>) -> Vec<u32> {
    let mut failed = Vec::new();
    for job in jobs {
        let lcore = job.lcore();
        if job.join() != 0 {
            failed.push(lcore);
        }
    }
    failed
}

/// One line per port brought up: name, MAC, link, queues and features.
pub(crate) fn log_port_up(port: &Port, cfg: &PortConfig) {
    let id = port.id();
    let mac = port.mac();
    let link = port.link();
    eprintln!(
        "fastpath: port {id} {} mac {} link {} {} Mb/s, {} RX queue(s){}, {} TX queue(s){}",
        port.name(),
        mac.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
        if link.up { "up" } else { "down" },
        link.speed_mbps,
        cfg.rx_queues,
        port.rx_spread().describe(),
        cfg.tx_queues,
        if port.fast_free() { " (fast free)" } else { "" },
    );
}

/// The ports as the operations plane names them.
pub(crate) fn port_names(ports: &[Port]) -> Vec<PortName> {
    ports
        .iter()
        .map(|p| PortName {
            id: p.id(),
            name: p.name().to_string(),
        })
        .collect()
}

/// The main lcore: wait for a stop signal or the end of `--duration`, with
/// the live view.
fn control_loop(args: &AppArgs, stop: &AtomicBool, started: Instant, ops: &Ops) {
    main_lcore_loop(args, stop, started, ops, Duration::from_millis(20), || {
        false
    });
}

/// The main lcore's loop in either mode: run `work` (the control plane; true
/// when it did something) until a stop signal or the end of `--duration`,
/// draw the live view (see [`AppArgs::live_view`]), and nap `idle` when idle.
pub(crate) fn main_lcore_loop(
    args: &AppArgs,
    stop: &AtomicBool,
    started: Instant,
    ops: &Ops,
    idle: Duration,
    mut work: impl FnMut() -> bool,
) {
    use std::io::IsTerminal;
    let deadline = args.duration.map(|d| started + Duration::from_secs_f64(d));
    let mut live = args
        .live_view(std::io::stdout().is_terminal())
        .map(|(style, secs)| Live::new(style, Duration::from_secs_f64(secs), Instant::now()));
    if let Some(l) = live.as_mut() {
        l.start(Sample::take(ops));
    }
    while !stop.load(Ordering::Relaxed) {
        let busy = work();
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        if let Some(l) = live.as_mut().filter(|l| l.due(now)) {
            l.print(started.elapsed(), Sample::take(ops));
        }
        if !busy {
            let nap = match deadline {
                Some(d) => idle.min(d.saturating_duration_since(now)),
                None => idle,
            };
            std::thread::sleep(nap);
        }
    }
}
