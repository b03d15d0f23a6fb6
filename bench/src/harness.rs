//! `fastpath-bench run` (one trial) and `fastpath-bench search` (RFC 2544):
//! the generator / sink against a device under test in another process,
//! with the table on the terminal, `--json` and `--plot`.

use crate::loadgen::{self, LoadGen};
use crate::report::{Report, Trial};
use crate::search::{self, Device};
use crate::spec_args::{Rate, SpecArgs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Options of `run` and `search`.
#[derive(clap::Args, Clone, Debug)]
pub struct HarnessArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// run: the offered rate; search: the upper bound (default: measured, as
    /// fast as the generator can send). `max`, packets/s (`2.5mpps`) or bits/s
    /// on the wire (`10gbps`).
    #[arg(long)]
    pub rate: Option<Rate>,
    /// Seconds of sending per trial.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// search: loss ratio a trial may have and pass (0: NDR; 0.005: 0.5 % PDR).
    #[arg(long, default_value_t = 0.0)]
    pub loss_ratio: f64,
    /// search: stop when the window is this fraction of the upper bound.
    #[arg(long, default_value_t = 0.01)]
    pub resolution: f64,
    /// search: repeat a failing trial up to N times at the same rate; the
    /// rate passes if a repeat does (0: RFC 2544's single trial). Tells a
    /// host hiccup on a shared machine from the device's limit.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Port to send on (DPDK name or id).
    #[arg(long, default_value = "0")]
    pub tx_port: String,
    /// Port to receive on (DPDK name or id; may be the TX port).
    #[arg(long, default_value = "1")]
    pub rx_port: String,
    /// Mbufs in the generator's pool.
    #[arg(long, default_value_t = 8191)]
    pub mbufs: u32,
    /// Seconds to wait for the links (memif: for the DUT to connect).
    #[arg(long, default_value_t = 10.0)]
    pub link_timeout: f64,
    /// Milliseconds to keep receiving after a trial's sending phase.
    #[arg(long, default_value_t = 200)]
    pub drain_ms: u64,
    /// Milliseconds of light traffic (100 kpps) before the first trial, not counted.
    #[arg(long, default_value_t = 300)]
    pub warmup_ms: u64,
    /// Name of the device under test, for the table, JSON and plots.
    #[arg(long, default_value = "device under test")]
    pub dut: String,
    /// After writing the results, keep the ports open until stdin closes (for
    /// harnesses that stop a memif peer first; see `hold_ports_open`).
    #[arg(long)]
    pub hold: bool,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write SVG plots to STEM-rate.svg and STEM-latency.svg.
    #[arg(long, value_name = "STEM")]
    pub plot: Option<PathBuf>,
    /// EAL arguments (after `--`), e.g. `-l 0 --in-memory --vdev net_memif0,...`.
    #[arg(last = true)]
    pub eal: Vec<String>,
}

fn check(a: &HarnessArgs) -> Result<(), String> {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        return Err(format!("--seconds {} must be above zero", a.seconds));
    }
    if !(0.0..1.0).contains(&a.loss_ratio) {
        return Err(format!(
            "--loss-ratio {} is outside [0, 1): 0 for NDR, e.g. 0.005 for a 0.5 % PDR",
            a.loss_ratio
        ));
    }
    if !(a.resolution > 0.0 && a.resolution < 1.0) {
        return Err(format!(
            "--resolution {} is outside (0, 1): a fraction of the upper bound, e.g. 0.01",
            a.resolution
        ));
    }
    if a.eal.is_empty() {
        return Err(
            "no EAL arguments: give them after `--`, e.g. `-- -l 0 --in-memory \
                    --vdev net_memif0,role=client,socket=/run/fp.sock`"
                .into(),
        );
    }
    Ok(())
}

/// One progress line per trial, for the terminal.
pub fn progress_line(n: usize, t: &Trial, window: Option<search::Window>) -> String {
    let mut s = format!(
        "trial {n}: offered {:.3} Mpps, forwarded {:.3} Mpps, lost {} ({:.4} %), {}",
        t.offered_pps / 1e6,
        t.forwarded_pps / 1e6,
        t.lost,
        t.loss_ratio * 100.0,
        if t.pass { "pass" } else { "FAIL" }
    );
    if let Some(w) = window {
        s += &format!(
            "; search window {:.3}-{:.3} Mpps",
            w.lo_pps / 1e6,
            w.hi_pps / 1e6
        );
    }
    s
}

