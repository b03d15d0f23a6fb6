//! Final statistics: what every port and lcore counted, whether the counters
//! balance, and whether every mbuf came back. Printed as a table and, on
//! request, written as JSON.

use crate::counters::{LcoreCounters, PortCount};
use crate::dpdk::PortStats;
use hooks::{DropCounters, DropReason};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Counters of one port over all lcores, with the driver's own view beside.
#[derive(Debug, Clone, Serialize)]
pub struct PortReport {
    pub id: u16,
    pub name: String,
    pub rx: u64,
    pub tx: u64,
    pub punted: u64,
    pub originated: u64,
    pub consumed: u64,
    /// Taken by hooks (verdict `Stolen`).
    pub stolen: u64,
    pub dropped: u64,
    pub drops: BTreeMap<&'static str, u64>,
    pub driver: PortStats,
}

/// Counters of one worker lcore over all ports.
#[derive(Debug, Clone, Serialize)]
pub struct LcoreReport {
    pub lcore: u32,
    pub rx: u64,
    pub tx: u64,
    pub punted: u64,
    pub originated: u64,
    /// Handed by the control plane to this worker to send; a worker
    /// balances `rx + injected == tx + dropped + punted + stolen`.
    pub injected: u64,
    pub consumed: u64,
    /// Taken by hooks (verdict `Stolen`).
    pub stolen: u64,
    pub dropped: u64,
    pub drops: BTreeMap<&'static str, u64>,
}

/// Sums over everything, and the conservation check
/// `rx + originated == tx + dropped + consumed + stolen` (every packet
/// received or created ends transmitted, dropped with a reason, consumed by
/// the control plane or taken by a hook; at exit nothing is in flight).
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub rx: u64,
    pub tx: u64,
    pub punted: u64,
    pub originated: u64,
    pub consumed: u64,
    /// Taken by hooks (verdict `Stolen`).
    pub stolen: u64,
    pub dropped: u64,
    pub drops: BTreeMap<&'static str, u64>,
    pub balanced: bool,
}

/// The pool at exit.
#[derive(Debug, Clone, Serialize)]
pub struct MbufReport {
    pub pool: String,
    pub size: u32,
    pub in_use_at_exit: u32,
}

/// Everything printed at exit.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub dpdk_version: String,
    pub duration_secs: f64,
    pub ports: Vec<PortReport>,
    pub lcores: Vec<LcoreReport>,
    pub totals: Totals,
    pub mbufs: MbufReport,
    /// TSC cycles per received packet in each pipeline stage (router mode
    /// with `--stage-cycles`), summed over the worker lcores.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stage_cycles_per_packet: BTreeMap<&'static str, f64>,
    /// Packets each pipeline stage dropped, by reason, summed over the
    /// worker lcores (router mode): every stage, with the reasons that
    /// counted something. Drops outside the stages (control plane, a full
    /// TX queue, shutdown) are only in the per-reason `drops`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stage_drops: StageDrops,
    /// The neighbour table at exit (router mode): address, MAC, state.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub neighbours: Vec<String>,
    /// What the control plane did (router mode): ARP, ICMP, neighbours.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub control: BTreeMap<&'static str, u64>,
    /// Every hook of the last hook set (router mode), with its counters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookReport>,
    /// Every drop capture of the run (router mode), oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<crate::capture::Summary>,
    /// The IPv6 table at exit (router mode with IPv6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<Ipv6Report>,
}

/// The IPv6 table at exit.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ipv6Report {
    /// Prefixes in the IPv6 FIB, the default route included.
    pub routes: usize,
    /// The same by origin (config, ctl, connected, fixed).
    pub routes_by_origin: BTreeMap<&'static str, usize>,
    /// IPv6 neighbours in the table, and of them static.
    pub neighbours: usize,
    pub static_neighbours: usize,
    /// Times the workers' IPv6 table was swapped for a changed one (the
    /// start's build, then each batch of changes).
    pub table_swaps: u64,
}

impl Ipv6Report {
    /// One line for the exit report.
    pub fn to_line(&self) -> String {
        let origins: Vec<String> = self
            .routes_by_origin
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!(
            "IPv6: {} routes ({}), {} neighbours ({} static), {} table swaps",
            self.routes,
            origins.join(", "),
            self.neighbours,
            self.static_neighbours,
            self.table_swaps
        )
    }
}

/// One hook's counters at exit, summed over workers.
#[derive(Debug, Clone, Serialize)]
pub struct HookReport {
    pub point: &'static str,
    pub port: u16,
    pub name: String,
    pub kind: String,
    pub priority: i32,
    #[serde(flatten)]
    pub counts: hooks::HookStats,
    /// The hook's own counters (e.g. connection tracking).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stats: BTreeMap<&'static str, u64>,
}

