//! `fastpath health` asks a running fastpath through DPDK's telemetry socket:
//! it answers with the right ports while fastpath runs, and fails with a
//! clear message for a file prefix nothing runs under, and after the stop.

mod common;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

fn health(prefix: &str) -> std::process::Output {
    fastpath()
        .args(["health", "--file-prefix", prefix])
        .output()
        .expect("run fastpath health")
}

#[test]
fn health_reports_the_ports_of_a_running_fastpath() {
    let test = "health";
    let prefix = format!("fpt-{test}-{}", std::process::id());
    let mut cmd = fastpath();
    cmd.args(eal_args(
        test,
        &["net_null0".to_string(), "net_null1".to_string()],
    ))
    .args(["--", "--forward", "0:1", "--forward", "1:0"]);
    let mut child = spawn(cmd);

    // Readiness: poll until telemetry answers, with a deadline.
    let start = Instant::now();
    let out = loop {
        let out = health(&prefix);
        if out.status.success() {
            break out;
        }
        if let Some(st) = child.try_wait().unwrap() {
            let r = wait(child, Duration::from_secs(5));
            panic!("fastpath exited before answering: {st:?}\n{}", r.stderr);
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let r = wait(child, Duration::from_secs(5));
            panic!(
                "fastpath health never succeeded; last: {}\nfastpath stderr:\n{}",
                String::from_utf8_lossy(&out.stderr),
                r.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(line.starts_with("fastpath healthy: DPDK 22.11"), "{line}");
    assert!(line.contains(&format!("pid {}", child.id())), "{line}");
    assert!(line.contains("2 ports: 0 net_null0"), "{line}");
    assert!(line.contains("1 net_null1"), "{line}");

    // The port count check: right count passes, wrong count fails.
    let ok = fastpath()
        .args(["health", "--file-prefix", &prefix, "--expect-ports", "2"])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = fastpath()
        .args(["health", "--file-prefix", &prefix, "--expect-ports", "3"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("expected 3 ports"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );

    // Stop it as `docker stop` does; then health fails for that prefix.
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let r = wait(child, Duration::from_secs(30));
    assert_success(&r);
    let after = health(&prefix);
    assert_eq!(after.status.code(), Some(1), "health after the stop");
}

#[test]
fn health_fails_clearly_when_nothing_runs_under_the_prefix() {
    let prefix = format!("fpt-nothing-{}", std::process::id());
    let out = health(&prefix);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("fastpath health: no telemetry socket at "),
        "{err}"
    );
    assert!(
        err.contains(&format!("/{prefix}/dpdk_telemetry.v2")),
        "{err}"
    );
    assert!(err.contains(&format!("--file-prefix {prefix}")), "{err}");
    assert!(err.contains("--no-telemetry"), "{err}");
}
