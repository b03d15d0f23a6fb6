//! The `/fastpath/...` telemetry commands: what each answers, built from a
//! [`Sample`] of the counters and the published [`ControlView`]. Commands
//! that only apply to router mode answer `{"mode": "forward", "routing":
//! "no"}` in plain forwarding; every command answers `{"mode": "none"}`
//! while fastpath is starting or stopping.

use super::sample::Sample;
use super::state::{with_current, Mode, Ops};
use super::view::{ControlView, NEIGH_STATES};
use crate::counters::PortCount;
use crate::dpdk::telemetry::{register, Handler, Tel};
use crate::dpdk::DpdkError;
use hooks::DropReason;

/// Entries a list command shows per call (a reply is at most 16 KiB);
/// `/fastpath/routes,N` starts at entry N.
pub const PAGE: usize = 100;

/// Every command, its help line and its handler.
pub const COMMANDS: [(&str, &str, Handler); 12] = [
    (
        "/fastpath/stats",
        "Totals and the balance rx + originated = tx + dropped + consumed + stolen + in_flight",
        stats,
    ),
    (
        "/fastpath/ports",
        "Per port: fastpath's counters and the driver's packets and bytes",
        ports,
    ),
    (
        "/fastpath/lcores",
        "Per worker lcore: rx, tx, drops, busy and idle poll cycles",
        lcores,
    ),
    ("/fastpath/drops", "Packets dropped, by reason", drops),
    (
        "/fastpath/stage_drops",
        "Packets each pipeline stage dropped, by stage and reason",
        stage_drops,
    ),
    (
        "/fastpath/routes",
        "The forwarding table. Parameters: first entry shown (100 per call)",
        routes,
    ),
    (
        "/fastpath/neighbours",
        "The neighbour table. Parameters: first entry shown (100 per call)",
        neighbours,
    ),
    (
        "/fastpath/routes6",
        "The IPv6 forwarding table. Parameters: first entry shown (100 per call)",
        routes6,
    ),
    (
        "/fastpath/neighbours6",
        "The IPv6 neighbours. Parameters: first entry shown (100 per call)",
        neighbours6,
    ),
    ("/fastpath/hooks", "Every hook with its counters", hooks_cmd),
    (
        "/fastpath/conntrack",
        "Connection tracking: entries, capacity, full and early-drop events",
        conntrack,
    ),
    (
        "/fastpath/fpm",
        "The FPM session with zebra (--fpm): state and counters",
        fpm,
    ),
];

/// Register every command (once per process; again only replaces handlers).
pub fn register_all() -> Result<(), DpdkError> {
    for (cmd, help, handler) in COMMANDS {
        register(cmd, help, handler)?;
    }
    Ok(())
}

fn not_running() -> Tel {
    let mut d = Tel::dict();
    d.put_str("mode", "none");
    d
}

/// Answer from the running state, or say that nothing runs.
fn answer(f: impl FnOnce(&Ops) -> Tel) -> Tel {
    with_current(f).unwrap_or_else(not_running)
}

/// Answer router-only commands from the control view.
fn routed(f: impl FnOnce(&Ops, &ControlView) -> Tel) -> Tel {
    routed_from(Ops::view, f)
}

/// As [`routed`], from a view whose route lists are current (they are built
/// when read: a full table's takes a moment).
fn routed_lists(f: impl FnOnce(&Ops, &ControlView) -> Tel) -> Tel {
    routed_from(Ops::routes_view, f)
}

fn routed_from(
    view: impl FnOnce(&Ops) -> std::sync::Arc<ControlView>,
    f: impl FnOnce(&Ops, &ControlView) -> Tel,
) -> Tel {
    answer(|ops| match ops.mode {
        Mode::Router => f(ops, &view(ops)),
        Mode::Forward => {
            let mut d = Tel::dict();
            d.put_str("mode", "forward").put_str("routing", "no");
            d
        }
    })
}

fn put_counts(d: &mut Tel, c: &PortCount) {
    d.put_u64("rx", c.rx)
        .put_u64("tx", c.tx)
        .put_u64("dropped", c.drops.total())
        .put_u64("punted", c.punted)
        .put_u64("originated", c.originated)
        .put_u64("consumed", c.consumed)
        .put_u64("stolen", c.stolen);
}

