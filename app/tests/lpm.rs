//! The IPv4 LPM table on DPDK's `rte_fib` (DIR-24-8), read directly by the
//! workers: it agrees with a reference longest-prefix match through random
//! adds, replaces and deletes (single and bulk lookups); an add longer than
//! /24 after a freed tbl8 group waits for a stalled worker at most
//! `GRACE_WAIT` and then fails with nothing changed; and changes under a
//! reading thread never give a lookup a next hop no table state routes it
//! to, while groups are freed and taken again.

mod common;
use common::*;
use fastpath::dpdk::{Eal, Lpm, Qsbr, GRACE_WAIT, LPM_MISS};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The EAL, once per process (plain `cargo test` runs this binary's tests as
/// threads of one process; nextest runs each in its own).
fn socket() -> i32 {
    static SOCKET: OnceLock<i32> = OnceLock::new();
    *SOCKET.get_or_init(|| {
        let mut argv = vec!["lpm".to_string()];
        argv.extend(eal_args("lpm", &[]));
        let (eal, _) = Eal::init(&argv).expect("EAL");
        let socket = eal.socket_id();
        // The EAL lives as long as the process.
        std::mem::forget(eal);
        socket
    })
}

fn mask(a: u32, depth: u8) -> u32 {
    match depth {
        0 => 0,
        32.. => a,
        d => a & !(u32::MAX >> d),
    }
}

/// A longest-prefix match by hand: the rules as (address, depth, hop).
#[derive(Default)]
struct Reference(Vec<(u32, u8, u32)>);

impl Reference {
    fn add(&mut self, p: u32, d: u8, h: u32) {
        let p = mask(p, d);
        self.0.retain(|r| (r.0, r.1) != (p, d));
        self.0.push((p, d, h));
    }

    fn delete(&mut self, p: u32, d: u8) -> bool {
        let p = mask(p, d);
        let n = self.0.len();
        self.0.retain(|r| (r.0, r.1) != (p, d));
        n != self.0.len()
    }

    fn lookup(&self, a: u32) -> Option<u32> {
        self.0
            .iter()
            .filter(|r| mask(a, r.1) == r.0)
            .max_by_key(|r| r.1)
            .map(|r| r.2)
    }
}

/// Prefixes that overlap a lot: under two /16s, of lengths on both sides of
/// /24 (tbl24 only, and a tbl8 group).
fn random_prefix(rng: &mut fastrand::Rng) -> (u32, u8) {
    let top = [0xc633_0000u32, 0x0a00_0000][rng.usize(..2)];
    let depth = [0, 8, 16, 20, 23, 24, 25, 26, 28, 30, 31, 32][rng.usize(..12)];
    // Few distinct values in the low 16 bits so that prefixes nest.
    let low = rng.u32(..) & 0x0301_c3ff;
    (mask(top | (low & 0xffff), depth), depth)
}

/// Addresses inside the rules (random bits below their length), and anywhere.
fn probes(rng: &mut fastrand::Rng, reference: &Reference, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| {
            let any = rng.u32(..);
            match reference.0.get(rng.usize(..reference.0.len().max(1) * 2)) {
                Some(&(p, d, _)) if d < 32 => p | any.checked_shr(u32::from(d)).unwrap_or(0),
                Some(&(p, _, _)) => p,
                None => any,
            }
        })
        .collect()
}

/// Single and bulk lookups of `addrs` give the reference's answers.
fn check(t: &Lpm, reference: &Reference, addrs: &[u32], when: &str) {
    let mut hops = vec![0u32; addrs.len()];
    t.lookup_bulk(addrs, &mut hops);
    for (i, &a) in addrs.iter().enumerate() {
        let want = reference.lookup(a);
        let addr = Ipv4Addr::from(a);
        assert_eq!(t.lookup(addr), want, "{addr} {when}");
        assert_eq!(hops[i], want.unwrap_or(LPM_MISS), "{addr} bulk {when}");
    }
}

#[test]
fn the_table_agrees_with_a_reference() {
    let mut t = Lpm::new("lpm_one", 4096, 1024, socket()).expect("table");
    let mut reference = Reference::default();
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..3000 {
        let (p, d) = random_prefix(&mut rng);
        let addr = Ipv4Addr::from(p);
        if rng.u8(..4) == 0 {
            let had = reference.delete(p, d);
            assert_eq!(t.delete(addr, d).expect("delete"), had, "{addr}/{d}");
        } else {
            let h = rng.u32(..1000);
            t.add(addr, d, h).expect("add");
            reference.add(p, d, h);
        }
        if round % 100 == 0 {
            let addrs = probes(&mut rng, &reference, 500);
            check(&t, &reference, &addrs, &format!("after change {round}"));
        }
    }
    let addrs = probes(&mut rng, &reference, 5000);
    check(&t, &reference, &addrs, "at the end");
    // Every rule gone: every group freed, every address a miss.
    for &(p, d, _) in reference.0.clone().iter() {
        assert!(t.delete(Ipv4Addr::from(p), d).expect("delete"));
    }
    assert_eq!(t.groups_in_use(), 0);
    check(&t, &Reference::default(), &addrs, "emptied");
}

