//! A TX queue that fills up: net_pcap0 (2048 frames) -> fastpath ->
//! net_ring0, whose ring nobody empties while running (it loops our TX back
//! to its own RX, which no worker polls). The refused packets are counted as
//! tx_queue_full, the 1023 that fit in the ring are drained at shutdown and
//! counted as shutdown_drain, the counters balance and no mbuf leaks.

mod common;
use common::*;

#[test]
fn full_tx_ring_is_counted_and_drained_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (input, json) = (dir.path().join("in.pcap"), dir.path().join("stats.json"));
    write_pcap(&input, &random_frames(2048, 11));

    let mut cmd = fastpath();
    cmd.args(eal_args(
        "txfull",
        &[
            format!("net_pcap0,rx_pcap={}", input.display()),
            "net_ring0".to_string(),
        ],
    ))
    // Only port 0 is polled: the ring's RX side is no input.
    .args(["--", "--forward", "0:1"])
    .args(UNTIL_INPUT_DONE)
    .arg("--stats-json")
    .arg(&json);
    let r = run(cmd, INPUT_WAIT);
    assert_success(&r);

    let s = read_json(&json);
    let ring = &s["ports"][1];
    let sent = ring["tx"].as_u64().unwrap();
    let full = ring["drops"]["tx_queue_full"].as_u64().unwrap();
    let drained = ring["drops"]["shutdown_drain"].as_u64().unwrap();
    // The ring holds 1023 mbufs and nothing empties it while running.
    assert_eq!(sent, 1023, "ring port: tx {sent}");
    assert_eq!(full, 2048 - 1023, "ring port: tx_queue_full {full}");
    assert_eq!(drained, sent, "every packet left in the ring is drained");
    assert_eq!(ring["rx"].as_u64().unwrap(), drained);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(
        s["mbufs"]["in_use_at_exit"], 0,
        "mbufs left in the ring leaked"
    );
    assert!(r.stderr.contains("drained"), "{}", r.stderr);
}
