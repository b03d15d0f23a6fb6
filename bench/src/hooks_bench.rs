//! The hooks benchmark (issue: hooks): what hook points and the built-in
//! hooks cost on the router's pcap replay -> route -> null setup, one
//! forwarding lcore, every case run once per round in a rotated order,
//! medians compared.
//!
//! | case | hooks |
//! |------|-------|
//! | (1)  | none |
//! | (2)  | `accept` at ingress of the null port and egress of the pcap port: hook points in use, but not on the traffic's path |
//! | (3)  | one `accept` at ingress of the pcap port |
//! | (4)  | `classify` (1,000 rules) at ingress of the pcap port, `filter` (100 rules, policy drop) at egress of the null port |
//! | (5)  | (4) with 10,000 classify rules |
//! | (6)  | (4) with connection tracking, on 100,000 flows |
//! | (1b) | (1) on the 100,000-flow traffic: the baseline of (6) |
//!
//! The generated rules do not match the traffic, except the last one of each
//! hook, so every packet goes through the whole rule set.

use crate::compare;
use crate::frame::FlowSpec;
use crate::rates;
use std::fmt::Write as _;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Classify rules of (4) and (6).
pub const CLASSIFY_RULES: usize = 1_000;
/// Classify rules of (5).
pub const CLASSIFY_RULES_LARGE: usize = 10_000;
/// Filter rules of (4), (5) and (6) (plus the `state` rule in (6)).
pub const FILTER_RULES: usize = 100;
/// Flows (and pcap frames) of (6) and (1b).
pub const CT_FLOWS: u32 = 100_000;
/// `conntrack_max` of (6): entries per worker.
pub const CT_MAX: u32 = 262_144;
/// Flows and frames of the other cases (as `compare`).
pub const FLOWS: u32 = 64;
pub const FRAMES: usize = 1024;
/// Mbufs of the pool: as `compare`, and for the 100k-frame pcap, which
/// net_pcap's `infinite_rx` holds in mbufs for the whole run.
pub const MBUFS: u32 = 16_383;
pub const MBUFS_LARGE: u32 = 262_143;
/// EAL memory of the large-pool runs, MiB.
pub const MEMORY_LARGE_MB: u32 = 2048;

const PCAP_PORT: &str = "net_pcap0";
const NULL_PORT: &str = "net_null0";

/// One measured setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Case {
    NoHooks,
    OtherPort,
    AcceptAll,
    Rules1k,
    Rules10k,
    Conntrack,
    NoHooksManyFlows,
}

impl Case {
    /// In table order.
    pub const ALL: [Case; 7] = [
        Case::NoHooks,
        Case::OtherPort,
        Case::AcceptAll,
        Case::Rules1k,
        Case::Rules10k,
        Case::Conntrack,
        Case::NoHooksManyFlows,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Case::NoHooks => "(1)",
            Case::OtherPort => "(2)",
            Case::AcceptAll => "(3)",
            Case::Rules1k => "(4)",
            Case::Rules10k => "(5)",
            Case::Conntrack => "(6)",
            Case::NoHooksManyFlows => "(1b)",
        }
    }

    /// The table's "hooks" column.
    pub fn describe(self) -> String {
        match self {
            Case::NoHooks => "none".into(),
            Case::OtherPort => format!(
                "`accept` at ingress of {NULL_PORT} and egress of {PCAP_PORT} only \
                 (not on the traffic's path)"
            ),
            Case::AcceptAll => format!("one `accept` at ingress of {PCAP_PORT}"),
            Case::Rules1k | Case::Rules10k => format!(
                "`classify` {} rules at ingress, `filter` {FILTER_RULES} rules at egress",
                thousands(self.classify_rules())
            ),
            Case::Conntrack => format!(
                "(4) with `stateful = true` (`state` rule + {FILTER_RULES} rules), \
                 {} flows",
                thousands(CT_FLOWS as usize)
            ),
            Case::NoHooksManyFlows => format!(
                "none, {} flows (baseline of (6))",
                thousands(CT_FLOWS as usize)
            ),
        }
    }

    /// Runs on the 100k-flow pcap with the large pool.
    pub fn many_flows(self) -> bool {
        matches!(self, Case::Conntrack | Case::NoHooksManyFlows)
    }

    /// The case its ratio is taken to.
    pub fn baseline(self) -> Case {
        if self.many_flows() {
            Case::NoHooksManyFlows
        } else {
            Case::NoHooks
        }
    }

    /// Hooks fastpath must report at start.
    pub fn hook_count(self) -> usize {
        match self {
            Case::NoHooks | Case::NoHooksManyFlows => 0,
            Case::AcceptAll => 1,
            _ => 2,
        }
    }

    fn classify_rules(self) -> usize {
        match self {
            Case::Rules10k => CLASSIFY_RULES_LARGE,
            _ => CLASSIFY_RULES,
        }
    }

    /// The target column.
    fn target(self) -> &'static str {
        match self {
            Case::NoHooks => "",
            Case::OtherPort => "= (1) within noise",
            Case::AcceptAll => "",
            Case::Rules1k => ">= 0.80",
            Case::Rules10k => "none (scale)",
            Case::Conntrack => ">= 0.60 of (1b)",
            Case::NoHooksManyFlows => "",
        }
    }

    /// File-name friendly.
    fn slug(self) -> &'static str {
        match self {
            Case::NoHooks => "1-none",
            Case::OtherPort => "2-other-port",
            Case::AcceptAll => "3-accept",
            Case::Rules1k => "4-rules-1k",
            Case::Rules10k => "5-rules-10k",
            Case::Conntrack => "6-conntrack",
            Case::NoHooksManyFlows => "1b-none-100k",
        }
    }

    /// EAL memory (MiB): 1024 as `compare`; 2048 for the large pool
    /// (262,143 mbufs do not fit in 1024 MiB with `--no-huge`).
    pub fn memory_mb(self) -> u32 {
        if self.many_flows() {
            MEMORY_LARGE_MB
        } else {
            1024
        }
    }

    fn mbufs(self) -> u32 {
        if self.many_flows() {
            MBUFS_LARGE
        } else {
            MBUFS
        }
    }

    /// `--flow-memo`: (6) sizes the memo as its connection table, one slot
    /// per connection it can hold ([`CT_MAX`]), as an operator expecting
    /// that many flows would; the default (4,096 slots) is bypassed at
    /// (6)'s 100,000 flows. The other cases keep the default.
    fn flow_memo(self) -> Option<u32> {
        (self == Case::Conntrack).then_some(CT_MAX)
    }
}

