//! Side by side, in one run, as ratios: the same pcap replayed from memory
//! (`net_pcap0,infinite_rx=1`) into a null sink (`net_null0,no-rx=1`)
//! through `dpdk-testpmd --forward-mode=io` (the I/O floor) and through
//! fastpath, alternated, medians compared; one such pair per row of the
//! table (router mode: 64 flows, IMIX, 100,000 flows, 2 workers).

use crate::frame::FlowSpec;
use crate::pcap_cache::PcapTraffic;
use crate::pcap_run::{self, Stop};
use crate::rates;
use crate::traffic::FrameSizes;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use crate::compare_markdown::markdown;

/// Flows of the many-flows row.
pub const MANY_FLOWS: u32 = 100_000;
/// Frames of the pcaps with few flows; the IMIX pcap holds 1,152 (a multiple
/// of the 12-frame pattern and of 64 flows).
pub const FRAMES: usize = 1024;
pub const IMIX_FRAMES: usize = 1152;

/// A row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowKind {
    /// `--size` and `--flows` (64 bytes, 64 flows), one worker.
    Base,
    /// IMIX frames, `--flows`.
    Imix,
    /// [`MANY_FLOWS`] flows of `--size` frames, one frame per flow.
    ManyFlows,
    /// As [`RowKind::Base`] on two worker lcores, one RX queue each.
    TwoWorkers,
}

impl RowKind {
    /// Every row, in table order (router mode's default).
    pub const ALL: [RowKind; 4] = [
        RowKind::Base,
        RowKind::Imix,
        RowKind::ManyFlows,
        RowKind::TwoWorkers,
    ];

    /// The name `--rows` takes.
    pub fn id(self) -> &'static str {
        match self {
            RowKind::Base => "base",
            RowKind::Imix => "imix",
            RowKind::ManyFlows => "100k",
            RowKind::TwoWorkers => "2workers",
        }
    }

    pub fn parse(s: &str) -> Result<RowKind, String> {
        RowKind::ALL
            .into_iter()
            .find(|r| r.id().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("row '{s}': expected one of base, imix, 100k, 2workers"))
    }
}

/// A row: its traffic and how many worker lcores forward it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub kind: RowKind,
    pub traffic: PcapTraffic,
    pub workers: usize,
}

impl Row {
    /// The row `kind`, its traffic derived from `base` (size, flows, MACs).
    pub fn new(kind: RowKind, base: FlowSpec) -> Row {
        let (traffic, workers) = match kind {
            RowKind::Base => (PcapTraffic::fixed(base, FRAMES), 1),
            RowKind::Imix => (
                PcapTraffic {
                    spec: base,
                    sizes: FrameSizes::Imix,
                    frames: IMIX_FRAMES,
                },
                1,
            ),
            RowKind::ManyFlows => (
                PcapTraffic::fixed(
                    FlowSpec {
                        flows: MANY_FLOWS,
                        ..base
                    },
                    MANY_FLOWS as usize,
                ),
                1,
            ),
            RowKind::TwoWorkers => (PcapTraffic::fixed(base, FRAMES), 2),
        };
        Row {
            kind,
            traffic,
            workers,
        }
    }

    /// The table's row name: `64 flows, 64-byte frames, 1 worker`.
    pub fn label(&self) -> String {
        format!(
            "{} flows, {}, {} worker{}",
            thousands(self.traffic.spec.flows),
            self.traffic.describe_sizes(),
            self.workers,
            if self.workers == 1 { "" } else { "s" }
        )
    }

    /// What the row's setup differs in.
    pub fn note(&self) -> String {
        let mut v = Vec::new();
        if self.traffic.mbufs() > crate::pcap_cache::MBUFS_SMALL {
            v.push(format!(
                "{} frames held in mbufs: pool of {}, -m {}",
                thousands(self.traffic.frames as u32),
                thousands(self.traffic.mbufs()),
                self.traffic.memory_mb()
            ));
        }
        if self.workers > 1 {
            v.push(format!(
                "{} RX queues on net_pcap0 (one pcap each, even / odd flows), one per worker; \
                 `--lcores {}`: the workers and the main lcore share this machine's 2 cores",
                self.workers,
                self.lcores()
            ));
        }
        v.join("; ")
    }

    /// The lcore map: `-l 0-1` for one worker (main lcore on core 0, the
    /// worker on core 1); for two, worker 1 on core 0 beside the main lcore
    /// (which sleeps between its once-a-second statistics) and worker 2 on
    /// core 1.
    fn lcores(&self) -> &'static str {
        if self.workers > 1 {
            "0@0,1@0,2@1"
        } else {
            "0-1"
        }
    }
}