impl HookReport {
    /// Reports of every hook in `set`.
    pub fn of(set: &hooks::HookSet) -> Vec<HookReport> {
        set.entries()
            .map(|(point, port, e)| HookReport {
                point: point.name(),
                port,
                name: e.name.clone(),
                kind: e.kind.clone(),
                priority: e.priority,
                counts: e.counters.read(),
                stats: e.hook.stats().into_iter().collect(),
            })
            .collect()
    }

    /// One line: `egress port 1 fw (filter, priority 0): seen .. accepted ..`.
    pub fn to_line(&self) -> String {
        let c = &self.counts;
        let mut line = format!(
            "{} port {} {} ({}, priority {}): seen {}, accepted {}, dropped {}, stolen {}",
            self.point,
            self.port,
            self.name,
            self.kind,
            self.priority,
            c.seen,
            c.accepted,
            c.dropped,
            c.stolen
        );
        for (k, v) in &self.stats {
            let _ = write!(line, ", {k} {v}");
        }
        line
    }
}

/// Packets dropped by stage name, then by reason name.
pub type StageDrops = BTreeMap<&'static str, BTreeMap<&'static str, u64>>;

/// What the stages dropped, summed over `lcores`: every stage, with the
/// reasons that counted something.
pub fn stage_drops<'a>(lcores: impl IntoIterator<Item = &'a LcoreCounters>) -> StageDrops {
    let mut out: StageDrops = crate::counters::STAGES
        .iter()
        .map(|st| (*st, BTreeMap::new()))
        .collect();
    for c in lcores {
        for (stage, reason, n) in c.stage_drops_snapshot() {
            *out.entry(stage)
                .or_default()
                .entry(reason.name())
                .or_default() += n;
        }
    }
    out
}

fn by_reason(d: &DropCounters) -> BTreeMap<&'static str, u64> {
    DropReason::ALL
        .iter()
        .map(|r| (r.name(), d.get(*r)))
        .collect()
}

impl Report {
    /// Build the report from per-lcore snapshots (`lcores[i]` = lcore id and its
    /// per-port counts) and the ports' names and driver counters.
    pub fn build(
        dpdk_version: String,
        duration_secs: f64,
        lcores: &[(u32, Vec<PortCount>)],
        ports: &[(u16, String, PortStats)],
        mbufs: MbufReport,
    ) -> Report {
        let mut total = PortCount::default();
        let lcore_reports = lcores
            .iter()
            .map(|(lcore, counts)| {
                let mut sum = PortCount::default();
                counts.iter().for_each(|c| sum.merge(c));
                total.merge(&sum);
                LcoreReport {
                    lcore: *lcore,
                    rx: sum.rx,
                    tx: sum.tx,
                    punted: sum.punted,
                    originated: sum.originated,
                    injected: sum.injected,
                    consumed: sum.consumed,
                    stolen: sum.stolen,
                    dropped: sum.drops.total(),
                    drops: by_reason(&sum.drops),
                }
            })
            .collect();
        let port_reports = ports
            .iter()
            .map(|(id, name, driver)| {
                let mut sum = PortCount::default();
                for (_, counts) in lcores {
                    if let Some(c) = counts.get(*id as usize) {
                        sum.merge(c);
                    }
                }
                PortReport {
                    id: *id,
                    name: name.clone(),
                    rx: sum.rx,
                    tx: sum.tx,
                    punted: sum.punted,
                    originated: sum.originated,
                    consumed: sum.consumed,
                    stolen: sum.stolen,
                    dropped: sum.drops.total(),
                    drops: by_reason(&sum.drops),
                    driver: *driver,
                }
            })
            .collect();
        Report {
            dpdk_version,
            duration_secs,
            ports: port_reports,
            lcores: lcore_reports,
            totals: Totals {
                rx: total.rx,
                tx: total.tx,
                punted: total.punted,
                originated: total.originated,
                consumed: total.consumed,
                stolen: total.stolen,
                dropped: total.drops.total(),
                drops: by_reason(&total.drops),
                balanced: total.rx + total.originated
                    == total.tx + total.drops.total() + total.consumed + total.stolen,
            },
            mbufs,
            stage_cycles_per_packet: BTreeMap::new(),
            stage_drops: BTreeMap::new(),
            neighbours: Vec::new(),
            control: BTreeMap::new(),
            hooks: Vec::new(),
            captures: Vec::new(),
            ipv6: None,
        }
    }

