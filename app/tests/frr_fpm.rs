//! FRR's zebra (Debian's frr 8.4, `-M dplane_fpm_nl`) programs fastpath's
//! FIB over FPM. In a network namespace of their own (its loopback for
//! FPM, a veth with 10.0.2.1/24 and 2001:db8:2::1/64 so that zebra
//! resolves 10.0.2.2 and 2001:db8:2::2 as connected): zebra and staticd
//! with their own config, pid and socket paths under a temp folder, and
//! fastpath on two null ports with `--fpm 127.0.0.1:2620`. Checked through
//! `fastpath ctl` (polled, no fixed waits): a static route reaches the FIB
//! with origin fpm, an IPv6 one the IPv6 FIB and goes with it; an ECMP route
//! with both gateways; a ctl route wins over it and zebra's comes back when
//! the ctl route goes; removing the static route removes it; killing zebra
//! leaves the routes forwarding (stale) until the hold time sweeps them.
//! A restarted zebra replays what its config gives, and the route that
//! was only in the old one is swept after the hold time.
//! A port's link going down and up, with a kernel interface instead of the
//! veth, takes zebra's route through it out of the FIB and back.

mod common;
#[path = "common/netns.rs"]
#[allow(dead_code)]
mod netns;
use common::ctl::{ctl_ok, gateways, prefix, routes};
use common::watch::Watched;
use common::*;
use netns::{need, sh};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
const ZEBRA: &str = "/usr/lib/frr/zebra";
const STATICD: &str = "/usr/lib/frr/staticd";

const ROUTER: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
"#;

/// Two null ports that receive nothing.
const NULL_PORTS: [&str; 2] = ["net_null0,no-rx=1", "net_null1,no-rx=1"];

/// The namespace, its FRR daemons and their folder; all gone on drop.
struct Frr {
    ns: String,
    dir: tempfile::TempDir,
    zebra: Option<Watched>,
    staticd: Option<Watched>,
}

impl Frr {
    /// The namespace with a veth `fp1` that has port 1's addresses, so that
    /// zebra resolves the gateways as connected.
    fn new() -> Frr {
        let frr = Frr::bare();
        frr.ip(&["link", "add", "fp1", "type", "veth", "peer", "name", "fp1p"]);
        frr.ip(&["addr", "add", "10.0.2.1/24", "dev", "fp1"]);
        frr.ip(&["addr", "add", "2001:db8:2::1/64", "dev", "fp1", "nodad"]);
        frr.ip(&["link", "set", "fp1", "up"]);
        frr.ip(&["link", "set", "fp1p", "up"]);
        frr
    }

