//! BGP end to end through fastpath's own ports, with two implementations:
//! in the router's namespace fastpath (its ports on veths, each with a
//! kernel interface), FRR's zebra (`-M dplane_fpm_nl`, programming
//! fastpath over FPM) and bgpd; on port 0's link two BIRD 2 speakers
//! (10.0.1.2 and 10.0.1.3, each with a MAC of its own) announcing the same
//! 10,002 prefixes, so every route has two next hops.
//!
//! Checks: both BGP sessions establish over fastpath's port; the routes
//! reach fastpath's FIB with both next hops; a host behind port 1 reaches
//! them through fastpath, spread over both next hops; a withdrawal removes
//! them (the host then gets ICMP net unreachable) and a new announcement
//! brings them back; restarting fastpath brings the routes back (the
//! sessions re-establish over the new kernel interfaces and zebra replays
//! over FPM). The time from the sessions' establishment to the last
//! prefix in fastpath's FIB is printed: FRR's share (until zebra installed
//! every route in its kernel) and the rest (zebra's FPM sending and
//! fastpath's install).
//!
//! The same over IPv6 (a second test): one BIRD announcing 1,001 IPv6
//! prefixes over an IPv6 session with GTSM on both ends and in fastpath
//! (`ttl_security`: the session's packets arrive at hop limit 255), zebra's routes by BIRD's link-local
//! next hop on port 0's kernel interface, host b's `ping -6` through
//! fastpath, a withdrawal giving ICMPv6 no route, the announcement again.

mod common;
#[path = "common/flood.rs"]
mod flood;
#[path = "common/netns.rs"]
mod netns;

use common::ctl::{ctl_ok, gateways, prefix, routes};
use common::watch::Watched;
use common::*;
use netns::{need, sh, Topology};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);
const TEST: &str = "bgp_bird";
/// Prefixes each BIRD announces besides 198.51.100.0/24 and
/// 203.0.113.0/24: /24s from 100.64.0.0 up.
const SCALE: u32 = 10_000;

const ROUTER: &str = r#"
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"

[kernel]
interfaces = true
peers = ["10.0.1.2", "10.0.1.3"]
"#;

const ZEBRA_CONF: &str = "hostname fpr\nfpm address 127.0.0.1 port 2620\n";

const BGPD_CONF: &str = "\
hostname fpr
router bgp 65001
 bgp router-id 10.0.1.1
 no bgp ebgp-requires-policy
 timers bgp 3 9
 neighbor 10.0.1.2 remote-as 65002
 neighbor 10.0.1.2 timers connect 1
 neighbor 10.0.1.3 remote-as 65002
 neighbor 10.0.1.3 timers connect 1
 address-family ipv4 unicast
  maximum-paths 2
 exit-address-family
";

/// The /24 number `i` of the scale prefixes.
fn scale_prefix(i: u32) -> String {
    let n = (100 << 24 | 64 << 16) + (i << 8);
    format!("{}.{}.{}.0", n >> 24, (n >> 16) & 255, (n >> 8) & 255)
}

/// BIRD on 10.0.1.`host`: one session to the router, exporting the
/// prefixes with itself as next hop.
fn bird_conf(host: u8) -> String {
    let mut routes =
        String::from("  route 198.51.100.0/24 blackhole;\n  route 203.0.113.0/24 blackhole;\n");
    for i in 0..SCALE {
        routes.push_str(&format!("  route {}/24 blackhole;\n", scale_prefix(i)));
    }
    format!(
        "router id 10.0.1.{host};\n\
         log stderr all;\n\
         protocol device {{}}\n\
         protocol static announced {{\n  ipv4;\n{routes}}}\n\
         protocol bgp uplink {{\n  local 10.0.1.{host} as 65002;\n  neighbor 10.0.1.1 as 65001;\n  \
         strict bind yes;\n  connect retry time 1;\n  \
         ipv4 {{ import none; export all; next hop self; }};\n}}\n"
    )
}

