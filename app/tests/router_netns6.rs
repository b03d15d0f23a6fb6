//! fastpath as a dual-stack router between two kernel hosts in network
//! namespaces (the topology of `common/netns.rs`, each host given an IPv6
//! address and default route beside its IPv4 one): neighbour discovery with
//! Linux (the router flag seen in host a's neighbour table), `ping -6` both
//! ways with the hop limit one less, `ping -6` of the router's global and
//! link-local addresses answered from the address pinged, a time exceeded
//! for hop limit 1, a packet too big that the sending host's path MTU cache
//! takes, TCP over IPv6 both ways compared byte for byte, and IPv4 in the
//! same topology; and a stateful filter over IPv6 (replies in, new inbound
//! refused).

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::*;
use netns::{sh, Topology};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Port 1 (towards host b) has a smaller MTU than the hosts' 1500: a large
/// packet from a to b gets a packet too big from the router.
const B_MTU: u16 = 1400;

/// The router's config: net_af_packet0/1 are the router ends of the veths.
fn config() -> String {
    format!(
        r#"# two dual-stack hosts, one router
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]
link_local = "fe80::1"

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
mtu = {B_MTU}
"#
    )
}

/// Give each host 2001:db8:<net>::2/64 (no duplicate address detection,
/// so it is usable at once) and a default route via the router's address.
/// The root namespace's kernel gets no IPv6 on the router ends: it would
/// take the same EUI-64 link-local address as fastpath's port and answer
/// for it beside fastpath.
fn add_ipv6(topo: &Topology) {
    for (side, net) in [("a", 1), ("b", 2)] {
        let sysctl = format!(
            "/proc/sys/net/ipv6/conf/{}/disable_ipv6",
            topo.router_if(side)
        );
        std::fs::write(&sysctl, "1").unwrap_or_else(|e| panic!("{sysctl}: {e}"));
        let ns = topo.ns(side);
        let host = topo.host_if(side);
        let addr = format!("2001:db8:{net}::2/64");
        let gw = format!("2001:db8:{net}::1");
        sh(&[
            "ip", "-n", &ns, "-6", "addr", "add", &addr, "dev", &host, "nodad",
        ]);
        sh(&[
            "ip", "-n", &ns, "-6", "route", "add", "default", "via", &gw, "dev", &host,
        ]);
    }
}

/// `ping -6` from `side` until it answers (fastpath is starting, the host's
/// link-local address is leaving DAD), at most `limit`.
fn ping6_until_up(topo: &Topology, side: &str, dst: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let out = topo.exec(side, &["ping", "-6", "-n", "-c", "1", "-W", "1", dst]);
        if out.status.success() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "no answer from {dst} within {limit:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The hop limit ping printed for each reply (`ttl=` in iputils since
/// 20200821, `hlim=` before).
fn hop_limits(out: &str) -> Vec<u8> {
    out.split_whitespace()
        .filter_map(|w| w.strip_prefix("ttl=").or_else(|| w.strip_prefix("hlim=")))
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// The MAC of side's router end (net_af_packet sends with the
/// interface's own), as `ip` prints it.
fn router_mac(topo: &Topology, side: &str) -> String {
    let path = format!("/sys/class/net/{}/address", topo.router_if(side));
    let mac = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    mac.trim().to_string()
}

/// The link-local address derived from `mac` by modified EUI-64: the
/// universal/local bit flipped, ff:fe in the middle.
fn link_local_of(mac: &str) -> std::net::Ipv6Addr {
    let m: Vec<u8> = mac
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).expect("MAC byte"))
        .collect();
    let id = [m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]];
    let mut a = [0u8; 16];
    a[..2].copy_from_slice(&[0xfe, 0x80]);
    a[8..].copy_from_slice(&id);
    a.into()
}

