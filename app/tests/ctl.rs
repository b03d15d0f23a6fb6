//! `fastpath ctl` against a running router (two net_null ports): refused
//! changes say what and why, exit non-zero and change nothing (checked with
//! `show routes` and `show neighbours`); no running instance is said as
//! such; `reload` and SIGHUP apply a changed config file's routes and static
//! neighbours as a difference, keep a route `ctl` added, and a file that
//! does not load changes nothing; `capture start` and `stop` capture what
//! drops meanwhile, one capture at a time; a reader that closes the pipe
//! early is no error.

mod common;
use common::ctl::{ctl, ctl_in, ctl_ok, gateways, prefix, routes};
use common::watch::Watched;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

const PORTS: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"

[[port]]
device = "net_null1"
address = "10.0.2.1/24"

[[neighbour]]
address = "10.0.2.2"
mac = "02:bb:00:00:00:22"
"#;

/// fastpath on two null ports with `routes` (more config), until dropped.
struct Router {
    dir: tempfile::TempDir,
    child: Option<Watched>,
    prefix: String,
}

impl Router {
    fn start(test: &str, routes: &str) -> Router {
        Router::start_on(test, routes, &["net_null0,no-rx=1", "net_null1,no-rx=1"])
    }

    fn start_on(test: &str, routes: &str, vdevs: &[&str]) -> Router {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("router.toml");
        std::fs::write(&cfg, format!("{PORTS}{routes}")).unwrap();
        let vdevs: Vec<String> = vdevs.iter().map(|v| v.to_string()).collect();
        let mut cmd = fastpath();
        cmd.args(eal_args(test, &vdevs))
            .args(["--", "--config"])
            .arg(&cfg);
        let mut child = Watched::spawn(cmd);
        child.wait_stderr("fastpath: control socket", LIMIT);
        Router {
            dir,
            child: Some(child),
            prefix: prefix(test),
        }
    }

    fn write_config(&self, more: &str) {
        std::fs::write(
            self.dir.path().join("router.toml"),
            format!("{PORTS}{more}"),
        )
        .unwrap();
    }

    fn child(&mut self) -> &mut Watched {
        self.child.as_mut().unwrap()
    }

    fn stop(mut self) {
        let child = self.child.take().unwrap();
        child.signal("-INT");
        assert_success(&child.finish(LIMIT));
    }
}

fn neighbours(prefix: &str) -> serde_json::Value {
    let s = ctl_ok(prefix, &["--json", "show", "neighbours"]);
    serde_json::from_str::<serde_json::Value>(&s.stdout).unwrap()["data"].clone()
}

