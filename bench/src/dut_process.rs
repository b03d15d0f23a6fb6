//! A device under test in its own process (testpmd, fastpath), its output in
//! a file, started and stopped by the harness; and the EAL arguments of the
//! memif pair that joins it to the generator.

use crate::compare::send_sigint;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// MAC of the device under test's memif port 0 (the generator's frames go to it).
pub const DUT_MAC0: &str = "02:fa:57:00:00:00";
/// MAC of the device under test's memif port 1.
pub const DUT_MAC1: &str = "02:fa:57:00:00:01";

/// The generator's side of the memif pair: frames to the device's first
/// port, out of `net_memif0`, back in on `net_memif1`.
pub const GENERATOR_PORT_ARGS: [&str; 6] = [
    "--dst-mac",
    DUT_MAC0,
    "--tx-port",
    "net_memif0",
    "--rx-port",
    "net_memif1",
];

/// EAL arguments with two memif ports on `sock` (ids 0 and 1, rings of 4,096
/// slots like a NIC's descriptor ring, not memif's default 1,024) in `role`
/// (`server` for the device under test, `client` for the generator), without
/// hugepages; `macs`: give the ports [`DUT_MAC0`] and [`DUT_MAC1`].
pub fn memif_eal(prefix: &str, lcores: &str, sock: &Path, role: &str, macs: bool) -> Vec<String> {
    let mut v: Vec<String> = [
        "-l",
        lcores,
        "--no-pci",
        "--no-huge",
        "-m",
        "1024",
        "--log-level",
        "lib.eal:error",
        "--file-prefix",
        prefix,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (id, mac) in [(0, DUT_MAC0), (1, DUT_MAC1)] {
        let mut d = format!(
            "net_memif{id},role={role},socket={},socket-abstract=no,id={id},rsize=12",
            sock.display()
        );
        if macs {
            d += &format!(",mac={mac}");
        }
        v.push("--vdev".into());
        v.push(d);
    }
    v
}

/// The `--file-prefix` of an EAL command line, if it has one.
pub fn file_prefix(c: &Command) -> Option<String> {
    let args: Vec<String> = c
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    fastpath::doctor::eal_args::parse(&args).file_prefix
}

/// Remove the EAL runtime folder (`/var/run/dpdk/<prefix>` for root) of a
/// DPDK process of ours that has exited. fastpath and fastpath-bench remove
/// their own at a clean exit; dpdk-testpmd, l3fwd and a killed process leave
/// it behind. No hugepage files are left to remove: the benchmarks run with
/// `--no-huge`, or with `--huge-unlink` (unlinked right after mapping).
pub fn remove_runtime_dir(prefix: Option<&str>) {
    // One plain name: never the base folder itself, nothing outside it.
    let Some(p) = prefix.filter(|p| {
        let mut c = Path::new(p).components();
        matches!(c.next(), Some(std::path::Component::Normal(_))) && c.next().is_none()
    }) else {
        return;
    };
    let dir = fastpath::dpdk::telemetry_client::default_runtime_base().join(p);
    let _ = std::fs::remove_dir_all(dir);
}

/// A device under test running in the background, its output in files.
pub struct DutProcess {
    child: Child,
    log: PathBuf,
    /// Its EAL file prefix: its runtime folder goes when it has exited.
    prefix: Option<String>,
}

impl DutProcess {
    /// Start `c` and wait until its log shows `ready` (its ports are started
    /// and it forwards) and the memif socket exists.
    pub fn start(
        mut c: Command,
        log: PathBuf,
        sock: &Path,
        ready: &str,
    ) -> Result<DutProcess, String> {
        let _ = std::fs::remove_file(sock);
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        c.stdin(Stdio::null()).stdout(out).stderr(err);
        let name = c.get_program().to_string_lossy().into_owned();
        let child = c.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
        let mut r = DutProcess {
            child,
            log,
            prefix: file_prefix(&c),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let is_ready = |r: &DutProcess| {
            sock.exists() && std::fs::read_to_string(&r.log).is_ok_and(|l| l.contains(ready))
        };
        while !is_ready(&r) {
            if let Ok(Some(st)) = r.child.try_wait() {
                return Err(format!(
                    "{name} exited ({st}) before listening:\n{}",
                    r.tail()
                ));
            }
            if Instant::now() > deadline {
                let _ = r.stop();
                return Err(format!(
                    "{name} was not ready in 20 s (no `{ready}` in its output, or no socket {}):\n{}",
                    sock.display(),
                    r.tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(r)
    }

    /// Everything it printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its last lines, for error messages.
    pub fn tail(&self) -> String {
        let s = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// SIGINT, then wait (SIGKILL after 10 s); Err with the log when it failed.
    pub fn stop(&mut self) -> Result<(), String> {
        send_sigint(self.child.id());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) if st.success() => return Ok(()),
                Ok(Some(st)) => return Err(format!("exited with {st}:\n{}", self.tail())),
                Ok(None) if Instant::now() > deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!("did not stop within 10 s:\n{}", self.tail()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl Drop for DutProcess {
    /// A device under test never outlives its harness (a failed run, a
    /// panicking test): kill it if it still runs. Then its runtime folder goes.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        remove_runtime_dir(self.prefix.as_deref());
    }
}

/// What a generator run printed and how it ended.
#[derive(Debug)]
pub struct GeneratorOutput {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Run a `fastpath-bench run|search ... --hold` command: once it says its
/// results are written ([`crate::harness::HOLDING`]), call `stop_peer` (stop
/// the device under test: it must stop polling before the generator closes
/// its memif side), then close the generator's stdin so it closes its ports
/// and exits. If the generator exits without holding (an error), `stop_peer`
/// still runs.
pub fn run_held_generator(
    mut c: Command,
    stop_peer: impl FnOnce(),
) -> Result<GeneratorOutput, String> {
    use std::io::{BufRead, BufReader, Read};
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot start the generator: {e}"))?;
    let stdin = child.stdin.take();
    let mut out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if line.contains(crate::harness::HOLDING) {
                let _ = held_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Held, or exited (the sender is dropped with the stderr thread's end).
    let _ = held_rx.recv();
    stop_peer();
    drop(stdin);
    let status = child.wait().map_err(|e| e.to_string());
    remove_runtime_dir(file_prefix(&c).as_deref());
    let status = status?;
    Ok(GeneratorOutput {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_prefix_is_read_in_either_form() {
        let mut c = Command::new("x");
        c.args(["-l", "0", "--file-prefix", "dut-a", "--vdev", "v"]);
        assert_eq!(file_prefix(&c).as_deref(), Some("dut-a"));
        let mut c = Command::new("x");
        c.args(["--file-prefix=dut-b", "--"]);
        assert_eq!(file_prefix(&c).as_deref(), Some("dut-b"));
        assert_eq!(file_prefix(&Command::new("x")), None);
    }

    #[test]
    fn an_exited_process_s_runtime_folder_goes_and_nothing_outside_it() {
        let base = fastpath::dpdk::telemetry_client::default_runtime_base();
        let prefix = format!("fpb-unit-{}", std::process::id());
        let dir = base.join(&prefix);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config"), b"").unwrap();
        remove_runtime_dir(Some(&prefix));
        assert!(!dir.exists(), "{} still there", dir.display());
        // Not a prefix: nothing is removed (the base itself least of all).
        for p in ["", ".", "..", "a/b", "/"] {
            remove_runtime_dir(Some(p));
        }
        remove_runtime_dir(None);
        assert!(base.exists());
    }
}
