//! The `Hook` trait (what the config built, shared by the workers) and
//! `HookWorker` (a hook on one worker, `&mut` per burst: one call
//! per burst, a verdict per packet).

use crate::{HookBurst, WorkerStore};

/// Where in the pipeline a chain runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookPoint {
    /// After L2 type translation, before routing, per input port (like tc
    /// clsact ingress). `meta().out_port` and `meta().next_hop` are not set yet.
    Ingress,
    /// After routing, before neighbour output, per output port (like the
    /// netfilter egress hook). `meta().out_port` and `meta().next_hop` are set;
    /// the frame still has its input Ethernet header (the output header is
    /// written by the neighbour stage after the chain).
    Egress,
}

impl HookPoint {
    pub const ALL: [HookPoint; 2] = [HookPoint::Ingress, HookPoint::Egress];

    pub const fn name(self) -> &'static str {
        match self {
            HookPoint::Ingress => "ingress",
            HookPoint::Egress => "egress",
        }
    }

    pub fn from_name(s: &str) -> Option<HookPoint> {
        HookPoint::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// What a hook knows about the call besides the packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookContext {
    /// Index of the calling worker, `0..workers` of the
    /// [`BuildContext`](crate::BuildContext) the hook was built with (the
    /// index of its per-worker counters).
    pub worker: usize,
    /// The point and the port (input port at ingress, output port at
    /// egress) of the chain being run.
    pub point: HookPoint,
    pub port: u16,
    /// Monotonic time in nanoseconds, read once per burst.
    pub now_ns: u64,
}

/// A hook as the config built it: what every worker shares, immutable
/// (its rules, its classifier, the counters the statistics read).
/// Implementations are safe Rust.
///
/// A hook does its work through a [`HookWorker`] on each worker, which it
/// makes with [`Hook::worker`]: the worker owns that and hands it
/// to the pipeline as `&mut` once per burst, so per-worker state (a cache,
/// token buckets, a connection table in the [`WorkerStore`]) needs no lock
/// and no atomic read-modify-write. What the control plane reads
/// ([`Hook::stats`]) the `HookWorker`s publish: per-worker counters written with
/// plain stores ([`WorkerCounters`](crate::worker_counters::WorkerCounters)).
///
/// A hook that drops every packet after the first `limit` a worker sees,
/// each worker counting its own:
///
/// ```
/// use hooks::worker_counters::WorkerCounters;
/// use hooks::{
///     DropReason, Hook, HookBurst, HookContext, HookPacket, HookPoint, HookWorker, PacketMeta,
///     Verdict, WorkerStore,
/// };
/// use std::sync::Arc;
///
/// /// Shared: the configuration and what the workers publish.
/// struct Limit {
///     limit: u64,
///     dropped: Arc<WorkerCounters<1>>,
/// }
///
/// /// The hook on one worker: its own count, no lock.
/// struct LimitWorker {
///     limit: u64,
///     seen: u64,
///     dropped: Arc<WorkerCounters<1>>,
///     worker: usize,
/// }
///
/// impl Hook for Limit {
///     fn worker(&self, worker: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
///         let dropped = self.dropped.clone();
///         Box::new(LimitWorker { limit: self.limit, seen: 0, dropped, worker })
///     }
///     fn stats(&self) -> Vec<(&'static str, u64)> {
///         vec![("dropped", self.dropped.sum(0))]
///     }
/// }
///
/// impl HookWorker for LimitWorker {
///     fn process(&mut self, _: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
///         let (limit, seen) = (self.limit, &mut self.seen);
///         let mut dropped = 0;
///         burst.for_each_accepted(|_, _| {
///             *seen += 1;
///             (*seen > limit).then(|| {
///                 dropped += 1;
///                 Verdict::Drop(DropReason::HookDrop)
///             })
///         });
///         self.dropped.add(self.worker, 0, dropped);
///     }
/// }
///
/// let hook = Limit { limit: 2, dropped: Arc::new(WorkerCounters::new(1)) };
/// // What a worker does once, at its quiescent point...
/// let mut store = WorkerStore::new();
/// let mut on_worker = hook.worker(0, &mut store);
/// // ...and per burst.
/// let mut frames = [[0u8; 60]; 3];
/// let mut metas = [PacketMeta::default(); 3];
/// let mut pkts: Vec<HookPacket> = frames
///     .iter_mut()
///     .zip(metas.iter_mut())
///     .map(|(f, m)| HookPacket::new(f, m))
///     .collect();
/// let mut verdicts = [Verdict::Accept; 3];
/// let cx = HookContext { worker: 0, point: HookPoint::Ingress, port: 0, now_ns: 0 };
/// on_worker.process(&cx, &mut store, &mut HookBurst::new(&mut pkts, &mut verdicts));
/// assert_eq!(verdicts[2], Verdict::Drop(DropReason::HookDrop));
/// assert_eq!(hook.stats(), vec![("dropped", 1)]);
/// ```
pub trait Hook: Send + Sync {
    /// This hook on worker `worker` (`0..workers` of the
    /// [`BuildContext`](crate::BuildContext)). Called at the worker's
    /// quiescent point, when a hook set with this hook first reaches it:
    /// allocating here is fine, never in [`HookWorker::process`]. `store` is
    /// the worker's own, kept across hook sets: state a kind's instances
    /// share on the worker and that outlives a reload lives there.
    fn worker(&self, worker: usize, store: &mut WorkerStore) -> Box<dyn HookWorker>;

