//! An exact-match cache in front of a [`Classifier`], like Open vSwitch's
//! EMC: per worker, a direct-mapped table from a packet's whole 32-byte
//! [`Key`] to the classifier's answer for it. The only exact-match cache
//! of the hooks: each worker owns its [`FlowCache`] (in its `HookWorker` of the
//! hook) and hands it over as `&mut`, so a lookup takes no lock.
//!
//! # Never stale
//!
//! A rule set is fixed for the life of a hook instance (a reload builds a
//! new instance, with an empty cache), and the answer depends on nothing but
//! the key, so a hit is the classifier's answer, never a stale one.
//!
//! # Why
//!
//! DPDK's ACL costs the same per packet whatever the traffic; most
//! traffic is a few flows at a time, and a hit costs only a hash, one slot
//! read and a 32-byte compare (bench/RESULTS.md, hooks, has the figures).
//! The misses of a burst go to the classifier in one call.
//!
//! # Bypass
//!
//! Traffic of many more flows than slots (e.g. 100,000 flows in turn)
//! misses nearly always, and a miss costs the hash, the compare and the
//! refill on top of the classifier. One rule bypasses it: a worker whose
//! cache hit fewer than one in [`BYPASS_BELOW`] of the last [`WINDOW`]
//! lookups sends the next [`BYPASS_BURSTS`] bursts straight to the
//! classifier, then tries again. `flow_cache = 0` turns the cache off.

use super::classifier::{Answers, Classifier};
use super::key::Key;
use super::key6::Key6;
use crate::worker_counters::WorkerCounters;
use crate::{HookArgs, HookBuildError, MAX_BURST};

/// Slots per worker unless a hook's `flow_cache` says otherwise: 4,096 x
/// 36 bytes (a filter's; a classify's holds 48) = 144 KiB, well inside a
/// core's L2.
pub const DEFAULT_SLOTS: usize = 4096;
/// The most slots a hook may ask for per worker: 1,048,576 x 36 bytes =
/// 36 MiB (48 MiB for a classify; allocated at each worker's quiescent
/// point when the hook arrives; a reload makes the new hook's before the
/// old one's is freed).
pub const MAX_SLOTS: usize = 1 << 20;
/// Lookups a worker's hit rate is judged over.
pub const WINDOW: u32 = 4096;
/// A window with fewer hits than one in this many lookups is a thrashing
/// cache: what its misses add outweighs what its hits save (the break-even,
/// measured, is in bench/RESULTS.md).
pub const BYPASS_BELOW: u32 = 8;
/// Bursts a thrashing worker sends straight to the classifier before it
/// tries the cache again.
pub const BYPASS_BURSTS: u32 = 4096;

/// What a cache holds for a key: the classifier's answer of one rule set
/// (`u32`: 1 + rule index, 0 = no match) or of each of its sets
/// ([`Answers`], [`Classifier::classify_sets`]).
pub trait Answer: Copy + Default + Send + 'static {
    /// The classifier's answers for `keys`.
    fn classify(c: &dyn Classifier, keys: &[Key], out: &mut [Self]);

    /// The same for IPv6 keys.
    fn classify6(c: &dyn Classifier, keys: &[Key6], out: &mut [Self]);
}

impl Answer for u32 {
    #[inline(always)]
    fn classify(c: &dyn Classifier, keys: &[Key], out: &mut [u32]) {
        c.classify(keys, out)
    }

    #[inline(always)]
    fn classify6(c: &dyn Classifier, keys: &[Key6], out: &mut [u32]) {
        c.classify6(keys, out)
    }
}

impl Answer for Answers {
    #[inline(always)]
    fn classify(c: &dyn Classifier, keys: &[Key], out: &mut [Answers]) {
        c.classify_sets(keys, out)
    }

    #[inline(always)]
    fn classify6(c: &dyn Classifier, keys: &[Key6], out: &mut [Answers]) {
        c.classify_sets6(keys, out)
    }
}

#[derive(Clone, Copy)]
struct Slot<A> {
    /// [`Key::UNUSED`] in a slot never filled: no packet's key equals it.
    key: Key,
    /// The classifier's answer for `key`.
    result: A,
}

impl<A: Default> Default for Slot<A> {
    fn default() -> Self {
        Slot {
            key: Key::UNUSED,
            result: A::default(),
        }
    }
}

