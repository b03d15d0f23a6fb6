//! The ports' kernel interfaces (`[kernel] interfaces = true`), with
//! fastpath in a network namespace of its own between two kernel hosts:
//! each port's TAP has the port's MAC, MTU and addresses and is up; TCP to
//! the router's IPv4 and IPv6 addresses reaches a listener in the kernel
//! (whose own ARP and neighbour discovery go through fastpath); pings are
//! still answered by fastpath; a UDP flood at the router's address from one
//! host is policed (counted as `kernel_source_limited`) while a configured
//! routing peer's TCP session goes through; at stop the counters balance,
//! every mbuf is back, and the interfaces are gone.

mod common;
#[path = "common/flood.rs"]
mod flood;
#[path = "common/netns.rs"]
mod netns;

use common::*;
use netns::{sh, Topology};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Port 0 takes the default name (`fp0`), port 1 its own; 10.0.2.2 (host
/// b) is a routing peer.
const CONFIG: &str = r#"
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
kernel_interface = "fp-b"

[kernel]
interfaces = true
peers = ["10.0.2.2"]
"#;

/// `ip` in the router's namespace.
fn ip_r(topo: &Topology, args: &[&str]) -> String {
    let ns = topo.router_ns();
    let mut all = vec!["ip", "-n", &ns];
    all.extend(args);
    String::from_utf8_lossy(&sh(&all).stdout).into_owned()
}

/// A one-shot TCP listener in the router's namespace on `addr` `port`,
/// writing what it receives to its stdout.
fn listen(topo: &Topology, addr: &str, port: &str) -> Child {
    Command::new("ip")
        .args([
            "netns",
            "exec",
            &topo.router_ns(),
            "timeout",
            "30",
            "nc",
            "-l",
            addr,
            port,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nc -l")
}

/// Send `text` from `side` to `addr` `port` over TCP, retrying until the
/// listener is up (at most 20 s); then what the listener received.
fn tcp_to_router(topo: &Topology, side: &str, addr: &str, port: &str, text: &str) -> String {
    let server = listen(topo, addr, port);
    let start = Instant::now();
    loop {
        let cmd = format!("printf '{text}' | timeout 10 nc -N {addr} {port}");
        let out = topo.exec(side, &["sh", "-c", &cmd]);
        if out.status.success() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "TCP from {side} to {addr} {port}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = server.wait_with_output().expect("nc -l");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Ping until it answers (fastpath is starting), at most `limit`.
fn ping_until_up(topo: &Topology, dst: &str, limit: Duration) {
    let start = Instant::now();
    while !topo
        .exec("a", &["ping", "-n", "-c", "1", "-W", "1", dst])
        .status
        .success()
    {
        assert!(
            start.elapsed() < limit,
            "no answer from {dst} within {limit:?}"
        );
    }
}

/// A UDP listener on `addr` port 5000 in the router's namespace that
/// counts datagrams until none came for a second after the first; prints
/// the count. Ready once it printed "ready".
fn count_udp(topo: &Topology, addr: &str) -> Child {
    let code = format!(
        r#"import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# Room for every datagram of the run: a reader a loaded machine
# stalls must not lose any at its socket (SO_RCVBUFFORCE: root).
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 26)  # SO_RCVBUFFORCE
s.bind(('{addr}', 5000))
print('ready', flush=True)
s.settimeout(30)
n = 0
try:
    while True:
        s.recv(64)
        n += 1
        s.settimeout(1)
except socket.timeout:
    pass
print(n)
"#
    );
    Command::new("ip")
        .args(["netns", "exec", &topo.router_ns(), "python3", "-c", &code])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the UDP counter")
}

#[test]
fn ports_have_kernel_interfaces_that_carry_tcp_and_a_flood_is_policed() {
    let topo = Topology::with_router_ns("ki");
    for (side, addr) in [("a", "2001:db8:1::2/64"), ("b", "2001:db8:2::2/64")] {
        let host = topo.host_if(side);
        topo.exec(
            side,
            &["ip", "-6", "addr", "add", addr, "dev", &host, "nodad"],
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let (cfg, json) = (
        dir.path().join("router.toml"),
        dir.path().join("stats.json"),
    );
    std::fs::write(&cfg, CONFIG).unwrap();
    let ns = topo.router_ns();
    let child = spawn_af_packet(|| {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns, env!("CARGO_BIN_EXE_fastpath")])
            .args(eal_args("kernel_interfaces", &topo.af_packet_vdevs()))
            .args(["--", "--config"])
            .arg(&cfg)
            .arg("--stats-json")
            .arg(&json);
        let _guard = fastpath(); // the runtime-folder guard
        cmd
    });
    let pid = child.id();
    let checks = std::panic::catch_unwind(|| -> (u64, u64, u64) {
        ping_until_up(&topo, "10.0.1.1", Duration::from_secs(20));

        // Each port's interface: its MAC, MTU and addresses, up.
        for (rep, port, v4, v6) in [
            (
                "fp0",
                topo.router_if("a"),
                "10.0.1.1/24",
                "2001:db8:1::1/64",
            ),
            (
                "fp-b",
                topo.router_if("b"),
                "10.0.2.1/24",
                "2001:db8:2::1/64",
            ),
        ] {
            let link = ip_r(&topo, &["-br", "link", "show", rep]);
            let mac = ip_r(&topo, &["-br", "link", "show", &port]);
            let mac = mac.split_whitespace().nth(2).expect("the port's MAC");
            assert!(
                link.contains(mac) && link.contains("UP"),
                "{rep}: {link} (port MAC {mac})"
            );
            let addrs = ip_r(&topo, &["-br", "addr", "show", rep]);
            assert!(
                addrs.contains(v4) && addrs.contains(v6) && addrs.contains("fe80::"),
                "{rep}: {addrs}"
            );
            let mtu = ip_r(&topo, &["link", "show", rep]);
            assert!(mtu.contains("mtu 1500"), "{rep}: {mtu}");
        }

        // TCP to the router's addresses reaches the kernel, both families
        // (the kernel's ARP and neighbour discovery go through fastpath).
        assert_eq!(
            tcp_to_router(&topo, "a", "10.0.1.1", "7001", "hello v4"),
            "hello v4"
        );
        assert_eq!(
            tcp_to_router(&topo, "a", "2001:db8:1::1", "7002", "hello v6"),
            "hello v6"
        );
        // Pings to the router are fastpath's own.
        let (ok, out) = topo.ping("a", "10.0.1.1", &[]);
        assert!(ok && out.contains("ttl=64"), "{out}");

        // A flood at the router's address from every other address of
        // host b's link, with datagrams from host b, a routing peer, in the
        // same stream: every one of the peer's reaches the kernel, and its
        // TCP sessions go through.
        let mac = ip_r(&topo, &["-br", "link", "show", &topo.router_if("b")]);
        let mac = mac
            .split_whitespace()
            .nth(2)
            .expect("the port's MAC")
            .to_string();
        let mut counter = count_udp(&topo, "10.0.2.1");
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(counter.stdout.as_mut().expect("piped")),
            &mut ready,
        )
        .expect("the counter starts");
        assert_eq!(ready.trim(), "ready");
        let flooder = flood::flood(&topo, "b", &mac, "10.0.2.1", &["10.0.2.2"], true, 4);
        for (i, port) in ["7003", "7004"].iter().enumerate() {
            let text = format!("peer talks {i}");
            assert_eq!(tcp_to_router(&topo, "b", "10.0.2.1", port, &text), text);
        }
        let sent = flooder.wait_with_output().expect("flood");
        let sent = String::from_utf8_lossy(&sent.stdout).into_owned();
        let received = counter.wait_with_output().expect("the counter");
        let received = String::from_utf8_lossy(&received.stdout).into_owned();
        eprintln!(
            "flood and peer datagrams: {}; the peer's received: {}",
            sent.trim(),
            received.trim()
        );
        let mut sent = sent
            .split_whitespace()
            .map(|n| n.parse::<u64>().expect("a count"));
        let (flooded, from_peer) = (sent.next().unwrap(), sent.next().unwrap());
        let received: u64 = received.trim().parse().expect("the counter's count");
        assert!(flooded > 0 && from_peer > 0);
        (flooded, from_peer, received)
    });
    // SAFETY: pid is our child, still running (it has no --duration).
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let r = wait(child, Duration::from_secs(30));
    let (flooded, from_peer, received) = match checks {
        Ok(counts) => counts,
        Err(e) => {
            eprintln!("fastpath stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
            std::panic::resume_unwind(e);
        }
    };
    assert_success(&r);
    assert!(
        r.stderr.contains("kernel interface fp0") && r.stderr.contains("kernel interface fp-b"),
        "{}",
        r.stderr
    );

    let s = read_json(&json);
    let control = &s["control"];
    let drops = &s["totals"]["drops"];
    // Three TCP sessions' worth of segments each way, at least.
    assert!(control["to_kernel"].as_u64().unwrap() >= 9, "{s}");
    assert!(control["from_kernel"].as_u64().unwrap() >= 9, "{s}");
    assert!(control["kernel_mirrored"].as_u64().unwrap() >= 2, "{s}");
    let policed = drops["kernel_source_limited"].as_u64().unwrap()
        + drops["kernel_rate_limited"].as_u64().unwrap();
    eprintln!(
        "to the kernel: {}, policed: {policed}",
        control["to_kernel"]
    );
    assert!(policed > 0, "{s}");
    assert_eq!(drops["local_unsupported"], 0, "{s}");
    // Every peer datagram that reached fastpath reached the kernel. Frames
    // a loaded machine drops on the veth before fastpath (its backlog) are
    // the flood's and the peer's alike, one peer datagram in 252: allow
    // three times the peer's share of those, far below what losing to the
    // flood would take (most of them).
    let reached = s["ports"][1]["rx"].as_u64().unwrap();
    let lost_on_the_way = (flooded + from_peer).saturating_sub(reached);
    let allowed = lost_on_the_way.div_ceil(252) * 3;
    assert!(
        from_peer - received.min(from_peer) <= allowed,
        "the peer's datagrams lost to the flood: {received} of {from_peer} reached the kernel \
         ({lost_on_the_way} frames lost before fastpath: {allowed} of the peer's allowed)"
    );
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
    // The interfaces went with fastpath.
    let links = ip_r(&topo, &["-br", "link"]);
    assert!(!links.contains("fp0") && !links.contains("fp-b"), "{links}");
}

/// The interface itself, made by the library in this test's namespace: its
/// MAC, MTU and addresses; the carrier follows `set_carrier`; it goes when
/// dropped; a second interface of the same name is refused with a hint.
#[test]
fn a_kernel_interface_is_made_up_and_its_carrier_follows_the_link() {
    use fastpath::kernel::{Representor, RepresentorSpec};
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "this test needs root (CAP_NET_ADMIN)"
    );
    let name = format!("fpk{}", std::process::id() % 100_000);
    let pid = std::process::id();
    let addr: std::net::IpAddr = format!("198.18.{}.{}", (pid >> 8) & 255, pid & 255)
        .parse()
        .unwrap();
    let mac = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x01];
    let rep = Representor::create(&RepresentorSpec {
        name: &name,
        mac,
        mtu: 1400,
        addrs: &[(addr, 32)],
    })
    .expect("a kernel interface");
    let sys = |f: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{name}/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    assert_eq!(sys("address"), "02:00:5e:10:00:01");
    assert_eq!(sys("mtu"), "1400");
    assert_eq!(sys("carrier"), "1");
    let addrs =
        String::from_utf8_lossy(&sh(&["ip", "-br", "addr", "show", &name]).stdout).into_owned();
    assert!(addrs.contains(&format!("{addr}/32")), "{addrs}");
    let link = String::from_utf8_lossy(&sh(&["ip", "link", "show", &name]).stdout).into_owned();
    assert!(link.contains(",UP,"), "administratively up: {link}");
    rep.set_carrier(false).expect("carrier off");
    assert_eq!(sys("carrier"), "0");
    assert_eq!(sys("operstate"), "down");
    rep.set_carrier(true).expect("carrier on");
    assert_eq!(sys("carrier"), "1");
    let again = Representor::create(&RepresentorSpec {
        name: &name,
        mac,
        mtu: 1400,
        addrs: &[],
    });
    let e = again.err().expect("the name is taken");
    assert!(e.contains(&name) && e.contains("kernel_interface"), "{e}");
    drop(rep);
    assert!(!std::path::Path::new(&format!("/sys/class/net/{name}")).exists());
}