#[test]
fn refused_changes_say_what_and_why_and_change_nothing() {
    let r = Router::start(
        "ctl_errors",
        "\n[[route]]\nprefix = \"198.51.100.0/24\"\nvia = \"10.0.2.2\"\n",
    );
    let p = r.prefix.clone();
    let (before, neigh_before) = (routes(&p), neighbours(&p));
    assert_eq!(
        gateways(&before, "198.51.100.0/24"),
        Some(vec!["10.0.2.2".into()])
    );
    let cases: &[(&[&str], &str)] = &[
        (
            &["route", "add", "10.9.0.0/33", "via", "10.0.2.2"],
            "prefix length 33 is out of range",
        ),
        (
            &["route", "add", "10.9.0.1/16", "via", "10.0.2.2"],
            "host bits set",
        ),
        (
            &["route", "add", "ten/8", "via", "10.0.2.2"],
            "route add ten/8",
        ),
        (
            &["route", "add", "10.9.0.0/16", "dev", "net_nope"],
            "\"net_nope\" is not a configured port",
        ),
        (
            &["route", "add", "10.9.0.0/16", "dev", "7"],
            "is not a configured port",
        ),
        (
            &["route", "add", "10.9.0.0/16", "via", "10.9.9.9"],
            "next hop 10.9.9.9 is not in any connected subnet",
        ),
        (
            &[
                "route",
                "add",
                "198.51.100.0/24",
                "via",
                "10.0.2.3,10.9.9.9",
            ],
            "next hop 10.9.9.9 is not in any connected subnet",
        ),
        (
            &["route", "add", "224.1.0.0/16", "via", "10.0.2.2"],
            "never forwarded",
        ),
        (
            &["route", "add", "10.0.2.0/24", "dev", "net_null1"],
            "connected subnet of port 1",
        ),
        (
            &["route", "del", "10.9.0.0/16"],
            "no route for exactly 10.9.0.0/16",
        ),
        (&["route", "del", "10.0.2.0/24"], "cannot be deleted"),
        (
            &["neigh", "add", "10.0.9.9", "02:bb:00:00:00:99"],
            "not in any connected subnet",
        ),
        (
            &["neigh", "add", "10.0.2.9", "ff:ff:ff:ff:ff:ff"],
            "unicast",
        ),
        (
            &["neigh", "del", "10.0.2.77"],
            "neighbour 10.0.2.77 not found",
        ),
    ];
    for (args, says) in cases {
        let s = ctl(&p, args);
        assert_eq!(s.code, 1, "{args:?}: {s:?}");
        assert!(
            s.stderr.starts_with("fastpath ctl: ") && s.stderr.contains(says),
            "{args:?} should say {says:?}: {}",
            s.stderr
        );
        assert_eq!(routes(&p), before, "{args:?} changed the routes");
        assert_eq!(
            neighbours(&p),
            neigh_before,
            "{args:?} changed the neighbours"
        );
    }
    // A command this side cannot parse: exit 2, nothing sent.
    let s = ctl(&p, &["route", "add", "10.9.0.0/16"]);
    assert_eq!(s.code, 2, "{s:?}");
    assert!(
        s.stderr.contains("expected `route add PREFIX via"),
        "{}",
        s.stderr
    );
    // And one that is accepted, for contrast.
    let s = ctl_ok(&p, &["route", "add", "10.9.0.0/16", "dev", "net_null1"]);
    assert!(
        s.stdout.contains("route 10.9.0.0/16 dev port 1 (added)"),
        "{s:?}"
    );
    assert_eq!(gateways(&routes(&p), "10.9.0.0/16"), Some(vec!["-".into()]));

    // A reader that stops early (`ctl show routes | head -1`): its pipe is
    // closed before the reply is written, which is no failure and no panic.
    for json in [false, true] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = fastpath();
        cmd.args(["ctl", "--file-prefix", &p]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd
            .args(["show", "routes"])
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "json {json}: {stderr}");
        assert!(stderr.is_empty(), "json {json}: {stderr}");
    }
    r.stop();

    // No running instance.
    let none = format!("fpt-ctl-none-{}", std::process::id());
    let s = ctl(&none, &["show", "routes"]);
    assert_eq!(s.code, 3, "{s:?}");
    assert!(
        s.stderr
            .contains("no running fastpath: no control socket at")
            && s.stderr.contains(&none),
        "{}",
        s.stderr
    );
}

