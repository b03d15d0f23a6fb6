//! A filter's packet path: one burst on one worker. Gather the accepted
//! packets (unreadable ones get the policy, fragments the rules cannot
//! judge are dropped), look them up in the connection table when stateful,
//! classify them through the worker's flow cache, and decide each.

use super::counters::*;
use super::rules::first_of;
use super::rules::Rules;
use super::{Action, Filter};
use crate::conntrack::{ConnTable, CtCommit, CtHint, CtHint6, CtState};
use crate::flow::{proto, FlowSummary, Fragment};
use crate::flow6::FlowSummary6;
use crate::rules::Key6;
use crate::rules::{FlowCache, FlowCache6, Key};
use crate::rules::{CT_ESTABLISHED, CT_NEW as KEY_CT_NEW, CT_RELATED};
use crate::wire::ethernet::ethertype;
use crate::{
    each_index, DropReason, HookBurst, HookContext, HookPacket, HookWorker, Verdict, WorkerStore,
    LOOKAHEAD_SLOTS, MAX_BURST,
};
use std::sync::Arc;

/// The filter on one worker: the shared instance and the worker's
/// flow cache. Its connection table is in the worker's store.
pub(super) struct FilterWorker {
    shared: Arc<Filter>,
    cache: FlowCache,
    /// The same for IPv6 keys.
    cache6: FlowCache6,
    worker: usize,
    /// The arrays of one burst, kept between bursts (not set up per burst).
    judged: Box<Judged>,
}

/// One burst's packets as the filter reads them: the `n` it judges by
/// their rules, their burst index, summary, key and connection state.
struct Judged {
    n: usize,
    idx: [u8; MAX_BURST],
    sums: [FlowSummary; MAX_BURST],
    keys: [Key; MAX_BURST],
    /// Each packet's state, and where its entry is for its commit.
    looked: [(CtState, CtHint); MAX_BURST],
    /// Stateful: the answer each packet carries from ingress (0: none),
    /// read while gathering it.
    ahead: [u32; MAX_BURST],
    results: [u32; MAX_BURST],
    /// Stateful: the keys made (`keys[..keyed]`) and the packet of each,
    /// the others being answered at ingress.
    keyed: usize,
    keyed_at: [u8; MAX_BURST],
    tally: [u64; COUNTERS],
    /// The IPv6 packets, judged on their own keys (`n6` of them): their
    /// burst index, summary, key, connection state (stateful) and answer.
    n6: usize,
    idx6: [u8; MAX_BURST],
    sums6: [FlowSummary6; MAX_BURST],
    keys6: [Key6; MAX_BURST],
    looked6: [(CtState, CtHint6); MAX_BURST],
    /// Stateful: as `ahead`, `keyed` and `keyed_at`, for the IPv6 packets.
    ahead6: [u32; MAX_BURST],
    keyed6: usize,
    keyed6_at: [u8; MAX_BURST],
    results6: [u32; MAX_BURST],
}

impl FilterWorker {
    pub(super) fn new(shared: Arc<Filter>, worker: usize) -> Self {
        FilterWorker {
            cache: shared.classifier.cache(worker),
            cache6: shared.classifier.cache6(worker),
            shared,
            worker,
            judged: Box::new(Judged::new()),
        }
    }
}

impl Judged {
    fn new() -> Self {
        Judged {
            n: 0,
            idx: [0; MAX_BURST],
            sums: [FlowSummary::default(); MAX_BURST],
            keys: [Key::default(); MAX_BURST],
            looked: [(CtState::Untracked, CtHint::NONE); MAX_BURST],
            ahead: [0; MAX_BURST],
            results: [0; MAX_BURST],
            keyed: 0,
            keyed_at: [0; MAX_BURST],
            tally: [0; COUNTERS],
            n6: 0,
            idx6: [0; MAX_BURST],
            sums6: [FlowSummary6::default(); MAX_BURST],
            keys6: [Key6::default(); MAX_BURST],
            looked6: [(CtState::Untracked, CtHint6::NONE); MAX_BURST],
            ahead6: [0; MAX_BURST],
            keyed6: 0,
            keyed6_at: [0; MAX_BURST],
            results6: [0; MAX_BURST],
        }
    }
}

