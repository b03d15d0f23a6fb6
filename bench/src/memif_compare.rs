//! Side by side over `net_memif`, two processes.
//!
//! `fastpath-bench run` (the
//! generator and sink, on core 0) sends the same traffic through each device
//! under test (its forwarding lcore on core 1): `dpdk-testpmd` io and macswap,
//! and fastpath without hooks and with the hook setups of the hooks
//! benchmark. Runs alternate (the order rotates each round); each run is one
//! trial as fast as the generator can send. After the rounds, an RFC 2544
//! NDR search per device, whose plots go next to the results file.

use crate::compare::show;
use crate::dut_process::{memif_eal as eal, run_held_generator, DutProcess, GENERATOR_PORT_ARGS};
use crate::hooks_bench::{self, Case};
use crate::rates;
use crate::report::Report;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use crate::dut_process::DUT_MAC0;
/// Mbufs of the device under test (as in the pcap comparisons).
const MBUFS: &str = "16383";

/// A device under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dut {
    TestpmdIo,
    TestpmdMacswap,
    Fastpath(Case),
}

impl Dut {
    /// The default set, in table order.
    pub const ALL: [Dut; 6] = [
        Dut::TestpmdIo,
        Dut::TestpmdMacswap,
        Dut::Fastpath(Case::NO_HOOKS),
        Dut::Fastpath(Case::ACCEPT_ALL),
        Dut::Fastpath(Case::RULES_1K),
        Dut::Fastpath(Case::CONNTRACK),
    ];

    pub fn label(self) -> String {
        match self {
            Dut::TestpmdIo => "dpdk-testpmd io".into(),
            Dut::TestpmdMacswap => "dpdk-testpmd macswap".into(),
            Dut::Fastpath(Case::NO_HOOKS) => "fastpath router, no hooks".into(),
            Dut::Fastpath(Case::ACCEPT_ALL) => "fastpath, accept-all hook".into(),
            Dut::Fastpath(Case::RULES_1K) => "fastpath, classify 1,000 + filter 100".into(),
            Dut::Fastpath(Case::RULES_10K) => "fastpath, classify 10,000 + filter 100".into(),
            Dut::Fastpath(Case::CONNTRACK) => {
                "fastpath, classify 1,000 + stateful filter 100".into()
            }
            Dut::Fastpath(c) => format!("fastpath, hooks case {}", c.label()),
        }
    }

    fn slug(self) -> String {
        self.label()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-")
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub rounds: usize,
    /// Seconds of sending per run.
    pub seconds: f64,
    /// Trial length of the NDR searches (0: no search).
    pub ndr_trial_seconds: f64,
    pub resolution: f64,
    /// Repeats of a failing search trial (see `search::Options::retries`).
    pub retries: u32,
    pub duts: Vec<Dut>,
    /// Flow spec arguments for `fastpath-bench run` (`--size 64 --flows 1024 ...`).
    pub spec_args: Vec<String>,
    pub fastpath: PathBuf,
    pub testpmd: PathBuf,
    /// This program, to run as the generator.
    pub bench: PathBuf,
    pub workdir: PathBuf,
    /// Where the NDR plots go (None: not written).
    pub plot_dir: Option<PathBuf>,
}

/// Every run's report, per device.
#[derive(Clone, Debug)]
pub struct Summary {
    pub runs: Vec<(Dut, Vec<Report>)>,
    pub ndr: Vec<(Dut, Report)>,
    pub commands: Vec<(Dut, String)>,
    pub generator: String,
    /// The searches' plot files.
    pub plots: Vec<(Dut, Vec<PathBuf>)>,
    /// The bar chart of the rounds' forwarded rates.
    pub forwarded_plot: Option<PathBuf>,
}

/// The fastpath config of a hooks case with memif ports in place of pcap / null.
pub fn fastpath_config(case: Case) -> String {
    hooks_bench::config(case)
        .replace("net_pcap0", "net_memif0")
        .replace("net_null0", "net_memif1")
}

fn dut_cmd(o: &Options, dut: Dut, sock: &Path, tag: &str) -> Result<Command, String> {
    let prefix = format!("memif-dut-{tag}");
    let eal = eal(&prefix, "0-1", sock, "server", true);
    let c = match dut {
        Dut::TestpmdIo | Dut::TestpmdMacswap => {
            let mut c = Command::new(&o.testpmd);
            c.args(eal).args([
                "--",
                "--forward-mode",
                if dut == Dut::TestpmdIo {
                    "io"
                } else {
                    "macswap"
                },
                "--nb-cores=1",
                "--stats-period",
                "1",
                "--total-num-mbufs",
                MBUFS,
                "-a",
            ]);
            c
        }
        Dut::Fastpath(case) => {
            let cfg = o.workdir.join(format!("memif-{}.toml", dut.slug()));
            std::fs::write(&cfg, fastpath_config(case))
                .map_err(|e| format!("{}: {e}", cfg.display()))?;
            let mut c = Command::new(&o.fastpath);
            c.args(eal)
                .arg("--")
                .arg("--config")
                .arg(&cfg)
                .args(["--mbufs", MBUFS]);
            c
        }
    };
    Ok(c)
}

/// How the generator runs: one trial as fast as it can, or a search up to a rate.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Max,
    SearchUpTo(f64),
}

