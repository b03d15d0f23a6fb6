//! `classify` (ingress): first-match rules on input port, prefixes,
//! protocol, ports, TCP flags, DSCP and VLAN that set a packet's mark and/or
//! class, or drop it. One classifier call per burst (DPDK's ACL in
//! fastpath, the linear reference in tests).
//!
//! ```toml
//! [[hook]]
//! point = "ingress"
//! port = "net_tap0"
//! kind = "classify"
//! [[hook.rule]]
//! proto = "udp"
//! dport = "5000-5999"
//! set_class = 2
//! set_mark = 0x10
//! [[hook.rule]]
//! src = "192.0.2.0/24"
//! action = "drop"
//! ```
//!
//! `flow_cache = N` (a power of two, default 4096; 0 = off) sizes the
//! per-worker exact-match cache of answers in front of the classifier
//! ([`crate::rules::flow_cache`]).
//!
//! Last in its chain, it answers the rules of the egress filters that offer
//! them in the same lookup and carries their answers to them
//! ([`crate::lookahead`]).

use crate::flow::FlowSummary;
use crate::lookahead::Lookahead;
use crate::rules::{
    flow_cache, parse_match, Answer, Answers, CachedClassifier, ClassifierBuilder, FlowCache,
    FlowCache6, FragmentGuard, Key, Key6, MatchRule, MAX_SETS,
};
use crate::wire::ethernet::ethertype;
use crate::worker_counters::{CounterStore, WorkerCounters};
use crate::{
    BuildContext, DropReason, Hook, HookArgs, HookBuildError, HookBurst, HookContext, HookKind,
    HookPacket, HookPoint, HookWorker, Verdict, WorkerStore, LOOKAHEAD_SLOTS, MAX_BURST,
};
use std::sync::{Arc, OnceLock};

mod ipv6;

const MATCHED: usize = 0;
const UNPARSED: usize = 1;

/// Match fields a classify rule may use.
pub const MATCH_KEYS: [&str; 9] = [
    "in_port",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "tcp_flags",
    "dscp",
    "vlan",
];
const ACTION_KEYS: [&str; 3] = ["action", "set_mark", "set_class"];

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassifyAction {
    Drop,
    Set {
        mark: Option<u32>,
        class: Option<u16>,
    },
}

/// The `classify` kind, building its classifiers with `builder`.
pub struct ClassifyKind {
    builder: Arc<dyn ClassifierBuilder>,
    /// Each instance's own counters, kept across reloads.
    counters: CounterStore<2>,
}

impl ClassifyKind {
    pub fn new(builder: Arc<dyn ClassifierBuilder>) -> Self {
        ClassifyKind {
            builder,
            counters: CounterStore::default(),
        }
    }
}

/// One classify instance: what its workers share.
pub struct Classify {
    classifier: CachedClassifier,
    /// Set by [`Lookahead::look_ahead`]: the classifier of these rules and
    /// the egress rule sets, used instead of `classifier`.
    ahead: OnceLock<Ahead>,
    /// What building `ahead` needs.
    rules: Vec<MatchRule>,
    builder: Arc<dyn ClassifierBuilder>,
    workers: usize,
    cache_slots: usize,
    /// By answer (1 + rule index; 0: no rule matched): what it does.
    effects: Vec<Effect>,
    /// The fragments the rules cannot judge, dropped before them.
    fragments: FragmentGuard,
    /// Per worker: packets that matched a rule, IPv4 packets that could
    /// not be read (they match no rule).
    counts: Arc<WorkerCounters<2>>,
}

/// A classify instance on one worker: the shared rules and the
/// worker's own flow cache.
struct ClassifyWorker {
    shared: Arc<Classify>,
    /// The worker's flow cache: in front of the hook's own classifier, or
    /// of the lookahead one when the hook was linked (`Classify::ahead`).
    cache: PartCache,
    /// The worker's cache for IPv6 keys, in front of the same classifier
    /// as `cache`.
    cache6: PartCache6,
    worker: usize,
    /// One burst's keys, their burst indices and answers, kept between
    /// bursts (each burst writes the elements it reads).
    scratch: Box<Keyed>,
}

/// The packets of one burst the classifier is asked about.
struct Keyed {
    keys: [Key; MAX_BURST],
    idx: [u8; MAX_BURST],
    /// Bit k: key k was made straight from a plain header (only those
    /// carry lookahead answers: the egress filter reads the others itself).
    plain: u64,
    results: [u32; MAX_BURST],
    answers: [Answers; MAX_BURST],
    /// What the answers of the misses lead to (the flow cache's entries).
    outcomes: [Outcome; MAX_BURST],
    /// Bit i: packet i of the burst is IPv6 (seen while keying IPv4's).
    v6: u64,
    /// The IPv6 packets' keys (kept between bursts, not set up per burst).
    keys6: [Key6; MAX_BURST],
}

/// The flow cache of a classify instance on one worker (see
/// `ClassifyWorker::cache`): in front of the hook's own classifier or of
/// the lookahead one. Either holds what the answer of a key leads to
/// ([`Outcome`]), worked out once, when the key missed.
enum PartCache<Own = FlowCache<Outcome>, Ahead = FlowCache<Outcome>> {
    Own(Own),
    Ahead(Ahead),
}

