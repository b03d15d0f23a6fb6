//! SIGINT, SIGTERM and SIGHUP (without hooks to reload) while forwarding at
//! full speed (pcap replayed from memory into a null sink): exit 0,
//! rx == tx + dropped, every mbuf back in its pool.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

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
    .args(["--", "--forward", "0:1", "--stats-json"])
    .arg(&json);
    let mut child = spawn(cmd);

    // Wait until the workers run, then let them forward for a second.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let start = Instant::now();
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).unwrap();
        seen.push_str(&line);
        if line.contains("forwarding") {
            break;
        }
        assert!(
            n > 0 && start.elapsed() < Duration::from_secs(30),
            "fastpath never started forwarding:\n{seen}"
        );
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    std::thread::sleep(Duration::from_secs(1));
    let kill = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    child.stderr = None;
    let r = wait(child, Duration::from_secs(30));
    assert_success(&r);

    let s = read_json(&json);
    let rx = s["totals"]["rx"].as_u64().unwrap();
    let tx = s["totals"]["tx"].as_u64().unwrap();
    let dropped = s["totals"]["dropped"].as_u64().unwrap();
    assert!(
        rx > 100_000,
        "forwarded too little to be full speed: rx {rx}"
    );
    assert_eq!(rx, tx + dropped, "counters do not balance");
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["ports"][0]["rx"].as_u64().unwrap(), rx);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "mbufs leaked");
    // The driver's own count of what the null port sent agrees with ours.
    assert_eq!(s["ports"][1]["driver"]["tx_packets"].as_u64().unwrap(), tx);
}
