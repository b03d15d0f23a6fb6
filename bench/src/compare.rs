//! Side by side, in one run, as a ratio: the same pcap replayed from memory
//! (`net_pcap0,infinite_rx=1`) into a null sink (`net_null0,no-rx=1`), one
//! forwarding lcore each, through `dpdk-testpmd --forward-mode=io` (the I/O
//! floor) and through fastpath, alternated, medians compared.

use crate::frame::FlowSpec;
use crate::rates;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// What to compare and how long.
#[derive(Clone, Debug)]
pub struct Options {
    pub rounds: usize,
    /// Seconds of steady state measured per run (one warm-up second is added).
    pub seconds: u32,
    pub spec: FlowSpec,
    pub fastpath: PathBuf,
    pub testpmd: PathBuf,
    pub workdir: PathBuf,
    /// Use hugepages (else `--no-huge`).
    pub hugepages: bool,
    /// Extra app arguments for fastpath (the setup being measured).
    pub fastpath_args: Vec<String>,
    /// Extra fastpath runs with `--stage-cycles` after the rounds, for the
    /// cycles-per-stage table (0: none).
    pub stage_runs: usize,
    /// Other testpmd forwarding engines to measure on the same setup, for
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
    let [a, b, _, _] = spec.dst_ip;
    format!(
        "# fastpath-bench router setup: pcap replay -> route -> null\n\
         [[port]]\ndevice = \"net_pcap0\"\naddress = \"10.255.0.1/24\"\n\n\
         [[port]]\ndevice = \"net_null0\"\naddress = \"10.255.1.1/24\"\n\n\
         [[route]]\nprefix = \"{a}.{b}.0.0/16\"\nvia = \"10.255.1.2\"\n\n\
         [[neighbour]]\naddress = \"10.255.1.2\"\nmac = \"02:00:00:00:00:99\"\n"
    )
}

/// Median cycles per packet of each pipeline stage over the `--stage-cycles` runs.
pub type StageCycles = Vec<(String, f64)>;

/// One round: both tools' median TX rate.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Round {
    pub testpmd_pps: f64,
    pub fastpath_pps: f64,
}

/// The outcome, with the exact commands.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Summary {
    pub rounds: Vec<Round>,
    pub testpmd_cmd: String,
    pub fastpath_cmd: String,
    /// Cycles per packet per stage (router mode), with the command.
    pub stage_cycles: Option<(StageCycles, String)>,
    /// Median TX rate of each reference testpmd engine.
    pub reference: Vec<(String, f64)>,
    /// Router mode: the least share of received packets the fast lane
    /// routed in any round.
    pub fast_lane: Option<f64>,
}

impl Summary {
    pub fn ratios(&self) -> Vec<f64> {
        self.rounds
            .iter()
            .map(|r| r.fastpath_pps / r.testpmd_pps)
            .collect()
    }
    pub fn median_ratio(&self) -> f64 {
        rates::median(&self.ratios()).unwrap_or(0.0)
    }
}

/// True when enough free hugepages are mounted for a 1 GiB EAL.
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
    let mounted = std::fs::read_to_string("/proc/mounts")
        .map(|m| m.lines().any(|l| l.contains(" hugetlbfs ")))
        .unwrap_or(false);
    mounted && free_kb >= 1100 * 1024
}

fn eal_args(o: &Options, pcap: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "-l".into(),
        "0-1".into(),
        "--no-pci".into(),
        "--log-level".into(),
        "lib.eal:error".into(),
        "--file-prefix".into(),
        format!("{prefix}-{}", std::process::id()),
    ];
    if o.hugepages {
        // Unlinked right after mapping: no stale files to hold pages afterwards.
        v.extend(["-m".into(), "1024".into(), "--huge-unlink".into()]);
    } else {
        v.extend(["--no-huge".into(), "-m".into(), "1024".into()]);
    }
    v.extend([
        "--vdev".into(),
        format!("net_pcap0,rx_pcap={},infinite_rx=1", pcap.display()),
        "--vdev".into(),
        "net_null0,no-rx=1".into(),
    ]);
    v
}

const MBUFS: &str = "16383";

fn testpmd_cmd(o: &Options, pcap: &Path) -> Command {
    testpmd_mode_cmd(o, pcap, "io")
}