fn generator_cmd(
    o: &Options,
    dut: Dut,
    sock: &Path,
    json: &Path,
    mode: Mode,
    tag: &str,
) -> Command {
    let mut c = Command::new(&o.bench);
    c.arg(match mode {
        Mode::Max => "run",
        Mode::SearchUpTo(_) => "search",
    });
    c.args(&o.spec_args)
        .args(GENERATOR_PORT_ARGS)
        .args(["--dut", &dut.label()])
        .arg("--json")
        .arg(json)
        .arg("--hold");
    match mode {
        Mode::SearchUpTo(pps) => {
            c.args(["--seconds", &o.ndr_trial_seconds.to_string()])
                .args(["--resolution", &o.resolution.to_string()])
                .args(["--retries", &o.retries.to_string()])
                .args(["--rate", &format!("{pps:.0}pps")]);
        }
        Mode::Max => {
            c.args(["--rate", "max", "--seconds", &o.seconds.to_string()]);
        }
    }
    c.arg("--")
        .args(eal(&format!("memif-gen-{tag}"), "0", sock, "client", false));
    c
}

/// One device-under-test run: start it, run the generator (held at the
/// end), stop the device, then release the generator.
fn one(o: &Options, dut: Dut, mode: Mode, tag: &str) -> Result<Report, String> {
    let sock = o.workdir.join(format!("{tag}.sock"));
    let json = o.workdir.join(format!("{tag}.json"));
    let log = o.workdir.join(format!("{tag}.log"));
    let ready = match dut {
        Dut::Fastpath(_) => " polls ",
        _ => "packet forwarding - ports",
    };
    let mut running = DutProcess::start(dut_cmd(o, dut, &sock, tag)?, log, &sock, ready)?;
    let mut stopped = Ok(());
    let gen = generator_cmd(o, dut, &sock, &json, mode, tag);
    let out = run_held_generator(gen, || stopped = running.stop())
        .map_err(|e| format!("{}: {e}", dut.label()))?;
    if !out.status.success() {
        return Err(format!(
            "{}: the generator failed ({}):\n{}",
            dut.label(),
            out.status,
            out.stderr
        ));
    }
    stopped.map_err(|e| format!("{}: {e}", dut.label()))?;
    let s = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    serde_json::from_str(&s).map_err(|e| format!("{}: {e}", json.display()))
}

