//! Helpers shared by the integration tests: unique EAL prefixes, the fastpath
//! binary run with a deadline, and test frames.
#![allow(dead_code)]

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// EAL arguments for one test: its own file prefix, no hugepages, no PCI, the
/// given vdevs, lcores 0-1 (main + one worker).
pub fn eal_args(test: &str, vdevs: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "-l",
        "0-1",
        "--no-huge",
        "-m",
        "512",
        "--no-pci",
        "--log-level",
        "lib.eal:error",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let prefix = format!("fpt-{test}-{}", std::process::id());
    runtime_dirs::track(&prefix);
    v.push("--file-prefix".into());
    v.push(prefix);
    for d in vdevs {
        v.push("--vdev".into());
        v.push(d.clone());
    }
    v
}

/// The fastpath binary under test.
pub fn fastpath() -> Command {
    runtime_dirs::guard();
    Command::new(env!("CARGO_BIN_EXE_fastpath"))
}

/// EAL runtime folders (`/var/run/dpdk/fpt-<test>-<pid>`) of fastpath runs
/// that ended. fastpath removes its own at a clean exit; one that was killed
/// (a deadline, a second signal) or whose EAL init failed leaves it. The
/// guard, armed by [`fastpath`] and [`eal_args`], removes them when the test
/// ends (passed or failed: libtest joins the test's thread, whose
/// thread-locals drop then), and, when armed, those of test processes that
/// are gone (killed by the runner's timeout).
pub mod runtime_dirs {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    /// The prefixes this test's thread handed out (tests of one process may
    /// run as threads side by side: each removes only its own).
    struct Guard(RefCell<HashSet<String>>);

    impl Drop for Guard {
        fn drop(&mut self) {
            sweep(&self.0.borrow());
        }
    }

    thread_local! {
        static GUARD: Guard = Guard(RefCell::new(HashSet::new()));
    }

    /// Arm the guard of this test's thread; sweep what dead test processes left.
    pub fn guard() {
        GUARD.with(|_| {});
        sweep(&HashSet::new());
    }

    /// The test's fastpath runs under `prefix`: remove its folder when the
    /// test ends.
    pub fn track(prefix: &str) {
        GUARD.with(|g| g.0.borrow_mut().insert(prefix.to_string()));
        sweep(&HashSet::new());
    }

    /// Remove the `fpt-*-<pid>` folders whose EAL primary has exited (no
    /// process holds the lock on their `config`): those of `ours`, and always
    /// those of test processes that no longer run.
    fn sweep(ours: &HashSet<String>) {
        let base = fastpath::dpdk::telemetry_client::default_runtime_base();
        let Ok(entries) = std::fs::read_dir(&base) else {
            return;
        };
        let locked = locked_inodes();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("fpt-")
                .and_then(|n| n.rsplit('-').next())
                .filter(|p| p.parse::<u32>().is_ok())
            else {
                continue;
            };
            let gone = !Path::new("/proc").join(pid).exists();
            if !(ours.contains(&name) || gone) {
                continue;
            }
            let in_use =
                std::fs::metadata(e.path().join("config")).is_ok_and(|m| locked.contains(&m.ino()));
            if !in_use {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }

    /// Inodes of the files some process holds a lock on (`/proc/locks`: the
    /// fifth or sixth column is `MAJOR:MINOR:INODE`); EAL's primary holds a
    /// write lock on its `config` while it runs.
    fn locked_inodes() -> HashSet<u64> {
        let text = std::fs::read_to_string("/proc/locks").unwrap_or_default();
        text.lines()
            .flat_map(|l| l.split_whitespace())
            .filter(|w| w.matches(':').count() == 2)
            .filter_map(|w| w.rsplit(':').next()?.parse().ok())
            .collect()
    }
}

/// Output of a finished run.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Start `cmd` with piped output.
pub fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fastpath")
}

