//! What the flow cache (`hooks::rules::flow_cache`) costs and saves: the
//! nanoseconds per key of classifying bursts of 32 keys through a worker's
//! cache, on and off, on 64, 100,000 and 1,000,000 flows sent in turn (each
//! flow's packets one whole round apart, as the benchmark's pcaps do).
//!
//! ```text
//! cargo run --release -p hooks --example flow_cache_bench [RULES]
//! ```
//!
//! The classifier is the linear reference over RULES rules (default 16)
//! that no key matches, so every key is tried against each: 16 cost about
//! 28 ns per key here, what DPDK's ACL costs with the benchmark's rules
//! (50-70 cycles, bench/RESULTS.md). Fewer rules make a cheaper
//! classifier, the harsher case for the cache (its misses cost the same
//! whatever the classifier). Prints one line per flow count: CPU ns per
//! key off, on, their ratio, and the hits and bypassed keys of the run
//! with it on (best of 3 alternated runs each).

use hooks::rules::{CachedClassifier, Key, LinearClassifier, MatchRule, Prefix};

/// This thread's time on a CPU so far, in ns (the machine is shared:
/// wall time would count the other processes' turns).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat")
}

const BURST: usize = 32;
/// Keys classified per measurement.
const KEYS: usize = 8_000_000;

/// Flow `i`'s key: UDP, a source and ports of its own.
fn key(i: u32) -> Key {
    let mut b = [0u8; 32];
    b[0] = 17;
    b[3] = hooks::rules::FLAG_L4;
    b[4..8].copy_from_slice(&(0x0a00_0000 | i >> 8).to_be_bytes());
    b[8..12].copy_from_slice(&0xc633_6409u32.to_be_bytes());
    b[12..14].copy_from_slice(&(1024 + (i & 0xff) as u16).to_be_bytes());
    b[14..16].copy_from_slice(&53u16.to_be_bytes());
    Key::from_bytes(b)
}

/// `n` rules on a destination prefix no key has.
fn rules(n: usize) -> Vec<MatchRule> {
    (0..n)
        .map(|i| MatchRule {
            dst: Some(Prefix::new(0xac10_0000 | (i as u32) << 4, 28)),
            proto: Some(17),
            ..MatchRule::any()
        })
        .collect()
}

/// ns per key classifying `KEYS` keys of `flows` flows in turn.
fn run(c: &CachedClassifier, flows: u32) -> f64 {
    let keys: Vec<Key> = (0..flows.max(BURST as u32))
        .map(|i| key(i % flows))
        .collect();
    let mut cache = c.cache(0);
    let mut results = [0u32; BURST];
    let mut at = 0;
    let mut sum = 0u64;
    // One round first (the cache warm, as in steady state), then measure.
    let warm = keys.len().min(KEYS);
    let mut go = |n: usize, at: &mut usize, sum: &mut u64| {
        for _ in 0..n / BURST {
            if *at + BURST > keys.len() {
                *at = 0;
            }
            c.classify(&mut cache, &keys[*at..*at + BURST], &mut results);
            *sum += u64::from(results[0]);
            *at += BURST;
        }
    };
    go(warm, &mut at, &mut sum);
    let t = cpu_ns();
    go(KEYS, &mut at, &mut sum);
    let ns = (cpu_ns() - t) as f64 / KEYS as f64;
    std::hint::black_box(sum);
    ns
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(16);
    let rules = rules(n);
    let classifier = || Box::new(LinearClassifier::new(&rules).expect("valid rules"));
    println!("{n} rules, bursts of {BURST}, {KEYS} keys per run (ns per key)");
    println!(
        "{:>9} {:>8} {:>8} {:>7} {:>12} {:>12}",
        "flows", "off", "on", "on/off", "hits", "bypassed"
    );
    for flows in [64u32, 100_000, 1_000_000] {
        let off = CachedClassifier::new(classifier(), 1, 0);
        let on = CachedClassifier::new(classifier(), 1, hooks::rules::flow_cache::DEFAULT_SLOTS);
        // Alternated, best of 3 each.
        let (mut t_off, mut t_on) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            t_off = t_off.min(run(&off, flows));
            t_on = t_on.min(run(&on, flows));
        }
        let s = on.stats();
        println!(
            "{flows:>9} {t_off:>8.2} {t_on:>8.2} {:>7.3} {:>12} {:>12}",
            t_on / t_off,
            s.hits,
            s.bypassed
        );
    }
}
