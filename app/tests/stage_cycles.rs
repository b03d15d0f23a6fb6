//! `--stage-cycles` (docs/datapath.md, "Timing"): at exit, the TSC cycles
//! per packet of every pipeline stage, on the report's `cycles per packet:`
//! line and under `stage_cycles_per_packet` in the JSON statistics, each
//! stage named, in the datapath's order; stages the packets passed through
//! took cycles. Without the option, neither appears.

mod common;
#[path = "common/received.rs"]
mod received;

use common::ctl::prefix;
use common::frames::udp;
use common::watch::Watched;
use common::*;
use std::time::Duration;

/// The pipeline's stages, in the order they run.
const STAGES: [&str; 7] = [
    "l2_input",
    "ingress_hook",
    "ip_input",
    "egress_hook",
    "neigh_output",
    "local",
    "tx",
];

/// Routed frames in the input.
const FRAMES: u64 = 300;

/// Route `FRAMES` frames until all are received, stop; the run and its JSON.
fn run_routed(test: &str, extra: &[&str]) -> (Run, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), pcap_router_config!()).unwrap();
    let frames: Vec<Vec<u8>> = (0..FRAMES as u16)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 1000 + i, 53))
        .collect();
    write_pcap(&p("in0.pcap"), &frames);
    write_pcap(&p("in1.pcap"), &[]);
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &pcap_vdevs(dir.path())))
        .args(["--", "--config"])
        .arg(p("router.toml"))
        .arg("--stats-json")
        .arg(p("stats.json"))
        .args(extra);
    let mut child = Watched::spawn(cmd);
    child.wait_stderr("fastpath: control socket", Duration::from_secs(30));
    received::wait_received(&prefix(test), &[(0, FRAMES)], Duration::from_secs(60));
    child.signal("-INT");
    let r = child.finish(Duration::from_secs(30));
    assert_success(&r);
    let s = read_json(&p("stats.json"));
    assert_eq!(s["totals"]["tx"], FRAMES, "every frame routed: {s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    (r, s)
}

#[test]
fn every_stage_is_named_and_the_ones_packets_passed_took_cycles() {
    let (r, s) = run_routed("stagecyc", &["--stage-cycles"]);
    let json = s["stage_cycles_per_packet"]
        .as_object()
        .unwrap_or_else(|| panic!("no stage_cycles_per_packet: {s}"));
    let mut named: Vec<&str> = json.keys().map(String::as_str).collect();
    named.sort_unstable();
    let mut want = STAGES.to_vec();
    want.sort_unstable();
    assert_eq!(named, want, "{json:?}");
    let cycles = |n: &str| json[n].as_f64().unwrap_or_else(|| panic!("{n}: {json:?}"));
    for n in STAGES {
        assert!(cycles(n).is_finite() && cycles(n) >= 0.0, "{n}: {json:?}");
    }
    // Every packet was received, routed, given its next hop's header and sent.
    for n in ["l2_input", "ip_input", "neigh_output", "tx"] {
        assert!(cycles(n) > 0.0, "{n} took no cycles: {json:?}");
    }

    // The report's line: the same stages, in the datapath's order.
    let line = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("cycles per packet: "))
        .unwrap_or_else(|| panic!("no `cycles per packet:` line:\n{}", r.stdout));
    let parts: Vec<(&str, f64)> = line
        .split(", ")
        .map(|part| {
            let (n, c) = part.split_once(' ').unwrap_or_else(|| panic!("{part:?}"));
            (n, c.parse().unwrap_or_else(|_| panic!("{part:?}")))
        })
        .collect();
    let order: Vec<&str> = parts.iter().map(|(n, _)| *n).collect();
    assert_eq!(order, STAGES, "{line}");
    for (n, c) in parts {
        assert!(
            (c - cycles(n)).abs() <= 0.05,
            "{n}: {c} printed, {} in the JSON",
            cycles(n)
        );
    }
}

#[test]
fn without_the_option_no_stage_is_timed() {
    let (r, s) = run_routed("stagecyc-off", &[]);
    assert!(s.get("stage_cycles_per_packet").is_none(), "{s}");
    assert!(!r.stdout.contains("cycles per packet"), "{}", r.stdout);
}