// The counters a worker publishes for its caches (IPv4's and IPv6's).
pub(super) const HITS: usize = 0;
pub(super) const MISSES: usize = 1;
pub(super) const BYPASSED: usize = 2;

/// One worker's cache: its slots and its bypass state. The worker owns it
/// (a hook's `HookWorker` on that worker) and passes it as `&mut`: no lock.
pub struct FlowCache<A = u32> {
    worker: usize,
    slots: Box<[Slot<A>]>,
    /// `slots.len() - 1` (a power of two).
    mask: usize,
    /// Lookups and hits of the current window.
    window: u32,
    window_hits: u32,
    /// Bursts left to send past the cache.
    bypass_bursts: u32,
    /// The misses of one chunk, kept between bursts (each chunk writes the
    /// elements it reads).
    missed: Box<Misses<A>>,
}

/// A chunk's misses: their keys, slots, places in the chunk and answers.
struct Misses<A> {
    keys: [Key; MAX_BURST],
    slot: [usize; MAX_BURST],
    at: [u8; MAX_BURST],
    answers: [A; MAX_BURST],
}

impl<A> FlowCache<A> {
    /// Slots (0: no cache).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }
}

impl<A: Copy> FlowCache<A> {
    /// The answer cached for `key`, if any: a hash, one slot read and a
    /// 32-byte compare. For a caller that keys and acts on each packet in
    /// one pass ([`CachedClassifier::begin`] first).
    #[inline(always)]
    pub fn get(&self, key: &Key) -> Option<A> {
        self.get_words(&key.words())
    }

    /// [`FlowCache::get`] of the key of words `w` ([`Key::words`]), as
    /// [`Key::plain_words`] makes them: hashed and compared in registers.
    #[inline(always)]
    pub fn get_words(&self, w: &[u64; 4]) -> Option<A> {
        let slot = self.slots.get(slot_of_words(w, self.mask))?;
        let k = slot.key.words();
        let differ = (k[0] ^ w[0]) | (k[1] ^ w[1]) | (k[2] ^ w[2]) | (k[3] ^ w[3]);
        (differ == 0).then_some(slot.result)
    }
}

/// Counts summed over workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Keys classified without the cache while it thrashed.
    pub bypassed: u64,
}

/// A classifier, shared by every worker, and what the per-worker
/// exact-match caches in front of it ([`FlowCache`], one per worker, made by
/// [`CachedClassifier::cache`]) publish.
pub struct CachedClassifier {
    pub(super) inner: Box<dyn Classifier>,
    /// Slots of each worker's cache (0: no cache).
    pub(super) slots: usize,
    /// Hits, misses and bypassed keys per worker, written by that worker
    /// with plain stores.
    pub(super) counts: WorkerCounters<3>,
}

/// Is `slots` a size the cache takes: 0 (off) or a power of two up to
/// [`MAX_SLOTS`]?
pub fn valid_slots(slots: usize) -> bool {
    slots == 0 || (slots.is_power_of_two() && slots <= MAX_SLOTS)
}

/// The hook parameter that sizes the cache.
pub const PARAM: &str = "flow_cache";

/// Slots per worker from a hook's `flow_cache` parameter
/// ([`DEFAULT_SLOTS`] when absent).
pub fn slots_param(args: &HookArgs) -> Result<usize, HookBuildError> {
    match args.params.get(PARAM) {
        None => Ok(DEFAULT_SLOTS),
        Some(toml::Value::Integer(i)) if usize::try_from(*i).is_ok_and(valid_slots) => {
            Ok(*i as usize)
        }
        Some(v) => Err(HookBuildError::param(
            PARAM,
            format!(
                "expected exact-match cache slots per worker: 0 (off) or a power of two \
                 up to {MAX_SLOTS}, found {v}"
            ),
        )),
    }
}

impl CachedClassifier {
    /// `inner` with caches of `slots` slots for `workers` workers; 0 slots,
    /// or a size [`valid_slots`] refuses, means no cache.
    pub fn new(inner: Box<dyn Classifier>, workers: usize, slots: usize) -> CachedClassifier {
        let on = slots > 0 && valid_slots(slots);
        CachedClassifier {
            inner,
            slots: if on { slots } else { 0 },
            counts: WorkerCounters::new(workers),
        }
    }

