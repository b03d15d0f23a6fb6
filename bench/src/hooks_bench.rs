//! The hooks benchmark (issue: hooks): what hook points and the built-in
//! hooks cost on the router's pcap replay -> route -> null setup, one
//! forwarding lcore, every case run once per round in a rotated order,
//! medians compared, each case against no hooks on the same traffic. The
//! cases are in [`crate::hooks_case`], their rules and configs in
//! [`crate::hooks_rules`], the table in [`crate::hooks_markdown`]. Every
//! case runs with fastpath's default settings.

use crate::compare;
pub use crate::hooks_case::{Case, Flows, Hooks};
pub use crate::hooks_markdown::{markdown, targets};
pub use crate::hooks_rules::{
    classify_rules, collapsed_hooks, config, filter_rules, hooks_toml, Rule,
};
use crate::pcap_run::{self, Stop};
use crate::rates;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Classify rules of (4) and (6).
pub const CLASSIFY_RULES: usize = 1_000;
/// Classify rules of (5).
pub const CLASSIFY_RULES_LARGE: usize = 10_000;
/// Filter rules of (4), (5) and (6) (plus the `state` rule in (6)).
pub const FILTER_RULES: usize = 100;
/// `conntrack_max` of (6): entries per worker, room for its 100,000 flows.
pub const CT_MAX: u32 = 262_144;

pub const PCAP_PORT: &str = "net_pcap0";
pub const NULL_PORT: &str = "net_null0";

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub rounds: usize,
    /// Seconds of steady state measured per run (one warm-up second is added).
    pub seconds: u32,
    /// The cases, in table order (see [`Case::select`]).
    pub cases: Vec<Case>,
    pub fastpath: PathBuf,
    /// The configs of the run.
    pub workdir: PathBuf,
    /// The pcaps, kept between runs.
    pub cache_dir: PathBuf,
    /// Use hugepages (else `--no-huge`).
    pub hugepages: bool,
}

/// True when hugepages are mounted with enough free for every one of
/// `cases` (the largest EAL memory and some margin); else the runs use
/// `--no-huge`.
pub fn hugepages_available(cases: &[Case]) -> bool {
    let mb = cases
        .iter()
        .map(|c| c.flows.traffic().memory_mb())
        .max()
        .unwrap_or(1024);
    compare::hugepages_free_mb(u64::from(mb) + 76)
}

/// The fastpath binary: `given`, or `fastpath` next to this executable.
pub fn resolve_fastpath(given: Option<PathBuf>) -> Result<PathBuf, String> {
    let p = match given {
        Some(p) => p,
        None => std::env::current_exe()
            .map_err(|e| e.to_string())?
            .with_file_name("fastpath"),
    };
    if !p.exists() {
        return Err(format!(
            "{} not found: build it first (cargo build --release -p fastpath)",
            p.display()
        ));
    }
    Ok(p)
}

/// The files of one case.
struct Prepared {
    case: Case,
    config: PathBuf,
    pcap: PathBuf,
}

/// fastpath on a case: the pool holds the pcap's frames (net_pcap's
/// `infinite_rx` keeps them in mbufs) and EAL memory the pool; nothing
/// else differs from fastpath's defaults.
fn fastpath_cmd(o: &Options, p: &Prepared) -> Command {
    let traffic = p.case.flows.traffic();
    let mut c = Command::new(&o.fastpath);
    c.args([
        "-l",
        "0-1",
        "--no-pci",
        "--log-level",
        "lib.eal:error",
        "--file-prefix",
        &format!("hooks-fastpath-{}", std::process::id()),
    ]);
    let mem = traffic.memory_mb().to_string();
    if o.hugepages {
        c.args(["-m", &mem, "--huge-unlink"]);
    } else {
        c.args(["--no-huge", "-m", &mem]);
    }
    c.arg("--vdev")
        .arg(format!(
            "net_pcap0,rx_pcap={},infinite_rx=1",
            p.pcap.display()
        ))
        .args(["--vdev", "net_null0,no-rx=1", "--", "--config"])
        .arg(&p.config)
        .args(["--stats-period", "1", "--mbufs"])
        .arg(traffic.mbufs().to_string())
        .arg("--duration")
        .arg((o.seconds + 1).to_string());
    c
}