    /// The namespace with its loopback up and nothing else: fastpath's
    /// kernel interfaces give zebra its connected routes.
    fn bare() -> Frr {
        // SAFETY: geteuid has no preconditions.
        assert!(
            unsafe { libc::geteuid() } == 0,
            "this test needs root (a network namespace for zebra and fastpath)"
        );
        need("ip");
        need("vtysh");
        for d in [ZEBRA, STATICD] {
            assert!(
                Path::new(d).is_file(),
                "this test needs FRR's {d}: apt-get install frr (scripts/quickstart installs it)"
            );
        }
        let ns = format!("fpz{}", std::process::id() % 100_000);
        let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        sh(&["ip", "netns", "add", &ns]);
        sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        let dir = tempfile::tempdir().unwrap();
        // The daemons run as user frr: their pid files and sockets go here.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(
            dir.path().join("zebra.conf"),
            "hostname fpz\nfpm address 127.0.0.1 port 2620\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("staticd.conf"),
            "ip route 198.51.100.0/24 10.0.2.2\nipv6 route 2001:db8:99::/48 2001:db8:2::2\n",
        )
        .unwrap();
        Frr {
            ns,
            dir,
            zebra: None,
            staticd: None,
        }
    }

    /// `ip -n NS ARGS...`, which must succeed; its output.
    fn ip(&self, args: &[&str]) -> String {
        let mut v = vec!["ip", "-n", self.ns.as_str()];
        v.extend_from_slice(args);
        String::from_utf8_lossy(&sh(&v).stdout).into_owned()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A daemon in the namespace with its own config, pid file, zserv and
    /// vty sockets, no vty port, logging to stdout.
    fn daemon(&self, bin: &str, name: &str, extra: &[&str]) -> Watched {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, bin])
            .args(extra)
            .arg("-f")
            .arg(self.path(&format!("{name}.conf")))
            .arg("-i")
            .arg(self.path(&format!("{name}.pid")))
            .arg("-z")
            .arg(self.path("zserv.api"))
            .arg("--vty_socket")
            .arg(self.dir.path())
            .args(["-P", "0", "--log", "stdout"]);
        Watched::spawn(cmd)
    }

    fn start(&mut self) {
        let mut zebra = self.daemon(ZEBRA, "zebra", &["-M", "dplane_fpm_nl"]);
        zebra.wait_for("zebra starting", LIMIT, |_, l| {
            l.contains("zebra 8.").then_some(())
        });
        self.zebra = Some(zebra);
        self.wait_vty("zebra");
        self.staticd = Some(self.daemon(STATICD, "staticd", &[]));
        self.wait_vty("staticd");
    }

    /// Until `name`'s vty socket accepts a connection, at most LIMIT:
    /// vtysh refuses ("staticd is not running") before it listens.
    fn wait_vty(&self, name: &str) {
        let sock = self.path(&format!("{name}.vty"));
        let end = Instant::now() + LIMIT;
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(
                Instant::now() < end,
                "{name} did not listen on {} within {LIMIT:?}",
                sock.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// fastpath in the namespace on `vdevs` with `config`, FPM on
    /// 127.0.0.1:2620 and `extra` options; once its control socket is up,
    /// the process and its ctl prefix.
    fn fastpath(
        &self,
        test: &str,
        config: &str,
        vdevs: &[String],
        extra: &[&str],
    ) -> (Watched, String) {
        let cfg = self.path("router.toml");
        std::fs::write(&cfg, config).unwrap();
        let _ = fastpath(); // arms the runtime-folder guard
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, env!("CARGO_BIN_EXE_fastpath")])
            .args(eal_args(test, vdevs))
            .args(["--", "--quiet", "--fpm", "127.0.0.1:2620"])
            .args(extra)
            .arg("--config")
            .arg(&cfg);
        let mut fp = Watched::spawn(cmd);
        fp.wait_stderr("fastpath: control socket", LIMIT);
        (fp, prefix(test))
    }

    /// `vtysh -c "conf t" -c LINE...` against these daemons.
    fn configure(&self, lines: &[&str]) {
        let mut args = vec!["ip", "netns", "exec", &self.ns, "vtysh", "--vty_socket"];
        let dir = self.dir.path().to_str().unwrap().to_string();
        args.push(&dir);
        args.extend(["-c", "configure terminal"]);
        for l in lines {
            args.extend(["-c", l]);
        }
        let out = sh(&args);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(!said.contains('%'), "vtysh {lines:?}: {said}");
    }

    fn kill_zebra(&mut self) {
        let z = self.zebra.take().expect("zebra runs");
        z.signal("-KILL");
        z.finish(LIMIT);
    }

    /// Both daemons killed: what was configured through vtysh and not in
    /// their config files is gone with them.
    fn kill_all(&mut self) {
        self.kill_zebra();
        let s = self.staticd.take().expect("staticd runs");
        s.signal("-KILL");
        s.finish(LIMIT);
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        for d in [self.staticd.take(), self.zebra.take()]
            .into_iter()
            .flatten()
        {
            d.signal("-KILL");
            d.finish(LIMIT);
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

/// `ctl show routes` until `ok` holds for it, at most LIMIT.
fn wait_routes(p: &str, what: &str, ok: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let end = Instant::now() + LIMIT;
    loop {
        let r = routes(p);
        if ok(&r) {
            return r;
        }
        assert!(Instant::now() < end, "waiting for {what}: routes now {r:#}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn fpm(p: &str) -> serde_json::Value {
    let s = ctl_ok(p, &["--json", "show", "fpm"]);
    serde_json::from_str::<serde_json::Value>(&s.stdout).unwrap()["data"].clone()
}

fn origin(r: &serde_json::Value, route: &str) -> Option<String> {
    r.as_array()?
        .iter()
        .find(|x| x["prefix"] == route)
        .and_then(|x| x["origin"].as_str().map(str::to_string))
}

#[test]
fn zebra_programs_the_fib_over_fpm_and_a_dead_zebra_is_swept_after_the_hold_time() {
    let test = "frr_fpm";
    let mut frr = Frr::new();
    let (fp, p) = frr.fastpath(
        test,
        ROUTER,
        &NULL_PORTS.map(String::from),
        &["--fpm-hold", "2"],
    );
    assert_eq!(fpm(&p)["connected"], 0);

    frr.start();
    let r = wait_routes(&p, "zebra's static route", |r| {
        origin(r, "198.51.100.0/24").as_deref() == Some("fpm")
    });
    assert_eq!(
        gateways(&r, "198.51.100.0/24"),
        Some(vec!["10.0.2.2".into()])
    );
    let s = fpm(&p);
    assert_eq!(s["connected"], 1, "{s:#}");
    assert!(s["routes_added"].as_u64() >= Some(1), "{s:#}");
    assert_eq!(s["malformed_netlink"], 0, "{s:#}");
    assert_eq!(s["bad_attribute"], 0, "{s:#}");

    // IPv6: the static route reaches the IPv6 FIB by port 1's subnet, and
    // goes when it goes.
    let v6 = "2001:db8:99::/48";
    let r = wait_routes(&p, "zebra's IPv6 static route", |r| {
        origin(r, v6).as_deref() == Some("fpm")
    });
    assert_eq!(gateways(&r, v6), Some(vec!["2001:db8:2::2".into()]));
    frr.configure(&["no ipv6 route 2001:db8:99::/48 2001:db8:2::2"]);
    wait_routes(&p, "the IPv6 static route's removal", |r| {
        origin(r, v6).is_none()
    });

    // ECMP: two gateways, one prefix.
    frr.configure(&[
        "ip route 203.0.113.0/24 10.0.2.2",
        "ip route 203.0.113.0/24 10.0.2.3",
    ]);
    let ecmp = "203.0.113.0/24";
    wait_routes(&p, "the ECMP route", |r| {
        gateways(r, ecmp).is_some_and(|g| g.len() == 2)
    });
    // A ctl route wins; when it goes, zebra's takes the prefix again.
    ctl_ok(&p, &["route", "add", ecmp, "via", "10.0.2.9"]);
    let r = routes(&p);
    assert_eq!(origin(&r, ecmp).as_deref(), Some("ctl"));
    assert_eq!(gateways(&r, ecmp), Some(vec!["10.0.2.9".into()]));
    ctl_ok(&p, &["route", "del", ecmp]);
    let r = routes(&p);
    assert_eq!(origin(&r, ecmp).as_deref(), Some("fpm"), "{r:#}");
    let mut g = gateways(&r, ecmp).unwrap();
    g.sort();
    assert_eq!(g, ["10.0.2.2", "10.0.2.3"]);

    // The static route goes: so does the FPM route.
    frr.configure(&["no ip route 198.51.100.0/24 10.0.2.2"]);
    wait_routes(&p, "the static route's removal", |r| {
        origin(r, "198.51.100.0/24").is_none()
    });
    assert!(fpm(&p)["routes_removed"].as_u64() >= Some(1));

    // zebra dies: its routes stay (stale) until the 2 s hold time passes.
    frr.kill_zebra();
    let end = Instant::now() + LIMIT;
    loop {
        let s = fpm(&p);
        if s["connected"] == 0 {
            break;
        }
        assert!(Instant::now() < end, "zebra's end not seen: {s:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Routes first, then counters: no sweep yet means the routes were there.
    let r = routes(&p);
    let s = fpm(&p);
    if s["routes_swept"] == 0 {
        assert_eq!(
            origin(&r, ecmp).as_deref(),
            Some("fpm"),
            "stale, still there"
        );
        assert!(s["stale_routes"].as_u64() >= Some(1), "{s:#}");
    }
    wait_routes(&p, "the sweep of zebra's stale routes", |r| {
        origin(r, ecmp).is_none()
    });
    let s = fpm(&p);
    assert!(s["routes_swept"].as_u64() >= Some(1), "{s:#}");
    assert_eq!(s["rib_routes"], 0, "{s:#}");

    fp.signal("-INT");
    assert_success(&fp.finish(LIMIT));
}

/// zebra's side played by the test (frames built with
/// `netlink-packet-route`, one route a frame as `dplane_fpm_nl` sends
/// them): 20,000 /24 routes over two gateways, with a second connection
/// replacing the first halfway (its replay makes the first half fresh
/// again). All reach the FIB with origin fpm; the rate is printed (a
/// figure for orientation, not the benchmark of issue 35 point 4).
#[test]
fn twenty_thousand_routes_from_a_replaying_client_all_reach_the_fib() {
    use fastpath::fpm::build::{frame_of, new_route, via};
    use std::io::Write;
    use std::net::Ipv4Addr;
    const N: u32 = 20_000;
    let test = "fpm_ingest";
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, ROUTER).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let vdevs = [
        "net_null0,no-rx=1".to_string(),
        "net_null1,no-rx=1".to_string(),
    ];
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &vdevs))
        .args(["--", "--quiet", "--fpm", &addr, "--config"])
        .arg(&cfg);
    let mut fp = Watched::spawn(cmd);
    fp.wait_stderr("fastpath: control socket", LIMIT);
    let p = prefix(test);
    let frames: Vec<Vec<u8>> = (0..N)
        .map(|i| {
            let dst = Ipv4Addr::from(0x6400_0000 + (i << 8)); // 100.0.0.0/24 onwards
            let gw = if i % 2 == 0 { "10.0.1.2" } else { "10.0.2.2" };
            frame_of(&[new_route(dst, 24, via(gw.parse::<Ipv4Addr>().unwrap(), 2))])
        })
        .collect();
    let started = Instant::now();
    let mut first = std::net::TcpStream::connect(&addr).unwrap();
    let half = (N / 2) as usize;
    first.write_all(&frames[..half].concat()).unwrap();
    let mut second = std::net::TcpStream::connect(&addr).unwrap();
    second.write_all(&frames.concat()).unwrap();
    let end = Instant::now() + Duration::from_secs(120);
    let s = loop {
        let s = fpm(&p);
        if s["rib_routes"] == N && s["stale_routes"] == 0 && s["session_routes"] == N {
            break s;
        }
        assert!(Instant::now() < end, "not all routes arrived: {s:#}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed().as_secs_f64();
    let installed = s["routes_added"].as_u64().unwrap() + s["routes_replaced"].as_u64().unwrap();
    eprintln!(
        "fpm ingest: {N} routes (+ {half} before the reconnect) in {took:.2} s: {:.0} routes/s \
         into the FIB ({} build)",
        f64::from(N) / took,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    assert_eq!(s["routes_added"], N, "{s:#}");
    assert!(installed >= u64::from(N), "{s:#}");
    assert_eq!(s["connections"], 2, "{s:#}");
    assert_eq!(s["malformed_netlink"], 0, "{s:#}");
    let r = routes(&p);
    let fpm_routes = r
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["origin"] == "fpm")
        .count();
    assert_eq!(fpm_routes, N as usize);
    assert_eq!(gateways(&r, "100.0.1.0/24"), Some(vec!["10.0.2.2".into()]));
    drop((first, second));
    fp.signal("-INT");
    assert_success(&fp.finish(LIMIT));
}

/// A port's link, end to end: fastpath's port 0 is a TAP (`net_tap`) whose
/// kernel side the test sets down and up; its kernel interface `fp0` (the
/// port's addresses) loses and regains carrier with it; zebra, which
/// resolves a static route's gateway through `fp0`'s connected route,
/// withdraws the route over FPM while the link is down and sends it again
/// when it is back.
#[test]
fn a_port_link_going_down_takes_zebras_routes_through_it_away_and_back() {
    let test = "frr_link";
    let mut frr = Frr::bare();
    let config = r#"
[[port]]
device = "net_tap0"
address = "10.0.2.1/24"

[kernel]
interfaces = true
"#;
    let tap = format!("fptap{}", std::process::id() % 100_000);
    let (mut fp, p) = frr.fastpath(test, config, &[format!("net_tap0,iface={tap}")], &[]);
    let carrier = |frr: &Frr| frr.ip(&["-br", "link", "show", "fp0"]);
    assert!(carrier(&frr).contains("LOWER_UP"), "{}", carrier(&frr));

    frr.start();
    let route = "198.51.100.0/24";
    let r = wait_routes(&p, "zebra's static route by fp0", |r| {
        origin(r, route).as_deref() == Some("fpm")
    });
    assert_eq!(gateways(&r, route), Some(vec!["10.0.2.2".into()]));

    // The link goes down: fp0 loses carrier, zebra withdraws the route.
    frr.ip(&["link", "set", &tap, "down"]);
    fp.wait_stderr("port 0: link down; kernel interface fp0 carrier off", LIMIT);
    let link = carrier(&frr);
    assert!(
        link.contains("NO-CARRIER") && !link.contains("LOWER_UP"),
        "{link}"
    );
    wait_routes(&p, "the withdrawal while port 0 is down", |r| {
        origin(r, route).is_none()
    });
    assert!(fpm(&p)["routes_removed"].as_u64() >= Some(1));

    // Back up: carrier, and the route again.
    frr.ip(&["link", "set", &tap, "up"]);
    fp.wait_stderr("port 0: link up; kernel interface fp0 carrier on", LIMIT);
    assert!(carrier(&frr).contains("LOWER_UP"), "{}", carrier(&frr));
    let r = wait_routes(&p, "the route once port 0 is up", |r| {
        origin(r, route).as_deref() == Some("fpm")
    });
    assert_eq!(gateways(&r, route), Some(vec!["10.0.2.2".into()]));

    fp.signal("-INT");
    assert_success(&fp.finish(LIMIT));
}

/// zebra restarted (with staticd): it replays the routes its config gives,
/// which stay; a route configured only in the old daemons' running config
/// is not sent again, stays (stale, still forwarding) through the hold time
/// that counts from the reconnect, and is swept after it.
#[test]
fn a_restarted_zebra_replays_its_routes_and_what_it_no_longer_sends_is_swept() {
    let test = "frr_restart";
    let mut frr = Frr::new();
    let (fp, p) = frr.fastpath(
        test,
        ROUTER,
        &NULL_PORTS.map(String::from),
        &["--fpm-hold", "4"],
    );
    let (kept, gone) = ("198.51.100.0/24", "203.0.113.0/24");

    frr.start();
    frr.configure(&["ip route 203.0.113.0/24 10.0.2.3"]);
    wait_routes(&p, "both routes from the first zebra", |r| {
        origin(r, kept).as_deref() == Some("fpm") && origin(r, gone).as_deref() == Some("fpm")
    });
    assert_eq!(fpm(&p)["connections"], 1);

    frr.kill_all();
    frr.start();
    let end = Instant::now() + LIMIT;
    while fpm(&p)["connections"] != 2 {
        assert!(
            Instant::now() < end,
            "zebra did not reconnect: {:#}",
            fpm(&p)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Routes first, then counters: before the sweep the old route stays.
    let r = routes(&p);
    if fpm(&p)["routes_swept"] == 0 {
        assert_eq!(
            origin(&r, gone).as_deref(),
            Some("fpm"),
            "stale, kept: {r:#}"
        );
    }
    let r = wait_routes(&p, "the sweep of the route zebra no longer sends", |r| {
        origin(r, gone).is_none()
    });
    assert_eq!(origin(&r, kept).as_deref(), Some("fpm"), "replayed: {r:#}");
    assert_eq!(gateways(&r, kept), Some(vec!["10.0.2.2".into()]));
    let s = fpm(&p);
    assert_eq!(s["routes_swept"], 1, "{s:#}");
    assert_eq!(s["stale_routes"], 0, "{s:#}");
    assert_eq!(s["connected"], 1, "{s:#}");

    fp.signal("-INT");
    assert_success(&fp.finish(LIMIT));
}
