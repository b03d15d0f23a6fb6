//! Bad `run` / `search` / `frames` arguments: a non-zero exit and a message
//! that says what is wrong, before any DPDK set-up.

mod common;
use common::*;
use std::process::Command;

fn fails_with(args: &[&str], needle: &str) {
    let out = Command::new(bench_bin()).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in:\n{err}"
    );
}

#[test]
fn bad_arguments_say_what_is_wrong() {
    fails_with(
        &["run", "--size", "63", "--", "-l", "0"],
        "frame size 63 is outside 64..=1518",
    );
    fails_with(&["run", "--size", "jumbo", "--", "-l", "0"], "or 'imix'");
    fails_with(
        &["run", "--vary", "src-mac", "--", "-l", "0"],
        "src-ip, dst-ip, src-port, dst-port",
    );
    fails_with(
        &["search", "--rate", "fast", "--", "-l", "0"],
        "expected max, packets/s",
    );
    fails_with(
        &["run", "--vlan", "5000", "--", "-l", "0"],
        "VLAN id 5000 is outside 0..=4095",
    );
    fails_with(
        &[
            "run", "--flows", "70000", "--vary", "dst-port", "--", "-l", "0",
        ],
        "dst-port",
    );
    fails_with(
        &["run", "--seconds", "0", "--", "-l", "0"],
        "--seconds 0 must be above zero",
    );
    fails_with(&["run"], "no EAL arguments");
    fails_with(&["frames", "--src-mac", "02:00"], "expected six hex bytes");
}

#[test]
fn a_memif_client_without_its_server_says_to_start_the_device_first() {
    let dir = workdir();
    let sock = dir.path().join("nobody.sock");
    let out = generator_alone(
        "run",
        &["--seconds", "0.1", "--link-timeout", "1"],
        &sock,
        "noserver",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("start the device under test first"), "{err}");
}

#[test]
fn frames_prints_one_line_per_size_and_flow() {
    let out = Command::new(bench_bin())
        .args(["frames", "--size", "imix", "--flows", "3", "--vlan", "7"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 9);
    for (line, (size, flow)) in lines.iter().zip(
        [64, 594, 1518]
            .iter()
            .flat_map(|s| (0..3).map(move |f| (*s, f))),
    ) {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts[0], size.to_string());
        assert_eq!(parts[1], flow.to_string());
        assert_eq!(parts[2].len(), (size - 4) * 2, "{line}");
        assert_eq!(&parts[2][24..32], "81000007", "VLAN tag: {line}");
    }
}
