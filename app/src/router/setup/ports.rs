//! Step: bring the config's ports up (queues, MAC, MTU), and gather what
//! the rest of the run needs from them.

use super::Setup;
use crate::config::{format_mac, PortSpec, RouterConfig};
use crate::dpdk::{Port, PortConfig, RxQueue, TxQueue};
use crate::lifecycle::{start_port, RunError};
use crate::router::control::parts::PortAddr;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The ports once up.
pub(super) struct PortsUp {
    /// RX queues by (config port index, queue), until a worker takes them.
    pub rx: BTreeMap<(usize, u16), RxQueue>,
    /// Per config port, a TX queue per worker, until the worker takes it.
    pub tx: Vec<Vec<Option<TxQueue>>>,
    /// Each port's MAC, by port id.
    pub macs: Arc<[[u8; 6]]>,
    /// Which ports deliver frames without a wire's padding, by port id.
    pub pad_short: Arc<[bool]>,
    /// Which ports' devices may mark IPv4 header checksums, by port id.
    pub rx_ip_csum: Arc<[bool]>,
    /// Our address on each port, for the control plane.
    pub addrs: Vec<PortAddr>,
}

/// Open, configure and start every `[[port]]`, pushing each onto `ports`.
pub(super) fn start_ports(s: &Setup, ports: &mut Vec<Port>) -> Result<PortsUp, RunError> {
    let max_port = s.max_port();
    let mut rx = BTreeMap::new();
    let mut tx = Vec::new();
    let mut macs = vec![[0u8; 6]; max_port];
    let mut pad_short = vec![false; max_port];
    let mut rx_ip_csum = vec![true; max_port];
    let mut addrs = Vec::new();
    for (i, spec) in s.cfg.ports.iter().enumerate() {
        let (port, port_rx, port_tx) = start_one(s, spec, s.port_ids[i])?;
        let id = usize::from(port.id());
        macs[id] = port.mac();
        pad_short[id] = delivers_unpadded(&port);
        rx_ip_csum[id] = marks_ip_checksums(&port);
        addrs.push(PortAddr {
            id: port.id(),
            mac: port.mac(),
            addr: spec.address,
            prefix_len: spec.prefix_len,
            mtu: spec.mtu,
        });
        for q in port_rx {
            rx.insert((i, q.queue()), q);
        }
        tx.push(port_tx.into_iter().map(Some).collect());
        ports.push(port);
    }
    Ok(PortsUp {
        rx,
        tx,
        macs: macs.into(),
        pad_short: pad_short.into(),
        rx_ip_csum: rx_ip_csum.into(),
        addrs,
    })
}

/// One `[[port]]` (DPDK port `id`) configured and started; an error a
/// user can fix points at its line in the file.
fn start_one(
    s: &Setup,
    spec: &PortSpec,
    id: u16,
) -> Result<(Port, Vec<RxQueue>, Vec<TxQueue>), RunError> {
    let usage = |message: String| RunError::Usage(s.cfg.error_at(spec.line, message).to_string());
    let mut port = Port::open(id)?;
    let pcfg = PortConfig {
        rx_queues: spec.rx_queues,
        tx_queues: s.workers() as u16,
        rx_desc: s.opts.rx_desc,
        tx_desc: s.opts.tx_desc,
        promiscuous: false,
        symmetric_rss: tracks_connections(s.cfg),
    };
    let (rx, tx) = port
        .configure(&pcfg, s.pool)
        .map_err(|e| usage(format!("[[port]] {}: {e}", spec.device)))?;
    if let Some(mac) = spec.mac {
        port.set_mac(mac).map_err(|e| {
            usage(format!(
                "[[port]] field `mac`: cannot set {} on port {} ({}): {}; \
                 remove `mac` to keep the port's own address {}",
                format_mac(&mac),
                port.id(),
                port.name(),
                e.reason,
                format_mac(&port.mac())
            ))
        })?;
    }
    let mtu_set = port.set_mtu(spec.mtu).map_err(|e| {
        usage(format!(
            "[[port]] field `mtu`: port {} ({}) refuses MTU {}: {}; \
             give an MTU the device supports",
            port.id(),
            port.name(),
            spec.mtu,
            e.reason
        ))
    })?;
    if !mtu_set {
        eprintln!(
            "fastpath: port {} ({}) cannot change its MTU; packets above {} bytes are dropped",
            port.id(),
            port.name(),
            spec.mtu
        );
    }
    start_port(&mut port, &pcfg)?;
    eprintln!(
        "fastpath: port {} address {}/{}",
        port.id(),
        spec.address,
        spec.prefix_len
    );
    Ok((port, rx, tx))
}

/// True when a `filter` hook tracks connections (`stateful = true`): its
/// tables are per worker, so the ports hash with the symmetric RSS key.
pub(crate) fn tracks_connections(cfg: &RouterConfig) -> bool {
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

/// Whether the device may mark IPv4 header checksums in the mbufs it
/// receives: its RX offloads include the IPv4 checksum. Unknown: it may.
fn marks_ip_checksums(port: &Port) -> bool {
    port.info().map(|i| i.rx_ipv4_checksum()).unwrap_or(true)
}