/// [`PartCache`] for IPv6 keys: of outcomes of the own classifier's
/// answer, or of the lookahead one's answers for every set.
type PartCache6 = PartCache<FlowCache6<Outcome, u32>, FlowCache6<Outcome, Answers>>;

/// What the answers for one key lead to: the effect of the hook's own
/// answer and, linked, what a plain packet carries for the egress
/// filters. A hit reads these 16 bytes and acts: no table lookup, no
/// arithmetic on the answers.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(8))]
struct Outcome {
    effect: Effect,
    carried: [u32; LOOKAHEAD_SLOTS],
}

/// The lookahead classifier: this hook's rules in set 0, the egress rule
/// set of lookahead slot i in set 1 + i.
struct Ahead {
    classifier: CachedClassifier,
    slots: usize,
}

impl Ahead {
    /// [`keep_slots`] of this classifier's slots.
    #[inline(always)]
    fn keep(&self) -> u64 {
        keep_slots(self.slots)
    }
}

/// A rule's action as the packet path applies it: `effects[0]` of a
/// [`Classify`] is the no-match one (nothing set, not counted). Eight
/// bytes, no `Option`s: one load, then a test of a bit per step.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(8))]
struct Effect {
    mark: u32,
    class: u16,
    /// `E_*` bits.
    bits: u8,
}

/// [`Effect::bits`]: a rule matched (counted under `matched`).
const E_MATCHED: u8 = 1;
/// The packet is dropped.
const E_DROP: u8 = 2;
/// The mark is set to [`Effect::mark`].
const E_SET_MARK: u8 = 4;
/// The class is set to [`Effect::class`].
const E_SET_CLASS: u8 = 8;

impl Effect {
    fn of(action: ClassifyAction) -> Effect {
        match action {
            ClassifyAction::Drop => Effect {
                bits: E_MATCHED | E_DROP,
                ..Effect::default()
            },
            ClassifyAction::Set { mark, class } => Effect {
                mark: mark.unwrap_or(0),
                class: class.unwrap_or(0),
                bits: E_MATCHED
                    | if mark.is_some() { E_SET_MARK } else { 0 }
                    | if class.is_some() { E_SET_CLASS } else { 0 },
            },
        }
    }

    #[inline(always)]
    fn matched(self) -> u64 {
        u64::from(self.bits & E_MATCHED)
    }

    #[inline(always)]
    fn drop(self) -> bool {
        self.bits & E_DROP != 0
    }
}

/// The hook handed to the chain: the shared instance.
struct ClassifyHook(Arc<Classify>);

impl Hook for ClassifyHook {
    fn worker(&self, worker: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
        Box::new(ClassifyWorker {
            shared: self.0.clone(),
            cache: match self.0.ahead.get() {
                Some(a) => PartCache::Ahead(a.classifier.cache(worker)),
                None => PartCache::Own(self.0.classifier.cache(worker)),
            },
            cache6: match self.0.ahead.get() {
                Some(a) => PartCache::Ahead(a.classifier.cache6(worker)),
                None => PartCache::Own(self.0.classifier.cache6(worker)),
            },
            worker,
            scratch: Box::new(Keyed {
                keys: [Key::default(); MAX_BURST],
                idx: [0; MAX_BURST],
                plain: 0,
                results: [0; MAX_BURST],
                answers: [Answers::default(); MAX_BURST],
                outcomes: [Outcome::default(); MAX_BURST],
                v6: 0,
                keys6: [Key6::default(); MAX_BURST],
            }),
        })
    }

    fn lookahead(&self) -> Option<&dyn Lookahead> {
        Some(&*self.0)
    }

    fn writes_frames(&self) -> bool {
        false
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let c = &self.0;
        let mut v = vec![
            ("rules", c.effects.len().saturating_sub(1) as u64),
            ("matched", c.counts.sum(MATCHED)),
            ("unparsed", c.counts.sum(UNPARSED)),
        ];
        match c.ahead.get() {
            Some(a) => {
                v.push(("lookahead_sets", a.slots as u64));
                v.extend(a.classifier.stat_lines_beside(Some(&c.classifier)));
            }
            None => v.extend(c.classifier.stat_lines()),
        }
        v
    }
}

impl Lookahead for Classify {
    fn look_ahead(&self, sets: &[&[MatchRule]]) -> Result<bool, String> {
        let mut all = vec![&self.rules[..]];
        all.extend_from_slice(sets);
        let inner = self.builder.build_sets(&all).map_err(|e| {
            format!(
                "building the {} lookahead classifier: {e}",
                self.builder.name()
            )
        })?;
        let ahead = Ahead {
            classifier: CachedClassifier::new(inner, self.workers, self.cache_slots),
            slots: sets.len(),
        };
        Ok(self.ahead.set(ahead).is_ok())
    }
}

impl HookWorker for ClassifyWorker {
    fn process(&mut self, _cx: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
        let accepted = burst.accepted_mask();
        // The family of the burst's first packet goes first (one test a
        // burst); the other family's packets, met on the way, after.
        let ipv6_first = burst
            .packet(accepted.trailing_zeros() as usize)
            .is_some_and(|p| p.meta().protocol == ethertype::IPV6);
        let (matched, unparsed) = if ipv6_first {
            let (m, u, v4) = self.ipv6(burst, accepted);
            let (m4, u4, _) = if v4 != 0 {
                self.ipv4(burst, v4)
            } else {
                (0, 0, 0)
            };
            (m + m4, u + u4)
        } else {
            let (m, u, v6) = self.ipv4(burst, accepted);
            let (m6, u6, _) = if v6 != 0 {
                self.ipv6(burst, v6)
            } else {
                (0, 0, 0)
            };
            (m + m6, u + u6)
        };
        let c = &self.shared;
        c.counts.add(self.worker, MATCHED, matched);
        c.counts.add(self.worker, UNPARSED, unparsed);
    }
}

