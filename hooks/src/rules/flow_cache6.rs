//! The flow cache for IPv6 keys: what [`FlowCache`](super::FlowCache) is to
//! IPv4's 32-byte [`Key`](super::Key), for the 64-byte [`Key6`], in front
//! of the same classifier's IPv6 contexts ([`Classifier::classify6`](super::Classifier::classify6)).
//! Two-way: a key is looked for in its slot and the slot's pair.
//!
//! The same rules as IPv4's cache (the module doc of
//! [`flow_cache`](super::flow_cache)): per worker, never
//! stale (a rule set is fixed for the life of a hook instance), the misses
//! of a burst classified in one call, the same bypass rule over its own
//! window, the same `flow_cache` size and counters (`flow_cache_hits`,
//! `_misses` and `_bypassed` count both families). A slot is the 64-byte
//! key and what is kept for it (68 bytes for an answer, 80 for
//! `classify`'s outcome): 4,096 slots are 272 or 320 KiB per worker,
//! allocated with IPv4's when the hook arrives on the worker. Like IPv4's,
//! it keeps the first rule set's answer, every set's
//! ([`Classifier::classify_sets6`](super::Classifier::classify_sets6)), or
//! what a hook makes of them (`classify`'s outcomes, lookahead answers
//! included).

use super::flow_cache::Answer;
use super::{CachedClassifier, Key6};
use crate::MAX_BURST;

#[derive(Clone, Copy)]
struct Slot6<O> {
    /// [`UNUSED`] in a slot never filled.
    key: Key6,
    /// What the classifier's answer for `key` leads to (the answer itself
    /// in a cache of answers).
    result: O,
}

/// The key of an empty slot: no packet's key equals it (a key's bytes
/// 52..64 are zero).
const UNUSED: Key6 = Key6::from_bytes([0xff; 64]);

/// One worker's IPv6 cache: its slots, bypass state and a burst's misses.
/// It holds `O` for each key: the classifier's answer `A` (`u32`: of the
/// first rule set; [`Answers`](super::Answers): of every set), or what a
/// hook makes of it ([`CachedClassifier::classify6_mapped`]).
pub struct FlowCache6<O = u32, A = O> {
    worker: usize,
    slots: Box<[Slot6<O>]>,
    /// `slots.len() - 1` (a power of two).
    mask: usize,
    window: u32,
    window_hits: u32,
    bypass_bursts: u32,
    /// A chunk's misses: their keys, slots, places and answers (kept
    /// between bursts, each chunk writing what it reads).
    missed: Box<Misses6<A>>,
}

struct Misses6<A> {
    keys: [Key6; MAX_BURST],
    slot: [usize; MAX_BURST],
    at: [u8; MAX_BURST],
    answers: [A; MAX_BURST],
}

impl<O, A> FlowCache6<O, A> {
    /// Slots (0: no cache).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }
}

impl<O: Copy, A> FlowCache6<O, A> {
    /// What is kept for the key of words `w` ([`Key6::words`]), if
    /// anything, hashed and compared in registers: one lookup of a burst
    /// that went through the cache ([`CachedClassifier::begin6`]), its
    /// misses then filled in one call ([`CachedClassifier::fill6_mapped`]).
    #[inline(always)]
    pub fn get_words(&self, w: &[u64; 8]) -> Option<O> {
        let s = slot_of_words6(w, self.mask);
        // Words 0..7: word 7 (bytes 56..64) is zero in every packet's key,
        // and an empty slot's word 6 (all ones) differs from every packet's
        // (bytes 52..56 zero), so the last word decides nothing.
        let same = |slot: &Slot6<O>| {
            let k = slot.key.words();
            (0..7).fold(0, |d, i| d | (k[i] ^ w[i])) == 0
        };
        let first = self.slots.get(s)?;
        if same(first) {
            return Some(first.result);
        }
        let second = self.slots.get(s ^ 1)?;
        same(second).then_some(second.result)
    }
}

/// What is kept for `k`, whose slot is `s`, from `s` or its pair `s ^ 1`.
#[inline(always)]
fn find<O: Copy>(slots: &[Slot6<O>], s: usize, k: &Key6) -> Option<O> {
    let first = slots.get(s)?;
    if first.key.same(k) {
        return Some(first.result);
    }
    let second = slots.get(s ^ 1)?;
    second.key.same(k).then_some(second.result)
}