impl Filter {
    fn policy_verdict(&self) -> Option<Verdict> {
        match self.policy {
            Action::Accept => None,
            Action::Drop => Some(Verdict::Drop(DropReason::FilterPolicy)),
        }
    }

    /// Read every accepted packet: an unreadable one gets the policy, a
    /// fragment the rules cannot judge is dropped, the rest are kept in
    /// `j` (keyed now when stateless; stateful, the key waits for the
    /// connection state).
    fn gather(&self, burst: &mut HookBurst<'_, '_>, j: &mut Judged) {
        let stateless = self.conntrack.is_none();
        let mut rest = burst.accepted_mask();
        if let (true, Some(&slot)) = (stateless, self.slot.get()) {
            rest = self.decide_carried(burst, slot, &mut j.tally);
        }
        // Stateful: the lookahead slot whose answers the packets carry.
        let slot = self.slot.get().copied().unwrap_or(usize::MAX);
        let carried = |p: &HookPacket<'_>| p.meta().lookahead.get(slot).copied().unwrap_or(0);
        // A burst whose first packet is IPv6 takes its IPv6 packets to
        // their own reading first (one test a burst for IPv4's).
        let ipv6_first = burst
            .packet(rest.trailing_zeros() as usize)
            .is_some_and(|p| p.meta().protocol == ethertype::IPV6);
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let Some(p) = burst.packet(i) else { continue };
            if ipv6_first && p.meta().protocol == ethertype::IPV6 {
                let g = self.gather6(p, i, carried(p), j);
                self.gathered6(burst, i, g, &mut j.tally);
                continue;
            }
            if stateless && j.keys[j.n].set_plain(p.l3(), p.meta(), 0) {
                j.idx[j.n] = i as u8;
                j.n += 1;
                continue;
            }
            if !stateless && set_plain_summary(&mut j.sums[j.n], p.l3()) {
                // Plain: not a fragment, nothing for the fragment checks.
                j.ahead[j.n] = carried(p);
                j.idx[j.n] = i as u8;
                j.n += 1;
                continue;
            }
            let Some(s) = FlowSummary::parse(p.l3()) else {
                let g = match p.meta().protocol == ethertype::IPV6 {
                    true => self.gather6(p, i, carried(p), j),
                    false => Gathered6::Unreadable,
                };
                self.gathered6(burst, i, g, &mut j.tally);
                continue;
            };
            if let Some(r) = self.fragments.check(&s) {
                burst.set_verdict(i, Verdict::Drop(r));
                continue;
            }
            let n = j.n;
            if stateless {
                j.keys[n] = Key::new(&s, p.meta(), 0);
            } else {
                j.sums[n] = s;
                j.ahead[n] = carried(p);
            }
            j.idx[n] = i as u8;
            j.n += 1;
        }
    }

    /// An IPv6 packet into `j`'s IPv6 arrays with its summary and the
    /// answer it carries from ingress (`ahead`, 0: none; a stateless filter
    /// has decided those that carry one already); stateless, its key too (a
    /// stateful filter keys after its lookup, with the state: `look_up6`).
    /// Or refused as a fragment the rules cannot judge, or unreadable (the
    /// caller gives it the policy). Out of line: the IPv4 path never comes
    /// here.
    #[inline(never)]
    fn gather6(&self, p: &HookPacket<'_>, i: usize, ahead: u32, j: &mut Judged) -> Gathered6 {
        // At most MAX_BURST packets (one per mask bit): `n` stays in range.
        let n = j.n6 % MAX_BURST;
        let stateless = self.conntrack.is_none();
        // Its connection state is written by `look_up6`, or reset to
        // untracked by `decide6` when there is no table.
        (j.ahead6[n], j.idx6[n]) = (ahead, i as u8);
        // Plain TCP or UDP: stateless, the key straight from the header;
        // stateful, the summary (its key waits for the state).
        let plain = match stateless {
            true => j.keys6[n].set_plain(p.l3(), p.meta(), 0),
            false => set_plain_summary6(&mut j.sums6[n], p.l3()),
        };
        if plain {
            j.n6 += 1;
            return Gathered6::Kept;
        }
        let Some(s) = FlowSummary6::parse(p.l3()) else {
            return Gathered6::Unreadable;
        };
        if let Some(r) = self.fragments.check6(&s) {
            return Gathered6::Refused(r);
        }
        if stateless {
            j.keys6[n] = Key6::new(&s, p.meta(), 0);
        }
        j.sums6[n] = s;
        j.n6 += 1;
        Gathered6::Kept
    }

    /// What `gather6` made of packet `i` applied: a fragment the rules
    /// cannot judge dropped; an unreadable packet (of either family) given
    /// the policy, counted as such too.
    #[inline(always)]
    fn gathered6(
        &self,
        burst: &mut HookBurst<'_, '_>,
        i: usize,
        g: Gathered6,
        tally: &mut [u64; COUNTERS],
    ) {
        match g {
            Gathered6::Kept => {}
            Gathered6::Refused(r) => {
                burst.set_verdict(i, Verdict::Drop(r));
            }
            Gathered6::Unreadable => {
                tally[UNPARSED] += 1;
                match self.policy_verdict() {
                    Some(v) => {
                        tally[POLICY_DROP] += 1;
                        burst.set_verdict(i, v);
                    }
                    None => tally[POLICY_ACCEPT] += 1,
                }
            }
        }
    }

    /// Stateful: look the IPv6 packets `gather6` kept up in the worker's
    /// IPv6 table (all slots read first) and count their states under the
    /// same counters as IPv4's; as [`Filter::look_up`], a packet that
    /// carries an answer from ingress is answered by it and the state-only
    /// rules, the others keyed with their state (`keys6[..keyed6]`).
    #[inline(never)]
    fn look_up6(&self, burst: &HookBurst<'_, '_>, table: &mut ConnTable, now: u64, j: &mut Judged) {
        let n = j.n6;
        let l3 = |k: usize| {
            burst
                .packet(usize::from(j.idx6[k]))
                .map_or(&[][..], |p| p.l3())
        };
        table.lookup_burst6(&j.sums6[..n], l3, now, &mut j.looked6[..n]);
        j.keyed6 = 0;
        for k in 0..n {
            let (bits, counter) = ct_key(j.looked6[k].0);
            j.tally[counter] += 1;
            match j.ahead6[k] {
                0 => {
                    let Some(p) = burst.packet(usize::from(j.idx6[k])) else {
                        continue;
                    };
                    let m = j.keyed6;
                    j.keys6[m] = Key6::new(&j.sums6[k], p.meta(), bits);
                    j.keyed6_at[m] = k as u8;
                    j.keyed6 += 1;
                }
                a => {
                    let stateless = self.rules.of_ahead(a - 1);
                    j.results6[k] = first_of(stateless, self.rules.state_first(bits));
                    j.tally[ANSWERED_AHEAD] += 1;
                }
            }
        }
    }

    /// Stateful: classify the IPv6 keys `look_up6` made and put each answer
    /// at its packet.
    fn classify_tracked6(&self, cache6: &mut FlowCache6, j: &mut Judged) {
        let m = j.keyed6;
        if m == 0 {
            return;
        }
        let mut answers = [0u32; MAX_BURST];
        self.classifier
            .classify6(cache6, &j.keys6[..m], &mut answers[..m]);
        for (&k, a) in j.keyed6_at[..m].iter().zip(answers) {
            j.results6[usize::from(k)] = a;
        }
    }

    /// Classify and decide the IPv6 packets `gather6` kept (looked up in
    /// `table` first when there is one: a stateful filter's), as
    /// [`Filter::decide`] decides IPv4's: a blind RST dropped, the others
    /// by their rule or the policy, count rules counted, an accepted new
    /// flow committed (the policy when the table is full).
    #[inline(never)]
    fn decide6(
        &self,
        burst: &mut HookBurst<'_, '_>,
        mut table: Option<&mut ConnTable>,
        now: u64,
        cache6: &mut FlowCache6,
        j: &mut Judged,
    ) {
        let n = j.n6;
        if let Some(t) = table.as_deref_mut() {
            self.look_up6(burst, t, now, j);
            self.classify_tracked6(cache6, j);
        } else {
            // Stateless, or no table on this worker (none of the
            // pipeline's): untracked.
            j.looked6[..n].fill((CtState::Untracked, CtHint6::NONE));
            if self.conntrack.is_some() {
                for k in 0..n {
                    if let Some(p) = burst.packet(usize::from(j.idx6[k])) {
                        j.keys6[k] = Key6::new(&j.sums6[k], p.meta(), 0);
                    }
                }
            }
            self.classifier
                .classify6(cache6, &j.keys6[..n], &mut j.results6[..n]);
        }
        for k in 0..n {
            let i = usize::from(j.idx6[k]);
            let (state, hint) = j.looked6[k];
            if state == CtState::Invalid {
                // A blind RST (counted under ct_invalid_dropped).
                burst.set_verdict(i, Verdict::Drop(DropReason::CtInvalid));
                continue;
            }
            let hit = j.results6[k].checked_sub(1).map(|r| r as usize);
            j.tally[COUNTED] += self.counted6(&j.keys6[k], hit);
            let (mut action, mut by_rule) = match hit.and_then(|r| self.rules.actions.get(r)) {
                Some(a) => (*a, true),
                None => (self.policy, false),
            };
            if let (Action::Accept, CtState::New, Some(t)) = (action, state, table.as_deref_mut()) {
                let l3 = || burst.packet(i).map_or(&[][..], |p| p.l3());
                if t.commit_looked6(&j.sums6[k], l3, now, hint) == CtCommit::Full {
                    // Table full: a new flow gets the default policy.
                    j.tally[CT_FULL_POLICY] += 1;
                    action = self.policy;
                    by_rule &= action == Action::Accept;
                }
            }
            j.tally[apply(burst, i, action, by_rule)] += 1;
        }
    }

    /// [`Filter::counted`] for an IPv6 key.
    fn counted6(&self, key: &Key6, hit: Option<usize>) -> u64 {
        let r = &self.rules;
        let limit = hit.map_or(usize::MAX, |h| r.terminal_index[h]);
        r.count_rules
            .iter()
            .filter(|(ci, rule)| *ci < limit && rule.matches6(key))
            .count() as u64
    }

    /// Stateful: look every gathered packet up in the worker's table (all
    /// slots read first), count its state and make its key with it.
    fn look_up(&self, burst: &HookBurst<'_, '_>, table: &mut ConnTable, now: u64, j: &mut Judged) {
        let n = j.n;
        let l3 = |k: usize| {
            burst
                .packet(usize::from(j.idx[k]))
                .map_or(&[][..], |p| p.l3())
        };
        table.lookup_burst(&j.sums[..n], l3, now, &mut j.looked[..n]);
        j.keyed = 0;
        for k in 0..n {
            let (bits, counter) = ct_key(j.looked[k].0);
            j.tally[counter] += 1;
            match j.ahead[k] {
                0 => {
                    let Some(p) = burst.packet(usize::from(j.idx[k])) else {
                        continue;
                    };
                    let m = j.keyed;
                    j.keys[m] = Key::new(&j.sums[k], p.meta(), bits);
                    j.keyed_at[m] = k as u8;
                    j.keyed += 1;
                }
                a => {
                    // The stateless rules answered at ingress; the
                    // state-only rules answer for the state found here.
                    let stateless = self.rules.of_ahead(a - 1);
                    j.results[k] = first_of(stateless, self.rules.state_first(bits));
                    j.tally[ANSWERED_AHEAD] += 1;
                }
            }
        }
    }

    /// Stateful: classify the keys `look_up` made and put each answer at
    /// its packet.
    fn classify_tracked(&self, cache: &mut FlowCache, j: &mut Judged) {
        let m = j.keyed;
        if m == 0 {
            return;
        }
        let mut answers = [0u32; MAX_BURST];
        self.classifier
            .classify(cache, &j.keys[..m], &mut answers[..m]);
        for (&k, a) in j.keyed_at[..m].iter().zip(answers) {
            j.results[usize::from(k)] = a;
        }
    }

    /// The `count` rules before the terminal rule that matched packet `k`
    /// (all of them when none did) that its key matches.
    fn counted(&self, j: &Judged, k: usize, hit: Option<usize>) -> u64 {
        let r = &self.rules;
        if r.count_rules.is_empty() {
            return 0;
        }
        let limit = hit.map_or(usize::MAX, |h| r.terminal_index[h]);
        r.count_rules
            .iter()
            .filter(|(ci, rule)| *ci < limit && rule.matches(&j.keys[k]))
            .count() as u64
    }

    /// Decide packet `k` of `j` from its classifier result: count rules,
    /// the action of its rule or the policy, a new flow committed to the
    /// table when accepted (the policy when the table is full).
    fn decide(
        &self,
        burst: &mut HookBurst<'_, '_>,
        table: Option<&mut ConnTable>,
        now: u64,
        j: &mut Judged,
        k: usize,
    ) {
        let i = usize::from(j.idx[k]);
        if j.looked[k].0 == CtState::Invalid {
            // A blind RST: dropped whatever the rules say (counted under
            // ct_invalid_dropped by its lookup).
            burst.set_verdict(i, Verdict::Drop(DropReason::CtInvalid));
            return;
        }
        let hit = j.results[k].checked_sub(1).map(|r| r as usize);
        j.tally[COUNTED] += self.counted(j, k, hit);
        let (mut action, mut by_rule) = match hit.and_then(|r| self.rules.actions.get(r)) {
            Some(a) => (*a, true),
            None => (self.policy, false),
        };
        if action == Action::Accept && j.looked[k].0 == CtState::New {
            if let Some(t) = table {
                // The bytes are read for a TCP SYN only.
                let l3 = || burst.packet(i).map_or(&[][..], |p| p.l3());
                if t.commit_looked(&j.sums[k], l3, now, j.looked[k].1) == CtCommit::Full {
                    // Table full: a new flow gets the default policy.
                    j.tally[CT_FULL_POLICY] += 1;
                    action = self.policy;
                    by_rule &= action == Action::Accept;
                }
            }
        }
        j.tally[apply(burst, i, action, by_rule)] += 1;
    }

    /// Stateless: decide every accepted packet that carries an answer
    /// from ingress in lookahead slot `slot` by the table made for it
    /// ([`carried_table`]), counting per burst. Returns the packets that
    /// carry none, for the rules.
    #[inline(always)]
    fn decide_carried(
        &self,
        burst: &mut HookBurst<'_, '_>,
        slot: usize,
        tally: &mut [u64; COUNTERS],
    ) -> u64 {
        // Never empty: `carried_table` makes the "none carried" entry
        // first and the policy's for answers past the rules last.
        let table = &self.carried[..];
        let Some(last) = table.len().checked_sub(1) else {
            return burst.accepted_mask();
        };
        let slot = slot % LOOKAHEAD_SLOTS;
        // Bit i of `by_counter[c]`: packet i counts under counter c.
        let mut by_counter = [0u64; CARRIED_COUNTERS];
        let packets = burst.packets();
        each_index(burst.accepted_mask(), packets.len(), |i| {
            let Some(p) = packets.get(i) else { return };
            // `last` is in range: no test of the index.
            let c = table[(p.meta().lookahead[slot] as usize).min(last)];
            by_counter[usize::from(c) % CARRIED_COUNTERS] |= 1 << i;
        });
        for c in [RULE_ACCEPT, RULE_DROP, POLICY_ACCEPT, POLICY_DROP] {
            tally[c] += u64::from(by_counter[c].count_ones());
        }
        let rest = by_counter[usize::from(NOT_CARRIED)];
        tally[ANSWERED_AHEAD] += u64::from((burst.accepted_mask() & !rest).count_ones());
        let (rule_drops, policy_drops) = (by_counter[RULE_DROP], by_counter[POLICY_DROP]);
        drop_all(burst, rule_drops, Verdict::Drop(DropReason::FilterRule));
        drop_all(burst, policy_drops, Verdict::Drop(DropReason::FilterPolicy));
        rest
    }
}

