//! classify's IPv6 pass: the IPv6 packets of a burst keyed ([`Key6`]: a
//! plain packet straight from its header, any other through its
//! [`FlowSummary6`]), looked up in the worker's IPv6 flow cache and acted on
//! as IPv4's are (marked, classed or dropped; linked, a plain packet carries
//! the egress filters' answers). Through the cache in one pass, a hit acted
//! on at once and the misses classified in one call after; with no cache,
//! or one that bypasses itself, the burst's keys go to the classifier whole.
//! A burst's IPv4 packets met on the way are handed back for the IPv4 pass.

use super::{act_on, act_on_misses, carried, drop_marked, Classify, Keyed, Outcome, PartCache};
use super::{refuse_each, PartCache6, LOOKAHEAD_SLOTS};
use crate::flow6::FlowSummary6;
use crate::rules::{Answer, Answers, CachedClassifier, FlowCache6, Key6};
use crate::wire::ethernet::ethertype;
use crate::{DropReason, HookBurst, HookPacket, MAX_BURST};

/// The IPv6 packets of `mask` through `cache6`, as the module doc says.
/// Returns the packets that matched a rule, those that could not be read
/// (counted and left as they are) and the bits of the IPv4 packets of
/// `mask`. Out of line: a burst with no IPv6 never comes here.
#[inline(never)]
pub(super) fn classify6(
    c: &Classify,
    cache6: &mut PartCache6,
    burst: &mut HookBurst<'_, '_>,
    mask: u64,
    scratch: &mut Keyed,
) -> (u64, u64, u64) {
    match (cache6, c.ahead.get()) {
        (PartCache::Ahead(cache), Some(a)) => {
            let keep = a.keep();
            let outcome = |a: &Answers| Outcome {
                effect: c.effect(a[0]),
                carried: carried(a, keep),
            };
            let classifier = &a.classifier;
            if classifier.begin6(cache) {
                one_pass6::<_, true>(c, classifier, cache, burst, mask, scratch, outcome)
            } else {
                by_keys6::<_, true>(c, classifier, cache, burst, mask, scratch, outcome)
            }
        }
        (PartCache::Own(cache), _) => {
            let outcome = |r: &u32| Outcome {
                effect: c.effect(*r),
                carried: [0; LOOKAHEAD_SLOTS],
            };
            let classifier = &c.classifier;
            if classifier.begin6(cache) {
                one_pass6::<_, false>(c, classifier, cache, burst, mask, scratch, outcome)
            } else {
                by_keys6::<_, false>(c, classifier, cache, burst, mask, scratch, outcome)
            }
        }
        // Not reached: a worker gets this cache only once `ahead` is set,
        // and it stays set. No rule matches rather than a panic.
        (PartCache::Ahead(_), None) => (0, 0, 0),
    }
}

/// One pass over the IPv6 packets of `mask` through the worker's cache:
/// each keyed (a plain packet's key in registers), looked up and, on a
/// hit, acted on by its cached [`Outcome`] at once; a miss's key is stored
/// in the next free place of the scratch keys. The misses are classified in one
/// call, cached and acted on after (`CARRY`: a plain packet not dropped
/// carries the outcome's answers).
#[inline(always)]
fn one_pass6<A: Answer, const CARRY: bool>(
    c: &Classify,
    classifier: &CachedClassifier,
    cache: &mut FlowCache6<Outcome, A>,
    burst: &mut HookBurst<'_, '_>,
    mut mask: u64,
    scratch: &mut Keyed,
    outcome: impl Fn(&A) -> Outcome,
) -> (u64, u64, u64) {
    let Keyed {
        keys6: keys,
        idx,
        outcomes,
        ..
    } = scratch;
    let (mut m, mut lookups, mut matched, mut unparsed) = (0, 0, 0u64, 0u64);
    let (mut drops, mut refused, mut plain_missed, mut v4) = (0u64, 0u64, 0u64, 0u64);
    let packets = burst.packets_mut();
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let Some(p) = packets.get_mut(i) else { break };
        if p.meta().protocol != ethertype::IPV6 {
            v4 |= u64::from(p.meta().protocol == ethertype::IPV4) << i;
            continue;
        }
        // `m` counts misses, at most one per mask bit: it stays in range.
        let k = m % MAX_BURST;
        // A plain packet's key stays in registers for the lookup and is
        // stored only when it misses.
        let (words, plain) = match Key6::plain_words(p.l3(), p.meta(), 0) {
            Some(w) => (w, true),
            None => match key6_parsed(c, p, &mut keys[k]) {
                Ok(()) => (keys[k].words(), false),
                Err(refuse) => {
                    refused |= u64::from(refuse.is_some()) << i;
                    unparsed += u64::from(refuse.is_none());
                    continue;
                }
            },
        };
        lookups += 1;
        match cache.get_words(&words) {
            Some(o) => {
                matched += o.effect.matched();
                drops |= act_on(&o, p, i, CARRY && plain);
            }
            None => {
                keys[k] = Key6::from_words(words);
                idx[k] = i as u8;
                plain_missed |= u64::from(plain) << k;
                m += 1;
            }
        }
    }
    if m > 0 {
        let outcomes = &mut outcomes[..m];
        classifier.fill6_mapped(cache, &keys[..m], outcomes, outcome);
        let (more, dropped) = act_on_misses::<CARRY>(packets, (&idx[..m], outcomes, plain_missed));
        matched += more;
        drops |= dropped;
    }
    classifier.end6(cache, lookups, lookups - m);
    finish(c, burst, drops, refused);
    (matched, unparsed, v4)
}

