//! `fastpath ctl` with IPv6 against a running dual-stack router (two
//! net_null ports): IPv6 routes added (a global gateway, a link-local one
//! with its port, on-link, the default route), replaced and deleted, shown
//! with their origin beside IPv4's; IPv6 static neighbours added (a
//! link-local one with its port) and removed; refused changes say what and
//! why, exit 1 and change nothing; an IPv4-only fastpath says it has no
//! IPv6 table.

mod common;
use common::ctl::{ctl, ctl_ok, gateways, prefix, routes};
use common::watch::Watched;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

const CONFIG: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
link_local = "fe80::1"

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[route]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"

[[neighbour]]
address = "2001:db8:2::2"
mac = "02:bb:00:00:00:22"
"#;

/// fastpath on two null ports with `config`, until stopped.
fn start(test: &str, config: &str) -> (tempfile::TempDir, Watched, String) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, config).unwrap();
    let vdevs = ["net_null0,no-rx=1".to_string(), "net_null1,no-rx=1".into()];
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &vdevs))
        .args(["--", "--config"])
        .arg(&cfg);
    let mut child = Watched::spawn(cmd);
    child.wait_stderr("fastpath: control socket", LIMIT);
    (dir, child, prefix(test))
}

fn stop(child: Watched) {
    child.signal("-INT");
    assert_success(&child.finish(LIMIT));
}

/// The route of exactly `prefix` in `show routes --json`.
fn route<'a>(routes: &'a serde_json::Value, prefix: &str) -> Option<&'a serde_json::Value> {
    routes.as_array()?.iter().find(|r| r["prefix"] == prefix)
}

fn neighbours(prefix: &str) -> serde_json::Value {
    let s = ctl_ok(prefix, &["--json", "show", "neighbours"]);
    serde_json::from_str::<serde_json::Value>(&s.stdout).unwrap()["data"].clone()
}

fn neighbour(all: &serde_json::Value, address: &str) -> Option<serde_json::Value> {
    all.as_array()?
        .iter()
        .find(|n| n["address"] == address)
        .cloned()
}

