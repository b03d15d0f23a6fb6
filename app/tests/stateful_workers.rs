//! A stateful filter on two workers over ports of one RX queue each, which
//! the default placement spreads over the workers port by port, so that a
//! flow's two directions reach different connection tables: fastpath says
//! so at start, and a reload that adds the first stateful filter says that
//! the ports keep the RSS key they started with until a restart.

mod common;
use common::watch::Watched;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

const PORTS: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
"#;

const STATEFUL: &str = r#"
[[hook]]
point = "egress"
port = "net_null1"
kind = "filter"
policy = "drop"
stateful = true

[[hook.rule]]
state = ["established"]
action = "accept"
"#;

/// fastpath on two workers sharing the second CPU (`--lcores 0@0,1@1,2@1`),
/// two silent net_null ports, router config `cfg`.
fn two_workers(test: &str, cfg: &Path) -> Command {
    let vdevs = [
        "net_null0,no-rx=1".to_string(),
        "net_null1,no-rx=1".to_string(),
    ];
    let mut args = eal_args(test, &vdevs);
    assert_eq!(
        args[..2],
        ["-l", "0-1"],
        "eal_args starts with the lcore list"
    );
    args[0] = "--lcores".into();
    args[1] = "0@0,1@1,2@1".into();
    let mut cmd = fastpath();
    cmd.args(args).arg("--").arg("--config").arg(cfg);
    cmd
}

const WARNING: &str = "warning: a stateful filter keeps one connection table per worker";

#[test]
fn a_stateful_filter_over_ports_spread_one_by_one_is_warned_about_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, format!("{PORTS}{STATEFUL}")).unwrap();
    let mut child = Watched::spawn(two_workers("stateful-start", &cfg));
    let line = child.wait_stderr(WARNING, LIMIT);
    assert!(line.contains("one RX queue"), "{line}");
    assert!(line.contains("rx_queues = 2"), "{line}");
    child.wait_stderr("routing", LIMIT);
    child.signal("-INT");
    let r = child.finish(LIMIT);
    assert!(r.status.success(), "fastpath failed:\n{}", r.stderr);
}

#[test]
fn a_reload_that_adds_the_first_stateful_filter_says_the_key_stays() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, PORTS).unwrap();
    let mut child = Watched::spawn(two_workers("stateful-reload", &cfg));
    child.wait_stderr("routing", LIMIT);
    std::fs::write(&cfg, format!("{PORTS}{STATEFUL}")).unwrap();
    child.signal("-HUP");
    let line = child.wait_stderr("a stateful filter was added", LIMIT);
    assert!(line.contains("until a restart"), "{line}");
    child.wait_stderr(WARNING, LIMIT);
    child.signal("-INT");
    let r = child.finish(LIMIT);
    assert!(r.status.success(), "fastpath failed:\n{}", r.stderr);
    let before_reload = r.stderr.split("SIGHUP").next().unwrap_or_default();
    assert!(
        !before_reload.contains(WARNING),
        "no stateful filter at start, no warning:\n{}",
        r.stderr
    );
}