/// `100000` as `100,000`.
pub fn thousands(n: u32) -> String {
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

/// What to compare and how long.
#[derive(Clone, Debug)]
pub struct Options {
    pub rounds: usize,
    /// Seconds of steady state measured per run (one warm-up second is added).
    pub seconds: u32,
    pub rows: Vec<Row>,
    /// fastpath as the IPv4 router ([`router_config`]), else plain forwarding.
    pub router: bool,
    pub fastpath: PathBuf,
    pub testpmd: PathBuf,
    /// Router configs of the run.
    pub workdir: PathBuf,
    /// The pcaps, kept between runs.
    pub cache_dir: PathBuf,
    /// Use hugepages (else `--no-huge`).
    pub hugepages: bool,
    /// fastpath runs with `--stage-cycles` per row after the rounds, for the
    /// cycles-per-stage table (0: none).
    pub stage_runs: usize,
    /// Other testpmd forwarding engines to measure on the first row, for
    /// scale (e.g. macswap, 5tswap, csum), `stage_runs` times each.
    pub reference_modes: Vec<String>,
}

/// net_pcap's MAC for port 0 (`02:70:63:61:70:<port id>`, "pcap"): router-mode
/// frames are addressed to it.
pub const PCAP0_MAC: [u8; 6] = [0x02, 0x70, 0x63, 0x61, 0x70, 0x00];

/// The router config of the benchmark: port 0 (pcap replay) receives, a
/// static route sends the flows' destinations out of port 1 (null) to a
/// static neighbour, so every packet takes the full l2 -> ip -> neigh path.
pub fn router_config(spec: &FlowSpec) -> String {
    router_config_queues(spec, 1)
}

/// [`router_config`] with `rx_queues` on port 0 (more than one: one per
/// worker, by fastpath's default queue placement).
pub fn router_config_queues(spec: &FlowSpec, rx_queues: usize) -> String {
    let [a, b, _, _] = spec.dst_ip;
    let queues = if rx_queues > 1 {
        format!("rx_queues = {rx_queues}\n")
    } else {
        String::new()
    };
    format!(
        "# fastpath-bench router setup: pcap replay -> route -> null\n\
         [[port]]\ndevice = \"net_pcap0\"\naddress = \"10.255.0.1/24\"\n{queues}\n\
         [[port]]\ndevice = \"net_null0\"\naddress = \"10.255.1.1/24\"\n\n\
         [[route]]\nprefix = \"{a}.{b}.0.0/16\"\nvia = \"10.255.1.2\"\n\n\
         [[neighbour]]\naddress = \"10.255.1.2\"\nmac = \"02:00:00:00:00:99\"\n"
    )
}

/// Median cycles per packet of each pipeline stage over the `--stage-cycles`
/// runs, in fastpath's order, its names.
pub type StageCycles = Vec<(String, f64)>;

/// One round of a row: both tools' median TX rate.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Round {
    pub testpmd_pps: f64,
    pub fastpath_pps: f64,
}

/// The outcome of one row, with its exact commands.
#[derive(Clone, Debug)]
pub struct RowResult {
    pub row: Row,
    /// Rounds where both tools ran.
    pub rounds: Vec<Round>,
    pub testpmd_cmd: String,
    pub fastpath_cmd: String,
    /// Cycles per packet per stage (router mode, `stage_runs` > 0).
    pub stage_cycles: Option<StageCycles>,
    /// The least share of received packets fastpath's fast lane routed in
    /// any round, where fastpath reports one.
    pub fast_lane: Option<f64>,
    /// First failure; the row is not run again after it.
    pub error: Option<String>,
}

impl RowResult {
    pub fn ratios(&self) -> Vec<f64> {
        self.rounds
            .iter()
            .map(|r| r.fastpath_pps / r.testpmd_pps)
            .filter(|r| r.is_finite())
            .collect()
    }

    pub fn median_ratio(&self) -> Option<f64> {
        rates::median(&self.ratios())
    }
}

/// The outcome.
#[derive(Clone, Debug)]
pub struct Summary {
    /// In the order of [`Options::rows`].
    pub rows: Vec<RowResult>,
    /// The `--stage-cycles` command of the first row.
    pub stage_cmd: Option<String>,
    /// Median TX rate of each reference testpmd engine on the first row.
    pub reference: Vec<(String, f64)>,
    pub rounds: usize,
    pub stage_runs: usize,
}

