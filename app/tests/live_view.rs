//! The live view: without a terminal, `--stats-period` prints one line per
//! period with per port rates, drops and their top reasons, and each
//! worker's busy share, every second by default; `--quiet` prints none of
//! it; the final statistics follow either way.

mod common;
use common::watch::{rates, Stream, Watched};
use common::*;
use std::time::Duration;

/// How long a test waits for what a running fastpath prints.
const LIMIT: Duration = Duration::from_secs(60);

fn null_run(test: &str, app: &[&str]) -> Run {
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &["net_null0".into(), "net_null1".into()]))
        .arg("--")
        .args(["--forward", "0:1", "--duration", "1.2"])
        .args(app);
    run(cmd, Duration::from_secs(60))
}

fn periodic(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with('[')).collect()
}

#[test]
fn lines_carry_rates_drops_and_busy_share() {
    let mut cmd = fastpath();
    cmd.args(eal_args(
        "live-lines",
        &["net_null0".into(), "net_null1".into()],
    ))
    .args(["--", "--forward", "0:1", "--stats-period", "0.2"]);
    // Four lines, however long the machine takes to print them; then stop.
    let mut fp = Watched::spawn(cmd);
    let first = fp.next_rates(LIMIT);
    assert!(first[0].rx_pps > 0.0, "{first:?}");
    for _ in 0..3 {
        fp.next_rates(LIMIT);
    }
    fp.signal("-INT");
    let r = fp.finish(LIMIT);
    assert_success(&r);
    let lines = periodic(&r.stdout);
    assert!(lines.len() >= 4, "{}", r.stdout);
    for l in &lines {
        assert!(rates(l).is_some(), "{l}");
        for field in [
            "rx-gbps",
            "tx-gbps",
            "drops-ps",
            " top ",
            "| lcore 1 busy-pct ",
        ] {
            assert!(l.contains(field), "{field:?} missing: {l}");
        }
        let busy: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        // net_null always has packets: every period has busy rounds, however
        // the worker was scheduled (a share, not a speed).
        assert!(busy > 0.0 && busy <= 100.0, "{l}");
    }
    assert!(r.stdout.contains("== fastpath statistics"), "{}", r.stdout);
}

#[test]
fn quiet_prints_no_periodic_lines_and_the_default_one_a_second() {
    // --quiet: past the default period's first line, still none.
    let r = null_run("live-quiet", &["--quiet"]);
    assert_success(&r);
    assert_eq!(periodic(&r.stdout), Vec::<&str>::new(), "{}", r.stdout);
    assert!(r.stdout.contains("[balanced]"), "{}", r.stdout);
    // The default: a line comes without --stats-period; then stop it.
    let mut cmd = fastpath();
    cmd.args(eal_args(
        "live-default",
        &["net_null0".into(), "net_null1".into()],
    ))
    .args(["--", "--forward", "0:1"]);
    let mut fp = Watched::spawn(cmd);
    fp.next_rates(LIMIT);
    fp.signal("-INT");
    let r = fp.finish(LIMIT);
    assert_success(&r);
    let lines = periodic(&r.stdout);
    assert!(!lines.is_empty(), "{}", r.stdout);
    assert!(lines.iter().all(|l| rates(l).is_some()), "{}", r.stdout);
    assert!(r.stdout.contains("[balanced]"), "{}", r.stdout);
}

#[test]
fn drops_show_their_top_reason() {
    // Frames to another MAC, in router mode: all dropped as `other_host`.
    let dir = tempfile::tempdir().unwrap();
    let mut frame = vec![0u8; 60];
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    write_pcap(&dir.path().join("in0.pcap"), &vec![frame; 200_000]);
    write_pcap(&dir.path().join("in1.pcap"), &[]);
    std::fs::write(dir.path().join("r.toml"), pcap_ports_config!()).unwrap();
    let mut cmd = fastpath();
    cmd.args(eal_args("live-drops", &pcap_vdevs(dir.path())))
        .args(["--", "--config"])
        .arg(dir.path().join("r.toml"))
        .args(["--stats-period", "0.05"]);
    // Read the lines as they come: port 0 dropping with its top reason, then,
    // once the pcap is read, dropping nothing; then stop it.
    let port0 = |l: &str| l.split(" | ").next().unwrap_or("").to_string();
    let mut fp = Watched::spawn(cmd);
    fp.wait_for("a line of port 0 dropping other_host", LIMIT, |s, l| {
        (s == Stream::Stdout && port0(l).contains(" top other_host:")).then_some(())
    });
    fp.wait_for("a line of port 0 dropping nothing", LIMIT, |s, l| {
        (s == Stream::Stdout && rates(l).is_some() && port0(l).contains("drops-ps 0 top -"))
            .then_some(())
    });
    fp.signal("-INT");
    let r = fp.finish(LIMIT);
    assert_success(&r);
    let lines = periodic(&r.stdout);
    let dropping: Vec<&&str> = lines
        .iter()
        .filter(|l| port0(l).contains(" top other_host:"))
        .collect();
    assert!(!dropping.is_empty(), "{}", r.stdout);
    for l in dropping {
        assert!(!port0(l).contains("drops-ps 0 "), "{l}");
    }
    // Once the pcap is read, nothing drops: no reason is shown.
    assert!(
        lines.last().unwrap().contains("drops-ps 0 top -"),
        "{}",
        r.stdout
    );
}
