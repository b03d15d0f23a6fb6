//! `GET /metrics`: the counters in the Prometheus text exposition format
//! (version 0.0.4, which OpenMetrics scrapers read too): one `# HELP` and
//! `# TYPE` per family, counters ending in `_total`, label values escaped.
//!
//! The text is written by the `prometheus` crate's `TextEncoder` (without
//! its protobuf feature) from families built here on each scrape: the label
//! sets change from scrape to scrape (hooks, their own events, conntrack
//! counters), so nothing is registered ahead. Not `prometheus-client`: it
//! writes OpenMetrics only, where a counter family `x` has samples `x_total`
//! and the text ends in `# EOF`; promtool's `check metrics` (2.42, Debian's)
//! reads that as a second, untyped family `x_total` without help and fails
//! (exit 3, "no help text"), and scrapers would get another content type.

use super::http::{HttpStats, Refusal};
use super::sample::Sample;
use super::state::{Mode, Ops};
use super::view::{ControlView, NEIGH_STATES};
use hooks::DropReason;
use prometheus::proto::{Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::TextEncoder;
use std::sync::atomic::Ordering;

/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The families of one scrape, in the order they are written.
struct Text(Vec<MetricFamily>);

impl Text {
    /// Start family `name`; the samples that follow are its own.
    fn family(&mut self, name: &str, kind: MetricType, help: &str) {
        let mut f = MetricFamily::default();
        f.set_name(name.to_string());
        f.set_help(help.to_string());
        f.set_field_type(kind);
        self.0.push(f);
    }

    /// A sample of the latest family.
    fn sample(&mut self, labels: &[(&str, &str)], value: impl Into<Value>) {
        let Some(f) = self.0.last_mut() else {
            return;
        };
        let mut m = Metric::from_label(
            labels
                .iter()
                .map(|(k, v)| {
                    let mut l = LabelPair::default();
                    l.set_name(k.to_string());
                    l.set_value(v.to_string());
                    l
                })
                .collect(),
        );
        let v = value.into().0;
        if f.get_field_type() == MetricType::COUNTER {
            let mut c = Counter::default();
            c.set_value(v);
            m.set_counter(c);
        } else {
            let mut g = Gauge::default();
            g.set_value(v);
            m.set_gauge(g);
        }
        f.mut_metric().push(m);
    }

    /// A family with one sample per item.
    fn each<T>(
        &mut self,
        name: &str,
        kind: MetricType,
        help: &str,
        items: &[T],
        sample: impl Fn(&T) -> (Vec<(&'static str, String)>, u64),
    ) {
        self.family(name, kind, help);
        for x in items {
            let (labels, v) = sample(x);
            let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            self.sample(&l, v);
        }
    }

    /// The exposition text; a family without samples is left out (the
    /// format has no use for it and the encoder refuses it).
    fn encode(mut self) -> String {
        self.0.retain(|f| !f.get_metric().is_empty());
        let mut out = String::with_capacity(16384);
        if let Err(e) = TextEncoder::new().encode_utf8(&self.0, &mut out) {
            out.push_str(&format!("# fastpath: cannot encode the metrics: {e}\n"));
        }
        out
    }
}

/// A sample's value: counters and gauges are integers, except the uptime.
struct Value(f64);

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value(v as f64)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value(v as f64)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value(v)
    }
}

/// The whole scrape for the running state `ops`, with the endpoint's own
/// counters `http`.
pub fn render(ops: &Ops, http: &HttpStats) -> String {
    let s = Sample::take(ops);
    let mut t = Text(Vec::with_capacity(64));
    t.family(
        "fastpath_info",
        MetricType::GAUGE,
        "fastpath's mode (router or forward); always 1",
    );
    t.sample(&[("mode", ops.mode.name())], 1u64);
    t.family(
        "fastpath_uptime_seconds",
        MetricType::GAUGE,
        "Seconds since the workers started",
    );
    // Milliseconds are enough; more digits only make the text longer.
    let up = ops.started.elapsed().as_millis() as f64 / 1000.0;
    t.sample(&[], up);
    t.family(
        "fastpath_in_flight_packets",
        MetricType::GAUGE,
        "Packets received or created and not yet sent, dropped, consumed or stolen",
    );
    t.sample(&[], s.in_flight());
    ports(&mut t, &s);
    drops(&mut t, &s);
    stage_drops(&mut t, &s);
    lcores(&mut t, ops, &s);
    if ops.mode == Mode::Router {
        control(&mut t, &ops.view());
    }
    endpoint(&mut t, http);
    t.encode()
}

/// The metrics endpoint's own connections: what it took, what is open, and
/// what it refused or cut, by reason (see [`super::http::Limits`]).
fn endpoint(t: &mut Text, http: &HttpStats) {
    t.family(
        "fastpath_metrics_connections_total",
        MetricType::COUNTER,
        "Connections the metrics endpoint took (within its limit)",
    );
    t.sample(&[], http.accepted.load(Ordering::Relaxed));
    t.family(
        "fastpath_metrics_open_connections",
        MetricType::GAUGE,
        "Connections to the metrics endpoint open now, this scrape's included",
    );
    t.sample(&[], http.open.load(Ordering::Relaxed));
    t.each(
        "fastpath_metrics_refused_connections_total",
        MetricType::COUNTER,
        "Connections to the metrics endpoint refused or cut, by reason (see docs/operations.md)",
        &Refusal::ALL,
        |r| (vec![("reason", r.name().to_string())], http.refused(*r)),
    );
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
        t.each(name, MetricType::COUNTER, help, &s.ports, |p| {
            (port_labels(p), f(p))
        });
    }
}