/// `10000` as `10,000`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The traffic of a case: 64-byte UDP frames to net_pcap0's MAC, and how
/// many frames the pcap holds.
pub fn traffic(many_flows: bool) -> (FlowSpec, usize) {
    let spec = FlowSpec {
        frame_size: 64,
        flows: if many_flows { CT_FLOWS } else { FLOWS },
        dst_mac: compare::PCAP0_MAC,
        ..Default::default()
    };
    let frames = if many_flows {
        CT_FLOWS as usize
    } else {
        FRAMES
    };
    (spec, frames)
}

/// One `[[hook.rule]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub src: Option<(Ipv4Addr, u8)>,
    pub dst: Option<(Ipv4Addr, u8)>,
    pub proto: Option<&'static str>,
    pub sport: Option<(u16, u16)>,
    pub dport: Option<(u16, u16)>,
    /// `state = ["established", "related"]`.
    pub established: bool,
    pub set_class: Option<u16>,
    pub set_mark: Option<u32>,
    /// `"drop"` (classify); `"accept"` or `"drop"` (filter).
    pub action: Option<&'static str>,
}

impl Rule {
    pub fn to_toml(&self) -> String {
        let mut s = String::from("[[hook.rule]]\n");
        let prefix = |(a, l): (Ipv4Addr, u8)| format!("\"{a}/{l}\"");
        let range = |(lo, hi): (u16, u16)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("\"{lo}-{hi}\"")
            }
        };
        if self.established {
            s.push_str("state = [\"established\", \"related\"]\n");
        }
        if let Some(p) = self.src {
            let _ = writeln!(s, "src = {}", prefix(p));
        }
        if let Some(p) = self.dst {
            let _ = writeln!(s, "dst = {}", prefix(p));
        }
        if let Some(p) = self.proto {
            let _ = writeln!(s, "proto = \"{p}\"");
        }
        if let Some(r) = self.sport {
            let _ = writeln!(s, "sport = {}", range(r));
        }
        if let Some(r) = self.dport {
            let _ = writeln!(s, "dport = {}", range(r));
        }
        if let Some(c) = self.set_class {
            let _ = writeln!(s, "set_class = {c}");
        }
        if let Some(m) = self.set_mark {
            let _ = writeln!(s, "set_mark = {m:#x}");
        }
        if let Some(a) = self.action {
            let _ = writeln!(s, "action = \"{a}\"");
        }
        s
    }
}

/// The rules' random numbers: one seeded generator, as in the tests. The
/// workload is the seed's stream under the `fastrand` that Cargo.lock pins;
/// bench/RESULTS.md records each hook's first rules with its figures.
type Rng = fastrand::Rng;

/// A prefix inside 172.16.0.0/12 of length 16..=32, host bits zero: the
/// traffic (198.18.0.0/15) never falls in one.
fn private_prefix(r: &mut Rng) -> (Ipv4Addr, u8) {
    let len = r.u8(16..=32);
    let base = u32::from(Ipv4Addr::new(172, 16, 0, 0));
    let a = base | (r.u32(..) & 0x000f_ffff);
    let mask = u32::MAX << (32 - u32::from(len));
    (Ipv4Addr::from(a & mask), len)
}

