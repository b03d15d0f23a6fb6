//! SIGINT, SIGTERM and SIGHUP (without hooks to reload) while forwarding at
//! full speed (pcap replayed from memory into a null sink): exit 0,
//! rx == tx + dropped, every mbuf back in its pool. The signal goes out once
//! fastpath says it forwards and its `--stats-period` rates show traffic,
//! not after a guessed sleep.

mod common;
use common::watch::Watched;
use common::*;
use std::time::Duration;

/// Seconds between `--stats-period` lines.
const PERIOD: f64 = 0.1;
/// Packets forwarded before the signal, by the rates fastpath prints.
const BEFORE_SIGNAL: f64 = 200_000.0;
/// Packets the final report must count at least (half the estimate: the
/// estimate from rates is not a count).
const AT_LEAST: u64 = 100_000;

#[test]
fn sigint_stops_cleanly_with_balanced_counters() {
    stops_cleanly_on("-INT", "sigint");
}

#[test]
fn sigterm_stops_cleanly() {
    stops_cleanly_on("-TERM", "sigterm");
}

#[test]
fn sighup_without_hooks_stops_cleanly() {
    stops_cleanly_on("-HUP", "sighup");
}

fn stops_cleanly_on(signal: &str, tag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (input, json) = (dir.path().join("in.pcap"), dir.path().join("stats.json"));
    write_pcap(&input, &random_frames(256, 7));

    let mut cmd = fastpath();
    cmd.args(eal_args(
        tag,
        &[
            format!("net_pcap0,rx_pcap={},infinite_rx=1", input.display()),
            "net_null0,no-rx=1".to_string(),
        ],
    ))
    .args([
        "--",
        "--forward",
        "0:1",
        "--stats-period",
        &PERIOD.to_string(),
    ])
    .arg("--stats-json")
    .arg(&json);
    let mut child = Watched::spawn(cmd);

    // Workers run, then traffic flows at full speed.
    child.wait_stderr("forwarding", Duration::from_secs(30));
    let seen = child.wait_received(0, BEFORE_SIGNAL, PERIOD, Duration::from_secs(30));
    child.signal(signal);
    let r = child.finish(Duration::from_secs(30));
    assert_success(&r);

    let s = read_json(&json);
    let rx = s["totals"]["rx"].as_u64().unwrap();
    let tx = s["totals"]["tx"].as_u64().unwrap();
    let dropped = s["totals"]["dropped"].as_u64().unwrap();
    assert!(
        rx > AT_LEAST,
        "forwarded too little to be full speed: rx {rx} (rates said about {seen:.0})"
    );
    assert_eq!(rx, tx + dropped, "counters do not balance");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["ports"][0]["rx"].as_u64().unwrap(), rx);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "mbufs leaked");
    // The driver's own count of what the null port sent agrees with ours.
    assert_eq!(s["ports"][1]["driver"]["tx_packets"].as_u64().unwrap(), tx);
}