impl ClassifyWorker {
    /// The IPv4 packets of `mask`: through the worker's flow cache in one
    /// pass, or keyed whole and classified in one call. Returns the packets
    /// that matched, those that could not be read, and the bits of the
    /// IPv6 packets of `mask`.
    #[inline(always)]
    fn ipv4(&mut self, burst: &mut HookBurst<'_, '_>, mask: u64) -> (u64, u64, u64) {
        let fast = match (&self.cache, self.shared.ahead.get()) {
            (PartCache::Ahead(cache), Some(a)) => a.classifier.begin(cache),
            (PartCache::Own(cache), _) => self.shared.classifier.begin(cache),
            (PartCache::Ahead(_), None) => false,
        };
        self.scratch.v6 = 0;
        let (matched, unparsed) = if fast {
            self.one_pass(burst, mask)
        } else {
            self.by_burst(burst, mask)
        };
        (matched, unparsed, self.scratch.v6)
    }

    /// The IPv6 packets of `mask` (`ipv6::classify6`); the third figure
    /// is the bits of the IPv4 packets of `mask`.
    #[inline(always)]
    fn ipv6(&mut self, burst: &mut HookBurst<'_, '_>, mask: u64) -> (u64, u64, u64) {
        let scratch = &mut *self.scratch;
        ipv6::classify6(&self.shared, &mut self.cache6, burst, mask, scratch)
    }

    /// The packets of `mask` through the worker's flow cache in one pass
    /// (`one_pass`).
    #[inline(always)]
    fn one_pass(&mut self, burst: &mut HookBurst<'_, '_>, mask: u64) -> (u64, u64) {
        let c = &*self.shared;
        let Keyed {
            keys,
            idx,
            results,
            answers,
            outcomes,
            v6,
            ..
        } = &mut *self.scratch;
        match (&mut self.cache, c.ahead.get()) {
            (PartCache::Ahead(cache), Some(a)) => {
                let keep = a.keep();
                let outcome = |a: &Answers| Outcome {
                    effect: c.effect(a[0]),
                    carried: carried(a, keep),
                };
                let scratch = (keys, idx, answers, outcomes);
                one_pass::<_, true>(c, &a.classifier, cache, (burst, mask), scratch, outcome, v6)
            }
            (PartCache::Own(cache), _) => {
                let outcome = |r: &u32| Outcome {
                    effect: c.effect(*r),
                    carried: [0; LOOKAHEAD_SLOTS],
                };
                let scratch = (keys, idx, results, outcomes);
                one_pass::<_, false>(c, &c.classifier, cache, (burst, mask), scratch, outcome, v6)
            }
            (PartCache::Ahead(_), None) => (0, 0),
        }
    }

    /// The burst keyed first, then classified in one call (no cache, or a
    /// cache that bypasses). Returns the packets that matched and those
    /// that could not be read.
    fn by_burst(&mut self, burst: &mut HookBurst<'_, '_>, mask: u64) -> (u64, u64) {
        let c = &*self.shared;
        let (n, unparsed) = key_burst(c, burst, mask, &mut self.scratch);
        let Keyed {
            keys,
            idx,
            plain,
            results,
            answers,
            ..
        } = &mut *self.scratch;
        let matched = match (&mut self.cache, c.ahead.get()) {
            _ if n == 0 => 0,
            (PartCache::Ahead(cache), Some(a)) => {
                a.classifier
                    .classify_past(cache, &keys[..n], &mut answers[..n]);
                act_ahead(c, burst, &idx[..n], *plain, &answers[..n], a.slots)
            }
            (PartCache::Own(cache), _) => {
                c.classifier
                    .classify_past(cache, &keys[..n], &mut results[..n]);
                act_own(c, burst, &idx[..n], &results[..n])
            }
            // Not reached: a worker gets this cache only once `ahead` is set,
            // and it stays set. No rule matches rather than a panic.
            (PartCache::Ahead(_), None) => 0,
        };
        (matched, unparsed)
    }
}

