//! A chain: the hooks of one point on one port, ordered by priority, run one
//! after the other over a burst. A chain never changes once built; the
//! control plane replaces the whole [`HookSet`](crate::HookSet) instead.

use crate::MAX_BURST;
use crate::{Hook, HookBurst, HookContext, HookCounters, OwnedPacket, Verdict, WorkerHooks};
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

/// The hooks of one point on one port.
#[derive(Default)]
pub struct Chain {
    entries: Box<[ChainEntry]>,
    /// Some entry's hook may write frame bytes ([`Hook::writes_frames`]).
    may_write: bool,
}

impl Chain {
    /// A chain of `entries`, sorted by priority (stable: config order breaks
    /// ties). At most 255 entries.
    pub fn new(mut entries: Vec<ChainEntry>) -> Self {
        entries.sort_by_key(|e| e.priority);
        entries.truncate(u8::MAX as usize);
        Chain {
            may_write: entries.iter().any(|e| e.hook.writes_frames()),
            entries: entries.into_boxed_slice(),
        }
    }

    /// Whether some hook of the chain may change frame bytes: when none
    /// may, no frame of a burst it ran over was written
    /// ([`HookPacket::written`](crate::HookPacket::written)), and the
    /// pipeline need not look.
    #[inline(always)]
    pub fn may_write(&self) -> bool {
        self.may_write
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[ChainEntry] {
        &self.entries
    }

    /// Run every hook over the burst in priority order, each seeing the
    /// packets the ones before it accepted; stop early when none is left.
    /// Each hook runs as its `HookWorker` on the calling worker (in `workers`, the
    /// worker's own: `cx.point` and `cx.port` say which chain this is).
    /// Counts each hook's effect in its counters. Returns who stole what.
    #[inline]
    pub fn run(
        &self,
        cx: &HookContext,
        workers: &mut WorkerHooks,
        burst: &mut HookBurst<'_, '_>,
    ) -> StealLog {
        let mut log = StealLog::default();
        let (hooks, store) = workers.hooks_for(cx.point, cx.port, self);
        for (k, (e, h)) in self.entries.iter().zip(hooks).enumerate() {
            let before = burst.tally();
            if before.accepted == 0 {
                break;
            }
            let mask = burst.accepted_mask();
            let written_before = cfg!(debug_assertions).then(|| burst.written());
            h.worker.process(cx, store, burst);
            if let Some(before) = written_before {
                debug_assert!(
                    e.hook.writes_frames() || burst.written() == before,
                    "hook {:?} ({}) wrote frames but says it never does",
                    e.name,
                    e.kind
                );
            }
            let after = burst.tally();
            e.counters.record(cx.worker, before, after);
            if after.stolen != before.stolen {
                note_thefts(&mut log, burst, mask, k as u8);
            }
            if after.dropped != before.dropped {
                note_drops(&mut log, burst, mask, k as u8);
            }
        }
        log
    }

    /// Hand every stolen packet to the hook that stole it (its
    /// `HookWorker` on this worker). `take_packet(i)` gives up packet i of the burst as an
    /// owned packet.
    #[cold]
    pub fn hand_over_stolen(
        &self,
        cx: &HookContext,
        workers: &mut WorkerHooks,
        log: &StealLog,
        mut take_packet: impl FnMut(usize) -> Option<Box<dyn OwnedPacket>>,
    ) {
        let (hooks, _) = workers.hooks_for(cx.point, cx.port, self);
        for (k, h) in hooks.iter_mut().enumerate() {
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
            h.worker.take(cx, &mut mine);
            // Whatever the hook did not pull is dropped (freed) here.
            mine.for_each(drop);
        }
    }

    /// Hand one stolen packet to entry `entry`, the hook that stole it (its
    /// `HookWorker` on this worker). Dropped (freed) if there is no such entry.
    #[cold]
    pub fn hand_over(
        &self,
        cx: &HookContext,
        workers: &mut WorkerHooks,
        entry: u8,
        packet: Box<dyn OwnedPacket>,
    ) {
        let (hooks, _) = workers.hooks_for(cx.point, cx.port, self);
        if let Some(h) = hooks.get_mut(usize::from(entry)) {
            h.worker.take(cx, &mut std::iter::once(packet));
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
    use crate::{DropReason, HookPacket, HookPoint, HookWorker, PacketMeta, WorkerStore};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Drops packets whose first byte equals `byte`; steals those whose
    /// second byte equals `steal`. Its `HookWorker`s count calls and packets taken
    /// in their own fields and publish them on `calls` and `taken`.
    struct ByteHook {
        byte: u8,
        steal: u8,
        calls: Arc<AtomicUsize>,
        taken: Arc<AtomicUsize>,
    }

    struct BytePart {
        byte: u8,
        steal: u8,
        calls: usize,
        taken: usize,
        calls_out: Arc<AtomicUsize>,
        taken_out: Arc<AtomicUsize>,
    }

    impl Hook for ByteHook {
        fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
            Box::new(BytePart {
                byte: self.byte,
                steal: self.steal,
                calls: 0,
                taken: 0,
                calls_out: self.calls.clone(),
                taken_out: self.taken.clone(),
            })
        }
    }

    impl HookWorker for BytePart {
        fn process(&mut self, _: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
            self.calls += 1;
            self.calls_out.store(self.calls, Ordering::Relaxed);
            let (byte, steal) = (self.byte, self.steal);
            burst.for_each_accepted(|_, p| {
                if p.data()[0] == byte {
                    Some(Verdict::Drop(DropReason::HookDrop))
                } else if p.data()[1] == steal {
                    Some(Verdict::Stolen)
                } else {
                    None
                }
            });
        }
        fn take(
            &mut self,
            _: &HookContext,
            packets: &mut dyn Iterator<Item = Box<dyn OwnedPacket>>,
        ) {
            self.taken += packets.count();
            self.taken_out.store(self.taken, Ordering::Relaxed);
        }
    }

    fn entry(name: &str, priority: i32, byte: u8, steal: u8) -> (ChainEntry, Arc<ByteHook>) {
        let hook = Arc::new(ByteHook {
            byte,
            steal,
            calls: Arc::default(),
            taken: Arc::default(),
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
        let mut workers = WorkerHooks::new(0);

        let mut bufs = [[1u8, 0], [2, 0], [3, 9], [4, 0]];
        let mut metas = [PacketMeta::default(); 4];
        let mut pkts: Vec<HookPacket> = bufs
            .iter_mut()
            .zip(metas.iter_mut())
            .map(|(d, m)| HookPacket::new(d, m))
            .collect();
        let mut v = [Verdict::Accept; 4];
        let mut burst = HookBurst::new(&mut pkts, &mut v);
        let log = chain.run(&CX, &mut workers, &mut burst);
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
        chain.hand_over_stolen(&CX, &mut workers, &log, |i| {
            Some(Box::new(Frame(vec![i as u8], PacketMeta::default())) as Box<dyn OwnedPacket>)
        });
        assert_eq!(early_h.taken.load(Ordering::Relaxed), 1);
        assert_eq!(late_h.taken.load(Ordering::Relaxed), 0);
        let one = Box::new(Frame(vec![0], PacketMeta::default()));
        chain.hand_over(&CX, &mut workers, 0, one);
        assert_eq!(
            early_h.taken.load(Ordering::Relaxed),
            2,
            "the same worker hook"
        );
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
        chain.run(&CX, &mut WorkerHooks::new(0), &mut burst);
        assert_eq!(burst.tally().dropped, 2);
        assert_eq!(b_h.calls.load(Ordering::Relaxed), 0);
    }

    /// Each worker runs its own `HookWorker`: state one worker's keeps is not
    /// another's.
    #[test]
    fn each_worker_runs_its_own_part() {
        let (a, a_h) = entry("a", 0, 0xFF, 0xEE);
        let chain = Chain::new(vec![a]);
        let (mut w0, mut w1) = (WorkerHooks::new(0), WorkerHooks::new(1));
        for (w, n) in [(&mut w0, 3), (&mut w1, 2)] {
            for _ in 0..n {
                let mut buf = [0u8, 0];
                let mut meta = PacketMeta::default();
                let mut pkts = [HookPacket::new(&mut buf, &mut meta)];
                let mut v = [Verdict::Accept; 1];
                chain.run(&CX, w, &mut HookBurst::new(&mut pkts, &mut v));
            }
        }
        // The last to run (worker 1's) counted its own 2 calls.
        assert_eq!(a_h.calls.load(Ordering::Relaxed), 2);
        assert_eq!(chain.entries()[0].counters.read().seen, 5);
    }

    /// Writes byte 0 of every packet while saying it never writes.
    struct Liar;
    struct LiarPart;
    impl Hook for Liar {
        fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
            Box::new(LiarPart)
        }
        fn writes_frames(&self) -> bool {
            false
        }
    }
    impl HookWorker for LiarPart {
        fn process(&mut self, _: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
            burst.for_each_accepted(|_, p| {
                p.data_mut()[0] = 0;
                None
            });
        }
    }

    fn liar() -> ChainEntry {
        ChainEntry {
            name: "liar".into(),
            kind: "liar".into(),
            priority: 0,
            hook: Arc::new(Liar),
            counters: Arc::new(HookCounters::new(1)),
        }
    }

    #[test]
    fn a_chain_may_write_when_one_of_its_hooks_may() {
        assert!(!Chain::new(vec![liar()]).may_write());
        assert!(!Chain::default().may_write());
        let (byte, _) = entry("byte", 0, 1, 2);
        assert!(
            Chain::new(vec![liar(), byte]).may_write(),
            "the default is true"
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "wrote frames but says it never does")]
    fn a_hook_that_writes_after_saying_it_never_does_is_caught() {
        let chain = Chain::new(vec![liar()]);
        let mut buf = [1u8, 2];
        let mut meta = PacketMeta::default();
        let mut pkts = [HookPacket::new(&mut buf, &mut meta)];
        let mut v = [Verdict::Accept; 1];
        chain.run(
            &CX,
            &mut WorkerHooks::new(0),
            &mut HookBurst::new(&mut pkts, &mut v),
        );
    }
}