fn port_range(r: &mut Rng) -> (u16, u16) {
    let lo = r.u16(..);
    if r.bool() {
        (lo, lo)
    } else {
        (lo, lo.saturating_add(r.u16(1..=1024)))
    }
}

/// `n` rules that match no packet of the benchmark traffic: every one has a
/// destination in 172.16.0.0/12. Classify rules set a class, a mark or both
/// (one in 32 drops); filter rules accept or drop.
fn generated(seed: u64, n: usize, classify: bool) -> Vec<Rule> {
    let mut r = Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let mut rule = Rule {
                dst: Some(private_prefix(&mut r)),
                proto: Some(if r.bool() { "udp" } else { "tcp" }),
                ..Default::default()
            };
            if r.bool() {
                rule.src = Some(private_prefix(&mut r));
            }
            if r.u8(..5) < 3 {
                rule.dport = Some(port_range(&mut r));
            }
            if r.u8(..5) == 0 {
                rule.sport = Some(port_range(&mut r));
            }
            if classify {
                if r.u8(..32) == 0 {
                    rule.action = Some("drop");
                } else {
                    let which = r.u8(..3);
                    if which != 2 {
                        rule.set_class = Some(r.u16(2..16));
                    }
                    if which != 0 {
                        rule.set_mark = Some(r.u32(..) | 1);
                    }
                }
            } else {
                rule.action = Some(if r.bool() { "accept" } else { "drop" });
            }
            rule
        })
        .collect()
}

/// The traffic's destination /16.
fn traffic_prefix(spec: &FlowSpec) -> (Ipv4Addr, u8) {
    let [a, b, _, _] = spec.dst_ip;
    (Ipv4Addr::new(a, b, 0, 0), 16)
}

/// `n` classify rules: `n - 1` generated ones, then `udp` to the traffic's
/// /16 with `set_class = 1`.
pub fn classify_rules(n: usize, spec: &FlowSpec) -> Vec<Rule> {
    let mut v = generated(0xc1a5_51f7, n.saturating_sub(1), true);
    v.push(Rule {
        dst: Some(traffic_prefix(spec)),
        proto: Some("udp"),
        set_class: Some(1),
        ..Default::default()
    });
    v
}

/// Filter rules: (stateful: `state = established, related` accept first,
/// then) `n - 1` generated ones, then accept `udp` to the traffic's /16.
pub fn filter_rules(n: usize, spec: &FlowSpec, stateful: bool) -> Vec<Rule> {
    let mut v = Vec::new();
    if stateful {
        v.push(Rule {
            established: true,
            action: Some("accept"),
            ..Default::default()
        });
    }
    v.extend(generated(0xf1_17e4, n.saturating_sub(1), false));
    v.push(Rule {
        dst: Some(traffic_prefix(spec)),
        proto: Some("udp"),
        action: Some("accept"),
        ..Default::default()
    });
    v
}

fn hook_header(point: &str, port: &str, kind: &str, params: &[(&str, String)]) -> String {
    let mut s = format!("\n[[hook]]\npoint = \"{point}\"\nport = \"{port}\"\nkind = \"{kind}\"\n");
    for (k, v) in params {
        let _ = writeln!(s, "{k} = {v}");
    }
    s
}

/// The hooks of a case: header and rules of each `[[hook]]`.
fn hooks(case: Case) -> Vec<(String, Vec<Rule>)> {
    let (spec, _) = traffic(case.many_flows());
    match case {
        Case::NoHooks | Case::NoHooksManyFlows => Vec::new(),
        Case::OtherPort => vec![
            (hook_header("ingress", NULL_PORT, "accept", &[]), Vec::new()),
            (hook_header("egress", PCAP_PORT, "accept", &[]), Vec::new()),
        ],
        Case::AcceptAll => vec![(hook_header("ingress", PCAP_PORT, "accept", &[]), Vec::new())],
        Case::Rules1k | Case::Rules10k | Case::Conntrack => {
            let stateful = case == Case::Conntrack;
            let mut params = vec![("policy", "\"drop\"".to_string())];
            if stateful {
                params.push(("stateful", "true".into()));
                params.push(("conntrack_max", CT_MAX.to_string()));
            }
            vec![
                (
                    hook_header("ingress", PCAP_PORT, "classify", &[]),
                    classify_rules(case.classify_rules(), &spec),
                ),
                (
                    hook_header("egress", NULL_PORT, "filter", &params),
                    filter_rules(FILTER_RULES, &spec, stateful),
                ),
            ]
        }
    }
}