impl Summary {
    /// Rows that failed, with their first error.
    pub fn errors(&self) -> Vec<(&Row, &str)> {
        self.rows
            .iter()
            .filter_map(|r| Some((&r.row, r.error.as_deref()?)))
            .collect()
    }
}

/// True when enough free hugepages are mounted for a 1 GiB EAL.
pub fn hugepages_available() -> bool {
    hugepages_free_mb(1100)
}

/// True when hugetlbfs is mounted with at least `mb` MiB free.
pub fn hugepages_free_mb(mb: u64) -> bool {
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
    let mounted = std::fs::read_to_string("/proc/mounts")
        .map(|m| m.lines().any(|l| l.contains(" hugetlbfs ")))
        .unwrap_or(false);
    mounted && free_kb >= mb * 1024
}

/// A row ready to run: its pcaps (one per RX queue) and router config.
struct Prepared {
    row: Row,
    pcaps: Vec<PathBuf>,
    config: Option<PathBuf>,
}

fn eal_args(o: &Options, p: &Prepared, prefix: &str) -> Vec<String> {
    let lcores = if p.row.workers > 1 { "--lcores" } else { "-l" };
    let mem = p.row.traffic.memory_mb().to_string();
    let mut v: Vec<String> = vec![
        lcores.into(),
        p.row.lcores().into(),
        "--no-pci".into(),
        "--log-level".into(),
        "lib.eal:error".into(),
        "--file-prefix".into(),
        format!("{prefix}-{}", std::process::id()),
    ];
    if o.hugepages {
        // Unlinked right after mapping: no stale files to hold pages afterwards.
        v.extend(["-m".into(), mem, "--huge-unlink".into()]);
    } else {
        v.extend(["--no-huge".into(), "-m".into(), mem]);
    }
    let rx: String = p
        .pcaps
        .iter()
        .map(|f| format!("rx_pcap={},", f.display()))
        .collect();
    v.extend([
        "--vdev".into(),
        format!("net_pcap0,{rx}infinite_rx=1"),
        "--vdev".into(),
        "net_null0,no-rx=1".into(),
    ]);
    v
}

fn testpmd_cmd(o: &Options, p: &Prepared, mode: &str) -> Command {
    let mut c = Command::new(&o.testpmd);
    c.args(eal_args(o, p, "cmp-testpmd"))
        .arg("--")
        .arg(format!("--forward-mode={mode}"))
        .arg(format!("--nb-cores={}", p.row.workers));
    if p.row.workers > 1 {
        c.arg(format!("--rxq={}", p.row.workers))
            .arg(format!("--txq={}", p.row.workers));
    }
    c.args(["--stats-period", "1", "--total-num-mbufs"])
        .arg(p.row.traffic.mbufs().to_string())
        .arg("-a");
    c
}

fn fastpath_cmd(o: &Options, p: &Prepared, stage_cycles: bool) -> Command {
    let mut c = Command::new(&o.fastpath);
    c.args(eal_args(o, p, "cmp-fastpath")).arg("--");
    match &p.config {
        Some(cfg) => {
            c.arg("--config").arg(cfg);
        }
        None if p.row.workers > 1 => {
            c.arg("--rx-queues").arg(p.row.workers.to_string());
        }
        None => {}
    }
    c.args(["--stats-period", "1", "--mbufs"])
        .arg(p.row.traffic.mbufs().to_string())
        .arg("--duration")
        .arg((o.seconds + 1).to_string());
    if stage_cycles {
        c.arg("--stage-cycles");
    }
    c
}

/// The command as text: the temporary folder as `$TMP`, the cache as `$CACHE`.
pub fn show(c: &Command) -> String {
    show_with(c, None)
}

/// [`show`], also writing `cache` as `$CACHE`.
pub fn show_with(c: &Command, cache: Option<&Path>) -> String {
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_str().unwrap_or("/tmp");
    let cache = cache.and_then(|c| c.to_str()).filter(|c| !c.is_empty());
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        let mut a = a.to_string_lossy().into_owned();
        if let Some(dir) = cache {
            a = a.replace(dir, "$CACHE");
        }
        s.push(' ');
        s.push_str(&a.replace(tmp, "$TMP"));
    }
    s
}

/// SIGINT to a child we started and have not reaped (testpmd stops on it).
pub fn send_sigint(pid: u32) {
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
}