/// Wait for `child` at most `limit`; kill it and fail the test past that.
pub fn wait(mut child: Child, limit: Duration) -> Run {
    let start = Instant::now();
    // Drain the pipes on threads so a chatty child never blocks on a full pipe.
    let out = child.stdout.take();
    let err = child.stderr.take();
    let t_out = std::thread::spawn(move || drain(out));
    let t_err = std::thread::spawn(move || drain(err));
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let (o, e) = (t_out.join().unwrap(), t_err.join().unwrap());
            panic!("fastpath did not finish within {limit:?}\nstdout:\n{o}\nstderr:\n{e}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

fn drain<R: Read>(r: Option<R>) -> String {
    let mut s = String::new();
    if let Some(mut r) = r {
        let _ = r.read_to_string(&mut s);
    }
    s
}

/// Run to completion with a deadline.
pub fn run(cmd: Command, limit: Duration) -> Run {
    wait(spawn(cmd), limit)
}

/// `n` frames of pseudo-random content and length 60..=1514 (the same for
/// the same seed).
pub fn random_frames(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let mut frame = vec![0; rng.usize(60..=1514)];
            rng.fill(&mut frame);
            frame
        })
        .collect()
}

/// Write frames to a pcap file.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let f = std::fs::File::create(path).expect("create pcap");
    fastpath::pcap::write(std::io::BufWriter::new(f), frames).expect("write pcap");
}

/// The statistics report's entry of the hook `name`.
pub fn hook_report<'a>(s: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    s["hooks"]
        .as_array()
        .unwrap_or_else(|| panic!("no hooks in the report: {s}"))
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("no hook {name:?} in the report: {s}"))
}

/// Read the final statistics JSON.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("statistics JSON {} missing: {e}", path.display()));
    serde_json::from_str(&text).expect("valid statistics JSON")
}

/// Assert the run exited 0, printing its output otherwise.
pub fn assert_success(r: &Run) {
    assert!(
        r.status.success(),
        "fastpath failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        r.status,
        r.stdout,
        r.stderr
    );
}

/// The comment of every packet in `file`, by `tshark`, in file order.
pub fn tshark_comments(file: &Path) -> Vec<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-e", "frame.comment"])
        .output()
        .expect("tshark runs (apt-get install -y --no-install-recommends tshark)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

pub mod ctl;
pub mod frames;
pub mod promtool;
pub mod watch;

/// Start fastpath on net_af_packet ports, retrying a start that DPDK 22.11
/// refused because its PACKET_FANOUT group id, `(getpid() ^ ifindex) &
/// 0xffff`, clashed with another fastpath's in the same network namespace
/// (parallel tests): a new process has a new pid. A start that fails for
/// any other reason fails the test with fastpath's output.
pub fn spawn_af_packet(make: impl Fn() -> Command) -> Child {
    for _ in 0..4 {
        let mut child = spawn(make());
        let start = Instant::now();
        // The probe happens at EAL init, well within this.
        while start.elapsed() < Duration::from_secs(2) {
            if child.try_wait().expect("try_wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if child.try_wait().expect("try_wait").is_none() {
            return child;
        }
        let r = wait(child, Duration::from_secs(5));
        assert!(
            r.stderr.contains("PACKET_FANOUT"),
            "fastpath exited at start: {:?}\nstdout:\n{}\nstderr:\n{}",
            r.status,
            r.stdout,
            r.stderr
        );
        eprintln!(
            "fastpath start clashed on PACKET_FANOUT, again:\n{}",
            r.stderr
        );
    }
    panic!("fastpath did not start in 4 attempts (PACKET_FANOUT group clashes)");
}

/// The app options that end a run on pcaps once its input is used up
/// (`--until-input-done`), not after a guessed time. The `--duration` only
/// bounds a run that never gets there: fastpath then fails (exit 4) and
/// says what it still waited for, well before [`INPUT_WAIT`] kills it.
pub const UNTIL_INPUT_DONE: [&str; 3] = ["--until-input-done", "--duration", "60"];

/// How long a test waits for a run that ends with its input.
pub const INPUT_WAIT: Duration = Duration::from_secs(90);

/// Run fastpath on pcaps until their input is used up: `in0` into port 0,
/// `in1` into port 1; returns the frames each port sent, the statistics
/// and fastpath's stderr.
pub fn run_pcaps_logged(
    test: &str,
    config: &str,
    in0: &[Vec<u8>],
    in1: &[Vec<u8>],
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, serde_json::Value, String) {
    run_pcaps_with(test, config, in0, in1, &[])
}

/// [`run_pcaps_logged`] with more app options (after `--`).
pub fn run_pcaps_with(
    test: &str,
    config: &str,
    in0: &[Vec<u8>],
    in1: &[Vec<u8>],
    extra: &[&str],
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), config).unwrap();
    write_pcap(&p("in0.pcap"), in0);
    write_pcap(&p("in1.pcap"), in1);
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &pcap_vdevs(dir.path())))
        .args(["--", "--config"])
        .arg(p("router.toml"))
        .args(UNTIL_INPUT_DONE)
        .arg("--stats-json")
        .arg(p("stats.json"))
        .args(extra);
    let r = run(cmd, INPUT_WAIT);
    assert_success(&r);
    let read = |n: &str| fastpath::pcap::read(std::fs::File::open(p(n)).unwrap()).unwrap();
    (
        read("out0.pcap"),
        read("out1.pcap"),
        read_json(&p("stats.json")),
        r.stderr,
    )
}

