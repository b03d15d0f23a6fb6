//! The IPv6 LPM tables on DPDK's `rte_lpm6`: one table agrees with a
//! reference longest-prefix match through random adds, replaces and deletes
//! (DPDK's own single lookup, and the inline reading of its tables that the
//! workers use, `Lpm6::entry`, through `lookup_bulk`), refuses what it cannot hold with an error that
//! says why, and the pair the workers read ([`Lpm6Pair`]) changes under a
//! reading thread without a lookup ever missing a prefix that both the old
//! and the new table route, or finding a next hop neither gives.

mod common;
use common::*;
use fastpath::dpdk::{Eal, Lpm6, Lpm6Change, Lpm6Pair, Qsbr, LPM6_MISS, STANDBY_WAIT};
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The EAL, once per process (plain `cargo test` runs this binary's tests as
/// threads of one process; nextest runs each in its own).
fn socket() -> i32 {
    static SOCKET: OnceLock<i32> = OnceLock::new();
    *SOCKET.get_or_init(|| {
        let mut argv = vec!["lpm6".to_string()];
        argv.extend(eal_args("lpm6", &[]));
        let (eal, _) = Eal::init(&argv).expect("EAL");
        let socket = eal.socket_id();
        // The EAL lives as long as the process.
        std::mem::forget(eal);
        socket
    })
}

/// A longest-prefix match by hand: the rules as (address bits, depth, hop).
#[derive(Default)]
struct Reference(Vec<(u128, u8, u32)>);

fn mask(a: u128, depth: u8) -> u128 {
    match depth {
        0 => 0,
        128.. => a,
        d => a & !(u128::MAX >> d),
    }
}

impl Reference {
    fn add(&mut self, p: u128, d: u8, h: u32) {
        let p = mask(p, d);
        self.0.retain(|r| (r.0, r.1) != (p, d));
        self.0.push((p, d, h));
    }

    fn delete(&mut self, p: u128, d: u8) -> bool {
        let p = mask(p, d);
        let n = self.0.len();
        self.0.retain(|r| (r.0, r.1) != (p, d));
        n != self.0.len()
    }

    fn lookup(&self, a: u128) -> Option<u32> {
        self.0
            .iter()
            .filter(|r| mask(a, r.1) == r.0)
            .max_by_key(|r| r.1)
            .map(|r| r.2)
    }
}

/// Prefixes that overlap a lot: under a few /16s, of lengths across every
/// level of the table (the first level, then a tbl8 group per byte).
fn random_prefix(rng: &mut fastrand::Rng) -> (u128, u8) {
    let top = [0x2001_0db8u128, 0x2001_0db9, 0xfd00_0000][rng.usize(..3)] << 96;
    let depth = [8, 16, 24, 25, 32, 40, 47, 48, 56, 64, 65, 96, 127, 128][rng.usize(..14)];
    let low = u128::from(rng.u64(..)) << 64 | u128::from(rng.u64(..));
    // Few distinct values in the bits below 32 so that prefixes nest.
    let low = low & (0x0000_0000_ffff_0003_0000_0000_0000_00ffu128 | (0xf << 124));
    (mask(top | low, depth), depth)
}

/// Addresses to look up: inside the rules (their bits, then random ones
/// below their length), and anywhere.
fn probes(rng: &mut fastrand::Rng, reference: &Reference, n: usize) -> Vec<u128> {
    (0..n)
        .map(|_| {
            let any = u128::from(rng.u64(..)) << 64 | u128::from(rng.u64(..));
            match reference.0.get(rng.usize(..reference.0.len().max(1) * 2)) {
                Some(&(p, d, _)) if d < 128 => p | (any >> d),
                Some(&(p, _, _)) => p,
                None => any,
            }
        })
        .collect()
}

/// What the checks look up in: one table or the pair.
trait Table {
    fn one(&self, a: &Ipv6Addr) -> Option<u32>;
    fn bulk(&self, a: &[[u8; 16]], hops: &mut [u32]);
}

impl Table for Lpm6 {
    fn one(&self, a: &Ipv6Addr) -> Option<u32> {
        self.lookup(a)
    }
    fn bulk(&self, a: &[[u8; 16]], hops: &mut [u32]) {
        self.lookup_bulk(a, hops)
    }
}

impl Table for Lpm6Pair {
    fn one(&self, a: &Ipv6Addr) -> Option<u32> {
        self.lookup(a)
    }
    fn bulk(&self, a: &[[u8; 16]], hops: &mut [u32]) {
        self.lookup_bulk(a, hops)
    }
}

/// Single and bulk lookups of `addrs` give the reference's answers.
fn check_table(t: &dyn Table, reference: &Reference, addrs: &[u128], when: &str) {
    let octets: Vec<[u8; 16]> = addrs.iter().map(|a| a.to_be_bytes()).collect();
    let mut hops = vec![0u32; addrs.len()];
    t.bulk(&octets, &mut hops);
    for (i, &a) in addrs.iter().enumerate() {
        let want = reference.lookup(a);
        let addr = Ipv6Addr::from_bits(a);
        assert_eq!(t.one(&addr), want, "{addr} {when}");
        assert_eq!(hops[i], want.unwrap_or(LPM6_MISS), "{addr} bulk {when}");
    }
}

#[test]
fn one_table_agrees_with_a_reference() {
    let mut t = Lpm6::new("lpm6_one", 4096, 8192, socket()).expect("table");
    let mut reference = Reference::default();
    let mut rng = fastrand::Rng::with_seed(0x6c70_6d36);
    for step in 0..3000 {
        let (p, d) = random_prefix(&mut rng);
        if rng.u8(..3) == 0 {
            let had = t.delete(Ipv6Addr::from_bits(p), d).expect("delete");
            assert_eq!(
                had,
                reference.delete(p, d),
                "delete {}/{d}",
                Ipv6Addr::from_bits(p)
            );
        } else {
            let h = rng.u32(..1 << 21);
            // Bits past the length are ignored.
            let noisy = if d < 128 {
                p | (1 << (127 - d)) >> rng.u32(..u32::from(128 - d))
            } else {
                p
            };
            t.add(Ipv6Addr::from_bits(noisy), d, h).expect("add");
            reference.add(p, d, h);
            assert_eq!(t.rule(Ipv6Addr::from_bits(p), d), Some(h));
        }
        if step % 50 == 0 {
            let addrs = probes(&mut rng, &reference, 256);
            check_table(&t, &reference, &addrs, &format!("after step {step}"));
        }
    }
    // Down to nothing: every tbl8 group back in the pool, every lookup a miss.
    for &(p, d, _) in reference.0.clone().iter() {
        assert!(t.delete(Ipv6Addr::from_bits(p), d).expect("delete"));
        reference.delete(p, d);
    }
    let addrs = probes(&mut rng, &reference, 256);
    check_table(&t, &reference, &addrs, "emptied");
}

#[test]
fn one_table_refuses_what_it_cannot_hold() {
    let p: Ipv6Addr = "2001:db8::".parse().unwrap();
    let mut t = Lpm6::new("lpm6_small", 4, 13, socket()).expect("table");
    for (d, h) in [(0u8, 1u32), (129, 1), (64, 1 << 21)] {
        let e = t.add(p, d, h).unwrap_err();
        assert_eq!(e.code, libc::EINVAL, "{e}");
        assert!(e.to_string().contains(&format!("{p}/{d}")), "{e}");
    }
    assert_eq!(t.delete(p, 64), Ok(false), "absent");
    assert_eq!(t.rule(p, 64), None);
    // A /128 takes 13 groups: all of them.
    t.add("2001:db8::1".parse().unwrap(), 128, 7)
        .expect("one /128");
    let e = t.add("2001:db9::1".parse().unwrap(), 128, 8).unwrap_err();
    assert_eq!(e.code, libc::ENOSPC, "{e}");
    assert!(e.to_string().contains("13 tbl8 groups"), "{e}");
    assert_eq!(
        t.lookup(&"2001:db9::1".parse().unwrap()),
        None,
        "nothing half-added"
    );
    // Deleting it gives the groups back.
    assert_eq!(t.delete("2001:db8::1".parse().unwrap(), 128), Ok(true));
    t.add("2001:db9::1".parse().unwrap(), 128, 8)
        .expect("groups reused");
    // Rules: 4 at most (shallow prefixes take no group).
    for i in 0..3u16 {
        t.add(Ipv6Addr::new(0x2a00 + i, 0, 0, 0, 0, 0, 0, 0), 16, 1)
            .expect("rule");
    }
    let e = t.add("2b00::".parse().unwrap(), 16, 1).unwrap_err();
    assert_eq!(e.code, libc::ENOSPC, "{e}");
    assert!(Lpm6::new("bad\0name", 4, 4, socket()).is_err());
    let dup = Lpm6::new("lpm6_small", 4, 4, socket()).unwrap_err();
    assert!(dup.to_string().contains("lpm6_small"), "{dup}");
}

/// A worker that stops reporting (stalled) holds the old table: the next
/// change waits for it at most `STANDBY_WAIT`, then fails with nothing
/// changed, instead of hanging the control lcore; once the worker reports,
/// the same change goes through.
#[test]
fn a_stalled_worker_fails_a_change_whole_after_the_wait() {
    let socket = socket();
    let qsbr = Qsbr::new(1).expect("qsbr");
    let a = Lpm6::new("lpm6_sa", 64, 256, socket).expect("a");
    let b = Lpm6::new("lpm6_sb", 64, 256, socket).expect("b");
    let (pair, mut w) = Lpm6Pair::new(a, b, qsbr.clone()).expect("pair");
    let reader = qsbr.reader(0).expect("reader");
    let (p1, p2): (Ipv6Addr, Ipv6Addr) = (
        "2001:db8:1::".parse().unwrap(),
        "2001:db8:2::".parse().unwrap(),
    );
    // The first change swaps at once; the worker has not reported since.
    w.add(p1, 48, 1).expect("first change");
    let t = std::time::Instant::now();
    let e = w
        .add(p2, 48, 2)
        .expect_err("the stalled worker holds the standby");
    assert!(t.elapsed() >= STANDBY_WAIT, "{:?}", t.elapsed());
    assert!(t.elapsed() < STANDBY_WAIT * 5, "{:?}", t.elapsed());
    assert!(e.to_string().contains("quiescent point"), "{e}");
    assert_eq!(pair.lookup(&"2001:db8:1::9".parse().unwrap()), Some(1));
    assert_eq!(
        pair.lookup(&"2001:db8:2::9".parse().unwrap()),
        None,
        "nothing changed"
    );
    assert_eq!(w.rules().count(), 1);
    // The worker reports: it holds nothing it looked up before.
    let _ = reader.quiescent();
    w.add(p2, 48, 2).expect("the worker reported");
    assert_eq!(pair.lookup(&"2001:db8:2::9".parse().unwrap()), Some(2));
    assert_eq!(pair.lookup(&"2001:db8:1::9".parse().unwrap()), Some(1));
}

#[test]
fn the_pair_agrees_with_a_reference_and_fails_whole() {
    let socket = socket();
    let qsbr = Qsbr::new(1).expect("qsbr");
    let a = Lpm6::new("lpm6_pa", 4096, 16384, socket).expect("a");
    let b = Lpm6::new("lpm6_pb", 4096, 16384, socket).expect("b");
    let (pair, mut w) = Lpm6Pair::new(a, b, qsbr).expect("pair");
    let mut reference = Reference::default();
    let mut rng = fastrand::Rng::with_seed(0x7061_6972);
    for step in 0..600 {
        let batch: Vec<Lpm6Change> = (0..rng.usize(1..6))
            .map(|_| {
                let (p, d) = random_prefix(&mut rng);
                if rng.u8(..3) == 0 {
                    Lpm6Change::Delete(Ipv6Addr::from_bits(p), d)
                } else {
                    Lpm6Change::Add(Ipv6Addr::from_bits(p), d, rng.u32(..1 << 21))
                }
            })
            .collect();
        w.apply(&batch).expect("batch");
        for c in &batch {
            match *c {
                Lpm6Change::Add(p, d, h) => reference.add(p.to_bits(), d, h),
                Lpm6Change::Delete(p, d) => {
                    reference.delete(p.to_bits(), d);
                }
            }
        }
        assert_eq!(w.swaps(), step + 1);
        // Each table in turn is the active one: both are checked.
        let addrs = probes(&mut rng, &reference, 64);
        check_table(&*pair, &reference, &addrs, &format!("after batch {step}"));
    }
    let rules: Vec<_> = w.rules().collect();
    assert_eq!(rules.len(), reference.0.len());

    // A batch that does not fit (a bad length last, or more groups than
    // there are) changes nothing the readers see, and the next one applies.
    let addrs = probes(&mut rng, &reference, 256);
    let swaps = w.swaps();
    let bad = [
        Lpm6Change::Add("2001:db8:1::".parse().unwrap(), 48, 5),
        Lpm6Change::Add("2001:db8:1::".parse().unwrap(), 0, 5),
    ];
    assert!(w.apply(&bad).is_err());
    let huge: Vec<Lpm6Change> = (0..2000u128)
        .map(|i| Lpm6Change::Add(Ipv6Addr::from_bits(0x3000 << 112 | i << 72 | 1), 128, 9))
        .collect();
    let e = w.apply(&huge).unwrap_err();
    assert_eq!(e.code, libc::ENOSPC, "{e}");
    assert_eq!(w.swaps(), swaps, "no swap for a failed batch");
    check_table(&*pair, &reference, &addrs, "after failed batches");
    w.add("2001:db8:1::".parse().unwrap(), 48, 5)
        .expect("add after a failure");
    reference.add("2001:db8:1::".parse::<Ipv6Addr>().unwrap().to_bits(), 48, 5);
    w.add("2001:db8:2::".parse().unwrap(), 48, 6)
        .expect("and the other table too");
    reference.add("2001:db8:2::".parse::<Ipv6Addr>().unwrap().to_bits(), 48, 6);
    check_table(&*pair, &reference, &addrs, "after the next batches");
    assert_eq!(w.delete("2001:db8:3::".parse().unwrap(), 48), Ok(false));
}

/// The prefixes the writer toggles under 2001:db8::/32, which stays: each
/// with the two next hops it alternates between.
fn churned() -> Vec<(u128, u8, [u32; 2])> {
    let mut rng = fastrand::Rng::with_seed(0x7261_6365);
    let mut out: Vec<(u128, u8, [u32; 2])> = Vec::new();
    while out.len() < 48 {
        let i = out.len() as u32;
        let d = [40u8, 48, 56, 64, 72, 96, 120, 128][out.len() % 8];
        let bits = u128::from(rng.u64(..)) << 64 | u128::from(rng.u64(..));
        let a = mask(
            0x2001_0db8u128 << 96 | (bits >> 32 & (0xff << 88 | 0xffff)),
            d,
        );
        if !out.iter().any(|&(p, pd, _)| (p, pd) == (a, d)) {
            out.push((a, d, [10 + 2 * i, 11 + 2 * i]));
        }
    }
    out
}

#[test]
fn a_lookup_racing_changes_never_misses_a_prefix_both_tables_route() {
    const COVER: u32 = 1;
    const VERSION: u32 = 1 << 20;
    let socket = socket();
    let qsbr = Qsbr::new(1).expect("qsbr");
    let a = Lpm6::new("lpm6_ra", 1024, 2048, socket).expect("a");
    let b = Lpm6::new("lpm6_rb", 1024, 2048, socket).expect("b");
    let (pair, mut w) = Lpm6Pair::new(a, b, qsbr.clone()).expect("pair");
    w.add("2001:db8::".parse().unwrap(), 32, COVER)
        .expect("cover");
    // Its next hop counts the batches: a reader never sees it go back.
    let sentinel: Ipv6Addr = "2001:db8:ffff:ffff::".parse().unwrap();
    w.add(sentinel, 64, VERSION).expect("sentinel");
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));

    let reader = {
        let (pair, stop, lookups, qsbr) =
            (pair.clone(), stop.clone(), lookups.clone(), qsbr.clone());
        std::thread::spawn(move || {
            let r = qsbr.reader(0).expect("reader");
            let prefixes = churned();
            let mut rng = fastrand::Rng::with_seed(1);
            let mut hops = [0u32; 32];
            let mut addrs = [[0u8; 16]; 32];
            let mut n = 0u64;
            let mut version = VERSION;
            while !stop.load(Ordering::Relaxed) {
                // Half inside churned prefixes, half anywhere in the /32; and
                // one outside it, which nothing routes.
                for (i, a) in addrs.iter_mut().enumerate() {
                    let any = u128::from(rng.u64(..)) << 64 | u128::from(rng.u64(..));
                    let x = if i % 2 == 0 {
                        let (p, d, _) = prefixes[rng.usize(..prefixes.len())];
                        if d < 128 {
                            p | any >> d
                        } else {
                            p
                        }
                    } else {
                        0x2001_0db8u128 << 96 | any >> 32
                    };
                    *a = x.to_be_bytes();
                }
                addrs[30] = (sentinel.to_bits() | 7).to_be_bytes();
                addrs[31] = (0x2001_0db9u128 << 96 | 5).to_be_bytes();
                pair.lookup_bulk(&addrs, &mut hops);
                assert!(
                    hops[30] >= version,
                    "batch {:#x} seen after batch {version:#x}: a table went back",
                    hops[30]
                );
                version = hops[30];
                for (a, &h) in addrs[..30]
                    .iter()
                    .chain(&addrs[31..])
                    .zip(hops[..30].iter().chain(&hops[31..]))
                {
                    let x = u128::from_be_bytes(*a);
                    if x >> 96 != 0x2001_0db8 {
                        assert_eq!(
                            h,
                            LPM6_MISS,
                            "{} is routed by no table",
                            Ipv6Addr::from_bits(x)
                        );
                        continue;
                    }
                    let ok = h == COVER
                        || prefixes
                            .iter()
                            .any(|&(p, d, hs)| mask(x, d) == p && hs.contains(&h));
                    assert!(
                        ok,
                        "{} got next hop {h:#x}: no table routes it there",
                        Ipv6Addr::from_bits(x)
                    );
                }
                n += 1;
                lookups.store(n, Ordering::Relaxed);
                r.quiescent();
            }
            n
        })
    };

    // Start changing once the reader runs.
    while lookups.load(Ordering::Relaxed) == 0 && !reader.is_finished() {
        std::thread::yield_now();
    }
    let prefixes = churned();
    let mut present = vec![None::<usize>; prefixes.len()];
    let mut rng = fastrand::Rng::with_seed(2);
    let mut changes = 0u64;
    // Add, replace and delete, one change and the sentinel's next version
    // per swap: each delete frees tbl8 groups that the next add takes again.
    while changes < 4000 || lookups.load(Ordering::Relaxed) < 20_000 {
        let i = rng.usize(..prefixes.len());
        let (p, d, hs) = prefixes[i];
        let p = Ipv6Addr::from_bits(p);
        let change = match present[i] {
            Some(k) if rng.bool() => {
                present[i] = Some(k ^ 1);
                Lpm6Change::Add(p, d, hs[k ^ 1])
            }
            Some(_) => {
                present[i] = None;
                Lpm6Change::Delete(p, d)
            }
            None => {
                present[i] = Some(0);
                Lpm6Change::Add(p, d, hs[0])
            }
        };
        let version = Lpm6Change::Add(sentinel, 64, VERSION + 1 + changes as u32);
        w.apply(&[change, version]).expect("change");
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
    assert!(w.swaps() >= 4000, "{} swaps", w.swaps());
}