/// The `[[hook]]` sections of a case.
pub fn hooks_toml(case: Case) -> String {
    let mut s = String::new();
    for (header, rules) in hooks(case) {
        s.push_str(&header);
        for r in rules {
            s.push('\n');
            s.push_str(&r.to_toml());
        }
    }
    s
}

/// The whole fastpath config of a case: the router setup plus its hooks.
pub fn config(case: Case) -> String {
    let (spec, _) = traffic(case.many_flows());
    let mut s = compare::router_config(&spec);
    if case.hook_count() > 0 {
        let _ = write!(s, "\n# fastpath-bench hooks, case {}", case.label());
        s.push_str(&hooks_toml(case));
    }
    s
}

/// The hooks of a case for the results file: each hook's first three rules,
/// a count of the rest, and its last rule.
pub fn collapsed_hooks(case: Case) -> String {
    let mut s = String::new();
    for (header, rules) in hooks(case) {
        s.push_str(&header);
        let n = rules.len();
        for (i, r) in rules.iter().enumerate() {
            if i < 3 || i + 1 == n {
                s.push('\n');
                s.push_str(&r.to_toml());
            } else if i == 3 {
                let _ = write!(
                    s,
                    "\n# ... {} more generated rules (none matches the traffic) ...\n",
                    thousands(n - 4)
                );
            }
        }
    }
    s.trim_start().to_string()
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub rounds: usize,
    /// Seconds of steady state measured per run (one warm-up second is added).
    pub seconds: u32,
    pub fastpath: PathBuf,
    pub workdir: PathBuf,
    /// Use hugepages (else `--no-huge`).
    pub hugepages: bool,
}

/// True when hugepages are mounted with enough free for every case
/// ([`MEMORY_LARGE_MB`] and some margin); else the runs use `--no-huge`.
pub fn hugepages_available() -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return false;
    };
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let free_kb = field("HugePages_Free:") * field("Hugepagesize:");
    compare::hugepages_available() && free_kb >= (u64::from(MEMORY_LARGE_MB) + 76) * 1024
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

fn fastpath_cmd(o: &Options, p: &Prepared) -> Command {
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
    let mem = p.case.memory_mb().to_string();
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
        .arg(p.case.mbufs().to_string())
        .arg("--duration")
        .arg((o.seconds + 1).to_string());
    if let Some(slots) = p.case.flow_memo() {
        c.arg("--flow-memo").arg(slots.to_string());
    }
    c
}

/// The command as text, the temporary directory shown as `$TMP`.
fn show(c: &Command) -> String {
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_str().unwrap_or("/tmp");
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy().replace(tmp, "$TMP"));
    }
    s
}