/// Keep `result` for `k` in `s`, or in its pair when `s` holds another key
/// and the pair none: two keys of one slot (64 flows in 4,096 slots have
/// such a pair two times in five) then both stay, where a direct-mapped
/// cache has them evict each other on every packet.
#[inline]
fn put<O>(slots: &mut [Slot6<O>], s: usize, k: &Key6, result: O) {
    // A packet's key has byte 63 zero, [`UNUSED`] has it 0xff.
    let taken = |at: usize| slots.get(at).is_some_and(|x| x.key.as_bytes()[63] == 0);
    let at = if taken(s) && !taken(s ^ 1) { s ^ 1 } else { s };
    if let Some(slot) = slots.get_mut(at) {
        *slot = Slot6 { key: *k, result };
    }
}

/// The slot of `k`: its first seven 8-byte words (the eighth is zero in
/// every packet's key) in two lanes, each word mixed in by a multiplication
/// and a rotation (so that every byte reaches the bits the slot is taken
/// from), high bits folded down.
#[inline(always)]
fn slot_of6(k: &Key6, mask: usize) -> usize {
    slot_of_words6(&k.words(), mask)
}

/// [`slot_of6`] the key of words `w` ([`Key6::words`]).
#[inline(always)]
fn slot_of_words6(w: &[u64; 8], mask: usize) -> usize {
    let w = |i: usize| w[i];
    let (mut a, mut c) = (0u64, 0u64);
    for i in 0..4 {
        a = (a ^ w(2 * i))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    }
    for i in 0..3 {
        c = (c ^ w(2 * i + 1))
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
            .rotate_left(27);
    }
    let h = a ^ c;
    ((h ^ (h >> 29)) >> 16) as usize & mask
}

impl CachedClassifier {
    /// An empty IPv6 cache for worker `worker`, of the IPv4 cache's slots
    /// (allocated at the worker's quiescent point, never per burst).
    pub fn cache6<O: Copy + Default, A: Answer>(&self, worker: usize) -> FlowCache6<O, A> {
        FlowCache6 {
            worker,
            slots: vec![
                Slot6 {
                    key: UNUSED,
                    result: O::default()
                };
                self.slots
            ]
            .into_boxed_slice(),
            mask: self.slots.wrapping_sub(1),
            window: 0,
            window_hits: 0,
            bypass_bursts: 0,
            missed: Box::new(Misses6 {
                keys: [Key6::default(); MAX_BURST],
                slot: [0; MAX_BURST],
                at: [0; MAX_BURST],
                answers: [A::default(); MAX_BURST],
            }),
        }
    }

    /// IPv6 keys' answers ([`Classifier::classify6`], or
    /// [`Classifier::classify_sets6`] for [`Answers`](super::Answers))
    /// through the calling worker's `cache`, as
    /// [`CachedClassifier::classify`] does for IPv4's.
    ///
    /// [`Classifier::classify6`]: super::Classifier::classify6
    /// [`Classifier::classify_sets6`]: super::Classifier::classify_sets6
    #[inline]
    pub fn classify6<A: Answer>(
        &self,
        cache: &mut FlowCache6<A, A>,
        keys: &[Key6],
        results: &mut [A],
    ) {
        self.classify6_mapped(cache, keys, results, |a| *a);
    }

    /// [`CachedClassifier::classify6`] for a cache of what the answers lead
    /// to: `map` of each key's answers into `results`, and into the cache
    /// for a key that missed (`map` runs once per miss, never per hit).
    #[inline]
    pub fn classify6_mapped<A: Answer, O: Copy>(
        &self,
        cache: &mut FlowCache6<O, A>,
        keys: &[Key6],
        results: &mut [O],
        map: impl Fn(&A) -> O,
    ) {
        let n = keys.len().min(results.len());
        if self.goes_past(cache.slots.len(), &mut cache.bypass_bursts, cache.worker, n) {
            let answers = &mut cache.missed.answers;
            for (keys, results) in keys[..n]
                .chunks(MAX_BURST)
                .zip(results[..n].chunks_mut(MAX_BURST))
            {
                let answers = &mut answers[..keys.len()];
                A::classify6(&*self.inner, keys, answers);
                for (r, a) in results.iter_mut().zip(answers.iter()) {
                    *r = map(a);
                }
            }
            return;
        }
        let mut hits = 0;
        for (keys, results) in keys[..n]
            .chunks(MAX_BURST)
            .zip(results[..n].chunks_mut(MAX_BURST))
        {
            hits += self.classify6_chunk(cache, keys, results, &map);
        }
        self.end6(cache, n, hits);
    }

