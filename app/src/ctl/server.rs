//! The control socket's server: a thread that accepts connections, reads one
//! request per line and hands it to the main lcore's control loop through a
//! channel, then writes the answer back (or says that none came in time).
//!
//! It never touches worker state, and workers never see it. Spawned from the
//! main lcore's thread, it inherits that thread's CPU affinity (EAL pins it
//! to the main lcore's core), so it never runs on a worker's core.

use super::{Reply, Request};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the server waits for the control loop's answer, and for a
/// client's request line.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A request on its way to the control loop, with the way back.
struct Pending {
    request: Request,
    answer: SyncSender<Reply>,
}

/// The listener thread and the control loop's end of its channel.
pub struct CtlServer {
    path: PathBuf,
    requests: Receiver<Pending>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CtlServer {
    /// Listen on `path` (a stale socket left by a killed process is replaced).
    pub fn start(path: &Path) -> std::io::Result<CtlServer> {
        if path.exists() && UnixStream::connect(path).is_err() {
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path)?;
        let (tx, requests) = mpsc::sync_channel(4);
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fastpath-ctl".into())
            .spawn(move || listen(listener, tx, st))?;
        Ok(CtlServer {
            path: path.to_path_buf(),
            requests,
            stop,
            thread: Some(thread),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answer every request waiting, with `handle` (on the control loop).
    /// Returns how many.
    pub fn serve(&mut self, mut handle: impl FnMut(Request) -> Reply) -> usize {
        let mut n = 0;
        loop {
            match self.requests.try_recv() {
                Ok(p) => {
                    let _ = p.answer.send(handle(p.request));
                    n += 1;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return n,
            }
        }
    }
}

impl Drop for CtlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the thread from accept.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn listen(listener: UnixListener, tx: SyncSender<Pending>, stop: Arc<AtomicBool>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(conn) = conn {
            answer(conn, &tx);
        }
    }
}

/// One connection: requests line by line until the client closes.
fn answer(conn: UnixStream, tx: &SyncSender<Pending>) {
    let _ = conn.set_read_timeout(Some(ANSWER_TIMEOUT));
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    for line in BufReader::new(conn).lines() {
        let Ok(line) = line else { return };
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => ask(tx, request),
            Err(e) => Reply::refused(format!("not a request fastpath understands: {e}")),
        };
        let text = serde_json::to_string(&reply).unwrap_or_default();
        if writeln!(out, "{text}").is_err() {
            return;
        }
    }
}

/// Hand `request` to the control loop and wait for its answer.
fn ask(tx: &SyncSender<Pending>, request: Request) -> Reply {
    let (answer, reply) = mpsc::sync_channel(1);
    if tx.send(Pending { request, answer }).is_err() {
        return Reply::refused("fastpath is stopping");
    }
    reply.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|_| {
        Reply::refused(format!(
            "the control plane did not answer within {} s",
            ANSWER_TIMEOUT.as_secs()
        ))
    })
}