/// One hook's line of fastpath's exit report ("hooks:" section).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookLine {
    pub head: String,
    pub counts: Vec<(String, u64)>,
}

impl HookLine {
    pub fn get(&self, k: &str) -> Option<u64> {
        self.counts.iter().find(|(n, _)| n == k).map(|x| x.1)
    }
}

/// The hook lines of fastpath's exit report:
/// `  ingress port 0 accept (accept, priority 0): seen 5, accepted 5, ...`.
pub fn hook_report(stdout: &str) -> Vec<HookLine> {
    let mut in_hooks = false;
    let mut v = Vec::new();
    for l in stdout.lines() {
        if l == "hooks:" {
            in_hooks = true;
            continue;
        }
        if !in_hooks {
            continue;
        }
        let Some(line) = l.strip_prefix("  ") else {
            in_hooks = false;
            continue;
        };
        let Some((head, rest)) = line.split_once("): ") else {
            continue;
        };
        let counts = rest
            .split(", ")
            .filter_map(|kv| {
                let (k, n) = kv.rsplit_once(' ')?;
                Some((k.to_string(), n.parse().ok()?))
            })
            .collect();
        v.push(HookLine {
            head: format!("{head})"),
            counts,
        });
    }
    v
}

/// Check that a run measured what its case says: every hook was built
/// (logged at start, reported at exit), none dropped a packet, the hooks on
/// the traffic's path saw it and those off it did not, and every packet
/// matched a classify rule. Returns a note for the progress line.
fn check_run(case: Case, stdout: &str, stderr: &str) -> Result<String, String> {
    let started = stderr
        .lines()
        .filter(|l| l.starts_with("fastpath: hook "))
        .count();
    if started != case.hook_count() {
        return Err(format!(
            "fastpath logged {started} hooks at start, the config has {}:\n{}",
            case.hook_count(),
            stderr.trim_end()
        ));
    }
    let report = hook_report(stdout);
    if report.len() != case.hook_count() {
        return Err(format!(
            "fastpath's exit report lists {} hooks, the config has {}",
            report.len(),
            case.hook_count()
        ));
    }
    let mut note = Vec::new();
    for h in &report {
        let seen = h.get("seen").unwrap_or(0);
        if h.get("dropped").unwrap_or(0) > 0 {
            return Err(format!(
                "hook {} dropped packets: the traffic should pass every hook ({:?})",
                h.head, h.counts
            ));
        }
        if case.hooks == Hooks::OtherPort && seen > 0 {
            return Err(format!(
                "hook {} is off the traffic's path but saw {seen} packets",
                h.head
            ));
        }
        if case.hooks != Hooks::OtherPort && seen == 0 {
            return Err(format!("hook {} saw no packet", h.head));
        }
        if let Some(m) = h.get("matched") {
            if m != seen {
                return Err(format!(
                    "hook {}: {m} of {seen} packets matched a rule; the last rule should match \
                     them all",
                    h.head
                ));
            }
        }
        if let Some(n) = h.get("ct_entries") {
            note.push(format!("ct_entries {n}"));
            let flows = case.flows.count();
            if n < u64::from(flows) {
                eprintln!(
                    "warning: {}: {n} connection-tracking entries at exit, {flows} flows sent",
                    h.head
                );
            }
        }
    }
    Ok(note.join(", "))
}

/// Rates of one case, per round (None: that run failed).
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub case: Case,
    pub pps: Vec<Option<f64>>,
    /// Connection-tracking entries at exit, per successful run.
    pub ct_entries: Vec<u64>,
    /// First error.
    pub error: Option<String>,
}

