//! The workers' one reclamation domain, DPDK's RCU QSBR (`Qsbr`): a token
//! passes only once every online reader reported a quiescent state since
//! it was started; a report tells whether a grace period started since the
//! reader's last one; a reader dropped (its worker stopped) holds nothing
//! up. And the two writers beside the FIB that share it: a neighbour slot
//! is not reused, and a replaced hook snapshot not freed, before every
//! online reader passed a quiescent point. The same guarantees are tested
//! without DPDK (and under Miri for the snapshot) against `hooks::grace`'s
//! `Epochs`, in the hooks crate and the neighbour table's unit tests.

mod common;
use common::*;
use fastpath::dpdk::{Eal, Qsbr};
use fastpath::neigh::{store_header, EthHeader, NeighState, NeighTable};
use hooks::grace::GracePeriods;
use hooks::snapshot::Publisher;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// One test (EAL starts once per process): plain `cargo test` runs the
/// tests of a binary in one process.
#[test]
fn grace_periods_wait_for_every_online_reader() {
    let mut argv = vec!["qsbr".to_string()];
    argv.extend(eal_args("qsbr", &[]));
    let (_eal, _) = Eal::init(&argv).expect("EAL");
    tokens();
    neighbour_slots();
    neighbour_slots_under_a_reading_thread();
    hook_snapshots();
}

/// The variable's own guarantees (those `neigh::grace` gave before).
fn tokens() {
    let q = Qsbr::new(3).expect("qsbr");
    let a = q.reader(0).expect("reader 0");
    let b = q.reader(1).expect("reader 1");
    assert!(!a.quiescent(), "nothing started since a came online");
    let t = q.start();
    assert!(!q.passed(t));
    assert!(
        a.quiescent(),
        "a grace period started since a's last report"
    );
    assert!(!q.passed(t), "b has not reported");
    assert!(!a.quiescent(), "nothing started since a's last report");
    assert!(b.quiescent());
    assert!(q.passed(t));
    // A later token needs a later quiescent state.
    let t2 = q.start();
    assert!(!q.passed(t2));
    assert!(a.quiescent());
    assert!(!q.passed(t2), "b has not reported since t2");
    drop(b);
    assert!(q.passed(t2), "a reader that went offline holds nothing up");
    // A reader that came later never held what an earlier token covers.
    let c = q.reader(2).expect("reader 2");
    assert!(q.passed(t2));
    assert!(!c.quiescent(), "nothing started since c came online");
    let t3 = q.start();
    assert!(!q.passed(t3));
    // The id of a reader that left can serve a new one.
    let b = q.reader(1).expect("reader 1 again");
    assert!(!q.passed(t3));
    assert!(a.quiescent() && c.quiescent());
    assert!(q.passed(t3), "b came online after t3 started");
    drop((a, b, c));
    assert!(q.passed(q.start()), "no reader online: every token passes");
    // Through the hooks crate's view, as the publisher and the neighbour
    // table see it.
    let g: Arc<dyn GracePeriods> = q.clone();
    let r = q.reader(0).expect("reader 0 again");
    let t4 = g.start();
    assert!(!g.passed(t4));
    assert!(r.quiescent());
    assert!(g.passed(t4));
}

fn hdr(last: u8) -> EthHeader {
    EthHeader {
        dst: [0x02, 0, 0, 0, 0, last],
        src: [0x02, 0, 0, 0, 0, 0xfe],
        ethertype: 0x0800,
    }
}

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}

/// A reclaimed neighbour slot is reused only once every online reader
/// reported; one that went offline holds none back.
fn neighbour_slots() {
    let q = Qsbr::new(2).expect("qsbr");
    let (t, mut w) = NeighTable::new(2, q.clone());
    let worker = q.reader(0).expect("reader");
    let other = q.reader(1).expect("reader");
    let i = w.resolve(ip(1), &hdr(1), 1).unwrap();
    w.reclaim(ip(1)).unwrap();
    assert_eq!(w.collect(), 0, "the grace period has just started");
    // The slot's tombstone is not reusable yet: another address does not
    // take it.
    let j = w.resolve(ip(2), &hdr(2), 2).unwrap();
    assert_ne!(i, j, "reused before the workers were quiescent");
    assert_eq!(t.entry(i).state(), NeighState::Failed);
    w.reclaim(ip(2)).unwrap();
    assert!(worker.quiescent());
    assert_eq!(w.collect(), 0, "the other worker has not reported");
    assert!(other.quiescent());
    assert_eq!(w.collect(), 1, "ip(1)'s slot");
    assert_eq!(w.collect(), 0, "ip(2)'s period started after the reports");
    worker.quiescent();
    other.quiescent();
    assert_eq!(w.collect(), 1);
    assert_eq!(w.retiring(), 0);
    let k = w.resolve(ip(3), &hdr(3), 3).unwrap();
    assert_eq!(t.entry(k).hh().header(), hdr(3));
    // A worker that stopped (its reader went offline) holds no slot.
    w.reclaim(ip(3)).unwrap();
    assert_eq!(w.collect(), 0);
    worker.quiescent();
    assert_eq!(w.collect(), 0);
    drop(other);
    assert_eq!(w.collect(), 1, "a stopped worker holds nothing up");
}

