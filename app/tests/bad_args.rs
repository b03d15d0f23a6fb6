//! Bad command lines: a clear message on stderr, a non-zero exit, no panic.

mod common;
use common::*;
use std::time::Duration;

fn run_args(test: &str, vdevs: &[String], app: &[&str]) -> Run {
    let mut cmd = fastpath();
    cmd.args(eal_args(test, vdevs)).arg("--").args(app);
    run(cmd, Duration::from_secs(60))
}

fn null_pair() -> Vec<String> {
    vec!["net_null0".into(), "net_null1".into()]
}

fn assert_clean_failure(r: &Run, code: i32, needle: &str) {
    assert_eq!(r.status.code(), Some(code), "stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "stderr lacks {needle:?}:\n{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "panic:\n{}", r.stderr);
    assert!(
        !r.stderr.contains("RUST_BACKTRACE"),
        "backtrace:\n{}",
        r.stderr
    );
}

#[test]
fn unknown_option() {
    let r = run_args("badopt", &null_pair(), &["--frobnicate"]);
    assert_clean_failure(&r, 2, "unexpected argument '--frobnicate'");
    assert!(r.stderr.contains("--help"), "{}", r.stderr);
}

#[test]
fn missing_port_in_forward_rule() {
    let r = run_args("missing", &null_pair(), &["--forward", "0:"]);
    assert_clean_failure(&r, 2, "missing the TX port");
}

#[test]
fn port_out_of_range() {
    let r = run_args(
        "range",
        &null_pair(),
        &["--forward", "0:5", "--duration", "1"],
    );
    assert_clean_failure(&r, 2, "port 5 does not exist");
    assert!(
        r.stderr
            .contains("DPDK has 2 ports: 0 (net_null0), 1 (net_null1)"),
        "{}",
        r.stderr
    );
}

#[test]
fn odd_port_count_without_rules() {
    let r = run_args("odd", &["net_null0".into()], &["--duration", "1"]);
    assert_clean_failure(&r, 2, "needs an even number of ports");
}

#[test]
fn eal_failure() {
    // EAL refuses --socket-mem together with --no-huge (which eal_args gives).
    let mut cmd = fastpath();
    cmd.args(eal_args("ealfail", &null_pair())).args([
        "--socket-mem",
        "64",
        "--",
        "--duration",
        "1",
    ]);
    let r = run(cmd, Duration::from_secs(60));
    assert_clean_failure(&r, 1, "EAL initialisation failed");
    assert!(r.stderr.contains("EAL options before `--`"), "{}", r.stderr);
}

#[test]
fn vdev_without_a_driver_is_named_before_eal_starts() {
    let r = run_args(
        "nodriver",
        &["net_nosuchdriver0".into(), "net_null1".into()],
        &["--duration", "1"],
    );
    assert_clean_failure(
        &r,
        2,
        "--vdev net_nosuchdriver0: no poll-mode driver of that name is in this build",
    );
    // It names the drivers there are, and EAL never started.
    assert!(r.stderr.contains("net_null"), "{}", r.stderr);
    assert!(!r.stderr.contains("EAL: Detected"), "{}", r.stderr);
}

#[test]
fn no_worker_lcore() {
    let mut cmd = fastpath();
    let mut eal = eal_args("nowork", &null_pair());
    eal[1] = "0".into(); // -l 0: only the main lcore
    cmd.args(eal).args(["--", "--duration", "1"]);
    let r = run(cmd, Duration::from_secs(60));
    assert_clean_failure(&r, 2, "no worker lcore");
}

#[test]
fn help_describes_the_options() {
    let mut cmd = fastpath();
    cmd.arg("--help");
    let r = run(cmd, Duration::from_secs(10));
    assert!(r.status.success(), "{}", r.stderr);
    for opt in [
        "--forward",
        "--rx-queues",
        "--duration",
        "--stats-json",
        "EAL options",
    ] {
        assert!(r.stdout.contains(opt), "--help lacks {opt}:\n{}", r.stdout);
    }
}

#[test]
fn app_option_before_double_dash() {
    let mut cmd = fastpath();
    cmd.args(eal_args("before", &null_pair()))
        .args(["--duration", "1"]);
    let r = run(cmd, Duration::from_secs(60));
    // EAL refuses the option it does not know, and we say where it belongs.
    assert_clean_failure(&r, 1, "unrecognized option '--duration'");
    assert!(r.stderr.contains("EAL options"), "{}", r.stderr);
}

#[test]
fn stray_argument_eal_leaves_alone() {
    let mut cmd = fastpath();
    cmd.args(eal_args("stray", &null_pair()))
        .args(["stray", "--", "--duration", "0.2"]);
    let r = run(cmd, Duration::from_secs(60));
    assert_clean_failure(
        &r,
        2,
        "EAL did not take [\"stray\"]: EAL options go before `--`",
    );
}

#[test]
fn metrics_without_a_port() {
    let r = run_args("metrics-noport", &null_pair(), &["--metrics", "127.0.0.1"]);
    assert_clean_failure(&r, 2, "`127.0.0.1` has no port");
    assert!(
        r.stderr.contains("--metrics 127.0.0.1:9101"),
        "{}",
        r.stderr
    );
}

#[test]
fn metrics_address_in_use_fails_before_eal() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let r = run_args(
        "metrics-inuse",
        &null_pair(),
        &["--metrics", &addr, "--duration", "1"],
    );
    assert_clean_failure(&r, 2, &format!("--metrics {addr}: cannot listen"));
    assert!(r.stderr.contains("pick another port"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("EAL:"),
        "fails before EAL starts:\n{}",
        r.stderr
    );
}

#[test]
fn fpm_address_in_use_fails_before_any_port_starts() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("router.toml");
    std::fs::write(
        &cfg,
        "[[port]]\ndevice = \"net_null0\"\naddress = \"10.0.1.1/24\"\n",
    )
    .unwrap();
    let r = run_args(
        "fpm-inuse",
        &["net_null0".into()],
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--fpm",
            &addr,
            "--duration",
            "1",
        ],
    );
    assert_clean_failure(&r, 2, &format!("--fpm {addr}: cannot listen"));
    assert!(r.stderr.contains("pick another port"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("link up"),
        "no port started:\n{}",
        r.stderr
    );
}
