//! `fastpath-bench`: build test traffic and run side-by-side benchmarks.

#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use fastpath_bench::compare;
use fastpath_bench::frame::FlowSpec;
use fastpath_bench::harness::{self, HarnessArgs};
use fastpath_bench::hooks_bench;
use fastpath_bench::memif_compare;
use fastpath_bench::pcap_cache;
use fastpath_bench::spec_args::SpecArgs;
use fastpath_bench::traffic::FrameSizes;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "fastpath-bench",
    version,
    about = "fastpath benchmarks and test traffic"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// One trial: send the flow spec's packets at a rate (or as fast as
    /// possible) through a device under test in another process and back;
    /// loss, reordering and latency. EAL arguments go after `--`.
    Run(HarnessArgs),
    /// RFC 2544 throughput search (NDR, or PDR with --loss-ratio) through a
    /// device under test in another process. EAL arguments go after `--`.
    Search(HarnessArgs),
    /// Side by side over memif: the generator (this program, on core 0)
    /// sends the same traffic through dpdk-testpmd io and macswap and through
    /// fastpath without hooks and with the hooks benchmark's setups (core 1),
    /// alternated; then an NDR search each. Rewrites the `memif` section of
    /// RESULTS.md and writes the searches' plots beside it.
    Memif {
        #[command(flatten)]
        spec: SpecArgs,
        /// Rounds (each runs every device once, in an order rotated per round).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Seconds of sending per run.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Trial length of the NDR search per device (0: no search).
        #[arg(long, default_value_t = 1.0)]
        ndr_seconds: f64,
        /// Resolution of the NDR search, a fraction of the generator's maximum.
        #[arg(long, default_value_t = 0.02)]
        resolution: f64,
        /// Repeats of a failing NDR trial at the same rate (0: RFC 2544's single trial).
        #[arg(long, default_value_t = 2)]
        retries: u32,
        /// The fastpath binary (default: next to this one).
        #[arg(long)]
        fastpath: Option<PathBuf>,
        /// The peer.
        #[arg(long, default_value = "dpdk-testpmd")]
        testpmd: PathBuf,
        /// Results file to update (its `memif` section); plots go to its folder's `plots/`.
        #[arg(long, default_value = "bench/RESULTS.md")]
        results: PathBuf,
        /// Do not write the results file or the plots.
        #[arg(long)]
        no_write: bool,
    },
    /// Refresh every figure in RESULTS.md, one section after the other:
    /// forwarding (pcap -> null, testpmd io), the IPv4 router, the hooks
    /// table, and the memif side by side with its NDR searches.
    All {
        /// Rounds of each comparison.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Seconds measured per run.
        #[arg(long, default_value_t = 5)]
        seconds: u32,
        /// Results file to update.
        #[arg(long, default_value = "bench/RESULTS.md")]
        results: PathBuf,
        /// Run the pcap comparisons without hugepages even when available.
        #[arg(long)]
        no_huge: bool,
    },
    /// Print the generator's frame templates for a flow spec (one line per
    /// size and flow: `SIZE FLOW HEX`, payload unstamped), or write them to a
    /// pcap file; the TRex profiles' test compares its scapy frames with these.
    Frames {
        #[command(flatten)]
        spec: SpecArgs,
        /// Write a pcap file instead of printing hex.
        #[arg(long)]
        pcap: Option<PathBuf>,
    },
    /// Play zebra: send a generated full IPv4 table (realistic prefix
    /// lengths, one route a frame, an inline gateway each) to a fastpath
    /// started with `--fpm` (bench/fpm-install.sh runs it under traffic).
    FpmReplay {
        /// The FPM server's address.
        #[arg(long, default_value = "127.0.0.1:2620")]
        to: std::net::SocketAddr,
        /// Routes in the table.
        #[arg(long, default_value_t = 1_000_000)]
        routes: usize,
        /// The table's seed (the same seed, the same table).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Gateways, comma separated, taken in turn route by route
        /// (default: 10.255.1.2,10.255.1.3; with --ipv6,
        /// 2001:db8:ff01::2,2001:db8:ff01::3).
        #[arg(long, value_delimiter = ',')]
        gateways: Vec<std::net::IpAddr>,
        /// An IPv6 table (the IPv6 Internet table's prefix lengths).
        #[arg(long)]
        ipv6: bool,
    },
    /// Write valid Ethernet/IPv4/UDP frames to a pcap file.
    Pcap {
        /// Output file.
        #[arg(long)]
        out: PathBuf,
        /// Frame size on the wire, FCS included (64..=1518).
        #[arg(long, default_value_t = 64, conflicts_with = "imix")]
        size: usize,
        /// IMIX frames instead of one size: 7 x 64, 4 x 594, 1 x 1518 bytes in
        /// every 12 (the router benchmark's IMIX row; give --count a multiple of 12).
        #[arg(long)]
        imix: bool,
        /// Number of frames.
        #[arg(long, default_value_t = 1024)]
        count: usize,
        /// Distinct flows (source address / port pairs).
        #[arg(long, default_value_t = 64)]
        flows: u32,
        /// Address the frames to net_pcap0 (02:70:63:61:70:00) and write the
        /// router config of the routed benchmark to FILE (pcap replay on
        /// net_pcap0, routed out of net_null0 to a static neighbour).
        #[arg(long, value_name = "FILE")]
        router_config: Option<PathBuf>,
    },
    /// pcap replay -> null sink through dpdk-testpmd io and fastpath,
    /// alternated, one pair per row (with --router: 64 flows, IMIX, 100,000
    /// flows, 2 workers); prints the table and rewrites its section of
    /// RESULTS.md.
    Compare {
        /// Rounds (each runs both tools once, alternating which goes first).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Seconds measured per run (plus one warm-up second).
        #[arg(long, default_value_t = 5)]
        seconds: u32,
        /// Frame size on the wire, FCS included (base, 100k and 2workers rows).
        #[arg(long, default_value_t = 64)]
        size: usize,
        /// Distinct flows (base, imix and 2workers rows).
        #[arg(long, default_value_t = 64)]
        flows: u32,
        /// The fastpath binary (default: next to this one).
        #[arg(long)]
        fastpath: Option<PathBuf>,
        /// The peer.
        #[arg(long, default_value = "dpdk-testpmd")]
        testpmd: PathBuf,
        /// Results file to update (its `forward-io` section).
        #[arg(long, default_value = "bench/RESULTS.md")]
        results: PathBuf,
        /// Do not write the results file.
        #[arg(long)]
        no_write: bool,
        /// Measure the IPv4 router (no hooks) instead of plain forwarding:
        /// frames to port 0's MAC, routed via a static route and neighbour
        /// out of port 1; every row of --rows, plus cycles per stage.
        #[arg(long)]
        router: bool,
        /// Runs with --stage-cycles per row for the cycles table (router
        /// mode), and runs of each reference testpmd engine (first row).
        #[arg(long, default_value_t = 3)]
        stage_runs: usize,
        /// Reference testpmd engines measured for scale (router mode), comma
        /// separated; empty for none.
        #[arg(long, default_value = "macswap,5tswap,csum", value_delimiter = ',')]
        reference_modes: Vec<String>,
        /// Section name in the results file (default: forward-io, or
        /// router-ipv4 with --router).
        #[arg(long)]
        section: Option<String>,
        /// Target ratio of the first row (default: 0.95, or 0.75 with --router).
        #[arg(long)]
        target: Option<f64>,
        /// Run without hugepages even when they are available.
        #[arg(long)]
        no_huge: bool,
        /// Rows of the table, comma separated: base (--size, --flows), imix
        /// (IMIX frames, --flows), 100k (100,000 flows of --size frames),
        /// 2workers (base on two worker lcores, one RX queue each). Default:
        /// every row with --router, base without.
        #[arg(long, value_delimiter = ',', value_parser = compare::RowKind::parse)]
        rows: Vec<compare::RowKind>,
        /// Folder of the generated pcaps, kept between runs (default:
        /// $FASTPATH_BENCH_CACHE, else $XDG_CACHE_HOME/fastpath-bench, else
        /// ~/.cache/fastpath-bench).
        #[arg(long)]
        cache_dir: Option<PathBuf>,
    },
    /// The hooks benchmark: router pcap replay -> null with no hooks, hooks
    /// on another port, an accept-all hook, classify + filter with 1,000 and
    /// 10,000 rules on 64, 100,000 and 1,000,000 flows, and with connection
    /// tracking on 100,000 flows, each against no hooks on the same traffic;
    /// alternated; prints the table and rewrites the `hooks` section of
    /// RESULTS.md.
    Hooks {
        /// Rounds (each runs every case once, in an order rotated per round).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Seconds measured per run (plus one warm-up second).
        #[arg(long, default_value_t = 5)]
        seconds: u32,
        /// The fastpath binary (default: next to this one).
        #[arg(long)]
        fastpath: Option<PathBuf>,
        /// Results file to update (its `hooks` section).
        #[arg(long, default_value = "bench/RESULTS.md")]
        results: PathBuf,
        /// Do not write the results file.
        #[arg(long)]
        no_write: bool,
        /// Run without hugepages even when they are available.
        #[arg(long)]
        no_huge: bool,
        /// Cases to run, comma separated, each with its baseline: labels (1,
        /// 2, 3, 4, 5, 1b, 4b, 5b, 6, 1c, 4c, 5c) or a case at a traffic
        /// (4@64, 4@100k, 5@1m). Default: every case. A partial run prints
        /// its table but does not write the results file.
        #[arg(long, value_delimiter = ',')]
        cases: Vec<String>,
        /// Folder of the generated pcaps, kept between runs (default:
        /// $FASTPATH_BENCH_CACHE, else $XDG_CACHE_HOME/fastpath-bench, else
        /// ~/.cache/fastpath-bench).
        #[arg(long)]
        cache_dir: Option<PathBuf>,
        /// Only write each case's config into this folder (and its pcap into
        /// the cache), print one line per case (label, config, pcap) and
        /// exit: what `bench/instructions.sh` counts instructions on.
        #[arg(long)]
        configs: Option<PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli.cmd) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(cmd: Cmd) -> Result<(), String> {
    match cmd {
        Cmd::Memif {
            spec,
            rounds,
            seconds,
            ndr_seconds,
            resolution,
            retries,
            fastpath,
            testpmd,
            results,
            no_write,
        } => {
            let described = spec.spec()?.describe();
            let results_dir = results
                .parent()
                .map(|p| p.to_path_buf())
                .unwrap_or_default();
            let opts = memif_compare::Options {
                rounds,
                seconds,
                ndr_trial_seconds: ndr_seconds,
                resolution,
                retries,
                duts: memif_compare::Dut::ALL.to_vec(),
                spec_args: spec.to_args(),
                fastpath: hooks_bench::resolve_fastpath(fastpath)?,
                testpmd,
                bench: std::env::current_exe().map_err(|e| e.to_string())?,
                workdir: std::env::temp_dir()
                    .join(format!("fastpath-bench-memif-{}", std::process::id())),
                plot_dir: (!no_write).then(|| results_dir.join("plots")),
            };
            eprintln!(
                "memif comparison: {rounds} rounds of {} devices, {seconds} s each, {described}",
                opts.duts.len()
            );
            let summary = memif_compare::run(&opts, |l| eprintln!("{l}"));
            let _ = std::fs::remove_dir_all(&opts.workdir);
            let summary = summary?;
            let md = memif_compare::markdown(&summary, &described, &machine(false), &results_dir);
            println!("{md}");
            if !no_write {
                update_results(&results, "memif", &md)?;
            }
            Ok(())
        }
        Cmd::All {
            rounds,
            seconds,
            results,
            no_huge,
        } => {
            let common = |cmd: &str| {
                let mut v = vec![
                    "fastpath-bench".to_string(),
                    cmd.to_string(),
                    "--rounds".into(),
                    rounds.to_string(),
                    "--seconds".into(),
                    seconds.to_string(),
                    "--results".into(),
                    results.display().to_string(),
                ];
                if no_huge && cmd != "memif" {
                    v.push("--no-huge".into());
                }
                v
            };
            let mut steps = vec![
                ("forwarding", common("compare")),
                ("IPv4 router", {
                    let mut v = common("compare");
                    v.push("--router".into());
                    v
                }),
                ("hooks", common("hooks")),
                ("memif", {
                    let mut v = common("memif");
                    v.extend(["--flows".to_string(), "64".into()]);
                    v
                }),
            ];
            for (i, (what, args)) in steps.drain(..).enumerate() {
                eprintln!("== {}/4: {what}: {}", i + 1, args[1..].join(" "));
                let cli = Cli::try_parse_from(&args).map_err(|e| e.to_string())?;
                run(cli.cmd).map_err(|e| format!("{what}: {e}"))?;
            }
            Ok(())
        }
        Cmd::Run(a) => harness::run(a, false).map(|_| ()),
        Cmd::Search(a) => harness::run(a, true).map(|_| ()),
        Cmd::Frames { spec, pcap } => {
            let spec = spec.spec()?;
            let templates = spec.templates();
            match pcap {
                Some(out) => {
                    let frames: Vec<Vec<u8>> =
                        templates.into_iter().flatten().map(|t| t.bytes).collect();
                    let f = std::fs::File::create(&out)
                        .map_err(|e| format!("{}: {e}", out.display()))?;
                    fastpath::pcap::write(std::io::BufWriter::new(f), &frames)
                        .map_err(|e| format!("{}: {e}", out.display()))?;
                }
                None => {
                    use std::io::Write as _;
                    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
                    for (size, per_flow) in spec.sizes.distinct().into_iter().zip(&templates) {
                        for (flow, t) in per_flow.iter().enumerate() {
                            let hex: String = t.bytes.iter().map(|b| format!("{b:02x}")).collect();
                            writeln!(w, "{size} {flow} {hex}").map_err(|e| e.to_string())?;
                        }
                    }
                }
            }
            Ok(())
        }
        Cmd::FpmReplay {
            to,
            routes,
            seed,
            gateways,
            ipv6,
        } => {
            use fastpath_bench::fpm_replay::{replay, table, table6};
            let defaults = if ipv6 {
                ["2001:db8:ff01::2", "2001:db8:ff01::3"]
            } else {
                ["10.255.1.2", "10.255.1.3"]
            };
            let gateways: Vec<std::net::IpAddr> = if gateways.is_empty() {
                defaults.iter().map(|g| g.parse().unwrap()).collect()
            } else {
                gateways
            };
            if let Some(g) = gateways.iter().find(|g| g.is_ipv6() != ipv6) {
                return Err(format!(
                    "--gateways {g}: not of the table's family (--ipv6 takes IPv6 gateways)"
                ));
            }
            let r = if ipv6 {
                replay(to, &table6(routes, seed), &gateways)
            } else {
                replay(to, &table(routes, seed), &gateways)
            }
            .map_err(|e| format!("FPM replay to {to}: {e}"))?;
            println!(
                "sent {} routes ({} bytes) to {to} in {:.3} s",
                r.routes,
                r.bytes,
                r.took.as_secs_f64()
            );
            // Keep the connection open until killed: a close makes the
            // routes stale (and swept after the hold time).
            loop {
                std::thread::park();
            }
        }
        Cmd::Pcap {
            out,
            size,
            imix,
            count,
            flows,
            router_config,
        } => {
            let mut spec = FlowSpec {
                frame_size: size,
                flows,
                ..Default::default()
            };
            if let Some(path) = &router_config {
                spec.dst_mac = compare::PCAP0_MAC;
                std::fs::write(path, compare::router_config(&spec))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            let traffic = pcap_cache::PcapTraffic {
                spec,
                sizes: if imix {
                    FrameSizes::Imix
                } else {
                    FrameSizes::Fixed(size)
                },
                frames: count,
            };
            traffic.validate()?;
            let f = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            fastpath::pcap::write(std::io::BufWriter::new(f), &traffic.queue_frames(0, 1))
                .map_err(|e| format!("{}: {e}", out.display()))?;
            let sizes = if imix {
                "IMIX frames".to_string()
            } else {
                format!("frames of {size} bytes")
            };
            println!("wrote {count} {sizes} ({flows} flows) to {}", out.display());
            Ok(())
        }
        Cmd::Compare {
            rounds,
            seconds,
            size,
            flows,
            fastpath,
            testpmd,
            results,
            no_write,
            router,
            stage_runs,
            reference_modes,
            section,
            target,
            no_huge,
            rows,
            cache_dir,
        } => {
            let fastpath = hooks_bench::resolve_fastpath(fastpath)?;
            let mut base = FlowSpec {
                frame_size: size,
                flows,
                ..Default::default()
            };
            if router {
                base.dst_mac = compare::PCAP0_MAC;
            }
            let kinds = match (rows.is_empty(), router) {
                (false, _) => rows,
                (true, true) => compare::RowKind::ALL.to_vec(),
                (true, false) => vec![compare::RowKind::Base],
            };
            let rows: Vec<compare::Row> = kinds
                .into_iter()
                .map(|k| compare::Row::new(k, base))
                .collect();
            let memory = rows
                .iter()
                .map(|r| r.traffic.memory_mb())
                .max()
                .unwrap_or(1024);
            let hugepages = !no_huge && compare::hugepages_free_mb(u64::from(memory) + 76);
            let section = section
                .unwrap_or_else(|| if router { "router-ipv4" } else { "forward-io" }.to_string());
            let target = target.unwrap_or(if router { 0.75 } else { 0.95 });
            let opts = compare::Options {
                rounds,
                seconds,
                rows,
                router,
                fastpath,
                testpmd,
                workdir: std::env::temp_dir()
                    .join(format!("fastpath-bench-{}", std::process::id())),
                cache_dir: cache_dir.unwrap_or_else(pcap_cache::default_dir),
                hugepages,
                stage_runs: if router { stage_runs } else { 0 },
                reference_modes: if router {
                    reference_modes
                        .into_iter()
                        .filter(|m| !m.is_empty())
                        .collect()
                } else {
                    Vec::new()
                },
            };
            eprintln!(
                "comparing {rounds} rounds of {} rows ({}), {seconds} s each, {}; pcaps in {}",
                opts.rows.len(),
                opts.rows
                    .iter()
                    .map(|r| r.kind.id())
                    .collect::<Vec<_>>()
                    .join(", "),
                if hugepages { "hugepages" } else { "--no-huge" },
                opts.cache_dir.display()
            );
            let summary = compare::run(&opts, |l| eprintln!("{l}"));
            let _ = std::fs::remove_dir_all(&opts.workdir);
            let summary = summary?;
            let title = if router {
                "IPv4 router, no hooks (issue: IPv4 fast path): pcap replay -> l2 -> ip (LPM) \
                 -> neigh -> null"
                    .to_string()
            } else {
                format!(
                    "Forwarding only (issue: foundation): pcap replay -> null, {size}-byte frames"
                )
            };
            let md = compare::markdown(
                &title,
                &summary,
                Some(target),
                &machine(hugepages),
                &hooks_bench::command_line(),
            );
            println!("{md}");
            let errors = summary.errors();
            if !errors.is_empty() {
                return Err(format!(
                    "{} of {} rows failed ({}); {} not updated",
                    errors.len(),
                    summary.rows.len(),
                    errors
                        .iter()
                        .map(|(r, _)| r.kind.id())
                        .collect::<Vec<_>>()
                        .join(", "),
                    results.display()
                ));
            }
            if !no_write {
                update_results(&results, &section, &md)?;
            }
            Ok(())
        }
        Cmd::Hooks {
            rounds,
            seconds,
            fastpath,
            results,
            no_write,
            no_huge,
            cases,
            cache_dir,
            configs,
        } => {
            let cases = hooks_bench::Case::select(&cases)?;
            let partial = cases.len() < hooks_bench::Case::ALL.len();
            let hugepages = !no_huge && hooks_bench::hugepages_available(&cases);
            let opts = hooks_bench::Options {
                rounds,
                seconds,
                cases,
                fastpath: hooks_bench::resolve_fastpath(fastpath)?,
                workdir: std::env::temp_dir()
                    .join(format!("fastpath-bench-hooks-{}", std::process::id())),
                cache_dir: cache_dir.unwrap_or_else(pcap_cache::default_dir),
                hugepages,
            };
            if let Some(dir) = configs {
                let opts = hooks_bench::Options {
                    workdir: dir,
                    ..opts
                };
                for (label, config, pcap) in hooks_bench::write_configs(&opts)? {
                    println!("{label} {} {}", config.display(), pcap.display());
                }
                return Ok(());
            }
            eprintln!(
                "hooks benchmark: {rounds} rounds of {} cases ({}), {seconds} s each, 64-byte \
                 frames, {}; pcaps in {}",
                opts.cases.len(),
                opts.cases
                    .iter()
                    .map(|c| c.label())
                    .collect::<Vec<_>>()
                    .join(" "),
                if hugepages { "hugepages" } else { "--no-huge" },
                opts.cache_dir.display()
            );
            let summary = hooks_bench::run(&opts, |l| eprintln!("{l}"));
            let _ = std::fs::remove_dir_all(&opts.workdir);
            let summary = summary?;
            let md =
                hooks_bench::markdown(&summary, &machine(hugepages), &hooks_bench::command_line());
            println!("{md}");
            let errors = summary.errors();
            if !errors.is_empty() {
                return Err(format!(
                    "{} of {} cases failed ({}); {} not updated",
                    errors.len(),
                    summary.cases.len(),
                    errors
                        .iter()
                        .map(|(c, _)| c.label())
                        .collect::<Vec<_>>()
                        .join(", "),
                    results.display()
                ));
            }
            if partial {
                eprintln!("a selection of cases: {} not updated", results.display());
            } else if !no_write {
                update_results(&results, "hooks", &md)?;
            }
            Ok(())
        }
    }
}

fn machine(hugepages: bool) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let dpdk = std::process::Command::new("pkg-config")
        .args(["--modversion", "libdpdk"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "Measured {date} on {cpu}, {cores} cores (shared VM), DPDK {dpdk}, {}.",
        if hugepages {
            "2 MiB hugepages"
        } else {
            "--no-huge"
        }
    )
}

/// Replace section `name` of the results file (creating the file if needed).
fn update_results(results: &std::path::Path, name: &str, md: &str) -> Result<(), String> {
    let doc = std::fs::read_to_string(results).unwrap_or_else(|_| {
        "# fastpath benchmark results\n\nRewritten by `fastpath-bench compare`; \
         each section by the command named in it.\n"
            .to_string()
    });
    let doc = compare::replace_section(&doc, name, md);
    std::fs::write(results, doc).map_err(|e| format!("{}: {e}", results.display()))?;
    eprintln!("updated {}", results.display());
    Ok(())
}