/// The outcome, with the commands.
#[derive(Clone, Debug)]
pub struct Summary {
    pub rounds: usize,
    /// In [`Case::ALL`] order, the cases that ran.
    pub cases: Vec<CaseResult>,
    /// fastpath command of (4), (6) and (4c), where they ran.
    pub commands: Vec<String>,
}

impl Summary {
    fn result(&self, c: Case) -> Option<&CaseResult> {
        self.cases.iter().find(|r| r.case == c)
    }

    /// Successful rates of `c`.
    pub fn rates(&self, c: Case) -> Vec<f64> {
        self.result(c)
            .map(|r| r.pps.iter().flatten().copied().collect())
            .unwrap_or_default()
    }

    /// Per-round ratios of `c` to `base` (rounds where both ran).
    pub fn ratios(&self, c: Case, base: Case) -> Vec<f64> {
        let (Some(a), Some(b)) = (self.result(c), self.result(base)) else {
            return Vec::new();
        };
        a.pps
            .iter()
            .zip(&b.pps)
            .filter_map(|(x, y)| Some(x.as_ref()? / y.as_ref()?))
            .filter(|r| r.is_finite())
            .collect()
    }

    /// The median ratio of `c` to its baseline (no hooks, same traffic).
    pub fn median_ratio(&self, c: Case) -> Option<f64> {
        rates::median(&self.ratios(c, c.baseline()))
    }

    /// Errors, one per failed case.
    pub fn errors(&self) -> Vec<(Case, &str)> {
        self.cases
            .iter()
            .filter_map(|r| Some((r.case, r.error.as_deref()?)))
            .collect()
    }

    /// Half the min-max spread of (1), relative to its median, at least 2%.
    pub fn noise(&self) -> f64 {
        let v = self.rates(Case::NO_HOOKS);
        match rates::median(&v) {
            Some(m) if m > 0.0 => {
                let (lo, hi) = min_max(&v);
                ((hi - lo) / 2.0 / m).max(0.02)
            }
            _ => 0.02,
        }
    }
}

pub fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// The pcap of each traffic and the config of each case.
fn prepare(o: &Options) -> Result<Vec<Prepared>, String> {
    std::fs::create_dir_all(&o.workdir).map_err(|e| format!("{}: {e}", o.workdir.display()))?;
    let mut pcaps: Vec<(Flows, PathBuf)> = Vec::new();
    let mut prepared = Vec::new();
    for &case in &o.cases {
        let pcap = match pcaps.iter().find(|(f, _)| *f == case.flows) {
            Some((_, p)) => p.clone(),
            None => {
                let p = case.flows.traffic().pcaps(&o.cache_dir, 1)?.remove(0);
                pcaps.push((case.flows, p.clone()));
                p
            }
        };
        let path = o.workdir.join(format!("hooks-{}.toml", case.slug()));
        std::fs::write(&path, config(case)).map_err(|e| format!("{}: {e}", path.display()))?;
        prepared.push(Prepared {
            case,
            config: path,
            pcap,
        });
    }
    Ok(prepared)
}

/// Write every case's config into `o.workdir` (and its pcap into the
/// cache) without running anything: each case's label, config and pcap.
pub fn write_configs(o: &Options) -> Result<Vec<(String, PathBuf, PathBuf)>, String> {
    Ok(prepare(o)?
        .into_iter()
        .map(|p| (p.case.label(), p.config, p.pcap))
        .collect())
}

/// One run of a case: its rate, a note and the connection-tracking entries.
fn run_case(o: &Options, p: &Prepared) -> Result<(f64, String, Option<u64>), String> {
    let (out, err) = pcap_run::run(fastpath_cmd(o, p), Stop::Exit(o.seconds + 1))?;
    let note = check_run(p.case, &out, &err)?;
    let pps = rates::steady_median(&rates::fastpath_tx_pps(&out, 1), 1)
        .ok_or_else(|| "fastpath printed no rate samples".to_string())?;
    let ct = hook_report(&out).iter().find_map(|h| h.get("ct_entries"));
    Ok((pps, note, ct))
}