    /// May a burst's IPv6 keys go through `cache` one at a time
    /// ([`FlowCache6::get_words`])? Not when the worker has no cache or it
    /// bypasses itself: then [`CachedClassifier::classify6_mapped`] takes
    /// the burst's keys whole.
    #[inline(always)]
    pub fn begin6<O, A>(&self, cache: &FlowCache6<O, A>) -> bool {
        !cache.slots.is_empty() && cache.bypass_bursts == 0
    }

    /// The misses of a burst that went through `cache` (at most
    /// [`MAX_BURST`]): their answers from the classifier in one call,
    /// `map` of each into `results` and the cache.
    #[inline]
    pub fn fill6_mapped<A: Answer, O: Copy>(
        &self,
        cache: &mut FlowCache6<O, A>,
        keys: &[Key6],
        results: &mut [O],
        map: impl Fn(&A) -> O,
    ) {
        let n = keys.len().min(results.len()).min(MAX_BURST);
        let answers = &mut cache.missed.answers[..n];
        A::classify6(&*self.inner, &keys[..n], answers);
        for ((k, a), r) in keys[..n].iter().zip(answers.iter()).zip(&mut results[..n]) {
            *r = map(a);
            put(&mut cache.slots, slot_of6(k, cache.mask), k, *r);
        }
    }

    /// The end of a burst that went through `cache`: `lookups` keys of
    /// which `hits` hit, for the bypass rule's window and the counters.
    #[inline]
    pub fn end6<O, A>(&self, cache: &mut FlowCache6<O, A>, lookups: usize, hits: usize) {
        let window = (&mut cache.window, &mut cache.window_hits);
        self.end_window(
            cache.worker,
            window,
            &mut cache.bypass_bursts,
            lookups,
            hits,
        );
    }