/// The flow summary of a plain packet, read straight from its IPv4 header
/// into `s`: a 20-byte header (no options), not a fragment, TCP or UDP
/// with its header inside the datagram and the frame. For such a packet
/// this is exactly `FlowSummary::parse(l3)` without the general parse's
/// branches (the benchmark's and most traffic is plain); false for every
/// other packet, leaving `s` as it was: the caller parses it.
#[inline(always)]
pub(super) fn set_plain_summary(s: &mut FlowSummary, l3: &[u8]) -> bool {
    const IHL5: usize = 20;
    let Some(ip) = l3.first_chunk::<24>() else {
        return false;
    };
    // Version 4, IHL 5; no fragment offset and no More Fragments (DF may
    // be set).
    if ip[0] != 0x45 || (ip[6] & 0x3f) | ip[7] != 0 {
        return false;
    }
    // The L4 header inside both the datagram and the frame.
    let l4_end = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(l3.len());
    let tcp_flags = match ip[9] {
        proto::UDP if l4_end >= IHL5 + 8 => 0,
        proto::TCP if l4_end >= IHL5 + 20 => match l3.get(IHL5 + 13) {
            Some(&f) => f,
            None => return false,
        },
        _ => return false,
    };
    *s = FlowSummary {
        src: u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]),
        dst: u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]),
        proto: ip[9],
        dscp: ip[1] >> 2,
        fragment: Fragment::None,
        frag_offset_one: false,
        l4: true,
        sport: u16::from_be_bytes([ip[20], ip[21]]),
        dport: u16::from_be_bytes([ip[22], ip[23]]),
        tcp_flags,
        icmp_type: 0,
        icmp_code: 0,
        l4_offset: IHL5 as u16,
    };
    true
}