/// Run every case `o.rounds` times, rotating the order each round; a case
/// whose run fails is not run again. `progress` hears a line per run.
pub fn run(o: &Options, mut progress: impl FnMut(&str)) -> Result<Summary, String> {
    let prepared = prepare(o)?;
    let n = prepared.len();
    let mut results: Vec<CaseResult> = prepared
        .iter()
        .map(|p| CaseResult {
            case: p.case,
            pps: Vec::new(),
            ct_entries: Vec::new(),
            error: None,
        })
        .collect();
    for round in 0..o.rounds {
        for k in 0..n {
            let i = (k + round) % n;
            let p = &prepared[i];
            let r = &mut results[i];
            if r.error.is_some() {
                r.pps.push(None);
                continue;
            }
            let head = format!(
                "round {}/{} [{}/{n}] {:<5}",
                round + 1,
                o.rounds,
                k + 1,
                p.case.label()
            );
            match run_case(o, p) {
                Ok((pps, note, ct)) => {
                    r.pps.push(Some(pps));
                    r.ct_entries.extend(ct);
                    progress(&format!(
                        "{head} {:>6.2} Mpps  {}{}",
                        pps / 1e6,
                        p.case.describe(),
                        if note.is_empty() {
                            String::new()
                        } else {
                            format!(" ({note})")
                        }
                    ));
                }
                Err(e) => {
                    progress(&format!("{head} FAILED: {e}"));
                    r.pps.push(None);
                    r.error = Some(e);
                }
            }
        }
    }
    let commands = [Case::RULES_1K, Case::CONNTRACK, Case::RULES_1K_MILLION]
        .into_iter()
        .filter_map(|c| prepared.iter().find(|p| p.case == c))
        .map(|p| compare::show_with(&fastpath_cmd(o, p), Some(&o.cache_dir)))
        .collect();
    Ok(Summary {
        rounds: o.rounds,
        cases: results,
        commands,
    })
}

/// The bench command as run, for the results file.
pub fn command_line() -> String {
    let mut args = std::env::args();
    let prog = args
        .next()
        .map(|p| {
            Path::new(&p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or(p)
        })
        .unwrap_or_else(|| "fastpath-bench".into());
    std::iter::once(prog)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_report_lines_parse() {
        let out = "total: rx 1 = tx 1 + dropped 0  [balanced]\nhooks:\n  \
            ingress port 0 classify (classify, priority 0): seen 10, accepted 10, dropped 0, \
            stolen 0, matched 10, rules 1000, unparsed 0\n  \
            egress port 1 filter (filter, priority 0): seen 10, accepted 10, dropped 0, \
            stolen 0, ct_entries 5\nmbufs: 1 of 2 back in pool \"p\", 0 in use  [no leak]\n";
        let r = hook_report(out);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].head, "ingress port 0 classify (classify, priority 0)");
        assert_eq!(r[0].get("matched"), Some(10));
        assert_eq!(r[1].get("ct_entries"), Some(5));
        let err = "fastpath: hook \"classify\" (classify) at ingress of port 0, priority 0\n\
                   fastpath: hook \"filter\" (filter) at egress of port 1, priority 0\n";
        assert_eq!(check_run(Case::RULES_1K, out, err).unwrap(), "ct_entries 5");
        assert!(check_run(Case::RULES_1K, out, "").is_err());
        assert!(
            check_run(Case::OTHER_PORT, out, err).is_err(),
            "hooks saw traffic"
        );
        let bad = out.replace("matched 10", "matched 3");
        assert!(check_run(Case::RULES_1K, &bad, err).is_err());
    }
}
