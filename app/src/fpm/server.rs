//! The FPM listener: a thread (not an lcore) that accepts zebra's
//! `dplane_fpm_nl` connection, reads its frames, parses them and hands
//! them to the control lcore over a bounded channel (a slow control lcore
//! slows the reader, and TCP slows zebra: nothing is dropped). Frames go
//! over in batches (what the reader holds without waiting on the socket,
//! up to `BATCH_FRAMES`): handed over one by one, each frame woke the
//! waiting reader, a system call per route of a full table.
//!
//! One session at a time: a new connection **replaces** the live one (the
//! old one is shut down and counted as `connections_replaced`): the only
//! peer is zebra, and a zebra that restarted must not wait for the old
//! connection to time out. A frame that cannot be parsed is counted and
//! skipped; a header that cannot be trusted closes the connection (the
//! stream cannot be resynchronised; zebra reconnects and replays). The
//! listener itself never stops.

use super::frame::{read_frame, Read1};
use super::parse::parse_frame;
use super::rib::Event;
use super::stats::{Count, FpmStats};
use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;

/// Batches in flight between the reader and the control lcore.
const CHANNEL_BATCHES: usize = 64;

/// The most frames a batch holds.
const BATCH_FRAMES: usize = 256;

/// The listener's control-lcore side: its events and counters.
pub struct FpmServer {
    events: Receiver<Vec<Event>>,
    pub stats: Arc<FpmStats>,
    pub local: SocketAddr,
}

impl FpmServer {
    /// Listen on `addr` (a thread accepts and reads from then on).
    pub fn start(addr: SocketAddr) -> std::io::Result<FpmServer> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let stats = Arc::new(FpmStats::default());
        let (tx, rx) = sync_channel(CHANNEL_BATCHES);
        let st = stats.clone();
        std::thread::Builder::new()
            .name("fpm-listen".into())
            .spawn(move || accept_loop(listener, tx, st))?;
        Ok(FpmServer {
            events: rx,
            stats,
            local,
        })
    }

    /// The events waiting (without blocking), whole batches until at
    /// least `max`.
    pub fn drain(&self, max: usize) -> Vec<Event> {
        let mut out = Vec::new();
        while out.len() < max {
            match self.events.try_recv() {
                Ok(batch) if out.is_empty() => out = batch,
                Ok(batch) => out.extend(batch),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        out
    }
}

fn accept_loop(listener: TcpListener, tx: SyncSender<Vec<Event>>, stats: Arc<FpmStats>) {
    let mut session = 0u64;
    let mut live: Option<TcpStream> = None;
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                stats.note(Count::ReadErrors, || format!("accept: {e}"));
                continue;
            }
        };
        session += 1;
        stats.add(Count::Connections, 1);
        if let Some(old) = live.take() {
            if old.shutdown(Shutdown::Both).is_ok() {
                stats.add(Count::Replaced, 1);
            }
        }
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        eprintln!("fastpath: fpm: zebra connected from {peer} (session {session})");
        live = stream.try_clone().ok();
        if tx.send(vec![Event::Connected(session)]).is_err() {
            return;
        }
        let (tx, st) = (tx.clone(), stats.clone());
        let s = session;
        let spawned = std::thread::Builder::new()
            .name("fpm-read".into())
            .spawn(move || read_loop(stream, s, tx, st));
        if let Err(e) = spawned {
            stats.note(Count::ReadErrors, || format!("no reader thread: {e}"));
        }
    }
}

fn read_loop(stream: TcpStream, session: u64, tx: SyncSender<Vec<Event>>, stats: Arc<FpmStats>) {
    let mut r = BufReader::with_capacity(1 << 16, &stream);
    let mut batch = Vec::new();
    let why = loop {
        match read_frame(&mut r) {
            Ok(Read1::Body(body)) => {
                stats.add(Count::Frames, 1);
                match parse_frame(&body) {
                    Ok(parsed) => {
                        stats.count_parsed(&parsed);
                        batch.push(Event::Frame(session, parsed));
                    }
                    Err(rej) => stats.note(rej.kind, || rej.detail.clone()),
                }
                // Sent when full, or before the next read may wait on zebra.
                let full = batch.len() >= BATCH_FRAMES;
                if (full || r.buffer().is_empty())
                    && !batch.is_empty()
                    && tx.send(std::mem::take(&mut batch)).is_err()
                {
                    break "fastpath is stopping".to_string();
                }
            }
            Ok(Read1::Closed) => break "closed by zebra".to_string(),
            Ok(Read1::Lost(kind, why)) => {
                stats.note(kind, || why.clone());
                break format!("{why}: the stream cannot be followed, closed");
            }
            Err(e) => {
                stats.note(Count::ReadErrors, || e.to_string());
                break e.to_string();
            }
        }
    };
    let _ = stream.shutdown(Shutdown::Both);
    eprintln!("fastpath: fpm: session {session} ended: {why}");
    // Only the live session says "disconnected" (a replaced one's end is no news).
    batch.push(Event::Disconnected(session));
    let _ = tx.send(batch);
}
