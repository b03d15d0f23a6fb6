//! Shared by the harness tests: binaries, a per-test work folder, a device
//! under test over memif and the generator run against it.
#![allow(dead_code)]

use fastpath_bench::dut_process::{
    memif_eal, run_held_generator, DutProcess, GeneratorOutput, GENERATOR_PORT_ARGS,
};
use fastpath_bench::report::Report;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `fastpath-bench`, built for this test.
pub fn bench_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fastpath-bench"))
}

/// A sibling binary of the workspace (`fastpath`), which cargo builds with the tests.
pub fn workspace_bin(name: &str) -> PathBuf {
    let p = bench_bin().with_file_name(name);
    assert!(
        p.exists(),
        "{} is missing: build the workspace first (cargo build --workspace, or cargo nextest run --workspace)",
        p.display()
    );
    p
}

/// `dpdk-testpmd`, which these tests need (Debian package `dpdk`).
pub fn testpmd() -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", "command -v dpdk-testpmd"])
        .output()
        .expect("sh");
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !p.is_empty(),
        "dpdk-testpmd not found: install Debian's `dpdk` package (apt-get install dpdk)"
    );
    PathBuf::from(p)
}

/// A fresh folder for one test, removed when dropped.
pub fn workdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fp-bench-")
        .tempdir()
        .expect("tempdir")
}

/// A unique tag for EAL file prefixes.
pub fn tag(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// Start a device under test with memif servers on `sock`; `app_args` go after `--`.
pub fn start_dut(
    program: &Path,
    app_args: &[&str],
    dir: &Path,
    sock: &Path,
    name: &str,
    ready: &str,
) -> DutProcess {
    let mut c = Command::new(program);
    c.args(memif_eal(
        &format!("dut-{}", tag(name)),
        "0-1",
        sock,
        "server",
        true,
    ))
    .arg("--")
    .args(app_args);
    DutProcess::start(c, dir.join(format!("{name}.log")), sock, ready)
        .unwrap_or_else(|e| panic!("starting the device under test: {e}"))
}

fn generator_cmd(cmd: &str, args: &[&str], sock: &Path, name: &str, hold: bool) -> Command {
    let mut c = Command::new(bench_bin());
    c.arg(cmd).args(args);
    if hold {
        c.arg("--hold");
    }
    c.args(GENERATOR_PORT_ARGS).arg("--").args(memif_eal(
        &format!("gen-{}", tag(name)),
        "0",
        sock,
        "client",
        false,
    ));
    c
}

/// Run `fastpath-bench <cmd> <args> --hold --dst-mac DUT_MAC0 --tx-port
/// net_memif0 --rx-port net_memif1 -- <memif clients on sock>` against `dut`,
/// which is stopped (and must stop cleanly) once the generator holds its
/// results, before the generator closes its memif side.
pub fn generator(
    cmd: &str,
    args: &[&str],
    sock: &Path,
    name: &str,
    dut: &mut DutProcess,
) -> GeneratorOutput {
    let c = generator_cmd(cmd, args, sock, name, true);
    let mut stopped = Ok(());
    let out = run_held_generator(c, || stopped = dut.stop()).expect("run fastpath-bench");
    if let Err(e) = stopped {
        panic!(
            "the device under test did not stop cleanly: {e}\ngenerator:\n{}",
            out.stderr
        );
    }
    out
}

/// The generator with no device under test (it must fail).
pub fn generator_alone(cmd: &str, args: &[&str], sock: &Path, name: &str) -> Output {
    generator_cmd(cmd, args, sock, name, false)
        .output()
        .expect("run fastpath-bench")
}

/// The generator's output must say it succeeded; returns its JSON report.
pub fn report(out: &GeneratorOutput, json: &Path) -> Report {
    assert!(
        out.status.success(),
        "fastpath-bench failed ({}):\n{}\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    let s = std::fs::read_to_string(json).expect("the JSON report");
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// fastpath routing memif0 -> memif1, with a classify rule that drops UDP
/// from source port 1027: one flow of ten when flows vary the source port
/// from 1024.
pub const LOSSY_FASTPATH: &str = r#"
[[port]]
device = "net_memif0"
address = "10.255.0.1/24"

[[port]]
device = "net_memif1"
address = "10.255.1.1/24"

[[route]]
prefix = "198.19.0.0/16"
via = "10.255.1.2"

[[neighbour]]
address = "10.255.1.2"
mac = "02:00:00:00:00:99"

[[hook]]
point = "ingress"
port = "net_memif0"
kind = "classify"

[[hook.rule]]
proto = "udp"
sport = 1027
action = "drop"
"#;

/// Start fastpath with [`LOSSY_FASTPATH`] on memif `sock`.
pub fn start_lossy_fastpath(dir: &Path, sock: &Path, name: &str) -> DutProcess {
    let cfg = dir.join("fastpath.toml");
    std::fs::write(&cfg, LOSSY_FASTPATH).unwrap();
    start_dut(
        &workspace_bin("fastpath"),
        &["--config", cfg.to_str().unwrap(), "--mbufs", "8191"],
        dir,
        sock,
        name,
        " polls ",
    )
}