fn prepare(o: &Options) -> Result<Vec<Prepared>, String> {
    std::fs::create_dir_all(&o.workdir).map_err(|e| format!("{}: {e}", o.workdir.display()))?;
    o.rows
        .iter()
        .map(|&row| {
            let pcaps = row.traffic.pcaps(&o.cache_dir, row.workers)?;
            let config = if o.router {
                let path = o.workdir.join(format!("router-{}.toml", row.kind.id()));
                let cfg = router_config_queues(&row.traffic.spec, row.workers);
                std::fs::write(&path, cfg).map_err(|e| format!("{}: {e}", path.display()))?;
                Some(path)
            } else {
                None
            };
            Ok(Prepared { row, pcaps, config })
        })
        .collect()
}

/// testpmd's median TX rate with `mode`.
fn testpmd_pps(o: &Options, p: &Prepared, mode: &str) -> Result<f64, String> {
    let (out, _) = pcap_run::run(
        testpmd_cmd(o, p, mode),
        Stop::Samples(o.seconds as usize + 1),
    )?;
    rates::steady_median(&rates::testpmd_tx_pps(&out, 1), 1)
        .ok_or_else(|| format!("testpmd {mode} printed no rate samples"))
}

/// fastpath's median TX rate and the share of its fast lane (if it has one).
fn fastpath_pps(o: &Options, p: &Prepared) -> Result<(f64, Option<f64>), String> {
    let (out, _) = pcap_run::run(fastpath_cmd(o, p, false), Stop::Exit(o.seconds + 1))?;
    let pps = rates::steady_median(&rates::fastpath_tx_pps(&out, 1), 1)
        .ok_or("fastpath printed no rate samples")?;
    let lane = if o.router && out.contains("fast lane:") {
        rates::fast_lane_share(&out)
    } else {
        None
    };
    Ok((pps, lane))
}

/// One round of a row, alternating which tool runs first (by round and row).
fn run_round(
    o: &Options,
    p: &Prepared,
    first: usize,
    r: &mut RowResult,
    progress: &mut impl FnMut(&str),
) -> Result<(), String> {
    let (mut tp, mut fp) = (0.0, 0.0);
    let id = p.row.kind.id();
    for which in [first, 1 - first] {
        if which == 0 {
            tp = testpmd_pps(o, p, "io")?;
            progress(&format!("  {id:<8} testpmd io {:>6.2} Mpps", tp / 1e6));
        } else {
            let (pps, lane) = fastpath_pps(o, p)?;
            fp = pps;
            if let Some(share) = lane {
                r.fast_lane = Some(r.fast_lane.map_or(share, |f: f64| f.min(share)));
            }
            progress(&format!("  {id:<8} fastpath   {:>6.2} Mpps", fp / 1e6));
        }
    }
    r.rounds.push(Round {
        testpmd_pps: tp,
        fastpath_pps: fp,
    });
    Ok(())
}

