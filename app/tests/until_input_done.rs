//! `--until-input-done`: a run on pcap files ends on its own once every
//! frame is read and nothing is in flight (no `--duration` needed), packets
//! waiting for a neighbour end as sent or failed rather than cut off, an
//! input with no end is refused at start naming the port and the fix, and
//! a `--duration` that ends first fails the run instead of passing it on
//! part of its input.

mod common;
use common::frames::udp;
use common::*;
use std::path::Path;

/// A router config of the two pcap ports, nothing routed beyond them.
const CONFIG: &str = pcap_ports_config!();

/// 10.0.2.77, on port 1's subnet, never answers ARP.
const SILENT: [u8; 4] = [10, 0, 2, 77];

/// fastpath in router mode on `in0`/`in1` of `dir` (see [`pcap_vdevs`])
/// with the app options `app`.
fn router(test: &str, dir: &Path, in0: &[Vec<u8>], app: &[&str]) -> Run {
    write_pcap(&dir.join("in0.pcap"), in0);
    write_pcap(&dir.join("in1.pcap"), &[]);
    std::fs::write(dir.join("router.toml"), CONFIG).unwrap();
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &pcap_vdevs(dir)))
        .args(["--", "--config"])
        .arg(dir.join("router.toml"))
        .args(["--quiet", "--stats-json"])
        .arg(dir.join("stats.json"))
        .args(app);
    run(cmd, INPUT_WAIT)
}

#[test]
fn a_forwarding_run_ends_on_its_own_with_every_frame_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output, json) = (
        dir.path().join("in.pcap"),
        dir.path().join("out.pcap"),
        dir.path().join("stats.json"),
    );
    let frames = random_frames(5000, 36);
    write_pcap(&input, &frames);
    let mut cmd = fastpath();
    cmd.args(eal_args(
        "eof-fwd",
        &[
            format!("net_pcap0,rx_pcap={}", input.display()),
            format!("net_pcap1,tx_pcap={}", output.display()),
            // Receives nothing, as a port with only tx_pcap does.
            "net_null0,no-rx=1".into(),
            "net_null1".into(),
        ],
    ))
    // No --duration: only the end of the input stops this run (the
    // harness kills it otherwise). net_null1 only transmits.
    .args(["--", "--forward", "0:1", "--forward", "2:3"])
    .args(["--until-input-done", "--quiet", "--stats-json"])
    .arg(&json);
    let r = run(cmd, INPUT_WAIT);
    assert_success(&r);
    assert!(
        r.stderr
            .contains("forwarding until the input is used up (5000 frames on port 0, 0 on port 2)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("input used up after")
            && r.stderr.contains("nothing in flight: stopping"),
        "{}",
        r.stderr
    );
    let out = fastpath::pcap::read(std::fs::File::open(&output).unwrap()).unwrap();
    assert!(
        out == frames,
        "{} of 5000 frames out, or not in order",
        out.len()
    );
    let s = read_json(&json);
    assert_eq!(s["ports"][0]["rx"], 5000, "{s}");
    assert_eq!(s["ports"][1]["tx"], 5000, "{s}");
    assert_eq!(s["totals"]["dropped"], 0, "{s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
}

#[test]
fn packets_waiting_for_a_neighbour_end_failed_not_cut_off() {
    // 10 packets for a neighbour that never answers: the run waits for the
    // resolution to fail (3 requests, about 1.75 s) rather than drop them
    // at shutdown, with no --duration to guess.
    let dir = tempfile::tempdir().unwrap();
    let frames: Vec<Vec<u8>> = (0..10).map(|i| udp([10, 0, 1, 2], SILENT, i, 53)).collect();
    let r = router("eof-neigh", dir.path(), &frames, &["--until-input-done"]);
    assert_success(&r);
    let s = read_json(&dir.path().join("stats.json"));
    let drops = &s["totals"]["drops"];
    assert_eq!(drops["neigh_failed"], 10, "{s}");
    assert_eq!(drops["shutdown_drain"], 0, "{s}");
    assert_eq!(s["control"]["arp_requests"], 3, "{s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    let out1 = fastpath::pcap::read(std::fs::File::open(dir.path().join("out1.pcap")).unwrap());
    assert_eq!(out1.unwrap().len(), 3, "the three ARP requests");
}

#[test]
fn a_duration_that_ends_first_fails_the_run_and_says_what_it_waited_for() {
    // The neighbour's failure takes 1.75 s after the first request, so a
    // bound of 0.3 s from start always comes first.
    let dir = tempfile::tempdir().unwrap();
    let frames: Vec<Vec<u8>> = (0..10).map(|i| udp([10, 0, 1, 2], SILENT, i, 53)).collect();
    let r = router(
        "eof-deadline",
        dir.path(),
        &frames,
        &["--until-input-done", "--duration", "0.3"],
    );
    assert_eq!(r.status.code(), Some(4), "{}", r.stderr);
    let error = "error: --duration ended before the input was used up (--until-input-done): \
                 waiting for ";
    let said = r
        .stderr
        .lines()
        .find(|l| l.starts_with(error))
        .unwrap_or_else(|| panic!("no {error:?}:\n{}", r.stderr));
    // The packets wait for the neighbour (or, on a machine too loaded to
    // read them in 0.3 s, are still in the file).
    assert!(
        said.contains("10 packets in flight")
            || said.contains("port 0 (net_pcap0) read 0 of the 10 frames of"),
        "{said}"
    );
    // The statistics are still printed and written; nothing failed yet.
    assert!(r.stdout.contains("[balanced]"), "{}", r.stdout);
    let s = read_json(&dir.path().join("stats.json"));
    assert_eq!(s["totals"]["drops"]["neigh_failed"], 0, "{s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
}

#[test]
fn an_input_with_no_end_is_refused_naming_the_port_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    write_pcap(&input, &random_frames(4, 1));
    for (test, vdev, port, why) in [
        (
            "eof-infinite",
            format!("net_pcap0,rx_pcap={},infinite_rx=1", input.display()),
            "port 0 (net_pcap0)",
            "(infinite_rx=1), which has no end",
        ),
        (
            "eof-null",
            "net_null0".to_string(),
            "port 0 (net_null0)",
            "a net_null device, which has no end",
        ),
    ] {
        let mut cmd = fastpath();
        cmd.args(eal_args(test, &[vdev, "net_null1,no-rx=1".into()]))
            .args(["--", "--until-input-done"]);
        let r = run(cmd, INPUT_WAIT);
        assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
        for needle in [
            port,
            why,
            "rx_pcap=FILE, without infinite_rx=1",
            "stop with --duration SECS or Ctrl-C instead",
        ] {
            assert!(r.stderr.contains(needle), "lacks {needle:?}:\n{}", r.stderr);
        }
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(!r.stderr.contains("forwarding"), "refused before it starts");
    }
}

#[test]
fn help_describes_the_option() {
    let mut cmd = fastpath();
    cmd.arg("--help");
    let r = run(cmd, INPUT_WAIT);
    assert_success(&r);
    assert!(r.stdout.contains("--until-input-done"), "{}", r.stdout);
    assert!(
        r.stdout.contains("Stop once the input is used up"),
        "{}",
        r.stdout
    );
}
