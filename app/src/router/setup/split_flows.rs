//! Whether the default queue placement keeps a flow's two directions on one
//! worker, for a stateful filter's per-worker connection tables: queue `q`
//! of every port is on worker `q mod N`, so it does when every port has the
//! same number of RX queues, and not when the ports differ or have one
//! queue each (spread over the workers port by port).

use super::ports::tracks_connections;
use crate::config::{label, RouterConfig};

/// The warning for a stateful filter on `workers` workers whose ports the
/// default placement spreads so that a reply can reach another worker than
/// its connection (and be judged new there); `None` when it cannot.
pub(crate) fn split_flows(cfg: &RouterConfig, workers: usize) -> Option<String> {
    if workers < 2 || cfg.ports.len() < 2 || !cfg.lcores.is_empty() || !tracks_connections(cfg) {
        return None;
    }
    let first = cfg.ports[0].rx_queues;
    let why = if cfg.ports.iter().all(|p| p.rx_queues == 1) {
        "every port has one RX queue, so the ports are spread over the workers one by one"
            .to_string()
    } else if cfg.ports.iter().any(|p| p.rx_queues != first) {
        let counts: Vec<String> = cfg
            .ports
            .iter()
            .map(|p| format!("{} {}", label(&p.device), p.rx_queues))
            .collect();
        format!(
            "the ports have different RX queue counts ({})",
            counts.join(", ")
        )
    } else {
        return None;
    };
    Some(format!(
        "warning: a stateful filter keeps one connection table per worker, but {why}: \
         a reply can reach another worker than its connection and be judged new there; \
         give every [[port]] rx_queues = {workers}, or [[lcore]] tables that poll queue q \
         of every port on the same worker"
    ))
}

#[cfg(test)]
mod tests {
    use super::split_flows;
    use crate::config::testing::{parse, with_ports};

    const STATEFUL: &str = "
[[hook]]
point = \"egress\"
port = \"net_af_packet1\"
kind = \"filter\"
stateful = true

[[hook.rule]]
state = [\"established\"]
action = \"accept\"
";

    fn warning(text: &str, workers: usize) -> Option<String> {
        split_flows(&parse(text).expect("config"), workers)
    }

    #[test]
    fn one_queue_per_port_on_two_workers_splits_flows() {
        let w = warning(&with_ports(STATEFUL), 2).expect("a warning");
        assert!(w.contains("one RX queue"), "{w}");
        assert!(w.contains("rx_queues = 2"), "{w}");
    }

    #[test]
    fn unequal_queue_counts_split_flows_and_are_listed() {
        let text = with_ports(STATEFUL).replacen(
            "address = \"10.0.2.1/24\"",
            "address = \"10.0.2.1/24\"\nrx_queues = 2",
            1,
        );
        let w = warning(&text, 2).expect("a warning");
        assert!(w.contains("net_af_packet0 1, net_af_packet1 2"), "{w}");
    }

    #[test]
    fn equal_queues_one_worker_or_no_tracking_say_nothing() {
        let two = |t: &str| t.replace("/24\"\n", "/24\"\nrx_queues = 2\n");
        assert_eq!(warning(&two(&with_ports(STATEFUL)), 2), None);
        assert_eq!(warning(&with_ports(STATEFUL), 1), None);
        let stateless = STATEFUL.replace("stateful = true\n", "");
        assert_eq!(warning(&with_ports(&stateless), 2), None);
    }
}
