//! A chain: the hooks of one point on one port, ordered by priority, run one
//! after the other over a burst. A chain never changes once built; the
//! control plane replaces the whole [`HookSet`](crate::HookSet) instead.

use crate::{Hook, HookBurst, HookContext, HookCounters, OwnedPacket, Verdict, MAX_BURST};
use std::sync::Arc;

/// One hook in a chain.
pub struct ChainEntry {
    /// Instance name from the config (unique per point and port).
    pub name: String,
    /// Kind name it was built from (the registry's name).
    pub kind: String,
    /// Lower runs first (like netfilter priorities); equal priorities keep
    /// config order.
    pub priority: i32,
    pub hook: Arc<dyn Hook>,
    /// Shared with the entry of the same name in the next snapshot, so that
    /// counters survive a rule reload.
    pub counters: Arc<HookCounters>,
}

/// Which hook stole or dropped which packet in one run.
#[derive(Clone, Copy, Debug)]
pub struct StealLog {
    /// Bit i: packet i was stolen.
    pub mask: u64,
    /// Entry index of the hook that stole packet i (valid where `mask` has
    /// bit i) or dropped it (valid where its verdict is a drop).
    pub owner: [u8; MAX_BURST],
}

impl Default for StealLog {
    fn default() -> Self {
        StealLog {
            mask: 0,
            owner: [0; MAX_BURST],
        }
    }
}

/// Most hooks of a chain whose answers the pipeline's flow memo keeps.
pub const MEMO_HOOKS: usize = 2;

/// Per hook of a chain, each packet's token (see [`HookBurst::set_token`]).
pub type ChainTokens = [[u32; MAX_BURST]; MEMO_HOOKS];

/// The hooks of one point on one port.
#[derive(Default)]
pub struct Chain {
    entries: Box<[ChainEntry]>,
    /// Every hook is flow-pure and there are at most [`MEMO_HOOKS`].
    flow_pure: bool,
    /// Some hook [`confirms`](Hook::confirms).
    confirms: bool,
}

impl Chain {
    /// A chain of `entries`, sorted by priority (stable: config order breaks
    /// ties). At most 255 entries.
    pub fn new(mut entries: Vec<ChainEntry>) -> Self {
        entries.sort_by_key(|e| e.priority);
        entries.truncate(u8::MAX as usize);
        let flow_pure = entries.len() <= MEMO_HOOKS && entries.iter().all(|e| e.hook.flow_pure());
        let confirms = entries.iter().any(|e| e.hook.confirms());
        Chain {
            entries: entries.into_boxed_slice(),
            flow_pure,
            confirms,
        }
    }

