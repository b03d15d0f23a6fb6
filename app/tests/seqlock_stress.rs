//! Seqlock stress on the neighbour table, without DPDK: one writer switches a
//! neighbour's header between A and B as fast as it can while readers copy it
//! in front of an IP header; no reader may ever see a mix of A and B.

use fastpath::neigh::{EthHeader, NeighTable, ETH_HLEN};
use hooks::grace::Epochs;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Every byte of A differs from B's, in both 64-bit words.
const A: EthHeader = EthHeader {
    dst: [0x02, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a],
    src: [0x02, 0xa0, 0xa0, 0xa0, 0xa0, 0xa0],
    ethertype: 0x0800,
};
const B: EthHeader = EthHeader {
    dst: [0x06, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b],
    src: [0x06, 0xb0, 0xb0, 0xb0, 0xb0, 0xb0],
    ethertype: 0x86dd,
};

const READERS: usize = 2;
const RUN_FOR: Duration = Duration::from_secs(1);
/// Readers go on past RUN_FOR until they have seen enough (a loaded CI
/// machine may give them little time), but never past this.
const RUN_AT_MOST: Duration = Duration::from_secs(15);
/// Hard bounds, whichever comes first with the time.
const MAX_READS: u64 = 500_000_000;
const MAX_WRITES: u64 = 2_000_000_000;
/// Each reader must see each header at least this often, and the header must
/// change under it at least this often, or the test proved nothing.
const MIN_SEEN: u64 = 1_000;
const MIN_CHANGES: u64 = 100;
/// Check the clock every this many iterations.
const CLOCK_EVERY: u64 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    A,
    B,
    Mix,
}

/// The 14 bytes neighbour output writes for `h`.
fn wire(h: &EthHeader) -> [u8; ETH_HLEN] {
    h.slot()[2..].try_into().unwrap()
}

fn classify(header: &[u8; ETH_HLEN]) -> Seen {
    if *header == wire(&A) {
        Seen::A
    } else if *header == wire(&B) {
        Seen::B
    } else {
        Seen::Mix
    }
}

#[derive(Debug, Default)]
struct ReaderCount {
    reads: u64,
    a: u64,
    b: u64,
    changes: u64,
    mixes: u64,
    first_mix: Option<[u8; ETH_HLEN]>,
}

#[test]
fn a_mix_is_detected() {
    let (a, b) = (wire(&A), wire(&B));
    assert!(a.iter().zip(&b).all(|(x, y)| x != y));
    // What a torn read would write: one store's bytes from each header.
    let mut ab = a;
    ab[6..].copy_from_slice(&b[6..]);
    let mut ba = b;
    ba[6..].copy_from_slice(&a[6..]);
    assert_eq!(classify(&a), Seen::A);
    assert_eq!(classify(&b), Seen::B);
    assert_eq!(classify(&ab), Seen::Mix);
    assert_eq!(classify(&ba), Seen::Mix);
}

#[test]
fn readers_never_see_a_mix() {
    let addr = Ipv4Addr::new(192, 0, 2, 1);
    let (table, mut writer) = NeighTable::new(16, Arc::new(Epochs::default()));
    let index = writer.resolve(addr, &A, 1).unwrap();
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = start + RUN_FOR;
    let hard_deadline = start + RUN_AT_MOST;
    // The writer outlives the readers, bounded in time too.
    let writer_deadline = hard_deadline + RUN_FOR;

    let (writes, counts) = thread::scope(|s| {
        let stop = &stop;
        let w = s.spawn(move || {
            let mut n = 0u64;
            while n < MAX_WRITES {
                if n.is_multiple_of(CLOCK_EVERY)
                    && (stop.load(Ordering::Relaxed) || Instant::now() >= writer_deadline)
                {
                    break;
                }
                let hdr = if n.is_multiple_of(2) { &B } else { &A };
                assert_eq!(writer.resolve(addr, hdr, 1), Ok(index));
                n += 1;
            }
            n
        });
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let table = &table;
                s.spawn(move || {
                    let entry = table.entry(index);
                    let mut c = ReaderCount::default();
                    let mut frame = [0u8; 64];
                    let l3 = 34;
                    let mut last = Seen::A;
                    while c.reads < MAX_READS {
                        if c.reads.is_multiple_of(CLOCK_EVERY) {
                            let now = Instant::now();
                            let enough =
                                c.a >= MIN_SEEN && c.b >= MIN_SEEN && c.changes >= MIN_CHANGES;
                            if (now >= deadline && enough) || now >= hard_deadline {
                                break;
                            }
                        }
                        let dst: &mut [u8; ETH_HLEN] =
                            (&mut frame[l3 - ETH_HLEN..l3]).try_into().unwrap();
                        assert!(entry.hh_output(dst));
                        let seen = classify(dst);
                        match seen {
                            Seen::A => c.a += 1,
                            Seen::B => c.b += 1,
                            Seen::Mix => {
                                c.mixes += 1;
                                c.first_mix.get_or_insert(*dst);
                            }
                        }
                        if seen != last {
                            c.changes += 1;
                            last = seen;
                        }
                        c.reads += 1;
                    }
                    c
                })
            })
            .collect();
        let counts: Vec<ReaderCount> = readers.into_iter().map(|r| r.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        (w.join().unwrap(), counts)
    });

    eprintln!(
        "seqlock stress: {writes} writes, readers {counts:?}, {:?}",
        start.elapsed()
    );
    assert!(writes >= 2 * MIN_SEEN, "writer made only {writes} writes");
    for (r, c) in counts.iter().enumerate() {
        assert_eq!(
            c.mixes, 0,
            "reader {r} saw {} mixed headers, first {:02x?}",
            c.mixes, c.first_mix
        );
        assert!(
            c.a >= MIN_SEEN && c.b >= MIN_SEEN,
            "reader {r} saw A {} and B {} times, need {MIN_SEEN} each",
            c.a,
            c.b
        );
        assert!(
            c.changes >= MIN_CHANGES,
            "reader {r} saw the header change only {} times",
            c.changes
        );
    }
}
