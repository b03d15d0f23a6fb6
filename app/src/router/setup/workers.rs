//! Step: start the workers. Every ring exists, and drop capture is ready,
//! before the first worker starts; each worker takes its RX queues, a TX
//! queue on every port, and its own view of the shared tables.

use super::ports::PortsUp;
use super::tables::Tables;
use super::{Hooks, Setup, RING_SIZE};
use crate::capture::{Control, Hub, Tap};
use crate::counters::LcoreCounters;
use crate::datapath::txbuf::TxBuffer;
use crate::datapath::Pipeline;
use crate::dpdk::{
    lcore, mbuf_ring, DpdkError, Port, QsbrReader, RingConsumer, RingProducer, RxQueue,
};
use crate::lifecycle::RunError;
use crate::router::worker::{QueuesToDrain, RouterWorker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The IPv6 tables every worker reads (none without IPv6 in the config).
pub(super) struct Ipv6Shared {
    pub fib: Option<Arc<crate::fib6::Fib6>>,
    pub groups: Arc<crate::datapath::ip6_input::groups::Groups6>,
}

/// The workers once launched, and the control plane's ends of their rings.
pub(super) struct Workers {
    /// One per launched worker, to join at the end.
    pub jobs: Vec<lcore::LcoreJob>,
    /// Each launched worker's counters.
    pub counters: Vec<Arc<LcoreCounters>>,
    /// Worker → control, one per worker (the control plane takes them).
    pub punt_rx: Vec<RingConsumer>,
    /// Control → worker, one per worker (the control plane takes them).
    pub inject_tx: Vec<RingProducer>,
    /// What the main lcore drains at shutdown: what workers leave when
    /// they stop, and the RX queues none polls.
    pub to_drain: Arc<Mutex<QueuesToDrain>>,
    /// Why a worker could not be launched (the others were told to stop).
    pub launch_err: Option<DpdkError>,
    /// Drop capture: what every lcore's tap feeds, and its control.
    pub hub: Arc<Hub>,
    pub capture: Control,
    /// When the workers started (the run's duration counts from here).
    pub started: Instant,
}

/// One worker's rings, both ends: punt (worker → control), inject (control
/// → worker), and its reader of the RCU (the tables' and hook sets' one
/// reclamation domain).
type Rings = (
    (RingProducer, RingConsumer),
    (RingProducer, RingConsumer),
    QsbrReader,
);

/// The worker's ends of its rings.
struct WorkerRings {
    punt: RingProducer,
    inject: RingConsumer,
    rcu: QsbrReader,
}

/// Launch a worker on each lcore of the placement; a launch that fails
/// stops the ones before it and is kept in [`Workers::launch_err`].
pub(super) fn start(
    s: &Setup,
    up: &mut PortsUp,
    tables: &Tables,
    v6: &Ipv6Shared,
    hooks: &Hooks,
    ports: &[Port],
    stop: &Arc<AtomicBool>,
) -> Result<Workers, RunError> {
    // A failure after a launch would return with that worker still polling
    // ports and the pool that the caller is about to close and free.
    let rings = make_rings(s, tables)?;
    let (hub, capture) = drop_capture(s, ports);
    if let Some(path) = &s.opts.capture.drops {
        capture.start(path).map_err(RunError::Usage)?;
    }
    let mut w = Workers {
        jobs: Vec::new(),
        counters: Vec::new(),
        punt_rx: Vec::new(),
        inject_tx: Vec::new(),
        to_drain: Arc::new(Mutex::new(QueuesToDrain::default())),
        launch_err: None,
        hub,
        capture,
        started: Instant::now(),
    };
    for ((i, (lcore_id, _)), rings) in s.placement.iter().enumerate().zip(rings) {
        let ((punt, punt_rx), (inject_tx, inject), rcu) = rings;
        w.punt_rx.push(punt_rx);
        w.inject_tx.push(inject_tx);
        let ends = WorkerRings { punt, inject, rcu };
        let worker = worker_for(s, i, up, (tables, v6), hooks, w.hub.tap(*lcore_id), ends);
        let c = Arc::new(LcoreCounters::new(*lcore_id, s.max_port()));
        let (cc, st, td) = (c.clone(), stop.clone(), w.to_drain.clone());
        match lcore::launch(*lcore_id, move || worker.run(cc, st, td)) {
            Ok(job) => {
                w.jobs.push(job);
                w.counters.push(c);
            }
            Err(e) => {
                w.launch_err = Some(e);
                stop.store(true, Ordering::SeqCst);
                break;
            }
        }
    }
    // RX queues no worker polls are drained at shutdown.
    crate::sync::lock(&w.to_drain)
        .rx
        .extend(std::mem::take(&mut up.rx).into_values());
    Ok(w)
}

/// Every worker's rings, made before the first worker starts.
fn make_rings(s: &Setup, tables: &Tables) -> Result<Vec<Rings>, RunError> {
    let socket = s.eal.socket_id();
    let mut rings = Vec::new();
    for (w, (lcore_id, _)) in s.placement.iter().enumerate() {
        let punt = mbuf_ring(&format!("punt_{lcore_id}"), RING_SIZE, socket)?;
        let inject = mbuf_ring(&format!("inject_{lcore_id}"), RING_SIZE, socket)?;
        rings.push((punt, inject, tables.qsbr.reader(w as u32)?));
    }
    Ok(rings)
}

/// Worker `w` of the placement: its RX queues and a TX buffer on every
/// port (taken from `up`), the pipeline over the shared tables, and the
/// published hook chains.
fn worker_for(
    s: &Setup,
    w: usize,
    up: &mut PortsUp,
    (tables, v6): (&Tables, &Ipv6Shared),
    hooks: &Hooks,
    tap: Arc<Tap>,
    rings: WorkerRings,
) -> RouterWorker {
    let (lcore_id, queues) = &s.placement[w];
    let mut tx: Vec<Option<TxBuffer>> = (0..s.max_port()).map(|_| None).collect();
    for (i, id) in s.port_ids.iter().enumerate() {
        if let Some(q) = up.tx[i].get_mut(w).and_then(Option::take) {
            tx[usize::from(*id)] = Some(TxBuffer::new(q, tap.clone()));
        }
    }
    let rx: Vec<RxQueue> = queues.iter().filter_map(|k| up.rx.remove(k)).collect();
    eprintln!(
        "fastpath: lcore {lcore_id} polls {}",
        rx.iter()
            .map(|q| format!("{}/{}", q.port(), q.queue()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let tsc_hz = crate::dpdk::tsc_hz();
    RouterWorker {
        rx,
        tx,
        punt: rings.punt,
        inject: rings.inject,
        pipeline: Pipeline {
            fib: tables.fib.clone(),
            fib6: v6.fib.clone(),
            groups6: v6.groups.clone(),
            neigh: tables.neigh.clone(),
            awaited: tables.awaited.clone(),
            macs: up.macs.clone(),
            pad_short: up.pad_short.clone(),
            rx_ip_csum: up.rx_ip_csum.clone(),
            tsc_hz,
            worker: w,
            ns_per_tick: crate::datapath::hook_run::ns_per_tick(tsc_hz),
            capture: tap,
            kernel: s.cfg.kernel.interfaces.then(|| {
                Arc::new(crate::datapath::to_kernel::KernelPeers::new(
                    &s.cfg.kernel.peers,
                    s.cfg.kernel.ttl_security,
                ))
            }),
        },
        // After the reader came online (make_rings): a hook set published
        // from now on starts a grace period this worker's report sees.
        hooks: hooks.publisher.subscribe(),
        rcu: rings.rcu,
        timed: s.opts.stage_cycles,
    }
}

/// The drop capture of a run: the hub every lcore's tap feeds, and its
/// control, writing files with an interface per port id (by DPDK name)
/// from a thread on the main lcore's CPU.
fn drop_capture(s: &Setup, ports: &[Port]) -> (Arc<Hub>, Control) {
    let opts = &s.opts.capture;
    let hz = crate::dpdk::tsc_hz();
    let hub = Hub::new(opts.queue, opts.rate, hz);
    let mut names: Vec<String> = (0..s.max_port()).map(|i| format!("port{i}")).collect();
    for p in ports {
        names[usize::from(p.id())] = p.name().to_string();
    }
    let cpu = lcore::cpu_of(lcore::main_lcore());
    let control = Control::new(hub.clone(), names, opts.max_bytes, cpu, hz);
    (hub, control)
}
