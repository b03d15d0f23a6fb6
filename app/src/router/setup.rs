//! Router mode (`--config FILE`): resolve the config's devices to DPDK ports,
//! bring the ports up, build the FIB and the neighbour table, place the RX
//! queues on worker lcores, run the control plane on the main lcore, and tear
//! everything down so every mbuf comes back.

use super::control::{ControlPlane, NeighParams, PortAddr};
use super::fib::{fib_entries, FibWriter};
use super::stages::Pipeline;
use super::txbuf::TxBuffer;
use super::worker::{Handback, RouterWorker};
use crate::cli::AppArgs;
use crate::config::{DeviceRef, RouterConfig};
use crate::counters::{LcoreCounters, STAGES};
use crate::dpdk::port::describe_ports;
use crate::dpdk::{
    lcore, mbuf_ring, DpdkError, Eal, Lpm, Mempool, Port, PortConfig, Qsbr, RxQueue, TxQueue,
};
use crate::forward;
use crate::hook_config::build_hook_set;
use crate::neigh::{EthHeader, NeighTable};
use crate::ops::state::{Mode, Ops};
use crate::ops::view::ControlView;
use crate::report::HookReport;
use crate::report::Report;
use crate::runtime::{
    default_pool_size, finish, join_workers, log_port_up, main_lcore_loop, RunError, MEMPOOL_CACHE,
};
use hooks::snapshot::Publisher;
use hooks::wire::ethernet::ethertype;
use hooks::{HookSet, Registry};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Slots in each punt and inject ring.
const RING_SIZE: u32 = 1024;

/// For a PCI device DPDK made no port of: what doctor sees wrong with it
/// (bound to a kernel driver, no driver in this build claims it, ...).
#[cold]
fn pci_hint(device: &str) -> String {
    use crate::doctor::{catalogue::Catalogue, checks::pci, host::Host};
    pci::why_no_port(&Host::new("/"), device, &Catalogue::load())
        .map(|h| format!("; {h}"))
        .unwrap_or_default()
}

