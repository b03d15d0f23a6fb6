//! Two worker lcores over two RX queues per port, between two kernel hosts in
//! network namespaces (see `common/netns.rs`). The ports are net_af_packet
//! with `qpairs=2`: one AF_PACKET socket per queue in a PACKET_FANOUT_HASH
//! group, so the kernel spreads flows over the queues by its symmetric flow
//! hash, and a flow's two directions arrive on the same queue number of
//! their ports, which the router places on the same worker. Both workers
//! share one core (`--lcores 0@0,1@1,2@1`) on a small machine.
//!
//! Checked:
//! * per-flow order: 16 UDP flows from A to B, each numbered, arrive in
//!   order (and complete);
//! * a stateful filter's replies: 24 TCP connections from A to B, echoed,
//!   pass "established only" toward A; B's new connection to A does not;
//! * the spreading happened: both workers received UDP and TCP packets
//!   (per-lcore counters from `/fastpath/lcores` before and after the TCP
//!   phase), and each worker's counters balance in the final report
//!   (`rx + injected == tx + dropped + punted + stolen`).

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::watch::Watched;
use common::*;
use netns::Topology;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const A: &str = "10.0.1.2";
const B: &str = "10.0.2.2";
const TEST: &str = "multi-worker";
const UDP_FLOWS: u16 = 16;
const UDP_PER_FLOW: u32 = 1000;
const TCP_CONNECTIONS: usize = 24;
const TCP_BYTES: usize = 64 << 10;
const TELEMETRY_PY: &str = "/usr/bin/dpdk-telemetry.py";

/// Two ports of two RX queues each; protect-a lets only tracked flows toward
/// A, track-b tracks what leaves toward B.
const CONFIG: &str = r#"
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"
rx_queues = 2

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"
rx_queues = 2

[[hook]]
point = "egress"
port = "net_af_packet0"
kind = "filter"
name = "protect-a"
policy = "drop"
stateful = true
[[hook.rule]]
state = ["established", "related"]
action = "accept"

[[hook]]
point = "egress"
port = "net_af_packet1"
kind = "filter"
name = "track-b"
policy = "accept"
stateful = true
"#;

/// Main lcore 0 on CPU 0, workers 1 and 2 both on CPU 1 (all on CPU 0 on a
/// one-CPU machine).
fn lcores() -> &'static str {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 {
        "0@0,1@1,2@1"
    } else {
        "0@0,1@0,2@0"
    }
}

/// Start fastpath and wait until it routes. DPDK 22.11's net_af_packet
/// names its PACKET_FANOUT group `(getpid() ^ ifindex) & 0xffff`, shared
/// by every process of the network namespace, so a router starting beside
/// another test's can clash and exit at probe: a new process (a new pid)
/// is tried then.
fn start(topo: &Topology, dir: &std::path::Path) -> Watched {
    for _ in 0..4 {
        let mut router = spawn_once(topo, dir);
        let routing = router.wait_for("the start of routing", Duration::from_secs(60), |_, l| {
            if l.contains("could not set PACKET_FANOUT") {
                Some(false)
            } else {
                l.contains("fastpath: routing").then_some(true)
            }
        });
        if routing {
            return router;
        }
        let r = router.finish(Duration::from_secs(10));
        eprintln!(
            "fastpath start clashed on PACKET_FANOUT, again:\n{}",
            r.stderr
        );
    }
    panic!("fastpath did not start in 4 attempts (PACKET_FANOUT group clashes)");
}

fn spawn_once(topo: &Topology, dir: &std::path::Path) -> Watched {
    let cfg = dir.join("router.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let vdevs = ["a", "b"].map(|side| {
        let i = if side == "a" { 0 } else { 1 };
        format!(
            "net_af_packet{i},iface={},qpairs=2,framecnt=4096",
            topo.router_if(side)
        )
    });
    let mut eal = eal_args(TEST, &vdevs);
    let l = eal.iter().position(|a| a == "-l").unwrap();
    eal.splice(l..l + 2, ["--lcores".to_string(), lcores().to_string()]);
    let mut cmd = fastpath();
    cmd.args(eal)
        .args(["--", "--config"])
        .arg(&cfg)
        .arg("--stats-json")
        .arg(dir.join("stats.json"));
    Watched::spawn(cmd)
}