/// [`set_plain_summary`] for IPv6: the summary of a packet whose TCP or UDP
/// header follows the fixed header (no extension header), inside the
/// payload and the frame, read straight from the headers. For such a
/// packet this is exactly `FlowSummary6::parse(l3)` without the walk of
/// the extension headers; false for every other packet, leaving `s` as it
/// was.
#[inline(always)]
pub(super) fn set_plain_summary6(s: &mut FlowSummary6, l3: &[u8]) -> bool {
    const FIXED: usize = crate::wire::ipv6::HEADER_LEN;
    let Some((h, tcp_flags)) = FlowSummary6::plain(l3) else {
        return false;
    };
    let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
    src.copy_from_slice(&h[8..24]);
    dst.copy_from_slice(&h[24..40]);
    *s = FlowSummary6 {
        src,
        dst,
        proto: h[6],
        dscp: (u16::from_be_bytes([h[0], h[1]]) >> 6) as u8 & 0x3f,
        fragment: Fragment::None,
        frag_offset_one: false,
        l4: true,
        sport: u16::from_be_bytes([h[FIXED], h[FIXED + 1]]),
        dport: u16::from_be_bytes([h[FIXED + 2], h[FIXED + 3]]),
        tcp_flags,
        icmp_type: 0,
        icmp_code: 0,
        l4_offset: FIXED as u16,
    };
    true
}