/// Run the rounds and the searches; `progress` hears a line per run.
pub fn run(o: &Options, mut progress: impl FnMut(&str)) -> Result<Summary, String> {
    std::fs::create_dir_all(&o.workdir).map_err(|e| e.to_string())?;
    let mut forwarded_plot = None;
    let mut runs: Vec<(Dut, Vec<Report>)> = o.duts.iter().map(|&d| (d, Vec::new())).collect();
    for round in 0..o.rounds {
        let n = o.duts.len();
        for k in 0..n {
            let i = (k + round) % n;
            let dut = o.duts[i];
            let r = one(o, dut, Mode::Max, &format!("r{round}-{i}"))?;
            let t = r.trials.first().ok_or("the generator reported no trial")?;
            progress(&format!(
                "round {}: {:<46} {:>7.3} Mpps forwarded of {:.3} offered, loss {:.4} %",
                round + 1,
                dut.label(),
                t.forwarded_pps / 1e6,
                t.offered_pps / 1e6,
                t.loss_ratio * 100.0
            ));
            runs[i].1.push(r);
        }
    }
    let mut ndr = Vec::new();
    let mut plots = Vec::new();
    if let Some(dir) = &o.plot_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let bars: Vec<(String, f64, f64, f64)> = runs
            .iter()
            .map(|(dut, reports)| {
                let f: Vec<f64> = fwd(reports).iter().map(|v| v / 1e6).collect();
                let lo = f.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = f.iter().cloned().fold(0.0, f64::max);
                (dut.label(), rates::median(&f).unwrap_or(0.0), lo, hi)
            })
            .collect();
        let path = dir.join("memif-forwarded.svg");
        let svg = crate::plot::bars_svg(
            "forwarded as fast as the generator sends, over memif (median, min-max)",
            "Mpps",
            &bars,
        );
        std::fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
        forwarded_plot = Some(path);
    }
    // Every search has the same upper bound: the most the generator sent in
    // any run (a device that passes there is at least that fast).
    let max_offered = runs
        .iter()
        .flat_map(|(_, r)| r.iter().filter_map(|r| r.trials.first()))
        .map(|t| t.offered_pps)
        .fold(0.0, f64::max);
    if o.ndr_trial_seconds > 0.0 && max_offered > 0.0 {
        for (i, &dut) in o.duts.iter().enumerate() {
            let r = one(o, dut, Mode::SearchUpTo(max_offered), &format!("ndr-{i}"))?;
            let rate = r.result.as_ref().map(|t| t.offered_pps).unwrap_or(0.0);
            progress(&format!(
                "NDR {:<46} {:.3} Mpps ({} trials)",
                dut.label(),
                rate / 1e6,
                r.trials.len()
            ));
            if let Some(dir) = &o.plot_dir {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let files =
                    crate::plot::write_plots(&r, &dir.join(format!("memif-{}", dut.slug())))
                        .map_err(|e| format!("{}: {e}", dir.display()))?;
                plots.push((dut, files));
            }
            ndr.push((dut, r));
        }
    }
    let tag = "N";
    let sock = PathBuf::from("$TMP/memif.sock");
    let commands = o
        .duts
        .iter()
        .map(|&d| Ok((d, show(&dut_cmd(o, d, &sock, tag)?))))
        .collect::<Result<Vec<_>, String>>()?;
    let generator = show(&generator_cmd(
        o,
        Dut::TestpmdIo,
        &sock,
        Path::new("$TMP/run.json"),
        Mode::Max,
        tag,
    ));
    Ok(Summary {
        runs,
        ndr,
        commands,
        generator,
        plots,
        forwarded_plot,
    })
}

fn fwd(reports: &[Report]) -> Vec<f64> {
    reports
        .iter()
        .filter_map(|r| r.trials.first().map(|t| t.forwarded_pps))
        .collect()
}

