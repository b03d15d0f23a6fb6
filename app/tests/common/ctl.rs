//! `fastpath ctl` against a running test instance, and a pcap stream read
//! from a FIFO while fastpath writes it (net_pcap's `tx_pcap=FIFO`): the
//! frames a port sends, in order, as they leave.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The EAL file prefix `eal_args(test, ..)` gives this process.
pub fn prefix(test: &str) -> String {
    format!("fpt-{test}-{}", std::process::id())
}

/// What one `fastpath ctl` run said.
#[derive(Debug)]
pub struct Said {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run `fastpath ctl --file-prefix PREFIX ARGS...`.
pub fn ctl(prefix: &str, args: &[&str]) -> Said {
    ctl_in(Path::new("."), prefix, args)
}

/// `ctl` run in the folder `dir` (what relative paths are relative to).
pub fn ctl_in(dir: &Path, prefix: &str, args: &[&str]) -> Said {
    let out: Output = super::fastpath()
        .current_dir(dir)
        .args(["ctl", "--file-prefix", prefix])
        .args(args)
        .output()
        .expect("run fastpath ctl");
    Said {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `ctl`, which must succeed.
pub fn ctl_ok(prefix: &str, args: &[&str]) -> Said {
    let s = ctl(prefix, args);
    assert_eq!(s.code, 0, "fastpath ctl {args:?} failed: {s:?}");
    s
}

/// `show routes --json`: prefix → (origin, gateways).
pub fn routes(prefix: &str) -> serde_json::Value {
    let s = ctl_ok(prefix, &["--json", "show", "routes"]);
    let v: serde_json::Value = serde_json::from_str(&s.stdout).expect("JSON answer");
    v["data"].clone()
}

/// The gateways of `route` in a `routes()` answer (None: no such route).
pub fn gateways(routes: &serde_json::Value, route: &str) -> Option<Vec<String>> {
    let r = routes.as_array()?.iter().find(|r| r["prefix"] == route)?;
    Some(
        r["next_hops"]
            .as_array()?
            .iter()
            .map(|h| h["gateway"].as_str().unwrap_or("-").to_string())
            .collect(),
    )
}

/// A FIFO at `dir/name`, for a net_pcap `tx_pcap`.
pub fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let ok = Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("run mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
    path
}

/// The frames written to a pcap FIFO, as they come; read on a thread (which
/// opens the FIFO, so start it before fastpath opens its end). Nothing is
/// kept: each frame is shown once to the caller, and a slow caller slows
/// fastpath's output down rather than filling memory.
pub struct Frames {
    rx: Receiver<Vec<u8>>,
    /// Frames read so far.
    pub seen: u64,
}

impl Frames {
    pub fn read(path: &Path) -> Frames {
        let (tx, rx) = sync_channel(4096);
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&path).expect("open the FIFO");
            let mut global = [0u8; 24];
            if f.read_exact(&mut global).is_err() {
                return;
            }
            let mut rec = [0u8; 16];
            while f.read_exact(&mut rec).is_ok() {
                let len = u32::from_le_bytes([rec[8], rec[9], rec[10], rec[11]]) as usize;
                let mut data = vec![0u8; len];
                if f.read_exact(&mut data).is_err() || tx.send(data).is_err() {
                    break;
                }
            }
            // Keep draining, so that fastpath never blocks on a full FIFO.
            let _ = std::io::copy(&mut f, &mut std::io::sink());
        });
        Frames { rx, seen: 0 }
    }

    /// Read until `done` holds for the frames so far (it sees each new frame),
    /// at most `limit`.
    pub fn until(&mut self, what: &str, limit: Duration, mut done: impl FnMut(&[u8]) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(f) => {
                    self.seen += 1;
                    if done(&f) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "waiting for {what}: not within {limit:?} ({} frames)",
                        self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "waiting for {what}: the stream ended ({} frames)",
                        self.seen
                    )
                }
            }
        }
    }

    /// Show what is left to `each`, until fastpath closes the stream.
    pub fn rest(&mut self, mut each: impl FnMut(&[u8])) {
        while let Ok(f) = self.rx.recv_timeout(Duration::from_secs(30)) {
            self.seen += 1;
            each(&f);
        }
    }
}