    /// Up to [`MAX_BURST`] keys: the hits from the cache, the misses from
    /// the classifier in one call, then mapped into `results` and the
    /// cache. Returns the hits.
    #[inline]
    fn classify6_chunk<A: Answer, O: Copy>(
        &self,
        cache: &mut FlowCache6<O, A>,
        keys: &[Key6],
        results: &mut [O],
        map: &impl Fn(&A) -> O,
    ) -> usize {
        let m6 = &mut *cache.missed;
        let mut m = 0;
        for (i, (k, r)) in keys.iter().zip(results.iter_mut()).enumerate() {
            let s = slot_of6(k, cache.mask);
            match find(&cache.slots, s, k) {
                Some(a) => *r = a,
                None => {
                    m6.keys[m] = *k;
                    m6.slot[m] = s;
                    m6.at[m] = i as u8;
                    m += 1;
                }
            }
        }
        if m == 0 {
            return keys.len();
        }
        A::classify6(&*self.inner, &m6.keys[..m], &mut m6.answers[..m]);
        for j in 0..m {
            let o = map(&m6.answers[j]);
            results[usize::from(m6.at[j])] = o;
            put(&mut cache.slots, m6.slot[j], &m6.keys[j], o);
        }
        keys.len() - m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::flow_cache::{BYPASS_BURSTS, WINDOW};
    use crate::rules::{Classifier, Key, LinearClassifier, MatchRule, Prefix6};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;

    /// A classifier that counts the IPv6 keys it is asked about.
    struct Counting(LinearClassifier, Arc<AtomicU64>);
    impl Classifier for Counting {
        fn classify(&self, keys: &[Key], results: &mut [u32]) {
            self.0.classify(keys, results);
        }

        fn classify6(&self, keys: &[Key6], results: &mut [u32]) {
            self.1.fetch_add(keys.len() as u64, Relaxed);
            self.0.classify6(keys, results);
        }
    }

    /// Rules on the destination's /64 and on the source port, so that keys
    /// differing in their last address bytes or their ports answer apart.
    fn rules() -> Vec<MatchRule> {
        let net = |i: u128| (0x2001_0db8_0000_0000_u128 + i) << 64;
        let mut v: Vec<MatchRule> = (0..8)
            .map(|i| MatchRule {
                dst6: Some(Prefix6::new(net(i), 64)),
                sport: Some((1000 + i as u16, 1000 + i as u16)),
                ..MatchRule::any()
            })
            .collect();
        v.push(MatchRule {
            src6: Some(Prefix6::new(net(9) | 0x55, 128)),
            ..MatchRule::any()
        });
        v
    }

    /// A UDP key from `src` to `dst`, source port `sport`.
    fn key(src: u128, dst: u128, sport: u16) -> Key6 {
        let mut b = [0u8; 64];
        b[0] = 17;
        b[3] = crate::rules::FLAG_L4;
        b[4..20].copy_from_slice(&src.to_be_bytes());
        b[20..36].copy_from_slice(&dst.to_be_bytes());
        b[36..38].copy_from_slice(&sport.to_be_bytes());
        b[38..40].copy_from_slice(&53u16.to_be_bytes());
        Key6::from_bytes(b)
    }

    fn cached(slots: usize) -> (CachedClassifier, Arc<AtomicU64>) {
        let asked = Arc::new(AtomicU64::new(0));
        let inner = Counting(LinearClassifier::new(&rules()).unwrap(), asked.clone());
        (CachedClassifier::new(Box::new(inner), 1, slots), asked)
    }

    /// Keys over every rule, the no-match case and keys one byte apart,
    /// in bursts of every size and order: the cached answers are the
    /// classifier's, each distinct key is classified once (no two of these
    /// collide in the most slots a hook may ask for), and the counters add
    /// up.
    #[test]
    fn answers_are_the_classifiers_and_a_second_pass_is_all_hits() {
        let net = |i: u128| (0x2001_0db8_0000_0000_u128 + i) << 64;
        let mut keys = Vec::new();
        for i in 0..10u128 {
            for sport in [1000 + i as u16, 999] {
                keys.push(key(net(9) | 0x55, net(i) | 1, sport));
                keys.push(key(net(9) | 0x56, net(i) | 1, sport));
                keys.push(key(net(9) | 0x55, net(i) | 2, sport));
            }
        }
        let linear = LinearClassifier::new(&rules()).unwrap();
        let mut want = vec![0u32; keys.len()];
        linear.classify6(&keys, &mut want);
        assert!(want.contains(&0) && want.iter().filter(|&&a| a != 0).count() > 20);

        let slots = crate::rules::flow_cache::MAX_SLOTS;
        let (c, asked) = cached(slots);
        let mut cache = c.cache6(0);
        assert_eq!(cache.slots(), slots);
        for pass in 0..2 {
            for size in [1, 7, MAX_BURST] {
                let mut got = vec![u32::MAX; keys.len()];
                for (k, r) in keys.chunks(size).zip(got.chunks_mut(size)) {
                    c.classify6(&mut cache, k, r);
                }
                assert_eq!(got, want, "pass {pass}, bursts of {size}");
            }
        }
        let distinct: std::collections::HashSet<&Key6> = keys.iter().collect();
        assert_eq!(asked.load(Relaxed), distinct.len() as u64);
        let s = c.stats();
        assert_eq!(s.hits + s.misses, 6 * keys.len() as u64);
        assert_eq!(s.misses, distinct.len() as u64);
    }

    /// One key at a time, as classify's one pass uses the cache: a key's
    /// words hit only once its miss was filled, with the classifier's
    /// answer, a key one bit away from it misses, and the counters are
    /// the lookups `end6` was told of.
    #[test]
    fn words_hit_what_a_filled_miss_put_and_nothing_else() {
        // One burst's misses (at most MAX_BURST).
        const N: usize = 32;
        let net = |i: u128| (0x2001_0db8_0000_0000_u128 + i) << 64;
        let keys: Vec<Key6> = (0..40u128)
            .map(|i| key(net(9) | 0x55, net(i % 10) | 1, 1000 + i as u16))
            .collect();
        let linear = LinearClassifier::new(&rules()).unwrap();
        let mut want = vec![0u32; keys.len()];
        linear.classify6(&keys, &mut want);
        let (c, asked) = cached(64);
        let mut cache = c.cache6::<u32, u32>(0);
        for k in &keys {
            assert!(c.begin6(&cache));
            assert_eq!(cache.get_words(&k.words()), None);
        }
        let mut got = vec![u32::MAX; keys.len()];
        c.fill6_mapped(&mut cache, &keys[..N], &mut got[..N], |a| *a);
        c.end6(&mut cache, keys.len(), 0);
        for (i, k) in keys.iter().enumerate().take(N) {
            // A slot pair keeps two keys: of these 32, most are kept.
            let kept = cache.get_words(&k.words());
            assert!(kept.is_none() || kept == Some(want[i]), "key {i}");
            let mut w = k.words();
            w[i % 7] ^= 1 << (i % 64);
            assert_eq!(cache.get_words(&w), None, "key {i} with a bit changed");
        }
        let hits = keys[..N]
            .iter()
            .filter(|k| cache.get_words(&k.words()).is_some())
            .count();
        assert!(hits > N / 2, "{hits} of {N} kept");
        assert_eq!(got[..N], want[..N]);
        assert_eq!(asked.load(Relaxed), N as u64);
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (0, keys.len() as u64));
    }

