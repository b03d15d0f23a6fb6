//! Drop capture: dropped packets into a pcapng file, each with its drop
//! reason, stage, ports and hook in the packet's comment (docs/capture.md).
//!
//! # Shape
//! Every lcore that drops packets has a [`Tap`]; a drop site calls
//! [`Tap::capture`] with the frame and its [`DropSite`]. With a capture
//! running, the tap copies the frame's first [`SNAP_LEN`] bytes into a
//! fixed-size [`DropRecord`] and pushes it to one bounded lock-free queue
//! (full: counted as `capture_lost`, never waited on), within a per-lcore
//! rate. A thread on the main lcore's core writes the queue into the file
//! up to a size bound. [`Control`] starts and stops captures.

pub mod control;
pub mod record;
pub mod tap;
pub mod writer;

pub use control::{Control, Summary};
pub use record::{DropRecord, DropSite, Stage, NO_PORT, SNAP_LEN};
pub use tap::{Hub, Tap};

/// Default size bound of a capture file: 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;
/// Default packets per second each lcore may capture.
pub const DEFAULT_RATE: u64 = 100_000;
/// Default records the queue to the writer holds.
pub const DEFAULT_QUEUE: usize = 4096;

/// A size in bytes with an optional binary suffix: `65536`, `64K`, `64M`, `1G`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a size: give bytes, or K, M or G, e.g. 64M"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("12x").is_err());
    }
}