/// Run `f` on a thread inside network namespace `ns` (sockets it opens
/// belong to that namespace).
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on this thread only, with a valid namespace fd.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Wait until A reaches B through the router (ARP resolved both ways).
fn wait_routed(topo: &Topology, limit: Duration) {
    let start = Instant::now();
    loop {
        let out = topo.exec("a", &["ping", "-n", "-c", "1", "-W", "1", B]);
        if out.status.success() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "A does not reach B within {limit:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// The sequence numbers each UDP flow (by source port) delivered, in
/// arrival order. The sender keeps at most `WINDOW` datagrams ahead of the
/// receiver, so the receiver's socket buffer (about 200 KiB, some 270
/// datagrams of this size) never overflows on a loaded machine.
fn udp_flows(topo: &Topology) -> BTreeMap<u16, Vec<u32>> {
    const WINDOW: usize = 64;
    let total = usize::from(UDP_FLOWS) * UDP_PER_FLOW as usize;
    let received = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (count, finished) = (received.clone(), done.clone());
    let receiver = in_netns(&topo.ns("b"), move || {
        let sock = UdpSocket::bind((B, 6000)).expect("bind on B");
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut flows: BTreeMap<u16, Vec<u32>> = BTreeMap::new();
        let mut buf = [0u8; 64];
        let mut quiet_since = None;
        while count.load(Ordering::Relaxed) < total {
            match sock.recv_from(&mut buf) {
                Ok((8, SocketAddr::V4(from))) => {
                    let seq = u32::from_be_bytes(buf[4..8].try_into().unwrap());
                    flows.entry(from.port()).or_default().push(seq);
                    count.fetch_add(1, Ordering::Relaxed);
                    quiet_since = None;
                }
                Ok(_) => {}
                Err(_) if finished.load(Ordering::Relaxed) => {
                    // The sender is done: what has not come in 2 s is lost.
                    let t = *quiet_since.get_or_insert_with(Instant::now);
                    if t.elapsed() > Duration::from_secs(2) {
                        break;
                    }
                }
                Err(_) => {}
            }
        }
        flows
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("receiver ready");
    let (count, finished) = (received, done);
    let sender = in_netns(&topo.ns("a"), move || {
        let socks: Vec<UdpSocket> = (0..UDP_FLOWS)
            .map(|f| UdpSocket::bind((A, 40000 + f)).expect("bind on A"))
            .collect();
        let mut sent = 0usize;
        for seq in 0..UDP_PER_FLOW {
            for (f, s) in socks.iter().enumerate() {
                let stalled = Instant::now();
                while sent >= count.load(Ordering::Relaxed) + WINDOW {
                    assert!(
                        stalled.elapsed() < Duration::from_secs(10),
                        "UDP stalled: {} of {sent} arrived",
                        count.load(Ordering::Relaxed)
                    );
                    std::thread::yield_now();
                }
                let mut msg = [0u8; 8];
                msg[..4].copy_from_slice(&(f as u32).to_be_bytes());
                msg[4..].copy_from_slice(&seq.to_be_bytes());
                s.send_to(&msg, (B, 6000)).expect("send");
                sent += 1;
            }
        }
        finished.store(true, Ordering::Relaxed);
    });
    sender.join().expect("UDP sender");
    receiver.join().expect("UDP receiver")
}

/// Echo every connection on B:7000 back to its sender; returns what was
/// accepted once `n` connections ended.
fn echo_server(topo: &Topology, n: usize) -> JoinHandle<usize> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = in_netns(&topo.ns("b"), move || {
        let l = TcpListener::bind((B, 7000)).expect("listen on B");
        ready_tx.send(()).unwrap();
        for _ in 0..n {
            let (mut c, _) = l.accept().expect("accept");
            let mut data = Vec::new();
            c.read_to_end(&mut data).expect("read");
            c.write_all(&data).expect("echo");
        }
        n
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("echo server ready");
    server
}

/// `TCP_CONNECTIONS` connections from A to B, each a blob echoed back
/// intact; returns the local ports used.
fn tcp_exchanges(topo: &Topology) -> Vec<u16> {
    let server = echo_server(topo, TCP_CONNECTIONS);
    let client = in_netns(&topo.ns("a"), move || {
        let to: SocketAddr = format!("{B}:7000").parse().unwrap();
        (0..TCP_CONNECTIONS)
            .map(|i| {
                let mut blob = vec![0u8; TCP_BYTES];
                fastrand::Rng::with_seed(i as u64).fill(&mut blob);
                let mut c = TcpStream::connect_timeout(&to, Duration::from_secs(10))
                    .unwrap_or_else(|e| panic!("connection {i} to B: {e}"));
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let port = c.local_addr().unwrap().port();
                let mut back = Vec::new();
                std::thread::scope(|s| {
                    let mut w = c.try_clone().unwrap();
                    let blob = &blob;
                    s.spawn(move || {
                        w.write_all(blob).expect("send");
                        w.shutdown(Shutdown::Write).unwrap();
                    });
                    c.read_to_end(&mut back)
                        .unwrap_or_else(|e| panic!("echo {i} (port {port}): {e}"));
                });
                assert!(back == blob, "connection {i} (port {port}): echo differs");
                port
            })
            .collect()
    });
    let ports = client.join().expect("TCP client");
    assert_eq!(server.join().expect("echo server"), TCP_CONNECTIONS);
    ports
}

/// B's new connection to a listener on A must not get through protect-a.
fn assert_new_inbound_refused(topo: &Topology) {
    let listener = in_netns(&topo.ns("a"), || {
        let l = TcpListener::bind((A, 7001)).expect("listen on A");
        l.set_nonblocking(true).unwrap();
        l
    })
    .join()
    .unwrap();
    let attempt = in_netns(&topo.ns("b"), || {
        let to: SocketAddr = format!("{A}:7001").parse().unwrap();
        TcpStream::connect_timeout(&to, Duration::from_secs(2)).map(|_| ())
    })
    .join()
    .unwrap();
    assert!(attempt.is_err(), "B's new connection to A got through");
    assert!(listener.accept().is_err(), "A accepted B's connection");
}

/// `/fastpath/lcores` through dpdk-telemetry.py: lcore -> rx.
fn lcore_rx() -> BTreeMap<String, u64> {
    assert!(
        std::path::Path::new(TELEMETRY_PY).exists(),
        "{TELEMETRY_PY} missing: install Debian's dpdk package"
    );
    let prefix = format!("fpt-{TEST}-{}", std::process::id());
    let mut child = Command::new(TELEMETRY_PY)
        .args(["-f", &prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dpdk-telemetry.py");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"/fastpath/lcores\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no telemetry answer: {text}"));
    let v: Value = serde_json::from_str(line).unwrap();
    v["/fastpath/lcores"]
        .as_object()
        .unwrap_or_else(|| panic!("{line}"))
        .iter()
        .map(|(k, w)| (k.clone(), w["rx"].as_u64().unwrap()))
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn two_workers_keep_flow_order_and_meet_both_directions() {
    let topo = Topology::new("mw");
    let dir = tempfile::tempdir().unwrap();
    let router = start(&topo, dir.path());
    let log = router.stderr.clone();
    let spread = "2 RX queue(s) (spread by the kernel's PACKET_FANOUT hash, symmetric)";
    for port in ["net_af_packet0", "net_af_packet1"] {
        let line = log.lines().find(|l| l.contains(&format!(" {port} mac ")));
        assert!(
            line.is_some_and(|l| l.contains(spread)),
            "{port}: {spread} in:\n{log}"
        );
    }
    // Queue q of every port on the same worker: a flow's two directions meet.
    for polls in ["lcore 1 polls 0/0, 1/0", "lcore 2 polls 0/1, 1/1"] {
        assert!(
            log.lines().any(|l| l.ends_with(polls)),
            "{polls} in:\n{log}"
        );
    }
    let pid = router.id();
    let checks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_routed(&topo, Duration::from_secs(30));

        let flows = udp_flows(&topo);
        assert_eq!(flows.len(), usize::from(UDP_FLOWS), "flows seen: {flows:?}");
        for (port, seqs) in &flows {
            let expected: Vec<u32> = (0..UDP_PER_FLOW).collect();
            if seqs != &expected {
                let late = seqs.windows(2).find(|w| w[1] <= w[0]);
                let missing: Vec<u32> = expected
                    .iter()
                    .filter(|q| !seqs.contains(q))
                    .copied()
                    .collect();
                panic!(
                    "UDP flow from port {port}: {} of {UDP_PER_FLOW} arrived, missing {missing:?}, \
                     first out of order: {late:?}",
                    seqs.len()
                );
            }
        }

        let before = lcore_rx();
        assert_eq!(before.len(), 2, "two workers: {before:?}");
        let ports = tcp_exchanges(&topo);
        let after = lcore_rx();
        eprintln!("rx per worker before the TCP phase {before:?}, after {after:?}");
        for (lcore, rx) in &after {
            let grew = rx - before[lcore];
            // Each connection is about 100 segments each way through the router.
            assert!(
                grew >= 100,
                "lcore {lcore} received {grew} packets during the TCP phase \
                 (before {before:?}, after {after:?}; source ports {ports:?})"
            );
        }
        assert_new_inbound_refused(&topo);
        // Echo replies are established too, whichever worker has the flow.
        let (ok, out) = topo.ping("a", B, &[]);
        assert!(ok && out.contains("3 received"), "{out}");
    }));
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
    let r = router.finish(Duration::from_secs(30));
    if let Err(e) = checks {
        eprintln!("fastpath stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        std::panic::resume_unwind(e);
    }
    assert_success(&r);
    let s = read_json(&dir.path().join("stats.json"));
    // Lcore 0 is the main lcore (the control plane's counters); 1 and 2 work.
    let workers: Vec<&Value> = s["lcores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["lcore"] != 0)
        .collect();
    assert_eq!(workers.len(), 2, "{s}");
    for l in workers {
        let (rx, injected) = (u(&l["rx"]), u(&l["injected"]));
        let out = u(&l["tx"]) + u(&l["dropped"]) + u(&l["punted"]) + u(&l["stolen"]);
        eprintln!(
            "lcore {}: rx {rx} + injected {injected} = tx {} + dropped {} + punted {} + stolen {}",
            l["lcore"], l["tx"], l["dropped"], l["punted"], l["stolen"]
        );
        assert_eq!(rx + injected, out, "worker balance: {l}");
        assert!(
            rx > u64::from(UDP_FLOWS),
            "every worker received traffic: {l}"
        );
    }
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
    let hook = |name: &str| common::hook_report(&s, name).clone();
    let (protect, track) = (hook("protect-a"), hook("track-b"));
    // Every reply segment of every connection came in as established.
    let segments = (TCP_CONNECTIONS * TCP_BYTES / 1500) as u64;
    assert!(
        u(&protect["stats"]["ct_established"]) >= segments,
        "{protect}"
    );
    // B's SYN to A:7001 (and its retransmits), nothing else.
    assert!(u(&protect["stats"]["policy_dropped"]) >= 1, "{protect}");
    assert!(
        u(&track["stats"]["ct_new"]) >= (TCP_CONNECTIONS + usize::from(UDP_FLOWS)) as u64,
        "{track}"
    );
    assert_eq!(u(&track["dropped"]), 0, "{track}");
}