/// One pass over the packets of `mask` through the worker's flow cache: each
/// IPv4 packet keyed, looked up and, on a hit, acted on at once by its
/// cached [`Outcome`] (`CARRY`: a plain packet not dropped carries the
/// outcome's answers for the egress filters); the misses keyed into the
/// scratch arrays (keys, burst indices, answers, outcomes), classified in
/// one call, their outcomes (`outcome` of the answers) cached and acted
/// on after. Returns the packets that matched a rule and those that could
/// not be read.
#[inline(always)]
fn one_pass<A: Answer, const CARRY: bool>(
    c: &Classify,
    classifier: &CachedClassifier,
    cache: &mut FlowCache<Outcome>,
    (burst, mut mask): (&mut HookBurst<'_, '_>, u64),
    (keys, idx, answers, outcomes): (
        &mut [Key; MAX_BURST],
        &mut [u8; MAX_BURST],
        &mut [A; MAX_BURST],
        &mut [Outcome; MAX_BURST],
    ),
    outcome: impl Fn(&A) -> Outcome,
    v6: &mut u64,
) -> (u64, u64) {
    let (mut m, mut matched, mut unparsed) = (0, 0u64, 0u64);
    let (mut drops, mut refused, mut plain_missed) = (0u64, 0u64, 0u64);
    // Every packet is looked up but those skipped (counted as they are).
    let mut lookups = mask.count_ones() as usize;
    let packets = burst.packets_mut();
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let Some(p) = packets.get_mut(i) else { break };
        if p.meta().protocol != ethertype::IPV4 {
            *v6 |= u64::from(p.meta().protocol == ethertype::IPV6) << i;
            lookups -= 1;
            continue;
        }
        // A plain packet's key stays in registers for the lookup and is
        // stored only when it misses.
        let plain_key = p
            .l3_if_any()
            .and_then(|l3| Key::plain_words(l3, p.meta(), 0));
        let (words, plain) = match plain_key {
            Some(w) => (w, true),
            // `m` counts misses, at most one per mask bit: it stays in range.
            None => match key_parsed(c, p, &mut keys[m % MAX_BURST]) {
                Ok(()) => (keys[m % MAX_BURST].words(), false),
                Err(refuse) => {
                    refused |= u64::from(refuse.is_some()) << i;
                    unparsed += u64::from(refuse.is_none());
                    lookups -= 1;
                    continue;
                }
            },
        };
        match cache.get_words(&words) {
            Some(o) => {
                matched += o.effect.matched();
                drops |= act_on(&o, p, i, CARRY && plain);
            }
            None => {
                let k = m % MAX_BURST;
                keys[k] = Key::from_words(words);
                idx[k] = i as u8;
                plain_missed |= u64::from(plain) << k;
                m += 1;
            }
        }
    }
    if m > 0 {
        let (answers, outcomes) = (&mut answers[..m], &mut outcomes[..m]);
        classifier.fill_mapped(cache, &keys[..m], answers, outcomes, outcome);
        let missed = (&idx[..m], &outcomes[..], plain_missed);
        let (more, dropped) = act_on_misses::<CARRY>(packets, missed);
        matched += more;
        drops |= dropped;
    }
    classifier.end(cache, lookups, lookups - m);
    if drops != 0 {
        drop_marked(burst, drops);
    }
    if refused != 0 {
        refuse_fragments(c, burst, refused);
    }
    (matched, unparsed)
}

/// Packets acted on by their outcomes (the misses of `one_pass` once
/// classified, or an IPv6 burst's packets): their burst indices, outcomes
/// and which were plain (bit k: packet k). Returns the packets that
/// matched a rule and the bits of those to drop.
#[inline(always)]
fn act_on_misses<const CARRY: bool>(
    packets: &mut [HookPacket<'_>],
    (idx, outcomes, plain): (&[u8], &[Outcome], u64),
) -> (u64, u64) {
    let (mut matched, mut drops) = (0, 0);
    for (k, (&i, o)) in idx.iter().zip(outcomes).enumerate() {
        let Some(p) = packets.get_mut(usize::from(i)) else {
            continue;
        };
        matched += o.effect.matched();
        drops |= act_on(o, p, usize::from(i), CARRY && plain & 1 << k != 0);
    }
    (matched, drops)
}

/// What outcome `o` does to packet `p` (burst index `i`): the bit of `i`
/// when it is to be dropped; else the answers it carries (`carry`: a
/// plain packet of a linked hook) and its mark and class set.
#[inline(always)]
fn act_on(o: &Outcome, p: &mut HookPacket<'_>, i: usize, carry: bool) -> u64 {
    if o.effect.drop() {
        return 1 << (i % MAX_BURST);
    }
    if carry {
        p.carry_all(o.carried);
    }
    apply(o.effect, p);
    0
}

/// Key every IPv4 packet of `mask` into `keyed` (a fragment the
/// rules cannot judge is dropped here). Returns the keys made and the
/// packets that could not be read. A plain packet's key is written in
/// place; any other packet's in `key_parsed`, out of line.
#[inline(always)]
fn key_burst(
    c: &Classify,
    burst: &mut HookBurst<'_, '_>,
    mut mask: u64,
    keyed: &mut Keyed,
) -> (usize, u64) {
    let mut n = 0;
    let mut unparsed = 0;
    let mut plain = 0u64;
    let mut refused = 0u64;
    let packets = burst.packets();
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let Some(p) = packets.get(i) else { break };
        if p.meta().protocol != ethertype::IPV4 {
            keyed.v6 |= u64::from(p.meta().protocol == ethertype::IPV6) << i;
            continue;
        }
        // At most MAX_BURST packets (one per mask bit): `n` stays in range.
        let k = n % MAX_BURST;
        let plain_key = p
            .l3_if_any()
            .and_then(|l3| Key::plain_words(l3, p.meta(), 0));
        if let Some(w) = plain_key {
            keyed.keys[k] = Key::from_words(w);
            plain |= 1 << k;
        } else {
            match key_parsed(c, p, &mut keyed.keys[k]) {
                Ok(()) => {}
                Err(Some(_)) => {
                    refused |= 1 << i;
                    continue;
                }
                Err(None) => {
                    unparsed += 1;
                    continue;
                }
            }
        }
        keyed.idx[k] = i as u8;
        n += 1;
    }
    keyed.plain = plain;
    if refused != 0 {
        refuse_fragments(c, burst, refused);
    }
    (n, unparsed)
}