fn stats(_: &str) -> Tel {
    answer(|ops| {
        let s = Sample::take(ops);
        let t = &s.total;
        let mut d = Tel::dict();
        d.put_str("mode", ops.mode.name())
            .put_u64("uptime_ms", ops.started.elapsed().as_millis() as u64)
            .put_u64("tsc_hz", ops.tsc_hz)
            .put_u64("ports", s.ports.len() as u64)
            .put_u64("workers", s.workers.len() as u64);
        put_counts(&mut d, t);
        let in_flight = s.in_flight();
        d.put_u64("in_flight", in_flight).put_str(
            "balance",
            format!(
                "rx {} + originated {} = tx {} + dropped {} + consumed {} + stolen {} + in flight {}",
                t.rx,
                t.originated,
                t.tx,
                t.drops.total(),
                t.consumed,
                t.stolen,
                in_flight
            ),
        );
        d
    })
}

fn ports(_: &str) -> Tel {
    answer(|ops| {
        let s = Sample::take(ops);
        let mut top = Tel::dict();
        for p in &s.ports {
            let mut d = Tel::dict();
            d.put_str("name", p.name.clone());
            put_counts(&mut d, &p.count);
            let drv = &p.driver;
            d.put_u64("driver_rx_packets", drv.rx_packets)
                .put_u64("driver_tx_packets", drv.tx_packets)
                .put_u64("rx_bytes", drv.rx_bytes)
                .put_u64("tx_bytes", drv.tx_bytes)
                .put_u64("rx_missed", drv.rx_missed)
                .put_u64("rx_errors", drv.rx_errors)
                .put_u64("tx_errors", drv.tx_errors)
                .put_u64("rx_nombuf", drv.rx_nombuf);
            top.put(p.id.to_string(), d);
        }
        top
    })
}

fn lcores(_: &str) -> Tel {
    answer(|ops| {
        let s = Sample::take(ops);
        let mut top = Tel::dict();
        for w in &s.workers {
            let mut d = Tel::dict();
            d.put_u64("rx", w.count.rx)
                .put_u64("tx", w.count.tx)
                .put_u64("dropped", w.count.drops.total())
                .put_u64("punted", w.count.punted)
                .put_u64("injected", w.count.injected)
                .put_u64("stolen", w.count.stolen)
                .put_u64("busy_cycles", w.busy_cycles)
                .put_u64("idle_cycles", w.idle_cycles)
                .put_u64("busy_percent", w.busy_percent_since(None).round() as u64);
            top.put(w.lcore.to_string(), d);
        }
        top
    })
}

fn drops(_: &str) -> Tel {
    answer(|ops| {
        let s = Sample::take(ops);
        let mut d = Tel::dict();
        for r in DropReason::ALL {
            d.put_u64(r.name(), s.total.drops.get(r));
        }
        d
    })
}

/// `{stage: {reason: packets}}`: every stage, with the reasons that counted
/// something.
fn stage_drops(_: &str) -> Tel {
    routed(|ops, _| {
        let s = Sample::take(ops);
        let mut top = Tel::dict();
        for (stage, by_reason) in &s.stage_drops {
            let mut d = Tel::dict();
            for (reason, n) in by_reason {
                d.put_u64(*reason, *n);
            }
            top.put(stage.to_string(), d);
        }
        top
    })
}

/// The first entry a list command shows (its parameter).
fn first(params: &str) -> usize {
    params.trim().parse().unwrap_or(0)
}

/// `mode`, `count`, `first`, `shown` and the page of `items` under `key`.
fn page<T>(params: &str, key: &str, items: &[T], item: impl Fn(&T) -> Tel) -> Tel {
    let from = first(params).min(items.len());
    let shown = &items[from..(from + PAGE).min(items.len())];
    let mut list = Tel::dict();
    for (i, x) in shown.iter().enumerate() {
        list.put((from + i).to_string(), item(x));
    }
    let mut d = Tel::dict();
    d.put_str("mode", "router")
        .put_u64("count", items.len() as u64)
        .put_u64("first", from as u64)
        .put_u64("shown", shown.len() as u64)
        .put(key, list);
    d
}