/// The DPDK port id of each configured port, in config order. Two entries
/// naming the same DPDK port (by name and by id) are refused.
fn resolve_ports(cfg: &RouterConfig) -> Result<Vec<u16>, RunError> {
    let mut ids: Vec<u16> = Vec::new();
    for p in &cfg.ports {
        let id = match &p.device {
            DeviceRef::Name(name) => Port::find(name),
            DeviceRef::Id(id) => Port::is_valid(*id).then_some(*id),
        };
        let Some(id) = id else {
            return Err(RunError::Usage(
                cfg.error_at(
                    p.line,
                    format!(
                        "[[port]] field `device`: DPDK has no port {:?}; {} \
                         (add the device to the EAL options, e.g. --vdev or -a){}",
                        p.device.to_string(),
                        describe_ports(),
                        pci_hint(&p.device.to_string())
                    ),
                )
                .to_string(),
            ));
        };
        if let Some(i) = ids.iter().position(|x| *x == id) {
            let first = &cfg.ports[i];
            return Err(RunError::Usage(
                cfg.error_at(
                    p.line,
                    format!(
                        "[[port]] field `device`: {:?} is DPDK port {id}, already configured \
                         as {:?} (line {}); give each port once",
                        p.device.to_string(),
                        first.device.to_string(),
                        first.line
                    ),
                )
                .to_string(),
            ));
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Worker lcores and the (config port index, RX queue) pairs each polls.
type Placement = Vec<(u32, Vec<(usize, u16)>)>;

/// Which worker lcore polls which (config port index, queue): the config's
/// `[[lcore]]` tables, or by default queue `q` of every port on worker
/// `q mod workers`. Same queue number, same worker: with a symmetric hash a
/// flow's two directions arrive on the same queue number of their ports,
/// so they meet in one worker's connection table. Ports with one queue
/// each are spread round-robin instead, so that every worker gets a port.
fn place_queues(cfg: &RouterConfig, workers: &[u32]) -> Result<Placement, RunError> {
    if cfg.lcores.is_empty() {
        let mut plan: Placement = workers.iter().map(|w| (*w, Vec::new())).collect();
        let spread = cfg.ports.iter().any(|p| p.rx_queues > 1);
        for (i, p) in cfg.ports.iter().enumerate() {
            for q in 0..p.rx_queues {
                let w = if spread { usize::from(q) } else { i };
                plan[w % workers.len()].1.push((i, q));
            }
        }
        plan.retain(|(_, q)| !q.is_empty());
        return Ok(plan);
    }
    cfg.lcores
        .iter()
        .map(|l| {
            if !workers.contains(&l.id) {
                return Err(RunError::Usage(
                    cfg.error_at(
                        l.line,
                        format!(
                            "[[lcore]] field `id`: lcore {} is not a worker lcore of this EAL \
                             (workers: {workers:?}; the main lcore {} is the control plane); \
                             change -l or the id",
                            l.id,
                            lcore::main_lcore()
                        ),
                    )
                    .to_string(),
                ));
            }
            Ok((l.id, l.queues.clone()))
        })
        .collect()
}

/// True when a `filter` hook tracks connections (`stateful = true`): its
/// tables are per worker, so the ports hash with the symmetric RSS key.
fn tracks_connections(cfg: &RouterConfig) -> bool {
    cfg.hooks.iter().any(|h| {
        h.kind == "filter" && h.args.params.get("stateful").and_then(|v| v.as_bool()) == Some(true)
    })
}

/// Software devices hand frames over as the sending kernel built them, without
/// the padding a wire adds (see `Pipeline::pad_short`).
fn delivers_unpadded(port: &Port) -> bool {
    const SOFTWARE: [&str; 6] = [
        "net_af_packet",
        "net_tap",
        "net_memif",
        "net_ring",
        "net_virtio_user",
        "net_vhost",
    ];
    port.info()
        .map(|i| SOFTWARE.iter().any(|d| i.driver.starts_with(d)))
        .unwrap_or(false)
}

/// Run the router until a stop signal or `--duration`.
pub fn run(
    eal: &Eal,
    args: &AppArgs,
    cfg: &RouterConfig,
    registry: &Registry,
    stop: Arc<AtomicBool>,
    reload: Option<Arc<AtomicBool>>,
) -> Result<Report, RunError> {
    let port_ids = resolve_ports(cfg)?;
    let workers = lcore::workers();
    if workers.is_empty() {
        return Err(RunError::Usage(
            "no worker lcore: give EAL at least two lcores, e.g. -l 0-1 \
             (the first is the main lcore for the control plane, the others poll queues)"
                .into(),
        ));
    }
    let placement = place_queues(cfg, &workers)?;
    let n_workers = placement.len();
    let rxq_total: usize = cfg.ports.iter().map(|p| usize::from(p.rx_queues)).sum();
    let pool_size = args.mbufs.unwrap_or_else(|| {
        let base = default_pool_size(
            cfg.ports.len(),
            rxq_total.div_ceil(cfg.ports.len().max(1)),
            n_workers,
            args,
            n_workers + 1,
        );
        // Rings and resolution queues can hold mbufs too.
        let extra = n_workers * 2 * RING_SIZE as usize + 4096;
        ((base as usize + 1 + extra).next_power_of_two() - 1) as u32
    });
    let pool = Mempool::new("mbuf_pool", pool_size, MEMPOOL_CACHE, eal.socket_id())?;
    let mut ports: Vec<Port> = Vec::new();
    let outcome = route(
        eal, args, cfg, registry, &port_ids, &placement, &pool, &mut ports, stop, reload,
    );
    match outcome {
        Ok((duration, counts, stages, neighbours, events, hooks, captures)) => {
            let mut report = finish(eal, ports, pool, duration, &counts);
            let add = |r: &mut Report| {
                r.stage_cycles_per_packet = stages.clone();
                r.neighbours = neighbours.clone();
                r.control = events.clone();
                r.hooks = hooks.clone();
                r.captures = captures.clone();
            };
            match &mut report {
                Ok(r) => add(r),
                Err(RunError::Leak { report, .. }) => add(report),
                Err(_) => {}
            }
            report
        }
        Err(e) => {
            drop(ports);
            let _ = pool.free();
            Err(e)
        }
    }
}

type Outcome = (
    Duration,
    crate::runtime::LcoreCounts,
    BTreeMap<&'static str, f64>,
    Vec<String>,
    BTreeMap<&'static str, u64>,
    Vec<HookReport>,
    Vec<crate::capture::Summary>,
);

#[allow(clippy::too_many_arguments)]
fn route(
    eal: &Eal,
    args: &AppArgs,
    cfg: &RouterConfig,
    registry: &Registry,
    port_ids: &[u16],
    placement: &[(u32, Vec<(usize, u16)>)],
    pool: &Mempool,
    ports: &mut Vec<Port>,
    stop: Arc<AtomicBool>,
    reload: Option<Arc<AtomicBool>>,
) -> Result<Outcome, RunError> {
    let n_workers = placement.len();
    let max_port = port_ids
        .iter()
        .map(|p| usize::from(*p) + 1)
        .max()
        .unwrap_or(0);
    // Ports.
    let mut rx_tokens: BTreeMap<(usize, u16), RxQueue> = BTreeMap::new();
    let mut tx_tokens: Vec<Vec<Option<TxQueue>>> = Vec::new();
    let mut macs = vec![[0u8; 6]; max_port];
    let mut pad_short = vec![false; max_port];
    let mut addrs = Vec::new();
    for (i, spec) in cfg.ports.iter().enumerate() {
        let mut port = Port::open(port_ids[i])?;
        let pcfg = PortConfig {
            rx_queues: spec.rx_queues,
            tx_queues: n_workers as u16,
            rx_desc: args.rx_desc,
            tx_desc: args.tx_desc,
            promiscuous: false,
            symmetric_rss: tracks_connections(cfg),
        };
        let (rx, tx) = port.configure(&pcfg, pool).map_err(|e| {
            RunError::Usage(
                cfg.error_at(spec.line, format!("[[port]] {}: {e}", spec.device))
                    .to_string(),
            )
        })?;
        if let Some(mac) = spec.mac {
            port.set_mac(mac).map_err(|e| {
                RunError::Usage(
                    cfg.error_at(
                        spec.line,
                        format!(
                            "[[port]] field `mac`: cannot set {} on port {} ({}): {}; \
                             remove `mac` to keep the port's own address {}",
                            crate::config::format_mac(&mac),
                            port.id(),
                            port.name(),
                            e.reason,
                            crate::config::format_mac(&port.mac())
                        ),
                    )
                    .to_string(),
                )
            })?;
        }
        let mtu_set = port.set_mtu(spec.mtu).map_err(|e| {
            RunError::Usage(
                cfg.error_at(
                    spec.line,
                    format!(
                        "[[port]] field `mtu`: port {} ({}) refuses MTU {}: {}; \
                         give an MTU the device supports",
                        port.id(),
                        port.name(),
                        spec.mtu,
                        e.reason
                    ),
                )
                .to_string(),
            )
        })?;
        if !mtu_set {
            eprintln!(
                "fastpath: port {} ({}) cannot change its MTU; packets above {} bytes are dropped",
                port.id(),
                port.name(),
                spec.mtu
            );
        }
        port.start()?;
        log_port_up(&port, &pcfg);
        let mac = port.mac();
        eprintln!(
            "fastpath: port {} address {}/{}",
            port.id(),
            spec.address,
            spec.prefix_len
        );
        macs[usize::from(port.id())] = mac;
        pad_short[usize::from(port.id())] = delivers_unpadded(&port);
        addrs.push(PortAddr {
            id: port.id(),
            mac,
            addr: spec.address,
            prefix_len: spec.prefix_len,
            mtu: spec.mtu,
        });
        for q in rx {
            rx_tokens.insert((i, q.queue()), q);
        }
        tx_tokens.push(tx.into_iter().map(Some).collect());
        ports.push(port);
    }

    // Neighbours and routes.
    let (table, mut writer) = NeighTable::new(args.neigh_capacity as usize);
    let awaited = Arc::new(super::budget::ArpAwaited::default());
    for n in &cfg.neighbours {
        let hdr = EthHeader {
            dst: n.mac,
            src: macs[usize::from(port_ids[n.port])],
            ethertype: ethertype::IPV4,
        };
        writer
            .insert_static(n.address, &hdr)
            .map_err(|e| RunError::Usage(cfg.error_at(n.line, e.to_string()).to_string()))?;
    }
    let mut neigh_err = None;
    let entries = fib_entries(cfg, port_ids, |gw| match writer.insert_held(gw) {
        Ok(i) => i as u32,
        Err(e) => {
            neigh_err.get_or_insert(e);
            super::fib::NEIGH_BY_DST
        }
    });
    if let Some(e) = neigh_err {
        return Err(RunError::Usage(format!("{}: {e}", cfg.path.display())));
    }
    // A tbl8 group serves each /24 that holds longer prefixes; room for
    // routes added at run time (`fastpath ctl`, reloads).
    let long = entries.iter().filter(|e| e.len > 24).count() as u32;
    let lpm = Lpm::new(
        "fib",
        (entries.len() as u32 * 2).max(65536),
        (long * 2).max(1024),
        eal.socket_id(),
    )?;
    // Workers report quiescent states to it; the FIB's writer (the control
    // plane) reuses what it unpublished, and the LPM its tbl8 groups, after them.
    let qsbr = Qsbr::new(n_workers as u32)?;
    let (fib, fib_writer) = FibWriter::new(lpm, qsbr.clone(), &entries).map_err(|e| {
        RunError::Usage(format!(
            "{}: the routes do not fit the LPM table ({e}); fewer routes longer than /24 \
             would help",
            cfg.path.display()
        ))
    })?;
    let macs: Arc<[[u8; 6]]> = macs.into();
    let pad_short: Arc<[bool]> = pad_short.into();

    // Hooks: built (and their rules checked) before any worker starts.
    let port_names: Vec<(String, u16)> = cfg
        .ports
        .iter()
        .zip(port_ids)
        .map(|(p, id)| (p.device.to_string(), *id))
        .collect();
    let hooks = HookChains {
        cfg,
        registry,
        port_ids,
        port_names,
        max_port,
        workers: n_workers,
    };
    let publisher = Publisher::new(hooks.build(cfg, None)?);
    log_hooks(&publisher.current());
    // SIGHUP sets `reload` (routes, neighbours and hooks): see
    // runtime::install_signal_handler.
    let reload = reload.unwrap_or_default();

    // Workers.
    let mut punt_rx = Vec::new();
    let mut inject_tx = Vec::new();
    let mut counters = Vec::new();
    let mut jobs = Vec::new();
    let handback = Arc::new(Mutex::new(Handback::default()));
    let started = Instant::now();
    let mut launch_err = None;
    // Every ring exists before the first worker starts: a failure after a
    // launch would return with that worker still polling ports and the pool
    // that the caller is about to close and free.
    let mut worker_rings = Vec::new();
    for (w, (lcore_id, _)) in placement.iter().enumerate() {
        let punt = mbuf_ring(&format!("punt_{lcore_id}"), RING_SIZE, eal.socket_id())?;
        let inject = mbuf_ring(&format!("inject_{lcore_id}"), RING_SIZE, eal.socket_id())?;
        worker_rings.push((punt, inject, qsbr.reader(w as u32)?));
    }
    // Drop capture: a tap per lcore; started now with --capture-drops.
    let (hub, capture) = drop_capture(args, ports, max_port);
    if let Some(path) = &args.capture_drops {
        capture.start(path).map_err(RunError::Usage)?;
    }
    for ((w, (lcore_id, queues)), ((punt_p, punt_c), (inj_p, inj_c), rcu)) in
        placement.iter().enumerate().zip(worker_rings)
    {
        punt_rx.push(punt_c);
        inject_tx.push(inj_p);
        let tap = hub.tap(*lcore_id);
        let mut tx: Vec<Option<TxBuffer>> = (0..max_port).map(|_| None).collect();
        for (i, id) in port_ids.iter().enumerate() {
            if let Some(q) = tx_tokens[i].get_mut(w).and_then(Option::take) {
                tx[usize::from(*id)] = Some(TxBuffer::new(q, tap.clone()));
            }
        }
        let rx: Vec<RxQueue> = queues.iter().filter_map(|k| rx_tokens.remove(k)).collect();
        eprintln!(
            "fastpath: lcore {lcore_id} polls {}",
            rx.iter()
                .map(|q| format!("{}/{}", q.port(), q.queue()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let worker = RouterWorker {
            rx,
            tx,
            punt: punt_p,
            inject: inj_c,
            pipeline: Pipeline {
                fib: fib.clone(),
                neigh: table.clone(),
                awaited: awaited.clone(),
                macs: macs.clone(),
                pad_short: pad_short.clone(),
                tsc_hz: crate::dpdk::tsc_hz(),
                worker: w,
                ns_per_tick: super::hook_points::ns_per_tick(crate::dpdk::tsc_hz()),
                capture: tap,
            },
            hooks: publisher.subscribe(),
            neigh_grace: table.grace_reader(),
            rcu,
            timed: args.stage_cycles,
            flow_memo: args.flow_memo,
        };
        let c = Arc::new(LcoreCounters::new(*lcore_id, max_port));
        let (cc, st, hb) = (c.clone(), stop.clone(), handback.clone());
        match lcore::launch(*lcore_id, move || worker.run(cc, st, hb)) {
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
    // RX queues no worker polls are drained at shutdown.
    crate::sync::lock(&handback)
        .rx
        .extend(std::mem::take(&mut rx_tokens).into_values());

    let main = Arc::new(LcoreCounters::new(lcore::main_lcore(), max_port));
    let mut control = ControlPlane::new(
        &addrs,
        fib_writer,
        writer,
        NeighParams {
            reachable: Duration::from_secs_f64(args.neigh_reachable),
            ..NeighParams::default()
        },
        punt_rx,
        inject_tx,
        pool,
        main.clone(),
        awaited,
    );
    let main_tap = hub.tap(lcore::main_lcore());
    control.set_capture(main_tap.clone());
    if launch_err.is_none() {
        let ops = Arc::new(Ops::new(
            Mode::Router,
            started,
            crate::runtime::port_names(ports),
            counters.clone(),
            Some(main.clone()),
        ));
        ops.publish(control_view(&control, &publisher.current()));
        crate::ops::state::install(ops.clone());
        let mut next_view = Instant::now() + VIEW_PERIOD;
        eprintln!(
            "fastpath: routing{}; Ctrl-C to stop",
            match args.duration {
                Some(d) => format!(" for {d} s"),
                None => String::new(),
            }
        );
        // `fastpath ctl` and SIGHUP: handled on this loop (ctl_requests).
        let mut requests = super::ctl_requests::CtlRequests {
            run: super::control::changes::Running { cfg, port_ids },
            hooks: &hooks,
            publisher: &publisher,
            last: cfg.clone(),
            counters: counters.iter().chain([&main]).cloned().collect(),
            capture: capture.clone(),
        };
        let mut ctl = start_ctl(eal);
        // The control plane is not a poll-mode core: it naps while idle.
        main_lcore_loop(
            args,
            &stop,
            started,
            &ops,
            Duration::from_micros(500),
            || {
                if reload.swap(false, Ordering::SeqCst) {
                    requests.sighup(&mut control);
                    next_view = Instant::now();
                }
                let asked = ctl
                    .as_mut()
                    .map_or(0, |c| c.serve(|r| requests.handle(&mut control, r)));
                // A change made here (a route, a neighbour, a reload) shows
                // at once; otherwise every VIEW_PERIOD.
                if asked > 0 {
                    next_view = Instant::now();
                }
                let handled = control.poll();
                if Instant::now() >= next_view {
                    ops.publish(control_view(&control, &publisher.current()));
                    next_view = Instant::now() + VIEW_PERIOD;
                }
                handled + asked > 0
            },
        );
        drop(ctl);
    }
    stop.store(true, Ordering::SeqCst);
    let failed = join_workers(jobs);
    // Readers stop before the ports do.
    crate::ops::state::retire();
    let duration = started.elapsed();
    // Workers are gone: the hooks' counters are final, and dropping the
    // last snapshot frees whatever packets hooks still hold.
    let hook_reports = HookReport::of(&publisher.current());
    drop(publisher);

    // Shutdown: what is punted or waiting, what sits in inject rings, what
    // devices still hold.
    let waiting = control.shutdown();
    let neighbours = control.describe_neighbours();
    let events: BTreeMap<&'static str, u64> = control.stats().fields().into_iter().collect();
    drop(control);
    let mut hb = std::mem::take(&mut *crate::sync::lock(&handback));
    let mut injected = 0;
    for mut ring in hb.inject.drain(..) {
        let mut burst = crate::dpdk::MbufBurst::new();
        while ring.dequeue_burst(&mut burst) != 0 {
            for m in burst.drain() {
                let (reason, out) = (hooks::DropReason::ShutdownDrain, m.meta().out_port);
                main.dropped(out, reason, 1);
                let at = crate::capture::DropSite::new(
                    reason,
                    crate::capture::Stage::Control,
                    m.meta().in_port,
                );
                main_tap.capture(m.data(), at.to_port(out));
                injected += 1;
            }
        }
    }
    let drained = forward::drain(&mut hb.rx, pool.in_use() as u64, &main);
    drop(hb);
    if waiting + injected + drained > 0 {
        eprintln!(
            "fastpath: at shutdown dropped {waiting} packets waiting in the control plane, \
             {injected} in inject rings, {drained} drained from RX queues"
        );
    }
    counters.push(main);
    let captures = capture.finish();
    drop(fib);
    drop(qsbr);
    if let Some(e) = launch_err {
        return Err(e.into());
    }
    if !failed.is_empty() {
        return Err(RunError::Dpdk(DpdkError {
            what: format!("worker lcore(s) {failed:?}"),
            code: libc::EIO,
            reason: "the routing loop failed (see above)".into(),
        }));
    }
    let mut cycles = [0u64; STAGES.len()];
    let mut timed = 0;
    for c in &counters {
        let (cy, n) = c.stage_snapshot();
        for (a, b) in cycles.iter_mut().zip(cy) {
            *a += b;
        }
        timed += n;
    }
    let stages = if timed > 0 {
        STAGES
            .iter()
            .zip(cycles)
            .map(|(n, c)| (*n, c as f64 / timed as f64))
            .collect()
    } else {
        BTreeMap::new()
    };
    Ok((
        duration,
        counters.iter().map(|c| (c.lcore, c.snapshot())).collect(),
        stages,
        neighbours,
        events,
        hook_reports,
        captures,
    ))
}

/// The control socket (`ctl`), in EAL's runtime folder; without it (say,
/// a read-only folder) fastpath runs on and says so.
fn start_ctl(eal: &Eal) -> Option<crate::ctl::server::CtlServer> {
    let path = eal.runtime_dir().join(crate::ctl::SOCKET_NAME);
    match crate::ctl::server::CtlServer::start(&path) {
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

/// How often the main lcore publishes the control view (routes,
/// neighbours, hooks) for telemetry and metrics; a change made on the main
/// lcore (`fastpath ctl`, a reload) publishes at once.
const VIEW_PERIOD: Duration = Duration::from_millis(500);

/// The control plane's state for the operations plane: the one place the
/// published routes, neighbours and hook counters come from.
pub(crate) fn control_view(control: &ControlPlane, hooks: &HookSet) -> ControlView {
    ControlView {
        seq: 0,
        built: Some(Instant::now()),
        routes: control.routes(),
        neighbours: control.neighbours(),
        hooks: HookReport::of(hooks),
        control: control.stats().fields().to_vec(),
    }
}

/// The drop capture of a run: the hub every lcore's tap feeds, and its
/// control, writing files with an interface per port id (by DPDK name)
/// from a thread on the main lcore's CPU.
fn drop_capture(
    args: &AppArgs,
    ports: &[Port],
    max_port: usize,
) -> (Arc<crate::capture::Hub>, crate::capture::Control) {
    let hz = crate::dpdk::tsc_hz();
    let hub = crate::capture::Hub::new(args.capture_queue, args.capture_rate, hz);
    let mut names: Vec<String> = (0..max_port).map(|i| format!("port{i}")).collect();
    for p in ports {
        names[usize::from(p.id())] = p.name().to_string();
    }
    let cpu = lcore::cpu_of(lcore::main_lcore());
    let control = crate::capture::Control::new(hub.clone(), names, args.capture_max_bytes, cpu, hz);
    (hub, control)
}

/// What building the hook chains needs, kept for reloads.
pub(super) struct HookChains<'a> {
    cfg: &'a RouterConfig,
    registry: &'a Registry,
    port_ids: &'a [u16],
    port_names: Vec<(String, u16)>,
    max_port: usize,
    workers: usize,
}

impl HookChains<'_> {
    /// The chains of `file`'s [[hook]] sections (ports resolved against the
    /// running config).
    pub(super) fn build(
        &self,
        file: &RouterConfig,
        previous: Option<&HookSet>,
    ) -> Result<HookSet, RunError> {
        build_hook_set(
            &file.path,
            &file.text,
            &file.hooks,
            self.registry,
            |d| self.cfg.port_index(d),
            self.port_ids,
            &self.port_names,
            self.max_port,
            self.workers,
            previous,
        )
        .map_err(|e| RunError::Usage(e.to_string()))
    }
}

pub(super) fn log_hooks(set: &HookSet) {
    for (point, port, e) in set.entries() {
        eprintln!(
            "fastpath: hook {:?} ({}) at {} of port {port}, priority {}",
            e.name,
            e.kind,
            point.name(),
            e.priority
        );
    }
}