/// Drop the IPv4 fragments of `mask` the rules cannot judge, under the
/// reason the fragment checks give.
#[cold]
#[inline(never)]
fn refuse_fragments(c: &Classify, burst: &mut HookBurst<'_, '_>, mask: u64) {
    refuse_each(burst, mask, |l3| {
        FlowSummary::parse(l3).and_then(|s| c.fragments.check(&s))
    });
}

/// Drop each packet of `mask` that `reason` gives a reason for (of its
/// bytes from the L3 header on), under that reason.
#[inline(always)]
fn refuse_each(
    burst: &mut HookBurst<'_, '_>,
    mut mask: u64,
    reason: impl Fn(&[u8]) -> Option<DropReason>,
) {
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if let Some(r) = burst.packet(i).and_then(|p| reason(p.l3())) {
            burst.set_verdict(i, Verdict::Drop(r));
        }
    }
}

/// The key of a packet that is not plain (options, fragments, other
/// protocols), through its flow summary, into `key`. `Err(Some(reason))`:
/// a fragment the rules cannot judge, to drop; `Err(None)`: unreadable.
#[cold]
#[inline(never)]
fn key_parsed(c: &Classify, p: &HookPacket<'_>, key: &mut Key) -> Result<(), Option<DropReason>> {
    let s = FlowSummary::parse(p.l3()).ok_or(None)?;
    if let Some(r) = c.fragments.check(&s) {
        return Err(Some(r));
    }
    *key = Key::new(&s, p.meta(), 0);
    Ok(())
}

/// Each packet's own answer (set 0) acted on, and each plain packet's
/// answers for the egress rule sets (sets 1..=slots) carried in its
/// metadata, in one pass. Returns the packets that matched a rule.
#[inline(always)]
fn act_ahead(
    c: &Classify,
    burst: &mut HookBurst<'_, '_>,
    idx: &[u8],
    plain: u64,
    answers: &[Answers],
    slots: usize,
) -> u64 {
    let mut matched = 0;
    let mut drops = 0u64;
    let keep = keep_slots(slots);
    let packets = burst.packets_mut();
    for (k, (&i, a)) in idx.iter().zip(answers).enumerate() {
        let e = c.effect(a[0]);
        matched += e.matched();
        let Some(p) = packets.get_mut(usize::from(i)) else {
            continue;
        };
        if e.drop() {
            drops |= 1 << (i % MAX_BURST as u8);
            continue;
        }
        if plain & 1 << k != 0 {
            p.carry_all(carried(a, keep));
        }
        apply(e, p);
    }
    if drops != 0 {
        drop_marked(burst, drops);
    }
    matched
}

/// Each packet's answer acted on (no lookahead). Returns the packets that
/// matched a rule.
#[inline(always)]
fn act_own(c: &Classify, burst: &mut HookBurst<'_, '_>, idx: &[u8], results: &[u32]) -> u64 {
    let mut matched = 0;
    let mut drops = 0u64;
    let packets = burst.packets_mut();
    for (&i, &r) in idx.iter().zip(results) {
        let e = c.effect(r);
        matched += e.matched();
        if e.drop() {
            drops |= 1 << (i % MAX_BURST as u8);
        } else if let Some(p) = packets.get_mut(usize::from(i)) {
            apply(e, p);
        }
    }
    if drops != 0 {
        drop_marked(burst, drops);
    }
    matched
}

/// What a matching rule's effect `e` (not a drop) does to packet `p`:
/// its mark and class set.
#[inline(always)]
fn apply(e: Effect, p: &mut HookPacket<'_>) {
    if e.bits & E_SET_MARK != 0 {
        p.set_mark(e.mark);
    }
    if e.bits & E_SET_CLASS != 0 {
        p.set_class(e.class);
    }
}

/// The lookahead slots as one word (slot s in bits 32 s..): all ones in
/// the `slots` slots linked, 0 in the others (which then carry 0, "none").
#[inline(always)]
fn keep_slots(slots: usize) -> u64 {
    const _: () = assert!(LOOKAHEAD_SLOTS == 2 && MAX_SETS == 3);
    match slots {
        0 => 0,
        1 => u64::from(u32::MAX),
        _ => u64::MAX,
    }
}

/// What a plain packet carries of answers `a`: 1 + the answer of each
/// egress set (sets 1..), in the slots `keep` keeps.
#[inline(always)]
fn carried(a: &Answers, keep: u64) -> [u32; LOOKAHEAD_SLOTS] {
    let w = (u64::from(a[1].wrapping_add(1)) | u64::from(a[2].wrapping_add(1)) << 32) & keep;
    [w as u32, (w >> 32) as u32]
}

/// Drop the packets of `mask` (a classify rule's drop).
#[inline(never)]
fn drop_marked(burst: &mut HookBurst<'_, '_>, mut mask: u64) {
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        burst.set_verdict(i, Verdict::Drop(DropReason::ClassifyRule));
    }
}