#[test]
fn the_table_refuses_what_it_cannot_hold() {
    // 40 groups asked, 64 given (whole slabs of DPDK's bitmap).
    let mut t = Lpm::new("lpm_full", 128, 40, socket()).expect("table");
    // A prefix longer than /24 with its parent's next hop takes no group;
    // deleting it must not give back a group it never took (DPDK 22.11
    // does, and then refuses every new /24 as full).
    let cover = Ipv4Addr::new(10, 2, 0, 0);
    t.add(cover, 24, 5).expect("cover");
    for _ in 0..3 {
        t.add(cover, 25, 5).expect("same next hop as its parent");
        assert!(t.delete(cover, 25).expect("delete"));
    }
    assert!(t.delete(cover, 24).expect("delete"));
    for i in 0..64u8 {
        t.add(Ipv4Addr::new(10, 1, i, 0), 25, 1).expect("a group");
    }
    assert_eq!(t.groups_in_use(), 64);
    let e = t
        .add(Ipv4Addr::new(10, 0, 2, 0), 25, 3)
        .expect_err("no group left");
    assert!(e.to_string().contains("64 tbl8 groups"), "{e}");
    assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 2, 1)), None, "nothing added");
    t.add(Ipv4Addr::new(10, 1, 0, 128), 25, 2)
        .expect("its /24 has a group");
    let e = t
        .add(Ipv4Addr::new(10, 0, 3, 0), 24, LPM_MISS)
        .expect_err("the miss value is no next hop");
    assert!(e.to_string().contains("next hop"), "{e}");
    assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 0, 9)), Some(1));
    assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 0, 200)), Some(2));
}

/// A worker that stops reporting may still read a freed tbl8 group: the
/// next add longer than /24 waits for it at most `GRACE_WAIT`, then fails
/// with nothing changed; adds of /24 and shorter (which take no group) go
/// through at once; once the worker reports, the same add goes through.
#[test]
fn a_stalled_worker_fails_an_add_that_needs_a_group_after_the_wait() {
    let socket = socket();
    let qsbr = Qsbr::new(1).expect("qsbr");
    let t = Lpm::new("lpm_stall", 64, 64, socket).expect("table");
    let (lpm, mut w) = t.into_shared(qsbr.clone()).expect("shared");
    let reader = qsbr.reader(0).expect("reader");
    let (a, b) = (Ipv4Addr::new(10, 0, 1, 0), Ipv4Addr::new(10, 0, 2, 0));
    w.add(a, 25, 1).expect("a group, nothing freed yet");
    assert_eq!(lpm.groups_in_use(), 1);
    assert!(w.delete(a, 25).expect("delete"), "frees the group");
    assert_eq!(lpm.groups_in_use(), 0);
    let t0 = std::time::Instant::now();
    let e = w.add(b, 26, 2).expect_err("the stalled worker may read it");
    assert!(t0.elapsed() >= GRACE_WAIT, "{:?}", t0.elapsed());
    assert!(t0.elapsed() < GRACE_WAIT * 5, "{:?}", t0.elapsed());
    assert!(e.to_string().contains("quiescent point"), "{e}");
    assert!(e.to_string().contains("nothing changed"), "{e}");
    assert_eq!(lpm.lookup(Ipv4Addr::new(10, 0, 2, 1)), None);
    assert_eq!(lpm.groups_in_use(), 0);
    let t0 = std::time::Instant::now();
    w.add(Ipv4Addr::new(10, 0, 3, 0), 24, 3)
        .expect("a /24 takes no group");
    assert!(t0.elapsed() < GRACE_WAIT, "{:?}", t0.elapsed());
    assert_eq!(lpm.lookup(Ipv4Addr::new(10, 0, 3, 1)), Some(3));
    // The worker reports: it holds nothing it looked up before.
    let _ = reader.quiescent();
    w.add(b, 26, 2).expect("the worker reported");
    assert_eq!(lpm.lookup(Ipv4Addr::new(10, 0, 2, 1)), Some(2));
    assert_eq!(lpm.lookup(Ipv4Addr::new(10, 0, 2, 64)), None);
}