/// Start fastpath (EAL file prefix `prefix`) with config `text` between the
/// two hosts' veths; its child and where its stats JSON will be.
fn start(
    topo: &Topology,
    dir: &Path,
    prefix: &str,
    text: &str,
) -> (std::process::Child, std::path::PathBuf) {
    let (cfg_path, json) = (dir.join("router.toml"), dir.join("stats.json"));
    std::fs::write(&cfg_path, text).unwrap();
    let child = spawn_af_packet(|| {
        let mut cmd = fastpath();
        cmd.args(eal_args(
            prefix,
            &[
                format!("net_af_packet0,iface={},framecnt=4096", topo.router_if("a")),
                format!("net_af_packet1,iface={},framecnt=4096", topo.router_if("b")),
            ],
        ))
        .args(["--", "--config"])
        .arg(&cfg_path)
        .arg("--stats-json")
        .arg(&json);
        cmd
    });
    (child, json)
}

/// Send `sent` from `from` to `to_addr`:5001 on `to` over TCP with nc;
/// returns what the listener received.
fn transfer(topo: &Topology, from: &str, to: &str, to_addr: &str, sent: &Path) -> Vec<u8> {
    let received = sent.with_extension("received");
    let server = Command::new("ip")
        .args(["netns", "exec", &topo.ns(to)])
        .args(["timeout", "60", "nc", "-6", "-l", to_addr, "5001"])
        .stdout(std::fs::File::create(&received).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nc -l");
    // Connect once the listener is up (a loaded machine may take a while).
    let started = Instant::now();
    let client = loop {
        let out = Command::new("ip")
            .args(["netns", "exec", &topo.ns(from)])
            .args(["timeout", "60", "nc", "-6", "-N", to_addr, "5001"])
            .stdin(std::fs::File::open(sent).unwrap())
            .output()
            .expect("run nc");
        if out.status.success() || started.elapsed() > Duration::from_secs(20) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(client.status.success(), "nc client {from}: {client:?}");
    let server = server.wait_with_output().expect("nc -l");
    assert!(server.status.success(), "nc server {to}: {server:?}");
    std::fs::read(&received).unwrap()
}

#[test]
fn routes_ipv6_between_two_namespaces() {
    let topo = Topology::new("r6");
    add_ipv6(&topo);
    let dir = tempfile::tempdir().unwrap();
    let (child, json) = start(&topo, dir.path(), "router6", &config());
    let pid = child.id();
    // From here on a failure must still stop fastpath: wait() kills it at the deadline.
    let checks = std::panic::catch_unwind(|| {
        ping6_until_up(&topo, "a", "2001:db8:1::1", Duration::from_secs(20));
        ping6_until_up(&topo, "b", "2001:db8:2::1", Duration::from_secs(20));

        // Both ways, through fastpath: one hop, so hop limit 64 arrives as 63.
        for (side, dst) in [("a", "2001:db8:2::2"), ("b", "2001:db8:1::2")] {
            let (ok, out) = topo.ping(side, dst, &["-6"]);
            assert!(ok && out.contains("3 received"), "{side} -> {dst}: {out}");
            assert_eq!(hop_limits(&out), [63, 63, 63], "{side} -> {dst}: {out}");
        }

        // The router's own addresses: global near and far side, and the
        // near port's link-local one (scoped to host a's veth). Each reply
        // comes from the address pinged (RFC 4443 2.2), with hop limit 64.
        let link_local = format!("fe80::1%{}", topo.host_if("a"));
        for addr in ["2001:db8:1::1", "2001:db8:2::1", link_local.as_str()] {
            let (ok, out) = topo.ping("a", addr, &["-6"]);
            assert!(ok && out.contains("3 received"), "{addr}: {out}");
            let from = format!("bytes from {addr}: ");
            assert_eq!(out.matches(&from).count(), 3, "{addr}: {out}");
            assert!(!out.contains("DIFFERENT ADDRESS"), "{addr}: {out}");
            assert_eq!(hop_limits(&out), [64, 64, 64], "{addr}: {out}");
        }

        // Port 1 has no `link_local`: its address is the modified EUI-64
        // of its MAC (RFC 4291 appendix A), which host b reaches as well.
        let eui64 = format!(
            "{}%{}",
            link_local_of(&router_mac(&topo, "b")),
            topo.host_if("b")
        );
        let (ok, out) = topo.ping("b", &eui64, &["-6"]);
        assert!(ok && out.contains("3 received"), "{eui64}: {out}");
        assert_eq!(
            out.matches(&format!("bytes from {eui64}: ")).count(),
            3,
            "{out}"
        );

        // Hop limit 1: time exceeded from the router's address on host a's link.
        let (ok, out) = topo.ping("a", "2001:db8:2::2", &["-6", "-t", "1"]);
        assert!(
            !ok && out.contains("From 2001:db8:1::1") && out.contains("Time exceeded"),
            "{out}"
        );

        // 1400 bytes of ICMPv6 data make a 1448-byte packet: too big for
        // port 1's MTU. The router answers packet too big (it never
        // fragments IPv6) and host a's path MTU cache takes the MTU, which
        // it did not know before (the TCP transfers below would teach it
        // the MTU too, so this comes first).
        let route_get = || {
            let out = topo.exec("a", &["ip", "-6", "route", "get", "2001:db8:2::2"]);
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let mtu = format!("mtu {B_MTU}");
        let before = route_get();
        assert!(!before.contains(&mtu), "{before}");
        let (ok, out) = topo.ping("a", "2001:db8:2::2", &["-6", "-s", "1400", "-M", "do"]);
        assert!(
            !ok && out.contains("From 2001:db8:1::1")
                && out.contains(&format!("Packet too big: mtu={B_MTU}")),
            "{out}"
        );
        let route = route_get();
        assert!(route.contains(&mtu), "{out}\n{route}");
        // Packets that fit the path MTU go through.
        let (ok, out) = topo.ping("a", "2001:db8:2::2", &["-6", "-s", "1300", "-M", "do"]);
        assert!(ok && out.contains("3 received"), "{out}");

        // 2 MiB over TCP each way, compared byte for byte.
        let mut blob = vec![0u8; 2 << 20];
        fastrand::Rng::with_seed(0x5bd1_e995).fill(&mut blob);
        let sent = dir.path().join("sent.bin");
        std::fs::write(&sent, &blob).unwrap();
        for (from, to, to_addr) in [("a", "b", "2001:db8:2::2"), ("b", "a", "2001:db8:1::2")] {
            let got = transfer(&topo, from, to, to_addr, &sent);
            assert_eq!(got.len(), blob.len(), "TCP {from} -> {to}: length");
            assert!(got == blob, "TCP {from} -> {to}: content differs");
        }

        // Host a learnt the router by neighbour discovery: its MAC, and the
        // router flag of its advertisements.
        let mac = router_mac(&topo, "a");
        let neigh = topo.exec("a", &["ip", "-6", "neigh", "show", "2001:db8:1::1"]);
        let neigh = String::from_utf8_lossy(&neigh.stdout).into_owned();
        assert!(neigh.contains(&format!("lladdr {mac} router")), "{neigh}");

        // IPv4 in the same topology.
        let (ok, out) = topo.ping("a", "10.0.2.2", &[]);
        assert!(
            ok && out.contains("3 received") && out.contains("ttl=63"),
            "{out}"
        );
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
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
    let drops = &s["totals"]["drops"];
    let control = &s["control"];
    assert!(
        drops["ipv6_hop_limit_exceeded"].as_u64().unwrap() >= 1,
        "{s}"
    );
    assert!(drops["ipv6_packet_too_big"].as_u64().unwrap() >= 1, "{s}");
    // Echo requests to our addresses: 3 x 3 and the waits for readiness.
    assert!(control["echo6_replies"].as_u64().unwrap() >= 11, "{s}");
    // A time exceeded and a packet too big at least.
    assert!(control["icmp6_errors"].as_u64().unwrap() >= 2, "{s}");
    // Solicitations from the hosts answered (each host resolves the router).
    assert!(control["nd_adverts"].as_u64().unwrap() >= 2, "{s}");
    let neighbours: Vec<&str> = s["neighbours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for host in ["2001:db8:1::2 ", "2001:db8:2::2 "] {
        assert!(
            neighbours
                .iter()
                .any(|n| n.starts_with(host) && n.contains("Reachable")),
            "{host}: {neighbours:?}"
        );
    }
}

/// A stateful filter over IPv6, tried with Linux hosts: on the port
/// towards host a, policy drop but for established and related flows; on
/// the port towards b, policy accept (connections from a are tracked as
/// they leave). From a: `ping -6` and a TCP transfer with `nc -6` to b
/// pass, their replies accepted as established. From b: a new TCP
/// connection and an echo request to a are refused, counted under the
/// filter's policy.
#[test]
fn a_stateful_filter_lets_ipv6_replies_in_and_refuses_new_inbound() {
    let topo = Topology::new("f6");
    add_ipv6(&topo);
    let dir = tempfile::tempdir().unwrap();
    let hooks = r#"
[[hook]]
point = "egress"
port = "net_af_packet0"
kind = "filter"
name = "protect_a"
policy = "drop"
stateful = true
[[hook.rule]]
state = ["established", "related"]
action = "accept"

[[hook]]
point = "egress"
port = "net_af_packet1"
kind = "filter"
name = "to_b"
policy = "accept"
stateful = true
"#;
    let (child, json) = start(
        &topo,
        dir.path(),
        "filter6",
        &format!("{}{hooks}", config()),
    );
    let pid = child.id();
    let checks = std::panic::catch_unwind(|| {
        ping6_until_up(&topo, "a", "2001:db8:1::1", Duration::from_secs(20));
        ping6_until_up(&topo, "b", "2001:db8:2::1", Duration::from_secs(20));
        // a -> b, replies established.
        ping6_until_up(&topo, "a", "2001:db8:2::2", Duration::from_secs(20));
        let mut blob = vec![0u8; 256 * 1024];
        fastrand::Rng::with_seed(0x6f11).fill(&mut blob);
        let sent = dir.path().join("sent.bin");
        std::fs::write(&sent, &blob).unwrap();
        let got = transfer(&topo, "a", "b", "2001:db8:2::2", &sent);
        assert!(
            got == blob,
            "TCP a -> b through the filters: {} bytes",
            got.len()
        );

        // b -> a, new: refused. A listener on a that would answer.
        let mut server = Command::new("ip")
            .args(["netns", "exec", &topo.ns("a")])
            .args(["timeout", "30", "nc", "-6", "-l", "2001:db8:1::2", "5002"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nc -l");
        let probe = topo.exec(
            "b",
            &[
                "timeout",
                "10",
                "nc",
                "-6",
                "-z",
                "-w",
                "2",
                "2001:db8:1::2",
                "5002",
            ],
        );
        let _ = server.kill();
        let _ = server.wait();
        assert!(!probe.status.success(), "b connected to a: {probe:?}");
        let (ok, out) = topo.ping("b", "2001:db8:1::2", &["-6"]);
        assert!(
            !ok && out.contains("0 received"),
            "b's echo requests: {out}"
        );
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
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
    let hook = |name: &str| {
        s["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["name"] == name)
            .unwrap_or_else(|| panic!("no hook {name}: {s}"))
            .clone()
    };
    let (a, b) = (hook("protect_a"), hook("to_b"));
    // The transfer's ACKs and the echo replies came back established.
    assert!(a["stats"]["ct_established"].as_u64().unwrap() >= 10, "{a}");
    assert!(a["stats"]["rule_accepted"].as_u64().unwrap() >= 10, "{a}");
    // b's SYN (and its retries) and 3 echo requests, refused.
    assert!(a["stats"]["policy_dropped"].as_u64().unwrap() >= 4, "{a}");
    // a's connection to b was tracked as it left.
    assert!(b["stats"]["ct_new"].as_u64().unwrap() >= 1, "{b}");
    assert!(
        b["stats"]["ct_tcp_established"].as_u64().unwrap() >= 1,
        "{b}"
    );
    assert!(
        s["totals"]["drops"]["filter_policy"].as_u64().unwrap() >= 4,
        "{s}"
    );
}
