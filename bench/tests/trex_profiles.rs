//! The TRex side, without a TRex server: its Python tests (scapy frames byte
//! for byte against `fastpath-bench frames`, the search on synthetic devices)
//! and the runner's JSON, read back here as the same `Report` that
//! `fastpath-bench --json` writes.

mod common;
use common::*;
use fastpath_bench::report::Report;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The venv's python (bench/trex/setup-venv makes it).
fn python() -> PathBuf {
    let dir = std::env::var_os("FASTPATH_PYENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/pyenv"));
    let dir = if dir.is_absolute() {
        dir
    } else {
        repo().join(dir)
    };
    let py = dir.join("bin/python");
    assert!(
        py.exists(),
        "{} is missing: run bench/trex/setup-venv (a venv with scapy from PyPI) first; \
         scripts/quickstart test does",
        py.display()
    );
    py
}

#[test]
fn scapy_frames_match_the_generator_and_the_search_converges() {
    let out = Command::new(python())
        .current_dir(repo())
        .env("FASTPATH_BENCH", bench_bin())
        .args([
            "-m",
            "unittest",
            "discover",
            "-s",
            "bench/trex",
            "-p",
            "test_*.py",
            "-v",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the TRex profiles' tests failed:\n{err}"
    );
    let ran: usize = err
        .lines()
        .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no test count in:\n{err}"));
    assert!(ran >= 5, "only {ran} Python tests ran:\n{err}");
    assert!(!err.contains("skipped"), "a Python test skipped:\n{err}");
}

#[test]
fn the_trex_runner_writes_the_json_of_fastpath_bench() {
    let dir = workdir();
    let json = dir.path().join("trex.json");
    let out = Command::new(python())
        .current_dir(repo())
        .args([
            "bench/trex/ndr.py",
            "--synthetic",
            "1e6",
            "--trial-seconds",
            "0",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ndr.py --synthetic failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(&json).unwrap();
    let r: Report = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}:\n{s}"));
    assert_eq!(r.tool, "trex");
    let p = r.search.expect("search parameters");
    let best = r.result.expect("an NDR");
    assert!(best.offered_pps <= 1e6, "{best:?}");
    assert!(
        1e6 - best.offered_pps <= p.resolution * p.max_rate_pps,
        "{} not within one step of 1 Mpps",
        best.offered_pps
    );
    assert!(r.trials.len() >= 2);
}