/// The `memif` section of `bench/RESULTS.md`; plot links relative to `results_dir`.
pub fn markdown(s: &Summary, spec: &str, machine: &str, results_dir: &Path) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "## Generator and sink over memif (issue: benchmark harness): {spec}\n"
    );
    let _ = writeln!(m, "{machine} Both processes `--no-huge`.\n");
    let _ = writeln!(
        m,
        "`fastpath-bench run` on core 0 sends as fast as it can through `net_memif0` to the \
         device under test (its forwarding lcore on core 1), which forwards out of \
         `net_memif1` back to the generator. Every packet carries a sequence number and the \
         TSC; forwarded = packets back per second of sending. Runs alternate, the order \
         rotated each round; medians over {} rounds. The generator is one core that sends, \
         receives and accounts for every packet: rows near testpmd io's rate are bounded by \
         it, not by the device (the pcap sections above give the devices' own ceilings). As \
         fast as possible, the slowest element's ring is full, so the latency columns of a \
         device slower than the generator are its queueing delay at saturation (a \
         4,096-slot memif ring at ~9 Mpps is ~450 us).\n",
        s.runs.first().map(|r| r.1.len()).unwrap_or(0)
    );
    let base = rates::median(&s.runs.first().map(|r| fwd(&r.1)).unwrap_or_default()).unwrap_or(0.0);
    let _ = writeln!(
        m,
        "| device under test | forwarded Mpps (median) | min-max | ratio to testpmd io | loss % | p50 us | p99 us | p99.9 us |"
    );
    let _ = writeln!(m, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (dut, reports) in &s.runs {
        let f = fwd(reports);
        let med = rates::median(&f).unwrap_or(0.0);
        let lo = f.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = f.iter().cloned().fold(0.0, f64::max);
        let pick = |g: &dyn Fn(&crate::report::Trial) -> f64| {
            let v: Vec<f64> = reports
                .iter()
                .filter_map(|r| r.trials.first())
                .map(g)
                .collect();
            rates::median(&v).unwrap_or(0.0)
        };
        let lat = |g: fn(&crate::report::LatencyNs) -> u64| {
            pick(&|t| t.latency_ns.map(|l| g(&l) as f64).unwrap_or(0.0)) / 1000.0
        };
        let _ = writeln!(
            m,
            "| {} | {:.2} | {:.2}-{:.2} | {:.3} | {:.4} | {:.1} | {:.1} | {:.1} |",
            dut.label(),
            med / 1e6,
            lo / 1e6,
            hi / 1e6,
            if base > 0.0 { med / base } else { 0.0 },
            pick(&|t| t.loss_ratio) * 100.0,
            lat(|l| l.p50),
            lat(|l| l.p99),
            lat(|l| l.p999),
        );
    }
    if let Some(p) = &s.forwarded_plot {
        let rel = p.strip_prefix(results_dir).unwrap_or(p);
        let _ = writeln!(m, "\n![forwarded rates over memif]({})", rel.display());
    }
    if !s.ndr.is_empty() {
        let p = s.ndr[0]
            .1
            .search
            .map(|p| (p.trial_seconds, p.resolution, p.retries))
            .unwrap_or_default();
        let _ = writeln!(
            m,
            "\nRFC 2544 no-drop rate (binary search, {} s trials, resolution {} % of the \
             upper bound, the most the generator sent in any run above; ≥: passed at that \
             bound, so the generator is the limit; one search each). A failing trial is \
             repeated up to {} times at the same rate and the rate passes if a repeat does: \
             on this shared VM a host hiccup loses a few packets at any rate, and a single \
             0-loss trial per rate measured the hiccups (NDRs from 0.7 to 20 Mpps for \
             devices that all forward about 20 Mpps), not the devices. The host's load also \
             comes in phases (the min-max column above: one device at 10 or 20 Mpps): a \
             search that runs in a slow phase finds every device losing packets at a few \
             Mpps. Read the NDR column with the plots (every trial, its loss and latency); \
             the alternated forwarded rates are the steadier comparison.\n",
            p.0,
            p.1 * 100.0,
            p.2
        );
        let _ = writeln!(m, "| device under test | NDR Mpps | ratio to testpmd io | trials | p99 us at NDR | plots |");
        let _ = writeln!(m, "|---|---:|---:|---:|---:|---|");
        let rate = |r: &Report| r.result.as_ref().map(|t| t.offered_pps).unwrap_or(0.0);
        let base = s.ndr.first().map(|(_, r)| rate(r)).unwrap_or(0.0);
        for (dut, r) in &s.ndr {
            let links = s
                .plots
                .iter()
                .find(|(d, _)| d == dut)
                .map(|(_, files)| {
                    files
                        .iter()
                        .map(|f| {
                            let rel = f.strip_prefix(results_dir).unwrap_or(f);
                            let name = if rel.to_string_lossy().contains("latency") {
                                "latency"
                            } else {
                                "rate"
                            };
                            format!("[{name}]({})", rel.display())
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            let limit = r.search.map(|p| p.max_rate_pps).unwrap_or(0.0);
            let _ = writeln!(
                m,
                "| {} | {}{:.3} | {:.3} | {} | {:.1} | {links} |",
                dut.label(),
                if limit > 0.0 && rate(r) >= 0.99 * limit {
                    "≥ "
                } else {
                    ""
                },
                rate(r) / 1e6,
                if base > 0.0 { rate(r) / base } else { 0.0 },
                r.trials.len(),
                r.result
                    .as_ref()
                    .and_then(|t| t.latency_ns)
                    .map(|l| l.p99 as f64 / 1000.0)
                    .unwrap_or(0.0),
            );
        }
    }
    let _ = writeln!(m, "\nCommands (one run; `$TMP` is the work folder):\n\n```");
    let _ = writeln!(m, "{}", s.generator);
    for (dut, c) in &s.commands {
        let _ = writeln!(m, "# {}\n{c}", dut.label());
    }
    let _ = writeln!(m, "```");
    m
}
