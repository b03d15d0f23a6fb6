//! Command line: `fastpath [EAL args] -- [app args]`.

use clap::Parser;
use std::path::PathBuf;

/// App options (after `--`). EAL options come before `--`.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(
    name = "fastpath",
    version,
    about = "DPDK poll-mode IPv4 fast path",
    override_usage = "fastpath [EAL options] -- [OPTIONS]",
    after_help = "EAL options (before `--`) choose cores, memory and devices, e.g.\n  \
        fastpath -l 0-1 --no-huge -m 512 --no-pci --file-prefix fp1 \\\n    \
        --vdev net_pcap0,rx_pcap=in.pcap --vdev net_pcap1,tx_pcap=out.pcap -- --forward 0:1 --until-input-done\n\
        The first lcore (-l) is the main lcore (control and statistics); every other lcore \
        polls queues. `fastpath -- --help` or `dpdk-testpmd --help` for the full EAL list (`fastpath -h` \
        before `--` shows DPDK's own EAL usage).\n\
        `fastpath doctor [EAL options] [-- --config FILE]` checks the host first (hugepages, IOMMU \
        and vfio, devices and their drivers, lcores) and says how to fix what would stop or slow a \
        start; see docs/doctor.md."
)]
pub struct AppArgs {
    /// Run as an IPv4 router with the ports, addresses, routes, neighbours and
    /// lcore map of this TOML file (see examples/demo-router.toml). Without it,
    /// fastpath forwards ports pairwise, untouched (like testpmd's io mode).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["forward", "rx_queues"])]
    pub config: Option<PathBuf>,

    /// Time each stage of the datapath with the TSC and report cycles per
    /// packet for each (router mode; a TSC read per stage per burst): l2_input,
    /// ingress_hook, ip_input, egress_hook, neigh_output, local, tx.
    #[arg(long)]
    pub stage_cycles: bool,

    /// Router mode: a neighbour confirmed by ARP stays reachable this long,
    /// then turns stale and is re-probed (the kernel's base_reachable_time).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub neigh_reachable: f64,

    /// Router mode: neighbours the table holds (the kernel's gc_thresh3).
    /// Failed and long-unused stale entries are reclaimed; configured
    /// gateways and static neighbours never are.
    #[arg(long, value_name = "N", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(16..=1_048_576))]
    pub neigh_capacity: u32,