/// The IPv6 packets of `mask` keyed first, then classified past or through
/// `cache` whole ([`CachedClassifier::classify6_mapped`]: no cache, or one
/// that bypasses itself), then acted on.
#[inline(always)]
fn by_keys6<A: Answer, const CARRY: bool>(
    c: &Classify,
    classifier: &CachedClassifier,
    cache: &mut FlowCache6<Outcome, A>,
    burst: &mut HookBurst<'_, '_>,
    mut mask: u64,
    scratch: &mut Keyed,
    outcome: impl Fn(&A) -> Outcome,
) -> (u64, u64, u64) {
    let Keyed {
        keys6: keys,
        idx,
        outcomes,
        ..
    } = scratch;
    let (mut n, mut unparsed) = (0, 0u64);
    let (mut plain, mut refused, mut v4) = (0u64, 0u64, 0u64);
    let packets = burst.packets();
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let Some(p) = packets.get(i) else { break };
        if p.meta().protocol != ethertype::IPV6 {
            v4 |= u64::from(p.meta().protocol == ethertype::IPV4) << i;
            continue;
        }
        // At most MAX_BURST packets (one per mask bit): `k` is `n`.
        let k = n % MAX_BURST;
        match key6(c, p, &mut keys[k]) {
            Ok(pl) => {
                (idx[k], plain) = (i as u8, plain | u64::from(pl) << k);
                n += 1;
            }
            Err(refuse) => {
                refused |= u64::from(refuse.is_some()) << i;
                unparsed += u64::from(refuse.is_none());
            }
        }
    }
    let outcomes = &mut outcomes[..n];
    classifier.classify6_mapped(cache, &keys[..n], outcomes, outcome);
    let packets = burst.packets_mut();
    let (matched, drops) = act_on_misses::<CARRY>(packets, (&idx[..n], outcomes, plain));
    finish(c, burst, drops, refused);
    (matched, unparsed, v4)
}

/// The drops of a pass: the packets a rule dropped (`drops`) and the
/// fragments the rules cannot judge (`refused`).
#[inline(always)]
fn finish(c: &Classify, burst: &mut HookBurst<'_, '_>, drops: u64, refused: u64) {
    if drops != 0 {
        drop_marked(burst, drops);
    }
    if refused != 0 {
        refuse_fragments6(c, burst, refused);
    }
}

/// Packet `p`'s key into `key`: `Ok(true)` for a plain packet (TCP or UDP
/// right after the fixed header, keyed straight from it), `Ok(false)` for
/// one keyed through its flow summary; `Err(Some(reason))`: a fragment the
/// rules cannot judge, to drop; `Err(None)`: unreadable.
#[inline(always)]
fn key6(c: &Classify, p: &HookPacket<'_>, key: &mut Key6) -> Result<bool, Option<DropReason>> {
    if key.set_plain(p.l3(), p.meta(), 0) {
        return Ok(true);
    }
    key6_parsed(c, p, key).map(|()| false)
}

/// The key of an IPv6 packet that is not plain (extension headers,
/// fragments, other protocols), through its flow summary.
#[cold]
#[inline(never)]
fn key6_parsed(c: &Classify, p: &HookPacket<'_>, key: &mut Key6) -> Result<(), Option<DropReason>> {
    let s = FlowSummary6::parse(p.l3()).ok_or(None)?;
    if let Some(r) = c.fragments.check6(&s) {
        return Err(Some(r));
    }
    *key = Key6::new(&s, p.meta(), 0);
    Ok(())
}

/// Drop the IPv6 fragments of `mask` the rules cannot judge, under the
/// reason the fragment checks give.
#[cold]
#[inline(never)]
fn refuse_fragments6(c: &Classify, burst: &mut HookBurst<'_, '_>, mask: u64) {
    refuse_each(burst, mask, |l3| {
        FlowSummary6::parse(l3).and_then(|s| c.fragments.check6(&s))
    });
}
