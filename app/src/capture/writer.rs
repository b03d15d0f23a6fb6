//! The consumer side of drop capture: a thread off the worker cores that
//! empties the queue into a pcapng file (one interface per port, each packet
//! with its drop in the comment option), up to a size bound.

use super::record::{DropRecord, NO_PORT, SNAP_LEN};
use super::tap::Hub;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Records written between two looks at the stop channel.
const BATCH: usize = 1024;

/// What the writer counted, readable while it runs.
#[derive(Default)]
pub(super) struct Progress {
    /// Packets written to the file.
    pub written: AtomicU64,
    /// Bytes of the file so far.
    pub bytes: AtomicU64,
    /// Records taken from the queue after the size bound: not written.
    pub cut: AtomicU64,
    /// The size bound was reached and the capture stopped.
    pub full: AtomicBool,
}

/// An open capture file.
pub(super) struct Writer {
    out: PcapNgWriter<BufWriter<File>>,
    path: PathBuf,
    max_bytes: u64,
    /// The interface of packets the control plane made (in port none).
    control_if: u32,
    /// TSC and wall clock at the start, and TSC ticks per second.
    clock: (u64, SystemTime, u64),
}

/// The bytes an Enhanced Packet Block of `data` with a `comment` takes.
pub(super) fn block_len(data: usize, comment: usize) -> u64 {
    let pad4 = |n: usize| n.div_ceil(4) * 4;
    // Header (28 bytes) + trailing length (4) + data + comment option
    // (4 + text) + end of options (4).
    (32 + pad4(data) + 4 + pad4(comment) + 4) as u64
}

impl Writer {
    /// Create `path` and write the section and one interface per name of
    /// `ports` (by port id), then one for the control plane.
    pub fn create(
        path: &Path,
        ports: &[String],
        max_bytes: u64,
        clock: (u64, SystemTime, u64),
        progress: &Progress,
    ) -> Result<Writer, String> {
        let what = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let file = File::create(path).map_err(|e| what(&e))?;
        let mut out = PcapNgWriter::new(BufWriter::new(file)).map_err(|e| what(&e))?;
        let mut bytes = 28; // the section header PcapNgWriter::new wrote
        let names = ports.iter().map(String::as_str).chain(["fastpath"]);
        for name in names {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: SNAP_LEN as u32,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Owned(name.to_string())),
                    // Timestamps in nanoseconds, as pcap-file writes them.
                    InterfaceDescriptionOption::IfTsResol(9),
                ],
            };
            bytes += out.write_pcapng_block(idb).map_err(|e| what(&e))? as u64;
        }
        progress.bytes.store(bytes, Relaxed);
        Ok(Writer {
            out,
            path: path.to_path_buf(),
            max_bytes,
            control_if: ports.len() as u32,
            clock,
        })
    }

    /// Write one record, unless it would pass the size bound (false then).
    fn write(&mut self, r: &DropRecord, progress: &Progress) -> Result<bool, String> {
        let comment = r.comment();
        let len = block_len(r.frame().len(), comment.len());
        if progress.bytes.load(Relaxed) + len > self.max_bytes {
            return Ok(false);
        }
        let interface_id = match r.in_port {
            NO_PORT => self.control_if,
            p => u32::from(p).min(self.control_if),
        };
        let (tsc0, wall0, hz) = self.clock;
        let since = r.tsc.saturating_sub(tsc0) as u128 * 1_000_000_000 / u128::from(hz.max(1));
        let epb = EnhancedPacketBlock {
            interface_id,
            timestamp: wall0
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                + Duration::from_nanos(since as u64),
            original_len: r.orig_len,
            data: Cow::Borrowed(r.frame()),
            options: vec![EnhancedPacketOption::Comment(Cow::Owned(comment))],
        };
        let n = self
            .out
            .write_pcapng_block(epb)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        progress.bytes.fetch_add(n as u64, Relaxed);
        progress.written.fetch_add(1, Relaxed);
        Ok(true)
    }

    /// Run until `stop` says so (or is gone): empty the queue into the
    /// file, then empty it once more and flush. At the size bound, stop the
    /// taps and say so; later records are counted as cut.
    pub fn run(mut self, hub: Arc<Hub>, progress: Arc<Progress>, stop: Receiver<()>) {
        loop {
            let mut n = 0;
            while n < BATCH {
                let Some(r) = hub.queue.pop() else { break };
                n += 1;
                self.take(&r, &hub, &progress);
            }
            if n == BATCH {
                match stop.try_recv() {
                    Err(std::sync::mpsc::TryRecvError::Empty) => continue,
                    _ => break,
                }
            }
            match stop.recv_timeout(Duration::from_millis(1)) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => break,
            }
        }
        while let Some(r) = hub.queue.pop() {
            self.take(&r, &hub, &progress);
        }
        if let Err(e) = self.out.get_mut().flush() {
            eprintln!("fastpath: drop capture {}: {e}", self.path.display());
        }
    }

    fn take(&mut self, r: &DropRecord, hub: &Hub, progress: &Progress) {
        if progress.full.load(Relaxed) {
            progress.cut.fetch_add(1, Relaxed);
            return;
        }
        match self.write(r, progress) {
            Ok(true) => {}
            Ok(false) => {
                hub.on.store(false, Relaxed);
                progress.full.store(true, Relaxed);
                progress.cut.fetch_add(1, Relaxed);
                eprintln!(
                    "fastpath: drop capture {} reached its size bound ({} bytes) after {} \
                     packets; capture stopped",
                    self.path.display(),
                    self.max_bytes,
                    progress.written.load(Relaxed)
                );
            }
            Err(e) => {
                hub.on.store(false, Relaxed);
                progress.full.store(true, Relaxed);
                progress.cut.fetch_add(1, Relaxed);
                eprintln!("fastpath: drop capture stopped: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::{DropSite, Stage};
    use hooks::DropReason;

    #[test]
    fn the_file_holds_what_the_block_length_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.pcapng");
        let progress = Progress::default();
        let clock = (0, SystemTime::now(), 1_000_000_000);
        let names = ["p0".to_string(), "p1".to_string()];
        let mut w = Writer::create(&path, &names, 1 << 20, clock, &progress).unwrap();
        let mut want = progress.bytes.load(Relaxed);
        for len in [60, 61, 62, 63, 300] {
            let site = DropSite::new(DropReason::Runt, Stage::L2, 1).by_hook("abc");
            let r = DropRecord::new(&vec![1; len], &site, 0, 5);
            want += block_len(r.frame().len(), r.comment().len());
            assert!(w.write(&r, &progress).unwrap());
        }
        w.out.get_mut().flush().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), want);
        assert_eq!(progress.bytes.load(Relaxed), want);
    }
}