/// A thread that looks addresses up and reads their headers, reporting a
/// quiescent state between "bursts", never reads another address's header
/// through a slot the writer reclaimed and reused meanwhile.
fn neighbour_slots_under_a_reading_thread() {
    let q = Qsbr::new(1).expect("qsbr");
    let (t, mut w) = NeighTable::new(2, q.clone());
    let reader = q.reader(0).expect("reader");
    let stop = AtomicBool::new(false);
    let reading = AtomicBool::new(false);
    let reused = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            // Once the reader reads (a writer that ran before it started
            // would reuse slots no reader held, proving nothing): 20,000
            // changes, and on until 100 slots were reused (bounded).
            while !reading.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            let mut reused = 0;
            let mut n = 0u32;
            while (n < 20_000 || reused < 100) && n < 20_000_000 {
                let a = 1 + (n % 5) as u8;
                let _ = w.resolve(ip(a), &hdr(a), u64::from(n));
                let _ = w.reclaim(ip(1 + ((n + 2) % 5) as u8));
                reused += w.collect();
                n += 1;
            }
            stop.store(true, Ordering::Relaxed);
            reused
        });
        s.spawn(|| {
            reading.store(true, Ordering::Release);
            while !stop.load(Ordering::Relaxed) {
                for a in 1..=5 {
                    if let Some(i) = t.lookup(ip(a)) {
                        for _ in 0..4 {
                            if let Some(words) = t.entry(i).hh_snapshot() {
                                let mut f = [0u8; 14];
                                store_header(&mut f, words);
                                assert_eq!(f[5], a, "header of another address");
                            }
                        }
                    }
                }
                reader.quiescent();
            }
        });
        writer.join().expect("writer panicked")
    });
    assert!(reused > 0, "no slot was reused: the test proved nothing");
}

/// A snapshot that counts its drops.
struct Snap {
    id: u64,
    freed: Arc<AtomicUsize>,
}

impl Drop for Snap {
    fn drop(&mut self) {
        self.freed.fetch_add(1, Ordering::SeqCst);
    }
}

/// A replaced hook snapshot is freed once every online reader reported a
/// quiescent state after the publish (and refreshed, as its report said).
fn hook_snapshots() {
    let q = Qsbr::new(2).expect("qsbr");
    let freed = Arc::new(AtomicUsize::new(0));
    let snap = |id| Snap {
        id,
        freed: freed.clone(),
    };
    let p = Publisher::new(snap(0), q.clone());
    let (ra, rb) = (q.reader(0).expect("reader"), q.reader(1).expect("reader"));
    let (mut a, mut b) = (p.subscribe(), p.subscribe());
    assert!(!ra.quiescent() && !rb.quiescent());
    let retired = p.publish(snap(1));
    assert!(!retired.is_freed() && !q.passed(retired.token()));
    assert!(ra.quiescent(), "a publish starts a grace period");
    assert_eq!(a.refresh().id, 1);
    assert!(!retired.is_freed(), "b has not passed a quiescent point");
    assert!(!q.passed(retired.token()));
    assert_eq!(b.get().id, 0, "b keeps its snapshot until then");
    assert!(rb.quiescent());
    assert_eq!(b.refresh().id, 1);
    assert!(retired.is_freed() && q.passed(retired.token()));
    // A worker that stopped holds no snapshot.
    let retired = p.publish(snap(2));
    assert!(ra.quiescent());
    assert_eq!(a.refresh().id, 2);
    drop((rb, b));
    assert!(retired.is_freed() && q.passed(retired.token()));
    assert_eq!(freed.load(Ordering::SeqCst), 2);
}