impl Classify {
    /// The effect of `result` (1 + rule index, 0 = none).
    #[inline(always)]
    fn effect(&self, result: u32) -> Effect {
        self.effects
            .get(result as usize)
            .copied()
            .unwrap_or_default()
    }
}

/// The action keys of classify rule `i`.
fn parse_action(t: &toml::Table, i: usize) -> Result<ClassifyAction, HookBuildError> {
    let int = |key: &str, max: u64| -> Result<Option<u64>, HookBuildError> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(v)) if (0..=max as i64).contains(v) => Ok(Some(*v as u64)),
            Some(v) => Err(HookBuildError::rule(
                i,
                key,
                format!("expected an integer in 0..={max}, found {v}"),
            )),
        }
    };
    let mark = int("set_mark", u64::from(u32::MAX))?.map(|v| v as u32);
    let class = int("set_class", u64::from(u16::MAX))?.map(|v| v as u16);
    match t.get("action") {
        Some(toml::Value::String(a)) if a == "drop" => {
            if mark.is_some() || class.is_some() {
                return Err(HookBuildError::rule(
                    i,
                    "action",
                    "a drop rule cannot also set a mark or class; split it in two rules",
                ));
            }
            Ok(ClassifyAction::Drop)
        }
        Some(toml::Value::String(a)) if a == "set" => {
            if mark.is_none() && class.is_none() {
                return Err(HookBuildError::rule(
                    i,
                    "action",
                    "\"set\" needs `set_mark` and/or `set_class`",
                ));
            }
            Ok(ClassifyAction::Set { mark, class })
        }
        Some(v) => Err(HookBuildError::rule(
            i,
            "action",
            format!("expected \"drop\" or \"set\" (the default when set_mark/set_class is given), found {v}"),
        )),
        None if mark.is_some() || class.is_some() => Ok(ClassifyAction::Set { mark, class }),
        None => Err(HookBuildError {
            rule: Some(i),
            field: None,
            message: "a rule needs an action: `set_mark`, `set_class` or `action = \"drop\"`"
                .into(),
        }),
    }
}

impl HookKind for ClassifyKind {
    fn name(&self) -> &str {
        "classify"
    }

    fn points(&self) -> &[HookPoint] {
        &[HookPoint::Ingress]
    }