fn drops(t: &mut Text, s: &Sample) {
    t.each(
        "fastpath_dropped_packets_total",
        MetricType::COUNTER,
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

/// What each stage dropped, by reason (router mode): a series for each
/// stage and reason that counted something.
fn stage_drops(t: &mut Text, s: &Sample) {
    t.family(
        "fastpath_stage_dropped_packets_total",
        MetricType::COUNTER,
        "Packets a pipeline stage dropped, by stage and reason (see docs/datapath.md)",
    );
    for (stage, by_reason) in &s.stage_drops {
        for (reason, n) in by_reason {
            t.sample(&[("stage", stage), ("reason", reason)], *n);
        }
    }
}

fn lcores(t: &mut Text, ops: &Ops, s: &Sample) {
    t.family(
        "fastpath_tsc_hz",
        MetricType::GAUGE,
        "TSC cycles per second (for the cycle counters)",
    );
    t.sample(&[], ops.tsc_hz);
    let lcore = |w: &super::sample::LcoreSample| vec![("lcore", w.lcore.to_string())];
    t.each(
        "fastpath_lcore_busy_cycles_total",
        MetricType::COUNTER,
        "TSC cycles of the worker's poll rounds that received packets",
        &s.workers,
        |w| (lcore(w), w.busy_cycles),
    );
    t.each(
        "fastpath_lcore_idle_cycles_total",
        MetricType::COUNTER,
        "TSC cycles of the worker's poll rounds that found every queue empty",
        &s.workers,
        |w| (lcore(w), w.idle_cycles),
    );
    t.each(
        "fastpath_lcore_rx_packets_total",
        MetricType::COUNTER,
        "Packets the worker received",
        &s.workers,
        |w| (lcore(w), w.count.rx),
    );
    t.each(
        "fastpath_lcore_tx_packets_total",
        MetricType::COUNTER,
        "Packets the worker sent",
        &s.workers,
        |w| (lcore(w), w.count.tx),
    );
    t.each(
        "fastpath_lcore_dropped_packets_total",
        MetricType::COUNTER,
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
    routes_and_fpm(t, v);
    ipv6(t, v);
}

/// The IPv6 table's routes (in all and by origin) and neighbours by state;
/// only when fastpath runs with IPv6 (an IPv4-only scrape stays as it was).
fn ipv6(t: &mut Text, v: &ControlView) {
    if v.route6_counts.is_empty() {
        return;
    }
    t.family(
        "fastpath_routes6",
        MetricType::GAUGE,
        "Routes in the IPv6 forwarding table",
    );
    t.sample(&[], v.route6_counts.iter().map(|c| c.1).sum::<u64>());
    t.family(
        "fastpath_routes6_by_origin",
        MetricType::GAUGE,
        "Routes in the IPv6 forwarding table, by origin (config, ctl, fpm, connected, fixed)",
    );
    for (origin, n) in &v.route6_counts {
        t.sample(&[("origin", origin)], *n);
    }
    t.family(
        "fastpath_neighbours6",
        MetricType::GAUGE,
        "IPv6 neighbours in the table, by state",
    );
    for (s, n) in NEIGH_STATES.iter().zip(v.neigh6_states()) {
        t.sample(&[("state", s)], n);
    }
}

/// Routes by origin; with `--fpm`, the session's state and counters.
fn routes_and_fpm(t: &mut Text, v: &ControlView) {
    t.family(
        "fastpath_routes_by_origin",
        MetricType::GAUGE,
        "Routes in the forwarding table, by origin (config, ctl, fpm, connected, fixed)",
    );
    for (origin, n) in &v.route_counts {
        t.sample(&[("origin", origin)], *n);
    }
    if v.fpm.is_empty() {
        return;
    }
    let (gauges, counts) = v.fpm.split_at(crate::fpm::stats::GAUGES.min(v.fpm.len()));
    t.each(
        "fastpath_fpm_state",
        MetricType::GAUGE,
        "The FPM session with zebra: connected, last_connect_unix, session_routes, rib_routes, stale_routes",
        gauges,
        |(k, n)| (vec![("field", k.to_string())], *n),
    );
    t.each(
        "fastpath_fpm_events_total",
        MetricType::COUNTER,
        "What the FPM session did: frames, messages, routes added/replaced/removed/swept, errors by kind",
        counts,
        |(k, n)| (vec![("event", k.to_string())], *n),
    );
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
        t.each(name, MetricType::COUNTER, help, &v.hooks, |h| {
            (hook(h), f(&h.counts))
        });
    }
    t.family(
        "fastpath_hook_events_total",
        MetricType::COUNTER,
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
            t.sample(&l, *n);
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
                    t.family(
                        &name,
                        MetricType::GAUGE,
                        &format!("Connection tracking table {k}"),
                    );
                    t.sample(&[], *n);
                }
                _ => {
                    let name = format!("fastpath_conntrack_{k}_total");
                    t.family(
                        &name,
                        MetricType::COUNTER,
                        &format!("Connection tracking events: {k}"),
                    );
                    t.sample(&[], *n);
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
        MetricType::GAUGE,
        "Neighbours in the table, by state",
    );
    for (s, n) in NEIGH_STATES.iter().zip(states) {
        t.sample(&[("state", s)], n);
    }
    t.each(
        "fastpath_control_events_total",
        MetricType::COUNTER,
        "What the control plane did (ARP, ICMP, neighbour events)",
        &v.control,
        |(k, n)| (vec![("event", k.to_string())], *n),
    );
    t.family(
        "fastpath_routes",
        MetricType::GAUGE,
        "Routes in the forwarding table",
    );
    t.sample(&[], v.route_counts.iter().map(|c| c.1).sum::<u64>());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut t = Text(Vec::new());
        t.family("m", MetricType::COUNTER, "help");
        t.sample(&[("a", "x\"y\\z\nw")], 1u64);
        assert_eq!(
            t.encode(),
            "# HELP m help\n# TYPE m counter\nm{a=\"x\\\"y\\\\z\\nw\"} 1\n"
        );
    }

    #[test]
    fn families_without_samples_are_left_out_and_values_are_plain() {
        let mut t = Text(Vec::new());
        t.family("empty", MetricType::COUNTER, "none");
        t.family("g", MetricType::GAUGE, "a gauge");
        t.sample(&[], 12.345);
        t.sample(&[("k", "v")], u64::from(u32::MAX));
        assert_eq!(
            t.encode(),
            "# HELP g a gauge\n# TYPE g gauge\ng 12.345\ng{k=\"v\"} 4294967295\n"
        );
    }

    #[test]
    fn routes_show_by_origin_and_the_fpm_session_only_with_fpm() {
        use crate::fib::{Origin, OriginCounts};
        let mut counts = OriginCounts::default();
        counts.add(&Origin::Fpm, None);
        counts.add(&Origin::Ctl, None);
        // A config route replaced one of ctl's: counted once, by its origin now.
        counts.add(&Origin::Config, Some(&Origin::Ctl));
        counts.add(&Origin::Fpm, None);
        let mut v = ControlView {
            route_counts: counts.fields(),
            ..Default::default()
        };
        let mut t = Text(Vec::new());
        routes_and_fpm(&mut t, &v);
        let text = t.encode();
        assert!(
            text.contains("fastpath_routes_by_origin{origin=\"fpm\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("fastpath_routes_by_origin{origin=\"config\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("fastpath_routes_by_origin{origin=\"ctl\"} 0"),
            "{text}"
        );
        assert!(
            !text.contains("fastpath_fpm"),
            "no --fpm, no FPM families: {text}"
        );
        v.fpm = crate::fpm::FpmStats::default().fields();
        let mut t = Text(Vec::new());
        routes_and_fpm(&mut t, &v);
        let text = t.encode();
        assert!(
            text.contains("fastpath_fpm_state{field=\"connected\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("fastpath_fpm_events_total{event=\"routes_swept\"} 0"),
            "{text}"
        );
        assert!(
            !text.contains("fastpath_fpm_events_total{event=\"connected\"}"),
            "{text}"
        );
    }
}