fn routes(params: &str) -> Tel {
    routed_lists(|_, v| {
        page(params, "routes", &v.routes[..], |r| {
            let join = |f: &dyn Fn(&super::view::HopView) -> Option<String>| {
                r.hops.iter().filter_map(f).collect::<Vec<_>>().join(",")
            };
            let mut d = Tel::dict();
            d.put_str("prefix", format!("{}/{}", r.prefix, r.len))
                .put_str("kind", r.kind)
                .put_str("origin", r.origin)
                .put_u64("port", r.hops.first().map_or(0, |h| u64::from(h.port)))
                .put_u64("paths", r.hops.len() as u64)
                .put_str("via", join(&|h| h.via.map(|g| g.to_string())))
                .put_str("ports", join(&|h| Some(h.port.to_string())))
                .put_str(
                    "down",
                    join(&|h| h.down.then(|| h.via.map(|g| g.to_string())).flatten()),
                );
            d
        })
    })
}

fn neighbours(params: &str) -> Tel {
    routed(|_, v| {
        let mut d = page(params, "neighbours", &v.neighbours, |n| {
            let mut d = Tel::dict();
            d.put_str("address", n.address.to_string())
                .put_str(
                    "mac",
                    n.mac
                        .map(|m| crate::config::format_mac(&m))
                        .unwrap_or_default(),
                )
                .put_str("state", n.state)
                .put_u64("static", u64::from(n.is_static));
            d
        });
        let mut states = Tel::dict();
        for (name, n) in NEIGH_STATES.iter().zip(v.neigh_states()) {
            states.put_u64(*name, n);
        }
        d.put("states", states);
        d
    })
}

/// `/fastpath/routes`' shape for the IPv6 table (one next hop a route).
fn routes6(params: &str) -> Tel {
    routed_lists(|_, v| {
        page(params, "routes", &v.routes6[..], |r| {
            let mut d = Tel::dict();
            d.put_str("prefix", format!("{}/{}", r.prefix, r.len))
                .put_str("kind", r.kind)
                .put_str("origin", r.origin)
                .put_u64("port", u64::from(r.port))
                .put_str("via", r.via.map(|g| g.to_string()).unwrap_or_default());
            d
        })
    })
}

/// `/fastpath/neighbours`' shape for the IPv6 neighbours.
fn neighbours6(params: &str) -> Tel {
    routed(|_, v| {
        let mut d = page(params, "neighbours", &v.neighbours6, |n| {
            let mut d = Tel::dict();
            d.put_str("address", n.address.to_string())
                .put_str(
                    "mac",
                    n.mac
                        .map(|m| crate::config::format_mac(&m))
                        .unwrap_or_default(),
                )
                .put_str("state", n.state)
                .put_u64("static", u64::from(n.is_static));
            if let Some(port) = n.port {
                d.put_u64("port", u64::from(port));
            }
            d
        });
        let mut states = Tel::dict();
        for (name, n) in NEIGH_STATES.iter().zip(v.neigh6_states()) {
            states.put_u64(*name, n);
        }
        d.put("states", states);
        d
    })
}

fn hooks_cmd(_: &str) -> Tel {
    routed(|_, v| {
        let mut list = Tel::dict();
        for (i, h) in v.hooks.iter().enumerate() {
            let mut d = Tel::dict();
            d.put_str("name", h.name.clone())
                .put_str("kind", h.kind.clone())
                .put_str("point", h.point)
                .put_u64("port", u64::from(h.port))
                .put_str("priority", h.priority.to_string())
                .put_u64("seen", h.counts.seen)
                .put_u64("accepted", h.counts.accepted)
                .put_u64("dropped", h.counts.dropped)
                .put_u64("stolen", h.counts.stolen);
            for (k, n) in &h.stats {
                d.put_u64(*k, *n);
            }
            list.put(i.to_string(), d);
        }
        let mut d = Tel::dict();
        d.put_str("mode", "router")
            .put_u64("count", v.hooks.len() as u64)
            .put_u64("view", v.seq)
            .put("hooks", list);
        d
    })
}

fn conntrack(_: &str) -> Tel {
    routed(|_, v| {
        let ct = v.conntrack();
        let mut d = Tel::dict();
        d.put_str("mode", "router")
            .put_u64("tracking", u64::from(ct.tracking))
            .put_u64("view", v.seq);
        for (k, n) in ct.counters {
            d.put_u64(k, n);
        }
        d
    })
}

/// `enabled` (0 without `--fpm`), then the session's state and counters.
fn fpm(_: &str) -> Tel {
    routed(|_, v| {
        let mut d = Tel::dict();
        d.put_str("mode", "router")
            .put_u64("enabled", u64::from(!v.fpm.is_empty()))
            .put_u64("view", v.seq);
        for (k, n) in &v.fpm {
            d.put_u64(*k, *n);
        }
        d
    })
}