/// Run one trial (`search == false`) or a throughput search; prints progress
/// and the table, writes JSON and plots when asked, and returns the report.
pub fn run(a: HarnessArgs, search: bool) -> Result<Report, String> {
    check(&a)?;
    let spec = a.spec.spec()?;
    let mean = spec.sizes.mean();
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    }
    let opts = loadgen::Options {
        tx_port: a.tx_port.clone(),
        rx_port: a.rx_port.clone(),
        mbufs: a.mbufs,
        link_timeout: Duration::from_secs_f64(a.link_timeout.max(0.0)),
        trial: Duration::from_secs_f64(a.seconds),
        drain: Duration::from_millis(a.drain_ms),
    };
    let mut eal = vec!["fastpath-bench".to_string()];
    eal.extend(a.eal.iter().cloned());
    let mut gen = LoadGen::start(&eal, spec.clone(), opts, stop)?;
    eprintln!("sending {} through {}", spec.describe(), a.dut);
    if a.warmup_ms > 0 {
        gen.warm_up(Duration::from_millis(a.warmup_ms))?;
    }
    let rate = a.rate.and_then(|r| r.pps(mean));
    let outcome = if search {
        let mut n = 0;
        search::search(
            &mut gen,
            search::Options {
                max_rate_pps: rate,
                loss_ratio: a.loss_ratio,
                resolution: a.resolution,
                trial_seconds: a.seconds,
                retries: a.retries,
            },
            |t, w| {
                n += 1;
                eprintln!("{}", progress_line(n, t, Some(w)));
            },
        )
        .map(|o| (o.trials, o.result, Some(o.params)))
    } else {
        gen.trial(rate, a.loss_ratio).map(|t| {
            eprintln!("{}", progress_line(1, &t, None));
            (vec![t], None, None)
        })
    };
    let (foreign, short, refused) = (gen.foreign, gen.short_trials, gen.refused);
    let (trials, result, params) = match outcome {
        Ok(o) => o,
        Err(e) => {
            let _ = gen.stop();
            return Err(e);
        }
    };
    if foreign > 0 {
        eprintln!(
            "note: {foreign} received frames were not the trials' own (stragglers of an \
             earlier trial or of the warm-up, ARP, other traffic) and were not counted"
        );
    }
    if refused > 0 {
        eprintln!(
            "note: the TX ring refused {refused} packets at fixed rates (the device did not \
             take them in time); they count as lost"
        );
    }
    if short > 0 {
        eprintln!(
            "note: in {short} trial(s) the generator could not send the rate asked; their \
             offered rate is what it did send (the generator, not the device, was the limit)"
        );
    }
    let report = Report {
        tool: "fastpath-bench".into(),
        dut: a.dut.clone(),
        spec: serde_json::to_value(&spec).map_err(|e| e.to_string())?,
        frame_mean_bytes: mean,
        search: params,
        trials,
        result,
    };
    print!("{}", report.table());
    write_outputs(&report, a.json.as_deref(), a.plot.as_deref())?;
    if a.hold {
        hold_ports_open();
    }
    let leaked = gen.stop()?;
    if leaked != 0 {
        return Err(format!("{leaked} mbufs were not back in the pool at stop"));
    }
    Ok(report)
}

/// The line `--hold` prints once the results are written and the ports are
/// still open.
pub const HOLDING: &str =
    "fastpath-bench: results written; holding the ports open until stdin closes";

/// Keep the ports open (and stop polling) until stdin closes. DPDK 22.11's
/// memif driver unmaps the shared rings when the peer disconnects, without
/// waiting for a poll in progress on the other side: a device under test that
/// is still polling can crash (seen 2 times in 16 runs). With `--hold`, a
/// harness stops the device first, then lets the generator close its side.
fn hold_ports_open() {
    use std::io::Read as _;
    eprintln!("{HOLDING}");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

/// Write `--json` and `--plot` outputs.
pub fn write_outputs(
    r: &Report,
    json: Option<&std::path::Path>,
    plot: Option<&std::path::Path>,
) -> Result<(), String> {
    if let Some(p) = json {
        let s = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
        std::fs::write(p, s + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(stem) = plot {
        let files =
            crate::plot::write_plots(r, stem).map_err(|e| format!("{}: {e}", stem.display()))?;
        for f in files {
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(())
}
