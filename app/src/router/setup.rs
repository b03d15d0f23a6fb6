//! Router mode (`--config FILE`): resolve the config's devices to DPDK ports,
//! place the RX queues on worker lcores, bring the ports up, build the
//! control plane's tables (FIB, neighbours) and the hook chains, start the
//! workers, run the control plane on the main lcore, and drain everything
//! at the end so every mbuf comes back. Each step is a file of `setup/`;
//! [`run`] and `route` call them in that order.

mod control_loop;
mod drain;
mod ipv6;
mod kernel;
mod ports;
mod published;
mod split_flows;
mod tables;
mod workers;

pub(super) use ports::tracks_connections;
pub(super) use split_flows::split_flows;

use super::hook_chains::{log_hooks, HookChains};
use super::options::RouterOptions;
use crate::config::{DeviceRef, RouterConfig};
use crate::dpdk::port::describe_ports;
use crate::dpdk::{lcore, Eal, Mempool, Port};
use crate::lifecycle::input_end::verdict;
use crate::lifecycle::{create_pool, default_pool_size, finish, InputEnd, RunError};
use crate::report::Report;
use crate::router::fpm_link::FpmLink;
use control_loop::MainLcore;
use drain::Outcome;
use hooks::snapshot::Publisher;
use hooks::{HookSet, Registry};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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

/// What every step of a run reads: the config, the options, and what was
/// decided before the first port came up.
struct Setup<'a> {
    eal: &'a Eal,
    opts: &'a RouterOptions,
    cfg: &'a RouterConfig,
    registry: &'a Registry,
    /// DPDK port id of each `[[port]]`, in config order.
    port_ids: &'a [u16],
    placement: &'a Placement,
    pool: &'a Mempool,
}

impl Setup<'_> {
    /// One more than the largest port id in use: the length of per-port tables.
    fn max_port(&self) -> usize {
        self.port_ids
            .iter()
            .map(|p| usize::from(*p) + 1)
            .max()
            .unwrap_or(0)
    }

    fn workers(&self) -> usize {
        self.placement.len()
    }
}

/// The stop signal, and SIGHUP's request to reload the config file.
struct Signals {
    stop: Arc<AtomicBool>,
    reload: Arc<AtomicBool>,
}

/// The hook chains: how to build them (kept for reloads), and the published
/// set every worker reads.
struct Hooks<'a> {
    chains: HookChains<'a>,
    publisher: Publisher<HookSet>,
}

/// Run the router until a stop signal or the end of its duration. With
/// `reload`, SIGHUP re-reads the config file (routes, neighbours, hooks).
pub fn run(
    eal: &Eal,
    opts: &RouterOptions,
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
    if let Some(warning) = split_flows(cfg, workers.len()) {
        eprintln!("fastpath: {warning}");
    }
    let pool = create_pool(eal, pool_size(cfg, opts, placement.len()))?;
    let setup = Setup {
        eal,
        opts,
        cfg,
        registry,
        port_ids: &port_ids,
        placement: &placement,
        pool: &pool,
    };
    let signals = Signals {
        stop,
        reload: reload.unwrap_or_default(),
    };
    // Ports are closed before the pool is freed, whatever path leaves here.
    let mut ports: Vec<Port> = Vec::new();
    match route(&setup, &mut ports, &signals) {
        Ok(outcome) => {
            let mut report = finish(eal, ports, pool, outcome.duration, &outcome.counts);
            match &mut report {
                Ok(r) => outcome.add_to(r),
                Err(RunError::Leak { report, .. }) => outcome.add_to(report),
                Err(_) => {}
            }
            verdict(report, outcome.unfinished)
        }
        Err(e) => {
            drop(ports);
            let _ = pool.free();
            Err(e)
        }
    }
}

/// Mbufs for every ring and burst of `n_workers` over the config's ports,
/// unless `--mbufs` says otherwise; punt and inject rings and resolution
/// queues can hold mbufs too.
fn pool_size(cfg: &RouterConfig, opts: &RouterOptions, n_workers: usize) -> u32 {
    opts.mbufs.unwrap_or_else(|| {
        let rxq_total: usize = cfg.ports.iter().map(|p| usize::from(p.rx_queues)).sum();
        let base = default_pool_size(
            cfg.ports.len(),
            rxq_total.div_ceil(cfg.ports.len().max(1)),
            n_workers,
            opts.rx_desc,
            opts.tx_desc,
            n_workers + 1,
        );
        let extra = n_workers * 2 * RING_SIZE as usize + 4096;
        ((base as usize + 1 + extra).next_power_of_two() - 1) as u32
    })
}

/// With `--until-input-done`, the frames each port will read (every port
/// of the config is polled); an input with no end is refused here.
fn input_end(s: &Setup) -> Result<Option<InputEnd>, RunError> {
    let Some(sources) = &s.opts.main_loop.until_input_done else {
        return Ok(None);
    };
    let polled = s.port_ids.iter().zip(&s.cfg.ports);
    sources
        .plan_ports(polled.map(|(&id, p)| (id, p.rx_queues)))
        .map(Some)
}

/// The steps of a run, in order; `ports` holds every port brought up, for
/// the caller to close whatever happens here.
fn route(s: &Setup, ports: &mut Vec<Port>, signals: &Signals) -> Result<Outcome, RunError> {
    let input = input_end(s)?;
    // A taken --fpm port fails before any port or worker starts.
    let fpm = s.opts.fpm.as_ref().map(FpmLink::start).transpose()?;
    let mut up = ports::start_ports(s, ports)?;
    let representors = kernel::create(s, &up.addrs)?;
    let (tables, mut writers) = tables::build(s, &up.macs)?;
    let mut ipv6 = ipv6::build(s, &up.macs, &tables.qsbr, &mut writers.neigh)?;
    if let Some(t) = &ipv6 {
        eprintln!("{}", ipv6::notice(s.cfg, t));
        ipv6::program_multicast(ports, &t.groups);
    }
    kernel::all_multicast(s, ports);
    // Hooks: built (and their rules checked) before any worker starts.
    let chains = HookChains::new(s.cfg, s.registry, s.port_ids, s.max_port(), s.workers());
    // A new hook set starts a grace period of the workers' domain: their
    // next report tells them to take it.
    let publisher = Publisher::new(chains.build(s.cfg, None)?, tables.qsbr.clone());
    log_hooks(&publisher.current());
    let hooks = Hooks { chains, publisher };
    let v6 = workers::Ipv6Shared {
        fib: ipv6.as_ref().map(|t| t.fib.clone()),
        groups: ipv6.as_ref().map(|t| t.groups.clone()).unwrap_or_default(),
    };
    let mut workers = workers::start(s, &mut up, &tables, &v6, &hooks, ports, &signals.stop)?;
    let fib6 = ipv6.as_mut().and_then(|t| t.writer.take());
    let mut main = MainLcore::new(s, writers, &up.addrs, &tables, fib6, &mut workers);
    main.control.set_kernel(representors);
    main.fpm = fpm;
    let mut unfinished = None;
    if workers.launch_err.is_none() {
        unfinished = control_loop::run(s, &mut main, &hooks, &workers, ports, signals, input);
    }
    let mut outcome = drain::drain(s, main, hooks, workers, tables, &signals.stop)?;
    // The IPv6 tables outlive the workers (which will read them).
    drop(ipv6);
    outcome.unfinished = unfinished;
    Ok(outcome)
}