/// What a carried answer leads to, by the answer (`PacketMeta::lookahead`:
/// 0 none, else 1 + the result of the rules offered ahead): the counter it
/// counts under (`RULE_ACCEPT`, `RULE_DROP`, `POLICY_ACCEPT`,
/// `POLICY_DROP`), [`NOT_CARRIED`] for 0. The verdict follows from the
/// counter. The last entry, the policy's, stands for every answer past the
/// rules.
pub(super) fn carried_table(rules: &Rules, policy: Action) -> Vec<u8> {
    let of = |result: u32| {
        let rule = result
            .checked_sub(1)
            .and_then(|r| rules.actions.get(r as usize));
        let (action, by_rule) = rule.map_or((policy, false), |a| (*a, true));
        counter_of(action, by_rule) as u8
    };
    let mut table = vec![NOT_CARRIED];
    table.extend((0..=rules.ahead.len() as u32).map(|a| of(rules.of_ahead(a))));
    // Answers past the rules (none is made): the policy.
    table.push(of(0));
    table
}

/// What `Filter::gather6` made of an IPv6 packet.
enum Gathered6 {
    /// In the IPv6 arrays, to be judged.
    Kept,
    /// A fragment the rules cannot judge: dropped for this reason.
    Refused(DropReason),
    /// Cannot be read: the policy.
    Unreadable,
}

