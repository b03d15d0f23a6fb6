//! The replayed traffic of the pcap benchmarks (`compare`, `hooks`): its
//! frames, the mbuf pool and EAL memory that net_pcap's `infinite_rx` needs
//! to hold them (it keeps every frame of the file in an mbuf for the whole
//! run), and the pcap files, written once into a cache folder outside the
//! repository and reused while the traffic and its frames stay the same.

use crate::frame::FlowSpec;
use crate::traffic::{FrameSizes, IMIX_PATTERN};
use std::path::{Path, PathBuf};

/// What one benchmark row replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcapTraffic {
    /// Addresses, flows; its `frame_size` is ignored for IMIX.
    pub spec: FlowSpec,
    pub sizes: FrameSizes,
    /// Frames in the pcap (over every queue's file).
    pub frames: usize,
}

/// Mbufs of the pool when the pcap is small (as `compare` always had).
pub const MBUFS_SMALL: u32 = 16_383;

impl PcapTraffic {
    /// 64-byte frames (or any fixed size) of `spec`.
    pub fn fixed(spec: FlowSpec, frames: usize) -> PcapTraffic {
        PcapTraffic {
            spec,
            sizes: FrameSizes::Fixed(spec.frame_size),
            frames,
        }
    }

    /// Frame `seq`: flow `seq % flows`, its size from [`FrameSizes::nth`]
    /// (IMIX: 7 x 64, 4 x 594, 1 x 1518 bytes in every 12 frames).
    pub fn frame(&self, seq: u64) -> Vec<u8> {
        FlowSpec {
            frame_size: self.sizes.nth(seq),
            ..self.spec
        }
        .frame(seq)
    }

    /// The frames of RX queue `q` of `queues`: every `queues`-th frame from
    /// `q` on, so each queue replays its own flows (all of them with one).
    pub fn queue_frames(&self, q: usize, queues: usize) -> Vec<Vec<u8>> {
        (q..self.frames)
            .step_by(queues.max(1))
            .map(|s| self.frame(s as u64))
            .collect()
    }

    pub fn validate(&self) -> Result<(), String> {
        for s in self.sizes.distinct() {
            FlowSpec {
                frame_size: s,
                ..self.spec
            }
            .validate()?;
        }
        if self.frames == 0 {
            return Err("a pcap needs at least one frame".into());
        }
        Ok(())
    }

    /// Mbufs of the pool (fastpath's `--mbufs`, testpmd's
    /// `--total-num-mbufs`): net_pcap holds every frame in an mbuf, plus
    /// 65,536 for the rings, bursts and caches; 16,383 for small pcaps.
    pub fn mbufs(&self) -> u32 {
        let frames = u32::try_from(self.frames).unwrap_or(u32::MAX / 2);
        if frames <= 4096 {
            MBUFS_SMALL
        } else if frames <= 131_072 {
            (frames + 65_536).next_power_of_two() - 1
        } else {
            frames + 65_535
        }
    }

    /// EAL memory (`-m`, MiB): 1,024 for the small pool; for a large one
    /// 4 KiB per mbuf and 768 MiB for the rest, at least 2,048. An mbuf
    /// (2,176 bytes of data room, its header, the private area, the pool's
    /// header) takes about 2.4 KiB, but with `--no-huge` the pool places no
    /// object across a 4 KiB page, so each takes a page of its own.
    pub fn memory_mb(&self) -> u32 {
        memory_mb(self.mbufs())
    }

    /// `64-byte frames`, `IMIX frames (7 x 64, 4 x 594, 1 x 1518 bytes, mean 361.8)`.
    pub fn describe_sizes(&self) -> String {
        match self.sizes {
            FrameSizes::Fixed(s) => format!("{s}-byte frames"),
            FrameSizes::Imix => format!(
                "IMIX frames (7 x 64, 4 x 594, 1 x 1518 bytes, mean {:.1})",
                self.sizes.mean()
            ),
        }
    }

    /// The file name of queue `q` of `queues`: what the traffic is and a
    /// digest of the parameters and of some frames' bytes, so a changed frame
    /// builder writes a new file instead of replaying a stale one.
    fn file_name(&self, q: usize, queues: usize) -> String {
        let mut h = Fnv::default();
        h.write(format!("{:?} {} {q}/{queues}", self.spec, self.frames).as_bytes());
        h.write(self.sizes.to_string().as_bytes());
        for s in [0, 1, IMIX_PATTERN.len() as u64 - 1, self.frames as u64 - 1] {
            h.write(&self.frame(s));
        }
        let part = if queues > 1 {
            format!("-q{q}of{queues}")
        } else {
            String::new()
        };
        format!(
            "udp-{}-{}flows-{}{part}-{:016x}.pcap",
            match self.sizes {
                FrameSizes::Fixed(s) => format!("{s}B"),
                FrameSizes::Imix => "imix".into(),
            },
            self.spec.flows,
            self.frames,
            h.0
        )
    }