    /// The report as an operator reads it.
    #[cold]
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n== fastpath statistics ({:.2} s, {}) ==",
            self.duration_secs, self.dpdk_version
        );
        self.write_ports(&mut s);
        self.write_lcores(&mut s);
        self.write_drops(&mut s);
        self.write_captures(&mut s);
        self.write_totals(&mut s);
        self.write_details(&mut s);
        self.write_mbufs(&mut s);
        s
    }

    /// One line per port: our counters beside the driver's.
    fn write_ports(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "{:<5} {:<20} {:>14} {:>14} {:>12} | {:>14} {:>14} {:>10} {:>10} {:>8} {:>8}",
            "port",
            "name",
            "rx",
            "tx",
            "dropped",
            "drv rx",
            "drv tx",
            "missed",
            "rx_nombuf",
            "rx_err",
            "tx_err"
        );
        for p in &self.ports {
            let d = &p.driver;
            let _ = writeln!(
                s,
                "{:<5} {:<20} {:>14} {:>14} {:>12} | {:>14} {:>14} {:>10} {:>10} {:>8} {:>8}",
                p.id,
                p.name,
                p.rx,
                p.tx,
                p.dropped,
                d.rx_packets,
                d.tx_packets,
                d.rx_missed,
                d.rx_nombuf,
                d.rx_errors,
                d.tx_errors
            );
        }
    }

    /// One line per lcore, with its drops by reason.
    fn write_lcores(&self, s: &mut String) {
        for l in &self.lcores {
            let reasons: Vec<String> = l
                .drops
                .iter()
                .filter(|(_, n)| **n != 0)
                .map(|(r, n)| format!("{r} {n}"))
                .collect();
            let _ = writeln!(
                s,
                "lcore {:<3} rx {:>14} tx {:>14} dropped {:>12}{}{}",
                l.lcore,
                l.rx,
                l.tx,
                l.dropped,
                if l.punted + l.injected == 0 {
                    String::new()
                } else {
                    format!(" punted {} injected {}", l.punted, l.injected)
                },
                if reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", reasons.join(", "))
                }
            );
        }
    }

    /// Every drop reason that counted something, with what it means.
    fn write_drops(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "drops by reason:{}",
            if self.totals.dropped == 0 {
                " none"
            } else {
                ""
            }
        );
        for r in DropReason::ALL {
            if self.totals.drops[r.name()] == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "  {:<22} {:>14}  ({})",
                r.name(),
                self.totals.drops[r.name()],
                r.description()
            );
        }
    }

    /// One line per drop capture (`--capture-drops`).
    fn write_captures(&self, s: &mut String) {
        for c in &self.captures {
            let _ = writeln!(s, "{}", c.to_line());
        }
    }

    /// The accounting: received and originated against where it went.
    fn write_totals(&self, s: &mut String) {
        let t = &self.totals;
        let verdict = if t.balanced {
            "balanced"
        } else {
            "NOT BALANCED"
        };
        if t.stolen > 0 {
            let _ = writeln!(s, "taken by hooks (stolen): {}", t.stolen);
        }
        if t.originated + t.consumed + t.punted + t.stolen == 0 {
            let _ = writeln!(
                s,
                "total: rx {} = tx {} + dropped {}  [{verdict}]",
                t.rx, t.tx, t.dropped
            );
        } else {
            let _ = writeln!(
                s,
                "total: rx {} + originated {} = tx {} + dropped {} + consumed {} + stolen {}  \
                 [{verdict}]\n\
                 control plane: {} punted to it, {} originated, {} consumed",
                t.rx,
                t.originated,
                t.tx,
                t.dropped,
                t.consumed,
                t.stolen,
                t.punted,
                t.originated,
                t.consumed
            );
        }
    }

    /// Stage cycles, drops by stage, control plane events, hooks and
    /// neighbours, where any.
    fn write_details(&self, s: &mut String) {
        if !self.stage_cycles_per_packet.is_empty() {
            let stages: Vec<String> = crate::counters::STAGES
                .iter()
                .filter_map(|n| {
                    self.stage_cycles_per_packet
                        .get(n)
                        .map(|c| format!("{n} {c:.1}"))
                })
                .collect();
            let _ = writeln!(s, "cycles per packet: {}", stages.join(", "));
        }
        let by_stage: Vec<String> = crate::counters::STAGES
            .iter()
            .filter_map(|st| self.stage_drops.get(st).map(|d| (st, d)))
            .flat_map(|(st, d)| {
                d.iter()
                    .filter(|(_, n)| **n != 0)
                    .map(move |(r, n)| format!("{st} {r} {n}"))
            })
            .collect();
        if !by_stage.is_empty() {
            let _ = writeln!(s, "drops by stage: {}", by_stage.join(", "));
        }
        if !self.control.is_empty() {
            let parts: Vec<String> = self
                .control
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(s, "control plane events: {}", parts.join(", "));
        }
        if !self.hooks.is_empty() {
            let _ = writeln!(s, "hooks:");
            for h in &self.hooks {
                let _ = writeln!(s, "  {}", h.to_line());
            }
        }
        if let Some(v6) = &self.ipv6 {
            let _ = writeln!(s, "{}", v6.to_line());
        }
        if !self.neighbours.is_empty() {
            let _ = writeln!(s, "neighbours:");
            for n in &self.neighbours {
                let _ = writeln!(s, "  {n}");
            }
        }
    }

    /// Whether every mbuf came back to its pool.
    fn write_mbufs(&self, s: &mut String) {
        let m = &self.mbufs;
        let _ = writeln!(
            s,
            "mbufs: {} of {} back in pool {:?}, {} in use  [{}]",
            m.size - m.in_use_at_exit,
            m.size,
            m.pool,
            m.in_use_at_exit,
            if m.in_use_at_exit == 0 {
                "no leak"
            } else {
                "LEAK"
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(rx: u64, tx: u64, full: u64) -> PortCount {
        let mut d = DropCounters::default();
        d.add(DropReason::TxQueueFull, full);
        PortCount {
            rx,
            tx,
            drops: d,
            ..Default::default()
        }
    }

    fn mbufs(in_use: u32) -> MbufReport {
        MbufReport {
            pool: "p".into(),
            size: 100,
            in_use_at_exit: in_use,
        }
    }

    #[test]
    fn sums_per_port_and_per_lcore_and_checks_balance() {
        let lcores = vec![
            (1, vec![count(10, 0, 0), count(0, 8, 2)]),
            (2, vec![count(5, 0, 0), count(0, 5, 0)]),
        ];
        let ports = vec![
            (0, "a".to_string(), PortStats::default()),
            (1, "b".to_string(), PortStats::default()),
        ];
        let r = Report::build("v".into(), 1.0, &lcores, &ports, mbufs(0));
        assert_eq!(r.ports[0].rx, 15);
        assert_eq!(r.ports[1].tx, 13);
        assert_eq!(r.ports[1].drops["tx_queue_full"], 2);
        assert_eq!(r.lcores[0].dropped, 2);
        assert_eq!(r.lcores[0].drops["tx_queue_full"], 2);
        assert_eq!(r.lcores[1].drops["tx_queue_full"], 0);
        assert_eq!((r.totals.rx, r.totals.tx, r.totals.dropped), (15, 13, 2));
        assert!(r.totals.balanced);
        let text = r.to_text();
        assert!(
            text.contains("[balanced]") && text.contains("[no leak]"),
            "{text}"
        );
    }

    #[test]
    fn stage_drops_are_summed_over_lcores_by_stage_and_reason() {
        let a = LcoreCounters::new(1, 1);
        let b = LcoreCounters::new(2, 1);
        a.stage_dropped(0, DropReason::Runt, 2);
        b.stage_dropped(0, DropReason::Runt, 3);
        b.stage_dropped(2, DropReason::Ipv4BadChecksum, 1);
        let d = stage_drops([&a, &b]);
        assert_eq!(d.len(), crate::counters::STAGES.len(), "{d:?}");
        assert_eq!(d["l2_input"], BTreeMap::from([("runt", 5)]));
        assert_eq!(d["ip_input"], BTreeMap::from([("ipv4_bad_checksum", 1)]));
        assert!(d["tx"].is_empty(), "{d:?}");
        let lcores = vec![(1, vec![count(1, 1, 0)])];
        let ports = vec![(0, "a".to_string(), PortStats::default())];
        let mut r = Report::build("v".into(), 1.0, &lcores, &ports, mbufs(0));
        r.stage_drops = d;
        let text = r.to_text();
        assert!(
            text.contains("drops by stage: l2_input runt 5, ip_input ipv4_bad_checksum 1"),
            "{text}"
        );
    }

    #[test]
    fn imbalance_and_leak_are_flagged() {
        let lcores = vec![(1, vec![count(10, 9, 0)])];
        let ports = vec![(0, "a".to_string(), PortStats::default())];
        let r = Report::build("v".into(), 1.0, &lcores, &ports, mbufs(3));
        assert!(!r.totals.balanced);
        let text = r.to_text();
        assert!(
            text.contains("NOT BALANCED") && text.contains("LEAK"),
            "{text}"
        );
    }
}
