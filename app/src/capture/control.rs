//! Starting and stopping a drop capture while fastpath runs: what
//! `--capture-drops FILE` does at start, and what an operator's command
//! (`fastpath ctl capture start FILE` / `stop`) calls.

use super::tap::Hub;
use super::writer::{Progress, Writer};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::SystemTime;

/// What one capture did, for the final statistics and `stop`'s answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub file: PathBuf,
    /// Dropped packets written to the file.
    pub written: u64,
    /// Size of the file.
    pub bytes: u64,
    /// Dropped packets not captured because the queue to the writer was full.
    pub capture_lost: u64,
    /// Dropped packets not captured because their lcore was over its rate.
    pub over_rate: u64,
    /// Dropped packets taken after the size bound: not written.
    pub cut: u64,
    pub max_bytes: u64,
    /// The size bound was reached and the capture stopped there.
    pub stopped_at_size_bound: bool,
}

impl Summary {
    /// One line for the final statistics.
    pub fn to_line(&self) -> String {
        format!(
            "drop capture {}: {} packets written ({} bytes), capture_lost {} (queue full), \
             {} over rate{}",
            self.file.display(),
            self.written,
            self.bytes,
            self.capture_lost,
            self.over_rate,
            if self.stopped_at_size_bound {
                format!(
                    "; stopped at its size bound of {} bytes ({} not written)",
                    self.max_bytes, self.cut
                )
            } else {
                String::new()
            }
        )
    }
}

/// A capture that runs: its writer thread and what it counts.
struct Running {
    file: PathBuf,
    thread: JoinHandle<()>,
    stop: Sender<()>,
    progress: Arc<Progress>,
    /// The taps' losses when it started.
    losses_before: (u64, u64),
}

struct State {
    running: Option<Running>,
    done: Vec<Summary>,
}

/// Starts and stops drop captures. Cheap to clone; every clone controls the
/// same capture. At most one capture runs at a time.
#[derive(Clone)]
pub struct Control {
    hub: Arc<Hub>,
    /// Port names by port id: the file's interfaces.
    ports: Arc<[String]>,
    max_bytes: u64,
    /// The CPU the writer thread runs on (the main lcore's).
    cpu: Option<usize>,
    tsc_hz: u64,
    state: Arc<Mutex<State>>,
}