    /// Router mode: IPv4 routes the FIB holds (its LPM rules), for the
    /// routes `fastpath ctl` and FPM add beside the config's; at least twice
    /// the config's are held in any case. Each takes about 420 bytes of
    /// DPDK memory (its tree nodes) beside the table's fixed 64 MiB: a full
    /// Internet table, `--fib-routes 1048576`, about 500 MiB.
    #[arg(long, value_name = "N", default_value_t = crate::fib::FIB_ROUTES,
          value_parser = clap::value_parser!(u32).range(1024..=16_777_216))]
    pub fib_routes: u32,

    /// Router mode with IPv6: IPv6 routes the FIB holds beyond the
    /// config's, for those `fastpath ctl` and FPM add. Each takes up to 6 KiB
    /// of DPDK memory (up to three tbl8 groups of 1 KiB, in each of the
    /// table's two copies): an IPv6 Internet table, `--fib6-routes 262144`,
    /// up to 1.5 GiB.
    #[arg(long, value_name = "N", default_value_t = crate::fib6::FIB6_ROUTES,
          value_parser = clap::value_parser!(u32).range(1024..=4_194_304))]
    pub fib6_routes: u32,

    /// Forward every packet received on port RX to port TX, e.g. `--forward 0:1`.
    /// Repeat for more pairs. Default: ports paired 0<->1, 2<->3, ... both ways.
    #[arg(long = "forward", value_name = "RX:TX", value_parser = parse_forward)]
    pub forward: Vec<Forward>,

    /// RX queues per receiving port (RSS spreads flows over them when above 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=128))]
    pub rx_queues: u16,

    /// RX descriptors per queue.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u16).range(64..=16384))]
    pub rx_desc: u16,

    /// TX descriptors per queue.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u16).range(64..=16384))]
    pub tx_desc: u16,

    /// Mbufs in the packet pool (default: enough for every ring, burst and cache).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1024..))]
    pub mbufs: Option<u32>,

    /// Stop after this many seconds (default: run until Ctrl-C / SIGTERM).
    /// With --until-input-done, the most it may take: past it the run
    /// fails (exit 4).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,

    /// Stop once the input is used up: every port fastpath receives on reads
    /// pcap files (--vdev net_pcapN,rx_pcap=FILE, without infinite_rx=1) or
    /// receives nothing; fastpath counts their frames at start and stops,
    /// as on Ctrl-C, once it has read them all and nothing is in flight
    /// (replies sent, packets waiting for a neighbour sent or failed).
    #[arg(long)]
    pub until_input_done: bool,

    /// Print the live view every SECS seconds (0: only the final statistics):
    /// on a terminal a table (per port Mpps, Gbit/s, drops and their top
    /// reasons; per worker the busy share), otherwise one line per period.
    /// Default: every second, as a table on a terminal, as lines otherwise.
    #[arg(long, value_name = "SECS")]
    pub stats_period: Option<f64>,

    /// No live view and no periodic lines (the final statistics stay).
    #[arg(long, conflicts_with = "stats_period")]
    pub quiet: bool,

    /// Serve the counters at http://ADDR:PORT/metrics in the Prometheus text
    /// format (e.g. 127.0.0.1:9101, or :9101 for every address).
    #[arg(long, value_name = "ADDR:PORT", value_parser = crate::ops::http::parse_addr)]
    pub metrics: Option<std::net::SocketAddr>,

    /// Router mode: take routes from FRR's zebra over FPM (its
    /// `dplane_fpm_nl` module connects here; zebra's port is 2620), e.g.
    /// `--fpm 127.0.0.1:2620`. See docs/frr.md.
    #[arg(long, value_name = "ADDR:PORT", requires = "config", value_parser = parse_fpm_addr)]
    pub fpm: Option<std::net::SocketAddr>,

    /// Router mode: after zebra's connection ends (or a new one replaces
    /// it), FPM routes zebra does not send again within this many seconds
    /// of the last connect or disconnect are removed.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub fpm_hold: f64,

    /// Also write the final statistics as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,

    /// Do not put ports in promiscuous mode.
    #[arg(long)]
    pub no_promiscuous: bool,

    // --- Drop capture (docs/capture.md) ---
    /// Router mode: write every dropped packet (its first 256 bytes) to this
    /// pcapng file, with the drop reason, stage, ports and hook in the
    /// packet's comment (`tshark -r FILE -T fields -e frame.comment`).
    #[arg(long, value_name = "FILE", requires = "config")]
    pub capture_drops: Option<PathBuf>,

    /// The size bound of a drop capture file (bytes, or K, M, G); at the
    /// bound the capture stops and says so.
    #[arg(long, value_name = "SIZE", default_value = "64M",
          value_parser = crate::capture::parse_size)]
    pub capture_max_bytes: u64,

    /// Dropped packets each lcore may capture per second; past it they are
    /// counted as over rate, not captured.
    #[arg(long, value_name = "PPS", default_value_t = crate::capture::DEFAULT_RATE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub capture_rate: u64,

    /// Records the queue to the capture writer holds; a drop that finds it
    /// full is counted as capture_lost.
    #[arg(long, value_name = "N", default_value_t = crate::capture::DEFAULT_QUEUE,
          value_parser = parse_capture_queue)]
    pub capture_queue: usize,
}

fn parse_capture_queue(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!("`{s}`: give 1 to 1048576 records")),
    }
}

/// One forwarding rule: everything received on `rx` leaves on `tx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forward {
    pub rx: u16,
    pub tx: u16,
}

