//! The live view on stdout, from the main lcore: on a terminal a table
//! redrawn every period (per port rx/tx Mpps and Gbit/s, drops per second
//! and their top reasons; per worker the busy share of its poll loop), and
//! otherwise one line per period (the `--stats-period` rate line, extended).

use super::sample::{LcoreSample, PortSample, Sample};
use hooks::DropReason;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// How the view is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A table, redrawn in place (stdout is a terminal).
    Table,
    /// One line per period (stdout is a file or a pipe).
    Lines,
}

/// Rates of one port over one period.
#[derive(Clone, Debug, PartialEq)]
pub struct PortRate {
    pub id: u16,
    pub name: String,
    pub rx_pps: f64,
    pub tx_pps: f64,
    pub rx_gbps: f64,
    pub tx_gbps: f64,
    pub missed: u64,
    pub drops_ps: f64,
    /// The reasons with the most drops per second, most first (at most 3).
    pub top: Vec<(&'static str, f64)>,
}

/// Rates of one period.
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    pub ports: Vec<PortRate>,
    /// Worker lcore and its busy share, in percent.
    pub busy: Vec<(u32, f64)>,
}

/// The rates between two samples.
pub fn rates(a: &Sample, b: &Sample) -> Rates {
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let ports = b
        .ports
        .iter()
        .map(|p| {
            let old = a.ports.iter().find(|o| o.id == p.id);
            port_rate(old, p, secs)
        })
        .collect();
    let busy = b
        .workers
        .iter()
        .map(|w| {
            let old: Option<&LcoreSample> = a.workers.iter().find(|o| o.lcore == w.lcore);
            (w.lcore, w.busy_percent_since(old))
        })
        .collect();
    Rates { ports, busy }
}