    fn build(&self, args: &HookArgs, cx: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        if let Some(k) = args.params.keys().find(|k| *k != flow_cache::PARAM) {
            return Err(HookBuildError::param(
                k,
                "unknown field; `classify` takes `flow_cache` and [[hook.rule]] tables",
            ));
        }
        let slots = flow_cache::slots_param(args)?;
        let mut rules = Vec::with_capacity(args.rules.len());
        let mut effects = Vec::with_capacity(args.rules.len() + 1);
        effects.push(Effect::default());
        for (i, t) in args.rules.iter().enumerate() {
            rules.push(parse_match(t, i, cx, &MATCH_KEYS, &ACTION_KEYS)?);
            effects.push(Effect::of(parse_action(t, i)?));
        }
        let classifier = self.builder.build(&rules).map_err(|e| HookBuildError {
            rule: None,
            field: None,
            message: format!("building the {} classifier: {e}", self.builder.name()),
        })?;
        Ok(Arc::new(ClassifyHook(Arc::new(Classify {
            classifier: CachedClassifier::new(classifier, cx.workers, slots),
            ahead: OnceLock::new(),
            fragments: FragmentGuard::for_rules(&rules),
            rules,
            builder: self.builder.clone(),
            workers: cx.workers,
            cache_slots: slots,
            effects,
            counts: self.counters.for_instance(cx),
        }))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::test_util::*;
    use crate::flow::tcp_flag::{ACK, SYN};
    use crate::rules::LinearBuilder;
    use crate::testkit::{ipv4, tcp, udp};

    const A: [u8; 4] = [10, 0, 1, 2];
    const B: [u8; 4] = [10, 0, 2, 2];

    fn classify(rules: &str) -> Arc<dyn Hook> {
        build(
            &ClassifyKind::new(Arc::new(LinearBuilder)),
            HookPoint::Ingress,
            rules,
        )
    }

    /// IPv6 meets the rules of its family or of none, in one burst with
    /// IPv4 (through the flow cache's pass and without it; IPv6 first and
    /// IPv4 first; the second round from the cache): marked, classed,
    /// dropped; an unreadable chain is counted and left alone.
    #[test]
    fn ipv6_is_marked_by_the_rules_of_its_family() {
        for slots in [0, 256] {
            let h = classify(&format!(
                r#"
                flow_cache = {slots}
                [[rule]]
                src = "10.0.1.0/24"
                set_mark = 4
                [[rule]]
                dst = "2001:db8:2::/48"
                proto = "tcp"
                set_mark = 6
                set_class = 1
                [[rule]]
                src = "2001:db8:bad::/48"
                action = "drop"
                [[rule]]
                proto = "udp"
                dport = 53
                set_class = 9
                "#
            ));
            let cut = [vec![60, 0, 0, 1, 0, 0, 0, 1], vec![6, 3]].concat();
            let sent = vec![
                Pkt::tcp6("2001:db8:1::2", "2001:db8:2::9", 1, 22, SYN),
                Pkt::new(udp(A, B, 1, 53).build()),
                Pkt::udp6("2001:db8:1::2", "2001:db8:3::9", 1, 53),
                Pkt::udp6("2001:db8:bad::2", "2001:db8:3::9", 1, 53),
                Pkt::ipv6("2001:db8:1::2", "2001:db8:2::9", 44, &cut),
                Pkt::udp6("2001:db8:1::2", "2001:db8:3::9", 1, 54),
            ];
            let drop = Verdict::Drop(DropReason::ClassifyRule);
            let ok = Verdict::Accept;
            let want = [
                ((6, 1), ok),
                ((4, 0), ok),
                ((0, 9), ok),
                ((0, 0), drop),
                ((0, 0), ok),
                ((0, 0), ok),
            ];
            for (round, first) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                let mut pkts = sent.clone();
                pkts.rotate_left(first);
                let v = run(&*h, HookPoint::Ingress, &mut pkts, 0);
                let got: Vec<_> = pkts
                    .iter()
                    .map(|p| (p.meta.mark, p.meta.class))
                    .zip(v)
                    .collect();
                let mut want = want.to_vec();
                want.rotate_left(first);
                assert_eq!(got, want, "{slots} slots, round {round}, from {first}");
            }
            assert_eq!(stat(&*h, "matched"), 4 * 4, "{slots} slots");
            assert_eq!(stat(&*h, "unparsed"), 4, "{slots} slots");
            if slots > 0 {
                // Five readable packets a burst, each burst's the same
                // keys: all miss in the first, all hit in the three after.
                assert_eq!(stat(&*h, "flow_cache_hits"), 3 * 5, "{slots} slots");
                assert_eq!(stat(&*h, "flow_cache_misses"), 5, "{slots} slots");
            }
        }
    }

    #[test]
    fn first_match_sets_mark_and_class_or_drops() {
        let h = classify(
            r#"
            [[rule]]
            proto = "tcp"
            tcp_flags = "syn,!ack"
            set_mark = 1
            [[rule]]
            proto = "tcp"
            set_class = 2
            set_mark = 2
            [[rule]]
            dscp = 46
            set_class = 5
            [[rule]]
            src = "10.0.1.0/24"
            action = "drop"
            "#,
        );
        let mut ef = udp(A, B, 1, 2).build();
        ef[15] = 46 << 2;
        ef[24..26].fill(0);
        let c = crate::wire::checksum::checksum(&ef[14..34]);
        ef[24..26].copy_from_slice(&c.to_be_bytes());
        let mut pkts = vec![
            Pkt::new(tcp(A, B, 1, 2, SYN).build()),
            Pkt::new(tcp(A, B, 1, 2, SYN | ACK).build()),
            Pkt::new(ef),
            Pkt::new(udp(A, B, 1, 2).build()),
            Pkt::new(udp(B, A, 1, 2).build()),
        ];
        let v = run(&*h, HookPoint::Ingress, &mut pkts, 0);
        let got: Vec<(u32, u16)> = pkts.iter().map(|p| (p.meta.mark, p.meta.class)).collect();
        assert_eq!(got, vec![(1, 0), (2, 2), (0, 5), (0, 0), (0, 0)]);
        assert_eq!(
            v,
            vec![
                Verdict::Accept,
                Verdict::Accept,
                Verdict::Accept,
                Verdict::Drop(DropReason::ClassifyRule),
                Verdict::Accept
            ]
        );
        assert_eq!(stat(&*h, "matched"), 4);
    }

    /// A classify hook that drops TCP to port 22, and a SYN's TCP header
    /// to port 22 to cut into fragments.
    fn port_22_drop() -> (Arc<dyn Hook>, Vec<u8>) {
        let h = classify(
            r#"
            [[rule]]
            proto = "tcp"
            dport = 22
            action = "drop"
            "#,
        );
        (h, tcp(A, B, 1024, 22, SYN).seq(1).build_l4())
    }

    /// A classify drop rule on a port is not passed by a tiny first
    /// fragment or the fragment at offset 1 (RFC 1858), and a later
    /// fragment matches no port rule.
    #[test]
    fn tiny_and_overlapping_fragments_do_not_pass_a_port_rule() {
        let (h, full) = port_22_drop();
        let frag = |more, offset, l4: &[u8]| ipv4(A, B, 6, l4).fragment(more, offset).build();
        let mut pkts = vec![
            Pkt::new(frag(true, 0, &full[..8])),
            Pkt::new(frag(true, 8, &full[8..16])),
            Pkt::new(frag(false, 16, &full[..8])),
        ];
        let v = run(&*h, HookPoint::Ingress, &mut pkts, 0);
        assert_eq!(
            v,
            vec![
                Verdict::Drop(DropReason::TinyFragment),
                Verdict::Drop(DropReason::OverlappingFragment),
                Verdict::Accept
            ]
        );
        assert_eq!(stat(&*h, "matched"), 0);
    }

    /// The same in IPv6 (a Fragment header, RFC 8200 section 4.5), IPv6
    /// first and after an IPv4 packet. A first fragment without the whole
    /// TCP header is unreadable (RFC 7112: the chain ends in the first
    /// fragment): counted and left to the filters' policy.
    #[test]
    fn ipv6_fragments_that_hide_ports_are_refused_or_unreadable() {
        let (h, full) = port_22_drop();
        // Next header TCP, the offset in 8-byte units and More Fragments.
        let frag = |more: bool, units: u16, l4: &[u8]| {
            let off = (units << 3 | u16::from(more)).to_be_bytes();
            let header = [6, 0, off[0], off[1], 0, 0, 0, 7];
            Pkt::ipv6(
                "2001:db8:1::2",
                "2001:db8:2::9",
                44,
                &[&header[..], l4].concat(),
            )
        };
        let sent = vec![
            frag(true, 0, &full[..8]),
            frag(true, 1, &full[8..16]),
            frag(false, 2, &full[..8]),
        ];
        let want = vec![
            Verdict::Accept,
            Verdict::Drop(DropReason::OverlappingFragment),
            Verdict::Accept,
        ];
        let mut pkts = sent.clone();
        assert_eq!(run(&*h, HookPoint::Ingress, &mut pkts, 0), want);
        let mut pkts = [vec![Pkt::new(udp(A, B, 1, 53).build())], sent].concat();
        let v = run(&*h, HookPoint::Ingress, &mut pkts, 0);
        assert_eq!(v[1..], want[..]);
        assert_eq!(stat(&*h, "matched"), 0);
        assert_eq!(stat(&*h, "unparsed"), 2);
    }

    #[test]
    fn vlan_and_input_port_come_from_metadata_and_non_ip_is_left_alone() {
        let h = classify(
            r#"
            [[rule]]
            vlan = "100-199"
            in_port = "in0"
            set_class = 9
            "#,
        );
        let mut arp = Pkt::new(vec![0u8; 60]).with(|m| m.protocol = 0x0806);
        arp.meta.vlan = 150;
        let mut pkts = vec![
            Pkt::new(udp(A, B, 1, 2).build()).with(|m| m.vlan = 150),
            Pkt::new(udp(A, B, 1, 2).build()).with(|m| m.vlan = 200),
            Pkt::new(udp(A, B, 1, 2).build()).with(|m| (m.vlan, m.in_port) = (150, 1)),
            arp,
        ];
        run(&*h, HookPoint::Ingress, &mut pkts, 0);
        let classes: Vec<u16> = pkts.iter().map(|p| p.meta.class).collect();
        assert_eq!(classes, vec![9, 0, 0, 0]);
    }

    #[test]
    fn the_flow_cache_answers_repeats_and_can_be_sized_or_turned_off() {
        let rules = r#"
            [[rule]]
            proto = "tcp"
            dport = 80
            set_class = 8
            "#;
        let classes = |h: &dyn Hook| -> Vec<u16> {
            let mut pkts = vec![
                Pkt::new(tcp(A, B, 1000, 80, SYN).build()),
                Pkt::new(tcp(A, B, 1000, 81, SYN).build()),
                Pkt::new(tcp(A, B, 1000, 80, SYN).build()).with(|m| m.in_port = 1),
            ];
            run(h, HookPoint::Ingress, &mut pkts, 0);
            pkts.iter().map(|p| p.meta.class).collect()
        };
        for slots in ["", "flow_cache = 1\n", "flow_cache = 0\n"] {
            let h = classify(&format!("{slots}{rules}"));
            for round in 0..3 {
                assert_eq!(classes(&*h), [8, 0, 8], "{slots:?} round {round}");
            }
            assert_eq!(stat(&*h, "matched"), 6);
            let cache: Vec<_> = h
                .stats()
                .into_iter()
                .filter(|(n, _)| n.starts_with("flow_cache"))
                .collect();
            match slots {
                "" => assert_eq!(
                    cache,
                    [
                        ("flow_cache_hits", 6),
                        ("flow_cache_misses", 3),
                        ("flow_cache_bypassed", 0)
                    ]
                ),
                "flow_cache = 0\n" => assert!(cache.is_empty(), "{cache:?}"),
                // One slot, three keys: a burst looks all up, then fills
                // the slot in order, so only the last key hits next time.
                _ => assert_eq!(
                    cache[..2],
                    [("flow_cache_hits", 2), ("flow_cache_misses", 7)]
                ),
            }
        }
        let k = ClassifyKind::new(Arc::new(LinearBuilder));
        let cx = build_cx(HookPoint::Ingress);
        for bad in ["3", "-1", "\"big\"", "33554432"] {
            let e = k
                .build(&args(&format!("flow_cache = {bad}\n{rules}")), &cx)
                .err()
                .expect("refused");
            assert_eq!(e.field.as_deref(), Some("flow_cache"), "{bad}: {e}");
        }
    }

    #[test]
    fn config_errors_name_the_rule_and_field() {
        let k = ClassifyKind::new(Arc::new(LinearBuilder));
        let cx = build_cx(HookPoint::Ingress);
        let err = |t: &str| k.build(&args(t), &cx).err().expect("refused");
        let e = err("[[rule]]\nproto = \"tcp\"");
        assert_eq!(e.rule, Some(0), "a rule without an action");
        let e = err("[[rule]]\nproto = \"tcp\"\naction = \"drop\"\nset_mark = 1");
        assert_eq!(e.field.as_deref(), Some("action"));
        let e = err("[[rule]]\nset_class = 70000");
        assert_eq!(e.field.as_deref(), Some("set_class"));
        let e = err("[[rule]]\nset_class = 1\n[[rule]]\nout_port = 1\nset_class = 1");
        assert_eq!((e.rule, e.field.as_deref()), (Some(1), Some("out_port")));
        assert!(k.points() == [HookPoint::Ingress]);
    }
}