/// The routing daemons of both sides and their folder.
struct Routing {
    dir: tempfile::TempDir,
    router_ns: String,
    peer_ns: String,
    /// The BIRDs, by their host number on port 0's link.
    hosts: Vec<u8>,
    /// FRR's routing daemon beside zebra (`bgpd`, `ospfd`).
    daemon: &'static str,
    frr: Vec<Watched>,
    birds: Vec<Watched>,
}

impl Routing {
    /// FRR's `daemon` with `conf`, a BIRD for each of `birds` (host
    /// number, its configuration).
    fn new(
        topo: &Topology,
        (daemon, conf): (&'static str, &str),
        birds: &[(u8, String)],
    ) -> Routing {
        for t in ["vtysh", "bird", "birdc"] {
            need(t);
        }
        for d in ["zebra", daemon] {
            let bin = format!("/usr/lib/frr/{d}");
            assert!(
                Path::new(&bin).is_file(),
                "this test needs FRR's {bin}: apt-get install frr (scripts/quickstart installs it)"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        // FRR's daemons run as user frr: their pid files and sockets go here.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(dir.path().join("zebra.conf"), ZEBRA_CONF).unwrap();
        std::fs::write(dir.path().join(format!("{daemon}.conf")), conf).unwrap();
        for (host, conf) in birds {
            std::fs::write(dir.path().join(format!("bird{host}.conf")), conf).unwrap();
        }
        Routing {
            dir,
            router_ns: topo.router_ns(),
            peer_ns: topo.ns("a"),
            hosts: birds.iter().map(|b| b.0).collect(),
            daemon,
            frr: Vec::new(),
            birds: Vec::new(),
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    /// zebra (loading the FPM module) and the routing daemon in the
    /// router's namespace.
    fn start_frr(&mut self) {
        for (d, extra) in [
            ("zebra", &["-M", "dplane_fpm_nl", "-e", "16"][..]),
            (self.daemon, &[][..]),
        ] {
            let mut cmd = Command::new("ip");
            cmd.args([
                "netns",
                "exec",
                &self.router_ns,
                &format!("/usr/lib/frr/{d}"),
            ])
            .args(extra)
            .args(["-f", &self.path(&format!("{d}.conf"))])
            .args(["-i", &self.path(&format!("{d}.pid"))])
            .args(["-z", &self.path("zserv.api")])
            .args(["--vty_socket", &self.path("")])
            .args(["-P", "0", "--log", "stdout"]);
            let mut w = Watched::spawn(cmd);
            w.wait_for(&format!("{d} starting"), LIMIT, |_, l| {
                l.contains("8.").then_some(())
            });
            self.frr.push(w);
        }
    }

    /// The BIRDs on port 0's link.
    fn start_birds(&mut self) {
        for host in self.hosts.clone() {
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &self.peer_ns, "bird", "-f"])
                .args(["-c", &self.path(&format!("bird{host}.conf"))])
                .args(["-s", &self.path(&format!("bird{host}.ctl"))]);
            let mut bird = Watched::spawn(cmd);
            bird.wait_for("BIRD started", LIMIT, |_, l| {
                l.contains("Started").then_some(())
            });
            self.birds.push(bird);
        }
    }

    /// `birdc` of BIRD on 10.0.1.`host`.
    fn birdc(&self, host: u8, args: &[&str]) -> String {
        let sock = self.path(&format!("bird{host}.ctl"));
        let mut all = vec!["ip", "netns", "exec", &self.peer_ns, "birdc", "-s", &sock];
        all.extend(args);
        String::from_utf8_lossy(&sh(&all).stdout).into_owned()
    }

    /// Wait until every BIRD's session is established; when.
    fn wait_established(&self) -> Instant {
        let end = Instant::now() + LIMIT;
        loop {
            let up: Vec<String> = self
                .hosts
                .iter()
                .map(|&h| self.birdc(h, &["show", "protocols", "uplink"]))
                .collect();
            if up.iter().all(|s| s.contains("Established")) {
                return Instant::now();
            }
            assert!(Instant::now() < end, "BGP sessions not established: {up:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// BGP routes zebra holds (`show ip route summary`).
    fn zebra_bgp_routes(&self) -> u64 {
        let out = sh(&[
            "ip",
            "netns",
            "exec",
            &self.router_ns,
            "vtysh",
            "--vty_socket",
            &self.path(""),
            "-c",
            "show ip route summary json",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        v["routes"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["type"] == "ebgp"))
            .and_then(|r| r["fib"].as_u64())
            .unwrap_or(0)
    }
}

impl Drop for Routing {
    fn drop(&mut self) {
        for d in self.birds.drain(..).chain(self.frr.drain(..)) {
            d.signal("-KILL");
            d.finish(LIMIT);
        }
    }
}

/// fastpath in the router's namespace, serving FPM.
fn start_fastpath(topo: &Topology, cfg: &Path, json: &Path) -> std::process::Child {
    spawn_af_packet(|| {
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns",
            "exec",
            &topo.router_ns(),
            env!("CARGO_BIN_EXE_fastpath"),
        ])
        .args(eal_args(TEST, &topo.af_packet_vdevs()))
        .args([
            "--",
            "--fpm",
            "127.0.0.1:2620",
            "--fpm-hold",
            "5",
            "--config",
        ])
        .arg(cfg)
        .arg("--stats-json")
        .arg(json);
        let _guard = fastpath(); // the runtime-folder guard
        cmd
    })
}

/// Stop fastpath after `checks` ran; with their panic, show fastpath's
/// output; else its run must end clean: balanced, every mbuf back. Its
/// statistics.
fn stop_fastpath(
    child: std::process::Child,
    json: &Path,
    checks: std::thread::Result<()>,
) -> serde_json::Value {
    // SAFETY: the pid is our child's, still running (no --duration).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let r = wait(child, Duration::from_secs(30));
    if let Err(e) = checks {
        eprintln!("fastpath stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        std::panic::resume_unwind(e);
    }
    assert_success(&r);
    let s = read_json(json);
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
    s
}

/// How long the flood at the router's address lasts: `FLOOD_SECS`, 6 s
/// by default (`FLOOD_SECS=180` is issue 35's three minutes).
fn flood_secs() -> u32 {
    std::env::var("FLOOD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

/// `ctl show routes` until `ok` holds, at most LIMIT.
fn wait_routes(what: &str, ok: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let end = Instant::now() + LIMIT;
    loop {
        let r = routes(&prefix(TEST));
        if ok(&r) {
            return r;
        }
        assert!(Instant::now() < end, "waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `ip` in the router's namespace.
fn ip_r(topo: &Topology, args: &[&str]) -> String {
    let ns = topo.router_ns();
    let mut all = vec!["ip", "-n", &ns];
    all.extend(args);
    String::from_utf8_lossy(&sh(&all).stdout).into_owned()
}

/// Routes from FPM that fastpath installed in its FIB (`ctl show fpm`).
fn fpm_installed() -> u64 {
    let s = ctl_ok(&prefix(TEST), &["--json", "show", "fpm"]);
    let v: serde_json::Value = serde_json::from_str(&s.stdout).unwrap();
    v["data"]["routes_added"].as_u64().unwrap_or(0)
}

/// Wait until fastpath installed `total` routes from FPM, at most LIMIT;
/// when it had.
fn wait_fpm_installed(total: u64) -> Instant {
    let end = Instant::now() + LIMIT;
    loop {
        let n = fpm_installed();
        if n >= total {
            return Instant::now();
        }
        assert!(Instant::now() < end, "fastpath installed {n} of {total}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn both_hops(r: &serde_json::Value, route: &str) -> bool {
    let mut g = gateways(r, route).unwrap_or_default();
    g.sort();
    g == ["10.0.1.2", "10.0.1.3"]
}

/// Frames host a's interface `dev` received.
fn rx_packets(topo: &Topology, dev: &str) -> u64 {
    let path = format!("/sys/class/net/{dev}/statistics/rx_packets");
    let out = topo.exec("a", &["cat", &path]);
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// One ping from host b to `dst`: (answered, output).
fn ping_b(topo: &Topology, dst: &str) -> (bool, String) {
    let out = topo.exec("b", &["ping", "-n", "-c", "1", "-W", "1", dst]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Ping `dst` from host b until it answers, at most LIMIT; when it did.
fn ping_until(topo: &Topology, dst: &str) -> Instant {
    let end = Instant::now() + LIMIT;
    loop {
        if ping_b(topo, dst).0 {
            return Instant::now();
        }
        assert!(Instant::now() < end, "{dst} never answered from host b");
    }
}

#[test]
fn bgp_from_bird_through_frr_programs_fastpath_and_flows_over_both_next_hops() {
    let topo = Topology::with_router_ns("bg");
    // Host a: the second speaker on a macvlan with a MAC of its own; both
    // own the announced prefixes (local routes); ARP answered only on the
    // interface that has the address.
    let (a, mv) = (topo.host_if("a"), format!("mv{}", topo.suffix));
    for cmd in [
        vec![
            "ip", "link", "add", &mv, "link", &a, "type", "macvlan", "mode", "bridge",
        ],
        vec!["ip", "addr", "add", "10.0.1.3/24", "dev", &mv],
        vec!["ip", "link", "set", &mv, "up"],
        vec!["sysctl", "-q", "-w", "net.ipv4.conf.all.arp_ignore=1"],
        vec![
            "ip",
            "route",
            "add",
            "local",
            "198.51.100.0/24",
            "dev",
            "lo",
        ],
        vec!["ip", "route", "add", "local", "100.64.0.0/10", "dev", "lo"],
    ] {
        let out = topo.exec("a", &cmd);
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let birds = [2, 3].map(|h| (h, bird_conf(h)));
    let mut routing = Routing::new(&topo, ("bgpd", BGPD_CONF), &birds);
    let cfg = routing.dir.path().join("router.toml");
    let json = routing.dir.path().join("stats.json");
    std::fs::write(&cfg, ROUTER).unwrap();

    let fp = start_fastpath(&topo, &cfg, &json);
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // Once fastpath answers on port 0, its kernel interfaces exist.
        let end = Instant::now() + LIMIT;
        while !topo
            .exec("a", &["ping", "-n", "-c", "1", "-W", "1", "10.0.1.1"])
            .status
            .success()
        {
            assert!(Instant::now() < end, "fastpath never answered");
        }
        routing.start_frr();
        routing.start_birds();
        let established = routing.wait_established();
        // FRR's share: until zebra holds every route; fastpath's: until it
        // holds them too and the last one forwards.
        let total = u64::from(SCALE) + 2;
        let end = Instant::now() + LIMIT;
        while routing.zebra_bgp_routes() < total {
            assert!(
                Instant::now() < end,
                "zebra has {} routes",
                routing.zebra_bgp_routes()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let in_zebra = Instant::now();
        let in_fib = wait_fpm_installed(total);
        eprintln!(
            "{total} prefixes: established to the last in fastpath's FIB {:?} \
             (FRR to its kernel {:?}, then FPM and fastpath's FIB {:?})",
            in_fib - established,
            in_zebra - established,
            in_fib - in_zebra
        );
        // The last one forwards.
        let last = scale_prefix(SCALE - 1);
        ping_until(&topo, &format!("{}.1", last.rsplit_once('.').unwrap().0));

        // The routes in fastpath's FIB: from FPM, both next hops.
        let r = wait_routes("198.51.100.0/24 over both speakers", |r| {
            both_hops(r, "198.51.100.0/24")
        });
        let origin = r
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["prefix"] == "198.51.100.0/24");
        assert_eq!(origin.unwrap()["origin"], "fpm", "{r:#}");
        assert!(both_hops(&r, &format!("{}/24", scale_prefix(SCALE - 1))));

        // Host b's traffic to them flows through fastpath, over both.
        let before = (rx_packets(&topo, &a), rx_packets(&topo, &mv));
        for h in 1..=40 {
            let dst = format!("198.51.100.{h}");
            let (ok, out) = ping_b(&topo, &dst);
            assert!(ok && out.contains("ttl=63"), "{dst}: {out}");
        }
        let after = (rx_packets(&topo, &a), rx_packets(&topo, &mv));
        let spread = (after.0 - before.0, after.1 - before.1);
        eprintln!(
            "40 pings: {} to 10.0.1.2, {} to 10.0.1.3",
            spread.0, spread.1
        );
        assert!(
            spread.0 > 0 && spread.1 > 0,
            "not spread over both next hops: {spread:?}"
        );

        // Withdrawn: gone from the FIB; host b gets net unreachable.
        for h in [2, 3] {
            routing.birdc(h, &["disable", "announced"]);
        }
        wait_routes("the withdrawal", |r| {
            gateways(r, "198.51.100.0/24").is_none()
        });
        let (ok, out) = ping_b(&topo, "198.51.100.1");
        assert!(
            !ok && out.contains("From 10.0.2.1") && out.contains("Destination Net Unreachable"),
            "{out}"
        );
        for h in [2, 3] {
            routing.birdc(h, &["enable", "announced"]);
        }
        wait_routes("the announcement again", |r| {
            both_hops(r, "198.51.100.0/24")
        });
        ping_until(&topo, "198.51.100.1");

        // A flood at the router's address on the peers' link, from every
        // other address there: the sessions hold (hold time 9 s: lost
        // keepalives would end them), the flood is policed by name.
        let secs = flood_secs();
        let mac = ip_r(&topo, &["-br", "link", "show", &topo.router_if("a")]);
        let mac = mac
            .split_whitespace()
            .nth(2)
            .expect("port 0's MAC")
            .to_string();
        let sessions = || [2, 3].map(|h| routing.birdc(h, &["show", "protocols", "uplink"]));
        let before = sessions();
        let peers = ["10.0.1.2", "10.0.1.3"];
        let flooder = flood::flood(&topo, "a", &mac, "10.0.1.1", &peers, false, secs);
        let sent = flooder.wait_with_output().expect("the flood");
        let sent = String::from_utf8_lossy(&sent.stdout).into_owned();
        let flooded: u64 = sent
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap();
        eprintln!(
            "flood: {flooded} datagrams in {secs} s ({} per second) at 10.0.1.1",
            flooded / u64::from(secs)
        );
        assert!(flooded > 0);
        let after = sessions();
        assert_eq!(before, after, "a BGP session went down under the flood");
        assert!(after.iter().all(|s| s.contains("Established")), "{after:?}");
        ping_until(&topo, "198.51.100.2");
    }));
    let s = stop_fastpath(fp, &json, first);
    let drops = &s["totals"]["drops"];
    let policed = drops["kernel_rate_limited"].as_u64().unwrap()
        + drops["kernel_source_limited"].as_u64().unwrap();
    eprintln!(
        "the flood policed: {policed} (to the kernel: {})",
        s["control"]["to_kernel"]
    );
    assert!(policed > 0, "the flood is counted by its drop reason: {s}");

    // A new fastpath: new kernel interfaces, the sessions come back over
    // them, and zebra replays its routes over FPM.
    let fp = start_fastpath(&topo, &cfg, &json);
    let second = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let r = wait_routes("the routes after a restart", |r| {
            both_hops(r, "198.51.100.0/24")
        });
        assert!(gateways(&r, "203.0.113.0/24").is_some(), "{r:#}");
        ping_until(&topo, "198.51.100.7");
    }));
    stop_fastpath(fp, &json, second);
}

const ROUTER6: &str = r#"
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]

[kernel]
interfaces = true
peers = ["2001:db8:1::2"]
ttl_security = true
"#;

const BGPD6_CONF: &str = "\
hostname fpr
router bgp 65001
 bgp router-id 10.0.1.1
 no bgp default ipv4-unicast
 no bgp ebgp-requires-policy
 timers bgp 3 9
 neighbor 2001:db8:1::2 remote-as 65002
 neighbor 2001:db8:1::2 timers connect 1
 neighbor 2001:db8:1::2 ttl-security hops 1
 address-family ipv6 unicast
  neighbor 2001:db8:1::2 activate
 exit-address-family
";

/// IPv6 prefixes BIRD announces besides 2001:db8:100::/48: /48s from
/// 2001:db8:1000:: up.
const SCALE6: u32 = 1_000;

fn scale_prefix6(i: u32) -> String {
    format!("2001:db8:{:x}::/48", 0x1000 + i)
}

/// BIRD on 2001:db8:1::2: an IPv6 session to the router, exporting the
/// prefixes with itself as next hop (its global and link-local addresses:
/// zebra takes the link-local one, on the port's kernel interface).
fn bird6_conf() -> String {
    let mut routes = String::from("  route 2001:db8:100::/48 blackhole;\n");
    for i in 0..SCALE6 {
        routes.push_str(&format!("  route {} blackhole;\n", scale_prefix6(i)));
    }
    format!(
        "router id 10.0.1.2;\n\
         log stderr all;\n\
         protocol device {{}}\n\
         protocol static announced {{\n  ipv6;\n{routes}}}\n\
         protocol bgp uplink {{\n  local 2001:db8:1::2 as 65002;\n  \
         neighbor 2001:db8:1::1 as 65001;\n  strict bind yes;\n  connect retry time 1;\n  \
         ttl security yes;\n  ipv6 {{ import none; export all; next hop self; }};\n}}\n"
    )
}

/// One `ping -6` from host b to `dst`: (answered, output).
fn ping6_b(topo: &Topology, dst: &str) -> (bool, String) {
    topo.ping("b", dst, &["-6", "-W", "1"])
}

/// Run `cmd` on host `side`; it must succeed.
fn on_host(topo: &Topology, side: &str, cmd: &[&str]) {
    let out = topo.exec(side, cmd);
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}

/// Hosts a and b dual-stack: 2001:db8:<net>::2/64 (no DAD) and a default
/// route via the router's address.
fn dual_stack(topo: &Topology) {
    for (side, net) in [("a", 1), ("b", 2)] {
        let host = topo.host_if(side);
        let addr = format!("2001:db8:{net}::2/64");
        let gw = format!("2001:db8:{net}::1");
        on_host(
            topo,
            side,
            &["ip", "-6", "addr", "add", &addr, "dev", &host, "nodad"],
        );
        on_host(
            topo,
            side,
            &[
                "ip", "-6", "route", "add", "default", "via", &gw, "dev", &host,
            ],
        );
    }
}

/// Wait until fastpath answers host a's ping of `addr` (`-6` for IPv6):
/// its kernel interfaces exist from then on.
fn wait_answering(topo: &Topology, addr: &str, extra: &[&str]) {
    let end = Instant::now() + LIMIT;
    while !topo.ping("a", addr, extra).0 {
        assert!(Instant::now() < end, "fastpath never answered at {addr}");
    }
}

/// Host b pings `dst` until answered, one hop away (TTL or hop limit 63).
fn ping_through(topo: &Topology, dst: &str, extra: &[&str]) {
    let end = Instant::now() + LIMIT;
    loop {
        let (ok, out) = topo.ping("b", dst, extra);
        if ok {
            assert!(out.contains("ttl=63"), "{dst}: {out}");
            return;
        }
        assert!(Instant::now() < end, "{dst}: {out}");
    }
}

#[test]
fn ipv6_bgp_from_bird_through_frr_programs_fastpath_and_forwards() {
    let topo = Topology::with_router_ns("b6");
    // The hosts dual-stack; host a owns the prefixes BIRD announces.
    dual_stack(&topo);
    for local in ["2001:db8:100::/48", "2001:db8:1000::/36"] {
        on_host(
            &topo,
            "a",
            &["ip", "-6", "route", "add", "local", local, "dev", "lo"],
        );
    }
    let birds = [(2, bird6_conf())];
    let mut routing = Routing::new(&topo, ("bgpd", BGPD6_CONF), &birds);
    let cfg = routing.dir.path().join("router.toml");
    let json = routing.dir.path().join("stats.json");
    std::fs::write(&cfg, ROUTER6).unwrap();

    let fp = start_fastpath(&topo, &cfg, &json);
    let checks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // Host a's link-local address left DAD by then (BIRD's next hop).
        wait_answering(&topo, "2001:db8:1::1", &["-6", "-W", "1"]);
        routing.start_frr();
        routing.start_birds();
        let established = routing.wait_established();
        let total = u64::from(SCALE6) + 1;
        wait_fpm_installed(total);
        eprintln!(
            "{total} IPv6 prefixes: established to the last in fastpath's FIB {:?}",
            established.elapsed()
        );

        // In the FIB from FPM, by BIRD's link-local (or global) address.
        let r = routes(&prefix(TEST));
        let route = r
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["prefix"] == "2001:db8:100::/48")
            .unwrap_or_else(|| panic!("2001:db8:100::/48 not in the FIB: {r:#}"))
            .clone();
        assert_eq!(route["origin"], "fpm", "{route:#}");
        let via = gateways(&r, "2001:db8:100::/48").unwrap();
        eprintln!("2001:db8:100::/48 via {via:?}");
        assert!(
            via.len() == 1 && (via[0].starts_with("fe80::") || via[0] == "2001:db8:1::2"),
            "{route:#}"
        );
        let last = scale_prefix6(SCALE6 - 1);
        assert!(gateways(&r, &last).is_some(), "{last} not in the FIB");

        // Host b reaches them through fastpath (one hop: hop limit 63).
        for dst in ["2001:db8:100::1", &last.replace("::/48", "::7")] {
            ping_through(&topo, dst, &["-6", "-W", "1"]);
        }

        // Withdrawn: gone from the FIB; host b gets no route (ICMPv6
        // destination unreachable, code 0) from the router.
        routing.birdc(2, &["disable", "announced"]);
        wait_routes("the IPv6 withdrawal", |r| {
            gateways(r, "2001:db8:100::/48").is_none()
        });
        let (ok, out) = ping6_b(&topo, "2001:db8:100::1");
        assert!(
            !ok && out.contains("From 2001:db8:2::1") && out.contains("No route"),
            "{out}"
        );
        routing.birdc(2, &["enable", "announced"]);
        wait_routes("the IPv6 announcement again", |r| {
            gateways(r, "2001:db8:100::/48").is_some()
        });
        ping_through(&topo, "2001:db8:100::1", &["-6", "-W", "1"]);
    }));
    stop_fastpath(fp, &json, checks);
}

const OSPFD_CONF: &str = "\
hostname fpr
interface fp0
 ip ospf hello-interval 1
 ip ospf dead-interval 4
router ospf
 ospf router-id 10.0.1.1
 network 10.0.1.0/24 area 0
";

/// BIRD on 10.0.1.2 speaking OSPFv2 on host a's interface `dev`, exporting
/// 198.51.100.0/24 (an external route with itself as next hop).
fn bird_ospf_conf(dev: &str) -> String {
    format!(
        "router id 10.0.1.2;\n\
         log stderr all;\n\
         protocol device {{}}\n\
         protocol static announced {{\n  ipv4;\n  route 198.51.100.0/24 blackhole;\n}}\n\
         protocol ospf v2 uplink {{\n  ipv4 {{ import none; export all; }};\n  \
         area 0 {{ interface \"{dev}\" {{ type broadcast; hello 1; dead 4; }}; }};\n}}\n"
    )
}

/// One OSPF case: FRR's `daemon` and BIRD (its configuration made for
/// host a's interface) on port 0's link reach a full adjacency through
/// fastpath, BIRD's route to `prefix` reaches the FIB over FPM (by a
/// gateway `via` accepts) and host b reaches `dst` through fastpath.
struct OspfCase {
    tag: &'static str,
    daemon: (&'static str, &'static str),
    bird: fn(&str) -> String,
    router: String,
    prefix: &'static str,
    via: fn(&str) -> bool,
    dst: &'static str,
    /// `ping`'s family (`-4` or `-6`).
    family: &'static str,
}

fn ospf_case(c: OspfCase) {
    let topo = Topology::with_router_ns(c.tag);
    if c.family == "-6" {
        dual_stack(&topo);
    }
    on_host(
        &topo,
        "a",
        &[
            "ip", c.family, "route", "add", "local", c.prefix, "dev", "lo",
        ],
    );
    let birds = [(2, (c.bird)(&topo.host_if("a")))];
    let mut routing = Routing::new(&topo, c.daemon, &birds);
    let cfg = routing.dir.path().join("router.toml");
    let json = routing.dir.path().join("stats.json");
    std::fs::write(&cfg, &c.router).unwrap();
    let ping = [c.family, "-W", "1"];
    let port0 = if c.family == "-6" {
        "2001:db8:1::1"
    } else {
        "10.0.1.1"
    };

    let fp = start_fastpath(&topo, &cfg, &json);
    let checks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_answering(&topo, port0, &ping);
        routing.start_frr();
        routing.start_birds();
        // The hellos to 224.0.0.5 / ff02::5 both ways through fastpath
        // (BIRD's to the kernel's fp0, the daemon's out of port 0), then
        // the database exchange with the DR.
        let end = Instant::now() + LIMIT;
        let neighbours = loop {
            let n = routing.birdc(2, &["show", "ospf", "neighbors", "uplink"]);
            if n.contains("10.0.1.1") && n.contains("Full") {
                break n;
            }
            assert!(Instant::now() < end, "no full adjacency: {n}");
            std::thread::sleep(Duration::from_millis(100));
        };
        eprintln!("BIRD's {} neighbours:\n{neighbours}", c.daemon.0);
        let r = wait_routes(c.prefix, |r| gateways(r, c.prefix).is_some());
        let via = gateways(&r, c.prefix).unwrap();
        assert!(via.len() == 1 && (c.via)(&via[0]), "{via:?}");
        ping_through(&topo, c.dst, &ping);
    }));
    let s = stop_fastpath(fp, &json, checks);
    // The link's groups came through the kernel punt; over IPv4 none was
    // dropped for want of a path (over IPv6 the hosts' MLD reports and
    // other hosts' solicited-node groups are, rightly).
    assert!(s["control"]["to_kernel"].as_u64().unwrap() > 0, "{s}");
    if c.family == "-4" {
        let n = s["totals"]["drops"]["not_unicast"].as_u64().unwrap_or(0);
        assert_eq!(n, 0, "{s}");
    }
}

#[test]
fn ospf_hellos_to_the_link_s_groups_reach_the_kernel_and_frr_programs_fastpath() {
    ospf_case(OspfCase {
        tag: "os",
        daemon: ("ospfd", OSPFD_CONF),
        bird: bird_ospf_conf,
        router: ROUTER.to_string(),
        prefix: "198.51.100.0/24",
        via: |g| g == "10.0.1.2",
        dst: "198.51.100.1",
        family: "-4",
    });
}

const OSPF6D_CONF: &str = "\
hostname fpr
interface fp0
 ipv6 ospf6 area 0
 ipv6 ospf6 hello-interval 1
 ipv6 ospf6 dead-interval 4
router ospf6
 ospf6 router-id 10.0.1.1
";

/// BIRD speaking OSPFv3 on host a's interface `dev`, exporting
/// 2001:db8:100::/48 (an external route by its link-local address).
fn bird_ospf6_conf(dev: &str) -> String {
    format!(
        "router id 10.0.1.2;\n\
         log stderr all;\n\
         protocol device {{}}\n\
         protocol static announced {{\n  ipv6;\n  route 2001:db8:100::/48 blackhole;\n}}\n\
         protocol ospf v3 uplink {{\n  ipv6 {{ import none; export all; }};\n  \
         area 0 {{ interface \"{dev}\" {{ type broadcast; hello 1; dead 4; }}; }};\n}}\n"
    )
}

#[test]
fn ospfv3_to_the_link_s_groups_reaches_the_kernel_and_frr_programs_fastpath() {
    ospf_case(OspfCase {
        tag: "o6",
        daemon: ("ospf6d", OSPF6D_CONF),
        bird: bird_ospf6_conf,
        router: ROUTER6.replace("2001:db8:1::2", "10.0.1.2"),
        prefix: "2001:db8:100::/48",
        via: |g| g.starts_with("fe80::"),
        dst: "2001:db8:100::1",
        family: "-6",
    });
}