/// Prefixes the writer adds, replaces and deletes under 198.18.0.0/16, with
/// the two next hops each may have: lengths on both sides of /24, nested, and
/// the halves of a /24 sharing its next hops, so that groups are taken, go
/// uniform and are freed (tbl24 takes their next hop), and taken again.
fn churned() -> Vec<(u32, u8, [u32; 2])> {
    let mut out = Vec::new();
    for third in 0u32..24 {
        let (p, h) = (0xc612_0000 | third << 8, 10 + third * 8);
        out.push((p, 24, [h, h + 1]));
        out.push((p, 25, [h, h + 2]));
        out.push((p | 128, 25, [h + 1, h + 3]));
        if third % 4 == 0 {
            out.push((p | 5, 32, [h + 4, h + 5]));
        }
    }
    out.push((0xc612_0000, 20, [2, 3]));
    out.push((0xc612_0000, 23, [4, 5]));
    out
}

#[test]
fn a_lookup_racing_changes_never_gets_a_next_hop_no_table_gives() {
    const COVER: u32 = 1;
    let socket = socket();
    let qsbr = Qsbr::new(1).expect("qsbr");
    let t = Lpm::new("lpm_race", 1024, 64, socket).expect("table");
    let (lpm, mut w) = t.into_shared(qsbr.clone()).expect("shared");
    w.add(Ipv4Addr::new(198, 18, 0, 0), 16, COVER)
        .expect("cover");
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));

    let reader = {
        let (lpm, stop, lookups, qsbr) = (lpm.clone(), stop.clone(), lookups.clone(), qsbr.clone());
        std::thread::spawn(move || {
            let r = qsbr.reader(0).expect("reader");
            let prefixes = churned();
            let mut rng = fastrand::Rng::with_seed(1);
            let mut hops = [0u32; 32];
            let mut addrs = [0u32; 32];
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Mostly inside churned prefixes, some anywhere in the /16;
                // the last outside it, which nothing routes.
                for (i, a) in addrs.iter_mut().enumerate() {
                    let any = rng.u32(..);
                    *a = if i % 4 != 3 {
                        let (p, d, _) = prefixes[rng.usize(..prefixes.len())];
                        p | any.checked_shr(u32::from(d)).unwrap_or(0)
                    } else {
                        0xc612_0000 | any >> 16
                    };
                }
                addrs[31] = 0xc613_0000 | rng.u32(..) >> 16;
                lpm.lookup_bulk(&addrs, &mut hops);
                for (&x, &h) in addrs.iter().zip(&hops) {
                    if x >> 16 != 0xc612 {
                        assert_eq!(h, LPM_MISS, "{} is routed by nothing", Ipv4Addr::from(x));
                        continue;
                    }
                    let ok = h == COVER
                        || prefixes
                            .iter()
                            .any(|&(p, d, hs)| mask(x, d) == p && hs.contains(&h));
                    assert!(
                        ok,
                        "{} got next hop {h:#x}: no table state routes it there",
                        Ipv4Addr::from(x)
                    );
                }
                n += 1;
                lookups.store(n, Ordering::Relaxed);
                r.quiescent();
            }
            n
        })
    };

    while lookups.load(Ordering::Relaxed) == 0 && !reader.is_finished() {
        std::thread::yield_now();
    }
    let prefixes = churned();
    let mut present = vec![None::<usize>; prefixes.len()];
    let mut rng = fastrand::Rng::with_seed(2);
    let mut changes = 0u64;
    let mut freed = 0u64;
    while changes < 5_000 || lookups.load(Ordering::Relaxed) < 20_000 {
        let i = rng.usize(..prefixes.len());
        let (p, d, hs) = prefixes[i];
        let p = Ipv4Addr::from(p);
        let before = lpm.groups_in_use();
        match present[i] {
            Some(k) if rng.bool() => {
                present[i] = Some(k ^ 1);
                w.add(p, d, hs[k ^ 1]).expect("replace");
            }
            Some(_) => {
                present[i] = None;
                assert!(w.delete(p, d).expect("delete"), "{p}/{d}");
            }
            None => {
                present[i] = Some(0);
                w.add(p, d, hs[0]).expect("add");
            }
        }
        freed += u64::from(lpm.groups_in_use() < before);
        changes += 1;
        assert!(changes < 2_000_000, "the reader made no progress");
        if reader.is_finished() {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let n = reader
        .join()
        .expect("the reader found a lookup no table gives (above)");
    assert!(n >= 20_000, "{n} lookups");
    assert!(freed >= 250, "only {freed} changes freed a group");
}