    /// Whether the pipeline may remember this chain's answers per flow:
    /// every hook is [`Hook::flow_pure`] and there are at most
    /// [`MEMO_HOOKS`].
    #[inline(always)]
    pub fn flow_pure(&self) -> bool {
        self.flow_pure
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[ChainEntry] {
        &self.entries
    }

    /// Run every hook over the burst in priority order, each seeing the
    /// packets the ones before it accepted; stop early when none is left.
    /// Counts each hook's effect in its counters. Returns who stole what.
    #[inline]
    pub fn run(&self, cx: &HookContext, burst: &mut HookBurst<'_, '_>) -> StealLog {
        self.run_with_tokens(cx, burst, None)
    }

    /// [`Chain::run`], and with `tokens`, each hook's tokens (of the first
    /// [`MEMO_HOOKS`] hooks) are kept there, for the burst's packets; a
    /// hook the run did not reach leaves its row as it was.
    #[inline]
    pub fn run_with_tokens(
        &self,
        cx: &HookContext,
        burst: &mut HookBurst<'_, '_>,
        mut tokens: Option<&mut ChainTokens>,
    ) -> StealLog {
        let mut log = StealLog::default();
        for (k, e) in self.entries.iter().enumerate() {
            let before = burst.tally();
            if before.accepted == 0 {
                break;
            }
            let mask = burst.accepted_mask();
            e.hook.process(cx, burst);
            let after = burst.tally();
            e.counters.record(cx.worker, before, after);
            if after.stolen != before.stolen {
                note_thefts(&mut log, burst, mask, k as u8);
            }
            if after.dropped != before.dropped {
                note_drops(&mut log, burst, mask, k as u8);
            }
            if let Some(row) = tokens.as_deref_mut().and_then(|t| t.get_mut(k)) {
                burst.take_tokens(row);
            }
        }
        log
    }

    /// Whether a run answered from the flow memo must be confirmed
    /// ([`Chain::confirm`]) first.
    #[inline(always)]
    pub fn confirms(&self) -> bool {
        self.confirms
    }

    /// Before the pipeline's flow memo answers the packets of `flows` for
    /// this (flow-pure) chain: [`Hook::confirm`] of each hook that
    /// confirms, with its row of `tokens`; with `leases`, the first such
    /// hook gets them ([`Hook::confirm_leased`]). Returns how many leading
    /// packets every such hook confirmed. One dynamic call per such hook.
    pub fn confirm(
        &self,
        cx: &HookContext,
        flows: crate::Flows<'_>,
        tokens: &ChainTokens,
        mut leases: Option<&mut [crate::Lease]>,
    ) -> usize {
        let mut n = flows.len().min(MAX_BURST);
        // Made for the hooks without leases, once, if any asks.
        let mut all = None;
        for (e, row) in self.entries.iter().zip(tokens) {
            if n > 0 && e.hook.confirms() {
                let k = match leases.take() {
                    Some(l) => e.hook.confirm_leased(cx, flows, &row[..n], l),
                    None => {
                        let all = all.get_or_insert_with(|| {
                            let mut all = [crate::FlowSummary::default(); MAX_BURST];
                            flows.fill(&mut all);
                            all
                        });
                        e.hook.confirm(cx, &all[..n], &row[..n])
                    }
                };
                n = n.min(k);
            }
        }
        n
    }

    /// Count `n` packets the pipeline's flow memo answered as this
    /// (flow-pure) chain accepting every one: each hook's counters as if
    /// it had seen and accepted them, and its own through
    /// [`Hook::replay`] with its row of `tokens`. One dynamic call per
    /// hook.
    pub fn replay(&self, cx: &HookContext, n: usize, tokens: &ChainTokens) {
        let n = n.min(MAX_BURST);
        let all = crate::Tally {
            accepted: n as u32,
            ..crate::Tally::default()
        };
        for (e, row) in self.entries.iter().zip(tokens) {
            e.counters.record(cx.worker, all, all);
            e.hook.replay(cx, &row[..n]);
        }
    }

    /// Hand every stolen packet to the hook that stole it. `take_packet(i)`
    /// gives up packet i of the burst as an owned packet.
    #[cold]
    pub fn hand_over_stolen(
        &self,
        cx: &HookContext,
        log: &StealLog,
        mut take_packet: impl FnMut(usize) -> Option<Box<dyn OwnedPacket>>,
    ) {
        for (k, e) in self.entries.iter().enumerate() {
            let mut mask = log.mask;
            let mut mine = core::iter::from_fn(|| {
                while mask != 0 {
                    let i = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    if usize::from(log.owner[i]) == k {
                        if let Some(p) = take_packet(i) {
                            return Some(p);
                        }
                    }
                }
                None
            });
            e.hook.take(cx, &mut mine);
            // Whatever the hook did not pull is dropped (freed) here.
            mine.for_each(drop);
        }
    }
}

#[cold]
fn note_thefts(log: &mut StealLog, burst: &HookBurst<'_, '_>, before: u64, owner: u8) {
    let mut gone = before & !burst.accepted_mask();
    while gone != 0 {
        let i = gone.trailing_zeros() as usize;
        gone &= gone - 1;
        if burst.verdict(i) == Some(Verdict::Stolen) {
            log.mask |= 1 << i;
            log.owner[i] = owner;
        }
    }
}

/// The hook that dropped them, for the packets `owner` dropped in this
/// step (what a drop capture names).
#[cold]
fn note_drops(log: &mut StealLog, burst: &HookBurst<'_, '_>, before: u64, owner: u8) {
    let mut gone = before & !burst.accepted_mask();
    while gone != 0 {
        let i = gone.trailing_zeros() as usize;
        gone &= gone - 1;
        if matches!(burst.verdict(i), Some(Verdict::Drop(_))) {
            log.owner[i] = owner;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DropReason, HookPacket, HookPoint, PacketMeta};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Drops packets whose first byte equals `byte`; steals those whose
    /// second byte equals `steal`.
    struct ByteHook {
        byte: u8,
        steal: u8,
        calls: AtomicUsize,
        taken: AtomicUsize,
    }

    impl Hook for ByteHook {
        fn process(&self, _cx: &HookContext, burst: &mut HookBurst<'_, '_>) {
            self.calls.fetch_add(1, Ordering::Relaxed);
            burst.for_each_accepted(|_, p| {
                if p.data()[0] == self.byte {
                    Some(Verdict::Drop(DropReason::HookDrop))
                } else if p.data()[1] == self.steal {
                    Some(Verdict::Stolen)
                } else {
                    None
                }
            });
        }
        fn take(&self, _cx: &HookContext, packets: &mut dyn Iterator<Item = Box<dyn OwnedPacket>>) {
            self.taken.fetch_add(packets.count(), Ordering::Relaxed);
        }
    }

    fn entry(name: &str, priority: i32, byte: u8, steal: u8) -> (ChainEntry, Arc<ByteHook>) {
        let hook = Arc::new(ByteHook {
            byte,
            steal,
            calls: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
        });
        (
            ChainEntry {
                name: name.into(),
                kind: "byte".into(),
                priority,
                hook: hook.clone(),
                counters: Arc::new(HookCounters::new(1)),
            },
            hook,
        )
    }

    struct Frame(Vec<u8>, PacketMeta);
    impl OwnedPacket for Frame {
        fn data(&self) -> &[u8] {
            &self.0
        }
        fn data_mut(&mut self) -> &mut [u8] {
            &mut self.0
        }
        fn meta(&self) -> &PacketMeta {
            &self.1
        }
    }

    const CX: HookContext = HookContext {
        worker: 0,
        point: HookPoint::Ingress,
        port: 0,
        now_ns: 0,
    };

    #[test]
    fn priority_order_counters_and_thefts() {
        // Priority 20 runs after 10 even though it is listed first.
        let (late, late_h) = entry("late", 20, 2, 0xEE);
        let (early, early_h) = entry("early", 10, 1, 9);
        let chain = Chain::new(vec![late, early]);
        assert_eq!(chain.entries()[0].name, "early");

        let mut bufs = [[1u8, 0], [2, 0], [3, 9], [4, 0]];
        let mut metas = [PacketMeta::default(); 4];
        let mut pkts: Vec<HookPacket> = bufs
            .iter_mut()
            .zip(metas.iter_mut())
            .map(|(d, m)| HookPacket::new(d, m))
            .collect();
        let mut v = [Verdict::Accept; 4];
        let mut burst = HookBurst::new(&mut pkts, &mut v);
        let log = chain.run(&CX, &mut burst);
        // early: drops [1,..], steals [3,9]; late sees [2,0] and [4,0], drops [2,..].
        assert_eq!(burst.accepted().collect::<Vec<_>>(), vec![3]);
        assert_eq!(log.mask, 0b0100);
        assert_eq!(log.owner[2], 0);
        // The droppers: early dropped packet 0, late packet 1.
        assert_eq!((log.owner[0], log.owner[1]), (0, 1));
        let e = chain.entries()[0].counters.read();
        assert_eq!((e.seen, e.accepted, e.dropped, e.stolen), (4, 2, 1, 1));
        let l = chain.entries()[1].counters.read();
        assert_eq!((l.seen, l.accepted, l.dropped, l.stolen), (2, 1, 1, 0));
        chain.hand_over_stolen(&CX, &log, |i| {
            Some(Box::new(Frame(vec![i as u8], PacketMeta::default())) as Box<dyn OwnedPacket>)
        });
        assert_eq!(early_h.taken.load(Ordering::Relaxed), 1);
        assert_eq!(late_h.taken.load(Ordering::Relaxed), 0);
    }

    /// Flow-pure: tokens are the first byte plus `add`; replay sums them.
    struct TokenHook {
        add: u32,
        replayed: std::sync::Mutex<Vec<u32>>,
    }

    impl Hook for TokenHook {
        fn process(&self, _cx: &HookContext, burst: &mut HookBurst<'_, '_>) {
            for i in 0..burst.len() {
                let t = burst.packet(i).map_or(0, |p| u32::from(p.data()[0]));
                burst.set_token(i, t + self.add);
            }
        }
        fn flow_pure(&self) -> bool {
            true
        }
        fn replay(&self, _cx: &HookContext, tokens: &[u32]) {
            self.replayed.lock().unwrap().extend_from_slice(tokens);
        }
    }

    fn token_entry(name: &str, add: u32) -> (ChainEntry, Arc<TokenHook>) {
        let hook = Arc::new(TokenHook {
            add,
            replayed: Default::default(),
        });
        let e = ChainEntry {
            name: name.into(),
            kind: "token".into(),
            priority: 0,
            hook: hook.clone(),
            counters: Arc::new(HookCounters::new(1)),
        };
        (e, hook)
    }

    #[test]
    fn tokens_are_kept_per_hook_and_replayed_into_each_hook_and_its_counters() {
        let (a, a_h) = token_entry("a", 100);
        let (b, b_h) = token_entry("b", 200);
        let chain = Chain::new(vec![a, b]);
        assert!(chain.flow_pure());
        let mut bufs = [[1u8, 0], [2, 0], [3, 0]];
        let mut metas = [PacketMeta::default(); 3];
        let mut pkts: Vec<HookPacket> = bufs
            .iter_mut()
            .zip(metas.iter_mut())
            .map(|(d, m)| HookPacket::new(d, m))
            .collect();
        let mut v = [Verdict::Accept; 3];
        let mut burst = HookBurst::new(&mut pkts, &mut v);
        let mut tokens: ChainTokens = [[7; MAX_BURST]; MEMO_HOOKS];
        chain.run_with_tokens(&CX, &mut burst, Some(&mut tokens));
        // The burst's three packets; the rest of a row is left as it was.
        assert_eq!(tokens[0][..4], [101, 102, 103, 7]);
        assert_eq!(tokens[1][..4], [201, 202, 203, 7]);
        chain.replay(&CX, 2, &tokens);
        assert_eq!(*a_h.replayed.lock().unwrap(), vec![101, 102]);
        assert_eq!(*b_h.replayed.lock().unwrap(), vec![201, 202]);
        for e in chain.entries() {
            let c = e.counters.read();
            assert_eq!((c.seen, c.accepted, c.dropped), (3 + 2, 3 + 2, 0));
        }
    }

    #[test]
    fn a_chain_is_flow_pure_only_if_every_hook_is_and_it_is_short() {
        let pure = |n: usize| (0..n).map(|i| token_entry(&i.to_string(), 0).0).collect();
        assert!(Chain::new(pure(1)).flow_pure());
        assert!(Chain::new(pure(MEMO_HOOKS)).flow_pure());
        assert!(!Chain::new(pure(MEMO_HOOKS + 1)).flow_pure());
        let mut mixed: Vec<ChainEntry> = pure(1);
        mixed.push(entry("byte", 0, 1, 2).0);
        assert!(!Chain::new(mixed).flow_pure());
    }

    #[test]
    fn later_hooks_are_not_called_when_nothing_is_left() {
        let (a, _) = entry("a", 0, 7, 0xEE);
        let (b, b_h) = entry("b", 1, 0, 0xEE);
        let chain = Chain::new(vec![a, b]);
        let mut bufs = [[7u8, 0], [7, 0]];
        let mut metas = [PacketMeta::default(); 2];
        let mut pkts: Vec<HookPacket> = bufs
            .iter_mut()
            .zip(metas.iter_mut())
            .map(|(d, m)| HookPacket::new(d, m))
            .collect();
        let mut v = [Verdict::Accept; 2];
        let mut burst = HookBurst::new(&mut pkts, &mut v);
        chain.run(&CX, &mut burst);
        assert_eq!(burst.tally().dropped, 2);
        assert_eq!(b_h.calls.load(Ordering::Relaxed), 0);
    }
}
