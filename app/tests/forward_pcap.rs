//! A known pcap through net_pcap0 (rx) -> fastpath -> net_pcap1 (tx) arrives
//! byte for byte, and every counter matches the packet count.

mod common;
use common::*;

#[test]
fn pcap_in_equals_pcap_out_and_counters_match() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output, json) = (
        dir.path().join("in.pcap"),
        dir.path().join("out.pcap"),
        dir.path().join("stats.json"),
    );
    let frames = random_frames(2000, 0x5eed);
    write_pcap(&input, &frames);

    let mut cmd = fastpath();
    cmd.args(eal_args(
        "fwdpcap",
        &[
            format!("net_pcap0,rx_pcap={}", input.display()),
            format!("net_pcap1,tx_pcap={}", output.display()),
        ],
    ))
    .args(["--", "--forward", "0:1"])
    .args(UNTIL_INPUT_DONE)
    .arg("--stats-json")
    .arg(&json);
    let r = run(cmd, INPUT_WAIT);
    assert_success(&r);

    let out = fastpath::pcap::read(std::fs::File::open(&output).unwrap()).unwrap();
    assert_eq!(out.len(), frames.len(), "frame count differs");
    for (i, (a, b)) in frames.iter().zip(out.iter()).enumerate() {
        assert_eq!(a, b, "frame {i} differs");
    }

    let s = read_json(&json);
    let n = frames.len() as u64;
    assert_eq!(s["ports"][0]["rx"], n);
    assert_eq!(s["ports"][0]["driver"]["rx_packets"], n);
    assert_eq!(s["ports"][1]["tx"], n);
    assert_eq!(s["ports"][1]["driver"]["tx_packets"], n);
    assert_eq!(s["totals"]["rx"], n);
    assert_eq!(s["totals"]["tx"], n);
    assert_eq!(s["totals"]["dropped"], 0);
    assert_eq!(s["totals"]["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0);
    assert!(r.stdout.contains("[balanced]") && r.stdout.contains("[no leak]"));
}
