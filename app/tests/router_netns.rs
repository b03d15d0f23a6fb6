//! fastpath as the router between two kernel hosts in network namespaces,
//! over net_af_packet on veth pairs: ARP, ping both ways with TTL - 1, ping of
//! our own addresses, ICMP time exceeded, no route, unresolvable next hop,
//! neighbour aging with a unicast re-probe seen on the wire, a 10 MiB TCP
//! transfer compared byte for byte, and at stop balanced counters with every
//! mbuf back.

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::watch::{Stream, Watched};
use common::*;
use netns::Topology;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The router's config: net_af_packet0/1 are the router ends of the veths.
fn config() -> String {
    r#"# two hosts, one router
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"
"#
    .to_string()
}

/// Ping until it answers (fastpath is starting), at most `limit`.
fn ping_until_up(topo: &Topology, dst: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let out = topo.exec("a", &["ping", "-n", "-c", "1", "-W", "1", dst]);
        if out.status.success() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "no answer from {dst} within {limit:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn routes_between_two_namespaces() {
    let topo = Topology::new("rt");
    let dir = tempfile::tempdir().unwrap();
    let (cfg_path, json) = (
        dir.path().join("router.toml"),
        dir.path().join("stats.json"),
    );
    std::fs::write(&cfg_path, config()).unwrap();

    let child = spawn_af_packet(|| {
        let mut cmd = fastpath();
        cmd.args(eal_args(
            "router",
            &[
                format!("net_af_packet0,iface={},framecnt=4096", topo.router_if("a")),
                format!("net_af_packet1,iface={},framecnt=4096", topo.router_if("b")),
            ],
        ))
        .args(["--", "--config"])
        .arg(&cfg_path)
        .args(["--neigh-reachable", "1", "--stats-json"])
        .arg(&json);
        cmd
    });
    let pid = child.id();
    // From here on a failure must still stop fastpath: wait() kills it at the deadline.
    let checks = std::panic::catch_unwind(|| {
        ping_until_up(&topo, "10.0.1.1", Duration::from_secs(20));

        // Both ways, through fastpath: one hop, so TTL 64 arrives as 63.
        let (ok, out) = topo.ping("a", "10.0.2.2", &[]);
        assert!(
            ok && out.contains("3 received") && out.contains("ttl=63"),
            "{out}"
        );
        let (ok, out) = topo.ping("b", "10.0.1.2", &[]);
        assert!(
            ok && out.contains("3 received") && out.contains("ttl=63"),
            "{out}"
        );

        // Our own addresses, near and far side: answered by fastpath, TTL 64.
        for addr in ["10.0.1.1", "10.0.2.1"] {
            let (ok, out) = topo.ping("a", addr, &[]);
            assert!(ok && out.contains("ttl=64"), "{addr}: {out}");
        }

        // TTL 1: time exceeded from the router's near address.
        let (ok, out) = topo.ping("a", "10.0.2.2", &["-t", "1"]);
        assert!(
            !ok && out.contains("From 10.0.1.1") && out.contains("Time to live exceeded"),
            "{out}"
        );

        // No route: net unreachable from the router; and a connected address
        // nobody answers ARP for.
        let (ok, out) = topo.ping("a", "203.0.113.1", &["-c", "2"]);
        assert!(
            !ok && out.contains("From 10.0.1.1") && out.contains("Destination Net Unreachable"),
            "{out}"
        );
        let (ok, out) = topo.ping("a", "10.0.2.77", &["-c", "2", "-W", "3"]);
        assert!(!ok, "{out}");

        // 10 MiB over TCP, compared byte for byte.
        let mut blob = vec![0u8; 10 << 20];
        fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15).fill(&mut blob);
        let sent = dir.path().join("sent.bin");
        let received = dir.path().join("received.bin");
        std::fs::write(&sent, &blob).unwrap();
        let ns_b = topo.ns("b");
        let server = Command::new("ip")
            .args([
                "netns", "exec", &ns_b, "timeout", "60", "nc", "-l", "10.0.2.2", "5001",
            ])
            .stdout(std::fs::File::create(&received).unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nc -l");
        // Connect once the listener is up (a loaded machine may take a while).
        let ns_a = topo.ns("a");
        let started = Instant::now();
        let client = loop {
            let out = Command::new("ip")
                .args([
                    "netns", "exec", &ns_a, "timeout", "60", "nc", "-N", "10.0.2.2", "5001",
                ])
                .stdin(std::fs::File::open(&sent).unwrap())
                .output()
                .expect("run nc");
            if out.status.success() || started.elapsed() > Duration::from_secs(20) {
                break out;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(client.status.success(), "nc client: {client:?}");
        let server = server.wait_with_output().expect("nc -l");
        assert!(server.status.success(), "nc server: {server:?}");
        let got = std::fs::read(&received).unwrap();
        assert_eq!(got.len(), blob.len(), "TCP transfer length");
        assert!(got == blob, "TCP transfer content differs");

        // Neighbours confirmed more than 1 s ago turn stale; one that traffic
        // used is re-probed by ARP sent to its known MAC. Only that re-probe
        // is unicast (a resolution broadcasts), so seeing it on host b's
        // wire shows this neighbour went stale and was probed.
        let b_mac = topo.exec(
            "b",
            &[
                "cat",
                &format!("/sys/class/net/{}/address", topo.host_if("b")),
            ],
        );
        let b_mac = String::from_utf8_lossy(&b_mac.stdout).trim().to_string();
        assert_eq!(b_mac.len(), 17, "host b's MAC: {b_mac:?}");
        let mut wire = Watched::spawn({
            let mut c = Command::new("ip");
            c.args([
                "netns",
                "exec",
                &ns_b,
                "tshark",
                "-l",
                "-n",
                "-i",
                &topo.host_if("b"),
            ])
            .args([
                "-f",
                "arp",
                "-T",
                "fields",
                "-e",
                "eth.dst",
                "-e",
                "arp.opcode",
            ])
            .args(["-e", "arp.src.proto_ipv4", "-e", "arp.dst.proto_ipv4"]);
            c
        });
        wire.wait_stderr("Capturing on", Duration::from_secs(30));
        let probe = format!("{b_mac}\t1\t10.0.2.1\t10.0.2.2");
        wire.wait_for(
            "a unicast ARP request from the router to host b",
            Duration::from_secs(20),
            |s, l| (s == Stream::Stdout && l == probe).then_some(()),
        );
        wire.signal("-INT");
        let _ = wire.finish(Duration::from_secs(10));
        // Answered, the neighbour is reachable again and forwards.
        let prefix = ctl::prefix("router");
        let start = Instant::now();
        loop {
            let s = ctl::ctl_ok(&prefix, &["--json", "show", "neighbours"]);
            let v: serde_json::Value = serde_json::from_str(&s.stdout).expect("JSON answer");
            let state = v["data"]
                .as_array()
                .and_then(|a| a.iter().find(|n| n["address"] == "10.0.2.2"))
                .map(|n| n["state"].clone());
            if state == Some("reachable".into()) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "10.0.2.2 after its probe: {state:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let (ok, out) = topo.ping("a", "10.0.2.2", &["-c", "1"]);
        assert!(ok, "after aging: {out}");
    });
    // SAFETY: pid is our child, still running (its --duration is unset).
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let r = wait(child, Duration::from_secs(30));
    if let Err(e) = checks {
        eprintln!("fastpath stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        std::panic::resume_unwind(e);
    }
    assert_success(&r);

    let s = read_json(&json);
    let drops = &s["totals"]["drops"];
    let control = &s["control"];
    assert!(drops["no_route"].as_u64().unwrap() >= 2, "{s}");
    assert!(drops["ttl_exceeded"].as_u64().unwrap() >= 1, "{s}");
    assert!(drops["neigh_failed"].as_u64().unwrap() >= 1, "{s}");
    assert!(control["echo_replies"].as_u64().unwrap() >= 6, "{s}");
    assert!(control["arp_replies"].as_u64().unwrap() >= 2, "{s}");
    assert!(control["icmp_errors"].as_u64().unwrap() >= 3, "{s}");
    assert!(control["neigh_failed"].as_u64().unwrap() >= 1, "{s}");
    assert!(control["neigh_stale"].as_u64().unwrap() >= 1, "{s}");
    assert!(control["arp_probes"].as_u64().unwrap() >= 1, "{s}");
    // ARP requests for 10.0.2.77: the first and two retries.
    assert!(control["arp_requests"].as_u64().unwrap() >= 3, "{s}");
    assert!(s["totals"]["tx"].as_u64().unwrap() > 7000, "{s}");
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
    let neighbours: Vec<String> = s["neighbours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert!(
        neighbours
            .iter()
            .any(|n| n.starts_with("10.0.1.2 ") && n.contains("Reachable")),
        "{neighbours:?}"
    );
    assert!(
        neighbours
            .iter()
            .any(|n| n.starts_with("10.0.2.77 ") && n.contains("Failed")),
        "{neighbours:?}"
    );
}
