//! `fastpath-bench search` against dpdk-testpmd io in another process over
//! memif: the whole command (EAL, links, trials, JSON, plots), on a bound the
//! peer forwards without loss, and on a bound it cannot reach.
//!
//! Counts, not speeds: each trial (at most 10 kpps for 0.3 s) fits in a memif
//! ring (4,096 slots), so no ring fills however the pollers are scheduled,
//! and a long drain waits for stragglers: a trial loses exactly what the
//! device drops (nothing for testpmd, one flow of ten for the lossy fastpath).

mod common;
use common::*;

fn search(
    name: &str,
    rate: &str,
    extra: &[&str],
) -> (
    fastpath_bench::report::Report,
    std::path::PathBuf,
    tempfile::TempDir,
) {
    let dir = workdir();
    let sock = dir.path().join("m.sock");
    let mut dut = start_dut(
        &testpmd(),
        &[
            "--forward-mode=io",
            "--nb-cores=1",
            "--total-num-mbufs",
            "8191",
            "-a",
            "--stats-period",
            "1",
        ],
        dir.path(),
        &sock,
        name,
        "packet forwarding - ports",
    );
    let json = dir.path().join("search.json");
    let stem = dir.path().join("plots/search");
    let mut args = vec![
        "--flows",
        "64",
        "--size",
        "imix",
        "--vlan",
        "42",
        "--rate",
        rate,
        "--seconds",
        "0.3",
        "--warmup-ms",
        "0",
        "--drain-ms",
        "4000",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        stem.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = generator("search", &args, &sock, name, &mut dut);
    let r = report(&out, &json);
    assert!(
        out.stdout.contains("verdict"),
        "no table on the terminal:\n{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("trial 1: offered"),
        "no progress lines:\n{}",
        out.stderr
    );
    (r, stem, dir)
}

#[test]
fn a_bound_testpmd_forwards_is_the_ndr_in_one_trial_with_plots() {
    let (r, stem, _dir) = search("ndr", "10kpps", &[]);
    assert_eq!(r.tool, "fastpath-bench");
    let p = r.search.expect("search parameters");
    assert_eq!((p.loss_ratio, p.max_rate_pps), (0.0, 10_000.0));
    assert_eq!(r.trials.len(), 1, "{:?}", r.trials);
    let t = r.result.expect("NDR");
    assert!(t.pass && t.sent > 0 && t.received == t.sent, "{t:?}");
    assert_eq!(r.spec["vlan"], 42);
    assert_eq!(r.spec["sizes"], "imix");
    assert!((r.frame_mean_bytes - 361.83).abs() < 0.01);
    for kind in ["rate", "latency"] {
        let f = stem.with_file_name(format!("search-{kind}.svg"));
        let svg = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{}",
            &svg[..60.min(svg.len())]
        );
        assert!(!svg.contains("NaN"));
    }
}

/// Search fastpath dropping one flow of ten (10 % loss at any rate).
fn search_lossy(name: &str, extra: &[&str]) -> fastpath_bench::report::Report {
    let dir = workdir();
    let sock = dir.path().join("m.sock");
    let mut dut = start_lossy_fastpath(dir.path(), &sock, name);
    let json = dir.path().join("search.json");
    let mut args = vec![
        "--flows",
        "10",
        "--vary",
        "src-port",
        "--rate",
        "10kpps",
        "--seconds",
        "0.2",
        "--warmup-ms",
        "0",
        "--drain-ms",
        "2000",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = generator("search", &args, &sock, name, &mut dut);
    report(&out, &json)
}

#[test]
fn a_device_that_always_loses_has_no_ndr_and_the_search_ends() {
    // Every trial loses one packet of ten: the window halves from 10 kpps
    // down to the 5 % resolution, log2(20) rounded up plus the first trial,
    // then stops. A trial offers at most the rate it was asked for (less if
    // the generator was descheduled), so trial k offers at most 10 kpps / 2^k.
    let r = search_lossy("nondr", &["--resolution", "0.05"]);
    assert!(r.result.is_none(), "{:?}", r.result);
    assert_eq!(r.trials.len(), 6, "{:?}", r.trials);
    for (k, t) in r.trials.iter().enumerate() {
        assert!(!t.pass && one_in_ten_lost(t), "{t:?}");
        let asked = 10_000.0 / f64::from(1u32 << k);
        assert!(
            t.offered_pps <= asked * 1.001,
            "trial {k} above {asked}: {t:?}"
        );
    }
}

/// The trial lost exactly the lossy fastpath's flow of ten: sent / 10, give
/// or take the one packet where its first sequence number falls in the cycle.
fn one_in_ten_lost(t: &fastpath_bench::report::Trial) -> bool {
    t.sent >= 10 && (t.lost as f64 - t.sent as f64 / 10.0).abs() <= 1.0
}

#[test]
fn a_pdr_above_the_loss_passes_at_the_bound_in_one_trial() {
    let r = search_lossy("pdr", &["--loss-ratio", "0.15"]);
    assert_eq!(r.search.expect("search parameters").max_rate_pps, 10_000.0);
    assert_eq!(r.trials.len(), 1, "{:?}", r.trials);
    let t = r.result.expect("PDR at 15 % passes");
    assert!(t.pass && one_in_ten_lost(&t), "{t:?}");
}
