//! The results of a run or a throughput search, in the one JSON shape that
//! `fastpath-bench --json` and the TRex runner (`bench/trex/ndr.py`) both write.
//!
//! ```json
//! { "tool": "fastpath-bench", "dut": "fastpath router", "spec": {...},
//!   "frame_mean_bytes": 64.0,
//!   "search": { "loss_ratio": 0.0, "trial_seconds": 1.0, "resolution": 0.01,
//!               "max_rate_pps": 1.2e7 },
//!   "trials": [ { "offered_pps": ..., "sent": ..., "received": ..., "lost": ...,
//!                 "loss_ratio": ..., "reordered": ..., "duplicates": ...,
//!                 "forwarded_pps": ..., "seconds": ..., "pass": true,
//!                 "latency_ns": { "samples": ..., "min": ..., "mean": ..., "p50": ...,
//!                                 "p90": ..., "p99": ..., "p999": ..., "max": ... } } ],
//!   "result": { ...the highest passing trial, or null... } }
//! ```

use serde::{Deserialize, Serialize};

/// Latency percentiles of one trial, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyNs {
    pub samples: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// One trial at one offered rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Packets per second the generator sent (measured: below the rate asked
    /// when the generator could not keep up).
    pub offered_pps: f64,
    pub sent: u64,
    pub received: u64,
    /// `sent - received` (never negative: duplicates are counted apart).
    pub lost: u64,
    pub loss_ratio: f64,
    /// Packets that arrived with a lower sequence number than one already seen.
    pub reordered: u64,
    pub duplicates: u64,
    pub forwarded_pps: f64,
    /// Length of the sending phase.
    pub seconds: f64,
    /// Loss at most the search's ratio.
    pub pass: bool,
    pub latency_ns: Option<LatencyNs>,
}

/// How a throughput search ran.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchParams {
    /// Loss ratio a trial may have and still pass (0: NDR).
    pub loss_ratio: f64,
    pub trial_seconds: f64,
    /// Resolution, as a fraction of `max_rate_pps`.
    pub resolution: f64,
    /// Upper bound of the search (line rate, or the generator's own maximum).
    pub max_rate_pps: f64,
    /// Repeats allowed for a failing trial at the same rate (0: RFC 2544's
    /// single trial; absent in older reports and the TRex runner's).
    #[serde(default)]
    pub retries: u32,
}

/// The whole outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `fastpath-bench` or `trex`.
    pub tool: String,
    /// The device under test, as the user named it.
    pub dut: String,
    /// The flow spec (see `traffic::TrafficSpec`).
    pub spec: serde_json::Value,
    /// Mean frame size with FCS.
    pub frame_mean_bytes: f64,
    pub search: Option<SearchParams>,
    pub trials: Vec<Trial>,
    pub result: Option<Trial>,
}

/// Ethernet preamble, start delimiter and inter-frame gap: line rate counts them.
pub const L1_OVERHEAD: f64 = 20.0;

/// Bits per second on the wire for `pps` frames of `mean_bytes` (FCS included).
pub fn line_bps(pps: f64, mean_bytes: f64) -> f64 {
    pps * (mean_bytes + L1_OVERHEAD) * 8.0
}

/// Frames per second at `gbps` line rate.
pub fn line_rate_pps(gbps: f64, mean_bytes: f64) -> f64 {
    gbps * 1e9 / ((mean_bytes + L1_OVERHEAD) * 8.0)
}

impl Report {
    /// The terminal table: one row per trial, then the result.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "{} through {}", self.tool, self.dut);
        let _ = writeln!(
            s,
            "{:>5} {:>12} {:>12} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  verdict",
            "trial",
            "offered Mpps",
            "fwd Mpps",
            "lost",
            "loss %",
            "reorder",
            "p50 us",
            "p90 us",
            "p99 us",
            "p99.9 us",
            "max us"
        );
        let us = |v: u64| format!("{:.1}", v as f64 / 1000.0);
        for (i, t) in self.trials.iter().enumerate() {
            let l = t.latency_ns.unwrap_or_default();
            let _ = writeln!(
                s,
                "{:>5} {:>12.3} {:>12.3} {:>12} {:>10.4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
                i + 1,
                t.offered_pps / 1e6,
                t.forwarded_pps / 1e6,
                t.lost,
                t.loss_ratio * 100.0,
                t.reordered,
                us(l.p50),
                us(l.p90),
                us(l.p99),
                us(l.p999),
                us(l.max),
                if t.pass { "pass" } else { "FAIL" }
            );
        }
        match (&self.search, &self.result) {
            (Some(p), Some(r)) => {
                let _ = writeln!(
                    s,
                    "{}: {:.3} Mpps ({:.2} Gbit/s on the wire), loss {:.4} %, p99 {} us",
                    if p.loss_ratio == 0.0 {
                        "NDR".to_string()
                    } else {
                        format!("PDR ({} % loss)", p.loss_ratio * 100.0)
                    },
                    r.offered_pps / 1e6,
                    line_bps(r.offered_pps, self.frame_mean_bytes) / 1e9,
                    r.loss_ratio * 100.0,
                    us(r.latency_ns.unwrap_or_default().p99)
                );
            }
            (Some(_), None) => {
                let _ = writeln!(s, "no trial passed: even the lowest rate lost packets");
            }
            _ => {}
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_rate_of_64_byte_frames_at_10g() {
        let pps = line_rate_pps(10.0, 64.0);
        assert!((pps - 14_880_952.38).abs() < 1.0, "{pps}");
        assert!((line_bps(pps, 64.0) - 10e9).abs() < 1.0);
    }

    #[test]
    fn json_round_trips() {
        let r = Report {
            tool: "fastpath-bench".into(),
            dut: "x".into(),
            spec: serde_json::json!({"sizes": "64"}),
            frame_mean_bytes: 64.0,
            search: Some(SearchParams {
                loss_ratio: 0.0,
                trial_seconds: 1.0,
                resolution: 0.01,
                max_rate_pps: 1e6,
                retries: 0,
            }),
            trials: vec![Trial {
                offered_pps: 1e6,
                sent: 10,
                received: 9,
                lost: 1,
                loss_ratio: 0.1,
                pass: false,
                latency_ns: Some(LatencyNs::default()),
                ..Default::default()
            }],
            result: None,
        };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&j).unwrap(), r);
        assert!(r.table().contains("FAIL"));
        assert!(r.table().contains("no trial passed"));
    }
}
