//! `GET /metrics`: the counters in the Prometheus text exposition format
//! (version 0.0.4, which OpenMetrics scrapers read too): one `# HELP` and
//! `# TYPE` per family, counters ending in `_total`, label values escaped.

use super::sample::Sample;
use super::state::{Mode, Ops};
use super::view::{ControlView, NEIGH_STATES};
use hooks::DropReason;
use std::fmt::Write as _;

/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The exposition text being written, family by family.
struct Text(String);

impl Text {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    /// A family with one sample per item.
    fn each<T>(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        items: &[T],
        sample: impl Fn(&T) -> (Vec<(&'static str, String)>, u64),
    ) {
        self.family(name, kind, help);
        for x in items {
            let (labels, v) = sample(x);
            let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            self.sample(name, &l, v);
        }
    }
}

/// The whole scrape for the running state `ops`.
pub fn render(ops: &Ops) -> String {
    let s = Sample::take(ops);
    let mut t = Text(String::with_capacity(8192));
    t.family(
        "fastpath_info",
        "gauge",
        "fastpath's mode (router or forward); always 1",
    );
    t.sample("fastpath_info", &[("mode", ops.mode.name())], 1);
    t.family(
        "fastpath_uptime_seconds",
        "gauge",
        "Seconds since the workers started",
    );
    t.sample(
        "fastpath_uptime_seconds",
        &[],
        format!("{:.3}", ops.started.elapsed().as_secs_f64()),
    );
    t.family(
        "fastpath_in_flight_packets",
        "gauge",
        "Packets received or created and not yet sent, dropped, consumed or stolen",
    );
    t.sample("fastpath_in_flight_packets", &[], s.in_flight());
    ports(&mut t, &s);
    drops(&mut t, &s);
    lcores(&mut t, ops, &s);
    if ops.mode == Mode::Router {
        control(&mut t, &ops.view());
    }
    t.0
}

fn port_labels(p: &super::sample::PortSample) -> Vec<(&'static str, String)> {
    vec![("port", p.id.to_string()), ("name", p.name.clone())]
}

fn ports(t: &mut Text, s: &Sample) {
    type Field = fn(&super::sample::PortSample) -> u64;
    let families: [(&str, &str, Field); 9] = [
        (
            "fastpath_port_rx_packets_total",
            "Packets fastpath received on the port",
            |p| p.count.rx,
        ),
        (
            "fastpath_port_tx_packets_total",
            "Packets fastpath handed to the port's driver",
            |p| p.count.tx,
        ),
        (
            "fastpath_port_dropped_packets_total",
            "Packets of the port dropped (every reason)",
            |p| p.count.drops.total(),
        ),
        (
            "fastpath_port_punted_packets_total",
            "Packets of the port handed to the control plane",
            |p| p.count.punted,
        ),
        (
            "fastpath_port_rx_bytes_total",
            "Bytes the port's driver received",
            |p| p.driver.rx_bytes,
        ),
        (
            "fastpath_port_tx_bytes_total",
            "Bytes the port's driver sent",
            |p| p.driver.tx_bytes,
        ),
        (
            "fastpath_port_rx_missed_packets_total",
            "Packets the device dropped for a full RX ring",
            |p| p.driver.rx_missed,
        ),
        (
            "fastpath_port_rx_errors_total",
            "Erroneous frames the device received",
            |p| p.driver.rx_errors,
        ),
        (
            "fastpath_port_tx_errors_total",
            "Transmissions the device failed",
            |p| p.driver.tx_errors,
        ),
    ];
    for (name, help, f) in families {
        t.each(name, "counter", help, &s.ports, |p| (port_labels(p), f(p)));
    }
}

fn drops(t: &mut Text, s: &Sample) {
    t.each(
        "fastpath_dropped_packets_total",
        "counter",
        "Packets dropped, by reason (see docs/operations.md)",
        &DropReason::ALL,
        |r| {
            (
                vec![("reason", r.name().to_string())],
                s.total.drops.get(*r),
            )
        },
    );
}

fn lcores(t: &mut Text, ops: &Ops, s: &Sample) {
    t.family(
        "fastpath_tsc_hz",
        "gauge",
        "TSC cycles per second (for the cycle counters)",
    );
    t.sample("fastpath_tsc_hz", &[], ops.tsc_hz);
    let lcore = |w: &super::sample::LcoreSample| vec![("lcore", w.lcore.to_string())];
    t.each(
        "fastpath_lcore_busy_cycles_total",
        "counter",
        "TSC cycles of the worker's poll rounds that received packets",
        &s.workers,
        |w| (lcore(w), w.busy_cycles),
    );
    t.each(
        "fastpath_lcore_idle_cycles_total",
        "counter",
        "TSC cycles of the worker's poll rounds that found every queue empty",
        &s.workers,
        |w| (lcore(w), w.idle_cycles),
    );
    t.each(
        "fastpath_lcore_rx_packets_total",
        "counter",
        "Packets the worker received",
        &s.workers,
        |w| (lcore(w), w.count.rx),
    );
    t.each(
        "fastpath_lcore_tx_packets_total",
        "counter",
        "Packets the worker sent",
        &s.workers,
        |w| (lcore(w), w.count.tx),
    );
    t.each(
        "fastpath_lcore_dropped_packets_total",
        "counter",
        "Packets the worker dropped",
        &s.workers,
        |w| (lcore(w), w.count.drops.total()),
    );
}

/// Hooks, conntrack, neighbours and control-plane events (router mode).
fn control(t: &mut Text, v: &ControlView) {
    hook_families(t, v);
    conntrack(t, v);
    neighbours_and_events(t, v);
}

/// Each hook's verdict counters and its own events.
fn hook_families(t: &mut Text, v: &ControlView) {
    let hook = |h: &crate::report::HookReport| {
        vec![
            ("hook", h.name.clone()),
            ("kind", h.kind.clone()),
            ("point", h.point.to_string()),
            ("port", h.port.to_string()),
        ]
    };
    type Field = fn(&hooks::HookStats) -> u64;
    let verdicts: [(&str, &str, Field); 4] = [
        (
            "fastpath_hook_seen_packets_total",
            "Packets the hook was called for",
            |c| c.seen,
        ),
        (
            "fastpath_hook_accepted_packets_total",
            "Packets the hook passed on",
            |c| c.accepted,
        ),
        (
            "fastpath_hook_dropped_packets_total",
            "Packets the hook dropped",
            |c| c.dropped,
        ),
        (
            "fastpath_hook_stolen_packets_total",
            "Packets the hook took",
            |c| c.stolen,
        ),
    ];
    for (name, help, f) in verdicts {
        t.each(name, "counter", help, &v.hooks, |h| (hook(h), f(&h.counts)));
    }
    t.family(
        "fastpath_hook_events_total",
        "counter",
        "The hook's own counters (rules, policy, flow cache, connection verdicts), by event",
    );
    for h in &v.hooks {
        for (k, n) in h
            .stats
            .iter()
            .filter(|(k, _)| !matches!(**k, "ct_entries" | "ct_capacity"))
        {
            let mut l = hook(h);
            l.push(("event", k.to_string()));
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            t.sample("fastpath_hook_events_total", &l, n);
        }
    }
}

/// The connection tables' gauges and events, summed over workers.
fn conntrack(t: &mut Text, v: &ControlView) {
    let ct = v.conntrack();
    if ct.tracking {
        for (k, n) in &ct.counters {
            match k.as_str() {
                "entries" | "capacity" => {
                    let name = format!("fastpath_conntrack_{k}");
                    t.family(&name, "gauge", &format!("Connection tracking table {k}"));
                    t.sample(&name, &[], n);
                }
                _ => {
                    let name = format!("fastpath_conntrack_{k}_total");
                    t.family(
                        &name,
                        "counter",
                        &format!("Connection tracking events: {k}"),
                    );
                    t.sample(&name, &[], n);
                }
            }
        }
    }
}

/// Neighbours by state, the control plane's events and the route count.
fn neighbours_and_events(t: &mut Text, v: &ControlView) {
    let states = v.neigh_states();
    t.family(
        "fastpath_neighbours",
        "gauge",
        "Neighbours in the table, by state",
    );
    for (s, n) in NEIGH_STATES.iter().zip(states) {
        t.sample("fastpath_neighbours", &[("state", s)], n);
    }
    t.each(
        "fastpath_control_events_total",
        "counter",
        "What the control plane did (ARP, ICMP, neighbour events)",
        &v.control,
        |(k, n)| (vec![("event", k.to_string())], *n),
    );
    t.family("fastpath_routes", "gauge", "Routes in the forwarding table");
    t.sample("fastpath_routes", &[], v.routes.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut t = Text(String::new());
        t.sample("m", &[("a", "x\"y\\z\nw")], 1);
        assert_eq!(t.0, "m{a=\"x\\\"y\\\\z\\nw\"} 1\n");
    }
}