impl Control {
    /// Control of the captures of `hub`'s taps: files with an interface per
    /// name of `ports` (by port id), at most `max_bytes` each, written by a
    /// thread on `cpu`.
    pub fn new(
        hub: Arc<Hub>,
        ports: Vec<String>,
        max_bytes: u64,
        cpu: Option<usize>,
        tsc_hz: u64,
    ) -> Self {
        Control {
            hub,
            ports: ports.into(),
            max_bytes,
            cpu,
            tsc_hz,
            state: Arc::new(Mutex::new(State {
                running: None,
                done: Vec::new(),
            })),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Start capturing dropped packets into `path` (created, or truncated).
    /// Fails, changing nothing, if a capture already runs or the file
    /// cannot be created.
    pub fn start(&self, path: &Path) -> Result<(), String> {
        let mut state = self.state();
        if let Some(r) = &state.running {
            return Err(format!(
                "a drop capture into {} is already running; stop it first",
                r.file.display()
            ));
        }
        let progress = Arc::new(Progress::default());
        let clock = (crate::dpdk::tsc(), SystemTime::now(), self.tsc_hz);
        let writer = Writer::create(path, &self.ports, self.max_bytes, clock, &progress)?;
        // Whatever a previous capture left in the queue is not this one's.
        while self.hub.queue.pop().is_some() {}
        let (stop, stopped) = channel();
        let (hub, p, cpu) = (self.hub.clone(), progress.clone(), self.cpu);
        let thread = std::thread::Builder::new()
            .name("fp-capture".into())
            .spawn(move || {
                if let Some(id) = cpu {
                    let _ = core_affinity::set_for_current(core_affinity::CoreId { id });
                }
                writer.run(hub, p, stopped)
            })
            .map_err(|e| format!("starting the capture writer: {e}"))?;
        state.running = Some(Running {
            file: path.to_path_buf(),
            thread,
            stop,
            progress,
            losses_before: self.hub.losses(),
        });
        self.hub.on.store(true, Relaxed);
        eprintln!(
            "fastpath: capturing dropped packets into {} (at most {} bytes)",
            path.display(),
            self.max_bytes
        );
        Ok(())
    }

    /// Stop the running capture: what is queued is written, the file
    /// closed. Fails if none runs.
    pub fn stop(&self) -> Result<Summary, String> {
        let mut state = self.state();
        let Some(r) = state.running.take() else {
            return Err("no drop capture is running".into());
        };
        self.hub.on.store(false, Relaxed);
        let losses = self.hub.losses();
        let _ = r.stop.send(());
        let _ = r.thread.join();
        let p = &r.progress;
        let s = Summary {
            file: r.file,
            written: p.written.load(Relaxed),
            bytes: p.bytes.load(Relaxed),
            capture_lost: losses.0 - r.losses_before.0,
            over_rate: losses.1 - r.losses_before.1,
            cut: p.cut.load(Relaxed),
            max_bytes: self.max_bytes,
            stopped_at_size_bound: p.full.load(Relaxed),
        };
        eprintln!("fastpath: {}", s.to_line());
        state.done.push(s.clone());
        Ok(s)
    }

    /// The running capture's file and packets written so far.
    pub fn status(&self) -> Option<(PathBuf, u64)> {
        let state = self.state();
        let r = state.running.as_ref()?;
        Some((r.file.clone(), r.progress.written.load(Relaxed)))
    }

    /// Stop what runs and return every capture's summary, oldest first.
    pub fn finish(&self) -> Vec<Summary> {
        let _ = self.stop();
        std::mem::take(&mut self.state().done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::{DropSite, Stage};
    use hooks::DropReason;

    fn control(hub: &Arc<Hub>) -> Control {
        let ports = vec!["net_pcap0".to_string(), "net_pcap1".to_string()];
        Control::new(hub.clone(), ports, 1 << 20, None, 1_000_000_000)
    }

    #[test]
    fn start_and_stop_while_running_capture_only_in_between() {
        let dir = tempfile::tempdir().unwrap();
        let hub = Hub::new(64, 1_000_000, 1_000_000_000);
        let tap = hub.tap(1);
        let c = control(&hub);
        let site = DropSite::new(DropReason::NoRoute, Stage::Ip, 0);
        tap.capture(&[1; 60], site);
        assert!(c.stop().is_err(), "nothing runs yet");
        let first = dir.path().join("a.pcapng");
        c.start(&first).unwrap();
        let again = c.start(&dir.path().join("b.pcapng")).unwrap_err();
        assert!(again.contains("already running"), "{again}");
        for _ in 0..3 {
            tap.capture(&[2; 60], site);
        }
        assert_eq!(c.status().map(|s| s.0), Some(first.clone()));
        let s = c.stop().unwrap();
        assert_eq!((s.written, s.capture_lost, s.cut), (3, 0, 0));
        assert_eq!(s.bytes, std::fs::metadata(&first).unwrap().len());
        tap.capture(&[3; 60], site);
        // A second capture, into another file, sees only its own drops.
        let second = dir.path().join("b.pcapng");
        c.start(&second).unwrap();
        tap.capture(&[4; 60], site);
        let all = c.finish();
        assert_eq!(all.len(), 2);
        assert_eq!((all[1].file.clone(), all[1].written), (second, 1));
        assert!(c.status().is_none());
    }

    #[test]
    fn a_file_that_cannot_be_created_changes_nothing() {
        let hub = Hub::new(4, 1000, 1_000_000_000);
        let c = control(&hub);
        let e = c.start(Path::new("/nonexistent/dir/x.pcapng")).unwrap_err();
        assert!(e.contains("/nonexistent/dir/x.pcapng"), "{e}");
        assert!(c.status().is_none());
        assert!(!hub.on.load(Relaxed));
    }
}