fn testpmd_mode_cmd(o: &Options, pcap: &Path, mode: &str) -> Command {
    let mut c = Command::new(&o.testpmd);
    c.args(eal_args(o, pcap, "cmp-testpmd")).args([
        "--",
        &format!("--forward-mode={mode}"),
        "--nb-cores=1",
        "--stats-period",
        "1",
        "--total-num-mbufs",
        MBUFS,
        "-a",
    ]);
    c
}

fn fastpath_timed_cmd(o: &Options, pcap: &Path) -> Command {
    let mut c = fastpath_cmd(o, pcap);
    c.arg("--stage-cycles");
    c
}

fn fastpath_cmd(o: &Options, pcap: &Path) -> Command {
    let mut c = Command::new(&o.fastpath);
    c.args(eal_args(o, pcap, "cmp-fastpath"))
        .arg("--")
        .args(&o.fastpath_args)
        .args(["--stats-period", "1", "--mbufs", MBUFS, "--duration"])
        .arg((o.seconds + 1).to_string());
    c
}

pub fn show(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        let a = a.to_string_lossy();
        s.push(' ');
        s.push_str(&a.replace(std::env::temp_dir().to_str().unwrap_or("/tmp"), "$TMP"));
    }
    s
}

/// Run `c` for `secs` (then SIGINT, for testpmd) and return its stdout.
fn run_for(mut c: Command, secs: Option<u32>) -> Result<String, String> {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let name = c.get_program().to_string_lossy().into_owned();
    let mut child = c.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
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
    if let Some(s) = secs {
        std::thread::sleep(Duration::from_secs(s as u64) + Duration::from_millis(500));
        send_sigint(child.id());
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{name} failed ({status}):\n{stderr}"));
    }
    Ok(stdout)
}

/// SIGINT to a child we started and have not reaped (testpmd stops on it).
pub fn send_sigint(pid: u32) {
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
}

