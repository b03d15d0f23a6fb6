//! A port brought up, as either mode does it, and the ports as the
//! operations plane names them.

use crate::dpdk::{DpdkError, Port, PortConfig};
use crate::ops::state::PortName;

/// Start a configured port and say so (see [`log_port_up`]).
pub fn start_port(port: &mut Port, cfg: &PortConfig) -> Result<(), DpdkError> {
    port.start()?;
    log_port_up(port, cfg);
    Ok(())
}

/// One line per port brought up: name, MAC, link, queues and features.
pub fn log_port_up(port: &Port, cfg: &PortConfig) {
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
pub fn port_names(ports: &[Port]) -> Vec<PortName> {
    ports
        .iter()
        .map(|p| PortName {
            id: p.id(),
            name: p.name().to_string(),
        })
        .collect()
}