/// A carried table's entry for "no answer carried".
pub(super) const NOT_CARRIED: u8 = 4;
const CARRIED_COUNTERS: usize = 8;

/// Drop every packet of `mask` with verdict `v`.
#[inline(always)]
fn drop_all(burst: &mut HookBurst<'_, '_>, mut mask: u64, v: Verdict) {
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        burst.set_verdict(i, v);
    }
}

/// The counter a verdict for `action`, by a rule or the policy, counts
/// under.
#[inline(always)]
fn counter_of(action: Action, by_rule: bool) -> usize {
    match (action, by_rule) {
        (Action::Accept, true) => RULE_ACCEPT,
        (Action::Accept, false) => POLICY_ACCEPT,
        (Action::Drop, true) => RULE_DROP,
        (Action::Drop, false) => POLICY_DROP,
    }
}

/// Give packet `i` its verdict for `action`, by a rule or the policy;
/// returns the counter it counts under.
#[inline(always)]
fn apply(burst: &mut HookBurst<'_, '_>, i: usize, action: Action, by_rule: bool) -> usize {
    match (action, by_rule) {
        (Action::Accept, true) => RULE_ACCEPT,
        (Action::Accept, false) => POLICY_ACCEPT,
        (Action::Drop, true) => {
            burst.set_verdict(i, Verdict::Drop(DropReason::FilterRule));
            RULE_DROP
        }
        (Action::Drop, false) => {
            burst.set_verdict(i, Verdict::Drop(DropReason::FilterPolicy));
            POLICY_DROP
        }
    }
}

