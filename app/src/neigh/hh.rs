//! A neighbour's cached hardware header (`hh`) under a seqlock: the kernel's
//! `hh_cache` as read by `neigh_hh_output`.
//!
//! The 16-byte slot holds the 14-byte Ethernet header in its last 14 bytes, after
//! 2 bytes of padding (the kernel's `HH_DATA_MOD` alignment):
//!
//! ```text
//! byte   0..2     2..8      8..14     14..16
//!        padding  dst MAC   src MAC   ethertype (big endian)
//! word   [0] = bytes 0..8             [1] = bytes 8..16
//! ```
//!
//! Output writes the 14 header bytes as two overlapping 64-bit stores, header
//! bytes 0..8 and 6..14, not the kernel's 16 bytes at `l3 - 16`. The kernel
//! aligns the Ethernet header at 2 mod 16 (`NET_IP_ALIGN`), so its 16-byte copy
//! is aligned; a DPDK mbuf's data starts cache-line aligned (128 bytes of
//! headroom), so the 16 bytes at `l3 - 16` would straddle two cache lines and
//! dirty the headroom's, which nothing else touches: a split store and a cold
//! line per packet. The overlapping stores stay in the frame's first line.
//!
//! Ordering is DPDK's `rte_seqcount` (rte_seqcount.h). The two words are atomics:
//! a racy plain read is undefined behaviour in Rust, even when retried.
//!
//! Single writer: only [`NeighWriter`](super::NeighWriter), unique per table and
//! `&mut self`, updates an `HhCache`. Two writers would not be unsafe (all
//! atomics), but readers could then see a header that neither wrote.

use std::hint;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::*};

/// Bytes in the header slot (the kernel's `HH_DATA_MOD`).
pub const HH_SLOT: usize = 16;
/// Bytes in an Ethernet header: destination MAC, source MAC, ethertype.
pub const ETH_HLEN: usize = 14;
/// Padding bytes at the start of the slot.
pub const HH_PAD: usize = HH_SLOT - ETH_HLEN;

/// An Ethernet header as the neighbour layer writes it in front of an IP packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthHeader {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// Host order; written big endian.
    pub ethertype: u16,
}

impl EthHeader {
    /// The 16-byte slot: 2 zero bytes, then the header on the wire.
    pub fn slot(&self) -> [u8; HH_SLOT] {
        let mut s = [0u8; HH_SLOT];
        s[2..8].copy_from_slice(&self.dst);
        s[8..14].copy_from_slice(&self.src);
        s[14..16].copy_from_slice(&self.ethertype.to_be_bytes());
        s
    }

    /// The header held in a slot (the padding is ignored).
    pub fn from_slot(s: &[u8; HH_SLOT]) -> Self {
        EthHeader {
            dst: std::array::from_fn(|i| s[2 + i]),
            src: std::array::from_fn(|i| s[8 + i]),
            ethertype: u16::from_be_bytes([s[14], s[15]]),
        }
    }
}

/// The slot as the two words stored in the cache (native byte order, so the
/// bytes in memory are the slot's).
#[inline(always)]
fn slot_words(s: &[u8; HH_SLOT]) -> [u64; 2] {
    [
        u64::from_ne_bytes(std::array::from_fn(|i| s[i])),
        u64::from_ne_bytes(std::array::from_fn(|i| s[8 + i])),
    ]
}

/// Write the header held in slot words (from [`HhCache::read_words`] or
/// [`NeighEntry::hh_snapshot`](super::NeighEntry::hh_snapshot)) to the 14
/// bytes of a frame's Ethernet header: two overlapping 64-bit stores, bytes
/// 0..8 and 6..14 (the two bytes in both get the same value).
#[inline(always)]
pub fn store_header(dst: &mut [u8; ETH_HLEN], words: [u64; 2]) {
    let [w0, w1] = words;
    // Slot bytes 2..10 as one word, shifted in registers: going through a
    // 16-byte array on the stack would read back across two fresh stores (a
    // store-forwarding stall per packet).
    let head = if cfg!(target_endian = "little") {
        (w0 >> 16) | (w1 << 48)
    } else {
        (w0 << 16) | (w1 >> 48)
    };
    dst[..8].copy_from_slice(&head.to_ne_bytes());
    dst[6..].copy_from_slice(&w1.to_ne_bytes());
}