/// Median per stage over `runs` `--stage-cycles` runs of a row.
fn stage_cycles(
    o: &Options,
    p: &Prepared,
    progress: &mut impl FnMut(&str),
) -> Result<StageCycles, String> {
    let mut runs: Vec<StageCycles> = Vec::new();
    for i in 0..o.stage_runs {
        let (out, _) = pcap_run::run(fastpath_cmd(o, p, true), Stop::Exit(o.seconds + 1))?;
        let cycles = rates::stage_cycles(&out).ok_or("fastpath printed no stage cycles")?;
        progress(&format!(
            "  {:<8} stage cycles run {}: {}",
            p.row.kind.id(),
            i + 1,
            cycles
                .iter()
                .map(|(n, c)| format!("{n} {c:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        runs.push(cycles);
    }
    Ok(median_stages(&runs))
}

/// Per stage name (in the order of the runs' lines), the median over the
/// runs that report it.
pub fn median_stages(runs: &[StageCycles]) -> StageCycles {
    let mut names: Vec<&str> = Vec::new();
    for (n, _) in runs.iter().flatten() {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|(n, _)| n == name).map(|x| x.1))
                .collect();
            (name.to_string(), rates::median(&v).unwrap_or(0.0))
        })
        .collect()
}

/// Run the comparison: every round runs every row's pair; a row that fails
/// is not run again. `progress` hears a line per run.
pub fn run(o: &Options, mut progress: impl FnMut(&str)) -> Result<Summary, String> {
    let prepared = prepare(o)?;
    let mut results: Vec<RowResult> = prepared
        .iter()
        .map(|p| RowResult {
            row: p.row,
            rounds: Vec::new(),
            testpmd_cmd: show_with(&testpmd_cmd(o, p, "io"), Some(&o.cache_dir)),
            fastpath_cmd: show_with(&fastpath_cmd(o, p, false), Some(&o.cache_dir)),
            stage_cycles: None,
            fast_lane: None,
            error: None,
        })
        .collect();
    for round in 0..o.rounds {
        progress(&format!("round {}/{}", round + 1, o.rounds));
        for (i, (p, r)) in prepared.iter().zip(&mut results).enumerate() {
            if r.error.is_some() {
                continue;
            }
            if let Err(e) = run_round(o, p, (round + i) % 2, r, &mut progress) {
                progress(&format!("  {} FAILED: {e}", p.row.kind.id()));
                r.error = Some(e);
            }
        }
    }
    if o.router && o.stage_runs > 0 {
        for (p, r) in prepared.iter().zip(&mut results) {
            if r.error.is_none() {
                match stage_cycles(o, p, &mut progress) {
                    Ok(s) => r.stage_cycles = Some(s),
                    Err(e) => r.error = Some(format!("--stage-cycles: {e}")),
                }
            }
        }
    }
    let mut reference = Vec::new();
    if let Some(p) = prepared.first() {
        for mode in &o.reference_modes {
            let mut v = Vec::new();
            for _ in 0..o.stage_runs.max(1) {
                let pps = testpmd_pps(o, p, mode)?;
                progress(&format!("reference: testpmd {mode} {:.2} Mpps", pps / 1e6));
                v.push(pps);
            }
            reference.push((mode.clone(), rates::median(&v).unwrap_or(0.0)));
        }
    }
    let stage_cmd = (o.router && o.stage_runs > 0)
        .then(|| prepared.first())
        .flatten()
        .map(|p| show_with(&fastpath_cmd(o, p, true), Some(&o.cache_dir)));
    Ok(Summary {
        rows: results,
        stage_cmd,
        reference,
        rounds: o.rounds,
        stage_runs: o.stage_runs,
    })
}

/// Replace (or append) the section between `<!-- NAME:begin -->` and
/// `<!-- NAME:end -->` in `doc`.
pub fn replace_section(doc: &str, name: &str, body: &str) -> String {
    let (b, e) = (
        format!("<!-- {name}:begin -->"),
        format!("<!-- {name}:end -->"),
    );
    let block = format!("{b}\n{body}{e}\n");
    match (doc.find(&b), doc.find(&e)) {
        (Some(i), Some(j)) if j > i => {
            format!(
                "{}{}{}",
                &doc[..i],
                block,
                doc[j + e.len()..].trim_start_matches('\n')
            )
        }
        _ => {
            let mut d = doc.trim_end().to_string();
            if !d.is_empty() {
                d.push_str("\n\n");
            }
            d.push_str(&block);
            d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_in_place() {
        let doc = "# R\n\nintro\n";
        let d1 = replace_section(doc, "fwd", "one\n");
        assert!(d1.contains("<!-- fwd:begin -->\none\n<!-- fwd:end -->"));
        let d2 = replace_section(&(d1.clone() + "\ntail\n"), "fwd", "two\n");
        assert!(d2.contains("two") && !d2.contains("one") && d2.contains("tail"));
        assert!(d2.starts_with("# R\n\nintro\n"));
    }

    #[test]
    fn a_section_leaves_the_others_and_the_notes_alone() {
        let doc = "# R\n\n<!-- a:begin -->\nA1\n<!-- a:end -->\n<!-- a-notes -->\nnotes\n\
                   <!-- a-notes:end -->\n\n<!-- b:begin -->\nB1\n<!-- b:end -->\ntail\n";
        let d = replace_section(doc, "b", "B2\n");
        assert_eq!(d, doc.replace("B1", "B2"));
        let d = replace_section(doc, "a", "A2\n");
        assert_eq!(d, doc.replace("A1", "A2"));
    }

    fn options(router: bool, rows: &[RowKind]) -> Options {
        let base = FlowSpec {
            flows: 64,
            dst_mac: PCAP0_MAC,
            ..Default::default()
        };
        Options {
            rounds: 1,
            seconds: 5,
            rows: rows.iter().map(|&k| Row::new(k, base)).collect(),
            router,
            fastpath: "fastpath".into(),
            testpmd: "dpdk-testpmd".into(),
            workdir: "/w".into(),
            cache_dir: "/c".into(),
            hugepages: false,
            stage_runs: 0,
            reference_modes: Vec::new(),
        }
    }

    fn prepared(o: &Options, i: usize) -> Prepared {
        let row = o.rows[i];
        Prepared {
            row,
            pcaps: (0..row.workers)
                .map(|q| PathBuf::from(format!("/c/q{q}.pcap")))
                .collect(),
            config: o.router.then(|| PathBuf::from("/w/r.toml")),
        }
    }

    #[test]
    fn two_workers_get_a_queue_and_a_pcap_each_in_both_tools() {
        let o = options(true, &RowKind::ALL);
        let p = prepared(&o, 3);
        let tp = show_with(&testpmd_cmd(&o, &p, "io"), Some(Path::new("/c")));
        assert!(tp.contains("--lcores 0@0,1@0,2@1 "), "{tp}");
        assert!(
            tp.contains("net_pcap0,rx_pcap=$CACHE/q0.pcap,rx_pcap=$CACHE/q1.pcap,infinite_rx=1"),
            "{tp}"
        );
        assert!(tp.contains("--nb-cores=2 --rxq=2 --txq=2 "), "{tp}");
        let fp = show(&fastpath_cmd(&o, &p, false));
        assert!(fp.contains("--lcores 0@0,1@0,2@1 "), "{fp}");
        assert!(
            fp.contains("-- --config /w/r.toml --stats-period 1"),
            "{fp}"
        );
        assert!(!fp.contains("flow-memo"), "{fp}");
        let cfg = router_config_queues(&p.row.traffic.spec, 2);
        let parsed =
            fastpath::config::RouterConfig::parse(Path::new("r.toml"), &cfg).expect("parses");
        assert_eq!(parsed.ports[0].rx_queues, 2);
        assert_eq!(parsed.ports[1].rx_queues, 1);
        // Forwarding mode: the queues by option.
        let o = options(false, &[RowKind::TwoWorkers]);
        let fp = show(&fastpath_cmd(&o, &prepared(&o, 0), true));
        assert!(fp.contains("-- --rx-queues 2 --stats-period"), "{fp}");
        assert!(fp.ends_with("--stage-cycles"), "{fp}");
    }

    #[test]
    fn the_many_flows_row_sizes_its_pool_and_memory() {
        let o = options(true, &RowKind::ALL);
        let p = prepared(&o, 2);
        assert_eq!(p.row.traffic.spec.flows, MANY_FLOWS);
        let tp = show(&testpmd_cmd(&o, &p, "io"));
        assert!(tp.contains("-l 0-1 "), "{tp}");
        assert!(tp.contains("--no-huge -m 2048 "), "{tp}");
        assert!(tp.contains("--total-num-mbufs 262143 -a"), "{tp}");
        let fp = show(&fastpath_cmd(&o, &p, false));
        assert!(fp.contains("--mbufs 262143 --duration 6"), "{fp}");
        let base = show(&fastpath_cmd(&o, &prepared(&o, 0), false));
        assert!(base.contains("--no-huge -m 1024 "), "{base}");
        assert!(base.contains("--mbufs 16383 "), "{base}");
        assert!(o.rows[3].note().contains("share this machine's 2 cores"));
        assert!(o.rows[2].note().contains("100,000 frames held in mbufs"));
        assert_eq!(
            o.rows[1].label(),
            format!("64 flows, {}, 1 worker", o.rows[1].traffic.describe_sizes())
        );
    }

    #[test]
    fn rows_parse_by_id() {
        assert_eq!(RowKind::parse("100k"), Ok(RowKind::ManyFlows));
        assert_eq!(RowKind::parse("IMIX"), Ok(RowKind::Imix));
        assert!(RowKind::parse("3workers")
            .unwrap_err()
            .contains("expected one of"));
    }

    #[test]
    fn stage_medians_go_by_name_in_the_runs_order() {
        let run = |v: &[(&str, f64)]| -> StageCycles {
            v.iter().map(|&(n, c)| (n.to_string(), c)).collect()
        };
        let m = median_stages(&[
            run(&[("l2-input", 10.0), ("ip4-lookup", 20.0), ("tx", 5.0)]),
            run(&[("l2-input", 12.0), ("ip4-lookup", 22.0), ("tx", 7.0)]),
            run(&[("l2-input", 11.0), ("ip4-lookup", 21.0), ("tx", 6.0)]),
        ]);
        assert_eq!(
            m,
            run(&[("l2-input", 11.0), ("ip4-lookup", 21.0), ("tx", 6.0)])
        );
    }
}