    /// The empty slot's key is no packet's: a key of all 0xff bytes but
    /// 52..64 zero, and the all-zero key, miss an empty cache.
    #[test]
    fn an_empty_cache_answers_nothing_from_its_empty_slots() {
        let (c, asked) = cached(16);
        let mut cache = c.cache6(0);
        let mut b = [0xffu8; 64];
        b[52..].fill(0);
        let keys = [Key6::from_bytes(b), Key6::default()];
        let mut r = [u32::MAX; 2];
        c.classify6(&mut cache, &keys, &mut r);
        assert_eq!(asked.load(Relaxed), 2);
        assert_eq!(c.stats().misses, 2);
    }

    /// No slots: every key goes to the classifier, nothing is counted.
    /// A thrashing cache (every key new) bypasses itself after a window.
    #[test]
    fn no_slots_asks_the_classifier_and_thrashing_bypasses() {
        let (c, asked) = cached(0);
        let mut cache = c.cache6(0);
        assert_eq!(cache.slots(), 0);
        let keys: Vec<Key6> = (0..MAX_BURST as u128).map(|i| key(i, 1, 7)).collect();
        let mut r = vec![0; keys.len()];
        c.classify6(&mut cache, &keys, &mut r);
        assert_eq!(asked.load(Relaxed), MAX_BURST as u64);
        assert_eq!(c.stats(), Default::default());

        let (c, _) = cached(64);
        let mut cache = c.cache6(0);
        let bursts = WINDOW as usize / MAX_BURST;
        for b in 0..bursts {
            let keys: Vec<Key6> = (0..MAX_BURST)
                .map(|i| key((b * MAX_BURST + i) as u128, 1, 7))
                .collect();
            c.classify6(&mut cache, &keys, &mut r);
        }
        assert_eq!(cache.bypass_bursts, BYPASS_BURSTS);
        c.classify6(&mut cache, &keys, &mut r);
        assert_eq!(c.stats().bypassed, MAX_BURST as u64);
    }

    /// Two keys of one slot, in turn: after their first misses both are
    /// hits (a direct-mapped cache would miss every one).
    #[test]
    fn two_keys_of_one_slot_both_stay() {
        let (c, asked) = cached(16);
        let mut cache = c.cache6(0);
        let first = key(1, 2, 3);
        let home = slot_of6(&first, 15);
        let second = (4..)
            .map(|i| key(1, 2, i))
            .find(|k| slot_of6(k, 15) == home)
            .unwrap();
        let mut r = [0u32; 1];
        for _ in 0..10 {
            c.classify6(&mut cache, &[first], &mut r);
            c.classify6(&mut cache, &[second], &mut r);
        }
        assert_eq!(asked.load(Relaxed), 2);
        assert_eq!(c.stats().hits, 18);
    }
}