    /// One pcap per RX queue in `dir`, written unless already there.
    pub fn pcaps(&self, dir: &Path, queues: usize) -> Result<Vec<PathBuf>, String> {
        self.validate()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        (0..queues.max(1))
            .map(|q| {
                let path = dir.join(self.file_name(q, queues.max(1)));
                if !path.exists() {
                    write_atomically(&path, &self.queue_frames(q, queues))?;
                }
                Ok(path)
            })
            .collect()
    }
}

/// See [`PcapTraffic::memory_mb`].
pub fn memory_mb(mbufs: u32) -> u32 {
    if mbufs <= MBUFS_SMALL {
        return 1024;
    }
    let mb = (u64::from(mbufs) * 4).div_ceil(1024) + 768;
    (mb.div_ceil(256) * 256).max(2048) as u32
}

/// Write the frames beside `path`, then rename: a run that stops half way
/// leaves no truncated file under the name, and two runs can write at once.
fn write_atomically(path: &Path, frames: &[Vec<u8>]) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let f = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fastpath::pcap::write(std::io::BufWriter::new(f), frames)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The cache folder: `$FASTPATH_BENCH_CACHE`, else
/// `$XDG_CACHE_HOME/fastpath-bench`, else `~/.cache/fastpath-bench`, else
/// one under the temporary folder.
pub fn default_dir() -> PathBuf {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = env("FASTPATH_BENCH_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = env("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("fastpath-bench");
    }
    if let Some(h) = env("HOME") {
        return PathBuf::from(h).join(".cache/fastpath-bench");
    }
    std::env::temp_dir().join("fastpath-bench-cache")
}

/// FNV-1a, 64 bits: a stable digest (std's hasher may change between releases).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traffic(flows: u32, frames: usize) -> PcapTraffic {
        PcapTraffic::fixed(
            FlowSpec {
                flows,
                ..Default::default()
            },
            frames,
        )
    }

    #[test]
    fn pools_hold_every_frame_and_fit_their_memory() {
        assert_eq!(traffic(64, 1024).mbufs(), 16_383);
        assert_eq!(traffic(64, 1024).memory_mb(), 1024);
        assert_eq!(traffic(100_000, 100_000).mbufs(), 262_143);
        assert_eq!(traffic(100_000, 100_000).memory_mb(), 2048);
        let m = traffic(1_000_000, 1_000_000);
        assert_eq!(m.mbufs(), 1_065_535);
        assert!(
            m.memory_mb() >= 1_065_535 * 3 / 1024 + 512,
            "{}",
            m.memory_mb()
        );
        assert_eq!(m.memory_mb() % 256, 0);
    }

    #[test]
    fn imix_frames_follow_the_pattern_and_queues_split_the_flows() {
        let t = PcapTraffic {
            sizes: FrameSizes::Imix,
            ..traffic(64, 1152)
        };
        t.validate().unwrap();
        assert!(
            t.describe_sizes().ends_with("mean 361.8)"),
            "{}",
            t.describe_sizes()
        );
        let lens: Vec<usize> = (0..12).map(|s| t.frame(s).len() + 4).collect();
        assert_eq!(lens, IMIX_PATTERN);
        let q0 = t.queue_frames(0, 2);
        let q1 = t.queue_frames(1, 2);
        assert_eq!(q0.len() + q1.len(), 1152);
        assert_eq!(q1[0], t.frame(1));
        assert_eq!(t.queue_frames(0, 1).len(), 1152);
        // Source port = 1024 + flow % 256: queue 0 has the even flows.
        assert!(q0.iter().all(|f| f[35] % 2 == 0));
        assert!(q1.iter().all(|f| f[35] % 2 == 1));
    }

    #[test]
    fn pcaps_are_written_once_and_named_by_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let t = traffic(64, 1024);
        let a = t.pcaps(dir.path(), 1).unwrap();
        let mtime = std::fs::metadata(&a[0]).unwrap().modified().unwrap();
        assert_eq!(t.pcaps(dir.path(), 1).unwrap(), a);
        assert_eq!(std::fs::metadata(&a[0]).unwrap().modified().unwrap(), mtime);
        let two = t.pcaps(dir.path(), 2).unwrap();
        assert_eq!(two.len(), 2);
        assert_ne!(two[0], a[0]);
        let other = traffic(65, 1024).pcaps(dir.path(), 1).unwrap();
        assert_ne!(other[0], a[0]);
        // 24-byte header, then per frame 16 + 60 bytes.
        let len = std::fs::metadata(&a[0]).unwrap().len();
        assert_eq!(len, 24 + 1024 * (16 + 60));
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.ends_with(".pcap")), "{names:?}");
    }
}