/// The net_pcap vdevs of [`run_pcaps_logged`]: `in0.pcap` into port 0 and
/// `in1.pcap` into port 1 of `dir`, `out0.pcap` / `out1.pcap` out.
pub fn pcap_vdevs(dir: &Path) -> Vec<String> {
    (0..2)
        .map(|i| {
            format!(
                "net_pcap{i},rx_pcap={},tx_pcap={}",
                dir.join(format!("in{i}.pcap")).display(),
                dir.join(format!("out{i}.pcap")).display()
            )
        })
        .collect()
}

/// Run fastpath in this process (EAL starts once per process: one call per
/// test binary) with the hook kinds of `registry`, on pcaps as
/// [`run_pcaps_logged`] does, until their input is used up; returns the
/// frames each port sent and the report.
pub fn run_pcaps_in_process(
    test: &str,
    config: &str,
    in0: &[Vec<u8>],
    in1: &[Vec<u8>],
    registry: &hooks::Registry,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, fastpath::report::Report) {
    use clap::Parser;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), config).unwrap();
    write_pcap(&p("in0.pcap"), in0);
    write_pcap(&p("in1.pcap"), in1);
    let mut app = vec![
        "--config".to_string(),
        p("router.toml").display().to_string(),
    ];
    app.extend(UNTIL_INPUT_DONE.map(String::from));
    let mut argv = vec!["fastpath".to_string()];
    argv.extend(eal_args(test, &pcap_vdevs(dir.path())));
    argv.push("--".into());
    argv.extend(app.iter().cloned());
    let args =
        fastpath::cli::AppArgs::try_parse_from(std::iter::once("fastpath".to_string()).chain(app))
            .expect("app args");
    let report = fastpath::runtime::run_with_registry(&argv, &args, registry).expect("run");
    let read = |n: &str| fastpath::pcap::read(std::fs::File::open(p(n)).unwrap()).unwrap();
    (read("out0.pcap"), read("out1.pcap"), report)
}

/// [`run_pcaps_logged`] without the log.
pub fn run_pcaps(
    test: &str,
    config: &str,
    in0: &[Vec<u8>],
    in1: &[Vec<u8>],
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, serde_json::Value) {
    let (out0, out1, stats, _) = run_pcaps_logged(test, config, in0, in1);
    (out0, out1, stats)
}

/// Two net_pcap ports: 10.0.1.1/24 (port 0) and 10.0.2.1/24 (port 1).
#[macro_export]
macro_rules! pcap_ports_config {
    () => {
        r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"
"#
    };
}

/// The two net_pcap ports and 198.51.100.0/24 routed out of port 1 to the
/// static neighbour 10.0.2.2 (02:bb:00:00:00:22).
#[macro_export]
macro_rules! pcap_router_config {
    () => {
        concat!(
            pcap_ports_config!(),
            r#"
[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[neighbour]]
address = "10.0.2.2"
mac = "02:bb:00:00:00:22"
"#
        )
    };
}