fn parse_forward(s: &str) -> Result<Forward, String> {
    let hint = "expected RX:TX with two port ids, e.g. 0:1";
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` has no `:`; {hint}"))?;
    let port = |p: &str, which: &str| {
        if p.trim().is_empty() {
            return Err(format!("`{s}` is missing the {which} port; {hint}"));
        }
        p.trim()
            .parse::<u16>()
            .map_err(|_| format!("`{p}` is not a port id (0-65535); {hint}"))
    };
    Ok(Forward {
        rx: port(a, "RX")?,
        tx: port(b, "TX")?,
    })
}

/// Split the process arguments at the first `--`: EAL's part (with the program
/// name first) and the app's part (with the program name first, for clap).
pub fn split_args(args: Vec<String>) -> (Vec<String>, Vec<String>) {
    let prog = args.first().cloned().unwrap_or_else(|| "fastpath".into());
    match args.iter().position(|a| a == "--") {
        Some(i) => {
            let mut app = vec![prog];
            app.extend_from_slice(&args[i + 1..]);
            (args[..i].to_vec(), app)
        }
        None => (args, vec![prog]),
    }
}

impl AppArgs {
    /// The live view's style and period, if any: `--quiet` and
    /// `--stats-period 0` none; otherwise every second unless
    /// `--stats-period` says otherwise: a table on a terminal, lines
    /// elsewhere (a pipe, a file, the journal).
    pub fn live_view(&self, stdout_is_tty: bool) -> Option<(crate::ops::live::Style, f64)> {
        use crate::ops::live::Style;
        let style = if stdout_is_tty {
            Style::Table
        } else {
            Style::Lines
        };
        match (self.quiet, self.stats_period, stdout_is_tty) {
            (true, _, _) => None,
            (false, Some(p), _) if p > 0.0 => Some((style, p)),
            (false, None, _) => Some((style, 1.0)),
            _ => None,
        }
    }

    /// Check what can be checked before EAL starts.
    pub fn validate(&self) -> Result<(), String> {
        // A year is plenty, and keeps Instant arithmetic far from overflow.
        const MAX_SECS: f64 = 365.0 * 24.0 * 3600.0;
        if let Some(d) = self.duration {
            if !(d.is_finite() && d > 0.0 && d <= MAX_SECS) {
                return Err(format!(
                    "--duration {d}: give a positive number of seconds, at most {MAX_SECS} (a year); \
                     without --duration fastpath runs until Ctrl-C"
                ));
            }
        }
        if !(self.neigh_reachable.is_finite()
            && self.neigh_reachable > 0.0
            && self.neigh_reachable <= MAX_SECS)
        {
            return Err(format!(
                "--neigh-reachable {}: give a positive number of seconds, at most {MAX_SECS}",
                self.neigh_reachable
            ));
        }
        if !(self.fpm_hold.is_finite() && (0.0..=MAX_SECS).contains(&self.fpm_hold)) {
            return Err(format!(
                "--fpm-hold {}: give a number of seconds from 0 to {MAX_SECS}",
                self.fpm_hold
            ));
        }
        if let Some(p) = self.stats_period {
            if !(p.is_finite() && (0.0..=MAX_SECS).contains(&p)) {
                return Err(format!(
                    "--stats-period {p}: give 0 (off) or a positive number of seconds"
                ));
            }
        }
        Ok(())
    }
}

/// `--fpm ADDR:PORT`, or `ADDR` for zebra's default port 2620.
fn parse_fpm_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let t = s.trim();
    if let Ok(a) = t.parse::<std::net::IpAddr>() {
        return Ok(std::net::SocketAddr::new(a, crate::fpm::DEFAULT_PORT));
    }
    t.parse().map_err(|_| {
        format!("`{s}` is not ADDR:PORT; give e.g. --fpm 127.0.0.1:2620 (zebra's `fpm address 127.0.0.1 port 2620`)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<AppArgs, clap::Error> {
        AppArgs::try_parse_from(std::iter::once("fastpath").chain(v.iter().copied()))
    }

    #[test]
    fn split_at_double_dash() {
        let args: Vec<String> = ["fp", "-l", "0-1", "--", "--forward", "0:1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (eal, app) = split_args(args);
        assert_eq!(eal, ["fp", "-l", "0-1"]);
        assert_eq!(app, ["fp", "--forward", "0:1"]);
    }

    #[test]
    fn no_double_dash_means_all_eal() {
        let args: Vec<String> = ["fp", "-l", "0-1"].iter().map(|s| s.to_string()).collect();
        let (eal, app) = split_args(args);
        assert_eq!(eal.len(), 3);
        assert_eq!(app, ["fp"]);
    }

    #[test]
    fn forward_pairs_parse() {
        let a = parse(&["--forward", "0:1", "--forward", "1:0"]).unwrap();
        assert_eq!(
            a.forward,
            vec![Forward { rx: 0, tx: 1 }, Forward { rx: 1, tx: 0 }]
        );
    }

    #[test]
    fn forward_errors_say_what_is_missing() {
        let e = parse(&["--forward", "0:"]).unwrap_err().to_string();
        assert!(e.contains("missing the TX port"), "{e}");
        let e = parse(&["--forward", "0"]).unwrap_err().to_string();
        assert!(e.contains("no `:`"), "{e}");
        let e = parse(&["--forward", "x:1"]).unwrap_err().to_string();
        assert!(e.contains("not a port id"), "{e}");
    }

    #[test]
    fn unknown_option_is_an_error() {
        let e = parse(&["--frobnicate"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    #[test]
    fn config_excludes_forward_rules() {
        let a = parse(&["--config", "r.toml", "--stage-cycles"]).unwrap();
        assert_eq!(a.config.as_deref(), Some(std::path::Path::new("r.toml")));
        assert!(a.stage_cycles);
        let e = parse(&["--config", "r.toml", "--forward", "0:1"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn live_view_follows_the_terminal_and_the_flags() {
        use crate::ops::live::Style;
        let v = |args: &[&str], tty| parse(args).unwrap().live_view(tty);
        assert_eq!(v(&[], true), Some((Style::Table, 1.0)));
        assert_eq!(v(&[], false), Some((Style::Lines, 1.0)));
        assert_eq!(
            v(&["--stats-period", "2"], false),
            Some((Style::Lines, 2.0))
        );
        assert_eq!(v(&["--stats-period", "0"], true), None);
        assert_eq!(v(&["--quiet"], true), None);
        assert!(parse(&["--quiet", "--stats-period", "1"]).is_err());
    }

    #[test]
    fn fpm_address_takes_the_default_port_and_names_the_fix() {
        let cfg = ["--config", "x.toml"];
        let a = parse(&[&cfg[..], &["--fpm", "127.0.0.1"]].concat()).unwrap();
        assert_eq!(a.fpm.unwrap().port(), 2620);
        let a = parse(&[&cfg[..], &["--fpm", "127.0.0.1:2621"]].concat()).unwrap();
        assert_eq!(a.fpm.unwrap().port(), 2621);
        let e = parse(&[&cfg[..], &["--fpm", "zebra"]].concat())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--fpm 127.0.0.1:2620"), "{e}");
        assert!(
            parse(&["--fpm", "127.0.0.1"]).is_err(),
            "--fpm needs --config"
        );
    }

    #[test]
    fn metrics_address_errors_name_the_fix() {
        let e = parse(&["--metrics", "127.0.0.1"]).unwrap_err().to_string();
        assert!(
            e.contains("has no port") && e.contains("--metrics 127.0.0.1:9101"),
            "{e}"
        );
        let a = parse(&["--metrics", "127.0.0.1:9101"]).unwrap();
        assert_eq!(a.metrics.unwrap().port(), 9101);
    }

    #[test]
    fn until_input_done_is_a_flag_beside_duration() {
        let a = parse(&["--until-input-done", "--duration", "60"]).unwrap();
        assert!(a.until_input_done);
        assert_eq!(a.duration, Some(60.0));
        assert!(a.validate().is_ok());
        assert!(!parse(&[]).unwrap().until_input_done);
    }

    #[test]
    fn ranges_are_enforced() {
        assert!(parse(&["--rx-queues", "0"]).is_err());
        assert!(parse(&["--rx-desc", "8"]).is_err());
        assert!(parse(&["--duration", "0"]).unwrap().validate().is_err());
        assert!(parse(&["--duration", "1.5"]).unwrap().validate().is_ok());
        assert!(parse(&["--duration", "1e20"]).unwrap().validate().is_err());
        assert!(parse(&["--neigh-reachable", "1e20"])
            .unwrap()
            .validate()
            .is_err());
        assert!(parse(&["--neigh-reachable", "0"])
            .unwrap()
            .validate()
            .is_err());
        assert!(parse(&["--stats-period", "1e300"])
            .unwrap()
            .validate()
            .is_err());
    }
}