    /// Slots per worker (0: no cache).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// An empty cache for worker `worker` (allocates its slots: at the
    /// worker's quiescent point, never per burst).
    pub fn cache<A: Copy + Default>(&self, worker: usize) -> FlowCache<A> {
        FlowCache {
            worker,
            slots: vec![Slot::default(); self.slots].into_boxed_slice(),
            mask: self.slots.wrapping_sub(1),
            window: 0,
            window_hits: 0,
            bypass_bursts: 0,
            missed: Box::new(Misses {
                keys: [Key::default(); MAX_BURST],
                slot: [0; MAX_BURST],
                at: [0; MAX_BURST],
                answers: [A::default(); MAX_BURST],
            }),
        }
    }

    /// As [`Classifier::classify`], through the calling worker's `cache`:
    /// the answers of keys in it come from there, the rest from the
    /// classifier in one call per [`MAX_BURST`] keys, and go into it. A
    /// cache of no slots asks the classifier for every key.
    ///
    /// The one bypass rule: a cache that hit fewer than one in
    /// [`BYPASS_BELOW`] of its last [`WINDOW`] lookups sends the next
    /// [`BYPASS_BURSTS`] calls straight to the classifier, then tries again.
    #[inline]
    pub fn classify<A: Answer>(&self, cache: &mut FlowCache<A>, keys: &[Key], results: &mut [A]) {
        let n = keys.len().min(results.len());
        if self.goes_past(cache.slots.len(), &mut cache.bypass_bursts, cache.worker, n) {
            A::classify(&*self.inner, &keys[..n], &mut results[..n]);
            return;
        }
        let mut hits = 0;
        for (keys, results) in keys[..n]
            .chunks(MAX_BURST)
            .zip(results[..n].chunks_mut(MAX_BURST))
        {
            hits += self.classify_chunk(cache, keys, results);
        }
        self.end(cache, n, hits);
    }

    /// Whether this burst goes through `cache` ([`FlowCache::get`] per key,
    /// then [`CachedClassifier::fill`] with the misses and
    /// [`CachedClassifier::end`]): false when it has no slots or bypasses
    /// them (this burst is then counted as one of the bypass), and the
    /// caller asks [`CachedClassifier::classify`] instead.
    #[inline(always)]
    pub fn begin<A>(&self, cache: &FlowCache<A>) -> bool {
        !cache.slots.is_empty() && cache.bypass_bursts == 0
    }

    /// The misses of a burst that went through `cache` (at most
    /// [`MAX_BURST`]): their answers from the classifier in one call, into
    /// `results` and the cache.
    #[inline]
    pub fn fill<A: Answer>(&self, cache: &mut FlowCache<A>, keys: &[Key], results: &mut [A]) {
        let n = keys.len().min(results.len()).min(MAX_BURST);
        if n == 0 {
            return;
        }
        A::classify(&*self.inner, &keys[..n], &mut results[..n]);
        for (k, r) in keys[..n].iter().zip(&results[..n]) {
            let s = slot_of(k, cache.mask);
            if let Some(slot) = cache.slots.get_mut(s) {
                *slot = Slot {
                    key: *k,
                    result: *r,
                };
            }
        }
    }

    /// [`CachedClassifier::fill`] for a cache of what the answers lead
    /// to rather than the answers: the misses' answers from the classifier
    /// in one call into `answers`, `map` of each into `results` and the
    /// cache (`map` runs once per miss, never per hit).
    #[inline]
    pub fn fill_mapped<A: Answer, O: Copy>(
        &self,
        cache: &mut FlowCache<O>,
        keys: &[Key],
        answers: &mut [A],
        results: &mut [O],
        map: impl Fn(&A) -> O,
    ) {
        let n = keys
            .len()
            .min(answers.len())
            .min(results.len())
            .min(MAX_BURST);
        if n == 0 {
            return;
        }
        A::classify(&*self.inner, &keys[..n], &mut answers[..n]);
        for ((k, a), r) in keys[..n].iter().zip(&answers[..n]).zip(&mut results[..n]) {
            *r = map(a);
            let s = slot_of(k, cache.mask);
            if let Some(slot) = cache.slots.get_mut(s) {
                *slot = Slot {
                    key: *k,
                    result: *r,
                };
            }
        }
    }

    /// The classifier's answers for `keys`, past a worker's `cache` of any
    /// kind: for a burst [`CachedClassifier::begin`] turned away (no
    /// slots, or bypassing them), counted as bypassed as
    /// [`CachedClassifier::classify`] counts it. A cache in use is not
    /// read or filled either: the answers are the classifier's all the
    /// same.
    #[inline]
    pub fn classify_past<A: Answer, O>(
        &self,
        cache: &mut FlowCache<O>,
        keys: &[Key],
        results: &mut [A],
    ) {
        let n = keys.len().min(results.len());
        self.goes_past(cache.slots.len(), &mut cache.bypass_bursts, cache.worker, n);
        A::classify(&*self.inner, &keys[..n], &mut results[..n]);
    }