    /// Counters of the hook's own (e.g. a connection table's size and
    /// refusals), by name, for the statistics. Read from the control
    /// lcore, so they are what the workers publish, summed.
    fn stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The hook's side of a lookahead ([`crate::lookahead`]): an ingress
    /// hook that answers egress rules in its own lookup, or an egress hook
    /// that takes such answers. None by default.
    fn lookahead(&self) -> Option<&dyn crate::lookahead::Lookahead> {
        None
    }

    /// Whether this hook's workers may change frame bytes
    /// ([`HookPacket::data_mut`](crate::HookPacket::data_mut)). After a
    /// chain the pipeline looks for written frames, to check them again,
    /// only when some hook of the chain may write ([`Chain::may_write`](crate::Chain::may_write)):
    /// a hook that answers `false` must never ask for the bytes to change
    /// them (debug builds assert it after each call). True by default.
    fn writes_frames(&self) -> bool {
        true
    }
}

/// A [`Hook`] on one worker: a packet function with the worker's
/// state. It runs on a worker lcore between `rx_burst` and `tx_burst` and
/// must not block.
///
/// The pipeline calls [`HookWorker::process`] once per burst, with every
/// packet that reached this point still accepted. A hook sets verdicts
/// through the burst; packets it leaves alone are accepted. A hook must not
/// panic on any input bytes: a property test feeds every built-in hook
/// arbitrary bytes.
///
/// At either point a hook may change a packet's mark and class and its
/// frame's bytes, nothing else ([`HookPacket`](crate::HookPacket) is the
/// view that says so): the metadata the pipeline routes by is read-only to
/// it, and a frame it wrote is checked again before it is routed or sent.
pub trait HookWorker: Send {
    /// One burst. `store` is the worker's [`WorkerStore`] (the one
    /// [`Hook::worker`] was given).
    fn process(&mut self, cx: &HookContext, store: &mut WorkerStore, burst: &mut HookBurst<'_, '_>);

    /// Packets this hook stole (verdict `Stolen`) in the burst just
    /// processed, now owned by the hook: keep them (bounded!) or drop them
    /// (which frees them). The default drops them.
    fn take(&mut self, cx: &HookContext, packets: &mut dyn Iterator<Item = Box<dyn OwnedPacket>>) {
        let _ = cx;
        packets.for_each(drop);
    }
}

/// A packet the pipeline handed over with a `Stolen` verdict. Dropping it
/// returns its buffer to the pool it came from.
pub trait OwnedPacket: Send {
    fn data(&self) -> &[u8];
    fn data_mut(&mut self) -> &mut [u8];
    fn meta(&self) -> &crate::PacketMeta;
}
