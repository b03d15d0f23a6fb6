//! A running fastpath watched line by line: tests wait for what it prints
//! (readiness, each reload, the `--stats-period` rates) with deadlines,
//! instead of sleeping and hoping.

use super::Run;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Which pipe a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A child whose stdout and stderr lines arrive, in order per stream, on a
/// channel; everything read so far is kept for failure messages.
pub struct Watched {
    child: Child,
    lines: Receiver<(Stream, String)>,
    pub stdout: String,
    pub stderr: String,
}

impl Watched {
    /// Start `cmd` with both outputs piped to the watcher.
    pub fn spawn(mut cmd: Command) -> Watched {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fastpath");
        let (tx, lines) = channel();
        let out = child.stdout.take().expect("stdout piped");
        let err = child.stderr.take().expect("stderr piped");
        for (stream, pipe) in [
            (Stream::Stdout, Box::new(out) as Box<dyn Read + Send>),
            (Stream::Stderr, Box::new(err)),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if tx.send((stream, line)).is_err() {
                        break;
                    }
                }
            });
        }
        Watched {
            child,
            lines,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    /// The process id, for signals.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Send `sig` (e.g. "-HUP") with kill(1).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill {sig} {} failed", self.id());
    }

    /// The next line, at most until `deadline`; `None` when both pipes closed
    /// (the process is gone) or the deadline passed.
    fn next_line(&mut self, deadline: Instant) -> Option<(Stream, String)> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok((stream, line)) => {
                let all = match stream {
                    Stream::Stdout => &mut self.stdout,
                    Stream::Stderr => &mut self.stderr,
                };
                all.push_str(&line);
                all.push('\n');
                Some((stream, line))
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Read lines until `pick` returns something for one of them, at most
    /// `limit`; fail the test, with all output so far, naming `what` past it
    /// or when the process ends first.
    pub fn wait_for<T>(
        &mut self,
        what: &str,
        limit: Duration,
        mut pick: impl FnMut(Stream, &str) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + limit;
        loop {
            match self.next_line(deadline) {
                Some((stream, line)) => {
                    if let Some(t) = pick(stream, &line) {
                        return t;
                    }
                }
                None => {
                    let why = if Instant::now() >= deadline {
                        format!("not within {limit:?}")
                    } else {
                        "the process closed its output first".to_string()
                    };
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "waiting for {what}: {why}\nstdout:\n{}\nstderr:\n{}",
                        self.stdout, self.stderr
                    );
                }
            }
        }
    }

    /// Wait for a stderr line containing `needle`; returns the line.
    pub fn wait_stderr(&mut self, needle: &str, limit: Duration) -> String {
        self.wait_for(&format!("{needle:?} on stderr"), limit, |s, l| {
            (s == Stream::Stderr && l.contains(needle)).then(|| l.to_string())
        })
    }

    /// The `ADDR:PORT` of `--metrics`, once fastpath says where it listens.
    pub fn metrics_addr(&mut self, limit: Duration) -> String {
        let line = self.wait_stderr("fastpath: metrics at http://", limit);
        line.split("http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string()
    }

    /// Wait for the next `--stats-period` line on stdout; returns its rates.
    pub fn next_rates(&mut self, limit: Duration) -> Vec<PortRates> {
        self.wait_for("a --stats-period line on stdout", limit, |s, l| {
            (s == Stream::Stdout).then(|| rates(l)).flatten()
        })
    }

    /// Read `--stats-period` lines until port `port` has received about
    /// `packets` (its rx-pps times `period`, summed), at most `limit`;
    /// returns the estimate. The sum is an estimate of what the port received
    /// meanwhile, not a count: assert counts from the final report.
    pub fn wait_received(&mut self, port: u16, packets: f64, period: f64, limit: Duration) -> f64 {
        let mut sum = 0.0;
        let what = format!("port {port} to receive about {packets} packets");
        self.wait_for(&what, limit, |s, l| {
            let r = (s == Stream::Stdout).then(|| rates(l)).flatten()?;
            sum += r.iter().find(|r| r.port == port)?.rx_pps * period;
            (sum >= packets).then_some(sum)
        })
    }

    /// Wait at most `limit` for the process to exit, reading the rest of its
    /// output; kill it and fail the test past that.
    pub fn finish(mut self, limit: Duration) -> Run {
        let deadline = Instant::now() + limit;
        // Both pipes close when the process exits.
        while self.next_line(deadline).is_some() {}
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("wait") {
                break st;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "fastpath did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                    self.stdout, self.stderr
                );
            }
            // Its pipes are closed: the exit is a moment away.
            std::thread::sleep(Duration::from_millis(5));
        };
        Run {
            status,
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        }
    }
}

/// A test that fails before it stops its fastpath (an assertion between
/// start and `finish`) must not leave it polling a core: it is killed.
impl Drop for Watched {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One port's rates on a `--stats-period` line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortRates {
    pub port: u16,
    pub rx_pps: f64,
    pub tx_pps: f64,
}

/// The rates of a `--stats-period` line ("[    0.1s] port 0 rx-pps 1 tx-pps
/// 2 missed 0 rx-gbps .. | port 1 .. | lcore 1 busy-pct ..": per port, then
/// per worker), `None` for any other line. Fields after the first three of
/// a port, and the worker parts, are not needed here and skipped.
pub fn rates(line: &str) -> Option<Vec<PortRates>> {
    let rest = line.strip_prefix('[')?.split_once("s]")?.1;
    let ports: Vec<PortRates> = rest
        .split('|')
        .filter(|part| part.trim_start().starts_with("port "))
        .map(|part| {
            let w: Vec<&str> = part.split_whitespace().collect();
            match w[..] {
                ["port", port, "rx-pps", rx, "tx-pps", tx, "missed", _, ..] => Some(PortRates {
                    port: port.parse().ok()?,
                    rx_pps: rx.parse().ok()?,
                    tx_pps: tx.parse().ok()?,
                }),
                _ => None,
            }
        })
        .collect::<Option<_>>()?;
    (!ports.is_empty()).then_some(ports)
}
