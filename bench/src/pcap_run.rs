//! One run of a pcap benchmark's process (dpdk-testpmd or fastpath): its
//! output collected while it runs, stopped when it has measured long
//! enough, its exit checked.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT once stdout has printed this many lines holding
    /// [`TESTPMD_SAMPLE`] (testpmd runs until interrupted; counting its
    /// samples, not seconds, keeps a slow start, such as loading a large
    /// pcap into mbufs, out of the measured time).
    Samples(usize),
    /// The process stops by itself (fastpath's `--duration`) within this many
    /// seconds.
    Exit(u32),
}

/// The line testpmd prints once per `--stats-period` for port 1 (the TX port).
pub const TESTPMD_SAMPLE: &str = "NIC statistics for port 1 ";

/// A process that has not stopped a minute after it should have is
/// interrupted and its run reported as failed.
const GRACE: Duration = Duration::from_secs(60);

/// Run `c` until `stop`; its stdout and stderr.
pub fn run(mut c: Command, stop: Stop) -> Result<(String, String), String> {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let name = c.get_program().to_string_lossy().into_owned();
    let mut child = c.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
    let samples = Arc::new(AtomicUsize::new(0));
    let out = child.stdout.take().expect("piped");
    let seen = Arc::clone(&samples);
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.contains(TESTPMD_SAMPLE) {
                seen.fetch_add(1, Ordering::Relaxed);
            }
            s.push_str(&line);
            s.push('\n');
        }
        s
    });
    let mut err = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let (due, wanted) = match stop {
        Stop::Samples(n) => (Duration::from_secs(n as u64), Some(n)),
        Stop::Exit(secs) => (Duration::from_secs(u64::from(secs)), None),
    };
    let mut interrupted = false;
    let mut overstayed = false;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        let enough = wanted.is_some_and(|n| samples.load(Ordering::Relaxed) >= n);
        let late = started.elapsed() > due + GRACE;
        if !interrupted && (enough || late) {
            interrupted = true;
            overstayed = late && !enough;
            crate::compare::send_sigint(child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    crate::dut_process::remove_runtime_dir(crate::dut_process::file_prefix(&c).as_deref());
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if overstayed {
        return Err(format!(
            "{name} did not finish within {} s; interrupted:\n{}",
            (due + GRACE).as_secs(),
            stderr.trim_end()
        ));
    }
    if !status.success() {
        return Err(format!("{name} failed ({status}):\n{}", stderr.trim_end()));
    }
    Ok((stdout, stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_stop_a_process_that_runs_on() {
        let mut c = Command::new("sh");
        c.args([
            "-c",
            "trap 'echo bye; exit 0' INT; i=0; while :; do i=$((i+1)); \
             echo \"  ## NIC statistics for port 1  ## $i\"; sleep 0.05; done",
        ]);
        let t = Instant::now();
        let (out, _) = run(c, Stop::Samples(3)).unwrap();
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(out.matches(TESTPMD_SAMPLE).count() >= 3, "{out}");
        assert!(out.ends_with("bye\n"), "{out}");
    }

    #[test]
    fn a_failing_exit_is_an_error_with_its_stderr() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo broken >&2; exit 3"]);
        let e = run(c, Stop::Exit(5)).unwrap_err();
        assert!(e.contains("broken"), "{e}");
        let mut ok = Command::new("sh");
        ok.args(["-c", "echo fine"]);
        assert_eq!(run(ok, Stop::Exit(5)).unwrap().0, "fine\n");
    }
}