/// A packet's connection state as key bits, and the counter it counts under.
fn ct_key(state: CtState) -> (u8, usize) {
    match state {
        CtState::New => (KEY_CT_NEW, CT_NEW),
        CtState::Established => (CT_ESTABLISHED, CT_EST),
        CtState::Related => (CT_RELATED, CT_REL),
        CtState::Untracked => (0, CT_UNTRACKED),
        // Dropped before the rules (see `Filter::decide`).
        CtState::Invalid => (0, CT_INVALID),
    }
}

impl HookWorker for FilterWorker {
    fn process(
        &mut self,
        cx: &HookContext,
        store: &mut WorkerStore,
        burst: &mut HookBurst<'_, '_>,
    ) {
        let f = &*self.shared;
        // The worker's own arrays, reused burst after burst: every element a
        // burst reads, it wrote first (`looked` is written by the lookup, or
        // reset below when there is none).
        let j = &mut *self.judged;
        (j.n, j.n6) = (0, 0);
        j.tally = [0; COUNTERS];
        f.gather(burst, j);
        let n = j.n;
        // Stateful: the worker's table (made by `Hook::worker`).
        let mut table = match (&f.conntrack, n + j.n6) {
            (Some(ct), 1..) => store.get_mut::<ConnTable>(ct.key),
            _ => None,
        };
        if let Some(t) = table.as_deref_mut() {
            f.look_up(burst, t, cx.now_ns, j);
            f.classify_tracked(&mut self.cache, j);
        } else {
            if f.conntrack.is_some() {
                // No table on this worker (none of the pipeline's): untracked.
                j.looked[..n].fill((CtState::Untracked, CtHint::NONE));
                for k in 0..n {
                    if let Some(p) = burst.packet(usize::from(j.idx[k])) {
                        j.keys[k] = Key::new(&j.sums[k], p.meta(), 0);
                    }
                }
            }
            if n > 0 {
                f.classifier
                    .classify(&mut self.cache, &j.keys[..n], &mut j.results[..n]);
            }
        }
        for k in 0..n {
            f.decide(burst, table.as_deref_mut(), cx.now_ns, j, k);
        }
        if j.n6 != 0 {
            f.decide6(burst, table.as_deref_mut(), cx.now_ns, &mut self.cache6, j);
        }
        f.counts.add_all(self.worker, &j.tally);
        if let (Some(ct), Some(t)) = (&f.conntrack, table) {
            for (c, v) in table_values(t).into_iter().enumerate() {
                ct.published.set(self.worker, c, v);
            }
        }
    }
}