    /// Whether a call of `n` keys goes past a worker's cache (of `slots`
    /// slots, `bypass_bursts` left to bypass) straight to the classifier:
    /// it has no slots, or it is bypassing them (the call then counted as
    /// one of the bypass, for either family's cache).
    #[inline(always)]
    pub(super) fn goes_past(
        &self,
        slots: usize,
        bypass_bursts: &mut u32,
        worker: usize,
        n: usize,
    ) -> bool {
        if slots == 0 {
            return true;
        }
        if *bypass_bursts == 0 {
            return false;
        }
        *bypass_bursts -= 1;
        self.counts.add(worker, BYPASSED, n as u64);
        true
    }

    /// The end of a burst that went through `cache`: `lookups` keys of
    /// which `hits` hit, for the bypass rule's window and the counters.
    #[inline]
    pub fn end<A>(&self, cache: &mut FlowCache<A>, lookups: usize, hits: usize) {
        let window = (&mut cache.window, &mut cache.window_hits);
        self.end_window(
            cache.worker,
            window,
            &mut cache.bypass_bursts,
            lookups,
            hits,
        );
    }

    /// The end of a burst of either family's cache on `worker`: its window
    /// (lookups and hits so far) and bypass state judged, the counters.
    #[inline(always)]
    pub(super) fn end_window(
        &self,
        worker: usize,
        (window, window_hits): (&mut u32, &mut u32),
        bypass_bursts: &mut u32,
        lookups: usize,
        hits: usize,
    ) {
        *bypass_bursts = judge_window(window, window_hits, *bypass_bursts, lookups, hits);
        self.counts.add(worker, HITS, hits as u64);
        self.counts.add(worker, MISSES, (lookups - hits) as u64);
    }

    /// Up to [`MAX_BURST`] keys: the hits from the cache, the misses from
    /// the classifier in one call, then into the cache. Returns the hits.
    #[inline]
    fn classify_chunk<A: Answer>(
        &self,
        cache: &mut FlowCache<A>,
        keys: &[Key],
        results: &mut [A],
    ) -> usize {
        let Misses {
            keys: missed,
            slot: missed_slot,
            at: missed_at,
            answers,
        } = &mut *cache.missed;
        let mut m = 0;
        for (i, (k, r)) in keys.iter().zip(results.iter_mut()).enumerate() {
            let s = slot_of(k, cache.mask);
            match cache.slots.get(s) {
                Some(slot) if slot.key == *k => *r = slot.result,
                _ => {
                    missed[m] = *k;
                    missed_slot[m] = s;
                    missed_at[m] = i as u8;
                    m += 1;
                }
            }
        }
        if m == 0 {
            return keys.len();
        }
        A::classify(&*self.inner, &missed[..m], &mut answers[..m]);
        for j in 0..m {
            results[usize::from(missed_at[j])] = answers[j];
            if let Some(slot) = cache.slots.get_mut(missed_slot[j]) {
                *slot = Slot {
                    key: missed[j],
                    result: answers[j],
                };
            }
        }
        keys.len() - m
    }

    /// Counts so far, summed over workers (what they published).
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.counts.sum(HITS),
            misses: self.counts.sum(MISSES),
            bypassed: self.counts.sum(BYPASSED),
        }
    }

    /// The statistics lines of a hook with this classifier: none without a
    /// cache.
    pub fn stat_lines(&self) -> Vec<(&'static str, u64)> {
        self.stat_lines_beside(None)
    }

    /// [`CachedClassifier::stat_lines`] with `also`'s counts added: a
    /// linked classify's lookahead classifier and its own, whose IPv6 cache
    /// ([`FlowCache6`](super::FlowCache6)) stays in front of it.
    pub fn stat_lines_beside(&self, also: Option<&CachedClassifier>) -> Vec<(&'static str, u64)> {
        if self.slots() == 0 {
            return Vec::new();
        }
        let mut c = self.stats();
        if let Some(o) = also {
            let s = o.stats();
            c.hits += s.hits;
            c.misses += s.misses;
            c.bypassed += s.bypassed;
        }
        vec![
            ("flow_cache_hits", c.hits),
            ("flow_cache_misses", c.misses),
            ("flow_cache_bypassed", c.bypassed),
        ]
    }
}