#[test]
fn reload_and_sighup_apply_a_changed_configs_routes_as_a_difference() {
    let v1 = r#"
[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[route]]
prefix = "203.0.113.0/24"
via = "10.0.2.2"
"#;
    let mut r = Router::start("ctl_reload", v1);
    let p = r.prefix.clone();
    ctl_ok(&p, &["route", "add", "192.0.2.0/24", "via", "10.0.2.3"]);

    // reload: one route changed (to ECMP), one gone, one new; ctl's stays.
    r.write_config(
        r#"
[[route]]
prefix = "198.51.100.0/24"
via = ["10.0.2.3", "10.0.2.4"]

[[route]]
prefix = "100.64.0.0/10"
via = "10.0.2.2"
"#,
    );
    let s = ctl_ok(&p, &["reload"]);
    assert!(s.stdout.contains("2 added or changed, 1 deleted"), "{s:?}");
    let now = routes(&p);
    let gw = |r: &str| gateways(&now, r);
    assert_eq!(
        gw("198.51.100.0/24"),
        Some(vec!["10.0.2.3".into(), "10.0.2.4".into()])
    );
    assert_eq!(gw("203.0.113.0/24"), None);
    assert_eq!(gw("100.64.0.0/10"), Some(vec!["10.0.2.2".into()]));
    assert_eq!(
        gw("192.0.2.0/24"),
        Some(vec!["10.0.2.3".into()]),
        "ctl's route stays"
    );

    // A file that does not load changes nothing.
    r.write_config("\n[[route]]\nprefix = \"100.64.0.0/10\"\nvia = \"10.0.9.9\"\n");
    let s = ctl(&p, &["reload"]);
    assert_eq!(s.code, 1, "{s:?}");
    assert!(
        s.stderr.contains("router.toml:") && s.stderr.contains("not in any connected subnet"),
        "{}",
        s.stderr
    );
    assert_eq!(routes(&p), now, "a refused reload changed nothing");

    // SIGHUP does the same, for a config without hooks.
    r.write_config(
        r#"
[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.5"

[[neighbour]]
address = "10.0.2.5"
mac = "02:bb:00:00:00:25"
"#,
    );
    r.child().signal("-HUP");
    let line = r.child().wait_stderr("SIGHUP: routes reloaded", LIMIT);
    assert!(line.contains("1 added or changed, 1 deleted"), "{line}");
    r.child().wait_stderr("SIGHUP: hooks reloaded", LIMIT);
    let now = routes(&p);
    assert_eq!(
        gateways(&now, "198.51.100.0/24"),
        Some(vec!["10.0.2.5".into()])
    );
    assert_eq!(gateways(&now, "100.64.0.0/10"), None);
    let n = neighbours(&p);
    let five = n
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["address"] == "10.0.2.5")
        .unwrap_or_else(|| panic!("no 10.0.2.5 in {n}"));
    assert_eq!(five["static"], true, "{five}");
    assert_eq!(five["mac"], "02:bb:00:00:00:25", "{five}");
    r.stop();
}

#[test]
fn capture_starts_and_stops_while_packets_drop() {
    // net_null0 receives a stream of frames for no one's MAC: every one a
    // drop at l2.
    let r = Router::start_on("ctl_capture", "", &["net_null0", "net_null1,no-rx=1"]);
    let (p, dir) = (r.prefix.clone(), r.dir.path().to_path_buf());
    let s = ctl(&p, &["capture", "stop"]);
    assert_eq!(s.code, 1, "{s:?}");
    assert!(s.stderr.contains("no drop capture is running"), "{s:?}");

    // A relative path is the caller's, not the router's.
    let s = ctl_in(&dir, &p, &["--json", "capture", "start", "drops.pcapng"]);
    assert_eq!(s.code, 0, "{s:?}");
    let file = dir.join("drops.pcapng");
    let v: serde_json::Value = serde_json::from_str(&s.stdout).unwrap();
    assert_eq!(v["data"]["file"], file.to_str().unwrap(), "{v}");
    let s = ctl_in(&dir, &p, &["capture", "start", "second.pcapng"]);
    assert_eq!(s.code, 1, "one capture at a time: {s:?}");
    assert!(!dir.join("second.pcapng").exists());

    // Wait for the writer to have written packets, not for a guessed time.
    let deadline = std::time::Instant::now() + LIMIT;
    while std::fs::metadata(&file).map_or(0, |m| m.len()) < 64 * 1024 {
        assert!(std::time::Instant::now() < deadline, "nothing captured");
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = ctl_ok(&p, &["--json", "capture", "stop"]);
    let v: serde_json::Value = serde_json::from_str(&s.stdout).unwrap();
    let written = v["data"]["written"].as_u64().unwrap();
    assert!(written > 0, "{v}");
    let comments = tshark_comments(&file);
    assert_eq!(comments.len() as u64, written, "{v}");
    assert!(
        comments
            .iter()
            .all(|c| c.starts_with("reason=") && c.contains(" stage=l2 ")),
        "{:?}",
        &comments[..comments.len().min(5)]
    );
    let s = ctl(&p, &["capture", "stop"]);
    assert_eq!(s.code, 1, "stopped already: {s:?}");
    r.stop();
}