/// Run fastpath to its `--duration` (SIGINT if it overstays by a minute);
/// stdout and stderr.
fn run_fastpath(mut c: Command, seconds: u32) -> Result<(String, String), String> {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", c.get_program().to_string_lossy()))?;
    let mut out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let mut err = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(u64::from(seconds) + 61);
    let mut overstayed = false;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if !overstayed && Instant::now() > deadline => {
                overstayed = true;
                compare::send_sigint(child.id());
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if overstayed {
        return Err(format!(
            "fastpath did not stop after --duration; interrupted:\n{stderr}"
        ));
    }
    if !status.success() {
        return Err(format!(
            "fastpath failed ({status}):\n{}",
            stderr.trim_end()
        ));
    }
    Ok((stdout, stderr))
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
        if case == Case::OtherPort && seen > 0 {
            return Err(format!(
                "hook {} is off the traffic's path but saw {seen} packets",
                h.head
            ));
        }
        if case != Case::OtherPort && seen == 0 {
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
            if n < u64::from(CT_FLOWS) {
                eprintln!(
                    "warning: {}: {n} connection-tracking entries at exit, {CT_FLOWS} flows sent",
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
    /// In [`Case::ALL`] order.
    pub cases: Vec<CaseResult>,
    /// fastpath command of (4) and (6).
    pub commands: Vec<String>,
}

impl Summary {
    fn result(&self, c: Case) -> &CaseResult {
        self.cases.iter().find(|r| r.case == c).expect("every case")
    }

    /// Successful rates of `c`.
    pub fn rates(&self, c: Case) -> Vec<f64> {
        self.result(c).pps.iter().flatten().copied().collect()
    }

    /// Per-round ratios of `c` to `base` (rounds where both ran).
    pub fn ratios(&self, c: Case, base: Case) -> Vec<f64> {
        let (a, b) = (&self.result(c).pps, &self.result(base).pps);
        a.iter()
            .zip(b)
            .filter_map(|(x, y)| Some(x.as_ref()? / y.as_ref()?))
            .filter(|r| r.is_finite())
            .collect()
    }

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
        let v = self.rates(Case::NoHooks);
        match rates::median(&v) {
            Some(m) if m > 0.0 => {
                let (lo, hi) = min_max(&v);
                ((hi - lo) / 2.0 / m).max(0.02)
            }
            _ => 0.02,
        }
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// Run every case `o.rounds` times, rotating the order each round; a case
/// whose run fails is not run again. `progress` hears a line per run.
pub fn run(o: &Options, mut progress: impl FnMut(&str)) -> Result<Summary, String> {
    std::fs::create_dir_all(&o.workdir).map_err(|e| format!("{}: {e}", o.workdir.display()))?;
    let mut prepared = Vec::new();
    for many in [false, true] {
        let (spec, frames) = traffic(many);
        spec.validate()?;
        let pcap = o
            .workdir
            .join(format!("udp-64B-{}flows-{frames}.pcap", spec.flows));
        let f = std::fs::File::create(&pcap).map_err(|e| format!("{}: {e}", pcap.display()))?;
        fastpath::pcap::write(std::io::BufWriter::new(f), &spec.frames(frames))
            .map_err(|e| format!("{}: {e}", pcap.display()))?;
        for case in Case::ALL.into_iter().filter(|c| c.many_flows() == many) {
            let path = o.workdir.join(format!("hooks-{}.toml", case.slug()));
            std::fs::write(&path, config(case)).map_err(|e| format!("{}: {e}", path.display()))?;
            prepared.push(Prepared {
                case,
                config: path,
                pcap: pcap.clone(),
            });
        }
    }
    prepared.sort_by_key(|p| p.case);
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
            let outcome = run_fastpath(fastpath_cmd(o, p), o.seconds).and_then(|(out, err)| {
                let note = check_run(p.case, &out, &err)?;
                let pps = rates::steady_median(&rates::fastpath_tx_pps(&out, 1), 1)
                    .ok_or_else(|| "fastpath printed no rate samples".to_string())?;
                let ct = hook_report(&out).iter().find_map(|h| h.get("ct_entries"));
                Ok((pps, note, ct))
            });
            let head = format!(
                "round {}/{} [{}/{n}] {:<4}",
                round + 1,
                o.rounds,
                k + 1,
                p.case.label()
            );
            match outcome {
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
    let cmd = |c: Case| {
        let p = prepared.iter().find(|p| p.case == c).expect("every case");
        show(&fastpath_cmd(o, p))
    };
    Ok(Summary {
        rounds: o.rounds,
        cases: results,
        commands: vec![cmd(Case::Rules1k), cmd(Case::Conntrack)],
    })
}

/// Whether the targets hold: (2) within noise of (1), (4) >= 0.8 of (1),
/// (6) >= 0.6 of (1b). None where a case did not run.
pub fn targets(s: &Summary) -> Vec<(String, Option<bool>)> {
    let noise = s.noise();
    let r2 = s.median_ratio(Case::OtherPort);
    let r4 = s.median_ratio(Case::Rules1k);
    let r6 = s.median_ratio(Case::Conntrack);
    let f = |r: Option<f64>| r.map(|r| format!("{r:.3}")).unwrap_or_else(|| "n/a".into());
    vec![
        (
            format!(
                "(1) and (2) equal within noise (an empty hook point costs nothing): \
                 (2)/(1) = {}, noise ±{:.1}% (half the min–max spread of (1), at least 2%)",
                f(r2),
                noise * 100.0
            ),
            r2.map(|r| (r - 1.0).abs() <= noise),
        ),
        (
            format!("(4) >= 0.80 of (1): {}", f(r4)),
            r4.map(|r| r >= 0.8),
        ),
        (
            format!("(6) >= 0.60 of (1b): {}", f(r6)),
            r6.map(|r| r >= 0.6),
        ),
    ]
}

/// A markdown section for `bench/RESULTS.md`.
pub fn markdown(s: &Summary, machine: &str, command: &str) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "## Hooks (issue: hooks): pcap replay -> classify -> route -> filter -> null, \
         64-byte frames\n"
    );
    let _ = writeln!(m, "{machine}\n");
    let _ = writeln!(m, "```\n{command}\n```\n");
    let _ = writeln!(
        m,
        "Mpps on the router's pcap replay (net_pcap0) -> null (net_null0) setup, one \
         forwarding lcore; {} rounds, each running every case once in an order rotated per \
         round; median over rounds. The ratio is the median of the per-round ratios to (1) \
         (for (6): to (1b), the same traffic without hooks).\n",
        s.rounds
    );
    let _ = writeln!(
        m,
        "| case | hooks | Mpps median | min–max | ratio to (1) | target |"
    );
    let _ = writeln!(m, "|---|---|---:|---:|---:|---|");
    for r in &s.cases {
        let c = r.case;
        let v = s.rates(c);
        let (median, range) = match rates::median(&v) {
            Some(med) => {
                let (lo, hi) = min_max(&v);
                (
                    format!("{:.2}", med / 1e6),
                    format!("{:.2}–{:.2}", lo / 1e6, hi / 1e6),
                )
            }
            None => ("failed".into(), "".into()),
        };
        let ratio = match c {
            Case::NoHooks => "1.00".to_string(),
            Case::NoHooksManyFlows => match rates::median(&s.ratios(c, Case::NoHooks)) {
                Some(x) => format!("{x:.3}"),
                None => "n/a".into(),
            },
            _ => match s.median_ratio(c) {
                Some(x) if c == Case::Conntrack => format!("**{x:.3}** (to (1b))"),
                Some(x) => format!("**{x:.3}**"),
                None => "n/a".into(),
            },
        };
        let mut hooks = c.describe();
        if let Some(ct) = rates::median(&r.ct_entries.iter().map(|&x| x as f64).collect::<Vec<_>>())
        {
            let _ = write!(hooks, "; {} tracked at exit", thousands(ct as usize));
        }
        let _ = writeln!(
            m,
            "| {} | {hooks} | {median} | {range} | {ratio} | {} |",
            c.label(),
            c.target()
        );
    }
    let _ = writeln!(m, "\nTargets:\n");
    for (line, ok) in targets(s) {
        let verdict = match ok {
            Some(true) => "holds",
            Some(false) => "does not hold",
            None => "not measured",
        };
        let _ = writeln!(m, "- {line}: **{verdict}**.");
    }
    let errors = s.errors();
    if !errors.is_empty() {
        let _ = writeln!(m, "\nFailed cases:\n");
        for (c, e) in errors {
            let first = e
                .lines()
                .find(|l| l.contains("error"))
                .or_else(|| e.lines().next())
                .unwrap_or("");
            let _ = writeln!(m, "- {}: {}", c.label(), first.trim());
        }
    }
    let _ = writeln!(
        m,
        "\nEvery rule but the last of each hook has a destination in 172.16.0.0/12 (generated, \
         deterministic: prefixes of length 16-32, udp or tcp, some port ranges), so the \
         traffic (UDP from 198.18.0.0/16 to 198.19.0.1) goes through the whole rule set and \
         matches the last rule: classify sets class 1, the filter (policy drop) accepts. Each \
         run checks that fastpath logged every hook at start, that no hook dropped a packet, \
         and that every packet matched a classify rule. In (6) the traffic is one-way, so no \
         flow sees a reply: every packet is `new` to the connection table (the `established` \
         rule never matches); it is looked up, goes through the rules, and refreshes its \
         entry: the stateful filter's worst case. (6) runs with `--flow-memo {CT_MAX}` (a \
         memo slot per connection the table holds; the default 4,096 slots are bypassed at \
         100,000 flows): a packet of a flow the memo holds skips the rules, its entry is \
         confirmed and its timer restarted.\n"
    );
    let _ = writeln!(
        m,
        "The hooks of (4) ((5): 10,000 classify rules; (6): `stateful = true`, \
         `conntrack_max = {CT_MAX}`, and first the rule `state = [\"established\", \
         \"related\"]`, `action = \"accept\"`), after the router config of \
         `fastpath-bench compare --router`:\n\n```toml\n{}```\n",
        collapsed_hooks(Case::Rules1k)
    );
    let _ = writeln!(
        m,
        "fastpath commands of (4) and of (6) (whose 100,000-frame pcap net_pcap holds in \
         mbufs, hence the larger pool and EAL memory; (1b) runs with the same):\n\n```\n{}\n```",
        s.commands.join("\n")
    );
    m
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
    use fastpath::config::RouterConfig;

    /// A traffic packet's 5-tuple.
    struct Pkt {
        src: u32,
        dst: u32,
        sport: u16,
        dport: u16,
    }

    fn packets(many: bool) -> Vec<Pkt> {
        let (spec, _) = traffic(many);
        let n = if many { spec.flows as usize } else { FRAMES };
        (0..n as u64)
            .map(|s| {
                let f = spec.frame(s);
                assert_eq!(f[23], 17, "UDP");
                let be32 = |i: usize| u32::from_be_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
                let be16 = |i: usize| u16::from_be_bytes([f[i], f[i + 1]]);
                Pkt {
                    src: be32(26),
                    dst: be32(30),
                    sport: be16(34),
                    dport: be16(36),
                }
            })
            .collect()
    }

    /// Does a rule, as parsed back from the config, match `p` (UDP, class
    /// 1, mark 0, state new)?
    fn matches(get: &dyn Fn(&str) -> Option<String>, keys: &[String], p: &Pkt) -> bool {
        let prefix = |s: String, a: u32| {
            let (addr, len) = s.split_once('/').expect("prefix with length");
            let addr: Ipv4Addr = addr.parse().expect("address");
            let len: u32 = len.parse().expect("length");
            assert!(len <= 32);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            assert_eq!(u32::from(addr) & !mask, 0, "host bits in {s}");
            a & mask == u32::from(addr)
        };
        let range = |s: String, v: u16| {
            let (lo, hi) = match s.split_once('-') {
                Some((lo, hi)) => (lo.parse().unwrap(), hi.parse().unwrap()),
                None => (s.parse::<u16>().unwrap(), s.parse::<u16>().unwrap()),
            };
            assert!(lo <= hi, "range {s}");
            (lo..=hi).contains(&v)
        };
        for k in keys {
            let v = get(k).expect("key");
            let ok = match k.as_str() {
                "src" => prefix(v, p.src),
                "dst" => prefix(v, p.dst),
                "proto" => v == "udp",
                "sport" => range(v, p.sport),
                "dport" => range(v, p.dport),
                "state" => v.contains("\"new\""),
                "set_class" | "set_mark" | "action" => true,
                other => panic!("unexpected key {other}"),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn parse(case: Case) -> RouterConfig {
        RouterConfig::parse(Path::new("hooks.toml"), &config(case))
            .unwrap_or_else(|e| panic!("case {}: {e}", case.label()))
    }

    #[test]
    fn configs_parse_with_the_expected_hooks_and_rule_counts() {
        for case in Case::ALL {
            let cfg = parse(case);
            assert_eq!(cfg.hooks.len(), case.hook_count(), "{}", case.label());
            assert_eq!(cfg.ports.len(), 2);
            let kinds: Vec<(&str, String, usize)> = cfg
                .hooks
                .iter()
                .map(|h| (h.kind.as_str(), h.port.to_string(), h.args.rules.len()))
                .collect();
            let expected: Vec<(&str, String, usize)> = match case {
                Case::NoHooks | Case::NoHooksManyFlows => vec![],
                Case::OtherPort => vec![
                    ("accept", NULL_PORT.into(), 0),
                    ("accept", PCAP_PORT.into(), 0),
                ],
                Case::AcceptAll => vec![("accept", PCAP_PORT.into(), 0)],
                Case::Rules1k => vec![
                    ("classify", PCAP_PORT.into(), 1_000),
                    ("filter", NULL_PORT.into(), 100),
                ],
                Case::Rules10k => vec![
                    ("classify", PCAP_PORT.into(), 10_000),
                    ("filter", NULL_PORT.into(), 100),
                ],
                Case::Conntrack => vec![
                    ("classify", PCAP_PORT.into(), 1_000),
                    ("filter", NULL_PORT.into(), 101),
                ],
            };
            assert_eq!(kinds, expected, "{}", case.label());
            for h in &cfg.hooks {
                if h.kind == "filter" {
                    let p = &h.args.params;
                    assert_eq!(p.get("policy").and_then(|v| v.as_str()), Some("drop"));
                    let stateful = case == Case::Conntrack;
                    assert_eq!(
                        p.get("stateful").and_then(|v| v.as_bool()),
                        stateful.then_some(true)
                    );
                    assert_eq!(
                        p.get("conntrack_max").and_then(|v| v.as_integer()),
                        stateful.then_some(i64::from(CT_MAX))
                    );
                } else {
                    assert!(h.args.params.is_empty());
                }
                let expected_point = match (h.kind.as_str(), h.port.to_string().as_str()) {
                    ("classify", _) => "ingress",
                    ("filter", _) => "egress",
                    (_, p) if case == Case::OtherPort && p == PCAP_PORT => "egress",
                    _ => "ingress",
                };
                assert_eq!(h.point.name(), expected_point);
            }
        }
    }

    #[test]
    fn only_the_last_rule_matches_the_traffic() {
        for case in [Case::Rules1k, Case::Rules10k, Case::Conntrack] {
            let cfg = parse(case);
            let pkts = packets(case.many_flows());
            for h in &cfg.hooks {
                let n = h.args.rules.len();
                for (i, rule) in h.args.rules.iter().enumerate() {
                    let get = |k: &str| {
                        rule.get(k)
                            .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
                    };
                    let keys: Vec<String> = rule.keys().cloned().collect();
                    let last = i + 1 == n;
                    // The generated rules never match: checking a few
                    // packets is enough; the last must match them all.
                    let sample = if last { &pkts[..] } else { &pkts[..4] };
                    for p in sample {
                        assert_eq!(
                            matches(&get, &keys, p),
                            last,
                            "{} {} rule {i}",
                            case.label(),
                            h.kind
                        );
                    }
                    if !last && !keys.iter().any(|k| k == "state") {
                        // Non-matching by construction: a destination in 172.16/12.
                        let dst = get("dst").expect("generated rules have a dst");
                        assert!(dst.starts_with("172."), "{dst}");
                    }
                }
                let last = h.args.rules.last().expect("rules");
                if h.kind == "classify" {
                    assert_eq!(last.get("set_class").and_then(|v| v.as_integer()), Some(1));
                } else {
                    assert_eq!(last.get("action").and_then(|v| v.as_str()), Some("accept"));
                }
            }
        }
    }

    #[test]
    fn generated_rules_are_varied_and_deterministic() {
        let (spec, _) = traffic(false);
        let a = classify_rules(CLASSIFY_RULES_LARGE, &spec);
        assert_eq!(a, classify_rules(CLASSIFY_RULES_LARGE, &spec));
        // (4)'s rules are the first of (5)'s.
        let b = classify_rules(CLASSIFY_RULES, &spec);
        assert_eq!(a[..CLASSIFY_RULES - 1], b[..CLASSIFY_RULES - 1]);
        let count = |f: &dyn Fn(&Rule) -> bool| b.iter().filter(|r| f(r)).count();
        assert!(count(&|r| r.action == Some("drop")) > 5);
        assert!(count(&|r| r.action == Some("drop")) < 100);
        assert!(count(&|r| r.set_class.is_some()) > 300);
        assert!(count(&|r| r.set_mark.is_some()) > 300);
        assert!(count(&|r| r.proto == Some("tcp")) > 300);
        assert!(count(&|r| r.dport.is_some_and(|(lo, hi)| lo < hi)) > 100);
        let lens: std::collections::BTreeSet<u8> =
            b.iter().filter_map(|r| r.dst.map(|d| d.1)).collect();
        assert_eq!(lens.len(), 17, "{lens:?}");
        let f = filter_rules(FILTER_RULES, &spec, false);
        assert!(f.iter().filter(|r| r.action == Some("drop")).count() > 20);
        assert!(f.iter().filter(|r| r.action == Some("accept")).count() > 20);
        assert!(filter_rules(FILTER_RULES, &spec, true)[0].established);
    }

    #[test]
    fn collapsed_hooks_show_three_rules_and_the_count() {
        let c = collapsed_hooks(Case::Rules1k);
        assert!(c.contains("# ... 996 more generated rules"), "{c}");
        assert!(c.contains("# ... 96 more generated rules"), "{c}");
        assert_eq!(c.matches("[[hook.rule]]").count(), 8, "{c}");
        assert!(c.contains("set_class = 1\n"), "{c}");
        assert!(c.starts_with("[[hook]]"), "{c}");
    }

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
        assert_eq!(check_run(Case::Rules1k, out, err).unwrap(), "ct_entries 5");
        assert!(check_run(Case::Rules1k, out, "").is_err());
        assert!(
            check_run(Case::OtherPort, out, err).is_err(),
            "hooks saw traffic"
        );
        let bad = out.replace("matched 10", "matched 3");
        assert!(check_run(Case::Rules1k, &bad, err).is_err());
    }

    #[test]
    fn markdown_reports_ratios_and_targets() {
        let mk = |c: Case, v: &[f64]| CaseResult {
            case: c,
            pps: v.iter().map(|&x| Some(x)).collect(),
            ct_entries: if c == Case::Conntrack {
                vec![100_000]
            } else {
                vec![]
            },
            error: None,
        };
        let s = Summary {
            rounds: 3,
            cases: vec![
                mk(Case::NoHooks, &[10.0, 10.0, 10.0]),
                mk(Case::OtherPort, &[10.1, 9.95, 10.0]),
                mk(Case::AcceptAll, &[9.0, 9.0, 9.0]),
                mk(Case::Rules1k, &[8.5, 8.0, 8.2]),
                mk(Case::Rules10k, &[7.0, 7.0, 7.0]),
                mk(Case::Conntrack, &[4.0, 5.0, 5.0]),
                mk(Case::NoHooksManyFlows, &[9.0, 9.0, 9.0]),
            ],
            commands: vec!["fastpath a".into(), "fastpath b".into()],
        };
        assert!((s.median_ratio(Case::Rules1k).unwrap() - 0.82).abs() < 1e-9);
        assert!((s.median_ratio(Case::Conntrack).unwrap() - 5.0 / 9.0).abs() < 1e-9);
        let md = markdown(&s, "machine", "fastpath-bench hooks");
        assert!(md.contains("| (4) |"), "{md}");
        assert!(md.contains("**0.820**"), "{md}");
        assert!(md.contains("(2)/(1) = 1.000"), "{md}");
        let t = targets(&s);
        assert_eq!(
            t.iter().map(|x| x.1).collect::<Vec<_>>(),
            [Some(true), Some(true), Some(false)]
        );
        assert!(md.contains("100,000 tracked at exit"), "{md}");
        assert!(md.contains("**does not hold**"), "{md}");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(1), "1");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(999), "999");
    }
}