/// The bypass rule over a cache's window (`window` lookups, `hits` of them
/// hit) after a burst of `lookups` keys, `hits` of them hits: the bursts
/// to bypass from now on (`bypass` unless the window just closed thrashing).
#[inline(always)]
pub(super) fn judge_window(
    window: &mut u32,
    window_hits: &mut u32,
    bypass: u32,
    lookups: usize,
    hits: usize,
) -> u32 {
    *window += lookups as u32;
    *window_hits += hits as u32;
    if *window < WINDOW {
        return bypass;
    }
    let thrashing = *window_hits * BYPASS_BELOW < *window;
    *window = 0;
    *window_hits = 0;
    if thrashing {
        BYPASS_BURSTS
    } else {
        bypass
    }
}

/// The slot of `k`: its four 8-byte words mixed by two multiplications,
/// high bits folded down.
#[inline(always)]
fn slot_of(k: &Key, mask: usize) -> usize {
    slot_of_words(&k.words(), mask)
}

/// [`slot_of`] the key of words `w` ([`Key::words`]).
#[inline(always)]
pub(super) fn slot_of_words(w: &[u64; 4], mask: usize) -> usize {
    let a = (w[0] ^ w[2].rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let c = (w[1] ^ w[3].rotate_left(41)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    let h = a ^ c.rotate_left(31);
    ((h ^ (h >> 29)) >> 16) as usize & mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{LinearClassifier, MatchRule, Prefix};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;

    /// A classifier that counts the keys it is asked about.
    struct Counting(LinearClassifier, Arc<AtomicU64>);
    impl Classifier for Counting {
        fn classify(&self, keys: &[Key], results: &mut [u32]) {
            self.1.fetch_add(keys.len() as u64, Relaxed);
            self.0.classify(keys, results);
        }

        fn classify6(&self, keys: &[crate::rules::Key6], results: &mut [u32]) {
            self.0.classify6(keys, results);
        }
    }

    /// One key per match field: the base key (TCP with ports read) with
    /// that one field changed, and a rule that matches exactly that
    /// change. The base key matches no rule, every other key a rule of its
    /// own: keys differing in any one field get different answers.
    fn field_keys() -> (Vec<Key>, Vec<MatchRule>) {
        let mut base = [0u8; 32];
        base[0] = 6; // TCP
        base[3] = crate::rules::FLAG_L4;
        let any = MatchRule::any;
        // (byte, value, the rule that matches the key with that byte)
        let fields: Vec<(usize, u8, MatchRule)> = vec![
            (
                0,
                17,
                MatchRule {
                    proto: Some(17),
                    ..any()
                },
            ),
            (
                1,
                0x02,
                MatchRule {
                    tcp_flags: Some((0x02, 0x02)),
                    ..any()
                },
            ),
            (
                2,
                46,
                MatchRule {
                    dscp: Some((46, 46)),
                    ..any()
                },
            ),
            (
                3,
                crate::rules::FLAG_L4 | crate::rules::CT_NEW,
                MatchRule {
                    ct_states: crate::rules::CT_NEW,
                    ..any()
                },
            ),
            (
                4,
                10,
                MatchRule {
                    src: Some(Prefix::new(0x0a00_0000, 8)),
                    ..any()
                },
            ),
            (
                8,
                10,
                MatchRule {
                    dst: Some(Prefix::new(0x0a00_0000, 8)),
                    ..any()
                },
            ),
            (
                13,
                7,
                MatchRule {
                    sport: Some((7, 7)),
                    ..any()
                },
            ),
            (
                15,
                7,
                MatchRule {
                    dport: Some((7, 7)),
                    ..any()
                },
            ),
            (
                17,
                3,
                MatchRule {
                    in_port: Some((3, 3)),
                    ..any()
                },
            ),
            (
                19,
                3,
                MatchRule {
                    out_port: Some((3, 3)),
                    ..any()
                },
            ),
            (
                21,
                5,
                MatchRule {
                    vlan: Some((5, 5)),
                    ..any()
                },
            ),
            (
                23,
                9,
                MatchRule {
                    class: Some((9, 9)),
                    ..any()
                },
            ),
            (
                27,
                7,
                MatchRule {
                    mark: Some((7, 7)),
                    ..any()
                },
            ),
        ];
        let mut keys = vec![Key::from_bytes(base)];
        let mut rules = Vec::new();
        for (at, v, rule) in fields {
            let mut b = base;
            b[at] = v;
            keys.push(Key::from_bytes(b));
            rules.push(rule);
        }
        (keys, rules)
    }

    /// The rules of [`field_keys`].
    fn rules() -> Vec<MatchRule> {
        field_keys().1
    }

    /// Key `seed` of the pool of [`field_keys`].
    fn key(seed: u64) -> Key {
        let (keys, _) = field_keys();
        keys[(seed % keys.len() as u64) as usize]
    }

    fn cached(slots: usize) -> (CachedClassifier, LinearClassifier, Arc<AtomicU64>) {
        let linear = LinearClassifier::new(&rules()).unwrap();
        let asked = Arc::new(AtomicU64::new(0));
        let c = CachedClassifier::new(Box::new(Counting(linear.clone(), asked.clone())), 2, slots);
        (c, linear, asked)
    }

    #[test]
    fn answers_equal_the_classifiers_through_collisions_and_refills() {
        // 8 slots and 14 keys, each differing from the base key in one
        // field and answered by a rule of its own: every slot is fought
        // over, and a cache that compared less than the whole key would
        // give one key another's answer.
        let (keys, _) = field_keys();
        let linear_check = LinearClassifier::new(&rules()).unwrap();
        let mut answers: Vec<u32> = vec![0; keys.len()];
        linear_check.classify(&keys, &mut answers);
        answers.sort_unstable();
        answers.dedup();
        assert_eq!(answers.len(), keys.len(), "every key its own answer");
        let (c, linear, _) = cached(8);
        let mut caches = [c.cache(0), c.cache(1)];
        let mut rng = fastrand::Rng::with_seed(0x2545_f491_4f6c_dd1d);
        for _ in 0..2_000 {
            let mut keys = [Key::default(); 40];
            for k in keys.iter_mut() {
                *k = key(rng.u64(..));
            }
            let mut got = [u32::MAX; 40];
            c.classify(&mut caches[rng.usize(..2)], &keys, &mut got);
            let mut want = [0u32; 40];
            linear.classify(&keys, &mut want);
            assert_eq!(got, want, "keys {keys:?}");
        }
        let s = c.stats();
        assert_eq!((s.hits + s.misses, s.bypassed), (80_000, 0), "{s:?}");
        assert!(s.hits > 10_000 && s.misses > 10_000, "{s:?}");
    }

    #[test]
    fn a_key_differing_in_any_one_field_misses_the_slot_of_the_other() {
        // One slot: every key lands on it. The base key fills it, then each
        // field's key must miss it and get its own answer, both ways round.
        let (keys, rules) = field_keys();
        let linear = LinearClassifier::new(&rules).unwrap();
        let c = CachedClassifier::new(Box::new(linear.clone()), 1, 1);
        let mut caches = [c.cache(0)];
        for k in &keys[1..] {
            for pair in [[keys[0], *k], [*k, keys[0]]] {
                for key in pair {
                    let mut got = [u32::MAX];
                    c.classify(&mut caches[0], &[key], &mut got);
                    assert_eq!(got[0], linear.classify_one(&key), "{key:?}");
                }
            }
        }
        // The first base key, then each key after the other of its pair.
        assert_eq!(c.stats().misses, 1 + 2 * (keys.len() as u64 - 1));
    }

    #[test]
    fn a_repeated_key_is_asked_once_and_then_hits() {
        let (c, linear, asked) = cached(DEFAULT_SLOTS);
        let mut caches = [c.cache(0), c.cache(1)];
        let keys: Vec<Key> = (0..16).map(key).collect();
        let mut want = vec![0u32; 16];
        linear.classify(&keys, &mut want);
        for round in 0..3 {
            let mut got = vec![0u32; 16];
            c.classify(&mut caches[0], &keys, &mut got);
            assert_eq!(got, want, "round {round}");
        }
        assert_eq!(asked.load(Relaxed), 16, "only the first round asks");
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 32,
                misses: 16,
                bypassed: 0
            }
        );
        // Worker 1 has a cache of its own.
        let mut got = vec![0u32; 16];
        c.classify(&mut caches[1], &keys, &mut got);
        assert_eq!(asked.load(Relaxed), 32);
    }

    /// Empty slots hold `Key::UNUSED`, which no key a packet can have
    /// equals: the all-zero key and the key of all ones (as far as a key
    /// can be) miss an empty cache and are asked about, in every slot.
    #[test]
    fn an_empty_slot_answers_no_key() {
        let (c, _, asked) = cached(16);
        let mut cache = c.cache(0);
        let zero = Key::default();
        let ones = Key::from_bytes([0xff; 32]);
        assert_ne!(ones, Key::UNUSED);
        let mut keys: Vec<Key> = vec![zero, ones];
        // Keys spread over the slots, with bytes 0..28 all ones but one.
        keys.extend((0..28).map(|i| {
            let mut b = [0xff; 32];
            b[i] = 0;
            Key::from_bytes(b)
        }));
        let mut got = vec![0u32; keys.len()];
        c.classify(&mut cache, &keys, &mut got);
        assert_eq!(asked.load(Relaxed), keys.len() as u64, "every key misses");
    }

    #[test]
    fn no_cache_for_zero_slots_and_one_for_any_worker() {
        let (c, _, asked) = cached(0);
        let mut caches = [c.cache(0)];
        assert_eq!(c.slots(), 0);
        let keys = [key(1); 4];
        let mut got = [0u32; 4];
        c.classify(&mut caches[0], &keys, &mut got);
        c.classify(&mut caches[0], &keys, &mut got);
        assert_eq!(asked.load(Relaxed), 8);
        assert_eq!(c.stats(), CacheStats::default());
        // A worker beyond those the hook was built for has a cache too
        // (its counts go to the last worker's line).
        let (c, _, asked) = cached(64);
        assert_eq!(c.slots(), 64);
        let mut caches = [c.cache(5)];
        c.classify(&mut caches[0], &keys, &mut got);
        c.classify(&mut caches[0], &keys, &mut got);
        assert_eq!(asked.load(Relaxed), 4, "the second call hits");
        assert_eq!(c.stats().hits, 4);
    }

    #[test]
    fn more_keys_than_a_burst_and_short_results() {
        let (c, linear, _) = cached(16);
        let mut caches = [c.cache(0)];
        let keys: Vec<Key> = (0..100).map(|i| key(i * 7)).collect();
        let mut want = vec![0u32; 100];
        linear.classify(&keys, &mut want);
        let mut got = vec![u32::MAX; 90];
        c.classify(&mut caches[0], &keys, &mut got);
        assert_eq!(got[..], want[..90]);
    }

    #[test]
    fn a_thrashing_cache_is_bypassed_for_a_while_then_tried_again() {
        // 16 slots, keys all different: every lookup misses.
        let (c, linear, asked) = cached(16);
        let mut caches = [c.cache(0)];
        let burst = |b: u64| -> Vec<Key> {
            (0..32)
                .map(|i| {
                    let mut k = *key(0).as_bytes();
                    k[24..28].copy_from_slice(&((b * 32 + i) as u32).to_be_bytes());
                    Key::from_bytes(k)
                })
                .collect()
        };
        let window_bursts = u64::from(WINDOW) / 32;
        let total = window_bursts + u64::from(BYPASS_BURSTS) + 1;
        for b in 0..total {
            let keys = burst(b);
            let mut got = vec![u32::MAX; 32];
            c.classify(&mut caches[0], &keys, &mut got);
            let mut want = vec![0u32; 32];
            linear.classify(&keys, &mut want);
            assert_eq!(got, want);
        }
        let s = c.stats();
        assert_eq!(s.hits, 0);
        assert_eq!(s.bypassed, u64::from(BYPASS_BURSTS) * 32, "{s:?}");
        assert_eq!(s.misses, (window_bursts + 1) * 32, "tried again after");
        assert_eq!(asked.load(Relaxed), total * 32);
        // A cache that hits is never bypassed.
        let (c, _, _) = cached(64);
        let mut caches = [c.cache(0)];
        let keys: Vec<Key> = (0..32).map(key).collect();
        let mut got = vec![0u32; 32];
        for _ in 0..2 * window_bursts {
            c.classify(&mut caches[0], &keys, &mut got);
        }
        assert_eq!(c.stats().bypassed, 0);
    }

    #[test]
    fn sizes() {
        assert!(valid_slots(0) && valid_slots(1) && valid_slots(4096) && valid_slots(MAX_SLOTS));
        assert!(!valid_slots(3) && !valid_slots(MAX_SLOTS * 2));
    }
}