/// The cached header of one neighbour: a sequence count and two words.
/// Readers never write to it.
#[derive(Debug, Default)]
pub struct HhCache {
    /// Odd while the writer is updating `words`.
    seq: AtomicU32,
    words: [AtomicU64; 2],
}

impl HhCache {
    /// An all-zero header.
    pub const fn new() -> Self {
        HhCache {
            seq: AtomicU32::new(0),
            words: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// The two words of the slot, consistent (retries while the writer is busy).
    #[inline(always)]
    pub fn read_words(&self) -> [u64; 2] {
        loop {
            // Acquire: the word loads below cannot move before it; pairs with
            // the writer's final Release store.
            let seq = self.seq.load(Acquire);
            if seq & 1 == 0 {
                let w = [self.words[0].load(Relaxed), self.words[1].load(Relaxed)];
                // The word loads happen before the second sequence load.
                fence(Acquire);
                if self.seq.load(Relaxed) == seq {
                    return w;
                }
            }
            hint::spin_loop();
        }
    }

    /// The 16-byte slot, consistent.
    #[inline(always)]
    pub fn read(&self) -> [u8; HH_SLOT] {
        let [w0, w1] = self.read_words();
        let mut s = [0u8; HH_SLOT];
        s[..8].copy_from_slice(&w0.to_ne_bytes());
        s[8..].copy_from_slice(&w1.to_ne_bytes());
        s
    }

    /// Write the header to a frame's first 14 bytes (see [`store_header`]).
    #[inline(always)]
    pub fn copy_to(&self, dst: &mut [u8; ETH_HLEN]) {
        store_header(dst, self.read_words());
    }

    /// The cached Ethernet header, consistent.
    pub fn header(&self) -> EthHeader {
        EthHeader::from_slot(&self.read())
    }

    /// Store `hdr` (single writer). Does nothing, and dirties nothing, if the
    /// header is unchanged; returns whether it wrote.
    pub(super) fn write(&self, hdr: &EthHeader) -> bool {
        let new = slot_words(&hdr.slot());
        // Only this writer stores the words, so Relaxed reads its own values.
        if [self.words[0].load(Relaxed), self.words[1].load(Relaxed)] == new {
            return false;
        }
        let seq = self.seq.load(Relaxed);
        self.seq.store(seq.wrapping_add(1), Relaxed);
        // The word stores below cannot move before the odd sequence store.
        fence(Release);
        self.words[0].store(new[0], Relaxed);
        self.words[1].store(new[1], Relaxed);
        // Pairs with the reader's first Acquire load.
        self.seq.store(seq.wrapping_add(2), Release);
        true
    }

    /// The sequence count (twice the number of writes, modulo 2^32).
    #[cfg(test)]
    pub(super) fn seq(&self) -> u32 {
        self.seq.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    const HDR: EthHeader = EthHeader {
        dst: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
        src: [0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee],
        ethertype: 0x0800,
    };

    const SLOT: [u8; HH_SLOT] = [
        0, 0, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x08, 0x00,
    ];

    #[test]
    fn slot_is_padding_then_header() {
        assert_eq!(HH_PAD, 2);
        assert_eq!(HDR.slot(), SLOT);
        assert_eq!(EthHeader::from_slot(&SLOT), HDR);
    }

    #[test]
    fn new_cache_is_zero() {
        let hh = HhCache::new();
        assert_eq!(hh.read(), [0; HH_SLOT]);
        assert_eq!(hh.header(), EthHeader::default());
        assert_eq!(hh.seq(), 0);
    }

    #[test]
    fn write_then_read() {
        let hh = HhCache::new();
        assert!(hh.write(&HDR));
        assert_eq!(hh.read(), SLOT);
        assert_eq!(hh.header(), HDR);
        assert_eq!(hh.seq(), 2);
    }

    #[test]
    fn same_header_is_not_rewritten() {
        let hh = HhCache::new();
        assert!(hh.write(&HDR));
        assert!(!hh.write(&HDR));
        assert_eq!(hh.seq(), 2);
        let other = EthHeader {
            ethertype: 0x86dd,
            ..HDR
        };
        assert!(hh.write(&other));
        assert_eq!(hh.seq(), 4);
        assert_eq!(hh.header(), other);
    }

    #[test]
    fn copy_to_writes_exactly_the_14_header_bytes() {
        let hh = HhCache::new();
        hh.write(&HDR);
        let mut frame = [0xeeu8; 64];
        let dst: &mut [u8; ETH_HLEN] = (&mut frame[..ETH_HLEN]).try_into().unwrap();
        hh.copy_to(dst);
        assert_eq!(&frame[..ETH_HLEN], &SLOT[HH_PAD..]);
        assert!(frame[ETH_HLEN..].iter().all(|&b| b == 0xee));
    }

    #[test]
    fn sequence_wraps() {
        let hh = HhCache::new();
        hh.seq.store(u32::MAX - 1, Relaxed);
        assert!(hh.write(&HDR));
        assert_eq!(hh.seq(), 0);
        assert_eq!(hh.header(), HDR);
    }

    /// Nanoseconds the thread `tid` of this process has run on a CPU (the
    /// first field of its `schedstat`); `None` once the thread has exited.
    fn cpu_ns(tid: &str) -> Option<u64> {
        let path = format!("/proc/self/task/{tid}/schedstat");
        let text = std::fs::read_to_string(&path).ok()?;
        let ns = text.split_whitespace().next().and_then(|f| f.parse().ok());
        Some(ns.unwrap_or_else(|| panic!("{path}: no run time in {text:?}")))
    }

    #[test]
    fn reader_waits_while_sequence_is_odd() {
        const NEW: EthHeader = EthHeader {
            dst: [0x02, 0x66, 0x77, 0x88, 0x99, 0xaa],
            src: [0x02, 0x10, 0x20, 0x30, 0x40, 0x50],
            ethertype: 0x86dd,
        };
        let hh = HhCache::new();
        hh.write(&HDR);
        // A writer caught mid-update: sequence odd, first word already the
        // new header's, second still the old one's. A reader that returned
        // now would see a header that nobody wrote.
        let (old, new) = (slot_words(&HDR.slot()), slot_words(&NEW.slot()));
        hh.seq.store(3, Relaxed);
        hh.words[0].store(new[0], Relaxed);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                // "<pid>/task/<tid>": who we are, for the test to watch.
                let me = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
                let tid = me.file_name().unwrap().to_string_lossy().into_owned();
                let now = cpu_ns(&tid).expect("schedstat (a kernel with CONFIG_SCHED_INFO)");
                ready_tx.send((tid, now)).unwrap();
                let h = hh.header();
                done.store(true, Release);
                h
            });
            // Ready: the reader has run for a millisecond of CPU time since
            // it said so. All of it was spent in `header()`, spinning on the
            // odd sequence, since nothing else is left for it to do.
            let (tid, started) = ready_rx.recv().expect("the reader starts");
            loop {
                assert!(!done.load(Acquire), "read returned during an update");
                match cpu_ns(&tid) {
                    Some(ns) if ns >= started + 1_000_000 => break,
                    Some(_) => std::thread::yield_now(),
                    None => panic!("the reader exited during an update"),
                }
            }
            assert!(!done.load(Acquire), "read returned during an update");
            // The writer finishes: the reader returns the whole new header.
            hh.words[1].store(new[1], Relaxed);
            hh.seq.store(4, Release);
            let got = reader.join().unwrap();
            assert_ne!(slot_words(&got.slot()), [new[0], old[1]], "a torn header");
            assert_eq!(got, NEW);
        });
    }
}