/// Run the comparison; `progress` hears a line per run.
pub fn run(o: &Options, mut progress: impl FnMut(&str)) -> Result<Summary, String> {
    o.spec.validate()?;
    std::fs::create_dir_all(&o.workdir).map_err(|e| e.to_string())?;
    let pcap = o.workdir.join(format!(
        "udp-{}B-{}flows.pcap",
        o.spec.frame_size, o.spec.flows
    ));
    let f = std::fs::File::create(&pcap).map_err(|e| format!("{}: {e}", pcap.display()))?;
    fastpath::pcap::write(std::io::BufWriter::new(f), &o.spec.frames(1024))
        .map_err(|e| e.to_string())?;

    let mut rounds = Vec::new();
    let router = !o.fastpath_args.is_empty();
    let mut fast_lane: Option<f64> = None;
    for round in 0..o.rounds {
        let mut tp = 0.0;
        let mut fp = 0.0;
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            if which == 0 {
                let out = run_for(testpmd_cmd(o, &pcap), Some(o.seconds + 1))?;
                tp = rates::steady_median(&rates::testpmd_tx_pps(&out, 1), 1)
                    .ok_or("testpmd printed no rate samples")?;
                progress(&format!(
                    "round {}: testpmd io {:.2} Mpps",
                    round + 1,
                    tp / 1e6
                ));
            } else {
                let out = run_for(fastpath_cmd(o, &pcap), None)?;
                fp = rates::steady_median(&rates::fastpath_tx_pps(&out, 1), 1)
                    .ok_or("fastpath printed no rate samples")?;
                if router {
                    let share = rates::fast_lane_share(&out)
                        .ok_or("fastpath printed no final statistics")?;
                    fast_lane = Some(fast_lane.map_or(share, |f: f64| f.min(share)));
                }
                progress(&format!(
                    "round {}: fastpath   {:.2} Mpps",
                    round + 1,
                    fp / 1e6
                ));
            }
        }
        rounds.push(Round {
            testpmd_pps: tp,
            fastpath_pps: fp,
        });
    }
    let mut stage_cycles = None;
    if o.stage_runs > 0 {
        let mut runs: Vec<StageCycles> = Vec::new();
        for i in 0..o.stage_runs {
            let out = run_for(fastpath_timed_cmd(o, &pcap), None)?;
            let cycles = rates::stage_cycles(&out).ok_or("fastpath printed no stage cycles")?;
            progress(&format!(
                "stage cycles run {}: {}",
                i + 1,
                cycles
                    .iter()
                    .map(|(n, c)| format!("{n} {c:.1}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            runs.push(cycles);
        }
        let medians = runs[0]
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let v: Vec<f64> = runs.iter().filter_map(|r| r.get(i).map(|x| x.1)).collect();
                (name.clone(), rates::median(&v).unwrap_or(0.0))
            })
            .collect();
        stage_cycles = Some((medians, show(&fastpath_timed_cmd(o, &pcap))));
    }
    let mut reference = Vec::new();
    for mode in &o.reference_modes {
        let mut v = Vec::new();
        for _ in 0..o.stage_runs.max(1) {
            let out = run_for(testpmd_mode_cmd(o, &pcap, mode), Some(o.seconds + 1))?;
            let pps = rates::steady_median(&rates::testpmd_tx_pps(&out, 1), 1)
                .ok_or_else(|| format!("testpmd {mode} printed no rate samples"))?;
            progress(&format!("reference: testpmd {mode} {:.2} Mpps", pps / 1e6));
            v.push(pps);
        }
        reference.push((mode.clone(), rates::median(&v).unwrap_or(0.0)));
    }
    Ok(Summary {
        rounds,
        testpmd_cmd: show(&testpmd_cmd(o, &pcap)),
        fastpath_cmd: show(&fastpath_cmd(o, &pcap)),
        stage_cycles,
        reference,
        fast_lane,
    })
}

/// A markdown section for `bench/RESULTS.md`.
pub fn markdown(title: &str, s: &Summary, target: Option<f64>, machine: &str) -> String {
    let mut m = String::new();
    let tp: Vec<f64> = s.rounds.iter().map(|r| r.testpmd_pps).collect();
    let fp: Vec<f64> = s.rounds.iter().map(|r| r.fastpath_pps).collect();
    let ratios = s.ratios();
    let mpps = |v: &[f64]| rates::median(v).unwrap_or(0.0) / 1e6;
    let range = |v: &[f64]| {
        let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = v.iter().cloned().fold(0.0, f64::max);
        format!("{:.2}-{:.2}", lo / 1e6, hi / 1e6)
    };
    let _ = writeln!(m, "## {title}\n");
    let _ = writeln!(m, "{machine}\n");
    let _ = writeln!(m, "| | median Mpps | min-max Mpps | ratio to testpmd io |");
    let _ = writeln!(m, "|---|---:|---:|---:|");
    let _ = writeln!(
        m,
        "| dpdk-testpmd io | {:.2} | {} | 1.00 |",
        mpps(&tp),
        range(&tp)
    );
    let _ = writeln!(
        m,
        "| fastpath | {:.2} | {} | **{:.3}** (median of per-round ratios; min {:.3}, max {:.3}) |",
        mpps(&fp),
        range(&fp),
        s.median_ratio(),
        ratios.iter().cloned().fold(f64::INFINITY, f64::min),
        ratios.iter().cloned().fold(0.0, f64::max),
    );
    if let Some(t) = target {
        let _ = writeln!(
            m,
            "\nTarget: ratio >= {t:.2}: **{}**.",
            if s.median_ratio() >= t {
                "met"
            } else {
                "not met"
            }
        );
    }
    let _ = writeln!(m, "\nRounds (alternating which runs first):\n");
    let _ = writeln!(m, "| round | testpmd io Mpps | fastpath Mpps | ratio |");
    let _ = writeln!(m, "|---:|---:|---:|---:|");
    for (i, r) in s.rounds.iter().enumerate() {
        let _ = writeln!(
            m,
            "| {} | {:.2} | {:.2} | {:.3} |",
            i + 1,
            r.testpmd_pps / 1e6,
            r.fastpath_pps / 1e6,
            ratios[i]
        );
    }
    let _ = writeln!(
        m,
        "\nEach run: one forwarding lcore, rates read every second from the port \
         counters (testpmd's `Tx-pps`, fastpath's `tx-pps` of port 1), first second \
         dropped, median of the rest.\n\n```\n{}\n{}\n```",
        s.testpmd_cmd, s.fastpath_cmd
    );
    if !s.reference.is_empty() {
        let io = rates::median(&tp).unwrap_or(0.0);
        let _ = writeln!(
            m,
            "\nFor scale, other `dpdk-testpmd` engines on the same setup (median of the \
             runs; same command with another `--forward-mode`):\n"
        );
        let _ = writeln!(
            m,
            "| testpmd engine | what it does per packet | Mpps | ratio to io |"
        );
        let _ = writeln!(m, "|---|---|---:|---:|");
        for (mode, pps) in &s.reference {
            let what = match mode.as_str() {
                "macswap" => "swap the Ethernet addresses",
                "5tswap" => "swap MACs, IPs and L4 ports",
                "csum" => "parse L2-L4, check and fill checksums in software",
                _ => "",
            };
            let _ = writeln!(
                m,
                "| {mode} | {what} | {:.2} | {:.3} |",
                pps / 1e6,
                if io > 0.0 { pps / io } else { 0.0 }
            );
        }
        let _ = writeln!(
            m,
            "| *fastpath router* | *l2, IPv4 checks with checksum, LPM, TTL, neighbour header* | \
             *{:.2}* | *{:.3}* |",
            mpps(&fp),
            s.median_ratio()
        );
    }
    if let Some((stages, cmd)) = &s.stage_cycles {
        let pipeline: f64 = stages
            .iter()
            .filter(|(n, _)| n != "tx")
            .map(|(_, c)| c)
            .sum();
        let _ = writeln!(
            m,
            "\nCycles per packet by stage (TSC read around each stage once per burst, \
             divided by the packets of the burst; median of the runs):\n"
        );
        let _ = writeln!(m, "| stage | cycles / packet |");
        let _ = writeln!(m, "|---|---:|");
        for (n, c) in stages {
            let _ = writeln!(m, "| {n} | {c:.1} |");
        }
        let _ = writeln!(
            m,
            "| **l2 + ip + neigh** | **{pipeline:.1}** (target <= 40: **{}**) |",
            if pipeline <= 40.0 { "met" } else { "not met" }
        );
        let _ = writeln!(
            m,
            "\n`tx` is the dispose step: TX buffers, `tx_burst` into the null device, \
             and punts. A burst whose every packet is a plain forward (untagged IPv4 \
             to us, no options, forward routes to resolved neighbours, one output port, \
             no hooks) is routed by the fast lane: its check loop (l2 and the \
             IPv4 header checks, fused) is timed as `l2`, LPM + next hop + neighbour as \
             `ip`, TTL + header write as `neigh`.\n\n```\n{cmd}\n```"
        );
    }
    if let Some(share) = s.fast_lane {
        let _ = writeln!(
            m,
            "\nShare of received packets the fast lane routed (fastpath's `fast lane:` \
             line), least over the rounds: {:.1} %.",
            100.0 * share
        );
    }
    m
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
    fn ratio_is_median_of_rounds() {
        let s = Summary {
            rounds: vec![
                Round {
                    testpmd_pps: 10.0,
                    fastpath_pps: 9.0,
                },
                Round {
                    testpmd_pps: 10.0,
                    fastpath_pps: 10.0,
                },
                Round {
                    testpmd_pps: 10.0,
                    fastpath_pps: 5.0,
                },
            ],
            testpmd_cmd: "t".into(),
            fastpath_cmd: "f".into(),
            stage_cycles: None,
            reference: Vec::new(),
            fast_lane: None,
        };
        assert!((s.median_ratio() - 0.9).abs() < 1e-9);
        let md = markdown("T", &s, Some(0.95), "m");
        assert!(md.contains("not met"), "{md}");
        assert!(!md.contains("Cycles per packet"), "{md}");
    }

    #[test]
    fn stage_table_sums_the_pipeline_without_tx() {
        let s = Summary {
            rounds: vec![Round {
                testpmd_pps: 10.0,
                fastpath_pps: 7.0,
            }],
            testpmd_cmd: "t".into(),
            fastpath_cmd: "f".into(),
            stage_cycles: Some((
                vec![
                    ("l2".into(), 10.0),
                    ("ip".into(), 20.0),
                    ("neigh".into(), 5.0),
                    ("tx".into(), 30.0),
                ],
                "f --stage-cycles".into(),
            )),
            reference: vec![("csum".into(), 4.0)],
            fast_lane: Some(0.999),
        };
        let md = markdown("T", &s, Some(0.6), "m");
        assert!(
            md.contains("| **l2 + ip + neigh** | **35.0** (target <= 40: **met**) |"),
            "{md}"
        );
        assert!(md.contains("Target: ratio >= 0.60: **met**"), "{md}");
        assert!(md.contains("least over the rounds: 99.9 %."), "{md}");
        assert!(
            md.contains(
                "| csum | parse L2-L4, check and fill checksums in software | 0.00 | 0.400 |"
            ),
            "{md}"
        );
    }
}