#[test]
fn ipv6_routes_and_neighbours_change_at_run_time() {
    let (_dir, child, p) = start("ctl6", CONFIG);
    let r = routes(&p);
    // IPv6 beside IPv4, each with its origin.
    assert_eq!(route(&r, "198.51.100.0/24").unwrap()["origin"], "config");
    let cfg48 = route(&r, "2001:db8:100::/48").expect("the config's IPv6 route");
    assert_eq!(cfg48["origin"], "config");
    assert_eq!(cfg48["next_hops"][0]["gateway"], "2001:db8:2::2");
    assert_eq!(route(&r, "2001:db8:1::/64").unwrap()["origin"], "connected");
    assert_eq!(route(&r, "2001:db8:1::1/128").unwrap()["origin"], "fixed");
    let text = ctl_ok(&p, &["show", "routes"]).stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("2001:db8:100::/48") && l.contains("via 2001:db8:2::2 port 1")),
        "{text}"
    );

    // Added by a global gateway, replaced by a link-local one on its port.
    let s = ctl_ok(
        &p,
        &["route", "add", "2001:db8:200::/48", "via", "2001:db8:2::3"],
    );
    assert!(
        s.stdout
            .contains("route 2001:db8:200::/48 via 2001:db8:2::3 port 1 (added)"),
        "{s:?}"
    );
    let r = routes(&p);
    assert_eq!(route(&r, "2001:db8:200::/48").unwrap()["origin"], "ctl");
    let s = ctl_ok(
        &p,
        &[
            "route",
            "add",
            "2001:db8:200::/48",
            "via",
            "fe80::2",
            "dev",
            "net_null1",
        ],
    );
    assert!(s.stdout.contains("via fe80::2 port 1 (replaced)"), "{s:?}");
    assert_eq!(
        gateways(&routes(&p), "2001:db8:200::/48"),
        Some(vec!["fe80::2".into()])
    );
    // On-link, and the default route.
    let s = ctl_ok(&p, &["route", "add", "2001:db8:300::/48", "dev", "0"]);
    assert!(s.stdout.contains("dev port 0 (added)"), "{s:?}");
    ctl_ok(&p, &["route", "add", "::/0", "via", "2001:db8:1::fe"]);
    let r = routes(&p);
    assert_eq!(gateways(&r, "2001:db8:300::/48"), Some(vec!["-".into()]));
    assert_eq!(gateways(&r, "::/0"), Some(vec!["2001:db8:1::fe".into()]));
    // The JSON answer of an add is the route.
    let s = ctl_ok(
        &p,
        &[
            "--json",
            "route",
            "add",
            "2001:db8:400::/64",
            "via",
            "2001:db8:2::4",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&s.stdout).unwrap();
    assert_eq!(v["data"]["prefix"], "2001:db8:400::/64", "{v}");
    assert_eq!(v["data"]["origin"], "ctl", "{v}");

    // Refused: what and why, and nothing changes.
    let (before, neigh_before) = (routes(&p), neighbours(&p));
    let cases: &[(&[&str], &str)] = &[
        (
            &["route", "add", "2001:db8:500::/48", "via", "fe80::2"],
            "is link-local",
        ),
        (
            &["route", "add", "2001:db8:500::1/48", "via", "2001:db8:2::3"],
            "host bits set",
        ),
        (
            &["route", "add", "2001:db8:500::/129", "via", "2001:db8:2::3"],
            "route add 2001:db8:500::/129",
        ),
        (
            &["route", "add", "2001:db8:500::/48", "via", "10.0.2.2"],
            "is IPv4 but the prefix is IPv6",
        ),
        (
            &["route", "add", "2001:db8:500::/48", "via", "2001:db8:9::9"],
            "not in any port's IPv6 subnet",
        ),
        (
            &["route", "add", "ff05::/16", "via", "2001:db8:2::3"],
            "never forwarded",
        ),
        (
            &["route", "add", "2001:db8:1::/64", "dev", "net_null0"],
            "connected subnet of port 0",
        ),
        (
            &["route", "del", "2001:db8:500::/48"],
            "no route for exactly 2001:db8:500::/48",
        ),
        (&["route", "del", "2001:db8:1::/64"], "cannot be deleted"),
        (&["route", "del", "2001:db8:1::1/128"], "cannot be deleted"),
        (
            &["neigh", "add", "fe80::9", "02:bb:00:00:00:99"],
            "is link-local",
        ),
        (
            &["neigh", "add", "2001:db8:9::9", "02:bb:00:00:00:99"],
            "not in any port's IPv6 subnet",
        ),
        (
            &["neigh", "add", "2001:db8:2::9", "ff:ff:ff:ff:ff:ff"],
            "unicast",
        ),
        (&["neigh", "del", "2001:db8:2::77"], "2001:db8:2::77"),
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

    // Deleted: the ctl route, the default, and the config's.
    for gone in ["2001:db8:200::/48", "::/0", "2001:db8:100::/48"] {
        let s = ctl_ok(&p, &["route", "del", gone]);
        assert!(s.stdout.contains(&format!("route {gone} deleted")), "{s:?}");
        assert_eq!(gateways(&routes(&p), gone), None, "{gone}");
    }
    assert!(route(&routes(&p), "2001:db8:300::/48").is_some());

    // Static neighbours: global, and link-local on its port.
    let s = ctl_ok(&p, &["neigh", "add", "2001:db8:2::9", "02:bb:00:00:00:99"]);
    assert!(
        s.stdout
            .contains("neighbour 2001:db8:2::9 02:bb:00:00:00:99 static on port 1"),
        "{s:?}"
    );
    ctl_ok(
        &p,
        &[
            "neigh",
            "add",
            "fe80::9",
            "02:bb:00:00:00:98",
            "dev",
            "net_null0",
        ],
    );
    let n = neighbours(&p);
    let nine = neighbour(&n, "2001:db8:2::9").expect("the added neighbour");
    assert_eq!(nine["mac"], "02:bb:00:00:00:99", "{n}");
    assert_eq!(nine["static"], true, "{n}");
    assert_eq!(neighbour(&n, "fe80::9").unwrap()["static"], true, "{n}");
    // The config's, listed too.
    assert_eq!(
        neighbour(&n, "2001:db8:2::2").unwrap()["static"],
        true,
        "{n}"
    );
    let text = ctl_ok(&p, &["show", "neighbours"]).stdout;
    assert!(text.contains("2001:db8:2::9"), "{text}");
    ctl_ok(&p, &["neigh", "del", "2001:db8:2::9"]);
    let n = neighbours(&p);
    assert!(
        neighbour(&n, "2001:db8:2::9").is_none_or(|e| e["static"] == false),
        "{n}"
    );
    stop(child);
}

#[test]
fn an_ipv4_only_fastpath_says_it_has_no_ipv6_table() {
    let v4 = CONFIG
        .replace("ipv6 = [\"2001:db8:1::1/64\"]\n", "")
        .replace(
            "ipv6 = [\"2001:db8:2::1/64\"]\nlink_local = \"fe80::1\"\n",
            "",
        );
    let v4 = v4[..v4.find("\n[[route]]\nprefix = \"2001").unwrap()].to_string();
    let (_dir, child, p) = start("ctl6none", &v4);
    let before = routes(&p);
    let s = ctl(&p, &["route", "add", "2001:db8:5::/48", "dev", "0"]);
    assert_eq!(s.code, 1, "{s:?}");
    assert!(s.stderr.contains("runs without IPv6"), "{}", s.stderr);
    assert_eq!(routes(&p), before);
    stop(child);
}