fn port_rate(a: Option<&PortSample>, b: &PortSample, secs: f64) -> PortRate {
    let d = |f: fn(&PortSample) -> u64| f(b).saturating_sub(a.map_or(0, f));
    let mut top: Vec<(&'static str, u64)> = DropReason::ALL
        .iter()
        .map(|r| {
            let old = a.map_or(0, |a| a.count.drops.get(*r));
            (r.name(), b.count.drops.get(*r).saturating_sub(old))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    top.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let drops: u64 = top.iter().map(|(_, n)| n).sum();
    top.truncate(3);
    let top = top.into_iter().map(|(r, n)| (r, n as f64 / secs)).collect();
    PortRate {
        id: b.id,
        name: b.name.clone(),
        rx_pps: d(|p| p.driver.rx_packets) as f64 / secs,
        tx_pps: d(|p| p.driver.tx_packets) as f64 / secs,
        rx_gbps: d(|p| p.driver.rx_bytes) as f64 * 8.0 / secs / 1e9,
        tx_gbps: d(|p| p.driver.tx_bytes) as f64 * 8.0 / secs / 1e9,
        missed: d(|p| p.driver.rx_missed),
        drops_ps: drops as f64 / secs,
        top,
    }
}

fn top_text(top: &[(&str, f64)]) -> String {
    if top.is_empty() {
        return "-".into();
    }
    top.iter()
        .map(|(r, n)| format!("{r}:{n:.0}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The line for `Lines`: `[   1.0s] port 0 rx-pps .. tx-pps .. missed ..
/// rx-gbps .. tx-gbps .. drops-ps .. top REASON:N,.. | port 1 .. | lcore 1
/// busy-pct ..`.
pub fn line(uptime: Duration, r: &Rates) -> String {
    let mut parts: Vec<String> = r
        .ports
        .iter()
        .map(|p| {
            format!(
                "port {} rx-pps {:.0} tx-pps {:.0} missed {} rx-gbps {:.3} tx-gbps {:.3} \
                 drops-ps {:.0} top {}",
                p.id,
                p.rx_pps,
                p.tx_pps,
                p.missed,
                p.rx_gbps,
                p.tx_gbps,
                p.drops_ps,
                top_text(&p.top)
            )
        })
        .collect();
    parts.extend(
        r.busy
            .iter()
            .map(|(l, b)| format!("lcore {l} busy-pct {b:.1}")),
    );
    format!("[{:>7.1}s] {}", uptime.as_secs_f64(), parts.join(" | "))
}

/// The table for `Table`, with the escape that clears the terminal first.
pub fn table(uptime: Duration, r: &Rates) -> String {
    let mut s = String::from("\x1b[H\x1b[2J");
    let _ = writeln!(
        s,
        "fastpath  up {:.0} s  (Ctrl-C stops)",
        uptime.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "{:<5} {:<16} {:>9} {:>9} {:>9} {:>9} {:>10}  top drop reasons (per second)",
        "port", "name", "rx Mpps", "tx Mpps", "rx Gb/s", "tx Gb/s", "drops/s"
    );
    for p in &r.ports {
        let _ = writeln!(
            s,
            "{:<5} {:<16} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.0}  {}",
            p.id,
            p.name,
            p.rx_pps / 1e6,
            p.tx_pps / 1e6,
            p.rx_gbps,
            p.tx_gbps,
            p.drops_ps,
            top_text(&p.top)
        );
    }
    let _ = writeln!(s, "{:<7} {:>6}", "worker", "busy");
    for (l, b) in &r.busy {
        let _ = writeln!(s, "lcore {l:<3} {b:>5.1} %");
    }
    s
}

/// The view's state on the main lcore: when to print next, and the sample
/// the next rates are measured from.
pub struct Live {
    style: Style,
    period: Duration,
    next: Instant,
    last: Option<Sample>,
}

impl Live {
    pub fn new(style: Style, period: Duration, now: Instant) -> Live {
        Live {
            style,
            period,
            next: now + period,
            last: None,
        }
    }

    /// Whether a print is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// Take the first sample (the one the first rates start from).
    pub fn start(&mut self, sample: Sample) {
        self.last = Some(sample);
    }

    /// Print the rates since the last sample, and keep `sample` for next.
    #[cold]
    pub fn print(&mut self, uptime: Duration, sample: Sample) {
        if let Some(last) = &self.last {
            let r = rates(last, &sample);
            let text = match self.style {
                Style::Table => table(uptime, &r),
                Style::Lines => line(uptime, &r),
            };
            println!("{text}");
        }
        self.last = Some(sample);
        self.next += self.period;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::PortCount;
    use crate::dpdk::PortStats;

    fn sample(at: Instant, rx: u64, bytes: u64, no_route: u64, busy: u64, idle: u64) -> Sample {
        let mut count = PortCount::default();
        count.drops.add(DropReason::NoRoute, no_route);
        count.drops.add(DropReason::TtlExceeded, 1);
        Sample {
            at,
            ports: vec![PortSample {
                id: 0,
                name: "p0".into(),
                count,
                driver: PortStats {
                    rx_packets: rx,
                    rx_bytes: bytes,
                    ..Default::default()
                },
            }],
            workers: vec![LcoreSample {
                lcore: 1,
                count: PortCount::default(),
                busy_cycles: busy,
                idle_cycles: idle,
            }],
            total: PortCount::default(),
            stage_drops: Default::default(),
        }
    }

    #[test]
    fn a_period_becomes_rates_top_reasons_and_busy_share() {
        let t0 = Instant::now();
        let a = sample(t0, 0, 0, 0, 0, 0);
        let b = sample(
            t0 + Duration::from_secs(2),
            2_000_000,
            250_000_000,
            10,
            30,
            10,
        );
        let r = rates(&a, &b);
        let p = &r.ports[0];
        assert_eq!(p.rx_pps, 1e6);
        assert_eq!(p.rx_gbps, 1.0);
        assert_eq!(p.drops_ps, 5.0);
        assert_eq!(p.top, vec![("no_route", 5.0)]);
        assert_eq!(r.busy, vec![(1, 75.0)]);
        let l = line(Duration::from_secs(2), &r);
        assert_eq!(
            l,
            "[    2.0s] port 0 rx-pps 1000000 tx-pps 0 missed 0 rx-gbps 1.000 tx-gbps 0.000 \
             drops-ps 5 top no_route:5 | lcore 1 busy-pct 75.0"
        );
        assert!(table(Duration::from_secs(2), &r).contains("lcore 1    75.0 %"));
    }
}
