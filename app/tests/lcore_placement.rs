//! `[[lcore]]` places RX queues on workers as the config says, not as the
//! default would (queue q of every port on worker q mod N). Two workers,
//! two ports of two RX queues each (net_pcap: one input file per queue, so
//! the test knows which queue each frame arrives on), placed crosswise:
//! lcore 1 polls queue 1 of port 0 and queue 0 of port 1, lcore 2 the other
//! two. The start log says so, and each worker's final counters hold the
//! frames of exactly its queues.

mod common;
#[path = "common/received.rs"]
mod received;

use common::ctl::prefix;
use common::frames::udp;
use common::watch::Watched;
use common::*;
use std::time::Duration;

/// Frames in the input file of each (port, queue).
const FRAMES: [[u16; 2]; 2] = [[101, 203], [37, 11]];

const CONFIG: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"
rx_queues = 2

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"
rx_queues = 2

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[neighbour]]
address = "10.0.2.2"
mac = "02:bb:00:00:00:22"

[[lcore]]
id = 1
queues = ["net_pcap0:1", "net_pcap1:0"]

[[lcore]]
id = 2
queues = ["net_pcap0:0", "net_pcap1:1"]
"#;

#[test]
fn lcore_tables_place_each_queue_on_the_worker_they_name() {
    const TEST: &str = "lcoremap";
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), CONFIG).unwrap();
    let mut vdevs = Vec::new();
    for (port, queues) in FRAMES.iter().enumerate() {
        let mut dev = format!("net_pcap{port}");
        for (queue, &n) in queues.iter().enumerate() {
            // Distinct flows per queue; routed or not, each is received.
            let frames: Vec<Vec<u8>> = (0..n)
                .map(|i| {
                    udp(
                        [10, 0, 1, 2],
                        [198, 51, 100, 9],
                        1000 * (queue as u16 + 1) + i,
                        53,
                    )
                })
                .collect();
            let input = p(&format!("in{port}q{queue}.pcap"));
            write_pcap(&input, &frames);
            dev.push_str(&format!(",rx_pcap={}", input.display()));
        }
        // One TX queue per worker.
        for w in 0..2 {
            dev.push_str(&format!(
                ",tx_pcap={}",
                p(&format!("out{port}w{w}.pcap")).display()
            ));
        }
        vdevs.push(dev);
    }
    // Two workers sharing one CPU (small machines), the main lcore on another.
    let mut eal = eal_args(TEST, &vdevs);
    let l = eal
        .iter()
        .position(|a| a == "-l")
        .expect("eal_args gives -l");
    eal[l] = "--lcores".into();
    eal[l + 1] = "0@0,1@1,2@1".into();
    let mut cmd = fastpath();
    cmd.args(eal)
        .args(["--", "--config"])
        .arg(p("router.toml"))
        .arg("--stats-json")
        .arg(p("stats.json"));
    let mut child = Watched::spawn(cmd);
    child.wait_stderr("fastpath: control socket", Duration::from_secs(30));
    let total = |port: usize| u64::from(FRAMES[port][0] + FRAMES[port][1]);
    received::wait_received(
        &prefix(TEST),
        &[(0, total(0)), (1, total(1))],
        Duration::from_secs(60),
    );
    child.signal("-INT");
    let r = child.finish(Duration::from_secs(30));
    assert_success(&r);

    for polls in ["lcore 1 polls 0/1, 1/0", "lcore 2 polls 0/0, 1/1"] {
        assert!(
            r.stderr.lines().any(|l| l.ends_with(polls)),
            "{polls:?} in:\n{}",
            r.stderr
        );
    }
    let s = read_json(&p("stats.json"));
    let rx = |lcore: u64| {
        s["lcores"]
            .as_array()
            .and_then(|a| a.iter().find(|l| l["lcore"] == lcore))
            .and_then(|l| l["rx"].as_u64())
            .unwrap_or_else(|| panic!("no lcore {lcore} in {s}"))
    };
    let q = |port: usize, queue: usize| u64::from(FRAMES[port][queue]);
    // The default placement would give lcore 1 queue 0 of both ports (138).
    assert_eq!(
        rx(1),
        q(0, 1) + q(1, 0),
        "lcore 1: port 0 queue 1, port 1 queue 0: {s}"
    );
    assert_eq!(
        rx(2),
        q(0, 0) + q(1, 1),
        "lcore 2: port 0 queue 0, port 1 queue 1: {s}"
    );
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
}
